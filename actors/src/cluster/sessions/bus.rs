//! The bus: the pub/sub channel [`BUS`] every instance listens on, and the one message type that
//! crosses it ([`BusMessage`], a tagged enum serialized in one place, [`encode`], and matched
//! exhaustively where it is heard), each message posted with its origin instance.
//!
//! It carries the client's answer to a server-to-client request that reached another instance
//! (the waiting instance resolves it), a cancellation (the instance running the request aborts
//! it), a session's DELETE, log level and subscription changes (each handed to this instance's
//! copy of the session through the registry, `LocalSessions::tell`), task status changes (for
//! every instance's `subscriptions/listen` streams following the task), and catalog changes
//! (`list_changed`, `resources/updated`: re-announced on every other instance to its sessions,
//! stdio clients and `subscriptions/listen` streams).
//!
//! Catalog changes pass one window ([`Recent`]). A change heard from one origin within [`DEDUP`]
//! of the same change seen from another is dropped: every instance watching the same files sees
//! the same change. A change heard and re-announced here also reaches this instance's own
//! catalog listener, the one that publishes local changes; so the window marks it as relayed
//! before it is announced, and the publisher, finding the mark, takes it rather than publishing
//! the change again.
//!
//! The bus is fire-and-forget: what is published while an instance's subscription is down is
//! lost to it. It subscribes again by itself every [`RETRY`], and then every copy of a session it
//! holds checks its record (`LocalSessions::reconcile_all`).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use mcpd::catalog::{CatalogEvent, LiveCatalog};
use mcpd::context::LogLevel;
use mcpd::jsonrpc::{ErrorObject, RequestId};
use mcpd::server::Subscription;
use mcpd::tasks::DetailedTask;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::link::RedisLink;
use crate::cluster::health::RETRY;
use crate::session::store::CopyNews;
use crate::session::store::LocalSessions;
use crate::tasks::Tasks;

/// The pub/sub channel every instance listens on.
pub(crate) const BUS: &str = "mcpd:bus";
/// A catalog change seen again within this time (from the bus or locally) is not announced twice.
pub(crate) const DEDUP: Duration = Duration::from_secs(1);
/// The most catalog changes the window remembers.
const RECENT_MAX: usize = 1024;

/// One message of the bus (posted with its origin, [`encode`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "lowercase")]
pub(super) enum BusMessage {
    /// The client's answer to a server-to-client request that another instance awaits.
    Answer {
        /// The session.
        session: String,
        /// The request answered.
        id: RequestId,
        /// The client's result or error.
        outcome: Result<Value, ErrorObject>,
    },
    /// The client cancelled a request of the session.
    Cancel {
        /// The session.
        session: String,
        /// The request cancelled.
        id: RequestId,
    },
    /// The session was deleted.
    End {
        /// The session.
        session: String,
    },
    /// `logging/setLevel` in the session.
    Level {
        /// The session.
        session: String,
        /// The level set.
        level: LogLevel,
    },
    /// `resources/subscribe` (`on`) or `resources/unsubscribe` in the session.
    Sub {
        /// The session.
        session: String,
        /// The resource.
        uri: String,
        /// Subscribed (or unsubscribed).
        on: bool,
    },
    /// A task's status changed.
    Task {
        /// The task as it is now (boxed: the largest message by far).
        task: Box<DetailedTask>,
    },
    /// The catalog changed.
    Catalog {
        /// What changed.
        event: CatalogChange,
    },
}

/// A catalog change as the bus carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(super) enum CatalogChange {
    /// The tool list changed.
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource or template list changed.
    Resources,
    /// One resource's contents changed.
    Updated {
        /// The resource.
        uri: String,
    },
}

impl From<&CatalogEvent> for CatalogChange {
    fn from(event: &CatalogEvent) -> Self {
        match event {
            CatalogEvent::ToolsChanged => CatalogChange::Tools,
            CatalogEvent::PromptsChanged => CatalogChange::Prompts,
            CatalogEvent::ResourcesChanged => CatalogChange::Resources,
            CatalogEvent::ResourceUpdated(uri) => CatalogChange::Updated { uri: uri.clone() },
        }
    }
}

