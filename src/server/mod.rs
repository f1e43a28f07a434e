//! The pure part of serving: a request in, a result (already shaped for its era) or a
//! [`ProtocolError`] out. Transports decide the era and the scope; this module executes.

mod route;

pub use route::{
    http_era, legacy_http_version, stdio_era, validate_stateless, RoutingHeaders, StatelessRequest, STATELESS_METHODS,
};

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::FutureExt as _;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::catalog::{BoxFuture, Catalog, LiveCatalog, ToolError};
use crate::context::{LogLevel, Peer, ToolContext};
use crate::error::ProtocolError;
use crate::jsonrpc::Request;
use crate::model::{
    meta_keys, CallToolResult, Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities,
    ToolsCapability,
};
use crate::mrtr::{StateSealer, DEFAULT_STATE_LIFETIME};
use crate::version::{Era, ProtocolVersion};

/// How many times one request may ask the client for input before it is stopped.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// How a handler's rounds ended.
enum Rounds<T> {
    /// It produced its result.
    Complete(T),
    /// It failed (for a tool: an `isError` result).
    Failed(String),
    /// It needs input (stateless wire): the ready `input_required` result.
    InputRequired(Map<String, Value>),
}

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

/// The facts about one request that the transport established.
#[derive(Clone)]
pub struct Scope {
    /// The revision the request speaks.
    pub version: ProtocolVersion,
    /// Its session, if any.
    pub session_id: Option<Arc<str>>,
    /// The client's capabilities.
    pub client_capabilities: Option<Arc<Value>>,
    /// The log level in force.
    pub log_level: Option<LogLevel>,
    /// The way back to the client.
    pub peer: Option<Arc<dyn Peer>>,
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
        Scope { version, session_id: None, client_capabilities: None, log_level: None, peer: None }
    }

    /// The scope of a validated stateless request.
    pub fn stateless(request: &StatelessRequest) -> Self {
        Scope {
            version: ProtocolVersion::STATELESS,
            session_id: None,
            client_capabilities: Some(request.client_capabilities.clone()),
            log_level: request.log_level,
            peer: None,
        }
    }

    /// The handler's context; the request's `_meta` is moved out of `params`, not copied.
    fn context(&self, params: &mut Map<String, Value>) -> ToolContext {
        let meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => Some(Arc::new(meta)),
            _ => None,
        };
        ToolContext::new(self.version)
            .with_session(self.session_id.clone())
            .with_meta(meta)
            .with_client_capabilities(self.client_capabilities.clone())
            .with_log_level(self.log_level)
            .with_peer(self.peer.clone())
    }
}

/// What `initialize` agreed on.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// The negotiated revision.
    pub version: ProtocolVersion,
    /// The client's declared capabilities.
    pub client_capabilities: Arc<Value>,
    /// The client's name and version, if it sent them.
    pub client_info: Option<Value>,
    /// The result to send.
    pub result: Value,
}

