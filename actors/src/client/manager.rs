//! The manager API over client connections: keep server records (configuration document,
//! timeout, last known tools), hand each server one `ClientConnection` actor keyed by the
//! fingerprint of its configuration, and replace that actor when the configuration changes.
//!
//! OAuth: a manager given a credential store ([`ClientManager::with_credentials`]) answers
//! `401`s of every HTTP server with it (stored tokens only, refreshed; nobody is asked to
//! log in), except servers configured with an `Authorization` header and no `oauth` settings
//! (the header is their credential). A server whose entry has `oauth` settings (see
//! [`mcpd::client::config::OAuthSettings`]) gets them — its pre-registered client, its grant, its
//! scope — with the manager's store, or one kept in memory when the manager has none. Secrets
//! named by the settings are read when the connection is made, and never appear in a message.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor as _, Addr};
use dashmap::DashMap;
use mcpd::client::config::{
    timeout_seconds, ConfigDocument, OAuthGrant, OAuthSettings, SecretSource, ServerConfig, ServerEntry, StdioCommand,
    Transport,
};
use mcpd::client::list::{ListLimits, Listing};
use mcpd::client::task::task_wait_seconds;
use mcpd::jsonrpc::ClientCapabilities;
use mcpd::model::{Implementation, Tool};
use serde_json::{Map, Value};

use super::bound::ThreadBound;
use super::connection::{
    CallToolCancellable, CancelTask, ClientConnection, GetTask, Invalidate, List, Listable, SendRequest, StartToolCall,
};
use super::error::ClientError;
use super::handlers::{CallHandlers, ClientHandlers};
use super::link::{Link, LinkConfig, LinkShare, ToolName};
use super::oauth::{CredentialStore, Grant, MemoryStore, OAuthConfig, Registration};
use super::tool_call::{call_tool, forward_tool_call, pass_tool_call, CallOutcome, CallResult, CallTool, Passed};
use crate::counts::ActorCounts;

/// One configured remote server.
#[derive(Debug, Clone)]
pub struct ServerRecord {
    /// Its id.
    pub id: String,
    /// How it is reached: its configuration document (the source of truth of an HTTP server)
    /// or the command that starts a stdio server.
    pub server: ServerEntry,
    /// Connect and per-call time limit in seconds (clamped to 5–300).
    pub timeout_secs: u64,
    /// The tools last fetched by `test_and_refresh_tools`.
    pub tools: Vec<Tool>,
    /// How far one listing of this server may go (pages, entries).
    pub list_limits: ListLimits,
    /// How long a tool call waits for a task the server made of it, in seconds (clamped to
    /// 1–86400; default 3600).
    pub task_wait_secs: u64,
}

impl ServerRecord {
    /// A record for the server `server`, with the default timeout and no tools.
    pub fn with_server(id: impl Into<String>, server: ServerEntry) -> Self {
        ServerRecord {
            id: id.into(),
            server,
            timeout_secs: timeout_seconds(None),
            tools: Vec::new(),
            list_limits: ListLimits::default(),
            task_wait_secs: task_wait_seconds(None),
        }
    }

    /// A record for an HTTP server described by `document`.
    pub fn new(id: impl Into<String>, document: ConfigDocument) -> Self {
        ServerRecord::with_server(id, ServerEntry::Http(document))
    }

    /// A record for a stdio server started with `command`.
    pub fn stdio(id: impl Into<String>, command: StdioCommand) -> Self {
        ServerRecord::with_server(id, ServerEntry::Stdio(command))
    }

    /// The configuration document of an HTTP server (`None` for a stdio server).
    pub fn document(&self) -> Option<&ConfigDocument> {
        match &self.server {
            ServerEntry::Http(document) => Some(document),
            ServerEntry::Stdio(_) => None,
        }
    }

