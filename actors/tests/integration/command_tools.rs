//! The command tools through a real endpoint: `run_command` (argv, never a shell unless
//! allowed), `read_command_log`, and command tools declared in a JSON file.
//!
//! Every project directory is a fresh temporary directory, every command is harmless (`echo`,
//! `printf`, `cat`/`ls` of the temporary directory, `sleep`, `env`, `touch` of a file inside it),
//! and every test is bounded in time. Commands that outlive their time limit are killed by the
//! tool itself, which the tests check.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use mcpd::{Catalog, ServerOptions};
use mcpd_actors::tools::commands::{self, load_declared, CommandOptions, DeclaredTool};
use mcpd_actors::tools::paths::ProjectRoot;
use mcpd_actors::ListenerConfig;
use serde_json::{json, Value};

use crate::support::eventually::eventually;
use crate::support::server::*;

const TEST_LIMIT: Duration = Duration::from_secs(60);

async fn bounded<F: Future>(test: F) -> F::Output {
    actix_rt::time::timeout(TEST_LIMIT, test).await.expect("the test finished within its time limit")
}

fn enabled() -> CommandOptions {
    CommandOptions { enabled: true, ..CommandOptions::default() }
}

async fn serve_with(
    dir: &Path,
    options: CommandOptions,
    declared: Vec<DeclaredTool>,
    tweak: impl FnOnce(&mut ListenerConfig),
) -> TestServer {
    let mut catalog = Catalog::new();
    commands::register(&mut catalog, ProjectRoot::new(dir).expect("project root"), options, declared);
    start_with(catalog, ServerOptions::default(), tweak).await
}

async fn serve(dir: &Path, options: CommandOptions, declared: Vec<DeclaredTool>) -> TestServer {
    serve_with(dir, options, declared, |_| {}).await
}

async fn call(server: &TestServer, name: &str, arguments: Value) -> Value {
    let reply = post_legacy(server, "2025-11-25", 1, "tools/call", json!({"name": name, "arguments": arguments})).await;
    let body = reply.json();
    body.get("result").cloned().unwrap_or_else(|| panic!("no result in {body}"))
}

async fn tool_list(server: &TestServer) -> Vec<Value> {
    let reply = post_legacy(server, "2025-11-25", 1, "tools/list", json!({})).await;
    reply.json()["result"]["tools"].as_array().expect("tools").clone()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

fn declared(value: Value) -> DeclaredTool {
    serde_json::from_value(value).expect("a declared tool")
}

/// Whether a process is gone (no /proc entry, or a zombie waiting to be reaped).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
            matches!(state, Some('Z' | 'X'))
        }
    }
}

/// Waits (at most 5 s) until every pid written in these files is dead.
async fn assert_dead(dir: &Path, files: &[&str]) {
    let pids: Vec<u32> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            text.trim().parse().unwrap_or_else(|e| panic!("{f}: {text:?}: {e}"))
        })
        .collect();
    eventually(&format!("the processes {pids:?} are dead"), Duration::from_secs(5), async || {
        pids.iter().all(|p| is_dead(*p))
    })
    .await;
}

/// A command that succeeds: exit code 0, its output, a log that read_command_log serves.
#[actix_rt::test]
async fn a_successful_command_returns_its_output_and_a_log() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        let result = call(&server, "run_command", json!({"argv": ["echo", "hello", "world"]})).await;
        assert!(!is_error(&result), "{result}");
        let out = &result["structuredContent"];
        assert_eq!(out["exitCode"], 0);
        assert_eq!(out["output"], "hello world\n");
        assert_eq!(out["truncated"], false);
        assert_eq!(out["timedOut"], false);
        assert_eq!(out["totalBytes"], 12);
        assert!(out.get("signal").is_none());
        assert!(out["durationMs"].is_u64());
        let log_id = out["logId"].as_str().expect("a log id");
        let page = call(&server, "read_command_log", json!({"log_id": log_id})).await;
        assert!(!is_error(&page), "{page}");
        assert_eq!(page["structuredContent"]["text"], "hello world\n");
        assert_eq!(page["structuredContent"]["eof"], true);
        assert_eq!(page["structuredContent"]["command"], "echo hello world");
        let unknown = call(&server, "read_command_log", json!({"log_id": "no-such-log"})).await;
        assert!(is_error(&unknown));
        assert!(text(&unknown).contains("unknown log id"), "{unknown}");
    })
    .await;
}

