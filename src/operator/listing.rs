//! The `GET /api/tools` answer, built once per catalogue snapshot: the JSON body, its
//! gzip and brotli copies and their ETags. A request then costs a pointer comparison,
//! a header parse and a reference-counted copy of bytes already made; a `304 Not
//! Modified` never touches a body.
//!
//! Why not tower-http's compression layer: it compresses every answer again (the
//! embedded catalogue's list is ~116 KB), which is what made a 304 as slow as a 200.
//! Compressing once per snapshot costs a few milliseconds when the catalogue changes.

use std::io::Write;
use std::sync::{Arc, Mutex, Weak};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::catalogue::Snapshot;
use crate::error::Error;
use crate::limits::{API_LISTINGS, LIST_BROTLI_QUALITY, LIST_BROTLI_WINDOW};

/// One snapshot's list answer in every coding this server sends.
#[derive(Debug)]
pub(super) struct Listing {
    /// The body as JSON, uncompressed.
    identity: Bytes,
    /// The same body, gzip-compressed.
    gzip: Bytes,
    /// The same body, brotli-compressed.
    br: Bytes,
    /// The strong ETag of each coding, in the order of [`Coding`]. Each representation
    /// has its own (RFC 9110 §8.8.3: a strong validator names one representation), and
    /// they share a stem, so `If-None-Match` with any of them means the same snapshot.
    etags: [HeaderValue; 3],
}

/// A content coding of the list answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Coding {
    /// No compression.
    Identity = 0,
    /// `gzip`.
    Gzip = 1,
    /// `br`.
    Br = 2,
}

impl Listing {
    /// Serialises and compresses `snapshot`'s list. CPU-bound: run it off the async
    /// workers.
    fn build(snapshot: &Snapshot) -> Result<Listing, Error> {
        let manifests: Vec<_> = snapshot.tools().iter().map(|t| &t.manifest).collect();
        let mut doc = json!({ "tools": manifests });
        // The catalogue's resources and prompts, when it has any, as the catalogue file
        // format has them, so a toolgate reading this list serves them too.
        let extras = snapshot.extras();
        if !extras.is_empty() {
            let resources: Vec<serde_json::Value> = (extras.resources().iter().map(serde_json::to_value))
                .chain(extras.templates().iter().map(serde_json::to_value))
                .filter_map(Result::ok)
                .collect();
            doc["resources"] = json!(resources);
            doc["prompts"] = json!(extras.prompts());
        }
        let identity = serde_json::to_vec(&doc).map_err(|e| Error::Internal(e.to_string()))?;
        let internal = |e: std::io::Error| Error::Internal(format!("cannot compress the tool list: {e}"));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&identity).map_err(internal)?;
        let gzip = gz.finish().map_err(internal)?;
        let mut br = Vec::new();
        {
            let mut writer = brotli::CompressorWriter::new(&mut br, 64 * 1024, LIST_BROTLI_QUALITY, LIST_BROTLI_WINDOW);
            writer.write_all(&identity).map_err(internal)?;
            writer.flush().map_err(internal)?;
        }
        let stem = stem_of(&identity);
        let tag = |suffix: &str| {
            HeaderValue::from_str(&format!("\"{stem}{suffix}\"")).unwrap_or(HeaderValue::from_static("\"0\""))
        };
        Ok(Listing {
            etags: [tag(""), tag("-gzip"), tag("-br")],
            identity: Bytes::from(identity),
            gzip: Bytes::from(gzip),
            br: Bytes::from(br),
        })
    }

    /// The body in `coding`.
    pub(super) fn body(&self, coding: Coding) -> &Bytes {
        match coding {
            Coding::Identity => &self.identity,
            Coding::Gzip => &self.gzip,
            Coding::Br => &self.br,
        }
    }

    /// Returns true if and only if `If-None-Match` names any representation of this
    /// list (or `*`). Weak comparison, as RFC 9110 §13.1.2 asks for this header.
    fn is_current(&self, headers: &HeaderMap) -> bool {
        headers.get_all(header::IF_NONE_MATCH).iter().any(|value| {
            value.to_str().is_ok_and(|v| {
                v.split(',').map(str::trim).any(|t| {
                    let t = t.strip_prefix("W/").unwrap_or(t);
                    t == "*" || self.etags.iter().any(|e| e.as_bytes() == t.as_bytes())
                })
            })
        })
    }

    /// The answer to a list request with `headers`: 304 when the client holds this list,
    /// else the body in the best coding the client accepts.
    pub(super) fn answer(&self, headers: &HeaderMap) -> Response {
        let coding = choose(headers);
        let etag = self.etags[coding as usize].clone();
        let vary = HeaderValue::from_static("accept-encoding");
        if self.is_current(headers) {
            return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag), (header::VARY, vary)]).into_response();
        }
        let mut response = (
            StatusCode::OK,
            [
                (header::ETAG, etag),
                (header::VARY, vary),
                (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            ],
            self.body(coding).clone(),
        )
            .into_response();
        let encoding = match coding {
            Coding::Identity => None,
            Coding::Gzip => Some("gzip"),
            Coding::Br => Some("br"),
        };
        if let Some(encoding) = encoding {
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
        }
        response
    }
}

