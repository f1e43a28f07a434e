//! The `ClientConnection` actor: one per remote server (and configuration fingerprint). It owns
//! the [`Link`] to that server — its own awc client, negotiated revision, session id and
//! streams — and serves `ListTools`, `CallTool`, `SendRequest` concurrently (each answer is a
//! future spawned on the actor's thread: no per-server lock). `Invalidate` closes the session
//! (DELETE), stops the streams and the actor.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use actix::{
    Actor, ActorContext, ActorFutureExt as _, AtomicResponse, Context, Handler, Message, ResponseFuture,
    WrapFuture as _,
};
use mcpd::client::request::usable_tools;
use mcpd::model::{ContentBlock, Implementation, Tool};
use serde_json::{json, Map, Value};

use super::error::ClientError;
use super::handlers::ClientHandlers;
use super::link::{Link, LinkConfig, Mode};
use crate::counts::{ActorCounts, ActorKind};

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
    fn from_result(server_name: &str, tool_name: &str, raw: Value) -> CallResult {
        // One pass over the result's members instead of a hashed lookup per field.
        let (mut content, mut structured_content, mut is_error) = (Vec::new(), None, false);
        for (key, value) in raw.as_object().into_iter().flatten() {
            match key.as_str() {
                "content" => {
                    content = value
                        .as_array()
                        .map(|blocks| blocks.iter().filter_map(|b| serde::Deserialize::deserialize(b).ok()).collect())
                        .unwrap_or_default();
                }
                "structuredContent" => structured_content = Some(value.clone()),
                "isError" => is_error = value.as_bool().unwrap_or(false),
                _ => {}
            }
        }
        CallResult {
            server_name: server_name.to_owned(),
            tool_name: tool_name.to_owned(),
            content,
            structured_content,
            is_error,
            raw,
        }
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
/// annotations are invalid are dropped with a warning.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<Tool>, ClientError>")]
pub struct ListTools;

impl Handler<ListTools> for ClientConnection {
    type Result = ResponseFuture<Result<Vec<Tool>, ClientError>>;

    fn handle(&mut self, _msg: ListTools, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ClientConnection);
        let link = self.link.clone();
        Box::pin(async move { list_tools(&link).await })
    }
}

async fn list_tools(link: &Rc<Link>) -> Result<Vec<Tool>, ClientError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    loop {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), json!(cursor));
        }
        let result = link.request("tools/list", params).await?;
        let page = result.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
        for tool in page {
            let mut tool = tool;
            if tool.get("inputSchema").is_none() {
                tool["inputSchema"] = json!({});
            }
            match serde_json::from_value::<Tool>(tool) {
                Ok(tool) if !tool.name.trim().is_empty() => tools.push(tool),
                Ok(_) => {}
                Err(e) => log::warn!("{}: skipping a malformed tool: {e}", link.name()),
            }
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => {
                if !seen.insert(next.to_owned()) {
                    return Err(ClientError::Protocol("MCP server returned a repeated tools/list cursor.".into()));
                }
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }
    if link.mode() == Some(Mode::Stateless) {
        let (usable, dropped) = usable_tools(tools);
        for (name, reason) in dropped {
            log::warn!("{}: dropping tool {name}: {reason}", link.name());
        }
        let params: HashMap<String, _> = usable.iter().map(|(t, p)| (t.name.clone(), p.clone())).collect();
        link.remember_tool_params(params);
        return Ok(usable.into_iter().map(|(tool, _)| tool).collect());
    }
    Ok(tools)
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
        Box::pin(call_tool(self.link.clone(), msg, None))
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
        Box::pin(call_tool(self.link.clone(), msg.call, Some(msg.cancel)))
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
    Ok(CallResult::from_result(link.name(), &name, raw))
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
        Box::pin(async move { link.request(&msg.method, msg.params).await })
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
        AtomicResponse::new(Box::pin(
            async move { link.close().await }.into_actor(self).map(|(), _act, ctx| ctx.stop()),
        ))
    }
}
