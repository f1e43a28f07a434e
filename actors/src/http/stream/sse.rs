//! Server-sent events at the HTTP edge: the `text/event-stream` response and the `Accept`
//! negotiation that decides whether a client may get one. The events' framing is the wire's
//! ([`crate::sse`], re-exported here for the edge's handlers).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use crate::queue::EventReceiver;
pub(crate) use crate::sse::{endpoint, keep_alive, message, EVENT_STREAM, KEEP_ALIVE_INTERVAL};

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
