//! The soak's settings: how long, how hard, and the server under test's session expiry.

use std::time::Duration;

use crate::support::cli;

/// What the soak runs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How long the load runs.
    pub(crate) duration: Duration,
    /// The session idle timeout of the server under test.
    pub(crate) idle_timeout: Duration,
    /// The gateway's remote is stopped this often…
    pub(crate) restart_every: Duration,
    /// … and stays down this long.
    pub(crate) down_for: Duration,
    /// Stateless calls per second.
    pub(crate) stateless_rate: f64,
    /// Gateway calls per second.
    pub(crate) gateway_rate: f64,
    /// Concurrent loops opening and abandoning sessions.
    pub(crate) session_loops: usize,
    /// How long a slow reader stops reading.
    pub(crate) slow_pause: Duration,
    /// Actix workers of each server.
    pub(crate) workers: usize,
    /// Target: the largest RSS growth over the second half, in percent.
    pub(crate) rss_growth_target: f64,
}

const USAGE: &str = "usage: cargo bench --bench soak [-- OPTIONS]

options (environment variable in brackets, then default):
  --minutes M          how long the load runs [MCPD_SOAK_MINUTES] 1 (the full soak: 10)
  --seconds S          the same in seconds; wins over --minutes [MCPD_SOAK_SECONDS]
  --idle-timeout S     session idle timeout of the server under test [MCPD_SOAK_IDLE_TIMEOUT] 5
  --restart-every S    the gateway's remote is stopped every S seconds [MCPD_SOAK_RESTART_EVERY] 15
  --down-for S         ... and restarted S seconds later [MCPD_SOAK_DOWN_FOR] 3
  --stateless-rate N   stateless calls per second [MCPD_SOAK_STATELESS_RATE] 300
  --gateway-rate N     gateway calls per second [MCPD_SOAK_GATEWAY_RATE] 50
  --session-loops N    concurrent session open/abandon loops [MCPD_SOAK_SESSION_LOOPS] 2
  --slow-pause S       how long a slow reader stops reading [MCPD_SOAK_SLOW_PAUSE] 4
  --workers N          actix workers of each server [MCPD_SOAK_WORKERS] 1
  --rss-growth PCT     target: RSS growth over the second half at most PCT % [MCPD_SOAK_RSS_GROWTH] 5";

fn seconds(flag: &str, value: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(value).map_err(|_| format!("{flag} {value} is not a valid number of seconds"))
}

impl Settings {
    /// From the command line, else the environment, else the defaults.
    pub(crate) fn parse() -> Result<Settings, String> {
        let mut minutes: f64 = cli::env_number("MCPD_SOAK_MINUTES", 1.0)?;
        let mut secs: Option<f64> = match std::env::var("MCPD_SOAK_SECONDS") {
            Ok(_) => Some(cli::env_number("MCPD_SOAK_SECONDS", 0.0)?),
            Err(_) => None,
        };
        let mut idle: f64 = cli::env_number("MCPD_SOAK_IDLE_TIMEOUT", 5.0)?;
        let mut restart_every: f64 = cli::env_number("MCPD_SOAK_RESTART_EVERY", 15.0)?;
        let mut down_for: f64 = cli::env_number("MCPD_SOAK_DOWN_FOR", 3.0)?;
        let mut slow_pause: f64 = cli::env_number("MCPD_SOAK_SLOW_PAUSE", 4.0)?;
        let mut s = Settings {
            duration: Duration::ZERO,
            idle_timeout: Duration::ZERO,
            restart_every: Duration::ZERO,
            down_for: Duration::ZERO,
            stateless_rate: cli::env_number("MCPD_SOAK_STATELESS_RATE", 300.0)?,
            gateway_rate: cli::env_number("MCPD_SOAK_GATEWAY_RATE", 50.0)?,
            session_loops: cli::env_number("MCPD_SOAK_SESSION_LOOPS", 2)?,
            slow_pause: Duration::ZERO,
            workers: cli::env_number("MCPD_SOAK_WORKERS", 1)?,
            rss_growth_target: cli::env_number("MCPD_SOAK_RSS_GROWTH", 5.0)?,
        };
        cli::parse_flags("soak", USAGE, |flag, value| {
            match flag {
                "--minutes" => minutes = cli::number(flag, &value()?)?,
                "--seconds" => secs = Some(cli::number(flag, &value()?)?),
                "--idle-timeout" => idle = cli::number(flag, &value()?)?,
                "--restart-every" => restart_every = cli::number(flag, &value()?)?,
                "--down-for" => down_for = cli::number(flag, &value()?)?,
                "--stateless-rate" => s.stateless_rate = cli::number(flag, &value()?)?,
                "--gateway-rate" => s.gateway_rate = cli::number(flag, &value()?)?,
                "--session-loops" => s.session_loops = cli::number(flag, &value()?)?,
                "--slow-pause" => slow_pause = cli::number(flag, &value()?)?,
                "--workers" => s.workers = cli::number(flag, &value()?)?,
                "--rss-growth" => s.rss_growth_target = cli::number(flag, &value()?)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        s.duration = seconds("--seconds", secs.unwrap_or(minutes * 60.0))?;
        s.idle_timeout = seconds("--idle-timeout", idle)?;
        s.restart_every = seconds("--restart-every", restart_every)?;
        s.down_for = seconds("--down-for", down_for)?;
        s.slow_pause = seconds("--slow-pause", slow_pause)?;
        if s.duration < Duration::from_secs(10) {
            return Err("the soak needs at least 10 seconds of load".into());
        }
        if s.idle_timeout < Duration::from_millis(500) || s.idle_timeout > Duration::from_secs(120) {
            return Err(
                "--idle-timeout must be between 0.5 and 120 seconds (abandoned sessions must expire within the run)"
                    .into(),
            );
        }
        if s.down_for >= s.restart_every {
            return Err("--down-for must be shorter than --restart-every".into());
        }
        if !(s.stateless_rate > 0.0
            && s.gateway_rate > 0.0
            && s.stateless_rate <= 100_000.0
            && s.gateway_rate <= 100_000.0)
        {
            return Err("the rates must be between 0 and 100,000 calls per second".into());
        }
        if s.session_loops == 0 || s.workers == 0 || s.rss_growth_target.is_nan() || s.rss_growth_target < 0.0 {
            return Err("session loops and workers must be at least 1, the RSS target at least 0".into());
        }
        Ok(s)
    }
}
