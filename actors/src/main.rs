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
    Serve(ServeArgs),
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
        Some(Command::Serve(args)) => args,
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
    warnings: Vec<String>,
    listener: ListenerConfig,
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
    let mut catalog = Catalog::new();
    mcpd::builtin::register(&mut catalog);
    catalog.retain_tools(|name| filter.allows(name));
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
    let server = Arc::new(McpServer::new(options, catalog));

    let mut keys: Vec<String> = args.keys.clone();
    if let Ok(env_keys) = std::env::var(KEYS_ENV) {
        keys.extend(env_keys.split(',').map(str::to_owned));
    }
    keys.extend(props.list("keys"));
    let mut limits = Limits::default();
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
    Ok(Resolved { server, warnings, listener })
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
            log::debug!("serving MCP on stdio");
            mcpd_actors::stdio::serve(
                resolved.server,
                resolved.listener.limits,
                counts,
                tokio::io::stdin(),
                tokio::io::stdout(),
            )
            .await
            .map_err(|e| Fatal { code: 1, message: format!("stdin: {e}") })
        }),
        Some(_) => system.block_on(async move {
            let runtime = Mcpd::new(resolved.server, resolved.listener.clone(), resolved.warnings);
            let status =
                runtime.start(resolved.listener).await.map_err(|e| Fatal { code: 1, message: e.to_string() })?;
            eprintln!(
                "mcpd: listening on {} (stateless 2026-07-28 and session-less 2024-11-05…2025-11-25)",
                status.url
            );
            wait_for_signal().await;
            log::info!("shutting down");
            runtime.close().await.map_err(|e| Fatal { code: 1, message: e.to_string() })
        }),
    }
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
