//! What a caller can reach of the project, through the real binary in a project directory
//! holding what operators keep there: an access file with inline keys and a key file, a
//! declarations file, `mcp.properties` with a key, a servers file whose remote's client secret
//! sits beside it, `.env`, `.git/config`, a symlink and a hard link to the access file.
//!
//! - A client without `resources` lists and reads no resource (a hidden one answers as one
//!   that is not there), the official Python SDK listing and reading as such a client.
//! - A client with `resources: ["*"]` and every tool reads ordinary files, and none of mcpd's
//!   own files or the sensitive files by any tool or resource path, links included; `grep`
//!   over the project finds no key or secret; the write tools cannot change them.
//! - After the access file is replaced (an editor's save: a new file renamed over it) and
//!   reloaded, the new file and the key file it names now are refused as well, and so is the
//!   file it replaced.
//! - Cluster mode (`--redis`) screens the same.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster_redis::{free_port, redis_installed, Redis};
use crate::support::eventually::eventually_blocking;
use crate::support::process::{self, HttpChild};
use crate::support::{interop_script, python};

const DEV: &str = "dev-inline-key-0123456789";
const CI: &str = "ci-inline-key-0123456789";
const READER: &str = "reader-key-from-a-key-file-0123";
const LATE: &str = "late-key-added-on-reload-0123";
const PROPERTY_KEY: &str = "property-key-0123456789";
const CLIENT_SECRET: &str = "gateway-client-secret-0123";
const ENV_SECRET: &str = "env-secret-token-0123";
const GIT_SECRET: &str = "git-credential-token-0123";

/// Every secret the project holds: no caller may read any of them.
const SECRETS: [&str; 7] = [DEV, CI, READER, PROPERTY_KEY, CLIENT_SECRET, ENV_SECRET, GIT_SECRET];

/// Files of the project that are never served, by resource and tool path.
const NEVER: [&str; 12] = [
    "access.json",
    "keys/reader.txt",
    "tools.json",
    "mcp.properties",
    "servers.json",
    "gw-secret.txt",
    ".env",
    ".git/config",
    "link.json",
    "hard.txt",
    "deploy/tls.key",
    "sub/link-to-env",
];

fn access(late: bool) -> Value {
    let mut clients = vec![
        json!({"name": "dev", "key": DEV, "tools": ["*"], "prompts": ["*"], "resources": ["*"], "operator": true}),
        json!({"name": "ci", "key": CI, "tools": ["echo"]}),
        json!({"name": "reader", "keyFile": "keys/reader.txt", "tools": ["*"], "resources": ["*"]}),
    ];
    if late {
        clients.push(json!({"name": "late", "keyFile": "late.txt", "tools": ["echo"]}));
    }
    json!({ "clients": clients })
}

