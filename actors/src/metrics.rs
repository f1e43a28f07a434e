//! Prometheus metrics, served at `GET /metrics` in the text exposition format (OpenMetrics 1.0
//! text, which Prometheus scrapes natively).
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `mcpd_actors_live` | `kind` | live actors per kind (from `started()`/`stopped()`) |
//! | `mcpd_actor_messages_total` | `kind` | messages handled per actor kind |
//! | `mcpd_requests_total` | `method`, `outcome` | JSON-RPC requests (`ok`, `error`, `rejected`) |
//! | `mcpd_request_duration_seconds` | – | request latency histogram |
//! | `mcpd_tool_calls_total` | `tool`, `outcome` | tool calls (`ok`, `is_error`, `error`) |
//! | `mcpd_sessions_opened_total` | – | sessions opened |
//! | `mcpd_sessions_closed_total` | `reason` | sessions ended (`deleted`, `expired`, `shutdown`) |
//! | `mcpd_sessions_expired_total` | – | sessions ended by idle expiry |
//! | `mcpd_sessions_live` | – | sessions in the registry |
//! | `mcpd_panics_total` | `site` | panics in this process, each a bug contained to its request or task (`http`, `request`, `stdio`, `client`, `gateway`, `other`) |
//! | `mcpd_connections_open` | – | open HTTP connections |
//! | `mcpd_body_timeouts_total` | `reason` | requests answered 408: `timeout` (no body within the body timeout), `slow_bodies` (too many others waiting for theirs) |
//! | `mcpd_sse_streams_cut_total` | – | SSE streams cut off because their reader did not keep up |
//! | `mcpd_session_refusals_total` | – | uses of a session by another identity than its owner's (answered as unknown) |
//! | `mcpd_notifications_dropped_total` | – | notifications dropped because their reader did not keep up |
//! | `mcpd_requests_over_limit_total` | – | requests refused: their session or stdio connection had too many running |
//! | `mcpd_auth_outcomes_total` | `reason` | with OAuth on: each request's authentication (`ok`, `api_key`, `missing`, `malformed`, `disallowed_alg`, `bad_signature`, `unknown_kid`, `expired`, `not_yet_valid`, `wrong_issuer`, `wrong_audience`, `insufficient_scope`, `introspection_inactive`, `issuer_unavailable`) |
//! | `mcpd_tasks` | `status` | tasks held in the task store (until they expire), by status |
//! | `mcpd_tasks_created_total` | – | tasks created |
//! | `mcpd_tasks_expired_total` | – | tasks removed when their time to live ended |
//! | `mcpd_client_calls_total` | `client`, `outcome` | with `--access`: `tools/call` per access-file client (`-`: every other caller) by outcome (`ok`, `error`, `denied`, `limited`) |
//! | `mcpd_remote_call_seconds` | `server` | with a gateway: time of each call to a remote, per remote (histogram, 0.5 ms … 30 s) |
//! | `mcpd_remote_errors_total` | `server`, `kind` | with a gateway: failed remote calls by kind (`timeout`, `connect`, `http`, `protocol`, `rpc`, `auth`, `tool`, `cancelled`, `other`) |
//! | `mcp_server_operation_duration_seconds`, `mcp_client_operation_duration_seconds` | `mcp_method_name`, `gen_ai_tool_name`, `gen_ai_prompt_name`, `gen_ai_operation_name`, `mcp_protocol_version`, `network_transport`, `error_type`, `rpc_response_status_code` | the MCP conventions' operation durations (histograms, 0.01 s … 300 s; the same as exported over OTLP) |
//! | `mcp_server_session_duration_seconds`, `mcp_client_session_duration_seconds` | `mcp_protocol_version`, `network_transport`, `error_type` | the conventions' session durations |
//! | `mcpd_otlp_spans_total` | `outcome` | with telemetry on: finished spans `exported`, dropped (`queue_full`), lost (`export_failed`) |
//!
//! Label values are bounded: methods outside the protocol's set are counted as `other`, and
//! tools are labelled only when the catalog has them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use mcpd::server::{Execution, Method, ToolOutcome};

