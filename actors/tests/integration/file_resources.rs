//! Resources of `mcpd serve`: project files through `file:///{+path}` (text and
//! binary, MIME types, escapes refused exactly as the file tools refuse them), the listing
//! (ignore files, hidden entries, its cap, pages), subscriptions backed by file watching over
//! stdio and a streamable-HTTP session (a changed file is announced within a second; others are
//! not), declared resources of each kind, `--no-file-resources`, `--enabled-resources`, the
//! status counts, and the official Python SDK reading a project file over stdio and HTTP.
//!
//! Every server is the real binary; waits are bounded arrivals (a line read from the child, an
//! SSE event), never sleeps.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::process::{http, mcpd_binary, mcpd_command, run_with_timeout, text, HttpChild};
use crate::support::server::send;
use crate::support::sse::SseReader;
use crate::support::{interop_script, process, python};

/// How long an answer may take.
const ANSWER: Duration = Duration::from_secs(20);
/// The bound on a change notification.
const NOTIFY_WITHIN: Duration = Duration::from_secs(1);

/// `mcpd serve` over stdio, initialized, with the messages it sent kept in order.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
    notifications: VecDeque<Value>,
    next_id: i64,
}

impl StdioServer {
    fn start(args: &[&str]) -> StdioServer {
        let mut cmd = mcpd_command();
        cmd.args(args).env("RUST_LOG", "warn").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn mcpd");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(value) = serde_json::from_str::<Value>(&line) else { continue };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut server = StdioServer { child, stdin, lines, notifications: VecDeque::new(), next_id: 0 };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(init["result"]["capabilities"]["resources"]["subscribe"] == true, "{init}");
        server.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn write(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its answer (notifications before it are kept).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {method}"));
            if message["id"] == id {
                return message;
            }
            self.notifications.push_back(message);
        }
    }

    /// The next notification, if one comes within `within`.
    fn notification(&mut self, within: Duration) -> Option<Value> {
        self.notifications.pop_front().or_else(|| self.lines.recv_timeout(within).ok())
    }

    fn read(&mut self, uri: &str) -> Value {
        self.request("resources/read", json!({"uri": uri}))
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project: `src/main.rs`, a PNG, a name with a space, a gitignored `target/`, a hidden
/// directory, and a secret outside it reached by a symlink.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join("target")).unwrap();
    std::fs::create_dir_all(p.join(".hidden")).unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(p.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
    std::fs::write(p.join("a b.md"), "# notes\n").unwrap();
    std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(p.join("target/junk.txt"), "junk").unwrap();
    std::fs::write(p.join(".hidden/h.txt"), "h").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.join("leak.txt")).unwrap();
    (dir, outside)
}

fn dir_arg(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

fn listed(server: &mut StdioServer) -> (Vec<String>, usize) {
    let mut uris = Vec::new();
    let mut pages = 0;
    let mut params = json!({});
    for _ in 0..100 {
        let page = server.request("resources/list", params.clone());
        pages += 1;
        uris.extend(
            page["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_owned()),
        );
        match page["result"].get("nextCursor") {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => break,
        }
    }
    (uris, pages)
}

#[test]
fn project_files_are_read_through_the_template_with_their_types() {
    let (dir, _outside) = project();
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path())]);
    let templates = server.request("resources/templates/list", json!({}));
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "file:///{+path}", "{templates}");

    let rust = server.read("file:///src/main.rs");
    assert_eq!(
        rust["result"]["contents"],
        json!([{"uri": "file:///src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}\n"}])
    );
    let png = server.read("file:///logo.png");
    assert_eq!(
        png["result"]["contents"],
        json!([{"uri": "file:///logo.png", "mimeType": "image/png", "blob": "iVBORwABAg=="}])
    );
    let spaced = server.read("file:///a%20b.md");
    assert_eq!(spaced["result"]["contents"][0]["text"], "# notes\n", "{spaced}");
    assert_eq!(spaced["result"]["contents"][0]["mimeType"], "text/markdown", "{spaced}");
    let missing = server.read("file:///nope.txt");
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
}

