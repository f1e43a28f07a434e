//! Server-sent events on the wire: the framing of every event mcpd sends (messages with or
//! without an id, the priming event, the 2024-11-05 endpoint event, keep-alive comments). A wire
//! concern shared by the HTTP edge, the sessions and the cluster's event log; the response and
//! the `Accept` negotiation are the edge's (`http::stream::sse`).

use std::time::Duration;

use bytes::Bytes;

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
}
