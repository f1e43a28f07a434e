//! Sessions any instance can serve (cluster mode), and the notification bus.
//!
//! A streamable-HTTP session (2025-03-26 … 2025-11-25) is created on the instance that got its
//! `initialize`, but its later requests may land on any instance behind the balancer. What
//! they need is in Redis:
//!
//! - **The record** `mcpd:session:<id>`, a hash: `version`, `caps` (the client's capabilities,
//!   JSON), `level` (the log level set), `sub:<uri>` for each resource subscription. It expires
//!   after the idle time; the instances holding the session refresh it while it is used
//!   ([`SharedSessions::keep_alive`], at most every quarter of the idle time). An instance that
//!   gets a request for a session it does not hold reads the record (one round trip, once per
//!   instance and session) and *adopts* the session: a local `Session` actor with the same id
//!   whose work runs where its requests land. Only DELETE (or the record's expiry) ends a session
//!   everywhere; a local copy that idles ends alone.
//! - **Event streams** `mcpd:events:<session>:<stream>`: every SSE event a session's streams
//!   send, written in order by one writer task per session ([`EventWriter`]; pipelined, bounded,
//!   at most [`REPLAY_CAPACITY`] events kept per stream, expiring with the idle time), with the
//!   stream's owner instance and request id in `mcpd:stream:<session>:<stream>`. A `GET` with a
//!   `Last-Event-ID` of a stream another instance sends is replayed from there and then tailed
//!   every [`TAIL_POLL`] until its last event; when the owner's heartbeat is gone (it died), the
//!   request ends with a JSON-RPC error event. Stream numbers and server-to-client request ids
//!   carry the instance's random 20-bit tag in their high bits, so no two instances use the same.
//! - **The bus**, the pub/sub channel [`BUS`]: the client's answer to a server-to-client request
//!   that reached another instance (the waiting instance resolves it), a cancellation (the
//!   instance running the request aborts it), a session's DELETE, log
//!   level and subscription changes (applied to every local copy), task status changes (for
//!   every instance's `subscriptions/listen` streams following the task), and catalog changes
//!   (`list_changed`, `resources/updated`: re-announced on every other instance to its sessions,
//!   stdio clients and `subscriptions/listen` streams; an event seen from another origin within
//!   [`DEDUP`] — every instance watching the same files sees the same change — is dropped). The bus is
//!   fire-and-forget: what is published while an instance's subscription is down is lost to it
//!   (it resubscribes by itself every [`RETRY`], and then every session copy it holds checks its
//!   record: a DELETE leaves a tombstone, `mcpd:session:<id>:ended`, so a copy that missed it
//!   ends, and a record Redis lost is written again).
//!
//! Without `--redis` none of this exists. The 2024-11-05 HTTP+SSE transport, whose stream is
//! its session, stays on the instance that opened it.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use actix::Addr;
use futures_util::StreamExt;
use mcpd::auth::identity::Identity;
use mcpd::catalog::{CatalogEvent, LiveCatalog};
use mcpd::context::LogLevel;
use mcpd::jsonrpc::{ErrorCode, ErrorObject, RequestId};
use mcpd::server::Subscription;
use mcpd::version::ProtocolVersion;
use redis::aio::ConnectionManager;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::{heartbeat_key, Health, RETRY};
use crate::queue::EventSender;
use crate::session::stream::{REPLAY_CAPACITY, RETRY as SSE_RETRY};
use crate::session::{
    ChangeSubscription, EndReason, Negotiated, Reconcile, Reconciled, Session, SessionRegistry, Stop,
};
use crate::sse;
use crate::tasks::Tasks;
use crate::tool_executor::Cancel;

/// The pub/sub channel every instance listens on.
pub(crate) const BUS: &str = "mcpd:bus";
/// How often a stream resumed on another instance than its owner's is read again.
pub(crate) const TAIL_POLL: Duration = Duration::from_millis(100);
/// A catalog change seen again within this time (from the bus or locally) is not announced twice.
pub(crate) const DEDUP: Duration = Duration::from_secs(1);
/// Events a session's writer may have queued before more are dropped (and counted as errors).
const WRITER_QUEUE: usize = 1024;
/// The low bits of a stream number or request id an instance counts in; above them, its tag.
const TAG_SHIFT: u32 = 32;
/// How many times (every [`TAIL_POLL`]) a resumed stream of another instance is looked for
/// before it is unknown.
const UNKNOWN_STREAM_TRIES: u32 = 5;
/// Longest session id looked up in Redis (mcpd makes 32 hex digits).
const MAX_SESSION_ID: usize = 64;

