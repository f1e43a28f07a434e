//! Streamable-HTTP sessions against independent peers, on the conformance fixture
//! (`examples/everything.rs`, sessions on):
//!
//! * the official Python MCP SDK (`actors/tests/interop/py_session_client.py`, mcp==2.3.0) opens a
//!   session, receives progress notifications and answers an elicitation over SSE, then DELETEs
//!   its session, which `/metrics` must account for;
//! * the reference Prometheus/OpenMetrics parsers of prometheus-client
//!   (`actors/tests/interop/parse_metrics.py`) read `/metrics` after session and stateless traffic.
//!
//! The interpreter is provisioned as in `interop_python` (`support/python.rs`):
//! `MCPD_TEST_PYTHON` when set, else the venv of `scripts/setup-python.sh`; the tests fail when
//! it cannot be provisioned, unless `MCPD_SKIP_INTEROP=1`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::interop_script;
use crate::support::process;
use crate::support::process::{header_value, http, run_with_timeout, text, HttpChild};
use crate::support::python::{python_with, MCP_SDK};

/// The deadline of one Python run (the session client has its own 60 s timeout).
const PYTHON_TIMEOUT: Duration = Duration::from_secs(90);
/// How long `/metrics` may take to show a deleted session as gone.
const METRICS_SETTLE: Duration = Duration::from_secs(5);
/// The Python statement that checks for both reference parsers.
const PROMETHEUS_PARSERS: &str = "import prometheus_client.parser, prometheus_client.openmetrics.parser";
/// The handshake revision the raw-HTTP traffic uses.
const LEGACY_VERSION: &str = "2025-11-25";

/// Runs `actors/tests/interop/<script> <args>` with `stdin`.
fn run_script(python: &Path, script: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(python);
    cmd.arg(interop_script(script)).args(args).current_dir(process::empty_dir()).env("PYTHONDONTWRITEBYTECODE", "1");
    run_with_timeout(&mut cmd, stdin, PYTHON_TIMEOUT)
}

/// The script's one JSON line, asserting that it succeeded.
fn json_report(script: &str, output: &Output, server: &HttpChild) -> Value {
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}\nserver stderr:\n{}",
        output.status,
        text(&output.stderr),
        server.stderr_lines().join("\n")
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{script} must print exactly one line:\n{stdout}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{script} output is not JSON ({e}): {}", lines[0]))
}

/// The body of `GET /metrics` in the Prometheus text format (the default).
fn metrics(server: &HttpChild) -> String {
    metrics_as(server, None)
}

/// The body of `GET /metrics`, in OpenMetrics when `accept` asks for it.
fn metrics_as(server: &HttpChild, accept: Option<&str>) -> String {
    let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
    let (status, response_headers, body) = http(server.port, "GET", "/metrics", &headers, "");
    assert_eq!(status, 200, "GET /metrics: {body}");
    let content_type = header_value(&response_headers, "content-type").unwrap_or_default();
    let expected = if accept.is_some() { "application/openmetrics-text" } else { "text/plain; version=0.0.4" };
    assert!(content_type.starts_with(expected), "GET /metrics content-type {content_type:?}");
    body
}

