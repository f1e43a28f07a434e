//! One switch for what callers reach of the project, through the real binary: `--no-file-tools`
//! takes the project's files away as resources too, a gateway (`--servers`) offers no local file
//! unless asked, each opt-in (`--file-tools`, `--file-resources`) brings back exactly what it
//! names, and the startup log and the status JSON say what is reachable.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::process::{self, HttpChild};

/// A project with a private note and a declarations file whose prompt embeds a project file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "private notes\n").unwrap();
    let prompt = json!({"prompts": [{"name": "show", "description": "Shows the notes.",
        "messages": [{"role": "user", "resource": "notes.txt"}]}]});
    std::fs::write(dir.path().join("prompts.json"), prompt.to_string()).unwrap();
    std::fs::write(dir.path().join("servers.json"), json!({"mcpServers": {}}).to_string()).unwrap();
    dir
}

fn serve(project: &Path, flags: &[&str]) -> HttpChild {
    let mut cmd = process::mcpd_command();
    cmd.current_dir(project).args(["serve", "--tools", "prompts.json"]).args(flags);
    HttpChild::spawn_command(cmd)
}

fn rpc(child: &HttpChild, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [("Content-Type", "application/json"), ("MCP-Protocol-Version", "2025-11-25")];
    let (code, _, answer) = process::http(child.port, "POST", "/mcp", &headers, &body);
    assert_eq!(code, 200, "{answer}");
    serde_json::from_str(&answer).unwrap()
}

/// What a caller reaches: file tools offered, project files listed, `notes.txt` read as a
/// resource, the prompt's embedding.
#[derive(Debug, PartialEq, Eq)]
struct Reached {
    file_tools: Vec<String>,
    listed: bool,
    read: bool,
    embedded: bool,
}

fn reached(child: &HttpChild) -> Reached {
    let tools = rpc(child, "tools/list", json!({}));
    let mut file_tools: Vec<String> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .filter(|name| !matches!(name.as_str(), "echo" | "time"))
        .collect();
    file_tools.sort();
    let listed = rpc(child, "resources/list", json!({}));
    let listed = listed["result"]["resources"].as_array().unwrap().iter().any(|r| r["uri"] == "file:///notes.txt");
    let read = rpc(child, "resources/read", json!({"uri": "file:///notes.txt"}));
    let read_ok = read["result"]["contents"][0]["text"] == "private notes\n";
    if !read_ok {
        let message = read["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(message, "Resource not found: file:///notes.txt", "as if it did not exist: {read}");
    }
    let prompt = rpc(child, "prompts/get", json!({"name": "show"}));
    let embedded = prompt["result"]["messages"][0]["content"]["resource"]["text"] == "private notes\n";
    if !embedded {
        assert!(prompt.to_string().contains("no project file is reachable on this server"), "{prompt}");
    }
    Reached { file_tools, listed, read: read_ok, embedded }
}

fn status(child: &HttpChild) -> Value {
    let (code, _, body) = process::http(child.port, "GET", "/status", &[], "");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["project"].clone()
}

const READ_TOOLS: [&str; 5] = ["get_file_info", "grep", "list_directory", "read_file", "search_files"];

fn read_tools() -> Vec<String> {
    READ_TOOLS.iter().map(|t| (*t).to_owned()).collect()
}

#[test]
fn no_file_tools_means_no_project_file_unless_resources_are_asked_for() {
    let dir = project();
    let everything = Reached { file_tools: read_tools(), listed: true, read: true, embedded: true };
    let nothing = Reached { file_tools: Vec::new(), listed: false, read: false, embedded: false };
    let resources_only = Reached { file_tools: Vec::new(), listed: true, read: true, embedded: true };
    let tools_only = Reached { file_tools: read_tools(), listed: false, read: false, embedded: true };
    for (flags, expected, status_tools, status_resources) in [
        (&[][..], &everything, "read", true),
        (&["--no-file-tools"][..], &nothing, "off", false),
        (&["--no-file-tools", "--file-resources"][..], &resources_only, "off", true),
        (&["--no-file-resources"][..], &tools_only, "read", false),
    ] {
        let server = serve(dir.path(), flags);
        assert_eq!(&reached(&server), expected, "{flags:?}");
        let project = status(&server);
        assert_eq!(project["fileTools"], status_tools, "{flags:?}: {project}");
        assert_eq!(project["fileResources"], status_resources, "{flags:?}: {project}");
        assert_eq!(project["reachableBy"], if expected == &nothing { "nobody" } else { "every caller" });
        // notes.txt and servers.json (not loaded here); prompts.json is mcpd's own.
        assert_eq!(project["filesListed"], if status_resources { 2 } else { 0 }, "{project}");
        assert_eq!(project["dir"], dir.path().canonicalize().unwrap().display().to_string());
        let line = server.stderr_lines().into_iter().find(|l| l.contains("project ") && l.contains("reachable by"));
        let line = line.unwrap_or_else(|| panic!("no startup line about the project: {:?}", server.stderr_lines()));
        assert!(
            line.contains(&format!("file tools {}", if status_tools == "off" { "off" } else { "read-only" })),
            "{line}"
        );
    }
}

#[test]
fn a_gateway_offers_no_local_file_unless_asked() {
    let dir = project();
    let gateway = serve(dir.path(), &["--servers", "servers.json"]);
    assert_eq!(reached(&gateway), Reached { file_tools: Vec::new(), listed: false, read: false, embedded: false });
    let project = status(&gateway);
    assert_eq!((&project["fileTools"], &project["fileResources"]), (&json!("off"), &json!(false)), "{project}");
    let lines = gateway.stderr_lines().join("\n");
    assert!(
        lines.contains("file tools off, file resources off, prompts embed no file; reachable by nobody"),
        "{lines}"
    );
    assert!(lines.contains("local capabilities: builtin tools 2"), "{lines}");

    let tools = serve(dir.path(), &["--servers", "servers.json", "--file-tools"]);
    let expected = Reached { file_tools: read_tools(), listed: true, read: true, embedded: true };
    assert_eq!(reached(&tools), expected, "--file-tools brings the tools and, with them, the resources");

    let writing = serve(dir.path(), &["--servers", "servers.json", "--file-tools", "--write"]);
    assert_eq!(status(&writing)["fileTools"], "read-write");

    let resources = serve(dir.path(), &["--servers", "servers.json", "--file-resources"]);
    let expected = Reached { file_tools: Vec::new(), listed: true, read: true, embedded: true };
    assert_eq!(reached(&resources), expected, "--file-resources brings exactly the resources");

    std::fs::write(dir.path().join("mcp.properties"), "fileTools=true\nfileResources=false\n").unwrap();
    let properties = serve(dir.path(), &["--servers", "servers.json"]);
    let expected = Reached { file_tools: read_tools(), listed: false, read: false, embedded: true };
    assert_eq!(reached(&properties), expected, "the properties opt in as the flags do");
}

#[test]
fn the_opt_in_and_opt_out_flags_exclude_each_other() {
    let output = process::run_with_timeout(
        process::mcpd_command().args(["serve", "--file-tools", "--no-file-tools"]),
        b"",
        std::time::Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--no-file-tools") && stderr.contains("cannot be used with"), "{stderr}");
}
