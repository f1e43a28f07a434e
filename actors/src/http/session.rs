//! Streamable-HTTP sessions (2025-03-26 … 2025-11-25) and the legacy HTTP+SSE transport
//! (2024-11-05) on top of `Session` actors.
//!
//! - `initialize` without a session id mints one and starts a `Session` ([`super::session_start`]).
//! - A request in a session runs on the session's executor (started by the session's first
//!   request); its answer is JSON, or switches to SSE as soon as it sends the client something
//!   ([`super::stream`], through the session's numbered, replayable streams).
//! - `GET /mcp` opens the standalone stream, or resumes any stream after `Last-Event-ID`.
//! - `DELETE /mcp` ends the session.
//! - `GET /sse` + `POST /messages?sessionId=…` is the 2024-11-05 transport.
//!
//! A session runs at most `max_in_flight` requests at once (more are answered 429), and every
//! stream it feeds is bounded ([`crate::queue`]).

use std::sync::{Arc, Mutex};

use mcpd::auth::scopes::Access;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use mcpd::jsonrpc::{self, ErrorCode, Message, Request};
use mcpd::server::{cancelled_request, encode_answer, set_level_param, Method, Reply, Scope, Screen, Subscription};
use mcpd::version::Era;
use mcpd::ProtocolError;
use serde_json::json;
use tokio::sync::oneshot;

use super::guard::Caller;
use super::reply::{
    error_response, missing_session_id, plain_error, rejection_response, result_response, session_not_found,
    share_refused, too_many_in_flight,
};
use super::session_start::{find_session, run_in_session, spawn_session, unreachable_response, SpawnError};
use super::state::AppState;
use super::stream::{outbox, respond, sse, Exchange, SessionSink};
use crate::cluster::sessions::ResumeRemote;
use crate::counts::EdgeCounters;
use crate::metrics::Outcome;
use crate::queue::{self, Label, QueueLimits};
use crate::session::{
    ChangeSubscription, Emit, EndReason, Negotiated, PeerSink, RequestPeer, Resume, ResumeError, Session,
    SessionHandle, StopSession,
};
use crate::shares::Resource;
use crate::tool_executor::route_notification;

/// Ends a 2024-11-05 session when its stream's connection goes away: on that transport the
/// stream is the session.
struct EndWithStream(actix::Addr<Session>);

impl Drop for EndWithStream {
    fn drop(&mut self) {
        self.0.do_send(StopSession { reason: EndReason::Deleted });
    }
}

/// `initialize` without a session id: negotiate, start the session (in cluster mode: and write
/// its record to Redis), answer with its id.
pub(super) async fn create(request: Request, state: &AppState, caller: Caller) -> HttpResponse {
    let started = std::time::Instant::now();
    let handshake = match state.server.initialize(request.params.as_ref()) {
        Ok(handshake) => handshake,
        Err(error) => {
            state.metrics.request(Method::Initialize, Outcome::Error, started.elapsed());
            return error_response(Some(&request.id), &error, Era::Stateful);
        }
    };
    let negotiated =
        Negotiated { version: handshake.version, client_capabilities: handshake.client_capabilities.clone() };
    let handle = match spawn_session(state, Some(negotiated.clone()), false, &caller) {
        Ok(handle) => handle,
        Err(SpawnError::Share(refusal)) => return share_refused(Some(&request.id), &refusal),
        Err(error) => return error.response(),
    };
    if let Some(cluster) = state.cluster() {
        let id = handle.shared.id().as_str();
        let bound = (handle.shared.owner(), handle.shared.endpoint());
        if let Err(error) = cluster.records().create(id, &negotiated, bound, state.session_config.idle_timeout).await {
            state.sessions.remove(handle.shared.id());
            handle.session.do_send(StopSession { reason: EndReason::Shutdown });
            state.metrics.request(Method::Initialize, Outcome::Error, started.elapsed());
            return unreachable_response(&error);
        }
    }
    state.metrics.request(Method::Initialize, Outcome::Ok, started.elapsed());
    let mut response = result_response(&request.id, &handshake.result);
    if let Ok(value) = header::HeaderValue::from_str(handle.shared.id().as_str()) {
        response.headers_mut().insert(header::HeaderName::from_static(mcpd::headers::SESSION_ID), value);
    }
    response
}