/// The value of `series` (name plus labels exactly as exposed, e.g. `x_total{reason="deleted"}`).
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The text form of a JSON progress token, as the fixture echoes it.
fn token_text(token: &Value) -> String {
    match token {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The SDK opens a session (legacy handshake → `Mcp-Session-Id`), receives three progress
/// notifications with its token, answers one `elicitation/create`, and DELETEs the session on
/// exit: `/metrics` counts one session opened and one closed as deleted, and none live.
#[test]
fn python_sdk_session_progress_elicitation_and_delete() {
    let Some(python) = python_with(MCP_SDK) else { return };
    let server = HttpChild::spawn_everything();
    let output = run_script(&python, "py_session_client.py", &[&server.url()], b"");
    let report = json_report("py_session_client.py", &output, &server);

    assert_eq!(report["protocolVersion"], LEGACY_VERSION, "{report}");
    let session_id = report["sessionId"].as_str().unwrap_or_default();
    assert!(!session_id.is_empty(), "the server must issue an Mcp-Session-Id: {report}");

    // Progress: at least 0, 50, 100 of 100, in order, for the token the SDK sent.
    let progress = report["progress"].as_array().unwrap_or_else(|| panic!("no progress array: {report}"));
    assert!(progress.len() >= 3, "at least 3 progress notifications: {report}");
    let mut last = f64::NEG_INFINITY;
    for entry in progress {
        let value = entry[0].as_f64().unwrap_or_else(|| panic!("progress value {entry}: {report}"));
        assert!(value >= last, "progress must not decrease ({last} then {value}): {report}");
        assert_eq!(entry[1].as_f64(), Some(100.0), "total 100: {report}");
        last = value;
    }
    let token = &report["progressToken"];
    assert!(!token.is_null(), "the SDK must send a progress token: {report}");
    assert_eq!(report["progressResult"], token_text(token), "the tool returns the token it was sent: {report}");

    // Elicitation: declared, asked once, accepted with the callback's content.
    assert_eq!(report["elicitationCapability"], true, "providing the callback declares elicitation: {report}");
    assert_eq!(report["elicitationRequests"], 1, "{report}");
    let elicited = report["elicitationResult"].as_str().unwrap_or_default();
    assert!(elicited.contains("action=accept") && elicited.contains("py-user"), "{report}");

    // The SDK's DELETE carried the session id and succeeded.
    assert_eq!(report["delete"]["sessionId"], session_id, "DELETE must name the session: {report}");
    let delete_status = report["delete"]["status"].as_u64();
    assert!(matches!(delete_status, Some(200 | 204)), "DELETE status {delete_status:?}: {report}");

    // The session is gone from /metrics (give the gauges a moment to settle).
    let live = |body: &str| (sample(body, "mcpd_sessions_live"), sample(body, r#"mcpd_actors_live{kind="session"}"#));
    let body = eventually_blocking("no session is live in /metrics", METRICS_SETTLE, || {
        let body = metrics(&server);
        if live(&body) == (Some(0.0), Some(0.0)) {
            Ok(body)
        } else {
            Err(body)
        }
    });
    assert_eq!(live(&body), (Some(0.0), Some(0.0)), "no session may stay live:\n{body}");
    let opened = sample(&body, "mcpd_sessions_opened_total").unwrap_or_else(|| panic!("no sessions opened:\n{body}"));
    assert!(opened >= 1.0, "sessions opened {opened}:\n{body}");
    assert_eq!(sample(&body, r#"mcpd_sessions_closed_total{reason="deleted"}"#), Some(1.0), "{body}");
}

/// A `POST /mcp` of `message` with `headers`; returns the status, headers and body.
fn post(server: &HttpChild, headers: &[(&str, &str)], message: &Value) -> (u16, Vec<(String, String)>, String) {
    let mut all = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    http(server.port, "POST", "/mcp", &all, &message.to_string())
}

/// Session traffic (initialize, a tool call, DELETE) and a stateless 2026-07-28 tool call.
fn traffic(server: &HttpChild) {
    let (status, headers, body) = post(
        server,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "metrics-test", "version": "1"}
        }}),
    );
    assert_eq!(status, 200, "initialize: {body}");
    let session = header_value(&headers, "mcp-session-id").unwrap_or_else(|| panic!("no Mcp-Session-Id: {headers:?}"));
    let in_session = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", LEGACY_VERSION)];

    let (status, _, body) =
        post(server, &in_session, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(status, 202, "notifications/initialized: {body}");
    let (status, _, body) = post(
        server,
        &in_session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {}}}),
    );
    assert_eq!(status, 200, "tools/call in the session: {body}");
    assert!(body.contains("This is a simple text response for testing."), "tools/call in the session: {body}");
    let (status, _, body) = http(server.port, "DELETE", "/mcp", &in_session, "");
    assert!(matches!(status, 200 | 204), "DELETE the session: {status} {body}");

    let (status, _, body) = post(
        server,
        &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "test_simple_text")],
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "test_simple_text",
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "metrics-test", "version": "1"}
            }
        }}),
    );
    assert_eq!(status, 200, "stateless tools/call: {body}");
    assert!(body.contains("This is a simple text response for testing."), "stateless tools/call: {body}");
}

/// The family `name` of the parse summary, asserting its type.
fn family<'a>(summary: &'a Value, name: &str, kind: &str) -> &'a [Value] {
    let family = &summary[name];
    assert_eq!(family["type"], kind, "family {name} must be a {kind}: {summary}");
    family["samples"].as_array().map(Vec::as_slice).unwrap_or_else(|| panic!("family {name} has no samples: {summary}"))
}

/// The samples' label values of `label`, sorted and deduplicated.
fn label_values(samples: &[Value], label: &str) -> Vec<String> {
    let mut values: Vec<String> = samples.iter().filter_map(|s| s[1][label].as_str().map(str::to_owned)).collect();
    values.sort();
    values.dedup();
    values
}

/// Every sample is named `sample_name` and carries exactly the labels `labels`.
fn assert_samples(name: &str, samples: &[Value], sample_name: &str, labels: &[&str]) {
    assert!(!samples.is_empty(), "family {name} has no samples");
    for sample in samples {
        assert_eq!(sample[0], sample_name, "family {name}: {sample}");
        let mut keys: Vec<&str> =
            sample[1].as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        keys.sort_unstable();
        let mut expected = labels.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected, "family {name}: labels of {sample}");
    }
}

