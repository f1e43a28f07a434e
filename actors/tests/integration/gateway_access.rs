//! The gateway for operators, through the real binary: per-client access (`--access FILE`:
//! each client's key, its tools, its rate limit, its call counts; the file reloaded on SIGHUP,
//! a broken edit keeping the policy in force), the official Python SDK as a restricted client,
//! and the observability of the hop (per-remote latency and errors by kind in `/metrics`, the
//! caller's W3C `traceparent` forwarded to the remote, the caller's own capabilities declared
//! to a stateless remote).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::mock_http::{MockServer, Recorded, Reply};
use crate::support::process::{self, HttpChild};
use crate::support::python;

const ADMIN: &str = "admin-key-0123456789";
const ALPHA: &str = "alpha-key-0123456789";
const BETA: &str = "beta-key-0123456789";

/// A POST of one JSON-RPC request (2025-11-25, no session) with `key` as a bearer token (or none).
fn rpc(
    child: &HttpChild,
    key: Option<&str>,
    id: u64,
    method: &str,
    params: Value,
) -> (u16, Vec<(String, String)>, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let bearer = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    let (code, headers, answer) = process::http(child.port, "POST", "/mcp", &headers, &body);
    (code, headers, serde_json::from_str(&answer).unwrap_or(Value::Null))
}

