//! The operations that run catalog handlers — `tools/call`, `prompts/get`, `resources/read` —
//! and `completion/complete`: params checked, the handler found in the request's catalog
//! snapshot and run through its MRTR rounds, the outcome shaped into a result object.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::call_params::{arguments_object, member, CallParams, RoundInputs};
use super::reply::Reply;
use super::rounds::{panicked, Operation, RoundStart, Rounds};
use super::tasks::{contained, rerun_of, TaskCall, TaskCallOutcome, TaskService};
use super::{McpServer, Scope};
use crate::catalog::{BoxFuture, Catalog, LaneCall, LaneResult, ToolEntry, ToolError};
use crate::error::ProtocolError;
use crate::jsonrpc::ClientCapabilities;
use crate::model::CallToolResult;
use crate::tasks::{missing_extension, TaskSupport};
use crate::version::Era;

/// The tool a `tools/call` names, when the catalog has it.
pub(super) fn named_tool<'c>(params: Option<&Map<String, Value>>, catalog: &'c Catalog) -> Option<&'c ToolEntry> {
    params.and_then(|p| member(p, "name")).and_then(Value::as_str).and_then(|name| catalog.tool(name))
}

/// Whether a call is one a tool's lane may run: on the 2026-07-28 wire, streaming nothing
/// (no peer), with no answers to an earlier round. (That it does not become a task is the
/// caller's to check.)
fn is_plain(scope: &Scope, rounds: &RoundInputs) -> bool {
    scope.version.era() == Era::Stateless
        && scope.peer.is_none()
        && rounds.input_responses.is_none()
        && rounds.request_state.is_none()
}

/// A tool call's reply from how its rounds ended: its result, a failure as an `isError` result,
/// or (only on the stateless wire, already `"resultType": "input_required"`) its round.
fn tool_reply(rounds: Rounds<CallToolResult>, era: Era) -> Reply {
    match rounds {
        Rounds::Complete(result) => Reply::tool(result, era),
        Rounds::Failed(message) => Reply::tool(CallToolResult::error(message), era),
        Rounds::InputRequired(result) => Reply::Value(Value::Object(result)),
    }
}

/// The string `name` of a tool or prompt call.
/// The error of a `prompts/get` naming a prompt the catalog lacks (or the caller may not see).
pub(super) fn unknown_prompt(name: &str) -> ProtocolError {
    ProtocolError::InvalidParams(format!("Unknown prompt: {name}"))
}

fn name_param(target: Option<Value>, method: &str) -> Result<String, ProtocolError> {
    match target {
        Some(Value::String(name)) => Ok(name),
        _ => Err(ProtocolError::InvalidParams(format!("{method} needs a string name"))),
    }
}

fn to_object<T: Serialize>(value: &T) -> Result<Map<String, Value>, ProtocolError> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProtocolError::Internal("result is not an object".into())),
        Err(e) => Err(ProtocolError::Internal(e.to_string())),
    }
}

/// The result object of a handler's rounds: its result, its `input_required` result, or what
/// `failed` makes of its failure (a tool's is an `isError` result, anything else's `-32603`).
fn result_of<T: Serialize>(
    rounds: Rounds<T>,
    failed: fn(String) -> Result<Map<String, Value>, ProtocolError>,
) -> Result<Map<String, Value>, ProtocolError> {
    match rounds {
        Rounds::Complete(result) => to_object(&result),
        Rounds::Failed(message) => failed(message),
        Rounds::InputRequired(result) => Ok(result),
    }
}

fn internal(message: String) -> Result<Map<String, Value>, ProtocolError> {
    Err(ProtocolError::Internal(message))
}

