//! The conformance fixture: the tools, resources, resource templates, prompts and completion that
//! the official MCP conformance suite calls, built only on mcpd's public API.
//!
//! `cargo run --release --example everything -- -p PORT` serves it on `127.0.0.1:PORT/mcp` with
//! streamable-HTTP sessions (and the stateless 2026-07-28 wire on the same endpoint); add
//! `--redis URL` to run it as one of several instances behind a load balancer (cluster mode,
//! README "Running several instances").

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use mcpd::catalog::{LiveCatalog, ToolError};
use mcpd::context::LogLevel;
use mcpd::model::{
    CallToolResult, ContentBlock, GetPromptResult, Implementation, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};
use mcpd::mrtr::InputRequired;
use mcpd::server::TaskOptions;
use mcpd::tasks::TaskSupport;
use mcpd::{Catalog, McpServer, ProtocolError, ServerOptions, ToolContext};
use mcpd_actors::cluster::{Cluster, ClusterConfig};
use mcpd_actors::{ListenerConfig, Mcpd, TransportMode};
use serde_json::{json, Map, Value};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

type Args = Map<String, Value>;

/// A tiny WAV file (8 samples of silence, 8 kHz, 8-bit mono), Base64.
fn wav() -> String {
    let samples = [128u8; 8];
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&8000u32.to_le_bytes());
    bytes.extend_from_slice(&8000u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&8u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&samples);
    STANDARD.encode(bytes)
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool::new(name, description, schema)
}

fn text_arg(args: &Args, name: &str) -> String {
    args.get(name).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn add_content_tools(c: &mut Catalog) {
    c.add_tool(tool("test_simple_text", "Returns a simple text response.", no_args()), |_a: Args, _c| async {
        Ok(CallToolResult::text("This is a simple text response for testing."))
    });
    c.add_tool(tool("test_image_content", "Returns an image.", no_args()), |_a: Args, _c| async {
        Ok(CallToolResult::content(vec![ContentBlock::image(PNG, "image/png")]))
    });
    c.add_tool(tool("test_audio_content", "Returns audio.", no_args()), |_a: Args, _c| async {
        Ok(CallToolResult::content(vec![ContentBlock::audio(wav(), "audio/wav")]))
    });
    c.add_tool(tool("test_embedded_resource", "Returns an embedded resource.", no_args()), |_a: Args, _c| async {
        Ok(CallToolResult::content(vec![ContentBlock::resource(ResourceContents::text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        ))]))
    });
    c.add_tool(
        tool("test_multiple_content_types", "Returns text, an image and a resource.", no_args()),
        |_a: Args, _c| async {
            Ok(CallToolResult::content(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                )),
            ]))
        },
    );
    c.add_tool(tool("test_error_handling", "Always fails, as a tool result.", no_args()), |_a: Args, _c| async {
        Err::<CallToolResult, _>(ToolError::failed("This tool intentionally returns an error for testing"))
    });
}

