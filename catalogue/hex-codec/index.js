// hex-codec: converts between text and hexadecimal, and renders hex dumps.
//
// Modes:
//   encode  text (as UTF-8 bytes) -> hex string, optional separator and case
//   decode  hex -> bytes -> text; tolerates whitespace, ':' '-' ',' separators
//           and 0x / \x prefixes; bytes that are not valid UTF-8 decode with
//           U+FFFD replacements and valid_utf8 false
//   dump    an xxd-style dump: offset, hex byte groups, ASCII column
// Bad hex (a stray character, an odd number of digits) throws with its position.

const MAX_DUMP_BYTES = 65536;

function utf8Encode(str) {
  const out = [];
  for (let i = 0; i < str.length; i++) {
    let cp = str.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < str.length) {
      const lo = str.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; // lone surrogate
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 63));
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
  }
  return out;
}

// Lenient UTF-8 decoder: each malformed sequence becomes one U+FFFD.
function utf8Decode(bytes) {
  let out = '';
  let valid = true;
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let need = 0;
    let cp = b;
    let min = 0;
    if (b >= 0xc2 && b <= 0xdf) [need, cp, min] = [1, b & 0x1f, 0x80];
    else if (b >= 0xe0 && b <= 0xef) [need, cp, min] = [2, b & 0x0f, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [need, cp, min] = [3, b & 0x07, 0x10000];
    else if (b >= 0x80) need = -1;
    let ok = need >= 0;
    let k = 1;
    for (; ok && k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) ok = false;
      else cp = (cp << 6) | (c & 0x3f);
    }
    let skip = Math.max(1, k - 1); // a bad continuation byte starts the next attempt
    if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) [ok, skip] = [false, 1];
    if (ok) {
      out += String.fromCodePoint(cp);
      i += need + 1;
    } else {
      out += '\ufffd';
      valid = false;
      i += skip;
    }
  }
  return { text: out, valid };
}

// Reads hex digits from `s`, skipping separators and prefixes; throws with the
// 0-based position of the first offending character.
function parseHex(s) {
  const bytes = [];
  let pending = -1; // first nibble of a byte, or -1
  let pendingPos = 0;
  let tokenStart = true; // at the start of a token (prefixes allowed)
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (/[\s:,;-]/.test(c)) {
      tokenStart = true;
      continue;
    }
    // "0x" may start a token; "\x" may start any byte ("\x41\x42").
    if (pending === -1 && ((tokenStart && c === '0') || c === '\\') && (s[i + 1] === 'x' || s[i + 1] === 'X')) {
      i++;
      tokenStart = false;
      continue;
    }
    tokenStart = false;
    const v = parseInt(c, 16);
    if (Number.isNaN(v)) throw new Error(`invalid hex character ${JSON.stringify(c)} at position ${i} (0-based)`);
    if (pending === -1) {
      pending = v;
      pendingPos = i;
    } else {
      bytes.push((pending << 4) | v);
      pending = -1;
    }
  }
  if (pending !== -1) {
    throw new Error(`odd number of hex digits: the digit at position ${pendingPos} (0-based) has no partner (each byte needs 2 digits)`);
  }
  return bytes;
}

const hex2 = (b, upper) => {
  const h = b.toString(16).padStart(2, '0');
  return upper ? h.toUpperCase() : h;
};

// xxd layout: "00000010: 6865 6c6c 6f0a  hello."
function dump(bytes, perLine, groupSize, upper) {
  const lines = [];
  const groupsPerLine = Math.ceil(perLine / groupSize);
  const hexWidth = perLine * 2 + groupsPerLine - 1;
  for (let off = 0; off < bytes.length; off += perLine) {
    const row = bytes.slice(off, off + perLine);
    const groups = [];
    for (let g = 0; g < row.length; g += groupSize) groups.push(row.slice(g, g + groupSize).map((b) => hex2(b, upper)).join(''));
    const ascii = row.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    const offset = off.toString(16).padStart(8, '0');
    lines.push(`${upper ? offset.toUpperCase() : offset}: ${groups.join(' ').padEnd(hexWidth, ' ')}  ${ascii}`);
  }
  return lines.join('\n');
}

function run(params) {
  const mode = params.mode === undefined ? 'encode' : params.mode;
  const input = params.input;
  if (typeof input !== 'string') throw new Error('input must be a string');
  const upper = params.uppercase === true;

  if (mode === 'encode') {
    const sep = params.separator === undefined ? '' : params.separator;
    if (!['', ' ', ':', '-'].includes(sep)) throw new Error('separator must be "", " ", ":" or "-"');
    const bytes = utf8Encode(input);
    return { mode, output: bytes.map((b) => hex2(b, upper)).join(sep), bytes: bytes.length };
  }
  if (mode === 'decode') {
    const bytes = parseHex(input);
    const { text, valid } = utf8Decode(bytes);
    return { mode, output: text, bytes: bytes.length, valid_utf8: valid };
  }
  if (mode === 'dump') {
    const perLine = params.bytes_per_line === undefined ? 16 : params.bytes_per_line;
    const groupSize = params.group_size === undefined ? 2 : params.group_size;
    if (!Number.isInteger(perLine) || perLine < 1 || perLine > 64) throw new Error('bytes_per_line must be an integer from 1 to 64');
    if (![1, 2, 4, 8, 16].includes(groupSize)) throw new Error('group_size must be 1, 2, 4, 8 or 16');
    const format = params.input_format === undefined ? 'text' : params.input_format;
    if (format !== 'text' && format !== 'hex') throw new Error('input_format must be text or hex');
    const bytes = format === 'hex' ? parseHex(input) : utf8Encode(input);
    if (bytes.length > MAX_DUMP_BYTES) throw new Error(`dump is limited to ${MAX_DUMP_BYTES} bytes; the input has ${bytes.length}`);
    return { mode, output: dump(bytes, perLine, groupSize, upper), bytes: bytes.length };
  }
  throw new Error('mode must be encode, decode or dump');
}
