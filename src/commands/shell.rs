//! `toolgate shell`: an MCP client for people. It connects (see [`super::client`]) to a
//! toolgate child over real stdio or to a server over Streamable HTTP, then reads
//! commands — `tools`, `list`, `search TEXT`, `schema SLUG`, `call SLUG {json}`,
//! `history [RUN]`, `diff [FROM TO]`, `help`, `quit` — from a terminal (rustyline, with
//! tab completion of commands and slugs) or from a file, and prints each answer as text.
//! This is not the MCP server: stdout is for people here. It knows nothing of the
//! gateway's internals: everything goes through MCP.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rmcp::model::JsonObject;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Context, Editor, Helper};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::client::{Connection, Target, summary};
use crate::plural::count;

/// The command words, in the order `help` lists them.
pub const COMMANDS: &[&str] = &[
    "tools", "list", "search", "schema", "call", "history", "diff", "help", "quit",
];

/// Commands whose argument is a tool's slug (completed from the server's tools).
const SLUG_COMMANDS: &[&str] = &["schema", "call"];

/// Widest tool description `tools` and `list` print, in characters.
const SUMMARY_CHARS: usize = 100;

/// What `help` prints.
pub const HELP: &str = "\
commands:
  tools              the tools the server advertises (tools/list, every page)
  list               every tool of the catalogue (the meta-tool's list, every page)
  search TEXT        tools for a task, best first
  schema SLUG        a tool's input and output schemas and a ready-to-send call
  call SLUG {json}   run a tool (directly when advertised, else through the meta-tool)
  history [RUN]      this session's runs, newest first; or one run whole (r3, -1)
  diff [FROM TO]     compare two runs (by default the last two of one tool)
  help               this text
  quit               leave (also exit, Ctrl-D)
Tab completes commands and slugs; a line starting with # is a comment.";

/// Where the commands come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A person at a terminal: a prompt, line editing, completion, history.
    Terminal,
    /// Standard input that is not a terminal (a pipe or a redirected file), read as a
    /// script.
    Stdin,
    /// A script file.
    File(PathBuf),
}

impl Input {
    /// `--file PATH` (`-` is standard input) when given; else the terminal when stdin is
    /// one, else stdin as a script.
    pub fn choose(file: Option<PathBuf>) -> Input {
        match file {
            Some(path) if path == Path::new("-") => Input::Stdin,
            Some(path) => Input::File(path),
            None if std::io::IsTerminal::is_terminal(&std::io::stdin()) => Input::Terminal,
            None => Input::Stdin,
        }
    }
}

/// One parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `tools`: tools/list.
    Tools,
    /// `list`: the meta-tool's list.
    List,
    /// `search TEXT`.
    Search(String),
    /// `schema SLUG`.
    Schema(String),
    /// `call SLUG {json}`; no JSON means `{}`.
    Call {
        /// The tool.
        slug: String,
        /// Its arguments.
        args: JsonObject,
    },
    /// `history`, or `history RUN` for one run.
    History(Option<String>),
    /// `diff`, or `diff FROM TO`.
    Diff(Option<(String, String)>),
    /// `help`.
    Help,
    /// `quit` or `exit`.
    Quit,
}

