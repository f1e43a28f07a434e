//! Running tasks (the tasks extension, `io.modelcontextprotocol/tasks`): the runtime's
//! [`TaskService`] for the core.
//!
//! - A call of a tool whose task support is `optional` starts as an ordinary call; still running
//!   after `task_after_ms`, it becomes a task: the store creates it (within the caps: otherwise
//!   the call simply goes on synchronously) and the [`TaskRunner`] actor adopts the running
//!   future. A `required` tool's call becomes a task at once — unless its first poll already
//!   asks for input, which MRTR answers (`input_required`) before any task exists.
//! - The runner owns every running task (its spawn handle): `tasks/cancel` and TTL expiry abort
//!   it (dropping a command tool's future kills its process group), and so does stopping mcpd.
//! - A task's handler asking for input parks it `input_required` with the requests under keys
//!   never reused ([`KeyMap`]); `tasks/update` answers go to the store, and the accepted ones to
//!   the task through a bounded channel; when every request of the round is answered the handler
//!   runs again with the answers, exactly as a synchronous MRTR retry would.
//! - Every status change is published to the `subscriptions/listen` streams that asked for the
//!   task's id (`notifications/tasks`, a bounded broadcast).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use actix::{Actor, ActorFutureExt as _, AsyncContext as _, Context, Handler, Message, SpawnHandle, WrapFuture as _};
use futures_util::future::{select, Either};
use futures_util::FutureExt as _;
use mcpd::catalog::{BoxFuture, ToolError};
use mcpd::context::ToolContext;
use mcpd::server::{
    Method, Rerun, RunOutcome, TaskCall, TaskCallOutcome, TaskOptions, TaskService, TaskStep, MAX_INPUT_ROUNDS,
};
use mcpd::tasks::{
    empty_ack, CreateTaskResult, DetailedTask, KeyMap, MemoryTaskStore, StoreLimits, TaskCounts, TaskIdParams,
    TaskLookupError, TaskStatus, TaskStore, TaskSupport, TaskUpdate, UpdateTaskParams,
};
use mcpd::ProtocolError;
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc};

use mcpd::telemetry::semconv::Failure;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use crate::counts::{ActorCounts, ActorKind};
use crate::telemetry::{self, OperationSpan};

/// Answers delivered to one task that it has not read yet (each `tasks/update` that accepted
/// something is one message; a round has at most as many as it asked requests).
const INPUT_QUEUE: usize = 16;
/// Status changes a slow `subscriptions/listen` stream may fall behind by before it misses some
/// (it can still poll `tasks/get`).
const EVENT_QUEUE: usize = 256;
/// How often expired tasks are removed (and a running one aborted).
const SWEEP_INTERVAL: Duration = Duration::from_millis(500);
/// How many times a running task's change is written to a store that fails (a shared one).
const STORE_ATTEMPTS: u32 = 30;
/// The pause between those attempts.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// The input channel of each running task that may still ask for input, by task id.
type Inputs = Arc<Mutex<HashMap<String, mpsc::Sender<Map<String, Value>>>>>;

fn lock_inputs(inputs: &Inputs) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Map<String, Value>>>> {
    inputs.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands answers to a running task; false when its queue is full.
fn deliver(inputs: &Inputs, task_id: &str, answers: Map<String, Value>) -> bool {
    let sender = lock_inputs(inputs).get(task_id).cloned();
    sender.is_none_or(|sender| sender.try_send(answers).is_ok())
}

/// The tasks of one mcpd: the store, the runner, and the status-change broadcast.
#[derive(Clone)]
pub(crate) struct Tasks {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn TaskStore>,
    options: TaskOptions,
    runner: actix::Addr<TaskRunner>,
    /// The input channel of each running task that may still ask for input.
    inputs: Inputs,
    events: broadcast::Sender<Arc<DetailedTask>>,
    /// Cluster mode: who passes this instance's status changes to the others.
    relay: std::sync::OnceLock<Relay>,
}

/// Passes a status change on to the other instances of a cluster.
pub(crate) type Relay = Box<dyn Fn(&DetailedTask) + Send + Sync>;

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").field("options", &self.inner.options).finish_non_exhaustive()
    }
}

