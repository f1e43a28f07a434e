//! The `Session` actor: one per streamable-HTTP session (or legacy HTTP+SSE connection).
//!
//! It owns the session's SSE streams (the standalone `GET` stream and one per POST answered with
//! SSE), their replay buffers, its resource subscriptions, and its life: it ends on `StopSession`
//! (DELETE, shutdown) or when idle longer than the configured time, and then deregisters
//! itself, stops its `ToolExecutor` (if a request started one), fails pending server-to-client
//! requests and closes its streams. Request execution does not pass through this mailbox:
//! handlers send `Execute` to the session's `ToolExecutor` and read [`SessionShared`] directly.
//!
//! It runs no timer of its own: it files its next check with the process's one sweeper
//! ([`super::expiry`], through [`Roster::file_check`]) — when it would have been idle for its idle
//! time, or sooner for a keep-alive on an open stream or a refresh of its shared record — and
//! acts when told ([`Sweep`]). An idle session costs no CPU until then.
//!
//! Handles the messages of [`super::messages`] and [`RecordNews`]. It reaches the registry that
//! holds it through [`Roster`] only, so the registry (which holds sessions' addresses) and the
//! actor never import each other.
//!
//! In cluster mode a session is a copy of one shared through a [`SessionStore`] (the interface
//! is [`super::store`]'s, so the actor depends on no store's engine): it numbers its streams from
//! the store's base, writes its events to the store's [`EventLog`], and keeps its record fresh.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};
use mcpd::catalog::LiveCatalog;
use mcpd::server::{Interest, Subscription};

use super::clock::now_ms;
use super::end::EndReason;
use super::messages::{
    CatalogChanged, ChangeSubscription, DetachStream, Emit, OpenStream, Reconcile, Resume, ResumeError, StopSession,
    Sweep,
};
use super::roster::Roster;
use super::shared::SessionShared;
use super::store::{EventLog, RecordCopy, RecordNews, SessionStore};
use super::stream::{self, Stream, STANDALONE};
use crate::counts::{ActorCounts, ActorKind};
use crate::metrics::Metrics;
use crate::sse::KEEP_ALIVE_INTERVAL;

/// Cluster mode: the longest a session's copy stays idle on an instance.
pub(crate) const COPY_IDLE: Duration = Duration::from_secs(60);

/// How many finished-but-undelivered POST streams a session keeps for resumption.
const MAX_PARKED_STREAMS: usize = 16;

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    shared: Arc<SessionShared>,
    registry: Arc<dyn Roster>,
    counts: Arc<ActorCounts>,
    metrics: Arc<Metrics>,
    idle_timeout: Duration,
    /// How long this copy stays idle before it ends: the idle time, or in cluster mode at most
    /// [`COPY_IDLE`] (the store's record keeps the session; a copy is re-adopted on demand).
    local_idle: Duration,
    streams: HashMap<u64, Stream>,
    next_stream: u64,
    /// The list changes and resource updates this session hears about.
    interest: Interest,
    /// Counts this session's resource subscriptions (released when it ends).
    catalog: Arc<LiveCatalog>,
    last_keep_alive: Instant,
    /// The slot of the check this session filed last (`None` while one is being made): a
    /// [`Sweep`] for another slot is an outdated one and ignored.
    filed: Option<u64>,
    end: Option<EndReason>,
    legacy_sse: bool,
    /// Cluster mode: the session store, this session's event log (made on first event), and
    /// when its record was last refreshed.
    cluster: Option<Arc<dyn SessionStore>>,
    writer: Option<Box<dyn EventLog>>,
    refreshed: Instant,
    /// The standalone stream's number (0, or this instance's first number in cluster mode).
    standalone_id: u64,
    /// When it started (`mcp.server.session.duration`).
    opened: Instant,
}

