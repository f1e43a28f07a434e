//! Request bodies, serialized straight from the caller's params (no copy of the params into a
//! new JSON value): `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`, where a stateless
//! request's params are the caller's without their `_meta`, then the MRTR fields, then the
//! merged `_meta`.

use mcpd::jsonrpc::{self, RequestId};
use serde::ser::{SerializeMap as _, SerializeStruct as _};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// One request's JSON-RPC envelope.
pub(super) struct RequestBody<'a> {
    pub(super) id: &'a RequestId,
    pub(super) method: &'a str,
    pub(super) params: Params<'a>,
}

/// The `params` of a [`RequestBody`].
pub(super) enum Params<'a> {
    /// The caller's params as they are (the handshake wires).
    Plain(&'a Map<String, Value>),
    /// A stateless request's: `params` without its `_meta`, then `extra` (`inputResponses`,
    /// `requestState` — the latter byte for byte as received), then `meta`.
    Stateless { params: &'a Map<String, Value>, extra: &'a [(&'a str, &'a Value)], meta: &'a Map<String, Value> },
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_struct("Request", 4)?;
        body.serialize_field("jsonrpc", jsonrpc::JSONRPC_VERSION)?;
        body.serialize_field("id", self.id)?;
        body.serialize_field("method", self.method)?;
        body.serialize_field("params", &self.params)?;
        body.end()
    }
}

impl Serialize for Params<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Params::Plain(params) => params.serialize(serializer),
            Params::Stateless { params, extra, meta } => {
                let mut map = serializer.serialize_map(None)?;
                for (key, value) in params.iter().filter(|(k, _)| k.as_str() != "_meta") {
                    map.serialize_entry(key, value)?;
                }
                for (key, value) in *extra {
                    map.serialize_entry(key, value)?;
                }
                map.serialize_entry("_meta", meta)?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stateless_params_drop_the_callers_meta_and_end_with_the_extra_fields_and_ours() {
        let params = json!({"name": "t", "_meta": {"own": 1}, "arguments": {"a": 1}});
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "own": 1});
        let state = json!("opaque \"state\"");
        let responses = json!({"k": {"action": "accept"}});
        let extra = [("inputResponses", &responses), ("requestState", &state)];
        let body = RequestBody {
            id: &RequestId::Number(7),
            method: "tools/call",
            params: Params::Stateless {
                params: params.as_object().unwrap(),
                extra: &extra,
                meta: meta.as_object().unwrap(),
            },
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            concat!(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"#,
                r#""inputResponses":{"k":{"action":"accept"}},"requestState":"opaque \"state\"","#,
                r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","own":1}}}"#
            )
        );
        let plain =
            RequestBody { id: &RequestId::Number(8), method: "m", params: Params::Plain(params.as_object().unwrap()) };
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"jsonrpc":"2.0","id":8,"method":"m","params":{"name":"t","_meta":{"own":1},"arguments":{"a":1}}}"#
        );
    }
}
