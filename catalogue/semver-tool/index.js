// semver-tool: compares, sorts, range-checks and bumps semantic versions.
//
// Versions follow Semantic Versioning 2.0.0: MAJOR.MINOR.PATCH with optional
// -prerelease and +build parts; a leading "v" or "=" is accepted and dropped.
// Precedence ignores build metadata; a prerelease sorts before its release.
// Ranges follow npm (node-semver) syntax: comparators (<, <=, >, >=, =),
// caret ^ and tilde ~, x-ranges (1.x, 1.2.*), hyphen ranges (1.2 - 2.3.4),
// space = AND, || = OR. As in npm, a prerelease version only satisfies a
// range that names a prerelease of the same MAJOR.MINOR.PATCH, unless
// include_prerelease is true.

const ID = '(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
const SEMVER = new RegExp(`^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-(${ID}(?:\\.${ID})*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$`);

// Explains why `s` (already stripped of v/=) is not a valid version.
function diagnose(s) {
  if (s === '') return 'it is empty';
  const core = s.split(/[-+]/)[0];
  const nums = core.split('.');
  if (nums.length !== 3) return `expected MAJOR.MINOR.PATCH (three numbers), found ${nums.length} part(s) in "${core}"`;
  const names = ['major', 'minor', 'patch'];
  for (let i = 0; i < 3; i++) {
    if (!/^\d+$/.test(nums[i])) return `${names[i]} "${nums[i]}" is not a number`;
    if (/^0\d/.test(nums[i])) return `${names[i]} "${nums[i]}" has a leading zero`;
  }
  const plus = s.indexOf('+');
  const pre = s.slice(core.length + 1, plus === -1 ? s.length : plus);
  if (s[core.length] === '-') {
    for (const id of pre.split('.')) {
      if (id === '') return 'a prerelease identifier is empty';
      if (!/^[0-9A-Za-z-]+$/.test(id)) return `prerelease identifier "${id}" may only use [0-9A-Za-z-]`;
      if (/^0\d+$/.test(id)) return `numeric prerelease identifier "${id}" has a leading zero`;
    }
  }
  if (plus !== -1) return 'build metadata must be dot-separated [0-9A-Za-z-] identifiers';
  return 'not a semantic version';
}

function parseVersion(text, what) {
  const s = String(text).trim().replace(/^[v=]\s*/i, '');
  const m = SEMVER.exec(s);
  if (!m) throw new Error(`invalid version ${JSON.stringify(text)}${what ? ` (${what})` : ''}: ${diagnose(s)}`);
  const nums = [m[1], m[2], m[3]].map(Number);
  if (nums.some((n) => !Number.isSafeInteger(n))) throw new Error(`invalid version ${JSON.stringify(text)}: number too large`);
  return { major: nums[0], minor: nums[1], patch: nums[2], pre: m[4] ? m[4].split('.') : [], build: m[5] ? m[5].split('.') : [] };
}

function format(v) {
  return `${v.major}.${v.minor}.${v.patch}` + (v.pre.length ? '-' + v.pre.join('.') : '') + (v.build.length ? '+' + v.build.join('.') : '');
}

const isNum = (id) => /^\d+$/.test(id);
function compareIds(a, b) {
  if (isNum(a) && isNum(b)) return a.length !== b.length ? Math.sign(a.length - b.length) : a < b ? -1 : a > b ? 1 : 0;
  if (isNum(a)) return -1;
  if (isNum(b)) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
function compareIdLists(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareIds(a[i], b[i]);
    if (c) return c;
  }
  return Math.sign(a.length - b.length);
}

// Semver precedence: -1, 0 or 1 (build metadata ignored).
function compare(a, b) {
  for (const k of ['major', 'minor', 'patch']) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  if (!a.pre.length || !b.pre.length) return Math.sign(b.pre.length - a.pre.length) || 0;
  return compareIdLists(a.pre, b.pre);
}
// Total order for sorting: precedence, then build metadata (none first).
function compareBuild(a, b) {
  return compare(a, b) || (a.build.length && b.build.length ? compareIdLists(a.build, b.build) : Math.sign(a.build.length - b.build.length));
}

// ---- Ranges ----------------------------------------------------------------

const PART = '(?:0|[1-9]\\d*|[xX*])';
const PARTIAL = new RegExp(`^v?(${PART})(?:\\.(${PART})(?:\\.(${PART})(?:-(${ID}(?:\\.${ID})*))?(?:\\+[0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*)?)?)?$`);
const v3 = (major, minor, patch, pre) => ({ major, minor, patch, pre: pre || [], build: [] });
const NOTHING = [{ op: '<', v: v3(0, 0, 0, ['0']) }];

