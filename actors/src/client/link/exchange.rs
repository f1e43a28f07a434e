//! One HTTP exchange: POST a message, read the answer's head, then its body — a JSON response,
//! or an SSE stream on which the server may send its own requests and notifications before the
//! response (a session's stream that ends early is resumed with `Last-Event-ID`). Bodies and
//! events are capped at [`MAX_RESPONSE_BYTES`]; an error status without a JSON-RPC error is a
//! [`ClientError::Http`].

use std::cell::Cell;
use std::time::Duration;

use awc::http::header;
use bytes::Bytes;
use mcpd::client::sse::SseDecoder;
use mcpd::jsonrpc::RequestId;
use mcpd::model::PassedResult;
use serde_json::Value;

use super::answer::{transport, AnswerBody, EventStream, PostAnswer};
use super::headers::Headers;
use super::outcome::{outcome_of_body, passed_result, passed_text};
use super::{CallEntry, Link, Mode, MAX_RESPONSE_BYTES};
use crate::client::error::ClientError;

/// How many times one request may reconnect its SSE stream (GET + `Last-Event-ID`).
const MAX_RECONNECTS: usize = 5;
/// How long to wait before resuming a stream whose server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
/// How much of an error page an [`ClientError::Http`] keeps, in characters.
const ERROR_EXCERPT_CHARS: usize = 1000;

impl Link {
    /// A request that could not be sent or got no response. awc's own time limit (the link's
    /// plus a margin, only a backstop) reads as the link's `Timeout`: when the process is
    /// starved past both limits, whichever is polled first decides, and the error must not
    /// depend on that.
    pub(super) fn not_sent(&self, e: awc::error::SendRequestError) -> ClientError {
        use awc::error::{ConnectError, SendRequestError};
        match e {
            SendRequestError::Timeout => ClientError::Timeout(self.cfg.timeout.as_secs()),
            SendRequestError::Connect(ConnectError::Disconnected) => {
                transport("the server closed the connection without answering")
            }
            SendRequestError::Send(e) => transport(format!("sending the request failed: {e}")),
            e => transport(e),
        }
    }
}

/// Where a gateway's `tools/call` keeps its usual answer, read straight from the body.
#[derive(Clone, Copy)]
pub(super) enum Passing<'a> {
    /// Read into the result the gateway passes on ([`super::outcome::passed_result`]), kept in
    /// the call's entry.
    Result(&'a CallEntry),
    /// Kept as the result's text ([`super::outcome::passed_text`]): a lane's call.
    Text(&'a Cell<Option<PassedResult>>),
}

impl Passing<'_> {
    /// Reads `body`, the answer to `id`, and keeps it, when it is the usual answer.
    fn keep(self, body: &[u8], id: &RequestId) -> bool {
        match self {
            Passing::Result(call) => passed_result(body, id).map(|result| call.keep_passed(result)).is_some(),
            Passing::Text(kept) => passed_text(body, id).map(|result| kept.set(Some(result))).is_some(),
        }
    }
}

impl Link {
    /// Sends one request and reads its answer, over stdio when the wire is a child, else by
    /// POST to the endpoint.
    pub(super) async fn exchange(&self, id: &RequestId, body: Vec<u8>, headers: Headers) -> Result<Value, ClientError> {
        self.exchange_for(id, body, headers, None).await
    }

    /// As [`Link::exchange`]; for a gateway's `tools/call` (`passing`), the usual JSON answer
    /// is read straight into what the gateway passes on and kept where `passing` says, and the
    /// result returned is `null`.
    pub(super) async fn exchange_for(
        &self,
        id: &RequestId,
        body: Vec<u8>,
        headers: Headers,
        passing: Option<Passing<'_>>,
    ) -> Result<Value, ClientError> {
        if let Some(channel) = self.stdio_channel() {
            return channel.request(id, body).await;
        }
        let answer = self.post(&self.cfg.url, body, headers).await?;
        if let Some(session) = &answer.session_id {
            self.adopt_session_id(session);
        }
        if let (Some(passing), AnswerBody::Json(bytes)) = (passing, &answer.body) {
            if (200..300).contains(&answer.status) && passing.keep(bytes, id) {
                return Ok(Value::Null);
            }
        }
        self.read_response(answer, id).await
    }

