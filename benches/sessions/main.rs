//! Sessions bench: what idle streamable-HTTP sessions cost.
//! `cargo bench --bench sessions [-- --sessions N --connections C --live-connections L
//! --live-seconds S --idle-seconds S --workers W --no-pin]`.
//!
//! Starts the server as a child process (this binary again, serving as `mcpd serve -s
//! --no-file-tools` does, with room for every session), pinned to CPU 0 while the load runs on
//! CPU 1 when the machine has two (`taskset`), so that the figures are the server's alone. Then,
//! in one run:
//!
//! 1. a live session's `tools/call echo` throughput and p99 with no idle session;
//! 2. N sessions opened by `initialize` over C connections and never used again, with the
//!    opening rate of each 100k (a progress bar shows them come);
//! 3. the server's resident memory growth per idle session, and its CPU over S seconds while
//!    nothing happens;
//! 4. the live session's throughput and p99 again, with the N sessions held.
//!
//! The figures go against the targets (≤ 2,048 bytes per session, ≤ 1% of a core idle, the last
//! 100k opened at ≥ 0.8× the first's rate, live req/s ≥ 0.9× and p99 ≤ 1.5× of the no-idle
//! figure) in a table on standard output, `sessions.json` and `sessions.svg` (in
//! `target/bench`, or `MCPD_BENCH_OUT`). Missing a target does not fail the bench; an error does.

#![allow(clippy::print_stdout, reason = "a bench reports on standard output")]

mod child;
#[path = "../support/cli.rs"]
mod cli;
mod conn;
mod live;
mod open;
#[path = "../support/out.rs"]
mod out;
mod report;
mod wire;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

const USAGE: &str = "usage: cargo bench --bench sessions [-- OPTIONS]

options (environment variable in brackets, then default):
  --sessions N          idle sessions to open [MCPD_BENCH_SESSIONS] 1000000
  --connections C       connections opening them [MCPD_BENCH_CONNECTIONS] 32
  --live-connections L  connections calling in the live session [MCPD_BENCH_LIVE_CONNECTIONS] 16
  --live-seconds S      measured seconds of the live session [MCPD_BENCH_LIVE_SECONDS] 5
  --idle-seconds S      seconds of idleness whose CPU is measured [MCPD_BENCH_IDLE_SECONDS] 5
  --workers W           the server's actix workers [MCPD_BENCH_WORKERS] 2
  --no-pin              do not pin the server and the load to a CPU each";

struct Settings {
    sessions: u64,
    connections: usize,
    live_connections: usize,
    live_seconds: f64,
    idle_seconds: f64,
    workers: usize,
    pin: bool,
}

