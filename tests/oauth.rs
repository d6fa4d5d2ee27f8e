//! OAuth 2.1 on both HTTP faces: bearer JWTs signed by keys the test makes (Ed25519,
//! P-256, RSA), checked against a JWKS file or a JWKS URL served on 127.0.0.1 here;
//! the 401 challenge naming the RFC 9728 metadata, the metadata itself, scopes from
//! the `scope` claim, and the refusals (expired, audience, issuer, signature, algorithm
//! confusion, unknown key until the set gains it). No outside service.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256};
use base64::Engine;
use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::util::{CatalogueServer, command, fixtures};

const ISSUER: &str = "https://auth.test.invalid/";
const AUDIENCE: &str = "https://gw.test.invalid/mcp";

/// A signing key made for the test, with its key id.
enum Pair {
    Ed(Ed25519KeyPair),
    Ec(EcdsaKeyPair),
    Rsa(aws_lc_rs::rsa::KeyPair),
}

struct Signer {
    kid: String,
    pair: Pair,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Signer {
    fn ed(kid: &str) -> Signer {
        Signer {
            kid: kid.to_owned(),
            pair: Pair::Ed(Ed25519KeyPair::generate().unwrap()),
        }
    }

    fn ec(kid: &str) -> Signer {
        Signer {
            kid: kid.to_owned(),
            pair: Pair::Ec(EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap()),
        }
    }

    fn rsa(kid: &str) -> Signer {
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        Signer {
            kid: kid.to_owned(),
            pair: Pair::Rsa(pair),
        }
    }

    /// The same key id on a fresh key of the same kind: its signatures do not verify
    /// against the published key.
    fn impostor(&self) -> Signer {
        let mut other = match self.pair {
            Pair::Ed(_) => Signer::ed(&self.kid),
            Pair::Ec(_) => Signer::ec(&self.kid),
            Pair::Rsa(_) => Signer::rsa(&self.kid),
        };
        other.kid = self.kid.clone();
        other
    }

    fn alg(&self) -> &'static str {
        match self.pair {
            Pair::Ed(_) => "EdDSA",
            Pair::Ec(_) => "ES256",
            Pair::Rsa(_) => "RS256",
        }
    }

    /// The public key as a JWK.
    fn jwk(&self) -> Value {
        match &self.pair {
            Pair::Ed(pair) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref()), "kid": self.kid, "use": "sig"})
            }
            Pair::Ec(pair) => {
                let point = pair.public_key().as_ref();
                assert_eq!(point.len(), 65, "an uncompressed P-256 point");
                json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..]), "kid": self.kid, "alg": "ES256"})
            }
            Pair::Rsa(pair) => {
                let public = pair.public_key();
                json!({
                    "kty": "RSA",
                    "n": b64(public.modulus().big_endian_without_leading_zero()),
                    "e": b64(public.exponent().big_endian_without_leading_zero()),
                    "kid": self.kid,
                    "alg": "RS256",
                })
            }
        }
    }

    /// The RSA modulus, as an attacker would take it for an HMAC secret.
    fn public_bytes(&self) -> Vec<u8> {
        match &self.pair {
            Pair::Ed(pair) => pair.public_key().as_ref().to_vec(),
            Pair::Ec(pair) => pair.public_key().as_ref().to_vec(),
            Pair::Rsa(pair) => pair.public_key().modulus().big_endian_without_leading_zero().to_vec(),
        }
    }

    /// A compact JWS of `claims` with the usual header.
    fn sign(&self, claims: &Value) -> String {
        self.sign_with(&json!({"alg": self.alg(), "typ": "JWT", "kid": self.kid}), claims)
    }

    /// A compact JWS of `claims` under `header`, signed with this key.
    fn sign_with(&self, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let signature = match &self.pair {
            Pair::Ed(pair) => pair.sign(message.as_bytes()).as_ref().to_vec(),
            Pair::Ec(pair) => pair.sign(&rng, message.as_bytes()).unwrap().as_ref().to_vec(),
            Pair::Rsa(pair) => {
                let mut signature = vec![0; pair.public_modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &rng, message.as_bytes(), &mut signature)
                    .unwrap();
                signature
            }
        };
        format!("{message}.{}", b64(&signature))
    }
}

