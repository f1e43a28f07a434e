//! The `Listener` actor: owns one bound HTTP endpoint (the actix-web server handle), starts and
//! stops it, and persists whether it should run.
//!
//! Handles `StartListener` (stops the previous endpoint first), `StopServing`,
//! `SyncWithSettings`, `ListenerStatusQuery` and `StopListener`. Start and stop are
//! `AtomicResponse`s: one finishes before the next begins, so they never interleave.
//!
//! The endpoint applies the configured [`ConnectionLimits`]: the cap on open connections (within
//! the open-file limit, [`http::connections`]), the request-head, keep-alive and send timeouts,
//! and — per request — the body timeout and the cap on slow bodies.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix::{Actor, ActorContext, ActorFutureExt as _, AtomicResponse, Context, Handler, Message, WrapFuture as _};
use actix_web::dev::ServerHandle;
use actix_web::http::KeepAlive;
use actix_web::{web, HttpServer};
use derive_more::{Display, Error};
use mcpd::config::ListenerSettings;
use mcpd::McpServer;

use crate::cluster::sessions::SharedSessions;
use crate::config::{ConnectionLimits, ListenerConfig};
use crate::counts::{ActorCounts, ActorKind};
use crate::http::{self, AppState};
use crate::metrics::Metrics;
use crate::session::SessionRegistry;
use crate::status::{now_millis, ListenerStatus, StatusCell};
use crate::tasks::Tasks;

/// How long a stopping endpoint waits for in-flight requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a connection being closed may take to say goodbye (actix-web's
/// `client_disconnect_timeout`: the rest of an unread body is discarded meanwhile).
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Why the listener could not start.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration would expose tools without a key.
    #[display("{_0}")]
    Exposure(#[error(not(source))] String),
    /// Binding failed (port in use, bad address, …).
    #[display("cannot listen on {address}: {reason}")]
    Bind {
        /// The address.
        address: String,
        /// The OS error.
        reason: String,
    },
    /// The settings file could not be read or written.
    #[display("settings file {path}: {reason}")]
    Settings {
        /// The file.
        path: String,
        /// The error.
        reason: String,
    },
}

struct Running {
    handle: ServerHandle,
}

/// One HTTP endpoint.
pub(crate) struct Listener {
    server: Arc<McpServer>,
    counts: Arc<ActorCounts>,
    metrics: Arc<Metrics>,
    sessions: Arc<SessionRegistry>,
    status: Arc<StatusCell>,
    warnings: Vec<String>,
    base: ListenerConfig,
    running: Option<Running>,
    extras: Option<crate::http::StatusExtras>,
    /// The tasks (the tasks extension), when enabled.
    tasks: Option<Tasks>,
    /// Cluster mode: the shared sessions (set once, whenever cluster mode starts).
    cluster: Arc<OnceLock<Arc<SharedSessions>>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").field("running", &self.running.is_some()).finish_non_exhaustive()
    }
}

impl Listener {
    /// A stopped listener. `base` supplies keys, limits and the settings file for
    /// `SyncWithSettings`.
    pub(crate) fn new(
        server: Arc<McpServer>,
        base: ListenerConfig,
        warnings: Vec<String>,
        counts: Arc<ActorCounts>,
        metrics: Arc<Metrics>,
        sessions: Arc<SessionRegistry>,
        tasks: Option<Tasks>,
    ) -> Self {
        let status =
            ListenerStatus::stopped(server.options().info.clone(), server.catalog().tools().count(), "stopped");
        Listener {
            server,
            counts,
            metrics,
            sessions,
            status: Arc::new(StatusCell::new(status)),
            warnings,
            base,
            running: None,
            extras: None,
            tasks,
            cluster: Arc::default(),
        }
    }

    /// Serves the shared sessions `cluster` will hold once cluster mode starts.
    #[must_use]
    pub(crate) fn sharing(mut self, cluster: Arc<OnceLock<Arc<SharedSessions>>>) -> Self {
        self.cluster = cluster;
        self
    }

