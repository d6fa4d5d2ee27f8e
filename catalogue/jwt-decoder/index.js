// jwt-decoder: decodes a JSON Web Token (JWS compact form) for inspection.
//
// Splits the token into header.payload.signature, base64url-decodes the first
// two segments, decodes them as UTF-8 and parses them as JSON. The signature
// is NOT verified (no key is involved): the result always says
// signature_verified: false. Time claims (exp, iat, nbf) are converted to ISO
// 8601 and checked against `now` (seconds since the epoch) or the current time.
// A malformed token throws an Error saying which part is wrong.

const B64_VALUES = (() => {
  const table = new Map();
  const std = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  for (let i = 0; i < std.length; i++) table.set(std[i], i);
  // Accept both the URL-safe and the standard alphabet: some issuers get it wrong.
  table.set('-', 62).set('_', 63).set('+', 62).set('/', 63);
  return table;
})();

function base64UrlToBytes(segment, what) {
  const s = segment.replace(/=+$/, '');
  if (s.length % 4 === 1) throw new Error(`${what} is not valid base64url: its length is impossible`);
  const bytes = [];
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const v = B64_VALUES.get(s[i]);
    if (v === undefined) throw new Error(`${what} is not valid base64url: bad character ${JSON.stringify(s[i])} at ${i}`);
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push((buffer >> bits) & 0xff);
    }
  }
  return bytes;
}

// Strict UTF-8 decoder: throws on malformed sequences.
function utf8Decode(bytes, what) {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let cp;
    let extra;
    if (b < 0x80) [cp, extra] = [b, 0];
    else if (b >= 0xc2 && b < 0xe0) [cp, extra] = [b & 0x1f, 1];
    else if (b >= 0xe0 && b < 0xf0) [cp, extra] = [b & 0x0f, 2];
    else if (b >= 0xf0 && b < 0xf5) [cp, extra] = [b & 0x07, 3];
    else throw new Error(`${what} is not valid UTF-8 (byte 0x${b.toString(16)} at ${i})`);
    for (let k = 1; k <= extra; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) throw new Error(`${what} is not valid UTF-8 (truncated sequence at ${i})`);
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((extra === 2 && cp < 0x800) || (extra === 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
      throw new Error(`${what} is not valid UTF-8 (overlong or surrogate sequence at ${i})`);
    }
    out += String.fromCodePoint(cp);
    i += extra + 1;
  }
  return out;
}

function decodeJsonSegment(segment, what) {
  if (segment === '') throw new Error(`${what} segment is empty`);
  const text = utf8Decode(base64UrlToBytes(segment, `${what} segment`), what);
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not valid JSON: ${e.message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${what} must be a JSON object`);
  }
  return value;
}

function isoFromSeconds(sec) {
  const ms = sec * 1000;
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : null;
}

function run(params) {
  if (typeof params.token !== 'string') throw new Error('token must be a string');
  const token = params.token.trim().replace(/^Bearer\s+/i, '');
  const parts = token.split('.');
  if (parts.length === 5) throw new Error('this is an encrypted JWT (JWE, 5 segments); it cannot be decoded without the key');
  if (parts.length !== 3) {
    throw new Error(`a JWT has 3 dot-separated segments (header.payload.signature); this token has ${parts.length}`);
  }

  const header = decodeJsonSegment(parts[0], 'header');
  const payload = decodeJsonSegment(parts[1], 'payload');
  const signature = parts[2];
  if (signature !== '' && !/^[A-Za-z0-9_-]+=*$/.test(signature)) throw new Error('signature segment is not valid base64url');

  const nowSec = typeof params.now === 'number' ? params.now : Date.now() / 1000;
  const warnings = [];
  const algorithm = typeof header.alg === 'string' ? header.alg : null;
  if (algorithm === null) warnings.push('header has no "alg" string');
  else if (algorithm.toLowerCase() === 'none') warnings.push('alg is "none": the token is unsigned and must not be trusted');
  if (signature === '' && algorithm !== null && algorithm.toLowerCase() !== 'none') {
    warnings.push(`signature is empty although alg is ${algorithm}`);
  }

  const timestamps = {};
  for (const claim of ['iat', 'nbf', 'exp']) {
    if (!(claim in payload)) continue;
    const v = payload[claim];
    const iso = typeof v === 'number' && Number.isFinite(v) ? isoFromSeconds(v) : null;
    if (iso === null) warnings.push(`${claim} claim is not a valid NumericDate (seconds since epoch): ${JSON.stringify(v)}`);
    else timestamps[claim] = iso;
  }

  const hasExp = 'exp' in timestamps;
  const hasNbf = 'nbf' in timestamps;
  return {
    header,
    payload,
    signature,
    signature_verified: false,
    algorithm,
    timestamps,
    expired: hasExp ? nowSec >= payload.exp : null,
    expires_in_seconds: hasExp ? Math.floor(payload.exp - nowSec) : null,
    not_yet_valid: hasNbf ? nowSec < payload.nbf : null,
    checked_at: isoFromSeconds(nowSec),
    warnings,
  };
}
