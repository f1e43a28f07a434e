//! The tasks extension (`io.modelcontextprotocol/tasks`) through the real `mcpd serve` binary
//! over HTTP: declared command tools that run for seconds become tasks, are polled to completion
//! or cancelled (their process group killed), a required-task tool without the client's opt-in
//! is `-32021`, the caps, TTL expiry that empties the store (status JSON and `/metrics`), task
//! status notifications on `subscriptions/listen`, and the `Mcp-Name` check.
//!
//! Every command is harmless (`sleep`, `echo`, pid files in a fresh temporary project) and every
//! wait is bounded.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{http, mcpd_command, HttpChild};

pub(crate) const WAIT: Duration = Duration::from_secs(20);
const TASKS: &str = "io.modelcontextprotocol/tasks";

pub(crate) fn project(tools: Value) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("tools.json");
    std::fs::write(&file, json!({ "tools": tools }).to_string()).expect("tools file");
    let path = |p: &Path| p.to_str().expect("UTF-8 path").to_owned();
    let (root, file) = (path(dir.path()), path(&file));
    (dir, root, file)
}

pub(crate) fn command_tool(name: &str, script: &str, support: &str) -> Value {
    json!({"name": name, "description": format!("runs {script}"), "inputSchema": {"type": "object", "properties": {}},
           "argv": ["sh", "-c", script], "timeoutSeconds": 120, "taskSupport": support})
}

pub(crate) fn serve(root: &str, file: &str, extra: &[&str]) -> HttpChild {
    let mut cmd = mcpd_command();
    cmd.args(["serve", "-d", root, "--tools", file, "--no-file-tools", "--no-file-resources"]).args(extra);
    HttpChild::spawn_command(cmd)
}

fn meta_declaring(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities})
}

/// The client capabilities: the tasks extension when `opt_in`, else none.
fn capabilities(opt_in: bool) -> Value {
    if opt_in {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    }
}

pub(crate) fn meta(opt_in: bool) -> Value {
    meta_declaring(capabilities(opt_in))
}

/// One 2026-07-28 request: its HTTP status and JSON body. `name` goes in `Mcp-Name`.
pub(crate) fn rpc(port: u16, method: &str, name: &str, params: Value, opt_in: bool) -> (u16, Value) {
    rpc_declaring(port, method, name, params, capabilities(opt_in))
}

/// As [`rpc`], with these client capabilities.
pub(crate) fn rpc_declaring(
    port: u16,
    method: &str,
    name: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, Value) {
    params["_meta"] = meta_declaring(capabilities);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let (status, _, text) = http(port, "POST", "/mcp", &headers, &body);
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
}

pub(crate) fn call(port: u16, tool: &str, opt_in: bool) -> Value {
    let (status, body) = rpc(port, "tools/call", tool, json!({"name": tool, "arguments": {}}), opt_in);
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

pub(crate) fn get(port: u16, task_id: &str) -> Value {
    let (_, body) = rpc(port, "tasks/get", task_id, json!({"taskId": task_id}), true);
    body
}

pub(crate) fn created_task(result: &Value) -> String {
    assert_eq!(result["resultType"], "task", "{result}");
    result["taskId"].as_str().unwrap_or_else(|| panic!("no taskId: {result}")).to_owned()
}

pub(crate) fn wait_terminal(port: u16, task_id: &str) -> Value {
    eventually_blocking("the task ends", WAIT, || {
        let task = get(port, task_id)["result"].clone();
        let status = task["status"].as_str().unwrap_or_default();
        if ["completed", "failed", "cancelled"].contains(&status) {
            Ok(task)
        } else {
            Err(task.to_string())
        }
    })
}

pub(crate) fn status_json(port: u16) -> Value {
    let (_, _, body) = http(port, "GET", "/status", &[], "");
    serde_json::from_str(&body).expect("status JSON")
}

/// Whether a process is gone (no /proc entry, or a zombie waiting to be reaped).
pub(crate) fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => matches!(stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()), Some('Z' | 'X')),
    }
}