/// The tool names `key` sees.
fn tool_names(child: &HttpChild, key: &str) -> Vec<String> {
    let (code, _, answer) = rpc(child, Some(key), 1, "tools/list", json!({}));
    assert_eq!(code, 200, "{answer}");
    answer["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// A GET with the admin key.
fn get(child: &HttpChild, path: &str) -> String {
    let bearer = format!("Bearer {ADMIN}");
    let (code, _, body) = process::http(child.port, "GET", path, &[("Authorization", &bearer)], "");
    assert_eq!(code, 200, "{path}: {body}");
    body
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// A gateway (`--servers` with one remote mcpd over HTTP, `--access`, `--key`) once its remote
/// is up, and the remote.
fn gateway_with_access(dir: &Path, access: &Value) -> (HttpChild, HttpChild) {
    let remote = HttpChild::spawn(&["--no-file-tools"]);
    let servers = dir.join("servers.json");
    write_json(&servers, &json!({"mcpServers": {"local": {"url": remote.url()}}}));
    let access_file = dir.join("access.json");
    write_json(&access_file, access);
    let mut cmd = process::mcpd_command();
    cmd.env("MCPD_TEST_BETA_KEY", BETA).args([
        "--no-file-tools",
        "--servers",
        servers.to_str().unwrap(),
        "--access",
        access_file.to_str().unwrap(),
        "--key",
        ADMIN,
    ]);
    let gateway = HttpChild::spawn_command(cmd);
    eventually_blocking("the remote is up", Duration::from_secs(10), || {
        let status: Value = serde_json::from_str(&get(&gateway, "/status")).unwrap_or_default();
        if status["remotes"][0]["up"] == true {
            Ok(())
        } else {
            Err(status)
        }
    });
    (gateway, remote)
}

fn access_file(alpha_tools: &[&str]) -> Value {
    json!({"clients": [
        {"name": "alpha", "key": ALPHA, "tools": alpha_tools},
        {"name": "beta", "keyEnv": "MCPD_TEST_BETA_KEY", "tools": ["local__time"],
         "rateLimit": {"perMinute": 1, "burst": 2}}
    ]})
}

/// Two clients of an access file over a gateway: each sees and may call only its globs (another
/// tool is unknown in the very words of a tool that does not exist); a wrong key is 401; a
/// client past its rate limit gets 429 with Retry-After; `/metrics` counts calls per client and
/// outcome; the file edited and SIGHUP changes what a client sees, a broken edit keeps it.
#[test]
fn access_file_clients_see_call_and_are_limited_by_their_own_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (gateway, _remote) = gateway_with_access(dir.path(), &access_file(&["local__e*", "echo"]));

    // Who may come in.
    let (code, headers, _) = rpc(&gateway, None, 1, "tools/list", json!({}));
    assert_eq!(code, 401);
    assert_eq!(process::header_value(&headers, "www-authenticate"), Some("Bearer"));
    assert_eq!(rpc(&gateway, Some("wrong-key"), 1, "tools/list", json!({})).0, 401);

    // What each sees: its globs; the --key caller everything.
    assert_eq!(tool_names(&gateway, ALPHA), ["echo", "local__echo"]);
    assert_eq!(tool_names(&gateway, BETA), ["local__time"]);
    assert_eq!(tool_names(&gateway, ADMIN), ["echo", "local__echo", "local__time", "time"]);

    // What alpha may call; a hidden tool is as unknown as one that does not exist.
    let (code, _, answer) =
        rpc(&gateway, Some(ALPHA), 2, "tools/call", json!({"name": "local__echo", "arguments": {"text": "hi"}}));
    assert_eq!((code, &answer["result"]["content"][0]["text"]), (200, &json!("hi")), "{answer}");
    let (hidden_code, _, hidden) =
        rpc(&gateway, Some(ALPHA), 3, "tools/call", json!({"name": "local__time", "arguments": {}}));
    let (absent_code, _, absent) =
        rpc(&gateway, Some(ALPHA), 3, "tools/call", json!({"name": "local__nope", "arguments": {}}));
    assert_eq!(hidden_code, absent_code);
    assert!(hidden["error"].is_object(), "{hidden}");
    assert_eq!(hidden["error"]["code"], absent["error"]["code"]);
    assert_eq!(
        hidden["error"]["message"].as_str().unwrap().replace("local__time", "X"),
        absent["error"]["message"].as_str().unwrap().replace("local__nope", "X"),
    );

    // The stateless wire (2026-07-28) answers alike: its list, private to the caller; a hidden
    // tool unknown; beta's first call spends one of its burst.
    let stateless = |key: &str, id: u64, method: &str, name: Option<&str>| {
        let mut params = json!({"_meta": crate::support::server::modern_meta()});
        let mut headers = vec![
            ("Content-Type", "application/json".to_owned()),
            ("MCP-Protocol-Version", "2026-07-28".to_owned()),
            ("Mcp-Method", method.to_owned()),
            ("Authorization", format!("Bearer {key}")),
        ];
        if let Some(name) = name {
            params["name"] = json!(name);
            params["arguments"] = json!({});
            headers.push(("Mcp-Name", name.to_owned()));
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, &body);
        (code, serde_json::from_str::<Value>(&answer).unwrap_or(Value::Null))
    };
    let (code, listed) = stateless(ALPHA, 4, "tools/list", None);
    assert_eq!(code, 200, "{listed}");
    let listed_names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(listed_names, ["echo", "local__echo"], "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    let (_, hidden) = stateless(ALPHA, 5, "tools/call", Some("local__time"));
    assert_eq!(hidden["error"]["message"], "Unknown tool: local__time", "{hidden}");
    let (code, first) = stateless(BETA, 6, "tools/call", Some("local__time"));
    assert_eq!(code, 200, "{first}");
    assert!(first["result"].is_object(), "{first}");

    // Beta's rate limit: a burst of two, then 429 with Retry-After (one call a minute: 60 s).
    for id in 11..12 {
        let (code, _, answer) =
            rpc(&gateway, Some(BETA), id, "tools/call", json!({"name": "local__time", "arguments": {}}));
        assert_eq!(code, 200, "{answer}");
        assert!(answer["result"].is_object(), "{answer}");
    }
    let (code, headers, answer) =
        rpc(&gateway, Some(BETA), 12, "tools/call", json!({"name": "local__time", "arguments": {}}));
    assert_eq!(code, 429, "{answer}");
    let retry: u64 = process::header_value(&headers, "retry-after").unwrap().parse().unwrap();
    assert!((59..=60).contains(&retry), "{retry}");
    assert_eq!(answer["id"], 12, "a JSON-RPC error answering the request: {answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("\"beta\" is over its rate limit"), "{answer}");
    // Listing is not a call: beta still sees its tools.
    assert_eq!(tool_names(&gateway, BETA), ["local__time"]);
    let (code, _, _) =
        rpc(&gateway, Some(ADMIN), 13, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    assert_eq!(code, 200);

    let metrics = get(&gateway, "/metrics");
    for line in [
        r#"mcpd_client_calls_total{client="alpha",outcome="ok"} 1"#,
        r#"mcpd_client_calls_total{client="alpha",outcome="denied"} 2"#,
        r#"mcpd_client_calls_total{client="alpha",outcome="error"} 1"#,
        r#"mcpd_client_calls_total{client="beta",outcome="ok"} 2"#,
        r#"mcpd_client_calls_total{client="beta",outcome="limited"} 1"#,
        r#"mcpd_client_calls_total{client="-",outcome="ok"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "missing {line:?} in\n{metrics}");
    }
    let status: Value = serde_json::from_str(&get(&gateway, "/status")).unwrap();
    assert_eq!(status["access"]["clients"][0]["name"], "alpha", "{status}");
    assert_eq!(status["access"]["clients"][1]["auth"], "keyEnv", "{status}");
    assert_eq!(status["access"]["clients"][1]["calls"]["limited"], 1, "{status}");
    assert!(!status.to_string().contains(ALPHA) && !status.to_string().contains(BETA), "no key in the status");

    // The file edited, then SIGHUP: alpha sees what the new file says.
    write_json(&dir.path().join("access.json"), &access_file(&["local__time"]));
    gateway.signal("HUP");
    eventually_blocking("alpha's tools changed", Duration::from_secs(10), || {
        let names = tool_names(&gateway, ALPHA);
        if names == ["local__time"] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    });
    // A broken edit: the policy in force stays, and the status says why.
    std::fs::write(dir.path().join("access.json"), r#"{"clients": [{"name": "alpha", "key": "k", "tools": "all"}]}"#)
        .unwrap();
    gateway.signal("HUP");
    let error = eventually_blocking("the reload failed", Duration::from_secs(10), || {
        let status: Value = serde_json::from_str(&get(&gateway, "/status")).unwrap_or_default();
        match status["access"]["lastError"].as_str() {
            Some(error) => Ok(error.to_owned()),
            None => Err(status),
        }
    });
    assert!(error.ends_with("client \"alpha\": \"tools\" must be an array of name patterns"), "{error}");
    assert_eq!(tool_names(&gateway, ALPHA), ["local__time"]);
    assert_eq!(rpc(&gateway, Some("k"), 1, "tools/list", json!({})).0, 401, "the broken file's key admits nobody");
    let metrics = get(&gateway, "/metrics");
    assert!(
        metrics.lines().any(|l| l == r#"mcpd_client_calls_total{client="alpha",outcome="ok"} 1"#),
        "counts survive a reload:\n{metrics}"
    );
}

/// The official Python SDK as a restricted client (its key in `X-API-Key`): it lists only its
/// tools, and its call of another tool fails as an unknown tool.
#[test]
fn python_client_with_a_key_sees_and_calls_only_its_tools() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (gateway, _remote) = gateway_with_access(dir.path(), &access_file(&["local__e*", "echo"]));
    let mut cmd = std::process::Command::new(python);
    cmd.env("MCPD_TEST_KEY", ALPHA)
        .arg(crate::support::interop_script("py_gateway_client.py"))
        .arg(gateway.url())
        .arg(r#"local__echo={"text":"restricted"}"#)
        .arg(r#"local__time={}"#);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["tools"], json!(["echo", "local__echo"]), "{report}");
    assert_eq!(report["calls"][0]["result"]["content"][0]["text"], "restricted", "{report}");
    let refused = &report["calls"][1];
    let unknown = refused["error"]["message"].as_str().or_else(|| refused["result"]["content"][0]["text"].as_str());
    assert!(unknown.is_some_and(|m| m.contains("Unknown tool: local__time")), "{refused}");
}

/// A scripted stateless remote: `trace` answers, `broken` is an HTTP 500.
fn traced_remote() -> MockServer {
    MockServer::start(|request: &Recorded| match request.rpc_method().as_deref() {
        Some("server/discover") => Reply::result(
            &request.rpc_id(),
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "traced", "version": "1"},
                "resultType": "complete"
            }),
        ),
        Some("tools/list") => Reply::result(
            &request.rpc_id(),
            json!({"tools": [
                {"name": "trace", "inputSchema": {"type": "object"}},
                {"name": "broken", "inputSchema": {"type": "object"}}
            ], "resultType": "complete"}),
        ),
        Some("tools/call") if request.params()["name"] == "broken" => Reply::text(500, "text/plain", "boom"),
        Some("tools/call") => Reply::result(
            &request.rpc_id(),
            json!({"content": [{"type": "text", "text": "traced"}], "isError": false, "resultType": "complete"}),
        ),
        _ => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
    })
}

/// The hop observed: the caller's `traceparent` and `tracestate` reach the remote (as headers
/// and in `_meta`), and so do the capabilities the caller declared (those the gateway forwards);
/// each call shows in the remote's latency histogram; failures are counted by
/// kind — an HTTP error, then the remote gone (a connection refused).
#[test]
fn the_hop_is_traced_timed_and_its_errors_counted_by_kind() {
    let remote = traced_remote();
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    write_json(&servers, &json!({"mcpServers": {"traced": {"url": remote.url(), "timeout": 5}}}));
    let gateway = HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    eventually_blocking("the remote is up", Duration::from_secs(10), || {
        let (_, _, body) = process::http(gateway.port, "GET", "/status", &[], "");
        let status: Value = serde_json::from_str(&body).unwrap_or_default();
        if status["remotes"][0]["tools"] == 2 {
            Ok(())
        } else {
            Err(status)
        }
    });
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "traced__trace", "arguments": {}}});
    let headers = [
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("traceparent", parent),
        ("tracestate", "rojo=00f067aa0ba902b7"),
    ];
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("traced"), "{answer}");
    let call = remote.requests().into_iter().find(|r| r.rpc_method().as_deref() == Some("tools/call")).unwrap();
    assert_eq!(call.header("traceparent"), Some(parent), "{:?}", call.headers);
    assert_eq!(call.header("tracestate"), Some("rojo=00f067aa0ba902b7"));
    assert_eq!(call.params()["_meta"]["traceparent"], parent, "{:?}", call.json());
    // The remote is told what this caller can be asked: a caller that declared nothing, nothing
    // (the tasks and MCP Apps extensions are the gateway's own).
    let tasks_only = json!({"extensions": {"io.modelcontextprotocol/tasks": {},
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    assert_eq!(call.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"], tasks_only, "{:?}", call.json());
    // A stateless caller's own elicitation capability (its modes kept) is passed on, what the
    // gateway does not forward (experimental) is not.
    let declared = json!({"elicitation": {"form": {}, "url": {}}, "experimental": {"x": {}}});
    let stateless = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "traced__trace", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": declared}
    }});
    let stateless_headers = [
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "traced__trace"),
    ];
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &stateless_headers, &stateless.to_string());
    assert_eq!(code, 200, "{answer}");
    let call = remote.requests().into_iter().rfind(|r| r.rpc_method().as_deref() == Some("tools/call")).unwrap();
    assert_eq!(
        call.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}, "url": {}}, "extensions": tasks_only["extensions"]}),
        "{:?}",
        call.json()
    );
    // A call without a trace context sends none.
    let plain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "traced__broken", "arguments": {}}});
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers[..2], &plain.to_string());
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("\"isError\":true"), "an HTTP error is the tool's failure: {answer}");
    let broken = remote.requests().into_iter().filter(|r| r.rpc_method().as_deref() == Some("tools/call")).nth(2);
    assert_eq!(broken.unwrap().header("traceparent"), None);
    // The remote goes away: the next call is refused at connect.
    drop(remote);
    let again = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "traced__trace", "arguments": {}}});
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers[..2], &again.to_string());
    assert_eq!(code, 200, "{answer}");
    assert!(answer.contains("\"isError\":true"), "{answer}");

    let (_, _, metrics) = process::http(gateway.port, "GET", "/metrics", &[], "");
    for line in [
        r#"mcpd_remote_call_seconds_count{server="traced"} 4"#,
        r#"mcpd_remote_errors_total{server="traced",kind="http"} 1"#,
        r#"mcpd_remote_errors_total{server="traced",kind="connect"} 1"#,
        r#"mcpd_remote_errors_total{server="traced",kind="timeout"} 0"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "missing {line:?} in\n{metrics}");
    }
    assert!(
        metrics.lines().any(|l| l.starts_with(r#"mcpd_remote_call_seconds_bucket{le="0.0005",server="traced"}"#)),
        "ms-range buckets:\n{metrics}"
    );
}

/// OAuth tokens as access-file clients (against the real oidc-provider's keys): a token whose
/// subject, or whose scopes, an entry names is that client (its tools only; a hidden tool is
/// unknown even when the token also lacks its per-tool scope — never a 403 naming scopes); a
/// token no entry matches keeps what its scopes allow.
#[actix_rt::test]
async fn oauth_tokens_match_clients_by_subject_or_scopes() {
    use crate::support::oidc::spawn_provider;
    use crate::support::server::{post, start_with, test_catalog};
    use mcpd::auth::oauth::OAuthSettings;
    use mcpd::auth::scopes::ToolScopes;
    use mcpd_actors::access::AccessControl;

    let Some(provider) = spawn_provider() else { return };
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    write_json(
        &access,
        &json!({"clients": [
            {"name": "sso-alice", "subject": "alice", "tools": ["echo"]},
            {"name": "admins", "scopes": ["tools:admin"], "tools": ["*"]},
            {"name": "keyed", "key": "keyed-key-0123456789", "tools": ["sleep"]}
        ]}),
    );
    let control = AccessControl::load(&access).unwrap();
    let settings = OAuthSettings {
        issuers: vec![provider.issuer().to_owned()],
        tool_scopes: ToolScopes::new(vec![("sleep".into(), vec!["tools:admin".into()])]),
        ..OAuthSettings::default()
    };
    let server = start_with(test_catalog(), Default::default(), |c| {
        c.oauth = Some(settings);
        c.access = Some(control);
    })
    .await;
    let resource = server.url("/mcp");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |sub: &str, scope: &str| {
        let claims = json!({"iss": provider.issuer(), "aud": resource, "exp": now + 300, "sub": sub, "scope": scope});
        provider.mint("k1.pem", "k1", &claims)
    };
    let call = |token: String, id: i64, method: &'static str, params: Value| {
        let server = &server;
        async move {
            let bearer = format!("Bearer {token}");
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            post(server, &[("mcp-protocol-version", "2025-11-25"), ("authorization", &bearer)], &body).await
        }
    };
    let names = |reply: &crate::support::server::Reply| -> Vec<String> {
        let tools = reply.json()["result"]["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
    };

    let alice = call(token("alice", "mcp"), 1, "tools/list", json!({})).await;
    assert_eq!(names(&alice), ["echo"], "{}", provider.transcript());
    let hidden = call(token("alice", "mcp"), 2, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}})).await;
    assert_eq!(hidden.status, 200, "unknown, not 403: {}", String::from_utf8_lossy(&hidden.body));
    assert_eq!(hidden.json()["error"]["message"], "Unknown tool: sleep");

    let admin = call(token("bob", "mcp tools:admin"), 3, "tools/list", json!({})).await;
    assert!(names(&admin).contains(&"sleep".to_owned()) && names(&admin).len() > 2, "{:?}", names(&admin));

    let carol = call(token("carol", "mcp"), 4, "tools/list", json!({})).await;
    let carol = names(&carol);
    assert!(carol.contains(&"echo".to_owned()) && carol.contains(&"fail".to_owned()), "{carol:?}");
    assert!(!carol.contains(&"sleep".to_owned()), "her scopes still hide sleep: {carol:?}");
    let refused = call(token("carol", "mcp"), 5, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}})).await;
    assert_eq!(refused.status, 403, "no client: the per-tool scope refusal as before");
    // A key client is an API key: its globs decide, no scope is asked of it.
    let keyed = call("keyed-key-0123456789".into(), 6, "tools/list", json!({})).await;
    assert_eq!(names(&keyed), ["sleep"]);
    let slept =
        call("keyed-key-0123456789".into(), 7, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}})).await;
    assert_eq!(slept.status, 200, "{}", String::from_utf8_lossy(&slept.body));
    assert!(slept.json()["result"].is_object(), "{}", String::from_utf8_lossy(&slept.body));
    server.runtime.close().await.unwrap();
}

