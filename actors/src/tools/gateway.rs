//! The gateway: the tools of remote MCP servers (a desktop-host `mcpServers` file: Streamable
//! HTTP, HTTP+SSE or stdio entries) re-exported as tools of this server, called through the
//! client's `ClientConnection` actors.
//!
//! Names: `<server>__<tool>`, where `<server>` is the entry's name lowered to `[a-z0-9_-]` with
//! runs of other characters (and of `_`) collapsed to one `_`, and made unique with `_2`, `_3`…
//! The first `__` of an exported name therefore always separates server from tool, so no two
//! remote tools can collide. A remote that is down makes its tools fail with `isError: true` and
//! the reason; a remote's `notifications/tools/list_changed` refreshes its tools here (and so
//! reaches this server's own clients).
//!
//! Tasks (2026-07-28): a remote that answers a call with a task is followed by the client
//! (`tasks/get` until it ends; the gateway's caller sees a normal result), and exported tools
//! declare `optional` task support, so that mcpd itself may answer a long call with a task of
//! its own; cancelling that task drops the gateway's call, and dropping it sends `tasks/cancel`
//! to the remote.
//!
//! Live reload ([`Gateway::apply`]): a servers file read again is compared with the remotes in
//! force by server name ([`diff_servers`]). A removed remote's tools leave the catalog, its
//! connection closes (its session is DELETEd, a stdio child stopped) and its metrics series go;
//! an added one is connected and exported as at startup (and retried while unreachable); a
//! changed one (any field differs) is replaced — a new connection, its tools listed again — and
//! an unchanged one keeps its connection and session. Kept remotes keep their prefixes; new ones
//! get the first free one. Clients hear `tools/list_changed` from the live catalog.
//!
//! A remote is untrusted: its listing follows the client's rules (entries that break them are
//! skipped and shown in its health, the rest exported; a listing of the wrong shape, or past its
//! bounds, marks it down and is retried), an exported name must itself be a valid tool name, and
//! every refresh, retry and call is contained ([`crate::panics`]).
//!
//! Beside the tools, each remote's prompts, resources and resource templates are federated
//! (`federation`): prompts as `<server>__<prompt>`, resources and templates under their own
//! URIs (the first remote in the file that claims a URI serves it), with completions,
//! subscriptions and the remotes' `list_changed` / `resources/updated` notifications.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use mcpd::catalog::{BoxFuture, LaneCall, LaneResult, LiveCatalog, ToolError, ToolLane};
use mcpd::client::config::{ConfigError, ServerEntry, ServersFile, Transport};
use mcpd::client::list::check_tool_name;
use mcpd::config::ToolFilter;
use mcpd::context::{LogLevel, ToolContext};
use mcpd::jsonrpc::{ErrorCode, ErrorObject, TRACEPARENT, TRACESTATE};
use mcpd::model::{meta_keys, CallToolResult, Implementation, Tool};
use mcpd::mrtr::{capability_for, relayed_retry, InputRequired};
use mcpd::tasks::TaskSupport;
use serde_json::{json, Map, Value};

use crate::client::oauth::CredentialStore;
use crate::client::{
    CallHandlers, ClientError, ClientHandlers, ClientManager, Handler, HandlerFuture, NotificationHook,
    NotificationSink, Passed, RequestAnswerer, ServerRecord, ToolName,
};
use crate::counts::ActorCounts;
use crate::panics::{self, Site};
use crate::tools::remote_metrics::RemoteMetrics;

mod federation;

use federation::Federation;

/// The separator between server and tool in exported names.
pub const SEPARATOR: &str = "__";

/// What the gateway knows of one remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHealth {
    /// The server's name in the file.
    pub name: String,
    /// The prefix of its exported tools.
    pub prefix: String,
    /// `stdio`, `streamable_http` or `sse`.
    pub transport: String,
    /// Whether the last contact succeeded.
    pub up: bool,
    /// Tools currently exported.
    pub tools: usize,
    /// Prompts currently exported (`<prefix>__<prompt>`).
    pub prompts: usize,
    /// Resources it serves here (URIs kept).
    pub resources: usize,
    /// Resource templates it serves here.
    pub templates: usize,
    /// The URIs, templates and prompts it claims that another serves (an earlier remote in the
    /// file, or this server itself), as messages (the first ten; then how many more).
    pub collisions: Vec<String>,
    /// The last error, if the last contact failed.
    pub error: Option<String>,
    /// The entries of its last listings that were left out, and why (the first
    /// [`SKIPPED_SHOWN`] of its tools, then how many more; then the first of its prompts,
    /// resources and templates, or why listing them failed).
    pub skipped: Vec<String>,
}

/// How many skipped entries a remote's health lists.
pub const SKIPPED_SHOWN: usize = 10;

