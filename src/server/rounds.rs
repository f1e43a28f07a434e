//! Multi round-trip requests (MRTR): running a handler until it completes, fails, or needs
//! input from the client. On the stateless wire a request that needs input is answered
//! `input_required` with a sealed `requestState`; with a peer (a session, stdio) the server asks
//! the client itself and calls the handler again.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{json, Map, Value};

use super::call_params::RoundInputs;
use super::panic::panic_message;
use super::{McpServer, Scope};
use crate::catalog::{BoxFuture, ToolError};
use crate::context::{Peer, ToolContext};
use crate::error::ProtocolError;
use crate::mrtr::InputRequired;
use crate::version::Era;

/// How many times one request may ask the client for input before it is stopped.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// What a handler's rounds serve, `METHOD:NAME` (`tools/call:echo`): a sealed `requestState`
/// is bound to it and failure messages name it. Written out only when one of those needs the
/// text, not on every call.
#[derive(Debug, Clone, Copy)]
pub(super) struct Operation<'a> {
    /// The request's method.
    pub(super) method: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub(super) name: &'a str,
}

impl std::fmt::Display for Operation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.method, self.name)
    }
}

/// How a handler's rounds ended.
pub(super) enum Rounds<T> {
    /// It produced its result.
    Complete(T),
    /// It failed (for a tool: an `isError` result).
    Failed(String),
    /// It needs input (stateless wire): the ready `input_required` result.
    InputRequired(Map<String, Value>),
}

/// Where a handler's first round starts: its context, and the client's answers and the state
/// a retried request carries back (`inputResponses`, `requestState`).
pub(super) struct RoundStart {
    base: ToolContext,
    responses: Option<Arc<Map<String, Value>>>,
    state: Option<Arc<Value>>,
}

impl McpServer {
    /// Reads the round inputs of a call: `inputResponses`, and `requestState` (verified against
    /// `operation` and `arguments`); the call's `_meta` goes into the handler's context.
    ///
    /// # Errors
    /// `-32602` for a `requestState` that is not a string or does not verify.
    pub(super) fn start_rounds(
        &self,
        scope: &Scope,
        operation: Operation<'_>,
        arguments: &Map<String, Value>,
        inputs: RoundInputs,
    ) -> Result<RoundStart, ProtocolError> {
        let responses = match inputs.input_responses {
            Some(Value::Object(responses)) => Some(Arc::new(responses)),
            _ => None,
        };
        let state = match inputs.request_state {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(Arc::new(
                self.sealer()
                    .open(scope.caller_text(), &token, &operation.to_string(), arguments)
                    .map_err(|e| ProtocolError::InvalidParams(e.to_string()))?,
            )),
            Some(_) => return Err(ProtocolError::InvalidParams("requestState must be a string".into())),
        };
        Ok(RoundStart { base: scope.context(inputs.meta), responses, state })
    }

    /// Runs a handler from `start` until it completes, fails, or (on the stateless wire) needs
    /// input: see [`McpServer::next_round`] for what happens when it asks for input.
    pub(super) async fn run_rounds<T>(
        &self,
        scope: &Scope,
        operation: Operation<'_>,
        arguments: &Map<String, Value>,
        start: RoundStart,
        call: impl Fn(ToolContext) -> BoxFuture<Result<T, ToolError>>,
    ) -> Result<Rounds<T>, ProtocolError> {
        let mut start = start;
        for _ in 0..MAX_INPUT_ROUNDS {
            let context = start.base.clone().with_input(start.responses.clone(), start.state.clone());
            let input = match AssertUnwindSafe(call(context)).catch_unwind().await {
                Ok(Ok(done)) => return Ok(Rounds::Complete(done)),
                Ok(Err(ToolError::Failed(message))) => return Ok(Rounds::Failed(message)),
                Ok(Err(ToolError::Protocol(error))) => return Err(error),
                Ok(Err(ToolError::InputRequired(input))) => input,
                Err(panic) => return Ok(Rounds::Failed(panicked(operation, &panic))),
            };
            let (peer, requests, next_state) = match self.next_round(scope, operation, arguments, &start, input)? {
                NextRound::Stop(rounds) => return Ok(rounds),
                NextRound::Ask { peer, requests, next_state } => (peer, requests, next_state),
            };
            // Boxed: asking the client is the rare path, and its state would otherwise make
            // every call's future larger.
            match Box::pin(ask_client(peer.as_ref(), requests)).await {
                Ok(answers) => start.responses = Some(Arc::new(answers)),
                Err(message) => return Ok(Rounds::Failed(message)),
            }
            start.state = next_state.map(Arc::new);
        }
        Ok(Rounds::Failed(format!("{operation} asked for input more than {MAX_INPUT_ROUNDS} times")))
    }