/// Parses one line: `Ok(None)` for a blank line or a `#` comment; an `Err` sentence
/// saying what is wrong and what would be right.
pub fn parse(line: &str) -> Result<Option<Command>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (line, ""),
    };
    let no_argument = |command: Command| {
        if rest.is_empty() {
            Ok(Some(command))
        } else {
            Err(format!("{word} takes no argument"))
        }
    };
    match word {
        "tools" => no_argument(Command::Tools),
        "list" => no_argument(Command::List),
        "help" | "?" => no_argument(Command::Help),
        "quit" | "exit" => no_argument(Command::Quit),
        "search" if rest.is_empty() => {
            Err("search needs words saying what the tool should do, e.g. search encode base64".into())
        }
        "search" => Ok(Some(Command::Search(rest.to_owned()))),
        "schema" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [slug] => Ok(Some(Command::Schema(slug.to_owned()))),
            _ => Err("schema takes one slug, e.g. schema base64-codec".into()),
        },
        "call" => {
            let (slug, json) = match rest.split_once(char::is_whitespace) {
                Some((slug, json)) => (slug, json.trim()),
                None => (rest, ""),
            };
            if slug.is_empty() {
                return Err("call needs a slug and its arguments, e.g. call base64-codec {\"input\": \"hi\"}".into());
            }
            let args = if json.is_empty() {
                JsonObject::new()
            } else {
                match serde_json::from_str::<Value>(json) {
                    Ok(Value::Object(args)) => args,
                    Ok(other) => {
                        return Err(format!(
                            "call: the arguments must be one JSON object, not {other}; e.g. call {slug} {{\"input\": \"hi\"}}"
                        ));
                    }
                    Err(e) => {
                        return Err(format!(
                            "call: the arguments are not JSON ({e}); write one object, e.g. call {slug} {{\"input\": \"hi\"}}"
                        ));
                    }
                }
            };
            Ok(Some(Command::Call {
                slug: slug.to_owned(),
                args,
            }))
        }
        "history" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [] => Ok(Some(Command::History(None))),
            [run] => Ok(Some(Command::History(Some(run.to_owned())))),
            _ => Err("history takes at most one run id, e.g. history r3 or history -1".into()),
        },
        "diff" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [] => Ok(Some(Command::Diff(None))),
            [from, to] => Ok(Some(Command::Diff(Some((from.to_owned(), to.to_owned()))))),
            _ => Err("diff takes two run ids (diff r1 r2, diff -2 -1) or none (the last two runs of one tool)".into()),
        },
        other => Err(format!(
            "unknown command \"{other}\"; the commands are {} (help says more)",
            COMMANDS.join(", ")
        )),
    }
}

/// Runs one command against the server: the text to print, or the failure to report
/// (a tool's `isError` answer included).
pub async fn execute(conn: &Connection, command: &Command) -> Result<String, String> {
    match command {
        Command::Tools => {
            let tools = conn.tools();
            let mut out = format!("{} advertised:\n", count(tools.len(), "tool", "tools"));
            for tool in tools {
                let description = tool.description.as_deref().unwrap_or_default();
                out.push_str(&format!("  {} — {}\n", tool.name, summary(description, SUMMARY_CHARS)));
            }
            Ok(out)
        }
        Command::List => {
            let rows = conn.catalogue().await?;
            if conn.meta_name().is_none() {
                return Err(
                    "this server has no toolgate meta-tool to list its catalogue; `tools` shows what it advertises"
                        .into(),
                );
            }
            let mut out = format!("{} in the catalogue:\n", count(rows.len(), "tool", "tools"));
            for row in rows {
                let text = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
                let note = match row
                    .get("unavailable")
                    .and_then(|u| u.get("code"))
                    .and_then(Value::as_str)
                {
                    Some(code) => format!(" (unavailable here: {code})"),
                    None => String::new(),
                };
                out.push_str(&format!(
                    "  {} — {}{note}\n",
                    text("slug"),
                    summary(&text("description"), SUMMARY_CHARS)
                ));
            }
            Ok(out)
        }
        Command::Search(query) => conn
            .meta(json!({"command": "search", "query": query}))
            .await?
            .into_result(),
        Command::Schema(slug) => {
            if conn.meta_name().is_none()
                && let Some(tool) = conn.tools().iter().find(|t| t.name == slug.as_str())
            {
                let schema = Value::Object((*tool.input_schema).clone());
                return Ok(format!(
                    "{slug} — {}\n\nInput schema:\n{}",
                    tool.description.as_deref().unwrap_or_default(),
                    serde_json::to_string_pretty(&schema).unwrap_or_default()
                ));
            }
            conn.meta(json!({"command": "schema", "slug": slug}))
                .await?
                .into_result()
        }
        Command::Call { slug, args } => conn.run(slug, args.clone()).await?.into_result(),
        Command::History(run) => {
            let mut args = json!({"command": "history"});
            if let Some(run) = run {
                args["show"] = json!(run);
            }
            conn.meta(args).await?.into_result()
        }
        Command::Diff(runs) => {
            let mut args = json!({"command": "diff"});
            if let Some((from, to)) = runs {
                args["from"] = json!(from);
                args["to"] = json!(to);
            }
            conn.meta(args).await?.into_result()
        }
        Command::Help => Ok(HELP.to_owned()),
        Command::Quit => Ok(String::new()),
    }
}

