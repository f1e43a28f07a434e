//! The bounded queue between the threads that end spans and the telemetry thread that exports
//! them: the SDK's span processor pushes a finished span under a mutex (a full queue drops the
//! span and counts it, so a slow collector costs spans, never memory or the caller's time) and
//! wakes the telemetry thread only when a batch is full; the thread otherwise wakes on its
//! schedule.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use tokio::sync::Notify;

use super::counts::SpanCounters;

/// Finished spans waiting for export.
#[derive(Debug)]
pub(crate) struct SpanQueue {
    spans: Mutex<Vec<SpanData>>,
    capacity: usize,
    batch: usize,
    /// Wakes the telemetry thread (a full batch, a flush).
    pub(crate) wake: Notify,
    pub(crate) counters: Arc<SpanCounters>,
}

impl SpanQueue {
    pub(crate) fn new(capacity: usize, batch: usize, counters: Arc<SpanCounters>) -> SpanQueue {
        SpanQueue {
            spans: Mutex::new(Vec::with_capacity(capacity)),
            capacity,
            batch: batch.max(1),
            wake: Notify::new(),
            counters,
        }
    }

    /// Adds a finished span, or drops and counts it when the queue is full.
    pub(crate) fn push(&self, span: SpanData) {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if spans.len() >= self.capacity {
            drop(spans);
            SpanCounters::add(&self.counters.queue_full, 1);
            return;
        }
        spans.push(span);
        let full_batch = spans.len() == self.batch;
        drop(spans);
        if full_batch {
            self.wake.notify_one();
        }
    }

    /// Moves every waiting span into `out` (which must be empty), keeping `out`'s allocation for
    /// the queue: the two vectors trade places, so neither grows again.
    pub(crate) fn take_into(&self, out: &mut Vec<SpanData>) {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *spans, out);
    }

    /// The spans waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.spans.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// The SDK's side of the queue: `on_end` pushes; flushing and shutting down are the telemetry
/// thread's work (`Telemetry::shutdown`), so nothing here blocks.
#[derive(Debug)]
pub(crate) struct QueueProcessor(pub(crate) Arc<SpanQueue>);

impl SpanProcessor for QueueProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.0.push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.wake.notify_one();
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.0.wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::UNIX_EPOCH;

    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
    use opentelemetry::InstrumentationScope;
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};

    use super::*;

    fn span(n: u64) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(1),
                SpanId::from(n),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: Cow::Borrowed("tools/call"),
            start_time: UNIX_EPOCH,
            end_time: UNIX_EPOCH,
            attributes: vec![],
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: InstrumentationScope::builder("mcpd").build(),
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_what_does_not_fit() {
        let counters = Arc::new(SpanCounters::default());
        let queue = SpanQueue::new(3, 2, counters.clone());
        for n in 1..=5 {
            queue.push(span(n));
        }
        assert_eq!(queue.len(), 3);
        assert_eq!(counters.read().queue_full, 2);
        let mut batch = Vec::with_capacity(3);
        queue.take_into(&mut batch);
        assert_eq!(batch.iter().map(|s| s.span_context.span_id()).collect::<Vec<_>>(), [1, 2, 3].map(SpanId::from));
        assert_eq!(queue.len(), 0);
        queue.push(span(6));
        assert_eq!((queue.len(), counters.read().queue_full), (1, 2));
    }
}
