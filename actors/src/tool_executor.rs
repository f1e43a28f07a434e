//! The `ToolExecutor` actor: runs the requests of one connection (stdio, or a session)
//! concurrently and cancels a request on `notifications/cancelled`.
//!
//! Each `Execute` is answered with a future spawned in the actor's context, so the mailbox never
//! waits for a tool: a slow call does not delay the next one. What a request's time limit
//! means is the core's ([`McpServer::execute`]); this module supplies the timer and the metrics.
//! The stateless HTTP path calls [`execute`] directly and creates no actor at all. Every
//! execution is contained ([`crate::panics`]): a panic in it is that request's `-32603` error.
//! [`execute`] is also where every wire's requests get their SERVER span ([`crate::served`]),
//! current while the handler runs, so what the handler does (a gateway's call) is its child.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt as _, Addr, Context, Handler, Message, ResponseActFuture, WrapFuture as _};
use futures_util::future::{AbortHandle, Abortable};
use futures_util::FutureExt as _;
use mcpd::jsonrpc::{Notification, Request, RequestId};
use mcpd::server::{cancelled_request, Method, Reply, Scope, TimeLimit};
use mcpd::{McpServer, ProtocolError};

use crate::counts::{ActorCounts, ActorKind};
use crate::metrics::{Metrics, Outcome};
use crate::panics::{self, Site};
use crate::served::{Served, Serving};
use crate::telemetry::Transport;

/// Serves one request under the time limit and records it in the metrics and telemetry
/// (`transport`: the wire it came over).
///
/// # Errors
/// The request's [`ProtocolError`] (`-32603` when a request other than `tools/call` runs out
/// of time).
pub(crate) async fn execute(
    server: &McpServer,
    metrics: &Metrics,
    request: Request,
    scope: Scope,
    limit: Duration,
    transport: Transport,
) -> Result<Reply, ProtocolError> {
    let served = Served { version: Some(scope.version), session: scope.session_id.as_deref(), transport };
    let serving = Serving::start(&request, served);
    let started = serving.started();
    let method = Method::parse(&request.method);
    // A prompt names the span and the histogram only when the catalog has it.
    let prompt = (method == Method::PromptsGet)
        .then(|| request.params.as_ref().and_then(|p| p.get("name")).and_then(serde_json::Value::as_str))
        .flatten()
        .filter(|name| server.catalog().prompt(name).is_some())
        .map(str::to_owned);
    let label = method.wire_name().unwrap_or(mcpd::telemetry::semconv::OTHER_ERROR);
    let work =
        serving.span().scope(server.execute(request, &scope, TimeLimit::new(limit, actix_rt::time::sleep(limit))));
    let mut work = std::pin::pin!(work);
    match std::future::poll_fn(|cx| panics::poll(Site::Request, work.as_mut(), cx)).await {
        Ok(execution) => {
            metrics.execution(&execution, started.elapsed());
            metrics.client_call(scope.access.as_deref(), &execution);
            let target = execution.tool.as_ref().map(|tool| tool.name.as_str()).or(prompt.as_deref());
            serving.finish(label, target, execution.outcome.as_ref());
            execution.outcome
        }
        Err(_logged_by_the_hook) => {
            metrics.request(method, Outcome::Error, started.elapsed());
            let error =
                ProtocolError::Internal("the server failed on a bug while handling this request (it is logged)".into());
            serving.finish(label, None, Err(&error));
            Err(error)
        }
    }
}

/// Runs `request` on a connection's executor: `None` when it was cancelled (a cancelled request
/// gets no answer); an executor that is gone is an internal error.
pub(crate) fn run(
    executor: &Addr<ToolExecutor>,
    request: Request,
    scope: Scope,
) -> impl Future<Output = Option<Result<Reply, ProtocolError>>> + 'static {
    executor.send(Execute { request, scope }).map(|sent| match sent {
        Ok(outcome) => outcome,
        Err(e) => Some(Err(ProtocolError::Internal(e.to_string()))),
    })
}

/// Routes a client notification to the connection's executor: `notifications/cancelled`
/// cancels the request it names; no other notification concerns the executor.
pub(crate) fn route_notification(executor: &Addr<ToolExecutor>, notification: &Notification) {
    if let Some(id) = cancelled_request(notification) {
        executor.do_send(Cancel { id });
    }
}

/// Runs requests for one connection.
#[derive(Debug)]
pub(crate) struct ToolExecutor {
    server: Arc<McpServer>,
    limit: Duration,
    in_flight: HashMap<RequestId, AbortHandle>,
    counts: Arc<ActorCounts>,
    metrics: Arc<Metrics>,
    transport: Transport,
}

impl ToolExecutor {
    /// An executor over `server` with a per-request time limit, for requests over HTTP.
    pub(crate) fn new(
        server: Arc<McpServer>,
        limit: Duration,
        counts: Arc<ActorCounts>,
        metrics: Arc<Metrics>,
    ) -> Self {
        ToolExecutor { server, limit, in_flight: HashMap::new(), counts, metrics, transport: Transport::Tcp }
    }

    /// The same, for requests over stdio (`network.transport = pipe`).
    #[must_use]
    pub(crate) fn over_pipe(mut self) -> Self {
        self.transport = Transport::Pipe;
        self
    }
}

impl Actor for ToolExecutor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.counts.started(ActorKind::ToolExecutor);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        for (_, handle) in self.in_flight.drain() {
            handle.abort();
        }
        self.counts.stopped(ActorKind::ToolExecutor);
    }
}

/// Run one request. Answers `None` when the request was cancelled (a cancelled request gets
/// no response).
#[derive(Debug, Message)]
#[rtype(result = "Option<Result<Reply, ProtocolError>>")]
pub(crate) struct Execute {
    /// The request.
    pub request: Request,
    /// Its scope.
    pub scope: Scope,
}

impl Handler<Execute> for ToolExecutor {
    type Result = ResponseActFuture<Self, Option<Result<Reply, ProtocolError>>>;

    fn handle(&mut self, msg: Execute, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ToolExecutor);
        let id = msg.request.id.clone();
        let (abort, registration) = AbortHandle::new_pair();
        self.in_flight.insert(id.clone(), abort);
        let server = self.server.clone();
        let metrics = self.metrics.clone();
        let (limit, transport) = (self.limit, self.transport);
        let work = async move { execute(&server, &metrics, msg.request, msg.scope, limit, transport).await };
        Box::pin(Abortable::new(work, registration).into_actor(self).map(move |outcome, act, _| {
            act.in_flight.remove(&id);
            outcome.ok()
        }))
    }
}

/// Cancel an in-flight request (`notifications/cancelled`). Answers whether it was running.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub(crate) struct Cancel {
    /// The id of the request to cancel.
    pub id: RequestId,
}

impl Handler<Cancel> for ToolExecutor {
    type Result = bool;

    fn handle(&mut self, msg: Cancel, _ctx: &mut Self::Context) -> bool {
        self.counts.handled(ActorKind::ToolExecutor);
        match self.in_flight.remove(&msg.id) {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }
}

/// Stop the executor, aborting whatever still runs.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct StopToolExecutor;

impl Handler<StopToolExecutor> for ToolExecutor {
    type Result = ();

    fn handle(&mut self, _msg: StopToolExecutor, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::ToolExecutor);
        actix::ActorContext::stop(ctx);
    }
}
