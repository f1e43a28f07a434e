//! Declared prompts (the `prompts` section of a declarations file), the session id handed to
//! declared commands (`MCPD_SESSION_ID`), and the server metadata of `mcpd serve` (`--title`,
//! `--website-url`, `--icon`): in process over real sockets, then through the binary with the
//! official Python SDK over stdio and HTTP.
//!
//! Every project directory is a fresh temporary directory; every command is harmless (`printf`,
//! `sh -c` printing a fixed text or a variable) and bounded by its time limit.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mcpd::config::ToolFilter;
use mcpd::ServerOptions;
use mcpd_actors::tools::commands::{CommandOptions, DeclaredTool};
use mcpd_actors::tools::files::FileToolOptions;
use mcpd_actors::tools::paths::ProjectRoot;
use mcpd_actors::tools::prompts::{load_prompts, DeclaredPrompt};
use mcpd_actors::tools::sets::{assemble, PromptSetOptions, ToolSetOptions};
use mcpd_actors::TransportMode;
use serde_json::{json, Value};

use crate::support::interop_script;
use crate::support::process::{self, http, json_lines, mcpd_command, run_with_timeout, text, HttpChild};
use crate::support::python;
use crate::support::server::*;

const TEST_LIMIT: Duration = Duration::from_secs(60);
const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// The prompts every test serves: a template with an embedded file, a text command, a JSON
/// messages command, a failing command, a command printing a bad message array.
fn prompts_json() -> Value {
    json!([
        { "name": "review", "title": "Review a file", "description": "Asks for a review of one file.",
          "arguments": [ { "name": "path", "description": "The file", "required": true },
                         { "name": "focus", "enum": ["bugs", "style", "boundaries"] } ],
          "messages": [ { "role": "user", "text": "Review {path}, looking for {focus}." },
                        { "role": "user", "resource": "{path}" },
                        { "role": "assistant", "text": "I will read {path}." } ] },
        { "name": "recent", "description": "Text from a command.",
          "arguments": [ { "name": "count", "values": ["2", "5", "10", "20"] } ],
          "argv": ["printf", "the last %s commits", "{count}"], "timeoutSeconds": 10 },
        { "name": "conversation", "description": "Messages from a command.",
          "argv": ["printf", "%s", "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}},{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"hello\"}}]"] },
        { "name": "broken", "description": "A command that fails.",
          "argv": ["sh", "-c", "echo 'the repository is locked' >&2; exit 3"] },
        { "name": "garbled", "description": "A command printing a bad message array.",
          "argv": ["printf", "%s", "[{\"role\":\"robot\",\"content\":{\"type\":\"text\",\"text\":\"x\"}}]"] },
        { "name": "session", "description": "Shows the session id.",
          "argv": ["sh", "-c", "printf 'session=%s' \"${MCPD_SESSION_ID:-none}\""] }
    ])
}

fn declared_prompts() -> Vec<DeclaredPrompt> {
    let Value::Array(entries) = prompts_json() else { unreachable!() };
    load_prompts(entries, "test").expect("valid prompts")
}

/// A command tool printing the session id it was given.
fn whoami_tool() -> DeclaredTool {
    serde_json::from_value(whoami_tool_json()).expect("a declared tool")
}

/// A project with `notes.md`, and a secret file beside it, outside the project.
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let outer = tempfile::tempdir().expect("temp dir");
    let dir = outer.path().join("project");
    std::fs::create_dir(&dir).expect("project dir");
    std::fs::write(dir.join("notes.md"), "# Notes\nThe cache is never invalidated.\n").expect("notes");
    std::fs::write(outer.path().join("secret.txt"), "outside").expect("secret");
    (outer, dir)
}