fn record_key(session: &str) -> String {
    format!("mcpd:session:{session}")
}
/// Set (expiring after the idle time) when a session is deleted, so a copy that missed the
/// bus's message ends at its next refresh rather than writing the record again.
fn ended_key(session: &str) -> String {
    format!("mcpd:session:{session}:ended")
}
fn events_key(session: &str, stream: u64) -> String {
    format!("mcpd:events:{session}:{stream}")
}
fn stream_key(session: &str, stream: u64) -> String {
    format!("mcpd:stream:{session}:{stream}")
}

thread_local! {
    /// Set while a change heard on the bus is announced, so it is not published again.
    static FROM_BUS: Cell<bool> = const { Cell::new(false) };
}

/// What a session's record holds.
#[derive(Debug, Clone)]
pub(crate) struct SessionRecord {
    /// The handshake.
    pub negotiated: Negotiated,
    /// The level `logging/setLevel` set.
    pub log_level: Option<LogLevel>,
    /// Subscribed resource URIs.
    pub subscriptions: Vec<String>,
    /// The identity that opened it (every instance serves only that one).
    pub owner: Option<Identity>,
}

/// What a session's copy knows of its record, to write it again when Redis lost it.
#[derive(Debug)]
pub(crate) struct RecordCopy {
    /// The handshake.
    pub negotiated: Negotiated,
    /// The log level set.
    pub log_level: Option<LogLevel>,
    /// The subscribed URIs.
    pub subscriptions: Vec<String>,
    /// The identity that opened it.
    pub owner: Option<Identity>,
}

impl RecordCopy {
    fn write(&self, key: &str, idle: Duration) -> redis::Pipeline {
        let caps = serde_json::to_string(&*self.negotiated.client_capabilities).unwrap_or_else(|_| "{}".into());
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HSET")
            .arg(key)
            .arg("version")
            .arg(self.negotiated.version.as_str())
            .arg("caps")
            .arg(caps)
            .ignore();
        if let Some(level) = self.log_level {
            pipe.cmd("HSET").arg(key).arg("level").arg(level_name(level)).ignore();
        }
        if let Some(owner) = &self.owner {
            pipe.cmd("HSET").arg(key).arg("owner").arg(owner.as_str()).ignore();
        }
        for uri in &self.subscriptions {
            pipe.cmd("HSET").arg(key).arg(format!("sub:{uri}")).arg("1").ignore();
        }
        pipe.cmd("PEXPIRE").arg(key).arg(millis(idle)).ignore();
        pipe
    }
}

/// Why a shared-session operation failed: Redis did not answer (the message says how).
#[derive(Debug, Clone, derive_more::Display)]
#[display("cluster: Redis is unreachable ({_0})")]
pub(crate) struct Unreachable(String);

/// Sessions shared through Redis, and the bus. Made by [`super::Cluster::start`], held by the
/// session registry.
pub(crate) struct SharedSessions {
    connection: ConnectionManager,
    instance: Arc<str>,
    tag: u64,
    health: Arc<Health>,
    catalog: Arc<LiveCatalog>,
    registry: Weak<SessionRegistry>,
    tasks: Option<Tasks>,
    /// Catalog changes seen lately (announced here or heard on the bus).
    recent: Recent,
}

impl std::fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSessions").field("instance", &self.instance).field("tag", &self.tag).finish()
    }
}

