//! The client runtime (`ClientManager`) against scripted, misbehaving servers
//! (`support/mock_http.rs`: a `std::net::TcpListener` on 127.0.0.1:0 in plain threads).
//! Every fault must end in a clear `Err` within the client's time limit (5 s, the minimum),
//! never a hang; each test is also bounded by an outer `actix_rt::time::timeout`, so a hang
//! fails the test instead of blocking the run.
//!
//! Also: a repeated `tools/list` cursor, a configuration that changes while tools are being
//! fetched (the record keeps its old tools), and a changed configuration taking effect on the
//! next call (a new connection: new headers, a new session, the old one DELETEd).
//!
//! Silent servers are reported as `ClientError::Timeout` within the limit, and a timed-out
//! session request is cancelled with `notifications/cancelled` without stretching the wait.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::client::config::{ConfigDocument, ServerEntry};
use mcpd::model::Implementation;
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, ServerRecord};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::mock_http::{MockServer, Recorded, Reply};

/// The client's time limit in these tests (the minimum it allows).
const TIMEOUT_SECS: u64 = 5;
/// Slack over the client's limit for "within the timeout" (scheduling on a loaded machine).
const SLACK: Duration = Duration::from_millis(2500);
/// The outer bound of every test.
const TEST_BOUND: Duration = Duration::from_secs(40);

async fn bounded<F: Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_BOUND, test).await.expect("the test hung past its outer bound");
}

fn manager() -> ClientManager {
    ClientManager::new(ClientHandlers::default(), Implementation::new("mcpd-faults", "1"), Arc::new(ActorCounts::new()))
}

fn document(value: Value) -> ConfigDocument {
    ConfigDocument::from_value(value).expect("config document")
}

fn record(id: &str, url: &str) -> ServerRecord {
    ServerRecord { timeout_secs: TIMEOUT_SECS, ..ServerRecord::new(id, document(json!({ "url": url }))) }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("arguments are an object")
}

/// Asserts that `elapsed` is within the client's limit (plus scheduling slack).
fn assert_within_limit(elapsed: Duration, what: &str) {
    assert!(
        elapsed <= Duration::from_secs(TIMEOUT_SECS) + SLACK,
        "{what} took {elapsed:?}, more than the {TIMEOUT_SECS} s limit"
    );
}

/// A tool definition for `tools/list` pages.
fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool."), "inputSchema": {"type": "object"}})
}

/// `server/discover` answered for a stateless 2026-07-28 server.
fn discover_stateless(request: &Recorded) -> Reply {
    Reply::result(
        &request.rpc_id(),
        json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mock", "version": "1"},
            "resultType": "complete"
        }),
    )
}

/// A successful `tools/call` result.
fn text_result(request: &Recorded, text: &str) -> Reply {
    Reply::result(&request.rpc_id(), json!({"content": [{"type": "text", "text": text}], "isError": false}))
}

/// The `initialize` result of a handshake-era server at 2025-11-25.
fn initialize_result(request: &Recorded) -> Reply {
    Reply::result(
        &request.rpc_id(),
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mock-session", "version": "1"}
        }),
    )
}

// ---- no answer ----------------------------------------------------------------------------

/// A server that accepts connections and never answers.
fn silent_server() -> MockServer {
    MockServer::start(|_| Reply::Hang)
}

/// A stateless server that negotiates, then never answers.
fn stalling_stateless_server() -> MockServer {
    MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        _ => Reply::Hang,
    })
}

/// A handshake-era server that opens a session (`s-1`), then never answers (neither the call
/// nor its `notifications/cancelled`).
fn stalling_session_server() -> MockServer {
    MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
        Some("initialize") => initialize_result(request).with_header("Mcp-Session-Id", "s-1"),
        Some("notifications/initialized") => Reply::accepted(),
        _ => Reply::Hang,
    })
}

/// Runs `work`, timing it; its outcome without the value.
async fn timed<T, F: Future<Output = Result<T, ClientError>>>(
    what: &'static str,
    work: F,
) -> (&'static str, Duration, Result<(), ClientError>) {
    let started = Instant::now();
    let outcome = work.await.map(drop);
    (what, started.elapsed(), outcome)
}

/// Whether an error reports a timeout, in either of the forms the client currently produces
/// (`silent_servers_are_reported_as_timeouts` pins the exact error).
fn is_some_timeout(error: &ClientError) -> bool {
    match error {
        ClientError::Timeout(secs) => *secs == TIMEOUT_SECS,
        ClientError::Transport(message) => message.to_ascii_lowercase().contains("timeout"),
        _ => false,
    }
}

