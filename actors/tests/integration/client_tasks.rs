//! The client against mcpd's own tasks (the tasks extension, 2026-07-28): the `everything`
//! fixture's task tools over loopback, driven through the library (`ClientManager`) and the
//! `mcpd` binary (`mcpd call`, `--no-wait`, `mcpd task get|cancel`), and through a gateway
//! (`mcpd --servers`). Whether a call really became a task is checked, not assumed: the
//! client's notification hook hears the task's statuses, the fixture's `/status` counts its
//! tasks by status.

use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpd::client::config::{ConfigDocument, StdioCommand};
use mcpd::model::Implementation;
use mcpd::tasks::TaskStatus;
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, Handler, RemoteCallOutcome, ServerRecord};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map, Value};

use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::interop_script;
use crate::support::mock_http::{MockServer, Recorded, Reply};
use crate::support::process::{self, mcpd_command, run_with_timeout, text, HttpChild, RUN_TIMEOUT};
use crate::support::python::python_with;

/// The bound of a whole library test.
const TEST_TIMEOUT: Duration = Duration::from_secs(90);
/// How long an effect on the server (a task's status) may take to show.
const SETTLE: Duration = Duration::from_secs(15);

async fn bounded<F: std::future::Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_TIMEOUT, test).await.expect("the test did not finish within its bound");
}

/// What the client's notification hook heard: `notifications/tasks` params, in order.
type Heard = Arc<Mutex<Vec<Value>>>;

/// A manager for the fixture at `url` whose elicitations are answered by `elicitation` (the
/// default handlers' otherwise) and whose task statuses are recorded.
fn manager(url: &str, elicitation: Option<Handler>) -> (ClientManager, Heard) {
    let heard: Heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let mut handlers = ClientHandlers {
        notifications: Some(Arc::new(move |_server: &str, method: &str, params: &Value| {
            if method == "notifications/tasks" {
                sink.lock().unwrap().push(params.clone());
            }
        })),
        ..ClientHandlers::default()
    };
    if let Some(elicitation) = elicitation {
        handlers.elicitation = elicitation;
    }
    let manager = ClientManager::new(handlers, Implementation::new("tasks-test", "1"), Arc::new(ActorCounts::new()));
    let document = ConfigDocument::from_value(json!({ "url": url })).expect("config document");
    manager.upsert(ServerRecord { timeout_secs: 30, ..ServerRecord::new("everything", document) });
    (manager, heard)
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("arguments are an object")
}

/// The statuses heard for one task, in order, consecutive repeats folded.
fn statuses(heard: &Heard, task_id: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for params in heard.lock().unwrap().iter().filter(|p| p["taskId"] == task_id) {
        let status = params["status"].as_str().unwrap_or_default().to_owned();
        if out.last() != Some(&status) {
            out.push(status);
        }
    }
    out
}

/// The id of the one task heard of.
fn only_task(heard: &Heard) -> String {
    let ids: std::collections::BTreeSet<String> =
        heard.lock().unwrap().iter().filter_map(|p| p["taskId"].as_str().map(str::to_owned)).collect();
    assert_eq!(ids.len(), 1, "exactly one task heard of: {ids:?}");
    ids.into_iter().next().unwrap()
}

/// The fixture's task counts by status (`/status`).
fn task_counts(server: &HttpChild) -> Value {
    let (status, _, body) = process::http(server.port, "GET", "/status", &[], "");
    assert_eq!(status, 200);
    serde_json::from_str::<Value>(&body).expect("status JSON")["tasks"]["byStatus"].clone()
}

