// csv-json: converts CSV to JSON and a JSON array of objects to CSV.
//
// csv_to_json: an RFC 4180 parser. Fields may be quoted with "..." (a doubled
// "" is a literal quote; quoted fields may contain the delimiter and line
// breaks); records end at CRLF, LF or CR; a byte-order mark is dropped and
// blank lines are skipped. With a header row, records become objects keyed by
// the header (blank names become column_N, duplicates get _2, _3); without,
// they are arrays. Rows with too few or too many fields are kept (missing
// cells empty, extra cells under column_N keys) and reported as warnings.
// infer_types turns numbers, true/false and null/empty cells into JSON types.
// json_to_csv: the header is the union of all keys in first-seen order (or
// the given `columns`); fields are quoted only when they contain the
// delimiter, a quote, a line break, or leading/trailing spaces.

const MAX_WARNINGS = 100;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

// Splits CSV text into records of raw strings; each record remembers its line.
function parseCsv(text, delim, warnings) {
  const records = [];
  let record = [];
  let field = '';
  let wasQuoted = false; // the current field was a quoted one
  let line = 1;
  let recordLine = 1;
  const n = text.length;
  const endRecord = () => {
    record.push(field);
    // A blank line is one empty, unquoted field: skip it.
    if (!(record.length === 1 && record[0] === '' && !wasQuoted)) records.push({ fields: record, line: recordLine });
    record = [];
    field = '';
    wasQuoted = false;
  };
  let i = 0;
  while (i < n) {
    const c = text[i];
    if (c === '"' && field === '' && !wasQuoted) {
      const startLine = line;
      wasQuoted = true;
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q === -1) throw new Error(`unterminated quoted field starting on line ${startLine}`);
        const chunk = text.slice(i, q);
        field += chunk;
        const breaks = chunk.match(/\r\n|\r|\n/g);
        if (breaks) line += breaks.length;
        i = q + 1;
        if (text[i] !== '"') break; // the closing quote
        field += '"'; // a doubled quote
        i++;
      }
      if (i < n && text[i] !== delim && text[i] !== '\n' && text[i] !== '\r') {
        warnings.push(`line ${line}: text after a closing quote was appended to the field`);
        while (i < n && text[i] !== delim && text[i] !== '\n' && text[i] !== '\r') field += text[i++];
      }
    } else if (c === delim) {
      record.push(field);
      field = '';
      wasQuoted = false;
      i++;
    } else if (c === '\n' || c === '\r') {
      endRecord();
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line++;
      recordLine = line;
    } else {
      if (c === '"') warnings.push(`line ${line}: stray quote in an unquoted field kept as a literal character`);
      let j = i + 1;
      while (j < n) {
        const d = text[j];
        if (d === delim || d === '\n' || d === '\r' || d === '"') break;
        j++;
      }
      field += text.slice(i, j);
      i = j;
    }
  }
  if (field !== '' || record.length > 0 || wasQuoted) endRecord();
  return records;
}

function inferValue(s) {
  if (s === '' || s === 'null' || s === 'NULL') return null;
  if (s === 'true' || s === 'TRUE' || s === 'True') return true;
  if (s === 'false' || s === 'FALSE' || s === 'False') return false;
  if (NUMBER.test(s)) {
    const v = Number(s);
    // Keep long integers (IDs, card numbers) as text rather than lose digits.
    if (Number.isFinite(v) && (!/^-?\d+$/.test(s) || Number.isSafeInteger(v))) return v;
  }
  return s;
}

function uniqueHeaders(raw, warnings) {
  const taken = new Set(raw);
  const used = new Set();
  return raw.map((name, i) => {
    let key = name;
    if (name.trim() === '') {
      key = `column_${i + 1}`;
      warnings.push(`header ${i + 1} is blank; named it ${key}`);
    }
    if (used.has(key)) {
      let k = 2;
      while (taken.has(`${key}_${k}`) || used.has(`${key}_${k}`)) k++;
      warnings.push(`duplicate header ${JSON.stringify(key)}; column ${i + 1} renamed ${key}_${k}`);
      key = `${key}_${k}`;
    }
    used.add(key);
    return key;
  });
}

