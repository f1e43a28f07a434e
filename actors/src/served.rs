//! What the transports tell telemetry about the messages they serve: a SERVER span and an
//! `mcp.server.operation.duration` for every request and notification, whichever wire it came
//! over. A request [`Serving`] is started where it is served — [`crate::tool_executor::execute`],
//! which every wire's requests cross, or the edge for the few a transport answers itself
//! (`initialize`, `logging/setLevel`, subscriptions) — and finished with its outcome.
//!
//! The span's parent is the trace context of the request's own `params._meta`; the HTTP
//! request's (kept apart by `http::trace`) is its parent only when `_meta` has none, and is
//! linked otherwise. A retried round of a multi round-trip call is linked to the round whose
//! `requestState` it carries (`telemetry::rounds`). With telemetry off, a request costs the
//! histogram's recording and one atomic load.

use std::future::Future;
use std::time::Instant;

use actix_web::HttpResponse;
use mcpd::jsonrpc::{ErrorObject, Notification, Request, RequestId, TraceContext};
use mcpd::server::{Method, Reply};
use mcpd::telemetry::semconv::{self, Failure};
use mcpd::version::{Era, ProtocolVersion};
use mcpd::ProtocolError;
use serde_json::{Map, Value};

use crate::telemetry::{self, Incoming, Operation, OperationSpan, Side, TraceHeaders, Transport};

/// The `name` of `tools/call` and `prompts/get`, the `uri` of the resource methods.
fn target_and_uri<'a>(method: &str, params: Option<&'a Map<String, Value>>) -> (Option<&'a str>, Option<&'a str>) {
    let member = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    match method {
        "tools/call" | "prompts/get" => (member("name"), None),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" | "notifications/resources/updated" => {
            (None, member("uri"))
        }
        _ => (None, None),
    }
}

/// The trace context a message carried: its own `_meta`'s, and its transport's.
fn incoming<'a>(meta: TraceHeaders<'a>, http: Option<&'a TraceContext>) -> Incoming<'a> {
    let http = http.map_or_else(TraceHeaders::default, |http| TraceHeaders {
        traceparent: Some(http.traceparent.as_str()),
        tracestate: http.tracestate.as_deref(),
        baggage: http.baggage.as_deref(),
    });
    Incoming { meta, http }
}

/// Where a message was served: its revision, session and transport.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served<'a> {
    /// The revision it speaks (`None`: not negotiated yet).
    pub(crate) version: Option<ProtocolVersion>,
    /// Its session, if any.
    pub(crate) session: Option<&'a str>,
    /// `tcp` (HTTP) or `pipe` (stdio).
    pub(crate) transport: Transport,
}

/// A request being served: its SERVER span and when it started.
#[derive(Debug)]
pub(crate) struct Serving {
    span: OperationSpan,
    started: Instant,
    version: Option<ProtocolVersion>,
    transport: Transport,
}

impl Serving {
    /// Starts serving `request` (its span is inert when telemetry is off).
    pub(crate) fn start(request: &Request, served: Served<'_>) -> Serving {
        let started = Instant::now();
        let span = if telemetry::enabled() { span_of(request, served) } else { OperationSpan::disabled() };
        Serving { span, started, version: served.version, transport: served.transport }
    }

    /// The request's span (the parent of what its handler does: [`OperationSpan::scope`]).
    pub(crate) fn span(&self) -> &OperationSpan {
        &self.span
    }

    /// When it started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Records the request's end: `outcome`, with `target` the tool or prompt it served when the
    /// catalog has it (the span is then named after it, and the histogram labelled).
    pub(crate) fn finish(self, method: &str, target: Option<&str>, outcome: Result<&Reply, &ProtocolError>) {
        let failure = match outcome {
            Err(error) => Some(Failure::Code(i64::from(error.code(self.era()).0))),
            Ok(reply) if reply.is_tool_error() => Some(Failure::ToolError),
            Ok(_) => None,
        };
        if self.span.is_recording() {
            if let Some(target) = target {
                self.span.rename(|| semconv::span_name(method, Some(target)));
            }
            match outcome {
                Err(error) => self.span.fail(failure.unwrap_or(Failure::Other), &error.to_string()),
                Ok(_) if failure.is_some() => self.span.fail(Failure::ToolError, "the tool reported an error"),
                Ok(reply) => telemetry::links::remember_round(round_state(reply), &self.span),
            }
        }
        self.record(method, target, failure);
    }

