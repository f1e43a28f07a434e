//! Cluster mode (`--redis URL`): several mcpd instances behind a load balancer share through
//! Redis what lets any of them serve any request — the `requestState` sealing keys, so that a
//! multi-round-trip request's next round may land on any instance, the tasks
//! ([`RedisTaskStore`], with each instance's heartbeat), and the streamable-HTTP sessions with
//! the notification bus (`sessions`), the per-identity shares (`shares`) and the access-file
//! clients' rate limits (`rates`).
//!
//! Without `--redis` nothing here runs. With it, one background task per process:
//!
//! - keeps a [`ConnectionManager`] (one multiplexed connection that reconnects by itself;
//!   created lazily, so mcpd starts whether or not Redis answers);
//! - every [`REFRESH`] (every [`RETRY`] while Redis is down) fetches the key ring in one
//!   pipelined round trip and hands it to the core ([`McpServer::set_state_keys`]) when it
//!   changed. No request waits on Redis: the hot path reads the ring in force under a read lock.
//!
//! **Keys and rotation.** Time is cut into epochs of `rotation` (default 24 h). The key of epoch
//! `e` is `mcpd:request-state-key:<rotation secs>:<e>`, 32 random bytes written with `SET NX`
//! (the first instance to get there wins, every other one reads the winner's) and expiring after
//! three epochs. An instance seals with the key of the current epoch and opens with the keys of
//! the previous, current and next epochs; it creates the next epoch's key one epoch in advance,
//! so every instance knows it well before any clock reaches it. A rotation therefore breaks no
//! round in flight (a state lives 10 minutes, an epoch hours), and instances whose clocks differ
//! by less than an epoch agree. To retire the keys at once (a leak), delete the
//! `mcpd:request-state-key:*` keys: instances create and pick up new ones within [`REFRESH`],
//! and rounds in flight are refused with "requestState failed its integrity check".
//!
//! **Redis down.** An instance that has never reached Redis seals with its own random key (MRTR
//! rounds then work only when they return to the same instance); one that lost Redis keeps the
//! ring it has. Either way it logs once when Redis goes down and once when it is back, reports
//! `mcpd_redis_up 0` and counts `mcpd_redis_errors`, and retries every [`RETRY`].
//!
//! The keys are secrets kept in Redis: reach Redis over loopback or a private network, with a
//! password (`redis://:PASSWORD@host:port/`) or an ACL user; the status shows the URL without it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use derive_more::{Display, Error};
use mcpd::McpServer;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use mcpd::tasks::{StoreLimits, TaskStore};

use crate::runtime::{Mcpd, RuntimeError};

mod health;
mod rates;
pub(crate) mod sessions;
mod shares;
mod tasks;

use health::ClusterHealth;
pub use health::RETRY;
pub use rates::TAKE_TIMEOUT;
pub use tasks::{RedisTaskStore, HEARTBEAT, HEARTBEAT_TTL, INSTANCE_STOPPED};

/// How often a connected instance reads the key ring again.
pub const REFRESH: Duration = Duration::from_secs(5);
/// The default key rotation period.
pub const DEFAULT_ROTATION: Duration = Duration::from_secs(24 * 3600);
/// How long one Redis command (or connection attempt) may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes of a sealing key.
const KEY_LEN: usize = 32;

/// Why cluster mode could not start.
#[derive(Debug, Display, Error)]
pub enum ClusterError {
    /// The `--redis` URL is not one the Redis client accepts.
    #[display("invalid --redis URL {url}: {reason}")]
    BadUrl {
        /// The URL, without its password.
        url: String,
        /// The client's reason.
        reason: String,
    },
    /// The key rotation period is under a minute (it must outlast the 10-minute state lifetime
    /// by far; a minute is the least that tests use).
    #[display("the requestState key rotation must be at least 60 s")]
    Rotation,
    /// The runtime refused the status fields.
    #[display("{_0}")]
    Runtime(RuntimeError),
}

