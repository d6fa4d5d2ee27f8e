//! The authorization server's signing keys: a JWKS read from a file or fetched from a
//! URL, kept in memory, and refreshed when a token names a key id it does not hold.
//!
//! Only signing keys of the three algorithms toolgate accepts are kept: RSA (RS256, at
//! least [`OAUTH_RSA_MIN_BITS`]), P-256 (ES256) and Ed25519 (EdDSA). Each key is bound to
//! the one algorithm its type implies (a key whose `alg` member names another is
//! skipped), and a token must name that algorithm, so a key can never be used in another algorithm's check (a public RSA
//! key as an HMAC secret, say). Symmetric (`oct`) keys and encryption keys are skipped.
//!
//! A refresh is bounded: for unknown key ids, a file is re-read only when its
//! modification time or length changed, a URL fetched at most once per
//! [`OAUTH_JWKS_REFRESH_MIN`]; a URL's set is also fetched again on the first token after
//! it is [`OAUTH_JWKS_MAX_AGE`] old. Every fetch has [`OAUTH_JWKS_TIMEOUT`], no redirects and
//! a body of at most [`OAUTH_JWKS_BYTES`]. A refresh that fails, or finds no usable key,
//! keeps the keys in force and says so on stderr. One refresh runs at a time; tokens
//! arriving meanwhile wait for it and see its keys.

use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::settings::JwksSource;
use crate::limits::{
    OAUTH_JWKS_BYTES, OAUTH_JWKS_KEYS, OAUTH_JWKS_MAX_AGE, OAUTH_JWKS_REFRESH_MIN, OAUTH_JWKS_TIMEOUT,
    OAUTH_RSA_MIN_BITS,
};

/// The algorithms a token may be signed with.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// One usable signing key.
#[derive(Clone)]
pub struct Key {
    /// Its `kid`, when the set gave one.
    pub kid: Option<String>,
    /// The one algorithm it verifies.
    pub alg: Algorithm,
    /// The key itself.
    pub key: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish()
    }
}

/// The keys in force and how to read them again. Shared by every request.
#[derive(Debug)]
pub struct Keyring {
    source: JwksSource,
    keys: RwLock<Arc<Vec<Key>>>,
    /// When the keys were last read, and the file's stamp then; held while a refresh runs.
    refreshed: tokio::sync::Mutex<Read>,
    http: reqwest::Client,
}

/// The last reads of the set.
#[derive(Debug)]
struct Read {
    /// The last read, whatever caused it.
    at: Instant,
    /// The file's stamp at the last read.
    stamp: Option<(SystemTime, u64)>,
    /// The last read caused by an unknown key id (the one that is rate-bounded).
    forced: Option<Instant>,
}

/// Why a JWKS cannot be used at start (the server then refuses to start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// The HTTP client for fetching it cannot be built.
    #[error("cannot build the HTTP client for the JWKS: {0}")]
    Client(String),
    /// It cannot be read or fetched, or is too large (the text names the source).
    #[error("{0}")]
    Unreadable(String),
    /// It is not a JWKS document.
    #[error("the JWKS at {at}: {reason}")]
    NotAJwks {
        /// Where it was read.
        at: String,
        /// What is wrong with it.
        reason: String,
    },
    /// It holds no key toolgate can verify with.
    #[error("the JWKS at {at} holds no usable signing key (RS256, ES256 or EdDSA)")]
    NoUsableKey {
        /// Where it was read.
        at: String,
    },
}

impl Keyring {
    /// Reads the set from `source`; an error (unreadable, not a JWKS, no usable key)
    /// names the source and what is wrong.
    pub async fn open(source: JwksSource) -> Result<Keyring, JwksError> {
        let http = reqwest::Client::builder()
            .timeout(OAUTH_JWKS_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| JwksError::Client(e.to_string()))?;
        let stamp = stamp_of(&source);
        let text = read(&source, &http).await.map_err(JwksError::Unreadable)?;
        let (keys, skipped) = parse(&text).map_err(|reason| JwksError::NotAJwks {
            at: source.to_string(),
            reason,
        })?;
        for why in &skipped {
            tracing::warn!("the JWKS at {source}: {why}");
        }
        if keys.is_empty() {
            return Err(JwksError::NoUsableKey { at: source.to_string() });
        }
        Ok(Keyring {
            source,
            keys: RwLock::new(Arc::new(keys)),
            refreshed: tokio::sync::Mutex::new(Read {
                at: Instant::now(),
                stamp,
                forced: None,
            }),
            http,
        })
    }

