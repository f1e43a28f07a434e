//! A received request's `_meta`: kept as the JSON text it arrived as, with the members the
//! runtime itself reads parsed out of it once.
//!
//! A 2026-07-28 request carries its protocol version, client info and client capabilities in
//! `_meta`, on every request. Built as a `serde_json` map, that object (and the client info's and
//! capabilities' own objects) cost the server a large share of a small request's work: every key
//! allocated and hashed (SipHash: the `preserve_order` map), every string copied, then all of it
//! dropped again — and most of it is never read. Here the object is read twice, neither time
//! building it: once as raw text (validated, recursion limit included, as any value), once for
//! the members the runtime reads ([`RequestMeta::protocol_version`], `clientCapabilities`,
//! `logLevel`, `progressToken`, the W3C trace context), skipping the rest. A handler that wants
//! the whole object ([`crate::context::ToolContext::meta`]) gets it parsed on first use.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::model::meta_keys;

/// The W3C trace context keys a request's `_meta` may carry (the gateway forwards them).
pub const TRACEPARENT: &str = "traceparent";
/// See [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";
/// The W3C baggage key a request's `_meta` may carry.
pub const BAGGAGE: &str = "baggage";

/// A W3C trace context as one carrier held it (a request's HTTP headers), as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// `traceparent`.
    pub traceparent: String,
    /// `tracestate`.
    pub tracestate: Option<String>,
    /// `baggage`.
    pub baggage: Option<String>,
}

/// The W3C trace context members of a request's own `_meta` (each a string, else absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceMembers<'a> {
    /// `traceparent`.
    pub traceparent: Option<&'a str>,
    /// `tracestate`.
    pub tracestate: Option<&'a str>,
    /// `baggage`.
    pub baggage: Option<&'a str>,
}

/// A request's `_meta` object: the members the runtime reads, and the whole object on demand.
#[derive(Clone, Default)]
pub struct RequestMeta {
    /// The object's text as received; `None` when built from a map (which `map` then holds).
    raw: Option<Box<RawValue>>,
    /// The whole object: parsed from `raw` on first use, or given.
    map: OnceLock<Map<String, Value>>,
    known: Known,
    /// The trace context of the transport the request came over (its HTTP headers), kept apart
    /// from `_meta`'s own ([`RequestMeta::add_trace_context`]).
    transport: Option<Box<TraceContext>>,
    /// Whether `_meta`'s trace members were copied from `transport` (the request had none).
    carried: bool,
}

/// The members the runtime reads (`None`: absent). A repeated member keeps its last value, as
/// in a map.
#[derive(Debug, Clone, Default, PartialEq)]
struct Known {
    protocol_version: Option<Value>,
    client_capabilities: Option<ClientCapabilities>,
    log_level: Option<Value>,
    progress_token: Option<Value>,
    traceparent: Option<Value>,
    tracestate: Option<Value>,
    baggage: Option<Value>,
}

/// A member of `_meta` the runtime reads, by its key: the one table of those keys (the parse,
/// a map's reading, [`RequestMeta::get`] and the server's reading of a notification's `_meta`
/// all go through [`MetaMember::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaMember {
    ProtocolVersion,
    ClientCapabilities,
    LogLevel,
    ProgressToken,
    Traceparent,
    Tracestate,
    Baggage,
    /// Any other key.
    Other,
}

impl MetaMember {
    pub(crate) fn of(key: &str) -> MetaMember {
        match key {
            meta_keys::PROTOCOL_VERSION => MetaMember::ProtocolVersion,
            meta_keys::CLIENT_CAPABILITIES => MetaMember::ClientCapabilities,
            meta_keys::LOG_LEVEL => MetaMember::LogLevel,
            meta_keys::PROGRESS_TOKEN => MetaMember::ProgressToken,
            TRACEPARENT => MetaMember::Traceparent,
            TRACESTATE => MetaMember::Tracestate,
            BAGGAGE => MetaMember::Baggage,
            _ => MetaMember::Other,
        }
    }
}

