//! The one error type of toolgate, with its stable codes and retry flags.
//!
//! Every failure a caller can see is a variant here. `code()` and `retryable()` are
//! exhaustive matches, so a new variant forces both decisions; the codes are the contract
//! of `docs/reference/errors.md` and are pinned by a unit test. This module knows nothing about MCP: the
//! mapping to protocol results lives in `mcp::convert`.

use std::time::Duration;

/// A failure that reaches the caller, with typed fields rather than pre-formatted text.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No tool has this slug, and no unambiguous abbreviation matches.
    #[error("No tool named \"{slug}\" is in the catalogue.{}", suggest(candidates))]
    ToolNotFound {
        /// What the caller asked for.
        slug: String,
        /// The closest slugs, best first (may be empty).
        candidates: Vec<String>,
    },
    /// The slug abbreviates more than one tool.
    #[error("\"{slug}\" is ambiguous: it abbreviates {}. Use the full slug.", candidates.join(", "))]
    AmbiguousSlug {
        /// What the caller asked for.
        slug: String,
        /// Every slug it abbreviates, sorted.
        candidates: Vec<String>,
    },
    /// The parameters break the tool's input schema.
    #[error("Invalid params for \"{slug}\": {}", violations.join("; "))]
    InvalidParams {
        /// The tool whose schema was broken.
        slug: String,
        /// One line per violation: the field path and the broken rule.
        violations: Vec<String>,
    },
    /// The meta-tool was given a command it does not know.
    #[error("Unknown command \"{command}\". Commands: {}.", known.join(", "))]
    UnknownCommand {
        /// What the caller sent.
        command: String,
        /// The commands that exist.
        known: Vec<String>,
    },
    /// The request is malformed in a way no schema names (missing slug, wrong type...).
    #[error("{0}")]
    BadRequest(String),
    /// A batch with more runs than allowed.
    #[error("A batch may hold at most {limit} runs; this one has {count}. Split it.")]
    BatchTooLarge {
        /// Runs sent.
        count: usize,
        /// The cap.
        limit: usize,
    },
    /// A batch with items that cannot run; none of it ran.
    #[error("The batch was not run: {} of its items cannot run. {}", problems.len(), problems.iter().map(|p| format!("#{} {}: {} ({})", p.index, p.slug, p.message, p.code)).collect::<Vec<_>>().join("; "))]
    BatchInvalid {
        /// Each bad item.
        problems: Vec<BatchProblem>,
    },
    /// A deadline passed: an API call or a local run.
    #[error("{what} did not finish within {} ms.", after.as_millis())]
    Timeout {
        /// What timed out, in words.
        what: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// A rate limit refused the call: the catalogue API answered 429, or this server's
    /// own limit for the caller (`access::rate`) was reached.
    #[error("Rate limited: {what}.{}", retry_hint(retry_after))]
    RateLimited {
        /// Whose limit, in words.
        what: String,
        /// How long the API asked us to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// The catalogue API could not be reached at all.
    #[error(
        "The catalogue API at {url} is unreachable: {reason}. The server keeps running; retry when the API is back."
    )]
    ApiUnreachable {
        /// The URL that failed.
        url: String,
        /// Why, from the HTTP client.
        reason: String,
    },
    /// The catalogue API answered with an error status.
    #[error("The catalogue API answered {status}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The API's own message, or the status text.
        message: String,
    },
    /// The catalogue API refused the credentials (401/403).
    #[error("The catalogue API refused the request ({status}): {message}. Check TOOLGATE_API_KEY.")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// The API's own message.
        message: String,
    },
    /// The tool's code threw or exited non-zero.
    #[error("{message}")]
    Execution {
        /// The tool's own message, with its line when known.
        message: String,
    },
    /// A heap, output or object cap was hit.
    #[error("{what} exceeded its limit of {limit}.")]
    ResourceLimit {
        /// The resource, in words ("JavaScript heap").
        what: String,
        /// The cap, in words ("512 MiB").
        limit: String,
    },
    /// Local execution of a tool that has no source.
    #[error("Tool \"{slug}\" has no source to run locally.{}", if *remote_possible { " Use TOOLGATE_EXECUTION=auto or remote to run it through the API." } else { "" })]
    NoSource {
        /// The tool.
        slug: String,
        /// True if and only if an API could run it instead.
        remote_possible: bool,
    },
    /// A runtime the tool needs is not installed here.
    #[error("The {runtime} runtime is not available. Tried: {}.{}", tried.join(", "), runtime_hint(runtime))]
    RuntimeUnavailable {
        /// The runtime's name.
        runtime: String,
        /// Every place looked at.
        tried: Vec<String>,
    },
    /// A history run id that does not exist.
    #[error("No run \"{id}\" in this server's history.")]
    RunNotFound {
        /// The id asked for.
        id: String,
    },
    /// A REPL session id that does not exist.
    #[error("No live session \"{id}\": it was stopped, killed or never existed. Start one with nyxilum_repl_start.")]
    SessionNotFound {
        /// The id asked for.
        id: String,
    },
    /// A REPL session id of another toolgate process: a REPL is a process of the replica
    /// that started it (or of this server before a restart), reachable only there.
    #[error(
        "REPL session \"{id}\" lives in another toolgate process (another replica of this fleet, or this server before it restarted): a REPL is a process of the replica that started it. Operators keep a session's requests on one replica (affinity on Mcp-Session-Id) when REPLs are used; otherwise start a new one here with nyxilum_repl_start."
    )]
    SessionElsewhere {
        /// The id asked for.
        id: String,
    },
    /// Too many live REPL sessions.
    #[error("At most {limit} sessions may be live at once; stop one first.")]
    SessionLimit {
        /// The cap.
        limit: usize,
    },
    /// The caller already holds its share of the REPL sessions.
    #[error(
        "One caller (a principal over HTTP, a session over stdio) may hold at most {share} of the {limit} REPL sessions at once, and this one holds {share}; stop one of yours first."
    )]
    SessionShare {
        /// Sessions one caller may hold.
        share: usize,
        /// Sessions at once, across every caller.
        limit: usize,
    },
    /// A federated MCP server (an upstream) is down, starting or restarting.
    #[error(
        "The upstream MCP server \"{server}\" is unavailable: {reason}. It is restarted with backoff; retry shortly."
    )]
    UpstreamUnavailable {
        /// The server's name in the `mcpServers` file.
        server: String,
        /// Its last error, in words.
        reason: String,
    },
    /// An upstream tool's definition differs from the one pinned for it (`TOOLGATE_PINS`),
    /// or it is new and new tools wait for approval: it is held, neither listed nor run,
    /// until an operator approves it.
    #[error(
        "The upstream MCP server \"{server}\" {what} of its tool \"{tool}\" since it was approved; the tool is held until an operator approves it (toolgate upstream approve {server} {tool})."
    )]
    DefinitionChanged {
        /// The server's name in the `mcpServers` file.
        server: String,
        /// The tool's own name on that server.
        tool: String,
        /// What happened, in words: "changed the description and inputSchema", "offers a
        /// new definition".
        what: String,
    },
    /// The Redis a fleet of replicas shares its state in (`TOOLGATE_REDIS`) could not be
    /// reached, or did not answer in time; the step that needed it did not happen.
    #[error(
        "The shared state of this server's fleet (Redis at {redis}) is unreachable: {reason}. Nothing was done; retry shortly."
    )]
    SharedUnavailable {
        /// The Redis, as it may be shown (no credentials).
        redis: String,
        /// Why, from the Redis client.
        reason: String,
    },
    /// The caller's principal lacks the scope the call needs (an HTTP server's key).
    #[error("The key \"{principal}\" lacks the scope \"{scope}\" this call needs; ask the operator for a key with it.")]
    Forbidden {
        /// The principal's id (never the key).
        principal: String,
        /// The scope it lacks.
        scope: &'static str,
    },
    /// The client cancelled the call before it finished; the run was stopped.
    #[error("The call was cancelled by the client.")]
    Cancelled,
    /// A fault of toolgate itself (a bug or an environment failure), not of the caller.
    #[error("Internal error: {0}")]
    Internal(String),
}

