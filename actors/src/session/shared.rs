//! The part of a session that request handlers read and write without a mailbox hop: the
//! negotiated version, client capabilities, log level, activity clock, the requests running
//! (at most `max_in_flight`, [`SessionShared::admit`]), and the server-to-client requests
//! awaiting the client's answer (at most as many).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcpd::auth::identity::Identity;
use mcpd::context::LogLevel;
use mcpd::jsonrpc::{ClientCapabilities, ErrorCode, ErrorObject, RequestId};
use mcpd::version::ProtocolVersion;
use serde_json::Value;
use tokio::sync::oneshot;

use super::clock::now_ms;
use super::executor::ExecutorSlot;
use super::id::SessionId;
use crate::served::Served;
use crate::shares::Held;
use crate::telemetry::Transport;

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
    /// The virtual server it was opened on (`None`: the whole server, `/mcp`): only that
    /// endpoint knows it.
    endpoint: Option<Arc<str>>,
    /// Whether a use by another identity was logged already (one line per session).
    refusal_logged: AtomicBool,
    /// The owner's share this session holds (given back when the session's state goes).
    share: Option<Held>,
    /// The executor of its requests, started by the first.
    executor: ExecutorSlot,
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
            last_active: AtomicU64::new(now_ms()),
            busy: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: max_in_flight.max(1),
            next_request: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            owner: None,
            endpoint: None,
            refusal_logged: AtomicBool::new(false),
            share: None,
            executor: ExecutorSlot::default(),
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

    /// Binds the session to the endpoint it was opened on (a virtual server's name; `None`:
    /// the whole server).
    #[must_use]
    pub(crate) fn on_endpoint(mut self, endpoint: Option<&str>) -> Self {
        self.endpoint = endpoint.map(Arc::from);
        self
    }

    /// The virtual server it was opened on (`None`: the whole server).
    pub(crate) fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
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
        self.last_active.store(now_ms(), Ordering::Relaxed);
    }

    /// Milliseconds since the last activity, or 0 while work is in progress.
    pub(crate) fn idle_for(&self) -> u64 {
        self.idle_at(now_ms())
    }

    /// Milliseconds idle at `now` (the sessions' clock), or 0 while work is in progress.
    pub(crate) fn idle_at(&self, now: u64) -> u64 {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return 0;
        }
        now.saturating_sub(self.last_active.load(Ordering::Relaxed))
    }

    /// Where this session's messages are served, for their spans.
    pub(crate) fn served(&self) -> Served<'_> {
        let version = self.negotiated().map(|negotiated| negotiated.version);
        Served { version, session: Some(self.id.as_str()), transport: Transport::Tcp }
    }

    /// The executor of this session's requests (see [`ExecutorSlot`]).
    pub(crate) fn executor(&self) -> &ExecutorSlot {
        &self.executor
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