impl From<CatalogChange> for CatalogEvent {
    fn from(change: CatalogChange) -> Self {
        match change {
            CatalogChange::Tools => CatalogEvent::ToolsChanged,
            CatalogChange::Prompts => CatalogEvent::PromptsChanged,
            CatalogChange::Resources => CatalogEvent::ResourcesChanged,
            CatalogChange::Updated { uri } => CatalogEvent::ResourceUpdated(uri),
        }
    }
}

/// A message as it crosses the bus: with the instance that posted it.
#[derive(Debug, Serialize, Deserialize)]
struct Posted {
    /// The instance that posted it (an instance ignores its own).
    origin: Arc<str>,
    /// The message.
    message: BusMessage,
}

/// `message` of instance `origin`, as it is published.
pub(super) fn encode(origin: &Arc<str>, message: BusMessage) -> String {
    serde_json::to_string(&Posted { origin: origin.clone(), message }).unwrap_or_default()
}

/// The catalog changes seen within [`DEDUP`], with their origin (at most [`RECENT_MAX`]), and
/// those heard on the bus that are being announced here now.
#[derive(Debug, Default)]
struct Recent(Mutex<Window>);

#[derive(Debug, Default)]
struct Window {
    seen: VecDeque<(Instant, Arc<str>, CatalogEvent)>,
    relaying: Vec<CatalogEvent>,
}

impl Window {
    /// Whether `event` was seen within [`DEDUP`] from another origin than `origin`; remembers it
    /// (unless [`RECENT_MAX`] changes are remembered already).
    fn seen(&mut self, origin: &str, event: &CatalogEvent) -> bool {
        let now = Instant::now();
        while self.seen.front().is_some_and(|(at, _, _)| now.duration_since(*at) > DEDUP) {
            self.seen.pop_front();
        }
        let seen = self.seen.iter().any(|(_, o, e)| e == event && &**o != origin);
        if self.seen.len() < RECENT_MAX {
            self.seen.push_back((now, Arc::from(origin), event.clone()));
        }
        seen
    }
}

impl Recent {
    fn window(&self) -> MutexGuard<'_, Window> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A change heard on the bus from `origin`: whether to announce it here — not when it was
    /// seen within [`DEDUP`] from another origin (this instance, or another that saw the same
    /// change itself); a change that only one origin reports is never dropped, however often it
    /// repeats. Remembered either way; when announced, marked as relayed for the local publisher
    /// ([`Recent::local`]) until [`Recent::settled`].
    fn heard(&self, origin: &str, event: &CatalogEvent) -> bool {
        let mut window = self.window();
        if window.seen(origin, event) {
            return false;
        }
        window.relaying.push(event.clone());
        true
    }

    /// A change announced by this instance's catalog: whether to publish it. Not when it is the
    /// relay of a change heard on the bus (its mark is taken); otherwise it is remembered as
    /// `instance`'s own.
    fn local(&self, instance: &str, event: &CatalogEvent) -> bool {
        let mut window = self.window();
        if let Some(at) = window.relaying.iter().position(|relayed| relayed == event) {
            window.relaying.swap_remove(at);
            return false;
        }
        window.seen(instance, event);
        true
    }

    /// The announcement of a change heard is over: its mark goes, if no publisher took it.
    fn settled(&self, event: &CatalogEvent) {
        let mut window = self.window();
        if let Some(at) = window.relaying.iter().position(|relayed| relayed == event) {
            window.relaying.swap_remove(at);
        }
    }
}

/// This instance's end of the bus: it publishes, and hands what it hears to the catalog, the
/// tasks and the session copies held here.
pub(super) struct Bus {
    link: RedisLink,
    catalog: Arc<LiveCatalog>,
    registry: Weak<dyn LocalSessions>,
    tasks: Option<Tasks>,
    recent: Recent,
}

impl fmt::Debug for Bus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bus").field("link", &self.link).finish_non_exhaustive()
    }
}

