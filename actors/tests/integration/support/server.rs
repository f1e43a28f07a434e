//! Shared helpers for in-process integration tests: start a real listener on a free loopback
//! port and talk to it over real sockets with awc.

use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, McpServer, ServerOptions, ToolError};
use mcpd_actors::{ListenerConfig, Mcpd};
use serde_json::{json, Map, Value};

use super::arrivals::Arrivals;

/// A catalog with the built-in tools plus `sleep {ms}` (for concurrency), `rendezvous {n}` and
/// `fail` / `panic`.
pub(crate) fn test_catalog() -> Catalog {
    test_catalog_counting(&Arrivals::new())
}

/// The test catalog whose `sleep` tool counts its calls in `sleeping` as they start.
pub(crate) fn test_catalog_counting(sleeping: &Arrivals) -> Catalog {
    let mut catalog = Catalog::new();
    mcpd::builtin::register(&mut catalog);
    catalog.add_tool(
        Tool::new(
            "sleep",
            "Sleeps for ms milliseconds.",
            json!({"type":"object","properties":{"ms":{"type":"integer"}}}),
        ),
        {
            let sleeping = sleeping.clone();
            move |args: Map<String, Value>, _ctx| {
                let sleeping = sleeping.clone();
                async move {
                    sleeping.arrive();
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(100);
                    actix_rt::time::sleep(Duration::from_millis(ms)).await;
                    Ok(CallToolResult::text(format!("slept {ms}")))
                }
            }
        },
    );
    let arrived = Arrivals::new();
    catalog.add_tool(
        Tool::new(
            "rendezvous",
            "Waits (up to 10 s) until n calls are inside it at once; says whether they met.",
            json!({"type":"object","properties":{"n":{"type":"integer"}}}),
        ),
        move |args: Map<String, Value>, _ctx| {
            let arrived = arrived.clone();
            async move {
                let n = args.get("n").and_then(Value::as_u64).unwrap_or(2) as usize;
                arrived.arrive();
                let met = arrived.reached(n, Duration::from_secs(10)).await;
                Ok(CallToolResult::text(if met { "met" } else { "alone" }))
            }
        },
    );
    catalog.add_tool(Tool::new("fail", "Always fails.", json!({"type":"object"})), |_args, _ctx| async move {
        Err::<CallToolResult, _>(ToolError::failed("the disk is on fire"))
    });
    catalog.add_tool(Tool::new("panic", "Always panics.", json!({"type":"object"})), |_args, _ctx| async move {
        if true {
            panic!("boom");
        }
        Ok(CallToolResult::text("unreachable"))
    });
    catalog
}

/// A running in-process server.
pub(crate) struct TestServer {
    pub(crate) runtime: Mcpd,
    pub(crate) port: u16,
}

impl TestServer {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }
}

/// Starts a listener on 127.0.0.1:0 serving `catalog`, with `tweak` applied to the config.
pub(crate) async fn start_with(
    catalog: Catalog,
    options: ServerOptions,
    tweak: impl FnOnce(&mut ListenerConfig),
) -> TestServer {
    start_live(Arc::new(LiveCatalog::new(catalog)), options, tweak).await
}

/// Starts a listener over a live catalog (tests change it while the server runs).
pub(crate) async fn start_live(
    catalog: Arc<LiveCatalog>,
    options: ServerOptions,
    tweak: impl FnOnce(&mut ListenerConfig),
) -> TestServer {
    let server = Arc::new(McpServer::with_live_catalog(options, catalog));
    let mut config = ListenerConfig { port: 0, workers: 2, ..ListenerConfig::default() };
    tweak(&mut config);
    let runtime = Mcpd::new(server, config.clone(), Vec::new());
    let status = runtime.start(config).await.expect("listener starts");
    TestServer { runtime, port: status.port }
}

/// Starts the test catalog with default options.
pub(crate) async fn start() -> TestServer {
    start_with(test_catalog(), ServerOptions::default(), |_| {}).await
}

/// The answer to one HTTP request.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn error_code(&self) -> i64 {
        self.json()["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error code in {}", self.json()))
    }
}

/// Sends one request with awc.
pub(crate) async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Reply {
    let client = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
    let method = awc::http::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = client.request(method, url);
    for (name, value) in headers {
        request = request.insert_header((*name, *value));
    }
    let body: Vec<u8> = body.into();
    let mut response = request.send_body(body).await.expect("request is answered");
    let status = response.status().as_u16();
    let headers =
        response.headers().iter().map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
    let body = response.body().limit(64 * 1024 * 1024).await.expect("body").to_vec();
    Reply { status, headers, body }
}

/// POSTs JSON to /mcp with `Content-Type: application/json` plus `headers`.
pub(crate) async fn post(server: &TestServer, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send("POST", &server.url("/mcp"), &all, serde_json::to_vec(body).expect("json")).await
}

/// The `_meta` of a valid 2026-07-28 request.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"}
    })
}

/// A valid stateless request body (params get `_meta` added).
pub(crate) fn modern_request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs a stateless request with correct routing headers.
pub(crate) async fn post_modern(server: &TestServer, id: i64, method: &str, params: Value) -> Reply {
    let name =
        params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str).map(mcpd::headers::encode_value);
    let body = modern_request(id, method, params);
    let mut headers = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    post(server, &headers, &body).await
}

/// POSTs a handshake-era request under `version` (header).
pub(crate) async fn post_legacy(server: &TestServer, version: &str, id: i64, method: &str, params: Value) -> Reply {
    post(
        server,
        &[("mcp-protocol-version", version)],
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    )
    .await
}

/// The server's `/metrics` text.
pub(crate) async fn metrics_text(server: &TestServer) -> String {
    String::from_utf8(send("GET", &server.url("/metrics"), &[], Vec::new()).await.body).expect("metrics are text")
}

/// The value of the sample `name_and_labels` (e.g. `mcpd_body_timeouts_total{reason="timeout"}`).
pub(crate) fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name_and_labels).and_then(|rest| rest.trim().parse().ok()))
}
