//! The MCP duration histograms (`mcp.{server,client}.{operation,session}.duration`, seconds,
//! the conventions' bucket boundaries): one store for the process, recorded whether or not an
//! OTLP endpoint is configured. `/metrics` shows it in Prometheus names
//! (`mcp_server_operation_duration_seconds`, …, [`DurationsCollector`]) and the telemetry
//! thread exports it over OTLP as cumulative histograms (`metrics_encode`).
//!
//! A recording is a lookup of its series (labels borrowed from the caller, hashed with FNV-1a,
//! under a read lock: no allocation once the series exists) and three atomic adds. Label values
//! are bounded: the method is one of the conventions' names or `_OTHER`, the version one of the
//! revisions, and a tool or prompt is named only when the caller knows the catalog has it.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::SystemTime;

use super::operation::{Side, Transport};
use mcpd::telemetry::semconv::{self, Failure, DURATION_BUCKETS};
use mcpd::version::ProtocolVersion;

/// Which of the four histograms a series belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Histogram {
    /// `mcp.{side}.operation.duration`.
    Operation(Side),
    /// `mcp.{side}.session.duration`.
    Session(Side),
}

impl Histogram {
    /// Every histogram, in the order they are shown.
    pub(crate) const ALL: [Histogram; 4] = [
        Histogram::Operation(Side::Server),
        Histogram::Operation(Side::Client),
        Histogram::Session(Side::Server),
        Histogram::Session(Side::Client),
    ];

    /// The conventions' name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Histogram::Operation(Side::Server) => semconv::SERVER_OPERATION_DURATION,
            Histogram::Operation(Side::Client) => semconv::CLIENT_OPERATION_DURATION,
            Histogram::Session(Side::Server) => semconv::SERVER_SESSION_DURATION,
            Histogram::Session(Side::Client) => semconv::CLIENT_SESSION_DURATION,
        }
    }

    /// The conventions' description.
    pub(crate) fn description(self) -> &'static str {
        match self {
            Histogram::Operation(Side::Server) => "MCP request or notification duration as observed on the receiver",
            Histogram::Operation(Side::Client) => "MCP request or notification duration as observed on the sender",
            Histogram::Session(Side::Server) => "The duration of the MCP session as observed on the MCP server",
            Histogram::Session(Side::Client) => "The duration of the MCP session as observed on the MCP client",
        }
    }

    /// The Prometheus name (without the `_seconds` the unit adds): dots become underscores.
    pub(crate) fn prometheus_name(self) -> &'static str {
        match self {
            Histogram::Operation(Side::Server) => "mcp_server_operation_duration",
            Histogram::Operation(Side::Client) => "mcp_client_operation_duration",
            Histogram::Session(Side::Server) => "mcp_server_session_duration",
            Histogram::Session(Side::Client) => "mcp_client_session_duration",
        }
    }
}

/// The labels of one series, borrowed from a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Labels<'a> {
    pub(crate) histogram: Histogram,
    /// `mcp.method.name` (operations only).
    pub(crate) method: Option<&'static str>,
    /// `gen_ai.tool.name` or `gen_ai.prompt.name` (after `method`'s target kind).
    pub(crate) target: Option<&'a str>,
    /// `mcp.protocol.version`.
    pub(crate) version: Option<&'static str>,
    /// `network.transport`.
    pub(crate) transport: Transport,
    /// `error.type` (and `rpc.response.status_code` for a JSON-RPC error).
    pub(crate) failure: Option<Failure>,
}

impl Labels<'_> {
    /// The labels as the conventions name them, for OTLP and `/metrics` alike.
    pub(crate) fn pairs(&self, mut each: impl FnMut(&'static str, &str)) {
        if let Some(method) = self.method {
            each(semconv::MCP_METHOD_NAME, method);
            if let (Some(kind), Some(target)) = (semconv::target_kind(method), self.target) {
                each(kind, target);
                if kind == semconv::GEN_AI_TOOL_NAME {
                    each(semconv::GEN_AI_OPERATION_NAME, semconv::EXECUTE_TOOL);
                }
            }
        }
        if let Some(version) = self.version {
            each(semconv::MCP_PROTOCOL_VERSION, version);
        }
        each(semconv::NETWORK_TRANSPORT, self.transport.as_str());
        if let Some(failure) = self.failure {
            each(semconv::ERROR_TYPE, &failure.error_type());
            if let Some(code) = failure.code() {
                each(semconv::RPC_RESPONSE_STATUS_CODE, &code.to_string());
            }
        }
    }
}

