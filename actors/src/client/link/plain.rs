//! A satellite's HTTP/1.1 client for a plain `http://` endpoint: a small, strict client of our
//! own over keep-alive TCP connections of this thread (idle ones kept, at most [`MAX_IDLE`]),
//! run inline in the caller's future — no task per connection, no channel, no timer, no header
//! map built per request. A stateless gateway call is one POST and one answer: the request is
//! one buffer (the head made once, the call's headers and the body appended) written at once,
//! and the answer's head is parsed from a buffer the connection keeps. An `https://` endpoint,
//! OAuth and sessions keep awc.
//!
//! A connection taken from the idle list may have been closed by the server meanwhile: one seen
//! closed when taken is dropped, and when writing the request fails on a kept connection the
//! request goes out once more on a new one. A request written is never sent again (the server
//! may have run it): a connection that ends without an answer is the call's error.
//! A connection goes back to the idle list only when its answer was read whole and allowed
//! keep-alive (HTTP/1.1 without `Connection: close`); an event stream's connection is dropped at
//! the end of the stream. A gzip body (a server may choose a coding when the request names none)
//! is decoded, bounded like any body once decoded; another coding, or a compressed event
//! stream, is refused naming it.
//!
//! # Layout
//!
//! - this file: [`PlainHttp`] — the request as written, the idle list, where an answer goes, and
//!   decoding;
//! - `connection`: one keep-alive connection — its read buffer, writing a request, reading the
//!   head of its answer;
//! - `head`: the answer's head parsed (status, session id, framing, keep-alive, coding), no I/O;
//! - `body`: [`PlainBody`], the answer's body read as it comes, or whole;
//! - `props`: the reader's properties (every framing, cut anywhere, hostile heads and sizes).

pub(super) mod body;
mod connection;
mod head;

use std::cell::RefCell;

use bytes::Bytes;
use tokio::net::TcpStream;

use super::answer::{transport, AnswerBody, EventStream, PostAnswer};
use super::headers::Headers;
use super::MAX_RESPONSE_BYTES;
use crate::client::error::ClientError;
use body::PlainBody;
use connection::{Connection, Failure};
use head::Head;

/// How many idle connections a satellite keeps to its endpoint: enough for the connections of
/// a burst of that many concurrent calls on one worker thread to carry the next burst (with
/// fewer, a burst past them opens and closes a connection for the calls beyond). The server's
/// keep-alive timeout closes idle ones (a closed one is seen when it is taken, and dropped).
const MAX_IDLE: usize = 256;

/// The HTTP/1.1 client of one satellite link.
pub(super) struct PlainHttp {
    /// `host:port`, connected to.
    authority: String,
    /// `POST {target} HTTP/1.1` and the `Host` header, made once.
    start: Vec<u8>,
    /// The configured headers, then `Accept` and `Content-Type`: each its lowercase name and its
    /// whole line, validated and made once.
    defaults: Vec<(String, Vec<u8>)>,
    idle: RefCell<Vec<Connection>>,
}

