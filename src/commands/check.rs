//! `toolgate catalogue check`: every tool of a catalogue walked through a real toolgate
//! server over stdio, as an agent would meet it — advertised with its schemas, described
//! by `schema`, its ready-to-send example run, the answer checked against the advertised
//! output schema, and its manifest read as a resource. A tool the server does not serve at
//! all — its manifest unreadable, its input schema not compiling, or its slug taken by an
//! earlier tool — is a failure too, learnt by reading and building the same source here.
//! Any failure fails the command, so it works as a CI gate.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, Tool as McpTool};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};

use crate::api::{ApiClient, ListAnswer};
use crate::catalogue::SourceSpec;
use crate::catalogue::{Extras, Origin, Problem, Snapshot, load};
use crate::config::Config;
use crate::limits::{CHECK_STDERR_BYTES, SHUTDOWN_GRACE};

/// How one tool fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every step passed.
    Passed,
    /// Its runtime is not installed here; it was not run (not a pass).
    Skipped(String),
    /// A step failed: which, and why.
    Failed(String),
}

/// What a check found, tool by tool, in catalogue order.
#[derive(Debug, Default)]
pub struct Report {
    /// Tools, resources and prompts of the source that the server does not serve
    /// (unreadable manifest, input schema that does not compile, slug already taken, a
    /// malformed or clashing resource or prompt), each a sentence naming it. Each is a
    /// failure.
    pub unserved: Vec<String>,
    /// `(slug, verdict, milliseconds)`.
    pub tools: Vec<(String, Verdict, u128)>,
    /// What a tool's author should know but that does not fail the check: each input
    /// schema pattern that needs a backtracking engine (values checked against it are
    /// refused past a length).
    pub notes: Vec<String>,
}

impl Report {
    /// Returns true if and only if no tool failed and every tool of the source is served.
    pub fn is_ok(&self) -> bool {
        self.unserved.is_empty() && !self.tools.iter().any(|(_, v, _)| matches!(v, Verdict::Failed(_)))
    }

    /// One line per unserved tool, one per checked tool, then the tally.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut counts = [0usize; 3];
        for why in &self.unserved {
            counts[2] += 1;
            out.push_str(&format!("FAILED  {why}\n"));
        }
        for (slug, verdict, ms) in &self.tools {
            match verdict {
                Verdict::Passed => {
                    counts[0] += 1;
                    out.push_str(&format!("ok      {slug} ({ms} ms)\n"));
                }
                Verdict::Skipped(why) => {
                    counts[1] += 1;
                    out.push_str(&format!("skipped {slug}: {why}\n"));
                }
                Verdict::Failed(why) => {
                    counts[2] += 1;
                    out.push_str(&format!("FAILED  {slug}: {why}\n"));
                }
            }
        }
        for note in &self.notes {
            out.push_str(&format!("note    {note}\n"));
        }
        out.push_str(&format!(
            "{} passed, {} failed, {} skipped\n",
            counts[0], counts[2], counts[1]
        ));
        out
    }
}

type Client = RunningService<RoleClient, ()>;

