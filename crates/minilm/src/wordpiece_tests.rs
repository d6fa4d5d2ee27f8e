use super::*;

/// `testdata/parity.jsonl`: strings with the ids Python `tokenizers` gives them.
const PARITY: &str = include_str!("testdata/parity.jsonl");

fn wp() -> &'static WordPiece {
    WordPiece::get()
}

/// Each line of a parity file whose ids differ from ours, described; and the line count.
fn mismatches<'a>(cases: impl Iterator<Item = (usize, &'a str, Vec<u32>)>) -> (usize, Vec<String>) {
    let (mut n, mut bad) = (0, Vec::new());
    let mut buf = Vec::new();
    for (max, text, want) in cases {
        n += 1;
        wp().encode_into(text, max, &mut buf);
        let count = wp().count(text, max);
        if buf != want || count != want.len() {
            bad.push(format!(
                "max {max} {text:?}:\n  want {want:?}\n  got  {buf:?} (count {count})"
            ));
        }
    }
    (n, bad)
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_u64())
        .map(|x| x as u32)
        .collect()
}

#[test]
fn committed_vocabulary() {
    let wp = wp();
    assert_eq!(wp.vocab_size(), 30_522);
    assert_eq!((wp.unk, wp.cls, wp.sep), (100, 101, 102));
    assert_eq!(wp.added, [Some(0), Some(100), Some(101), Some(102), Some(103)]);
    assert_eq!(wp.token(1000), Some("\""));
    assert_eq!(wp.token(30_521), Some("##～"));
    assert_eq!(wp.token(30_522), None);
    assert_eq!((wp.max_len, wp.max_cont_len), (18, 10));
    // One u32 per entry and 64 Ki u16 slots; the text itself is static.
    assert_eq!(wp.heap_bytes(), 30_522 * 4 + 65_536 * 2);
    for id in 0..30_522 {
        let token = wp.token(id).unwrap_or_default();
        assert_eq!(wp.find(token.as_bytes(), false), Some(id), "{token:?}");
        if let Some(rest) = token.strip_prefix("##") {
            assert_eq!(wp.find(rest.as_bytes(), true), Some(id), "{token:?}");
        }
    }
}

#[test]
fn parity_with_tokenizers_on_the_fixture() {
    let cases = PARITY.lines().filter_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        Some((
            v["max"].as_u64()? as usize,
            v["text"].as_str()?.to_owned(),
            ids(&v["ids"]),
        ))
    });
    let cases: Vec<_> = cases.collect();
    assert_eq!(cases.len(), PARITY.lines().count(), "every line parses");
    assert!(cases.len() > 600, "{}", cases.len());
    assert!(cases.iter().filter(|c| c.0 == 128).count() > 100);
    assert!(
        cases.iter().any(|c| c.0 == 128 && c.2.len() == 128),
        "some are cut at 128"
    );
    assert!(
        cases.iter().any(|c| c.0 == 256 && c.2.len() == 256),
        "some are cut at 256"
    );
    let (n, bad) = mismatches(cases.iter().map(|(m, t, i)| (*m, t.as_str(), i.clone())));
    assert!(bad.is_empty(), "{} of {n} differ:\n{}", bad.len(), bad.join("\n"));
}

