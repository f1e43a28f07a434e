//! Stateless 2026-07-28 requests: each carries its `_meta` and routing headers (`Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*` from the tool's `x-mcp-header` parameters), over HTTP or to a
//! stdio child. A result of type `input_required` (MRTR) is completed with the client's
//! handlers and the request sent again with a new id, the answers and the server's
//! `requestState` byte for byte, for up to [`MAX_INPUT_ROUNDS`] rounds. `tools/call` and
//! `tasks/*` declare the tasks extension in their client capabilities; a task (`resultType:
//! "task"`) answering any other request is a protocol error.

use mcpd::client::request::routing_headers;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Map, Value};

use super::{headers, CallEntry, Link};
use crate::client::error::ClientError;

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
        let mut headers =
            headers::routing(routing_headers(method, params, tool_params.as_deref()).map_err(ClientError::Protocol)?)?;
        headers.push(headers::version(ProtocolVersion::STATELESS));
        headers::trace(params, &mut headers);
        let id = self.next_id();
        if let Some(call) = call {
            call.carried_by(&id);
        }
        let meta = if super::declares_tasks(method) { &self.task_meta } else { &self.stateless_meta };
        let caller = call.and_then(|call| call.handlers.capabilities.as_deref());
        let body = meta.body(&id, method, params, extra, caller).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let passing = call.filter(|call| call.passes() && method == "tools/call");
        self.exchange_for(&id, body, headers, passing).await
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
