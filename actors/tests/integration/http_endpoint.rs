//! `POST /mcp` serves both eras on one endpoint: handshake-era requests, stateless 2026-07-28
//! requests with their validation order, and every malformed input with its exact error.

use serde_json::{json, Value};

use crate::support::server::*;

/// `initialize` answers each handshake revision it is asked for, and 2025-11-25 for any other.
#[actix_rt::test]
async fn initialize_negotiates_each_legacy_version_and_falls_back_to_latest() {
    let server = start().await;
    for (asked, expected) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let reply = post(
            &server,
            &[],
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":asked,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        )
        .await;
        assert_eq!(reply.status, 200);
        let result = &reply.json()["result"];
        assert_eq!(result["protocolVersion"], expected, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "mcpd");
        assert!(result["capabilities"]["tools"].is_object());
        assert!(result.get("resultType").is_none(), "no resultType on the handshake wire");
    }
}

/// `ping` answers exactly `{}`; a missing version header means 2025-03-26; a bad one is 400.
#[actix_rt::test]
async fn legacy_requests_use_the_version_header() {
    let server = start().await;
    let reply = post_legacy(&server, "2025-11-25", 7, "ping", json!({})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), json!({"jsonrpc":"2.0","id":7,"result":{}}));

    let reply = post(&server, &[], &json!({"jsonrpc":"2.0","id":"no-header","method":"tools/list"})).await;
    assert_eq!(reply.status, 200);
    assert!(reply.json()["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()));

    let reply = post_legacy(&server, "2099-01-01", 8, "tools/list", json!({})).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.error_code(), -32022);
    assert_eq!(reply.json()["id"], 8);
}

/// A legacy unknown method is a JSON-RPC error with HTTP 200.
#[actix_rt::test]
async fn legacy_unknown_method_is_32601_with_200() {
    let server = start().await;
    let reply = post_legacy(&server, "2025-06-18", 1, "nope/nothing", json!({})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.error_code(), -32601);
}

/// `server/discover` lists every revision, capabilities, serverInfo in `_meta` and caching hints.
#[actix_rt::test]
async fn server_discover_describes_the_server() {
    let server = start().await;
    let reply = post_modern(&server, 1, "server/discover", json!({})).await;
    assert_eq!(reply.status, 200);
    let result = &reply.json()["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpd");
    assert_eq!(result["resultType"], "complete");
    assert!(result["ttlMs"].as_u64().is_some());
    assert!(result["cacheScope"] == "public" || result["cacheScope"] == "private");
}

/// Every stateless result carries `resultType`; lists and reads carry `ttlMs` and `cacheScope`.
#[actix_rt::test]
async fn stateless_results_carry_result_type_and_cache_hints() {
    let server = start().await;
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let result = post_modern(&server, 1, method, json!({})).await.json()["result"].clone();
        assert_eq!(result["resultType"], "complete", "{method}");
        assert!(result["ttlMs"].is_u64(), "{method}");
        assert!(result["cacheScope"].is_string(), "{method}");
    }
    let result = post_modern(&server, 2, "tools/call", json!({"name":"echo","arguments":{"text":"hi"}})).await.json()
        ["result"]
        .clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "hi");
    assert!(result.get("ttlMs").is_none(), "tools/call is not cacheable");
}

/// Missing `_meta`, or `_meta` without protocolVersion or clientCapabilities: 400 / -32602,
/// even when the headers are wrong too.
#[actix_rt::test]
async fn stateless_request_without_required_meta_is_rejected_with_32602() {
    let server = start().await;
    let cases = [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    ];
    for params in cases {
        let body = json!({"jsonrpc":"2.0","id":"m","method":"server/discover","params":params});
        let reply = post(&server, &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "wrong")], &body).await;
        assert_eq!(reply.status, 400, "{params}");
        assert_eq!(reply.error_code(), -32602, "{params}");
        assert_eq!(reply.json()["id"], "m", "the id is echoed");
    }
    let no_client_info = json!({"_meta": {"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}});
    let body = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":no_client_info});
    let reply =
        post(&server, &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "server/discover")], &body).await;
    assert_eq!(reply.status, 200, "clientInfo is not required");
}

