// data-generator: deterministic fake records for fixtures, demos and tests.
//
// A mulberry32 PRNG seeded from `seed` drives every choice, so the same seed
// and count always give the same records. Every record draws all of its fields
// in a fixed order whether or not they were requested, so a field's value for
// a given seed does not change when other fields are added or removed.
// Names, emails, companies and URLs are coherent within a record. Phone numbers
// use the fictional 555-01xx range, IPs the RFC 5737 documentation ranges and
// websites the reserved .example TLD, so nothing points at a real party.
// Emails are unique within one result.

const FIRST = ['Aisha', 'Hiroshi', 'Priya', 'Mohammed', 'Elena', 'Lars', 'Sofia', 'Wei', 'Kwame', 'Ingrid',
  'Diego', 'Fatima', 'Oliver', 'Chloe', 'Yuki', 'Ravi', 'Anna', 'Mateo', 'Leila', 'Tomas',
  'Grace', 'Ahmed', 'Nina', 'Jonas', 'Maya', 'Samuel', 'Zara', 'Ethan', 'Lucia', 'Omar'];
const LAST = ['Nguyen', 'Kim', 'Patel', 'Rossi', 'Silva', 'Kowalski', 'Andersson', 'Okafor', 'Tanaka', 'Dubois',
  'Schmidt', 'Novak', 'Hernandez', 'Brown', 'Cohen', 'Ivanova', 'Costa', 'Jensen', 'Murphy', 'Yilmaz',
  'Fischer', 'Moreau', 'Santos', 'Lee', 'Wilson', 'Martin', 'Haddad', 'Larsen', 'Walker', 'Chen'];
const PLACES = [['Lisbon', 'Portugal'], ['Toronto', 'Canada'], ['Osaka', 'Japan'], ['Lagos', 'Nigeria'],
  ['Berlin', 'Germany'], ['Austin', 'United States'], ['Melbourne', 'Australia'], ['Lyon', 'France'],
  ['Bangalore', 'India'], ['Sao Paulo', 'Brazil'], ['Krakow', 'Poland'], ['Gothenburg', 'Sweden'],
  ['Nairobi', 'Kenya'], ['Seoul', 'South Korea'], ['Milan', 'Italy'], ['Denver', 'United States'],
  ['Vancouver', 'Canada'], ['Mexico City', 'Mexico'], ['Dublin', 'Ireland'], ['Rotterdam', 'Netherlands'],
  ['Cape Town', 'South Africa'], ['Singapore', 'Singapore'], ['Buenos Aires', 'Argentina'], ['Oslo', 'Norway'],
  ['Manchester', 'United Kingdom'], ['Valencia', 'Spain'], ['Istanbul', 'Turkey'], ['Auckland', 'New Zealand'],
  ['Prague', 'Czech Republic'], ['Chicago', 'United States']];
const CO_PREFIX = ['Blue Harbor', 'Summit', 'Ironwood', 'Brightline', 'Nimbus', 'Redwood', 'Cobalt', 'Silverleaf',
  'Pioneer', 'Vertex', 'Lumen', 'Granite', 'Horizon', 'Maple', 'Quantum', 'Orchid', 'Falcon', 'Evergreen',
  'Atlas', 'Copper'];
const CO_SUFFIX = ['Labs', 'Systems', 'Analytics', 'Logistics', 'Foods', 'Health', 'Media', 'Partners',
  'Robotics', 'Energy', 'Software', 'Studios', 'Consulting', 'Group', 'Dynamics'];
const JOBS = ['Software Engineer', 'Product Manager', 'Data Analyst', 'UX Designer', 'Account Executive',
  'Marketing Manager', 'DevOps Engineer', 'HR Specialist', 'Financial Analyst', 'Customer Success Manager',
  'Sales Representative', 'Operations Manager', 'QA Engineer', 'Technical Writer', 'Data Scientist',
  'Project Coordinator', 'Office Manager', 'Security Engineer', 'Support Specialist', 'Chief Technology Officer',
  'Recruiter', 'Graphic Designer', 'Business Analyst', 'Backend Developer', 'Frontend Developer',
  'Solutions Architect', 'Legal Counsel', 'Content Strategist'];
