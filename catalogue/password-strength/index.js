// password-strength: estimates how guessable a password is, zxcvbn-style.
//
// The password is scanned for patterns an attacker tries first: the ~100 most
// common passwords, common words (also reversed and in leetspeak like p@ssw0rd),
// the caller's own user_inputs (name, email ...), keyboard rows and columns,
// sequences (abc, 9876), repeats (aaa, abcabc) and dates/years. A dynamic
// program picks the cheapest way to cover the password with those patterns and
// brute-forced characters; the total guess count gives a 0-4 score, crack-time
// estimates for four attack speeds, and feedback. The password itself, or any
// part of it, is never returned: patterns are reported by position and type only.

const COMMON = (
  '123456 password 12345678 qwerty 123456789 12345 1234 111111 1234567 dragon 123123 baseball abc123 football ' +
  'monkey letmein 696969 shadow master 666666 qwertyuiop 123321 mustang 1234567890 michael 654321 superman ' +
  '1qaz2wsx 7777777 121212 000000 qazwsx 123qwe killer trustno1 jordan jennifer zxcvbnm asdfgh hunter buster ' +
  'soccer harley batman andrew tigger sunshine iloveyou 2000 charlie robert thomas hockey ranger daniel ' +
  'starwars klaster 112233 george computer michelle jessica pepper 1111 zxcvbn 555555 11111111 131313 freedom ' +
  '777777 pass maggie 159753 aaaaaa ginger princess joshua cheese amanda summer love ashley nicole chelsea ' +
  'biteme matthew access yankees 987654321 dallas austin thunder taylor matrix welcome admin login passw0rd ' +
  'password1 qwerty123 1q2w3e4r abc123456 hello whatever secret flower 123abc 1qaz2wsx3edc'
).split(' ');
const WORDS = (
  'my me you the and is it in of to on at no we us love angel baby family friend money god jesus heaven happy lucky magic music crazy cool girl boy king queen ' +
  'prince princess dragon tiger lion eagle wolf bear horse dog cat fish bird monkey star sun moon sky fire water ' +
  'blue green red black white purple orange silver golden apple banana cherry cookie candy sugar honey chocolate ' +
  'pepper summer winter spring autumn flower rose lily forest ocean river winner killer hunter soldier ninja pirate ' +
  'master secret hello welcome password admin user guest login test qwerty letmein trust freedom peace power ' +
  'super hero game gamer player soccer football baseball hockey tennis golf poker internet computer google ' +
  'facebook apple samsung iphone android windows linux michael jennifer jordan thomas daniel andrew jessica ' +
  'ashley nicole charlie robert george william david james john maria anna alex chris sam mike matt home house ' +
  'world life dream heart smile beautiful sweet pretty sexy party shadow mother father sister brother'
).split(' ');
const COMMON_RANK = new Map(COMMON.map((w, r) => [w, r + 1]));
const WORD_RANK = new Map(WORDS.map((w, r) => [w, 20 + 10 * r])); // ranks as in a list of a few thousand words
const LEET = { 4: 'a', '@': 'a', 8: 'b', 3: 'e', 6: 'g', 9: 'g', 0: 'o', $: 's', 5: 's', '+': 't', 2: 'z', '!': 'i' };
const LEET_AMBIGUOUS = { 1: ['i', 'l'], '|': ['i', 'l'], 7: ['t', 'l'] };
const KEYBOARD = [
  '`1234567890-=', 'qwertyuiop[]\\', "asdfghjkl;'", 'zxcvbnm,./', '~!@#$%^&*()_+', 'qwertyuiop{}|', 'asdfghjkl:"',
  'zxcvbnm<>?', '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/', 'qazwsxedcrfvtgbyhnujmikolp', '789456123', 'qwertzuiop',
  'azertyuiop', 'qsdfghjklm',
];
const KEYBOARD_BOTH = KEYBOARD.concat(KEYBOARD.map((row) => [...row].reverse().join('')));
const RATES = { online_throttled: 100 / 3600, online_unthrottled: 10, offline_slow_hash: 1e4, offline_fast_hash: 1e10 };
const LABELS = ['very weak', 'weak', 'fair', 'strong', 'very strong'];

const log10 = Math.log10;
const nCk = (n, k) => {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
};

function charClasses(chars) {
  const c = { lowercase: false, uppercase: false, digits: false, symbols: false, other: false };
  for (const ch of chars) {
    if (/[a-z]/.test(ch)) c.lowercase = true;
    else if (/[A-Z]/.test(ch)) c.uppercase = true;
    else if (/[0-9]/.test(ch)) c.digits = true;
    else if (/[\x20-\x7e]/.test(ch)) c.symbols = true;
    else c.other = true;
  }
  const pool = (c.lowercase ? 26 : 0) + (c.uppercase ? 26 : 0) + (c.digits ? 10 : 0) + (c.symbols ? 33 : 0) + (c.other ? 100 : 0);
  return { classes: c, pool: Math.max(pool, 10) };
}

