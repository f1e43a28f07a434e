//! The tools a fresh `mcpd` serves, so that it does something real out of the box:
//! `echo` returns its text, `time` tells the current UTC time.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::catalog::{Catalog, ToolError};
use crate::context::ToolContext;
use crate::model::{CallToolResult, Tool, ToolAnnotations};
pub use crate::timestamp::rfc3339_utc;

/// Adds `echo` and `time` to a catalog.
pub fn register(catalog: &mut Catalog) {
    catalog.add_tool(echo_definition(), echo);
    catalog.add_tool(time_definition(), time);
}

fn echo_definition() -> Tool {
    Tool::new(
        "echo",
        "Returns the given text unchanged. Useful to check that the server works.",
        json!({
            "type": "object",
            "properties": { "text": { "type": "string", "description": "The text to return." } },
            "required": ["text"],
            "additionalProperties": false
        }),
    )
    .with_title("Echo")
    .with_annotations(ToolAnnotations::read_only())
}

async fn echo(arguments: Map<String, Value>, _context: ToolContext) -> Result<CallToolResult, ToolError> {
    match arguments.get("text") {
        Some(Value::String(text)) => Ok(CallToolResult::text(text.clone())),
        Some(other) => Err(ToolError::failed(format!("echo: text must be a string, got {other}"))),
        None => Err(ToolError::failed("echo: missing required argument text")),
    }
}

fn time_definition() -> Tool {
    Tool::new(
        "time",
        "Returns the current time in UTC, as RFC 3339 text and as milliseconds since the Unix epoch.",
        json!({ "type": "object", "properties": {}, "additionalProperties": false }),
    )
    .with_title("Current time")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "utc": { "type": "string", "description": "RFC 3339 time in UTC" },
            "unixMillis": { "type": "integer" }
        },
        "required": ["utc", "unixMillis"]
    }))
    .with_annotations(ToolAnnotations { idempotent_hint: Some(false), ..ToolAnnotations::read_only() })
}

async fn time(_arguments: Map<String, Value>, _context: ToolContext) -> Result<CallToolResult, ToolError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(ToolError::failed)?;
    let millis = i64::try_from(now.as_millis()).map_err(ToolError::failed)?;
    Ok(CallToolResult::structured(json!({ "utc": rfc3339_utc(millis), "unixMillis": millis })))
}