#[test]
fn escapes_are_refused_exactly_as_the_file_tools_refuse_them() {
    let (dir, outside) = project();
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path())]);
    let absolute = outside.path().join("secret.txt");
    let absolute = absolute.to_str().unwrap();
    let cases = [
        ("file:///../secret.txt".to_owned(), "../secret.txt".to_owned()),
        ("file:///src/%2E%2E/%2E%2E/secret.txt".to_owned(), "src/../../secret.txt".to_owned()),
        (format!("file:///{absolute}"), absolute.to_owned()),
        ("file:///leak.txt".to_owned(), "leak.txt".to_owned()),
    ];
    for (uri, path) in cases {
        let read = server.read(&uri);
        assert_eq!(read["error"]["code"], -32602, "{uri}: {read}");
        let tool = server.request("tools/call", json!({"name": "read_file", "arguments": {"path": path}}));
        assert_eq!(tool["result"]["isError"], true, "{tool}");
        let refusal = tool["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(refusal, format!("read_file: {}", read["error"]["message"].as_str().unwrap()), "{uri}");
        assert!(refusal.ends_with("is outside the project directory"), "{refusal}");
    }
}

#[test]
fn the_listing_respects_ignore_files_hidden_entries_its_cap_and_pages() {
    let (dir, _outside) = project();
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path())]);
    let (uris, _) = listed(&mut server);
    assert_eq!(
        uris,
        ["file:///a%20b.md", "file:///logo.png", "file:///src/main.rs"],
        "no target/, .hidden, .gitignore, symlink"
    );
    drop(server);

    for name in ["c1.txt", "c2.txt", "c3.txt", "c4.txt"] {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let config = dir.path().join("mcp.properties");
    std::fs::write(&config, "pageSize=2\nmaxListedResources=5\n").unwrap();
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path()), "-c", config.to_str().unwrap()]);
    let (uris, pages) = listed(&mut server);
    assert_eq!(uris.len(), 5, "capped at 5: {uris:?}");
    assert_eq!(pages, 3, "5 resources in pages of 2");
    let mut sorted = uris.clone();
    sorted.sort();
    assert_eq!(uris, sorted);
}

/// Appends to a file (an edit on disk).
fn edit(path: &Path) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "// edited").unwrap();
}

#[test]
fn a_subscribed_file_edited_on_disk_is_announced_over_stdio_and_others_are_not() {
    let (dir, _outside) = project();
    std::fs::write(dir.path().join("src/other.rs"), "x").unwrap();
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path())]);
    let answer = server.request("resources/subscribe", json!({"uri": "file:///src/main.rs"}));
    assert_eq!(answer["result"], json!({}), "{answer}");

    // The unsubscribed file changes first: were it announced, its notification would come first.
    edit(&dir.path().join("src/other.rs"));
    let edited = Instant::now();
    edit(&dir.path().join("src/main.rs"));
    let heard = server.notification(NOTIFY_WITHIN).expect("an update within a second");
    let latency = edited.elapsed();
    assert_eq!(
        heard,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///src/main.rs"}})
    );
    eprintln!("stdio: notifications/resources/updated {latency:?} after the edit");

    // Unsubscribed: an edit of main.rs is not announced; the next update is other.rs's.
    server.request("resources/unsubscribe", json!({"uri": "file:///src/main.rs"}));
    server.request("resources/subscribe", json!({"uri": "file:///src/other.rs"}));
    edit(&dir.path().join("src/main.rs"));
    edit(&dir.path().join("src/other.rs"));
    let heard = server.notification(NOTIFY_WITHIN).expect("other.rs's update");
    assert_eq!(heard["params"]["uri"], "file:///src/other.rs", "{heard}");
    // Reading a subscribed file is not a change.
    server.read("file:///src/other.rs");
    edit(&dir.path().join("src/other.rs"));
    let heard = server.notification(NOTIFY_WITHIN).expect("the next edit's update");
    assert_eq!(heard["params"]["uri"], "file:///src/other.rs", "{heard}");
}