/// A message carrying a session id.
pub(super) async fn handle(session_id: &str, message: Message, state: &AppState, caller: Caller) -> HttpResponse {
    let handle = match find_session(state, session_id, &caller).await {
        Ok(handle) => handle,
        Err(response) => return response,
    };
    handle.shared.touch();
    match deliver(&handle, message, state) {
        Some(request) => request_in_session(handle, request, state, caller).await,
        None => HttpResponse::Accepted().finish(),
    }
}

/// Delivers a client message that is not a request — a cancellation to the executor, an
/// answer to the server-to-client request awaiting it (in cluster mode, an answer no request
/// here awaits, and every cancellation, go to the other instances too) — and hands a request
/// back.
fn deliver(handle: &SessionHandle, message: Message, state: &AppState) -> Option<Request> {
    match message {
        Message::Request(request) => return Some(request),
        Message::Notification(notification) => {
            crate::served::in_session_notification(&notification, handle.shared.served());
            if let Some(executor) = handle.shared.executor().running() {
                route_notification(&executor, &notification);
            }
            if let (Some(cluster), Some(id)) = (state.cluster(), cancelled_request(&notification)) {
                // The request may run on another instance: every instance holding the session
                // cancels it if it runs there.
                cluster.forward_cancel(handle.shared.id().as_str(), &id);
            }
        }
        Message::Response(response) => {
            if let Some(id) = &response.id {
                if let Some(cluster) = state.cluster() {
                    if !handle.shared.awaits(id) {
                        cluster.forward_answer(handle.shared.id().as_str(), id, &response.outcome);
                        return None;
                    }
                }
                if !handle.shared.resolve(id, response.outcome) {
                    log::debug!("session {}: answer to unknown request {id}", handle.shared.id());
                }
            }
        }
    }
    None
}

/// Requests that only make sense in a session, answered without the executor. A subscription
/// is answered once the session has taken it (and the catalog counted it), so a change right
/// after the answer is heard; one to a resource the caller may not see is answered as one to a
/// resource that does not exist, and taken nowhere.
async fn session_method(
    request: &Request,
    method: Method,
    handle: &SessionHandle,
    state: &AppState,
    access: Option<&Access>,
) -> Option<Result<Reply, ProtocolError>> {
    let cluster = state.cluster().filter(|_| handle.shared.negotiated().is_some());
    if let Some(change) = Subscription::requested(method, request.params.as_ref()) {
        let change = match change {
            Ok(change) => change,
            Err(error) => return Some(Err(error)),
        };
        if Screen::new(access).hides(method, request.params.as_ref()).is_some() {
            return Some(Ok(Reply::Value(json!({}))));
        }
        if let Some(cluster) = cluster {
            if let Err(error) = cluster.records().subscription(handle.shared.id().as_str(), &change).await {
                return Some(Err(ProtocolError::Internal(error.to_string())));
            }
        }
        return Some(match handle.session.send(ChangeSubscription(change)).await {
            Ok(()) => Ok(Reply::Value(json!({}))),
            Err(_) => Err(ProtocolError::Internal("the session ended".into())),
        });
    }
    match method {
        Method::Initialize => Some(Err(ProtocolError::InvalidRequest("this session is already initialized".into()))),
        Method::SetLogLevel => {
            let level = match set_level_param(request.params.as_ref()) {
                Ok(level) => level,
                Err(error) => return Some(Err(error)),
            };
            if let Some(cluster) = cluster {
                if let Err(error) = cluster.records().set_level(handle.shared.id().as_str(), level).await {
                    return Some(Err(ProtocolError::Internal(error.to_string())));
                }
            }
            handle.shared.set_log_level(level);
            Some(Ok(Reply::Value(json!({}))))
        }
        _ => None,
    }
}

