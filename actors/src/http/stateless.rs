//! The 2026-07-28 stateless wire on `POST /mcp`: validate, execute, answer — and, only when the
//! request asked for progress (`progressToken`) or logs (`logLevel`), stream those notifications
//! on the request's own SSE response before the result. `subscriptions/listen` holds its response
//! open as a stream of list_changed / resource-updated notifications.
//!
//! Closing a streamed response is cancellation on this wire: the request's work is dropped.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt as _;
use mcpd::catalog::{CatalogEvent, LiveCatalog};
use mcpd::context::Peer;
use mcpd::jsonrpc::{self, Outgoing, Request, RequestId};
use mcpd::model::meta_keys;
use mcpd::server::{validate_stateless, RoutingHeaders, Scope};
use mcpd::version::Era;
use mcpd::ProtocolError;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use super::reply::{error_response, json_bytes, result_response};
use super::AppState;
use crate::metrics::Outcome;
use crate::session::KEEP_ALIVE_INTERVAL;
use crate::tool_executor::execute;

/// Notifications of one stateless request, written to its own response stream.
struct StatelessPeer {
    out: UnboundedSender<Vec<u8>>,
}

impl Peer for StatelessPeer {
    fn notify(&self, method: &str, params: Value) {
        let _ = self.out.send(jsonrpc::outgoing_message(None, method, Some(&params)));
    }
    // Servers send no requests on this wire (input comes through MRTR): the default refuses.
}

fn event(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

fn sse(body: UnboundedReceiver<Bytes>, guard: Option<ListenGuard>) -> HttpResponse {
    let mut body = body;
    let stream = futures_util::stream::poll_fn(move |cx| {
        let _keep = &guard;
        body.poll_recv(cx)
    })
    .map(Ok::<_, Infallible>);
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .streaming(stream)
}

fn answer_bytes(id: &RequestId, outcome: &Result<Value, ProtocolError>) -> Vec<u8> {
    match outcome {
        Ok(result) => Outgoing::Result { id, result }.to_vec(),
        Err(error) => {
            let object = error.to_error_object(Era::Stateless);
            Outgoing::Error { id: Some(id), error: &object }.to_vec()
        }
    }
}

/// Serves one stateless request.
pub(super) async fn serve(
    request: Request,
    routing: &RoutingHeaders<'_>,
    req: &HttpRequest,
    state: &AppState,
) -> HttpResponse {
    let checked = validate_stateless(&request, Some(routing)).and_then(|valid| {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        state.server.check_param_headers(&request, header).map(|()| valid)
    });
    let valid = match checked {
        Ok(valid) => valid,
        Err(error) => {
            state.metrics.request(&request.method, Outcome::Rejected, Duration::ZERO);
            return error_response(Some(&request.id), &error, Era::Stateless);
        }
    };
    if request.method == "subscriptions/listen" {
        state.metrics.request(&request.method, Outcome::Ok, Duration::ZERO);
        return listen(request, state.server.live_catalog().clone());
    }
    let id = request.id.clone();
    let wants_progress = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .is_some_and(|m| m.get(meta_keys::PROGRESS_TOKEN).is_some());
    let scope = Scope::stateless(&valid);
    if !wants_progress && valid.log_level.is_none() {
        // The hot path: nothing can be streamed, so nothing is set up for it.
        let outcome = execute(&state.server, &state.metrics, request, scope, state.limits.tool_timeout).await;
        return match outcome {
            Ok(result) => result_response(&id, &result),
            Err(error) => error_response(Some(&id), &error, Era::Stateless),
        };
    }
    let (out, mut notifications) = unbounded_channel::<Vec<u8>>();
    let scope = Scope { peer: Some(Arc::new(StatelessPeer { out })), ..scope };
    let (server, metrics, limit) = (state.server.clone(), state.metrics.clone(), state.limits.tool_timeout);
    let mut execution = Box::pin(async move { execute(&server, &metrics, request, scope, limit).await });
    let first = tokio::select! {
        biased;
        outcome = &mut execution => match notifications.try_recv() {
            Err(_) => {
                return match outcome {
                    Ok(result) => result_response(&id, &result),
                    Err(error) => error_response(Some(&id), &error, Era::Stateless),
                };
            }
            Ok(first) => (first, Some(outcome)),
        },
        first = notifications.recv() => match first {
            Some(first) => (first, None),
            None => return json_bytes(200, answer_bytes(&id, &execution.await)),
        },
    };
    let (body, body_rx) = unbounded_channel::<Bytes>();
    actix_rt::spawn(async move {
        let (first, done) = first;
        let _ = body.send(event(&first));
        let outcome = match done {
            Some(outcome) => outcome,
            None => loop {
                tokio::select! {
                    outcome = &mut execution => break outcome,
                    next = notifications.recv() => match next {
                        Some(message) => { let _ = body.send(event(&message)); }
                        None => break execution.await,
                    },
                    // The client closed the stream: on this wire that cancels the request.
                    () = body.closed() => return,
                }
            },
        };
        while let Ok(message) = notifications.try_recv() {
            let _ = body.send(event(&message));
        }
        let _ = body.send(event(&answer_bytes(&id, &outcome)));
    });
    sse(body_rx, None)
}

/// Removes a listen stream's catalog listener when its response is dropped.
struct ListenGuard {
    catalog: Arc<LiveCatalog>,
    listener: u64,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.catalog.unlisten(self.listener);
    }
}

