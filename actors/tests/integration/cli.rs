//! The `mcpd` command line, driven through the real binary: usage errors are one
//! line on stderr with exit code 2, unsafe or impossible configurations refuse to start, and
//! flags, the environment and properties files configure what clients see.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::support::process::{http, json_lines, mcpd_command, ndjson, run_with_timeout, text, HttpChild, RUN_TIMEOUT};

/// Runs `mcpd <args>` with empty stdin.
fn run(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Runs `mcpd <args>` with logging off, so stderr holds only what the command itself prints.
fn run_quiet(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.env("RUST_LOG", "off").args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Asserts the shape of a fatal error: the exit code (`None`: any failure), exactly one
/// non-empty `mcpd: ` line on stderr, nothing about panics, nothing on stdout. Returns the line.
fn assert_one_line_error(output: &Output, code: Option<i32>) -> String {
    let stderr = text(&output.stderr);
    match code {
        Some(code) => assert_eq!(output.status.code(), Some(code), "exit status; stderr:\n{stderr}"),
        None => assert!(!output.status.success(), "expected failure; stderr:\n{stderr}"),
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr must be exactly one line, got:\n{stderr}");
    let line = lines[0];
    assert!(line.starts_with("mcpd: ") && line.len() > "mcpd: ".len(), "stderr line {line:?}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "panic text in stderr:\n{stderr}");
    assert!(output.stdout.is_empty(), "stdout must be empty, got:\n{}", text(&output.stdout));
    line.to_owned()
}

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}
    })
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Runs a stdio session (initialize, then `tools/list`) with `cmd` and returns the responses by
/// id plus the whole output. Asserts a clean exit.
fn stdio_session(mut cmd: Command) -> (Value, Value, Output) {
    let input = ndjson(&[initialize(1), request(2, "tools/list", json!({}))]);
    let output = run_with_timeout(&mut cmd, &input, RUN_TIMEOUT);
    assert!(output.status.success(), "exit {:?}; stderr:\n{}", output.status, text(&output.stderr));
    let responses = json_lines(&output.stdout);
    let by_id = |id: u64| {
        responses
            .iter()
            .find(|r| r["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response with id {id} in {responses:?}"))
            .clone()
    };
    let (init, list) = (by_id(1), by_id(2));
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    assert!(list.get("result").is_some(), "tools/list failed: {list}");
    (init, list, output)
}

fn stdio_args(args: &[&str]) -> (Value, Value, Output) {
    let mut cmd = mcpd_command();
    cmd.args(args);
    stdio_session(cmd)
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array in {list}"))
        .iter()
        .map(|t| t["name"].as_str().expect("tool name").to_owned())
        .collect()
}

fn write_properties(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write properties");
    path.to_str().expect("UTF-8 path").to_owned()
}

const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn post_mcp(port: u16, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut all = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    let (status, _, body) = http(port, "POST", "/mcp", &all, TOOLS_LIST);
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {body:?}"));
    (status, value)
}

fn assert_unauthorized(port: u16, headers: &[(&str, &str)]) {
    let (status, body) = post_mcp(port, headers);
    assert_eq!(status, 401, "headers {headers:?}: {body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32001, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(body.get("id").is_some_and(Value::is_null), "id must be present and null: {body}");
}

fn assert_authorized(port: u16, headers: &[(&str, &str)]) {
    let (status, body) = post_mcp(port, headers);
    assert_eq!(status, 200, "headers {headers:?}: {body}");
    assert!(body["result"]["tools"].is_array(), "{body}");
}

fn get_status(port: u16) -> Value {
    let (status, _, body) = http(port, "GET", "/status", &[], "");
    assert_eq!(status, 200, "GET /status: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("status is not JSON ({e}): {body:?}"))
}

/// An unknown flag is a usage error: exit 2 and one `mcpd: ` line, no panic or clap wall of text.
#[test]
fn unknown_flag_is_a_one_line_usage_error() {
    let line = assert_one_line_error(&run(&["--no-such-flag"]), Some(2));
    assert!(line.contains("--no-such-flag"), "{line}");
}

/// A non-numeric port is a usage error with the same one-line shape.
#[test]
fn non_numeric_port_is_a_one_line_usage_error() {
    let line = assert_one_line_error(&run(&["-p", "abc"]), Some(2));
    assert!(line.contains("abc"), "{line}");
}

/// A port above 65535 is a usage error with the same one-line shape.
#[test]
fn out_of_range_port_is_a_one_line_usage_error() {
    let line = assert_one_line_error(&run(&["-p", "70000"]), Some(2));
    assert!(line.contains("70000"), "{line}");
}

/// A port that is already taken makes mcpd fail with one line naming the address.
#[test]
fn port_in_use_fails_with_one_line_naming_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = taken.local_addr().expect("local addr").port().to_string();
    let line = assert_one_line_error(&run_quiet(&["-p", &port]), None);
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
    drop(taken);
}

/// A `-c` file that does not exist is a usage error (exit 2, one line naming it).
#[test]
fn missing_config_file_is_a_usage_error() {
    let line = assert_one_line_error(&run(&["-c", "/nonexistent/file.properties"]), Some(2));
    assert!(line.contains("/nonexistent/file.properties"), "{line}");
}

/// `-s` is an HTTP feature: without `-p` it is a one-line usage error; with `-p` the server
/// starts in streamable mode and says so in its status.
#[test]
fn session_flag_needs_a_port_and_enables_streamable_http() {
    let line = assert_one_line_error(&run(&["-s"]), Some(2));
    assert!(line.contains("--port"), "{line}");
    let child = HttpChild::spawn(&["-s"]);
    let status = get_status(child.port);
    assert_eq!(status["transport"], "streamable-http", "{status}");
}

/// Binding a non-loopback address without any key is refused, and the message says how to fix it.
#[test]
fn non_loopback_bind_without_key_is_refused() {
    let line = assert_one_line_error(&run_quiet(&["--host", "0.0.0.0", "-p", "0"]), None);
    assert!(line.contains("0.0.0.0"), "{line}");
    assert!(line.contains("key"), "{line}");
    assert!(line.contains("--allow-unauthenticated"), "{line}");
}

/// `--allow-unauthenticated` lets a non-loopback bind start, and it serves `GET /status`.
#[test]
fn allow_unauthenticated_permits_a_non_loopback_bind() {
    let child = HttpChild::spawn(&["--host", "0.0.0.0", "--allow-unauthenticated"]);
    let status = get_status(child.port);
    assert_eq!(status["running"], true, "{status}");
    assert_eq!(status["host"], "0.0.0.0", "{status}");
    assert_eq!(status["port"], child.port, "{status}");
    assert_eq!(status["authRequired"], false, "{status}");
}

/// `-n` and `-v` set the serverInfo that `initialize` reports.
#[test]
fn name_and_version_flags_set_server_info() {
    let (init, _, _) = stdio_args(&["-n", "myname", "-v", "9.9.9"]);
    assert_eq!(init["result"]["serverInfo"], json!({"name": "myname", "version": "9.9.9"}), "{init}");
}

/// `--projectDir` is accepted as an alias of `-d` (as is `--project-dir`).
#[test]
fn project_dir_alias_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_str().expect("UTF-8 path");
    for flag in ["--projectDir", "-d", "--project-dir"] {
        let (init, list, _) = stdio_args(&[flag, path]);
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{flag}: {init}");
        assert!(tool_names(&list).contains(&"echo".to_owned()), "{flag}: {list}");
    }
}

/// A project directory that does not exist is a usage error (exit 2, one line naming it).
#[test]
fn missing_project_dir_is_a_usage_error() {
    let line = assert_one_line_error(&run(&["-d", "/nonexistent/project/dir"]), Some(2));
    assert!(line.contains("/nonexistent/project/dir"), "{line}");
    let line = assert_one_line_error(&run(&["--projectDir", "/nonexistent/project/dir"]), Some(2));
    assert!(line.contains("/nonexistent/project/dir"), "{line}");
}

/// `mcpd serve` speaks MCP over stdio exactly like bare `mcpd`.
#[test]
fn serve_subcommand_matches_bare_command() {
    let (bare_init, bare_list, _) = stdio_args(&[]);
    let (serve_init, serve_list, _) = stdio_args(&["serve"]);
    assert_eq!(serve_init, bare_init);
    assert_eq!(serve_list, bare_list);
    let names = tool_names(&serve_list);
    for expected in ["echo", "time", "read_file", "list_directory", "grep"] {
        assert!(names.iter().any(|n| n == expected), "{expected} in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "write_file" || n == "run_command"), "writes and commands are off by default");
    let (init, _, _) = stdio_args(&["serve", "-n", "served"]);
    assert_eq!(init["result"]["serverInfo"]["name"], "served", "{init}");
}

/// `enabledTools=echo` in a `-c` properties file exposes only `echo`.
#[test]
fn enabled_tools_in_config_file_filters_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_properties(dir.path(), "only-echo.properties", "enabledTools=echo\n");
    let (_, list, _) = stdio_args(&["-c", &config]);
    assert_eq!(tool_names(&list), ["echo"], "{list}");
}

/// An empty `enabledTools=` exposes no tools and says so: a WARN on stderr, and the warning in
/// `GET /status`.
#[test]
fn empty_enabled_tools_exposes_nothing_and_warns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_properties(dir.path(), "none.properties", "enabledTools=\n");
    let (_, list, output) = stdio_args(&["-c", &config]);
    assert_eq!(tool_names(&list), Vec::<String>::new(), "{list}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.lines().any(|l| l.contains("WARN") && l.contains("enabledTools")),
        "expected a WARN about enabledTools on stderr:\n{stderr}"
    );

    let child = HttpChild::spawn(&["-c", &config]);
    let status = get_status(child.port);
    assert_eq!(status["tools"], 0, "{status}");
    let warnings = status["warnings"].as_array().unwrap_or_else(|| panic!("no warnings array: {status}"));
    assert!(warnings.iter().any(|w| w.as_str().is_some_and(|w| w.contains("enabledTools"))), "{status}");
    assert!(
        child.stderr_lines().iter().any(|l| l.contains("WARN") && l.contains("enabledTools")),
        "HTTP stderr: {:?}",
        child.stderr_lines()
    );
}

/// `--key` protects `POST /mcp`: no key is 401 with a JSON-RPC error (-32001, id null); a
/// `Bearer` key is 200.
#[test]
fn key_flag_requires_the_key_over_http() {
    let child = HttpChild::spawn(&["--key", "k1"]);
    assert_unauthorized(child.port, &[]);
    assert_unauthorized(child.port, &[("Authorization", "Bearer nope")]);
    assert_authorized(child.port, &[("Authorization", "Bearer k1")]);
    let (status, _, body) = http(child.port, "GET", "/status", &[], "");
    assert_eq!(status, 401, "GET /status is behind the key too: {body}");
    let (status, _, body) = http(child.port, "GET", "/status", &[("Authorization", "Bearer k1")], "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).expect("status JSON")["authRequired"], true, "{body}");
}

/// `MCPD_KEYS=a,b` supplies keys: `X-API-Key: b` is accepted, no key is not.
#[test]
fn mcpd_keys_env_supplies_keys() {
    let mut cmd = mcpd_command();
    cmd.env("MCPD_KEYS", "a,b");
    let child = HttpChild::spawn_command(cmd);
    assert_authorized(child.port, &[("X-API-Key", "b")]);
    assert_authorized(child.port, &[("X-API-Key", "a")]);
    assert_unauthorized(child.port, &[]);
    assert_unauthorized(child.port, &[("X-API-Key", "a,b")]);
}

/// `keys=zz` in a `-c` properties file supplies a key: `Api-Key: zz` works, `X-MCP-Key: wrong`
/// is 401.
#[test]
fn keys_in_config_file_supply_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_properties(dir.path(), "keys.properties", "keys=zz\n");
    let child = HttpChild::spawn(&["-c", &config]);
    assert_authorized(child.port, &[("Api-Key", "zz")]);
    assert_authorized(child.port, &[("X-MCP-Key", "zz")]);
    assert_unauthorized(child.port, &[("X-MCP-Key", "wrong")]);
    assert_unauthorized(child.port, &[]);
}

/// A `./mcp.properties` in the working directory is read without `-c`.
#[test]
fn mcp_properties_in_working_directory_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_properties(dir.path(), "mcp.properties", "name=fromfile\nversion=1.2.3\n");
    let mut cmd = mcpd_command();
    cmd.current_dir(dir.path());
    let (init, _, _) = stdio_session(cmd);
    assert_eq!(init["result"]["serverInfo"], json!({"name": "fromfile", "version": "1.2.3"}), "{init}");
    // A flag still beats the file.
    let mut cmd = mcpd_command();
    cmd.current_dir(dir.path()).args(["-n", "fromflag"]);
    let (init, _, _) = stdio_session(cmd);
    assert_eq!(init["result"]["serverInfo"]["name"], "fromflag", "{init}");
}
