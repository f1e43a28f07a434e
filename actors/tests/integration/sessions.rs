//! Streamable-HTTP sessions: ids, lifecycle (DELETE, expiry, cap), SSE answers with progress and
//! logs, server-to-client requests, cancellation, subscriptions, list_changed, resumption with
//! `Last-Event-ID`, the 2024-11-05 HTTP+SSE transport, and no leaked session actors.

use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::context::LogLevel;
use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, ServerOptions, ToolContext, ToolError};
use mcpd_actors::{ActorKind, ListenerConfig, SessionConfig, TransportMode};
use serde_json::{json, Map, Value};

use crate::support::arrivals::Arrivals;
use crate::support::eventually::eventually;
use crate::support::server::*;
use crate::support::sse::{open, Event, Response, SseReader};

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn session_catalog(sleeping: &Arrivals) -> Catalog {
    let mut c = test_catalog_counting(sleeping);
    c.add_tool(
        Tool::new("progress", "Reports progress.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move {
            for step in 1..=3 {
                ctx.progress(f64::from(step), Some(3.0), None);
                actix_rt::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(CallToolResult::text("progressed"))
        },
    );
    c.add_tool(
        Tool::new("logs", "Logs at three levels.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move {
            ctx.log(LogLevel::Debug, None, json!("debug line"));
            ctx.log(LogLevel::Info, None, json!("info line"));
            ctx.log(LogLevel::Warning, None, json!("warning line"));
            Ok(CallToolResult::text("logged"))
        },
    );
    c.add_tool(Tool::new("elicit", "Asks the user for a name.", json!({"type":"object"})), |_a, ctx: ToolContext| async move {
        let answer = ctx
            .request("elicitation/create", json!({"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}))
            .await
            .map_err(ToolError::failed)?;
        Ok(CallToolResult::text(format!("hello {}", answer["content"]["name"].as_str().unwrap_or("?"))))
    });
    c.add_tool(
        Tool::new("whoami", "Returns the session id.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move { Ok(CallToolResult::text(ctx.session_id().unwrap_or("none").to_owned())) },
    );
    c.add_tool(
        Tool::new("poll", "Closes its stream, then answers.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move {
            ctx.close_stream();
            actix_rt::time::sleep(Duration::from_millis(100)).await;
            Ok(CallToolResult::text("after reconnect"))
        },
    );
    c
}

async fn start_sessions(tweak: impl FnOnce(&mut SessionConfig)) -> (TestServer, Arc<LiveCatalog>) {
    start_sessions_counting(&Arrivals::new(), tweak).await
}

/// As [`start_sessions`], the `sleep` tool counting its calls in `sleeping`.
async fn start_sessions_counting(
    sleeping: &Arrivals,
    tweak: impl FnOnce(&mut SessionConfig),
) -> (TestServer, Arc<LiveCatalog>) {
    let live = Arc::new(LiveCatalog::new(session_catalog(sleeping)));
    let server =
        start_live(live.clone(), ServerOptions { sessions: true, ..Default::default() }, |c: &mut ListenerConfig| {
            c.mode = TransportMode::StreamableHttp;
            tweak(&mut c.sessions);
        })
        .await;
    (server, live)
}

async fn initialize(server: &TestServer) -> String {
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}});
    let reply = post(server, &[ACCEPT], &body).await;
    assert_eq!(reply.status, 200, "{:?}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
    reply.header("mcp-session-id").expect("a session id").to_owned()
}

async fn call(server: &TestServer, session: &str, body: Value) -> Reply {
    post(server, &[ACCEPT, ("mcp-session-id", session), ("mcp-protocol-version", "2025-11-25")], &body).await
}

fn tool_call(id: i64, name: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

async fn get_stream(server: &TestServer, session: &str, last_event_id: Option<&str>) -> Response {
    let mut headers = vec![("accept", "text/event-stream"), ("mcp-session-id", session)];
    if let Some(last) = last_event_id {
        headers.push(("last-event-id", last));
    }
    open("GET", server, "/mcp", &headers, None).await
}

async fn metrics_text(server: &TestServer) -> String {
    String::from_utf8(send("GET", &server.url("/metrics"), &[], Vec::new()).await.body).unwrap()
}

fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name_and_labels).and_then(|rest| rest.trim().parse().ok()))
}

/// `initialize` mints a distinct, visible-ASCII, unguessable id; requests without it are 400,
/// with an unknown one 404; DELETE ends the session (then 404).
#[actix_rt::test]
async fn session_ids_and_lifecycle() {
    let (server, _) = start_sessions(|_| {}).await;
    let a = initialize(&server).await;
    let b = initialize(&server).await;
    assert_ne!(a, b);
    assert!(a.len() >= 32 && a.bytes().all(|c| (0x21..=0x7e).contains(&c)), "{a}");
    let who = call(&server, &a, tool_call(1, "whoami", None)).await;
    assert_eq!(who.json()["result"]["content"][0]["text"], a, "tools see their session id");

    let missing = post(&server, &[ACCEPT], &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(missing.status, 400);
    let unknown = call(&server, "no-such-session", json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(send("DELETE", &server.url("/mcp"), &[], Vec::new()).await.status, 400);
    assert_eq!(send("DELETE", &server.url("/mcp"), &[("mcp-session-id", "nope")], Vec::new()).await.status, 404);

    assert_eq!(send("DELETE", &server.url("/mcp"), &[("mcp-session-id", a.as_str())], Vec::new()).await.status, 200);
    assert_eq!(call(&server, &a, json!({"jsonrpc":"2.0","id":4,"method":"ping"})).await.status, 404);
    assert_eq!(call(&server, &b, json!({"jsonrpc":"2.0","id":5,"method":"ping"})).await.json()["result"], json!({}));
    let initialized = call(&server, &b, json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    assert_eq!(initialized.status, 202);
}

/// POSTs must accept both JSON and SSE (406 otherwise); GET must accept SSE.
#[actix_rt::test]
async fn accept_header_is_enforced() {
    let (server, _) = start_sessions(|_| {}).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}});
    assert_eq!(post(&server, &[("accept", "application/json")], &body).await.status, 406);
    assert_eq!(post(&server, &[], &body).await.status, 406);
    let id = initialize(&server).await;
    let reply =
        send("GET", &server.url("/mcp"), &[("accept", "application/json"), ("mcp-session-id", &id)], Vec::new()).await;
    assert_eq!(reply.status, 406);
}

/// Stateless 2026-07-28 requests keep working on a session endpoint, and create no session.
#[actix_rt::test]
async fn stateless_requests_work_beside_sessions() {
    let (server, _) = start_sessions(|_| {}).await;
    let body = modern_request(1, "tools/call", json!({"name":"echo","arguments":{"text":"hi"}}));
    let headers = [ACCEPT, ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let reply = post(&server, &headers, &body).await;
    assert_eq!(reply.json()["result"]["content"][0]["text"], "hi");
    assert_eq!(server.runtime.counts().live(ActorKind::Session), 0);
}

/// A request that sends notifications is answered as SSE: priming event (id + retry), the
/// progress notifications with the request's token, then the response; a quiet one as JSON.
#[actix_rt::test]
async fn progress_streams_over_sse_before_the_result() {
    let (server, _) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let plain = call(&server, &id, tool_call(1, "echo", None)).await;
    assert!(plain.header("content-type").unwrap().starts_with("application/json"));

    let headers = [ACCEPT, ("mcp-session-id", id.as_str())];
    let response = open(
        "POST",
        &server,
        "/mcp",
        &headers,
        Some(&tool_call(2, "progress", Some(json!({"progressToken":"tok-7"})))),
    )
    .await;
    assert!(response.headers().get("content-type").unwrap().to_str().unwrap().starts_with("text/event-stream"));
    let events = SseReader::new(response).all(Duration::from_secs(5)).await;
    let priming = &events[0];
    assert!(priming.id.is_some() && priming.retry.is_some() && priming.data.is_empty(), "{priming:?}");
    let progress: Vec<Value> = events[1..events.len() - 1].iter().map(Event::json).collect();
    assert_eq!(progress.len(), 3, "{events:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "tok-7");
        assert_eq!(p["params"]["progress"], json!(i as f64 + 1.0));
    }
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("message"));
    assert_eq!(last.json()["result"]["content"][0]["text"], "progressed");
    let ids: std::collections::HashSet<_> = events.iter().filter_map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");
}

/// `logging/setLevel` answers `{}`; log messages at or above the level reach the client.
#[actix_rt::test]
async fn log_messages_respect_the_level() {
    let (server, _) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let quiet = call(&server, &id, tool_call(1, "logs", None)).await;
    assert!(quiet.header("content-type").unwrap().starts_with("application/json"), "no level set: no logs");
    let set =
        call(&server, &id, json!({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}})).await;
    assert_eq!(set.json()["result"], json!({}));
    let bad =
        call(&server, &id, json!({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}})).await;
    assert_eq!(bad.error_code(), -32602);
    let headers = [ACCEPT, ("mcp-session-id", id.as_str())];
    let events = SseReader::new(open("POST", &server, "/mcp", &headers, Some(&tool_call(4, "logs", None))).await)
        .all(Duration::from_secs(5))
        .await;
    let logs: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(Event::json)
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    let levels: Vec<&str> = logs.iter().map(|m| m["params"]["level"].as_str().unwrap()).collect();
    assert_eq!(levels, vec!["info", "warning"]);
}

