//! The gateway: remote servers' tools re-exported under `<server>__<tool>`, called through the
//! client runtime, failures passed through faithfully, a down remote failing only its own tools,
//! list_changed from a remote reaching this server's catalog, and — end to end — the official
//! Python SDK driving `mcpd --servers` whose remotes are the npm server-everything over stdio and
//! another mcpd over HTTP.

use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, ServerOptions};
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::{ActorCounts, TransportMode};
use serde_json::{json, Map, Value};

use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::interop_servers;
use crate::support::process;
use crate::support::python;
use crate::support::server::*;

/// Remote tools are listed under `<server>__<tool>`, called with their arguments, their
/// `isError` results passed through; a down remote is reported and only its tools are missing;
/// a remote's list_changed refreshes the exported tools; enabledTools filters them too.
#[actix_rt::test]
async fn remote_tools_are_namespaced_called_and_refreshed() {
    let remote_live = Arc::new(LiveCatalog::new(test_catalog()));
    let remote = start_live(remote_live.clone(), ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = TransportMode::StreamableHttp
    })
    .await;
    // Pinned to a handshake revision: the session's standalone stream carries list_changed.
    let document = format!(r#"{{"url":"{}","protocolVersion":"2025-11-25"}}"#, remote.url("/mcp"));
    let mut down =
        ServerRecord::new("Down Server", ConfigDocument::parse(r#"{"url":"http://127.0.0.1:1/mcp"}"#).unwrap());
    down.timeout_secs = 5;
    let records = vec![ServerRecord::new("Remote One", ConfigDocument::parse(&document).unwrap()), down];

    let live = Arc::new(LiveCatalog::new(Catalog::new()));
    let filter = ToolFilter::from_value(Some("remote_one__* !ignored"));
    let gateway = Gateway::new(records, live.clone(), filter, Arc::new(ActorCounts::new()));
    gateway.refresh_all().await;
    let names = live.snapshot().tool_names();
    assert!(names.contains(&"remote_one__echo".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("remote_one__")), "the down server exports nothing: {names:?}");
    let health = gateway.health();
    assert!(health[0].up && health[0].tools == names.len(), "{health:?}");
    assert!(!health[1].up && health[1].error.as_deref().is_some_and(|e| e.contains("connect")), "{health:?}");

    let server = start_live(live.clone(), Default::default(), |_| {}).await;
    let echo = post_legacy(
        &server,
        "2025-11-25",
        1,
        "tools/call",
        json!({"name":"remote_one__echo","arguments":{"text":"through"}}),
    )
    .await;
    assert_eq!(echo.json()["result"]["content"][0]["text"], "through");
    let failed = post_legacy(&server, "2025-11-25", 2, "tools/call", json!({"name":"remote_one__fail"})).await;
    assert_eq!(failed.json()["result"]["isError"], true);
    assert_eq!(failed.json()["result"]["content"][0]["text"], "the disk is on fire", "passed through faithfully");

    remote_live.update(|c| {
        c.add_tool(Tool::new("fresh", "Added later.", json!({"type":"object"})), |_a: Map<String, Value>, _c| async {
            Ok(CallToolResult::text("fresh"))
        });
    });
    eventually("list_changed propagated", Duration::from_secs(5), async || {
        live.snapshot().tool("remote_one__fresh").is_some()
    })
    .await;

    // The remote goes away: its tools fail with isError and the reason, the server stays up.
    remote.runtime.close().await.unwrap();
    let gone = post_legacy(
        &server,
        "2025-11-25",
        3,
        "tools/call",
        json!({"name":"remote_one__echo","arguments":{"text":"x"}}),
    )
    .await;
    assert_eq!(gone.status, 200);
    assert_eq!(gone.json()["result"]["isError"], true);
    assert!(gone.json()["result"]["content"][0]["text"].as_str().unwrap().contains("Remote One"));
    assert!(!gateway.health()[0].up);
    gateway.close().await;
}

/// A remote that was down when the gateway listed tools joins once it answers: the periodic
/// retry lists its tools, and remotes that are up are not asked again.
#[actix_rt::test]
async fn a_remote_started_later_joins_on_retry() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut late = ServerRecord::new(
        "late",
        ConfigDocument::parse(&format!(r#"{{"url":"http://127.0.0.1:{port}/mcp"}}"#)).unwrap(),
    );
    late.timeout_secs = 5;
    let live = Arc::new(LiveCatalog::new(Catalog::new()));
    let gateway = Gateway::new(vec![late], live.clone(), ToolFilter::from_value(None), Arc::new(ActorCounts::new()));
    gateway.refresh_all().await;
    assert!(live.snapshot().tool_names().is_empty());
    assert!(!gateway.health()[0].up);

    let remote = start_with(test_catalog(), Default::default(), |c| c.port = port).await;
    gateway.retry_every(Duration::from_millis(200));
    eventually("the late remote joined", Duration::from_secs(5), async || live.snapshot().tool("late__echo").is_some())
        .await;
    assert!(gateway.health()[0].up && gateway.health()[0].tools > 0, "{:?}", gateway.health());
    gateway.close().await;
    remote.runtime.close().await.unwrap();
}

/// The `/status` document of a `mcpd` child (`null` when it is not JSON).
fn status_of(child: &process::HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// End to end: the Python SDK talks to `mcpd --servers FILE` whose remotes are the npm
/// server-everything over stdio and another mcpd over HTTP; it lists both servers' tools and
/// calls one of each through mcpd.
#[test]
fn python_client_uses_two_remotes_through_mcpd() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let remote = process::HttpChild::spawn(&["--no-file-tools"]);
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    let file = json!({"mcpServers": {
        "everything": interop_servers::everything_stdio(&entry),
        "local": {"url": remote.url()}
    }});
    std::fs::write(&servers, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let gateway = process::HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    // Remote tools appear as the remotes answer.
    let status = eventually_blocking("every remote is up", Duration::from_secs(10), || {
        let status = status_of(&gateway);
        if status["remotes"].as_array().is_some_and(|r| r.iter().all(|s| s["up"] == true)) {
            Ok(status)
        } else {
            Err(status)
        }
    });
    assert!(status["remotes"].as_array().unwrap().iter().all(|s| s["up"] == true), "{status}");
    let mut cmd = std::process::Command::new(python);
    cmd.arg(crate::support::interop_script("py_gateway_client.py"))
        .arg(gateway.url())
        .arg(r#"everything__echo={"message":"hi everything"}"#)
        .arg(r#"local__echo={"text":"hi local"}"#)
        .arg(r#"local__echo={"text":5}"#);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let tools: Vec<&str> = report["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        tools.contains(&"everything__echo") && tools.contains(&"local__echo") && tools.contains(&"echo"),
        "{tools:?}"
    );
    let calls = report["calls"].as_array().unwrap();
    assert!(calls[0]["result"]["content"][0]["text"].as_str().unwrap().contains("hi everything"), "{}", calls[0]);
    assert_eq!(calls[1]["result"]["content"][0]["text"], "hi local");
    assert_eq!(calls[2]["result"]["isError"], true, "a remote tool's own failure stays a tool failure: {}", calls[2]);
}

/// What `mcpd … --servers` shows: `enabledTools` filters the gateway's tools like any other, the
/// status JSON counts the exposed tools per set and reports each remote's health, and `/metrics`
/// carries the same as gauges. One remote is up (another mcpd over HTTP), one is down.
#[test]
fn status_and_metrics_show_tool_sets_and_remote_health() {
    let remote = process::HttpChild::spawn(&["--no-file-tools"]);
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let file = json!({"mcpServers": {
        "Local One": {"url": remote.url()},
        "gone": {"url": format!("http://127.0.0.1:{closed}/mcp"), "timeout": 5}
    }});
    std::fs::write(&servers, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let props = dir.path().join("mcp.properties");
    std::fs::write(&props, "enabledTools=echo, read_*, local_one__ech?, gone__*\n").unwrap();
    let gateway = process::HttpChild::spawn(&[
        "-c",
        props.to_str().unwrap(),
        "-d",
        dir.path().to_str().unwrap(),
        "--servers",
        servers.to_str().unwrap(),
        "--file-tools",
    ]);
    let status = eventually_blocking("one remote is up and the other has failed", Duration::from_secs(10), || {
        let status = status_of(&gateway);
        if status["remotes"].as_array().is_some_and(|r| r.len() == 2 && r[0]["up"] == true && r[1]["error"].is_string())
        {
            Ok(status)
        } else {
            Err(status)
        }
    });
    assert_eq!(
        status["toolSets"],
        json!({"builtin": 1, "files": 1, "commands": 0, "declared": 0, "gateway": 1}),
        "{status}"
    );
    assert_eq!(status["tools"], 3, "{status}");
    let remotes = status["remotes"].as_array().unwrap();
    assert_eq!(remotes[0]["name"], "Local One");
    assert_eq!(remotes[0]["prefix"], "local_one");
    assert_eq!(remotes[0]["transport"], "streamable_http");
    assert_eq!(remotes[0]["up"], true);
    assert_eq!(remotes[0]["tools"], 1, "only local_one__echo passes enabledTools: {status}");
    assert_eq!(remotes[1]["name"], "gone");
    assert_eq!(remotes[1]["up"], false);
    assert!(remotes[1]["error"].as_str().unwrap().contains("transport"), "{status}");

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, body);
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let names: Vec<&str> =
        answer["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["echo", "local_one__echo", "read_file"], "{answer}");

    let (code, _, metrics) = process::http(gateway.port, "GET", "/metrics", &[], "");
    assert_eq!(code, 200);
    for line in [
        r#"mcpd_tools_exposed{set="builtin"} 1"#,
        r#"mcpd_tools_exposed{set="files"} 1"#,
        r#"mcpd_tools_exposed{set="gateway"} 1"#,
        r#"mcpd_remote_up{server="Local One",transport="streamable_http"} 1"#,
        r#"mcpd_remote_up{server="gone",transport="streamable_http"} 0"#,
        r#"mcpd_remote_tools{server="Local One"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "missing {line:?} in\n{metrics}");
    }
}

/// The connections of a burst of concurrent stateless calls through the gateway stay open for
/// the next burst: 48 calls at once on the gateway's one worker (each a remote tool that takes
/// half a second, so each needs its own connection to the remote), and afterwards the remote
/// still holds at least 48 open connections (a gateway that kept only 32 closed the rest, and
/// opened a new connection for every call beyond 32 in the next burst).
#[test]
fn a_burst_of_concurrent_calls_keeps_its_connections_to_the_remote() {
    const BURST: usize = 48;
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let declarations = dir.path().join("declarations.json");
    let nap = json!({"name": "nap", "description": "Sleeps half a second.", "inputSchema": {"type": "object"},
        "argv": ["sleep", "0.5"]});
    std::fs::write(&declarations, json!({ "tools": [nap] }).to_string()).unwrap();
    let remote = process::HttpChild::spawn_declared(&project, &declarations);
    let servers = crate::gateway_passthrough::servers_file(&dir, json!({"remote": {"url": remote.url()}}));
    let gateway = process::HttpChild::spawn(&["--no-file-tools", "-s", "--workers", "1", "--servers", &servers]);
    crate::gateway_passthrough::all_up(&gateway);

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "remote__nap", "arguments": {}, "_meta": modern_meta()}})
    .to_string();
    let port = gateway.port;
    let calls: Vec<_> = (0..BURST)
        .map(|_| {
            let body = body.clone();
            std::thread::spawn(move || {
                let headers = [
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "remote__nap"),
                ];
                process::http(port, "POST", "/mcp", &headers, &body)
            })
        })
        .collect();
    for call in calls {
        let (code, _, answer) = call.join().unwrap();
        assert_eq!(code, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"));
        assert!(answer["result"].is_object() && answer["result"]["isError"] != true, "{answer}");
    }
    // The remote's own gauge, read within its 5 s keep-alive: the burst's connections (and the
    // gateway's listing connection and this request's).
    let (code, _, metrics) = process::http(remote.port, "GET", "/metrics", &[], "");
    assert_eq!(code, 200);
    let open: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("mcpd_connections_open ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no mcpd_connections_open in\n{metrics}"));
    assert!(open >= BURST as f64, "the remote holds {open} open connections after a burst of {BURST}");
}

/// A stateless (2026-07-28) call through the gateway: the remote's usual answer reaches the
/// caller as the text the remote sent (members mcpd does not know, and numbers as written,
/// included), and the remote is told the caller's trace context and capabilities; an answer of
/// another shape is read and passed on as before (a block of a type mcpd does not know left
/// out); a caller on a handshake revision gets the result read as usual.
#[test]
fn a_remotes_usual_answer_reaches_a_stateless_caller_as_the_remote_sent_it() {
    use crate::support::mock_http::{MockServer, Reply};
    use crate::support::process::{self, HttpChild};
    const RESULT: &str = r#"{"content":[{"type":"text","text":"as sent","annotations":{"audience":["user"]}}],"structuredContent":{"n":1.50},"extra":{"kept":true},"resultType":"complete"}"#;
    let remote = MockServer::start(|request| {
        let id = request.rpc_id();
        let params = request.params();
        match (request.rpc_method().as_deref(), params["name"].as_str()) {
            (Some("server/discover"), _) => Reply::result(
                &id,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"}, "resultType": "complete"}),
            ),
            (Some("tools/list"), _) => Reply::result(
                &id,
                json!({"tools": [{"name": "exact", "inputSchema": {"type": "object"}},
                    {"name": "odd", "inputSchema": {"type": "object"}}], "resultType": "complete"}),
            ),
            (Some("tools/call"), Some("exact")) => {
                Reply::text(200, "application/json", &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{RESULT}}}"#))
            }
            (Some("tools/call"), Some("odd")) => Reply::result(
                &id,
                json!({"content": [{"type": "video", "url": "x"}, {"type": "text", "text": "known"}],
                    "resultType": "complete"}),
            ),
            _ => Reply::error(404, &id, -32601, "Method not found"),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(&servers, json!({"mcpServers": {"remote": {"url": remote.url()}}}).to_string()).unwrap();
    let mut cmd = process::mcpd_command();
    cmd.args(["serve", "--no-file-tools", "--servers", servers.to_str().unwrap()]);
    let gateway = HttpChild::spawn_command(cmd);
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let call = |tool: &str, version: &str| {
        let mut meta = json!({"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        if version != "2026-07-28" {
            meta = json!({});
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {"a": 1}, "_meta": meta}});
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", version),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
            ("traceparent", traceparent),
        ];
        let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, &body.to_string());
        (code, answer)
    };
    eventually_blocking("the remote's tools are listed", Duration::from_secs(10), || {
        let (code, answer) = call("remote__exact", "2026-07-28");
        (code == 200 && !answer.contains("Unknown tool")).then_some(()).ok_or(answer)
    });
    for _ in 0..3 {
        let (code, answer) = call("remote__exact", "2026-07-28");
        assert_eq!(code, 200);
        assert_eq!(answer, format!(r#"{{"jsonrpc":"2.0","id":1,"result":{RESULT}}}"#), "byte for byte");
    }
    let sent = remote.requests().into_iter().rfind(|r| r.params()["name"] == "exact").expect("a call");
    assert_eq!(sent.header("traceparent"), Some(traceparent));
    let meta = &sent.params()["_meta"];
    assert_eq!(meta["traceparent"], traceparent);
    assert_eq!(meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"], json!({}));
    assert_eq!(sent.params()["arguments"], json!({"a": 1}));
    let (_, odd) = call("remote__odd", "2026-07-28");
    let odd: Value = serde_json::from_str(&odd).unwrap();
    assert_eq!(odd["result"]["content"], json!([{"type": "text", "text": "known"}]), "{odd}");
    assert_eq!(odd["result"]["resultType"], "complete");
    // A handshake-era caller (no session: a single request of 2025-06-18) gets the result read.
    let (code, legacy) = call("remote__exact", "2025-06-18");
    let legacy: Value = serde_json::from_str(&legacy).unwrap_or_else(|_| panic!("{code}: {legacy}"));
    assert_eq!(legacy["result"]["content"][0]["text"], "as sent", "{legacy}");
    assert!(legacy["result"].get("resultType").is_none() && legacy["result"].get("extra").is_none(), "{legacy}");
}
