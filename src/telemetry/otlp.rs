//! The OTLP/HTTP trace exporter: each batch the SDK's batch processor hands over,
//! written as protobuf by [`super::proto`] and posted with reqwest's blocking client
//! from the processor's own thread, configured as OpenTelemetry's exporter
//! specification says (the same variables `opentelemetry-otlp` reads, which still
//! serves gRPC): `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` added; `OTEL_EXPORTER_OTLP_HEADERS`
//! then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`key=value,...`, values percent-decoded);
//! `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds,
//! 10 s by default). No compression is served, as before.

use std::time::Duration;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::proto;

/// How long one export may take when the environment does not say.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter (see the module's documentation).
#[derive(Debug)]
pub(super) struct HttpExporter {
    client: reqwest::blocking::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    resource: proto::Encoded,
}

/// The first of `names` set to a non-blank value.
fn first_set(names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| ((*name).to_owned(), v.trim().to_owned()))
    })
}

/// The traces URL: a traces endpoint as given, else the base endpoint with `v1/traces`
/// added after one slash.
pub(super) fn url(traces: Option<&str>, base: Option<&str>) -> Result<reqwest::Url, String> {
    let (name, text) = match (traces, base) {
        (Some(t), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", t.to_owned()),
        (None, Some(b)) => (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("{}/v1/traces", b.trim_end_matches('/')),
        ),
        (None, None) => return Err("no OTLP endpoint is set".to_owned()),
    };
    let url = reqwest::Url::parse(&text).map_err(|e| format!("{name}: \"{text}\" is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{name}: \"{text}\" is not an http or https URL"));
    }
    Ok(url)
}

/// `value` with `%XX` escapes decoded; `None` when an escape or the result is malformed.
fn percent_decoded(value: &str) -> Option<String> {
    let raw = value.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        if raw[at] == b'%' {
            let hex = std::str::from_utf8(raw.get(at + 1..at + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(raw[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Adds the `key=value,...` pairs of `list` (from `name`) to `headers`; a pair that is
/// not one is an error naming it, without its value (a header may hold a secret).
pub(super) fn add_headers(headers: &mut HeaderMap, name: &str, list: &str) -> Result<(), String> {
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = |key: &str| format!("{name}: \"{key}\" is not a header: give key=value,...");
        let (key, value) = pair.split_once('=').ok_or_else(|| bad(pair))?;
        let key = key.trim();
        let header = HeaderName::from_bytes(key.as_bytes()).map_err(|_| bad(key))?;
        let value = percent_decoded(value.trim())
            .and_then(|v| HeaderValue::from_str(&v).ok())
            .ok_or_else(|| format!("{name}: the value of \"{key}\" is not a header value"))?;
        headers.insert(header, value);
    }
    Ok(())
}

impl HttpExporter {
    /// The exporter the environment describes; `Err` says what is wrong with it.
    pub(super) fn from_env() -> Result<HttpExporter, String> {
        let traces = first_set(&["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]).map(|(_, v)| v);
        let base = first_set(&["OTEL_EXPORTER_OTLP_ENDPOINT"]).map(|(_, v)| v);
        let url = url(traces.as_deref(), base.as_deref())?;
        let mut headers = HeaderMap::new();
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some((name, list)) = first_set(&[name]) {
                add_headers(&mut headers, &name, &list)?;
            }
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        if let Some((name, value)) = first_set(&[
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ]) && !value.eq_ignore_ascii_case("none")
        {
            return Err(format!(
                "{name}: \"{value}\" is not served: spans are sent uncompressed"
            ));
        }
        let timeout = match first_set(&["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]) {
            Some((name, ms)) => Duration::from_millis(
                ms.parse()
                    .map_err(|_| format!("{name}: \"{ms}\" is not a number of milliseconds"))?,
            ),
            None => TIMEOUT,
        };
        // Built on a thread of its own: the blocking client runs a runtime inside, which
        // may not be made where a tokio runtime is current.
        let client = std::thread::spawn(move || reqwest::blocking::Client::builder().timeout(timeout).build())
            .join()
            .map_err(|_| "cannot build the OTLP HTTP client".to_owned())?
            .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))?;
        Ok(HttpExporter {
            client,
            url,
            headers,
            resource: proto::Encoded::default(),
        })
    }
}

impl SpanExporter for HttpExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if batch.is_empty() {
            return Ok(());
        }
        let body = proto::request(&batch, &self.resource);
        drop(batch);
        let answer = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body)
            .send()
            .map_err(|e| OTelSdkError::InternalFailure(format!("the OTLP export failed: {e}")))?;
        let status = answer.status();
        // The body (a partial success, or why not) is read so the connection is reused.
        let _ = answer.bytes();
        if status.is_success() {
            Ok(())
        } else {
            Err(OTelSdkError::InternalFailure(format!(
                "the OTLP collector answered {status}"
            )))
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = proto::Encoded::new(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_url_is_the_traces_endpoint_or_the_base_with_v1_traces() {
        let u = |t: Option<&str>, b: Option<&str>| url(t, b).map(|u| u.to_string());
        assert_eq!(u(None, Some("http://c:4318")).unwrap(), "http://c:4318/v1/traces");
        assert_eq!(u(None, Some("http://c:4318/")).unwrap(), "http://c:4318/v1/traces");
        assert_eq!(u(None, Some("https://c/otlp")).unwrap(), "https://c/otlp/v1/traces");
        assert_eq!(u(Some("http://c:9/x"), Some("http://d")).unwrap(), "http://c:9/x");
        let bad = u(None, Some("c:4318")).unwrap_err();
        assert!(bad.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{bad}");
        assert!(u(Some("not a url"), None).unwrap_err().contains("TRACES_ENDPOINT"));
    }

    #[test]
    fn headers_are_key_value_pairs_with_percent_decoded_values() {
        let mut h = HeaderMap::new();
        add_headers(&mut h, "OTEL_EXPORTER_OTLP_HEADERS", " api-key = a%20b%3Dc , x=1,").unwrap();
        assert_eq!(h.get("api-key").unwrap(), "a b=c");
        assert_eq!(h.get("x").unwrap(), "1");
        let e = add_headers(&mut h, "OTEL_EXPORTER_OTLP_HEADERS", "nokey").unwrap_err();
        assert!(e.contains("nokey"), "{e}");
        let e = add_headers(&mut h, "OTEL_EXPORTER_OTLP_HEADERS", "k=%zz-secret").unwrap_err();
        assert!(e.contains("\"k\"") && !e.contains("secret"), "{e}");
    }
}