/// Every stable code, whether it is retryable, and what a caller should do about it: the
/// one table the `recover` prompt, the guide and every answer's advice read from.
pub const CODES: &[(&str, &str, &str)] = &[
    (
        "TOOL_NOT_FOUND",
        "no",
        "the slug names no tool: use one of the closest matches it lists, or search",
    ),
    (
        "AMBIGUOUS_SLUG",
        "no",
        "the abbreviation fits several tools: use one of the full slugs it lists",
    ),
    (
        "INVALID_PARAMS",
        "no",
        "a field breaks the schema: fix the field and rule it names",
    ),
    (
        "BAD_REQUEST",
        "no",
        "the meta-tool call is malformed: fix it as the message says",
    ),
    (
        "UNKNOWN_COMMAND",
        "no",
        "the meta-tool has no such command: use one it lists",
    ),
    ("BATCH_TOO_LARGE", "no", "more than the batch cap: split the batch"),
    (
        "BATCH_INVALID",
        "no",
        "some items cannot run and nothing ran: fix the listed items and resend",
    ),
    ("TIMEOUT", "yes", "the deadline passed: retry, perhaps with less work"),
    (
        "RATE_LIMITED",
        "yes",
        "a rate limit was reached (the API's or this server's): wait retry_after_ms, then retry",
    ),
    ("API_UNREACHABLE", "yes", "the catalogue API is down: retry later"),
    (
        "API_ERROR",
        "5xx yes, 4xx no",
        "the API answered with an error: follow its retryable flag",
    ),
    (
        "UNAUTHORIZED",
        "no",
        "the API refused the key: the operator must fix TOOLGATE_API_KEY",
    ),
    (
        "FORBIDDEN",
        "no",
        "this server's key lacks the scope the call needs: use another tool or another key",
    ),
    (
        "EXECUTION_ERROR",
        "no",
        "the tool's code failed on this input: change the input",
    ),
    (
        "RESOURCE_LIMIT",
        "no",
        "the run hit its heap or output cap: send less data",
    ),
    (
        "NO_SOURCE",
        "no",
        "the tool has no code to run here: use another tool or execution mode",
    ),
    (
        "RUNTIME_UNAVAILABLE",
        "no",
        "the runtime the tool needs is not installed here",
    ),
    ("RUN_NOT_FOUND", "no", "the run id is not in this process's history"),
    (
        "SESSION_NOT_FOUND",
        "no",
        "the REPL session is gone or never existed: start a new one",
    ),
    (
        "SESSION_LIMIT",
        "no",
        "too many REPL sessions are live: stop one, then start again",
    ),
    (
        "UPSTREAM_UNAVAILABLE",
        "yes",
        "a federated MCP server is down or restarting: retry shortly; other tools keep working",
    ),
    (
        "DEFINITION_CHANGED",
        "no",
        "an upstream tool's definition changed since an operator approved it (or it is new and awaits approval): use another tool, or ask the operator to approve it",
    ),
    (
        "SHARED_STATE_UNAVAILABLE",
        "yes",
        "the Redis this server's replicas share is unreachable: retry shortly",
    ),
    (
        "CANCELLED",
        "no",
        "the client cancelled the call and its run was stopped",
    ),
    (
        "INTERNAL_ERROR",
        "no",
        "a fault of toolgate itself: report it with the message",
    ),
];

