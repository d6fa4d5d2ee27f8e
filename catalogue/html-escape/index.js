// html-escape: escapes text for HTML, decodes HTML entities, or strips tags.
//
//   escape    & < > " ' become &amp; &lt; &gt; &quot; &#39; (safe in element
//             content and in quoted attribute values); optionally every
//             non-ASCII character becomes a numeric reference too.
//   unescape  decodes named references from an embedded table (all 253 HTML 4
//             entities plus about 100 common HTML5 additions) and decimal/hex
//             numeric references, following the HTML5 rules for
//             missing semicolons, invalid code points and the 0x80-0x9F range.
//   strip     removes tags, comments and <script>/<style> content, turns block
//             elements and <br> into line breaks, and decodes entities.

// HTML 4 Latin-1 entities, code points 160..255 in order.
const LATIN1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute ' +
  'micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig ' +
  'Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash ' +
  'Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ' +
  'ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc ' +
  'uuml yacute thorn yuml';
// Greek capitals 913..937 (no 930) and small letters 945..969.
const GREEK_UPPER = 'Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho - Sigma Tau Upsilon Phi Chi Psi Omega';
const GREEK_LOWER = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigmaf sigma tau upsilon phi chi psi omega';
// Everything else as name:decimal code point.
const OTHERS =
  'quot:34 amp:38 lt:60 gt:62 apos:39 OElig:338 oelig:339 Scaron:352 scaron:353 Yuml:376 fnof:402 circ:710 ' +
  'tilde:732 thetasym:977 upsih:978 piv:982 ensp:8194 emsp:8195 thinsp:8201 zwnj:8204 zwj:8205 lrm:8206 rlm:8207 ' +
  'ndash:8211 mdash:8212 lsquo:8216 rsquo:8217 sbquo:8218 ldquo:8220 rdquo:8221 bdquo:8222 dagger:8224 ' +
  'Dagger:8225 bull:8226 hellip:8230 permil:8240 prime:8242 Prime:8243 lsaquo:8249 rsaquo:8250 oline:8254 ' +
  'frasl:8260 euro:8364 image:8465 weierp:8472 real:8476 trade:8482 alefsym:8501 larr:8592 uarr:8593 rarr:8594 ' +
  'darr:8595 harr:8596 crarr:8629 lArr:8656 uArr:8657 rArr:8658 dArr:8659 hArr:8660 forall:8704 part:8706 ' +
  'exist:8707 empty:8709 nabla:8711 isin:8712 notin:8713 ni:8715 prod:8719 sum:8721 minus:8722 lowast:8727 ' +
  'radic:8730 prop:8733 infin:8734 ang:8736 and:8743 or:8744 cap:8745 cup:8746 int:8747 there4:8756 sim:8764 ' +
  'cong:8773 asymp:8776 ne:8800 equiv:8801 le:8804 ge:8805 sub:8834 sup:8835 nsub:8836 sube:8838 supe:8839 ' +
  'oplus:8853 otimes:8855 perp:8869 sdot:8901 lceil:8968 rceil:8969 lfloor:8970 rfloor:8971 lang:10216 ' +
  'rang:10217 loz:9674 spades:9824 clubs:9827 hearts:9829 diams:9830 ' +
  // Common HTML5 additions.
  'Tab:9 NewLine:10 excl:33 QUOT:34 num:35 dollar:36 percnt:37 AMP:38 lpar:40 rpar:41 ast:42 midast:42 plus:43 ' +
  'comma:44 period:46 sol:47 colon:58 semi:59 LT:60 equals:61 GT:62 quest:63 commat:64 lsqb:91 lbrack:91 ' +
  'bsol:92 rsqb:93 rbrack:93 Hat:94 lowbar:95 UnderBar:95 grave:96 DiacriticalGrave:96 lcub:123 lbrace:123 ' +
  'verbar:124 vert:124 VerticalLine:124 rcub:125 rbrace:125 NonBreakingSpace:160 COPY:169 REG:174 pm:177 ' +
  'centerdot:183 half:189 div:247 hyphen:8208 dash:8208 horbar:8213 Vert:8214 rsquor:8217 lsquor:8218 ' +
  'rdquor:8221 ldquor:8222 bullet:8226 nldr:8229 mldr:8230 caret:8257 incare:8453 hbar:8463 planck:8463 ' +
  'ell:8467 numero:8470 copysr:8471 TRADE:8482 ohm:937 mho:8487 angst:197 frac13:8531 frac23:8532 frac15:8533 ' +
  'frac18:8539 frac38:8540 frac58:8541 frac78:8542 leftarrow:8592 uparrow:8593 rightarrow:8594 downarrow:8595 ' +
  'leftrightarrow:8596 Leftarrow:8656 Rightarrow:8658 Leftrightarrow:8660 iff:8660 setminus:8726 compfn:8728 ' +
  'approx:8776 nequiv:8802 leq:8804 geq:8805 subset:8834 supset:8835 emptyset:8709 in:8712 ' +
  'blank:9251 squ:9633 square:9633 rect:9645 utri:9653 rtri:9657 dtri:9663 ltri:9667 cir:9675 lozenge:9674 ' +
  'starf:9733 bigstar:9733 star:9734 phone:9742 female:9792 male:9794 spadesuit:9824 clubsuit:9827 ' +
  'heartsuit:9829 diamondsuit:9830 flat:9837 natural:9838 sharp:9839 check:10003 checkmark:10003 cross:10007 ' +
  'sext:10038 langle:10216 rangle:10217';

