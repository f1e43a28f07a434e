//! Where tasks live: the [`TaskStore`] trait and the bounded in-memory [`MemoryTaskStore`].
//!
//! The trait is shaped for a shared store as much as for memory: every operation names the task
//! by id and answers an owned value through a future (no reference into the store outlives a
//! call), the store generates ids and timestamps, and it alone enforces the caps and the time to
//! live. What cannot be shared — the running handler, its abort handle, the channel that wakes it
//! with input — stays in the runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use derive_more::{Display, Error};
use serde_json::{Map, Value};

use super::{iso8601_millis, new_task_id, now_millis, DetailedTask, Task, TaskStatus};
use crate::future::BoxFuture;

/// Why a task could not be created.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum TaskCreateError {
    /// The server holds as many tasks as it may.
    #[display("the server already holds its maximum of {limit} tasks")]
    ServerFull {
        /// The cap.
        limit: usize,
    },
    /// This client holds as many tasks as it may.
    #[display("this client already holds its maximum of {limit} tasks")]
    OwnerFull {
        /// The cap.
        limit: usize,
    },
    /// The store failed.
    #[display("task store: {_0}")]
    Store(#[error(not(source))] String),
}

/// Why a task could not be read or changed.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum TaskLookupError {
    /// No such task (or another client's).
    #[display("task not found")]
    NotFound,
    /// Its time to live is over.
    #[display("task has expired")]
    Expired,
    /// The store failed.
    #[display("task store: {_0}")]
    Store(#[error(not(source))] String),
}

/// A change of a task's state, from the runtime that runs it.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskUpdate {
    /// Working (again).
    Working {
        /// A note.
        message: Option<String>,
    },
    /// Needs input: these requests (wire keys) are outstanding, replacing any before.
    InputRequired {
        /// The requests, by key.
        requests: Map<String, Value>,
        /// A note.
        message: Option<String>,
    },
    /// Done, with the request's result.
    Completed {
        /// The result.
        result: Map<String, Value>,
    },
    /// Failed with a JSON-RPC error.
    Failed {
        /// The error object.
        error: Value,
        /// A diagnostic note.
        message: String,
    },
    /// Cancelled.
    Cancelled {
        /// Why.
        message: Option<String>,
    },
}

/// What a `tasks/update` delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    /// The answers to requests that were outstanding (others are ignored), by wire key.
    pub accepted: Map<String, Value>,
    /// How many requests are still outstanding.
    pub outstanding: usize,
    /// The task after the update.
    pub task: DetailedTask,
}

/// How many tasks the store holds, by status, and its lifetime counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCounts {
    /// Held tasks by status, in [`TaskStatus::ALL`] order.
    pub by_status: [usize; 5],
    /// Tasks created since start.
    pub created: u64,
    /// Tasks removed because their time to live ended.
    pub expired: u64,
}

impl TaskCounts {
    /// Held tasks with this status.
    pub fn with_status(&self, status: TaskStatus) -> usize {
        TaskStatus::ALL.iter().position(|s| *s == status).map(|i| self.by_status[i]).unwrap_or(0)
    }

    /// Every held task.
    pub fn held(&self) -> usize {
        self.by_status.iter().sum()
    }
}

