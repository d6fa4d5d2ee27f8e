// unit-converter: converts a value between units of the same dimension.
//
// Dimensions: length, mass, temperature, volume, area, speed, time, data,
// pressure and energy. Linear units are stored as a factor to the SI base unit
// (metre, kilogram, cubic metre, square metre, m/s, second, byte, pascal,
// joule); temperature uses exact offset formulas. Units are matched by symbol
// exactly first (so MB megabyte and Mb megabit differ), then by symbol or name
// ignoring case and a plural "s" when that is unambiguous. US customary units
// are the defaults (gal, qt, pt, cup, fl oz, ton = short ton); imperial ones
// have their own names. kB, MB... are decimal (SI); KiB, MiB... are binary.

const DIMENSIONS = {
  length: ['m', [
    ['nm', 'nanometer', 1e-9], ['um', 'micrometer', 1e-6, 'µm|μm|micron'], ['mm', 'millimeter', 1e-3],
    ['cm', 'centimeter', 1e-2], ['dm', 'decimeter', 0.1], ['m', 'meter', 1], ['km', 'kilometer', 1000],
    ['in', 'inch', 0.0254, 'inches|"'], ['ft', 'foot', 0.3048, 'feet|\''], ['yd', 'yard', 0.9144],
    ['mi', 'mile', 1609.344, 'statute mile'], ['nmi', 'nautical mile', 1852, 'NM'], ['mil', 'thou', 0.0000254],
    ['au', 'astronomical unit', 149597870700, 'AU'], ['ly', 'light-year', 9460730472580800, 'light year|lightyear'],
    ['pc', 'parsec', 30856775814913673],
  ]],
  mass: ['kg', [
    ['ug', 'microgram', 1e-9, 'µg|μg|mcg'], ['mg', 'milligram', 1e-6], ['g', 'gram', 1e-3], ['kg', 'kilogram', 1, 'kilo'],
    ['t', 'tonne', 1000, 'metric ton'], ['oz', 'ounce', 0.028349523125], ['lb', 'pound', 0.45359237, 'lbs'],
    ['st', 'stone', 6.35029318], ['ton', 'short ton', 907.18474, 'us ton|tn'],
    ['long ton', 'long ton', 1016.0469088, 'imperial ton|uk ton'], ['ct', 'carat', 0.0002], ['gr', 'grain', 0.00006479891],
  ]],
  temperature: ['K', [
    ['°C', 'degree Celsius', null, 'C|celsius|centigrade|degC|deg C'], ['°F', 'degree Fahrenheit', null, 'F|fahrenheit|degF|deg F'],
    ['K', 'kelvin', null, ''], ['°R', 'degree Rankine', null, 'R|rankine|degR'],
  ]],
  volume: ['m3', [
    ['mL', 'milliliter', 1e-6, 'ml|cc|cm3|cubic centimeter'], ['cL', 'centiliter', 1e-5, 'cl'], ['dL', 'deciliter', 1e-4, 'dl'],
    ['L', 'liter', 1e-3, 'l'], ['m3', 'cubic meter', 1], ['mm3', 'cubic millimeter', 1e-9],
    ['in3', 'cubic inch', 1.6387064e-5, 'cu in|cubic inches'], ['ft3', 'cubic foot', 0.028316846592, 'cu ft|cubic feet'],
    ['yd3', 'cubic yard', 0.764554857984, 'cu yd'], ['gal', 'gallon', 3.785411784e-3, 'us gallon|us gal'],
    ['qt', 'quart', 9.46352946e-4, 'us quart'], ['pt', 'pint', 4.73176473e-4, 'us pint'], ['cup', 'cup', 2.365882365e-4, 'us cup'],
    ['fl oz', 'fluid ounce', 2.95735295625e-5, 'floz|us fl oz|us fluid ounce'], ['tbsp', 'tablespoon', 1.478676478125e-5],
    ['tsp', 'teaspoon', 4.92892159375e-6], ['imp gal', 'imperial gallon', 4.54609e-3, 'uk gallon|uk gal'],
    ['imp pt', 'imperial pint', 5.6826125e-4, 'uk pint'], ['imp fl oz', 'imperial fluid ounce', 2.84130625e-5, 'uk fl oz'],
    ['bbl', 'barrel', 0.158987294928, 'oil barrel'],
  ]],
  area: ['m2', [
    ['mm2', 'square millimeter', 1e-6], ['cm2', 'square centimeter', 1e-4], ['m2', 'square meter', 1, 'sqm'],
    ['ha', 'hectare', 1e4], ['km2', 'square kilometer', 1e6], ['in2', 'square inch', 0.00064516, 'sq in|square inches'],
    ['ft2', 'square foot', 0.09290304, 'sq ft|sqft|square feet'], ['yd2', 'square yard', 0.83612736, 'sq yd'],
    ['ac', 'acre', 4046.8564224], ['mi2', 'square mile', 2589988.110336, 'sq mi'],
  ]],
  speed: ['m/s', [
    ['m/s', 'meter per second', 1, 'mps|meters per second|metres per second'],
    ['km/h', 'kilometer per hour', 1 / 3.6, 'kph|kmh|kmph|kilometers per hour|kilometres per hour'],
    ['mph', 'mile per hour', 0.44704, 'mi/h|miles per hour'], ['kn', 'knot', 1852 / 3600, 'kt|kts'],
    ['ft/s', 'foot per second', 0.3048, 'fps|feet per second'],
  ]],
  time: ['s', [
    ['ns', 'nanosecond', 1e-9], ['us', 'microsecond', 1e-6, 'µs|μs'], ['ms', 'millisecond', 1e-3], ['s', 'second', 1, 'sec|secs'],
    ['min', 'minute', 60, 'mins'], ['h', 'hour', 3600, 'hr|hrs'], ['d', 'day', 86400], ['wk', 'week', 604800],
    ['mo', 'month', 2629746, 'mean month'], ['yr', 'year', 31556952, 'y|mean year'],
  ]],
  data: ['B', [
    ['bit', 'bit', 0.125, 'b'], ['B', 'byte', 1, 'octet'],
    ['kbit', 'kilobit', 125, 'kb|Kb'], ['Mbit', 'megabit', 125e3, 'Mb'], ['Gbit', 'gigabit', 125e6, 'Gb'], ['Tbit', 'terabit', 125e9, 'Tb'],
    ['kB', 'kilobyte', 1e3, 'KB'], ['MB', 'megabyte', 1e6], ['GB', 'gigabyte', 1e9], ['TB', 'terabyte', 1e12],
    ['PB', 'petabyte', 1e15], ['EB', 'exabyte', 1e18],
    ['KiB', 'kibibyte', 1024], ['MiB', 'mebibyte', 1024 ** 2], ['GiB', 'gibibyte', 1024 ** 3], ['TiB', 'tebibyte', 1024 ** 4],
    ['PiB', 'pebibyte', 1024 ** 5], ['EiB', 'exbibyte', 1024 ** 6],
  ]],
  pressure: ['Pa', [
    ['Pa', 'pascal', 1], ['hPa', 'hectopascal', 100], ['kPa', 'kilopascal', 1000], ['MPa', 'megapascal', 1e6],
    ['bar', 'bar', 1e5], ['mbar', 'millibar', 100], ['atm', 'atmosphere', 101325], ['psi', 'pound per square inch', 6894.757293168361, 'lbf/in2'],
    ['mmHg', 'millimeter of mercury', 133.322387415], ['inHg', 'inch of mercury', 3386.388640341], ['Torr', 'torr', 101325 / 760],
  ]],
  energy: ['J', [
    ['J', 'joule', 1], ['kJ', 'kilojoule', 1e3], ['MJ', 'megajoule', 1e6], ['cal', 'calorie', 4.184, 'small calorie'],
    ['kcal', 'kilocalorie', 4184, 'Cal|food calorie'], ['Wh', 'watt-hour', 3600, 'watt hour'], ['kWh', 'kilowatt-hour', 3.6e6, 'kilowatt hour'],
    ['MWh', 'megawatt-hour', 3.6e9], ['eV', 'electronvolt', 1.602176634e-19, 'electron volt'], ['BTU', 'British thermal unit', 1055.05585262, 'Btu'],
    ['erg', 'erg', 1e-7], ['ft·lbf', 'foot-pound', 1.3558179483314004, 'ft-lbf|ft lbf|ft-lb|foot pound'], ['thm', 'therm', 105480400],
  ]],
};

