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
use crate::shared::rate::Counter;

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

    /// The keys that number the session's runs across the fleet (the history began at
    /// `began`), for a run begun in one round trip (`shared::rate::Rates::begin`);
    /// `None` while unbound.
    pub fn counter(&self, began: &str) -> Option<Counter> {
        let base = self.session.get()?;
        Some(Counter {
            next: format!("{base}next"),
            began: format!("{base}began"),
            began_at: began.to_owned(),
            life_ms: self.life_ms(),
        })
    }

    /// The next run number of the session, across the fleet, on its own; `None` while
    /// unbound.
    pub async fn number(&self, began: &str) -> Result<Option<u64>, Error> {
        let Some(counter) = self.counter(began) else {
            return Ok(None);
        };
        let mut pipe = redis::pipe();
        pipe.cmd("INCR")
            .arg(&counter.next)
            .cmd("PEXPIRE")
            .arg(&counter.next)
            .arg(counter.life_ms)
            .cmd("SET")
            .arg(&counter.began)
            .arg(&counter.began_at)
            .arg("NX")
            .arg("PX")
            .arg(counter.life_ms);
        let (n, _, _): (u64, redis::Value, redis::Value) = self.shared.pipeline(&pipe).await?;
        Ok(Some(n))
    }

    /// Stores `record` as the session's newest run, keeping the newest
    /// [`HISTORY_RUNS`]; nothing while unbound. The write travels with the replica's next
    /// exchange with Redis (the SSE event of the run's answer, usually, which is sent
    /// only once Redis has it, so the session's next request, on any replica, reads it);
    /// a failed write is said on stderr and counted by `Shared`.
    pub fn keep(&self, record: &Record) -> Result<(), Error> {
        let Some(base) = self.session.get() else { return Ok(()) };
        let json = serde_json::to_string(record).map_err(|e| Error::Internal(format!("a run's record: {e}")))?;
        let (runs, life) = (format!("{base}runs"), self.life_ms());
        let mut push = redis::cmd("RPUSH");
        push.arg(&runs).arg(json);
        let mut trim = redis::cmd("LTRIM");
        trim.arg(&runs).arg(-(HISTORY_RUNS as i64)).arg(-1);
        let mut keep_runs = redis::cmd("PEXPIRE");
        keep_runs.arg(&runs).arg(life);
        let mut keep_began = redis::cmd("PEXPIRE");
        keep_began.arg(format!("{base}began")).arg(life);
        drop(self.shared.later(
            "a run's record in its session's history",
            [push, trim, keep_runs, keep_began],
        ));
        Ok(())
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
