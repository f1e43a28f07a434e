//! [`ExecutorSlot`]: a session's `ToolExecutor`, started by its first request rather than with
//! the session (most sessions are idle most of the time, and an executor is an actor of its own:
//! a task, a mailbox and their addresses), and stopped when the session ends. A request that
//! arrives after the end starts none.

use std::sync::Mutex;

use actix::Addr;

use crate::tool_executor::{StopToolExecutor, ToolExecutor};

#[derive(Debug, Default)]
enum Slot {
    /// No request has run yet.
    #[default]
    Unstarted,
    Running(Addr<ToolExecutor>),
    /// The session ended.
    Ended,
}

/// A session's executor, started on demand.
#[derive(Debug, Default)]
pub(crate) struct ExecutorSlot(Mutex<Slot>);

impl ExecutorSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The executor, started by `start` when none runs yet; `None` once the session ended.
    pub(crate) fn get_or_start(&self, start: impl FnOnce() -> Addr<ToolExecutor>) -> Option<Addr<ToolExecutor>> {
        let mut slot = self.slot();
        match &*slot {
            Slot::Running(executor) => Some(executor.clone()),
            Slot::Ended => None,
            Slot::Unstarted => {
                let executor = start();
                *slot = Slot::Running(executor.clone());
                Some(executor)
            }
        }
    }

    /// The executor, when one runs.
    pub(crate) fn running(&self) -> Option<Addr<ToolExecutor>> {
        match &*self.slot() {
            Slot::Running(executor) => Some(executor.clone()),
            Slot::Unstarted | Slot::Ended => None,
        }
    }

    /// The session ended: stops its executor (aborting what still runs) and starts no other.
    pub(crate) fn end(&self) {
        if let Slot::Running(executor) = std::mem::replace(&mut *self.slot(), Slot::Ended) {
            executor.do_send(StopToolExecutor);
        }
    }
}