/// The 20,813 MetaTool tool texts and queries, at 256 tokens:
/// TOOLGATE_WORDPIECE_PARITY=target/embed-ref/all_tokens.json (written by
/// testdata/onnx_reference.py). Skipped without it.
#[test]
fn parity_with_tokenizers_on_metatool() {
    let Ok(path) = std::env::var("TOOLGATE_WORDPIECE_PARITY") else {
        eprintln!("TOOLGATE_WORDPIECE_PARITY unset: skipped");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let strings = v["strings"].as_array().cloned().unwrap_or_default();
    let all = v["ids"].as_array().cloned().unwrap_or_default();
    assert_eq!(strings.len(), all.len());
    let cases = strings
        .iter()
        .zip(&all)
        .map(|(s, i)| (256, s.as_str().unwrap_or_default(), ids(i)));
    let (n, bad) = mismatches(cases);
    eprintln!("{} of {n} identical", n - bad.len());
    assert!(
        n > 20_000 && bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Normaliser and punctuation, code point by code point over all of Unicode, against
/// `testdata/reference.py --chars`: TOOLGATE_WORDPIECE_CHARS=chars.tsv. Skipped without it.
#[test]
fn every_code_point() {
    let Ok(path) = std::env::var("TOOLGATE_WORDPIECE_CHARS") else {
        eprintln!("TOOLGATE_WORDPIECE_CHARS unset: skipped");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut n, mut bad) = (0, Vec::new());
    for line in text.lines() {
        let mut cols = line.split('\t');
        let (Some(cp), Some(norm), Some(punct)) = (cols.next(), cols.next(), cols.next()) else {
            panic!("{line:?}")
        };
        let c = u32::from_str_radix(cp, 16)
            .ok()
            .and_then(char::from_u32)
            .unwrap_or_else(|| panic!("{line:?}"));
        let want: String = norm
            .split(' ')
            .filter_map(|h| u32::from_str_radix(h, 16).ok().and_then(char::from_u32))
            .collect();
        let got: String = match u8::try_from(c).ok().filter(|&b| is_plain(b)) {
            Some(b'\t' | b'\n' | b'\r') => " ".into(),
            Some(b) => char::from(b.to_ascii_lowercase()).into(),
            None => normalize_run(c.encode_utf8(&mut [0; 4])).collect(),
        };
        n += 1;
        if got != want || is_punctuation(c) != (punct == "P") {
            bad.push(format!(
                "U+{cp}: want {want:?} {punct}, got {got:?} {}",
                is_punctuation(c)
            ));
        }
    }
    eprintln!("{} of {n} code points identical", n - bad.len());
    assert!(
        n > 1_100_000 && bad.is_empty(),
        "{} of {n} differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn encode_into_replaces_and_count_agrees() {
    let mut buf = vec![7, 7, 7];
    wp().encode_into("Hello, world!", 256, &mut buf);
    assert_eq!(buf, [101, 7592, 1010, 2088, 999, 102]);
    assert_eq!(wp().encode("Hello, world!", 256), buf);
    assert_eq!(wp().count("Hello, world!", 256), 6);
    assert_eq!(wp().count("Hello, world!", 4), 4);
    assert_eq!(wp().encode("", 256), [101, 102]);
}

#[test]
fn truncation_keeps_the_first_tokens_and_both_specials() {
    let full = wp().encode("one two three four five", 256);
    assert_eq!(full.len(), 7);
    for max in 2..=7 {
        let cut = wp().encode("one two three four five", max);
        assert_eq!(cut.len(), max);
        assert_eq!(cut[..max - 1], full[..max - 1]);
        assert_eq!(cut.last(), Some(&102));
    }
    // Under 2 counts as 2: [CLS] [SEP] (tokenizers' own arithmetic wraps there).
    assert_eq!(wp().encode("one two", 0), [101, 102]);
    assert_eq!(wp().encode("one two", 1), [101, 102]);
    // A word's pieces are cut too, not kept whole.
    assert_eq!(wp().encode("tokenization", 256), [101, 19204, 3989, 102]);
    assert_eq!(wp().encode("tokenization", 3), [101, 19204, 102]);
}

#[test]
fn a_small_vocabulary_shows_the_greedy_match() {
    let wp = WordPiece::from_vocab("[UNK]\n[CLS]\n[SEP]\nun\nunaff\n##aff\n##able\n##a\n##ffable\n!\n")
        .unwrap_or_else(|e| panic!("{e}"));
    // Longest first: "unaff" + "##able", not "un" + "##affable".
    assert_eq!(wp.encode("unaffable", 99), [1, 4, 6, 2]);
    // "un" + "##a" + "##ffable": each piece the longest that matches at its start.
    assert_eq!(wp.encode("Una ffable", 99), [1, 3, 7, 0, 2]);
    // One part that matches nothing makes the whole word [UNK].
    assert_eq!(wp.encode("unaffablez un!", 99), [1, 0, 3, 9, 2]);
    // [PAD] and [MASK] are absent here, so not special: "[", "pad" ([UNK]), "]".
    assert_eq!(wp.encode("[PAD]", 99), [1, 0, 0, 0, 2]);
    assert_eq!(wp.encode("[SEP]", 99), [1, 2, 2]);
    assert_eq!(wp.vocab_size(), 10);
}

#[test]
fn bad_vocabularies_are_refused() {
    assert_eq!(WordPiece::from_vocab("").err(), Some(VocabError::Missing("[UNK]")));
    assert_eq!(
        WordPiece::from_vocab("[UNK]\n[CLS]\n").err(),
        Some(VocabError::Missing("[SEP]"))
    );
    assert_eq!(
        WordPiece::from_vocab("[UNK]\n\n[CLS]\n[SEP]\n").err(),
        Some(VocabError::BadLine { line: 1 })
    );
    assert_eq!(
        WordPiece::from_vocab("[UNK]\n[CLS]\n[SEP]\n[CLS]\n").err(),
        Some(VocabError::BadLine { line: 3 })
    );
    let long = format!("[UNK]\n[CLS]\n[SEP]\n{}\n", "x".repeat(256));
    assert!(matches!(WordPiece::from_vocab(long), Err(VocabError::TooLarge(_))));
    let crlf = WordPiece::from_vocab("[UNK]\r\n[CLS]\r\n[SEP]\r\nab").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(crlf.encode("AB", 9), [1, 3, 2]);
}

#[test]
fn words_of_100_chars_after_normalisation_are_split_and_longer_ones_are_unk() {
    let pieces = wp().encode(&"e\u{301}".repeat(100), 512);
    assert!(pieces.len() > 3 && !pieces.contains(&100), "{pieces:?}");
    assert_eq!(wp().encode(&"e\u{301}".repeat(101), 512), [101, 100, 102]);
    assert_eq!(
        wp().encode(&format!("{} ok", "é".repeat(101)), 512),
        [101, 100, 7929, 102]
    );
}

/// A megabyte of one hard case each: every input goes by in linear time (the bounds are
/// structural: a word is cut off at 100 chars and a lookup at the longest entry), and
/// a cut at `max_tokens` stops the work.
#[test]
fn a_megabyte_of_anything_is_linear() {
    const MB: usize = 1 << 20;
    let word = "x".repeat(MB);
    assert_eq!(wp().encode(&word, usize::MAX), [101, 100, 102]);
    let short_words = "ab".repeat(MB / 2);
    assert_eq!(wp().count(&short_words, usize::MAX), 3);
    // Words just under the limit, each split into many pieces.
    let long_pieces = format!("{} ", "qz".repeat(49)).repeat(MB / 99);
    assert!(wp().count(&long_pieces, usize::MAX) > MB / 99 * 10);
    let punct = "!".repeat(MB);
    assert_eq!(wp().count(&punct, usize::MAX), MB + 2);
    assert_eq!(wp().encode(&punct, 256).len(), 256);
    let brackets = "[".repeat(MB);
    assert_eq!(wp().count(&brackets, usize::MAX), MB + 2);
    let marks = format!("a{}", "\u{301}\u{316}".repeat(MB / 4));
    assert_eq!(wp().encode(&marks, 256), [101, 1037, 102]);
    let cjk = "中".repeat(MB / 3);
    assert_eq!(wp().count(&cjk, usize::MAX), MB / 3 + 2);
    let specials = "[SEP]".repeat(MB / 5);
    assert_eq!(wp().count(&specials, usize::MAX), MB / 5 + 2);
    let controls = "\u{200b}\u{0}".repeat(MB / 4);
    assert_eq!(wp().encode(&controls, 256), [101, 102]);
}

/// Pseudo-random strings over every plane, the specials' bytes and combining marks:
/// nothing panics, the count matches, and every id is in the vocabulary.
#[test]
fn arbitrary_text_never_panics() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pool = ['[', ']', 'S', 'E', 'P', ' ', '\u{301}', 'a', '#', '\t', 'İ', '中'];
    for _ in 0..3_000 {
        let len = (next() % 200) as usize;
        let text: String = (0..len)
            .map(|_| match next() % 4 {
                0 => pool[(next() % pool.len() as u64) as usize],
                1 => char::from_u32((next() % 0x80) as u32).unwrap_or('a'),
                2 => char::from_u32((next() % 0x3000) as u32).unwrap_or('b'),
                _ => char::from_u32((next() % 0x11_0000) as u32).unwrap_or('c'),
            })
            .collect();
        let max = (next() % 64) as usize;
        let ids = wp().encode(&text, max);
        assert_eq!(ids.len(), wp().count(&text, max));
        assert!(ids.len() <= max.max(2) && ids.iter().all(|&id| wp().token(id).is_some()));
    }
}
