//! The HTTP client of Streamable HTTP upstreams: rmcp's reqwest client, with rmcp's limit
//! on one message set to [`UPSTREAM_MESSAGE_BYTES`] (a JSON answer body, an SSE event),
//! and watched so a call whose answer breaks it fails naming why (`oversize.rs`). rmcp
//! fails such a call already, but as "transport closed": the answer's stream, not the
//! connection, ended.
//!
//! Built as rmcp's default client is: no idle connection pool (its ~40 ms delayed-ACK
//! stalls) and only same-origin 307/308 redirects followed, at most ten (a 301–303 would
//! drop the POST's body, and a cross-origin one would hand the session id and the
//! configured headers to another host).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::oversize::Oversize;
use crate::limits::UPSTREAM_MESSAGE_BYTES;

/// Redirects followed for one request, at most.
const REDIRECTS: usize = 10;

/// A reqwest client whose answers' failures are noted by request id.
#[derive(Clone, Debug)]
pub(super) struct Watched {
    inner: reqwest::Client,
    oversize: Arc<Oversize>,
}

impl Watched {
    /// A client noting through `oversize`.
    pub(super) fn new(oversize: Arc<Oversize>) -> Result<Watched, String> {
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same_origin = attempt.previous().first().is_some_and(|first| {
                    first.scheme() == attempt.url().scheme()
                        && first.host_str() == attempt.url().host_str()
                        && first.port_or_known_default() == attempt.url().port_or_known_default()
                });
                let kept = matches!(attempt.status().as_u16(), 307 | 308);
                if same_origin && kept && attempt.previous().len() <= REDIRECTS {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        Ok(Watched { inner, oversize })
    }
}

/// The limits of one message, in force for every upstream answer.
pub(super) fn limits(config: &mut rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig) {
    config.max_sse_event_size = UPSTREAM_MESSAGE_BYTES;
    config.max_json_response_size = UPSTREAM_MESSAGE_BYTES;
}

/// The W3C trace context a tool call carries in its `_meta` (`link.rs` put it there), to
/// go in the HTTP request's headers too, as HTTP servers and proxies read it.
fn trace_headers(message: &ClientJsonRpcMessage, headers: &mut HashMap<HeaderName, HeaderValue>) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return;
    };
    let Some(meta) = &call.params.meta else { return };
    for key in crate::telemetry::HEADERS {
        if let Some(value) = meta.0.0.get(key).and_then(serde_json::Value::as_str)
            && let Ok(value) = HeaderValue::from_str(value)
        {
            headers.insert(HeaderName::from_static(key), value);
        }
    }
}

fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// `stream` (the answer of request `id`), noting the first failure of its body.
fn watched(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    id: RequestId,
    oversize: Arc<Oversize>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .inspect(move |item| {
            if let Err(e) = item {
                oversize.note_call(&id, format!("its answer could not be read ({e})"));
            }
        })
        .boxed()
}

impl StreamableHttpClient for Watched {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        mut custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = request_id(&message);
        trace_headers(&message, &mut custom_headers);
        let answer = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        match (answer, id) {
            (Err(StreamableHttpError::ResponseBodyTooLarge { max_size }), Some(id)) => {
                self.oversize.note_call(
                    &id,
                    format!("its answer was over the limit of {max_size} bytes for one message from an upstream server; it was discarded unread"),
                );
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size })
            }
            (Ok(StreamableHttpPostResponse::Sse(stream, session)), Some(id)) => Ok(StreamableHttpPostResponse::Sse(
                watched(stream, id, self.oversize.clone()),
                session,
            )),
            (answer, _) => answer,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                UPSTREAM_MESSAGE_BYTES,
            )
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
