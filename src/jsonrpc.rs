//! JSON-RPC 2.0 envelopes: parsing with the exact error for each malformation, and serialization
//! of the answers.
//!
//! This module knows nothing of MCP. It turns bytes into [`Incoming`] (one message or a batch)
//! and reports every malformed input as a [`Rejection`] carrying the JSON-RPC error and, when it
//! could be read, the request id to echo. The body is parsed once: a message object's members
//! are read straight into their slots (no map is built for the envelope) and their
//! [`serde_json::Value`]s moved, never cloned, into the typed envelopes. A request's `_meta` is
//! the exception: it is kept as text and read for the members the runtime uses, never built as
//! a map unless a handler asks for it ([`RequestMeta`]).

use std::fmt;
use std::sync::Arc;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod meta;

pub(crate) use meta::MetaMember;
pub use meta::{ClientCapabilities, RequestMeta, TRACEPARENT, TRACESTATE};

/// The `jsonrpc` member every message must carry.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer, never `null` (MCP forbids null ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(Arc::from(s))
    }
}

impl RequestId {
    /// Reads an id from a JSON value: strings and integers only.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::String(Arc::from(s.as_str()))),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }
}

/// A JSON-RPC error code. The named constants cover JSON-RPC itself and the codes MCP defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available in this era.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters (also: unknown tool, prompt or, from 2026-07-28, resource).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// Implementation-defined: the request carried no valid key.
    pub const UNAUTHORIZED: ErrorCode = ErrorCode(-32001);
    /// MCP up to 2025-11-25: the resource does not exist.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP 2026-07-28: a routing header disagrees with the body or is missing.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// MCP 2026-07-28: the request needs a client capability it did not declare.
    pub const MISSING_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// MCP 2026-07-28: the protocol version is not implemented.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short human-readable description.
    pub message: String,
    /// Structured detail, when the protocol defines some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error without data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Adds structured data.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params object (MCP params are always objects), without a `_meta` object: that is
    /// [`Request::meta`].
    pub params: Option<Map<String, Value>>,
    /// The params' `_meta` object, kept apart ([`RequestMeta`]: what the runtime reads of it is
    /// read once, the rest only when a handler asks). Use [`Request::new`] to build a request
    /// whose params hold one.
    pub meta: Option<Arc<RequestMeta>>,
}

impl Request {
    /// A request; a `_meta` object among `params` is kept apart, as [`parse`] does.
    pub fn new(id: RequestId, method: impl Into<String>, params: Option<Map<String, Value>>) -> Request {
        let (params, meta) = match params {
            Some(params) => {
                let (params, meta) = split_meta(params);
                (Some(params), meta)
            }
            None => (None, None),
        };
        Request { id, method: method.into(), params, meta: meta.map(Arc::new) }
    }

    /// The params' `_meta` object.
    pub fn meta(&self) -> Option<&RequestMeta> {
        self.meta.as_deref()
    }
}

/// `params` without a `_meta` object, and that object.
fn split_meta(mut params: Map<String, Value>) -> (Map<String, Value>, Option<RequestMeta>) {
    if !matches!(params.get("_meta"), Some(Value::Object(_))) {
        return (params, None);
    }
    match params.shift_remove("_meta") {
        Some(Value::Object(meta)) => (params, Some(RequestMeta::from_map(meta))),
        _ => (params, None),
    }
}

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params object.
    pub params: Option<Map<String, Value>>,
}

/// A response sent to us (the answer to a request we sent to the peer).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request it answers; absent only on an error whose request id was unreadable.
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub outcome: Result<Value, ErrorObject>,
}

/// One well-formed JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response to one of our requests.
    Response(Response),
}

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

/// A response we send: borrowed parts serialized straight to bytes, without building a `Value`.
#[derive(Debug, Clone, Copy)]
pub enum Outgoing<'a> {
    /// A success.
    Result {
        /// The request id.
        id: &'a RequestId,
        /// The result object.
        result: &'a Value,
    },
    /// An error; `id` is serialized as `null` when absent.
    Error {
        /// The request id, when known.
        id: Option<&'a RequestId>,
        /// The error.
        error: &'a ErrorObject,
    },
}

impl Serialize for Outgoing<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Response", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        match self {
            Outgoing::Result { id, result } => {
                s.serialize_field("id", id)?;
                s.serialize_field("result", result)?;
            }
            Outgoing::Error { id, error } => {
                s.serialize_field("id", id)?;
                s.serialize_field("error", error)?;
            }
        }
        s.end()
    }
}

impl Outgoing<'_> {
    /// Serializes to compact JSON bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        // Serializing these types cannot fail: every key is a string and no map has non-string keys.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Serializes a success response around any serializable result (a typed one is written straight
/// out, with no `Value` built for it); the bytes are those of [`Outgoing::Result`].
pub fn result_bytes<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a, R: ?Sized> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: &'a R,
    }
    // As for `Outgoing`: every key is a string, so serializing cannot fail.
    serde_json::to_vec(&Out { jsonrpc: JSONRPC_VERSION, id, result }).unwrap_or_default()
}

/// Serializes a notification or a request that we send to the peer.
pub fn outgoing_message(id: Option<&RequestId>, method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a> {
        jsonrpc: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a RequestId>,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    serde_json::to_vec(&Out { jsonrpc: JSONRPC_VERSION, id, method, params }).unwrap_or_default()
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

    #[test]
    fn outgoing_error_serializes_null_id() {
        let e = ErrorObject::new(ErrorCode::PARSE_ERROR, "bad");
        let v: Value = serde_json::from_slice(&Outgoing::Error { id: None, error: &e }.to_vec()).unwrap();
        assert_eq!(v, json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}));
    }
}
