//! When idle sessions end, now that one sweeper checks every session's deadline instead of a
//! timer per session: many sessions end within a second of their idle time and none before;
//! activity on some does not disturb the expiry of the others; a session used just before its
//! deadline is kept for another idle time; idle sessions hold no executor until their first
//! request; the live gauges and `mcpd_sessions_expired_total` stay exact. In cluster mode a
//! shared session used only through another instance stays alive everywhere, then ends, record
//! and copies, an idle time after its last use.

use std::time::{Duration, Instant};

use mcpd::ServerOptions;
use mcpd_actors::{ListenerConfig, SessionConfig, TransportMode};
use serde_json::{json, Value};

use crate::cluster_redis::{cli, free_port, redis_installed, Redis};
use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::process::{self, HttpChild};
use crate::support::server::*;

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

async fn start_sessions(tweak: impl FnOnce(&mut SessionConfig)) -> TestServer {
    start_with(test_catalog(), ServerOptions { sessions: true, ..Default::default() }, |c: &mut ListenerConfig| {
        c.mode = TransportMode::StreamableHttp;
        tweak(&mut c.sessions);
    })
    .await
}

async fn initialize(server: &TestServer) -> String {
    let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let reply = post(server, &[ACCEPT], &body).await;
    assert_eq!(reply.status, 200, "{:?}", String::from_utf8_lossy(&reply.body));
    reply.header("mcp-session-id").expect("a session id").to_owned()
}

async fn ping(server: &TestServer, session: &str) -> u16 {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    post(server, &[ACCEPT, ("mcp-session-id", session), ("mcp-protocol-version", "2025-11-25")], &body).await.status
}

async fn open(server: &TestServer, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let batch = (count - ids.len()).min(50);
        ids.extend(futures_util::future::join_all((0..batch).map(|_| initialize(server))).await);
    }
    ids
}

async fn gauge(server: &TestServer, name: &str) -> Option<f64> {
    metric(&metrics_text(server).await, name)
}

