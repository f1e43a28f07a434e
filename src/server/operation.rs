//! The operations that run catalog handlers — `tools/call`, `prompts/get`, `resources/read` —
//! and `completion/complete`: params checked, the handler found in the request's catalog
//! snapshot and run through its MRTR rounds, the outcome shaped into a result object.

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::call_params::{arguments_object, member, CallParams};
use super::reply::Reply;
use super::rounds::{Operation, Rounds};
use super::{McpServer, Scope};
use crate::catalog::{Catalog, ToolEntry};
use crate::error::ProtocolError;
use crate::model::CallToolResult;

/// The tool a `tools/call` names, when the catalog has it.
pub(super) fn named_tool<'c>(params: Option<&Map<String, Value>>, catalog: &'c Catalog) -> Option<&'c ToolEntry> {
    params.and_then(|p| member(p, "name")).and_then(Value::as_str).and_then(|name| catalog.tool(name))
}

/// The string `name` of a tool or prompt call.
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
    /// Like the other calls, it takes its params apart before its first await, so that only
    /// what the handler's rounds need is kept in its future.
    pub(super) async fn call_tool(
        &self,
        params: Map<String, Value>,
        scope: &Scope,
        tool: Option<&ToolEntry>,
    ) -> Result<Reply, ProtocolError> {
        let CallParams { target, arguments, rounds } = CallParams::take(params, "name");
        let name = name_param(target, "tools/call")?;
        let arguments = arguments_object(arguments, "tools/call")?;
        let entry = tool.ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown tool: {name}")))?;
        let operation = Operation { method: "tools/call", name: &name };
        let start = self.start_rounds(scope, operation, &arguments, rounds)?;
        let handler = &entry.handler;
        let rounds =
            self.run_rounds(scope, operation, &arguments, start, |ctx| handler.call(arguments.clone(), ctx)).await?;
        let era = scope.version.era();
        Ok(match rounds {
            Rounds::Complete(result) => Reply::tool(result, era),
            Rounds::Failed(message) => Reply::tool(CallToolResult::error(message), era),
            // Only on the stateless wire, and already `"resultType": "input_required"`.
            Rounds::InputRequired(result) => Reply::Value(Value::Object(result)),
        })
    }

    pub(super) async fn get_prompt(
        &self,
        params: Map<String, Value>,
        scope: &Scope,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let CallParams { target, arguments, rounds } = CallParams::take(params, "name");
        let name = name_param(target, "prompts/get")?;
        let entry =
            catalog.prompt(&name).ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown prompt: {name}")))?;
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
        params: Map<String, Value>,
        scope: &Scope,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ProtocolError> {
        let CallParams { target, rounds, .. } = CallParams::take(params, "uri");
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
            let prompt =
                catalog.prompt(name).ok_or_else(|| ProtocolError::InvalidParams(format!("Unknown prompt: {name}")))?;
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