/// Whether `id` could be a session id (what is looked up in Redis: visible ASCII, bounded).
pub(crate) fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_SESSION_ID && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl SharedSessions {
    pub(super) fn new(
        connection: ConnectionManager,
        instance: &str,
        health: Arc<Health>,
        catalog: Arc<LiveCatalog>,
        registry: Weak<SessionRegistry>,
        tasks: Option<Tasks>,
    ) -> Self {
        let mut bytes = [0u8; 4];
        let _ = getrandom::fill(&mut bytes);
        // 20 bits, never 0 (0 is a single instance's numbering): ids stay below 2^53, exact in
        // every client's JSON numbers.
        let tag = u64::from(u32::from_le_bytes(bytes) % ((1 << 20) - 1) + 1);
        SharedSessions {
            connection,
            instance: Arc::from(instance),
            tag,
            health,
            catalog,
            registry,
            tasks,
            recent: Recent::default(),
        }
    }

    /// The first number of this instance's streams and server-to-client requests.
    pub(crate) fn number_base(&self) -> u64 {
        self.tag << TAG_SHIFT
    }

    fn failed(&self, error: &redis::RedisError) -> Unreachable {
        self.health.failed(error);
        Unreachable(error.to_string())
    }

    /// Writes a new session's record (awaited: the next request may land anywhere).
    pub(crate) async fn create(
        &self,
        session: &str,
        negotiated: &Negotiated,
        owner: Option<&Identity>,
        idle: Duration,
    ) -> Result<(), Unreachable> {
        let copy = RecordCopy {
            negotiated: negotiated.clone(),
            log_level: None,
            subscriptions: Vec::new(),
            owner: owner.cloned(),
        };
        copy.write(&record_key(session), idle)
            .query_async::<()>(&mut self.connection.clone())
            .await
            .map_err(|e| self.failed(&e))
    }

    /// The record of a session another instance created; `None` when there is none (ended,
    /// expired, never existed).
    pub(crate) async fn load(&self, session: &str) -> Result<Option<SessionRecord>, Unreachable> {
        if !plausible_id(session) {
            return Ok(None);
        }
        let fields: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(record_key(session))
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|e| self.failed(&e))?;
        let mut version = None;
        let mut caps = None;
        let mut log_level = None;
        let mut subscriptions = Vec::new();
        let mut owner = None;
        for (field, value) in fields {
            match field.as_str() {
                "version" => version = ProtocolVersion::parse(&value),
                "owner" => owner = Some(Identity::from_stored(&value)),
                "caps" => caps = serde_json::from_str::<Value>(&value).ok(),
                "level" => log_level = LogLevel::parse(&value),
                _ => {
                    if let Some(uri) = field.strip_prefix("sub:") {
                        subscriptions.push(uri.to_owned());
                    }
                }
            }
        }
        let Some(version) = version else { return Ok(None) };
        let client_capabilities = caps.unwrap_or_else(|| json!({})).into();
        Ok(Some(SessionRecord {
            negotiated: Negotiated { version, client_capabilities },
            log_level,
            subscriptions,
            owner,
        }))
    }

    /// Refreshes a used session's record (not awaited; a failure is counted). A record that is
    /// gone although the session is in use is written again from this copy (Redis restarted
    /// without persistence, or was flushed), unless the session was deleted (its tombstone is
    /// there: a DELETE whose bus message this instance missed) — then the copy is ended. When
    /// `reconcile` (the bus was down, its messages lost), a record that is there is read and its
    /// log level and subscriptions handed to the copy ([`Reconciled`]): a `logging/setLevel` or
    /// a (un)subscription made elsewhere meanwhile reaches this copy too.
    pub(crate) fn keep_alive(
        self: &Arc<Self>,
        session: &str,
        idle: Duration,
        copy: RecordCopy,
        actor: Addr<Session>,
        reconcile: bool,
    ) {
        let this = self.clone();
        let id = session.to_owned();
        let key = record_key(session);
        let ended = ended_key(session);
        actix_rt::spawn(async move {
            let mut connection = this.connection.clone();
            let read: redis::RedisResult<(i64, i64)> = redis::pipe()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(millis(idle))
                .cmd("EXISTS")
                .arg(&ended)
                .query_async(&mut connection)
                .await;
            let outcome = match read {
                Ok((0, 0)) => {
                    log::info!("cluster: the record of {key} was gone from Redis; written again");
                    copy.write(&key, idle).query_async::<()>(&mut connection).await
                }
                Ok((_, 1)) => {
                    log::debug!("cluster: {key} was deleted elsewhere; this copy ends");
                    actor.do_send(Stop { reason: EndReason::Deleted });
                    Ok(())
                }
                Ok(_) if reconcile => {
                    // A failure was counted by `load`; the next reconcile tries again.
                    if let Ok(Some(record)) = this.load(&id).await {
                        actor.do_send(Reconciled { log_level: record.log_level, subscriptions: record.subscriptions });
                    }
                    Ok(())
                }
                Ok(_) => Ok(()),
                Err(error) => Err(error),
            };
            if let Err(error) = outcome {
                this.failed(&error);
            }
        });
    }

    /// `logging/setLevel` in a session: recorded, and every instance's copy told.
    pub(crate) async fn set_level(&self, session: &str, level: LogLevel) -> Result<(), Unreachable> {
        let name = level_name(level);
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(record_key(session)).arg("level").arg(&name).ignore();
        self.record_and_tell(pipe, self.bus_message("level", session, json!({"level": name}))).await
    }

    /// `resources/(un)subscribe` in a session: recorded, and every instance's copy told.
    pub(crate) async fn subscription(&self, session: &str, change: &Subscription) -> Result<(), Unreachable> {
        let (uri, on) = match change {
            Subscription::Subscribe(uri) => (uri, true),
            Subscription::Unsubscribe(uri) => (uri, false),
        };
        let mut pipe = redis::pipe();
        if on {
            pipe.cmd("HSET").arg(record_key(session)).arg(format!("sub:{uri}")).arg("1").ignore();
        } else {
            pipe.cmd("HDEL").arg(record_key(session)).arg(format!("sub:{uri}")).ignore();
        }
        self.record_and_tell(pipe, self.bus_message("sub", session, json!({"uri": uri, "on": on}))).await
    }

    /// Runs `pipe` (a change of a session's record) with the bus `message` telling every
    /// instance's copy, in one round trip.
    async fn record_and_tell(&self, mut pipe: redis::Pipeline, message: Value) -> Result<(), Unreachable> {
        pipe.cmd("PUBLISH")
            .arg(BUS)
            .arg(message.to_string())
            .ignore()
            .query_async::<()>(&mut self.connection.clone())
            .await
            .map_err(|e| self.failed(&e))
    }

    /// A bus message of kind `kind` from this instance about `session`, with `fields`.
    fn bus_message(&self, kind: &str, session: &str, fields: Value) -> Value {
        let mut message = self.instance_message(kind, fields);
        message["s"] = Value::from(session);
        message
    }

    /// A bus message of kind `kind` from this instance, with `fields` (every message carries
    /// its kind `k` and origin `o`).
    fn instance_message(&self, kind: &str, fields: Value) -> Value {
        let mut message = json!({"k": kind, "o": &*self.instance});
        if let (Some(message), Value::Object(fields)) = (message.as_object_mut(), fields) {
            message.extend(fields);
        }
        message
    }

    /// DELETE: the record goes and every instance ends its copy. Answers whether the record
    /// was there.
    pub(crate) async fn delete(&self, session: &str, idle: Duration) -> Result<bool, Unreachable> {
        if !plausible_id(session) {
            return Ok(false);
        }
        let message = self.bus_message("end", session, json!({}));
        let (deleted,): (i64,) = redis::pipe()
            .cmd("DEL")
            .arg(record_key(session))
            .cmd("SET")
            .arg(ended_key(session))
            .arg("1")
            .arg("PX")
            .arg(millis(idle))
            .ignore()
            .cmd("PUBLISH")
            .arg(BUS)
            .arg(message.to_string())
            .ignore()
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|e| self.failed(&e))?;
        Ok(deleted > 0)
    }

    /// The client's answer to a request this instance does not wait for: the instance that
    /// does resolves it (not awaited).
    pub(crate) fn forward_answer(
        self: &Arc<Self>,
        session: &str,
        id: &RequestId,
        outcome: &Result<Value, ErrorObject>,
    ) {
        let mut message = self.bus_message("answer", session, json!({"id": id}));
        match outcome {
            Ok(result) => message["result"] = result.clone(),
            Err(error) => message["error"] = json!(error),
        }
        self.publish(message.to_string());
    }

    /// The client cancelled a request of the session: every other instance holding the session
    /// cancels it if it runs there (not awaited).
    pub(crate) fn forward_cancel(self: &Arc<Self>, session: &str, id: &RequestId) {
        self.publish(self.bus_message("cancel", session, json!({"id": id})).to_string());
    }

    fn publish(self: &Arc<Self>, message: String) {
        let this = self.clone();
        actix_rt::spawn(async move {
            let published =
                redis::cmd("PUBLISH").arg(BUS).arg(message).query_async::<i64>(&mut this.connection.clone()).await;
            if let Err(error) = published {
                this.failed(&error);
            }
        });
    }

    /// Records a stream's owner and request (not awaited).
    pub(crate) fn open_stream(&self, writer: &EventWriter, stream: u64, request: Option<&RequestId>) {
        let request = request.map(|id| serde_json::to_string(id).unwrap_or_default()).unwrap_or_default();
        writer.send(Write::Open { stream, request });
    }

    /// A session's event writer (one task, in order).
    pub(crate) fn writer(self: &Arc<Self>, session: &str, idle: Duration) -> EventWriter {
        let (tx, rx) = mpsc::channel(WRITER_QUEUE);
        actix_rt::spawn(write_events(self.clone(), Arc::from(session), idle, rx));
        EventWriter { tx, health: self.health.clone() }
    }

    /// A catalog change here: published for the other instances (unless it came from there).
    fn announce_local(self: &Arc<Self>, event: &CatalogEvent) {
        if FROM_BUS.with(Cell::get) {
            return;
        }
        self.recent.seen(&self.instance, event);
        let message = self.instance_message("catalog", json!({"e": event_json(event)}));
        self.publish(message.to_string());
    }

    /// One message from the bus.
    fn heard(&self, payload: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(payload) else {
            log::debug!("cluster: unreadable bus message ignored");
            return;
        };
        if message["o"].as_str() == Some(&*self.instance) {
            return;
        }
        if message["k"] == "catalog" {
            if let (Some(event), Some(origin)) = (event_from_json(&message["e"]), message["o"].as_str()) {
                if !self.recent.seen(origin, &event) {
                    FROM_BUS.with(|f| f.set(true));
                    self.catalog.announce(&event);
                    FROM_BUS.with(|f| f.set(false));
                }
            }
            return;
        }
        if message["k"] == "task" {
            if let (Some(tasks), Ok(task)) = (&self.tasks, serde_json::from_value(message["t"].clone())) {
                tasks.publish_remote(task);
            }
            return;
        }
        let Some(registry) = self.registry.upgrade() else { return };
        let Some(handle) = message["s"].as_str().and_then(|s| registry.get(s)) else { return };
        match message["k"].as_str() {
            Some("answer") => {
                let Ok(id) = serde_json::from_value::<RequestId>(message["id"].clone()) else { return };
                let outcome = match message.get("error") {
                    Some(error) => Err(serde_json::from_value(error.clone())
                        .unwrap_or_else(|_| ErrorObject::new(ErrorCode::INTERNAL_ERROR, "unreadable error"))),
                    None => Ok(message["result"].clone()),
                };
                handle.shared.resolve(&id, outcome);
            }
            Some("cancel") => {
                if let Ok(id) = serde_json::from_value::<RequestId>(message["id"].clone()) {
                    handle.executor.do_send(Cancel { id });
                }
            }
            Some("end") => {
                registry.remove(handle.shared.id());
                handle.session.do_send(Stop { reason: EndReason::Deleted });
            }
            Some("level") => {
                if let Some(level) = message["level"].as_str().and_then(LogLevel::parse) {
                    handle.shared.set_log_level(level);
                }
            }
            Some("sub") => {
                let Some(uri) = message["uri"].as_str() else { return };
                let change = if message["on"] == true {
                    Subscription::Subscribe(uri.to_owned())
                } else {
                    Subscription::Unsubscribe(uri.to_owned())
                };
                handle.session.do_send(ChangeSubscription(change));
            }
            _ => {}
        }
    }

    /// `GET` + `Last-Event-ID` of a stream this instance does not hold: replays it from Redis
    /// after `after`, then follows it until its last event (or, for a standalone stream, hands
    /// `sender` back to be attached to this instance's standalone stream). `Ok(None)` when the
    /// stream is done (or followed); `Err(())` when Redis knows no such stream.
    pub(crate) async fn resume(
        self: &Arc<Self>,
        session: &str,
        stream: u64,
        after: u64,
        sender: EventSender,
    ) -> Result<Option<EventSender>, ResumeRemote> {
        let events = events_key(session, stream);
        let meta = stream_key(session, stream);
        let mut tries = 0;
        let (owner, request, entries) = loop {
            let read: (Option<String>, Option<String>, Vec<Entry>) = redis::pipe()
                .cmd("HGET")
                .arg(&meta)
                .arg("owner")
                .cmd("HGET")
                .arg(&meta)
                .arg("request")
                .cmd("XRANGE")
                .arg(&events)
                .arg("-")
                .arg("+")
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|e| ResumeRemote::Unreachable(self.failed(&e)))?;
            match read {
                (Some(owner), request, entries) => break (owner, request, entries),
                // Another instance's stream whose record its writer has not written yet (the
                // client reconnected within milliseconds of the priming event): wait a little.
                _ if tries < UNKNOWN_STREAM_TRIES && stream >> TAG_SHIFT != self.tag => {
                    tries += 1;
                    actix_rt::time::sleep(TAIL_POLL).await;
                }
                _ => return Err(ResumeRemote::Unknown),
            }
        };
        sender.push(sse::priming(&format!("{stream}:{after}"), SSE_RETRY));
        let mut cursor = Cursor { seq: after, entry: None };
        if deliver(&sender, stream, &entries, Some(after), &mut cursor) {
            return Ok(None);
        }
        if stream & ((1 << TAG_SHIFT) - 1) == 0 {
            // Another instance's standalone stream: what it sent is replayed; from now on this
            // instance's own standalone stream carries the session's notifications.
            return Ok(Some(sender));
        }
        let request = request.and_then(|r| serde_json::from_str::<RequestId>(&r).ok());
        let this = self.clone();
        actix_rt::spawn(async move { this.follow(events, owner, request, stream, cursor, sender).await });
        Ok(None)
    }

    /// Follows another instance's stream until its last event, the client going away, or the
    /// owner dying (the request then ends with an error event).
    async fn follow(
        self: Arc<Self>,
        events: String,
        owner: String,
        request: Option<RequestId>,
        stream: u64,
        mut cursor: Cursor,
        sender: EventSender,
    ) {
        let mut quiet = Duration::ZERO;
        let mut last_ping = Instant::now();
        loop {
            tokio::select! {
                () = actix_rt::time::sleep(TAIL_POLL) => {}
                () = sender.closed() => return,
            }
            let read: redis::RedisResult<(Vec<Entry>, i64)> = redis::pipe()
                .cmd("XRANGE")
                .arg(&events)
                .arg(cursor.next_range())
                .arg("+")
                .cmd("EXISTS")
                .arg(heartbeat_key(&owner))
                .query_async(&mut self.connection.clone())
                .await;
            let (entries, owner_alive) = match read {
                Ok(read) => read,
                Err(error) => {
                    self.failed(&error);
                    continue;
                }
            };
            let read_any = !entries.is_empty();
            if deliver(&sender, stream, &entries, None, &mut cursor) {
                return;
            }
            if !read_any {
                quiet += TAIL_POLL;
            } else {
                quiet = Duration::ZERO;
            }
            if owner_alive == 0 && quiet >= TAIL_POLL * 5 {
                if let Some(id) = &request {
                    let error: Result<Value, _> = Err(mcpd::ProtocolError::Internal(
                        "the instance serving this request stopped before answering it".into(),
                    ));
                    let message = mcpd::server::encode_answer(id, mcpd::version::Era::Stateful, &error);
                    sender.push(sse::message(Some(&format!("{stream}:{}", cursor.seq + 1)), &message));
                }
                log::info!("cluster: stream {stream} of instance {owner}, which stopped, ended with an error");
                return;
            }
            if last_ping.elapsed() >= sse::KEEP_ALIVE_INTERVAL {
                last_ping = Instant::now();
                if !sender.push(sse::keep_alive()) {
                    return;
                }
            }
        }
    }
}