function csvToJson(params, delim) {
  if (typeof params.csv !== 'string') throw new Error('csv_to_json mode needs `csv`: the CSV text');
  const header = params.header !== false;
  const infer = params.infer_types === true;
  const warnings = [];
  let text = params.csv;
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const records = parseCsv(text, delim, warnings);
  const cell = (s) => (infer ? inferValue(s) : s);
  if (!header) {
    const width = records.length ? records[0].fields.length : 0;
    for (const r of records) {
      if (r.fields.length !== width) warnings.push(`line ${r.line}: ${r.fields.length} fields, expected ${width}`);
    }
    return { mode: 'csv_to_json', rows: records.map((r) => r.fields.map(cell)), row_count: records.length, columns: null, warnings };
  }
  if (records.length === 0) return { mode: 'csv_to_json', rows: [], row_count: 0, columns: [], warnings };
  const columns = uniqueHeaders(records[0].fields, warnings);
  const rows = [];
  for (const r of records.slice(1)) {
    if (r.fields.length !== columns.length) {
      warnings.push(`line ${r.line}: ${r.fields.length} fields, expected ${columns.length}` +
        (r.fields.length < columns.length ? ' (missing cells left empty)' : ' (extra cells kept as column_N)'));
    }
    const row = Object.create(null); // so a "__proto__" column is kept
    columns.forEach((c, i) => (row[c] = cell(i < r.fields.length ? r.fields[i] : '')));
    for (let i = columns.length; i < r.fields.length; i++) row[`column_${i + 1}`] = cell(r.fields[i]);
    rows.push(row);
  }
  return { mode: 'csv_to_json', rows, row_count: rows.length, columns, warnings };
}

function toCell(v, delim) {
  let s;
  if (v === null || v === undefined) s = '';
  else if (typeof v === 'object') s = JSON.stringify(v);
  else s = String(v);
  const needsQuotes = s.includes(delim) || /["\r\n]/.test(s) || /^\s|\s$/.test(s);
  return needsQuotes ? '"' + s.replace(/"/g, '""') + '"' : s;
}

function jsonToCsv(params, delim) {
  const data = params.data;
  if (!Array.isArray(data)) throw new Error('json_to_csv mode needs `data`: an array of objects');
  data.forEach((row, i) => {
    if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new Error(`data[${i}] is not an object`);
  });
  const warnings = [];
  let columns = params.columns;
  if (columns === undefined) {
    const seen = new Set();
    for (const row of data) for (const k of Object.keys(row)) seen.add(k);
    columns = [...seen];
  } else {
    const known = new Set();
    for (const row of data) for (const k of Object.keys(row)) known.add(k);
    for (const c of columns) if (!known.has(c)) warnings.push(`column ${JSON.stringify(c)} does not appear in any row`);
  }
  const eol = params.line_ending === 'crlf' ? '\r\n' : '\n';
  const lines = [];
  if (params.header !== false) lines.push(columns.map((c) => toCell(c, delim)).join(delim));
  for (const row of data) {
    lines.push(columns.map((c) => toCell(Object.prototype.hasOwnProperty.call(row, c) ? row[c] : null, delim)).join(delim));
  }
  const csv = lines.length ? lines.join(eol) + eol : '';
  return { mode: 'json_to_csv', csv, row_count: data.length, columns, warnings };
}

function run(params) {
  const mode = params.mode === undefined ? 'csv_to_json' : params.mode;
  let delim = params.delimiter === undefined ? ',' : params.delimiter;
  if (delim === '\\t' || delim === 'tab') delim = '\t';
  if (typeof delim !== 'string' || delim.length !== 1 || delim === '"' || delim === '\n' || delim === '\r') {
    throw new Error('delimiter must be a single character other than a quote or line break (use "\\t" for tab)');
  }
  if (mode !== 'csv_to_json' && mode !== 'json_to_csv') throw new Error('mode must be "csv_to_json" or "json_to_csv"');
  const result = mode === 'csv_to_json' ? csvToJson(params, delim) : jsonToCsv(params, delim);
  if (result.warnings.length > MAX_WARNINGS) {
    const more = result.warnings.length - MAX_WARNINGS;
    result.warnings = result.warnings.slice(0, MAX_WARNINGS).concat(`... and ${more} more warnings`);
  }
  return result;
}
