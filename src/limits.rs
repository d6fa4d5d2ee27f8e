//! Every bound toolgate enforces, named and documented in one place.
//!
//! Nothing here does work: these are the numbers of `docs/reference/limits.md`, gathered into
//! [`Limits`] so configuration can override them within checked ranges. No other module
//! hides a limit inside a function.

use std::time::Duration;
pub use toolgate_search::limits::{QUERY_MAX_CHARS, TYPO_WORD_MAX_CHARS};

/// Longest slug that may be advertised as an MCP tool name (the spec's tool-name grammar).
pub const SLUG_MAX_LEN: usize = 64;

/// Heap cap for one JavaScript run, in bytes: 512 MiB: room for real data work, while eight runs at once stay within the total heap budget.
pub const JS_HEAP_BYTES: usize = 512 * 1024 * 1024;

/// Native stack QuickJS may use for one run, in bytes. It is well under the 2 MiB stack
/// of tokio's blocking threads, so runaway recursion becomes a JS `RangeError`, never a
/// crash of the process.
pub const JS_STACK_BYTES: usize = 1024 * 1024;

/// Bytes past its heap cap a JavaScript run may still allocate once its interrupt has
/// fired: enough for QuickJS to build its uncatchable "interrupted" error (an error it
/// cannot allocate is thrown as a catchable `null`, which a script could swallow).
pub const JS_INTERRUPT_RESERVE_BYTES: usize = 1024 * 1024;

/// Wall-clock deadline for one JavaScript run: 30 s: long enough for a script that fetches and transforms, short enough for an agent's turn.
pub const JS_WALL_CLOCK: Duration = Duration::from_secs(30);

/// Characters kept per captured output stream (stdout, stderr) of one run.
pub const OUTPUT_CHARS: usize = 262_144;

/// Characters of JSON kept of the value a JavaScript run returns: as much as one output
/// stream, so `return 'r'.repeat(1e8)` cannot become a 200 MB answer. A snippet's value
/// past it is cut (the answer says so); a catalogue tool's is a `RESOURCE_LIMIT` failure,
/// since a cut value would no longer match the tool's output schema.
pub const RESULT_CHARS: usize = 262_144;

/// Sources fetched from a catalogue API kept for local runs (`TOOLGATE_EXECUTION=local`
/// or `auto`), each for the catalogue's lifetime.
pub const SOURCE_CACHE_ENTRIES: u64 = 10_000;

/// Deadline of one `fetch` from JavaScript, body included: 15 s; a later answer rejects with `TimeoutError`.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Largest request or response body of one `fetch` from JavaScript, in bytes (8 MiB: a
/// page or a JSON document, not a bulk download).
pub const FETCH_BODY_BYTES: usize = 8_388_608;

/// Requests one JavaScript run may have on the network at once; more wait their turn
/// (within their own deadline), so a loop of `fetch` calls cannot open thousands of
/// connections from the host.
pub const FETCH_IN_FLIGHT: usize = 16;

/// Log and progress notes one run may send its MCP client (`mcp.log`, `mcp.progress`);
/// more throw in the script, and the server drops any beyond it — so a loop cannot flood
/// a client with notifications.
pub const CLIENT_NOTES_PER_RUN: usize = 1_000;

/// Largest note or request one run may send its client, as JSON bytes (64 KiB for a
/// note; a sampling or elicitation request may be as large as a `fetch` body).
pub const CLIENT_NOTE_BYTES: usize = 65_536;

/// Notes of one run waiting to reach its MCP client; more are dropped (a client that
/// reads slowly must not hold the run up).
pub const CLIENT_NOTE_QUEUE: usize = 64;

/// How long a run's answer waits for its notes still queued to reach the client, so the
/// notes a run sent arrive before its answer.
pub const CLIENT_NOTES_DRAIN: Duration = Duration::from_millis(250);

/// Requests (sampling, elicitation) one run may have waiting on its client at once; more
/// are refused, so a script cannot pile requests on a person or a model.
pub const CLIENT_ASKS_IN_FLIGHT: usize = 4;

/// Longest `setTimeout`/`setInterval` delay JavaScript may ask for (a day; any longer is
/// this). The run's deadline ends the run long before.
pub const JS_TIMER_MAX: Duration = Duration::from_secs(86_400);

/// JavaScript runs on their engines at once, across every client of this server; more
/// wait their turn within their own deadline (a wait that outlasts it is a `TIMEOUT`
/// saying so). A run holds its place until its engine's thread has ended, so a script
/// stuck in a native call past its deadline still counts.
pub const JS_CONCURRENT_RUNS: usize = 8;

/// Memory all running JavaScript runs may hold together: each run reserves its heap cap
/// and its fetch allowance ([`FETCH_RUN_BYTES`]) from this budget before it starts, so
/// eight 512 MiB heap bombs cannot hold 4 GiB, nor eight runs' fetch bodies another 1
/// GiB outside it. Four runs at the default heap cap (2,112 MiB).
pub const JS_TOTAL_HEAP_BYTES: usize = 4 * (JS_HEAP_BYTES + FETCH_RUN_BYTES);
/// Redirects one `fetch` from JavaScript follows before it rejects with a `TypeError`:
/// 20, as the fetch standard says. Each hop is checked against the address policy
/// before it is requested.
pub const FETCH_REDIRECTS: usize = 20;

/// JavaScript worker processes kept started and idle (each with an engine built and
/// waiting), so a call pays neither for a process nor for an engine. Two cover a client
/// that sends calls back to back on a 2-core machine: while one runs a call, the other
/// builds its next engine.
pub const JS_SPARE_WORKERS: usize = 2;

/// Runs one JavaScript worker serves before it is replaced. Each run has a fresh engine,
/// so nothing a script does reaches the next; replacing the process now and then also
/// returns whatever memory its allocator kept.
pub const JS_WORKER_RUNS: u32 = 1_000;

/// How long the server waits for a worker's answer after telling it to stop (deadline or
/// cancellation) before it kills the worker and answers without its output. The worker
/// answers a stop from a thread the script cannot block (its watchdog), so only a worker
/// the system itself has stalled takes this long.
pub const JS_WORKER_STOP_GRACE: Duration = Duration::from_millis(100);

