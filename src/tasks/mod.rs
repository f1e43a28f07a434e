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

mod errors;
mod extension;
mod keys;
mod store;
mod time;
mod wire;

pub use errors::{expired, missing_extension, not_found};
pub(crate) use extension::TASKS_PATH;
pub use extension::{
    declares_tasks, TaskSupport, ToolExecution, CANCEL, GET, STATUS_NOTIFICATION, TASKS_EXTENSION, UPDATE,
};
pub use keys::{new_task_id, KeyMap};
pub use store::{
    accept_answers, apply_update, new_working_task, Answered, MemoryTaskStore, RemoteChanges, StoreLimits, TaskCounts,
    TaskCreateError, TaskLookupError, TaskStore, TaskUpdate,
};
pub use time::{iso8601_millis, now_millis};
pub use wire::{
    empty_ack, CreateTaskResult, DetailedTask, Task, TaskIdParams, TaskResultType, TaskStatus, UpdateTaskParams,
};

#[cfg(test)]
mod tests;
