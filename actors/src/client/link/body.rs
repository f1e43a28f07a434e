//! Request bodies, written straight from the caller's params (no copy of the params into a new
//! JSON value): `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`. A stateless request's params
//! are the caller's without their `_meta`, then the MRTR fields, then a `_meta` whose members
//! are the caller's own (rare) followed by ours, which were serialized once when the link was
//! made ([`StatelessMeta`]).

use mcpd::jsonrpc::{self, RequestId, BAGGAGE, TRACEPARENT, TRACESTATE};
use mcpd::model::meta_keys;
use serde::ser::SerializeStruct as _;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::telemetry::Propagation;

/// Whether `key` is a W3C trace context member (the request's span replaces the caller's).
fn is_trace_key(key: &str) -> bool {
    key == TRACEPARENT || key == TRACESTATE || key == BAGGAGE
}

/// A handshake-era request's JSON-RPC envelope, the caller's params as they are — but for the
/// trace context of the request's span, which replaces the caller's in `_meta` when given.
pub(super) struct RequestBody<'a> {
    pub(super) id: &'a RequestId,
    pub(super) method: &'a str,
    pub(super) params: &'a Map<String, Value>,
    pub(super) trace: Option<&'a Propagation>,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_struct("Request", 4)?;
        body.serialize_field("jsonrpc", jsonrpc::JSONRPC_VERSION)?;
        body.serialize_field("id", self.id)?;
        body.serialize_field("method", self.method)?;
        match self.trace {
            None => body.serialize_field("params", self.params)?,
            Some(trace) => body.serialize_field("params", &Traced { params: self.params, trace })?,
        }
        body.end()
    }
}

/// Params whose `_meta` carries `trace` instead of the caller's trace context.
struct Traced<'a> {
    params: &'a Map<String, Value>,
    trace: &'a Propagation,
}

impl Serialize for Traced<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.params.iter().filter(|(key, _)| *key != "_meta") {
            map.serialize_entry(key, value)?;
        }
        let mut meta: Map<String, Value> = match self.params.get("_meta") {
            Some(Value::Object(own)) => {
                own.iter().filter(|(k, _)| !is_trace_key(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
            }
            _ => Map::new(),
        };
        self.trace.write_into(&mut meta);
        map.serialize_entry("_meta", &meta)?;
        map.end()
    }
}

/// The `_meta` members every stateless request carries (revision, client info, capabilities),
/// serialized once: their keys, and `"key":value,…` without the braces. A call may declare
/// its caller's capabilities instead of the link's ([`crate::client::CallHandlers::capabilities`]):
/// the members but the capabilities are kept apart for that, and so are the capabilities the
/// link declares (only those are passed on) and its `extensions` (kept: the link handles them).
pub(super) struct StatelessMeta {
    keys: Vec<String>,
    members: Vec<u8>,
    /// The members without the capabilities, each followed by a comma.
    fixed: Vec<u8>,
    /// The capabilities the link declares, but `extensions`.
    forwarded: Vec<String>,
    /// `"extensions":{…},` as the link declares them (empty: none).
    extensions: Vec<u8>,
}

impl StatelessMeta {
    pub(super) fn new(meta: &Map<String, Value>) -> StatelessMeta {
        let mut members = serde_json::to_vec(meta).unwrap_or_else(|_| b"{}".to_vec());
        // `{…}` → `…`: a map always serializes with its braces.
        members.pop();
        members.remove(0);
        let (mut fixed, mut forwarded, mut extensions) = (Vec::new(), Vec::new(), Vec::new());
        for (key, value) in meta {
            if key != meta_keys::CLIENT_CAPABILITIES {
                // Serializing a JSON value into memory cannot fail.
                let _ = member(&mut fixed, key, value);
                continue;
            }
            for (name, declared) in value.as_object().into_iter().flatten() {
                if name == "extensions" {
                    let _ = member(&mut extensions, name, declared);
                } else {
                    forwarded.push(name.clone());
                }
            }
        }
        StatelessMeta { keys: meta.keys().cloned().collect(), members, fixed, forwarded, extensions }
    }

