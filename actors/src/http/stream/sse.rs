//! Server-sent events on the wire: the framing of every event mcpd sends (messages with or
//! without an id, the priming event, the 2024-11-05 endpoint event, keep-alive comments), the
//! `text/event-stream` response, and the `Accept` negotiation that decides whether a client may
//! get one.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;

use crate::queue::EventReceiver;

/// The SSE media type.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";
/// How often an open stream with nothing to say sends a keep-alive comment.
pub(crate) const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// One `message` event carrying a JSON-RPC message; with an `id` when the stream can be
/// resumed from it.
pub(crate) fn message(id: Option<&str>, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + id.map_or(0, str::len) + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The priming event: an id (to resume from) and the retry delay, with empty data.
pub(crate) fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {}\ndata: \n\n", retry.as_millis()))
}

/// The 2024-11-05 `endpoint` event: where the client POSTs its messages.
pub(crate) fn endpoint(url: &str) -> Bytes {
    Bytes::from(format!("event: endpoint\ndata: {url}\n\n"))
}

/// A keep-alive comment, so that idle streams survive proxies and client timeouts.
pub(crate) fn keep_alive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// A `text/event-stream` response whose body is what arrives on `body` (bounded: a reader that
/// does not keep up is cut off, and the body fails, closing the connection); `keep` lives as long
/// as the response (a guard that ends something when the client goes away).
pub(crate) fn response<K: 'static>(mut body: EventReceiver, keep: K) -> HttpResponse {
    let stream = futures_util::stream::poll_fn(move |cx| {
        let _keep = &keep;
        body.poll_event(cx)
    });
    HttpResponse::Ok()
        .content_type(EVENT_STREAM)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(stream)
}

/// Whether the request's `Accept` lists `media` (or `*/*`).
fn accepts(req: &HttpRequest, media: &str) -> bool {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    accept.split(',').any(|part| {
        let essence = part.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case(media) || essence == "*/*"
    })
}

/// Whether `Accept` allows an event stream (`GET /mcp` must).
pub(crate) fn accepts_events(req: &HttpRequest) -> bool {
    accepts(req, EVENT_STREAM)
}

/// Whether `Accept` lists both JSON and SSE (streamable POSTs must: the answer may be either).
pub(crate) fn accepts_json_and_events(req: &HttpRequest) -> bool {
    accepts(req, "application/json") && accepts(req, EVENT_STREAM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_framed_with_and_without_ids() {
        assert_eq!(message(Some("3:1"), b"{}"), Bytes::from_static(b"id: 3:1\nevent: message\ndata: {}\n\n"));
        assert_eq!(message(None, b"{}"), Bytes::from_static(b"event: message\ndata: {}\n\n"));
        assert_eq!(priming("3:0", Duration::from_secs(3)), Bytes::from_static(b"id: 3:0\nretry: 3000\ndata: \n\n"));
        assert_eq!(
            endpoint("/messages?sessionId=ab"),
            Bytes::from_static(b"event: endpoint\ndata: /messages?sessionId=ab\n\n")
        );
    }

    #[test]
    fn accept_lists_are_read_by_media_type_essence() {
        let req = |accept: &str| {
            actix_web::test::TestRequest::default().insert_header((header::ACCEPT, accept)).to_http_request()
        };
        assert!(accepts_json_and_events(&req("application/json, text/event-stream;q=0.9")));
        assert!(accepts_json_and_events(&req("*/*")));
        assert!(!accepts_json_and_events(&req("application/json")));
        assert!(accepts_events(&req("TEXT/EVENT-STREAM")));
        assert!(!accepts_events(&req("application/json")));
    }
}
