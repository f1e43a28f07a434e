//! Live reload of `mcpd serve`, through the real binary: the servers file edited while running
//! adds, keeps and removes remotes (the official Python SDK in a session hears
//! `tools/list_changed`, lists and calls the new remote's tools; an unchanged remote keeps its
//! session; a removed one's session is closed); a broken edit keeps the configuration in force
//! and the log says why; SIGHUP re-reads a file no watcher could see; the tools file's declared
//! tools are replaced when it changes; a remote added while unreachable joins on the retry.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use serde_json::{json, Value};

use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::interop_servers;
use crate::support::process::{self, HttpChild};
use crate::support::py_session::PySession;
use crate::support::python;
use crate::support::server::{start_with, test_catalog};

/// How long a reload may take to show (the debounce is 200 ms; a stdio remote starts in ~1 s).
const RELOAD: Duration = Duration::from_secs(10);

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn status_of(child: &HttpChild) -> Value {
    let (_, _, body) = process::http(child.port, "GET", "/status", &[], "");
    serde_json::from_str(&body).unwrap_or_default()
}

fn metrics_of(child: &HttpChild) -> String {
    let (code, _, body) = process::http(child.port, "GET", "/metrics", &[], "");
    assert_eq!(code, 200, "{body}");
    body
}

/// The value of a series (name and labels exactly as exposed).
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The names of the remotes in a gateway's status, in file order.
fn remote_names(gateway: &HttpChild) -> Vec<String> {
    let status = status_of(gateway);
    status["remotes"]
        .as_array()
        .map_or_else(Vec::new, |r| r.iter().filter_map(|s| s["name"].as_str().map(str::to_owned)).collect())
}

/// Waits until every remote of the gateway named in `names` (and only those) is up.
fn wait_remotes_up(gateway: &HttpChild, names: &[&str]) {
    eventually_blocking(&format!("the remotes {names:?} are up"), RELOAD, || {
        let status = status_of(gateway);
        let remotes = status["remotes"].as_array().cloned().unwrap_or_default();
        let up: Vec<&str> = remotes.iter().filter(|r| r["up"] == true).filter_map(|r| r["name"].as_str()).collect();
        if remotes.len() == names.len() && up == names {
            Ok(())
        } else {
            Err(status)
        }
    });
}