async fn serve(dir: &Path, filter: Option<ToolFilter>, sessions: bool) -> TestServer {
    let root = ProjectRoot::new(dir).expect("project root");
    let options = ToolSetOptions {
        files: Some(FileToolOptions::default()),
        commands: CommandOptions::default(),
        declared: vec![whoami_tool()],
        prompts: PromptSetOptions { declared: declared_prompts(), filter, ..PromptSetOptions::default() },
    };
    let sets = assemble(&root, options, &ToolFilter::All);
    start_with(sets.catalog, ServerOptions { sessions, ..ServerOptions::default() }, |c| {
        if sessions {
            c.mode = TransportMode::StreamableHttp;
        }
    })
    .await
}

async fn rpc(server: &TestServer, method: &str, params: Value) -> Value {
    post_legacy(server, "2025-11-25", 1, method, params).await.json()
}

async fn get(server: &TestServer, name: &str, arguments: Value) -> Value {
    rpc(server, "prompts/get", json!({"name": name, "arguments": arguments})).await
}

fn error_of(answer: &Value) -> (i64, String) {
    let error = answer.get("error").unwrap_or_else(|| panic!("an error, got {answer}"));
    (error["code"].as_i64().unwrap_or_default(), error["message"].as_str().unwrap_or_default().to_owned())
}

/// Both kinds are listed with their arguments, and render with their arguments filled in: the
/// template's text and its embedded project file, the command's stdout, a command's JSON array
/// of messages.
#[actix_rt::test]
async fn both_kinds_are_listed_and_rendered_with_their_arguments() {
    let (_outer, dir) = project();
    let server = serve(&dir, None, false).await;
    actix_rt::time::timeout(TEST_LIMIT, async {
        let listed = rpc(&server, "prompts/list", json!({})).await;
        let prompts = listed["result"]["prompts"].as_array().expect("prompts").clone();
        let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["broken", "conversation", "garbled", "recent", "review", "session"]);
        let review = prompts.iter().find(|p| p["name"] == "review").expect("review");
        assert_eq!(review["title"], "Review a file");
        assert_eq!(
            review["arguments"],
            json!([{"name": "path", "description": "The file", "required": true}, {"name": "focus", "required": false}])
        );

        let result = get(&server, "review", json!({"path": "notes.md", "focus": "bugs"})).await["result"].clone();
        assert_eq!(result["description"], "Asks for a review of one file.");
        let messages = result["messages"].as_array().expect("messages");
        assert_eq!(messages[0], json!({"role": "user", "content": {"type": "text", "text": "Review notes.md, looking for bugs."}}));
        assert_eq!(
            messages[1],
            json!({"role": "user", "content": {"type": "resource", "resource": {
                "uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes\nThe cache is never invalidated.\n"}}})
        );
        assert_eq!(messages[2]["role"], "assistant");
        // An optional argument left out is empty text.
        let result = get(&server, "review", json!({"path": "notes.md"})).await;
        assert_eq!(result["result"]["messages"][0]["content"]["text"], "Review notes.md, looking for .");

        let recent = get(&server, "recent", json!({"count": "5"})).await;
        assert_eq!(recent["result"]["messages"], json!([{"role": "user", "content": {"type": "text", "text": "the last 5 commits"}}]));

        let conversation = get(&server, "conversation", json!({})).await;
        assert_eq!(
            conversation["result"]["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "hi"}},
                   {"role": "assistant", "content": {"type": "text", "text": "hello"}}])
        );
    })
    .await
    .expect("within the time limit");
}

/// Arguments are checked before anything runs: a missing required one, an unknown one, a value
/// outside an `enum` are -32602 naming the argument.
#[actix_rt::test]
async fn bad_arguments_are_invalid_params_naming_the_argument() {
    let (_outer, dir) = project();
    let server = serve(&dir, None, false).await;
    let (code, message) = error_of(&get(&server, "review", json!({"focus": "bugs"})).await);
    assert_eq!((code, message.as_str()), (-32602, "prompt review needs argument path"));
    let (code, message) = error_of(&get(&server, "review", json!({"path": "notes.md", "colour": "red"})).await);
    assert_eq!(code, -32602);
    assert_eq!(message, "prompt review has no argument colour (its arguments: path, focus)");
    let (code, message) = error_of(&get(&server, "review", json!({"path": "notes.md", "focus": "speed"})).await);
    assert_eq!(code, -32602);
    assert!(message.contains("argument focus must be one of bugs, style, boundaries"), "{message}");
    let (code, message) = error_of(&get(&server, "recent", json!({"count": 5})).await);
    assert_eq!((code, message.as_str()), (-32602, "prompt recent: argument count must be a string"));
}

