//! Status JSON, API keys and the Origin / Host checks that guard every route.

use mcpd::auth::{KeySet, OriginPolicy};
use serde_json::json;

use crate::support::server::*;

/// `GET /` and `GET /status` return the status JSON.
#[actix_rt::test]
async fn status_routes_report_the_listener() {
    let server = start().await;
    for path in ["/", "/status"] {
        let reply = send("GET", &server.url(path), &[], Vec::new()).await;
        assert_eq!(reply.status, 200, "{path}");
        let status = reply.json();
        assert_eq!(status["running"], true);
        assert_eq!(status["host"], "127.0.0.1");
        assert_eq!(status["port"], server.port);
        assert_eq!(status["url"], format!("http://127.0.0.1:{}/mcp", server.port));
        assert!(status["startedAt"].as_u64().is_some_and(|t| t > 1_700_000_000_000));
        assert_eq!(status["message"], "running");
        assert_eq!(status["transport"], "http");
        assert_eq!(status["supportedVersions"][0], "2026-07-28");
        assert_eq!(status["supportedVersions"].as_array().map(Vec::len), Some(5));
    }
}

/// With keys configured, every route needs one: 401 with a JSON-RPC body otherwise.
#[actix_rt::test]
async fn keys_are_required_on_every_route_when_configured() {
    let server = start_with(test_catalog(), Default::default(), |c| c.keys = KeySet::new(["alpha", "beta"])).await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    let reply = post(&server, &[], &ping).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error"]["code"], -32001);
    assert!(reply.json()["id"].is_null());
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    for path in ["/", "/status", "/nowhere"] {
        assert_eq!(send("GET", &server.url(path), &[], Vec::new()).await.status, 401, "{path}");
    }
    assert_eq!(send("GET", &server.url("/mcp"), &[], Vec::new()).await.status, 401, "405 only after auth");
    for header in
        [("authorization", "Bearer alpha"), ("x-mcp-key", "beta"), ("x-api-key", "alpha"), ("api-key", "beta")]
    {
        let reply = post(&server, &[header], &ping).await;
        assert_eq!(reply.status, 200, "{header:?}");
    }
    for header in
        [("authorization", "Bearer gamma"), ("authorization", "alpha"), ("x-api-key", "alph"), ("x-api-key", "alphaa")]
    {
        assert_eq!(post(&server, &[header], &ping).await.status, 401, "{header:?}");
    }
    let status = send("GET", &server.url("/status"), &[("authorization", "Bearer beta")], Vec::new()).await;
    assert_eq!(status.json()["authRequired"], true);
}

/// A foreign `Origin` is 403 on every route, before the key check; loopback and explicitly
/// allowed origins pass.
#[actix_rt::test]
async fn foreign_origins_are_forbidden() {
    let server = start_with(test_catalog(), Default::default(), |c| {
        c.origins = OriginPolicy { allowed_origins: vec!["https://app.example.com".into()], allowed_hosts: vec![] }
    })
    .await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
    for origin in ["http://evil.example.com", "null", "http://localhost.evil.example.com"] {
        let reply = post(&server, &[("origin", origin)], &ping).await;
        assert_eq!(reply.status, 403, "{origin}");
        assert!(reply.json()["error"]["message"].as_str().unwrap().contains("Origin"));
        assert_eq!(send("GET", &server.url("/status"), &[("origin", origin)], Vec::new()).await.status, 403);
    }
    for origin in ["http://localhost:3000", "http://127.0.0.1", "https://app.example.com"] {
        assert_eq!(post(&server, &[("origin", origin)], &ping).await.status, 200, "{origin}");
    }
}

/// On a loopback bind, a foreign `Host` (DNS rebinding) is 403; the real host is served.
#[actix_rt::test]
async fn foreign_host_is_forbidden_on_loopback() {
    let server = start().await;
    let discover = modern_request(1, "server/discover", json!({}));
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "server/discover")];
    let mut evil = headers.to_vec();
    evil.push(("host", "evil.example.com"));
    evil.push(("origin", "http://evil.example.com"));
    assert_eq!(post(&server, &evil, &discover).await.status, 403);
    let own = format!("127.0.0.1:{}", server.port);
    let mut good = headers.to_vec();
    good.push(("host", own.as_str()));
    assert_eq!(post(&server, &good, &discover).await.status, 200);
    let localhost = format!("localhost:{}", server.port);
    let mut named = headers.to_vec();
    named.push(("host", localhost.as_str()));
    assert_eq!(post(&server, &named, &discover).await.status, 200);
}

/// Binding a non-loopback address without a key is refused unless explicitly allowed.
#[actix_rt::test]
async fn non_loopback_bind_without_key_is_refused() {
    let server = std::sync::Arc::new(mcpd::McpServer::new(Default::default(), test_catalog()));
    let config = mcpd_actors::ListenerConfig { host: "0.0.0.0".into(), port: 0, ..Default::default() };
    let runtime = mcpd_actors::Mcpd::new(server, config.clone(), Vec::new());
    let error = runtime.start(config.clone()).await.expect_err("must refuse");
    assert!(error.to_string().contains("--allow-unauthenticated"), "{error}");
    assert!(!runtime.status().await.unwrap().running);
    let keyed = mcpd_actors::ListenerConfig { keys: KeySet::new(["k"]), ..config.clone() };
    let status = runtime.start(keyed).await.expect("a key makes it safe");
    assert!(status.running);
    let allowed = mcpd_actors::ListenerConfig { allow_unauthenticated: true, ..config };
    assert!(runtime.start(allowed).await.expect("explicitly allowed").running);
    runtime.close().await.unwrap();
}
