//! The text history stores of a payload, written straight from the run's value with the
//! redaction applied on the way (secret keys masked, deep values replaced, secret texts
//! masked inside strings and keys), into a sink that stops at the payload cap. Nothing
//! is copied first and nothing is scrubbed past the cap, so the work is bounded by the
//! cap and not by the payload: a node costs at least one character of output, a masked
//! or deep value is never walked, a string is read only as far as the cut plus the
//! longest secret (so no secret that begins before the cut is left half shown), and all
//! the strings of one payload together are scrubbed for at most
//! [`HISTORY_SCRUB_BYTES`].

use std::io::{self, Write};

use serde_json::Value;

use super::redact::{DEEP, MASK, MAX_DEPTH, Patterns, Secrets};
use crate::limits::{HISTORY_PAYLOAD_CHARS, HISTORY_RESULT_DEPTH, HISTORY_SCRUB_BYTES};
use crate::secrets::is_secret_name;

/// Which payload of a run is written, and so which rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The params: secret-keyed values masked, nothing below [`MAX_DEPTH`] kept.
    Input,
    /// The result or error body: secret texts masked, nothing below
    /// [`HISTORY_RESULT_DEPTH`] kept.
    Result,
}

/// `value` as history stores it and whether it was cut: the value itself (redacted) when
/// its JSON is at most [`HISTORY_PAYLOAD_CHARS`] characters, else the first characters
/// of that JSON as a string. When `secrets` could not all be found, a note saying so.
pub fn store(value: &Value, mode: Mode, secrets: &Secrets) -> (Value, bool) {
    let Some(patterns) = secrets.patterns() else {
        return (Value::String(MASK.to_owned()), true);
    };
    let mut writer = Writer {
        sink: Sink::chars(HISTORY_PAYLOAD_CHARS),
        patterns: Some(patterns),
        mask_keys: mode == Mode::Input,
        max_depth: match mode {
            Mode::Input => MAX_DEPTH,
            Mode::Result => HISTORY_RESULT_DEPTH,
        },
        scrub_left: HISTORY_SCRUB_BYTES,
    };
    let whole = writer.value(value, 1).is_ok();
    let text = String::from_utf8_lossy(&writer.sink.text).into_owned();
    if whole {
        // The text is valid JSON of a value no deeper than the depth cap; were it not to
        // read back, the text itself is kept.
        return match serde_json::from_str(&text) {
            Ok(value) => (value, false),
            Err(_) => (Value::String(text), false),
        };
    }
    (Value::String(text), true)
}

/// The length in bytes of `value`'s JSON text when it is at most `limit`, else `None`;
/// the work is bounded by `limit`, not by the value.
pub fn measure(value: &Value, limit: usize) -> Option<usize> {
    let mut writer = Writer {
        sink: Sink::bytes(limit),
        patterns: None,
        mask_keys: false,
        max_depth: usize::MAX,
        scrub_left: 0,
    };
    writer.value(value, 1).ok().map(|()| writer.sink.used)
}

/// Where the text goes: it counts what it was given in its unit (characters, or bytes
/// when it only measures) and refuses the first unit past its limit, which ends the
/// writing at once.
struct Sink {
    /// The text, when it is kept.
    text: Vec<u8>,
    keep: bool,
    /// Characters (or bytes) written.
    used: usize,
    limit: usize,
}

impl Sink {
    fn chars(limit: usize) -> Sink {
        Sink {
            text: Vec::new(),
            keep: true,
            used: 0,
            limit,
        }
    }

    fn bytes(limit: usize) -> Sink {
        Sink {
            text: Vec::new(),
            keep: false,
            used: 0,
            limit,
        }
    }