/// Cluster mode's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The Redis URL (`redis://[user:password@]host:port[/db]`).
    pub url: String,
    /// How often the `requestState` key changes.
    pub rotation: Duration,
}

impl ClusterConfig {
    /// Settings for `url` with the default rotation.
    pub fn new(url: impl Into<String>) -> Self {
        ClusterConfig { url: url.into(), rotation: DEFAULT_ROTATION }
    }
}

/// Cluster mode: made by [`Cluster::new`] before the runtime (whose tasks live in
/// [`Cluster::task_store`]), running from [`Cluster::start`]; dropping it does not stop it (it
/// ends with the actix system).
#[derive(Debug, Clone)]
pub struct Cluster {
    health: Arc<ClusterHealth>,
    connection: ConnectionManager,
    server: Arc<McpServer>,
    rotation: Duration,
    tasks: RedisTaskStore,
    client: redis::Client,
}

/// The URL with its password replaced by `***`.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(unparsable URL)".to_owned(),
    }
}

impl Cluster {
    /// Cluster mode for `server`, not started: the (lazy) Redis connection, this instance's id
    /// and its task store. Connects to nothing yet.
    ///
    /// # Errors
    /// A bad URL or rotation.
    pub fn new(server: Arc<McpServer>, config: ClusterConfig) -> Result<Self, ClusterError> {
        let url = redact(&config.url);
        if config.rotation < Duration::from_secs(60) {
            return Err(ClusterError::Rotation);
        }
        let bad_url = |e: redis::RedisError| ClusterError::BadUrl { url: url.clone(), reason: e.to_string() };
        let client = redis::Client::open(config.url.as_str()).map_err(bad_url)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RETRY);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), manager_config).map_err(bad_url)?;
        let mut id = [0u8; 8];
        getrandom::fill(&mut id).map_err(|e| ClusterError::BadUrl { url: url.clone(), reason: e.to_string() })?;
        let instance: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let health = Arc::new(ClusterHealth::new(url, instance.clone()));
        let options = server.options().tasks;
        let limits = StoreLimits { max_tasks: options.max_tasks, max_per_owner: options.max_per_client };
        let tasks = RedisTaskStore::new(connection.clone(), limits, instance);
        Ok(Cluster { health, connection, server, rotation: config.rotation, tasks, client })
    }

    /// The shared task store, for [`Mcpd::with_task_store`].
    pub fn task_store(&self) -> Arc<dyn TaskStore> {
        Arc::new(self.tasks.clone())
    }

    /// The access-file clients' rate limits kept in Redis, one bucket per client across the
    /// instances, for [`crate::access::AccessControl::share_rates`].
    pub fn rate_limits(&self) -> Arc<dyn crate::access::SharedRates> {
        Arc::new(rates::RedisRates::new(self.connection.clone(), self.health.clone()))
    }

    /// Starts cluster mode on `runtime` (serving the server given to [`Cluster::new`]): adds
    /// the `cluster` status field and the `mcpd_redis_*` metrics, and spawns the key task and the
    /// heartbeat (with the sweep of stopped instances) on the current actix system. Returns at
    /// once, whether or not Redis answers.
    ///
    /// # Errors
    /// The runtime's error when it is closed.
    pub async fn start(&self, runtime: &Mcpd) -> Result<(), ClusterError> {
        let health = self.health.clone();
        runtime.metrics().add_collector(Box::new(health.clone()));
        let status = health.clone();
        runtime.set_status_extras(Arc::new(move || status.status())).await.map_err(ClusterError::Runtime)?;
        log::info!(
            "cluster: instance {} sharing requestState keys and tasks through Redis at {} (keys rotated every {:?})",
            health.instance,
            health.url,
            self.rotation
        );
        // The cluster reaches this instance's sessions through `LocalSessions` only.
        let local = Arc::downgrade(runtime.sessions());
        let shared = Arc::new(sessions::SharedSessions::new(
            self.connection.clone(),
            &health.instance,
            health.clone(),
            self.server.live_catalog().clone(),
            local.clone(),
            runtime.tasks().cloned(),
        ));
        shared.start_bus(self.client.clone());
        runtime.share_sessions(shared);
        actix_rt::spawn(keep_keys(self.connection.clone(), self.server.clone(), self.rotation, health.clone()));
        actix_rt::spawn(shares::sync(self.connection.clone(), health.instance.clone(), local, health.clone()));
        actix_rt::spawn(keep_alive(self.tasks.clone(), health));
        Ok(())
    }

    /// A normal shutdown, after the runtime closed: this instance's unfinished tasks are failed
    /// now ("the instance running this task stopped") instead of by another instance's sweep
    /// once its heartbeat expired. Bounded by the Redis command timeout; a failure is logged.
    pub async fn stop(&self) {
        let retired = actix_rt::time::timeout(COMMAND_TIMEOUT * 4, self.tasks.retire()).await;
        match retired {
            Ok(Ok(0)) => {}
            Ok(Ok(failed)) => log::info!("cluster: {failed} unfinished task(s) of this instance marked failed"),
            Ok(Err(error)) => log::warn!("cluster: could not fail this instance's tasks on shutdown: {error}"),
            Err(_) => log::warn!("cluster: Redis did not answer in time to fail this instance's tasks on shutdown"),
        }
    }

    /// This instance's id (its tasks' `instance`, its heartbeat key `mcpd:instance:<id>`).
    pub fn instance(&self) -> &str {
        &self.health.instance
    }

    /// Whether the last Redis command succeeded.
    pub fn is_up(&self) -> bool {
        self.health.up.load(Relaxed)
    }
}