    /// A stateless request's body: `params` without its `_meta`, then `extra` (`inputResponses`,
    /// `requestState` — the latter byte for byte as received), then `_meta`: the caller's own
    /// members that ours do not replace, then ours — with `caller`'s entries as the
    /// capabilities the link declares, when given.
    pub(super) fn body(
        &self,
        id: &RequestId,
        method: &str,
        params: &Map<String, Value>,
        extra: &[(&str, &Value)],
        (caller, trace): (Option<&Value>, Option<&Propagation>),
    ) -> Result<Vec<u8>, serde_json::Error> {
        let params = params.iter().map(|(key, value)| (key.as_str(), Param::Value(value)));
        self.body_of(id, method, params, extra, (caller, trace))
    }

    /// As [`StatelessMeta::body`], from the params' members one by one (a `_meta` among them is
    /// the caller's own): a gateway's call writes its tool's name and the caller's arguments
    /// without putting them in a map first. `trace`, the request's span's context, replaces the
    /// caller's trace context members.
    pub(super) fn body_of<'p>(
        &self,
        id: &RequestId,
        method: &str,
        params: impl IntoIterator<Item = (&'p str, Param<'p>)>,
        extra: &[(&str, &Value)],
        (caller, trace): (Option<&Value>, Option<&Propagation>),
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
            member(&mut out, key, &value)?;
        }
        for (key, value) in extra {
            member(&mut out, key, value)?;
        }
        out.extend_from_slice(br#""_meta":{"#);
        for (key, value) in own_meta.into_iter().flatten() {
            let replaced = self.keys.iter().any(|ours| ours == key) || (trace.is_some() && is_trace_key(key));
            if !replaced {
                member(&mut out, key, value)?;
            }
        }
        if let Some(trace) = trace {
            member(&mut out, TRACEPARENT, &trace.traceparent)?;
            if let Some(state) = &trace.tracestate {
                member(&mut out, TRACESTATE, state)?;
            }
            if let Some(baggage) = &trace.baggage {
                member(&mut out, BAGGAGE, baggage)?;
            }
        }
        match caller {
            None => out.extend_from_slice(&self.members),
            Some(caller) => {
                out.extend_from_slice(&self.fixed);
                serde_json::to_writer(&mut out, meta_keys::CLIENT_CAPABILITIES)?;
                out.extend_from_slice(b":{");
                for name in &self.forwarded {
                    if let Some(declared) = caller.get(name.as_str()).filter(|v| !v.is_null()) {
                        member(&mut out, name, declared)?;
                    }
                }
                out.extend_from_slice(&self.extensions);
                if out.last() == Some(&b',') {
                    out.pop();
                }
                out.push(b'}');
            }
        }
        if out.last() == Some(&b',') {
            out.pop();
        }
        out.extend_from_slice(b"}}}");
        Ok(out)
    }
}

/// A member of a request's params, as [`StatelessMeta::body_of`] writes it.
#[derive(Clone, Copy)]
pub(super) enum Param<'a> {
    /// Any value.
    Value(&'a Value),
    /// An object (a call's arguments, a `_meta`).
    Object(&'a Map<String, Value>),
    /// A string (a tool's name).
    Text(&'a str),
}

impl<'a> Param<'a> {
    fn as_object(self) -> Option<&'a Map<String, Value>> {
        match self {
            Param::Value(value) => value.as_object(),
            Param::Object(object) => Some(object),
            Param::Text(_) => None,
        }
    }
}

impl Serialize for Param<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Param::Value(value) => value.serialize(serializer),
            Param::Object(object) => object.serialize(serializer),
            Param::Text(text) => text.serialize(serializer),
        }
    }
}

