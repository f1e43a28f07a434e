//! `mcpd tools` and `mcpd call` (the client runtime from the command line), driven through the
//! real binary against a real `mcpd -p 0` child: exit 0 on success, 1 when the tool reports an
//! error, 2 on a transport, protocol or configuration failure — always with exactly one
//! `mcpd: ` line on stderr when it fails, and nothing else there (client commands log at
//! `error` only).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::process;
use crate::support::process::{mcpd_command, run_with_timeout, text, HttpChild, RUN_TIMEOUT};

/// Runs `mcpd <args>` (the client commands' default logging: errors only).
fn mcpd(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Asserts success: exit 0, nothing on stderr. Returns stdout.
fn assert_ok(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "exit status; stdout:\n{}\nstderr:\n{stderr}", text(&output.stdout));
    assert!(stderr.is_empty(), "stderr must be empty on success, got:\n{stderr}");
    text(&output.stdout)
}

/// Asserts a failure with exit code 2: exactly one non-empty `mcpd: ` line on stderr, no panic,
/// nothing on stdout. Returns the line.
fn assert_exit_2(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "exit status; stdout:\n{}\nstderr:\n{stderr}", text(&output.stdout));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr must be exactly one line, got:\n{stderr}");
    let line = lines[0];
    assert!(line.starts_with("mcpd: ") && line.trim().len() > "mcpd:".len(), "stderr line {line:?}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "panic text in stderr:\n{stderr}");
    assert!(output.stdout.is_empty(), "stdout must be empty, got:\n{}", text(&output.stdout));
    line.to_owned()
}

/// A loopback port with nothing listening on it.
fn closed_port() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// Writes a `mcpServers` file with three servers: `local` (the given URL), `other` (nothing
/// listens there) and `fs` (a stdio server).
fn servers_file(dir: &tempfile::TempDir, local_url: &str) -> PathBuf {
    let path = dir.path().join("mcp.json");
    let file = json!({
        "mcpServers": {
            "local": { "url": local_url },
            "other": { "url": format!("http://127.0.0.1:{}/mcp", closed_port()) },
            "fs": { "command": process::mcpd_binary(), "args": ["--no-file-tools"] },
            "gone": { "command": "/nonexistent/mcpd-test-server" }
        }
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&file).expect("json")).expect("write servers file");
    path
}

// ---- success --------------------------------------------------------------------------------

/// `mcpd tools URL` lists echo and time, one per line with the first line of the description,
/// then the count.
#[test]
fn tools_lists_the_servers_tools() {
    let server = HttpChild::spawn(&["--no-file-tools"]);
    let stdout = assert_ok(&mcpd(&["tools", &server.url()]));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("echo  Returns the given text unchanged."), "{stdout}");
    assert!(lines[1].starts_with("time  Returns the current time in UTC"), "{stdout}");
    assert_eq!(lines[2], "(2 tools)");
}

/// `mcpd tools URL --json` prints the tools as one JSON array.
#[test]
fn tools_json_output_parses() {
    let server = HttpChild::spawn(&["--no-file-tools"]);
    let stdout = assert_ok(&mcpd(&["tools", &server.url(), "--json"]));
    let tools: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    let tools = tools.as_array().unwrap_or_else(|| panic!("not an array: {tools}"));
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["echo", "time"]);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]), "{}", tools[0]);
    assert!(tools[1]["outputSchema"].is_object(), "{}", tools[1]);
}

