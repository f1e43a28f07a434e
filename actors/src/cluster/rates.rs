//! Rate limits shared by a cluster: an access-file client's `rateLimit` is one token bucket
//! across every instance, kept in Redis (`mcpd:rate:<client>`, a hash of `tokens` and `ts`) and
//! taken by one Lua script per `tools/call` ([`TAKE`]): the refill and the take happen atomically
//! in Redis, on Redis's clock, so the instances' clocks do not matter and no two instances spend
//! the same token. The key expires once the bucket would be full again.
//!
//! A call that finds Redis unreachable (known down, failing, or slower than [`TAKE_TIMEOUT`]) is
//! judged by its instance's own bucket instead ([`crate::access::AccessControl::take_call`]): the
//! limit holds per instance meanwhile, never blocks calls on Redis, and each such call is counted
//! (`mcpd_rate_limit_fallbacks_total`, the status's `cluster.rateLimitFallbacks`), with one log line
//! when the fallback starts and one when the shared bucket answers again.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use mcpd::auth::access::RateLimit;
use redis::aio::ConnectionManager;

use super::health::ClusterHealth;
use crate::access::{SharedRates, SharedTake};

/// The longest a call waits for the shared bucket before its instance's own decides.
pub const TAKE_TIMEOUT: Duration = Duration::from_millis(250);

/// KEYS: the bucket. ARGV: burst, calls per minute. Returns 0 when a token was taken, else the
/// microseconds until the next one.
const TAKE: &str = r"
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000000 + tonumber(now[2])
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / 60000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate)
  ts = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(ts))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate / 1000) + 1000)
return wait
";

fn bucket_key(client: &str) -> String {
    format!("mcpd:rate:{client}")
}

/// The clients' buckets in Redis.
#[derive(Debug)]
pub(super) struct RedisRates {
    connection: ConnectionManager,
    health: Arc<ClusterHealth>,
    /// Whether calls are judged by the instances' own buckets now (logged when it changes).
    falling_back: AtomicBool,
}

impl RedisRates {
    pub(super) fn new(connection: ConnectionManager, health: Arc<ClusterHealth>) -> Self {
        RedisRates { connection, health, falling_back: AtomicBool::new(false) }
    }

    /// One call judged by the instance's own bucket: counted, and logged when the fallback starts.
    fn fall_back(&self, why: &str) -> Option<Result<(), Duration>> {
        self.health.rate_fallback();
        if !self.falling_back.swap(true, Relaxed) {
            log::warn!("cluster: rate limits fall back to each instance's own bucket: {why}");
        }
        None
    }

    async fn take_shared(&self, client: &str, limit: RateLimit) -> Option<Result<(), Duration>> {
        if !self.health.up.load(Relaxed) {
            return self.fall_back("Redis is unreachable");
        }
        let mut connection = self.connection.clone();
        let mut script = redis::cmd("EVAL");
        script.arg(TAKE).arg(1).arg(bucket_key(client)).arg(limit.burst).arg(limit.per_minute);
        let taken = actix_rt::time::timeout(TAKE_TIMEOUT, script.query_async::<u64>(&mut connection)).await;
        let wait = match taken {
            Ok(Ok(wait)) => wait,
            Ok(Err(error)) => {
                self.health.failed(&error);
                return self.fall_back(&format!("Redis failed: {error}"));
            }
            Err(_) => return self.fall_back(&format!("Redis did not answer within {TAKE_TIMEOUT:?}")),
        };
        if self.falling_back.swap(false, Relaxed) {
            log::info!("cluster: rate limits are shared through Redis again");
        }
        Some(match wait {
            0 => Ok(()),
            micros => Err(Duration::from_micros(micros)),
        })
    }
}

impl SharedRates for RedisRates {
    fn take<'a>(&'a self, client: &'a str, limit: RateLimit) -> SharedTake<'a> {
        Box::pin(self.take_shared(client, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a real `redis-server` (skipped without one): the burst is taken, then the wait
    /// until the next token is told, across two connections as across two instances.
    #[actix_rt::test]
    async fn one_bucket_across_connections() {
        let Some((_redis, connection)) = super::super::tests::redis_server() else { return };
        let health = Arc::new(ClusterHealth::new("redis://test".into(), "i1".into()));
        health.up.store(true, Relaxed);
        let (one, two) =
            (RedisRates::new(connection.clone(), health.clone()), RedisRates::new(connection.clone(), health.clone()));
        let limit = RateLimit { per_minute: 60, burst: 3 };
        let mut answered = None;
        for _ in 0..200 {
            if let Some(taken) = one.take("ci", limit).await {
                answered = Some(taken);
                break;
            }
            one.falling_back.store(false, Relaxed);
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(answered, Some(Ok(())), "redis-server answered within 10 s");
        assert_eq!(two.take("ci", limit).await, Some(Ok(())));
        assert_eq!(one.take("ci", limit).await, Some(Ok(())));
        let Some(Err(wait)) = two.take("ci", limit).await else { panic!("the fourth call is over the burst") };
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1), "{wait:?}");
        assert_eq!(one.take("other", limit).await, Some(Ok(())), "each client its own bucket");
        health.up.store(false, Relaxed);
        assert_eq!(one.take("ci", limit).await, None, "Redis known down: the instance's own bucket decides");
        assert_eq!(health.status()["cluster"]["rateLimitFallbacks"], 1);
    }
}