impl Session {
    /// A session over its shared state.
    pub(crate) fn new(
        shared: Arc<SessionShared>,
        registry: Arc<dyn Roster>,
        counts: Arc<ActorCounts>,
        metrics: Arc<Metrics>,
        idle_timeout: Duration,
        catalog: Arc<LiveCatalog>,
    ) -> Self {
        let cluster = registry.store().cloned();
        let standalone_id = cluster.as_ref().map_or(STANDALONE, |c| c.number_base());
        let local_idle = if cluster.is_some() { idle_timeout.min(COPY_IDLE) } else { idle_timeout };
        Session {
            shared,
            registry,
            counts,
            metrics,
            idle_timeout,
            local_idle,
            streams: HashMap::new(),
            next_stream: standalone_id + 1,
            interest: Interest::every_list(),
            catalog,
            last_keep_alive: Instant::now(),
            filed: None,
            end: None,
            legacy_sse: false,
            cluster,
            writer: None,
            refreshed: Instant::now(),
            standalone_id,
            opened: Instant::now(),
        }
    }

    /// The catalog changes the session hears (its opener's view: no list change of a kind it
    /// sees none of); every one by default.
    #[must_use]
    pub(crate) fn hearing(mut self, interest: Interest) -> Self {
        self.interest = interest;
        self
    }

    /// Marks a 2024-11-05 HTTP+SSE session: its stream has no priming event, and it is never
    /// shared (it ends when idle for the idle time, as without cluster mode).
    #[must_use]
    pub(crate) fn legacy_sse(mut self, legacy: bool) -> Self {
        self.legacy_sse = legacy;
        if legacy {
            self.local_idle = self.idle_timeout;
        }
        self
    }

    /// A due check: ends the session when it has been idle for its idle time; else sends what
    /// keep-alives are due, refreshes its shared record when due, forgets spent streams, and
    /// files the next check.
    fn check(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms();
        let idle_for = self.shared.idle_at(now);
        if u128::from(idle_for) >= self.local_idle.as_millis() {
            log::debug!("session {} expired here", self.shared.id());
            // A copy of a shared session leaves its record fresh: the session may go on elsewhere.
            self.refresh_record(ctx, false);
            self.end = Some(EndReason::Expired);
            ctx.stop();
            return;
        }
        // Used since the record was last refreshed (or busy now): refresh it, at most every
        // quarter of the idle time.
        if self.refreshed.elapsed() >= self.idle_timeout / 4 {
            self.refresh_record(ctx, false);
        }
        if self.last_keep_alive.elapsed() >= KEEP_ALIVE_INTERVAL {
            self.last_keep_alive = Instant::now();
            for stream in self.streams.values_mut() {
                stream.ping();
            }
        }
        let standalone = self.standalone_id;
        self.streams.retain(|id, s| *id == standalone || !s.spent());
        self.file_next(now, idle_for);
    }

    /// Files the next check: when the session will have been idle for its idle time, or sooner
    /// when a stream is open (its keep-alive) or its shared record needs refreshing.
    fn file_next(&mut self, now: u64, idle_for: u64) {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let mut due = now.saturating_sub(idle_for).saturating_add(millis(self.local_idle));
        if self.streams.values().any(Stream::attached) {
            let next_ping = KEEP_ALIVE_INTERVAL.saturating_sub(self.last_keep_alive.elapsed());
            due = due.min(now + millis(next_ping));
        }
        if self.cluster.is_some() && !self.legacy_sse {
            // A used copy refreshes its record every quarter of the idle time; and checks once
            // more before the record would lapse, in case it was used since.
            let since = millis(self.refreshed.elapsed());
            let quarter = millis(self.idle_timeout / 4);
            let lapse = millis(self.idle_timeout - self.idle_timeout / 8);
            for at in [quarter, lapse] {
                if at > since {
                    due = due.min(now + (at - since));
                }
            }
        }
        self.file(due.max(now + 1));
    }

    /// Files a check at `due_ms`, unless one is filed for that slot or sooner.
    fn file(&mut self, due_ms: u64) {
        let slot = due_ms.div_ceil(super::expiry::SLOT_MS);
        if self.filed.is_some_and(|filed| filed <= slot) {
            return;
        }
        self.filed = Some(self.registry.file_check(self.shared.id(), due_ms));
    }