/// Reads a servers file into records (one per entry; stdio entries start a child). Which
/// entries are stdio servers is the core's one rule (`mcpd::client::config`): an explicit
/// `type` / `transport` decides, else an entry with `command` (or `args`) is one.
///
/// # Errors
/// A message naming the file or the entry that cannot be used.
pub fn load_servers(path: &Path) -> Result<Vec<ServerRecord>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = match ServersFile::parse(&text) {
        Ok(file) if file.has_mcp_servers() => file,
        Err(ConfigError::Json(e)) => return Err(format!("{} is not valid JSON: {e}", path.display())),
        _ => return Err(format!("{} has no mcpServers object", path.display())),
    };
    let mut records = Vec::new();
    for (name, server) in file.entries() {
        let server = server.map_err(|e| format!("server {name}: {e}"))?;
        if let ServerEntry::Http(document) = &server {
            document.resolve().map_err(|e| format!("server {name}: {e}"))?;
        }
        let (timeout_secs, list_limits) = (file.timeout_seconds(&name), file.list_limits(&name));
        let task_wait_secs = file.task_wait_seconds(&name);
        records.push(ServerRecord {
            timeout_secs,
            list_limits,
            task_wait_secs,
            ..ServerRecord::with_server(name, server)
        });
    }
    Ok(records)
}

/// The prefix for a server name: `[a-z0-9_-]`, no `__`, unique among `taken`.
pub fn prefix_for(name: &str, taken: &[String]) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let base = out.trim_matches('_').to_owned();
    let base = if base.is_empty() { "server".to_owned() } else { base };
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

#[derive(Debug)]
struct Remote {
    id: String,
    prefix: String,
}

/// How a servers file read again differs from the remotes in force, by server name.
#[derive(Debug, Default)]
pub struct ServersDiff {
    /// Servers no longer in the file.
    pub removed: Vec<String>,
    /// New servers, in file order.
    pub added: Vec<ServerRecord>,
    /// Servers whose configuration changed (any field), in file order.
    pub changed: Vec<ServerRecord>,
    /// Servers configured exactly as before.
    pub unchanged: Vec<String>,
    /// Every server of the new file, in file order.
    pub order: Vec<String>,
}

impl ServersDiff {
    /// Whether nothing changed (the order aside).
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty() && self.changed.is_empty()
    }
}

impl std::fmt::Display for ServersDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |records: &[ServerRecord]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>().join(", ");
        write!(
            f,
            "added [{}], removed [{}], changed [{}], unchanged [{}]",
            names(&self.added),
            self.removed.join(", "),
            names(&self.changed),
            self.unchanged.join(", ")
        )
    }
}

/// Compares the records in force (`old`) with those of the file read again (`new`), by id.
pub fn diff_servers(old: &[ServerRecord], new: Vec<ServerRecord>) -> ServersDiff {
    let mut diff = ServersDiff {
        removed: old.iter().filter(|o| !new.iter().any(|n| n.id == o.id)).map(|o| o.id.clone()).collect(),
        order: new.iter().map(|n| n.id.clone()).collect(),
        ..ServersDiff::default()
    };
    for record in new {
        match old.iter().find(|o| o.id == record.id) {
            None => diff.added.push(record),
            Some(before) if before.same_configuration(&record) => diff.unchanged.push(record.id),
            Some(_) => diff.changed.push(record),
        }
    }
    diff
}

/// The gateway over a set of remotes.
pub struct Gateway {
    manager: ClientManager,
    live: Arc<LiveCatalog>,
    filter: ToolFilter,
    /// The remotes in force, in file order (changed by [`Gateway::apply`]).
    remotes: Mutex<Vec<Remote>>,
    health: Mutex<HashMap<String, RemoteHealth>>,
    /// The remotes' prompts, resources and templates this server serves.
    federation: Mutex<Federation>,
    /// Per-remote call latency and errors by kind (`/metrics`).
    remote_metrics: Arc<RemoteMetrics>,
    /// Held while a reload is applied: one at a time, in order.
    reloading: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("remotes", &self.remote_ids().len()).finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway exporting the tools of `records` into `live` (tools the filter refuses are not
    /// exported). Call [`Gateway::refresh_all`] to fetch them.
    pub fn new(
        records: Vec<ServerRecord>,
        live: Arc<LiveCatalog>,
        filter: ToolFilter,
        counts: Arc<ActorCounts>,
    ) -> Arc<Gateway> {
        Gateway::with_credentials(records, live, filter, counts, None)
    }

    /// As [`Gateway::new`], answering the remotes' `401`s with OAuth and the credentials in
    /// `store` (tokens `mcpd login` stored, refreshed as needed; nobody is asked to log in).
    /// Remotes with `oauth` settings use them either way (see [`ClientManager`]).
    pub fn with_credentials(
        records: Vec<ServerRecord>,
        live: Arc<LiveCatalog>,
        filter: ToolFilter,
        counts: Arc<ActorCounts>,
        store: Option<Arc<dyn CredentialStore>>,
    ) -> Arc<Gateway> {
        let gateway = Arc::new_cyclic(|weak: &std::sync::Weak<Gateway>| {
            let hook_target = weak.clone();
            let hook: NotificationHook = Arc::new(move |server, method, params| {
                if let Some(gateway) = hook_target.upgrade() {
                    gateway.remote_notification(server, method, params);
                }
            });
            let handlers = unattributed_handlers(hook);
            let mut manager =
                ClientManager::new(handlers, Implementation::new("mcpd-gateway", env!("CARGO_PKG_VERSION")), counts);
            if let Some(store) = store {
                manager = manager.with_credentials(store);
            }
            let gateway = Gateway {
                manager,
                live,
                filter,
                remotes: Mutex::new(Vec::new()),
                health: Mutex::default(),
                federation: Mutex::default(),
                remote_metrics: Arc::new(RemoteMetrics::default()),
                reloading: tokio::sync::Mutex::new(()),
            };
            for record in records {
                gateway.add_remote(record);
            }
            gateway
        });
        gateway.install_federation();
        gateway
    }

    /// Every remote's id, in file order.
    pub fn remote_ids(&self) -> Vec<String> {
        self.remotes.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|r| r.id.clone()).collect()
    }

