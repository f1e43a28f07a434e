//! The part of a session that request handlers read and write without a mailbox hop: the
//! negotiated version, client capabilities, log level, activity clock, and the server-to-client
//! requests awaiting the client's answer.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpd::catalog::BoxFuture;
use mcpd::context::{LogLevel, Peer};
use mcpd::jsonrpc::{self, ErrorCode, ErrorObject, RequestId};
use mcpd::version::ProtocolVersion;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::status::now_millis;

/// A session id: 128 random bits as hex (visible ASCII, unguessable).
#[derive(Debug, Clone, PartialEq, Eq, Hash, derive_more::Display)]
pub(crate) struct SessionId(Arc<str>);

impl SessionId {
    /// A fresh random id.
    ///
    /// # Errors
    /// When the operating system has no randomness to give.
    pub(crate) fn random() -> Result<SessionId, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(SessionId(Arc::from(hex)))
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared text.
    pub(crate) fn as_arc(&self) -> Arc<str> {
        self.0.clone()
    }
}

impl std::borrow::Borrow<str> for SessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What the handshake agreed on.
#[derive(Debug, Clone)]
pub(crate) struct Negotiated {
    /// The revision.
    pub version: ProtocolVersion,
    /// The client's capabilities.
    pub client_capabilities: Arc<Value>,
}

type Pending = HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>;

/// Session state shared by the actor and the request handlers.
pub(crate) struct SessionShared {
    id: SessionId,
    negotiated: Mutex<Option<Negotiated>>,
    log_level: Mutex<Option<LogLevel>>,
    last_active: AtomicU64,
    busy: AtomicUsize,
    next_request: AtomicI64,
    pending: Mutex<Pending>,
}

impl fmt::Debug for SessionShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionShared").field("id", &self.id).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionShared {
    /// New state for a session; `negotiated` is `None` until `initialize` (legacy HTTP+SSE).
    pub(crate) fn new(id: SessionId, negotiated: Option<Negotiated>) -> Self {
        SessionShared {
            id,
            negotiated: Mutex::new(negotiated),
            log_level: Mutex::new(None),
            last_active: AtomicU64::new(now_millis()),
            busy: AtomicUsize::new(0),
            next_request: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// The id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// What the handshake agreed on, if it happened.
    pub(crate) fn negotiated(&self) -> Option<Negotiated> {
        lock(&self.negotiated).clone()
    }

    /// Records the handshake.
    pub(crate) fn set_negotiated(&self, negotiated: Negotiated) {
        *lock(&self.negotiated) = Some(negotiated);
    }

    /// The log level the client set.
    pub(crate) fn log_level(&self) -> Option<LogLevel> {
        *lock(&self.log_level)
    }

    /// Sets the log level (`logging/setLevel`).
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        *lock(&self.log_level) = Some(level);
    }

    /// Marks activity now.
    pub(crate) fn touch(&self) {
        self.last_active.store(now_millis(), Ordering::Relaxed);
    }

    /// Milliseconds since the last activity, or 0 while work is in progress.
    pub(crate) fn idle_for(&self) -> u64 {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return 0;
        }
        now_millis().saturating_sub(self.last_active.load(Ordering::Relaxed))
    }

    /// Marks a request or stream as in progress until the guard drops.
    pub(crate) fn busy(self: &Arc<Self>) -> BusyGuard {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.touch();
        BusyGuard(self.clone())
    }

    /// Registers a server-to-client request and returns its id and the receiver of its answer.
    pub(crate) fn register_request(&self) -> (RequestId, oneshot::Receiver<Result<Value, ErrorObject>>) {
        let id = RequestId::Number(self.next_request.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        (id, rx)
    }

    /// Delivers the client's answer; false when no such request is pending.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Forgets a request (timed out).
    pub(crate) fn forget(&self, id: &RequestId) {
        lock(&self.pending).remove(id);
    }

    /// Fails every pending request (the session ends).
    pub(crate) fn fail_pending(&self, reason: &str) {
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, reason.to_owned())));
        }
    }
}

/// Keeps a session from expiring while a request runs or a stream is open.
#[derive(Debug)]
pub(crate) struct BusyGuard(Arc<SessionShared>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Where a request's notifications and server-to-client requests go.
#[derive(Debug)]
pub(crate) enum PeerSink {
    /// The request's own stream (its POST response), plus a trigger that closes that stream's
    /// connection early (SSE polling: the client resumes with `GET` + `Last-Event-ID`).
    Request {
        /// Messages for the stream.
        out: UnboundedSender<Vec<u8>>,
        /// Fired once to detach the connection.
        close: Mutex<Option<oneshot::Sender<()>>>,
    },
    /// The session's standalone stream (legacy HTTP+SSE, where every message goes there).
    Standalone(actix::Addr<super::Session>),
}

impl PeerSink {
    fn send(&self, message: Vec<u8>) -> Result<(), ()> {
        match self {
            PeerSink::Request { out, .. } => out.send(message).map_err(|_| ()),
            PeerSink::Standalone(session) => {
                session.do_send(super::Emit::standalone(message));
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
        let _ = self.out.send(jsonrpc::outgoing_message(None, method, Some(&params)));
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
        let (id, answer) = self.shared.register_request();
        let sent = self.out.send(jsonrpc::outgoing_message(Some(&id), method, Some(&params)));
        let shared = self.shared.clone();
        let timeout = self.request_timeout;
        let method = method.to_owned();
        Box::pin(async move {
            if sent.is_err() {
                shared.forget(&id);
                return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the request's stream is closed"));
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
        })
    }
}
