//! The 2026-07-28 features beyond plain requests: multi round-trip requests (input_required,
//! sealed requestState, capability-aware input requests, fulfilment inside sessions), `-32021`,
//! `Mcp-Param-*` header rules, progress and logs on the request's own stream, and
//! `subscriptions/listen`.

use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::context::LogLevel;
use mcpd::model::{CallToolResult, Tool};
use mcpd::mrtr::InputRequired;
use mcpd::{Catalog, ServerOptions, ToolContext};
use mcpd_actors::TransportMode;
use serde_json::{json, Map, Value};

use crate::support::server::*;
use crate::support::sse::{open, SseReader};

fn mrtr_catalog() -> Catalog {
    let mut c = test_catalog();
    c.add_tool(
        Tool::new(
            "greet",
            "Asks for a name, then greets.",
            json!({"type":"object","properties":{"formal":{"type":"boolean"}}}),
        ),
        |args: Map<String, Value>, ctx: ToolContext| async move {
            let name = ctx.elicited("who").and_then(|c| c.get("name")).and_then(Value::as_str).map(str::to_owned);
            match (name, ctx.request_state()) {
                (Some(name), Some(state)) if state["step"] == 1 => {
                    let formal = args.get("formal").and_then(Value::as_bool).unwrap_or(false);
                    Ok(CallToolResult::text(if formal { format!("Good day, {name}.") } else { format!("Hi {name}!") }))
                }
                _ => Err(InputRequired::new()
                    .elicit("who", "Your name?", json!({"type":"object","properties":{"name":{"type":"string"}}}))
                    .state(json!({"step": 1}))
                    .into()),
            }
        },
    );
    c.add_tool(Tool::new("other", "Another MRTR tool.", json!({"type":"object"})), |_a, ctx: ToolContext| async move {
        match ctx.request_state() {
            Some(_) => Ok(CallToolResult::text("other done")),
            None => Err(InputRequired::new().list_roots("roots").state(json!({"x": 1})).into()),
        }
    });
    c.add_tool(
        Tool::new("both", "Asks for an elicitation and a sample.", json!({"type":"object"})),
        |_a, _ctx: ToolContext| async move {
            Err::<CallToolResult, _>(
                InputRequired::new()
                    .elicit("e", "?", json!({"type":"object"}))
                    .sample("s", json!({"messages": [], "maxTokens": 5}))
                    .into(),
            )
        },
    );
    c.add_tool(
        Tool::new("needs_sampling", "Needs sampling.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move {
            ctx.require_client_capability("sampling")?;
            Ok(CallToolResult::text("sampled"))
        },
    );
    c.add_tool(
        Tool::new(
            "routed",
            "Has header-mirrored arguments.",
            json!({"type":"object","properties":{
                "region": {"type":"string","x-mcp-header":"Region"},
                "shard": {"type":"integer","x-mcp-header":"Shard"}
            }}),
        ),
        |args: Map<String, Value>, _ctx| async move { Ok(CallToolResult::text(format!("{}", Value::Object(args)))) },
    );
    c.add_tool(
        Tool::new("chatty", "Reports progress and logs.", json!({"type":"object"})),
        |_a, ctx: ToolContext| async move {
            ctx.progress(1.0, Some(2.0), None);
            ctx.log(LogLevel::Debug, None, json!("debug detail"));
            ctx.log(LogLevel::Warning, None, json!("a warning"));
            ctx.progress(2.0, Some(2.0), None);
            Ok(CallToolResult::text("chatted"))
        },
    );
    c
}

async fn server() -> (TestServer, Arc<LiveCatalog>) {
    let live = Arc::new(LiveCatalog::new(mrtr_catalog()));
    let server = start_live(live.clone(), ServerOptions::default(), |_| {}).await;
    (server, live)
}

fn with_caps(mut body: Value, caps: Value) -> Value {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
    body
}

async fn post_call(server: &TestServer, body: &Value, extra: &[(&str, &str)]) -> Reply {
    let name = body["params"]["name"].as_str().unwrap().to_owned();
    let mut headers =
        vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", name.as_str())];
    headers.extend_from_slice(extra);
    post(server, &headers, body).await
}

