// query-string: parses a URL query string into an object, or builds one.
//
// parse: an optional leading "?" is dropped, pairs are split on "&", "+" means
// a space (application/x-www-form-urlencoded) and %XX sequences are decoded as
// UTF-8. A key that repeats, or ends in "[]" (when bracket_arrays is on),
// becomes an array of its values in order. Malformed percent escapes are kept
// literally and reported as warnings rather than failing the whole parse.
// build: the reverse, from `data` (an object) or `pairs` (an ordered list).
// Arrays become repeated keys (or key[]), null gives a bare key, and
// everything is percent-encoded as encodeURIComponent does (plus !'()*), with
// spaces as "+" unless space_as_plus is false.

// Decodes one component; never throws. Runs of %XX that are not valid UTF-8
// (or not hex at all) are left as written and reported.
function decodeComponent(raw, plus, warnings, where) {
  const s = plus ? raw.replace(/\+/g, ' ') : raw;
  if (s.indexOf('%') === -1) return s;
  try {
    return decodeURIComponent(s);
  } catch (e) {
    // Decode each maximal run of %XX escapes separately; keep the bad ones.
    let bad = false;
    const out = s.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch (err) {
        bad = true;
        return run;
      }
    });
    if (bad || /%(?![0-9A-Fa-f]{2})/.test(s)) {
      warnings.push(`${where}: malformed percent-encoding in ${JSON.stringify(raw)} kept as written`);
    }
    return out;
  }
}

function parse(params) {
  const plus = params.space_as_plus !== false;
  const brackets = params.bracket_arrays !== false;
  let query = params.query;
  if (typeof query !== 'string') throw new Error('query must be a string');
  query = query.trim();
  if (query.startsWith('?')) query = query.slice(1);

  const warnings = [];
  const pairs = [];
  const result = Object.create(null); // "__proto__" is an ordinary key here
  const forcedArray = new Set();
  const segments = query === '' ? [] : query.split('&');
  segments.forEach((segment) => {
    if (segment === '') return;
    const i = pairs.length;
    const eq = segment.indexOf('=');
    const rawKey = eq === -1 ? segment : segment.slice(0, eq);
    const rawValue = eq === -1 ? '' : segment.slice(eq + 1);
    let key = decodeComponent(rawKey, plus, warnings, `pair ${i + 1}`);
    const value = decodeComponent(rawValue, plus, warnings, `pair ${i + 1}`);
    if (brackets && key.endsWith('[]') && key.length > 2) {
      key = key.slice(0, -2);
      forcedArray.add(key);
    }
    if (key === '') warnings.push(`pair ${i + 1}: empty key`);
    pairs.push({ key, value });
    if (!(key in result)) result[key] = [];
    result[key].push(value);
  });
  const out = Object.create(null);
  for (const key of Object.keys(result)) {
    const values = result[key];
    out[key] = values.length === 1 && !forcedArray.has(key) && params.always_arrays !== true ? values[0] : values;
  }
  return { mode: 'parse', params: out, pairs, count: pairs.length, keys: Object.keys(out).length, warnings };
}

function encodeComponent(text, plus, what) {
  let enc;
  try {
    enc = encodeURIComponent(text);
  } catch (e) {
    throw new Error(`${what} contains an unpaired surrogate and cannot be encoded as UTF-8`);
  }
  // encodeURIComponent leaves !'()* alone; encode them too, as forms do.
  enc = enc.replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return plus ? enc.replace(/%20/g, '+') : enc;
}

function scalarText(v, key) {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`value of ${JSON.stringify(key)} is not a finite number`);
    return String(v);
  }
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) throw new Error(`value of ${JSON.stringify(key)} is a nested array, which cannot be encoded`);
  throw new Error(`value of ${JSON.stringify(key)} must be a string, number, boolean, null or an array of those (nested objects cannot be encoded)`);
}

function build(params) {
  const plus = params.space_as_plus !== false;
  const format = params.array_format === undefined ? 'repeat' : params.array_format;
  if (format !== 'repeat' && format !== 'brackets') throw new Error('array_format must be "repeat" or "brackets"');
  // `pairs` keeps an exact order (objects passed through JSON may be re-sorted).
  let entries;
  if (params.pairs !== undefined) {
    if (!Array.isArray(params.pairs)) throw new Error('pairs must be an array of {key, value}');
    entries = params.pairs.map((p, i) => {
      if (p === null || typeof p !== 'object' || typeof p.key !== 'string') throw new Error(`pairs[${i}] needs a string key`);
      return [p.key, p.value === undefined ? null : p.value];
    });
  } else {
    const data = params.data;
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      throw new Error('build mode needs `data` (an object of key → value) or `pairs`');
    }
    entries = Object.keys(data).map((k) => [k, data[k]]);
  }
  if (params.sort === true) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const parts = [];
  for (const [key, v] of entries) {
    const encKey = encodeComponent(key, plus, `key ${JSON.stringify(key)}`);
    const items = Array.isArray(v) ? v : [v];
    const k = Array.isArray(v) && format === 'brackets' ? encKey + '%5B%5D' : encKey;
    for (const item of items) {
      if (item === null) parts.push(k);
      else if (item !== undefined) parts.push(k + '=' + encodeComponent(scalarText(item, key), plus, `value of ${JSON.stringify(key)}`));
    }
  }
  const query = parts.join('&');
  return { mode: 'build', query: params.prefix === true && query !== '' ? '?' + query : query, count: parts.length };
}

function run(params) {
  const mode = params.mode === undefined ? 'parse' : params.mode;
  if (mode === 'parse') {
    if (params.query === undefined) throw new Error('parse mode needs `query`');
    return parse(params);
  }
  if (mode === 'build') return build(params);
  throw new Error('mode must be "parse" or "build"');
}