/// Address space a JavaScript worker may map beyond its heap cap: its binary, its two
/// threads' stacks, the allocator's arenas and the frames it reads and writes.
/// `RLIMIT_AS` is the heap cap plus this, so a worker cannot outgrow its share of
/// [`JS_TOTAL_HEAP_BYTES`] by more than this whatever its engine does.
pub const JS_WORKER_OVERHEAD_BYTES: u64 = 384 * 1024 * 1024;

/// File descriptors a JavaScript worker may hold: it needs its three standard streams
/// and a few for its runtime.
pub const JS_WORKER_OPEN_FILES: u64 = 64;

/// Largest JSON header of one frame between the server and a JavaScript worker: a job
/// (source and params, each within an MCP line) or an answer (a value within
/// [`RESULT_CHARS`] and two output streams within their caps, escaped). Anything larger
/// means the other side went wrong; the worker is then killed.
pub const WORKER_HEADER_BYTES: usize = 64 * 1024 * 1024;

/// Catalogue tool scripts kept compiled to bytecode; past this the cache starts again
/// empty (a catalogue that large pays a parse now and then, nothing more).
pub const JS_SCRIPT_CACHE_ENTRIES: usize = 1024;

/// Where `--http` listens when given no address.
pub const HTTP_LISTEN: &str = "127.0.0.1:8765";

/// The most characters of a tool, prompt or resource name a client sent that a trace's
/// span keeps (`mcp/spans.rs`): a request may name anything up to its body's cap, a span
/// held in the export queue and sent to the collector keeps a bounded start.
pub const SPAN_NAME_CHARS: usize = 256;

/// Largest MCP request body over HTTP: the same as one stdio line, so no message is
/// accepted over one transport and refused over the other. Larger bodies are answered
/// 413 while they stream in.
pub const HTTP_BODY_BYTES: usize = STDIO_LINE_BYTES;

/// How long an MCP session over HTTP may sit unused before it ends and its state
/// (history, REPL sessions' ownership) is freed. `TOOLGATE_HTTP_SESSION_IDLE_MS`.
pub const HTTP_SESSION_IDLE: Duration = Duration::from_secs(600);

/// MCP sessions alive at once over HTTP; a new one beyond this is answered 503 with
/// `Retry-After`. `TOOLGATE_HTTP_MAX_SESSIONS`.
pub const HTTP_MAX_SESSIONS: usize = 256;

/// The `Retry-After` of a 503 for a full session table.
pub const HTTP_SESSION_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Keep-alive interval of the SSE streams, so proxies do not close idle ones.
pub const HTTP_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// With `TOOLGATE_HTTP_SSE_POLL_MS`: when a client whose request stream the server closed
/// (its call still running) is told to come back (the SSE `retry` field).
pub const HTTP_SSE_POLL_RETRY: Duration = Duration::from_secs(1);

/// Connections both HTTP servers (`--http`, `catalogue serve`) hold at once; one beyond
/// it is answered 503 and closed. Below the process's file limit (raised to its hard
/// limit at start; the cap is lowered with a warning if even that is too small).
/// `TOOLGATE_HTTP_MAX_CONNECTIONS`.
pub const HTTP_MAX_CONNECTIONS: usize = 1_024;

/// Connections one client address may hold at once, so one client cannot take every
/// connection (1,100 idle connections from one client once took `catalogue serve`
/// down). `TOOLGATE_HTTP_MAX_CONNECTIONS_PER_ADDRESS`.
pub const HTTP_MAX_CONNECTIONS_PER_ADDRESS: usize = 128;

/// How long a connection may take to send a request's head, counted from when it
/// opened or finished its previous answer: the header-read timeout and, since the
/// count starts again after each answer, the idle timeout of a kept-alive connection.
/// `TOOLGATE_HTTP_HEADER_TIMEOUT_MS`.
pub const HTTP_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// File descriptors kept free of HTTP connections (JavaScript workers' pipes, upstream
/// children, the catalogue folder) when the connection cap is checked against the
/// process's file limit.
pub const HTTP_FD_RESERVE: u64 = 256;

/// `Retry-After` of the 503 sent to a connection over the caps.
pub const HTTP_CONNECTION_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long `/readyz` waits for the catalogue snapshot before answering 503.
pub const READY_WAIT: Duration = Duration::from_millis(500);

/// Random bytes in a key made by `toolgate keys new` (shown as hex after `tg_`).
pub const KEY_BYTES: usize = 32;

/// Runs a minute a key may start unless its entry says otherwise.
pub const KEY_PER_MINUTE: u32 = 600;

/// Globs in one tool policy (a key's `tools`, one scope of `TOOLGATE_OAUTH_TOOL_SCOPES`):
/// every tool name is matched against each, at every view built for the policy.
pub const TOOL_PATTERNS: usize = 64;

/// Characters in one glob of a tool policy: a match costs at worst the product of the
/// glob's and the name's lengths.
pub const TOOL_PATTERN_CHARS: usize = 256;

/// List answers of the catalogue API kept at once (the whole catalogue's and those of
/// the views tool policies see; each holds the list and its compressed copies, up to
/// the size of the whole list): more principals with distinct policies than this build
/// their list again when they ask.
pub const API_LISTINGS: usize = 4;

/// Per-policy views of a catalogue snapshot kept at once (each shares the snapshot's
/// tools and holds its own slug list and search index): a server whose principals hold
/// more distinct tool policies builds the least recently used ones again.
pub const POLICY_VIEWS: usize = 32;

/// Runs a minute an anonymous caller (one client address) may start: a free
/// tier that lets a person try the catalogue. `TOOLGATE_ANONYMOUS_PER_MINUTE` changes it.
pub const ANONYMOUS_PER_MINUTE: u32 = 30;

/// HTTP requests a minute one principal (a key, or an anonymous client address) may
/// make, whatever they ask for: 1,200, 20 a second sustained with a minute's burst. An
/// MCP call is a handful of requests (initialize, notifications, list, call), so this is
/// well above any run rate; it bounds a client that loops on cheap requests.
/// `TOOLGATE_REQUESTS_PER_MINUTE` changes it.
pub const REQUESTS_PER_MINUTE: u32 = 1_200;

/// How often rate buckets that have refilled, and run places nobody holds, are
/// forgotten, so memory follows the callers seen in the last minute.
pub const RATE_PRUNE_EVERY: Duration = Duration::from_secs(60);

/// How often the keys file is checked for a change (SIGHUP reads it at once).
pub const KEYS_POLL: Duration = Duration::from_secs(2);

