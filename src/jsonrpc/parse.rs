//! Parsing a body: bytes in, an [`Incoming`] (one message or a batch) out, and every malformed
//! input reported as a [`Rejection`] carrying the JSON-RPC error and, when it could be read, the
//! request id to echo.
//!
//! The body is parsed once: a message object's members are read straight into their slots (no
//! map is built for the envelope) and their [`serde_json::Value`]s moved, never cloned, into the
//! typed messages. A request's `_meta` is the exception: it is kept as text and read for the
//! members the runtime uses, never built as a map unless a handler asks for it ([`RequestMeta`]).

use std::fmt;
use std::sync::Arc;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::{ErrorCode, ErrorObject};
use super::message::{split_meta, Message, Notification, Request, RequestId, Response, JSONRPC_VERSION};
use super::meta::{self, RequestMeta};

/// A parsed body: one message or a batch (an array) of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A single message.
    Single(Message),
    /// A non-empty batch; each element is judged on its own.
    Batch(Vec<Result<Message, Rejection>>),
}

/// A malformed input: the error to send and the id to echo, when it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request id, when readable.
    pub id: Option<RequestId>,
    /// The error to answer with (boxed: rejections are the cold path).
    pub error: Box<ErrorObject>,
}

impl Rejection {
    fn parse(detail: impl fmt::Display) -> Self {
        Rejection {
            id: None,
            error: Box::new(ErrorObject::new(ErrorCode::PARSE_ERROR, format!("Parse error: {detail}"))),
        }
    }

    fn invalid(id: Option<RequestId>, detail: &str) -> Self {
        Rejection {
            id,
            error: Box::new(ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("Invalid request: {detail}"))),
        }
    }
}

/// Parses a body: invalid JSON (including nesting deeper than serde_json's recursion limit)
/// is a `-32700` rejection with no id; a body that is JSON but not a message is `-32600`.
///
/// # Errors
/// A [`Rejection`] for the whole body: a parse error, an empty batch, or a single invalid message.
pub fn parse(bytes: &[u8]) -> Result<Incoming, Rejection> {
    match serde_json::from_slice::<Body>(bytes).map_err(Rejection::parse)? {
        Body::Message(envelope) => classify_envelope(*envelope).map(Incoming::Single),
        Body::Batch(items) if items.is_empty() => Err(Rejection::invalid(None, "empty batch")),
        Body::Batch(items) => Ok(Incoming::Batch(items.into_iter().map(classify).collect())),
        Body::NotAnObject => Err(not_an_object()),
    }
}

/// A body's top level, read straight from the bytes. An object's members are kept apart as they
/// are read, so no map is built for the envelope (its keys allocated and hashed, then removed
/// again); an array stays values, for [`classify`]. Member values are parsed as [`Value`]s,
/// unknown ones included, so what is valid JSON (and the recursion limit) is exactly as for a
/// `Value` — and so is a `_meta` read as text, whose members are checked as values are and whose
/// nesting is held to the same limit.
enum Body {
    Message(Box<Envelope>),
    Batch(Vec<Value>),
    NotAnObject,
}

/// The members of a message object that JSON-RPC gives a meaning; a repeated member keeps its
/// last value, as a JSON object read into a map does.
#[derive(Default)]
struct Envelope {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Params>,
    result: Option<Value>,
    error: Option<Value>,
}

impl Envelope {
    fn from_map(mut object: Map<String, Value>) -> Envelope {
        let params = match object.remove("params") {
            None => None,
            Some(Value::Object(params)) => {
                let (params, meta) = split_meta(params);
                Some(Params::Object(params, meta.map(Arc::new)))
            }
            Some(_) => Some(Params::NotAnObject),
        };
        Envelope {
            jsonrpc: object.remove("jsonrpc"),
            id: object.remove("id"),
            method: object.remove("method"),
            params,
            result: object.remove("result"),
            error: object.remove("error"),
        }
    }
}

/// How deeply a `_meta` value may nest (itself included): serde_json refuses a value nested
/// 128 deep, and a request's `_meta` is inside two objects (the message, its params).
const MAX_META_DEPTH: usize = 125;

