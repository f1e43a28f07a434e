use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{json, Value};

use super::*;
use crate::error::ProtocolError;
use crate::version::Era;

fn now<T>(future: crate::future::BoxFuture<T>) -> T {
    future.now_or_never().expect("the memory store answers at once")
}

#[test]
fn the_spec_create_task_result_parses_and_writes_back_flat() {
    let wire = json!({
        "resultType": "task",
        "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
        "status": "working",
        "statusMessage": "The operation is now in progress.",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 5000
    });
    let created = CreateTaskResult::from_result(&wire).expect("a CreateTaskResult");
    assert_eq!(created.task.task_id, "786512e2-9e0d-44bd-8f29-789f320fe840");
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.ttl_ms, Some(60000));
    assert_eq!(created.task.poll_interval_ms, Some(5000));
    assert_eq!(serde_json::to_value(&created).unwrap(), wire);
    assert!(CreateTaskResult::from_result(&json!({"resultType": "complete", "content": []})).is_none());
    assert!(CreateTaskResult::from_result(&json!({"resultType": "task", "status": "working"})).is_none());
}

#[test]
fn unlimited_ttl_is_written_as_null_and_absent_poll_interval_is_omitted() {
    let task = Task {
        task_id: "t".into(),
        status: TaskStatus::InputRequired,
        status_message: None,
        created_at: "2026-07-28T00:00:00.000Z".into(),
        last_updated_at: "2026-07-28T00:00:00.000Z".into(),
        ttl_ms: None,
        poll_interval_ms: None,
    };
    let value = serde_json::to_value(CreateTaskResult::new(task)).unwrap();
    assert_eq!(value["ttlMs"], Value::Null);
    assert!(value.as_object().unwrap().contains_key("ttlMs"));
    assert!(!value.as_object().unwrap().contains_key("pollIntervalMs"));
    assert_eq!(value["status"], "input_required");
    assert_eq!(value["resultType"], "task");
}

#[test]
fn the_spec_detailed_tasks_parse_per_status() {
    let completed = json!({
        "taskId": "786512e2", "status": "completed",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:50:00Z",
        "ttlMs": 60000, "pollIntervalMs": 5000,
        "result": {"content": [{"type": "text", "text": "Operation completed successfully."}], "isError": false}
    });
    let task: DetailedTask = serde_json::from_value(completed.clone()).unwrap();
    assert_eq!(task.task.status, TaskStatus::Completed);
    assert_eq!(task.result.as_ref().unwrap()["content"][0]["text"], "Operation completed successfully.");
    assert_eq!(task.to_notification_params(), completed);
    let mut get = completed.as_object().unwrap().clone();
    get.insert("resultType".into(), json!("complete"));
    assert_eq!(task.to_get_result(), get);

    let input = json!({
        "resultType": "complete", "taskId": "786512e2", "status": "input_required",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:50:00Z",
        "ttlMs": 3600000, "pollIntervalMs": 5000,
        "inputRequests": {"name": {"method": "elicitation/create", "params": {"mode": "form", "message": "Please enter your name.",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}
    });
    let task: DetailedTask = serde_json::from_value(input).unwrap();
    assert_eq!(task.task.status, TaskStatus::InputRequired);
    assert_eq!(task.input_requests.unwrap()["name"]["method"], "elicitation/create");

    let failed = json!({
        "resultType": "task", "taskId": "786512e2", "status": "failed",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z", "ttlMs": 3600000,
        "statusMessage": "Tool execution failed: API rate limit exceeded",
        "error": {"code": -32603, "message": "API rate limit exceeded"}
    });
    let task: DetailedTask = serde_json::from_value(failed).unwrap();
    assert_eq!(task.task.status, TaskStatus::Failed);
    assert!(task.task.status.is_terminal());
    assert_eq!(task.error.unwrap()["code"], -32603);
    assert!(!TaskStatus::InputRequired.is_terminal() && !TaskStatus::Working.is_terminal());
    assert!(TaskStatus::Cancelled.is_terminal() && TaskStatus::Completed.is_terminal());
}

#[test]
fn params_are_read_with_exact_errors() {
    let get = json!({"taskId": "abc", "_meta": {}});
    assert_eq!(TaskIdParams::parse(GET, get.as_object()).unwrap().task_id, "abc");
    let err = TaskIdParams::parse(CANCEL, json!({"taskId": 5}).as_object()).unwrap_err();
    assert_eq!(err, ProtocolError::InvalidParams("tasks/cancel needs a string taskId".into()));
    let update =
        json!({"taskId": "abc", "inputResponses": {"name": {"action": "accept", "content": {"input": "Luca"}}}});
    let update = UpdateTaskParams::parse(update.as_object()).unwrap();
    assert_eq!(update.input_responses["name"]["content"]["input"], "Luca");
    assert!(UpdateTaskParams::parse(json!({"taskId": "abc"}).as_object()).unwrap().input_responses.is_empty());
    let err = UpdateTaskParams::parse(json!({"taskId": "abc", "inputResponses": []}).as_object()).unwrap_err();
    assert_eq!(err, ProtocolError::InvalidParams("tasks/update inputResponses must be an object".into()));
}

#[test]
fn task_support_keeps_the_schema_wire_form() {
    let execution: ToolExecution = serde_json::from_value(json!({"taskSupport": "required"})).unwrap();
    assert_eq!(execution.task_support, Some(TaskSupport::Required));
    assert_eq!(serde_json::to_value(&execution).unwrap(), json!({"taskSupport": "required"}));
    assert_eq!(TaskSupport::parse("optional"), Some(TaskSupport::Optional));
    assert_eq!(TaskSupport::parse("sometimes"), None);
    assert_eq!(TaskSupport::default(), TaskSupport::Forbidden);
    assert!(serde_json::from_value::<ToolExecution>(json!({"taskSupport": "maybe"})).is_err());
}

#[test]
fn only_the_extension_declared_per_request_opts_in() {
    assert!(declares_tasks(&json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})));
    assert!(!declares_tasks(&json!({"extensions": {"io.modelcontextprotocol/tasks": null}})));
    assert!(!declares_tasks(&json!({"tasks": {"requests": {"tools": {"call": {}}}}})), "the legacy capability");
    assert!(!declares_tasks(&json!({"extensions": {"other": {}}})));
    assert!(!declares_tasks(&json!({})));
}