impl Bus {
    /// The bus of the instance `link` names, for `catalog`, the sessions of `registry` and the
    /// `tasks`. Listens to nothing until [`Bus::start`].
    pub(super) fn new(
        link: RedisLink,
        catalog: Arc<LiveCatalog>,
        registry: Weak<dyn LocalSessions>,
        tasks: Option<Tasks>,
    ) -> Self {
        Bus { link, catalog, registry, tasks, recent: Recent::default() }
    }

    /// Starts the bus: publishes this instance's catalog and task changes and listens for the
    /// other instances' messages, subscribing again by itself.
    pub(super) fn start(self: &Arc<Self>, client: redis::Client) {
        let publisher = Arc::downgrade(self);
        self.catalog.listen(move |event| {
            if let Some(bus) = publisher.upgrade() {
                bus.announce_local(event);
            }
        });
        if let Some(tasks) = &self.tasks {
            let publisher = Arc::downgrade(self);
            tasks.set_relay(Box::new(move |task| {
                if let Some(bus) = publisher.upgrade() {
                    bus.publish(BusMessage::Task { task: Box::new(task.clone()) });
                }
            }));
        }
        actix_rt::spawn(self.clone().listen(client));
    }

    /// Publishes `message` (not awaited; a failure is counted).
    pub(super) fn publish(&self, message: BusMessage) {
        let posted = encode(&self.link.instance, message);
        let link = self.link.clone();
        actix_rt::spawn(async move {
            let published = redis::cmd("PUBLISH").arg(BUS).arg(posted).query_async::<i64>(&mut link.connection()).await;
            if let Err(error) = published {
                link.failed(&error);
            }
        });
    }

    /// The subscription, made again every [`RETRY`] when it fails or ends, forever.
    async fn listen(self: Arc<Self>, client: redis::Client) {
        loop {
            match client.get_async_pubsub().await {
                Ok(mut pubsub) => match pubsub.subscribe(BUS).await {
                    Ok(()) => {
                        log::debug!("cluster: listening on {BUS}");
                        // What was published while the bus was down is lost: every copy held
                        // here checks its record (deleted elsewhere? lost by Redis?).
                        if let Some(registry) = self.registry.upgrade() {
                            registry.reconcile_all();
                        }
                        let mut messages = pubsub.on_message();
                        while let Some(message) = messages.next().await {
                            self.heard(message.get_payload_bytes());
                        }
                        log::warn!("cluster: the bus subscription ended; subscribing again");
                    }
                    Err(error) => {
                        self.link.failed(&error);
                    }
                },
                Err(error) => {
                    self.link.failed(&error);
                }
            }
            actix_rt::time::sleep(RETRY).await;
        }
    }

    /// A catalog change here: published for the other instances, unless it is the relay of one
    /// heard from them.
    fn announce_local(&self, event: &CatalogEvent) {
        if self.recent.local(&self.link.instance, event) {
            self.publish(BusMessage::Catalog { event: event.into() });
        }
    }

    /// One message from the bus.
    fn heard(&self, payload: &[u8]) {
        let Ok(posted) = serde_json::from_slice::<Posted>(payload) else {
            log::debug!("cluster: unreadable bus message ignored");
            return;
        };
        if posted.origin == self.link.instance {
            return;
        }
        let (session, news) = match posted.message {
            BusMessage::Catalog { event } => {
                self.relay(&posted.origin, &event.into());
                return;
            }
            BusMessage::Task { task } => {
                if let Some(tasks) = &self.tasks {
                    tasks.publish_remote(*task);
                }
                return;
            }
            BusMessage::Answer { session, id, outcome } => (session, CopyNews::Answer { id, outcome }),
            BusMessage::Cancel { session, id } => (session, CopyNews::Cancel(id)),
            BusMessage::End { session } => (session, CopyNews::End),
            BusMessage::Level { session, level } => (session, CopyNews::Level(level)),
            BusMessage::Sub { session, uri, on } => {
                let change = if on { Subscription::Subscribe(uri) } else { Subscription::Unsubscribe(uri) };
                (session, CopyNews::Subscription(change))
            }
        };
        if let Some(registry) = self.registry.upgrade() {
            registry.tell(&session, news);
        }
    }

