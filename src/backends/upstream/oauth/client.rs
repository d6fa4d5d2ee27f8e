//! The HTTP client of an OAuth upstream: the upstream's client (`web::Watched`) with the
//! token of [`Auth`] on every request, and a refusal (401, 403 with a challenge) answered
//! by [`Auth::answer`] — once per request, then the request is sent again or fails
//! saying why. The token configured for the transport (a static `Authorization` header)
//! is ignored: an OAuth upstream gets only its own tokens.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::session::{Auth, Refusal};

/// `inner` with the tokens of `auth`.
#[derive(Clone, Debug)]
pub struct Authorized<C> {
    inner: C,
    auth: Arc<Auth>,
}

impl<C> Authorized<C> {
    /// `inner`, sending the tokens of `auth`.
    pub fn new(inner: C, auth: Arc<Auth>) -> Authorized<C> {
        Authorized { inner, auth }
    }
}

impl<C: StreamableHttpClient + Sync> Authorized<C> {
    /// Runs `send` with the current token; a refusal is answered once, then `send` runs
    /// again with the token the answer gave.
    async fn send<T, F, Fut>(&self, send: F) -> Result<T, StreamableHttpError<C::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<C::Error>>>,
    {
        let token = match self.auth.token().await {
            Ok(token) => token,
            Err(e) => {
                self.auth.note(&e);
                return Err(StreamableHttpError::Auth(e));
            }
        };
        let answer = send(token.clone()).await;
        let (refusal, challenge) = match &answer {
            Err(StreamableHttpError::AuthRequired(e)) => (Refusal::Unauthorized, e.www_authenticate_header.clone()),
            Err(StreamableHttpError::InsufficientScope(e)) => (Refusal::Forbidden, e.www_authenticate_header.clone()),
            Ok(_) if token.is_some() => {
                self.auth.taken().await;
                return answer;
            }
            _ => return answer,
        };
        match self.auth.answer(refusal, &challenge, token.as_deref()).await {
            Ok(Some(fresh)) => send(Some(fresh)).await,
            Ok(None) => answer,
            Err(e) => {
                self.auth.note(&e);
                Err(StreamableHttpError::Auth(e))
            }
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Authorized<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.send(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.send(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.send(|token| {
            self.inner
                .delete_session(uri.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
