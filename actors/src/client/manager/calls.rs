//! A manager's tool calls. A call runs on this thread's satellite when there is one (see
//! `satellite`), else through the connection actor; a refusal the connection answers with
//! OAuth is sent again through the connection. The entry points:
//!
//! - [`ClientManager::call_tool`] and [`ClientManager::call_tool_with`], for every caller;
//! - [`ClientManager::pass_tool_call`], a gateway's usual call, whose usual answer comes back as
//!   the result the gateway passes on;
//! - [`ClientManager::forward`], a gateway's plain call (its lane, the hot path): written on the
//!   satellite at once, its usual answer kept as the text it came as;
//! - [`ClientManager::start_tool_call`], which returns a task the server makes of the call.
//!
//! A satellite's call waits in its thread's table ([`ThreadBound`]); what the caller's future
//! holds of it is small, and the connection's path, a large future few calls take, is boxed
//! where it starts.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use mcpd::jsonrpc::ClientCapabilities;
use serde_json::{Map, Value};

use super::satellite::Satellite;
use super::ClientManager;
use crate::client::bound::ThreadBound;
use crate::client::connection::{CallToolCancellable, StartToolCall, Traced};
use crate::client::error::ClientError;
use crate::client::handlers::CallHandlers;
use crate::client::link::ToolName;
use crate::client::tool_call::{
    call_tool, forward_tool_call, pass_tool_call, CallResult, CallTool, Passed, RemoteCallOutcome,
};

/// What a tool call sends besides the tool's name.
#[derive(Clone)]
struct CallParts {
    arguments: Map<String, Value>,
    /// The request's own `_meta`.
    meta: Option<Map<String, Value>>,
    /// Handlers for this call only.
    handlers: Option<CallHandlers>,
}

/// Where a call went.
enum Route {
    /// To this thread's satellite: the call's future (dropping it aborts the call, which closes
    /// its stream) and, when the connection answers a `401` with OAuth, the call again for a
    /// retry through the connection.
    Satellite { call: ThreadBound, retry: Option<CallParts> },
    /// Nowhere yet: there is no satellite here, the connection takes it.
    Connection(CallParts),
}

/// A gateway's plain call forwarded on this thread's satellite ([`ClientManager::forward`]).
/// Awaited, what the call came to — or `None` when the server refused it (`401`/`403`, so it was
/// not processed) and the connection may answer that with OAuth: the call then goes the usual
/// way, which sends it through the connection (no copy of every call's arguments is kept for
/// that rare case). A result read whole keeps the server's name as its link has it.
pub(crate) struct Forwarding {
    call: ThreadBound,
    /// Whether the connection answers a `401` with OAuth.
    oauth: bool,
}

impl Future for Forwarding {
    type Output = Option<Result<Passed, ClientError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        Pin::new(&mut this.call).poll(cx).map(|outcome| match outcome {
            Err(error) if this.oauth && error.is_unauthorized() => None,
            outcome => Some(outcome),
        })
    }
}

/// A call on this thread's satellite, its panic contained, as a future the caller may hold on
/// any thread ([`ThreadBound`]).
/// With telemetry on, the call runs in the caller's trace context (the operation it serves),
/// wherever its table polls it.
fn contained_call(call: impl Future<Output = Result<Passed, ClientError>> + 'static) -> ThreadBound {
    // Mapped, not awaited in another async block: that block would hold the call twice over
    // (captured, then contained), and its size is copied into the table's box.
    let call = crate::telemetry::Scoped::new(call, crate::telemetry::current());
    ThreadBound::new(futures_util::FutureExt::map(
        crate::panics::contain(crate::panics::Site::Client, call),
        |outcome| outcome.unwrap_or_else(|panic| Err(ClientError::from(panic))),
    ))
}

impl ClientManager {
    /// Calls a tool. A tool's own failure is `Ok` with `is_error: true`. Dropping the returned
    /// future cancels the call (`notifications/cancelled` in a session; the stream closes on the
    /// stateless wire). A task the server makes of the call (2026-07-28, the tasks extension) is
    /// waited for, up to the record's `task_wait_secs`, and its result returned as if the call
    /// had answered it; dropping the future meanwhile cancels the task (`tasks/cancel`).
    ///
    /// # Errors
    /// Transport, protocol and configuration failures.
    pub async fn call_tool(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, ClientError> {
        self.call_tool_with(id, tool, arguments, None, None).await
    }

    /// As [`ClientManager::call_tool`], with the request's own `_meta` (its `traceparent` and
    /// `tracestate` are also sent as HTTP headers to an HTTP server) and handlers for this call
    /// only: the server's progress (a progress token is added to `_meta` when
    /// `handlers.progress` is set), log messages and requests during the call reach them when
    /// they belong to it (see [`CallHandlers`]); the rest goes to the manager's handlers. With
    /// `handlers.relay_input`, a stateless `input_required` round is returned as the result (its
    /// `raw` has `resultType: "input_required"`), and `handlers.resume` carries the caller's
    /// answers back. A stateless call runs on this thread's satellite link when there is one.
    ///
    /// # Errors
    /// As [`ClientManager::call_tool`].
    pub async fn call_tool_with(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Option<Map<String, Value>>,
        handlers: Option<CallHandlers>,
    ) -> Result<CallResult, ClientError> {
        let passed = self.call(id, tool, CallParts { arguments, meta, handlers }, false).await?;
        Ok(passed.into_call_result(tool))
    }

    /// As [`ClientManager::call_tool_with`] for the gateway, with its handlers: on a satellite,
    /// the usual answer comes back as the result the gateway passes on ([`Passed::Result`]),
    /// never built as a JSON value.
    pub(crate) async fn pass_tool_call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Option<Map<String, Value>>,
        handlers: CallHandlers,
    ) -> Result<Passed, ClientError> {
        self.call(id, tool, CallParts { arguments, meta, handlers: Some(handlers) }, true).await
    }

