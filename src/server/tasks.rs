//! The server's side of the tasks extension without I/O: which `tools/call` may become a task,
//! what the runtime gets to run it ([`TaskCall`]), what each outcome of the handler makes of
//! the task ([`TaskStep`]), and the `tasks/*` requests handed to the runtime's [`TaskService`].
//!
//! The runtime decides *when* (a timer, the caps) and owns the running work; the core keeps the
//! rules: the opt-in, `-32021`, MRTR before the task exists (the first round's `InputRequired`
//! is an ordinary `input_required` answer), input requests filtered by the client's declared
//! capabilities, a tool's failure as `completed` + `isError`, a protocol error as `failed`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{Map, Value};

use super::method::Method;
use super::panic::panic_message;
use crate::catalog::{BoxFuture, ToolError, ToolHandler};
use crate::context::ToolContext;
use crate::error::ProtocolError;
use crate::model::{CallToolResult, Tool};
use crate::mrtr::InputRequired;
use crate::tasks::{CreateTaskResult, TaskSupport, TaskUpdate};
use crate::version::Era;

/// The identity tasks belong to when a request carries none (no API key, no OAuth subject).
pub const ANONYMOUS_OWNER: &str = "anonymous";

/// The outcome of one run of a tool's handler.
pub type RunOutcome = Result<CallToolResult, ToolError>;

/// Runs the handler again with the answers to its last input requests (by its own keys) and the
/// state it attached to them.
pub type Rerun =
    Arc<dyn Fn(Option<Arc<Map<String, Value>>>, Option<Arc<Value>>) -> BoxFuture<RunOutcome> + Send + Sync>;

/// A `tools/call` that may become a task: the handler's first run, already started (its
/// inputs are the request's own `inputResponses` / `requestState`), and how to run it again.
pub struct TaskCall {
    /// The tool's task support (`Optional` or `Required`).
    pub support: TaskSupport,
    /// The client identity the task will belong to.
    pub owner: Arc<str>,
    /// The tool.
    pub tool: Arc<Tool>,
    /// The first run (a panic in it is a tool failure).
    pub first: BoxFuture<RunOutcome>,
    /// Later runs (a panic in them is a tool failure).
    pub rerun: Rerun,
    /// The handler's context, for the client's declared capabilities.
    pub context: ToolContext,
}

impl std::fmt::Debug for TaskCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskCall")
            .field("support", &self.support)
            .field("tool", &self.tool.name)
            .finish_non_exhaustive()
    }
}

/// What the runtime made of a [`TaskCall`].
pub enum TaskCallOutcome {
    /// The call ended before it became a task: its outcome, answered as if synchronous (an
    /// `InputRequired` becomes the `input_required` answer of MRTR).
    Finished(RunOutcome),
    /// It is a task now (readable by `tasks/get`).
    Task(CreateTaskResult),
    /// It could not become a task and cannot run without one (a required tool over the caps).
    Refused(ProtocolError),
    /// It could not become a task (the caps) and runs on synchronously: the rest of its run.
    Declined(BoxFuture<RunOutcome>),
}

impl std::fmt::Debug for TaskCallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskCallOutcome::Finished(outcome) => f.debug_tuple("Finished").field(outcome).finish(),
            TaskCallOutcome::Task(task) => f.debug_tuple("Task").field(task).finish(),
            TaskCallOutcome::Refused(error) => f.debug_tuple("Refused").field(error).finish(),
            TaskCallOutcome::Declined(_) => f.write_str("Declined(..)"),
        }
    }
}

/// The runtime's part of the tasks extension: running calls as tasks, and `tasks/*`.
pub trait TaskService: Send + Sync + std::fmt::Debug + 'static {
    /// Runs a task-eligible call: it either finishes first, or becomes a task.
    fn run_call(&self, call: TaskCall) -> BoxFuture<TaskCallOutcome>;

    /// Serves `tasks/get`, `tasks/update` or `tasks/cancel` for `owner` (the client declared the
    /// extension): the result object, `resultType` included.
    fn serve(
        &self,
        method: Method,
        params: Option<Map<String, Value>>,
        owner: Arc<str>,
    ) -> BoxFuture<Result<Map<String, Value>, ProtocolError>>;
}

/// Runs a handler's future with a panic made a tool failure (as synchronous calls do).
pub(super) fn contained(name: Arc<str>, work: BoxFuture<RunOutcome>) -> BoxFuture<RunOutcome> {
    Box::pin(async move {
        match AssertUnwindSafe(work).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(panic) => Err(ToolError::Failed(format!("tools/call:{name} failed: {}", panic_message(&panic)))),
        }
    })
}