    /// Takes the running endpoint, if any; the future stops it gracefully.
    fn stop_running(&mut self) -> impl std::future::Future<Output = ()> + 'static {
        let previous = self.running.take();
        async move {
            if let Some(previous) = previous {
                previous.handle.stop(true).await;
            }
        }
    }

    fn stopped_status(&self, message: &str) -> ListenerStatus {
        let mut status = self.status.snapshot();
        status.running = false;
        status.message = message.to_owned();
        status
    }

    fn bind_and_run(&mut self, config: &ListenerConfig) -> Result<ListenerStatus, StartError> {
        config.check_exposure().map_err(StartError::Exposure)?;
        let address = format!("{}:{}", config.host, config.port);
        let tcp = TcpListener::bind((config.host.as_str(), config.port))
            .map_err(|e| StartError::Bind { address: address.clone(), reason: e.to_string() })?;
        let port = tcp.local_addr().map(|a| a.port()).unwrap_or(config.port);
        let status = ListenerStatus {
            running: true,
            host: config.host.clone(),
            port,
            url: config.url(port),
            started_at: now_millis(),
            message: "running".to_owned(),
            transport: config.mode.label().to_owned(),
            supported_versions: mcpd::version::ProtocolVersion::all_strings(),
            server: self.server.options().info.clone(),
            tools: self.server.catalog().tools().count(),
            auth_required: !config.keys.is_open() || config.oauth.is_some() || config.access.is_some(),
            warnings: self.warnings.clone(),
        };
        self.status.set(status.clone());
        let connections = ConnectionLimits {
            max_connections: http::connections::within_descriptors(config.connections.max_connections),
            ..config.connections
        };
        let state = web::Data::new(AppState {
            server: self.server.clone(),
            keys: config.keys.clone(),
            auth: config.oauth.clone().map(|settings| {
                let resource = settings.resource.clone().unwrap_or_else(|| config.url(port));
                let name = &self.server.options().info.name;
                Arc::new(crate::auth::Authenticator::new(settings, resource, name, self.metrics.edge().clone()))
            }),
            origins: config.origins.clone(),
            check_host: config.binds_loopback(),
            limits: config.limits,
            connections,
            slow_bodies: http::SlowBodies::new(connections.slow_bodies()),
            mode: config.mode,
            status: self.status.clone(),
            metrics: self.metrics.clone(),
            sessions: self.sessions.clone(),
            cluster: self.cluster.clone(),
            session_config: config.sessions,
            counts: self.counts.clone(),
            extras: self.extras.clone(),
            tasks: self.tasks.clone(),
            access: config.access.clone(),
            views: config.virtual_servers.clone(),
        });
        if let Some(access) = &config.access {
            access.install(&self.metrics);
        }
        let authenticated = !config.keys.is_open() || config.oauth.is_some() || config.access.is_some();
        let max_connections = connections.max_connections;
        self.sessions.shares().configure(&config.shares, config.sessions.max_sessions, max_connections, authenticated);
        let workers = if config.workers == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        } else {
            config.workers
        };
        let keep_alive = match connections.keep_alive {
            Duration::ZERO => KeepAlive::Disabled,
            idle => KeepAlive::Timeout(idle),
        };
        let on_connect = http::connections::on_connect(
            self.metrics.edge().clone(),
            connections.max_connections,
            connections.send_timeout,
        );
        let server = HttpServer::new(move || http::app(state.clone()))
            .workers(workers)
            .max_connections(connections.max_connections.div_ceil(workers))
            .keep_alive(keep_alive)
            .client_request_timeout(connections.header_timeout)
            .client_disconnect_timeout(DISCONNECT_TIMEOUT)
            // A client that closes its connection while a request runs has gone away: the
            // request's work is dropped (on the stateless wire that is how a request is
            // cancelled, also when its answer was not streamed).
            .h1_allow_half_closed(false)
            .on_connect(on_connect)
            .disable_signals()
            .shutdown_timeout(SHUTDOWN_GRACE.as_secs())
            .listen(tcp)
            .map_err(|e| StartError::Bind { address, reason: e.to_string() })?
            .run();
        self.running = Some(Running { handle: server.handle() });
        actix_rt::spawn(server);
        log::info!("listening on {} ({})", status.url, config.mode.label());
        Ok(status)
    }
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        self.counts.started(ActorKind::Listener);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(running) = self.running.take() {
            // The actor is gone; let the server drain on its own.
            actix_rt::spawn(async move { running.handle.stop(true).await });
        }
        self.counts.stopped(ActorKind::Listener);
    }
}

fn save_settings(path: Option<&PathBuf>, settings: &ListenerSettings) -> Result<(), StartError> {
    let Some(path) = path else { return Ok(()) };
    settings.save(path).map_err(|e| StartError::Settings { path: path.display().to_string(), reason: e.to_string() })
}

/// Start serving with `config`, after stopping the endpoint that runs now. Answers the new
/// status; on success the settings file (if any) records `enabled: true`.
#[derive(Debug, Message)]
#[rtype(result = "Result<ListenerStatus, StartError>")]
pub(crate) struct StartListener {
    /// What to bind and enforce.
    pub config: ListenerConfig,
}

