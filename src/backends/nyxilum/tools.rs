//! The `nyxilum_*` tools (`TOOLGATE_RUNTIMES=nyxilum`): names, descriptions, input and
//! output schemas and annotations. What a call does is in `answer.rs`.

use serde_json::{Value, json};

use super::limits;
use crate::backends::seam::{Declared, Definition, Shape};

/// `nyxilum_run`.
pub(crate) const RUN: &str = "nyxilum_run";
/// `nyxilum_check`.
pub(crate) const CHECK: &str = "nyxilum_check";
/// `nyxilum_lint`.
pub(crate) const LINT: &str = "nyxilum_lint";
/// `nyxilum_format`.
pub(crate) const FORMAT: &str = "nyxilum_format";
/// `nyxilum_version`.
pub(crate) const VERSION: &str = "nyxilum_version";
/// `nyxilum_docs`.
pub(crate) const DOCS: &str = "nyxilum_docs";
/// `nyxilum_repl_start`.
pub(crate) const REPL_START: &str = "nyxilum_repl_start";
/// `nyxilum_repl_eval`.
pub(crate) const REPL_EVAL: &str = "nyxilum_repl_eval";
/// `nyxilum_repl_stop`.
pub(crate) const REPL_STOP: &str = "nyxilum_repl_stop";
/// `nyxilum_dev_build`.
pub(crate) const DEV_BUILD: &str = "nyxilum_dev_build";
/// `nyxilum_dev_test`.
pub(crate) const DEV_TEST: &str = "nyxilum_dev_test";

const ERRORS_ON_STDOUT: &str = "NyxilumNode prints `Runtime Error:` and `Parse Error:` on stdout (not stderr) and exits 1; such a run answers success:false and names the line.";

/// What the sandbox does, with the output cap in force.
fn sandbox() -> String {
    format!(
        "Sandboxed: the code is written to its own temp folder (never a shell), NX_SANDBOX=1 (file I/O only in that folder; no network, processes or environment), an allowlisted environment without credentials, no network namespace, landlock and rlimits where the kernel allows, {} KiB per output stream.",
        limits::NYX_OUTPUT_BYTES / 1024
    )
}

/// One tool: name, title, description, input schema, and whether it only reads.
struct Def {
    name: &'static str,
    title: &'static str,
    description: String,
    input: Value,
    output: Value,
    read_only: bool,
    examples: Vec<Value>,
}

fn code_prop(what: &str) -> Value {
    json!({"type": "string", "description": what, "maxLength": limits::NYX_CODE_CHARS})
}

fn timeout_prop() -> Value {
    json!({
        "type": "integer",
        "minimum": limits::NYX_TIMEOUT_MS_RANGE.start(),
        "maximum": limits::NYX_TIMEOUT_MS_RANGE.end(),
        "default": limits::NYX_TIMEOUT.as_millis() as u64,
        "description": "Deadline in milliseconds; the process group is killed with SIGKILL when it passes."
    })
}

/// The input of a tool that takes only code and a deadline.
fn code_input(what: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"code": code_prop(what), "timeout_ms": timeout_prop()},
        "required": ["code"],
        "additionalProperties": false
    })
}

/// The answer of a tool that runs one `nx` process (the field names NyxilumLang users know from its own tools).
fn process_output() -> Value {
    json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "exitCode": {"type": ["integer", "null"], "description": "null when a signal (the deadline) ended it"},
            "timedOut": {"type": "boolean"},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "truncated": {"type": "boolean", "description": format!("true when a stream was cut at {} KiB", limits::NYX_OUTPUT_BYTES / 1024)},
            "durationMs": {"type": "integer", "minimum": 0},
            "error": {"type": "string", "description": "why it failed, when it did"},
            "code": {"type": "string"},
            "retryable": {"type": "boolean"},
            "version": {"type": "string"},
            "path": {"type": "string"}
        },
        "required": ["success", "exitCode", "timedOut", "stdout", "stderr", "truncated", "durationMs"]
    })
}