use crate::counts::{ActorCounts, ActorKind, EdgeCounters};
use crate::session::end::EndReason;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with a result.
    Ok,
    /// Answered with a JSON-RPC error.
    Error,
    /// Refused before execution (validation, headers, session).
    Rejected,
}

impl Outcome {
    /// Its column in [`Metrics`]' kept request counters.
    const fn slot(self) -> usize {
        match self {
            Outcome::Ok => 0,
            Outcome::Error => 1,
            Outcome::Rejected => 2,
        }
    }

    const fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Rejected => "rejected",
        }
    }
}

type Labels2 = [(&'static str, &'static str); 2];
type ToolLabels = [(&'static str, String); 2];

/// One request counter per method (the known ones, then [`Method::Unknown`]) and [`Outcome`].
type RequestCounters = [[OnceLock<Counter>; 3]; Method::KNOWN.len() + 1];

/// The `mcpd_tool_calls_total` outcome label and kept-counter slot of a tool call's outcome.
const fn tool_outcome(outcome: ToolOutcome) -> (&'static str, usize) {
    match outcome {
        ToolOutcome::Ok => ("ok", 0),
        ToolOutcome::IsError => ("is_error", 1),
        ToolOutcome::Error => ("error", 2),
    }
}

/// One extra gauge sample: metric name, help, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeSample {
    /// The metric's name.
    pub name: &'static str,
    /// Its help text.
    pub help: &'static str,
    /// Its labels.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: i64,
}

/// A provider of extra gauges, read at every scrape.
pub type GaugeHook = Arc<dyn Fn() -> Vec<GaugeSample> + Send + Sync>;

struct ExtraGauges(Arc<RwLock<Option<GaugeHook>>>);

impl std::fmt::Debug for ExtraGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExtraGauges")
    }
}

impl Collector for ExtraGauges {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let hook = self.0.read().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(hook) = hook else { return Ok(()) };
        let samples = hook();
        let mut names: Vec<(&'static str, &'static str)> = Vec::new();
        for sample in &samples {
            if !names.iter().any(|(n, _)| *n == sample.name) {
                names.push((sample.name, sample.help));
            }
        }
        for (name, help) in names {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for sample in samples.iter().filter(|s| s.name == name) {
                ConstGauge::new(sample.value).encode(family.encode_family(&sample.labels)?)?;
            }
        }
        Ok(())
    }
}

/// A reader of the task store's counts, at every scrape.
pub(crate) type TaskCountsHook = Arc<dyn Fn() -> mcpd::tasks::TaskCounts + Send + Sync>;

struct TaskCollector(Arc<RwLock<Option<TaskCountsHook>>>);

/// Where the task counts reader is set.
struct TaskHookCell(Arc<RwLock<Option<TaskCountsHook>>>);

impl std::fmt::Debug for TaskHookCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskHookCell")
    }
}

impl std::fmt::Debug for TaskCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskCollector")
    }
}

impl Collector for TaskCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let hook = self.0.read().unwrap_or_else(PoisonError::into_inner).clone();
        let Some(hook) = hook else { return Ok(()) };
        let counts = hook();
        let mut family = encoder.encode_descriptor(
            "mcpd_tasks",
            "Tasks held (until they expire), by status",
            None,
            MetricType::Gauge,
        )?;
        for status in mcpd::tasks::TaskStatus::ALL {
            let gauge = ConstGauge::new(i64::try_from(counts.with_status(status)).unwrap_or(i64::MAX));
            gauge.encode(family.encode_family(&[("status", status.as_str())])?)?;
        }
        let created = encoder.encode_descriptor("mcpd_tasks_created", "Tasks created", None, MetricType::Counter)?;
        ConstCounter::new(counts.created).encode(created)?;
        let expired = encoder.encode_descriptor(
            "mcpd_tasks_expired",
            "Tasks removed when their time to live ended",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(counts.expired).encode(expired)
    }
}