/// Where tasks live. Every operation is a future owning its answer, so a shared store (Redis)
/// can implement it as well as memory. `owner` is the client identity the task belongs to: a
/// task is invisible (not found) to every other owner.
pub trait TaskStore: Send + Sync + 'static {
    /// Creates a `working` task for `owner`, within the caps. The task is readable (`get`) once
    /// the future resolves.
    fn create(
        &self,
        owner: &str,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
    ) -> BoxFuture<Result<Task, TaskCreateError>>;

    /// The task with what its status carries.
    fn get(&self, owner: &str, task_id: &str) -> BoxFuture<Result<DetailedTask, TaskLookupError>>;

    /// Applies a change from the runtime: the new state, or `None` when the task had already
    /// ended (a terminal state never changes).
    fn update(&self, task_id: &str, update: TaskUpdate) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>>;

    /// Records a client's answers: those for outstanding requests are accepted and their
    /// requests removed (when none remain the task is `working` again); the rest are ignored.
    fn answer(
        &self,
        owner: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> BoxFuture<Result<Answered, TaskLookupError>>;

    /// Marks a task `cancelled`: the new state, or `None` when it had already ended.
    fn cancel(&self, owner: &str, task_id: &str) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>>;

    /// Removes the tasks whose time to live is over; the ids of every task that expired since
    /// the last call (including those a lookup or a creation already removed), so the runtime
    /// can stop their work.
    fn expire(&self) -> BoxFuture<Vec<String>>;

    /// The counts.
    fn counts(&self) -> BoxFuture<TaskCounts>;

    /// What other processes sharing the store did to the tasks this process runs, since the
    /// last call: the runtime calls it periodically, stops the work of `stopped` and hands
    /// `answers` to their tasks. A process-local store has nothing to tell (the default).
    fn remote_changes(&self) -> BoxFuture<RemoteChanges> {
        ready(RemoteChanges::default())
    }
}

/// What other processes sharing a store did to this process's running tasks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteChanges {
    /// Tasks that ended elsewhere (cancelled, failed) or are gone (expired): their work stops.
    pub stopped: Vec<String>,
    /// Answers another process accepted (`tasks/update`), by task id, by wire key.
    pub answers: Vec<(String, Map<String, Value>)>,
}

/// The caps of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Tasks held at once (any status, until they expire).
    pub max_tasks: usize,
    /// Tasks held at once per owner.
    pub max_per_owner: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits { max_tasks: 1000, max_per_owner: 100 }
    }
}

/// A clock in milliseconds since the epoch (replaceable in tests).
type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

struct Entry {
    owner: String,
    task: DetailedTask,
    expires_at: Option<u64>,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Entry>,
    per_owner: HashMap<String, usize>,
    created: u64,
    expired: u64,
    /// Expired tasks removed on the way (a lookup, a creation) that [`TaskStore::expire`] has
    /// not reported yet: the runtime must still hear of them to stop their work.
    evicted: Vec<String>,
}

impl Inner {
    /// Removes every task expired at `now`, counting each, and notes it for the next sweep.
    fn remove_expired(&mut self, now: u64) {
        let expired: Vec<String> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.expires_at.is_some_and(|at| now >= at))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.evict(id);
        }
    }

    fn evict(&mut self, task_id: String) {
        if self.remove(&task_id).is_some() {
            self.expired += 1;
            self.evicted.push(task_id);
        }
    }

    fn remove(&mut self, task_id: &str) -> Option<Entry> {
        let entry = self.tasks.remove(task_id)?;
        if let Some(count) = self.per_owner.get_mut(&entry.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_owner.remove(&entry.owner);
            }
        }
        Some(entry)
    }

    /// The owner's live task; an expired one is removed and reported.
    fn live(&mut self, owner: Option<&str>, task_id: &str, now: u64) -> Result<&mut Entry, TaskLookupError> {
        let entry = self.tasks.get(task_id).ok_or(TaskLookupError::NotFound)?;
        if owner.is_some_and(|owner| owner != entry.owner) {
            return Err(TaskLookupError::NotFound);
        }
        if entry.expires_at.is_some_and(|at| now >= at) {
            self.evict(task_id.to_owned());
            return Err(TaskLookupError::Expired);
        }
        self.tasks.get_mut(task_id).ok_or(TaskLookupError::NotFound)
    }
}

/// The in-memory store: a map under one lock, capped per server and per owner; expired tasks
/// are removed when touched and by [`TaskStore::expire`] (the runtime calls it periodically).
pub struct MemoryTaskStore {
    inner: Mutex<Inner>,
    limits: StoreLimits,
    clock: Clock,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore").field("limits", &self.limits).finish_non_exhaustive()
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<T> {
    Box::pin(std::future::ready(value))
}

impl MemoryTaskStore {
    /// A store with these caps and the system clock.
    pub fn new(limits: StoreLimits) -> Self {
        MemoryTaskStore::with_clock(limits, Arc::new(now_millis))
    }