/// A long call through the library: the server makes a task of it (the hook hears `working`,
/// then `completed`), and the caller gets the tool's result as if it had answered at once.
#[actix_rt::test]
async fn a_long_call_becomes_a_task_and_returns_its_result() {
    let server = HttpChild::spawn_everything();
    let (manager, heard) = manager(&server.url(), None);
    bounded(async {
        let arguments = args(json!({"seconds": 1.5, "label": "report"}));
        let result = manager.call_tool("everything", "slow_compute", arguments).await.expect("the call succeeds");
        assert_eq!(result.text(), "Computed report after 1.5 s");
        assert!(!result.is_error);
        let task_id = only_task(&heard);
        assert_eq!(statuses(&heard, &task_id), ["working", "completed"]);
        // The server's own record agrees.
        let task = manager.get_task("everything", &task_id).await.expect("tasks/get");
        assert_eq!(task.task.status, TaskStatus::Completed);
        assert_eq!(task.result.expect("result")["content"][0]["text"], "Computed report after 1.5 s");

        // A short call of the same tool is answered at once: no task.
        heard.lock().unwrap().clear();
        let quick = manager.call_tool("everything", "slow_compute", args(json!({"seconds": 0, "label": "q"}))).await;
        assert_eq!(quick.expect("quick call").text(), "Computed q after 0 s");
        assert!(heard.lock().unwrap().is_empty(), "no task for a quick call: {:?}", heard.lock().unwrap());
    })
    .await;
    manager.close().await;
}

/// Terminal statuses other than `completed`: a tool error is a completed task (`isError`
/// kept), a JSON-RPC error is the call's error, an unknown task is the server's `-32602`.
#[actix_rt::test]
async fn tool_errors_protocol_errors_and_unknown_tasks() {
    let server = HttpChild::spawn_everything();
    let (manager, _) = manager(&server.url(), None);
    bounded(async {
        let failed =
            manager.call_tool("everything", "failing_job", Map::new()).await.expect("a tool error is a result");
        assert!(failed.is_error);
        assert_eq!(failed.text(), "failing_job: the job failed (a tool error)");
        match manager.call_tool("everything", "protocol_error_job", Map::new()).await {
            Err(ClientError::Rpc { code: -32603, message, .. }) => {
                assert_eq!(message, "Internal error: protocol_error_job: internal failure")
            }
            other => panic!("the task's JSON-RPC error, got {other:?}"),
        }
        match manager.get_task("everything", "no-such-task").await {
            Err(ClientError::Rpc { code: -32602, message, .. }) => assert!(message.contains("not found"), "{message}"),
            other => panic!("-32602, got {other:?}"),
        }
    })
    .await;
    manager.close().await;
}

/// An elicitation handler that answers by the question: `Delete …?` is confirmed, `First
/// name?` / `Second name?` get `Ada` / `Grace`, and counts how often each question was asked.
fn answering(asked: Arc<Mutex<Vec<String>>>) -> Handler {
    Arc::new(move |params: Value| {
        let message = params["message"].as_str().unwrap_or_default().to_owned();
        asked.lock().unwrap().push(message.clone());
        Box::pin(async move {
            let content = match message.as_str() {
                m if m.starts_with("Delete ") => json!({"confirm": true}),
                "First name?" => json!({"name": "Ada"}),
                "Second name?" => json!({"name": "Grace"}),
                "What is your name?" => json!({"name": "Lin"}),
                _ => json!({}),
            };
            Ok(json!({"action": "accept", "content": content}))
        })
    })
}

/// Input during a task: the task's `inputRequests` are answered by the client's elicitation
/// handler (the same one MRTR rounds use) through `tasks/update`, each question exactly once
/// although later polls may still list it; the task then completes with the answers.
#[actix_rt::test]
async fn input_requests_during_a_task_are_answered_by_the_elicitation_handler_once_each() {
    let server = HttpChild::spawn_everything();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (manager, heard) = manager(&server.url(), Some(answering(asked.clone())));
    bounded(async {
        let deleted = manager
            .call_tool("everything", "confirm_delete", args(json!({"filename": "notes.txt"})))
            .await
            .expect("confirm_delete");
        assert_eq!(deleted.text(), "Deleted notes.txt");
        let task_id = only_task(&heard);
        assert!(statuses(&heard, &task_id).contains(&"input_required".to_owned()), "{:?}", statuses(&heard, &task_id));
        assert_eq!(*asked.lock().unwrap(), ["Delete notes.txt?"]);

        asked.lock().unwrap().clear();
        let both = manager.call_tool("everything", "multi_input", Map::new()).await.expect("multi_input");
        assert_eq!(both.text(), "Got Ada and Grace");
        let mut questions = asked.lock().unwrap().clone();
        questions.sort();
        assert_eq!(questions, ["First name?", "Second name?"], "each key answered once");

        // MRTR before the task exists, then the task: both through the same handler.
        asked.lock().unwrap().clear();
        let greeted = manager.call_tool("everything", "test_tool_with_task", Map::new()).await.expect("mrtr + task");
        assert_eq!(greeted.text(), "Hello, Lin! Your task is done.");
        assert_eq!(*asked.lock().unwrap(), ["What is your name?"]);
    })
    .await;
    manager.close().await;
}

