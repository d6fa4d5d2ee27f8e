//! TypeScript → JavaScript by erasing types (swc's fast stripper), so every line and
//! column of the submitted code stays where the author wrote it and stack traces point at
//! the author's lines. Constructs that need new code (`enum`, `namespace`, parameter
//! properties) fall back to swc's transform mode, which may shift later lines.

use std::sync::{Arc, Mutex};

use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{BytePos, GLOBALS, Globals, SourceMap};
use swc_ts_fast_strip::{ErrorCode, Options, operate};

use crate::error::Error;

/// Diagnostics as they were emitted: message and where, when swc said.
type Diagnostics = Arc<Mutex<Vec<(String, Option<BytePos>)>>>;

/// Collects diagnostics instead of printing them.
struct Collect(Diagnostics);

impl Emitter for Collect {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let at = db.span.primary_span().map(|s| s.lo);
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((db.message(), at));
    }
}

/// Strips the types of `code`. A syntax error names its line and column in `code`.
pub(crate) fn strip(code: &str, filename: &str) -> Result<String, Error> {
    match run(code, filename, "strip-only") {
        Err((ErrorCode::UnsupportedSyntax, _)) => run(code, filename, "transform").map_err(|(_, e)| e),
        other => other.map_err(|(_, e)| e),
    }
}

fn run(code: &str, filename: &str, mode: &str) -> Result<String, (ErrorCode, Error)> {
    let options: Options =
        serde_json::from_value(serde_json::json!({"mode": mode, "filename": filename, "module": false}))
            .map_err(|e| (ErrorCode::Unknown, Error::Internal(format!("TypeScript options: {e}"))))?;
    let cm: Lrc<SourceMap> = Lrc::default();
    let seen: Diagnostics = Arc::default();
    let handler = Handler::with_emitter(true, false, Box::new(Collect(seen.clone())));
    let out = GLOBALS.set(&Globals::default(), || operate(&cm, &handler, code.to_owned(), options));
    match out {
        Ok(output) => Ok(output.code),
        Err(e) => {
            let diagnostics = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            let detail: Vec<String> = diagnostics
                .iter()
                .map(|(message, at)| match at {
                    Some(pos) => {
                        let loc = cm.lookup_char_pos(*pos);
                        format!("{message} (line {}, column {})", loc.line, loc.col.0 + 1)
                    }
                    None => message.clone(),
                })
                .collect();
            let message = if detail.is_empty() {
                e.message.clone()
            } else {
                detail.join("; ")
            };
            Err((
                e.code,
                Error::Execution {
                    message: format!("TypeScript: {message}"),
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_erased_in_place() {
        let ts = "interface A { x: number }\nconst a: A = { x: 1 };\nfunction f(n: number): number { return n }\n";
        let js = strip(ts, "t.ts").unwrap();
        assert_eq!(js.lines().count(), ts.lines().count());
        assert!(js.lines().nth(1).unwrap().starts_with("const a"), "{js}");
        assert!(!js.contains(": number"));
    }

    #[test]
    fn enums_fall_back_to_transform() {
        let js = strip("enum Color { Red, Green }\nconst c = Color.Green;", "t.ts").unwrap();
        assert!(js.contains("Color"), "{js}");
    }

    #[test]
    fn syntax_errors_name_their_line() {
        let err = strip("const a = 1;\nconst b: = 2;\n", "t.ts").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
