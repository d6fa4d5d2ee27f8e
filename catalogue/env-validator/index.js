// env-validator: lints the contents of a .env (dotenv) file.
//
// Understands KEY=VALUE lines, an optional `export ` prefix, `#` comments (whole
// line, or after whitespace in an unquoted value), blank lines, single-quoted
// values (literal) and double-quoted values (with \n, \t, \", \\ ... escapes).
// Quoted values may span several lines, as dotenv allows for PEM keys.
// Reports syntax errors, lint warnings and the keys it found; it never returns
// the values themselves, so secrets do not leak into the result.

const KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ESCAPES = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', $: '$' };

// Reads a quoted value whose opening quote has already been consumed.
// `text` is the rest of line `idx` after that quote. Returns
// { value, rest, endLine } or null if no closing quote is ever found.
function readQuoted(lines, idx, text, quote) {
  let value = '';
  let li = idx;
  let s = text;
  for (;;) {
    for (let j = 0; j < s.length; j++) {
      const c = s[j];
      if (quote === '"' && c === '\\' && j + 1 < s.length) {
        const next = s[j + 1];
        value += next in ESCAPES ? ESCAPES[next] : '\\' + next;
        j++;
        continue;
      }
      if (c === quote) return { value, rest: s.slice(j + 1), endLine: li };
      value += c;
    }
    if (li + 1 >= lines.length) return null;
    li++;
    s = lines[li];
    value += '\n';
  }
}

// Nothing but whitespace and an optional comment may follow a closing quote.
function isCleanTail(rest) {
  return /^\s*(#.*)?$/.test(rest);
}

function run(params) {
  const content = params.env_content;
  if (typeof content !== 'string') throw new Error('env_content must be a string');
  const required = Array.isArray(params.required_keys) ? params.required_keys : [];

  const lines = content.split(/\r\n|\r|\n/);
  const errors = [];
  const warnings = [];
  const firstLine = new Map(); // key -> line where it was first defined
  const keys = [];

  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = lines[i];
    if (i === 0 && line.charCodeAt(0) === 0xfeff) line = line.slice(1); // BOM
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;

    let body = line.replace(/^\s+/, '');
    const exp = /^export\s+/.exec(body);
    if (exp) body = body.slice(exp[0].length);

    const eq = body.indexOf('=');
    if (eq === -1) {
      errors.push({ line: lineNo, message: `missing '=' (expected KEY=VALUE): ${JSON.stringify(trimmed.slice(0, 40))}` });
      continue;
    }

    const rawKey = body.slice(0, eq);
    const key = rawKey.trim();
    let rawValue = body.slice(eq + 1);
    let spaced = /\s$/.test(rawKey) || /^[ \t]/.test(rawValue);

    if (key === '') {
      errors.push({ line: lineNo, message: "empty key name before '='" });
      continue;
    }
    if (!KEY_RE.test(key)) {
      errors.push({
        line: lineNo,
        message: `invalid key name ${JSON.stringify(key)}: use letters, digits and '_' only, not starting with a digit`,
      });
      continue;
    }

    // Parse the value.
    rawValue = rawValue.replace(/^[ \t]+/, '');
    let value;
    const q = rawValue[0];
    if (q === '"' || q === "'") {
      const res = readQuoted(lines, i, rawValue.slice(1), q);
      const kind = q === '"' ? 'double' : 'single';
      if (res === null || (res.endLine !== i && !isCleanTail(res.rest))) {
        errors.push({ line: lineNo, message: `unterminated ${kind}-quoted value for ${key}` });
        continue;
      }
      if (!isCleanTail(res.rest)) {
        errors.push({
          line: res.endLine + 1,
          message: `unexpected characters after closing ${kind} quote of ${key}: ${JSON.stringify(res.rest.trim().slice(0, 40))}`,
        });
        i = res.endLine;
        continue;
      }
      value = res.value;
      i = res.endLine; // skip the lines a multi-line value consumed
    } else {
      value = rawValue.replace(/(^|\s)#.*$/, '').trim();
    }

    // Lint warnings.
    if (spaced) warnings.push({ line: lineNo, message: `whitespace around '=' for ${key}` });
    if (key !== key.toUpperCase()) {
      warnings.push({ line: lineNo, message: `key ${key} is not uppercase (convention is ${key.toUpperCase()})` });
    }
    if (value === '') warnings.push({ line: lineNo, message: `empty value for ${key}` });
    if (firstLine.has(key)) {
      warnings.push({
        line: lineNo,
        message: `duplicate key ${key} (first defined on line ${firstLine.get(key)}); the later value usually wins`,
      });
    } else {
      firstLine.set(key, lineNo);
      keys.push(key);
    }
  }

  for (const k of required) {
    if (!firstLine.has(k)) errors.push({ line: null, message: `required key ${k} is missing` });
  }

  return { valid: errors.length === 0, errors, warnings, keys, count: keys.length };
}
