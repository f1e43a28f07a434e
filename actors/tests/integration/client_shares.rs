//! One client cannot lock out the others, through the real binary: each identity has a share of
//! sessions, open streams and requests in flight; a client past its share gets `429` with
//! `Retry-After` and a JSON-RPC error naming the share while another client goes on; the default
//! share is a quarter of the caps; idle sessions of the largest holder make room when the
//! operator allows it; and in cluster mode a share is counted across instances.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster_redis::{free_port, redis_installed, Redis};
use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};

const DEV: &str = "dev-key-0123456789abcdef";
const CI: &str = "ci-key-0123456789abcdef";
const OPS: &str = "ops-key-0123456789abcdef";

type Answer = (u16, Vec<(String, String)>, String);

fn post(port: u16, key: &str, session: Option<&str>, body: &Value) -> Answer {
    let bearer = format!("Bearer {key}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Authorization", bearer.as_str()),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    process::http(port, "POST", "/mcp", &headers, &body.to_string())
}

fn initialize(port: u16, key: &str) -> Result<String, Answer> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let answer = post(port, key, None, &body);
    match process::header_value(&answer.1, "mcp-session-id") {
        Some(id) if answer.0 == 200 => Ok(id.to_owned()),
        _ => Err(answer),
    }
}

/// Asserts a refusal of the caller's share: 429, `Retry-After`, the error naming `what`.
fn refused(answer: &Answer, what: &str) {
    let (status, headers, body) = answer;
    assert_eq!(*status, 429, "{body}");
    assert_eq!(process::header_value(headers, "retry-after"), Some("1"));
    let error: Value = serde_json::from_str(body).unwrap();
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("Too many {what}: client \"ci\"")) && message.contains("its share"),
        "{message}"
    );
}

/// A standalone `GET /mcp` stream held open until the returned connection drops: its status.
fn open_stream(port: u16, key: &str, session: &str) -> (u16, TcpStream) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {key}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream.try_clone().unwrap()).read_line(&mut line).unwrap();
    (line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0), stream)
}

fn call(port: u16, key: &str, session: &str, tool: &str) -> Answer {
    post(
        port,
        key,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": {}}}),
    )
}

fn project(ci_limits: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let clients = json!({"clients": [
        {"name": "dev", "key": DEV, "tools": ["*"], "operator": true},
        {"name": "ci", "key": CI, "tools": ["*"], "limits": ci_limits},
        {"name": "ops", "key": OPS, "tools": ["*"], "limits": {"sessions": 1}}
    ]});
    std::fs::write(dir.path().join("access.json"), clients.to_string()).unwrap();
    let slow = json!({"tools": [{"name": "slow", "description": "Sleeps.", "inputSchema": {"type": "object"}, "argv": ["sleep", "2"]}]});
    std::fs::write(dir.path().join("tools.json"), slow.to_string()).unwrap();
    dir
}

fn serve(dir: &std::path::Path, extra: &[&str]) -> HttpChild {
    let mut cmd = process::mcpd_command();
    cmd.current_dir(dir).args(["serve", "-s", "--no-file-tools", "--access", "access.json", "--tools", "tools.json"]);
    cmd.args(extra);
    HttpChild::spawn_command(cmd)
}

fn metric(port: u16, line_start: &str) -> Option<String> {
    let (_, _, text) = process::http(port, "GET", "/metrics", &[("Authorization", &format!("Bearer {DEV}"))], "");
    text.lines().find(|l| l.starts_with(line_start)).map(str::to_owned)
}