fn elicitation_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// A tool that needs input answers `input_required` with its requests and a sealed state (no
/// caching hints); the retry with the answers and the state byte for byte completes it.
#[actix_rt::test]
async fn input_required_round_trip_on_the_stateless_wire() {
    let (server, _) = server().await;
    let first = with_caps(
        modern_request(1, "tools/call", json!({"name":"greet","arguments":{"formal":true}})),
        elicitation_caps(),
    );
    let reply = post_call(&server, &first, &[]).await;
    assert_eq!(reply.status, 200);
    let result = reply.json()["result"].clone();
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["inputRequests"]["who"]["method"], "elicitation/create");
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    let state = result["requestState"].as_str().expect("a sealed state").to_owned();
    assert!(!state.contains("step"), "the state is opaque: {state}");

    let mut retry = first.clone();
    retry["id"] = json!(2);
    retry["params"]["inputResponses"] =
        json!({"who": {"action": "accept", "content": {"name": "Ada"}}, "extra": {"ignored": true}});
    retry["params"]["requestState"] = json!(state);
    let done = post_call(&server, &retry, &[]).await.json()["result"].clone();
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["content"][0]["text"], "Good day, Ada.");

    let mut missing = retry.clone();
    missing["params"]["inputResponses"] = json!({"wrong": {}});
    assert_eq!(post_call(&server, &missing, &[]).await.json()["result"]["resultType"], "input_required", "asks again");
}

/// requestState is integrity-protected and bound to the tool and its arguments.
#[actix_rt::test]
async fn tampered_or_foreign_request_state_is_rejected() {
    let (server, _) = server().await;
    let first = with_caps(
        modern_request(1, "tools/call", json!({"name":"greet","arguments":{"formal":true}})),
        elicitation_caps(),
    );
    let state = post_call(&server, &first, &[]).await.json()["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"who": {"action": "accept", "content": {"name": "Eve"}}});
    let attempt = |name: &str, arguments: Value, token: String| {
        let mut body = with_caps(
            modern_request(3, "tools/call", json!({"name": name, "arguments": arguments})),
            elicitation_caps(),
        );
        body["params"]["inputResponses"] = answers.clone();
        body["params"]["requestState"] = json!(token);
        body
    };
    for body in [
        attempt("greet", json!({"formal": true}), format!("{state}x")),
        attempt("greet", json!({"formal": true}), "not-a-state".into()),
        attempt("greet", json!({"formal": false}), state.clone()),
        attempt("other", json!({"formal": true}), state.clone()),
    ] {
        let reply = post_call(&server, &body, &[]).await;
        assert_eq!(reply.error_code(), -32602, "{body}");
        assert_eq!(reply.json()["id"], 3);
    }
}

/// A requestState is sealed for the caller it was issued to: another access-file client retrying
/// with it is refused exactly as for a tampered state (`-32602`), and its owner completes.
#[actix_rt::test]
async fn request_state_of_one_caller_is_refused_for_another() {
    const DEV: &str = "dev-key-0123456789abcdef";
    const CI: &str = "ci-key-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    let clients = json!({"clients": [
        {"name": "dev", "key": DEV, "tools": ["*"]},
        {"name": "ci", "key": CI, "tools": ["*"]}
    ]});
    std::fs::write(&access, clients.to_string()).unwrap();
    let control = mcpd_actors::access::AccessControl::load(&access).unwrap();
    let live = Arc::new(LiveCatalog::new(mrtr_catalog()));
    let server = start_live(live, ServerOptions::default(), |c| c.access = Some(control)).await;
    let first = with_caps(
        modern_request(1, "tools/call", json!({"name":"greet","arguments":{"formal":true}})),
        elicitation_caps(),
    );
    let as_dev = format!("Bearer {DEV}");
    let as_ci = format!("Bearer {CI}");
    let reply = post_call(&server, &first, &[("authorization", &as_dev)]).await;
    let state =
        reply.json()["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{:?}", reply.json())).to_owned();
    let mut retry = first.clone();
    retry["id"] = json!(2);
    retry["params"]["inputResponses"] = json!({"who": {"action": "accept", "content": {"name": "Ada"}}});
    retry["params"]["requestState"] = json!(state);
    let mut tampered = retry.clone();
    tampered["params"]["requestState"] = json!(format!("{state}x"));

    let foreign = post_call(&server, &retry, &[("authorization", &as_ci)]).await;
    let forged = post_call(&server, &tampered, &[("authorization", &as_ci)]).await;
    assert_eq!(foreign.error_code(), -32602, "{:?}", foreign.json());
    assert_eq!(foreign.json()["error"], forged.json()["error"], "as a tampered state");
    let done = post_call(&server, &retry, &[("authorization", &as_dev)]).await.json();
    assert_eq!(done["result"]["content"][0]["text"], "Good day, Ada.", "{done}");
}

