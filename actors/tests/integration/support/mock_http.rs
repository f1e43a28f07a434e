//! A scripted HTTP/1.1 server for client fault tests: a `std::net::TcpListener` on
//! 127.0.0.1:0 served by plain threads. Every request is recorded (method, path, headers, body)
//! and answered by a handler closure with a [`Reply`]: a normal response, raw bytes (garbage), no
//! answer at all, an SSE stream that dies before its end, or any of these after a delay. Each
//! connection carries one exchange (`Connection: close`).
//!
//! Everything is bounded: the server stops when dropped (its threads notice within ~10 ms), and
//! no thread outlives [`MAX_LIFETIME`] even if the drop never comes.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::eventually::poll_until;

/// The longest any thread of a mock server lives.
pub(crate) const MAX_LIFETIME: Duration = Duration::from_secs(90);
/// Largest request head or body accepted.
const MAX_REQUEST_BYTES: usize = 1 << 20;
/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(10);

/// One request as received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// Its position among all requests of the server (0-based).
    pub(crate) index: usize,
    pub(crate) method: String,
    /// The request target (path and query).
    pub(crate) path: String,
    /// Header names lower-cased, in order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    /// A header's value (name compared case-insensitively).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is.
    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The JSON-RPC method of the body (`None` for responses, GET, DELETE …).
    pub(crate) fn rpc_method(&self) -> Option<String> {
        self.json().and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
    }

    /// The JSON-RPC id of the body (`null` when absent).
    pub(crate) fn rpc_id(&self) -> Value {
        self.json().and_then(|v| v.get("id").cloned()).unwrap_or(Value::Null)
    }

    /// The JSON-RPC params of the body (`{}` when absent).
    pub(crate) fn params(&self) -> Value {
        self.json().and_then(|v| v.get("params").cloned()).unwrap_or_else(|| json!({}))
    }
}

