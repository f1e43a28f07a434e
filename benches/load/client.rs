//! The load generator: a minimal HTTP/1.1 keep-alive client (pre-built request bytes, one read
//! buffer per connection) that drives one mode's connections on its own thread(s) and checks
//! every answer.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cpu::current_tid;
use crate::modes::{Mode, INITIALIZED_BODY, INITIALIZE_BODY, LEGACY_BODY, LEGACY_VERSION};
use crate::support::http1::http_request;

/// What every good answer contains.
const NEEDLE: &[u8] = br#""text":"hello""#;
/// A request with no complete answer within this is an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest response the client accepts.
const MAX_RESPONSE: usize = 1 << 20;

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(160)]).into_owned();
    if bytes.len() > 160 {
        text + "…"
    } else {
        text
    }
}

/// One parsed answer.
struct Reply {
    status: u16,
    /// The body contains [`NEEDLE`].
    body_ok: bool,
    /// The `mcp-session-id` header, when asked for.
    session: Option<String>,
    /// The server said `Connection: close`.
    close: bool,
    /// The start of the body, for error reports (only when the answer is not good).
    excerpt: Option<String>,
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    filled: usize,
}

impl Conn {
    async fn connect(port: u16) -> Result<Conn, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| format!("connect: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("set_nodelay: {e}"))?;
        Ok(Conn { stream, buf: vec![0; 8192], filled: 0 })
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.filled == self.buf.len() {
            if self.buf.len() >= MAX_RESPONSE {
                return Err(format!("response larger than {MAX_RESPONSE} bytes"));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match self.stream.read(&mut self.buf[self.filled..]).await {
            Ok(0) => Err("connection closed by the server".into()),
            Ok(n) => {
                self.filled += n;
                Ok(())
            }
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Sends `request` and reads one complete answer (which must have a `Content-Length`).
    async fn exchange(&mut self, request: &[u8], want_session: bool) -> Result<Reply, String> {
        self.stream.write_all(request).await.map_err(|e| format!("write: {e}"))?;
        let mut scanned = 0;
        let head_len = loop {
            if let Some(at) = find(&self.buf[scanned..self.filled], b"\r\n\r\n") {
                break scanned + at + 4;
            }
            scanned = self.filled.saturating_sub(3);
            self.fill().await?;
        };
        let head = &self.buf[..head_len];
        let status = head
            .get(9..12)
            .filter(|_| head.starts_with(b"HTTP/1."))
            .and_then(|code| std::str::from_utf8(code).ok())
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| format!("malformed status line: {}", excerpt(head)))?;
        let mut content_length = None;
        let mut session = None;
        let mut close = false;
        for line in head[..head_len - 4].split(|&b| b == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"content-length") {
                let length = std::str::from_utf8(value).ok().and_then(|v| v.parse::<usize>().ok());
                content_length = Some(length.ok_or("malformed content-length")?);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                return Err(format!("status {status} with transfer-encoding {}", excerpt(value)));
            } else if name.eq_ignore_ascii_case(b"connection") {
                close = value.eq_ignore_ascii_case(b"close");
            } else if want_session && name.eq_ignore_ascii_case(b"mcp-session-id") {
                session = Some(String::from_utf8_lossy(value).into_owned());
            }
        }
        let length = content_length.ok_or_else(|| format!("status {status} without content-length"))?;
        let total = head_len + length;
        if total > MAX_RESPONSE {
            return Err(format!("response of {total} bytes"));
        }
        while self.filled < total {
            self.fill().await?;
        }
        let body = &self.buf[head_len..total];
        let body_ok = find(body, NEEDLE).is_some();
        let excerpt = (status != 200 || !body_ok).then(|| excerpt(body));
        self.buf.copy_within(total..self.filled, 0);
        self.filled -= total;
        Ok(Reply { status, body_ok, session, close, excerpt })
    }

    async fn exchange_timed(&mut self, request: &[u8], want_session: bool) -> Result<Reply, String> {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.exchange(request, want_session)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())),
        }
    }
}

/// What every connection of one mode run shares.
pub(crate) struct Plan {
    pub(crate) mode: Mode,
    pub(crate) port: u16,
    /// The tools/call request (bare, stateless, legacy).
    pub(crate) request: Vec<u8>,
    pub(crate) measure_start: Instant,
    pub(crate) end: Instant,
    /// Good answers inside the window so far (for the progress bar).
    pub(crate) live: AtomicU64,
}

/// What one connection saw.
#[derive(Default)]
pub(crate) struct ConnResult {
    pub(crate) latencies_us: Vec<u32>,
    pub(crate) ok: u64,
    pub(crate) errors: u64,
    /// Errors inside the measured window (they count as requests for CPU per request).
    pub(crate) window_errors: u64,
    pub(crate) samples: Vec<String>,
}

