//! The listener lifecycle as a library API (start, stop, sync_with_settings, status, close),
//! live actor counts, and concurrency through the `ToolExecutor`.

use std::sync::Arc;
use std::time::Duration;

use mcpd::config::ListenerSettings;
use mcpd_actors::{ActorKind, ListenerConfig, Mcpd};
use serde_json::{json, Value};

use crate::support::eventually::eventually;
use crate::support::server::*;

fn runtime(settings: Option<std::path::PathBuf>) -> (Mcpd, ListenerConfig) {
    let server = Arc::new(mcpd::McpServer::new(Default::default(), test_catalog()));
    let config = ListenerConfig { port: 0, workers: 1, settings_file: settings, ..ListenerConfig::default() };
    (Mcpd::new(server, config.clone(), Vec::new()), config)
}

async fn ping(port: u16) -> Result<u16, String> {
    let client = awc::Client::builder().timeout(Duration::from_secs(5)).finish();
    client
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .insert_header(("content-type", "application/json"))
        .send_json(&json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string())
}

/// `start` returns the running status; starting again stops the previous endpoint first.
#[actix_rt::test]
async fn start_replaces_the_previous_listener() {
    let (runtime, config) = runtime(None);
    let first = runtime.start(config.clone()).await.unwrap();
    assert!(first.running);
    assert_eq!(ping(first.port).await, Ok(200));
    let second = runtime.start(config).await.unwrap();
    assert_ne!(first.port, second.port);
    assert_eq!(ping(second.port).await, Ok(200));
    assert!(ping(first.port).await.is_err(), "the old endpoint no longer accepts connections");
    assert_eq!(runtime.counts().live(ActorKind::Listener), 1, "one Listener actor throughout");
    runtime.close().await.unwrap();
}

/// `stop(save_disabled)` closes the endpoint and persists `enabled: false`; `sync_with_settings`
/// starts or stops according to the file.
#[actix_rt::test]
async fn stop_and_sync_follow_the_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("listener.json");
    let (runtime, config) = runtime(Some(path.clone()));

    let status = runtime.sync_with_settings().await.unwrap();
    assert!(!status.running, "no settings file: disabled by default");

    let started = runtime.start(config).await.unwrap();
    let saved = ListenerSettings::load(&path).unwrap();
    assert!(saved.enabled, "a successful start persists enabled");
    assert_eq!(saved.port, started.port);

    let stopped = runtime.stop(false).await.unwrap();
    assert!(!stopped.running);
    assert_eq!(stopped.message, "stopped");
    assert!(ping(started.port).await.is_err());
    assert!(ListenerSettings::load(&path).unwrap().enabled, "stop(false) leaves the settings alone");

    let synced = runtime.sync_with_settings().await.unwrap();
    assert!(synced.running, "settings say enabled");
    assert_eq!(ping(synced.port).await, Ok(200));

    runtime.stop(true).await.unwrap();
    assert!(!ListenerSettings::load(&path).unwrap().enabled, "stop(true) persists disabled");
    assert!(!runtime.sync_with_settings().await.unwrap().running);
    assert!(!runtime.status().await.unwrap().running);
    runtime.close().await.unwrap();
}

/// A port that is taken is a start error with the address; the status says why.
#[actix_rt::test]
async fn start_on_a_busy_port_fails_cleanly() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let (runtime, config) = runtime(None);
    let error = runtime.start(ListenerConfig { port, ..config }).await.expect_err("port in use");
    assert!(error.to_string().contains(&format!("127.0.0.1:{port}")), "{error}");
    let status = runtime.status().await.unwrap();
    assert!(!status.running);
    assert!(status.message.starts_with("start failed"), "{}", status.message);
    runtime.close().await.unwrap();
}

/// Live actor counts come from started()/stopped(): supervisor and listener while running,
/// zero after close.
#[actix_rt::test]
async fn close_stops_every_actor() {
    let (runtime, config) = runtime(None);
    let counts = runtime.counts();
    runtime.start(config).await.unwrap();
    assert_eq!(counts.live(ActorKind::Supervisor), 1);
    assert_eq!(counts.live(ActorKind::Listener), 1);
    runtime.close().await.unwrap();
    eventually("every actor has stopped", Duration::from_secs(2), async || {
        counts.snapshot().iter().all(|(_, n)| *n == 0)
    })
    .await;
    assert_eq!(counts.snapshot().iter().map(|(_, n)| *n).sum::<i64>(), 0, "{:?}", counts.snapshot());
    assert!(counts.messages(ActorKind::Listener) >= 2, "start and close went through the mailbox");
    assert!(runtime.status().await.is_err(), "the listener is gone");
}