/// The catalog changes seen within [`DEDUP`], with their origin (bounded: 1024).
#[derive(Debug, Default)]
struct Recent(Mutex<VecDeque<(Instant, Arc<str>, CatalogEvent)>>);

impl Recent {
    /// Whether `event` was seen within [`DEDUP`] from another origin than `origin` (this
    /// instance, or another that saw the same change itself); remembers it. A change that only
    /// one origin reports is never dropped, however often it repeats.
    fn seen(&self, origin: &str, event: &CatalogEvent) -> bool {
        let now = Instant::now();
        let mut recent = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        while recent.front().is_some_and(|(at, _, _)| now.duration_since(*at) > DEDUP) {
            recent.pop_front();
        }
        let seen = recent.iter().any(|(_, o, e)| e == event && &**o != origin);
        if recent.len() < 1024 {
            recent.push_back((now, Arc::from(origin), event.clone()));
        }
        seen
    }
}

/// Why a stream could not be resumed from Redis.
#[derive(Debug)]
pub(crate) enum ResumeRemote {
    /// Redis knows no such stream.
    Unknown,
    /// Redis did not answer.
    Unreachable(Unreachable),
}

/// One stream entry as XRANGE answers it: (id, [field, value, …]).
type Entry = (String, Vec<(String, Vec<u8>)>);