/// Read as a key, without copying it.
impl<'de> Deserialize<'de> for MetaMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<MetaMember, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = MetaMember;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, key: &str) -> Result<MetaMember, E> {
                Ok(MetaMember::of(key))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

impl Known {
    /// Sets `member` (not [`MetaMember::Other`]: ignored).
    fn set(&mut self, member: MetaMember, value: Value) {
        let slot = match member {
            MetaMember::ProtocolVersion => &mut self.protocol_version,
            MetaMember::ClientCapabilities => {
                self.client_capabilities = Some(ClientCapabilities::from(value));
                return;
            }
            MetaMember::LogLevel => &mut self.log_level,
            MetaMember::ProgressToken => &mut self.progress_token,
            MetaMember::Traceparent => &mut self.traceparent,
            MetaMember::Tracestate => &mut self.tracestate,
            MetaMember::Baggage => &mut self.baggage,
            MetaMember::Other => return,
        };
        *slot = Some(value);
    }

    fn get(&self, member: MetaMember) -> Option<&Value> {
        match member {
            MetaMember::ProtocolVersion => self.protocol_version.as_ref(),
            MetaMember::ClientCapabilities => self.client_capabilities.as_ref().map(ClientCapabilities::value),
            MetaMember::LogLevel => self.log_level.as_ref(),
            MetaMember::ProgressToken => self.progress_token.as_ref(),
            MetaMember::Traceparent => self.traceparent.as_ref(),
            MetaMember::Tracestate => self.tracestate.as_ref(),
            MetaMember::Baggage => self.baggage.as_ref(),
            MetaMember::Other => None,
        }
    }

    fn of_map(map: &Map<String, Value>) -> Known {
        let mut known = Known::default();
        for (key, value) in map {
            let member = MetaMember::of(key);
            if member != MetaMember::Other {
                known.set(member, value.clone());
            }
        }
        known
    }
}

impl<'de> Deserialize<'de> for Known {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Known, D::Error> {
        struct KnownVisitor;
        impl<'de> Visitor<'de> for KnownVisitor {
            type Value = Known;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Known, A::Error> {
                let mut known = Known::default();
                while let Some(member) = map.next_key::<MetaMember>()? {
                    match member {
                        MetaMember::Other => {
                            map.next_value::<Skip>()?;
                        }
                        // Kept as text: checked, and whether it declares tasks noted, but not built.
                        MetaMember::ClientCapabilities => {
                            let text: &RawValue = map.next_value()?;
                            let mut reader = serde_json::Deserializer::from_str(text.get());
                            let found =
                                Path(&crate::tasks::TASKS_PATH).deserialize(&mut reader).map_err(A::Error::custom)?;
                            known.client_capabilities = Some(ClientCapabilities::from_text(text.get(), found));
                        }
                        member => known.set(member, map.next_value()?),
                    }
                }
                Ok(known)
            }
        }
        deserializer.deserialize_map(KnownVisitor)
    }
}

/// A member the runtime does not read, read through and dropped: checked exactly as it would be
/// when read as a [`Value`] (strings decoded, escapes and numbers checked, nesting counted), but
/// nothing built.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Skip, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

/// [`Skip`]'s visitor (also [`Path`]'s for what is off its path).
struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// How deeply `text` (a JSON value) nests: `1` for `{}`, `2` for `{"a":[]}`; strings are
/// skipped (their brackets do not count).
pub(super) fn nesting_depth(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A client's declared capabilities, shared by a request's parse, its scope and its handler's
/// context. Those a 2026-07-28 request declares in its `_meta` are kept as the text they arrived
/// as (checked as a value would be) and parsed into a [`Value`] only when something reads them
/// ([`ClientCapabilities::value`], or through `Deref`); whether they declare the tasks extension,
/// which every `tools/call` asks, is noted while they are checked.
#[derive(Clone)]
pub struct ClientCapabilities(Arc<Declared>);

struct Declared {
    /// The text as received (a JSON value); `None` when made from a value.
    text: Option<Box<str>>,
    value: OnceLock<Value>,
    is_object: bool,
    declares_tasks: bool,
}

impl ClientCapabilities {
    /// Capabilities kept as `text`, which [`Path`] read without error, finding `found`.
    fn from_text(text: &str, found: Found) -> ClientCapabilities {
        if text == "{}" {
            // Built for nothing: cheaper than a copy of the text.
            return ClientCapabilities::from(Value::Object(Map::new()));
        }
        ClientCapabilities(Arc::new(Declared {
            text: Some(text.into()),
            value: OnceLock::new(),
            is_object: found.object,
            declares_tasks: found.present,
        }))
    }

    /// The capabilities as a JSON value (parsed on first use).
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            // The text was read as a JSON value already: it parses.
            self.0.text.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default()
        })
    }

    /// Whether they are a JSON object (as a request must declare them), without parsing them.
    pub fn is_object(&self) -> bool {
        self.0.is_object
    }

    /// Whether they declare the tasks extension ([`crate::tasks::declares_tasks`]), without
    /// parsing them.
    pub fn declares_tasks(&self) -> bool {
        self.0.declares_tasks
    }
}

