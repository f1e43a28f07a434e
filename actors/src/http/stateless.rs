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
use mcpd::auth::identity::Identity;
use mcpd::catalog::LiveCatalog;
use mcpd::context::Peer;
use mcpd::jsonrpc::{self, ClientCapabilities, Request};
use mcpd::model::meta_keys;
use mcpd::server::{HttpHeaders, Interest, Method, Scope, Screen};
use mcpd::version::{Era, ProtocolVersion};
use serde_json::{json, Map, Value};

use super::guard::Caller;
use super::reply::{error_response, result_response, share_refused};
use super::state::AppState;
use super::stream::{outbox, respond, sse, BodySink, Exchange};
use crate::counts::EdgeCounters;
use crate::metrics::Outcome;
use crate::queue::{self, EventSender, Label, Outbox, QueueLimits};
use crate::served::{Served, Serving};
use crate::shares::{Held, Resource};
use crate::tasks::Tasks;
use crate::telemetry::Transport;
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

/// `subscriptions/listen`'s name.
const LISTEN: &str = "subscriptions/listen";

/// Serves one stateless request.
pub(super) async fn serve(
    request: Request,
    headers: &HttpHeaders<'_>,
    state: &AppState,
    caller: Caller,
) -> HttpResponse {
    let Caller { access, identity } = caller;
    let valid = match state.server.validate_stateless_for(&request, Some(headers), access.as_deref()) {
        Ok(valid) => valid,
        Err(error) => {
            state.metrics.rejected(&request);
            let served = Served { version: Some(ProtocolVersion::STATELESS), session: None, transport: Transport::Tcp };
            crate::served::refused(&request, served, &error);
            return error_response(Some(&request.id), &error, Era::Stateless);
        }
    };
    if valid.method == Method::Listen {
        // Answered here, not by the executor: its span ends when the stream is acknowledged.
        let served = Served { version: Some(ProtocolVersion::STATELESS), session: None, transport: Transport::Tcp };
        let serving = Serving::start(&request, served);
        let owner = identity.as_ref().map_or(mcpd::server::ANONYMOUS_OWNER, Identity::as_str);
        let tasks = match task_listen(&request, &valid.client_capabilities, state, owner).await {
            Ok(tasks) => tasks,
            Err(error) => {
                state.metrics.request(Method::Listen, Outcome::Error, Duration::ZERO);
                let response = error_response(Some(&request.id), &error, Era::Stateless);
                serving.finish_edge(LISTEN, &Err::<(), _>(error));
                return response;
            }
        };
        let shares = state.sessions.shares();
        let share = match shares.take(identity.as_ref(), access.as_deref(), Resource::Streams) {
            Ok(share) => share,
            Err(refusal) => return share_refused(Some(&request.id), &refusal),
        };
        state.metrics.request(Method::Listen, Outcome::Ok, Duration::ZERO);
        serving.finish_edge(LISTEN, &Ok::<(), mcpd::ProtocolError>(()));
        let queue = QueueLimits::from(&state.limits);
        let screen = Screen::new(access.as_deref());
        let catalog = state.server.live_catalog().clone();
        return listen(request, (catalog, share), queue, state.metrics.edge(), tasks, screen);
    }
    let share = match state.sessions.shares().take(identity.as_ref(), access.as_deref(), Resource::InFlight) {
        Ok(share) => share,
        Err(refusal) => return share_refused(Some(&request.id), &refusal),
    };
    let id = request.id.clone();
    let may_stream = valid.may_stream();
    let scope = Scope { access, caller: identity, ..Scope::stateless(valid) };
    if !may_stream {
        // The hot path: nothing can be streamed, so nothing is set up for it.
        let outcome =
            execute(&state.server, &state.metrics, request, scope, state.limits.tool_timeout, Transport::Tcp).await;
        drop(share);
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
    let execution = Box::pin(async move {
        let _share = share;
        Some(execute(&server, &metrics, request, scope, limit, Transport::Tcp).await)
    });
    let what = format!("SSE answer to stateless request {id}");
    let exchange = Exchange { id, era: Era::Stateless, execution, messages, close: None };
    respond(exchange, || ready(Ok::<_, HttpResponse>(BodySink::open(queue, what, edge)))).await
}

/// The tasks a `subscriptions/listen` asks to hear about (`notifications.taskIds`): `-32021`
/// when the request did not declare the extension; only the caller's own tasks are accepted.
async fn task_listen(
    request: &Request,
    capabilities: &ClientCapabilities,
    state: &AppState,
    owner: &str,
) -> Result<Option<(Tasks, Vec<String>)>, mcpd::ProtocolError> {
    let asked = request
        .params
        .as_ref()
        .and_then(|p| p.get("notifications"))
        .and_then(|n| n.get("taskIds"))
        .and_then(Value::as_array);
    let Some(asked) = asked else { return Ok(None) };
    let Some(tasks) = state.tasks.clone() else { return Ok(None) };
    if !capabilities.declares_tasks() {
        return Err(mcpd::tasks::missing_extension());
    }
    let mut accepted = Vec::new();
    for id in asked.iter().filter_map(Value::as_str).take(MAX_LISTENED_TASKS) {
        if !accepted.iter().any(|a| a == id) && tasks.owns(owner, id).await {
            accepted.push(id.to_owned());
        }
    }
    Ok(Some((tasks, accepted)))
}

/// Task ids one listen stream may follow.
const MAX_LISTENED_TASKS: usize = 256;

/// Removes a listen stream's catalog listener when its response is dropped.
struct ListenGuard {
    catalog: Arc<LiveCatalog>,
    listener: u64,
    /// The stream's resource subscriptions, released from the catalog's counts.
    interest: Interest,
    /// The caller's share of streams this one holds.
    _share: Held,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.catalog.unlisten(self.listener);
        self.interest.release(&self.catalog);
    }
}

