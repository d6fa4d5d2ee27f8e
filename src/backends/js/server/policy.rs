//! The address policy of `fetch`: which addresses a script may reach. Only globally
//! routable addresses, unless the operator lists an exception in `TOOLGATE_FETCH_ALLOW`;
//! loopback, link-local (the cloud metadata address among them), private, shared,
//! unique-local, unspecified, multicast, broadcast, documentation and reserved ranges are
//! refused, in every IPv6 form that embeds an IPv4 address too.
//!
//! The check runs on socket addresses, never on URL text: a host name is checked after
//! resolution, by the DNS resolver the HTTP client uses ([`PolicyResolver`]), so the
//! address checked is the address connected to; an IP-literal host (which skips DNS) is
//! checked by [`admit_literal`] after the URL parser has normalised it
//! (`http://2130706433/` and `http://0x7f.1/` are 127.0.0.1 by then). Redirects are
//! followed by `fetch.rs` itself, one checked hop at a time. What this module does not
//! own: schemes, sizes and deadlines (`fetch.rs`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The operator's exceptions to the address policy (`TOOLGATE_FETCH_ALLOW`). By default,
/// empty: no internal address is reachable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchAllow {
    entries: Vec<Allowed>,
}

/// One exception.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    /// `host:port`: that name, as the URL spells it, on that port, whatever it resolves to.
    Host(String, u16),
    /// `ip`: that address on any port.
    Ip(IpAddr),
    /// `ip:port`: that address on that port.
    Socket(IpAddr, u16),
    /// `ip/prefix`: a network, any port.
    Net(IpAddr, u8),
}

impl FetchAllow {
    /// Reads the setting: comma-separated `host:port`, `ip`, `ip:port` (`[v6]:port`) or
    /// `ip/prefix` entries; blanks between commas are ignored. An error is a sentence
    /// naming the setting, the entry and what it accepts.
    pub fn parse(setting: &str) -> Result<FetchAllow, String> {
        let entries = setting
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| Allowed::parse(e).map_err(|why| format!("TOOLGATE_FETCH_ALLOW entry \"{e}\": {why}")))
            .collect::<Result<_, _>>()?;
        Ok(FetchAllow { entries })
    }

    /// Returns true if and only if no exception is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Returns true if and only if requests to host name `name` on `port` are exempt.
    fn permits_host(&self, name: &str, port: u16) -> bool {
        let name = name.trim_end_matches('.');
        self.entries
            .iter()
            .any(|e| matches!(e, Allowed::Host(h, p) if *p == port && h.eq_ignore_ascii_case(name)))
    }

    /// Returns true if and only if `ip` (on `port`, when known) is listed.
    fn permits_addr(&self, ip: IpAddr, port: Option<u16>) -> bool {
        let ip = ip.to_canonical();
        self.entries.iter().any(|e| match *e {
            Allowed::Host(..) => false,
            Allowed::Ip(a) => a == ip,
            Allowed::Socket(a, p) => a == ip && port == Some(p),
            Allowed::Net(base, prefix) => in_net(ip, base, prefix),
        })
    }
}

