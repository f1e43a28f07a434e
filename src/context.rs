//! What a tool, prompt or resource handler sees of the request that invoked it: the session,
//! the protocol version, the request's `_meta`, and a [`Peer`] to send progress, log messages
//! and (in sessions) requests back to the client.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::future::BoxFuture;
use crate::jsonrpc::{ClientCapabilities, ErrorCode, ErrorObject, RequestMeta};
use crate::version::ProtocolVersion;

/// Syslog severity of a `notifications/message` (RFC 5424 order, least severe first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Debugging detail.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// System is unusable.
    Emergency,
}

impl LogLevel {
    /// Reads a level name.
    pub fn parse(s: &str) -> Option<LogLevel> {
        serde_json::from_value(Value::String(s.to_owned())).ok()
    }
}

/// The way back to the client for messages related to one request. Transports implement it:
/// stdio writes to stdout, a streamable-HTTP request writes to its SSE stream.
pub trait Peer: Send + Sync + 'static {
    /// Sends a notification (progress, log message) related to the current request.
    fn notify(&self, method: &str, params: Value);

    /// Sends a request to the client and waits for its answer. Transports that cannot carry
    /// server-to-client requests answer with an error.
    fn request(&self, method: &str, _params: Value) -> BoxFuture<Result<Value, ErrorObject>> {
        let error = ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("{method}: this transport cannot send requests to the client"),
        );
        Box::pin(async move { Err(error) })
    }

    /// Closes the connection carrying this request's stream without ending the request: the
    /// client reconnects (SSE polling) and receives the rest. A no-op where streams cannot be
    /// resumed.
    fn close_stream(&self) {}
}

/// The request a handler serves.
#[derive(Clone)]
pub struct ToolContext {
    session_id: Option<Arc<str>>,
    version: ProtocolVersion,
    meta: Option<Arc<RequestMeta>>,
    client_capabilities: Option<ClientCapabilities>,
    log_level: Option<LogLevel>,
    peer: Option<Arc<dyn Peer>>,
    input_responses: Option<Arc<Map<String, Value>>>,
    request_state: Option<Arc<Value>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("version", &self.version)
            .field("meta", &self.meta)
            .field("log_level", &self.log_level)
            .field("has_peer", &self.peer.is_some())
            .finish()
    }
}

impl ToolContext {
    /// A context with no session, no peer and no metadata.
    pub fn new(version: ProtocolVersion) -> Self {
        ToolContext {
            session_id: None,
            version,
            meta: None,
            client_capabilities: None,
            log_level: None,
            peer: None,
            input_responses: None,
            request_state: None,
        }
    }

    /// Sets the session id.
    #[must_use]
    pub fn with_session(mut self, session_id: Option<Arc<str>>) -> Self {
        self.session_id = session_id;
        self
    }

