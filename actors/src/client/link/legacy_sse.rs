//! The 2024-11-05 HTTP+SSE transport: a GET stream on the endpoint that first names, in an
//! `endpoint` event, the URL to POST messages to (same origin only), then carries the server's
//! responses, requests and notifications. A link uses it when configured to, or when an old
//! server refuses `initialize` on streamable HTTP.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use awc::http::header;
use futures_util::StreamExt as _;
use mcpd::client::sse::SseDecoder;
use mcpd::jsonrpc::RequestId;
use serde_json::Value;
use tokio::sync::oneshot;

use super::answer::AnswerBody;
use super::exchange::{http_error, is_event_stream};
use super::headers::Headers;
use super::outcome::outcome_of;
use super::sse_channel::{Pending, SseChannel};
use super::{Link, MAX_RESPONSE_BYTES};
use crate::client::error::ClientError;
use crate::panics::{self, Site};

impl Link {
    /// Opens the GET stream, waits for its `endpoint` event and makes the channel the carrier
    /// to negotiate over.
    pub(super) async fn open_sse(self: &Rc<Self>) -> Result<(), ClientError> {
        let build = || self.http.client().get(&self.cfg.url).insert_header((header::ACCEPT, "text/event-stream"));
        let mut response = match &self.auth {
            Some(auth) => Box::pin(self.send_authorized(auth, &self.cfg.url, &build, None)).await?,
            None => build().send().await.map_err(|e| self.not_sent(e))?,
        };
        if !response.status().is_success() || !is_event_stream(&response) {
            return Err(ClientError::Protocol(format!(
                "MCP server did not open an HTTP+SSE stream (HTTP {}).",
                response.status().as_u16()
            )));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let pending: Pending = Rc::new(RefCell::new(HashMap::new()));
        let link = Rc::downgrade(self);
        let reader_pending = pending.clone();
        let name = self.cfg.name.clone();
        let reader = panics::spawn(Site::Client, async move {
            let mut decoder = SseDecoder::new(MAX_RESPONSE_BYTES);
            let mut endpoint_tx = Some(endpoint_tx);
            while let Some(Ok(chunk)) = response.next().await {
                let Ok(events) = decoder.feed(&chunk) else { break };
                for event in events {
                    if event.kind() == "endpoint" {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(event.data.trim().to_owned());
                        }
                        continue;
                    }
                    let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
                    let id = message.get("id").and_then(RequestId::from_value);
                    if message.get("method").is_none() {
                        if let Some(id) = id {
                            let waiter = reader_pending.borrow_mut().remove(&id);
                            if let Some(waiter) = waiter {
                                let _ = waiter.send(outcome_of(&message, &id, 200));
                            }
                        }
                        continue;
                    }
                    if let Some(link) = link.upgrade() {
                        panics::spawn(Site::Client, async move {
                            link.handle_message(message, None, 200).await;
                        });
                    }
                }
            }
            log::debug!("{name}: HTTP+SSE stream ended");
            for (_, waiter) in reader_pending.borrow_mut().drain() {
                let _ = waiter.send(Err(ClientError::Protocol("the MCP SSE stream ended".into())));
            }
        });
        let endpoint = match actix_rt::time::timeout(self.cfg.timeout, endpoint_rx).await {
            Ok(Ok(endpoint)) => endpoint,
            Ok(Err(_)) => return Err(ClientError::Protocol("MCP SSE stream ended before its endpoint event.".into())),
            Err(_) => return Err(ClientError::Timeout(self.cfg.timeout.as_secs())),
        };
        let post_url = resolve_same_origin(&self.cfg.url, &endpoint)
            .ok_or_else(|| ClientError::Protocol("MCP SSE endpoint must use the configured server origin.".into()))?;
        let channel = Rc::new(SseChannel { post_url, pending, reader });
        self.negotiate_over_sse(channel);
        Ok(())
    }

    /// POSTs a request to the channel's endpoint and waits for its response on the stream.
    pub(super) async fn sse_request(
        &self,
        id: &RequestId,
        body: Vec<u8>,
        headers: Headers,
    ) -> Result<Value, ClientError> {
        let channel = self.sse_channel().ok_or(ClientError::Closed)?;
        let (tx, rx) = oneshot::channel();
        channel.pending.borrow_mut().insert(id.clone(), tx);
        let answer = self.post(channel.post_url(), body, headers).await?;
        if !(200..300).contains(&answer.status) {
            if let AnswerBody::Json(bytes) = &answer.body {
                return Err(http_error(answer.status, bytes));
            }
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }
}

/// Resolves the `endpoint` event against the GET URL; `None` when it names another origin.
fn resolve_same_origin(base: &str, endpoint: &str) -> Option<String> {
    // Every index below is found by searching ASCII text, so it falls on a character boundary;
    // `get` says so without a slice that could panic.
    let origin_end = base.find("://").map(|i| i + 3)?;
    let authority_end = base.get(origin_end..)?.find('/').map_or(base.len(), |i| origin_end + i);
    let origin = base.get(..authority_end)?;
    if endpoint.contains("://") {
        let end = endpoint.find("://").map(|i| i + 3)?;
        let end = endpoint.get(end..)?.find('/').map_or(endpoint.len(), |i| end + i);
        return endpoint.get(..end)?.eq_ignore_ascii_case(origin).then(|| endpoint.to_owned());
    }
    if endpoint.starts_with("//") {
        return None;
    }
    if endpoint.starts_with('/') {
        return Some(format!("{origin}{endpoint}"));
    }
    let dir_end = base.rfind('/').filter(|i| *i >= authority_end).map_or(base.len(), |i| i + 1);
    let dir = base.get(..dir_end).unwrap_or(base);
    let joiner = if dir.ends_with('/') { "" } else { "/" };
    Some(format!("{dir}{joiner}{endpoint}"))
}

#[cfg(test)]
mod tests {
    use super::resolve_same_origin;

    #[test]
    fn sse_endpoints_resolve_against_the_stream_url_and_keep_its_origin() {
        let base = "http://127.0.0.1:9/sse";
        assert_eq!(
            resolve_same_origin(base, "/messages?sessionId=a").as_deref(),
            Some("http://127.0.0.1:9/messages?sessionId=a")
        );
        assert_eq!(resolve_same_origin(base, "http://127.0.0.1:9/m").as_deref(), Some("http://127.0.0.1:9/m"));
        assert_eq!(resolve_same_origin(base, "http://evil.example:9/m"), None);
        assert_eq!(resolve_same_origin(base, "//evil.example/m"), None);
        assert_eq!(resolve_same_origin("http://h/a/sse", "messages").as_deref(), Some("http://h/a/messages"));
    }
}