    /// What follows a handler's request for input ([`crate::mrtr::InputRequired`]): requests for
    /// capabilities the client did not declare are dropped (none left: `-32021`); on the
    /// stateless wire the result is `input_required` with a sealed state; with a peer (a session,
    /// stdio) the server asks the client itself and calls the handler again, at most
    /// [`MAX_INPUT_ROUNDS`] times; a session-less HTTP request cannot carry input at all.
    fn next_round<'s, T>(
        &self,
        scope: &'s Scope,
        operation: Operation<'_>,
        arguments: &Map<String, Value>,
        start: &RoundStart,
        mut input: InputRequired,
    ) -> Result<NextRound<'s, T>, ProtocolError> {
        let stateless = scope.version.era() == Era::Stateless;
        if !stateless && scope.peer.is_none() {
            return Ok(NextRound::Stop(Rounds::Failed(format!(
                "{operation} needs input from the client, which a session-less HTTP request cannot carry; \
                 use a session (-s) or the 2026-07-28 wire"
            ))));
        }
        let missing = input.retain_supported(|capability| start.base.client_supports(capability));
        if input.requests().is_empty() {
            if missing.is_empty() {
                return Err(ProtocolError::Internal(format!("{operation} asked for input but named no request")));
            }
            return Err(ProtocolError::MissingCapability { required: Value::Object(missing) });
        }
        let (requests, next_state) = input.into_parts();
        let Some(peer) = scope.peer.as_ref().filter(|_| !stateless) else {
            let mut result = Map::new();
            result.insert("resultType".into(), json!("input_required"));
            result.insert("inputRequests".into(), Value::Object(requests));
            if let Some(next_state) = next_state {
                let sealed = self.sealer().seal(scope.caller_text(), &operation.to_string(), arguments, &next_state);
                result.insert("requestState".into(), json!(sealed));
            }
            return Ok(NextRound::Stop(Rounds::InputRequired(result)));
        };
        Ok(NextRound::Ask { peer, requests, next_state })
    }
}

impl RoundStart {
    /// The handler's context without the round inputs.
    pub(super) fn base(&self) -> &ToolContext {
        &self.base
    }

    /// The first round's context: the base with the request's answers and verified state.
    pub(super) fn first_context(&self) -> ToolContext {
        self.base.clone().with_input(self.responses.clone(), self.state.clone())
    }
}

impl McpServer {
    /// The answer to a request for input on the stateless wire, outside [`McpServer::run_rounds`]
    /// (a call that may become a task asked before it did): the `input_required` result, or a
    /// tool failure's message.
    pub(super) fn stateless_input<T>(
        &self,
        scope: &Scope,
        operation: Operation<'_>,
        arguments: &Map<String, Value>,
        start: &RoundStart,
        input: InputRequired,
    ) -> Result<Rounds<T>, ProtocolError> {
        match self.next_round::<T>(scope, operation, arguments, start, input)? {
            NextRound::Stop(rounds) => Ok(rounds),
            NextRound::Ask { .. } => Err(ProtocolError::Internal(format!("{operation} asked for input over a peer"))),
        }
    }
}

/// What a handler's request for input leads to.
enum NextRound<'s, T> {
    /// The rounds end here.
    Stop(Rounds<T>),
    /// The server asks the client through `peer`, then calls the handler again.
    Ask { peer: &'s Arc<dyn Peer>, requests: Map<String, Value>, next_state: Option<Value> },
}

/// Asks the client a handler's input requests, in order: their answers by key, or the failure
/// of the first the client could not answer.
async fn ask_client(peer: &dyn Peer, requests: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut answers = Map::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let request_params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        match peer.request(&method, request_params).await {
            Ok(answer) => answers.insert(key, answer),
            Err(error) => return Err(format!("the client could not answer {method}: {}", error.message)),
        };
    }
    Ok(answers)
}

