//! Gateway pass-through (issue 14, part 3), through real processes: during a call the remote's
//! progress reaches the calling client, the remote's elicitation is asked of the calling client
//! (and refused, with the reason, when it did not declare the capability), a stateless remote's
//! `input_required` round becomes the gateway's own round, and cancelling the caller's request
//! cancels the remote's.

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
fn servers_file(dir: &tempfile::TempDir, servers: Value) -> String {
    let path = dir.path().join("servers.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json!({ "mcpServers": servers })).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Waits until every remote of the gateway is up.
fn all_up(gateway: &process::HttpChild) {
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