impl Tasks {
    /// The tasks of a server with these options, in `store` (none: in memory, with the
    /// options' caps); starts the runner actor.
    pub(crate) fn start(options: TaskOptions, counts: Arc<ActorCounts>, store: Option<Arc<dyn TaskStore>>) -> Self {
        let store = store.unwrap_or_else(|| {
            Arc::new(MemoryTaskStore::new(StoreLimits {
                max_tasks: options.max_tasks,
                max_per_owner: options.max_per_client,
            }))
        });
        let inputs = Inputs::default();
        let runner =
            TaskRunner { store: store.clone(), inputs: inputs.clone(), running: HashMap::new(), counts }.start();
        let (events, _) = broadcast::channel(EVENT_QUEUE);
        Tasks { inner: Arc::new(Inner { store, options, runner, inputs, events, relay: std::sync::OnceLock::new() }) }
    }

    /// Stops the runner: every running task is aborted.
    pub(crate) fn stop(&self) {
        self.inner.runner.do_send(StopTaskRunner);
    }

    /// The store's counts, when it can tell them at once (the memory store always can).
    pub(crate) fn counts_now(&self) -> TaskCounts {
        self.inner.store.counts().now_or_never().unwrap_or_default()
    }

    /// Cluster mode: every status change here is also given to `relay` (set once).
    pub(crate) fn set_relay(&self, relay: Relay) {
        let _ = self.inner.relay.set(relay);
    }

    /// A status change another instance made, for this instance's `subscriptions/listen` streams.
    pub(crate) fn publish_remote(&self, task: DetailedTask) {
        let _ = self.inner.events.send(Arc::new(task));
    }

    /// Status changes, for a `subscriptions/listen` stream.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<DetailedTask>> {
        self.inner.events.subscribe()
    }

    /// Whether `owner` holds a task with this id (a listen stream accepts only those).
    pub(crate) async fn owns(&self, owner: &str, task_id: &str) -> bool {
        self.inner.store.get(owner, task_id).await.is_ok()
    }

    /// The `tasks` member of the status JSON: held tasks by status, lifetime counters, settings.
    pub(crate) fn status(&self) -> Value {
        let counts = self.counts_now();
        let by_status: Map<String, Value> =
            TaskStatus::ALL.iter().map(|s| (s.as_str().to_owned(), json!(counts.with_status(*s)))).collect();
        let options = &self.inner.options;
        json!({
            "held": counts.held(),
            "byStatus": by_status,
            "created": counts.created,
            "expired": counts.expired,
            "running": self.inner.inputs().len(),
            "ttlMs": options.ttl_ms,
            "pollIntervalMs": options.poll_interval_ms,
            "taskAfterMs": options.task_after_ms,
            "maxTasks": options.max_tasks,
            "maxPerClient": options.max_per_client,
        })
    }
}

impl Inner {
    fn inputs(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<Map<String, Value>>>> {
        lock_inputs(&self.inputs)
    }

    fn publish(&self, task: DetailedTask) {
        if let Some(relay) = self.relay.get() {
            relay(&task);
        }
        // No listener is no error.
        let _ = self.events.send(Arc::new(task));
    }

    /// Applies a change of a running task and tells the listeners. A shared store that fails
    /// (Redis unreachable) is tried again for a while, so that an outcome is not lost to a
    /// short outage (the memory store never fails so).
    async fn apply(&self, task_id: &str, update: TaskUpdate) {
        for attempt in 1..=STORE_ATTEMPTS {
            match self.store.update(task_id, update.clone()).await {
                Ok(Some(task)) => return self.publish(task),
                Ok(None) => return, // it had ended (cancelled): the late outcome is dropped
                Err(TaskLookupError::Store(e)) if attempt < STORE_ATTEMPTS => {
                    log::debug!("task {task_id}: {e}; trying again in {STORE_RETRY:?}");
                    actix_rt::time::sleep(STORE_RETRY).await;
                }
                Err(TaskLookupError::Store(e)) => return log::warn!("task {task_id}: {e}; its outcome is dropped"),
                Err(e) => return log::debug!("task {task_id}: {e}; its outcome is dropped"),
            }
        }
    }
}

/// Polls `work` once: its outcome if it is ready at once.
async fn poll_once(work: &mut BoxFuture<RunOutcome>) -> Option<RunOutcome> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match work.as_mut().poll(cx) {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => None,
        })
    })
    .await
}

