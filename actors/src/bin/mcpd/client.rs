//! `mcpd tools`, `mcpd call` and `mcpd task`: the client runtime from the command line.
//!
//! A call the server makes a task of (2026-07-28, the tasks extension) is waited for (at most
//! `--task-wait`) and prints what a synchronous call would; on a terminal, the task's status
//! shows on stderr as it changes. `--no-wait` prints the task instead; `mcpd task get|cancel`
//! read or cancel it by id. Ctrl-C while `mcpd call` waits cancels the task (`tasks/cancel`)
//! and exits 130.
//!
//! Exit codes: 0 success, 1 the tool reported `isError`, 2 a transport, protocol or
//! configuration failure with a one-line reason on stderr ([`crate::failure`]) — among them a
//! server that needs an OAuth login only a person can give: `… needs authorization: run: mcpd
//! login URL` — and 130 a call interrupted by Ctrl-C.
//!
//! Both use the credentials file (`--credentials FILE`, default under the user's config
//! directory) for servers that answer `401`: its tokens are used and refreshed, nobody is
//! asked to log in. A server given an `Authorization` header is left to that header.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use mcpd::client::config::{timeout_seconds, ConfigDocument, ServerEntry, ServersFile};
use mcpd::client::list::{ListLimits, Listing, DEFAULT_MAX_ITEMS, DEFAULT_MAX_PAGES};
use mcpd::client::task::{task_wait_seconds, DEFAULT_TASK_WAIT_SECONDS};
use mcpd::model::{ContentBlock, Implementation, Media, Resource};
use serde_json::{json, Map, Value};

use mcpd_actors::client::oauth::FileStore;
use mcpd_actors::client::{ClientHandlers, ClientManager, RemoteCallOutcome, ServerRecord};
use mcpd_actors::ActorCounts;

use crate::failure::{client_failure, failure, Failure};

/// Which server to talk to, and how.
#[derive(Debug, Clone, Args)]
pub(crate) struct Target {
    /// A configuration file: one server (flat or `mcpServers` with one entry) or a
    /// desktop-host `mcpServers` file with several (then pick one with --server).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// The server to use from a multi-server --config file.
    #[arg(long)]
    pub(crate) server: Option<String>,
    /// A header sent on every request, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "K:V")]
    pub(crate) headers: Vec<String>,
    /// Pin a protocol revision (default: negotiate).
    #[arg(long)]
    pub(crate) protocol_version: Option<String>,
    /// Use the 2024-11-05 HTTP+SSE transport.
    #[arg(long)]
    pub(crate) sse: bool,
    /// Connect and call time limit in seconds (5–300); a whole listing (all its pages) gets
    /// this long too.
    #[arg(long, default_value_t = 30)]
    pub(crate) timeout: u64,
    /// Most pages one listing may take (1–10000).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PAGES as u64)]
    pub(crate) max_list_pages: u64,
    /// Most entries one listing may return, kept or skipped (1–1000000).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ITEMS as u64)]
    pub(crate) max_list_items: u64,
    /// Print machine-readable JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// The OAuth credentials file (default: $XDG_CONFIG_HOME/mcpd/credentials.json, else
    /// ~/.config/mcpd/credentials.json); see mcpd login.
    #[arg(long, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
}

/// `mcpd tools`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ToolsArgs {
    /// The server's MCP endpoint URL (or use --config).
    pub(crate) url: Option<String>,
    /// Where and how to connect.
    #[command(flatten)]
    pub(crate) target: Target,
}

/// `mcpd call`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CallArgs {
    /// `<URL> <TOOL>`, or `<TOOL>` with --config.
    #[arg(num_args = 1..=2, required = true)]
    pub(crate) positional: Vec<String>,
    /// The arguments, a JSON object.
    #[arg(long, default_value = "{}")]
    pub(crate) args: String,
    /// When the server makes a task of the call, print the task (JSON, with its taskId) instead
    /// of waiting for it; see mcpd task.
    #[arg(long)]
    pub(crate) no_wait: bool,
    /// Longest wait for a task the server makes of the call, in seconds (1–86400); past it the
    /// task is cancelled and the call fails.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TASK_WAIT_SECONDS)]
    pub(crate) task_wait: u64,
    /// Where and how to connect.
    #[command(flatten)]
    pub(crate) target: Target,
}

/// `mcpd task`.
#[derive(Debug, Clone, Args)]
pub(crate) struct TaskArgs {
    /// What to do with the task.
    #[command(subcommand)]
    pub(crate) action: TaskAction,
}

/// `mcpd task get` / `mcpd task cancel`.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum TaskAction {
    /// Print a task's state as JSON (status, and its result, error or input requests).
    Get(TaskTarget),
    /// Ask the server to cancel a task.
    Cancel(TaskTarget),
}