/// Input requests for capabilities the client did not declare are dropped; when none is left
/// the answer is -32021 (HTTP 400) naming what is missing. `require_client_capability` too.
#[actix_rt::test]
async fn input_requests_follow_the_declared_capabilities() {
    let (server, _) = server().await;
    let body = with_caps(modern_request(1, "tools/call", json!({"name":"both"})), json!({"sampling": {}}));
    let result = post_call(&server, &body, &[]).await.json()["result"].clone();
    assert_eq!(result["resultType"], "input_required");
    let keys: Vec<&String> = result["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["s"], "no elicitation for a client without the capability");

    let none = with_caps(modern_request(2, "tools/call", json!({"name":"both"})), json!({}));
    let reply = post_call(&server, &none, &[]).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32021));
    assert_eq!(reply.json()["error"]["data"]["requiredCapabilities"], json!({"elicitation": {}, "sampling": {}}));

    let needs = with_caps(modern_request(3, "tools/call", json!({"name":"needs_sampling"})), json!({}));
    let reply = post_call(&server, &needs, &[]).await;
    assert_eq!((reply.status, reply.error_code()), (400, -32021));
    assert_eq!(reply.json()["error"]["data"], json!({"requiredCapabilities": {"sampling": {}}}));
    let granted = with_caps(modern_request(4, "tools/call", json!({"name":"needs_sampling"})), json!({"sampling": {}}));
    assert_eq!(post_call(&server, &granted, &[]).await.json()["result"]["content"][0]["text"], "sampled");
}

/// The same MRTR tool in a session: the server asks the client itself (on the call's SSE
/// stream) and completes the call; without a session it is a tool failure that says why.
#[actix_rt::test]
async fn sessions_fulfil_input_requests_themselves() {
    let live = Arc::new(LiveCatalog::new(mrtr_catalog()));
    let server = start_live(live, ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = TransportMode::StreamableHttp
    })
    .await;
    let accept = ("accept", "application/json, text/event-stream");
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}});
    let id = post(&server, &[accept], &init).await.header("mcp-session-id").unwrap().to_owned();
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{}}});
    let mut stream =
        SseReader::new(open("POST", &server, "/mcp", &[accept, ("mcp-session-id", &id)], Some(&call)).await);
    stream.next(Duration::from_secs(5)).await.expect("priming");
    let ask = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(ask["method"], "elicitation/create");
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"name":"Bo"}}});
    assert_eq!(post(&server, &[accept, ("mcp-session-id", &id)], &answer).await.status, 202);
    let done = stream.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(done["result"]["content"][0]["text"], "Hi Bo!");

    let plain = start_with(mrtr_catalog(), Default::default(), |_| {}).await;
    let reply = post_legacy(&plain, "2025-11-25", 1, "tools/call", json!({"name":"greet"})).await;
    assert_eq!(reply.json()["result"]["isError"], true);
    assert!(reply.json()["result"]["content"][0]["text"].as_str().unwrap().contains("session"));
}

/// Arguments marked `x-mcp-header` must come with a matching `Mcp-Param-*` header (Base64
/// sentinel decoded, integers compared numerically); otherwise 400 / -32020.
#[actix_rt::test]
async fn mcp_param_headers_must_match_the_arguments() {
    let (server, _) = server().await;
    let body = modern_request(1, "tools/call", json!({"name":"routed","arguments":{"region":"eu-west","shard":42}}));
    let good = post_call(&server, &body, &[("mcp-param-region", "eu-west"), ("Mcp-Param-Shard", "42")]).await;
    assert_eq!(good.status, 200, "{}", String::from_utf8_lossy(&good.body));
    let numeric =
        post_call(&server, &body, &[("mcp-param-region", "=?base64?ZXUtd2VzdA==?="), ("mcp-param-shard", "42.0")])
            .await;
    assert_eq!(numeric.status, 200, "Base64 and numeric comparison");
    for headers in [
        vec![("mcp-param-shard", "42")],
        vec![("mcp-param-region", "us-east"), ("mcp-param-shard", "42")],
        vec![("mcp-param-region", "eu-west"), ("mcp-param-shard", "43")],
        vec![("mcp-param-region", "=?base64?ZXUtd2VzdA?="), ("mcp-param-shard", "42")],
        vec![("mcp-param-region", "=?base64?ZXUt!!d2VzdA==?="), ("mcp-param-shard", "42")],
    ] {
        let reply = post_call(&server, &body, &headers).await;
        assert_eq!((reply.status, reply.error_code()), (400, -32020), "{headers:?}");
    }
    let absent = modern_request(2, "tools/call", json!({"name":"routed","arguments":{"region":null}}));
    assert_eq!(post_call(&server, &absent, &[]).await.status, 200, "null and absent arguments need no header");
}

