//! Streamable-HTTP sessions (2025-03-26 to 2025-11-25) any instance can serve (cluster mode,
//! README "Running several instances"): three `examples/everything --redis URL` instances share
//! one Debian `redis-server` (a child on a free loopback port, as in `cluster_redis`), and each
//! request of one session is sent to an instance the test chooses:
//!
//! * the official Python SDK (`actors/tests/interop/py_cluster_session_client.py`) with an httpx2
//!   transport that routes by what the request is: `initialize` on A, `tools/list` on B, the
//!   `test_elicitation` call on C, the client's elicitation answer on A, the `test_reconnection`
//!   call (which closes its SSE stream mid-call) on B, every GET — the resumption with
//!   `Last-Event-ID` included — on C, the DELETE on A; afterwards the deleted session is named
//!   on B and C;
//! * raw HTTP: the instance that created a session is killed, the session goes on on the other
//!   two, and a DELETE on one ends it on the other.
//!
//! Skipped, saying so, when `redis-server` is not installed (`.ci/run` installs it); the Python
//! test needs the interpreter of `support/python.rs` (as `sessions_interop`).

use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster_bus::{initialize_on, instances};
use crate::cluster_redis::cli;
use crate::support::eventually::eventually_blocking;
use crate::support::interop_script;
use crate::support::process::{self, http, run_with_timeout, text, HttpChild};
use crate::support::python::{python_with, MCP_SDK};

/// The deadline of the Python run (the client has its own 60 s timeout).
const PYTHON_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a message on the cluster's bus (a DELETE's end of the other copies) may take.
const BUS_DELIVERY: Duration = Duration::from_secs(2);
/// The session revision these tests speak.
const VERSION: &str = "2025-11-25";