/// The task a `mcpd task` command is about.
#[derive(Debug, Clone, Args)]
pub(crate) struct TaskTarget {
    /// `<URL> <TASK_ID>`, or `<TASK_ID>` with --config.
    #[arg(num_args = 1..=2, required = true)]
    pub(crate) positional: Vec<String>,
    /// Where and how to connect.
    #[command(flatten)]
    pub(crate) target: Target,
}

/// The exit code of a call interrupted with Ctrl-C (SIGINT), as shells report one.
const INTERRUPTED: u8 = 130;

/// The server `--config` names: the entry `--server` picks (or the file's only entry), or the
/// whole file as one flat document when it lists no server. Which entries are stdio servers is
/// the core's one rule (`mcpd::client::config`).
fn configured(path: &Path, target: &Target) -> Result<ServerEntry, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| failure(format!("cannot read {}: {e}", path.display())))?;
    let file = ServersFile::parse(&text).map_err(|e| failure(e.to_string()))?;
    let name = match (&target.server, file.len()) {
        (Some(name), _) => name.as_str(),
        (None, 0) => return ConfigDocument::parse(&text).map(ServerEntry::Http).map_err(|e| failure(e.to_string())),
        (None, 1) => file.names().into_iter().next().unwrap_or_default(),
        (None, _) => {
            return Err(failure(format!(
                "{} has several servers ({}); pick one with --server",
                path.display(),
                file.names().join(", ")
            )))
        }
    };
    let entry = file.entry(name).ok_or_else(|| {
        failure(format!("no server {name:?} in {} (it has: {})", path.display(), file.names().join(", ")))
    })?;
    entry.map_err(|e| failure(format!("server {name}: {e}")))
}

/// An HTTP server's document with the command line's `--header`, `--protocol-version` and
/// `--sse` applied to its node, checked.
fn with_overrides(document: ConfigDocument, target: &Target) -> Result<ConfigDocument, Failure> {
    let mut value = document.into_value();
    let node = match value.get_mut("mcpServers").and_then(Value::as_object_mut) {
        Some(servers) => servers.values_mut().next().ok_or_else(|| failure("mcpServers is empty"))?,
        None => &mut value,
    };
    // The document was checked when it was read; a node that is not an object is refused here
    // all the same rather than indexed into.
    let node = node.as_object_mut().ok_or_else(|| failure("the server's configuration is not a JSON object"))?;
    for header in &target.headers {
        let (name, header_value) =
            header.split_once(':').ok_or_else(|| failure(format!("--header {header:?} must be Name:value")))?;
        if let Value::Object(headers) = node.entry("headers").or_insert_with(|| json!({})) {
            headers.insert(name.trim().to_owned(), json!(header_value.trim()));
        }
    }
    if let Some(version) = &target.protocol_version {
        node.insert("protocolVersion".into(), json!(version));
    }
    if target.sse {
        node.insert("type".into(), json!("sse"));
    }
    let document = ConfigDocument::from_value(value).map_err(|e| failure(e.to_string()))?;
    document.resolve().map_err(|e| failure(e.to_string()))?;
    Ok(document)
}

/// The manager of a client command, with the credentials file (when there is a place for
/// one; without `HOME` and `--credentials`, `401`s are plain errors).
fn manager(target: &Target) -> ClientManager {
    manager_with(target, ClientHandlers::default())
}

/// The task a call became, as the client last heard of it (for Ctrl-C to cancel it).
type LastTask = Arc<Mutex<Option<String>>>;

/// [`manager`] whose client remembers the task a call becomes and, when stderr is a terminal,
/// shows its status there as it changes.
fn task_manager(target: &Target) -> (ClientManager, LastTask) {
    let last: LastTask = Arc::new(Mutex::new(None));
    let remembered = last.clone();
    let terminal = std::io::stderr().is_terminal();
    let hook = move |_server: &str, method: &str, params: &Value| {
        if method != mcpd::tasks::STATUS_NOTIFICATION {
            return;
        }
        if let Some(id) = params.get("taskId").and_then(Value::as_str) {
            *remembered.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.to_owned());
        }
        if terminal {
            show_task_progress(params);
        }
    };
    let handlers = ClientHandlers { notifications: Some(Arc::new(hook)), ..ClientHandlers::default() };
    (manager_with(target, handlers), last)
}

fn manager_with(target: &Target, handlers: ClientHandlers) -> ClientManager {
    let manager = ClientManager::new(
        handlers,
        Implementation::new("mcpd", env!("CARGO_PKG_VERSION")),
        Arc::new(ActorCounts::new()),
    );
    match crate::login::credentials_path(target.credentials.clone()) {
        Ok(path) => manager.with_credentials(Arc::new(FileStore::new(path))),
        Err(_) => manager,
    }
}