/// The hash-and-length stem of the ETags. SipHash with fixed keys: stable for one
/// build, which is all a cache validator needs.
fn stem_of(body: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    body.hash(&mut h);
    format!("{:016x}-{}", h.finish(), body.len())
}

/// The coding to send for `Accept-Encoding`: brotli, then gzip, then none; a coding
/// with `q=0` is refused. Absent header: identity.
pub(super) fn choose(headers: &HeaderMap) -> Coding {
    let (mut br, mut gzip) = (false, false);
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("").to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .is_some_and(|q| q.parse::<f32>().is_ok_and(|q| q <= 0.0))
            });
            match name.as_str() {
                "br" => br = !refused,
                "gzip" | "x-gzip" => gzip = !refused,
                "*" if !refused => {
                    br = true;
                    gzip = true;
                }
                _ => {}
            }
        }
    }
    if br {
        Coding::Br
    } else if gzip {
        Coding::Gzip
    } else {
        Coding::Identity
    }
}

/// The list answers of the snapshots in use — the current one, and each view of it that
/// a tool policy in use sees (`gateway::views`) — each kept until its snapshot is gone,
/// at most [`API_LISTINGS`], so a few principals with different policies do not build
/// and compress the list again for each other.
#[derive(Debug, Default)]
pub(super) struct Listings {
    /// The snapshots the listings were built from (held weakly: compared, never read,
    /// and a weak reference keeps an address from being reused) and the listings, the
    /// most recently used last.
    current: Mutex<Vec<(Weak<Snapshot>, Arc<Listing>)>>,
}

impl Listings {
    /// The listing of `snapshot`, built now (off the async workers) if it is not the one
    /// kept. Requests that race on a new snapshot may each build it; the last one kept
    /// wins, and all are identical.
    pub(super) async fn of(&self, snapshot: &Arc<Snapshot>) -> Result<Arc<Listing>, Error> {
        if let Some(listing) = self.kept(snapshot) {
            return Ok(listing);
        }
        let source = snapshot.clone();
        let built = tokio::task::spawn_blocking(move || Listing::build(&source))
            .await
            .map_err(|e| Error::Internal(format!("the tool list was not built: {e}")))??;
        let built = Arc::new(built);
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        current.retain(|(of, _)| of.strong_count() > 0 && !std::ptr::eq(of.as_ptr(), Arc::as_ptr(snapshot)));
        if current.len() >= API_LISTINGS {
            current.remove(0);
        }
        current.push((Arc::downgrade(snapshot), built.clone()));
        Ok(built)
    }

    fn kept(&self, snapshot: &Arc<Snapshot>) -> Option<Arc<Listing>> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let at = current
            .iter()
            .position(|(of, _)| std::ptr::eq(of.as_ptr(), Arc::as_ptr(snapshot)))?;
        let hit = current.remove(at);
        let listing = hit.1.clone();
        current.push(hit);
        Some(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_coding_follows_accept_encoding_and_respects_q_zero() {
        assert_eq!(choose(&headers(&[])), Coding::Identity);
        assert_eq!(choose(&headers(&[("accept-encoding", "gzip, deflate")])), Coding::Gzip);
        assert_eq!(choose(&headers(&[("accept-encoding", "gzip, br")])), Coding::Br);
        assert_eq!(
            choose(&headers(&[("accept-encoding", "br;q=0, gzip;q=0.5")])),
            Coding::Gzip
        );
        assert_eq!(choose(&headers(&[("accept-encoding", "*")])), Coding::Br);
        assert_eq!(choose(&headers(&[("accept-encoding", "identity")])), Coding::Identity);
        assert_eq!(choose(&headers(&[("accept-encoding", "GZIP")])), Coding::Gzip);
    }

    #[test]
    fn every_coding_decodes_to_the_same_body_and_any_etag_is_current() {
        let (snapshot, _) = Snapshot::build(
            crate::catalogue::load::embedded().entries,
            crate::catalogue::Origin::Local,
        );
        let listing = Listing::build(&snapshot).unwrap();
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&listing.gzip[..]), &mut unzipped).unwrap();
        assert_eq!(unzipped, listing.identity);
        let mut unbrotli = Vec::new();
        std::io::Read::read_to_end(&mut brotli::Decompressor::new(&listing.br[..], 4096), &mut unbrotli).unwrap();
        assert_eq!(unbrotli, listing.identity);
        assert!(listing.br.len() < listing.identity.len() / 3, "{}", listing.br.len());
        for etag in &listing.etags {
            let mut held = HeaderMap::new();
            held.insert(header::IF_NONE_MATCH, etag.clone());
            assert!(listing.is_current(&held));
        }
        assert!(!listing.is_current(&headers(&[("if-none-match", "\"other\"")])));
        assert!(listing.is_current(&headers(&[("if-none-match", "\"x\", *")])));
    }
}