/// After session and stateless traffic, `/metrics` parses with both reference parsers of
/// prometheus-client (OpenMetrics and the Prometheus text format), and the OpenMetrics reading
/// has every mcpd family with the right type and labels.
#[test]
fn metrics_parse_with_the_reference_parsers() {
    let Some(python) = python_with(PROMETHEUS_PARSERS) else { return };
    let server = HttpChild::spawn_everything();
    traffic(&server);
    let openmetrics = metrics_as(&server, Some("application/openmetrics-text; version=1.0.0"));
    let output = run_script(&python, "parse_metrics.py", &["openmetrics"], openmetrics.as_bytes());
    let summary = json_report("parse_metrics.py", &output, &server);
    let prometheus = metrics(&server);
    let output = run_script(&python, "parse_metrics.py", &["prometheus"], prometheus.as_bytes());
    let text_summary = json_report("parse_metrics.py", &output, &server);
    // Both formats say the same thing: same families, types, samples and values — except the
    // open-connections gauge, which is live and may differ between the two scrapes (a
    // connection of the traffic or of the first scrape may still be closing).
    let without_live = |summary: &Value| {
        let mut summary = summary.clone();
        if let Some(families) = summary.as_object_mut() {
            families.remove("mcpd_connections_open");
        }
        summary
    };
    assert_eq!(without_live(&summary), without_live(&text_summary), "OpenMetrics and Prometheus text readings differ");
    family(&text_summary, "mcpd_connections_open", "gauge");

    let actors = family(&summary, "mcpd_actors_live", "gauge");
    assert_samples("mcpd_actors_live", actors, "mcpd_actors_live", &["kind"]);
    assert_eq!(
        label_values(actors, "kind"),
        ["client_connection", "listener", "session", "supervisor", "task_runner", "tool_executor"],
        "{summary}"
    );
    let tasks = family(&summary, "mcpd_tasks", "gauge");
    assert_samples("mcpd_tasks", tasks, "mcpd_tasks", &["status"]);
    assert_eq!(
        label_values(tasks, "status"),
        ["cancelled", "completed", "failed", "input_required", "working"],
        "{summary}"
    );
    let created = family(&summary, "mcpd_tasks_created", "counter");
    assert_samples("mcpd_tasks_created", created, "mcpd_tasks_created_total", &[]);

    let messages = family(&summary, "mcpd_actor_messages", "counter");
    assert_samples("mcpd_actor_messages", messages, "mcpd_actor_messages_total", &["kind"]);

    let requests = family(&summary, "mcpd_requests", "counter");
    assert_samples("mcpd_requests", requests, "mcpd_requests_total", &["method", "outcome"]);
    let methods = label_values(requests, "method");
    assert!(methods.iter().any(|m| m == "initialize") && methods.iter().any(|m| m == "tools/call"), "{summary}");
    let calls = requests.iter().find(|s| s[1]["method"] == "tools/call" && s[1]["outcome"] == "ok");
    assert_eq!(calls.and_then(|s| s[2].as_f64()), Some(2.0), "two tools/call requests: {summary}");

    let durations = family(&summary, "mcpd_request_duration_seconds", "histogram");
    let names: Vec<&str> = durations.iter().filter_map(|s| s[0].as_str()).collect();
    for suffix in ["_bucket", "_count", "_sum"] {
        assert!(names.iter().any(|n| *n == format!("mcpd_request_duration_seconds{suffix}")), "{summary}");
    }
    assert!(durations.iter().any(|s| s[1]["le"] == "+Inf"), "a +Inf bucket: {summary}");
    let count = durations.iter().find(|s| s[0] == "mcpd_request_duration_seconds_count").map(|s| &s[2]);
    assert!(count.and_then(Value::as_f64).is_some_and(|c| c >= 1.0), "requests were timed: {summary}");

    let tools = family(&summary, "mcpd_tool_calls", "counter");
    assert_samples("mcpd_tool_calls", tools, "mcpd_tool_calls_total", &["tool", "outcome"]);
    // One call in the session, one stateless: both are counted.
    let calls = tools.iter().find(|s| s[1]["tool"] == "test_simple_text" && s[1]["outcome"] == "ok");
    assert_eq!(calls.and_then(|s| s[2].as_f64()), Some(2.0), "test_simple_text called twice: {summary}");

    let opened = family(&summary, "mcpd_sessions_opened", "counter");
    assert_samples("mcpd_sessions_opened", opened, "mcpd_sessions_opened_total", &[]);
    assert!(opened[0][2].as_f64().is_some_and(|v| v >= 1.0), "{summary}");
    let closed = family(&summary, "mcpd_sessions_closed", "counter");
    assert_samples("mcpd_sessions_closed", closed, "mcpd_sessions_closed_total", &["reason"]);
    assert!(label_values(closed, "reason").iter().any(|r| r == "deleted"), "{summary}");
    let expired = family(&summary, "mcpd_sessions_expired", "counter");
    assert_samples("mcpd_sessions_expired", expired, "mcpd_sessions_expired_total", &[]);
}