/// With `TOOLGATE_REDIS`: how long one connection attempt to Redis may take. A replica
/// that cannot reach Redis within it answers `SHARED_STATE_UNAVAILABLE` (retryable) at
/// once rather than holding its callers.
pub const REDIS_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// With `TOOLGATE_REDIS`: how long one Redis command (or script) may take to answer.
/// Every shared-state step is a round trip of well under a millisecond on a healthy
/// server, so a second means Redis is in trouble.
pub const REDIS_RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// With `TOOLGATE_REDIS`: Redis commands one replica may have in flight on its
/// connection at once; more wait their turn (within [`REDIS_RESPONSE_TIMEOUT`]).
pub const REDIS_IN_FLIGHT: usize = 512;

/// With `TOOLGATE_REDIS`: how often a replica pings Redis to keep `toolgate_redis_up`
/// current and to say on stderr when Redis is lost and when it is back.
pub const REDIS_WATCH_EVERY: Duration = Duration::from_secs(1);

/// With `TOOLGATE_REDIS`: how long a run's place among its principal's runs at once
/// (a lease in Redis) lives unless renewed. A held place is renewed every third of it;
/// a replica that dies mid-run frees its places within it.
pub const REDIS_LEASE_TTL: Duration = Duration::from_secs(30);

/// With `TOOLGATE_REDIS`: the longest pause between two tries of a run waiting for a
/// place that another replica's run holds (the pauses double from 5 ms up to it); a place
/// given back on the same replica wakes its waiters at once.
pub const REDIS_PLACE_POLL_MAX: Duration = Duration::from_millis(200);

/// With `TOOLGATE_REDIS`: how long writes that need no answer (a run's record, a place
/// given back) wait for the replica's next exchange with Redis to carry them — the SSE
/// event of the call's answer, usually — before they are sent on their own.
pub const REDIS_LATER_WAIT: Duration = Duration::from_millis(2);

/// With `TOOLGATE_REDIS`: the most writes that need no answer a replica holds for its
/// next exchange; past it (Redis too slow to keep up) more are dropped, said and counted,
/// as a failed write is.
pub const REDIS_LATER_MAX: usize = 4096;

/// With `TOOLGATE_REDIS`: the newest events kept of one SSE stream for a resume with
/// `Last-Event-ID` on any replica; older ones are dropped as new ones come.
pub const REDIS_EVENTS_PER_STREAM: usize = 128;

/// With `TOOLGATE_REDIS`: the largest SSE event kept for a resume (its JSON); a larger
/// one is delivered on its live stream but a resume skips it. With
/// [`REDIS_EVENTS_PER_STREAM`], bounds one stream's keys in Redis.
pub const REDIS_EVENT_BYTES: usize = 1024 * 1024;

/// With `TOOLGATE_REDIS`: the largest notification (its JSON) passed to the replica that
/// holds its session's standalone SSE stream; a larger one is sent on this replica only,
/// where that stream is not open. Pub/sub messages are held in Redis's memory until read.
pub const REDIS_NOTE_BYTES: usize = 256 * 1024;

/// With `TOOLGATE_REDIS`: notifications from other replicas waiting, per session, to be
/// sent on its standalone stream here; more are dropped (a client reading that slowly
/// loses notifications, never the replica its memory).
pub const REDIS_NOTES_QUEUE: usize = 64;

/// With `TOOLGATE_REDIS`: how long an SSE stream's events are kept past its last event.
pub const REDIS_EVENTS_TTL: Duration = Duration::from_secs(600);

/// With `TOOLGATE_REDIS`: how long a resumed request stream follows its events in Redis
/// waiting for the request's answer (another replica may still be running the call);
/// past it the stream ends and the client resumes again from its last event.
pub const REDIS_EVENTS_FOLLOW: Duration = Duration::from_secs(60);

/// With `TOOLGATE_REDIS`: how long a resumed request stream with no event kept at all
/// (a call that has sent nothing yet, or an id made up) is followed before it ends and
/// the client resumes again.
pub const REDIS_EVENTS_FOLLOW_UNKEPT: Duration = Duration::from_secs(5);

/// With `TOOLGATE_REDIS`: the longest pause between two reads of a followed stream (the
/// pauses double from 10 ms up to it, and start again after each new event).
pub const REDIS_EVENTS_POLL_MAX: Duration = Duration::from_millis(250);

/// The prefix of every Redis key a fleet writes (`TOOLGATE_REDIS_PREFIX`), so several
/// fleets (or other programs) can share one Redis.
pub const REDIS_PREFIX: &str = "toolgate:";

/// Clock skew allowed when a bearer JWT's `exp` and `nbf` are checked: a token is
/// accepted up to this long after it expired and before it becomes valid, since the
/// authorization server's clock and ours are never quite the same. A minute is the usual
/// allowance (and `jsonwebtoken`'s default).
pub const OAUTH_LEEWAY: Duration = Duration::from_secs(60);

/// Least time between two fetches of a JWKS URL caused by tokens naming a key id it does
/// not hold: a key the authorization server has just added is found within this long,
/// and a caller sending made-up key ids cannot make us fetch the URL more often. (A JWKS
/// file is re-read only when it changed, which is cheap to tell.)
pub const OAUTH_JWKS_REFRESH_MIN: Duration = Duration::from_secs(30);

/// Age after which a JWKS fetched from a URL is fetched again on the next token, so keys
/// the authorization server withdrew stop being accepted. A failed fetch keeps the keys
/// in force.
pub const OAUTH_JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);

/// Deadline of one JWKS fetch, body included: a token waits on it at most this long.
pub const OAUTH_JWKS_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest JWKS document read (file or URL), in bytes. A real set is a few KiB; this
/// bounds what a wrong URL can make us hold.
pub const OAUTH_JWKS_BYTES: usize = 256 * 1024;

/// Most keys read from one JWKS; the rest are ignored. A token without a key id is tried
/// against every key of its algorithm, so this also bounds that work.
pub const OAUTH_JWKS_KEYS: usize = 64;

/// Smallest RSA modulus accepted in a JWKS, in bits (RFC 7518 §3.3 requires 2048).
pub const OAUTH_RSA_MIN_BITS: usize = 2048;

/// Longest `sub` claim accepted, in characters: it becomes the principal's id in logs,
/// history and rate buckets.
pub const OAUTH_SUBJECT_CHARS: usize = 256;

