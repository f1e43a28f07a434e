//! A panic is a bug, and it is contained: a request whose handling panics gets an error, a
//! concurrent request on the same server (or the same client connection) completes, the server
//! keeps serving, and `/metrics` (`mcpd_panics_total{site}`) counts it.
//!
//! The panics are deliberate and test-only: a completion function with a bug (it runs outside
//! any tool, so only the runtime's containment stands between it and the connection) and a
//! client elicitation handler with a bug. Panics are counted per process, so a count is
//! asserted to grow, not to equal a number (other tests run in this process too).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpd::client::config::ConfigDocument;
use mcpd::model::Implementation;
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, HandlerFuture, ServerRecord};
use mcpd_actors::{panics, ActorCounts};
use serde_json::{json, Map, Value};

use crate::support::arrivals::Arrivals;
use crate::support::eventually::eventually_blocking;
use crate::support::mock_http::{MockServer, Reply};
use crate::support::server::{post_modern, send, start_with, test_catalog_counting, TestServer};

/// The outer bound of every test.
const TEST_BOUND: Duration = Duration::from_secs(40);

async fn bounded<F: Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_BOUND, test).await.expect("the test hung past its outer bound");
}

/// `mcpd_panics_total{site="<site>"}` as the server's `/metrics` reports it.
async fn panics_metric(server: &TestServer, site: &str) -> u64 {
    let body = send("GET", &server.url("/metrics"), &[], Vec::new()).await.body;
    let text = String::from_utf8(body).expect("metrics text");
    let series = format!("mcpd_panics_total{{site=\"{site}\"}}");
    text.lines()
        .find_map(|line| line.strip_prefix(&series).and_then(|rest| rest.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

/// A completion request that panics is answered `-32603` while a tool call started before it is
/// still running; that call completes, the server answers the next request, and `/metrics`
/// counts the panic under `site="request"`.
#[actix_rt::test]
async fn a_panicking_request_fails_alone_and_is_counted() {
    let sleeping = Arrivals::new();
    let mut catalog = test_catalog_counting(&sleeping);
    catalog.set_completer(|_reference, _argument, prefix| {
        assert_ne!(prefix, "boom", "a completer with a bug");
        vec![prefix.to_owned()]
    });
    let server = start_with(catalog, Default::default(), |_| {}).await;
    bounded(async {
        let before = panics_metric(&server, "request").await;
        let slow = post_modern(&server, 1, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1000}}));
        let boom = async {
            sleeping.wait_for(1, "the sleep tool is running").await;
            let params = json!({"ref": {"type": "ref/resource", "uri": "test://x"}, "argument": {"name": "id", "value": "boom"}});
            post_modern(&server, 2, "completion/complete", params).await
        };
        let (slow, boom) = futures_util::future::join(slow, boom).await;
        let boom = boom.json();
        assert_eq!(boom["error"]["code"], -32603, "{boom}");
        assert_eq!(
            boom["error"]["message"],
            "Internal error: the server failed on a bug while handling this request (it is logged)"
        );
        assert_eq!(boom["id"], 2);
        let slow = slow.json();
        assert_eq!(slow["result"]["content"][0]["text"], "slept 1000", "{slow}");
        let params = json!({"ref": {"type": "ref/resource", "uri": "test://x"}, "argument": {"name": "id", "value": "ok"}});
        let fine = post_modern(&server, 3, "completion/complete", params).await.json();
        assert_eq!(fine["result"]["completion"]["values"], json!(["ok"]), "{fine}");
        assert!(panics_metric(&server, "request").await > before, "the panic is counted");
        server.runtime.close().await.expect("close");
    })
    .await;
}

/// A client request that panics — the application's elicitation handler has a bug — fails
/// alone with `ClientError::Internal` naming the panic and where it happened; a call in flight
/// on the same connection completes, and the connection serves the next call.
#[actix_rt::test]
async fn a_panic_in_a_client_request_fails_that_call_only() {
    let asked = Arc::new(AtomicBool::new(false));
    let asked_by_server = asked.clone();
    let server = MockServer::start(move |request| {
        let id = request.rpc_id();
        let text = |text: &str| Reply::result(&id, json!({"content": [{"type": "text", "text": text}]}));
        match (request.rpc_method().as_deref(), request.params()["name"].as_str()) {
            (Some("server/discover"), _) => Reply::result(
                &id,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "serverInfo": {"name": "asks", "version": "1"}, "resultType": "complete"}),
            ),
            (Some("tools/call"), Some("ask")) => {
                asked_by_server.store(true, Ordering::SeqCst);
                let elicit = json!({"method": "elicitation/create",
                    "params": {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}});
                Reply::result(&id, json!({"resultType": "input_required", "inputRequests": {"confirm": elicit}}))
            }
            (Some("tools/call"), Some("slow")) => {
                // Answered only once the other call has had its input request (and so panicked).
                eventually_blocking("the ask call was answered", Duration::from_secs(10), || {
                    asked_by_server.load(Ordering::SeqCst)
                });
                Reply::Delayed(Duration::from_millis(300), Box::new(text("slow ok")))
            }
            (Some("tools/call"), _) => text("fast ok"),
            _ => Reply::error(200, &id, -32601, "Method not found"),
        }
    });
    bounded(async {
        let buggy: mcpd_actors::client::Handler = Arc::new(|params: Value| -> HandlerFuture {
            Box::pin(async move {
                assert!(params.is_null(), "an elicitation handler with a bug");
                Ok(json!({"action": "accept", "content": {}}))
            })
        });
        let handlers = ClientHandlers { elicitation: buggy, ..ClientHandlers::default() };
        let manager =
            ClientManager::new(handlers, Implementation::new("panics-tests", "1"), Arc::new(ActorCounts::new()));
        let document = ConfigDocument::from_value(json!({"url": server.url()})).expect("document");
        manager.upsert(ServerRecord { timeout_secs: 5, ..ServerRecord::new("asks", document) });
        let client_panics = || panics::counts().iter().find(|(site, _)| *site == "client").map_or(0, |(_, n)| *n);
        let before = client_panics();
        let (slow, ask) = futures_util::future::join(
            manager.call_tool("asks", "slow", Map::new()),
            manager.call_tool("asks", "ask", Map::new()),
        )
        .await;
        match ask {
            Err(ClientError::Internal(message)) => {
                assert!(message.contains("an elicitation handler with a bug"), "{message}");
                assert!(message.contains("panic_containment.rs:"), "the location: {message}");
            }
            other => panic!("the panicking call: {other:?}"),
        }
        assert!(asked.load(Ordering::SeqCst));
        assert_eq!(slow.expect("the call in flight").text(), "slow ok");
        assert_eq!(manager.call_tool("asks", "fast", Map::new()).await.expect("the next call").text(), "fast ok");
        assert!(client_panics() > before, "the panic is counted");
        manager.close().await;
    })
    .await;
}
