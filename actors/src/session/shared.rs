//! The part of a session that request handlers read and write without a mailbox hop: the
//! negotiated version, client capabilities, log level, activity clock, the requests running
//! (at most `max_in_flight`, [`SessionShared::admit`]), and the server-to-client requests
//! awaiting the client's answer (at most as many).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpd::auth::identity::Identity;
use mcpd::catalog::BoxFuture;
use mcpd::context::{LogLevel, Peer};
use mcpd::jsonrpc::{self, ClientCapabilities, ErrorCode, ErrorObject, RequestId};
use mcpd::version::ProtocolVersion;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::queue::{Outbox, Refused};
use crate::shares::Held;
use crate::status::now_millis;

/// A session id: 128 random bits as hex (visible ASCII, unguessable).
#[derive(Debug, Clone, PartialEq, Eq, Hash, derive_more::Display)]
pub(crate) struct SessionId(Arc<str>);

impl SessionId {
    /// A session id another instance made (cluster mode; checked by the caller).
    pub(crate) fn adopted(id: &str) -> SessionId {
        SessionId(Arc::from(id))
    }

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
    pub client_capabilities: ClientCapabilities,
}

type Pending = HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>;

/// Session state shared by the actor and the request handlers.
pub(crate) struct SessionShared {
    id: SessionId,
    negotiated: Mutex<Option<Negotiated>>,
    log_level: Mutex<Option<LogLevel>>,
    last_active: AtomicU64,
    busy: AtomicUsize,
    /// Requests running now, and the most that may.
    in_flight: AtomicUsize,
    max_in_flight: usize,
    next_request: AtomicI64,
    pending: Mutex<Pending>,
    /// Who opened it (`None`: the anonymous caller of a server without authentication): only
    /// that identity is served.
    owner: Option<Identity>,
    /// Whether a use by another identity was logged already (one line per session).
    refusal_logged: AtomicBool,
    /// The owner's share this session holds (given back when the session's state goes).
    share: Option<Held>,
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
    /// At most `max_in_flight` requests run at once, and as many requests to the client wait.
    pub(crate) fn new(id: SessionId, negotiated: Option<Negotiated>, max_in_flight: usize) -> Self {
        SessionShared {
            id,
            negotiated: Mutex::new(negotiated),
            log_level: Mutex::new(None),
            last_active: AtomicU64::new(now_millis()),
            busy: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: max_in_flight.max(1),
            next_request: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            owner: None,
            refusal_logged: AtomicBool::new(false),
            share: None,
        }
    }

    /// Keeps the owner's share of sessions for as long as the session's state lives.
    #[must_use]
    pub(crate) fn holding(mut self, share: Held) -> Self {
        self.share = Some(share);
        self
    }

    /// Binds the session to the identity that opened it.
    #[must_use]
    pub(crate) fn owned_by(mut self, owner: Option<Identity>) -> Self {
        self.owner = owner;
        self
    }

    /// Who opened it.
    pub(crate) fn owner(&self) -> Option<&Identity> {
        self.owner.as_ref()
    }

    /// Whether `caller` may use the session: the identity that opened it (compared in constant
    /// time), or anyone when both are the anonymous caller. The first refusal is logged (the
    /// kind of identity, never a key or a subject).
    pub(crate) fn serves(&self, caller: Option<&Identity>) -> bool {
        let same = match (&self.owner, caller) {
            (None, None) => true,
            (Some(owner), Some(caller)) => owner.same(caller),
            _ => false,
        };
        if !same && !self.refusal_logged.swap(true, Ordering::Relaxed) {
            let who = caller.map_or("an unauthenticated caller", Identity::shown);
            log::warn!(
                "session {}: refused a use by another identity ({who}); answered as an unknown session",
                self.id
            );
        }
        same
    }

    /// Numbers this session's server-to-client requests from `first` on (cluster mode: each
    /// instance has its own range, so a client's answer names the instance waiting for it).
    #[must_use]
    pub(crate) fn numbered_from(self, first: i64) -> Self {
        self.next_request.store(first, Ordering::Relaxed);
        self
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

    /// The most requests that may run at once.
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// Admits one more running request, unless `max_in_flight` already run; it counts until
    /// the guard drops.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<InFlight> {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= self.max_in_flight {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(InFlight(self.clone()))
    }

    /// Registers a server-to-client request and returns its id and the receiver of its answer;
    /// `None` when `max_in_flight` requests already await the client's answer.
    pub(crate) fn register_request(&self) -> Option<(RequestId, oneshot::Receiver<Result<Value, ErrorObject>>)> {
        let mut pending = lock(&self.pending);
        if pending.len() >= self.max_in_flight {
            return None;
        }
        let id = RequestId::Number(self.next_request.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        pending.insert(id.clone(), tx);
        Some((id, rx))
    }

    /// Delivers the client's answer; false when no such request is pending.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Whether a server-to-client request with this id awaits the client's answer here.
    pub(crate) fn awaits(&self, id: &RequestId) -> bool {
        lock(&self.pending).contains_key(id)
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

/// One running request of a session, counted against its `max_in_flight` until dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<SessionShared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
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
        /// Messages for the stream (bounded: see [`crate::queue`]).
        out: Outbox,
        /// Fired once to detach the connection.
        close: Mutex<Option<oneshot::Sender<()>>>,
    },
    /// The session's standalone stream (legacy HTTP+SSE, where every message goes there).
    Standalone(actix::Addr<super::Session>),
}

impl PeerSink {
    /// Sends a notification; on a request's own stream it is dropped (and counted) when the
    /// client does not keep up.
    fn notify(&self, message: Vec<u8>) {
        match self {
            PeerSink::Request { out, .. } => out.notify(message),
            PeerSink::Standalone(session) => session.do_send(super::Emit::standalone(message)),
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
        let sent = self.out.request(jsonrpc::outgoing_message(Some(&id), method, Some(&params)));
        let shared = self.shared.clone();
        let timeout = self.request_timeout;
        let method = method.to_owned();
        Box::pin(async move {
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
        })
    }
}
