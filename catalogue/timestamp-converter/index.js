// timestamp-converter: converts a point in time between Unix timestamps
// (seconds / milliseconds / microseconds / nanoseconds), ISO 8601 and RFC 2822.
//
// Numeric input is Unix time; with unit "auto" the unit is guessed from the
// magnitude (< 1e11 seconds, < 1e14 ms, < 1e17 us, else ns) and the guess is
// reported. Times are kept as BigInt nanoseconds, so no precision is lost.
// Output is given in UTC and in one fixed UTC offset (such as +05:30); there is
// no time-zone database, so named zones and daylight-saving rules are not
// available. Also reported: calendar facts (weekday, ISO week, day of year,
// leap year) and a relative phrase ("3 days ago") against `now`.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const UNIT_EXP = { seconds: 9, milliseconds: 6, microseconds: 3, nanoseconds: 0 };
const RFC_ZONES = { UT: 0, GMT: 0, Z: 0, EST: -300, EDT: -240, CST: -360, CDT: -300, MST: -420, MDT: -360, PST: -480, PDT: -420 };
const MAX_MS = 8640000000000000n; // the range of a JavaScript Date
const NS_PER_MS = 1000000n;

// "+05:30" / "-0800" / "+5" / "Z" / "UTC" -> minutes east of UTC.
function parseOffset(text, what) {
  const s = text.trim().toUpperCase();
  if (s === 'Z' || s === 'UTC' || s === 'GMT') return 0;
  const m = /^([+-])(\d{1,2})(?::?(\d{2}))?$/.exec(s);
  if (!m) throw new Error(`${what} "${text}" is not a UTC offset like +05:30, -0800 or Z`);
  const h = Number(m[2]);
  const min = m[3] === undefined ? 0 : Number(m[3]);
  if (h > 18 || min > 59 || h * 60 + min > 18 * 60) throw new Error(`${what} "${text}" is out of range (at most ±18:00)`);
  return (m[1] === '-' ? -1 : 1) * (h * 60 + min);
}

function formatOffset(min, colon = true) {
  const a = Math.abs(min);
  const hh = String(Math.floor(a / 60)).padStart(2, '0');
  const mm = String(a % 60).padStart(2, '0');
  return (min < 0 ? '-' : '+') + hh + (colon ? ':' : '') + mm;
}

// Exact decimal string (optionally signed, with a fraction) times 10^exp, truncated.
function decimalToNs(str, exp) {
  const m = /^([+-]?)(\d+)(?:\.(\d+))?$/.exec(str);
  const frac = (m[3] || '').padEnd(exp, '0');
  const ns = BigInt(m[2]) * 10n ** BigInt(exp) + BigInt(frac.slice(0, exp) || '0');
  return { ns: m[1] === '-' ? -ns : ns, truncated: /[1-9]/.test(frac.slice(exp)) };
}

// Days-in-month check, then nanoseconds since the epoch for wall-clock fields at `offsetMin`.
function fieldsToNs(y, mo, d, h, mi, s, fracDigits, offsetMin, source) {
  const dim = new Date(Date.UTC(2000, mo, 0)).getUTCDate() - (mo === 2 && !isLeap(y) ? 1 : 0);
  if (mo < 1 || mo > 12 || d < 1 || d > dim) throw new Error(`${source}: day ${d} of month ${mo} in ${y} does not exist`);
  if (h > 24 || mi > 59 || s > 60 || (h === 24 && (mi || s || /[1-9]/.test(fracDigits)))) throw new Error(`${source}: time out of range`);
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d); // setUTCFullYear handles years 0-99 literally
  date.setUTCHours(h, mi, Math.min(s, 59), 0); // a leap second (:60) is folded into :59
  const ms = BigInt(date.getTime()) - BigInt(offsetMin) * 60000n;
  return ms * NS_PER_MS + BigInt((fracDigits || '').padEnd(9, '0').slice(0, 9));
}

const isLeap = (y) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

const ISO_EXT = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;
const ISO_BASIC = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})?(?:[.,](\d{1,9}))?(Z|[+-]\d{2}(?:\d{2})?)?$/i;
const RFC2822 = /^(?:([a-z]{3}),?\s*)?(\d{1,2})\s+([a-z]{3})\s+(\d{2,4})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s*([+-]\d{4}|[a-z]{1,3})?$/i;

