// email-validator: offline syntax checks for email addresses.
//
// Validates the practical subset of RFC 5322 / RFC 5321 that mail systems
// accept: a dot-atom local part (quoted local parts are accepted but flagged),
// a domain of LDH labels (1-63 characters, no leading/trailing hyphen, at least
// two labels, a non-numeric TLD) or an address literal, and the length limits
// (local part 64 octets, address 254). It also suggests fixes for typos of big
// providers (gmial.com -> gmail.com, by edit distance), and flags disposable
// domains and role accounts (admin@, info@ ...). No DNS or SMTP lookups happen,
// so a valid result means "well-formed", not "deliverable".

const PROVIDERS = [
  'gmail.com', 'yahoo.com', 'hotmail.com', 'outlook.com', 'icloud.com', 'aol.com', 'live.com', 'msn.com',
  'protonmail.com', 'proton.me', 'gmx.com', 'gmx.de', 'web.de', 'mail.com', 'yandex.ru', 'mail.ru', 'zoho.com',
  'yahoo.co.uk', 'hotmail.co.uk', 'googlemail.com', 'me.com', 'comcast.net', 'qq.com', '163.com', 'fastmail.com',
];
const DISPOSABLE = new Set([
  'mailinator.com', 'guerrillamail.com', 'guerrillamail.net', 'guerrillamailblock.com', 'sharklasers.com', 'grr.la',
  '10minutemail.com', '10minutemail.net', 'temp-mail.org', 'tempmail.com', 'tempmail.net', 'tempmailo.com',
  'yopmail.com', 'yopmail.net', 'trashmail.com', 'trashmail.de', 'getnada.com', 'nada.email', 'dispostable.com',
  'maildrop.cc', 'throwawaymail.com', 'fakeinbox.com', 'mintemail.com', 'mohmal.com', 'emailondeck.com',
  'spamgourmet.com', 'mailnesia.com', 'tempr.email', 'discard.email', 'mailcatch.com', 'moakt.com',
  'burnermail.io', 'getairmail.com', 'mytemp.email', 'tempail.com', 'emailfake.com', 'crazymailing.com',
  'spambox.us', 'mailpoof.com', 'inboxkitten.com', 'harakirimail.com', 'trbvm.com', 'dropmail.me', '33mail.com',
  'anonaddy.me', 'mail.tm', 'temp-mail.io', 'tmpmail.org', 'tmail.ws', 'mailsac.com',
]);
const ROLES = new Set([
  'admin', 'administrator', 'abuse', 'accounts', 'billing', 'careers', 'contact', 'compliance', 'customerservice',
  'dev', 'devnull', 'enquiries', 'feedback', 'finance', 'help', 'helpdesk', 'hello', 'hostmaster', 'hr', 'info',
  'jobs', 'legal', 'mail', 'mailer-daemon', 'marketing', 'media', 'newsletter', 'no-reply', 'noreply', 'do-not-reply',
  'donotreply', 'office', 'ops', 'orders', 'postmaster', 'press', 'privacy', 'root', 'sales', 'security', 'service',
  'support', 'sysadmin', 'team', 'webmaster', 'www',
]);

const ATEXT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/;
const MAX_ITEMS = 1000;

