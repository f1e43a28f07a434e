//! Turns the serve flags, the environment (`MCPD_KEYS`) and the properties file into one typed
//! configuration. A flag wins over its property; lists (keys, origins, hosts, command variables)
//! add up. The catalog itself is assembled by the library (`mcpd_actors::tools::sets`).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use mcpd::auth::oauth::{IntrospectionSettings, OAuthSettings, Secret};
use mcpd::auth::{KeySet, OriginPolicy};
use mcpd::catalog::LiveCatalog;
use mcpd::config::{Properties, ToolFilter};
use mcpd::model::Implementation;
use mcpd::server::TaskOptions;
use mcpd::telemetry::{EndpointSetting, TelemetryConfig};
use mcpd::{McpServer, ServerOptions};
use mcpd_actors::access::AccessControl;
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::commands::{load_declarations, CommandOptions, CommandTools, Declarations};
use mcpd_actors::tools::files::{self, FileToolOptions};
use mcpd_actors::tools::gateway::load_servers_file;
use mcpd_actors::tools::paths::ProjectRoot;
use mcpd_actors::tools::prompts::{load_prompts, PromptOptions};
use mcpd_actors::tools::reach::{Callers, FileTools, ProjectReach};
use mcpd_actors::tools::resources::{self, FileWatch, ResourceCounts, ResourceOptions};
use mcpd_actors::tools::sets::{assemble, PromptSetOptions, ToolSet, ToolSetOptions};
use mcpd_actors::{ConnectionLimits, Limits, ListenerConfig, SessionConfig, ShareConfig, TransportMode};

use crate::args::ServeArgs;
use crate::exposure::{self, OwnFiles};
use crate::Fatal;

/// The default properties file, read when present.
const DEFAULT_CONFIG_FILE: &str = "mcp.properties";
/// Environment variable with comma-separated API keys.
const KEYS_ENV: &str = "MCPD_KEYS";

/// Everything `mcpd serve` runs with.
pub(crate) struct Settings {
    /// The protocol layer over the assembled catalog.
    pub(crate) server: Arc<McpServer>,
    /// The catalog the gateway adds its remotes' tools to.
    pub(crate) live: Arc<LiveCatalog>,
    /// Configuration warnings, shown in the log and the status.
    pub(crate) warnings: Vec<String>,
    /// The HTTP listener's configuration (its limits apply to stdio too).
    pub(crate) listener: ListenerConfig,
    /// `enabledTools`, which also filters the gateway's tools.
    pub(crate) filter: ToolFilter,
    /// Tools exposed per local set.
    pub(crate) exposed: Vec<(ToolSet, usize)>,
    /// Declared prompts exposed (after `enabledPrompts`).
    pub(crate) exposed_prompts: usize,
    /// `enabledPrompts`, which also filters the gateway's prompts.
    pub(crate) prompt_filter: ToolFilter,
    /// `enabledResources`, which also filters the gateway's resources.
    pub(crate) resource_filter: ToolFilter,
    /// The gateway's remote servers (from `--servers`).
    pub(crate) remotes: Vec<ServerRecord>,
    /// The servers file (`--servers` / `servers`), watched for reloads.
    pub(crate) servers_file: Option<PathBuf>,
    /// The declarations file (`--tools` / `toolsFile`), whose tools are watched for reloads.
    pub(crate) tools_file: Option<PathBuf>,
    /// The command tools, to replace the declared ones when the tools file changes.
    pub(crate) commands: CommandTools,
    /// The OAuth credentials file of the gateway's remotes (`--credentials`, the `credentials`
    /// property, else the default of `mcpd login`; none without a place for it).
    pub(crate) credentials: Option<PathBuf>,
    /// The directory the file and command tools are confined to.
    pub(crate) project_dir: PathBuf,
    /// Resources exposed per kind, and the watch of subscribed project files.
    pub(crate) resources: (ResourceCounts, Arc<FileWatch>),
    /// Cluster mode's Redis URL (`--redis` / `redis`) and settings.
    pub(crate) redis: Option<mcpd_actors::cluster::ClusterConfig>,
    /// OpenTelemetry export (`--otlp-endpoint` / `otlpEndpoint` and the `OTEL_*` variables);
    /// `None`: off.
    pub(crate) telemetry: Option<TelemetryConfig>,
    /// The project directory as the tools and resources reach it (its deny set's own files
    /// are updated on reload).
    pub(crate) root: ProjectRoot,
    /// What callers can reach of the project (the startup log line, the status JSON).
    pub(crate) reach: ProjectReach,
}

