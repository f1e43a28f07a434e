//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, revision 2026-07-28): a
//! `tools/call` may be answered with a task the client polls (`tasks/get`), feeds input to
//! (`tasks/update`) and cancels (`tasks/cancel`) instead of a result.
//!
//! This module holds the extension's wire types (both sides: the server writes them, the client
//! reads them), the rules that need no I/O (opt-in, key uniqueness, timestamps), and the
//! [`TaskStore`] trait with its bounded in-memory implementation ([`MemoryTaskStore`]). Running
//! a task (spawning, cancelling, timers) is the runtime's.
//!
//! | item | role |
//! |---|---|
//! | [`Task`], [`TaskStatus`] | the task as every message carries it |
//! | [`DetailedTask`] | `tasks/get` and `notifications/tasks`: the task with its `result`, `error` or `inputRequests` |
//! | [`CreateTaskResult`] | the flat `resultType: "task"` answer to a `tools/call` |
//! | [`TaskIdParams`], [`UpdateTaskParams`] | params of `tasks/get`, `tasks/cancel`, `tasks/update` |
//! | [`TaskSupport`], [`ToolExecution`] | what a tool declares (`execution.taskSupport`) |
//! | [`KeyMap`] | input-request keys unique over a task's lifetime |
//! | [`TaskStore`], [`MemoryTaskStore`] | where tasks live, bounded per server and per client |

mod store;
mod time;

pub use store::{
    accept_answers, apply_update, new_working_task, Answered, MemoryTaskStore, RemoteChanges, StoreLimits, TaskCounts,
    TaskCreateError, TaskLookupError, TaskStore, TaskUpdate,
};
pub use time::{iso8601_millis, now_millis};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::ProtocolError;

/// The extension's identifier, under `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where client capabilities declare the extension: the one path [`declares_tasks`] and the
/// parse of a request's capabilities ([`crate::jsonrpc::ClientCapabilities::declares_tasks`])
/// both follow.
pub(crate) const TASKS_PATH: [&str; 2] = ["extensions", TASKS_EXTENSION];

/// `tasks/get`.
pub const GET: &str = "tasks/get";
/// `tasks/update`.
pub const UPDATE: &str = "tasks/update";
/// `tasks/cancel`.
pub const CANCEL: &str = "tasks/cancel";
/// The task status notification (sent on `subscriptions/listen` streams that asked for it).
pub const STATUS_NOTIFICATION: &str = "notifications/tasks";

/// The status of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// Waiting for the client's answers to its `inputRequests`.
    InputRequired,
    /// Done; the result is available (a tool error is `completed` with `isError: true`).
    Completed,
    /// Cancelled before it completed.
    Cancelled,
    /// Failed with a JSON-RPC error (never a tool's own failure).
    Failed,
}

impl TaskStatus {
    /// Every status, in a fixed order (metrics, status JSON).
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Cancelled,
        TaskStatus::Failed,
    ];

    /// Whether the task has ended (completed, cancelled, failed): its state no longer changes.
    pub const fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Cancelled | TaskStatus::Failed)
    }

    /// The wire name (`input_required`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Failed => "failed",
        }
    }
}

/// A task as every message carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The server-generated identifier.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// A human-readable note on the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// Time to live from creation in milliseconds; `null` (None) for unlimited. Always written.
    pub ttl_ms: Option<u64>,
    /// How often the client should poll, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// A task with what its status carries: `tasks/get` results and `notifications/tasks` params.
/// `result` only when `completed`, `error` only when `failed`, `inputRequests` only when
/// `input_required` (the store keeps them consistent; a reader gets what the peer sent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// The final result of the request (a `CallToolResult` for a tool call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    /// The JSON-RPC error the request failed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The outstanding server-to-client requests, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
}

impl DetailedTask {
    /// The `tasks/get` result: the task with `resultType: "complete"`.
    pub fn to_get_result(&self) -> Map<String, Value> {
        let mut result = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        result.insert("resultType".into(), json!("complete"));
        result
    }