    /// Whether `other` configures the same server in every field: id, entry (a document compared
    /// as JSON, key order aside), time limits and listing bounds. The tools last fetched do not
    /// count. A reload keeps the connection of a record whose configuration is the same.
    pub fn same_configuration(&self, other: &ServerRecord) -> bool {
        let entry = match (&self.server, &other.server) {
            (ServerEntry::Http(a), ServerEntry::Http(b)) => a.as_object() == b.as_object(),
            (ServerEntry::Stdio(a), ServerEntry::Stdio(b)) => a == b,
            _ => false,
        };
        entry
            && self.id == other.id
            && self.timeout_secs == other.timeout_secs
            && self.list_limits == other.list_limits
            && self.task_wait_secs == other.task_wait_secs
    }

    fn connection_key(&self) -> String {
        let what = match &self.server {
            ServerEntry::Http(document) => document.fingerprint(),
            ServerEntry::Stdio(command) => format!("{command:?}"),
        };
        let ListLimits { max_pages, max_items } = self.list_limits;
        format!(
            "{what}/{}/{max_pages}/{max_items}/{}",
            timeout_seconds(Some(self.timeout_secs as i64)),
            self.task_wait().as_secs()
        )
    }

    fn task_wait(&self) -> Duration {
        Duration::from_secs(task_wait_seconds(Some(i64::try_from(self.task_wait_secs).unwrap_or(i64::MAX))))
    }

    fn link_config(&self, credentials: &Credentials) -> Result<LinkConfig, ClientError> {
        let timeout = Duration::from_secs(timeout_seconds(Some(self.timeout_secs as i64)));
        let document = match &self.server {
            ServerEntry::Http(document) => document,
            ServerEntry::Stdio(command) => {
                return Ok(LinkConfig {
                    name: self.id.clone(),
                    url: format!("stdio:{}", command.program),
                    sse: false,
                    pin: None,
                    headers: Vec::new(),
                    timeout,
                    command: Some(command.clone()),
                    list_limits: self.list_limits,
                    oauth: None,
                    task_wait: self.task_wait(),
                })
            }
        };
        let config = document.resolve().map_err(|e| ClientError::Config(e.to_string()))?;
        let oauth = credentials.oauth_config(&config)?;
        Ok(LinkConfig {
            name: config.name.clone(),
            url: config.url.clone(),
            sse: config.transport == Transport::Sse,
            pin: config.pin(),
            headers: config.headers.clone(),
            timeout,
            command: None,
            list_limits: self.list_limits,
            oauth,
            task_wait: self.task_wait(),
        })
    }
}

/// The credential stores of a manager.
#[derive(Debug, Clone)]
struct Credentials {
    /// OAuth for every HTTP server (see the module docs).
    store: Option<Arc<dyn CredentialStore>>,
    /// For servers with `oauth` settings when there is no `store`.
    memory: Arc<MemoryStore>,
}

impl Credentials {
    /// The OAuth configuration of a server's link, if it gets one.
    fn oauth_config(&self, config: &ServerConfig) -> Result<Option<OAuthConfig>, ClientError> {
        let store: Arc<dyn CredentialStore> = match (&self.store, &config.oauth) {
            (_, None) if config.auth_key().is_some() => return Ok(None),
            (Some(store), _) => store.clone(),
            (None, Some(_)) => self.memory.clone(),
            (None, None) => return Ok(None),
        };
        let settings = config.oauth.as_ref();
        let failed = |what: String| ClientError::Config(format!("server {}: {what}", config.name));
        let client_secret = match settings.and_then(|s| s.client_secret.as_ref()) {
            None => None,
            Some(SecretSource::Env(name)) => match std::env::var(name) {
                Ok(secret) if !secret.trim().is_empty() => Some(secret.trim().to_owned()),
                _ => return Err(failed(format!("oauth.clientSecretEnv: the environment variable {name} is not set"))),
            },
            Some(SecretSource::File(path)) => {
                let secret = read_secret_file(path).map_err(|e| failed(format!("oauth.clientSecretFile: {e}")))?;
                Some(secret)
            }
        };
        let grant = match settings {
            None => Grant::AuthorizationCode,
            Some(OAuthSettings { grant: OAuthGrant::AuthorizationCode, .. }) => Grant::AuthorizationCode,
            Some(OAuthSettings { private_key_file: Some(path), algorithm, .. }) => Grant::PrivateKeyJwt {
                private_key_pem: read_secret_file(path).map_err(|e| failed(format!("oauth.privateKeyFile: {e}")))?,
                algorithm: algorithm.clone().unwrap_or_else(|| mcpd::client::config::DEFAULT_OAUTH_ALGORITHM.into()),
            },
            Some(_) => Grant::ClientSecret,
        };
        Ok(Some(OAuthConfig {
            store,
            user_agent: None,
            registration: Registration {
                client_id: settings.and_then(|s| s.client_id.clone()),
                client_secret,
                client_metadata_url: None,
                client_name: "mcpd".into(),
            },
            grant,
            scope: settings.and_then(|s| s.scope.clone()),
        }))
    }
}

