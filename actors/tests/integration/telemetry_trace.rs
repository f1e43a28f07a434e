//! Traces of real requests, seen by an independent collector (`otlp_receiver.py`, the official
//! OTLP definitions): the official Python SDK calls a remote's tool through `mcpd serve
//! --servers` (a gateway) from inside a span of its own, and the trace reads caller → gateway
//! SERVER → gateway CLIENT → remote SERVER, each span the parent of the next, with the MCP
//! conventions' attributes and the duration histograms (exported, and on `/metrics`). A tool
//! error and a JSON-RPC error are recorded with status ERROR; a command tool's process has a
//! span of its own with its exit code, and saw that span's `TRACEPARENT`; the log line written
//! while the call ran names its trace.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::gateway_passthrough::{all_up, servers_file};
use crate::support::eventually::eventually_blocking;
use crate::support::otlp::{attributes, caller_context, export_to, names, Receiver, ARRIVAL};
use crate::support::process::{self, http, mcpd_command, HttpChild};
use crate::support::python;

/// `mcpd serve --no-file-tools <extra>` exporting to `receiver` as `service`.
pub(crate) fn traced_mcpd(receiver: &Receiver, service: &str, extra: &[&str]) -> HttpChild {
    let mut cmd = mcpd_command();
    cmd.args(["serve", "--no-file-tools"]).args(extra);
    export_to(&mut cmd, receiver, service);
    HttpChild::spawn_command(cmd)
}

/// One 2026-07-28 request with `traceparent` in its `_meta`: its HTTP status and JSON body.
pub(crate) fn call_traced(port: u16, method: &str, params: Value, traceparent: &str) -> (u16, Value) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "traceparent": traceparent,
    });
    let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).unwrap_or_default();
    let name = mcpd::headers::encode_value(name);
    let body = json!({"jsonrpc": "2.0", "id": 11, "method": method, "params": params}).to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name.as_str()),
    ];
    let (status, _, text) = http(port, "POST", "/mcp", &headers, &body);
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
}

/// The span named `name` of `service`, once it arrived.
fn span_of(receiver: &Receiver, service: &str, kind: &str, name: &str) -> Value {
    receiver.wait_span(&format!("{service}'s {kind} span {name}"), |s| {
        s["service"] == service && s["kind"] == kind && s["name"] == name
    })
}

