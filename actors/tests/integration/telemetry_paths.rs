//! Telemetry on the other paths of real processes, seen by `otlp_receiver.py`: a stdio server's
//! spans (`network.transport = pipe`), exported when its input ends; the rounds of a multi
//! round-trip call linked together; a task's span and a poll linked to it; nothing exported
//! when nothing is configured or the SDK is disabled; and a collector that is down, answers
//! 500 or answers late, which costs the requests nothing: every call is answered, the lost
//! spans are counted on `/metrics`, and the process still stops within the export's limit.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::otlp::{attributes, caller_context, export_to, links, names, Receiver, ARRIVAL};
use crate::support::process::{self, everything_command, http, json_lines, mcpd_command, ndjson, HttpChild};
use crate::telemetry_trace::call_traced;

fn line(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[test]
fn telemetry_a_stdio_servers_spans_are_pipe_and_exported_when_its_input_ends() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let mut cmd = mcpd_command();
    cmd.arg("--no-file-tools");
    export_to(&mut cmd, &receiver, "stdio");
    // Nothing is exported on a schedule in this test's time: only the flush at the end.
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "600000").env("OTEL_METRIC_EXPORT_INTERVAL", "600000");
    let (trace, caller) = caller_context(0x57d10);
    let input = ndjson(&[
        line(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        line(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "piped"}, "_meta": {"traceparent": format!("00-{trace}-{caller}-01")}}),
        ),
    ]);
    let output = process::run_with_timeout(&mut cmd, &input, Duration::from_secs(30));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answers = json_lines(&output.stdout);
    assert!(answers.iter().any(|a| a["id"] == 2 && a["result"]["content"][0]["text"] == "piped"), "{answers:?}");

    // Exported before the process exited: no waiting.
    let spans = receiver.spans();
    let named = |name: &str| {
        spans.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no {name}: {:?}", names(&spans)))
    };
    let call = named("tools/call echo");
    assert_eq!(call["kind"], "SPAN_KIND_SERVER");
    assert_eq!(call["parent_span_id"], caller);
    let a = attributes(call);
    assert_eq!(a["network.transport"], "pipe");
    assert_eq!(a["mcp.protocol.version"], "2025-11-25");
    assert_eq!(a["jsonrpc.request.id"], "2");
    assert_eq!(attributes(named("initialize"))["network.transport"], "pipe");
    assert_eq!(named("notifications/initialized")["kind"], "SPAN_KIND_SERVER");
    let session = receiver.points("mcp.server.session.duration");
    assert!(
        session.iter().any(|p| attributes(p).get("network.transport").map(String::as_str) == Some("pipe")),
        "the stdio session's length: {session:#?}"
    );
}

/// A 2026-07-28 request declaring `capabilities`, its `_meta` carrying no trace context.
fn stateless(port: u16, method: &str, name: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let body = line(1, method, params).to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let (_, _, text) = http(port, "POST", "/mcp", &headers, &body);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn telemetry_the_rounds_of_a_multi_round_trip_call_are_linked() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let mut cmd = everything_command();
    export_to(&mut cmd, &receiver, "rounds");
    let server = HttpChild::spawn_command(cmd);
    const TOOL: &str = "test_input_required_result_request_state";
    let caps = json!({"elicitation": {}});
    let first = stateless(server.port, "tools/call", TOOL, json!({"name": TOOL, "arguments": {}}), caps.clone());
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let retry = json!({
        "name": TOOL, "arguments": {}, "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
    });
    let done = stateless(server.port, "tools/call", TOOL, retry, caps);
    assert!(done["result"]["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("state-ok")), "{done}");

    let name = format!("tools/call {TOOL}");
    let rounds = eventually_blocking("both rounds' spans", ARRIVAL, || {
        let spans: Vec<Value> = receiver.spans().into_iter().filter(|s| s["name"] == name).collect();
        (spans.len() == 2).then_some(spans)
    });
    let (earlier, later): (Vec<&Value>, Vec<&Value>) = rounds.iter().partition(|s| links(s).is_empty());
    assert_eq!((earlier.len(), later.len()), (1, 1), "{rounds:#?}");
    assert_eq!(links(later[0]), [earlier[0]["span_id"].as_str().unwrap()], "the retry links the round it answers");
}

#[test]
fn telemetry_a_tasks_life_is_a_span_its_polls_link_to() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let tool = crate::tasks::command_tool("slow", "sleep 1; echo done", "optional");
    let (_dir, root, file) = crate::tasks::project(json!([tool]));
    let mut cmd = mcpd_command();
    cmd.args(["serve", "-d", &root, "--tools", &file, "--no-file-tools", "--no-file-resources"]);
    cmd.args(["--task-after", "300", "--task-poll-interval", "250"]);
    export_to(&mut cmd, &receiver, "tasks");
    let server = HttpChild::spawn_command(cmd);
    let (trace, caller) = caller_context(0x7a5c);
    let parent = format!("00-{trace}-{caller}-01");
    let (_, created) = call_traced(server.port, "tools/call", json!({"name": "slow", "arguments": {}}), &parent);
    let task_id = crate::tasks::created_task(&created["result"]);
    let done = eventually_blocking("the task completes", ARRIVAL, || {
        let (_, polled) = call_traced(server.port, "tasks/get", json!({"taskId": task_id}), &parent);
        (polled["result"]["status"] == "completed").then_some(polled)
    });
    assert_eq!(done["result"]["taskId"], task_id.as_str());

    let task = receiver.wait_span("the task's span", |s| s["name"] == "task");
    assert_eq!(task["kind"], "SPAN_KIND_INTERNAL");
    assert_eq!(task["trace_id"], trace);
    assert_eq!(attributes(&task)["mcp.task.id"], task_id);
    assert_eq!(attributes(&task)["mcp.task.status"], "completed");
    let call = receiver.wait_span("the call's span", |s| s["name"] == "tools/call slow");
    assert_eq!(task["parent_span_id"], call["span_id"], "the call that became the task is its parent");
    assert_eq!(attributes(&call)["mcp.task.id"], task_id);
    let poll = receiver.wait_span("a poll linked to the task", |s| s["name"] == "tasks/get" && !links(s).is_empty());
    assert_eq!(links(&poll), [task["span_id"].as_str().unwrap()]);
    assert_eq!(poll["parent_span_id"], caller, "the poll's own parent is its caller's");
}

/// Calls `echo` `n` times on `server`, each answered.
fn calls(server: &HttpChild, n: usize) {
    for i in 0..n {
        let text = format!("call {i}");
        let (status, answer) = call_traced(
            server.port,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], text.as_str(), "{answer}");
    }
}

