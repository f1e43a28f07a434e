//! The read tools: `list_directory`, `read_file`, `search_files`, `grep`, `get_file_info`.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use mcpd::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use super::{entry, kind, looks_binary, output, refused, schema, Args, FileToolOptions, Files, Run};

/// Longest line text `grep` returns (in characters); longer lines are cut with `…`.
const MAX_LINE_CHARS: usize = 500;

pub(super) fn tools(options: &FileToolOptions) -> Vec<(Tool, Run)> {
    let max = options.max_results;
    vec![
        (list_directory_tool(max), list_directory as Run),
        (read_file_tool(options.max_read_bytes), read_file),
        (search_files_tool(max), search_files),
        (grep_tool(max, options.max_grep_file_bytes), grep),
        (get_file_info_tool(), get_file_info),
    ]
}

/// The output schema of a search: `{pattern, matches: [item], truncated}` plus `more`
/// properties (all required).
fn matches_output(item: Value, item_required: &[&str], more: Value) -> Value {
    let mut properties = json!({
        "pattern": { "type": "string" },
        "matches": { "type": "array", "items": output(item, item_required) },
        "truncated": { "type": "boolean" }
    });
    let mut required = vec!["pattern".to_owned(), "matches".to_owned(), "truncated".to_owned()];
    if let (Some(all), Value::Object(more)) = (properties.as_object_mut(), more) {
        required.extend(more.keys().cloned());
        all.extend(more);
    }
    json!({ "type": "object", "properties": properties, "required": required })
}

fn list_directory_tool(max: usize) -> Tool {
    Tool::new(
        "list_directory",
        format!(
            "Lists a directory of the project (default: the project root): each entry's name, type \
             (file, dir, symlink or other) and, for files, size in bytes, sorted by name. At most {max} \
             entries (then truncated is true). Paths are relative to the project root and may not leave it."
        ),
        schema(
            json!({
                "path": { "type": "string", "description": "Directory, relative to the project root (default `.`)." }
            }),
            &[],
        ),
    )
    .with_title("List directory")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "entries": { "type": "array", "items": {
                "type": "object",
                "properties": {
                    "name": { "type": "string" },
                    "type": { "type": "string", "enum": ["file", "dir", "symlink", "other"] },
                    "size": { "type": "integer" }
                },
                "required": ["name", "type"]
            } },
            "total": { "type": "integer" },
            "truncated": { "type": "boolean" }
        },
        "required": ["path", "entries", "total", "truncated"]
    }))
    .with_annotations(ToolAnnotations::read_only())
}

fn list_directory(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.opt_string("path")?.unwrap_or(".");
    let dir = files.root.existing(given).map_err(refused)?;
    let shown = files.root.relative(&dir);
    if !dir.is_dir() {
        return Err(format!("{shown:?} is not a directory"));
    }
    let mut entries = Vec::new();
    for item in fs::read_dir(&dir).map_err(|e| format!("cannot list {shown:?}: {e}"))? {
        let item = item.map_err(|e| format!("cannot list {shown:?}: {e}"))?;
        let file_type = item.file_type().map_err(|e| format!("cannot list {shown:?}: {e}"))?;
        let name = item.file_name().to_string_lossy().into_owned();
        let mut value = json!({ "name": name, "type": kind(file_type) });
        if file_type.is_file() {
            if let Ok(meta) = item.metadata() {
                value["size"] = json!(meta.len());
            }
        }
        entries.push((name, value));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let total = entries.len();
    let truncated = total > files.options.max_results;
    let entries: Vec<Value> = entries.into_iter().take(files.options.max_results).map(|(_, v)| v).collect();
    Ok(json!({ "path": shown, "entries": entries, "total": total, "truncated": truncated }))
}

fn read_file_tool(max_bytes: u64) -> Tool {
    Tool::new(
        "read_file",
        format!(
            "Reads a text file of the project. Without a line range the whole file is returned, if it \
             is at most {max_bytes} bytes; with start_line and/or end_line (1-based, inclusive) only \
             those lines are read, from files of any size, returning at most {max_bytes} bytes (then \
             truncated is true). Binary files (a NUL byte in the first 8 KiB, or not UTF-8) are \
             reported as binary with their size, not shown."
        ),
        schema(
            json!({
                "path": { "type": "string", "description": "File, relative to the project root." },
                "start_line": { "type": "integer", "minimum": 1, "description": "First line to return (1-based)." },
                "end_line": { "type": "integer", "minimum": 1, "description": "Last line to return (inclusive)." }
            }),
            &["path"],
        ),
    )
    .with_title("Read file")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "binary": { "type": "boolean" },
            "size": { "type": "integer" },
            "content": { "type": "string" },
            "startLine": { "type": "integer" },
            "endLine": { "type": "integer" },
            "totalLines": { "type": "integer", "description": "Present when the read reached the end of the file." },
            "truncated": { "type": "boolean" }
        },
        "required": ["path", "binary", "size"]
    }))
    .with_annotations(ToolAnnotations::read_only())
}