/// A message's `params`: an object's members, with a `_meta` object read apart (see
/// [`RequestMeta`]); anything else is only checked to be JSON, as it is refused.
enum Params {
    Object(Map<String, Value>, Option<Arc<RequestMeta>>),
    NotAnObject,
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Params, D::Error> {
        struct ParamsVisitor;
        impl<'de> Visitor<'de> for ParamsVisitor {
            type Value = Params;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
                let mut members = Map::new();
                let (mut meta, mut plain_meta) = (None, false);
                while let Some(key) = map.next_key::<String>()? {
                    if key != "_meta" {
                        let value: Value = map.next_value()?;
                        members.insert(key, value);
                        continue;
                    }
                    // A repeated `_meta` keeps its last value, as in a map.
                    let raw: Box<RawValue> = map.next_value()?;
                    // Read as raw text, its nesting was not checked: it is held to the depth a
                    // value there may have (the body's and the params' objects enclose it).
                    // (Each level takes two bytes: shorter text is not scanned.)
                    if raw.get().len() > 2 * MAX_META_DEPTH && meta::nesting_depth(raw.get()) > MAX_META_DEPTH {
                        return Err(serde::de::Error::custom("recursion limit exceeded"));
                    }
                    if raw.get().starts_with('{') {
                        meta = Some(Arc::new(RequestMeta::from_raw(raw).map_err(serde::de::Error::custom)?));
                        if plain_meta {
                            members.shift_remove("_meta");
                            plain_meta = false;
                        }
                    } else {
                        let value: Value = serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
                        members.insert(key, value);
                        (meta, plain_meta) = (None, true);
                    }
                }
                Ok(Params::Object(members, meta))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
                // Read as values (refused all the same) so that nesting is held to the same limit.
                while seq.next_element::<Value>()?.is_some() {}
                Ok(Params::NotAnObject)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
            fn visit_str<E>(self, _: &str) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
            fn visit_unit<E>(self) -> Result<Params, E> {
                Ok(Params::NotAnObject)
            }
        }
        deserializer.deserialize_any(ParamsVisitor)
    }
}