/// The [`Rerun`] of a handler with its arguments and base context.
pub(super) fn rerun_of(
    handler: Arc<ToolHandler>,
    arguments: Map<String, Value>,
    base: ToolContext,
    name: Arc<str>,
) -> Rerun {
    Arc::new(move |answers, state| {
        let context = base.clone().with_input(answers, state);
        contained(name.clone(), handler.call(arguments.clone(), context))
    })
}

/// What a run of a task's handler leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskStep {
    /// The task ends in this state.
    Done(TaskUpdate),
    /// The task needs these requests answered (by the handler's keys; only those the client
    /// declared the capability for), then a run with the answers and `state`.
    Input {
        /// The requests.
        requests: Map<String, Value>,
        /// The state for the next run.
        state: Option<Value>,
    },
}

impl TaskStep {
    /// The step after a run that ended with `outcome`: a result is `completed` (a tool failure
    /// too, as an `isError` result), a protocol error `failed`, a request for input `Input` —
    /// or `failed` with `-32021` when the client declared none of the capabilities it needs.
    pub fn after(outcome: RunOutcome, context: &ToolContext) -> TaskStep {
        let result = match outcome {
            Ok(result) => result,
            Err(ToolError::Failed(message)) => CallToolResult::error(message),
            Err(ToolError::Protocol(error)) => return TaskStep::failed(&error),
            Err(ToolError::InputRequired(input)) => return TaskStep::input(input, context),
        };
        match serde_json::to_value(&result) {
            Ok(Value::Object(result)) => TaskStep::Done(TaskUpdate::Completed { result }),
            _ => TaskStep::failed(&ProtocolError::Internal("the tool's result is not an object".into())),
        }
    }

    /// The `failed` step of a protocol error.
    pub fn failed(error: &ProtocolError) -> TaskStep {
        let object = error.to_error_object(Era::Stateless);
        let message = format!("Tool execution failed: {}", object.message);
        let error = serde_json::to_value(&object).unwrap_or(Value::Null);
        TaskStep::Done(TaskUpdate::Failed { error, message })
    }

    fn input(mut input: InputRequired, context: &ToolContext) -> TaskStep {
        let missing = input.retain_supported(|capability| context.client_supports(capability));
        if input.requests().is_empty() {
            let error = if missing.is_empty() {
                ProtocolError::Internal("the tool asked for input but named no request".into())
            } else {
                ProtocolError::MissingCapability { required: Value::Object(missing) }
            };
            return TaskStep::failed(&error);
        }
        let (requests, state) = input.into_parts();
        TaskStep::Input { requests, state }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::ProtocolVersion;
    use serde_json::json;

    fn context(capabilities: Value) -> ToolContext {
        ToolContext::new(ProtocolVersion::STATELESS).with_client_capabilities(Some(capabilities.into()))
    }

    #[test]
    fn a_tool_failure_completes_and_a_protocol_error_fails() {
        let ctx = context(json!({}));
        let TaskStep::Done(TaskUpdate::Completed { result }) = TaskStep::after(Err(ToolError::failed("nope")), &ctx)
        else {
            panic!("a tool failure completes")
        };
        assert_eq!(result["isError"], true);
        assert_eq!(result["content"][0]["text"], "nope");
        let step = TaskStep::after(Err(ToolError::Protocol(ProtocolError::Internal("boom".into()))), &ctx);
        let TaskStep::Done(TaskUpdate::Failed { error, message }) = step else { panic!("a protocol error fails") };
        assert_eq!(error, json!({"code": -32603, "message": "Internal error: boom"}));
        assert_eq!(message, "Tool execution failed: Internal error: boom");
    }

    #[test]
    fn input_requests_keep_only_what_the_client_supports() {
        let input = InputRequired::new()
            .elicit("name", "Name?", json!({"type": "object"}))
            .sample("s", json!({"messages": []}))
            .state(json!({"round": 1}));
        let step = TaskStep::after(Err(input.clone().into()), &context(json!({"elicitation": {}})));
        let TaskStep::Input { requests, state } = step else { panic!("input") };
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["name"]);
        assert_eq!(state, Some(json!({"round": 1})));
        let step = TaskStep::after(Err(input.into()), &context(json!({})));
        let TaskStep::Done(TaskUpdate::Failed { error, .. }) = step else { panic!("nothing to ask") };
        assert_eq!(error["code"], -32021);
    }
}
