//! The client runtime (`ClientManager`) against independent MCP servers, each a
//! child process on 127.0.0.1 that logs one `REQUEST {json}` line per HTTP request, so every test
//! also asserts which wire the client negotiated:
//!
//! * the npm reference server `@modelcontextprotocol/server-everything@2026.8.31` (TypeScript
//!   SDK 1.32.2) in Streamable HTTP mode, installed by `scripts/setup-node.sh` with the machine's
//!   Node and started as `PORT=0 node --require actors/tests/interop/loopback_listen.cjs <entry>
//!   streamableHttp` (the preload binds 127.0.0.1 and prints the port). It does not speak
//!   2026-07-28: `server/discover` is refused (HTTP 400, -32000), so the client falls back to the
//!   `initialize` handshake at 2025-11-25 and gets an `Mcp-Session-Id`: a **session**;
//! * a FastMCP server of the official Python SDK (mcp==2.3.0, `MCPServer` in v2) in stateless
//!   JSON mode (`actors/tests/interop/fastmcp_server.py`). It answers `server/discover` with
//!   `supportedVersions: ["2026-07-28"]`, so the client goes **stateless** (no initialize, no
//!   session id, `Mcp-Method` routing headers); pinned to 2025-11-25 it does the handshake but,
//!   being `stateless_http`, hands out no session id.
//!
//! Each test lists tools, calls one with arguments, reads a tool error, invalidates the
//! connection and calls again. Provisioning (npm, the Python venv) fails the tests unless
//! `MCPD_SKIP_INTEROP=1`, which makes them skip with a notice.

use std::future::Future;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use mcpd::client::config::ConfigDocument;
use mcpd::model::Implementation;
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, ServerRecord};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map, Value};

use crate::support::interop_servers::{spawn_everything, ScriptServer};
use crate::support::python::{python_with, MCP_SDK};
use crate::support::{interop_script, workspace_root};

/// The bound of a whole test: a hang fails the test instead of blocking the run.
const TEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The client's per-request limit against these servers (generous: CI machines are slow).
const CLIENT_TIMEOUT_SECS: u64 = 30;
/// How long a request log line may take to come through the child's pipe.
const LOG_SETTLE: Duration = Duration::from_secs(5);

async fn bounded<F: Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_TIMEOUT, test).await.expect("the test did not finish within its bound");
}

fn manager() -> ClientManager {
    ClientManager::new(
        ClientHandlers::default(),
        Implementation::new("mcpd-interop", "1"),
        Arc::new(ActorCounts::new()),
    )
}

fn record(id: &str, document: Value) -> ServerRecord {
    let document = ConfigDocument::from_value(document).expect("config document");
    ServerRecord { timeout_secs: CLIENT_TIMEOUT_SECS, ..ServerRecord::new(id, document) }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("arguments are an object")
}

fn field<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request.get(name).and_then(Value::as_str)
}

fn posts(requests: &[Value]) -> Vec<&Value> {
    requests.iter().filter(|r| field(r, "method") == Some("POST")).collect()
}

fn deletes(requests: &[Value]) -> Vec<&Value> {
    requests.iter().filter(|r| field(r, "method") == Some("DELETE")).collect()
}

