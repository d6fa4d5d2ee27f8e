//! What a run executes: a catalogue tool's `run(params)` or a snippet wrapped as the body
//! of an async function, prepared (module syntax refused, types erased) before an engine
//! is touched.

use crate::error::Error;

/// What to run in the fresh context.
#[derive(Debug, Clone)]
pub(super) enum Program {
    /// A catalogue tool: a script defining `run(params)`, named `filename` in traces.
    Tool {
        /// The script's name in stack traces.
        filename: String,
        /// The validated params, as JSON text.
        params: String,
    },
    /// A snippet, already wrapped as an async function expression (so top-level `await`
    /// and `return` work), named `filename` in traces.
    Snippet {
        /// `snippet.js` or `snippet.ts`.
        filename: &'static str,
    },
}

/// Wraps a snippet as an async function expression (erasing types first for TypeScript),
/// keeping every line and column where the caller wrote it.
pub(super) fn snippet(code: &str, typescript: bool) -> Result<(String, Program), Error> {
    if let Some(line) = module_syntax_line(code) {
        let message = format!(
            "import/export module syntax is not supported (line {line}): the snippet runs as the body of an async function, so use top-level await and return instead"
        );
        return Err(Error::Execution { message });
    }
    // The wrapper shares the snippet's first line, so every line number is the caller's.
    let wrapped = format!("(async function () {{{code}\n}})");
    if typescript {
        let js = super::typescript::strip(&wrapped, "snippet.ts")?;
        Ok((js, Program::Snippet { filename: "snippet.ts" }))
    } else {
        Ok((wrapped, Program::Snippet { filename: "snippet.js" }))
    }
}

/// The 1-based line of the first `import`/`export` statement, if any.
fn module_syntax_line(code: &str) -> Option<usize> {
    code.lines()
        .position(|l| {
            let t = l.trim_start();
            (t.starts_with("import ")
                || t.starts_with("import{")
                || t.starts_with("export ")
                || t.starts_with("export{"))
                && !t.starts_with("import(")
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_syntax_is_found_on_its_line() {
        assert_eq!(module_syntax_line("const a = 1;\n  import x from 'y';"), Some(2));
        assert_eq!(module_syntax_line("export{a}"), Some(1));
        assert_eq!(
            module_syntax_line("const m = await import('x');\nconst important = 1;"),
            None
        );
    }

    #[test]
    fn the_wrapper_keeps_the_first_line() {
        let (js, _) = snippet("return 1", false).unwrap_or_else(|e| panic!("{e}"));
        assert!(js.starts_with("(async function () {return 1\n"));
    }
}