impl McpServer {
    /// `tools/call` of `tool` (resolved by the caller from the same catalog snapshot, so the
    /// metrics can label the call without a second lookup): the tool's result, shaped for the
    /// scope's era and kept typed until it is written out (a tool result has no caching hints).
    ///
    /// Like the other calls, it gets its params already taken apart ([`CallParams::take`]), so
    /// that only what the handler's rounds need is kept in its future.
    pub(super) async fn call_tool(
        &self,
        call: CallParams,
        scope: &Scope,
        tool: Option<&ToolEntry>,
    ) -> Result<Reply, ProtocolError> {
        let CallParams { target, arguments, rounds } = call;
        let name = name_param(target, "tools/call")?;
        let arguments = arguments_object(arguments, "tools/call")?;
        let entry = tool.ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown tool: {name}")))?;
        let operation = Operation { method: "tools/call", name: &name };
        let task_service = self.task_eligible(scope, entry)?;
        if let Some(lane) = entry.lane.as_ref().filter(|_| task_service.is_none() && is_plain(scope, &rounds)) {
            let call =
                LaneCall { meta: rounds.meta.as_deref(), client_capabilities: scope.client_capabilities.as_ref() };
            let started = std::panic::catch_unwind(AssertUnwindSafe(|| lane.start(&arguments, &call)));
            match started {
                Ok(Some(started)) => {
                    if let Some(reply) = self.lane_call(scope, operation, &arguments, &rounds, started).await {
                        return reply;
                    }
                }
                Ok(None) => {}
                Err(panic) => return Ok(tool_reply(Rounds::Failed(panicked(operation, &panic)), Era::Stateless)),
            }
        }
        let start = self.start_rounds(scope, operation, &arguments, rounds)?;
        if let Some(service) = task_service {
            return Box::pin(self.call_as_task(service, scope, operation, arguments, start, entry)).await;
        }
        let handler = &entry.handler;
        let rounds =
            self.run_rounds(scope, operation, &arguments, start, |ctx| handler.call(arguments.clone(), ctx)).await?;
        Ok(tool_reply(rounds, scope.version.era()))
    }

    /// A plain call run by its tool's lane ([`crate::catalog::ToolLane`]): its result, or what
    /// the handler's rounds would make of the same outcome — a failure is an `isError` result,
    /// a request for input this call's own `input_required` round; `None` when the lane gave
    /// the call back ([`LaneResult::Declined`]).
    async fn lane_call(
        &self,
        scope: &Scope,
        operation: Operation<'_>,
        arguments: &Map<String, Value>,
        inputs: &RoundInputs,
        call: BoxFuture<Result<LaneResult, ToolError>>,
    ) -> Option<Result<Reply, ProtocolError>> {
        let outcome = match AssertUnwindSafe(call).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(panic) => return Some(Ok(tool_reply(Rounds::Failed(panicked(operation, &panic)), Era::Stateless))),
        };
        let rounds = match outcome {
            Ok(LaneResult::Passed(result)) => return Some(Ok(Reply::Passed(result))),
            Ok(LaneResult::Result(result)) => Rounds::Complete(result),
            Ok(LaneResult::Declined) => return None,
            Err(ToolError::Failed(message)) => Rounds::Failed(message),
            Err(ToolError::Protocol(error)) => return Some(Err(error)),
            Err(ToolError::InputRequired(input)) => {
                // A plain call carries no round inputs: only its `_meta` goes into the context.
                let inputs = RoundInputs { meta: inputs.meta.clone(), ..RoundInputs::default() };
                let rounds = self
                    .start_rounds(scope, operation, arguments, inputs)
                    .and_then(|start| self.stateless_input(scope, operation, arguments, &start, input));
                match rounds {
                    Ok(rounds) => rounds,
                    Err(error) => return Some(Err(error)),
                }
            }
        };
        Some(Ok(tool_reply(rounds, Era::Stateless)))
    }

    /// The task service, when this call may become a task: the 2026-07-28 wire, a tool whose
    /// task support is not `forbidden`, a client that declared the extension on this request.
    ///
    /// # Errors
    /// `-32021` naming the extension for a tool that requires tasks, when the client did not
    /// declare it.
    fn task_eligible(&self, scope: &Scope, entry: &ToolEntry) -> Result<Option<&Arc<dyn TaskService>>, ProtocolError> {
        if scope.version.era() != Era::Stateless {
            return Ok(None);
        }
        let Some(service) = self.task_service() else { return Ok(None) };
        let support = entry.definition.task_support();
        if support == TaskSupport::Forbidden {
            return Ok(None);
        }
        if !scope.client_capabilities.as_ref().is_some_and(ClientCapabilities::declares_tasks) {
            return match support {
                TaskSupport::Required => Err(missing_extension()),
                _ => Ok(None),
            };
        }
        Ok(Some(service))
    }

    /// A call that may become a task: its first run starts here and the runtime decides; until
    /// it is a task, input requests are MRTR's (`input_required`), like any stateless call.
    async fn call_as_task(
        &self,
        service: &Arc<dyn TaskService>,
        scope: &Scope,
        operation: Operation<'_>,
        arguments: Map<String, Value>,
        start: RoundStart,
        entry: &ToolEntry,
    ) -> Result<Reply, ProtocolError> {
        let name: Arc<str> = Arc::from(entry.definition.name.as_str());
        let first = contained(name.clone(), entry.handler.call(arguments.clone(), start.first_context()));
        let rerun = rerun_of(entry.handler.clone(), arguments.clone(), start.base().clone(), name);
        let call = TaskCall {
            support: entry.definition.task_support(),
            owner: scope.task_owner(),
            tool: entry.definition.clone(),
            first,
            rerun,
            context: start.base().clone(),
        };
        let outcome = match service.run_call(call).await {
            TaskCallOutcome::Task(created) => {
                let value = serde_json::to_value(created).map_err(|e| ProtocolError::Internal(e.to_string()))?;
                return Ok(Reply::Value(value));
            }
            TaskCallOutcome::Refused(error) => return Err(error),
            TaskCallOutcome::Finished(outcome) => outcome,
            TaskCallOutcome::Declined(rest) => rest.await,
        };
        let era = scope.version.era();
        let rounds = match outcome {
            Ok(result) => Rounds::Complete(result),
            Err(ToolError::Failed(message)) => Rounds::Failed(message),
            Err(ToolError::Protocol(error)) => return Err(error),
            Err(ToolError::InputRequired(input)) => {
                self.stateless_input(scope, operation, &arguments, &start, input)?
            }
        };
        Ok(tool_reply(rounds, era))
    }

    pub(super) async fn get_prompt(
        &self,
        call: CallParams,
        scope: &Scope,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let CallParams { target, arguments, rounds } = call;
        let name = name_param(target, "prompts/get")?;
        let entry = catalog.prompt(&name).ok_or_else(|| unknown_prompt(&name))?;
        let arguments = arguments_object(arguments, "prompts/get")?;
        for argument in &entry.definition.arguments {
            if argument.required == Some(true) && !arguments.contains_key(&argument.name) {
                return Err(ProtocolError::InvalidParams(format!("prompt {name} needs argument {}", argument.name)));
            }
        }
        let operation = Operation { method: "prompts/get", name: &name };
        let start = self.start_rounds(scope, operation, &arguments, rounds)?;
        let handler = &entry.handler;
        let rounds =
            self.run_rounds(scope, operation, &arguments, start, |ctx| handler.call(arguments.clone(), ctx)).await?;
        result_of(rounds, internal)
    }

    pub(super) async fn read_resource(
        &self,
        call: CallParams,
        scope: &Scope,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let CallParams { target, rounds, .. } = call;
        let uri = match target {
            Some(Value::String(uri)) => uri,
            _ => return Err(ProtocolError::InvalidParams("resources/read needs a string uri".into())),
        };
        let (handler, variables) =
            catalog.resolve_resource(&uri).ok_or_else(|| ProtocolError::ResourceNotFound { uri: uri.to_owned() })?;
        let operation = Operation { method: "resources/read", name: &uri };
        let no_arguments = Map::new();
        let start = self.start_rounds(scope, operation, &no_arguments, rounds)?;
        let rounds = self
            .run_rounds(scope, operation, &no_arguments, start, |ctx| handler.read(uri.clone(), variables.clone(), ctx))
            .await?;
        match rounds {
            Rounds::Complete(result) if result.contents.is_empty() => Err(ProtocolError::ResourceNotFound { uri }),
            rounds => result_of(rounds, internal),
        }
    }
}