#[test]
fn the_missing_extension_error_names_it() {
    let error = missing_extension().to_error_object(Era::Stateless);
    assert_eq!(error.code.0, -32021);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}))
    );
    assert_eq!(not_found().to_error_object(Era::Stateless).code.0, -32602);
    assert_eq!(ProtocolError::from(TaskLookupError::Expired), expired());
    assert_eq!(Value::Object(empty_ack()), json!({"resultType": "complete"}));
}

#[test]
fn keys_are_never_reused_on_the_wire() {
    let mut keys = KeyMap::new();
    assert_eq!(keys.issue("confirm"), "confirm");
    assert_eq!(keys.issue("confirm"), "confirm#2");
    assert_eq!(keys.issue("confirm"), "confirm#3");
    assert_eq!(keys.issue("confirm#2"), "confirm#2#2", "a handler key that looks issued is still fresh");
    assert_eq!(keys.handler_key("confirm#3"), Some("confirm"));
    let answers = json!({"confirm#2": {"action": "accept"}, "never-issued": {}}).as_object().cloned().unwrap();
    assert_eq!(Value::Object(keys.to_handler_keys(answers)), json!({"confirm": {"action": "accept"}}));
}

#[test]
fn task_ids_are_long_random_hex() {
    let (a, b) = (new_task_id().unwrap(), new_task_id().unwrap());
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

fn store(limits: StoreLimits) -> (MemoryTaskStore, Arc<AtomicU64>) {
    let clock = Arc::new(AtomicU64::new(1_000_000));
    let reader = clock.clone();
    (MemoryTaskStore::with_clock(limits, Arc::new(move || reader.load(Ordering::SeqCst))), clock)
}

#[test]
fn a_created_task_is_readable_at_once_and_only_by_its_owner() {
    let (store, _) = store(StoreLimits::default());
    let task = now(store.create("alice", Some(60_000), Some(1000))).unwrap();
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.created_at, "1970-01-01T00:16:40.000Z");
    let got = now(store.get("alice", &task.task_id)).unwrap();
    assert_eq!(got.task, task);
    assert_eq!(now(store.get("bob", &task.task_id)), Err(TaskLookupError::NotFound));
    assert_eq!(now(store.get("alice", "nope")), Err(TaskLookupError::NotFound));
    assert_eq!(now(store.cancel("bob", &task.task_id)), Err(TaskLookupError::NotFound));
}

#[test]
fn terminal_states_never_change_and_cancel_is_idempotent() {
    let (store, _) = store(StoreLimits::default());
    let task = now(store.create("a", None, None)).unwrap();
    let result = json!({"content": [{"type": "text", "text": "done"}]}).as_object().cloned().unwrap();
    let done = now(store.update(&task.task_id, TaskUpdate::Completed { result: result.clone() })).unwrap().unwrap();
    assert_eq!(done.task.status, TaskStatus::Completed);
    assert_eq!(done.result, Some(result));
    assert_eq!(now(store.cancel("a", &task.task_id)), Ok(None), "cancelling a completed task changes nothing");
    assert_eq!(now(store.update(&task.task_id, TaskUpdate::Working { message: None })), Ok(None));
    assert_eq!(now(store.get("a", &task.task_id)).unwrap().task.status, TaskStatus::Completed);

    let other = now(store.create("a", None, None)).unwrap();
    let cancelled = now(store.cancel("a", &other.task_id)).unwrap().unwrap();
    assert_eq!(cancelled.task.status, TaskStatus::Cancelled);
    assert_eq!(now(store.cancel("a", &other.task_id)), Ok(None));
    let failed = now(store.create("a", None, None)).unwrap();
    let error = json!({"code": -32603, "message": "boom"});
    let failed =
        now(store.update(&failed.task_id, TaskUpdate::Failed { error: error.clone(), message: "boom".into() }))
            .unwrap()
            .unwrap();
    assert_eq!((failed.task.status, failed.error, failed.result), (TaskStatus::Failed, Some(error), None));
}