    /// Sets the request's `_meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Option<Arc<Map<String, Value>>>) -> Self {
        self.meta = meta.map(|meta| Arc::new(RequestMeta::from_map(Arc::unwrap_or_clone(meta))));
        self
    }

    /// Sets the request's `_meta`, as the request carried it.
    #[must_use]
    pub fn with_request_meta(mut self, meta: Option<Arc<RequestMeta>>) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the client's capabilities.
    #[must_use]
    pub fn with_client_capabilities(mut self, capabilities: Option<ClientCapabilities>) -> Self {
        self.client_capabilities = capabilities;
        self
    }

    /// Sets the minimum level of log messages the client wants (none: no log messages).
    #[must_use]
    pub fn with_log_level(mut self, level: Option<LogLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// Sets the peer.
    #[must_use]
    pub fn with_peer(mut self, peer: Option<Arc<dyn Peer>>) -> Self {
        self.peer = peer;
        self
    }

    /// Sets the answers to earlier input requests and the state returned with them (MRTR).
    #[must_use]
    pub fn with_input(mut self, responses: Option<Arc<Map<String, Value>>>, state: Option<Arc<Value>>) -> Self {
        self.input_responses = responses;
        self.request_state = state;
        self
    }

    /// The client's answer to the input request `key` of an earlier round (MRTR), if any.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_deref().and_then(|r| r.get(key))
    }

    /// Every answer to the input requests of an earlier round (MRTR), by key.
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.input_responses.as_deref()
    }

    /// The content of an accepted elicitation answer under `key`; `None` when absent, declined,
    /// or not an elicitation result.
    pub fn elicited(&self, key: &str) -> Option<&Map<String, Value>> {
        let answer = self.input_response(key)?.as_object()?;
        if answer.get("action").and_then(Value::as_str) != Some("accept") {
            return None;
        }
        answer.get("content").and_then(Value::as_object)
    }

    /// The state the handler attached to its last `InputRequired` (verified by the server).
    pub fn request_state(&self) -> Option<&Value> {
        self.request_state.as_deref()
    }

    /// Fails with `-32021` unless the client declared `capability` (e.g. `"sampling"`).
    ///
    /// # Errors
    /// [`crate::ProtocolError::MissingCapability`] naming the capability.
    pub fn require_client_capability(&self, capability: &str) -> Result<(), crate::ProtocolError> {
        if self.client_supports(capability) {
            Ok(())
        } else {
            Err(crate::ProtocolError::MissingCapability { required: json!({ capability: {} }) })
        }
    }

    /// The streamable-HTTP or stdio session, if the request belongs to one.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The protocol revision of the request.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The request's `_meta` (read whole on first use: see [`ToolContext::meta_member`]).
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.meta.as_deref().map(RequestMeta::map)
    }

    /// One member of the request's `_meta`: those the runtime reads (the protocol version,
    /// client capabilities, log level, progress token, W3C trace context) without reading the
    /// rest of the object.
    pub fn meta_member(&self, key: &str) -> Option<&Value> {
        self.meta.as_deref().and_then(|meta| meta.get(key))
    }

    /// The request's progress token.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta.as_deref().and_then(RequestMeta::progress_token)
    }

    /// The client's declared capabilities (from `initialize` or this request's `_meta`).
    pub fn client_capabilities(&self) -> Option<&Value> {
        self.client_capabilities.as_deref()
    }

    /// The same, shared (for passing on without a copy).
    pub fn shared_client_capabilities(&self) -> Option<ClientCapabilities> {
        self.client_capabilities.clone()
    }

    /// Whether the client declared the capability `name` (e.g. `"sampling"`).
    pub fn client_supports(&self, name: &str) -> bool {
        self.client_capabilities().and_then(|c| c.get(name)).is_some_and(|v| !v.is_null())
    }

    /// The minimum level of log messages the client wants (none: no log messages).
    pub fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    /// Whether a peer can carry notifications for this request.
    pub fn has_peer(&self) -> bool {
        self.peer.is_some()
    }

    /// Reports progress when the request carried a progress token and a peer exists; a no-op
    /// otherwise. `progress` must increase from call to call.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(peer), Some(token)) = (&self.peer, self.progress_token()) else { return };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        peer.notify("notifications/progress", params);
    }

    /// Sends a log message when the client asked for this level or a less severe one.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let (Some(peer), Some(min)) = (&self.peer, self.log_level) else { return };
        if level < min {
            return;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        peer.notify("notifications/message", params);
    }

    /// Closes the connection of this request's SSE stream; the client resumes it with `GET` and
    /// `Last-Event-ID` and receives the rest (2025-11-25 SSE polling).
    pub fn close_stream(&self) {
        if let Some(peer) = &self.peer {
            peer.close_stream();
        }
    }

    /// Sends a request to the client (sampling, elicitation, roots) and waits for the answer.
    ///
    /// # Errors
    /// The client's error, or an error when this transport cannot carry such requests.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        match &self.peer {
            Some(peer) => peer.request(method, params).await,
            None => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("{method}: this request has no channel back to the client"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, Value)>>);

    impl Peer for Recorder {
        fn notify(&self, method: &str, params: Value) {
            self.0.lock().unwrap().push((method.to_owned(), params));
        }
    }

    #[test]
    fn progress_needs_a_token_and_logs_respect_the_level() {
        let recorder = Arc::new(Recorder::default());
        let mut meta = Map::new();
        meta.insert("progressToken".into(), json!("t1"));
        let ctx = ToolContext::new(ProtocolVersion::V2025_11_25)
            .with_peer(Some(recorder.clone()))
            .with_log_level(Some(LogLevel::Warning));
        ctx.progress(1.0, None, None);
        ctx.log(LogLevel::Info, None, json!("hidden"));
        let ctx = ctx.with_meta(Some(Arc::new(meta)));
        ctx.progress(1.0, Some(2.0), Some("half"));
        ctx.log(LogLevel::Error, Some("t"), json!("shown"));
        let sent = recorder.0.lock().unwrap().clone();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].1, json!({"progressToken":"t1","progress":1.0,"total":2.0,"message":"half"}));
        assert_eq!(sent[1].1, json!({"level":"error","logger":"t","data":"shown"}));
    }
}