/// A failing command is an error with its exit status and its stderr; a command printing a
/// JSON array that is not messages is an error saying which message is wrong.
#[actix_rt::test]
async fn a_failing_or_garbled_command_is_a_clear_error() {
    let (_outer, dir) = project();
    let server = serve(&dir, None, false).await;
    let (code, message) = error_of(&get(&server, "broken", json!({})).await);
    assert_eq!(code, -32603);
    assert!(message.contains("prompt broken: the command failed with exit status 3"), "{message}");
    assert!(message.contains("stderr: the repository is locked"), "{message}");
    let (code, message) = error_of(&get(&server, "garbled", json!({})).await);
    assert_eq!(code, -32603);
    assert!(message.contains("prompt garbled: the command printed a JSON array, but message #1"), "{message}");
}

/// An embedded resource that leads outside the project is refused with the file tools' own
/// words, and nothing is read.
#[actix_rt::test]
async fn an_embedded_resource_escape_is_refused_like_the_file_tools() {
    let (outer, dir) = project();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), dir.join("link.txt")).expect("symlink");
    let server = serve(&dir, None, false).await;
    for path in ["../secret.txt", "link.txt", outer.path().join("secret.txt").to_str().expect("UTF-8")] {
        let tool = rpc(&server, "tools/call", json!({"name": "read_file", "arguments": {"path": path}})).await;
        let tool_text = tool["result"]["content"][0]["text"].as_str().expect("text").to_owned();
        let refusal = tool_text.strip_prefix("read_file: ").expect("the file tool's refusal");
        assert!(refusal.ends_with("is outside the project directory"), "{refusal}");
        let answer = get(&server, "review", json!({"path": path})).await;
        let (code, message) = error_of(&answer);
        assert_eq!(code, -32602, "{answer}");
        assert_eq!(message, format!("prompt review: {refusal}"));
        assert!(!answer.to_string().contains("outside\""), "nothing of the file leaks: {answer}");
    }
}

/// `enum` and `values` are completions, filtered by prefix; other arguments have none.
#[actix_rt::test]
async fn enum_and_values_complete_by_prefix() {
    let (_outer, dir) = project();
    let server = serve(&dir, None, false).await;
    let complete = |name: &'static str, argument: &'static str, value: &'static str| {
        let server = &server;
        async move {
            let params =
                json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": argument, "value": value}});
            rpc(server, "completion/complete", params).await["result"]["completion"].clone()
        }
    };
    assert_eq!(
        complete("review", "focus", "b").await,
        json!({"values": ["bugs", "boundaries"], "total": 2, "hasMore": false})
    );
    assert_eq!(complete("review", "focus", "").await["values"], json!(["bugs", "style", "boundaries"]));
    assert_eq!(complete("recent", "count", "2").await["values"], json!(["2", "20"]));
    assert_eq!(complete("review", "path", "n").await["values"], json!([]));
}

