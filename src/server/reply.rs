//! A request's result as the server produced it ([`super::Execution::outcome`]), kept typed until
//! it is written out.
//!
//! A `tools/call` result is a [`CallToolResult`]; turning it into a `serde_json::Value` map (every
//! key allocated and hashed) only to serialize that map into the response would be most of what
//! the protocol layer spends on a tool call. Transports serialize a [`Reply`] directly
//! ([`super::encode_answer`]); [`Reply::into_value`] gives the same JSON as a value, for a caller
//! that needs one.

use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use crate::error::ProtocolError;
use crate::model::{CallToolResult, PassedResult};
use crate::version::Era;

/// The result of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Any result but a finished tool call's.
    Value(Value),
    /// A tool call's result (a success or a tool failure).
    Tool {
        /// What the tool returned.
        result: CallToolResult,
        /// On the stateless wire the result ends with `"resultType": "complete"`.
        stateless: bool,
    },
    /// A tool call's result as another server sent it (a gateway's lane, on the 2026-07-28
    /// wire: it already ends with its `"resultType": "complete"`), written as it came.
    Passed(PassedResult),
}

impl Reply {
    /// A tool call's result, shaped for `era`.
    pub fn tool(result: CallToolResult, era: Era) -> Self {
        Reply::Tool { result, stateless: era == Era::Stateless }
    }

    /// Whether this is a tool call's result with `isError: true`.
    pub fn is_tool_error(&self) -> bool {
        match self {
            Reply::Value(value) => value.get("isError") == Some(&Value::Bool(true)),
            Reply::Tool { result, .. } => result.is_error,
            Reply::Passed(result) => result.is_error(),
        }
    }

    /// The result as a JSON value (an object; for a tool call, its fields then `resultType`).
    ///
    /// # Errors
    /// `-32603` if the tool's result does not serialize to an object (it always does).
    pub fn into_value(self) -> Result<Value, ProtocolError> {
        match self {
            Reply::Value(value) => Ok(value),
            Reply::Tool { result, stateless } => match serde_json::to_value(&result) {
                Ok(Value::Object(mut map)) => {
                    if stateless {
                        map.entry("resultType").or_insert_with(|| json!("complete"));
                    }
                    Ok(Value::Object(map))
                }
                Ok(_) => Err(ProtocolError::Internal("result is not an object".into())),
                Err(e) => Err(ProtocolError::Internal(e.to_string())),
            },
            Reply::Passed(result) => {
                serde_json::from_str(result.text()).map_err(|e| ProtocolError::Internal(e.to_string()))
            }
        }
    }
}

impl Serialize for Reply {
    /// The same JSON as [`Reply::into_value`] gives, written without building it.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// A stateless tool result: the result's own fields, then `resultType`.
        #[derive(Serialize)]
        struct Complete<'a> {
            #[serde(flatten)]
            result: &'a CallToolResult,
            #[serde(rename = "resultType")]
            result_type: &'static str,
        }
        match self {
            Reply::Value(value) => value.serialize(serializer),
            Reply::Passed(result) => result.serialize(serializer),
            Reply::Tool { result, stateless: false } => result.serialize(serializer),
            Reply::Tool { result, stateless: true } => {
                Complete { result, result_type: "complete" }.serialize(serializer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContentBlock;

    fn results() -> Vec<CallToolResult> {
        let mut with_everything = CallToolResult::structured(json!({"b": 1, "a": [1.5, "x", null]}));
        with_everything.is_error = true;
        with_everything.meta = serde_json::from_value(json!({"k": "v"})).ok();
        with_everything.content.push(ContentBlock::text("second \"quoted\" \u{1F600}"));
        vec![CallToolResult::text("hello"), CallToolResult::error("failed"), with_everything]
    }

    #[test]
    fn serializing_a_tool_reply_writes_what_its_value_would() {
        for result in results() {
            for era in [Era::Stateful, Era::Stateless] {
                let reply = Reply::tool(result.clone(), era);
                let direct = serde_json::to_vec(&reply).unwrap();
                let via_value = serde_json::to_vec(&reply.into_value().unwrap()).unwrap();
                assert_eq!(String::from_utf8(direct).unwrap(), String::from_utf8(via_value).unwrap());
            }
        }
    }

    #[test]
    fn stateless_tool_replies_end_with_result_type_complete() {
        let value = Reply::tool(CallToolResult::text("hi"), Era::Stateless).into_value().unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["content", "resultType"]);
        assert_eq!(value["resultType"], "complete");
        let stateful = Reply::tool(CallToolResult::text("hi"), Era::Stateful).into_value().unwrap();
        assert!(stateful.get("resultType").is_none());
    }

    #[test]
    fn tool_errors_are_told_apart_in_both_shapes() {
        let failed = Reply::tool(CallToolResult::error("no"), Era::Stateful);
        assert!(failed.is_tool_error());
        assert!(Reply::Value(failed.into_value().unwrap()).is_tool_error());
        assert!(!Reply::tool(CallToolResult::text("ok"), Era::Stateless).is_tool_error());
    }
}