impl TaskService for Tasks {
    fn run_call(&self, call: TaskCall) -> BoxFuture<TaskCallOutcome> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let TaskCall { support, owner, mut first, rerun, context, .. } = call;
            match support {
                TaskSupport::Required => {
                    if let Some(outcome) = poll_once(&mut first).await {
                        if matches!(outcome, Err(ToolError::InputRequired(_))) {
                            return TaskCallOutcome::Finished(outcome);
                        }
                        first = Box::pin(std::future::ready(outcome));
                    }
                }
                _ => {
                    let after = Duration::from_millis(inner.options.task_after_ms);
                    match select(&mut first, Box::pin(actix_rt::time::sleep(after))).await {
                        Either::Left((outcome, _)) => return TaskCallOutcome::Finished(outcome),
                        Either::Right(((), _)) => {}
                    }
                }
            }
            let poll = Some(inner.options.poll_interval_ms);
            let task = match inner.store.create(&owner, inner.options.ttl_ms, poll).await {
                Ok(task) => task,
                Err(e) if support == TaskSupport::Required => {
                    return TaskCallOutcome::Refused(ProtocolError::Internal(format!(
                        "this tool runs only as a task, and no task can be created now: {e}"
                    )))
                }
                Err(e) => {
                    log::debug!("call goes on synchronously: {e}");
                    return TaskCallOutcome::Declined(first);
                }
            };
            let (tx, rx) = mpsc::channel(INPUT_QUEUE);
            inner.inputs().insert(task.task_id.clone(), tx);
            let span = task_span(&task.task_id);
            let driver = drive(inner.clone(), task.task_id.clone(), first, rerun, context, rx);
            let driver = async move {
                span.scope(driver).await;
                span.end();
            };
            inner.runner.do_send(Adopt { task_id: task.task_id.clone(), work: Box::pin(driver) });
            TaskCallOutcome::Task(CreateTaskResult::new(task))
        })
    }

    fn serve(
        &self,
        method: Method,
        params: Option<Map<String, Value>>,
        owner: Arc<str>,
    ) -> BoxFuture<Result<Map<String, Value>, ProtocolError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            match method {
                Method::TasksGet => {
                    let TaskIdParams { task_id } = TaskIdParams::parse(mcpd::tasks::GET, params.as_ref())?;
                    telemetry::links::link_task(&task_id);
                    Ok(inner.store.get(&owner, &task_id).await?.to_get_result())
                }
                Method::TasksUpdate => {
                    let UpdateTaskParams { task_id, input_responses } = UpdateTaskParams::parse(params.as_ref())?;
                    telemetry::links::link_task(&task_id);
                    let answered = inner.store.answer(&owner, &task_id, input_responses).await?;
                    if !answered.accepted.is_empty() {
                        if !deliver(&inner.inputs, &task_id, answered.accepted) {
                            log::warn!("task {task_id}: its input queue is full; answers dropped");
                        }
                        inner.publish(answered.task);
                    }
                    Ok(empty_ack())
                }
                Method::TasksCancel => {
                    let TaskIdParams { task_id } = TaskIdParams::parse(mcpd::tasks::CANCEL, params.as_ref())?;
                    telemetry::links::link_task(&task_id);
                    if let Some(task) = inner.store.cancel(&owner, &task_id).await? {
                        inner.runner.do_send(Abort { task_id: task_id.clone() });
                        inner.inputs().remove(&task_id);
                        inner.publish(task);
                    }
                    Ok(empty_ack())
                }
                _ => Err(ProtocolError::MethodNotFound { method: method.wire_name().unwrap_or_default().into() }),
            }
        })
    }
}

/// The span of a task's life (INTERNAL, `task`, `mcp.task.id`), a child of the call that
/// became the task (which is given the task's id too); its polls link to it.
fn task_span(task_id: &str) -> OperationSpan {
    OperationSpan::current().set_attribute(TASK_ID, || task_id.to_owned().into());
    let span = telemetry::child_span(SpanKind::Internal, "task", || vec![KeyValue::new(TASK_ID, task_id.to_owned())]);
    telemetry::links::remember_task(task_id, &span);
    span
}

/// `mcp.task.id`.
const TASK_ID: &str = "mcp.task.id";

/// Notes how the task ended on its span (the current one while its driver runs).
fn note_end(update: &TaskUpdate) {
    let span = OperationSpan::current();
    match update {
        TaskUpdate::Completed { .. } => span.set_attribute("mcp.task.status", || "completed".into()),
        TaskUpdate::Failed { message, .. } => {
            span.set_attribute("mcp.task.status", || "failed".into());
            span.fail(Failure::Other, message);
        }
        _ => {}
    }
}

/// Removes a task's input channel when its driver ends (or is aborted).
struct InputGuard {
    inner: Arc<Inner>,
    task_id: String,
}

impl Drop for InputGuard {
    fn drop(&mut self) {
        self.inner.inputs().remove(&self.task_id);
    }
}

