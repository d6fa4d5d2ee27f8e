// hash-digest: MD5, SHA-1, SHA-224 and SHA-256 digests of UTF-8 text.
//
// The engine has no crypto module, so the algorithms are implemented here by
// hand from RFC 1321 (MD5), FIPS 180-4 (SHA-1, SHA-224, SHA-256). Text is
// encoded as UTF-8 first (lone surrogates become U+FFFD, as TextEncoder does).
// Digests are given in lowercase hex or Base64. An optional `expected` digest
// (hex in any case, or Base64) is compared to verify a checksum.

const ALGORITHMS = ['md5', 'sha1', 'sha224', 'sha256'];
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// UTF-8 encoding into a Uint8Array (lone surrogates become U+FFFD).
function utf8Encode(str) {
  const out = new Uint8Array(str.length * 3);
  let n = 0;
  for (let i = 0; i < str.length; i++) {
    let cp = str.charCodeAt(i);
    if (cp < 0x80) {
      out[n++] = cp;
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < str.length && (str.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      cp = 0x10000 + ((cp - 0xd800) << 10) + (str.charCodeAt(++i) - 0xdc00);
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      cp = 0xfffd;
    }
    if (cp < 0x800) {
      out[n++] = 0xc0 | (cp >> 6);
    } else if (cp < 0x10000) {
      out[n++] = 0xe0 | (cp >> 12);
      out[n++] = 0x80 | ((cp >> 6) & 63);
    } else {
      out[n++] = 0xf0 | (cp >> 18);
      out[n++] = 0x80 | ((cp >> 12) & 63);
      out[n++] = 0x80 | ((cp >> 6) & 63);
    }
    out[n++] = 0x80 | (cp & 63);
  }
  return out.subarray(0, n);
}

// Appends the Merkle-Damgard padding (0x80, zeros, the bit length as a 64-bit
// integer) and packs the message into 32-bit words, big- or little-endian.
function padToWords(bytes, bigEndian) {
  const len = bytes.length;
  const total = (Math.floor((len + 8) / 64) + 1) * 64;
  const padded = new Uint8Array(total);
  padded.set(bytes);
  padded[len] = 0x80;
  const bitsHi = Math.floor(len / 0x20000000); // len * 8 / 2^32
  const bitsLo = (len * 8) >>> 0;
  for (let i = 0; i < 4; i++) {
    const hiByte = (bitsHi >>> (8 * (3 - i))) & 255;
    const loByte = (bitsLo >>> (8 * (3 - i))) & 255;
    if (bigEndian) {
      padded[total - 8 + i] = hiByte;
      padded[total - 4 + i] = loByte;
    } else {
      padded[total - 1 - i] = hiByte;
      padded[total - 5 - i] = loByte;
    }
  }
  const words = new Int32Array(total / 4);
  for (let i = 0, b = 0; i < words.length; i++, b += 4) {
    words[i] = bigEndian
      ? (padded[b] << 24) | (padded[b + 1] << 16) | (padded[b + 2] << 8) | padded[b + 3]
      : padded[b] | (padded[b + 1] << 8) | (padded[b + 2] << 16) | (padded[b + 3] << 24);
  }
  return words;
}

function wordsToBytes(words, bigEndian) {
  const out = [];
  for (const w of words) {
    if (bigEndian) out.push((w >>> 24) & 255, (w >>> 16) & 255, (w >>> 8) & 255, w & 255);
    else out.push(w & 255, (w >>> 8) & 255, (w >>> 16) & 255, (w >>> 24) & 255);
  }
  return out;
}

// MD5 (RFC 1321).
const MD5_S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const MD5_K = new Int32Array(64);
for (let i = 0; i < 64; i++) MD5_K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 0x100000000);