const MAIL_DOMAINS = ['example.com', 'example.net', 'example.org'];
const URL_PATHS = ['', 'about', 'products', 'blog', 'careers', 'contact', 'pricing', 'docs'];
const AREA_CODES = [206, 212, 303, 312, 415, 503, 512, 617, 702, 718, 805, 917];
const TEST_NETS = ['192.0.2', '198.51.100', '203.0.113'];
const ALL_FIELDS = ['id', 'uuid', 'first_name', 'last_name', 'full_name', 'email', 'phone', 'city', 'country',
  'company', 'job_title', 'date', 'age', 'boolean', 'price', 'ip', 'url'];
const DEFAULT_FIELDS = ['id', 'full_name', 'email', 'company', 'city', 'country'];
const DATE_START = Date.UTC(2015, 0, 1);
const DATE_DAYS = 4018; // 2015-01-01 .. 2025-12-31 inclusive

// mulberry32: tiny, fast 32-bit PRNG; returns floats in [0, 1).
function mulberry32(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function slugOf(s) {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

function hex2(n) {
  return n.toString(16).padStart(2, '0');
}

// Draws every field for one record, always in the same order.
function makeRecord(rand, index) {
  const int = (n) => Math.floor(rand() * n); // 0 .. n-1
  const pick = (list) => list[int(list.length)];

  const bytes = [];
  for (let i = 0; i < 16; i++) bytes.push(int(256));
  bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
  const h = bytes.map(hex2).join('');
  const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;

  const first = pick(FIRST);
  const last = pick(LAST);
  const place = pick(PLACES);
  const company = `${pick(CO_PREFIX)} ${pick(CO_SUFFIX)}`;
  const companyDomain = `${slugOf(company)}.example`;
  const mailStyle = int(4);
  const mailNumber = 1 + int(99);
  const mailDomain = int(3) === 0 ? companyDomain : pick(MAIL_DOMAINS);
  const f = first.toLowerCase();
  const l = last.toLowerCase();
  const local = [`${f}.${l}`, `${f[0]}${l}`, `${f}${mailNumber}`, `${f}_${l}${mailNumber}`][mailStyle];
  const phone = `+1 (${pick(AREA_CODES)}) 555-01${String(int(100)).padStart(2, '0')}`;
  const job = pick(JOBS);
  const date = new Date(DATE_START + int(DATE_DAYS) * 86400000).toISOString().slice(0, 10);
  const age = 18 + int(62);
  const bool = rand() < 0.5;
  const price = Math.round((0.99 + rand() * 999) * 100) / 100;
  const ip = `${pick(TEST_NETS)}.${1 + int(254)}`;
  const path = pick(URL_PATHS);

  return {
    id: index + 1,
    uuid,
    first_name: first,
    last_name: last,
    full_name: `${first} ${last}`,
    email: `${local}@${mailDomain}`,
    phone,
    city: place[0],
    country: place[1],
    company,
    job_title: job,
    date,
    age,
    boolean: bool,
    price,
    ip,
    url: `https://www.${companyDomain}/${path}`,
  };
}

function run(params) {
  const count = params.count === undefined ? 5 : params.count;
  const seed = params.seed === undefined ? 1 : params.seed;
  const fields = params.fields === undefined ? DEFAULT_FIELDS : params.fields;

  if (!Number.isInteger(count) || count < 1 || count > 1000) throw new Error('count must be an integer from 1 to 1000');
  if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) throw new Error('seed must be an integer from 0 to 4294967295');
  if (!Array.isArray(fields) || fields.length === 0) throw new Error('fields must be a non-empty array');
  for (const f of fields) {
    if (!ALL_FIELDS.includes(f)) throw new Error(`unknown field ${JSON.stringify(f)}; choose from ${ALL_FIELDS.join(', ')}`);
  }

  const rand = mulberry32(seed);
  const records = [];
  const usedEmails = new Set();
  for (let i = 0; i < count; i++) {
    const full = makeRecord(rand, i);
    // Keep emails unique (handy for fixtures with unique constraints).
    if (usedEmails.has(full.email)) full.email = full.email.replace('@', `.${i + 1}@`);
    usedEmails.add(full.email);
    const rec = {};
    for (const f of fields) rec[f] = full[f];
    records.push(rec);
  }
  return { records, count, seed, fields: fields.slice() };
}