fn read_file(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.string("path")?;
    let start = args.opt_line("start_line")?;
    let end = args.opt_line("end_line")?;
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            return Err(format!("end_line {e} is before start_line {s}"));
        }
    }
    let path = files.root.existing(given).map_err(refused)?;
    let shown = files.root.relative(&path);
    let io_error = |e: std::io::Error| format!("cannot read {shown:?}: {e}");
    let meta = fs::metadata(&path).map_err(io_error)?;
    if meta.is_dir() {
        return Err(format!("{shown:?} is a directory (use list_directory)"));
    }
    if !meta.is_file() {
        return Err(format!("{shown:?} is not a regular file"));
    }
    let size = meta.len();
    let max = files.options.max_read_bytes;
    let mut file = fs::File::open(&path).map_err(io_error)?;
    let mut head = Vec::with_capacity(8192);
    file.by_ref().take(8192).read_to_end(&mut head).map_err(io_error)?;
    let binary = json!({ "path": shown, "binary": true, "size": size });
    if looks_binary(&head) {
        return Ok(binary);
    }
    if start.is_none() && end.is_none() {
        let too_big = || {
            format!(
                "{shown:?} is {size} bytes, over the limit of {max} bytes; \
                 pass start_line and end_line to read part of it"
            )
        };
        if size > max {
            return Err(too_big());
        }
        let mut bytes = head;
        file.take((max + 1).saturating_sub(bytes.len() as u64)).read_to_end(&mut bytes).map_err(io_error)?;
        if bytes.len() as u64 > max {
            return Err(too_big());
        }
        let Ok(text) = String::from_utf8(bytes) else { return Ok(binary) };
        let total = text.split_inclusive('\n').count();
        return Ok(json!({
            "path": shown, "binary": false, "size": size, "content": text,
            "startLine": 1, "endLine": total, "totalLines": total, "truncated": false
        }));
    }
    let start = start.unwrap_or(1);
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut line = 0u64;
    while line + 1 < start {
        if !skip_line(&mut reader).map_err(io_error)? {
            return Err(format!("start_line {start} is past the end of {shown:?}, which has {line} lines"));
        }
        line += 1;
    }
    let mut content = Vec::new();
    let mut truncated = false;
    let mut reached_end = false;
    loop {
        if end.is_some_and(|e| line >= e) {
            break;
        }
        let budget = max.saturating_sub(content.len() as u64);
        let n = reader.by_ref().take(budget + 1).read_until(b'\n', &mut content).map_err(io_error)?;
        if n == 0 {
            reached_end = true;
            break;
        }
        line += 1;
        if content.len() as u64 > max {
            content.truncate(max as usize);
            truncated = true;
            break;
        }
    }
    if line < start {
        return Err(format!("start_line {start} is past the end of {shown:?}, which has {line} lines"));
    }
    if !truncated && !reached_end {
        reached_end = reader.fill_buf().map_err(io_error)?.is_empty();
    }
    let text = match String::from_utf8(content) {
        Ok(text) => text,
        // A cut in the middle of a character: drop the partial character.
        Err(e) if truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| "internal error: UTF-8 cut".to_owned())?
        }
        Err(_) => return Ok(binary),
    };
    let mut out = json!({
        "path": shown, "binary": false, "size": size, "content": text,
        "startLine": start, "endLine": line, "truncated": truncated
    });
    if reached_end {
        out["totalLines"] = json!(line);
    }
    Ok(out)
}

/// Skips one line without keeping it; false at the end of the file.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        let len = buf.len();
        reader.consume(len);
    }
}

/// A glob that matches an entry's name or its path (relative to the project root, or to the
/// directory searched). `..` and absolute patterns are refused: they could only name places
/// outside.
struct NameGlob(GlobMatcher);

