// http-status: looks up HTTP status codes from an embedded copy of the IANA
// "HTTP Status Code Registry" (100-511) plus 418 I'm a teapot.
//
// Three ways in: `code` (one code), `search` (words matched against code, name
// and description, best matches first) or `class` ("4xx" or "4": every code of a
// class). Each entry carries its name, class, a short description, the defining
// RFC section, and two defaults worth knowing: whether a client may retry the
// request later (with backoff) and whether the response is heuristically
// cacheable per RFC 9110 Section 15.1.

const CLASS_NAMES = { 1: 'Informational', 2: 'Success', 3: 'Redirection', 4: 'Client Error', 5: 'Server Error' };

// Heuristically cacheable by default (RFC 9110 Section 15.1).
const CACHEABLE = new Set([200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]);
// Worth retrying later with backoff (idempotent requests; honour Retry-After when sent).
const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

// code | name | RFC reference ("S" = RFC 9110, Section) | description | optional note
const TABLE = `
100|Continue|S 15.2.1|The server received the request headers; the client should go on sending the body (reply to Expect: 100-continue).
101|Switching Protocols|S 15.2.2|The server agrees to switch to the protocol named in the Upgrade header, as in a WebSocket handshake.
102|Processing|RFC 2518, Section 10.1|WebDAV: the server accepted the request and is still working on it, so the client should not time out.|Deprecated interim response; RFC 4918 dropped it.
103|Early Hints|RFC 8297|Interim response carrying Link headers so the client can preload resources while the final response is prepared.
200|OK|S 15.3.1|The request succeeded; the body holds the result (for GET, the resource).
201|Created|S 15.3.2|The request created a new resource, usually identified by the Location header.
202|Accepted|S 15.3.3|The request was accepted for processing but has not completed; the outcome is not known yet.
203|Non-Authoritative Information|S 15.3.4|Success, but a transforming proxy modified the origin server's response.
204|No Content|S 15.3.5|The request succeeded and there is no body to return.
205|Reset Content|S 15.3.6|The request succeeded; the client should reset the document view, such as clearing a form.
206|Partial Content|S 15.3.7|The server returns only the byte ranges asked for in a Range request.
207|Multi-Status|RFC 4918, Section 11.1|WebDAV: the body is an XML document with a separate status for each of several resources.
208|Already Reported|RFC 5842, Section 7.1|WebDAV: members of a binding already listed earlier in the same Multi-Status response are not repeated.
226|IM Used|RFC 3229, Section 10.4.1|The server fulfilled a GET with instance manipulations (delta encoding) applied to the current instance.
300|Multiple Choices|S 15.4.1|The resource has several representations; the client or user picks one.
301|Moved Permanently|S 15.4.2|The resource has a new permanent URI given in Location; clients may change POST to GET when following it.
302|Found|S 15.4.3|The resource is temporarily at the URI given in Location; clients may change POST to GET when following it.
303|See Other|S 15.4.4|The response is at another URI (Location), to be fetched with GET, as after a form POST.
304|Not Modified|S 15.4.5|A conditional GET found the cached copy still valid; no body is sent.
305|Use Proxy|S 15.4.6|The resource must be accessed through the proxy given in Location.|Deprecated for security reasons; clients ignore it.
306|(Unused)|S 15.4.7|Used in an earlier HTTP draft (Switch Proxy); reserved and no longer used.|Reserved, never sent.
307|Temporary Redirect|S 15.4.8|The resource is temporarily at the URI in Location; the client must repeat the same method and body.
308|Permanent Redirect|S 15.4.9|The resource has a new permanent URI in Location; the client must repeat the same method and body.
400|Bad Request|S 15.5.1|The server cannot process the request because of a client error such as malformed syntax or invalid framing.
401|Unauthorized|S 15.5.2|The request lacks valid authentication credentials; the WWW-Authenticate header says how to authenticate.
402|Payment Required|S 15.5.3|Reserved for future use; some APIs use it when payment or a paid plan is needed.
403|Forbidden|S 15.5.4|The server understood the request but refuses it; authenticating again will not help.
404|Not Found|S 15.5.5|The server has no current representation for the target resource, or will not say that one exists.
405|Method Not Allowed|S 15.5.6|The method is not supported by the target resource; the Allow header lists those that are.
406|Not Acceptable|S 15.5.7|No representation matches the request's Accept, Accept-Language or Accept-Encoding headers.
407|Proxy Authentication Required|S 15.5.8|Like 401, but the client must authenticate with the proxy (Proxy-Authenticate header).
408|Request Timeout|S 15.5.9|The server did not receive a complete request in time and closed the connection; the client may repeat it.
409|Conflict|S 15.5.10|The request conflicts with the current state of the resource, such as an edit conflict or a duplicate.
410|Gone|S 15.5.11|The resource is permanently gone and no forwarding address is known.
411|Length Required|S 15.5.12|The server requires a Content-Length header.
412|Precondition Failed|S 15.5.13|A precondition in the request headers (If-Match, If-Unmodified-Since) evaluated to false.
413|Content Too Large|S 15.5.14|The request body is larger than the server is willing to process (formerly Payload Too Large).
414|URI Too Long|S 15.5.15|The request target URI is longer than the server is willing to interpret.
415|Unsupported Media Type|S 15.5.16|The request body's Content-Type or Content-Encoding is not supported for this method and resource.
416|Range Not Satisfiable|S 15.5.17|None of the ranges in the Range header overlap the current extent of the resource.
417|Expectation Failed|S 15.5.18|The expectation in the Expect header cannot be met.
418|I'm a teapot|RFC 2324, Section 2.3.2|April Fools' joke from the Hyper Text Coffee Pot Control Protocol: the server refuses to brew coffee because it is a teapot.|Not a real status: RFC 9110 Section 15.5.19 reserves 418 as (Unused) because the joke is widely deployed.
421|Misdirected Request|S 15.5.20|The request was sent to a server that cannot produce a response for this scheme and authority (connection reuse).
422|Unprocessable Content|S 15.5.21|The request is well-formed but its content fails semantic validation (formerly Unprocessable Entity).
423|Locked|RFC 4918, Section 11.3|WebDAV: the source or destination resource is locked.
424|Failed Dependency|RFC 4918, Section 11.4|WebDAV: the method failed because an action it depended on failed.
425|Too Early|RFC 8470, Section 5.2|The server will not process a request sent in TLS early data (0-RTT) because it might be replayed; retry after the handshake.
426|Upgrade Required|S 15.5.22|The server refuses the request over the current protocol; the Upgrade header names the one to switch to.
428|Precondition Required|RFC 6585, Section 3|The server requires the request to be conditional (If-Match) to prevent lost updates.
429|Too Many Requests|RFC 6585, Section 4|Rate limited: the client sent too many requests in a given time; Retry-After may say how long to wait.
431|Request Header Fields Too Large|RFC 6585, Section 5|A single header field, or all header fields together, are too large.
451|Unavailable For Legal Reasons|RFC 7725, Section 3|Access is denied as a consequence of a legal demand, such as censorship or a court order.
500|Internal Server Error|S 15.6.1|The server met an unexpected condition that prevented it from fulfilling the request.
501|Not Implemented|S 15.6.2|The server does not support the functionality (method) needed to fulfil the request.
502|Bad Gateway|S 15.6.3|A gateway or proxy received an invalid response from the upstream server.
503|Service Unavailable|S 15.6.4|The server is temporarily overloaded or down for maintenance; Retry-After may say when to try again.
504|Gateway Timeout|S 15.6.5|A gateway or proxy did not get a timely response from the upstream server.
505|HTTP Version Not Supported|S 15.6.6|The server does not support the major HTTP version used in the request.
506|Variant Also Negotiates|RFC 2295, Section 8.1|Transparent content negotiation found a configuration error: the chosen variant itself negotiates.
507|Insufficient Storage|RFC 4918, Section 11.5|WebDAV: the server cannot store the representation needed to complete the request.
508|Loop Detected|RFC 5842, Section 7.2|WebDAV: the server found an infinite loop while processing a request with Depth: infinity.
510|Not Extended|RFC 2774, Section 7|Further extensions to the request are required (HTTP Extension Framework).|Obsoleted: RFC 2774 has Historic status.
511|Network Authentication Required|RFC 6585, Section 6|The client must authenticate to gain network access, as with a captive portal.
`;