/// A tool's elicitation request reaches the client on the call's stream; the client's POSTed
/// answer (202) completes the tool.
#[actix_rt::test]
async fn server_to_client_requests_round_trip() {
    let (server, _) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let headers = [ACCEPT, ("mcp-session-id", id.as_str())];
    let mut stream = SseReader::new(open("POST", &server, "/mcp", &headers, Some(&tool_call(1, "elicit", None))).await);
    let _priming = stream.next(Duration::from_secs(5)).await.unwrap();
    let request = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(request["method"], "elicitation/create");
    let answer = json!({"jsonrpc":"2.0","id":request["id"],"result":{"action":"accept","content":{"name":"Ada"}}});
    assert_eq!(call(&server, &id, answer).await.status, 202);
    let result = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(result["id"], 1);
    assert_eq!(result["result"]["content"][0]["text"], "hello Ada");
}

/// A client that never answers a server-to-client request does not hang the tool: it fails
/// with a clear message after the configured time.
#[actix_rt::test]
async fn unanswered_client_requests_time_out() {
    let (server, _) = start_sessions(|s| s.client_request_timeout = Duration::from_millis(300)).await;
    let id = initialize(&server).await;
    let headers = [ACCEPT, ("mcp-session-id", id.as_str())];
    let events = SseReader::new(open("POST", &server, "/mcp", &headers, Some(&tool_call(1, "elicit", None))).await)
        .all(Duration::from_secs(5))
        .await;
    let result = events.last().unwrap().json();
    assert_eq!(result["result"]["isError"], true);
    assert!(result["result"]["content"][0]["text"].as_str().unwrap().contains("did not answer"), "{result}");
}