    /// Units left before the limit.
    fn left(&self) -> usize {
        self.limit - self.used
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.keep {
            if buf.len() > self.left() {
                return Err(io::Error::other("full"));
            }
            self.used += buf.len();
            return Ok(buf.len());
        }
        for &byte in buf {
            // A character is counted at its first byte; the text ends before the first
            // character past the limit, so it is whole UTF-8.
            if byte & 0xC0 != 0x80 {
                if self.used == self.limit {
                    return Err(io::Error::other("full"));
                }
                self.used += 1;
            }
            self.text.push(byte);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writing of one payload.
struct Writer<'a> {
    sink: Sink,
    /// The secret texts to mask, when any are hunted for.
    patterns: Option<&'a Patterns>,
    /// Whether secret-keyed values are masked (the input).
    mask_keys: bool,
    max_depth: usize,
    /// Bytes of string left to scrub in this payload.
    scrub_left: usize,
}

impl Writer<'_> {
    /// Writes `value` at `depth` (the top is 1); `Err` once the sink is full or the
    /// scrub budget is spent, that is when the payload is cut.
    fn value(&mut self, value: &Value, depth: usize) -> io::Result<()> {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => serde_json::to_writer(&mut self.sink, value)?,
            Value::String(s) => self.string(s)?,
            Value::Array(items) if depth > self.max_depth && !items.is_empty() => self.plain(DEEP)?,
            Value::Object(map) if depth > self.max_depth && !map.is_empty() => self.plain(DEEP)?,
            Value::Array(items) => {
                self.sink.write_all(b"[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.sink.write_all(b",")?;
                    }
                    self.value(item, depth + 1)?;
                }
                self.sink.write_all(b"]")?;
            }
            Value::Object(map) => {
                self.sink.write_all(b"{")?;
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.sink.write_all(b",")?;
                    }
                    self.string(key)?;
                    self.sink.write_all(b":")?;
                    if self.mask_keys && is_secret_name(key) {
                        self.plain(MASK)?;
                    } else {
                        self.value(item, depth + 1)?;
                    }
                }
                self.sink.write_all(b"}")?;
            }
        }
        Ok(())
    }

    /// A string of ours (a mask, the deep marker), written as it is.
    fn plain(&mut self, text: &str) -> io::Result<()> {
        serde_json::to_writer(&mut self.sink, text).map_err(io::Error::other)
    }

    /// A string of the payload, read no further than the cut needs and scrubbed.
    fn string(&mut self, s: &str) -> io::Result<()> {
        let matcher = self.patterns.and_then(|p| p.matcher.as_ref().map(|m| (m, p)));
        let Some((matcher, patterns)) = matcher else {
            // Escaping only lengthens a text, so one character more than the sink takes
            // is enough to fill it.
            let window = prefix_chars(s, self.sink.left() + 1);
            return serde_json::to_writer(&mut self.sink, window).map_err(io::Error::other);
        };
        // Masks can shorten a text, so the window is as much of the string as the
        // payload's scrub budget still allows; a cut window keeps only what lies before
        // its last `longest` characters, where no secret can still be running on.
        let region = prefix_bytes(s, self.scrub_left);
        self.scrub_left -= region.len();
        let cut = region.len() < s.len();
        let safe = if cut {
            prefix_chars(region, region.chars().count().saturating_sub(patterns.longest)).len()
        } else {
            region.len()
        };
        let mut clean = String::new();
        let mut at = 0;
        for found in matcher.find_iter(region) {
            if found.start() >= safe {
                break;
            }
            clean.push_str(&region[at..found.start()]);
            clean.push_str(MASK);
            at = found.end();
        }
        if at < safe {
            clean.push_str(&region[at..safe]);
        }
        if cut {
            // The string goes on past what was scrubbed: write what was, without its
            // closing quote, and end the payload here.
            let mut quoted = serde_json::to_string(&clean).map_err(io::Error::other)?;
            quoted.pop();
            self.sink.write_all(quoted.as_bytes())?;
            return Err(io::Error::other("scrub budget spent"));
        }
        serde_json::to_writer(&mut self.sink, &clean).map_err(io::Error::other)
    }
}

/// The first `n` characters of `s` (all of it when shorter).
fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
fn prefix_bytes(s: &str, n: usize) -> &str {
    if n >= s.len() {
        return s;
    }
    let mut at = n;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}