/// The failure message of a call whose code panicked. The panic hook reported it with its
/// location (the default hook, or the runtime's, which also counts it); here only the call's
/// outcome.
pub(super) fn panicked(operation: Operation<'_>, panic: &Box<dyn std::any::Any + Send>) -> String {
    let message = panic_message(panic);
    log::debug!("{operation} panicked: {message}");
    format!("{operation} failed: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_is_written_as_method_colon_name() {
        let operation = Operation { method: "tools/call", name: "echo" };
        assert_eq!(operation.to_string(), "tools/call:echo");
        assert_eq!(format!("{operation} failed"), "tools/call:echo failed");
    }
}

#[cfg(test)]
mod caller_tests {
    use std::time::Duration;

    use serde_json::{json, Map, Value};

    use crate::auth::identity::Identity;
    use crate::catalog::{Catalog, ToolError};
    use crate::jsonrpc::{Request, RequestId};
    use crate::model::{CallToolResult, Tool};
    use crate::mrtr::InputRequired;
    use crate::server::{McpServer, Scope, TimeLimit};
    use crate::version::{Era, ProtocolVersion};

    /// A tool that asks for a name in its first round and greets it in the second.
    fn server() -> McpServer {
        let mut catalog = Catalog::new();
        catalog.add_tool(
            Tool::new("greet", "Greets.", json!({"type": "object"})),
            |_a, context: crate::context::ToolContext| async move {
                match context.input_responses().and_then(|r| r.get("name")) {
                    Some(answer) => Ok(CallToolResult::text(format!("hello {}", answer["content"]["name"]))),
                    None => Err(ToolError::InputRequired(
                        InputRequired::new()
                            .elicit("name", "Your name?", json!({"type": "object"}))
                            .state(json!({"round": 1})),
                    )),
                }
            },
        );
        McpServer::new(Default::default(), catalog)
    }

    fn call(server: &McpServer, caller: Option<Identity>, extra: Map<String, Value>) -> Result<Value, Value> {
        let mut params = json!({"name": "greet", "arguments": {}});
        params.as_object_mut().unwrap().extend(extra);
        let request = Request::new(RequestId::Number(1), "tools/call", params.as_object().cloned());
        let capabilities = Some(json!({"elicitation": {}}).into());
        let scope = Scope { caller, client_capabilities: capabilities, ..Scope::new(ProtocolVersion::STATELESS) };
        let limit = TimeLimit::new(Duration::from_secs(1), std::future::pending::<()>());
        let execution = futures_util::FutureExt::now_or_never(server.execute(request, &scope, limit)).unwrap();
        execution.outcome.map(|r| r.into_value().unwrap()).map_err(|e| json!(e.to_error_object(Era::Stateless)))
    }

    /// A `requestState` is sealed for the caller that got it: another caller presenting it (a
    /// leaked round) is refused as if the state were tampered with; its own caller goes on.
    #[test]
    fn a_request_state_sealed_for_one_caller_is_tampered_for_another() {
        let server = server();
        let dev = Some(Identity::client("dev"));
        let round = call(&server, dev.clone(), Map::new()).unwrap();
        assert_eq!(round["resultType"], "input_required", "{round}");
        let mut answer = Map::new();
        answer.insert("inputResponses".into(), json!({"name": {"action": "accept", "content": {"name": "Ada"}}}));
        answer.insert("requestState".into(), round["requestState"].clone());
        for other in [Some(Identity::client("ci")), None, Some(Identity::subject(Some("https://idp"), Some("dev")))] {
            let refused = call(&server, other.clone(), answer.clone()).unwrap_err();
            let mut tampered = answer.clone();
            tampered.insert("requestState".into(), json!(format!("{}x", round["requestState"].as_str().unwrap())));
            let tampered = call(&server, other, tampered).unwrap_err();
            assert_eq!(refused, tampered, "as a tampered state");
            assert_eq!(refused["code"], -32602);
        }
        let done = call(&server, dev, answer).unwrap();
        assert_eq!(done["content"][0]["text"], "hello \"Ada\"", "{done}");
    }
}
