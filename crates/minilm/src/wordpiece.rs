//! BERT uncased WordPiece, the tokenizer of all-MiniLM-L6-v2: text → token ids with
//! `[CLS]` … `[SEP]`, identical to HuggingFace `tokenizers` loading the model's
//! tokenizer.json (truncation to `max_tokens`, no padding).
//!
//! Hand-written because the `tokenizers` crate costs ~4 MB of code (rayon, regex, esaxx)
//! for what is, with this tokenizer.json, one fixed pipeline:
//!
//! 1. **Added tokens**: `[PAD]` `[UNK]` `[CLS]` `[SEP]` `[MASK]` written literally in the
//!    text (case-sensitive, not normalised) are those tokens; the text between them goes
//!    through 2–4 on its own.
//! 2. **BertNormalizer** (clean_text, handle_chinese_chars, strip_accents, lowercase, in
//!    this order): drop NUL, U+FFFD and Cc/Cf/Co except `\t\n\r`; whitespace → space; a
//!    space either side of a CJK ideograph; NFD, then drop Mn; `char::to_lowercase`.
//! 3. **BertPreTokenizer**: split on `char::is_whitespace` (dropped) and on punctuation
//!    (ASCII punctuation or Unicode P*), each punctuation char a word of its own.
//! 4. **WordPiece**: greedy longest match from the left, `##` before every piece but the
//!    first; a word of over 100 chars, or one with a part no entry matches, is `[UNK]`.
//!
//! The category tables below are those of the `unicode_categories` 0.1.1 crate, which
//! `tokenizers` uses (an older Unicode than std's, so std's or a newer crate's would
//! differ on recent characters). NFD is `unicode-normalization-alignments`, the Unicode
//! 9.0 fork `tokenizers` uses: `unicode-normalization` 0.1.26 (Unicode 16) decomposes 21
//! code points it leaves alone and reorders marks added since. Lowercase is std's.
//! Parity is tested on a committed fixture (`testdata/parity.jsonl`), on 20,813 MetaTool
//! texts and, per code point, on all of Unicode (see `testdata/reference.py`).
//!
//! Cost: no step looks at more than a bounded window (a word is cut off at 100 chars, a
//! vocabulary lookup at the longest entry), so time is linear in the text and stops
//! once `max_tokens` are out; the only allocation is the output (none for [`count`],
//! unless NFD buffers over 4 combining marks in a row). The vocabulary stays the
//! `include_str!`ed text: a table of one `u32` per entry (offset and length) and an
//! open-addressing hash of `u16` ids, 253,160 bytes of heap, built in ~2 ms.
//! Measured (release, on the shared 2-core machine): a text of 28–32 tokens p50 1.4 µs,
//! p99 3.8 µs; the 20,813 MetaTool texts 1.1–3.0 µs each (40–110 ns a token); 1 MB of
//! prose, all 233,012 tokens, 7–12 ms.
//!
//! [`count`]: WordPiece::count

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::OnceLock;

use unicode_normalization_alignments::UnicodeNormalization;

/// The vocabulary of all-MiniLM-L6-v2, one token a line, line n holding id n (written
/// from tokenizer.json by `scripts/minilm-vocab`; its sha256 is in `VOCAB.md`).
const VOCAB: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/model/vocab.txt"));

/// tokenizer.json's `max_input_chars_per_word`: a longer word is one `[UNK]`.
const MAX_WORD_CHARS: usize = 100;
/// A word's bytes, normalised: at most 4 per char (lowercasing never makes a char longer
/// than 4 bytes; `İ`, the one char that lowercases to two, is decomposed by NFD first).
const MAX_WORD_BYTES: usize = 4 * MAX_WORD_CHARS;
/// The prefix of a piece that continues a word.
const CONTINUATION: &str = "##";
/// The added tokens of tokenizer.json, all `special`, none `normalized`, so matched in
/// the raw text.
const ADDED: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
/// An empty slot of the hash table.
const EMPTY: u16 = u16::MAX;
/// The bit of a slot that marks a continuation key (the entry without its `##`).
const CONT_BIT: u16 = 1 << 15;

