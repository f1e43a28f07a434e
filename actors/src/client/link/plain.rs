//! A satellite's HTTP/1.1 client for a plain `http://` endpoint: hyper's connection API over
//! keep-alive TCP connections of this thread (idle ones kept, at most [`MAX_IDLE`]).
//!
//! A stateless gateway call is one POST and one answer; awc spends about a fifth of the
//! gateway's CPU on it (a date service spawned per request, with a timer that wakes the thread,
//! a header map built per request, a pool lookup). Here the request head is written from the
//! link's headers as they are and the answer is read by hyper; an `https://` endpoint, OAuth and
//! sessions keep awc.
//!
//! A connection taken from the idle list may have been closed by the server meanwhile: when
//! hyper hands the request back unsent, it goes out once more on a new connection (never a
//! request the server may have seen).

use std::cell::RefCell;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use super::exchange::{transport, Answer, AnswerBody, EventStream};
use super::headers::Headers;
use super::MAX_RESPONSE_BYTES;
use crate::client::error::ClientError;

/// How many idle connections a satellite keeps to its endpoint: enough for the connections of
/// a burst of that many concurrent calls on one worker thread to carry the next burst (at 32,
/// 64 concurrent calls opened and closed a connection for every other call: a gateway call
/// cost 1.5x the CPU). The server's keep-alive timeout closes idle ones (is_closed drops them).
const MAX_IDLE: usize = 256;

/// The HTTP/1.1 client of one satellite link.
pub(super) struct PlainHttp {
    /// `host:port`, connected to.
    authority: String,
    /// The same as the `Host` header.
    host: hyper::header::HeaderValue,
    /// The request target (path and query).
    target: hyper::Uri,
    /// The configured headers, then `Accept` and `Content-Type`, made once.
    defaults: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    idle: RefCell<Vec<SendRequest<Full<Bytes>>>>,
}

