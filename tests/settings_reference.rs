//! `docs/reference/settings.md` is the contract for settings: every `TOOLGATE_*` variable
//! the code reads (and every variable a command-line flag reads, `env = "..."`) is listed
//! there, and it lists no `TOOLGATE_*` variable the code does not read.
//!
//! The code side is found by reading every `.rs` file under `src/`, whatever the module
//! layout: the names in string literals, leaving out comments, doc comments and items
//! under `#[cfg(test)]` (inline test modules and the files `mod tests;` names).
//! `TOOLGATE_TEST_*` variables belong to the tests and are not settings. The document side
//! is the first cell of each table row of the reference.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const REFERENCE: &str = "docs/reference/settings.md";

#[test]
fn the_settings_reference_lists_exactly_the_settings_the_code_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let code = read_by_code(&root.join("src"));
    let text = std::fs::read_to_string(root.join(REFERENCE)).unwrap_or_else(|e| panic!("{REFERENCE}: {e}"));
    let documented = documented(&text);

    let missing: Vec<&String> = code.iter().filter(|name| !documented.contains(*name)).collect();
    let extra: Vec<&String> = documented
        .iter()
        .filter(|name| is_setting(name) && !code.contains(*name))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{REFERENCE} is out of step with src/:\n  read by the code but missing from it: {missing:?}\n  named in it but read nowhere in src/: {extra:?}"
    );
    assert!(
        code.len() > 10,
        "the scan of src/ found only {code:?}: is it still reading the right folder?"
    );
}

/// The deployment files (`deploy/`, `compose.yaml`, `Dockerfile`) set only settings the
/// reference documents: a renamed or misspelt variable there would be ignored silently.
#[test]
fn the_deployment_files_set_only_documented_settings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(REFERENCE)).unwrap_or_else(|e| panic!("{REFERENCE}: {e}"));
    let documented = documented(&text);
    let mut files = vec![root.join("compose.yaml"), root.join("Dockerfile")];
    let mut folders = vec![root.join("deploy")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "conf") {
                files.push(path);
            }
        }
    }
    let mut named = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for name in toolgate_names(&text) {
            named += 1;
            assert!(
                documented.contains(&name),
                "{} sets {name}, which {REFERENCE} does not list",
                file.display()
            );
        }
    }
    assert!(
        named > 10,
        "only {named} settings found in {files:?}: is the scan reading the right files?"
    );
}

/// The checker itself, on a small source: literals count, comments and test items don't.
#[test]
fn the_scan_reads_literals_and_skips_comments_and_tests() {
    let source = r###"
        //! `TOOLGATE_IN_DOC_COMMENT` is only documentation.
        /* TOOLGATE_IN_BLOCK /* nested */ TOOLGATE_STILL_IN_BLOCK */
        #[arg(long, env = "NX_FLAG_VAR")]
        const A: &str = "TOOLGATE_READ"; // "TOOLGATE_IN_LINE_COMMENT"
        fn f<'a>(x: &'a str) -> char { let _ = r#"TOOLGATE_RAW "quoted""#; '"' }
        fn g() { format!("https://x TOOLGATE_IN_MESSAGE={}", 1); let _ = "TOOLGATE_OAUTH_*"; }
        #[cfg(test)]
        mod tests { fn t() { let _ = "TOOLGATE_ONLY_IN_TESTS"; } }
        #[cfg(test)]
        fn helper() -> &'static str { "TOOLGATE_TEST_HELPER" }
        const B: &str = "TOOLGATE_TEST_PYTHON";
        #[cfg(test)]
        #[path = "other_tests.rs"]
        mod tests;
    "###;
    let scan = scan(source);
    let names: Vec<&str> = scan.names.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        ["NX_FLAG_VAR", "TOOLGATE_IN_MESSAGE", "TOOLGATE_RAW", "TOOLGATE_READ"]
    );
    assert_eq!(scan.test_files, [TestFile::Path("other_tests.rs".into())]);
}

/// Returns true if and only if `name` is a setting the reference must not list unless
/// the code reads it: the `TOOLGATE_*` variables. (Variables that libraries read, such as
/// `RUST_LOG`, are listed too, and not checked this way.)
fn is_setting(name: &str) -> bool {
    name.starts_with("TOOLGATE_") && !name.starts_with("TOOLGATE_TEST_")
}

/// Every variable name in the first cell of a table row of the reference.
fn documented(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|word| is_variable_name(word))
        .collect()
}

/// Returns true if and only if `word` reads like an environment variable: capitals,
/// digits and `_`, starting with a capital, with at least one `_`.
fn is_variable_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.contains('_')
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The names read by the non-test code of every `.rs` file under `dir`.
fn read_by_code(dir: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut scans = Vec::new();
    let mut test_files = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let scan = scan(&text);
        for test_file in &scan.test_files {
            test_files.extend(test_file.candidates(file));
        }
        scans.push((file.clone(), scan));
    }
    scans
        .into_iter()
        .filter(|(file, _)| !test_files.contains(file))
        .flat_map(|(_, scan)| scan.names)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What one source file reads, and the test modules it declares in files of their own.
