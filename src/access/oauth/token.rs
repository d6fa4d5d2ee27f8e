//! Checking one bearer JWT: its signature against the keyring (the key its `kid` names,
//! bound to the algorithm its header names), then `iss`, `aud` (a string or an array),
//! `exp` and `nbf` (within [`OAUTH_LEEWAY`]) and `sub`; the scopes are read from its
//! `scope` claim. What it finds is a [`Verified`] subject with scopes; what it refuses
//! is a [`Rejection`] that says why in a few words (sent to the caller, who holds the
//! token anyway).
//!
//! Of the header only `alg` and `kid` are read: keys a token names or carries itself
//! (`jku`, `x5u`, `jwk`) are never fetched or trusted. An algorithm outside RS256, ES256
//! and EdDSA is refused before any key is looked up, so such tokens never cause a JWKS
//! refresh.

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::Value;

use super::jwks::{ALGORITHMS, Key, Keyring};
use super::settings::Settings;
use crate::access::Scope;
use crate::limits::{OAUTH_LEEWAY, OAUTH_SUBJECT_CHARS};
use crate::patterns::ToolPatterns;

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Not a JWS in compact form, or its header or claims do not parse.
    Malformed,
    /// Its header names an algorithm toolgate does not accept (`none`, HS*, …) or not the
    /// one its key is bound to.
    Algorithm,
    /// No key of the set has its `kid` (after a refresh), or none of its algorithm.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `exp` has passed.
    Expired,
    /// `nbf` has not come yet.
    NotYetValid,
    /// `aud` names none of the accepted audiences, or is missing.
    Audience,
    /// `iss` is not the issuer, or is missing.
    Issuer,
    /// `sub` is missing, empty, too long or holds control characters; or `exp` is missing.
    Claims,
}

impl Rejection {
    /// The reason in a few words, for the 401's body and its `error_description` (plain
    /// ASCII without quotes, so it fits a quoted header parameter).
    pub fn describe(self) -> &'static str {
        match self {
            Rejection::Malformed => "the token is not a well-formed JWT",
            Rejection::Algorithm => "the token's algorithm is not accepted (RS256, ES256 or EdDSA, as its key says)",
            Rejection::UnknownKey => "the token's signing key is not in the authorization server's key set",
            Rejection::Signature => "the token's signature does not verify",
            Rejection::Expired => "the token has expired",
            Rejection::NotYetValid => "the token is not valid yet (nbf)",
            Rejection::Audience => "the token is not meant for this server (aud)",
            Rejection::Issuer => "the token is not from the expected issuer (iss)",
            Rejection::Claims => "the token lacks a claim this server needs (sub, exp, iss, aud)",
        }
    }
}

/// What a good token says about its bearer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The `sub` claim.
    pub subject: String,
    /// The scopes of its `scope` claim that toolgate knows, in order, each once.
    pub scopes: Vec<Scope>,
    /// The tools its scopes admit, when `TOOLGATE_OAUTH_TOOL_SCOPES` maps scopes to tools.
    pub tools: Option<Arc<ToolPatterns>>,
}

/// The claims read from a token beyond those `jsonwebtoken` checks.
#[derive(Debug, Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<Value>,
}

