//! Every bound toolgate enforces, named and documented in one place.
//!
//! Nothing here does work: these are the numbers of DESIGN §2 and §7, gathered into
//! [`Limits`] so configuration can override them within checked ranges. No other module
//! hides a limit inside a function.

use std::time::Duration;

/// Longest slug that may be advertised as an MCP tool name (the spec's tool-name grammar).
pub const SLUG_MAX_LEN: usize = 64;

/// Heap cap for one JavaScript run, in bytes: 512 MiB, as the JS-VM seed allows V8.
pub const JS_HEAP_BYTES: usize = 512 * 1024 * 1024;

/// Native stack QuickJS may use for one run, in bytes. It is well under the 2 MiB stack
/// of tokio's blocking threads, so runaway recursion becomes a JS `RangeError`, never a
/// crash of the process.
pub const JS_STACK_BYTES: usize = 1024 * 1024;

/// Wall-clock deadline for one JavaScript run: 30 s, as the JS-VM seed allows.
pub const JS_WALL_CLOCK: Duration = Duration::from_secs(30);

/// Characters kept per captured output stream (stdout, stderr) of one run.
pub const OUTPUT_CHARS: usize = 262_144;

/// Deadline of one `fetch` from JavaScript, body included: 15 s, as the JS-VM seed
/// allows; a later answer rejects with `TimeoutError`.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Largest request or response body of one `fetch` from JavaScript, in bytes (8 MiB, as
/// the JS-VM seed allows).
pub const FETCH_BODY_BYTES: usize = 8_388_608;

/// JavaScript engines kept built and waiting, so a call does not pay for building one.
/// Two covers a client that sends calls back to back on a 2-core machine; each waiting
/// engine holds about 300 KB.
pub const JS_SPARE_ENGINES: usize = 2;

/// Catalogue tool scripts kept compiled to bytecode; past this the cache starts again
/// empty (a catalogue that large pays a parse now and then, nothing more).
pub const JS_SCRIPT_CACHE_ENTRIES: usize = 1024;

/// Default per-request timeout for the catalogue API.
pub const HTTP_TIMEOUT: Duration = Duration::from_millis(15_000);

/// Default lifetime of a fetched catalogue before it is fetched again.
pub const CACHE_TTL: Duration = Duration::from_millis(60_000);

/// Largest catalogue API response body read, in bytes; a larger answer is an error
/// rather than an unbounded allocation.
pub const API_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Largest `{"params": ...}` body the catalogue server accepts, in bytes.
pub const RUN_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Under `TOOLGATE_ADVERTISE=auto`, catalogues with at most this many advertisable tools
/// list them all; larger ones list only the meta-tool, so a host's context is not spent
/// on schemas the agent may never use.
pub const ADVERTISE_AUTO_MAX: usize = 64;

/// Results of a meta-tool search when the caller gives no limit.
pub const SEARCH_LIMIT_DEFAULT: usize = 10;

/// The limits a meta-tool search accepts: enough to choose from, not a catalogue dump.
pub const SEARCH_LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=50;

/// Most runs in one batch: anonymous API execution allows 30 runs a minute, and one turn
/// should not spend the budget the next calls need.
pub const BATCH_MAX: usize = 10;

/// Runs kept in a server's history; older ones are dropped.
pub const HISTORY_RUNS: usize = 50;

/// Characters of JSON kept for one stored input or result; the cut is recorded.
pub const HISTORY_PAYLOAD_CHARS: usize = 8_000;

/// How many close matches an unknown-slug error names.
pub const CLOSE_MATCHES: usize = 3;

/// Most schema violations reported for one call; the rest are counted, not listed.
pub const VIOLATIONS_SHOWN: usize = 10;

/// The bounds in force for one server, overridable by configuration.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Heap cap of one JavaScript run, in bytes. By default, [`JS_HEAP_BYTES`].
    pub js_heap_bytes: usize,
    /// Wall-clock deadline of one JavaScript run. By default, [`JS_WALL_CLOCK`].
    pub js_wall_clock: Duration,
    /// Characters kept per output stream. By default, [`OUTPUT_CHARS`].
    pub output_chars: usize,
    /// Deadline of one `fetch` from JavaScript. By default, [`FETCH_TIMEOUT`].
    pub fetch_timeout: Duration,
    /// Per-request timeout of the catalogue API. By default, [`HTTP_TIMEOUT`].
    pub http_timeout: Duration,
    /// Catalogue lifetime; zero fetches on every request. By default, [`CACHE_TTL`].
    pub cache_ttl: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            js_heap_bytes: JS_HEAP_BYTES,
            js_wall_clock: JS_WALL_CLOCK,
            output_chars: OUTPUT_CHARS,
            fetch_timeout: FETCH_TIMEOUT,
            http_timeout: HTTP_TIMEOUT,
            cache_ttl: CACHE_TTL,
        }
    }
}
