//! A session's history kept in the fleet's Redis (`TOOLGATE_REDIS`), so that whichever
//! replica answers a session's request numbers its runs in one sequence and reads the
//! same runs.
//!
//! Three keys per session, all living as long as the session may sit idle (refreshed by
//! each run): `history:SESSION:next` (the last run number, `INCR`ed), `history:SESSION:runs`
//! (a list of the newest [`HISTORY_RUNS`] records, JSON, oldest first) and
//! `history:SESSION:began` (when the session's history began). A record is the one
//! `History::record` builds: redacted and capped before it leaves the process, so Redis
//! holds no more than one process's memory would.
//!
//! A shelf is bound to its session's `Mcp-Session-Id` by the first request that names it;
//! until then (the `initialize` that makes the session) it keeps nothing.

use std::sync::OnceLock;
use std::time::Duration;

use super::Record;
use crate::error::Error;
use crate::limits::HISTORY_RUNS;
use crate::shared::Shared;

/// One session's place in the fleet's Redis.
#[derive(Debug)]
pub struct Shelf {
    shared: Shared,
    /// How long the keys live after the last run: the session's idle expiry.
    life: Duration,
    /// `history:SESSION:` once the session's id is known.
    session: OnceLock<String>,
}

/// What a shelf holds: the runs (oldest first) and when the history began.
#[derive(Debug)]
pub struct Shelved {
    /// The newest runs, oldest first.
    pub runs: Vec<Record>,
    /// When the session's history began (RFC 3339), when recorded.
    pub began: Option<String>,
}

impl Shelf {
    /// A shelf in `shared` whose keys live `life` past the last run.
    pub fn new(shared: Shared, life: Duration) -> Shelf {
        Shelf {
            shared,
            life,
            session: OnceLock::new(),
        }
    }

    /// Binds the shelf to the session `id` (the first binding stays).
    pub fn bind(&self, id: &str) {
        let _ = self.session.set(self.shared.key(&format!("history:{id}:")));
    }

    /// Returns true if and only if the shelf knows its session.
    pub fn is_bound(&self) -> bool {
        self.session.get().is_some()
    }

    /// The next run number of the session, across the fleet; `None` while unbound.
    pub async fn number(&self, began: &str) -> Result<Option<u64>, Error> {
        let Some(base) = self.session.get() else {
            return Ok(None);
        };
        let life = self.life_ms();
        let mut pipe = redis::pipe();
        pipe.cmd("INCR")
            .arg(format!("{base}next"))
            .cmd("PEXPIRE")
            .arg(format!("{base}next"))
            .arg(life)
            .ignore()
            .cmd("SET")
            .arg(format!("{base}began"))
            .arg(began)
            .arg("NX")
            .arg("PX")
            .arg(life)
            .ignore();
        let (n,): (u64,) = self.shared.pipeline(&pipe).await?;
        Ok(Some(n))
    }

    /// Stores `record` as the session's newest run, keeping the newest
    /// [`HISTORY_RUNS`]; nothing while unbound.
    pub async fn keep(&self, record: &Record) -> Result<(), Error> {
        let Some(base) = self.session.get() else { return Ok(()) };
        let json = serde_json::to_string(record).map_err(|e| Error::Internal(format!("a run's record: {e}")))?;
        let (runs, life) = (format!("{base}runs"), self.life_ms());
        let mut pipe = redis::pipe();
        pipe.cmd("RPUSH")
            .arg(&runs)
            .arg(json)
            .ignore()
            .cmd("LTRIM")
            .arg(&runs)
            .arg(-(HISTORY_RUNS as i64))
            .arg(-1)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&runs)
            .arg(life)
            .ignore()
            .cmd("PEXPIRE")
            .arg(format!("{base}began"))
            .arg(life)
            .ignore();
        self.shared.pipeline::<()>(&pipe).await
    }

    /// What the shelf holds now; `None` while unbound.
    pub async fn load(&self) -> Result<Option<Shelved>, Error> {
        let Some(base) = self.session.get() else {
            return Ok(None);
        };
        let mut pipe = redis::pipe();
        pipe.cmd("LRANGE")
            .arg(format!("{base}runs"))
            .arg(0)
            .arg(-1)
            .cmd("GET")
            .arg(format!("{base}began"));
        let (lines, began): (Vec<String>, Option<String>) = self.shared.pipeline(&pipe).await?;
        // A line that does not read back (written by another version) is left out.
        let runs = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
        Ok(Some(Shelved { runs, began }))
    }

    fn life_ms(&self) -> u64 {
        u64::try_from(self.life.as_millis()).unwrap_or(u64::MAX).max(1)
    }
}