/// The scope of a request in a session whose messages to the client go to `sink`.
fn scope_for(
    handle: &SessionHandle,
    negotiated: &Negotiated,
    sink: PeerSink,
    state: &AppState,
    caller: Caller,
) -> Scope {
    let peer = RequestPeer::new(sink, handle.shared.clone(), state.session_config.client_request_timeout);
    Scope {
        version: negotiated.version,
        session_id: Some(handle.shared.id().as_arc()),
        client_capabilities: Some(negotiated.client_capabilities.clone()),
        log_level: handle.shared.log_level(),
        peer: Some(Arc::new(peer)),
        catalog: None,
        access: caller.access,
        caller: caller.identity,
    }
}

async fn request_in_session(handle: SessionHandle, request: Request, state: &AppState, caller: Caller) -> HttpResponse {
    let started = std::time::Instant::now();
    let Some(negotiated) = handle.shared.negotiated() else {
        let error = ProtocolError::InvalidRequest("send initialize first".into());
        return error_response(Some(&request.id), &error, Era::Stateful);
    };
    let method = Method::parse(&request.method);
    let answered = session_method(&request, method, &handle, state, caller.access.as_deref());
    if let Some(outcome) = crate::served::in_session(handle.shared.served(), &request, answered).await {
        let result = if outcome.is_ok() { Outcome::Ok } else { Outcome::Error };
        state.metrics.request(method, result, started.elapsed());
        return match outcome {
            Ok(result) => result_response(&request.id, &result),
            Err(error) => error_response(Some(&request.id), &error, Era::Stateful),
        };
    }
    let Some(in_flight) = handle.shared.admit() else {
        return refuse_over_limit(&request, method, &handle, state);
    };
    let share =
        match state.sessions.shares().take(caller.identity.as_ref(), caller.access.as_deref(), Resource::InFlight) {
            Ok(share) => share,
            Err(refusal) => return share_refused(Some(&request.id), &refusal),
        };
    let busy = handle.shared.busy();
    let queue = QueueLimits::from(&state.limits);
    let edge = state.metrics.edge().clone();
    let id = request.id.clone();
    let what = Label::Request { session: Some(handle.shared.id().as_arc()), id: id.clone() };
    let (out, messages) = outbox(queue, what, &edge);
    let (close_tx, close) = oneshot::channel();
    let sink = PeerSink::Request { out, close: Mutex::new(Some(close_tx)) };
    let running = run_in_session(&handle, state, request, scope_for(&handle, &negotiated, sink, state, caller));
    let execution = Box::pin(async move {
        let _in_flight = (in_flight, share);
        running.await
    });
    let exchange = Exchange { id: id.clone(), era: Era::Stateful, execution, messages, close: Some(close) };
    let opened = move || {
        let what = format!("session {}: SSE answer to request {id}", handle.shared.id());
        SessionSink::open(handle.session, busy, queue, what, edge, id)
    };
    respond(exchange, opened).await
}

/// Answers a request beyond its session's cap on running requests (429), counted and logged.
fn refuse_over_limit(request: &Request, method: Method, handle: &SessionHandle, state: &AppState) -> HttpResponse {
    EdgeCounters::bump(&state.metrics.edge().requests_over_limit);
    state.metrics.request(method, Outcome::Rejected, std::time::Duration::ZERO);
    let max = handle.shared.max_in_flight();
    log::debug!("session {}: refused request {}: {max} requests already running", handle.shared.id(), request.id);
    too_many_in_flight(&request.id, max)
}

/// Why a request names no live session.
#[derive(Debug, Clone, Copy)]
enum NoSession {
    /// No `Mcp-Session-Id` header (400).
    Missing,
}

impl NoSession {
    fn response(self) -> HttpResponse {
        match self {
            NoSession::Missing => missing_session_id(),
        }
    }
}