const ENTITIES = new Map();
LATIN1.split(' ').forEach((n, i) => ENTITIES.set(n, 160 + i));
GREEK_UPPER.split(' ').forEach((n, i) => n !== '-' && ENTITIES.set(n, 913 + i));
GREEK_LOWER.split(' ').forEach((n, i) => ENTITIES.set(n, 945 + i));
for (const pair of OTHERS.split(' ')) {
  const [n, cp] = pair.split(':');
  ENTITIES.set(n, Number(cp));
}

// HTML5 decodes these names even without the trailing semicolon (legacy).
const LEGACY = new Set(['amp', 'lt', 'gt', 'quot', 'AMP', 'LT', 'GT', 'QUOT', 'COPY', 'REG', ...LATIN1.split(' ')]);

// Windows-1252 meanings of numeric references 0x80-0x9F, as HTML5 requires.
const C1 = {
  0x80: 0x20ac, 0x82: 0x201a, 0x83: 0x192, 0x84: 0x201e, 0x85: 0x2026, 0x86: 0x2020, 0x87: 0x2021, 0x88: 0x2c6,
  0x89: 0x2030, 0x8a: 0x160, 0x8b: 0x2039, 0x8c: 0x152, 0x8e: 0x17d, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201c,
  0x94: 0x201d, 0x95: 0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: 0x2dc, 0x99: 0x2122, 0x9a: 0x161, 0x9b: 0x203a,
  0x9c: 0x153, 0x9e: 0x17e, 0x9f: 0x178,
};

function numericChar(cp) {
  if (C1[cp] !== undefined) return String.fromCodePoint(C1[cp]);
  if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
  return String.fromCodePoint(cp);
}