/// The heartbeat task: refreshes this instance's heartbeat, fails the tasks of stopped instances
/// and reads the task counts, every [`HEARTBEAT`], forever.
async fn keep_alive(tasks: RedisTaskStore, health: Arc<ClusterHealth>) {
    loop {
        let beat = async {
            let failed = tasks.heartbeat_and_sweep().await?;
            if failed > 0 {
                log::info!("cluster: {failed} task(s) of stopped instances marked failed");
            }
            tasks.refresh_counts().await
        };
        if let Err(error) = beat.await {
            health.failed(&error);
        }
        actix_rt::time::sleep(HEARTBEAT).await;
    }
}

fn key_name(rotation: Duration, epoch: u64) -> String {
    format!("mcpd:request-state-key:{}:{epoch}", rotation.as_secs())
}

fn random_key() -> Vec<u8> {
    let mut key = vec![0u8; KEY_LEN];
    if let Err(e) = getrandom::fill(&mut key) {
        // Never reached on a working OS; a clock-derived key would be guessable, so say so.
        log::error!("cluster: no system randomness for a requestState key: {e}");
    }
    key
}

/// The ring of `epoch`: (current, [previous, next]) — created where missing, in one round trip.
async fn fetch_ring(
    connection: &mut ConnectionManager,
    rotation: Duration,
    epoch: u64,
) -> redis::RedisResult<(Vec<u8>, Vec<Vec<u8>>)> {
    let ttl = rotation.as_secs().saturating_mul(3);
    let (current, next) = (key_name(rotation, epoch), key_name(rotation, epoch + 1));
    type Key = Option<Vec<u8>>;
    let (previous, current_key, next_key): (Key, Key, Key) = redis::pipe()
        .cmd("SET")
        .arg(&current)
        .arg(random_key())
        .arg("NX")
        .arg("EX")
        .arg(ttl)
        .ignore()
        .cmd("SET")
        .arg(&next)
        .arg(random_key())
        .arg("NX")
        .arg("EX")
        .arg(ttl)
        .ignore()
        .cmd("GET")
        .arg(key_name(rotation, epoch.saturating_sub(1)))
        .cmd("GET")
        .arg(&current)
        .cmd("GET")
        .arg(&next)
        .query_async(connection)
        .await?;
    let usable = |key: &Key| key.as_ref().is_some_and(|k| k.len() == KEY_LEN);
    let Some(current_key) = current_key.filter(|k| k.len() == KEY_LEN) else {
        return Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "the current requestState key in Redis is missing or not 32 bytes",
        )));
    };
    let others = [previous, next_key].into_iter().filter(usable).flatten().collect();
    Ok((current_key, others))
}

