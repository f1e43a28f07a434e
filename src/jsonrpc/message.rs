//! The typed messages: a [`RequestId`], and the [`Request`], [`Notification`] and [`Response`]
//! a well-formed [`Message`] is. A request keeps its params' `_meta` object apart
//! ([`RequestMeta`]); a notification's params stay whole.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::ErrorObject;
use super::meta::RequestMeta;

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
    /// A request; a `_meta` object among `params` is kept apart, as [`parse`](crate::jsonrpc::parse()) does.
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
pub(super) fn split_meta(mut params: Map<String, Value>) -> (Map<String, Value>, Option<RequestMeta>) {
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