fn usage(message: impl Into<String>) -> Fatal {
    Fatal::usage(message)
}

/// Whether a boolean property is set to true.
fn flag(props: &Properties, key: &str) -> bool {
    props.get(key).is_some_and(|v| matches!(v.trim(), "true" | "yes" | "1" | "on"))
}

/// The flag's value, else the property's, else none. The property must parse even when the
/// flag is given: a broken properties file is reported, not hidden.
fn pick<T: FromStr>(flag: Option<T>, props: &Properties, key: &str) -> Result<Option<T>, Fatal> {
    let property = props.parsed(key).map_err(|e| usage(e.to_string()))?;
    Ok(flag.or(property))
}

/// The flag's text, else the property's.
fn pick_text(flag: &Option<String>, props: &Properties, key: &str) -> Option<String> {
    flag.clone().or_else(|| props.get(key).map(str::to_owned))
}

/// The properties, and the file they were read from (none when the default file is absent).
fn load_properties(explicit: Option<&Path>) -> Result<(Properties, Option<PathBuf>), Fatal> {
    match explicit {
        Some(path) => Properties::load(path)
            .map(|p| (p, Some(path.to_owned())))
            .map_err(|e| usage(format!("cannot read config file {}: {e}", path.display()))),
        None => match Properties::load(Path::new(DEFAULT_CONFIG_FILE)) {
            Ok(p) => Ok((p, Some(PathBuf::from(DEFAULT_CONFIG_FILE)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Properties::default(), None)),
            Err(e) => Err(usage(format!("cannot read {DEFAULT_CONFIG_FILE}: {e}"))),
        },
    }
}

/// Resolves the serve flags into [`Settings`].
///
/// # Errors
/// A usage error (exit 2) naming the flag, property or file that cannot be used.
pub(crate) fn resolve(args: &ServeArgs) -> Result<Settings, Fatal> {
    let (props, props_file) = load_properties(args.config.as_deref())?;
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
    let root = ProjectRoot::new(&project_dir)
        .map_err(|e| usage(format!("project directory {}: {e}", project_dir.display())))?
        .with_deny_patterns(&exposure::deny_patterns(args, &props))
        .map_err(|e| usage(format!("--deny-files: {e}")))?;

    // The declarations file (tools, prompts, resources) is read here; its tools again when it
    // changes (`serve`).
    let declarations = match args.tools.clone().or_else(|| props.get("toolsFile").map(PathBuf::from)) {
        Some(path) => {
            let declarations = load_declarations(&path).map_err(usage)?;
            Some((path, declarations))
        }
        None => None,
    };
    let (declarations_path, declarations) = declarations.unzip();
    let Declarations { tools: declared_tools, prompts: declared_prompts, resources: declared_resources } =
        declarations.unwrap_or_default();
    let declared_prompts = match &declarations_path {
        Some(path) => load_prompts(declared_prompts, &path.display().to_string()).map_err(usage)?,
        None => Vec::new(),
    };
    let servers_file = args.servers.clone().or_else(|| props.get("servers").map(PathBuf::from));
    // One switch for what callers reach of the project; a gateway serves its remotes.
    let reach = exposure::file_switches(args, &props, servers_file.is_some());
    let tool_options = tool_options(args, &props, reach, declared_tools, declared_prompts, &mut warnings)?;
    let prompt_filter = tool_options.prompts.filter.clone().unwrap_or(ToolFilter::All);
    let declared_scopes: Vec<(String, Vec<String>)> =
        tool_options.declared.iter().map(|t| (t.name.clone(), t.required_scopes.clone())).collect();
    // Commands may run up to their own maximum; the server's limit must not cut them first.
    let max_command_time = tool_options.commands.max_timeout;
    let command_options = tool_options.commands.clone();
    let servers = servers_file.as_deref().map(load_servers_file).transpose().map_err(usage)?;
    let (remotes, views) = servers.map_or((Vec::new(), None), |config| (config.records, Some(config.views)));
    let mut listener = listener_config(args, &props, max_command_time)?;
    // With a servers file, virtual servers may come with a reload even when it declares none.
    listener.virtual_servers = views.map(|views| Arc::new(mcpd_actors::views::VirtualServers::new(views)));
    if listener.access.is_some() && args.port.is_none() {
        warnings.push("the access file applies to HTTP only (-p): stdio has one client, served everything".into());
    }
    if let Some(access) = &listener.access {
        let known = listener.virtual_servers.as_ref().map(|views| views.names()).unwrap_or_default();
        warnings.extend(access.unknown_servers(&known).into_iter().inspect(|warning| log::warn!("{warning}")));
    }
    listener.oauth = oauth_settings(args, &props, &declared_scopes)?;
    let credentials = args.credentials.clone().or_else(|| props.get("credentials").map(PathBuf::from));
    let credentials = crate::login::credentials_path(credentials).ok();
    let redis = pick_text(&args.redis, &props, "redis").filter(|url| !url.trim().is_empty());
    if redis.is_some() && args.port.is_none() {
        return Err(usage("--redis needs --port: cluster mode shares HTTP instances' state (stdio is one process)"));
    }
    let rotation = pick(args.redis_key_rotation, &props, "redis.keyRotationSecs")?;
    if rotation.is_some() && redis.is_none() {
        return Err(usage("--redis-key-rotation needs --redis"));
    }
    let redis = redis.map(|url| {
        let mut config = mcpd_actors::cluster::ClusterConfig::new(url);
        if let Some(secs) = rotation {
            config.rotation = Duration::from_secs(secs);
        }
        config
    });
    // `--otlp-endpoint`, else `otlpEndpoint`, stands for OTEL_EXPORTER_OTLP_ENDPOINT.
    let otlp = EndpointSetting::pick(args.otlp_endpoint.as_deref(), props.get("otlpEndpoint"));
    let telemetry =
        TelemetryConfig::read(|name| std::env::var(name).ok(), otlp.as_ref()).map_err(|e| usage(e.to_string()))?;
    let own = OwnFiles {
        properties: props_file.into_iter().chain(args.settings.clone()).collect(),
        servers: servers_file.clone(),
        tools: declarations_path.clone(),
        secrets: credentials
            .iter()
            .cloned()
            .chain(introspection_secret_file(args, &props))
            .chain(std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()).map(PathBuf::from))
            .collect(),
    };
    own.protect(root.deny(), listener.access.as_deref());
    for warning in own.warnings(&project_dir, listener.access.as_deref(), &props) {
        log::warn!("{warning}");
        warnings.push(warning);
    }
    let reach_tools = tool_options.files.clone();
    let mut tools = assemble(&root, tool_options, &filter);
    let declared_resources = match &declarations_path {
        Some(path) => resources::check_declared(path, declared_resources, &root).map_err(usage)?,
        None => Vec::new(),
    };
    let resource_filter = resource_filter(args, &props, &mut warnings);
    let resource_options = resource_options(args, &props, reach.1)?;
    let resources = resources::register(
        &mut tools.catalog,
        &root,
        &resource_options,
        &command_options,
        declared_resources,
        &resource_filter,
    );
    let mut info = Implementation::new(
        pick_text(&args.name, &props, "name").unwrap_or_else(|| "mcpd".to_owned()),
        pick_text(&args.server_version, &props, "version").unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
    );
    crate::metadata::apply(&mut info, args.title.as_deref(), args.website_url.as_deref(), &args.icons, &props)
        .map_err(usage)?;
    // Stdio is one long session, and `-s` gives HTTP sessions: both can deliver list_changed and
    // resource updates.
    let sessions = args.session || args.port.is_none();
    let mut options = ServerOptions { info, sessions, ..ServerOptions::default() };
    if let Some(size) = pick::<usize>(None, &props, "pageSize")? {
        options.page_size = size.max(1);
    }
    options.tasks = task_options(args, &props)?;
    let file_tools = match &reach_tools {
        None => FileTools::Off,
        Some(options) if options.write => FileTools::ReadWrite,
        Some(_) => FileTools::Read,
    };
    let callers = match &listener.access {
        Some(access) => Callers::Clients {
            access: access.clone(),
            keys: !listener.keys.is_empty(),
            tokens: listener.oauth.is_some(),
        },
        None if !listener.keys.is_empty() || listener.oauth.is_some() => Callers::Admitted,
        None => Callers::Anyone,
    };
    let project_reach = ProjectReach {
        dir: project_dir.clone(),
        file_tools,
        tool_names: reach_tools.as_ref().map(files::tool_names).unwrap_or_default(),
        file_resources: reach.1,
        files_listed: resources.0.files,
        prompts_embed: reach.0 || reach.1,
        callers,
        deny: root.deny().clone(),
    };
    let live = Arc::new(LiveCatalog::new(tools.catalog));
    resources::install_watch(&live, &resources.1);
    let server = Arc::new(McpServer::with_live_catalog(options, live.clone()));
    Ok(Settings {
        server,
        live,
        warnings,
        listener,
        filter,
        exposed: tools.exposed,
        exposed_prompts: tools.prompts,
        prompt_filter,
        resource_filter,
        remotes,
        servers_file,
        tools_file: declarations_path,
        commands: tools.commands,
        credentials,
        project_dir,
        resources,
        redis,
        telemetry,
        root,
        reach: project_reach,
    })
}