/// At SIGTERM/SIGINT the HTTP server stops accepting and gives running calls this long
/// to answer before it ends every session (cancelling what still runs).
pub const HTTP_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Default per-request timeout for the catalogue API.
pub const HTTP_TIMEOUT: Duration = Duration::from_millis(15_000);

/// Default lifetime of a fetched catalogue before it is fetched again.
pub const CACHE_TTL: Duration = Duration::from_millis(60_000);

/// Largest catalogue API response body read, in bytes; a larger answer is an error
/// rather than an unbounded allocation.
pub const API_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Largest `{"params": ...}` body the catalogue server accepts, in bytes.
pub const RUN_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Brotli quality of the precompressed `/api/tools` answer (0–11). Built once per
/// snapshot: 9 costs a few milliseconds for the embedded list and is within a few per
/// cent of 11's size, which costs ten times as long.
pub const LIST_BROTLI_QUALITY: u32 = 9;

/// Brotli window (log2 bytes) of the precompressed `/api/tools` answer.
pub const LIST_BROTLI_WINDOW: u32 = 22;

/// Under `TOOLGATE_ADVERTISE=auto`, the most bytes `tools/list` spends on tools (the
/// meta-tool, runtime tools and as many catalogue tools as fit), serialised: 24 KiB, about
/// 6,000 tokens of an agent's context. Peers list 3–8 KB; the embedded catalogue listed
/// whole was 116 KB.
pub const ADVERTISE_BYTES: usize = 24 * 1024;

/// Under `auto`, how many catalogue tools (in slug order) are described and weighed
/// against the byte budget. A 24 KiB budget holds a few dozen tools; weighing a 100,000-
/// tool catalogue whole would describe every tool to list twenty. The rest are found with
/// search, as the meta-tool's description says.
pub const ADVERTISE_SCAN_TOOLS: usize = 1_000;

/// Largest page of an answer that grows with the catalogue, in bytes of JSON: a
/// `tools/list` page, a meta-tool `list` page, a page of the `NAME://catalogue`
/// resource. 256 KiB is about 65,000 tokens, the most any one answer should cost a
/// client's context, and what a 100,000-tool catalogue answered whole (76 MB, 2.3 s)
/// could not be; the rest is reached with the page's cursor.
pub const PAGE_BYTES: usize = 256 * 1024;

/// Tools on one page of the meta-tool's `list` when the caller gives no `limit`.
pub const LIST_LIMIT_DEFAULT: usize = 100;

/// The `limit`s the meta-tool's `list` accepts (a page also stops at [`PAGE_BYTES`]).
pub const LIST_LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000;

/// Results of a meta-tool search when the caller gives no limit.
pub const SEARCH_LIMIT_DEFAULT: usize = 10;

/// The limits a meta-tool search accepts: enough to choose from, not a catalogue dump.
pub const SEARCH_LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=50;

/// Longest tool name (title) kept when a catalogue is loaded, in characters; the rest is
/// cut, with a stderr note naming the tool.
pub const MANIFEST_NAME_CHARS: usize = 200;

/// Longest tool description kept when a catalogue is loaded, in characters (the embedded
/// catalogue's longest is under 800); the rest is cut, with a stderr note naming the tool.
/// Bounds what search indexes and what `tools/list` and resources carry per tool.
pub const MANIFEST_DESCRIPTION_CHARS: usize = 8_192;

/// Longest category kept when a catalogue is loaded, in characters.
pub const MANIFEST_CATEGORY_CHARS: usize = 100;

/// Most tags kept per tool when a catalogue is loaded; later ones are dropped.
pub const MANIFEST_TAGS: usize = 32;

/// Longest tag kept when a catalogue is loaded, in characters.
pub const MANIFEST_TAG_CHARS: usize = 100;

/// The longest the embedding of a catalogue's tools may be estimated to take before
/// search by meaning is left off for it (`TOOLGATE_EMBED_BUDGET_MS`): a
/// 10,000-tool catalogue is ready within a minute on two cores.
pub const EMBED_BUDGET: Duration = Duration::from_secs(60);

/// Most phrasings (requests a user would type) kept per tool when a catalogue is loaded.
pub const MANIFEST_PHRASINGS: usize = 16;

/// Longest phrasing kept when a catalogue is loaded, in characters.
pub const MANIFEST_PHRASING_CHARS: usize = 200;

/// Most parameters of one tool the search index reads (in schema order). The input schema
/// itself is never cut: validation needs it whole.
pub const INDEXED_PARAMS: usize = 100;

/// Characters of a parameter's name the search index reads.
pub const INDEXED_PARAM_NAME_CHARS: usize = 100;

/// Characters of a parameter's description the search index reads.
pub const INDEXED_PARAM_DOC_CHARS: usize = 1_000;

/// Most resources and resource templates (together) one catalogue may carry; later
/// entries are refused, with one stderr line. Each is held in memory whole and listed in
/// `resources/list`, so the count bounds both.
pub const CATALOGUE_RESOURCES: usize = 1_000;

/// Most prompts one catalogue may carry; later ones are refused, with one stderr line.
pub const CATALOGUE_PROMPTS: usize = 1_000;

/// Longest URI or URI template of a catalogue resource, in bytes (browsers' and servers'
/// common bound on a URL).
pub const RESOURCE_URI_BYTES: usize = 2_048;

/// Largest body of one catalogue resource, in bytes: its text, its decoded blob, or a
/// template's text once its variables are filled (a read that would pass it is refused).
/// A resource over it at load is refused.
pub const RESOURCE_BODY_BYTES: usize = 1024 * 1024;

/// Most arguments one catalogue prompt may declare.
pub const PROMPT_ARGUMENTS: usize = 32;

/// Most messages one catalogue prompt may carry.
pub const PROMPT_MESSAGES: usize = 100;

/// Largest catalogue prompt, in bytes of the strings of its messages (text, data, URIs),
/// both as loaded and once `prompts/get` has filled its arguments in (a get that would pass
/// it is refused as invalid params).
pub const PROMPT_BYTES: usize = 1024 * 1024;

/// Most completion values one catalogue prompt may offer per argument (MCP answers at most
/// 100 per `completion/complete`).
pub const PROMPT_COMPLETIONS: usize = 1_000;

/// Most resources one MCP session may be subscribed to at once; a subscription past it is
/// refused as invalid params. Each costs one read whenever the catalogue changes.
pub const RESOURCE_SUBSCRIPTIONS: usize = 100;