/// Where a reader of a Redis event stream is: the last event's sequence number (its SSE id's)
/// and the last entry's Redis id (where the next read starts).
#[derive(Debug, Default)]
struct Cursor {
    seq: u64,
    entry: Option<String>,
}

impl Cursor {
    /// The start of the next `XRANGE`: after the last entry read, or the beginning.
    fn next_range(&self) -> String {
        self.entry.as_ref().map_or_else(|| "-".to_owned(), |id| format!("({id}"))
    }
}

/// Sends `entries` as events of `stream` — on a first read only those after sequence `after`
/// (every entry carries its sequence number: entries are appended with Redis's own ids, so a
/// stream numbered again never collides with an old one); answers whether the last one was
/// the stream's final event (or the reader is gone).
fn deliver(sender: &EventSender, stream: u64, entries: &[Entry], after: Option<u64>, cursor: &mut Cursor) -> bool {
    for (id, fields) in entries {
        cursor.entry = Some(id.clone());
        let mut message: &[u8] = &[];
        let mut seq = None;
        let mut last = false;
        for (field, value) in fields {
            match field.as_str() {
                "m" => message = value,
                "s" => seq = std::str::from_utf8(value).ok().and_then(|s| s.parse::<u64>().ok()),
                "l" => last = true,
                _ => {}
            }
        }
        let Some(seq) = seq else { continue };
        if after.is_some_and(|after| seq <= after) {
            continue;
        }
        cursor.seq = seq;
        if !sender.push_replayed(sse::message(Some(&format!("{stream}:{seq}")), message)) {
            return true;
        }
        if last {
            return true;
        }
    }
    false
}