impl From<Value> for ClientCapabilities {
    fn from(value: Value) -> ClientCapabilities {
        ClientCapabilities(Arc::new(Declared {
            text: None,
            is_object: value.is_object(),
            declares_tasks: crate::tasks::declares_tasks(&value),
            value: OnceLock::from(value),
        }))
    }
}

impl std::ops::Deref for ClientCapabilities {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for ClientCapabilities {
    fn eq(&self, other: &ClientCapabilities) -> bool {
        self.value() == other.value()
    }
}

impl fmt::Debug for ClientCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.0.text, self.0.value.get()) {
            (_, Some(value)) => value.fmt(f),
            (Some(text), None) => f.write_str(text),
            (None, None) => f.write_str("null"),
        }
    }
}

impl serde::Serialize for ClientCapabilities {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

/// What [`Path`] found in a value it read through.
#[derive(Default)]
struct Found {
    /// The value is an object.
    object: bool,
    /// The path leads to a member that is not `null` (the last of a repeated key counting, as in
    /// a map).
    present: bool,
}

/// Reads a value through as [`Skip`] does (checked as a value would be, nothing built) and finds
/// whether a path of keys leads to a member that is not `null` in it.
struct Path<'p>(&'p [&'static str]);

impl<'de> DeserializeSeed<'de> for Path<'_> {
    type Value = Found;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Path<'_> {
    type Value = Found;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let mut found = Found { object: true, present: self.0.is_empty() };
        let Some((first, rest)) = self.0.split_first() else {
            SkipVisitor.visit_map(map)?;
            return Ok(found);
        };
        while let Some(on_path) = map.next_key_seed(KeyIs(first))? {
            if on_path {
                found.present = map.next_value_seed(Path(rest))?.present;
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Found, A::Error> {
        SkipVisitor.visit_seq(seq)?;
        Ok(self.scalar())
    }
    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(Found::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
        Ok(self.scalar())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
        Ok(self.scalar())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
        Ok(self.scalar())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
        Ok(self.scalar())
    }
    fn visit_str<E>(self, _: &str) -> Result<Found, E> {
        Ok(self.scalar())
    }
}

impl Path<'_> {
    /// A value that is neither an object nor `null`, read: present when the path ends here.
    fn scalar(&self) -> Found {
        Found { object: false, present: self.0.is_empty() }
    }
}

/// Reads a member name: whether it is this one (compared in place, not copied).
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

impl RequestMeta {
    /// A `_meta` object as received: `raw` must be the text of a JSON object (it is read once
    /// more, for the members the runtime reads).
    ///
    /// # Errors
    /// When `raw` is not an object (the caller keeps such a `_meta` as a plain value).
    pub fn from_raw(raw: Box<RawValue>) -> Result<RequestMeta, serde_json::Error> {
        let known = serde_json::from_str::<Known>(raw.get())?;
        Ok(RequestMeta { raw: Some(raw), map: OnceLock::new(), known, transport: None, carried: false })
    }

    /// A `_meta` object already parsed.
    pub fn from_map(map: Map<String, Value>) -> RequestMeta {
        let known = Known::of_map(&map);
        RequestMeta { raw: None, map: OnceLock::from(map), known, transport: None, carried: false }
    }

    /// `io.modelcontextprotocol/protocolVersion`.
    pub fn protocol_version(&self) -> Option<&Value> {
        self.known.protocol_version.as_ref()
    }

    /// `io.modelcontextprotocol/clientCapabilities` (shared: it becomes the request's context's).
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.known.client_capabilities.as_ref()
    }

    /// `io.modelcontextprotocol/logLevel`.
    pub fn log_level(&self) -> Option<&Value> {
        self.known.log_level.as_ref()
    }

    /// `progressToken`.
    pub fn progress_token(&self) -> Option<&Value> {
        self.known.progress_token.as_ref()
    }

    /// The member `key`: one the runtime reads without parsing the rest of the object, any
    /// other from the whole object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match MetaMember::of(key) {
            MetaMember::Other => self.map().get(key),
            member => self.known.get(member),
        }
    }

    /// The whole object (parsed on first use).
    pub fn map(&self) -> &Map<String, Value> {
        self.map.get_or_init(|| {
            // `raw` was read as a JSON object already: it parses.
            self.raw.as_ref().and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or_default()
        })
    }

    /// The whole object, owned.
    pub fn into_map(mut self) -> Map<String, Value> {
        self.map();
        self.map.take().unwrap_or_default()
    }

    /// Keeps the trace context of the transport the request came over (its HTTP headers), and
    /// copies its `traceparent` and `tracestate` into the object (where handlers read them: the
    /// gateway passes them on) unless it carries a `traceparent` of its own. What the request
    /// carried stays told apart ([`RequestMeta::trace`], [`RequestMeta::transport_trace`]).
    pub fn add_trace_context(&mut self, transport: TraceContext) {
        if self.known.traceparent.is_none() {
            let mut map = std::mem::take(self).into_map();
            map.insert(TRACEPARENT.into(), transport.traceparent.as_str().into());
            if let Some(state) = &transport.tracestate {
                map.insert(TRACESTATE.into(), state.as_str().into());
            }
            *self = RequestMeta::from_map(map);
            self.carried = true;
        }
        self.transport = Some(Box::new(transport));
    }

    /// The trace context members of the request's own `_meta` (none of those copied from its
    /// transport).
    pub fn trace(&self) -> TraceMembers<'_> {
        if self.carried {
            return TraceMembers::default();
        }
        fn text(value: &Option<Value>) -> Option<&str> {
            value.as_ref().and_then(Value::as_str)
        }
        TraceMembers {
            traceparent: text(&self.known.traceparent),
            tracestate: text(&self.known.tracestate),
            baggage: text(&self.known.baggage),
        }
    }

    /// The trace context of the transport the request came over, when it had one.
    pub fn transport_trace(&self) -> Option<&TraceContext> {
        self.transport.as_deref()
    }
}

