//! A session belongs to whoever opened it, through the real binary: another identity presenting
//! a leaked `Mcp-Session-Id` — POST (a request, a notification, an answer to the server's own
//! request), the standalone `GET`, a resumption with `Last-Event-ID`, `DELETE`, the 2024-11-05
//! `POST /messages` — gets exactly what an unknown session gets, the refusal is counted and
//! logged once, and the owner's session goes on. The same for two OAuth subjects (tokens of the
//! resource-server tests' authorization server), across three cluster instances sharing Redis
//! (directly, and round-robin behind nginx), and for what else a caller opens: another client's
//! task is unknown to it.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster_redis::{free_port, redis_installed, Redis};
use crate::support::eventually::eventually_blocking;
use crate::support::nginx::{self, Nginx};
use crate::support::oidc;
use crate::support::process::{self, HttpChild};

const DEV: &str = "dev-key-0123456789abcdef";
const CI: &str = "ci-key-0123456789abcdef";

/// An HTTP answer: status, headers and body.
type Answer = (u16, Vec<(String, String)>, String);

/// A request with `key` as a bearer token (2025-11-25), naming `session` when given.
fn send(port: u16, method: &str, key: &str, session: Option<&str>, extra: &[(&str, &str)], body: &str) -> Answer {
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
    headers.extend_from_slice(extra);
    process::http(port, method, "/mcp", &headers, body)
}

fn initialize(port: u16, key: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, answer) = send(port, "POST", key, None, &[], &body.to_string());
    assert_eq!(status, 200, "{answer}");
    let session = process::header_value(&headers, "mcp-session-id").expect("a session id").to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(send(port, "POST", key, Some(&session), &[], &initialized).0, 202);
    session
}

fn tools_list() -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string()
}

/// The status and head of a `GET /mcp` stream (read until its head only: the stream stays
/// open).
fn open_stream(port: u16, key: &str, session: &str, last_event_id: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nAccept: text/event-stream\r\nAuthorization: Bearer {key}\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n"
    );
    if let Some(id) = last_event_id {
        head.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let code = status.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut body = String::new();
    if code != 200 {
        // Error answers are short and close the connection.
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0 && line != "\r\n") {
            line.clear();
        }
        let _ = reader.take(4096).read_to_string(&mut body);
    }
    (code, body)
}

fn metric(port: u16, key: &str, name: &str) -> u64 {
    let bearer = format!("Bearer {key}");
    let (_, _, text) = process::http(port, "GET", "/metrics", &[("Authorization", &bearer)], "");
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0)
}

/// Every use of `session` by `intruder` answers as an unknown session does (status and body),
/// and `owner` still uses it.
fn every_use_by_another_identity_is_unknown(port: u16, owner: &str, intruder: &str, session: &str) {
    let unknown = "0123456789abcdef0123456789abcdef";
    let uses: [(&str, String); 4] = [
        ("a request", tools_list()),
        (
            "a notification",
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}).to_string(),
        ),
        (
            "an answer to the server's request",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "accept"}}).to_string(),
        ),
        ("a ping", json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string()),
    ];
    for (what, body) in &uses {
        let (status, _, answer) = send(port, "POST", intruder, Some(session), &[], body);
        let (unknown_status, _, unknown_answer) = send(port, "POST", intruder, Some(unknown), &[], body);
        assert_eq!((status, &answer), (unknown_status, &unknown_answer), "POST {what}");
        assert_eq!(status, 404, "{answer}");
    }
    for last_event_id in [None, Some("0-1")] {
        let refused = open_stream(port, intruder, session, last_event_id);
        assert_eq!(refused, open_stream(port, intruder, unknown, last_event_id), "GET {last_event_id:?}");
        assert_eq!(refused.0, 404);
    }
    let (status, _, answer) = send(port, "DELETE", intruder, Some(session), &[], "");
    let (unknown_status, _, unknown_answer) = send(port, "DELETE", intruder, Some(unknown), &[], "");
    assert_eq!((status, answer), (unknown_status, unknown_answer), "DELETE");
    // The owner's session is untouched.
    let (status, _, answer) = send(port, "POST", owner, Some(session), &[], &tools_list());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(open_stream(port, owner, session, None).0, 200);
}