#[test]
fn telemetry_a_gateway_call_is_one_trace_from_the_python_caller_to_the_remote() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(receiver) = Receiver::start(&[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let remote = traced_mcpd(&receiver, "remote", &[]);
    let servers = servers_file(&dir, json!({"remote": {"url": remote.url()}}));
    let gateway = traced_mcpd(&receiver, "gateway", &["-s", "--servers", &servers]);
    all_up(&gateway);
    let (trace, caller) = caller_context(0x5eed_cafe);
    let mut cmd = Command::new(&python);
    cmd.arg(crate::support::interop_script("py_trace_client.py"))
        .args([gateway.url().as_str(), &trace, &caller])
        .arg(r#"remote__echo={"text":"traced"}"#);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("traced"), "the call went through: {stdout}");

    // Caller → gateway SERVER.
    let served = span_of(&receiver, "gateway", "SPAN_KIND_SERVER", "tools/call remote__echo");
    assert_eq!(served["trace_id"], trace, "the caller's trace");
    assert_eq!(served["parent_span_id"], caller, "the caller's span is the parent (its _meta)");
    let a = attributes(&served);
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "remote__echo");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["network.transport"], "tcp");
    assert!(a["jsonrpc.request.id"].parse::<u64>().is_ok(), "{a:?}");
    assert!(mcpd::version::ProtocolVersion::parse(&a["mcp.protocol.version"]).is_some(), "{a:?}");
    let session = a["mcp.session.id"].clone();
    assert!(!session.is_empty(), "a session's request names it: {a:?}");
    assert!(served.get("status").and_then(|s| s.get("code")).is_none(), "no error: {served}");

    // Gateway SERVER → gateway CLIENT.
    let sent = span_of(&receiver, "gateway", "SPAN_KIND_CLIENT", "tools/call echo");
    assert_eq!(sent["trace_id"], trace);
    assert_eq!(sent["parent_span_id"], served["span_id"], "the call the gateway serves is the parent");
    let c = attributes(&sent);
    assert_eq!(c["mcp.method.name"], "tools/call");
    assert_eq!(c["gen_ai.tool.name"], "echo");
    assert_eq!(c["server.address"], "127.0.0.1");
    assert_eq!(c["server.port"], remote.port.to_string());
    assert_eq!(c["mcp.protocol.version"], "2026-07-28", "the remote's wire");
    assert_eq!(c["network.transport"], "tcp");

    // Gateway CLIENT → remote SERVER.
    let remote_served = span_of(&receiver, "remote", "SPAN_KIND_SERVER", "tools/call echo");
    assert_eq!(remote_served["trace_id"], trace, "one trace from the caller to the remote");
    assert_eq!(remote_served["parent_span_id"], sent["span_id"], "the gateway's CLIENT span is the parent");
    let r = attributes(&remote_served);
    assert_eq!(r["jsonrpc.request.id"], c["jsonrpc.request.id"], "the id on the remote's wire");
    assert_eq!(r["mcp.protocol.version"], "2026-07-28");
    assert!(links_of(&remote_served).is_empty(), "the HTTP header names the same span: nothing to link");

    // The session's initialize is a span of its own, naming the session.
    let initialize = span_of(&receiver, "gateway", "SPAN_KIND_SERVER", "initialize");
    assert_eq!(attributes(&initialize)["mcp.session.id"], session);

    // The histograms: exported, and on /metrics.
    let point = eventually_blocking("the gateway's server histogram", ARRIVAL, || {
        let points = receiver.points("mcp.server.operation.duration");
        points.into_iter().find(|p| attributes(p).get("gen_ai.tool.name").map(String::as_str) == Some("remote__echo"))
    });
    assert_eq!(attributes(&point)["mcp.method.name"], "tools/call");
    eventually_blocking("the gateway's client histogram", ARRIVAL, || {
        let points = receiver.points("mcp.client.operation.duration");
        points.into_iter().find(|p| attributes(p).get("gen_ai.tool.name").map(String::as_str) == Some("echo"))
    });
    let (_, _, metrics) = http(gateway.port, "GET", "/metrics", &[], "");
    let served_line = metrics
        .lines()
        .find(|l| {
            l.starts_with("mcp_server_operation_duration_seconds_count{")
                && l.contains("gen_ai_tool_name=\"remote__echo\"")
        })
        .unwrap_or_else(|| panic!("no server histogram on /metrics:\n{metrics}"));
    assert!(served_line.contains("mcp_method_name=\"tools/call\""), "{served_line}");
    assert!(metrics.contains("mcp_client_operation_duration_seconds_bucket{"), "{metrics}");
    assert!(metrics.contains("mcpd_otlp_spans_total{outcome=\"exported\"}"), "{metrics}");

    // The Python client's session ended (DELETE): its length is recorded.
    eventually_blocking("the session's length", ARRIVAL, || {
        let points = receiver.points("mcp.server.session.duration");
        points.into_iter().find(|p| attributes(p).get("network.transport").map(String::as_str) == Some("tcp"))
    });
}

/// Without a trace context in `_meta`, the HTTP request's `traceparent` header is the parent;
/// with one in each, `_meta`'s is the parent and the header's is linked.
#[test]
fn telemetry_the_http_context_is_the_parent_only_without_one_in_meta() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let server = traced_mcpd(&receiver, "headers", &[]);
    let (trace, meta_span) = caller_context(0x4ead);
    let (_, header_span) = caller_context(0x4eae);
    let header = format!("00-{trace}-{header_span}-01");
    for (text, meta) in [("header only", None), ("both", Some(format!("00-{trace}-{meta_span}-01")))] {
        let mut params = json!({"name": "echo", "arguments": {"text": text}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }});
        if let Some(meta) = meta {
            params["_meta"]["traceparent"] = Value::from(meta);
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
            ("traceparent", header.as_str()),
        ];
        let (status, _, answer) = http(server.port, "POST", "/mcp", &headers, &body);
        assert_eq!(status, 200, "{answer}");
    }
    let spans = eventually_blocking("both calls' spans", ARRIVAL, || {
        let spans: Vec<Value> = receiver.spans().into_iter().filter(|s| s["name"] == "tools/call echo").collect();
        (spans.len() == 2).then_some(spans)
    });
    let by_header = spans.iter().find(|s| s["parent_span_id"] == header_span.as_str()).expect("the header's child");
    assert!(links_of(by_header).is_empty(), "{by_header}");
    let by_meta = spans.iter().find(|s| s["parent_span_id"] == meta_span.as_str()).expect("the _meta's child");
    assert_eq!(links_of(by_meta), [header_span], "the HTTP context is linked");
}