/// The protocol layer of a server: options plus catalog.
#[derive(Debug)]
pub struct McpServer {
    options: ServerOptions,
    catalog: Arc<LiveCatalog>,
    capabilities: ServerCapabilities,
    stateless_capabilities: ServerCapabilities,
    sealer: StateSealer,
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
        };
        // The stateless wire always has subscriptions/listen, so it can announce changes.
        let stateless_capabilities = ServerCapabilities {
            tools: Some(ToolsCapability { list_changed: Some(true) }),
            prompts: Some(PromptsCapability { list_changed: Some(true) }),
            resources: Some(ResourcesCapability { subscribe: Some(true), list_changed: Some(true) }),
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
        McpServer { options, catalog, capabilities, stateless_capabilities, sealer }
    }

    /// The options.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// A snapshot of the current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.snapshot()
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
        Ok(Handshake { version, client_capabilities: Arc::new(client_capabilities), client_info, result })
    }

    /// Serves one request and returns its result shaped for the scope's era (`resultType` and
    /// caching hints on the stateless wire).
    ///
    /// `initialize` must be handled by the transport through [`McpServer::initialize`], because
    /// the transport owns what it agrees on; here it is an error. Session-only methods
    /// (`resources/subscribe`, …) are the transport's too.
    ///
    /// # Errors
    /// A [`ProtocolError`] for unknown methods, bad params, and handler protocol errors.
    pub async fn handle(&self, request: Request, scope: &Scope) -> Result<Value, ProtocolError> {
        let era = scope.version.era();
        let params = request.params.unwrap_or_default();
        let (mut result, hint) = match request.method.as_str() {
            "ping" if era == Era::Stateful => (Map::new(), None),
            "server/discover" if era == Era::Stateless => (self.discover(), Some(self.options.cache.discover)),
            "logging/setLevel" if era == Era::Stateful => {
                parse_level(&params)?;
                (Map::new(), None)
            }
            "tools/list" => (self.list_tools(&params)?, Some(self.options.cache.tools)),
            "tools/call" => (self.call_tool(params, scope).await?, None),
            "prompts/list" => (self.list_prompts(&params)?, Some(self.options.cache.prompts)),
            "prompts/get" => (self.get_prompt(params, scope).await?, None),
            "resources/list" => (self.list_resources(&params)?, Some(self.options.cache.resources)),
            "resources/templates/list" => (self.list_templates(&params)?, Some(self.options.cache.templates)),
            "resources/read" => (self.read_resource(params, scope).await?, Some(self.options.cache.read)),
            "completion/complete" => (self.complete(&params)?, None),
            _ => return Err(ProtocolError::MethodNotFound { method: request.method }),
        };
        if era == Era::Stateless {
            let input_required = result.get("resultType").is_some_and(|t| t == "input_required");
            result.entry("resultType").or_insert_with(|| json!("complete"));
            // Results that ask for input carry no caching hints.
            if let Some(hint) = hint.filter(|_| !input_required) {
                result.insert("ttlMs".into(), json!(hint.ttl_ms));
                result.insert("cacheScope".into(), json!(hint.scope));
            }
        }
        Ok(Value::Object(result))
    }

    fn discover(&self) -> Map<String, Value> {
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(ProtocolVersion::all_strings()));
        result.insert("capabilities".into(), json!(self.stateless_capabilities));
        if let Some(instructions) = &self.options.instructions {
            result.insert("instructions".into(), json!(instructions));
        }
        result.insert("_meta".into(), json!({ meta_keys::SERVER_INFO: self.options.info }));
        result
    }

    fn list_tools(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (tools, next) = self.catalog.snapshot().tool_page(after.as_deref(), self.options.page_size);
        Ok(page_result("tools", json!(tools), next))
    }

    fn list_prompts(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (prompts, next) = self.catalog.snapshot().prompt_page(after.as_deref(), self.options.page_size);
        Ok(page_result("prompts", json!(prompts), next))
    }

    fn list_resources(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (resources, next) = self.catalog.snapshot().resource_page(after.as_deref(), self.options.page_size);
        Ok(page_result("resources", json!(resources), next))
    }

    fn list_templates(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, ProtocolError> {
        let after = decode_cursor(params)?;
        let (templates, next) = self.catalog.snapshot().template_page(after.as_deref(), self.options.page_size);
        Ok(page_result("resourceTemplates", json!(templates), next))
    }

    async fn call_tool(
        &self,
        mut params: Map<String, Value>,
        scope: &Scope,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let name = match params.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(ProtocolError::InvalidParams("tools/call needs a string name".into())),
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => return Err(ProtocolError::InvalidParams("tools/call arguments must be an object".into())),
        };
        let catalog = self.catalog.snapshot();
        let entry = catalog.tool(&name).ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown tool: {name}")))?;
        let operation = format!("tools/call:{name}");
        let handler = &entry.handler;
        let rounds = self
            .run_rounds(scope, &operation, &arguments, &mut params, |ctx| handler.call(arguments.clone(), ctx))
            .await?;
        match rounds {
            Rounds::Complete(result) => to_object(&result),
            Rounds::Failed(message) => to_object(&CallToolResult::error(message)),
            Rounds::InputRequired(result) => Ok(result),
        }
    }

    async fn get_prompt(
        &self,
        mut params: Map<String, Value>,
        scope: &Scope,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let name = match params.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(ProtocolError::InvalidParams("prompts/get needs a string name".into())),
        };
        let catalog = self.catalog.snapshot();
        let entry =
            catalog.prompt(&name).ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown prompt: {name}")))?;
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => return Err(ProtocolError::InvalidParams("prompts/get arguments must be an object".into())),
        };
        for argument in &entry.definition.arguments {
            if argument.required == Some(true) && !arguments.contains_key(&argument.name) {
                return Err(ProtocolError::InvalidParams(format!("prompt {name} needs argument {}", argument.name)));
            }
        }
        let operation = format!("prompts/get:{name}");
        let handler = &entry.handler;
        let rounds = self
            .run_rounds(scope, &operation, &arguments, &mut params, |ctx| handler.get(arguments.clone(), ctx))
            .await?;
        match rounds {
            Rounds::Complete(result) => to_object(&result),
            Rounds::Failed(message) => Err(ProtocolError::Internal(message)),
            Rounds::InputRequired(result) => Ok(result),
        }
    }

    async fn read_resource(
        &self,
        mut params: Map<String, Value>,
        scope: &Scope,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ProtocolError::InvalidParams("resources/read needs a string uri".into()))?;
        let (handler, variables) = self
            .catalog
            .snapshot()
            .resolve_resource(&uri)
            .ok_or_else(|| ProtocolError::ResourceNotFound { uri: uri.to_owned() })?;
        let operation = format!("resources/read:{uri}");
        let rounds = self
            .run_rounds(scope, &operation, &Map::new(), &mut params, |ctx| {
                handler.read(uri.clone(), variables.clone(), ctx)
            })
            .await?;
        match rounds {
            Rounds::Complete(result) if result.contents.is_empty() => Err(ProtocolError::ResourceNotFound { uri }),
            Rounds::Complete(result) => to_object(&result),
            Rounds::Failed(message) => Err(ProtocolError::Internal(message)),
            Rounds::InputRequired(result) => Ok(result),
        }
    }

    /// Runs a handler until it completes, fails, or (on the stateless wire) needs input.
    ///
    /// Takes `inputResponses` and `requestState` (verified against `operation` and `arguments`)
    /// out of `params`. When the handler answers [`crate::mrtr::InputRequired`]: requests for capabilities the
    /// client did not declare are dropped (none left: `-32021`); on the stateless wire the result is
    /// `input_required` with a sealed state; with a peer (a session, stdio) the server asks the
    /// client itself and calls the handler again, at most [`MAX_INPUT_ROUNDS`] times.
    async fn run_rounds<T>(
        &self,
        scope: &Scope,
        operation: &str,
        arguments: &Map<String, Value>,
        params: &mut Map<String, Value>,
        call: impl Fn(ToolContext) -> BoxFuture<Result<T, ToolError>>,
    ) -> Result<Rounds<T>, ProtocolError> {
        let mut responses = match params.remove("inputResponses") {
            Some(Value::Object(responses)) => Some(Arc::new(responses)),
            _ => None,
        };
        let mut state = match params.remove("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(Arc::new(
                self.sealer
                    .open(&token, operation, arguments)
                    .map_err(|e| ProtocolError::InvalidParams(e.to_string()))?,
            )),
            Some(_) => return Err(ProtocolError::InvalidParams("requestState must be a string".into())),
        };
        let base = scope.context(params);
        for _ in 0..MAX_INPUT_ROUNDS {
            let context = base.clone().with_input(responses.clone(), state.clone());
            let mut input = match AssertUnwindSafe(call(context)).catch_unwind().await {
                Ok(Ok(done)) => return Ok(Rounds::Complete(done)),
                Ok(Err(ToolError::Failed(message))) => return Ok(Rounds::Failed(message)),
                Ok(Err(ToolError::Protocol(error))) => return Err(error),
                Ok(Err(ToolError::InputRequired(input))) => input,
                Err(panic) => {
                    log::error!("{operation} panicked: {}", panic_message(&panic));
                    return Ok(Rounds::Failed(format!("{operation} failed: {}", panic_message(&panic))));
                }
            };
            let stateless = scope.version.era() == Era::Stateless;
            if !stateless && scope.peer.is_none() {
                return Ok(Rounds::Failed(format!(
                    "{operation} needs input from the client, which a session-less HTTP request cannot carry; \
                     use a session (-s) or the 2026-07-28 wire"
                )));
            }
            let missing = input.retain_supported(|capability| base.client_supports(capability));
            if input.requests().is_empty() {
                if missing.is_empty() {
                    return Err(ProtocolError::Internal(format!("{operation} asked for input but named no request")));
                }
                return Err(ProtocolError::MissingCapability { required: Value::Object(missing) });
            }
            let (requests, next_state) = input.into_parts();
            let Some(peer) = scope.peer.as_ref().filter(|_| !stateless) else {
                let mut result = Map::new();
                result.insert("resultType".into(), json!("input_required"));
                result.insert("inputRequests".into(), Value::Object(requests));
                if let Some(next_state) = next_state {
                    result.insert("requestState".into(), json!(self.sealer.seal(operation, arguments, &next_state)));
                }
                return Ok(Rounds::InputRequired(result));
            };
            let mut answers = Map::new();
            for (key, request) in requests {
                let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                let request_params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                match peer.request(&method, request_params).await {
                    Ok(answer) => answers.insert(key, answer),
                    Err(error) => {
                        return Ok(Rounds::Failed(format!("the client could not answer {method}: {}", error.message)))
                    }
                };
            }
            responses = Some(Arc::new(answers));
            state = next_state.map(Arc::new);
        }
        Ok(Rounds::Failed(format!("{operation} asked for input more than {MAX_INPUT_ROUNDS} times")))
    }

    fn complete(&self, params: &Map<String, Value>) -> Result<Map<String, Value>, ProtocolError> {
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| ProtocolError::InvalidParams("completion/complete needs a ref object".into()))?;
        let argument = params
            .get("argument")
            .and_then(Value::as_object)
            .ok_or_else(|| ProtocolError::InvalidParams("completion/complete needs an argument object".into()))?;
        let arg_name = argument.get("name").and_then(Value::as_str).unwrap_or_default();
        let prefix = argument.get("value").and_then(Value::as_str).unwrap_or_default();
        let catalog = self.catalog.snapshot();
        let completer = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                let prompt = catalog
                    .prompt(name)
                    .ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown prompt: {name}")))?;
                if !prompt.definition.arguments.iter().any(|a| a.name == arg_name) {
                    return Err(ProtocolError::InvalidParams(format!("prompt {name} has no argument {arg_name}")));
                }
                catalog.completer()
            }
            Some("ref/resource") => catalog.completer(),
            _ => return Err(ProtocolError::InvalidParams("ref.type must be ref/prompt or ref/resource".into())),
        };
        let mut values = completer.map(|c| c(reference, arg_name, prefix)).unwrap_or_default();
        let total = values.len();
        values.truncate(100);
        let mut result = Map::new();
        result
            .insert("completion".into(), json!({ "values": values, "total": total, "hasMore": total > values.len() }));
        Ok(result)
    }
}

