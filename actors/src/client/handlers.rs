//! How the client answers what servers ask of it: `elicitation/create`, `sampling/createMessage`
//! and `roots/list` — as server-to-client requests in sessions, as MRTR input requests on the
//! stateless wire, or as the input requests of a task (answered with `tasks/update`). Each is pluggable; the defaults accept elicitations with the form's defaults,
//! list the configured roots, and refuse sampling with a clear error.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcpd::client::request::accept_with_defaults;
use mcpd::jsonrpc::{ClientCapabilities, ErrorCode, ErrorObject};
use serde_json::{json, Map, Value};

/// A handler's future (it runs on the connection's thread; it need not be `Send`).
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, ErrorObject>>>>;
/// A handler: request params in, result out.
pub type Handler = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

/// A root the client exposes (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: Option<String>,
}

/// Hears the notifications a server sends (the server's record id in its [`super::ClientManager`],
/// method, params).
pub type NotificationHook = Arc<dyn Fn(&str, &str, &Value) + Send + Sync>;

/// The client's answers to server requests.
#[derive(Clone)]
pub struct ClientHandlers {
    /// `elicitation/create`.
    pub elicitation: Handler,
    /// `sampling/createMessage`; `None` refuses (and the capability is not declared).
    pub sampling: Option<Handler>,
    /// What `roots/list` answers.
    pub roots: Vec<Root>,
    /// Called for every notification a server sends (e.g. `notifications/tools/list_changed`).
    pub notifications: Option<NotificationHook>,
    /// Extensions the client declares (`capabilities.extensions`, e.g. MCP Apps'
    /// `io.modelcontextprotocol/ui`), beside the tasks extension the link adds itself.
    pub extensions: Map<String, Value>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl Default for ClientHandlers {
    fn default() -> Self {
        ClientHandlers {
            elicitation: Arc::new(|params| Box::pin(async move { Ok(accept_with_defaults(&params)) })),
            sampling: None,
            roots: Vec::new(),
            notifications: None,
            extensions: Map::new(),
        }
    }
}

impl ClientHandlers {
    /// The capabilities these handlers let the client declare.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        caps.insert("elicitation".into(), json!({}));
        caps.insert("roots".into(), json!({}));
        if self.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if !self.extensions.is_empty() {
            caps.insert("extensions".into(), Value::Object(self.extensions.clone()));
        }
        Value::Object(caps)
    }

    /// Answers one server request.
    pub fn answer(&self, method: &str, params: Value) -> HandlerFuture {
        match method {
            "elicitation/create" => (self.elicitation)(params),
            "sampling/createMessage" => match &self.sampling {
                Some(sampling) => sampling(params),
                None => Box::pin(async {
                    Err(ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        "sampling/createMessage is not supported by this client (no sampling handler is configured)",
                    ))
                }),
            },
            "roots/list" => {
                let roots: Vec<Value> = self
                    .roots
                    .iter()
                    .map(|r| match &r.name {
                        Some(name) => json!({"uri": r.uri, "name": name}),
                        None => json!({"uri": r.uri}),
                    })
                    .collect();
                Box::pin(async move { Ok(json!({ "roots": roots })) })
            }
            "ping" => Box::pin(async { Ok(json!({})) }),
            other => {
                let message = format!("{other} is not supported by this client");
                Box::pin(async move { Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, message)) })
            }
        }
    }
}

/// Hears the params of one kind of notification that belongs to one call.
pub type NotificationSink = Arc<dyn Fn(&Value) + Send + Sync>;
/// Answers a server request (method, params) that belongs to one call.
pub type RequestAnswerer = Arc<dyn Fn(&str, Value) -> HandlerFuture + Send + Sync>;

/// Handlers for one tool call only ([`super::ClientManager::call_tool_with`]), beside the
/// connection's [`ClientHandlers`].
///
/// What belongs to the call: `notifications/progress` carrying the progress token the client
/// sent with it (a token unique on the connection, sent only when `progress` is set); the
/// notifications and server requests that arrive on the call's own response stream (streamable
/// HTTP SSE); and, on a stream shared by every request (stdio, a session's GET stream,
/// HTTP+SSE), those that arrive while this call is the only request in flight on the
/// connection (see `mcpd::client::attribution`). Anything else goes to the connection's
/// handlers.
#[derive(Clone, Default)]
pub struct CallHandlers {
    /// The params of the call's `notifications/progress`.
    pub progress: Option<NotificationSink>,
    /// The params of the call's `notifications/message` (log messages).
    pub log: Option<NotificationSink>,
    /// Answers the call's `elicitation/create`, `sampling/createMessage` and `roots/list` —
    /// server-to-client requests, or the input requests of a stateless `input_required` round
    /// when `relay_input` is off.
    pub requests: Option<RequestAnswerer>,
    /// On the stateless wire: an `input_required` result is returned as the call's result
    /// (`resultType: "input_required"`, its `inputRequests` and `requestState`) for the caller
    /// to relay, instead of being answered here.
    pub relay_input: bool,
    /// On the stateless wire: the first request carries these `inputResponses` and this
    /// `requestState` (the retry of an `input_required` round the caller relayed).
    pub resume: Option<(Value, Option<Value>)>,
    /// On the stateless wire: the calling client's declared capabilities, whose entries for
    /// the capabilities the link declares (not `extensions`) the call's requests declare
    /// instead of the link's — a gateway passes on what its caller can be asked, with the
    /// caller's own sub-capabilities, so that the remote asks only what will be answered.
    /// `None`: the link's.
    pub capabilities: Option<ClientCapabilities>,
}

impl fmt::Debug for CallHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandlers")
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.is_some())
            .field("requests", &self.requests.is_some())
            .field("relay_input", &self.relay_input)
            .field("resume", &self.resume.is_some())
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

impl CallHandlers {
    /// Whether anything the server sends during the call needs routing to these handlers.
    pub(crate) fn routes(&self) -> bool {
        self.progress.is_some() || self.log.is_some() || self.requests.is_some()
    }
}