/// `notifications/cancelled` stops an in-flight call: its POST ends without an answer and the
/// session keeps working.
#[actix_rt::test]
async fn cancelled_requests_stop_and_get_no_answer() {
    let sleeping = Arrivals::new();
    let (server, _) = start_sessions_counting(&sleeping, |_| {}).await;
    let id = initialize(&server).await;
    let long = call(
        &server,
        &id,
        json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}),
    );
    let cancel = async {
        sleeping.wait_for(1, "the call is running in the sleep tool").await;
        call(&server, &id, json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}})).await
    };
    let (long, cancel) = actix_rt::time::timeout(Duration::from_secs(10), futures_util::future::join(long, cancel))
        .await
        .expect("no hang");
    assert_eq!(cancel.status, 202);
    assert_eq!(long.status, 202);
    assert!(long.body.is_empty(), "a cancelled request gets no JSON-RPC answer");
    assert_eq!(call(&server, &id, json!({"jsonrpc":"2.0","id":10,"method":"ping"})).await.status, 200);
}

/// The standalone GET stream carries list_changed and, for subscribed resources,
/// resources/updated; a second GET is refused while one is open.
#[actix_rt::test]
async fn standalone_stream_carries_list_changed_and_subscriptions() {
    let (server, live) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let sub = call(
        &server,
        &id,
        json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched"}}),
    )
    .await;
    assert_eq!(sub.json()["result"], json!({}));
    let mut stream = SseReader::new(get_stream(&server, &id, None).await);
    let priming = stream.next(Duration::from_secs(5)).await.unwrap();
    assert!(priming.id.is_some() && priming.data.is_empty());
    assert_eq!(get_stream(&server, &id, None).await.status().as_u16(), 409);

    live.update(|c| {
        c.add_tool(Tool::new("fresh", "New.", json!({"type":"object"})), |_a: Map<String, Value>, _c| async {
            Ok(CallToolResult::text("fresh"))
        });
    });
    assert_eq!(stream.next(Duration::from_secs(5)).await.unwrap().json()["method"], "notifications/tools/list_changed");
    live.resource_updated("test://other");
    live.resource_updated("test://watched");
    let updated = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://watched", "only subscribed resources");
    call(
        &server,
        &id,
        json!({"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"test://watched"}}),
    )
    .await;
    live.resource_updated("test://watched");
    live.update(|c| {
        c.remove_tool("fresh");
    });
    let next = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(next["method"], "notifications/tools/list_changed", "no update after unsubscribe: {next}");
}

/// A GET with `Last-Event-ID` replays what the standalone stream sent while disconnected.
#[actix_rt::test]
async fn last_event_id_replays_missed_events() {
    let (server, live) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let mut stream = SseReader::new(get_stream(&server, &id, None).await);
    stream.next(Duration::from_secs(5)).await.unwrap();
    live.update(|c| {
        c.remove_tool("echo");
    });
    let seen = stream.next(Duration::from_secs(5)).await.unwrap();
    // No wait for the server to notice the disconnect: the stream buffers every event it
    // emits, delivered or not, so the two below are replayed either way.
    drop(stream);
    live.update(|c| {
        c.remove_tool("time");
    });
    live.update(|c| {
        c.remove_tool("fail");
    });
    let mut resumed = SseReader::new(get_stream(&server, &id, seen.id.as_deref()).await);
    let mut missed = Vec::new();
    while let Some(event) = resumed.next(Duration::from_millis(500)).await {
        if !event.data.is_empty() {
            missed.push(event);
        }
    }
    assert_eq!(missed.len(), 2, "{missed:?}");
    assert!(missed.iter().all(|e| e.json()["method"] == "notifications/tools/list_changed"));
    let bogus = get_stream(&server, &id, Some("99:1")).await;
    assert_eq!(bogus.status().as_u16(), 400, "an unknown event id is an error, not an empty stream");
}

/// A tool that closes its stream mid-call: the client gets the priming event, reconnects with
/// its id, and receives the result on the GET.
#[actix_rt::test]
async fn closed_streams_are_resumed_with_the_result() {
    let (server, _) = start_sessions(|_| {}).await;
    let id = initialize(&server).await;
    let headers = [ACCEPT, ("mcp-session-id", id.as_str())];
    let events = SseReader::new(open("POST", &server, "/mcp", &headers, Some(&tool_call(5, "poll", None))).await)
        .all(Duration::from_secs(5))
        .await;
    assert_eq!(events.len(), 1, "only the priming event before the close: {events:?}");
    let primed = events[0].id.clone().unwrap();
    // Reconnect once the tool has answered (into the detached stream's buffer).
    eventually("the poll tool has answered", Duration::from_secs(5), async || {
        metric(&metrics_text(&server).await, r#"mcpd_tool_calls_total{tool="poll",outcome="ok"}"#) == Some(1.0)
    })
    .await;
    let resumed = SseReader::new(get_stream(&server, &id, Some(&primed)).await).all(Duration::from_secs(5)).await;
    let result = resumed.iter().filter(|e| !e.data.is_empty()).map(Event::json).next().expect("the result");
    assert_eq!(result["id"], 5);
    assert_eq!(result["result"]["content"][0]["text"], "after reconnect");
}

/// Idle sessions expire (404 afterwards, counted as expired); the cap refuses more with 503.
#[actix_rt::test]
async fn idle_sessions_expire_and_the_cap_is_enforced() {
    let (server, _) = start_sessions(|s| {
        s.idle_timeout = Duration::from_millis(300);
        s.max_sessions = 2;
    })
    .await;
    let a = initialize(&server).await;
    let _b = initialize(&server).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}});
    let full = post(&server, &[ACCEPT], &body).await;
    assert_eq!(full.status, 503);
    assert!(full.json()["error"]["message"].as_str().unwrap().contains("limit is 2"));
    eventually("both idle sessions have expired", Duration::from_secs(5), async || server.runtime.live_sessions() == 0)
        .await;
    assert_eq!(call(&server, &a, json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await.status, 404);
    assert_eq!(metric(&metrics_text(&server).await, "mcpd_sessions_expired_total"), Some(2.0));
    initialize(&server).await;
}

/// 2024-11-05 HTTP+SSE: `GET /sse` announces the endpoint; POSTs there answer 202 and every
/// response arrives on the stream.
#[actix_rt::test]
async fn legacy_http_sse_transport() {
    let (server, _) = start_sessions(|_| {}).await;
    let mut stream = SseReader::new(open("GET", &server, "/sse", &[("accept", "text/event-stream")], None).await);
    let endpoint = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?sessionId="), "{endpoint:?}");
    let url = server.url(&endpoint.data);
    let post_to = |body: Value| {
        let url = url.clone();
        async move { send("POST", &url, &[("content-type", "application/json")], serde_json::to_vec(&body).unwrap()).await }
    };
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}});
    assert_eq!(post_to(init).await.status, 202);
    let answer = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(answer.event.as_deref(), Some("message"));
    assert_eq!(answer.json()["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(post_to(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await.status, 202);
    assert_eq!(
        post_to(
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old"}}})
        )
        .await
        .status,
        202
    );
    let result = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(result["id"], 2);
    assert_eq!(result["result"]["content"][0]["text"], "old");
    let gone =
        send("POST", &server.url("/messages?sessionId=nope"), &[("content-type", "application/json")], b"{}".to_vec())
            .await;
    assert_eq!(gone.status, 404);
}

/// No leaks: 1,000 sessions opened and deleted plus 1,000 abandoned and expired leave zero live
/// session (and executor) actors, as `/metrics` reports.
#[actix_rt::test]
async fn thousands_of_sessions_leave_no_actor_behind() {
    let (server, _) = start_sessions(|s| {
        s.idle_timeout = Duration::from_millis(500);
        s.max_sessions = 5_000;
    })
    .await;
    for batch in 0..20 {
        let ids = futures_util::future::join_all((0..50).map(|_| initialize(&server))).await;
        let url = server.url("/mcp");
        let deletes = ids.iter().map(|id| {
            let url = url.clone();
            async move { send("DELETE", &url, &[("mcp-session-id", id.as_str())], Vec::new()).await }
        });
        for reply in futures_util::future::join_all(deletes).await {
            assert_eq!(reply.status, 200, "batch {batch}");
        }
    }
    for _ in 0..20 {
        futures_util::future::join_all((0..50).map(|_| initialize(&server))).await;
    }
    let text = metrics_text(&server).await;
    assert_eq!(metric(&text, "mcpd_sessions_opened_total"), Some(2000.0));
    let live = eventually("no session or tool executor actor is live", Duration::from_secs(10), async || {
        let text = metrics_text(&server).await;
        let live = metric(&text, "mcpd_actors_live{kind=\"session\"}");
        if live == Some(0.0) && metric(&text, "mcpd_actors_live{kind=\"tool_executor\"}") == Some(0.0) {
            Ok(live)
        } else {
            Err(text)
        }
    })
    .await;
    let text = metrics_text(&server).await;
    assert_eq!(live, Some(0.0), "{text}");
    assert_eq!(metric(&text, "mcpd_actors_live{kind=\"tool_executor\"}"), Some(0.0));
    assert_eq!(metric(&text, "mcpd_sessions_live"), Some(0.0));
    assert_eq!(metric(&text, "mcpd_sessions_closed_total{reason=\"deleted\"}"), Some(1000.0));
    assert_eq!(metric(&text, "mcpd_sessions_expired_total"), Some(1000.0));
}
