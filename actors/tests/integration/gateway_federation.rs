//! Gateway federation (issue 14, part 2), through real processes: `mcpd serve -s --servers FILE`
//! over npm server-everything (stdio, first in the file) and another `mcpd` over HTTP (declared
//! prompts and resources, project files), with the official Python SDK as the downstream client.
//! Remote prompts are listed as `<server>__<prompt>` and rendered by their remote; resources and
//! templates keep their URIs and are read from their remote; completions are answered by the
//! remote; a URI both remotes claim is served by the first in the file and the collision shows
//! in the status; a subscription at a federated URI gets the remote's updates.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::interop_servers;
use crate::support::process;
use crate::support::python;

/// The URI both remotes claim (server-everything's own document; the HTTP remote declares it too).
const CLAIMED_TWICE: &str = "demo://resource/static/document/instructions.md";

/// The `/status` document of a `mcpd` child (`null` when it is not JSON).
fn status_of(child: &process::HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// The HTTP remote: a project with one file, and a declarations file with a prompt whose
/// argument completes, a resource of its own and one at a URI server-everything serves.
fn http_remote(dir: &tempfile::TempDir) -> process::HttpChild {
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.md"), "remote notes\n").unwrap();
    let declarations = dir.path().join("declarations.json");
    let document = json!({
        "prompts": [{
            "name": "greet", "description": "Greets someone.",
            "arguments": [{"name": "who", "required": true}, {"name": "style", "enum": ["formal", "friendly", "funny"]}],
            "messages": [{"role": "user", "text": "Greet {who} in a {style} way."}]
        }],
        "resources": [
            {"uri": "note://style", "name": "style", "text": "Use British spelling.", "mimeType": "text/plain"},
            {"uri": CLAIMED_TWICE, "name": "impostor", "text": "not the real instructions"}
        ]
    });
    std::fs::write(&declarations, document.to_string()).unwrap();
    process::HttpChild::spawn(&[
        "serve",
        "--no-file-tools",
        "-d",
        project.to_str().unwrap(),
        "--tools",
        declarations.to_str().unwrap(),
    ])
}

#[test]
fn python_client_gets_prompts_resources_completions_and_updates_of_two_remotes_through_mcpd() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let remote = http_remote(&dir);
    let servers = dir.path().join("servers.json");
    let file = json!({"mcpServers": {
        "everything": {"command": interop_servers::node().to_string_lossy(), "args": [entry.to_string_lossy(), "stdio"]},
        "local": {"url": remote.url()}
    }});
    std::fs::write(&servers, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let gateway = process::HttpChild::spawn(&[
        "serve",
        "--no-file-tools",
        "--no-file-resources",
        "-s",
        "--servers",
        servers.to_str().unwrap(),
    ]);
    let status = eventually_blocking("both remotes are up and federated", Duration::from_secs(30), || {
        let status = status_of(&gateway);
        let ready = status["remotes"].as_array().is_some_and(|r| {
            r.len() == 2 && r.iter().all(|s| s["up"] == true && s["prompts"].as_u64().is_some_and(|n| n > 0))
        });
        if ready {
            Ok(status)
        } else {
            Err(status)
        }
    });

    // The status: what each remote federates, and the URI the second one lost to the first.
    let remotes = status["remotes"].as_array().unwrap();
    assert_eq!(remotes[0]["name"], "everything", "{status}");
    assert!(remotes[0]["resources"].as_u64().unwrap() >= 1, "{status}");
    assert_eq!(remotes[0]["templates"], 2, "{status}");
    assert_eq!(remotes[0]["collisions"], json!([]), "{status}");
    assert_eq!(remotes[1]["name"], "local", "{status}");
    assert_eq!(remotes[1]["prompts"], 1, "{status}");
    assert_eq!(remotes[1]["templates"], 1, "the project files' template: {status}");
    assert_eq!(
        remotes[1]["collisions"],
        json!([format!("resource {CLAIMED_TWICE} is served by everything")]),
        "{status}"
    );

    let plan = json!({
        "prompts": [["everything__simple-prompt", {}], ["local__greet", {"who": "Ada", "style": "formal"}]],
        "reads": ["note://style", "file:///notes.md", "demo://resource/dynamic/text/7", CLAIMED_TWICE],
        "completions": [
            ["ref/prompt", "local__greet", "style", "f"],
            ["ref/prompt", "everything__completable-prompt", "department", "E"],
            ["ref/resource", "demo://resource/dynamic/text/{resourceId}", "resourceId", "3"]
        ],
        "subscribe": CLAIMED_TWICE,
        "trigger": "everything__toggle-subscriber-updates"
    });
    let mut cmd = std::process::Command::new(python);
    cmd.arg(crate::support::interop_script("py_federation_client.py")).arg(gateway.url()).arg(plan.to_string());
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().unwrap().iter().filter_map(Value::as_str).map(str::to_owned).collect()
    };

    // Prompts of both remotes, under their prefixes, rendered by their remote.
    let prompts = strings(&report["prompts"]);
    for name in ["everything__simple-prompt", "everything__completable-prompt", "local__greet"] {
        assert!(prompts.iter().any(|p| p == name), "{name} missing: {prompts:?}");
    }
    let got = &report["got"];
    assert_eq!(got[0]["messages"][0]["content"]["text"], "This is a simple prompt without arguments.", "{report}");
    assert_eq!(got[1]["messages"][0]["content"]["text"], "Greet Ada in a formal way.", "{report}");

    // Resources and templates of both remotes, URIs kept.
    let resources = strings(&report["resources"]);
    for uri in [CLAIMED_TWICE, "note://style", "file:///notes.md"] {
        assert!(resources.iter().any(|r| r == uri), "{uri} missing: {resources:?}");
    }
    assert_eq!(resources.iter().filter(|r| *r == CLAIMED_TWICE).count(), 1, "{resources:?}");
    let templates = strings(&report["templates"]);
    for template in
        ["demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}", "file:///{+path}"]
    {
        assert!(templates.iter().any(|t| t == template), "{template} missing: {templates:?}");
    }

    // Reads: exact resources of each remote, a URI only a remote's template covers, and the URI
    // both claim — served by the first in the file.
    let read = &report["read"];
    assert_eq!(read[0]["contents"][0]["text"], "Use British spelling.", "{report}");
    assert_eq!(read[1]["contents"][0]["text"], "remote notes\n", "{report}");
    let dynamic = read[2]["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(dynamic.starts_with("Resource 7: This is a plaintext resource"), "{report}");
    assert_eq!(read[2]["contents"][0]["uri"], "demo://resource/dynamic/text/7", "{report}");
    let instructions = read[3]["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(instructions.starts_with("# Everything Server"), "the first remote serves it: {report}");

    // Completions, answered by the remote that serves the prompt or template.
    let completed = &report["completed"];
    assert_eq!(completed[0]["completion"]["values"], json!(["formal", "friendly", "funny"]), "{report}");
    assert_eq!(completed[1]["completion"]["values"], json!(["Engineering"]), "{report}");
    assert_eq!(completed[2]["completion"]["values"], json!(["3"]), "{report}");

    // The subscription reached server-everything, whose update reached the Python client.
    assert_eq!(report["subscribed"], json!({}), "{report}");
    assert!(report["trigger"]["isError"] != true, "{report}");
    assert!(strings(&report["updated"]).iter().any(|u| u == CLAIMED_TWICE), "no update within the wait: {report}");
}