/// Why a vocabulary text cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VocabError {
    /// More entries, longer entries or more text than the compact tables address (ids
    /// are `u16` with a flag bit, offsets 24 bits and lengths 8 bits).
    #[error("vocabulary too large: {0}")]
    TooLarge(&'static str),
    /// A line is empty or repeats an earlier one, so line number and id would disagree.
    #[error("vocabulary line {line}: empty or repeated token")]
    BadLine {
        /// The line's number, from 0 (= the token's id).
        line: usize,
    },
    /// `[UNK]`, `[CLS]` or `[SEP]` is not in the vocabulary.
    #[error("vocabulary lacks {0}")]
    Missing(&'static str),
}

/// A WordPiece vocabulary and the BERT uncased pipeline around it; built once
/// ([`WordPiece::get`]) and shared, since encoding only reads it.
#[derive(Debug)]
pub struct WordPiece {
    /// The vocabulary text, one token a line.
    text: Cow<'static, str>,
    /// Per id, its token in `text`: offset in the low 24 bits, length in the high 8.
    entries: Box<[u32]>,
    /// Open addressing, linear probing: each key is an entry (id) or, for an entry that
    /// starts with `##`, its rest (id | `CONT_BIT`).
    slots: Box<[u16]>,
    /// `64 - log2(slots.len())`: a hash's top bits pick its first slot.
    shift: u32,
    /// The longest entry, and the longest rest of a `##` entry, in bytes: no longer
    /// piece can match, so none is looked up.
    max_len: usize,
    max_cont_len: usize,
    unk: u32,
    cls: u32,
    sep: u32,
    /// `ADDED`'s ids, where the vocabulary has them.
    added: [Option<u32>; 5],
}

impl WordPiece {
    /// The tokenizer of all-MiniLM-L6-v2, built from the committed vocabulary on first
    /// use (a few milliseconds) and kept for the process.
    pub fn get() -> &'static WordPiece {
        static ONCE: OnceLock<WordPiece> = OnceLock::new();
        // The committed vocabulary is valid: `tests::committed_vocabulary` builds it.
        ONCE.get_or_init(|| WordPiece::from_vocab(VOCAB).expect("model/vocab.txt is a valid vocabulary"))
    }

    /// Builds a tokenizer from a vocabulary text: one token a line (`\n`, an optional
    /// `\r` before it is dropped), line n being id n. The text is kept, not copied into
    /// per-token strings.
    pub fn from_vocab(text: impl Into<Cow<'static, str>>) -> Result<WordPiece, VocabError> {
        let text = text.into();
        if text.len() >= 1 << 24 {
            return Err(VocabError::TooLarge("text over 16 MiB"));
        }
        let mut entries = Vec::new();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let token = line.strip_suffix('\n').unwrap_or(line);
            let token = token.strip_suffix('\r').unwrap_or(token);
            if token.len() > 255 {
                return Err(VocabError::TooLarge("an entry over 255 bytes"));
            }
            entries.push(offset as u32 | (token.len() as u32) << 24);
            offset += line.len();
        }
        if entries.len() >= usize::from(CONT_BIT) {
            return Err(VocabError::TooLarge("32,768 entries or more"));
        }
        let conts = (0..entries.len())
            .filter(|&id| entry(&text, &entries, id).starts_with(CONTINUATION))
            .count();
        let keys = entries.len() + conts;
        let size = (keys + keys / 2).next_power_of_two().max(2);
        let mut wp = WordPiece {
            entries: entries.into_boxed_slice(),
            slots: vec![EMPTY; size].into_boxed_slice(),
            shift: 64 - size.trailing_zeros(),
            max_len: 0,
            max_cont_len: 0,
            unk: 0,
            cls: 0,
            sep: 0,
            added: [None; 5],
            text,
        };
        for id in 0..wp.entries.len() {
            let (len, rest) = {
                let token = wp.token_bytes(id as u16);
                let rest = token.strip_prefix(CONTINUATION.as_bytes()).map_or(0, <[u8]>::len);
                if token.is_empty() || wp.find(token, false).is_some() {
                    return Err(VocabError::BadLine { line: id });
                }
                (token.len(), rest)
            };
            wp.insert(id as u16, false);
            wp.max_len = wp.max_len.max(len);
            if rest > 0 {
                wp.insert(id as u16 | CONT_BIT, true);
                wp.max_cont_len = wp.max_cont_len.max(rest);
            }
        }
        wp.added = ADDED.map(|name| wp.find(name.as_bytes(), false));
        let need = |name: &'static str| wp.find(name.as_bytes(), false).ok_or(VocabError::Missing(name));
        (wp.unk, wp.cls, wp.sep) = (need("[UNK]")?, need("[CLS]")?, need("[SEP]")?);
        Ok(wp)
    }

    /// `text`'s ids: `[CLS]`, the text's tokens, `[SEP]`, cut so that there are at most
    /// `max_tokens` in all (the text's last tokens go, as `tokenizers` truncates). A
    /// `max_tokens` under 2 counts as 2 (`tokenizers` then does not truncate at all).
    pub fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let mut out = Vec::new();
        self.encode_into(text, max_tokens, &mut out);
        out
    }

    /// [`encode`](Self::encode) into `out`, whose contents it replaces: a caller that
    /// encodes many texts reuses one buffer.
    pub fn encode_into(&self, text: &str, max_tokens: usize, out: &mut Vec<u32>) {
        out.clear();
        self.run(text, max_tokens, |id| out.push(id));
    }

    /// How many ids [`encode`](Self::encode) would return, without allocating: what a
    /// caller budgets embedding work by (its cost grows with the token count).
    pub fn count(&self, text: &str, max_tokens: usize) -> usize {
        let mut n = 0;
        self.run(text, max_tokens, |_| n += 1);
        n
    }

    /// The token of `id`, if the vocabulary has one (for tests and debugging output).
    pub fn token(&self, id: u32) -> Option<&str> {
        let id = u16::try_from(id)
            .ok()
            .filter(|&id| usize::from(id) < self.entries.len())?;
        std::str::from_utf8(self.token_bytes(id)).ok()
    }

    /// How many tokens the vocabulary has (ids are `0..vocab_size()`).
    pub fn vocab_size(&self) -> usize {
        self.entries.len()
    }

    /// Heap bytes held (the vocabulary text itself is static when it is the committed
    /// one): part of the serving process's memory budget.
    pub fn heap_bytes(&self) -> usize {
        let text = match &self.text {
            Cow::Borrowed(_) => 0,
            Cow::Owned(s) => s.capacity(),
        };
        text + size_of_val(&*self.entries) + size_of_val(&*self.slots)
    }

    /// The pipeline, each id handed to `sink`: `[CLS]`, at most `max_tokens - 2` of the
    /// text's, `[SEP]`.
    fn run(&self, text: &str, max_tokens: usize, mut sink: impl FnMut(u32)) {
        sink(self.cls);
        let room = max_tokens.max(2) - 2;
        if room > 0 {
            let mut words = Words {
                wp: self,
                word: [0; MAX_WORD_BYTES],
                len: 0,
                chars: 0,
                room,
                sink: &mut sink,
            };
            let _ = words.text(text);
        }
        sink(self.sep);
    }

    /// The bytes of entry `id` (< `entries.len()`, checked by every caller).
    fn token_bytes(&self, id: u16) -> &[u8] {
        entry(&self.text, &self.entries, usize::from(id)).as_bytes()
    }

    /// The id of `piece`, as a whole entry or (`cont`) as the rest of a `##` entry.
    fn find(&self, piece: &[u8], cont: bool) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = (hash(piece, cont) >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return None;
            }
            if (slot & CONT_BIT != 0) == cont {
                let id = slot & !CONT_BIT;
                let token = self.token_bytes(id);
                let key = if cont { &token[CONTINUATION.len()..] } else { token };
                if key == piece {
                    return Some(u32::from(id));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Puts `slot` (an id, with `CONT_BIT` for a continuation key) in the table.
    fn insert(&mut self, slot: u16, cont: bool) {
        let token = self.token_bytes(slot & !CONT_BIT);
        let key = if cont { &token[CONTINUATION.len()..] } else { token };
        let mask = self.slots.len() - 1;
        let mut i = (hash(key, cont) >> self.shift) as usize;
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    /// WordPiece on one normalised word (1 to 100 chars): its pieces' ids in `out`, and
    /// how many; `None` when some part matches no entry (the word is then `[UNK]`).
    fn pieces(&self, word: &[u8], out: &mut [u32; MAX_WORD_CHARS]) -> Option<usize> {
        let mut n = 0;
        let mut start = 0;
        while start < word.len() {
            let cont = start > 0;
            let longest = if cont { self.max_cont_len } else { self.max_len };
            // Longest first, shortening by one char; longer than any entry cannot match.
            let mut end = back_to_char(word, word.len().min(start + longest));
            let id = loop {
                if end <= start {
                    return None;
                }
                if let Some(id) = self.find(&word[start..end], cont) {
                    break id;
                }
                end = back_to_char(word, end - 1);
            };
            *out.get_mut(n)? = id;
            n += 1;
            start = end;
        }
        Some(n)
    }
}

/// Entry `id` of a vocabulary text.
fn entry<'t>(text: &'t str, entries: &[u32], id: usize) -> &'t str {
    let e = entries[id] as usize;
    let (offset, len) = (e & 0xFF_FFFF, e >> 24);
    text.get(offset..offset + len).unwrap_or("")
}