/// Returns true if and only if `bearer` has the shape of a compact JWS: three non-empty
/// base64url parts joined by dots. API keys (`tg_…`) never have it.
pub fn looks_like_jwt(bearer: &str) -> bool {
    let parts: Vec<&str> = bearer.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// Checks `token` against `keyring` and `settings`.
pub async fn verify(token: &str, keyring: &Keyring, settings: &Settings) -> Result<Verified, Rejection> {
    let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
        // `alg` values the crate does not know (`none` among them) fail the header.
        ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => Rejection::Algorithm,
        _ => Rejection::Malformed,
    })?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Rejection::Algorithm);
    }
    let keys = keyring.current().await;
    let candidates = match &header.kid {
        Some(kid) => {
            let named = |keys: &[Key]| keys.iter().find(|k| k.kid.as_deref() == Some(kid)).cloned();
            let key = match named(&keys) {
                Some(key) => key,
                None => named(&keyring.refresh().await).ok_or(Rejection::UnknownKey)?,
            };
            if key.alg != header.alg {
                return Err(Rejection::Algorithm);
            }
            vec![key]
        }
        None => keys.iter().filter(|k| k.alg == header.alg).cloned().collect(),
    };
    if candidates.is_empty() {
        return Err(Rejection::UnknownKey);
    }
    let validation = validation(header.alg, settings);
    let mut refused = Rejection::Signature;
    for key in &candidates {
        match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
            Ok(data) => return verified(data.claims, &settings.tool_scopes),
            Err(e) => {
                refused = rejection(e.kind());
                // A claim failure means the signature verified with this key: the token
                // is refused for that, whatever the other keys would say.
                if refused != Rejection::Signature {
                    break;
                }
            }
        }
    }
    Err(refused)
}

/// The checks `jsonwebtoken` makes for a token signed with `alg`.
fn validation(alg: Algorithm, settings: &Settings) -> Validation {
    let mut validation = Validation::new(alg);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.set_issuer(&[settings.issuer.as_str()]);
    validation.set_audience(&settings.audiences);
    validation.leeway = OAUTH_LEEWAY.as_secs();
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = true;
    validation
}

fn rejection(kind: &ErrorKind) -> Rejection {
    match kind {
        ErrorKind::InvalidSignature => Rejection::Signature,
        ErrorKind::ExpiredSignature => Rejection::Expired,
        ErrorKind::ImmatureSignature => Rejection::NotYetValid,
        ErrorKind::InvalidAudience => Rejection::Audience,
        ErrorKind::InvalidIssuer => Rejection::Issuer,
        ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => Rejection::Audience,
        ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => Rejection::Issuer,
        ErrorKind::MissingRequiredClaim(_) | ErrorKind::InvalidClaimFormat(_) => Rejection::Claims,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => {
            Rejection::Algorithm
        }
        _ => Rejection::Malformed,
    }
}

/// The subject, scopes and tools (by `tool_scopes`) of claims whose signature and
/// registered claims held.
fn verified(claims: Claims, tool_scopes: &[(String, Arc<ToolPatterns>)]) -> Result<Verified, Rejection> {
    let subject = claims.sub.unwrap_or_default();
    let fits =
        !subject.is_empty() && subject.chars().count() <= OAUTH_SUBJECT_CHARS && !subject.chars().any(char::is_control);
    if !fits {
        return Err(Rejection::Claims);
    }
    Ok(Verified {
        subject,
        scopes: scopes_of(claims.scope.as_ref()),
        tools: tools_of(claims.scope.as_ref(), tool_scopes),
    })
}

/// The tools the scopes of a `scope` claim admit by `tool_scopes`: `None` when no scope
/// is mapped (every tool), none when the claim holds no mapped scope, else the union of
/// what its mapped scopes admit.
pub fn tools_of(claim: Option<&Value>, tool_scopes: &[(String, Arc<ToolPatterns>)]) -> Option<Arc<ToolPatterns>> {
    if tool_scopes.is_empty() {
        return None;
    }
    let names = names_of(claim);
    let held = tool_scopes
        .iter()
        .filter(|(scope, _)| names.contains(&scope.as_str()))
        .map(|(_, p)| &**p);
    Some(Arc::new(
        ToolPatterns::union(held).unwrap_or_else(ToolPatterns::nothing),
    ))
}