/// The largest secret or key file read, in bytes.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// A secret or key file's content, trimmed; errors name the file, never its content.
fn read_secret_file(path: &str) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SECRET_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| format!("cannot read {path}: {e}"))?;
    if text.len() as u64 > MAX_SECRET_FILE_BYTES {
        return Err(format!("{path} is larger than {MAX_SECRET_FILE_BYTES} bytes"));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("{path} is empty"));
    }
    Ok(text.to_owned())
}

/// A record with what every call needs from it, worked out once when it is stored.
#[derive(Debug)]
struct Stored {
    record: ServerRecord,
    /// [`ServerRecord::connection_key`].
    key: String,
    /// The configured server name (HTTP records), for [`CallResult::server_name`].
    server_name: Option<String>,
}

impl Stored {
    fn new(record: ServerRecord) -> Stored {
        let key = record.connection_key();
        let server_name = record.document().and_then(|document| document.resolve().ok()).map(|config| config.name);
        Stored { record, key, server_name }
    }
}

/// A server's connection: its configuration key, its actor, what its link publishes to
/// satellites.
type Connection = (String, Addr<ClientConnection>, Arc<LinkShare>);

/// A call's own `_meta` and handlers.
type CallExtras = (Option<Map<String, Value>>, Option<CallHandlers>);

/// A gateway's plain call started on a satellite ([`ClientManager::start_forward`]).
pub(crate) struct StartedForward {
    call: ThreadBound,
    /// Whether the connection answers a `401` with OAuth.
    oauth: bool,
}

/// A call on this thread's satellite, its panic contained, as a future the caller may hold on
/// any thread ([`ThreadBound`]).
fn contained_call(call: impl std::future::Future<Output = Result<Passed, ClientError>> + 'static) -> ThreadBound {
    // Mapped, not awaited in another async block: that block would hold the call twice over
    // (captured, then contained), and its size is copied into the table's box.
    ThreadBound::new(futures_util::FutureExt::map(
        crate::panics::contain(crate::panics::Site::Client, call),
        |outcome| outcome.unwrap_or_else(|panic| Err(ClientError::from(panic))),
    ))
}

/// Numbers managers, so that a thread's satellites are told apart by manager.
static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// A satellite link on this thread, and the share of the primary it follows.
struct Satellite {
    share: Arc<LinkShare>,
    link: Rc<Link>,
}

thread_local! {
    /// This thread's satellites, by manager serial and server id.
    static SATELLITES: RefCell<HashMap<u64, HashMap<String, Satellite>>> = RefCell::new(HashMap::new());
}

/// Client connections by server id.
///
/// A server whose connection speaks the stateless 2026-07-28 HTTP wire is also called from
/// *satellite* links (see [`LinkShare`]): one per server on each thread that calls it (an
/// actix-web worker of a gateway, say), so a call runs on the caller's thread instead of
/// hopping to the connection actor's and back. Everything else — negotiation, listings, other
/// wires, OAuth challenges, tasks' follow-up requests — goes through the connection actor.
#[derive(Debug)]
pub struct ClientManager {
    records: DashMap<String, Stored>,
    connections: DashMap<String, Connection>,
    serial: u64,
    handlers: ClientHandlers,
    client_info: Implementation,
    counts: Arc<ActorCounts>,
    credentials: Credentials,
}

