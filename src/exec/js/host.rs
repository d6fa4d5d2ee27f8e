//! The host half of `fetch` and of `TextEncoder`/`TextDecoder` inside an engine: the
//! functions `web.js` receives. The engine has no network; each request goes to a
//! [`Port`] — in a worker, the pipe to the server, which makes it under the address
//! policy and every limit of DESIGN §7 (`fetch.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rquickjs::prelude::Async;
use rquickjs::{ArrayBuffer, Ctx, Function, Object};
use tokio::sync::Notify;

use super::fetch::Answer;
use super::wire::{Failure, Request};

/// A request's answer, on its way.
pub(super) type Pending = Pin<Box<dyn Future<Output = Result<Answer, Failure>> + Send>>;

/// Where an engine's requests go.
pub(super) trait Port: Send + Sync {
    /// Makes `request` (with `body`), the run's request number `id`; `cancel` is
    /// notified when the script aborts it.
    fn fetch(&self, request: Request, body: Option<Vec<u8>>, id: u32, cancel: Arc<Notify>) -> Pending;

    /// The most bytes a request or response body may hold.
    fn body_limit(&self) -> usize;
}

/// The host object handed to `web.js`: `fetch`, `abort`, `encode`, `decode` and
/// `bodyLimit`. Requests in flight are registered by id so `abort(id)` can end one.
pub(super) fn host<'js>(ctx: &Ctx<'js>, port: Arc<dyn Port>) -> rquickjs::Result<Object<'js>> {
    let in_flight: Arc<Mutex<HashMap<u32, Arc<Notify>>>> = Arc::default();
    let host = Object::new(ctx.clone())?;
    host.set("bodyLimit", port.body_limit() as f64)?;

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
    Ok(host)
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
        Err(f) => {
            let error = Object::new(ctx.clone())?;
            error.set("name", f.name)?;
            error.set("message", f.message)?;
            object.set("error", error)?;
        }
    }
    Ok(object)
}
