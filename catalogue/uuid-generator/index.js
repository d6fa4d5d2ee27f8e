// uuid-generator: generates random (version 4) UUIDs, or validates a UUID.
//
// generate: 122 random bits per UUID with the version nibble set to 4 and the
// variant bits to 10 (RFC 9562). With an integer `seed` the bits come from a
// seeded sfc32 generator, so the same seed and count always give the same
// UUIDs (handy for fixtures); without one they come from Math.random. Neither
// is a cryptographically secure source: do not use these as secrets.
// validate: accepts the canonical 8-4-4-4-12 form, {braces}, a urn:uuid:
// prefix or 32 bare hex digits, and reports version, variant, nil/max, and
// for time-based versions 1, 6 and 7 the embedded timestamp.

const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// sfc32 seeded through splitmix32, so nearby seeds give unrelated streams.
function seededBytes(seed) {
  let s = seed >>> 0;
  const mix = () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = mix(), b = mix(), c = mix(), d = 1;
  const next32 = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 12; i++) next32(); // discard the warm-up outputs
  return () => {
    const bytes = [];
    for (let i = 0; i < 4; i++) {
      const w = next32();
      bytes.push(w >>> 24, (w >>> 16) & 255, (w >>> 8) & 255, w & 255);
    }
    return bytes;
  };
}

function randomBytes() {
  const bytes = [];
  for (let i = 0; i < 16; i++) bytes.push(Math.floor(Math.random() * 256));
  return bytes;
}

function format(bytes, hyphens, uppercase) {
  bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // variant 10xx
  const hex = bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
  const out = hyphens
    ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
    : hex;
  return uppercase ? out.toUpperCase() : out;
}

function generate(params) {
  const count = params.count === undefined ? 1 : params.count;
  if (!Number.isInteger(count) || count < 1 || count > 100) throw new Error('count must be an integer from 1 to 100');
  const seeded = params.seed !== undefined;
  if (seeded && (!Number.isInteger(params.seed) || params.seed < 0 || params.seed > 4294967295)) {
    throw new Error('seed must be an integer from 0 to 4294967295');
  }
  const source = seeded ? seededBytes(params.seed) : randomBytes;
  const uuids = [];
  for (let i = 0; i < count; i++) uuids.push(format(source(), params.hyphens !== false, params.uppercase === true));
  return { mode: 'generate', uuids, count, seeded };
}

function variantOf(byte8) {
  if ((byte8 & 0x80) === 0) return 'NCS (reserved)';
  if ((byte8 & 0xc0) === 0x80) return 'RFC 9562';
  if ((byte8 & 0xe0) === 0xc0) return 'Microsoft (reserved)';
  return 'future (reserved)';
}

// Milliseconds since the Unix epoch embedded in a v1, v6 or v7 UUID.
function timestampMs(hex, version) {
  if (version === 7) return Number(BigInt('0x' + hex.slice(0, 12)));
  let ticks; // 100-ns intervals since 1582-10-15
  if (version === 1) ticks = BigInt('0x' + hex.slice(13, 16) + hex.slice(8, 12) + hex.slice(0, 8));
  else ticks = BigInt('0x' + hex.slice(0, 8) + hex.slice(8, 12) + hex.slice(13, 16));
  return Number((ticks - 122192928000000000n) / 10000n);
}

function validate(params) {
  if (typeof params.uuid !== 'string') throw new Error('validate mode needs `uuid`: the string to check');
  const input = params.uuid;
  let s = input.trim();
  let form = 'canonical';
  if (/^urn:uuid:/i.test(s)) {
    s = s.slice(9);
    form = 'urn';
  } else if (s.startsWith('{') && s.endsWith('}')) {
    s = s.slice(1, -1);
    form = 'braced';
  }
  if (/^[0-9a-f]{32}$/i.test(s)) {
    s = `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
    if (form === 'canonical') form = 'compact';
  }
  if (!CANONICAL.test(s)) {
    const digits = s.replace(/-/g, '');
    let reason;
    if (/[^0-9a-f-]/i.test(s)) reason = `contains a character that is not a hex digit or "-": ${JSON.stringify(s.match(/[^0-9a-f-]/i)[0])}`;
    else if (digits.length !== 32) reason = `has ${digits.length} hex digits, a UUID has 32`;
    else reason = 'hyphens are misplaced: the groups must be 8-4-4-4-12 digits';
    return { mode: 'validate', input, valid: false, reason };
  }
  const hex = s.toLowerCase().replace(/-/g, '');
  const result = { mode: 'validate', input, valid: true, normalized: s.toLowerCase(), form };
  result.is_nil = /^0{32}$/.test(hex);
  result.is_max = /^f{32}$/.test(hex);
  const byte8 = parseInt(hex.slice(16, 18), 16);
  result.variant = result.is_nil || result.is_max ? 'special' : variantOf(byte8);
  const version = parseInt(hex[12], 16);
  result.version = result.variant === 'RFC 9562' ? version : null;
  if (result.version !== null && (version < 1 || version > 8)) result.version_note = `version ${version} is not defined by RFC 9562`;
  if (result.variant === 'RFC 9562' && (version === 1 || version === 6 || version === 7)) {
    result.timestamp = new Date(timestampMs(hex, version)).toISOString();
  }
  return result;
}

function run(params) {
  const mode = params.mode === undefined ? 'generate' : params.mode;
  if (mode === 'generate') return generate(params);
  if (mode === 'validate') return validate(params);
  throw new Error('mode must be "generate" or "validate"');
}