    /// Takes a remote into account (not contacted yet; [`Gateway::refresh`] lists its tools):
    /// its prefix is the first free one, its metrics series and health are registered.
    fn add_remote(&self, record: ServerRecord) {
        self.remote_metrics.register(&record.id);
        let prefix = {
            let mut remotes = self.remotes.lock().unwrap_or_else(PoisonError::into_inner);
            let taken: Vec<String> = remotes.iter().map(|r| r.prefix.clone()).collect();
            let prefix = prefix_for(&record.id, &taken);
            remotes.push(Remote { id: record.id.clone(), prefix: prefix.clone() });
            prefix
        };
        self.reset_health(&record, prefix);
        self.manager.upsert(record);
    }

    /// A remote's health as before its first contact.
    fn reset_health(&self, record: &ServerRecord, prefix: String) {
        let transport = match &record.server {
            ServerEntry::Stdio(_) => "stdio",
            ServerEntry::Http(document) => match document.resolve().map(|c| c.transport) {
                Ok(Transport::Sse) => "sse",
                _ => "streamable_http",
            },
        };
        let health = RemoteHealth {
            name: record.id.clone(),
            prefix,
            transport: transport.to_owned(),
            up: false,
            tools: 0,
            prompts: 0,
            resources: 0,
            templates: 0,
            collisions: Vec::new(),
            error: Some("not contacted yet".into()),
            skipped: Vec::new(),
        };
        self.health.lock().unwrap_or_else(PoisonError::into_inner).insert(record.id.clone(), health);
    }

    /// Puts the remotes of a servers file read again in force (see the module documentation):
    /// removed ones are forgotten and disconnected, added ones connected and listed, changed
    /// ones replaced, unchanged ones left alone with their connection. Returns what changed.
    pub async fn apply(self: &Arc<Self>, records: Vec<ServerRecord>) -> ServersDiff {
        let _one_at_a_time = self.reloading.lock().await;
        let old: Vec<ServerRecord> = self.remote_ids().iter().filter_map(|id| self.manager.record(id)).collect();
        let diff = diff_servers(&old, records);
        for id in &diff.removed {
            self.remotes.lock().unwrap_or_else(PoisonError::into_inner).retain(|r| r.id != *id);
            self.forget_remote(id);
            self.manager.remove(id).await;
        }
        for record in &diff.changed {
            self.reset_health(record, self.prefix_of(&record.id).unwrap_or_default());
            self.manager.upsert(record.clone());
            // A new connection for the new configuration (the old session is DELETEd).
            self.manager.invalidate(&record.id).await;
        }
        for record in &diff.added {
            self.add_remote(record.clone());
        }
        self.remotes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sort_by_key(|r| diff.order.iter().position(|id| *id == r.id).unwrap_or(usize::MAX));
        let relist: Vec<&str> = diff.changed.iter().chain(&diff.added).map(|r| r.id.as_str()).collect();
        futures_util::future::join_all(relist.into_iter().map(|id| self.refresh(id))).await;
        diff
    }

    /// Reads the servers file at `path` again and puts it in force ([`Gateway::apply`]). A file
    /// that cannot be read, is not valid JSON or has an entry that cannot be used changes
    /// nothing: one log line names the file and why, and the remotes in force stay.
    ///
    /// # Errors
    /// Why the file was not used.
    pub async fn reload_file(self: &Arc<Self>, path: &Path) -> Result<ServersDiff, String> {
        let records = load_servers(path).map_err(|error| {
            log::warn!("servers file {} not reloaded, the remotes in force stay: {error}", path.display());
            error
        })?;
        let diff = self.apply(records).await;
        if diff.is_empty() {
            log::info!("servers file {} reloaded: no remote changed", path.display());
        } else {
            log::info!("servers file {} reloaded: {diff}", path.display());
        }
        Ok(diff)
    }

