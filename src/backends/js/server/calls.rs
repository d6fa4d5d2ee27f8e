//! The tool calls a snippet's code makes (its `tools` global), as the pool serves them:
//! asked through the run's [`Tools`], answered as JSON within a frame's cap.

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use crate::backends::js::wire::ToolsAsk;
use crate::backends::seam::Tools;
use crate::error::Error;
use crate::limits::FETCH_BODY_BYTES;

/// The tool calls a run's code has in flight, each with the id of its request.
pub(super) type Calls<'t> = FuturesUnordered<BoxFuture<'t, (u32, Result<serde_json::Value, Error>)>>;

/// One request of a snippet's `tools` global, made through `tools` unless `cancel`
/// (the run's end) fires first. Asked now (so its place among the calls in flight is
/// taken in the order the code made them), answered when awaited.
pub(super) fn ask_tools<'t>(
    tools: &'t dyn Tools,
    ask: ToolsAsk,
    cancel: &'t CancellationToken,
) -> BoxFuture<'t, Result<serde_json::Value, Error>> {
    match ask {
        ToolsAsk::Call { name, function, params } => tools.call(name, function, params, cancel),
        ToolsAsk::Search { query, limit } => tools.search(query, limit),
    }
}

/// A tool's answer as the JSON text the worker reads, within the body cap of a frame
/// ([`FETCH_BODY_BYTES`]): a larger answer fails the call, not the run.
pub(super) fn encoded(value: &serde_json::Value) -> Result<Vec<u8>, Error> {
    let json = serde_json::to_vec(value).map_err(|e| Error::Internal(format!("a tool's answer is not JSON: {e}")))?;
    if json.len() > FETCH_BODY_BYTES {
        return Err(Error::ResourceLimit {
            what: format!("The tool's answer ({} bytes of JSON)", json.len()),
            limit: format!("{} bytes per call that code receives", FETCH_BODY_BYTES),
        });
    }
    Ok(json)
}
