//! One measured run of one mode: start the load generator, warm up, measure the window (requests,
//! latencies, CPU), and collect what every connection saw.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::client::{client_thread, Plan};
use crate::cpu::{server_threads, snapshot, thread_ticks, CLK_TCK};
use crate::modes::{Mode, LEGACY_BODY, LEGACY_VERSION, MODERN_VERSION, STATELESS_BODY};
use crate::servers::Servers;
use crate::settings::Settings;
use crate::support::http1::http_request;

/// The figures of one mode in one round.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) error_samples: Vec<String>,
    pub(crate) req_per_s: f64,
    pub(crate) p50_us: u32,
    pub(crate) p99_us: u32,
    /// CPU µs per request: server threads, load generator, whole process (None: /proc unreadable).
    pub(crate) server_cpu_us: Option<f64>,
    pub(crate) client_cpu_us: Option<f64>,
    pub(crate) process_cpu_us: Option<f64>,
    /// Server CPU µs per request by thread name.
    pub(crate) threads: Vec<(String, f64)>,
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Sleeps until `until`, moving the bar along.
fn wait_until(until: Instant, bar: &ProgressBar, bar_base: u64, phase_start: Instant, message: &dyn Fn() -> String) {
    loop {
        let now = Instant::now();
        bar.set_position(bar_base + now.saturating_duration_since(phase_start).as_millis() as u64);
        bar.set_message(message());
        if now >= until {
            return;
        }
        thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

pub(crate) fn run_mode(
    settings: &Settings,
    mode: Mode,
    servers: &Servers,
    main_tid: u32,
    bar: &ProgressBar,
    bar_base: u64,
    title: &str,
) -> Result<Sample, String> {
    let port = servers.ports.of(mode);
    let start = Instant::now();
    let measure_start = start + Duration::from_secs_f64(settings.warmup);
    let end = measure_start + Duration::from_secs_f64(settings.seconds);
    let request = match mode {
        Mode::Bare | Mode::Stateless => http_request(
            port,
            "POST",
            &[("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
            STATELESS_BODY,
        ),
        Mode::Legacy => http_request(port, "POST", &[("MCP-Protocol-Version", LEGACY_VERSION)], LEGACY_BODY),
        Mode::Session => Vec::new(),
    };
    let plan = Arc::new(Plan { mode, port, request, measure_start, end, live: AtomicU64::new(0) });
    let gate = Arc::new(RwLock::new(()));
    let release = gate.write().map_err(|_| "poisoned gate")?;
    let (tid_tx, tid_rx) = mpsc::channel();
    let mut handles = Vec::new();
    for index in 0..settings.client_threads {
        let share = settings.connections / settings.client_threads
            + usize::from(index < settings.connections % settings.client_threads);
        let (plan, tids, gate) = (plan.clone(), tid_tx.clone(), gate.clone());
        let handle = thread::Builder::new()
            .name(format!("bench-client-{index}"))
            .spawn(move || client_thread(plan, share, tids, gate))
            .map_err(|e| format!("cannot spawn a client thread: {e}"))?;
        handles.push(handle);
    }
    drop(tid_tx);
    let mut client_tids = Vec::new();
    for _ in 0..settings.client_threads {
        if let Ok(Some(tid)) = tid_rx.recv_timeout(Duration::from_secs(5)) {
            client_tids.push(tid);
        }
    }
    let tids_known = client_tids.len() == settings.client_threads;

    wait_until(measure_start, bar, bar_base, start, &|| format!("{title}: warm-up"));
    let threads_before = thread_ticks();
    let before = snapshot(&client_tids, main_tid).filter(|_| tids_known);
    wait_until(end, bar, bar_base, start, &|| {
        let done = plan.live.load(Ordering::Relaxed);
        let elapsed = measure_start.elapsed().as_secs_f64().max(1e-3);
        format!("{title}: {done} req, {:.0} req/s", done as f64 / elapsed)
    });
    let after = snapshot(&client_tids, main_tid).filter(|_| tids_known);
    let threads_after = thread_ticks();
    drop(release);

    let mut latencies = Vec::new();
    let (mut requests, mut errors, mut answered, mut error_samples) = (0, 0, 0, Vec::<String>::new());
    for handle in handles {
        let results = handle.join().map_err(|_| "a client thread panicked")?;
        for result in results {
            requests += result.ok;
            errors += result.errors;
            answered += result.ok + result.window_errors;
            for sample in result.samples {
                if error_samples.len() < 5 && !error_samples.contains(&sample) {
                    error_samples.push(sample);
                }
            }
            latencies.extend_from_slice(&result.latencies_us);
        }
    }
    latencies.sort_unstable();
    let mut exclude = client_tids.clone();
    exclude.push(main_tid);
    let threads = server_threads(&threads_before, &threads_after, &exclude, &servers.labels, answered);
    let per_request = |ticks: i64| (answered > 0).then(|| ticks.max(0) as f64 * 1e6 / CLK_TCK / answered as f64);
    let (server_cpu_us, client_cpu_us, process_cpu_us) = match (before, after) {
        (Some(b), Some(a)) => {
            let process = a.process as i64 - b.process as i64;
            let clients = a.clients as i64 - b.clients as i64;
            let main = a.main as i64 - b.main as i64;
            (per_request(process - clients - main), per_request(clients), per_request(process))
        }
        _ => (None, None, None),
    };
    Ok(Sample {
        requests,
        errors,
        error_samples,
        req_per_s: requests as f64 / settings.seconds,
        p50_us: percentile(&latencies, 50.0),
        p99_us: percentile(&latencies, 99.0),
        server_cpu_us,
        client_cpu_us,
        process_cpu_us,
        threads,
    })
}
