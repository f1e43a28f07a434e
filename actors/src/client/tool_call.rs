//! A tool call on a link, and what it comes to: the `tools/call` request (its `_meta`, its
//! progress token), the task the server may make of it (2026-07-28, the tasks extension),
//! followed to its result ([`super::task`]), and the result read — a [`CallResult`] for every
//! caller, a [`Passed`] for a gateway (the usual answer read straight into what it passes on).
//! The connection actor ([`super::connection`]) and the manager's satellite calls both run calls
//! through here, on whichever link they hold.

use std::rc::Rc;

use actix::Message;
use mcpd::client::list::json_type;
use mcpd::model::{CallToolResult, ContentBlock, PassedResult};
use mcpd::tasks::CreateTaskResult;
use mcpd::version::ProtocolVersion;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::handlers::CallHandlers;
use super::link::{CallEntry, CancelSignal, Forward, Forwarded, Link, Mode};
use super::task;

/// The outcome of a tool call that reached the tool. `is_error` is the tool's own failure;
/// transport and protocol failures are `Err(ClientError)` instead.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The server's name.
    pub server_name: String,
    /// The tool's name.
    pub tool_name: String,
    /// The content blocks (blocks of unknown types are kept only in `raw`).
    pub content: Vec<ContentBlock>,
    /// Structured output, when the tool returns some.
    pub structured_content: Option<Value>,
    /// Whether the tool reported a failure.
    pub is_error: bool,
    /// The whole `result` object as received.
    pub raw: Value,
}

impl CallResult {
    /// Reads a `tools/call` result in one pass over its members (no hashed lookup per field).
    /// Content blocks of unknown types are kept only in `raw`.
    ///
    /// # Errors
    /// A result of the wrong shape: not an object, `content` not an array, `isError` not a
    /// boolean, `structuredContent` not an object (`null` counts as absent).
    pub(crate) fn from_result(server_name: &str, tool_name: &str, raw: Value) -> Result<CallResult, ClientError> {
        let shape = |what: &str, value: &Value| {
            ClientError::Protocol(format!("the tools/call result's {what} ({})", json_type(value)))
        };
        let Some(members) = raw.as_object() else { return Err(shape("is not an object", &raw)) };
        let (mut content, mut structured_content, mut is_error) = (Vec::new(), None, false);
        for (key, value) in members {
            match (key.as_str(), value) {
                (_, Value::Null) => {}
                ("content", Value::Array(blocks)) => {
                    content = blocks.iter().filter_map(|b| serde::Deserialize::deserialize(b).ok()).collect();
                }
                ("content", other) => return Err(shape("content is not an array", other)),
                ("structuredContent", Value::Object(_)) => structured_content = Some(value.clone()),
                ("structuredContent", other) => return Err(shape("structuredContent is not an object", other)),
                ("isError", Value::Bool(flag)) => is_error = *flag,
                ("isError", other) => return Err(shape("isError is not a boolean", other)),
                _ => {}
            }
        }
        Ok(CallResult {
            server_name: server_name.to_owned(),
            tool_name: tool_name.to_owned(),
            content,
            structured_content,
            is_error,
            raw,
        })
    }

    /// The result a gateway passes on: content, structured content, `isError` and `_meta` as
    /// received (the blocks were read once; unknown block types are left out).
    pub(crate) fn into_passed(self) -> CallToolResult {
        let CallResult { content, structured_content, is_error, raw, .. } = self;
        let meta = match raw {
            Value::Object(mut members) => match members.remove("_meta") {
                Some(Value::Object(meta)) => Some(meta),
                _ => None,
            },
            _ => None,
        };
        CallToolResult { content, structured_content, is_error, meta }
    }

    /// The text of the text blocks, joined with newlines.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentBlock::as_text).collect::<Vec<_>>().join("\n")
    }
}

/// Call a tool.
#[derive(Debug, Message)]
#[rtype(result = "Result<CallResult, ClientError>")]
pub struct CallTool {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

/// Calls a tool; `cancel`, when given, abandons the call as [`super::CallToolCancellable`] says. A
/// task the server made of the call is waited for ([`super::task`]), and cancelled when
/// `cancel` fires meanwhile.
pub(crate) async fn call_tool(
    link: Rc<Link>,
    call: CallTool,
    cancel: Option<tokio::sync::oneshot::Receiver<()>>,
    meta: Option<Map<String, Value>>,
    handlers: Option<CallHandlers>,
) -> Result<CallResult, ClientError> {
    let name = call.name.clone();
    let registered = handlers.map(|handlers| link.register(handlers, false));
    let raw = send_call(&link, call, cancel, meta, registered.as_ref().map(|r| &*r.entry)).await?;
    CallResult::from_result(link.name(), &name, raw)
}

/// What a gateway's tool call came to.
#[derive(Debug)]
pub(crate) enum Passed {
    /// The usual answer, read straight into the result the gateway passes on (see
    /// `link::outcome::passed_result`).
    Result(CallToolResult),
    /// Any other answer (`input_required`, a task's result, or a result only the whole
    /// reading judges), as [`call_tool`] reads it.
    Raw(CallResult),
    /// A lane's usual answer: the result as the text it came as ([`forward_tool_call`]).
    Text(PassedResult),
}

impl Passed {
    /// As a [`CallResult`] (of a passed result, `raw` is the result as passed on).
    pub(crate) fn into_call_result(self, tool_name: &str) -> CallResult {
        match self {
            Passed::Raw(result) => result,
            Passed::Result(result) => CallResult {
                server_name: String::new(),
                tool_name: tool_name.to_owned(),
                raw: serde_json::to_value(&result).unwrap_or(Value::Null),
                content: result.content,
                structured_content: result.structured_content,
                is_error: result.is_error,
            },
            Passed::Text(result) => {
                let raw = serde_json::from_str(result.text()).unwrap_or(Value::Null);
                // The text was checked to be a complete result; one the typed reading still
                // refuses (a block's inner member of the wrong type) keeps only its raw value.
                let typed = result.to_call_result().unwrap_or_default();
                CallResult {
                    server_name: String::new(),
                    tool_name: tool_name.to_owned(),
                    raw,
                    content: typed.content,
                    structured_content: typed.structured_content,
                    is_error: result.is_error(),
                }
            }
        }
    }

