//! Stateless 2026-07-28 requests: each carries its `_meta` and routing headers (`Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*` from the tool's `x-mcp-header` parameters), over HTTP or to a
//! stdio child. A result of type `input_required` (MRTR) is completed with the client's
//! handlers and the request sent again with a new id, the answers and the server's
//! `requestState` byte for byte, for up to [`MAX_INPUT_ROUNDS`] rounds. `tools/call` and
//! `tasks/*` declare the tasks extension in their client capabilities; a task (`resultType:
//! "task"`) answering any other request is a protocol error.

use std::cell::Cell;

use mcpd::client::request::{param_headers, routing_headers, RoutingHeader};
use mcpd::jsonrpc::RequestId;
use mcpd::model::PassedResult;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Map, Value};

use super::body::Param;
use super::exchange::Passing;
use super::headers::{Headers, ToolName};
use super::trace::{target_of, ClientOp};
use super::{headers, CallEntry, Link};
use crate::client::error::ClientError;

/// A gateway's plain call, written ([`Link::forward_request`]) and not sent yet.
pub(crate) struct Forward {
    id: RequestId,
    body: Vec<u8>,
    headers: Headers,
    /// Its span, started as it was written.
    op: ClientOp,
    tool: ToolName,
}

/// What a [`Link::forward`] call was answered with.
pub(crate) enum Forwarded {
    /// The usual answer: a complete result, as its text.
    Text(PassedResult),
    /// Any other result (a round, a task, a result of another shape), as the link reads it.
    Value(Value),
}

/// A stateless request's headers: its routing headers (as the core computes them) and the
/// protocol version (the trace context is added once the request's span is started).
fn stateless_headers(routing: Result<Vec<(RoutingHeader, String)>, String>) -> Result<Headers, ClientError> {
    let mut headers = headers::routing(routing.map_err(ClientError::Protocol)?)?;
    headers.push(headers::version(ProtocolVersion::STATELESS));
    Ok(headers)
}

/// How many MRTR rounds one request may take.
const MAX_INPUT_ROUNDS: usize = 8;

impl Link {
    /// One stateless request (also `server/discover`, before any wire is negotiated); `extra`
    /// are the MRTR fields of a retried round.
    pub(super) async fn stateless_call(
        &self,
        method: &str,
        params: &Map<String, Value>,
        extra: &[(&str, &Value)],
        call: Option<&CallEntry>,
    ) -> Result<Value, ClientError> {
        let tool_params = (method == "tools/call")
            .then(|| params.get("name").and_then(Value::as_str).and_then(|name| self.tool_params(name)))
            .flatten();
        let routing = routing_headers(method, params, tool_params.as_deref());
        let mut headers = stateless_headers(routing)?;
        let id = self.next_id();
        if let Some(call) = call {
            call.carried_by(&id);
        }
        let target = target_of(method, params);
        let op = self.client_op(method, target, &id);
        let trace = op.propagation();
        headers::trace_or(trace.as_ref(), params.get("_meta").and_then(Value::as_object), &mut headers);
        let meta = if declares_tasks(method) { &self.task_meta } else { &self.stateless_meta };
        let caller = call.and_then(|call| call.handlers.capabilities.as_deref());
        let body = meta
            .body(&id, method, params, extra, (caller, trace.as_ref()))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let passing = call.filter(|call| call.passes() && method == "tools/call").map(Passing::Result);
        let outcome = self.exchange_for(&id, body, headers, passing).await;
        let passed_error = passing.is_some() && call.is_some_and(CallEntry::passed_is_error);
        op.finish(method, target, &outcome, passed_error);
        outcome
    }

    /// Writes a gateway's plain `tools/call` of `name` ([`mcpd::catalog::ToolLane`]) for
    /// [`Link::forward`]: `meta` (the caller's trace context) in its `_meta` beside the link's
    /// members, `caller` the capabilities declared for the caller, the arguments written as
    /// they are (no params map is made for them).
    pub(crate) fn forward_request(
        &self,
        tool: &ToolName,
        arguments: &Map<String, Value>,
        meta: Option<&Map<String, Value>>,
        caller: &Value,
    ) -> Result<Forward, ClientError> {
        const METHOD: &str = "tools/call";
        let mut params = Vec::new();
        if let Some(header_params) = self.tool_params(tool.as_str()) {
            param_headers(arguments, &header_params, &mut params).map_err(ClientError::Protocol)?;
        }
        let mut headers = headers::call_routing(tool, params)?;
        headers.push(headers::version(ProtocolVersion::STATELESS));
        let id = self.next_id();
        let op = self.client_op(METHOD, Some(tool.as_str()), &id);
        let trace = op.propagation();
        headers::trace_or(trace.as_ref(), meta, &mut headers);
        let params = [("name", Param::Text(tool.as_str())), ("arguments", Param::Object(arguments))];
        let params = params.into_iter().chain(meta.map(|meta| ("_meta", Param::Object(meta))));
        let ours = if declares_tasks(METHOD) { &self.task_meta } else { &self.stateless_meta };
        let body = ours
            .body_of(&id, METHOD, params, &[], (Some(caller), trace.as_ref()))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(Forward { id, body, headers, op, tool: tool.clone() })
    }