/// `subscriptions/listen`: acknowledge first (with the honoured filter), then forward matching
/// catalog events, every one tagged with the subscription id (the listen request's id). A
/// listener that does not read its events is cut off ([`crate::queue`]). What the caller may not
/// see is acknowledged like anything unknown and never heard (`screen`).
fn listen(
    request: Request,
    (catalog, share): (Arc<LiveCatalog>, Held),
    queue: QueueLimits,
    edge: &Arc<EdgeCounters>,
    tasks: Option<(Tasks, Vec<String>)>,
    screen: Screen<'_>,
) -> HttpResponse {
    let asked = Interest::listen(request.params.as_ref());
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
    let mut honoured = asked.honoured();
    let interest = screen.interest(asked);
    if let (Some((_, ids)), Some(object)) = (&tasks, honoured.as_object_mut()) {
        object.insert("taskIds".into(), json!(ids));
    }
    ack.insert("notifications".into(), honoured);
    tx.push(event("notifications/subscriptions/acknowledged", &tag(Some(ack))));
    let mut task_events = tasks.filter(|(_, ids)| !ids.is_empty()).map(|(tasks, ids)| (tasks.subscribe(), ids));
    let sender = tx.clone();
    interest.hold(&catalog);
    let held = interest.clone();
    let catalog_tag = tag.clone();
    let listener = catalog.listen(move |change| {
        if let Some((method, params)) = interest.announcement(change) {
            sender.push(event(method, &catalog_tag(params)));
        }
    });
    let task_tag = tag;
    actix_rt::spawn(async move {
        let started = Instant::now();
        loop {
            let next_task = async {
                match task_events.as_mut() {
                    Some((events, _)) => events.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = actix_rt::time::sleep(sse::KEEP_ALIVE_INTERVAL) => {
                    if !tx.push(sse::keep_alive()) { break; }
                }
                () = tx.closed() => break,
                changed = next_task => match changed {
                    Ok(task) => {
                        let followed = task_events.as_ref().is_some_and(|(_, ids)| ids.contains(&task.task.task_id));
                        if followed {
                            let params = match task.to_notification_params() {
                                Value::Object(params) => Some(params),
                                _ => None,
                            };
                            if !tx.push(event(mcpd::tasks::STATUS_NOTIFICATION, &task_tag(params))) { break; }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        log::debug!("listen stream missed {missed} task status changes");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => task_events = None,
                },
            }
        }
        log::debug!("listen stream closed after {:?}", started.elapsed());
    });
    sse::response(rx, ListenGuard { catalog, listener, interest: held, _share: share })
}