impl PlainHttp {
    /// The client for `url` when it is a plain `http://` URL (else `None`: awc serves it).
    /// Headers that are not valid HTTP are left to awc too.
    pub(super) fn for_url(url: &str, configured: &[(String, String)]) -> Option<PlainHttp> {
        use awc::http::header::{HeaderName, HeaderValue};
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
        if target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        HeaderValue::from_str(&authority).ok()?;
        let start = format!("POST {target} HTTP/1.1\r\nhost: {authority}\r\n").into_bytes();
        let standard = [("accept", "application/json, text/event-stream"), ("content-type", "application/json")];
        let defaults = configured
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .chain(standard)
            .map(|(name, value)| {
                let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
                let value = HeaderValue::from_str(value).ok()?;
                let mut line = Vec::with_capacity(name.as_str().len() + value.len() + 4);
                header_line(&mut line, name.as_str(), value.as_bytes());
                Some((name.as_str().to_owned(), line))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PlainHttp { authority, start, defaults, idle: RefCell::new(Vec::new()) })
    }

    /// POSTs `body` with the link's `extra` headers and reads the answer's head (and a JSON
    /// body whole, up to [`MAX_RESPONSE_BYTES`]).
    pub(super) async fn post(&self, body: Vec<u8>, extra: &Headers) -> Result<PostAnswer, ClientError> {
        let request = self.request(&body, extra);
        drop(body);
        let mut kept = self.take_idle();
        loop {
            let reused = kept.is_some();
            let mut connection = match kept.take() {
                Some(connection) => connection,
                None => self.connect().await?,
            };
            match connection.exchange(&request).await {
                Ok(head) => return self.answer(connection, head).await,
                // A kept connection the server had closed: once more, on a new one.
                Err(Failure::Unsent(e)) if reused => log::debug!("gateway connection closed: {e}"),
                Err(Failure::Unsent(e) | Failure::Broken(e)) => return Err(transport(e)),
            }
        }
    }

    /// The request as written: the head (the defaults a header of the call does not replace,
    /// then the call's headers, the last of a name winning) and the body.
    fn request(&self, body: &[u8], extra: &Headers) -> Vec<u8> {
        let extra_len: usize = extra.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
        let defaults_len: usize = self.defaults.iter().map(|(_, line)| line.len()).sum();
        let mut request = Vec::with_capacity(self.start.len() + defaults_len + extra_len + 40 + body.len());
        request.extend_from_slice(&self.start);
        for (name, line) in &self.defaults {
            if !extra.iter().any(|(given, _)| given.as_str() == name) {
                request.extend_from_slice(line);
            }
        }
        for (at, (name, value)) in extra.iter().enumerate() {
            if !extra[at + 1..].iter().any(|(later, _)| later == name) {
                header_line(&mut request, name.as_str(), value.as_bytes());
            }
        }
        request.extend_from_slice(b"content-length: ");
        request.extend_from_slice(decimal(body.len()).as_ref());
        request.extend_from_slice(b"\r\n\r\n");
        request.extend_from_slice(body);
        request
    }

    /// The most recently used idle connection that is still open.
    fn take_idle(&self) -> Option<Connection> {
        let mut idle = self.idle.borrow_mut();
        while let Some(connection) = idle.pop() {
            if connection.still_open() {
                return Some(connection);
            }
        }
        None
    }

    /// A new connection to the endpoint.
    async fn connect(&self) -> Result<Connection, ClientError> {
        let stream = TcpStream::connect(&self.authority).await.map_err(transport)?;
        stream.set_nodelay(true).map_err(transport)?;
        Ok(Connection::new(stream))
    }

    /// The answer whose head was read: an event stream goes with its connection; any other
    /// body is read whole, and the connection kept when it may be.
    async fn answer(&self, connection: Connection, head: Head) -> Result<PostAnswer, ClientError> {
        let mut body = PlainBody::new(connection, head.framing, head.keep_alive);
        let status = head.status;
        if let (Some(coding), true) = (&head.coding, head.events) {
            return Err(transport(format!(
                "the server sent an event stream with Content-Encoding {coding:?}, which mcpd does not read"
            )));
        }
        if head.events && (200..300).contains(&status) {
            return Ok(PostAnswer {
                status,
                session_id: head.session_id,
                body: AnswerBody::Events(EventStream::Plain(body)),
            });
        }
        let bytes = body.whole().await.map_err(|e| transport(format!("reading the response: {e}")))?;
        if let Some(connection) = body.reusable() {
            let mut idle = self.idle.borrow_mut();
            if idle.len() < MAX_IDLE {
                idle.push(connection);
            }
        }
        let bytes = match head.coding.as_deref() {
            None => bytes,
            Some(coding) => decoded(coding, &bytes).map_err(|e| transport(format!("reading the response: {e}")))?,
        };
        Ok(PostAnswer { status, session_id: head.session_id, body: AnswerBody::Json(bytes) })
    }
}

/// A body sent with `Content-Encoding: coding`, decoded (gzip; at most [`MAX_RESPONSE_BYTES`]
/// once decoded). With no `Accept-Encoding` in the request, the server may choose any coding.
fn decoded(coding: &str, bytes: &[u8]) -> Result<Bytes, String> {
    use std::io::Read as _;
    if !matches!(coding, "gzip" | "x-gzip") {
        return Err(format!("the body's Content-Encoding {coding:?} is not one mcpd reads (gzip)"));
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_RESPONSE_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("the gzip body cannot be decoded ({e})"))?;
    if out.len() > MAX_RESPONSE_BYTES {
        return Err(format!("the body is over the {MAX_RESPONSE_BYTES}-byte limit once decoded"));
    }
    Ok(Bytes::from(out))
}

/// `name: value\r\n` appended to `out`.
fn header_line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// `n` in decimal ASCII, without the formatting machinery.
fn decimal(mut n: usize) -> impl AsRef<[u8]> {
    struct Digits([u8; 20], usize);
    impl AsRef<[u8]> for Digits {
        fn as_ref(&self) -> &[u8] {
            &self.0[self.1..]
        }
    }
    let mut digits = Digits([0; 20], 20);
    loop {
        digits.1 -= 1;
        digits.0[digits.1] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return digits;
        }
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_with_valid_headers_are_served_here() {
        let plain = PlainHttp::for_url("http://127.0.0.1:8080/mcp?x=1", &[]).expect("plain http");
        assert_eq!(plain.authority, "127.0.0.1:8080");
        assert_eq!(plain.start, b"POST /mcp?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n");
        assert_eq!(PlainHttp::for_url("http://localhost/mcp", &[]).expect("port 80").authority, "localhost:80");
        assert_eq!(PlainHttp::for_url("http://[::1]:9/mcp", &[]).expect("ipv6").authority, "[::1]:9");
        assert!(PlainHttp::for_url("https://example.com/mcp", &[]).is_none());
        assert!(PlainHttp::for_url("http://user:pw@example.com/mcp", &[]).is_none());
        assert!(PlainHttp::for_url("http://h/mcp", &[("bad name".into(), "v".into())]).is_none());
        assert!(PlainHttp::for_url("http://h/mcp", &[("x".into(), "line\r\nbreak".into())]).is_none());
        let with = PlainHttp::for_url("http://h/mcp", &[("X-Team".into(), "a".into())]).expect("valid header");
        assert_eq!(with.defaults.len(), 3);
        assert_eq!(with.defaults[0], ("x-team".to_owned(), b"x-team: a\r\n".to_vec()));
    }

    use std::future::Future;
    use std::time::Duration;

    use awc::http::header::{HeaderName, HeaderValue};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// How long any read, accept or call of these tests may take.
    const WAIT: Duration = Duration::from_secs(5);

    async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
        tokio::time::timeout(WAIT, future).await.unwrap_or_else(|_| panic!("timed out: {what}"))
    }