// How many capitalisation variants an attacker tries before this one.
function caseFactor(token) {
  const upper = token.filter((c) => /[A-Z]/.test(c)).length;
  const lower = token.filter((c) => /[a-z]/.test(c)).length;
  if (upper === 0) return { factor: 1, kind: null };
  const s = token.join('');
  if (lower === 0) return { factor: 2, kind: 'all-upper' };
  if (/^[A-Z][^A-Z]+$/.test(s)) return { factor: 2, kind: 'first-upper' };
  if (/^[^A-Z]+[A-Z]$/.test(s)) return { factor: 2, kind: 'last-upper' };
  let f = 0;
  for (let i = 1; i <= Math.min(upper, lower); i++) f += nCk(upper + lower, i);
  return { factor: f, kind: 'mixed' };
}

// The de-leeted, lower-cased readings of the password (ambiguous 1 | 7 both ways).
function readings(chars) {
  const amb = [...new Set(chars.filter((c) => c in LEET_AMBIGUOUS))];
  const out = [];
  for (let mask = 0; mask < 1 << amb.length; mask++) {
    const map = { ...LEET };
    amb.forEach((c, i) => (map[c] = LEET_AMBIGUOUS[c][(mask >> i) & 1]));
    out.push(chars.map((c) => map[c] || c.toLowerCase()));
  }
  return out;
}

function findMatches(chars, userInputs) {
  const n = chars.length;
  const lower = chars.map((c) => c.toLowerCase());
  const matches = [];
  const add = (type, i, j, guesses, extra = {}) => matches.push({ type, i, j, guesses: Math.max(guesses, j - i === 1 ? 10 : 50), ...extra });

  // Dictionaries: common passwords (by rank), user inputs, common words; plain, leet, reversed.
  const dicts = [
    ['user-input', new Map(userInputs.map((w) => [w, 1]))],
    ['common-password', COMMON_RANK],
    ['dictionary', WORD_RANK],
  ];
  const reads = [];
  const seen = new Set();
  for (const r of [lower].concat(readings(chars))) {
    const key = r.join('\u0000');
    if (!seen.has(key)) seen.add(key), reads.push(r);
  }
  for (const rd of reads) {
    for (let i = 0; i < n; i++) {
      let word = '';
      let drow = '';
      for (let j = i + 1; j <= Math.min(n, i + 40); j++) {
        word += rd[j - 1];
        drow = rd[j - 1] + drow;
        if (j - i < 2) continue;
        for (const [type, dict] of dicts) {
          for (const [w, reversed] of [[word, false], [drow, true]]) {
            const rank = dict.get(w);
            if (rank === undefined || (reversed && (w === word || j - i < 3))) continue;
            const orig = chars.slice(i, j);
            const subs = orig.filter((c, k) => rd[i + k] !== c.toLowerCase()).length;
            if (subs && j - i < 3) continue; // too short to call leetspeak
            if (subs && !orig.some((c) => /[a-z]/i.test(c))) continue; // digits alone are not leetspeak
            const leetFactor = subs ? Math.min(2 ** subs, 1 + nCk(j - i, subs)) : 1;
            const caps = caseFactor(orig);
            add(type, i, j, rank * caps.factor * leetFactor * (reversed ? 2 : 1), { leet: subs > 0, reversed, caps: caps.kind });
          }
        }
      }
    }
  }

  // Keyboard runs (4+ keys along a row or column, either direction).
  for (let i = 0; i < n; i++) {
    for (let j = Math.min(n, i + 40); j >= i + 4; j--) {
      const t = lower.slice(i, j).join('');
      if (/^\d+$/.test(t)) continue; // digit runs are sequences
      if (KEYBOARD_BOTH.some((row) => row.includes(t))) {
        add('keyboard', i, j, 47 * 2 * (j - i) * caseFactor(chars.slice(i, j)).factor);
        break;
      }
    }
  }

  // Sequences: 3+ characters with a constant step of +1 or -1 in one class.
  for (let i = 0; i + 2 < n; ) {
    const d = lower[i + 1].codePointAt(0) - lower[i].codePointAt(0);
    const cls = (c) => (/[a-z]/.test(c) ? 'a' : /[0-9]/.test(c) ? 'd' : 'x');
    let j = i + 1;
    while (j < n && Math.abs(d) === 1 && cls(lower[j]) === cls(lower[i]) && cls(lower[i]) !== 'x' && lower[j].codePointAt(0) - lower[j - 1].codePointAt(0) === d) j++;
    if (j - i >= 3) {
      const base = 'a1z9'.includes(lower[i]) || lower[i] === '0' ? 4 : cls(lower[i]) === 'd' ? 10 : 26;
      add('sequence', i, j, base * (j - i) * (d < 0 ? 2 : 1));
      i = j - 1;
    } else i++;
  }

  // Repeats: a unit repeated 2+ times (3+ for a single character).
  for (let i = 0; i < n; ) {
    let best = null;
    for (let len = 1; i + 2 * len <= n; len++) {
      let k = i + len;
      while (k < n && lower[k] === lower[k - len]) k++;
      const reps = Math.floor((k - i) / len);
      if (reps >= 2 && (len > 1 || reps >= 3) && (!best || reps * len > best.reps * best.len)) best = { len, reps };
    }
    if (!best) {
      i++;
      continue;
    }
    add('repeat', i, i + best.len * best.reps, 10 ** estimate(chars.slice(i, i + best.len), []).log * best.reps);
    i += best.len * best.reps; // like a global regex: the next repeat starts after this one
  }

  // Years 1900-2039 and dates (with or without separators).
  const text = chars.map((c) => (c.length > 1 ? '\uffff' : c)).join(''); // one code unit per character
  {
    const now = 2025;
    for (const m of text.matchAll(/(?=((?:19|20)\d\d))/g)) {
      const y = Number(m[1]);
      if (y <= 2039) add('year', m.index, m.index + 4, Math.max(Math.abs(y - now), 20));
    }
    const DATE = /(?=(\d{1,4})([-/._ ])(\d{1,2})\2(\d{1,4}))/g;
    for (const m of text.matchAll(DATE)) {
      if (m[1].length + m[4].length < 4 || (m[1].length > 2 && m[4].length > 2)) continue;
      add('date', m.index, m.index + m[1].length + m[3].length + m[4].length + 2, 365 * 20 * 4);
    }
    for (const m of [...text.matchAll(/(?=(\d{8}))/g), ...text.matchAll(/(?=(\d{6}))/g)]) {
      const s = m[1];
      const plausible = (d, mo) => d >= 1 && d <= 31 && mo >= 1 && mo <= 12;
      const ok = s.length === 8
        ? (/^(19|20)/.test(s) && plausible(+s.slice(6), +s.slice(4, 6))) || (/(19|20)\d\d$/.test(s) && (plausible(+s.slice(0, 2), +s.slice(2, 4)) || plausible(+s.slice(2, 4), +s.slice(0, 2))))
        : plausible(+s.slice(0, 2), +s.slice(2, 4)) || plausible(+s.slice(2, 4), +s.slice(0, 2));
      if (ok) add('date', m.index, m.index + s.length, 365 * 20);
    }
  }
  return matches;
}

