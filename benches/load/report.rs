//! The load bench's summary: medians over rounds, the table on standard output and the JSON file.

use std::thread;

use serde_json::{json, Value};

use crate::modes::Mode;
use crate::run::Sample;
use crate::settings::Settings;

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

/// One mode's figures over all rounds (medians).
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) mode: Mode,
    pub(crate) req_per_s: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) ratio: Option<f64>,
    pub(crate) server_cpu_us: Option<f64>,
    pub(crate) client_cpu_us: Option<f64>,
    pub(crate) process_cpu_us: Option<f64>,
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) error_samples: Vec<String>,
    pub(crate) rounds: Vec<Sample>,
}

pub(crate) fn summarize(mode: Mode, rounds: Vec<Sample>) -> Summary {
    let pick = |f: &dyn Fn(&Sample) -> Option<f64>| median(rounds.iter().filter_map(f).collect());
    let mut error_samples = Vec::new();
    for sample in rounds.iter().flat_map(|s| &s.error_samples) {
        if error_samples.len() < 5 && !error_samples.contains(sample) {
            error_samples.push(sample.clone());
        }
    }
    Summary {
        mode,
        req_per_s: pick(&|s| Some(s.req_per_s)).unwrap_or(0.0),
        p50_us: pick(&|s| Some(f64::from(s.p50_us))).unwrap_or(0.0),
        p99_us: pick(&|s| Some(f64::from(s.p99_us))).unwrap_or(0.0),
        ratio: None,
        server_cpu_us: pick(&|s| s.server_cpu_us),
        client_cpu_us: pick(&|s| s.client_cpu_us),
        process_cpu_us: pick(&|s| s.process_cpu_us),
        requests: rounds.iter().map(|s| s.requests).sum(),
        errors: rounds.iter().map(|s| s.errors).sum(),
        error_samples,
        rounds,
    }
}

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.decimals$}"))
}

pub(crate) fn print_table(settings: &Settings, summaries: &[Summary]) {
    println!();
    println!(
        "mcpd load bench: tools/call echo, {} connections, {} worker(s) per server, {} client thread(s), \
         {} s measured after {} s warm-up per mode, {} round(s){}",
        settings.connections,
        settings.workers,
        settings.client_threads,
        settings.seconds,
        settings.warmup,
        settings.rounds,
        if settings.rounds > 1 { " (medians)" } else { "" }
    );
    println!();
    println!(
        "{:<26} {:>10} {:>8} {:>8} {:>7} {:>13} {:>13} {:>8}",
        "mode", "req/s", "p50 µs", "p99 µs", "× bare", "srv CPU µs/r", "cli CPU µs/r", "errors"
    );
    println!("{}", "-".repeat(100));
    for s in summaries {
        println!(
            "{:<26} {:>10.0} {:>8.0} {:>8.0} {:>7} {:>13} {:>13} {:>8}",
            s.mode.label(),
            s.req_per_s,
            s.p50_us,
            s.p99_us,
            opt(s.ratio, 2),
            opt(s.server_cpu_us, 1),
            opt(s.client_cpu_us, 1),
            if s.errors == 0 { "0".to_owned() } else { format!("{} !", s.errors) },
        );
    }
    println!();
    println!(
        "srv CPU = process CPU (utime+stime) minus the load-generator and main threads, per request; \
         it covers all server threads (mcpd's workers and its actix system thread; the idle listeners \
         of the other modes count too, negligibly). cli CPU = the load generator's threads. \
         /proc tick = 10 ms."
    );
    println!("server CPU µs/request by thread{}:", if settings.rounds > 1 { " (last round)" } else { "" });
    for s in summaries {
        let Some(last) = s.rounds.last() else { continue };
        let threads: Vec<String> = last.threads.iter().map(|(name, us)| format!("{name} {us:.1}")).collect();
        println!("  {:<26} {}", s.mode.label(), threads.join(", "));
    }
    for s in summaries.iter().filter(|s| s.errors > 0) {
        println!("ERRORS in {}: {} — e.g. {}", s.mode.label(), s.errors, s.error_samples.join(" | "));
    }
    println!();
    for s in summaries {
        let Some(target) = s.mode.target() else { continue };
        let verdict = match s.ratio {
            _ if s.errors > 0 => "NOT MET (the mode had errors)",
            Some(r) if r >= target => "met",
            Some(_) => "NOT MET",
            None => "unknown (no bare figure)",
        };
        let ratio = s.ratio.map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}x"));
        println!("target: {} >= {target:.2}x bare: {ratio} -> {verdict}", s.mode.label());
    }
}

pub(crate) fn to_json(settings: &Settings, summaries: &[Summary]) -> Value {
    let modes: Vec<Value> = summaries
        .iter()
        .map(|s| {
            json!({
                "mode": s.mode.key(),
                "label": s.mode.label(),
                "req_per_s": s.req_per_s,
                "p50_us": s.p50_us,
                "p99_us": s.p99_us,
                "ratio_to_bare": s.ratio,
                "server_cpu_us_per_req": s.server_cpu_us,
                "client_cpu_us_per_req": s.client_cpu_us,
                "process_cpu_us_per_req": s.process_cpu_us,
                "requests": s.requests,
                "errors": s.errors,
                "error_samples": s.error_samples,
                "target_ratio": s.mode.target(),
                "target_met": s.mode.target().map(|t| s.errors == 0 && s.ratio.is_some_and(|r| r >= t)),
                "rounds": s.rounds.iter().map(|r| json!({
                    "req_per_s": r.req_per_s,
                    "p50_us": r.p50_us,
                    "p99_us": r.p99_us,
                    "server_cpu_us_per_req": r.server_cpu_us,
                    "client_cpu_us_per_req": r.client_cpu_us,
                    "process_cpu_us_per_req": r.process_cpu_us,
                    "requests": r.requests,
                    "errors": r.errors,
                    "server_cpu_us_per_req_by_thread": r.threads.iter()
                        .map(|(name, us)| json!({"thread": name, "cpu_us_per_req": us}))
                        .collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "bench": "load",
        "call": {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"}}},
        "settings": {
            "connections": settings.connections,
            "seconds": settings.seconds,
            "warmup_seconds": settings.warmup,
            "rounds": settings.rounds,
            "workers": settings.workers,
            "client_threads": settings.client_threads,
            "cpus": thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        },
        "statistic": if settings.rounds > 1 { "median over rounds" } else { "single round" },
        "cpu_note": "server CPU = process utime+stime minus the load-generator and main threads (10 ms ticks)",
        "modes": modes,
    })
}