/// Checks, until `until`, that `holds` stays true; fails saying when it did not.
async fn stays(what: &str, until: Instant, holds: impl AsyncFn() -> bool) {
    while Instant::now() < until {
        assert!(holds().await, "{what} no longer held {:?} before the deadline", until - Instant::now());
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 300 idle sessions: none ends before its idle time, every one within a second after it; each
/// is then unknown, counted once as expired, and the live gauges are back to 0.
#[actix_rt::test]
async fn many_idle_sessions_end_on_time_and_none_before() {
    let idle = Duration::from_millis(1500);
    let server = start_sessions(|s| {
        s.idle_timeout = idle;
        s.max_sessions = 1000;
    })
    .await;
    let first_opened = Instant::now();
    let ids = open(&server, 300).await;
    let last_opened = Instant::now();
    assert_eq!(gauge(&server, "mcpd_sessions_live").await, Some(300.0));
    stays("300 sessions live", first_opened + idle - Duration::from_millis(100), async || {
        server.runtime.live_sessions() == 300
    })
    .await;
    eventually("every idle session ended", last_opened + idle + Duration::from_secs(1) - Instant::now(), async || {
        server.runtime.live_sessions() == 0
    })
    .await;
    let text = metrics_text(&server).await;
    assert_eq!(metric(&text, "mcpd_sessions_expired_total"), Some(300.0));
    assert_eq!(metric(&text, "mcpd_sessions_live"), Some(0.0));
    assert_eq!(metric(&text, r#"mcpd_actors_live{kind="session"}"#), Some(0.0));
    for id in &ids {
        assert_eq!(ping(&server, id).await, 404);
    }
}

/// Sessions in use outlive three idle times while 200 idle ones beside them expire; once left
/// alone, they expire too.
#[actix_rt::test]
async fn sessions_in_use_are_kept_while_idle_ones_beside_them_expire() {
    let idle = Duration::from_millis(900);
    let server = start_sessions(|s| {
        s.idle_timeout = idle;
        s.max_sessions = 1000;
    })
    .await;
    let busy = open(&server, 10).await;
    let _idle = open(&server, 200).await;
    let start = Instant::now();
    while start.elapsed() < idle * 3 {
        for id in &busy {
            assert_eq!(ping(&server, id).await, 200, "a session in use after {:?}", start.elapsed());
        }
        actix_rt::time::sleep(idle / 4).await;
    }
    assert_eq!(server.runtime.live_sessions(), 10, "the idle ones ended, the busy ones did not");
    assert_eq!(gauge(&server, "mcpd_sessions_expired_total").await, Some(200.0));
    eventually("the sessions left alone ended", idle + Duration::from_secs(2), async || {
        server.runtime.live_sessions() == 0
    })
    .await;
    assert_eq!(gauge(&server, "mcpd_sessions_expired_total").await, Some(210.0));
}

/// A session used at three quarters of its idle time is not ended at its first deadline: it
/// ends an idle time after that use.
#[actix_rt::test]
async fn a_session_used_just_before_its_deadline_is_kept() {
    let idle = Duration::from_millis(1200);
    let server = start_sessions(|s| s.idle_timeout = idle).await;
    let opened = Instant::now();
    let id = initialize(&server).await;
    let other = initialize(&server).await;
    stays("both live", opened + idle * 3 / 4, async || server.runtime.live_sessions() == 2).await;
    assert_eq!(ping(&server, &id).await, 200);
    let used = Instant::now();
    eventually("the session not used ended", idle + Duration::from_secs(1), async || {
        server.runtime.live_sessions() == 1
    })
    .await;
    assert_eq!(ping(&server, &other).await, 404);
    stays("the used session lives on", used + idle - Duration::from_millis(100), async || {
        server.runtime.live_sessions() == 1
    })
    .await;
    eventually("the used session ended too", used + idle + Duration::from_secs(1) - Instant::now(), async || {
        server.runtime.live_sessions() == 0
    })
    .await;
    assert_eq!(ping(&server, &id).await, 404);
}

/// Idle sessions hold no tool executor: the first request of a session starts its one, a
/// DELETE stops it.
#[actix_rt::test]
async fn idle_sessions_hold_no_executor_until_their_first_request() {
    let server = start_sessions(|_| {}).await;
    let ids = open(&server, 20).await;
    let executors = async || gauge(&server, r#"mcpd_actors_live{kind="tool_executor"}"#).await;
    assert_eq!(executors().await, Some(0.0));
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}});
    let headers = [ACCEPT, ("mcp-session-id", ids[0].as_str()), ("mcp-protocol-version", "2025-11-25")];
    for _ in 0..3 {
        assert_eq!(post(&server, &headers, &call).await.json()["result"]["content"][0]["text"], "hi");
    }
    assert_eq!(executors().await, Some(1.0), "one executor, started by the first request");
    let deleted = send("DELETE", &server.url("/mcp"), &[("mcp-session-id", ids[0].as_str())], Vec::new()).await;
    assert_eq!(deleted.status, 200);
    eventually("the executor stopped with its session", Duration::from_secs(5), async || {
        executors().await == Some(0.0)
    })
    .await;
    assert_eq!(server.runtime.live_sessions(), 19);
}

fn cluster_post(port: u16, session: &str, body: &Value) -> u16 {
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", session),
    ];
    process::http(port, "POST", "/mcp", &headers, &body.to_string()).0
}

/// Cluster mode: a session opened on A and used only through B for three idle times is served
/// by A afterwards; left alone, its record and every copy are gone within an idle time and a
/// bit.
#[test]
fn a_shared_session_lives_while_used_anywhere_and_then_ends_everywhere() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let idle = Duration::from_secs(2);
    let spawn =
        || HttpChild::spawn(&["serve", "-s", "--no-file-tools", "--redis", &redis, "--session-idle-timeout", "2"]);
    let (a, b) = (spawn(), spawn());
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let (status, answer_headers, answer) = process::http(a.port, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(status, 200, "{answer}");
    let session = process::header_value(&answer_headers, "mcp-session-id").unwrap().to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let start = Instant::now();
    while start.elapsed() < idle * 3 {
        assert_eq!(cluster_post(b.port, &session, &ping), 200, "used on B after {:?}", start.elapsed());
        std::thread::sleep(idle / 4);
    }
    assert_eq!(cluster_post(a.port, &session, &ping), 200, "A serves it again");
    let last_use = Instant::now();
    let record = format!("mcpd:session:{session}");
    // Watched without using the session: the record in Redis, and each instance's live gauge.
    let live = |port: u16| {
        let (_, _, text) = process::http(port, "GET", "/metrics", &[], "");
        text.lines().find_map(|l| l.strip_prefix("mcpd_sessions_live ")?.trim().parse::<f64>().ok())
    };
    eventually_blocking("the record and both copies are gone", idle + Duration::from_millis(1500), || {
        let exists = cli(redis_port, &["EXISTS", &record]);
        let copies = [live(a.port), live(b.port)];
        match (exists.as_deref(), copies) {
            (Some("0"), [Some(0.0), Some(0.0)]) => Ok(()),
            _ => Err(format!("record {exists:?}, copies {copies:?} after {:?}", last_use.elapsed())),
        }
    });
    assert!(last_use.elapsed() >= idle - Duration::from_millis(100), "not before its idle time");
    assert_eq!([cluster_post(a.port, &session, &ping), cluster_post(b.port, &session, &ping)], [404, 404]);
}