// Cheapest cover of the password by matches and brute-forced characters.
function estimate(chars, userInputs) {
  const n = chars.length;
  const { pool } = charClasses(chars);
  if (n === 0) return { log: 0, path: [] };
  const matches = findMatches(chars, userInputs);
  const brute = log10(pool);
  const starting = Array.from({ length: n }, () => []);
  for (const m of matches) starting[m.i].push(m);
  const best = new Array(n + 1).fill(Infinity);
  const from = new Array(n + 1).fill(null);
  best[0] = 0;
  for (let i = 0; i < n; i++) {
    if (best[i] === Infinity) continue;
    if (best[i] + brute < best[i + 1]) [best[i + 1], from[i + 1]] = [best[i] + brute, { type: 'bruteforce', i, j: i + 1, guesses: pool }];
    for (const m of starting[i]) {
      const cost = best[i] + log10(m.guesses) + log10(2); // x2: which patterns are combined
      if (cost < best[m.j]) [best[m.j], from[m.j]] = [cost, m];
    }
  }
  const path = [];
  for (let k = n; k > 0; k = from[k].i) path.unshift(from[k]);
  return { log: Math.min(best[n], n * brute), path };
}

function display(seconds) {
  const units = [['minute', 60], ['hour', 3600], ['day', 86400], ['month', 2629746], ['year', 31556952], ['century', 3155695200]];
  if (seconds < 1) return 'less than a second';
  if (seconds < 60) return `${Math.round(seconds)} second${Math.round(seconds) === 1 ? '' : 's'}`;
  for (let k = units.length - 1; k >= 0; k--) {
    const [name, size] = units[k];
    if (seconds >= size) {
      if (name === 'century') return 'centuries';
      const v = Math.round(seconds / size);
      return `${v} ${name}${v === 1 ? '' : 's'}`;
    }
  }
}