/// A non-zero exit is `isError` with the code in the text; stderr is captured; a missing
/// program is an error too; bad arguments are errors the model can read.
#[actix_rt::test]
async fn failures_are_errors_with_the_exit_code() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        let result = call(&server, "run_command", json!({"argv": ["cat", "missing.txt"]})).await;
        assert!(is_error(&result), "{result}");
        assert!(text(&result).contains("exit code 1"), "{result}");
        assert_eq!(result["structuredContent"]["exitCode"], 1);
        assert!(result["structuredContent"]["output"].as_str().unwrap().contains("missing.txt"), "stderr is captured");
        let missing = call(&server, "run_command", json!({"argv": ["mcpd-no-such-program-here"]})).await;
        assert!(is_error(&missing));
        assert!(text(&missing).contains("could not start"), "{missing}");
        for bad in [
            json!({}),
            json!({"argv": []}),
            json!({"argv": "echo hi"}),
            json!({"argv": ["echo"], "timeout_seconds": 0}),
            json!({"argv": ["echo"], "timeout_seconds": 601}),
            json!({"argv": ["echo"], "bogus": 1}),
        ] {
            let result = call(&server, "run_command", bad.clone()).await;
            assert!(is_error(&result), "{bad} → {result}");
            assert!(result.get("structuredContent").is_none(), "nothing ran for {bad}");
        }
    })
    .await;
}

/// `sleep 30` with a 1 s limit is killed within about 2 s and reported as timed out.
#[actix_rt::test]
async fn a_command_over_its_time_limit_is_killed() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        let started = Instant::now();
        let result = call(&server, "run_command", json!({"argv": ["sleep", "30"], "timeout_seconds": 1})).await;
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
        assert!(is_error(&result), "{result}");
        assert!(text(&result).contains("timed out"), "{result}");
        let out = &result["structuredContent"];
        assert_eq!(out["timedOut"], true);
        assert_eq!(out["exitCode"], Value::Null);
        assert_eq!(out["signal"], 9);
        assert!(out["durationMs"].as_u64().unwrap() < 3000, "{out}");
    })
    .await;
}

/// A large output: the result has only the tail (on a character boundary), and the full
/// output is read back in pages that reassemble exactly, even with multi-byte characters.
#[actix_rt::test]
async fn large_output_returns_the_tail_and_the_log_pages_through_all_of_it() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let mut content = String::new();
        let mut n = 0;
        while content.len() < 100_000 {
            n += 1;
            content.push_str(&format!("line {n:05}: héllo wörld € 😀\n"));
        }
        std::fs::write(dir.path().join("big.txt"), &content).unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        let result = call(&server, "run_command", json!({"argv": ["cat", "big.txt"]})).await;
        assert!(!is_error(&result), "{}", text(&result));
        let out = &result["structuredContent"];
        let tail = out["output"].as_str().unwrap();
        assert!(tail.len() <= 16 * 1024 && tail.len() > 16 * 1024 - 4, "tail of {} bytes", tail.len());
        assert!(content.ends_with(tail), "the tail is the end of the output");
        assert_eq!(out["truncated"], true);
        assert_eq!(out["totalBytes"], content.len());
        let log_id = out["logId"].as_str().unwrap();
        let mut offset = 0u64;
        let mut whole = String::new();
        for _ in 0..100 {
            let page =
                call(&server, "read_command_log", json!({"log_id": log_id, "offset": offset, "limit": 7777})).await;
            assert!(!is_error(&page), "{page}");
            let page = &page["structuredContent"];
            assert_eq!(page["offset"], offset);
            assert_eq!(page["loggedBytes"], content.len());
            assert_eq!(page["logTruncated"], false);
            let text = page["text"].as_str().unwrap();
            assert!(text.len() <= 7777 && !text.contains('\u{fffd}'), "pages hold whole characters");
            whole.push_str(text);
            offset = page["nextOffset"].as_u64().unwrap();
            if page["eof"] == true {
                break;
            }
        }
        assert_eq!(whole.len(), content.len());
        assert_eq!(whole, content);
        let past = call(&server, "read_command_log", json!({"log_id": log_id, "offset": content.len() + 1})).await;
        assert!(is_error(&past), "{past}");
    })
    .await;
}

