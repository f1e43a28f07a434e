//! `mcpd serve`: runs the runtime with the resolved settings — over stdio until stdin ends, or
//! over HTTP until SIGINT/SIGTERM — with the gateway's remotes listed and retried alongside,
//! and the servers, tools and access files reloaded when they change or on SIGHUP
//! ([`watch_files`]).

use std::sync::Arc;
use std::time::Duration;

use mcpd_actors::client::oauth::{CredentialStore, FileStore};
use mcpd_actors::cluster::Cluster;
use mcpd_actors::panics::{self, Site};
use mcpd_actors::reload::{Reloader, Running, DEBOUNCE};
use mcpd_actors::tools::commands::load_declarations;
use mcpd_actors::tools::deny::OwnGroup;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::tools::resources;
use mcpd_actors::tools::sets::ToolReport;
use mcpd_actors::{ActorCounts, Mcpd};

use crate::args::ServeArgs;
use crate::exposure::servers_files;
use crate::settings::{resolve, Settings};
use crate::Fatal;

/// How often the gateway tries again to list the tools of remotes it could not reach.
const GATEWAY_RETRY: Duration = Duration::from_secs(30);

/// Serves until the input ends (stdio) or a signal arrives (HTTP).
///
/// # Errors
/// A usage error for bad settings; a runtime error when serving fails.
pub(crate) fn run(args: ServeArgs) -> Result<(), Fatal> {
    let settings = resolve(&args)?;
    if args.session && args.port.is_none() {
        return Err(Fatal::usage(
            "--session needs --port: sessions are an HTTP feature (stdio is one session already)",
        ));
    }
    if let Some(config) = &settings.telemetry {
        mcpd_actors::telemetry::init(config).map_err(|e| Fatal::runtime(e.to_string()))?;
    }
    let system = actix_rt::System::new();
    let served = match args.port {
        None => system.block_on(stdio(settings)),
        Some(_) => system.block_on(http(settings, args.session)),
    };
    // stdin closed, SIGTERM or Ctrl-C: what is queued goes out, within a bounded wait.
    mcpd_actors::telemetry::shutdown();
    served
}

