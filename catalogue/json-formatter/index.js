// json-formatter: validates, pretty-prints or minifies JSON text.
//
// Uses its own strict RFC 8259 parser rather than JSON.parse, so that it can
//  - report where an error is (line, column, offset) on every engine,
//  - keep numbers exactly as written (no precision loss on big integers),
//  - keep key order as written (JS objects reorder integer-like keys),
//  - keep and flag duplicate keys instead of silently dropping them.
// Invalid JSON is a normal result (valid: false), not an exception.

const MAX_DEPTH = 200; // recursion bound: keeps well inside a small engine stack
const NUM_RE = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

class JsonSyntaxError extends Error {
  constructor(message, pos) {
    super(message);
    this.pos = pos;
  }
}

// Parses `src` into a tree of nodes:
//   { t: 'o', members: [[rawKey, key, node], ...], pos } objects
//   { t: 'a', items: [node, ...] } arrays
//   { t: 'v', raw } strings, numbers, true, false, null (kept verbatim)
function parseJson(src, stats, warnings) {
  let pos = 0;
  const n = src.length;
  const fail = (msg, at) => {
    throw new JsonSyntaxError(msg, at === undefined ? pos : at);
  };
  const ws = () => {
    for (;;) {
      const c = src.charCodeAt(pos);
      if (c === 32 || c === 9 || c === 10 || c === 13) pos++;
      else return;
    }
  };
  const describe = (at) => (at >= n ? 'unexpected end of input' : `unexpected character ${JSON.stringify(src[at])}`);

  function parseString() {
    const start = pos++;
    for (;;) {
      if (pos >= n) fail('unterminated string', start);
      const c = src.charCodeAt(pos);
      if (c === 34) return src.slice(start, ++pos);
      if (c === 92) {
        const e = src[pos + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(src.slice(pos + 2, pos + 6))) fail('invalid \\u escape (need 4 hex digits)');
          pos += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) pos += 2;
        else fail(`invalid escape sequence \\${e === undefined ? '' : e}`);
      } else if (c < 0x20) fail('unescaped control character in string (use \\n, \\t or \\u00XX)');
      else pos++;
    }
  }

  function parseValue(depth) {
    ws();
    const c = src[pos];
    if (c === '{' || c === '[') {
      if (depth >= MAX_DEPTH) throw new Error(`JSON nested deeper than ${MAX_DEPTH} levels is not supported`);
      return c === '{' ? parseObject(depth + 1) : parseArray(depth + 1);
    }
    if (c === '"') return { t: 'v', raw: parseString() };
    NUM_RE.lastIndex = pos;
    const m = NUM_RE.exec(src);
    if (m) {
      pos += m[0].length;
      if (/[0-9.eE]/.test(src[pos] || '')) fail('invalid number (no leading zeros; digits needed after "." and "e")', pos - m[0].length);
      return { t: 'v', raw: m[0] };
    }
    for (const lit of ['true', 'false', 'null']) {
      if (src.startsWith(lit, pos)) {
        pos += lit.length;
        return { t: 'v', raw: lit };
      }
    }
    if (c === "'") fail("unexpected character \"'\" (JSON strings need double quotes)");
    if (c === '-' || c === '.' || (c >= '0' && c <= '9')) fail('invalid number');
    fail(`${describe(pos)} (expected a value)`);
  }

  function parseObject(depth) {
    const node = { t: 'o', members: [] };
    if (depth > stats.depth) stats.depth = depth;
    const seen = new Set();
    pos++; // {
    ws();
    if (src[pos] === '}') {
      pos++;
      return node;
    }
    for (;;) {
      ws();
      if (src[pos] === '}' && node.members.length) fail("trailing comma before '}'");
      if (src[pos] !== '"') fail(`${describe(pos)} (expected a double-quoted key)`);
      const keyPos = pos;
      const rawKey = parseString();
      const key = JSON.parse(rawKey);
      if (seen.has(key)) warnings.push(`duplicate key ${rawKey} at ${lineCol(src, keyPos).text}`);
      seen.add(key);
      ws();
      if (src[pos] !== ':') fail(`${describe(pos)} (expected ':' after key ${rawKey})`);
      pos++;
      node.members.push([rawKey, key, parseValue(depth)]);
      stats.keys++;
      ws();
      if (src[pos] === ',') pos++;
      else if (src[pos] === '}') {
        pos++;
        return node;
      } else fail(`${describe(pos)} (expected ',' or '}' after object member)`);
    }
  }

  function parseArray(depth) {
    const node = { t: 'a', items: [] };
    if (depth > stats.depth) stats.depth = depth;
    pos++; // [
    ws();
    if (src[pos] === ']') {
      pos++;
      return node;
    }
    for (;;) {
      ws();
      if (src[pos] === ']' && node.items.length) fail("trailing comma before ']'");
      node.items.push(parseValue(depth));
      ws();
      if (src[pos] === ',') pos++;
      else if (src[pos] === ']') {
        pos++;
        return node;
      } else fail(`${describe(pos)} (expected ',' or ']' after array element)`);
    }
  }

  ws();
  if (pos >= n) fail('empty input (no JSON value)');
  const root = parseValue(0);
  ws();
  if (pos < n) fail(`${describe(pos)} after the end of the JSON value`);
  return root;
}

function lineCol(src, pos) {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < pos && i < src.length; i++) {
    if (src.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  const column = pos - lineStart + 1;
  return { line, column, offset: pos, text: `line ${line}, column ${column}` };
}

function utf8Length(s) {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

// Serialises a node tree; indent '' means compact output.
function serialize(node, indent, sortKeys, level) {
  if (node.t === 'v') return node.raw;
  const items =
    node.t === 'a'
      ? node.items.map((v) => serialize(v, indent, sortKeys, level + 1))
      : (sortKeys ? node.members.slice().sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)) : node.members).map(
          (m) => m[0] + (indent ? ': ' : ':') + serialize(m[2], indent, sortKeys, level + 1),
        );
  const [open, close] = node.t === 'a' ? ['[', ']'] : ['{', '}'];
  if (items.length === 0) return open + close;
  if (!indent) return open + items.join(',') + close;
  const inner = '\n' + indent.repeat(level + 1);
  return open + inner + items.join(',' + inner) + '\n' + indent.repeat(level) + close;
}

function run(params) {
  const src = params.json;
  const mode = params.mode === undefined ? 'pretty' : params.mode;
  const indentN = params.indent === undefined ? 2 : params.indent;
  const sortKeys = params.sort_keys === true;
  if (typeof src !== 'string') throw new Error('json must be a string');
  if (!['pretty', 'minify', 'validate'].includes(mode)) throw new Error('mode must be pretty, minify or validate');
  if (!Number.isInteger(indentN) || indentN < 0 || indentN > 8) throw new Error('indent must be an integer from 0 to 8');

  const text = src.charCodeAt(0) === 0xfeff ? src.slice(1) : src; // ignore a byte-order mark
  const stats = { depth: 0, keys: 0, bytes: utf8Length(text) };
  const warnings = [];
  let root;
  try {
    root = parseJson(text, stats, warnings);
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
    const where = lineCol(text, e.pos);
    return {
      valid: false,
      mode,
      error: `${e.message} at ${where.text} (offset ${where.offset})`,
      error_position: { line: where.line, column: where.column, offset: where.offset },
    };
  }

  const result = { valid: true, mode, stats, warnings };
  if (mode !== 'validate') {
    const indent = mode === 'pretty' ? ' '.repeat(indentN) : '';
    result.output = serialize(root, indent, sortKeys, 0);
  }
  return result;
}