impl Allowed {
    fn parse(entry: &str) -> Result<Allowed, String> {
        if let Some((ip, prefix)) = entry.split_once('/') {
            let ip: IpAddr = ip
                .parse()
                .map_err(|_| "a network is written ip/prefix, like 10.1.2.0/24 or fd00::/8".to_owned())?;
            let ip = ip.to_canonical();
            let bits = if ip.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= bits)
                .ok_or_else(|| format!("the prefix length must be a number from 0 to {bits}"))?;
            let base = mask(ip, prefix);
            if base != ip {
                return Err(format!(
                    "{ip} has bits set past /{prefix}; did you mean {base}/{prefix}?"
                ));
            }
            return Ok(Allowed::Net(base, prefix));
        }
        let bare = entry
            .strip_prefix('[')
            .and_then(|e| e.strip_suffix(']'))
            .unwrap_or(entry);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Allowed::Ip(ip.to_canonical()));
        }
        if let Ok(socket) = entry.parse::<SocketAddr>() {
            return port(socket.port()).map(|p| Allowed::Socket(socket.ip().to_canonical(), p));
        }
        let Some((host, port_text)) = entry.rsplit_once(':') else {
            return Err(format!(
                "a host name needs a port ({entry}:PORT); write an address or a network (10.1.2.0/24) to allow every port"
            ));
        };
        let number = port_text
            .parse::<u16>()
            .map_err(|_| format!("\"{port_text}\" is not a port (1 to 65535)"))?;
        let number = port(number)?;
        // The same parser as the request URL's, so the entry means what a URL would.
        let url = reqwest::Url::parse(&format!("http://{host}:{number}/"))
            .map_err(|_| format!("\"{host}\" is neither an IP address nor a host name"))?;
        let host = url.host_str().unwrap_or_default();
        match literal(host) {
            Some(ip) => Ok(Allowed::Socket(ip.to_canonical(), number)),
            None if !host.is_empty() => Ok(Allowed::Host(host.trim_end_matches('.').to_owned(), number)),
            None => Err(format!("\"{host}\" is neither an IP address nor a host name")),
        }
    }
}

fn port(n: u16) -> Result<u16, String> {
    if n == 0 {
        Err("port 0 is not a port (1 to 65535)".to_owned())
    } else {
        Ok(n)
    }
}

/// `ip` with every bit past `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let keep = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & keep))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let keep = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & keep))
        }
    }
}

/// Returns true if and only if `ip` lies in `base/prefix` (both of one family).
fn in_net(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    ip.is_ipv4() == base.is_ipv4() && mask(ip, prefix) == base
}

/// Why `ip` is not a public address, or `None` when it is one. Every IPv6 form that
/// carries an IPv4 address (mapped, compatible, NAT64, 6to4) is judged by that address.
pub(crate) fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => classify_v4(a),
        IpAddr::V6(a) => classify_v6(a),
    }
}

fn classify_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [b0, b1, b2, b3] = a.octets();
    Some(match (b0, b1, b2, b3) {
        (0, ..) => "unspecified (0.0.0.0/8)",
        (10, ..) | (172, 16..=31, ..) | (192, 168, ..) => "private (RFC 1918)",
        (100, 64..=127, ..) => "shared address space (100.64.0.0/10)",
        (127, ..) => "loopback",
        (169, 254, 169, 254) => "the cloud metadata address (link-local)",
        (169, 254, ..) => "link-local",
        (192, 0, 0, _) => "reserved for protocol assignments (192.0.0.0/24)",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "documentation (TEST-NET)",
        (192, 88, 99, _) => "6to4 relay anycast (192.88.99.0/24)",
        (198, 18..=19, ..) => "benchmarking (198.18.0.0/15)",
        (224..=239, ..) => "multicast",
        (255, 255, 255, 255) => "broadcast",
        (240..=255, ..) => "reserved (240.0.0.0/4)",
        _ => return None,
    })
}

fn classify_v6(a: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(a);
    let segments = a.segments();
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if a.is_unspecified() {
        return Some("unspecified (::)");
    }
    if a.is_loopback() {
        return Some("loopback (::1)");
    }
    if let Some(v4) = a.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if bits >> 32 == 0 {
        return Some(classify_v4(low_v4).unwrap_or("IPv4-compatible IPv6 (deprecated)"));
    }
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return classify_v4(low_v4);
    }
    if segments[0] == 0x2002 {
        let v4 = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return classify_v4(v4);
    }
    if a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("the cloud metadata address (unique local)");
    }
    Some(match segments[0] {
        0x0064 if segments[1] == 0xff9b && segments[2] == 1 => "local-use NAT64 (64:ff9b:1::/48)",
        0x0100 if segments[1..4] == [0, 0, 0] => "discard-only (100::/64)",
        0x2001 if segments[1] < 0x0200 => "reserved for protocol assignments, Teredo among them (2001::/23)",
        0x2001 if segments[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x3fff if segments[1] < 0x1000 => "documentation (3fff::/20)",
        s if s & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
        s if s & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        s if s & 0xffc0 == 0xfec0 => "site-local (fec0::/10, deprecated)",
        s if s & 0xff00 == 0xff00 => "multicast",
        s if s & 0xe000 != 0x2000 => "reserved (outside 2000::/3)",
        _ => return None,
    })
}