/// Compiled input schemas kept at once, by default (`TOOLGATE_VALIDATORS`); the least
/// recently used goes first, to be compiled again when a call needs it. A schema is
/// compiled when a call first needs it (~10–1,000 µs), not at load: compiling and
/// holding every schema of a 100,000-tool catalogue took most of its start and ~850 MB.
/// A compiled schema holds a few KB; tools with the same schema share one.
pub const VALIDATORS: usize = 4_096;

/// The `TOOLGATE_VALIDATORS` values accepted.
pub const VALIDATORS_RANGE: std::ops::RangeInclusive<u64> = 16..=1_000_000;

/// Time one catalogue snapshot build (manifests and search index) may take. Checked
/// between tools and between indexed documents, which the caps above keep small; a build
/// over it is abandoned, the last good snapshot stays in service and stderr says why. The
/// 100,000-tool benchmark catalogue builds in about a second.
pub const SNAPSHOT_BUILD_TIME: Duration = Duration::from_secs(30);

/// Entries one snapshot's search index may hold: postings (one per term per tool) plus
/// typo-map keys, each 12–100 bytes, so about 1 GB at worst. The 100,000-tool benchmark
/// catalogue needs 2.4 million, a seventh of it. A build that would pass it is abandoned
/// like one over time.
pub const INDEX_ENTRIES: usize = 16_000_000;

/// Most runs in one batch: anonymous API execution allows 30 runs a minute, and one turn
/// should not spend the budget the next calls need.
pub const BATCH_MAX: usize = 10;

/// Runs kept in a server's history; older ones are dropped.
pub const HISTORY_RUNS: usize = 50;

/// Characters of JSON kept for one stored input or result; the cut is recorded.
pub const HISTORY_PAYLOAD_CHARS: usize = 8_000;

/// Longest name, in characters, compared for close matches (asked for or a catalogue
/// slug): a comparison costs the product of both lengths in time and memory, and a name
/// this long is no typo of a slug. Search still reaches such names by their words.
pub const CLOSE_MATCH_MAX_CHARS: usize = 256;

/// Shortest secret value, in characters, that history also hunts for in the rest of a
/// stored run (its result, its error message, the input's other fields) to mask it
/// there. A shorter one is masked under its own key but not searched for elsewhere,
/// where it would mask ordinary text (a secret of three characters hides little).
pub const HISTORY_SCRUB_MIN_CHARS: usize = 4;

/// How many close matches an unknown-slug error names.
pub const CLOSE_MATCHES: usize = 3;

/// Most schema violations reported for one call; the rest are counted, not listed.
pub const VIOLATIONS_SHOWN: usize = 10;

/// How long after a child's deadline the output pipes of its run are still read, for what
/// the killed process group had already written (and so that a grandchild that escaped
/// the group cannot hold the run open).
pub const PROCESS_DRAIN_GRACE: Duration = Duration::from_millis(500);

/// NyxilumNode runs (`nyxilum_run`, `_check`, `_lint`, `_format` and `nyxilum` catalogue
/// tools) at once, across every client; more wait within their own deadline. Each is a
/// .NET process of tens of MiB; REPL sessions have their own cap.
pub const NYX_CONCURRENT_RUNS: usize = 4;

/// Tool calls one snippet's code may make through its `tools` global (code mode); the
/// next is refused with `RESOURCE_LIMIT`. A loop calling tools ends here rather than at
/// the deadline, with every call recorded.
pub const CODE_CALLS: usize = 50;

/// Tool calls one snippet's code may have in flight at once; another is refused with
/// `RESOURCE_LIMIT` until one ends.
pub const CODE_PARALLEL: usize = 8;

/// Extra CPU seconds a sandboxed child gets over its wall-clock deadline before the
/// kernel kills it (`RLIMIT_CPU`); the wall clock normally stops it first.
pub const SANDBOX_CPU_SLACK_SECONDS: u64 = 1;

/// Address space of a sandboxed child (`RLIMIT_AS`): 8 GiB. The .NET runtime reserves
/// far more address space than it touches, so this is generous; the managed heap is
/// capped separately through `DOTNET_GC_HEAP_HARD_LIMIT_BYTES` (`backends::nyxilum::limits`).
pub const SANDBOX_ADDRESS_SPACE_BYTES: u64 = 8 * 1024 * 1024 * 1024;

/// Largest file a sandboxed child may write (`RLIMIT_FSIZE`): 64 MiB.
pub const SANDBOX_FILE_SIZE_BYTES: u64 = 64 * 1024 * 1024;

/// Open file descriptors of a sandboxed child (`RLIMIT_NOFILE`): enough for the .NET
/// runtime's assemblies, not for a descriptor bomb.
pub const SANDBOX_OPEN_FILES: u64 = 1_024;

/// Processes and threads of a sandboxed child's user (`RLIMIT_NPROC`): the .NET runtime
/// starts a few dozen threads; a fork bomb needs far more.
pub const SANDBOX_PROCESSES: u64 = 512;

/// Bytes a sandboxed child's run folder may hold: 64 MiB, as much as one file may
/// (`RLIMIT_FSIZE` alone bounds a file, not a folder of them: a writer stored 1.4 GiB in
/// 1.9 s). The folder is a tmpfs of this size in the child's mount namespace, so what it
/// stores is memory, freed when the run ends; a write past it fails with `ENOSPC`.
pub const SANDBOX_FOLDER_BYTES: u64 = 64 * 1024 * 1024;

/// Entries (files, folders, links) a sandboxed child's run folder may hold: 4,096, the
/// tmpfs's inode count. A program and its scratch files need a handful; runs that
/// escaped left folders of 37,000–73,000 entries behind.
pub const SANDBOX_FOLDER_ENTRIES: u64 = 4_096;

/// Memory a sandboxed run may hold, its tmpfs folder included (`memory.max` of its
/// cgroup, where cgroups are available): 3 GiB, room for the .NET managed heap cap
/// (`DOTNET_GC_HEAP_HARD_LIMIT_BYTES`) and the runtime around it. The address-space
/// limit bounds each process; this bounds them together.
pub const SANDBOX_MEMORY_BYTES: u64 = 3 * 1024 * 1024 * 1024;

/// Share of one CPU a sandboxed run may use (`cpu.max` of its cgroup, where cgroups are
/// available), in percent: 100, one core, so a run and its threads cannot starve the
/// server and the other runs of a small machine.
pub const SANDBOX_CPU_PERCENT: u64 = 100;

