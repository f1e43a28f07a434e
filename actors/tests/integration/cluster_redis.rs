//! Cluster mode's Redis link (`mcpd serve --redis URL`, README "Running several instances"),
//! against Debian's `redis-server` run as a child on a free loopback port, and `redis-cli` as
//! the independent reader of what mcpd stored: mcpd starts while Redis is down and says so
//! (`/metrics`, `/status`, one log line; task requests fail saying so), connects by itself when
//! Redis comes up, shares its `requestState` keys there, and reports Redis going away again.
//! Skipped, saying so, when `redis-server` is not installed (`.ci/run` installs it). Tasks shared
//! through Redis: one created on an instance is cancelled through another (which aborts its work
//! where it runs), one parked for input there is answered through another, and one whose
//! instance is killed is marked failed by the other's sweep. The suite's scenarios through nginx
//! over several instances are scripts/cluster-test.sh's.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};
use crate::tasks;

/// How long a change of Redis's state may take to show (retries every 1 s, refreshes every 5 s).
const NOTICE: Duration = Duration::from_secs(20);

fn installed(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Whether `redis-server` and `redis-cli` are installed; the test is skipped, saying so, when not.
pub(crate) fn redis_installed() -> bool {
    let there = installed("redis-server") && installed("redis-cli");
    if !there {
        eprintln!("SKIPPED: redis-server (with redis-cli) is not installed; .ci/run installs it");
    }
    there
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `redis-server` child with its own config in a temp directory; killed when dropped.
pub(crate) struct Redis {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Redis {
    pub(crate) fn start(port: u16) -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("redis.conf");
        std::fs::write(
            &config,
            format!(
                "bind 127.0.0.1\nport {port}\ndaemonize no\ndir {}\nlogfile \"\"\nsave \"\"\nappendonly no\n",
                dir.path().display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-server")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let redis = Redis { child, _dir: dir };
        eventually_blocking("redis-server answers PING", NOTICE, || cli(port, &["PING"]).as_deref() == Some("PONG"));
        redis
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-cli -p PORT ARGS` (raw output, trimmed); None when it failed.
pub(crate) fn cli(port: u16, args: &[&str]) -> Option<String> {
    let output =
        Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &port.to_string()]).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.starts_with("Could not connect")).then_some(text)
}

fn metric(port: u16, name: &str) -> Option<i64> {
    let (_, _, body) = process::http(port, "GET", "/metrics", &[], "");
    body.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn cluster_status(port: u16) -> Value {
    let (status, _, body) = process::http(port, "GET", "/status", &[], "");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["cluster"].clone()
}

#[test]
fn mcpd_starts_without_redis_connects_when_it_comes_and_reports_it_gone() {
    if !redis_installed() {
        return;
    }
    let port = free_port();
    let url = format!("redis://127.0.0.1:{port}/");
    let mcpd = HttpChild::spawn(&["serve", "--redis", &url]);

    // Down at start: serving, saying so.
    eventually_blocking("mcpd reports Redis down", NOTICE, || {
        metric(mcpd.port, "mcpd_redis_up") == Some(0) && metric(mcpd.port, "mcpd_redis_errors_total") >= Some(1)
    });
    let status = cluster_status(mcpd.port);
    assert_eq!(status["redis"], url.as_str(), "{status}");
    assert_eq!(status["up"], false, "{status}");
    assert_eq!(status["requestStateKeys"], "local", "{status}");
    assert!(status["lastError"].as_str().is_some_and(|e| !e.is_empty()), "{status}");
    assert_eq!(metric(mcpd.port, "mcpd_request_state_keys_shared"), Some(0));
    let logged = format!("cluster: Redis at {url} is unreachable");
    assert!(mcpd.stderr_lines().iter().any(|line| line.contains(&logged)), "{:?}", mcpd.stderr_lines());
    // Task requests need Redis: a clear error, not a hang nor "not found".
    let id = "0123456789abcdef0123456789abcdef";
    let (status, body) = tasks::rpc(mcpd.port, "tasks/get", id, json!({"taskId": id}), true);
    assert_eq!((status, body["error"]["code"].clone()), (200, json!(-32603)), "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("task store: Redis")), "{body}");

    // Redis comes up: mcpd connects by itself and shares its keys there.
    let redis = Redis::start(port);
    eventually_blocking("mcpd reports Redis up with shared keys", NOTICE, || {
        metric(mcpd.port, "mcpd_redis_up") == Some(1) && metric(mcpd.port, "mcpd_request_state_keys_shared") == Some(1)
    });
    let status = cluster_status(mcpd.port);
    assert_eq!((&status["up"], &status["requestStateKeys"]), (&Value::Bool(true), &Value::from("shared")), "{status}");
    // The current epoch's key and the next one's (made one epoch ahead), 32 bytes each, expiring.
    let keys = cli(port, &["--scan", "--pattern", "mcpd:request-state-key:*"]).unwrap();
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort_unstable();
    let epoch = status["keyEpoch"].as_u64().unwrap();
    assert_eq!(
        keys,
        [format!("mcpd:request-state-key:86400:{epoch}"), format!("mcpd:request-state-key:86400:{}", epoch + 1)],
        "the keys mcpd created"
    );
    for key in &keys {
        assert_eq!(cli(port, &["STRLEN", key]).as_deref(), Some("32"), "{key}");
        let ttl: i64 = cli(port, &["TTL", key]).unwrap().parse().unwrap();
        assert!(ttl > 0 && ttl <= 3 * 86_400, "{key} expires: TTL {ttl}");
    }

    // A second instance reads the keys the first made (SET NX): none is added. It has sessions,
    // which cluster mode does not share yet: its status and log say so.
    let second = HttpChild::spawn(&["serve", "-s", "--redis", &url]);
    let (_, _, body) = process::http(second.port, "GET", "/status", &[], "");
    let warnings = serde_json::from_str::<Value>(&body).unwrap()["warnings"].clone();
    assert!(
        warnings
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("--redis shares the stateless wire only")),
        "{warnings}"
    );
    eventually_blocking("the second instance shares the keys", NOTICE, || {
        metric(second.port, "mcpd_request_state_keys_shared") == Some(1)
    });
    let after = cli(port, &["--scan", "--pattern", "mcpd:request-state-key:*"]).unwrap();
    assert_eq!(after.lines().count(), 2, "{after}");

    // Redis goes away: reported, and mcpd goes on serving.
    drop(redis);
    eventually_blocking("mcpd reports Redis down again", NOTICE, || metric(mcpd.port, "mcpd_redis_up") == Some(0));
    let status = cluster_status(mcpd.port);
    assert_eq!(status["up"], false, "{status}");
    assert_eq!(status["requestStateKeys"], "shared", "the ring in force is kept: {status}");
}

#[test]
fn redis_needs_a_port_and_a_redis_url() {
    let run = |args: &[&str]| {
        let output = process::run_with_timeout(process::mcpd_command().args(args), b"", process::RUN_TIMEOUT);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (code, stderr) = run(&["serve", "--redis", "redis://127.0.0.1:1/"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--redis needs --port"), "{stderr}");
    // The property does the same as the flag.
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("mcp.properties");
    std::fs::write(&props, "redis=redis://127.0.0.1:1/\n").unwrap();
    let (code, stderr) = run(&["serve", "-c", props.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--redis needs --port"), "{stderr}");
    let (code, stderr) = run(&["serve", "-p", "0", "--redis", "http://127.0.0.1:1/"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid --redis URL http://127.0.0.1:1/"), "{stderr}");
    // A password never shows.
    let (code, stderr) = run(&["serve", "-p", "0", "--redis", "rediss://:hunter2@127.0.0.1:1/"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        !stderr.contains("hunter2") && stderr.contains("invalid --redis URL rediss://:***@127.0.0.1:1/"),
        "{stderr}"
    );
}

/// Redis and two `mcpd serve --redis` instances over the same declared command tool (`hang`:
/// a shell that writes its pid and its child's, then waits on a 120 s `sleep`); None (the test
/// says it is skipped) without `redis-server`.
fn two_instances() -> Option<(Redis, tempfile::TempDir, HttpChild, HttpChild)> {
    if !redis_installed() {
        return None;
    }
    let port = free_port();
    let redis = Redis::start(port);
    let url = format!("redis://127.0.0.1:{port}/");
    let script = "sleep 120 & echo $! > child.pid; echo $$ > shell.pid; wait";
    let (dir, root, file) = tasks::project(json!([tasks::command_tool("hang", script, "optional")]));
    let a = tasks::serve(&root, &file, &["--task-after", "200", "--redis", &url]);
    let b = tasks::serve(&root, &file, &["--task-after", "200", "--redis", &url]);
    Some((redis, dir, a, b))
}

/// Calls `hang` on `instance` (a task at once for a client that opted in) and waits for it to
/// run: the task id, and the pids of the command's shell and of its child.
fn hang(instance: &HttpChild, dir: &tempfile::TempDir) -> (String, u32, u32) {
    let task_id = tasks::created_task(&tasks::call(instance.port, "hang", true));
    let read_pid = |name: &str| -> Option<u32> {
        std::fs::read_to_string(dir.path().join(name)).ok().and_then(|s| s.trim().parse().ok())
    };
    let (shell, child) = eventually_blocking("the command wrote its pids", tasks::WAIT, || {
        read_pid("shell.pid").zip(read_pid("child.pid"))
    });
    (task_id, shell, child)
}

/// A task created on instance A is read and cancelled through instance B (straight to B's
/// port): it reads `cancelled` on both, and A stops running it — the command's shell and its
/// child are killed and A's status counts no running task.
#[test]
fn a_task_created_on_one_instance_is_cancelled_through_another() {
    let Some((_redis, dir, a, b)) = two_instances() else { return };
    let (task_id, shell, child) = hang(&a, &dir);
    let through_b = tasks::get(b.port, &task_id);
    assert_eq!(through_b["result"]["status"], "working", "B reads A's task: {through_b}");
    assert_eq!(tasks::status_json(a.port)["tasks"]["running"], 1);

    let (status, ack) = tasks::rpc(b.port, "tasks/cancel", &task_id, json!({"taskId": task_id}), true);
    assert_eq!((status, ack["result"].clone()), (200, json!({"resultType": "complete"})), "{ack}");
    assert_eq!(tasks::get(b.port, &task_id)["result"]["status"], "cancelled");
    assert_eq!(tasks::get(a.port, &task_id)["result"]["status"], "cancelled");
    eventually_blocking("A aborted the task: its shell and child are gone", tasks::WAIT, || {
        tasks::is_dead(shell) && tasks::is_dead(child)
    });
    eventually_blocking("A runs no task any more", tasks::WAIT, || tasks::status_json(a.port)["tasks"]["running"] == 0);
    // Ended is ended: cancelling again through A changes nothing.
    let (_, again) = tasks::rpc(a.port, "tasks/cancel", &task_id, json!({"taskId": task_id}), true);
    assert_eq!(again["result"], json!({"resultType": "complete"}), "{again}");
    assert_eq!(tasks::get(b.port, &task_id)["result"]["status"], "cancelled");
}

/// Instance A is killed while its task runs: B's sweep sees A's heartbeat expire and marks the
/// task `failed`, saying why, rather than leaving it `working` forever.
#[test]
fn a_task_whose_instance_died_is_marked_failed() {
    let Some((_redis, dir, a, b)) = two_instances() else { return };
    let (task_id, shell, child) = hang(&a, &dir);
    drop(a); // SIGKILL: no goodbye
    let failed = eventually_blocking("B marks the task failed (heartbeat 10 s, sweep every 3 s)", NOTICE, || {
        let task = tasks::get(b.port, &task_id)["result"].clone();
        if task["status"] == "failed" {
            Ok(task)
        } else {
            Err(task.to_string())
        }
    });
    assert_eq!(failed["statusMessage"], "the instance running this task stopped", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    // The orphaned command is the operator's (its mcpd was killed outright); end it.
    for pid in [child, shell] {
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
}

/// The `everything` fixture's `confirm_delete` (a task that asks for confirmation) started on
/// instance A is answered through instance B: B reads it `input_required`, accepts the answer,
/// and A's parked task gets it (relayed through Redis), runs again and completes; B reads the
/// result.
#[test]
fn a_task_parked_on_one_instance_is_answered_through_another() {
    if !redis_installed() {
        return;
    }
    let port = free_port();
    let _redis = Redis::start(port);
    let url = format!("redis://127.0.0.1:{port}/");
    let everything = || {
        let mut cmd = process::everything_command();
        cmd.args(["--redis", &url]);
        HttpChild::spawn_command(cmd)
    };
    let (a, b) = (everything(), everything());
    let call = json!({"name": "confirm_delete", "arguments": {"filename": "notes.txt"}});
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}});
    let (status, created) = tasks::rpc_declaring(a.port, "tools/call", "confirm_delete", call, capabilities);
    assert_eq!(status, 200, "{created}");
    let task_id = tasks::created_task(&created["result"]);
    let parked = eventually_blocking("B reads the task waiting for input", tasks::WAIT, || {
        let task = tasks::get(b.port, &task_id)["result"].clone();
        if task["status"] == "input_required" {
            Ok(task)
        } else {
            Err(task.to_string())
        }
    });
    assert_eq!(parked["inputRequests"]["confirm"]["method"], "elicitation/create", "{parked}");

    let answer =
        json!({"taskId": task_id, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}});
    let (status, ack) = tasks::rpc(b.port, "tasks/update", &task_id, answer, true);
    assert_eq!((status, ack["result"].clone()), (200, json!({"resultType": "complete"})), "{ack}");
    let done = tasks::wait_terminal(b.port, &task_id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Deleted notes.txt", "{done}");
}
