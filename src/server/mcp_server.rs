//! [`McpServer`], the protocol layer of a server (options, catalog, capabilities, the
//! `requestState` key ring, the task service), and what `initialize` agrees on. Serving a
//! request is in the files of each job (`execute`, `operation`, `rounds`, `stateless`), which
//! add their own `impl McpServer` blocks.

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde_json::{json, Map, Value};

use super::options::ServerOptions;
use super::tasks::TaskService;
use crate::catalog::{Catalog, LiveCatalog};
use crate::error::ProtocolError;
use crate::jsonrpc::ClientCapabilities;
use crate::model::{meta_keys, PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability};
use crate::mrtr::{StateSealer, DEFAULT_STATE_LIFETIME};
use crate::version::ProtocolVersion;

/// What `initialize` agreed on.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// The negotiated revision.
    pub version: ProtocolVersion,
    /// The client's declared capabilities.
    pub client_capabilities: ClientCapabilities,
    /// The client's name and version, if it sent them.
    pub client_info: Option<Value>,
    /// The result to send.
    pub result: Value,
}

/// The protocol layer of a server: options plus catalog.
#[derive(Debug)]
pub struct McpServer {
    pub(super) options: ServerOptions,
    pub(super) catalog: Arc<LiveCatalog>,
    pub(super) capabilities: ServerCapabilities,
    pub(super) stateless_capabilities: ServerCapabilities,
    /// Replaced whole by [`McpServer::set_state_keys`]; a round takes a read lock for an `Arc` clone.
    pub(super) sealer: RwLock<Arc<StateSealer>>,
    pub(super) tasks: OnceLock<Arc<dyn TaskService>>,
}

impl McpServer {
    /// A server over `catalog`.
    pub fn new(options: ServerOptions, catalog: Catalog) -> Self {
        McpServer::with_live_catalog(options, Arc::new(LiveCatalog::new(catalog)))
    }

    /// A server over a catalog that may change while it runs (handlers may hold the same
    /// `Arc<LiveCatalog>` to add or remove tools).
    pub fn with_live_catalog(options: ServerOptions, catalog: Arc<LiveCatalog>) -> Self {
        let list_changed = options.sessions.then_some(true);
        let capabilities = ServerCapabilities {
            tools: Some(ToolsCapability { list_changed }),
            prompts: Some(PromptsCapability { list_changed }),
            resources: Some(ResourcesCapability { subscribe: options.sessions.then_some(true), list_changed }),
            logging: Some(Map::new()),
            completions: Some(Map::new()),
            experimental: None,
            extensions: None,
        };
        // The stateless wire always has subscriptions/listen, so it can announce changes.
        let stateless_capabilities = ServerCapabilities {
            tools: Some(ToolsCapability { list_changed: Some(true) }),
            prompts: Some(PromptsCapability { list_changed: Some(true) }),
            resources: Some(ResourcesCapability { subscribe: Some(true), list_changed: Some(true) }),
            extensions: options.tasks.enabled.then(|| {
                let mut extensions = Map::new();
                extensions.insert(crate::tasks::TASKS_EXTENSION.into(), json!({}));
                extensions
            }),
            ..capabilities.clone()
        };
        let sealer = match &options.state_key {
            Some(key) => StateSealer::new(key.clone(), DEFAULT_STATE_LIFETIME),
            None => StateSealer::random(DEFAULT_STATE_LIFETIME).unwrap_or_else(|e| {
                log::warn!("no system randomness for the requestState key ({e}); deriving one from the clock");
                let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                StateSealer::new(format!("{nanos:?}{}", std::process::id()).into_bytes(), DEFAULT_STATE_LIFETIME)
            }),
        };
        let sealer = RwLock::new(Arc::new(sealer));
        McpServer { options, catalog, capabilities, stateless_capabilities, sealer, tasks: OnceLock::new() }
    }

    /// Replaces the `requestState` key ring: from now on states are sealed with `current` and
    /// opened with `current` or any of `previous` (keys shared by several instances, rotated
    /// without breaking rounds in flight). The core does no I/O: the runtime fetches the keys.
    pub fn set_state_keys(&self, current: Vec<u8>, previous: Vec<Vec<u8>>) {
        let sealer = Arc::new(StateSealer::with_ring(current, previous, DEFAULT_STATE_LIFETIME));
        *self.sealer.write().unwrap_or_else(PoisonError::into_inner) = sealer;
    }

    /// The `requestState` sealer in force.
    pub(crate) fn sealer(&self) -> Arc<StateSealer> {
        self.sealer.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Installs the runtime's task service (once; later calls are ignored): from then on a
    /// task-supporting tool's call on the 2026-07-28 wire may become a task, and `tasks/*` is
    /// served. Without one (or with `options.tasks.enabled` off) tools answer synchronously and
    /// `tasks/*` is `-32601`.
    pub fn install_tasks(&self, service: Arc<dyn TaskService>) {
        if self.options.tasks.enabled {
            let _ = self.tasks.set(service);
        }
    }

    /// Whether a task service is installed (a transport that serves on its own, like stdio,
    /// installs one when none is).
    pub fn has_task_service(&self) -> bool {
        self.tasks.get().is_some()
    }

    /// The installed task service.
    pub(crate) fn task_service(&self) -> Option<&Arc<dyn TaskService>> {
        self.tasks.get()
    }

    /// The options.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// A snapshot of the current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.snapshot()
    }

    /// A snapshot of the catalog as a caller with `access` has it: on a virtual server's
    /// endpoint the view's projection (its renamed tools under their new names), else the
    /// catalog itself.
    pub fn catalog_for(&self, access: Option<&crate::auth::scopes::Access>) -> Arc<Catalog> {
        let catalog = self.catalog.snapshot();
        match access.and_then(|access| access.view.as_ref()) {
            Some(view) => view.project(&catalog),
            None => catalog,
        }
    }

    /// The live catalog, to change it or to listen for changes.
    pub fn live_catalog(&self) -> &Arc<LiveCatalog> {
        &self.catalog
    }

    /// The capabilities this server advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// Answers `initialize`: the requested revision when we speak it, else our newest
    /// handshake revision.
    ///
    /// # Errors
    /// `-32602` when `protocolVersion` is missing or not a string.
    pub fn initialize(&self, params: Option<&Map<String, Value>>) -> Result<Handshake, ProtocolError> {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .ok_or_else(|| ProtocolError::InvalidParams("initialize needs a string protocolVersion".into()))?;
        let version = ProtocolVersion::negotiate(requested);
        let client_capabilities = params.and_then(|p| p.get("capabilities")).cloned().unwrap_or_else(|| json!({}));
        let client_info = params.and_then(|p| p.get("clientInfo")).cloned();
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": self.capabilities,
            "serverInfo": self.options.info,
        });
        if let Some(instructions) = &self.options.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(Handshake { version, client_capabilities: client_capabilities.into(), client_info, result })
    }

    /// The `server/discover` result.
    pub(super) fn discover(&self) -> Map<String, Value> {
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(ProtocolVersion::all_strings()));
        result.insert("capabilities".into(), json!(self.stateless_capabilities));
        if let Some(instructions) = &self.options.instructions {
            result.insert("instructions".into(), json!(instructions));
        }
        result.insert("_meta".into(), json!({ meta_keys::SERVER_INFO: self.options.info }));
        result
    }
}
