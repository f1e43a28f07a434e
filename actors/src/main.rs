//! The `mcpd` command: serve MCP over stdio (the default) or HTTP (`-p PORT`).
//!
//! Only this file reads the environment and the command line; everything else takes a typed
//! configuration.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use mcpd::auth::{KeySet, OriginPolicy};
use mcpd::config::{Properties, ToolFilter};
use mcpd::model::Implementation;
use mcpd::{Catalog, McpServer, ServerOptions};
use mcpd_actors::{Limits, ListenerConfig, Mcpd, SessionConfig, TransportMode};

/// The default properties file, read when present.
const DEFAULT_CONFIG_FILE: &str = "mcp.properties";
/// Environment variable with comma-separated API keys.
const KEYS_ENV: &str = "MCPD_KEYS";

/// mcpd: an actor-based MCP server. Without a port it speaks MCP on stdin/stdout.
#[derive(Debug, Parser)]
#[command(name = "mcpd", version, about, args_conflicts_with_subcommands = true, disable_version_flag = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
    /// Print mcpd's own version and exit.
    #[arg(short = 'V', long = "mcpd-version", action = clap::ArgAction::Version)]
    mcpd_version: Option<bool>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP: over stdio, or over HTTP with -p.
    Serve(Box<ServeArgs>),
    /// List a remote MCP server's tools.
    Tools(mcpd_actors::cli_client::ToolsArgs),
    /// Call a tool of a remote MCP server (exit 1 when the tool reports an error).
    Call(mcpd_actors::cli_client::CallArgs),
}

#[derive(Debug, Clone, Args)]
struct ServeArgs {
    /// Serve HTTP on this port (0: any free port) instead of stdio.
    #[arg(short = 'p', long)]
    port: Option<u16>,
    /// Address to bind (default 127.0.0.1, or `host` from the properties file).
    #[arg(long)]
    host: Option<String>,
    /// Server name reported to clients.
    #[arg(short = 'n', long)]
    name: Option<String>,
    /// Server version reported to clients.
    #[arg(short = 'v', long = "version")]
    server_version: Option<String>,
    /// Project directory for tools (default: the current directory).
    #[arg(short = 'd', long = "project-dir", alias = "projectDir")]
    project_dir: Option<PathBuf>,
    /// Properties file (default: ./mcp.properties when present).
    #[arg(short = 'c', long)]
    config: Option<PathBuf>,
    /// Streamable HTTP sessions (with -p).
    #[arg(short = 's', long)]
    session: bool,
    /// API key clients must present (repeatable; also MCPD_KEYS and `keys` in the properties).
    #[arg(long = "key")]
    keys: Vec<String>,
    /// Allow binding a non-loopback address without any key.
    #[arg(long)]
    allow_unauthenticated: bool,
    /// Browser origin to accept besides loopback ones (repeatable).
    #[arg(long = "allow-origin")]
    allow_origins: Vec<String>,
    /// Host name to accept besides loopback ones (repeatable).
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Largest request body in bytes.
    #[arg(long)]
    max_body_bytes: Option<usize>,
    /// Longest a tool call may run, in seconds.
    #[arg(long)]
    tool_timeout: Option<u64>,
    /// HTTP worker threads (default: one per CPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Seconds of inactivity after which a session expires (with -s).
    #[arg(long)]
    session_idle_timeout: Option<u64>,
    /// Most sessions alive at once (with -s).
    #[arg(long)]
    max_sessions: Option<usize>,
    /// Seconds a tool waits for the client's answer to sampling, elicitation or roots requests.
    #[arg(long)]
    client_request_timeout: Option<u64>,
    /// Do not offer the file tools at all (they are on, read-only, by default).
    #[arg(long)]
    no_file_tools: bool,
    /// Enable the file tools that write (write_file, edit_file, delete_path, apply_patch, …).
    #[arg(long)]
    write: bool,
    /// Enable run_command (argv, never a shell unless --allow-shell).
    #[arg(long)]
    commands: bool,
    /// Let run_command take a shell command line.
    #[arg(long)]
    allow_shell: bool,
    /// An environment variable commands may see (repeatable; PATH, HOME, LANG, TERM by default).
    #[arg(long = "command-env")]
    command_env: Vec<String>,
    /// A JSON file of config-declared command tools.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// An mcpServers file whose servers' tools are re-exported (the gateway).
    #[arg(long)]
    servers: Option<PathBuf>,
    /// File where the listener's {host, port, enabled} settings persist.
    #[arg(long)]
    settings: Option<PathBuf>,
}

