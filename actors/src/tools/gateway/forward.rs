//! What a call to a remote carries and brings back: the caller's trace context and log level in
//! the remote call's `_meta` ([`call_meta`]), the caller's own handlers for what the remote sends
//! meanwhile ([`pass_through`]), the gateway's refusals of what no call can be told
//! ([`unattributed_handlers`]), and the remote's answer made this server's ([`passed_on`]).
//!
//! These are the rules of the hop; the gateway's calls and the tools' lanes apply them with its
//! connections. They take the gateway's parts they need (its metrics, its health) as arguments,
//! so this file depends on no more than those.

use std::sync::Arc;

use mcpd::catalog::{LaneResult, ToolError};
use mcpd::context::{LogLevel, ToolContext};
use mcpd::jsonrpc::{ErrorCode, ErrorObject, TRACEPARENT, TRACESTATE};
use mcpd::model::meta_keys;
use mcpd::mrtr::{capability_for, relayed_retry, InputRequired};
use serde_json::{json, Map, Value};

use super::health::GatewayHealth;
use crate::client::{
    CallHandlers, ClientError, ClientHandlers, Handler, HandlerFuture, NotificationHook, NotificationSink, Passed,
    RequestAnswerer,
};
use crate::tools::remote_metrics::RemoteMetrics;

/// The remote call's `_meta`: the W3C trace context of the caller's request (its `_meta`, where
/// the HTTP edge also puts the `traceparent` and `tracestate` headers) and, when the caller
/// wants log messages (and can be sent them), its log level (`io.modelcontextprotocol/logLevel`:
/// a stateless remote sends log messages only to requests that ask, see [`pass_through`]).
pub(super) fn call_meta(ctx: &ToolContext) -> Option<Map<String, Value>> {
    let mut meta = trace_context(|key| ctx.meta_member(key));
    if let Some(level) = ctx.log_level().filter(|_| ctx.has_peer()) {
        meta.insert(meta_keys::LOG_LEVEL.into(), json!(level));
    }
    (!meta.is_empty()).then_some(meta)
}

/// The W3C trace context among a request's `_meta` members (`member` reads one by its key).
pub(super) fn trace_context<'m>(member: impl Fn(&str) -> Option<&'m Value>) -> Map<String, Value> {
    [TRACEPARENT, TRACESTATE]
        .into_iter()
        .filter_map(|key| member(key).filter(|v| v.is_string()).map(|v| (key.to_owned(), v.clone())))
        .collect()
}

/// The handlers of one gateway call, from its caller's context:
///
/// - the remote's progress becomes the caller's (only when the caller sent a progress token:
///   the remote is sent one of the client's own), its log messages the caller's (at the
///   caller's log level);
/// - the remote's `elicitation/create`, `sampling/createMessage` and `roots/list` are asked of
///   the caller as its own requests when it declared the capability, and refused with an
///   error naming why otherwise (never answered with made-up defaults);
/// - a stateless remote's `input_required` round is returned, for the gateway to make it its
///   own round (the server asks a caller in a session itself, and answers a stateless caller
///   with `input_required`); the retry of such a round carries the caller's answers and the
///   remote's state on.
pub(super) fn pass_through(ctx: &ToolContext) -> CallHandlers {
    let progress: Option<NotificationSink> = (ctx.has_peer() && ctx.progress_token().is_some()).then(|| {
        let ctx = ctx.clone();
        Arc::new(move |params: &Value| {
            if let Some(progress) = params.get("progress").and_then(Value::as_f64) {
                let total = params.get("total").and_then(Value::as_f64);
                ctx.progress(progress, total, params.get("message").and_then(Value::as_str));
            }
        }) as NotificationSink
    });
    let log: Option<NotificationSink> = ctx.has_peer().then(|| {
        let ctx = ctx.clone();
        Arc::new(move |params: &Value| {
            let level = params.get("level").and_then(Value::as_str).and_then(LogLevel::parse);
            if let Some(level) = level {
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                ctx.log(level, params.get("logger").and_then(Value::as_str), data);
            }
        }) as NotificationSink
    });
    let caller = ctx.clone();
    let requests: RequestAnswerer = Arc::new(move |method: &str, params: Value| -> HandlerFuture {
        let ctx = caller.clone();
        let method = method.to_owned();
        Box::pin(async move {
            if method == "ping" {
                return Ok(json!({}));
            }
            let Some(capability) = capability_for(&method) else {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("{method} is not forwarded by mcpd's gateway"),
                ));
            };
            if !ctx.client_supports(capability) {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "{method} refused by mcpd's gateway: the calling client did not declare the {capability} \
                         capability"
                    ),
                ));
            }
            ctx.request(&method, params).await.map_err(|error| {
                ErrorObject::new(
                    error.code,
                    format!(
                        "{method} could not be forwarded by mcpd's gateway to the calling client: {}",
                        error.message
                    ),
                )
            })
        })
    });
    CallHandlers {
        progress,
        log,
        requests: Some(requests),
        relay_input: true,
        resume: relayed_retry(ctx.input_responses(), ctx.request_state()),
        // What a stateless remote is told this call's client can be asked: the caller's own
        // declarations (the link passes on those of elicitation, sampling and roots, the
        // requests forwarded here), nothing it did not declare.
        capabilities: Some(ctx.shared_client_capabilities().unwrap_or_else(|| json!({}).into())),
    }
}

