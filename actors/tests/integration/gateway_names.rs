//! Names without prefixes (`"prefix": "never"` in a servers file entry), through the real
//! binary: an unprefixed remote's tools are listed and called under their own names beside a
//! prefixed remote's; a collision of unprefixed names — with another unprefixed remote, or with
//! this server's own tools — keeps mcpd from starting (exit 2, both sides named) and a reload
//! that would make one is refused (the configuration in force stays, the error in the status).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};

const RELOAD: Duration = Duration::from_secs(15);

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// A 2025-11-25 request without a session (the gateway runs without `-s`).
fn rpc(child: &HttpChild, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    let (code, _, answer) = process::http(child.port, "POST", "/mcp", &headers, &body);
    assert_eq!(code, 200, "{answer}");
    serde_json::from_str(&answer).unwrap()
}

fn tool_names(child: &HttpChild) -> Vec<String> {
    let answer = rpc(child, "tools/list", json!({}));
    answer["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

fn status_of(child: &HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// Waits until the gateway's remotes are all up.
fn wait_up(gateway: &HttpChild, count: usize) -> Value {
    eventually_blocking(&format!("{count} remotes are up"), RELOAD, || {
        let status = status_of(gateway);
        let remotes = status["remotes"].as_array().cloned().unwrap_or_default();
        (remotes.len() == count && remotes.iter().all(|r| r["up"] == true)).then(|| status.clone()).ok_or(status)
    })
}

#[test]
fn an_unprefixed_remote_is_listed_and_called_under_its_own_names() {
    let github = HttpChild::spawn(&["--no-file-tools"]);
    let tests = HttpChild::spawn_everything();
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    write_json(
        &servers,
        &json!({"mcpServers": {
            "github": {"url": github.url()},
            "tests": {"url": tests.url(), "prefix": "never"}
        }}),
    );
    let gateway = HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    let status = wait_up(&gateway, 2);
    assert_eq!(status["remotes"][0]["prefix"], "github", "{status}");
    assert_eq!(status["remotes"][1]["prefix"], Value::Null, "unprefixed: {status}");
    let names = tool_names(&gateway);
    for name in ["echo", "github__echo", "github__time", "test_simple_text", "test_error_handling"] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("tests__")), "{names:?}");
    let answer = rpc(&gateway, "tools/call", json!({"name": "test_simple_text", "arguments": {}}));
    assert_eq!(answer["result"]["content"][0]["text"], "This is a simple text response for testing.", "{answer}");
    let answer = rpc(&gateway, "tools/call", json!({"name": "github__echo", "arguments": {"text": "prefixed"}}));
    assert_eq!(answer["result"]["content"][0]["text"], "prefixed", "{answer}");
    let prompts = rpc(&gateway, "prompts/list", json!({}));
    let prompts: Vec<&str> =
        prompts["result"]["prompts"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(prompts.contains(&"test_input_required_result_prompt"), "unprefixed prompts too: {prompts:?}");
}

#[test]
fn a_collision_of_unprefixed_names_is_refused_at_start_and_on_reload() {
    let (first, second) = (HttpChild::spawn_everything(), HttpChild::spawn_everything());
    let plain = HttpChild::spawn(&["--no-file-tools"]);
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");

    // At start: mcpd lists the unprefixed remotes first and refuses, naming both sides.
    write_json(
        &servers,
        &json!({"mcpServers": {
            "first": {"url": first.url(), "prefix": "never"},
            "second": {"url": second.url(), "prefix": "never"},
            "plain": {"url": plain.url(), "prefix": "never"}
        }}),
    );
    let mut cmd = process::mcpd_command();
    cmd.args(["--no-file-tools", "--servers", servers.to_str().unwrap(), "-p", "0"]);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "server \"second\" (prefix \"never\"): tool \"test_simple_text\" collides with tool \"test_simple_text\" of server \"first\""
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "server \"plain\" (prefix \"never\"): tool \"echo\" collides with this server's own tool \"echo\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("servers.json"), "the file is named: {stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    let bad = json!({"mcpServers": {"first": {"url": first.url(), "prefix": "sometimes"}}});
    write_json(&servers, &bad);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("server first: prefix must be \"always\" or \"never\", not \"sometimes\""), "{stderr}");

    // On reload: the configuration in force stays, the status says why.
    let good = json!({"mcpServers": {"first": {"url": first.url(), "prefix": "never"}, "plain": {"url": plain.url()}}});
    write_json(&servers, &good);
    let gateway = HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    wait_up(&gateway, 2);
    let before = tool_names(&gateway);
    assert!(
        before.contains(&"test_simple_text".to_owned()) && before.contains(&"plain__echo".to_owned()),
        "{before:?}"
    );
    let mut colliding = good.clone();
    colliding["mcpServers"]["second"] = json!({"url": second.url(), "prefix": "never"});
    write_json(&servers, &colliding);
    let status = eventually_blocking("the reload is refused", RELOAD, || {
        let status = status_of(&gateway);
        status["serversFile"]["lastError"].as_str().map(|_| status.clone()).ok_or(status)
    });
    let error = status["serversFile"]["lastError"].as_str().unwrap();
    assert!(
        error.contains("server \"second\" (prefix \"never\"): tool \"test_simple_text\" collides with tool \"test_simple_text\" of server \"first\""),
        "{status}"
    );
    assert_eq!(status["serversFile"]["reloads"], 0, "{status}");
    let names: Vec<&str> = status["remotes"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["first", "plain"], "the remotes in force stay: {status}");
    assert_eq!(tool_names(&gateway), before);
    let answer = rpc(&gateway, "tools/call", json!({"name": "test_simple_text", "arguments": {}}));
    assert_eq!(answer["result"]["content"][0]["text"], "This is a simple text response for testing.", "{answer}");
    assert!(
        gateway.stderr_lines().iter().any(|l| l.contains("not reloaded") && l.contains("collides with")),
        "{:?}",
        gateway.stderr_lines()
    );

    // A plain local-name collision on reload too: `plain` made unprefixed.
    let mut local = good.clone();
    local["mcpServers"]["plain"]["prefix"] = json!("never");
    write_json(&servers, &local);
    eventually_blocking("the second refusal names the local tool", RELOAD, || {
        let status = status_of(&gateway);
        let error = status["serversFile"]["lastError"].as_str().unwrap_or_default().to_owned();
        error.contains("collides with this server's own tool \"echo\"").then_some(()).ok_or(status)
    });
    assert!(tool_names(&gateway).contains(&"plain__echo".to_owned()), "still prefixed");

    // Fixed: the second remote prefixed; the reload goes through.
    colliding["mcpServers"]["second"]["prefix"] = json!("always");
    write_json(&servers, &colliding);
    eventually_blocking("the fixed file is in force", RELOAD, || {
        let status = status_of(&gateway);
        (status["serversFile"]["lastError"].is_null() && status["serversFile"]["reloads"] == 1)
            .then_some(())
            .ok_or(status)
    });
    wait_up(&gateway, 3);
    let names = tool_names(&gateway);
    assert!(
        names.contains(&"second__test_simple_text".to_owned()) && names.contains(&"test_simple_text".to_owned()),
        "{names:?}"
    );
}