/// The working directory cannot leave the project; inside it, it works.
#[actix_rt::test]
async fn the_working_directory_is_confined_to_the_project() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/inside.txt"), "x").unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        for cwd in ["../", "..", "sub/../..", "/", "/tmp"] {
            let result = call(&server, "run_command", json!({"argv": ["ls"], "cwd": cwd})).await;
            assert!(is_error(&result), "{cwd} → {result}");
            assert!(text(&result).contains("outside the project"), "{cwd} → {result}");
        }
        let missing = call(&server, "run_command", json!({"argv": ["ls"], "cwd": "nope"})).await;
        assert!(is_error(&missing) && text(&missing).contains("does not exist"), "{missing}");
        let not_dir = call(&server, "run_command", json!({"argv": ["ls"], "cwd": "sub/inside.txt"})).await;
        assert!(is_error(&not_dir) && text(&not_dir).contains("not a directory"), "{not_dir}");
        let result = call(&server, "run_command", json!({"argv": ["ls"], "cwd": "sub"})).await;
        assert!(!is_error(&result), "{result}");
        assert_eq!(result["structuredContent"]["output"], "inside.txt\n");
        let root = call(&server, "run_command", json!({"argv": ["ls"]})).await;
        assert_eq!(root["structuredContent"]["output"], "sub\n", "the default is the project root");
    })
    .await;
}

/// Commands see only allow-listed variables; the call may set allow-listed names only.
#[actix_rt::test]
async fn the_environment_is_an_allow_list() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let mut options = enabled();
        options.env_allow.push("MCPD_TEST_GREETING".into());
        let allow = options.env_allow.clone();
        let server = serve(dir.path(), options, Vec::new()).await;
        let refused =
            call(&server, "run_command", json!({"argv": ["env"], "env": {"SECRET_TOKEN": "x", "OTHER_THING": "y"}}))
                .await;
        assert!(is_error(&refused), "{refused}");
        assert!(text(&refused).contains("SECRET_TOKEN") && text(&refused).contains("OTHER_THING"), "{refused}");
        assert!(refused.get("structuredContent").is_none(), "nothing ran");
        let result =
            call(&server, "run_command", json!({"argv": ["env"], "env": {"MCPD_TEST_GREETING": "hi there"}})).await;
        assert!(!is_error(&result), "{result}");
        let output = result["structuredContent"]["output"].as_str().unwrap().to_owned();
        assert!(output.lines().any(|l| l == "MCPD_TEST_GREETING=hi there"), "{output}");
        for line in output.lines() {
            let name = line.split('=').next().unwrap();
            assert!(allow.iter().any(|a| a == name), "{name} is not allow-listed but visible");
        }
        for (name, _) in std::env::vars() {
            if !allow.contains(&name) {
                assert!(!output.lines().any(|l| l.starts_with(&format!("{name}="))), "{name} leaked");
            }
        }
    })
    .await;
}