/// Reads `config.source`, then starts `binary` on it (all tools advertised) and checks
/// every tool. `flags` are the settings given on the command line, as the environment
/// variables that carry them to the child (`--js-timeout-ms` → `TOOLGATE_JS_TIMEOUT_MS`),
/// so the child runs the tools as this command was told to.
pub async fn run(
    binary: &Path,
    config: &Config,
    flags: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<Report, String> {
    let read = unserved(config).await?;
    let name = config.name.as_str();
    let source = config.source.setting();
    let mut cmd = tokio::process::Command::new(binary);
    cmd.envs(flags.iter().map(|(k, v)| (k, v)));
    cmd.env("TOOLGATE_CATALOGUE", &source)
        .env("TOOLGATE_ADVERTISE", "all")
        .env("TOOLGATE_NAME", name);
    // The catalogue's tools only: runtime tools are not the catalogue's, and
    // `tools/{slug}` would not resolve them.
    cmd.env_remove("TOOLGATE_API_URL").env_remove("TOOLGATE_RUNTIMES");
    if let Some(key) = &config.api_key {
        cmd.env("TOOLGATE_API_KEY", key);
    }
    // The server's stderr would repeat what the report says (each problem of the source
    // is warned of as the server loads it): it is kept, and shown only when the check
    // cannot finish.
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let kept = Arc::new(Mutex::new(Vec::new()));
    let reading = stderr.map(|stderr| tokio::spawn(keep(stderr, kept.clone())));
    let checked = walk(transport, name, &source, read).await;
    let Err(e) = checked else { return checked };
    // Its client is gone, so the server is ending: what it said is read to its end, or
    // for a moment at most.
    if let Some(reading) = reading {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, reading).await;
    }
    let said = String::from_utf8_lossy(&kept.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    match said.trim_end() {
        "" => Err(e),
        said => Err(format!("{e}\nthe server said on stderr:\n{said}")),
    }
}

/// Reads `stderr` to its end, keeping its start in `kept`, up to [`CHECK_STDERR_BYTES`].
async fn keep(mut stderr: tokio::process::ChildStderr, kept: Arc<Mutex<Vec<u8>>>) {
    use tokio::io::AsyncReadExt as _;
    let mut buf = [0u8; 8192];
    while let Ok(n @ 1..) = stderr.read(&mut buf).await {
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        let room = CHECK_STDERR_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// Checks every tool the server started on `transport` serves, after what `read` found.
async fn walk(transport: TokioChildProcess, name: &str, source: &str, read: Read) -> Result<Report, String> {
    let Read {
        unserved,
        uncallable,
        notes,
        mut bad_examples,
    } = read;
    let client: Client = ().serve(transport).await.map_err(|e| format!("the server did not start: {e}"))?;
    let listed = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    // Every page of the meta-tool's list.
    let mut rows: Vec<Value> = Vec::new();
    let mut args = json!({"command": "list"});
    loop {
        let list = call(&client, name, args.clone()).await?;
        rows.extend(list["tools"].as_array().cloned().unwrap_or_default());
        match list["next_cursor"].as_str() {
            Some(next) => args["cursor"] = json!(next),
            None => break,
        }
    }
    if rows.is_empty() && unserved.is_empty() {
        return Err(format!("the catalogue {source} has no tools"));
    }
    let mut report = Report {
        unserved,
        tools: Vec::new(),
        notes,
    };
    for row in rows {
        let slug = row["slug"].as_str().unwrap_or_default().to_owned();
        // Listed (the server compiles schemas on first use) but already failed above.
        if uncallable.contains(&slug) {
            continue;
        }
        let start = Instant::now();
        let mut verdict = match check_one(&client, &listed, name, &row).await {
            Ok(()) => Verdict::Passed,
            Err(Step::Skip(why)) => Verdict::Skipped(why),
            Err(Step::Fail(why)) => Verdict::Failed(why),
        };
        // An example that breaks the input schema fails its tool, whatever the rest.
        if let Some(mut why) = bad_examples.remove(&slug) {
            if let Verdict::Failed(also) = verdict {
                why.push(also);
            }
            verdict = Verdict::Failed(why.join("; "));
        }
        report.tools.push((slug, verdict, start.elapsed().as_millis()));
    }
    let _ = client.cancel().await;
    Ok(report)
}

/// What reading and building the source here found, before any server runs a tool.
struct Read {
    /// Each entry of the source the server will not serve, a sentence naming it.
    unserved: Vec<String>,
    /// The slugs not to check again (already failed above).
    uncallable: HashSet<String>,
    /// What does not fail the check but a tool's author should know.
    notes: Vec<String>,
    /// Per tool, each of its examples that breaks its input schema, a clause naming it.
    bad_examples: HashMap<String, Vec<String>>,
}

/// Reads and builds the source the way the server does, and names every tool it will not
/// serve: the manifests that did not load, the tools whose name toolgate or an upstream
/// server holds, then the tools `Snapshot::build` set aside or dropped as a duplicate (a
/// withheld slug is still served, through the meta-tool). Also the slugs not to check
/// again: a server lists a tool whose schema does not compile (it compiles schemas on
/// first use) though no call of it can run. And every example that breaks its tool's
/// input schema (the server serves the tool without it).
async fn unserved(config: &Config) -> Result<Read, String> {
    let (loaded, origin) = match &config.source {
        SourceSpec::Embedded => (load::embedded(), Origin::Local),
        SourceSpec::Dir(path) => (load::dir(path).map_err(|e| e.to_string())?, Origin::Local),
        SourceSpec::File(path) => (load::file(path).map_err(|e| e.to_string())?, Origin::Local),
        SourceSpec::Http(base) => {
            let client =
                ApiClient::new(base, config.api_key.clone(), config.limits.http_timeout).map_err(|e| e.to_string())?;
            let body = match client.list(None).await.map_err(|e| e.to_string())? {
                ListAnswer::Fresh { body, .. } => body,
                ListAnswer::NotModified => return Err(format!("{base} answered 304 to an unconditional list")),
            };
            let doc = load::parse_list(&body).map_err(|e| format!("the tool list from {base}: {e}"))?;
            (load::from_document(base, doc, false), Origin::Remote)
        }
    };
    let reserved = reserved(config)?;
    let (admitted, mut problems) = reserved.admit(loaded.entries);
    let (snapshot, built) = Snapshot::build(admitted, origin);
    problems.extend(built);
    let notes = snapshot
        .tools()
        .iter()
        .filter_map(|tool| {
            let compiled = crate::validate::compile(&tool.manifest.input_schema.value()).ok()?;
            let places = compiled.backtracking().join("; ");
            (!places.is_empty()).then(|| {
                format!(
                    "{}: its input schema has patterns that need a backtracking engine ({places}); values longer than {} bytes are refused against them",
                    tool.slug(),
                    crate::limits::PATTERN_SUBJECT_BYTES
                )
            })
        })
        .collect();
    let (_, refused) = Extras::build(loaded.resources, loaded.prompts, &reserved);
    problems.extend(refused);
    // The server started below may serve what this one refuses (it runs without the
    // runtime tools): such a tool is reported here only.
    let set_aside = problems
        .iter()
        .filter_map(|p| match p {
            Problem::SetAside { slug, .. } => Some(slug.clone()),
            Problem::Refused { kind: "tool", name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let mut unserved = loaded.problems;
    unserved.extend(problems.iter().filter_map(|p| match p {
        Problem::Duplicate { slug } => Some(format!(
            "{slug}: not served: another tool has this slug (only the first is kept)"
        )),
        Problem::SetAside { slug, reason } => Some(format!(
            "{slug}: not served: its input schema does not compile: {reason}"
        )),
        Problem::Refused { .. } => Some(p.to_string()),
        Problem::Withheld { .. } | Problem::Trimmed { .. } | Problem::BadExample { .. } => None,
    }));
    let mut bad_examples: HashMap<String, Vec<String>> = HashMap::new();
    for p in &problems {
        if let Problem::BadExample { slug, index, violation } = p {
            bad_examples.entry(slug.clone()).or_default().push(format!(
                "example: examples[{index}] breaks the input schema: {violation}"
            ));
        }
    }
    Ok(Read {
        unserved,
        uncallable: set_aside,
        notes,
        bad_examples,
    })
}

/// What the server `config` describes reserves: its meta-tool, runtime tools, resource
/// scheme and prompts, and the namespace of each upstream server in its `mcpServers` file
/// (read, never started).
fn reserved(config: &Config) -> Result<crate::catalogue::Reserved, String> {
    let builtins: Vec<String> = crate::backends::declared(config.runtimes, &config.limits)
        .into_iter()
        .map(|d| d.definition.name)
        .collect();
    let reserved = crate::mcp::reserved(&config.name, &builtins, true);
    Ok(match &config.upstreams {
        None => reserved,
        Some(source) => {
            let (upstreams, _) = crate::backends::upstream::Upstreams::open(
                source,
                config.limits.upstream_ping,
                config.limits.upstream_first_wait,
            )
            .map_err(|e| e.to_string())?;
            reserved.with_namespaces(upstreams.namespaces())
        }
    })
}

enum Step {
    Skip(String),
    Fail(String),
}

async fn check_one(client: &Client, listed: &[McpTool], name: &str, row: &Value) -> Result<(), Step> {
    let slug = row["slug"].as_str().unwrap_or_default();
    let fail = |step: &str, why: String| Step::Fail(format!("{step}: {why}"));
    // A tool that cannot run here is listed as such and not advertised: not a pass.
    if row["available"] == false {
        let why = row["unavailable"]["reason"].as_str().unwrap_or_default();
        return Err(Step::Skip(format!("its runtime is not available here ({why})")));
    }
    // Describe: the schema command and its ready-to-send call.
    let schema = call(client, name, json!({"command": "schema", "slug": slug}))
        .await
        .map_err(|e| fail("describe", e))?;
    let example = schema["example"].clone();
    let tool_name = example["name"].as_str().unwrap_or_default().to_owned();
    // Advertise: listed tools carry their schemas; others are reached through the meta-tool.
    let output_schema = if tool_name == name {
        None
    } else {
        let tool = listed
            .iter()
            .find(|t| t.name == slug)
            .ok_or_else(|| fail("advertise", "not in tools/list".into()))?;
        if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(fail("advertise", "inputSchema is not an object schema".into()));
        }
        tool.output_schema.clone()
    };
    // Run the example and hold the answer to the advertised output schema.
    let args = example["arguments"].as_object().cloned().unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new(tool_name.clone()).with_arguments(args.clone()))
        .await
        .map_err(|e| fail("run", e.to_string()))?;
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    if result.is_error == Some(true) {
        let code = structured["code"].as_str().unwrap_or_default();
        let message = structured["error"].as_str().unwrap_or_default();
        if code == "RUNTIME_UNAVAILABLE" {
            return Err(Step::Skip(format!("its runtime is not available here ({message})")));
        }
        return Err(fail("run", format!("{code}: {message}")));
    }
    if let Some(schema) = &output_schema {
        let validator = jsonschema::validator_for(&Value::Object((**schema).clone()))
            .map_err(|e| fail("output schema", format!("does not compile: {e}")))?;
        admits(&validator, &structured).map_err(|e| fail("output schema", e))?;
        // A failure answer must fit the advertised schema too (clients check it even
        // when isError is set): send params that break the input schema.
        let input = listed
            .iter()
            .find(|t| t.name == slug)
            .map(|t| Value::Object((*t.input_schema).clone()))
            .unwrap_or(Value::Null);
        if let Some(bad) = broken(&input, &args) {
            let refused = client
                .call_tool(CallToolRequestParams::new(tool_name).with_arguments(bad))
                .await
                .map_err(|e| fail("failure answer", e.to_string()))?;
            let body = refused.structured_content.clone().unwrap_or(Value::Null);
            if refused.is_error != Some(true) || body["code"] != "INVALID_PARAMS" {
                return Err(fail("failure answer", format!("bad params were not refused: {body}")));
            }
            admits(&validator, &body).map_err(|e| fail("failure answer", e))?;
        }
    }
    // Resolve as a resource.
    let uri = crate::mcp::tool_uri(name, slug);
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .map_err(|e| fail("resource", format!("{uri}: {e}")))?;
    if read.contents.is_empty() {
        return Err(fail("resource", format!("{uri} is empty")));
    }
    Ok(())
}

/// `Ok` when `validator` accepts `body`, else every violation with its path.
fn admits(validator: &jsonschema::Validator, body: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// `args` with one typed property given a value of another type, so the input schema
/// refuses it; `None` when the schema declares no typed property to break.
fn broken(input: &Value, args: &serde_json::Map<String, Value>) -> Option<serde_json::Map<String, Value>> {
    let validator = jsonschema::validator_for(input).ok()?;
    let props = input.get("properties")?.as_object()?;
    props.iter().find_map(|(key, rule)| {
        let wrong = match rule.get("type")?.as_str()? {
            "string" => json!(12345),
            _ => json!("not the declared type"),
        };
        let mut bad = args.clone();
        bad.insert(key.clone(), wrong);
        (!validator.is_valid(&Value::Object(bad.clone()))).then_some(bad)
    })
}

/// Calls the meta-tool; an error result becomes its message.
async fn call(client: &Client, name: &str, args: Value) -> Result<Value, String> {
    let Value::Object(args) = args else {
        return Err("arguments must be an object".into());
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .map_err(|e| e.to_string())?;
    let structured = result.structured_content.unwrap_or(Value::Null);
    if result.is_error == Some(true) {
        return Err(structured["error"].as_str().unwrap_or("error").to_owned());
    }
    Ok(structured)
}