impl NameGlob {
    fn new(pattern: &str) -> Result<NameGlob, String> {
        if pattern.starts_with('/') || pattern.starts_with('\\') || pattern.split(['/', '\\']).any(|c| c == "..") {
            return Err(format!(
                "the pattern {pattern:?} leads outside the project directory (no `..` or absolute patterns)"
            ));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob {pattern:?}: {e}"))?;
        Ok(NameGlob(glob.compile_matcher()))
    }

    fn matches(&self, name: &str, from_root: &str, from_start: &str) -> bool {
        self.0.is_match(name) || self.0.is_match(from_root) || self.0.is_match(from_start)
    }
}

/// A walk over `start` (inside the root) that honours `.gitignore` and `.ignore` files from the
/// project root down (unless `include_ignored`), skips `.git` (and `.hg`, `.svn`), and never
/// follows symlinks. The walk begins at the root so that the ignore files of the directories
/// above `start` apply; only `start` and its way down are entered.
fn walk(root: &Path, start: &Path, include_ignored: bool) -> ignore::Walk {
    let mut builder = WalkBuilder::new(root);
    builder.standard_filters(!include_ignored);
    builder.hidden(false).parents(false).git_global(false).require_git(false).follow_links(false);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    let start = start.to_path_buf();
    builder.filter_entry(move |e| {
        let vcs = e.depth() > 0 && matches!(e.file_name().to_str(), Some(".git" | ".hg" | ".svn"));
        !vcs && (e.path().starts_with(&start) || start.starts_with(e.path()))
    });
    builder.build()
}

fn relative_to(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

fn search_files_tool(max: usize) -> Tool {
    Tool::new(
        "search_files",
        format!(
            "Finds files and directories of the project whose name or relative path matches a glob \
             (`*.rs`, `src/**/mod.rs`, `{{a,b}}.txt`; `*` stays within one path segment, `**` crosses \
             them). Searches under path (default: the project root), skipping `.git` and what \
             .gitignore/.ignore files exclude unless include_ignored is true; symlinks are listed, not \
             followed. At most {max} matches (then truncated is true)."
        ),
        schema(
            json!({
                "pattern": { "type": "string", "description": "Glob matched against names and relative paths." },
                "path": { "type": "string", "description": "Directory to search (default `.`)." },
                "include_ignored": { "type": "boolean", "description": "Also search ignored files (default false)." }
            }),
            &["pattern"],
        ),
    )
    .with_title("Search files by name")
    .with_output_schema(matches_output(
        json!({ "path": { "type": "string" }, "type": { "type": "string" } }),
        &["path", "type"],
        json!({}),
    ))
    .with_annotations(ToolAnnotations::read_only())
}

fn start_dir(files: &Files, args: &Args<'_>) -> Result<PathBuf, String> {
    let given = args.opt_string("path")?.unwrap_or(".");
    files.root.existing(given).map_err(refused)
}

fn search_files(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let pattern = args.string("pattern")?;
    let glob = NameGlob::new(pattern)?;
    let start = start_dir(files, args)?;
    if !start.is_dir() {
        return Err(format!("{:?} is not a directory", files.root.relative(&start)));
    }
    let root = files.root.path();
    let mut matches = Vec::new();
    let mut truncated = false;
    for item in walk(root, &start, args.opt_bool("include_ignored")?.unwrap_or(false)) {
        let Ok(item) = item else { continue };
        if !item.path().starts_with(&start) || item.path() == start {
            continue;
        }
        let name = item.file_name().to_string_lossy();
        let from_root = relative_to(item.path(), root);
        if !glob.matches(&name, &from_root, &relative_to(item.path(), &start)) {
            continue;
        }
        if matches.len() == files.options.max_results {
            truncated = true;
            break;
        }
        let kind = item.file_type().map_or("other", kind);
        matches.push(json!({ "path": from_root, "type": kind }));
    }
    Ok(json!({ "pattern": pattern, "matches": matches, "truncated": truncated }))
}

fn grep_tool(max: usize, max_file: u64) -> Tool {
    Tool::new(
        "grep",
        format!(
            "Searches file contents of the project with a regular expression (Rust regex syntax), line \
             by line, under path (a directory or one file; default: the project root), optionally only \
             in files whose name or relative path matches glob. Skips `.git`, what .gitignore/.ignore \
             files exclude (unless include_ignored is true), symlinks, binary files and files over \
             {max_file} bytes. Returns at most {max} matches as {{path, line, text}} (then truncated is \
             true); line text is cut after {MAX_LINE_CHARS} characters."
        ),
        schema(
            json!({
                "pattern": { "type": "string", "description": "Regular expression." },
                "path": { "type": "string", "description": "Directory or file to search (default `.`)." },
                "glob": {
                    "type": "string",
                    "description": "Only files whose name or relative path matches this glob."
                },
                "case_insensitive": { "type": "boolean", "description": "Ignore case (default false)." },
                "include_ignored": { "type": "boolean", "description": "Also search ignored files (default false)." }
            }),
            &["pattern"],
        ),
    )
    .with_title("Search file contents")
    .with_output_schema(matches_output(
        json!({ "path": { "type": "string" }, "line": { "type": "integer" }, "text": { "type": "string" } }),
        &["path", "line", "text"],
        json!({
            "filesSearched": { "type": "integer" },
            "filesSkipped": { "type": "integer", "description": "Binary or too big." }
        }),
    ))
    .with_annotations(ToolAnnotations::read_only())
}

fn grep(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let pattern = args.string("pattern")?;
    let regex = regex::RegexBuilder::new(pattern)
        .case_insensitive(args.opt_bool("case_insensitive")?.unwrap_or(false))
        .build()
        .map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))?;
    let glob = args.opt_string("glob")?.map(NameGlob::new).transpose()?;
    let start = start_dir(files, args)?;
    let root = files.root.path();
    let mut matches = Vec::new();
    let (mut truncated, mut searched, mut skipped) = (false, 0u64, 0u64);
    'files: for item in walk(root, &start, args.opt_bool("include_ignored")?.unwrap_or(false)) {
        let Ok(item) = item else { continue };
        if !item.path().starts_with(&start) || !item.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let from_root = relative_to(item.path(), root);
        if let Some(glob) = &glob {
            let name = item.file_name().to_string_lossy();
            if !glob.matches(&name, &from_root, &relative_to(item.path(), &start)) {
                continue;
            }
        }
        let text = match item.metadata() {
            Ok(meta) if meta.len() <= files.options.max_grep_file_bytes => {
                fs::read(item.path()).ok().filter(|b| !looks_binary(b)).and_then(|b| String::from_utf8(b).ok())
            }
            _ => None,
        };
        let Some(text) = text else {
            skipped += 1;
            continue;
        };
        searched += 1;
        for (i, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches.len() == files.options.max_results {
                truncated = true;
                break 'files;
            }
            matches.push(json!({ "path": from_root, "line": i + 1, "text": cut(line) }));
        }
    }
    Ok(json!({
        "pattern": pattern, "matches": matches, "truncated": truncated,
        "filesSearched": searched, "filesSkipped": skipped
    }))
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