/// Why one batch item cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProblem {
    /// Its position in the batch, from 0.
    pub index: usize,
    /// The slug it named ("" when it named none).
    pub slug: String,
    /// The code the item alone would have failed with.
    pub code: &'static str,
    /// The reason.
    pub message: String,
}

fn suggest(candidates: &[String]) -> String {
    if candidates.is_empty() {
        " Use the meta-tool's list command to see every tool.".to_owned()
    } else {
        format!(" Closest matches: {}.", candidates.join(", "))
    }
}

/// How to make a missing runtime available, when toolgate knows.
fn runtime_hint(runtime: &str) -> &'static str {
    match runtime {
        "nyxilum" => {
            " Set NX_NODE_PATH to the NyxilumNode binary (or its .dll), or NX_ECOSYSTEM_ROOT to a NyxilumLang checkout built with `dotnet build src/NyxilumLang`."
        }
        _ => "",
    }
}

fn retry_hint(after: &Option<Duration>) -> String {
    match after {
        Some(d) => format!(" Retry after {} s.", retry_after_secs(*d)),
        None => " Retry later.".to_owned(),
    }
}

/// A wait as whole seconds, rounded up and at least 1: what a `Retry-After` header says,
/// and what an error's message says beside it, so the two always agree.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0 || wait.is_zero())
}