/// The tool sets (and declared prompts) the flags and properties ask for.
fn tool_options(
    args: &ServeArgs,
    props: &Properties,
    (file_tools, file_resources): (bool, bool),
    declared: Vec<mcpd_actors::tools::commands::DeclaredTool>,
    declared_prompts: Vec<mcpd_actors::tools::prompts::DeclaredPrompt>,
    warnings: &mut Vec<String>,
) -> Result<ToolSetOptions, Fatal> {
    let files = file_tools
        .then(|| FileToolOptions { write: args.write || flag(props, "writeMode"), ..FileToolOptions::default() });
    let mut commands = CommandOptions {
        enabled: args.commands || flag(props, "commands.enabled"),
        allow_shell: args.allow_shell || flag(props, "commands.shell"),
        ..CommandOptions::default()
    };
    commands.env_allow.extend(args.command_env.iter().cloned());
    commands.env_allow.extend(props.list("commands.env"));
    let mut prompts = prompt_options(args, props, declared_prompts, warnings)?;
    prompts.options.embed_files = file_tools || file_resources;
    Ok(ToolSetOptions { files, commands, declared, prompts })
}

/// Declared prompts: their limits (`prompts.maxEmbedBytes`, `prompts.maxOutputBytes`) and
/// `--enabled-prompts` / `enabledPrompts` (the patterns of `enabledTools`).
fn prompt_options(
    args: &ServeArgs,
    props: &Properties,
    declared: Vec<mcpd_actors::tools::prompts::DeclaredPrompt>,
    warnings: &mut Vec<String>,
) -> Result<PromptSetOptions, Fatal> {
    let mut options = PromptOptions::default();
    if let Some(bytes) = pick::<u64>(None, props, "prompts.maxEmbedBytes")? {
        options.max_embed_bytes = bytes;
    }
    if let Some(bytes) = pick::<usize>(None, props, "prompts.maxOutputBytes")? {
        options.max_output_bytes = bytes;
    }
    let patterns = args.enabled_prompts.as_deref().or_else(|| props.get("enabledPrompts"));
    let filter = patterns.map(|p| ToolFilter::from_value(Some(p)));
    if matches!(&filter, Some(ToolFilter::Patterns(p)) if p.is_empty()) {
        let warning = "enabledPrompts is set but empty: NO prompts are exposed. Remove it to expose every prompt, \
                       or list patterns such as `review, git_*`."
            .to_owned();
        log::warn!("{warning}");
        warnings.push(warning);
    }
    Ok(PromptSetOptions { declared, options, filter })
}

