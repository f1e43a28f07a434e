//! Load bench: `cargo bench --bench load [-- --connections N --seconds S --warmup S --rounds N --workers N]`.
//!
//! Starts, in this process and on 127.0.0.1 (port 0), a bare actix-web handler that parses the JSON
//! body and writes it back (the ceiling on this machine) and two mcpd listeners: `http` (no
//! sessions) and `streamable-http` (sessions), all with the same worker count. Then it drives
//! `tools/call echo {"text":"hello"}` over N keep-alive connections for T seconds in each mode:
//!
//! | mode | listener | wire |
//! |---|---|---|
//! | bare | actix-web echo | the stateless request, echoed back |
//! | stateless | mcpd `http` | 2026-07-28, routing headers, `_meta` |
//! | legacy | mcpd `http` | 2025-11-25 without a session |
//! | session | mcpd `streamable-http` | `initialize` once per connection, then `Mcp-Session-Id` |
//!
//! The load generator is a small hand-written HTTP/1.1 client on its own thread(s) (pre-built
//! request bytes, one read buffer per connection), so that it costs little CPU, like wrk. Every
//! response is checked (status 200 and the body contains `"text":"hello"`); errors are counted and
//! make the process exit non-zero. Missing the throughput targets does not.
//!
//! Server CPU per request is the process's CPU time (utime + stime of `/proc/self/stat`) minus that
//! of the load-generator threads and of the main thread (`/proc/self/task/<tid>/stat`), over the
//! measured window, divided by the requests answered in it.
//!
//! Output: a table on standard output, `target/bench/load.json` and `target/bench/load.svg`
//! (`MCPD_BENCH_OUT` or `CARGO_TARGET_DIR` move them).

#![allow(clippy::print_stdout, reason = "a bench reports on standard output")]

mod bare;
#[path = "support/cli.rs"]
mod cli;
#[path = "support/http1.rs"]
mod http1;
#[path = "support/out.rs"]
mod out;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpServer};
use bare::bare_echo;
use http1::http_request;
use indicatif::{ProgressBar, ProgressStyle};
use mcpd_actors::{ListenerConfig, Mcpd, TransportMode};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What every good answer contains.
const NEEDLE: &[u8] = br#""text":"hello""#;
/// A request with no complete answer within this is an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest response the client accepts.
const MAX_RESPONSE: usize = 1 << 20;
/// Kernel clock ticks per second for `/proc/*/stat` (USER_HZ, 100 on Linux).
const CLK_TCK: f64 = 100.0;

const MODERN_VERSION: &str = "2026-07-28";
const LEGACY_VERSION: &str = "2025-11-25";
const STATELESS_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const LEGACY_BODY: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
const INITIALIZE_BODY: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED_BODY: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

// ---------------------------------------------------------------------------------------------
// Settings

#[derive(Debug, Clone)]
struct Settings {
    connections: usize,
    seconds: f64,
    warmup: f64,
    rounds: usize,
    workers: usize,
    client_threads: usize,
}

const USAGE: &str = "usage: cargo bench --bench load [-- OPTIONS]

options (environment variable in brackets, then default):
  --connections N     concurrent keep-alive connections [MCPD_BENCH_CONNECTIONS] 32
  --seconds S         measured seconds per mode and round [MCPD_BENCH_SECONDS] 5
  --warmup S          unmeasured seconds before each measurement [MCPD_BENCH_WARMUP] 1
  --rounds N          rounds; modes interleave per round, medians are reported [MCPD_BENCH_ROUNDS] 1
  --workers N         actix workers of each server [MCPD_BENCH_WORKERS] 1
  --client-threads N  load-generator threads [MCPD_BENCH_CLIENT_THREADS] 1";

