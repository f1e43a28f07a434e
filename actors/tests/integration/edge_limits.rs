//! Slow and stalled clients at the HTTP edge: request bodies that never finish are answered 408
//! and closed after the body timeout while ordinary clients keep being served; with the
//! connections capped, stalled bodies cannot take the reserve; idle connections are closed, and
//! so (Linux) is the connection of a client that accepts none of the data sent to it.
//!
//! The stalled clients are raw loopback sockets that send a request head promising a body and
//! then only part of it. The test process holds both ends of each connection, so the number it
//! opens is bounded by the process's open-file limit (read from `/proc/self/limits`; with a low
//! limit the test opens fewer and says so — raise `ulimit -n` to run it at full size).

use std::time::{Duration, Instant};

use actix_rt::net::TcpStream;
use futures_util::future::join_all;
use mcpd::model::{CallToolResult, Tool};
use mcpd::ServerOptions;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::eventually::eventually;
use crate::support::server::*;

/// How many stalled connections the tests want to hold at once.
const STALLED: usize = 2_000;

/// `wanted` stalled connections, or fewer when the open-file limit cannot hold both ends of
/// that many beside the rest of the test process.
fn stalled_budget(wanted: usize) -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits").ok().and_then(|limits| {
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?.to_owned();
        line.trim_start_matches("Max open files").split_whitespace().next()?.parse::<usize>().ok()
    });
    let affordable = limit.map_or(wanted, |limit| limit.saturating_sub(1_000) / 2);
    if affordable < wanted {
        eprintln!("edge_limits: the open-file limit ({limit:?}) allows {affordable} stalled connections, not {wanted}");
    }
    wanted.min(affordable).max(10)
}

/// A connection that sent a request head promising 100 bytes of body, and 10 of them.
async fn stalled_post(port: u16) -> (TcpStream, Instant) {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    socket.write_all(head.as_bytes()).await.expect("head");
    socket.write_all(br#"{"jsonrpc""#).await.expect("part of the body");
    (socket, Instant::now())
}

/// Opens `n` stalled connections, a hundred at a time.
async fn open_stalled(port: u16, n: usize) -> Vec<(TcpStream, Instant)> {
    let mut stalled = Vec::with_capacity(n);
    while stalled.len() < n {
        let batch = (n - stalled.len()).min(100);
        stalled.extend(join_all((0..batch).map(|_| stalled_post(port))).await);
    }
    stalled
}

/// What the server sent on a connection before closing it (`None`: still open after `within`).
async fn read_until_closed(socket: &mut TcpStream, within: Duration) -> Option<String> {
    let mut received = Vec::new();
    match actix_rt::time::timeout(within, socket.read_to_end(&mut received)).await {
        Ok(Ok(_)) => Some(String::from_utf8_lossy(&received).into_owned()),
        Ok(Err(e)) if !received.is_empty() || e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&received).into_owned())
        }
        Ok(Err(e)) => panic!("reading a stalled connection failed: {e}"),
        Err(_) => None,
    }
}

/// An ordinary client's call, which must be answered.
async fn echo(server: &TestServer, id: i64) {
    let reply =
        post_modern(server, id, "tools/call", json!({"name": "echo", "arguments": {"text": "still here"}})).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.json()["result"]["content"][0]["text"], "still here");
}

/// Thousands of stalled `POST /mcp` bodies: an ordinary client is served while they are open,
/// and each of them is answered 408 (a JSON-RPC error) and closed once the body timeout has
/// passed — not before.
#[actix_rt::test]
async fn stalled_bodies_are_answered_408_and_closed_while_others_are_served() {
    // Long enough that thousands of connections are accepted before it ends, on a loaded machine.
    let timeout = Duration::from_secs(8);
    let n = stalled_budget(STALLED);
    let server = start_with(test_catalog(), ServerOptions::default(), |c| c.connections.body_timeout = timeout).await;
    let mut stalled = open_stalled(server.port, n).await;

    let served = Instant::now();
    for id in 0..20 {
        echo(&server, id).await;
    }
    assert!(served.elapsed() < timeout, "the ordinary client was served in {:?}", served.elapsed());
    eventually("every stalled connection is open while the client is served", Duration::from_secs(6), async || {
        let open = metric(&metrics_text(&server).await, "mcpd_connections_open").unwrap_or_default();
        (open >= n as f64).then_some(()).ok_or(format!("{open} of {n} open"))
    })
    .await;

    let answers = join_all(stalled.iter_mut().map(|(socket, sent)| async move {
        let answer = read_until_closed(socket, timeout + Duration::from_secs(60)).await;
        (answer, sent.elapsed())
    }))
    .await;
    for (answer, waited) in answers {
        let answer = answer.expect("the stalled connection is closed");
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("\"code\":-32600") && answer.contains("not received within 8 s"), "{answer}");
        assert!(waited >= timeout - Duration::from_millis(50), "answered after {waited:?}, before the timeout");
    }
    let text = metrics_text(&server).await;
    assert_eq!(metric(&text, "mcpd_body_timeouts_total{reason=\"timeout\"}"), Some(n as f64), "{text}");
    eventually("the stalled connections are gone", Duration::from_secs(10), async || {
        let open = metric(&metrics_text(&server).await, "mcpd_connections_open").unwrap_or(f64::MAX);
        (open < 10.0).then_some(()).ok_or(format!("{open} connections open"))
    })
    .await;
    echo(&server, 99).await;
}