fn line(v: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(v).unwrap();
    bytes.push(b'\n');
    bytes
}

/// Over stdio, requests run concurrently through the connection's ToolExecutor, and
/// `notifications/cancelled` cancels one (it gets no answer) while the others complete.
#[actix_rt::test]
async fn stdio_runs_calls_concurrently_and_cancels_on_request() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let server = Arc::new(mcpd::McpServer::new(Default::default(), test_catalog()));
    let counts = Arc::new(mcpd_actors::ActorCounts::new());
    let (client_in, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let serving =
        actix_rt::spawn(mcpd_actors::stdio::serve(server, Default::default(), counts.clone(), server_in, server_out));
    let mut writer = client_in;
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    writer.write_all(&line(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}))).await.unwrap();
    for id in 1..=4 {
        let call =
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"rendezvous","arguments":{"n":4}}});
        writer.write_all(&line(&call)).await.unwrap();
    }
    writer
        .write_all(&line(
            &json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}),
        ))
        .await
        .unwrap();
    writer
        .write_all(&line(
            &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}),
        ))
        .await
        .unwrap();
    writer.write_all(&line(&json!({"jsonrpc":"2.0","id":6,"method":"ping"}))).await.unwrap();
    writer.shutdown().await.unwrap();
    drop(writer);
    let mut answers = Vec::new();
    let read_all = async {
        while let Some(l) = lines.next_line().await.unwrap() {
            answers.push(serde_json::from_str::<Value>(&l).unwrap());
        }
    };
    actix_rt::time::timeout(Duration::from_secs(20), read_all).await.expect("stdio finishes after EOF");
    serving.await.unwrap().unwrap();
    let ids: Vec<i64> = answers.iter().filter_map(|a| a["id"].as_i64()).collect();
    for id in [0, 1, 2, 3, 4, 6] {
        assert!(ids.contains(&id), "request {id} answered: {answers:?}");
    }
    assert!(!ids.contains(&5), "the cancelled request gets no answer");
    for answer in answers.iter().filter(|a| (1..=4).contains(&a["id"].as_i64().unwrap_or(0))) {
        assert_eq!(answer["result"]["content"][0]["text"], "met", "calls overlapped");
    }
    assert_eq!(counts.live(ActorKind::ToolExecutor), 0, "the executor stops at EOF");
}

/// Over stdio, catalog changes reach the client as list_changed, and updates of subscribed
/// resources as resources/updated; the listener is removed at end of input.
#[actix_rt::test]
async fn stdio_hears_catalog_changes_and_subscribed_updates() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let live = Arc::new(mcpd::catalog::LiveCatalog::new(test_catalog()));
    let server = Arc::new(mcpd::McpServer::with_live_catalog(Default::default(), live.clone()));
    let counts = Arc::new(mcpd_actors::ActorCounts::new());
    let (mut writer, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let serving = actix_rt::spawn(mcpd_actors::stdio::serve(server, Default::default(), counts, server_in, server_out));
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    macro_rules! next {
        () => {{
            let line =
                actix_rt::time::timeout(Duration::from_secs(5), lines.next_line()).await.expect("a line in time");
            serde_json::from_str::<Value>(&line.unwrap().expect("open")).unwrap()
        }};
    }
    writer.write_all(&line(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}))).await.unwrap();
    assert_eq!(
        next!()["result"]["capabilities"]["tools"]["listChanged"],
        json!(null),
        "options decide; default has none"
    );
    writer
        .write_all(&line(&json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://a"}})))
        .await
        .unwrap();
    assert_eq!(next!()["result"], json!({}));
    live.update(|c| {
        c.remove_tool("echo");
    });
    assert_eq!(next!()["method"], "notifications/tools/list_changed");
    live.resource_updated("test://b");
    live.resource_updated("test://a");
    let updated = next!();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://a");
    writer.shutdown().await.unwrap();
    drop(writer);
    serving.await.unwrap().unwrap();
    live.update(|c| {
        c.remove_tool("time");
    });
}
