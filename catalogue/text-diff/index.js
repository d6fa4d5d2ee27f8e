// text-diff: line-by-line diff of two texts, in unified diff format.
//
// Lines are compared with Myers' O(ND) algorithm in its linear-space form (the
// "middle snake" bisection, as in diff-match-patch), after trimming the common
// head and tail. Options can ignore case and/or whitespace differences (lines
// are compared after collapsing whitespace runs and trimming). The result has a
// unified diff like `diff -u` / `git diff` (with "\ No newline at end of file"
// markers), per-hunk ranges, line statistics, and optionally a word-level diff
// of changed lines paired up in order.

const MAX_LINES = 5000;
const MAX_WORD_PAIRS = 500;
const MAX_TOKENS = 2000;
// Work allowed for the exact search (diagonals visited + snake steps) per diff.
// Past it, each search stops after HEURISTIC_D rounds and splits at the
// furthest point reached (as git's xdiff does when a diff gets expensive):
// still a correct diff, just not necessarily minimal, and the result says so.
const WORK_BUDGET = 5000000;
const HEURISTIC_D = 64;
let work = 0;
let approximated = false;

function splitLines(text) {
  if (text === '') return { lines: [], noEol: false };
  const lines = text.split(/\r\n|\r|\n/);
  const noEol = lines[lines.length - 1] !== '';
  if (!noEol) lines.pop();
  return { lines, noEol };
}

// Finds the split point of a[aLo:aHi] vs b[bLo:bHi] where the forward and reverse
// D-paths meet (an approximate one once the budget is spent), or null when the
// two ranges share nothing.
function bisect(a, aLo, aHi, b, bLo, bHi) {
  const n = aHi - aLo;
  const m = bHi - bLo;
  const maxD = Math.ceil((n + m) / 2);
  const off = maxD;
  const len = 2 * maxD + 2;
  const v1 = new Int32Array(len).fill(-1);
  const v2 = new Int32Array(len).fill(-1);
  v1[off + 1] = 0;
  v2[off + 1] = 0;
  const delta = n - m;
  const front = delta % 2 !== 0;
  let k1s = 0, k1e = 0, k2s = 0, k2e = 0;
  let bestX = 0, bestY = 0; // furthest forward point, for the approximate split
  for (let d = 0; d < maxD; d++) {
    work += 2 * d + 2;
    if (work > WORK_BUDGET && d >= HEURISTIC_D) {
      approximated = true;
      if (bestX + bestY === 0 || (bestX === n && bestY === m)) return [aLo + (n >> 1), bLo + (m >> 1)];
      return [aLo + bestX, bLo + bestY];
    }
    for (let k1 = -d + k1s; k1 <= d - k1e; k1 += 2) {
      const i1 = off + k1;
      let x1 = k1 === -d || (k1 !== d && v1[i1 - 1] < v1[i1 + 1]) ? v1[i1 + 1] : v1[i1 - 1] + 1;
      let y1 = x1 - k1;
      while (x1 < n && y1 < m && a[aLo + x1] === b[bLo + y1]) x1++, y1++, work++;
      v1[i1] = x1;
      if (x1 <= n && y1 <= m && x1 + y1 > bestX + bestY) [bestX, bestY] = [x1, y1];
      if (x1 > n) k1e += 2;
      else if (y1 > m) k1s += 2;
      else if (front) {
        const i2 = off + delta - k1;
        if (i2 >= 0 && i2 < len && v2[i2] !== -1 && x1 >= n - v2[i2]) return [aLo + x1, bLo + y1];
      }
    }
    for (let k2 = -d + k2s; k2 <= d - k2e; k2 += 2) {
      const i2 = off + k2;
      let x2 = k2 === -d || (k2 !== d && v2[i2 - 1] < v2[i2 + 1]) ? v2[i2 + 1] : v2[i2 - 1] + 1;
      let y2 = x2 - k2;
      while (x2 < n && y2 < m && a[aHi - x2 - 1] === b[bHi - y2 - 1]) x2++, y2++, work++;
      v2[i2] = x2;
      if (x2 > n) k2e += 2;
      else if (y2 > m) k2s += 2;
      else if (!front) {
        const i1 = off + delta - k2;
        if (i1 >= 0 && i1 < len && v1[i1] !== -1) {
          const x1 = v1[i1];
          if (x1 >= n - x2) return [aLo + x1, bLo + off + x1 - i1];
        }
      }
    }
  }
  return null;
}