impl Settings {
    fn parse() -> Result<Settings, String> {
        let mut settings = Settings {
            connections: cli::env_number("MCPD_BENCH_CONNECTIONS", 32)?,
            seconds: cli::env_number("MCPD_BENCH_SECONDS", 5.0)?,
            warmup: cli::env_number("MCPD_BENCH_WARMUP", 1.0)?,
            rounds: cli::env_number("MCPD_BENCH_ROUNDS", 1)?,
            workers: cli::env_number("MCPD_BENCH_WORKERS", 1)?,
            client_threads: cli::env_number("MCPD_BENCH_CLIENT_THREADS", 1)?,
        };
        cli::parse_flags("load", USAGE, |flag, value| {
            match flag {
                "--connections" => settings.connections = cli::number(flag, &value()?)?,
                "--seconds" => settings.seconds = cli::number(flag, &value()?)?,
                "--warmup" => settings.warmup = cli::number(flag, &value()?)?,
                "--rounds" => settings.rounds = cli::number(flag, &value()?)?,
                "--workers" => settings.workers = cli::number(flag, &value()?)?,
                "--client-threads" => settings.client_threads = cli::number(flag, &value()?)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if settings.connections == 0 || settings.rounds == 0 || settings.workers == 0 || settings.client_threads == 0 {
            return Err("connections, rounds, workers and client threads must be at least 1".into());
        }
        if !(settings.seconds > 0.0 && settings.seconds.is_finite() && settings.warmup >= 0.0) {
            return Err("seconds must be > 0 and warmup >= 0".into());
        }
        settings.client_threads = settings.client_threads.min(settings.connections);
        Ok(settings)
    }
}

// ---------------------------------------------------------------------------------------------
// Modes

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bare,
    Stateless,
    Legacy,
    Session,
}

const MODES: [Mode; 4] = [Mode::Bare, Mode::Stateless, Mode::Legacy, Mode::Session];

impl Mode {
    fn key(self) -> &'static str {
        match self {
            Mode::Bare => "bare",
            Mode::Stateless => "stateless",
            Mode::Legacy => "legacy",
            Mode::Session => "session",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Bare => "bare actix-web JSON echo",
            Mode::Stateless => "stateless 2026-07-28",
            Mode::Legacy => "legacy session-less",
            Mode::Session => "streamable session",
        }
    }

    /// The least acceptable fraction of the bare handler's throughput, if there is a target.
    fn target(self) -> Option<f64> {
        match self {
            Mode::Stateless => Some(0.85),
            Mode::Session => Some(0.6),
            Mode::Bare | Mode::Legacy => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Servers

#[derive(Debug, Clone, Copy)]
struct Ports {
    bare: u16,
    http: u16,
    streamable: u16,
}

impl Ports {
    fn of(self, mode: Mode) -> u16 {
        match mode {
            Mode::Bare => self.bare,
            Mode::Stateless | Mode::Legacy => self.http,
            Mode::Session => self.streamable,
        }
    }
}

/// The server thread: an actix system running the three listeners until told to stop.
struct Servers {
    ports: Ports,
    /// Thread id -> which server it belongs to.
    labels: Vec<(u32, String)>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<Result<(), String>>,
}

struct Running {
    bare: actix_web::dev::ServerHandle,
    http: Mcpd,
    streamable: Mcpd,
}

fn start_bare(workers: usize) -> Result<(actix_web::dev::ServerHandle, u16), String> {
    let server = HttpServer::new(|| App::new().route("/mcp", web::post().to(bare_echo)))
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(1)
        .bind(("127.0.0.1", 0))
        .map_err(|e| format!("the bare handler cannot bind: {e}"))?;
    let port = server.addrs().first().map(|a| a.port()).ok_or("the bare handler has no address")?;
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok((handle, port))
}

async fn start_mcpd(mode: TransportMode, workers: usize) -> Result<(Mcpd, u16), String> {
    let mut catalog = mcpd::Catalog::new();
    mcpd::builtin::register(&mut catalog);
    let sessions = mode == TransportMode::StreamableHttp;
    let server = Arc::new(mcpd::McpServer::new(mcpd::ServerOptions { sessions, ..Default::default() }, catalog));
    let config = ListenerConfig { port: 0, mode, workers, ..Default::default() };
    let runtime = Mcpd::new(server, config.clone(), Vec::new());
    let status = runtime.start(config).await.map_err(|e| format!("mcpd ({}) did not start: {e}", mode.label()))?;
    Ok((runtime, status.port))
}

/// Names the threads that appeared since `before` (a server spawns its acceptor and workers when
/// its future first runs, so this waits up to 2 s for `workers` + 1 of them).
async fn label_new_threads(before: &[u32], owner: &str, workers: usize, labels: &mut Vec<(u32, String)>) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let fresh = loop {
        let fresh: Vec<_> = thread_ticks().into_iter().filter(|(tid, _, _)| !before.contains(tid)).collect();
        if fresh.len() > workers || Instant::now() >= deadline {
            break fresh;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for (tid, name, _) in fresh {
        let kind = if name.starts_with("actix-server") {
            "acceptor"
        } else if name.starts_with("actix-rt") {
            "worker"
        } else {
            name.as_str()
        };
        labels.push((tid, format!("{owner} {kind}")));
    }
}

/// The three listeners, their ports, and names for their threads.
async fn start_all(workers: usize) -> Result<(Running, Ports, Vec<(u32, String)>), String> {
    let mut labels: Vec<(u32, String)> =
        current_tid().map(|tid| (tid, "actix system thread".into())).into_iter().collect();
    let known = || thread_ticks().into_iter().map(|(tid, _, _)| tid).collect::<Vec<_>>();
    let before = known();
    let (bare, bare_port) = start_bare(workers)?;
    label_new_threads(&before, "bare", workers, &mut labels).await;
    let before = known();
    let (http, http_port) = start_mcpd(TransportMode::Http, workers).await?;
    label_new_threads(&before, "mcpd http", workers, &mut labels).await;
    let before = known();
    let (streamable, streamable_port) = start_mcpd(TransportMode::StreamableHttp, workers).await?;
    label_new_threads(&before, "mcpd streamable", workers, &mut labels).await;
    let ports = Ports { bare: bare_port, http: http_port, streamable: streamable_port };
    Ok((Running { bare, http, streamable }, ports, labels))
}

impl Running {
    async fn shutdown(self) -> Result<(), String> {
        let all = async {
            self.bare.stop(true).await;
            let http = self.http.close().await;
            let streamable = self.streamable.close().await;
            http.and(streamable).map_err(|e| format!("mcpd close failed: {e}"))
        };
        tokio::time::timeout(Duration::from_secs(10), all)
            .await
            .map_err(|_| "the servers did not shut down within 10 s".to_owned())?
    }
}

impl Servers {
    fn start(workers: usize) -> Result<Servers, String> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(Ports, Vec<(u32, String)>), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        thread::Builder::new()
            .name("bench-servers".into())
            .spawn(move || {
                let outcome = actix_rt::System::new().block_on(async move {
                    let (running, ports, labels) = match start_all(workers).await {
                        Ok(started) => started,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(Ok((ports, labels)));
                    let _ = stop_rx.await;
                    running.shutdown().await
                });
                let _ = done_tx.send(outcome);
            })
            .map_err(|e| format!("cannot spawn the server thread: {e}"))?;
        let ports =
            ready_rx.recv_timeout(Duration::from_secs(30)).map_err(|_| "the servers did not start within 30 s")??;
        let (ports, labels) = ports;
        Ok(Servers { ports, labels, stop: Some(stop_tx), done })
    }

    fn stop(mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.done.recv_timeout(Duration::from_secs(15)) {
            Ok(outcome) => outcome,
            Err(_) => Err("the server thread did not finish within 15 s".into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Load generator: a minimal HTTP/1.1 keep-alive client

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
struct Plan {
    mode: Mode,
    port: u16,
    /// The tools/call request (bare, stateless, legacy).
    request: Vec<u8>,
    measure_start: Instant,
    end: Instant,
    /// Good answers inside the window so far (for the progress bar).
    live: AtomicU64,
}

/// What one connection saw.
#[derive(Default)]
struct ConnResult {
    latencies_us: Vec<u32>,
    ok: u64,
    errors: u64,
    /// Errors inside the measured window (they count as requests for CPU per request).
    window_errors: u64,
    samples: Vec<String>,
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

/// The calling thread's kernel id.
fn current_tid() -> Option<u32> {
    std::fs::read_link("/proc/thread-self").ok()?.file_name()?.to_str()?.parse().ok()
}

/// utime + stime, in clock ticks, of a `/proc/.../stat` file.
fn cpu_ticks(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // After the command: field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[derive(Debug, Clone, Copy)]
struct CpuSnapshot {
    process: u64,
    clients: u64,
    main: u64,
}

fn snapshot(client_tids: &[u32], main_tid: u32) -> Option<CpuSnapshot> {
    let mut clients = 0;
    for tid in client_tids {
        clients += cpu_ticks(&format!("/proc/self/task/{tid}/stat"))?;
    }
    Some(CpuSnapshot {
        process: cpu_ticks("/proc/self/stat")?,
        clients,
        main: cpu_ticks(&format!("/proc/self/task/{main_tid}/stat"))?,
    })
}

/// Every thread of the process: (tid, name, utime + stime ticks).
fn thread_ticks() -> Vec<(u32, String, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        let path = format!("/proc/self/task/{tid}/stat");
        let Ok(stat) = std::fs::read_to_string(&path) else { continue };
        let name = match (stat.find('('), stat.rfind(')')) {
            (Some(open), Some(close)) if open < close => stat[open + 1..close].to_owned(),
            _ => String::new(),
        };
        if let Some(ticks) = cpu_ticks(&path) {
            threads.push((tid, name, ticks));
        }
    }
    threads
}

/// CPU µs per request of each server thread name that ran during the window, busiest first.
fn server_threads(
    before: &[(u32, String, u64)],
    after: &[(u32, String, u64)],
    exclude: &[u32],
    labels: &[(u32, String)],
    requests: u64,
) -> Vec<(String, f64)> {
    if requests == 0 {
        return Vec::new();
    }
    let mut by_name: Vec<(String, u64)> = Vec::new();
    for (tid, name, ticks) in after.iter().filter(|(tid, _, _)| !exclude.contains(tid)) {
        let start = before.iter().find(|(t, _, _)| t == tid).map_or(0, |(_, _, ticks)| *ticks);
        let delta = ticks.saturating_sub(start);
        if delta == 0 {
            continue;
        }
        let name = labels.iter().find(|(t, _)| t == tid).map_or(name, |(_, label)| label);
        match by_name.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 += delta,
            None => by_name.push((name.clone(), delta)),
        }
    }
    by_name.sort_by_key(|(_, ticks)| std::cmp::Reverse(*ticks));
    by_name.into_iter().map(|(name, ticks)| (name, ticks as f64 * 1e6 / CLK_TCK / requests.max(1) as f64)).collect()
}

fn client_thread(
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

// ---------------------------------------------------------------------------------------------
// One measured run of one mode

/// The figures of one mode in one round.
#[derive(Debug, Clone)]
struct Sample {
    requests: u64,
    errors: u64,
    error_samples: Vec<String>,
    req_per_s: f64,
    p50_us: u32,
    p99_us: u32,
    /// CPU µs per request: server threads, load generator, whole process (None: /proc unreadable).
    server_cpu_us: Option<f64>,
    client_cpu_us: Option<f64>,
    process_cpu_us: Option<f64>,
    /// Server CPU µs per request by thread name.
    threads: Vec<(String, f64)>,
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Sleeps until `until`, moving the bar along.
fn wait_until(until: Instant, bar: &ProgressBar, bar_base: u64, phase_start: Instant, message: &dyn Fn() -> String) {
    loop {
        let now = Instant::now();
        bar.set_position(bar_base + now.saturating_duration_since(phase_start).as_millis() as u64);
        bar.set_message(message());
        if now >= until {
            return;
        }
        thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

fn run_mode(
    settings: &Settings,
    mode: Mode,
    servers: &Servers,
    main_tid: u32,
    bar: &ProgressBar,
    bar_base: u64,
    title: &str,
) -> Result<Sample, String> {
    let port = servers.ports.of(mode);
    let start = Instant::now();
    let measure_start = start + Duration::from_secs_f64(settings.warmup);
    let end = measure_start + Duration::from_secs_f64(settings.seconds);
    let request = match mode {
        Mode::Bare | Mode::Stateless => http_request(
            port,
            "POST",
            &[("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
            STATELESS_BODY,
        ),
        Mode::Legacy => http_request(port, "POST", &[("MCP-Protocol-Version", LEGACY_VERSION)], LEGACY_BODY),
        Mode::Session => Vec::new(),
    };
    let plan = Arc::new(Plan { mode, port, request, measure_start, end, live: AtomicU64::new(0) });
    let gate = Arc::new(RwLock::new(()));
    let release = gate.write().map_err(|_| "poisoned gate")?;
    let (tid_tx, tid_rx) = mpsc::channel();
    let mut handles = Vec::new();
    for index in 0..settings.client_threads {
        let share = settings.connections / settings.client_threads
            + usize::from(index < settings.connections % settings.client_threads);
        let (plan, tids, gate) = (plan.clone(), tid_tx.clone(), gate.clone());
        let handle = thread::Builder::new()
            .name(format!("bench-client-{index}"))
            .spawn(move || client_thread(plan, share, tids, gate))
            .map_err(|e| format!("cannot spawn a client thread: {e}"))?;
        handles.push(handle);
    }
    drop(tid_tx);
    let mut client_tids = Vec::new();
    for _ in 0..settings.client_threads {
        if let Ok(Some(tid)) = tid_rx.recv_timeout(Duration::from_secs(5)) {
            client_tids.push(tid);
        }
    }
    let tids_known = client_tids.len() == settings.client_threads;

    wait_until(measure_start, bar, bar_base, start, &|| format!("{title}: warm-up"));
    let threads_before = thread_ticks();
    let before = snapshot(&client_tids, main_tid).filter(|_| tids_known);
    wait_until(end, bar, bar_base, start, &|| {
        let done = plan.live.load(Ordering::Relaxed);
        let elapsed = measure_start.elapsed().as_secs_f64().max(1e-3);
        format!("{title}: {done} req, {:.0} req/s", done as f64 / elapsed)
    });
    let after = snapshot(&client_tids, main_tid).filter(|_| tids_known);
    let threads_after = thread_ticks();
    drop(release);

    let mut latencies = Vec::new();
    let (mut requests, mut errors, mut answered, mut error_samples) = (0, 0, 0, Vec::<String>::new());
    for handle in handles {
        let results = handle.join().map_err(|_| "a client thread panicked")?;
        for result in results {
            requests += result.ok;
            errors += result.errors;
            answered += result.ok + result.window_errors;
            for sample in result.samples {
                if error_samples.len() < 5 && !error_samples.contains(&sample) {
                    error_samples.push(sample);
                }
            }
            latencies.extend_from_slice(&result.latencies_us);
        }
    }
    latencies.sort_unstable();
    let mut exclude = client_tids.clone();
    exclude.push(main_tid);
    let threads = server_threads(&threads_before, &threads_after, &exclude, &servers.labels, answered);
    let per_request = |ticks: i64| (answered > 0).then(|| ticks.max(0) as f64 * 1e6 / CLK_TCK / answered as f64);
    let (server_cpu_us, client_cpu_us, process_cpu_us) = match (before, after) {
        (Some(b), Some(a)) => {
            let process = a.process as i64 - b.process as i64;
            let clients = a.clients as i64 - b.clients as i64;
            let main = a.main as i64 - b.main as i64;
            (per_request(process - clients - main), per_request(clients), per_request(process))
        }
        _ => (None, None, None),
    };
    Ok(Sample {
        requests,
        errors,
        error_samples,
        req_per_s: requests as f64 / settings.seconds,
        p50_us: percentile(&latencies, 50.0),
        p99_us: percentile(&latencies, 99.0),
        server_cpu_us,
        client_cpu_us,
        process_cpu_us,
        threads,
    })
}

// ---------------------------------------------------------------------------------------------
// Summary, table, JSON, SVG

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

/// One mode's figures over all rounds (medians).
#[derive(Debug)]
struct Summary {
    mode: Mode,
    req_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    ratio: Option<f64>,
    server_cpu_us: Option<f64>,
    client_cpu_us: Option<f64>,
    process_cpu_us: Option<f64>,
    requests: u64,
    errors: u64,
    error_samples: Vec<String>,
    rounds: Vec<Sample>,
}

fn summarize(mode: Mode, rounds: Vec<Sample>) -> Summary {
    let pick = |f: &dyn Fn(&Sample) -> Option<f64>| median(rounds.iter().filter_map(f).collect());
    let mut error_samples = Vec::new();
    for sample in rounds.iter().flat_map(|s| &s.error_samples) {
        if error_samples.len() < 5 && !error_samples.contains(sample) {
            error_samples.push(sample.clone());
        }
    }
    Summary {
        mode,
        req_per_s: pick(&|s| Some(s.req_per_s)).unwrap_or(0.0),
        p50_us: pick(&|s| Some(f64::from(s.p50_us))).unwrap_or(0.0),
        p99_us: pick(&|s| Some(f64::from(s.p99_us))).unwrap_or(0.0),
        ratio: None,
        server_cpu_us: pick(&|s| s.server_cpu_us),
        client_cpu_us: pick(&|s| s.client_cpu_us),
        process_cpu_us: pick(&|s| s.process_cpu_us),
        requests: rounds.iter().map(|s| s.requests).sum(),
        errors: rounds.iter().map(|s| s.errors).sum(),
        error_samples,
        rounds,
    }
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.decimals$}"))
}

fn print_table(settings: &Settings, summaries: &[Summary]) {
    println!();
    println!(
        "mcpd load bench: tools/call echo, {} connections, {} worker(s) per server, {} client thread(s), \
         {} s measured after {} s warm-up per mode, {} round(s){}",
        settings.connections,
        settings.workers,
        settings.client_threads,
        settings.seconds,
        settings.warmup,
        settings.rounds,
        if settings.rounds > 1 { " (medians)" } else { "" }
    );
    println!();
    println!(
        "{:<26} {:>10} {:>8} {:>8} {:>7} {:>13} {:>13} {:>8}",
        "mode", "req/s", "p50 µs", "p99 µs", "× bare", "srv CPU µs/r", "cli CPU µs/r", "errors"
    );
    println!("{}", "-".repeat(100));
    for s in summaries {
        println!(
            "{:<26} {:>10.0} {:>8.0} {:>8.0} {:>7} {:>13} {:>13} {:>8}",
            s.mode.label(),
            s.req_per_s,
            s.p50_us,
            s.p99_us,
            opt(s.ratio, 2),
            opt(s.server_cpu_us, 1),
            opt(s.client_cpu_us, 1),
            if s.errors == 0 { "0".to_owned() } else { format!("{} !", s.errors) },
        );
    }
    println!();
    println!(
        "srv CPU = process CPU (utime+stime) minus the load-generator and main threads, per request; \
         it covers all server threads (mcpd's workers and its actix system thread; the idle listeners \
         of the other modes count too, negligibly). cli CPU = the load generator's threads. \
         /proc tick = 10 ms."
    );
    println!("server CPU µs/request by thread{}:", if settings.rounds > 1 { " (last round)" } else { "" });
    for s in summaries {
        let Some(last) = s.rounds.last() else { continue };
        let threads: Vec<String> = last.threads.iter().map(|(name, us)| format!("{name} {us:.1}")).collect();
        println!("  {:<26} {}", s.mode.label(), threads.join(", "));
    }
    for s in summaries.iter().filter(|s| s.errors > 0) {
        println!("ERRORS in {}: {} — e.g. {}", s.mode.label(), s.errors, s.error_samples.join(" | "));
    }
    println!();
    for s in summaries {
        let Some(target) = s.mode.target() else { continue };
        let verdict = match s.ratio {
            _ if s.errors > 0 => "NOT MET (the mode had errors)",
            Some(r) if r >= target => "met",
            Some(_) => "NOT MET",
            None => "unknown (no bare figure)",
        };
        let ratio = s.ratio.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}x"));
        println!("target: {} >= {target:.2}x bare: {ratio} -> {verdict}", s.mode.label());
    }
}

fn to_json(settings: &Settings, summaries: &[Summary]) -> Value {
    let modes: Vec<Value> = summaries
        .iter()
        .map(|s| {
            json!({
                "mode": s.mode.key(),
                "label": s.mode.label(),
                "req_per_s": s.req_per_s,
                "p50_us": s.p50_us,
                "p99_us": s.p99_us,
                "ratio_to_bare": s.ratio,
                "server_cpu_us_per_req": s.server_cpu_us,
                "client_cpu_us_per_req": s.client_cpu_us,
                "process_cpu_us_per_req": s.process_cpu_us,
                "requests": s.requests,
                "errors": s.errors,
                "error_samples": s.error_samples,
                "target_ratio": s.mode.target(),
                "target_met": s.mode.target().map(|t| s.errors == 0 && s.ratio.is_some_and(|r| r >= t)),
                "rounds": s.rounds.iter().map(|r| json!({
                    "req_per_s": r.req_per_s,
                    "p50_us": r.p50_us,
                    "p99_us": r.p99_us,
                    "server_cpu_us_per_req": r.server_cpu_us,
                    "client_cpu_us_per_req": r.client_cpu_us,
                    "process_cpu_us_per_req": r.process_cpu_us,
                    "requests": r.requests,
                    "errors": r.errors,
                    "server_cpu_us_per_req_by_thread": r.threads.iter()
                        .map(|(name, us)| json!({"thread": name, "cpu_us_per_req": us}))
                        .collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "bench": "load",
        "call": {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}},
        "settings": {
            "connections": settings.connections,
            "seconds": settings.seconds,
            "warmup_seconds": settings.warmup,
            "rounds": settings.rounds,
            "workers": settings.workers,
            "client_threads": settings.client_threads,
            "cpus": thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        },
        "statistic": if settings.rounds > 1 { "median over rounds" } else { "single round" },
        "cpu_note": "server CPU = process utime+stime minus the load-generator and main threads (10 ms ticks)",
        "modes": modes,
    })
}

fn draw_svg(path: &std::path::Path, settings: &Settings, summaries: &[Summary]) -> Result<(), String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let bare = summaries.iter().find(|s| s.mode == Mode::Bare).map_or(0.0, |s| s.req_per_s);
    let top = summaries.iter().map(|s| s.req_per_s).fold(1.0, f64::max) * 1.18;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let caption = format!(
        "mcpd tools/call echo: req/s ({} conns, {} worker(s), {} s{})",
        settings.connections,
        settings.workers,
        settings.seconds,
        if settings.rounds > 1 { format!(", median of {}", settings.rounds) } else { String::new() }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d((0..summaries.len().saturating_sub(1)).into_segmented(), 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .y_desc("requests / s")
        .x_labels(summaries.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => summaries.get(*i).map_or(String::new(), |s| match s.mode.target() {
                Some(target) => format!("{} (target {target}x)", s.mode.label()),
                None => s.mode.label().to_owned(),
            }),
            _ => String::new(),
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(|e| e.to_string())?;
    let bars = summaries.iter().enumerate().map(|(i, s)| {
        let colour = match s.mode {
            _ if s.errors > 0 => RED,
            Mode::Bare => RGBColor(150, 150, 150),
            _ => RGBColor(52, 101, 164),
        };
        let mut bar =
            Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), s.req_per_s)], colour.filled());
        bar.set_margin(0, 0, 30, 30);
        bar
    });
    chart.draw_series(bars).map_err(|e| e.to_string())?;
    let centred = ("sans-serif", 15).into_font().into_text_style(&root).pos(Pos::new(HPos::Center, VPos::Bottom));
    let right = ("sans-serif", 12).into_font().into_text_style(&root).pos(Pos::new(HPos::Right, VPos::Bottom));
    let labels = summaries.iter().enumerate().map(|(i, s)| {
        let mut text = format!("{:.0}", s.req_per_s);
        if let Some(r) = s.ratio.filter(|_| s.mode != Mode::Bare) {
            let _ = write!(text, " ({r:.2}x)");
        }
        if s.errors > 0 {
            text.push_str(" ERRORS");
        }
        Text::new(text, (SegmentValue::CenterOf(i), s.req_per_s + top * 0.01), centred.clone())
    });
    chart.draw_series(labels).map_err(|e| e.to_string())?;
    // Each target as a red mark across its own bar's slot.
    let marks = summaries.iter().enumerate().filter_map(|(i, s)| {
        let y = bare * s.mode.target()?;
        Some(PathElement::new(vec![(SegmentValue::Exact(i), y), (SegmentValue::Exact(i + 1), y)], RED.stroke_width(2)))
    });
    chart.draw_series(marks.filter(|_| bare > 0.0)).map_err(|e| e.to_string())?;
    let note = "red mark: target (fraction of the bare handler's req/s)";
    root.draw(&Text::new(note, (884, 500), right)).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------

fn run() -> Result<bool, String> {
    let settings = Settings::parse()?;
    let main_tid = current_tid().ok_or("cannot read /proc/thread-self")?;
    let servers = Servers::start(settings.workers)?;

    let per_mode_ms = ((settings.warmup + settings.seconds) * 1000.0) as u64;
    let total_ms = per_mode_ms * (MODES.len() * settings.rounds) as u64;
    let bar = ProgressBar::new(total_ms);
    if let Ok(style) = ProgressStyle::with_template("{wide_msg} [{bar:30}] {percent:>3}% eta {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); MODES.len()];
    let mut failure = None;
    let mut step = 0;
    'rounds: for round in 0..settings.rounds {
        // Interleave: every round runs every mode, starting one mode later than the round before.
        for offset in 0..MODES.len() {
            let index = (round + offset) % MODES.len();
            let mode = MODES[index];
            let title = format!("round {}/{} {}", round + 1, settings.rounds, mode.label());
            let base = step * per_mode_ms;
            step += 1;
            match run_mode(&settings, mode, &servers, main_tid, &bar, base, &title) {
                Ok(sample) => {
                    bar.suspend(|| {
                        eprintln!(
                            "{title}: {:.0} req/s, p50 {} µs, p99 {} µs, {} errors",
                            sample.req_per_s, sample.p50_us, sample.p99_us, sample.errors
                        );
                    });
                    samples[index].push(sample);
                }
                Err(e) => {
                    failure = Some(format!("{title}: {e}"));
                    break 'rounds;
                }
            }
        }
    }
    bar.finish_and_clear();
    let shutdown = servers.stop();
    if let Some(failure) = failure {
        return Err(failure);
    }

    let mut summaries: Vec<Summary> =
        MODES.iter().zip(samples).map(|(&mode, rounds)| summarize(mode, rounds)).collect();
    let bare = summaries[0].req_per_s;
    for s in &mut summaries {
        s.ratio = (bare > 0.0).then(|| s.req_per_s / bare);
    }
    print_table(&settings, &summaries);

    let dir = out::output_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json_path = dir.join("load.json");
    let text = serde_json::to_string_pretty(&to_json(&settings, &summaries)).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let svg_path = dir.join("load.svg");
    draw_svg(&svg_path, &settings, &summaries).map_err(|e| format!("cannot draw {}: {e}", svg_path.display()))?;
    println!("\nwrote {} and {}", json_path.display(), svg_path.display());

    let mut ok = true;
    if let Err(e) = shutdown {
        println!("ERROR: {e}");
        ok = false;
    }
    for s in &summaries {
        if s.errors > 0 || s.requests == 0 {
            println!("ERROR: {} had {} errors and {} good answers", s.mode.label(), s.errors, s.requests);
            ok = false;
        }
    }
    Ok(ok)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("load bench failed: {e}");
            std::process::exit(2);
        }
    }
}