fn access_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("access.json");
    let clients = json!({"clients": [
        {"name": "dev", "key": DEV, "tools": ["*"], "operator": true},
        {"name": "ci", "key": CI, "tools": ["echo", "slow"]}
    ]});
    std::fs::write(&path, clients.to_string()).unwrap();
    path
}

#[test]
fn a_session_opened_by_one_client_is_unknown_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    let slow = json!({"tools": [{"name": "slow", "description": "Sleeps.", "inputSchema": {"type": "object"},
        "argv": ["sleep", "2"], "taskSupport": "required"}]});
    std::fs::write(&tools, slow.to_string()).unwrap();
    let access = access_file(dir.path());
    let server = HttpChild::spawn(&[
        "serve",
        "-s",
        "--no-file-tools",
        "--access",
        access.to_str().unwrap(),
        "--tools",
        tools.to_str().unwrap(),
    ]);
    let port = server.port;
    let session = initialize(port, DEV);
    every_use_by_another_identity_is_unknown(port, DEV, CI, &session);
    assert!(metric(port, DEV, "mcpd_session_refusals_total") >= 7, "the refusals are counted");
    let warnings: Vec<String> =
        server.stderr_lines().into_iter().filter(|l| l.contains("refused a use by another identity")).collect();
    assert_eq!(warnings.len(), 1, "logged once per session: {warnings:?}");
    assert!(warnings[0].contains("client:ci") && !warnings[0].contains(CI), "{}", warnings[0]);
    // The client's own sessions are its own; the owner ends its session, after which it is gone.
    let mine = initialize(port, CI);
    assert_eq!(send(port, "POST", CI, Some(&mine), &[], &tools_list()).0, 200);
    assert_eq!(send(port, "DELETE", DEV, Some(&session), &[], "").0, 200);
    assert_eq!(send(port, "POST", DEV, Some(&session), &[], &tools_list()).0, 404);

    // A task is its creator's: another client's tasks/get is as for a task that does not exist.
    let stateless = |key: &str, method: &str, name: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params}).to_string();
        let extra = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method), ("Mcp-Name", name)];
        let bearer = format!("Bearer {key}");
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", bearer.as_str()),
        ];
        headers.extend_from_slice(&extra);
        let (_, _, answer) = process::http(port, "POST", "/mcp", &headers, &body);
        serde_json::from_str::<Value>(&answer).unwrap()
    };
    let created = stateless(DEV, "tools/call", "slow", json!({"name": "slow", "arguments": {}}));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let theirs = stateless(CI, "tasks/get", &task, json!({ "taskId": task }));
    let absent = stateless(CI, "tasks/get", "no-such-task", json!({"taskId": "no-such-task"}));
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
    assert_eq!(
        theirs["error"].to_string().replace(&task, "X"),
        absent["error"].to_string().replace("no-such-task", "X")
    );
    assert_eq!(stateless(DEV, "tasks/get", &task, json!({ "taskId": task }))["result"]["taskId"], task.as_str());
}

#[test]
fn a_2024_11_05_session_is_its_openers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let access = access_file(dir.path());
    let server = HttpChild::spawn(&["serve", "-s", "--no-file-tools", "--access", access.to_str().unwrap()]);
    let port = server.port;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!("GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {DEV}\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let endpoint = eventually_blocking("the endpoint event", Duration::from_secs(10), || {
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| e.to_string())?;
        line.trim().strip_prefix("data: ").filter(|d| d.starts_with("/messages")).map(str::to_owned).ok_or(line)
    });
    let post = |key: &str, path: &str| {
        let bearer = format!("Bearer {key}");
        let headers = [("Content-Type", "application/json"), ("Authorization", bearer.as_str())];
        let (status, _, body) = process::http(port, "POST", path, &headers, &tools_list());
        (status, body)
    };
    let refused = post(CI, &endpoint);
    assert_eq!(refused, post(CI, "/messages?sessionId=0123456789abcdef0123456789abcdef"), "as an unknown session");
    assert_eq!(refused.0, 404);
    assert_eq!(post(DEV, &endpoint).0, 202);
}

