//! Streamable-HTTP sessions (2025-03-26 … 2025-11-25) and the legacy HTTP+SSE transport
//! (2024-11-05) on top of `Session` actors.
//!
//! - `initialize` without a session id mints one and starts a `Session` (and its executor).
//! - A request in a session runs on the session's executor. If it finishes before it sends any
//!   notification, the answer is `application/json`; otherwise the answer switches to
//!   `text/event-stream`: a priming event, the notifications and server-to-client requests as
//!   they come, then the response, and the stream closes.
//! - `GET /mcp` opens the standalone stream, or resumes any stream after `Last-Event-ID`.
//! - `DELETE /mcp` ends the session.
//! - `GET /sse` + `POST /messages?sessionId=…` is the 2024-11-05 transport.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use actix::Actor as _;
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt as _;
use mcpd::jsonrpc::{self, ErrorCode, Message, Outgoing, Request, RequestId};
use mcpd::server::{set_level_param, Scope};
use mcpd::version::Era;
use mcpd::ProtocolError;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::oneshot;

use super::reply::{error_response, json_bytes, plain_error, result_response};
use super::AppState;
use crate::metrics::Outcome;
use crate::session::{
    BusyGuard, DetachStream, Emit, EndReason, Negotiated, Notify, OpenStream, PeerSink, RequestPeer, Resume,
    ResumeError, Session, SessionHandle, SessionId, SessionShared, Stop, Subscribe, Unsubscribe,
};
use crate::tool_executor::{Cancel, Execute, ToolExecutor};

const EVENT_STREAM: &str = "text/event-stream";

/// Ends a 2024-11-05 session when its stream's connection goes away: on that transport the
/// stream is the session.
struct EndWithStream(actix::Addr<Session>);

impl Drop for EndWithStream {
    fn drop(&mut self) {
        self.0.do_send(Stop { reason: EndReason::Deleted });
    }
}

fn sse_response(body: UnboundedReceiver<Bytes>, guard: Option<BusyGuard>) -> HttpResponse {
    sse_response_ending(body, guard, None)
}

fn sse_response_ending(
    body: UnboundedReceiver<Bytes>,
    guard: Option<BusyGuard>,
    end: Option<EndWithStream>,
) -> HttpResponse {
    let mut body = body;
    let stream = futures_util::stream::poll_fn(move |cx| {
        let _keep = (&guard, &end);
        body.poll_recv(cx)
    })
    .map(Ok::<_, Infallible>);
    HttpResponse::Ok()
        .content_type(EVENT_STREAM)
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(stream)
}

fn session_not_found() -> HttpResponse {
    plain_error(
        404,
        ErrorCode::INVALID_REQUEST,
        "Session not found: it ended, expired or never existed; initialize again".into(),
    )
}

/// Whether `Accept` lists both JSON and SSE (streamable POSTs must).
pub(super) fn accepts_both(req: &HttpRequest) -> bool {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let has = |t: &str| {
        accept.split(',').any(|part| {
            let essence = part.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case(t) || essence == "*/*"
        })
    };
    has("application/json") && has(EVENT_STREAM)
}

fn accepts_sse(req: &HttpRequest) -> bool {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    accept.split(',').any(|part| {
        let essence = part.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case(EVENT_STREAM) || essence == "*/*"
    })
}

/// Why no session could be started.
#[derive(Debug)]
enum SpawnError {
    Full(usize),
    NoRandomness(String),
}

impl SpawnError {
    fn response(&self) -> HttpResponse {
        match self {
            SpawnError::Full(max) => plain_error(
                503,
                ErrorCode::INVALID_REQUEST,
                format!("Too many sessions: the limit is {max}; try again later"),
            ),
            SpawnError::NoRandomness(e) => {
                plain_error(500, ErrorCode::INTERNAL_ERROR, format!("cannot create a session id: {e}"))
            }
        }
    }
}

/// Starts a session actor (and its executor) on this worker and registers it.
fn spawn_session(
    state: &AppState,
    negotiated: Option<Negotiated>,
    legacy_sse: bool,
) -> Result<SessionHandle, SpawnError> {
    if !state.sessions.has_room() {
        return Err(SpawnError::Full(state.sessions.max()));
    }
    let id = SessionId::random().map_err(|e| SpawnError::NoRandomness(e.to_string()))?;
    let shared = Arc::new(SessionShared::new(id, negotiated));
    let executor =
        ToolExecutor::new(state.server.clone(), state.limits.tool_timeout, state.counts.clone(), state.metrics.clone())
            .start();
    let session = Session::new(
        shared.clone(),
        executor.clone(),
        state.sessions.clone(),
        state.counts.clone(),
        state.metrics.clone(),
        state.session_config.idle_timeout,
    )
    .legacy_sse(legacy_sse)
    .start();
    let handle = SessionHandle { session, executor, shared };
    state.sessions.insert(handle.clone());
    // Counted here, synchronously: the actor's started() runs only after this handler yields.
    state.metrics.session_opened();
    Ok(handle)
}