/// How the mock answers one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A complete response with `Content-Length` and `Connection: close`.
    Http { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// These bytes verbatim, then the connection is closed.
    Raw(Vec<u8>),
    /// Nothing, ever: the connection stays open until the server stops.
    Hang,
    /// `200 text/event-stream` (chunked), these events (each a complete `field: value` block
    /// without its blank line), then the connection is dropped without the final chunk.
    SseThenDie { headers: Vec<(String, String)>, events: Vec<String> },
    /// Another reply after a delay.
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    /// A JSON response.
    pub(crate) fn json(status: u16, value: &Value) -> Reply {
        Reply::Http {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    /// `200` with a JSON-RPC result for the request `id`.
    pub(crate) fn result(id: &Value, result: Value) -> Reply {
        Reply::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// A JSON-RPC error for the request `id`, with this HTTP status.
    pub(crate) fn error(status: u16, id: &Value, code: i64, message: &str) -> Reply {
        Reply::json(status, &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    }

    /// `202 Accepted` without a body (the answer to a notification).
    pub(crate) fn accepted() -> Reply {
        Reply::Http { status: 202, headers: Vec::new(), body: Vec::new() }
    }

    /// A response with a content type and a text body.
    pub(crate) fn text(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Http {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.as_bytes().to_vec(),
        }
    }

    /// This reply with an extra response header (only for [`Reply::Http`]).
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Http { headers, .. } | Reply::SseThenDie { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

type HandlerFn = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// A running mock server; stops when dropped.
pub(crate) struct MockServer {
    /// The port it listens on (127.0.0.1).
    pub(crate) port: u16,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Recorded>>>,
    accept: Option<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer").field("port", &self.port).finish_non_exhaustive()
    }
}

impl MockServer {
    /// Listens on 127.0.0.1:0 and answers every request with `handler`.
    pub(crate) fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> MockServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let port = listener.local_addr().expect("local addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<HandlerFn> = Arc::new(handler);
        let counter = Arc::new(AtomicUsize::new(0));
        let accept = {
            let (stop, log, connections) = (stop.clone(), log.clone(), connections.clone());
            std::thread::spawn(move || {
                let born = Instant::now();
                while !stop.load(Ordering::SeqCst) && born.elapsed() < MAX_LIFETIME {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (stop, log, handler, counter) =
                                (stop.clone(), log.clone(), handler.clone(), counter.clone());
                            let thread = std::thread::spawn(move || {
                                serve_connection(stream, &stop, born, &log, &*handler, &counter);
                            });
                            connections.lock().unwrap_or_else(|p| p.into_inner()).push(thread);
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
                        Err(_) => std::thread::sleep(POLL),
                    }
                }
            })
        };
        MockServer { port, stop, log, accept: Some(accept), connections }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        let mut requests = self.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        requests.sort_by_key(|r| r.index);
        requests
    }

    /// The JSON-RPC methods of the POSTs received so far, in order (`-` for a body without one).
    pub(crate) fn rpc_methods(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.rpc_method().unwrap_or_else(|| "-".into()))
            .collect()
    }

    /// Waits (at most `timeout`, without blocking the actix runtime) until `done(requests)`
    /// holds; whether it did.
    pub(crate) async fn wait_for(&self, timeout: Duration, done: impl Fn(&[Recorded]) -> bool) -> bool {
        poll_until(timeout, async || done(&self.requests())).await.is_ok()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let threads = std::mem::take(&mut *self.connections.lock().unwrap_or_else(|p| p.into_inner()));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

fn alive(stop: &AtomicBool, born: Instant) -> bool {
    !stop.load(Ordering::SeqCst) && born.elapsed() < MAX_LIFETIME
}

fn serve_connection(
    mut stream: TcpStream,
    stop: &AtomicBool,
    born: Instant,
    log: &Mutex<Vec<Recorded>>,
    handler: &HandlerFn,
    counter: &AtomicUsize,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(POLL * 10));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let Some(mut request) = read_request(&mut stream, stop, born) else { return };
    request.index = counter.fetch_add(1, Ordering::SeqCst);
    log.lock().unwrap_or_else(|p| p.into_inner()).push(request.clone());
    let reply = handler(&request);
    send_reply(&mut stream, reply, stop, born);
}

/// Reads one request (head, then a `Content-Length` or chunked body; its `index` is left 0);
/// `None` when the client went away or the server stopped first.
fn read_request(stream: &mut TcpStream, stop: &AtomicBool, born: Instant) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(i) = find(&buffer, b"\r\n\r\n") {
            break i;
        }
        if buffer.len() > MAX_REQUEST_BYTES || !read_some(stream, &mut buffer, stop, born)? {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut rest = buffer[head_end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let body = if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        if length > MAX_REQUEST_BYTES {
            return None;
        }
        while rest.len() < length {
            if !read_some(stream, &mut rest, stop, born)? {
                return None;
            }
        }
        rest.truncate(length);
        rest
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&rest, b"\r\n") {
                    break i;
                }
                if !read_some(stream, &mut rest, stop, born)? {
                    return None;
                }
            };
            let size_text = String::from_utf8_lossy(&rest[..line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            rest.drain(..line_end + 2);
            while rest.len() < size + 2 {
                if !read_some(stream, &mut rest, stop, born)? {
                    return None;
                }
            }
            if size == 0 {
                break body;
            }
            body.extend_from_slice(&rest[..size]);
            rest.drain(..size + 2);
            if body.len() > MAX_REQUEST_BYTES {
                return None;
            }
        }
    } else {
        Vec::new()
    };
    Some(Recorded { index: 0, method, path, headers, body })
}

/// Reads what is available into `buffer`: `Some(true)` when bytes came, `Some(false)` at EOF,
/// `None` on an error or when the server stopped.
fn read_some(stream: &mut TcpStream, buffer: &mut Vec<u8>, stop: &AtomicBool, born: Instant) -> Option<bool> {
    let mut chunk = [0u8; 8192];
    loop {
        if !alive(stop, born) {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Some(false),
            Ok(n) => {
                buffer.extend_from_slice(&chunk[..n]);
                return Some(true);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return None,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

fn send_reply(stream: &mut TcpStream, reply: Reply, stop: &AtomicBool, born: Instant) {
    match reply {
        Reply::Http { status, headers, body } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\nConnection: close\r\n", reason(status));
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            let _ = stream.flush();
            // Let the client read everything before the close.
            let _ = stream.shutdown(std::net::Shutdown::Write);
            drain_until_closed(stream, stop, born);
        }
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes);
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        Reply::Hang => {
            while alive(stop, born) {
                std::thread::sleep(POLL);
            }
        }
        Reply::SseThenDie { headers, events } => {
            let mut head = String::from(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n",
            );
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            for event in events {
                let data = format!("{event}\n\n");
                let _ = stream.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
                let _ = stream.flush();
                std::thread::sleep(Duration::from_millis(20));
            }
            // Die mid-stream: no terminating chunk, the connection just goes away.
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        Reply::Delayed(delay, reply) => {
            let until = Instant::now() + delay;
            while Instant::now() < until {
                if !alive(stop, born) {
                    return;
                }
                std::thread::sleep(POLL);
            }
            send_reply(stream, *reply, stop, born);
        }
    }
}

/// After a complete response: read (and ignore) until the client closes, the server stops, or
/// a second passes, so the response is not cut off by a reset.
fn drain_until_closed(stream: &mut TcpStream, stop: &AtomicBool, born: Instant) {
    let until = Instant::now() + Duration::from_secs(1);
    let mut sink = [0u8; 1024];
    while Instant::now() < until && alive(stop, born) {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
    }
}