/// The session ids seen on requests, in order of first appearance.
fn session_ids(requests: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in requests.iter().filter_map(|r| field(r, "mcpSessionId")) {
        if !ids.iter().any(|seen| seen == id) {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// The FastMCP server (`actors/tests/interop/fastmcp_server.py 0`); `None` when Python cannot be
/// provisioned and skipping is allowed.
fn spawn_fastmcp() -> Option<ScriptServer> {
    let python = python_with(MCP_SDK)?;
    let mut cmd = Command::new(python);
    cmd.arg(interop_script("fastmcp_server.py"))
        .arg("0")
        .current_dir(workspace_root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    Some(ScriptServer::spawn(cmd, "fastmcp_server.py"))
}

// ---- server-everything ---------------------------------------------------------------------

/// server-everything over Streamable HTTP: discover is refused, so the client initializes at
/// 2025-11-25 and works in a session (every later request carries its `Mcp-Session-Id`); lists
/// the tools, echoes, adds, reads tool errors (bad arguments and an unknown tool are *tool*
/// errors in TypeScript SDK 1.32: `Ok(is_error: true)`, no JSON-RPC error), reads a JSON-RPC
/// error from `prompts/get`, answers the server's elicitation over the POST's SSE stream,
/// then `invalidate` DELETEs the session and the next call opens a new one.
#[actix_rt::test]
async fn server_everything_in_a_streamable_http_session() {
    let Some(server) = spawn_everything() else { return };
    bounded(async {
        let manager = manager();
        manager.upsert(record("everything", json!({ "url": server.url(), "name": "Everything" })));

        // tools/list (all pages), stored in the record.
        let tools = manager.test_and_refresh_tools("everything").await.unwrap_or_else(|e| {
            panic!("tools/list failed: {e:?}\n{}", server.transcript());
        });
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for expected in ["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"] {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        // Registered only because the client declared the elicitation capability.
        assert!(names.contains(&"trigger-elicitation-request"), "{names:?}");
        let echo = tools.iter().find(|t| t.name == "echo").expect("echo");
        assert_eq!(echo.input_schema["properties"]["message"]["type"], "string", "{:?}", echo.input_schema);
        let stored = manager.record("everything").expect("record").tools;
        assert_eq!(stored.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), names, "the record keeps the list");

        // A call with arguments.
        let echoed = manager
            .call_tool("everything", "echo", args(json!({"message": "héllo, 世界"})))
            .await
            .unwrap_or_else(|e| panic!("echo failed: {e:?}\n{}", server.transcript()));
        assert!(!echoed.is_error, "{:?}", echoed.raw);
        assert_eq!(echoed.text(), "Echo: héllo, 世界");
        assert_eq!(echoed.server_name, "Everything");
        assert_eq!(echoed.tool_name, "echo");
        let sum = manager.call_tool("everything", "get-sum", args(json!({"a": 2, "b": 40}))).await.expect("get-sum");
        assert!(!sum.is_error && sum.text().contains("42"), "{:?}", sum.raw);

        // Tool errors: the TypeScript SDK turns argument validation failures and unknown tools
        // into results with isError (not JSON-RPC errors), so they are Ok(is_error: true).
        let bad =
            manager.call_tool("everything", "echo", args(json!({"message": 7}))).await.expect("a tool error is Ok");
        assert!(bad.is_error, "bad arguments are a tool error: {:?}", bad.raw);
        assert!(bad.text().contains("message"), "the error names the argument: {:?}", bad.raw);
        let unknown = manager.call_tool("everything", "no-such-tool", Map::new()).await.expect("a tool error is Ok");
        assert!(unknown.is_error, "{:?}", unknown.raw);
        assert!(unknown.text().contains("no-such-tool"), "{:?}", unknown.raw);

        // A JSON-RPC error is Err(Rpc) with its code.
        match manager.request("everything", "prompts/get", args(json!({"name": "no-such-prompt"}))).await {
            Err(ClientError::Rpc { code, message, .. }) => {
                assert_eq!(code, -32602, "{message}");
                assert!(message.contains("no-such-prompt"), "{message}");
            }
            other => panic!("prompts/get of an unknown prompt: {other:?}"),
        }
        let prompts = manager.request("everything", "prompts/list", Map::new()).await.expect("prompts/list");
        assert!(prompts["prompts"].as_array().is_some_and(|p| !p.is_empty()), "{prompts}");

        // A server-to-client request inside the call's SSE stream: the default handler accepts
        // the elicitation with the form's defaults.
        let elicited =
            manager.call_tool("everything", "trigger-elicitation-request", Map::new()).await.expect("elicitation");
        assert!(!elicited.is_error, "{:?}", elicited.raw);
        let text = elicited.raw.to_string();
        assert!(text.contains("accept") && text.contains("It was a dark and stormy night."), "{text}");

        // The wire: discover refused, then initialize at 2025-11-25 and a session.
        let requests = server.requests();
        let first = posts(&requests)[0];
        assert_eq!(field(first, "mcpMethod"), Some("server/discover"), "{requests:?}");
        assert_eq!(field(first, "mcpProtocolVersion"), Some("2026-07-28"), "{requests:?}");
        let initialize = posts(&requests)[1];
        assert_eq!(field(initialize, "mcpSessionId"), None, "initialize carries no session: {requests:?}");
        assert_eq!(field(initialize, "mcpProtocolVersion"), Some("2025-11-25"), "{requests:?}");
        let sessions = session_ids(&requests);
        assert_eq!(sessions.len(), 1, "one session so far: {requests:?}");
        let first_session = sessions[0].clone();
        for request in &posts(&requests)[2..] {
            assert_eq!(field(request, "mcpSessionId"), Some(first_session.as_str()), "{requests:?}");
            assert_eq!(field(request, "mcpProtocolVersion"), Some("2025-11-25"), "{requests:?}");
            assert_eq!(field(request, "mcpMethod"), None, "no stateless routing headers in a session: {requests:?}");
        }
        assert!(deletes(&requests).is_empty(), "{requests:?}");

        // invalidate: the session is DELETEd; the next call reconnects with a new session.
        manager.invalidate("everything").await;
        let deleted = server
            .wait_for_requests(LOG_SETTLE, |r| {
                deletes(r).iter().any(|d| field(d, "mcpSessionId") == Some(&first_session))
            })
            .await;
        assert!(deleted, "invalidate DELETEs the session: {:?}", server.requests());
        let before = server.requests().len();
        let again =
            manager.call_tool("everything", "echo", args(json!({"message": "again"}))).await.expect("reconnect");
        assert_eq!(again.text(), "Echo: again");
        let requests = server.requests();
        let after = &requests[before..];
        let new_sessions = session_ids(after);
        assert_eq!(new_sessions.len(), 1, "{after:?}");
        assert_ne!(new_sessions[0], first_session, "a new session after invalidate: {after:?}");
        assert!(
            after.iter().all(|r| field(r, "mcpSessionId") != Some(first_session.as_str())),
            "the old session id is never sent again: {after:?}"
        );
        manager.close().await;
    })
    .await;
}

// ---- FastMCP (Python SDK) -------------------------------------------------------------------

/// The FastMCP server in stateless JSON mode: discover offers 2026-07-28, so every request is
/// a stateless one (`MCP-Protocol-Version: 2026-07-28`, `Mcp-Method`, no initialize, no session
/// id, nothing to DELETE). add {a, b} works, fail() is a tool error (`Ok(is_error: true)`),
/// arguments of the wrong type and an unknown tool are tool errors too, `resources/read` of an
/// unknown URI is a JSON-RPC error (`Err(Rpc)` -32602 with its data), and after `invalidate` the next call
/// reconnects (discovers again).
#[actix_rt::test]
async fn fastmcp_stateless_json_server_is_spoken_to_statelessly() {
    let Some(server) = spawn_fastmcp() else { return };
    bounded(async {
        let manager = manager();
        manager.upsert(record("fastmcp", json!({ "url": server.url() })));

        let tools = manager
            .test_and_refresh_tools("fastmcp")
            .await
            .unwrap_or_else(|e| panic!("tools/list failed: {e:?}\n{}", server.transcript()));
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["add", "fail"]);
        let add = tools.iter().find(|t| t.name == "add").expect("add");
        assert_eq!(add.input_schema["properties"]["a"]["type"], "integer", "{:?}", add.input_schema);
        assert_eq!(manager.record("fastmcp").expect("record").tools.len(), 2);

        let sum = manager
            .call_tool("fastmcp", "add", args(json!({"a": 2, "b": 3})))
            .await
            .unwrap_or_else(|e| panic!("add failed: {e:?}\n{}", server.transcript()));
        assert!(!sum.is_error, "{:?}", sum.raw);
        assert_eq!(sum.text(), "5");
        assert_eq!(sum.structured_content, Some(json!({"result": 5})), "{:?}", sum.raw);

        let failed = manager.call_tool("fastmcp", "fail", Map::new()).await.expect("a tool error is Ok");
        assert!(failed.is_error, "{:?}", failed.raw);
        assert!(failed.text().contains("deliberate failure"), "{:?}", failed.raw);

        let bad = manager.call_tool("fastmcp", "add", args(json!({"a": "two", "b": 3}))).await;
        let bad = bad.expect("argument validation is a tool error");
        assert!(bad.is_error, "{:?}", bad.raw);

        // mcp 2.3.0 reports an unknown tool as a tool error too.
        let unknown = manager.call_tool("fastmcp", "no_such_tool", Map::new()).await.expect("a tool error is Ok");
        assert!(unknown.is_error && unknown.text().contains("no_such_tool"), "{:?}", unknown.raw);

        // A JSON-RPC error is Err(Rpc) with its code.
        // (mcp 2.3.0 answers prompts/get of an unknown prompt with a bare -32603; resources/read
        // of an unknown URI is the clean -32602.)
        match manager.request("fastmcp", "resources/read", args(json!({"uri": "file:///no/such/resource"}))).await {
            Err(ClientError::Rpc { code, message, data, .. }) => {
                assert_eq!(code, -32602, "{message}");
                assert!(message.contains("file:///no/such/resource"), "{message}");
                assert_eq!(data, Some(json!({"uri": "file:///no/such/resource"})));
            }
            other => panic!("resources/read of an unknown resource: {other:?}"),
        }

        // The wire: stateless throughout.
        let requests = server.requests();
        assert!(!requests.is_empty(), "{}", server.transcript());
        for request in &requests {
            assert_eq!(field(request, "method"), Some("POST"), "{requests:?}");
            assert_eq!(field(request, "mcpProtocolVersion"), Some("2026-07-28"), "{requests:?}");
            assert_eq!(field(request, "mcpSessionId"), None, "{requests:?}");
            assert!(field(request, "mcpMethod").is_some(), "{requests:?}");
        }
        let methods: Vec<&str> = requests.iter().filter_map(|r| field(r, "mcpMethod")).collect();
        assert_eq!(methods[0], "server/discover", "{methods:?}");
        assert!(!methods.contains(&"initialize"), "{methods:?}");
        assert_eq!(methods.iter().filter(|m| **m == "server/discover").count(), 1, "discovered once: {methods:?}");

        // invalidate: nothing to DELETE; the next call discovers again and works.
        manager.invalidate("fastmcp").await;
        let again = manager.call_tool("fastmcp", "add", args(json!({"a": 40, "b": 2}))).await.expect("reconnect");
        assert_eq!(again.text(), "42");
        let discovers = |r: &[Value]| r.iter().filter(|r| field(r, "mcpMethod") == Some("server/discover")).count();
        server.wait_for_requests(LOG_SETTLE, |r| discovers(r) >= 2).await;
        let requests = server.requests();
        let methods: Vec<&str> = requests.iter().filter_map(|r| field(r, "mcpMethod")).collect();
        assert_eq!(methods.iter().filter(|m| **m == "server/discover").count(), 2, "{methods:?}");
        assert!(deletes(&requests).is_empty(), "{requests:?}");
        manager.close().await;
    })
    .await;
}

/// The same FastMCP server with the handshake revision pinned (`protocolVersion:
/// 2025-11-25`): no discover; `initialize` succeeds but a `stateless_http` server hands out no
/// session id, so the client works in a session-less handshake connection (every request
/// carries `MCP-Protocol-Version: 2025-11-25` and no `Mcp-Session-Id`), and invalidate has
/// nothing to DELETE.
#[actix_rt::test]
async fn fastmcp_pinned_to_a_handshake_revision_initializes_without_a_session() {
    let Some(server) = spawn_fastmcp() else { return };
    bounded(async {
        let manager = manager();
        manager.upsert(record("pinned", json!({ "url": server.url(), "protocolVersion": "2025-11-25" })));
        let tools = manager
            .test_and_refresh_tools("pinned")
            .await
            .unwrap_or_else(|e| panic!("tools/list failed: {e:?}\n{}", server.transcript()));
        assert_eq!(tools.len(), 2, "{tools:?}");
        let sum = manager.call_tool("pinned", "add", args(json!({"a": 20, "b": 22}))).await.expect("add");
        assert_eq!(sum.text(), "42");
        let failed = manager.call_tool("pinned", "fail", Map::new()).await.expect("a tool error is Ok");
        assert!(failed.is_error && failed.text().contains("deliberate failure"), "{:?}", failed.raw);

        manager.invalidate("pinned").await;
        let again = manager.call_tool("pinned", "add", args(json!({"a": 1, "b": 1}))).await.expect("reconnect");
        assert_eq!(again.text(), "2");

        // Per connection: initialize, notifications/initialized, then the calls.
        let expected = 2 + 3 + 2 + 1;
        server.wait_for_requests(LOG_SETTLE, |r| r.len() >= expected).await;
        let requests = server.requests();
        assert_eq!(requests.len(), expected, "{requests:?}");
        for request in &requests {
            assert_eq!(field(request, "method"), Some("POST"), "nothing to DELETE: {requests:?}");
            assert_eq!(field(request, "mcpSessionId"), None, "{requests:?}");
            assert_eq!(field(request, "mcpProtocolVersion"), Some("2025-11-25"), "{requests:?}");
            assert_eq!(field(request, "mcpMethod"), None, "no discover, no stateless routing: {requests:?}");
        }
        manager.close().await;
    })
    .await;
}