/// Silent servers never hang the caller: a refresh and a call against a server that never
/// answers, a call against a stateless server that stalls after negotiating, and a call in a
/// session whose server stalls each end in a timeout error within the 5 s limit.
#[actix_rt::test]
async fn silent_servers_fail_within_the_limit() {
    let silent = silent_server();
    let stateless = stalling_stateless_server();
    let session = stalling_session_server();
    bounded(async {
        let manager = manager();
        manager.upsert(record("silent-list", &silent.url()));
        manager.upsert(record("silent-call", &silent.url()));
        manager.upsert(record("stateless", &stateless.url()));
        manager.upsert(record("session", &session.url()));

        // The four run at once (each on its own connection), each timed on its own.
        let (a, b, c, d) = futures_util::future::join4(
            timed("tools/list, silent server", manager.test_and_refresh_tools("silent-list")),
            timed("tools/call, silent server", manager.call_tool("silent-call", "echo", Map::new())),
            timed("tools/call, stalled stateless", manager.call_tool("stateless", "echo", args(json!({"text": "x"})))),
            timed("tools/call, stalled session", manager.call_tool("session", "echo", args(json!({"text": "x"})))),
        )
        .await;
        let results = [a, b, c, d];
        for (what, elapsed, outcome) in results {
            assert_within_limit(elapsed, what);
            assert!(outcome.as_ref().is_err_and(is_some_timeout), "{what}: {outcome:?}");
        }
        assert!(manager.record("silent-list").expect("record").tools.is_empty());
        assert_eq!(silent.rpc_methods(), ["server/discover", "server/discover"], "each call tried to connect");
        assert_eq!(stateless.rpc_methods(), ["server/discover", "tools/call"]);
        assert_eq!(
            session.rpc_methods()[..4],
            ["server/discover", "initialize", "notifications/initialized", "tools/call"]
        );
    })
    .await;
}

/// A server that never answers is reported as `ClientError::Timeout(5)` ("timed out after 5
/// s"), the variant for "no answer within the time limit" — for the negotiation and for a call
/// on the stateless wire.
#[actix_rt::test]
async fn silent_servers_are_reported_as_timeouts() {
    let silent = silent_server();
    let stateless = stalling_stateless_server();
    bounded(async {
        let manager = manager();
        manager.upsert(record("silent", &silent.url()));
        manager.upsert(record("stateless", &stateless.url()));
        assert_eq!(manager.test_and_refresh_tools("silent").await, Err(ClientError::Timeout(TIMEOUT_SECS)));
        assert_eq!(manager.call_tool("silent", "echo", Map::new()).await, Err(ClientError::Timeout(TIMEOUT_SECS)));
        assert_eq!(manager.call_tool("stateless", "echo", Map::new()).await, Err(ClientError::Timeout(TIMEOUT_SECS)));
        assert_eq!(ClientError::Timeout(TIMEOUT_SECS).to_string(), "timed out after 5 s");
    })
    .await;
}

/// In a session, a request the server never answers is `Timeout(5)` within the limit, and the
/// client tells the server with `notifications/cancelled` naming the request — a best-effort
/// notice that must not stretch the caller's wait even though this server never answers it.
#[actix_rt::test]
async fn a_stalled_session_request_is_a_timeout_and_is_cancelled_within_the_limit() {
    let server = stalling_session_server();
    bounded(async {
        let manager = manager();
        manager.upsert(record("session", &server.url()));
        let started = Instant::now();
        let outcome = manager.call_tool("session", "echo", args(json!({"text": "x"}))).await;
        assert_within_limit(started.elapsed(), "a stalled call in a session");
        assert_eq!(outcome, Err(ClientError::Timeout(TIMEOUT_SECS)));
        let call_id = server
            .requests()
            .iter()
            .find(|r| r.rpc_method().as_deref() == Some("tools/call"))
            .map(Recorded::rpc_id)
            .expect("tools/call");
        let cancelled = server
            .wait_for(Duration::from_secs(2), |r| {
                r.iter().any(|r| {
                    r.rpc_method().as_deref() == Some("notifications/cancelled")
                        && r.params()["requestId"] == call_id
                        && r.header("mcp-session-id") == Some("s-1")
                })
            })
            .await;
        assert!(cancelled, "no notifications/cancelled for {call_id}: {:?}", server.rpc_methods());
    })
    .await;
}