#[test]
fn a_client_past_its_shares_is_refused_while_another_goes_on() {
    let dir = project(json!({"sessions": 2, "streams": 1, "inFlight": 1}));
    let server = serve(dir.path(), &["--max-sessions", "40"]);
    let port = server.port;

    // Sessions.
    let ci: Vec<String> = (0..2).map(|_| initialize(port, CI).unwrap()).collect();
    refused(&initialize(port, CI).unwrap_err(), "sessions");
    let dev: Vec<String> = (0..5).map(|_| initialize(port, DEV).unwrap()).collect();
    assert_eq!(
        metric(port, "mcpd_client_held{client=\"ci\",kind=\"sessions\"}").as_deref(),
        Some("mcpd_client_held{client=\"ci\",kind=\"sessions\"} 2")
    );

    // Streams: one open; the second refused; another client's are not.
    let (status, held) = open_stream(port, CI, &ci[0]);
    assert_eq!(status, 200);
    let (status, _) = open_stream(port, CI, &ci[1]);
    assert_eq!(status, 429);
    let (status, _dev_stream) = open_stream(port, DEV, &dev[0]);
    assert_eq!(status, 200);
    drop(held);
    eventually_blocking("the stream's share comes back", Duration::from_secs(10), || {
        match open_stream(port, CI, &ci[1]) {
            (200, _) => Ok(()),
            (status, _) => Err(status),
        }
    });

    // Requests in flight: one slow call running, the next refused; another client's runs.
    let (ci0, ci1) = (ci[0].clone(), ci[1].clone());
    let running = std::thread::spawn(move || call(port, CI, &ci0, "slow"));
    eventually_blocking("the slow call holds the share", Duration::from_secs(10), || {
        let held = metric(port, "mcpd_client_held{client=\"ci\",kind=\"inFlight\"}").unwrap_or_default();
        if held.ends_with(" 1") {
            Ok(())
        } else {
            Err(held)
        }
    });
    refused(&call(port, CI, &ci1, "echo"), "requests in flight");
    assert_eq!(call(port, DEV, &dev[1], "echo").0, 200);
    let slow = running.join().unwrap();
    assert_eq!(slow.0, 200, "{}", slow.2);
    assert_eq!(call(port, CI, &ci1, "echo").0, 200, "given back when the call ended");

    // Ending a session gives its share back.
    let bearer = format!("Bearer {CI}");
    let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", ci[1].as_str())];
    assert_eq!(process::http(port, "DELETE", "/mcp", &headers, "").0, 200);
    eventually_blocking("a session's share comes back", Duration::from_secs(10), || {
        initialize(port, CI).map_err(|a| a.0)
    });
    let (_, _, status) = process::http(port, "GET", "/status", &[("Authorization", &format!("Bearer {DEV}"))], "");
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["shares"]["defaults"]["sessions"], 10, "a quarter of --max-sessions: {status}");
    assert_eq!(status["access"]["clients"][1]["limits"], json!({"sessions": 2, "streams": 1, "inFlight": 1}));
}

#[test]
fn the_default_share_is_a_quarter_and_idle_sessions_of_the_largest_holder_make_room() {
    let dir = project(json!({"sessions": 3}));
    // Without eviction: a full server refuses; the default share of a client without limits is
    // a quarter of the cap.
    let server = serve(dir.path(), &["--max-sessions", "4"]);
    let _dev = initialize(server.port, DEV).unwrap();
    let answer = initialize(server.port, DEV).unwrap_err();
    assert!(answer.2.contains("client \\\"dev\\\" holds 1, its share"), "{}", answer.2);
    let _ci: Vec<String> = (0..3).map(|_| initialize(server.port, CI).unwrap()).collect();
    let full = initialize(server.port, OPS).unwrap_err();
    assert_eq!(full.0, 503, "{}", full.2);
    drop(server);

    // With eviction: the oldest idle session of the largest holder (ci) makes room; dev's and
    // ci's others stay.
    let server = serve(dir.path(), &["--max-sessions", "4", "--evict-idle-sessions"]);
    let port = server.port;
    let dev = initialize(port, DEV).unwrap();
    let ci: Vec<String> = (0..3).map(|_| initialize(port, CI).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(1200));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    for session in &ci[1..] {
        assert_eq!(post(port, CI, Some(session), &list).0, 200);
    }
    assert_eq!(post(port, DEV, Some(&dev), &list).0, 200);
    std::thread::sleep(Duration::from_millis(1200));
    let ops = initialize(port, OPS).expect("room was made");
    assert_eq!(post(port, OPS, Some(&ops), &list).0, 200);
    assert_eq!(post(port, CI, Some(&ci[0]), &list).0, 404, "ci's least recently used session ended");
    assert_eq!(post(port, CI, Some(&ci[1]), &list).0, 200);
    assert_eq!(post(port, DEV, Some(&dev), &list).0, 200, "dev's session stays");
}

#[test]
fn a_share_is_counted_across_cluster_instances() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let dir = project(json!({"sessions": 2}));
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let instances: Vec<HttpChild> = (0..3).map(|_| serve(dir.path(), &["--redis", &redis])).collect();
    initialize(instances[0].port, CI).unwrap();
    initialize(instances[1].port, CI).unwrap();
    let answer = eventually_blocking("the third instance counts the other two", Duration::from_secs(15), || {
        match initialize(instances[2].port, CI) {
            Ok(session) => Err(format!("opened {session}")),
            Err(answer) => Ok(answer),
        }
    });
    refused(&answer, "sessions");
    initialize(instances[2].port, DEV).expect("another client is unaffected");
}
