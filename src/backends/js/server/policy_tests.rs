//! The address classifier and the allow-list, as tables.

use super::*;

/// `ip` is refused (with a reason containing `why`) or, for `None`, allowed.
fn check(ip: &str, why: Option<&str>) {
    let addr: IpAddr = ip.parse().unwrap();
    match (classify(addr), why) {
        (None, None) => {}
        (Some(reason), Some(why)) => assert!(reason.contains(why), "{ip}: \"{reason}\" should say {why}"),
        (got, want) => panic!("{ip}: classified {got:?}, expected {want:?}"),
    }
}

#[test]
fn ipv4_ranges() {
    for (ip, why) in [
        ("0.0.0.0", Some("unspecified")),
        ("0.1.2.3", Some("unspecified")),
        ("10.0.0.1", Some("private")),
        ("10.255.255.255", Some("private")),
        ("172.16.0.1", Some("private")),
        ("172.31.255.255", Some("private")),
        ("172.15.255.255", None),
        ("172.32.0.0", None),
        ("192.168.1.1", Some("private")),
        ("192.167.255.255", None),
        ("100.64.0.1", Some("shared")),
        ("100.127.255.255", Some("shared")),
        ("100.63.255.255", None),
        ("100.128.0.0", None),
        ("127.0.0.1", Some("loopback")),
        ("127.255.255.254", Some("loopback")),
        ("169.254.169.254", Some("metadata")),
        ("169.254.0.1", Some("link-local")),
        ("169.253.255.255", None),
        ("192.0.0.8", Some("protocol")),
        ("192.0.2.1", Some("documentation")),
        ("198.51.100.7", Some("documentation")),
        ("203.0.113.9", Some("documentation")),
        ("192.88.99.1", Some("6to4")),
        ("198.18.0.1", Some("benchmarking")),
        ("198.19.255.255", Some("benchmarking")),
        ("198.20.0.0", None),
        ("224.0.0.1", Some("multicast")),
        ("239.255.255.255", Some("multicast")),
        ("240.0.0.1", Some("reserved")),
        ("255.255.255.255", Some("broadcast")),
        ("1.1.1.1", None),
        ("8.8.8.8", None),
        ("93.184.215.14", None),
        ("192.0.1.1", None),
        ("11.0.0.1", None),
        ("223.255.255.255", None),
    ] {
        check(ip, why);
    }
}

