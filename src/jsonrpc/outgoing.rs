//! What we send: [`Outgoing`] responses and [`result_bytes`] around a typed result, and
//! [`outgoing_message`] for our requests and notifications, each serialized straight from
//! borrowed parts to bytes, with no [`serde_json::Value`] built for the envelope.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::error::ErrorObject;
use super::message::{RequestId, JSONRPC_VERSION};

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
    use crate::jsonrpc::error::ErrorCode;
    use serde_json::json;

    #[test]
    fn outgoing_error_serializes_null_id() {
        let e = ErrorObject::new(ErrorCode::PARSE_ERROR, "bad");
        let v: Value = serde_json::from_slice(&Outgoing::Error { id: None, error: &e }.to_vec()).unwrap();
        assert_eq!(v, json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}));
    }
}
