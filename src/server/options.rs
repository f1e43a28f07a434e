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
    /// survive a restart). Several instances share a ring instead through
    /// [`McpServer::set_state_keys`](crate::McpServer::set_state_keys) (the runtime's cluster mode).
    pub state_key: Option<Vec<u8>>,
    /// The tasks extension (2026-07-28): whether it is advertised, and its bounds.
    pub tasks: TaskOptions,
}

/// Settings of the tasks extension (`io.modelcontextprotocol/tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOptions {
    /// Advertise the extension in `server/discover` and serve `tasks/*` (when the runtime
    /// runs tasks).
    pub enabled: bool,
    /// How long a task and its result are kept from creation, in milliseconds (`None`:
    /// unlimited, written `ttlMs: null`).
    pub ttl_ms: Option<u64>,
    /// The poll interval suggested to clients, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a call of a tool whose task support is `optional` runs before it becomes a task,
    /// in milliseconds.
    pub task_after_ms: u64,
    /// Tasks held at once (any status, until they expire).
    pub max_tasks: usize,
    /// Tasks held at once per client identity (API key, OAuth subject, or the shared anonymous
    /// identity).
    pub max_per_client: usize,
}

impl Default for TaskOptions {
    /// TTL 5 minutes (the result stays readable that long), poll every second, promote an
    /// optional call after one second, at most 1000 tasks, 100 per client.
    fn default() -> Self {
        TaskOptions {
            enabled: true,
            ttl_ms: Some(300_000),
            poll_interval_ms: 1_000,
            task_after_ms: 1_000,
            max_tasks: 1_000,
            max_per_client: 100,
        }
    }
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
            tasks: TaskOptions::default(),
        }
    }
}
