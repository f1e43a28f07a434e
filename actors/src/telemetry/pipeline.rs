//! [`Telemetry`]: the tracer (with the configured sampler and resource), the meters and the
//! telemetry thread, built from a [`TelemetryConfig`], and their bounded shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::telemetry::semconv::SCOPE_NAME;
use mcpd::telemetry::{Protocol, SamplerConfig, TelemetryConfig};
use opentelemetry::trace::TracerProvider;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter};
use opentelemetry_sdk::Resource;

use super::counts::{SpanCounters, SpanCounts};
use super::encode::SpanEncoder;
use super::ids::ChosenIds;
use super::metrics_body::MetricsEncoder;
use super::queue::{QueueProcessor, SpanQueue};
use super::thread::{MetricsExport, SpanExport, TelemetryThread, ThreadSetup};
use super::transport::Bridge;

/// Why telemetry could not start.
#[derive(Debug, derive_more::Display, derive_more::Error)]
pub enum TelemetryError {
    /// The OTLP crate refused the exporter's configuration.
    #[display("telemetry: the OTLP exporter cannot be built: {_0}")]
    Exporter(#[error(not(source))] String),
    /// The telemetry thread could not be started.
    #[display("telemetry: the export thread cannot be started: {_0}")]
    Thread(std::io::Error),
    /// Telemetry was already installed in this process.
    #[display("telemetry: already started")]
    AlreadyStarted,
}

/// A running telemetry pipeline: spans and metrics made here are exported by its thread.
#[derive(Debug)]
pub struct Telemetry {
    pub(crate) tracer: Option<SdkTracer>,
    /// The tracer's sampler, asked before a span is built (see `ids`).
    pub(crate) sampler: Sampler,
    tracer_provider: Option<SdkTracerProvider>,
    counters: Arc<SpanCounters>,
    thread: TelemetryThread,
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(SCOPE_NAME).with_version(env!("CARGO_PKG_VERSION")).build()
}

fn sampler(config: SamplerConfig) -> Sampler {
    let parent_based = |root: Sampler| Sampler::ParentBased(Box::new(root));
    match config {
        SamplerConfig::AlwaysOn => Sampler::AlwaysOn,
        SamplerConfig::AlwaysOff => Sampler::AlwaysOff,
        SamplerConfig::TraceIdRatio(ratio) => Sampler::TraceIdRatioBased(ratio),
        SamplerConfig::ParentBasedAlwaysOn => parent_based(Sampler::AlwaysOn),
        SamplerConfig::ParentBasedAlwaysOff => parent_based(Sampler::AlwaysOff),
        SamplerConfig::ParentBasedTraceIdRatio(ratio) => parent_based(Sampler::TraceIdRatioBased(ratio)),
    }
}

fn otlp_protocol(protocol: Protocol) -> opentelemetry_otlp::Protocol {
    match protocol {
        Protocol::Protobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::Json => opentelemetry_otlp::Protocol::HttpJson,
    }
}

impl Telemetry {
    /// Builds the pipeline and starts its thread. Must not be called inside an async runtime's
    /// thread-blocking section (it only spawns a thread; nothing here waits).
    pub fn start(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
        let resource = Resource::builder_empty()
            .with_attributes(config.resource.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())))
            .build();
        let counters = Arc::new(SpanCounters::default());
        let (bridge, jobs) = Bridge::new();
        let headers: HashMap<String, String> = config.headers.iter().cloned().collect();
        let exporter_error = |e: opentelemetry_otlp::ExporterBuildError| TelemetryError::Exporter(e.to_string());

        let mut spans = None;
        let (mut tracer, mut tracer_provider) = (None, None);
        if let Some(url) = &config.traces_endpoint {
            let queue = Arc::new(SpanQueue::new(config.max_queue_size, config.max_export_batch_size, counters.clone()));
            let provider = SdkTracerProvider::builder()
                .with_span_processor(QueueProcessor(queue.clone()))
                .with_id_generator(ChosenIds)
                .with_sampler(sampler(config.sampler))
                .with_resource(resource.clone())
                .build();
            tracer = Some(provider.tracer_with_scope(scope()));
            tracer_provider = Some(provider);
            let json = match config.protocol {
                Protocol::Protobuf => None,
                Protocol::Json => {
                    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
                        .with_http()
                        .with_http_client(bridge.clone())
                        .with_endpoint(url.clone())
                        .with_protocol(otlp_protocol(config.protocol))
                        .with_headers(headers.clone())
                        .with_timeout(config.timeout)
                        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                        .build()
                        .map_err(exporter_error)?;
                    exporter.set_resource(&resource);
                    Some(exporter)
                }
            };
            spans = Some(SpanExport {
                queue,
                url: url.clone(),
                protocol: config.protocol,
                encoder: SpanEncoder::new(&resource),
                json,
                schedule_delay: config.schedule_delay,
                max_batch: config.max_export_batch_size,
            });
        }

        let metrics = config.metrics_endpoint.as_ref().map(|url| MetricsExport {
            url: url.clone(),
            protocol: config.protocol,
            encoder: MetricsEncoder::new(&resource),
            interval: config.metric_export_interval,
        });

        let thread = TelemetryThread::spawn(ThreadSetup {
            spans,
            metrics,
            jobs,
            timeout: config.timeout,
            headers: config.headers.clone(),
            counters: counters.clone(),
        })
        .map_err(TelemetryError::Thread)?;
        Ok(Telemetry { tracer, sampler: sampler(config.sampler), tracer_provider, counters, thread })
    }

    /// What became of the spans so far.
    pub fn span_counts(&self) -> SpanCounts {
        self.counters.read()
    }

    /// Stops making spans, exports what is queued and the last metrics, and ends the thread,
    /// all within `limit` whatever the collector does. `true`: everything was handed to the
    /// collector (or failed) in time; `false`: the limit passed first, or telemetry was already
    /// shut down.
    pub fn shutdown(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        if let Some(provider) = &self.tracer_provider {
            // Our processor only wakes the thread; later spans are not recorded.
            let _ = provider.shutdown();
        }
        self.thread.stop(deadline)
    }
}
