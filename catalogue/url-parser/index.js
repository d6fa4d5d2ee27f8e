// url-parser: splits an absolute URL into its components (WHATWG-style names).
//
// The engine has no URL class, so this parses RFC 3986 syntax with regular
// expressions: scheme ":" ["//" authority] path ["?" query] ["#" fragment].
// It lower-cases the scheme and host, masks any password as "***", works out
// the origin and the effective port for well-known schemes, and decodes the
// query string into an object (+ as space, percent-decoding, repeated keys
// become arrays). Hosts are not IDNA/punycode-converted. Relative, scheme-less
// or malformed URLs (bad port, bad IPv4/IPv6 host, spaces) throw an Error.

const DEFAULT_PORTS = { http: 80, https: 443, ws: 80, wss: 443, ftp: 21 };
const HOST_RE = /^[A-Za-z0-9\-._~!$&'()*+,;=%\u0080-\uffff]*$/;

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    return s; // malformed %-escape: keep the text as written
  }
}

// Assigns own properties without tripping over keys like "__proto__".
function setProp(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function parseQuery(search) {
  const query = {};
  if (search.length <= 1) return query;
  for (const pair of search.slice(1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const key = safeDecode(rawKey.replace(/\+/g, ' '));
    const value = safeDecode(rawValue.replace(/\+/g, ' '));
    if (!Object.prototype.hasOwnProperty.call(query, key)) setProp(query, key, value);
    else if (Array.isArray(query[key])) query[key].push(value);
    else setProp(query, key, [query[key], value]);
  }
  return query;
}

function parseHostPort(hostport, scheme) {
  let hostname;
  let portText = '';
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close === -1) throw new Error('invalid IPv6 host: missing "]"');
    hostname = hostport.slice(0, close + 1).toLowerCase();
    if (!/^\[[0-9a-f:.]+\]$/.test(hostname) || !hostname.includes(':')) throw new Error(`invalid IPv6 host ${hostname}`);
    const after = hostport.slice(close + 1);
    if (after !== '' && after[0] !== ':') throw new Error(`unexpected text after IPv6 host: ${after}`);
    portText = after.slice(1);
  } else {
    const colon = hostport.indexOf(':');
    hostname = (colon === -1 ? hostport : hostport.slice(0, colon)).toLowerCase();
    portText = colon === -1 ? '' : hostport.slice(colon + 1);
    if (!HOST_RE.test(hostname)) throw new Error(`invalid host ${JSON.stringify(hostname)}`);
    if (/^[0-9]+(\.[0-9]+){3}$/.test(hostname) && hostname.split('.').some((o) => Number(o) > 255)) {
      throw new Error(`invalid IPv4 address ${hostname}: each part must be 0-255`);
    }
  }
  let port = null;
  if (portText !== '') {
    if (!/^[0-9]+$/.test(portText) || Number(portText) > 65535) {
      throw new Error(`invalid port ${JSON.stringify(portText)}: must be a number from 0 to 65535`);
    }
    port = Number(portText);
  }
  if (hostname === '' && scheme in DEFAULT_PORTS) throw new Error(`a ${scheme} URL needs a host`);
  return { hostname, port };
}

function run(params) {
  if (typeof params.url !== 'string') throw new Error('url must be a string');
  const input = params.url.trim();
  if (input === '') throw new Error('url is empty');
  if (/[\s\u0000-\u001f\u007f]/.test(input)) throw new Error('url contains whitespace or control characters (percent-encode spaces as %20)');

  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/.exec(input);
  if (!m) {
    if (input.startsWith('//')) throw new Error('scheme-relative URL: add a scheme such as https:');
    throw new Error(`not an absolute URL: missing a scheme (did you mean https://${input}?)`);
  }
  const scheme = m[1].toLowerCase();
  let rest = m[2];

  // Split off the fragment and the query first; neither may contain the other's delimiter before it.
  let hash = '';
  const hashAt = rest.indexOf('#');
  if (hashAt !== -1) [rest, hash] = [rest.slice(0, hashAt), rest.slice(hashAt)];
  let search = '';
  const queryAt = rest.indexOf('?');
  if (queryAt !== -1) [rest, search] = [rest.slice(0, queryAt), rest.slice(queryAt)];

  let username = '';
  let rawUser = '';
  let password = '';
  let hostname = '';
  let port = null;
  let pathname = rest;
  const hierarchical = rest.startsWith('//');
  if (hierarchical) {
    const slash = rest.indexOf('/', 2);
    const authority = slash === -1 ? rest.slice(2) : rest.slice(2, slash);
    pathname = slash === -1 ? '' : rest.slice(slash);
    const at = authority.lastIndexOf('@');
    const hostport = at === -1 ? authority : authority.slice(at + 1);
    if (at !== -1) {
      const userinfo = authority.slice(0, at);
      const colon = userinfo.indexOf(':');
      rawUser = colon === -1 ? userinfo : userinfo.slice(0, colon);
      username = safeDecode(rawUser);
      password = colon !== -1 && colon < userinfo.length - 1 ? '***' : '';
    }
    ({ hostname, port } = parseHostPort(hostport, scheme));
    if (pathname === '' && (scheme in DEFAULT_PORTS || scheme === 'file')) pathname = '/';
  } else if (scheme in DEFAULT_PORTS) {
    throw new Error(`a ${scheme} URL must have "//" after "${scheme}:"`);
  }

  const host = hostname + (port !== null ? `:${port}` : '');
  const defaultPort = DEFAULT_PORTS[scheme] ?? null;
  const originPort = port !== null && port !== defaultPort ? `:${port}` : '';
  const origin = scheme in DEFAULT_PORTS ? `${scheme}://${hostname}${originPort}` : 'null';
  const userPart = rawUser || password ? `${rawUser}${password ? ':' + password : ''}@` : '';
  const href = `${scheme}:${hierarchical ? '//' + userPart + host : ''}${pathname}${search}${hash}`;

  return {
    href,
    protocol: `${scheme}:`,
    username,
    password,
    host,
    hostname,
    port,
    effective_port: port ?? defaultPort,
    pathname,
    search: search === '?' ? '' : search,
    hash: hash === '#' ? '' : hash,
    origin,
    query: parseQuery(search),
    path_segments: pathname.split('/').filter((s) => s !== '').map(safeDecode),
  };
}
