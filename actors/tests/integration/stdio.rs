//! The stdio transport through the real `mcpd` binary: newline-delimited
//! JSON-RPC on stdin/stdout, only MCP on stdout, logs on stderr, every request answered before
//! the process exits at end of input.

use std::collections::HashMap;
use std::process::Output;

use serde_json::{json, Value};

use crate::support::process::{json_lines, mcpd_command, ndjson, run_with_timeout, text, RUN_TIMEOUT};

/// Runs `mcpd <args>` over stdio with `input` as stdin; asserts exit 0.
fn session_raw(args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = run_with_timeout(&mut cmd, input, RUN_TIMEOUT);
    assert_eq!(output.status.code(), Some(0), "exit status; stderr:\n{}", text(&output.stderr));
    output
}

/// Sends `messages` (one per line) and returns every stdout line, parsed.
fn session(messages: &[Value]) -> Vec<Value> {
    json_lines(&session_raw(&[], &[], &ndjson(messages)).stdout)
}

/// Indexes single responses by their id (as JSON text); panics on a duplicate.
fn by_id(responses: &[Value]) -> HashMap<String, Value> {
    let mut map = HashMap::new();
    for response in responses {
        assert!(response.is_object(), "expected a single response, got {response}");
        let id = response["id"].to_string();
        assert!(map.insert(id.clone(), response.clone()).is_none(), "two responses with id {id}: {responses:?}");
    }
    map
}

fn response(responses: &[Value], id: u64) -> Value {
    by_id(responses)
        .remove(&json!(id).to_string())
        .unwrap_or_else(|| panic!("no response with id {id} in {responses:?}"))
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize(id: u64, version: &str) -> Value {
    request(
        id,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "stdio-test", "version": "1"}}),
    )
}

fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

fn result(response: &Value) -> &Value {
    response.get("result").unwrap_or_else(|| panic!("expected a result, got {response}"))
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {response}"))
}

/// `initialize` (2025-11-25) answers with protocolVersion, serverInfo and a tools capability.
#[test]
fn initialize_reports_version_server_info_and_tools_capability() {
    let responses = session(&[initialize(1, "2025-11-25")]);
    assert_eq!(responses.len(), 1, "{responses:?}");
    let init = response(&responses, 1);
    assert_eq!(init["jsonrpc"], "2.0");
    let result = result(&init);
    assert_eq!(result["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(result["serverInfo"]["name"], "mcpd", "{init}");
    assert!(result["serverInfo"]["version"].is_string(), "{init}");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");
}

/// `tools/list` lists the built-in `echo` and `time`.
#[test]
fn tools_list_has_echo_and_time() {
    let responses = session(&[initialize(1, "2025-11-25"), request(2, "tools/list", json!({}))]);
    let list = response(&responses, 2);
    let names: Vec<&str> =
        result(&list)["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"time"), "{list}");
}

/// `tools/call echo` returns non-ASCII text unchanged.
#[test]
fn echo_round_trips_unicode() {
    let responses = session(&[
        initialize(1, "2025-11-25"),
        request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "héllo"}})),
    ]);
    let call = response(&responses, 2);
    let result = result(&call);
    assert_eq!(result["content"][0]["type"], "text", "{call}");
    assert_eq!(result["content"][0]["text"], "héllo", "{call}");
    assert_ne!(result["isError"], true, "{call}");
}

/// With `RUST_LOG=debug`, stdout still holds only JSON-RPC lines and the logs go to stderr.
#[test]
fn stdout_is_only_json_rpc_even_with_debug_logging() {
    let input = ndjson(&[
        initialize(1, "2025-11-25"),
        request(2, "tools/list", json!({})),
        request(3, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})),
        request(4, "tools/call", json!({"name": "time", "arguments": {}})),
        request(5, "no/such/method", json!({})),
    ]);
    let output = session_raw(&[], &[("RUST_LOG", "debug")], &input);
    let stdout = text(&output.stdout);
    assert!(stdout.ends_with('\n'), "stdout must end with a newline: {stdout:?}");
    for line in stdout.lines() {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("non-JSON stdout line ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        assert!(message.get("id").is_some(), "{line}");
        assert!(message.get("result").is_some() ^ message.get("error").is_some(), "{line}");
    }
    assert_eq!(stdout.lines().count(), 5, "{stdout}");
    assert!(!output.stderr.is_empty(), "RUST_LOG=debug must log something to stderr");
}

