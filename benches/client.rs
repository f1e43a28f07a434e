//! Client bench: `tools/call echo` through a cached `ClientConnection` (the client runtime:
//! actor mailbox, stateless metadata and routing headers, response parsing) against raw HTTP POSTs
//! of the same request with the same HTTP client (awc), in the same run, against mcpd's own
//! stateless server on loopback.
//!
//! `cargo bench --bench client [-- --concurrency N --seconds S --rounds R]`
//! (env: MCPD_BENCH_CONCURRENCY, MCPD_BENCH_SECONDS, MCPD_BENCH_ROUNDS). Figures are written to
//! `target/bench/client.json`. Target: client ≥ 0.85× raw.

#[path = "support/mod.rs"]
mod support;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Actor as _;
use mcpd::model::Implementation;
use mcpd_actors::client::{CallTool, ClientConnection, ClientHandlers, LinkConfig};
use mcpd_actors::{ActorCounts, ListenerConfig, Mcpd};
use serde_json::{json, Map, Value};
use support::{drive, settings};

/// Starts mcpd (stateless + legacy, one worker) on its own thread; returns the port.
fn start_server() -> u16 {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let mut catalog = mcpd::Catalog::new();
            mcpd::builtin::register(&mut catalog);
            let server = Arc::new(mcpd::McpServer::new(Default::default(), catalog));
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
    let s = settings();
    let port = start_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let results = actix_rt::System::new().block_on(async move {
        let connection = ClientConnection::new(
            LinkConfig { name: "bench".into(), url: url.clone(), sse: false, headers: Vec::new(), pin: None, timeout: Duration::from_secs(30), command: None },
            ClientHandlers::default(),
            Implementation::new("bench", "1"),
            Arc::new(ActorCounts::new()),
        )
        .start();
        let mut arguments = Map::new();
        arguments.insert("text".into(), json!("hello"));
        let client_call = || {
            let connection = connection.clone();
            let arguments = arguments.clone();
            async move {
                matches!(connection.send(CallTool { name: "echo".into(), arguments }).await,
                    Ok(Ok(result)) if result.text() == "hello")
            }
        };
        // Warm up (negotiation happens here) and check that it works at all.
        assert!(client_call().await, "the client's first call failed");
        let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},
            "io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}});
        let body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
        let raw_call = || {
            let http = http.clone();
            let url = url.clone();
            let body = body.clone();
            async move {
                let sent = http
                    .post(&url)
                    .insert_header(("content-type", "application/json"))
                    .insert_header(("accept", "application/json, text/event-stream"))
                    .insert_header(("mcp-protocol-version", "2026-07-28"))
                    .insert_header(("mcp-method", "tools/call"))
                    .insert_header(("mcp-name", "echo"))
                    .send_body(body)
                    .await;
                let Ok(mut response) = sent else { return false };
                let Ok(bytes) = response.body().await else { return false };
                serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["result"]["content"][0]["text"] == "hello")
            }
        };
        assert!(raw_call().await, "the raw call failed");
        let mut rounds = Vec::new();
        for round in 0..s.rounds {
            // Alternate which goes first, so drift on a shared machine hits both alike.
            let mut pair = [(0.0, 0), (0.0, 0)];
            for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
                let started = Instant::now();
                let (n, errors) = if which == 0 {
                    drive(s.concurrency, s.seconds, raw_call).await
                } else {
                    drive(s.concurrency, s.seconds, client_call).await
                };
                pair[which] = (n as f64 / started.elapsed().as_secs_f64(), errors);
            }
            eprintln!("round {}/{}: raw {:.0} req/s, client {:.0} req/s", round + 1, s.rounds, pair[0].0, pair[1].0);
            rounds.push(pair);
        }
        rounds
    });
    let median = |which: usize| {
        let mut v: Vec<f64> = results.iter().map(|p| p[which].0).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let errors: u64 = results.iter().map(|p| p[0].1 + p[1].1).sum();
    let (raw, client) = (median(0), median(1));
    let ratio = client / raw;
    eprintln!(
        "\nclient bench: tools/call echo, {} concurrent calls, {} s × {} rounds (medians)\n",
        s.concurrency, s.seconds, s.rounds
    );
    eprintln!("{:<34}{:>12}{:>10}", "mode", "req/s", "× raw");
    eprintln!("{:<34}{:>12.0}{:>10.2}", "raw awc POSTs", raw, 1.0);
    eprintln!("{:<34}{:>12.0}{:>10.2}", "ClientConnection::CallTool", client, ratio);
    eprintln!("errors: {errors}");
    eprintln!("target: client >= 0.85x raw: {ratio:.2}x -> {}", if ratio >= 0.85 { "met" } else { "NOT MET" });
    let dir =
        std::path::Path::new(&std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into())).join("bench");
    let _ = std::fs::create_dir_all(&dir);
    let report = json!({"concurrency": s.concurrency, "seconds": s.seconds, "rounds": s.rounds,
        "raw_rps": raw, "client_rps": client, "ratio": ratio, "errors": errors,
        "per_round": results.iter().map(|p| json!({"raw": p[0].0, "client": p[1].0})).collect::<Vec<_>>()});
    let _ = std::fs::write(dir.join("client.json"), serde_json::to_vec_pretty(&report).unwrap_or_default());
    if errors > 0 {
        std::process::exit(1);
    }
}