/// `initialize` without a session id: negotiate, start the session, answer with its id.
pub(super) fn create(request: Request, state: &AppState) -> HttpResponse {
    let started = std::time::Instant::now();
    let handshake = match state.server.initialize(request.params.as_ref()) {
        Ok(handshake) => handshake,
        Err(error) => {
            state.metrics.request("initialize", Outcome::Error, started.elapsed());
            return error_response(Some(&request.id), &error, Era::Stateful);
        }
    };
    let negotiated =
        Negotiated { version: handshake.version, client_capabilities: handshake.client_capabilities.clone() };
    let handle = match spawn_session(state, Some(negotiated), false) {
        Ok(handle) => handle,
        Err(error) => return error.response(),
    };
    state.metrics.request("initialize", Outcome::Ok, started.elapsed());
    let mut response = result_response(&request.id, &handshake.result);
    if let Ok(value) = header::HeaderValue::from_str(handle.shared.id().as_str()) {
        response.headers_mut().insert(header::HeaderName::from_static(mcpd::headers::SESSION_ID), value);
    }
    response
}

/// A message carrying a session id.
pub(super) async fn handle(session_id: &str, message: Message, state: &AppState) -> HttpResponse {
    let Some(handle) = state.sessions.get(session_id) else { return session_not_found() };
    handle.shared.touch();
    match message {
        Message::Request(request) => request_in_session(handle, request, state).await,
        Message::Notification(notification) => {
            if notification.method == "notifications/cancelled" {
                if let Some(id) =
                    notification.params.as_ref().and_then(|p| p.get("requestId")).and_then(RequestId::from_value)
                {
                    handle.executor.do_send(Cancel { id });
                }
            }
            HttpResponse::Accepted().finish()
        }
        Message::Response(response) => {
            if let Some(id) = &response.id {
                if !handle.shared.resolve(id, response.outcome) {
                    log::debug!("session {session_id}: answer to unknown request {id}");
                }
            }
            HttpResponse::Accepted().finish()
        }
    }
}

/// Requests that only make sense in a session, answered without the executor.
fn session_method(request: &Request, handle: &SessionHandle) -> Option<Result<Value, ProtocolError>> {
    let uri = || {
        request
            .params
            .as_ref()
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ProtocolError::InvalidParams(format!("{} needs a string uri", request.method)))
    };
    match request.method.as_str() {
        "initialize" => Some(Err(ProtocolError::InvalidRequest("this session is already initialized".into()))),
        "logging/setLevel" => Some(set_level_param(request.params.as_ref()).map(|level| {
            handle.shared.set_log_level(level);
            json!({})
        })),
        "resources/subscribe" => Some(uri().map(|uri| {
            handle.session.do_send(Subscribe { uri });
            json!({})
        })),
        "resources/unsubscribe" => Some(uri().map(|uri| {
            handle.session.do_send(Unsubscribe { uri });
            json!({})
        })),
        _ => None,
    }
}

fn scope_for(handle: &SessionHandle, negotiated: &Negotiated, peer: RequestPeer) -> Scope {
    Scope {
        version: negotiated.version,
        session_id: Some(handle.shared.id().as_arc()),
        client_capabilities: Some(negotiated.client_capabilities.clone()),
        log_level: handle.shared.log_level(),
        peer: Some(Arc::new(peer)),
    }
}