/// Live reload reaches a session: a client in a session (`-s`) hears
/// `notifications/tools/list_changed` on its standalone stream when SIGHUP puts a new access
/// file in force, and then lists what the new file gives it.
#[actix_rt::test]
async fn a_session_hears_list_changed_when_the_access_file_is_reloaded() {
    use crate::support::sse::SseReader;
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    write_json(&access, &access_file(&["echo"]));
    let mut cmd = process::mcpd_command();
    cmd.env("MCPD_TEST_BETA_KEY", BETA).args(["--no-file-tools", "-s", "--access", access.to_str().unwrap()]);
    let gateway = HttpChild::spawn_command(cmd);
    let bearer = format!("Bearer {ALPHA}");
    let accept = ("Accept", "application/json, text/event-stream");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let headers = [("Content-Type", "application/json"), accept, ("Authorization", bearer.as_str())];
    let (code, reply_headers, body) = process::http(gateway.port, "POST", "/mcp", &headers, &init.to_string());
    assert_eq!(code, 200, "{body}");
    let session = process::header_value(&reply_headers, "mcp-session-id").unwrap().to_owned();
    let in_session = [
        ("Content-Type", "application/json"),
        accept,
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(process::http(gateway.port, "POST", "/mcp", &in_session, &initialized).0, 202);
    let list = || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
        let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &in_session, &body);
        assert_eq!(code, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        answer["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(list(), ["echo"]);

    let client = awc::Client::builder().disable_timeout().finish();
    let stream = client
        .get(gateway.url())
        .insert_header(("Accept", "text/event-stream"))
        .insert_header(("Authorization", bearer.as_str()))
        .insert_header(("Mcp-Session-Id", session.as_str()))
        .insert_header(("MCP-Protocol-Version", "2025-11-25"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let mut stream = SseReader::new(stream);
    let priming = stream.next(Duration::from_secs(5)).await.unwrap();
    assert!(priming.data.is_empty(), "{priming:?}");

    write_json(&access, &access_file(&["time"]));
    gateway.signal("HUP");
    let heard = stream.next(Duration::from_secs(10)).await.expect("an event after the reload");
    assert_eq!(heard.json()["method"], "notifications/tools/list_changed", "{heard:?}");
    assert_eq!(list(), ["time"]);
}

/// The gateway's federated prompts and resources pass the same screen as its tools: a client
/// whose access names none lists none and reads or gets one as it would one that does not
/// exist; a client with `resources: ["note://*"]` and `prompts: ["remote__*"]` reaches exactly
/// those of the remote.
#[test]
fn federated_prompts_and_resources_are_screened_per_client() {
    let dir = tempfile::tempdir().unwrap();
    let remote = crate::gateway_federation::http_remote(&dir);
    let servers = dir.path().join("servers.json");
    write_json(&servers, &json!({"mcpServers": {"remote": {"url": remote.url()}}}));
    let access = dir.path().join("access.json");
    write_json(
        &access,
        &json!({"clients": [
            {"name": "docs", "key": ALPHA, "tools": ["*"], "prompts": ["remote__*"], "resources": ["note://*"]},
            {"name": "ci", "key": BETA, "tools": ["*"]}
        ]}),
    );
    let mut cmd = process::mcpd_command();
    cmd.args(["--servers", servers.to_str().unwrap(), "--access", access.to_str().unwrap(), "--key", ADMIN]);
    let gateway = HttpChild::spawn_command(cmd);
    eventually_blocking("the remote's resources are federated", Duration::from_secs(15), || {
        let status: Value = serde_json::from_str(&get(&gateway, "/status")).unwrap_or_default();
        match status["remotes"][0]["up"] == true && status["remotes"][0]["resources"].as_u64() >= Some(1) {
            true => Ok(()),
            false => Err(status),
        }
    });
    let result = |key: &str, method: &str, params: Value| rpc(&gateway, Some(key), 7, method, params).2;
    let names = |answer: &Value, list: &str, field: &str| -> Vec<String> {
        let items = answer["result"][list].as_array().unwrap_or_else(|| panic!("{answer}"));
        items.iter().map(|i| i[field].as_str().unwrap().to_owned()).collect()
    };
    // The operator's key sees everything the remote offers.
    let everything = result(ADMIN, "resources/list", json!({}));
    assert!(names(&everything, "resources", "uri").contains(&"note://style".to_owned()), "{everything}");
    assert!(names(&everything, "resources", "uri").len() >= 2, "{everything}");

    // ci: nothing, and a hidden one answers as an absent one.
    assert_eq!(names(&result(BETA, "resources/list", json!({})), "resources", "uri"), Vec::<String>::new());
    assert_eq!(names(&result(BETA, "prompts/list", json!({})), "prompts", "name"), Vec::<String>::new());
    let hidden = result(BETA, "resources/read", json!({"uri": "note://style"}));
    let absent = result(BETA, "resources/read", json!({"uri": "note://absent"}));
    assert!(hidden["error"].is_object(), "{hidden}");
    assert_eq!(
        hidden["error"].to_string().replace("note://style", "X"),
        absent["error"].to_string().replace("note://absent", "X")
    );
    let prompt = json!({"name": "remote__greet", "arguments": {"who": "Ada", "style": "formal"}});
    let hidden = result(BETA, "prompts/get", prompt.clone());
    let absent = result(BETA, "prompts/get", json!({"name": "remote__absent", "arguments": {}}));
    assert!(hidden["error"].is_object(), "{hidden}");
    assert_eq!(hidden["error"]["code"], absent["error"]["code"], "{hidden} {absent}");

    // docs: exactly its patterns.
    assert_eq!(names(&result(ALPHA, "resources/list", json!({})), "resources", "uri"), vec!["note://style".to_owned()]);
    let read = result(ALPHA, "resources/read", json!({"uri": "note://style"}));
    assert_eq!(read["result"]["contents"][0]["text"], "Use British spelling.", "{read}");
    let other = result(ALPHA, "resources/read", json!({"uri": "demo://resource/static/document/instructions.md"}));
    assert!(other["error"].is_object(), "{other}");
    assert_eq!(names(&result(ALPHA, "prompts/list", json!({})), "prompts", "name"), vec!["remote__greet".to_owned()]);
    let got = result(ALPHA, "prompts/get", prompt);
    assert!(got["result"]["messages"][0]["content"]["text"].as_str().is_some_and(|t| t.contains("Ada")), "{got}");
}