/// A JWKS document holding `signers`' public keys.
fn jwks(signers: &[&Signer]) -> Value {
    json!({"keys": signers.iter().map(|s| s.jwk()).collect::<Vec<_>>()})
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Good claims for `sub` with `scope`; tests change one field to make them bad.
fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "scope": scope,
        "iat": now(),
        "exp": now() + 600,
    })
}

/// `claims` with `key` set to `value`.
fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

/// A token signed HS256 with `secret`.
fn hs256(kid: &str, claims: &Value, secret: &[u8]) -> String {
    let header = json!({"alg": "HS256", "typ": "JWT", "kid": kid});
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, secret);
    let tag = aws_lc_rs::hmac::sign(&key, message.as_bytes());
    format!("{message}.{}", b64(tag.as_ref()))
}

/// The OAuth settings for a JWKS at `jwks` (a path or URL).
fn oauth_env(jwks: &str) -> Vec<(&'static str, String)> {
    vec![
        ("TOOLGATE_OAUTH_JWKS", jwks.to_owned()),
        ("TOOLGATE_OAUTH_ISSUER", ISSUER.to_owned()),
        ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE.to_owned()),
        ("TOOLGATE_CATALOGUE", fixtures().display().to_string()),
    ]
}

fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn write_jwks(path: &Path, signers: &[&Signer]) {
    std::fs::write(path, jwks(signers).to_string()).unwrap();
}