/// The version's label: one of the revisions (anything else is left out).
pub(crate) fn version_label(version: Option<&str>) -> Option<&'static str> {
    let version = version?;
    ProtocolVersion::ALL.into_iter().map(ProtocolVersion::as_str).find(|known| *known == version)
}

/// The counts of one series: a count per bucket (the last is `+Inf`) and the sum.
#[derive(Debug)]
pub(crate) struct Counts {
    buckets: [AtomicU64; DURATION_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

/// A reading of one series.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    /// The count of each bucket (not cumulative; the last is `+Inf`).
    pub(crate) buckets: [u64; DURATION_BUCKETS.len() + 1],
    /// The sum of the values, seconds.
    pub(crate) sum: f64,
}

impl Reading {
    pub(crate) fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

impl Counts {
    fn new() -> Counts {
        Counts { buckets: std::array::from_fn(|_| AtomicU64::new(0)), sum_nanos: AtomicU64::new(0) }
    }

    fn record(&self, seconds: f64) {
        let seconds = seconds.max(0.0);
        let bucket = DURATION_BUCKETS.iter().position(|bound| seconds <= *bound).unwrap_or(DURATION_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add((seconds * 1e9) as u64, Ordering::Relaxed);
    }

    fn read(&self) -> Reading {
        Reading {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            sum: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// One series: its labels (owned) and counts.
#[derive(Debug)]
struct Series {
    histogram: Histogram,
    method: Option<&'static str>,
    target: Option<Box<str>>,
    version: Option<&'static str>,
    transport: Transport,
    failure: Option<Failure>,
    counts: Counts,
}

impl Series {
    fn labels(&self) -> Labels<'_> {
        Labels {
            histogram: self.histogram,
            method: self.method,
            target: self.target.as_deref(),
            version: self.version,
            transport: self.transport,
            failure: self.failure,
        }
    }
}

/// FNV-1a over what tells series apart, cheaply: the fixed labels (method, version: a few
/// dozen values) by their length and first and last bytes, the target's every byte, the rest as
/// numbers. Equal labels hash equal; the rare collision is told apart by comparing them.
fn hash(labels: &Labels<'_>) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |value: u64| hash = (hash ^ value).wrapping_mul(PRIME);
    let sketch = |text: &str| {
        let bytes = text.as_bytes();
        let edge = |i: Option<&u8>| u64::from(i.copied().unwrap_or_default());
        (bytes.len() as u64) << 16 | edge(bytes.first()) << 8 | edge(bytes.last())
    };
    mix(match labels.histogram {
        Histogram::Operation(Side::Server) => 1,
        Histogram::Operation(Side::Client) => 2,
        Histogram::Session(Side::Server) => 3,
        Histogram::Session(Side::Client) => 4,
    });
    mix(labels.method.map_or(0, sketch));
    mix(labels.version.map_or(0, sketch));
    mix(labels.transport as u64);
    mix(match labels.failure {
        None => 0,
        Some(Failure::Code(code)) => code as u64,
        Some(Failure::ToolError) => 1,
        Some(Failure::Other) => 2,
    });
    for byte in labels.target.unwrap_or_default().as_bytes() {
        mix(u64::from(*byte));
    }
    hash
}

/// A map keyed by a hash already taken: its key is its own hash.
#[derive(Debug, Default, Clone, Copy)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type ByHash = HashMap<u64, Vec<Arc<Series>>, std::hash::BuildHasherDefault<Prehashed>>;

/// Every series of the process.
#[derive(Debug)]
pub(crate) struct Durations {
    series: RwLock<ByHash>,
    /// When the store began: the start of every cumulative series.
    pub(crate) started: SystemTime,
}

/// The process's store.
pub(crate) fn durations() -> &'static Durations {
    static DURATIONS: OnceLock<Durations> = OnceLock::new();
    DURATIONS.get_or_init(Durations::new)
}

impl Durations {
    /// An empty store (the process has one, [`durations`]).
    pub(crate) fn new() -> Durations {
        Durations { series: RwLock::default(), started: SystemTime::now() }
    }

    /// Records `seconds` in the series `labels` name.
    pub(crate) fn record(&self, labels: &Labels<'_>, seconds: f64) {
        let key = hash(labels);
        {
            let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(found) = series.get(&key).and_then(|list| list.iter().find(|s| s.labels() == *labels)) {
                found.counts.record(seconds);
                return;
            }
        }
        let mut series = self.series.write().unwrap_or_else(PoisonError::into_inner);
        let list = series.entry(key).or_default();
        if let Some(found) = list.iter().find(|s| s.labels() == *labels) {
            found.counts.record(seconds);
            return;
        }
        let made = Series {
            histogram: labels.histogram,
            method: labels.method,
            target: labels.target.map(Box::from),
            version: labels.version,
            transport: labels.transport,
            failure: labels.failure,
            counts: Counts::new(),
        };
        made.counts.record(seconds);
        list.push(Arc::new(made));
    }

    /// Calls `each` with every series of `histogram` and its reading, in a stable order.
    pub(crate) fn each(&self, histogram: Histogram, mut each: impl FnMut(&Labels<'_>, &Reading)) {
        let mut found: Vec<Arc<Series>> = {
            let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
            series.values().flatten().filter(|s| s.histogram == histogram).cloned().collect()
        };
        found.sort_by_cached_key(|s| format!("{:?}", s.labels()));
        for series in found {
            each(&series.labels(), &series.counts.read());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(target: Option<&str>, failure: Option<Failure>) -> Labels<'_> {
        Labels {
            histogram: Histogram::Operation(Side::Server),
            method: Some("tools/call"),
            target,
            version: Some("2026-07-28"),
            transport: Transport::Tcp,
            failure,
        }
    }

    #[test]
    fn recordings_land_in_their_series_and_buckets() {
        let store = Durations::new();
        store.record(&labels(Some("echo"), None), 0.004);
        store.record(&labels(Some("echo"), None), 0.3);
        store.record(&labels(Some("echo"), Some(Failure::ToolError)), 500.0);
        store.record(&labels(Some("time"), None), 0.01);
        let mut seen = Vec::new();
        store.each(Histogram::Operation(Side::Server), |labels, reading| {
            seen.push((labels.target.map(str::to_owned), labels.failure, reading.clone()));
        });
        assert_eq!(seen.len(), 3);
        let echo = seen.iter().find(|(t, f, _)| t.as_deref() == Some("echo") && f.is_none()).unwrap();
        assert_eq!(echo.2.count(), 2);
        assert_eq!(echo.2.buckets[0], 1, "0.004 s is under the first bound");
        assert_eq!(echo.2.buckets[5], 1, "0.3 s is under 0.5 s");
        assert!((echo.2.sum - 0.304).abs() < 1e-6);
        let failed = seen.iter().find(|(_, f, _)| f.is_some()).unwrap();
        assert_eq!(failed.2.buckets[DURATION_BUCKETS.len()], 1, "past the last bound: +Inf");
        let time = seen.iter().find(|(t, _, _)| t.as_deref() == Some("time")).unwrap();
        assert_eq!(time.2.buckets[0], 1, "a bound is inclusive");
        let mut none = 0;
        store.each(Histogram::Session(Side::Client), |_, _| none += 1);
        assert_eq!(none, 0);
    }

    #[test]
    fn labels_follow_the_conventions() {
        let mut pairs = Vec::new();
        labels(Some("echo"), Some(Failure::Code(-32602))).pairs(|k, v| pairs.push(format!("{k}={v}")));
        assert_eq!(
            pairs,
            [
                "mcp.method.name=tools/call",
                "gen_ai.tool.name=echo",
                "gen_ai.operation.name=execute_tool",
                "mcp.protocol.version=2026-07-28",
                "network.transport=tcp",
                "error.type=-32602",
                "rpc.response.status_code=-32602",
            ]
        );
        assert_eq!(version_label(Some("2025-06-18")), Some("2025-06-18"));
        assert_eq!(version_label(Some("1999-01-01")), None);
    }
}
