// cidr-calculator: subnet arithmetic for IPv4 and IPv6 CIDR blocks.
//
// Accepts "addr/prefix", "a.b.c.d/255.255.255.0" or a plain address (taken as
// /32 or /128). Computes the network, broadcast (IPv4), first and last usable
// host, address and host counts (decimal strings, exact for IPv6), netmask and
// wildcard, classifies the address (private, loopback, link-local, multicast,
// documentation ...), checks whether an optional `ip` lies inside the block, and
// splits the block into equal subnets of `new_prefix` (first 256 listed).
// All arithmetic uses BigInt so IPv4 and IPv6 share one code path.

const MAX_SUBNETS = 256;

function parseV4(s) {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  let v = 0n;
  for (let i = 1; i <= 4; i++) {
    if (m[i].length > 1 && m[i][0] === '0') throw new Error(`IPv4 octet "${m[i]}" has a leading zero (ambiguous: octal or decimal?)`);
    const n = Number(m[i]);
    if (n > 255) throw new Error(`IPv4 octet ${n} is greater than 255`);
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

function parseV6(s) {
  if (s.includes('%')) throw new Error('IPv6 zone identifiers (%eth0) are not supported');
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(':')) return null;
  const halves = s.split('::');
  if (halves.length > 2) throw new Error(`"${s}" has more than one "::"`);
  // Converts "a:b:1.2.3.4" into 16-bit words; an embedded IPv4 may only end the address.
  const toWords = (part, isEnd) => {
    const words = [];
    const gs = part === '' ? [] : part.split(':');
    gs.forEach((g, i) => {
      if (g.includes('.')) {
        const v4 = isEnd && i === gs.length - 1 ? parseV4(g) : null;
        if (v4 === null) throw new Error(`"${g}" in "${s}" is not a dotted-quad IPv4 address ending the address`);
        words.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(g)) words.push(parseInt(g, 16));
      else throw new Error(`"${g}" is not a valid IPv6 group in "${s}" (1-4 hex digits)`);
    });
    return words;
  };
  const head = toWords(halves[0], halves.length === 1);
  const tail = halves.length === 2 ? toWords(halves[1], true) : [];
  const n = head.length + tail.length;
  if (halves.length === 1 && n !== 8) throw new Error(`"${s}" has ${n} groups; IPv6 needs 8 (or "::")`);
  if (halves.length === 2 && n > 7) throw new Error(`"${s}" has too many groups for "::" to stand for any`);
  const full = head.concat(new Array(8 - n).fill(0), tail);
  return full.reduce((acc, w) => (acc << 16n) | BigInt(w), 0n);
}

// Parses an address of either family: { version, bits, value }.
function parseAddress(text, what) {
  const s = text.trim();
  const v4 = parseV4(s);
  if (v4 !== null) return { version: 4, bits: 32, value: v4 };
  const v6 = parseV6(s);
  if (v6 !== null) return { version: 6, bits: 128, value: v6 };
  throw new Error(`${what} "${s}" is not a valid IPv4 or IPv6 address`);
}

function formatV4(v) {
  return [24n, 16n, 8n, 0n].map((sh) => String((v >> sh) & 255n)).join('.');
}

// RFC 5952: lower case, no leading zeros, longest run (>= 2) of zero groups as "::";
// IPv4-mapped addresses keep their dotted tail (::ffff:192.0.2.1).
function formatV6(v) {
  if (v >> 32n === 0xffffn) return `::ffff:${formatV4(v & 0xffffffffn)}`;
  const w = [];
  for (let i = 7; i >= 0; i--) w.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (w[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && w[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = w.map((x) => x.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

const fmt = (version, v) => (version === 4 ? formatV4(v) : formatV6(v));

// Special-purpose ranges, most specific first: [cidr, type, flags].
const SPECIAL = [
  ['0.0.0.0/32', 'unspecified', ''], ['0.0.0.0/8', 'this-network (reserved)', ''],
  ['10.0.0.0/8', 'private', 'p'], ['172.16.0.0/12', 'private', 'p'], ['192.168.0.0/16', 'private', 'p'],
  ['100.64.0.0/10', 'shared address space (CGNAT)', ''], ['127.0.0.0/8', 'loopback', 'l'],
  ['169.254.0.0/16', 'link-local', 'k'], ['192.0.0.0/24', 'IETF protocol assignments', ''],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)', 'd'], ['198.51.100.0/24', 'documentation (TEST-NET-2)', 'd'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)', 'd'], ['198.18.0.0/15', 'benchmarking', ''],
  ['224.0.0.0/4', 'multicast', 'm'], ['255.255.255.255/32', 'limited broadcast', ''], ['240.0.0.0/4', 'reserved', ''],
  ['::/128', 'unspecified', ''], ['::1/128', 'loopback', 'l'], ['::ffff:0:0/96', 'IPv4-mapped', ''],
  ['64:ff9b::/96', 'NAT64', 'g'], ['100::/64', 'discard-only', ''], ['2001:db8::/32', 'documentation', 'd'],
  ['3fff::/20', 'documentation', 'd'], ['2001::/32', 'Teredo', 'g'], ['2002::/16', '6to4', 'g'],
  ['fc00::/7', 'unique local (private)', 'p'], ['fe80::/10', 'link-local', 'k'], ['ff00::/8', 'multicast', 'm'],
  ['2000::/3', 'public (global unicast)', 'g'], ['::/0', 'reserved', ''],
].map(([cidr, type, flags]) => {
  const [a, p] = cidr.split('/');
  const addr = parseAddress(a, 'table');
  const prefix = BigInt(p);
  return { version: addr.version, net: addr.value, shift: BigInt(addr.bits) - prefix, type, flags };
});

function classify(addr) {
  const hit = SPECIAL.find((r) => r.version === addr.version && addr.value >> r.shift === r.net >> r.shift) || {
    type: 'public',
    flags: 'g',
  };
  let cls = null;
  if (addr.version === 4) {
    const first = Number(addr.value >> 24n);
    cls = first < 128 ? 'A' : first < 192 ? 'B' : first < 224 ? 'C' : first < 240 ? 'D' : 'E';
  }
  return {
    type: hit.type,
    class: cls,
    is_private: hit.flags.includes('p'),
    is_loopback: hit.flags.includes('l'),
    is_link_local: hit.flags.includes('k'),
    is_multicast: hit.flags.includes('m'),
    is_documentation: hit.flags.includes('d'),
    is_global: hit.flags.includes('g'),
  };
}

// Parses the prefix part: a length, or (IPv4) a dotted netmask.
function parsePrefix(text, addr) {
  if (/^\d{1,3}$/.test(text)) {
    const p = Number(text);
    if (p > addr.bits) throw new Error(`prefix /${p} is too long for IPv${addr.version} (maximum /${addr.bits})`);
    return p;
  }
  if (addr.version === 4) {
    const mask = parseV4(text);
    if (mask !== null) {
      const bin = mask.toString(2).padStart(32, '0');
      if (!/^1*0*$/.test(bin)) throw new Error(`netmask ${text} is not contiguous (ones must precede zeros)`);
      return bin.indexOf('0') < 0 ? 32 : bin.indexOf('0');
    }
  }
  throw new Error(`"/${text}" is not a valid prefix length${addr.version === 4 ? ' or netmask' : ''}`);
}

// Facts about the block of `prefix` containing `value`.
function block(version, bits, value, prefix) {
  const hostBits = BigInt(bits - prefix);
  const size = 1n << hostBits;
  const network = (value >> hostBits) << hostBits;
  const last = network + size - 1n;
  let first = network;
  let lastHost = last;
  let usable = size;
  if (version === 4 && prefix <= 30) [first, lastHost, usable] = [network + 1n, last - 1n, size - 2n];
  return { network, last, first, lastHost, size, usable };
}

function run(params) {
  if (typeof params.cidr !== 'string' || params.cidr.trim() === '') throw new Error('cidr must be a non-empty string');
  const [addrText, prefixText, extra] = params.cidr.trim().split('/');
  if (extra !== undefined) throw new Error('cidr has more than one "/"');
  const addr = parseAddress(addrText, 'address');
  const isCidr = prefixText !== undefined;
  const prefix = isCidr ? parsePrefix(prefixText.trim(), addr) : addr.bits;
  const { version, bits } = addr;
  const b = block(version, bits, addr.value, prefix);
  const maskValue = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);

  const result = {
    version,
    input_type: isCidr ? 'cidr' : 'address',
    address: fmt(version, addr.value),
    prefix,
    cidr: `${fmt(version, b.network)}/${prefix}`,
    network: fmt(version, b.network),
    broadcast: version === 4 ? formatV4(b.last) : null,
    first_host: fmt(version, b.first),
    last_host: fmt(version, b.lastHost),
    total_addresses: b.size.toString(),
    usable_hosts: b.usable.toString(),
    netmask: fmt(version, maskValue),
    wildcard: version === 4 ? formatV4(maskValue ^ 0xffffffffn) : null,
    host_bits_set: addr.value !== b.network,
    address_info: classify(addr),
  };

  if (params.ip !== undefined) {
    const ip = parseAddress(String(params.ip), 'ip');
    result.contains = {
      ip: fmt(ip.version, ip.value),
      inside: ip.version === version && ip.value >= b.network && ip.value <= b.last,
    };
  }

  if (params.new_prefix !== undefined) {
    const np = params.new_prefix;
    if (!Number.isInteger(np) || np < prefix || np > bits) {
      throw new Error(`new_prefix must be an integer from ${prefix} to ${bits} (not shorter than the block's /${prefix})`);
    }
    const count = 1n << BigInt(np - prefix);
    const step = 1n << BigInt(bits - np);
    const list = [];
    for (let i = 0n; i < count && i < BigInt(MAX_SUBNETS); i++) {
      const s = block(version, bits, b.network + i * step, np);
      list.push({
        cidr: `${fmt(version, s.network)}/${np}`,
        first_host: fmt(version, s.first),
        last_host: fmt(version, s.lastHost),
        broadcast: version === 4 ? formatV4(s.last) : null,
      });
    }
    result.subnets = { new_prefix: np, count: count.toString(), truncated: count > BigInt(MAX_SUBNETS), list };
  }
  return result;
}