/// An MCP `initialize` POST to `url`, with `token` as the bearer when given.
async fn initialize(url: &str, token: Option<&str>) -> reqwest::Response {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&init);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// The `WWW-Authenticate` value of `response`, asserting it has one.
fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate on {response:?}"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// POSTs a run of the fixture `echo` tool to a catalogue server as `token`.
async fn run(host: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{host}/api/tools/echo/run"))
        .bearer_auth(token)
        .json(&json!({"params": {"message": "m"}}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn mcp_over_http_admits_valid_tokens_of_each_algorithm_and_refuses_bad_ones_with_the_metadata_challenge() {
    let dir = tempfile::tempdir().unwrap();
    let (ed, ec, rsa) = (Signer::ed("ed-1"), Signer::ec("ec-1"), Signer::rsa("rsa-1"));
    let file = dir.path().join("jwks.json");
    write_jwks(&file, &[&ed, &ec, &rsa]);
    let env = oauth_env(file.to_str().unwrap());
    let gate = HttpGate::start(&borrowed(&env)).await;
    let base = gate.url.trim_end_matches("/mcp").to_owned();
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");

    // No token: 401, the challenge names the metadata and no error.
    let anonymous = initialize(&gate.url, None).await;
    assert_eq!(anonymous.status(), 401);
    let header = challenge(&anonymous);
    assert!(header.starts_with("Bearer "), "{header}");
    assert!(
        header.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{header}"
    );
    assert!(!header.contains("error="), "{header}");

    // The metadata, unauthenticated, at both paths: it names this resource.
    for url in [
        metadata_url.clone(),
        format!("{base}/.well-known/oauth-protected-resource"),
    ] {
        let answer = reqwest::get(&url).await.unwrap();
        assert_eq!(answer.status(), 200, "{url}");
        let doc: Value = answer.json().await.unwrap();
        assert_eq!(doc["resource"], gate.url.as_str(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([ISSUER]), "{doc}");
        assert_eq!(
            doc["scopes_supported"],
            json!(["search", "run", "runtimes", "admin"]),
            "{doc}"
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");
    }

    // A good token of each algorithm runs a tool with `run`.
    for signer in [&ed, &ec, &rsa] {
        let token = signer.sign(&claims("alice", "run search"));
        let mut session = Session::open_keyed(&gate.url, &token).await;
        let ran = session.call("echo", json!({"message": "hi"})).await;
        assert_eq!(ran["success"], true, "{}: {ran}", signer.alg());
    }
    // Without `run` (unknown scope names ignored) the call is FORBIDDEN, as for keys.
    let reader = ed.sign(&claims("bob", "search openid toolgate:run"));
    let mut session = Session::open_keyed(&gate.url, &reader).await;
    let refused = session.call("echo", json!({"message": "hi"})).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("run"), "{refused}");

    // Each bad token: 401, invalid_token, and the metadata named.
    let good = claims("mallory", "run search");
    let bad = [
        ("expired", ed.sign(&with(good.clone(), "exp", json!(now() - 3_600)))),
        (
            "not yet valid",
            ec.sign(&with(good.clone(), "nbf", json!(now() + 3_600))),
        ),
        (
            "wrong audience",
            rsa.sign(&with(good.clone(), "aud", json!("https://other.test.invalid/mcp"))),
        ),
        (
            "audience array without ours",
            ed.sign(&with(good.clone(), "aud", json!(["a", "b"]))),
        ),
        ("no audience", ed.sign(&with(good.clone(), "aud", Value::Null))),
        (
            "wrong issuer",
            ec.sign(&with(good.clone(), "iss", json!("https://evil.test.invalid/"))),
        ),
        ("no subject", ed.sign(&with(good.clone(), "sub", Value::Null))),
        ("signed by another key", ed.impostor().sign(&good)),
        ("signed by another RSA key", rsa.impostor().sign(&good)),
        (
            "HS256 keyed with the RSA public key",
            hs256("rsa-1", &good, &rsa.public_bytes()),
        ),
        (
            "HS256 keyed with the Ed25519 public key",
            hs256("ed-1", &good, &ed.public_bytes()),
        ),
        (
            "alg none",
            format!(
                "{}.{}.{}",
                b64(br#"{"alg":"none","kid":"ed-1"}"#),
                b64(good.to_string().as_bytes()),
                b64(b"x")
            ),
        ),
        (
            "EdDSA header on the RSA key",
            rsa.sign_with(&json!({"alg": "EdDSA", "kid": "rsa-1"}), &good),
        ),
        ("unknown kid", Signer::ed("nobody").sign(&good)),
    ];
    for (what, token) in &bad {
        let answer = initialize(&gate.url, Some(token)).await;
        assert_eq!(answer.status(), 401, "{what}");
        let header = challenge(&answer);
        assert!(header.contains("error=\"invalid_token\""), "{what}: {header}");
        assert!(
            header.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{what}: {header}"
        );
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["code"], "UNAUTHORIZED", "{what}: {body}");
    }
    // The reasons are told apart.
    let reason = async |token: &str| -> String {
        let body: Value = initialize(&gate.url, Some(token)).await.json().await.unwrap();
        body["error"].as_str().unwrap_or_default().to_owned()
    };
    assert!(reason(&bad[0].1).await.contains("expired"));
    assert!(reason(&bad[2].1).await.contains("aud"));
    assert!(reason(&bad[5].1).await.contains("iss"));
    assert!(reason(&bad[7].1).await.contains("signature"));
}

#[tokio::test]
async fn catalogue_serve_takes_tokens_beside_keys_and_answers_a_missing_scope_403_insufficient_scope() {
    let dir = tempfile::tempdir().unwrap();
    let signer = Signer::ec("ec-1");
    let file = dir.path().join("jwks.json");
    write_jwks(&file, &[&signer]);
    let keys = dir.path().join("keys.json");
    let key = new_key(&keys, "run,search", "ci").await;
    let mut env = oauth_env(file.to_str().unwrap());
    env.push(("TOOLGATE_KEYS_FILE", keys.display().to_string()));
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &borrowed(&env)).await;
    let metadata_url = format!("{}/.well-known/oauth-protected-resource", server.host);

    let ran = run(&server.host, &signer.sign(&claims("alice", "run"))).await;
    assert_eq!(ran.status(), 200);
    assert_eq!(ran.json::<Value>().await.unwrap()["success"], true);
    assert_eq!(run(&server.host, &key).await.status(), 200, "keys still work");

    let reader = run(&server.host, &signer.sign(&claims("bob", "search"))).await;
    assert_eq!(reader.status(), 403);
    let header = challenge(&reader);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert!(header.contains("scope=\"run\""), "{header}");
    let body: Value = reader.json().await.unwrap();
    assert_eq!(body["code"], "FORBIDDEN", "{body}");
    assert!(body["error"].as_str().unwrap().contains("bob"), "{body}");

    let expired = run(
        &server.host,
        &signer.sign(&with(claims("alice", "run"), "exp", json!(now() - 3_600))),
    )
    .await;
    assert_eq!(expired.status(), 401);
    let header = challenge(&expired);
    assert!(header.contains("error=\"invalid_token\""), "{header}");
    assert!(
        header.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{header}"
    );
    let wrong_key = run(&server.host, "tg_not-a-key").await;
    assert_eq!(wrong_key.status(), 401);
    assert!(challenge(&wrong_key).contains("resource_metadata="));

    let doc: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(doc["resource"], server.host.as_str(), "{doc}");
    let health = reqwest::get(format!("{}/api/health", server.host)).await.unwrap();
    assert_eq!(health.status(), 200, "health stays open");
}

#[tokio::test]
async fn a_token_naming_an_unknown_kid_is_accepted_once_the_jwks_file_gains_that_key() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (Signer::ed("old"), Signer::rsa("new"));
    let file = dir.path().join("jwks.json");
    write_jwks(&file, &[&old]);
    let env = oauth_env(file.to_str().unwrap());
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &borrowed(&env)).await;
    let token = new.sign(&claims("carol", "run"));
    assert_eq!(run(&server.host, &token).await.status(), 401, "not in the set yet");
    write_jwks(&file, &[&old, &new]);
    assert_eq!(run(&server.host, &token).await.status(), 200, "found after a re-read");
    let still = run(&server.host, &old.sign(&claims("carol", "run"))).await;
    assert_eq!(still.status(), 200);
}

/// A JWKS URL on 127.0.0.1: serves `keys`, counts its fetches.
struct JwksServer {
    url: String,
    keys: Arc<Mutex<Value>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(keys: Value) -> JwksServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(keys));
        let hits = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (keys.clone(), hits.clone());
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let body = served.lock().unwrap().clone();
                async move { axum::Json(body) }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        JwksServer { url, keys, hits }
    }
}

