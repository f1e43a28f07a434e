//! The read tools that take one path: `list_directory`, `read_file`, `get_file_info` (the
//! walks, `search_files` and `grep`, are in `search.rs`).

use std::io::{BufRead, BufReader, Read};
use std::time::UNIX_EPOCH;

use mcpd::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use super::search;
use super::{failure, kind, looks_binary, open_regular, refused, schema, Args, FileToolOptions, Files, Run};
use crate::tools::paths::ProjectRoot;

pub(super) fn tools(options: &FileToolOptions) -> Vec<(Tool, Run)> {
    let max = options.max_results;
    vec![
        (list_directory_tool(max), list_directory as Run),
        (read_file_tool(options.max_read_bytes), read_file),
        (search::search_files_tool(max), search::search_files),
        (search::grep_tool(max, options.max_grep_file_bytes), search::grep),
        (get_file_info_tool(), get_file_info),
    ]
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
    let inside = files.root.existing(given).map_err(refused)?;
    let shown = inside.shown();
    let io_error = failure(given, "list", &shown);
    if !files.root.dir().metadata(inside.path()).map_err(&io_error)?.is_dir() {
        return Err(format!("{shown:?} is not a directory"));
    }
    let dir = files.root.dir().open_dir(inside.path()).map_err(&io_error)?;
    let deny = files.root.deny().snapshot();
    let mut entries = Vec::new();
    for item in dir.entries().map_err(&io_error)? {
        let item = item.map_err(&io_error)?;
        let file_type = item.file_type().map_err(&io_error)?;
        if ProjectRoot::hides_entry(&deny, &dir, &inside, &item.file_name(), file_type) {
            continue;
        }
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
    let inside = files.root.existing(given).map_err(refused)?;
    let shown = inside.shown();
    let io_error = failure(given, "read", &shown);
    let (mut file, size) = open_regular(files, &inside, given, "is a directory (use list_directory)")?;
    let max = files.options.max_read_bytes;
    let mut head = Vec::with_capacity(8192);
    file.by_ref().take(8192).read_to_end(&mut head).map_err(&io_error)?;
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
        file.take((max + 1).saturating_sub(bytes.len() as u64)).read_to_end(&mut bytes).map_err(&io_error)?;
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
        if !skip_line(&mut reader).map_err(&io_error)? {
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
        let n = reader.by_ref().take(budget + 1).read_until(b'\n', &mut content).map_err(&io_error)?;
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
        reached_end = reader.fill_buf().map_err(&io_error)?.is_empty();
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
    let inside = files.root.entry(given).map_err(refused)?;
    let shown = inside.shown();
    let meta = files.root.dir().symlink_metadata(inside.path()).map_err(failure(given, "inspect", &shown))?;
    let mut out = Map::new();
    out.insert("path".into(), json!(shown));
    out.insert("type".into(), json!(kind(meta.file_type())));
    out.insert("size".into(), json!(meta.len()));
    if let Ok(modified) = meta.modified() {
        let millis = match modified.into_std().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        out.insert("modified".into(), json!(mcpd::builtin::rfc3339_utc(millis)));
    }
    out.insert("readonly".into(), json!(meta.permissions().readonly()));
    if meta.file_type().is_symlink() {
        // Where the link leads, judged like any path (so never a place outside).
        if let Ok(target) = files.root.existing(given) {
            out.insert("target".into(), json!(target.shown()));
            if let Ok(target_meta) = files.root.dir().symlink_metadata(target.path()) {
                out.insert("targetType".into(), json!(kind(target_meta.file_type())));
            }
        }
    }
    Ok(Value::Object(out))
}
