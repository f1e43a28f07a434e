//! What the client-side benches share: settings from flags and environment, and the closed-loop
//! driver.

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