/// The process's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels2, Counter>,
    latency: Histogram,
    tool_calls: Family<ToolLabels, Counter>,
    sessions_opened: Counter,
    sessions_closed: Family<[(&'static str, &'static str); 1], Counter>,
    sessions_expired: Counter,
    edge: Arc<EdgeCounters>,
    extra: ExtraGauges,
    /// Each `requests` counter, taken from the family on its first use and kept: recording a
    /// request is then an index and an atomic add, not a hash of the label set under the
    /// family's lock (the family still exposes the counter: they share one atomic).
    request_counters: Box<RequestCounters>,
    /// The `tool_calls` counters by tool name and outcome slot, kept likewise (so no label
    /// strings are allocated per call).
    tool_counters: RwLock<HashMap<Box<str>, [Option<Counter>; 3]>>,
    tasks: TaskHookCell,
    /// Collectors added at run time (the access file's client counts, the gateway's remotes).
    more: Arc<RwLock<Vec<Box<dyn MoreMetrics>>>>,
    /// With an access file: the `tools/call` counts of callers that are no client of it.
    anonymous_calls: OnceLock<Arc<mcpd::auth::access::CallCounts>>,
}

/// Metrics added after the registry was built ([`Metrics::add_collector`]), encoded at every
/// scrape.
pub trait MoreMetrics: std::fmt::Debug + Send + Sync + 'static {
    /// Encodes its metric families.
    ///
    /// # Errors
    /// The encoder's.
    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error>;
}

/// The collectors added after the registry was built.
#[derive(Debug)]
struct MoreCollectors(Arc<RwLock<Vec<Box<dyn MoreMetrics>>>>);

impl Collector for MoreCollectors {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let more = self.0.read().unwrap_or_else(PoisonError::into_inner);
        for collector in more.iter() {
            collector.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct ActorCollector {
    counts: Arc<ActorCounts>,
}

impl Collector for ActorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        {
            let mut family =
                encoder.encode_descriptor("mcpd_actors_live", "Live actors per kind", None, MetricType::Gauge)?;
            for kind in ActorKind::ALL {
                let labels = [("kind", kind.label())];
                ConstGauge::new(self.counts.live(kind)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "mcpd_actor_messages",
            "Messages handled per actor kind",
            None,
            MetricType::Counter,
        )?;
        for kind in ActorKind::ALL {
            let labels = [("kind", kind.label())];
            ConstCounter::new(self.counts.messages(kind)).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The process's panics, by site (counted by the panic hook, [`crate::panics`]).
#[derive(Debug)]
struct PanicCollector;

impl Collector for PanicCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "mcpd_panics",
            "Panics in this process (each a bug), by where they happened",
            None,
            MetricType::Counter,
        )?;
        for (site, count) in crate::panics::counts() {
            ConstCounter::new(count).encode(family.encode_family(&[("site", site)])?)?;
        }
        Ok(())
    }
}

#[derive(Debug)]
struct EdgeCollector(Arc<EdgeCounters>);

impl Collector for EdgeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        use std::sync::atomic::Ordering::Relaxed;
        let edge = &*self.0;
        let open =
            encoder.encode_descriptor("mcpd_connections_open", "Open HTTP connections", None, MetricType::Gauge)?;
        ConstGauge::new(edge.connections.load(Relaxed)).encode(open)?;
        {
            let mut family = encoder.encode_descriptor(
                "mcpd_body_timeouts",
                "Requests answered 408 because their body did not arrive in time",
                None,
                MetricType::Counter,
            )?;
            for (reason, counter) in [("timeout", &edge.body_timeouts), ("slow_bodies", &edge.slow_bodies_refused)] {
                ConstCounter::new(counter.load(Relaxed)).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        let counters = [
            ("mcpd_sse_streams_cut", "SSE streams cut off because their reader did not keep up", &edge.streams_cut),
            (
                "mcpd_notifications_dropped",
                "Notifications dropped because their reader did not keep up",
                &edge.notifications_dropped,
            ),
            (
                "mcpd_requests_over_limit",
                "Requests refused because their session or stdio connection had too many running",
                &edge.requests_over_limit,
            ),
            (
                "mcpd_session_refusals",
                "Uses of a session by another identity than the one that opened it (answered 404)",
                &edge.sessions_refused,
            ),
        ];
        for (name, help, counter) in counters {
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(counter.load(Relaxed)).encode(metric)?;
        }
        if edge.auth_on.load(Relaxed) {
            let mut family = encoder.encode_descriptor(
                "mcpd_auth_outcomes",
                "OAuth authentication outcomes by reason",
                None,
                MetricType::Counter,
            )?;
            for outcome in mcpd::auth::oauth::AuthOutcome::ALL {
                let count = edge.auth_outcomes[outcome.index()].load(Relaxed);
                ConstCounter::new(count).encode(family.encode_family(&[("reason", outcome.label())])?)?;
            }
        }
        Ok(())
    }
}

struct SessionGauge(Arc<dyn Fn() -> usize + Send + Sync>);

impl std::fmt::Debug for SessionGauge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionGauge")
    }
}

