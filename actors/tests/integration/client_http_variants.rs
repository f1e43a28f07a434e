//! The client and the gateway against servers that frame their answers as real servers do,
//! not as actix does: an independent program (`http_variants_server.py`, Python's standard
//! `http.server`) answering HTTP/1.0 with and without `Content-Length`, HTTP/1.1 with
//! `Connection: close`, HTTP/1.1 that drops connections idle for 150 ms, chunked with trailers,
//! and gzip — each over the 2025-06-18 handshake and the 2026-07-28 stateless wire.
//!
//! `mcpd tools` and `mcpd call` succeed 20 times out of 20 against each (a 5% failure rate would
//! show), and a gateway in front of all of them lists every remote's tool and passes 20 rounds
//! of calls to each, spaced so that a kept connection goes stale between them.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};
use crate::support::{interop_script, python};

const MODES: [&str; 6] = ["http10", "http10-eof", "http11-close", "http11-idle", "chunked", "gzip"];
const WIRES: [&str; 2] = ["handshake", "stateless"];
/// How many times each client command runs against each server.
const RUNS: usize = 20;

/// A running `http_variants_server.py MODE WIRE`; killed when dropped.
struct Variant {
    child: Child,
    port: u16,
    name: String,
}

impl Variant {
    fn start(python: &std::path::Path, mode: &str, wire: &str) -> Variant {
        let mut child = Command::new(python)
            .arg(interop_script("http_variants_server.py"))
            .args([mode, wire])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (tx, rx) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("listening on ").and_then(|p| p.trim().parse::<u16>().ok()) {
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{mode} {wire} did not start"));
        Variant { child, port, name: format!("{}_{wire}", mode.replace('-', "_")) }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Variant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn every_variant(python: &std::path::Path) -> Vec<Variant> {
    MODES
        .iter()
        .flat_map(|mode| WIRES.iter().map(move |wire| (mode, wire)))
        .map(|(m, w)| Variant::start(python, m, w))
        .collect()
}

/// Runs `mcpd ARGS`; its stdout, or a failure naming the run and what mcpd said.
fn mcpd(args: &[&str]) -> Result<String, String> {
    let output = process::run_with_timeout(process::mcpd_command().args(args), b"", Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    match output.status.success() {
        true => Ok(stdout),
        false => Err(format!("mcpd {args:?}: {}{stdout}", String::from_utf8_lossy(&output.stderr))),
    }
}

#[test]
fn mcpd_tools_and_call_work_with_every_framing() {
    let Some(python) = python::python_with("import http.server") else { return };
    let variants = every_variant(&python);
    // The servers side by side, each one's runs in turn (one thread per server).
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = variants
            .iter()
            .map(|variant| {
                scope.spawn(move || {
                    let url = variant.url();
                    let mut failures = Vec::new();
                    for run in 0..RUNS {
                        match mcpd(&["tools", &url]) {
                            Ok(listed) if listed.contains("echo") => {}
                            Ok(listed) => failures.push(format!("{} tools #{run}: no echo in {listed}", variant.name)),
                            Err(e) => failures.push(format!("{} tools #{run}: {e}", variant.name)),
                        }
                        let text = format!("run {run}");
                        let arguments = json!({ "text": text }).to_string();
                        match mcpd(&["call", &url, "echo", "--args", &arguments]) {
                            Ok(out) if out.contains(&text) => {}
                            Ok(out) => failures.push(format!("{} call #{run}: {out}", variant.name)),
                            Err(e) => failures.push(format!("{} call #{run}: {e}", variant.name)),
                        }
                    }
                    failures
                })
            })
            .collect();
        runs.into_iter().flat_map(|run| run.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        variants.len() * RUNS * 2,
        failures.join("\n")
    );
}

fn call(gateway: &HttpChild, tool: &str, text: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {"text": text}}})
    .to_string();
    let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    let (code, _, answer) = process::http(gateway.port, "POST", "/mcp", &headers, &body);
    assert_eq!(code, 200, "{answer}");
    serde_json::from_str(&answer).unwrap()
}

#[test]
fn a_gateway_lists_and_calls_remotes_of_every_framing() {
    let Some(python) = python::python_with("import http.server") else { return };
    let variants = every_variant(&python);
    let dir = tempfile::tempdir().unwrap();
    let servers: serde_json::Map<String, Value> =
        variants.iter().map(|v| (v.name.clone(), json!({ "url": v.url() }))).collect();
    let file = dir.path().join("servers.json");
    std::fs::write(&file, json!({ "mcpServers": servers }).to_string()).unwrap();
    let gateway = HttpChild::spawn(&["serve", "--servers", file.to_str().unwrap()]);
    let status = eventually_blocking("every remote is up", Duration::from_secs(30), || {
        let (_, _, body) = process::http(gateway.port, "GET", "/status", &[], "");
        let status: Value = serde_json::from_str(&body).unwrap_or_default();
        let remotes = status["remotes"].as_array().cloned().unwrap_or_default();
        match remotes.len() == variants.len() && remotes.iter().all(|r| r["up"] == true && r["tools"] == 1) {
            true => Ok(status),
            false => Err(status),
        }
    });
    assert!(status["remotes"].as_array().unwrap().iter().all(|r| r["error"].is_null()), "{status}");
    let mut failures = Vec::new();
    for round in 0..RUNS {
        for variant in &variants {
            let text = format!("{} round {round}", variant.name);
            let answer = call(&gateway, &format!("{}__echo", variant.name), &text);
            if answer["result"]["content"][0]["text"] != text.as_str() {
                failures.push(format!("{}: {answer}", variant.name));
            }
        }
        // Longer than the idle server keeps a connection: the next round finds it closed.
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        failures.is_empty(),
        "{} of {} calls failed:\n{}",
        failures.len(),
        RUNS * variants.len(),
        failures.join("\n")
    );
    let (_, _, body) = process::http(gateway.port, "GET", "/status", &[], "");
    let status: Value = serde_json::from_str(&body).unwrap();
    let down: Vec<&Value> = status["remotes"].as_array().unwrap().iter().filter(|r| r["up"] != true).collect();
    assert!(down.is_empty(), "remotes marked down: {down:?}");
}

/// A server that takes the request and then closes, or resets the connection, or is not there:
/// each failure says what happened.
#[test]
fn a_server_that_refuses_resets_or_closes_early_is_an_error_naming_it() {
    use std::io::Read as _;
    use std::net::TcpListener;

    fn serve(reset: bool) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8) {
                let Ok(mut stream) = stream else { continue };
                stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                if reset {
                    // Unread bytes and a zero linger make the close a reset.
                    socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
                }
                drop(stream);
            }
        });
        port
    }
    let closed_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for (port, names) in [
        (serve(false), "the server closed the connection without answering"),
        (serve(true), "reset"),
        (closed_port, "Connection refused"),
    ] {
        let error = mcpd(&["tools", &format!("http://127.0.0.1:{port}/mcp")]).unwrap_err();
        assert!(error.contains(names) && !error.contains("connector has been disconnected"), "{error}");
    }
}