    /// A stream was attached: its keep-alives are due from now on.
    fn keep_alive_from_now(&mut self) {
        let millis = u64::try_from(KEEP_ALIVE_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        if self.streams.values().filter(|s| s.attached()).count() == 1 {
            self.last_keep_alive = Instant::now();
        }
        self.file(now_ms() + millis);
    }

    /// Cluster mode: refreshes the session's record in the store when the session was used since
    /// the last refresh (always when `force`d, after the store's news were lost: then the copy
    /// also takes the record's log level and subscriptions, see [`RecordNews::Reconciled`]); the
    /// record is written again if the store lost it, and this copy ends if the session was
    /// deleted meanwhile (a DELETE whose news it missed). Not for the 2024-11-05 transport, whose
    /// sessions are not shared.
    fn refresh_record(&mut self, ctx: &mut Context<Self>, force: bool) {
        let Some(cluster) = &self.cluster else { return };
        if self.legacy_sse {
            return;
        }
        let since = self.refreshed.elapsed();
        if !force && u128::from(self.shared.idle_for()) >= since.as_millis() {
            return;
        }
        let Some(negotiated) = self.shared.negotiated() else { return };
        let copy = RecordCopy {
            negotiated,
            log_level: self.shared.log_level(),
            subscriptions: self.interest.uris().to_vec(),
            owner: self.shared.owner().cloned(),
            endpoint: self.shared.endpoint().map(str::to_owned),
        };
        let news = ctx.address().recipient();
        // The record lives an idle time from the session's last use, wherever that was.
        let since_use = Duration::from_millis(self.shared.idle_for());
        let lives = self.idle_timeout.saturating_sub(since_use).max(Duration::from_millis(1));
        cluster.keep_alive(self.shared.id().as_str(), lives, copy, news, force);
        self.refreshed = Instant::now();
    }

    fn standalone(&mut self) -> &mut Stream {
        self.streams.entry(self.standalone_id).or_default()
    }

    /// Sends a message on a stream (the standalone one is opened on first use — in cluster
    /// mode only by a `GET` here: the instance holding the client's `GET` announces for it); a
    /// POST stream that has delivered its last event is forgotten.
    fn emit(&mut self, id: u64, message: &[u8], last: bool) {
        let id = if id == STANDALONE { self.standalone_id } else { id };
        if id == self.standalone_id && self.cluster.is_some() && !self.streams.contains_key(&id) {
            return;
        }
        let standalone = id == self.standalone_id;
        let stream = if standalone { Some(self.standalone()) } else { self.streams.get_mut(&id) };
        let Some(stream) = stream else { return };
        let seq = stream.emit(id, message, last);
        if !standalone && stream.spent() {
            self.streams.remove(&id);
        }
        if let Some(writer) = self.writer() {
            writer.event(id, seq, message, last);
        }
    }

    /// Cluster mode: this session's event log.
    fn writer(&mut self) -> Option<&dyn EventLog> {
        let cluster = self.cluster.as_ref()?;
        if self.writer.is_none() {
            self.writer = Some(cluster.writer(self.shared.id().as_str(), self.idle_timeout));
        }
        self.writer.as_deref()
    }
}

impl Actor for Session {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.counts.started(ActorKind::Session);
        self.file_next(now_ms(), self.shared.idle_for());
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.registry.remove(self.shared.id());
        self.shared.executor().end();
        self.shared.fail_pending("the session ended");
        self.streams.clear();
        self.interest.release(&self.catalog);
        self.metrics.session_ended(self.end.unwrap_or(EndReason::Shutdown));
        crate::telemetry::session_ended(self.shared.negotiated().map(|n| n.version), self.opened);
        self.counts.stopped(ActorKind::Session);
    }
}

impl Handler<OpenStream> for Session {
    type Result = u64;

    fn handle(&mut self, msg: OpenStream, _ctx: &mut Self::Context) -> u64 {
        self.counts.handled(ActorKind::Session);
        let id = self.next_stream;
        self.next_stream += 1;
        let mut stream = Stream::default();
        stream.attach(id, msg.sender, true);
        self.streams.insert(id, stream);
        self.keep_alive_from_now();
        if let Some(writer) = self.writer() {
            writer.open_stream(id, msg.request.as_ref());
        }
        let parked = self.streams.iter().filter(|(_, s)| s.finished() && !s.attached()).count();
        if parked > MAX_PARKED_STREAMS {
            if let Some(oldest) = self.streams.iter().filter(|(_, s)| s.finished()).map(|(id, _)| *id).min() {
                self.streams.remove(&oldest);
            }
        }
        id
    }
}

