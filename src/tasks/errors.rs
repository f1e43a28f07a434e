//! The protocol errors of the extension: a missing opt-in (`-32021`), an unknown or expired task
//! (`-32602`), and how a store's lookup failure becomes one of them.

use serde_json::json;

use super::extension::TASKS_EXTENSION;
use super::store::TaskLookupError;
use crate::error::ProtocolError;

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
