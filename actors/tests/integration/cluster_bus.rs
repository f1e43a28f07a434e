//! Sessions shared through Redis (cluster mode, `--redis`): two `examples/everything --redis`
//! instances A and B over one Debian `redis-server`, driven with raw HTTP so that each request
//! goes to the instance the test names. A session created on A is served by B (adopted from its
//! record); the client's answer to A's elicitation, POSTed to B, reaches the tool on A; a
//! catalog change on A reaches the client's `GET` stream held by B, and so do the updates of a
//! resource subscribed on A while B's bus was down; a DELETE on one instance
//! ends the session on both; a cancellation POSTed to B stops the request running on A (its
//! command's processes die); a stream whose instance died, resumed on B, ends with a JSON-RPC
//! error; and with Redis gone, B answers a session it cannot look up with 503 naming the cause.
//! The official suite's scenarios through nginx are scripts/cluster-test.sh's; the Python SDK's
//! session across instances is in `cluster_sessions`. Skipped, saying so, without redis-server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster_redis::{cli, free_port, redis_installed, Redis};
use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, header_value, HttpChild};
use crate::tasks;

/// How long a stream may take to show an event (the dead-owner case waits for the heartbeat's
/// 10 s expiry).
const WAIT: Duration = Duration::from_secs(30);

/// Redis (and its port) and `N` `examples/everything --redis` instances of it; `None` (the
/// test returns, skipped) without `redis-server`.
pub(crate) fn instances<const N: usize>() -> Option<(Redis, u16, [HttpChild; N])> {
    if !redis_installed() {
        return None;
    }
    let port = free_port();
    let redis = Redis::start(port);
    Some((redis, port, std::array::from_fn(|_| instance(port))))
}

/// An `examples/everything --redis` instance of the Redis on `redis_port`.
pub(crate) fn instance(redis_port: u16) -> HttpChild {
    let mut cmd = process::everything_command();
    cmd.args(["--redis", &format!("redis://127.0.0.1:{redis_port}/")]);
    HttpChild::spawn_command(cmd)
}

fn session_headers(session: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Content-Type", "application/json".into()),
        ("Accept", "application/json, text/event-stream".into()),
        ("MCP-Protocol-Version", "2025-11-25".into()),
        ("Mcp-Session-Id", session.to_owned()),
    ]
}

fn borrowed<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

/// `initialize` (declaring elicitation) on `port`, then `notifications/initialized`: the session id.
fn initialize(port: u16) -> String {
    initialize_on(port, port)
}

/// `initialize` (declaring elicitation) on `creator`, then `notifications/initialized` on
/// `adopter` (which adopts the session when it is another instance): the session id.
pub(crate) fn initialize_on(creator: u16, adopter: u16) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "cluster-bus-test", "version": "1"}}});
    let headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let (status, headers, answer) = process::http(creator, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(status, 200, "initialize: {answer}");
    let session = header_value(&headers, "mcp-session-id").expect("a session id").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(adopter, &session, &initialized);
    assert_eq!(status, 202, "notifications/initialized: {body}");
    session
}

fn post(port: u16, session: &str, message: &Value) -> (u16, Vec<(String, String)>, String) {
    let headers = session_headers(session);
    process::http(port, "POST", "/mcp", &borrowed(&headers), &message.to_string())
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A response read as it comes (SSE), over its own connection.
struct Streamed {
    status: u16,
    connection: TcpStream,
    seen: String,
}

impl Streamed {
    fn open(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Streamed {
        let mut streamed = Streamed::send(port, method, headers, body);
        streamed.wait_for("\r\n\r\n", Duration::from_secs(10));
        streamed.status = streamed.seen.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        streamed
    }

    /// Sends the request without waiting for the response's head.
    fn send(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Streamed {
        let mut connection = TcpStream::connect(("127.0.0.1", port)).unwrap();
        connection.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut head =
            format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(body.as_bytes()).unwrap();
        Streamed { status: 0, connection, seen: String::new() }
    }

    /// Reads until `needle` has arrived (panics, showing what came, after `within`); answers
    /// everything read so far.
    fn wait_for(&mut self, needle: &str, within: Duration) -> &str {
        let started = Instant::now();
        let mut buffer = [0u8; 4096];
        while !self.seen.contains(needle) {
            assert!(started.elapsed() < within, "no {needle:?} within {within:?}; the stream so far:\n{}", self.seen);
            match self.connection.read(&mut buffer) {
                Ok(0) => panic!("the stream ended without {needle:?}:\n{}", self.seen),
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("reading the stream: {e}\n{}", self.seen),
            }
        }
        &self.seen
    }
}

/// The id and data of the first event whose data contains `needle`.
fn event_with<'a>(stream: &'a str, needle: &str) -> (&'a str, Value) {
    let mut id = "";
    for line in stream.lines() {
        if let Some(rest) = line.strip_prefix("id: ") {
            id = rest.trim();
        } else if let Some(data) = line.strip_prefix("data: ") {
            if data.contains(needle) {
                return (id, serde_json::from_str(data.trim()).expect("an event's data is JSON"));
            }
        }
    }
    panic!("no event with {needle:?} in:\n{stream}")
}

/// A tool call on A that asks the client (elicitation), read as a stream until the request.
fn elicitation_on(port: u16, session: &str) -> (Streamed, String, Value) {
    let headers = session_headers(session);
    let call = request(7, "tools/call", json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}}));
    let mut stream = Streamed::open(port, "POST", &borrowed(&headers), &call.to_string());
    assert_eq!(stream.status, 200, "{}", stream.seen);
    let seen = stream.wait_for("elicitation/create", WAIT).to_owned();
    let (event_id, elicitation) = event_with(&seen, "elicitation/create");
    assert_eq!(elicitation["params"]["message"], "Who are you?", "{elicitation}");
    (stream, event_id.to_owned(), elicitation["id"].clone())
}

