//! [`OperationSpan`]: the span of one MCP operation, SERVER when mcpd serves the request,
//! CLIENT when it sends one, named and attributed by the MCP semantic conventions.
//!
//! Context: a served request's parent is the trace context in its `params._meta`, else in its
//! HTTP headers; when both are there the headers' context is linked. A CLIENT span's parent is
//! the current context — the span whose [`OperationSpan::scope`] is being polled (or that was
//! [`OperationSpan::enter`]ed) on this thread — so a gateway's call to its remote becomes the
//! child of the call it serves. [`OperationSpan::trace_headers`] gives what goes into the
//! outgoing request's `_meta` (and headers).
//!
//! A span that the sampler drops still carries its trace context (so the decision travels on),
//! but gets no name, attributes or export work.

use std::borrow::Cow;
use std::future::Future;
use std::str::FromStr;

use mcpd::jsonrpc::RequestId;
use mcpd::telemetry::semconv::{self, Failure};
use mcpd::telemetry::w3c::{TraceParent, TRACEPARENT_LEN};
use opentelemetry::context::ContextGuard;
use opentelemetry::trace::{
    Link, Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample as _};
use serde_json::{Map, Value};

use super::ids;
use super::operation::{Incoming, Operation, Peer, TraceHeaders};
use super::pipeline::Telemetry;
use super::scoped::Scoped;

/// A request's `baggage`, carried in the context as the text it came as and passed on.
#[derive(Debug, Clone)]
struct Baggage(String);

/// The trace context to put into an outgoing request's `_meta` (and HTTP headers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagation {
    /// `traceparent`.
    pub traceparent: String,
    /// `tracestate`, when the context has one.
    pub tracestate: Option<String>,
    /// `baggage`, when the served request carried one.
    pub baggage: Option<String>,
}

impl Propagation {
    /// Writes the members into a `_meta` object, replacing what it had (the outgoing request's
    /// parent is this span, not the caller's).
    pub fn write_into(&self, meta: &mut Map<String, Value>) {
        meta.insert("traceparent".into(), Value::String(self.traceparent.clone()));
        match &self.tracestate {
            Some(state) => meta.insert("tracestate".into(), Value::String(state.clone())),
            None => meta.remove("tracestate"),
        };
        match &self.baggage {
            Some(baggage) => meta.insert("baggage".into(), Value::String(baggage.clone())),
            None => meta.remove("baggage"),
        };
    }
}

/// The span of one operation. Ends when [`OperationSpan::end`] is called or when dropped (with
/// every [`OperationSpan::scope`] future holding its context). Inert when telemetry is off.
#[derive(Debug)]
pub struct OperationSpan {
    cx: Option<Context>,
}

/// The `Context` holding a remote parent read from `headers`, if they carry a valid one.
pub(super) fn remote_context(headers: &TraceHeaders<'_>) -> Option<SpanContext> {
    let parent = TraceParent::parse(headers.traceparent?)?;
    let state = headers.tracestate.and_then(|s| TraceState::from_str(s).ok()).unwrap_or_default();
    Some(SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.span_id),
        TraceFlags::new(parent.flags),
        true,
        state,
    ))
}

/// The method name as a static string for the known methods (a span's name before it is
/// known to be recorded), else owned.
fn method_name(method: &str) -> Cow<'static, str> {
    match semconv::known_method(method) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(method.to_owned()),
    }
}

fn request_id(id: &RequestId) -> String {
    match id {
        RequestId::Number(n) => n.to_string(),
        RequestId::String(s) => s.to_string(),
    }
}

/// The most attributes a span gets from [`set_attributes`] and [`OperationSpan::fail`].
const ATTRIBUTES: usize = 13;