/// A failure that ends the process with a one-line message.
struct Fatal {
    code: u8,
    message: String,
}

fn usage(message: impl Into<String>) -> Fatal {
    Fatal { code: 2, message: message.into() }
}

fn main() -> ExitCode {
    // Client commands print results on stdout; keep their stderr to errors unless asked.
    let client = std::env::args().nth(1).is_some_and(|a| a == "tools" || a == "call");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(if client { "error" } else { "info" }))
        .target(env_logger::Target::Stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let rendered = e.render().to_string();
            let mut lines = rendered.lines();
            let mut first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_owned();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':') {
                if let Some(next) = lines.next() {
                    first = format!("{first} {}", next.trim());
                }
            }
            eprintln!("mcpd: {first} (see mcpd --help)");
            return ExitCode::from(2);
        }
    };
    let args = match cli.command {
        Some(Command::Serve(args)) => *args,
        Some(Command::Tools(args)) => {
            return client_command(|| async { mcpd_actors::cli_client::tools(args).await.map(|out| (out, false)) })
        }
        Some(Command::Call(args)) => return client_command(|| mcpd_actors::cli_client::call(args)),
        None => cli.serve,
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(fatal) => {
            eprintln!("mcpd: {}", fatal.message);
            ExitCode::from(fatal.code)
        }
    }
}