async fn request_in_session(handle: SessionHandle, request: Request, state: &AppState) -> HttpResponse {
    let started = std::time::Instant::now();
    let Some(negotiated) = handle.shared.negotiated() else {
        let error = ProtocolError::InvalidRequest("send initialize first".into());
        return error_response(Some(&request.id), &error, Era::Stateful);
    };
    if let Some(outcome) = session_method(&request, &handle) {
        let result = if outcome.is_ok() { Outcome::Ok } else { Outcome::Error };
        state.metrics.request(&request.method, result, started.elapsed());
        return match outcome {
            Ok(result) => result_response(&request.id, &result),
            Err(error) => error_response(Some(&request.id), &error, Era::Stateful),
        };
    }
    let busy = handle.shared.busy();
    let (out, mut notifications) = unbounded_channel::<Vec<u8>>();
    let (close_tx, close_rx) = oneshot::channel();
    let sink = PeerSink::Request { out, close: Mutex::new(Some(close_tx)) };
    let peer = RequestPeer::new(sink, handle.shared.clone(), state.session_config.client_request_timeout);
    let id = request.id.clone();
    let scope = scope_for(&handle, &negotiated, peer);
    let mut execution = Box::pin(handle.executor.send(Execute { request, scope }));
    let mut close_rx = Some(close_rx);
    let first = tokio::select! {
        biased;
        outcome = &mut execution => match notifications.try_recv() {
            // Nothing was streamed: a plain JSON answer.
            Err(_) => return finish_json(&id, outcome),
            Ok(first) => Pending::Done(first, outcome),
        },
        first = notifications.recv() => match first {
            Some(first) => Pending::Running(Some(first)),
            None => return finish_json(&id, execution.await),
        },
        () = close_requested(&mut close_rx) => Pending::Detach,
    };
    let (body_tx, body_rx) = unbounded_channel::<Bytes>();
    let stream = match handle.session.send(OpenStream { sender: body_tx }).await {
        Ok(stream) => stream,
        Err(_) => return session_not_found(),
    };
    if matches!(first, Pending::Detach) {
        // The tool closed its stream before sending anything: the client gets the priming
        // event, reconnects with its id, and receives the rest on the GET.
        handle.session.do_send(DetachStream { stream });
    }
    let session = handle.session.clone();
    actix_rt::spawn(async move {
        let _busy = busy;
        let emit = |message: Vec<u8>, last: bool| session.do_send(Emit { stream, message, last });
        let outcome = match first {
            Pending::Done(first, outcome) => {
                emit(first, false);
                outcome
            }
            Pending::Running(_) | Pending::Detach => {
                if let Pending::Running(Some(first)) = first {
                    emit(first, false);
                }
                loop {
                    tokio::select! {
                        outcome = &mut execution => break outcome,
                        next = notifications.recv() => match next {
                            Some(message) => emit(message, false),
                            None => break execution.await,
                        },
                        () = close_requested(&mut close_rx) => session.do_send(DetachStream { stream }),
                    }
                }
            }
        };
        while let Ok(message) = notifications.try_recv() {
            emit(message, false);
        }
        if let Some(answer) = answer_bytes(&id, outcome) {
            emit(answer, true);
        }
    });
    sse_response(body_rx, None)
}

/// How a streamed answer begins.
enum Pending {
    /// The request finished, but notifications came first.
    Done(Vec<u8>, ExecuteOutcome),
    /// The request runs and has sent this message (none when it asked to close its stream).
    Running(Option<Vec<u8>>),
    /// The request asked to close its stream before sending anything.
    Detach,
}

/// Resolves when the request's tool asks to close its stream; never when it drops the trigger.
async fn close_requested(rx: &mut Option<oneshot::Receiver<()>>) {
    if let Some(receiver) = rx.as_mut() {
        let fired = receiver.await.is_ok();
        *rx = None;
        if fired {
            return;
        }
    }
    std::future::pending().await
}

type ExecuteOutcome = Result<Option<Result<Value, ProtocolError>>, actix::MailboxError>;

fn answer_bytes(id: &RequestId, outcome: ExecuteOutcome) -> Option<Vec<u8>> {
    match outcome {
        Ok(Some(Ok(result))) => Some(Outgoing::Result { id, result: &result }.to_vec()),
        Ok(Some(Err(error))) => {
            let object = error.to_error_object(Era::Stateful);
            Some(Outgoing::Error { id: Some(id), error: &object }.to_vec())
        }
        // Cancelled: a cancelled request gets no answer.
        Ok(None) => None,
        Err(e) => {
            let object = ProtocolError::Internal(e.to_string()).to_error_object(Era::Stateful);
            Some(Outgoing::Error { id: Some(id), error: &object }.to_vec())
        }
    }
}

fn finish_json(id: &RequestId, outcome: ExecuteOutcome) -> HttpResponse {
    match answer_bytes(id, outcome) {
        Some(bytes) => json_bytes(200, bytes),
        None => HttpResponse::Accepted().finish(),
    }
}