/// Connects to `target` and reads commands from `input` until they end or `quit`.
/// From a terminal, failures are reported and the session goes on; from a script every
/// command runs, and any that failed makes this an `Err` at the end. `history` keeps
/// the terminal's line history in that file. By default, none is kept.
pub async fn run(target: Target, meta_name: &str, input: Input, history: Option<&Path>) -> Result<(), String> {
    let conn = Connection::open(target, meta_name).await?;
    let outcome = match &input {
        Input::Terminal => interactive(&conn, history).await,
        Input::Stdin => script(&conn, "stdin", BufReader::new(tokio::io::stdin())).await,
        Input::File(path) => {
            let file = tokio::fs::File::open(path)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            script(&conn, &path.display().to_string(), BufReader::new(file)).await
        }
    };
    conn.close().await;
    outcome
}

/// Runs every line of a script, echoing each command before its answer; errors go to
/// stderr as `NAME:LINE: error: …`.
async fn script<R: tokio::io::AsyncBufRead + Unpin>(conn: &Connection, name: &str, reader: R) -> Result<(), String> {
    let mut lines = reader.lines();
    let (mut number, mut ran, mut failed) = (0usize, 0usize, 0usize);
    while let Some(line) = lines
        .next_line()
        .await
        .map_err(|e| format!("cannot read {name}: {e}"))?
    {
        number += 1;
        let command = match parse(&line) {
            Ok(None) => continue,
            Ok(Some(Command::Quit)) => break,
            Ok(Some(command)) => command,
            Err(why) => {
                say(&format!("toolgate> {}", line.trim()))?;
                eprintln!("{name}:{number}: error: {why}");
                (ran, failed) = (ran + 1, failed + 1);
                continue;
            }
        };
        say(&format!("toolgate> {}", line.trim()))?;
        ran += 1;
        match execute(conn, &command).await {
            Ok(text) => say(text.trim_end())?,
            Err(why) => {
                failed += 1;
                eprintln!("{name}:{number}: error: {}", why.trim_end());
            }
        }
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} of {ran} commands failed (see above)"))
    }
}

/// The prompt loop: line editing, completion of commands and slugs, Ctrl-C cancels the
/// line (or the call in flight), Ctrl-D leaves.
async fn interactive(conn: &Connection, history: Option<&Path>) -> Result<(), String> {
    let names = conn.names().await.unwrap_or_else(|e| {
        eprintln!("note: slugs beyond tools/list will not complete: {e}");
        conn.tools().iter().map(|t| t.name.to_string()).collect()
    });
    let config = rustyline::Config::builder()
        .auto_add_history(true)
        .completion_type(CompletionType::List)
        .build();
    let mut editor: Editor<ShellHelper, DefaultHistory> =
        Editor::with_config(config).map_err(|e| format!("cannot use the terminal: {e}"))?;
    editor.set_helper(Some(ShellHelper::new(names)));
    if let Some(path) = history
        && path.exists()
        && let Err(e) = editor.load_history(path)
    {
        eprintln!("note: cannot read the history file {}: {e}", path.display());
    }
    say(&format!(
        "Connected to {} at {}; {} advertised{}. `help` lists the commands; Tab completes; Ctrl-D leaves.",
        conn.server(),
        conn.target().describe(),
        count(conn.tools().len(), "tool", "tools"),
        conn.meta_name()
            .map(|m| format!(", meta-tool \"{m}\""))
            .unwrap_or_default()
    ))?;
    loop {
        // rustyline blocks; this runtime has other workers for the MCP session.
        let read = tokio::task::block_in_place(|| editor.readline("toolgate> "));
        let line = match read {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(format!("cannot read the terminal: {e}")),
        };
        let command = match parse(&line) {
            Ok(None) => continue,
            Ok(Some(Command::Quit)) => break,
            Ok(Some(command)) => command,
            Err(why) => {
                eprintln!("error: {why}");
                continue;
            }
        };
        tokio::select! {
            done = execute(conn, &command) => match done {
                Ok(text) => say(text.trim_end())?,
                Err(why) => eprintln!("error: {}", why.trim_end()),
            },
            _ = tokio::signal::ctrl_c() => eprintln!("interrupted"),
        }
    }
    if let Some(path) = history
        && let Err(e) = editor.save_history(path)
    {
        eprintln!("note: cannot write the history file {}: {e}", path.display());
    }
    Ok(())
}