/// Runs a client command in an actix system and turns its outcome into an exit code.
#[allow(clippy::print_stdout)] // printing the result is the command's job
fn client_command<F, Fut>(command: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(String, bool), mcpd_actors::cli_client::Failure>>,
{
    match actix_rt::System::new().block_on(command()) {
        Ok((out, is_error)) => {
            if !out.is_empty() {
                println!("{out}");
            }
            if is_error {
                eprintln!("mcpd: the tool reported an error");
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(failure) => {
            eprintln!("mcpd: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Everything resolved from flags, the environment and the properties file.
struct Resolved {
    server: Arc<McpServer>,
    live: Arc<mcpd::catalog::LiveCatalog>,
    warnings: Vec<String>,
    listener: ListenerConfig,
    filter: ToolFilter,
    /// Tools per set (builtin, files, commands, declared), for the status and metrics.
    tool_sets: Vec<(&'static str, usize)>,
    /// The gateway's remote servers (from --servers).
    remotes: Vec<mcpd_actors::client::ServerRecord>,
    project_dir: PathBuf,
}

/// Whether a boolean property is set to true.
fn flag(props: &Properties, key: &str) -> bool {
    props.get(key).is_some_and(|v| matches!(v.trim(), "true" | "yes" | "1" | "on"))
}

fn load_properties(explicit: Option<&Path>) -> Result<Properties, Fatal> {
    match explicit {
        Some(path) => {
            Properties::load(path).map_err(|e| usage(format!("cannot read config file {}: {e}", path.display())))
        }
        None => match Properties::load(Path::new(DEFAULT_CONFIG_FILE)) {
            Ok(p) => Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Properties::default()),
            Err(e) => Err(usage(format!("cannot read {DEFAULT_CONFIG_FILE}: {e}"))),
        },
    }
}

fn resolve(args: &ServeArgs) -> Result<Resolved, Fatal> {
    let props = load_properties(args.config.as_deref())?;
    let bad = |e: mcpd::config::ConfigError| usage(e.to_string());
    if let Some(dir) = &args.project_dir {
        if !dir.is_dir() {
            return Err(usage(format!("project directory {} does not exist or is not a directory", dir.display())));
        }
    }
    let filter = ToolFilter::from_value(props.get("enabledTools"));
    let mut warnings = Vec::new();
    if let Some(warning) = filter.warning() {
        log::warn!("{warning}");
        warnings.push(warning);
    }
    let project_dir = match &args.project_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| usage(format!("no current directory: {e}")))?,
    };
    let root = mcpd_actors::tools::paths::ProjectRoot::new(&project_dir)
        .map_err(|e| usage(format!("project directory {}: {e}", project_dir.display())))?;
    let mut catalog = Catalog::new();
    // Which set each tool came from, counted after enabledTools.
    let mut set_of: Vec<(&'static str, String)> = Vec::new();
    let mut mark = |catalog: &Catalog, set: &'static str| {
        let new: Vec<String> = catalog
            .tools()
            .map(|entry| entry.definition.name.clone())
            .filter(|name| !set_of.iter().any(|(_, known)| known == name))
            .collect();
        set_of.extend(new.into_iter().map(|name| (set, name)));
    };
    mcpd::builtin::register(&mut catalog);
    mark(&catalog, "builtin");
    if !args.no_file_tools && props.get("fileTools").is_none_or(|v| v.trim() != "false") {
        let options = mcpd_actors::tools::files::FileToolOptions {
            write: args.write || flag(&props, "writeMode"),
            ..Default::default()
        };
        mcpd_actors::tools::files::register(&mut catalog, root.clone(), options);
    }
    mark(&catalog, "files");
    let declared = match args.tools.clone().or_else(|| props.get("toolsFile").map(PathBuf::from)) {
        Some(path) => mcpd_actors::tools::commands::load_declared(&path).map_err(usage)?,
        None => Vec::new(),
    };
    let declared_names: Vec<String> = declared.iter().map(|tool| tool.name.clone()).collect();
    let mut command_options = mcpd_actors::tools::commands::CommandOptions {
        enabled: args.commands || flag(&props, "commands.enabled"),
        allow_shell: args.allow_shell || flag(&props, "commands.shell"),
        ..Default::default()
    };
    let mut env_allow = args.command_env.clone();
    env_allow.extend(props.list("commands.env"));
    if !env_allow.is_empty() {
        command_options.env_allow.extend(env_allow);
    }
    let max_command_time = command_options.max_timeout;
    mcpd_actors::tools::commands::register(&mut catalog, root, command_options, declared);
    mark(&catalog, "commands");
    let mut tool_sets: Vec<(&'static str, usize)> =
        ["builtin", "files", "commands", "declared"].into_iter().map(|set| (set, 0)).collect();
    for (set, name) in &set_of {
        if !filter.allows(name) {
            continue;
        }
        let set = if *set == "commands" && declared_names.contains(name) { "declared" } else { *set };
        if let Some(entry) = tool_sets.iter_mut().find(|(s, _)| *s == set) {
            entry.1 += 1;
        }
    }
    catalog.retain_tools(|name| filter.allows(name));
    let remotes = match args.servers.clone().or_else(|| props.get("servers").map(PathBuf::from)) {
        Some(path) => mcpd_actors::tools::gateway::load_servers(&path).map_err(usage)?,
        None => Vec::new(),
    };
    let info = Implementation::new(
        args.name.clone().or_else(|| props.get("name").map(str::to_owned)).unwrap_or_else(|| "mcpd".to_owned()),
        args.server_version
            .clone()
            .or_else(|| props.get("version").map(str::to_owned))
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
    );
    // Stdio is one long session, and `-s` gives HTTP sessions: both can deliver list_changed and
    // resource updates.
    let sessions = args.session || args.port.is_none();
    let mut options = ServerOptions { info, sessions, ..ServerOptions::default() };
    if let Some(size) = props.parsed::<usize>("pageSize").map_err(bad)? {
        options.page_size = size.max(1);
    }
    let live = Arc::new(mcpd::catalog::LiveCatalog::new(catalog));
    let server = Arc::new(McpServer::with_live_catalog(options, live.clone()));

    let mut keys: Vec<String> = args.keys.clone();
    if let Ok(env_keys) = std::env::var(KEYS_ENV) {
        keys.extend(env_keys.split(',').map(str::to_owned));
    }
    keys.extend(props.list("keys"));
    let mut limits = Limits::default();
    // Commands may run up to their own maximum; the server's limit must not cut them first.
    limits.tool_timeout = limits.tool_timeout.max(max_command_time + Duration::from_secs(5));
    if let Some(bytes) = args.max_body_bytes.or(props.parsed("maxBodyBytes").map_err(bad)?) {
        limits.max_body_bytes = bytes;
    }
    if let Some(secs) = args.tool_timeout.or(props.parsed("toolTimeoutSeconds").map_err(bad)?) {
        limits.tool_timeout = Duration::from_secs(secs.max(1));
    }
    let mut allowed_origins = args.allow_origins.clone();
    allowed_origins.extend(props.list("allowedOrigins"));
    let mut allowed_hosts = args.allow_hosts.clone();
    allowed_hosts.extend(props.list("allowedHosts"));
    let mut sessions = SessionConfig::default();
    if let Some(secs) = args.session_idle_timeout.or(props.parsed("sessionIdleSeconds").map_err(bad)?) {
        sessions.idle_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(max) = args.max_sessions.or(props.parsed("maxSessions").map_err(bad)?) {
        sessions.max_sessions = max;
    }
    if let Some(secs) = args.client_request_timeout.or(props.parsed("clientRequestTimeoutSeconds").map_err(bad)?) {
        sessions.client_request_timeout = Duration::from_secs(secs.max(1));
    }
    let listener = ListenerConfig {
        host: args
            .host
            .clone()
            .or_else(|| props.get("host").map(str::to_owned))
            .unwrap_or_else(|| mcpd_actors::config::DEFAULT_HOST.to_owned()),
        port: args.port.or(props.parsed("port").map_err(bad)?).unwrap_or(mcpd::config::DEFAULT_PORT),
        keys: KeySet::new(keys),
        origins: OriginPolicy { allowed_origins, allowed_hosts },
        allow_unauthenticated: args.allow_unauthenticated,
        mode: if args.session { TransportMode::StreamableHttp } else { TransportMode::Http },
        limits,
        sessions,
        workers: args.workers.or(props.parsed("workers").map_err(bad)?).unwrap_or(0),
        settings_file: args.settings.clone(),
    };
    Ok(Resolved { server, live, warnings, listener, filter, tool_sets, remotes, project_dir })
}

fn run(args: ServeArgs) -> Result<(), Fatal> {
    let resolved = resolve(&args)?;
    if args.session && args.port.is_none() {
        return Err(usage("--session needs --port: sessions are an HTTP feature (stdio is one session already)"));
    }
    let system = actix_rt::System::new();
    match args.port {
        None => system.block_on(async move {
            let counts = Arc::new(mcpd_actors::ActorCounts::new());
            let gateway = gateway(&resolved, counts.clone());
            if let Some(gateway) = &gateway {
                // Remote tools are listed from the first tools/list on.
                gateway.refresh_all().await;
                gateway.retry_every(GATEWAY_RETRY);
            }
            log::debug!("serving MCP on stdio");
            let served = mcpd_actors::stdio::serve(
                resolved.server,
                resolved.listener.limits,
                counts,
                tokio::io::stdin(),
                tokio::io::stdout(),
            )
            .await;
            if let Some(gateway) = gateway {
                gateway.close().await;
            }
            served.map_err(|e| Fatal { code: 1, message: format!("stdin: {e}") })
        }),
        Some(_) => system.block_on(async move {
            let runtime = Mcpd::new(resolved.server.clone(), resolved.listener.clone(), resolved.warnings.clone());
            let gateway = gateway(&resolved, runtime.counts());
            observe(&runtime, &resolved, gateway.clone()).await;
            let status =
                runtime.start(resolved.listener).await.map_err(|e| Fatal { code: 1, message: e.to_string() })?;
            let eras = if args.session {
                "stateless 2026-07-28, streamable-HTTP sessions and HTTP+SSE for 2024-11-05…2025-11-25"
            } else {
                "stateless 2026-07-28 and session-less 2024-11-05…2025-11-25"
            };
            eprintln!("mcpd: listening on {} ({eras})", status.url);
            if let Some(gateway) = &gateway {
                // Remote tools appear as their servers answer (clients hear list_changed).
                let gateway = gateway.clone();
                actix_rt::spawn(async move {
                    gateway.refresh_all().await;
                    gateway.retry_every(GATEWAY_RETRY);
                });
            }
            wait_for_signal().await;
            log::info!("shutting down");
            if let Some(gateway) = gateway {
                gateway.close().await;
            }
            runtime.close().await.map_err(|e| Fatal { code: 1, message: e.to_string() })
        }),
    }
}

/// How often the gateway tries again to list the tools of remotes it could not reach.
const GATEWAY_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

/// The gateway over the configured remote servers, if any.
fn gateway(
    resolved: &Resolved,
    counts: Arc<mcpd_actors::ActorCounts>,
) -> Option<Arc<mcpd_actors::tools::gateway::Gateway>> {
    if resolved.remotes.is_empty() {
        return None;
    }
    Some(mcpd_actors::tools::gateway::Gateway::new(
        resolved.remotes.clone(),
        resolved.live.clone(),
        resolved.filter.clone(),
        counts,
    ))
}

/// Shows the tool sets and the remote servers' health in the status JSON and `/metrics`.
async fn observe(runtime: &Mcpd, resolved: &Resolved, gateway: Option<Arc<mcpd_actors::tools::gateway::Gateway>>) {
    let sets = resolved.tool_sets.clone();
    let project_dir = resolved.project_dir.display().to_string();
    let status_gateway = gateway.clone();
    let extras = Arc::new(move || {
        let remotes = status_gateway.as_ref().map(|g| g.health_json()).unwrap_or_else(|| serde_json::json!([]));
        let gateway_tools: usize =
            status_gateway.as_ref().map(|g| g.health().iter().map(|h| h.tools).sum()).unwrap_or(0);
        let mut tool_sets: serde_json::Map<String, serde_json::Value> =
            sets.iter().map(|(set, n)| ((*set).to_owned(), serde_json::json!(n))).collect();
        tool_sets.insert("gateway".into(), serde_json::json!(gateway_tools));
        serde_json::json!({ "projectDir": project_dir, "toolSets": tool_sets, "remotes": remotes })
    });
    if let Err(e) = runtime.set_status_extras(extras).await {
        log::warn!("status extras not set: {e}");
    }
    let sets = resolved.tool_sets.clone();
    runtime.metrics().set_gauges(Arc::new(move || {
        use mcpd_actors::metrics::GaugeSample;
        let mut samples: Vec<GaugeSample> = sets
            .iter()
            .map(|(set, n)| GaugeSample {
                name: "mcpd_tools_exposed",
                help: "Tools exposed per tool set",
                labels: vec![("set", (*set).to_owned())],
                value: *n as i64,
            })
            .collect();
        if let Some(gateway) = &gateway {
            let health = gateway.health();
            samples.push(GaugeSample {
                name: "mcpd_tools_exposed",
                help: "Tools exposed per tool set",
                labels: vec![("set", "gateway".to_owned())],
                value: health.iter().map(|h| h.tools as i64).sum(),
            });
            for remote in health {
                samples.push(GaugeSample {
                    name: "mcpd_remote_up",
                    help: "Whether the last contact with a remote server succeeded",
                    labels: vec![("server", remote.name.clone()), ("transport", remote.transport.clone())],
                    value: i64::from(remote.up),
                });
                samples.push(GaugeSample {
                    name: "mcpd_remote_tools",
                    help: "Tools re-exported from a remote server",
                    labels: vec![("server", remote.name)],
                    value: remote.tools as i64,
                });
            }
        }
        samples
    }));
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use actix_rt::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = actix_rt::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = actix_rt::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = actix_rt::signal::ctrl_c().await;
    }
}