/// A declared command that runs for two seconds becomes a task for a client that opted in: the
/// answer is a `CreateTaskResult` readable at once, `working` while it runs, then `completed`
/// with the command's output inline. Without the opt-in the same call answers synchronously.
#[test]
fn a_long_declared_command_becomes_a_task_and_is_polled_to_completion() {
    let (_dir, root, file) = project(json!([command_tool("build", "sleep 2; echo build-done", "optional")]));
    let server = serve(&root, &file, &["--task-after", "300", "--task-poll-interval", "250"]);
    let (_, list) = rpc(server.port, "tools/list", "", json!({}), false);
    let build = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "build").cloned().unwrap();
    assert_eq!(build["execution"], json!({"taskSupport": "optional"}), "{build}");

    let started = Instant::now();
    let created = call(server.port, "build", true);
    let task_id = created_task(&created);
    assert!(started.elapsed() < Duration::from_millis(1800), "answered before the command ended");
    assert_eq!((created["status"].clone(), created["ttlMs"].clone()), (json!("working"), json!(300_000)));
    assert_eq!(created["pollIntervalMs"], 250);
    assert!(created.get("result").is_none() && created.get("requestState").is_none(), "{created}");
    let now = get(server.port, &task_id);
    assert_eq!(now["result"]["status"], "working", "readable at once: {now}");
    assert_eq!(now["result"]["resultType"], "complete");

    let done = wait_terminal(server.port, &task_id);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("build-done"), "{done}");
    assert!(done["result"].get("isError").is_none_or(|e| e == false), "{done}");

    let sync = call(server.port, "build", false);
    assert!(sync.get("taskId").is_none(), "no opt-in, no task: {sync}");
    assert_eq!(sync["resultType"], "complete");
    assert!(sync["content"][0]["text"].as_str().unwrap().contains("build-done"), "{sync}");
}

/// `tasks/cancel` stops the running command: its whole process group (the shell and the
/// `sleep` it started) is gone, and the task reads `cancelled`; cancelling again is the same
/// empty acknowledgement.
#[test]
fn cancelling_a_task_kills_its_process_group() {
    let script = "sleep 120 & echo $! > child.pid; echo $$ > shell.pid; wait";
    let (dir, root, file) = project(json!([command_tool("hang", script, "optional")]));
    let server = serve(&root, &file, &["--task-after", "200"]);
    let task_id = created_task(&call(server.port, "hang", true));
    let read_pid = |name: &str| -> Option<u32> {
        std::fs::read_to_string(dir.path().join(name)).ok().and_then(|s| s.trim().parse().ok())
    };
    let (shell, child) =
        eventually_blocking("the command wrote its pids", WAIT, || read_pid("shell.pid").zip(read_pid("child.pid")));
    assert!(!is_dead(shell) && !is_dead(child), "both run before the cancel");

    let (status, ack) = rpc(server.port, "tasks/cancel", &task_id, json!({"taskId": task_id}), true);
    assert_eq!((status, ack["result"].clone()), (200, json!({"resultType": "complete"})), "{ack}");
    assert_eq!(get(server.port, &task_id)["result"]["status"], "cancelled");
    eventually_blocking("the shell and its child are gone", WAIT, || is_dead(shell) && is_dead(child));
    let (_, again) = rpc(server.port, "tasks/cancel", &task_id, json!({"taskId": task_id}), true);
    assert_eq!(again["result"], json!({"resultType": "complete"}), "idempotent: {again}");
    let (_, unknown) = rpc(server.port, "tasks/cancel", "nope", json!({"taskId": "nope"}), true);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// A tool whose task support is `required` answers `-32021` naming the extension to a client
/// that did not opt in, and a task at once to one that did; `tasks/*` without the opt-in is
/// `-32021` too, and the removed `tasks/result` is `-32601`.
#[test]
fn a_required_task_tool_needs_the_opt_in() {
    let (_dir, root, file) = project(json!([command_tool("deploy", "echo deployed", "required")]));
    let server = serve(&root, &file, &[]);
    let (status, refused) = rpc(server.port, "tools/call", "deploy", json!({"name": "deploy", "arguments": {}}), false);
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"], json!({"requiredCapabilities": {"extensions": {TASKS: {}}}}));

    let task_id = created_task(&call(server.port, "deploy", true));
    let done = wait_terminal(server.port, &task_id);
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("deployed"), "{done}");
    let (_, gated) = rpc(server.port, "tasks/get", &task_id, json!({"taskId": task_id}), false);
    assert_eq!(gated["error"]["code"], -32021, "{gated}");
    let (_, removed) = rpc(server.port, "tasks/result", "", json!({"taskId": task_id}), true);
    assert_eq!(removed["error"]["code"], -32601, "{removed}");
}