// ---- garbage ------------------------------------------------------------------------------

/// A peer that is not an HTTP server at all: a transport error, at once.
#[actix_rt::test]
async fn a_server_that_does_not_speak_http_is_a_transport_error() {
    let server = MockServer::start(|_| Reply::Raw(b"SSH-2.0-OpenSSH_9.6 not an HTTP server\r\n\r\n".to_vec()));
    bounded(async {
        let manager = manager();
        manager.upsert(record("garbage", &server.url()));
        let started = Instant::now();
        let outcome = manager.test_and_refresh_tools("garbage").await;
        assert!(started.elapsed() < Duration::from_secs(TIMEOUT_SECS), "fails fast: {:?}", started.elapsed());
        assert!(matches!(&outcome, Err(ClientError::Transport(_))), "{outcome:?}");
    })
    .await;
}

/// An HTTP server whose `200 application/json` body is not JSON: a protocol error that says so.
/// A JSON body that is not a JSON-RPC response to the request is a protocol error too.
#[actix_rt::test]
async fn a_body_that_is_not_json_or_not_a_response_is_a_protocol_error() {
    let not_json = MockServer::start(|_| Reply::text(200, "application/json", "<<this is not json>>"));
    let not_rpc = MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        _ => Reply::json(200, &json!({"hello": "world"})),
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("not-json", &not_json.url()));
        match manager.test_and_refresh_tools("not-json").await {
            Err(ClientError::Protocol(message)) => assert!(message.contains("not JSON"), "{message}"),
            other => panic!("a body that is not JSON: {other:?}"),
        }
        manager.upsert(record("not-rpc", &not_rpc.url()));
        match manager.call_tool("not-rpc", "echo", Map::new()).await {
            Err(ClientError::Protocol(message)) => assert!(message.contains("does not match request"), "{message}"),
            other => panic!("a JSON body that is not a response: {other:?}"),
        }
    })
    .await;
}

// ---- SSE that dies --------------------------------------------------------------------------

/// The answer to `tools/call` starts as an SSE stream (a progress notification), then the
/// connection dies before the response: an error that names the stream, at once. On the
/// stateless wire there is no resumption.
#[actix_rt::test]
async fn an_sse_stream_that_dies_before_the_response_is_an_error() {
    let server = MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        _ => Reply::SseThenDie {
            headers: Vec::new(),
            events: vec![
                ": opening the stream".into(),
                r#"data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#
                    .into(),
            ],
        },
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("dies", &server.url()));
        let started = Instant::now();
        let outcome = manager.call_tool("dies", "echo", args(json!({"text": "x"}))).await;
        assert!(started.elapsed() < Duration::from_secs(TIMEOUT_SECS), "fails fast: {:?}", started.elapsed());
        match outcome {
            Err(ClientError::Protocol(message)) => {
                assert!(message.contains("stream"), "the error names the stream: {message}");
            }
            other => panic!("an SSE stream that died: {other:?}"),
        }
        assert_eq!(server.rpc_methods(), ["server/discover", "tools/call"], "no retry on the stateless wire");
    })
    .await;
}

/// The same in a session, with event ids: the client tries to resume the stream (GET with
/// `Last-Event-ID`); the server refuses (405), so the call fails with an error that names the
/// stream, within the limit.
#[actix_rt::test]
async fn a_session_sse_stream_that_dies_and_cannot_be_resumed_is_an_error() {
    let server = MockServer::start(|request| {
        if request.method == "GET" {
            return Reply::text(405, "text/plain", "no standalone stream here");
        }
        match request.rpc_method().as_deref() {
            Some("server/discover") => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
            Some("initialize") => initialize_result(request).with_header("Mcp-Session-Id", "s-1"),
            Some("notifications/initialized" | "notifications/cancelled") => Reply::accepted(),
            _ => Reply::SseThenDie {
                headers: vec![("Mcp-Session-Id".into(), "s-1".into())],
                events: vec!["id: e-1\nretry: 100\ndata: ".into()],
            },
        }
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("dies", &server.url()));
        let started = Instant::now();
        let outcome = manager.call_tool("dies", "echo", args(json!({"text": "x"}))).await;
        assert_within_limit(started.elapsed(), "a dead session stream");
        match outcome {
            Err(ClientError::Protocol(message)) => assert!(message.contains("stream"), "{message}"),
            other => panic!("a dead, unresumable SSE stream: {other:?}"),
        }
        let requests = server.requests();
        // (A GET without Last-Event-ID is the session's standalone stream, refused the same way.)
        let resume = requests
            .iter()
            .find(|r| r.method == "GET" && r.header("last-event-id").is_some())
            .unwrap_or_else(|| panic!("the client did not try to resume: {:?}", server.rpc_methods()));
        assert_eq!(resume.header("last-event-id"), Some("e-1"));
        assert_eq!(resume.header("mcp-session-id"), Some("s-1"));
    })
    .await;
}