/// Stops `server` with SIGTERM: how long it took to exit.
fn stop(server: &mut HttpChild) -> Duration {
    let asked = Instant::now();
    server.signal("TERM");
    server.wait_exit(Duration::from_secs(20)).expect("mcpd exits on SIGTERM");
    asked.elapsed()
}

#[test]
fn telemetry_nothing_is_exported_unless_configured_or_when_disabled() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let cases: [(&str, &[(&str, &str)]); 3] = [
        ("nothing configured", &[]),
        ("the SDK disabled", &[("OTEL_EXPORTER_OTLP_ENDPOINT", "ENDPOINT"), ("OTEL_SDK_DISABLED", "true")]),
        (
            "both signals off",
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "ENDPOINT"),
                ("OTEL_TRACES_EXPORTER", "none"),
                ("OTEL_METRICS_EXPORTER", "none"),
            ],
        ),
    ];
    for (case, vars) in cases {
        let mut cmd = mcpd_command();
        cmd.args(["serve", "--no-file-tools"]).env("OTEL_BSP_SCHEDULE_DELAY", "10");
        for (name, value) in vars {
            cmd.env(name, if *value == "ENDPOINT" { receiver.endpoint() } else { (*value).to_owned() });
        }
        let mut server = HttpChild::spawn_command(cmd);
        calls(&server, 5);
        let (_, _, metrics) = http(server.port, "GET", "/metrics", &[], "");
        assert!(!metrics.contains("mcpd_otlp_spans_total"), "{case}: no export, no export counts:\n{metrics}");
        assert!(
            metrics.contains("mcp_server_operation_duration_seconds_count{"),
            "{case}: /metrics has the histograms"
        );
        stop(&mut server);
        assert!(receiver.received().is_empty(), "{case}: the collector heard nothing: {:#?}", receiver.received());
    }
}

/// The collector is down (`None`) or answers with these receiver options: 200 calls are all
/// answered (for a late collector, in less time than it takes to answer once), the spans it
/// did not take are counted on `/metrics` as `outcome`, and SIGTERM stops mcpd within the
/// export's limit of 3 s (plus the rest of its stopping).
fn costs_the_requests_nothing(options: Option<&[&str]>, outcome: &str) {
    let receiver = match options {
        Some(options) => match Receiver::start(options) {
            Some(receiver) => Some(receiver),
            None => return,
        },
        None => None,
    };
    let endpoint = match &receiver {
        Some(receiver) => receiver.endpoint(),
        None => format!(
            "http://127.0.0.1:{}",
            std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
        ),
    };
    let mut cmd = mcpd_command();
    cmd.args(["serve", "--no-file-tools"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "20")
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "16")
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "100");
    let mut server = HttpChild::spawn_command(cmd);
    let started = Instant::now();
    calls(&server, 200);
    let took = started.elapsed();
    if options.is_some_and(|o| o.contains(&"--delay")) {
        assert!(took < Duration::from_secs(3), "the calls waited for the collector's 3 s: {took:?}");
    }
    let counted = eventually_blocking(&format!("lost spans counted as {outcome}"), ARRIVAL, || {
        let (_, _, metrics) = http(server.port, "GET", "/metrics", &[], "");
        let sample = format!("mcpd_otlp_spans_total{{outcome=\"{outcome}\"}}");
        crate::support::server::metric(&metrics, &sample).filter(|n| *n > 0.0)
    });
    assert!(counted <= 200.0, "{counted}");
    let stopping = stop(&mut server);
    assert!(stopping < Duration::from_millis(4500), "mcpd took {stopping:?} to stop (the export's limit is 3 s)");
    drop(receiver);
}

#[test]
fn telemetry_a_collector_that_is_down_costs_the_requests_nothing() {
    costs_the_requests_nothing(None, "export_failed");
}

#[test]
fn telemetry_a_collector_answering_500_costs_the_requests_nothing() {
    costs_the_requests_nothing(Some(&["--status", "500"]), "export_failed");
}

#[test]
fn telemetry_a_late_collector_costs_the_requests_nothing() {
    costs_the_requests_nothing(Some(&["--delay", "3"]), "queue_full");
}