impl Collector for SessionGauge {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let gauge = ConstGauge::new((self.0)() as i64);
        let metric =
            encoder.encode_descriptor("mcpd_sessions_live", "Sessions in the registry", None, MetricType::Gauge)?;
        gauge.encode(metric)
    }
}

impl Metrics {
    /// Metrics over the given actor counts; `live_sessions` reads the registry's size.
    pub fn new(counts: Arc<ActorCounts>, live_sessions: Arc<dyn Fn() -> usize + Send + Sync>) -> Self {
        // Whatever serves requests with these metrics contains its panics and counts them here.
        crate::panics::install();
        let mut registry = Registry::default();
        let requests = Family::<Labels2, Counter>::default();
        registry.register("mcpd_requests", "JSON-RPC requests by method and outcome", requests.clone());
        let latency = Histogram::new(exponential_buckets(0.000_05, 2.5, 14));
        registry.register("mcpd_request_duration_seconds", "Time to answer a request", latency.clone());
        let tool_calls = Family::<ToolLabels, Counter>::default();
        registry.register("mcpd_tool_calls", "Tool calls by tool and outcome", tool_calls.clone());
        let sessions_opened = Counter::default();
        registry.register("mcpd_sessions_opened", "Sessions opened", sessions_opened.clone());
        let sessions_closed = Family::<[(&'static str, &'static str); 1], Counter>::default();
        registry.register("mcpd_sessions_closed", "Sessions ended, by reason", sessions_closed.clone());
        let sessions_expired = Counter::default();
        registry.register("mcpd_sessions_expired", "Sessions ended by idle expiry", sessions_expired.clone());
        registry.register_collector(Box::new(ActorCollector { counts }));
        registry.register_collector(Box::new(SessionGauge(live_sessions)));
        registry.register_collector(Box::new(PanicCollector));
        let edge = Arc::new(EdgeCounters::default());
        registry.register_collector(Box::new(EdgeCollector(edge.clone())));
        let extra = Arc::new(RwLock::new(None));
        registry.register_collector(Box::new(ExtraGauges(extra.clone())));
        let tasks = Arc::new(RwLock::new(None));
        registry.register_collector(Box::new(TaskCollector(tasks.clone())));
        let tasks = TaskHookCell(tasks);
        let extra = ExtraGauges(extra);
        let more = Arc::new(RwLock::new(Vec::new()));
        registry.register_collector(Box::new(MoreCollectors(more.clone())));
        registry.register_collector(Box::new(crate::telemetry::DurationsCollector));
        Metrics {
            registry,
            requests,
            latency,
            tool_calls,
            sessions_opened,
            sessions_closed,
            sessions_expired,
            edge,
            extra,
            tasks,
            request_counters: Box::default(),
            tool_counters: RwLock::default(),
            more,
            anonymous_calls: OnceLock::new(),
        }
    }