#[test]
fn ipv6_ranges_and_every_form_that_embeds_ipv4() {
    for (ip, why) in [
        ("::", Some("unspecified")),
        ("::1", Some("loopback")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:169.254.169.254", Some("metadata")),
        ("::ffff:10.0.0.1", Some("private")),
        ("::ffff:8.8.8.8", None),
        ("::127.0.0.1", Some("loopback")),
        ("::8.8.8.8", Some("IPv4-compatible")),
        ("64:ff9b::7f00:1", Some("loopback")),
        ("64:ff9b::a9fe:a9fe", Some("metadata")),
        ("64:ff9b::808:808", None),
        ("64:ff9b:1::1", Some("NAT64")),
        ("2002:7f00:1::1", Some("loopback")),
        ("2002:a9fe:a9fe::", Some("metadata")),
        ("2002:808:808::1", None),
        ("100::1", Some("discard")),
        ("2001::1", Some("Teredo")),
        ("2001:1ff::1", Some("protocol")),
        ("2001:db8::1", Some("documentation")),
        ("3fff::1", Some("documentation")),
        ("fd00:ec2::254", Some("metadata")),
        ("fd00::1", Some("unique local")),
        ("fc00::1", Some("unique local")),
        ("fe80::1", Some("link-local")),
        ("febf::1", Some("link-local")),
        ("fec0::1", Some("site-local")),
        ("ff02::1", Some("multicast")),
        ("4000::1", Some("reserved")),
        ("::2:3:4:5", Some("reserved")),
        ("2606:4700:4700::1111", None),
        ("2a00:1450:4001::200e", None),
        ("2001:200::1", None),
    ] {
        check(ip, why);
    }
}

fn allow(setting: &str) -> FetchAllow {
    FetchAllow::parse(setting).unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn allow_entries_of_each_form_match_what_they_say() {
    let a = allow("127.0.0.1:8080, [::1]:9, 10.1.2.0/24, 169.254.169.254, localhost:3000, fd00::/8");
    assert!(a.permits_addr(ip("127.0.0.1"), Some(8080)));
    assert!(!a.permits_addr(ip("127.0.0.1"), Some(8081)), "another port");
    assert!(!a.permits_addr(ip("127.0.0.1"), None), "port unknown: fail closed");
    assert!(
        a.permits_addr(ip("::ffff:127.0.0.1"), Some(8080)),
        "mapped form of a listed address"
    );
    assert!(a.permits_addr(ip("::1"), Some(9)));
    assert!(a.permits_addr(ip("10.1.2.255"), None));
    assert!(!a.permits_addr(ip("10.1.3.0"), None));
    assert!(a.permits_addr(ip("169.254.169.254"), Some(80)));
    assert!(a.permits_addr(ip("fd12::5"), Some(1)));
    assert!(!a.permits_addr(ip("fc00::1"), Some(1)));
    assert!(a.permits_host("localhost", 3000));
    assert!(a.permits_host("LOCALHOST.", 3000));
    assert!(!a.permits_host("localhost", 3001));
    assert!(
        !a.permits_addr(ip("127.0.0.1"), Some(3000)),
        "a host entry is not an address entry"
    );
}

#[test]
fn allow_entries_in_url_spellings_mean_the_address() {
    assert_eq!(allow("2130706433:80"), allow("127.0.0.1:80"));
    assert_eq!(allow("0x7f.1:80"), allow("127.0.0.1:80"));
    assert_eq!(allow("::ffff:10.0.0.1"), allow("10.0.0.1"));
    assert_eq!(allow("[::1]"), allow("::1"));
    assert!(allow("").is_empty());
    assert!(allow(" , ,").is_empty());
}

#[test]
fn bad_allow_entries_are_refused_saying_why() {
    for (setting, says) in [
        ("localhost", "needs a port"),
        ("example.com:0", "port 0"),
        ("example.com:http", "not a port"),
        ("example.com:70000", "not a port"),
        ("10.1.2.3/24", "did you mean 10.1.2.0/24"),
        ("10.0.0.0/33", "from 0 to 32"),
        ("fd00::/129", "from 0 to 128"),
        ("nonsense/8", "ip/prefix"),
        ("a b:80", "neither"),
        ("127.0.0.1:0", "port 0"),
    ] {
        let e = FetchAllow::parse(setting).unwrap_err();
        assert!(e.contains("TOOLGATE_FETCH_ALLOW") && e.contains(says), "{setting}: {e}");
    }
}

#[test]
fn literal_urls_are_checked_on_the_parsed_address() {
    let none = FetchAllow::default();
    for url in [
        "http://2130706433:8080/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fd00:ec2::254]/",
        "http://169.254.169.254/latest/meta-data/",
        "https://0.0.0.0/",
    ] {
        let url = reqwest::Url::parse(url).unwrap();
        let e = admit_literal(&none, &url).unwrap_err().to_string();
        assert!(
            e.contains("address policy") && e.contains("TOOLGATE_FETCH_ALLOW"),
            "{url}: {e}"
        );
    }
    let url = reqwest::Url::parse("http://2130706433:8080/").unwrap();
    assert!(admit_literal(&allow("127.0.0.1:8080"), &url).is_ok());
    assert!(admit_literal(&allow("127.0.0.1:8081"), &url).is_err());
    let name = reqwest::Url::parse("http://example.com/").unwrap();
    assert!(admit_literal(&none, &name).is_ok(), "names are the resolver's to check");
}

#[test]
fn a_refusal_names_the_address_the_reason_and_the_setting() {
    let url = reqwest::Url::parse("http://[fd00:ec2::254]:8080/").unwrap();
    let e = admit_literal(&FetchAllow::default(), &url).unwrap_err().to_string();
    assert!(e.contains("fd00:ec2::254") && e.contains("metadata"), "{e}");
    assert!(e.contains("TOOLGATE_FETCH_ALLOW=[fd00:ec2::254]:8080"), "{e}");
}

#[tokio::test]
async fn the_resolver_drops_refused_addresses_and_fails_naming_the_policy() {
    let resolver = PolicyResolver {
        allow: Arc::new(FetchAllow::default()),
    };
    let e = resolver
        .resolve("localhost".parse().unwrap())
        .await
        .err()
        .expect("localhost is loopback");
    let refused = e.downcast_ref::<Refused>().expect("a policy refusal");
    assert!(refused.to_string().contains("localhost resolves to"), "{refused}");

    let resolver = PolicyResolver {
        allow: Arc::new(allow("localhost:4000")),
    };
    assert!(
        resolver.resolve("localhost".parse().unwrap()).await.is_err(),
        "no port known"
    );
    // The port is read when the resolver is asked, as a client asks it: inside the scope.
    let found: Vec<SocketAddr> = with_port(4000, async { resolver.resolve("localhost".parse().unwrap()).await })
        .await
        .unwrap()
        .collect();
    assert!(!found.is_empty());
    assert!(
        with_port(4001, resolver.resolve("localhost".parse().unwrap()))
            .await
            .is_err(),
        "another port"
    );
}