fn defs() -> Vec<Def> {
    let no_args = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let session = json!({"type": "string", "minLength": 1, "maxLength": limits::REPL_SESSION_ID_CHARS, "description": "The sessionId nyxilum_repl_start returned."});
    let dev_timeout = json!({
        "type": "integer",
        "minimum": limits::DEV_TIMEOUT_MS_RANGE.start(),
        "maximum": limits::DEV_TIMEOUT_MS_RANGE.end(),
        "default": limits::DEV_TIMEOUT_MS_DEFAULT,
        "description": "Deadline in milliseconds."
    });
    vec![
        Def {
            name: RUN,
            title: "Run NyxilumLang",
            description: format!(
                "Runs NyxilumLang (.nx) code in a fresh NyxilumNode process, e.g. `func main() {{ var x = 1; print(\"x=${{x}}\") }}`. Nothing is kept between calls (use nyxilum_repl_* for that). {ERRORS_ON_STDOUT} gc_max_objects caps allocations (arrays, structs, maps) but not a loop that allocates nothing: only timeout_ms stops `while true {{ }}`. {}", sandbox()
            ),
            input: json!({
                "type": "object",
                "properties": {
                    "code": code_prop("The program: top-level statements and/or a `func main()`."),
                    "timeout_ms": timeout_prop(),
                    "gc_max_objects": {"type": "integer", "minimum": limits::NYX_GC_MAX_OBJECTS_RANGE.start(), "maximum": limits::NYX_GC_MAX_OBJECTS_RANGE.end(), "description": "NX_GC_MAX_OBJECTS: the most NyxilumLang allocations the run may make."}
                },
                "required": ["code"],
                "additionalProperties": false
            }),
            output: process_output(),
            read_only: true,
            examples: vec![json!({"code": "func main() { var x = 20 + 22; print(\"x=${x}\") }"})],
        },
        Def {
            name: CHECK,
            title: "Check NyxilumLang syntax",
            description: format!(
                "Parses NyxilumLang code without running it (`nx check`): stdout `OK` and success, or a `Parse Error:` with its line. The code is never executed. {ERRORS_ON_STDOUT}"
            ),
            input: code_input("The code to parse."),
            output: process_output(),
            read_only: true,
            examples: vec![],
        },
        Def {
            name: LINT,
            title: "Lint NyxilumLang",
            description: "Style report for NyxilumLang code (`nx lint`: line length, empty blocks, unused variables). It always exits 0 and does NOT check syntax; use nyxilum_check for that.".to_owned(),
            input: code_input("The code to lint."),
            output: process_output(),
            read_only: true,
            examples: vec![],
        },
        Def {
            name: FORMAT,
            title: "Format NyxilumLang",
            description: "Formats NyxilumLang code (`nx format`); the formatted code is stdout. Code that does not parse comes back unchanged.".to_owned(),
            input: code_input("The code to format."),
            output: process_output(),
            read_only: true,
            examples: vec![],
        },
        Def {
            name: VERSION,
            title: "NyxilumNode version",
            description: "The NyxilumNode version (`nx --version`, e.g. `Nx v1.8.3`) and where the binary was found (NX_NODE_PATH, else the newest build under NX_ECOSYSTEM_ROOT). Fails with RUNTIME_UNAVAILABLE listing every path tried when there is none.".to_owned(),
            input: no_args.clone(),
            output: process_output(),
            read_only: true,
            examples: vec![],
        },
        Def {
            name: DOCS,
            title: "NyxilumLang guide",
            description: "The NyxilumLang user guide (GUIDE.md of the NyxilumLang checkout): the whole text and its section headings, or one section whose heading contains `section` (case-insensitive), e.g. \"maps\", \"closures\", \"built-in functions\".".to_owned(),
            input: json!({
                "type": "object",
                "properties": {"section": {"type": "string", "minLength": 1, "maxLength": limits::DOCS_SECTION_CHARS, "description": "Part of a section heading."}},
                "additionalProperties": false
            }),
            output: json!({
                "type": "object",
                "properties": {
                    "success": {"type": "boolean"},
                    "path": {"type": "string"},
                    "section": {"type": "string"},
                    "sections": {"type": "array", "items": {"type": "string"}},
                    "content": {"type": "string"}
                },
                "required": ["success", "content"]
            }),
            read_only: true,
            examples: vec![],
        },
        Def {
            name: REPL_START,
            title: "Start a NyxilumLang REPL",
            description: format!(
                "Starts a persistent NyxilumNode REPL session: variables and functions declared in one nyxilum_repl_eval stay visible in the next. Returns its sessionId. At most {} sessions live at once; one unused for {} minutes is closed. Call nyxilum_repl_stop when done. Same sandbox as nyxilum_run, with its own temp folder.",
                limits::REPL_SESSIONS,
                limits::REPL_IDLE.as_secs() / 60
            ),
            input: no_args.clone(),
            output: json!({
                "type": "object",
                "properties": {"success": {"type": "boolean"}, "sessionId": {"type": "string"}},
                "required": ["success", "sessionId"]
            }),
            read_only: false,
            examples: vec![],
        },
        Def {
            name: REPL_EVAL,
            title: "Evaluate in a NyxilumLang REPL",
            description: "Evaluates code in a REPL session and returns what it printed. Newlines are flattened to spaces (the REPL reads one statement per line), so multi-line func/struct bodies work but `//` comments would swallow the rest: do not use them here. An error (`Error: ...` in the output) keeps the session; code that does not finish within timeout_ms kills it (sessionKilled: true) — start a new one.".to_owned(),
            input: json!({
                "type": "object",
                "properties": {
                    "session_id": session.clone(),
                    "code": code_prop("Statements to evaluate."),
                    "timeout_ms": timeout_prop()
                },
                "required": ["session_id", "code"],
                "additionalProperties": false
            }),
            output: json!({
                "type": "object",
                "properties": {
                    "success": {"type": "boolean"},
                    "output": {"type": "string"},
                    "truncated": {"type": "boolean"},
                    "error": {"type": "string"},
                    "sessionKilled": {"type": "boolean"}
                },
                "required": ["success"]
            }),
            read_only: false,
            examples: vec![],
        },
        Def {
            name: REPL_STOP,
            title: "Stop a NyxilumLang REPL",
            description: "Ends a REPL session: its process is killed and its folder removed.".to_owned(),
            input: json!({
                "type": "object",
                "properties": {"session_id": session},
                "required": ["session_id"],
                "additionalProperties": false
            }),
            output: json!({
                "type": "object",
                "properties": {"success": {"type": "boolean"}, "alreadyGone": {"type": "boolean"}},
                "required": ["success"]
            }),
            read_only: false,
            examples: vec![],
        },
        Def {
            name: DEV_BUILD,
            title: "Build NyxilumLang",
            description: "For developing the language itself: runs `dotnet build src/NyxilumLang -c <configuration>` in the NyxilumLang checkout (NX_ECOSYSTEM_ROOT). NOT sandboxed — it is the operator's toolchain on the operator's checkout; no caller text reaches the command, only the configuration and the deadline.".to_owned(),
            input: json!({
                "type": "object",
                "properties": {
                    "configuration": {"type": "string", "enum": ["Debug", "Release"], "default": "Debug"},
                    "timeout_ms": dev_timeout.clone()
                },
                "additionalProperties": false
            }),
            output: process_output(),
            read_only: false,
            examples: vec![],
        },
        Def {
            name: DEV_TEST,
            title: "Test NyxilumLang",
            description: "For developing the language itself: runs `bash tests/run_all.sh` in the NyxilumLang checkout (NX_ECOSYSTEM_ROOT). NOT sandboxed; no caller text reaches the command, only the deadline.".to_owned(),
            input: json!({
                "type": "object",
                "properties": {"timeout_ms": dev_timeout},
                "additionalProperties": false
            }),
            output: process_output(),
            read_only: false,
            examples: vec![],
        },
    ]
}

