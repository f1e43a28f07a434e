//! MCP Apps (`io.modelcontextprotocol/ui`, 2026-01-26) through the gateway: the real binary over
//! three remotes (in-process servers) whose tools carry an interface (`_meta.ui`: `resourceUri`,
//! `visibility`, `csp`; and the flat `_meta["ui/resourceUri"]` of earlier drafts) and serve it as a
//! `ui://` resource (`text/html;profile=mcp-app`). Two prefixed remotes use the same `ui://` URI:
//! each is namespaced with its prefix (the tools' `resourceUri` rewritten to match) and both are
//! read, MIME type, text and `_meta` unchanged; an unprefixed remote's URIs are its own; an
//! app-only tool is listed and callable. The official Python SDK is the caller.

use std::time::Duration;

use mcpd::catalog::UriVariables;
use mcpd::context::ToolContext;
use mcpd::model::{CallToolResult, ReadResourceResult, Resource, ResourceContents, Tool};
use mcpd::{Catalog, ServerOptions};
use serde_json::{json, Map, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};
use crate::support::python;
use crate::support::server::start_with;

const MIME: &str = "text/html;profile=mcp-app";

/// A remote with an app: `show` (its interface at `ui://<app>/view.html`, for the model and the
/// app), `refresh` (the app's only) and the interface itself.
fn app_remote(label: &'static str, app: &str) -> Catalog {
    let view = format!("ui://{app}/view.html");
    let csp =
        json!({"connectDomains": [format!("https://{label}.example")], "resourceDomains": ["https://cdn.example"]});
    let mut catalog = Catalog::new();
    let mut show = Tool::new("show", "Shows it.", json!({"type": "object"}));
    show.meta = Some(Map::from_iter([
        ("ui".to_owned(), json!({"resourceUri": view, "visibility": ["model", "app"], "csp": csp})),
        ("ui/resourceUri".to_owned(), json!(view)),
    ]));
    catalog.add_tool(show, move |_a: Map<String, Value>, _c| async move {
        Ok(CallToolResult::text(format!("{label} shown")))
    });
    let mut refresh = Tool::new("refresh", "Refreshes the view.", json!({"type": "object"}));
    refresh.meta = Some(Map::from_iter([("ui".to_owned(), json!({"resourceUri": view, "visibility": ["app"]}))]));
    catalog.add_tool(refresh, move |_a: Map<String, Value>, _c| async move {
        Ok(CallToolResult::text(format!("{label} refreshed")))
    });
    let meta = Map::from_iter([("ui".to_owned(), json!({"csp": csp, "prefersBorder": true}))]);
    let mut resource = Resource::new(&view, "view", MIME);
    resource.meta = Some(meta.clone());
    catalog.add_resource(resource, move |uri: String, _v: UriVariables, _c: ToolContext| {
        let meta = meta.clone();
        async move {
            let text = format!("<!doctype html><title>{label}</title>");
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::Text { uri, mime_type: Some(MIME.into()), text, meta: Some(meta) }],
            })
        }
    });
    catalog
}

