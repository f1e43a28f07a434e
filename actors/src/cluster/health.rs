//! Cluster mode's health: whether Redis answers, how many of its commands failed and the last
//! error, and whether `requestState` is sealed with the shared key ring. Every part of cluster
//! mode (the key task, the heartbeat, the shared sessions and the bus) reports here, and the
//! status JSON and `/metrics` read it. Kept apart from the `Cluster` that starts those parts, so
//! that the parts can report without depending on what starts them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use serde_json::json;

use crate::metrics::MoreMetrics;

/// How often an instance retries while Redis is down.
pub const RETRY: Duration = Duration::from_secs(1);

/// What the status and `/metrics` show.
#[derive(Debug)]
pub(super) struct ClusterHealth {
    /// The URL without its password.
    pub(super) url: String,
    /// This instance's id.
    pub(super) instance: String,
    /// Whether the last Redis command succeeded.
    pub(super) up: AtomicBool,
    /// Redis commands that failed (and events a session's writer could not queue).
    pub(super) errors: AtomicU64,
    /// Rate-limited calls judged by this instance's own bucket, the shared one unreachable.
    rate_fallbacks: AtomicU64,
    /// Whether the instance seals with the shared keys (false until Redis first answered).
    shared_keys: AtomicBool,
    epoch: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl ClusterHealth {
    /// The health of instance `instance` using Redis at `url` (without its password): down
    /// until a command succeeds.
    pub(super) fn new(url: String, instance: String) -> Self {
        ClusterHealth {
            url,
            instance,
            up: AtomicBool::new(false),
            errors: AtomicU64::new(0),
            rate_fallbacks: AtomicU64::new(0),
            shared_keys: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            last_error: Mutex::new(None),
        }
    }

    /// A Redis command failed: counted, logged when Redis was up (or at the first failure).
    pub(super) fn failed(&self, error: &redis::RedisError) {
        self.errors.fetch_add(1, Relaxed);
        let message = error.to_string();
        if self.up.swap(false, Relaxed) || self.errors.load(Relaxed) == 1 {
            let keys = if self.shared_keys.load(Relaxed) {
                "the shared requestState keys in force are kept"
            } else {
                "requestState is sealed with this instance's own key until then"
            };
            log::warn!("cluster: Redis at {} is unreachable ({message}); retrying every {RETRY:?}, {keys}", self.url);
        }
        *self.last_error.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
    }

    /// A rate-limited call was judged by this instance's own bucket (the shared one unreachable).
    pub(super) fn rate_fallback(&self) {
        self.rate_fallbacks.fetch_add(1, Relaxed);
    }

    /// The key ring of `epoch` was read: Redis is up, the shared keys are in force.
    pub(super) fn succeeded(&self, epoch: u64) {
        if !self.up.swap(true, Relaxed) {
            log::info!("cluster: Redis at {} is up; requestState keys of epoch {epoch} shared", self.url);
        }
        self.shared_keys.store(true, Relaxed);
        self.epoch.store(epoch, Relaxed);
    }

    /// The `cluster` field of the status JSON.
    pub(super) fn status(&self) -> serde_json::Value {
        json!({
            "cluster": {
                "redis": self.url,
                "instance": self.instance,
                "up": self.up.load(Relaxed),
                "errors": self.errors.load(Relaxed),
                "requestStateKeys": if self.shared_keys.load(Relaxed) { "shared" } else { "local" },
                "keyEpoch": self.epoch.load(Relaxed),
                "rateLimitFallbacks": self.rate_fallbacks.load(Relaxed),
                "lastError": *self.last_error.lock().unwrap_or_else(PoisonError::into_inner),
            }
        })
    }
}

impl MoreMetrics for Arc<ClusterHealth> {
    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let up = encoder.encode_descriptor(
            "mcpd_redis_up",
            "Whether the last Redis command succeeded (cluster mode)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::from(self.up.load(Relaxed))).encode(up)?;
        let errors =
            encoder.encode_descriptor("mcpd_redis_errors", "Redis commands that failed", None, MetricType::Counter)?;
        ConstCounter::new(self.errors.load(Relaxed)).encode(errors)?;
        let fallbacks = encoder.encode_descriptor(
            "mcpd_rate_limit_fallbacks",
            "Rate-limited calls judged by this instance's own bucket while the shared one (Redis) was unreachable",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.rate_fallbacks.load(Relaxed)).encode(fallbacks)?;
        let shared = encoder.encode_descriptor(
            "mcpd_request_state_keys_shared",
            "Whether requestState is sealed with the key ring shared through Redis",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::from(self.shared_keys.load(Relaxed))).encode(shared)
    }
}
