//! The host half of `fetch`, `TextEncoder`/`TextDecoder`, timers and `mcp` inside an
//! engine: the functions `web.js` and `client.js` receive. The engine has no network and
//! no client of its own; each request goes to a [`Port`] — in a worker, the pipe to the
//! server, which makes it under the address policy and every limit of `docs/reference/limits.md`
//! (`fetch.rs`), and passes notes and asks to the MCP client of the run's call.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rquickjs::prelude::Async;
use rquickjs::{ArrayBuffer, Ctx, Function, Object};
use tokio::sync::Notify;

use crate::backchannel::{Ask, Note};
use crate::backends::js::wire::Answer;
use crate::backends::js::wire::{Failure, Request, ToolsAsk};
use crate::limits::{CLIENT_NOTE_BYTES, JS_TIMER_MAX, STDIO_LINE_BYTES};

/// A request's answer, on its way.
pub(super) type Pending = Pin<Box<dyn Future<Output = Result<Answer, Failure>> + Send>>;

/// An ask's answer, on its way: the MCP result as JSON.
pub(super) type Asked = Pin<Box<dyn Future<Output = Result<serde_json::Value, Failure>> + Send>>;

/// A `tools` request's answer, on its way: the value's JSON text.
pub(super) type Called = Pin<Box<dyn Future<Output = Result<Vec<u8>, Failure>> + Send>>;

/// Where an engine's requests go.
pub(super) trait Port: Send + Sync {
    /// Makes `request` (with `body`), the run's request number `id`; `cancel` is
    /// notified when the script aborts it.
    fn fetch(&self, request: Request, body: Option<Vec<u8>>, id: u32, cancel: Arc<Notify>) -> Pending;

    /// The most bytes a request or response body may hold.
    fn body_limit(&self) -> usize;

    /// Sends `note` to the MCP client of the run's call; `Err` (thrown in the script)
    /// when the run has sent its share or is over.
    fn note(&self, note: Note) -> Result<(), Failure>;

    /// Makes request `ask` (params as the MCP request's) of the run's MCP client.
    fn ask(&self, ask: Ask, params: serde_json::Value) -> Asked;

    /// Makes request `ask` of the snippet's `tools` (a tool call or a search), through
    /// the server's gateway.
    fn tools(&self, ask: ToolsAsk) -> Called;
}

/// The host object handed to `web.js`: `fetch`, `abort`, `encode`, `decode` and
/// `bodyLimit`. Requests in flight are registered by id so `abort(id)` can end one.
pub(super) fn host<'js>(ctx: &Ctx<'js>, port: Arc<dyn Port>) -> rquickjs::Result<Object<'js>> {
    let in_flight: Arc<Mutex<HashMap<u32, Arc<Notify>>>> = Arc::default();
    let host = Object::new(ctx.clone())?;
    host.set("bodyLimit", port.body_limit() as f64)?;
    let (noter, asker, caller, searcher) = (port.clone(), port.clone(), port.clone(), port.clone());

    let registry = in_flight.clone();
    let fetch = Function::new(
        ctx.clone(),
        Async(
            move |ctx: Ctx<'js>,
                  url: String,
                  method: String,
                  headers: String,
                  body: Option<ArrayBuffer<'js>>,
                  redirect: String,
                  id: u32| {
                let registry = registry.clone();
                let cancel = Arc::new(Notify::new());
                registry
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id, cancel.clone());
                let body = body.map(|b| copy(&b));
                let request = Request {
                    url,
                    method,
                    headers,
                    redirect,
                    has_body: body.is_some(),
                };
                let pending = port.fetch(request, body, id, cancel);
                async move {
                    let outcome = pending.await;
                    registry.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                    answer(&ctx, outcome)
                }
            },
        ),
    )?;
    host.set("fetch", fetch)?;

    let abort = Function::new(ctx.clone(), move |id: u32| {
        if let Some(cancel) = in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&id) {
            cancel.notify_one();
        }
    })?;
    host.set("abort", abort)?;

    let encode = Function::new(ctx.clone(), |ctx: Ctx<'js>, text: String| {
        ArrayBuffer::new(ctx, text.into_bytes())
    })?;
    host.set("encode", encode)?;

    let decode = Function::new(ctx.clone(), |bytes: ArrayBuffer<'js>, fatal: bool| {
        let bytes = copy(&bytes);
        if fatal {
            String::from_utf8(bytes).ok()
        } else {
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
    })?;
    host.set("decode", decode)?;

    let note = Function::new(ctx.clone(), move |json: String| -> Option<String> {
        if json.len() > CLIENT_NOTE_BYTES {
            return Some(format!(
                "a note to the MCP client may hold at most {CLIENT_NOTE_BYTES} bytes of JSON"
            ));
        }
        let note: Note = match serde_json::from_str(&json) {
            Ok(note) => note,
            Err(e) => return Some(format!("not a note to the MCP client: {e}")),
        };
        noter.note(note).err().map(|f| f.message)
    })?;
    host.set("note", note)?;

    let ask = Function::new(
        ctx.clone(),
        Async(move |ctx: Ctx<'js>, kind: String, json: String| {
            let parsed = match (kind.as_str(), serde_json::from_str::<serde_json::Value>(&json)) {
                (_, Err(e)) => Err(Failure::type_error(format!("the request is not JSON: {e}"))),
                ("sample", Ok(params)) => Ok((Ask::Sample, params)),
                ("elicit", Ok(params)) => Ok((Ask::Elicit, params)),
                (other, Ok(_)) => Err(Failure::type_error(format!("no such request: {other}"))),
            };
            let pending = parsed.map(|(ask, params)| asker.ask(ask, params));
            async move {
                let outcome = match pending {
                    Ok(pending) => pending.await,
                    Err(f) => Err(f),
                };
                asked(&ctx, outcome)
            }
        }),
    )?;
    host.set("ask", ask)?;

    // tools.call(name, params) and tools.<function>(params): the params arrive as JSON
    // text (client.js checked they are an object).
    let call = Function::new(
        ctx.clone(),
        Async(move |ctx: Ctx<'js>, name: String, function: bool, json: String| {
            let pending = match bounded(&json).map(|()| serde_json::from_str::<serde_json::Value>(&json)) {
                Ok(Ok(params)) => Ok(caller.tools(ToolsAsk::Call { name, function, params })),
                Ok(Err(e)) => Err(Failure::type_error(format!("tools: the params are not JSON: {e}"))),
                Err(f) => Err(f),
            };
            async move {
                let outcome = match pending {
                    Ok(pending) => pending.await,
                    Err(f) => Err(f),
                };
                called(&ctx, outcome)
            }
        }),
    )?;
    host.set("call", call)?;

    let search = Function::new(
        ctx.clone(),
        Async(move |ctx: Ctx<'js>, query: String, limit: Option<f64>| {
            // A limit out of range is the meta-tool's to refuse, with its words.
            let limit = limit.filter(|l| l.is_finite() && *l >= 0.0).map(|l| l as usize);
            let pending = searcher.tools(ToolsAsk::Search { query, limit });
            async move { called(&ctx, pending.await) }
        }),
    )?;
    host.set("search", search)?;

    let sleep = Function::new(
        ctx.clone(),
        Async(|ms: f64| async move {
            let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
            let wait = std::time::Duration::from_secs_f64(ms / 1000.0).min(JS_TIMER_MAX);
            tokio::time::sleep(wait).await;
        }),
    )?;
    host.set("sleep", sleep)?;
    Ok(host)
}

