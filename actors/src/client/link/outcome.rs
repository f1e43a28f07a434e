//! A response message read as the outcome of the request it answers: the `result`, or the
//! JSON-RPC error as a [`ClientError::Rpc`] (with the HTTP status it came with); and the usual
//! answer to a gateway's `tools/call` read straight into what it passes on ([`passed_result`]).

use mcpd::jsonrpc::RequestId;
use mcpd::model::{CallToolResult, ContentBlock, PassedResult};
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
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

/// A `tools/call` answer read straight from its body into the [`CallToolResult`] a gateway
/// passes on — the content blocks, `structuredContent`, `isError` and `_meta`, other members
/// left out — without building the result as a JSON value first. Only the usual answer is read
/// so: a `result` to request `id`, no `error`, every member once and of its type, every content
/// block one this server knows, and no `resultType` the caller must act on (`input_required`,
/// `task`). For anything else `None`, and the body is read whole ([`outcome_of_body`], then
/// `CallResult`), which gives the same result when it is the usual answer.
pub(super) fn passed_result(body: &[u8], id: &RequestId) -> Option<CallToolResult> {
    #[derive(Deserialize)]
    struct Response {
        id: Option<RequestId>,
        result: Option<Passed>,
        #[serde(default)]
        error: Present,
    }
    match serde_json::from_slice(body) {
        Ok(Response { id: Some(answered), result: Some(Passed(result)), error: Present(false) }) if answered == *id => {
            Some(result)
        }
        _ => None,
    }
}

/// A `tools/call` answer's result kept as the text it came as, for a gateway's lane: only the
/// usual answer — a `result` to request `id`, no `error` — whose result is a complete one of
/// the shape [`PassedResult::check`] accepts. For anything else `None`, and the body is read as
/// it would be without a lane.
pub(super) fn passed_text(body: &[u8], id: &RequestId) -> Option<PassedResult> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let result = Envelope(id).deserialize(&mut deserializer).ok()??;
    deserializer.end().ok()?;
    PassedResult::check(result.to_owned())
}

/// A response's members, as [`passed_text`] reads them.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum EnvelopeMember {
    Id,
    Result,
    Error,
    #[serde(other)]
    Other,
}

/// A response read for the result's text when it answers request `.0` without an error (each
/// of `id`, `result`, `error` once at most); `None` for any other response.
struct Envelope<'i>(&'i RequestId);

impl<'de> DeserializeSeed<'de> for Envelope<'_> {
    type Value = Option<&'de RawValue>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Envelope<'_> {
    type Value = Option<&'de RawValue>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC response")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Self::Value, A::Error> {
        let (mut answers, mut result, mut error) = (None, None, false);
        while let Some(member) = members.next_key::<EnvelopeMember>()? {
            match member {
                EnvelopeMember::Id if answers.is_none() => answers = Some(members.next_value_seed(IdIs(self.0))?),
                EnvelopeMember::Result if result.is_none() => result = Some(members.next_value::<&'de RawValue>()?),
                EnvelopeMember::Error if !error => {
                    members.next_value::<IgnoredAny>()?;
                    error = true;
                }
                EnvelopeMember::Other => {
                    members.next_value::<IgnoredAny>()?;
                }
                _ => return Err(A::Error::custom("a member is there twice")),
            }
        }
        Ok(result.filter(|_| answers == Some(true) && !error))
    }
}

/// Whether an `id` is request `.0`'s, read without keeping it (an id of any other type is not).
struct IdIs<'i>(&'i RequestId);