fn parse_level(params: &Map<String, Value>) -> Result<LogLevel, ProtocolError> {
    params.get("level").and_then(Value::as_str).and_then(LogLevel::parse).ok_or_else(|| {
        ProtocolError::InvalidParams(
            "level must be one of debug, info, notice, warning, error, critical, alert, emergency".into(),
        )
    })
}

/// Reads the level of a `logging/setLevel` request (for transports that keep it).
///
/// # Errors
/// `-32602` for a missing or unknown level.
pub fn set_level_param(params: Option<&Map<String, Value>>) -> Result<LogLevel, ProtocolError> {
    parse_level(params.unwrap_or(&Map::new()))
}

fn to_object<T: Serialize>(value: &T) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::Internal("result is not an object".into())),
        Err(e) => Err(ProtocolError::Internal(e.to_string())),
    }
}

fn page_result(key: &str, items: Value, next: Option<String>) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert(key.into(), items);
    if let Some(next) = next {
        result.insert("nextCursor".into(), json!(URL_SAFE_NO_PAD.encode(next.as_bytes())));
    }
    result
}

fn decode_cursor(params: &Map<String, Value>) -> Result<Option<String>, ProtocolError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(cursor)) => URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .map(Some)
            .ok_or_else(|| ProtocolError::InvalidParams(format!("invalid cursor {cursor:?}"))),
        Some(_) => Err(ProtocolError::InvalidParams("cursor must be a string".into())),
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}

