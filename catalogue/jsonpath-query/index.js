// jsonpath-query: evaluates a JSONPath expression (RFC 9535) against JSON text.
//
// Supported: $ and @, .name, ['name'], [index] (negative counts from the end),
// [start:end:step], *, .. (descendants), unions [a,b], and filters [?...] with
// == != < <= > >=, && || ! and parentheses, existence tests (?@.isbn), and the
// RFC functions length(), count(), match(), search() and value(). The JSON is
// parsed by a strict parser that keeps object member order; every match comes
// with its normalized path ($['store']['book'][0]). Bad JSON or a bad path
// throws an Error naming the position.

const MAX_DEPTH = 256;
const WS = ' \t\n\r';

// ---------- JSON (objects become Maps, to keep member order) ----------
function parseJson(src) {
  let pos = 0;
  const fail = (msg) => {
    const before = src.slice(0, pos);
    const line = before.split('\n').length;
    const col = pos - before.lastIndexOf('\n');
    throw new Error(`invalid JSON at line ${line}, column ${col} (offset ${pos}): ${msg}`);
  };
  const ws = () => {
    while (pos < src.length && WS.includes(src[pos])) pos++;
  };
  const STR = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
  const NUM = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const string = (what) => {
    STR.lastIndex = pos;
    const m = STR.exec(src);
    if (!m) fail(src[pos] === '"' ? 'unterminated string, bad escape or control character in string' : what);
    pos += m[0].length;
    return JSON.parse(m[0]);
  };
  function value(depth) {
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`);
    ws();
    const c = src[pos];
    if (c === '{' || c === '[') {
      const isObj = c === '{';
      const close = isObj ? '}' : ']';
      const out = isObj ? new Map() : [];
      pos++;
      ws();
      if (src[pos] === close) return pos++, out;
      for (;;) {
        ws();
        if (isObj) {
          const key = string('expected a double-quoted key');
          ws();
          if (src[pos++] !== ':') pos--, fail("expected ':'");
          out.set(key, value(depth + 1));
        } else out.push(value(depth + 1));
        ws();
        if (src[pos] === ',') pos++;
        else if (src[pos] === close) return pos++, out;
        else fail(`expected ',' or '${close}'`);
      }
    }
    if (c === '"') return string();
    NUM.lastIndex = pos;
    const n = NUM.exec(src);
    if (n) return (pos += n[0].length), Number(n[0]);
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (src.startsWith(lit, pos)) return (pos += lit.length), v;
    }
    fail(pos >= src.length ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
  }
  const root = value(0);
  ws();
  if (pos < src.length) fail('unexpected text after the JSON value');
  return root;
}

// ---------- JSONPath parser ----------
const FUNCS = { length: ['value', 'value'], count: ['value', 'nodes'], match: ['logical', 'value', 'value'], search: ['logical', 'value', 'value'], value: ['value', 'nodes'] };

function parsePath(src) {
  let pos = 0;
  let depth = 0; // nesting of brackets, parentheses and negations
  const enter = () => {
    if (++depth > 64) fail('expression nested more than 64 levels deep');
  };
  const fail = (msg, at = pos) => {
    throw new Error(`invalid JSONPath at position ${at}: ${msg}`);
  };
  const ws = () => {
    while (pos < src.length && WS.includes(src[pos])) pos++;
  };
  const NAME = /[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*/y;
  const INT = /-?(?:0|[1-9]\d*)/y;
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const sticky = (re) => {
    re.lastIndex = pos;
    const m = re.exec(src);
    if (m) pos += m[0].length;
    return m && m[0];
  };
  const int = () => {
    const at = pos;
    const t = sticky(INT);
    if (t === null) return null;
    if (t === '-0' || Math.abs(Number(t)) > Number.MAX_SAFE_INTEGER) fail(`index ${t} is not allowed`, at);
    return Number(t);
  };

  function stringLiteral() {
    const q = src[pos++];
    let out = '';
    for (;;) {
      if (pos >= src.length) fail(`unterminated string literal`);
      const c = src[pos++];
      if (c === q) return out;
      if (c === '\\') {
        const e = src[pos++];
        const simple = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '/': '/', '\\': '\\' };
        if (e in simple) out += simple[e];
        else if (e === q) out += q;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(pos, pos + 4))) {
          out += String.fromCharCode(parseInt(src.slice(pos, pos + 4), 16));
          pos += 4;
        } else fail(`invalid escape \\${e || ''} in string literal`, pos - 2);
      } else if (c < ' ') fail('control character in string literal', pos - 1);
      else out += c;
    }
  }

  function selector() {
    const c = src[pos];
    if (c === "'" || c === '"') return { t: 'name', name: stringLiteral() };
    if (c === '*') return pos++, { t: 'wild' };
    if (c === '?') {
      pos++;
      ws();
      return { t: 'filter', expr: logicalOr() };
    }
    const start = int();
    ws();
    if (src[pos] !== ':') {
      if (start === null) fail(`expected a selector (name, index, slice, * or ?filter)`);
      return { t: 'index', index: start };
    }
    pos++; // [start:end:step], every part optional
    ws();
    const end = int();
    ws();
    const step = src[pos] === ':' ? (pos++, ws(), int()) : null;
    return { t: 'slice', start, end, step };
  }

  function bracket() {
    pos++; // [
    enter();
    const sels = [];
    for (;;) {
      ws();
      sels.push(selector());
      ws();
      if (src[pos] === ',') pos++;
      else if (src[pos] === ']') return pos++, depth--, sels;
      else fail(`expected ',' or ']'`);
    }
  }

  // After '.' or '..': a member name or '*'.
  const dotted = (desc) => {
    if (src[pos] === '*') return pos++, { desc, sels: [{ t: 'wild' }] };
    const n = sticky(NAME);
    if (n === null) fail(desc ? `expected a name, * or [ after '..'` : `expected a member name or * after '.' (use ['...'] for other names)`);
    return { desc, sels: [{ t: 'name', name: n }] };
  };

  function query() {
    const root = src[pos++];
    const segments = [];
    for (let save = pos; ; save = pos) {
      ws();
      if (src.startsWith('..', pos)) segments.push(src[(pos += 2)] === '[' ? { desc: true, sels: bracket() } : dotted(true));
      else if (src[pos] === '.') pos++, segments.push(dotted(false));
      else if (src[pos] === '[') segments.push({ desc: false, sels: bracket() });
      else {
        pos = save;
        break;
      }
    }
    const singular = segments.every((s) => !s.desc && s.sels.length === 1 && (s.sels[0].t === 'name' || s.sels[0].t === 'index'));
    return { k: 'query', root, segments, singular };
  }

  // A literal, a query, or a function call; `kind` says what the operand yields.
  function primary() {
    const at = pos;
    const c = src[pos];
    if (c === '$' || c === '@') {
      const q = query();
      return { ...q, kind: q.singular ? 'value' : 'nodes' };
    }
    if (c === "'" || c === '"') return { k: 'lit', v: stringLiteral(), kind: 'value' };
    const num = sticky(NUMBER);
    if (num !== null) return { k: 'lit', v: Number(num), kind: 'value' };
    const word = sticky(/[a-z][a-z0-9_]*/y);
    if (word !== null && src[pos] === '(') {
      const sig = FUNCS[word];
      if (!sig) fail(`unknown function ${word}() (known: ${Object.keys(FUNCS).join(', ')})`, at);
      pos++;
      enter();
      const args = [];
      ws();
      if (src[pos] !== ')') {
        for (;;) {
          ws();
          const argAt = pos;
          const arg = primary();
          const want = sig[args.length + 1];
          if (want === 'nodes' && arg.k !== 'query') fail(`${word}() needs a query argument`, argAt);
          if (want === 'value' && arg.kind !== 'value') fail(`${word}() argument must be a single value (a literal or a singular query)`, argAt);
          args.push(arg);
          ws();
          if (src[pos] === ',') pos++;
          else break;
        }
      }
      if (src[pos] !== ')') fail(`expected ')' to close ${word}(`);
      pos++;
      depth--;
      if (args.length !== sig.length - 1) fail(`${word}() takes ${sig.length - 1} argument(s)`, at);
      return { k: 'fn', name: word, args, kind: sig[0] };
    }
    if (word === 'true' || word === 'false' || word === 'null') return { k: 'lit', v: word === 'null' ? null : word === 'true', kind: 'value' };
    fail('expected a literal, a query ($ or @) or a function call', at);
  }

  function basic() {
    ws();
    const at = pos;
    if (src[pos] === '!') {
      pos++;
      enter();
      ws();
      const e = basic();
      depth--;
      return { k: 'not', e };
    }
    if (src[pos] === '(') {
      pos++;
      enter();
      const e = logicalOr();
      ws();
      if (src[pos] !== ')') fail(`expected ')'`);
      pos++;
      depth--;
      return e;
    }
    const left = primary();
    ws();
    const op = sticky(/==|!=|<=|>=|<|>/y);
    if (op === null) {
      if (left.k === 'query' || left.kind === 'logical') return { k: 'test', e: left };
      fail('a literal or value function must be compared (==, !=, <, <=, >, >=)', at);
    }
    ws();
    const rightAt = pos;
    const right = primary();
    for (const [side, where] of [[left, at], [right, rightAt]]) {
      if (side.kind !== 'value') fail('only literals, singular queries (like @.a or @[0]) and length/count/value() can be compared', where);
    }
    return { k: 'cmp', op, left, right };
  }

  // logical-or / logical-and: operands joined by || or &&.
  const chain = (k, token, next) => () => {
    const items = [next()];
    for (ws(); src.startsWith(token, pos); ws()) {
      pos += 2;
      items.push(next());
    }
    return items.length === 1 ? items[0] : { k, items };
  };
  const logicalOr = chain('or', '||', chain('and', '&&', basic));

  if (src[0] !== '$') fail(`a JSONPath query starts with '$'`, 0);
  const q = query();
  if (pos < src.length) fail(`unexpected ${JSON.stringify(src[pos])}`);
  return q;
}

// ---------- evaluation ----------
const isObj = (v) => v instanceof Map;
const NOTHING = Symbol('nothing');

function children(node) {
  const out = [];
  if (Array.isArray(node.v)) node.v.forEach((v, i) => out.push({ v, p: node.p.concat(i) }));
  else if (isObj(node.v)) for (const [k, v] of node.v) out.push({ v, p: node.p.concat(k) });
  return out;
}

function select(sel, node, root, out) {
  const v = node.v;
  if (sel.t === 'name') {
    if (isObj(v) && v.has(sel.name)) out.push({ v: v.get(sel.name), p: node.p.concat(sel.name) });
  } else if (sel.t === 'wild') out.push(...children(node));
  else if (sel.t === 'index') {
    if (!Array.isArray(v)) return;
    const i = sel.index < 0 ? v.length + sel.index : sel.index;
    if (i >= 0 && i < v.length) out.push({ v: v[i], p: node.p.concat(i) });
  } else if (sel.t === 'slice') {
    if (!Array.isArray(v)) return;
    const len = v.length;
    const step = sel.step === null ? 1 : sel.step;
    if (step === 0) return;
    const norm = (i) => (i >= 0 ? i : len + i);
    if (step > 0) {
      const lo = Math.min(Math.max(norm(sel.start === null ? 0 : sel.start), 0), len);
      const hi = Math.min(Math.max(norm(sel.end === null ? len : sel.end), 0), len);
      for (let i = lo; i < hi; i += step) out.push({ v: v[i], p: node.p.concat(i) });
    } else {
      const hi = Math.min(Math.max(sel.start === null ? len - 1 : norm(sel.start), -1), len - 1);
      const lo = Math.min(Math.max(sel.end === null ? -1 : norm(sel.end), -1), len - 1);
      for (let i = hi; lo < i; i += step) out.push({ v: v[i], p: node.p.concat(i) });
    }
  } else {
    for (const child of children(node)) if (truthy(sel.expr, child, root)) out.push(child);
  }
}

function evalQuery(q, root, current) {
  let nodes = [q.root === '$' ? { v: root, p: [] } : current];
  for (const seg of q.segments) {
    const next = [];
    for (const node of nodes) {
      const targets = seg.desc ? descendants(node) : [node];
      for (const t of targets) for (const sel of seg.sels) select(sel, t, root, next);
    }
    nodes = next;
  }
  return nodes;
}

function descendants(node, out = []) {
  out.push(node);
  for (const c of children(node)) descendants(c, out);
  return out;
}

function operand(e, root, current) {
  if (e.k === 'lit') return e.v;
  if (e.k === 'query') {
    const nodes = evalQuery(e, root, current);
    return nodes.length === 1 ? nodes[0].v : NOTHING;
  }
  const args = e.args.map((a) => (a.k === 'query' && FUNCS[e.name][1] === 'nodes' ? evalQuery(a, root, current) : operand(a, root, current)));
  switch (e.name) {
    case 'length': {
      const x = args[0];
      if (typeof x === 'string') return [...x].length;
      if (Array.isArray(x)) return x.length;
      return isObj(x) ? x.size : NOTHING;
    }
    case 'count':
      return args[0].length;
    case 'value':
      return args[0].length === 1 ? args[0][0].v : NOTHING;
    default: {
      const [s, re] = args;
      if (typeof s !== 'string' || typeof re !== 'string') return false;
      try {
        return new RegExp(e.name === 'match' ? `^(?:${re})$` : re, 'u').test(s);
      } catch (err) {
        return false; // an invalid I-Regexp makes the test false (RFC 9535 2.4.6)
      }
    }
  }
}

function equal(a, b) {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isObj(a) && isObj(b)) return a.size === b.size && [...a].every(([k, v]) => b.has(k) && equal(v, b.get(k)));
  return false;
}

function less(a, b) {
  return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string') ? a < b : false;
}

function truthy(e, current, root) {
  switch (e.k) {
    case 'or':
      return e.items.some((x) => truthy(x, current, root));
    case 'and':
      return e.items.every((x) => truthy(x, current, root));
    case 'not':
      return !truthy(e.e, current, root);
    case 'test':
      return e.e.k === 'query' ? evalQuery(e.e, root, current).length > 0 : operand(e.e, root, current) === true;
    default: {
      const a = operand(e.left, root, current);
      const b = operand(e.right, root, current);
      const eq = equal(a, b);
      return { '==': eq, '!=': !eq, '<': less(a, b), '<=': less(a, b) || eq, '>': less(b, a), '>=': less(b, a) || eq }[e.op];
    }
  }
}

// ---------- output ----------
function pathString(p) {
  const esc = (s) =>
    s.replace(/[\\'\u0000-\u001f]/g, (c) => {
      const named = { '\\': '\\\\', "'": "\\'", '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
      return named[c] || `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    });
  return '$' + p.map((s) => (typeof s === 'number' ? `[${s}]` : `['${esc(s)}']`)).join('');
}

function toPlain(v) {
  if (Array.isArray(v)) return v.map(toPlain);
  if (!isObj(v)) return v;
  const o = {};
  for (const [k, x] of v) Object.defineProperty(o, k, { value: toPlain(x), enumerable: true, writable: true, configurable: true });
  return o;
}

function run(params) {
  if (typeof params.json !== 'string') throw new Error('json must be a string');
  if (typeof params.path !== 'string' || params.path === '') throw new Error('path must be a non-empty string');
  const max = params.max_results === undefined ? 1000 : params.max_results;
  if (!Number.isInteger(max) || max < 1 || max > 10000) throw new Error('max_results must be an integer from 1 to 10000');
  const query = parsePath(params.path.trim());
  const root = parseJson(params.json);
  const nodes = evalQuery(query, root, null);
  return {
    count: nodes.length,
    truncated: nodes.length > max,
    matches: nodes.slice(0, max).map((n) => ({ path: pathString(n.p), value: toPlain(n.v) })),
  };
}
