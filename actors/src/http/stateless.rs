//! The 2026-07-28 stateless wire on `POST /mcp`: validate (all of it in the core), execute,
//! answer — and, only when the request asked for progress (`progressToken`) or logs
//! (`logLevel`), stream those notifications on the request's own SSE response before the result
//! ([`super::stream`]). `subscriptions/listen` holds its response open as a stream of
//! list_changed / resource-updated notifications.
//!
//! Closing a streamed response is cancellation on this wire: the request's work is dropped.

use std::future::ready;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::HttpResponse;
use mcpd::auth::scopes::Access;
use mcpd::catalog::LiveCatalog;
use mcpd::context::Peer;
use mcpd::jsonrpc::{self, Request};
use mcpd::model::meta_keys;
use mcpd::server::{HttpHeaders, Interest, Method, Scope};
use mcpd::version::Era;
use serde_json::{json, Map, Value};

use super::reply::{error_response, result_response};
use super::stream::{outbox, respond, sse, BodySink, Exchange};
use super::AppState;
use crate::counts::EdgeCounters;
use crate::metrics::Outcome;
use crate::queue::{self, EventSender, Label, Outbox, QueueLimits};
use crate::tool_executor::execute;

/// Notifications of one stateless request, written to its own response stream (bounded: ones
/// the client does not keep up with are dropped and counted, see [`crate::queue`]).
struct StatelessPeer {
    out: Outbox,
}

impl Peer for StatelessPeer {
    fn notify(&self, method: &str, params: Value) {
        self.out.notify(jsonrpc::outgoing_message(None, method, Some(&params)));
    }
    // Servers send no requests on this wire (input comes through MRTR): the default refuses.
}

/// Serves one stateless request.
pub(super) async fn serve(
    request: Request,
    headers: &HttpHeaders<'_>,
    state: &AppState,
    access: Option<Arc<Access>>,
) -> HttpResponse {
    let valid = match state.server.validate_stateless(&request, Some(headers)) {
        Ok(valid) => valid,
        Err(error) => {
            state.metrics.rejected(&request);
            return error_response(Some(&request.id), &error, Era::Stateless);
        }
    };
    if valid.method == Method::Listen {
        state.metrics.request(Method::Listen, Outcome::Ok, Duration::ZERO);
        let queue = QueueLimits::from(&state.limits);
        return listen(request, state.server.live_catalog().clone(), queue, state.metrics.edge());
    }
    let id = request.id.clone();
    let may_stream = valid.may_stream();
    let scope = Scope { access, ..Scope::stateless(valid) };
    if !may_stream {
        // The hot path: nothing can be streamed, so nothing is set up for it.
        let outcome = execute(&state.server, &state.metrics, request, scope, state.limits.tool_timeout).await;
        return match outcome {
            Ok(result) => result_response(&id, &result),
            Err(error) => error_response(Some(&id), &error, Era::Stateless),
        };
    }
    let queue = QueueLimits::from(&state.limits);
    let edge = state.metrics.edge().clone();
    let (out, messages) = outbox(queue, Label::Request { session: None, id: id.clone() }, &edge);
    let scope = Scope { peer: Some(Arc::new(StatelessPeer { out })), ..scope };
    let (server, metrics, limit) = (state.server.clone(), state.metrics.clone(), state.limits.tool_timeout);
    let execution = Box::pin(async move { Some(execute(&server, &metrics, request, scope, limit).await) });
    let what = format!("SSE answer to stateless request {id}");
    let exchange = Exchange { id, era: Era::Stateless, execution, messages, close: None };
    respond(exchange, || ready(Ok::<_, HttpResponse>(BodySink::open(queue, what, edge)))).await
}

/// Removes a listen stream's catalog listener when its response is dropped.
struct ListenGuard {
    catalog: Arc<LiveCatalog>,
    listener: u64,
    /// The stream's resource subscriptions, released from the catalog's counts.
    interest: Interest,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.catalog.unlisten(self.listener);
        self.interest.release(&self.catalog);
    }
}

/// `subscriptions/listen`: acknowledge first (with the honoured filter), then forward matching
/// catalog events, every one tagged with the subscription id (the listen request's id). A
/// listener that does not read its events is cut off ([`crate::queue`]).
fn listen(request: Request, catalog: Arc<LiveCatalog>, queue: QueueLimits, edge: &Arc<EdgeCounters>) -> HttpResponse {
    let interest = Interest::listen(request.params.as_ref());
    let subscription = request.id.to_string();
    let what = format!("subscriptions/listen stream {subscription}");
    let tag = move |params: Option<Map<String, Value>>| {
        let mut params = params.unwrap_or_default();
        params.insert("_meta".into(), json!({ meta_keys::SUBSCRIPTION_ID: subscription }));
        Value::Object(params)
    };
    let event =
        |method: &str, params: &Value| sse::message(None, &jsonrpc::outgoing_message(None, method, Some(params)));
    let (tx, rx): (EventSender, _) = queue::events(queue, what, edge.clone());
    let mut ack = Map::new();
    ack.insert("notifications".into(), interest.honoured());
    tx.push(event("notifications/subscriptions/acknowledged", &tag(Some(ack))));
    let sender = tx.clone();
    interest.hold(&catalog);
    let held = interest.clone();
    let listener = catalog.listen(move |change| {
        if let Some((method, params)) = interest.announcement(change) {
            sender.push(event(method, &tag(params)));
        }
    });
    actix_rt::spawn(async move {
        let started = Instant::now();
        loop {
            tokio::select! {
                () = actix_rt::time::sleep(sse::KEEP_ALIVE_INTERVAL) => {
                    if !tx.push(sse::keep_alive()) { break; }
                }
                () = tx.closed() => break,
            }
        }
        log::debug!("listen stream closed after {:?}", started.elapsed());
    });
    sse::response(rx, ListenGuard { catalog, listener, interest: held })
}