    /// A call on this thread's satellite when there is one, else through the connection;
    /// `passing` as in [`ClientManager::pass_tool_call`].
    async fn call(&self, id: &str, tool: &str, parts: CallParts, passing: bool) -> Result<Passed, ClientError> {
        // The connection's path is boxed: its future is large, and a call on a satellite (the
        // gateway's usual one, whose future is moved and boxed along the call) never needs it.
        let (call, retry) = match self.route(id, tool, parts, passing) {
            Route::Satellite { call, retry } => (call, retry),
            Route::Connection(parts) => {
                return Box::pin(self.call_on_connection(id, tool, parts)).await.map(Passed::Raw)
            }
        };
        self.finish(id, tool, call, retry).await
    }

    /// Forwards a gateway's plain call ([`mcpd::catalog::ToolLane`]) of `tool` on this thread's
    /// satellite of server `id`, when there is one on the stateless wire: the request is written
    /// now (`meta`, the caller's trace context, in its `_meta`; `capabilities`, the caller's,
    /// declared for it), and the usual answer comes back as its text ([`Passed::Text`]) when the
    /// returned [`Forwarding`] is awaited. `None`: the call goes the usual way.
    pub(crate) fn forward(
        &self,
        id: &str,
        tool: &ToolName,
        arguments: &Map<String, Value>,
        meta: Option<&Map<String, Value>>,
        capabilities: Option<&ClientCapabilities>,
    ) -> Option<Forwarding> {
        let Satellite { link, share } = self.satellite(id)?;
        let none = Value::Object(Map::new());
        let caller = capabilities.map_or(&none, ClientCapabilities::value);
        let call = match link.forward_request(tool, arguments, meta, caller) {
            Ok(request) => contained_call(forward_tool_call(link, request, tool.as_str().to_owned())),
            Err(error) => ThreadBound::new(std::future::ready(Err(error))),
        };
        Some(Forwarding { call, oauth: share.oauth() })
    }

    /// Waits for a call on a satellite: a refusal with OAuth is sent again through the
    /// connection; a result read whole is named as the server is configured.
    async fn finish(
        &self,
        id: &str,
        tool: &str,
        call: ThreadBound,
        retry: Option<CallParts>,
    ) -> Result<Passed, ClientError> {
        let outcome = call.await;
        match (outcome, retry) {
            // With OAuth the connection answers a 401 and the call is sent again through it
            // (whatever the refusal's body: a JSON-RPC error, an OAuth error, nothing).
            (Err(error), Some(parts)) if error.is_unauthorized() => {
                Box::pin(self.call_on_connection(id, tool, parts)).await.map(Passed::Raw)
            }
            (Ok(Passed::Raw(result)), _) => self.named(id, Ok(result)).map(Passed::Raw),
            (outcome, _) => outcome,
        }
    }

    /// Where a call goes: to this thread's satellite, when there is one, which starts it now.
    fn route(&self, id: &str, tool: &str, parts: CallParts, passing: bool) -> Route {
        let Some(Satellite { link, share }) = self.satellite(id) else { return Route::Connection(parts) };
        let retry = share.oauth().then(|| parts.clone());
        let CallParts { arguments, meta, handlers } = parts;
        let call = CallTool { name: tool.to_owned(), arguments };
        // The link is this thread's: the call waits in this thread's table, so the caller's
        // future stays `Send`; polling its handle polls the call when the call was woken.
        let call = async move {
            match handlers {
                Some(handlers) if passing => pass_tool_call(link, call, meta, handlers).await,
                handlers => call_tool(link, call, None, meta, handlers).await.map(Passed::Raw),
            }
        };
        Route::Satellite { call: contained_call(call), retry }
    }

    /// The configured name of the server in a call's result.
    fn named(&self, id: &str, outcome: Result<CallResult, ClientError>) -> Result<CallResult, ClientError> {
        let mut result = outcome?;
        if let Some(name) = self.records.get(id).and_then(|stored| stored.server_name.clone()) {
            result.server_name = name;
        }
        Ok(result)
    }

    /// [`ClientManager::call_tool_with`] through the connection actor.
    async fn call_on_connection(&self, id: &str, tool: &str, parts: CallParts) -> Result<CallResult, ClientError> {
        let connection = self.addr(id)?;
        // Held until the answer arrives; dropped with this future, which cancels the call.
        let (_cancel_on_drop, cancel) = tokio::sync::oneshot::channel::<()>();
        let CallParts { arguments, meta, handlers } = parts;
        let call = CallToolCancellable { call: CallTool { name: tool.to_owned(), arguments }, cancel, meta, handlers };
        let outcome = connection.send(Traced::current(call)).await.map_err(|_| ClientError::Closed)?;
        self.named(id, outcome)
    }

    /// Calls a tool without waiting for a task: the result when the server answers at once,
    /// else the task it made of the call (see [`ClientManager::get_task`],
    /// [`ClientManager::cancel_task`]). Dropping the future does not cancel a task already made.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures.
    pub async fn start_tool_call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<RemoteCallOutcome, ClientError> {
        let live = self.live(id)?;
        let call = StartToolCall { call: CallTool { name: tool.to_owned(), arguments } };
        let mut outcome = live.addr.send(Traced::current(call)).await.map_err(|_| ClientError::Closed)??;
        if let (RemoteCallOutcome::Result(result), Some(name)) = (&mut outcome, live.server_name) {
            result.server_name = name;
        }
        Ok(outcome)
    }
}