#[tokio::test]
async fn a_jwks_url_is_fetched_and_unknown_kids_refetch_it_at_most_once_per_interval() {
    let (first, second, third) = (Signer::ec("k1"), Signer::ed("k2"), Signer::ed("k3"));
    let jwks_server = JwksServer::start(jwks(&[&first])).await;
    let env = oauth_env(&jwks_server.url);
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &borrowed(&env)).await;
    assert_eq!(jwks_server.hits.load(Ordering::SeqCst), 1, "fetched once at start");

    assert_eq!(
        run(&server.host, &first.sign(&claims("dan", "run"))).await.status(),
        200
    );
    assert_eq!(
        jwks_server.hits.load(Ordering::SeqCst),
        1,
        "a known kid fetches nothing"
    );

    *jwks_server.keys.lock().unwrap() = jwks(&[&first, &second, &third]);
    assert_eq!(
        run(&server.host, &second.sign(&claims("dan", "run"))).await.status(),
        200
    );
    assert_eq!(
        jwks_server.hits.load(Ordering::SeqCst),
        2,
        "an unknown kid fetched the set again"
    );
    for kid in ["made-up-1", "made-up-2", "made-up-3"] {
        let token = Signer::ed(kid).sign(&claims("eve", "run"));
        assert_eq!(run(&server.host, &token).await.status(), 401, "{kid}");
    }
    assert_eq!(
        jwks_server.hits.load(Ordering::SeqCst),
        2,
        "made-up kids cannot make the server fetch again within the interval"
    );
    assert_eq!(
        run(&server.host, &third.sign(&claims("dan", "run"))).await.status(),
        200,
        "fetched with the second key"
    );
}