// ---- HTTP errors ----------------------------------------------------------------------------

/// `500` with an HTML page (a proxy's error page): a transport error naming the status, for the
/// negotiation and for a call after a good negotiation.
#[actix_rt::test]
async fn http_500_with_html_is_a_transport_error_naming_the_status() {
    const PAGE: &str = "<html><body><h1>500 Internal Server Error</h1></body></html>";
    let always = MockServer::start(|_| Reply::text(500, "text/html", PAGE));
    let on_call = MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        _ => Reply::text(500, "text/html; charset=utf-8", PAGE),
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("always", &always.url()));
        match manager.test_and_refresh_tools("always").await {
            Err(ClientError::Http { status, body }) => {
                assert_eq!(status, 500, "{body}");
                assert!(body.contains("Internal Server Error"), "{body}");
            }
            other => panic!("500 on discover: {other:?}"),
        }
        assert_eq!(always.rpc_methods(), ["server/discover"], "a 500 is not a reason to fall back to initialize");
        manager.upsert(record("on-call", &on_call.url()));
        match manager.call_tool("on-call", "echo", Map::new()).await {
            Err(ClientError::Http { status, body }) => assert_eq!(status, 500, "{body}"),
            other => panic!("500 on tools/call: {other:?}"),
        }
    })
    .await;
}

/// A JSON-RPC error that proves a modern server (-32020) is never "fallen back" from: on
/// `initialize` (after a legacy-looking discover) it is returned as is — no HTTP+SSE attempt
/// (no GET), no second initialize; on `server/discover` itself there is no initialize at all.
#[actix_rt::test]
async fn a_modern_json_rpc_error_on_initialize_or_discover_is_not_fallen_back_from() {
    let on_initialize = MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
        Some("initialize") => Reply::error(400, &request.rpc_id(), -32020, "Header mismatch"),
        _ => Reply::text(404, "text/plain", "unexpected"),
    });
    let on_discover = MockServer::start(|request| Reply::error(400, &request.rpc_id(), -32020, "Header mismatch"));
    bounded(async {
        let manager = manager();
        manager.upsert(record("init", &on_initialize.url()));
        match manager.test_and_refresh_tools("init").await {
            Err(ClientError::Rpc { code, http_status, message, .. }) => {
                assert_eq!((code, http_status), (-32020, 400), "{message}");
                assert_eq!(message, "Header mismatch");
            }
            other => panic!("-32020 on initialize: {other:?}"),
        }
        let requests = on_initialize.requests();
        assert!(requests.iter().all(|r| r.method == "POST"), "no HTTP+SSE fallback (GET): {requests:?}");
        assert_eq!(on_initialize.rpc_methods(), ["server/discover", "initialize"]);

        manager.upsert(record("discover", &on_discover.url()));
        match manager.call_tool("discover", "echo", Map::new()).await {
            Err(ClientError::Rpc { code, http_status, .. }) => assert_eq!((code, http_status), (-32020, 400)),
            other => panic!("-32020 on discover: {other:?}"),
        }
        assert_eq!(on_discover.rpc_methods(), ["server/discover"], "no initialize after a modern error");
    })
    .await;
}

// ---- pagination ---------------------------------------------------------------------------

/// A `tools/list` whose `nextCursor` repeats: the exact error, after exactly two pages, and the
/// record keeps no tools.
#[actix_rt::test]
async fn a_repeated_tools_list_cursor_is_refused() {
    let server = MockServer::start(|request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        Some("tools/list") => Reply::result(&request.rpc_id(), json!({"tools": [tool("loop")], "nextCursor": "again"})),
        _ => Reply::text(404, "text/plain", "unexpected"),
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("cursor", &server.url()));
        let outcome = manager.test_and_refresh_tools("cursor").await;
        assert_eq!(
            outcome,
            Err(ClientError::Protocol("MCP server returned a repeated tools/list cursor.".into())),
            "{outcome:?}"
        );
        assert_eq!(
            outcome.unwrap_err().to_string(),
            "protocol error: MCP server returned a repeated tools/list cursor."
        );
        let pages: Vec<Value> = server
            .requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("tools/list"))
            .map(|r| r.params().get("cursor").cloned().unwrap_or(Value::Null))
            .collect();
        assert_eq!(pages, [Value::Null, json!("again")], "the first page, then the cursor once");
        assert!(manager.record("cursor").expect("record").tools.is_empty());
    })
    .await;
}

