// number-base: converts integers of any size between bases 2 and 36.
//
// The input is parsed into a BigInt: an optional sign, then 0x / 0o / 0b
// prefixes are recognised when `from` is not given (otherwise base 10), and
// digit separators (_ , ' and spaces) are ignored. The value is then written in
// the target base (`to`), and always in binary, octal, decimal and hex. With a
// `bit_width` the two's complement bit pattern is shown too, with both its
// unsigned and its signed reading, so -1 at 8 bits is 11111111 / 0xff / 255.

const PREFIXES = { x: 16, o: 8, b: 2 };
const PREFIX_OF = { 16: '0x', 8: '0o', 2: '0b' };
const DEFAULT_GROUP = { 2: 4, 8: 3, 10: 3, 16: 4 };
const MAX_DIGITS = 10000;

// Parses `text` in `base` (or a detected one); returns { value, base, how }.
function parse(text, fromBase) {
  let s = text.trim();
  let negative = false;
  let offset = text.indexOf(s); // where s starts inside text, for error positions
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    s = s.slice(1);
    offset++;
  }
  let base = fromBase;
  let how = fromBase === undefined ? 'default' : 'given';
  const p = /^0([xob])/i.exec(s);
  if (p) {
    const prefBase = PREFIXES[p[1].toLowerCase()];
    if (fromBase === undefined || fromBase === prefBase) {
      base = prefBase;
      how = fromBase === undefined ? `prefix ${p[0].toLowerCase()}` : 'given';
      s = s.slice(2);
      offset += 2;
    }
  }
  if (base === undefined) base = 10;

  let digits = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '_' || c === ' ' || c === ',' || c === "'") continue;
    const d = parseInt(c, 36);
    if (Number.isNaN(d) || d >= base) {
      const what = Number.isNaN(d) ? 'character' : `digit for base ${base}`;
      throw new Error(`invalid ${what} ${JSON.stringify(c)} at position ${offset + i} of value (0-based)`);
    }
    digits += c;
  }
  if (digits === '') throw new Error('value has no digits');
  if (digits.length > MAX_DIGITS) throw new Error(`value has ${digits.length} digits; at most ${MAX_DIGITS} are supported`);

  // Accumulate in chunks small enough for exact Number arithmetic.
  let chunk = 1;
  while (Math.pow(base, chunk + 1) < 2 ** 52) chunk++;
  let value = 0n;
  for (let i = 0; i < digits.length; i += chunk) {
    const part = digits.slice(i, i + chunk);
    value = value * BigInt(base) ** BigInt(part.length) + BigInt(parseInt(part, base));
  }
  return { value: negative ? -value : value, base, how };
}

// Groups a digit string from the right: "11111111" -> "1111_1111".
function group(digits, size, sep) {
  if (!size || digits.length <= size) return digits;
  const head = digits.length % size || size;
  const out = [digits.slice(0, head)];
  for (let i = head; i < digits.length; i += size) out.push(digits.slice(i, i + size));
  return out.join(sep);
}

function bitLength(v) {
  return v === 0n ? 0 : (v < 0n ? -v : v).toString(2).length;
}

function run(params) {
  const raw = params.value;
  let text;
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw)) throw new Error('numeric value must be a safe integer (|n| < 2^53); pass larger numbers as a string');
    text = String(raw);
  } else if (typeof raw === 'string') text = raw;
  else throw new Error('value must be a string or an integer');

  const from = params.from;
  if (from !== undefined && (!Number.isInteger(from) || from < 2 || from > 36)) throw new Error('from must be an integer from 2 to 36');
  const to = params.to === undefined ? 'all' : params.to;
  if (to !== 'all' && (!Number.isInteger(to) || to < 2 || to > 36)) throw new Error('to must be an integer from 2 to 36 or "all"');
  const width = params.bit_width;
  if (width !== undefined && ![8, 16, 32, 64, 128].includes(width)) throw new Error('bit_width must be 8, 16, 32, 64 or 128');
  const upper = params.uppercase === true;
  const wantGroups = params.group === true;
  const sep = params.separator === undefined ? '_' : String(params.separator);
  const withPrefix = params.prefix === true;
  if (params.group_size !== undefined && (!Number.isInteger(params.group_size) || params.group_size < 1 || params.group_size > 16)) {
    throw new Error('group_size must be an integer from 1 to 16');
  }

  const { value, base, how } = parse(text, from);
  const negative = value < 0n;

  // Writes a magnitude (BigInt >= 0) in `b`, with the options applied; `pad` zero-pads.
  const render = (mag, b, pad = 0) => {
    let digits = mag.toString(b);
    if (upper) digits = digits.toUpperCase();
    digits = digits.padStart(pad, '0');
    if (wantGroups) digits = group(digits, params.group_size || DEFAULT_GROUP[b] || 4, sep);
    return (withPrefix && PREFIX_OF[b] ? PREFIX_OF[b] : '') + digits;
  };
  const convert = (b) => (negative ? '-' : '') + render(negative ? -value : value, b);

  const result = {
    from: base,
    from_detected: how,
    to,
    negative,
    bit_length: bitLength(value),
    conversions: { binary: convert(2), octal: convert(8), decimal: convert(10), hexadecimal: convert(16) },
    twos_complement: null,
  };
  if (to !== 'all') result.result = convert(to);

  if (width !== undefined) {
    const w = BigInt(width);
    const min = -(1n << (w - 1n));
    const max = (1n << w) - 1n;
    if (value < min || value > max) {
      throw new Error(`${value} does not fit in ${width} bits (range ${min} to ${max}, signed or unsigned)`);
    }
    const pattern = negative ? (1n << w) + value : value;
    const signed = pattern >= 1n << (w - 1n) ? pattern - (1n << w) : pattern;
    result.twos_complement = {
      bit_width: width,
      binary: render(pattern, 2, width),
      hexadecimal: render(pattern, 16, width / 4),
      unsigned: pattern.toString(),
      signed: signed.toString(),
    };
  }
  return result;
}