// Parses `value` into { ns, format, unit, detection, notes }.
function parseTime(value, unit, defaultOffset, what, nowNs) {
  const notes = [];
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Math.abs(value) >= 1e21) throw new Error(`${what} ${value} is out of range`);
    value = Number.isInteger(value) ? BigInt(value).toString() : String(value);
    if (/e/i.test(value)) throw new Error(`${what} ${value} is out of range`);
  }
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${what} must be a number or a non-empty string`);
  const s = value.trim();
  if (s.toLowerCase() === 'now') return { ns: nowNs, format: 'now', unit: null, detection: 'the current time', notes };

  if (/^[+-]?\d+(\.\d+)?$/.test(s)) {
    let u = unit;
    let detection = `given: ${unit}`;
    if (unit === 'auto') {
      const digits = s.replace(/^[+-]/, '').split('.')[0].replace(/^0+(?=\d)/, '');
      const mag = Number(digits);
      u = mag < 1e11 ? 'seconds' : mag < 1e14 ? 'milliseconds' : mag < 1e17 ? 'microseconds' : 'nanoseconds';
      detection = `auto: ${digits.length} integer digits, read as ${u} (< 1e11 seconds, < 1e14 ms, < 1e17 us, else ns)`;
    }
    const { ns, truncated } = decimalToNs(s, UNIT_EXP[u]);
    if (truncated) notes.push('digits below one nanosecond were dropped');
    return { ns, format: 'unix', unit: u, detection, notes };
  }

  let m = ISO_EXT.exec(s) || ISO_BASIC.exec(s);
  if (m) {
    let offset = defaultOffset;
    if (m[8]) offset = parseOffset(m[8], `${what} offset`);
    else if (m[4] !== undefined) notes.push(`no UTC offset in ${what}; read as ${formatOffset(defaultOffset)} (the offset input)`);
    else notes.push(`date-only ${what} read as midnight at ${formatOffset(defaultOffset)}`);
    const n = (x) => (x === undefined ? 0 : Number(x));
    const ns = fieldsToNs(Number(m[1]), n(m[2]), n(m[3]), n(m[4]), n(m[5]), n(m[6]), m[7] || '', offset, what);
    if (m[6] === '60') notes.push('leap second :60 folded into :59');
    return { ns, format: 'iso8601', unit: null, detection: 'ISO 8601 date-time', notes };
  }

  m = RFC2822.exec(s);
  if (m) {
    const mon = MONTHS.findIndex((x) => x.toLowerCase() === m[3].toLowerCase());
    if (mon < 0) throw new Error(`${what}: unknown month "${m[3]}"`);
    let year = Number(m[4]);
    if (m[4].length === 2) year += year < 50 ? 2000 : 1900;
    else if (m[4].length === 3) year += 1900;
    let offset = 0;
    const z = (m[8] || '').toUpperCase();
    if (z === '') notes.push(`no zone in ${what}; read as UTC`);
    else if (/^[+-]\d{4}$/.test(z)) offset = parseOffset(z, `${what} zone`);
    else if (z in RFC_ZONES) offset = RFC_ZONES[z];
    else notes.push(`zone "${m[8]}" is obsolete or unknown; read as UTC (RFC 5322 says -0000)`);
    const ns = fieldsToNs(year, mon + 1, Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7] || 0), '', offset, what);
    if (m[1]) {
      const wd = new Date(Number(floorDiv(ns, NS_PER_MS)) + offset * 60000).getUTCDay();
      if (DAYS[wd].slice(0, 3).toLowerCase() !== m[1].toLowerCase()) notes.push(`${what} says ${m[1]} but the date is a ${DAYS[wd]}`);
    }
    return { ns, format: 'rfc2822', unit: null, detection: 'RFC 2822 date-time', notes };
  }
  throw new Error(`${what} "${s.slice(0, 60)}" is not a Unix timestamp, ISO 8601 (2024-05-01T12:00:00Z) or RFC 2822 (Wed, 01 May 2024 12:00:00 +0000) time`);
}

function floorDiv(a, b) {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

function pad(n, w = 2) {
  return String(n).padStart(w, '0');
}

function yearText(y) {
  return y >= 0 && y <= 9999 ? pad(y, 4) : (y < 0 ? '-' : '+') + pad(Math.abs(y), 6);
}

// Wall-clock view of `ns` at `offsetMin`.
function view(ns, offsetMin) {
  const ms = floorDiv(ns, NS_PER_MS);
  const sub = Number(ns - ms * NS_PER_MS); // 0..999999 ns below the millisecond
  const d = new Date(Number(ms) + offsetMin * 60000);
  const y = d.getUTCFullYear();
  const nanos = d.getUTCMilliseconds() * 1e6 + sub;
  let frac = pad(nanos, 9);
  frac = sub === 0 ? frac.slice(0, 3) : sub % 1000 === 0 ? frac.slice(0, 6) : frac;
  const zone = offsetMin === 0 ? 'Z' : formatOffset(offsetMin);
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  const iso = `${yearText(y)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${time}.${frac}${zone}`;
  const rfc =
    y >= 0 && y <= 9999
      ? `${DAYS[d.getUTCDay()].slice(0, 3)}, ${pad(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${pad(y, 4)} ${time} ${formatOffset(offsetMin, false)}`
      : null;

  const jan1 = new Date(0);
  jan1.setUTCFullYear(y, 0, 1);
  const midnight = new Date(0);
  midnight.setUTCFullYear(y, d.getUTCMonth(), d.getUTCDate());
  const dayOfYear = Math.round((midnight.getTime() - jan1.getTime()) / 86400000) + 1;
  // ISO week: the week (Monday first) containing the year's first Thursday is week 1.
  const isoDow = ((d.getUTCDay() + 6) % 7) + 1;
  const thursday = new Date(midnight.getTime() + (4 - isoDow) * 86400000);
  const weekYear = thursday.getUTCFullYear();
  const wJan1 = new Date(0);
  wJan1.setUTCFullYear(weekYear, 0, 1);
  const week = Math.floor(Math.round((thursday.getTime() - wJan1.getTime()) / 86400000) / 7) + 1;
  return {
    iso,
    rfc,
    components: {
      year: y,
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
      nanosecond: nanos,
      day_of_week: DAYS[d.getUTCDay()],
      iso_day_of_week: isoDow,
      iso_week: `${yearText(weekYear)}-W${pad(week)}`,
      day_of_year: dayOfYear,
      quarter: Math.floor(d.getUTCMonth() / 3) + 1,
      leap_year: isLeap(y),
    },
  };
}

function relative(diffSec) {
  const a = Math.abs(diffSec);
  const steps = [
    [45, 1, 'second'],
    [45 * 60, 60, 'minute'],
    [22 * 3600, 3600, 'hour'],
    [26 * 86400, 86400, 'day'],
    [320 * 86400, 30.436875 * 86400, 'month'],
    [Infinity, 365.2425 * 86400, 'year'],
  ];
  const [, size, name] = steps.find(([limit]) => a < limit);
  const n = Math.round(a / size);
  if (n === 0) return 'just now';
  const phrase = `${n} ${name}${n === 1 ? '' : 's'}`;
  return diffSec < 0 ? `${phrase} ago` : `in ${phrase}`;
}

function run(params) {
  const unit = params.unit === undefined ? 'auto' : params.unit;
  if (unit !== 'auto' && !(unit in UNIT_EXP)) throw new Error('unit must be auto, seconds, milliseconds, microseconds or nanoseconds');
  const offset = params.offset === undefined ? 0 : parseOffset(String(params.offset), 'offset');
  const clockNs = BigInt(Date.now()) * NS_PER_MS;
  const now = params.now === undefined ? { ns: clockNs, notes: [] } : parseTime(params.now, 'auto', offset, 'now', clockNs);
  const t = parseTime(params.value, unit, offset, 'value', clockNs);
  for (const x of [t, now]) {
    const ms = floorDiv(x.ns, NS_PER_MS);
    if (ms > MAX_MS || ms < -MAX_MS) throw new Error('time is outside the supported range (about ±275,000 years from 1970)');
  }

  const utc = view(t.ns, 0);
  const local = view(t.ns, offset);
  const diffSec = Number(t.ns - now.ns) / 1e9;
  return {
    input_format: t.format,
    detected_unit: t.unit,
    detection: t.detection,
    unix_seconds: Number(floorDiv(t.ns, 1000000000n)),
    unix_milliseconds: Number(floorDiv(t.ns, NS_PER_MS)),
    unix_microseconds: floorDiv(t.ns, 1000n).toString(),
    unix_nanoseconds: t.ns.toString(),
    iso_utc: utc.iso,
    rfc2822_utc: utc.rfc,
    offset: formatOffset(offset),
    iso_offset: local.iso,
    rfc2822_offset: local.rfc,
    components: local.components,
    relative: relative(diffSec),
    relative_seconds: Math.round(diffSec * 1000) / 1000,
    now: view(now.ns, 0).iso,
    notes: t.notes.concat(now.notes.map((n) => `now: ${n}`)),
  };
}