struct Scan {
    names: BTreeSet<String>,
    test_files: Vec<TestFile>,
}

/// A `#[cfg(test)]` module declared as `mod NAME;`.
#[derive(Debug, PartialEq)]
enum TestFile {
    /// `#[path = "..."]`: relative to the declaring file's folder.
    Path(String),
    /// `mod NAME;`: `NAME.rs` or `NAME/mod.rs` in the declaring module's folder.
    Module(String),
}

impl TestFile {
    /// The files this declaration in `declarer` may name.
    fn candidates(&self, declarer: &Path) -> Vec<PathBuf> {
        let folder = declarer.parent().unwrap();
        match self {
            TestFile::Path(path) => vec![folder.join(path)],
            TestFile::Module(name) => {
                let stem = declarer.file_stem().unwrap().to_str().unwrap();
                let base = if ["mod", "lib", "main"].contains(&stem) {
                    folder.to_path_buf()
                } else {
                    folder.join(stem)
                };
                vec![base.join(format!("{name}.rs")), base.join(name).join("mod.rs")]
            }
        }
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Punct(char),
}

/// Reads `source`: the variable names in its string literals and in `env = "..."`
/// attributes, outside comments and `#[cfg(test)]` items.
fn scan(source: &str) -> Scan {
    let tokens = tokens(source);
    let mut names = BTreeSet::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(after) = cfg_test(&tokens, i) {
            i = skip_item(&tokens, after, &mut test_files);
            continue;
        }
        if let Token::Str(text) = &tokens[i] {
            if matches!(&tokens[i.saturating_sub(2)..i], [Token::Word(w), Token::Punct('=')] if w == "env")
                && is_variable_name(text)
            {
                names.insert(text.clone());
            }
            names.extend(toolgate_names(text));
        }
        i += 1;
    }
    Scan { names, test_files }
}

/// The `TOOLGATE_*` names in `text`, but for `TOOLGATE_TEST_*` and prefixes
/// (`TOOLGATE_OAUTH_*`).
fn toolgate_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("TOOLGATE_") {
        let starts_word = !rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        if starts_word && !name.ends_with('_') && is_setting(name) {
            out.push(name.to_owned());
        }
        rest = &tail[end.max(1)..];
    }
    out
}

/// When a `#[cfg(test)]` attribute starts at `i`, the index after it.
fn cfg_test(tokens: &[Token], i: usize) -> Option<usize> {
    let words = ["#", "[", "cfg", "(", "test", ")", "]"];
    let window = tokens.get(i..i + words.len())?;
    let matches = window.iter().zip(words).all(|(token, want)| match token {
        Token::Word(w) => w == want,
        Token::Punct(c) => want.len() == 1 && want.starts_with(*c),
        Token::Str(_) => false,
    });
    matches.then_some(i + words.len())
}

/// Skips the item that starts at `i` (its other attributes first), noting a test module
/// in a file of its own; returns the index after it.
fn skip_item(tokens: &[Token], mut i: usize, test_files: &mut Vec<TestFile>) -> usize {
    let mut path = None;
    while tokens.get(i) == Some(&Token::Punct('#')) {
        let end = matching(tokens, i + 1);
        if let [
            Token::Punct('['),
            Token::Word(w),
            Token::Punct('='),
            Token::Str(p),
            Token::Punct(']'),
        ] = &tokens[i + 1..end]
            && w == "path"
        {
            path = Some(p.clone());
        }
        i = end;
    }
    let start = i;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct(';') => {
                if let [.., Token::Word(m), Token::Word(name)] = &tokens[start..i]
                    && m == "mod"
                {
                    test_files.push(match path {
                        Some(p) => TestFile::Path(p),
                        None => TestFile::Module(name.clone()),
                    });
                }
                return i + 1;
            }
            Token::Punct('{') => return matching(tokens, i),
            _ => i += 1,
        }
    }
    i
}

/// The index after the bracket that closes the one at `open` (`(`, `[` or `{`).
fn matching(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// Rust source as words, string literals (contents unescaped only as far as names need)
/// and punctuation; comments, whitespace, character literals and lifetimes left out.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            let (text, end) = quoted(&chars, i + 1);
            out.push(Token::Str(text));
            i = end;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
            if raw && chars.get(i + hashes) == Some(&'"') {
                let body = i + hashes + 1;
                let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let end = (body..chars.len())
                    .find(|&j| chars[j..].starts_with(&close))
                    .unwrap_or(chars.len());
                out.push(Token::Str(chars[body..end].iter().collect()));
                i = (end + close.len()).min(chars.len());
            } else if matches!(word.as_str(), "b" | "c") && chars.get(i) == Some(&'"') {
                let (text, end) = quoted(&chars, i + 1);
                out.push(Token::Str(text));
                i = end;
            } else {
                out.push(Token::Word(word));
            }
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// The contents of the string literal whose body starts at `start`, and the index after
/// its closing quote.
fn quoted(chars: &[char], start: usize) -> (String, usize) {
    let mut text = String::new();
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                text.push(' ');
                i += 2;
            }
            '"' => return (text, i + 1),
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    (text, i)
}
