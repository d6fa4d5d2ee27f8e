// cron-explainer: explains a 5-field cron expression in English and lists its
// next run times in UTC.
//
// Fields: minute hour day-of-month month day-of-week. Each is a comma list of
// *, a value, a range a-b, or a step (*/n, a-b/n, a/n meaning a-max/n). Months
// and weekdays accept three-letter names (JAN, mon); weekday 7 is Sunday, like
// 0. Macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and
// @hourly are expanded. Days follow Vixie cron: when neither day field starts
// with "*", a day matching either field runs (OR); otherwise both must match.
// Run times are strictly after `from` (default: now) and searched up to 30
// years ahead, so impossible dates (Feb 30) yield an empty list and a warning.

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const FIELDS = [
  { key: 'minute', label: 'minute', min: 0, max: 59 },
  { key: 'hour', label: 'hour', min: 0, max: 23 },
  { key: 'day_of_month', label: 'day-of-month', min: 1, max: 31 },
  { key: 'month', label: 'month', min: 1, max: 12, names: MONTHS.map((m) => m.slice(0, 3).toUpperCase()), offset: 1 },
  { key: 'day_of_week', label: 'day-of-week', min: 0, max: 7, names: DAYS.slice(0, 7).map((d) => d.slice(0, 3).toUpperCase()), offset: 0 },
];
const MACROS = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
};
const SEARCH_YEARS = 30;

function fieldError(spec, text, why) {
  return new Error(`invalid ${spec.label} field "${text}": ${why}`);
}

function parseValue(spec, text, token) {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n < spec.min || n > spec.max) throw fieldError(spec, text, `${n} is out of range ${spec.min}-${spec.max}`);
    return n;
  }
  if (spec.names) {
    const i = spec.names.indexOf(token.toUpperCase());
    if (i !== -1) return i + spec.offset;
    throw fieldError(spec, text, `"${token}" is not a number or a name (${spec.names[0]}-${spec.names[spec.names.length - 1]})`);
  }
  throw fieldError(spec, text, `"${token}" is not a number`);
}

// Returns { text, star, parts: [{ kind: 'all'|'value'|'range', start, end, step }], values }.
function parseField(spec, text) {
  if (/[?#]/.test(text) || /(^|[,\d])(L|W|LW)(?=$|[,/-])/i.test(text)) {
    throw fieldError(spec, text, '?, L, W and # are Quartz extensions, not standard 5-field cron');
  }
  const parts = [];
  const set = new Set();
  for (const item of text.split(',')) {
    if (item === '') throw fieldError(spec, text, 'empty item in list');
    const m = /^([^/]+)(?:\/(.*))?$/.exec(item);
    if (!m) throw fieldError(spec, text, `cannot read "${item}"`);
    let step = 1;
    if (m[2] !== undefined) {
      if (!/^\d+$/.test(m[2])) throw fieldError(spec, text, `step "${m[2]}" must be a positive integer`);
      step = Number(m[2]);
      if (step < 1) throw fieldError(spec, text, 'step must be at least 1');
    }
    let part;
    const top = spec.key === 'day_of_week' ? 6 : spec.max; // 7 is only an alias of Sunday
    if (m[1] === '*') part = { kind: 'all', start: spec.min, end: top, step };
    else {
      const r = m[1].split('-');
      if (r.length > 2 || r.includes('')) throw fieldError(spec, text, `cannot read "${m[1]}"`);
      const start = parseValue(spec, text, r[0]);
      const end = r.length === 2 ? parseValue(spec, text, r[1]) : m[2] !== undefined ? Math.max(top, start) : start;
      if (end < start) throw fieldError(spec, text, `range ${m[1]} goes backwards (wrap-around ranges are not supported)`);
      part = { kind: end > start || m[2] !== undefined ? 'range' : 'value', start, end, step };
    }
    for (let v = part.start; v <= part.end; v += part.step) set.add(spec.key === 'day_of_week' && v === 7 ? 0 : v);
    parts.push(part);
  }
  const values = [...set].sort((a, b) => a - b);
  const size = spec.key === 'day_of_week' ? 7 : spec.max - spec.min + 1;
  return { text, star: text[0] === '*', full: values.length === size, parts, values };
}

// ---- English -------------------------------------------------------------

const pad2 = (n) => String(n).padStart(2, '0');
function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] || 'th';
  return n + s;
}
function joinList(list, word) {
  const items = [...new Set(list)];
  if (items.length <= 1) return items.join('');
  return items.slice(0, -1).join(', ') + ' ' + word + ' ' + items[items.length - 1];
}
function valueName(spec, v) {
  if (spec.key === 'month') return MONTHS[v - 1];
  if (spec.key === 'day_of_week') return DAYS[v];
  return String(v);
}

// Describes one field, e.g. "minute 5", "every 15th minute", "hour 9 through 17".
function describeField(spec, field, word) {
  const named = spec.key === 'month' || spec.key === 'day_of_week';
  const unit = spec.key === 'month' ? 'month' : spec.label;
  if (field.parts.every((p) => p.step === 1 && p.kind !== 'all')) {
    const items = field.parts.map((p) =>
      p.kind === 'value' ? valueName(spec, p.start) : `${valueName(spec, p.start)} through ${valueName(spec, p.end)}`,
    );
    return (named ? '' : unit + ' ') + joinList(items, word);
  }
  return joinList(
    field.parts.map((p) => {
      const every = p.step === 1 ? `every ${unit}` : `every ${ordinal(p.step)} ${unit}`;
      if (p.kind === 'all') return every;
      if (p.kind === 'value') return (named ? '' : unit + ' ') + valueName(spec, p.start);
      return `${every} from ${valueName(spec, p.start)} through ${valueName(spec, p.end)}`;
    }),
    word,
  );
}

