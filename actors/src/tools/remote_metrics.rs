//! The gateway's hop as `/metrics` shows it: per remote, a latency histogram of its calls
//! (`mcpd_remote_call_seconds{server}`) and its failed calls by kind
//! (`mcpd_remote_errors_total{server, kind}`: the [`ClientError::kind`]s, and `tool` for a
//! result with `isError`). Each remote's series are made once, when the gateway learns of it; a
//! call then costs a read lock, a hash lookup and atomic adds — no allocation.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;

use crate::client::{CallResult, ClientError};
use crate::metrics::MoreMetrics;

/// The error kinds counted per remote: the client's, then `tool`.
const KINDS: usize = ClientError::KINDS.len() + 1;
/// The label of a call whose result has `isError: true`.
const TOOL: &str = "tool";

/// The histogram's buckets: 0.5 ms doubling to about 33 s (a hop on one machine takes well under
/// a millisecond; a remote tool may take seconds).
fn buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.000_5, 2.0, 17)
}

/// One remote's series.
#[derive(Debug)]
struct RemoteSeries {
    latency: Histogram,
    errors: [AtomicU64; KINDS],
}

impl RemoteSeries {
    fn new() -> Self {
        RemoteSeries { latency: Histogram::new(buckets()), errors: Default::default() }
    }

    /// One call: its time, and its error kind's slot if it failed.
    fn observe(&self, elapsed: Duration, kind: Option<usize>) {
        self.latency.observe(elapsed.as_secs_f64());
        if let Some(slot) = kind.and_then(|k| self.errors.get(k)) {
            slot.fetch_add(1, Relaxed);
        }
    }
}

/// The gateway's per-remote call metrics (a collector for [`crate::metrics::Metrics`]).
#[derive(Debug, Default)]
pub struct RemoteMetrics {
    remotes: RwLock<BTreeMap<String, RemoteSeries>>,
}

impl RemoteMetrics {
    /// Makes the series of remote `server` (its name in the servers file), if not there yet.
    pub fn register(&self, server: &str) {
        let mut remotes = self.remotes.write().unwrap_or_else(PoisonError::into_inner);
        if !remotes.contains_key(server) {
            remotes.insert(server.to_owned(), RemoteSeries::new());
        }
    }

    /// Drops the series of a remote no longer configured (a reload removed it), so that the label
    /// set stays that of the servers file.
    pub fn remove(&self, server: &str) {
        self.remotes.write().unwrap_or_else(PoisonError::into_inner).remove(server);
    }

    /// Records one call of remote `server` that took `elapsed` and ended with `outcome`.
    pub fn record(&self, server: &str, elapsed: Duration, outcome: &Result<CallResult, ClientError>) {
        self.record_call(server, elapsed, outcome.as_ref().map(|result| result.is_error));
    }

    /// As [`RemoteMetrics::record`], the outcome told by whether the tool reported a failure.
    pub(crate) fn record_call(&self, server: &str, elapsed: Duration, outcome: Result<bool, &ClientError>) {
        let kind = match outcome {
            Ok(true) => Some(ClientError::KINDS.len()),
            Ok(false) => None,
            Err(error) => ClientError::KINDS.iter().position(|k| *k == error.kind()),
        };
        {
            let remotes = self.remotes.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(series) = remotes.get(server) {
                series.observe(elapsed, kind);
                return;
            }
        }
        // A remote the gateway did not register (added later): its series are made once.
        self.register(server);
        if let Some(series) = self.remotes.read().unwrap_or_else(PoisonError::into_inner).get(server) {
            series.observe(elapsed, kind);
        }
    }
}

impl MoreMetrics for Arc<RemoteMetrics> {
    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let remotes = self.remotes.read().unwrap_or_else(PoisonError::into_inner);
        if remotes.is_empty() {
            return Ok(());
        }
        {
            let mut family = encoder.encode_descriptor(
                "mcpd_remote_call_seconds",
                "Time of each gateway call to a remote, per remote",
                None,
                MetricType::Histogram,
            )?;
            for (server, series) in remotes.iter() {
                series.latency.encode(family.encode_family(&[("server", server.as_str())])?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "mcpd_remote_errors",
            "Failed gateway calls to a remote, by remote and kind (tool: a result with isError)",
            None,
            MetricType::Counter,
        )?;
        for (server, series) in remotes.iter() {
            for (kind, count) in ClientError::KINDS.iter().chain([&TOOL]).zip(&series.errors) {
                let labels = [("server", server.as_str()), ("kind", kind)];
                ConstCounter::new(count.load(Relaxed)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    #[test]
    fn calls_show_in_the_histogram_and_failures_by_kind() {
        let remote = Arc::new(RemoteMetrics::default());
        remote.register("docs");
        let ok = CallResult {
            server_name: "docs".into(),
            tool_name: "echo".into(),
            content: Vec::new(),
            structured_content: None,
            is_error: false,
            raw: serde_json::json!({"content": []}),
        };
        let mut failed = ok.clone();
        failed.is_error = true;
        remote.record("docs", Duration::from_millis(2), &Ok(ok));
        remote.record("docs", Duration::from_millis(3), &Ok(failed));
        remote.record("docs", Duration::from_secs(1), &Err(ClientError::Timeout(1)));
        remote.record("late", Duration::from_millis(1), &Err(ClientError::Transport("refused".into())));
        remote.register("gone");
        remote.remove("gone");
        let metrics = Metrics::standalone(Arc::default());
        metrics.add_collector(Box::new(remote));
        let text = metrics.encode_prometheus();
        for line in [
            r#"mcpd_remote_call_seconds_count{server="docs"} 3"#,
            r#"mcpd_remote_call_seconds_bucket{le="0.002",server="docs"} 1"#,
            r#"mcpd_remote_errors_total{server="docs",kind="timeout"} 1"#,
            r#"mcpd_remote_errors_total{server="docs",kind="tool"} 1"#,
            r#"mcpd_remote_errors_total{server="docs",kind="connect"} 0"#,
            r#"mcpd_remote_errors_total{server="late",kind="connect"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(!text.contains("server=\"gone\""), "{text}");
    }
}
