//! Virtual servers (`virtualServers` in the servers file), through the real binary: the official
//! Python SDK on `/mcp/<name>` sees exactly the selection, under its new names and descriptions,
//! and a renamed tool answers as its original; raw HTTP checks where a view meets the policy —
//! the access file's patterns judge a renamed tool by its original name, a client limited to one
//! virtual server finds every other endpoint (`/mcp` included) as a path that does not exist, a
//! hidden tool answers as an unknown one, a session belongs to the endpoint it was opened on, the
//! stateless 2026-07-28 wire works on a view, and a reload of the servers file changes the views.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, header_value, HttpChild};
use crate::support::python;

const ADMIN: &str = "admin-key-views-0123";
const FULL: &str = "full-key-views-0123";
const DOCS: &str = "docs-key-views-0123";
const NARROW: &str = "narrow-key-views-0123";
const RELOAD: Duration = Duration::from_secs(10);

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// A POST of `body` to `path` with `key` as a bearer token and `extra` headers.
fn post(
    child: &HttpChild,
    path: &str,
    key: &str,
    extra: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, Value) {
    let bearer = format!("Bearer {key}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
    ];
    headers.extend_from_slice(extra);
    let (code, headers, answer) = process::http(child.port, "POST", path, &headers, &body.to_string());
    (code, headers, serde_json::from_str(&answer).unwrap_or(Value::Null))
}

/// `initialize` (2025-11-25) on `path`: the answer and its session id.
fn initialize(child: &HttpChild, path: &str, key: &str) -> (u16, Value, Option<String>) {
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init});
    let (code, headers, answer) = post(child, path, key, &[("MCP-Protocol-Version", "2025-11-25")], &body);
    (code, answer, header_value(&headers, "mcp-session-id").map(str::to_owned))
}

