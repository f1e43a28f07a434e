//! The conformance client: what the official MCP conformance suite runs for its client scenarios
//! (`conformance client --command …`), built only on mcpd's public client API
//! (`mcpd_actors::client`).
//!
//! The suite's contract: the mock server's URL is the **last** argument; the environment names
//! the scenario (`MCP_CONFORMANCE_SCENARIO`), the revision (`MCP_CONFORMANCE_PROTOCOL_VERSION`)
//! and, for some scenarios, extra input (`MCP_CONFORMANCE_CONTEXT`, JSON). A handshake revision
//! (≤ 2025-11-25) is pinned, so the client initializes with exactly that version; 2026-07-28 is
//! pinned too, so the client speaks the stateless wire.
//!
//! `auth/*` scenarios run the link's OAuth flow (`conformance_client/auth.rs`).
//!
//! Exit status: 0 when the scenario's steps all succeeded; 1 with a one-line reason on stderr
//! when one failed; 2 for an unknown scenario, revision or bad invocation. Everything finishes
//! within [`DEADLINE`].
//!
//! ```sh
//! cargo build --example conformance_client
//! conformance client --command target/debug/examples/conformance_client --scenario tools_call --spec-version 2025-11-25
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor as _, Addr};
use mcpd::model::{Implementation, Tool};
use mcpd::version::ProtocolVersion;
use mcpd_actors::client::{
    CallResult, CallTool, ClientConnection, ClientHandlers, LinkConfig, ListTools, SendRequest, StopClientConnection,
};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map, Value};

#[path = "conformance_client/auth.rs"]
mod auth;

/// The whole run, negotiation included (the suite kills a client after 30 s).
const DEADLINE: Duration = Duration::from_secs(25);
/// Connect and per-request limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The scenarios this client knows, as the suite names them.
const SCENARIOS: &[&str] = &[
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
];

fn known(scenario: &str) -> bool {
    SCENARIOS.contains(&scenario) || auth::SCENARIOS.contains(&scenario)
}

/// A failed step: what the client was doing and why it failed.
type Failure = String;

/// What a scenario runs against.
struct Run {
    conn: Addr<ClientConnection>,
    context: Value,
}

impl Run {
    async fn list_tools(&self) -> Result<Vec<Tool>, Failure> {
        match self.conn.send(ListTools).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(format!("tools/list failed: {e}")),
            Err(e) => Err(format!("tools/list: the connection actor is gone: {e}")),
        }
    }

    /// Calls a tool; a result with `isError: true` counts as a failure.
    async fn call(&self, name: &str, arguments: Map<String, Value>) -> Result<CallResult, Failure> {
        let message = CallTool { name: name.to_owned(), arguments };
        let result = match self.conn.send(message).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => return Err(format!("tools/call {name} failed: {e}")),
            Err(e) => return Err(format!("tools/call {name}: the connection actor is gone: {e}")),
        };
        if result.is_error {
            return Err(format!("tools/call {name} returned isError: {}", one_line(&result.text())));
        }
        Ok(result)
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, Failure> {
        let params = match params {
            Value::Object(params) => params,
            _ => Map::new(),
        };
        match self.conn.send(SendRequest { method: method.to_owned(), params }).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(format!("{method} failed: {e}")),
            Err(e) => Err(format!("{method}: the connection actor is gone: {e}")),
        }
    }
}

fn one_line(text: &str) -> String {
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.chars().take(300).collect()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn require_tool<'a>(tools: &'a [Tool], name: &str) -> Result<&'a Tool, Failure> {
    tools.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        format!("tools/list did not return {name} (got: {})", names.join(", "))
    })
}

fn expect_text(result: &CallResult, expected: &str) -> Result<(), Failure> {
    let text = result.text();
    if text == expected {
        Ok(())
    } else {
        Err(format!("tools/call {} answered {:?}, expected {expected:?}", result.tool_name, one_line(&text)))
    }
}