impl PlainHttp {
    /// The client for `url` when it is a plain `http://` URL (else `None`: awc serves it).
    /// Headers that are not valid HTTP are left to awc too.
    pub(super) fn for_url(url: &str, configured: &[(String, String)]) -> Option<PlainHttp> {
        let parsed = url::Url::parse(url).ok()?;
        if parsed.scheme() != "http" || !parsed.username().is_empty() || parsed.password().is_some() {
            return None;
        }
        let host = parsed.host_str()?;
        let port = parsed.port_or_known_default()?;
        // An IPv6 host keeps its brackets in `host_str`.
        let authority = format!("{host}:{port}");
        let target = match parsed.query() {
            Some(query) => format!("{}?{query}", parsed.path()),
            None => parsed.path().to_owned(),
        };
        let target = target.parse().ok()?;
        let host = hyper::header::HeaderValue::from_str(&authority).ok()?;
        let standard = [("accept", "application/json, text/event-stream"), ("content-type", "application/json")];
        let defaults = configured
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .chain(standard)
            .map(|(name, value)| {
                Some((
                    hyper::header::HeaderName::from_bytes(name.as_bytes()).ok()?,
                    hyper::header::HeaderValue::from_str(value).ok()?,
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PlainHttp { authority, host, target, defaults, idle: RefCell::new(Vec::new()) })
    }

    /// POSTs `body` with the link's `extra` headers and reads the answer's head (and a JSON
    /// body whole, up to [`MAX_RESPONSE_BYTES`]).
    pub(super) async fn post(&self, body: Vec<u8>, extra: &Headers) -> Result<Answer, ClientError> {
        let mut request = self.request(Bytes::from(body), extra)?;
        let mut fresh = false;
        let response = loop {
            let (mut sender, new) = self.sender(fresh).await?;
            match sender.try_send_request(request).await {
                Ok(response) => break (response, sender),
                Err(mut failed) => match failed.take_message() {
                    // Not sent on a kept connection the server had closed: once more, anew.
                    Some(unsent) if !new => {
                        request = unsent;
                        fresh = true;
                    }
                    _ => return Err(transport(failed.into_error())),
                },
            }
        };
        let (response, sender) = response;
        let status = response.status().as_u16();
        let headers = response.headers();
        let session_id = headers
            .get(mcpd::headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        let content_type = headers.get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let events = content_type.is_some_and(|c| c.to_ascii_lowercase().contains("text/event-stream"));
        if events && (200..300).contains(&status) {
            // The connection goes with the stream: it is busy until the stream ends.
            return Ok(Answer {
                status,
                session_id,
                body: AnswerBody::Events(EventStream::Plain(response.into_body())),
            });
        }
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| transport(format!("reading the response: {e}")))?
            .to_bytes();
        self.keep(sender);
        Ok(Answer { status, session_id, body: AnswerBody::Json(body) })
    }

    /// The request: the defaults, then the link's headers for this request.
    fn request(&self, body: Bytes, extra: &Headers) -> Result<hyper::Request<Full<Bytes>>, ClientError> {
        let mut request = hyper::Request::new(Full::new(body));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.target.clone();
        let headers = request.headers_mut();
        headers.reserve(self.defaults.len() + extra.len() + 1);
        headers.insert(hyper::header::HOST, self.host.clone());
        for (name, value) in &self.defaults {
            headers.append(name.clone(), value.clone());
        }
        for (name, value) in extra {
            let value = hyper::header::HeaderValue::from_bytes(value.as_bytes()).map_err(transport)?;
            headers.insert(hyper_name(name)?, value);
        }
        Ok(request)
    }

    /// An idle connection that is still open (unless `fresh`), else a new one; and whether it
    /// is new.
    async fn sender(&self, fresh: bool) -> Result<(SendRequest<Full<Bytes>>, bool), ClientError> {
        if !fresh {
            loop {
                let Some(mut sender) = self.idle.borrow_mut().pop() else { break };
                if sender.is_closed() {
                    continue;
                }
                if sender.ready().await.is_ok() {
                    return Ok((sender, false));
                }
            }
        }
        let stream = tokio::net::TcpStream::connect(&self.authority).await.map_err(transport)?;
        stream.set_nodelay(true).map_err(transport)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(transport)?;
        // The connection's I/O runs as a task of this thread until either side closes it.
        actix_rt::spawn(async move {
            if let Err(e) = connection.await {
                log::debug!("gateway connection closed: {e}");
            }
        });
        Ok((sender, true))
    }

    /// Keeps a connection whose answer was read whole, for the next request.
    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle.borrow_mut();
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
    }
}

/// The hyper name of a link header: the ones every request carries without parsing or
/// allocating, others parsed.
fn hyper_name(name: &awc::http::header::HeaderName) -> Result<hyper::header::HeaderName, ClientError> {
    use hyper::header::HeaderName;
    static KNOWN: [HeaderName; 6] = [
        HeaderName::from_static(mcpd::headers::PROTOCOL_VERSION),
        HeaderName::from_static(mcpd::headers::METHOD),
        HeaderName::from_static(mcpd::headers::NAME),
        HeaderName::from_static(mcpd::headers::SESSION_ID),
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
    ];
    match KNOWN.iter().find(|known| known.as_str() == name.as_str()) {
        Some(known) => Ok(known.clone()),
        None => HeaderName::from_bytes(name.as_str().as_bytes()).map_err(transport),
    }
}

/// The next chunk of an event stream's body (`None` at its end).
pub(super) async fn next_chunk(body: &mut Incoming) -> Option<Result<Bytes, String>> {
    loop {
        match body.frame().await? {
            Ok(frame) => match frame.into_data() {
                Ok(data) => return Some(Ok(data)),
                Err(_trailers) => continue,
            },
            Err(e) => return Some(Err(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_with_valid_headers_are_served_here() {
        let plain = PlainHttp::for_url("http://127.0.0.1:8080/mcp?x=1", &[]).expect("plain http");
        assert_eq!(plain.authority, "127.0.0.1:8080");
        assert_eq!(plain.target, "/mcp?x=1");
        assert_eq!(plain.host, "127.0.0.1:8080");
        assert_eq!(PlainHttp::for_url("http://localhost/mcp", &[]).expect("port 80").authority, "localhost:80");
        assert_eq!(PlainHttp::for_url("http://[::1]:9/mcp", &[]).expect("ipv6").authority, "[::1]:9");
        assert!(PlainHttp::for_url("https://example.com/mcp", &[]).is_none());
        assert!(PlainHttp::for_url("http://user:pw@example.com/mcp", &[]).is_none());
        assert!(PlainHttp::for_url("http://h/mcp", &[("bad name".into(), "v".into())]).is_none());
        let with = PlainHttp::for_url("http://h/mcp", &[("X-Team".into(), "a".into())]).expect("valid header");
        assert_eq!(with.defaults.len(), 3);
    }
}
