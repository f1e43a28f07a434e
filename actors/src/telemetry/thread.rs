//! The telemetry thread: a single-threaded actix runtime of its own that exports span batches
//! (every `OTEL_BSP_SCHEDULE_DELAY`, or as soon as a batch is full), the duration histograms
//! (every `OTEL_METRIC_EXPORT_INTERVAL`) and serves the HTTP requests of the OTLP crate's JSON
//! span exporter. Nothing here runs on the threads that serve MCP: a dead or slow collector
//! holds this thread only, while the bounded queue drops and counts what does not fit.
//!
//! Shutting down ([`TelemetryThread::stop`]) exports what is queued and the last metrics under a
//! deadline, then ends the thread; the caller waits no longer than the deadline whatever the
//! collector does.

use std::rc::Rc;
use std::sync::{mpsc as std_mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use mcpd::telemetry::Protocol;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tokio::sync::{mpsc, oneshot};

use super::counts::SpanCounters;
use super::durations::durations;
use super::encode::SpanEncoder;
use super::metrics_body::MetricsEncoder;
use super::queue::SpanQueue;
use super::transport::{serve_jobs, Collector, Job, JSON, PROTOBUF};

/// What the span side of the thread needs.
#[derive(Debug)]
pub(crate) struct SpanExport {
    pub(crate) queue: Arc<SpanQueue>,
    pub(crate) url: String,
    pub(crate) protocol: Protocol,
    pub(crate) encoder: SpanEncoder,
    /// The OTLP crate's exporter, for `http/json`.
    pub(crate) json: Option<opentelemetry_otlp::SpanExporter>,
    pub(crate) schedule_delay: Duration,
    pub(crate) max_batch: usize,
}

/// What the metrics side of the thread needs.
#[derive(Debug)]
pub(crate) struct MetricsExport {
    pub(crate) url: String,
    pub(crate) protocol: Protocol,
    pub(crate) encoder: MetricsEncoder,
    pub(crate) interval: Duration,
}

impl MetricsExport {
    /// Posts the histograms as they are now (nothing when none was recorded yet).
    async fn export(&self, collector: &Collector) {
        let now = SystemTime::now();
        let (body, content_type) = match self.protocol {
            Protocol::Protobuf => (self.encoder.protobuf(durations(), now), PROTOBUF),
            Protocol::Json => (self.encoder.json(durations(), now), JSON),
        };
        let Some(body) = body else { return };
        if let Err(why) = collector.post(&self.url, content_type, Bytes::from(body)).await {
            log::debug!("telemetry: metrics not exported to {}: {why}", self.url);
        }
    }
}

/// Everything the thread is started with.
#[derive(Debug)]
pub(crate) struct ThreadSetup {
    pub(crate) spans: Option<SpanExport>,
    pub(crate) metrics: Option<MetricsExport>,
    pub(crate) jobs: mpsc::Receiver<Job>,
    pub(crate) timeout: Duration,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) counters: Arc<SpanCounters>,
}

/// The order to stop: export by `deadline`.
#[derive(Debug)]
struct Stop {
    deadline: Instant,
}

/// The handle of the telemetry thread.
#[derive(Debug)]
pub(crate) struct TelemetryThread {
    stop: Mutex<Option<oneshot::Sender<Stop>>>,
    done: Mutex<Option<std_mpsc::Receiver<()>>>,
}

impl TelemetryThread {
    pub(crate) fn spawn(setup: ThreadSetup) -> std::io::Result<TelemetryThread> {
        let (stop, stop_rx) = oneshot::channel();
        let (done_tx, done) = std_mpsc::channel();
        std::thread::Builder::new().name("mcpd-telemetry".into()).spawn(move || {
            actix_rt::System::new().block_on(run(setup, stop_rx));
            let _ = done_tx.send(());
        })?;
        Ok(TelemetryThread { stop: Mutex::new(Some(stop)), done: Mutex::new(Some(done)) })
    }

    /// Tells the thread to export what is queued and the last metrics and end by `deadline`,
    /// and waits for it until `deadline`. `true`: the thread finished in time. A second call
    /// returns `false` at once.
    pub(crate) fn stop(&self, deadline: Instant) -> bool {
        let stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner).take();
        let done = self.done.lock().unwrap_or_else(PoisonError::into_inner).take();
        let (Some(stop), Some(done)) = (stop, done) else { return false };
        if stop.send(Stop { deadline }).is_err() {
            return false;
        }
        done.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_ok()
    }
}