function utf8Length(s) {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

// Optimal string alignment distance (Levenshtein plus adjacent transposition).
function editDistance(a, b) {
  const d = [];
  for (let i = 0; i <= a.length; i++) d.push([i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

// Top-level parts that are real for the big providers: never "corrected".
const REAL_TLDS = new Set(['com', 'net', 'org', 'de', 'fr', 'it', 'es', 'nl', 'be', 'ch', 'at', 'pl', 'se', 'ru', 'jp', 'cn',
  'in', 'ca', 'co.uk', 'co.jp', 'co.in', 'com.au', 'com.br', 'com.mx', 'com.ar', 'me', 'io', 'edu']);
// Real mail domains one typo away from a provider ("email" vs "gmail").
const REAL_NAMES = new Set(['email', 'ymail', 'mail', 'gmx', 'live', 'msn', 'aim', 'mac', 'hey', 'hushmail', 'inbox', 'posteo', 'mailbox', 'zoho']);

const splitDomain = (d) => {
  const i = d.indexOf('.');
  return i < 0 ? [d, ''] : [d.slice(0, i), d.slice(i + 1)];
};

// A big provider the domain is probably a typo of, judging name and TLD separately.
function suggestDomain(domain) {
  if (PROVIDERS.includes(domain)) return null;
  if (!domain.includes('.')) return PROVIDERS.find((p) => p.replace(/\./g, '') === domain) || null; // "gmailcom"
  const [name, tld] = splitDomain(domain);
  let best = null;
  let bestScore = Infinity;
  for (const p of PROVIDERS) {
    const [pName, pTld] = splitDomain(p);
    let score = 0;
    if (tld !== pTld) {
      if (REAL_TLDS.has(tld)) continue;
      const dt = editDistance(tld, pTld);
      if (dt > 1) continue;
      score += dt;
    }
    if (name !== pName) {
      if (REAL_NAMES.has(name) || pName.length <= 3) continue;
      const dn = editDistance(name, pName);
      if (dn > (pName.length >= 6 ? 2 : 1)) continue;
      score += dn;
    }
    if (score < bestScore) [best, bestScore] = [p, score];
  }
  return best;
}

function checkLocal(local, errors, warnings) {
  if (local === '') return errors.push('local part (before @) is empty');
  if (utf8Length(local) > 64) errors.push(`local part is ${utf8Length(local)} octets; the limit is 64`);
  if (local.startsWith('"')) {
    if (!/^"(?:[^"\\\r\n]|\\[\x20-\x7e])*"$/.test(local)) return errors.push('quoted local part is not closed properly or has a bad escape');
    warnings.push('quoted local part: valid per RFC 5322 but rejected by many mail systems and forms');
    return;
  }
  if (local.startsWith('.') || local.endsWith('.')) errors.push('local part must not start or end with a dot');
  if (local.includes('..')) errors.push('local part must not contain two dots in a row');
  const bad = [...new Set(local.replace(/\./g, '').split('').filter((c) => !ATEXT.test(c) && c.charCodeAt(0) < 0x80))];
  if (bad.length) errors.push(`local part has characters that need quoting: ${bad.map((c) => JSON.stringify(c)).join(' ')}`);
  if (/[^\x00-\x7f]/.test(local)) warnings.push('non-ASCII local part needs SMTPUTF8 (RFC 6531) support from every server on the way');
}

function checkDomain(domain, errors, warnings) {
  if (domain === '') return errors.push('domain (after @) is empty');
  if (domain.startsWith('[')) {
    const m = /^\[(?:(\d{1,3}(?:\.\d{1,3}){3})|IPv6:([0-9A-Fa-f:.]+))\]$/.exec(domain);
    if (!m || (m[1] && m[1].split('.').some((o) => Number(o) > 255))) return errors.push('malformed address literal (expected [1.2.3.4] or [IPv6:...])');
    warnings.push('domain is an IP address literal: valid syntax, but almost never accepted in practice');
    return;
  }
  if (domain.length > 253) errors.push(`domain is ${domain.length} characters; the limit is 253`);
  const labels = domain.split('.');
  if (labels.length < 2) errors.push('domain needs at least two labels (a dot and a top-level domain)');
  for (const label of labels) {
    if (label === '') {
      errors.push('domain has an empty label (leading, trailing or double dot)');
      break;
    }
    if (label.length > 63) errors.push(`domain label "${label.slice(0, 20)}..." is longer than 63 characters`);
    if (label.startsWith('-') || label.endsWith('-')) errors.push(`domain label "${label}" starts or ends with a hyphen`);
    const bad = label.replace(/[A-Za-z0-9-]/g, '').replace(/[^\x00-\x7f]/g, '');
    if (bad) errors.push(`domain label "${label}" has invalid characters: ${[...new Set(bad)].map((c) => JSON.stringify(c)).join(' ')}`);
  }
  const tld = labels[labels.length - 1];
  if (labels.length >= 2 && /^[0-9]+$/.test(tld)) errors.push('top-level domain must not be all digits');
  if (/[^\x00-\x7f]/.test(domain)) warnings.push('internationalised domain: mail systems need it in punycode (xn--) form');
}

function validate(input) {
  const errors = [];
  const warnings = [];
  const address = input.trim();
  if (address !== input) warnings.push('leading or trailing whitespace was removed');
  const result = { input, valid: false, normalized: null, local_part: null, domain: null, errors, warnings, suggestion: null, disposable: false, role_account: false, subaddress: null };
  if (address === '') {
    errors.push('empty address');
    return result;
  }
  if (/[\r\n]/.test(address)) errors.push('address contains a line break');
  const at = address.lastIndexOf('@');
  if (at < 0) {
    errors.push('missing @');
    return result;
  }
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  result.local_part = local;
  result.domain = domain;
  if (!local.startsWith('"') && local.includes('@')) errors.push('more than one @ (quote the local part to use @ in it)');
  else checkLocal(local, errors, warnings);
  checkDomain(domain, errors, warnings);
  if (utf8Length(address) > 254) errors.push(`address is ${utf8Length(address)} octets; the limit is 254`);

  const lowerDomain = domain.toLowerCase();
  const baseLocal = local.toLowerCase().replace(/^"|"$/g, '').split('+')[0];
  const plus = local.startsWith('"') ? -1 : local.indexOf('+');
  result.subaddress = plus >= 0 ? local.slice(plus + 1) : null;
  result.role_account = ROLES.has(baseLocal);
  const parts = lowerDomain.split('.');
  result.disposable = parts.some((_, i) => DISPOSABLE.has(parts.slice(i).join('.')));
  const fix = suggestDomain(lowerDomain);
  if (fix) result.suggestion = `${local}@${fix}`;
  result.valid = errors.length === 0;
  if (result.valid) result.normalized = `${local}@${lowerDomain}`;
  return result;
}

function run(params) {
  const hasOne = params.email !== undefined;
  const hasMany = params.emails !== undefined;
  if (hasOne === hasMany) throw new Error('give exactly one of email (a string) or emails (a list)');
  const list = hasOne ? [params.email] : params.emails;
  if (!Array.isArray(list)) throw new Error('emails must be an array of strings');
  if (list.length > MAX_ITEMS) throw new Error(`at most ${MAX_ITEMS} addresses per call (got ${list.length})`);
  const results = list.map((e, i) => {
    if (typeof e !== 'string') throw new Error(`emails[${i}] is not a string`);
    return validate(e);
  });
  const valid = results.filter((r) => r.valid).length;
  return {
    results,
    summary: {
      total: results.length,
      valid,
      invalid: results.length - valid,
      with_suggestions: results.filter((r) => r.suggestion !== null).length,
      disposable: results.filter((r) => r.disposable).length,
      role_accounts: results.filter((r) => r.role_account).length,
    },
    dns_checked: false,
  };
}