/// Sets the attributes the conventions give an operation.
fn set_attributes(span: &mut opentelemetry_sdk::trace::Span, op: &Operation<'_>, peer: Option<&Peer<'_>>) {
    let mut out = |kv: KeyValue| span.set_attribute(kv);
    out(KeyValue::new(semconv::MCP_METHOD_NAME, method_name(op.method)));
    if let (Some(kind), Some(target)) = (semconv::target_kind(op.method), op.target) {
        out(KeyValue::new(kind, target.to_owned()));
        if kind == semconv::GEN_AI_TOOL_NAME {
            out(KeyValue::new(semconv::GEN_AI_OPERATION_NAME, semconv::EXECUTE_TOOL));
        }
    }
    if let Some(uri) = op.resource_uri {
        out(KeyValue::new(semconv::MCP_RESOURCE_URI, uri.to_owned()));
    }
    if let Some(id) = op.request_id {
        out(KeyValue::new(semconv::JSONRPC_REQUEST_ID, request_id(id)));
    }
    if let Some(version) = op.protocol_version {
        out(KeyValue::new(semconv::MCP_PROTOCOL_VERSION, version.to_owned()));
    }
    if let Some(session) = op.session_id {
        out(KeyValue::new(semconv::MCP_SESSION_ID, session.to_owned()));
    }
    out(KeyValue::new(semconv::NETWORK_TRANSPORT, op.transport.as_str()));
    if let Some(peer) = peer {
        out(KeyValue::new(semconv::SERVER_ADDRESS, peer.address.to_owned()));
        out(KeyValue::new(semconv::SERVER_PORT, i64::from(peer.port)));
    }
}

impl Telemetry {
    /// The SERVER span of a request mcpd serves.
    pub fn server_span(&self, op: &Operation<'_>, incoming: &Incoming<'_>) -> OperationSpan {
        self.server_span_with(op.method, || *op, incoming)
    }

    /// As [`Telemetry::server_span`], the operation's attributes read (`describe`) only when the
    /// span is recorded.
    pub fn server_span_with<'a>(
        &self,
        method: &str,
        describe: impl FnOnce() -> Operation<'a>,
        incoming: &Incoming<'_>,
    ) -> OperationSpan {
        let meta = remote_context(&incoming.meta);
        let http = remote_context(&incoming.http);
        let (parent, link, carrier) = match (meta, http) {
            (Some(meta), http) => {
                let link = http.filter(|h| h.span_id() != meta.span_id());
                (Some(meta), link, &incoming.meta)
            }
            (None, http) => (http, None, &incoming.http),
        };
        let mut cx = match parent {
            Some(parent) => Context::new().with_remote_span_context(parent),
            None => Context::new(),
        };
        if let Some(baggage) = carrier.baggage.or(incoming.meta.baggage).or(incoming.http.baggage) {
            cx = cx.with_value(Baggage(baggage.to_owned()));
        }
        self.begin(SpanKind::Server, method, describe, None, cx, link)
    }

    /// The CLIENT span of a request mcpd sends to `peer`; its parent is the current context.
    pub fn client_span(&self, op: &Operation<'_>, peer: Option<&Peer<'_>>) -> OperationSpan {
        self.begin(SpanKind::Client, op.method, || *op, peer, Context::current(), None)
    }

    /// A span of work inside an operation (a command's process, a task, a token request),
    /// `kind` INTERNAL or CLIENT, named `name`, a child of the current context.
    pub fn child_span(&self, kind: SpanKind, name: &'static str, attributes: Vec<KeyValue>) -> OperationSpan {
        let Some(tracer) = &self.tracer else { return OperationSpan::disabled() };
        let parent = Context::current();
        let span =
            tracer.span_builder(name).with_kind(kind).with_attributes(attributes).start_with_context(tracer, &parent);
        OperationSpan { cx: Some(parent.with_span(span)) }
    }

    /// Starts a span under `parent`: the sampler decides first (see `ids`), so a dropped span is
    /// only its ids; a recorded one is built by the SDK, named, and given `describe()`'s
    /// attributes.
    fn begin<'a>(
        &self,
        kind: SpanKind,
        method: &str,
        describe: impl FnOnce() -> Operation<'a>,
        peer: Option<&Peer<'_>>,
        parent: Context,
        link: Option<SpanContext>,
    ) -> OperationSpan {
        let Some(tracer) = &self.tracer else { return OperationSpan::disabled() };
        let inherited = Some(parent.span().span_context().trace_id()).filter(|id| *id != TraceId::INVALID);
        let trace_id = inherited.unwrap_or_else(ids::trace_id);
        let name = method_name(method);
        let decided = self.sampler.should_sample(Some(&parent), trace_id, &name, &kind, &[], &[]);
        if decided.decision == SamplingDecision::Drop {
            let dropped = SpanContext::new(trace_id, ids::span_id(), TraceFlags::default(), false, decided.trace_state);
            return OperationSpan { cx: Some(parent.with_remote_span_context(dropped)) };
        }
        // Room for the attributes, set once the span is known to be recorded (the SDK keeps
        // this vector as the span's): no growth while they are added.
        let mut builder = tracer.span_builder(name).with_kind(kind).with_attributes(Vec::with_capacity(ATTRIBUTES));
        if let Some(link) = link {
            builder = builder.with_links(vec![Link::with_context(link)]);
        }
        let mut span = match inherited {
            Some(_) => builder.start_with_context(tracer, &parent),
            None => ids::with_trace_id(trace_id, || builder.start_with_context(tracer, &parent)),
        };
        if span.is_recording() {
            let op = describe();
            let target = op.target.filter(|_| op.target_listed && semconv::target_kind(op.method).is_some());
            if target.is_some() {
                span.update_name(semconv::span_name(op.method, target));
            }
            set_attributes(&mut span, &op, peer);
        }
        OperationSpan { cx: Some(parent.with_span(span)) }
    }
}