    /// Forgets everything a remote exported — its tools (clients hear `tools/list_changed`),
    /// its prompts, resources and templates, its metrics series, its health — once it left the
    /// servers file.
    fn forget_remote(self: &Arc<Self>, id: &str) {
        let prefix = self.health.lock().unwrap_or_else(PoisonError::into_inner).remove(id).map(|h| h.prefix);
        if let Some(prefix) = prefix {
            let prefix = format!("{prefix}{SEPARATOR}");
            self.live.update(|catalog| {
                for name in catalog.tool_names().into_iter().filter(|n| n.starts_with(&prefix)) {
                    catalog.remove_tool(&name);
                }
            });
        }
        self.remote_metrics.remove(id);
        // Its prompts, resources and templates, its URI claims and subscriptions.
        self.forget_federated(id);
    }

    /// Fetches every remote's tools (remotes that fail are marked down; their tools stay out).
    pub async fn refresh_all(self: &Arc<Self>) {
        let ids = self.remote_ids();
        futures_util::future::join_all(ids.iter().map(|id| self.refresh(id))).await;
    }

    /// Fetches the tools of the remotes that export none because listing them failed (down at
    /// startup, or down at their last list_changed), so a remote started after mcpd joins
    /// without a restart. Remotes that did list their tools are left alone: a call to one that
    /// went away fails on its own and marks it down.
    pub async fn retry_unreachable(self: &Arc<Self>) {
        let ids: Vec<String> = {
            let remotes = self.remote_ids();
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            remotes.into_iter().filter(|id| health.get(id).is_some_and(|h| !h.up && h.tools == 0)).collect()
        };
        futures_util::future::join_all(ids.iter().map(|id| self.refresh(id))).await;
    }

    /// Calls [`Gateway::retry_unreachable`] every `every` on the current actix system, for as
    /// long as the gateway lives.
    pub fn retry_every(self: &Arc<Self>, every: std::time::Duration) {
        let weak = Arc::downgrade(self);
        actix_rt::spawn(async move {
            loop {
                actix_rt::time::sleep(every).await;
                let Some(gateway) = weak.upgrade() else { break };
                // A bug in one round is logged and counted; the next round comes all the same.
                let _ = panics::contain(Site::Gateway, gateway.retry_unreachable()).await;
            }
        });
    }

    /// What a remote's notification does here: `tools/list_changed` refreshes its tools (and
    /// what it federates), `prompts/list_changed` and `resources/list_changed` what it
    /// federates, `resources/updated` reaches this server's subscribers of the URI.
    fn remote_notification(self: &Arc<Self>, id: &str, method: &str, params: &Value) {
        // The client names the remote by its record id, which is its name in the file.
        if self.prefix_of(id).is_none() {
            return;
        }
        let (gateway, id) = (self.clone(), id.to_owned());
        match method {
            "notifications/tools/list_changed" => {
                panics::spawn(Site::Gateway, async move { gateway.refresh(&id).await });
            }
            "notifications/prompts/list_changed" | "notifications/resources/list_changed" => {
                panics::spawn(Site::Gateway, async move { gateway.refresh_federated(&id, true).await });
            }
            "notifications/resources/updated" => {
                // Contained like the rest: this runs on the remote's connection.
                let _ = panics::catch(Site::Gateway, || gateway.remote_resource_updated(&id, params));
            }
            _ => {}
        }
    }

