//! What a handler is and how it fails: [`ArgumentsHandler`] (tools and prompts),
//! [`ResourceHandler`], a tool's [`ToolLane`] for its plain calls, and [`ToolError`].
//!
//! Handlers are plain async closures; nothing here depends on a runtime.

use std::fmt;
use std::future::Future;

use derive_more::{Display, Error, From};
use serde_json::{Map, Value};

use crate::context::ToolContext;
use crate::error::ProtocolError;
use crate::future::BoxFuture;
use crate::jsonrpc::{ClientCapabilities, RequestMeta};
use crate::model::{CallToolResult, GetPromptResult, PassedResult, ReadResourceResult};
use crate::mrtr::InputRequired;

/// Why a handler failed.
#[derive(Debug, Clone, PartialEq, Display, Error, From)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed; the text is shown to the model (`isError: true`).
    #[display("{_0}")]
    #[from(ignore)]
    Failed(#[error(not(source))] String),
    /// The request cannot be served at the protocol level (becomes a JSON-RPC error).
    #[display("{_0}")]
    Protocol(ProtocolError),
    /// The handler needs input from the client first (MRTR): on the stateless wire this becomes
    /// an `input_required` result; in a session the server asks the client and calls again.
    #[display("input required from the client")]
    InputRequired(#[error(not(source))] InputRequired),
}

impl ToolError {
    /// A tool failure with a message.
    pub fn failed(message: impl fmt::Display) -> Self {
        ToolError::Failed(message.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_owned())
    }
}

/// Runs a tool (`T` = [`CallToolResult`]) or renders a prompt (`T` = [`GetPromptResult`]):
/// the arguments in (an object; `{}` when the client sent none), `T` or a [`ToolError`] out.
/// Any `Fn(Map<String, Value>, ToolContext) -> impl Future<Output = Result<T, ToolError>>` is one.
pub trait ArgumentsHandler<T>: Send + Sync + 'static {
    /// Runs with the given arguments (a prompt's required ones are checked before the call).
    fn call(&self, arguments: Map<String, Value>, context: ToolContext) -> BoxFuture<Result<T, ToolError>>;
}

impl<F, Fut, T> ArgumentsHandler<T> for F
where
    F: Fn(Map<String, Value>, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send + 'static,
{
    fn call(&self, arguments: Map<String, Value>, context: ToolContext) -> BoxFuture<Result<T, ToolError>> {
        Box::pin(self(arguments, context))
    }
}

/// Runs a tool.
pub type ToolHandler = dyn ArgumentsHandler<CallToolResult>;

/// A second way to run a tool, for its plain calls: a call on the 2026-07-28 wire that streams
/// nothing (no progress token, no log level), carries no answers to an earlier round
/// (`inputResponses`, `requestState`) and does not become a task. Such a call is started here
/// instead of through the tool's handler; whatever the lane does not take runs the handler.
///
/// A gateway's tools have one: the call goes to the remote without a context being made for
/// it, and the remote's usual answer is passed on as the text it came as ([`LaneResult::Passed`]).
pub trait ToolLane: Send + Sync + 'static {
    /// Starts a plain call with `arguments` (read here: the future does not borrow them), or
    /// `None` when this call is not the lane's to run (the handler runs it).
    fn start(
        &self,
        arguments: &Map<String, Value>,
        call: &LaneCall<'_>,
    ) -> Option<BoxFuture<Result<LaneResult, ToolError>>>;
}

/// What a [`ToolLane`] is told of a plain call besides its arguments.
#[derive(Debug, Clone, Copy)]
pub struct LaneCall<'a> {
    /// The request's `_meta` (the HTTP edge puts the W3C trace context there).
    pub meta: Option<&'a RequestMeta>,
    /// The capabilities the client declared on this request.
    pub client_capabilities: Option<&'a ClientCapabilities>,
}

/// What a [`ToolLane`]'s call came to.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneResult {
    /// A result as the JSON text another server sent, passed on as it is.
    Passed(PassedResult),
    /// A result, written out as the handler's are.
    Result(CallToolResult),
    /// The call given back unserved — its attempt was refused before it was processed, in a way
    /// only the handler's way answers (a gateway's `401` that the remote's connection answers
    /// with OAuth): the tool's handler runs it.
    Declined,
}

/// Renders a prompt.
pub type PromptHandler = dyn ArgumentsHandler<GetPromptResult>;

/// The variables a URI matched in a resource template (empty for a plain resource).
pub type UriVariables = Vec<(String, String)>;

/// Reads a resource.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads `uri`; for a template, `variables` holds what the URI matched.
    fn read(
        &self,
        uri: String,
        variables: UriVariables,
        context: ToolContext,
    ) -> BoxFuture<Result<ReadResourceResult, ToolError>>;
}

impl<F, Fut> ResourceHandler for F
where
    F: Fn(String, UriVariables, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ToolError>> + Send + 'static,
{
    fn read(
        &self,
        uri: String,
        variables: UriVariables,
        context: ToolContext,
    ) -> BoxFuture<Result<ReadResourceResult, ToolError>> {
        Box::pin(self(uri, variables, context))
    }
}