/// One JSON-RPC message from a POST answer (JSON or SSE).
fn message(reply: &crate::support::server::Reply) -> Value {
    let body = String::from_utf8_lossy(&reply.body);
    if reply.header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) {
        let data = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| !d.is_empty());
        serde_json::from_str(data.unwrap_or_else(|| panic!("no data in {body}"))).unwrap()
    } else {
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

#[actix_rt::test]
async fn a_subscribed_file_edited_on_disk_is_announced_in_a_streamable_http_session() {
    let (dir, _outside) = project();
    let child = HttpChild::spawn(&["-s", "--project-dir", dir_arg(dir.path())]);
    let url = child.url();
    let base = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let reply = send("POST", &url, &base, serde_json::to_vec(&init).unwrap()).await;
    let session = reply.header("mcp-session-id").expect("a session").to_owned();
    let headers = [base[0], base[1], ("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let post = |body: Value| {
        let url = url.clone();
        async move { send("POST", &url, &headers, serde_json::to_vec(&body).unwrap()).await }
    };
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let stream = awc::Client::builder()
        .disable_timeout()
        .finish()
        .get(&url)
        .insert_header(("accept", "text/event-stream"))
        .insert_header(("mcp-session-id", session.as_str()))
        .insert_header(("mcp-protocol-version", "2025-11-25"))
        .send()
        .await
        .expect("the standalone stream");
    assert_eq!(stream.status().as_u16(), 200);
    let mut events = SseReader::new(stream);
    let subscribed = message(
        &post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "file:///a%20b.md"}}),
        )
        .await,
    );
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    edit(&dir.path().join("logo.png"));
    let edited = Instant::now();
    edit(&dir.path().join("a b.md"));
    let deadline = edited + NOTIFY_WITHIN;
    let update = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events.next(left).await.expect("an update within a second");
        if !event.data.trim().is_empty() {
            break event.json();
        }
    };
    let latency = edited.elapsed();
    assert_eq!(update["method"], "notifications/resources/updated", "{update}");
    assert_eq!(update["params"]["uri"], "file:///a%20b.md", "only the subscribed file: {update}");
    eprintln!("session: notifications/resources/updated {latency:?} after the edit");

    let (status, _, body) = http(child.port, "GET", "/status", &[], "");
    assert_eq!(status, 200);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["resources"], json!({"files": 3, "templates": 1, "declared": 0, "watched": 1}), "{status}");
    let (_, _, metrics) = http(child.port, "GET", "/metrics", &[], "");
    assert!(metrics.contains("mcpd_resources_exposed{set=\"files\"} 3"), "{metrics}");
    assert!(metrics.contains("mcpd_resources_watched 1"), "{metrics}");

    // The session ends: its subscription is released and the file no longer watched.
    let deleted = send("DELETE", &url, &[("mcp-session-id", session.as_str())], Vec::new()).await;
    assert_eq!(deleted.status, 200);
    let port = child.port;
    crate::support::eventually::eventually("the ended session's file is unwatched", ANSWER, async || {
        watched(port) == 0
    })
    .await;
}

fn watched(port: u16) -> i64 {
    let (_, _, body) = http(port, "GET", "/status", &[], "");
    serde_json::from_str::<Value>(&body).unwrap()["resources"]["watched"].as_i64().unwrap()
}

/// Reads SSE lines from `reader` until a `data:` line holding `method` (bounded by the
/// stream's read timeout).
fn read_until(reader: &mut BufReader<std::net::TcpStream>, method: &str) -> Value {
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap_or_else(|e| panic!("no {method}: {e}"));
        assert!(n > 0, "the stream ended before {method}");
        if let Some(data) = line.strip_prefix("data:") {
            let value: Value = serde_json::from_str(data.trim()).unwrap();
            if value["method"] == method {
                return value;
            }
        }
    }
}