/// What a listen stream asked for (and is honoured: mcpd honours every standard kind).
#[derive(Debug, Clone, Default)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    subscriptions: Vec<String>,
}

impl Filter {
    fn from_params(params: &Map<String, Value>) -> Filter {
        let wanted = params.get("notifications").and_then(Value::as_object);
        let flag = |name: &str| wanted.and_then(|w| w.get(name)).and_then(Value::as_bool).unwrap_or(false);
        let subscriptions = wanted
            .and_then(|w| w.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        Filter {
            tools: flag("toolsListChanged"),
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            subscriptions,
        }
    }

    fn honoured(&self) -> Value {
        let mut honoured = Map::new();
        for (on, key) in [
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ] {
            if on {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !self.subscriptions.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(self.subscriptions));
        }
        Value::Object(honoured)
    }

    /// The notification for `event`, if this stream asked for it.
    fn notification(&self, event: &CatalogEvent) -> Option<(&'static str, Map<String, Value>)> {
        match event {
            CatalogEvent::ToolsChanged if self.tools => Some(("notifications/tools/list_changed", Map::new())),
            CatalogEvent::PromptsChanged if self.prompts => Some(("notifications/prompts/list_changed", Map::new())),
            CatalogEvent::ResourcesChanged if self.resources => {
                Some(("notifications/resources/list_changed", Map::new()))
            }
            CatalogEvent::ResourceUpdated(uri) if self.subscriptions.contains(uri) => {
                let mut params = Map::new();
                params.insert("uri".into(), json!(uri));
                Some(("notifications/resources/updated", params))
            }
            _ => None,
        }
    }
}

/// `subscriptions/listen`: acknowledge first (with the honoured filter), then forward matching
/// catalog events, every one tagged with the subscription id (the listen request's id).
fn listen(request: Request, catalog: Arc<LiveCatalog>) -> HttpResponse {
    let filter = Filter::from_params(request.params.as_ref().unwrap_or(&Map::new()));
    let subscription = request.id.to_string();
    let tag = move |mut params: Map<String, Value>| {
        params.insert("_meta".into(), json!({ meta_keys::SUBSCRIPTION_ID: subscription }));
        Value::Object(params)
    };
    let (tx, rx) = unbounded_channel::<Bytes>();
    let mut ack = Map::new();
    ack.insert("notifications".into(), filter.honoured());
    let ack = tag(ack);
    let _ = tx.send(event(&jsonrpc::outgoing_message(None, "notifications/subscriptions/acknowledged", Some(&ack))));
    let sender = tx.clone();
    let listener = catalog.listen(move |event| {
        if let Some((method, params)) = filter.notification(event) {
            let _ = sender.send(self::event(&jsonrpc::outgoing_message(None, method, Some(&tag(params)))));
        }
    });
    actix_rt::spawn(async move {
        let started = Instant::now();
        loop {
            tokio::select! {
                () = actix_rt::time::sleep(KEEP_ALIVE_INTERVAL) => {
                    if tx.send(crate::session::stream::keep_alive()).is_err() { break; }
                }
                () = tx.closed() => break,
            }
        }
        log::debug!("listen stream closed after {:?}", started.elapsed());
    });
    sse(rx, Some(ListenGuard { catalog, listener }))
}
