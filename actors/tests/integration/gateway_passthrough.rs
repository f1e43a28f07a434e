//! Gateway pass-through, through real processes, with the official Python SDK
//! as the calling client of `mcpd -s --servers`:
//!
//! - in a session, over npm server-everything (stdio): the remote's progress reaches the
//!   client's progress callback; the remote's elicitation is asked of the client's elicitation
//!   callback and its answer reaches the tool's result; a client without the elicitation
//!   capability gets a clean refusal (no made-up defaults);
//! - in a session, over server-everything and the `everything` fixture (HTTP): the remotes' log
//!   messages reach the client's logging callback (the caller's log level is sent on to the
//!   remote); cancelling a call (`notifications/cancelled`) reaches a third remote, another
//!   mcpd, whose command for the call is killed (its process is gone) while the session carries on;
//! - on the stateless 2026-07-28 wire: the fixture's log messages reach the client on the
//!   request's stream; the fixture's elicitation (an MRTR round of its own) comes back as the
//!   gateway's `input_required` round (the remote's question in `inputRequests`, a
//!   `requestState`), and the retry with the client's answer gets the remote's final result with
//!   that answer; closing a request's stream cancels the remote's call likewise.
//!
//! Not covered here: sampling and roots forwarding (the same path as elicitation), progress on
//! the stateless wire, and a caller in a session answering a stateless remote's round.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::interop_servers;
use crate::support::process;
use crate::support::python;