function parsePartial(text, range) {
  const m = PARTIAL.exec(text);
  if (!m) throw new Error(`invalid range ${JSON.stringify(range)}: cannot read version "${text}"`);
  const num = (x) => (x === undefined || /^[xX*]$/.test(x) ? null : Number(x));
  const p = { M: num(m[1]), m: num(m[2]), p: num(m[3]), pre: m[4] ? m[4].split('.') : [] };
  if (p.M === null) p.m = p.p = null; // "*.1.2" means "*"
  if (p.m === null) p.p = null;
  if (p.pre.length && p.p === null) throw new Error(`invalid range ${JSON.stringify(range)}: a prerelease needs a full version in "${text}"`);
  return p;
}

// One comparator token (with its operator) to a list of primitive comparators.
// `z` is the prerelease given to lower bounds filled in from a partial version:
// none normally, "-0" (the lowest prerelease) under include_prerelease, as npm.
function desugar(op, p, z) {
  const { M, m, p: pa, pre } = p;
  const lo = (a, b, c, r) => ({ op: '>=', v: v3(a, b, c, r) });
  const hi = (a, b, c) => ({ op: '<', v: v3(a, b, c, ['0']) });
  if (op === '^') {
    if (M === null) return [];
    if (m === null) return [lo(M, 0, 0, z), hi(M + 1, 0, 0)];
    if (pa === null) return M === 0 ? [lo(0, m, 0, z), hi(0, m + 1, 0)] : [lo(M, m, 0, z), hi(M + 1, 0, 0)];
    if (M !== 0) return [lo(M, m, pa, pre), hi(M + 1, 0, 0)];
    return m !== 0 ? [lo(0, m, pa, pre), hi(0, m + 1, 0)] : [lo(0, 0, pa, pre), hi(0, 0, pa + 1)];
  }
  if (op === '~' || op === '~>') {
    if (M === null) return [];
    if (m === null) return [lo(M, 0, 0, z), hi(M + 1, 0, 0)];
    return [pa === null ? lo(M, m, 0, z) : lo(M, m, pa, pre), hi(M, m + 1, 0)];
  }
  if (pa !== null) return [{ op: op || '=', v: v3(M, m, pa, pre) }];
  switch (op) {
    case '>':
      if (M === null) return NOTHING;
      return m === null ? [lo(M + 1, 0, 0, z)] : [lo(M, m + 1, 0, z)];
    case '>=':
      return M === null ? [] : [lo(M, m === null ? 0 : m, 0, z)];
    case '<':
      if (M === null) return NOTHING;
      return m === null ? [hi(M, 0, 0)] : [hi(M, m, 0)];
    case '<=':
      if (M === null) return [];
      return m === null ? [hi(M + 1, 0, 0)] : [hi(M, m + 1, 0)];
    default: // "", "=": an x-range
      if (M === null) return [];
      return m === null ? [lo(M, 0, 0, z), hi(M + 1, 0, 0)] : [lo(M, m, 0, z), hi(M, m + 1, 0)];
  }
}

// Returns a list of comparator sets (OR of ANDs).
function parseRange(range, includePre) {
  if (range.length > 2000) throw new Error('range is too long');
  const z = includePre ? ['0'] : undefined;
  return range.split('||').map((raw) => {
    const set = raw.trim();
    const hy = /^(\S+)\s+-\s+(\S+)$/.exec(set);
    if (hy) {
      const a = parsePartial(hy[1], range);
      const b = parsePartial(hy[2], range);
      const out = [];
      if (a.M !== null) out.push(...(a.p === null || a.pre.length ? desugar('>=', a, z) : [{ op: '>=', v: v3(a.M, a.m, a.p, z) }]));
      if (b.M !== null) out.push(...(b.p === null ? desugar('<=', b, z) : [{ op: '<=', v: v3(b.M, b.m, b.p, b.pre) }]));
      return out;
    }
    const tokens = set.replace(/(\^|~>?|[<>]=?|=)\s+/g, '$1').split(/\s+/).filter(Boolean);
    const out = [];
    for (const t of tokens) {
      const m = /^(\^|~>?|[<>]=?|=)?(.*)$/.exec(t);
      out.push(...desugar(m[1] || '', parsePartial(m[2], range), z));
    }
    return out;
  });
}

function testComparator(c, v) {
  const r = compare(v, c.v);
  return c.op === '=' ? r === 0 : c.op === '<' ? r < 0 : c.op === '<=' ? r <= 0 : c.op === '>' ? r > 0 : r >= 0;
}
function satisfies(v, sets, includePre) {
  return sets.some((set) => {
    if (!set.every((c) => testComparator(c, v))) return false;
    if (!v.pre.length || includePre) return true;
    return set.some((c) => c.v.pre.length && c.v.major === v.major && c.v.minor === v.minor && c.v.patch === v.patch);
  });
}
const showRange = (sets) => sets.map((s) => (s.length ? s.map((c) => c.op + format(c.v)).join(' ') : '*')).join(' || ');

// ---- Bump ------------------------------------------------------------------