/// Over the per-client cap an optional tool just answers synchronously, and a required one gets
/// an error that says why; the first task is unaffected.
#[test]
fn over_the_task_cap_optional_calls_run_synchronously_and_required_ones_are_refused() {
    let tools = json!([
        command_tool("slow", "sleep 1; echo slow-done", "optional"),
        command_tool("deploy", "echo deployed", "required"),
    ]);
    let (_dir, root, file) = project(tools);
    let server = serve(&root, &file, &["--task-after", "200", "--max-tasks-per-client", "1"]);
    let first = created_task(&call(server.port, "slow", true));
    let second = call(server.port, "slow", true);
    assert!(second.get("taskId").is_none(), "over the cap: synchronous ({second})");
    assert!(second["content"][0]["text"].as_str().unwrap().contains("slow-done"), "{second}");
    let (_, refused) = rpc(server.port, "tools/call", "deploy", json!({"name": "deploy", "arguments": {}}), true);
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("maximum of 1 tasks"), "{message}");
    assert_eq!(wait_terminal(server.port, &first)["status"], "completed");
    assert_eq!(status_json(server.port)["tasks"]["held"], 1, "the completed task keeps its place until it expires");
}

/// A task and its result are kept for their whole TTL, then removed: `tasks/get` is `-32602`,
/// and the status JSON and `/metrics` show the store empty again.
#[test]
fn tasks_expire_after_their_ttl_and_the_store_empties() {
    let (_dir, root, file) = project(json!([command_tool("deploy", "echo deployed", "required")]));
    let server = serve(&root, &file, &["--task-ttl", "1500"]);
    let task_id = created_task(&call(server.port, "deploy", true));
    assert_eq!(wait_terminal(server.port, &task_id)["ttlMs"], 1500);
    let status = status_json(server.port);
    assert_eq!(
        (status["tasks"]["held"].clone(), status["tasks"]["byStatus"]["completed"].clone()),
        (json!(1), json!(1))
    );

    let gone = eventually_blocking("the task expired", WAIT, || {
        let body = get(server.port, &task_id);
        if body.get("error").is_some() {
            Ok(body)
        } else {
            Err(body.to_string())
        }
    });
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    let message = gone["error"]["message"].as_str().unwrap();
    assert!(message.contains("expired") || message.contains("not found"), "{message}");
    eventually_blocking("the store is empty", WAIT, || {
        let tasks = status_json(server.port)["tasks"].clone();
        (tasks["held"] == 0 && tasks["expired"] == 1).then_some(()).ok_or(tasks.to_string())
    });
    let (_, _, metrics) = http(server.port, "GET", "/metrics", &[], "");
    assert!(metrics.contains("mcpd_tasks{status=\"completed\"} 0"), "{metrics}");
    assert!(metrics.contains("mcpd_tasks_expired_total 1"), "{metrics}");
    assert!(metrics.contains("mcpd_tasks_created_total 1"), "{metrics}");
}

/// Reads a `subscriptions/listen` SSE stream until `until` accepts a message (bounded).
pub(crate) fn listen(port: u16, params: Value, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}).to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    for line in BufReader::new(stream).lines() {
        let line = line.expect("read the stream");
        if let Some(data) = line.strip_prefix("data:") {
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else { continue };
            let done = until(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
        assert!(Instant::now() < deadline, "no matching message within {WAIT:?}: {seen:?}");
    }
    panic!("the stream ended first: {seen:?}")
}

/// `subscriptions/listen` with `notifications.taskIds` acknowledges the caller's own tasks and
/// then sends `notifications/tasks` with the full task as it changes, up to `completed` with its
/// result; a client that did not declare the extension is refused with `-32021`.
#[test]
fn task_status_notifications_arrive_on_subscriptions_listen() {
    let (_dir, root, file) = project(json!([command_tool("slow", "sleep 1; echo slow-done", "required")]));
    let server = serve(&root, &file, &[]);
    let task_id = created_task(&call(server.port, "slow", true));
    let (status, refused) =
        rpc(server.port, "subscriptions/listen", "", json!({"notifications": {"taskIds": [task_id]}}), false);
    assert_eq!((status, refused["error"]["code"].clone()), (400, json!(-32021)), "{refused}");

    let params = json!({"notifications": {"taskIds": [task_id, "someone-elses"]}, "_meta": meta(true)});
    let seen =
        listen(server.port, params, |m| m["method"] == "notifications/tasks" && m["params"]["status"] == "completed");
    let ack = &seen[0];
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task_id]), "only the caller's tasks: {ack}");
    let done = seen.last().unwrap();
    assert_eq!(done["params"]["taskId"], json!(task_id));
    assert!(done["params"]["result"]["content"][0]["text"].as_str().unwrap().contains("slow-done"), "{done}");
}