impl Error {
    /// The stable code of `docs/reference/errors.md`, for agents to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            Error::ToolNotFound { .. } => "TOOL_NOT_FOUND",
            Error::AmbiguousSlug { .. } => "AMBIGUOUS_SLUG",
            Error::InvalidParams { .. } => "INVALID_PARAMS",
            Error::UnknownCommand { .. } => "UNKNOWN_COMMAND",
            Error::BadRequest(_) => "BAD_REQUEST",
            Error::BatchTooLarge { .. } => "BATCH_TOO_LARGE",
            Error::BatchInvalid { .. } => "BATCH_INVALID",
            Error::Timeout { .. } => "TIMEOUT",
            Error::RateLimited { .. } => "RATE_LIMITED",
            Error::ApiUnreachable { .. } => "API_UNREACHABLE",
            Error::Api { .. } => "API_ERROR",
            Error::Unauthorized { .. } => "UNAUTHORIZED",
            Error::Forbidden { .. } => "FORBIDDEN",
            Error::Execution { .. } => "EXECUTION_ERROR",
            Error::ResourceLimit { .. } => "RESOURCE_LIMIT",
            Error::NoSource { .. } => "NO_SOURCE",
            Error::RuntimeUnavailable { .. } => "RUNTIME_UNAVAILABLE",
            Error::RunNotFound { .. } => "RUN_NOT_FOUND",
            Error::SessionNotFound { .. } | Error::SessionElsewhere { .. } => "SESSION_NOT_FOUND",
            Error::SessionLimit { .. } | Error::SessionShare { .. } => "SESSION_LIMIT",
            Error::UpstreamUnavailable { .. } => "UPSTREAM_UNAVAILABLE",
            Error::DefinitionChanged { .. } => "DEFINITION_CHANGED",
            Error::SharedUnavailable { .. } => "SHARED_STATE_UNAVAILABLE",
            Error::Cancelled => "CANCELLED",
            Error::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// Returns true if and only if the same call may succeed when simply tried again.
    pub fn retryable(&self) -> bool {
        match self {
            Error::Timeout { .. }
            | Error::RateLimited { .. }
            | Error::ApiUnreachable { .. }
            | Error::UpstreamUnavailable { .. }
            | Error::SharedUnavailable { .. } => true,
            Error::Api { status, .. } => *status >= 500,
            Error::ToolNotFound { .. }
            | Error::AmbiguousSlug { .. }
            | Error::InvalidParams { .. }
            | Error::UnknownCommand { .. }
            | Error::BadRequest(_)
            | Error::BatchTooLarge { .. }
            | Error::BatchInvalid { .. }
            | Error::Unauthorized { .. }
            | Error::Forbidden { .. }
            | Error::Execution { .. }
            | Error::ResourceLimit { .. }
            | Error::NoSource { .. }
            | Error::RuntimeUnavailable { .. }
            | Error::RunNotFound { .. }
            | Error::SessionNotFound { .. }
            | Error::SessionElsewhere { .. }
            | Error::SessionLimit { .. }
            | Error::SessionShare { .. }
            | Error::DefinitionChanged { .. }
            | Error::Cancelled
            | Error::Internal(_) => false,
        }
    }