/// The gateway's own answers to what a remote asks outside any call it can attribute (several
/// calls in flight on a shared stream, or none): refused, never answered with made-up defaults.
/// `elicitation`, `sampling` and `roots` are declared to every remote all the same (a stateless
/// remote is told each call's caller's own instead, see [`pass_through`]): they are what mcpd
/// forwards to the callers that declared them. The gateway also declares MCP Apps
/// (`io.modelcontextprotocol/ui`, HTML interfaces): it passes a remote's interfaces on intact, so
/// a remote that offers its UI tools only to clients that take them offers them here.
pub(super) fn unattributed_handlers(hook: NotificationHook) -> ClientHandlers {
    fn refuse(method: &'static str) -> Handler {
        Arc::new(move |_params| {
            Box::pin(async move {
                Err(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "{method} refused by mcpd's gateway: it cannot tell which caller the request is for \
                         (it is not tied to one call in flight)"
                    ),
                ))
            })
        })
    }
    ClientHandlers {
        elicitation: refuse("elicitation/create"),
        sampling: Some(refuse("sampling/createMessage")),
        roots: Vec::new(),
        notifications: Some(hook),
        extensions: serde_json::Map::from_iter([(
            "io.modelcontextprotocol/ui".to_owned(),
            serde_json::json!({"mimeTypes": ["text/html;profile=mcp-app"]}),
        )]),
    }
}

/// What a remote's answer to a call started at `started` is passed on as (a lane's usual
/// answer as its text); the call counted in the remote's metrics and its health noted.
#[allow(clippy::result_large_err, reason = "the handlers' own error type, handed straight back to the server")]
pub(super) fn passed_on(
    metrics: &RemoteMetrics,
    health: &GatewayHealth,
    server: &str,
    started: std::time::Instant,
    outcome: Result<Passed, ClientError>,
) -> Result<LaneResult, ToolError> {
    metrics.record_call(server, started.elapsed(), outcome.as_ref().map(Passed::is_error));
    match outcome {
        Ok(Passed::Text(result)) => {
            health.mark_up(server);
            Ok(LaneResult::Passed(result))
        }
        // The usual answer, read straight into what is passed on (the same as below).
        Ok(Passed::Result(result)) => {
            health.mark_up(server);
            Ok(LaneResult::Result(result))
        }
        Ok(Passed::Raw(result)) if result.raw.get("resultType").and_then(Value::as_str) == Some("input_required") => {
            health.mark_up(server);
            let round = result.raw.as_object().map(InputRequired::relay);
            match round {
                Some(Ok(round)) => Err(ToolError::InputRequired(round)),
                Some(Err(reason)) => {
                    Err(ToolError::failed(format!("remote server {server} asked for input: {reason}")))
                }
                None => Err(ToolError::failed(format!("remote server {server} asked for input of the wrong shape"))),
            }
        }
        Ok(Passed::Raw(result)) => {
            health.mark_up(server);
            Ok(LaneResult::Result(result.into_passed()))
        }
        Err(error) => {
            health.mark_down(server, &error);
            Err(ToolError::failed(format!("remote server {server} failed: {error}")))
        }
    }
}