#[test]
fn a_session_opened_by_one_oauth_subject_is_unknown_to_another() {
    let Some(provider) = oidc::spawn_provider() else { return };
    let server = HttpChild::spawn(&["serve", "-s", "--no-file-tools", "--auth-issuer", provider.issuer()]);
    let resource = format!("http://127.0.0.1:{}/mcp", server.port);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |sub: &str, exp: u64| {
        let claims = json!({"iss": provider.issuer(), "aud": resource, "exp": now + exp, "sub": sub, "scope": "mcp"});
        provider.mint("k1.pem", "k1", &claims)
    };
    let (alice, bob) = (token("alice", 300), token("bob", 300));
    let session = initialize(server.port, &alice);
    every_use_by_another_identity_is_unknown(server.port, &alice, &bob, &session);
    // A new token of the same subject (a refresh) keeps using the session.
    let refreshed = token("alice", 600);
    assert_ne!(refreshed, alice);
    assert_eq!(send(server.port, "POST", &refreshed, Some(&session), &[], &tools_list()).0, 200);
}

#[test]
fn cluster_instances_serve_a_session_only_to_its_owner() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let dir = tempfile::tempdir().unwrap();
    let access = access_file(dir.path());
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let instances: Vec<HttpChild> = (0..3)
        .map(|_| {
            HttpChild::spawn(&[
                "serve",
                "-s",
                "--no-file-tools",
                "--access",
                access.to_str().unwrap(),
                "--redis",
                &redis,
            ])
        })
        .collect();
    let session = initialize(instances[0].port, DEV);
    // Another instance adopts the session for its owner, and refuses it to anyone else.
    for instance in &instances[1..] {
        every_use_by_another_identity_is_unknown(instance.port, DEV, CI, &session);
    }
    assert_eq!(send(instances[2].port, "DELETE", CI, Some(&session), &[], "").0, 404);
    assert_eq!(send(instances[2].port, "DELETE", DEV, Some(&session), &[], "").0, 200);
    for instance in &instances {
        eventually_blocking("the session ended everywhere", Duration::from_secs(10), || {
            match send(instance.port, "POST", DEV, Some(&session), &[], &tools_list()) {
                (404, _, _) => Ok(()),
                (status, _, body) => Err(format!("{status}: {body}")),
            }
        });
    }
}

#[test]
fn through_nginx_every_instance_serves_a_session_only_to_its_owner() {
    if !redis_installed() || !nginx::installed() {
        return;
    }
    let redis_port = free_port();
    let _redis = Redis::start(redis_port);
    let dir = tempfile::tempdir().unwrap();
    let access = access_file(dir.path());
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let instances: Vec<HttpChild> = (0..3)
        .map(|_| {
            HttpChild::spawn(&[
                "serve",
                "-s",
                "--no-file-tools",
                "--access",
                access.to_str().unwrap(),
                "--redis",
                &redis,
            ])
        })
        .collect();
    let ports: Vec<u16> = instances.iter().map(|i| i.port).collect();
    let proxy = Nginx::start(&ports);
    let session = initialize(proxy.port, DEV);
    // Round-robin spreads each round's requests over the three instances: whichever answers,
    // every use by `ci` is an unknown session's, and `dev` goes on using it.
    const ROUNDS: u64 = 6;
    for _ in 0..ROUNDS {
        every_use_by_another_identity_is_unknown(proxy.port, DEV, CI, &session);
    }
    // Each round is seven refused uses (four POSTs, two GETs, one DELETE), each counted once by
    // the instance that answered it.
    let counts: Vec<u64> = ports.iter().map(|&p| metric(p, DEV, "mcpd_session_refusals_total")).collect();
    assert_eq!(counts.iter().sum::<u64>(), 7 * ROUNDS, "refusals per instance: {counts:?}");
    assert!(counts.iter().all(|&c| c >= 1), "every instance refused some use: {counts:?}");
    assert_eq!(send(proxy.port, "DELETE", DEV, Some(&session), &[], "").0, 200);
    for &port in &ports {
        eventually_blocking("the session ended everywhere", Duration::from_secs(10), || {
            match send(port, "POST", DEV, Some(&session), &[], &tools_list()) {
                (404, _, _) => Ok(()),
                (status, _, body) => Err(format!("{status}: {body}")),
            }
        });
    }
}
