//! Multi round-trip requests (MRTR, 2026-07-28): a tool or prompt that needs input from the client
//! (an elicitation, a sampling call, the client's roots) returns [`InputRequired`] instead of a
//! result. On the stateless wire the server answers `resultType: "input_required"` with the input
//! requests and a sealed `requestState`; the client retries with `inputResponses` and the state
//! byte for byte. In a session (or over stdio) the server fulfils the requests itself over the
//! connection and calls the handler again, so one handler serves both eras.
//!
//! `requestState` is attacker-controlled: [`StateSealer`] binds it with an HMAC-SHA256 to the
//! operation (method + name), a hash of the arguments and an expiry, and rejects anything else.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use derive_more::{Display, Error};
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The client capability each input-request method needs.
pub fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// "I need input from the client before I can answer": keyed input requests, and state to get
/// back on the retry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    requests: Map<String, Value>,
    state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> Self {
        InputRequired::default()
    }

    /// Adds a request `{method, params}` under `key` (keys are unique per request).
    #[must_use]
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.requests.insert(key.into(), json!({ "method": method, "params": params }));
        self
    }

    /// Asks the user to fill in a form (`elicitation/create`).
    #[must_use]
    pub fn elicit(self, key: impl Into<String>, message: &str, requested_schema: Value) -> Self {
        self.request(key, "elicitation/create", json!({ "message": message, "requestedSchema": requested_schema }))
    }

    /// Asks the client's model (`sampling/createMessage`).
    #[must_use]
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, "sampling/createMessage", params)
    }

    /// Asks for the client's roots (`roots/list`).
    #[must_use]
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, "roots/list", json!({}))
    }

    /// State the handler gets back on the retry ([`crate::ToolContext::request_state`]).
    #[must_use]
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The requests, by key.
    pub fn requests(&self) -> &Map<String, Value> {
        &self.requests
    }

    /// The state.
    pub fn state_value(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// Keeps only the requests the client can answer (it declared their capability); returns the
    /// capabilities of the requests dropped.
    pub fn retain_supported(&mut self, client_supports: impl Fn(&str) -> bool) -> Map<String, Value> {
        let mut missing = Map::new();
        self.requests.retain(|_, request| {
            let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
            match capability_for(method) {
                Some(capability) if !client_supports(capability) => {
                    missing.insert(capability.to_owned(), json!({}));
                    false
                }
                _ => true,
            }
        });
        missing
    }

    /// Splits into requests and state.
    pub fn into_parts(self) -> (Map<String, Value>, Option<Value>) {
        (self.requests, self.state)
    }

    /// The round another server asked for (its `input_required` result, e.g. a gateway's
    /// remote) made this server's own: the same requests under the same keys, and that server's
    /// `requestState` kept inside this server's state (so sealed with it), for
    /// [`relayed_retry`] to give back on the retry. At most [`MAX_RELAYED_REQUESTS`] requests.
    ///
    /// # Errors
    /// A message when `result` has no input requests, or one is not `{method, params}` with a
    /// string method.
    pub fn relay(result: &Map<String, Value>) -> Result<InputRequired, String> {
        let Some(requests) = result.get("inputRequests").and_then(Value::as_object) else {
            return Err("its input_required result has no inputRequests object".into());
        };
        if requests.is_empty() || requests.len() > MAX_RELAYED_REQUESTS {
            return Err(format!(
                "its input_required result names {} input requests (1 to {MAX_RELAYED_REQUESTS} may be relayed)",
                requests.len()
            ));
        }
        let mut relayed = InputRequired::new();
        for (key, request) in requests {
            let Some(method) = request.get("method").and_then(Value::as_str) else {
                return Err(format!("its input request {key:?} has no method"));
            };
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            relayed = relayed.request(key.clone(), method, params);
        }
        let state = result.get("requestState").cloned().unwrap_or(Value::Null);
        Ok(relayed.state(json!({ RELAYED_STATE: state })))
    }
}

