//! The collector of the telemetry tests: `otlp_receiver.py`, which decodes what it receives with
//! the official OTLP protobuf definitions (PyPI `opentelemetry-proto`), and readers of what it
//! wrote — spans, their attributes and links, histogram data points.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::eventually::eventually_blocking;
use super::interop_script;
use super::python::python_with;

const OTLP_PROTO: &str = "import opentelemetry.proto.collector.trace.v1.trace_service_pb2";

/// How long a test waits for what it expects to reach the collector.
pub(crate) const ARRIVAL: Duration = Duration::from_secs(20);

/// The receiver process: its port, and the JSON lines it wrote.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// Starts a receiver (`options`: `--status N`, `--delay S`); `None` when Python cannot be
    /// provisioned and `MCPD_SKIP_INTEROP=1`.
    pub(crate) fn start(options: &[&str]) -> Option<Receiver> {
        let python = python_with(OTLP_PROTO)?;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("received.jsonl");
        let mut child = Command::new(python)
            .arg(interop_script("otlp_receiver.py"))
            .arg("--out")
            .arg(&out)
            .args(options)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()).expect("the receiver's port");
        Some(Receiver { child, port, out, _dir: dir })
    }

    /// The base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far.
    pub(crate) fn received(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Every span received so far, each with its resource's `service.name` as `"service"`.
    pub(crate) fn spans(&self) -> Vec<Value> {
        let mut spans = Vec::new();
        for record in self.received().iter().filter(|r| r["path"] == "/v1/traces") {
            assert_eq!(record.get("error"), None, "the receiver could not decode: {record}");
            for resource in record["request"]["resource_spans"].as_array().unwrap() {
                let service = attributes(&resource["resource"]).get("service.name").cloned().unwrap_or_default();
                for scope in resource["scope_spans"].as_array().unwrap() {
                    for span in scope["spans"].as_array().unwrap() {
                        let mut span = span.clone();
                        span["service"] = Value::from(service.clone());
                        spans.push(span);
                    }
                }
            }
        }
        spans
    }

    /// The data points of metric `name` received so far (every export, in order).
    pub(crate) fn points(&self, name: &str) -> Vec<Value> {
        self.received()
            .iter()
            .filter(|r| r["path"] == "/v1/metrics")
            .flat_map(|r| r["request"]["resource_metrics"].as_array().cloned().unwrap_or_default())
            .flat_map(|r| r["scope_metrics"].as_array().cloned().unwrap_or_default())
            .flat_map(|s| s["metrics"].as_array().cloned().unwrap_or_default())
            .filter(|m| m["name"] == name)
            .flat_map(|m| m["histogram"]["data_points"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// Waits until a span satisfies `found` (its name, say), and returns it.
    pub(crate) fn wait_span(&self, what: &str, found: impl Fn(&Value) -> bool) -> Value {
        eventually_blocking(what, ARRIVAL, || {
            let spans = self.spans();
            spans
                .iter()
                .find(|s| found(s))
                .cloned()
                .ok_or_else(|| format!("{} spans: {:#?}", spans.len(), names(&spans)))
        })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each span's service, kind and name, for messages.
pub(crate) fn names(spans: &[Value]) -> Vec<String> {
    spans.iter().map(|s| format!("{} {} {}", s["service"], s["kind"], s["name"])).collect()
}

/// The attributes of a decoded span (or resource, or data point) as key → value text.
pub(crate) fn attributes(item: &Value) -> HashMap<String, String> {
    item["attributes"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|kv| {
                    let value = kv["value"].as_object().and_then(|v| v.values().next()).cloned().unwrap_or(Value::Null);
                    let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                    (kv["key"].as_str().unwrap().to_owned(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The span ids a span links to.
pub(crate) fn links(span: &Value) -> Vec<String> {
    span["links"]
        .as_array()
        .map(|links| links.iter().filter_map(|l| l["span_id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Sets the `OTEL_*` variables that point `cmd` at `receiver`, named `service`, exporting spans
/// every 100 ms and metrics every 200 ms.
pub(crate) fn export_to(cmd: &mut Command, receiver: &Receiver, service: &str) {
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", service)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "200");
}

/// A span id of 16 hex digits, a trace id of 32, for a caller's context.
pub(crate) fn caller_context(seed: u64) -> (String, String) {
    (format!("{:016x}{:016x}", seed, seed.rotate_left(17) | 1), format!("{:016x}", seed.rotate_left(29) | 1))
}
