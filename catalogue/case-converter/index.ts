// case-converter: converts identifiers and phrases between naming conventions.
//
// The text is first split into words: at any character that is not a letter or
// digit (spaces, _, -, ., /, ...), at a lower-case letter or digit followed by
// an upper-case one (fooBar, v2Api), and before the last capital of an acronym
// that starts a new word (XMLHttpRequest -> XML Http Request). Digits stay
// attached to the word they follow (base64Encode -> base64 encode); apostrophes
// inside words are dropped (don't -> dont). The words are then joined in the
// requested style. Each line is converted separately, so a list of names
// (one per line) converts in one call.

const CASES = ['camel', 'pascal', 'snake', 'screaming_snake', 'kebab', 'train', 'dot', 'title', 'sentence', 'lower', 'upper'] as const;
type Case = (typeof CASES)[number];

interface Params {
  text: string;
  to?: Case | 'all';
}

type Converted =
  | { to: 'all'; words: string[]; results: Record<string, string> }
  | { to: Case; words: string[]; result: string };

function splitWords(line: string): string[] {
  const spaced = line
    .replace(/(\p{L}|\p{N})['\u2019](?=\p{L})/gu, '$1') // don't -> dont
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2') // fooBar, v2Api
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2'); // XMLHttp -> XML Http
  return spaced.match(/[\p{L}\p{M}\p{N}]+/gu) || [];
}

const lower = (w: string): string => w.toLowerCase();
const upper = (w: string): string => w.toUpperCase();
const cap = (w: string): string => {
  const first = String.fromCodePoint(w.codePointAt(0) as number);
  return first.toUpperCase() + w.slice(first.length).toLowerCase();
};

const JOIN: Record<Case, (ws: string[]) => string> = {
  camel: (ws) => ws.map((w, i) => (i === 0 ? lower(w) : cap(w))).join(''),
  pascal: (ws) => ws.map(cap).join(''),
  snake: (ws) => ws.map(lower).join('_'),
  screaming_snake: (ws) => ws.map(upper).join('_'),
  kebab: (ws) => ws.map(lower).join('-'),
  train: (ws) => ws.map(cap).join('-'),
  dot: (ws) => ws.map(lower).join('.'),
  title: (ws) => ws.map(cap).join(' '),
  sentence: (ws) => ws.map((w, i) => (i === 0 ? cap(w) : lower(w))).join(' '),
  lower: (ws) => ws.map(lower).join(' '),
  upper: (ws) => ws.map(upper).join(' '),
};

function run(params: Params): Converted {
  const text = params.text;
  const to = params.to === undefined ? 'all' : params.to;
  if (typeof text !== 'string') throw new Error('text must be a string');
  if (to !== 'all' && !(CASES as readonly string[]).includes(to)) throw new Error(`to must be one of ${CASES.join(', ')} or all`);

  const lines = text.replace(/\r\n?/g, '\n').split('\n'); // a regex split is slow in QuickJS
  const perLine = lines.map(splitWords);
  const convert = (style: Case): string => perLine.map((ws) => JOIN[style](ws)).join('\n');
  const words = perLine.flat().map(lower);
  if (to === 'all') {
    const results: Record<string, string> = {};
    for (const style of CASES) results[style] = convert(style);
    return { to, words, results };
  }
  return { to, words, result: convert(to) };
}
