//! What one JSON message may hold before it is parsed: a nesting depth and a count of
//! containers, members and elements, read from its bytes in one pass with no allocation.
//!
//! Parsing multiplies a message: 15.7 MiB of `{}` parsed into 5.5 million maps held
//! 1.25 GB. The stdio transport and both HTTP servers scan each message first and refuse
//! one past [`MESSAGE_DEPTH`] or [`MESSAGE_VALUES`], so what a message can cost once
//! parsed is bounded by these numbers, not by its size alone.
//!
//! Also the one reader of newline-delimited messages with a cap on a line
//! ([`LineReader`]), shared by the stdio transport and an upstream child's stdout: a longer
//! line is never held, only its length and ends ([`LineEnds`]), where its `id` is looked
//! for. A leaf: no HTTP or MCP type.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::limits::{MESSAGE_DEPTH, MESSAGE_VALUES};

/// What a scanned message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Deepest nesting of objects and arrays.
    pub depth: usize,
    /// Objects and arrays, plus the separators between their members and elements: about
    /// one per value.
    pub values: usize,
}

/// Why a message is refused unparsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// It nests deeper than the limit.
    Depth(usize),
    /// It holds more values than the limit.
    Values(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Depth(limit) => write!(
                f,
                "the message nests objects and arrays deeper than {limit} levels; it was refused unparsed"
            ),
            Exceeded::Values(limit) => write!(
                f,
                "the message holds more than {limit} values (objects, arrays, members and elements); it was refused unparsed"
            ),
        }
    }
}

/// Scans `bytes` (JSON text, not checked further: the parser does that) against
/// [`MESSAGE_DEPTH`] and [`MESSAGE_VALUES`].
pub fn scan(bytes: &[u8]) -> Result<Shape, Exceeded> {
    scan_within(bytes, MESSAGE_DEPTH, MESSAGE_VALUES)
}

/// [`scan`] with the given limits.
pub fn scan_within(bytes: &[u8], max_depth: usize, max_values: usize) -> Result<Shape, Exceeded> {
    let mut depth = 0usize;
    let mut shape = Shape { depth: 0, values: 0 };
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max_depth {
                    return Err(Exceeded::Depth(max_depth));
                }
                shape.depth = shape.depth.max(depth);
                shape.values += 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => shape.values += 1,
            _ => continue,
        }
        if shape.values > max_values {
            return Err(Exceeded::Values(max_values));
        }
    }
    Ok(shape)
}

/// What is kept of a line longer than its cap, whoever reads it (the stdio transport, an
/// upstream's stdout): its length and its first and last `keep` bytes, where JSON-RPC
/// writers put the `id` (Python's SDK first, TypeScript's last). Memory stays at most
/// three times `keep` however long the line.
#[derive(Debug, Default)]
pub struct LineEnds {
    /// Bytes the line held, newline not counted.
    pub len: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
    keep: usize,
}

impl LineEnds {
    /// An empty record keeping `keep` bytes at each end.
    pub fn new(keep: usize) -> LineEnds {
        LineEnds {
            keep,
            ..LineEnds::default()
        }
    }

    /// Records the next bytes of the line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        let room = self.keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * self.keep {
            self.tail.drain(..self.tail.len() - self.keep);
        }
    }

    /// Its first bytes.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Its last bytes.
    pub fn tail(&self) -> &[u8] {
        &self.tail
    }
}

/// The value of the `id` when it is the object's last member: the text ends
/// `,"id":<value>}`. The last `}` closes the top-level object, so the member before it is
/// a top-level one.
pub fn trailing_id(tail: &[u8]) -> Option<serde_json::Value> {
    let text = std::str::from_utf8(tail.trim_ascii_end()).ok()?;
    let body = text.strip_suffix('}')?.trim_end();
    let start = body.rfind("\"id\"")?;
    let (before, member) = body.split_at(start);
    if !before.trim_end().ends_with([',', '{']) {
        return None;
    }
    let value = member["\"id\"".len()..].trim_start().strip_prefix(':')?.trim();
    serde_json::from_str(value).ok()
}

/// What one bounded read produced.
pub enum Read {
    /// A whole line, without its newline (and carriage return).
    Line(Vec<u8>),
    /// A line over the cap, discarded as it streamed in.
    Overlong(LineEnds),
    /// The input ended, with the read error that ended it, if one did.
    End(Option<std::io::Error>),
}

/// Reads lines without ever holding more than `cap` bytes of one.
pub struct LineReader<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    cap: usize,
    keep: usize,
    /// Set while the rest of an over-long line is being discarded.
    over: Option<LineEnds>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Reads `read` in lines of at most `cap` bytes; `keep` bytes of each end of a longer
    /// one are kept ([`LineEnds`]).
    pub fn new(read: R, cap: usize, keep: usize) -> LineReader<R> {
        LineReader {
            read: BufReader::new(read),
            line: Vec::new(),
            cap,
            keep,
            over: None,
        }
    }

    /// The longest line it reads whole.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The next line. Cancellation-safe: `fill_buf` consumes nothing when dropped, and
    /// what was taken is recorded before the next await.
    pub async fn next(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return Read::End(None),
                Ok(available) => available,
                Err(e) => return Read::End(Some(e)),
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let content = &available[..newline.unwrap_or(available.len())];
            let taken = newline.map_or(available.len(), |i| i + 1);
            if self.over.is_none() && self.line.len() + content.len() > self.cap {
                let mut over = LineEnds::new(self.keep);
                over.push(&self.line);
                self.line = Vec::new();
                self.over = Some(over);
            }
            match self.over.as_mut() {
                Some(over) => over.push(content),
                None => self.line.extend_from_slice(content),
            }
            self.read.consume(taken);
            if newline.is_some() {
                if let Some(over) = self.over.take() {
                    return Read::Overlong(over);
                }
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if !line.is_empty() {
                    return Read::Line(line);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_and_values_are_counted_outside_strings_only() {
        let shape = scan_within(br#"{"a":[1,2,{"b":"[[[{,,,\"]]"}]}"#, 10, 100).unwrap();
        assert_eq!(shape.depth, 3);
        assert_eq!(shape.values, 5, "three containers and two separators");
        assert_eq!(scan_within(b"[[[[1]]]]", 3, 100), Err(Exceeded::Depth(3)));
        let many = format!("[{}{{}}]", "{},".repeat(50));
        assert_eq!(scan_within(many.as_bytes(), 10, 100), Err(Exceeded::Values(100)));
        assert!(scan_within(many.as_bytes(), 10, 200).is_ok());
        assert!(
            scan(br#""\\" [[["#).is_ok(),
            "an escaped backslash ends before the quote"
        );
    }
}