/// `completion/complete`: the catalog's completer asked for values of a prompt argument or a
/// resource template variable (at most 100, with the total).
pub(super) fn complete(params: &Map<String, Value>, catalog: &Catalog) -> Result<Map<String, Value>, ProtocolError> {
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| ProtocolError::InvalidParams("completion/complete needs a ref object".into()))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| ProtocolError::InvalidParams("completion/complete needs an argument object".into()))?;
    let arg_name = argument.get("name").and_then(Value::as_str).unwrap_or_default();
    let prefix = argument.get("value").and_then(Value::as_str).unwrap_or_default();
    let completer = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            let prompt = catalog.prompt(name).ok_or_else(|| unknown_prompt(name))?;
            if !prompt.definition.arguments.iter().any(|a| a.name == arg_name) {
                return Err(ProtocolError::InvalidParams(format!("prompt {name} has no argument {arg_name}")));
            }
            catalog.completer()
        }
        Some("ref/resource") => catalog.completer(),
        _ => return Err(ProtocolError::InvalidParams("ref.type must be ref/prompt or ref/resource".into())),
    };
    let mut values = completer.map(|c| c(reference, arg_name, prefix)).unwrap_or_default();
    let total = values.len();
    values.truncate(100);
    let mut result = Map::new();
    result.insert("completion".into(), json!({ "values": values, "total": total, "hasMore": total > values.len() }));
    Ok(result)
}