#[actix_rt::test]
async fn apps_pass_through_intact_and_two_remotes_with_one_ui_uri_are_both_reachable() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let weather = start_with(app_remote("weather", "app"), ServerOptions::default(), |_| {}).await;
    let maps = start_with(app_remote("maps", "app"), ServerOptions::default(), |_| {}).await;
    let solo = start_with(app_remote("solo", "solo"), ServerOptions::default(), |_| {}).await;
    let urls = [weather.url("/mcp"), maps.url("/mcp"), solo.url("/mcp")];
    let report = actix_rt::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let servers = dir.path().join("servers.json");
        let file = json!({"mcpServers": {
            "weather": {"url": urls[0]},
            "maps": {"url": urls[1]},
            "solo": {"url": urls[2], "prefix": "never"}
        }});
        std::fs::write(&servers, file.to_string()).unwrap();
        let gateway = HttpChild::spawn(&["--no-file-tools", "-s", "--servers", servers.to_str().unwrap()]);
        eventually_blocking("the three remotes are up", Duration::from_secs(15), || {
            let (_, _, body) = process::http(gateway.port, "GET", "/status", &[], "");
            let status: Value = serde_json::from_str(&body).unwrap_or_default();
            let remotes = status["remotes"].as_array().cloned().unwrap_or_default();
            (remotes.len() == 3 && remotes.iter().all(|r| r["up"] == true && r["resources"] == 1))
                .then_some(())
                .ok_or(status)
        });
        let plan = json!({
            "calls": [["weather__refresh", {}], ["maps__show", {}], ["refresh", {}]],
            "reads": ["ui://weather__app/view.html", "ui://maps__app/view.html", "ui://solo/view.html", "ui://app/view.html"]
        });
        let mut cmd = std::process::Command::new(python);
        cmd.arg(crate::support::interop_script("py_view_client.py")).arg(gateway.url()).arg(plan.to_string());
        let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_str::<Value>(stdout.trim()).unwrap()
    })
    .await
    .unwrap();

    let tool = |name: &str| -> Value {
        report["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap_or(Value::Null)
    };
    // The interface reaches the caller intact, its URI namespaced with the remote's prefix.
    for (name, label, uri) in [
        ("weather__show", "weather", "ui://weather__app/view.html"),
        ("maps__show", "maps", "ui://maps__app/view.html"),
        ("show", "solo", "ui://solo/view.html"),
    ] {
        let meta = &tool(name)["_meta"];
        assert_eq!(meta["ui"]["resourceUri"], uri, "{name}: {report}");
        assert_eq!(meta["ui/resourceUri"], uri, "{name}: the flat key of earlier drafts too: {report}");
        assert_eq!(meta["ui"]["visibility"], json!(["model", "app"]), "{name}: {report}");
        assert_eq!(meta["ui"]["csp"]["connectDomains"], json!([format!("https://{label}.example")]), "{report}");
    }
    // App-only tools are listed (hiding them from a model is the host's business) and callable.
    let refresh = tool("weather__refresh");
    assert_eq!(refresh["_meta"]["ui"], json!({"resourceUri": "ui://weather__app/view.html", "visibility": ["app"]}));
    assert_eq!(report["calls"][0]["content"][0]["text"], "weather refreshed", "{report}");
    assert_eq!(report["calls"][1]["content"][0]["text"], "maps shown", "{report}");
    assert_eq!(report["calls"][2]["content"][0]["text"], "solo refreshed", "{report}");

    // Both remotes' interfaces are listed and read, MIME type, text and _meta as they came.
    let resources = report["resources"].as_array().unwrap();
    for uri in ["ui://weather__app/view.html", "ui://maps__app/view.html", "ui://solo/view.html"] {
        let listed = resources.iter().find(|r| r["uri"] == uri).unwrap_or_else(|| panic!("{uri}: {report}"));
        assert_eq!(listed["mimeType"], MIME, "{report}");
    }
    assert_eq!(resources.len(), 3, "no un-namespaced copy: {report}");
    for (index, (uri, label)) in [
        ("ui://weather__app/view.html", "weather"),
        ("ui://maps__app/view.html", "maps"),
        ("ui://solo/view.html", "solo"),
    ]
    .into_iter()
    .enumerate()
    {
        let content = &report["reads"][index]["contents"][0];
        assert_eq!(content["uri"], uri, "{report}");
        assert_eq!(content["mimeType"], MIME, "{report}");
        assert_eq!(content["text"], format!("<!doctype html><title>{label}</title>"), "{report}");
        assert_eq!(content["_meta"]["ui"]["prefersBorder"], true, "{report}");
        assert_eq!(content["_meta"]["ui"]["csp"]["resourceDomains"], json!(["https://cdn.example"]), "{report}");
    }
    assert_eq!(report["reads"][3]["error"]["code"], -32002, "the remotes' own URI is not served: {report}");
}
