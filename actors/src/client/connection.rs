//! The `ClientConnection` actor: one per remote server (and configuration fingerprint). It owns
//! the [`Link`] to that server — its own awc client, negotiated revision, session id and
//! streams — and serves `ListTools`, `List<T>`, `CallTool`, `SendRequest` concurrently (each
//! answer is a future spawned on the actor's thread: no per-server lock). A tool call the
//! server answers with a task (2026-07-28, the tasks extension) is followed to its result
//! ([`super::task`]); `StartToolCall` returns the task instead, `GetTask` and `CancelTask` reach
//! one by id. `Invalidate` closes the session (DELETE), stops the streams and the actor.
//!
//! What the server sends is untrusted: listings follow the core's rules (`client::listing`), a
//! `tools/call` result of the wrong shape is a protocol error, and every handler's future is
//! contained ([`crate::panics`]): a panic fails that one request, not the actor.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use actix::{
    Actor, ActorContext, ActorFutureExt as _, AtomicResponse, Context, Handler, Message, ResponseFuture,
    WrapFuture as _,
};
use futures_util::FutureExt as _;
use mcpd::client::list::{json_type, Listed, Listing, Skipped};
use mcpd::client::request::usable_tools;
use mcpd::model::{
    CallToolResult, ContentBlock, Implementation, PassedResult, Prompt, Resource, ResourceTemplate, Tool,
};
use mcpd::tasks::{self, CreateTaskResult, DetailedTask};
use mcpd::version::ProtocolVersion;
use serde::Deserialize as _;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::handlers::{CallHandlers, ClientHandlers};
use super::link::{CallEntry, CancelSignal, Forward, Forwarded, Link, LinkConfig, LinkShare, Mode};
use super::listing::list_all;
use super::task;
use crate::counts::{ActorCounts, ActorKind};
use crate::panics::{self, Site};

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

/// How many calls may wait in a connection's mailbox (actix's default is 16).
const MAILBOX_CAPACITY: usize = 1024;

/// A connection to one remote server.
pub struct ClientConnection {
    link: Rc<Link>,
    counts: Arc<ActorCounts>,
}

impl std::fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConnection").field("server", &self.link.name()).finish_non_exhaustive()
    }
}

impl ClientConnection {
    /// A connection (not yet negotiated: that happens on the first request).
    pub fn new(
        config: LinkConfig,
        handlers: ClientHandlers,
        client_info: Implementation,
        counts: Arc<ActorCounts>,
    ) -> Self {
        ClientConnection { link: Link::new(config, handlers, client_info), counts }
    }

    /// A connection whose link publishes its stateless wire to satellites through `share`
    /// (see [`super::link::LinkShare`]).
    pub(crate) fn primary(
        config: LinkConfig,
        handlers: ClientHandlers,
        client_info: Implementation,
        counts: Arc<ActorCounts>,
        share: Arc<LinkShare>,
    ) -> Self {
        ClientConnection { link: Link::primary(config, handlers, client_info, share), counts }
    }
}

impl Actor for ClientConnection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Each message only starts a future, so a deep mailbox costs nothing and spares
        // concurrent callers from waiting for a free slot.
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        self.counts.started(ActorKind::ClientConnection);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.counts.stopped(ActorKind::ClientConnection);
    }
}

/// List every tool (all pages). On the stateless HTTP wire, tools whose `x-mcp-header`
/// annotations are invalid are dropped with a warning. [`List`]`::<Tool>` says what was
/// skipped, too.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Tool>, ClientError>")]
pub struct ListTools;

impl Handler<ListTools> for ClientConnection {
    type Result = ResponseFuture<Result<Vec<Tool>, ClientError>>;

    fn handle(&mut self, _msg: ListTools, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move { list::<Tool>(&link).await.map(|listing| listing.items) })
    }
}

/// What a connection lists (all pages, under the listing's bounds and deadline): tools,
/// prompts, resources and resource templates.
pub trait Listable: Listed + Send + 'static {}

impl Listable for Tool {}
impl Listable for Prompt {}
impl Listable for Resource {}
impl Listable for ResourceTemplate {}