async fn run(setup: ThreadSetup, mut stop: oneshot::Receiver<Stop>) {
    let collector = Rc::new(Collector::new(setup.timeout, setup.headers));
    actix_rt::spawn(serve_jobs(collector.clone(), setup.jobs));
    let metrics = setup.metrics.map(Rc::new);
    let periodic = metrics.clone().map(|metrics| {
        let collector = collector.clone();
        actix_rt::spawn(async move {
            let mut next = Instant::now() + metrics.interval;
            loop {
                actix_rt::time::sleep_until(next.into()).await;
                next = Instant::now() + metrics.interval;
                metrics.export(&collector).await;
            }
        })
    });
    let stopped = match setup.spans {
        Some(spans) => {
            let mut sender = Sender::new(spans, collector.clone(), setup.counters);
            sender.run(&mut stop).await
        }
        None => (&mut stop).await.ok(),
    };
    if let Some(periodic) = periodic {
        periodic.abort();
    }
    // Without an order (the handle was dropped), the thread ends after a short grace.
    let deadline = stopped.map_or_else(|| Instant::now() + Duration::from_secs(1), |stop| stop.deadline);
    if let Some(metrics) = metrics {
        let _ = tokio::time::timeout_at(deadline.into(), metrics.export(&collector)).await;
    }
}

/// Exports span batches from the queue.
struct Sender {
    export: SpanExport,
    collector: Rc<Collector>,
    counters: Arc<SpanCounters>,
    batch: Vec<SpanData>,
    failing: bool,
}

impl Sender {
    fn new(export: SpanExport, collector: Rc<Collector>, counters: Arc<SpanCounters>) -> Sender {
        let batch = Vec::with_capacity(export.max_batch);
        Sender { export, collector, counters, batch, failing: false }
    }

    /// Exports on the schedule, or when a batch is full, until the order to stop; then exports
    /// what is left by its deadline and returns the order.
    async fn run(&mut self, stop: &mut oneshot::Receiver<Stop>) -> Option<Stop> {
        loop {
            let order = tokio::select! {
                order = &mut *stop => Some(order.ok()),
                () = self.export.queue.wake.notified() => None,
                () = actix_rt::time::sleep(self.export.schedule_delay) => None,
            };
            match order {
                None => self.export_queued(None).await,
                Some(order) => {
                    let deadline =
                        order.as_ref().map_or_else(|| Instant::now() + Duration::from_secs(1), |o| o.deadline);
                    self.export_queued(Some(deadline)).await;
                    return order;
                }
            }
        }
    }

    async fn export_queued(&mut self, deadline: Option<Instant>) {
        self.export.queue.take_into(&mut self.batch);
        let mut start = 0;
        while start < self.batch.len() {
            let n = (self.batch.len() - start).min(self.export.max_batch);
            let sent = self.send(start, n);
            let outcome = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline.into(), sent)
                    .await
                    .unwrap_or_else(|_| Err("shutting down: no time left".into())),
                None => sent.await,
            };
            let counter = match &outcome {
                Ok(()) => &self.counters.exported,
                Err(_) => &self.counters.export_failed,
            };
            SpanCounters::add(counter, n);
            self.note(outcome);
            start += n;
        }
        self.batch.clear();
    }

    /// Sends `n` spans of the batch from `start`.
    fn send(&self, start: usize, n: usize) -> impl std::future::Future<Output = Result<(), String>> + '_ {
        let spans = &self.batch[start..start + n];
        let json = match (&self.export.protocol, &self.export.json) {
            (Protocol::Json, Some(exporter)) => Some(exporter.export(spans.to_vec())),
            _ => None,
        };
        let body = json.is_none().then(|| {
            let mut body = Vec::with_capacity(256 * n + 256);
            self.export.encoder.encode(spans, &mut body);
            Bytes::from(body)
        });
        async move {
            match (json, body) {
                (Some(export), _) => export.await.map_err(|e| e.to_string()),
                (None, Some(body)) => self.collector.post(&self.export.url, PROTOBUF, body).await,
                (None, None) => Ok(()),
            }
        }
    }

    fn note(&mut self, outcome: Result<(), String>) {
        match outcome {
            Err(why) if !self.failing => {
                self.failing = true;
                log::warn!("telemetry: spans not exported to {}: {why}", self.export.url);
            }
            Ok(()) if self.failing => {
                self.failing = false;
                log::info!("telemetry: spans exported to {} again", self.export.url);
            }
            _ => {}
        }
    }
}