    /// Whether the tool reported a failure.
    pub(crate) fn is_error(&self) -> bool {
        match self {
            Passed::Result(result) => result.is_error,
            Passed::Raw(result) => result.is_error,
            Passed::Text(result) => result.is_error(),
        }
    }
}

/// A gateway's plain call on the stateless wire, written by [`Link::forward_request`]: the
/// usual answer as its text ([`Passed::Text`]); a task the server made of the call is followed
/// to its result, and any other answer read as [`call_tool`] reads it (an `input_required`
/// round among them, for the gateway to relay).
pub(crate) async fn forward_tool_call(link: Rc<Link>, request: Forward, name: String) -> Result<Passed, ClientError> {
    let raw = match link.forward(request).await? {
        Forwarded::Text(result) => return Ok(Passed::Text(result)),
        Forwarded::Value(raw) => raw,
    };
    let raw = match started(&link, raw)? {
        Started::Result(raw) => raw,
        // Boxed, as in `send_call`.
        Started::Task(created) => Value::Object(Box::pin(task::wait(&link, created, None)).await?),
    };
    CallResult::from_result(link.name(), &name, raw).map(Passed::Raw)
}

/// As [`call_tool`] for a gateway, with its handlers: the usual answer comes back as
/// [`Passed::Result`], never built as a JSON value.
pub(crate) async fn pass_tool_call(
    link: Rc<Link>,
    call: CallTool,
    meta: Option<Map<String, Value>>,
    handlers: CallHandlers,
) -> Result<Passed, ClientError> {
    let name = call.name.clone();
    let registered = link.register(handlers, true);
    let raw = send_call(&link, call, None, meta, Some(&registered.entry)).await?;
    match registered.entry.take_passed() {
        Some(result) => Ok(Passed::Result(result)),
        None => CallResult::from_result(link.name(), &name, raw).map(Passed::Raw),
    }
}

/// Sends a call for [`call_tool`] and [`pass_tool_call`], and waits for the task the server may
/// make of it: the result (`null` when `entry` kept a passed result).
async fn send_call(
    link: &Rc<Link>,
    call: CallTool,
    cancel: Option<tokio::sync::oneshot::Receiver<()>>,
    meta: Option<Map<String, Value>>,
    entry: Option<&CallEntry>,
) -> Result<Value, ClientError> {
    let cancel = cancel.map(futures_util::FutureExt::shared);
    let mut params = call.into_params();
    let token = entry.and_then(|e| e.token.as_deref());
    if meta.is_some() || token.is_some() {
        let mut meta = meta.unwrap_or_default();
        if let Some(token) = token {
            meta.insert("progressToken".into(), Value::String(token.to_owned()));
        }
        params.insert("_meta".into(), Value::Object(meta));
    }
    Ok(match start_call(link, params, cancel.clone(), entry).await? {
        Started::Result(raw) => raw,
        // Boxed: following a task is a large future most calls never need (see `read_response`).
        Started::Task(created) => Value::Object(Box::pin(task::wait(link, created, cancel)).await?),
    })
}

/// What a `tools/call` was answered with.
pub(super) enum Started {
    /// A result (of any shape: the caller judges it).
    Result(Value),
    /// A task to follow.
    Task(CreateTaskResult),
}

impl CallTool {
    /// The `tools/call` params.
    pub(super) fn into_params(self) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(self.name));
        params.insert("arguments".into(), Value::Object(self.arguments));
        params
    }
}

/// Sends a `tools/call`; a `CreateTaskResult` comes back as the task, anything else as it is.
pub(super) async fn start_call(
    link: &Rc<Link>,
    params: Map<String, Value>,
    cancel: Option<CancelSignal>,
    call: Option<&CallEntry>,
) -> Result<Started, ClientError> {
    let raw = link.request_for_call("tools/call", params, cancel, call).await?;
    started(link, raw)
}

/// What a `tools/call` answered with `raw` came to: a task (on the 2026-07-28 wire only), or a
/// result.
pub(super) fn started(link: &Link, raw: Value) -> Result<Started, ClientError> {
    if raw.get("resultType").and_then(Value::as_str) != Some("task") {
        return Ok(Started::Result(raw));
    }
    // Only the 2026-07-28 wire declares the tasks extension; a task anywhere else is invalid.
    if !matches!(link.mode(), Some(Mode::Stateless | Mode::Stdio(ProtocolVersion::V2026_07_28))) {
        return Err(ClientError::Protocol(
            "the server answered tools/call with a task without being offered tasks".into(),
        ));
    }
    CreateTaskResult::from_result(&raw)
        .map(Started::Task)
        .ok_or_else(|| ClientError::Protocol("the server answered tools/call with a task of the wrong shape".into()))
}

/// What a tool call came to without waiting for a task: its result, or the task the server
/// made of it (follow it with [`super::GetTask`], stop it with [`super::CancelTask`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RemoteCallOutcome {
    /// The server answered at once.
    Result(CallResult),
    /// The server answered with a task (the tasks extension, 2026-07-28).
    Task(CreateTaskResult),
}