/// Without `allow_shell`, `shell` is refused and not even offered in the schema.
#[actix_rt::test]
async fn a_shell_is_refused_unless_configured() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), enabled(), Vec::new()).await;
        let tools = tool_list(&server).await;
        let run = tools.iter().find(|t| t["name"] == "run_command").expect("run_command");
        assert!(run["inputSchema"]["properties"].get("shell").is_none());
        assert_eq!(run["inputSchema"]["required"], json!(["argv"]));
        let result = call(&server, "run_command", json!({"shell": "echo hi"})).await;
        assert!(is_error(&result), "{result}");
        assert!(text(&result).contains("not allowed"), "{result}");
        assert!(result.get("structuredContent").is_none(), "nothing ran");
        // An argv element that looks like shell syntax is just an argument.
        let literal = call(&server, "run_command", json!({"argv": ["echo", "a;", "$HOME", "|", "*"]})).await;
        assert_eq!(literal["structuredContent"]["output"], "a; $HOME | *\n");
    })
    .await;
}

/// With `allow_shell`, `shell` runs through `sh -c`; a timeout kills the whole process group.
#[actix_rt::test]
async fn the_shell_mode_runs_sh_and_kills_its_process_group() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let options = CommandOptions { allow_shell: true, ..enabled() };
        let server = serve(dir.path(), options, Vec::new()).await;
        let tools = tool_list(&server).await;
        let run = tools.iter().find(|t| t["name"] == "run_command").expect("run_command");
        assert!(run["inputSchema"]["properties"].get("shell").is_some());
        let exit = call(&server, "run_command", json!({"shell": "exit 3"})).await;
        assert!(is_error(&exit), "{exit}");
        assert!(text(&exit).contains("exit code 3"), "{exit}");
        assert_eq!(exit["structuredContent"]["exitCode"], 3);
        let piped = call(&server, "run_command", json!({"shell": "echo a; echo b | cat"})).await;
        assert_eq!(piped["structuredContent"]["output"], "a\nb\n", "{piped}");
        let both = call(&server, "run_command", json!({"shell": "echo a", "argv": ["echo"]})).await;
        assert!(is_error(&both));
        let started = Instant::now();
        let script = "echo $$ > leader.pid; sleep 30 & echo $! > child.pid; wait";
        let result = call(&server, "run_command", json!({"shell": script, "timeout_seconds": 1})).await;
        assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
        assert_eq!(result["structuredContent"]["timedOut"], true, "{result}");
        assert_dead(dir.path(), &["leader.pid", "child.pid"]).await;
    })
    .await;
}

/// When the server's own time limit stops the call first, the command's group is killed too.
#[actix_rt::test]
async fn a_call_stopped_by_the_server_kills_its_command() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let options = CommandOptions { allow_shell: true, ..enabled() };
        let server =
            serve_with(dir.path(), options, Vec::new(), |c| c.limits.tool_timeout = Duration::from_secs(1)).await;
        let script = "echo $$ > leader.pid; sleep 30 & echo $! > child.pid; wait";
        let result = call(&server, "run_command", json!({"shell": script, "timeout_seconds": 60})).await;
        assert!(is_error(&result));
        assert!(text(&result).contains("time limit"), "{result}");
        assert_dead(dir.path(), &["leader.pid", "child.pid"]).await;
    })
    .await;
}

fn touch_tool() -> DeclaredTool {
    declared(json!({
        "name": "make_marker",
        "description": "Creates marker-<id> in the project directory.",
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "integer", "minimum": 1}},
            "required": ["id"],
            "additionalProperties": false
        },
        "argv": ["touch", "marker-{id}"]
    }))
}

fn printf_tool() -> DeclaredTool {
    declared(json!({
        "name": "print_lines",
        "title": "Print lines",
        "description": "Prints each argument on its own line.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "label": {"type": "string"},
                "extra": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["text", "label"]
        },
        "argv": ["printf", "%s\\n", "{text}", "--label={label}", "{extra}", "{items}"],
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false}
    }))
}