    /// Adds a collector read at every scrape (its metrics' names must be its own).
    pub fn add_collector(&self, collector: Box<dyn MoreMetrics>) {
        self.more.write().unwrap_or_else(PoisonError::into_inner).push(collector);
    }

    /// Counts the `tools/call` of callers that are no access-file client in `counts` (set once,
    /// with the access file).
    pub(crate) fn set_anonymous_calls(&self, counts: Arc<mcpd::auth::access::CallCounts>) {
        let _ = self.anonymous_calls.set(counts);
    }

    /// Records a `tools/call` for `mcpd_client_calls_total`: under its access-file client, or
    /// under `-` when there is an access file (else nothing).
    pub(crate) fn client_call(&self, access: Option<&mcpd::auth::scopes::Access>, execution: &Execution) {
        if execution.method != Method::ToolsCall {
            return;
        }
        let counts = match access.and_then(|a| a.client.as_ref()) {
            Some(client) => &client.calls,
            None => match self.anonymous_calls.get() {
                Some(counts) => counts,
                None => return,
            },
        };
        counts.add(call_outcome(access, execution));
    }

    /// Metrics with no session registry (stdio, tests).
    pub fn standalone(counts: Arc<ActorCounts>) -> Self {
        Metrics::new(counts, Arc::new(|| 0))
    }

    /// The edge's counters (connections, refusals, cut-offs, drops).
    pub(crate) fn edge(&self) -> &Arc<EdgeCounters> {
        &self.edge
    }

    /// Adds gauges read at every scrape (tool sets, remote servers' health).
    pub fn set_gauges(&self, hook: GaugeHook) {
        *self.extra.0.write().unwrap_or_else(PoisonError::into_inner) = Some(hook);
    }

    /// Reads the task store's counts at every scrape (`mcpd_tasks{status}`, created, expired).
    pub(crate) fn set_task_counts(&self, hook: TaskCountsHook) {
        *self.tasks.0.write().unwrap_or_else(PoisonError::into_inner) = Some(hook);
    }

    /// Records one request.
    pub fn request(&self, method: Method, outcome: Outcome, elapsed: Duration) {
        let family = || {
            let label = method.wire_name().unwrap_or("other");
            self.requests.get_or_create(&[("method", label), ("outcome", outcome.label())]).clone()
        };
        match self.request_counters.get(method as usize) {
            Some(row) => row[outcome.slot()].get_or_init(family).inc(),
            None => family().inc(),
        };
        self.latency.observe(elapsed.as_secs_f64());
    }

    /// Records a request refused before execution (validation, headers, session).
    pub fn rejected(&self, request: &mcpd::jsonrpc::Request) {
        self.request(Method::parse(&request.method), Outcome::Rejected, Duration::ZERO);
    }

    /// Records one executed request, and its tool call when it called a tool the catalog has.
    pub fn execution(&self, execution: &Execution, elapsed: Duration) {
        let outcome = if execution.outcome.is_ok() { Outcome::Ok } else { Outcome::Error };
        self.request(execution.method, outcome, elapsed);
        if let Some((tool, outcome)) = execution.tool_outcome() {
            self.tool_call(tool, outcome);
        }
    }