/// A project directory as operators keep one (see the module documentation).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    for sub in ["keys", ".git", "docs", "deploy", "sub"] {
        std::fs::create_dir_all(path(sub)).unwrap();
    }
    std::fs::write(path("access.json"), serde_json::to_vec_pretty(&access(false)).unwrap()).unwrap();
    std::fs::write(path("keys/reader.txt"), READER).unwrap();
    std::fs::write(path("tools.json"), r#"{"tools": [{"name": "say", "description": "Says hi.", "inputSchema": {"type": "object"}, "argv": ["echo", "hi"]}]}"#).unwrap();
    std::fs::write(path("mcp.properties"), format!("keys={PROPERTY_KEY}\n")).unwrap();
    let servers = json!({"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp",
        "oauth": {"clientId": "gw", "clientSecretFile": "gw-secret.txt", "grant": "client_credentials"}}}});
    std::fs::write(path("servers.json"), servers.to_string()).unwrap();
    std::fs::write(path("gw-secret.txt"), CLIENT_SECRET).unwrap();
    std::fs::write(path(".env"), format!("API_TOKEN={ENV_SECRET}\n")).unwrap();
    std::fs::write(
        path(".git/config"),
        format!("[remote \"origin\"]\n\turl = https://{GIT_SECRET}@example.invalid/x\n"),
    )
    .unwrap();
    std::fs::write(path("deploy/tls.key"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::fs::write(path("notes.txt"), "ordinary notes\n").unwrap();
    // Not a key file until the access file names it.
    std::fs::write(path("late.txt"), LATE).unwrap();
    std::fs::write(path("docs/guide.md"), "# Guide\n").unwrap();
    std::os::unix::fs::symlink(path("access.json"), path("link.json")).unwrap();
    std::os::unix::fs::symlink(path(".env"), path("sub/link-to-env")).unwrap();
    std::fs::hard_link(path("access.json"), path("hard.txt")).unwrap();
    dir
}

/// `mcpd serve --file-tools --write --access … --tools … --servers …` in `project` (so
/// `mcp.properties` is read too), with `extra` flags.
fn serve(project: &Path, extra: &[&str]) -> HttpChild {
    let mut cmd = process::mcpd_command();
    cmd.current_dir(project).args([
        "serve",
        "--file-tools",
        "--write",
        "--access",
        "access.json",
        "--tools",
        "tools.json",
    ]);
    cmd.args(["--servers", "servers.json"]).args(extra);
    HttpChild::spawn_command(cmd)
}

/// One JSON-RPC request (2025-11-25, no session) with `key` as a bearer token: its `result`, or
/// its `error` under `"error"`.
fn rpc(child: &HttpChild, key: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let bearer = format!("Bearer {key}");
    let headers =
        [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25"), ("Authorization", &bearer)];
    let (code, _, answer) = process::http(child.port, "POST", "/mcp", &headers, &body);
    assert_eq!(code, 200, "{method}: {answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    match answer.get("result") {
        Some(result) => result.clone(),
        None => json!({ "error": answer["error"] }),
    }
}

fn call(child: &HttpChild, key: &str, tool: &str, arguments: Value) -> Value {
    rpc(child, key, "tools/call", json!({"name": tool, "arguments": arguments}))
}

/// The text of a failed tool call (panics on a success).
fn tool_failure(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a refusal: {result}");
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn uris(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|r| r[field].as_str().unwrap().to_owned()).collect()
}

fn no_secret_in(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows a secret: {text}");
    }
}

/// A Python SDK client (its JSON report) with `key`: lists resources and templates, reads `reads`.
fn python_report(python: &Path, url: &str, key: &str, reads: &[&str]) -> Value {
    let mut cmd = Command::new(python);
    let plan = json!({ "reads": reads }).to_string();
    cmd.env("MCPD_TEST_KEY", key).arg(interop_script("py_federation_client.py")).args([url, plan.as_str()]);
    let output = process::run_with_timeout(&mut cmd, b"", Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.trim()).unwrap()
}

/// A client without `resources` sees no resource and no template; reading a project file is
/// "not found" in the same words as reading one that does not exist.
fn a_client_without_resources_reaches_none(server: &HttpChild) {
    let list = rpc(server, CI, "resources/list", json!({}));
    assert_eq!(list["resources"], json!([]), "{list}");
    assert_eq!(rpc(server, CI, "resources/templates/list", json!({}))["resourceTemplates"], json!([]));
    for file in ["notes.txt", "access.json"] {
        let hidden = rpc(server, CI, "resources/read", json!({"uri": format!("file:///{file}")}));
        let absent = rpc(server, CI, "resources/read", json!({"uri": "file:///absent.txt"}));
        let hidden = hidden.to_string().replace(file, "X");
        assert_eq!(hidden, absent.to_string().replace("absent.txt", "X"), "{file}");
        assert!(hidden.contains("Resource not found"), "{hidden}");
    }
    let tools: Vec<String> = uris(&rpc(server, CI, "tools/list", json!({})), "tools", "name");
    assert_eq!(tools, ["echo"]);
}

/// A client with every resource and tool: ordinary files are read, the rest refused by every
/// path with the reason and never their content.
fn every_path_refuses_what_is_never_served(server: &HttpChild) {
    let listed = uris(&rpc(server, READER, "resources/list", json!({})), "resources", "uri");
    for served in ["file:///notes.txt", "file:///docs/guide.md"] {
        assert!(listed.iter().any(|u| u == served), "{served} not listed: {listed:?}");
    }
    let read = rpc(server, READER, "resources/read", json!({"uri": "file:///notes.txt"}));
    assert_eq!(read["contents"][0]["text"], "ordinary notes\n");
    for file in NEVER {
        let uri = format!("file:///{file}");
        assert!(!listed.contains(&uri), "{uri} is listed");
        let read = rpc(server, READER, "resources/read", json!({ "uri": uri }));
        let message = read["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("is not served"), "{file}: {read}");
        no_secret_in(file, &read.to_string());
        // A symlink's own entry (get_file_info) is not its target: only the target is refused.
        let links = ["link.json", "sub/link-to-env"];
        for tool in ["read_file", "get_file_info", "grep"]
            .into_iter()
            .filter(|t| *t != "get_file_info" || !links.contains(&file))
        {
            let refused = tool_failure(&call(server, READER, tool, json!({"path": file, "pattern": "."})));
            assert!(refused.contains("is not served"), "{tool} {file}: {refused}");
        }
    }
    let why = tool_failure(&call(server, READER, "read_file", json!({"path": "hard.txt"})));
    assert!(why.contains("one of mcpd's own configuration or secret files"), "{why}");
    for link in ["link.json", "sub/link-to-env"] {
        let info = call(server, READER, "get_file_info", json!({ "path": link }));
        assert_eq!(info["structuredContent"]["type"], "symlink", "{info}");
        assert_eq!(info["structuredContent"].get("target"), None, "where it leads is not shown: {info}");
    }
    let why = tool_failure(&call(server, READER, "read_file", json!({"path": ".env"})));
    assert!(why.contains("sensitive-file pattern \".env\""), "{why}");

    // Listings and searches leave them out; grep over the whole project finds no secret.
    let listing = call(server, READER, "list_directory", json!({"path": "."}));
    let names: Vec<&str> = listing["structuredContent"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"notes.txt"), "{names:?}");
    for hidden in
        ["access.json", "tools.json", "mcp.properties", "servers.json", "gw-secret.txt", ".env", ".git", "hard.txt"]
    {
        assert!(!names.contains(&hidden), "{hidden} is listed: {names:?}");
    }
    let found = call(server, READER, "search_files", json!({"pattern": "*"}));
    no_secret_in("search_files", &found.to_string());
    for hidden in ["access.json", "reader.txt", "gw-secret", "tls.key", "hard.txt"] {
        assert!(!found.to_string().contains(hidden), "search_files finds {hidden}: {found}");
    }
    for secret in SECRETS {
        let grep = call(server, READER, "grep", json!({"pattern": secret, "path": "."}));
        assert_eq!(grep["structuredContent"]["matches"], json!([]), "grep finds {secret}: {grep}");
    }
    let grep = call(server, READER, "grep", json!({"pattern": "ordinary", "path": "."}));
    assert_eq!(grep["structuredContent"]["matches"][0]["path"], "notes.txt", "{grep}");

    // The write tools cannot change them, nor move, delete or replace them.
    for (tool, arguments) in [
        ("write_file", json!({"path": "access.json", "content": "{}"})),
        ("write_file", json!({"path": "hard.txt", "content": "{}"})),
        ("append_file", json!({"path": "keys/reader.txt", "content": "x"})),
        ("delete_path", json!({"path": "access.json"})),
        ("rename_move", json!({"from": "hard.txt", "to": "free.txt"})),
        ("rename_move", json!({"from": "notes.txt", "to": "servers.json"})),
        ("write_file", json!({"path": ".env.local", "content": "x"})),
    ] {
        let refused = tool_failure(&call(server, READER, tool, arguments.clone()));
        assert!(refused.contains("is not served"), "{tool} {arguments}: {refused}");
    }
}

#[test]
fn a_restricted_client_reads_no_configuration_and_no_secret() {
    let dir = project();
    let server = serve(dir.path(), &[]);
    a_client_without_resources_reaches_none(&server);
    every_path_refuses_what_is_never_served(&server);

    // The operator is told about the secrets kept inside the project.
    let status: Value = serde_json::from_str(
        &process::http(server.port, "GET", "/status", &[("Authorization", &format!("Bearer {DEV}"))], "").2,
    )
    .unwrap();
    let warnings = status["warnings"].to_string();
    for file in [
        "access.json is inside the project directory (the access file holds inline keys)",
        "keys/reader.txt",
        "gw-secret.txt",
        "mcp.properties",
    ] {
        assert!(warnings.contains(file), "no warning about {file}: {warnings}");
    }
    assert!(warnings.contains("keep keys and secrets outside the project"), "{warnings}");

    // The official Python SDK as both clients: what each lists and reads.
    if let Some(python) = python::python_with(python::MCP_SDK) {
        let url = server.url();
        let ci = python_report(&python, &url, CI, &["file:///access.json", "file:///absent.json"]);
        assert_eq!((&ci["resources"], &ci["templates"]), (&json!([]), &json!([])), "{ci}");
        let hidden = ci["read"][0]["error"].to_string().replace("access.json", "X");
        assert_eq!(hidden, ci["read"][1]["error"].to_string().replace("absent.json", "X"), "{ci}");
        let reader =
            python_report(&python, &url, READER, &["file:///notes.txt", "file:///access.json", "file:///.env"]);
        let listed = reader["resources"].to_string();
        assert!(listed.contains("file:///notes.txt") && !listed.contains("access.json") && !listed.contains(".env"));
        assert_eq!(reader["read"][0]["contents"][0]["text"], "ordinary notes\n", "{reader}");
        for refused in [&reader["read"][1], &reader["read"][2]] {
            assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("is not served"), "{reader}");
        }
        no_secret_in("the Python client's reads", &reader.to_string());
    }

    // An editor's save of the access file (a new file renamed over it) naming a new key file:
    // once reloaded, the new file, the new key file and the replaced file are all refused, and
    // the new key file is no longer listed.
    let listed = |server: &HttpChild| uris(&rpc(server, READER, "resources/list", json!({})), "resources", "uri");
    assert!(listed(&server).contains(&"file:///late.txt".to_owned()), "an ordinary file until named");
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("access.json.tmp"), serde_json::to_vec_pretty(&access(true)).unwrap()).unwrap();
    std::fs::rename(path("access.json.tmp"), path("access.json")).unwrap();
    eventually_blocking("the access file is reloaded", Duration::from_secs(15), || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
        let bearer = format!("Bearer {LATE}");
        let headers = [
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Authorization", bearer.as_str()),
        ];
        let (code, _, answer) = process::http(server.port, "POST", "/mcp", &headers, &body);
        if code == 200 {
            Ok(())
        } else {
            Err(answer)
        }
    });
    for file in ["access.json", "late.txt", "hard.txt", "link.json"] {
        let refused = tool_failure(&call(&server, READER, "read_file", json!({ "path": file })));
        assert!(refused.contains("one of mcpd's own configuration or secret files"), "{file}: {refused}");
    }
    let grep = call(&server, READER, "grep", json!({"pattern": LATE, "path": "."}));
    assert_eq!(grep["structuredContent"]["matches"], json!([]), "{grep}");
    assert!(!listed(&server).contains(&"file:///late.txt".to_owned()), "a key file is not listed");
}

/// Cluster mode shares sessions and tasks, not what a caller may reach: each instance screens
/// as a single one does.
#[test]
fn cluster_instances_screen_the_same() {
    if !redis_installed() {
        return;
    }
    let port = free_port();
    let _redis = Redis::start(port);
    let dir = project();
    let redis = format!("redis://127.0.0.1:{port}");
    let server = serve(dir.path(), &["--redis", redis.as_str()]);
    a_client_without_resources_reaches_none(&server);
    every_path_refuses_what_is_never_served(&server);
}
