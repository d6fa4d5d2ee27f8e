//! Catalogue tool scripts compiled once — TypeScript stripped, then QuickJS bytecode —
//! and read back into each fresh engine. Parsing is most of a small tool's run: base64-codec's 5 KB source takes
//! ~200 µs to parse here and ~20 µs to read as bytecode. The script keeps its exact
//! semantics (a global, sloppy-mode script, as an uncached `eval` would run it); only
//! the parse is skipped. rquickjs offers bytecode for modules only, so scripts go
//! through its raw `qjs` bindings here, and nowhere else.

use std::collections::HashMap;
use std::ffi::CString;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use rquickjs::{Ctx, qjs};

use crate::error::Error;
use crate::limits::JS_SCRIPT_CACHE_ENTRIES;

/// Compiled forms of tool scripts by filename and source: bytecode, and the JavaScript a
/// TypeScript tool strips to (erasing types costs ~0.1 ms a call). Each map is bounded:
/// when full, it starts again empty.
#[derive(Debug, Default)]
pub(super) struct Scripts {
    bytecode: Bounded<Arc<[u8]>>,
    stripped: Bounded<Arc<str>>,
}

impl Scripts {
    /// The bytecode of `source` (named `filename` in traces), compiled in `ctx` the first
    /// time. `None` when it does not compile; nothing is cached then, and the caller
    /// evaluates the source, which reports the problem (a syntax error, say) as usual.
    pub(super) fn get(&self, ctx: &Ctx<'_>, filename: &str, source: &Arc<str>) -> Option<Arc<[u8]>> {
        self.bytecode
            .get_or(filename, source, || {
                compile(ctx, filename, source).map(Arc::from).ok_or(())
            })
            .ok()
    }

    /// A TypeScript tool's source with its types erased, stripped the first time.
    pub(super) fn typescript(&self, filename: &str, source: &Arc<str>) -> Result<Arc<str>, Error> {
        self.stripped.get_or(filename, source, || {
            super::typescript::strip(source, filename).map(Arc::from)
        })
    }
}

/// One bounded map from (filename, source) to what was made of them.
#[derive(Debug)]
struct Bounded<V> {
    map: Mutex<HashMap<u64, Entry<V>>>,
}

/// What a hash leads to: the filename and source (compared on a hit, so a collision
/// is a miss) and the value.
type Entry<V> = (String, Arc<str>, V);

impl<V> Default for Bounded<V> {
    fn default() -> Self {
        Bounded { map: Mutex::default() }
    }
}

impl<V: Clone> Bounded<V> {
    /// The value kept for (`filename`, `source`), or `make`'s, kept when it succeeds.
    /// The lock is not held while `make` runs.
    fn get_or<E>(&self, filename: &str, source: &Arc<str>, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let key = key(filename, source);
        if let Some((name, text, value)) = self.map.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
            && name == filename
            && text == source
        {
            return Ok(value.clone());
        }
        let value = make()?;
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= JS_SCRIPT_CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, (filename.to_owned(), source.clone(), value.clone()));
        Ok(value)
    }
}

fn key(filename: &str, source: &str) -> u64 {
    let mut h = DefaultHasher::new();
    (filename, source).hash(&mut h);
    h.finish()
}

/// Compiles a global script without running it and writes its bytecode.
fn compile(ctx: &Ctx<'_>, filename: &str, source: &str) -> Option<Vec<u8>> {
    let name = CString::new(filename).ok()?;
    let text = CString::new(source).ok()?;
    let raw = ctx.as_raw().as_ptr();
    let flags = qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY | qjs::JS_EVAL_FLAG_BACKTRACE_BARRIER;
    // SAFETY: `raw` is the live context `ctx` borrows (its lock is held by the caller);
    // `text` is NUL-terminated and `source.len()` excludes the NUL, as JS_Eval requires.
    // Every value obtained is freed exactly once; the buffer JS_WriteObject returns is
    // copied, then released with js_free, as QuickJS documents.
    unsafe {
        // Engines move between threads: stack-overflow checks need this thread's stack.
        qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(raw));
        let function = qjs::JS_Eval(raw, text.as_ptr(), source.len() as _, name.as_ptr(), flags as i32);
        if qjs::JS_IsException(function) {
            qjs::JS_FreeValue(raw, qjs::JS_GetException(raw));
            return None;
        }
        let mut size: qjs::size_t = 0;
        let buffer = qjs::JS_WriteObject(raw, &mut size, function, qjs::JS_WRITE_OBJ_BYTECODE as i32);
        qjs::JS_FreeValue(raw, function);
        if buffer.is_null() {
            qjs::JS_FreeValue(raw, qjs::JS_GetException(raw));
            return None;
        }
        let bytes = std::slice::from_raw_parts(buffer, size as usize).to_vec();
        qjs::js_free(raw, buffer.cast());
        Some(bytes)
    }
}

/// Reads `bytecode` (written by [`Scripts::get`] in this process) and runs it as a global
/// script. An exception it throws is left pending for the caller to catch, as after any
/// rquickjs call that returns `Error::Exception`.
pub(super) fn run(ctx: &Ctx<'_>, bytecode: &[u8]) -> rquickjs::Result<()> {
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: the bytecode was produced by `compile` above with this build of QuickJS and
    // never left the process; JS_EvalFunction takes ownership of the function object,
    // and the result is freed here. On an exception the value is JS_EXCEPTION (nothing
    // to free) and the exception stays pending in the context.
    unsafe {
        // Engines move between threads: stack-overflow checks need this thread's stack.
        qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(raw));
        let function = qjs::JS_ReadObject(
            raw,
            bytecode.as_ptr(),
            bytecode.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(function) {
            return Err(rquickjs::Error::Exception);
        }
        let result = qjs::JS_EvalFunction(raw, function);
        if qjs::JS_IsException(result) {
            return Err(rquickjs::Error::Exception);
        }
        qjs::JS_FreeValue(raw, result);
    }
    Ok(())
}