#[tokio::test]
async fn bad_oauth_settings_stop_the_server_at_start_with_exit_2_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let jwks_file = dir.path().join("jwks.json");
    write_jwks(&jwks_file, &[&Signer::ed("k")]);
    let jwks = jwks_file.to_str().unwrap();
    let missing = dir.path().join("missing.json");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![("TOOLGATE_OAUTH_JWKS", jwks), ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE)],
            "TOOLGATE_OAUTH_ISSUER",
        ),
        (
            vec![("TOOLGATE_OAUTH_JWKS", jwks), ("TOOLGATE_OAUTH_ISSUER", ISSUER)],
            "TOOLGATE_OAUTH_AUDIENCE",
        ),
        (vec![("TOOLGATE_OAUTH_ISSUER", ISSUER)], "TOOLGATE_OAUTH_JWKS"),
        (
            vec![
                ("TOOLGATE_OAUTH_JWKS", "http://auth.test.invalid/jwks"),
                ("TOOLGATE_OAUTH_ISSUER", ISSUER),
                ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE),
            ],
            "https://",
        ),
        (
            vec![
                ("TOOLGATE_OAUTH_JWKS", missing.to_str().unwrap()),
                ("TOOLGATE_OAUTH_ISSUER", ISSUER),
                ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE),
            ],
            "cannot read the JWKS file",
        ),
        (
            vec![
                ("TOOLGATE_OAUTH_JWKS", empty.to_str().unwrap()),
                ("TOOLGATE_OAUTH_ISSUER", ISSUER),
                ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE),
            ],
            "no usable signing key",
        ),
        (
            vec![
                ("TOOLGATE_OAUTH_JWKS", jwks),
                ("TOOLGATE_OAUTH_ISSUER", ISSUER),
                ("TOOLGATE_OAUTH_AUDIENCE", AUDIENCE),
                ("TOOLGATE_PUBLIC_URL", "https://gw.test.invalid/prefix"),
            ],
            "TOOLGATE_PUBLIC_URL",
        ),
    ];
    for (env, says) in cases {
        let out = command(dir.path(), &env)
            .args(["--http", "127.0.0.1:0"])
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        assert!(stderr.contains(says), "{env:?} should say {says}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[tokio::test]
async fn mapped_token_scopes_limit_the_tools_a_token_sees_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let signer = Signer::ec("ec-1");
    let file = dir.path().join("jwks.json");
    write_jwks(&file, &[&signer]);
    let mut env = oauth_env(file.to_str().unwrap());
    env.push(("TOOLGATE_OAUTH_TOOL_SCOPES", "tools:echo=echo*;tools:all=*".to_owned()));
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &borrowed(&env)).await;
    let list = |token: String| {
        let url = format!("{}/api/tools", server.host);
        async move {
            let listed: Value = reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let mut slugs: Vec<String> = listed["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("{listed}"))
                .iter()
                .map(|t| t["slug"].as_str().unwrap().to_owned())
                .collect();
            slugs.sort();
            slugs
        }
    };
    // One mapped scope: its tools only; the catch-all scope: every tool; no mapped
    // scope: none, and a run of a hidden tool is not found.
    let echo_only = signer.sign(&claims("alice", "search run tools:echo"));
    assert_eq!(list(echo_only.clone()).await, ["echo", "echo-async"]);
    let everything = signer.sign(&claims("bob", "search run tools:echo tools:all"));
    assert!(list(everything.clone()).await.len() > 2);
    let unmapped = signer.sign(&claims("carol", "search run"));
    assert!(list(unmapped.clone()).await.is_empty());
    assert_eq!(run(&server.host, &echo_only).await.status(), 200);
    assert_eq!(run(&server.host, &everything).await.status(), 200);
    let refused = run(&server.host, &unmapped).await;
    assert_eq!(refused.status(), 404);
    assert_eq!(refused.json::<Value>().await.unwrap()["code"], "TOOL_NOT_FOUND");
}
