// lorem-ipsum: generates placeholder text from the classic Lorem ipsum vocabulary.
//
// Counts are given in words, sentences or paragraphs. Sentences have 6-16 words
// (capitalised, sometimes with a comma, ending with a period) and paragraphs 4-8
// sentences. A seeded PRNG (mulberry32) makes the output deterministic: the same
// parameters always give the same text; change `seed` for different text.
// Output is plain text (paragraphs separated by a blank line), HTML <p> elements
// or Markdown.

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore ' +
  'magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo ' +
  'consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint ' +
  'occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum curabitur pretium ' +
  'tincidunt lacus nunc pulvinar sapien ligula ornare eget mauris blandit aliquam etiam erat faucibus gravida ' +
  'posuere cubilia curae donec viverra felis turpis vestibulum vel nibh dignissim maecenas accumsan sagittis ' +
  'fusce vulputate lectus at tellus elementum sagittis vitae integer quam porttitor mattis augue morbi tristique ' +
  'senectus netus malesuada fames ac egestas pellentesque habitant suspendisse potenti nullam feugiat fermentum ' +
  'mi praesent semper feugiat nam libero justo laoreet volutpat diam phasellus vestibulum lorem sed risus ' +
  'ultricies tortor condimentum lacinia quisque varius odio interdum urna neque hendrerit dui sodales ' +
  'scelerisque eu purus proin massa tempus imperdiet nisl rhoncus mattis aenean euismod arcu cursus vivamus ' +
  'auctor ultrices dapibus sollicitudin orci porta non pulvinar neque laoreet suspendisse interdum consectetur ' +
  'facilisis leo vel fringilla est ullamcorper eget nulla facilisi cras fermentum odio eu feugiat pretium ' +
  'commodo viverra maecenas accumsan lacus vel facilisis volutpat est velit egestas dui id ornare arcu ' +
  'convallis aenean et tortor at risus viverra adipiscing at in tellus integer feugiat scelerisque varius ' +
  'morbi enim nunc faucibus a pellentesque sit amet porttitor eget dolor morbi non arcu risus quis varius'
).split(' ');
const CLASSIC = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit';
const LIMITS = { words: 10000, sentences: 1000, paragraphs: 100 };

// mulberry32: small, fast, good enough for placeholder text.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function run(params) {
  const unit = params.unit === undefined ? 'paragraphs' : params.unit;
  if (!(unit in LIMITS)) throw new Error('unit must be words, sentences or paragraphs');
  const count = params.count === undefined ? 3 : params.count;
  if (!Number.isInteger(count) || count < 1 || count > LIMITS[unit]) {
    throw new Error(`count must be an integer from 1 to ${LIMITS[unit]} for ${unit}`);
  }
  const format = params.format === undefined ? 'text' : params.format;
  if (!['text', 'html', 'markdown'].includes(format)) throw new Error('format must be text, html or markdown');
  const classic = params.start_with_lorem !== false;
  const seed = params.seed === undefined ? 1 : params.seed;
  if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) throw new Error('seed must be an integer from 0 to 4294967295');

  const rand = prng(seed);
  const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  let last = '';
  const word = () => {
    let w;
    do w = WORDS[Math.floor(rand() * WORDS.length)];
    while (w === last);
    last = w;
    return w;
  };
  const cap = (s) => s[0].toUpperCase() + s.slice(1);
  let classicPending = classic;

  const sentence = () => {
    const n = between(6, 16);
    const parts = [];
    if (classicPending) {
      classicPending = false;
      return `${CLASSIC}, ${Array.from({ length: Math.max(2, n - 8) }, word).join(' ')}.`;
    }
    for (let i = 0; i < n; i++) parts.push(word());
    if (n >= 10) parts[between(3, n - 4)] += ','; // an occasional comma mid-sentence
    return `${cap(parts.join(' '))}.`;
  };
  const paragraph = () => Array.from({ length: between(4, 8) }, sentence).join(' ');

  let paragraphs;
  if (unit === 'words') {
    const words = classic ? CLASSIC.replace(/,/g, '').split(' ').slice(0, count) : [];
    while (words.length < count) words.push(word());
    if (!classic) words[0] = cap(words[0]);
    paragraphs = [words.join(' ')];
  } else if (unit === 'sentences') {
    paragraphs = [Array.from({ length: count }, sentence).join(' ')];
  } else {
    paragraphs = Array.from({ length: count }, paragraph);
  }

  const text =
    format === 'html' ? paragraphs.map((p) => `<p>${p}</p>`).join('\n') : paragraphs.join('\n\n');
  const plain = paragraphs.join('\n\n');
  return {
    text,
    format,
    unit,
    count,
    seed,
    stats: {
      paragraphs: paragraphs.length,
      sentences: (plain.match(/\./g) || []).length,
      words: plain.split(/\s+/).filter((w) => w !== '').length,
      characters: text.length,
    },
  };
}
