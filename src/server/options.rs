//! Server-wide settings of the protocol layer: who the server says it is, page size, and the
//! caching hints of the stateless wire's cacheable results.

use serde::Serialize;

use crate::model::Implementation;

/// Default number of items in one page of a `*/list` result.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// Who may cache a result: any client of this server, or only the one that asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Shared by every client.
    Public,
    /// Only for the requesting client.
    Private,
}

/// The caching hints of a 2026-07-28 cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Freshness in milliseconds (0: stale at once).
    pub ttl_ms: u64,
    /// Who may cache it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// A hint.
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        CacheHint { ttl_ms, scope }
    }
}

/// Caching hints per cacheable result, settable by a server author.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`.
    pub tools: CacheHint,
    /// `prompts/list`.
    pub prompts: CacheHint,
    /// `resources/list`.
    pub resources: CacheHint,
    /// `resources/templates/list`.
    pub templates: CacheHint,
    /// `resources/read`.
    pub read: CacheHint,
}

impl Default for CachePolicy {
    /// Lists and discovery may be shared for a minute (a change is announced by list_changed);
    /// resource contents are private and stale at once.
    fn default() -> Self {
        let list = CacheHint::new(60_000, CacheScope::Public);
        CachePolicy {
            discover: list,
            tools: list,
            prompts: list,
            resources: list,
            templates: list,
            read: CacheHint::new(0, CacheScope::Private),
        }
    }
}

/// Server-wide settings of the protocol layer.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Name and version reported to clients.
    pub info: Implementation,
    /// Instructions for the model, sent at `initialize` / `server/discover`.
    pub instructions: Option<String>,
    /// Items per page of `*/list`.
    pub page_size: usize,
    /// Caching hints on the stateless wire.
    pub cache: CachePolicy,
    /// Whether the transport has sessions (enables subscriptions and list_changed).
    pub sessions: bool,
    /// Secret for sealing MRTR `requestState` (none: a random key per process, so states do not
    /// survive a restart).
    pub state_key: Option<Vec<u8>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            info: Implementation::new("mcpd", env!("CARGO_PKG_VERSION")),
            instructions: None,
            page_size: DEFAULT_PAGE_SIZE,
            cache: CachePolicy::default(),
            sessions: false,
            state_key: None,
        }
    }
}