/// The names of a `scope` claim: a space-separated string or an array of names.
fn names_of(claim: Option<&Value>) -> Vec<&str> {
    match claim {
        Some(Value::String(text)) => text.split_ascii_whitespace().collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The scopes a `scope` claim grants: a space-separated string (RFC 8693, RFC 9068), or
/// an array of names as some servers send; names toolgate does not know are ignored.
pub fn scopes_of(claim: Option<&Value>) -> Vec<Scope> {
    let names = names_of(claim);
    let mut scopes = Vec::new();
    for name in names {
        if let Some(scope) = Scope::ALL.into_iter().find(|s| s.name() == name)
            && !scopes.contains(&scope)
        {
            scopes.push(scope);
        }
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mapped_scopes_admit_their_tools_and_a_token_with_none_sees_nothing() {
        let map = vec![
            (
                "gh:read".to_owned(),
                Arc::new(ToolPatterns::parse_list("github__get_*").unwrap()),
            ),
            ("ops".to_owned(), Arc::new(ToolPatterns::parse_list("ops-*").unwrap())),
        ];
        assert_eq!(tools_of(Some(&json!("run gh:read")), &[]), None, "no map: every tool");
        let both = tools_of(Some(&json!(["gh:read", "ops", "run"])), &map).unwrap();
        assert!(both.admits("github__get_me") && both.admits("ops-restart"));
        assert!(!both.admits("github__delete_repo"));
        let read = tools_of(Some(&json!("run gh:read")), &map).unwrap();
        assert!(read.admits("github__get_me") && !read.admits("ops-restart"));
        let none = tools_of(Some(&json!("run search")), &map).unwrap();
        assert!(!none.admits("github__get_me") && !none.admits("anything"));
        assert!(!tools_of(None, &map).unwrap().admits("x"));
    }

    #[test]
    fn scopes_come_from_the_scope_claim_and_unknown_names_are_ignored() {
        let check = |claim: Value, expected: &[Scope]| assert_eq!(scopes_of(Some(&claim)), expected, "{claim}");
        check(json!("run search"), &[Scope::Run, Scope::Search]);
        check(json!("  openid run\tprofile run  "), &[Scope::Run]);
        check(json!(["admin", "runtimes", "x"]), &[Scope::Admin, Scope::Runtimes]);
        check(json!("toolgate:run RUN"), &[]);
        check(json!(42), &[]);
        assert_eq!(scopes_of(None), []);
    }

    #[test]
    fn only_three_part_base64url_values_look_like_tokens() {
        assert!(looks_like_jwt("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhIn0.c2ln"));
        assert!(looks_like_jwt("a-_.b.c"));
        for not in ["tg_0123abcd", "a.b", "a..c", "a.b.c.d", "a.b.c=", "a.b c.d", ""] {
            assert!(!looks_like_jwt(not), "{not}");
        }
    }

    #[test]
    fn the_subject_must_be_present_short_and_printable() {
        let claims = |sub: Option<&str>| Claims {
            sub: sub.map(str::to_owned),
            scope: Some(json!("run")),
        };
        let ok = verified(claims(Some("user-1")), &[]).unwrap();
        assert_eq!(ok.subject, "user-1");
        assert_eq!(ok.scopes, [Scope::Run]);
        assert_eq!(verified(claims(None), &[]), Err(Rejection::Claims));
        assert_eq!(verified(claims(Some("")), &[]), Err(Rejection::Claims));
        assert_eq!(verified(claims(Some("a\nb")), &[]), Err(Rejection::Claims));
        let long = "x".repeat(OAUTH_SUBJECT_CHARS + 1);
        assert_eq!(verified(claims(Some(&long)), &[]), Err(Rejection::Claims));
    }

    #[test]
    fn library_errors_map_to_the_reasons_callers_are_told() {
        assert_eq!(rejection(&ErrorKind::ExpiredSignature), Rejection::Expired);
        assert_eq!(rejection(&ErrorKind::InvalidAudience), Rejection::Audience);
        assert_eq!(
            rejection(&ErrorKind::MissingRequiredClaim("aud".into())),
            Rejection::Audience
        );
        assert_eq!(
            rejection(&ErrorKind::MissingRequiredClaim("sub".into())),
            Rejection::Claims
        );
        assert_eq!(rejection(&ErrorKind::InvalidToken), Rejection::Malformed);
        for r in [Rejection::Algorithm, Rejection::Expired, Rejection::Claims] {
            assert!(!r.describe().contains('"') && r.describe().is_ascii());
        }
    }
}
