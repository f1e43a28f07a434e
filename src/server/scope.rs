//! The facts about one request that its transport established (revision, session, client
//! capabilities, log level, the way back to the client), and the handler context built from
//! them.

use std::sync::Arc;

use super::stateless::StatelessRequest;
use crate::auth::identity::Identity;
use crate::auth::scopes::Access;
use crate::catalog::Catalog;
use crate::context::{LogLevel, Peer, ToolContext};
use crate::jsonrpc::{ClientCapabilities, RequestMeta};
use crate::version::ProtocolVersion;

/// The facts about one request that the transport established.
#[derive(Clone)]
pub struct Scope {
    /// The revision the request speaks.
    pub version: ProtocolVersion,
    /// Its session, if any.
    pub session_id: Option<Arc<str>>,
    /// The client's capabilities.
    pub client_capabilities: Option<ClientCapabilities>,
    /// The log level in force.
    pub log_level: Option<LogLevel>,
    /// The way back to the client.
    pub peer: Option<Arc<dyn Peer>>,
    /// The catalog the request was validated against (stateless validation reads it for the
    /// `Mcp-Param-*` headers), so that it runs against the same one; `None`: the server takes a
    /// snapshot when the request starts.
    pub catalog: Option<Arc<Catalog>>,
    /// What an OAuth-authenticated caller may do (its scopes against the per-tool rules):
    /// `tools/list` shows, and `tools/call` runs, only the tools it may call. `None`: every tool
    /// (no OAuth, an API key, stdio).
    pub access: Option<Arc<Access>>,
    /// Who the request comes from (decided at the edge): what it opens — a task, a sealed
    /// `requestState` — is its own. `None`: the shared anonymous identity.
    pub caller: Option<Identity>,
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("version", &self.version)
            .field("session_id", &self.session_id)
            .field("log_level", &self.log_level)
            .finish_non_exhaustive()
    }
}

impl Scope {
    /// A scope with only a version.
    pub fn new(version: ProtocolVersion) -> Self {
        Scope {
            version,
            session_id: None,
            client_capabilities: None,
            log_level: None,
            peer: None,
            catalog: None,
            access: None,
            caller: None,
        }
    }

    /// The caller's identity as stored with what it opens (`anonymous` when none).
    pub fn caller_text(&self) -> &str {
        self.caller.as_ref().map_or(super::ANONYMOUS_OWNER, Identity::as_str)
    }

    /// The caller's identity as the task store keys its tasks.
    pub(crate) fn task_owner(&self) -> Arc<str> {
        self.caller.as_ref().map_or_else(|| Arc::from(super::ANONYMOUS_OWNER), Identity::as_arc)
    }

    /// The scope of a validated stateless request.
    pub fn stateless(request: StatelessRequest) -> Self {
        Scope {
            version: ProtocolVersion::STATELESS,
            session_id: None,
            client_capabilities: Some(request.client_capabilities),
            log_level: request.log_level,
            peer: None,
            catalog: Some(request.catalog),
            access: None,
            caller: None,
        }
    }

    /// The handler's context, with the request's `_meta` (shared, not copied).
    pub(crate) fn context(&self, meta: Option<Arc<RequestMeta>>) -> ToolContext {
        ToolContext::new(self.version)
            .with_session(self.session_id.clone())
            .with_request_meta(meta)
            .with_client_capabilities(self.client_capabilities.clone())
            .with_log_level(self.log_level)
            .with_peer(self.peer.clone())
    }
}
