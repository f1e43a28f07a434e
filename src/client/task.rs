//! The client's rules for the tasks extension (`io.modelcontextprotocol/tasks`): how long to
//! wait between polls, how long a caller waits for a task at most, and the poll loop's state
//! machine — which statuses end the wait, which input requests still need an answer (each key
//! answered once over the task's lifetime), when a status is news worth showing. The runtime's
//! loop (`mcpd-actors`, `client::task`) only sends `tasks/get`, `tasks/update`, `tasks/cancel`
//! and sleeps.

use std::collections::HashSet;
use std::time::Duration;

use derive_more::{Display, Error};
use serde_json::{Map, Value};

use crate::tasks::{CreateTaskResult, DetailedTask, TaskStatus};

/// The shortest wait between two polls, whatever the server suggests (`pollIntervalMs` of 0 or
/// 1 would make the client hammer the server).
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two polls, whatever the server suggests (a task that finishes
/// while the client sleeps for an hour helps nobody).
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// How many input requests one task may make of the client over its lifetime (a server that
/// asks forever is cut off; the keys answered are remembered, so this bounds that memory too).
pub const MAX_INPUT_REQUESTS: usize = 256;
/// How many polls in a row may fail to reach the server (transport failures, time-outs) before
/// the wait gives up; a JSON-RPC error ends it at once.
pub const MAX_CONSECUTIVE_POLL_FAILURES: u32 = 3;
/// The wait between polls when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How long a call waits for its task by default, in seconds (one hour).
pub const DEFAULT_TASK_WAIT_SECONDS: u64 = 3600;
/// [`DEFAULT_TASK_WAIT_SECONDS`] as a duration.
pub const DEFAULT_TASK_WAIT: Duration = Duration::from_secs(DEFAULT_TASK_WAIT_SECONDS);
/// The shortest task wait a configuration may set, in seconds.
pub const MIN_TASK_WAIT_SECONDS: u64 = 1;
/// The longest task wait a configuration may set, in seconds (one day).
pub const MAX_TASK_WAIT_SECONDS: u64 = 86_400;

/// The wait before the next poll: the server's `pollIntervalMs` clamped to
/// [`MIN_POLL_INTERVAL`]`..=`[`MAX_POLL_INTERVAL`], or [`DEFAULT_POLL_INTERVAL`] when it names none.
pub fn poll_interval(poll_interval_ms: Option<u64>) -> Duration {
    match poll_interval_ms {
        None => DEFAULT_POLL_INTERVAL,
        Some(ms) => Duration::from_millis(ms).clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL),
    }
}

/// The longest a call waits for its task, in seconds: [`DEFAULT_TASK_WAIT_SECONDS`] when absent,
/// else clamped to [`MIN_TASK_WAIT_SECONDS`]`..=`[`MAX_TASK_WAIT_SECONDS`].
pub fn task_wait_seconds(value: Option<i64>) -> u64 {
    match value {
        None => DEFAULT_TASK_WAIT_SECONDS,
        Some(v) => v.clamp(MIN_TASK_WAIT_SECONDS as i64, MAX_TASK_WAIT_SECONDS as i64) as u64,
    }
}

/// What the poll loop does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Send `tasks/get` after this wait.
    Poll(Duration),
    /// Answer these input requests — each key is handed out once over the task's lifetime —
    /// in one `tasks/update`, then poll again after `then`.
    Answer {
        /// The requests not answered before, in the server's order.
        requests: Vec<InputRequest>,
        /// The wait before the next poll.
        then: Duration,
    },
    /// The task completed: the request's result (for a tool call, its `CallToolResult`, a
    /// tool error included).
    Completed(Map<String, Value>),
    /// The task failed with this JSON-RPC error object.
    Failed(Value),
    /// The task was cancelled (with the server's status message, if any).
    Cancelled(Option<String>),
}

