//! The `ClientConnection` actor: one per remote server (and configuration fingerprint). It owns
//! the [`Link`] to that server — its own awc client, negotiated revision, session id and
//! streams — and serves `ListTools`, `List<T>`, `CallTool`, `SendRequest` concurrently (each
//! answer is a future spawned on the actor's thread: no per-server lock). A tool call runs as
//! [`super::tool_call`] says, which satellites share: the server's task made of it is followed to
//! its result; `StartToolCall` returns the task instead, `GetTask` and `CancelTask` reach one by
//! id. `StopClientConnection` closes the session (DELETE), stops the streams and the actor.
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
use mcpd::client::list::{Listed, Listing, Skipped};
use mcpd::client::request::usable_tools;
use mcpd::model::{Implementation, Prompt, Resource, ResourceTemplate, Tool};
use mcpd::tasks::{self, DetailedTask};
use mcpd::version::ProtocolVersion;
use serde::Deserialize as _;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::handlers::{CallHandlers, ClientHandlers};
use super::link::{Link, LinkConfig, LinkShare, Mode};
use super::listing::list_all;
use super::task;
use super::tool_call::{call_tool, start_call, CallResult, CallTool, RemoteCallOutcome, Started};
use crate::counts::{ActorCounts, ActorKind};
use crate::panics::{self, Site};

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

/// Call a tool, returning a task the server makes of the call instead of waiting for it.
#[derive(Debug, Message)]
#[rtype(result = "Result<RemoteCallOutcome, ClientError>")]
pub struct StartToolCall {
    /// The call.
    pub call: CallTool,
}

impl Handler<StartToolCall> for ClientConnection {
    type Result = ResponseFuture<Result<RemoteCallOutcome, ClientError>>;

    fn handle(&mut self, msg: StartToolCall, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(async move {
            let name = msg.call.name.clone();
            match start_call(&link, msg.call.into_params(), None, None).await? {
                Started::Result(raw) => CallResult::from_result(link.name(), &name, raw).map(RemoteCallOutcome::Result),
                Started::Task(created) => Ok(RemoteCallOutcome::Task(created)),
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

/// A message with its sender's trace context ([`crate::telemetry::current`]): its future runs
/// with that context current, so the requests it sends are the children of the operation that
/// asked (a gateway's call, made on another thread than this connection's).
pub(crate) struct Traced<M>(pub(crate) M, pub(crate) Option<opentelemetry::Context>);

impl<M> Traced<M> {
    /// `message` with the current context.
    pub(crate) fn current(message: M) -> Traced<M> {
        Traced(message, crate::telemetry::current())
    }
}

impl<M: Message> Message for Traced<M>
where
    M::Result: 'static,
{
    type Result = M::Result;
}

impl ClientConnection {
    /// Handles a traced message with `M`'s handler, its future in the message's context.
    fn traced<M>(&mut self, Traced(msg, cx): Traced<M>, ctx: &mut Context<Self>) -> ResponseFuture<M::Result>
    where
        M: Message,
        M::Result: 'static,
        Self: Handler<M, Result = ResponseFuture<M::Result>>,
    {
        let work = <Self as Handler<M>>::handle(self, msg, ctx);
        match cx {
            None => work,
            Some(cx) => Box::pin(crate::telemetry::Scoped::new(work, Some(cx))),
        }
    }
}

/// The messages a caller's operation sends (not `Invalidate`, which closes the connection).
macro_rules! traced {
    ($($message:ty),*) => {$(
        impl Handler<Traced<$message>> for ClientConnection {
            type Result = ResponseFuture<<$message as Message>::Result>;

            fn handle(&mut self, msg: Traced<$message>, ctx: &mut Self::Context) -> Self::Result {
                self.traced(msg, ctx)
            }
        }
    )*};
}

traced!(CallToolCancellable, StartToolCall, GetTask, CancelTask, SendRequest);

impl<T: Listable> Handler<Traced<List<T>>> for ClientConnection {
    type Result = ResponseFuture<Result<Listing<T>, ClientError>>;

    fn handle(&mut self, msg: Traced<List<T>>, ctx: &mut Self::Context) -> Self::Result {
        self.traced(msg, ctx)
    }
}

/// Close the connection (DELETE its session) and stop the actor.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopClientConnection;

impl Handler<StopClientConnection> for ClientConnection {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: StopClientConnection, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        // Closing is best effort: a panic in it still stops the actor.
        let close = panics::contain(Site::Client, async move { link.close().await }).map(drop);
        AtomicResponse::new(Box::pin(close.into_actor(self).map(|(), _act, ctx| ctx.stop())))
    }
}
