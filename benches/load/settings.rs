//! The load bench's settings: connections, measured and warm-up seconds, rounds, server workers
//! and load-generator threads, from the environment and the command line.

use crate::support::cli;

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) connections: usize,
    pub(crate) seconds: f64,
    pub(crate) warmup: f64,
    pub(crate) rounds: usize,
    pub(crate) workers: usize,
    pub(crate) client_threads: usize,
}

const USAGE: &str = "usage: cargo bench --bench load [-- OPTIONS]

options (environment variable in brackets, then default):
  --connections N     concurrent keep-alive connections [MCPD_BENCH_CONNECTIONS] 32
  --seconds S         measured seconds per mode and round [MCPD_BENCH_SECONDS] 5
  --warmup S          unmeasured seconds before each measurement [MCPD_BENCH_WARMUP] 1
  --rounds N          rounds; modes interleave per round, medians are reported [MCPD_BENCH_ROUNDS] 1
  --workers N         actix workers of each server [MCPD_BENCH_WORKERS] 1
  --client-threads N  load-generator threads [MCPD_BENCH_CLIENT_THREADS] 1";

impl Settings {
    pub(crate) fn parse() -> Result<Settings, String> {
        let mut settings = Settings {
            connections: cli::env_number("MCPD_BENCH_CONNECTIONS", 32)?,
            seconds: cli::env_number("MCPD_BENCH_SECONDS", 5.0)?,
            warmup: cli::env_number("MCPD_BENCH_WARMUP", 1.0)?,
            rounds: cli::env_number("MCPD_BENCH_ROUNDS", 1)?,
            workers: cli::env_number("MCPD_BENCH_WORKERS", 1)?,
            client_threads: cli::env_number("MCPD_BENCH_CLIENT_THREADS", 1)?,
        };
        cli::parse_flags("load", USAGE, |flag, value| {
            match flag {
                "--connections" => settings.connections = cli::number(flag, &value()?)?,
                "--seconds" => settings.seconds = cli::number(flag, &value()?)?,
                "--warmup" => settings.warmup = cli::number(flag, &value()?)?,
                "--rounds" => settings.rounds = cli::number(flag, &value()?)?,
                "--workers" => settings.workers = cli::number(flag, &value()?)?,
                "--client-threads" => settings.client_threads = cli::number(flag, &value()?)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if settings.connections == 0 || settings.rounds == 0 || settings.workers == 0 || settings.client_threads == 0 {
            return Err("connections, rounds, workers and client threads must be at least 1".into());
        }
        if !(settings.seconds > 0.0 && settings.seconds.is_finite() && settings.warmup >= 0.0) {
            return Err("seconds must be > 0 and warmup >= 0".into());
        }
        settings.client_threads = settings.client_threads.min(settings.connections);
        Ok(settings)
    }
}