/// Drop = cancel: a caller that stops waiting (here a time limit around the call) leaves no
/// task running — the client sends `tasks/cancel` and the server's task ends `cancelled`.
#[actix_rt::test]
async fn dropping_the_call_cancels_the_task() {
    let server = HttpChild::spawn_everything();
    let (manager, heard) = manager(&server.url(), None);
    bounded(async {
        let call = manager.call_tool("everything", "slow_compute", args(json!({"seconds": 60, "label": "never"})));
        // Long enough for the task to exist (the fixture promotes after 100 ms), far from its end.
        let gave_up = actix_rt::time::timeout(Duration::from_secs(2), call).await;
        assert!(gave_up.is_err(), "the call was still waiting: {gave_up:?}");
        let task_id = only_task(&heard);
        let cancelled = eventually("the dropped call's task is cancelled", SETTLE, async || {
            manager.get_task("everything", &task_id).await.ok().filter(|t| t.task.status == TaskStatus::Cancelled)
        })
        .await;
        assert!(cancelled.result.is_none());
        assert_eq!(task_counts(&server)["working"], 0, "nothing left running");
    })
    .await;
    manager.close().await;
}

/// A task that outlives the wait limit: the call fails naming the task and the limit, and the
/// task is cancelled on the server.
#[actix_rt::test]
async fn a_task_past_the_wait_limit_fails_the_call_and_is_cancelled() {
    let server = HttpChild::spawn_everything();
    let (manager, heard) = manager(&server.url(), None);
    let mut record = manager.record("everything").expect("record");
    record.task_wait_secs = 1;
    manager.upsert(record);
    bounded(async {
        let outcome = manager.call_tool("everything", "slow_compute", args(json!({"seconds": 30}))).await;
        let task_id = only_task(&heard);
        match outcome {
            Err(error @ ClientError::Task { .. }) => assert_eq!(
                error.to_string(),
                format!("task {task_id} did not finish within the task wait limit (1 s); it was cancelled")
            ),
            other => panic!("a task error, got {other:?}"),
        }
        eventually("the task is cancelled", SETTLE, async || {
            manager.get_task("everything", &task_id).await.ok().filter(|t| t.task.status == TaskStatus::Cancelled)
        })
        .await;
    })
    .await;
    manager.close().await;
}

/// `start_tool_call` returns the task without waiting (and a quick call's result as it is).
#[actix_rt::test]
async fn starting_a_call_returns_the_task_itself() {
    let server = HttpChild::spawn_everything();
    let (manager, heard) = manager(&server.url(), None);
    bounded(async {
        let started = manager.start_tool_call("everything", "failing_job", Map::new()).await.expect("started");
        let RemoteCallOutcome::Task(created) = started else { panic!("failing_job is always a task: {started:?}") };
        assert_eq!(created.task.status, TaskStatus::Working);
        let done = eventually("failing_job completes", SETTLE, async || {
            manager.get_task("everything", &created.task.task_id).await.ok().filter(|t| t.task.status.is_terminal())
        })
        .await;
        assert_eq!(done.task.status, TaskStatus::Completed);
        assert_eq!(done.result.expect("result")["isError"], true);
        assert!(heard.lock().unwrap().is_empty(), "nobody followed the task: {:?}", heard.lock().unwrap());

        let quick = manager.start_tool_call("everything", "greet", args(json!({"name": "Bo"}))).await.expect("greet");
        let RemoteCallOutcome::Result(result) = quick else { panic!("greet is never a task: {quick:?}") };
        assert_eq!(result.text(), "Hello, Bo!");
    })
    .await;
    manager.close().await;
}