/// On the stateless HTTP wire a tool whose `x-mcp-header` annotations are invalid cannot be
/// called: it is skipped, and the others' header parameters are remembered for calls.
fn usable_on_the_wire(link: &Link, mut listing: Listing<Tool>) -> Listing<Tool> {
    if link.mode() != Some(Mode::Stateless) {
        return listing;
    }
    let (usable, dropped) = usable_tools(std::mem::take(&mut listing.items));
    for (name, reason) in dropped {
        log::warn!("{}: dropping tool {name}: {reason}", link.name());
        listing.skip(Skipped { entry: format!("tool {name:?}"), reason });
    }
    let params: HashMap<String, _> = usable.iter().map(|(t, p)| (t.name.clone(), p.clone())).collect();
    link.remember_tool_params(params);
    listing.items = usable.into_iter().map(|(tool, _)| tool).collect();
    listing
}

/// List every entry of one kind, with what was skipped and why: `List::<Tool>::new()`,
/// `List::<Prompt>`, `List::<Resource>`, `List::<ResourceTemplate>`.
pub struct List<T>(PhantomData<fn() -> T>);

impl<T> List<T> {
    /// The request.
    pub fn new() -> Self {
        List(PhantomData)
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List::new()
    }
}

impl<T> std::fmt::Debug for List<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "List<{}>", std::any::type_name::<T>())
    }
}

impl<T: Listable> Message for List<T> {
    type Result = Result<Listing<T>, ClientError>;
}

impl<T: Listable> Handler<List<T>> for ClientConnection {
    type Result = ResponseFuture<Result<Listing<T>, ClientError>>;

    fn handle(&mut self, _msg: List<T>, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move { list::<T>(&link).await })
    }
}

async fn list<T: Listable>(link: &Rc<Link>) -> Result<Listing<T>, ClientError> {
    let mut listing = list_all::<T>(link).await?;
    // Tools alone are settled further: the stateless wire keeps only those it can call.
    if let Some(tools) = (&mut listing as &mut dyn Any).downcast_mut::<Listing<Tool>>() {
        *tools = usable_on_the_wire(link, std::mem::take(tools));
    }
    Ok(listing)
}

/// A handler's future, contained: a panic in it is this request's [`ClientError::Internal`]
/// (logged once with its location, counted), and the connection's other requests go on.
fn contained<T: 'static>(
    work: impl Future<Output = Result<T, ClientError>> + 'static,
) -> ResponseFuture<Result<T, ClientError>> {
    fn flatten<T>(outcome: Result<Result<T, ClientError>, panics::Panic>) -> Result<T, ClientError> {
        outcome.unwrap_or_else(|panic| Err(panic.into()))
    }
    Box::pin(panics::contain(Site::Client, work).map(flatten))
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

impl Handler<CallTool> for ClientConnection {
    type Result = ResponseFuture<Result<CallResult, ClientError>>;

    fn handle(&mut self, msg: CallTool, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(call_tool(link, msg, None, None, None))
    }
}

/// Call a tool, abandoning the call when `cancel` fires or its sender is dropped (in a session
/// the server is told with `notifications/cancelled`; on the stateless wire the stream closes).
#[derive(Debug, Message)]
#[rtype(result = "Result<CallResult, ClientError>")]
pub struct CallToolCancellable {
    /// The call.
    pub call: CallTool,
    /// Fires (or is dropped) to cancel.
    pub cancel: tokio::sync::oneshot::Receiver<()>,
    /// The request's own `_meta` (a gateway forwards its caller's `traceparent` and
    /// `tracestate`; over HTTP they are sent as headers too).
    pub meta: Option<Map<String, Value>>,
    /// Handlers for this call only ([`CallHandlers`]): its progress, log messages and server
    /// requests reach them.
    pub handlers: Option<CallHandlers>,
}

impl Handler<CallToolCancellable> for ClientConnection {
    type Result = ResponseFuture<Result<CallResult, ClientError>>;

    fn handle(&mut self, msg: CallToolCancellable, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(call_tool(link, msg.call, Some(msg.cancel), msg.meta, msg.handlers))
    }
}

/// Calls a tool; `cancel`, when given, abandons the call as [`CallToolCancellable`] says. A
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
enum Started {
    /// A result (of any shape: the caller judges it).
    Result(Value),
    /// A task to follow.
    Task(CreateTaskResult),
}

impl CallTool {
    /// The `tools/call` params.
    fn into_params(self) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(self.name));
        params.insert("arguments".into(), Value::Object(self.arguments));
        params
    }
}