    /// POSTs `body` to `url` with `extra` headers (beside the link's own) and reads the head.
    pub(super) async fn post(&self, url: &str, body: Vec<u8>, extra: Headers) -> Result<PostAnswer, ClientError> {
        if let Some(auth) = &self.auth {
            let build = || {
                let mut request = self.http.client().post(url);
                for header in &extra {
                    request = request.insert_header(header.clone());
                }
                request
            };
            let sent = Box::pin(self.send_authorized(auth, url, &build, Some(Bytes::from(body)))).await?;
            return self.answer(sent).await;
        }
        let mut extra = extra;
        if let Some(bearer) = self.borrowed().filter(|share| share.oauth()).and_then(super::share::LinkShare::bearer) {
            extra.push((header::AUTHORIZATION, bearer));
        }
        if let Some(plain) = self.plain.as_ref().filter(|_| url == self.cfg.url) {
            return plain.post(body, &extra).await;
        }
        let mut request = self.http.client().post(url);
        for header in extra {
            request = request.insert_header(header);
        }
        let response = request.send_body(body).await.map_err(|e| self.not_sent(e))?;
        self.answer(response).await
    }

    async fn answer(&self, mut response: super::http::Response) -> Result<PostAnswer, ClientError> {
        self.http.learn(&response, &self.cfg.name);
        let status = response.status().as_u16();
        let session_id = response
            .headers()
            .get(mcpd::headers::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        let body = if is_event_stream(&response) && (200..300).contains(&status) {
            AnswerBody::Events(EventStream::Awc(response))
        } else {
            AnswerBody::Json(response.body().limit(MAX_RESPONSE_BYTES).await.map_err(body_error)?)
        };
        Ok(PostAnswer { status, session_id, body })
    }

    /// Reads the response to request `id` out of an answer (JSON, or SSE events on which the
    /// server may also send notifications and requests of its own).
    async fn read_response(&self, answer: PostAnswer, id: &RequestId) -> Result<Value, ClientError> {
        let status = answer.status;
        match answer.body {
            AnswerBody::Json(bytes) => {
                if !(200..300).contains(&status) {
                    return Err(http_error(status, &bytes));
                }
                outcome_of_body(&bytes, id, status)
            }
            // Boxed: the event stream's reading is a large future, and most answers are JSON;
            // inline, every request's future (moved and boxed along the call) would carry it.
            AnswerBody::Events(response) => Box::pin(self.read_events(response, id, status)).await,
        }
    }

    async fn read_events(&self, mut response: EventStream, id: &RequestId, status: u16) -> Result<Value, ClientError> {
        let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
        let mut last_event_id: Option<String> = None;
        let mut retry = DEFAULT_RETRY;
        let mut reconnects = 0;
        loop {
            let chunk = response.next().await;
            let ended = !matches!(chunk, Some(Ok(_)));
            let events = match chunk {
                Some(Ok(bytes)) => decoder.feed(&bytes).map_err(|e| ClientError::Protocol(e.to_string()))?,
                Some(Err(e)) => {
                    log::debug!("{}: SSE stream broke: {e}", self.cfg.name);
                    decoder.finish().into_iter().collect()
                }
                None => decoder.finish().into_iter().collect(),
            };
            for event in events {
                if let Some(event_id) = &event.id {
                    last_event_id = Some(event_id.clone());
                }
                if let Some(ms) = event.retry {
                    retry = Duration::from_millis(ms);
                }
                if event.data.trim().is_empty() || event.kind() != "message" {
                    continue;
                }
                let message: Value = match serde_json::from_str(&event.data) {
                    Ok(message) => message,
                    Err(e) => return Err(ClientError::Protocol(format!("an SSE event is not JSON: {e}"))),
                };
                if let Some(outcome) = self.handle_message(message, Some(id), status).await {
                    return outcome;
                }
            }
            if !ended {
                continue;
            }
            // The stream ended before the response: resume it where it stopped, after the
            // server's retry delay (2025-11-25 SSE polling), when the session allows it.
            let resumable = matches!(self.mode(), Some(Mode::Session(_))) && last_event_id.is_some();
            if !resumable || reconnects >= MAX_RECONNECTS {
                return Err(ClientError::Protocol(format!("MCP SSE stream ended without a response to request {id}.")));
            }
            reconnects += 1;
            actix_rt::time::sleep(retry).await;
            response = EventStream::Awc(self.resume(last_event_id.as_deref().unwrap_or_default()).await?);
            decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
        }
    }

    /// Reopens a session's stream after `last_event_id` (GET with `Last-Event-ID`).
    async fn resume(&self, last_event_id: &str) -> Result<super::http::Response, ClientError> {
        let headers = self.wire_headers();
        let build = || {
            let mut request =
                self.http.client().get(&self.cfg.url).insert_header((header::ACCEPT, "text/event-stream"));
            for header in &headers {
                request = request.insert_header(header.clone());
            }
            request.insert_header(("Last-Event-ID", last_event_id))
        };
        let response = match &self.auth {
            Some(auth) => Box::pin(self.send_authorized(auth, &self.cfg.url, &build, None)).await?,
            None => build().send().await.map_err(|e| self.not_sent(e))?,
        };
        if !response.status().is_success() {
            return Err(ClientError::Protocol(format!(
                "resuming the SSE stream failed with HTTP {}",
                response.status()
            )));
        }
        Ok(response)
    }
}

/// A body that could not be read whole.
fn body_error(e: awc::error::PayloadError) -> ClientError {
    match e {
        awc::error::PayloadError::Incomplete(_) => {
            transport("reading the response: the server closed the connection before the end of the body")
        }
        e => transport(format!("reading the response: {e}")),
    }
}

/// Whether a response is an event stream (its `Content-Type`, ignoring case).
pub(super) fn is_event_stream(response: &super::http::Response) -> bool {
    let content_type = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    content_type.is_some_and(|c| c.to_ascii_lowercase().contains("text/event-stream"))
}

/// An error status: the JSON-RPC error its body holds (an `error` object), else
/// [`ClientError::Http`] with the start of the body — an OAuth error body
/// (`{"error": "invalid_token"}`, RFC 6750) among them.
pub(super) fn http_error(status: u16, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<Value>(body) {
        Ok(message) if message.get("error").is_some_and(Value::is_object) => {
            ClientError::from_error_object(&message["error"], status)
        }
        _ => {
            let text = String::from_utf8_lossy(body);
            ClientError::Http { status, body: text.chars().take(ERROR_EXCERPT_CHARS).collect() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_status_is_the_bodys_json_rpc_error_or_http_with_a_1000_character_excerpt() {
        let page = format!("<h1>500</h1>{}", "é".repeat(2000));
        match http_error(500, page.as_bytes()) {
            ClientError::Http { status: 500, body } => {
                assert_eq!(body.chars().count(), ERROR_EXCERPT_CHARS);
                assert!(body.starts_with("<h1>500</h1>é"));
            }
            other => panic!("{other:?}"),
        }
        let error = ClientError::Http { status: 404, body: "Not Found".into() };
        assert_eq!(error.to_string(), "transport error: HTTP 404: Not Found");
        let rpc = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"gone"}}"#;
        assert!(matches!(http_error(404, rpc), ClientError::Rpc { code: -32001, http_status: 404, .. }));
        // An OAuth error body is not a JSON-RPC error; both refusals are unauthorized.
        let oauth = http_error(401, br#"{"error":"invalid_token"}"#);
        assert_eq!(oauth, ClientError::Http { status: 401, body: r#"{"error":"invalid_token"}"#.into() });
        assert!(oauth.is_unauthorized() && http_error(401, rpc).is_unauthorized());
        assert_eq!((oauth.kind(), http_error(403, rpc).kind()), ("auth", "auth"));
        assert!(!http_error(404, rpc).is_unauthorized());
    }
}
