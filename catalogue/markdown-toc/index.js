// markdown-toc: builds a table of contents from a Markdown document's headings.
//
// Finds ATX headings (# Title, with optional closing #s) and setext headings
// (a paragraph underlined with === or ---), skipping fenced code blocks (```
// or ~~~), indented code (4+ spaces), and YAML front matter at the top. The
// heading text is reduced to what GitHub would display (links, images, code,
// emphasis and HTML tags unwrapped) and turned into GitHub's anchor: lower
// case, punctuation removed, each space a hyphen, with -1, -2 ... appended to
// repeats. Anchors are numbered over all headings, so the ones listed match
// GitHub even when min_level/max_level leave some headings out. Only the first
// 1000 characters of a (setext) heading are used.

const MAX_HEADING = 1000; // characters of a heading that are processed

// The heading as displayed: inline markup unwrapped. Negated classes and the
// length cap keep these patterns fast on any input.
function plainText(md) {
  let s = md.length > MAX_HEADING ? md.slice(0, MAX_HEADING) : md;
  if (!/[`!\[<*_~\\&\t\n]/.test(s)) return s.trim(); // no markup: the common case
  s = s.replace(/``([^`]+(?:`[^`]+)*)``|`([^`]+)`/g, (m, a, b) => (a !== undefined ? a : b).trim()); // code spans
  s = s.replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1'); // images -> alt text
  s = s.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'); // inline links
  s = s.replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1'); // reference links
  s = s.replace(/<(https?:[^>\s]+|[^>\s@]+@[^>\s]+)>/g, '$1'); // autolinks
  s = s.replace(/<\/?[A-Za-z][^>]*>/g, ''); // HTML tags
  s = s.replace(/\*\*(?=\S)([^*]*?\S)\*\*/g, '$1').replace(/__(?=\S)([^_]*?\S)__/g, '$1'); // strong
  s = s.replace(/(^|[^\w*])\*(?=\S)([^*]*?\S)\*(?![\w*])/g, '$1$2'); // emphasis
  s = s.replace(/(^|[^\w_])_(?=\S)([^_]*?\S)_(?![\w_])/g, '$1$2');
  s = s.replace(/~~(?=\S)([^~]*?\S)~~/g, '$1'); // strikethrough
  s = s.replace(/\\([!-/:-@[-`{-~])/g, '$1'); // backslash escapes
  s = s.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");
  return s.replace(/[\t\n]/g, ' ').trim(); // inner runs of spaces are kept, as GitHub does
}

// GitHub's anchor: lower case, drop everything but letters, marks, numbers,
// connector punctuation (_), hyphens and spaces, then spaces -> hyphens.
function slug(text) {
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

function findHeadings(markdown) {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n'); // a regex split is slow in QuickJS
  const headings = [];
  let fence = null; // the opening fence, while inside a fenced block
  let para = []; // lines of the current paragraph, for setext headings
  let paraStart = 0;
  let i = 0;
  // YAML front matter: --- on the first line, closed by --- or ...
  if (/^---\s*$/.test(lines[0] || '')) {
    const end = lines.findIndex((l, k) => k > 0 && /^(---|\.\.\.)\s*$/.test(l));
    if (end !== -1) i = end + 1;
  }
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (fence) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length) fence = null;
      continue;
    }
    const open = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (open && !(open[1][0] === '`' && open[2].includes('`'))) {
      fence = open[1];
      para = [];
      continue;
    }
    if (/^\s*$/.test(line)) {
      para = [];
      continue;
    }
    if (/^ {4,}|^\t/.test(line) && para.length === 0) continue; // indented code
    if (/^\s*[\p{L}"'(]/u.test(line) && para.length !== 0) {
      para.push(line.trim()); // fast path: an ordinary paragraph line
      continue;
    }
    const atx = /^ {0,3}(#{1,6})(?=[ \t]|$)/.exec(line);
    if (atx) {
      // The text, minus an optional closing run of #s preceded by a space.
      let raw = line.slice(atx[0].length).trim();
      let end = raw.length;
      while (end > 0 && raw[end - 1] === '#') end--;
      if (end === 0) raw = '';
      else if (end < raw.length && (raw[end - 1] === ' ' || raw[end - 1] === '\t')) raw = raw.slice(0, end).trim();
      headings.push({ level: atx[1].length, raw, line: i + 1 });
      para = [];
      continue;
    }
    const setext = /^ {0,3}(=+|-+)[ \t]*$/.exec(line);
    if (setext && para.length) {
      headings.push({ level: setext[1][0] === '=' ? 1 : 2, raw: para.join(' '), line: paraStart + 1 });
      para = [];
      continue;
    }
    // Lines that cannot continue into a setext heading: thematic breaks,
    // block quotes, list items, tables, HTML blocks.
    if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line) || /^ {0,3}(>|[-+*]\s|\d{1,9}[.)]\s|\||<)/.test(line)) {
      para = [];
      continue;
    }
    if (para.length === 0) paraStart = i;
    para.push(line.trim());
  }
  return headings;
}

function run(params) {
  const markdown = params.markdown;
  if (typeof markdown !== 'string') throw new Error('markdown must be a string');
  const minLevel = params.min_level === undefined ? 1 : params.min_level;
  const maxLevel = params.max_level === undefined ? 6 : params.max_level;
  const bullet = params.bullet === undefined ? '-' : params.bullet;
  const indent = params.indent === undefined ? 2 : params.indent;
  for (const [name, v] of [['min_level', minLevel], ['max_level', maxLevel]]) {
    if (!Number.isInteger(v) || v < 1 || v > 6) throw new Error(`${name} must be an integer from 1 to 6`);
  }
  if (minLevel > maxLevel) throw new Error(`min_level (${minLevel}) is greater than max_level (${maxLevel})`);
  if (!['-', '*', '+', '1.'].includes(bullet)) throw new Error('bullet must be "-", "*", "+" or "1."');
  if (!Number.isInteger(indent) || indent < 2 || indent > 8) throw new Error('indent must be an integer from 2 to 8');

  const counts = new Map(); // anchor -> times used, as github-slugger keeps it
  const all = findHeadings(markdown).map((h) => {
    const text = plainText(h.raw);
    const base = slug(text);
    let anchor = base;
    while (counts.has(anchor)) {
      counts.set(base, counts.get(base) + 1);
      anchor = `${base}-${counts.get(base)}`;
    }
    counts.set(anchor, 0);
    return { level: h.level, text, anchor, line: h.line };
  });
  const headings = all.filter((h) => h.text !== '' && h.level >= minLevel && h.level <= maxLevel);

  const top = headings.reduce((m, h) => Math.min(m, h.level), 7);
  const numbered = bullet === '1.';
  const lines = headings.map((h) => {
    const label = h.text.replace(/([\\[\]])/g, '\\$1');
    const depth = h.level - top;
    const pad = ' '.repeat(depth * (numbered ? Math.max(indent, 3) : indent));
    return `${pad}${bullet} [${label}](#${h.anchor})`;
  });
  return { toc: lines.join('\n'), headings, count: headings.length };
}