/// Header disagreements are 400 / -32020: version header vs `_meta`, `Mcp-Method`, `Mcp-Name`.
#[actix_rt::test]
async fn routing_header_mismatches_are_rejected_with_32020() {
    let server = start().await;
    let call = modern_request(3, "tools/call", json!({"name":"echo","arguments":{"text":"x"}}));
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![("mcp-method", "tools/call"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list"), ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "time")],
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?!!?=")],
    ];
    for headers in cases {
        let reply = post(&server, &headers, &call).await;
        assert_eq!(reply.status, 400, "{headers:?}");
        assert_eq!(reply.error_code(), -32020, "{headers:?}");
        assert_eq!(reply.json()["id"], 3);
    }
    let reply = post(
        &server,
        &[("mcp-protocol-version", " 2026-07-28 "), ("MCP-METHOD", "tools/call"), ("mcp-name", "=?base64?ZWNobw==?=")],
        &call,
    )
    .await;
    assert_eq!(reply.status, 200, "padded values, case-insensitive names and Base64 are accepted");
    let read = modern_request(4, "resources/read", json!({"uri":"test://nowhere"}));
    let reply = post(
        &server,
        &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "resources/read"), ("mcp-name", "test://elsewhere")],
        &read,
    )
    .await;
    assert_eq!(reply.error_code(), -32020, "Mcp-Name is compared with params.uri");
}

/// A header/`_meta` mismatch beats an unsupported version; both unsupported: 400 / -32022
/// with `data.supported` and `data.requested`.
#[actix_rt::test]
async fn unsupported_version_is_rejected_with_32022_and_data() {
    let server = start().await;
    let mut body = modern_request(5, "server/discover", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let reply =
        post(&server, &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "server/discover")], &body).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32020));
    let reply = post(&server, &[("mcp-protocol-version", "v999.0.0"), ("mcp-method", "server/discover")], &body).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32022));
    let data = &reply.json()["error"]["data"];
    assert_eq!(data["requested"], "v999.0.0");
    assert!(data["supported"].as_array().unwrap().contains(&json!("2026-07-28")));
    assert_eq!(reply.json()["id"], 5);
}

/// Methods removed from the stateless wire, and unknown ones: 404 / -32601.
#[actix_rt::test]
async fn removed_and_unknown_methods_are_404_on_the_stateless_wire() {
    let server = start().await;
    for method in
        ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"]
    {
        let reply = post_modern(&server, 9, method, json!({})).await;
        assert_eq!(reply.status, 404, "{method}");
        assert_eq!(reply.error_code(), -32601, "{method}");
        assert_eq!(reply.json()["id"], 9, "{method}");
    }
}

/// A notification is 202 with an empty body, in both eras.
#[actix_rt::test]
async fn notifications_are_accepted_with_202_and_no_body() {
    let server = start().await;
    for body in [
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":modern_meta()}}),
        json!({"jsonrpc":"2.0","id":99,"result":{}}),
    ] {
        let reply = post(&server, &[], &body).await;
        assert_eq!(reply.status, 202, "{body}");
        assert!(reply.body.is_empty(), "{body}");
    }
}

/// Invalid JSON, including nesting too deep to parse: 400 / -32700 with a null id.
#[actix_rt::test]
async fn invalid_json_is_400_with_32700_and_null_id() {
    let server = start().await;
    let deep = "[".repeat(100_000);
    for body in ["{invalid", "", deep.as_str(), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\""] {
        let reply =
            send("POST", &server.url("/mcp"), &[("content-type", "application/json")], body.as_bytes().to_vec()).await;
        assert_eq!(reply.status, 400);
        let v = reply.json();
        assert_eq!(v["error"]["code"], -32700);
        assert!(v.get("id").is_some_and(Value::is_null), "id must be present and null");
    }
}

/// Invalid requests: 400 / -32600, with the id echoed when it is readable.
#[actix_rt::test]
async fn invalid_requests_are_400_with_32600() {
    let server = start().await;
    let cases = [
        (json!({"jsonrpc":"1.0","id":1,"method":"ping"}), json!(1)),
        (json!({"id":2,"method":"ping"}), json!(2)),
        (json!({"jsonrpc":"2.0","id":3}), json!(3)),
        (json!({"jsonrpc":"2.0","id":{"x":1},"method":"ping"}), Value::Null),
        (json!({"jsonrpc":"2.0","id":null,"method":"ping"}), Value::Null),
        (json!({"jsonrpc":"2.0","id":"s","method":"tools/list","params":[1,2]}), json!("s")),
        (json!({"jsonrpc":"2.0","id":4,"method":7}), json!(4)),
        (json!(42), Value::Null),
    ];
    for (body, id) in cases {
        let reply = post(&server, &[], &body).await;
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(reply.error_code(), -32600, "{body}");
        assert_eq!(reply.json()["id"], id, "{body}");
    }
}

