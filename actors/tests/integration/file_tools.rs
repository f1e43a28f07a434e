//! The file tools through a real listener: every tool's success and failure, binary detection,
//! line ranges, ignore files, caps, and a corpus of path-escape attempts of which none may
//! succeed. Everything happens inside temporary directories; escape targets live in a second
//! temporary directory, which is checked to be untouched afterwards.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use mcpd::{Catalog, ServerOptions};
use mcpd_actors::tools::files::{register, FileToolOptions};
use mcpd_actors::tools::paths::ProjectRoot;
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::support::server::*;

const SECRET: &str = "TOP-SECRET-OUTSIDE-CONTENT";

/// A container temporary directory holding the project (`project/`) and a directory outside it
/// (`outside/`), so that even `../x` from the project stays inside the container.
struct Fixture {
    base: TempDir,
    root: PathBuf,
    outside: PathBuf,
    server: TestServer,
    next_id: std::cell::Cell<i64>,
}

impl Fixture {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Calls a tool; returns the whole result object.
    async fn call(&self, name: &str, arguments: Value) -> Value {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let reply =
            post_legacy(&self.server, "2025-11-25", id, "tools/call", json!({ "name": name, "arguments": arguments }))
                .await;
        let body = reply.json();
        assert!(body.get("error").is_none(), "{name} {arguments}: a protocol error instead of a result: {body}");
        body["result"].clone()
    }

    /// Calls a tool that must succeed; returns its structured content.
    async fn ok(&self, name: &str, arguments: Value) -> Value {
        let result = self.call(name, arguments.clone()).await;
        assert_ne!(result["isError"], true, "{name} {arguments} failed: {result}");
        let structured = result["structuredContent"].clone();
        assert!(structured.is_object(), "{name}: no structuredContent in {result}");
        let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, structured, "the text copy matches the structured content");
        structured
    }

    /// Calls a tool that must fail (`isError: true`); returns the message.
    async fn fails(&self, name: &str, arguments: Value) -> String {
        let result = self.call(name, arguments.clone()).await;
        assert_eq!(result["isError"], true, "{name} {arguments} should have failed: {result}");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }
}

async fn fixture_with(options: FileToolOptions) -> Fixture {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("project");
    let outside = base.path().join("outside");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&outside).unwrap();
    let mut catalog = Catalog::new();
    register(&mut catalog, ProjectRoot::new(&root).unwrap(), options);
    let server = start_with(catalog, ServerOptions { page_size: 100, ..Default::default() }, |_| {}).await;
    Fixture { base, root, outside, server, next_id: std::cell::Cell::new(1) }
}

async fn fixture(write: bool) -> Fixture {
    fixture_with(FileToolOptions { write, ..Default::default() }).await
}

fn write(path: &Path, content: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, content).unwrap();
}

/// Everything under `dir`: relative path → file content, `dir`, or `-> target` for symlinks.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                out.insert(rel, format!("-> {}", fs::read_link(&path).unwrap().display()));
            } else if kind.is_dir() {
                out.insert(rel, "dir".into());
                walk(base, &path, out);
            } else {
                out.insert(rel, String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn names(tools: &Value) -> Vec<String> {
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

const READ_TOOLS: [&str; 5] = ["get_file_info", "grep", "list_directory", "read_file", "search_files"];

/// Without `write` only the read tools are listed; every tool has truthful annotations and an
/// output schema.
#[actix_rt::test]
async fn write_tools_are_listed_only_when_enabled() {
    let read_only = fixture(false).await;
    let reply = post_legacy(&read_only.server, "2025-11-25", 1, "tools/list", json!({})).await;
    assert_eq!(names(&reply.json()["result"]["tools"]), READ_TOOLS);
    let reply = post_legacy(
        &read_only.server,
        "2025-11-25",
        2,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "x", "content": "y"}}),
    )
    .await;
    let body = reply.json();
    assert!(body.get("error").is_some() || body["result"]["isError"] == true, "{body}");
    assert!(!read_only.path("x").exists());

    let writable = fixture(true).await;
    let reply = post_legacy(&writable.server, "2025-11-25", 1, "tools/list", json!({})).await;
    let tools = reply.json()["result"]["tools"].clone();
    let expected = [
        "append_file",
        "apply_patch",
        "create_folder",
        "delete_path",
        "edit_file",
        "get_file_info",
        "grep",
        "list_directory",
        "read_file",
        "rename_move",
        "search_files",
        "write_file",
    ];
    assert_eq!(names(&tools), expected);
    for tool in tools.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let hints = &tool["annotations"];
        assert!(tool["outputSchema"]["type"] == "object", "{name} has an output schema");
        assert!(tool["description"].as_str().unwrap().len() > 60, "{name} is described");
        assert_eq!(hints["openWorldHint"], false, "{name}");
        let (read_only, destructive, idempotent) = match name {
            "write_file" => (false, true, true),
            "edit_file" => (false, true, false),
            "append_file" => (false, false, false),
            "create_folder" => (false, false, true),
            "delete_path" => (false, true, true),
            "rename_move" | "apply_patch" => (false, true, false),
            _ => (true, false, true),
        };
        assert_eq!(hints["readOnlyHint"], read_only, "{name}");
        assert_eq!(hints["destructiveHint"], destructive, "{name}");
        assert_eq!(hints["idempotentHint"], idempotent, "{name}");
    }
}