// Decodes character references; records names it could not decode.
function decode(text, stats) {
  return text.replace(/&(#[xX][0-9a-fA-F]*;?|#[0-9]*;?|[A-Za-z][A-Za-z0-9]*;?)/g, (m, body) => {
    if (body[0] === '#') {
      const hex = body[1] === 'x' || body[1] === 'X';
      const digits = body.slice(hex ? 2 : 1).replace(/;$/, '');
      if (digits === '') return m; // "&#;" or "&#x" is not a reference
      stats.count++;
      const sig = digits.replace(/^0+(?=.)/, '');
      return numericChar(sig.length > 8 ? 0x110000 : parseInt(sig, hex ? 16 : 10));
    }
    const semi = body.endsWith(';');
    const name = semi ? body.slice(0, -1) : body;
    if (semi && ENTITIES.has(name)) {
      stats.count++;
      return String.fromCodePoint(ENTITIES.get(name));
    }
    // Longest legacy prefix without a semicolon: "&copy2024" -> "©2024".
    for (let len = Math.min(name.length, 6); len >= 2; len--) { // legacy names are 2-6 letters
      const prefix = name.slice(0, len);
      if (LEGACY.has(prefix)) {
        stats.count++;
        return String.fromCodePoint(ENTITIES.get(prefix)) + body.slice(len);
      }
    }
    if (semi && !stats.unknown.includes(m) && stats.unknown.length < 50) stats.unknown.push(m);
    return m;
  });
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escape(text, nonAscii, hex, stats) {
  let out = '';
  for (const ch of text) {
    if (ESC[ch]) {
      out += ESC[ch];
      stats.count++;
    } else if (nonAscii && ch.codePointAt(0) > 0x7e) {
      const cp = ch.codePointAt(0);
      out += hex ? `&#x${cp.toString(16).toUpperCase()};` : `&#${cp};`;
      stats.count++;
    } else out += ch;
  }
  return out;
}

const BLOCK = /^(p|div|br|li|ul|ol|tr|table|h[1-6]|section|article|header|footer|nav|aside|main|blockquote|pre|hr|dt|dd|dl|figure|figcaption|form|fieldset|address|details|summary|title)$/i;

const RAW_TEXT = /^(script|style|template|noscript)$/i;

// Removes markup with a single left-to-right scan (linear even on hostile input).
function strip(html, stats) {
  let out = '';
  let i = 0;
  const n = html.length;
  const TAG = /<(\/?)([A-Za-z][A-Za-z0-9:-]*)/y;
  while (i < n) {
    const j = html.indexOf('<', i);
    if (j < 0) {
      out += html.slice(i);
      break;
    }
    out += html.slice(i, j);
    let end; // index just past the construct starting at j
    if (html.startsWith('<!--', j)) {
      const k = html.indexOf('-->', j + 4);
      end = k < 0 ? n : k + 3;
    } else if (html.startsWith('<![CDATA[', j)) {
      const k = html.indexOf(']]>', j + 9);
      out += html.slice(j + 9, k < 0 ? n : k);
      end = k < 0 ? n : k + 3;
    } else if (html[j + 1] === '!' || html[j + 1] === '?') {
      const k = html.indexOf('>', j);
      end = k < 0 ? n : k + 1;
    } else {
      TAG.lastIndex = j;
      const m = TAG.exec(html);
      if (!m) {
        out += '<'; // a lone "<" is text
        i = j + 1;
        continue;
      }
      // Find the closing '>', skipping quoted attribute values (quotes count only after '=').
      let k = TAG.lastIndex;
      let quote = '';
      let prev = '';
      for (; k < n; k++) {
        const c = html[k];
        if (quote) {
          if (c === quote) quote = '';
        } else if ((c === '"' || c === "'") && prev === '=') quote = c;
        else if (c === '>') break;
        if (!/\s/.test(c)) prev = c;
      }
      end = Math.min(k + 1, n);
      const name = m[2];
      if (!m[1] && RAW_TEXT.test(name)) {
        // Drop everything up to the matching end tag.
        const close = new RegExp(`</${name}\\s*>`, 'ig');
        close.lastIndex = end;
        const c = close.exec(html);
        end = c ? close.lastIndex : n;
      } else if (/^li$/i.test(name)) out += m[1] ? '' : '\n• ';
      else if (BLOCK.test(name)) out += '\n';
    }
    stats.count++;
    i = end;
  }
  return decode(out, { count: 0, unknown: [] })
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/[ \t\f\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function run(params) {
  const text = params.text;
  if (typeof text !== 'string') throw new Error('text must be a string');
  const mode = params.mode === undefined ? 'escape' : params.mode;
  const stats = { count: 0, unknown: [] };
  let output;
  if (mode === 'escape') {
    const numeric = params.numeric_format === undefined ? 'decimal' : params.numeric_format;
    if (numeric !== 'decimal' && numeric !== 'hex') throw new Error('numeric_format must be decimal or hex');
    output = escape(text, params.escape_non_ascii === true, numeric === 'hex', stats);
  } else if (mode === 'unescape') output = decode(text, stats);
  else if (mode === 'strip') output = strip(text, stats);
  else throw new Error('mode must be escape, unescape or strip');
  const result = { output, mode, changes: stats.count };
  if (mode === 'unescape') result.unknown_entities = stats.unknown;
  return result;
}