/// The session id the request's `Mcp-Session-Id` names.
fn named_id(req: &HttpRequest) -> Result<&str, NoSession> {
    req.headers().get(mcpd::headers::SESSION_ID).and_then(|v| v.to_str().ok()).ok_or(NoSession::Missing)
}

/// The session the request's `Mcp-Session-Id` names for its caller (adopted from Redis in
/// cluster mode).
async fn named_session(req: &HttpRequest, state: &AppState) -> Result<SessionHandle, HttpResponse> {
    let caller = super::guard::caller_of(req);
    find_session(state, named_id(req).map_err(NoSession::response)?, &caller).await
}

/// `GET /mcp`: the standalone stream, or a resumed stream after `Last-Event-ID`.
pub(super) async fn get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if !sse::accepts_events(&req) {
        return plain_error(406, ErrorCode::INVALID_REQUEST, "GET /mcp needs Accept: text/event-stream".into());
    }
    let handle = match named_session(&req, &state).await {
        Ok(handle) => handle,
        Err(response) => return response,
    };
    let caller = super::guard::caller_of(&req);
    let share =
        match state.sessions.shares().take(caller.identity.as_ref(), caller.access.as_deref(), Resource::Streams) {
            Ok(share) => share,
            Err(refusal) => return share_refused(None, &refusal),
        };
    handle.shared.touch();
    let last_event_id = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let what = format!("session {}: GET stream", handle.shared.id());
    let (tx, rx) = queue::events(QueueLimits::from(&state.limits), what, state.metrics.edge().clone());
    let remote = last_event_id.as_deref().and_then(crate::session::stream::parse_event_id);
    let resumed = handle.session.send(Resume { last_event_id, sender: tx.clone() }).await;
    let resumed = match (resumed, state.cluster(), remote) {
        (Ok(Err(ResumeError::UnknownEvent(last))), Some(cluster), Some((stream, after))) => {
            // Cluster mode: a stream another instance sends, resumed from Redis.
            match cluster.events().resume(handle.shared.id().as_str(), stream, after, tx).await {
                Ok(None) => Ok(Ok(())),
                Ok(Some(sender)) => handle.session.send(Resume { last_event_id: None, sender }).await,
                Err(ResumeRemote::Unknown) => Ok(Err(ResumeError::UnknownEvent(last))),
                Err(ResumeRemote::Unreachable(error)) => return unreachable_response(&error),
            }
        }
        (resumed, _, _) => resumed,
    };
    match resumed {
        Ok(Ok(())) => sse::response(rx, (handle.shared.busy(), share)),
        Ok(Err(error @ ResumeError::Conflict)) => plain_error(409, ErrorCode::INVALID_REQUEST, error.to_string()),
        Ok(Err(error)) => plain_error(400, ErrorCode::INVALID_REQUEST, error.to_string()),
        Err(_) => session_not_found(),
    }
}

/// `DELETE /mcp`: end the session (in cluster mode on every instance: its record goes, and
/// every instance holding a copy is told).
pub(super) async fn delete(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let handle = match named_session(&req, &state).await {
        Ok(handle) => handle,
        Err(response) => return response,
    };
    if let Some(cluster) = state.cluster() {
        if let Err(error) =
            cluster.records().delete(handle.shared.id().as_str(), state.session_config.idle_timeout).await
        {
            return unreachable_response(&error);
        }
    }
    state.sessions.remove(handle.shared.id());
    match handle.session.send(StopSession { reason: EndReason::Deleted }).await {
        Ok(()) => HttpResponse::Ok().finish(),
        Err(_) => session_not_found(),
    }
}

