//! The gateway end to end, through the real binary as an operator runs
//! it: `mcpd serve -s --servers FILE --access FILE` over npm server-everything (stdio) and
//! another `mcpd` over HTTP, with the official Python SDK as every downstream client, presenting
//! its access-file key as `Authorization: Bearer`. The full client ("ops") lists and uses both
//! remotes' prompts and resources, gets server-everything's progress in its progress callback
//! and its elicitation in its elicitation callback (the answer reaching the tool's result); the
//! restricted client ("ci") sees and may call only its one tool, another being unknown; a third
//! remote added to the servers file while running is listed and called within seconds, and a
//! broken edit keeps everything working while the log names the problem.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::interop_servers;
use crate::support::process::{self, HttpChild};
use crate::support::py_session::PySession;
use crate::support::python;

const OPS: &str = "ops-key-0123456789abcdef";
const CI: &str = "ci-key-0123456789abcdef";
/// The longest wait for a remote to come up or a reload to show (the debounce is 200 ms; a
/// stdio remote starts in about a second).
const WAIT: Duration = Duration::from_secs(10);

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// The gateway's status, asked with the ops key (an access file closes every route to callers
/// without a key).
fn status_of(gateway: &HttpChild) -> Value {
    let bearer = format!("Bearer {OPS}");
    let (_, _, body) = process::http(gateway.port, "GET", "/status", &[("Authorization", &bearer)], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// Runs an interop script with `key` as its bearer key; its one-line JSON report.
fn py_report(python: &Path, script: &str, key: &str, args: &[&str]) -> Value {
    let mut cmd = Command::new(python);
    cmd.env("MCPD_TEST_KEY", key).arg(crate::support::interop_script(script)).args(args);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{script}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script}: not JSON ({e}): {stdout}"))
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// The message of a failed call (`{"error": …}`, or a result with `isError`).
fn failure(answer: &Value) -> String {
    let message = answer["error"]["message"].as_str().or_else(|| {
        (answer["result"]["isError"] == true).then(|| answer["result"]["content"][0]["text"].as_str()).flatten()
    });
    message.unwrap_or_else(|| panic!("expected a failure: {answer}")).to_owned()
}

#[test]
fn python_clients_use_two_remotes_through_an_access_controlled_live_gateway() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let local = crate::gateway_federation::http_remote(&dir);
    let servers = dir.path().join("servers.json");
    let two_remotes = json!({
        "everything": interop_servers::everything_stdio(&entry),
        "local": {"url": local.url()}
    });
    write_json(&servers, &json!({ "mcpServers": two_remotes }));
    let access = dir.path().join("access.json");
    write_json(
        &access,
        &json!({"clients": [
            {"name": "ops", "key": OPS, "tools": ["*"], "prompts": ["*"], "resources": ["*"], "operator": true},
            {"name": "ci", "key": CI, "tools": ["everything__echo"], "resources": ["demo://*"]}
        ]}),
    );
    let gateway = HttpChild::spawn(&[
        "serve",
        "-s",
        "--no-file-tools",
        "--no-file-resources",
        "--servers",
        servers.to_str().unwrap(),
        "--access",
        access.to_str().unwrap(),
    ]);
    // Both up with their tools and prompts (server-everything registers its elicitation tool
    // once it knows the gateway can elicit, then says list_changed).
    eventually_blocking("both remotes are up with tools and prompts", Duration::from_secs(30), || {
        let status = status_of(&gateway);
        let remotes = status["remotes"].as_array().cloned().unwrap_or_default();
        let ready = remotes.len() == 2
            && remotes
                .iter()
                .all(|r| r["up"] == true && r["tools"].as_u64() > Some(0) && r["prompts"].as_u64() > Some(0));
        if ready {
            Ok(())
        } else {
            Err(status)
        }
    });
    let url = gateway.url();

    // (a) ops: both remotes' prompts listed under their prefixes and rendered by their remote;
    // both remotes' resources listed under their own URIs and read from their remote.
    let plan = json!({
        "prompts": [["everything__simple-prompt", {}], ["local__greet", {"who": "Ada", "style": "formal"}]],
        "reads": ["demo://resource/dynamic/text/7", "note://style"]
    });
    let report = py_report(&python, "py_federation_client.py", OPS, &[&url, &plan.to_string()]);
    let prompts = strings(&report["prompts"]);
    for name in ["everything__simple-prompt", "local__greet"] {
        assert!(prompts.iter().any(|p| p == name), "{name} missing: {prompts:?}");
    }
    assert_eq!(report["got"][0]["messages"][0]["content"]["text"], "This is a simple prompt without arguments.");
    assert_eq!(report["got"][1]["messages"][0]["content"]["text"], "Greet Ada in a formal way.", "{report}");
    let resources = strings(&report["resources"]);
    for uri in ["demo://resource/static/document/instructions.md", "note://style"] {
        assert!(resources.iter().any(|r| r == uri), "{uri} missing: {resources:?}");
    }
    let dynamic = report["read"][0]["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(dynamic.starts_with("Resource 7: This is a plaintext resource"), "{report}");
    assert_eq!(report["read"][1]["contents"][0]["text"], "Use British spelling.", "{report}");

    // ci has no prompts: none listed, and getting one is as unknown as a prompt that is not there.
    // Its resources are one remote's `demo://` URIs: the other's are neither listed nor read.
    let plan = json!({"prompts": [["local__greet", {"who": "Ada"}], ["local__absent", {}]],
                      "reads": ["note://style", "note://absent", "demo://resource/dynamic/text/7"]});
    let report = py_report(&python, "py_federation_client.py", CI, &[&url, &plan.to_string()]);
    assert_eq!(report["prompts"], json!([]), "{report}");
    let hidden = report["got"][0]["error"]["message"].as_str().unwrap_or_default().replace("local__greet", "X");
    let absent = report["got"][1]["error"]["message"].as_str().unwrap_or_default().replace("local__absent", "X");
    assert_eq!((hidden.as_str(), absent.as_str()), ("Unknown prompt: X", "Unknown prompt: X"), "{report}");
    let resources = strings(&report["resources"]);
    assert!(resources.iter().all(|r| r.starts_with("demo://")) && !resources.is_empty(), "{report}");
    let hidden = report["read"][0]["error"].to_string().replace("note://style", "X");
    let absent = report["read"][1]["error"].to_string().replace("note://absent", "X");
    assert_eq!(hidden, absent, "a resource ci may not read is as unknown as one that is not there: {report}");
    assert!(hidden.contains("X"), "{report}");
    let dynamic = report["read"][2]["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(dynamic.starts_with("Resource 7:"), "{report}");

    // (b) ops: server-everything's progress reaches the progress callback; its elicitation reaches
    // the elicitation callback, and the answer is in the tool's result.
    let report = py_report(&python, "py_passthrough_client.py", OPS, &[&url, "everything__"]);
    let long = report["long"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(long.contains("Long running operation completed"), "{report}");
    assert_eq!(report["progress"], json!([[1.0, 3.0, null], [2.0, 3.0, null], [3.0, 3.0, null]]), "{report}");
    assert_eq!(report["elicitations"].as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(report["elicitations"][0]["requestedSchema"]["required"], json!(["name"]), "{report}");
    assert!(report["elicited"]["isError"] != true, "{report}");
    assert!(report["elicited"].to_string().contains("Ada Lovelace"), "the answer went back: {report}");

    // (c) ci: sees and may call only everything__echo; another tool is as unknown as one that is
    // not there at all.
    let mut ci = PySession::start(&python, &url, Some(CI));
    assert_eq!(ci.list().0, ["everything__echo"]);
    assert!(ci.call_text("everything__echo", json!({"message": "from ci"})).contains("from ci"));
    let hidden = failure(&ci.call("everything__get-sum", json!({"a": 1, "b": 2})));
    let absent = failure(&ci.call("everything__absent", json!({})));
    assert_eq!(hidden, "Unknown tool: everything__get-sum");
    assert_eq!(hidden.replace("get-sum", "X"), absent.replace("absent", "X"));

    // (d) A third remote added to the servers file while ops is in a session: heard, listed and
    // called within seconds; ci still sees only its tool.
    let mut ops = PySession::start(&python, &url, Some(OPS));
    let (before, heard) = ops.list();
    assert!(before.iter().any(|n| n == "everything__get-sum") && before.iter().any(|n| n == "local__echo"));
    let third = HttpChild::spawn(&["--no-file-tools"]);
    let mut three_remotes = two_remotes.clone();
    three_remotes["third"] = json!({"url": third.url()});
    write_json(&servers, &json!({ "mcpServers": three_remotes }));
    ops.wait_list_changed(heard, WAIT);
    let names =
        ops.list_until("the third remote's tools are listed", WAIT, |names| names.iter().any(|n| n == "third__echo"));
    assert!(names.contains(&"everything__echo".to_owned()) && names.contains(&"local__echo".to_owned()));
    assert_eq!(ops.call_text("third__echo", json!({"text": "from the third"})), "from the third");
    assert_eq!(ci.list().0, ["everything__echo"], "the new remote's tools are not ci's");
    assert_eq!(failure(&ci.call("third__echo", json!({"text": "x"}))), "Unknown tool: third__echo");

    // A broken edit: the log names the file and the problem; everything keeps working.
    std::fs::write(&servers, "{\"mcpServers\": {\"third\": ").unwrap();
    let complaint = eventually_blocking("the log names the broken servers file", WAIT, || {
        let lines = gateway.stderr_lines();
        lines
            .iter()
            .find(|l| l.contains("not reloaded") && l.contains("servers.json") && l.contains("not valid JSON"))
            .cloned()
            .ok_or_else(|| lines.join("\n"))
    });
    assert!(complaint.contains("the remotes in force stay"), "{complaint}");
    assert_eq!(ops.list().0, names, "a broken edit changes nothing");
    assert_eq!(ops.call_text("third__echo", json!({"text": "still third"})), "still third");
    assert_eq!(ops.call_text("local__echo", json!({"text": "still local"})), "still local");
    assert!(ops.call_text("everything__echo", json!({"message": "still everything"})).contains("still everything"));
    assert!(ci.call_text("everything__echo", json!({"message": "still ci"})).contains("still ci"));
    let remotes = status_of(&gateway)["remotes"].as_array().cloned().unwrap_or_default();
    let up: Vec<&str> = remotes.iter().filter(|r| r["up"] == true).filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(up, ["everything", "local", "third"]);
}
