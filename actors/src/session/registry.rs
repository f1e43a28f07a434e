//! The registry of live sessions, shared by every HTTP worker. It holds strong addresses, so a
//! session ends only when told (`StopSession`) or when it expires, and removes itself in `stopped()`.
//! It keeps the sessions' table of deadlines ([`Deadlines`]): the supervisor's one timer calls
//! [`SessionRegistry::sweep`], which tells each session whose check is due.
//! It also keeps each identity's share of the capacity ([`crate::shares`]), and, when the cap is
//! reached and the operator allows it, ends an idle session of the identity holding the most
//! ([`SessionRegistry::evict_idle`]).
//!
//! In cluster mode it holds the session store ([`SessionStore`], the interface sessions share
//! through), and it is where the store reaches this instance's copies: what another instance did
//! to a session ([`SessionRegistry::tell`]) and a check of every copy's record
//! ([`SessionRegistry::reconcile_all`]), so that the store never handles a session actor. The
//! store sees it as [`LocalSessions`], a session actor as [`Roster`]: neither imports this file.

use std::sync::{Arc, OnceLock};

use actix::Addr;
use dashmap::DashMap;

use super::actor::Session;
use super::clock::now_ms;
use super::end::EndReason;
use super::expiry::Deadlines;
use super::id::SessionId;
use super::messages::{ChangeSubscription, Reconcile, StopSession, Sweep};
use super::roster::Roster;
use super::shared::SessionShared;
use super::store::{CopyNews, LocalSessions, SessionStore};
use crate::shares::Shares;
use crate::tool_executor::Cancel;

/// How long a session must have been idle to be ended for room.
const EVICTABLE_AFTER_MS: u64 = 1000;
/// The most entries the map is made room for up front (a larger cap grows it as sessions come).
const PRESIZED_UP_TO: usize = 1 << 20;

/// What a request handler needs of a session.
#[derive(Debug, Clone)]
pub(crate) struct SessionHandle {
    /// The session actor.
    pub session: Addr<Session>,
    /// State read without a mailbox hop (the executor of its requests among it).
    pub shared: Arc<SessionShared>,
}

/// Live sessions by id, with a cap.
#[derive(Debug)]
pub(crate) struct SessionRegistry {
    sessions: DashMap<Arc<str>, SessionHandle>,
    max: usize,
    /// Cluster mode: the store sessions are shared through.
    store: OnceLock<Arc<dyn SessionStore>>,
    /// Each identity's share of sessions, streams and requests in flight.
    shares: Shares,
    /// When each session is to be checked next.
    deadlines: Deadlines,
}

impl SessionRegistry {
    /// An empty registry admitting at most `max` sessions, with room made for them up front
    /// (up to [`PRESIZED_UP_TO`]): opening a session never waits for the map to grow.
    pub(crate) fn new(max: usize) -> Self {
        SessionRegistry {
            sessions: DashMap::with_capacity(max.min(PRESIZED_UP_TO)),
            max,
            store: OnceLock::new(),
            shares: Shares::default(),
            deadlines: Deadlines::default(),
        }
    }

    /// Tells every session whose check is due to check itself (the supervisor's timer calls
    /// this every [`super::expiry::SLOT_MS`]); costs what is due, not what is held.
    pub(crate) fn sweep(&self) {
        for (slot, ids) in self.deadlines.due(now_ms()) {
            for id in ids {
                if let Some(handle) = self.get(id.as_str()) {
                    handle.session.do_send(Sweep { slot });
                }
            }
        }
    }

    /// Each identity's share of the capacity.
    pub(crate) fn shares(&self) -> &Shares {
        &self.shares
    }