impl PartialEq for RequestMeta {
    fn eq(&self, other: &RequestMeta) -> bool {
        self.map() == other.map()
    }
}

impl fmt::Debug for RequestMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.raw, self.map.get()) {
            (_, Some(map)) => f.debug_tuple("RequestMeta").field(map).finish(),
            (Some(raw), None) => f.debug_tuple("RequestMeta").field(&raw.get()).finish(),
            (None, None) => f.write_str("RequestMeta({})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> RequestMeta {
        RequestMeta::from_raw(RawValue::from_string(text.to_owned()).unwrap()).unwrap()
    }

    #[test]
    fn the_runtimes_members_are_read_and_the_rest_parsed_only_when_asked() {
        let text = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
            "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},
            "io.modelcontextprotocol/logLevel":"info","progressToken":7,
            "traceparent":"00-a-b-01","own":{"x":[1,2]}}"#;
        let meta = raw(text);
        assert_eq!(meta.protocol_version(), Some(&json!("2026-07-28")));
        assert_eq!(meta.client_capabilities().map(|c| &**c), Some(&json!({"elicitation": {}})));
        assert_eq!(meta.log_level(), Some(&json!("info")));
        assert_eq!(meta.progress_token(), Some(&json!(7)));
        assert_eq!(meta.get(TRACEPARENT), Some(&json!("00-a-b-01")));
        assert_eq!(meta.get(TRACESTATE), None);
        assert!(meta.map.get().is_none(), "nothing else was parsed");
        assert_eq!(meta.get("own"), Some(&json!({"x": [1, 2]})));
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(Value::Object(meta.map().clone()), whole);
        assert_eq!(meta, RequestMeta::from_map(whole.as_object().cloned().unwrap()));
    }

    #[test]
    fn a_repeated_member_keeps_its_last_value_as_in_a_map() {
        let text = r#"{"progressToken":1,"a":1,"progressToken":2,"a":2}"#;
        let meta = raw(text);
        assert_eq!(meta.progress_token(), Some(&json!(2)));
        assert_eq!(meta.get("a"), Some(&json!(2)));
        let map: Map<String, Value> = serde_json::from_str(text).unwrap();
        assert_eq!(meta.map(), &map);
    }

    #[test]
    fn what_a_value_refuses_is_refused_in_any_member() {
        for bad in [r#""\ud800""#, "1e400"] {
            for key in ["own", "progressToken", "io.modelcontextprotocol/clientCapabilities"] {
                let text = format!(r#"{{"{key}":{{"extensions":{{"x":[{bad}]}}}}}}"#);
                assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
                let raw = RawValue::from_string(text.clone());
                assert!(raw.is_err() || RequestMeta::from_raw(raw.unwrap()).is_err(), "{text}");
            }
        }
    }

    fn capabilities(text: &str) -> ClientCapabilities {
        let meta = raw(&format!(r#"{{"io.modelcontextprotocol/clientCapabilities":{text}}}"#));
        meta.client_capabilities().cloned().unwrap()
    }

    #[test]
    fn declared_capabilities_are_parsed_only_when_read_and_read_as_a_value_would_be() {
        let text = r#"{"elicitation":{"form":{}},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}}"#;
        let declared = capabilities(text);
        assert!(declared.is_object() && declared.declares_tasks());
        assert!(declared.0.value.get().is_none(), "not parsed yet");
        assert_eq!(declared.value(), &serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(declared["roots"]["listChanged"], json!(true), "read through Deref");
        assert_eq!(declared, ClientCapabilities::from(serde_json::from_str::<Value>(text).unwrap()));
    }

    #[test]
    fn whether_the_tasks_extension_is_declared_is_read_as_from_the_value() {
        let cases = [
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{"x":[1,{"y":null}]},"other":{}}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":false}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":[]}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":"x"},"extensions":null}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":null}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/tasks":null}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":null,"io.modelcontextprotocol/tasks":1}}"#,
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}},"extensions":{}}"#,
            r#"{"extensions":{},"extensions":{"io.modelcontextprotocol/tasks":"yes"}}"#,
            r#"{"extensions":[{"io.modelcontextprotocol/tasks":{}}]}"#,
            r#"{"extensions":"io.modelcontextprotocol/tasks"}"#,
            r#"{"io.modelcontextprotocol/tasks":{}}"#,
            r#"{"sampling":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#,
            r#"{"tasks":{"requests":{"tools":{"call":{}}}}}"#,
            r#"{}"#,
            r#"[{"extensions":{"io.modelcontextprotocol/tasks":{}}}]"#,
            r#""text""#,
            "null",
            "7",
        ];
        for text in cases {
            let value: Value = serde_json::from_str(text).unwrap();
            let declared = capabilities(text);
            assert_eq!(declared.declares_tasks(), crate::tasks::declares_tasks(&value), "{text}");
            assert_eq!(declared.is_object(), value.is_object(), "{text}");
            assert_eq!(declared.value(), &value, "{text}");
            let made = ClientCapabilities::from(value);
            assert_eq!((made.declares_tasks(), made.is_object()), (declared.declares_tasks(), declared.is_object()));
        }
    }

    #[test]
    fn only_an_object_is_taken() {
        for text in ["1", "\"s\"", "[1]", "null"] {
            assert!(RequestMeta::from_raw(RawValue::from_string(text.into()).unwrap()).is_err(), "{text}");
        }
    }

    #[test]
    fn a_trace_context_is_added_unless_the_request_carries_its_own() {
        let http = || TraceContext {
            traceparent: "00-1-2-01".into(),
            tracestate: Some("k=v".into()),
            baggage: Some("b=1".into()),
        };
        let mut meta = raw(r#"{"progressToken":"p"}"#);
        meta.add_trace_context(http());
        assert_eq!(meta.get(TRACEPARENT), Some(&json!("00-1-2-01")));
        assert_eq!(meta.get(TRACESTATE), Some(&json!("k=v")));
        assert_eq!(meta.progress_token(), Some(&json!("p")));
        assert_eq!(
            Value::Object(meta.map().clone()),
            json!({"progressToken": "p", "traceparent": "00-1-2-01", "tracestate": "k=v"})
        );
        // Still told apart: the request's own `_meta` had no context, its headers had one.
        assert_eq!(meta.trace(), TraceMembers::default());
        assert_eq!(meta.transport_trace(), Some(&http()));
        let mut own = raw(r#"{"traceparent":"mine","baggage":"u=2"}"#);
        own.add_trace_context(http());
        assert_eq!(own.get(TRACEPARENT), Some(&json!("mine")));
        assert_eq!(own.get(TRACESTATE), None);
        assert_eq!(own.trace(), TraceMembers { traceparent: Some("mine"), tracestate: None, baggage: Some("u=2") });
        assert_eq!(own.transport_trace(), Some(&http()));
    }
}