    /// The prefix of the remote `id`'s tools and prompts.
    fn prefix_of(&self, id: &str) -> Option<String> {
        self.remotes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.prefix.clone())
    }

    /// Fetches one remote's tools and replaces its exported tools, then what it federates
    /// (prompts, resources, templates; taken out when it is down). Entries the listing skipped,
    /// and tools whose exported name would break the tool name rules, are left out and shown in
    /// the remote's health.
    pub async fn refresh(self: &Arc<Self>, id: &str) {
        let Some(remote_prefix) = self.prefix_of(id) else { return };
        let outcome = panics::contain(Site::Gateway, self.manager.refresh_tools(id))
            .await
            .unwrap_or_else(|panic| Err(ClientError::from(panic)));
        // A reload replaced or removed the remote meanwhile: this listing is of the old one (the
        // new configuration is listed by its own refresh).
        if matches!(outcome, Err(ClientError::ConfigChanged)) || self.prefix_of(id).as_deref() != Some(&*remote_prefix)
        {
            return;
        }
        let prefix = format!("{remote_prefix}{SEPARATOR}");
        let (mut skipped, mut skipped_count) = (Vec::new(), 0);
        let mut exported = Vec::new();
        if let Ok(listing) = &outcome {
            skipped.extend(listing.skipped.iter().take(SKIPPED_SHOWN).map(ToString::to_string));
            skipped_count = listing.skipped_count;
            for tool in &listing.items {
                let tool = export(tool, &remote_prefix, id);
                match check_tool_name(&tool.name) {
                    Ok(()) if self.filter.allows(&tool.name) => exported.push(tool),
                    Ok(()) => {}
                    Err(reason) => {
                        log::warn!("gateway: not exporting a tool of {id}: {reason}");
                        skipped_count += 1;
                        if skipped.len() < SKIPPED_SHOWN {
                            skipped.push(format!("tool exported as {:?}: {reason}", shown(&tool.name)));
                        }
                    }
                }
            }
        }
        let count = exported.len();
        let gateway = self.clone();
        self.live.update(|catalog| {
            for name in catalog.tool_names().into_iter().filter(|n| n.starts_with(&prefix)) {
                catalog.remove_tool(&name);
            }
            for tool in exported {
                // The server's id and the tool's remote name, shared by every call (no copies).
                let names = Arc::new((id.to_owned(), tool.name.strip_prefix(&prefix).unwrap_or(&tool.name).to_owned()));
                let lane =
                    ToolName::new(&names.1).map(|tool| Lane { gateway: gateway.clone(), server: Arc::from(id), tool });
                let gateway = gateway.clone();
                let handler = move |arguments: Map<String, Value>, ctx: ToolContext| {
                    let (gateway, names) = (gateway.clone(), names.clone());
                    async move { gateway.call(&names.0, &names.1, arguments, ctx).await }
                };
                match lane {
                    Some(lane) => catalog.add_tool_with_lane(tool, handler, lane),
                    None => catalog.add_tool(tool, handler),
                };
            }
        });
        if skipped_count > skipped.len() {
            skipped.push(format!("… and {} more", skipped_count - skipped.len()));
        }
        self.set_health(id, outcome.as_ref().map(|_| count).map_err(ToString::to_string), skipped);
        if let Err(e) = &outcome {
            log::warn!("gateway: remote {id} is down: {e}");
        }
        self.refresh_federated(id, outcome.is_ok()).await;
    }

    /// Calls a remote tool for the caller of `ctx`, passing through what happens meanwhile (see
    /// [`pass_through`]); a remote's `input_required` round becomes this call's own round.
    async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        ctx: ToolContext,
    ) -> Result<CallToolResult, ToolError> {
        let started = std::time::Instant::now();
        let handlers = pass_through(&ctx);
        let call = self.manager.pass_tool_call(server, tool, arguments, call_meta(&ctx), handlers);
        let outcome = panics::contain(Site::Gateway, call).await.unwrap_or_else(|panic| Err(ClientError::from(panic)));
        match self.passed_on(server, started, outcome)? {
            LaneResult::Result(result) => Ok(result),
            // Only a lane's call is answered so; read as a result all the same.
            LaneResult::Declined => Err(ToolError::failed(format!("remote server {server} refused the call"))),
            LaneResult::Passed(text) => text.to_call_result().map_err(|e| {
                ToolError::failed(format!("remote server {server} answered a result of the wrong shape: {e}"))
            }),
        }
    }

    /// What a remote's answer to a call started at `started` is passed on as (a lane's usual
    /// answer as its text); the call counted in the remote's metrics and its health noted.
    #[allow(clippy::result_large_err, reason = "the handlers' own error type, handed straight back to the server")]
    fn passed_on(
        &self,
        server: &str,
        started: std::time::Instant,
        outcome: Result<Passed, ClientError>,
    ) -> Result<LaneResult, ToolError> {
        self.remote_metrics.record_call(server, started.elapsed(), outcome.as_ref().map(Passed::is_error));
        match outcome {
            Ok(Passed::Text(result)) => {
                self.mark_up(server);
                Ok(LaneResult::Passed(result))
            }
            // The usual answer, read straight into what is passed on (the same as below).
            Ok(Passed::Result(result)) => {
                self.mark_up(server);
                Ok(LaneResult::Result(result))
            }
            Ok(Passed::Raw(result))
                if result.raw.get("resultType").and_then(Value::as_str) == Some("input_required") =>
            {
                self.mark_up(server);
                let round = result.raw.as_object().map(InputRequired::relay);
                match round {
                    Some(Ok(round)) => Err(ToolError::InputRequired(round)),
                    Some(Err(reason)) => {
                        Err(ToolError::failed(format!("remote server {server} asked for input: {reason}")))
                    }
                    None => {
                        Err(ToolError::failed(format!("remote server {server} asked for input of the wrong shape")))
                    }
                }
            }
            Ok(Passed::Raw(result)) => {
                self.mark_up(server);
                Ok(LaneResult::Result(result.into_passed()))
            }
            Err(error) => {
                self.mark_down(server, &error);
                Err(ToolError::failed(format!("remote server {server} failed: {error}")))
            }
        }
    }

    fn set_health(&self, id: &str, outcome: Result<usize, String>, skipped: Vec<String>) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = health.get_mut(id) {
            entry.skipped = skipped;
            match outcome {
                Ok(tools) => {
                    entry.up = true;
                    entry.tools = tools;
                    entry.error = None;
                }
                Err(error) => {
                    entry.up = false;
                    entry.tools = 0;
                    entry.error = Some(error);
                }
            }
        }
    }

    fn mark_up(&self, id: &str) {
        if let Some(entry) = self.health.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id) {
            entry.up = true;
            entry.error = None;
        }
    }

    fn mark_down(&self, id: &str, error: &ClientError) {
        if let Some(entry) = self.health.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id) {
            entry.up = false;
            entry.error = Some(error.to_string());
        }
    }

    /// The per-remote call metrics, for [`crate::metrics::Metrics::add_collector`].
    pub fn remote_metrics(&self) -> Arc<RemoteMetrics> {
        self.remote_metrics.clone()
    }

    /// Every remote's health, in file order, with what it federates.
    pub fn health(&self) -> Vec<RemoteHealth> {
        let health: Vec<RemoteHealth> = {
            let remotes = self.remote_ids();
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            remotes.iter().filter_map(|id| health.get(id).cloned()).collect()
        };
        health
            .into_iter()
            .map(|mut remote| {
                let counts = self.federated_counts(&remote.name);
                remote.prompts = counts.prompts;
                remote.resources = counts.resources;
                remote.templates = counts.templates;
                remote.collisions = counts.collisions;
                remote.skipped.extend(counts.notes);
                remote
            })
            .collect()
    }

    /// The health as JSON (for the status endpoint).
    pub fn health_json(&self) -> Value {
        json!(self
            .health()
            .into_iter()
            .map(|h| json!({
                "name": h.name, "prefix": h.prefix, "transport": h.transport, "up": h.up, "tools": h.tools,
                "prompts": h.prompts, "resources": h.resources, "templates": h.templates,
                "collisions": h.collisions, "error": h.error, "skipped": h.skipped
            }))
            .collect::<Vec<_>>())
    }

    /// Closes every connection (DELETE sessions, stop children).
    pub async fn close(&self) {
        self.manager.close().await;
    }
}

