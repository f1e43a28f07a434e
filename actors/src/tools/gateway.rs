//! The gateway: the tools of remote MCP servers (a desktop-host `mcpServers` file: Streamable
//! HTTP, HTTP+SSE or stdio entries) re-exported as tools of this server, called through the
//! client's `ClientConnection` actors.
//!
//! Names: `<server>__<tool>`, where `<server>` is the entry's name lowered to `[a-z0-9_-]` with
//! runs of other characters (and of `_`) collapsed to one `_`, and made unique with `_2`, `_3`…
//! The first `__` of an exported name therefore always separates server from tool, so no two
//! prefixed remote tools can collide. An entry's `"prefix": "never"` exports its remote's own
//! names instead; a servers file whose unprefixed names would collide is refused before it is
//! put in force (`names`), and once in force a name stays with whoever serves it (`exports`). A remote that is down makes its tools fail with `isError: true` and
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
//!
//! This file holds the [`Gateway`] — its remotes, connections and catalog — and what ties its
//! parts together: a reload put in force, the tools listed and retried, each call and lane.
//! The parts are files of their own: `servers` (the servers file, prefixes and exported names),
//! `reload` (what a reload changes), `health` (what is known of each remote), `forward` (what a
//! call carries and brings back), taking nothing from this one; `exports` (a remote's tools
//! in the catalog), `names` (the check of unprefixed names) and `federation`, which add to the
//! gateway's own methods.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use mcpd::catalog::{BoxFuture, LaneCall, LaneResult, LiveCatalog, ToolError, ToolLane};
use mcpd::config::ToolFilter;
use mcpd::context::ToolContext;
use mcpd::model::{CallToolResult, Implementation};
use serde_json::{Map, Value};

use crate::client::oauth::CredentialStore;
use crate::client::{ClientError, ClientManager, NotificationHook, ServerRecord, ToolName};
use crate::counts::ActorCounts;
use crate::panics::{self, Site};
use crate::tools::remote_metrics::RemoteMetrics;
use crate::views::VirtualServers;

mod exports;
mod federation;
mod forward;
mod health;
mod names;
mod reload;
mod servers;

use federation::Federation;
use forward::{call_meta, pass_through, trace_context, unattributed_handlers};
use health::GatewayHealth;
pub use health::{RemoteHealth, SKIPPED_SHOWN};
pub use reload::{diff_servers, ServersDiff};
use servers::Naming;
pub use servers::{load_servers, load_servers_file, prefix_for, ServersConfig, SEPARATOR};

#[derive(Debug)]
struct Remote {
    id: String,
    /// Its prefix (kept while it is in the file, also while its entry says `"prefix": "never"`).
    prefix: String,
    /// How what it exports is named: behind the prefix, or not.
    naming: Naming,
}

/// The gateway over a set of remotes.
pub struct Gateway {
    manager: ClientManager,
    live: Arc<LiveCatalog>,
    filter: ToolFilter,
    /// The remotes in force, in file order (changed by [`Gateway::apply`]).
    remotes: Mutex<Vec<Remote>>,
    /// The tools each remote exports now, by remote id (what a refresh or a removal takes out).
    /// Its lock is taken inside the live catalog's update, never the other way round.
    exported: Mutex<HashMap<String, BTreeSet<String>>>,
    /// The credentials of the remotes' OAuth, for the managers a reload's check lists with.
    store: Option<Arc<dyn CredentialStore>>,
    /// The servers file last reloaded, the reloads and the last refusal (the status).
    file: Mutex<FileStatus>,
    /// What is known of each remote (the status endpoint, the retries).
    health: GatewayHealth,
    /// The remotes' prompts, resources and templates this server serves.
    federation: Mutex<Federation>,
    /// Per-remote call latency and errors by kind (`/metrics`).
    remote_metrics: Arc<RemoteMetrics>,
    /// Held while a reload is applied: one at a time, in order.
    reloading: tokio::sync::Mutex<()>,
    /// The virtual servers the servers file declares (replaced on reload), when served.
    views: Mutex<Option<Arc<VirtualServers>>>,
    /// The actor counts (the check of a reload's unprefixed names connects with them).
    counts: Arc<ActorCounts>,
}

/// The servers file as the gateway last read it.
#[derive(Debug, Default)]
struct FileStatus {
    path: Option<std::path::PathBuf>,
    reloads: u64,
    last_error: Option<String>,
}

