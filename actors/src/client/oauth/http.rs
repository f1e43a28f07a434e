//! HTTP to authorization servers and metadata documents: one awc client of its own (no default
//! headers of the link, so nothing configured for the MCP server — and never its bearer token —
//! reaches an authorization server), redirects not followed, every exchange under a time limit
//! and its body capped at [`MAX_DOCUMENT_BYTES`]. [`AsHttp`] is also the HTTP client of the
//! `oauth2` crate (its `AsyncHttpClient` trait has no `Send` bound, so awc can drive it).

use std::time::Duration;

use awc::http::header::{self, HeaderName, HeaderValue};
use awc::http::Method;
use derive_more::{Display, Error};
use futures_util::future::LocalBoxFuture;
use mcpd::client::oauth::metadata::{parse_document, MAX_DOCUMENT_BYTES};
use serde::de::DeserializeOwned;

use super::AuthError;

/// A failed exchange with an authorization server (for the `oauth2` crate's error type).
#[derive(Debug, Display, Error)]
#[display("{_0}")]
pub(crate) struct HttpError(#[error(not(source))] pub(crate) String);

/// The client for authorization servers and metadata.
pub(crate) struct AsHttp {
    client: awc::Client,
    timeout: Duration,
}

impl std::fmt::Debug for AsHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsHttp").field("timeout", &self.timeout).finish()
    }
}

/// An answer: status, `Location` (for redirects) and the body.
pub(crate) struct Fetched {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) content_type: Option<HeaderValue>,
    pub(crate) body: bytes::Bytes,
}

impl AsHttp {
    /// A client whose every exchange must finish within `timeout`.
    pub(crate) fn new(timeout: Duration) -> AsHttp {
        let connector = match crate::client::tls::client_config() {
            Some(tls) => awc::Connector::new().rustls_0_23(tls),
            None => awc::Connector::new(),
        };
        let client = awc::Client::builder().connector(connector).timeout(timeout).disable_redirects().finish();
        AsHttp { client, timeout }
    }

    /// Sends one request and reads the answer (body capped).
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Vec<u8>,
    ) -> Result<Fetched, HttpError> {
        let mut request = self.client.request(method, url).timeout(self.timeout);
        for pair in headers {
            request = request.insert_header(pair);
        }
        let exchange = async {
            let mut response = request.send_body(body).await.map_err(|e| HttpError(format!("{url}: {e}")))?;
            let status = response.status().as_u16();
            let location = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
            let body = response
                .body()
                .limit(MAX_DOCUMENT_BYTES)
                .await
                .map_err(|e| HttpError(format!("{url}: reading the answer: {e}")))?;
            Ok(Fetched { status, location, content_type, body })
        };
        match actix_rt::time::timeout(self.timeout, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(HttpError(format!("{url}: no answer within {} s", self.timeout.as_secs()))),
        }
    }

    /// GETs a JSON document: `Ok(None)` when the server has none there (a 4xx), `Err` when it
    /// cannot be fetched or read.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &str, what: &str) -> Result<Option<T>, AuthError> {
        let accept = (header::ACCEPT, HeaderValue::from_static("application/json"));
        let fetched = self
            .send(Method::GET, url, vec![accept], Vec::new())
            .await
            .map_err(|e| AuthError::Discovery(format!("fetching the {what}: {e}")))?;
        match fetched.status {
            200..=299 => parse_document(&fetched.body, what).map(Some).map_err(AuthError::Discovery),
            400..=499 => Ok(None),
            status => Err(AuthError::Discovery(format!("fetching the {what} at {url}: HTTP {status}"))),
        }
    }

    /// POSTs a JSON document and reads the JSON answer (RFC 7591 registration).
    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
        what: &str,
    ) -> Result<T, AuthError> {
        let headers = vec![
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::ACCEPT, HeaderValue::from_static("application/json")),
        ];
        let body = serde_json::to_vec(body).unwrap_or_default();
        let fetched =
            self.send(Method::POST, url, headers, body).await.map_err(|e| AuthError::Flow(format!("{what}: {e}")))?;
        if !(200..300).contains(&fetched.status) {
            let excerpt: String = String::from_utf8_lossy(&fetched.body).chars().take(300).collect();
            return Err(AuthError::Flow(format!("{what} failed with HTTP {}: {excerpt}", fetched.status)));
        }
        parse_document(&fetched.body, what).map_err(AuthError::Flow)
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for AsHttp {
    type Error = HttpError;
    type Future = LocalBoxFuture<'c, Result<oauth2::HttpResponse, HttpError>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let method = Method::from_bytes(parts.method.as_str().as_bytes())
                .map_err(|_| HttpError(format!("unsupported method {}", parts.method)))?;
            let mut headers = Vec::with_capacity(parts.headers.len());
            for (name, value) in &parts.headers {
                let name = HeaderName::from_bytes(name.as_str().as_bytes())
                    .map_err(|_| HttpError(format!("bad header name {name}")))?;
                let value = HeaderValue::from_bytes(value.as_bytes())
                    .map_err(|_| HttpError(format!("bad value for header {name}")))?;
                headers.push((name, value));
            }
            let fetched = self.send(method, &parts.uri.to_string(), headers, body).await?;
            let mut response = oauth2::http::Response::builder().status(fetched.status);
            if let Some(content_type) = &fetched.content_type {
                response = response.header(oauth2::http::header::CONTENT_TYPE, content_type.as_bytes());
            }
            response
                .body(fetched.body.to_vec())
                .map_err(|e| HttpError(format!("the answer cannot be represented: {e}")))
        })
    }
}