    /// A catalog change another instance saw, announced here unless [`DEDUP`] drops it.
    fn relay(&self, origin: &str, event: &CatalogEvent) {
        if self.recent.heard(origin, event) {
            self.catalog.announce(event);
            self.recent.settled(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crossed(message: BusMessage) -> BusMessage {
        let origin: Arc<str> = Arc::from("a");
        let posted: Posted = serde_json::from_str(&encode(&origin, message)).unwrap();
        assert_eq!(&*posted.origin, "a");
        posted.message
    }

    #[test]
    fn catalog_events_cross_the_bus_unchanged() {
        for event in [
            CatalogEvent::ToolsChanged,
            CatalogEvent::PromptsChanged,
            CatalogEvent::ResourcesChanged,
            CatalogEvent::ResourceUpdated("file:///a b".into()),
        ] {
            let BusMessage::Catalog { event: change } = crossed(BusMessage::Catalog { event: (&event).into() }) else {
                panic!("a catalog message");
            };
            assert_eq!(CatalogEvent::from(change), event);
        }
        let unknown = r#"{"origin": "a", "message": {"k": "catalog", "event": {"kind": "other"}}}"#;
        assert!(serde_json::from_str::<Posted>(unknown).is_err());
    }

    #[test]
    fn session_and_task_messages_cross_the_bus_unchanged() {
        let error = ErrorObject::new(mcpd::jsonrpc::ErrorCode::INVALID_PARAMS, "no");
        let session = "0123456789abcdef".to_owned();
        let task = serde_json::json!({
            "taskId": "t1", "status": "completed", "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": null, "pollIntervalMs": 500,
            "result": {"content": [], "big": 9_007_199_254_740_991_u64},
        });
        for message in [
            BusMessage::Answer {
                session: session.clone(),
                id: RequestId::Number(1 << 40),
                outcome: Ok(serde_json::json!({"action": "accept", "n": null})),
            },
            BusMessage::Answer { session: session.clone(), id: RequestId::String("x".into()), outcome: Err(error) },
            BusMessage::Cancel { session: session.clone(), id: RequestId::Number(7) },
            BusMessage::End { session: session.clone() },
            BusMessage::Level { session: session.clone(), level: LogLevel::Warning },
            BusMessage::Sub { session, uri: "file:///a".into(), on: false },
            BusMessage::Task { task: Box::new(serde_json::from_value(task).unwrap()) },
        ] {
            assert_eq!(crossed(message.clone()), message);
        }
    }

    #[test]
    fn a_change_two_instances_saw_is_announced_once_but_one_origin_may_repeat_it() {
        let recent = Recent::default();
        let tools = CatalogEvent::ToolsChanged;
        let heard = |origin: &str, event: &CatalogEvent| {
            let announced = recent.heard(origin, event);
            recent.settled(event);
            announced
        };
        assert!(heard("a", &tools), "first sight");
        assert!(heard("a", &tools), "a again: a new change");
        assert!(!heard("b", &tools), "b saw what a saw (a shared file): dropped");
        assert!(heard("b", &CatalogEvent::PromptsChanged), "another change");
    }

    #[test]
    fn a_change_heard_and_announced_here_is_not_published_again() {
        let recent = Recent::default();
        let tools = CatalogEvent::ToolsChanged;
        assert!(recent.heard("b", &tools), "heard from b: announced here");
        assert!(!recent.local("me", &tools), "the announcement reaches the publisher: not published");
        recent.settled(&tools);
        assert!(recent.local("me", &tools), "a change here afterwards is published");
        assert!(!recent.heard("c", &tools), "and c's report of it is dropped (me saw it)");
        recent.settled(&tools);
        assert!(recent.local("me", &tools), "nothing left marked");
        let prompts = CatalogEvent::PromptsChanged;
        assert!(recent.heard("b", &prompts));
        recent.settled(&prompts);
        assert!(recent.local("me", &prompts), "a mark no publisher took goes when the announcement is over");
    }
}
