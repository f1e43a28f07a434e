//! One request on the negotiated wire, as the connection's handlers send it: under the link's
//! time limit, abandoned when the caller cancels — in a session (or over HTTP+SSE or stdio) with
//! `notifications/cancelled`, on the stateless wire by closing its stream — and sent once more
//! on a new session when the server answers `404` (it forgot the session; the request was not
//! processed, so repeating it is safe).

use std::rc::Rc;

use mcpd::jsonrpc;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::body::RequestBody;
use super::current_wire::StrayClaim;
use super::outcome::outcome_owned;
use super::trace::target_of;
use super::wire::Wire;
use super::{CallEntry, Link, Mode};
use crate::client::error::ClientError;
use crate::panics::{self, Site};

/// Fires (or its sender is dropped) when the caller gives up; shared by the two attempts of a
/// request that re-initializes, and by a tool call and the task it may become.
pub(crate) type CancelSignal = futures_util::future::Shared<oneshot::Receiver<()>>;

impl Link {
    /// Sends one request on the negotiated wire and returns its result. On the stateless wire,
    /// `input_required` results are completed with the client's handlers and retried (new id,
    /// the `requestState` byte for byte); in a session a timed-out request is cancelled with
    /// `notifications/cancelled`.
    pub(crate) async fn request(
        self: &Rc<Self>,
        method: &str,
        params: Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.request_cancellable(method, params, None).await
    }

    /// As [`Link::request`]; when `cancel` fires (or its sender is dropped: the caller went
    /// away) the request is abandoned — in a session with `notifications/cancelled`, on the
    /// stateless wire by closing its stream.
    pub(crate) async fn request_cancellable(
        self: &Rc<Self>,
        method: &str,
        params: Map<String, Value>,
        cancel: Option<CancelSignal>,
    ) -> Result<Value, ClientError> {
        self.request_for_call(method, params, cancel, None).await
    }

    /// As [`Link::request_cancellable`], for a call with handlers of its own (registered with
    /// [`Link::register`]): each request that carries it is noted, so that what arrives on its
    /// stream reaches its handlers, and its stateless rounds follow `call`'s handlers.
    pub(crate) async fn request_for_call(
        self: &Rc<Self>,
        method: &str,
        params: Map<String, Value>,
        cancel: Option<CancelSignal>,
        call: Option<&CallEntry>,
    ) -> Result<Value, ClientError> {
        let _in_flight = self.in_flight();
        match self.request_once(method, &params, cancel.clone(), call).await {
            // The server forgot the session (restart, expiry): start a new one and try once more.
            // A 404 means the request was not processed, so repeating it is safe.
            Err(error) if session_gone(&error) && matches!(self.mode(), Some(Mode::Session(_))) => {
                log::info!("{}: session not found; initializing again", self.cfg.name);
                // Dropping the session stops its standalone stream.
                drop(self.replace_wire(Wire::Idle));
                self.request_once(method, &params, cancel, call).await
            }
            outcome => outcome,
        }
    }

    async fn request_once(
        self: &Rc<Self>,
        method: &str,
        params: &Map<String, Value>,
        cancel: Option<CancelSignal>,
        call: Option<&CallEntry>,
    ) -> Result<Value, ClientError> {
        let mode = self.connect().await?;
        match mode {
            Mode::Stateless | Mode::Stdio(ProtocolVersion::V2026_07_28) => {
                let timeout = self.cfg.timeout;
                let work = actix_rt::time::timeout(timeout, self.stateless_with_input(method, params, call));
                tokio::select! {
                    outcome = work => outcome.map_err(|_| ClientError::Timeout(timeout.as_secs()))?,
                    // Dropping the request closes its stream: cancellation on this wire.
                    () = cancelled(cancel) => Err(ClientError::Cancelled),
                }
            }
            // Boxed: the session wires' request is a large future, and a stateless call (the
            // gateway's usual one, whose future is moved and boxed along the call) never needs it.
            Mode::Session(_) | Mode::HttpSse(_) | Mode::Stdio(_) => {
                Box::pin(self.session_request(mode, method, params, cancel, call)).await
            }
        }
    }

    /// [`Link::request_once`] on a wire with sessions (streamable HTTP, HTTP+SSE, stdio before
    /// 2026-07-28): a request abandoned (timed out or cancelled) is cancelled with
    /// `notifications/cancelled`.
    async fn session_request(
        self: &Rc<Self>,
        mode: Mode,
        method: &str,
        params: &Map<String, Value>,
        cancel: Option<CancelSignal>,
        call: Option<&CallEntry>,
    ) -> Result<Value, ClientError> {
        let timeout = self.cfg.timeout;
        let id = self.next_id();
        if let Some(call) = call {
            call.carried_by(&id);
        }
        let target = target_of(method, params);
        let op = self.client_op(method, target, &id);
        let trace = op.propagation();
        let body = RequestBody { id: &id, method, params, trace: trace.as_ref() };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut headers = self.wire_headers();
        super::headers::trace_or(trace.as_ref(), params.get("_meta").and_then(Value::as_object), &mut headers);
        let (_claim, stray) = StrayClaim::register(self, &id);
        let work = async {
            match (mode, stray) {
                (Mode::HttpSse(_), _) => self.sse_request(&id, body, headers).await,
                (_, Some(answer)) => tokio::select! {
                    outcome = self.exchange(&id, body, headers) => outcome,
                    Ok(message) = answer => outcome_owned(message, &id, 200),
                },
                (_, None) => self.exchange(&id, body, headers).await,
            }
        };
        let (reason, error) = tokio::select! {
            outcome = actix_rt::time::timeout(timeout, work) => match outcome {
                Ok(outcome) => {
                    let passed_error = call.is_some_and(CallEntry::passed_is_error);
                    op.finish(method, target, &outcome, passed_error);
                    return outcome;
                }
                Err(_) => ("timed out", ClientError::Timeout(timeout.as_secs())),
            },
            () = cancelled(cancel) => ("cancelled by the caller", ClientError::Cancelled),
        };
        self.notify_cancelled(&id, reason);
        let outcome = Err(error);
        op.finish(method, target, &outcome, false);
        outcome
    }

    /// Tells the server, in the background, that request `id` was abandoned (the caller gets
    /// its answer now).
    fn notify_cancelled(self: &Rc<Self>, id: &jsonrpc::RequestId, reason: &str) {
        let cancel = json!({"requestId": id, "reason": reason});
        let link = self.clone();
        panics::spawn(Site::Client, async move {
            let message = jsonrpc::outgoing_message(None, "notifications/cancelled", Some(&cancel));
            if let Err(e) = link.send_reply(message).await {
                log::debug!("{}: could not send notifications/cancelled: {e}", link.cfg.name);
            }
        });
    }
}

/// Resolves when the caller gives up (`cancel` fires or its sender is dropped); never without one.
async fn cancelled(cancel: Option<CancelSignal>) {
    match cancel {
        Some(signal) => {
            let _ = signal.await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Whether the server answered `404`: in a session, it no longer knows the session.
fn session_gone(error: &ClientError) -> bool {
    matches!(error, ClientError::Rpc { http_status: 404, .. } | ClientError::Http { status: 404, .. })
}