/// `mcpd call URL echo --args '{"text":"x"}'` prints x; with `--json`, the whole result.
#[test]
fn call_prints_the_tools_text() {
    let server = HttpChild::spawn(&[]);
    let stdout = assert_ok(&mcpd(&["call", &server.url(), "echo", "--args", r#"{"text":"x"}"#]));
    assert_eq!(stdout, "x\n");
    let stdout = assert_ok(&mcpd(&["call", &server.url(), "echo", "--args", r#"{"text":"héllo 世界"}"#, "--json"]));
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    assert_eq!(result["content"], json!([{"type": "text", "text": "héllo 世界"}]), "{result}");
    assert_ne!(result["isError"], true, "{result}");
    // A tool with structured output only (time) prints its content block.
    let stdout = assert_ok(&mcpd(&["call", &server.url(), "time"]));
    assert!(stdout.contains("unixMillis"), "{stdout}");
}

/// A pinned handshake revision works against mcpd too (session-less 2025-11-25).
#[test]
fn call_with_a_pinned_protocol_version() {
    let server = HttpChild::spawn(&[]);
    let stdout = assert_ok(&mcpd(&[
        "call",
        &server.url(),
        "echo",
        "--args",
        r#"{"text":"pinned"}"#,
        "--protocol-version",
        "2025-11-25",
    ]));
    assert_eq!(stdout, "pinned\n");
    let line = assert_exit_2(&mcpd(&["tools", &server.url(), "--protocol-version", "1999-01-01"]));
    assert!(line.contains("1999-01-01"), "{line}");
}

// ---- tool errors ----------------------------------------------------------------------------

/// A tool that reports an error: exit 1, its text on stdout, one line on stderr.
#[test]
fn a_tool_error_exits_1_with_one_stderr_line() {
    let server = HttpChild::spawn(&[]);
    let output = mcpd(&["call", &server.url(), "echo", "--args", "{}"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert_eq!(stderr.lines().collect::<Vec<_>>(), ["mcpd: the tool reported an error"], "{stderr}");
    assert_eq!(text(&output.stdout), "echo: missing required argument text\n");
    // With --json the raw result shows isError, and the exit code is still 1.
    let output = mcpd(&["call", &server.url(), "echo", "--args", r#"{"text": 5}"#, "--json"]);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{}", text(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON result");
    assert_eq!(result["isError"], true, "{result}");
}

// ---- failures: exit 2 -----------------------------------------------------------------------

/// An unknown tool is a JSON-RPC error (-32602), not a tool error: exit 2.
#[test]
fn an_unknown_tool_exits_2() {
    let server = HttpChild::spawn(&[]);
    let line = assert_exit_2(&mcpd(&["call", &server.url(), "no_such_tool"]));
    assert!(line.contains("no_such_tool") && line.contains("-32602"), "{line}");
}

/// Nothing listening: exit 2 with the transport error, at once.
#[test]
fn an_unreachable_server_exits_2() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    process::mcpd_binary(); // built (if need be) before the clock starts
    let started = Instant::now();
    let line = assert_exit_2(&mcpd(&["tools", &url]));
    assert!(line.starts_with("mcpd: transport error"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let line = assert_exit_2(&mcpd(&["call", &url, "echo", "--args", r#"{"text":"x"}"#]));
    assert!(line.starts_with("mcpd: transport error"), "{line}");
}

/// A server that accepts connections but never answers: exit 2 after `--timeout` (5 s, the
/// minimum), not a hang.
#[test]
fn a_silent_server_exits_2_after_the_timeout() {
    // Bound but never accepted: the kernel completes connections, nobody answers.
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().expect("addr").port());
    process::mcpd_binary(); // built (if need be) before the clock starts
    let started = Instant::now();
    let line = assert_exit_2(&mcpd(&["tools", &url, "--timeout", "5"]));
    let elapsed = started.elapsed();
    assert!(line.to_ascii_lowercase().contains("time"), "the line says it timed out: {line}");
    assert!(elapsed >= Duration::from_secs(4) && elapsed < Duration::from_secs(12), "took {elapsed:?}");
    drop(listener);
}

/// `--args` that is not JSON, or not an object: exit 2 before connecting.
#[test]
fn bad_args_json_exits_2() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let line = assert_exit_2(&mcpd(&["call", &url, "echo", "--args", "{text: x}"]));
    assert!(line.starts_with("mcpd: --args is not JSON"), "{line}");
    let line = assert_exit_2(&mcpd(&["call", &url, "echo", "--args", "[1, 2]"]));
    assert_eq!(line, "mcpd: --args must be a JSON object");
}

/// No URL (and no --config): exit 2.
#[test]
fn a_missing_url_exits_2() {
    let line = assert_exit_2(&mcpd(&["tools"]));
    assert_eq!(line, "mcpd: give the server's URL, or --config FILE");
    assert_exit_2(&mcpd(&["call"]));
    let line = assert_exit_2(&mcpd(&["call", "echo"]));
    assert_eq!(line, "mcpd: give the server's URL and the tool's name");
    let line = assert_exit_2(&mcpd(&["tools", "ftp://127.0.0.1/mcp"]));
    assert!(line.contains("http://") || line.contains("http(s)"), "{line}");
}

// ---- --config / --server --------------------------------------------------------------------

/// A three-server `mcpServers` file: `--server local` works for tools and call; the stdio
/// entry is refused with its message; no `--server` or an unknown one is exit 2 naming the
/// servers.
#[test]
fn config_file_with_several_servers() {
    let server = HttpChild::spawn(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = servers_file(&dir, &server.url());
    let file = file.to_str().expect("UTF-8 path");

    let stdout = assert_ok(&mcpd(&["tools", "--config", file, "--server", "local"]));
    assert!(stdout.starts_with("echo  ") && stdout.contains("\ntime  "), "{stdout}");
    let stdout =
        assert_ok(&mcpd(&["call", "--config", file, "--server", "local", "echo", "--args", r#"{"text":"cfg"}"#]));
    assert_eq!(stdout, "cfg\n");

    // A stdio entry starts the child (another mcpd) and talks to it over its stdin/stdout.
    let stdout = assert_ok(&mcpd(&["tools", "--config", file, "--server", "fs"]));
    assert!(stdout.starts_with("echo  ") && stdout.ends_with("(2 tools)\n"), "{stdout}");
    let stdout =
        assert_ok(&mcpd(&["call", "--config", file, "--server", "fs", "echo", "--args", r#"{"text":"over stdio"}"#]));
    assert_eq!(stdout, "over stdio\n");
    let line = assert_exit_2(&mcpd(&["tools", "--config", file, "--server", "fs", "--header", "A: b"]));
    assert_eq!(line, "mcpd: --header, --sse and --protocol-version apply to HTTP servers, not to a stdio server");
    let line = assert_exit_2(&mcpd(&["tools", "--config", file, "--server", "gone"]));
    assert!(line.contains("/nonexistent/mcpd-test-server"), "{line}");

    let line = assert_exit_2(&mcpd(&["tools", "--config", file]));
    assert!(line.contains("several servers (local, other, fs, gone)") && line.contains("--server"), "{line}");
    let line = assert_exit_2(&mcpd(&["tools", "--config", file, "--server", "nope"]));
    assert!(line.contains("no server \"nope\"") && line.contains("local, other, fs, gone"), "{line}");
    let line = assert_exit_2(&mcpd(&["tools", "--config", file, "--server", "other"]));
    assert!(line.starts_with("mcpd: transport error"), "{line}");
    let line = assert_exit_2(&mcpd(&["tools", &server.url(), "--config", file]));
    assert_eq!(line, "mcpd: give either a URL or --config, not both");
    let missing = dir.path().join("missing.json");
    let line = assert_exit_2(&mcpd(&["tools", "--config", missing.to_str().expect("UTF-8")]));
    assert!(line.starts_with("mcpd: cannot read"), "{line}");
}

// ---- --header -------------------------------------------------------------------------------

/// Against `mcpd --key k`: `--header Authorization:Bearer k` works for tools and call; no key
/// or a wrong one is exit 2 (401).
#[test]
fn header_flag_carries_the_api_key() {
    let server = HttpChild::spawn(&["--key", "k", "--no-file-tools"]);
    let url = server.url();
    let stdout = assert_ok(&mcpd(&["tools", &url, "--header", "Authorization:Bearer k"]));
    assert!(stdout.ends_with("(2 tools)\n"), "{stdout}");
    let stdout = assert_ok(&mcpd(&[
        "call",
        &url,
        "echo",
        "--args",
        r#"{"text":"authorized"}"#,
        "--header",
        "Authorization: Bearer k",
    ]));
    assert_eq!(stdout, "authorized\n");

    // No OAuth metadata: the 401 is reported with what would help (a credential of its own).
    let line = assert_exit_2(&mcpd(&["tools", &url]));
    assert!(line.contains("answered HTTP 401") && line.contains("--header"), "{line}");
    let line = assert_exit_2(&mcpd(&["call", &url, "echo", "--args", r#"{"text":"x"}"#]));
    assert!(line.contains("401"), "{line}");
    let line = assert_exit_2(&mcpd(&["tools", &url, "--header", "Authorization:Bearer wrong"]));
    assert!(line.contains("401"), "{line}");
    let line = assert_exit_2(&mcpd(&["tools", &url, "--header", "no-colon-here"]));
    assert!(line.contains("Name:value"), "{line}");
}

/// Runs `openssl` with these arguments in `dir`; panics with its stderr when it fails.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (Debian package openssl)");
    assert!(output.status.success(), "openssl {args:?}: {}", text(&output.stderr));
}

/// A private CA and a leaf certificate for 127.0.0.1 signed by it: (ca.pem, leaf.pem, leaf.key).
fn test_pki(dir: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=mcpd test CA", "-days", "2"]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend(["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("leaf.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n\
         subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .expect("write leaf.ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "2",
            "-extfile",
            "leaf.ext",
        ],
    );
    (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key"))
}

/// A TLS proxy (Python's standard library) in front of an HTTP child; killed on drop.
struct TlsProxy {
    child: std::process::Child,
    port: u16,
}

impl TlsProxy {
    fn start(cert: &std::path::Path, key: &std::path::Path, target: u16) -> TlsProxy {
        use std::io::BufRead as _;
        let script = crate::support::interop_script("tls_proxy.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .arg(cert)
            .arg(key)
            .arg(target.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).expect("the proxy prints its port");
        let port = line.trim().parse().unwrap_or_else(|_| panic!("port line {line:?}"));
        TlsProxy { child, port }
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `https://` servers work: the certificate is verified against the built-in roots plus
/// `SSL_CERT_FILE`; without the private CA the handshake fails with exit 2 and a line that
/// names the certificate problem.
#[test]
fn https_servers_are_verified_against_the_roots_and_ssl_cert_file() {
    let server = HttpChild::spawn(&["--no-file-tools"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = test_pki(dir.path());
    let proxy = TlsProxy::start(&cert, &key, server.port);
    let url = format!("https://127.0.0.1:{}/mcp", proxy.port);

    let mut trusted = mcpd_command();
    trusted.env("SSL_CERT_FILE", &ca).args(["call", &url, "echo", "--args", r#"{"text":"over TLS"}"#]);
    assert_eq!(assert_ok(&run_with_timeout(&mut trusted, b"", RUN_TIMEOUT)), "over TLS\n");
    let mut listed = mcpd_command();
    listed.env("SSL_CERT_FILE", &ca).args(["tools", &url]);
    assert!(assert_ok(&run_with_timeout(&mut listed, b"", RUN_TIMEOUT)).ends_with("(2 tools)\n"));

    let mut untrusted = mcpd_command();
    untrusted.env_remove("SSL_CERT_FILE").args(["tools", &url, "--timeout", "5"]);
    let line = assert_exit_2(&run_with_timeout(&mut untrusted, b"", RUN_TIMEOUT));
    assert!(line.to_lowercase().contains("certificate"), "{line}");
}