impl McpServer {
    /// Checks the `Mcp-Param-*` headers of a stateless `tools/call` against its arguments: every
    /// argument the tool's schema marks with `x-mcp-header` and the body carries (not null) must
    /// come with its header, whose value (Base64 sentinel decoded) equals the argument.
    ///
    /// # Errors
    /// `-32020` (HTTP 400) for a missing, undecodable or mismatched header.
    pub fn check_param_headers<'h>(
        &self,
        request: &Request,
        header: impl Fn(&str) -> Option<&'h str>,
    ) -> Result<(), ProtocolError> {
        if request.method != "tools/call" {
            return Ok(());
        }
        let Some(params) = request.params.as_ref() else { return Ok(()) };
        let Some(name) = params.get("name").and_then(Value::as_str) else { return Ok(()) };
        let catalog = self.catalog.snapshot();
        let Some(tool) = catalog.tool(name) else { return Ok(()) };
        let Ok(header_params) = tool.header_params.as_ref() else { return Ok(()) };
        if header_params.is_empty() {
            return Ok(());
        }
        let empty = Map::new();
        let arguments = params.get("arguments").and_then(Value::as_object).unwrap_or(&empty);
        for param in header_params {
            let Some(value) = crate::headers::argument_at(arguments, &param.path) else { continue };
            let header_name = format!("{}{}", crate::headers::PARAM_PREFIX, param.name.to_ascii_lowercase());
            let raw = header(&header_name).ok_or_else(|| {
                ProtocolError::HeaderMismatch(format!(
                    "missing Mcp-Param-{} header for argument {}",
                    param.name,
                    param.path.join(".")
                ))
            })?;
            let decoded = crate::headers::decode_value(raw)
                .map_err(|e| ProtocolError::HeaderMismatch(format!("Mcp-Param-{}: {e}", param.name)))?;
            if !crate::headers::param_matches(&decoded, value, param.kind) {
                return Err(ProtocolError::HeaderMismatch(format!(
                    "Mcp-Param-{} header does not match argument {}",
                    param.name,
                    param.path.join(".")
                )));
            }
        }
        Ok(())
    }
}