    /// Records the end of an `initialize` that made a session (a streamable-HTTP endpoint with
    /// sessions): its answer carries the session's id; none means it was refused — with `-32602`
    /// when it named no version (`negotiated` is `None`), else by the endpoint's limits.
    pub(crate) fn finish_initialize(mut self, negotiated: Option<ProtocolVersion>, response: &HttpResponse) {
        self.version = negotiated;
        let session = response.headers().get(mcpd::headers::SESSION_ID).and_then(|v| v.to_str().ok());
        let failure = match (session, negotiated) {
            (Some(id), Some(version)) => {
                self.span.set_session_id(id);
                self.span.set_attribute(semconv::MCP_PROTOCOL_VERSION, || version.as_str().into());
                None
            }
            (_, None) => {
                let failure = Failure::Code(i64::from(mcpd::jsonrpc::ErrorCode::INVALID_PARAMS.0));
                self.span.fail(failure, "initialize needs a string protocolVersion");
                Some(failure)
            }
            (None, Some(_)) => {
                self.span.fail(Failure::Other, &format!("no session could be started (HTTP {})", response.status()));
                Some(Failure::Other)
            }
        };
        self.record("initialize", None, failure);
    }

    /// As [`Serving::finish`] for a request answered at the edge with a plain result.
    pub(crate) fn finish_edge<T>(self, method: &str, outcome: &Result<T, ProtocolError>) {
        let failure = outcome.as_ref().err().map(|error| Failure::Code(i64::from(error.code(self.era()).0)));
        if let (Err(error), Some(failure)) = (outcome, failure) {
            self.span.fail(failure, &error.to_string());
        }
        self.record(method, None, failure);
    }

    fn era(&self) -> Era {
        self.version.map_or(Era::Stateful, ProtocolVersion::era)
    }

    fn record(self, method: &str, target: Option<&str>, failure: Option<Failure>) {
        let op = Operation {
            method,
            target,
            protocol_version: self.version.map(ProtocolVersion::as_str),
            transport: self.transport,
            ..Operation::default()
        };
        telemetry::record_operation_duration(Side::Server, &op, failure, self.started.elapsed().as_secs_f64());
        self.span.end();
    }
}

/// A request a session's server sends its client (`elicitation/create`, `sampling/createMessage`,
/// `roots/list`): its CLIENT span (the child of the request being served), whose context goes
/// into the request's `params._meta`, and `mcp.client.operation.duration`.
pub(crate) struct ToClient {
    span: OperationSpan,
    started: Instant,
    method: &'static str,
    version: Option<ProtocolVersion>,
}

impl ToClient {
    /// Starts the span of request `id` to the client of the session `served` describes, and
    /// puts its context into `params._meta`.
    pub(crate) fn start(method: &str, id: &RequestId, params: &mut Value, served: Served<'_>) -> ToClient {
        let started = Instant::now();
        let version = served.version;
        let span = if telemetry::enabled() {
            let op = Operation {
                method,
                request_id: Some(id),
                protocol_version: version.map(ProtocolVersion::as_str),
                session_id: served.session,
                transport: Transport::Tcp,
                ..Operation::default()
            };
            telemetry::client_span(&op, None)
        } else {
            OperationSpan::disabled()
        };
        if let (Some(propagation), Value::Object(params)) = (span.trace_headers(), params) {
            let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                propagation.write_into(meta);
            }
        }
        ToClient { span, started, method: semconv::method_label(method), version }
    }

    /// Awaits the client's answer, then ends the span with it.
    pub(crate) async fn around<F>(self, answer: F) -> Result<Value, ErrorObject>
    where
        F: Future<Output = Result<Value, ErrorObject>>,
    {
        let outcome = answer.await;
        let failure = outcome.as_ref().err().map(|error| Failure::Code(i64::from(error.code.0)));
        if let (Some(failure), Err(error)) = (failure, &outcome) {
            self.span.fail(failure, &error.message);
        }
        let op = Operation {
            method: self.method,
            protocol_version: self.version.map(ProtocolVersion::as_str),
            transport: Transport::Tcp,
            ..Operation::default()
        };
        telemetry::record_operation_duration(Side::Client, &op, failure, self.started.elapsed().as_secs_f64());
        self.span.end();
        outcome
    }
}

/// The requests a session's transport answers itself, before its executor: `initialize` again,
/// `logging/setLevel` and the subscriptions.
fn answered_at_edge(method: Method) -> bool {
    matches!(method, Method::Initialize | Method::SetLogLevel | Method::Subscribe | Method::Unsubscribe)
}