impl Handler<Emit> for Session {
    type Result = ();

    fn handle(&mut self, msg: Emit, _ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        self.emit(msg.stream, &msg.message, msg.last);
    }
}

impl Handler<Resume> for Session {
    type Result = Result<(), ResumeError>;

    fn handle(&mut self, msg: Resume, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Session);
        match msg.last_event_id {
            None => {
                let prime = !self.legacy_sse;
                let id = self.standalone_id;
                let standalone = self.standalone();
                if standalone.attached() {
                    return Err(ResumeError::Conflict);
                }
                standalone.attach(id, msg.sender, prime);
                self.keep_alive_from_now();
                Ok(())
            }
            Some(last) => {
                let parsed = stream::parse_event_id(&last);
                let Some((id, seq)) = parsed else { return Err(ResumeError::UnknownEvent(last)) };
                let standalone = id == self.standalone_id || (id == STANDALONE && self.cluster.is_none());
                let stream = if standalone {
                    let id = self.standalone_id;
                    Some(self.streams.entry(id).or_default())
                } else {
                    self.streams.get_mut(&id)
                };
                let Some(stream) = stream else { return Err(ResumeError::UnknownEvent(last)) };
                if !stream.resume(id, seq, msg.sender) {
                    return Err(ResumeError::UnknownEvent(last));
                }
                if !standalone && stream.spent() {
                    self.streams.remove(&id);
                }
                self.keep_alive_from_now();
                Ok(())
            }
        }
    }
}

impl Handler<DetachStream> for Session {
    type Result = ();

    fn handle(&mut self, msg: DetachStream, _ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        if let Some(stream) = self.streams.get_mut(&msg.stream) {
            stream.detach();
        }
    }
}

impl Handler<ChangeSubscription> for Session {
    type Result = ();

    fn handle(&mut self, msg: ChangeSubscription, _ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        self.interest.apply_counted(msg.0, &self.catalog);
    }
}

impl Handler<CatalogChanged> for Session {
    type Result = ();

    fn handle(&mut self, msg: CatalogChanged, _ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        if let Some((method, params)) = self.interest.announcement(&msg.0) {
            let message = mcpd::jsonrpc::outgoing_message(None, method, params.map(serde_json::Value::Object).as_ref());
            self.emit(STANDALONE, &message, false);
        }
    }
}

impl Handler<Reconcile> for Session {
    type Result = ();

    fn handle(&mut self, _msg: Reconcile, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        self.refresh_record(ctx, true);
    }
}

/// Cluster mode: what the store found refreshing the record. Deleted elsewhere, the copy ends;
/// after a [`Reconcile`], it takes the record's log level and subscriptions.
impl Handler<RecordNews> for Session {
    type Result = ();

    fn handle(&mut self, msg: RecordNews, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        let (log_level, subscriptions) = match msg {
            RecordNews::Deleted => {
                self.end = Some(EndReason::Deleted);
                ctx.stop();
                return;
            }
            RecordNews::Reconciled { log_level, subscriptions } => (log_level, subscriptions),
        };
        if let Some(level) = log_level.filter(|level| self.shared.log_level() != Some(*level)) {
            self.shared.set_log_level(level);
        }
        let held = self.interest.uris().to_vec();
        for uri in held.iter().filter(|uri| !subscriptions.contains(uri)) {
            self.interest.apply_counted(Subscription::Unsubscribe(uri.clone()), &self.catalog);
        }
        for uri in subscriptions.into_iter().filter(|uri| !held.contains(uri)) {
            self.interest.apply_counted(Subscription::Subscribe(uri), &self.catalog);
        }
    }
}

impl Handler<Sweep> for Session {
    type Result = ();

    fn handle(&mut self, msg: Sweep, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        if self.filed != Some(msg.slot) {
            return;
        }
        self.filed = None;
        self.check(ctx);
    }
}

impl Handler<StopSession> for Session {
    type Result = ();

    fn handle(&mut self, msg: StopSession, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Session);
        self.end = Some(msg.reason);
        ctx.stop();
    }
}