impl Settings {
    fn parse() -> Result<Settings, String> {
        let mut s = Settings {
            sessions: cli::env_number("MCPD_BENCH_SESSIONS", 1_000_000)?,
            connections: cli::env_number("MCPD_BENCH_CONNECTIONS", 32)?,
            live_connections: cli::env_number("MCPD_BENCH_LIVE_CONNECTIONS", 16)?,
            live_seconds: cli::env_number("MCPD_BENCH_LIVE_SECONDS", 5.0)?,
            idle_seconds: cli::env_number("MCPD_BENCH_IDLE_SECONDS", 5.0)?,
            workers: cli::env_number("MCPD_BENCH_WORKERS", 2)?,
            pin: true,
        };
        cli::parse_flags("sessions", USAGE, |flag, value| {
            match flag {
                "--sessions" => s.sessions = cli::number(flag, &value()?)?,
                "--connections" => s.connections = cli::number(flag, &value()?)?,
                "--live-connections" => s.live_connections = cli::number(flag, &value()?)?,
                "--live-seconds" => s.live_seconds = cli::number(flag, &value()?)?,
                "--idle-seconds" => s.idle_seconds = cli::number(flag, &value()?)?,
                "--workers" => s.workers = cli::number(flag, &value()?)?,
                "--no-pin" => s.pin = false,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if s.sessions == 0 || s.connections == 0 || s.live_connections == 0 || s.workers == 0 {
            return Err("sessions, connections, live connections and workers must be at least 1".into());
        }
        if !(s.live_seconds > 0.0 && s.idle_seconds > 0.0) {
            return Err("the measured seconds must be > 0".into());
        }
        Ok(s)
    }
}

/// Runs `future` on a current-thread runtime of the calling thread (the load generator).
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    Ok(tokio::task::LocalSet::new().block_on(&runtime, future))
}

fn run() -> Result<bool, String> {
    let settings = Settings::parse()?;
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let pinned = settings.pin && two_cpus && child::pin_self(1);
    let server = child::Server::start(pinned.then_some(0), settings.workers, settings.sessions as usize + 1000)?;
    let port = server.port;
    let outcome = measure(&settings, &server, pinned);
    server.stop();
    let figures = outcome?;
    figures.print();
    let dir = out::output_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json_path = dir.join("sessions.json");
    let text = serde_json::to_string_pretty(&figures.to_json()).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let svg_path = dir.join("sessions.svg");
    figures.draw_svg(&svg_path).map_err(|e| format!("cannot draw {}: {e}", svg_path.display()))?;
    println!("\nwrote {} and {} (server port was {port})", json_path.display(), svg_path.display());
    Ok(true)
}

fn measure(settings: &Settings, server: &child::Server, pinned: bool) -> Result<report::Figures, String> {
    let live = |what: &str| -> Result<live::Live, String> {
        eprintln!("sessions: a live session's calls, {what}");
        let cpu = server.cpu_seconds()?;
        let mut live = block_on(live::measure(server.port, settings.live_connections, 1.0, settings.live_seconds))??;
        live.cpu_us_per_call = (server.cpu_seconds()? - cpu) * 1e6 / live.calls.max(1) as f64;
        Ok(live)
    };
    let live_before = live("with no idle session")?;
    let rss_before = server.rss()?;

    let opening = open::Opening::new();
    let opener = {
        let (port, total, connections, opening) =
            (server.port, settings.sessions, settings.connections, opening.clone());
        std::thread::spawn(move || block_on(open::open(port, total, connections, opening)))
    };
    let bar = ProgressBar::new(settings.sessions);
    if let Ok(style) = ProgressStyle::with_template("opening idle sessions [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut samples = vec![report::Sample { opened: 0, rss: rss_before, cpu: server.cpu_seconds()? }];
    while !opener.is_finished() {
        std::thread::sleep(Duration::from_millis(500));
        let opened = opening.opened.load(Ordering::Relaxed);
        bar.set_position(opened);
        samples.push(report::Sample { opened, rss: server.rss()?, cpu: server.cpu_seconds()? });
    }
    bar.finish_and_clear();
    opener.join().map_err(|_| "the opening thread panicked")??;
    if let Some(error) = opening.error.lock().ok().and_then(|e| e.clone()) {
        return Err(error);
    }
    let sessions = opening.opened.load(Ordering::Relaxed);
    eprintln!("sessions: {sessions} opened; measuring {} s of idleness", settings.idle_seconds);
    // Let the last answers' buffers settle before the memory and idle readings.
    std::thread::sleep(Duration::from_secs(1));
    let rss_after = server.rss()?;
    samples.push(report::Sample { opened: sessions, rss: rss_after, cpu: server.cpu_seconds()? });
    let cpu_start = server.cpu_seconds()?;
    let idle_start = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(settings.idle_seconds));
    let idle_cpu_seconds = server.cpu_seconds()? - cpu_start;
    let idle_seconds = idle_start.elapsed().as_secs_f64();
    let live_after = live(&format!("with {sessions} idle sessions"))?;
    Ok(report::Figures {
        sessions,
        rss_before,
        rss_after,
        idle_seconds,
        idle_cpu_seconds,
        rates: opening.rates(),
        live_before,
        live_after,
        samples,
        pinned,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == child::SERVE_FLAG) {
        if let Err(e) = child::serve(&args[at + 1..]) {
            eprintln!("sessions bench server: {e}");
            std::process::exit(2);
        }
        return;
    }
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("sessions bench failed: {e}");
            std::process::exit(2);
        }
    }
}