fn add_streaming_tools(c: &mut Catalog) {
    c.add_tool(
        tool("test_tool_with_logging", "Sends three log messages while it runs.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                ctx.log(LogLevel::Info, Some("test_tool_with_logging"), json!(message));
                actix_rt::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(CallToolResult::text("Tool with logging executed successfully"))
        },
    );
    c.add_tool(
        tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            for step in [0.0, 50.0, 100.0] {
                ctx.progress(step, Some(100.0), Some(&format!("step {step}")));
                actix_rt::time::sleep(Duration::from_millis(50)).await;
            }
            let token = ctx.progress_token().map(|t| t.to_string()).unwrap_or_default();
            Ok(CallToolResult::text(token.trim_matches('"').to_owned()))
        },
    );
    c.add_tool(
        tool(
            "test_sampling",
            "Asks the client's model to answer a prompt.",
            json!({"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}),
        ),
        |args: Args, ctx: ToolContext| async move {
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": text_arg(&args, "prompt")}}],
                "maxTokens": 100
            });
            let answer = ctx.request("sampling/createMessage", params).await.map_err(ToolError::failed)?;
            let text = answer["content"]["text"].as_str().unwrap_or_default();
            Ok(CallToolResult::text(format!("LLM response: {text}")))
        },
    );
    c.add_tool(
        tool(
            "test_elicitation",
            "Asks the user for information.",
            json!({"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}),
        ),
        |args: Args, ctx: ToolContext| async move {
            let params = json!({
                "message": text_arg(&args, "message"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                }
            });
            let answer = ctx.request("elicitation/create", params).await.map_err(ToolError::failed)?;
            Ok(CallToolResult::text(format!(
                "User response: action={}, content={}",
                answer["action"].as_str().unwrap_or_default(),
                answer.get("content").cloned().unwrap_or(Value::Null)
            )))
        },
    );
    c.add_tool(
        tool("test_elicitation_sep1034_defaults", "Elicits a form whose fields have defaults.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let params = json!({
                "message": "Please review and update the form fields with defaults",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    },
                    "required": []
                }
            });
            let answer = ctx.request("elicitation/create", params).await.map_err(ToolError::failed)?;
            Ok(CallToolResult::text(format!("Elicitation completed: {answer}")))
        },
    );
    c.add_tool(
        tool("test_elicitation_sep1330_enums", "Elicits every enum variant.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let params = json!({
                "message": "Please select options from the enum fields",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]},
                        "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}}
                    },
                    "required": []
                }
            });
            let answer = ctx.request("elicitation/create", params).await.map_err(ToolError::failed)?;
            Ok(CallToolResult::text(format!("Elicitation completed: {answer}")))
        },
    );
    c.add_tool(
        tool(
            "test_reconnection",
            "Closes its SSE stream mid-call; the result arrives after the client reconnects.",
            no_args(),
        ),
        |_a: Args, ctx: ToolContext| async move {
            ctx.close_stream();
            actix_rt::time::sleep(Duration::from_millis(100)).await;
            Ok(CallToolResult::text("Reconnection test completed successfully"))
        },
    );
    c.add_tool(
        Tool::new(
            "json_schema_2020_12_tool",
            "A tool whose input schema uses JSON Schema 2020-12 features.",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        ),
        |args: Args, _c| async move { Ok(CallToolResult::text(format!("Received: {}", Value::Object(args)))) },
    );
}

/// The text of an elicited field, if the client accepted.
fn elicited_text(ctx: &ToolContext, key: &str, field: &str) -> Option<String> {
    ctx.elicited(key)?.get(field)?.as_str().map(str::to_owned)
}