/// A 2025-11-25 request in the session `session`, or in a new one on `path` (whose
/// `initialize`'s failure is the answer then).
fn legacy(
    child: &HttpChild,
    path: &str,
    key: &str,
    session: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let opened;
    let session = match session {
        Some(session) => session,
        None => match initialize(child, path, key) {
            (200, _, Some(id)) => {
                opened = id;
                opened.as_str()
            }
            (code, answer, _) => return (code, answer),
        },
    };
    let extra = [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", session)];
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let (code, _, answer) = post(child, path, key, &extra, &body);
    (code, answer)
}

/// A 2026-07-28 (stateless) request with its routing headers.
fn modern(child: &HttpChild, path: &str, key: &str, method: &str, mut params: Value) -> (u16, Value) {
    let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut extra = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    if let Some(name) = &name {
        extra.push(("Mcp-Name", name.as_str()));
    }
    let (code, _, answer) = post(child, path, key, &extra, &body);
    (code, answer)
}

fn names(answer: &Value) -> Vec<String> {
    let tools = answer["result"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

fn servers_file(remote: &HttpChild, say: &str, with_ops: bool) -> Value {
    let mut views = json!({
        "docs": {
            "tools": ["github__*", "echo"],
            "rename": {"github__echo": {"name": say, "description": "Says it back."}}
        }
    });
    if with_ops {
        views["ops"] = json!({"tools": ["time"]});
    }
    json!({"mcpServers": {"github": {"url": remote.url()}}, "virtualServers": views})
}

/// A gateway (`-s`, a remote mcpd as `github`, the virtual servers `docs` and `ops`, an access
/// file of three clients and an admin key) once its remote is up; the remote; the servers file.
fn gateway(dir: &Path) -> (HttpChild, HttpChild, std::path::PathBuf) {
    let remote = HttpChild::spawn(&["--no-file-tools"]);
    let servers = dir.join("servers.json");
    write_json(&servers, &servers_file(&remote, "say", true));
    let access = dir.join("access.json");
    write_json(
        &access,
        &json!({"clients": [
            {"name": "full", "key": FULL, "tools": ["*"]},
            {"name": "docsonly", "key": DOCS, "tools": ["*"], "servers": ["docs"]},
            {"name": "narrow", "key": NARROW, "tools": ["github__time", "echo"]}
        ]}),
    );
    let (servers_arg, access_arg) = (servers.to_str().unwrap(), access.to_str().unwrap());
    let gateway =
        HttpChild::spawn(&["-s", "--no-file-tools", "--servers", servers_arg, "--access", access_arg, "--key", ADMIN]);
    eventually_blocking("the remote is up", RELOAD, || {
        let (_, answer) = legacy(&gateway, "/mcp", ADMIN, None, "tools/list", json!({}));
        let listed = names(&answer);
        listed.iter().any(|n| n == "github__echo").then_some(()).ok_or(answer)
    });
    (gateway, remote, servers)
}

#[test]
fn python_sdk_on_a_virtual_server_sees_its_selection_under_its_names() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (gateway, _remote, _servers) = gateway(dir.path());
    let run = |key: &str, path: &str, plan: Value| -> Value {
        let mut cmd = std::process::Command::new(&python);
        cmd.env("MCPD_TEST_KEY", key)
            .arg(crate::support::interop_script("py_view_client.py"))
            .arg(format!("http://127.0.0.1:{}{path}", gateway.port))
            .arg(plan.to_string());
        let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_str(stdout.trim()).unwrap()
    };
    let plan = json!({"calls": [["say", {"text": "through a view"}], ["github__echo", {"text": "x"}], ["time", {}]]});
    let report = run(DOCS, "/mcp/docs", plan);
    let tools = report["tools"].as_array().unwrap();
    let listed: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(listed, ["echo", "github__time", "say"], "exactly the selection, renamed: {report}");
    let say = tools.iter().find(|t| t["name"] == "say").unwrap();
    assert_eq!(say["description"], "Says it back.", "the description is the view's: {report}");
    let time = tools.iter().find(|t| t["name"] == "github__time").unwrap();
    assert!(time["description"].as_str().unwrap().starts_with("[github]"), "others keep theirs: {report}");
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls[0]["content"][0]["text"], "through a view", "the renamed tool answers as its original: {report}");
    assert_eq!(calls[1]["error"]["message"], "Unknown tool: github__echo", "renamed away: {report}");
    assert_eq!(calls[2]["error"]["message"], "Unknown tool: time", "not selected: {report}");
    assert_eq!(report["prompts"], json!([]), "the view selects no prompt: {report}");

    // The whole gateway is another endpoint: everything, under the gateway's names.
    let whole = run(FULL, "/mcp", json!({"calls": [["github__echo", {"text": "whole"}]]}));
    let listed: Vec<&str> = whole["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(listed, ["echo", "github__echo", "github__time", "time"], "{whole}");
    assert_eq!(whole["calls"][0]["content"][0]["text"], "whole", "{whole}");
}

#[test]
fn a_virtual_server_meets_access_sessions_and_the_stateless_wire() {
    let dir = tempfile::tempdir().unwrap();
    let (gateway, remote, servers) = gateway(dir.path());

    // A client limited to docs: any other endpoint answers as a path that does not exist.
    let (code, answer) = legacy(&gateway, "/mcp/docs", DOCS, None, "tools/list", json!({}));
    assert_eq!((code, names(&answer)), (200, vec!["echo".into(), "github__time".into(), "say".into()]));
    let absent = |path: &str, key: &str| {
        let (code, answer) = legacy(&gateway, path, key, None, "tools/list", json!({}));
        (code, answer["error"]["message"].as_str().unwrap_or_default().replacen(path, "PATH", 1))
    };
    let unknown = absent("/mcp/nothing", DOCS);
    assert_eq!(unknown, (404, "Not found: PATH; the MCP endpoint is POST /mcp".to_owned()));
    assert_eq!(absent("/mcp/ops", DOCS), unknown, "another virtual server is not there for it");
    assert_eq!(absent("/mcp", DOCS), unknown, "nor is the whole gateway");
    let (code, _, body) =
        process::http(gateway.port, "GET", "/sse", &[("Authorization", &format!("Bearer {DOCS}"))], "");
    assert_eq!(code, 404, "nor its 2024-11-05 transport: {body}");
    assert_eq!(absent("/mcp/ops", FULL).0, 200, "a client without servers reaches every endpoint");
    assert_eq!(absent("/mcp/nothing", FULL), unknown);

    // The client's own patterns judge a renamed tool by its original name (github__echo).
    let (_, answer) = legacy(&gateway, "/mcp/docs", NARROW, None, "tools/list", json!({}));
    assert_eq!(names(&answer), ["echo", "github__time"], "{answer}");
    let call = |key: &str, path: &str, name: &str| {
        let (_, answer) =
            legacy(&gateway, path, key, None, "tools/call", json!({"name": name, "arguments": {"text": "t"}}));
        answer.to_string().replace(name, "NAME")
    };
    assert_eq!(call(NARROW, "/mcp/docs", "say"), call(NARROW, "/mcp/docs", "missing"), "hidden answers as unknown");
    assert_eq!(call(FULL, "/mcp/docs", "github__echo"), call(FULL, "/mcp/docs", "missing"), "renamed away: unknown");
    assert!(call(FULL, "/mcp/docs", "say").contains("\"text\":\"t\""), "{}", call(FULL, "/mcp/docs", "say"));
    // A key of --key: no limit of its own, the view's selection all the same.
    let (_, answer) = legacy(&gateway, "/mcp/docs", ADMIN, None, "tools/list", json!({}));
    assert_eq!(names(&answer), ["echo", "github__time", "say"]);

    // A session belongs to its endpoint: elsewhere its id is unknown.
    let (code, answer, session) = initialize(&gateway, "/mcp/docs", FULL);
    assert_eq!(code, 200, "{answer}");
    let session = session.expect("a session id");
    let (code, answer) = legacy(&gateway, "/mcp/docs", FULL, Some(&session), "tools/list", json!({}));
    assert_eq!((code, names(&answer)), (200, vec!["echo".into(), "github__time".into(), "say".into()]), "{answer}");
    let (code, elsewhere) = legacy(&gateway, "/mcp", FULL, Some(&session), "tools/list", json!({}));
    let (unknown_code, no_session) = legacy(&gateway, "/mcp", FULL, Some("0123456789abcdef"), "tools/list", json!({}));
    assert_eq!((code, &elsewhere), (unknown_code, &no_session), "on /mcp the session is unknown");
    assert_eq!(code, 404);
    assert_eq!(legacy(&gateway, "/mcp/ops", FULL, Some(&session), "tools/list", json!({})).1, no_session);
    let delete = |path: &str| {
        let bearer = format!("Bearer {FULL}");
        let headers = [("Authorization", bearer.as_str()), ("Mcp-Session-Id", session.as_str())];
        process::http(gateway.port, "DELETE", path, &headers, "").0
    };
    assert_eq!(delete("/mcp"), 404, "nor can it be ended there");
    assert_eq!(delete("/mcp/docs"), 200);

    // The stateless 2026-07-28 wire: the view's names, the renamed tool's original answer.
    let (code, answer) = modern(&gateway, "/mcp/docs", FULL, "tools/list", json!({}));
    assert_eq!((code, names(&answer)), (200, vec!["echo".into(), "github__time".into(), "say".into()]), "{answer}");
    let (code, answer) =
        modern(&gateway, "/mcp/docs", FULL, "tools/call", json!({"name": "say", "arguments": {"text": "stateless"}}));
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "stateless", "{answer}");
    let (_, hidden) = modern(&gateway, "/mcp/docs", NARROW, "tools/call", json!({"name": "say", "arguments": {}}));
    let (_, missing) = modern(&gateway, "/mcp/docs", NARROW, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(hidden.to_string().replace("say", "NAME"), missing.to_string().replace("nope", "NAME"));

    // The status shows the views; a reload of the servers file changes them.
    let bearer = format!("Bearer {ADMIN}");
    let (_, _, status) = process::http(gateway.port, "GET", "/status", &[("Authorization", &bearer)], "");
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["virtualServers"][0]["endpoint"], "/mcp/docs", "{status}");
    write_json(&servers, &servers_file(&remote, "repeat", false));
    eventually_blocking("the reloaded view renames github__echo to repeat", RELOAD, || {
        let (_, answer) = legacy(&gateway, "/mcp/docs", FULL, None, "tools/list", json!({}));
        names(&answer).contains(&"repeat".to_owned()).then_some(()).ok_or(answer)
    });
    assert_eq!(absent("/mcp/ops", FULL), unknown, "a virtual server removed by the reload is gone");
    write_json(&servers, &json!({"mcpServers": {"github": {"url": remote.url()}}, "virtualServers": {"bad name": {}}}));
    eventually_blocking("the broken reload is logged", RELOAD, || {
        let lines = gateway.stderr_lines();
        lines
            .iter()
            .any(|l| l.contains("not reloaded") && l.contains("virtual server name \"bad name\""))
            .then_some(())
            .ok_or(lines.join("\n"))
    });
    let (_, answer) = legacy(&gateway, "/mcp/docs", FULL, None, "tools/list", json!({}));
    assert!(names(&answer).contains(&"repeat".to_owned()), "a broken file keeps the views in force: {answer}");
}