/// The stderr of every instance, for a failure message.
fn logs(instances: &[&HttpChild]) -> String {
    instances
        .iter()
        .map(|i| format!("--- instance on port {} ---\n{}", i.port, i.stderr_lines().join("\n")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The official SDK's session spread over the three instances (routing in the module doc): the
/// tool list is served by an instance that did not create the session; the elicitation sent on
/// C's stream is answered through A and the answer reaches the tool's result; the stream B
/// closed mid-call is resumed on C with `Last-Event-ID` and delivers the call's result; after
/// the DELETE on A, B and C answer 404 for the session.
#[test]
fn python_sdk_session_spread_over_three_instances() {
    let Some((_redis, _, [a, b, c])) = instances() else { return };
    let Some(python) = python_with(MCP_SDK) else { return };
    let ports = [a.port, b.port, c.port].map(|p| p.to_string());
    let mut cmd = Command::new(&python);
    cmd.arg(interop_script("py_cluster_session_client.py"))
        .arg(a.url())
        .args(&ports)
        .current_dir(process::empty_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output: Output = run_with_timeout(&mut cmd, b"", PYTHON_TIMEOUT);
    let client_log = text(&output.stderr);
    eprintln!("{client_log}");
    assert!(
        output.status.success(),
        "py_cluster_session_client.py failed ({}):\n{client_log}\n{}",
        output.status,
        logs(&[&a, &b, &c])
    );
    let stdout = text(&output.stdout);
    let report: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not one JSON line ({e}): {stdout}"));
    let why = || format!("{report:#}\n{}", logs(&[&a, &b, &c]));

    assert_eq!(report["protocolVersion"], VERSION, "{}", why());
    assert!(report["sessionId"].as_str().is_some_and(|s| !s.is_empty()), "an Mcp-Session-Id: {}", why());
    // Where each step landed, as the client's transport sent it (and what it was answered).
    let served = report["served"].as_array().unwrap();
    let landed = |what: &str| -> Vec<(u16, u16)> {
        served
            .iter()
            .filter(|s| s["what"] == what)
            .map(|s| (s["port"].as_u64().unwrap() as u16, s["status"].as_u64().unwrap_or(0) as u16))
            .collect()
    };
    assert_eq!(landed("initialize"), [(a.port, 200)], "initialize on A: {}", why());
    assert_eq!(landed("tools/list"), [(b.port, 200)], "tools/list on B: {}", why());
    assert_eq!(landed("tools/call test_elicitation"), [(c.port, 200)], "the elicitation call on C: {}", why());
    assert_eq!(landed("response"), [(a.port, 202)], "the elicitation answer on A: {}", why());
    assert_eq!(landed("tools/call test_reconnection"), [(b.port, 200)], "the reconnection call on B: {}", why());
    let resumed: Vec<&Value> = served.iter().filter(|s| s["what"] == "GET" && s["lastEventId"].is_string()).collect();
    assert!(
        !resumed.is_empty() && resumed.iter().all(|s| s["port"] == c.port && s["status"] == 200),
        "the stream is resumed on C with Last-Event-ID: {}",
        why()
    );
    let deleted = landed("DELETE");
    assert!(matches!(deleted.as_slice(), [(port, 200 | 204)] if *port == a.port), "DELETE on A: {}", why());

    // What the user sees: B listed the tools, the elicitation reached the callback and its
    // answer the tool, and the resumed stream brought the result.
    let tools = report["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t == "test_elicitation") && tools.iter().any(|t| t == "test_reconnection"),
        "{}",
        why()
    );
    assert_eq!(report["elicitations"], json!(["Which instance are you on?"]), "{}", why());
    let elicited = report["elicitationResult"].as_str().unwrap_or_default();
    assert!(
        elicited.starts_with("User response: action=accept") && elicited.contains("cluster-user"),
        "the answer sent to A reached the tool on C: {}",
        why()
    );
    assert_eq!(report["reconnectionResult"], "Reconnection test completed successfully", "{}", why());
    // Deleted on A, gone on B and C.
    assert_eq!(report["afterDelete"], json!({"B": 404, "C": 404}), "{}", why());
}

/// The one JSON-RPC message of a POST's answer (a JSON body, or the SSE event carrying it).
fn message(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body:?}"))
}

/// `POST /mcp` of `body` on `port` within `session` (none: the handshake).
fn post(port: u16, session: Option<&str>, body: &Value) -> (u16, Vec<(String, String)>, String) {
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    if let Some(session) = session {
        headers.extend([("Mcp-Session-Id", session), ("MCP-Protocol-Version", VERSION)]);
    }
    http(port, "POST", "/mcp", &headers, &body.to_string())
}

/// A `tools/list` in `session` on `port`: the status, and the tool names when it was served.
fn list_tools(port: u16, session: &str) -> (u16, Vec<String>, String) {
    let (status, _, body) = post(port, Some(session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    if status != 200 {
        return (status, Vec::new(), body);
    }
    let answer = message(&body);
    let names = answer["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    (status, names, body)
}

/// A session created on A (which is then killed) goes on on B and C: a tool call on B and a
/// tool list on C are served; a DELETE on B ends it there at once, and on C within
/// [`BUS_DELIVERY`].
#[test]
fn a_session_outlives_the_instance_that_created_it_and_a_delete_ends_it_everywhere() {
    let Some((_redis, _, [a, b, c])) = instances() else { return };
    let session = session_on(&a, &b);
    let session = session.as_str();
    let (status, tools, body) = list_tools(c.port, session);
    assert_eq!(status, 200, "tools/list on C: {body}\n{}", logs(&[&a, &b, &c]));
    assert!(tools.iter().any(|t| t == "test_simple_text"), "tools/list on C: {body}");

    // A, the instance that created the session, dies without a goodbye.
    a.signal("KILL");
    eventually_blocking("A is gone", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", a.port)).is_err()
    });
    let (status, _, body) = post(
        b.port,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}}),
    );
    assert_eq!(status, 200, "tools/call on B after A died: {body}\n{}", logs(&[&b, &c]));
    assert_eq!(
        message(&body)["result"]["content"][0]["text"],
        "This is a simple text response for testing.",
        "tools/call on B after A died: {body}"
    );
    let (status, tools, body) = list_tools(c.port, session);
    assert_eq!((status, tools.is_empty()), (200, false), "tools/list on C after A died: {body}\n{}", logs(&[&b, &c]));

    // Deleted on B: B no longer knows it, and C (which adopted it) ends its copy when the
    // DELETE's bus message reaches it — a few milliseconds after B answered, during which C
    // may still serve it.
    let in_session = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", VERSION)];
    let (status, _, body) = http(b.port, "DELETE", "/mcp", &in_session, "");
    assert!(matches!(status, 200 | 204), "DELETE on B: {status} {body}\n{}", logs(&[&b, &c]));
    let (status, _, body) = list_tools(b.port, session);
    assert_eq!(status, 404, "tools/list on B after its DELETE: {body}");
    eventually_blocking("C answers 404 for the session deleted on B", BUS_DELIVERY, || {
        list_tools(c.port, session).0 == 404
    });
}

/// Initializes a session on `creator` and has `adopter` serve it (adopting it); its id.
fn session_on(creator: &HttpChild, adopter: &HttpChild) -> String {
    initialize_on(creator.port, adopter.port)
}

/// A DELETE whose bus message the other instances miss (their pub/sub connections dropped, as
/// on a Redis restart or a network blip, while it is answered) still ends the session on them
/// once they are subscribed again: they answer 404 like the instance that deleted it (on
/// resubscribing, each copy checks its record and finds the DELETE's tombstone). Without that
/// check the copies kept serving the deleted session until they idled out.
#[test]
fn a_delete_whose_bus_message_was_lost_still_ends_the_other_copies() {
    let Some((_redis, redis_port, [a, b, c])) = instances() else { return };
    let session = session_on(&a, &c);
    let killed = cli(redis_port, &["CLIENT", "KILL", "TYPE", "pubsub"]).unwrap_or_default();
    assert_eq!(killed, "3", "every instance's bus subscription dropped");
    let in_session = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", VERSION)];
    let (status, _, body) = http(b.port, "DELETE", "/mcp", &in_session, "");
    assert!(matches!(status, 200 | 204), "DELETE on B: {status} {body}");
    assert_eq!(list_tools(b.port, &session).0, 404, "B deleted it");
    // The instances resubscribe within a second (RETRY); a bound generous for a loaded machine.
    eventually_blocking("A and C answer 404 for the session deleted on B", Duration::from_secs(10), || {
        list_tools(a.port, &session).0 == 404 && list_tools(c.port, &session).0 == 404
    });
}

/// A `logging/setLevel` whose bus message the other instances miss (their pub/sub connections
/// dropped while it is answered) still reaches their copies once they are subscribed again: on
/// resubscribing, each copy reads its record and takes the level, so a tool's log messages reach
/// the client on C too. Without that, C's copy kept the level it had (none set: no log messages)
/// for as long as it was in use.
#[test]
fn a_log_level_set_while_the_bus_was_down_reaches_the_other_copies() {
    let Some((_redis, redis_port, [a, b, c])) = instances() else { return };
    let session = session_on(&a, &c);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_tool_with_logging", "arguments": {}}});
    let logged = |port: u16| {
        let (status, _, body) = post(port, Some(&session), &call);
        assert_eq!(status, 200, "tools/call on {port}: {body}");
        assert!(message(&body)["result"].is_object(), "{body}");
        body.contains("notifications/message")
    };
    assert!(!logged(c.port), "no level set yet: no log messages");
    let killed = cli(redis_port, &["CLIENT", "KILL", "TYPE", "pubsub"]).unwrap_or_default();
    assert_eq!(killed, "3", "every instance's bus subscription dropped");
    let set_level = json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "info"}});
    let (status, _, body) = post(b.port, Some(&session), &set_level);
    assert_eq!(status, 200, "logging/setLevel on B: {body}");
    assert!(logged(b.port), "B set the level: its copy logs");
    // The instances resubscribe within a second (RETRY); a bound generous for a loaded machine.
    eventually_blocking("C's copy sends the tool's log messages", Duration::from_secs(10), || logged(c.port));
    assert!(logged(a.port), "A's copy took the level too");
}