fn links_of(span: &Value) -> Vec<String> {
    crate::support::otlp::links(span)
}

/// A tool error, a JSON-RPC error and a command's span, on one server: the command prints the
/// `TRACEPARENT` it was given and fails (exit 3, a `CallToolResult` with `isError`).
#[test]
fn telemetry_errors_and_a_commands_process_are_recorded() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let tool = crate::tasks::command_tool("fails", "echo \"saw $TRACEPARENT\"; exit 3", "forbidden");
    let (_dir, root, file) = crate::tasks::project(json!([tool]));
    let mut cmd = mcpd_command();
    cmd.args(["serve", "-d", &root, "--tools", &file, "--no-file-tools", "--no-file-resources"]);
    cmd.env("RUST_LOG", "mcpd_actors::tools=debug,info");
    export_to(&mut cmd, &receiver, "errors");
    let server = HttpChild::spawn_command(cmd);
    let (trace, caller) = caller_context(0xe770);
    let parent = format!("00-{trace}-{caller}-01");

    let (status, failed) = call_traced(server.port, "tools/call", json!({"name": "fails", "arguments": {}}), &parent);
    assert_eq!(status, 200, "{failed}");
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let (_, unknown) = call_traced(server.port, "tools/call", json!({"name": "nope", "arguments": {}}), &parent);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // Refused before it is served (its Mcp-Name header names another tool): a span all the same.
    let body = json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "fails", "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": parent,
    }}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "other"),
    ];
    let (_, _, mismatch) = http(server.port, "POST", "/mcp", &headers, &body.to_string());
    assert!(mismatch.contains("-32020"), "{mismatch}");

    let tool_error = span_of(&receiver, "errors", "SPAN_KIND_SERVER", "tools/call fails");
    assert_eq!(tool_error["parent_span_id"], caller);
    assert_eq!(tool_error["status"]["code"], "STATUS_CODE_ERROR", "{tool_error}");
    assert_eq!(attributes(&tool_error)["error.type"], "tool_error");

    // The made-up tool name is an attribute, not the span's name.
    let rpc_error = receiver.wait_span("the unknown tool's span", |s| {
        s["kind"] == "SPAN_KIND_SERVER" && attributes(s).get("gen_ai.tool.name").map(String::as_str) == Some("nope")
    });
    assert_eq!(rpc_error["name"], "tools/call", "a name the catalog lacks names no span");
    assert_eq!(rpc_error["status"]["code"], "STATUS_CODE_ERROR", "{rpc_error}");
    assert!(!rpc_error["status"]["message"].as_str().unwrap_or_default().is_empty(), "{rpc_error}");
    let e = attributes(&rpc_error);
    assert_eq!(e["error.type"], "-32602");
    assert_eq!(e["rpc.response.status_code"], "-32602");

    let refused = receiver.wait_span("the refused request's span", |s| {
        attributes(s).get("error.type").map(String::as_str) == Some("-32020")
    });
    assert_eq!(
        (refused["name"].as_str(), refused["parent_span_id"].as_str()),
        (Some("tools/call"), Some(caller.as_str()))
    );
    assert_eq!(attributes(&refused)["jsonrpc.request.id"], "12");

    // The command's process: a child of the call, its exit code, and the context it was given.
    let command = span_of(&receiver, "errors", "SPAN_KIND_INTERNAL", "command");
    assert_eq!(command["trace_id"], trace);
    assert_eq!(command["parent_span_id"], tool_error["span_id"]);
    let p = attributes(&command);
    assert_eq!(p["process.exit.code"], "3");
    assert_eq!(p["process.executable.name"], "sh");
    assert_eq!(command["status"]["code"], "STATUS_CODE_ERROR");
    let printed = failed["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    let given = format!("saw 00-{trace}-{}-01", command["span_id"].as_str().unwrap());
    assert!(printed.contains(&given), "the command saw its span's TRACEPARENT: {printed:?} (expected {given})");

    // The histograms name only the tool the catalog has.
    let points = eventually_blocking("the call's histogram", ARRIVAL, || {
        let points = receiver.points("mcp.server.operation.duration");
        let has_fails =
            points.iter().any(|p| attributes(p).get("error.type").map(String::as_str) == Some("tool_error"));
        let has_unknown = points.iter().any(|p| attributes(p).get("error.type").map(String::as_str) == Some("-32602"));
        (has_fails && has_unknown).then_some(points)
    });
    assert!(
        points.iter().all(|p| attributes(p).get("gen_ai.tool.name").map(String::as_str) != Some("nope")),
        "a client's made-up tool is no label: {points:#?}"
    );

    // The log line written while the command's call ran names the call's trace.
    let line = eventually_blocking("the command's log line", ARRIVAL, || {
        server.stderr_lines().into_iter().find(|l| l.contains("command \"sh\" ended"))
    });
    assert!(line.contains(&format!("trace_id={trace}")), "{line}");
    assert!(line.contains(&format!("span_id={}", tool_error["span_id"].as_str().unwrap())), "{line}");
    let spans = receiver.spans();
    assert!(spans.iter().all(|s| s["service"] == "errors"), "{:?}", names(&spans));
}

