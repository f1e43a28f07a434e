//! The way back to the client for one request of a session ([`RequestPeer`]): where its
//! notifications and server-to-client requests go ([`PeerSink`]: the request's own stream, or
//! the session's standalone one), with the answers coming back through [`SessionShared`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use mcpd::catalog::BoxFuture;
use mcpd::context::Peer;
use mcpd::jsonrpc::{self, ErrorCode, ErrorObject};
use serde_json::Value;
use tokio::sync::oneshot;

use super::actor::Session;
use super::messages::Emit;
use super::shared::SessionShared;
use crate::queue::{Outbox, Refused};

/// Where a request's notifications and server-to-client requests go.
#[derive(Debug)]
pub(crate) enum PeerSink {
    /// The request's own stream (its POST response), plus a trigger that closes that stream's
    /// connection early (SSE polling: the client resumes with `GET` + `Last-Event-ID`).
    Request {
        /// Messages for the stream (bounded: see [`crate::queue`]).
        out: Outbox,
        /// Fired once to detach the connection.
        close: Mutex<Option<oneshot::Sender<()>>>,
    },
    /// The session's standalone stream (legacy HTTP+SSE, where every message goes there).
    Standalone(Addr<Session>),
}

impl PeerSink {
    /// Sends a notification; on a request's own stream it is dropped (and counted) when the
    /// client does not keep up.
    fn notify(&self, message: Vec<u8>) {
        match self {
            PeerSink::Request { out, .. } => out.notify(message),
            PeerSink::Standalone(session) => session.do_send(Emit::standalone(message)),
        }
    }

    /// Sends a request to the client; an error the tool can read when it cannot be queued.
    fn request(&self, message: Vec<u8>) -> Result<(), &'static str> {
        match self {
            PeerSink::Request { out, .. } => out.try_send(message).map_err(|refused| match refused {
                Refused::Full => "the client is not reading this request's stream",
                Refused::Gone => "the request's stream is closed",
            }),
            PeerSink::Standalone(session) => {
                session.do_send(Emit::standalone(message));
                Ok(())
            }
        }
    }
}

/// The way back to the client for one request of a session: notifications and requests go to
/// the request's own stream (its SSE response), answers come back through [`SessionShared`].
pub(crate) struct RequestPeer {
    out: PeerSink,
    shared: Arc<SessionShared>,
    request_timeout: Duration,
}

impl fmt::Debug for RequestPeer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestPeer").field("session", self.shared.id()).finish_non_exhaustive()
    }
}

impl RequestPeer {
    /// A peer writing to `out`.
    pub(crate) fn new(out: PeerSink, shared: Arc<SessionShared>, request_timeout: Duration) -> Self {
        RequestPeer { out, shared, request_timeout }
    }
}

impl Peer for RequestPeer {
    fn notify(&self, method: &str, params: Value) {
        self.out.notify(jsonrpc::outgoing_message(None, method, Some(&params)));
    }

    fn close_stream(&self) {
        if let PeerSink::Request { close, .. } = &self.out {
            if let Ok(mut close) = close.lock() {
                if let Some(close) = close.take() {
                    let _ = close.send(());
                }
            }
        }
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<Result<Value, ErrorObject>> {
        let Some((id, answer)) = self.shared.register_request() else {
            let error = format!(
                "{method}: {} requests to the client already await its answer (the limit)",
                self.shared.max_in_flight()
            );
            return Box::pin(std::future::ready(Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, error))));
        };
        let mut params = params;
        let traced = crate::served::ToClient::start(method, &id, &mut params, self.shared.served());
        let sent = self.out.request(jsonrpc::outgoing_message(Some(&id), method, Some(&params)));
        let shared = self.shared.clone();
        let timeout = self.request_timeout;
        let method = method.to_owned();
        Box::pin(traced.around(async move {
            if let Err(reason) = sent {
                shared.forget(&id);
                return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, reason));
            }
            match actix_rt::time::timeout(timeout, answer).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the session ended")),
                Err(_) => {
                    shared.forget(&id);
                    Err(ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("the client did not answer {method} within {} s", timeout.as_secs_f64()),
                    ))
                }
            }
        }))
    }
}