impl OperationSpan {
    /// A span that records nothing (telemetry off).
    pub fn disabled() -> OperationSpan {
        OperationSpan { cx: None }
    }

    /// The current context's span (the operation being served), to annotate it.
    pub fn current() -> OperationSpan {
        OperationSpan { cx: Some(Context::current()) }
    }

    /// Whether the span is recorded (telemetry on and sampled).
    pub fn is_recording(&self) -> bool {
        self.cx.as_ref().is_some_and(|cx| cx.span().is_recording())
    }

    /// Records why the operation failed: `error.type` (and `rpc.response.status_code` for a
    /// JSON-RPC error), status ERROR with `message` (the JSON-RPC error's message).
    pub fn fail(&self, failure: Failure, message: &str) {
        let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) else { return };
        let span = cx.span();
        span.set_attribute(KeyValue::new(semconv::ERROR_TYPE, failure.error_type()));
        if let Some(code) = failure.code() {
            span.set_attribute(KeyValue::new(semconv::RPC_RESPONSE_STATUS_CODE, code.to_string()));
        }
        span.set_status(Status::error(message.to_owned()));
    }

    /// Records `mcp.session.id` once known (a session made by this request).
    pub fn set_session_id(&self, id: &str) {
        if let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().set_attribute(KeyValue::new(semconv::MCP_SESSION_ID, id.to_owned()));
        }
    }

    /// The span's W3C `traceparent` (and `tracestate`, `baggage`) for an outgoing request.
    pub fn trace_headers(&self) -> Option<Propagation> {
        let cx = self.cx.as_ref()?;
        let span = cx.span();
        let context = span.span_context();
        if !context.is_valid() {
            return None;
        }
        let parent = TraceParent {
            trace_id: context.trace_id().to_bytes(),
            span_id: context.span_id().to_bytes(),
            flags: context.trace_flags().to_u8(),
        };
        let mut text = [0u8; TRACEPARENT_LEN];
        parent.write(&mut text);
        let state = context.trace_state().header();
        Some(Propagation {
            traceparent: String::from_utf8_lossy(&text).into_owned(),
            tracestate: (!state.is_empty()).then_some(state),
            baggage: cx.get::<Baggage>().map(|b| b.0.clone()),
        })
    }

    /// Runs `future` with this span as the current context each time it is polled, so CLIENT
    /// spans started inside it are its children. Without telemetry the future runs as it is.
    pub fn scope<F: Future>(&self, future: F) -> Scoped<F> {
        Scoped::new(future, self.cx.clone())
    }

    /// The span's context (its trace and span ids), when telemetry is on.
    pub fn span_context(&self) -> Option<SpanContext> {
        self.cx.as_ref().map(|cx| cx.span().span_context().clone()).filter(SpanContext::is_valid)
    }

    /// The span as the parent of what is started in it ([`Scoped`]).
    pub fn context(&self) -> Option<&Context> {
        self.cx.as_ref()
    }

    /// Links another span to this one (the earlier rounds of a multi round-trip call, the task
    /// a poll reads).
    pub fn add_link(&self, linked: SpanContext) {
        if let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().add_link(linked, Vec::new());
        }
    }

    /// Sets an attribute (only when the span is recorded).
    pub fn set_attribute(&self, key: &'static str, value: impl FnOnce() -> opentelemetry::Value) {
        if let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().set_attribute(KeyValue::new(key, value()));
        }
    }

    /// Names the span anew (only when it is recorded).
    pub fn rename(&self, name: impl FnOnce() -> String) {
        if let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().update_name(name());
        }
    }

    /// Makes this span the current context of this thread until the guard drops (synchronous
    /// code only: an `await` while it is held would leak it to other tasks).
    pub fn enter(&self) -> Option<ContextGuard> {
        self.cx.as_ref().map(|cx| cx.clone().attach())
    }

    /// Ends the span now.
    pub fn end(self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use mcpd::telemetry::config::{ENDPOINT, METRICS_EXPORTER, SAMPLER, SAMPLER_ARG};
    use mcpd::telemetry::TelemetryConfig;

    use super::super::operation::Transport;
    use super::*;

    const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const UNSAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

    /// A port where nothing listens: exports fail at once.
    fn dead_endpoint() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    }

    fn telemetry(vars: &[(&str, &str)]) -> Telemetry {
        let endpoint = dead_endpoint();
        let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        map.insert(ENDPOINT.into(), endpoint);
        map.insert(METRICS_EXPORTER.into(), "none".into());
        let config = TelemetryConfig::read(|k| map.get(k).cloned(), None).unwrap().unwrap();
        Telemetry::start(&config).unwrap()
    }

    fn call() -> Operation<'static> {
        Operation { method: "tools/call", target: Some("echo"), transport: Transport::Tcp, ..Operation::default() }
    }

    fn from_meta(traceparent: &'static str) -> Incoming<'static> {
        Incoming {
            meta: TraceHeaders { traceparent: Some(traceparent), ..TraceHeaders::default() },
            ..Incoming::default()
        }
    }

    fn recorded(t: &Telemetry, incoming: &Incoming<'_>) -> bool {
        t.server_span(&call(), incoming).is_recording()
    }

    #[test]
    fn samplers_decide_as_configured() {
        let none = Incoming::default();
        let on = telemetry(&[(SAMPLER, "always_on")]);
        assert!(recorded(&on, &none) && recorded(&on, &from_meta(UNSAMPLED)));
        let off = telemetry(&[(SAMPLER, "always_off")]);
        assert!(!recorded(&off, &none) && !recorded(&off, &from_meta(SAMPLED)));
        let zero = telemetry(&[(SAMPLER, "traceidratio"), (SAMPLER_ARG, "0")]);
        assert!(!recorded(&zero, &none));
        let parent_on = telemetry(&[]);
        assert!(recorded(&parent_on, &none));
        assert!(!recorded(&parent_on, &from_meta(UNSAMPLED)));
        let parent_off = telemetry(&[(SAMPLER, "parentbased_always_off")]);
        assert!(!recorded(&parent_off, &none));
        assert!(recorded(&parent_off, &from_meta(SAMPLED)));
        let ratio = telemetry(&[(SAMPLER, "parentbased_traceidratio"), (SAMPLER_ARG, "0")]);
        assert!(!recorded(&ratio, &none));
        assert!(recorded(&ratio, &from_meta(SAMPLED)));
        // A dropped span still passes its trace on, unsampled.
        let dropped = ratio.server_span(&call(), &none).trace_headers().unwrap();
        assert!(dropped.traceparent.ends_with("-00"));
        for t in [on, off, zero, parent_on, parent_off, ratio] {
            t.shutdown(Duration::from_secs(1));
        }
    }

    #[test]
    fn a_client_span_inside_a_server_span_continues_its_trace_and_baggage() {
        let t = telemetry(&[]);
        let incoming = Incoming {
            meta: TraceHeaders {
                traceparent: Some(SAMPLED),
                tracestate: Some("rojo=00f067aa0ba902b7"),
                baggage: Some("userId=alice"),
            },
            http: TraceHeaders { traceparent: Some(UNSAMPLED), ..TraceHeaders::default() },
        };
        let server = t.server_span(&call(), &incoming);
        let served = server.trace_headers().unwrap();
        assert!(served.traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
        assert!(!served.traceparent.contains("00f067aa0ba902b7"), "a span id of its own");
        assert_eq!(served.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
        let client = {
            let _current = server.enter();
            t.client_span(&call(), Some(&Peer { address: "127.0.0.1", port: 9 }))
        };
        let sent = client.trace_headers().unwrap();
        assert_eq!(sent.traceparent[..36], served.traceparent[..36]);
        assert_ne!(sent.traceparent, served.traceparent);
        assert_eq!(sent.baggage.as_deref(), Some("userId=alice"));
        // Outside the server span, a client span starts a trace of its own.
        let alone = t.client_span(&call(), None).trace_headers().unwrap();
        assert_ne!(alone.traceparent[..36], served.traceparent[..36]);

        let mut meta = Map::new();
        meta.insert("traceparent".into(), Value::from("caller's"));
        meta.insert("tracestate".into(), Value::from("old=1"));
        meta.insert("progressToken".into(), Value::from(1));
        Propagation { tracestate: None, ..sent.clone() }.write_into(&mut meta);
        assert_eq!(meta["traceparent"], Value::from(sent.traceparent.clone()));
        assert!(!meta.contains_key("tracestate"));
        assert_eq!(meta["baggage"], Value::from("userId=alice"));
        assert_eq!(meta["progressToken"], Value::from(1));
        client.end();
        server.end();
        t.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn a_dead_collector_counts_failed_spans_and_shutdown_returns() {
        let t = telemetry(&[]);
        for _ in 0..5 {
            let span = t.server_span(&call(), &Incoming::default());
            span.fail(Failure::ToolError, "the tool failed");
            span.end();
        }
        assert!(t.shutdown(Duration::from_secs(3)));
        assert_eq!(t.span_counts(), crate::telemetry::SpanCounts { exported: 0, queue_full: 0, export_failed: 5 });
        assert!(!t.shutdown(Duration::from_secs(1)), "a second shutdown has nothing to do");
        // Spans made after shutdown are not recorded.
        assert!(!t.server_span(&call(), &Incoming::default()).is_recording());
    }

    #[test]
    fn shutdown_is_bounded_when_the_collector_never_answers() {
        // Connections are accepted by the kernel and never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", silent.local_addr().unwrap());
        let map: HashMap<&str, String> = [
            (ENDPOINT, endpoint),
            (METRICS_EXPORTER, "none".into()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000".into()),
            ("OTEL_BSP_SCHEDULE_DELAY", "1".into()),
        ]
        .into_iter()
        .collect();
        let config = TelemetryConfig::read(|k| map.get(k).cloned(), None).unwrap().unwrap();
        let t = Telemetry::start(&config).unwrap();
        t.server_span(&call(), &Incoming::default()).end();
        let started = Instant::now();
        let in_time = t.shutdown(Duration::from_millis(300));
        let waited = started.elapsed();
        assert!(!in_time, "the silent collector cannot have taken the spans");
        assert!(waited < Duration::from_secs(2), "shutdown waited {waited:?}");
    }

    #[test]
    fn telemetry_off_gives_inert_spans() {
        let span = OperationSpan::disabled();
        assert!(!span.is_recording());
        assert_eq!(span.trace_headers(), None);
        span.fail(Failure::Code(-32602), "ignored");
        span.end();
    }
}
