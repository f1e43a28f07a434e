//! Soak bench: `cargo bench --bench soak [-- --minutes M | --seconds S, see --help]`.
//!
//! Starts two mcpd runtimes in this process, on 127.0.0.1: the server under test (streamable
//! HTTP with sessions that expire after a short idle time, the built-in tools, two soak tools,
//! and a gateway to the second) and a stateless remote. For M minutes (default 1; the full soak
//! is 10) it drives a mixed load against the first ([`workload`]):
//!
//! | operation | what it does |
//! |---|---|
//! | stateless | 2026-07-28 `tools/call echo`, at a steady rate |
//! | gateway | `remote__echo` through the gateway, at a steady rate; the remote is stopped and restarted on the same port now and then (failures while it is down are expected) |
//! | session | `initialize`, three calls, then DELETE (checked gone) or abandoned to expire |
//! | cancel | a slow call, cancelled with `notifications/cancelled` once it runs: answered `202`, no body |
//! | resume | a streamed answer dropped and resumed with `Last-Event-ID` (every event once, in order); the standalone stream likewise |
//! | slow_reader | a streamed answer of 400 × 1 KiB events, not read for a while through a 4 KiB receive buffer; read to the end or cut off by the server (expected) |
//!
//! It samples every second: RSS (`VmRSS`), requests, outcomes (ok, expected, unintended), the
//! live sessions and actors. After the load it waits (bounded) for the abandoned sessions to
//! expire. Targets: RSS growth over the second half ≤ 5 %, no unintended error, every kind of
//! operation succeeded, live sessions, executors and connections back to the baseline. A missed
//! target exits 1 with a line naming it; a soak that cannot run exits 2.
//!
//! Output: a table on standard output, `target/bench/soak.json` and `target/bench/soak.svg`
//! (`MCPD_BENCH_OUT` or `CARGO_TARGET_DIR` move them).

#![allow(clippy::print_stdout, reason = "a bench reports on standard output")]

mod ctx;
mod remote;
mod report;
mod servers;
mod session;
mod settings;
mod stats;
mod streams;
mod support;
mod tools;
mod wire;
mod workload;

use settings::Settings;
use support::out;

fn run() -> Result<bool, String> {
    let settings = Settings::parse()?;
    let remote = servers::start_remote(&settings)?;
    let (server, live, probe) = servers::start_under_test(&settings, remote.port())?;
    eprintln!(
        "soak: {:.0} s of load against 127.0.0.1:{} (gateway remote on port {}); progress every 30 s",
        settings.duration.as_secs_f64(),
        server.port(),
        remote.port()
    );
    let run = actix_rt::System::new().block_on(workload::run(&settings, &server, &remote, live, probe));
    let closed = server.shut_down().and(remote.shut_down());

    let figures = report::figures(&run);
    let targets = report::targets(&settings, &run, &figures);
    report::print(&settings, &run, &figures, &targets);
    let dir = out::output_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json_path = dir.join("soak.json");
    let json = report::to_json(&settings, &run, &figures, &targets);
    let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let svg_path = dir.join("soak.svg");
    report::draw_svg(&svg_path, &run, &figures).map_err(|e| format!("cannot draw {}: {e}", svg_path.display()))?;
    println!("\nwrote {} and {}", json_path.display(), svg_path.display());

    let mut ok = targets.iter().all(|t| t.met);
    if let Err(e) = closed {
        println!("ERROR: the servers did not shut down cleanly: {e}");
        ok = false;
    }
    let missed: Vec<&str> = targets.iter().filter(|t| !t.met).map(|t| t.name).collect();
    if missed.is_empty() {
        println!("soak: every target met");
    } else {
        println!("soak: TARGET MISSED: {}", missed.join("; "));
    }
    Ok(ok)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("soak bench failed: {e}");
            std::process::exit(2);
        }
    }
}