/// Sends a `tools/call`; a `CreateTaskResult` comes back as the task, anything else as it is.
async fn start_call(
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
fn started(link: &Link, raw: Value) -> Result<Started, ClientError> {
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
/// made of it (follow it with [`GetTask`], stop it with [`CancelTask`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The server answered at once.
    Result(CallResult),
    /// The server answered with a task (the tasks extension, 2026-07-28).
    Task(CreateTaskResult),
}

/// Call a tool, returning a task the server makes of the call instead of waiting for it.
#[derive(Debug, Message)]
#[rtype(result = "Result<CallOutcome, ClientError>")]
pub struct StartToolCall {
    /// The call.
    pub call: CallTool,
}

impl Handler<StartToolCall> for ClientConnection {
    type Result = ResponseFuture<Result<CallOutcome, ClientError>>;

    fn handle(&mut self, msg: StartToolCall, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move {
            let name = msg.call.name.clone();
            match start_call(&link, msg.call.into_params(), None, None).await? {
                Started::Result(raw) => CallResult::from_result(link.name(), &name, raw).map(CallOutcome::Result),
                Started::Task(created) => Ok(CallOutcome::Task(created)),
            }
        })
    }
}

/// Read a task's state (`tasks/get`): its status, and its result, error or input requests.
#[derive(Debug, Message)]
#[rtype(result = "Result<DetailedTask, ClientError>")]
pub struct GetTask {
    /// The task's id.
    pub task_id: String,
}

impl Handler<GetTask> for ClientConnection {
    type Result = ResponseFuture<Result<DetailedTask, ClientError>>;

    fn handle(&mut self, msg: GetTask, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move {
            let polled = task_request(&link, tasks::GET, &msg.task_id).await?;
            let task = DetailedTask::deserialize(&polled)
                .map_err(|e| ClientError::Protocol(format!("the tasks/get result is not a task: {e}")))?;
            if task.task.task_id != msg.task_id {
                return Err(ClientError::Protocol(format!(
                    "tasks/get for task {} answered about task {}",
                    msg.task_id, task.task.task_id
                )));
            }
            Ok(task)
        })
    }
}

/// Ask the server to cancel a task (`tasks/cancel`; cancellation is cooperative: the task may
/// still end otherwise).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ClientError>")]
pub struct CancelTask {
    /// The task's id.
    pub task_id: String,
}

impl Handler<CancelTask> for ClientConnection {
    type Result = ResponseFuture<Result<(), ClientError>>;

    fn handle(&mut self, msg: CancelTask, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move { task_request(&link, tasks::CANCEL, &msg.task_id).await.map(drop) })
    }
}

/// `tasks/get` or `tasks/cancel` for `task_id`, on a wire that has tasks (2026-07-28).
async fn task_request(link: &Rc<Link>, method: &str, task_id: &str) -> Result<Value, ClientError> {
    match link.connect().await? {
        Mode::Stateless | Mode::Stdio(ProtocolVersion::V2026_07_28) => {}
        Mode::Session(version) | Mode::HttpSse(version) | Mode::Stdio(version) => {
            return Err(ClientError::Task {
                task_id: task_id.to_owned(),
                reason: format!(
                    "cannot be reached: tasks need protocol revision 2026-07-28 and the server speaks {}",
                    version.as_str()
                ),
            })
        }
    }
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    link.request(method, params).await
}

/// Any other request (prompts, resources, …): its result.
#[derive(Debug, Message)]
#[rtype(result = "Result<Value, ClientError>")]
pub struct SendRequest {
    /// The method.
    pub method: String,
    /// Its params.
    pub params: Map<String, Value>,
}

impl Handler<SendRequest> for ClientConnection {
    type Result = ResponseFuture<Result<Value, ClientError>>;

    fn handle(&mut self, msg: SendRequest, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move {
            if msg.method != "tools/call" {
                return link.request(&msg.method, msg.params).await;
            }
            // A tools/call declares the tasks extension: a task is followed to its result.
            match start_call(&link, msg.params, None, None).await? {
                Started::Result(raw) => Ok(raw),
                Started::Task(created) => task::wait(&link, created, None).await.map(Value::Object),
            }
        })
    }
}

/// Close the connection (DELETE its session) and stop the actor.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Invalidate;

impl Handler<Invalidate> for ClientConnection {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: Invalidate, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        // Closing is best effort: a panic in it still stops the actor.
        let close = panics::contain(Site::Client, async move { link.close().await }).map(drop);
        AtomicResponse::new(Box::pin(close.into_actor(self).map(|(), _act, ctx| ctx.stop())))
    }
}