// ---- configuration changes ----------------------------------------------------------------

/// The configuration changes (a different header) while `tools/list` is in flight: the refresh
/// fails with `ConfigChanged` and the record keeps its previous tools, under the new document.
#[actix_rt::test]
async fn a_config_change_during_a_refresh_is_config_changed_and_keeps_the_old_tools() {
    let lists = Arc::new(AtomicUsize::new(0));
    let served = lists.clone();
    let server = MockServer::start(move |request| match request.rpc_method().as_deref() {
        Some("server/discover") => discover_stateless(request),
        Some("tools/list") => {
            // The first list is quick; the second is slow and has one more tool.
            if served.fetch_add(1, Ordering::SeqCst) == 0 {
                Reply::result(&request.rpc_id(), json!({"tools": [tool("old")]}))
            } else {
                let reply = Reply::result(&request.rpc_id(), json!({"tools": [tool("old"), tool("new")]}));
                Reply::Delayed(Duration::from_millis(1500), Box::new(reply))
            }
        }
        _ => Reply::text(404, "text/plain", "unexpected"),
    });
    bounded(async {
        let manager = manager();
        let url = server.url();
        manager.upsert(record("srv", &url));
        let first = manager.test_and_refresh_tools("srv").await.expect("first refresh");
        assert_eq!(first.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["old"]);

        let changed = document(json!({"url": url, "headers": {"X-Tenant": "two"}}));
        let refresh = manager.test_and_refresh_tools("srv");
        let change = async {
            // Change the configuration once the slow tools/list has reached the server.
            let reached = server
                .wait_for(Duration::from_secs(10), |r| {
                    r.iter().filter(|r| r.rpc_method().as_deref() == Some("tools/list")).count() == 2
                })
                .await;
            assert!(reached, "the second tools/list never arrived: {:?}", server.rpc_methods());
            let current = manager.record("srv").expect("record");
            manager.upsert(ServerRecord { server: ServerEntry::Http(changed.clone()), ..current });
        };
        let (outcome, ()) = futures_util::future::join(refresh, change).await;
        assert_eq!(outcome, Err(ClientError::ConfigChanged));
        assert_eq!(
            ClientError::ConfigChanged.to_string(),
            "MCP configuration changed while fetching tools. Fetch again using the saved configuration."
        );
        let record = manager.record("srv").expect("record");
        assert_eq!(record.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["old"], "tools not updated");
        assert_eq!(record.document().map(ConfigDocument::text), Some(changed.text()), "the new document stays");

        // Fetching again with the saved configuration works and stores the new list.
        let again = manager.test_and_refresh_tools("srv").await.expect("refresh again");
        assert_eq!(again.len(), 2);
        assert_eq!(manager.record("srv").expect("record").tools.len(), 2);
    })
    .await;
}