    /// Records one call of a tool the catalog has.
    fn tool_call(&self, tool: &str, outcome: ToolOutcome) {
        let (label, slot) = tool_outcome(outcome);
        let kept = self.tool_counters.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(counter) = kept.get(tool).and_then(|slots| slots[slot].as_ref()) {
            counter.inc();
            return;
        }
        drop(kept);
        let counter =
            self.tool_calls.get_or_create(&[("tool", tool.to_owned()), ("outcome", label.to_owned())]).clone();
        counter.inc();
        let mut kept = self.tool_counters.write().unwrap_or_else(PoisonError::into_inner);
        kept.entry(tool.into()).or_default()[slot] = Some(counter);
    }

    /// A session opened.
    pub fn session_opened(&self) {
        self.sessions_opened.inc();
    }

    /// A session ended.
    pub fn session_ended(&self, reason: EndReason) {
        let label = match reason {
            EndReason::Deleted => "deleted",
            EndReason::Expired => "expired",
            EndReason::Shutdown => "shutdown",
        };
        self.sessions_closed.get_or_create(&[("reason", label)]).inc();
        if reason == EndReason::Expired {
            self.sessions_expired.inc();
        }
    }

    /// The exposition in OpenMetrics 1.0 text (`application/openmetrics-text`).
    pub fn encode_openmetrics(&self) -> String {
        let mut out = String::with_capacity(4096);
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            log::error!("encoding metrics failed: {e}");
        }
        out
    }

    /// The exposition in the Prometheus text format 0.0.4 (`text/plain; version=0.0.4`).
    pub fn encode_prometheus(&self) -> String {
        openmetrics_to_prometheus(&self.encode_openmetrics())
    }
}

/// Rewrites OpenMetrics text as Prometheus 0.0.4 text: a counter family is named after its
/// samples (`x_total`) in `# HELP` and `# TYPE`, `# UNIT` lines go, and so does `# EOF`.
fn openmetrics_to_prometheus(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> =
        openmetrics.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter")).collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters.contains(name).then(|| format!("{prefix}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line).trim_end());
        out.push('\n');
    }
    out
}

/// The outcome of a `tools/call` for the per-client counts: `denied` when the tool exists but
/// the caller may not call it (it was answered as unknown).
fn call_outcome(
    access: Option<&mcpd::auth::scopes::Access>,
    execution: &mcpd::server::Execution,
) -> mcpd::auth::access::ClientCallOutcome {
    use mcpd::auth::access::ClientCallOutcome;
    let hidden = execution.tool.as_ref().zip(access).is_some_and(|(tool, access)| !access.may_call(&tool.name));
    match &execution.outcome {
        _ if hidden => ClientCallOutcome::Denied,
        Ok(reply) if !reply.is_tool_error() => ClientCallOutcome::Ok,
        _ => ClientCallOutcome::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_renamed_for_the_prometheus_format() {
        let om = "# HELP a_things Things.\n# TYPE a_things counter\na_things_total 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        assert_eq!(
            openmetrics_to_prometheus(om),
            "# HELP a_things_total Things.\n# TYPE a_things_total counter\na_things_total 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
    }

    #[test]
    fn kept_counters_are_the_families_own() {
        let metrics = Metrics::standalone(Arc::new(ActorCounts::default()));
        for _ in 0..3 {
            metrics.request(Method::ToolsCall, Outcome::Ok, Duration::ZERO);
            metrics.tool_call("echo", ToolOutcome::Ok);
        }
        metrics.request(Method::Unknown, Outcome::Rejected, Duration::ZERO);
        metrics.tool_call("echo", ToolOutcome::IsError);
        let text = metrics.encode_prometheus();
        assert!(text.contains("mcpd_requests_total{method=\"tools/call\",outcome=\"ok\"} 3"), "{text}");
        assert!(text.contains("mcpd_requests_total{method=\"other\",outcome=\"rejected\"} 1"), "{text}");
        assert!(text.contains("mcpd_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 3"), "{text}");
        assert!(text.contains("mcpd_tool_calls_total{tool=\"echo\",outcome=\"is_error\"} 1"), "{text}");
        assert!(!text.contains("outcome=\"error\""), "no series before its first use: {text}");
    }
}
