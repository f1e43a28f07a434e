//! The extension's messages as they cross the wire, on both sides: the task and its status, the
//! `tasks/get` detail, the `resultType: "task"` answer, the params of `tasks/get`,
//! `tasks/cancel` and `tasks/update`, and their acknowledgement.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::extension::UPDATE;
use crate::error::ProtocolError;

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

/// The `tasks/update` and `tasks/cancel` acknowledgement: `{"resultType": "complete"}`.
pub fn empty_ack() -> Map<String, Value> {
    let mut ack = Map::new();
    ack.insert("resultType".into(), json!("complete"));
    ack
}