    /// When the cap is reached and idle sessions may be ended: ends the least recently used
    /// session of the identity holding the most that has been idle (no request running, no
    /// stream open) for at least a second, and says whether it made room. Another identity's
    /// sessions, and sessions in use, are never ended for it.
    pub(crate) fn evict_idle(&self) -> bool {
        if !self.shares.evicts_idle() {
            return false;
        }
        let Some(largest) = self.shares.largest_session_holder() else { return false };
        let idle = self
            .sessions
            .iter()
            .filter(|entry| entry.value().shared.owner() == Some(&largest))
            .map(|entry| (entry.value().shared.idle_for(), entry.value().clone()))
            .filter(|(idle, _)| *idle >= EVICTABLE_AFTER_MS)
            .max_by_key(|(idle, _)| *idle);
        let Some((_, handle)) = idle else { return false };
        log::info!("session {} ended to make room: its owner holds the most sessions", handle.shared.id());
        self.remove(handle.shared.id());
        handle.session.do_send(StopSession { reason: EndReason::Expired });
        true
    }

    /// Cluster mode: sessions from now on are shared through `store` (set once).
    pub(crate) fn share(&self, store: Arc<dyn SessionStore>) {
        let _ = self.store.set(store);
    }

    /// The store sessions are shared through, in cluster mode.
    pub(crate) fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.store.get()
    }

    /// What another instance did to session `id`, applied to the copy held here (nothing when
    /// none is): an answer resolves the request awaiting it, a cancellation goes to the
    /// executor, an end removes and stops the copy, a level or subscription is taken.
    pub(crate) fn tell(&self, id: &str, news: CopyNews) {
        let Some(handle) = self.get(id) else { return };
        match news {
            CopyNews::Answer { id, outcome } => {
                handle.shared.resolve(&id, outcome);
            }
            CopyNews::Cancel(id) => {
                if let Some(executor) = handle.shared.executor().running() {
                    executor.do_send(Cancel { id });
                }
            }
            CopyNews::End => {
                self.remove(handle.shared.id());
                handle.session.do_send(StopSession { reason: EndReason::Deleted });
            }
            CopyNews::Level(level) => handle.shared.set_log_level(level),
            CopyNews::Subscription(change) => handle.session.do_send(ChangeSubscription(change)),
        }
    }

    /// Every copy held here checks its record now (the store's news were lost meanwhile).
    pub(crate) fn reconcile_all(&self) {
        for handle in self.handles() {
            handle.session.do_send(Reconcile);
        }
    }

    /// The session with this id, or the one `make` starts and registers when there is none
    /// (the check and the insertion are one step: two requests adopting a session at once on
    /// two workers make one session). `make` runs under the registry's shard lock.
    pub(crate) fn get_or_insert_with(&self, id: &str, make: impl FnOnce() -> SessionHandle) -> SessionHandle {
        self.sessions.entry(Arc::from(id)).or_insert_with(make).value().clone()
    }

    /// The session with this id (a clone of its handle; no lock is held afterwards).
    pub(crate) fn get(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|e| e.value().clone())
    }

    /// Whether another session may open.
    pub(crate) fn has_room(&self) -> bool {
        self.sessions.len() < self.max
    }

    /// The cap.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Number of live sessions.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Registers a session.
    pub(crate) fn insert(&self, handle: SessionHandle) {
        self.sessions.insert(handle.shared.id().as_arc(), handle);
    }

    /// Removes a session.
    pub(crate) fn remove(&self, id: &SessionId) {
        self.sessions.remove(id.as_str());
    }

    /// Every live session's handle.
    pub(crate) fn handles(&self) -> Vec<SessionHandle> {
        self.sessions.iter().map(|e| e.value().clone()).collect()
    }
}

impl Roster for SessionRegistry {
    fn store(&self) -> Option<&Arc<dyn SessionStore>> {
        SessionRegistry::store(self)
    }

    fn file_check(&self, id: &SessionId, due_ms: u64) -> u64 {
        self.deadlines.file(id, due_ms)
    }

    fn remove(&self, id: &SessionId) {
        SessionRegistry::remove(self, id);
    }
}

impl LocalSessions for SessionRegistry {
    fn tell(&self, id: &str, news: CopyNews) {
        SessionRegistry::tell(self, id, news);
    }

    fn reconcile_all(&self) {
        SessionRegistry::reconcile_all(self);
    }

    fn shares(&self) -> &Shares {
        SessionRegistry::shares(self)
    }
}
