//! Captured console output: two streams, each capped in characters, cut on a character
//! boundary, with the truncation recorded rather than hidden.

/// Both captured streams of one run.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Captured {
    /// What console.log/info/debug/dir wrote.
    pub stdout: Stream,
    /// What console.warn/error/trace/assert wrote.
    pub stderr: Stream,
    /// True if and only if a snippet's returned value was cut at its cap (it is then the
    /// start of its JSON text).
    pub result_truncated: bool,
}

impl Captured {
    /// The same output with each stream held to `cap` characters: what a worker sent is
    /// not taken on trust.
    #[must_use]
    pub fn capped(mut self, cap: usize) -> Captured {
        self.stdout.cap(cap);
        self.stderr.cap(cap);
        self
    }
}

/// One capped stream.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Stream {
    text: String,
    chars: usize,
    truncated: bool,
}

impl Stream {
    /// Appends one console line, keeping at most `cap` characters in all.
    pub fn push_line(&mut self, line: &str, cap: usize) {
        if self.truncated {
            return;
        }
        for piece in [line, "\n"] {
            let room = cap.saturating_sub(self.chars);
            let n = piece.chars().count();
            if n <= room {
                self.text.push_str(piece);
                self.chars += n;
            } else {
                let cut = piece.char_indices().nth(room).map_or(piece.len(), |(i, _)| i);
                self.text.push_str(&piece[..cut]);
                self.chars += room;
                self.truncated = true;
                return;
            }
        }
    }

    /// Cuts the text to `cap` characters, if it holds more.
    fn cap(&mut self, cap: usize) {
        if let Some((cut, _)) = self.text.char_indices().nth(cap) {
            self.text.truncate(cut);
            self.truncated = true;
        }
        self.chars = self.chars.min(cap);
    }

    /// The text kept.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Returns true if and only if something was dropped.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The text kept, consumed.
    pub fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_char_boundaries_and_records_truncation() {
        let mut s = Stream::default();
        s.push_line("héllo", 4);
        assert_eq!(s.text(), "héll");
        assert!(s.is_truncated());
        s.push_line("more", 4);
        assert_eq!(s.text(), "héll");
    }

    #[test]
    fn fits_exactly() {
        let mut s = Stream::default();
        s.push_line("ab", 3);
        assert_eq!(s.text(), "ab\n");
        assert!(!s.is_truncated());
    }
}