/// The `/status` document of a `mcpd` child (`null` when it is not JSON).
fn status_of(child: &process::HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// A servers file in `dir` with `servers` as its `mcpServers`.
pub(crate) fn servers_file(dir: &tempfile::TempDir, servers: Value) -> String {
    let path = dir.path().join("servers.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json!({ "mcpServers": servers })).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Waits until every remote of the gateway is up.
pub(crate) fn all_up(gateway: &process::HttpChild) {
    let status = eventually_blocking("every remote is up", Duration::from_secs(15), || {
        let status = status_of(gateway);
        if status["remotes"].as_array().is_some_and(|r| !r.is_empty() && r.iter().all(|s| s["up"] == true)) {
            Ok(status)
        } else {
            Err(status)
        }
    });
    assert!(status["remotes"].as_array().unwrap().iter().all(|s| s["up"] == true), "{status}");
}

/// End to end with the official Python SDK as the downstream client of `mcpd -s --servers`
/// over npm server-everything (stdio): the remote's progress reaches the client's progress
/// callback; the remote's elicitation reaches the client's elicitation callback and its answer
/// goes back into the tool's result; a client without the elicitation capability gets a clean
/// refusal, which the remote's tool reports.
#[test]
fn python_client_gets_the_remotes_progress_and_elicitation_through_mcpd() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let servers = servers_file(&dir, json!({"everything": interop_servers::everything_stdio(&entry)}));
    let gateway = process::HttpChild::spawn(&["--no-file-tools", "-s", "--servers", &servers]);
    all_up(&gateway);
    // The elicitation tool is registered once the remote knows the gateway can elicit.
    eventually_blocking("the remote's elicitation tool is exported", Duration::from_secs(15), || {
        let status = status_of(&gateway);
        let tools = status["remotes"][0]["tools"].as_u64().unwrap_or(0);
        if tools > 0 {
            Ok(tools)
        } else {
            Err(status)
        }
    });
    let mut cmd = std::process::Command::new(python);
    cmd.arg(crate::support::interop_script("py_passthrough_client.py")).arg(gateway.url()).arg("everything__");
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();

    // Progress: the remote's three steps, as the remote counted them, in order.
    let long_text = report["long"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(long_text.contains("Long running operation completed"), "{report}");
    assert_eq!(report["progress"], json!([[1.0, 3.0, null], [2.0, 3.0, null], [3.0, 3.0, null]]), "{report}");

    // Elicitation: asked of the Python client with the remote's form, answered by it.
    let asked = &report["elicitations"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(asked[0]["message"], "Please provide inputs for the following fields:", "{report}");
    assert_eq!(asked[0]["requestedSchema"]["required"], json!(["name"]), "{report}");
    let elicited = report["elicited"].to_string();
    assert!(report["elicited"]["isError"] != true, "{report}");
    assert!(
        elicited.contains("User provided the requested information") && elicited.contains("Ada Lovelace"),
        "{report}"
    );

    // No elicitation capability: refused with the reason, never answered with the defaults.
    let refused = report["refused"].to_string();
    assert_eq!(report["refused"]["isError"], true, "{report}");
    assert!(refused.contains("did not declare the elicitation capability"), "{report}");
    assert!(!refused.contains("It was a dark and stormy night"), "no made-up defaults: {report}");
}

/// A gateway over `everything` (npm server-everything, stdio), `ev` (the `everything`
/// conformance fixture over HTTP) and `slow` (another mcpd whose declared tool `slow` appends its
/// process id to `pids`, then sleeps two minutes); the remotes' processes are kept alive with it.
struct Gateway {
    gateway: process::HttpChild,
    _ev: process::HttpChild,
    _slow: process::HttpChild,
    pids: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn gateway_of_three(entry: &std::path::Path) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let script = format!("echo $$ >> '{}'; exec sleep 120", pids.display());
    let declarations = dir.path().join("declarations.json");
    let slow_tool = json!({"name": "slow", "description": "Sleeps two minutes.", "inputSchema": {"type": "object"},
        "argv": ["sh", "-c", script], "timeoutSeconds": 300});
    std::fs::write(&declarations, json!({ "tools": [slow_tool] }).to_string()).unwrap();
    let slow = process::HttpChild::spawn_declared(&project, &declarations);
    let ev = process::HttpChild::spawn_everything();
    let servers = servers_file(
        &dir,
        json!({
            "everything": interop_servers::everything_stdio(entry),
            "ev": {"url": ev.url()},
            "slow": {"url": slow.url()}
        }),
    );
    let gateway = process::HttpChild::spawn(&["--no-file-tools", "-s", "--servers", &servers]);
    all_up(&gateway);
    Gateway { gateway, _ev: ev, _slow: slow, pids, _dir: dir }
}

/// Runs `py_passthrough_wire_client.py` against `gateway` in `mode`; its report.
fn wire_report(python: &std::path::Path, gateway: &Gateway, mode: &str) -> Value {
    let mut cmd = std::process::Command::new(python);
    cmd.arg(crate::support::interop_script("py_passthrough_wire_client.py"))
        .arg(gateway.gateway.url())
        .arg(mode)
        .arg(&gateway.pids);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{mode}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{mode}: not JSON ({e}): {stdout}"))
}

/// The fixture's `test_tool_with_logging` reached the client: its three messages, in order.
fn assert_fixture_logs(report: &Value) {
    let logs = report["logs"].as_array().cloned().unwrap_or_default();
    let fixture: Vec<Value> =
        logs.into_iter().filter(|m| m["logger"] == "test_tool_with_logging").map(|m| m["data"].clone()).collect();
    assert_eq!(fixture, ["Tool execution started", "Tool processing data", "Tool execution completed"], "{report}");
}

/// What a cancelled `slow__slow` came to: the caller's cancellation reached the remote, whose
/// command (a process the remote runs for the call) is gone long before its two minutes.
fn assert_cancelled(report: &Value) {
    let cancel = &report["cancel"];
    assert!(cancel["pid"].as_u64().is_some(), "the remote ran the command: {report}");
    assert_eq!(cancel["gone"], true, "the remote's command is killed when the caller cancels: {report}");
    assert!(cancel.get("result").is_none(), "a cancelled call has no result: {report}");
    let after = report["after"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(after, "Tool with logging executed successfully", "the caller carries on: {report}");
}

/// In a session (the Python SDK's initialize handshake): the remotes' log messages reach the
/// client's logging callback — server-everything's simulated log (one message, at a random
/// level, sent as logging starts) and the fixture's three messages, in order — and cancelling a
/// call (`notifications/cancelled`) cancels the remote's, whose command process is killed.
#[test]
fn python_session_client_gets_the_remotes_log_and_its_cancellation_reaches_the_remote() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let gateway = gateway_of_three(&entry);
    let report = wire_report(&python, &gateway, "legacy");

    let toggled = report["toggled"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(toggled.starts_with("Started simulated, random-leveled logging"), "{report}");
    let simulated = report["logs"].as_array().unwrap().iter().filter(|m| m.get("logger").is_none()).count();
    let texts: Vec<String> = report["logs"].as_array().unwrap().iter().map(|m| m["data"].to_string()).collect();
    assert!(
        simulated >= 1 && texts.iter().any(|t| t.contains("level message") || t.contains("level-message")),
        "{report}"
    );
    assert_fixture_logs(&report);
    assert_cancelled(&report);
}

/// On the stateless 2026-07-28 wire (the Python SDK pinned to it, log level opted in per
/// request): the remote's log messages reach the client on the request's stream; the remote's
/// elicitation comes back as the gateway's own `input_required` round (the remote's question in
/// `inputRequests`, a `requestState`), and the retry with the client's answer gets the remote's
/// final result with that answer in it; closing a request's stream cancels the remote's call.
#[test]
fn python_stateless_client_gets_the_remotes_log_and_input_round_and_its_cancellation_reaches_the_remote() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let gateway = gateway_of_three(&entry);
    let report = wire_report(&python, &gateway, "2026-07-28");

    assert_fixture_logs(&report);

    let round = &report["round"];
    assert_eq!(round["resultType"], "input_required", "{report}");
    let requests = round["inputRequests"].as_object().cloned().unwrap_or_default();
    assert_eq!(requests.len(), 1, "{report}");
    let (_, request) = requests.into_iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{report}");
    assert_eq!(request["params"]["message"], "What is your name?", "{report}");
    assert!(round["requestState"].as_str().is_some_and(|s| !s.is_empty()), "{report}");
    assert_eq!(report["final"]["content"][0]["text"], "Hello, Ada Lovelace!", "{report}");
    assert_eq!(report["asked"], json!([]), "the round was the caller's own, not the SDK's loop: {report}");

    assert_cancelled(&report);
}