/// run_command is listed only when enabled; declared tools and read_command_log regardless;
/// annotations and output schemas are there.
#[actix_rt::test]
async fn run_command_is_offered_only_when_enabled() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let names = |tools: &[Value]| tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
        let none = serve(dir.path(), CommandOptions::default(), Vec::new()).await;
        assert!(tool_list(&none).await.is_empty());
        let hidden = post_legacy(
            &none,
            "2025-11-25",
            1,
            "tools/call",
            json!({"name": "run_command", "arguments": {"argv": ["echo", "x"]}}),
        )
        .await;
        assert_eq!(hidden.error_code(), -32602, "an unknown tool");
        let only_declared = serve(dir.path(), CommandOptions::default(), vec![printf_tool()]).await;
        assert_eq!(names(&tool_list(&only_declared).await), ["print_lines", "read_command_log"]);
        let all = serve(dir.path(), enabled(), vec![printf_tool()]).await;
        let tools = tool_list(&all).await;
        assert_eq!(names(&tools), ["print_lines", "read_command_log", "run_command"]);
        let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
        let run = by_name("run_command");
        assert_eq!(run["annotations"]["destructiveHint"], true);
        assert_eq!(run["annotations"]["openWorldHint"], true);
        assert_eq!(run["annotations"]["readOnlyHint"], false);
        assert!(run["outputSchema"]["properties"]["logId"].is_object());
        let log = by_name("read_command_log");
        assert_eq!(log["annotations"]["readOnlyHint"], true);
        assert!(log["outputSchema"].is_object());
        let printf = by_name("print_lines");
        assert_eq!(printf["title"], "Print lines");
        assert_eq!(printf["annotations"]["readOnlyHint"], true);
        assert!(printf["outputSchema"]["properties"]["exitCode"].is_object());
    })
    .await;
}

/// Arguments that do not match the schema are an `isError` listing the problems, and nothing
/// runs; valid ones run.
#[actix_rt::test]
async fn declared_tool_arguments_are_validated_before_anything_runs() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), CommandOptions::default(), vec![touch_tool()]).await;
        for (bad, expect) in [
            (json!({"id": "abc"}), "/id"),
            (json!({"id": 0}), "/id"),
            (json!({}), "id"),
            (json!({"id": 2, "more": true}), "more"),
        ] {
            let result = call(&server, "make_marker", bad.clone()).await;
            assert!(is_error(&result), "{bad} → {result}");
            let message = text(&result);
            assert!(message.contains("do not match the input schema") && message.contains(expect), "{message}");
            assert!(result.get("structuredContent").is_none());
        }
        let entries: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert!(entries.is_empty(), "nothing ran: {entries:?}");
        let ok = call(&server, "make_marker", json!({"id": 7})).await;
        assert!(!is_error(&ok), "{ok}");
        assert!(dir.path().join("marker-7").exists(), "a valid call runs");
    })
    .await;
}

/// A value with spaces and `;` stays one argv element (whole or inside `--label=`); an absent
/// optional argument drops its element; an array fills one element per item.
#[actix_rt::test]
async fn placeholders_fill_single_argv_elements() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let server = serve(dir.path(), CommandOptions::default(), vec![printf_tool()]).await;
        let result = call(
            &server,
            "print_lines",
            json!({"text": "a b; echo pwned $(id)", "label": "x y;z", "items": ["p q", "r"]}),
        )
        .await;
        assert!(!is_error(&result), "{result}");
        let output = result["structuredContent"]["output"].as_str().unwrap().to_owned();
        assert_eq!(output.lines().collect::<Vec<_>>(), ["a b; echo pwned $(id)", "--label=x y;z", "p q", "r"]);
        let with_extra = call(&server, "print_lines", json!({"text": "t", "label": "l", "extra": ""})).await;
        assert_eq!(with_extra["structuredContent"]["output"], "t\n--label=l\n\n", "an empty value is kept");
    })
    .await;
}