impl ClientManager {
    /// A manager whose connections answer server requests with `handlers`.
    pub fn new(handlers: ClientHandlers, client_info: Implementation, counts: Arc<ActorCounts>) -> Self {
        crate::panics::install();
        let credentials = Credentials { store: None, memory: Arc::new(MemoryStore::default()) };
        ClientManager {
            records: DashMap::new(),
            connections: DashMap::new(),
            serial: NEXT_MANAGER.fetch_add(1, Ordering::Relaxed),
            handlers,
            client_info,
            counts,
            credentials,
        }
    }

    /// The same manager answering `401`s with OAuth and the credentials in `store` (see the
    /// module docs). Set before the first call: open connections keep what they had.
    pub fn with_credentials(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.credentials.store = Some(store);
        self
    }

    /// Adds or replaces a server record. A changed configuration takes effect at the next call:
    /// the old connection is closed and a new one opened.
    pub fn upsert(&self, record: ServerRecord) {
        self.records.insert(record.id.clone(), Stored::new(record));
    }

    /// A copy of a server record.
    pub fn record(&self, id: &str) -> Option<ServerRecord> {
        self.records.get(id).map(|r| r.value().record.clone())
    }

    /// Every record's id.
    pub fn ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.key().clone()).collect()
    }

    /// Removes a server and closes its connection.
    pub async fn remove(&self, id: &str) {
        self.records.remove(id);
        self.invalidate(id).await;
    }

    /// Closes the server's connection (its session is DELETEd); the next call reconnects.
    pub async fn invalidate(&self, id: &str) {
        if let Some((_, (_, addr, _))) = self.connections.remove(id) {
            let _ = addr.send(Invalidate).await;
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        for id in self.connections.iter().map(|e| e.key().clone()).collect::<Vec<_>>() {
            self.invalidate(&id).await;
        }
    }

    fn connection(&self, record: &ServerRecord) -> Result<Addr<ClientConnection>, ClientError> {
        let key = record.connection_key();
        if let Some(entry) = self.connections.get(&record.id) {
            let (existing_key, addr, _) = entry.value();
            if *existing_key == key && addr.connected() {
                return Ok(addr.clone());
            }
        }
        let config = record.link_config(&self.credentials)?;
        let share = LinkShare::new(config.oauth.is_some());
        let addr = ClientConnection::primary(
            config,
            self.handlers_for(&record.id),
            self.client_info.clone(),
            self.counts.clone(),
            share.clone(),
        )
        .start();
        if let Some((_, old, _)) = self.connections.insert(record.id.clone(), (key, addr.clone(), share)) {
            // The configuration changed: the old connection closes its streams and session.
            old.do_send(Invalidate);
        }
        Ok(addr)
    }

    /// The handlers of the connections to server `id`: its notifications reach the hook under
    /// the record's id (two servers' documents may carry the same name).
    fn handlers_for(&self, id: &str) -> ClientHandlers {
        let mut handlers = self.handlers.clone();
        if let Some(hook) = handlers.notifications.take() {
            let id = id.to_owned();
            handlers.notifications = Some(Arc::new(move |_name: &str, method: &str, params: &Value| {
                hook(&id, method, params);
            }));
        }
        handlers
    }

    /// The live connection of a server and its configured name, without copying its record
    /// when the connection is up to date (the path of every call).
    fn addr(&self, id: &str) -> Result<(Addr<ClientConnection>, Option<String>), ClientError> {
        let (key, name) = {
            let stored = self.records.get(id).ok_or_else(|| ClientError::UnknownServer(id.to_owned()))?;
            (stored.key.clone(), stored.server_name.clone())
        };
        if let Some(entry) = self.connections.get(id) {
            let (existing_key, addr, _) = entry.value();
            if *existing_key == key && addr.connected() {
                return Ok((addr.clone(), name));
            }
        }
        let record = self.require(id)?;
        Ok((self.connection(&record)?, name))
    }

    /// This thread's satellite of the server's connection, when calls may take one: the
    /// connection is up to date, on the stateless wire, and this thread is an actix arbiter
    /// (a satellite's HTTP client needs one). Made on first use; replaced when the connection
    /// is.
    fn satellite(&self, id: &str) -> Option<(Rc<Link>, Arc<LinkShare>)> {
        actix_rt::Arbiter::try_current()?;
        let share = {
            let stored = self.records.get(id)?;
            let entry = self.connections.get(id)?;
            let (key, addr, share) = entry.value();
            if *key != stored.key || !addr.connected() || !share.stateless() {
                return None;
            }
            share.clone()
        };
        let found = SATELLITES.with(|satellites| {
            let satellites = satellites.borrow();
            let satellite = satellites.get(&self.serial)?.get(id)?;
            Arc::ptr_eq(&satellite.share, &share).then(|| satellite.link.clone())
        });
        if let Some(link) = found {
            return Some((link, share));
        }
        let config = self.record(id)?.link_config(&self.credentials).ok()?;
        let link = Link::satellite(config, self.handlers_for(id), self.client_info.clone(), share.clone());
        SATELLITES.with(|satellites| {
            let mut satellites = satellites.borrow_mut();
            let mine = satellites.entry(self.serial).or_default();
            // Servers removed since: their satellites go (stateless links hold no session).
            mine.retain(|server, _| self.connections.contains_key(server));
            mine.insert(id.to_owned(), Satellite { share: share.clone(), link: link.clone() });
        });
        Some((link, share))
    }

    fn require(&self, id: &str) -> Result<ServerRecord, ClientError> {
        self.record(id).ok_or_else(|| ClientError::UnknownServer(id.to_owned()))
    }

    /// Lists every tool of the server and stores the list in its record, unless the record's
    /// configuration changed while the list was fetched.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; [`ClientError::ConfigChanged`].
    pub async fn test_and_refresh_tools(&self, id: &str) -> Result<Vec<Tool>, ClientError> {
        self.refresh_tools(id).await.map(|listing| listing.items)
    }

    /// As [`ClientManager::test_and_refresh_tools`], with what the listing skipped and why.
    ///
    /// # Errors
    /// As [`ClientManager::test_and_refresh_tools`].
    pub async fn refresh_tools(&self, id: &str) -> Result<Listing<Tool>, ClientError> {
        let record = self.require(id)?;
        let before = record.connection_key();
        let listing = self.connection(&record)?.send(List::<Tool>::new()).await.map_err(|_| ClientError::Closed)??;
        let mut current = self.records.get_mut(id).ok_or(ClientError::ConfigChanged)?;
        let text = |record: &ServerRecord| record.document().map(ConfigDocument::text);
        if current.key != before || text(&current.record) != text(&record) {
            return Err(ClientError::ConfigChanged);
        }
        current.record.tools = listing.items.clone();
        Ok(listing)
    }

    /// Lists every entry of one kind — `Prompt`, `Resource`, `ResourceTemplate` (or `Tool`,
    /// without storing them) — with what the listing skipped and why.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; a listing past its bounds.
    pub async fn list<T: Listable>(&self, id: &str) -> Result<Listing<T>, ClientError> {
        let (connection, _) = self.addr(id)?;
        connection.send(List::<T>::new()).await.map_err(|_| ClientError::Closed)?
    }

    /// Calls a tool. A tool's own failure is `Ok` with `is_error: true`. Dropping the returned
    /// future cancels the call (`notifications/cancelled` in a session; the stream closes on the
    /// stateless wire). A task the server makes of the call (2026-07-28, the tasks extension) is
    /// waited for, up to the record's `task_wait_secs`, and its result returned as if the call
    /// had answered it; dropping the future meanwhile cancels the task (`tasks/cancel`).
    ///
    /// # Errors
    /// Transport, protocol and configuration failures.
    pub async fn call_tool(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, ClientError> {
        self.call_tool_with(id, tool, arguments, None, None).await
    }

    /// As [`ClientManager::call_tool`], with the request's own `_meta` (its `traceparent` and
    /// `tracestate` are also sent as HTTP headers to an HTTP server) and handlers for this call
    /// only: the server's progress (a progress token is added to `_meta` when
    /// `handlers.progress` is set), log messages and requests during the call reach them when
    /// they belong to it (see [`CallHandlers`]); the rest goes to the manager's handlers. With
    /// `handlers.relay_input`, a stateless `input_required` round is returned as the result (its
    /// `raw` has `resultType: "input_required"`), and `handlers.resume` carries the caller's
    /// answers back. A stateless call runs on this thread's satellite link when there is one.
    ///
    /// # Errors
    /// As [`ClientManager::call_tool`].
    pub async fn call_tool_with(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Option<Map<String, Value>>,
        handlers: Option<CallHandlers>,
    ) -> Result<CallResult, ClientError> {
        let passed = self.call(id, tool, arguments, (meta, handlers), false).await?;
        Ok(passed.into_call_result(tool))
    }

    /// As [`ClientManager::call_tool_with`] for the gateway, with its handlers: on a satellite,
    /// the usual answer comes back as the result the gateway passes on ([`Passed::Result`]),
    /// never built as a JSON value.
    pub(crate) async fn pass_tool_call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        meta: Option<Map<String, Value>>,
        handlers: CallHandlers,
    ) -> Result<Passed, ClientError> {
        self.call(id, tool, arguments, (meta, Some(handlers)), true).await
    }

    /// A call on this thread's satellite when there is one, else through the connection;
    /// `passing` as in [`ClientManager::pass_tool_call`].
    async fn call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        extras: CallExtras,
        passing: bool,
    ) -> Result<Passed, ClientError> {
        // The connection's path is boxed: its future is large, and a call on a satellite (the
        // gateway's usual one, whose future is moved and boxed along the call) never needs it.
        let (call, retry) = match self.start_on_satellite(id, tool, arguments, extras, passing) {
            Ok(started) => started,
            Err((arguments, extras)) => {
                return Box::pin(self.call_on_connection(id, tool, arguments, extras)).await.map(Passed::Raw)
            }
        };
        self.finish(id, tool, call, retry).await
    }

    /// Starts a gateway's plain call ([`mcpd::catalog::ToolLane`]) of `tool` on this thread's
    /// satellite of server `id`, when there is one on the stateless wire: the request is written
    /// now (`meta`, the caller's trace context, in its `_meta`; `capabilities`, the caller's,
    /// declared for it), the usual answer comes back as its text ([`Passed::Text`]). Finish it
    /// with [`ClientManager::finish_forward`]. `None`: the call goes the usual way.
    pub(crate) fn start_forward(
        &self,
        id: &str,
        tool: &ToolName,
        arguments: &Map<String, Value>,
        meta: Option<&Map<String, Value>>,
        capabilities: Option<&ClientCapabilities>,
    ) -> Option<StartedForward> {
        let (link, share) = self.satellite(id)?;
        let none = Value::Object(Map::new());
        let caller = capabilities.map_or(&none, ClientCapabilities::value);
        let call = match link.forward_request(tool, arguments, meta, caller) {
            Ok(request) => contained_call(forward_tool_call(link, request, tool.as_str().to_owned())),
            Err(error) => ThreadBound::new(std::future::ready(Err(error))),
        };
        Some(StartedForward { call, oauth: share.oauth() })
    }

    /// Waits for a call started by [`ClientManager::start_forward`]: `None` when the server
    /// refused it (`401`/`403`, so it was not processed) and the connection may answer that
    /// with OAuth — the call goes the usual way then, which sends it through the connection
    /// (no copy of every call's arguments is kept for that rare case).
    pub(crate) async fn finish_forward(
        &self,
        id: &str,
        started: StartedForward,
    ) -> Option<Result<Passed, ClientError>> {
        match started.call.await {
            Err(error) if started.oauth && error.is_unauthorized() => None,
            Ok(Passed::Raw(result)) => Some(self.named(id, Ok(result)).map(Passed::Raw)),
            outcome => Some(outcome),
        }
    }

    /// Waits for a call on a satellite: a refusal with OAuth is sent again through the
    /// connection; a result read whole is named as the server is configured.
    async fn finish(
        &self,
        id: &str,
        tool: &str,
        call: ThreadBound,
        retry: Option<(Map<String, Value>, CallExtras)>,
    ) -> Result<Passed, ClientError> {
        let outcome = call.await;
        match (outcome, retry) {
            // With OAuth the connection answers a 401 and the call is sent again through it
            // (whatever the refusal's body: a JSON-RPC error, an OAuth error, nothing).
            (Err(error), Some((arguments, extras))) if error.is_unauthorized() => {
                Box::pin(self.call_on_connection(id, tool, arguments, extras)).await.map(Passed::Raw)
            }
            (Ok(Passed::Raw(result)), _) => self.named(id, Ok(result)).map(Passed::Raw),
            (outcome, _) => outcome,
        }
    }

    /// Starts the call on this thread's satellite, when there is one (else the arguments and
    /// extras come back): the call's future (dropping it aborts the call, which closes its
    /// stream) and, when the connection has OAuth, the arguments again for a retry through it.
    #[allow(
        clippy::type_complexity,
        clippy::result_large_err,
        reason = "private pairs; the Err is the call itself, handed back"
    )]
    fn start_on_satellite(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        extras: CallExtras,
        passing: bool,
    ) -> Result<(ThreadBound, Option<(Map<String, Value>, CallExtras)>), (Map<String, Value>, CallExtras)> {
        let Some((link, share)) = self.satellite(id) else { return Err((arguments, extras)) };
        let retry = share.oauth().then(|| (arguments.clone(), extras.clone()));
        let call = CallTool { name: tool.to_owned(), arguments };
        let (meta, handlers) = extras;
        // The link is this thread's: the call waits in this thread's table, so the caller's
        // future stays `Send`; polling its handle polls the call when the call was woken.
        let call = async move {
            match handlers {
                Some(handlers) if passing => pass_tool_call(link, call, meta, handlers).await,
                handlers => call_tool(link, call, None, meta, handlers).await.map(Passed::Raw),
            }
        };
        Ok((contained_call(call), retry))
    }

    /// The configured name of the server in a call's result.
    fn named(&self, id: &str, outcome: Result<CallResult, ClientError>) -> Result<CallResult, ClientError> {
        let mut result = outcome?;
        if let Some(name) = self.records.get(id).and_then(|stored| stored.server_name.clone()) {
            result.server_name = name;
        }
        Ok(result)
    }

    /// [`ClientManager::call_tool_with`] through the connection actor.
    async fn call_on_connection(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        extras: CallExtras,
    ) -> Result<CallResult, ClientError> {
        let (connection, _) = self.addr(id)?;
        // Held until the answer arrives; dropped with this future, which cancels the call.
        let (_cancel_on_drop, cancel) = tokio::sync::oneshot::channel::<()>();
        let (meta, handlers) = extras;
        let call = CallToolCancellable { call: CallTool { name: tool.to_owned(), arguments }, cancel, meta, handlers };
        let outcome = connection.send(call).await.map_err(|_| ClientError::Closed)?;
        self.named(id, outcome)
    }

    /// Calls a tool without waiting for a task: the result when the server answers at once,
    /// else the task it made of the call (see [`ClientManager::get_task`],
    /// [`ClientManager::cancel_task`]). Dropping the future does not cancel a task already made.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures.
    pub async fn start_tool_call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutcome, ClientError> {
        let (connection, server_name) = self.addr(id)?;
        let call = StartToolCall { call: CallTool { name: tool.to_owned(), arguments } };
        let mut outcome = connection.send(call).await.map_err(|_| ClientError::Closed)??;
        if let (CallOutcome::Result(result), Some(name)) = (&mut outcome, server_name) {
            result.server_name = name;
        }
        Ok(outcome)
    }

    /// A task's state (`tasks/get`).
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; the server's JSON-RPC error (`-32602`
    /// for a task it does not know); [`ClientError::Task`] when the server does not speak
    /// 2026-07-28.
    pub async fn get_task(&self, id: &str, task_id: &str) -> Result<mcpd::tasks::DetailedTask, ClientError> {
        let (connection, _) = self.addr(id)?;
        connection.send(GetTask { task_id: task_id.to_owned() }).await.map_err(|_| ClientError::Closed)?
    }

    /// Asks the server to cancel a task (`tasks/cancel`: acknowledged at once; the task ends
    /// `cancelled` unless it finished first).
    ///
    /// # Errors
    /// As [`ClientManager::get_task`].
    pub async fn cancel_task(&self, id: &str, task_id: &str) -> Result<(), ClientError> {
        let (connection, _) = self.addr(id)?;
        connection.send(CancelTask { task_id: task_id.to_owned() }).await.map_err(|_| ClientError::Closed)?
    }

    /// Any other request; its result.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures, and the server's JSON-RPC errors.
    pub async fn request(&self, id: &str, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        let (connection, _) = self.addr(id)?;
        let request = SendRequest { method: method.to_owned(), params };
        connection.send(request).await.map_err(|_| ClientError::Closed)?
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(node: serde_json::Value) -> ServerConfig {
        ConfigDocument::from_value(node).unwrap().resolve().unwrap()
    }

    fn credentials(store: bool) -> Credentials {
        let shared: Arc<dyn CredentialStore> = Arc::new(MemoryStore::default());
        Credentials { store: store.then_some(shared), memory: Arc::new(MemoryStore::default()) }
    }

    #[test]
    fn oauth_is_on_with_a_store_or_settings_and_off_for_a_configured_authorization_header() {
        let plain = config(json!({"url": "https://a.example/mcp"}));
        assert!(credentials(false).oauth_config(&plain).unwrap().is_none(), "no store, no settings: 401 is an error");
        let on = credentials(true).oauth_config(&plain).unwrap().unwrap();
        assert!(matches!(on.grant, Grant::AuthorizationCode) && on.user_agent.is_none());
        assert_eq!((on.registration.client_id, on.scope), (None, None));
        let keyed = config(json!({"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer k"}}));
        assert!(credentials(true).oauth_config(&keyed).unwrap().is_none(), "the header is the credential");
        let keyed_with_settings = config(json!({
            "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer k"}, "oauth": {"clientId": "c"}
        }));
        assert!(credentials(false).oauth_config(&keyed_with_settings).unwrap().is_some());
    }

    #[test]
    fn settings_become_the_registration_grant_and_scope_with_secrets_read_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "  s3cret \n").unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap();
        let cases = credentials(false);
        let secret_config = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "gw", "clientSecretFile": secret, "grant": "client_credentials", "scope": "a b"
        }}));
        let secret_oauth = cases.oauth_config(&secret_config).unwrap().unwrap();
        assert!(matches!(secret_oauth.grant, Grant::ClientSecret));
        assert_eq!(secret_oauth.registration.client_id.as_deref(), Some("gw"));
        assert_eq!(secret_oauth.registration.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(secret_oauth.scope.as_deref(), Some("a b"));
        assert!(!format!("{secret_oauth:?}").contains("s3cret"));

        let key_config = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "gw", "privateKeyFile": key, "grant": "client_credentials", "algorithm": "RS256"
        }}));
        match cases.oauth_config(&key_config).unwrap().unwrap().grant {
            Grant::PrivateKeyJwt { private_key_pem, algorithm } => {
                assert!(
                    private_key_pem.starts_with("-----BEGIN PRIVATE KEY-----") && private_key_pem.ends_with("-----")
                );
                assert_eq!(algorithm, "RS256");
            }
            other => panic!("{other:?}"),
        }

        let preregistered = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "app", "clientSecretFile": secret
        }}));
        let oauth = cases.oauth_config(&preregistered).unwrap().unwrap();
        assert!(matches!(oauth.grant, Grant::AuthorizationCode));
        assert_eq!(oauth.registration.client_secret.as_deref(), Some("s3cret"));
    }
}