/// A stdio child at 2026-07-28 (a scripted server, `actors/tests/interop/stdio_task_server.py`,
/// that makes a task of every call that declares the extension): the call is followed to its
/// result on that wire too, and `tasks/get` reaches the child by id.
#[actix_rt::test]
async fn a_stdio_servers_task_is_followed_too() {
    let Some(python) = python_with("import json, sys") else { return };
    let command = StdioCommand {
        program: python.to_string_lossy().into_owned(),
        args: vec![interop_script("stdio_task_server.py").to_string_lossy().into_owned()],
        env: Vec::new(),
        cwd: None,
    };
    let (manager, heard) = manager("http://unused.invalid/mcp", None);
    manager.upsert(ServerRecord { timeout_secs: 30, ..ServerRecord::stdio("local", command) });
    bounded(async {
        let result = manager.call_tool("local", "build", Map::new()).await.expect("the task completes");
        assert_eq!(result.text(), "done: build");
        let task_id = only_task(&heard);
        assert_eq!(task_id, "stdio-task-1");
        assert_eq!(statuses(&heard, &task_id), ["working", "completed"]);
        let task = manager.get_task("local", &task_id).await.expect("tasks/get over stdio");
        assert_eq!(task.task.status, TaskStatus::Completed);
        manager.cancel_task("local", &task_id).await.expect("tasks/cancel over stdio");
    })
    .await;
    manager.close().await;
}

// ---- the command line ------------------------------------------------------------------------

fn mcpd(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Exit 0 and nothing on stderr (no progress when stderr is not a terminal); stdout.
fn assert_ok(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "exit status; stdout:\n{}\nstderr:\n{stderr}", text(&output.stdout));
    assert!(stderr.is_empty(), "stderr must be empty on success, got:\n{stderr}");
    text(&output.stdout)
}

/// Exit `code` with exactly one `mcpd: ` line on stderr; the line.
fn assert_fails(output: &Output, code: i32) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "exit status; stdout:\n{}\nstderr:\n{stderr}", text(&output.stdout));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr, got:\n{stderr}");
    assert!(lines[0].starts_with("mcpd: "), "{stderr}");
    lines[0].to_owned()
}