impl<'de> DeserializeSeed<'de> for IdIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a request id")
    }
    fn visit_u64<E>(self, n: u64) -> Result<bool, E> {
        Ok(i64::try_from(n).is_ok_and(|n| *self.0 == RequestId::Number(n)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<bool, E> {
        Ok(*self.0 == RequestId::Number(n))
    }
    fn visit_str<E>(self, text: &str) -> Result<bool, E> {
        Ok(matches!(self.0, RequestId::String(id) if **id == *text))
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

/// Whether a member is there at all (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// A `tools/call` result as [`passed_result`] reads it.
struct Passed(CallToolResult);

/// The members of a `tools/call` result a gateway reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Member {
    Content,
    StructuredContent,
    IsError,
    #[serde(rename = "_meta")]
    Meta,
    ResultType,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Passed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Passed;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tools/call result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Passed, A::Error> {
                let mut result = CallToolResult::default();
                // Content, structuredContent, isError, _meta, resultType: each once.
                let mut seen = [false; 5];
                while let Some(member) = members.next_key::<Member>()? {
                    let index = match member {
                        Member::Content => 0,
                        Member::StructuredContent => 1,
                        Member::IsError => 2,
                        Member::Meta => 3,
                        Member::ResultType => 4,
                        Member::Other => {
                            members.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut seen[index], true) {
                        return Err(A::Error::custom("a member is there twice"));
                    }
                    match member {
                        Member::Content => {
                            result.content = members.next_value::<Option<Vec<ContentBlock>>>()?.unwrap_or_default();
                        }
                        Member::StructuredContent => match members.next_value::<Value>()? {
                            Value::Null => {}
                            structured @ Value::Object(_) => result.structured_content = Some(structured),
                            _ => return Err(A::Error::custom("structuredContent is not an object")),
                        },
                        Member::IsError => result.is_error = members.next_value::<Option<bool>>()?.unwrap_or(false),
                        Member::Meta => {
                            if let Value::Object(meta) = members.next_value::<Value>()? {
                                result.meta = Some(meta);
                            }
                        }
                        Member::ResultType | Member::Other => {
                            if members.next_value::<Unfinished>()?.0 {
                                return Err(A::Error::custom("the result is not complete"));
                            }
                        }
                    }
                }
                Ok(Passed(result))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// A `resultType` (or another member's value), read without building a string: whether it is
/// one the caller must act on (`input_required`, `task`); any other value, of any type, is not.
struct Unfinished(bool);

impl<'de> Deserialize<'de> for Unfinished {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Kind;
        impl<'de> Visitor<'de> for Kind {
            type Value = Unfinished;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, kind: &str) -> Result<Unfinished, E> {
                Ok(Unfinished(kind == "input_required" || kind == "task"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Unfinished, E> {
                Ok(Unfinished(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Unfinished, E> {
                Ok(Unfinished(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Unfinished, E> {
                Ok(Unfinished(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Unfinished, E> {
                Ok(Unfinished(false))
            }
            fn visit_unit<E>(self) -> Result<Unfinished, E> {
                Ok(Unfinished(false))
            }
            // Read as values (and dropped): what a value refuses is refused here too.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Unfinished, A::Error> {
                while seq.next_element::<Value>()?.is_some() {}
                Ok(Unfinished(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unfinished, A::Error> {
                while map.next_entry::<String, Value>()?.is_some() {}
                Ok(Unfinished(false))
            }
        }
        deserializer.deserialize_any(Kind)
    }
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
    use crate::client::CallResult;

    /// What a gateway passes on when the body is read whole: the result, its shape judged by
    /// `CallResult`, then what is passed.
    fn read_whole(body: &str, id: &RequestId) -> Result<CallToolResult, ClientError> {
        let raw = outcome_of_body(body.as_bytes(), id, 200)?;
        CallResult::from_result("s", "t", raw).map(CallResult::into_passed)
    }

    #[test]
    fn the_usual_answer_is_read_straight_into_what_reading_it_whole_passes_on() {
        let id = RequestId::Number(7);
        let usual = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}"#,
            r#"{"result":{"content":[{"type":"text","text":"a\"b","annotations":{"priority":0.5}},
                {"type":"image","data":"AA==","mimeType":"image/png"}],"structuredContent":{"b":1e3,"a":[1.5,null]},
                "isError":true,"_meta":{"k":{"x":[1]}},"ttlMs":5,"extra":{"y":2}},"id":7,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":null,"isError":null,"structuredContent":null,"_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"\u0063ontent":[],"resultType":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":{"k":[1,"task"]},"x":["task",{"y":"input_required"}]}}"#,
        ];
        for body in usual {
            let passed = passed_result(body.as_bytes(), &id).unwrap_or_else(|| panic!("read straight: {body}"));
            assert_eq!(passed, read_whole(body, &id).unwrap(), "{body}");
        }
        let hello = passed_result(usual[0].as_bytes(), &id).unwrap();
        assert_eq!(hello, CallToolResult::text("hello"));
    }

    #[test]
    fn any_other_answer_is_left_to_the_whole_reading() {
        let id = RequestId::Number(7);
        let others = [
            // A member twice (read whole, the last one counts).
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"content":[{"type":"text","text":"x"}]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"isError":true,"isError":false}}"#,
            // A block this server does not know (left out when read whole), or of the wrong shape.
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"video","url":"x"},{"type":"text","text":"y"}]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"y","text":"z"}]}}"#,
            // Results the caller acts on.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","task":{"taskId":"t"}}}"#,
            // Shapes the whole reading refuses, with its own message.
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":"text"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"structuredContent":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"isError":"yes"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[]}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            // Not an answer to this request.
            r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"error":null}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"result":{}}"#,
            "<html>",
            // What a value refuses, in a resultType.
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":{"k":[1e400]}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":["\ud800"]}}"#,
        ];
        for body in others {
            assert_eq!(passed_result(body.as_bytes(), &id), None, "{body}");
        }
        // What the whole reading makes of some of them, unchanged.
        let twice = read_whole(others[0], &id).unwrap();
        assert_eq!(twice.content, vec![ContentBlock::text("x")]);
        let unknown = read_whole(others[2], &id).unwrap();
        assert_eq!(unknown.content, vec![ContentBlock::text("y")]);
        assert!(
            matches!(read_whole(others[6], &id), Err(ClientError::Protocol(m)) if m.contains("content is not an array"))
        );
    }

    #[test]
    fn a_lanes_usual_answer_is_kept_as_the_text_of_its_result_and_any_other_read_as_before() {
        let id = RequestId::Number(7);
        let result = r#"{"content":[{"type":"text","text":"a\"b"}],"extra":{"y":[1]},"resultType":"complete"}"#;
        for body in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#),
            format!(r#"{{"result":{result},"id":7,"jsonrpc":"2.0","other":1}}"#),
        ] {
            let passed = passed_text(body.as_bytes(), &id).unwrap_or_else(|| panic!("kept: {body}"));
            assert_eq!(passed.text(), result);
        }
        let named = RequestId::String("a\"b".into());
        let body = format!(r#"{{"jsonrpc":"2.0","id":"a\"b","result":{result}}}"#);
        assert_eq!(passed_text(body.as_bytes(), &named).map(|p| p.text().to_owned()).as_deref(), Some(result));
        assert!(passed_text(body.as_bytes(), &id).is_none());
        let others = [
            // Not this request's, an error, a member twice, not JSON.
            format!(r#"{{"jsonrpc":"2.0","id":8,"result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":"7","result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7.0,"result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":[7],"result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"id":7,"result":{result}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}} trailing"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result},"error":null}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result},"result":{result}}}"#),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}"#.to_owned(),
            "<html>".to_owned(),
            // A result the caller acts on, or of another shape.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"video"}],"resultType":"complete"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#.to_owned(),
        ];
        for body in others {
            assert!(passed_text(body.as_bytes(), &id).is_none(), "{body}");
        }
    }

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
