//! Independent MCP servers for the client interop tests, run as child processes on 127.0.0.1:
//!
//! * the npm reference server `@modelcontextprotocol/server-everything` (pinned; installed by
//!   `scripts/setup-node.sh` into `${MCPD_CACHE:-<repo>/.cache}/server-everything`) in Streamable
//!   HTTP mode, started as `PORT=0 node --require actors/tests/interop/loopback_listen.cjs <entry>
//!   streamableHttp` so that it binds 127.0.0.1 only and prints its real port;
//! * any script that prints `LISTENING <url>` (e.g. `actors/tests/interop/fastmcp_server.py`).
//!
//! Both kinds print one `REQUEST {json}` line per HTTP request they receive (method, path and
//! the MCP headers), which the tests read to see the wire the client chose.
//!
//! Node is `MCPD_TEST_NODE` when set, else `node` on PATH. When the server cannot be provisioned
//! the tests fail, unless `MCPD_SKIP_INTEROP=1`, which makes them skip with a notice.

use std::io::{BufRead as _, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::eventually::poll_until;
use super::process::await_announcement;
use super::{interop_script, run_setup_script, workspace_root};

/// How long a server may take to print its `LISTENING` line.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The line prefix a server prints once it is bound.
const LISTENING: &str = "LISTENING ";
/// The line prefix of a logged request.
const REQUEST: &str = "REQUEST ";

/// `MCPD_TEST_NODE`, else `node`.
pub(crate) fn node() -> PathBuf {
    std::env::var_os("MCPD_TEST_NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from)
}

/// Runs `scripts/setup-node.sh` (once per test process); the path of server-everything's entry.
fn setup_everything() -> Result<PathBuf, String> {
    static ENTRY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ENTRY.get_or_init(|| run_setup_script("setup-node.sh", &[("NODE", node().as_os_str())])).clone()
}

/// The entry of server-everything; `None` (with a notice) when it cannot be provisioned and
/// `MCPD_SKIP_INTEROP=1`, a panic otherwise.
pub(crate) fn everything_entry() -> Option<PathBuf> {
    match setup_everything() {
        Ok(entry) => Some(entry),
        Err(reason) if std::env::var("MCPD_SKIP_INTEROP").as_deref() == Ok("1") => {
            eprintln!("NOTICE: skipping server-everything interop test (MCPD_SKIP_INTEROP=1): {reason}");
            None
        }
        Err(reason) => panic!("cannot provision server-everything (set MCPD_SKIP_INTEROP=1 to skip): {reason}"),
    }
}

/// The servers-file entry (`mcpServers`) that runs server-everything's `entry` over stdio.
pub(crate) fn everything_stdio(entry: &std::path::Path) -> Value {
    serde_json::json!({"command": node().to_string_lossy(), "args": [entry.to_string_lossy(), "stdio"]})
}

/// Starts server-everything in Streamable HTTP mode on a free loopback port; `None` when it
/// cannot be provisioned and skipping is allowed.
pub(crate) fn spawn_everything() -> Option<ScriptServer> {
    let entry = everything_entry()?;
    let mut cmd = Command::new(node());
    cmd.arg("--require")
        .arg(interop_script("loopback_listen.cjs"))
        .arg(entry)
        .arg("streamableHttp")
        .env("PORT", "0")
        .env_remove("NODE_OPTIONS")
        .current_dir(workspace_root());
    Some(ScriptServer::spawn(cmd, "server-everything"))
}

/// A server child process that printed `LISTENING <url>`; killed when dropped.
#[derive(Debug)]
pub(crate) struct ScriptServer {
    child: Child,
    what: String,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

fn read_lines<R: Read + Send + 'static>(source: R, lines: Arc<Mutex<Vec<String>>>, tx: Sender<String>) {
    std::thread::spawn(move || {
        // Keep reading to EOF so the child never blocks on a full pipe.
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix(LISTENING) {
                let _ = tx.send(url.trim().to_owned());
            }
            lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
}

impl ScriptServer {
    /// Spawns `cmd` (stdin closed, stdout and stderr read line by line) and waits for its
    /// `LISTENING <url>` line on either stream.
    pub(crate) fn spawn(mut cmd: Command, what: &str) -> ScriptServer {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot spawn {what} ({cmd:?}): {e}"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = channel::<String>();
        read_lines(child.stdout.take().expect("stdout"), lines.clone(), tx.clone());
        read_lines(child.stderr.take().expect("stderr"), lines.clone(), tx);
        let url = await_announcement(&mut child, &rx, STARTUP_TIMEOUT, what, || {
            lines.lock().unwrap_or_else(|p| p.into_inner()).join("\n")
        });
        assert!(url.starts_with("http://127.0.0.1:"), "{what} must listen on 127.0.0.1 only, got {url}");
        ScriptServer { child, what: what.to_owned(), url, lines }
    }

    /// The MCP endpoint URL (`http://127.0.0.1:PORT/mcp`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Every line printed so far (stdout and stderr interleaved).
    pub(crate) fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The output, for assertion messages.
    pub(crate) fn transcript(&self) -> String {
        format!("--- {} output ---\n{}", self.what, self.output().join("\n"))
    }

    /// The `REQUEST {json}` lines so far, parsed.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.output()
            .iter()
            .filter_map(|line| line.strip_prefix(REQUEST))
            .map(|json| serde_json::from_str(json).unwrap_or_else(|e| panic!("bad request log line ({e}): {json}")))
            .collect()
    }

    /// Waits (at most `timeout`, without blocking the actix runtime) until `done(requests)`
    /// holds; whether it did. The log lines arrive through a pipe, a little after the requests.
    pub(crate) async fn wait_for_requests(&self, timeout: Duration, done: impl Fn(&[Value]) -> bool) -> bool {
        poll_until(timeout, async || done(&self.requests())).await.is_ok()
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