/// A member name of a message object, matched while it is read.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Body, D::Error> {
        struct BodyVisitor;
        impl<'de> serde::de::Visitor<'de> for BodyVisitor {
            type Value = Body;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Body, A::Error> {
                let mut envelope = Envelope::default();
                while let Some(member) = map.next_key::<Member>()? {
                    let slot = match member {
                        Member::Params => {
                            envelope.params = Some(map.next_value()?);
                            continue;
                        }
                        Member::Other => {
                            map.next_value::<Value>()?;
                            continue;
                        }
                        Member::Jsonrpc => &mut envelope.jsonrpc,
                        Member::Id => &mut envelope.id,
                        Member::Method => &mut envelope.method,
                        Member::Result => &mut envelope.result,
                        Member::Error => &mut envelope.error,
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(Body::Message(Box::new(envelope)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element::<Value>()? {
                    items.push(item);
                }
                Ok(Body::Batch(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
            fn visit_str<E>(self, _: &str) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
            fn visit_unit<E>(self) -> Result<Body, E> {
                Ok(Body::NotAnObject)
            }
        }
        deserializer.deserialize_any(BodyVisitor)
    }
}

fn not_an_object() -> Rejection {
    Rejection::invalid(None, "a message must be a JSON object")
}

/// Parses a body that must be exactly one message (stdio lines of revisions without batches use
/// [`parse`] too; this is for callers that never accept arrays).
///
/// # Errors
/// As [`parse`], plus `-32600` for an array.
pub fn parse_single(bytes: &[u8]) -> Result<Message, Rejection> {
    match parse(bytes)? {
        Incoming::Single(message) => Ok(message),
        Incoming::Batch(_) => Err(Rejection::invalid(None, "batches are not accepted here")),
    }
}

/// Turns one JSON value into a message, checking the JSON-RPC 2.0 rules MCP relies on.
///
/// # Errors
/// `-32600` with the id echoed when it is a readable string or integer.
pub fn classify(value: Value) -> Result<Message, Rejection> {
    match value {
        Value::Object(object) => classify_envelope(Envelope::from_map(object)),
        _ => Err(not_an_object()),
    }
}

fn classify_envelope(envelope: Envelope) -> Result<Message, Rejection> {
    let id = match envelope.id {
        None => None,
        Some(raw) => match RequestId::from_value(&raw) {
            Some(id) => Some(id),
            None => return Err(Rejection::invalid(None, "id must be a string or an integer")),
        },
    };
    match envelope.jsonrpc {
        Some(Value::String(v)) if v == JSONRPC_VERSION => {}
        _ => return Err(Rejection::invalid(id, "jsonrpc must be \"2.0\"")),
    }
    let method = match envelope.method {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(_) => return Err(Rejection::invalid(id, "method must be a non-empty string")),
        None => return classify_response(id, envelope.result, envelope.error),
    };
    let (params, meta) = match envelope.params {
        None => (None, None),
        Some(Params::Object(params, meta)) => (Some(params), meta),
        Some(Params::NotAnObject) => return Err(Rejection::invalid(id, "params must be an object")),
    };
    Ok(match id {
        Some(id) => Message::Request(Request { id, method, params, meta }),
        // A notification's params stay whole.
        None => {
            let params = params.map(|mut params| {
                if let Some(meta) = meta {
                    let meta = Arc::unwrap_or_clone(meta).into_map();
                    params.insert("_meta".into(), Value::Object(meta));
                }
                params
            });
            Message::Notification(Notification { method, params })
        }
    })
}

fn classify_response(id: Option<RequestId>, result: Option<Value>, error: Option<Value>) -> Result<Message, Rejection> {
    let outcome = match (result, error) {
        (Some(result), None) if id.is_some() => Ok(result),
        (None, Some(error)) => match serde_json::from_value::<ErrorObject>(error) {
            Ok(error) => Err(error),
            Err(_) => return Err(Rejection::invalid(id, "error must have an integer code and a message")),
        },
        _ => return Err(Rejection::invalid(id, "method is required")),
    };
    Ok(Message::Response(Response { id, outcome }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejection(body: &str) -> Rejection {
        parse(body.as_bytes()).expect_err("must be rejected")
    }

    #[test]
    fn invalid_json_is_a_parse_error_without_id() {
        let r = rejection("{invalid");
        assert_eq!(r.error.code, ErrorCode::PARSE_ERROR);
        assert_eq!(r.id, None);
    }

    #[test]
    fn nesting_beyond_the_recursion_limit_is_a_parse_error() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(rejection(&deep).error.code, ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn wrong_jsonrpc_echoes_the_id() {
        let r = rejection(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!(r.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(r.id, Some(RequestId::Number(7)));
    }

    #[test]
    fn unreadable_ids_are_not_echoed() {
        for body in [
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
        ] {
            let r = rejection(body);
            assert_eq!(r.error.code, ErrorCode::INVALID_REQUEST, "{body}");
            assert_eq!(r.id, None, "{body}");
        }
    }

    #[test]
    fn missing_method_and_non_object_params_are_invalid() {
        assert_eq!(rejection(r#"{"jsonrpc":"2.0","id":"a"}"#).id, Some(RequestId::from("a")));
        let r = rejection(r#"{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}"#);
        assert_eq!(r.error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(r.id, Some(RequestId::Number(2)));
        assert_eq!(rejection("42").error.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(rejection("[]").error.code, ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let Ok(Incoming::Single(Message::Request(r))) =
            parse(br#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"cursor":"c"}}"#)
        else {
            panic!("request expected")
        };
        assert_eq!(r.method, "tools/list");
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Incoming::Single(Message::Notification(_)))
        ));
        let Ok(Incoming::Single(Message::Response(resp))) =
            parse(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#)
        else {
            panic!("response expected")
        };
        assert_eq!(resp.outcome.unwrap_err().code, ErrorCode(-1));
    }

    #[test]
    fn batches_judge_each_element() {
        let Ok(Incoming::Batch(items)) =
            parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2}]"#)
        else {
            panic!("batch expected")
        };
        assert!(items[0].is_ok());
        assert_eq!(items[1].as_ref().unwrap_err().id, Some(RequestId::Number(2)));
    }

    #[test]
    fn reading_the_envelope_directly_agrees_with_reading_a_value() {
        let via_value = |body: &[u8]| -> Result<Incoming, Rejection> {
            match serde_json::from_slice::<Value>(body).map_err(Rejection::parse)? {
                Value::Array(items) if items.is_empty() => Err(Rejection::invalid(None, "empty batch")),
                Value::Array(items) => Ok(Incoming::Batch(items.into_iter().map(classify).collect())),
                other => classify(other).map(Incoming::Single),
            }
        };
        let bodies: [&[u8]; 24] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"extra":[1,{"b":2}]}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":"two","method":"m","method":"n"}"#,
            br#"{"json\u0072pc":"2.0","\u0069d":1,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","x":1e400}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"x\":\"\xff\"}",
            br#"{"jsonrpc":"2.0","id":1"#,
            br#"{"jsonrpc":"2.0","method":"n"} x"#,
            br#"{"a":1,}"#,
            br#"{1:2}"#,
            br#"[{"jsonrpc":"2.0","method":"n"},7,{"id":1}]"#,
            b"[,]",
            b"[]",
            b"{}",
            b"",
            b"  ",
            b"null",
            b"true",
            br#""s""#,
            b"1.5",
            b"-3",
            b"18446744073709551615",
            b"  {\"jsonrpc\" : \"2.0\" , \"method\" : \"n\" }  ",
        ];
        for body in bodies {
            assert_eq!(parse(body), via_value(body), "{}", String::from_utf8_lossy(body));
        }
        for depth in [126, 127, 128, 200] {
            let deep =
                format!(r#"{{"jsonrpc":"2.0","method":"n","params":{}1{}}}"#, "[".repeat(depth), "]".repeat(depth));
            assert_eq!(parse(deep.as_bytes()), via_value(deep.as_bytes()), "depth {depth}");
        }
    }

    #[test]
    fn a_requests_meta_is_read_apart_and_agrees_with_reading_a_value() {
        let via_value = |body: &str| match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(object)) => classify(Value::Object(object)),
            other => panic!("{other:?}"),
        };
        let single = |body: &str| match parse(body.as_bytes()) {
            Ok(Incoming::Single(message)) => Ok(message),
            Ok(batch) => panic!("{batch:?}"),
            Err(rejection) => Err(rejection),
        };
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p","own":{"x":[1]}}"#;
        let bodies = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","_meta":{meta},"arguments":{{}}}}}}"#
            ),
            // Repeated: the last one counts, whatever it is.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{meta},"_meta":{{"progressToken":2}}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{meta},"_meta":7}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":7,"a":1,"_meta":{meta}}}}}"#),
            // Not an object: an ordinary member.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[1],"a":1}}"#.to_owned(),
            // A notification keeps it among its params.
            format!(r#"{{"jsonrpc":"2.0","method":"n","params":{{"_meta":{meta},"a":1}}}}"#),
        ];
        for body in &bodies {
            assert_eq!(single(body), via_value(body), "{body}");
        }
        let Ok(Message::Request(request)) = single(&bodies[0]) else { panic!("a request") };
        assert_eq!(request.params, json!({"name": "t", "arguments": {}}).as_object().cloned());
        let read = request.meta().expect("its _meta");
        assert_eq!(read.progress_token(), Some(&json!("p")));
        assert_eq!(Value::Object(read.map().clone()), serde_json::from_str::<Value>(meta).unwrap());
        let Ok(Message::Notification(note)) = single(&bodies[5]) else { panic!("a notification") };
        assert_eq!(note.params.unwrap()["_meta"]["progressToken"], json!("p"));
        // Nesting inside `_meta` is held to the limit a value there has.
        for (depth, refused) in [(124, false), (125, false), (126, true), (200, true)] {
            let deep = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"a":{}1{}}}}}}}"#,
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            );
            let (ours, theirs) = (single(&deep), serde_json::from_str::<Value>(&deep));
            assert_eq!(theirs.is_err(), refused, "depth {depth}");
            match ours {
                Err(rejection) => assert!(refused && rejection.error.code == ErrorCode::PARSE_ERROR, "depth {depth}"),
                Ok(message) => assert!(!refused && Ok(message) == via_value(&deep), "depth {depth}"),
            }
        }
    }
}