fn name_schema(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

fn state_kind(ctx: &ToolContext) -> Option<&str> {
    ctx.request_state()?.get("kind")?.as_str()
}

fn sampled_text(ctx: &ToolContext, key: &str) -> Option<String> {
    ctx.input_response(key)?.get("content")?.get("text")?.as_str().map(str::to_owned)
}

/// Multi round-trip (2026-07-28) fixtures: each asks for input with `InputRequired` and completes
/// once the retry carries the answers (and its sealed state).
fn add_mrtr_tools(c: &mut Catalog) {
    c.add_tool(
        tool("test_missing_capability", "Needs the client's sampling capability.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            ctx.require_client_capability("sampling")?;
            Ok(CallToolResult::text("Success"))
        },
    );
    c.add_tool(
        tool("test_input_required_result_elicitation", "MRTR: asks for the user's name.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            match elicited_text(&ctx, "user_name", "name") {
                Some(name) => Ok(CallToolResult::text(format!("Hello, {name}!"))),
                None => Err(InputRequired::new().elicit("user_name", "What is your name?", name_schema("name")).into()),
            }
        },
    );
    c.add_tool(
        tool("test_input_required_result_sampling", "MRTR: asks the client's model.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            match sampled_text(&ctx, "sample_request") {
                Some(text) => Ok(CallToolResult::text(format!("Sampling result: {text}"))),
                None => Err(InputRequired::new()
                    .sample(
                        "sample_request",
                        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}], "maxTokens": 100}),
                    )
                    .into()),
            }
        },
    );
    c.add_tool(
        tool("test_input_required_result_list_roots", "MRTR: asks for the client's roots.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            match ctx.input_response("roots_request").and_then(|r| r.get("roots")).and_then(Value::as_array) {
                Some(roots) => Ok(CallToolResult::text(format!("Found {} root(s)", roots.len()))),
                None => Err(InputRequired::new().list_roots("roots_request").into()),
            }
        },
    );
    c.add_tool(
        tool("test_input_required_result_request_state", "MRTR: carries state between rounds.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let confirmed = ctx.elicited("confirm").and_then(|c| c.get("ok")).and_then(Value::as_bool) == Some(true);
            if confirmed && state_kind(&ctx) == Some("request-state") {
                return Ok(CallToolResult::text("state-ok: requestState validated"));
            }
            Err(InputRequired::new()
                .elicit("confirm", "Please confirm", confirm_schema())
                .state(json!({"kind": "request-state"}))
                .into())
        },
    );
    c.add_tool(
        tool("test_input_required_result_multiple_inputs", "MRTR: asks for three inputs at once.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let name = elicited_text(&ctx, "user_name", "name");
            let greeting = sampled_text(&ctx, "greeting");
            let roots = ctx.input_response("client_roots").and_then(|r| r.get("roots")).and_then(Value::as_array);
            if let (Some(name), Some(greeting), Some(roots), Some("multiple-inputs")) = (name, greeting, roots, state_kind(&ctx)) {
                return Ok(CallToolResult::text(format!("Name: {name}; Greeting: {greeting}; Roots: {}", roots.len())));
            }
            Err(InputRequired::new()
                .elicit("user_name", "What is your name?", name_schema("name"))
                .sample("greeting", json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}], "maxTokens": 50}))
                .list_roots("client_roots")
                .state(json!({"kind": "multiple-inputs"}))
                .into())
        },
    );
    c.add_tool(
        tool("test_input_required_result_multi_round", "MRTR: two rounds of questions.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let round = ctx.request_state().and_then(|s| s.get("round")).and_then(Value::as_u64);
            match (round, elicited_text(&ctx, "step1", "name"), elicited_text(&ctx, "step2", "color")) {
                (Some(1), Some(name), _) => Err(InputRequired::new()
                    .elicit("step2", "Step 2: What is your favorite color?", name_schema("color"))
                    .state(json!({"round": 2, "name": name}))
                    .into()),
                (Some(2), _, Some(color)) => {
                    let name =
                        ctx.request_state().and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("friend");
                    Ok(CallToolResult::text(format!("Multi-round complete for {name} who likes {color}")))
                }
                _ => Err(InputRequired::new()
                    .elicit("step1", "Step 1: What is your name?", name_schema("name"))
                    .state(json!({"round": 1}))
                    .into()),
            }
        },
    );
    c.add_tool(
        tool("test_input_required_result_tampered_state", "MRTR: its requestState is integrity-protected.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            if state_kind(&ctx) == Some("tamper-test") && ctx.input_response("confirm").is_some() {
                return Ok(CallToolResult::text("integrity-ok: state verified"));
            }
            Err(InputRequired::new()
                .elicit("confirm", "Please confirm", confirm_schema())
                .state(json!({"kind": "tamper-test"}))
                .into())
        },
    );
    c.add_tool(
        tool("test_input_required_result_capabilities", "MRTR: asks only for what the client supports.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            let received: Vec<&str> = ["elicit_input", "sample_input"].into_iter().filter(|k| ctx.input_response(k).is_some()).collect();
            if !received.is_empty() {
                return Ok(CallToolResult::text(format!("capabilities-ok: received {}", received.join(","))));
            }
            // Requests for capabilities the client did not declare are dropped by the server.
            Err(InputRequired::new()
                .elicit("elicit_input", "Elicitation input", name_schema("value"))
                .sample("sample_input", json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Sample request"}}], "maxTokens": 50}))
                .state(json!({"kind": "capabilities-test"}))
                .into())
        },
    );
    c.add_tool(
        tool("test_streaming_elicitation", "Streams progress, then answers; never sends a request.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            ctx.progress(50.0, Some(100.0), Some("half way"));
            Ok(CallToolResult::text("Streaming complete"))
        },
    );
    c.add_tool(
        tool("test_logging_tool", "Logs only when the request asked for a log level.", no_args()),
        |_a: Args, ctx: ToolContext| async move {
            ctx.log(LogLevel::Info, Some("test_logging_tool"), json!("Diagnostic trace logging activated"));
            Ok(CallToolResult::text("Logging evaluated"))
        },
    );
    c.add_tool(
        tool(
            "test_header_param",
            "Echoes its region, which clients also send as the Mcp-Param-Region header.",
            json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}),
        ),
        |args: Args, _c| async move { Ok(CallToolResult::text(format!("region: {}", text_arg(&args, "region")))) },
    );
    c.add_prompt(
        Prompt::new("test_input_required_result_prompt", "MRTR: a prompt that needs context from the user", vec![]),
        |_a: Args, ctx: ToolContext| async move {
            match elicited_text(&ctx, "user_context", "context") {
                Some(context) => Ok(GetPromptResult {
                    description: None,
                    messages: vec![PromptMessage::user(ContentBlock::text(format!("Prompt with context: {context}")))],
                }),
                None => Err(InputRequired::new()
                    .elicit("user_context", "What context should the prompt use?", name_schema("context"))
                    .into()),
            }
        },
    );
}

