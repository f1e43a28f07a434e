//! What the client-side benches share: settings from flags and environment, and the closed-loop
//! driver.

pub(crate) mod out;
pub(crate) mod stateless;

use std::time::{Duration, Instant};

/// How long and how hard to drive.
pub(crate) struct Settings {
    pub(crate) concurrency: usize,
    pub(crate) seconds: f64,
    pub(crate) rounds: usize,
}

/// Settings from `--concurrency N --seconds S --rounds R`, else `MCPD_BENCH_CONCURRENCY`,
/// `MCPD_BENCH_SECONDS`, `MCPD_BENCH_ROUNDS`, else 16 × 3 s × 3 rounds.
pub(crate) fn settings() -> Settings {
    let env = |name: &str| std::env::var(name).ok();
    let mut s = Settings {
        concurrency: env("MCPD_BENCH_CONCURRENCY").and_then(|v| v.parse().ok()).unwrap_or(16),
        seconds: env("MCPD_BENCH_SECONDS").and_then(|v| v.parse().ok()).unwrap_or(3.0),
        rounds: env("MCPD_BENCH_ROUNDS").and_then(|v| v.parse().ok()).unwrap_or(3),
    };
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut i = 0;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--concurrency" => s.concurrency = args[i + 1].parse().unwrap_or(s.concurrency),
            "--seconds" => s.seconds = args[i + 1].parse().unwrap_or(s.seconds),
            "--rounds" => s.rounds = args[i + 1].parse().unwrap_or(s.rounds),
            _ => {}
        }
        i += 2;
    }
    s
}

/// Runs `concurrency` loops of `call` for `seconds`; returns (requests, errors).
pub(crate) async fn drive<F, Fut>(concurrency: usize, seconds: f64, call: F) -> (u64, u64)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let loops = (0..concurrency).map(|_| async {
        let (mut ok, mut errors) = (0u64, 0u64);
        while Instant::now() < deadline {
            if call().await {
                ok += 1;
            } else {
                errors += 1;
            }
        }
        (ok, errors)
    });
    futures_util::future::join_all(loops).await.into_iter().fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// A closure that sends one stateless 2026-07-28 `tools/call` of `tool` (`{"text": "hello"}`)
/// to `url` and says whether the answer echoed `hello`.
pub(crate) fn stateless_echo(
    http: &awc::Client,
    url: String,
    tool: &'static str,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = bool>>> {
    let body = stateless::body(tool, serde_json::json!({"text": "hello"}));
    let http = http.clone();
    move || {
        let (http, url, body) = (http.clone(), url.clone(), body.clone());
        Box::pin(async move {
            stateless::call(&http, &url, tool, body).await.is_ok_and(|v| v["result"]["content"][0]["text"] == "hello")
        })
    }
}

/// One round: (req/s, errors, CPU µs per request of the calling thread, CPU µs per request of
/// the whole process — caller and in-process servers) of the baseline (`[0]`) and of the
/// measured mode (`[1]`).
pub(crate) type Round = [(f64, u64, f64, f64); 2];

/// CPU time this thread has run, in nanoseconds (`/proc/thread-self/schedstat`; 0 where absent).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// CPU time every thread of this process has run, in nanoseconds (`/proc/self/stat` utime +
/// stime, in clock ticks of 10 ms; 0 where absent).
fn process_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) * 10_000_000
}

