//! HTTP/1.1 requests written by hand, for the benches that speak raw TCP (`load`: a cheap load
//! generator; `soak`: slow readers with a small receive buffer).

use std::fmt::Write as _;

/// The bytes of one request to `/mcp` on `127.0.0.1:port`; a POST carries `body` as JSON and
/// accepts JSON or SSE.
pub(crate) fn http_request(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut text = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    if method == "POST" {
        let _ = write!(
            text,
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            body.len()
        );
    }
    for (name, value) in headers {
        let _ = write!(text, "{name}: {value}\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}