const CODES = TABLE.trim()
  .split('\n')
  .map((line) => {
    const [code, name, ref, description, note] = line.split('|');
    const n = Number(code);
    const digit = Math.floor(n / 100);
    return {
      code: n,
      name,
      class: `${digit}xx`,
      class_name: CLASS_NAMES[digit],
      description,
      rfc: ref.startsWith('S ') ? `RFC 9110, Section ${ref.slice(2)}` : ref,
      retryable: RETRYABLE.has(n),
      cacheable_by_default: CACHEABLE.has(n),
      note: note === undefined ? null : note,
    };
  });

const STOP = new Set(['the', 'a', 'an', 'is', 'of', 'to', 'for', 'status', 'code', 'http', 'error', 'response']);

// Ranks codes against the words of `query`: a hit in the name weighs more than
// one in the description; every word must hit somewhere.
function search(query) {
  const q = query.toLowerCase().trim();
  const exact = /^\d{3}$/.test(q) ? CODES.filter((c) => String(c.code) === q) : [];
  if (exact.length) return exact;
  const prefix = /^[1-5]\d?x{0,2}$/.test(q) ? q.replace(/x+$/, '') : null;
  if (prefix) return CODES.filter((c) => String(c.code).startsWith(prefix));
  let words = q.split(/[^a-z0-9']+/).filter((w) => w !== '');
  const meaningful = words.filter((w) => !STOP.has(w));
  if (meaningful.length) words = meaningful;
  if (words.length === 0) return [];
  const scored = [];
  for (const c of CODES) {
    const name = c.name.toLowerCase();
    const text = `${c.description} ${c.note || ''}`.toLowerCase();
    let score = 0;
    let all = true;
    for (const w of words) {
      const re = new RegExp(`\\b${w.replace(/'/g, "'?")}`);
      if (re.test(name)) score += 10;
      else if (re.test(text)) score += 3;
      else if (String(c.code) === w) score += 20;
      else all = false;
    }
    if (!all) continue;
    if (name === words.join(' ')) score += 50;
    scored.push({ c, score });
  }
  scored.sort((x, y) => y.score - x.score || x.c.code - y.c.code);
  return scored.map((s) => s.c);
}

function run(params) {
  const given = ['code', 'search', 'class'].filter((k) => params[k] !== undefined);
  if (given.length !== 1) throw new Error('give exactly one of code, search or class');
  const mode = given[0];

  if (mode === 'code') {
    const code = params.code;
    if (!Number.isInteger(code) || code < 100 || code > 599) throw new Error('code must be an integer from 100 to 599');
    const hit = CODES.filter((c) => c.code === code);
    const result = { mode, count: hit.length, results: hit };
    if (!hit.length) {
      const base = Math.floor(code / 100) * 100;
      result.message =
        `${code} is not a registered status code. RFC 9110 Section 15 says a client must treat an unrecognised ` +
        `code as the x00 code of its class: ${base} ${CODES.find((c) => c.code === base).name}.`;
    }
    return result;
  }

  if (mode === 'class') {
    const m = /^([1-5])(xx)?$/i.exec(String(params.class).trim());
    if (!m) throw new Error('class must be one of 1xx, 2xx, 3xx, 4xx, 5xx (or the digit alone)');
    const hit = CODES.filter((c) => c.class === `${m[1]}xx`);
    return { mode, count: hit.length, results: hit };
  }

  if (typeof params.search !== 'string' || params.search.trim() === '') throw new Error('search must be a non-empty string');
  const hit = search(params.search);
  const result = { mode, count: hit.length, results: hit };
  if (!hit.length) result.message = `no status code matches ${JSON.stringify(params.search)}`;
  return result;
}
