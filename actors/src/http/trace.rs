//! The W3C trace context of an HTTP request (`traceparent`, `tracestate`, `baggage`) kept with
//! the JSON-RPC request's `_meta` ([`mcpd::jsonrpc::RequestMeta::add_trace_context`]): copied
//! into it when it has none of its own (handlers read it there: the gateway passes it on), and
//! kept apart, so the request's SERVER span has the `_meta` context as its parent and links the
//! HTTP one, as the MCP conventions say. One step every path that serves a POSTed request takes.

use std::sync::Arc;

use actix_web::http::header::{HeaderMap, HeaderName};
use mcpd::jsonrpc::{Request, TraceContext};

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
static BAGGAGE: HeaderName = HeaderName::from_static("baggage");

/// The HTTP request's trace context, when it has a `traceparent` header.
pub(crate) fn of_headers(headers: &HeaderMap) -> Option<TraceContext> {
    let text = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some(TraceContext { traceparent: text(&TRACEPARENT)?, tracestate: text(&TRACESTATE), baggage: text(&BAGGAGE) })
}

/// Keeps the HTTP request's trace context with the request's `_meta` (see the module). Without
/// the header this is one lookup.
pub(super) fn carry_trace(request: &mut Request, headers: &HeaderMap) {
    if !headers.contains_key(&TRACEPARENT) {
        return;
    }
    if request.params.as_ref().is_some_and(|p| p.get("_meta").is_some()) {
        // A `_meta` that is not an object: left as it is (the request is refused for it or
        // served without it).
        return;
    }
    let Some(transport) = of_headers(headers) else { return };
    let meta = request.meta.get_or_insert_with(Default::default);
    Arc::make_mut(meta).add_trace_context(transport);
}