/// `GET /sse` (2024-11-05): opens a session whose every message, responses included, goes on
/// this stream; the first event names the endpoint to POST to.
pub(super) async fn legacy_sse(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let caller = super::guard::caller_of(&req);
    let stream =
        match state.sessions.shares().take(caller.identity.as_ref(), caller.access.as_deref(), Resource::Streams) {
            Ok(share) => share,
            Err(refusal) => return share_refused(None, &refusal),
        };
    let handle = match spawn_session(&state, None, true, &caller) {
        Ok(handle) => handle,
        Err(error) => return error.response(),
    };
    let what = format!("session {}: 2024-11-05 stream", handle.shared.id());
    let (tx, rx) = queue::events(QueueLimits::from(&state.limits), what, state.metrics.edge().clone());
    tx.push(sse::endpoint(&format!("/messages?sessionId={}", handle.shared.id())));
    match handle.session.send(Resume { last_event_id: None, sender: tx }).await {
        Ok(Ok(())) => sse::response(rx, (handle.shared.busy(), EndWithStream(handle.session.clone()), stream)),
        _ => session_not_found(),
    }
}

/// Query of `POST /messages`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `POST /messages?sessionId=…` (2024-11-05): 202 at once; the answer goes on the SSE stream.
/// The body is read under the same limits as `POST /mcp`'s; a request beyond the session's cap
/// on running requests is answered 429 here.
pub(super) async fn legacy_messages(
    req: HttpRequest,
    query: web::Query<MessagesQuery>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let caller = super::guard::caller_of(&req);
    // A 2024-11-05 session is the whole server's (a virtual server's sessions are not here).
    let found = state.sessions.get(&query.session_id).filter(|h| h.shared.endpoint().is_none());
    let Some(handle) = found.filter(|h| h.shared.serves(caller.identity.as_ref())) else {
        if state.sessions.get(&query.session_id).is_some() {
            EdgeCounters::bump(&state.metrics.edge().sessions_refused);
        }
        return session_not_found();
    };
    handle.shared.touch();
    let body = match super::body::read(&req, payload, &state).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let message = match jsonrpc::parse_single(&body) {
        Ok(message) => message,
        Err(rejection) => return rejection_response(&rejection),
    };
    let Some(mut request) = deliver(&handle, message, &state) else { return HttpResponse::Accepted().finish() };
    if let Some(refused) = super::guard::tool_refusal(&request, caller.access.as_ref(), &state).await {
        return refused;
    }
    super::trace::carry_trace(&mut request, req.headers());
    let Some(in_flight) = handle.shared.admit() else {
        return refuse_over_limit(&request, Method::parse(&request.method), &handle, &state);
    };
    let shares = state.sessions.shares();
    let share = match shares.take(caller.identity.as_ref(), caller.access.as_deref(), Resource::InFlight) {
        Ok(share) => share,
        Err(refusal) => return share_refused(Some(&request.id), &refusal),
    };
    let state = state.into_inner();
    let busy = handle.shared.busy();
    crate::panics::spawn(crate::panics::Site::Http, async move {
        let _busy = busy;
        let _in_flight = (in_flight, share);
        let id = request.id.clone();
        let method = Method::parse(&request.method);
        let edge = session_method(&request, method, &handle, &state, caller.access.as_deref());
        let answer = if method == Method::Initialize {
            Some(crate::served::initialize_in(handle.shared.served(), &request, || {
                state.server.initialize(request.params.as_ref()).map(|handshake| {
                    handle.shared.set_negotiated(Negotiated {
                        version: handshake.version,
                        client_capabilities: handshake.client_capabilities,
                    });
                    Reply::Value(handshake.result)
                })
            }))
        } else if let Some(outcome) = crate::served::in_session(handle.shared.served(), &request, edge).await {
            Some(outcome)
        } else if let Some(negotiated) = handle.shared.negotiated() {
            let sink = PeerSink::Standalone(handle.session.clone());
            run_in_session(&handle, &state, request, scope_for(&handle, &negotiated, sink, &state, caller)).await
        } else {
            Some(Err(ProtocolError::InvalidRequest("send initialize first".into())))
        };
        if let Some(outcome) = answer {
            handle.session.do_send(Emit::standalone(encode_answer(&id, Era::Stateful, &outcome)));
        }
    });
    HttpResponse::Accepted().finish()
}