#[test]
fn a_listen_stream_hears_its_subscribed_files() {
    let (dir, _outside) = project();
    let child = HttpChild::spawn(&["--project-dir", dir_arg(dir.path())]);
    let mut body = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["file:///src/main.rs"]}}});
    body["params"]["_meta"] = crate::support::server::modern_meta();
    let body = body.to_string();
    let stream = std::net::TcpStream::connect(("127.0.0.1", child.port)).unwrap();
    stream.set_read_timeout(Some(ANSWER)).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        child.port,
        body.len()
    );
    (&stream).write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    read_until(&mut reader, "notifications/subscriptions/acknowledged");
    assert_eq!(watched(child.port), 1);

    edit(&dir.path().join("src/main.rs"));
    reader.get_ref().set_read_timeout(Some(NOTIFY_WITHIN)).unwrap();
    let update = read_until(&mut reader, "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "file:///src/main.rs");
    assert_eq!(update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "7");
}

fn declarations(dir: &Path, resources: &Value) -> String {
    let file = dir.join("decl.json");
    std::fs::write(&file, serde_json::to_vec(&json!({ "resources": resources })).unwrap()).unwrap();
    file.to_str().unwrap().to_owned()
}

#[test]
fn declared_resources_of_each_kind_are_listed_and_read() {
    let (dir, _outside) = project();
    let file = declarations(
        dir.path(),
        &json!([
            {"uri": "docs://main", "name": "main", "title": "The entry point", "file": "src/main.rs", "annotations": {"priority": 0.8}},
            {"uri": "note://style", "name": "style", "description": "House style", "text": "Be brief.", "mimeType": "text/markdown"},
            {"uri": "cmd://hello", "name": "hello", "command": ["printf", "%s", "hi from a command"]},
            {"uri": "cmd://fails", "name": "fails", "command": ["sh", "-c", "echo broken >&2; exit 3"]},
            {"uri": "cmd://slow", "name": "slow", "command": ["sleep", "30"], "timeoutSeconds": 1}
        ]),
    );
    let mut server = StdioServer::start(&["--project-dir", dir_arg(dir.path()), "--tools", &file]);
    let list = server.request("resources/list", json!({}));
    let resources = list["result"]["resources"].as_array().unwrap();
    let main = resources.iter().find(|r| r["uri"] == "docs://main").expect("listed");
    assert_eq!(main["title"], "The entry point");
    assert_eq!(main["mimeType"], "text/x-rust");
    assert_eq!(main["annotations"]["priority"], 0.8);

    assert_eq!(server.read("docs://main")["result"]["contents"][0]["text"], "fn main() {}\n");
    let note = server.read("note://style");
    assert_eq!(
        note["result"]["contents"],
        json!([{"uri": "note://style", "mimeType": "text/markdown", "text": "Be brief."}])
    );
    let hello = server.read("cmd://hello");
    assert_eq!(
        hello["result"]["contents"],
        json!([{"uri": "cmd://hello", "mimeType": "text/plain", "text": "hi from a command"}])
    );
    let fails = server.read("cmd://fails");
    assert_eq!(fails["error"]["code"], -32603, "{fails}");
    let message = fails["error"]["message"].as_str().unwrap();
    assert!(message.ends_with("cmd://fails: \"sh\" exited with code 3: broken"), "{message}");
    let started = Instant::now();
    let slow = server.read("cmd://slow");
    assert!(started.elapsed() < Duration::from_secs(10), "killed at its time limit");
    let message = slow["error"]["message"].as_str().unwrap();
    assert!(message.ends_with("cmd://slow: \"sleep\" did not finish within 1 s (killed)"), "{message}");

    // A declared file resource is watched like the template's files.
    server.request("resources/subscribe", json!({"uri": "docs://main"}));
    edit(&dir.path().join("src/main.rs"));
    let heard = server.notification(NOTIFY_WITHIN).expect("the declared file's update");
    assert_eq!(heard["params"]["uri"], "docs://main", "{heard}");
}