/// The remote call's `_meta`: the W3C trace context of the caller's request (its `_meta`, where
/// the HTTP edge also puts the `traceparent` and `tracestate` headers) and, when the caller
/// wants log messages (and can be sent them), its log level (`io.modelcontextprotocol/logLevel`:
/// a stateless remote sends log messages only to requests that ask, see [`pass_through`]).
fn call_meta(ctx: &ToolContext) -> Option<Map<String, Value>> {
    let mut meta = trace_context(|key| ctx.meta_member(key));
    if let Some(level) = ctx.log_level().filter(|_| ctx.has_peer()) {
        meta.insert(meta_keys::LOG_LEVEL.into(), json!(level));
    }
    (!meta.is_empty()).then_some(meta)
}

/// The W3C trace context among a request's `_meta` members (`member` reads one by its key).
fn trace_context<'m>(member: impl Fn(&str) -> Option<&'m Value>) -> Map<String, Value> {
    [TRACEPARENT, TRACESTATE]
        .into_iter()
        .filter_map(|key| member(key).filter(|v| v.is_string()).map(|v| (key.to_owned(), v.clone())))
        .collect()
}

/// The lane of a remote's tool ([`ToolLane`]): a plain call — nothing streamed, so no progress
/// or log message to pass through, and no answer to an earlier round to carry — is written
/// straight to the remote on this thread's satellite, and the remote's usual answer is passed
/// on as the text it came as. The remote is told the caller's trace context and capabilities,
/// as on the usual way ([`Gateway::call`]); any other answer (a round, a task, a result of
/// another shape, an error) is read and passed on as the usual way passes it. A remote without a
/// satellite on this thread (a session, stdio, none made yet) is called the usual way.
struct Lane {
    gateway: Arc<Gateway>,
    /// The server's id.
    server: Arc<str>,
    /// The tool's name on the remote.
    tool: ToolName,
}

impl ToolLane for Lane {
    fn start(
        &self,
        arguments: &Map<String, Value>,
        call: &LaneCall<'_>,
    ) -> Option<BoxFuture<Result<LaneResult, ToolError>>> {
        let started = std::time::Instant::now();
        let meta = trace_context(|key| call.meta.and_then(|meta| meta.get(key)));
        let meta = (!meta.is_empty()).then_some(meta);
        let manager = &self.gateway.manager;
        let call =
            manager.start_forward(&self.server, &self.tool, arguments, meta.as_ref(), call.client_capabilities)?;
        let (gateway, server) = (self.gateway.clone(), self.server.clone());
        Some(Box::pin(async move {
            match gateway.manager.finish_forward(&server, call).await {
                Some(outcome) => gateway.passed_on(&server, started, outcome),
                // Refused unprocessed, for the connection's OAuth to answer: the usual way.
                None => Ok(LaneResult::Declined),
            }
        }))
    }
}

