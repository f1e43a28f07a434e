//! Request bodies, written straight from the caller's params (no copy of the params into a new
//! JSON value): `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`. A stateless request's params
//! are the caller's without their `_meta`, then the MRTR fields, then a `_meta` whose members
//! are the caller's own (rare) followed by ours, which were serialized once when the link was
//! made ([`StatelessMeta`]).

use mcpd::jsonrpc::{self, RequestId};
use serde::ser::SerializeStruct as _;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A handshake-era request's JSON-RPC envelope, the caller's params as they are.
pub(super) struct RequestBody<'a> {
    pub(super) id: &'a RequestId,
    pub(super) method: &'a str,
    pub(super) params: &'a Map<String, Value>,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_struct("Request", 4)?;
        body.serialize_field("jsonrpc", jsonrpc::JSONRPC_VERSION)?;
        body.serialize_field("id", self.id)?;
        body.serialize_field("method", self.method)?;
        body.serialize_field("params", self.params)?;
        body.end()
    }
}

/// The `_meta` members every stateless request carries (revision, client info, capabilities),
/// serialized once: their keys, and `"key":value,…` without the braces.
pub(super) struct StatelessMeta {
    keys: Vec<String>,
    members: Vec<u8>,
}

impl StatelessMeta {
    pub(super) fn new(meta: &Map<String, Value>) -> StatelessMeta {
        let mut members = serde_json::to_vec(meta).unwrap_or_else(|_| b"{}".to_vec());
        // `{…}` → `…`: a map always serializes with its braces.
        members.pop();
        members.remove(0);
        StatelessMeta { keys: meta.keys().cloned().collect(), members }
    }

    /// A stateless request's body: `params` without its `_meta`, then `extra` (`inputResponses`,
    /// `requestState` — the latter byte for byte as received), then `_meta`: the caller's own
    /// members that ours do not replace, then ours.
    pub(super) fn body(
        &self,
        id: &RequestId,
        method: &str,
        params: &Map<String, Value>,
        extra: &[(&str, &Value)],
    ) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(128 + self.members.len());
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id)?;
        out.extend_from_slice(br#","method":"#);
        serde_json::to_writer(&mut out, method)?;
        out.extend_from_slice(br#","params":{"#);
        let mut own_meta = None;
        for (key, value) in params {
            if key == "_meta" {
                own_meta = value.as_object();
                continue;
            }
            member(&mut out, key, value)?;
        }
        for (key, value) in extra {
            member(&mut out, key, value)?;
        }
        out.extend_from_slice(br#""_meta":{"#);
        for (key, value) in own_meta.into_iter().flatten() {
            if !self.keys.iter().any(|ours| ours == key) {
                member(&mut out, key, value)?;
            }
        }
        out.extend_from_slice(&self.members);
        if self.members.is_empty() && out.last() == Some(&b',') {
            out.pop();
        }
        out.extend_from_slice(b"}}}");
        Ok(out)
    }
}

/// Writes `"key":value,`.
fn member(out: &mut Vec<u8>, key: &str, value: &Value) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    serde_json::to_writer(&mut *out, value)?;
    out.push(b',');
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn meta(value: Value) -> StatelessMeta {
        StatelessMeta::new(value.as_object().unwrap())
    }

    #[test]
    fn stateless_params_drop_the_callers_meta_and_end_with_the_extra_fields_and_ours() {
        let ours = meta(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "v": {"a": [1, "x"]}}));
        let params = json!({"name": "t", "_meta": {"own": 1, "v": "replaced"}, "arguments": {"a": 1}});
        let state = json!("opaque \"state\"");
        let responses = json!({"k": {"action": "accept"}});
        let extra = [("inputResponses", &responses), ("requestState", &state)];
        let body = ours.body(&RequestId::Number(7), "tools/call", params.as_object().unwrap(), &extra).unwrap();
        let text = String::from_utf8(body).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"a":1},"#,
                r#""inputResponses":{"k":{"action":"accept"}},"requestState":"opaque \"state\"","#,
                r#""_meta":{"own":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","v":{"a":[1,"x"]}}}}"#
            )
        );
        // It is one JSON object, whose _meta has each key once.
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["params"]["_meta"]["v"], json!({"a": [1, "x"]}));
    }

    #[test]
    fn stateless_bodies_are_valid_json_whatever_is_empty() {
        let empty = Map::new();
        let none = meta(json!({}));
        let body = none.body(&RequestId::String("a\"b".into()), "m", &empty, &[]).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"m","params":{"_meta":{}}}"#
        );
        let own_only = json!({"_meta": {"own": true}, "x": null});
        let body = none.body(&RequestId::Number(1), "m", own_only.as_object().unwrap(), &[]).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"x": null, "_meta": {"own": true}}})
        );
        let ours = meta(json!({"k": 1}));
        let body = ours.body(&RequestId::Number(2), "m", &empty, &[]).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"k":1}}}"#
        );
    }

    #[test]
    fn handshake_bodies_carry_the_params_as_they_are() {
        let params = json!({"name": "t", "_meta": {"own": 1}, "arguments": {"a": 1}});
        let plain = RequestBody { id: &RequestId::Number(8), method: "m", params: params.as_object().unwrap() };
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"jsonrpc":"2.0","id":8,"method":"m","params":{"name":"t","_meta":{"own":1},"arguments":{"a":1}}}"#
        );
    }
}
