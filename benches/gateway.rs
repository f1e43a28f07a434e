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
    let gateway = start_server(Some(remote));
    let results = actix_rt::System::new().block_on(async move {
        let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
        let direct = stateless_echo(&http, format!("http://127.0.0.1:{remote}/mcp"), "echo");
        let through = stateless_echo(&http, format!("http://127.0.0.1:{gateway}/mcp"), "remote__echo");
        assert!(direct().await, "the direct call failed");
        assert!(through().await, "the gateway call failed");
        compare(s, KEYS, direct, through).await
    });
    let (_, errors) = report("gateway", s, KEYS, ["direct to the remote", "through the gateway"], &results);
    if errors > 0 {
        std::process::exit(1);
    }
}