/// A changed configuration (another header value) takes effect at the next call: a new
/// connection that sends the new header, initializes afresh (no `Mcp-Session-Id` on its
/// initialize), and never sends the old session id; the old session is DELETEd with the old
/// header.
#[actix_rt::test]
async fn a_changed_config_uses_a_new_connection_with_the_new_header_and_no_old_session() {
    let sessions = Arc::new(AtomicUsize::new(0));
    let minted = sessions.clone();
    let server = MockServer::start(move |request| {
        if request.method == "DELETE" {
            return Reply::Http { status: 200, headers: Vec::new(), body: Vec::new() };
        }
        match request.rpc_method().as_deref() {
            Some("server/discover") => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
            Some("initialize") => {
                let n = minted.fetch_add(1, Ordering::SeqCst) + 1;
                initialize_result(request).with_header("Mcp-Session-Id", &format!("session-{n}"))
            }
            Some("notifications/initialized") => Reply::accepted(),
            Some("tools/call") => {
                let tenant = request.header("x-tenant").unwrap_or("none").to_owned();
                text_result(request, &format!("tenant {tenant}"))
            }
            _ => Reply::text(404, "text/plain", "unexpected"),
        }
    });
    bounded(async {
        let manager = manager();
        let url = server.url();
        let configured = |tenant: &str| ServerRecord {
            timeout_secs: TIMEOUT_SECS,
            ..ServerRecord::new("srv", document(json!({"url": url, "headers": {"X-Tenant": tenant}})))
        };
        manager.upsert(configured("one"));
        let first = manager.call_tool("srv", "whoami", Map::new()).await.expect("first call");
        assert_eq!(first.text(), "tenant one");
        let before = server.requests().len();
        let old = server.requests();
        assert!(old.iter().all(|r| r.header("x-tenant") == Some("one")), "{old:?}");
        let old_call = old.iter().find(|r| r.rpc_method().as_deref() == Some("tools/call")).expect("tools/call");
        assert_eq!(old_call.header("mcp-session-id"), Some("session-1"));

        manager.upsert(configured("two"));
        let second = manager.call_tool("srv", "whoami", Map::new()).await.expect("second call");
        assert_eq!(second.text(), "tenant two");

        // The old connection closes its session (asynchronously), with its own header.
        let deleted = server
            .wait_for(Duration::from_secs(5), |r| {
                r.iter().any(|r| r.method == "DELETE" && r.header("mcp-session-id") == Some("session-1"))
            })
            .await;
        assert!(deleted, "the old session was not DELETEd: {:?}", server.requests());
        let requests = server.requests();
        let delete = requests.iter().find(|r| r.method == "DELETE").expect("DELETE");
        assert_eq!(delete.header("x-tenant"), Some("one"), "the old connection keeps its headers");

        let new: Vec<&Recorded> = requests[before..].iter().filter(|r| r.method == "POST").collect();
        let methods: Vec<String> = new.iter().map(|r| r.rpc_method().unwrap_or_default()).collect();
        assert_eq!(methods, ["server/discover", "initialize", "notifications/initialized", "tools/call"]);
        for request in &new {
            assert_eq!(request.header("x-tenant"), Some("two"), "{request:?}");
            assert_ne!(request.header("mcp-session-id"), Some("session-1"), "old session id sent: {request:?}");
        }
        let initialize = new[1];
        assert_eq!(initialize.header("mcp-session-id"), None, "a fresh initialize");
        assert_eq!(new[3].header("mcp-session-id"), Some("session-2"));
    })
    .await;
}

/// A session server that answers a call on the standalone GET stream instead of the call's own
/// stream (which stays silent): the client takes the response from there, well within its
/// limit. (Responses for other ids on that stream are ignored.)
#[actix_rt::test]
async fn a_response_on_the_standalone_stream_answers_its_request() {
    let call_in_flight = Arc::new(AtomicBool::new(false));
    let server = MockServer::start(move |request| {
        if request.method == "GET" {
            // The stream's headers come once the call is in flight, which is after the client
            // stopped waiting for them (2 s). Its id is not known here: answer the first few ids.
            eventually_blocking("the tools/call is in flight", Duration::from_secs(10), || {
                call_in_flight.load(Ordering::SeqCst)
            });
            let events = (1..=6)
                .map(|id| {
                    let response = json!({"jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": "via the standalone stream"}]}});
                    format!("id: g-{id}\ndata: {response}")
                })
                .collect();
            return Reply::SseThenDie { headers: vec![("Mcp-Session-Id".into(), "s-1".into())], events };
        }
        match request.rpc_method().as_deref() {
            Some("server/discover") => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
            Some("initialize") => initialize_result(request).with_header("Mcp-Session-Id", "s-1"),
            Some("notifications/initialized" | "notifications/cancelled") => Reply::accepted(),
            Some("tools/call") => {
                call_in_flight.store(true, Ordering::SeqCst);
                Reply::Hang
            }
            _ => Reply::Hang,
        }
    });
    bounded(async {
        let manager = manager();
        manager.upsert(record("elsewhere", &server.url()));
        let started = Instant::now();
        let result = manager.call_tool("elsewhere", "echo", args(json!({"text": "x"}))).await;
        assert!(
            started.elapsed() < Duration::from_secs(TIMEOUT_SECS),
            "answered, not timed out: {:?}",
            started.elapsed()
        );
        let result = result.expect("the response from the standalone stream");
        assert_eq!(result.text(), "via the standalone stream");
    })
    .await;
}
