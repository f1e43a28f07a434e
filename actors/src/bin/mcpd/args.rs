//! The command line of `mcpd`: `serve` (the default), the client commands `tools`, `call` and
//! `task`, and `login` / `logout` (OAuth credentials for remotes), parsed with clap. Only the parsing lives here; [`crate::settings`] turns the serve flags into
//! a configuration.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// What `mcpd --help` opens with.
const ABOUT: &str = "Serve tools, prompts and resources to MCP clients (stdio by default, HTTP with -p), \
put remote MCP servers behind one endpoint (--servers), or call a remote server (tools, call, task, login).";

/// mcpd: serve MCP over stdio or HTTP, federate remote servers, or call one.
#[derive(Debug, Parser)]
#[command(name = "mcpd", version, about = ABOUT, args_conflicts_with_subcommands = true, disable_version_flag = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// Print mcpd's own version and exit.
    #[arg(short = 'V', long = "mcpd-version", action = clap::ArgAction::Version)]
    pub(crate) mcpd_version: Option<bool>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve MCP: over stdio, or over HTTP with -p.
    Serve(Box<ServeArgs>),
    /// List a remote MCP server's tools.
    Tools(crate::client::ToolsArgs),
    /// Call a tool of a remote MCP server (exit 1 when the tool reports an error); a task the
    /// server makes of the call is waited for.
    Call(crate::client::CallArgs),
    /// Read or cancel a task of a remote MCP server (the tasks extension, 2026-07-28).
    Task(crate::client::TaskArgs),
    /// Log in to a remote MCP server that needs OAuth (opens a browser; stores the credentials).
    Login(crate::login::LoginArgs),
    /// Forget the stored OAuth credentials of a remote MCP server.
    Logout(crate::login::LogoutArgs),
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// Serve HTTP on this port (0: any free port) instead of stdio.
    #[arg(short = 'p', long)]
    pub(crate) port: Option<u16>,
    /// Address to bind (default 127.0.0.1, or `host` from the properties file).
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// Cluster mode (`redis`): share the MRTR requestState keys, the tasks and the
    /// streamable-HTTP sessions with the other instances through this Redis
    /// (`redis://[:PASSWORD@]HOST:PORT[/DB]`), so that any instance behind a load balancer
    /// serves any request. Needs --port.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: Option<String>,
    /// Cluster mode: how often the shared requestState sealing key changes, in seconds
    /// (`redis.keyRotationSecs`; default 86400, at least 60).
    #[arg(long = "redis-key-rotation", value_name = "SECS")]
    pub(crate) redis_key_rotation: Option<u64>,
    /// Export OpenTelemetry traces and metrics over OTLP/HTTP to the collector at this base URL
    /// (`otlpEndpoint`; as `OTEL_EXPORTER_OTLP_ENDPOINT`, which it stands for: the other
    /// `OTEL_*` variables apply). Off unless an endpoint is configured.
    #[arg(long = "otlp-endpoint", value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// Server name reported to clients.
    #[arg(short = 'n', long)]
    pub(crate) name: Option<String>,
    /// Server version reported to clients.
    #[arg(short = 'v', long = "version")]
    pub(crate) server_version: Option<String>,
    /// Display title reported to clients (`title`).
    #[arg(long)]
    pub(crate) title: Option<String>,
    /// Home page reported to clients, an http(s) URL (`websiteUrl`).
    #[arg(long, value_name = "URL")]
    pub(crate) website_url: Option<String>,
    /// An icon reported to clients: `SRC [mime=TYPE] [sizes=WxH,…] [theme=light|dark]`, SRC an
    /// http(s) or data: URI (repeatable; replaces `icons`).
    #[arg(long = "icon", value_name = "SPEC")]
    pub(crate) icons: Vec<String>,
    /// Project directory for tools (default: the current directory).
    #[arg(short = 'd', long = "project-dir", alias = "projectDir")]
    pub(crate) project_dir: Option<PathBuf>,
    /// Properties file (default: ./mcp.properties when present).
    #[arg(short = 'c', long)]
    pub(crate) config: Option<PathBuf>,
    /// Streamable HTTP sessions (with -p).
    #[arg(short = 's', long)]
    pub(crate) session: bool,
    /// API key clients must present (repeatable; also MCPD_KEYS and `keys` in the properties).
    #[arg(long = "key")]
    pub(crate) keys: Vec<String>,
    /// Allow binding a non-loopback address without any key.
    #[arg(long)]
    pub(crate) allow_unauthenticated: bool,
    /// Browser origin to accept besides loopback ones (repeatable).
    #[arg(long = "allow-origin")]
    pub(crate) allow_origins: Vec<String>,
    /// Host name to accept besides loopback ones (repeatable).
    #[arg(long = "allow-host")]
    pub(crate) allow_hosts: Vec<String>,
    /// Largest request body in bytes.
    #[arg(long)]
    pub(crate) max_body_bytes: Option<usize>,
    /// Longest a tool call may run, in seconds.
    #[arg(long)]
    pub(crate) tool_timeout: Option<u64>,
    /// HTTP worker threads (default: one per CPU).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Seconds of inactivity after which a session expires (with -s).
    #[arg(long)]
    pub(crate) session_idle_timeout: Option<u64>,
    /// Most sessions alive at once (with -s).
    #[arg(long)]
    pub(crate) max_sessions: Option<usize>,
    /// Seconds a tool waits for the client's answer to sampling, elicitation or roots requests.
    #[arg(long)]
    pub(crate) client_request_timeout: Option<u64>,
    /// Most open HTTP connections (default 10000, at most 3/4 of the open-file limit).
    #[arg(long)]
    pub(crate) max_connections: Option<usize>,
    /// Most requests still waiting for their body after 1 s (default: half of --max-connections).
    #[arg(long)]
    pub(crate) max_slow_bodies: Option<usize>,
    /// Seconds a request body may take to arrive before it is answered 408 (default 30).
    #[arg(long)]
    pub(crate) body_timeout: Option<u64>,
    /// Seconds a new connection's request head may take to arrive (default 5; 0: no limit).
    #[arg(long)]
    pub(crate) header_timeout: Option<u64>,
    /// Seconds an idle keep-alive connection stays open (default 5; 0: no keep-alive).
    #[arg(long)]
    pub(crate) keep_alive: Option<u64>,
    /// Seconds a client may accept none of the data sent to it before it is dropped (default 60; 0: never).
    #[arg(long)]
    pub(crate) send_timeout: Option<u64>,
    /// Most requests running at once per session or stdio connection (default 128).
    #[arg(long)]
    pub(crate) max_in_flight: Option<usize>,
    /// Most messages queued for a slow reader: SSE events before the stream is cut off,
    /// notifications before they are dropped (default 1024).
    #[arg(long)]
    pub(crate) max_queued_messages: Option<usize>,
    /// Most bytes of SSE events queued for a slow reader before the stream is cut off (default 8 MiB).
    #[arg(long)]
    pub(crate) max_queued_bytes: Option<usize>,
    /// OAuth 2.1: accept access tokens of this authorization server (its issuer URL; repeatable;
    /// `auth.issuers`). Turns OAuth on.
    #[arg(long = "auth-issuer", value_name = "URL")]
    pub(crate) auth_issuers: Vec<String>,
    /// This server's resource URL, the `aud` tokens must carry (default: http://HOST:PORT/mcp as
    /// bound; set it behind a proxy).
    #[arg(long = "auth-resource", value_name = "URL")]
    pub(crate) auth_resource: Option<String>,
    /// A scope every request's token needs (repeatable; `auth.scopes`).
    #[arg(long = "auth-scope", value_name = "SCOPE")]
    pub(crate) auth_scopes: Vec<String>,
    /// Scopes the tools matching PATTERN need (`remote__*=docs:read`; repeatable;
    /// `auth.toolScope.PATTERN=SCOPES`).
    #[arg(long = "auth-tool-scope", value_name = "PATTERN=SCOPES")]
    pub(crate) auth_tool_scopes: Vec<String>,
    /// RFC 7662 introspection endpoint for opaque tokens (with --auth-client-id and the secret in
    /// --auth-client-secret-file or MCPD_AUTH_CLIENT_SECRET).
    #[arg(long = "auth-introspection", value_name = "URL")]
    pub(crate) auth_introspection: Option<String>,
    /// The client id mcpd introspects tokens with.
    #[arg(long = "auth-client-id", value_name = "ID")]
    pub(crate) auth_client_id: Option<String>,
    /// A file holding the introspection client secret (never on the command line).
    #[arg(long = "auth-client-secret-file", value_name = "FILE")]
    pub(crate) auth_client_secret_file: Option<PathBuf>,
    /// The scope that makes a token's caller an operator, who may read /status and /metrics
    /// (default mcp:admin).
    #[arg(long = "auth-operator-scope", value_name = "SCOPE")]
    pub(crate) auth_operator_scope: Option<String>,
    /// Shortest time in seconds between key-set fetches caused by an unknown key id (default 30).
    #[arg(long = "auth-jwks-refresh", value_name = "SECONDS")]
    pub(crate) auth_jwks_refresh: Option<u64>,
    /// Do not offer the file tools; with them the project's files are no resources either
    /// (unless --file-resources) and prompts embed none: no project file is reachable.
    #[arg(long, conflicts_with = "file_tools")]
    pub(crate) no_file_tools: bool,
    /// Offer the file tools (read-only unless --write): the default, except for a gateway
    /// (--servers), which serves its remotes and no local file unless asked.
    #[arg(long)]
    pub(crate) file_tools: bool,
    /// Enable the file tools that write (write_file, edit_file, delete_path, apply_patch, …).
    #[arg(long)]
    pub(crate) write: bool,
    /// Enable run_command (argv, never a shell unless --allow-shell).
    #[arg(long)]
    pub(crate) commands: bool,
    /// Let run_command take a shell command line.
    #[arg(long)]
    pub(crate) allow_shell: bool,
    /// An environment variable commands may see (repeatable; PATH, HOME, LANG, TERM by default).
    #[arg(long = "command-env")]
    pub(crate) command_env: Vec<String>,
    /// A JSON file of config-declared command tools (and prompts); its tools are reloaded when
    /// it changes and on SIGHUP.
    #[arg(long)]
    pub(crate) tools: Option<PathBuf>,
    /// Only the prompts matching these patterns (`*`, `?`; separated by commas; `enabledPrompts`).
    #[arg(long, value_name = "PATTERNS")]
    pub(crate) enabled_prompts: Option<String>,
    /// An mcpServers file whose servers' tools, prompts and resources are re-exported (the
    /// gateway); reloaded when it changes and on SIGHUP.
    #[arg(long)]
    pub(crate) servers: Option<PathBuf>,
    /// A JSON access file: named clients, each with its key and the tools, prompts and resources
    /// it may use (HTTP only; reloaded when it changes and on SIGHUP).
    #[arg(long, value_name = "FILE")]
    pub(crate) access: Option<PathBuf>,
    /// Files no file tool or resource serves, beside mcpd's own configuration and the defaults
    /// (.env*, *.pem, *.key, .git/, .ssh/, …): `.gitignore` patterns, separated by commas,
    /// repeatable (`denyFiles`); `!PATTERN` allows again.
    #[arg(long = "deny-files", value_name = "PATTERNS", value_delimiter = ',')]
    pub(crate) deny_files: Vec<String>,
    /// Drop the default deny patterns (`defaultDenyFiles=false`); mcpd's own configuration and
    /// secret files stay refused.
    #[arg(long)]
    pub(crate) no_default_deny_files: bool,
    /// Do not offer the project's files as resources (file:///{+path}, the listing, subscriptions).
    #[arg(long, conflicts_with = "file_resources")]
    pub(crate) no_file_resources: bool,
    /// Offer the project's files as resources even without the file tools (by default they go
    /// with the file tools).
    #[arg(long)]
    pub(crate) file_resources: bool,
    /// Resources to expose: URI patterns with * and ? (`file:///docs/*, note://*`; default all).
    #[arg(long = "enabled-resources", value_name = "PATTERNS")]
    pub(crate) enabled_resources: Option<String>,
    /// Largest project file or command output a resource read returns (default 1048576).
    #[arg(long = "max-resource-bytes", value_name = "BYTES")]
    pub(crate) max_resource_bytes: Option<u64>,
    /// Most project files resources/list shows (default 1000).
    #[arg(long = "max-listed-resources", value_name = "N")]
    pub(crate) max_listed_resources: Option<usize>,
    /// Most subscribed project files watched at once (default 256).
    #[arg(long = "max-watched-resources", value_name = "N")]
    pub(crate) max_watched_resources: Option<usize>,
    /// Sessions one identity (access-file client, OAuth subject, key) may hold at once (default:
    /// a quarter of --max-sessions; a client's "limits" override it).
    #[arg(long = "session-share", value_name = "N")]
    pub(crate) session_share: Option<usize>,
    /// Streams one identity may hold open at once: standalone GETs, subscriptions/listen,
    /// 2024-11-05 streams (default: a quarter of --max-connections).
    #[arg(long = "stream-share", value_name = "N")]
    pub(crate) stream_share: Option<usize>,
    /// Requests one identity may have running at once, across its sessions and stateless calls
    /// (default: a quarter of --max-connections).
    #[arg(long = "in-flight-share", value_name = "N")]
    pub(crate) in_flight_share: Option<usize>,
    /// When --max-sessions is reached, end an idle session of the identity holding the most
    /// (never a session in use) to make room for a new one.
    #[arg(long)]
    pub(crate) evict_idle_sessions: bool,
    /// Do not offer the tasks extension (every call answers synchronously; tasks/* is -32601).
    #[arg(long)]
    pub(crate) no_tasks: bool,
    /// How long a task and its result are kept, from creation, in ms; 0 = unlimited (default 300000).
    #[arg(long = "task-ttl", value_name = "MS")]
    pub(crate) task_ttl: Option<u64>,
    /// The poll interval suggested to clients, in ms (default 1000).
    #[arg(long = "task-poll-interval", value_name = "MS")]
    pub(crate) task_poll_interval: Option<u64>,
    /// How long a call of a task-optional tool runs before it becomes a task, in ms (default 1000).
    #[arg(long = "task-after", value_name = "MS")]
    pub(crate) task_after: Option<u64>,
    /// Most tasks held at once (default 1000).
    #[arg(long = "max-tasks", value_name = "N")]
    pub(crate) max_tasks: Option<usize>,
    /// Most tasks held at once per client identity (default 100).
    #[arg(long = "max-tasks-per-client", value_name = "N")]
    pub(crate) max_tasks_per_client: Option<usize>,
    /// File where the listener's {host, port, enabled} settings persist.
    #[arg(long)]
    pub(crate) settings: Option<PathBuf>,
    /// The OAuth credentials file the gateway's remotes use (default: that of mcpd login).
    #[arg(long, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
}

impl Cli {
    /// Parses the command line. Help and version requests print and end with `Ok(None)`;
    /// a bad command line is one line on stderr (`Err` carries the exit code 2).
    pub(crate) fn parse_or_explain() -> Result<Option<Cli>, u8> {
        use clap::error::ErrorKind;
        match Cli::try_parse() {
            Ok(cli) => Ok(Some(cli)),
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                let _ = e.print();
                Ok(None)
            }
            Err(e) => {
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
                Err(2)
            }
        }
    }
}
