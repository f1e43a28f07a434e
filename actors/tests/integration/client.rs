//! The client runtime against real servers over real sockets: mcpd's own endpoint on each wire
//! (stateless 2026-07-28, a streamable session, the 2024-11-05 HTTP+SSE transport).

use std::sync::Arc;
use std::time::Duration;

use actix::Actor as _;
use mcpd::model::Implementation;
use mcpd::version::ProtocolVersion;
use mcpd::ServerOptions;
use mcpd_actors::client::{CallTool, ClientConnection, ClientHandlers, LinkConfig, ListTools, StopClientConnection};
use mcpd_actors::{ActorCounts, ActorKind, TransportMode};
use serde_json::{json, Map, Value};

use crate::support::arrivals::Arrivals;
use crate::support::eventually::eventually;
use crate::support::process;
use crate::support::server::*;

fn link(url: String, sse: bool, pin: Option<ProtocolVersion>) -> LinkConfig {
    LinkConfig {
        name: "test".into(),
        url,
        sse,
        headers: Vec::new(),
        pin,
        timeout: Duration::from_secs(10),
        command: None,
        list_limits: Default::default(),
        task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
        oauth: None,
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Against a session-capable mcpd: no pin → stateless; a pinned legacy revision → a session;
/// the HTTP+SSE transport → the legacy stream. Each lists tools, calls echo, reads a tool error.
#[actix_rt::test]
async fn every_wire_lists_and_calls() {
    let server = start_with(test_catalog(), ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = TransportMode::StreamableHttp
    })
    .await;
    let counts = Arc::new(ActorCounts::new());
    for (url, sse, pin) in [
        (server.url("/mcp"), false, None),
        (server.url("/mcp"), false, Some(ProtocolVersion::V2025_06_18)),
        (server.url("/sse"), true, None),
    ] {
        let connection = ClientConnection::new(
            link(url.clone(), sse, pin),
            ClientHandlers::default(),
            Implementation::new("t", "1"),
            counts.clone(),
        )
        .start();
        let tools = connection.send(ListTools).await.unwrap().unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"), "{url}");
        let echo = connection
            .send(CallTool { name: "echo".into(), arguments: args(json!({"text":"héllo"})) })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(echo.text(), "héllo", "{url}");
        assert!(!echo.is_error);
        let failed = connection.send(CallTool { name: "fail".into(), arguments: Map::new() }).await.unwrap().unwrap();
        assert!(failed.is_error, "a tool failure is Ok(is_error)");
        let unknown = connection.send(CallTool { name: "nope".into(), arguments: Map::new() }).await.unwrap();
        assert!(unknown.is_err(), "an unknown tool is a protocol error");
        connection.send(StopClientConnection).await.unwrap();
        if pin.is_some() {
            assert!(server.runtime.live_sessions() == 0, "invalidate DELETEd the session");
        }
    }
    eventually("every ClientConnection actor has stopped", Duration::from_secs(2), async || {
        counts.live(ActorKind::ClientConnection) == 0
    })
    .await;
    assert_eq!(counts.live(ActorKind::ClientConnection), 0);
}

/// Dropping a `call_tool` future cancels the call: in a session the server receives
/// `notifications/cancelled` and its tool stops. (On the stateless wire the client closes the
/// stream, which is that wire's cancellation; an actix-web server notices only when it next
/// writes, so that case is not observable here.)
#[actix_rt::test]
async fn dropped_calls_are_cancelled_on_the_server() {
    use futures_util::future::Either;
    use mcpd::client::config::ConfigDocument;
    use mcpd_actors::client::{ClientManager, ServerRecord};
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let stopped = Arc::new(AtomicUsize::new(0));
    let running = Arrivals::new();
    let mut catalog = test_catalog();
    let (flag, arrivals) = (stopped.clone(), running.clone());
    catalog.add_tool(
        mcpd::model::Tool::new("forever", "Runs until stopped.", json!({"type":"object"})),
        move |_a: Map<String, Value>, ctx: mcpd::ToolContext| {
            let guard = Dropped(flag.clone());
            let arrivals = arrivals.clone();
            async move {
                let _guard = guard;
                arrivals.arrive();
                ctx.progress(1.0, None, None);
                actix_rt::time::sleep(Duration::from_secs(60)).await;
                Ok(mcpd::model::CallToolResult::text("finished"))
            }
        },
    );
    let server = start_with(catalog, ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = TransportMode::StreamableHttp
    })
    .await;
    let manager =
        ClientManager::new(ClientHandlers::default(), Implementation::new("t", "1"), Arc::new(ActorCounts::new()));
    for (id, document) in [("session", format!(r#"{{"url":"{}","protocolVersion":"2025-11-25"}}"#, server.url("/mcp")))]
    {
        manager.upsert(ServerRecord::new(id, ConfigDocument::parse(&document).unwrap()));
        let before = stopped.load(Ordering::SeqCst);
        let arrived = running.count();
        {
            // The call runs until the tool is running on the server; then it is dropped.
            let call = pin!(manager.call_tool(id, "forever", Map::new()));
            let what = format!("{id}: the forever tool is running");
            let started = pin!(running.wait_for(arrived + 1, &what));
            let raced = futures_util::future::select(call, started).await;
            assert!(matches!(raced, Either::Right(_)), "{id}: still running");
        }
        eventually(&format!("{id}: the server stopped the tool"), Duration::from_secs(2), async || {
            stopped.load(Ordering::SeqCst) > before
        })
        .await;
        assert_eq!(stopped.load(Ordering::SeqCst), before + 1, "{id}: the server stopped the tool");
    }
    manager.close().await;
}

/// Whether a process with this pid exists (a zombie not yet reaped counts as existing).
fn process_exists(pid: &str) -> bool {
    let probe = std::process::Command::new("kill").args(["-0", pid]).stderr(std::process::Stdio::null()).status();
    probe.is_ok_and(|status| status.success())
}

/// A stdio server (mcpd itself as a child process): listed, called, and started again on the
/// next call after it exits (here the test kills it after the first call; its `sh` wrapper
/// records the pid, then `exec`s mcpd).
#[actix_rt::test]
async fn stdio_servers_are_spawned_and_restarted() {
    use mcpd::client::config::StdioCommand;
    use mcpd_actors::client::{ClientManager, ServerRecord};
    let binary = process::mcpd_binary().to_string_lossy().into_owned();
    let counts = Arc::new(ActorCounts::new());
    let manager = ClientManager::new(ClientHandlers::default(), Implementation::new("t", "1"), counts.clone());
    let once = StdioCommand {
        program: binary.clone(),
        args: Vec::new(),
        env: vec![("RUST_LOG".into(), "warn".into())],
        cwd: None,
    };
    manager.upsert(ServerRecord::stdio("local", once));
    let tools = manager.test_and_refresh_tools("local").await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let echo = manager.call_tool("local", "echo", args(json!({"text":"over stdio"}))).await.unwrap();
    assert_eq!(echo.text(), "over stdio");
    manager.remove("local").await;

    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let short_lived = StdioCommand {
        program: "sh".into(),
        args: vec!["-c".into(), r#"echo $$ > "$0"; exec "$1""#.into(), pid_file.to_string_lossy().into_owned(), binary],
        env: Vec::new(),
        cwd: None,
    };
    manager.upsert(ServerRecord::stdio("short", short_lived));
    let listed = manager.test_and_refresh_tools("short").await;
    assert!(listed.is_ok(), "discover + tools/list: {listed:?}");
    let first = manager.call_tool("short", "echo", args(json!({"text":"one"}))).await.unwrap();
    assert_eq!(first.text(), "one");
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    let killed = std::process::Command::new("kill").arg(&pid).status().unwrap();
    assert!(killed.success(), "kill {pid}: {killed}");
    // Reaped means the client has seen the exit (it reaps after reading the end of its output).
    eventually(&format!("the client has reaped the killed server (pid {pid})"), Duration::from_secs(10), async || {
        !process_exists(&pid)
    })
    .await;
    let again = manager.call_tool("short", "echo", args(json!({"text":"two"}))).await;
    assert_eq!(again.map(|r| r.text()).ok().as_deref(), Some("two"), "the exited server was started again");
    manager.close().await;
}