/// `GET /mcp`: the standalone stream, or a resumed stream after `Last-Event-ID`.
pub(super) async fn get(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = super::guard(&req, &state) {
        return denied;
    }
    if !accepts_sse(&req) {
        return plain_error(406, ErrorCode::INVALID_REQUEST, "GET /mcp needs Accept: text/event-stream".into());
    }
    let Some(session_id) = req.headers().get(mcpd::headers::SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return plain_error(400, ErrorCode::INVALID_REQUEST, "Missing Mcp-Session-Id header".into());
    };
    let Some(handle) = state.sessions.get(session_id) else { return session_not_found() };
    handle.shared.touch();
    let last_event_id = req.headers().get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (tx, rx) = unbounded_channel();
    match handle.session.send(Resume { last_event_id, sender: tx }).await {
        Ok(Ok(())) => sse_response(rx, Some(handle.shared.busy())),
        Ok(Err(error @ ResumeError::Conflict)) => plain_error(409, ErrorCode::INVALID_REQUEST, error.to_string()),
        Ok(Err(error)) => plain_error(400, ErrorCode::INVALID_REQUEST, error.to_string()),
        Err(_) => session_not_found(),
    }
}

/// `DELETE /mcp`: end the session.
pub(super) async fn delete(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = super::guard(&req, &state) {
        return denied;
    }
    let Some(session_id) = req.headers().get(mcpd::headers::SESSION_ID).and_then(|v| v.to_str().ok()) else {
        return plain_error(400, ErrorCode::INVALID_REQUEST, "Missing Mcp-Session-Id header".into());
    };
    let Some(handle) = state.sessions.get(session_id) else { return session_not_found() };
    state.sessions.remove(handle.shared.id());
    match handle.session.send(Stop { reason: EndReason::Deleted }).await {
        Ok(()) => HttpResponse::Ok().finish(),
        Err(_) => session_not_found(),
    }
}

/// `GET /sse` (2024-11-05): opens a session whose every message, responses included, goes on
/// this stream; the first event names the endpoint to POST to.
pub(super) async fn legacy_sse(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let Some(denied) = super::guard(&req, &state) {
        return denied;
    }
    let handle = match spawn_session(&state, None, true) {
        Ok(handle) => handle,
        Err(error) => return error.response(),
    };
    let (tx, rx) = unbounded_channel();
    let endpoint = format!("event: endpoint\ndata: /messages?sessionId={}\n\n", handle.shared.id());
    let _ = tx.send(Bytes::from(endpoint));
    match handle.session.send(Resume { last_event_id: None, sender: tx }).await {
        Ok(Ok(())) => sse_response_ending(rx, Some(handle.shared.busy()), Some(EndWithStream(handle.session.clone()))),
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
pub(super) async fn legacy_messages(
    req: HttpRequest,
    query: web::Query<MessagesQuery>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    if let Some(denied) = super::guard(&req, &state) {
        return denied;
    }
    let Some(handle) = state.sessions.get(&query.session_id) else { return session_not_found() };
    handle.shared.touch();
    let message = match jsonrpc::parse_single(&body) {
        Ok(message) => message,
        Err(rejection) => {
            return json_bytes(400, Outgoing::Error { id: rejection.id.as_ref(), error: &rejection.error }.to_vec())
        }
    };
    let request = match message {
        Message::Request(request) => request,
        other => return handle_other(&handle, other),
    };
    let state = state.into_inner();
    let busy = handle.shared.busy();
    actix_rt::spawn(async move {
        let _busy = busy;
        let id = request.id.clone();
        let outcome: ExecuteOutcome = if request.method == "initialize" {
            Ok(Some(state.server.initialize(request.params.as_ref()).map(|handshake| {
                handle.shared.set_negotiated(Negotiated {
                    version: handshake.version,
                    client_capabilities: handshake.client_capabilities,
                });
                handshake.result
            })))
        } else if let Some(outcome) = session_method(&request, &handle) {
            Ok(Some(outcome))
        } else if let Some(negotiated) = handle.shared.negotiated() {
            let sink = PeerSink::Standalone(handle.session.clone());
            let peer = RequestPeer::new(sink, handle.shared.clone(), state.session_config.client_request_timeout);
            handle.executor.send(Execute { request, scope: scope_for(&handle, &negotiated, peer) }).await
        } else {
            Ok(Some(Err(ProtocolError::InvalidRequest("send initialize first".into()))))
        };
        if let Some(answer) = answer_bytes(&id, outcome) {
            handle.session.do_send(Notify { message: answer });
        }
    });
    HttpResponse::Accepted().finish()
}

fn handle_other(handle: &SessionHandle, message: Message) -> HttpResponse {
    match message {
        Message::Notification(notification) if notification.method == "notifications/cancelled" => {
            if let Some(id) =
                notification.params.as_ref().and_then(|p| p.get("requestId")).and_then(RequestId::from_value)
            {
                handle.executor.do_send(Cancel { id });
            }
        }
        Message::Response(response) => {
            if let Some(id) = &response.id {
                handle.shared.resolve(id, response.outcome);
            }
        }
        _ => {}
    }
    HttpResponse::Accepted().finish()
}