// Absolute temperatures as [to kelvin, from kelvin] and a readable formula.
const TEMP = {
  '°C': [(v) => v + 273.15, (k) => k - 273.15],
  '°F': [(v) => ((v - 32) * 5) / 9 + 273.15, (k) => ((k - 273.15) * 9) / 5 + 32],
  K: [(v) => v, (k) => k],
  '°R': [(v) => (v * 5) / 9, (k) => (k * 9) / 5],
};
const TEMP_FORMULA = {
  '°C>°F': '°F = °C × 9/5 + 32', '°F>°C': '°C = (°F − 32) × 5/9', '°C>K': 'K = °C + 273.15', 'K>°C': '°C = K − 273.15',
  '°F>K': 'K = (°F − 32) × 5/9 + 273.15', 'K>°F': '°F = (K − 273.15) × 9/5 + 32', '°R>K': 'K = °R × 5/9', 'K>°R': '°R = K × 9/5',
  '°C>°R': '°R = (°C + 273.15) × 9/5', '°R>°C': '°C = °R × 5/9 − 273.15', '°F>°R': '°R = °F + 459.67', '°R>°F': '°F = °R − 459.67',
};
// Direct formulas for the common pairs, so 100 °C gives exactly 212 °F.
const TEMP_DIRECT = {
  '°C>°F': (v) => (v * 9) / 5 + 32, '°F>°C': (v) => ((v - 32) * 5) / 9, '°F>°R': (v) => v + 459.67, '°R>°F': (v) => v - 459.67,
};