/// `enabledPrompts` keeps only the matching prompts.
#[actix_rt::test]
async fn enabled_prompts_filters_the_list() {
    let (_outer, dir) = project();
    let filter = ToolFilter::from_value(Some("re*"));
    let server = serve(&dir, Some(filter), false).await;
    let listed = rpc(&server, "prompts/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["prompts"].as_array().expect("prompts").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["recent", "review"]);
    let (code, _) = error_of(&get(&server, "broken", json!({})).await);
    assert_eq!(code, -32602, "a filtered prompt is unknown");
}

/// A declared command tool and a command prompt see `MCPD_SESSION_ID` when called in a session,
/// and nothing on a stateless call.
#[actix_rt::test]
async fn the_session_id_reaches_commands_in_a_session_only() {
    let (_outer, dir) = project();
    let server = serve(&dir, None, true).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let reply = post(&server, &[ACCEPT], &init).await;
    let session = reply.header("mcp-session-id").expect("a session id").to_owned();
    let headers = [ACCEPT, ("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}});
    let answer = post(&server, &headers, &call).await.json();
    assert_eq!(answer["result"]["structuredContent"]["output"], format!("session={session}"), "{answer}");
    let get_prompt = json!({"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"session"}});
    let answer = post(&server, &headers, &get_prompt).await.json();
    assert_eq!(answer["result"]["messages"][0]["content"]["text"], format!("session={session}"), "{answer}");

    let stateless = |id: i64, method: &'static str, params: Value| {
        let server = &server;
        async move {
            let name = params["name"].as_str().expect("name").to_owned();
            let routing = [ACCEPT, ("mcp-protocol-version", "2026-07-28"), ("mcp-method", method), ("mcp-name", &name)];
            post(server, &routing, &modern_request(id, method, params)).await.json()
        }
    };
    let answer = stateless(3, "tools/call", json!({"name": "whoami", "arguments": {}})).await;
    assert_eq!(answer["result"]["structuredContent"]["output"], "session=none", "{answer}");
    let answer = stateless(4, "prompts/get", json!({"name": "session"})).await;
    assert_eq!(answer["result"]["messages"][0]["content"]["text"], "session=none", "{answer}");
}

/// Writes the declarations file (tools and prompts) into the project.
fn declarations_file(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("mcpd.json");
    let Value::Array(mut prompts) = prompts_json() else { unreachable!() };
    prompts.retain(|p| ["review", "recent", "session", "broken"].contains(&p["name"].as_str().unwrap_or_default()));
    let document = json!({"tools": [whoami_tool_json()], "prompts": prompts});
    std::fs::write(&file, document.to_string()).expect("declarations file");
    file
}

fn whoami_tool_json() -> Value {
    json!({"name": "whoami", "description": "Prints MCPD_SESSION_ID.", "inputSchema": {"type": "object", "properties": {}},
           "argv": ["sh", "-c", "printf 'session=%s' \"${MCPD_SESSION_ID:-none}\""]})
}

const ICON: &str = "https://example.com/mcpd.png mime=image/png sizes=48x48,96x96";

fn serve_args<'a>(dir: &'a str, file: &'a str) -> Vec<&'a str> {
    vec![
        "serve",
        "-d",
        dir,
        "--tools",
        file,
        "--title",
        "mcpd under test",
        "--website-url",
        "https://example.com/mcpd",
        "--icon",
        ICON,
    ]
}

/// Runs `py_prompts_client.py` and returns its one JSON line.
fn py_prompts(python: &Path, args: &[&str]) -> Value {
    let mut cmd = Command::new(python);
    cmd.arg(interop_script("py_prompts_client.py"))
        .args(args)
        .current_dir(process::empty_dir())
        .env("RUST_LOG", "warn")
        .env_remove("MCPD_KEYS")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run_with_timeout(&mut cmd, b"", TEST_LIMIT);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "py_prompts_client.py failed:\n{stdout}\n{}", text(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not one JSON line ({e}): {stdout}"))
}

fn assert_python_report(report: &Value, prompts: &[&str]) {
    let info = &report["serverInfo"];
    assert_eq!(info["title"], "mcpd under test", "{report}");
    assert_eq!(info["websiteUrl"], "https://example.com/mcpd", "{report}");
    assert_eq!(
        info["icons"],
        json!([{"src": "https://example.com/mcpd.png", "mimeType": "image/png", "sizes": ["48x48", "96x96"]}])
    );
    let names: Vec<&str> =
        report["prompts"].as_array().expect("prompts").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, prompts, "{report}");
    let review = &report["review"]["messages"];
    assert_eq!(review[0]["content"]["text"], "Review notes.md, looking for bugs.", "{report}");
    assert_eq!(review[1]["content"]["resource"]["uri"], "file:///notes.md", "{report}");
    assert_eq!(report["recent"]["messages"][0]["content"]["text"], "the last 2 commits", "{report}");
    assert_eq!(report["completion"]["completion"]["values"], json!(["bugs", "boundaries"]), "{report}");
}

/// The official Python SDK sees the metadata, lists the declared prompts, gets both kinds and
/// completes an argument, through `mcpd serve` over stdio.
#[test]
fn python_sdk_gets_declared_prompts_over_stdio() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let (_outer, dir) = project();
    let file = declarations_file(&dir);
    let (dir, file) = (dir.to_str().expect("UTF-8"), file.to_str().expect("UTF-8"));
    let binary = process::mcpd_binary();
    let mut args = vec!["stdio", binary.to_str().expect("UTF-8")];
    args.extend(serve_args(dir, file));
    assert_python_report(&py_prompts(&python, &args), &["broken", "recent", "review", "session"]);
}

/// The same over HTTP (the stateless wire); the status JSON and `/metrics` count the prompts and show the metadata.
#[test]
fn python_sdk_gets_declared_prompts_over_http() {
    let Some(python) = python::python_with(python::MCP_SDK) else { return };
    let (_outer, dir) = project();
    let file = declarations_file(&dir);
    let mut args = serve_args(dir.to_str().expect("UTF-8"), file.to_str().expect("UTF-8"));
    args.extend(["--enabled-prompts", "re*,session"]);
    let server = HttpChild::spawn(&args);
    // `--mode auto`: the SDK discovers the stateless wire, so the metadata comes from
    // `server/discover` here (and from `initialize` over stdio).
    let report = py_prompts(&python, &["--mode", "auto", "http", &server.url()]);
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    // `--enabled-prompts` left `broken` out.
    assert_python_report(&report, &["recent", "review", "session"]);
    let (status, _, body) = http(server.port, "GET", "/status", &[], "");
    assert_eq!(status, 200);
    let status: Value = serde_json::from_str(&body).expect("status JSON");
    assert_eq!(status["prompts"], json!({"declared": 3}), "{status}");
    assert_eq!(status["server"]["websiteUrl"], "https://example.com/mcpd", "{status}");
    assert_eq!(status["server"]["icons"][0]["sizes"], json!(["48x48", "96x96"]), "{status}");
    let (_, _, metrics) = http(server.port, "GET", "/metrics", &[], "");
    assert!(metrics.contains("mcpd_prompts_exposed{set=\"declared\"} 3"), "{metrics}");
}

/// Over stdio a declared command gets no session id (stdio is one connection, not a session).
#[test]
fn stdio_calls_have_no_session_id() {
    let (_outer, dir) = project();
    let file = declarations_file(&dir);
    let mut cmd = mcpd_command();
    cmd.args(["serve", "-d", dir.to_str().expect("UTF-8"), "--tools", file.to_str().expect("UTF-8")]);
    let lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}),
        json!({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"session"}}),
    ];
    let output = run_with_timeout(&mut cmd, &process::ndjson(&lines), TEST_LIMIT);
    let answers = json_lines(&output.stdout);
    let by_id = |id: i64| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("answer {id}: {answers:?}"));
    assert_eq!(by_id(2)["result"]["structuredContent"]["output"], "session=none");
    assert_eq!(by_id(3)["result"]["messages"][0]["content"]["text"], "session=none");
}

/// Bad metadata stops startup with a message naming the setting.
#[test]
fn bad_metadata_is_refused_at_startup() {
    for (flag, value, expected) in [
        ("--website-url", "ftp://example.com", "is not an http(s) URL"),
        ("--icon", "file:///etc/icon.png", "not allowed for icons"),
        ("--icon", "https://example.com/i.png sizes=huge", "neither WxH"),
    ] {
        let mut cmd = mcpd_command();
        cmd.args(["serve", flag, value]);
        let output = run_with_timeout(&mut cmd, b"", TEST_LIMIT);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{flag} {value}: {stderr}");
    }
}