#[test]
fn bad_declared_resources_are_usage_errors_naming_the_entry() {
    let (dir, _outside) = project();
    let cases = [
        (
            json!([{"uri": "x://a", "name": "a", "text": "t", "file": "a b.md"}]),
            "resource #1 (\"x://a\"): declares more than one source",
        ),
        (
            json!([{"uri": "x://a", "name": "a", "text": "t", "mime": "x"}]),
            "resource #1 (\"x://a\"): unknown field `mime`",
        ),
        (
            json!([{"uri": "x://a", "name": "a", "text": "t"}, {"uri": "x://a", "name": "b", "text": "u"}]),
            "resource #2 (\"x://a\"): duplicate resource uri \"x://a\"",
        ),
        (
            json!([{"uri": "x://a", "name": "a", "file": "../x"}]),
            "resource #1 (\"x://a\"): file: \"../x\" is outside the project directory",
        ),
    ];
    for (resources, expected) in cases {
        let file = declarations(dir.path(), &resources);
        let mut cmd = mcpd_command();
        cmd.args(["--project-dir", dir_arg(dir.path()), "--tools", &file]);
        let output = run_with_timeout(&mut cmd, b"", ANSWER);
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert!(text(&output.stderr).contains(expected), "{expected}: {}", text(&output.stderr));
    }
}

#[test]
fn no_file_resources_leaves_only_the_declared_ones_and_enabled_resources_filters() {
    let (dir, _outside) = project();
    let file = declarations(
        dir.path(),
        &json!([{"uri": "note://a", "name": "a", "text": "t"}, {"uri": "other://b", "name": "b", "text": "u"}]),
    );
    let mut server =
        StdioServer::start(&["--project-dir", dir_arg(dir.path()), "--tools", &file, "--no-file-resources"]);
    assert_eq!(server.request("resources/templates/list", json!({}))["result"]["resourceTemplates"], json!([]));
    let (uris, _) = listed(&mut server);
    assert_eq!(uris, ["note://a", "other://b"]);
    assert_eq!(server.read("file:///src/main.rs")["error"]["code"], -32002);
    drop(server);

    let mut server = StdioServer::start(&[
        "--project-dir",
        dir_arg(dir.path()),
        "--tools",
        &file,
        "--enabled-resources",
        "note://*, file:///src/*",
    ]);
    let (uris, _) = listed(&mut server);
    assert_eq!(uris, ["file:///src/main.rs", "note://a"]);
    assert_eq!(server.read("file:///src/main.rs")["result"]["contents"][0]["text"], "fn main() {}\n");
    assert_eq!(server.read("file:///logo.png")["error"]["code"], -32002, "filtered out, also through the template");
    assert_eq!(server.read("other://b")["error"]["code"], -32002);
}

/// Runs `py_resource_client.py <uri> <transport...>` with a deadline; its one JSON line.
fn py_resources(python: &Path, args: &[&str]) -> Value {
    let mut cmd = Command::new(python);
    cmd.arg(interop_script("py_resource_client.py"))
        .args(args)
        .current_dir(process::empty_dir())
        .env("RUST_LOG", "warn")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run_with_timeout(&mut cmd, b"", Duration::from_secs(60));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "py_resource_client.py failed:\n{stdout}\n{}", text(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn assert_python_read(report: &Value) {
    assert_eq!(report["templates"], json!(["file:///{+path}"]), "{report}");
    assert!(report["resources"].as_array().unwrap().contains(&json!("file:///src/main.rs")), "{report}");
    assert_eq!(
        report["read"]["contents"],
        json!([{"uri": "file:///src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}\n"}]),
        "{report}"
    );
}

#[test]
fn the_python_sdk_reads_a_project_file_over_stdio_and_http() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let (dir, _outside) = project();
    let binary = mcpd_binary();
    let stdio = py_resources(
        &python,
        &["file:///src/main.rs", "stdio", binary.to_str().unwrap(), "serve", "--project-dir", dir_arg(dir.path())],
    );
    assert_python_read(&stdio);
    let child = HttpChild::spawn(&["--project-dir", dir_arg(dir.path())]);
    let over_http = py_resources(&python, &["file:///src/main.rs", "http", &child.url()]);
    assert_python_read(&over_http);
}