/// The tools, in their listed order.
pub(crate) fn declare() -> Vec<Declared> {
    defs()
        .into_iter()
        .map(|d| Declared {
            definition: Definition {
                name: d.name.to_owned(),
                title: d.title.to_owned(),
                description: d.description,
                input_schema: d.input,
                output_schema: d.output,
                annotations: json!({"title": d.title, "readOnlyHint": d.read_only, "openWorldHint": false}),
            },
            shape: Shape::Flat,
            examples: d.examples,
        })
        .collect()
}

/// The `nyxilum_*` tools, one variant each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum NyxTool {
    Run,
    Check,
    Lint,
    Format,
    Version,
    Docs,
    ReplStart,
    ReplEval,
    ReplStop,
    DevBuild,
    DevTest,
}

impl NyxTool {
    /// The tool named `name`, when it is one of the constants above.
    pub(crate) fn named(name: &str) -> Option<NyxTool> {
        Some(match name {
            RUN => NyxTool::Run,
            CHECK => NyxTool::Check,
            LINT => NyxTool::Lint,
            FORMAT => NyxTool::Format,
            VERSION => NyxTool::Version,
            DOCS => NyxTool::Docs,
            REPL_START => NyxTool::ReplStart,
            REPL_EVAL => NyxTool::ReplEval,
            REPL_STOP => NyxTool::ReplStop,
            DEV_BUILD => NyxTool::DevBuild,
            DEV_TEST => NyxTool::DevTest,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_their_own_variants() {
        let declared = declare();
        assert_eq!(declared.len(), 11);
        let tools: std::collections::HashSet<_> = declared
            .iter()
            .map(|d| NyxTool::named(&d.definition.name).unwrap())
            .collect();
        assert_eq!(tools.len(), 11, "each name has its own variant");
    }
}