/// The object `client.js` turns into an ask's value or a thrown error.
fn asked<'js>(ctx: &Ctx<'js>, outcome: Result<serde_json::Value, Failure>) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    match outcome {
        Ok(value) => object.set("result", value.to_string())?,
        Err(f) => object.set("error", failure(ctx, f)?)?,
    }
    Ok(object)
}

/// `Ok` when a call's params (JSON text) are within what a direct call may send — its
/// size ([`STDIO_LINE_BYTES`]), depth and count of values ([`crate::message::scan`]) —
/// so code cannot hand the server more to parse than a client could.
fn bounded(json: &str) -> Result<(), Failure> {
    let refused = |what: String, limit: String| Failure::tool(&crate::error::Error::ResourceLimit { what, limit });
    if json.len() > STDIO_LINE_BYTES {
        return Err(refused(
            format!("The call's params ({} bytes of JSON)", json.len()),
            format!("{STDIO_LINE_BYTES} bytes, as a direct call's message"),
        ));
    }
    crate::message::scan(json.as_bytes())
        .map(|_| ())
        .map_err(|e| refused("The call's params".to_owned(), e.to_string()))
}

/// The object `client.js` turns into a `tools` request's value or a thrown error.
fn called<'js>(ctx: &Ctx<'js>, outcome: Result<Vec<u8>, Failure>) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    match outcome {
        Ok(json) => object.set("result", String::from_utf8_lossy(&json).into_owned())?,
        Err(f) => object.set("error", failure(ctx, f)?)?,
    }
    Ok(object)
}

/// A failure as the `{name, message}` object the installers turn into a thrown error
/// (with `code` and `retryable` when a tool call failed).
fn failure<'js>(ctx: &Ctx<'js>, f: Failure) -> rquickjs::Result<Object<'js>> {
    let error = Object::new(ctx.clone())?;
    error.set("name", f.name)?;
    error.set("message", f.message)?;
    if let Some(code) = f.code {
        error.set("code", code)?;
        error.set("retryable", f.retryable)?;
    }
    Ok(error)
}

/// The bytes of a buffer, copied out before any more JavaScript runs.
fn copy(buffer: &ArrayBuffer<'_>) -> Vec<u8> {
    // SAFETY: the slice lives only for this copy; no JavaScript runs while it exists, so
    // the engine cannot write into, detach or reallocate the buffer under it.
    unsafe { buffer.as_bytes() }.map(<[u8]>::to_vec).unwrap_or_default()
}

/// The object `web.js` turns into a `Response` or an error.
fn answer<'js>(ctx: &Ctx<'js>, outcome: Result<Answer, Failure>) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    match outcome {
        Ok((head, body)) => {
            object.set("status", head.status)?;
            object.set("statusText", head.status_text)?;
            object.set("url", head.url)?;
            object.set("redirected", head.redirected)?;
            object.set("headers", head.headers)?;
            object.set("body", ArrayBuffer::new(ctx.clone(), body)?)?;
        }
        Err(f) => object.set("error", failure(ctx, f)?)?,
    }
    Ok(object)
}