fn get_file_info_tool() -> Tool {
    Tool::new(
        "get_file_info",
        "Tells about one path of the project without reading it: type (file, dir, symlink or other), \
         size in bytes, last modification time (RFC 3339, UTC), whether it is read-only, and for a \
         symlink its target (relative to the project root) when the target is inside the project.",
        schema(
            json!({ "path": { "type": "string", "description": "Path, relative to the project root." } }),
            &["path"],
        ),
    )
    .with_title("File info")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "type": { "type": "string", "enum": ["file", "dir", "symlink", "other"] },
            "size": { "type": "integer" },
            "modified": { "type": "string" },
            "readonly": { "type": "boolean" },
            "target": { "type": "string", "description": "A symlink's target, when inside the project." },
            "targetType": { "type": "string" }
        },
        "required": ["path", "type", "size", "readonly"]
    }))
    .with_annotations(ToolAnnotations::read_only())
}

fn get_file_info(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.string("path")?;
    let path = entry(&files.root, given).map_err(refused)?;
    let shown = files.root.relative(&path);
    let meta = fs::symlink_metadata(&path).map_err(|e| format!("cannot inspect {shown:?}: {e}"))?;
    let mut out = Map::new();
    out.insert("path".into(), json!(shown));
    out.insert("type".into(), json!(kind(meta.file_type())));
    out.insert("size".into(), json!(meta.len()));
    if let Ok(modified) = meta.modified() {
        let millis = match modified.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        out.insert("modified".into(), json!(mcpd::builtin::rfc3339_utc(millis)));
    }
    out.insert("readonly".into(), json!(meta.permissions().readonly()));
    if meta.file_type().is_symlink() {
        if let Ok(target) = path.canonicalize() {
            if target.starts_with(files.root.path()) {
                out.insert("target".into(), json!(files.root.relative(&target)));
                if let Ok(target_meta) = fs::metadata(&target) {
                    out.insert("targetType".into(), json!(kind(target_meta.file_type())));
                }
            }
        }
    }
    Ok(Value::Object(out))
}
