//! Whom a call is made for. Every MCP session (a stdio connection, an HTTP
//! `Mcp-Session-Id`) is one `Caller`: its runs are numbered and recorded in its own
//! history, and the REPL sessions it starts are its own — another caller naming their id
//! gets `SESSION_NOT_FOUND`. Nothing a caller does is visible to another.
//!
//! Over HTTP a caller also acts as a principal (`access::Principal`, the key's id or
//! `anonymous`): its runs are admitted by the principal's limits and, on `--http`, the
//! session belongs to the principal of its first call, so no other principal reaches its
//! history by presenting its session id.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::access::{Principal, Scope};
use crate::backends::Party;
use crate::error::Error;
use crate::history::History;
use crate::patterns::ToolPatterns;

/// One caller's state: its history, its identity as an owner of REPL sessions, and the
/// least severe log message it wants.
#[derive(Debug, Clone)]
pub struct Caller {
    history: Arc<History>,
    owner: u64,
    /// The least severe log message passed on to it, as a rank in syslog order (0: debug,
    /// every message; 7: emergency only). MCP's `logging/setLevel` sets it.
    log_level: Arc<AtomicU8>,
    /// The principal this caller's session belongs to, once one has called.
    owner_principal: Arc<OnceLock<Arc<str>>>,
    /// The tool policy of the principal the session belongs to, when it was known at the
    /// session's start: what the session's own watch (list_changed) sees.
    owner_tools: Option<Arc<ToolPatterns>>,
    /// The principal of the call at hand, when it came over HTTP.
    principal: Option<Principal>,
    /// The id of the HTTP request the call at hand came in (`edge::observe`).
    request: Option<Arc<str>>,
    /// The run whose code makes the call at hand (code mode), when one does.
    parent: Option<Arc<str>>,
}

impl Caller {
    /// A new caller with an empty history, distinct from every other caller of this
    /// process.
    pub fn new() -> Caller {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Caller {
            history: Arc::default(),
            owner: NEXT.fetch_add(1, Ordering::Relaxed),
            log_level: Arc::default(),
            owner_principal: Arc::default(),
            owner_tools: None,
            principal: None,
            request: None,
            parent: None,
        }
    }

    /// This new caller keeping its runs in `history` (a fleet's session: in Redis too).
    #[must_use]
    pub fn keeping(self, history: History) -> Caller {
        Caller {
            history: Arc::new(history),
            ..self
        }
    }

    /// A new caller acting as `principal` (one catalogue API request).
    pub fn for_principal(principal: Principal) -> Caller {
        let caller = Caller::new();
        let _ = caller.owner_principal.set(principal.id.clone());
        Caller {
            owner_tools: principal.tools.clone(),
            principal: Some(principal),
            ..caller
        }
    }

    /// A new caller whose session belongs to `principal` (an HTTP session, from its
    /// `initialize`): another principal is refused by [`Caller::acting_as`].
    pub fn owned_by(principal: Principal) -> Caller {
        let caller = Caller::new();
        let _ = caller.owner_principal.set(principal.id.clone());
        Caller {
            owner_tools: principal.tools,
            ..caller
        }
    }

    /// This caller (the same history and REPL sessions) acting as `principal` for one
    /// call. The first principal to call owns the session; another is refused, so a
    /// session id alone reaches nobody else's runs.
    pub fn acting_as(&self, principal: Principal) -> Result<Caller, Error> {
        let owner = self.owner_principal.get_or_init(|| principal.id.clone());
        if *owner != principal.id {
            return Err(Error::BadRequest(format!(
                "this session belongs to another principal than \"{}\"; start a session of your own",
                principal.id
            )));
        }
        Ok(Caller {
            principal: Some(principal),
            ..self.clone()
        })
    }

    /// This caller making the call at hand for the HTTP request `id`, so its run's
    /// history entry and log lines name the request.
    #[must_use]
    pub fn with_request(self, id: Option<Arc<str>>) -> Caller {
        Caller { request: id, ..self }
    }

    /// This caller making the call at hand from the code of its run `parent`, so its
    /// history entry names the run it belongs to.
    #[must_use]
    pub fn with_parent(self, parent: &str) -> Caller {
        Caller {
            parent: Some(Arc::from(parent)),
            ..self
        }
    }

    /// The run whose code makes the call at hand: `None` for a call a client made.
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    /// The id of the HTTP request of the call at hand: `None` over stdio.
    pub fn request(&self) -> Option<&str> {
        self.request.as_deref()
    }

    /// `Ok` if the call at hand may use `scope`: always over stdio, else when its
    /// principal holds it (`FORBIDDEN` naming the principal and scope otherwise).
    pub fn may(&self, scope: Scope) -> Result<(), Error> {
        match &self.principal {
            Some(p) if !p.may(scope) => Err(Error::Forbidden {
                principal: p.id.to_string(),
                scope: scope.name(),
            }),
            _ => Ok(()),
        }
    }

    /// The principal of the call at hand: `None` over stdio.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The only tools the call at hand may see and run: its principal's tool policy, or
    /// for what the session does unasked (its watch, its subscriptions) the policy of the
    /// principal the session belongs to. `None` for every tool.
    pub fn tools(&self) -> Option<&Arc<ToolPatterns>> {
        match &self.principal {
            Some(p) => p.tools.as_ref(),
            None => self.owner_tools.as_ref(),
        }
    }

    /// Returns true if and only if the call at hand may see and run the tool `name`
    /// ([`Caller::tools`]).
    pub fn sees(&self, name: &str) -> bool {
        self.tools().is_none_or(|p| p.admits(name))
    }

    /// Whom the call at hand takes the shared JavaScript places for: its principal over
    /// HTTP (so one principal cannot hold them all), no one over stdio (a server with one
    /// client shares them with nobody). A call a snippet's code makes takes them as a
    /// party of its own beside the snippet's: two snippets holding their principal's
    /// share would otherwise leave their own calls waiting for it until their deadlines.
    pub fn party(&self) -> Party {
        match (&self.principal, &self.parent) {
            (Some(p), None) => Party::named(p.share()),
            (None, None) => Party::alone(),
            (Some(p), Some(_)) => Party::named(format!("{} code", p.share())),
            (None, Some(_)) => Party::named("code"),
        }
    }

    /// Its runs.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Its identity as the owner of REPL sessions.
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// From now on, only log messages of severity rank `rank` or above reach it.
    pub fn set_log_level(&self, rank: u8) {
        self.log_level.store(rank, Ordering::Relaxed);
    }

    /// The least severe log rank it wants, shared: whoever passes log messages on to this
    /// caller reads the level in force when each message arrives.
    pub fn log_level(&self) -> Arc<AtomicU8> {
        self.log_level.clone()
    }
}

impl Default for Caller {
    fn default() -> Self {
        Caller::new()
    }
}