function describe(fields) {
  const [min, hour, dom, month, dow] = fields;
  const plainValues = (f) => f.parts.every((p) => p.kind === 'value');
  let text;
  if (plainValues(min) && plainValues(hour) && min.values.length * hour.values.length <= 6) {
    const times = [];
    for (const h of hour.values) for (const m of min.values) times.push(`${pad2(h)}:${pad2(m)}`);
    text = 'At ' + joinList(times, 'and');
  } else {
    text = 'At ' + describeField(FIELDS[0], min, 'and');
    if (!hour.full) text += ' past ' + describeField(FIELDS[1], hour, 'and');
  }
  if (dom.star || dow.star) {
    const days = [];
    if (!dom.full) days.push('on ' + describeField(FIELDS[2], dom, 'and'));
    if (!dow.full) days.push((days.length ? 'that is also ' : 'on ') + describeField(FIELDS[4], dow, 'or'));
    if (days.length) text += ' ' + days.join(' ');
  } else if (!dom.full && !dow.full) {
    text += ` on ${describeField(FIELDS[2], dom, 'and')}, or on ${describeField(FIELDS[4], dow, 'and')}`;
  }
  if (!month.full) text += ' in ' + describeField(FIELDS[3], month, 'and');
  return text + '.';
}

// ---- Time ----------------------------------------------------------------

function parseFrom(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|z|[+-]\d{2}:?\d{2})?$/.exec(text.trim());
  if (!m) throw new Error(`from must be an ISO 8601 date or date-time such as 2024-05-01T09:30:00Z, got ${JSON.stringify(text)}`);
  const [y, mo, d, h = 0, mi = 0, s = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((x) => (x === undefined ? undefined : Number(x)));
  const daysIn = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn || h > 23 || mi > 59 || s > 59) {
    throw new Error(`from is not a real date and time: ${JSON.stringify(text)}`);
  }
  let ms = Date.UTC(y, mo - 1, d, h, mi, s) + (m[7] ? Math.floor(Number(m[7]) * 1000) : 0);
  if (m[8] && m[8].toUpperCase() !== 'Z') {
    const sign = m[8][0] === '-' ? -1 : 1;
    const digits = m[8].slice(1).replace(':', '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60000;
  }
  return ms;
}

function nextRuns(fields, fromMs, count) {
  const [min, hour, dom, month, dow] = fields.map((f) => new Set(f.values));
  const and = fields[2].star || fields[4].star;
  const runs = [];
  let t = new Date(Math.floor(fromMs / 60000) * 60000 + 60000);
  const lastYear = t.getUTCFullYear() + SEARCH_YEARS;
  while (runs.length < count && t.getUTCFullYear() <= lastYear) {
    const y = t.getUTCFullYear(), mo = t.getUTCMonth(), d = t.getUTCDate(), h = t.getUTCHours();
    if (!month.has(mo + 1)) {
      t = new Date(Date.UTC(y, mo + 1, 1));
      continue;
    }
    const domOk = dom.has(d);
    const dowOk = dow.has(t.getUTCDay());
    if (!(and ? domOk && dowOk : domOk || dowOk)) {
      t = new Date(Date.UTC(y, mo, d + 1));
      continue;
    }
    if (!hour.has(h)) {
      t = new Date(Date.UTC(y, mo, d, h + 1));
      continue;
    }
    if (!min.has(t.getUTCMinutes())) {
      t = new Date(t.getTime() + 60000);
      continue;
    }
    runs.push(t.toISOString());
    t = new Date(t.getTime() + 60000);
  }
  return runs;
}

function run(params) {
  if (typeof params.expression !== 'string') throw new Error('expression must be a string');
  const count = params.count === undefined ? 5 : params.count;
  if (!Number.isInteger(count) || count < 1 || count > 50) throw new Error('count must be an integer from 1 to 50');
  const expression = params.expression.trim();
  let normalized = expression.replace(/\s+/g, ' ');
  if (normalized.startsWith('@')) {
    const macro = MACROS[normalized.toLowerCase()];
    if (normalized.toLowerCase() === '@reboot') throw new Error('@reboot runs at startup, not on a schedule, so it has no run times');
    if (!macro) throw new Error(`unknown macro ${normalized}: use one of ${Object.keys(MACROS).join(', ')}`);
    normalized = macro;
  }
  const texts = normalized === '' ? [] : normalized.split(' ');
  if (texts.length !== 5) {
    const hint = texts.length === 6 || texts.length === 7 ? ' (a seconds or year field, as in Quartz, is not supported)' : '';
    throw new Error(`expected 5 fields (minute hour day-of-month month day-of-week), got ${texts.length}${hint}`);
  }
  const fields = texts.map((text, i) => parseField(FIELDS[i], text));

  const fromMs = params.from === undefined ? Date.now() : parseFrom(String(params.from));
  const runs = nextRuns(fields, fromMs, count);
  const warnings = [];
  if (runs.length < count) {
    warnings.push(
      runs.length === 0
        ? `the schedule never runs within ${SEARCH_YEARS} years (for example, day-of-month 30 or 31 in February)`
        : `only ${runs.length} run time(s) within ${SEARCH_YEARS} years`,
    );
  }
  const out = {};
  FIELDS.forEach((spec, i) => (out[spec.key] = fields[i].values));
  return {
    expression,
    normalized,
    description: describe(fields),
    fields: out,
    timezone: 'UTC',
    from: new Date(fromMs).toISOString(),
    next_runs: runs,
    warnings,
  };
}
