//! The `ClientConnection` actor: one per remote server (and configuration fingerprint). It owns
//! the [`Link`] to that server — its own awc client, negotiated revision, session id and
//! streams — and serves `ListTools`, `List<T>`, `CallTool`, `SendRequest` concurrently (each
//! answer is a future spawned on the actor's thread: no per-server lock). `Invalidate` closes
//! the session (DELETE), stops the streams and the actor.
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
use mcpd::model::{ContentBlock, Implementation, Prompt, Resource, ResourceTemplate, Tool};
use serde_json::{Map, Value};

use super::error::ClientError;
use super::handlers::ClientHandlers;
use super::link::{Link, LinkConfig, Mode};
use super::listing::list_all;
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
    fn from_result(server_name: &str, tool_name: &str, raw: Value) -> Result<CallResult, ClientError> {
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
        contained(call_tool(link, msg, None))
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
}

impl Handler<CallToolCancellable> for ClientConnection {
    type Result = ResponseFuture<Result<CallResult, ClientError>>;

    fn handle(&mut self, msg: CallToolCancellable, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        contained(call_tool(link, msg.call, Some(msg.cancel)))
    }
}

/// Calls a tool; `cancel`, when given, abandons the call as [`CallToolCancellable`] says.
async fn call_tool(
    link: Rc<Link>,
    call: CallTool,
    cancel: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<CallResult, ClientError> {
    let CallTool { name, arguments } = call;
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.clone()));
    params.insert("arguments".into(), Value::Object(arguments));
    let raw = link.request_cancellable("tools/call", params, cancel).await?;
    CallResult::from_result(link.name(), &name, raw)
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
        contained(async move { link.request(&msg.method, msg.params).await })
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
