//! Tools, prompts and resources through the endpoint: deterministic paginated lists, tool
//! failures as `isError` results, and the not-found error of each era.

use mcpd::model::{
    CallToolResult, ContentBlock, GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Tool,
};
use mcpd::{Catalog, ServerOptions, ToolError};
use serde_json::{json, Map, Value};

use crate::support::server::*;

fn rich_catalog() -> Catalog {
    let mut catalog = test_catalog();
    for i in 0..25 {
        catalog.add_tool(Tool::new(format!("gen_{i:02}"), "Generated.", json!({"type":"object"})), |_a, _c| async {
            Ok(CallToolResult::text("gen"))
        });
    }
    catalog.add_tool(
        Tool::new("args", "Returns its arguments.", json!({"type":"object"})),
        |args: Map<String, Value>, _c| async move { Ok(CallToolResult::structured(Value::Object(args))) },
    );
    catalog.add_prompt(
        Prompt::new("greet", "Greets someone.", vec![PromptArgument::required("who", "Whom to greet")]),
        |args: Map<String, Value>, _c| async move {
            let who = args.get("who").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(GetPromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text(format!("Hello, {who}!")))],
            })
        },
    );
    catalog.add_resource(Resource::new("test://static", "static", "text/plain"), |uri: String, _v, _c| async move {
        Ok(ReadResourceResult { contents: vec![ResourceContents::text(uri, "text/plain", "static body")] })
    });
    catalog.add_template(
        ResourceTemplate::new("test://items/{id}", "item", "application/json"),
        |uri: String, vars: Vec<(String, String)>, _c| async move {
            let id = vars.first().map(|(_, v)| v.clone()).unwrap_or_default();
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(uri, "application/json", json!({"id": id}).to_string())],
            })
        },
    );
    catalog.add_resource(Resource::new("test://broken", "broken", "text/plain"), |_uri: String, _v, _c| async move {
        Err::<ReadResourceResult, _>(ToolError::failed("storage offline"))
    });
    catalog
}

async fn rich_server(page_size: usize) -> TestServer {
    start_with(rich_catalog(), ServerOptions { page_size, ..Default::default() }, |_| {}).await
}

/// `tools/list` pages through every tool in name order with opaque cursors, on both wires.
#[actix_rt::test]
async fn tools_list_is_paginated_in_deterministic_order() {
    let server = rich_server(7).await;
    for modern in [false, true] {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let reply = if modern {
                post_modern(&server, 1, "tools/list", params).await
            } else {
                post_legacy(&server, "2025-11-25", 1, "tools/list", params).await
            };
            let result = reply.json()["result"].clone();
            let page = result["tools"].as_array().unwrap().clone();
            assert!(page.len() <= 7);
            names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
            pages += 1;
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "name order");
        assert_eq!(names.len(), rich_catalog().tools().count());
        assert_eq!(pages, names.len().div_ceil(7));
    }
    let reply = post_legacy(&server, "2025-11-25", 2, "tools/list", json!({"cursor": "!!not-a-cursor!!"})).await;
    assert_eq!(reply.error_code(), -32602, "a bad cursor is invalid params");
}

/// Absent `arguments` are `{}`; an unknown tool is -32602; non-object arguments are -32602.
#[actix_rt::test]
async fn tools_call_argument_rules() {
    let server = rich_server(100).await;
    let reply = post_legacy(&server, "2025-11-25", 1, "tools/call", json!({"name":"args"})).await;
    assert_eq!(reply.json()["result"]["structuredContent"], json!({}));
    let reply = post_legacy(&server, "2025-11-25", 2, "tools/call", json!({"name":"missing"})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.error_code(), -32602);
    assert_eq!(reply.json()["error"]["message"], "Unknown tool: missing");
    let reply = post_modern(&server, 3, "tools/call", json!({"name":"missing"})).await;
    assert_eq!(reply.error_code(), -32602);
    let reply = post_legacy(&server, "2025-11-25", 4, "tools/call", json!({"name":"args","arguments":[1]})).await;
    assert_eq!(reply.error_code(), -32602);
}

/// A handler's error and a handler's panic both become `isError: true` results with the text,
/// and the server keeps serving.
#[actix_rt::test]
async fn tool_failures_are_results_with_is_error() {
    let server = rich_server(100).await;
    let reply = post_legacy(&server, "2025-11-25", 1, "tools/call", json!({"name":"fail"})).await;
    let result = &reply.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "the disk is on fire");
    let reply = post_modern(&server, 2, "tools/call", json!({"name":"panic"})).await;
    let result = &reply.json()["result"];
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("boom"));
    assert_eq!(result["resultType"], "complete");
    let reply =
        post_legacy(&server, "2025-11-25", 3, "tools/call", json!({"name":"echo","arguments":{"text":42}})).await;
    assert_eq!(reply.json()["result"]["isError"], true, "bad arguments are a tool failure the model can read");
    let after =
        post_legacy(&server, "2025-11-25", 4, "tools/call", json!({"name":"echo","arguments":{"text":"still here"}}))
            .await;
    assert_eq!(after.json()["result"]["content"][0]["text"], "still here");
}

