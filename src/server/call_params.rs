//! What a `tools/call`, `prompts/get` or `resources/read` carries: the members of its params
//! object that serving it reads, moved out of the object in one pass over its entries.
//!
//! `Map::get` and `Map::remove` hash their key (SipHash: serde_json's `preserve_order` map), and a
//! call used five of them (`name`, `arguments`, `_meta`, `inputResponses`, `requestState`); a
//! params object holds a handful of members, so matching their names while taking the object
//! apart costs a fraction of that. Members not listed here are dropped: no handler sees them.
//! For the same reason the checks that read one member of a params object (or of its `_meta`)
//! before it is taken apart find it with [`member`].

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::ProtocolError;
use crate::jsonrpc::RequestMeta;

/// The member `key` of a small object, found by comparing the names of its members rather than
/// hashing `key`; a larger object is looked up as usual. (An object has each name once, so both
/// find the same member.)
pub(super) fn member<'m>(object: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    /// Up to this many members a scan compares fewer bytes than SipHash reads.
    const SCAN_UP_TO: usize = 8;
    if object.len() > SCAN_UP_TO {
        return object.get(key);
    }
    object.iter().find_map(|(name, value)| (name == key).then_some(value))
}

/// What the rounds machinery takes from the request: the handler's `_meta` and the MRTR retry
/// members.
#[derive(Debug, Default)]
pub(super) struct RoundInputs {
    /// `_meta` ([`crate::jsonrpc::Request::meta`]).
    pub(super) meta: Option<Arc<RequestMeta>>,
    /// `inputResponses`.
    pub(super) input_responses: Option<Value>,
    /// `requestState`.
    pub(super) request_state: Option<Value>,
}

/// A call's params, taken apart.
#[derive(Debug, Default)]
pub(super) struct CallParams {
    /// The member that names what is called: `name` (tools, prompts) or `uri` (resources).
    pub(super) target: Option<Value>,
    /// `arguments`.
    pub(super) arguments: Option<Value>,
    /// The rest that serving reads.
    pub(super) rounds: RoundInputs,
}

impl CallParams {
    /// Takes `params` apart, with the request's `meta`; `target` is the name of the member that
    /// names what is called.
    pub(super) fn take(params: Map<String, Value>, meta: Option<Arc<RequestMeta>>, target: &str) -> Self {
        let mut taken = CallParams::default();
        taken.rounds.meta = meta;
        for (key, value) in params {
            let slot = match key.as_str() {
                key if key == target => &mut taken.target,
                "arguments" => &mut taken.arguments,
                "inputResponses" => &mut taken.rounds.input_responses,
                "requestState" => &mut taken.rounds.request_state,
                _ => continue,
            };
            *slot = Some(value);
        }
        taken
    }
}

/// A call's `arguments` object (`{}` when absent or null).
///
/// # Errors
/// `-32602` when `arguments` is something else.
pub(super) fn arguments_object(arguments: Option<Value>, method: &str) -> Result<Map<String, Value>, ProtocolError> {
    match arguments {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(arguments)) => Ok(arguments),
        Some(_) => Err(ProtocolError::InvalidParams(format!("{method} arguments must be an object"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_member_lands_in_its_slot_and_others_are_dropped() {
        let params = json!({
            "name": "echo", "arguments": {"text": "hi"},
            "inputResponses": {"a": {}}, "requestState": "s", "uri": "file:///x", "other": 1
        });
        let meta = Arc::new(RequestMeta::from_map(json!({"progressToken": 1}).as_object().cloned().unwrap()));
        let taken = CallParams::take(params.as_object().cloned().unwrap(), Some(meta.clone()), "name");
        assert_eq!(taken.target, Some(json!("echo")));
        assert_eq!(taken.arguments, Some(json!({"text": "hi"})));
        assert_eq!(taken.rounds.meta, Some(meta));
        assert_eq!(taken.rounds.input_responses, Some(json!({"a": {}})));
        assert_eq!(taken.rounds.request_state, Some(json!("s")));
        let by_uri = CallParams::take(params.as_object().cloned().unwrap(), None, "uri");
        assert_eq!(by_uri.target, Some(json!("file:///x")));
        let empty = CallParams::take(Map::new(), None, "name");
        assert!(empty.target.is_none() && empty.arguments.is_none() && empty.rounds.meta.is_none());
    }

    #[test]
    fn a_member_is_found_in_small_and_large_objects_alike() {
        let small = json!({"name": "echo", "arguments": {}, "_meta": {"progressToken": 1}});
        let small = small.as_object().unwrap();
        for key in ["name", "arguments", "_meta", "nam", "names", ""] {
            assert_eq!(member(small, key), small.get(key), "{key}");
        }
        let large: Map<String, Value> = (0..20).map(|i| (format!("k{i}"), json!(i))).collect();
        assert_eq!(member(&large, "k7"), Some(&json!(7)));
        assert_eq!(member(&large, "k20"), None);
    }

    #[test]
    fn arguments_must_be_an_object_or_absent() {
        assert_eq!(arguments_object(None, "tools/call").unwrap(), Map::new());
        assert_eq!(arguments_object(Some(Value::Null), "tools/call").unwrap(), Map::new());
        assert_eq!(
            arguments_object(Some(json!({"a": 1})), "tools/call").unwrap(),
            *json!({"a": 1}).as_object().unwrap()
        );
        let err = arguments_object(Some(json!([1])), "tools/call").unwrap_err();
        assert_eq!(err, ProtocolError::InvalidParams("tools/call arguments must be an object".into()));
    }
}
