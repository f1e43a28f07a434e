//! Bounded memory where a peer can push: an SSE reader that stops reading is cut off (and its
//! request cancelled) instead of making the server buffer without limit, and a session or stdio
//! connection runs at most `max_in_flight` requests at once, refusing more with an error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, ServerOptions, ToolContext};
use mcpd_actors::{Limits, TransportMode};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use crate::support::arrivals::Arrivals;
use crate::support::eventually::eventually;
use crate::support::server::*;
use crate::support::sse::{open, SseReader};

/// Signals when dropped: the tool's future ended, finished or cancelled.
struct OnDrop(Arrivals);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.arrive();
    }
}

/// The test catalog plus `flood {count, size}`: `count` progress notifications with a
/// `size`-byte message each, yielding between them; `sent` counts them, `ended` signals the end
/// of the call (done or cancelled).
fn flood_catalog(sent: Arc<AtomicUsize>, ended: Arrivals) -> Catalog {
    let mut catalog = test_catalog();
    catalog.add_tool(
        Tool::new("flood", "Reports progress count times, with size-byte messages.", json!({"type": "object"})),
        move |args: Map<String, Value>, ctx: ToolContext| {
            let (sent, ended) = (sent.clone(), ended.clone());
            async move {
                let _ended = OnDrop(ended);
                let count = args.get("count").and_then(Value::as_u64).unwrap_or(10);
                let message = "x".repeat(args.get("size").and_then(Value::as_u64).unwrap_or(10) as usize);
                for step in 0..count {
                    ctx.progress(step as f64, Some(count as f64), Some(&message));
                    sent.fetch_add(1, Ordering::Relaxed);
                    actix_rt::task::yield_now().await;
                }
                Ok(CallToolResult::text("flooded"))
            }
        },
    );
    catalog
}

/// A client that asks for progress and then reads nothing is cut off once the socket buffers
/// and `max_queued_messages` events are full: the cut is counted, the request cancelled, and
/// what the client finally reads ends without the answer.
#[actix_rt::test]
async fn a_slow_sse_reader_is_cut_off_and_its_request_cancelled() {
    let (sent, ended) = (Arc::new(AtomicUsize::new(0)), Arrivals::new());
    let count = 4_000;
    let server = start_with(flood_catalog(sent.clone(), ended.clone()), ServerOptions::default(), |c| {
        c.limits = Limits { max_queued_messages: 16, max_queued_bytes: 256 * 1024, ..c.limits };
    })
    .await;
    let mut body =
        modern_request(1, "tools/call", json!({"name": "flood", "arguments": {"count": count, "size": 16384}}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "flood"),
    ];
    let response = open("POST", &server, "/mcp", &headers, Some(&body)).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers().get("content-type").unwrap(), "text/event-stream");

    // The client reads nothing now.
    eventually("the slow reader is cut off", Duration::from_secs(60), async || {
        let text = metrics_text(&server).await;
        (metric(&text, "mcpd_sse_streams_cut_total") == Some(1.0)).then_some(()).ok_or(text)
    })
    .await;
    ended.wait_for(1, "the flood call is cancelled with its stream").await;
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < count, "the tool stopped early: {sent} of {count} notifications");
    let events = SseReader::new(response).all(Duration::from_secs(10)).await;
    assert!(events.len() < sent, "{} events delivered of {sent} sent", events.len());
    assert!(events.iter().all(|e| e.json()["method"] == "notifications/progress"), "no answer after the cut");
    let text = metrics_text(&server).await;
    assert_eq!(metric(&text, "mcpd_requests_total{method=\"tools/call\",outcome=\"ok\"}"), None, "{text}");
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn sleep_call(id: i64, ms: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": ms}}})
}

/// A session runs at most `max_in_flight` requests at once: one more is answered 429 with a
/// JSON-RPC error naming the limit, the running ones are unaffected, and once they finish the
/// session takes requests again.
#[actix_rt::test]
async fn a_session_runs_at_most_max_in_flight_requests() {
    let sleeping = Arrivals::new();
    let server =
        start_with(test_catalog_counting(&sleeping), ServerOptions { sessions: true, ..Default::default() }, |c| {
            c.mode = TransportMode::StreamableHttp;
            c.limits.max_in_flight = 3;
        })
        .await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let reply = post(&server, &[ACCEPT], &init).await;
    let session = reply.header("mcp-session-id").expect("a session").to_owned();
    let headers = [ACCEPT, ("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];

    let calls: Vec<Value> = (1..=3).map(|id| sleep_call(id, 1500)).collect();
    let running = join_all(calls.iter().map(|call| post(&server, &headers, call)));
    let refused = async {
        sleeping.wait_for(3, "three calls run").await;
        post(&server, &headers, &sleep_call(4, 10)).await
    };
    let (finished, refused) = tokio::join!(running, refused);
    assert_eq!(refused.status, 429, "{}", String::from_utf8_lossy(&refused.body));
    assert_eq!(refused.json()["id"], 4);
    let message = refused.json()["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("at most 3"), "{message}");
    for reply in finished {
        assert_eq!(reply.json()["result"]["content"][0]["text"], "slept 1500", "{:?}", reply.json());
    }
    assert_eq!(sleeping.count(), 3, "the refused call never ran");
    let again = post(&server, &headers, &sleep_call(5, 10)).await;
    assert_eq!(again.json()["result"]["content"][0]["text"], "slept 10");
    let text = metrics_text(&server).await;
    assert_eq!(metric(&text, "mcpd_requests_over_limit_total"), Some(1.0), "{text}");
}

/// Over stdio, a request beyond `max_in_flight` is answered with an error at once, and the
/// connection keeps reading: a cancellation sent after it still reaches the running call.
#[actix_rt::test]
async fn stdio_runs_at_most_max_in_flight_requests() {
    let sleeping = Arrivals::new();
    let server = Arc::new(mcpd::McpServer::new(Default::default(), test_catalog_counting(&sleeping)));
    let counts = Arc::new(mcpd_actors::ActorCounts::new());
    let (mut writer, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let limits = Limits { max_in_flight: 2, ..Limits::default() };
    let serving = actix_rt::spawn(mcpd_actors::stdio::serve(server, limits, counts, server_in, server_out));
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    let mut send = async |message: Value| {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        writer.write_all(&line).await.unwrap();
    };
    send(sleep_call(1, 60_000)).await;
    send(sleep_call(2, 1000)).await;
    sleeping.wait_for(2, "two calls run").await;
    send(sleep_call(3, 10)).await;
    send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})).await;
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let line = actix_rt::time::timeout(Duration::from_secs(10), lines.next_line()).await.expect("an answer");
        answers.push(serde_json::from_str::<Value>(&line.unwrap().expect("open")).unwrap());
    }
    assert_eq!(answers[0]["id"], 3, "refused at once: {answers:?}");
    assert!(answers[0]["error"]["message"].as_str().unwrap_or_default().contains("at most 2"), "{answers:?}");
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[1]["result"]["content"][0]["text"], "slept 1000");
    assert_eq!(sleeping.count(), 2, "the refused call never ran");
    drop(writer);
    actix_rt::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("stdio ends: the cancelled call gets no answer")
        .unwrap()
        .unwrap();
}
