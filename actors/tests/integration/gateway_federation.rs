//! Gateway federation, through real processes: `mcpd serve -s --servers FILE`
//! over npm server-everything (stdio, first in the file) and another `mcpd` over HTTP (declared
//! prompts and resources, project files), with the official Python SDK as the downstream client.
//! Remote prompts are listed as `<server>__<prompt>` and rendered by their remote; resources and
//! templates keep their URIs and are read from their remote; completions are answered by the
//! remote; a URI both remotes claim is served by the first in the file and the collision shows
//! in the status; a subscription at a federated URI gets the remote's updates.

use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd::model::{
    ContentBlock, GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents,
    ResourceTemplate,
};
use mcpd::{Catalog, ServerOptions};
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::{ActorCounts, TransportMode};
use serde_json::{json, Map, Value};

use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::interop_servers;
use crate::support::process;
use crate::support::python;
use crate::support::server::*;

/// The URI both remotes claim (server-everything's own document; the HTTP remote declares it too).
const CLAIMED_TWICE: &str = "demo://resource/static/document/instructions.md";

/// The `/status` document of a `mcpd` child (`null` when it is not JSON).
fn status_of(child: &process::HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

/// The HTTP remote: a project with one file, and a declarations file with a prompt whose
/// argument completes, a resource of its own and one at a URI server-everything serves.
pub(crate) fn http_remote(dir: &tempfile::TempDir) -> process::HttpChild {
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
    process::HttpChild::spawn_declared(&project, &declarations)
}

#[test]
fn python_client_gets_prompts_resources_completions_and_updates_of_two_remotes_through_mcpd() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let remote = http_remote(&dir);
    let servers = dir.path().join("servers.json");
    let file = json!({"mcpServers": {
        "everything": interop_servers::everything_stdio(&entry),
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

/// Adds a resource at `uri` whose text is `text`.
fn add_text(catalog: &mut Catalog, uri: &str, text: &'static str) {
    catalog.add_resource(Resource::new(uri, uri, "text/plain"), move |uri: String, _vars, _ctx| async move {
        Ok(ReadResourceResult { contents: vec![ResourceContents::text(uri, "text/plain", text)] })
    });
}

/// Adds a prompt `name` with one user message, `text`.
fn add_prompt(catalog: &mut Catalog, name: &str, text: &'static str) {
    catalog.add_prompt(Prompt::new(name, "A prompt.", Vec::new()), move |_args: Map<String, Value>, _ctx| async move {
        Ok(GetPromptResult { description: None, messages: vec![PromptMessage::user(ContentBlock::text(text))] })
    });
}

/// A remote over streamable-HTTP sessions (the session's stream carries its list_changed).
async fn session_remote(name: &str, live: Arc<LiveCatalog>) -> (TestServer, ServerRecord) {
    let server = start_live(live, ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = TransportMode::StreamableHttp
    })
    .await;
    let document = format!(r#"{{"url":"{}","protocolVersion":"2025-11-25"}}"#, server.url("/mcp"));
    (server, ServerRecord::new(name, ConfigDocument::parse(&document).unwrap()))
}

/// In process: a URI two remotes claim and one this server serves itself are judged by the
/// first-in-file rule (collisions in the health); a remote's prompts/list_changed and
/// resources/list_changed refresh what it federates; forgetting a remote takes its exports out
/// and hands the URIs it served to the next remote that claims them.
#[actix_rt::test]
async fn federated_exports_follow_the_remotes_and_a_forgotten_remote_hands_its_uris_on() {
    let first_live = Arc::new(LiveCatalog::new(Catalog::new()));
    first_live.update(|c| {
        add_prompt(c, "hello", "hello from first");
        add_text(c, "test://shared", "shared by first");
    });
    let second_live = Arc::new(LiveCatalog::new(Catalog::new()));
    second_live.update(|c| {
        add_text(c, "test://shared", "shared by second");
        add_text(c, "test://local", "not served");
        c.add_template(
            ResourceTemplate::new("test://second/{id}", "by id", "text/plain"),
            |uri: String, vars: Vec<(String, String)>, _ctx| async move {
                let text = format!("second item {}", vars.first().map(|(_, v)| v.as_str()).unwrap_or_default());
                Ok(ReadResourceResult { contents: vec![ResourceContents::text(uri, "text/plain", text)] })
            },
        );
    });
    let (first, first_record) = session_remote("first", first_live.clone()).await;
    let (second, second_record) = session_remote("second", second_live.clone()).await;

    let live = Arc::new(LiveCatalog::new(Catalog::new()));
    live.update(|c| add_text(c, "test://local", "served here"));
    let gateway = Gateway::new(
        vec![first_record, second_record],
        live.clone(),
        ToolFilter::from_value(None),
        Arc::new(ActorCounts::new()),
    );
    gateway.refresh_all().await;
    let health = gateway.health();
    assert_eq!((health[0].prompts, health[0].resources, health[0].templates), (1, 1, 0), "{health:?}");
    assert_eq!((health[1].prompts, health[1].resources, health[1].templates), (0, 0, 1), "{health:?}");
    assert!(health[0].collisions.is_empty(), "{health:?}");
    assert_eq!(
        health[1].collisions,
        ["resource test://local is served by this server itself", "resource test://shared is served by first"],
        "{health:?}"
    );

    let server = start_live(live.clone(), Default::default(), |_| {}).await;
    let read = async |id: i64, uri: &str| {
        let answer = post_legacy(&server, "2025-11-25", id, "resources/read", json!({"uri": uri})).await.json();
        answer["result"]["contents"][0]["text"].as_str().map(str::to_owned).unwrap_or_else(|| answer.to_string())
    };
    assert_eq!(read(1, "test://shared").await, "shared by first");
    assert_eq!(read(2, "test://local").await, "served here", "never taken over");
    assert_eq!(read(3, "test://second/42").await, "second item 42");
    let prompt = post_legacy(&server, "2025-11-25", 4, "prompts/get", json!({"name": "first__hello"})).await.json();
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "hello from first", "{prompt}");

    // The remotes' list_changed: a new prompt at the first, a new resource at the second.
    first_live.update(|c| add_prompt(c, "later", "later from first"));
    second_live.update(|c| add_text(c, "test://fresh", "fresh from second"));
    eventually("prompts/list_changed refreshed the first's prompts", Duration::from_secs(5), async || {
        live.snapshot().prompt("first__later").is_some()
    })
    .await;
    eventually("resources/list_changed refreshed the second's resources", Duration::from_secs(5), async || {
        live.snapshot().resource("test://fresh").is_some()
    })
    .await;
    assert_eq!(read(5, "test://fresh").await, "fresh from second");

    // The first is forgotten (removed from the servers file): the second serves the shared URI.
    gateway.forget_federated("first");
    let catalog = live.snapshot();
    assert!(catalog.prompt("first__hello").is_none() && catalog.prompt("first__later").is_none());
    assert_eq!(read(6, "test://shared").await, "shared by second");
    let health = gateway.health();
    assert_eq!((health[0].prompts, health[0].resources), (0, 0), "{health:?}");
    assert_eq!(health[1].collisions, ["resource test://local is served by this server itself"], "{health:?}");

    gateway.close().await;
    for remote in [first, second, server] {
        remote.runtime.close().await.unwrap();
    }
}