impl ConnResult {
    fn error_in(&mut self, plan: &Plan, message: String) {
        let now = Instant::now();
        if now >= plan.measure_start && now <= plan.end {
            self.window_errors += 1;
        }
        self.error(message);
    }

    fn error(&mut self, message: String) {
        self.errors += 1;
        if self.samples.len() < 3 && !self.samples.contains(&message) {
            self.samples.push(message);
        }
    }
}

/// `initialize` + `notifications/initialized`; returns the session's tools/call request and its id.
async fn open_session(conn: &mut Conn, port: u16) -> Result<(Vec<u8>, String), String> {
    let init = http_request(port, "POST", &[("MCP-Protocol-Version", LEGACY_VERSION)], INITIALIZE_BODY);
    let reply = conn.exchange_timed(&init, true).await.map_err(|e| format!("initialize: {e}"))?;
    if reply.status != 200 {
        return Err(format!("initialize: status {}: {}", reply.status, reply.excerpt.unwrap_or_default()));
    }
    let id = reply.session.ok_or("initialize: no mcp-session-id header")?;
    let session_headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", LEGACY_VERSION)];
    let note = http_request(port, "POST", &session_headers, INITIALIZED_BODY);
    let reply = conn.exchange_timed(&note, false).await.map_err(|e| format!("notifications/initialized: {e}"))?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("notifications/initialized: status {}", reply.status));
    }
    Ok((http_request(port, "POST", &session_headers, LEGACY_BODY), id))
}

/// How a connection's request loop ended.
enum Next {
    Done,
    Reconnect,
}

async fn drive(plan: Arc<Plan>) -> ConnResult {
    let mut result = ConnResult { latencies_us: Vec::with_capacity(1 << 14), ..ConnResult::default() };
    while Instant::now() < plan.end {
        let mut conn = match tokio::time::timeout(REQUEST_TIMEOUT, Conn::connect(plan.port)).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                result.error_in(&plan, e);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(_) => {
                result.error_in(&plan, "connect: timed out".into());
                continue;
            }
        };
        let (request, session) = if plan.mode == Mode::Session {
            match open_session(&mut conn, plan.port).await {
                Ok((request, id)) => (Cow::Owned(request), Some(id)),
                Err(e) => {
                    result.error_in(&plan, e);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            }
        } else {
            (Cow::Borrowed(plan.request.as_slice()), None)
        };
        let next = loop {
            let started = Instant::now();
            if started >= plan.end {
                break Next::Done;
            }
            let outcome = conn.exchange_timed(&request, false).await;
            let finished = Instant::now();
            match outcome {
                Err(e) => {
                    result.error_in(&plan, e);
                    break Next::Reconnect;
                }
                Ok(reply) => {
                    if reply.status != 200 {
                        let body = reply.excerpt.as_deref().unwrap_or_default();
                        result.error_in(&plan, format!("status {}: {body}", reply.status));
                    } else if !reply.body_ok {
                        let body = reply.excerpt.as_deref().unwrap_or_default();
                        result.error_in(&plan, format!("body lacks \"text\":\"hello\": {body}"));
                    } else if finished >= plan.measure_start && finished <= plan.end {
                        let micros = finished.duration_since(started).as_micros();
                        result.latencies_us.push(u32::try_from(micros).unwrap_or(u32::MAX));
                        result.ok += 1;
                        plan.live.fetch_add(1, Ordering::Relaxed);
                    }
                    if reply.close {
                        break Next::Reconnect;
                    }
                }
            }
        };
        if let Next::Done = next {
            if let Some(id) = session {
                // Best effort, after the window: end the session so that sessions do not pile up.
                let delete = http_request(plan.port, "DELETE", &[("Mcp-Session-Id", &id)], "");
                let _ = tokio::time::timeout(Duration::from_secs(1), conn.exchange(&delete, false)).await;
            }
            break;
        }
    }
    result
}

pub(crate) fn client_thread(
    plan: Arc<Plan>,
    connections: usize,
    tids: mpsc::Sender<Option<u32>>,
    gate: Arc<RwLock<()>>,
) -> Vec<ConnResult> {
    let _ = tids.send(current_tid());
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let mut failed = ConnResult::default();
            failed.error(format!("cannot build the client runtime: {e}"));
            return vec![failed];
        }
    };
    let results = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..connections {
            set.spawn(drive(plan.clone()));
        }
        let mut results = Vec::with_capacity(connections);
        while let Some(joined) = set.join_next().await {
            results.push(joined.unwrap_or_else(|e| {
                let mut failed = ConnResult::default();
                failed.error(format!("connection task failed: {e}"));
                failed
            }));
        }
        results
    });
    // Stay alive (so that the main thread can read this thread's CPU time) until released.
    drop(gate.read());
    results
}