function bump(v, release, preid) {
  const n = { ...v, pre: v.pre.slice(), build: [] };
  const setPre = () => {
    if (!n.pre.length) n.pre = ['0'];
    else {
      let i = n.pre.length - 1;
      while (i >= 0 && !isNum(n.pre[i])) i--;
      if (i >= 0) n.pre[i] = String(BigInt(n.pre[i]) + 1n);
      else n.pre.push('0');
    }
    if (preid !== undefined && (n.pre[0] !== preid || !isNum(n.pre[1] || ''))) n.pre = [preid, '0'];
  };
  switch (release) {
    case 'major':
      if (!(n.minor === 0 && n.patch === 0 && n.pre.length)) n.major++;
      n.minor = n.patch = 0;
      n.pre = [];
      break;
    case 'minor':
      if (!(n.patch === 0 && n.pre.length)) n.minor++;
      n.patch = 0;
      n.pre = [];
      break;
    case 'patch':
      if (!n.pre.length) n.patch++;
      n.pre = [];
      break;
    case 'premajor':
      n.major++;
      n.minor = n.patch = 0;
      n.pre = [];
      setPre();
      break;
    case 'preminor':
      n.minor++;
      n.patch = 0;
      n.pre = [];
      setPre();
      break;
    case 'prepatch':
      n.patch++;
      n.pre = [];
      setPre();
      break;
    case 'prerelease':
      if (!n.pre.length) n.patch++;
      setPre();
      break;
    default:
      throw new Error('release must be major, minor, patch, premajor, preminor, prepatch or prerelease');
  }
  if ([n.major, n.minor, n.patch].some((x) => !Number.isSafeInteger(x))) throw new Error('version number too large to bump');
  return n;
}

// ---- Modes -----------------------------------------------------------------

function need(params, key, type) {
  const v = params[key];
  if (type === 'array' ? !Array.isArray(v) : typeof v !== type) throw new Error(`${params.mode} mode needs \`${key}\``);
  return v;
}

function run(params) {
  const mode = params.mode;
  if (mode === 'compare') {
    const a = parseVersion(need(params, 'a', 'string'), 'a');
    const b = parseVersion(need(params, 'b', 'string'), 'b');
    const result = compare(a, b);
    const out = { mode, a: format(a), b: format(b), result, greater: result === 0 ? null : result > 0 ? 'a' : 'b' };
    if (result === 0 && a.build.join('.') !== b.build.join('.')) out.note = 'equal precedence: build metadata is ignored when comparing';
    return out;
  }
  if (mode === 'sort') {
    const order = params.order === undefined ? 'asc' : params.order;
    if (order !== 'asc' && order !== 'desc') throw new Error('order must be "asc" or "desc"');
    const valid = [];
    const invalid = [];
    for (const item of need(params, 'versions', 'array')) {
      try {
        valid.push({ text: String(item).trim(), v: parseVersion(item) });
      } catch (e) {
        invalid.push({ input: String(item), error: e.message });
      }
    }
    valid.sort((x, y) => (order === 'asc' ? 1 : -1) * compareBuild(x.v, y.v));
    return { mode, order, sorted: valid.map((x) => x.text), invalid, count: valid.length };
  }
  if (mode === 'satisfies') {
    const range = need(params, 'range', 'string');
    const include = params.include_prerelease === true;
    const sets = parseRange(range, include);
    const out = { mode, range, normalized_range: showRange(sets) };
    if (params.version === undefined && params.versions === undefined) throw new Error('satisfies mode needs `version` or `versions`');
    if (params.version !== undefined) {
      const v = parseVersion(need(params, 'version', 'string'), 'version');
      out.version = format(v);
      out.satisfies = satisfies(v, sets, include);
    }
    if (params.versions !== undefined) {
      const matching = [];
      const invalid = [];
      let best = null;
      for (const item of need(params, 'versions', 'array')) {
        let v;
        try {
          v = parseVersion(item);
        } catch (e) {
          invalid.push({ input: String(item), error: e.message });
          continue;
        }
        if (!satisfies(v, sets, include)) continue;
        matching.push(String(item).trim());
        if (best === null || compareBuild(v, best.v) > 0) best = { v, text: String(item).trim() };
      }
      Object.assign(out, { matching, max_satisfying: best && best.text, invalid });
    }
    return out;
  }
  if (mode === 'bump') {
    const v = parseVersion(need(params, 'version', 'string'), 'version');
    const release = need(params, 'release', 'string');
    const preid = params.preid;
    if (preid !== undefined && !new RegExp(`^${ID}$`).test(preid)) throw new Error(`preid ${JSON.stringify(preid)} is not a valid prerelease identifier`);
    return { mode, version: format(v), release, result: format(bump(v, release, preid)) };
  }
  throw new Error('mode must be compare, sort, satisfies or bump');
}