/// The tasks extension's settings: `--no-tasks` / `tasks.enabled`, `--task-ttl` / `tasks.ttlMs`
/// (0: unlimited), `--task-poll-interval` / `tasks.pollIntervalMs`, `--task-after` /
/// `tasks.afterMs`, `--max-tasks` / `tasks.max`, `--max-tasks-per-client` / `tasks.maxPerClient`.
fn task_options(args: &ServeArgs, props: &Properties) -> Result<TaskOptions, Fatal> {
    let mut tasks = TaskOptions::default();
    let enabled: Option<bool> = pick(None, props, "tasks.enabled")?;
    tasks.enabled = !args.no_tasks && enabled.unwrap_or(true);
    if let Some(ttl) = pick(args.task_ttl, props, "tasks.ttlMs")? {
        tasks.ttl_ms = (ttl > 0).then_some(ttl);
    }
    if let Some(poll) = pick(args.task_poll_interval, props, "tasks.pollIntervalMs")? {
        tasks.poll_interval_ms = poll.max(1);
    }
    if let Some(after) = pick(args.task_after, props, "tasks.afterMs")? {
        tasks.task_after_ms = after;
    }
    if let Some(max) = pick(args.max_tasks, props, "tasks.max")? {
        tasks.max_tasks = max;
    }
    if let Some(max) = pick(args.max_tasks_per_client, props, "tasks.maxPerClient")? {
        tasks.max_per_client = max;
    }
    Ok(tasks)
}

