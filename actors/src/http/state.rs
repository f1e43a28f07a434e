//! [`AppState`]: what every HTTP worker of a listener shares — the protocol layer, the edge's
//! keys and policies, limits, status, metrics, sessions, tasks. Built once per listener start;
//! every route reads it.

use std::sync::{Arc, OnceLock};

use mcpd::auth::{KeySet, OriginPolicy};
use mcpd::server::SessionSupport;
use mcpd::McpServer;

use super::slow_bodies::SlowBodies;
use crate::cluster::sessions::SharedSessions;
use crate::config::{ConnectionLimits, Limits, SessionConfig, TransportMode};
use crate::counts::ActorCounts;
use crate::metrics::Metrics;
use crate::session::SessionRegistry;
use crate::status::StatusCell;

/// What every HTTP worker shares. Built once per listener start.
pub(crate) struct AppState {
    /// The protocol layer.
    pub server: Arc<McpServer>,
    /// API keys.
    pub keys: KeySet,
    /// OAuth 2.1 resource server, when on.
    pub auth: Option<Arc<crate::auth::Authenticator>>,
    /// Origin and Host policy.
    pub origins: OriginPolicy,
    /// Whether the listener is bound to loopback (then `Host` is checked).
    pub check_host: bool,
    /// Limits.
    pub limits: Limits,
    /// Connection limits (the body timeout is applied per request).
    pub connections: ConnectionLimits,
    /// Requests waiting for their body past the grace, across all workers.
    pub slow_bodies: SlowBodies,
    /// Transport mode.
    pub mode: TransportMode,
    /// The listener's status, for `GET /status`.
    pub status: Arc<StatusCell>,
    /// Metrics, for `GET /metrics`.
    pub metrics: Arc<Metrics>,
    /// Live sessions.
    pub sessions: Arc<SessionRegistry>,
    /// Cluster mode: the shared sessions (set when cluster mode starts; [`AppState::cluster`]).
    pub cluster: Arc<OnceLock<Arc<SharedSessions>>>,
    /// Session settings.
    pub session_config: SessionConfig,
    /// Actor counts (sessions and executors started here count themselves).
    pub counts: Arc<ActorCounts>,
    /// More fields for the status JSON (tool sets, remote servers), computed per request.
    pub extras: Option<StatusExtras>,
    /// The tasks (the tasks extension), when enabled.
    pub tasks: Option<crate::tasks::Tasks>,
    /// The access file's per-client policy (`--access`), when there is one.
    pub access: Option<Arc<crate::access::AccessControl>>,
    /// The virtual servers, each served at `/mcp/<name>`.
    pub views: Option<Arc<crate::views::VirtualServers>>,
}

/// A provider of extra status fields (an object merged into the status JSON).
pub type StatusExtras = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

impl AppState {
    /// The sessions shared through Redis, in cluster mode.
    pub(super) fn cluster(&self) -> Option<&Arc<SharedSessions>> {
        self.cluster.get()
    }

    /// Whether this endpoint keeps sessions.
    pub(super) fn sessions(&self) -> SessionSupport {
        match self.mode {
            TransportMode::StreamableHttp => SessionSupport::Enabled,
            TransportMode::Http => SessionSupport::Disabled,
        }
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("mode", &self.mode).finish_non_exhaustive()
    }
}