/// The last char boundary of `word` at or before `at`.
fn back_to_char(word: &[u8], mut at: usize) -> usize {
    while at > 0 && at < word.len() && word[at] & 0xC0 == 0x80 {
        at -= 1;
    }
    at
}

/// FxHash-style multiply-rotate over the bytes (keys are short: 8 bytes on average).
fn hash(bytes: &[u8], cont: bool) -> u64 {
    const K: u64 = 0xF135_7AEA_2E62_A9C5;
    let mut h: u64 = if cont { 0x9E37_79B9_7F4A_7C15 } else { 0 };
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(26);
    }
    h.wrapping_mul(K)
}

/// The pre-tokenizer and WordPiece over a stream of normalised chars: the word being
/// read, and how many more ids may go out.
struct Words<'w, F: FnMut(u32)> {
    wp: &'w WordPiece,
    /// The word's bytes, only while it is at most `MAX_WORD_CHARS` long.
    word: [u8; MAX_WORD_BYTES],
    len: usize,
    /// The word's chars, counted on past `MAX_WORD_CHARS` only to say it is too long.
    chars: usize,
    room: usize,
    sink: &'w mut F,
}

impl<F: FnMut(u32)> Words<'_, F> {
    /// The added token that `tail` starts with: its length and id. No name is a prefix
    /// of another, so at most one matches.
    fn added_at(&self, tail: &[u8]) -> Option<(usize, u32)> {
        ADDED
            .iter()
            .zip(self.wp.added)
            .find_map(|(name, id)| Some((name.len(), id?)).filter(|_| tail.starts_with(name.as_bytes())))
    }

    /// The whole pipeline, in one pass. Printable ASCII, space, `\t`, `\n` and `\r` take
    /// a short path (NFD starters that decompose to themselves, so what lies between them
    /// can be decomposed on its own), where a `[` may open an added token (step 1: the
    /// text on either side is then normalised apart, as here anyway); each run of other
    /// chars goes through clean → CJK spaces → NFD → drop Mn → lowercase. `Break` once
    /// `room` is spent.
    fn text(&mut self, text: &str) -> ControlFlow<()> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b == b'['
                && let Some((len, id)) = self.added_at(&bytes[i..])
            {
                self.end_word()?;
                self.emit(id)?;
                i += len;
                continue;
            }
            if is_plain(b) {
                match b {
                    b'\t' | b'\n' | b'\r' | b' ' => self.end_word()?,
                    _ if b.is_ascii_punctuation() => self.punctuation(char::from(b))?,
                    _ => self.push(char::from(b.to_ascii_lowercase()))?,
                }
                i += 1;
                continue;
            }
            // A run ends at a plain byte, which is never inside a multi-byte char.
            let run = bytes[i..]
                .iter()
                .position(|&b| is_plain(b))
                .map_or(bytes.len(), |n| i + n);
            let chars = normalize_run(&text[i..run]);
            for c in chars {
                if c.is_whitespace() {
                    self.end_word()?;
                } else if is_punctuation(c) {
                    self.punctuation(c)?;
                } else {
                    self.push(c)?;
                }
            }
            i = run;
        }
        self.end_word()
    }

    /// A char of the current word.
    fn push(&mut self, c: char) -> ControlFlow<()> {
        self.chars += 1;
        if self.chars <= MAX_WORD_CHARS {
            let n = c.len_utf8();
            if let Some(dst) = self.word.get_mut(self.len..self.len + n) {
                c.encode_utf8(dst);
                self.len += n;
            }
        }
        ControlFlow::Continue(())
    }

    /// A punctuation char: a word of its own.
    fn punctuation(&mut self, c: char) -> ControlFlow<()> {
        self.end_word()?;
        self.push(c)?;
        self.end_word()
    }

    /// Ends the current word (if any): its pieces, or `[UNK]`, go out.
    fn end_word(&mut self) -> ControlFlow<()> {
        let (len, chars) = (self.len, self.chars);
        (self.len, self.chars) = (0, 0);
        if chars == 0 {
            return ControlFlow::Continue(());
        }
        let mut ids = [0; MAX_WORD_CHARS];
        let pieces = if chars > MAX_WORD_CHARS {
            None
        } else {
            self.wp.pieces(&self.word[..len], &mut ids)
        };
        match pieces {
            Some(n) => ids[..n].iter().try_for_each(|&id| self.emit(id)),
            None => self.emit(self.wp.unk),
        }
    }

    /// One id out; `Break` when it was the last there is room for.
    fn emit(&mut self, id: u32) -> ControlFlow<()> {
        (self.sink)(id);
        self.room = self.room.saturating_sub(1);
        if self.room == 0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// A byte the ASCII short path takes: printable ASCII, space, `\t`, `\n`, `\r`.
fn is_plain(b: u8) -> bool {
    matches!(b, b' '..=b'~' | b'\t' | b'\n' | b'\r')
}

/// BertNormalizer on a run of chars that holds no plain byte (see [`is_plain`]).
fn normalize_run(run: &str) -> impl Iterator<Item = char> + '_ {
    run.chars()
        .filter(|&c| !(c == '\u{FFFD}' || (!matches!(c, '\t' | '\n' | '\r') && in_table(OTHER, c))))
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .flat_map(|c| {
            let pad = is_chinese(c).then_some(' ');
            [pad, Some(c), pad].into_iter().flatten()
        })
        .nfd()
        .map(|(c, _)| c)
        .filter(|&c| !in_table(NONSPACING_MARK, c))
        .flat_map(char::to_lowercase)
}

