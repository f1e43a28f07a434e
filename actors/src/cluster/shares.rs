//! Each identity's share counted across instances: every [`SYNC`] an instance writes what each
//! identity holds on it to `mcpd:shares:<instance>` (a JSON object of `[sessions, streams,
//! inFlight]` by identity, expiring after [`TTL`] so a dead instance's counts go), and sums the
//! other live instances' (the set `mcpd:instances` of the heartbeat) into its own
//! [`crate::shares::Shares`]. A share is then enforced on what the identity holds everywhere, a
//! second or so behind; no request waits on Redis for it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::ConnectionManager;

use super::health::ClusterHealth;
use crate::session::store::LocalSessions;

/// How often the counts are written and read.
const SYNC: Duration = Duration::from_secs(1);
/// How long an instance's counts outlive its last write.
const TTL: Duration = Duration::from_secs(5);
/// The set of live instances (kept by the heartbeat).
const INSTANCES: &str = "mcpd:instances";

fn key(instance: &str) -> String {
    format!("mcpd:shares:{instance}")
}

/// Writes this instance's counts and reads the others', every [`SYNC`], for as long as the
/// registry lives.
pub(super) async fn sync(
    mut connection: ConnectionManager,
    instance: String,
    sessions: Weak<dyn LocalSessions>,
    health: Arc<ClusterHealth>,
) {
    loop {
        let Some(mine) = sessions.upgrade().map(|registry| registry.shares().local_counts()) else { return };
        match exchange(&mut connection, &instance, &mine).await {
            Ok(others) => {
                if let Some(registry) = sessions.upgrade() {
                    registry.shares().set_remote(others);
                }
            }
            Err(error) => health.failed(&error),
        }
        actix_rt::time::sleep(SYNC).await;
    }
}

/// One round: this instance's counts written, the other instances' summed by identity.
async fn exchange(
    connection: &mut ConnectionManager,
    instance: &str,
    mine: &HashMap<String, [usize; 3]>,
) -> redis::RedisResult<HashMap<String, [usize; 3]>> {
    let written = serde_json::to_string(mine).unwrap_or_else(|_| "{}".into());
    let (instances,): (Vec<String>,) = redis::pipe()
        .cmd("SET")
        .arg(key(instance))
        .arg(written)
        .arg("PX")
        .arg(TTL.as_millis() as u64)
        .ignore()
        .cmd("SMEMBERS")
        .arg(INSTANCES)
        .query_async(connection)
        .await?;
    let others: Vec<String> = instances.into_iter().filter(|other| other != instance).collect();
    if others.is_empty() {
        return Ok(HashMap::new());
    }
    let keys: Vec<String> = others.iter().map(|other| key(other)).collect();
    let counts: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(connection).await?;
    Ok(sum(counts.iter().flatten().map(String::as_str)))
}

/// The counts of several instances (each a JSON object as written), summed by identity; what
/// does not parse is skipped.
fn sum<'a>(written: impl Iterator<Item = &'a str>) -> HashMap<String, [usize; 3]> {
    let mut total: HashMap<String, [usize; 3]> = HashMap::new();
    for counts in written.filter_map(|text| serde_json::from_str::<HashMap<String, [usize; 3]>>(text).ok()) {
        for (identity, held) in counts {
            let entry = total.entry(identity).or_default();
            for (sum, n) in entry.iter_mut().zip(held) {
                *sum = sum.saturating_add(n);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_counts_add_up_by_identity_and_garbage_is_skipped() {
        let total = sum([
            r#"{"client:ci": [1, 2, 0], "anonymous": [0, 0, 3]}"#,
            r#"{"client:ci": [2, 0, 1]}"#,
            "not json",
            "[]",
        ]
        .into_iter());
        assert_eq!(total["client:ci"], [3, 2, 1]);
        assert_eq!(total["anonymous"], [0, 0, 3]);
        assert_eq!(total.len(), 2);
    }
}