/// With the connections capped, stalled bodies keep at most `max_slow_bodies` of them: the
/// others are answered 408 as soon as they are slow (one second), long before the body timeout,
/// so an ordinary client that arrives behind hundreds of stalled ones is served in seconds.
#[actix_rt::test]
async fn stalled_bodies_cannot_take_the_reserve() {
    let n = stalled_budget(600);
    let (max_connections, max_slow) = (n * 2 / 3, n / 6);
    let server = start_with(test_catalog(), ServerOptions::default(), |c| {
        c.connections.max_connections = max_connections;
        c.connections.max_slow_bodies = max_slow;
        c.connections.body_timeout = Duration::from_secs(120);
    })
    .await;
    let mut stalled = open_stalled(server.port, n).await;

    let served = Instant::now();
    echo(&server, 1).await;
    assert!(served.elapsed() < Duration::from_secs(20), "served after {:?}", served.elapsed());

    let answers =
        join_all(stalled.iter_mut().map(|(socket, _)| read_until_closed(socket, Duration::from_secs(10)))).await;
    let refused: Vec<String> = answers.into_iter().flatten().collect();
    assert_eq!(refused.len(), n - max_slow, "all but {max_slow} slow bodies are answered early");
    for answer in &refused {
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("other requests wait for theirs"), "{answer}");
    }
    let text = metrics_text(&server).await;
    let refused_metric = metric(&text, "mcpd_body_timeouts_total{reason=\"slow_bodies\"}");
    assert_eq!(refused_metric, Some((n - max_slow) as f64), "{text}");
    drop(stalled);
    echo(&server, 2).await;
}

/// An idle keep-alive connection is closed after the keep-alive timeout, and a connection that
/// sends no request head within the header timeout is answered 408.
#[actix_rt::test]
async fn idle_connections_are_closed() {
    let server = start_with(test_catalog(), ServerOptions::default(), |c| {
        c.connections.keep_alive = Duration::from_millis(500);
        c.connections.header_timeout = Duration::from_millis(500);
    })
    .await;
    let mut socket = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
    let body =
        serde_json::to_string(&modern_request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})))
            .expect("json");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.expect("head");
    socket.write_all(body.as_bytes()).await.expect("body");
    let answered = read_until_closed(&mut socket, Duration::from_secs(10)).await.expect("closed when idle");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(answered.contains("\"text\":\"x\""), "{answered}");

    let mut silent = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
    let answer = read_until_closed(&mut silent, Duration::from_secs(10)).await.expect("closed without a head");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// A client that stops reading a large answer is dropped once it has accepted nothing for the
/// send timeout (Linux: `TCP_USER_TIMEOUT`), instead of holding its connection and buffers.
#[cfg(target_os = "linux")]
#[actix_rt::test]
async fn a_client_that_reads_nothing_is_dropped_after_the_send_timeout() {
    let mut catalog = test_catalog();
    catalog.add_tool(
        Tool::new("big", "Answers with `size` bytes of text.", json!({"type": "object"})),
        |args: Map<String, Value>, _ctx| async move {
            let size = args.get("size").and_then(Value::as_u64).unwrap_or(1) as usize;
            Ok(CallToolResult::text("x".repeat(size)))
        },
    );
    let server = start_with(catalog, ServerOptions::default(), |c| {
        c.connections.send_timeout = Duration::from_secs(2);
        c.connections.keep_alive = Duration::from_secs(600);
    })
    .await;
    let body = serde_json::to_string(&modern_request(
        1,
        "tools/call",
        json!({"name": "big", "arguments": {"size": 32 * 1024 * 1024}}),
    ))
    .expect("json");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: big\r\n\r\n",
        body.len()
    );
    let mut socket = TcpStream::connect(("127.0.0.1", server.port)).await.expect("connect");
    socket.write_all(head.as_bytes()).await.expect("head");
    socket.write_all(body.as_bytes()).await.expect("body");
    // The answer begins (so the server holds the connection); from here on the client reads
    // nothing: the answer fills the socket buffers, then nothing moves.
    let mut start = [0u8; 12];
    let begun = actix_rt::time::timeout(Duration::from_secs(30), socket.read_exact(&mut start)).await;
    assert!(begun.is_ok_and(|read| read.is_ok()), "the answer begins");
    assert_eq!(&start, b"HTTP/1.1 200");
    let what = "the server drops the connection of the client that reads nothing";
    eventually(what, Duration::from_secs(60), async || {
        let open = metric(&metrics_text(&server).await, "mcpd_connections_open").unwrap_or(f64::MAX);
        (open <= 1.0).then_some(()).ok_or(format!("{open} connections open"))
    })
    .await;
    // The kernel gave up on the client without telling it (no FIN, no RST): the client learns
    // when it next sends or reads, so only the server's side is checked here.
    drop(socket);
}
