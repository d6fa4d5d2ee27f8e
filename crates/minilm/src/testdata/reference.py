#!/usr/bin/env python3
"""Reference ids for `wordpiece.rs`, from HuggingFace `tokenizers` (0.23.3 was used) on
the model's tokenizer.json, no padding, truncation to `max` tokens.

  reference.py TOKENIZER_JSON STRINGS_JSON > parity.jsonl
      The committed fixture: each string of STRINGS_JSON (what
      onnx_reference.py writes: MetaTool tool texts, queries and
      edge cases) at max 256, the edge cases below at 256, and a subset again at 128 and
      at a few tiny limits. One JSON object a line: {"max": N, "text": "...", "ids": [...]}.

  reference.py TOKENIZER_JSON --chars > chars.tsv
      Every code point but the surrogates, one a line: its hex, the hex of what the
      normaliser makes of it alone (space-separated, empty when dropped), and "P" when the
      pre-tokenizer isolates it as punctuation. Read by the ignored test `every_code_point`
      (TOOLGATE_WORDPIECE_CHARS=chars.tsv).
"""

import json
import sys

from tokenizers import Tokenizer

EDGE = [
    # Unicode punctuation and the ASCII symbols BERT counts as punctuation.
    "«quoted» — ‘single’ “double” „low“ ‹angle› … · • ¡hola! ¿qué? § ¶ † ‡ ※",
    "、。「」『』【】〜・！？，．：；（）",
    "$5 ^caret `tick` a|b ~tilde 1+1=2 <tag> #hash 100% &amp *star* @user back\\slash under_score {brace}",
    "price: $1,299.99 (approx. €1.100) — 50% off!!!",
    # Zero-width and format characters, removed by clean_text.
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffjoiner soft\u00adhyphen mongolian\u180evowel arabic\u061cmark",
    # Combining marks: stripped (Mn) or kept (Me, Mc).
    "e\u0301 a\u0308\u0304 n\u0303o \u0301leading Z\u0335\u0321a\u0336\u0322l\u0337g\u0338o\u0340",
    "enclosing a\u20dd and spacing \u0915\u0903 and \u0e01\u0e31",
    "\u0301\u0316 marks alone \u0903\u0301",
    # Marks and decompositions Unicode added after 9.0 (tokenizers' NFD tables): kept in
    # their order, not decomposed.
    "x\u1ac1\u1abf y\U0001d165\u0316\U0001d16d z\U00011938 \U000105c9 \U000113c5\U000113c7 \U00016121 \U00016d68",
    # Scripts.
    "สวัสดีครับ ภาษาไทย",
    "مرحبا بالعالم مَرْحَبًا ١٢٣",
    "नमस्ते दुनिया हिन्दी",
    "שָׁלוֹם עולם",
    "안녕하세요 세계 한국어",
    "カタカナ ひらがな ガギグ パピプ ｶﾞｷﾞ",
    "Ελληνικά ΣΟΦΊΑ ὀδυσσεύς",
    "Привет мир Ёё ЙЦУКЕН",
    "İstanbul ıĞğŞş İİİ",
    "Straße STRASSE ẞ ß",
    "ﬁne ﬂow ﬀ Ⅻ x² H₂O ½ ① ㈱ ℃ ™ ℡",
    "Ｈｅｌｌｏ，ｗｏｒｌｄ！ １２３ ＡＢＣ",
    "𝐇𝐞𝐥𝐥𝐨 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "ǅemal ǈ ǋ Ǆ",
    # Emoji: sequences, flags, skin tones, variation selectors, keycaps.
    "family 👨\u200d👩\u200d👧\u200d👦 flag 🇫🇷 thumbs 👍🏽 smile ☺\ufe0f keycap 1\ufe0f\u20e3",
    "word🚀word ab🚀cd 🚀",
    # Whitespace and controls.
    "tabs\there\nnew\r\nlines\x0bvt\x0cff\x1cfs\x1dgs\x1ers\x1fus\x7fdel\x85nel",
    "nul\x00in\ufffdreplacement",
    "line\u2028sep\u2029para\u3000ideographic\u00a0nbsp\u2009thin\u202fnarrow\u1680ogham",
    " \t\n ",
    "\x00\x01\x02",
    "",
    # Private use, unassigned, noncharacters, tags.
    "private\ue000use \U000F0000 \U0010FFFD unassigned\u0378x \uffff \U0010FFFF tag\U000E0001\U000E0041x vs\U000E0100x",
    # CJK ranges (split), their edges and neighbours (not split).
    "中文分词测试 𠀀𠀁 豈更 𪜀 𫝀 𫠠 𬺰 ⼀ 〇 㐀 䶿 ぁ",
    "東京の天気は? 北京 weather 漢字abc漢字",
    # Added tokens, written in the text.
    "[CLS]",
    "a[SEP]b",
    "[MASK] is [UNK] and [PAD]",
    "[[SEP]] [sep] [Sep] [ SEP ] [SEP [SEP]]",
    "x [MASK]y[MASK] z",
    # Word lengths around max_input_chars_per_word (100), before and after normalisation.
    "x" * 99,
    "x" * 100,
    "x" * 101,
    "e\u0301" * 100,
    "é" * 101,
    "ab" * 50 + " tail",
    "pneumonoultramicroscopicsilicovolcanoconiosis floccinaucinihilipilification",
    "1234567890" * 5 + " 0xdeadbeefcafebabe 3.14159 1e-10 v1.2.3-rc.4",
    # Code, URLs, markup.
    'fn main() { println!("hi {}", x?); } // comment',
    '{"key": [1, 2.5, null], "nested": {"a": "b"}}',
    "https://user:pw@example.com:8080/path/to?q=1&r=%20#frag mailto:a.b@c.org",
    "## heading **bold** _it_ `code` [link](http://x.y) > quote - item",
    "snake_case_name camelCaseName kebab-case-name SCREAMING_CASE PascalCase",
    "don't can't won't it's y'all ma'am rock'n'roll",
    "C++ C# F# .NET node.js ASP.NET Objective-C",
    "!!!???...,,,;;;:::---___",
]


def main():
    tok = Tokenizer.from_file(sys.argv[1])
    tok.no_padding()
    if sys.argv[2] == "--chars":
        return chars(tok)
    strings = json.load(open(sys.argv[2], encoding="utf-8"))
    long = " ".join(strings[:40])
    edge = EDGE + [long, "[SEP] " * 300, "! " * 300, "word " * 300]
    cases = [(256, s) for s in strings + edge]
    cases += [(128, s) for s in strings[::10] + edge]
    cases += [(n, s) for n in (2, 3, 4, 11) for s in strings[::60] + edge[:8] + [long]]
    for n, s in cases:
        tok.enable_truncation(n)
        print(json.dumps({"max": n, "text": s, "ids": tok.encode(s).ids}, ensure_ascii=False))


def chars(tok):
    out = sys.stdout
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        norm = " ".join(f"{ord(n):X}" for n in tok.normalizer.normalize_str(c))
        pieces = [p for p, _ in tok.pre_tokenizer.pre_tokenize_str("a" + c + "a")]
        punct = "P" if pieces == ["a", c, "a"] else "-"
        out.write(f"{cp:X}\t{norm}\t{punct}\n")


main()