/// The most input requests one relayed round may carry.
pub const MAX_RELAYED_REQUESTS: usize = 16;

/// The member of a relaying server's state that holds the state of the server it relays for.
const RELAYED_STATE: &str = "relayed";

/// What the retry of a round made with [`InputRequired::relay`] carries on to the server relayed
/// for: the client's responses (an object, empty when none came) and that server's state (none
/// when it sent none). `None` when `state` (this server's verified state) is no relayed round's.
pub fn relayed_retry(responses: Option<&Map<String, Value>>, state: Option<&Value>) -> Option<(Value, Option<Value>)> {
    let relayed = state?.as_object()?.get(RELAYED_STATE)?;
    let responses = Value::Object(responses.cloned().unwrap_or_default());
    Some((responses, Some(relayed.clone()).filter(|s| !s.is_null())))
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum StateError {
    /// Not a state this server issued (bad shape or signature: tampered).
    #[display("requestState failed its integrity check")]
    Tampered,
    /// Issued for another tool, prompt or arguments.
    #[display("requestState was issued for a different request")]
    WrongRequest,
    /// Too old.
    #[display("requestState has expired; start the request again")]
    Expired,
}

type HmacSha256 = Hmac<Sha256>;

/// Seals and opens `requestState` values with a key ring: states are sealed with the current
/// key (the first) and opened with any key of the ring, so that replacing the ring with a new
/// current key followed by the old one breaks no round in flight.
#[derive(Clone)]
pub struct StateSealer {
    /// Never empty (every constructor puts the sealing key first).
    keys: Vec<Vec<u8>>,
    lifetime: Duration,
}

impl std::fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSealer").field("lifetime", &self.lifetime).finish_non_exhaustive()
    }
}

/// How long a sealed state stays valid by default.
pub const DEFAULT_STATE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Writes `value` with object keys sorted at every level, so that equal JSON values give equal
/// bytes whatever order the client sent the keys in.
fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, child)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&serde_json::to_vec(key).unwrap_or_default());
                out.push(b':');
                canonical(child, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(&serde_json::to_vec(scalar).unwrap_or_default()),
    }
}

