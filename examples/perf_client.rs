//! A profiling target for the client bench's client side, in its own process (so that callgrind
//! counts only the client): `tools/call echo` sent N times, one after another, through a
//! `ClientConnection` (the client runtime) or as raw awc POSTs, after 300 warm-up calls.
//!
//! `cargo run --release --example perf_client -- URL N [client|raw]`, against a server such as
//! `cargo run --release --example perf_server -- http 8900` (URL `http://127.0.0.1:8900/mcp`).
//! `scripts/perf/client-callgrind.sh` runs it twice under callgrind and prints the instructions and
//! mallocs per call.

#![allow(clippy::print_stdout, reason = "an example reports on standard output")]

use std::sync::Arc;
use std::time::Duration;

use actix::Actor as _;
use mcpd::model::Implementation;
use mcpd_actors::client::{CallTool, ClientConnection, ClientHandlers, LinkConfig};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map};

/// Calls before the counted ones (negotiation, caches, the connection pool).
const WARM_UP: usize = 300;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| "http://127.0.0.1:8900/mcp".into());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let raw = args.next().as_deref() == Some("raw");
    let failures = actix_rt::System::new().block_on(async move {
        let mut failures = 0usize;
        if raw {
            let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
            // The client bench's raw POST (benches/support: stateless_echo).
            let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},
                "io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}});
            let body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
            for _ in 0..WARM_UP + n {
                let sent = http
                    .post(&url)
                    .insert_header(("content-type", "application/json"))
                    .insert_header(("accept", "application/json, text/event-stream"))
                    .insert_header(("mcp-protocol-version", "2026-07-28"))
                    .insert_header(("mcp-method", "tools/call"))
                    .insert_header(("mcp-name", "echo"))
                    .send_body(body.clone())
                    .await;
                let ok = match sent {
                    Ok(mut response) => response.body().await.is_ok_and(|bytes| {
                        serde_json::from_slice::<serde_json::Value>(&bytes)
                            .is_ok_and(|v| v["result"]["content"][0]["text"] == "hello")
                    }),
                    Err(_) => false,
                };
                failures += usize::from(!ok);
            }
        } else {
            let config = LinkConfig {
                name: "perf".into(),
                url,
                sse: false,
                headers: Vec::new(),
                pin: None,
                timeout: Duration::from_secs(30),
                command: None,
                list_limits: Default::default(),
                task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
                oauth: None,
            };
            let connection = ClientConnection::new(
                config,
                ClientHandlers::default(),
                Implementation::new("perf", "1"),
                Arc::new(ActorCounts::new()),
            )
            .start();
            for _ in 0..WARM_UP + n {
                let mut arguments = Map::new();
                arguments.insert("text".into(), json!("hello"));
                let answer = connection.send(CallTool { name: "echo".into(), arguments }).await;
                failures += usize::from(!matches!(answer, Ok(Ok(result)) if result.text() == "hello"));
            }
        }
        failures
    });
    println!("{} calls, {failures} failed", WARM_UP + n);
    if failures > 0 {
        std::process::exit(1);
    }
}
