//! `Mcpd`: the library API over the actor tree — start, stop, sync with persisted settings,
//! status and close — for embedding mcpd in another program or a test.

use std::sync::{Arc, OnceLock};

use actix::{Actor, Addr, MailboxError};
use derive_more::{Display, Error, From};
use mcpd::McpServer;

use crate::cluster::sessions::SharedSessions;
use crate::config::ListenerConfig;
use crate::counts::ActorCounts;
use crate::listener::{Listener, ListenerStatusQuery, StartError, StartListener, StopServing, SyncWithSettings};
use crate::metrics::Metrics;
use crate::session::{CatalogChanged, SessionRegistry};
use crate::status::ListenerStatus;
use crate::supervisor::{StopSupervisor, Supervisor};
use crate::tasks::Tasks;

/// A failure of the runtime API.
#[derive(Debug, Display, Error, From)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The listener could not start (or persist its settings).
    #[display("{_0}")]
    Start(StartError),
    /// An actor is gone (after `close`).
    #[display("actor unavailable: {_0}")]
    Mailbox(MailboxError),
}

/// A running mcpd: a supervisor and a listener. Create it inside an actix system
/// (`#[actix_web::main]`, `#[actix_rt::test]`, …).
#[derive(Debug, Clone)]
pub struct Mcpd {
    supervisor: Addr<Supervisor>,
    listener: Addr<Listener>,
    counts: Arc<ActorCounts>,
    metrics: Arc<Metrics>,
    sessions: Arc<SessionRegistry>,
    /// Cluster mode: the shared sessions, for the HTTP edge (the registry holds them as its
    /// session store).
    cluster: Arc<OnceLock<Arc<SharedSessions>>>,
    tasks: Option<Tasks>,
}

/// Tells every session about catalog changes; each session's interest decides whether its
/// client hears of one (list changes always, resource updates when subscribed).
fn broadcast_catalog_changes(server: &McpServer, sessions: &Arc<SessionRegistry>) {
    let sessions = Arc::downgrade(sessions);
    server.live_catalog().listen(move |event| {
        let Some(sessions) = sessions.upgrade() else { return };
        for handle in sessions.handles() {
            handle.session.do_send(CatalogChanged(event.clone()));
        }
    });
}

/// `mcpd_client_held`: each identity's shares, read at every scrape.
#[derive(Debug)]
struct ShareMetrics(std::sync::Weak<SessionRegistry>);

impl crate::metrics::MoreMetrics for ShareMetrics {
    fn encode(&self, encoder: &mut prometheus_client::encoding::DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self.0.upgrade() {
            Some(sessions) => sessions.shares().encode(encoder),
            None => Ok(()),
        }
    }
}

impl Mcpd {
    /// Starts the actors (the listener stays stopped until [`Mcpd::start`] or
    /// [`Mcpd::sync_with_settings`]). `base` supplies the keys, limits and settings file used by
    /// `sync_with_settings`; `warnings` are shown in the status.
    pub fn new(server: Arc<McpServer>, base: ListenerConfig, warnings: Vec<String>) -> Self {
        Mcpd::with_task_store(server, base, warnings, None)
    }

    /// As [`Mcpd::new`], with tasks kept in `store` rather than in memory (cluster mode's
    /// Redis store, [`crate::cluster::Cluster::task_store`]).
    pub fn with_task_store(
        server: Arc<McpServer>,
        base: ListenerConfig,
        warnings: Vec<String>,
        store: Option<Arc<dyn mcpd::tasks::TaskStore>>,
    ) -> Self {
        let counts = Arc::new(ActorCounts::new());
        let sessions = Arc::new(SessionRegistry::new(base.sessions.max_sessions));
        let registry = sessions.clone();
        let metrics = Arc::new(Metrics::new(counts.clone(), Arc::new(move || registry.len())));
        broadcast_catalog_changes(&server, &sessions);
        metrics.add_collector(Box::new(ShareMetrics(Arc::downgrade(&sessions))));
        let tasks = server.options().tasks.enabled.then(|| {
            let tasks = Tasks::start(server.options().tasks, counts.clone(), store);
            server.install_tasks(Arc::new(tasks.clone()));
            let reader = tasks.clone();
            metrics.set_task_counts(Arc::new(move || reader.counts_now()));
            tasks
        });
        let cluster = Arc::new(OnceLock::new());
        let listener =
            Listener::new(server, base, warnings, counts.clone(), metrics.clone(), sessions.clone(), tasks.clone())
                .sharing(cluster.clone())
                .start();
        let supervisor = Supervisor::new(counts.clone(), listener.clone(), sessions.clone()).start();
        Mcpd { supervisor, listener, counts, metrics, sessions, cluster, tasks }
    }

    /// Adds fields to the status JSON (each call adds to those of the calls before; and, through
    /// [`Metrics::set_gauges`], to `/metrics`);
    /// call before [`Mcpd::start`].
    ///
    /// # Errors
    /// When the listener is gone.
    pub async fn set_status_extras(&self, extras: crate::http::StatusExtras) -> Result<(), RuntimeError> {
        Ok(self.listener.send(crate::listener::SetStatusExtras(extras)).await?)
    }

    /// The metrics.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The tasks, when enabled (cluster mode relays their status changes).
    pub(crate) fn tasks(&self) -> Option<&Tasks> {
        self.tasks.as_ref()
    }

    /// The session registry (cluster mode shares it through Redis).
    pub(crate) fn sessions(&self) -> &Arc<SessionRegistry> {
        &self.sessions
    }

    /// Cluster mode: sessions from now on are shared through `shared` (set once) — the
    /// registry's session store, and what the HTTP edge creates, adopts and deletes sessions in.
    pub(crate) fn share_sessions(&self, shared: Arc<SharedSessions>) {
        self.sessions.share(shared.clone());
        let _ = self.cluster.set(shared);
    }

    /// How many streamable-HTTP sessions are alive.
    pub fn live_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Starts serving with `config`, stopping the running endpoint first.
    ///
    /// # Errors
    /// [`RuntimeError::Start`] when the address cannot be bound or the configuration is unsafe.
    pub async fn start(&self, config: ListenerConfig) -> Result<ListenerStatus, RuntimeError> {
        Ok(self.listener.send(StartListener { config }).await??)
    }

    /// Stops serving; with `save_disabled` the settings file records `enabled: false`.
    ///
    /// # Errors
    /// When the settings cannot be written or the actor is gone.
    pub async fn stop(&self, save_disabled: bool) -> Result<ListenerStatus, RuntimeError> {
        Ok(self.listener.send(StopServing { save_disabled }).await??)
    }

    /// Starts or stops according to the settings file.
    ///
    /// # Errors
    /// As [`Mcpd::start`], and when the settings file is unreadable.
    pub async fn sync_with_settings(&self) -> Result<ListenerStatus, RuntimeError> {
        Ok(self.listener.send(SyncWithSettings).await??)
    }

    /// The listener's status.
    ///
    /// # Errors
    /// When the actor is gone.
    pub async fn status(&self) -> Result<ListenerStatus, RuntimeError> {
        Ok(self.listener.send(ListenerStatusQuery).await?)
    }

    /// Live actor and message counts.
    pub fn counts(&self) -> Arc<ActorCounts> {
        self.counts.clone()
    }

    /// Stops the endpoint and every actor. Settings are left as they are.
    ///
    /// # Errors
    /// When the supervisor is already gone.
    pub async fn close(&self) -> Result<(), RuntimeError> {
        if let Some(tasks) = &self.tasks {
            tasks.stop();
        }
        Ok(self.supervisor.send(StopSupervisor).await?)
    }
}
