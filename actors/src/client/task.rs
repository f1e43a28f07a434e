//! Following a task (the tasks extension, `io.modelcontextprotocol/tasks`, 2026-07-28): a
//! `tools/call` the server answered with a `CreateTaskResult` is polled with `tasks/get` at the
//! server's `pollIntervalMs` (clamped), its input requests are answered by the client's handlers
//! (the same as elicitation, sampling and roots anywhere else) with `tasks/update`, each key
//! once, and its terminal status becomes the call's outcome: `completed` its result, `failed`
//! the JSON-RPC error, `cancelled` a [`ClientError::Task`]. The rules are the core's
//! ([`mcpd::client::task::TaskWatch`]); this module sends the requests and keeps the time.
//!
//! Each status the client learns (the seed, then every change of status or message) reaches the
//! handlers' notification hook as `notifications/tasks` with the task, as if the server had
//! pushed it: that is how a caller shows progress.
//!
//! The wait is bounded by the link's `task_wait`. A caller that gives up — its cancel signal
//! fires, its future is dropped, the wait limit passes, or the call fails on an answer it
//! cannot follow — leaves a task that may still run: it is cancelled with `tasks/cancel`, in the
//! background, under the link's time limit (never `notifications/cancelled`, which the
//! extension forbids for tasks).

use std::cell::Cell;
use std::rc::Rc;

use mcpd::client::task::{poll_interval, InputRequest, Next, TaskWatch, MAX_CONSECUTIVE_POLL_FAILURES};
use mcpd::jsonrpc::ErrorCode;
use mcpd::tasks::{self, CreateTaskResult, DetailedTask};
use serde::Deserialize as _;
use serde_json::{Map, Value};

use super::error::ClientError;
use super::link::{CancelSignal, Link};
use crate::panics::{self, Site};