/// Progress and logs (at or above the request's logLevel) stream on the request's own SSE
/// answer; a request that asked for neither gets plain JSON.
#[actix_rt::test]
async fn progress_and_logs_stream_on_the_request() {
    let (server, _) = server().await;
    let quiet = post_call(&server, &modern_request(1, "tools/call", json!({"name":"chatty"})), &[]).await;
    assert!(quiet.header("content-type").unwrap().starts_with("application/json"));
    assert_eq!(quiet.json()["result"]["content"][0]["text"], "chatted");

    let mut body = modern_request(2, "tools/call", json!({"name":"chatty"}));
    body["params"]["_meta"]["progressToken"] = json!("p-9");
    body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "chatty")];
    let response = open("POST", &server, "/mcp", &headers, Some(&body)).await;
    assert!(response.headers().get("content-type").unwrap().to_str().unwrap().starts_with("text/event-stream"));
    let messages: Vec<Value> =
        SseReader::new(response).all(Duration::from_secs(5)).await.iter().map(|e| e.json()).collect();
    let methods: Vec<&str> = messages.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(methods, vec!["notifications/progress", "notifications/message", "notifications/progress"]);
    assert_eq!(messages[0]["params"]["progressToken"], "p-9");
    assert_eq!(messages[1]["params"]["level"], "warning", "debug is below the requested level");
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 2);
    assert_eq!(last["result"]["resultType"], "complete");
}

/// `subscriptions/listen`: the acknowledgement comes first with the honoured filter; every
/// notification carries the subscription id; unrequested kinds are not sent.
#[actix_rt::test]
async fn listen_streams_acknowledge_filter_and_tag() {
    let (server, live) = server().await;
    let listen = |id: i64, notifications: Value| {
        let body = modern_request(id, "subscriptions/listen", json!({"notifications": notifications}));
        let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "subscriptions/listen")];
        let server = &server;
        async move { SseReader::new(open("POST", server, "/mcp", &headers, Some(&body)).await) }
    };
    let mut tools = listen(41, json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"]})).await;
    let mut prompts = listen(42, json!({"promptsListChanged": true})).await;
    let ack = tools.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://r"]})
    );
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "41");
    assert_eq!(
        prompts.next(Duration::from_secs(5)).await.unwrap().json()["params"]["_meta"]
            ["io.modelcontextprotocol/subscriptionId"],
        "42"
    );

    live.update(|c| {
        c.remove_tool("echo");
    });
    live.resource_updated("test://r");
    let changed = tools.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "41");
    let updated = tools.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://r");
    assert!(prompts.next(Duration::from_millis(300)).await.is_none(), "a prompts-only stream hears nothing of tools");
}

/// A listen stream hears only what its own caller may see: a client whose access names no
/// prompt hears no prompt list change (its filter acknowledged as anyone's, so nothing leaks),
/// while a client seeing every prompt hears it.
#[actix_rt::test]
async fn a_listen_stream_carries_only_what_its_caller_sees() {
    const DEV: &str = "dev-key-0123456789abcdef";
    const CI: &str = "ci-key-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let access = dir.path().join("access.json");
    let clients = json!({"clients": [
        {"name": "dev", "key": DEV, "tools": ["*"], "prompts": ["*"]},
        {"name": "ci", "key": CI, "tools": ["echo"]}
    ]});
    std::fs::write(&access, clients.to_string()).unwrap();
    let control = mcpd_actors::access::AccessControl::load(&access).unwrap();
    let live = Arc::new(LiveCatalog::new(mrtr_catalog()));
    let server = start_live(live.clone(), ServerOptions::default(), |c| c.access = Some(control)).await;
    let listen = |key: &'static str| {
        let body = modern_request(
            7,
            "subscriptions/listen",
            json!({"notifications":
            {"toolsListChanged": true, "promptsListChanged": true}}),
        );
        let server = &server;
        async move {
            let bearer = format!("Bearer {key}");
            let headers = [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "subscriptions/listen"),
                ("authorization", bearer.as_str()),
            ];
            SseReader::new(open("POST", server, "/mcp", &headers, Some(&body)).await)
        }
    };
    let mut dev = listen(DEV).await;
    let mut ci = listen(CI).await;
    // Both are acknowledged alike: the filter does not tell ci what exists.
    let both = json!({"toolsListChanged": true, "promptsListChanged": true});
    for stream in [&mut dev, &mut ci] {
        let ack = stream.next(Duration::from_secs(5)).await.unwrap().json();
        assert_eq!(ack["params"]["notifications"], both, "{ack}");
    }

    live.update(|c| {
        c.add_prompt(
            mcpd::model::Prompt::new("secret", "Not for ci.", Vec::new()),
            |_a: Map<String, Value>, _ctx| async move {
                Ok(mcpd::model::GetPromptResult { description: None, messages: Vec::new() })
            },
        );
    });
    let heard = dev.next(Duration::from_secs(5)).await.unwrap().json();
    assert_eq!(heard["method"], "notifications/prompts/list_changed");
    assert!(ci.next(Duration::from_millis(300)).await.is_none(), "ci sees no prompt and hears no change of them");
}
