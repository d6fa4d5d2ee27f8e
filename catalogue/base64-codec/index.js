// base64-codec: encodes text to Base64 or decodes Base64 back to text.
//
// Text is handled as UTF-8 (implemented by hand: the engine has no
// TextEncoder/atob/btoa). Two alphabets: "standard" (RFC 4648 section 4, + and
// /, padded with =) and "url" (section 5, - and _, unpadded on output).
// Decoding ignores whitespace and accepts missing padding, but throws on
// characters outside the chosen alphabet, misplaced padding or an impossible
// length. Decoded bytes that are not valid UTF-8 are still returned: invalid
// sequences become U+FFFD, valid_utf8 is false, and the raw bytes are given
// as hex.

const ALPHABETS = {
  standard: 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/',
  url: 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_',
};

function utf8Encode(str) {
  const out = [];
  for (let i = 0; i < str.length; i++) {
    let cp = str.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < str.length && (str.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      cp = 0x10000 + ((cp - 0xd800) << 10) + (str.charCodeAt(++i) - 0xdc00);
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      cp = 0xfffd; // lone surrogate, as TextEncoder does
    }
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 63));
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
  }
  return out;
}

// Lenient UTF-8 decoder: malformed sequences become U+FFFD.
function utf8Decode(bytes) {
  let out = '';
  let valid = true;
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let need = 0;
    let cp = 0;
    let min = 0;
    if (b < 0x80) [need, cp] = [0, b];
    else if (b >= 0xc2 && b < 0xe0) [need, cp, min] = [1, b & 0x1f, 0x80];
    else if (b >= 0xe0 && b < 0xf0) [need, cp, min] = [2, b & 0x0f, 0x800];
    else if (b >= 0xf0 && b < 0xf5) [need, cp, min] = [3, b & 0x07, 0x10000];
    else need = -1;
    let k = 1;
    while (need > 0 && k <= need && i + k < bytes.length && (bytes[i + k] & 0xc0) === 0x80) {
      cp = (cp << 6) | (bytes[i + k] & 0x3f);
      k++;
    }
    const ok = need >= 0 && k === need + 1 && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (ok) {
      out += String.fromCodePoint(cp);
      i += k;
    } else {
      out += '\ufffd';
      valid = false;
      i += k; // skip the lead byte and any continuation bytes it consumed
    }
  }
  return { text: out, valid };
}

function encode(bytes, alphabet, pad) {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const left = bytes.length - i;
    out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63];
    out += left > 1 ? alphabet[(n >> 6) & 63] : pad ? '=' : '';
    out += left > 2 ? alphabet[n & 63] : pad ? '=' : '';
  }
  return out;
}

function decode(input, variant) {
  const alphabet = ALPHABETS[variant];
  const s = input.replace(/\s+/g, '');
  const padMatch = /=*$/.exec(s);
  const body = s.slice(0, s.length - padMatch[0].length);
  if (padMatch[0].length > 2 || (padMatch[0].length > 0 && s.length % 4 !== 0)) {
    throw new Error('invalid base64: wrong amount of "=" padding at the end');
  }
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (alphabet.indexOf(c) !== -1) continue;
    let hint = '';
    if (variant === 'standard' && (c === '-' || c === '_')) hint = ' (this looks like base64url: use variant "url")';
    if (variant === 'url' && (c === '+' || c === '/')) hint = ' (this looks like standard base64: use variant "standard")';
    if (c === '=') hint = ' ("=" padding may only appear at the end)';
    throw new Error(`invalid base64: character ${JSON.stringify(c)} at position ${i} is not in the ${variant} alphabet${hint}`);
  }
  if (body.length % 4 === 1) throw new Error(`invalid base64: length ${body.length} (without padding) is impossible`);
  const bytes = [];
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < body.length; i++) {
    buffer = ((buffer << 6) | alphabet.indexOf(body[i])) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return bytes;
}

function run(params) {
  const input = params.input;
  const mode = params.mode === undefined ? 'encode' : params.mode;
  const variant = params.variant === undefined ? 'standard' : params.variant;
  if (typeof input !== 'string') throw new Error('input must be a string');
  if (mode !== 'encode' && mode !== 'decode') throw new Error('mode must be "encode" or "decode"');
  if (!(variant in ALPHABETS)) throw new Error('variant must be "standard" or "url"');

  if (mode === 'encode') {
    const bytes = utf8Encode(input);
    return { output: encode(bytes, ALPHABETS[variant], variant === 'standard'), mode, variant, bytes: bytes.length };
  }
  const bytes = decode(input, variant);
  const { text, valid } = utf8Decode(bytes);
  const result = { output: text, mode, variant, bytes: bytes.length, valid_utf8: valid };
  if (!valid) result.hex = bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
  return result;
}