    /// Sends a call written by [`Link::forward_request`]: one exchange under the link's time
    /// limit, no round answered here (an `input_required` result comes back as it is). The
    /// usual answer comes back as its result's text; any other as the link reads it.
    pub(crate) async fn forward(&self, request: Forward) -> Result<Forwarded, ClientError> {
        let _in_flight = self.in_flight();
        let kept = Cell::new(None);
        let timeout = self.cfg.timeout;
        let Forward { id, body, headers, op, tool } = request;
        let exchange = self.exchange_for(&id, body, headers, Some(Passing::Text(&kept)));
        let raw = actix_rt::time::timeout(timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(ClientError::Timeout(timeout.as_secs())));
        let kept = kept.take();
        let tool_error = kept.as_ref().is_some_and(PassedResult::is_error);
        op.finish("tools/call", Some(tool.as_str()), &raw, tool_error);
        Ok(match kept {
            Some(text) => Forwarded::Text(text),
            None => Forwarded::Value(raw?),
        })
    }

    /// A stateless request, with its `input_required` rounds answered by the client's
    /// handlers — the call's own when `call` has some ([`crate::client::CallHandlers::requests`]), or returned
    /// as the result when the call relays them ([`crate::client::CallHandlers::relay_input`]). A call that
    /// resumes a relayed round starts with its responses and state.
    pub(super) async fn stateless_with_input(
        &self,
        method: &str,
        params: &Map<String, Value>,
        call: Option<&CallEntry>,
    ) -> Result<Value, ClientError> {
        let handlers = call.map(|c| &c.handlers);
        let (mut responses, mut state, resumed) = match handlers.and_then(|h| h.resume.clone()) {
            Some((responses, state)) => (responses, state, true),
            None => (Value::Null, None, false),
        };
        for round in 0..MAX_INPUT_ROUNDS {
            let mut extra: Vec<(&str, &Value)> = Vec::new();
            if round > 0 || resumed {
                extra.push(("inputResponses", &responses));
            }
            if let Some(state) = &state {
                extra.push(("requestState", state));
            }
            let mut result = self.stateless_call(method, params, &extra, call).await?;
            match result.get("resultType").and_then(Value::as_str) {
                Some("input_required") if handlers.is_some_and(|h| h.relay_input) => return Ok(result),
                Some("input_required") => {}
                // Only a tools/call may become a task (the caller follows it); a task answering
                // anything else is an invalid response (the tasks extension).
                Some("task") if method != "tools/call" => {
                    return Err(ClientError::Protocol(format!(
                        "the server answered {method} with a task, which only tools/call may be"
                    )))
                }
                _ => return Ok(result),
            }
            let mut answers = Map::new();
            if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
                for (key, request) in requests {
                    let input_method = request.get("method").and_then(Value::as_str).unwrap_or_default();
                    let input_params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                    let answer = match handlers.and_then(|h| h.requests.as_ref()) {
                        Some(answer) => answer(input_method, input_params),
                        None => self.handlers.answer(input_method, input_params),
                    };
                    let answer = answer.await.map_err(|e| {
                        ClientError::Protocol(format!(
                            "cannot answer the server's {input_method} request: {}",
                            e.message
                        ))
                    })?;
                    answers.insert(key.clone(), answer);
                }
            }
            responses = Value::Object(answers);
            // Sent back byte for byte: a JSON string is re-serialized exactly as received.
            state = result.as_object_mut().and_then(|r| r.remove("requestState"));
        }
        Err(ClientError::Protocol(format!("{method} asked for input more than {MAX_INPUT_ROUNDS} times")))
    }
}

/// Whether a request declares the tasks extension: `tools/call` (a server may answer it with a
/// task) and the extension's own `tasks/*` methods.
fn declares_tasks(method: &str) -> bool {
    method == "tools/call" || method.starts_with("tasks/")
}