/// Arguments that satisfy a tool's `required` properties (by declared type), for tools the
/// scenario only wants called.
fn sample_arguments(schema: &Value) -> Map<String, Value> {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let kind = properties.and_then(|p| p.get(name)).and_then(|p| p.get("type")).and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            Some("null") => Value::Null,
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    arguments
}

// ---- the scenarios -----------------------------------------------------------------------------

async fn run_scenario(scenario: &str, run: &Run) -> Result<(), Failure> {
    match scenario {
        // Connecting is the handshake; listing proves the session works.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => run.list_tools().await.map(drop),
        "tools_call" => {
            let tools = run.list_tools().await?;
            require_tool(&tools, "add_numbers")?;
            let result = run.call("add_numbers", object(json!({"a": 5, "b": 3}))).await?;
            if !result.text().contains('8') {
                return Err(format!("add_numbers(5, 3) answered {:?}", one_line(&result.text())));
            }
            Ok(())
        }
        "elicitation-sep1034-client-defaults" => {
            let tools = run.list_tools().await?;
            require_tool(&tools, "test_client_elicitation_defaults")?;
            run.call("test_client_elicitation_defaults", Map::new()).await.map(drop)
        }
        "sse-retry" => {
            let tools = run.list_tools().await?;
            require_tool(&tools, "test_reconnection")?;
            run.call("test_reconnection", Map::new()).await.map(drop)
        }
        "sep-2322-client-request-state" => request_state(run).await,
        "http-standard-headers" => standard_headers(run).await,
        "http-custom-headers" => custom_headers(run).await,
        "http-invalid-tool-headers" => {
            let tools = run.list_tools().await?;
            if tools.is_empty() {
                return Err("tools/list kept no tool (valid_tool should survive)".into());
            }
            for tool in &tools {
                run.call(&tool.name, sample_arguments(&tool.input_schema)).await?;
            }
            Ok(())
        }
        "json-schema-2020-12-preservation" => {
            let tools = run.list_tools().await?;
            let focal = require_tool(&tools, "json_schema_2020_12_tool")?;
            require_tool(&tools, "json_schema_echo")?;
            let arguments = object(json!({ "schema": focal.input_schema }));
            run.call("json_schema_echo", arguments).await.map(drop)
        }
        other if other.starts_with("auth/") => auth::run(run).await,
        other => Err(format!("scenario {other} has no steps")),
    }
}

/// SEP-2322: two MRTR flows (with and without `requestState`), an unrelated call made while
/// the first flow is in progress, and a result without `resultType` (complete: no retry).
async fn request_state(run: &Run) -> Result<(), Failure> {
    let tools = run.list_tools().await?;
    for name in ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"] {
        require_tool(&tools, name)?;
    }
    // The unrelated call runs concurrently with the echo_state flow: it must carry none of its
    // inputResponses / requestState.
    let (echo, unrelated) = futures_util::future::join(
        run.call("test_mrtr_echo_state", Map::new()),
        run.call("test_mrtr_unrelated", Map::new()),
    )
    .await;
    expect_text(&echo?, "echo-state-ok")?;
    expect_text(&unrelated?, "unrelated-ok")?;
    expect_text(&run.call("test_mrtr_no_state", Map::new()).await?, "no-state-ok")?;
    expect_text(&run.call("test_mrtr_no_result_type", Map::new()).await?, "no-result-type-test-ok")
}

/// SEP-2243 standard headers: every listed tool, resource and prompt is exercised once, so each
/// request kind carries its `Mcp-Method` (and `Mcp-Name`) header.
async fn standard_headers(run: &Run) -> Result<(), Failure> {
    let tools = run.list_tools().await?;
    if tools.is_empty() {
        return Err("tools/list returned no tool to call".into());
    }
    for tool in &tools {
        run.call(&tool.name, sample_arguments(&tool.input_schema)).await?;
    }
    let resources = run.request("resources/list", json!({})).await?;
    let uris: Vec<String> = resources
        .get("resources")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|r| r.get("uri").and_then(Value::as_str)).map(str::to_owned).collect())
        .unwrap_or_default();
    if uris.is_empty() {
        return Err("resources/list returned no resource to read".into());
    }
    for uri in &uris {
        run.request("resources/read", json!({ "uri": uri })).await?;
    }
    let prompts = run.request("prompts/list", json!({})).await?;
    let names: Vec<String> = prompts
        .get("prompts")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(|p| p.get("name").and_then(Value::as_str)).map(str::to_owned).collect())
        .unwrap_or_default();
    if names.is_empty() {
        return Err("prompts/list returned no prompt to get".into());
    }
    for name in &names {
        run.request("prompts/get", json!({ "name": name, "arguments": {} })).await?;
    }
    Ok(())
}