/// Runs a task to its end: each run of the handler leads to a terminal state, or to input
/// requests answered through `tasks/update` and another run.
async fn drive(
    inner: Arc<Inner>,
    task_id: String,
    first: BoxFuture<RunOutcome>,
    rerun: Rerun,
    context: ToolContext,
    mut answers: mpsc::Receiver<Map<String, Value>>,
) {
    let _guard = InputGuard { inner: inner.clone(), task_id: task_id.clone() };
    let mut keys = KeyMap::new();
    let mut work = first;
    for _ in 0..=MAX_INPUT_ROUNDS {
        let (requests, state) = match TaskStep::after(work.await, &context) {
            TaskStep::Done(update) => {
                note_end(&update);
                return inner.apply(&task_id, update).await;
            }
            TaskStep::Input { requests, state } => (requests, state),
        };
        let requests = keys.issue_all(requests);
        let mut outstanding: HashSet<String> = requests.keys().cloned().collect();
        let message = Some("Waiting for input from the client".to_owned());
        inner.apply(&task_id, TaskUpdate::InputRequired { requests, message }).await;
        let mut received = Map::new();
        while !outstanding.is_empty() {
            // The channel closes when the task is cancelled or expires: nothing more to do.
            let Some(batch) = answers.recv().await else { return };
            for (key, answer) in batch {
                if outstanding.remove(&key) {
                    received.insert(key, answer);
                }
            }
        }
        work = rerun(Some(Arc::new(keys.to_handler_keys(received))), state.map(Arc::new));
    }
    let message = format!("the tool asked for input more than {MAX_INPUT_ROUNDS} times");
    let result = mcpd::model::CallToolResult::error(message);
    let result = match serde_json::to_value(result) {
        Ok(Value::Object(result)) => result,
        _ => Map::new(),
    };
    inner.apply(&task_id, TaskUpdate::Completed { result }).await;
}

/// The actor that owns every running task: it spawns their drivers, aborts them on cancel and
/// expiry (also when another instance sharing the store cancelled them, and hands them answers
/// accepted there), and aborts all of them when it stops.
pub(crate) struct TaskRunner {
    store: Arc<dyn TaskStore>,
    inputs: Inputs,
    running: HashMap<String, SpawnHandle>,
    counts: Arc<ActorCounts>,
}

impl Actor for TaskRunner {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.counts.started(ActorKind::TaskRunner);
        ctx.run_interval(SWEEP_INTERVAL, |act, ctx| {
            let sweep = act.store.expire();
            ctx.spawn(sweep.into_actor(act).map(|expired, act, ctx| {
                for task_id in expired {
                    if let Some(handle) = act.running.remove(&task_id) {
                        log::debug!("task {task_id} expired while running: aborted");
                        ctx.cancel_future(handle);
                    }
                }
            }));
            let remote = act.store.remote_changes();
            ctx.spawn(remote.into_actor(act).map(|changes, act, ctx| {
                for task_id in changes.stopped {
                    if let Some(handle) = act.running.remove(&task_id) {
                        log::debug!("task {task_id} ended elsewhere or expired while running: aborted");
                        ctx.cancel_future(handle);
                    }
                }
                for (task_id, answers) in changes.answers {
                    if !deliver(&act.inputs, &task_id, answers) {
                        log::warn!("task {task_id}: its input queue is full; relayed answers dropped");
                    }
                }
            }));
        });
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        // The context drops every spawned driver with the actor.
        self.running.clear();
        self.counts.stopped(ActorKind::TaskRunner);
    }
}

/// Run this task's driver.
#[derive(Message)]
#[rtype(result = "()")]
struct Adopt {
    task_id: String,
    work: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Handler<Adopt> for TaskRunner {
    type Result = ();

    fn handle(&mut self, msg: Adopt, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::TaskRunner);
        let task_id = msg.task_id.clone();
        let handle = ctx.spawn(msg.work.into_actor(self).map(move |(), act, _| {
            act.running.remove(&task_id);
        }));
        self.running.insert(msg.task_id, handle);
    }
}

/// Abort a running task (cancelled).
#[derive(Message)]
#[rtype(result = "()")]
struct Abort {
    task_id: String,
}

impl Handler<Abort> for TaskRunner {
    type Result = ();

    fn handle(&mut self, msg: Abort, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::TaskRunner);
        if let Some(handle) = self.running.remove(&msg.task_id) {
            ctx.cancel_future(handle);
        }
    }
}

/// Stop the runner and every task it runs.
#[derive(Message)]
#[rtype(result = "()")]
struct StopTaskRunner;

impl Handler<StopTaskRunner> for TaskRunner {
    type Result = ();

    fn handle(&mut self, _msg: StopTaskRunner, ctx: &mut Self::Context) {
        self.counts.handled(ActorKind::TaskRunner);
        actix::ActorContext::stop(ctx);
    }
}