/// Each thread of this process, named `TID NAME`, with the CPU time it has run (nanoseconds).
fn threads_cpu() -> Vec<(String, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    let mut threads: Vec<(String, u64)> = tasks
        .flatten()
        .map(|task| {
            let path = task.path();
            let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let ns = std::fs::read_to_string(path.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
                .unwrap_or(0);
            (format!("{} {}", task.file_name().to_string_lossy(), name.trim()), ns)
        })
        .collect();
    threads.sort();
    threads
}

/// Runs `s.rounds` rounds of `baseline` and `measured`, alternating which goes first so that
/// drift on a shared machine hits both alike; prints each round under `keys`.
pub(crate) async fn compare<B, BF, M, MF>(s: &Settings, keys: [&str; 2], baseline: B, measured: M) -> Vec<Round>
where
    B: Fn() -> BF,
    BF: std::future::Future<Output = bool>,
    M: Fn() -> MF,
    MF: std::future::Future<Output = bool>,
{
    let mut rounds = Vec::new();
    for round in 0..s.rounds {
        let mut pair = [(0.0, 0, 0.0, 0.0), (0.0, 0, 0.0, 0.0)];
        for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
            let started = Instant::now();
            let (cpu, all) = (thread_cpu_ns(), process_cpu_ns());
            let threads = threads_cpu();
            let (n, errors) = if which == 0 {
                drive(s.concurrency, s.seconds, &baseline).await
            } else {
                drive(s.concurrency, s.seconds, &measured).await
            };
            let per_request = |ns: u64| ns as f64 / 1000.0 / n.max(1) as f64;
            // MCPD_BENCH_THREADS set: each busy thread's CPU per request (caller, servers' workers).
            if std::env::var_os("MCPD_BENCH_THREADS").is_some() {
                for ((name, after), (_, before)) in threads_cpu().into_iter().zip(&threads) {
                    let us = per_request(after.saturating_sub(*before));
                    if us > 0.5 {
                        eprintln!("  {} thread {name}: {us:.1} µs CPU/req", keys[which]);
                    }
                }
            }
            let cpu_us = per_request(thread_cpu_ns().saturating_sub(cpu));
            let all_us = per_request(process_cpu_ns().saturating_sub(all));
            pair[which] = (n as f64 / started.elapsed().as_secs_f64(), errors, cpu_us, all_us);
        }
        eprintln!(
            "round {}/{}: {} {:.0} req/s ({:.1} µs CPU/req caller, {:.1} all), {} {:.0} req/s ({:.1} µs CPU/req caller, {:.1} all)",
            round + 1,
            s.rounds,
            keys[0],
            pair[0].0,
            pair[0].2,
            pair[0].3,
            keys[1],
            pair[1].0,
            pair[1].2,
            pair[1].3
        );
        rounds.push(pair);
    }
    rounds
}

/// Prints the table of medians (rows labelled `labels`, ratios to the baseline), writes
/// `target/bench/<name>.json` with `<key>_rps` and per-round figures; returns the ratio and
/// the number of failed calls.
pub(crate) fn report(name: &str, s: &Settings, keys: [&str; 2], labels: [&str; 2], results: &[Round]) -> (f64, u64) {
    let median_of = |which: usize, field: fn(&(f64, u64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = results.iter().map(|p| field(&p[which])).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let median = |which: usize| median_of(which, |r| r.0);
    let cpu = |which: usize| median_of(which, |r| r.2);
    let all = |which: usize| median_of(which, |r| r.3);
    let errors: u64 = results.iter().map(|p| p[0].1 + p[1].1).sum();
    let (baseline, measured) = (median(0), median(1));
    let ratio = measured / baseline;
    eprintln!(
        "\n{name} bench: tools/call echo, {} concurrent calls, {} s × {} rounds (medians)\n",
        s.concurrency, s.seconds, s.rounds
    );
    eprintln!(
        "{:<34}{:>12}{:>10}{:>22}{:>22}",
        "mode",
        "req/s",
        format!("× {}", keys[0]),
        "caller CPU µs/req",
        "process CPU µs/req"
    );
    eprintln!("{:<34}{:>12.0}{:>10.2}{:>22.1}{:>22.1}", labels[0], baseline, 1.0, cpu(0), all(0));
    eprintln!("{:<34}{:>12.0}{:>10.2}{:>22.1}{:>22.1}", labels[1], measured, ratio, cpu(1), all(1));
    eprintln!("errors: {errors}");
    let mut json = serde_json::json!({"concurrency": s.concurrency, "seconds": s.seconds, "rounds": s.rounds,
        "ratio": ratio, "errors": errors,
        "per_round": results.iter().map(|p| serde_json::json!({keys[0]: p[0].0, keys[1]: p[1].0,
            format!("{}_cpu_us", keys[0]): p[0].2, format!("{}_cpu_us", keys[1]): p[1].2,
            format!("{}_process_cpu_us", keys[0]): p[0].3, format!("{}_process_cpu_us", keys[1]): p[1].3})).collect::<Vec<_>>()});
    json[format!("{}_rps", keys[0])] = serde_json::json!(baseline);
    json[format!("{}_rps", keys[1])] = serde_json::json!(measured);
    json[format!("{}_cpu_us", keys[0])] = serde_json::json!(cpu(0));
    json[format!("{}_cpu_us", keys[1])] = serde_json::json!(cpu(1));
    json[format!("{}_process_cpu_us", keys[0])] = serde_json::json!(all(0));
    json[format!("{}_process_cpu_us", keys[1])] = serde_json::json!(all(1));
    let dir = out::output_dir();
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec_pretty(&json).unwrap_or_default());
    (ratio, errors)
}