/// load_declared reads both file shapes and names the problem of a bad file.
#[actix_rt::test]
async fn load_declared_reports_clear_errors() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, value: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, value).unwrap();
            path
        };
        let good = json!({
            "name": "greet",
            "description": "Says hello.",
            "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
            "argv": ["echo", "hello", "{who}"],
            "timeoutSeconds": 5
        });
        let tools = load_declared(&write("array.json", &json!([good]).to_string())).unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "greet");
        assert_eq!(tools[0].timeout_seconds, Some(5));
        let tools = load_declared(&write("object.json", &json!({"tools": [good]}).to_string())).unwrap();
        assert_eq!(tools[0].argv, ["echo", "hello", "{who}"]);

        let with = |patch: Value| {
            let mut tool = good.clone();
            for (k, v) in patch.as_object().unwrap() {
                if v.is_null() {
                    tool.as_object_mut().unwrap().remove(k);
                } else {
                    tool[k] = v.clone();
                }
            }
            tool
        };
        let cases = [
            (json!([with(json!({"argv": null}))]), vec!["tool #1", "greet", "missing field", "argv"]),
            (json!([with(json!({"description": null}))]), vec!["missing field", "description"]),
            (json!([with(json!({"inputSchema": null}))]), vec!["missing field", "inputSchema"]),
            (json!([good, good]), vec!["tool #2", "duplicate", "greet"]),
            (json!([with(json!({"argv": ["echo", "{whom}"]}))]), vec!["{whom}", "no property"]),
            (json!([with(json!({"argv": ["{who}"]}))]), vec!["argv[0]", "placeholder"]),
            (json!([with(json!({"argv": []}))]), vec!["argv is empty"]),
            (
                json!([with(json!({"inputSchema": {"type": "object", "properties": {"who": {"type": "nope"}}}}))]),
                vec!["invalid inputSchema"],
            ),
            (json!([with(json!({"inputSchema": {"type": "string"}}))]), vec!["\"type\": \"object\""]),
            (json!([with(json!({"name": "bad name!"}))]), vec!["name"]),
            (json!([with(json!({"name": "run_command"}))]), vec!["reserved"]),
            (json!([with(json!({"timeoutSeconds": 0}))]), vec!["timeoutSeconds"]),
            (json!([with(json!({"surprise": 1}))]), vec!["unknown field", "surprise"]),
            (json!({"tools": [], "extra": 1}), vec!["extra"]),
            (json!({"tools": {}}), vec!["must be an array"]),
            (json!({"prompts": {}}), vec!["\"prompts\" must be an array"]),
            (json!({}), vec!["declares nothing"]),
            (json!(42), vec!["expected an array"]),
        ];
        for (i, (document, expected)) in cases.iter().enumerate() {
            let path = write(&format!("bad{i}.json"), &document.to_string());
            let error = load_declared(&path).expect_err(&document.to_string());
            assert!(error.contains(&format!("bad{i}.json")), "the file is named: {error}");
            for part in expected {
                assert!(error.contains(part), "{part:?} not in {error:?}");
            }
        }
        let error = load_declared(&write("broken.json", "[{\"name\": ")).unwrap_err();
        assert!(error.contains("not valid JSON") && error.contains("line 1"), "{error}");
        let error = load_declared(&dir.path().join("absent.json")).unwrap_err();
        assert!(error.contains("cannot read"), "{error}");
    })
    .await;
}

/// A stateless call (answered with plain JSON: no progress, no log level) is cancelled when its
/// client closes the connection: the command's group is killed, long before its time limit.
#[actix_rt::test]
async fn a_client_closing_its_connection_kills_its_command() {
    use tokio::io::AsyncWriteExt as _;
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let options = CommandOptions { allow_shell: true, ..enabled() };
        let server = serve(dir.path(), options, Vec::new()).await;
        let script = "echo $$ > leader.pid; sleep 30 & echo $! > child.pid; wait";
        let body = modern_request(1, "tools/call", json!({"name": "run_command", "arguments": {"shell": script}}));
        let body = body.to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: run_command\r\nContent-Length: {}\r\n\r\n{body}",
            server.port,
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        eventually("the command runs", Duration::from_secs(10), async || {
            ["leader.pid", "child.pid"]
                .iter()
                .all(|f| std::fs::read_to_string(dir.path().join(f)).is_ok_and(|t| t.ends_with('\n')))
        })
        .await;
        drop(stream);
        assert_dead(dir.path(), &["leader.pid", "child.pid"]).await;
    })
    .await;
}