/// BertPreTokenizer's punctuation: ASCII punctuation (which counts symbols such as `$`,
/// `+`, `^`, `|`) or Unicode P*.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || in_table(PUNCTUATION, c)
}

/// A CJK ideograph, as BertNormalizer's `is_chinese_char` has them.
fn is_chinese(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// Whether `c` is in a table of sorted, inclusive `start, end` pairs.
fn in_table(table: &[u32], c: char) -> bool {
    let c = u32::from(c);
    let (mut lo, mut hi) = (0, table.len() / 2);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if table[2 * mid] <= c { lo = mid + 1 } else { hi = mid }
    }
    lo > 0 && c <= table[2 * lo - 1]
}

#[cfg(test)]
#[path = "wordpiece_tests.rs"]
mod tests;

// Tables generated from `unicode_categories` 0.1.1's src/tables.rs (what `tokenizers`
// 0.22 reads through `UnicodeCategories`), ranges merged.

/// Cc, Cf and Co (`is_other`), as inclusive `start, end` pairs.
const OTHER: &[u32] = &[
    0x0000, 0x001F, 0x007F, 0x009F, 0x00AD, 0x00AD, 0x0600, 0x0605, 0x061C, 0x061C, 0x06DD, 0x06DD, 0x070F, 0x070F,
    0x180E, 0x180E, 0x200B, 0x200F, 0x202A, 0x202E, 0x2060, 0x2064, 0x2066, 0x206F, 0xE000, 0xF8FF, 0xFEFF, 0xFEFF,
    0xFFF9, 0xFFFB, 0x110BD, 0x110BD, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0001, 0xE0001, 0xE0020, 0xE007F, 0xF0000,
    0xFFFFD, 0x100000, 0x10FFFD,
];