/// A tool over the time limit is stopped and reported as `isError`.
#[actix_rt::test]
async fn tool_over_the_time_limit_is_reported() {
    let server = start_with(rich_catalog(), Default::default(), |c| {
        c.limits.tool_timeout = std::time::Duration::from_millis(200)
    })
    .await;
    let reply =
        post_legacy(&server, "2025-11-25", 1, "tools/call", json!({"name":"sleep","arguments":{"ms":30000}})).await;
    let result = &reply.json()["result"];
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("time limit"));
}

/// `prompts/list` and `prompts/get`; an unknown prompt or a missing required argument is -32602.
#[actix_rt::test]
async fn prompts_list_and_get() {
    let server = rich_server(100).await;
    let prompts =
        post_legacy(&server, "2025-11-25", 1, "prompts/list", json!({})).await.json()["result"]["prompts"].clone();
    assert_eq!(prompts[0]["name"], "greet");
    assert_eq!(prompts[0]["arguments"][0], json!({"name":"who","description":"Whom to greet","required":true}));
    let got =
        post_legacy(&server, "2025-11-25", 2, "prompts/get", json!({"name":"greet","arguments":{"who":"Ada"}})).await;
    assert_eq!(
        got.json()["result"]["messages"][0],
        json!({"role":"user","content":{"type":"text","text":"Hello, Ada!"}})
    );
    let modern = post_modern(&server, 3, "prompts/get", json!({"name":"greet","arguments":{"who":"Bo"}})).await;
    assert_eq!(modern.json()["result"]["resultType"], "complete");
    assert_eq!(post_legacy(&server, "2025-11-25", 4, "prompts/get", json!({"name":"nope"})).await.error_code(), -32602);
    assert_eq!(
        post_legacy(&server, "2025-11-25", 5, "prompts/get", json!({"name":"greet"})).await.error_code(),
        -32602
    );
}

/// Resources, templates and reads; not found is -32002 on the handshake wire and -32602 with
/// `data.uri` on the stateless wire; a failing reader is -32603.
#[actix_rt::test]
async fn resources_list_read_and_not_found_per_era() {
    let server = rich_server(100).await;
    let resources =
        post_legacy(&server, "2025-11-25", 1, "resources/list", json!({})).await.json()["result"]["resources"].clone();
    assert!(resources.as_array().unwrap().iter().any(|r| r["uri"] == "test://static" && r["name"] == "static"));
    let templates = post_legacy(&server, "2025-11-25", 2, "resources/templates/list", json!({})).await.json()["result"]
        ["resourceTemplates"]
        .clone();
    assert_eq!(templates[0]["uriTemplate"], "test://items/{id}");
    let read = post_legacy(&server, "2025-11-25", 3, "resources/read", json!({"uri":"test://static"})).await;
    assert_eq!(
        read.json()["result"]["contents"][0],
        json!({"uri":"test://static","mimeType":"text/plain","text":"static body"})
    );
    let item =
        post_modern(&server, 4, "resources/read", json!({"uri":"test://items/42"})).await.json()["result"].clone();
    assert_eq!(item["contents"][0]["uri"], "test://items/42");
    assert!(item["contents"][0]["text"].as_str().unwrap().contains("42"));
    assert_eq!(item["resultType"], "complete");
    assert!(item["ttlMs"].is_u64() && item["cacheScope"].is_string());

    let legacy = post_legacy(&server, "2025-11-25", 5, "resources/read", json!({"uri":"test://missing"})).await;
    assert_eq!(legacy.error_code(), -32002);
    assert_eq!(legacy.json()["error"]["data"]["uri"], "test://missing");
    let modern = post_modern(&server, 6, "resources/read", json!({"uri":"test://missing"})).await;
    assert_eq!(modern.error_code(), -32602);
    assert_eq!(modern.json()["error"]["data"]["uri"], "test://missing");
    assert_eq!(
        post_legacy(&server, "2025-11-25", 7, "resources/read", json!({"uri":"test://broken"})).await.error_code(),
        -32603
    );
}

/// `completion/complete` answers a values list; an unknown prompt is -32602.
#[actix_rt::test]
async fn completion_answers_with_values() {
    let mut catalog = rich_catalog();
    catalog.set_completer(|_r, _arg, prefix| {
        ["Ada", "Alan", "Bo"].iter().filter(|n| n.starts_with(prefix)).map(|n| (*n).to_owned()).collect()
    });
    let server = start_with(catalog, Default::default(), |_| {}).await;
    let reply = post_legacy(
        &server,
        "2025-11-25",
        1,
        "completion/complete",
        json!({"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"A"}}),
    )
    .await;
    assert_eq!(reply.json()["result"]["completion"], json!({"values":["Ada","Alan"],"total":2,"hasMore":false}));
    let bad = post_legacy(
        &server,
        "2025-11-25",
        2,
        "completion/complete",
        json!({"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":""}}),
    )
    .await;
    assert_eq!(bad.error_code(), -32602);
}
