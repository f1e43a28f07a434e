//! Client bench: `tools/call echo` through a cached `ClientConnection` (the client runtime:
//! actor mailbox, stateless metadata and routing headers, response parsing) against raw HTTP POSTs
//! of the same request with the same HTTP client (awc), in the same run, against mcpd's own
//! stateless server on loopback.
//!
//! `cargo bench --bench client [-- --concurrency N --seconds S --rounds R]`
//! (env: MCPD_BENCH_CONCURRENCY, MCPD_BENCH_SECONDS, MCPD_BENCH_ROUNDS). Figures are written to
//! `target/bench/client.json`. Target: client ≥ 0.85× raw.

#![allow(clippy::expect_used, reason = "a bench that cannot start its servers stops with the reason")]

#[path = "support/mod.rs"]
mod support;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor as _;
use mcpd::model::Implementation;
use mcpd_actors::client::{CallTool, ClientConnection, ClientHandlers, LinkConfig};
use mcpd_actors::{ActorCounts, ListenerConfig, Mcpd};
use serde_json::{json, Map};
use support::{compare, report, settings, stateless_echo};

/// The figures' names: the baseline, then the client.
const KEYS: [&str; 2] = ["raw", "client"];

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
    let s = &settings();
    let port = start_server();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let results = actix_rt::System::new().block_on(async move {
        let connection = ClientConnection::new(
            LinkConfig {
                name: "bench".into(),
                url: url.clone(),
                sse: false,
                headers: Vec::new(),
                pin: None,
                timeout: Duration::from_secs(30),
                command: None,
                list_limits: Default::default(),
                task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
                oauth: None,
            },
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
        let raw_call = stateless_echo(&http, url, "echo");
        assert!(raw_call().await, "the raw call failed");
        compare(s, KEYS, raw_call, client_call).await
    });
    let (ratio, errors) = report("client", s, KEYS, ["raw awc POSTs", "ClientConnection::CallTool"], &results);
    eprintln!("target: client >= 0.85x raw: {ratio:.2}x -> {}", if ratio >= 0.85 { "met" } else { "NOT MET" });
    if errors > 0 {
        std::process::exit(1);
    }
}