    /// A store with these caps and a clock of its own (tests).
    pub fn with_clock(limits: StoreLimits, clock: Arc<dyn Fn() -> u64 + Send + Sync>) -> Self {
        MemoryTaskStore { inner: Mutex::new(Inner::default()), limits, clock }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn create_now(&self, owner: &str, ttl_ms: Option<u64>, poll: Option<u64>) -> Result<Task, TaskCreateError> {
        let now = (self.clock)();
        let mut inner = self.lock();
        // Expired tasks do not hold a place.
        inner.remove_expired(now);
        if inner.tasks.len() >= self.limits.max_tasks {
            return Err(TaskCreateError::ServerFull { limit: self.limits.max_tasks });
        }
        if inner.per_owner.get(owner).copied().unwrap_or(0) >= self.limits.max_per_owner {
            return Err(TaskCreateError::OwnerFull { limit: self.limits.max_per_owner });
        }
        let detailed = new_working_task(now, ttl_ms, poll)?;
        let (task, task_id) = (detailed.task.clone(), detailed.task.task_id.clone());
        let expires_at = ttl_ms.map(|ttl| now.saturating_add(ttl));
        inner.tasks.insert(task_id, Entry { owner: owner.to_owned(), task: detailed, expires_at });
        *inner.per_owner.entry(owner.to_owned()).or_insert(0) += 1;
        inner.created += 1;
        Ok(task)
    }

    fn update_now(&self, task_id: &str, update: TaskUpdate) -> Result<Option<DetailedTask>, TaskLookupError> {
        let now = (self.clock)();
        let mut inner = self.lock();
        let entry = inner.live(None, task_id, now)?;
        if entry.task.task.status.is_terminal() {
            return Ok(None);
        }
        apply_update(&mut entry.task, update, now);
        Ok(Some(entry.task.clone()))
    }

    fn answer_now(
        &self,
        owner: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<Answered, TaskLookupError> {
        let now = (self.clock)();
        let mut inner = self.lock();
        let entry = inner.live(Some(owner), task_id, now)?;
        Ok(accept_answers(&mut entry.task, responses, now))
    }

    fn cancel_now(&self, owner: &str, task_id: &str) -> Result<Option<DetailedTask>, TaskLookupError> {
        let now = (self.clock)();
        let mut inner = self.lock();
        let entry = inner.live(Some(owner), task_id, now)?;
        if entry.task.task.status.is_terminal() {
            return Ok(None);
        }
        apply_update(&mut entry.task, TaskUpdate::Cancelled { message: Some("Cancelled by the client".into()) }, now);
        Ok(Some(entry.task.clone()))
    }

    fn expire_now(&self) -> Vec<String> {
        let now = (self.clock)();
        let mut inner = self.lock();
        inner.remove_expired(now);
        let expired = std::mem::take(&mut inner.evicted);
        if inner.tasks.is_empty() {
            // Give the maps' memory back once nothing is held.
            inner.tasks.shrink_to_fit();
            inner.per_owner.shrink_to_fit();
        }
        expired
    }

    fn counts_now(&self) -> TaskCounts {
        let inner = self.lock();
        let mut counts = TaskCounts { by_status: [0; 5], created: inner.created, expired: inner.expired };
        for entry in inner.tasks.values() {
            if let Some(i) = TaskStatus::ALL.iter().position(|s| *s == entry.task.task.status) {
                counts.by_status[i] += 1;
            }
        }
        counts
    }
}

/// A new `working` task created at `now` (milliseconds since the epoch) with a fresh id: what
/// every store's [`TaskStore::create`] makes.
///
/// # Errors
/// [`TaskCreateError::Store`] when the system has no randomness for the id.
pub fn new_working_task(
    now: u64,
    ttl_ms: Option<u64>,
    poll_interval_ms: Option<u64>,
) -> Result<DetailedTask, TaskCreateError> {
    let task_id = new_task_id().map_err(|e| TaskCreateError::Store(format!("no randomness for a task id: {e}")))?;
    let stamp = iso8601_millis(now);
    let task = Task {
        task_id,
        status: TaskStatus::Working,
        status_message: None,
        created_at: stamp.clone(),
        last_updated_at: stamp,
        ttl_ms,
        poll_interval_ms,
    };
    Ok(DetailedTask { task, result: None, error: None, input_requests: None })
}

/// Records a client's answers on `task` at `now` (milliseconds since the epoch): those for
/// outstanding requests are accepted and their requests removed; when none remain the task is
/// `working` again. What every store's [`TaskStore::answer`] does.
pub fn accept_answers(task: &mut DetailedTask, responses: Map<String, Value>, now: u64) -> Answered {
    let mut accepted = Map::new();
    if task.task.status == TaskStatus::InputRequired {
        if let Some(outstanding) = task.input_requests.as_mut() {
            for (key, answer) in responses {
                if outstanding.remove(&key).is_some() {
                    accepted.insert(key, answer);
                }
            }
        }
    }
    let outstanding = task.input_requests.as_ref().map_or(0, Map::len);
    if !accepted.is_empty() {
        if outstanding == 0 {
            apply_update(task, TaskUpdate::Working { message: None }, now);
        } else {
            task.task.last_updated_at = iso8601_millis(now);
        }
    }
    Answered { accepted, outstanding, task: task.clone() }
}

/// Applies `update` to a task that has not ended, at `now` (milliseconds since the epoch).
pub fn apply_update(task: &mut DetailedTask, update: TaskUpdate, now: u64) {
    task.task.last_updated_at = iso8601_millis(now);
    task.result = None;
    task.error = None;
    task.input_requests = None;
    match update {
        TaskUpdate::Working { message } => {
            task.task.status = TaskStatus::Working;
            task.task.status_message = message;
        }
        TaskUpdate::InputRequired { requests, message } => {
            task.task.status = TaskStatus::InputRequired;
            task.task.status_message = message;
            task.input_requests = Some(requests);
        }
        TaskUpdate::Completed { result } => {
            task.task.status = TaskStatus::Completed;
            task.task.status_message = None;
            task.result = Some(result);
        }
        TaskUpdate::Failed { error, message } => {
            task.task.status = TaskStatus::Failed;
            task.task.status_message = Some(message);
            task.error = Some(error);
        }
        TaskUpdate::Cancelled { message } => {
            task.task.status = TaskStatus::Cancelled;
            task.task.status_message = message;
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(
        &self,
        owner: &str,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
    ) -> BoxFuture<Result<Task, TaskCreateError>> {
        ready(self.create_now(owner, ttl_ms, poll_interval_ms))
    }

    fn get(&self, owner: &str, task_id: &str) -> BoxFuture<Result<DetailedTask, TaskLookupError>> {
        let now = (self.clock)();
        let found = self.lock().live(Some(owner), task_id, now).map(|e| e.task.clone());
        ready(found)
    }

    fn update(&self, task_id: &str, update: TaskUpdate) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>> {
        ready(self.update_now(task_id, update))
    }

    fn answer(
        &self,
        owner: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> BoxFuture<Result<Answered, TaskLookupError>> {
        ready(self.answer_now(owner, task_id, responses))
    }

    fn cancel(&self, owner: &str, task_id: &str) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>> {
        ready(self.cancel_now(owner, task_id))
    }

    fn expire(&self) -> BoxFuture<Vec<String>> {
        ready(self.expire_now())
    }

    fn counts(&self) -> BoxFuture<TaskCounts> {
        ready(self.counts_now())
    }
}