// Appends ops ['=', i, j] / ['-', i] / ['+', j] for a[aLo:aHi] vs b[bLo:bHi].
function diffRange(a, aLo, aHi, b, bLo, bHi, out) {
  while (aLo < aHi && bLo < bHi && a[aLo] === b[bLo]) out.push(['=', aLo++, bLo++]);
  const tail = [];
  while (aLo < aHi && bLo < bHi && a[aHi - 1] === b[bHi - 1]) tail.push(['=', --aHi, --bHi]);
  const split = aLo < aHi && bLo < bHi ? bisect(a, aLo, aHi, b, bLo, bHi) : null;
  if (split) {
    diffRange(a, aLo, split[0], b, bLo, split[1], out);
    diffRange(a, split[0], aHi, b, split[1], bHi, out);
  } else {
    for (let i = aLo; i < aHi; i++) out.push(['-', i]);
    for (let j = bLo; j < bHi; j++) out.push(['+', j]);
  }
  for (let k = tail.length - 1; k >= 0; k--) out.push(tail[k]);
}

// Diffs two arrays of strings by key; within each changed run, deletions come first.
// Lines whose key never occurs on the other side cannot match, so they are set
// aside before the search (which keeps it minimal) and merged back after.
function diffKeys(keysA, keysB) {
  const ids = new Map();
  const id = (k) => (ids.has(k) ? ids.get(k) : (ids.set(k, ids.size), ids.size - 1));
  const a = Int32Array.from(keysA, id);
  const b = Int32Array.from(keysB, id);
  const inA = new Uint8Array(ids.size);
  const inB = new Uint8Array(ids.size);
  a.forEach((x) => (inA[x] = 1));
  b.forEach((x) => (inB[x] = 1));
  const mapA = [];
  const mapB = [];
  a.forEach((x, i) => inB[x] && mapA.push(i));
  b.forEach((x, j) => inA[x] && mapB.push(j));
  const ra = Int32Array.from(mapA, (i) => a[i]);
  const rb = Int32Array.from(mapB, (j) => b[j]);
  const raw = [];
  diffRange(ra, 0, ra.length, rb, 0, rb.length, raw);
  // Rebuild the full script from the matched pairs.
  const ops = [];
  let i = 0;
  let j = 0;
  const flush = (iEnd, jEnd) => {
    while (i < iEnd) ops.push(['-', i++]);
    while (j < jEnd) ops.push(['+', j++]);
  };
  for (const op of raw) {
    if (op[0] !== '=') continue;
    flush(mapA[op[1]], mapB[op[2]]);
    ops.push(['=', i++, j++]);
  }
  flush(a.length, b.length);
  return ops;
}

function wordDiff(oldLine, newLine, norm) {
  const TOKEN = /\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
  const ta = oldLine.match(TOKEN) || [];
  const tb = newLine.match(TOKEN) || [];
  if (ta.length > MAX_TOKENS || tb.length > MAX_TOKENS) {
    return [{ type: 'removed', text: oldLine }, { type: 'added', text: newLine }].filter((s) => s.text !== '');
  }
  const segs = [];
  const push = (type, text) => {
    const last = segs[segs.length - 1];
    if (last && last.type === type) last.text += text;
    else segs.push({ type, text });
  };
  for (const op of diffKeys(ta.map(norm), tb.map(norm))) {
    if (op[0] === '=') push('equal', tb[op[2]]);
    else if (op[0] === '-') push('removed', ta[op[1]]);
    else push('added', tb[op[1]]);
  }
  return segs;
}