/// The done-when of live reload, end to end: `mcpd serve -s --servers FILE` with one remote (an
/// mcpd in session mode over HTTP), the Python SDK in a session through it. The file edited to
/// add the npm server-everything over stdio: the client hears list_changed, lists and calls the
/// new tools, and the first remote kept its one session. A broken edit: nothing changes, the
/// log names the file and the problem. The first remote changed: a new session replaces its
/// old one. Then removed: its tools go, its session is closed, its metrics series too.
#[test]
fn a_servers_file_edited_while_running_adds_keeps_and_removes_remotes() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let Some(entry) = interop_servers::everything_entry() else { return };
    let remote = HttpChild::spawn(&["--no-file-tools", "-s"]);
    let local = json!({"url": remote.url(), "protocolVersion": "2025-11-25"});
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    write_json(&servers, &json!({"mcpServers": {"local": local}}));
    let gateway = HttpChild::spawn(&["-s", "--no-file-tools", "--servers", servers.to_str().unwrap()]);
    wait_remotes_up(&gateway, &["local"]);
    let sessions_opened = || sample(&metrics_of(&remote), "mcpd_sessions_opened_total");
    assert_eq!(sessions_opened(), Some(1.0), "the gateway holds one session at the remote");

    let mut client = PySession::start(&python, &gateway.url(), None);
    let (names, heard) = client.list();
    assert!(names.contains(&"local__echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("everything__")), "{names:?}");
    assert_eq!(client.call_text("local__echo", json!({"text": "before"})), "before");

    // Added: a second remote (server-everything over stdio) within seconds.
    write_json(
        &servers,
        &json!({"mcpServers": {"local": local, "everything": interop_servers::everything_stdio(&entry)}}),
    );
    let heard = client.wait_list_changed(heard, RELOAD);
    let names = client
        .list_until("the new remote's tools are listed", RELOAD, |names| names.iter().any(|n| n == "everything__echo"));
    assert!(names.contains(&"local__echo".to_owned()), "the kept remote's tools stay: {names:?}");
    let echoed = client.call_text("everything__echo", json!({"message": "hi everything"}));
    assert!(echoed.contains("hi everything"), "{echoed}");
    assert_eq!(remote_names(&gateway), ["local", "everything"]);
    // Unchanged: the same connection, its session kept (no second one opened).
    assert_eq!(client.call_text("local__echo", json!({"text": "kept"})), "kept");
    assert_eq!(sessions_opened(), Some(1.0), "an unchanged remote keeps its session");

    // Broken: the configuration in force stays, and the log says which file and why.
    std::fs::write(&servers, "{\"mcpServers\": {\"local\": ").unwrap();
    let complaint = eventually_blocking("the log names the broken servers file", RELOAD, || {
        let lines = gateway.stderr_lines();
        lines
            .into_iter()
            .find(|l| l.contains("not reloaded") && l.contains("servers.json") && l.contains("not valid JSON"))
            .ok_or_else(|| gateway.stderr_lines().join("\n"))
    });
    assert!(complaint.contains("the remotes in force stay"), "{complaint}");
    let (after_broken, _) = client.list();
    assert_eq!(after_broken, names, "a broken edit changes nothing");
    assert!(client.call_text("everything__echo", json!({"message": "still"})).contains("still"));
    assert_eq!(client.call_text("local__echo", json!({"text": "still"})), "still");
    assert_eq!(remote_names(&gateway), ["local", "everything"]);

    // Changed (a field differs): replaced — a new session, the old one closed, tools listed again.
    let closed = || sample(&metrics_of(&remote), r#"mcpd_sessions_closed_total{reason="deleted"}"#).unwrap_or(0.0);
    let changed = json!({"url": remote.url(), "protocolVersion": "2025-11-25", "timeout": 20});
    write_json(
        &servers,
        &json!({"mcpServers": {"local": changed, "everything": interop_servers::everything_stdio(&entry)}}),
    );
    eventually_blocking("the changed remote has a new session and the old one is closed", RELOAD, || {
        (sessions_opened() == Some(2.0) && closed() == 1.0).then_some(()).ok_or_else(|| metrics_of(&remote))
    });
    assert_eq!(client.call_text("local__echo", json!({"text": "replaced"})), "replaced");

    // Removed: its tools go (clients hear it), its session is closed, its series go.
    let before_removal = client.list().1;
    write_json(&servers, &json!({"mcpServers": {"everything": interop_servers::everything_stdio(&entry)}}));
    client.wait_list_changed(before_removal.max(heard), RELOAD);
    let names = client.list_until("the removed remote's tools are gone", RELOAD, |names| {
        !names.iter().any(|n| n.starts_with("local__"))
    });
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    let unknown = client.call("local__echo", json!({"text": "x"}));
    assert!(unknown["error"].is_object() || unknown["result"]["isError"] == true, "{unknown}");
    assert_eq!(remote_names(&gateway), ["everything"]);
    eventually_blocking("the removed remote's session is closed", RELOAD, || {
        (closed() == 2.0).then_some(()).ok_or_else(|| metrics_of(&remote))
    });
    let metrics = metrics_of(&gateway);
    assert!(!metrics.contains(r#"server="local""#), "the removed remote's series are gone:\n{metrics}");
    assert!(metrics.contains(r#"server="everything""#), "{metrics}");
}

/// SIGHUP re-reads the servers file even when no watcher sees the change (the file is a
/// symlink into another directory, as configuration mounts often are).
#[test]
fn sighup_reloads_the_servers_file() {
    let first = HttpChild::spawn(&["--no-file-tools"]);
    let second = HttpChild::spawn(&["--no-file-tools"]);
    let (watched, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = elsewhere.path().join("real-servers.json");
    write_json(&target, &json!({"mcpServers": {"first": {"url": first.url()}}}));
    let servers = watched.path().join("servers.json");
    std::os::unix::fs::symlink(&target, &servers).unwrap();
    let gateway = HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    wait_remotes_up(&gateway, &["first"]);

    write_json(&target, &json!({"mcpServers": {"first": {"url": first.url()}, "second": {"url": second.url()}}}));
    gateway.signal("HUP");
    wait_remotes_up(&gateway, &["first", "second"]);
    let body =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"second__echo","arguments":{"text":"hup"}}}"#;
    let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, body);
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hup", "{answer}");
    assert!(gateway.stderr_lines().iter().any(|l| l.contains("SIGHUP")), "{:?}", gateway.stderr_lines());
}

/// The tools file's declared tools are replaced when it changes; a broken edit keeps them.
#[test]
fn a_tools_file_edit_replaces_the_declared_tools() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    let tool = |name: &str, word: &str| json!({"name": name, "description": "Says a word.", "inputSchema": {"type": "object"}, "argv": ["echo", word]});
    write_json(&tools, &json!({"tools": [tool("say_one", "one")]}));
    let gateway = HttpChild::spawn_declared(dir.path(), &tools);
    let names = || {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
        let (_, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, body);
        let answer: Value = serde_json::from_str(&answer).unwrap_or_default();
        let tools = answer["result"]["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect::<Vec<_>>()
    };
    assert!(names().contains(&"say_one".to_owned()), "{:?}", names());

    write_json(&tools, &json!({"tools": [tool("say_two", "two")]}));
    eventually_blocking("the declared tools are replaced", RELOAD, || {
        let now = names();
        if now.contains(&"say_two".to_owned()) && !now.contains(&"say_one".to_owned()) {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    });
    assert!(names().contains(&"read_command_log".to_owned()), "{:?}", names());

    std::fs::write(&tools, r#"{"tools": [{"name": "bad"}]}"#).unwrap();
    eventually_blocking("the log names the broken tools file", RELOAD, || {
        gateway.stderr_lines().iter().any(|l| l.contains("tools file") && l.contains("not reloaded"))
    });
    assert!(names().contains(&"say_two".to_owned()), "a broken edit keeps the declared tools: {:?}", names());
}

/// A remote a reload added while it was unreachable joins once it answers (the 30 s retry of
/// `mcpd serve`, here every 200 ms), as a remote of the file at start would.
#[actix_rt::test]
async fn a_remote_added_while_unreachable_joins_on_retry() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let document = ConfigDocument::parse(&format!(r#"{{"url":"http://127.0.0.1:{port}/mcp","timeout":5}}"#)).unwrap();
    let live = Arc::new(LiveCatalog::new(mcpd::Catalog::new()));
    let gateway = Gateway::new(Vec::new(), live.clone(), ToolFilter::from_value(None), Arc::default());
    gateway.retry_every(Duration::from_millis(200));
    let diff = gateway.apply(vec![ServerRecord::new("late", document)]).await.unwrap();
    assert_eq!(diff.added.len(), 1);
    assert!(!gateway.health()[0].up && live.snapshot().tool_names().is_empty(), "{:?}", gateway.health());

    let remote = start_with(test_catalog(), Default::default(), |c| c.port = port).await;
    eventually("the added remote joined", RELOAD, async || live.snapshot().tool("late__echo").is_some()).await;
    assert!(gateway.health()[0].up, "{:?}", gateway.health());
    gateway.close().await;
    remote.runtime.close().await.unwrap();
}