/// Shows a task's status on stderr (`mcpd: task ID: working: 40% done`), for a person at a
/// terminal; the server's text without control characters.
#[allow(clippy::print_stderr)] // progress for the person at the terminal is the point
fn show_task_progress(params: &Value) {
    let field = |name: &str| -> String {
        let text = params.get(name).and_then(Value::as_str).unwrap_or_default();
        text.chars().filter(|c| !c.is_control()).take(200).collect()
    };
    let (id, status, message) = (field("taskId"), field("status"), field("statusMessage"));
    let status = status.replace('_', " ");
    if message.is_empty() {
        eprintln!("mcpd: task {id}: {status}");
    } else {
        eprintln!("mcpd: task {id}: {status}: {message}");
    }
}

/// The record of the server to talk to: the URL's, or the `--config` file's (a stdio entry
/// starts a child).
fn record(url: Option<&str>, target: &Target) -> Result<ServerRecord, Failure> {
    let server = match (&target.config, url) {
        (Some(_), Some(_)) => return Err(failure("give either a URL or --config, not both")),
        (None, None) => return Err(failure("give the server's URL, or --config FILE")),
        (None, Some(url)) => {
            ServerEntry::Http(ConfigDocument::from_value(json!({ "url": url })).map_err(|e| failure(e.to_string()))?)
        }
        (Some(path), None) => configured(path, target)?,
    };
    let server = match server {
        ServerEntry::Http(document) => ServerEntry::Http(with_overrides(document, target)?),
        ServerEntry::Stdio(_) if !target.headers.is_empty() || target.sse || target.protocol_version.is_some() => {
            return Err(failure("--header, --sse and --protocol-version apply to HTTP servers, not to a stdio server"));
        }
        stdio @ ServerEntry::Stdio(_) => stdio,
    };
    let clamp = |n: u64| Some(i64::try_from(n).unwrap_or(i64::MAX));
    let list_limits = ListLimits::new(clamp(target.max_list_pages), clamp(target.max_list_items));
    Ok(ServerRecord { timeout_secs: target.timeout, list_limits, ..ServerRecord::with_server("cli", server) })
}

/// Runs `mcpd tools`; the text to print on success.
///
/// # Errors
/// A [`Failure`] with exit code 2.
pub(crate) async fn tools(args: ToolsArgs) -> Result<String, Failure> {
    let record = record(args.url.as_deref(), &args.target)?;
    let manager = manager(&args.target);
    manager.upsert(record);
    let outcome = manager.refresh_tools("cli").await;
    manager.close().await;
    let listing = outcome.map_err(client_failure)?;
    warn_skipped(&listing);
    let tools = &listing.items;
    if args.target.json {
        return Ok(serde_json::to_string_pretty(tools).unwrap_or_default());
    }
    let mut out = String::new();
    for tool in tools {
        // The first line, without control characters: a server's text never drives the terminal.
        let description = tool.description.as_deref().and_then(|d| d.lines().next()).unwrap_or("");
        let description: String = description.chars().filter(|c| !c.is_control()).collect();
        out.push_str(&format!("{}  {description}\n", tool.name));
    }
    out.push_str(&format!("({} tool{}", tools.len(), if tools.len() == 1 { "" } else { "s" }));
    match listing.skipped_count {
        0 => out.push(')'),
        1 => out.push_str(", 1 entry skipped)"),
        n => out.push_str(&format!(", {n} entries skipped)")),
    }
    Ok(out)
}

/// Says on stderr which entries of the listing were left out, and why (the first few).
fn warn_skipped<T>(listing: &Listing<T>) {
    const SHOWN: usize = 10;
    for skipped in listing.skipped.iter().take(SHOWN) {
        eprintln!("mcpd: warning: skipped {skipped}");
    }
    let shown = listing.skipped.len().min(SHOWN);
    if listing.skipped_count > shown {
        eprintln!("mcpd: warning: skipped {} more entries", listing.skipped_count - shown);
    }
}