/// SEP-2243 custom headers: list (to learn the `x-mcp-header` annotations), then make exactly the
/// calls `MCP_CONFORMANCE_CONTEXT.toolCalls` names, with its arguments.
async fn custom_headers(run: &Run) -> Result<(), Failure> {
    let calls = run
        .context
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls list")?;
    if calls.is_empty() {
        return Err("MCP_CONFORMANCE_CONTEXT.toolCalls is empty".into());
    }
    let tools = run.list_tools().await?;
    for call in calls {
        let name = call.get("name").and_then(Value::as_str).ok_or("a toolCalls entry has no name")?;
        require_tool(&tools, name)?;
        let arguments = object(call.get("arguments").cloned().unwrap_or_else(|| json!({})));
        run.call(name, arguments).await?;
    }
    Ok(())
}

// ---- main ------------------------------------------------------------------------------------

/// What the suite asked for.
struct Invocation {
    url: String,
    scenario: String,
    pin: Option<ProtocolVersion>,
    context: Value,
}

/// Reads argv and the environment; `Err` is a usage error (exit 2).
fn invocation() -> Result<Invocation, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.last().cloned().ok_or("usage: conformance_client [..] SERVER_URL (the URL comes last)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").map_err(|_| "MCP_CONFORMANCE_SCENARIO is not set")?;
    if !known(&scenario) {
        let all: Vec<&str> = SCENARIOS.iter().chain(auth::SCENARIOS).copied().collect();
        return Err(format!("unknown scenario {scenario:?} (known: {})", all.join(", ")));
    }
    // The suite always names the revision; without one the client negotiates.
    let pin = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Ok(version) if !version.trim().is_empty() => Some(
            ProtocolVersion::parse(version.trim())
                .ok_or_else(|| format!("unknown MCP_CONFORMANCE_PROTOCOL_VERSION {version:?}"))?,
        ),
        _ => None,
    };
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) if !text.trim().is_empty() => {
            serde_json::from_str(&text).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}"))?
        }
        _ => json!({}),
    };
    Ok(Invocation { url, scenario, pin, context })
}

fn main() -> ExitCode {
    let invocation = match invocation() {
        Ok(invocation) => invocation,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            return ExitCode::from(2);
        }
    };
    let Invocation { url, scenario, pin, context } = invocation;
    let oauth = match auth::config(&scenario, &context) {
        Ok(oauth) => oauth,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            return ExitCode::from(2);
        }
    };
    actix_rt::System::new().block_on(async move {
        let config = LinkConfig {
            name: format!("conformance-{scenario}"),
            url,
            sse: false,
            headers: Vec::new(),
            pin,
            timeout: REQUEST_TIMEOUT,
            command: None,
            list_limits: Default::default(),
            task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
            oauth,
        };
        let client_info = Implementation::new("mcpd-conformance-client", env!("CARGO_PKG_VERSION"));
        let conn =
            ClientConnection::new(config, ClientHandlers::default(), client_info, Arc::new(ActorCounts::new())).start();
        let run = Run { conn: conn.clone(), context };
        let outcome = match actix_rt::time::timeout(DEADLINE, run_scenario(&scenario, &run)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("did not finish within {} s", DEADLINE.as_secs())),
        };
        // Close the session (DELETE) whatever happened; the runtime bounds it to a few seconds.
        let _ = actix_rt::time::timeout(Duration::from_secs(3), conn.send(StopClientConnection)).await;
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(reason) => {
                eprintln!("conformance_client: {scenario}: {reason}");
                ExitCode::FAILURE
            }
        }
    })
}