fn epoch_now(rotation: Duration) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    now / rotation.as_secs().max(1)
}

/// The key task: fetches the ring, installs it when it changed, forever.
async fn keep_keys(
    mut connection: ConnectionManager,
    server: Arc<McpServer>,
    rotation: Duration,
    health: Arc<ClusterHealth>,
) {
    let mut installed: Option<(Vec<u8>, Vec<Vec<u8>>)> = None;
    loop {
        let epoch = epoch_now(rotation);
        let wait = match fetch_ring(&mut connection, rotation, epoch).await {
            Ok(ring) => {
                if installed.as_ref() != Some(&ring) {
                    server.set_state_keys(ring.0.clone(), ring.1.clone());
                    log::debug!("cluster: requestState key ring of epoch {epoch} installed");
                    installed = Some(ring);
                }
                health.succeeded(epoch);
                REFRESH
            }
            Err(error) => {
                health.failed(&error);
                RETRY
            }
        };
        actix_rt::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kills the server when the test ends, passed or not (its directory goes after it).
    pub(super) struct Killed {
        child: std::process::Child,
        _dir: tempfile::TempDir,
    }

    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A `redis-server` child on a free loopback port (no persistence, in a temp directory) and
    /// a connection to it; None, saying the test is skipped, when it is not installed.
    pub(super) fn redis_server() -> Option<(Killed, ConnectionManager)> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let started = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .spawn();
        let Ok(redis) = started else {
            eprintln!("SKIPPED: redis-server is not installed; .ci/run installs it");
            return None;
        };
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let connection =
            ConnectionManager::new_lazy_with_config(client, ConnectionManagerConfig::new().set_max_delay(RETRY))
                .unwrap();
        Some((Killed { child: redis, _dir: dir }, connection))
    }

    #[test]
    fn the_password_never_shows() {
        assert_eq!(redact("redis://:hunter2@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("not a url"), "(unparsable URL)");
    }

    /// Against a real `redis-server` (skipped without one; the integration test `cluster_redis`
    /// covers the process side): the next epoch's key, made in advance, becomes the current one,
    /// and the one it replaces stays in the ring, so a rotation breaks no round in flight.
    #[actix_rt::test]
    async fn a_rotation_keeps_the_old_key_in_the_ring() {
        let Some((_redis, mut connection)) = redis_server() else { return };
        let rotation = Duration::from_secs(3600);
        let mut first = None;
        for _ in 0..200 {
            if let Ok(ring) = fetch_ring(&mut connection, rotation, 10).await {
                first = Some(ring);
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
        let (current, others) = first.expect("redis-server answered within 10 s");
        assert_eq!(others.len(), 1, "no previous epoch's key yet, the next one made in advance");
        assert_eq!(
            fetch_ring(&mut connection, rotation, 10).await.unwrap(),
            (current.clone(), others.clone()),
            "stable"
        );
        let (rotated, kept) = fetch_ring(&mut connection, rotation, 11).await.unwrap();
        assert_eq!(rotated, others[0], "the next epoch's key is the one made in advance");
        assert!(kept.contains(&current), "the previous key still opens states");
        assert_eq!(kept.len(), 2, "previous and next");
    }

    #[test]
    fn keys_are_named_by_rotation_and_epoch() {
        assert_eq!(key_name(DEFAULT_ROTATION, 7), "mcpd:request-state-key:86400:7");
    }
}