    /// The `notifications/tasks` params.
    pub fn to_notification_params(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The `resultType` of a [`CreateTaskResult`]: always `"task"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskResultType {
    /// `"task"`.
    #[default]
    #[serde(rename = "task")]
    Task,
}

/// The answer to a request the server chose to run as a task: `Result & Task`, flat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// `"task"`.
    pub result_type: TaskResultType,
    /// The task's seed state.
    #[serde(flatten)]
    pub task: Task,
}

impl CreateTaskResult {
    /// The answer announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult { result_type: TaskResultType::Task, task }
    }

    /// Reads a result object; `None` when it is not a `CreateTaskResult` (`resultType` is not
    /// `"task"`, or the task fields are missing or malformed).
    pub fn from_result(result: &Value) -> Option<Self> {
        if result.get("resultType").and_then(Value::as_str) != Some("task") {
            return None;
        }
        serde_json::from_value(result.clone()).ok()
    }
}

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
}

/// The params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// Answers to outstanding `inputRequests`, by key.
    #[serde(default)]
    pub input_responses: Map<String, Value>,
}

impl TaskIdParams {
    /// Reads the params of a `tasks/get` or `tasks/cancel` request.
    ///
    /// # Errors
    /// `-32602` when `taskId` is missing or not a string.
    pub fn parse(method: &str, params: Option<&Map<String, Value>>) -> Result<Self, ProtocolError> {
        let task_id = task_id_param(method, params)?;
        Ok(TaskIdParams { task_id })
    }
}

impl UpdateTaskParams {
    /// Reads the params of a `tasks/update` request (`inputResponses` absent: none).
    ///
    /// # Errors
    /// `-32602` when `taskId` is missing or not a string, or `inputResponses` is not an object.
    pub fn parse(params: Option<&Map<String, Value>>) -> Result<Self, ProtocolError> {
        let task_id = task_id_param(UPDATE, params)?;
        let input_responses = match params.and_then(|p| p.get("inputResponses")) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(responses)) => responses.clone(),
            Some(_) => {
                return Err(ProtocolError::InvalidParams("tasks/update inputResponses must be an object".into()))
            }
        };
        Ok(UpdateTaskParams { task_id, input_responses })
    }
}

fn task_id_param(method: &str, params: Option<&Map<String, Value>>) -> Result<String, ProtocolError> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(id)) => Ok(id.clone()),
        _ => Err(ProtocolError::InvalidParams(format!("{method} needs a string taskId"))),
    }
}

/// Whether a tool may, must or must not run as a task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task (the default, also when a tool declares nothing).
    #[default]
    Forbidden,
    /// The server may answer with a task (mcpd: when the call is still running after a while).
    Optional,
    /// Always a task: a client that did not opt in gets `-32021`.
    Required,
}

impl TaskSupport {
    /// Reads `forbidden`, `optional` or `required`.
    pub fn parse(s: &str) -> Option<TaskSupport> {
        match s {
            "forbidden" => Some(TaskSupport::Forbidden),
            "optional" => Some(TaskSupport::Optional),
            "required" => Some(TaskSupport::Required),
            _ => None,
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// A tool's `execution` member.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Its task support (absent: forbidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// Whether client capabilities (a request's `_meta["io.modelcontextprotocol/clientCapabilities"]`)
/// declare the tasks extension: `extensions["io.modelcontextprotocol/tasks"]` present and not
/// null. A legacy `tasks` capability does not count.
pub fn declares_tasks(client_capabilities: &Value) -> bool {
    TASKS_PATH.iter().try_fold(client_capabilities, |value, key| value.get(key)).is_some_and(|v| !v.is_null())
}

/// The `-32021` error of a request that needs the tasks extension the client did not declare:
/// `data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"]`.
pub fn missing_extension() -> ProtocolError {
    ProtocolError::MissingCapability { required: json!({ "extensions": { TASKS_EXTENSION: {} } }) }
}

/// The `-32602` error of an unknown task id (also one of another client's tasks).
pub fn not_found() -> ProtocolError {
    ProtocolError::InvalidParams("Failed to retrieve task: Task not found".into())
}

/// The `-32602` error of a task whose time to live is over.
pub fn expired() -> ProtocolError {
    ProtocolError::InvalidParams("Failed to retrieve task: Task has expired".into())
}

impl From<TaskLookupError> for ProtocolError {
    fn from(error: TaskLookupError) -> Self {
        match error {
            TaskLookupError::NotFound => not_found(),
            TaskLookupError::Expired => expired(),
            TaskLookupError::Store(message) => ProtocolError::Internal(format!("task store: {message}")),
        }
    }
}

/// The `tasks/update` and `tasks/cancel` acknowledgement: `{"resultType": "complete"}`.
pub fn empty_ack() -> Map<String, Value> {
    let mut ack = Map::new();
    ack.insert("resultType".into(), json!("complete"));
    ack
}

/// Input-request keys of one task: a handler names its requests (`"confirm"`), and a task must
/// never reuse a key on the wire. A key's first use is kept as it is; a later request under the
/// same handler key gets `KEY#2`, `KEY#3`, … The map translates answers back.
#[derive(Debug, Clone, Default)]
pub struct KeyMap {
    /// Wire key → handler key, every key issued so far.
    issued: Map<String, Value>,
}

impl KeyMap {
    /// A map with nothing issued.
    pub fn new() -> Self {
        KeyMap::default()
    }

    /// The wire key for a new request under `handler_key` (never one issued before).
    pub fn issue(&mut self, handler_key: &str) -> String {
        let mut wire = handler_key.to_owned();
        let mut n = 1;
        while self.issued.contains_key(&wire) {
            n += 1;
            wire = format!("{handler_key}#{n}");
        }
        self.issued.insert(wire.clone(), json!(handler_key));
        wire
    }

    /// The handler key a wire key was issued for.
    pub fn handler_key<'a>(&'a self, wire: &str) -> Option<&'a str> {
        self.issued.get(wire).and_then(Value::as_str)
    }

    /// Renames a handler's requests to fresh wire keys.
    pub fn issue_all(&mut self, requests: Map<String, Value>) -> Map<String, Value> {
        requests.into_iter().map(|(key, request)| (self.issue(&key), request)).collect()
    }

    /// Renames answers by wire key back to the handler's keys (unknown wire keys are dropped).
    pub fn to_handler_keys(&self, answers: Map<String, Value>) -> Map<String, Value> {
        answers
            .into_iter()
            .filter_map(|(wire, answer)| self.handler_key(&wire).map(|key| (key.to_owned(), answer)))
            .collect()
    }
}

/// A fresh task id: 128 random bits, hex (unguessable: ids are bearer handles to results).
///
/// # Errors
/// When the operating system has no randomness to give.
pub fn new_task_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests;