/// Batches are answered as arrays under 2025-03-26 only.
#[actix_rt::test]
async fn batches_are_accepted_only_on_2025_03_26() {
    let server = start().await;
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}},
        {"jsonrpc":"2.0","id":3}
    ]);
    for headers in [vec![("mcp-protocol-version", "2025-03-26")], vec![]] {
        let reply = post(&server, &headers, &batch).await;
        assert_eq!(reply.status, 200);
        let answers = reply.json();
        let answers = answers.as_array().expect("an array");
        assert_eq!(answers.len(), 3, "one answer per request, none for the notification");
        let by_id = |id: i64| answers.iter().find(|a| a["id"] == id).cloned().unwrap_or_default();
        assert_eq!(by_id(1)["result"], json!({}));
        assert_eq!(by_id(2)["result"]["content"][0]["text"], "b");
        assert_eq!(by_id(3)["error"]["code"], -32600);
    }
    for version in ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"] {
        let reply = post(&server, &[("mcp-protocol-version", version)], &batch).await;
        assert_eq!(reply.status, 400, "{version}");
        assert_eq!(reply.error_code(), -32600, "{version}");
    }
}

/// Other methods on /mcp are 405 with `Allow: POST`; an unknown path is 404.
#[actix_rt::test]
async fn other_methods_are_405_and_unknown_paths_404() {
    let server = start().await;
    for method in ["GET", "DELETE", "PUT", "PATCH"] {
        let reply = send(method, &server.url("/mcp"), &[], Vec::new()).await;
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("POST"), "{method}");
    }
    let reply = send("GET", &server.url("/nowhere"), &[], Vec::new()).await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["error"]["code"], -32600);
    let reply = send("POST", &server.url("/mcp"), &[("content-type", "text/plain")], b"{}".to_vec()).await;
    assert_eq!(reply.status, 415);
}

/// A body over the limit is 413 with a JSON-RPC error, and the server keeps serving.
#[actix_rt::test]
async fn oversized_body_is_413_and_the_server_keeps_serving() {
    let server = start_with(test_catalog(), Default::default(), |c| c.limits.max_body_bytes = 64 * 1024).await;
    let text = "x".repeat(60 * 1024);
    let fits =
        post_legacy(&server, "2025-11-25", 1, "tools/call", json!({"name":"echo","arguments":{"text":text}})).await;
    assert_eq!(fits.status, 200, "a body under the limit is accepted");
    let big = "y".repeat(80 * 1024);
    let reply =
        post_legacy(&server, "2025-11-25", 2, "tools/call", json!({"name":"echo","arguments":{"text":big}})).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.error_code(), -32600);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("65536"));
    let after = post_legacy(&server, "2025-11-25", 3, "ping", json!({})).await;
    assert_eq!(after.status, 200);
}

/// The default limit accepts a 3 MiB body.
#[actix_rt::test]
async fn default_limit_accepts_bodies_up_to_4_mib() {
    let server = start().await;
    let text = "z".repeat(3 * 1024 * 1024);
    let reply =
        post_legacy(&server, "2025-11-25", 1, "tools/call", json!({"name":"echo","arguments":{"text":text}})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["result"]["content"][0]["text"].as_str().map(str::len), Some(3 * 1024 * 1024));
}

/// Concurrent tool calls overlap on one worker: eight calls that each wait until all eight are
/// inside the tool at once all meet (a serialized executor would leave each one alone).
#[actix_rt::test]
async fn concurrent_tool_calls_are_not_serialized() {
    let server = start_with(test_catalog(), Default::default(), |c| c.workers = 1).await;
    let calls = (0..8).map(|i| post_modern(&server, i, "tools/call", json!({"name":"rendezvous","arguments":{"n":8}})));
    for reply in futures_util::future::join_all(calls).await {
        assert_eq!(reply.json()["result"]["content"][0]["text"], "met");
    }
}