#[actix_rt::test]
async fn list_directory_and_get_file_info() {
    let f = fixture_with(FileToolOptions { max_results: 3, ..Default::default() }).await;
    write(&f.path("b.txt"), "bbb");
    write(&f.path("a.txt"), "a");
    write(&f.path("sub/inner.rs"), "fn main() {}\n");
    symlink(f.path("a.txt"), f.path("link")).unwrap();

    let listing = f.ok("list_directory", json!({})).await;
    assert_eq!(listing["path"], ".");
    assert_eq!(listing["total"], 4);
    assert_eq!(listing["truncated"], true);
    assert_eq!(
        listing["entries"],
        json!([
            {"name": "a.txt", "type": "file", "size": 1},
            {"name": "b.txt", "type": "file", "size": 3},
            {"name": "link", "type": "symlink"}
        ])
    );
    let sub = f.ok("list_directory", json!({"path": "sub"})).await;
    assert_eq!(sub["entries"], json!([{"name": "inner.rs", "type": "file", "size": 13}]));
    assert_eq!(sub["truncated"], false);
    let message = f.fails("list_directory", json!({"path": "a.txt"})).await;
    assert!(message.contains("not a directory"), "{message}");
    let message = f.fails("list_directory", json!({"path": "nope"})).await;
    assert!(message.contains("\"nope\" does not exist"), "{message}");

    let info = f.ok("get_file_info", json!({"path": "b.txt"})).await;
    assert_eq!(info["type"], "file");
    assert_eq!(info["size"], 3);
    assert_eq!(info["readonly"], false);
    let modified = info["modified"].as_str().unwrap();
    assert!(modified.ends_with('Z') && modified.len() == 24 && &modified[10..11] == "T", "{modified}");
    let info = f.ok("get_file_info", json!({"path": "sub"})).await;
    assert_eq!(info["type"], "dir");
    let info = f.ok("get_file_info", json!({"path": "link"})).await;
    assert_eq!(info["type"], "symlink");
    assert_eq!(info["target"], "a.txt");
    assert_eq!(info["targetType"], "file");
    let message = f.fails("get_file_info", json!({"path": "missing.txt"})).await;
    assert!(message.contains("missing.txt"), "{message}");
    let message = f.fails("get_file_info", json!({})).await;
    assert!(message.contains("missing required argument path"), "{message}");
}