function run(params) {
  const { old: oldText, new: newText } = params;
  if (typeof oldText !== 'string' || typeof newText !== 'string') throw new Error('old and new must both be strings');
  const context = params.context === undefined ? 3 : params.context;
  if (!Number.isInteger(context) || context < 0 || context > 1000) throw new Error('context must be an integer from 0 to 1000');
  const ignoreCase = params.ignore_case === true;
  const ignoreWs = params.ignore_whitespace === true;
  const oldName = params.old_name === undefined ? 'old' : params.old_name;
  const newName = params.new_name === undefined ? 'new' : params.new_name;

  const A = splitLines(oldText);
  const B = splitLines(newText);
  for (const [name, t] of [['old', A], ['new', B]]) {
    if (t.lines.length > MAX_LINES) throw new Error(`${name} has ${t.lines.length} lines; at most ${MAX_LINES} lines per side are supported`);
  }
  const norm = (s) => {
    let k = ignoreWs ? s.replace(/\s+/g, ' ').trim() : s;
    return ignoreCase ? k.toLowerCase() : k;
  };
  // A last line without a newline differs from the same text with one (as in diff -u).
  const keys = (t) => t.lines.map((l, i) => norm(l) + (t.noEol && i === t.lines.length - 1 && !ignoreWs ? '\u0000' : ''));
  work = 0;
  approximated = false;
  const ops = diffKeys(keys(A), keys(B));
  const minimal = !approximated;

  const stats = { added: 0, removed: 0, unchanged: 0, hunks: 0 };
  for (const op of ops) stats[op[0] === '=' ? 'unchanged' : op[0] === '-' ? 'removed' : 'added']++;

  // Group changes into hunks with `context` lines around them.
  const hunks = [];
  let i = 0;
  while (i < ops.length) {
    if (ops[i][0] === '=') {
      i++;
      continue;
    }
    const start = Math.max(0, i - context);
    let end = i; // exclusive end of the last change seen
    let j = i;
    while (j < ops.length) {
      if (ops[j][0] !== '=') {
        end = ++j;
        continue;
      }
      let k = j;
      while (k < ops.length && ops[k][0] === '=') k++;
      if (k < ops.length && k - j <= 2 * context) j = k;
      else break;
    }
    hunks.push([start, Math.min(ops.length, end + context)]);
    i = end + context;
  }

  const lines = [];
  const ranges = [];
  // oldBefore[s] / newBefore[s]: old and new lines consumed by ops[0:s].
  const oldBefore = [0];
  const newBefore = [0];
  for (const op of ops) {
    oldBefore.push(oldBefore[oldBefore.length - 1] + (op[0] !== '+' ? 1 : 0));
    newBefore.push(newBefore[newBefore.length - 1] + (op[0] !== '-' ? 1 : 0));
  }
  const range = (start, count) => (count === 1 ? `${start}` : `${start},${count}`);
  for (const [s, e] of hunks) {
    const part = ops.slice(s, e);
    const oc = oldBefore[e] - oldBefore[s];
    const nc = newBefore[e] - newBefore[s];
    const os = oldBefore[s] + (oc ? 1 : 0);
    const ns = newBefore[s] + (nc ? 1 : 0);
    ranges.push({ old_start: os, old_lines: oc, new_start: ns, new_lines: nc });
    lines.push(`@@ -${range(os, oc)} +${range(ns, nc)} @@`);
    for (const op of part) {
      const side = op[0] === '+' ? B : A; // context lines are shown as in old
      const idx = op[1];
      lines.push((op[0] === '=' ? ' ' : op[0]) + side.lines[idx]);
      if (side.noEol && idx === side.lines.length - 1) lines.push('\\ No newline at end of file');
    }
  }
  stats.hunks = hunks.length;
  const identical = stats.added === 0 && stats.removed === 0;
  const result = {
    identical,
    unified: identical ? '' : [`--- ${oldName}`, `+++ ${newName}`, ...lines].join('\n') + '\n',
    stats,
    hunks: ranges,
    minimal,
  };

  if (params.word_diff === true) {
    const pairs = [];
    work = 0; // one shared budget for all word diffs
    const wnorm = ignoreCase ? (t) => t.toLowerCase() : (t) => t;
    for (let p = 0; p < ops.length && pairs.length < MAX_WORD_PAIRS; ) {
      if (ops[p][0] === '=') {
        p++;
        continue;
      }
      let q = p;
      while (q < ops.length && ops[q][0] === '-') q++;
      let r = q;
      while (r < ops.length && ops[r][0] === '+') r++;
      for (let k = 0; k < Math.min(q - p, r - q) && pairs.length < MAX_WORD_PAIRS; k++) {
        const ai = ops[p + k][1];
        const bi = ops[q + k][1];
        pairs.push({ old_line: ai + 1, new_line: bi + 1, segments: wordDiff(A.lines[ai], B.lines[bi], wnorm) });
      }
      p = Math.max(r, p + 1);
    }
    result.word_diff = pairs;
  }
  return result;
}
