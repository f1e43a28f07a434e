//! The W3C trace context of an HTTP request (`traceparent`, `tracestate`) carried into the
//! JSON-RPC request's `_meta`, where handlers read it (the gateway forwards it to its remote):
//! one step every path that serves a POSTed request takes.

use std::sync::Arc;

use actix_web::http::header::{HeaderMap, HeaderName};
use mcpd::jsonrpc::Request;

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// Puts the W3C trace context of the HTTP request (`traceparent`, `tracestate`) in the request's
/// `_meta`, where handlers read it (the gateway forwards it to its remote), unless the request
/// carries its own there. Without the header this is one lookup.
pub(super) fn carry_trace(request: &mut Request, headers: &HeaderMap) {
    let Some(parent) = headers.get(&TRACEPARENT).and_then(|v| v.to_str().ok()) else { return };
    if request.params.as_ref().is_some_and(|p| p.get("_meta").is_some()) {
        // A `_meta` that is not an object: left as it is (the request is refused for it or
        // served without it).
        return;
    }
    let state = headers.get(&TRACESTATE).and_then(|v| v.to_str().ok());
    let meta = request.meta.get_or_insert_with(Default::default);
    Arc::make_mut(meta).add_trace_context(parent, state);
}
