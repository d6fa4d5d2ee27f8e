// text-stats: counts characters, words, sentences, paragraphs and lines in a
// text, and estimates reading time.
//
// Words are runs of Unicode letters, digits and combining marks, allowing
// inner apostrophes and hyphens (don't, well-known). Sentences end with . ! ?
// or … followed by whitespace or the end (a heuristic: "Dr. Smith" counts as
// two). Paragraphs are separated by blank lines. Lengths are in Unicode code
// points, not UTF-16 units. top_words skips a small list of English stop words.

const WORD_RE = /[\p{L}\p{N}\p{M}]+(?:['\u2019-][\p{L}\p{N}\p{M}]+)*/gu;
const SENTENCE_END_RE = /[.!?\u2026]+["'\u201d\u2019)\]]*(?=\s|$)/u;
const HAS_WORD_RE = /[\p{L}\p{N}]/u;
const WORDS_PER_MINUTE = 200;
const STOP_WORDS = new Set(
  ("a an the and or but if of to in on at by for with from as is are was were be been being am it its it's " +
    'this that these those i you he she we they me him her us them my your his our their not no nor so do does ' +
    'did have has had will would can could should shall may might must there then than what which who whom when ' +
    "where why how all any some into about over up out just also very i'm don't such only own same too each").split(' '),
);

// Length in code points: UTF-16 length minus one per surrogate pair.
function codePoints(s) {
  const pairs = s.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g);
  return s.length - (pairs ? pairs.length : 0);
}

function run(params) {
  const text = params.text;
  if (typeof text !== 'string') throw new Error('text must be a string');
  const normalized = text.replace(/\r\n?/g, '\n');

  const words = normalized.match(WORD_RE) || [];
  const totalLetters = words.reduce((sum, w) => sum + codePoints(w), 0);

  let longest = '';
  let longestLen = 0;
  for (const w of words) {
    const len = codePoints(w);
    if (len > longestLen) [longest, longestLen] = [w, len];
  }

  const counts = new Map();
  for (const w of words) {
    const lower = w.toLowerCase().replace(/\u2019/g, "'");
    if (STOP_WORDS.has(lower)) continue;
    counts.set(lower, (counts.get(lower) || 0) + 1);
  }
  const topWords = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, 5)
    .map(([word, count]) => ({ word, count }));

  const sentences = normalized.split(SENTENCE_END_RE).filter((s) => HAS_WORD_RE.test(s)).length;
  const paragraphs = normalized.split(/\n[ \t]*\n/).filter((p) => p.trim() !== '').length;
  let lines = 0;
  if (normalized !== '') {
    lines = normalized.split('\n').length;
    if (normalized.endsWith('\n')) lines--; // a final newline does not start a new line
  }

  return {
    characters: codePoints(text),
    characters_no_spaces: codePoints(text.replace(/\s/g, '')),
    words: words.length,
    unique_words: new Set(words.map((w) => w.toLowerCase())).size,
    sentences,
    paragraphs,
    lines,
    average_word_length: words.length ? Math.round((totalLetters / words.length) * 100) / 100 : 0,
    longest_word: longest,
    reading_time_seconds: Math.ceil((words.length * 60) / WORDS_PER_MINUTE),
    top_words: topWords,
  };
}