/// Waits for the task a request was answered with: its final result (a tool call's
/// `CallToolResult`, a tool error included).
///
/// # Errors
/// The task's JSON-RPC error when it failed; [`ClientError::Task`] when it was cancelled, is no
/// longer known, or outlived the wait; [`ClientError::Cancelled`] when `cancel` fires; the
/// failures of the polls themselves (after [`MAX_CONSECUTIVE_POLL_FAILURES`] transport failures
/// in a row).
pub(crate) async fn wait(
    link: &Rc<Link>,
    created: CreateTaskResult,
    cancel: Option<CancelSignal>,
) -> Result<Map<String, Value>, ClientError> {
    let (watch, first) = TaskWatch::new(&created);
    let task_id = watch.task_id().to_owned();
    if let Some(hook) = &link.handlers().notifications {
        // The notification hook hears every status the client learns, the seed first.
        hook(link.name(), tasks::STATUS_NOTIFICATION, &serde_json::to_value(&created.task).unwrap_or_default());
    }
    let guard = CancelOnDrop { link: link.clone(), task_id: task_id.clone(), armed: Cell::new(true) };
    let limit = link.config().task_wait;
    let cancelled = async move {
        match cancel {
            Some(signal) => {
                let _ = signal.await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        outcome = actix_rt::time::timeout(limit, follow(link, watch, first, &guard)) => match outcome {
            Ok(outcome) => outcome,
            Err(_) => Err(ClientError::Task {
                task_id,
                reason: format!("did not finish within the task wait limit ({} s); it was cancelled", limit.as_secs()),
            }),
        },
        () = cancelled => Err(ClientError::Cancelled),
    }
    // `guard` drops here: a task that did not end is cancelled.
}

/// The poll loop, from the first step to a terminal status.
async fn follow(
    link: &Rc<Link>,
    mut watch: TaskWatch,
    mut next: Next,
    guard: &CancelOnDrop,
) -> Result<Map<String, Value>, ClientError> {
    let task_id = watch.task_id().to_owned();
    let mut failures = 0;
    loop {
        next = match next {
            Next::Poll(after) => {
                if !after.is_zero() {
                    actix_rt::time::sleep(after).await;
                }
                let polled = match link.request(tasks::GET, task_params(&task_id)).await {
                    Ok(polled) => polled,
                    Err(error) if passing(&error) && failures < MAX_CONSECUTIVE_POLL_FAILURES => {
                        failures += 1;
                        log::debug!("{}: polling task {task_id} failed ({error}); polling again", link.name());
                        next = Next::Poll(poll_interval(None));
                        continue;
                    }
                    Err(error) => return Err(lost(guard, error)),
                };
                failures = 0;
                let task = DetailedTask::deserialize(&polled)
                    .map_err(|e| ClientError::Protocol(format!("the tasks/get result is not a task: {e}")))?;
                let observed = watch.observe(task).map_err(|e| ClientError::Protocol(e.to_string()))?;
                if observed.news {
                    if let Some(hook) = &link.handlers().notifications {
                        hook(link.name(), tasks::STATUS_NOTIFICATION, &polled);
                    }
                }
                observed.next
            }
            Next::Answer { requests, then } => {
                let responses = answer(link, requests).await?;
                let mut params = task_params(&task_id);
                params.insert("inputResponses".into(), Value::Object(responses));
                link.request(tasks::UPDATE, params).await.map_err(|error| lost(guard, error))?;
                Next::Poll(then)
            }
            Next::Completed(result) => {
                guard.disarm();
                return Ok(result);
            }
            Next::Failed(error) => {
                guard.disarm();
                return Err(ClientError::from_error_object(&error, 200));
            }
            Next::Cancelled(message) => {
                guard.disarm();
                let reason = match message {
                    Some(message) => format!("was cancelled: {}", printable(&message)),
                    None => "was cancelled".to_owned(),
                };
                return Err(ClientError::Task { task_id, reason });
            }
        };
    }
}

/// The answers of the client's handlers to a task's new input requests, by key.
async fn answer(link: &Link, requests: Vec<InputRequest>) -> Result<Map<String, Value>, ClientError> {
    let mut responses = Map::new();
    for InputRequest { key, method, params } in requests {
        let response = link.handlers().answer(&method, params).await.map_err(|e| {
            ClientError::Protocol(format!("cannot answer the server's {method} request: {}", e.message))
        })?;
        responses.insert(key, response);
    }
    Ok(responses)
}

/// `{"taskId": …}`.
fn task_params(task_id: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(task_id.to_owned()));
    params
}

/// Whether a failed poll may be tried again: the server could not be reached or did not answer
/// in time, or answered a server error without a JSON-RPC error (a proxy's 502).
fn passing(error: &ClientError) -> bool {
    matches!(error, ClientError::Transport(_) | ClientError::Timeout(_))
        || matches!(error, ClientError::Http { status, .. } if *status >= 500)
}

/// A failed `tasks/get` or `tasks/update`: `-32602` means the server no longer knows the task
/// (expired, or never known): nothing is left to cancel.
fn lost(guard: &CancelOnDrop, error: ClientError) -> ClientError {
    match error {
        ClientError::Rpc { code, message, .. } if code == ErrorCode::INVALID_PARAMS.0 => {
            guard.disarm();
            ClientError::Task {
                task_id: guard.task_id.clone(),
                reason: format!("is not known to the server (expired, or unknown): {message}"),
            }
        }
        other => other,
    }
}

/// A server's text without control characters (it may reach a terminal).
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Cancels the task with `tasks/cancel`, in the background, when dropped armed: the caller
/// gave up (or the wait failed) before the task ended.
struct CancelOnDrop {
    link: Rc<Link>,
    task_id: String,
    armed: Cell<bool>,
}

impl CancelOnDrop {
    /// The task ended (or is gone): nothing to cancel.
    fn disarm(&self) {
        self.armed.set(false);
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        // Outside an arbiter (the system is gone) there is nothing to send it with.
        if !self.armed.get() || actix_rt::Arbiter::try_current().is_none() {
            return;
        }
        let (link, task_id) = (self.link.clone(), std::mem::take(&mut self.task_id));
        // Bounded by the link's time limit, as every request.
        panics::spawn(Site::Client, async move {
            match link.request(tasks::CANCEL, task_params(&task_id)).await {
                Ok(_) => log::debug!("{}: cancelled task {task_id}", link.name()),
                Err(e) => log::warn!("{}: could not cancel task {task_id}: {e}", link.name()),
            }
        });
    }
}