/// Runs `mcpd call`; the text to print and whether the tool reported an error.
///
/// # Errors
/// A [`Failure`] with exit code 2.
pub(crate) async fn call(args: CallArgs) -> Result<(String, bool), Failure> {
    let (url, tool) = match (args.target.config.is_some(), args.positional.as_slice()) {
        (true, [tool]) => (None, tool.clone()),
        (false, [url, tool]) => (Some(url.clone()), tool.clone()),
        (true, _) => return Err(failure("with --config, give only the tool's name")),
        (false, _) => return Err(failure("give the server's URL and the tool's name")),
    };
    let arguments: Map<String, Value> = match serde_json::from_str(&args.args) {
        Ok(Value::Object(arguments)) => arguments,
        Ok(_) => return Err(failure("--args must be a JSON object")),
        Err(e) => return Err(failure(format!("--args is not JSON: {e}"))),
    };
    let clamp = |n: u64| Some(i64::try_from(n).unwrap_or(i64::MAX));
    let task_wait_secs = task_wait_seconds(clamp(args.task_wait));
    let record = ServerRecord { task_wait_secs, ..record(url.as_deref(), &args.target)? };
    let timeout = Duration::from_secs(timeout_seconds(Some(i64::try_from(record.timeout_secs).unwrap_or(i64::MAX))));
    let (manager, last_task) = task_manager(&args.target);
    manager.upsert(record);
    let call = async {
        if args.no_wait {
            manager.start_tool_call("cli", &tool, arguments).await
        } else {
            manager.call_tool("cli", &tool, arguments).await.map(RemoteCallOutcome::Result)
        }
    };
    let outcome = tokio::select! {
        outcome = call => outcome,
        _ = actix_rt::signal::ctrl_c() => {
            // Interrupted: a task the call became is not left running.
            let task = last_task.lock().unwrap_or_else(PoisonError::into_inner).take();
            let message = match task {
                None => "interrupted".to_owned(),
                Some(id) => match actix_rt::time::timeout(timeout, manager.cancel_task("cli", &id)).await {
                    Ok(Ok(())) => format!("interrupted; task {id} cancelled"),
                    Ok(Err(e)) => format!("interrupted; could not cancel task {id}: {e}"),
                    Err(_) => format!("interrupted; could not cancel task {id} within {} s", timeout.as_secs()),
                },
            };
            manager.close().await;
            return Err(Failure { code: INTERRUPTED, message });
        }
    };
    manager.close().await;
    let result = match outcome.map_err(client_failure)? {
        RemoteCallOutcome::Result(result) => result,
        RemoteCallOutcome::Task(created) => {
            return Ok((serde_json::to_string_pretty(&created).unwrap_or_default(), false))
        }
    };
    if args.target.json {
        return Ok((serde_json::to_string_pretty(&result.raw).unwrap_or_default(), result.is_error));
    }
    let mut lines: Vec<String> = result.content.iter().map(describe).collect();
    if lines.is_empty() {
        if let Some(structured) = &result.structured_content {
            lines.push(serde_json::to_string_pretty(structured).unwrap_or_default());
        }
    }
    Ok((lines.join("\n"), result.is_error))
}

/// Runs `mcpd task get` (the task as JSON) or `mcpd task cancel` (one line: the request was
/// acknowledged).
///
/// # Errors
/// A [`Failure`] with exit code 2 (a task the server does not know: its `-32602` error).
pub(crate) async fn task(args: TaskArgs) -> Result<String, Failure> {
    let (cancel, what) = match args.action {
        TaskAction::Get(what) => (false, what),
        TaskAction::Cancel(what) => (true, what),
    };
    let (url, task_id) = match (what.target.config.is_some(), what.positional.as_slice()) {
        (true, [id]) => (None, id.clone()),
        (false, [url, id]) => (Some(url.clone()), id.clone()),
        (true, _) => return Err(failure("with --config, give only the task's id")),
        (false, _) => return Err(failure("give the server's URL and the task's id")),
    };
    let record = record(url.as_deref(), &what.target)?;
    let manager = manager(&what.target);
    manager.upsert(record);
    let outcome = if cancel {
        manager.cancel_task("cli", &task_id).await.map(|()| None)
    } else {
        manager.get_task("cli", &task_id).await.map(Some)
    };
    manager.close().await;
    match outcome.map_err(client_failure)? {
        Some(task) => Ok(serde_json::to_string_pretty(&task).unwrap_or_default()),
        None if what.target.json => Ok(json!({"taskId": task_id, "cancelRequested": true}).to_string()),
        None => Ok(format!("task {task_id}: cancellation requested")),
    }
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::Image(Media { data, mime_type, .. }) => {
            format!("[image {mime_type}, {} bytes of Base64]", data.len())
        }
        ContentBlock::Audio(Media { data, mime_type, .. }) => {
            format!("[audio {mime_type}, {} bytes of Base64]", data.len())
        }
        ContentBlock::ResourceLink(Resource { uri, name, .. }) => format!("[resource link {name}: {uri}]"),
        ContentBlock::Resource { resource, .. } => match resource {
            mcpd::model::ResourceContents::Text { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            mcpd::model::ResourceContents::Blob { uri, blob, .. } => {
                format!("[resource {uri}, {} bytes of Base64]", blob.len())
            }
        },
    }
}
