//! Gateway bench: `tools/call` of a remote server's `echo` through mcpd's gateway
//! (`remote__echo`: this server's HTTP handler, the gateway, a cached `ClientConnection`, the
//! remote's HTTP handler) against the same call sent straight to the remote, with the same HTTP
//! client (awc) and the same stateless 2026-07-28 request, in the same run. Both servers run
//! in-process on loopback, one worker each.
//!
//! `cargo bench --bench gateway [-- --concurrency N --seconds S --rounds R]`
//! (env: MCPD_BENCH_CONCURRENCY, MCPD_BENCH_SECONDS, MCPD_BENCH_ROUNDS). Figures are written to
//! `target/bench/gateway.json`. A gateway call is two HTTP exchanges where the direct call is
//! one, on the same two cores, so about 0.5× direct is the ceiling.

#[path = "support/mod.rs"]
mod support;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::{ActorCounts, ListenerConfig, Mcpd};
use serde_json::{json, Value};
use support::{drive, settings};

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
    let s = settings();
    let remote = start_server(None);
    let gateway = start_server(Some(remote));
    let results = actix_rt::System::new().block_on(async move {
        let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
        let request = |port: u16, tool: &'static str| {
            let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":{"text":"hello"},
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},
                "io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}});
            let body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
            let url = format!("http://127.0.0.1:{port}/mcp");
            let http = http.clone();
            move || {
                let (http, url, body) = (http.clone(), url.clone(), body.clone());
                async move {
                    let sent = http
                        .post(&url)
                        .insert_header(("content-type", "application/json"))
                        .insert_header(("mcp-protocol-version", "2026-07-28"))
                        .insert_header(("mcp-method", "tools/call"))
                        .insert_header(("mcp-name", tool))
                        .send_body(body)
                        .await;
                    let Ok(mut response) = sent else { return false };
                    let Ok(bytes) = response.body().await else { return false };
                    serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["result"]["content"][0]["text"] == "hello")
                }
            }
        };
        let direct = request(remote, "echo");
        let through = request(gateway, "remote__echo");
        assert!(direct().await, "the direct call failed");
        assert!(through().await, "the gateway call failed");
        let mut rounds = Vec::new();
        for round in 0..s.rounds {
            // Alternate which goes first, so drift on a shared machine hits both alike.
            let mut pair = [(0.0, 0), (0.0, 0)];
            for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
                let started = Instant::now();
                let (n, errors) = if which == 0 {
                    drive(s.concurrency, s.seconds, &direct).await
                } else {
                    drive(s.concurrency, s.seconds, &through).await
                };
                pair[which] = (n as f64 / started.elapsed().as_secs_f64(), errors);
            }
            eprintln!("round {}/{}: direct {:.0} req/s, gateway {:.0} req/s", round + 1, s.rounds, pair[0].0, pair[1].0);
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
    let (direct, through) = (median(0), median(1));
    let ratio = through / direct;
    eprintln!(
        "\ngateway bench: tools/call echo, {} concurrent calls, {} s × {} rounds (medians)\n",
        s.concurrency, s.seconds, s.rounds
    );
    eprintln!("{:<34}{:>12}{:>10}", "mode", "req/s", "× direct");
    eprintln!("{:<34}{:>12.0}{:>10.2}", "direct to the remote", direct, 1.0);
    eprintln!("{:<34}{:>12.0}{:>10.2}", "through the gateway", through, ratio);
    eprintln!("errors: {errors}");
    let dir =
        std::path::Path::new(&std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into())).join("bench");
    let _ = std::fs::create_dir_all(&dir);
    let report = json!({"concurrency": s.concurrency, "seconds": s.seconds, "rounds": s.rounds,
        "direct_rps": direct, "gateway_rps": through, "ratio": ratio, "errors": errors,
        "per_round": results.iter().map(|p| json!({"direct": p[0].0, "gateway": p[1].0})).collect::<Vec<_>>()});
    let _ = std::fs::write(dir.join("gateway.json"), serde_json::to_vec_pretty(&report).unwrap_or_default());
    if errors > 0 {
        std::process::exit(1);
    }
}