/// What a state is bound to: the operation and a hash of its arguments.
fn binding(operation: &str, arguments: &Map<String, Value>) -> String {
    let mut bytes = Vec::new();
    canonical(&Value::Object(arguments.clone()), &mut bytes);
    let digest = Sha256::digest(&bytes);
    format!("{operation}\n{}", URL_SAFE_NO_PAD.encode(digest))
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl StateSealer {
    /// A sealer with a given key (at least 32 bytes of secret) and lifetime.
    pub fn new(key: impl Into<Vec<u8>>, lifetime: Duration) -> Self {
        StateSealer { keys: vec![key.into()], lifetime }
    }

    /// A sealer over a key ring: `current` seals, and `current` then each of `previous` open.
    pub fn with_ring(current: impl Into<Vec<u8>>, previous: Vec<Vec<u8>>, lifetime: Duration) -> Self {
        let mut keys = vec![current.into()];
        keys.extend(previous);
        StateSealer { keys, lifetime }
    }

    /// A sealer with a fresh random key (states do not survive a restart).
    ///
    /// # Errors
    /// When the operating system has no randomness to give.
    pub fn random(lifetime: Duration) -> Result<Self, getrandom::Error> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(StateSealer::new(key, lifetime))
    }

    /// The tag of `payload` sealed for `caller`: the caller's identity is part of what is
    /// authenticated, so another caller's state does not verify.
    fn mac(key: &[u8], caller: &str, payload: &[u8]) -> HmacSha256 {
        // HMAC accepts keys of any length.
        let mut mac = HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(caller.as_bytes());
        mac.update(b"\0");
        mac.update(payload);
        mac
    }

    /// Seals `state` for `operation` (e.g. `tools/call:name`) with these arguments, for `caller`
    /// (an [`crate::auth::identity::Identity`]'s text).
    pub fn seal(&self, caller: &str, operation: &str, arguments: &Map<String, Value>, state: &Value) -> String {
        self.seal_at(caller, operation, arguments, state, now_secs())
    }

    fn seal_at(
        &self,
        caller: &str,
        operation: &str,
        arguments: &Map<String, Value>,
        state: &Value,
        now: u64,
    ) -> String {
        let payload = json!({
            "b": binding(operation, arguments),
            "e": now + self.lifetime.as_secs(),
            "s": state,
        });
        let payload = serde_json::to_vec(&payload).unwrap_or_default();
        let tag = Self::mac(&self.keys[0], caller, &payload).finalize().into_bytes();
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(tag))
    }

    /// Opens a state sealed for `caller` and returns what was sealed.
    ///
    /// # Errors
    /// [`StateError`] when the token was altered or sealed for another caller (both read as
    /// tampered), belongs to another request, or expired.
    pub fn open(
        &self,
        caller: &str,
        token: &str,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Value, StateError> {
        self.open_at(caller, token, operation, arguments, now_secs())
    }

    fn open_at(
        &self,
        caller: &str,
        token: &str,
        operation: &str,
        arguments: &Map<String, Value>,
        now: u64,
    ) -> Result<Value, StateError> {
        let (payload, tag) = token.split_once('.').ok_or(StateError::Tampered)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| StateError::Tampered)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateError::Tampered)?;
        if !self.keys.iter().any(|key| Self::mac(key, caller, &payload).verify_slice(&tag).is_ok()) {
            return Err(StateError::Tampered);
        }
        let mut payload: Map<String, Value> = serde_json::from_slice(&payload).map_err(|_| StateError::Tampered)?;
        if payload.get("b").and_then(Value::as_str) != Some(binding(operation, arguments).as_str()) {
            return Err(StateError::WrongRequest);
        }
        if payload.get("e").and_then(Value::as_u64).is_none_or(|expiry| expiry < now) {
            return Err(StateError::Expired);
        }
        Ok(payload.remove("s").unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod relay_tests {
    use super::*;

    #[test]
    fn a_relayed_round_keeps_the_requests_and_wraps_the_remote_state_for_the_retry() {
        let remote = json!({
            "resultType": "input_required",
            "inputRequests": {"name": {"method": "elicitation/create", "params": {"message": "Name?"}}},
            "requestState": "opaque-remote-state"
        });
        let round = InputRequired::relay(remote.as_object().unwrap()).unwrap();
        assert_eq!(round.requests()["name"], json!({"method": "elicitation/create", "params": {"message": "Name?"}}));
        let state = round.state_value().cloned().unwrap();
        let mut responses = Map::new();
        responses.insert("name".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
        let (sent, remote_state) = relayed_retry(Some(&responses), Some(&state)).unwrap();
        assert_eq!(sent, json!({"name": {"action": "accept", "content": {"name": "Ada"}}}));
        assert_eq!(remote_state, Some(json!("opaque-remote-state")), "byte for byte, as the remote sent it");
        // A remote that sent no state gets none back; a request that is no retry is not one.
        let stateless = json!({"inputRequests": {"r": {"method": "roots/list"}}});
        let round = InputRequired::relay(stateless.as_object().unwrap()).unwrap();
        assert_eq!(round.requests()["r"]["params"], json!({}));
        assert_eq!(relayed_retry(None, round.state_value()), Some((json!({}), None)));
        assert_eq!(relayed_retry(Some(&responses), None), None);
        assert_eq!(relayed_retry(Some(&responses), Some(&json!({"other": 1}))), None);
    }

    #[test]
    fn a_round_without_usable_requests_is_refused() {
        for bad in [
            json!({"resultType": "input_required"}),
            json!({"inputRequests": {}}),
            json!({"inputRequests": {"a": {"params": {}}}}),
            json!({"inputRequests": []}),
        ] {
            assert!(InputRequired::relay(bad.as_object().unwrap()).is_err(), "{bad}");
        }
        let many: Map<String, Value> =
            (0..=MAX_RELAYED_REQUESTS).map(|i| (format!("k{i}"), json!({"method": "roots/list"}))).collect();
        let too_many = json!({"inputRequests": many});
        assert!(InputRequired::relay(too_many.as_object().unwrap()).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn sealed_state_round_trips_and_is_bound() {
        let sealer = StateSealer::new(vec![7u8; 32], Duration::from_secs(60));
        let a = args(json!({"x": 1, "y": "z"}));
        let token = sealer.seal("anonymous", "tools/call:t", &a, &json!({"round": 2}));
        assert_eq!(sealer.open("anonymous", &token, "tools/call:t", &a).unwrap(), json!({"round": 2}));
        let reordered = args(json!({"y": "z", "x": 1}));
        assert!(sealer.open("anonymous", &token, "tools/call:t", &reordered).is_ok(), "key order does not matter");
        assert_eq!(sealer.open("anonymous", &token, "tools/call:u", &a), Err(StateError::WrongRequest));
        assert_eq!(
            sealer.open("anonymous", &token, "tools/call:t", &args(json!({"x": 2}))),
            Err(StateError::WrongRequest)
        );
        assert_eq!(sealer.open("anonymous", &format!("{token}x"), "tools/call:t", &a), Err(StateError::Tampered));
        assert_eq!(sealer.open("anonymous", "garbage", "tools/call:t", &a), Err(StateError::Tampered));
        let other = StateSealer::new(vec![8u8; 32], Duration::from_secs(60));
        assert_eq!(other.open("anonymous", &token, "tools/call:t", &a), Err(StateError::Tampered));
        assert_eq!(
            sealer.open("client:ci", &token, "tools/call:t", &a),
            Err(StateError::Tampered),
            "sealed for another caller reads as tampered"
        );
    }

    #[test]
    fn a_ring_opens_with_any_key_and_seals_with_the_current_one() {
        let (old, new) = (vec![1u8; 32], vec![2u8; 32]);
        let a = args(json!({"x": 1}));
        let before = StateSealer::new(old.clone(), Duration::from_secs(60));
        let in_flight = before.seal("anonymous", "op", &a, &json!("round 1"));
        let rotated = StateSealer::with_ring(new.clone(), vec![old], Duration::from_secs(60));
        assert_eq!(
            rotated.open("anonymous", &in_flight, "op", &a).unwrap(),
            json!("round 1"),
            "a rotation breaks no round"
        );
        let sealed = rotated.seal("anonymous", "op", &a, &json!("round 2"));
        assert_eq!(
            StateSealer::new(new, Duration::from_secs(60)).open("anonymous", &sealed, "op", &a).unwrap(),
            json!("round 2")
        );
        assert_eq!(before.open("anonymous", &sealed, "op", &a), Err(StateError::Tampered), "sealed with the new key");
    }

    #[test]
    fn expired_state_is_refused() {
        let sealer = StateSealer::new(vec![7u8; 32], Duration::from_secs(60));
        let a = Map::new();
        let token = sealer.seal_at("anonymous", "op", &a, &json!(1), 1_000);
        assert!(sealer.open_at("anonymous", &token, "op", &a, 1_059).is_ok());
        assert_eq!(sealer.open_at("anonymous", &token, "op", &a, 1_061), Err(StateError::Expired));
    }

    #[test]
    fn unsupported_requests_are_dropped_and_named() {
        let mut ir = InputRequired::new()
            .elicit("e", "name?", json!({"type":"object"}))
            .sample("s", json!({"messages": [], "maxTokens": 5}))
            .list_roots("r");
        let missing = ir.retain_supported(|c| c == "sampling");
        assert_eq!(ir.requests().keys().collect::<Vec<_>>(), vec!["s"]);
        assert_eq!(Value::Object(missing), json!({"elicitation": {}, "roots": {}}));
    }
}