/// A request a session's server sends its client (`elicitation/create`, from the `everything`
/// fixture's tool): a CLIENT span, the child of the call being served, whose context the
/// request carries in its `_meta` (the official Python SDK's callback sees it).
#[test]
fn telemetry_a_servers_request_to_its_client_is_a_client_span() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(receiver) = Receiver::start(&[]) else { return };
    let mut cmd = process::everything_command();
    export_to(&mut cmd, &receiver, "asks");
    let server = HttpChild::spawn_command(cmd);
    let (trace, caller) = caller_context(0xe11c);
    let mut cmd = Command::new(&python);
    cmd.arg(crate::support::interop_script("py_trace_client.py"))
        .args([server.url().as_str(), &trace, &caller])
        .arg(r#"test_elicitation={"message":"who?"}"#);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(
        report["calls"][0]["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("accept")),
        "{report}"
    );

    let call = span_of(&receiver, "asks", "SPAN_KIND_SERVER", "tools/call test_elicitation");
    assert_eq!(call["parent_span_id"], caller);
    let asked = span_of(&receiver, "asks", "SPAN_KIND_CLIENT", "elicitation/create");
    assert_eq!(asked["trace_id"], trace);
    assert_eq!(asked["parent_span_id"], call["span_id"], "asked while serving the call");
    let a = attributes(&asked);
    assert_eq!(a["mcp.method.name"], "elicitation/create");
    assert_eq!(a["mcp.session.id"], attributes(&call)["mcp.session.id"]);
    assert!(!a["jsonrpc.request.id"].is_empty(), "{a:?}");
    let seen = &report["elicitations"][0]["traceparent"];
    let expected = format!("00-{trace}-{}-01", asked["span_id"].as_str().unwrap());
    assert_eq!(seen, expected.as_str(), "the request carried its span's context: {report}");
}

/// `mcpd call` is traced as the child of the `TRACEPARENT` its environment names, and the server
/// it calls continues the trace; what it queued is exported before it exits.
#[test]
fn telemetry_mcpd_call_continues_the_trace_of_its_environment() {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let server = traced_mcpd(&receiver, "served", &[]);
    let (trace, caller) = caller_context(0xc11);
    let mut cmd = mcpd_command();
    cmd.args(["call", &server.url(), "echo", "--args", r#"{"text":"from the shell"}"#]);
    export_to(&mut cmd, &receiver, "cli");
    // Only the export when the command ends: none is scheduled in its time.
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "600000").env("TRACEPARENT", format!("00-{trace}-{caller}-01"));
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(30));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("from the shell"));

    let spans = receiver.spans();
    let sent = spans
        .iter()
        .find(|s| s["service"] == "cli" && s["name"] == "tools/call echo")
        .unwrap_or_else(|| panic!("exported before exit: {:?}", names(&spans)));
    assert_eq!(sent["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(sent["trace_id"], trace);
    assert_eq!(sent["parent_span_id"], caller, "TRACEPARENT is the parent");
    assert_eq!(attributes(sent)["server.port"], server.port.to_string());
    let served = span_of(&receiver, "served", "SPAN_KIND_SERVER", "tools/call echo");
    assert_eq!(served["parent_span_id"], sent["span_id"]);
}
