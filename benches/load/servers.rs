//! The servers under load: a bare actix-web handler and two mcpd listeners (`http`,
//! `streamable-http`) on their own thread and actix system, with names for their threads.

use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpServer};
use mcpd_actors::{ListenerConfig, Mcpd, TransportMode};

use crate::bare::bare_echo;
use crate::cpu::{current_tid, thread_ticks};
use crate::modes::Mode;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Ports {
    bare: u16,
    http: u16,
    streamable: u16,
}

impl Ports {
    pub(crate) fn of(self, mode: Mode) -> u16 {
        match mode {
            Mode::Bare => self.bare,
            Mode::Stateless | Mode::Legacy => self.http,
            Mode::Session => self.streamable,
        }
    }
}

/// The server thread: an actix system running the three listeners until told to stop.
pub(crate) struct Servers {
    pub(crate) ports: Ports,
    /// Thread id -> which server it belongs to.
    pub(crate) labels: Vec<(u32, String)>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<Result<(), String>>,
}

struct Running {
    bare: actix_web::dev::ServerHandle,
    http: Mcpd,
    streamable: Mcpd,
}

fn start_bare(workers: usize) -> Result<(actix_web::dev::ServerHandle, u16), String> {
    let server = HttpServer::new(|| App::new().route("/mcp", web::post().to(bare_echo)))
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(1)
        .bind(("127.0.0.1", 0))
        .map_err(|e| format!("the bare handler cannot bind: {e}"))?;
    let port = server.addrs().first().map(|a| a.port()).ok_or("the bare handler has no address")?;
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok((handle, port))
}

async fn start_mcpd(mode: TransportMode, workers: usize) -> Result<(Mcpd, u16), String> {
    let mut catalog = mcpd::Catalog::new();
    mcpd::builtin::register(&mut catalog);
    let sessions = mode == TransportMode::StreamableHttp;
    let server = Arc::new(mcpd::McpServer::new(mcpd::ServerOptions { sessions, ..Default::default() }, catalog));
    let config = ListenerConfig { port: 0, mode, workers, ..Default::default() };
    let runtime = Mcpd::new(server, config.clone(), Vec::new());
    let status = runtime.start(config).await.map_err(|e| format!("mcpd ({}) did not start: {e}", mode.label()))?;
    Ok((runtime, status.port))
}

/// Names the threads that appeared since `before` (a server spawns its acceptor and workers when
/// its future first runs, so this waits up to 2 s for `workers` + 1 of them).
async fn label_new_threads(before: &[u32], owner: &str, workers: usize, labels: &mut Vec<(u32, String)>) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let fresh = loop {
        let fresh: Vec<_> = thread_ticks().into_iter().filter(|(tid, _, _)| !before.contains(tid)).collect();
        if fresh.len() > workers || Instant::now() >= deadline {
            break fresh;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for (tid, name, _) in fresh {
        let kind = if name.starts_with("actix-server") {
            "acceptor"
        } else if name.starts_with("actix-rt") {
            "worker"
        } else {
            name.as_str()
        };
        labels.push((tid, format!("{owner} {kind}")));
    }
}

/// The three listeners, their ports, and names for their threads.
async fn start_all(workers: usize) -> Result<(Running, Ports, Vec<(u32, String)>), String> {
    let mut labels: Vec<(u32, String)> =
        current_tid().map(|tid| (tid, "actix system thread".into())).into_iter().collect();
    let known = || thread_ticks().into_iter().map(|(tid, _, _)| tid).collect::<Vec<_>>();
    let before = known();
    let (bare, bare_port) = start_bare(workers)?;
    label_new_threads(&before, "bare", workers, &mut labels).await;
    let before = known();
    let (http, http_port) = start_mcpd(TransportMode::Http, workers).await?;
    label_new_threads(&before, "mcpd http", workers, &mut labels).await;
    let before = known();
    let (streamable, streamable_port) = start_mcpd(TransportMode::StreamableHttp, workers).await?;
    label_new_threads(&before, "mcpd streamable", workers, &mut labels).await;
    let ports = Ports { bare: bare_port, http: http_port, streamable: streamable_port };
    Ok((Running { bare, http, streamable }, ports, labels))
}

impl Running {
    async fn shutdown(self) -> Result<(), String> {
        let all = async {
            self.bare.stop(true).await;
            let http = self.http.close().await;
            let streamable = self.streamable.close().await;
            http.and(streamable).map_err(|e| format!("mcpd close failed: {e}"))
        };
        tokio::time::timeout(Duration::from_secs(10), all)
            .await
            .map_err(|_| "the servers did not shut down within 10 s".to_owned())?
    }
}

impl Servers {
    pub(crate) fn start(workers: usize) -> Result<Servers, String> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(Ports, Vec<(u32, String)>), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done) = mpsc::channel();
        thread::Builder::new()
            .name("bench-servers".into())
            .spawn(move || {
                let outcome = actix_rt::System::new().block_on(async move {
                    let (running, ports, labels) = match start_all(workers).await {
                        Ok(started) => started,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(Ok((ports, labels)));
                    let _ = stop_rx.await;
                    running.shutdown().await
                });
                let _ = done_tx.send(outcome);
            })
            .map_err(|e| format!("cannot spawn the server thread: {e}"))?;
        let ports =
            ready_rx.recv_timeout(Duration::from_secs(30)).map_err(|_| "the servers did not start within 30 s")??;
        let (ports, labels) = ports;
        Ok(Servers { ports, labels, stop: Some(stop_tx), done })
    }

    pub(crate) fn stop(mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.done.recv_timeout(Duration::from_secs(15)) {
            Ok(outcome) => outcome,
            Err(_) => Err("the server thread did not finish within 15 s".into()),
        }
    }
}