function md5(bytes) {
  const w = padToWords(bytes, false);
  let a0 = 0x67452301, b0 = 0xefcdab89 | 0, c0 = 0x98badcfe | 0, d0 = 0x10325476;
  for (let off = 0; off < w.length; off += 16) {
    let a = a0, b = b0, c = c0, d = d0;
    for (let i = 0; i < 64; i++) {
      let f, g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      const x = (a + f + MD5_K[i] + w[off + g]) | 0;
      const s = MD5_S[((i >> 4) << 2) | (i & 3)];
      a = d;
      d = c;
      c = b;
      b = (b + ((x << s) | (x >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  return wordsToBytes([a0, b0, c0, d0], false);
}

// SHA-1 (FIPS 180-4, 6.1).
function sha1(bytes) {
  const m = padToWords(bytes, true);
  let h0 = 0x67452301, h1 = 0xefcdab89 | 0, h2 = 0x98badcfe | 0, h3 = 0x10325476, h4 = 0xc3d2e1f0 | 0;
  const w = new Int32Array(80);
  for (let off = 0; off < m.length; off += 16) {
    for (let t = 0; t < 16; t++) w[t] = m[off + t];
    for (let t = 16; t < 80; t++) {
      const x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4;
    for (let t = 0; t < 80; t++) {
      let f;
      if (t < 20) f = ((b & c) | (~b & d)) + 0x5a827999;
      else if (t < 40) f = (b ^ c ^ d) + 0x6ed9eba1;
      else if (t < 60) f = ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdc;
      else f = (b ^ c ^ d) + 0xca62c1d6;
      const tmp = (((a << 5) | (a >>> 27)) + f + e + w[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = tmp;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  return wordsToBytes([h0, h1, h2, h3, h4], true);
}

// SHA-256 and SHA-224 (FIPS 180-4, 6.2 and 6.3): the same compression with
// different initial values; SHA-224 keeps the first 7 words.
const K256 = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV256 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const IV224 = [0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939, 0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4];

function sha2(bytes, iv, outWords) {
  const m = padToWords(bytes, true);
  const h = new Int32Array(iv);
  const w = new Int32Array(64);
  for (let off = 0; off < m.length; off += 16) {
    for (let t = 0; t < 16; t++) w[t] = m[off + t];
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15];
      const y = w[t - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + S1 + ((e & f) ^ (~e & g)) + K256[t] + w[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  return wordsToBytes(Array.from(h.subarray(0, outWords)), true);
}

const DIGEST = {
  md5,
  sha1,
  sha224: (bytes) => sha2(bytes, IV224, 7),
  sha256: (bytes) => sha2(bytes, IV256, 8),
};

function toHex(bytes) {
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
}

function toBase64(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const left = bytes.length - i;
    out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
    out += left > 1 ? B64[(n >> 6) & 63] : '=';
    out += left > 2 ? B64[n & 63] : '=';
  }
  return out;
}

function run(params) {
  const text = params.text;
  const algorithm = params.algorithm === undefined ? 'sha256' : params.algorithm;
  const encoding = params.encoding === undefined ? 'hex' : params.encoding;
  if (typeof text !== 'string') throw new Error('text must be a string');
  if (algorithm !== 'all' && !ALGORITHMS.includes(algorithm)) {
    throw new Error(`algorithm must be one of ${ALGORITHMS.join(', ')} or all`);
  }
  if (encoding !== 'hex' && encoding !== 'base64') throw new Error('encoding must be "hex" or "base64"');

  const bytes = utf8Encode(text);
  const names = algorithm === 'all' ? ALGORITHMS : [algorithm];
  const raw = {};
  const digests = {};
  for (const name of names) {
    raw[name] = DIGEST[name](bytes);
    digests[name] = encoding === 'hex' ? toHex(raw[name]) : toBase64(raw[name]);
  }
  const result = { algorithm, encoding, bytes: bytes.length, digests };

  // Checksum verification: the expected digest may be hex (any case) or Base64,
  // whatever the output encoding.
  if (params.expected !== undefined) {
    const expected = String(params.expected).trim();
    const same = (n) => toHex(raw[n]) === expected.toLowerCase() || toBase64(raw[n]) === expected;
    const hit = names.find(same);
    result.match = { matches: hit !== undefined, algorithm: hit === undefined ? null : hit };
  }
  return result;
}