/// Serves a session's request with `answer`, the transport's own answer to the requests it
/// answers itself (`None` for the others, which the executor serves and traces): those get their
/// span and duration here.
pub(crate) async fn in_session(
    served: Served<'_>,
    request: &Request,
    answer: impl Future<Output = Option<Result<Reply, ProtocolError>>>,
) -> Option<Result<Reply, ProtocolError>> {
    let method = Method::parse(&request.method);
    if !answered_at_edge(method) {
        return answer.await;
    }
    let serving = Serving::start(request, served);
    let outcome = answer.await;
    if let Some(outcome) = &outcome {
        serving.finish(method.wire_name().unwrap_or_default(), None, outcome.as_ref());
    }
    outcome
}

/// A 2024-11-05 session's `initialize` (that transport negotiates after its stream opened).
pub(crate) fn initialize_in(
    served: Served<'_>,
    request: &Request,
    answer: impl FnOnce() -> Result<Reply, ProtocolError>,
) -> Result<Reply, ProtocolError> {
    let serving = Serving::start(request, served);
    let outcome = answer();
    serving.finish("initialize", None, outcome.as_ref());
    outcome
}

/// A session's notification.
pub(crate) fn in_session_notification(notification: &Notification, served: Served<'_>) {
    self::notification(notification, served, None);
}

/// The `requestState` of an `input_required` result (the round a retry will carry it from).
fn round_state(reply: &Reply) -> Option<&str> {
    match reply {
        Reply::Value(value) if value.get("resultType").and_then(Value::as_str) == Some("input_required") => {
            value.get("requestState").and_then(Value::as_str)
        }
        _ => None,
    }
}

fn span_of(request: &Request, served: Served<'_>) -> OperationSpan {
    let params = request.params.as_ref();
    let meta = request.meta();
    let own = meta.map(|m| m.trace()).unwrap_or_default();
    let own = TraceHeaders { traceparent: own.traceparent, tracestate: own.tracestate, baggage: own.baggage };
    // Read only when the span is recorded: an unsampled request skips the params' lookups.
    let describe = || {
        let (target, resource_uri) = target_and_uri(&request.method, params);
        Operation {
            method: &request.method,
            target,
            target_listed: false,
            resource_uri,
            request_id: Some(&request.id),
            protocol_version: served.version.map(ProtocolVersion::as_str),
            session_id: served.session,
            transport: served.transport,
        }
    };
    let incoming = incoming(own, meta.and_then(|m| m.transport_trace()));
    let span = telemetry::server_span_with(&request.method, describe, &incoming);
    if span.is_recording() {
        if let Some(earlier) = params.and_then(|p| p.get("requestState")).and_then(Value::as_str) {
            telemetry::links::link_round(earlier, &span);
        }
    }
    span
}

/// A request refused before it was served (the stateless wire's checks, a handshake-era request
/// without its session): its span, failed with `error`, and its duration.
pub(crate) fn refused(request: &Request, served: Served<'_>, error: &ProtocolError) {
    let serving = Serving::start(request, served);
    let failure = Failure::Code(i64::from(error.code(serving.era()).0));
    serving.span.fail(failure, &error.to_string());
    serving.record(&request.method, None, Some(failure));
}

/// A notification served (`notifications/initialized`, `notifications/cancelled`, …): its
/// SERVER span, started and ended at once, and its duration.
pub(crate) fn notification(notification: &Notification, served: Served<'_>, http: Option<&TraceContext>) {
    let started = Instant::now();
    if telemetry::enabled() {
        let params = notification.params.as_ref();
        let (_, resource_uri) = target_and_uri(&notification.method, params);
        let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
        let member = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        let own = TraceHeaders {
            traceparent: member("traceparent"),
            tracestate: member("tracestate"),
            baggage: member("baggage"),
        };
        let op = Operation {
            method: &notification.method,
            resource_uri,
            protocol_version: served.version.map(ProtocolVersion::as_str),
            session_id: served.session,
            transport: served.transport,
            ..Operation::default()
        };
        telemetry::server_span(&op, &incoming(own, http)).end();
    }
    let op = Operation {
        method: &notification.method,
        protocol_version: served.version.map(ProtocolVersion::as_str),
        transport: served.transport,
        ..Operation::default()
    };
    telemetry::record_operation_duration(Side::Server, &op, None, started.elapsed().as_secs_f64());
}