#[test]
fn a_session_made_on_one_instance_is_served_and_answered_through_another() {
    let Some((_redis, _, [a, b])) = instances() else { return };
    let session = initialize(a.port);

    // B never saw the session: it serves it from the record A wrote.
    let (status, _, listed) = post(b.port, &session, &request(1, "tools/list", json!({})));
    assert_eq!(status, 200, "{listed}");
    assert!(listed.contains("test_elicitation"), "{listed}");

    // The tool runs on A and asks the client; the client's answer goes to B, which is not
    // waiting for it: it reaches A through the bus, and the tool finishes with it.
    let (mut stream, _, elicitation_id) = elicitation_on(a.port, &session);
    let answer = json!({"jsonrpc": "2.0", "id": elicitation_id,
        "result": {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}});
    let (status, _, body) = post(b.port, &session, &answer);
    assert_eq!(status, 202, "{body}");
    let seen = stream.wait_for("User response", WAIT).to_owned();
    let (_, result) = event_with(&seen, "User response");
    assert_eq!(result["id"], 7, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"ada@example.com"}"#,
        "{result}"
    );
}

#[test]
fn a_change_on_one_instance_reaches_the_stream_another_holds() {
    let Some((_redis, _, [a, b])) = instances() else { return };
    let session = initialize(a.port);
    let headers = session_headers(&session);
    let mut get = Streamed::open(b.port, "GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], "");
    assert_eq!(get.status, 200, "{}", get.seen);
    get.wait_for("retry:", WAIT);
    let trigger = request(2, "tools/call", json!({"name": "test_trigger_tool_change", "arguments": {}}));
    let (status, _, body) = process::http(a.port, "POST", "/mcp", &borrowed(&headers), &trigger.to_string());
    assert_eq!(status, 200, "{body}");
    get.wait_for("notifications/tools/list_changed", WAIT);
}

/// A `resources/subscribe` whose bus message B misses (every pub/sub connection dropped while A
/// answers it) still reaches B's copy once B is subscribed again (B reads the session's record):
/// the watched resource's updates (every 3 s) reach the `GET` stream B holds. Without that, B's
/// copy had no subscription and the stream heard nothing.
#[test]
fn a_subscription_made_while_the_bus_was_down_reaches_the_other_copy() {
    let Some((_redis, redis_port, [a, b])) = instances() else { return };
    let session = initialize(a.port);
    let mut get = Streamed::open(b.port, "GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], "");
    assert_eq!(get.status, 200, "{}", get.seen);
    get.wait_for("retry:", WAIT);
    let killed = cli(redis_port, &["CLIENT", "KILL", "TYPE", "pubsub"]).unwrap_or_default();
    assert_eq!(killed, "2", "both instances' bus subscriptions dropped");
    let subscribe = request(2, "resources/subscribe", json!({"uri": "test://watched-resource"}));
    let (status, _, body) = post(a.port, &session, &subscribe);
    assert_eq!(status, 200, "{body}");
    get.wait_for("notifications/resources/updated", WAIT);
    let (_, updated) = event_with(&get.seen, "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://watched-resource", "{updated}");
}

#[test]
fn a_delete_on_one_instance_ends_the_session_on_every_instance() {
    let Some((_redis, _, [a, b])) = instances() else { return };
    let session = initialize(a.port);
    let (status, _, body) = post(b.port, &session, &request(1, "ping", json!({})));
    assert_eq!(status, 200, "B adopts the session: {body}");
    let headers = session_headers(&session);
    let (status, _, body) = process::http(a.port, "DELETE", "/mcp", &borrowed(&headers), "");
    assert_eq!(status, 200, "{body}");
    for port in [a.port, b.port] {
        eventually_blocking("the session is gone on both instances", Duration::from_secs(5), || {
            let (status, _, body) = post(port, &session, &request(2, "ping", json!({})));
            if status == 404 {
                Ok(())
            } else {
                Err(format!("{status} {body}"))
            }
        });
    }
    let (status, _, _) = process::http(b.port, "DELETE", "/mcp", &borrowed(&headers), "");
    assert_eq!(status, 404, "deleted already");
}

#[test]
fn a_stream_whose_instance_died_ends_with_an_error_when_resumed_on_another() {
    let Some((_redis, redis_port, [a, b])) = instances() else { return };
    let session = initialize(a.port);
    let (stream, event_id, _) = elicitation_on(a.port, &session);
    // A writes its events to Redis as it sends them (not before): wait until this one is there
    // (a crash within that millisecond loses it, and resuming after it is then refused).
    let key = format!("mcpd:events:{session}:{}", event_id.split(':').next().unwrap());
    eventually_blocking("A wrote the event to Redis", WAIT, || {
        cli(redis_port, &["XLEN", &key]).as_deref() == Some("1")
    });
    drop(stream);
    drop(a); // killed: the tool call never gets its answer

    // B replays the stream from Redis and, once A's heartbeat has expired, ends the request.
    let mut resumed = Streamed::open(
        b.port,
        "GET",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session), ("Last-Event-ID", &event_id)],
        "",
    );
    assert_eq!(resumed.status, 200, "{}", resumed.seen);
    let seen = resumed.wait_for("stopped before answering", WAIT).to_owned();
    let (_, error) = event_with(&seen, "stopped before answering");
    assert_eq!(error["id"], 7, "the error answers the tool call: {error}");
    assert_eq!(error["error"]["code"], -32603, "{error}");
    assert!(!seen.contains("elicitation/create"), "events before Last-Event-ID are not replayed:\n{seen}");
    // And the session itself goes on, on B.
    let (status, _, body) = post(b.port, &session, &request(3, "ping", json!({})));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn with_redis_gone_a_session_that_cannot_be_looked_up_gets_503_naming_the_cause() {
    let Some((redis, _, [a, b])) = instances() else { return };
    let session = initialize(a.port);
    drop(redis);
    let (status, _, body) = post(b.port, &session, &request(1, "ping", json!({})));
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("cluster: Redis is unreachable"), "{body}");
    // A holds the session itself and keeps serving it.
    let (status, _, body) = post(a.port, &session, &request(2, "ping", json!({})));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_cancellation_sent_to_another_instance_stops_the_request_where_it_runs() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let script = "sleep 120 & echo $! > child.pid; echo $$ > shell.pid; wait";
    let (dir, root, file) = tasks::project(json!([tasks::command_tool("hang", script, "forbidden")]));
    let a = tasks::serve(&root, &file, &["-s", "--redis", &url]);
    let b = tasks::serve(&root, &file, &["-s", "--redis", &url]);
    let session = initialize(a.port);
    let headers = session_headers(&session);
    let call = request(7, "tools/call", json!({"name": "hang", "arguments": {}}));
    let _running = Streamed::send(a.port, "POST", &borrowed(&headers), &call.to_string());
    let read_pid = |name: &str| -> Option<u32> {
        std::fs::read_to_string(dir.path().join(name)).ok().and_then(|s| s.trim().parse().ok())
    };
    let (shell, child) =
        eventually_blocking("the command runs on A", WAIT, || read_pid("shell.pid").zip(read_pid("child.pid")));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "changed my mind"}});
    let (status, _, body) = post(b.port, &session, &cancel);
    assert_eq!(status, 202, "{body}");
    eventually_blocking("A killed the command (the cancel crossed the bus)", WAIT, || {
        tasks::is_dead(shell) && tasks::is_dead(child)
    });
}

#[test]
fn a_record_redis_lost_is_written_again_by_the_instance_using_the_session() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let serve = || HttpChild::spawn(&["serve", "-s", "--redis", &url, "--session-idle-timeout", "4"]);
    let (a, b) = (serve(), serve());
    let session = initialize(a.port);
    let key = format!("mcpd:session:{session}");
    assert_eq!(cli(redis_port, &["EXISTS", &key]).as_deref(), Some("1"));
    assert_eq!(cli(redis_port, &["FLUSHALL"]).as_deref(), Some("OK"), "Redis loses everything");
    let (status, _, _) = post(b.port, &session, &request(1, "ping", json!({})));
    assert_eq!(status, 404, "B cannot find the session any more");
    // A goes on using it; within a quarter of the idle time it writes the record again.
    eventually_blocking("A wrote the record again", Duration::from_secs(10), || {
        let (status, _, body) = post(a.port, &session, &request(2, "ping", json!({})));
        assert_eq!(status, 200, "{body}");
        cli(redis_port, &["EXISTS", &key]).as_deref() == Some("1")
    });
    let (status, _, body) = post(b.port, &session, &request(3, "ping", json!({})));
    assert_eq!(status, 200, "B finds it again: {body}");
}