#[test]
fn answers_are_partial_and_unknown_keys_are_ignored() {
    let (store, _) = store(StoreLimits::default());
    let task = now(store.create("a", None, None)).unwrap();
    let requests = json!({"first": {"method": "elicitation/create", "params": {}}, "second": {"method": "elicitation/create", "params": {}}});
    let update = TaskUpdate::InputRequired { requests: requests.as_object().cloned().unwrap(), message: None };
    now(store.update(&task.task_id, update)).unwrap();
    let answers = json!({"first": {"action": "accept"}, "bogus": {}}).as_object().cloned().unwrap();
    let answered = now(store.answer("a", &task.task_id, answers)).unwrap();
    assert_eq!(Value::Object(answered.accepted), json!({"first": {"action": "accept"}}));
    assert_eq!(answered.outstanding, 1);
    assert_eq!(answered.task.task.status, TaskStatus::InputRequired);
    assert_eq!(answered.task.input_requests.unwrap().keys().collect::<Vec<_>>(), ["second"]);
    let again = json!({"first": {"action": "decline"}}).as_object().cloned().unwrap();
    assert!(
        now(store.answer("a", &task.task_id, again)).unwrap().accepted.is_empty(),
        "answered keys are not outstanding"
    );
    let last = json!({"second": {"action": "accept"}}).as_object().cloned().unwrap();
    let answered = now(store.answer("a", &task.task_id, last)).unwrap();
    assert_eq!((answered.outstanding, answered.task.task.status), (0, TaskStatus::Working));
    assert!(answered.task.input_requests.is_none());
}

#[test]
fn caps_hold_per_server_and_per_owner() {
    let (store, _) = store(StoreLimits { max_tasks: 3, max_per_owner: 2 });
    now(store.create("a", None, None)).unwrap();
    now(store.create("a", None, None)).unwrap();
    assert_eq!(now(store.create("a", None, None)), Err(TaskCreateError::OwnerFull { limit: 2 }));
    now(store.create("b", None, None)).unwrap();
    assert_eq!(now(store.create("c", None, None)), Err(TaskCreateError::ServerFull { limit: 3 }));
    assert_eq!(now(store.counts()).held(), 3);
}

#[test]
fn tasks_live_their_whole_ttl_then_expire_and_free_their_place() {
    let (store, clock) = store(StoreLimits { max_tasks: 1, max_per_owner: 1 });
    let task = now(store.create("a", Some(5_000), None)).unwrap();
    clock.fetch_add(4_999, Ordering::SeqCst);
    assert!(now(store.get("a", &task.task_id)).is_ok(), "readable until its TTL is over");
    assert!(now(store.expire()).is_empty());
    clock.fetch_add(1, Ordering::SeqCst);
    assert_eq!(now(store.get("a", &task.task_id)), Err(TaskLookupError::Expired));
    assert_eq!(now(store.get("a", &task.task_id)), Err(TaskLookupError::NotFound), "then it is gone");
    let second = now(store.create("a", Some(1_000), None)).unwrap();
    clock.fetch_add(1_000, Ordering::SeqCst);
    assert_eq!(
        now(store.expire()),
        vec![task.task_id.clone(), second.task_id.clone()],
        "the sweep reports the task a lookup removed too: its work must be stopped"
    );
    assert!(now(store.expire()).is_empty(), "each expiry is reported once");
    let counts = now(store.counts());
    assert_eq!((counts.held(), counts.created, counts.expired), (0, 2, 2));
    now(store.create("a", None, None)).expect("expired tasks free their place");
}

#[test]
fn a_task_a_creation_removed_as_expired_is_still_reported_to_the_sweep() {
    let (store, clock) = store(StoreLimits { max_tasks: 1, max_per_owner: 1 });
    let old = now(store.create("a", Some(1_000), None)).unwrap();
    clock.fetch_add(1_000, Ordering::SeqCst);
    let new = now(store.create("a", Some(1_000), None)).expect("the expired task frees its place");
    assert_ne!(old.task_id, new.task_id);
    assert_eq!(now(store.expire()), vec![old.task_id], "its running work is still to be stopped");
}

#[test]
fn counts_are_by_status() {
    let (store, _) = store(StoreLimits::default());
    let a = now(store.create("a", None, None)).unwrap();
    now(store.create("a", None, None)).unwrap();
    now(store.cancel("a", &a.task_id)).unwrap();
    let counts = now(store.counts());
    assert_eq!(counts.with_status(TaskStatus::Working), 1);
    assert_eq!(counts.with_status(TaskStatus::Cancelled), 1);
    assert_eq!(counts.with_status(TaskStatus::Failed), 0);
}
