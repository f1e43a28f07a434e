//! The level of `logging/setLevel`: read from its params, with the one error every transport
//! answers for a missing or unknown level.

use serde_json::{Map, Value};

use crate::context::LogLevel;
use crate::error::ProtocolError;

pub(super) fn parse_level(params: &Map<String, Value>) -> Result<LogLevel, ProtocolError> {
    params.get("level").and_then(Value::as_str).and_then(LogLevel::parse).ok_or_else(|| {
        ProtocolError::InvalidParams(
            "level must be one of debug, info, notice, warning, error, critical, alert, emergency".into(),
        )
    })
}

/// Reads the level of a `logging/setLevel` request (for transports that keep it).
///
/// # Errors
/// `-32602` for a missing or unknown level.
pub fn set_level_param(params: Option<&Map<String, Value>>) -> Result<LogLevel, ProtocolError> {
    parse_level(params.unwrap_or(&Map::new()))
}
