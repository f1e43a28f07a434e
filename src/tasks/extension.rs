//! The extension itself: its identifier, its method names, how a client declares it in its
//! capabilities and how a tool declares whether it runs as a task (`execution.taskSupport`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
