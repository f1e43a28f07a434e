//! Interop with the official Python MCP SDK: `actors/tests/interop/py_client.py`
//! (mcp==2.3.0) talks to the real `mcpd` binary over stdio and HTTP, in the handshake era and
//! in the stateless 2026-07-28 era, with and without an API key.
//!
//! The interpreter is `MCPD_TEST_PYTHON` when set, else the venv that `scripts/setup-python.sh`
//! provisions. When Python cannot be provisioned the tests fail, unless `MCPD_SKIP_INTEROP=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::support::interop_script;
use crate::support::process;
use crate::support::process::{mcpd_binary, run_with_timeout, text, HttpChild};
use crate::support::python;

/// The deadline of one Python client run.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(60);
/// The text the script sends to `echo`.
const ECHO_TEXT: &str = "héllo from python";

/// The interpreter, provisioned once per test process; `None` when skipping is allowed.
fn python() -> Option<PathBuf> {
    python::python_with(python::MCP_SDK)
}

/// Runs `py_client.py <args>` with a 60 s deadline.
fn py_client(python: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(python);
    cmd.arg(interop_script("py_client.py"))
        .args(args)
        .current_dir(process::empty_dir())
        // The stdio server inherits this environment (the script forwards it).
        .env("RUST_LOG", "warn")
        .env_remove("MCPD_KEYS")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    run_with_timeout(&mut cmd, b"", PYTHON_TIMEOUT)
}

/// Parses the script's one JSON line, asserting it succeeded.
fn report(output: &Output) -> Value {
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "py_client.py failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        text(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "py_client.py must print exactly one line:\n{stdout}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("py_client.py output is not JSON ({e}): {}", lines[0]))
}

/// The checks every successful run must pass.
fn assert_report(report: &Value, protocol_version: &str) {
    assert_eq!(report["protocolVersion"], protocol_version, "{report}");
    assert_eq!(report["serverInfo"]["name"], "mcpd", "{report}");
    let tools: Vec<&str> =
        report["tools"].as_array().unwrap_or_else(|| panic!("{report}")).iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"echo") && tools.contains(&"time"), "tools {tools:?}: {report}");
    assert_eq!(report["echo"]["content"][0]["type"], "text", "{report}");
    assert_eq!(report["echo"]["content"][0]["text"], ECHO_TEXT, "{report}");
    assert_ne!(report["echo"]["isError"], true, "{report}");
    assert_eq!(report["unknownTool"]["error"]["code"], -32602, "an unknown tool is a -32602 error: {report}");
}

/// stdio, handshake era: the SDK negotiates 2025-11-25, lists echo and time, echoes UTF-8, and
/// sees an unknown tool as -32602.
#[test]
fn python_sdk_over_stdio_legacy() {
    let Some(python) = python() else { return };
    let binary = mcpd_binary();
    let output = py_client(&python, &["--mode", "legacy", "stdio", binary.to_str().expect("UTF-8 path")]);
    assert_report(&report(&output), "2025-11-25");
}

/// HTTP, handshake era (session-less): the same checks against `mcpd -p 0`.
#[test]
fn python_sdk_over_http_legacy() {
    let Some(python) = python() else { return };
    let server = HttpChild::spawn(&[]);
    let output = py_client(&python, &["--mode", "legacy", "http", &server.url()]);
    assert_report(&report(&output), "2025-11-25");
}

/// HTTP, `--mode auto`: the SDK discovers the stateless 2026-07-28 wire and uses it.
#[test]
fn python_sdk_over_http_auto_uses_stateless_wire() {
    let Some(python) = python() else { return };
    let server = HttpChild::spawn(&[]);
    let output = py_client(&python, &["--mode", "auto", "http", &server.url()]);
    assert_report(&report(&output), "2026-07-28");
}

/// HTTP with `--key`: the SDK succeeds with `Authorization: Bearer <key>` and fails without it.
#[test]
fn python_sdk_over_http_with_key() {
    let Some(python) = python() else { return };
    let server = HttpChild::spawn(&["--key", "s3cret"]);
    let output = py_client(&python, &["http", &server.url(), "--header", "Authorization:Bearer s3cret"]);
    assert_report(&report(&output), "2025-11-25");

    let output = py_client(&python, &["http", &server.url()]);
    assert!(
        !output.status.success(),
        "without the key the client must fail; stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty(), "a failed run prints no result line: {}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Unauthorized") || stderr.contains("401"),
        "the failure must be the missing key:\n{stderr}"
    );
}