/// Writes `line` and a newline on stdout; a closed stdout (the reader left, as `head`
/// does) is an error that ends the command rather than a panic.
pub fn say(line: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// The line editor's helper: completes command words, and slugs after `schema` and
/// `call`.
pub struct ShellHelper {
    names: Vec<String>,
}

impl ShellHelper {
    /// A helper completing these tool names (advertised tools and catalogue slugs).
    pub fn new(mut names: Vec<String>) -> ShellHelper {
        names.sort();
        names.dedup();
        ShellHelper { names }
    }

    /// Where the word being typed at the end of `before` starts, and what it may become
    /// (each with a trailing space).
    pub fn candidates(&self, before: &str) -> (usize, Vec<String>) {
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &before[start..];
        let previous: Vec<&str> = before[..start].split_whitespace().collect();
        let pool: Vec<&str> = match previous[..] {
            [] => COMMANDS.to_vec(),
            [command] if SLUG_COMMANDS.contains(&command) => self.names.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        let found = pool
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| format!("{c} "))
            .collect();
        (start, found)
    }
}

impl Completer for ShellHelper {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line.get(..pos).unwrap_or(line)))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _default: bool) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> ShellHelper {
        ShellHelper::new(vec![
            "hex-codec".into(),
            "base64-codec".into(),
            "hash-digest".into(),
            "toolgate".into(),
        ])
    }

    fn complete(line: &str) -> (usize, Vec<String>) {
        let history = DefaultHistory::new();
        helper().complete(line, line.len(), &Context::new(&history)).unwrap()
    }

    #[test]
    fn the_completer_offers_the_slugs_that_match() {
        assert_eq!(
            complete("schema h"),
            (7, vec!["hash-digest ".into(), "hex-codec ".into()])
        );
        assert_eq!(complete("call  base"), (6, vec!["base64-codec ".into()]));
        assert_eq!(complete("call x"), (5, vec![]));
        assert_eq!(complete("schema ").1.len(), 4);
    }

    #[test]
    fn the_completer_offers_command_words_first_and_nothing_after_the_slug() {
        assert_eq!(complete("se"), (0, vec!["search ".into()]));
        assert_eq!(complete("h"), (0, vec!["history ".into(), "help ".into()]));
        assert_eq!(complete("search h"), (7, vec![]));
        assert_eq!(complete("call hex-codec {"), (15, vec![]));
    }

    #[test]
    fn lines_parse_into_commands() {
        assert_eq!(parse("  # a comment").unwrap(), None);
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("tools").unwrap(), Some(Command::Tools));
        assert_eq!(
            parse("search  encode base64 ").unwrap(),
            Some(Command::Search("encode base64".into()))
        );
        assert_eq!(
            parse("call base64-codec {\"input\": \"a b\"}").unwrap(),
            Some(Command::Call {
                slug: "base64-codec".into(),
                args: serde_json::from_str("{\"input\": \"a b\"}").unwrap()
            })
        );
        assert_eq!(
            parse("call uuid-generator").unwrap(),
            Some(Command::Call {
                slug: "uuid-generator".into(),
                args: JsonObject::new()
            })
        );
        assert_eq!(
            parse("diff r1 r2").unwrap(),
            Some(Command::Diff(Some(("r1".into(), "r2".into()))))
        );
        assert_eq!(parse("history -1").unwrap(), Some(Command::History(Some("-1".into()))));
        assert_eq!(parse("exit").unwrap(), Some(Command::Quit));
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let err = parse("call base64-codec {input: 1}").unwrap_err();
        assert!(err.starts_with("call: the arguments are not JSON ("), "{err}");
        let err = parse("call base64-codec [1]").unwrap_err();
        assert!(err.contains("must be one JSON object, not [1]"), "{err}");
        let err = parse("frobnicate now").unwrap_err();
        assert!(err.starts_with("unknown command \"frobnicate\""), "{err}");
        assert!(parse("diff r1").unwrap_err().contains("two run ids"));
        assert!(parse("schema").unwrap_err().contains("one slug"));
        assert!(parse("search").unwrap_err().contains("needs words"));
        assert!(parse("tools now").unwrap_err().contains("takes no argument"));
    }
}