/// `Mcp-Name` must repeat `params.taskId` on `tasks/*`: a mismatch is rejected like any other
/// routing-header mismatch (HTTP 400, `-32020`), a match is served.
#[test]
fn mcp_name_must_equal_the_task_id() {
    let (_dir, root, file) = project(json!([command_tool("deploy", "echo deployed", "required")]));
    let server = serve(&root, &file, &[]);
    let task_id = created_task(&call(server.port, "deploy", true));
    let (status, mismatch) = rpc(server.port, "tasks/get", "another-task", json!({"taskId": task_id}), true);
    assert_eq!((status, mismatch["error"]["code"].clone()), (400, json!(-32020)), "{mismatch}");
    let (status, matched) = rpc(server.port, "tasks/get", &task_id, json!({"taskId": task_id}), true);
    assert_eq!((status, matched["result"]["taskId"].clone()), (200, json!(task_id)), "{matched}");
}

/// One 2026-07-28 request over `mcpd serve`'s stdio (no handshake on that wire): its answer.
fn stdio_rpc(
    stdin: &mut std::process::ChildStdin,
    lines: &std::sync::mpsc::Receiver<Value>,
    id: i64,
    method: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = meta(true);
    let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes();
    line.push(b'\n');
    stdin.write_all(&line).expect("write to mcpd");
    stdin.flush().expect("flush");
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = lines.recv_timeout(left).unwrap_or_else(|e| panic!("no answer to {method} ({e})"));
        if message["id"] == id {
            return message;
        }
    }
}

/// Over stdio too: a required-task command's call with the opt-in is a task, polled with
/// `tasks/get` on the same stream to its result; `tasks/cancel` of a second one stops it.
#[test]
fn over_stdio_a_call_becomes_a_task_polled_and_cancelled_on_the_same_stream() {
    let (dir, root, file) = project(json!([
        command_tool("build", "sleep 1; echo stdio-done", "required"),
        command_tool("hang", "echo $$ > hang.pid; exec sleep 30", "required"),
    ]));
    let mut cmd = mcpd_command();
    cmd.args(["serve", "-d", &root, "--tools", &file, "--no-file-tools", "--no-file-resources"])
        .args(["--task-poll-interval", "200"])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawn mcpd serve (stdio)");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(value) = serde_json::from_str::<Value>(&line) else { continue };
            if tx.send(value).is_err() {
                break;
            }
        }
    });

    let created = stdio_rpc(&mut stdin, &lines, 1, "tools/call", json!({"name": "build", "arguments": {}}));
    let task_id = created_task(&created["result"]);
    let mut id = 1;
    let done = loop {
        id += 1;
        let got = stdio_rpc(&mut stdin, &lines, id, "tasks/get", json!({"taskId": task_id}));
        let status = got["result"]["status"].as_str().unwrap_or_else(|| panic!("{got}")).to_owned();
        if status != "working" {
            break got["result"].clone();
        }
        assert!(id < 200, "the task never ended: {got}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("stdio-done"), "{done}");

    let hang = stdio_rpc(&mut stdin, &lines, 1000, "tools/call", json!({"name": "hang", "arguments": {}}));
    let hang_id = created_task(&hang["result"]);
    let pid_file = dir.path().join("hang.pid");
    let pid: u32 = eventually_blocking("the command wrote its pid", WAIT, || {
        std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse().ok())
    });
    let ack = stdio_rpc(&mut stdin, &lines, 1001, "tasks/cancel", json!({"taskId": hang_id}));
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    eventually_blocking("the cancelled command is gone", WAIT, || is_dead(pid));
    let cancelled = stdio_rpc(&mut stdin, &lines, 1002, "tasks/get", json!({"taskId": hang_id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");

    drop(stdin);
    let status = child.wait().expect("mcpd exits when stdin ends");
    assert!(status.success(), "{status}");
}