/// Mn (`is_mark_nonspacing`), as inclusive `start, end` pairs.
const NONSPACING_MARK: &[u32] = &[
    0x0300, 0x036F, 0x0483, 0x0487, 0x0591, 0x05BD, 0x05BF, 0x05BF, 0x05C1, 0x05C2, 0x05C4, 0x05C5, 0x05C7, 0x05C7,
    0x0610, 0x061A, 0x064B, 0x065F, 0x0670, 0x0670, 0x06D6, 0x06DC, 0x06DF, 0x06E4, 0x06E7, 0x06E8, 0x06EA, 0x06ED,
    0x0711, 0x0711, 0x0730, 0x074A, 0x07A6, 0x07B0, 0x07EB, 0x07F3, 0x0816, 0x0819, 0x081B, 0x0823, 0x0825, 0x0827,
    0x0829, 0x082D, 0x0859, 0x085B, 0x08E3, 0x0902, 0x093A, 0x093A, 0x093C, 0x093C, 0x0941, 0x0948, 0x094D, 0x094D,
    0x0951, 0x0957, 0x0962, 0x0963, 0x0981, 0x0981, 0x09BC, 0x09BC, 0x09C1, 0x09C4, 0x09CD, 0x09CD, 0x09E2, 0x09E3,
    0x0A01, 0x0A02, 0x0A3C, 0x0A3C, 0x0A41, 0x0A42, 0x0A47, 0x0A48, 0x0A4B, 0x0A4D, 0x0A51, 0x0A51, 0x0A70, 0x0A71,
    0x0A75, 0x0A75, 0x0A81, 0x0A82, 0x0ABC, 0x0ABC, 0x0AC1, 0x0AC5, 0x0AC7, 0x0AC8, 0x0ACD, 0x0ACD, 0x0AE2, 0x0AE3,
    0x0B01, 0x0B01, 0x0B3C, 0x0B3C, 0x0B3F, 0x0B3F, 0x0B41, 0x0B44, 0x0B4D, 0x0B4D, 0x0B56, 0x0B56, 0x0B62, 0x0B63,
    0x0B82, 0x0B82, 0x0BC0, 0x0BC0, 0x0BCD, 0x0BCD, 0x0C00, 0x0C00, 0x0C3E, 0x0C40, 0x0C46, 0x0C48, 0x0C4A, 0x0C4D,
    0x0C55, 0x0C56, 0x0C62, 0x0C63, 0x0C81, 0x0C81, 0x0CBC, 0x0CBC, 0x0CBF, 0x0CBF, 0x0CC6, 0x0CC6, 0x0CCC, 0x0CCD,
    0x0CE2, 0x0CE3, 0x0D01, 0x0D01, 0x0D41, 0x0D44, 0x0D4D, 0x0D4D, 0x0D62, 0x0D63, 0x0DCA, 0x0DCA, 0x0DD2, 0x0DD4,
    0x0DD6, 0x0DD6, 0x0E31, 0x0E31, 0x0E34, 0x0E3A, 0x0E47, 0x0E4E, 0x0EB1, 0x0EB1, 0x0EB4, 0x0EB9, 0x0EBB, 0x0EBC,
    0x0EC8, 0x0ECD, 0x0F18, 0x0F19, 0x0F35, 0x0F35, 0x0F37, 0x0F37, 0x0F39, 0x0F39, 0x0F71, 0x0F7E, 0x0F80, 0x0F84,
    0x0F86, 0x0F87, 0x0F8D, 0x0F97, 0x0F99, 0x0FBC, 0x0FC6, 0x0FC6, 0x102D, 0x1030, 0x1032, 0x1037, 0x1039, 0x103A,
    0x103D, 0x103E, 0x1058, 0x1059, 0x105E, 0x1060, 0x1071, 0x1074, 0x1082, 0x1082, 0x1085, 0x1086, 0x108D, 0x108D,
    0x109D, 0x109D, 0x135D, 0x135F, 0x1712, 0x1714, 0x1732, 0x1734, 0x1752, 0x1753, 0x1772, 0x1773, 0x17B4, 0x17B5,
    0x17B7, 0x17BD, 0x17C6, 0x17C6, 0x17C9, 0x17D3, 0x17DD, 0x17DD, 0x180B, 0x180D, 0x18A9, 0x18A9, 0x1920, 0x1922,
    0x1927, 0x1928, 0x1932, 0x1932, 0x1939, 0x193B, 0x1A17, 0x1A18, 0x1A1B, 0x1A1B, 0x1A56, 0x1A56, 0x1A58, 0x1A5E,
    0x1A60, 0x1A60, 0x1A62, 0x1A62, 0x1A65, 0x1A6C, 0x1A73, 0x1A7C, 0x1A7F, 0x1A7F, 0x1AB0, 0x1ABD, 0x1B00, 0x1B03,
    0x1B34, 0x1B34, 0x1B36, 0x1B3A, 0x1B3C, 0x1B3C, 0x1B42, 0x1B42, 0x1B6B, 0x1B73, 0x1B80, 0x1B81, 0x1BA2, 0x1BA5,
    0x1BA8, 0x1BA9, 0x1BAB, 0x1BAD, 0x1BE6, 0x1BE6, 0x1BE8, 0x1BE9, 0x1BED, 0x1BED, 0x1BEF, 0x1BF1, 0x1C2C, 0x1C33,
    0x1C36, 0x1C37, 0x1CD0, 0x1CD2, 0x1CD4, 0x1CE0, 0x1CE2, 0x1CE8, 0x1CED, 0x1CED, 0x1CF4, 0x1CF4, 0x1CF8, 0x1CF9,
    0x1DC0, 0x1DF5, 0x1DFC, 0x1DFF, 0x20D0, 0x20DC, 0x20E1, 0x20E1, 0x20E5, 0x20F0, 0x2CEF, 0x2CF1, 0x2D7F, 0x2D7F,
    0x2DE0, 0x2DFF, 0x302A, 0x302D, 0x3099, 0x309A, 0xA66F, 0xA66F, 0xA674, 0xA67D, 0xA69E, 0xA69F, 0xA6F0, 0xA6F1,
    0xA802, 0xA802, 0xA806, 0xA806, 0xA80B, 0xA80B, 0xA825, 0xA826, 0xA8C4, 0xA8C4, 0xA8E0, 0xA8F1, 0xA926, 0xA92D,
    0xA947, 0xA951, 0xA980, 0xA982, 0xA9B3, 0xA9B3, 0xA9B6, 0xA9B9, 0xA9BC, 0xA9BC, 0xA9E5, 0xA9E5, 0xAA29, 0xAA2E,
    0xAA31, 0xAA32, 0xAA35, 0xAA36, 0xAA43, 0xAA43, 0xAA4C, 0xAA4C, 0xAA7C, 0xAA7C, 0xAAB0, 0xAAB0, 0xAAB2, 0xAAB4,
    0xAAB7, 0xAAB8, 0xAABE, 0xAABF, 0xAAC1, 0xAAC1, 0xAAEC, 0xAAED, 0xAAF6, 0xAAF6, 0xABE5, 0xABE5, 0xABE8, 0xABE8,
    0xABED, 0xABED, 0xFB1E, 0xFB1E, 0xFE00, 0xFE0F, 0xFE20, 0xFE2F, 0x101FD, 0x101FD, 0x102E0, 0x102E0, 0x10376,
    0x1037A, 0x10A01, 0x10A03, 0x10A05, 0x10A06, 0x10A0C, 0x10A0F, 0x10A38, 0x10A3A, 0x10A3F, 0x10A3F, 0x10AE5,
    0x10AE6, 0x11001, 0x11001, 0x11038, 0x11046, 0x1107F, 0x11081, 0x110B3, 0x110B6, 0x110B9, 0x110BA, 0x11100,
    0x11102, 0x11127, 0x1112B, 0x1112D, 0x11134, 0x11173, 0x11173, 0x11180, 0x11181, 0x111B6, 0x111BE, 0x111CA,
    0x111CC, 0x1122F, 0x11231, 0x11234, 0x11234, 0x11236, 0x11237, 0x112DF, 0x112DF, 0x112E3, 0x112EA, 0x11300,
    0x11301, 0x1133C, 0x1133C, 0x11340, 0x11340, 0x11366, 0x1136C, 0x11370, 0x11374, 0x114B3, 0x114B8, 0x114BA,
    0x114BA, 0x114BF, 0x114C0, 0x114C2, 0x114C3, 0x115B2, 0x115B5, 0x115BC, 0x115BD, 0x115BF, 0x115C0, 0x115DC,
    0x115DD, 0x11633, 0x1163A, 0x1163D, 0x1163D, 0x1163F, 0x11640, 0x116AB, 0x116AB, 0x116AD, 0x116AD, 0x116B0,
    0x116B5, 0x116B7, 0x116B7, 0x1171D, 0x1171F, 0x11722, 0x11725, 0x11727, 0x1172B, 0x16AF0, 0x16AF4, 0x16B30,
    0x16B36, 0x16F8F, 0x16F92, 0x1BC9D, 0x1BC9E, 0x1D167, 0x1D169, 0x1D17B, 0x1D182, 0x1D185, 0x1D18B, 0x1D1AA,
    0x1D1AD, 0x1D242, 0x1D244, 0x1DA00, 0x1DA36, 0x1DA3B, 0x1DA6C, 0x1DA75, 0x1DA75, 0x1DA84, 0x1DA84, 0x1DA9B,
    0x1DA9F, 0x1DAA1, 0x1DAAF, 0x1E8D0, 0x1E8D6, 0xE0100, 0xE01EF,
];