fn number_arg(args: &Args, name: &str) -> f64 {
    args.get(name).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The tasks extension's fixtures (`io.modelcontextprotocol/tasks`): each handler is written once
/// and runs synchronously or as a task, as the server decides (this fixture turns an `optional`
/// tool's call into a task after 100 ms; a `required` one at once).
fn add_task_tools(c: &mut Catalog) {
    c.add_tool(
        tool(
            "greet",
            "Greets someone (never a task).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        ),
        |args: Args, _c| async move { Ok(CallToolResult::text(format!("Hello, {}!", text_arg(&args, "name")))) },
    );
    c.add_tool(
        tool(
            "slow_compute",
            "Sleeps `seconds`, then answers; a task when it runs long.",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}}),
        )
        .with_task_support(TaskSupport::Optional),
        |args: Args, _c| async move {
            let seconds = number_arg(&args, "seconds").clamp(0.0, 3600.0);
            actix_rt::time::sleep(Duration::from_secs_f64(seconds)).await;
            Ok(CallToolResult::text(format!("Computed {} after {seconds} s", text_arg(&args, "label"))))
        },
    );
    c.add_tool(
        tool("failing_job", "Runs as a task and fails as a tool after about a second.", no_args())
            .with_task_support(TaskSupport::Required),
        |_a: Args, _c| async move {
            actix_rt::time::sleep(Duration::from_millis(800)).await;
            Err::<CallToolResult, _>(ToolError::failed("failing_job: the job failed (a tool error)"))
        },
    );
    c.add_tool(
        tool("protocol_error_job", "Runs as a task and ends with a JSON-RPC error.", no_args())
            .with_task_support(TaskSupport::Required),
        |_a: Args, _c| async move {
            actix_rt::time::sleep(Duration::from_millis(300)).await;
            Err::<CallToolResult, _>(ProtocolError::Internal("protocol_error_job: internal failure".into()).into())
        },
    );
    c.add_tool(
        tool(
            "confirm_delete",
            "Checks a file, then asks the user to confirm its deletion.",
            json!({"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}),
        )
        .with_task_support(TaskSupport::Optional),
        |args: Args, ctx: ToolContext| async move {
            // The check takes a moment: by then the call is a task, and the question is the task's.
            actix_rt::time::sleep(Duration::from_millis(300)).await;
            let filename = text_arg(&args, "filename");
            let Some(answer) = ctx.input_response("confirm") else {
                let schema =
                    json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]});
                return Err(InputRequired::new().elicit("confirm", &format!("Delete {filename}?"), schema).into());
            };
            let confirmed = ctx.elicited("confirm").and_then(|c| c.get("confirm")).and_then(Value::as_bool);
            Ok(CallToolResult::text(match (answer["action"].as_str(), confirmed) {
                (Some("accept"), Some(true)) => format!("Deleted {filename}"),
                _ => format!("Kept {filename}"),
            }))
        },
    );
    c.add_tool(
        tool("multi_input", "Asks two questions at once, then answers.", no_args())
            .with_task_support(TaskSupport::Optional),
        |_a: Args, ctx: ToolContext| async move {
            actix_rt::time::sleep(Duration::from_millis(300)).await;
            match (elicited_text(&ctx, "first", "name"), elicited_text(&ctx, "second", "name")) {
                (Some(first), Some(second)) => Ok(CallToolResult::text(format!("Got {first} and {second}"))),
                _ => Err(InputRequired::new()
                    .elicit("first", "First name?", name_schema("name"))
                    .elicit("second", "Second name?", name_schema("name"))
                    .into()),
            }
        },
    );
    c.add_tool(
        tool("test_tool_with_task", "Asks for a name (MRTR), then works on it as a task.", no_args())
            .with_task_support(TaskSupport::Required),
        |_a: Args, ctx: ToolContext| async move {
            let Some(name) = elicited_text(&ctx, "user_name", "name") else {
                return Err(InputRequired::new().elicit("user_name", "What is your name?", name_schema("name")).into());
            };
            actix_rt::time::sleep(Duration::from_millis(300)).await;
            Ok(CallToolResult::text(format!("Hello, {name}! Your task is done.")))
        },
    );
}