/// A request the policy refused: what was asked, the address it came to and why.
#[derive(Debug, Clone)]
pub(super) struct Refused {
    host: String,
    ip: IpAddr,
    port: Option<u16>,
    reason: &'static str,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ip = self.ip;
        let named = if self.host.trim_matches(['[', ']']) == ip.to_string() {
            format!("{ip}")
        } else {
            format!("{} resolves to {ip}", self.host)
        };
        let example = match (self.port, ip) {
            (Some(p), IpAddr::V6(_)) => format!("[{ip}]:{p}"),
            (Some(p), IpAddr::V4(_)) => format!("{ip}:{p}"),
            (None, _) => ip.to_string(),
        };
        write!(
            f,
            "fetch: refused by the address policy: {named}, which is {}. fetch reaches public addresses only; an operator can allow an internal one with TOOLGATE_FETCH_ALLOW (--fetch-allow), e.g. TOOLGATE_FETCH_ALLOW={example}",
            self.reason
        )
    }
}

impl std::error::Error for Refused {}

/// The policy's verdict on `ip` reached as `host` on `port` (when known).
fn verdict(allow: &FetchAllow, host: &str, ip: IpAddr, port: Option<u16>) -> Result<(), Refused> {
    match classify(ip) {
        None => Ok(()),
        Some(_) if allow.permits_addr(ip, port) => Ok(()),
        Some(reason) => Err(Refused {
            host: host.to_owned(),
            ip,
            port,
            reason,
        }),
    }
}

/// Checks a URL whose host is an IP literal (the client connects to it without asking
/// the resolver). A host name passes here; the resolver checks what it resolves to.
pub(super) fn admit_literal(allow: &FetchAllow, url: &reqwest::Url) -> Result<(), Refused> {
    let host = url.host_str().unwrap_or_default();
    match literal(host) {
        Some(ip) => verdict(allow, host, ip, url.port_or_known_default()),
        None => Ok(()),
    }
}

/// The address of a URL host that is an IP literal (`127.0.0.1`, `[::1]`), else `None`.
/// The URL parser has already turned every IPv4 spelling into dotted decimal, and a host
/// it keeps as a name never parses as an address.
fn literal(host: &str) -> Option<IpAddr> {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()
}

tokio::task_local! {
    /// The port of the request being sent, which a DNS resolver is not told: set around
    /// each request so `host:port` and `ip:port` exceptions can apply. Where it is
    /// missing, only port-free exceptions do (the policy fails closed).
    static PORT: u16;
}

/// Runs `send` (one request to `port`) where the resolver can see the port.
pub(super) async fn with_port<F: Future>(port: u16, send: F) -> F::Output {
    PORT.scope(port, send).await
}

/// The resolver of the `fetch` client: the system resolver, then the policy. Addresses
/// the policy refuses are dropped; when none is left, resolution fails with [`Refused`],
/// which `fetch.rs` finds in the error chain and reports as it is.
#[derive(Debug)]
pub(super) struct PolicyResolver {
    /// The operator's exceptions.
    pub(super) allow: Arc<FetchAllow>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let port = PORT.try_with(|p| *p).ok();
        let allow = self.allow.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if port.is_some_and(|p| allow.permits_host(&host, p)) {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let mut refused = None;
            let mut kept = Vec::with_capacity(found.len());
            for addr in found {
                match verdict(&allow, &host, addr.ip(), port) {
                    Ok(()) => kept.push(addr),
                    Err(r) => {
                        refused.get_or_insert(r);
                    }
                }
            }
            match refused {
                Some(r) if kept.is_empty() => Err(Box::new(r) as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(kept.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