const exact = new Map();
const folded = new Map();
const UNITS = [];
for (const [dimension, [base, list]] of Object.entries(DIMENSIONS)) {
  for (const [symbol, name, factor, extra] of list) {
    const unit = { symbol, name, factor, dimension, base };
    UNITS.push(unit);
    const names = [name, name.replace(/meter/g, 'metre').replace(/liter/g, 'litre')];
    const keys = [symbol, ...names, ...names.map((n) => n + 's'), ...(extra ? extra.split('|') : [])];
    for (const key of new Set(keys)) {
      if (!exact.has(key)) exact.set(key, unit);
      const f = key.toLowerCase();
      if (!folded.has(f)) folded.set(f, new Set());
      folded.get(f).add(unit);
    }
  }
}

function distance(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length];
}

function findUnit(input, what) {
  if (typeof input !== 'string' || input.trim() === '') throw new Error(`${what} must be a unit such as "km" or "kilogram"`);
  const s = input.trim().replace(/\s+/g, ' ').replace(/²/g, '2').replace(/³/g, '3').replace(/\^([23])/g, '$1')
    .replace(/^degrees? (?=[a-z])/i, '').replace(/º/g, '°');
  if (exact.has(s)) return exact.get(s);
  const f = s.toLowerCase().replace(/^°/, '');
  for (const key of [f, f.replace(/es$/, ''), f.replace(/s$/, '')]) {
    const hits = folded.get(key);
    if (!hits) continue;
    if (hits.size === 1) return [...hits][0];
    const options = [...hits].map((u) => `${u.symbol} (${u.name})`).join(' or ');
    throw new Error(`ambiguous unit ${JSON.stringify(input)} for ${what}: could be ${options}; write the symbol with its exact case`);
  }
  const near = [...exact.keys()].filter((k) => k.length > 1 && distance(k.toLowerCase(), f) <= (f.length > 4 ? 2 : 1)).slice(0, 5);
  throw new Error(`unknown unit ${JSON.stringify(input)} for ${what}` + (near.length ? ` (did you mean ${near.join(', ')}?)` : '') +
    `; supported dimensions: ${Object.keys(DIMENSIONS).join(', ')}`);
}

// Removes binary floating-point noise (0.30000000000000004 -> 0.3) but keeps
// exact large integers such as 2^60.
function clean(x) {
  if (x === 0 || (Number.isInteger(x) && Math.abs(x) > 1e15)) return x;
  return Number(x.toPrecision(15));
}

const fmt = (x, digits) => String(Number(x.toPrecision(digits)));

function run(params) {
  const value = params.value;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error('value must be a finite number');
  const digits = params.precision === undefined ? 10 : params.precision;
  if (!Number.isInteger(digits) || digits < 1 || digits > 17) throw new Error('precision must be an integer from 1 to 17');
  const from = findUnit(params.from, 'from');
  const to = findUnit(params.to, 'to');
  if (from.dimension !== to.dimension) {
    const compatible = UNITS.filter((u) => u.dimension === from.dimension).map((u) => u.symbol).join(', ');
    throw new Error(`cannot convert ${from.symbol} (${from.name}, ${from.dimension}) to ${to.symbol} (${to.name}, ${to.dimension}): ` +
      `compatible units for ${from.symbol} are ${compatible}`);
  }
  let result;
  let formula;
  let factor;
  if (from.dimension === 'temperature') {
    const kelvin = TEMP[from.symbol][0](value);
    if (kelvin < -1e-9) throw new Error(`${value} ${from.symbol} is below absolute zero`);
    const key = `${from.symbol}>${to.symbol}`;
    result = from === to ? value : TEMP_DIRECT[key] ? TEMP_DIRECT[key](value) : TEMP[to.symbol][1](kelvin);
    formula = from === to ? 'no conversion needed' : TEMP_FORMULA[key];
  } else {
    result = (value * from.factor) / to.factor;
    factor = clean(from.factor / to.factor);
    formula = `${to.symbol} = ${from.symbol} × ${factor}`;
  }
  result = clean(result);
  const out = {
    value: result,
    formatted: `${fmt(value, digits)} ${from.symbol} = ${fmt(result, digits)} ${to.symbol}`,
    dimension: from.dimension,
    from: { symbol: from.symbol, name: from.name },
    to: { symbol: to.symbol, name: to.name },
    formula,
  };
  if (factor !== undefined) out.factor = factor;
  return out;
}