/// The resources' options: project files when `files` ([`exposure::file_switches`]), and the
/// limits of reads, listings and watches.
fn resource_options(args: &ServeArgs, props: &Properties, files: bool) -> Result<ResourceOptions, Fatal> {
    let mut options = ResourceOptions { files, ..ResourceOptions::default() };
    if let Some(bytes) = pick(args.max_resource_bytes, props, "maxResourceBytes")? {
        options.max_read_bytes = bytes.max(1);
    }
    if let Some(max) = pick(args.max_listed_resources, props, "maxListedResources")? {
        options.max_listed = max;
    }
    if let Some(max) = pick(args.max_watched_resources, props, "maxWatchedResources")? {
        options.max_watched = max;
    }
    Ok(options)
}

/// `--enabled-resources` / `enabledResources` (URI patterns; absent: every resource).
fn resource_filter(args: &ServeArgs, props: &Properties, warnings: &mut Vec<String>) -> ToolFilter {
    let filter = ToolFilter::from_value(args.enabled_resources.as_deref().or_else(|| props.get("enabledResources")));
    if filter == ToolFilter::Patterns(Vec::new()) {
        let warning = "enabledResources is set but empty: NO resources are exposed. Remove it to expose every \
                       resource, or list URI patterns such as `file:///docs/*`."
            .to_owned();
        log::warn!("{warning}");
        warnings.push(warning);
    }
    filter
}