/// The user and group id a sandboxed child runs as when toolgate runs as root: 65534,
/// `nobody`/the kernel's overflow id, which owns no file. Root's children would be root
/// on the host's files and are exempt from `RLIMIT_NPROC`.
pub const SANDBOX_UNPRIVILEGED_ID: u32 = 65_534;

/// Longest line (one JSON-RPC message) read from stdin, in bytes: 8 MiB, room for a
/// 6 MiB file as base64 and far past any tool call an agent writes (a larger payload
/// belongs in a resource or a URL). A longer line is discarded as it streams in (never
/// buffered whole) and answered with a JSON-RPC error naming this cap.
pub const STDIO_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Bytes kept from each end of a line over [`STDIO_LINE_BYTES`] to find the request's
/// `id` in (clients write it first or last), so the error answers the right call.
pub const STDIO_ID_SEARCH_BYTES: usize = 4096;

/// How long one upstream MCP server may take to start, initialize and list its tools
/// before the attempt counts as failed (and is retried with backoff).
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long after the upstream servers start a listing (`tools/list`, and the resource
/// and prompt lists) waits for every upstream's first connection attempt to end, so a
/// client that lists once at start sees their tools; past it every list is served
/// without the late ones, which a `list_changed` announces when they arrive. One
/// deadline for all requests, not a wait each (each list once waited its own 10 s, so
/// a client listing prompts, then tools, waited 20–30 s).
pub const UPSTREAM_FIRST_WAIT: Duration = Duration::from_secs(10);

/// First wait before restarting an upstream that failed or ended; it doubles on each
/// failure in a row up to [`UPSTREAM_BACKOFF_MAX`].
pub const UPSTREAM_BACKOFF_MIN: Duration = Duration::from_millis(250);

/// Longest wait between two restarts of an upstream.
pub const UPSTREAM_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A connection that lasted this long was healthy: the next restart waits only
/// [`UPSTREAM_BACKOFF_MIN`] again.
pub const UPSTREAM_HEALTHY_AFTER: Duration = Duration::from_secs(10);

/// How often a connected upstream is pinged; one that does not answer a ping within the
/// same time has stopped answering and is restarted (its calls in flight answer
/// `UPSTREAM_UNAVAILABLE`).
pub const UPSTREAM_PING: Duration = Duration::from_secs(15);

/// How long one upstream call may go without an answer or a progress notification;
/// then it is cancelled upstream and answered `TIMEOUT`. Each progress notification
/// starts the wait again, so a long call that reports progress is not cut.
pub const UPSTREAM_CALL_IDLE: Duration = Duration::from_secs(300);

/// Pages of `tools/list` read from one upstream; a server still paging past it is
/// listed with the tools read so far (a loop of cursors cannot hold toolgate).
pub const UPSTREAM_LIST_PAGES: usize = 100;

/// How long one upstream may take to list its resources or prompts; a slower one adds
/// nothing to that list (a warning says so) rather than holding the client's.
pub const UPSTREAM_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Progress and log notifications of one upstream read but not yet passed on to the
/// client; one that finds this many waiting is dropped (the connection is read without
/// waiting for the client).
pub const UPSTREAM_NOTIFICATIONS_QUEUED: usize = 1024;

/// The longest an upstream call's answer waits for the progress the upstream sent before
/// it to be passed on (each notification is handled on a task of its own, so the answer
/// can get ahead of it); past this the answer goes out and late progress is dropped.
pub const UPSTREAM_PROGRESS_SETTLE: Duration = Duration::from_secs(1);

/// Tools kept from one upstream (after its `tools` filter); more are left out with a
/// note, so one server cannot flood the catalogue and its index.
pub const UPSTREAM_TOOLS: usize = 2_000;

/// How long the server waits once its session is over (stdin closed, SIGTERM or
/// SIGINT): first for calls in flight to answer before they are cancelled, then for
/// blocking work (a JavaScript engine stopping) to end before the process exits.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// How long `shell` and `demo` wait for a TCP connection to a `--url` server before
/// saying it cannot be reached: a server on this machine or network accepts within
/// milliseconds, and a person is waiting for the answer.
pub const CLIENT_REACH_TIMEOUT: Duration = Duration::from_secs(5);

/// Pages of the meta-tool's `list` that `shell` and `demo` read before giving up: a
/// page holds up to 100 tools, so this is far past any real catalogue, and it stops a
/// server whose cursors never end from holding the client forever.
pub const CLIENT_LIST_PAGES: usize = 1_000;

// --- What one caller's input may cost: validation, message structure, HTTP state ---

/// Subschemas that may check one value, counted through in-place applicators (`allOf`,
/// `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`) and local references.
/// A schema over it is refused when compiled: `$defs` that each `anyOf` two references to
/// the next unfold into 2^n checks of a single string, which no memo catches. Real
/// schemas stay far below (a pydantic union of ten models with optional fields: under a
/// hundred).
pub const VALIDATION_UNFOLD: u64 = 10_000;

/// Longest value (in bytes) matched against a `pattern` that needs a backtracking engine
/// (lookaround, backreferences); a longer one fails the call with a clear error. Such a
/// pattern is quadratic in its subject: `(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{12,}` took
/// 18 ms at 4,000 characters and 1.5 s at 40,000 (fancy-regex 0.20, this machine).
pub const PATTERN_SUBJECT_BYTES: usize = 4_096;

/// Work a call's backtracking patterns may take, counted as the square of each matched
/// value's length in bytes: four values at the longest, about 70 ms, on a blocking
/// thread.
pub const PATTERN_WORK: u64 = 4 * (PATTERN_SUBJECT_BYTES as u64) * (PATTERN_SUBJECT_BYTES as u64);

/// Backtracking steps one match of such a pattern may take (fancy-regex's own bound,
/// for backreferences and nested repetition).
pub const PATTERN_BACKTRACK_LIMIT: usize = 100_000;

/// Characters of a value quoted in a validation message (then `…`).
pub const VIOLATION_VALUE_CHARS: usize = 120;

/// Values (a string counted as the square of its 64-byte units where patterns backtrack,
/// as their cost may grow: one 4 KiB string is heavy alone) up to which a
/// call's arguments are validated on the async worker that received them; more are
/// validated on a blocking thread, so no worker is held for long.
pub const INLINE_VALIDATION_VALUES: usize = 4_096;

/// Nesting up to which a call's arguments are validated on the async worker against a
/// recursive union schema (`Node = Item | Group`); deeper values are validated on a heavy
/// thread, since each level tries the union's branches (a tree 30 deep under a two-way
/// union held a request thread for milliseconds under `cargo bench --bench hostile`).
pub const INLINE_UNION_DEPTH: usize = 8;

/// Deepest nesting of objects and arrays in one MCP message (stdio line or HTTP body),
/// checked on its bytes before it is parsed. Tool arguments rarely nest past ten; the
/// envelope adds three.
pub const MESSAGE_DEPTH: usize = 64;

/// Objects, arrays, members and elements in one MCP message, counted on its bytes before
/// it is parsed. Parsed, each costs up to ~230 bytes (an empty object in an array), so a
/// message holds at most ~23 MB whatever its text; 100,000 numbers or strings is far
/// past what an agent sends.
pub const MESSAGE_VALUES: usize = 100_000;

/// Time an HTTP request body may take before the rate floor applies
/// (`TOOLGATE_HTTP_BODY_TIMEOUT_MS`); each [`HTTP_BODY_MIN_RATE`] bytes received then
/// buy one more second. hyper's header timeout does not cover bodies.
pub const HTTP_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepted range of `TOOLGATE_HTTP_BODY_TIMEOUT_MS`: 100 ms to 10 minutes.
pub const HTTP_BODY_TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u64> = 100..=600_000;

/// The slowest a request body may arrive, in bytes a second, once its grace has passed:
/// a dial-up modem's pace; a body dripped a byte every 3 s is closed after the grace.
pub const HTTP_BODY_MIN_RATE: usize = 8 * 1024;

/// Bytes every request body in flight may hold together, raw and (estimated) parsed,
/// per HTTP server: what many large bodies at once can cost, whatever their number.
pub const HTTP_BODIES_BYTES: usize = 256 * 1024 * 1024;

/// Bytes past which a request body is heavy: scanned and parsed one at a time
/// ([`HTTP_HEAVY_BODIES`]). Parsing is on an async worker (rmcp's); a body of 64 KiB
/// parses in well under a millisecond, one of 100,000 values in ~15 ms. On the MCP server
/// only a `tools/call` request or a response to the server's own request may be heavy;
/// any other message past this size is refused unparsed (413).
pub const HTTP_HEAVY_BODY_BYTES: usize = 64 * 1024;

/// Heavy bodies scanned and parsed at once, per HTTP server: one, so on two cores the
/// other worker is always free for everyone else's requests (`cargo bench --bench hostile`).
pub const HTTP_HEAVY_BODIES: usize = 1;

/// What one JSON value is reckoned to hold once parsed, for that budget: an empty object
/// in an array measured ~230 bytes (serde_json with ordered maps).
pub const PARSED_VALUE_BYTES: usize = 256;

/// `n` with thousands separated by commas, as the descriptions print numbers.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The bounds in force for one server, overridable by configuration.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Heap cap of one JavaScript run, in bytes. By default, [`JS_HEAP_BYTES`].
    pub js_heap_bytes: usize,
    /// Wall-clock deadline of one JavaScript run. By default, [`JS_WALL_CLOCK`].
    pub js_wall_clock: Duration,
    /// Characters kept per output stream. By default, [`OUTPUT_CHARS`].
    pub output_chars: usize,
    /// Characters of JSON kept of a JavaScript run's value. By default, [`RESULT_CHARS`].
    pub result_chars: usize,
    /// JavaScript runs at once. By default, [`JS_CONCURRENT_RUNS`].
    pub js_concurrent_runs: usize,
    /// NyxilumNode runs at once. By default, [`NYX_CONCURRENT_RUNS`].
    pub nyx_concurrent_runs: usize,
    /// Heap of all running JavaScript engines together, in bytes. By default,
    /// [`JS_TOTAL_HEAP_BYTES`].
    pub js_total_heap_bytes: usize,
    /// Deadline of one `fetch` from JavaScript. By default, [`FETCH_TIMEOUT`].
    pub fetch_timeout: Duration,
    /// Per-request timeout of the catalogue API. By default, [`HTTP_TIMEOUT`].
    pub http_timeout: Duration,
    /// Catalogue lifetime; zero fetches on every request. By default, [`CACHE_TTL`].
    pub cache_ttl: Duration,
    /// Byte budget of `tools/list` under `auto`. By default, [`ADVERTISE_BYTES`].
    pub advertise_bytes: usize,
    /// Ping interval (and ping deadline) of upstream servers. By default,
    /// [`UPSTREAM_PING`].
    pub upstream_ping: Duration,
    /// How long after the upstream servers start a listing waits for their first
    /// connection attempts. By default, [`UPSTREAM_FIRST_WAIT`].
    pub upstream_first_wait: Duration,
    /// Compiled input schemas kept at once. By default, [`VALIDATORS`].
    pub validators: usize,
    /// Tool calls one snippet's code may make. By default, [`CODE_CALLS`].
    pub code_calls: usize,
    /// Tool calls one snippet's code may have in flight. By default, [`CODE_PARALLEL`].
    pub code_parallel: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            js_heap_bytes: JS_HEAP_BYTES,
            js_wall_clock: JS_WALL_CLOCK,
            output_chars: OUTPUT_CHARS,
            result_chars: RESULT_CHARS,
            js_concurrent_runs: JS_CONCURRENT_RUNS,
            nyx_concurrent_runs: NYX_CONCURRENT_RUNS,
            js_total_heap_bytes: JS_TOTAL_HEAP_BYTES,
            fetch_timeout: FETCH_TIMEOUT,
            http_timeout: HTTP_TIMEOUT,
            cache_ttl: CACHE_TTL,
            advertise_bytes: ADVERTISE_BYTES,
            upstream_ping: UPSTREAM_PING,
            upstream_first_wait: UPSTREAM_FIRST_WAIT,
            validators: VALIDATORS,
            code_calls: CODE_CALLS,
            code_parallel: CODE_PARALLEL,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Work done for a caller is charged to that caller: the history's recording budgets and
// the shares of the places runs take.
// ---------------------------------------------------------------------------------------

/// Values and keys of one input that history visits to find its secret values (to mask
/// them wherever else the run shows them). An input with more keeps no text in history,
/// only a note saying why and its size: finding the secrets of a 14 MB input of 1.2
/// million strings once took 22 s. Such an input could never be stored whole anyway
/// (each value costs at least two of the [`HISTORY_PAYLOAD_CHARS`]), so only the start
/// of its text is lost. Recording the worst inputs within these budgets takes under a
/// millisecond (`cargo bench --bench history`).
pub const HISTORY_SCAN_ITEMS: usize = 10_000;

/// Bytes of object keys of one input that history reads while it looks for secret
/// values (each key is checked against the secret-name rule, about 10 ns a byte); past
/// it, as past [`HISTORY_SCAN_ITEMS`].
pub const HISTORY_SCAN_KEY_BYTES: usize = 32 * 1024;

/// Distinct secret texts of one input history hunts for in the rest of the run (a value
/// and its escaped form count apart); past it, as past [`HISTORY_SCAN_ITEMS`]. An input
/// carrying more than a few dozen credentials is not one a person reads back.
pub const HISTORY_SECRET_VALUES: usize = 256;

/// Bytes of those secret texts together: they become one matcher, whose size and build
/// time follow them. A private key in PEM is about 3 KiB.
pub const HISTORY_SECRET_BYTES: usize = 16 * 1024;

/// Bytes of a payload's strings (its keys included) history scrubs of secret texts
/// before it stores the payload; past it, the stored text ends where the scrubbing did
/// (and says it was cut). Masks can shorten a text, so this is four times the cap.
pub const HISTORY_SCRUB_BYTES: usize = 4 * HISTORY_PAYLOAD_CHARS;

/// Levels of nesting kept of a stored result; values below become `"[deep]"`. Results
/// are read back from their stored text, which JSON readers take to 128 levels.
pub const HISTORY_RESULT_DEPTH: usize = 64;

/// Bytes of JSON history measures of an input whose text it does not keep (a refused
/// call's, one past the scan budget), to state its size; a larger one is said to be
/// larger than this.
pub const HISTORY_MEASURE_BYTES: usize = 64 * 1024;

/// Bytes of `fetch` bodies one JavaScript run may have the server hold at once (request
/// bodies being sent, response bodies until its worker has them): two bodies of the
/// largest size ([`FETCH_BODY_BYTES`]). It is reserved with the run's heap from
/// [`JS_TOTAL_HEAP_BYTES`], so the bodies of every run at once stay within that budget
/// (8 runs × 16 requests × 8 MiB once held 693 MB outside it); a body that would pass it
/// fails its `fetch` with a `TypeError` saying so.
pub const FETCH_RUN_BYTES: usize = 2 * FETCH_BODY_BYTES;

/// The slowest rate at which a JavaScript worker must take in the body of a frame the
/// server sends it (a `fetch` answer) on top of [`JS_WORKER_STOP_GRACE`], in bytes a
/// second: 8 MiB then has 0.6 s. A worker that reads slower is taken for stuck and
/// killed; with the bare grace, a worker descheduled on a busy machine was killed while
/// a 7 MB answer crossed the pipe.
pub const WORKER_BODY_BYTES_PER_SECOND: usize = 16 * 1024 * 1024;

/// Values in a call's params past which the gateway frees them on a blocking thread
/// rather than on the async worker that ran the call (counting stops here, so the count
/// costs at most this many steps): freeing a million short strings takes tens of
/// milliseconds, in which that worker serves no one else.
pub const LARGE_PARAMS_VALUES: usize = 10_000;

// --- What catalogues and upstream servers may cost ------------------------------------

/// How long after an upstream call ended a log message or request of that upstream (which
/// names no call) may still be the call's: while a call of another session ended this
/// recently, such a message is dropped, not shown to a session it may not belong to. An
/// upstream that logs later than this after a call, while another session calls it, can
/// still not be told apart from that session's call.
pub const UPSTREAM_MESSAGE_LINGER: Duration = Duration::from_secs(10);

/// Bytes of one message from an upstream server (a stdio line, an HTTP answer body, an
/// SSE event); rmcp's own default. A call whose answer is longer fails at once
/// (`EXECUTION_ERROR` naming this limit) instead of waiting for [`UPSTREAM_CALL_IDLE`];
/// such a line is streamed past, never held.
pub const UPSTREAM_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How long an upstream child whose stdin toolgate closed may take to exit before it is
/// killed (rmcp's own grace for its child transport).
pub const UPSTREAM_EXIT_GRACE: Duration = Duration::from_secs(3);

/// Bytes of one line of an upstream child's stderr that toolgate passes on to its own
/// stderr (after the `[server] ` prefix); the rest of a longer line is cut, with ` …`,
/// and never held.
pub const UPSTREAM_STDERR_LINE_BYTES: usize = 8 * 1024;

/// Bytes of the upstream tokens file (`TOOLGATE_UPSTREAM_TOKENS`) read; a longer file is
/// refused, not cut: it holds a few tokens per upstream.
pub const UPSTREAM_TOKENS_BYTES: u64 = 4 * 1024 * 1024;

/// Bytes of a client secret or private key file an upstream's `oauth` entry names.
pub const UPSTREAM_OAUTH_SECRET_BYTES: u64 = 64 * 1024;

/// How long `toolgate upstream login` waits for the authorization server to send the
/// browser back to its loopback redirect before it gives up.
pub const UPSTREAM_LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Bytes of one request to `toolgate upstream login`'s loopback redirect read (its
/// request line and headers); a longer one is answered 431 and not read further.
pub const UPSTREAM_LOGIN_REQUEST_BYTES: usize = 16 * 1024;

/// How long one probe request of `toolgate upstream login` (the unauthenticated request
/// whose 401 names the authorization server) may take.
pub const UPSTREAM_LOGIN_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes of a probe answer's body read by `toolgate upstream login` (to find the
/// session of a server that answers `initialize` unauthenticated).
pub const UPSTREAM_LOGIN_PROBE_BYTES: usize = 64 * 1024;

/// New client-credentials tokens an upstream's `insufficient_scope` answers may ask for
/// in a row (each for the scopes the answer names) before its calls fail instead: the
/// specification's guard against an endless step-up loop.
pub const UPSTREAM_SCOPE_UPGRADES: u32 = 3;

/// Bytes of the stderr of the server `catalogue check` starts that are kept, to be shown
/// when the check cannot finish (otherwise the report says it all).
pub const CHECK_STDERR_BYTES: usize = 64 * 1024;