async fn stdio(settings: Settings) -> Result<(), Fatal> {
    let counts = Arc::new(ActorCounts::new());
    let gateway = gateway(&settings, counts.clone());
    check_names(&settings, gateway.as_ref()).await?;
    if let Some(gateway) = &gateway {
        // Remote tools are listed from the first tools/list on.
        gateway.refresh_all().await;
        gateway.retry_every(GATEWAY_RETRY);
    }
    let _reloads = watch_files(&settings, gateway.as_ref());
    announce(&settings);
    log::debug!("serving MCP on stdio");
    let served = mcpd_actors::stdio::serve(
        settings.server,
        settings.listener.limits,
        counts,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await;
    if let Some(gateway) = gateway {
        gateway.close().await;
    }
    served.map_err(|e| Fatal::runtime(format!("stdin: {e}")))
}

async fn http(settings: Settings, sessions: bool) -> Result<(), Fatal> {
    let cluster = match &settings.redis {
        Some(config) => {
            Some(Cluster::new(settings.server.clone(), config.clone()).map_err(|e| Fatal::usage(e.to_string()))?)
        }
        None => None,
    };
    let runtime = Mcpd::with_task_store(
        settings.server.clone(),
        settings.listener.clone(),
        settings.warnings.clone(),
        cluster.as_ref().map(Cluster::task_store),
    );
    let gateway = gateway(&settings, runtime.counts());
    check_names(&settings, gateway.as_ref()).await?;
    let (resource_counts, file_watch) = settings.resources.clone();
    let report = ToolReport::new(settings.exposed.clone(), &settings.project_dir, gateway.clone())
        .with_prompts(settings.exposed_prompts)
        .with_resources(resource_counts, file_watch)
        .with_project(settings.reach.clone());
    announce(&settings);
    if let Err(e) = report.install(&runtime).await {
        log::warn!("status extras not set: {e}");
    }
    if let Some(cluster) = &cluster {
        cluster.start(&runtime).await.map_err(|e| Fatal::runtime(e.to_string()))?;
        if let Some(access) = &settings.listener.access {
            // One bucket per access-file client across the instances.
            access.share_rates(cluster.rate_limits());
        }
    }
    let _reloads = watch_files(&settings, gateway.as_ref());
    let status = runtime.start(settings.listener).await.map_err(|e| Fatal::runtime(e.to_string()))?;
    let eras = if sessions {
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
    let closed = runtime.close().await.map_err(|e| Fatal::runtime(e.to_string()));
    if let Some(cluster) = &cluster {
        cluster.stop().await;
    }
    closed
}

/// Logs what callers can reach of the project and which local capabilities are on.
fn announce(settings: &Settings) {
    log::info!("{}", settings.reach.summary());
    let mut local: Vec<String> =
        settings.exposed.iter().filter(|(_, n)| *n > 0).map(|(set, n)| format!("{} tools {n}", set.label())).collect();
    let (resources, _) = &settings.resources;
    for (what, n) in [
        ("declared prompts", settings.exposed_prompts),
        ("project-file resources", resources.files),
        ("declared resources", resources.declared),
    ] {
        if n > 0 {
            local.push(format!("{what} {n}"));
        }
    }
    let remotes = if settings.servers_file.is_some() { "; the gateway's remotes come as they answer" } else { "" };
    log::info!("local capabilities: {}{remotes}", local.join(", "));
}

/// The gateway over the configured remote servers, with the credentials file: none without a
/// servers file (one that lists no server yet may list some after a reload).
fn gateway(settings: &Settings, counts: Arc<ActorCounts>) -> Option<Arc<Gateway>> {
    if settings.remotes.is_empty() && settings.servers_file.is_none() {
        return None;
    }
    let store = settings.credentials.as_ref().map(|path| Arc::new(FileStore::new(path)) as Arc<dyn CredentialStore>);
    let gateway = Gateway::with_credentials(
        settings.remotes.clone(),
        settings.live.clone(),
        settings.filter.clone(),
        counts,
        store,
    );
    gateway.filter_federated(settings.prompt_filter.clone(), settings.resource_filter.clone());
    if let Some(views) = &settings.listener.virtual_servers {
        gateway.serve_views(views.clone());
    }
    if let Some(path) = &settings.servers_file {
        gateway.read_from(path);
    }
    Some(gateway)
}

/// Refuses to start when an unprefixed remote's names collide with another's or with this
/// server's own (they are listed first): exit 2 with every collision named.
async fn check_names(settings: &Settings, gateway: Option<&Arc<Gateway>>) -> Result<(), Fatal> {
    let Some(gateway) = gateway else { return Ok(()) };
    gateway.check_names_at_start().await.map_err(|collisions| {
        let file = settings.servers_file.as_ref().map_or_else(String::new, |p| format!(" {}", p.display()));
        Fatal::usage(format!("servers file{file}: {collisions}"))
    })
}

/// Watches the servers file, the tools of the declarations file and the access file (HTTP),
/// each re-read [`DEBOUNCE`] after it changes and all of them on SIGHUP, for as long as the
/// returned handle lives. A file that cannot be used changes nothing: the previous configuration
/// stays and one log line names the file and why.
fn watch_files(settings: &Settings, gateway: Option<&Arc<Gateway>>) -> Option<Running> {
    let reloader = Reloader::new(DEBOUNCE);
    let mut watched = false;
    if let (Some(path), Some(gateway)) = (&settings.servers_file, gateway) {
        let (file, gateway, root, live) = (path.clone(), gateway.clone(), settings.root.clone(), settings.live.clone());
        reloader.add(vec![path.clone()], move |_| {
            let (file, gateway, root, live) = (file.clone(), gateway.clone(), root.clone(), live.clone());
            panics::spawn(Site::Gateway, async move {
                if gateway.reload_file(&file).await.is_ok() {
                    root.deny().protect(OwnGroup::Servers, servers_files(&file));
                    resources::forget_denied(&live, &root);
                }
            });
        });
        watched = true;
    }
    if let Some(path) = &settings.tools_file {
        let (file, commands, live, filter) =
            (path.clone(), settings.commands.clone(), settings.live.clone(), settings.filter.clone());
        reloader.add(vec![path.clone()], move |_| match load_declarations(&file) {
            Ok(declarations) => {
                let names = commands.replace_declared(&live, declarations.tools, &filter);
                log::info!(
                    "tools file {} reloaded: declared tools [{}] (its prompts and resources are read at start only)",
                    file.display(),
                    names.join(", ")
                );
            }
            Err(error) => {
                log::warn!("tools file {} not reloaded, the declared tools in force stay: {error}", file.display());
            }
        });
        watched = true;
    }
    if let Some(access) = settings.listener.access.clone() {
        let (live, root) = (settings.live.clone(), settings.root.clone());
        reloader.add(vec![access.path()], move |_| {
            // A file that cannot be used keeps the policy in force; reload logs why. A good one
            // may change what clients see: they are told to list again; the key files it names
            // now are never served, nor listed.
            if access.reload_current().is_ok() {
                root.deny().protect(OwnGroup::Access, access.files());
                resources::forget_denied(&live, &root);
                live.announce_lists_changed();
            }
        });
        watched = true;
    }
    watched.then(|| reloader.start())
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