/// Hooks the suite calls to change the catalog while `subscriptions/listen` streams are open.
fn add_triggers(c: &mut Catalog, live: Arc<OnceLock<Weak<LiveCatalog>>>) {
    let tools = live.clone();
    c.add_tool(
        tool("test_trigger_tool_change", "Adds or removes test_dynamic_tool.", no_args()),
        move |_a: Args, _c| {
            let live = tools.get().and_then(Weak::upgrade);
            async move {
                let live = live.ok_or_else(|| ToolError::failed("the catalog is gone"))?;
                live.update(|c| {
                    if !c.remove_tool("test_dynamic_tool") {
                        c.add_tool(
                            tool("test_dynamic_tool", "Appears and disappears.", no_args()),
                            |_a: Args, _c| async { Ok(CallToolResult::text("dynamic")) },
                        );
                    }
                });
                Ok(CallToolResult::text("Mutation triggered"))
            }
        },
    );
    c.add_tool(
        tool("test_trigger_prompt_change", "Adds or replaces test_dynamic_prompt.", no_args()),
        move |_a: Args, _c| {
            let live = live.get().and_then(Weak::upgrade);
            async move {
                let live = live.ok_or_else(|| ToolError::failed("the catalog is gone"))?;
                live.update(|c| {
                    c.add_prompt(
                        Prompt::new("test_dynamic_prompt", "Changes on demand.", vec![]),
                        |_a: Args, _c| async {
                            Ok(GetPromptResult {
                                description: None,
                                messages: vec![PromptMessage::user(ContentBlock::text("dynamic"))],
                            })
                        },
                    );
                });
                Ok(CallToolResult::text("Mutation triggered"))
            }
        },
    );
}

fn add_resources(c: &mut Catalog) {
    c.add_resource(
        Resource::new("test://stateless-static-text", "Stateless Static Text", "text/plain")
            .with_description("A static text resource served on the draft path"),
        |uri: String, _v, _c| async move {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(
                    uri,
                    "text/plain",
                    "Static text content from the stateless draft path.",
                )],
            })
        },
    );
    c.add_resource(
        Resource::new("test://static-text", "Static Text Resource", "text/plain")
            .with_description("A static text resource for testing"),
        |uri: String, _v, _c| async move {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(
                    uri,
                    "text/plain",
                    "This is the content of the static text resource.",
                )],
            })
        },
    );
    c.add_resource(
        Resource::new("test://static-binary", "Static Binary Resource", "image/png")
            .with_description("A static binary resource (image) for testing"),
        |uri: String, _v, _c| async move {
            Ok(ReadResourceResult { contents: vec![ResourceContents::blob(uri, "image/png", PNG)] })
        },
    );
    c.add_resource(
        Resource::new("test://watched-resource", "Watched Resource", "text/plain")
            .with_description("A resource that changes every few seconds (subscribe to it)"),
        |uri: String, _v, _c| async move {
            Ok(ReadResourceResult {
                contents: vec![ResourceContents::text(uri, "text/plain", "Watched resource content")],
            })
        },
    );
    c.add_template(
        ResourceTemplate::new("test://template/{id}/data", "Resource Template", "application/json"),
        |uri: String, vars: Vec<(String, String)>, _c| async move {
            let id = vars.into_iter().find(|(k, _)| k == "id").map(|(_, v)| v).unwrap_or_default();
            let text = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
            Ok(ReadResourceResult { contents: vec![ResourceContents::text(uri, "application/json", text)] })
        },
    );
}

fn add_prompts(c: &mut Catalog) {
    c.add_prompt(
        Prompt::new("test_simple_prompt", "A simple prompt without arguments", vec![]).with_title("Simple Test Prompt"),
        |_a: Args, _c| async {
            Ok(GetPromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text("This is a simple prompt for testing."))],
            })
        },
    );
    c.add_prompt(
        Prompt::new(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            vec![
                PromptArgument::required("arg1", "First test argument"),
                PromptArgument::required("arg2", "Second test argument"),
            ],
        )
        .with_title("Prompt With Arguments"),
        |args: Args, _c| async move {
            let text = format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                text_arg(&args, "arg1"),
                text_arg(&args, "arg2")
            );
            Ok(GetPromptResult { description: None, messages: vec![PromptMessage::user(ContentBlock::text(text))] })
        },
    );
    c.add_prompt(
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            vec![PromptArgument::required("resourceUri", "URI of the resource to embed")],
        )
        .with_title("Prompt With Embedded Resource"),
        |args: Args, _c| async move {
            let uri = text_arg(&args, "resourceUri");
            Ok(GetPromptResult {
                description: None,
                messages: vec![
                    PromptMessage::user(ContentBlock::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    PromptMessage::user(ContentBlock::text("Please process the embedded resource above.")),
                ],
            })
        },
    );
    c.add_prompt(
        Prompt::new("test_prompt_with_image", "A prompt that includes an image", vec![])
            .with_title("Prompt With Image"),
        |_a: Args, _c| async {
            Ok(GetPromptResult {
                description: None,
                messages: vec![
                    PromptMessage::user(ContentBlock::image(PNG, "image/png")),
                    PromptMessage::user(ContentBlock::text("Please analyze the image above.")),
                ],
            })
        },
    );
}