/// One server-to-client request a task is waiting on (`inputRequests[key]`), to be answered by
/// the client's handlers as the standalone request would be.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// Its key (the answer goes under it in `inputResponses`).
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`, …
    pub method: String,
    /// Its params (`{}` when absent).
    pub params: Value,
}

/// A task's state that the client cannot follow: the call fails with it (as a protocol error).
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum TaskError {
    /// `tasks/get` answered about another task.
    #[display("tasks/get for task {expected} answered about task {got}")]
    WrongTask {
        /// The task polled.
        expected: String,
        /// The task the answer is about.
        got: String,
    },
    /// A `completed` task without its `result`.
    #[display("task {_0} is completed but carries no result")]
    NoResult(#[error(not(source))] String),
    /// A `failed` task without its `error` object.
    #[display("task {_0} failed but carries no error object")]
    NoError(#[error(not(source))] String),
    /// An input request that is not `{"method": "...", "params": {...}}`.
    #[display("task {task_id}: input request {key:?} is not a request (an object with a method)")]
    BadInputRequest {
        /// The task.
        task_id: String,
        /// The request's key.
        key: String,
    },
    /// More input requests than [`MAX_INPUT_REQUESTS`] over the task's lifetime.
    #[display("task {_0} asked for input more than {MAX_INPUT_REQUESTS} times")]
    TooManyInputRequests(#[error(not(source))] String),
}

/// What one `tasks/get` told the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// What to do next.
    pub next: Next,
    /// Whether the status or its message changed since the last observation (what a progress
    /// display shows; the first observation after the created task counts when it differs).
    pub news: bool,
}

/// The client's side of one task, from the `CreateTaskResult` to a terminal status: which
/// statuses end the wait, which input requests are new (a key is answered at most once, even
/// when later polls still list it — the server's view is eventually consistent), when to poll.
#[derive(Debug, Clone)]
pub struct TaskWatch {
    task_id: String,
    answered: HashSet<String>,
    last: (TaskStatus, Option<String>),
}

impl TaskWatch {
    /// Starts watching the task a request was answered with; the first step is a poll — at
    /// once when the seed state is already terminal or waits for input (a `CreateTaskResult`
    /// carries neither the result nor the input requests), else after the poll interval.
    pub fn new(created: &CreateTaskResult) -> (TaskWatch, Next) {
        let task = &created.task;
        let first = match task.status {
            TaskStatus::Working => poll_interval(task.poll_interval_ms),
            _ => Duration::ZERO,
        };
        let watch = TaskWatch {
            task_id: task.task_id.clone(),
            answered: HashSet::new(),
            last: (task.status, task.status_message.clone()),
        };
        (watch, Next::Poll(first))
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Judges one `tasks/get` result.
    ///
    /// # Errors
    /// A [`TaskError`] when the answer cannot be followed: another task's, a terminal status
    /// without what it must carry, a malformed input request, too many input requests.
    pub fn observe(&mut self, task: DetailedTask) -> Result<Observed, TaskError> {
        let DetailedTask { task, result, error, input_requests } = task;
        if task.task_id != self.task_id {
            return Err(TaskError::WrongTask { expected: self.task_id.clone(), got: task.task_id });
        }
        let now = (task.status, task.status_message);
        let news = now != self.last;
        self.last = now;
        let wait = poll_interval(task.poll_interval_ms);
        let next = match task.status {
            TaskStatus::Working => Next::Poll(wait),
            TaskStatus::Completed => Next::Completed(result.ok_or_else(|| TaskError::NoResult(self.task_id.clone()))?),
            TaskStatus::Failed => Next::Failed(error.ok_or_else(|| TaskError::NoError(self.task_id.clone()))?),
            TaskStatus::Cancelled => Next::Cancelled(self.last.1.clone()),
            TaskStatus::InputRequired => {
                let requests = self.new_requests(input_requests.unwrap_or_default())?;
                if requests.is_empty() {
                    // All answered already (the server has not caught up yet), or none listed.
                    Next::Poll(wait)
                } else {
                    Next::Answer { requests, then: wait }
                }
            }
        };
        Ok(Observed { next, news })
    }

    /// The requests whose keys were never handed out before; they count as answered from now.
    fn new_requests(&mut self, requests: Map<String, Value>) -> Result<Vec<InputRequest>, TaskError> {
        let mut fresh = Vec::new();
        for (key, request) in requests {
            if self.answered.contains(&key) {
                continue;
            }
            let bad = || TaskError::BadInputRequest { task_id: self.task_id.clone(), key: key.clone() };
            let Value::Object(mut request) = request else { return Err(bad()) };
            let method = match request.remove("method") {
                Some(Value::String(method)) => method,
                _ => return Err(bad()),
            };
            let params = match request.remove("params") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(params @ Value::Object(_)) => params,
                Some(_) => return Err(bad()),
            };
            if self.answered.len() >= MAX_INPUT_REQUESTS {
                return Err(TaskError::TooManyInputRequests(self.task_id.clone()));
            }
            self.answered.insert(key.clone());
            fresh.push(InputRequest { key, method, params });
        }
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn created(status: &str, poll_interval_ms: Option<u64>) -> CreateTaskResult {
        let mut wire = json!({"resultType": "task", "taskId": "t1", "status": status,
            "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z", "ttlMs": 60000});
        if let Some(ms) = poll_interval_ms {
            wire["pollIntervalMs"] = json!(ms);
        }
        CreateTaskResult::from_result(&wire).unwrap()
    }

    fn polled(fields: Value) -> DetailedTask {
        let mut wire = json!({"resultType": "complete", "taskId": "t1", "createdAt": "2026-07-28T10:30:00Z",
            "lastUpdatedAt": "2026-07-28T10:31:00Z", "ttlMs": 60000, "pollIntervalMs": 500});
        for (key, value) in fields.as_object().unwrap() {
            wire[key] = value.clone();
        }
        serde_json::from_value(wire).unwrap()
    }

    fn elicit(message: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
    }

    #[test]
    fn a_working_task_is_polled_after_its_interval_and_at_once_when_it_needs_more_than_its_seed() {
        assert_eq!(TaskWatch::new(&created("working", Some(5000))).1, Next::Poll(Duration::from_secs(5)));
        assert_eq!(TaskWatch::new(&created("working", Some(1))).1, Next::Poll(MIN_POLL_INTERVAL));
        assert_eq!(TaskWatch::new(&created("working", None)).1, Next::Poll(DEFAULT_POLL_INTERVAL));
        // A seed that already ended or waits for input carries neither the result nor the
        // requests: they are one tasks/get away.
        for status in ["completed", "failed", "cancelled", "input_required"] {
            assert_eq!(TaskWatch::new(&created(status, Some(5000))).1, Next::Poll(Duration::ZERO), "{status}");
        }
    }

    #[test]
    fn terminal_statuses_end_the_wait_with_the_result_the_error_or_the_cancellation() {
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let result = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        let done = watch.observe(polled(json!({"status": "completed", "result": result}))).unwrap();
        // A tool's own failure is a completed task: the result is handed back as it is.
        assert_eq!(done.next, Next::Completed(result.as_object().unwrap().clone()));
        assert!(done.news);

        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let error = json!({"code": -32603, "message": "API rate limit exceeded"});
        let failed = watch.observe(polled(json!({"status": "failed", "error": error}))).unwrap();
        assert_eq!(failed.next, Next::Failed(error));

        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let cancelled = watch.observe(polled(json!({"status": "cancelled", "statusMessage": "stopped by admin"})));
        assert_eq!(cancelled.unwrap().next, Next::Cancelled(Some("stopped by admin".into())));
    }

    #[test]
    fn a_terminal_status_without_its_payload_or_about_another_task_is_refused() {
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        assert_eq!(watch.observe(polled(json!({"status": "completed"}))), Err(TaskError::NoResult("t1".into())));
        assert_eq!(watch.observe(polled(json!({"status": "failed"}))), Err(TaskError::NoError("t1".into())));
        let other = watch.observe(polled(json!({"status": "working", "taskId": "t2"}))).unwrap_err();
        assert_eq!(other.to_string(), "tasks/get for task t1 answered about task t2");
    }

    #[test]
    fn each_input_request_key_is_answered_once_across_polls() {
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let first = watch.observe(polled(json!({"status": "input_required", "inputRequests": {"a": elicit("A?")}})));
        let Next::Answer { requests, then } = first.unwrap().next else { panic!("an answer is due") };
        assert_eq!(then, Duration::from_millis(500));
        assert_eq!(requests.len(), 1);
        assert_eq!((requests[0].key.as_str(), requests[0].method.as_str()), ("a", "elicitation/create"));
        assert_eq!(requests[0].params["message"], "A?");
        // The server has not taken the answer in yet: the same snapshot is not answered again.
        let again = watch.observe(polled(json!({"status": "input_required", "inputRequests": {"a": elicit("A?")}})));
        assert_eq!(again.unwrap(), Observed { next: Next::Poll(Duration::from_millis(500)), news: false });
        // A second request arrives beside the stale first: only the new key is handed out.
        let both = json!({"status": "input_required", "inputRequests": {"a": elicit("A?"), "b": elicit("B?")}});
        let Next::Answer { requests, .. } = watch.observe(polled(both)).unwrap().next else { panic!() };
        assert_eq!(requests.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["b"]);
        // Back to work, then a key seen long ago comes back: still answered only once.
        assert_eq!(
            watch.observe(polled(json!({"status": "working"}))).unwrap().next,
            Next::Poll(Duration::from_millis(500))
        );
        let stale = watch.observe(polled(json!({"status": "input_required", "inputRequests": {"a": elicit("A?")}})));
        assert_eq!(stale.unwrap().next, Next::Poll(Duration::from_millis(500)));
    }

    #[test]
    fn input_requests_must_be_requests_and_are_bounded_over_a_tasks_life() {
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        for bad in [json!("elicit"), json!({"params": {}}), json!({"method": 7}), json!({"method": "m", "params": [1]})]
        {
            let error = watch.observe(polled(json!({"status": "input_required", "inputRequests": {"k": bad}})));
            assert_eq!(error, Err(TaskError::BadInputRequest { task_id: "t1".into(), key: "k".into() }));
        }
        let bare = watch
            .observe(polled(json!({"status": "input_required", "inputRequests": {"r": {"method": "roots/list"}}})));
        let Next::Answer { requests, .. } = bare.unwrap().next else { panic!() };
        assert_eq!(requests[0].params, json!({}));
        for n in 1..MAX_INPUT_REQUESTS {
            let fields = json!({"status": "input_required", "inputRequests": {format!("k{n}"): elicit("?")}});
            assert!(matches!(watch.observe(polled(fields)).unwrap().next, Next::Answer { .. }), "request {n}");
        }
        let one_more = json!({"status": "input_required", "inputRequests": {"last": elicit("?")}});
        assert_eq!(watch.observe(polled(one_more)), Err(TaskError::TooManyInputRequests("t1".into())));
        // An input_required snapshot without requests (none listed yet) just polls again.
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let empty = watch.observe(polled(json!({"status": "input_required"}))).unwrap();
        assert_eq!(empty.next, Next::Poll(Duration::from_millis(500)));
    }

    #[test]
    fn news_is_a_change_of_status_or_message() {
        let (mut watch, _) = TaskWatch::new(&created("working", None));
        let same = watch.observe(polled(json!({"status": "working"}))).unwrap();
        assert!(!same.news, "the seed said working already");
        assert!(watch.observe(polled(json!({"status": "working", "statusMessage": "50%"}))).unwrap().news);
        assert!(!watch.observe(polled(json!({"status": "working", "statusMessage": "50%"}))).unwrap().news);
        assert!(watch.observe(polled(json!({"status": "working", "statusMessage": "75%"}))).unwrap().news);
        assert!(watch.observe(polled(json!({"status": "working"}))).unwrap().news);
    }

    #[test]
    fn the_servers_poll_interval_is_honoured_within_bounds() {
        assert_eq!(poll_interval(None), Duration::from_secs(1));
        assert_eq!(poll_interval(Some(0)), Duration::from_millis(100));
        assert_eq!(poll_interval(Some(99)), Duration::from_millis(100));
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(5000)), Duration::from_secs(5));
        assert_eq!(poll_interval(Some(30_001)), Duration::from_secs(30));
        assert_eq!(poll_interval(Some(u64::MAX)), Duration::from_secs(30));
    }

    #[test]
    fn the_task_wait_is_an_hour_unless_configured_within_a_second_and_a_day() {
        assert_eq!(task_wait_seconds(None), 3600);
        assert_eq!(task_wait_seconds(Some(0)), 1);
        assert_eq!(task_wait_seconds(Some(-5)), 1);
        assert_eq!(task_wait_seconds(Some(90)), 90);
        assert_eq!(task_wait_seconds(Some(i64::MAX)), 86_400);
    }
}