/// `mcpd call` waits for the task transparently: the output is what a synchronous call prints
/// (text, or the result JSON with --json), and a tool error inside a task still exits 1.
#[test]
fn mcpd_call_waits_for_the_task_and_prints_the_result() {
    let server = HttpChild::spawn_everything();
    let url = server.url();
    let out = assert_ok(&mcpd(&["call", &url, "slow_compute", "--args", r#"{"seconds": 1.2, "label": "cli"}"#]));
    assert_eq!(out.trim_end(), "Computed cli after 1.2 s");
    let json = assert_ok(&mcpd(&["call", &url, "slow_compute", "--json", "--args", r#"{"seconds": 0.5}"#]));
    let result: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(result["content"][0]["text"], "Computed  after 0.5 s");
    assert!(result.get("taskId").is_none(), "the result, not the task: {result}");
    assert_eq!(task_counts(&server)["completed"], 2, "both calls were tasks");

    let failed = mcpd(&["call", &url, "failing_job"]);
    assert_eq!(text(&failed.stdout).trim_end(), "failing_job: the job failed (a tool error)");
    assert_eq!(assert_fails(&failed, 1), "mcpd: the tool reported an error");
    let broken = mcpd(&["call", &url, "protocol_error_job"]);
    assert_eq!(
        assert_fails(&broken, 2),
        "mcpd: Internal error: protocol_error_job: internal failure (-32603, HTTP 200)"
    );
    assert!(broken.stdout.is_empty());
    let late = mcpd(&["call", &url, "slow_compute", "--task-wait", "1", "--args", r#"{"seconds": 30}"#]);
    let line = assert_fails(&late, 2);
    assert!(
        line.starts_with("mcpd: task ")
            && line.ends_with(" did not finish within the task wait limit (1 s); it was cancelled"),
        "{line}"
    );
    eventually_blocking("the late task is cancelled", SETTLE, || task_counts(&server)["cancelled"] == 1);
}

/// `--no-wait` prints the task (its id) instead of waiting; `mcpd task get` reads it (working,
/// then completed with the result); a call the server answers at once prints as usual.
#[test]
fn no_wait_prints_a_task_that_mcpd_task_get_reads() {
    let server = HttpChild::spawn_everything();
    let url = server.url();
    let printed = assert_ok(&mcpd(&["call", &url, "slow_compute", "--no-wait", "--args", r#"{"seconds": 2}"#]));
    let created: Value = serde_json::from_str(&printed).expect("the task as JSON");
    assert_eq!((created["resultType"].as_str(), created["status"].as_str()), (Some("task"), Some("working")));
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();

    let got: Value = serde_json::from_str(&assert_ok(&mcpd(&["task", "get", &url, &task_id]))).expect("JSON");
    assert_eq!(got["taskId"], task_id.as_str());
    assert!(matches!(got["status"].as_str(), Some("working" | "completed")), "{got}");
    let done = eventually_blocking("the task completes", SETTLE, || {
        let got: Value = serde_json::from_str(&assert_ok(&mcpd(&["task", "get", &url, &task_id]))).ok()?;
        (got["status"] == "completed").then_some(got)
    });
    assert_eq!(done["result"]["content"][0]["text"], "Computed  after 2 s");

    let quick = assert_ok(&mcpd(&["call", &url, "greet", "--no-wait", "--args", r#"{"name": "Al"}"#]));
    assert_eq!(quick.trim_end(), "Hello, Al!");
    let unknown = mcpd(&["task", "get", &url, "no-such-task"]);
    assert_eq!(assert_fails(&unknown, 2), "mcpd: Failed to retrieve task: Task not found (-32602, HTTP 200)");
}

/// `mcpd task cancel` acknowledges, and the task then reads `cancelled`.
#[test]
fn mcpd_task_cancel_cancels_the_task() {
    let server = HttpChild::spawn_everything();
    let url = server.url();
    let printed = assert_ok(&mcpd(&["call", &url, "slow_compute", "--no-wait", "--args", r#"{"seconds": 60}"#]));
    let created: Value = serde_json::from_str(&printed).expect("the task as JSON");
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();
    let ack = assert_ok(&mcpd(&["task", "cancel", &url, &task_id]));
    assert_eq!(ack.trim_end(), format!("task {task_id}: cancellation requested"));
    let cancelled = eventually_blocking("the task reads cancelled", SETTLE, || {
        let got: Value = serde_json::from_str(&assert_ok(&mcpd(&["task", "get", &url, &task_id]))).ok()?;
        (got["status"] == "cancelled").then_some(got)
    });
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    assert_eq!(task_counts(&server)["working"], 0);
    // A server that speaks no 2026-07-28 has no tasks to read.
    let legacy = mcpd(&["task", "get", &url, &task_id, "--protocol-version", "2025-11-25"]);
    assert_eq!(
        assert_fails(&legacy, 2),
        format!(
            "mcpd: task {task_id} cannot be reached: tasks need protocol revision 2026-07-28 and the server speaks 2025-11-25"
        )
    );
}

/// Ctrl-C while `mcpd call` waits for a task cancels the task before exiting 130.
#[test]
fn interrupting_mcpd_call_cancels_its_task() {
    let server = HttpChild::spawn_everything();
    let mut cmd = mcpd_command();
    cmd.args(["call", &server.url(), "slow_compute", "--args", r#"{"seconds": 60}"#])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn mcpd call");
    eventually_blocking("the call's task is running", SETTLE, || task_counts(&server)["working"] == 1);
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill -INT");
    assert!(kill.success());
    let status = eventually_blocking("mcpd call exits", SETTLE, || child.try_wait().ok().flatten());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("read stderr");
    assert_eq!(status.code(), Some(130), "stderr:\n{stderr}");
    let line = stderr.trim_end();
    assert!(line.starts_with("mcpd: interrupted; task ") && line.ends_with(" cancelled"), "{stderr}");
    eventually_blocking("the task is cancelled", SETTLE, || {
        let counts = task_counts(&server);
        counts["cancelled"] == 1 && counts["working"] == 0
    });
}

// ---- the gateway -----------------------------------------------------------------------------

/// A remote's slow task-tool called through `mcpd --servers`: the gateway follows the remote's
/// task and `mcpd call` gets the result; cancelling the gateway's own task (mcpd makes one of a
/// long call) reaches the remote's task.
#[test]
fn the_gateway_follows_a_remotes_task_and_passes_cancellation_on() {
    let remote = HttpChild::spawn_everything();
    let dir = tempfile::tempdir().expect("temp dir");
    let servers = dir.path().join("servers.json");
    let file = json!({"mcpServers": {"slow": {"url": remote.url()}}});
    std::fs::write(&servers, serde_json::to_vec(&file).unwrap()).expect("write servers file");
    let gateway = HttpChild::spawn(&["--no-file-tools", "--servers", servers.to_str().unwrap()]);
    let url = gateway.url();
    eventually_blocking("the remote's tools are exported", SETTLE, || {
        text(&mcpd(&["tools", &url]).stdout).contains("slow__slow_compute")
    });

    let out = assert_ok(&mcpd(&["call", &url, "slow__slow_compute", "--args", r#"{"seconds": 2, "label": "gw"}"#]));
    assert_eq!(out.trim_end(), "Computed gw after 2 s");
    assert_eq!(task_counts(&remote)["completed"], 1, "the remote made a task of the call");

    let printed = assert_ok(&mcpd(&["call", &url, "slow__slow_compute", "--no-wait", "--args", r#"{"seconds": 60}"#]));
    let created: Value = serde_json::from_str(&printed).expect("the gateway's task as JSON");
    let task_id = created["taskId"].as_str().expect("taskId").to_owned();
    eventually_blocking("the remote's task is running", SETTLE, || task_counts(&remote)["working"] == 1);
    assert_ok(&mcpd(&["task", "cancel", &url, &task_id]));
    eventually_blocking("the remote's task is cancelled", SETTLE, || {
        let counts = task_counts(&remote);
        counts["cancelled"] == 1 && counts["working"] == 0
    });
}

// ---- the wire, against a scripted server -------------------------------------------------------

/// A created task's fields, with `pollIntervalMs`.
fn task_fields(status: &str, poll_interval_ms: u64) -> Value {
    json!({"taskId": "t-1", "status": status, "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": poll_interval_ms})
}

/// `fields` plus `extra`.
fn with(mut fields: Value, extra: Value) -> Value {
    for (key, value) in extra.as_object().expect("object") {
        fields[key] = value.clone();
    }
    fields
}

/// `server/discover` of a stateless 2026-07-28 server offering tasks.
fn discover(request: &Recorded) -> Reply {
    Reply::result(
        &request.rpc_id(),
        json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
            "serverInfo": {"name": "mock-tasks", "version": "1"}, "resultType": "complete"}),
    )
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// Whether a request's per-request client capabilities declare the tasks extension.
fn declares_tasks(request: &Recorded) -> bool {
    request.params()["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"].get(TASKS).is_some()
}

fn mock_manager(url: &str, elicitation: Handler) -> ClientManager {
    let handlers = ClientHandlers { elicitation, ..ClientHandlers::default() };
    let manager = ClientManager::new(handlers, Implementation::new("tasks-test", "1"), Arc::new(ActorCounts::new()));
    let document = ConfigDocument::from_value(json!({ "url": url })).expect("config document");
    manager.upsert(ServerRecord { timeout_secs: 5, ..ServerRecord::new("mock", document) });
    manager
}

/// What a task's wire looks like from the server: `tools/call` and `tasks/*` declare the
/// extension (other requests do not), `tasks/*` carry `Mcp-Name: <taskId>`, polls are at least
/// the clamped interval apart (the server asked for 0 ms), and an input request the server still
/// lists after it was answered (its view lags) is not answered again: one `tasks/update`.
#[actix_rt::test]
async fn the_wire_declares_tasks_routes_by_task_id_paces_polls_and_answers_each_key_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let polls = Arc::new(Mutex::new(Vec::<std::time::Instant>::new()));
    let updates = Arc::new(AtomicUsize::new(0));
    let (seen_polls, seen_updates) = (polls.clone(), updates.clone());
    let question = json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Ship it?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
    let server = MockServer::start(move |request| {
        let id = request.rpc_id();
        match request.rpc_method().as_deref() {
            Some("server/discover") => discover(request),
            Some("tools/call") => Reply::result(&id, with(task_fields("working", 0), json!({"resultType": "task"}))),
            Some("tasks/get") => {
                let poll = {
                    let mut polls = seen_polls.lock().unwrap();
                    polls.push(std::time::Instant::now());
                    polls.len()
                };
                let fields = match (poll, seen_updates.load(Ordering::SeqCst)) {
                    // Asks, then keeps listing the question for two polls after the answer.
                    (..=3, _) | (_, 0) => {
                        with(task_fields("input_required", 0), json!({"inputRequests": {"q": question.clone()}}))
                    }
                    _ => with(
                        task_fields("completed", 0),
                        json!({"result": {"content": [{"type": "text", "text": "shipped"}], "isError": false}}),
                    ),
                };
                Reply::result(&id, with(fields, json!({"resultType": "complete"})))
            }
            Some("tasks/update") => {
                seen_updates.fetch_add(1, Ordering::SeqCst);
                Reply::result(&id, json!({"resultType": "complete"}))
            }
            Some("prompts/list") => Reply::result(&id, json!({"prompts": [], "resultType": "complete"})),
            _ => Reply::error(400, &id, -32601, "not here"),
        }
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let manager = mock_manager(&server.url(), answering(asked.clone()));
    bounded(async {
        let result = manager.call_tool("mock", "ship", Map::new()).await.expect("the task completes");
        assert_eq!(result.text(), "shipped");
        manager.request("mock", "prompts/list", Map::new()).await.expect("prompts/list");
    })
    .await;
    manager.close().await;

    assert_eq!(*asked.lock().unwrap(), ["Ship it?"], "the question was put once");
    let requests = server.requests();
    let by = |method: &str| requests.iter().filter(|r| r.rpc_method().as_deref() == Some(method)).collect::<Vec<_>>();
    let updates = by("tasks/update");
    assert_eq!(updates.len(), 1, "one tasks/update");
    assert_eq!(updates[0].params()["inputResponses"]["q"]["action"], "accept");
    assert!(by("tasks/get").len() >= 4, "polled past the stale snapshots");
    for request in by("tasks/get").into_iter().chain(updates) {
        assert_eq!(request.header("mcp-name"), Some("t-1"), "Mcp-Name is the task id");
        assert_eq!(request.params()["taskId"], "t-1");
        assert!(declares_tasks(request), "tasks/* declare the extension");
    }
    assert!(declares_tasks(by("tools/call")[0]), "tools/call declares the extension");
    assert!(!declares_tasks(by("prompts/list")[0]), "other requests do not");
    let polls = polls.lock().unwrap();
    for pair in polls.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(90), "polls {gap:?} apart, under the 100 ms floor");
    }
}

/// A server's task the client cannot use: a task answering a request that cannot be one is
/// invalid; a task the server forgets mid-wait fails the call naming it; passing failures of a
/// poll (a proxy's 503) are polled through.
#[actix_rt::test]
async fn invalid_forgotten_and_briefly_unreachable_tasks() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let gets = Arc::new(AtomicUsize::new(0));
    let seen_gets = gets.clone();
    let server = MockServer::start(move |request| {
        let id = request.rpc_id();
        let tool = request.params()["name"].as_str().unwrap_or_default().to_owned();
        match request.rpc_method().as_deref() {
            Some("server/discover") => discover(request),
            Some("prompts/list") => {
                Reply::result(&id, with(task_fields("working", 100), json!({"resultType": "task"})))
            }
            Some("tools/call") => {
                let task_id = if tool == "forgotten" { "gone" } else { "flaky" };
                let fields = with(task_fields("working", 100), json!({"resultType": "task", "taskId": task_id}));
                Reply::result(&id, fields)
            }
            Some("tasks/get") if request.params()["taskId"] == "gone" => {
                Reply::error(200, &id, -32602, "Failed to retrieve task: Task has expired")
            }
            Some("tasks/get") => match seen_gets.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Reply::text(503, "text/html", "<h1>503 Service Unavailable</h1>"),
                _ => {
                    let done = with(
                        task_fields("completed", 100),
                        json!({"taskId": "flaky", "resultType": "complete",
                            "result": {"content": [{"type": "text", "text": "made it"}]}}),
                    );
                    Reply::result(&id, done)
                }
            },
            Some("tasks/cancel") => Reply::result(&id, json!({"resultType": "complete"})),
            _ => Reply::error(400, &id, -32601, "not here"),
        }
    });
    let manager = mock_manager(&server.url(), ClientHandlers::default().elicitation);
    bounded(async {
        match manager.request("mock", "prompts/list", Map::new()).await {
            Err(ClientError::Protocol(message)) => {
                assert_eq!(message, "the server answered prompts/list with a task, which only tools/call may be")
            }
            other => panic!("a protocol error, got {other:?}"),
        }
        let forgotten = manager.call_tool("mock", "forgotten", Map::new()).await.expect_err("the task is gone");
        assert_eq!(
            forgotten.to_string(),
            "task gone is not known to the server (expired, or unknown): Failed to retrieve task: Task has expired"
        );
        let flaky = manager.call_tool("mock", "flaky", Map::new()).await.expect("polled through two 503s");
        assert_eq!(flaky.text(), "made it");
        assert_eq!(gets.load(Ordering::SeqCst), 3);
    })
    .await;
    manager.close().await;
    // Neither an ended task nor a forgotten one is cancelled.
    let cancels = server.rpc_methods().into_iter().filter(|m| m == "tasks/cancel").count();
    assert_eq!(cancels, 0);
}

/// A task is an answer only a client that declared the extension may get: on a handshake-era
/// session (where the client declares nothing) a `tools/call` answered with one is refused.
#[actix_rt::test]
async fn a_task_on_a_wire_that_did_not_offer_tasks_is_refused() {
    let server = MockServer::start(|request| {
        let id = request.rpc_id();
        match request.rpc_method().as_deref() {
            Some("initialize") => Reply::result(
                &id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "mock-session", "version": "1"}}),
            ),
            Some("notifications/initialized") => Reply::accepted(),
            Some("tools/call") => Reply::result(&id, with(task_fields("working", 100), json!({"resultType": "task"}))),
            _ => Reply::error(400, &id, -32601, "not here"),
        }
    });
    let manager = mock_manager(&server.url(), ClientHandlers::default().elicitation);
    let mut record = manager.record("mock").expect("record");
    let pinned = json!({"url": server.url(), "protocolVersion": "2025-11-25"});
    record.server = mcpd::client::config::ServerEntry::Http(ConfigDocument::from_value(pinned).expect("document"));
    manager.upsert(record);
    bounded(async {
        match manager.call_tool("mock", "build", Map::new()).await {
            Err(ClientError::Protocol(message)) => {
                assert_eq!(message, "the server answered tools/call with a task without being offered tasks")
            }
            other => panic!("a protocol error, got {other:?}"),
        }
    })
    .await;
    manager.close().await;
    let call = server.requests().into_iter().find(|r| r.rpc_method().as_deref() == Some("tools/call")).expect("a call");
    assert!(!declares_tasks(&call), "nothing declared on this wire");
}
