// regex-tester: runs a JavaScript regular expression against a text.
//
// Reports every match (with the g or y flag) or the first match (without),
// with its index, end, numbered groups and named groups, up to max_matches.
// An optional `replace` string gives the text after String.prototype.replace
// with the same regex, so $1, $<name>, $& and $$ work as in JavaScript.
// A pattern the engine rejects is not an error: the result has valid false and
// the engine's own message. Zero-length matches advance lastIndex by one code
// point (as matchAll does), so patterns like /a*/g cannot loop forever.
// Catastrophic backtracking is still possible; the gateway's deadline stops it.

function advance(text, index, unicode) {
  if (unicode && index + 1 < text.length) {
    const c = text.charCodeAt(index);
    const d = text.charCodeAt(index + 1);
    if (c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) return index + 2;
  }
  return index + 1;
}

function describeMatch(m) {
  const match = {
    match: m[0],
    index: m.index,
    end: m.index + m[0].length,
    groups: m.slice(1).map((g) => (g === undefined ? null : g)),
  };
  if (m.groups) {
    const named = {};
    for (const name of Object.keys(m.groups)) named[name] = m.groups[name] === undefined ? null : m.groups[name];
    match.named_groups = named;
  }
  return match;
}

function run(params) {
  const pattern = params.pattern;
  const text = params.text;
  const flags = params.flags === undefined ? 'g' : params.flags;
  const max = params.max_matches === undefined ? 100 : params.max_matches;
  if (typeof pattern !== 'string') throw new Error('pattern must be a string');
  if (typeof text !== 'string') throw new Error('text must be a string');
  if (typeof flags !== 'string') throw new Error('flags must be a string');
  if (!Number.isInteger(max) || max < 1 || max > 10000) throw new Error('max_matches must be an integer from 1 to 10000');
  if (params.replace !== undefined && typeof params.replace !== 'string') throw new Error('replace must be a string');

  let re;
  try {
    re = new RegExp(pattern, flags);
  } catch (e) {
    // V8 names the pattern in its message, QuickJS does not: add it when missing.
    const msg = String(e && e.message ? e.message : e);
    const error = /regular expression/i.test(msg) && msg.includes('/') ? msg : `Invalid regular expression /${pattern}/${flags}: ${msg}`;
    return { valid: false, pattern, flags, error };
  }

  const all = re.global || re.sticky;
  const unicode = re.unicode || flags.includes('v');
  const matches = [];
  let truncated = false;
  re.lastIndex = 0;
  for (;;) {
    const m = re.exec(text);
    if (m === null) break;
    if (matches.length === max) {
      truncated = true;
      break;
    }
    matches.push(describeMatch(m));
    if (!all) break;
    if (m[0] === '') re.lastIndex = advance(text, re.lastIndex, unicode);
  }

  const result = {
    valid: true,
    pattern,
    flags: re.flags,
    source: re.source,
    matched: matches.length > 0,
    match_count: matches.length,
    truncated,
    group_count: new RegExp('(?:' + re.source + ')|', re.flags.replace(/[gy]/g, '')).exec('').length - 1,
    matches,
  };
  if (params.replace !== undefined) {
    re.lastIndex = 0;
    result.replaced = text.replace(re, params.replace);
  }
  return result;
}