    /// The keys in force, fetched again first when a URL's set has grown old.
    pub async fn current(&self) -> Arc<Vec<Key>> {
        if matches!(self.source, JwksSource::Url(_)) {
            let mut last = self.refreshed.lock().await;
            if last.at.elapsed() >= OAUTH_JWKS_MAX_AGE {
                self.reload(&mut last).await;
            }
        }
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the set again for a token naming a key id it does not hold, if the bounds of
    /// the module allow it (a file that changed; a URL not fetched for this reason in
    /// the last [`OAUTH_JWKS_REFRESH_MIN`]), and returns the keys then in force.
    pub async fn refresh(&self) -> Arc<Vec<Key>> {
        let mut last = self.refreshed.lock().await;
        let due = match &self.source {
            JwksSource::File(_) => stamp_of(&self.source) != last.stamp,
            JwksSource::Url(_) => last.forced.is_none_or(|at| at.elapsed() >= OAUTH_JWKS_REFRESH_MIN),
        };
        if due {
            last.forced = Some(Instant::now());
            self.reload(&mut last).await;
        }
        drop(last);
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the set again now, under the refresh lock (`last`); a failure keeps the keys.
    async fn reload(&self, last: &mut Read) {
        last.at = Instant::now();
        last.stamp = stamp_of(&self.source);
        match self.reread().await {
            Ok(keys) => {
                tracing::info!("JWKS {} read again: {} usable keys", self.source, keys.len());
                *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(keys);
            }
            Err(e) => tracing::warn!("{e}; the keys read before stay in force"),
        }
    }

    async fn reread(&self) -> Result<Vec<Key>, String> {
        let text = read(&self.source, &self.http).await?;
        let (keys, skipped) = parse(&text).map_err(|e| format!("the JWKS at {}: {e}", self.source))?;
        for why in &skipped {
            tracing::debug!("the JWKS at {}: {why}", self.source);
        }
        if keys.is_empty() {
            return Err(format!("the JWKS at {} now holds no usable signing key", self.source));
        }
        Ok(keys)
    }
}

/// The file's modification time and length, to tell a change; `None` for a URL.
fn stamp_of(source: &JwksSource) -> Option<(SystemTime, u64)> {
    let JwksSource::File(path) = source else { return None };
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The JWKS document's bytes, at most [`OAUTH_JWKS_BYTES`].
async fn read(source: &JwksSource, http: &reqwest::Client) -> Result<Vec<u8>, String> {
    let too_large = || format!("the JWKS at {source} is larger than {OAUTH_JWKS_BYTES} bytes");
    match source {
        JwksSource::File(path) => {
            let meta = tokio::fs::metadata(path)
                .await
                .map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?;
            if meta.len() > OAUTH_JWKS_BYTES as u64 {
                return Err(too_large());
            }
            tokio::fs::read(path)
                .await
                .map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))
        }
        JwksSource::Url(url) => {
            let failed = |e: reqwest::Error| format!("cannot fetch the JWKS at {url}: {e}");
            let mut response = http.get(url.clone()).send().await.map_err(failed)?;
            if !response.status().is_success() {
                return Err(format!("the JWKS at {url} answered {}", response.status()));
            }
            if response.content_length().is_some_and(|n| n > OAUTH_JWKS_BYTES as u64) {
                return Err(too_large());
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(failed)? {
                if body.len() + chunk.len() > OAUTH_JWKS_BYTES {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        }
    }
}

/// The usable keys of a JWKS document (at most [`OAUTH_JWKS_KEYS`]) and a sentence per
/// key skipped. An error only when the document is not a JWKS at all.
pub fn parse(text: &[u8]) -> Result<(Vec<Key>, Vec<String>), String> {
    let document: Value = serde_json::from_slice(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(entries) = document.get("keys").and_then(Value::as_array) else {
        return Err("not a JWKS: no \"keys\" array".to_owned());
    };
    let mut keys = Vec::new();
    let mut skipped = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if keys.len() == OAUTH_JWKS_KEYS {
            skipped.push(format!("keys past the first {OAUTH_JWKS_KEYS} usable ones are ignored"));
            break;
        }
        let kid = entry.get("kid").and_then(Value::as_str).map(str::to_owned);
        match usable(entry) {
            Ok(key) => keys.push(Key { kid, ..key }),
            Err(why) => skipped.push(format!(
                "key {} ({}) skipped: {why}",
                i + 1,
                kid.as_deref().unwrap_or("no kid")
            )),
        }
    }
    Ok((keys, skipped))
}

/// One JWKS entry as a usable signing key, or why it is not one.
fn usable(entry: &Value) -> Result<Key, String> {
    let jwk: Jwk = serde_json::from_value(entry.clone()).map_err(|e| format!("not a JWK: {e}"))?;
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return Err("not a signing key (\"use\" is not \"sig\")".to_owned());
    }
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(rsa) => {
            let bits = modulus_bits(&rsa.n);
            if bits < OAUTH_RSA_MIN_BITS {
                return Err(format!(
                    "an RSA key of {bits} bits (at least {OAUTH_RSA_MIN_BITS} are needed)"
                ));
            }
            Algorithm::RS256
        }
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => return Err("a symmetric key: never used for tokens".to_owned()),
        _ => return Err("an unsupported key type or curve".to_owned()),
    };
    // The `alg` member, when present, must be the one the key type implies: a key is
    // used for one algorithm only.
    if let Some(named) = entry.get("alg").and_then(Value::as_str)
        && named != name(implied)
    {
        return Err(format!(
            "\"alg\" is {named}; this key type is used with {} only",
            name(implied)
        ));
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unreadable: {e}"))?;
    Ok(Key {
        kid: None,
        alg: implied,
        key,
    })
}

/// The JWA name of one of [`ALGORITHMS`].
pub fn name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        Algorithm::EdDSA => "EdDSA",
        _ => "another algorithm",
    }
}

/// The bit length of a base64url big-endian modulus (0 when it does not decode).
fn modulus_bits(n: &str) -> usize {
    use base64::Engine;
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(n.trim_end_matches('=')) else {
        return 0;
    };
    let Some(first) = bytes.iter().position(|b| *b != 0) else {
        return 0;
    };
    (bytes.len() - first) * 8 - bytes[first].leading_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn only_signing_keys_of_the_three_algorithms_are_kept_each_bound_to_one() {
        let rsa_n = {
            let mut n = vec![0xC5u8; 256];
            n[255] |= 1;
            b64(&n)
        };
        let doc = json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[7u8; 32]), "kid": "ed"},
            {"kty": "RSA", "n": rsa_n, "e": "AQAB", "kid": "rsa", "alg": "RS256", "use": "sig"},
            {"kty": "RSA", "n": b64(&[0xC5u8; 128]), "e": "AQAB", "kid": "short"},
            {"kty": "oct", "k": b64(b"secret"), "kid": "hmac"},
            {"kty": "RSA", "n": rsa_n, "e": "AQAB", "kid": "enc", "use": "enc"},
            {"kty": "OKP", "crv": "Ed25519", "x": b64(&[7u8; 32]), "kid": "mislabelled", "alg": "HS256"},
            {"kty": "EC", "crv": "P-384", "x": b64(&[1u8; 48]), "y": b64(&[2u8; 48]), "kid": "p384"},
            {"kty": "weird"}
        ]});
        let (keys, skipped) = parse(doc.to_string().as_bytes()).unwrap();
        let kept: Vec<(Option<&str>, Algorithm)> = keys.iter().map(|k| (k.kid.as_deref(), k.alg)).collect();
        assert_eq!(kept, [(Some("ed"), Algorithm::EdDSA), (Some("rsa"), Algorithm::RS256)]);
        assert_eq!(skipped.len(), 6, "{skipped:?}");
        assert!(
            skipped.iter().any(|s| s.contains("short") && s.contains("1024 bits")),
            "{skipped:?}"
        );
        assert!(
            skipped.iter().any(|s| s.contains("hmac") && s.contains("symmetric")),
            "{skipped:?}"
        );
        assert!(
            skipped.iter().any(|s| s.contains("mislabelled") && s.contains("HS256")),
            "{skipped:?}"
        );
        assert!(parse(b"{\"not\": []}").unwrap_err().contains("keys"));
        assert!(parse(b"nope").is_err());
    }

    #[test]
    fn a_modulus_is_measured_in_bits_without_leading_zeros() {
        assert_eq!(modulus_bits(&b64(&[0, 0, 1])), 1);
        assert_eq!(modulus_bits(&b64(&[0x80, 0])), 16);
        assert_eq!(modulus_bits("***"), 0);
    }
}