    /// How long the caller should wait before retrying, when the failure says.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The result type of toolgate's core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes are API: this pins every one of them and its retry flag.
    #[test]
    fn codes_and_retry_flags_are_stable() {
        let d = Duration::from_secs(1);
        let s = String::new;
        let cases: Vec<(Error, &str, bool)> = vec![
            (
                Error::ToolNotFound {
                    slug: s(),
                    candidates: vec![],
                },
                "TOOL_NOT_FOUND",
                false,
            ),
            (
                Error::AmbiguousSlug {
                    slug: s(),
                    candidates: vec![],
                },
                "AMBIGUOUS_SLUG",
                false,
            ),
            (
                Error::InvalidParams {
                    slug: s(),
                    violations: vec![],
                },
                "INVALID_PARAMS",
                false,
            ),
            (
                Error::UnknownCommand {
                    command: s(),
                    known: vec![],
                },
                "UNKNOWN_COMMAND",
                false,
            ),
            (Error::BadRequest(s()), "BAD_REQUEST", false),
            (Error::BatchTooLarge { count: 11, limit: 10 }, "BATCH_TOO_LARGE", false),
            (Error::BatchInvalid { problems: vec![] }, "BATCH_INVALID", false),
            (Error::Timeout { what: s(), after: d }, "TIMEOUT", true),
            (
                Error::RateLimited {
                    what: "x".into(),
                    retry_after: Some(d),
                },
                "RATE_LIMITED",
                true,
            ),
            (Error::ApiUnreachable { url: s(), reason: s() }, "API_UNREACHABLE", true),
            (
                Error::Api {
                    status: 503,
                    message: s(),
                },
                "API_ERROR",
                true,
            ),
            (
                Error::Api {
                    status: 404,
                    message: s(),
                },
                "API_ERROR",
                false,
            ),
            (
                Error::Unauthorized {
                    status: 401,
                    message: s(),
                },
                "UNAUTHORIZED",
                false,
            ),
            (
                Error::Forbidden {
                    principal: s(),
                    scope: "run",
                },
                "FORBIDDEN",
                false,
            ),
            (Error::Execution { message: s() }, "EXECUTION_ERROR", false),
            (Error::ResourceLimit { what: s(), limit: s() }, "RESOURCE_LIMIT", false),
            (
                Error::NoSource {
                    slug: s(),
                    remote_possible: false,
                },
                "NO_SOURCE",
                false,
            ),
            (
                Error::RuntimeUnavailable {
                    runtime: s(),
                    tried: vec![],
                },
                "RUNTIME_UNAVAILABLE",
                false,
            ),
            (Error::RunNotFound { id: s() }, "RUN_NOT_FOUND", false),
            (Error::SessionNotFound { id: s() }, "SESSION_NOT_FOUND", false),
            (Error::SessionElsewhere { id: s() }, "SESSION_NOT_FOUND", false),
            (Error::SessionLimit { limit: 5 }, "SESSION_LIMIT", false),
            (Error::SessionShare { share: 2, limit: 5 }, "SESSION_LIMIT", false),
            (
                Error::UpstreamUnavailable {
                    server: s(),
                    reason: s(),
                },
                "UPSTREAM_UNAVAILABLE",
                true,
            ),
            (
                Error::DefinitionChanged {
                    server: s(),
                    tool: s(),
                    what: s(),
                },
                "DEFINITION_CHANGED",
                false,
            ),
            (
                Error::SharedUnavailable {
                    redis: s(),
                    reason: s(),
                },
                "SHARED_STATE_UNAVAILABLE",
                true,
            ),
            (Error::Cancelled, "CANCELLED", false),
            (Error::Internal(s()), "INTERNAL_ERROR", false),
        ];
        for (error, code, retryable) in cases {
            assert!(CODES.iter().any(|(c, _, _)| *c == code), "{code} has no advice");
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.retryable(), retryable, "{error:?}");
        }
    }

    #[test]
    fn not_found_names_the_closest_matches() {
        let e = Error::ToolNotFound {
            slug: "env-validatr".into(),
            candidates: vec!["env-validator".into()],
        };
        assert!(e.to_string().contains("Closest matches: env-validator."));
    }
}