/// What a session's writer writes.
#[derive(Debug)]
enum Write {
    Open { stream: u64, request: String },
    Event { stream: u64, seq: u64, message: Vec<u8>, last: bool },
}

/// A session's event writer: events are written in the order sent, pipelined.
#[derive(Debug, Clone)]
pub(crate) struct EventWriter {
    tx: mpsc::Sender<Write>,
    health: Arc<Health>,
}

impl EventWriter {
    /// Queues one event of `stream` (dropped and counted as an error when the writer is
    /// [`WRITER_QUEUE`] behind: the local replay buffer still has it).
    pub(crate) fn event(&self, stream: u64, seq: u64, message: &[u8], last: bool) {
        self.send(Write::Event { stream, seq, message: message.to_vec(), last });
    }

    fn send(&self, write: Write) {
        if self.tx.try_send(write).is_err() {
            self.health.errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

async fn write_events(shared: Arc<SharedSessions>, session: Arc<str>, idle: Duration, mut rx: mpsc::Receiver<Write>) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, 64).await > 0 {
        let mut pipe = redis::pipe();
        for write in batch.drain(..) {
            match write {
                Write::Open { stream, request } => {
                    let key = stream_key(&session, stream);
                    pipe.cmd("HSET")
                        .arg(&key)
                        .arg("owner")
                        .arg(&*shared.instance)
                        .arg("request")
                        .arg(request)
                        .ignore()
                        .cmd("PEXPIRE")
                        .arg(&key)
                        .arg(millis(idle))
                        .ignore();
                }
                Write::Event { stream, seq, message, last } => {
                    let key = events_key(&session, stream);
                    pipe.cmd("XADD")
                        .arg(&key)
                        .arg("MAXLEN")
                        .arg("~")
                        .arg(REPLAY_CAPACITY)
                        .arg("*")
                        .arg("s")
                        .arg(seq)
                        .arg("m")
                        .arg(message);
                    if last {
                        pipe.arg("l").arg("1");
                    }
                    pipe.ignore().cmd("PEXPIRE").arg(&key).arg(millis(idle)).ignore();
                    pipe.cmd("PEXPIRE").arg(stream_key(&session, stream)).arg(millis(idle)).ignore();
                }
            }
        }
        if let Err(error) = pipe.query_async::<()>(&mut shared.connection.clone()).await {
            shared.failed(&error);
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn level_name(level: LogLevel) -> String {
    serde_json::to_value(level).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn event_json(event: &CatalogEvent) -> Value {
    match event {
        CatalogEvent::ToolsChanged => json!({"kind": "tools"}),
        CatalogEvent::PromptsChanged => json!({"kind": "prompts"}),
        CatalogEvent::ResourcesChanged => json!({"kind": "resources"}),
        CatalogEvent::ResourceUpdated(uri) => json!({"kind": "updated", "uri": uri}),
    }
}

fn event_from_json(value: &Value) -> Option<CatalogEvent> {
    Some(match value["kind"].as_str()? {
        "tools" => CatalogEvent::ToolsChanged,
        "prompts" => CatalogEvent::PromptsChanged,
        "resources" => CatalogEvent::ResourcesChanged,
        "updated" => CatalogEvent::ResourceUpdated(value["uri"].as_str()?.to_owned()),
        _ => return None,
    })
}

/// Starts the bus: publishes this instance's catalog changes and listens for the others'
/// messages, resubscribing by itself.
pub(super) fn start_bus(shared: &Arc<SharedSessions>, client: redis::Client) {
    let publisher = Arc::downgrade(shared);
    shared.catalog.listen(move |event| {
        if let Some(shared) = publisher.upgrade() {
            shared.announce_local(event);
        }
    });
    if let Some(tasks) = &shared.tasks {
        let publisher = Arc::downgrade(shared);
        tasks.set_relay(Box::new(move |task| {
            if let Some(shared) = publisher.upgrade() {
                let message = shared.instance_message("task", json!({"t": task}));
                shared.publish(message.to_string());
            }
        }));
    }
    let shared = shared.clone();
    actix_rt::spawn(async move {
        loop {
            match client.get_async_pubsub().await {
                Ok(mut pubsub) => match pubsub.subscribe(BUS).await {
                    Ok(()) => {
                        log::debug!("cluster: listening on {BUS}");
                        // What was published while the bus was down is lost: every copy held
                        // here checks its record (deleted elsewhere? lost by Redis?).
                        if let Some(registry) = shared.registry.upgrade() {
                            for handle in registry.handles() {
                                handle.session.do_send(Reconcile);
                            }
                        }
                        let mut messages = pubsub.on_message();
                        while let Some(message) = messages.next().await {
                            shared.heard(message.get_payload_bytes());
                        }
                        log::warn!("cluster: the bus subscription ended; subscribing again");
                    }
                    Err(error) => {
                        shared.failed(&error);
                    }
                },
                Err(error) => {
                    shared.failed(&error);
                }
            }
            actix_rt::time::sleep(RETRY).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_events_cross_the_bus_unchanged() {
        for event in [
            CatalogEvent::ToolsChanged,
            CatalogEvent::PromptsChanged,
            CatalogEvent::ResourcesChanged,
            CatalogEvent::ResourceUpdated("file:///a b".into()),
        ] {
            assert_eq!(event_from_json(&event_json(&event)), Some(event));
        }
        assert_eq!(event_from_json(&json!({"kind": "other"})), None);
    }

    #[test]
    fn a_change_two_instances_saw_is_announced_once_but_one_origin_may_repeat_it() {
        let recent = Recent::default();
        let tools = CatalogEvent::ToolsChanged;
        assert!(!recent.seen("a", &tools), "first sight");
        assert!(!recent.seen("a", &tools), "a again: a new change");
        assert!(recent.seen("b", &tools), "b saw what a saw (a shared file): dropped");
        assert!(!recent.seen("b", &CatalogEvent::PromptsChanged), "another change");
    }

    fn entry(id: &str, seq: u64, message: &str, last: bool) -> Entry {
        let mut fields = vec![("s".to_owned(), seq.to_string().into_bytes()), ("m".to_owned(), message.into())];
        if last {
            fields.push(("l".to_owned(), b"1".to_vec()));
        }
        (id.to_owned(), fields)
    }

    #[test]
    fn a_replay_sends_what_follows_the_last_event_id_and_stops_at_the_answer() {
        let (tx, mut rx) = crate::queue::events(
            crate::queue::QueueLimits { max_messages: 16, max_bytes: 1 << 16 },
            "test".into(),
            Arc::new(crate::counts::EdgeCounters::default()),
        );
        let entries = [entry("5-0", 1, "one", false), entry("5-1", 2, "two", false), entry("6-0", 3, "three", false)];
        let mut cursor = Cursor::default();
        assert!(!deliver(&tx, 9, &entries, Some(1), &mut cursor), "not finished");
        assert_eq!((cursor.seq, cursor.next_range()), (3, "(6-0".to_owned()));
        let sent: Vec<String> =
            std::iter::from_fn(|| rx.try_recv()).map(|b| String::from_utf8(b.to_vec()).unwrap()).collect();
        assert_eq!(sent, ["id: 9:2\nevent: message\ndata: two\n\n", "id: 9:3\nevent: message\ndata: three\n\n"]);
        // Followed: every new entry is new, the answer ends the stream.
        let more = [entry("7-0", 4, "answer", true), entry("8-0", 5, "never", false)];
        assert!(deliver(&tx, 9, &more, None, &mut cursor), "the answer ends it");
        assert_eq!(rx.try_recv().map(|b| b.to_vec()), Some(b"id: 9:4\nevent: message\ndata: answer\n\n".to_vec()));
        assert!(rx.try_recv().is_none(), "nothing after the answer");
    }

    #[test]
    fn only_plausible_session_ids_are_looked_up() {
        assert!(plausible_id("0123456789abcdef0123456789abcdef"));
        assert!(!plausible_id(""));
        assert!(!plausible_id("a:b"));
        assert!(!plausible_id("*"));
        assert!(!plausible_id(&"a".repeat(65)));
    }
}
