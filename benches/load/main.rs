//! Load bench: `cargo bench --bench load [-- --connections N --seconds S --warmup S --rounds N --workers N]`.
//!
//! Starts, in this process and on 127.0.0.1 (port 0), a bare actix-web handler that parses the JSON
//! body and writes it back (the ceiling on this machine) and two mcpd listeners: `http` (no
//! sessions) and `streamable-http` (sessions), all with the same worker count. Then it drives
//! `tools/call echo {"text":"hello"}` over N keep-alive connections for T seconds in each mode:
//!
//! | mode | listener | wire |
//! |---|---|---|
//! | bare | actix-web echo | the stateless request, echoed back |
//! | stateless | mcpd `http` | 2026-07-28, routing headers, `_meta` |
//! | legacy | mcpd `http` | 2025-11-25 without a session |
//! | session | mcpd `streamable-http` | `initialize` once per connection, then `Mcp-Session-Id` |
//!
//! The load generator is a small hand-written HTTP/1.1 client on its own thread(s) (pre-built
//! request bytes, one read buffer per connection), so that it costs little CPU, like wrk. Every
//! response is checked (status 200 and the body contains `"text":"hello"`); errors are counted and
//! make the process exit non-zero. Missing the throughput targets does not.
//!
//! Server CPU per request is the process's CPU time (utime + stime of `/proc/self/stat`) minus that
//! of the load-generator threads and of the main thread (`/proc/self/task/<tid>/stat`), over the
//! measured window, divided by the requests answered in it.
//!
//! Output: a table on standard output, `target/bench/load.json` and `target/bench/load.svg`
//! (`MCPD_BENCH_OUT` or `CARGO_TARGET_DIR` move them).

#![allow(clippy::print_stdout, reason = "a bench reports on standard output")]

mod bare;
mod client;
mod cpu;
mod modes;
mod plot;
mod report;
mod run;
mod servers;
mod settings;
mod support;

use indicatif::{ProgressBar, ProgressStyle};

use cpu::current_tid;
use modes::MODES;
use plot::draw_svg;
use report::{print_table, summarize, to_json, Summary};
use run::{run_mode, Sample};
use servers::Servers;
use settings::Settings;
use support::out;

fn run() -> Result<bool, String> {
    let settings = Settings::parse()?;
    let main_tid = current_tid().ok_or("cannot read /proc/thread-self")?;
    let servers = Servers::start(settings.workers)?;

    let per_mode_ms = ((settings.warmup + settings.seconds) * 1000.0) as u64;
    let total_ms = per_mode_ms * (MODES.len() * settings.rounds) as u64;
    let bar = ProgressBar::new(total_ms);
    if let Ok(style) = ProgressStyle::with_template("{wide_msg} [{bar:30}] {percent:>3}% eta {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); MODES.len()];
    let mut failure = None;
    let mut step = 0;
    'rounds: for round in 0..settings.rounds {
        // Interleave: every round runs every mode, starting one mode later than the round before.
        for offset in 0..MODES.len() {
            let index = (round + offset) % MODES.len();
            let mode = MODES[index];
            let title = format!("round {}/{} {}", round + 1, settings.rounds, mode.label());
            let base = step * per_mode_ms;
            step += 1;
            match run_mode(&settings, mode, &servers, main_tid, &bar, base, &title) {
                Ok(sample) => {
                    bar.suspend(|| {
                        eprintln!(
                            "{title}: {:.0} req/s, p50 {} µs, p99 {} µs, {} errors",
                            sample.req_per_s, sample.p50_us, sample.p99_us, sample.errors
                        );
                    });
                    samples[index].push(sample);
                }
                Err(e) => {
                    failure = Some(format!("{title}: {e}"));
                    break 'rounds;
                }
            }
        }
    }
    bar.finish_and_clear();
    let shutdown = servers.stop();
    if let Some(failure) = failure {
        return Err(failure);
    }

    let mut summaries: Vec<Summary> =
        MODES.iter().zip(samples).map(|(&mode, rounds)| summarize(mode, rounds)).collect();
    let bare = summaries[0].req_per_s;
    for s in &mut summaries {
        s.ratio = (bare > 0.0).then(|| s.req_per_s / bare);
    }
    print_table(&settings, &summaries);

    let dir = out::output_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json_path = dir.join("load.json");
    let text = serde_json::to_string_pretty(&to_json(&settings, &summaries)).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    let svg_path = dir.join("load.svg");
    draw_svg(&svg_path, &settings, &summaries).map_err(|e| format!("cannot draw {}: {e}", svg_path.display()))?;
    println!("\nwrote {} and {}", json_path.display(), svg_path.display());

    let mut ok = true;
    if let Err(e) = shutdown {
        println!("ERROR: {e}");
        ok = false;
    }
    for s in &summaries {
        if s.errors > 0 || s.requests == 0 {
            println!("ERROR: {} had {} errors and {} good answers", s.mode.label(), s.errors, s.requests);
            ok = false;
        }
    }
    Ok(ok)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("load bench failed: {e}");
            std::process::exit(2);
        }
    }
}