function feedback(score, chars, path) {
  const suggestions = [];
  let warning = null;
  const n = chars.length;
  const found = path.filter((m) => m.type !== 'bruteforce');
  // The pattern covering most of the password drives the warning.
  const main = found.slice().sort((a, b) => b.j - b.i - (a.j - a.i))[0];
  if (main) {
    const whole = main.j - main.i === n;
    warning = {
      'common-password': whole ? 'This is one of the most common passwords.' : 'Contains one of the most common passwords.',
      'user-input': 'Contains your name, username or other personal information.',
      dictionary: whole ? 'A single common word is easy to guess.' : 'Common words are easy to guess, even with small changes.',
      keyboard: 'Straight rows or columns of keys are easy to guess.',
      sequence: 'Sequences like abc or 6543 are easy to guess.',
      repeat: 'Repeated characters or blocks are easy to guess.',
      year: 'Years, especially recent ones, are easy to guess.',
      date: 'Dates are easy to guess.',
    }[main.type];
    if (score >= 3 && main.type !== 'common-password' && main.type !== 'user-input') warning = null;
  }
  if (n === 0) warning = 'The password is empty.';
  if (n < 12) suggestions.push('Use at least 12 characters; a passphrase of four or more random words is long and easy to remember.');
  if (found.some((m) => m.leet)) suggestions.push("Predictable substitutions like '@' for 'a' or '0' for 'o' don't help much.");
  if (found.some((m) => m.reversed)) suggestions.push("Reversed words aren't much harder to guess.");
  if (found.some((m) => m.caps === 'first-upper')) suggestions.push("Capitalising the first letter doesn't help much.");
  if (found.some((m) => m.caps === 'all-upper')) suggestions.push('All-uppercase is almost as easy to guess as all-lowercase.');
  if (found.some((m) => m.type === 'repeat')) suggestions.push('Avoid repeated words and characters.');
  if (found.some((m) => m.type === 'sequence' || m.type === 'keyboard')) suggestions.push('Avoid sequences and keyboard patterns.');
  if (found.some((m) => m.type === 'year' || m.type === 'date')) suggestions.push('Avoid dates and years that are associated with you.');
  if (found.some((m) => m.type === 'common-password' || m.type === 'dictionary')) suggestions.push('Avoid common words and passwords; uncommon words in an unusual combination are better.');
  if (score <= 2 && !suggestions.length) suggestions.push('Add another word or two; uncommon words are better.');
  return { warning, suggestions: score === 4 ? suggestions.filter((s) => !s.startsWith('Use at least')) : suggestions };
}

function run(params) {
  const password = params.password;
  if (typeof password !== 'string') throw new Error('password must be a string');
  const chars = Array.from(password);
  if (chars.length > 256) throw new Error('password is longer than 256 characters');
  const userInputs = (params.user_inputs || [])
    .filter((w) => typeof w === 'string')
    .flatMap((w) => [w.toLowerCase(), ...w.toLowerCase().split(/[^a-z0-9\u00c0-\uffff]+/)])
    .filter((w) => w.length >= 3 && !['com', 'net', 'org', 'www', 'mail', 'gmail'].includes(w));

  const { classes, pool } = charClasses(chars);
  const { log, path } = estimate(chars, userInputs);
  const score = chars.length === 0 ? 0 : log < 3 ? 0 : log < 6 ? 1 : log < 8 ? 2 : log < 10 ? 3 : 4;
  const crack = {};
  for (const [k, rate] of Object.entries(RATES)) {
    const secLog = log - log10(rate);
    crack[k] = { seconds: secLog > 20 ? null : Math.round(10 ** secLog * 1000) / 1000, display: display(10 ** Math.min(secLog, 300)) };
  }
  // Merge adjacent brute-force characters into one pattern; report positions only.
  const patterns = [];
  for (const m of path) {
    const last = patterns[patterns.length - 1];
    if (m.type === 'bruteforce' && last && last.type === 'bruteforce') {
      last.length++;
      last.guesses_log10 += log10(pool);
      continue;
    }
    const p = { type: m.type, start: m.i, length: m.j - m.i, guesses_log10: log10(m.guesses) };
    if (m.leet) p.leet = true;
    if (m.reversed) p.reversed = true;
    patterns.push(p);
  }
  for (const p of patterns) p.guesses_log10 = Math.round(p.guesses_log10 * 100) / 100;
  const round1 = (x) => Math.round(x * 10) / 10;
  return {
    score,
    strength: LABELS[score],
    length: chars.length,
    character_classes: classes,
    pool_size: pool,
    naive_entropy_bits: round1(chars.length * Math.log2(pool)),
    estimated_entropy_bits: round1(log * Math.log2(10)),
    guesses_log10: Math.round(log * 100) / 100,
    crack_times: crack,
    patterns,
    feedback: feedback(score, chars, path),
  };
}