impl Handler<StartListener> for Listener {
    type Result = AtomicResponse<Self, Result<ListenerStatus, StartError>>;

    fn handle(&mut self, msg: StartListener, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Listener);
        AtomicResponse::new(Box::pin(self.stop_running().into_actor(self).map(move |(), act, _| {
            let outcome = act.bind_and_run(&msg.config);
            match &outcome {
                Ok(status) => {
                    let settings = ListenerSettings { host: msg.config.host.clone(), port: status.port, enabled: true };
                    save_settings(msg.config.settings_file.as_ref(), &settings)?;
                }
                Err(error) => act.status.set(act.stopped_status(&format!("start failed: {error}"))),
            }
            outcome
        })))
    }
}

/// Stop serving. With `save_disabled`, the settings file records `enabled: false`.
#[derive(Debug, Message)]
#[rtype(result = "Result<ListenerStatus, StartError>")]
pub(crate) struct StopServing {
    /// Persist that the listener should stay off.
    pub save_disabled: bool,
}

impl Handler<StopServing> for Listener {
    type Result = AtomicResponse<Self, Result<ListenerStatus, StartError>>;

    fn handle(&mut self, msg: StopServing, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Listener);
        AtomicResponse::new(Box::pin(self.stop_running().into_actor(self).map(move |(), act, _| {
            let status = act.stopped_status("stopped");
            act.status.set(status.clone());
            if msg.save_disabled {
                let path = act.base.settings_file.clone();
                if let Some(path) = path.as_ref() {
                    let mut settings = ListenerSettings::load(path).map_err(|e| StartError::Settings {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                    settings.enabled = false;
                    save_settings(Some(path), &settings)?;
                }
            }
            Ok(status)
        })))
    }
}

/// Start or stop according to the persisted settings (`enabled`, `host`, `port`), keeping the
/// rest of the base configuration.
#[derive(Debug, Message)]
#[rtype(result = "Result<ListenerStatus, StartError>")]
pub(crate) struct SyncWithSettings;

impl Handler<SyncWithSettings> for Listener {
    type Result = AtomicResponse<Self, Result<ListenerStatus, StartError>>;

    fn handle(&mut self, _msg: SyncWithSettings, ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Listener);
        let settings = match self.base.settings_file.as_ref().map(|p| (p, ListenerSettings::load(p))) {
            None => Ok(ListenerSettings::default()),
            Some((_, Ok(settings))) => Ok(settings),
            Some((path, Err(e))) => {
                Err(StartError::Settings { path: path.display().to_string(), reason: e.to_string() })
            }
        };
        match settings {
            Err(error) => AtomicResponse::new(Box::pin(actix::fut::ready(Err(error)))),
            Ok(settings) if settings.enabled => {
                let config = ListenerConfig { host: settings.host, port: settings.port, ..self.base.clone() };
                self.handle(StartListener { config }, ctx)
            }
            Ok(_) => self.handle(StopServing { save_disabled: false }, ctx),
        }
    }
}

/// Adds fields to the status JSON from the next start on.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct SetStatusExtras(pub crate::http::StatusExtras);

impl std::fmt::Debug for SetStatusExtras {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SetStatusExtras")
    }
}

impl Handler<SetStatusExtras> for Listener {
    type Result = ();

    fn handle(&mut self, msg: SetStatusExtras, _ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::Listener);
        // Several providers (tool sets, cluster mode) each add their fields.
        self.extras = Some(match self.extras.take() {
            None => msg.0,
            Some(before) => {
                let added = msg.0;
                Arc::new(move || {
                    let mut fields = before();
                    if let (serde_json::Value::Object(all), serde_json::Value::Object(more)) = (&mut fields, added()) {
                        all.extend(more);
                    }
                    fields
                })
            }
        });
    }
}

/// The current status.
#[derive(Debug, Message)]
#[rtype(result = "ListenerStatus")]
pub(crate) struct ListenerStatusQuery;

impl Handler<ListenerStatusQuery> for Listener {
    type Result = actix::MessageResult<ListenerStatusQuery>;

    fn handle(&mut self, _msg: ListenerStatusQuery, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Listener);
        actix::MessageResult(self.status.snapshot())
    }
}

/// Stop the endpoint and the actor itself.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct StopListener;

impl Handler<StopListener> for Listener {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: StopListener, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Listener);
        AtomicResponse::new(Box::pin(self.stop_running().into_actor(self).map(|(), act, ctx| {
            act.status.set(act.stopped_status("closed"));
            ctx.stop();
        })))
    }
}
