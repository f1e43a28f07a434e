//! The tools a fresh `mcpd` serves, so that it does something real out of the box:
//! `echo` returns its text, `time` tells the current UTC time.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::catalog::{Catalog, ToolError};
use crate::context::ToolContext;
use crate::model::{CallToolResult, Tool, ToolAnnotations};

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

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_utc(unix_millis: i64) -> String {
    let secs = unix_millis.div_euclid(1000);
    let millis = unix_millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_utc(1_796_000_000_000), "2026-11-30T00:53:20.000Z");
    }
}