/// The listener: bind address, keys, origins, limits and session settings.
fn listener_config(args: &ServeArgs, props: &Properties, max_command_time: Duration) -> Result<ListenerConfig, Fatal> {
    let mut keys: Vec<String> = args.keys.clone();
    if let Ok(env_keys) = std::env::var(KEYS_ENV) {
        keys.extend(env_keys.split(',').map(str::to_owned));
    }
    keys.extend(props.list("keys"));
    let mut limits = Limits::default();
    limits.tool_timeout = limits.tool_timeout.max(max_command_time + Duration::from_secs(5));
    if let Some(bytes) = pick(args.max_body_bytes, props, "maxBodyBytes")? {
        limits.max_body_bytes = bytes;
    }
    if let Some(secs) = pick(args.tool_timeout, props, "toolTimeoutSeconds")? {
        limits.tool_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(max) = pick(args.max_in_flight, props, "maxInFlight")? {
        limits.max_in_flight = max.max(1);
    }
    if let Some(max) = pick(args.max_queued_messages, props, "maxQueuedMessages")? {
        limits.max_queued_messages = max.max(1);
    }
    if let Some(max) = pick(args.max_queued_bytes, props, "maxQueuedBytes")? {
        limits.max_queued_bytes = max.max(1);
    }
    let mut allowed_origins = args.allow_origins.clone();
    allowed_origins.extend(props.list("allowedOrigins"));
    let mut allowed_hosts = args.allow_hosts.clone();
    allowed_hosts.extend(props.list("allowedHosts"));
    let mut sessions = SessionConfig::default();
    if let Some(secs) = pick(args.session_idle_timeout, props, "sessionIdleSeconds")? {
        sessions.idle_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(max) = pick(args.max_sessions, props, "maxSessions")? {
        sessions.max_sessions = max;
    }
    if let Some(secs) = pick(args.client_request_timeout, props, "clientRequestTimeoutSeconds")? {
        sessions.client_request_timeout = Duration::from_secs(secs.max(1));
    }
    let connections = connection_limits(args, props)?;
    let shares = ShareConfig {
        sessions: pick(args.session_share, props, "shares.sessions")?.map(|n: usize| n.max(1)),
        streams: pick(args.stream_share, props, "shares.streams")?.map(|n: usize| n.max(1)),
        in_flight: pick(args.in_flight_share, props, "shares.inFlight")?.map(|n: usize| n.max(1)),
        evict_idle: args.evict_idle_sessions || flag(props, "evictIdleSessions"),
    };
    Ok(ListenerConfig {
        shares,
        host: pick_text(&args.host, props, "host").unwrap_or_else(|| ListenerConfig::default().host),
        port: pick(args.port, props, "port")?.unwrap_or(mcpd::config::DEFAULT_PORT),
        keys: KeySet::new(keys),
        oauth: None,
        origins: OriginPolicy { allowed_origins, allowed_hosts },
        allow_unauthenticated: args.allow_unauthenticated,
        mode: if args.session { TransportMode::StreamableHttp } else { TransportMode::Http },
        limits,
        connections,
        sessions,
        workers: pick(args.workers, props, "workers")?.unwrap_or(0),
        settings_file: args.settings.clone(),
        access: match args.access.clone().or_else(|| props.get("access").map(PathBuf::from)) {
            Some(path) => Some(AccessControl::load(&path).map_err(usage)?),
            None => None,
        },
        virtual_servers: None,
    })
}

/// The connection limits and timeouts of the HTTP listener.
fn connection_limits(args: &ServeArgs, props: &Properties) -> Result<ConnectionLimits, Fatal> {
    let mut connections = ConnectionLimits::default();
    if let Some(max) = pick(args.max_connections, props, "maxConnections")? {
        connections.max_connections = max.max(1);
    }
    if let Some(max) = pick(args.max_slow_bodies, props, "maxSlowBodies")? {
        connections.max_slow_bodies = max;
    }
    if let Some(secs) = pick(args.body_timeout, props, "bodyTimeoutSeconds")? {
        connections.body_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(secs) = pick(args.header_timeout, props, "headerTimeoutSeconds")? {
        connections.header_timeout = Duration::from_secs(secs);
    }
    if let Some(secs) = pick(args.keep_alive, props, "keepAliveSeconds")? {
        connections.keep_alive = Duration::from_secs(secs);
    }
    if let Some(secs) = pick(args.send_timeout, props, "sendTimeoutSeconds")? {
        connections.send_timeout = Duration::from_secs(secs);
    }
    Ok(connections)
}

/// The file of the introspection client secret, if one is configured.
fn introspection_secret_file(args: &ServeArgs, props: &Properties) -> Option<PathBuf> {
    args.auth_client_secret_file.clone().or_else(|| props.get("auth.introspection.secretFile").map(PathBuf::from))
}

/// Environment variable with the introspection client secret.
const CLIENT_SECRET_ENV: &str = "MCPD_AUTH_CLIENT_SECRET";

/// OAuth 2.1 (on when an issuer is configured): issuers, resource, scopes, per-tool scopes
/// (declared tools' `requiredScopes`, then `--auth-tool-scope` / `auth.toolScope.PATTERN`),
/// introspection and the key-set refresh interval.
fn oauth_settings(
    args: &ServeArgs,
    props: &Properties,
    declared: &[(String, Vec<String>)],
) -> Result<Option<OAuthSettings>, Fatal> {
    let mut issuers = args.auth_issuers.clone();
    issuers.extend(props.list("auth.issuers"));
    if issuers.is_empty() {
        let stray = args.auth_resource.is_some() || !args.auth_scopes.is_empty() || args.auth_introspection.is_some();
        return match stray {
            true => Err(usage("--auth-resource, --auth-scope and --auth-introspection need --auth-issuer")),
            false => Ok(None),
        };
    }
    for issuer in &issuers {
        if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
            return Err(usage(format!("--auth-issuer {issuer:?} is not an http(s) URL")));
        }
    }
    let mut settings = OAuthSettings { issuers, ..OAuthSettings::default() };
    settings.resource = pick_text(&args.auth_resource, props, "auth.resource");
    if let Some(resource) = &settings.resource {
        if !(resource.starts_with("https://") || resource.starts_with("http://")) {
            return Err(usage(format!("--auth-resource {resource:?} is not an http(s) URL")));
        }
    }
    settings.scopes = args.auth_scopes.clone();
    settings.scopes.extend(props.list("auth.scopes"));
    for (name, scopes) in declared {
        settings.tool_scopes.add(name, scopes.clone());
    }
    let mut rules: Vec<(String, String)> = Vec::new();
    for rule in &args.auth_tool_scopes {
        let (pattern, scopes) = rule
            .split_once('=')
            .ok_or_else(|| usage(format!("--auth-tool-scope {rule:?}: expected PATTERN=SCOPES")))?;
        rules.push((pattern.trim().to_owned(), scopes.to_owned()));
    }
    for (key, value) in props.entries() {
        if let Some(pattern) = key.strip_prefix("auth.toolScope.") {
            rules.push((pattern.to_owned(), value.to_owned()));
        }
    }
    for (pattern, scopes) in rules {
        settings.tool_scopes.add(&pattern, mcpd::config::split_list(&scopes));
    }
    if let Some(scope) = pick_text(&args.auth_operator_scope, props, "auth.operatorScope") {
        settings.operator_scope = scope.trim().to_owned();
    }
    if let Some(secs) = pick(args.auth_jwks_refresh, props, "auth.jwksRefreshSeconds")? {
        settings.jwks_refresh = Duration::from_secs(secs);
    }
    if let Some(secs) = pick::<u64>(None, props, "auth.leewaySeconds")? {
        settings.leeway = Duration::from_secs(secs);
    }
    if let Some(secs) = pick::<u64>(None, props, "auth.fetchTimeoutSeconds")? {
        settings.fetch_timeout = Duration::from_secs(secs.max(1));
    }
    settings.introspection = introspection(args, props)?;
    Ok(Some(settings))
}

/// RFC 7662 introspection: the endpoint, the client id, and the secret from a file or the
/// environment (never a flag, so it is never in `ps` or a shell history).
fn introspection(args: &ServeArgs, props: &Properties) -> Result<Option<IntrospectionSettings>, Fatal> {
    let Some(url) = pick_text(&args.auth_introspection, props, "auth.introspection.url") else { return Ok(None) };
    let client_id = pick_text(&args.auth_client_id, props, "auth.introspection.clientId")
        .ok_or_else(|| usage("--auth-introspection needs --auth-client-id"))?;
    let secret = match introspection_secret_file(args, props) {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|e| usage(format!("cannot read the client secret file {}: {e}", path.display())))?
            .trim()
            .to_owned(),
        None => std::env::var(CLIENT_SECRET_ENV).map_err(|_| {
            usage(format!(
                "--auth-introspection needs the client secret: --auth-client-secret-file FILE or {CLIENT_SECRET_ENV}"
            ))
        })?,
    };
    Ok(Some(IntrospectionSettings {
        url,
        client_id,
        client_secret: Secret::new(secret),
        cache: mcpd::auth::oauth::DEFAULT_INTROSPECTION_CACHE,
    }))
}
