//! The official Python SDK in one long session over streamable HTTP (`py_reload_client.py`),
//! driven command by command: list tools, call one, wait for `tools/list_changed`. Killed when
//! dropped.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use super::eventually::eventually_blocking;

/// How long one answer of the Python client may take.
const ANSWER: Duration = Duration::from_secs(40);

pub(crate) struct PySession {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl PySession {
    /// A session at `url`; with `key`, every request carries `Authorization: Bearer <key>`.
    pub(crate) fn start(python: &Path, url: &str, key: Option<&str>) -> PySession {
        let mut cmd = Command::new(python);
        cmd.arg(super::interop_script("py_reload_client.py"))
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(key) = key {
            cmd.env("MCPD_TEST_KEY", key);
        }
        let mut child = cmd.spawn().expect("python");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = PySession { child, stdin, lines };
        assert_eq!(client.next()["ready"], true, "the Python client did not start its session");
        client
    }

    fn next(&mut self) -> Value {
        let line = self.lines.recv_timeout(ANSWER).expect("an answer from the Python client");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON from the Python client ({e}): {line}"))
    }

    /// One command (see `py_reload_client.py`) and its answer.
    pub(crate) fn ask(&mut self, command: Value) -> Value {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.next()
    }

    /// The tool names the session lists, and how many list_changed it heard so far.
    pub(crate) fn list(&mut self) -> (Vec<String>, u64) {
        let answer = self.ask(json!({"op": "list"}));
        let names = answer["tools"].as_array().unwrap_or_else(|| panic!("{answer}"));
        (names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(), answer["listChanged"].as_u64().unwrap())
    }

    /// The answer to a call: `{"result": …}` or `{"error": …}`.
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.ask(json!({"op": "call", "tool": tool, "arguments": arguments}))
    }

    /// The text of a call's result (the test fails on an error).
    pub(crate) fn call_text(&mut self, tool: &str, arguments: Value) -> String {
        let answer = self.call(tool, arguments);
        let result = &answer["result"];
        assert!(result.is_object() && result["isError"] != true, "{tool}: {answer}");
        result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
    }

    /// Waits (at most `within`) until the session heard more than `after` list_changed.
    pub(crate) fn wait_list_changed(&mut self, after: u64, within: Duration) -> u64 {
        let answer = self.ask(json!({"op": "wait_list_changed", "after": after, "timeout": within.as_secs()}));
        assert_eq!(answer["timedOut"], false, "no tools/list_changed reached the Python client: {answer}");
        answer["listChanged"].as_u64().unwrap()
    }

    /// Lists until `check` accepts the names (at most `within`).
    pub(crate) fn list_until(
        &mut self,
        what: &str,
        within: Duration,
        check: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        eventually_blocking(what, within, || {
            let (names, _) = self.list();
            if check(&names) {
                Ok(names)
            } else {
                Err(format!("{names:?}"))
            }
        })
    }
}

impl Drop for PySession {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "quit"}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
