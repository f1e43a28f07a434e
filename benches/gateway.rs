//! Gateway bench: `tools/call` of a remote server's `echo` through mcpd's gateway
//! (`remote__echo`: this server's HTTP handler, the gateway, a cached `ClientConnection`, the
//! remote's HTTP handler) against the same call sent straight to the remote, with the same HTTP
//! client (awc) and the same stateless 2026-07-28 request, in the same run. Both servers run
//! in-process on loopback, one worker each.
//!
//! `cargo bench --bench gateway [-- --concurrency N --seconds S --rounds R]`
//! (env: MCPD_BENCH_CONCURRENCY, MCPD_BENCH_SECONDS, MCPD_BENCH_ROUNDS; MCPD_BENCH_THREADS=1
//! prints each busy thread's CPU per request — the caller, the gateway's worker, the remote's).
//! Besides throughput, the table shows the caller's CPU per request and the whole process's
//! (caller and both servers). Figures are written to
//! `target/bench/gateway.json`. A gateway call is two HTTP exchanges where the direct call is
//! one, on the same two cores, so about 0.5× direct is the ceiling.
//!
//! `MCPD_BENCH_HOP=forward` puts a probe in the gateway's place: an actix-web server (one
//! worker) that forwards each request's bytes to the remote over a keep-alive connection of its
//! own and answers the remote's bytes, parsing no JSON — what any hop on this server stack
//! costs, MCP work aside. Its ratio is this bench's ceiling on this machine for a gateway built
//! on actix-web.

#![allow(clippy::expect_used, reason = "a bench that cannot start its servers stops with the reason")]

#[path = "support/mod.rs"]
mod support;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::{ActorCounts, ListenerConfig, Mcpd};

use support::{compare, report, settings, stateless_echo};

/// The figures' names: the baseline, then the gateway.
const KEYS: [&str; 2] = ["direct", "gateway"];

/// Starts an mcpd on its own thread (one worker): the built-in tools, or with `gateway_to` a
/// gateway to the mcpd on that port. Returns its port.
fn start_server(gateway_to: Option<u16>) -> u16 {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let live = match gateway_to {
                None => {
                    let mut catalog = mcpd::Catalog::new();
                    mcpd::builtin::register(&mut catalog);
                    Arc::new(LiveCatalog::new(catalog))
                }
                Some(_) => Arc::new(LiveCatalog::new(mcpd::Catalog::new())),
            };
            let _gateway = match gateway_to {
                Some(port) => {
                    let document = ConfigDocument::parse(&format!(r#"{{"url":"http://127.0.0.1:{port}/mcp"}}"#))
                        .expect("a valid document");
                    let records = vec![ServerRecord::new("remote", document)];
                    let gateway =
                        Gateway::new(records, live.clone(), ToolFilter::from_value(None), Arc::new(ActorCounts::new()));
                    gateway.refresh_all().await;
                    assert!(gateway.health()[0].up, "the remote is up: {:?}", gateway.health());
                    Some(gateway)
                }
                None => None,
            };
            let server = Arc::new(mcpd::McpServer::with_live_catalog(Default::default(), live));
            let config = ListenerConfig { port: 0, workers: 1, ..Default::default() };
            let runtime = Mcpd::new(server, config.clone(), Vec::new());
            let status = runtime.start(config).await.expect("server starts");
            tx.send(status.port).expect("port sent");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server port")
}

fn main() {
    let s = &settings();
    let remote = start_server(None);
    let forward = std::env::var("MCPD_BENCH_HOP").is_ok_and(|v| v == "forward");
    let gateway = if forward { start_forwarder(remote) } else { start_server(Some(remote)) };
    let tool = if forward { "echo" } else { "remote__echo" };
    let results = actix_rt::System::new().block_on(async move {
        let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
        let direct = stateless_echo(&http, format!("http://127.0.0.1:{remote}/mcp"), "echo");
        let through = stateless_echo(&http, format!("http://127.0.0.1:{gateway}/mcp"), tool);
        assert!(direct().await, "the direct call failed");
        assert!(through().await, "the gateway call failed");
        compare(s, KEYS, direct, through).await
    });
    let (_, errors) = report("gateway", s, KEYS, ["direct to the remote", "through the gateway"], &results);
    if errors > 0 {
        std::process::exit(1);
    }
}

/// The probe (MCPD_BENCH_HOP=forward): an actix-web server (one worker) that forwards each POST
/// body, byte for byte, to the remote over a keep-alive connection of its own and answers the
/// remote's body — a hop that parses no JSON. Returns its port.
fn start_forwarder(remote: u16) -> u16 {
    use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
    use std::cell::RefCell;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    thread_local! { static IDLE: RefCell<Vec<TcpStream>> = const { RefCell::new(Vec::new()) }; }
    async fn exchange(stream: &mut TcpStream, head: &[u8], body: &[u8]) -> std::io::Result<bytes::Bytes> {
        let mut out = Vec::with_capacity(head.len() + body.len());
        out.extend_from_slice(head);
        out.extend_from_slice(body);
        stream.write_all(&out).await?;
        let mut buf = Vec::with_capacity(1024);
        loop {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&buf[..end]).unwrap_or("").to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < end + 4 + length {
                    let n = stream.read(&mut chunk).await?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                return Ok(bytes::Bytes::copy_from_slice(&buf[end + 4..end + 4 + length]));
            }
        }
    }
    async fn forward(request: HttpRequest, body: web::Bytes, remote: web::Data<u16>) -> HttpResponse {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {}\r\nmcp-method: {}\r\nmcp-name: {}\r\ncontent-length: {}\r\n\r\n",
            remote.get_ref(), header("mcp-protocol-version"), header("mcp-method"), header("mcp-name"), body.len()
        );
        let mut stream = match IDLE.with(|idle| idle.borrow_mut().pop()) {
            Some(stream) => stream,
            None => match TcpStream::connect(("127.0.0.1", *remote.get_ref())).await {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(e) => return HttpResponse::BadGateway().body(e.to_string()),
            },
        };
        match exchange(&mut stream, head.as_bytes(), &body).await {
            Ok(answer) => {
                IDLE.with(|idle| idle.borrow_mut().push(stream));
                HttpResponse::Ok().content_type("application/json").body(answer)
            }
            Err(e) => HttpResponse::BadGateway().body(e.to_string()),
        }
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let server = HttpServer::new(move || {
                App::new().app_data(web::Data::new(remote)).route("/mcp", web::post().to(forward))
            })
            .workers(1)
            .bind(("127.0.0.1", 0))
            .expect("the forwarder binds");
            tx.send(server.addrs()[0].port()).expect("port sent");
            server.run().await.expect("the forwarder runs");
        });
    });
    rx.recv().expect("forwarder port")
}
