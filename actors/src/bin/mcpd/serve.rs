//! `mcpd serve`: runs the runtime with the resolved settings — over stdio until stdin ends, or
//! over HTTP until SIGINT/SIGTERM — with the gateway's remotes listed and retried alongside.

use std::sync::Arc;
use std::time::Duration;

use mcpd_actors::client::oauth::{CredentialStore, FileStore};
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::tools::sets::ToolReport;
use mcpd_actors::{ActorCounts, Mcpd};

use crate::args::ServeArgs;
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
    let system = actix_rt::System::new();
    match args.port {
        None => system.block_on(stdio(settings)),
        Some(_) => system.block_on(http(settings, args.session)),
    }
}

async fn stdio(settings: Settings) -> Result<(), Fatal> {
    let counts = Arc::new(ActorCounts::new());
    let gateway = gateway(&settings, counts.clone());
    if let Some(gateway) = &gateway {
        // Remote tools are listed from the first tools/list on.
        gateway.refresh_all().await;
        gateway.retry_every(GATEWAY_RETRY);
    }
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
    let runtime = Mcpd::new(settings.server.clone(), settings.listener.clone(), settings.warnings.clone());
    let gateway = gateway(&settings, runtime.counts());
    let (resource_counts, file_watch) = settings.resources.clone();
    let report = ToolReport::new(settings.exposed.clone(), &settings.project_dir, gateway.clone())
        .with_prompts(settings.exposed_prompts)
        .with_resources(resource_counts, file_watch);
    if let Err(e) = report.install(&runtime).await {
        log::warn!("status extras not set: {e}");
    }
    if let Some(access) = settings.listener.access.clone() {
        let live = settings.live.clone();
        reload_on_hangup(move || {
            // A file that cannot be used keeps the policy in force; reload logs why. A good one
            // may change what clients see: they are told to list again.
            if access.reload_current().is_ok() {
                live.announce_lists_changed();
            }
        });
    }
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
    runtime.close().await.map_err(|e| Fatal::runtime(e.to_string()))
}

/// The gateway over the configured remote servers, if any, with the credentials file.
fn gateway(settings: &Settings, counts: Arc<ActorCounts>) -> Option<Arc<Gateway>> {
    if settings.remotes.is_empty() {
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
    Some(gateway)
}

/// Calls `reload` at every SIGHUP (Unix), for as long as the system runs.
fn reload_on_hangup(reload: impl Fn() + 'static) {
    #[cfg(unix)]
    {
        use actix_rt::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(mut hangup) => {
                actix_rt::spawn(async move {
                    while hangup.recv().await.is_some() {
                        log::info!("SIGHUP: reloading the access file");
                        reload();
                    }
                });
            }
            Err(e) => log::warn!("cannot listen for SIGHUP: {e}"),
        }
    }
    #[cfg(not(unix))]
    drop(reload);
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
