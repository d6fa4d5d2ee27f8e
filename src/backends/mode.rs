//! Where code from an HTTP catalogue runs: the execution mode. The executor owns this
//! type; `config` only builds it from `TOOLGATE_EXECUTION`.

/// Where code from an HTTP catalogue runs (`TOOLGATE_EXECUTION`, `docs/reference/settings.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// Always through the API; no source is ever fetched. The default.
    Remote,
    /// Always here; a tool without source is a `NO_SOURCE` error.
    Local,
    /// Here when the tool has source, else through the API.
    Auto,
}

impl Execution {
    /// Reads a `TOOLGATE_EXECUTION` value. Anything unknown is `Remote`, with the note to
    /// print on stderr.
    pub fn parse(raw: &str) -> (Execution, Option<String>) {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "remote" => (Execution::Remote, None),
            "local" => (Execution::Local, None),
            "auto" => (Execution::Auto, None),
            other => (
                Execution::Remote,
                Some(format!(
                    "TOOLGATE_EXECUTION=\"{other}\" is not remote, local or auto; using remote, so no catalogue code runs on this machine"
                )),
            ),
        }
    }
}
