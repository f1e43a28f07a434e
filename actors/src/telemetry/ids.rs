//! Trace and span ids, and the sampling decision taken before the SDK is asked for a span.
//!
//! A span the sampler drops needs no more than its ids: its context travels on (so the
//! decision does), but building it through the SDK's span builder (attributes, links, a
//! non-recording `Span`) would cost most of what an unsampled request pays for telemetry. So
//! [`Telemetry`](super::Telemetry) asks the configured sampler itself, with a trace id of its
//! own choosing, and builds a dropped span's context directly. A span it keeps is built by the
//! SDK, whose id generator ([`ChosenIds`]) then hands out that same trace id, so the SDK's
//! sampler (the same one) decides the same.

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};

thread_local! {
    /// The trace id the SDK's next root span takes (set just before it is built).
    static CHOSEN: Cell<Option<TraceId>> = const { Cell::new(None) };
}

/// A new random trace id.
pub(crate) fn trace_id() -> TraceId {
    RandomIdGenerator::default().new_trace_id()
}

/// A new random span id.
pub(crate) fn span_id() -> SpanId {
    RandomIdGenerator::default().new_span_id()
}

/// Builds a root span with `trace_id` through the SDK: `build` runs while the id generator
/// hands it out.
pub(crate) fn with_trace_id<T>(trace_id: TraceId, build: impl FnOnce() -> T) -> T {
    CHOSEN.with(|chosen| chosen.set(Some(trace_id)));
    let built = build();
    CHOSEN.with(|chosen| chosen.set(None));
    built
}

/// The SDK's id generator: the chosen trace id when one is set, else random ids.
#[derive(Debug, Default)]
pub(crate) struct ChosenIds;

impl IdGenerator for ChosenIds {
    fn new_trace_id(&self) -> TraceId {
        CHOSEN.with(Cell::take).unwrap_or_else(trace_id)
    }

    fn new_span_id(&self) -> SpanId {
        span_id()
    }
}