#[actix_rt::test]
async fn read_file_ranges_limits_and_binary_files() {
    let f = fixture_with(FileToolOptions { max_read_bytes: 64, ..Default::default() }).await;
    write(&f.path("five.txt"), "one\ntwo\nthree\nfour\nfive\n");
    let whole = f.ok("read_file", json!({"path": "five.txt"})).await;
    assert_eq!(whole["content"], "one\ntwo\nthree\nfour\nfive\n");
    assert_eq!(
        (whole["startLine"].clone(), whole["endLine"].clone(), whole["totalLines"].clone()),
        (json!(1), json!(5), json!(5))
    );
    assert_eq!(whole["truncated"], false);
    assert_eq!(whole["binary"], false);

    let middle = f.ok("read_file", json!({"path": "five.txt", "start_line": 2, "end_line": 3})).await;
    assert_eq!(middle["content"], "two\nthree\n");
    assert_eq!((middle["startLine"].clone(), middle["endLine"].clone()), (json!(2), json!(3)));
    assert!(middle.get("totalLines").is_none(), "the read stopped before the end");
    let tail = f.ok("read_file", json!({"path": "five.txt", "start_line": 4})).await;
    assert_eq!(tail["content"], "four\nfive\n");
    assert_eq!(tail["totalLines"], 5);
    let last = f.ok("read_file", json!({"path": "five.txt", "start_line": 5, "end_line": 9})).await;
    assert_eq!(
        (last["content"].clone(), last["endLine"].clone(), last["totalLines"].clone()),
        (json!("five\n"), json!(5), json!(5))
    );
    let head = f.ok("read_file", json!({"path": "five.txt", "end_line": 1})).await;
    assert_eq!(head["content"], "one\n");

    let message = f.fails("read_file", json!({"path": "five.txt", "start_line": 9})).await;
    assert!(message.contains("past the end") && message.contains("5 lines"), "{message}");
    let message = f.fails("read_file", json!({"path": "five.txt", "start_line": 3, "end_line": 2})).await;
    assert!(message.contains("before start_line"), "{message}");
    let message = f.fails("read_file", json!({"path": "five.txt", "start_line": 0})).await;
    assert!(message.contains("start_line must be a line number"), "{message}");
    let message = f.fails("read_file", json!({"path": "."})).await;
    assert!(message.contains("is a directory"), "{message}");
    let message = f.fails("read_file", json!({"path": 7})).await;
    assert!(message.contains("path must be a string"), "{message}");

    // Over max_read_bytes: refused whole, readable by range (streaming), capped with truncated.
    let big: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    write(&f.path("big.txt"), &big);
    let message = f.fails("read_file", json!({"path": "big.txt"})).await;
    assert!(
        message.contains("big.txt") && message.contains("over the limit of 64 bytes") && message.contains("start_line"),
        "{message}"
    );
    let part = f.ok("read_file", json!({"path": "big.txt", "start_line": 100, "end_line": 102})).await;
    assert_eq!(part["content"], "line 100\nline 101\nline 102\n");
    assert_eq!(part["truncated"], false);
    let capped = f.ok("read_file", json!({"path": "big.txt", "start_line": 190})).await;
    assert_eq!(capped["truncated"], true);
    assert_eq!(capped["content"].as_str().unwrap().len(), 64);
    assert!(capped["content"].as_str().unwrap().starts_with("line 190\n"));

    // Binary: a NUL byte early on, or bytes that are not UTF-8; never dumped.
    write(&f.path("nul.bin"), b"PK\x03\x04\x00\x00secret-bytes");
    write(&f.path("latin1.txt"), b"caf\xe9\n");
    for name in ["nul.bin", "latin1.txt"] {
        for args in [json!({"path": name}), json!({"path": name, "start_line": 1, "end_line": 1})] {
            let out = f.ok("read_file", args).await;
            assert_eq!(out["binary"], true, "{name}");
            assert!(out["size"].as_u64().unwrap() > 0);
            assert!(out.get("content").is_none(), "{name} is not dumped: {out}");
        }
    }
    // A NUL byte after the first 8 KiB does not make a file binary.
    let mut late = "x\n".repeat(5000).into_bytes();
    late.push(0);
    write(&f.path("late.txt"), &late);
    let out = f.ok("read_file", json!({"path": "late.txt", "start_line": 1, "end_line": 2})).await;
    assert_eq!(out["content"], "x\nx\n");
    // A FIFO would block a reader forever: it is refused, not opened.
    let fifo = f.path("pipe");
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        let message = f.fails("read_file", json!({"path": "pipe"})).await;
        assert!(message.contains("not a regular file"), "{message}");
        let message = f.fails("read_file", json!({"path": "pipe", "start_line": 1})).await;
        assert!(message.contains("not a regular file"), "{message}");
    }
}

