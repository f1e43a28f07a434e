//! The `ToolExecutor` actor: runs the requests of one connection (stdio, or a session)
//! concurrently, applies the time limit, and cancels a request on `notifications/cancelled`.
//!
//! Each `Execute` is answered with a future spawned in the actor's context, so the mailbox never
//! waits for a tool: a slow call does not delay the next one. The stateless HTTP path calls
//! [`execute`] directly and creates no actor at all.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt as _, Context, Handler, Message, ResponseActFuture, WrapFuture as _};
use futures_util::future::{AbortHandle, Abortable};
use mcpd::jsonrpc::{Request, RequestId};
use mcpd::model::CallToolResult;
use mcpd::server::Scope;
use mcpd::version::Era;
use mcpd::{McpServer, ProtocolError};
use serde_json::{json, Value};

use crate::counts::{ActorCounts, ActorKind};
use crate::metrics::{Metrics, Outcome};

/// Serves one request under the time limit. A `tools/call` that runs out of time is answered
/// as a tool failure (`isError: true`) naming the limit; any other request, as `-32603`.
///
/// # Errors
/// The request's [`ProtocolError`], or `-32603` on timeout.
pub async fn execute(
    server: &McpServer,
    metrics: &Metrics,
    request: Request,
    scope: Scope,
    limit: Duration,
) -> Result<Value, ProtocolError> {
    let started = Instant::now();
    let method = request.method.clone();
    let tool = (method == "tools/call")
        .then(|| request.params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str).map(str::to_owned))
        .flatten();
    let outcome = run_limited(server, request, scope, limit).await;
    metrics.request(&method, if outcome.is_ok() { Outcome::Ok } else { Outcome::Error }, started.elapsed());
    if let Some(tool) = tool {
        let label = match &outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => Some("is_error"),
            Ok(_) => Some("ok"),
            // Unknown tools are not labelled: their names are the client's to choose.
            Err(_) if server.catalog().tool(&tool).is_none() => None,
            Err(_) => Some("error"),
        };
        if let Some(label) = label {
            metrics.tool_call(&tool, label);
        }
    }
    outcome
}

async fn run_limited(
    server: &McpServer,
    request: Request,
    scope: Scope,
    limit: Duration,
) -> Result<Value, ProtocolError> {
    let is_tool_call = request.method == "tools/call";
    let era = scope.version.era();
    match actix_rt::time::timeout(limit, server.handle(request, &scope)).await {
        Ok(outcome) => outcome,
        Err(_) if is_tool_call => {
            let mut result = json!(CallToolResult::error(format!(
                "The tool call exceeded the server's time limit of {} s and was stopped.",
                limit.as_secs_f64()
            )));
            if era == Era::Stateless {
                result["resultType"] = json!("complete");
            }
            Ok(result)
        }
        Err(_) => Err(ProtocolError::Internal(format!(
            "request exceeded the server's time limit of {} s",
            limit.as_secs_f64()
        ))),
    }
}

/// Runs requests for one connection.
#[derive(Debug)]
pub struct ToolExecutor {
    server: Arc<McpServer>,
    limit: Duration,
    in_flight: HashMap<RequestId, AbortHandle>,
    counts: Arc<ActorCounts>,
    metrics: Arc<Metrics>,
}

impl ToolExecutor {
    /// An executor over `server` with a per-request time limit.
    pub fn new(server: Arc<McpServer>, limit: Duration, counts: Arc<ActorCounts>, metrics: Arc<Metrics>) -> Self {
        ToolExecutor { server, limit, in_flight: HashMap::new(), counts, metrics }
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
#[rtype(result = "Option<Result<Value, ProtocolError>>")]
pub struct Execute {
    /// The request.
    pub request: Request,
    /// Its scope.
    pub scope: Scope,
}

impl Handler<Execute> for ToolExecutor {
    type Result = ResponseActFuture<Self, Option<Result<Value, ProtocolError>>>;

    fn handle(&mut self, msg: Execute, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::ToolExecutor);
        let id = msg.request.id.clone();
        let (abort, registration) = AbortHandle::new_pair();
        self.in_flight.insert(id.clone(), abort);
        let server = self.server.clone();
        let metrics = self.metrics.clone();
        let limit = self.limit;
        let work = async move { execute(&server, &metrics, msg.request, msg.scope, limit).await };
        Box::pin(Abortable::new(work, registration).into_actor(self).map(move |outcome, act, _| {
            act.in_flight.remove(&id);
            outcome.ok()
        }))
    }
}

/// Cancel an in-flight request (`notifications/cancelled`). Answers whether it was running.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct Cancel {
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
pub struct StopExecutor;

impl Handler<StopExecutor> for ToolExecutor {
    type Result = ();

    fn handle(&mut self, _msg: StopExecutor, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::ToolExecutor);
        actix::ActorContext::stop(ctx);
    }
}
