//! What every part of the shared sessions works through: this instance's Redis connection, its
//! cluster health (where a failed command is counted and logged), its id, and its numbering tag.
//!
//! It is cheap to clone, so a write or read spawned on its own takes a copy; the record, the
//! event log and the bus each hold one and none of them holds another, so the three depend on
//! this file rather than on each other.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;

use crate::cluster::health::ClusterHealth;

/// The low bits of a stream number or request id an instance counts in; above them, its tag.
pub(super) const TAG_SHIFT: u32 = 32;

/// Why a shared-session operation failed: Redis did not answer (the message says how).
#[derive(Debug, Clone, derive_more::Display)]
#[display("cluster: Redis is unreachable ({_0})")]
pub(crate) struct Unreachable(String);

/// This instance's way to Redis, as the shared sessions use it.
#[derive(Clone)]
pub(super) struct RedisLink {
    /// The multiplexed connection (reconnecting by itself).
    pub(super) connection: ConnectionManager,
    /// This instance's id (the bus messages' origin, a stream's owner).
    pub(super) instance: Arc<str>,
    /// This instance's random 20-bit tag, the high bits of its stream and request numbers.
    pub(super) tag: u64,
    health: Arc<ClusterHealth>,
}

impl fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLink").field("instance", &self.instance).field("tag", &self.tag).finish()
    }
}

impl RedisLink {
    /// The link of instance `instance`, with a fresh tag.
    pub(super) fn new(connection: ConnectionManager, instance: &str, health: Arc<ClusterHealth>) -> Self {
        let mut bytes = [0u8; 4];
        let _ = getrandom::fill(&mut bytes);
        // 20 bits, never 0 (0 is a single instance's numbering): ids stay below 2^53, exact in
        // every client's JSON numbers.
        let tag = u64::from(u32::from_le_bytes(bytes) % ((1 << 20) - 1) + 1);
        RedisLink { connection, instance: Arc::from(instance), tag, health }
    }

    /// The first number of this instance's streams and server-to-client requests.
    pub(super) fn number_base(&self) -> u64 {
        self.tag << TAG_SHIFT
    }

    /// A connection to send commands on (a handle of the one multiplexed connection).
    pub(super) fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// A failed command: counted and logged in the cluster's health, and the error to answer.
    pub(super) fn failed(&self, error: &redis::RedisError) -> Unreachable {
        self.health.failed(error);
        Unreachable(error.to_string())
    }

    /// Something that should have reached Redis was dropped here (counted as an error).
    pub(super) fn dropped(&self) {
        self.health.errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A duration in Redis's milliseconds (at least 1).
pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