#[actix_rt::test]
async fn search_files_globs_names_and_paths() {
    let f = fixture_with(FileToolOptions { max_results: 4, ..Default::default() }).await;
    for rel in [
        "src/main.rs",
        "src/lib.rs",
        "src/tools/mod.rs",
        "src/tools/files/mod.rs",
        "README.md",
        "target/debug/out.rs",
        ".git/hooks/x.rs",
        ".github/ci.yml",
    ] {
        write(&f.path(rel), "x");
    }
    write(&f.path(".gitignore"), "target/\n");
    let found = f.ok("search_files", json!({"pattern": "src/**/mod.rs"})).await;
    assert_eq!(
        found["matches"],
        json!([{"path": "src/tools/files/mod.rs", "type": "file"}, {"path": "src/tools/mod.rs", "type": "file"}])
    );
    assert_eq!(found["truncated"], false);
    let found = f.ok("search_files", json!({"pattern": "*.yml"})).await;
    assert_eq!(found["matches"], json!([{"path": ".github/ci.yml", "type": "file"}]), "hidden files are searched");
    let found = f.ok("search_files", json!({"pattern": "mod.rs", "path": "src/tools/files"})).await;
    assert_eq!(found["matches"], json!([{"path": "src/tools/files/mod.rs", "type": "file"}]));
    let found = f.ok("search_files", json!({"pattern": "tools"})).await;
    assert_eq!(found["matches"], json!([{"path": "src/tools", "type": "dir"}]));
    // *.rs: five files in src and target, but .git is skipped, target/ is ignored, and the cap is 4.
    let found = f.ok("search_files", json!({"pattern": "*.rs"})).await;
    let paths: Vec<&str> = found["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["src/lib.rs", "src/main.rs", "src/tools/files/mod.rs", "src/tools/mod.rs"]);
    assert_eq!(found["truncated"], false, "exactly at the cap is not truncated");
    let found = f.ok("search_files", json!({"pattern": "*.rs", "include_ignored": true})).await;
    assert_eq!(found["truncated"], true);
    assert_eq!(found["matches"].as_array().unwrap().len(), 4);
    let found = f.ok("search_files", json!({"pattern": "out.rs", "include_ignored": true})).await;
    assert_eq!(found["matches"], json!([{"path": "target/debug/out.rs", "type": "file"}]));
    let found = f.ok("search_files", json!({"pattern": "x.rs", "include_ignored": true})).await;
    assert_eq!(found["matches"], json!([]), ".git is always skipped");

    let message = f.fails("search_files", json!({"pattern": "src/[oops"})).await;
    assert!(message.contains("invalid glob"), "{message}");
    let message = f.fails("search_files", json!({"pattern": "*.rs", "path": "README.md"})).await;
    assert!(message.contains("not a directory"), "{message}");
    let message = f.fails("search_files", json!({})).await;
    assert!(message.contains("pattern"), "{message}");
}

#[actix_rt::test]
async fn grep_honours_ignore_files_skips_binaries_and_caps() {
    let f = fixture_with(FileToolOptions { max_results: 3, max_grep_file_bytes: 1000, ..Default::default() }).await;
    write(&f.path("src/a.rs"), "fn alpha() {}\n// TODO one\nlet Needle = 1;\n");
    write(&f.path("src/b.txt"), "needle in text\n");
    write(&f.path("notes/todo.md"), "TODO: two\nTODO: three\nTODO: four\n");
    write(&f.path("ignored/gen.rs"), "needle generated\n");
    write(&f.path("skipped.log"), "needle log\n");
    write(&f.path(".gitignore"), "ignored/\n");
    write(&f.path(".ignore"), "*.log\n");
    write(&f.path(".git/config"), "needle in git\n");
    write(&f.path("blob.bin"), b"needle\x00binary");
    write(&f.path("huge.txt"), format!("needle\n{}", "y".repeat(2000)));

    let found = f.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(found["matches"], json!([{"path": "src/b.txt", "line": 1, "text": "needle in text"}]));
    assert_eq!(found["truncated"], false);
    assert_eq!(found["filesSkipped"], 2, "the binary and the huge file");
    let found = f.ok("grep", json!({"pattern": "needle", "case_insensitive": true, "glob": "*.rs"})).await;
    assert_eq!(found["matches"], json!([{"path": "src/a.rs", "line": 3, "text": "let Needle = 1;"}]));
    let found = f.ok("grep", json!({"pattern": "needle", "include_ignored": true, "glob": "{*.rs,*.log}"})).await;
    assert_eq!(
        found["matches"],
        json!([
            {"path": "ignored/gen.rs", "line": 1, "text": "needle generated"},
            {"path": "skipped.log", "line": 1, "text": "needle log"}
        ])
    );
    let found = f.ok("grep", json!({"pattern": "^TODO"})).await;
    assert_eq!(found["truncated"], false);
    assert_eq!(found["matches"].as_array().unwrap().len(), 3);
    let found = f.ok("grep", json!({"pattern": "TODO"})).await;
    assert_eq!(found["truncated"], true, "four matches, a cap of three");
    assert_eq!(found["matches"][0], json!({"path": "notes/todo.md", "line": 1, "text": "TODO: two"}));
    let found = f.ok("grep", json!({"pattern": "TODO", "path": "src/a.rs"})).await;
    assert_eq!(found["matches"], json!([{"path": "src/a.rs", "line": 2, "text": "// TODO one"}]));
    let found = f.ok("grep", json!({"pattern": "TODO", "path": "src", "glob": "src/*.txt"})).await;
    assert_eq!(found["matches"], json!([]));
    write(&f.path("long.txt"), format!("match {}\n", "z".repeat(900)));
    let found = f.ok("grep", json!({"pattern": "^match", "path": "long.txt"})).await;
    assert_eq!(found["matches"][0]["text"].as_str().unwrap().chars().count(), 501);

    let message = f.fails("grep", json!({"pattern": "(unclosed"})).await;
    assert!(message.contains("invalid regular expression"), "{message}");
    let message = f.fails("grep", json!({"pattern": "x", "path": "nowhere"})).await;
    assert!(message.contains("\"nowhere\" does not exist"), "{message}");
}

#[actix_rt::test]
async fn write_append_create_folder_and_delete() {
    let f = fixture(true).await;
    let out = f.ok("write_file", json!({"path": "deep/er/new.txt", "content": "hello\n"})).await;
    assert_eq!(out, json!({"path": "deep/er/new.txt", "bytes": 6, "created": true}));
    let out = f.ok("write_file", json!({"path": "deep/er/new.txt", "content": "bye\n"})).await;
    assert_eq!(out["created"], false);
    assert_eq!(fs::read_to_string(f.path("deep/er/new.txt")).unwrap(), "bye\n");
    let message = f.fails("write_file", json!({"path": "deep", "content": "x"})).await;
    assert!(message.contains("is a directory"), "{message}");
    let message = f.fails("write_file", json!({"path": "x.txt"})).await;
    assert!(message.contains("missing required argument content"), "{message}");

    let out = f.ok("append_file", json!({"path": "log.txt", "content": "a\n"})).await;
    assert_eq!(out, json!({"path": "log.txt", "appended": 2, "size": 2, "created": true}));
    let out = f.ok("append_file", json!({"path": "log.txt", "content": "b\n"})).await;
    assert_eq!(out["size"], 4);
    assert_eq!(fs::read_to_string(f.path("log.txt")).unwrap(), "a\nb\n");
    let message = f.fails("append_file", json!({"path": "deep", "content": "x"})).await;
    assert!(message.contains("is a directory"), "{message}");

    assert_eq!(f.ok("create_folder", json!({"path": "made/here"})).await["created"], true);
    assert!(f.path("made/here").is_dir());
    assert_eq!(f.ok("create_folder", json!({"path": "made/here"})).await["created"], false);
    let message = f.fails("create_folder", json!({"path": "log.txt"})).await;
    assert!(message.contains("not a folder"), "{message}");

    let message = f.fails("delete_path", json!({"path": "deep"})).await;
    assert!(message.contains("not empty") && message.contains("recursive"), "{message}");
    assert!(f.path("deep/er/new.txt").exists());
    assert_eq!(
        f.ok("delete_path", json!({"path": "deep", "recursive": true})).await,
        json!({"path": "deep", "type": "dir", "deleted": true})
    );
    assert!(!f.path("deep").exists());
    assert_eq!(f.ok("delete_path", json!({"path": "made/here"})).await["type"], "dir");
    assert_eq!(f.ok("delete_path", json!({"path": "log.txt"})).await["type"], "file");
    assert!(!f.path("log.txt").exists());
    let message = f.fails("delete_path", json!({"path": "log.txt"})).await;
    assert!(message.contains("\"log.txt\" does not exist"), "{message}");
    for root in [".", "", "made/..", f.root.to_str().unwrap()] {
        let message = f.fails("delete_path", json!({"path": root, "recursive": true})).await;
        assert!(message.contains("project root"), "{root}: {message}");
    }
    assert!(f.path("made").is_dir(), "the root and its contents survive");
    // Deleting a symlink removes the link, never its target.
    write(&f.path("target.txt"), "kept");
    symlink(f.path("target.txt"), f.path("alias")).unwrap();
    assert_eq!(f.ok("delete_path", json!({"path": "alias"})).await["type"], "symlink");
    assert_eq!(fs::read_to_string(f.path("target.txt")).unwrap(), "kept");
}

#[actix_rt::test]
async fn edit_file_by_unique_text_or_line_range() {
    let f = fixture(true).await;
    write(&f.path("code.rs"), "fn a() {}\nfn b() {}\nfn a2() {}\nlast\n");
    let out = f.ok("edit_file", json!({"path": "code.rs", "old_text": "fn b() {}", "new_text": "fn bee() {}"})).await;
    assert_eq!((out["startLine"].clone(), out["endLine"].clone()), (json!(2), json!(2)));
    assert_eq!(fs::read_to_string(f.path("code.rs")).unwrap(), "fn a() {}\nfn bee() {}\nfn a2() {}\nlast\n");
    let message = f.fails("edit_file", json!({"path": "code.rs", "old_text": "fn zzz", "new_text": "x"})).await;
    assert!(message.contains("no match") && message.contains("code.rs"), "{message}");
    let message = f.fails("edit_file", json!({"path": "code.rs", "old_text": "fn a", "new_text": "x"})).await;
    assert!(message.contains("matches 2 times"), "{message}");
    let message =
        f.fails("edit_file", json!({"path": "code.rs", "old_text": "fn a", "new_text": "x", "start_line": 1})).await;
    assert!(message.contains("not both"), "{message}");
    let message = f.fails("edit_file", json!({"path": "code.rs", "new_text": "x"})).await;
    assert!(message.contains("old_text"), "{message}");
    assert_eq!(
        fs::read_to_string(f.path("code.rs")).unwrap(),
        "fn a() {}\nfn bee() {}\nfn a2() {}\nlast\n",
        "failed edits change nothing"
    );

    // Lines 2..3 replaced by one line (a newline is added to keep the next line separate).
    let out =
        f.ok("edit_file", json!({"path": "code.rs", "start_line": 2, "end_line": 3, "new_text": "fn c() {}"})).await;
    assert_eq!((out["startLine"].clone(), out["endLine"].clone()), (json!(2), json!(3)));
    assert_eq!(fs::read_to_string(f.path("code.rs")).unwrap(), "fn a() {}\nfn c() {}\nlast\n");
    f.ok("edit_file", json!({"path": "code.rs", "start_line": 1, "new_text": ""})).await;
    assert_eq!(fs::read_to_string(f.path("code.rs")).unwrap(), "fn c() {}\nlast\n");
    f.ok("edit_file", json!({"path": "code.rs", "start_line": 2, "new_text": "end\nmore\n"})).await;
    assert_eq!(fs::read_to_string(f.path("code.rs")).unwrap(), "fn c() {}\nend\nmore\n");
    let message =
        f.fails("edit_file", json!({"path": "code.rs", "start_line": 3, "end_line": 7, "new_text": "x"})).await;
    assert!(message.contains("past the end"), "{message}");
    let message =
        f.fails("edit_file", json!({"path": "code.rs", "start_line": 3, "end_line": 2, "new_text": "x"})).await;
    assert!(message.contains("before start_line"), "{message}");
    let message = f.fails("edit_file", json!({"path": "absent.rs", "old_text": "a", "new_text": "b"})).await;
    assert!(message.contains("\"absent.rs\" does not exist"), "{message}");
    write(&f.path("blob.bin"), b"a\x00b");
    let message = f.fails("edit_file", json!({"path": "blob.bin", "old_text": "a", "new_text": "b"})).await;
    assert!(message.contains("binary"), "{message}");
}

#[actix_rt::test]
async fn rename_move_refuses_to_overwrite_unless_asked() {
    let f = fixture(true).await;
    write(&f.path("a.txt"), "A");
    write(&f.path("b.txt"), "B");
    let message = f.fails("rename_move", json!({"from": "a.txt", "to": "b.txt"})).await;
    assert!(message.contains("already exists") && message.contains("overwrite"), "{message}");
    assert_eq!(fs::read_to_string(f.path("b.txt")).unwrap(), "B");
    let out = f.ok("rename_move", json!({"from": "a.txt", "to": "b.txt", "overwrite": true})).await;
    assert_eq!(out, json!({"from": "a.txt", "to": "b.txt", "overwritten": true}));
    assert_eq!(fs::read_to_string(f.path("b.txt")).unwrap(), "A");
    assert!(!f.path("a.txt").exists());
    let out = f.ok("rename_move", json!({"from": "b.txt", "to": "moved/into/c.txt"})).await;
    assert_eq!(out["overwritten"], false);
    assert_eq!(fs::read_to_string(f.path("moved/into/c.txt")).unwrap(), "A");
    f.ok("rename_move", json!({"from": "moved", "to": "renamed"})).await;
    assert!(f.path("renamed/into/c.txt").exists());
    let message = f.fails("rename_move", json!({"from": "ghost.txt", "to": "x.txt"})).await;
    assert!(message.contains("\"ghost.txt\" does not exist"), "{message}");
    let message = f.fails("rename_move", json!({"from": ".", "to": "elsewhere"})).await;
    assert!(message.contains("project root"), "{message}");
}

#[actix_rt::test]
async fn apply_patch_is_all_or_nothing_over_several_files() {
    let f = fixture(true).await;
    write(&f.path("src/one.txt"), "alpha\nbeta\ngamma\n");
    write(&f.path("two.txt"), "first\nsecond\n");
    write(&f.path("gone.txt"), "bye\n");
    let patch = "\
diff --git a/src/one.txt b/src/one.txt
index 1111111..2222222 100644
--- a/src/one.txt
+++ b/src/one.txt
@@ -1,3 +1,3 @@
 alpha
-beta
+BETA
 gamma
diff --git a/two.txt b/two.txt
--- a/two.txt\t2026-01-01 00:00:00
+++ b/two.txt\t2026-01-01 00:00:01
@@ -2 +2,2 @@
 second
+third
--- /dev/null
+++ b/new/made.txt
@@ -0,0 +1,2 @@
+fresh
+file
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";
    let out = f.ok("apply_patch", json!({"patch": patch})).await;
    assert_eq!(out["hunks"], 4);
    assert_eq!(
        out["files"],
        json!([
            {"path": "gone.txt", "action": "deleted"},
            {"path": "new/made.txt", "action": "created"},
            {"path": "src/one.txt", "action": "modified"},
            {"path": "two.txt", "action": "modified"}
        ])
    );
    assert_eq!(fs::read_to_string(f.path("src/one.txt")).unwrap(), "alpha\nBETA\ngamma\n");
    assert_eq!(fs::read_to_string(f.path("two.txt")).unwrap(), "first\nsecond\nthird\n");
    assert_eq!(fs::read_to_string(f.path("new/made.txt")).unwrap(), "fresh\nfile\n");
    assert!(!f.path("gone.txt").exists());

    // The second file's hunk does not apply: the first file is not written either.
    let before = snapshot(&f.root);
    let bad = concat!(
        "--- a/src/one.txt\n+++ b/src/one.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n",
        "--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-not there\n+x\n"
    );
    let message = f.fails("apply_patch", json!({"patch": bad})).await;
    assert!(message.contains("hunk #1") && message.contains("two.txt"), "{message}");
    assert_eq!(snapshot(&f.root), before);
    let creates_existing = "--- /dev/null\n+++ b/two.txt\n@@ -0,0 +1 @@\n+x\n";
    let message = f.fails("apply_patch", json!({"patch": creates_existing})).await;
    assert!(message.contains("already exists"), "{message}");
    let missing = "--- a/absent.txt\n+++ b/absent.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let message = f.fails("apply_patch", json!({"patch": missing})).await;
    assert!(message.contains("\"absent.txt\" does not exist"), "{message}");
    for garbage in ["not a patch at all", "--- a/two.txt\n+++ b/two.txt\n@@ -1,5 +1,5 @@\n first\n"] {
        let message = f.fails("apply_patch", json!({"patch": garbage})).await;
        assert!(message.contains("apply_patch:"), "{message}");
    }
    assert_eq!(snapshot(&f.root), before);
}

/// Paths that lead out of the project, for every tool: none may read, list, write, move or delete
/// anything outside, and each refusal is a tool error naming the path.
#[actix_rt::test]
async fn path_escapes_are_all_refused() {
    let f = fixture(true).await;
    let out = f.outside.as_path();
    write(&out.join("secret.txt"), SECRET);
    write(&out.join("dir/inner.txt"), SECRET);
    write(&f.path("inside.txt"), "inside\n");
    write(&f.path("sub/file.txt"), "sub\n");
    symlink(out, f.path("link_dir")).unwrap();
    symlink(out.join("secret.txt"), f.path("link_file")).unwrap();
    symlink(out.join("not-yet.txt"), f.path("dangling")).unwrap();
    let before = snapshot(out);
    let project_before = snapshot(&f.root);

    let sibling = "../outside/secret.txt".to_owned();
    let abs_secret = out.join("secret.txt").to_str().unwrap().to_owned();
    let abs_new = out.join("new.txt").to_str().unwrap().to_owned();
    let abs_dir = out.to_str().unwrap().to_owned();
    let reads: Vec<String> = [
        "..",
        "../secret.txt",
        "../../../../../../etc/passwd",
        "sub/../../secret.txt",
        "a/../../x",
        "sub/./../../..",
        "/etc/passwd",
        "/",
        "link_dir",
        "link_dir/",
        "link_dir/secret.txt",
        "link_dir/dir/inner.txt",
        "link_file",
        "dangling",
        "sub/../link_dir/dir",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([sibling.clone(), abs_secret.clone(), abs_dir.clone()])
    .collect();

    let leaked = |result: &Value| result.to_string().contains(SECRET) || result.to_string().contains("root:");
    for path in &reads {
        for (tool, args) in [
            ("read_file", json!({"path": path})),
            ("read_file", json!({"path": path, "start_line": 1, "end_line": 3})),
            ("list_directory", json!({"path": path})),
            ("search_files", json!({"pattern": "*", "path": path})),
            ("grep", json!({"pattern": "SECRET|root", "path": path})),
            ("edit_file", json!({"path": path, "old_text": "TOP", "new_text": "pwned"})),
            ("edit_file", json!({"path": path, "start_line": 1, "new_text": "pwned"})),
        ] {
            let result = f.call(tool, args.clone()).await;
            assert_eq!(result["isError"], true, "{tool} {args} must be refused: {result}");
            assert!(!leaked(&result), "{tool} {args} leaked: {result}");
            let message = result["content"][0]["text"].as_str().unwrap();
            let named = path.trim_end_matches('/');
            assert!(
                message.contains(named) || message.contains(path.as_str()),
                "{tool}: the message names {path:?}: {message}"
            );
        }
        // get_file_info describes an in-project symlink itself (no target outside is revealed);
        // everything else is refused.
        let result = f.call("get_file_info", json!({"path": path})).await;
        assert!(!leaked(&result), "{result}");
        if ["link_dir", "link_dir/", "link_file", "dangling"].contains(&path.as_str()) {
            assert_eq!(result["structuredContent"]["type"], "symlink", "{path}: {result}");
            assert!(result["structuredContent"].get("target").is_none(), "{path}: {result}");
        } else {
            assert_eq!(result["isError"], true, "get_file_info {path} must be refused: {result}");
        }
    }

    // `..` and absolute globs, and grep's glob, cannot reach outside either.
    for pattern in ["../*", "../**/secret.txt", "**/../../*", "/etc/*", "sub/../../*"] {
        let result = f.call("search_files", json!({"pattern": pattern})).await;
        assert_eq!(result["isError"], true, "{pattern}: {result}");
        let result = f.call("grep", json!({"pattern": "SECRET", "glob": pattern})).await;
        assert_eq!(result["isError"], true, "{pattern}: {result}");
    }
    // Walks never follow symlinks out.
    let found = f.ok("grep", json!({"pattern": "SECRET"})).await;
    assert_eq!(found["matches"], json!([]));
    let found = f.ok("search_files", json!({"pattern": "*.txt"})).await;
    assert_eq!(
        found["matches"],
        json!([{"path": "inside.txt", "type": "file"}, {"path": "sub/file.txt", "type": "file"}])
    );

    // Writes: every target outside, through symlinks, or a dangling link.
    let writes: Vec<String> = [
        "../pwned.txt",
        "sub/../../pwned.txt",
        "a/b/../../../pwned.txt",
        "link_dir/pwned.txt",
        "link_dir/secret.txt",
        "link_dir/dir/inner.txt",
        "link_dir/newdir/pwned.txt",
        "link_file",
        "dangling",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([sibling.clone(), abs_secret.clone(), abs_new.clone()])
    .collect();
    for path in &writes {
        for (tool, args) in [
            ("write_file", json!({"path": path, "content": "pwned"})),
            ("append_file", json!({"path": path, "content": "pwned"})),
            ("create_folder", json!({"path": path})),
            ("rename_move", json!({"from": "inside.txt", "to": path})),
            ("apply_patch", json!({"patch": format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n")})),
            ("apply_patch", json!({"patch": format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{SECRET}\n+pwned\n")})),
            ("apply_patch", json!({"patch": format!("--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-{SECRET}\n")})),
        ] {
            let result = f.call(tool, args.clone()).await;
            assert_eq!(result["isError"], true, "{tool} {args} must be refused: {result}");
            let message = result["content"][0]["text"].as_str().unwrap();
            assert!(message.contains(path.as_str()), "{tool}: the message names {path:?}: {message}");
        }
        // Replacing an in-project symlink entry itself would be allowed (the link goes, its target
        // stays), so those two are not escape attempts for an overwriting move.
        if !["link_file", "dangling"].contains(&path.as_str()) {
            let args = json!({"from": "inside.txt", "to": path, "overwrite": true});
            let result = f.call("rename_move", args.clone()).await;
            assert_eq!(result["isError"], true, "rename_move {args} must be refused: {result}");
        }
    }
    // Deleting or moving things outside, through a symlinked directory or by absolute path.
    for path in ["../x", "link_dir/secret.txt", "link_dir/dir", abs_secret.as_str(), abs_dir.as_str(), sibling.as_str()]
    {
        for (tool, args) in [
            ("delete_path", json!({"path": path, "recursive": true})),
            ("rename_move", json!({"from": path, "to": "stolen"})),
        ] {
            let result = f.call(tool, args.clone()).await;
            assert_eq!(result["isError"], true, "{tool} {args} must be refused: {result}");
        }
    }
    // A patch whose second file escapes writes nothing, not even the first file.
    let mixed = concat!(
        "--- a/inside.txt\n+++ b/inside.txt\n@@ -1 +1 @@\n-inside\n+changed\n",
        "--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+x\n"
    );
    let message = f.fails("apply_patch", json!({"patch": mixed})).await;
    assert!(message.contains("../escaped.txt") && message.contains("outside"), "{message}");

    assert_eq!(snapshot(out), before, "nothing outside the project changed");
    assert_eq!(snapshot(&f.root), project_before, "every refused call left the project as it was");
    let container: Vec<String> =
        fs::read_dir(f.base.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(container.len(), 2, "nothing new beside the project: {container:?}");

    // Removing or moving an in-project symlink that points outside acts on the link only.
    f.ok("rename_move", json!({"from": "link_file", "to": "sub/moved_link"})).await;
    f.ok("delete_path", json!({"path": "sub/moved_link"})).await;
    f.ok("delete_path", json!({"path": "link_dir", "recursive": true})).await;
    assert_eq!(snapshot(out), before, "the targets of removed links are untouched");
}