/// Pc, Pd, Pe, Pf, Pi, Po and Ps (`is_punctuation`), as inclusive `start, end` pairs.
const PUNCTUATION: &[u32] = &[
    0x0021, 0x0023, 0x0025, 0x002A, 0x002C, 0x002F, 0x003A, 0x003B, 0x003F, 0x0040, 0x005B, 0x005D, 0x005F, 0x005F,
    0x007B, 0x007B, 0x007D, 0x007D, 0x00A1, 0x00A1, 0x00A7, 0x00A7, 0x00AB, 0x00AB, 0x00B6, 0x00B7, 0x00BB, 0x00BB,
    0x00BF, 0x00BF, 0x037E, 0x037E, 0x0387, 0x0387, 0x055A, 0x055F, 0x0589, 0x058A, 0x05BE, 0x05BE, 0x05C0, 0x05C0,
    0x05C3, 0x05C3, 0x05C6, 0x05C6, 0x05F3, 0x05F4, 0x0609, 0x060A, 0x060C, 0x060D, 0x061B, 0x061B, 0x061E, 0x061F,
    0x066A, 0x066D, 0x06D4, 0x06D4, 0x0700, 0x070D, 0x07F7, 0x07F9, 0x0830, 0x083E, 0x085E, 0x085E, 0x0964, 0x0965,
    0x0970, 0x0970, 0x0AF0, 0x0AF0, 0x0DF4, 0x0DF4, 0x0E4F, 0x0E4F, 0x0E5A, 0x0E5B, 0x0F04, 0x0F12, 0x0F14, 0x0F14,
    0x0F3A, 0x0F3D, 0x0F85, 0x0F85, 0x0FD0, 0x0FD4, 0x0FD9, 0x0FDA, 0x104A, 0x104F, 0x10FB, 0x10FB, 0x1360, 0x1368,
    0x1400, 0x1400, 0x166D, 0x166E, 0x169B, 0x169C, 0x16EB, 0x16ED, 0x1735, 0x1736, 0x17D4, 0x17D6, 0x17D8, 0x17DA,
    0x1800, 0x180A, 0x1944, 0x1945, 0x1A1E, 0x1A1F, 0x1AA0, 0x1AA6, 0x1AA8, 0x1AAD, 0x1B5A, 0x1B60, 0x1BFC, 0x1BFF,
    0x1C3B, 0x1C3F, 0x1C7E, 0x1C7F, 0x1CC0, 0x1CC7, 0x1CD3, 0x1CD3, 0x2010, 0x2027, 0x2030, 0x2043, 0x2045, 0x2051,
    0x2053, 0x205E, 0x207D, 0x207E, 0x208D, 0x208E, 0x2308, 0x230B, 0x2329, 0x232A, 0x2768, 0x2775, 0x27C5, 0x27C6,
    0x27E6, 0x27EF, 0x2983, 0x2998, 0x29D8, 0x29DB, 0x29FC, 0x29FD, 0x2CF9, 0x2CFC, 0x2CFE, 0x2CFF, 0x2D70, 0x2D70,
    0x2E00, 0x2E2E, 0x2E30, 0x2E42, 0x3001, 0x3003, 0x3008, 0x3011, 0x3014, 0x301F, 0x3030, 0x3030, 0x303D, 0x303D,
    0x30A0, 0x30A0, 0x30FB, 0x30FB, 0xA4FE, 0xA4FF, 0xA60D, 0xA60F, 0xA673, 0xA673, 0xA67E, 0xA67E, 0xA6F2, 0xA6F7,
    0xA874, 0xA877, 0xA8CE, 0xA8CF, 0xA8F8, 0xA8FA, 0xA8FC, 0xA8FC, 0xA92E, 0xA92F, 0xA95F, 0xA95F, 0xA9C1, 0xA9CD,
    0xA9DE, 0xA9DF, 0xAA5C, 0xAA5F, 0xAADE, 0xAADF, 0xAAF0, 0xAAF1, 0xABEB, 0xABEB, 0xFD3E, 0xFD3F, 0xFE10, 0xFE19,
    0xFE30, 0xFE52, 0xFE54, 0xFE61, 0xFE63, 0xFE63, 0xFE68, 0xFE68, 0xFE6A, 0xFE6B, 0xFF01, 0xFF03, 0xFF05, 0xFF0A,
    0xFF0C, 0xFF0F, 0xFF1A, 0xFF1B, 0xFF1F, 0xFF20, 0xFF3B, 0xFF3D, 0xFF3F, 0xFF3F, 0xFF5B, 0xFF5B, 0xFF5D, 0xFF5D,
    0xFF5F, 0xFF65, 0x10100, 0x10102, 0x1039F, 0x1039F, 0x103D0, 0x103D0, 0x1056F, 0x1056F, 0x10857, 0x10857, 0x1091F,
    0x1091F, 0x1093F, 0x1093F, 0x10A50, 0x10A58, 0x10A7F, 0x10A7F, 0x10AF0, 0x10AF6, 0x10B39, 0x10B3F, 0x10B99,
    0x10B9C, 0x11047, 0x1104D, 0x110BB, 0x110BC, 0x110BE, 0x110C1, 0x11140, 0x11143, 0x11174, 0x11175, 0x111C5,
    0x111C9, 0x111CD, 0x111CD, 0x111DB, 0x111DB, 0x111DD, 0x111DF, 0x11238, 0x1123D, 0x112A9, 0x112A9, 0x114C6,
    0x114C6, 0x115C1, 0x115D7, 0x11641, 0x11643, 0x1173C, 0x1173E, 0x12470, 0x12474, 0x16A6E, 0x16A6F, 0x16AF5,
    0x16AF5, 0x16B37, 0x16B3B, 0x16B44, 0x16B44, 0x1BC9F, 0x1BC9F, 0x1DA87, 0x1DA8B,
];