/// The handlers of one gateway call, from its caller's context:
///
/// - the remote's progress becomes the caller's (only when the caller sent a progress token:
///   the remote is sent one of the client's own), its log messages the caller's (at the
///   caller's log level);
/// - the remote's `elicitation/create`, `sampling/createMessage` and `roots/list` are asked of
///   the caller as its own requests when it declared the capability, and refused with an
///   error naming why otherwise (never answered with made-up defaults);
/// - a stateless remote's `input_required` round is returned, for the gateway to make it its
///   own round (the server asks a caller in a session itself, and answers a stateless caller
///   with `input_required`); the retry of such a round carries the caller's answers and the
///   remote's state on.
fn pass_through(ctx: &ToolContext) -> CallHandlers {
    let progress: Option<NotificationSink> = (ctx.has_peer() && ctx.progress_token().is_some()).then(|| {
        let ctx = ctx.clone();
        Arc::new(move |params: &Value| {
            if let Some(progress) = params.get("progress").and_then(Value::as_f64) {
                let total = params.get("total").and_then(Value::as_f64);
                ctx.progress(progress, total, params.get("message").and_then(Value::as_str));
            }
        }) as NotificationSink
    });
    let log: Option<NotificationSink> = ctx.has_peer().then(|| {
        let ctx = ctx.clone();
        Arc::new(move |params: &Value| {
            let level = params.get("level").and_then(Value::as_str).and_then(LogLevel::parse);
            if let Some(level) = level {
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                ctx.log(level, params.get("logger").and_then(Value::as_str), data);
            }
        }) as NotificationSink
    });
    let caller = ctx.clone();
    let requests: RequestAnswerer = Arc::new(move |method: &str, params: Value| -> HandlerFuture {
        let ctx = caller.clone();
        let method = method.to_owned();
        Box::pin(async move {
            if method == "ping" {
                return Ok(json!({}));
            }
            let Some(capability) = capability_for(&method) else {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("{method} is not forwarded by mcpd's gateway"),
                ));
            };
            if !ctx.client_supports(capability) {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "{method} refused by mcpd's gateway: the calling client did not declare the {capability} \
                         capability"
                    ),
                ));
            }
            ctx.request(&method, params).await.map_err(|error| {
                ErrorObject::new(
                    error.code,
                    format!(
                        "{method} could not be forwarded by mcpd's gateway to the calling client: {}",
                        error.message
                    ),
                )
            })
        })
    });
    CallHandlers {
        progress,
        log,
        requests: Some(requests),
        relay_input: true,
        resume: relayed_retry(ctx.input_responses(), ctx.request_state()),
        // What a stateless remote is told this call's client can be asked: the caller's own
        // declarations (the link passes on those of elicitation, sampling and roots, the
        // requests forwarded here), nothing it did not declare.
        capabilities: Some(ctx.shared_client_capabilities().unwrap_or_else(|| json!({}).into())),
    }
}

/// The gateway's own answers to what a remote asks outside any call it can attribute (several
/// calls in flight on a shared stream, or none): refused, never answered with made-up defaults.
/// `elicitation`, `sampling` and `roots` are declared to every remote all the same (a stateless
/// remote is told each call's caller's own instead, see [`pass_through`]): they are what mcpd
/// forwards to the callers that declared them.
fn unattributed_handlers(hook: NotificationHook) -> ClientHandlers {
    fn refuse(method: &'static str) -> Handler {
        Arc::new(move |_params| {
            Box::pin(async move {
                Err(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "{method} refused by mcpd's gateway: it cannot tell which caller the request is for \
                         (it is not tied to one call in flight)"
                    ),
                ))
            })
        })
    }
    ClientHandlers {
        elicitation: refuse("elicitation/create"),
        sampling: Some(refuse("sampling/createMessage")),
        roots: Vec::new(),
        notifications: Some(hook),
    }
}

/// A name as a message shows it: at most 60 characters.
fn shown(name: &str) -> String {
    clipped(name, 60)
}

/// `text` cut to at most `max` characters (marked `…` when cut).
fn clipped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// A remote tool as this server exports it. Its task support is this server's own, not the
/// remote's: `optional` — mcpd answers a short call at once and makes a long one a task of its
/// own for clients that take tasks (the remote's task, if it makes one, is followed by mcpd's
/// client meanwhile). A remote `required` is therefore no burden on mcpd's clients, and
/// cancelling mcpd's task drops the call, which cancels the remote's.
fn export(tool: &Tool, prefix: &str, server: &str) -> Tool {
    let mut exported = tool.clone().with_task_support(TaskSupport::Optional);
    exported.name = format!("{prefix}{SEPARATOR}{}", tool.name);
    exported.description = Some(marked(server, tool.description.as_deref()));
    exported
}