/// Writes `"key":value,`.
fn member(out: &mut Vec<u8>, key: &str, value: &impl Serialize) -> Result<(), serde_json::Error> {
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
        let body =
            ours.body(&RequestId::Number(7), "tools/call", params.as_object().unwrap(), &extra, (None, None)).unwrap();
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
        let body = none.body(&RequestId::String("a\"b".into()), "m", &empty, &[], (None, None)).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"m","params":{"_meta":{}}}"#
        );
        let own_only = json!({"_meta": {"own": true}, "x": null});
        let body = none.body(&RequestId::Number(1), "m", own_only.as_object().unwrap(), &[], (None, None)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"x": null, "_meta": {"own": true}}})
        );
        let ours = meta(json!({"k": 1}));
        let body = ours.body(&RequestId::Number(2), "m", &empty, &[], (None, None)).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"k":1}}}"#
        );
    }

    #[test]
    fn a_callers_capabilities_replace_the_links_but_only_those_the_link_declares() {
        let ours = meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {}, "roots": {}, "sampling": {},
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        }));
        let params = json!({"name": "t"});
        let params = params.as_object().unwrap();
        let caller = json!({"elicitation": {"form": {}, "url": {}}, "experimental": {"x": {}}, "roots": null});
        let body = ours.body(&RequestId::Number(3), "tools/call", params, &[], (Some(&caller), None)).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            concat!(
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","_meta":{"#,
                r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
                r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"#,
                r#""extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#
            )
        );
        // A caller that declared nothing is declared so; without extensions the object is empty.
        let plain = meta(json!({"io.modelcontextprotocol/clientCapabilities": {"roots": {}}, "v": 1}));
        let body = plain.body(&RequestId::Number(4), "m", params, &[], (Some(&json!({})), None)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap()["params"]["_meta"],
            json!({"io.modelcontextprotocol/clientCapabilities": {}, "v": 1})
        );
        // Without a caller's, the link's own.
        let body = plain.body(&RequestId::Number(5), "m", params, &[], (None, None)).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&body).unwrap()["params"]["_meta"]
                ["io.modelcontextprotocol/clientCapabilities"],
            json!({"roots": {}})
        );
    }

    #[test]
    fn the_requests_span_replaces_the_callers_trace_context() {
        let trace = Propagation {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01".into(),
            tracestate: None,
            baggage: Some("user=alice".into()),
        };
        let params = json!({"name": "t", "_meta": {"traceparent": "caller's", "tracestate": "old=1", "own": 1}});
        let params = params.as_object().unwrap();
        let ours = meta(json!({"k": 1}));
        let body = ours.body(&RequestId::Number(9), "tools/call", params, &[], (None, Some(&trace))).unwrap();
        let meta_sent = serde_json::from_slice::<Value>(&body).unwrap()["params"]["_meta"].clone();
        assert_eq!(
            meta_sent,
            json!({"own": 1, "traceparent": trace.traceparent, "baggage": "user=alice", "k": 1}),
            "the caller's tracestate belongs to the caller's span"
        );
        let handshake = RequestBody { id: &RequestId::Number(10), method: "m", params, trace: Some(&trace) };
        let sent: Value = serde_json::from_str(&serde_json::to_string(&handshake).unwrap()).unwrap();
        assert_eq!(
            sent["params"]["_meta"],
            json!({"own": 1, "traceparent": trace.traceparent, "baggage": "user=alice"})
        );
        assert_eq!(sent["params"]["name"], "t");
        // Without a span (telemetry off) the caller's context goes on as it was.
        let untraced = RequestBody { id: &RequestId::Number(11), method: "m", params, trace: None };
        let sent: Value = serde_json::from_str(&serde_json::to_string(&untraced).unwrap()).unwrap();
        assert_eq!(sent["params"]["_meta"]["traceparent"], "caller's");
    }

    #[test]
    fn handshake_bodies_carry_the_params_as_they_are() {
        let params = json!({"name": "t", "_meta": {"own": 1}, "arguments": {"a": 1}});
        let plain =
            RequestBody { id: &RequestId::Number(8), method: "m", params: params.as_object().unwrap(), trace: None };
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"jsonrpc":"2.0","id":8,"method":"m","params":{"name":"t","_meta":{"own":1},"arguments":{"a":1}}}"#
        );
    }
}
