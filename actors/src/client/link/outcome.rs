//! A response message read as the outcome of the request it answers: the `result`, or the
//! JSON-RPC error as a [`ClientError::Rpc`] (with the HTTP status it came with).

use mcpd::jsonrpc::RequestId;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
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

/// The outcome of a JSON response body to request `id`. The usual answer — a `result` to this
/// id, no `error` — is read straight into its parts (no map for the envelope); anything else is
/// read as a whole message and judged by [`outcome_owned`].
pub(super) fn outcome_of_body(body: &[u8], id: &RequestId, status: u16) -> Result<Value, ClientError> {
    /// Whether a member is there at all (`null` included).
    #[derive(Default)]
    struct Present(bool);
    impl<'de> Deserialize<'de> for Present {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            IgnoredAny::deserialize(deserializer).map(|_| Present(true))
        }
    }
    #[derive(Deserialize)]
    struct Response {
        id: Option<RequestId>,
        result: Option<Value>,
        #[serde(default)]
        error: Present,
    }
    if let Ok(Response { id: Some(answered), result: Some(result), error: Present(false) }) =
        serde_json::from_slice(body)
    {
        if answered == *id {
            return Ok(result);
        }
    }
    let message: Value =
        serde_json::from_slice(body).map_err(|e| ClientError::Protocol(format!("the response is not JSON: {e}")))?;
    outcome_owned(message, id, status)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_judged_as_the_whole_message_would_be() {
        let id = RequestId::Number(3);
        let ok = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        assert_eq!(outcome_of_body(ok, &id, 200).unwrap(), serde_json::json!({"content": []}));
        // An error member, even null, makes it an error, as in outcome_owned.
        let null_error = br#"{"jsonrpc":"2.0","id":3,"result":{},"error":null}"#;
        assert!(outcome_of_body(null_error, &id, 200).is_err());
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}"#;
        assert!(matches!(
            outcome_of_body(error, &id, 400),
            Err(ClientError::Rpc { code: -32602, http_status: 400, .. })
        ));
        let other_id = br#"{"jsonrpc":"2.0","id":4,"result":{}}"#;
        assert!(
            matches!(outcome_of_body(other_id, &id, 200), Err(ClientError::Protocol(m)) if m.contains("does not match"))
        );
        // A duplicated member: the last one counts, as when read as a whole message.
        let twice = br#"{"jsonrpc":"2.0","id":3,"result":1,"result":2}"#;
        assert_eq!(outcome_of_body(twice, &id, 200).unwrap(), 2);
        assert!(
            matches!(outcome_of_body(b"<html>", &id, 200), Err(ClientError::Protocol(m)) if m.starts_with("the response is not JSON"))
        );
    }
}