    /// A listener on a free loopback port and the client of its `/mcp`, with one configured
    /// header.
    async fn listen() -> (TcpListener, PlainHttp) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        (listener, PlainHttp::for_url(&url, &[("X-Team".into(), "blue".into())]).unwrap())
    }

    async fn accept(listener: &TcpListener) -> TcpStream {
        let (stream, _) = within("accepting a connection", listener.accept()).await.unwrap();
        stream.set_nodelay(true).unwrap();
        stream
    }

    /// Asserts that the client opens no other connection.
    async fn no_accept(listener: &TcpListener) {
        let accepted = tokio::time::timeout(Duration::from_millis(500), listener.accept()).await;
        assert!(accepted.is_err(), "the client opened another connection");
    }

    /// Reads one request (its head and its Content-Length body), as text.
    async fn read_request(stream: &mut TcpStream) -> String {
        let mut bytes = Vec::new();
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            if let httparse::Status::Complete(head) = request.parse(&bytes).unwrap() {
                let length = request.headers.iter().find(|h| h.name.eq_ignore_ascii_case("content-length")).unwrap();
                let length: usize = std::str::from_utf8(length.value).unwrap().parse().unwrap();
                if bytes.len() >= head + length {
                    assert_eq!(bytes.len(), head + length, "bytes after the request");
                    return String::from_utf8(bytes).unwrap();
                }
            }
            let mut chunk = [0u8; 4096];
            let n = within("reading a request", stream.read(&mut chunk)).await.unwrap();
            assert!(n > 0, "the client closed the connection");
            bytes.extend_from_slice(&chunk[..n]);
        }
    }

    /// Accepts the next connection and reads one request on it: the connection, to answer on.
    async fn next_request(listener: &TcpListener) -> TcpStream {
        let mut stream = accept(listener).await;
        read_request(&mut stream).await;
        stream
    }

    /// Reads one request on `stream` and answers it with `bytes`.
    async fn answer(stream: &mut TcpStream, bytes: &[u8]) {
        read_request(stream).await;
        send(stream, bytes).await;
    }

    async fn send(stream: &mut TcpStream, bytes: &[u8]) {
        within("writing", stream.write_all(bytes)).await.unwrap();
    }

    async fn call(plain: &PlainHttp, body: &str) -> Result<PostAnswer, ClientError> {
        within("the call", plain.post(body.as_bytes().to_vec(), &Vec::new())).await
    }

    /// The status and JSON body of a call that succeeded.
    fn json(answer: Result<PostAnswer, ClientError>) -> (u16, String) {
        let answer = answer.unwrap_or_else(|e| panic!("{e}"));
        match answer.body {
            AnswerBody::Json(bytes) => (answer.status, String::from_utf8(bytes.to_vec()).unwrap()),
            AnswerBody::Events(_) => panic!("an event stream"),
        }
    }

    /// The error of a call that failed.
    fn error(answer: Result<PostAnswer, ClientError>) -> String {
        match answer {
            Ok(answer) => panic!("answered with HTTP {}", answer.status),
            Err(e) => e.to_string(),
        }
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

    #[tokio::test]
    async fn a_content_length_answer_is_read_and_its_connection_carries_the_next_request() {
        let (listener, plain) = listen().await;
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let mut stream = accept(&listener).await;
            let first = read_request(&mut stream).await;
            send(&mut stream, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id:  s-1 \r\nContent-Length: 11\r\n\r\n{\"ok\":true}").await;
            let second = read_request(&mut stream).await;
            send(&mut stream, b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n").await;
            no_accept(&listener).await;
            (first, second)
        });
        let extra = vec![
            (HeaderName::from_static("x-team"), HeaderValue::from_static("red")),
            (HeaderName::from_static("mcp-method"), HeaderValue::from_static("tools/call")),
        ];
        let answer = within("the call", plain.post(b"body".to_vec(), &extra)).await.unwrap();
        assert_eq!(answer.session_id.as_deref(), Some("s-1"));
        assert_eq!(json(Ok(answer)), (200, r#"{"ok":true}"#.to_owned()));
        assert_eq!(json(call(&plain, "again").await), (202, String::new()));
        let (first, second) = within("the server", server).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: application/json, text/event-stream\r\n\
             content-type: application/json\r\nx-team: red\r\nmcp-method: tools/call\r\ncontent-length: 4\r\n\r\nbody"
        );
        assert_eq!(first, head);
        assert!(second.contains("x-team: blue\r\n") && second.ends_with("content-length: 5\r\n\r\nagain"), "{second}");
    }

    #[tokio::test]
    async fn a_chunked_answer_split_at_awkward_places_is_read_whole() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            let pieces: [&[u8]; 10] = [
                b"HTTP/1.1 2",
                b"00 OK\r\ntransfer-encoding: chu",
                b"nked\r\ncontent-type: application/json\r\n\r",
                b"\n5\r",
                b"\nhel",
                b"lo\r",
                b"\n6;ext=1\r\n worl",
                b"d\r\n0\r\n",
                b"trailer-x: 1\r\n",
                b"\r\n",
            ];
            for piece in pieces {
                send(&mut stream, piece).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            answer(&mut stream, OK).await;
            no_accept(&listener).await;
        });
        assert_eq!(json(call(&plain, "{}").await), (200, "hello world".to_owned()));
        assert_eq!(json(call(&plain, "{}").await), (200, "{}".to_owned()));
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn an_event_stream_is_streamed_chunk_by_chunk() {
        let (listener, plain) = listen().await;
        let (next, go_on) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            send(&mut stream, format!("{head}d\r\ndata: first\n\n\r\n").as_bytes()).await;
            within("the client's first event", go_on).await.unwrap();
            send(&mut stream, b"e\r\ndata: second\n\n\r\n0\r\n\r\n").await;
        });
        let answer = call(&plain, "{}").await.unwrap_or_else(|e| panic!("{e}"));
        let AnswerBody::Events(EventStream::Plain(mut body)) = answer.body else { panic!("not a plain event stream") };
        let first = within("the first event", body.next_chunk()).await.unwrap().unwrap();
        assert_eq!(first, "data: first\n\n");
        next.send(()).unwrap();
        let second = within("the second event", body.next_chunk()).await.unwrap().unwrap();
        assert_eq!(second, "data: second\n\n");
        assert!(within("the end", body.next_chunk()).await.is_none());
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn a_close_delimited_answer_ends_with_the_connection() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            send(&mut stream, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"a\":").await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            send(&mut stream, b"1}").await;
            drop(stream);
            let mut stream = next_request(&listener).await;
            send(&mut stream, OK).await;
        });
        assert_eq!(json(call(&plain, "{}").await), (200, r#"{"a":1}"#.to_owned()));
        assert_eq!(json(call(&plain, "{}").await), (200, "{}".to_owned()));
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn connection_close_and_http_1_0_answers_are_not_reused() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            // Both connections stay open: a client that reused one would wait for an answer.
            let mut first = next_request(&listener).await;
            send(&mut first, b"HTTP/1.1 200 OK\r\nConnection: Close\r\ncontent-length: 2\r\n\r\n{}").await;
            let mut second = next_request(&listener).await;
            send(&mut second, b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}").await;
            let mut third = next_request(&listener).await;
            send(&mut third, OK).await;
            (first, second)
        });
        for _ in 0..3 {
            assert_eq!(json(call(&plain, "{}").await), (200, "{}".to_owned()));
        }
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn a_kept_connection_the_server_closed_is_dropped_and_a_request_written_is_never_sent_again() {
        let (listener, plain) = listen().await;
        let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            send(&mut stream, OK).await;
            // The kept connection closed while idle: the next call opens a new one.
            drop(stream);
            closed_tx.send(()).unwrap();
            let mut stream = next_request(&listener).await;
            send(&mut stream, b"HTTP/1.1 200 OK\r\ncontent-length: 15\r\n\r\n{\"second\":true}").await;
            // Closed without an answer once the request was read: an error, not sent again.
            read_request(&mut stream).await;
            drop(stream);
            no_accept(&listener).await;
        });
        assert_eq!(json(call(&plain, "one").await), (200, "{}".to_owned()));
        within("the server closing", closed_rx).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(json(call(&plain, "two").await), (200, r#"{"second":true}"#.to_owned()));
        let e = error(call(&plain, "three").await);
        assert!(e.contains("the server closed the connection without answering"), "{e}");
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn an_answer_cut_in_its_head_is_an_error_and_not_sent_again() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            send(&mut stream, OK).await;
            answer(&mut stream, b"HTTP/1.1 200 OK\r\ncontent-le").await;
            drop(stream);
            no_accept(&listener).await;
        });
        assert_eq!(json(call(&plain, "{}").await), (200, "{}".to_owned()));
        let e = error(call(&plain, "{}").await);
        assert!(e.contains("the server closed the connection in the response head"), "{e}");
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn a_head_over_64_kib_or_64_headers_is_an_error_naming_the_limit() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let big = "a".repeat(40 * 1024);
            let heads = [
                format!("HTTP/1.1 200 OK\r\nx-one: {big}\r\nx-two: {big}\r\ncontent-length: 2\r\n\r\n{{}}"),
                format!("HTTP/1.1 200 OK\r\n{}content-length: 2\r\n\r\n{{}}", "x-h: v\r\n".repeat(64)),
                format!("HTTP/1.1 200 OK\r\n{}content-length: 2\r\n\r\n{{}}", "x-h: v\r\n".repeat(63)),
            ];
            for head in heads {
                let mut stream = next_request(&listener).await;
                // The client may stop reading at the limit.
                let _ = stream.write_all(head.as_bytes()).await;
            }
        });
        let e = error(call(&plain, "{}").await);
        assert!(e.contains("its head is over the 64 KiB limit"), "{e}");
        let e = error(call(&plain, "{}").await);
        assert!(e.contains("more than 64 headers"), "{e}");
        assert_eq!(json(call(&plain, "{}").await), (200, "{}".to_owned()));
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_an_error() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", MAX_RESPONSE_BYTES + 1);
            send(&mut stream, head.as_bytes()).await;
            let mut stream = next_request(&listener).await;
            send(&mut stream, b"HTTP/1.1 200 OK\r\n\r\n").await;
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..=MAX_RESPONSE_BYTES / piece.len() {
                if stream.write_all(&piece).await.is_err() {
                    break;
                }
            }
        });
        let over = format!("reading the response: the body is over the {MAX_RESPONSE_BYTES}-byte limit");
        let e = error(call(&plain, "{}").await);
        assert!(e.contains(&over), "{e}");
        let e = error(call(&plain, "{}").await);
        assert!(e.contains(&over), "{e}");
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn interim_1xx_answers_are_skipped() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            send(&mut stream, b"HTTP/1.1 100 Continue\r\n\r\n").await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            send(
                &mut stream,
                b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}",
            )
            .await;
        });
        assert_eq!(json(call(&plain, "{}").await), (201, "{}".to_owned()));
        within("the server", server).await.unwrap();
    }

    #[tokio::test]
    async fn an_answer_that_is_not_http_is_a_clear_error() {
        let (listener, plain) = listen().await;
        let server = tokio::spawn(async move {
            let mut stream = next_request(&listener).await;
            send(&mut stream, b"SSH-2.0-OpenSSH_9.6\r\n").await;
            drop(stream);
            no_accept(&listener).await;
        });
        let e = error(call(&plain, "{}").await);
        assert!(e.contains("reading the response: the answer is not HTTP/1.1"), "{e}");
        within("the server", server).await.unwrap();
    }
}
