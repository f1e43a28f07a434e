//! A profiling target for the load bench's servers, one at a time, in its own process (so that
//! `perf`, `wrk` and `/proc/PID/stat` see only it):
//!
//! `cargo run --release --example perf_server -- MODE PORT` with MODE `bare` (the bench's bare
//! actix-web JSON echo) or `http` (mcpd's session-less `http` listener over the built-in tools,
//! as `benches/load/` starts it). One actix worker; runs until killed.
//!
//! With `MCPD_PERF_ISSUER=URL` the `http` server is an OAuth resource server trusting that issuer
//! (resource `http://127.0.0.1:PORT/mcp`): every request needs a bearer token of it
//! (`scripts/perf/drive.py` sends `MCPD_PERF_TOKEN`), to measure what token checks cost.
//!
//! Telemetry is configured by the standard `OTEL_*` variables, as `mcpd serve` reads them
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` set: spans and metrics exported), to measure what it costs.

#![allow(clippy::print_stdout, reason = "an example reports on standard output")]

use std::sync::Arc;

use actix_web::{web, App, HttpServer};
use mcpd_actors::{ListenerConfig, Mcpd, TransportMode};

#[path = "../benches/load/bare.rs"]
mod bare;
use bare::bare_echo;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "http".into());
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(8900);
    let telemetry = mcpd::telemetry::TelemetryConfig::read(|name| std::env::var(name).ok(), None)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    if let Some(config) = telemetry {
        mcpd_actors::telemetry::init(&config).map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    actix_rt::System::new().block_on(async move {
        match mode.as_str() {
            "bare" => {
                let server = HttpServer::new(|| App::new().route("/mcp", web::post().to(bare_echo)))
                    .workers(1)
                    .bind(("127.0.0.1", port))?
                    .run();
                println!("bare on {port}");
                server.await
            }
            _ => {
                let mut catalog = mcpd::Catalog::new();
                mcpd::builtin::register(&mut catalog);
                let server = Arc::new(mcpd::McpServer::new(mcpd::ServerOptions::default(), catalog));
                let oauth = std::env::var("MCPD_PERF_ISSUER")
                    .ok()
                    .map(|issuer| mcpd::auth::oauth::OAuthSettings { issuers: vec![issuer], ..Default::default() });
                let config =
                    ListenerConfig { port, mode: TransportMode::Http, workers: 1, oauth, ..Default::default() };
                let runtime = Mcpd::new(server, config.clone(), Vec::new());
                let status = runtime.start(config).await.map_err(|e| std::io::Error::other(e.to_string()))?;
                println!("mcpd http on {}", status.port);
                std::future::pending::<()>().await;
                Ok(())
            }
        }
    })
}
