//! Cluster mode meets the access file and the virtual servers: three `mcpd serve --redis`
//! instances (Debian's `redis-server` as a child) share one access-file client's rate limit — the
//! calls admitted across the three are the bucket's, not three times it, and every refusal is
//! `429` with `Retry-After`; with Redis gone each instance's own bucket decides (counted and
//! logged). A session opened on a virtual server's endpoint of one instance is served on the same
//! endpoint of another, and is unknown on `/mcp` there. Skipped, saying so, without `redis-server`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster_redis::{free_port, redis_installed, Redis};
use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, header_value, HttpChild};

const ADMIN: &str = "admin-key-rates-0123";
const CI: &str = "ci-key-rates-0123";
const NOTICE: Duration = Duration::from_secs(20);
const BURST: usize = 4;

/// A stateless (2026-07-28) `tools/call` of `echo` on `path` with `key`: status, `Retry-After`,
/// body.
fn call(port: u16, path: &str, key: &str) -> (u16, Option<String>, Value) {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}});
    let bearer = format!("Bearer {key}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    let (code, headers, answer) = process::http(port, "POST", path, &headers, &body.to_string());
    (code, header_value(&headers, "retry-after").map(str::to_owned), serde_json::from_str(&answer).unwrap_or_default())
}

fn status_of(port: u16) -> Value {
    let bearer = format!("Bearer {ADMIN}");
    let (_, _, body) = process::http(port, "GET", "/status", &[("Authorization", &bearer)], "");
    serde_json::from_str(&body).unwrap_or_default()
}

fn metric(port: u16, series: &str) -> f64 {
    let bearer = format!("Bearer {ADMIN}");
    let (_, _, body) = process::http(port, "GET", "/metrics", &[("Authorization", &bearer)], "");
    body.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0.0)
}

/// A 2025-11-25 request on `path` (in `session`, or `initialize` without one): status, session
/// id, body.
fn legacy(port: u16, path: &str, session: Option<&str>, method: &str, params: Value) -> (u16, Option<String>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let bearer = format!("Bearer {ADMIN}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    let (code, headers, answer) = process::http(port, "POST", path, &headers, &body.to_string());
    let id = header_value(&headers, "mcp-session-id").map(str::to_owned);
    (code, id, serde_json::from_str(&answer).unwrap_or_default())
}

#[test]
fn three_instances_share_one_bucket_per_client_and_fall_back_to_their_own_without_redis() {
    if !redis_installed() {
        return;
    }
    let redis_port = free_port();
    let redis = Redis::start(redis_port);
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    let clients = json!({"clients": [
        {"name": "ci", "key": CI, "tools": ["*"], "rateLimit": {"perMinute": 1, "burst": BURST}}
    ]});
    std::fs::write(&access, clients.to_string()).unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(&servers, json!({"mcpServers": {}, "virtualServers": {"docs": {"tools": ["echo"]}}}).to_string())
        .unwrap();
    let args = [
        "serve",
        "-s",
        "--no-file-tools",
        "--redis",
        &url,
        "--access",
        access.to_str().unwrap(),
        "--servers",
        servers.to_str().unwrap(),
        "--key",
        ADMIN,
    ];
    let instances: Vec<HttpChild> = (0..3).map(|_| HttpChild::spawn(&args)).collect();
    for instance in &instances {
        eventually_blocking("the instance reaches Redis", NOTICE, || {
            let status = status_of(instance.port);
            (status["cluster"]["up"] == true).then_some(()).ok_or(status)
        });
    }

    // Round-robin over the three: the bucket's burst is admitted, not three times it.
    let mut admitted = 0;
    for round in 0..(BURST * 3) {
        let (code, retry_after, answer) = call(instances[round % 3].port, "/mcp", CI);
        match code {
            200 => {
                assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
                admitted += 1;
            }
            429 => {
                let retry: u64 = retry_after.as_deref().and_then(|r| r.parse().ok()).unwrap_or(0);
                assert!((1..=60).contains(&retry), "Retry-After in whole seconds: {retry_after:?}");
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.starts_with("Too many requests: client \"ci\" is over its rate limit"), "{answer}");
            }
            other => panic!("unexpected {other}: {answer}"),
        }
    }
    assert_eq!(admitted, BURST, "one bucket across the cluster");
    let limited: f64 =
        instances.iter().map(|i| metric(i.port, r#"mcpd_client_calls_total{client="ci",outcome="limited"}"#)).sum();
    assert_eq!(limited, (BURST * 2) as f64);
    let bucket = crate::cluster_redis::cli(redis_port, &["HGET", "mcpd:rate:ci", "tokens"]).unwrap();
    assert!(bucket.parse::<f64>().unwrap() < 1.0, "the bucket in Redis is spent: {bucket}");
    // A virtual server's endpoint is one more way in, to the same bucket.
    assert_eq!(call(instances[0].port, "/mcp/docs", CI).0, 429);

    // A session opened on /mcp/docs of one instance: served on /mcp/docs of another, unknown on /mcp.
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let (code, session, answer) = legacy(instances[0].port, "/mcp/docs", None, "initialize", init);
    assert_eq!(code, 200, "{answer}");
    let session = session.expect("a session id");
    let (code, _, listed) = legacy(instances[1].port, "/mcp/docs", Some(&session), "tools/list", json!({}));
    assert_eq!(code, 200, "{listed}");
    assert_eq!(listed["result"]["tools"].as_array().map(|t| t.len()), Some(1), "the view's one tool: {listed}");
    let (code, _, elsewhere) = legacy(instances[2].port, "/mcp", Some(&session), "tools/list", json!({}));
    assert_eq!(code, 404, "{elsewhere}");

    // Redis gone: each instance's own bucket decides (its burst unspent), counted and logged.
    drop(redis);
    let (code, _, answer) = call(instances[0].port, "/mcp", CI);
    assert_eq!(code, 200, "the instance's own bucket admits: {answer}");
    assert!(metric(instances[0].port, "mcpd_rate_limit_fallbacks_total") >= 1.0);
    assert!(status_of(instances[0].port)["cluster"]["rateLimitFallbacks"].as_u64() >= Some(1));
    assert!(
        instances[0].stderr_lines().iter().any(|l| l.contains("rate limits fall back to each instance's own bucket")),
        "{:?}",
        instances[0].stderr_lines()
    );
    let mut own = 1;
    while call(instances[0].port, "/mcp", CI).0 == 200 {
        own += 1;
        assert!(own <= BURST, "the instance's own bucket holds its burst");
    }
    assert_eq!(own, BURST, "the instance's own burst, then 429");
}
