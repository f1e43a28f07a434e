//! What became of the spans handed to the exporter: exported, dropped because the queue was
//! full (a slow or dead collector), or lost in an export that failed. Plain atomics, read by
//! `/metrics` as `mcpd_otlp_spans_total{outcome}`.

use std::sync::atomic::{AtomicU64, Ordering};

/// The running counts (one per outcome).
#[derive(Debug, Default)]
pub(crate) struct SpanCounters {
    pub(crate) exported: AtomicU64,
    pub(crate) queue_full: AtomicU64,
    pub(crate) export_failed: AtomicU64,
}

/// A reading of the span counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanCounts {
    /// Spans the collector accepted (`outcome="exported"`).
    pub exported: u64,
    /// Spans dropped because the export queue was full (`outcome="queue_full"`).
    pub queue_full: u64,
    /// Spans in export requests that failed: no connection, a time-out, a non-2xx answer
    /// (`outcome="export_failed"`).
    pub export_failed: u64,
}

impl SpanCounts {
    /// The outcome label and count of each series, in a fixed order.
    pub fn series(&self) -> [(&'static str, u64); 3] {
        [("exported", self.exported), ("queue_full", self.queue_full), ("export_failed", self.export_failed)]
    }
}

impl SpanCounters {
    pub(crate) fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> SpanCounts {
        SpanCounts {
            exported: self.exported.load(Ordering::Relaxed),
            queue_full: self.queue_full.load(Ordering::Relaxed),
            export_failed: self.export_failed.load(Ordering::Relaxed),
        }
    }
}
