//! A response message read as the outcome of the request it answers: the `result`, or the
//! JSON-RPC error as a [`ClientError::Rpc`] (with the HTTP status it came with).

use mcpd::jsonrpc::RequestId;
use serde_json::Value;

use crate::client::error::ClientError;

/// The outcome of a response message to request `id` (for the stdio transport).
pub(crate) fn outcome(message: Value, id: &RequestId) -> Result<Value, ClientError> {
    outcome_owned(message, id, 200)
}

/// As [`outcome_of`], moving the result out instead of copying it.
pub(super) fn outcome_owned(mut message: Value, id: &RequestId, status: u16) -> Result<Value, ClientError> {
    if message.get("error").is_none() && message.get("id").and_then(RequestId::from_value).as_ref() == Some(id) {
        if let Some(result) = message.as_object_mut().and_then(|m| m.remove("result")) {
            return Ok(result);
        }
    }
    outcome_of(&message, id, status)
}

/// The result or error of a response message.
pub(super) fn outcome_of(message: &Value, id: &RequestId, status: u16) -> Result<Value, ClientError> {
    if let Some(error) = message.get("error") {
        return Err(ClientError::from_error_object(error, status));
    }
    let answered = message.get("id").and_then(RequestId::from_value);
    if answered.as_ref() != Some(id) {
        return Err(ClientError::Protocol(format!("MCP response id does not match request {id}.")));
    }
    message.get("result").cloned().ok_or_else(|| ClientError::Protocol("MCP response has no result.".into()))
}