/// A remote entry's description as this server exports it: marked with the server's name.
fn marked(server: &str, description: Option<&str>) -> String {
    format!("[{server}] {}", description.unwrap_or("")).trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_tools_are_optional_tasks_of_this_server_whatever_the_remote_declares() {
        let plain = Tool::new("build", "Builds.", json!({"type": "object"}));
        for remote in [
            plain.clone(),
            plain.clone().with_task_support(TaskSupport::Required),
            plain.clone().with_task_support(TaskSupport::Forbidden),
        ] {
            let exported = export(&remote, "ci", "CI");
            assert_eq!(exported.name, "ci__build");
            assert_eq!(exported.description.as_deref(), Some("[CI] Builds."));
            assert_eq!(exported.task_support(), TaskSupport::Optional, "{remote:?}");
        }
    }

    fn http(id: &str, document: Value) -> ServerRecord {
        ServerRecord::new(id, mcpd::client::config::ConfigDocument::from_value(document).unwrap())
    }

    #[test]
    fn a_reloaded_servers_file_is_compared_by_name_and_every_field() {
        let stdio = |id: &str, arg: &str| {
            let command = mcpd::client::config::StdioCommand::from_node(
                json!({"command": "node", "args": [arg]}).as_object().unwrap(),
            )
            .unwrap();
            ServerRecord::stdio(id, command)
        };
        let old = vec![
            http("kept", json!({"url": "http://127.0.0.1:1/mcp", "headers": {"A": "1"}})),
            http("url", json!({"url": "http://127.0.0.1:2/mcp"})),
            http("gone", json!({"url": "http://127.0.0.1:3/mcp"})),
            stdio("child", "a.js"),
            stdio("same child", "a.js"),
            http("timeout", json!({"url": "http://127.0.0.1:4/mcp"})),
        ];
        let mut longer = http("timeout", json!({"url": "http://127.0.0.1:4/mcp"}));
        longer.timeout_secs = 99;
        let mut listed = stdio("same child", "a.js");
        listed.tools = vec![Tool::new("t", "", json!({"type": "object"}))];
        let new = vec![
            http("new", json!({"url": "http://127.0.0.1:5/mcp"})),
            // Key order is not a change.
            http("kept", json!({"headers": {"A": "1"}, "url": "http://127.0.0.1:1/mcp"})),
            http("url", json!({"url": "http://127.0.0.1:22/mcp"})),
            stdio("child", "b.js"),
            listed,
            longer,
        ];
        let diff = diff_servers(&old, new);
        let ids = |records: &[ServerRecord]| records.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&diff.added), ["new"]);
        assert_eq!(diff.removed, ["gone"]);
        assert_eq!(ids(&diff.changed), ["url", "child", "timeout"]);
        assert_eq!(diff.unchanged, ["kept", "same child"], "the tools last fetched are no configuration");
        assert_eq!(diff.order, ["new", "kept", "url", "child", "same child", "timeout"]);
        assert!(!diff.is_empty());
        assert_eq!(
            diff.to_string(),
            "added [new], removed [gone], changed [url, child, timeout], unchanged [kept, same child]"
        );
        let again = diff_servers(&old, old.clone());
        assert!(again.is_empty() && again.unchanged.len() == old.len());
    }

    /// A reload keeps the prefixes of the remotes it keeps, gives new ones the first free one,
    /// forgets what removed ones exported, and keeps the file's order.
    #[actix_rt::test]
    async fn apply_forgets_removed_remotes_and_prefixes_new_ones() {
        let live = Arc::new(LiveCatalog::new(mcpd::Catalog::new()));
        let down = |id: &str| http(id, json!({"url": "http://127.0.0.1:1/mcp", "timeout": 5}));
        let gateway =
            Gateway::new(vec![down("Docs"), down("b")], live.clone(), ToolFilter::from_value(None), Arc::default());
        live.update(|catalog| {
            let tool = |name: &str| Tool::new(name, "", json!({"type": "object"}));
            catalog.add_tool(tool("b__t"), |_a: Map<String, Value>, _c| async { Ok(CallToolResult::text("")) });
            catalog.add_tool(tool("docs__t"), |_a: Map<String, Value>, _c| async { Ok(CallToolResult::text("")) });
        });
        let diff = gateway.apply(vec![down("docs"), down("Docs")]).await;
        assert_eq!(
            (diff.removed.as_slice(), diff.unchanged.as_slice()),
            (["b".to_owned()].as_slice(), ["Docs".to_owned()].as_slice())
        );
        let health = gateway.health();
        let shown: Vec<(&str, &str)> = health.iter().map(|h| (h.name.as_str(), h.prefix.as_str())).collect();
        assert_eq!(shown, [("docs", "docs_2"), ("Docs", "docs")], "file order; kept prefixes");
        assert_eq!(live.snapshot().tool_names(), ["docs__t"], "b's tools are gone");
        gateway.close().await;
    }

    #[test]
    fn prefixes_are_sanitized_and_unique() {
        let mut taken = Vec::new();
        for (name, expected) in
            [("Docs", "docs"), ("my server!", "my_server"), ("a__b", "a_b"), ("docs", "docs_2"), ("", "server")]
        {
            let prefix = prefix_for(name, &taken);
            assert_eq!(prefix, expected);
            assert!(!prefix.contains(SEPARATOR));
            taken.push(prefix);
        }
    }
}
