//! `/metrics` (the runtime's Prometheus registry, `crate::metrics`) shows telemetry's own:
//! the MCP duration histograms in Prometheus names and the fate of the spans.

use mcpd::telemetry::semconv::DURATION_BUCKETS;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::durations::{durations, Histogram};
use super::global::span_counts;

/// `/metrics`: the four histograms in Prometheus names (`mcp_server_operation_duration_seconds`,
/// labels with underscores for dots), and `mcpd_otlp_spans_total{outcome}` when telemetry is on.
#[derive(Debug)]
pub struct DurationsCollector;

impl Collector for DurationsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let store = durations();
        for histogram in Histogram::ALL {
            let mut series = Vec::new();
            store.each(histogram, |labels, reading| {
                let mut pairs: Vec<(String, String)> = Vec::new();
                labels.pairs(|key, value| pairs.push((key.replace('.', "_"), value.to_owned())));
                series.push((pairs, reading.clone()));
            });
            if series.is_empty() {
                continue;
            }
            let mut family = encoder.encode_descriptor(
                histogram.prometheus_name(),
                histogram.description(),
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?;
            for (pairs, reading) in series {
                let buckets: Vec<(f64, u64)> = DURATION_BUCKETS
                    .iter()
                    .copied()
                    .chain([f64::INFINITY])
                    .zip(reading.buckets.iter().copied())
                    .collect();
                let labels: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                family.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                    reading.sum,
                    reading.count(),
                    &buckets,
                    None,
                )?;
            }
        }
        if let Some(counts) = span_counts() {
            let mut family = encoder.encode_descriptor(
                "mcpd_otlp_spans",
                "Finished spans by what became of them (exported, dropped: queue_full, lost: export_failed)",
                None,
                MetricType::Counter,
            )?;
            for (outcome, count) in counts.series() {
                ConstCounter::new(count).encode(family.encode_family(&[("outcome", outcome)])?)?;
            }
        }
        Ok(())
    }
}