/// After stdin ends, every request sent before EOF is answered (in any order) and the process
/// exits 0.
#[test]
fn every_request_before_eof_is_answered_then_exit_zero() {
    let mut messages = vec![initialize(1, "2025-11-25")];
    for id in 2..40u64 {
        messages.push(match id % 3 {
            0 => request(id, "tools/call", json!({"name": "echo", "arguments": {"text": format!("n{id}")}})),
            1 => request(id, "tools/list", json!({})),
            _ => request(id, "ping", json!({})),
        });
    }
    // A notification gets no answer.
    messages.push(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let responses = session(&messages);
    let map = by_id(&responses);
    assert_eq!(map.len(), 39, "{responses:?}");
    for id in 1..40u64 {
        let answer = map.get(&json!(id).to_string()).unwrap_or_else(|| panic!("id {id} unanswered: {responses:?}"));
        let result = result(answer);
        if id % 3 == 0 && id > 1 {
            assert_eq!(result["content"][0]["text"], format!("n{id}"), "{answer}");
        }
    }
}

/// An invalid JSON line gets -32700 with a null id, and the next line is still served.
#[test]
fn invalid_json_line_is_a_parse_error_and_serving_continues() {
    let mut input = ndjson(&[initialize(1, "2025-11-25")]);
    input.extend_from_slice(b"{this is not json\n");
    input.extend_from_slice(&ndjson(&[request(2, "tools/list", json!({}))]));
    let responses = session_from(&input);
    let parse_errors: Vec<&Value> = responses.iter().filter(|r| r["id"].is_null()).collect();
    assert_eq!(parse_errors.len(), 1, "{responses:?}");
    assert_eq!(error_code(parse_errors[0]), -32700, "{}", parse_errors[0]);
    assert!(parse_errors[0].get("id").is_some(), "id must be present (null): {}", parse_errors[0]);
    assert!(result(&response(&responses, 2))["tools"].is_array());
}

fn session_from(input: &[u8]) -> Vec<Value> {
    json_lines(&session_raw(&[], &[], input).stdout)
}

/// A stateless 2026-07-28 `server/discover` over stdio (no handshake) lists 2026-07-28 and is
/// `resultType: complete`.
#[test]
fn stateless_server_discover_over_stdio() {
    let responses = session(&[request(7, "server/discover", json!({"_meta": stateless_meta()}))]);
    let discover = response(&responses, 7);
    let result = result(&discover);
    let versions = result["supportedVersions"].as_array().unwrap_or_else(|| panic!("{discover}"));
    assert!(versions.contains(&json!("2026-07-28")), "{discover}");
    assert_eq!(result["resultType"], "complete", "{discover}");
}

/// `ping` does not exist on the stateless wire: -32601.
#[test]
fn stateless_ping_is_method_not_found() {
    let responses = session(&[request(8, "ping", json!({"_meta": stateless_meta()}))]);
    let ping = response(&responses, 8);
    assert_eq!(error_code(&ping), -32601, "{ping}");
}

/// `logging/setLevel` after `initialize` answers exactly `{}`.
#[test]
fn logging_set_level_answers_empty_result() {
    let responses = session(&[initialize(1, "2025-11-25"), request(2, "logging/setLevel", json!({"level": "info"}))]);
    let set = response(&responses, 2);
    assert_eq!(set, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
}

fn batch_after(version: &str) -> Vec<Value> {
    let batch = json!([request(2, "tools/list", json!({})), request(3, "ping", json!({}))]);
    session(&[initialize(1, version), batch])
}

/// After a 2025-03-26 handshake a batch is answered by one line holding an array of responses.
#[test]
fn batch_is_answered_as_one_array_under_2025_03_26() {
    let lines = batch_after("2025-03-26");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(result(&response(&lines[..1], 1))["protocolVersion"], "2025-03-26");
    let array = lines[1].as_array().unwrap_or_else(|| panic!("expected an array line, got {}", lines[1]));
    let map = by_id(array);
    assert_eq!(map.len(), 2, "{array:?}");
    assert!(result(&map["2"])["tools"].is_array(), "{array:?}");
    assert_eq!(result(&map["3"]), &json!({}), "{array:?}");
}

/// After a 2025-11-25 handshake a batch is refused with -32600 (batches were removed).
#[test]
fn batch_is_refused_under_2025_11_25() {
    let lines = batch_after("2025-11-25");
    assert_eq!(lines.len(), 2, "{lines:?}");
    let refusal = lines.iter().find(|l| l.get("id") != Some(&json!(1))).expect("refusal");
    assert!(refusal.is_object(), "the refusal is a single error response: {refusal}");
    assert_eq!(error_code(refusal), -32600, "{refusal}");
    assert!(refusal["id"].is_null(), "{refusal}");
}

/// A line longer than `--max-body-bytes` is a -32600 error naming the limit; the next request
/// is still answered.
#[test]
fn over_long_line_is_refused_and_serving_continues() {
    let long = request(2, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2000)}}));
    let input = ndjson(&[
        initialize(1, "2025-11-25"),
        long,
        request(3, "tools/call", json!({"name": "echo", "arguments": {"text": "short"}})),
    ]);
    let output = session_raw(&["--max-body-bytes", "1000"], &[], &input);
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let too_long =
        lines.iter().find(|l| l["id"].is_null()).unwrap_or_else(|| panic!("no error for the long line: {lines:?}"));
    assert_eq!(error_code(too_long), -32600, "{too_long}");
    assert!(too_long["error"]["message"].as_str().unwrap_or_default().contains("1000"), "{too_long}");
    assert!(!lines.iter().any(|l| l["id"] == json!(2)), "the long request must not be answered: {lines:?}");
    assert_eq!(result(&response(&lines, 3))["content"][0]["text"], "short");
}