/// The whole fixture catalog; `live` is filled in once the live catalog exists.
fn catalog(live: Arc<OnceLock<Weak<LiveCatalog>>>) -> Catalog {
    let mut c = Catalog::new();
    add_content_tools(&mut c);
    add_streaming_tools(&mut c);
    add_mrtr_tools(&mut c);
    add_task_tools(&mut c);
    add_triggers(&mut c, live);
    add_resources(&mut c);
    add_prompts(&mut c);
    c.set_completer(|_reference, _argument, _prefix| Vec::new());
    c
}

/// `-p PORT` (default 3000) and `--redis URL` (cluster mode: the requestState keys shared
/// through Redis, so that several instances behind a load balancer pass the stateless scenarios).
fn parse_args() -> Result<(u16, Option<String>), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut port, mut redis) = (3000, None);
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-p" | "--port" => {
                let value = args.get(i + 1).ok_or("-p needs a port")?;
                port = value.parse().map_err(|_| format!("invalid port {value:?}"))?;
                i += 2;
            }
            "--redis" => {
                redis = Some(args.get(i + 1).ok_or("--redis needs a URL")?.clone());
                i += 2;
            }
            other => return Err(format!("unknown argument {other:?} (usage: everything [-p PORT] [--redis URL])")),
        }
    }
    Ok((port, redis))
}

fn main() -> std::process::ExitCode {
    let (port, redis) = match parse_args() {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("everything: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // Telemetry as `mcpd serve` reads it: the standard `OTEL_*` variables.
    match mcpd::telemetry::TelemetryConfig::read(|name| std::env::var(name).ok(), None) {
        Ok(None) => {}
        Ok(Some(config)) => {
            if let Err(e) = mcpd_actors::telemetry::init(&config) {
                eprintln!("everything: {e}");
                return std::process::ExitCode::from(2);
            }
        }
        Err(e) => {
            eprintln!("everything: {e}");
            return std::process::ExitCode::from(2);
        }
    }
    let code = actix_rt::System::new().block_on(async move {
        let slot = Arc::new(OnceLock::new());
        let live = Arc::new(LiveCatalog::new(catalog(slot.clone())));
        let _ = slot.set(Arc::downgrade(&live));
        let options = ServerOptions {
            info: Implementation::new("mcp-conformance-test-server", "1.0.0"),
            sessions: true,
            // The suite's slow_compute of 1 s must become a task: promote optional calls early.
            tasks: TaskOptions { task_after_ms: 100, ..TaskOptions::default() },
            ..ServerOptions::default()
        };
        let server = Arc::new(McpServer::with_live_catalog(options, live.clone()));
        let config = ListenerConfig { port, mode: TransportMode::StreamableHttp, ..ListenerConfig::default() };
        let cluster = match redis.map(|url| Cluster::new(server.clone(), ClusterConfig::new(url))).transpose() {
            Ok(cluster) => cluster,
            Err(e) => {
                eprintln!("everything: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        let store = cluster.as_ref().map(Cluster::task_store);
        let runtime = Mcpd::with_task_store(server.clone(), config.clone(), Vec::new(), store);
        if let Some(cluster) = &cluster {
            if let Err(e) = cluster.start(&runtime).await {
                eprintln!("everything: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
        let status = match runtime.start(config).await {
            Ok(status) => status,
            Err(e) => {
                eprintln!("everything: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        eprintln!("mcpd: listening on {} (conformance fixture)", status.url);
        // The watched resource changes every 3 s; subscribers hear about it.
        let watched = live.clone();
        actix_rt::spawn(async move {
            loop {
                actix_rt::time::sleep(Duration::from_secs(3)).await;
                watched.resource_updated("test://watched-resource");
            }
        });
        let _ = actix_rt::signal::ctrl_c().await;
        let _ = runtime.close().await;
        if let Some(cluster) = &cluster {
            cluster.stop().await;
        }
        std::process::ExitCode::SUCCESS
    });
    mcpd_actors::telemetry::shutdown();
    code
}
