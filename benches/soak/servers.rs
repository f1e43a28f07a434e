//! The servers the soak drives, each on its own thread with its own actix system, on loopback:
//!
//! - the server under test: streamable HTTP (sessions, with a short idle timeout), the built-in
//!   tools, the soak's tools ([`crate::tools`]), and a gateway to the remote (`remote__echo`);
//! - the remote: a stateless mcpd with the built-in tools, which the soak stops and restarts on
//!   the same port ([`crate::workload`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::config::ToolFilter;
use mcpd::{McpServer, ServerOptions};
use mcpd_actors::client::ServerRecord;
use mcpd_actors::tools::gateway::Gateway;
use mcpd_actors::{ListenerConfig, Mcpd, SessionConfig, TransportMode};
use tokio::sync::oneshot;

use crate::settings::Settings;
use crate::tools::{self, Probe};

/// How long starting or stopping a server may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// What a server thread hands back once it serves.
struct Started {
    runtime: Mcpd,
    config: ListenerConfig,
    gateway: Option<Arc<Gateway>>,
}

type Setup = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = Result<Started, String>>>> + Send>;

/// A server on its own thread.
pub(crate) struct Server {
    /// Its runtime (start, stop, counts, live sessions).
    pub(crate) runtime: Mcpd,
    /// Its listener's configuration, with the port it bound (restarts bind it again).
    pub(crate) config: ListenerConfig,
    stop: Option<oneshot::Sender<()>>,
    done: mpsc::Receiver<Result<(), String>>,
}

impl Server {
    fn spawn(name: &str, setup: Setup) -> Result<Server, String> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(Mcpd, ListenerConfig), String>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("soak-{name}"))
            .spawn(move || {
                let outcome = actix_rt::System::new().block_on(async move {
                    let started = match setup().await {
                        Ok(started) => started,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(Ok((started.runtime.clone(), started.config.clone())));
                    let _ = stop_rx.await;
                    let close = async {
                        if let Some(gateway) = &started.gateway {
                            gateway.close().await;
                        }
                        started.runtime.close().await.map_err(|e| format!("close: {e}"))
                    };
                    tokio::time::timeout(SETUP_TIMEOUT, close).await.map_err(|_| "close timed out".to_owned())?
                });
                let _ = done_tx.send(outcome);
            })
            .map_err(|e| format!("cannot spawn the {name} thread: {e}"))?;
        let (runtime, config) = ready_rx
            .recv_timeout(SETUP_TIMEOUT)
            .map_err(|_| format!("the {name} server did not start within {} s", SETUP_TIMEOUT.as_secs()))??;
        Ok(Server { runtime, config, stop: Some(stop_tx), done })
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.config.port
    }

    /// Closes the runtime and ends its thread.
    pub(crate) fn shut_down(mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.done
            .recv_timeout(SETUP_TIMEOUT + Duration::from_secs(5))
            .map_err(|_| "the server thread did not end".to_owned())?
    }
}

async fn serve(server: Arc<McpServer>, mut config: ListenerConfig) -> Result<(Mcpd, ListenerConfig), String> {
    let runtime = Mcpd::new(server, config.clone(), Vec::new());
    let status = runtime.start(config.clone()).await.map_err(|e| format!("start: {e}"))?;
    config.port = status.port;
    Ok((runtime, config))
}

/// The remote the gateway calls: stateless, built-in tools.
pub(crate) fn start_remote(settings: &Settings) -> Result<Server, String> {
    let config = ListenerConfig { port: 0, workers: settings.workers, ..ListenerConfig::default() };
    Server::spawn(
        "remote",
        Box::new(move || {
            Box::pin(async move {
                let mut catalog = mcpd::Catalog::new();
                mcpd::builtin::register(&mut catalog);
                let server = Arc::new(McpServer::new(ServerOptions::default(), catalog));
                let (runtime, config) = serve(server, config).await?;
                Ok(Started { runtime, config, gateway: None })
            })
        }),
    )
}

/// The server under test, with a gateway to the remote on `remote_port`; also answers its live
/// catalog (the soak changes it, so that sessions get `list_changed` events) and the probe of
/// its `soak_wait` tool.
pub(crate) fn start_under_test(
    settings: &Settings,
    remote_port: u16,
) -> Result<(Server, Arc<LiveCatalog>, Arc<Probe>), String> {
    let probe = Arc::new(Probe::default());
    let mut catalog = mcpd::Catalog::new();
    mcpd::builtin::register(&mut catalog);
    tools::register(&mut catalog, probe.clone());
    let live = Arc::new(LiveCatalog::new(catalog));
    let sessions = SessionConfig { idle_timeout: settings.idle_timeout, ..SessionConfig::default() };
    let config = ListenerConfig {
        port: 0,
        workers: settings.workers,
        mode: TransportMode::StreamableHttp,
        sessions,
        ..ListenerConfig::default()
    };
    let shared = live.clone();
    let server = Server::spawn(
        "under-test",
        Box::new(move || {
            Box::pin(async move {
                let options = ServerOptions { sessions: true, ..ServerOptions::default() };
                let server = Arc::new(McpServer::with_live_catalog(options, shared.clone()));
                let runtime = Mcpd::new(server, config.clone(), Vec::new());
                let document = ConfigDocument::parse(&format!(r#"{{"url":"http://127.0.0.1:{remote_port}/mcp"}}"#))
                    .map_err(|e| format!("the gateway's remote: {e}"))?;
                let records = vec![ServerRecord::new("remote", document)];
                let gateway = Gateway::new(records, shared, ToolFilter::from_value(None), runtime.counts());
                gateway.refresh_all().await;
                if !gateway.health().iter().all(|h| h.up) {
                    return Err(format!("the gateway cannot reach its remote: {:?}", gateway.health()));
                }
                let status = runtime.start(config.clone()).await.map_err(|e| format!("start: {e}"))?;
                let config = ListenerConfig { port: status.port, ..config };
                Ok(Started { runtime, config, gateway: Some(gateway) })
            })
        }),
    )?;
    Ok((server, live, probe))
}
