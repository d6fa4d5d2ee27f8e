//! The limits NyxilumLang runs under: deadlines, output caps, code and argument sizes, the
//! REPL sessions' number, life and share, and the .NET runtime's heap. The settings an
//! operator changes (`TOOLGATE_NYX_CONCURRENT_RUNS`) and the sandbox's own limits stay in
//! `crate::limits`, shared with the other families; they are re-exported here so this
//! family names every limit through one module.

use std::time::Duration;

pub use crate::limits::{NYX_CONCURRENT_RUNS, SANDBOX_CPU_SLACK_SECONDS};

/// Default deadline of one NyxilumNode run (`nyxilum_run` and friends, catalogue tools
/// whose runtime is `nyxilum`): 10 s: a program an agent writes and checks, not a job.
pub const NYX_TIMEOUT: Duration = Duration::from_millis(10_000);

/// The `timeout_ms` a NyxilumNode tool accepts: at least 100 ms, at most 60 s (longer
/// work belongs in a catalogue tool or a build, not an agent's turn).
pub const NYX_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=60_000;

/// Bytes kept per output stream of a NyxilumNode process or REPL answer: 32 KiB, so a
/// loop printing millions of lines cannot fill an agent's context. Cut on a UTF-8
/// character boundary; the cut is reported.
pub const NYX_OUTPUT_BYTES: usize = 32 * 1024;

/// Longest NyxilumLang code a `nyxilum_*` call accepts, in characters: a program an
/// agent writes, not a data file.
pub const NYX_CODE_CHARS: u64 = 1_000_000;

/// Longest REPL session id accepted (ids are short random tokens; this only bounds junk).
pub const REPL_SESSION_ID_CHARS: u64 = 128;

/// Longest `section` heading fragment `nyxilum_docs` accepts.
pub const DOCS_SECTION_CHARS: u64 = 200;

/// The `gc_max_objects` a run accepts (passed as `NX_GC_MAX_OBJECTS`).
pub const NYX_GC_MAX_OBJECTS_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000_000_000;

/// Deadline of `nx --version`: it prints one line, so a slow answer means a broken install.
pub const NYX_VERSION_TIMEOUT: Duration = Duration::from_millis(5_000);

/// Live REPL sessions at once (each is a process holding memory.
pub const REPL_SESSIONS: usize = 5;

/// A REPL session unused this long is closed and its folder removed.
pub const REPL_IDLE: Duration = Duration::from_secs(600);

/// How often idle REPL sessions are looked for.
pub const REPL_REAP_EVERY: Duration = Duration::from_secs(30);

/// How long a new REPL may take to print its banner and first prompt.
pub const REPL_START_TIMEOUT: Duration = Duration::from_millis(10_000);

/// CPU seconds a whole REPL session may use over its life (it lives up to the idle
/// limit between calls, so the per-run CPU limit would be too tight).
pub const REPL_CPU_SECONDS: u64 = 600;

/// Default and largest deadline of `nyxilum_dev_build` / `nyxilum_dev_test`, in ms: a
/// .NET build of the language and its test suite take minutes, not seconds.
pub const DEV_TIMEOUT_MS_DEFAULT: u64 = 300_000;

/// The `timeout_ms` the dev tools accept.
pub const DEV_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 1_000..=1_800_000;

/// Bytes kept per output stream of a dev build or test run: build logs are long and the
/// end (errors, the summary) matters most, so this is larger than a run's cap.
pub const DEV_OUTPUT_BYTES: usize = 64 * 1024;

/// Address range the .NET garbage collector may reserve for its regions, handed to a
/// .NET runtime child as `DOTNET_GCRegionRange`: 4 GiB. By default the GC reserves far
/// more (hundreds of GiB of address space), which the address-space limit would refuse.
pub const DOTNET_GC_REGION_RANGE_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Managed heap cap handed to a .NET runtime child as `DOTNET_GCHeapHardLimit`: 2 GiB,
/// well inside [`SANDBOX_ADDRESS_SPACE_BYTES`], so the GC fails cleanly with an
/// out-of-memory error before the address-space limit makes allocation fail anywhere.
pub const DOTNET_GC_HEAP_HARD_LIMIT_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// REPL sessions one principal (over HTTP; one MCP session over stdio) may hold at once,
/// of the [`REPL_SESSIONS`]: two principals together hold four of the five, so a third
/// still gets one.
pub const REPL_SESSIONS_PER_PRINCIPAL: usize = 2;