/// How the gateway presents itself to its remotes.
fn client_info() -> Implementation {
    Implementation::new("mcpd-gateway", env!("CARGO_PKG_VERSION"))
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
            let mut manager = ClientManager::new(handlers, client_info(), counts.clone());
            if let Some(store) = store.clone() {
                manager = manager.with_credentials(store);
            }
            let gateway = Gateway {
                manager,
                live,
                filter,
                remotes: Mutex::new(Vec::new()),
                exported: Mutex::default(),
                store,
                file: Mutex::default(),
                counts,
                health: GatewayHealth::default(),
                federation: Mutex::default(),
                remote_metrics: Arc::new(RemoteMetrics::default()),
                reloading: tokio::sync::Mutex::new(()),
                views: Mutex::new(None),
            };
            for record in records {
                gateway.add_remote(record);
            }
            gateway
        });
        gateway.install_federation();
        gateway
    }

    /// Keeps `views` (the endpoint's virtual servers) in step with the servers file: a reload
    /// replaces them with the file's `virtualServers`.
    pub fn serve_views(&self, views: Arc<VirtualServers>) {
        *self.views.lock().unwrap_or_else(PoisonError::into_inner) = Some(views);
    }

    /// Every remote's id, in file order.
    pub fn remote_ids(&self) -> Vec<String> {
        self.remotes.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|r| r.id.clone()).collect()
    }

    /// Takes a remote into account (not contacted yet; [`Gateway::refresh`] lists its tools):
    /// its prefix is the first free one, its metrics series and health are registered.
    fn add_remote(&self, record: ServerRecord) {
        self.remote_metrics.register(&record.id);
        let naming = {
            let mut remotes = self.remotes.lock().unwrap_or_else(PoisonError::into_inner);
            let taken: Vec<String> = remotes.iter().map(|r| r.prefix.clone()).collect();
            let prefix = prefix_for(&record.id, &taken);
            let naming = Naming::new(&prefix, record.prefix);
            remotes.push(Remote { id: record.id.clone(), prefix, naming: naming.clone() });
            naming
        };
        self.health.reset(&record, naming.prefix());
        self.manager.upsert(record);
    }

    /// Puts the remotes of a servers file read again in force (see the module documentation):
    /// removed ones are forgotten and disconnected, added ones connected and listed, changed
    /// ones replaced, unchanged ones left alone with their connection. Returns what changed.
    ///
    /// # Errors
    /// A name of an unprefixed remote that collides with another's or with this server's own
    /// (checked as [`Gateway::check_names_at_start`] checks): nothing is changed.
    pub async fn apply(self: &Arc<Self>, records: Vec<ServerRecord>) -> Result<ServersDiff, String> {
        let _one_at_a_time = self.reloading.lock().await;
        let old: Vec<ServerRecord> = self.remote_ids().iter().filter_map(|id| self.manager.record(id)).collect();
        let diff = diff_servers(&old, records);
        self.check_names(&diff).await?;
        for id in &diff.removed {
            let prefix = {
                let mut remotes = self.remotes.lock().unwrap_or_else(PoisonError::into_inner);
                let prefix = remotes.iter().find(|r| r.id == *id).and_then(|r| r.naming.prefix().map(str::to_owned));
                remotes.retain(|r| r.id != *id);
                prefix
            };
            self.forget_remote(id, prefix.as_deref());
            self.manager.remove(id).await;
        }
        for record in &diff.changed {
            let naming = self.rename(record);
            self.health.reset(record, naming.as_ref().and_then(Naming::prefix));
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
        Ok(diff)
    }

    /// A changed remote's naming, as its record now says (its prefix kept).
    fn rename(&self, record: &ServerRecord) -> Option<Naming> {
        let mut remotes = self.remotes.lock().unwrap_or_else(PoisonError::into_inner);
        let remote = remotes.iter_mut().find(|r| r.id == record.id)?;
        remote.naming = Naming::new(&remote.prefix, record.prefix);
        Some(remote.naming.clone())
    }

    /// Reads the servers file at `path` again and puts it in force ([`Gateway::apply`]). A file
    /// that cannot be read, is not valid JSON or has an entry that cannot be used changes
    /// nothing: one log line names the file and why, and the remotes in force stay.
    ///
    /// # Errors
    /// Why the file was not used.
    pub async fn reload_file(self: &Arc<Self>, path: &Path) -> Result<ServersDiff, String> {
        let refused = |error: String| {
            log::warn!("servers file {} not reloaded, the remotes in force stay: {error}", path.display());
            let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
            file.path = Some(path.to_owned());
            file.last_error = Some(error.clone());
            error
        };
        let config = load_servers_file(path).map_err(&refused)?;
        let diff = self.apply(config.records).await.map_err(refused)?;
        {
            let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
            file.path = Some(path.to_owned());
            file.reloads += 1;
            file.last_error = None;
        }
        let views = self.views.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let views = views.map(|views| views.replace(config.views)).unwrap_or_default();
        if !views.is_empty() {
            // What a virtual server's clients see changed: they list again.
            self.live.announce_lists_changed();
        }
        match (diff.is_empty(), views.is_empty()) {
            (true, true) => log::info!("servers file {} reloaded: nothing changed", path.display()),
            (_, true) => log::info!("servers file {} reloaded: {diff}", path.display()),
            (_, false) => log::info!(
                "servers file {} reloaded: {diff}; virtual servers changed [{}]",
                path.display(),
                views.join(", ")
            ),
        }
        Ok(diff)
    }

    /// Forgets everything a remote exported — its tools (clients hear `tools/list_changed`),
    /// its prompts, resources and templates, its metrics series, its health — once it left the
    /// servers file.
    fn forget_remote(self: &Arc<Self>, id: &str, prefix: Option<&str>) {
        self.health.remove(id);
        self.forget_tools(id, prefix);
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
        let ids = self.health.unreachable(self.remote_ids());
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
        if self.naming_of(id).is_none() {
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

    /// How the remote `id`'s tools and prompts are named.
    fn naming_of(&self, id: &str) -> Option<Naming> {
        self.remotes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.naming.clone())
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
        match forward::passed_on(&self.remote_metrics, &self.health, server, started, outcome)? {
            LaneResult::Result(result) => Ok(result),
            // Only a lane's call is answered so; read as a result all the same.
            LaneResult::Declined => Err(ToolError::failed(format!("remote server {server} refused the call"))),
            LaneResult::Passed(text) => text.to_call_result().map_err(|e| {
                ToolError::failed(format!("remote server {server} answered a result of the wrong shape: {e}"))
            }),
        }
    }

    /// The per-remote call metrics, for [`crate::metrics::Metrics::add_collector`].
    pub fn remote_metrics(&self) -> Arc<RemoteMetrics> {
        self.remote_metrics.clone()
    }

    /// Every remote's health, in file order, with what it federates.
    pub fn health(&self) -> Vec<RemoteHealth> {
        self.health
            .of(&self.remote_ids())
            .into_iter()
            .map(|mut remote| {
                let counts = self.federated_counts(&remote.name);
                remote.prompts = counts.prompts;
                remote.resources = counts.resources;
                remote.templates = counts.templates;
                remote.collisions.extend(counts.collisions);
                remote.skipped.extend(counts.notes);
                remote
            })
            .collect()
    }

    /// The health as JSON (for the status endpoint).
    pub fn health_json(&self) -> Value {
        health::to_json(self.health())
    }

    /// Names the servers file the remotes were read from (the status shows it).
    pub fn read_from(&self, path: &Path) {
        self.file.lock().unwrap_or_else(PoisonError::into_inner).path = Some(path.to_owned());
    }

    /// The status JSON's `serversFile`: the file, the reloads put in force and why the last one
    /// was refused (`null` once one succeeds).
    pub fn file_json(&self) -> Value {
        let file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        serde_json::json!({
            "file": file.path.as_ref().map(|p| p.display().to_string()),
            "reloads": file.reloads,
            "lastError": file.last_error,
        })
    }

    /// Closes every connection (DELETE sessions, stop children).
    pub async fn close(&self) {
        self.manager.close().await;
    }
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
        let forwarding =
            manager.forward(&self.server, &self.tool, arguments, meta.as_ref(), call.client_capabilities)?;
        let (gateway, server) = (self.gateway.clone(), self.server.clone());
        Some(Box::pin(async move {
            match forwarding.await {
                Some(outcome) => {
                    forward::passed_on(&gateway.remote_metrics, &gateway.health, &server, started, outcome)
                }
                // Refused unprocessed, for the connection's OAuth to answer: the usual way.
                None => Ok(LaneResult::Declined),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use mcpd::model::Tool;
    use serde_json::json;

    use super::*;

    fn http(id: &str, document: Value) -> ServerRecord {
        ServerRecord::new(id, mcpd::client::config::ConfigDocument::from_value(document).unwrap())
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
        let diff = gateway.apply(vec![down("docs"), down("Docs")]).await.unwrap();
        assert_eq!(
            (diff.removed.as_slice(), diff.unchanged.as_slice()),
            (["b".to_owned()].as_slice(), ["Docs".to_owned()].as_slice())
        );
        let health = gateway.health();
        let shown: Vec<(&str, &str)> =
            health.iter().map(|h| (h.name.as_str(), h.prefix.as_deref().unwrap_or_default())).collect();
        assert_eq!(shown, [("docs", "docs_2"), ("Docs", "docs")], "file order; kept prefixes");
        assert_eq!(live.snapshot().tool_names(), ["docs__t"], "b's tools are gone");
        gateway.close().await;
    }
}
