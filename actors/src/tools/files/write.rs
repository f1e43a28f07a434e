//! The write tools: `write_file`, `edit_file`, `append_file`, `create_folder`, `delete_path`,
//! `rename_move`.

use std::io::Write;

use cap_std::fs::OpenOptions;
use mcpd::model::Tool;
use serde_json::{json, Value};

use super::{
    create_parents, failure, kind, nonblocking, output, read_text, refused, schema, write_whole, writes, Args,
    FileToolOptions, Files, Run,
};
use crate::tools::paths::{is_escape, Inside, PathError};

pub(super) fn tools(options: &FileToolOptions) -> Vec<(Tool, Run)> {
    vec![
        (write_file_tool(), write_file as Run),
        (edit_file_tool(options.max_read_bytes), edit_file),
        (append_file_tool(), append_file),
        (create_folder_tool(), create_folder),
        (delete_path_tool(), delete_path),
        (rename_move_tool(), rename_move),
    ]
}

fn path_prop(what: &str) -> Value {
    json!({ "type": "string", "description": format!("{what}, relative to the project root.") })
}

fn write_file_tool() -> Tool {
    Tool::new(
        "write_file",
        "Writes a text file of the project: creates it (and its missing parent folders) or replaces \
         its whole content. Refuses paths outside the project, also through symlinks.",
        schema(
            json!({ "path": path_prop("File"), "content": { "type": "string", "description": "The new content." } }),
            &["path", "content"],
        ),
    )
    .with_title("Write file")
    .with_output_schema(output(
        json!({ "path": { "type": "string" }, "bytes": { "type": "integer" }, "created": { "type": "boolean" } }),
        &["path", "bytes", "created"],
    ))
    .with_annotations(writes(true, true))
}

/// A regular file to write or append to (absent is fine), with its missing parents created.
struct Target<'a> {
    given: &'a str,
    inside: Inside,
    shown: String,
    created: bool,
}

fn file_target<'a>(files: &Files, args: &'a Args<'_>) -> Result<Target<'a>, String> {
    let given = args.string("path")?;
    let inside = files.root.writable(given).map_err(refused)?;
    let shown = inside.shown();
    let created = match files.root.dir().metadata(inside.path()) {
        Ok(meta) if meta.is_dir() => return Err(format!("{shown:?} is a directory")),
        Ok(meta) if !meta.is_file() => return Err(format!("{shown:?} is not a regular file")),
        Ok(_) => false,
        Err(e) if is_escape(&e) => return Err(refused(PathError::Outside { path: given.to_owned() })),
        Err(_) => true,
    };
    create_parents(files, &inside, given)?;
    Ok(Target { given, inside, shown, created })
}

fn write_file(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let content = args.string("content")?;
    let Target { given, inside, shown, created } = file_target(files, args)?;
    write_whole(files, &inside, given, content.as_bytes())?;
    Ok(json!({ "path": shown, "bytes": content.len(), "created": created }))
}

fn edit_file_tool(max_bytes: u64) -> Tool {
    Tool::new(
        "edit_file",
        format!(
            "Edits a text file of the project in place, in one of two ways: replace old_text, which \
             must occur exactly once (include enough surrounding lines to make it unique), with \
             new_text; or replace the lines start_line..end_line (1-based, inclusive; end_line defaults \
             to start_line) with new_text (empty new_text deletes them). Files over {max_bytes} bytes \
             and binary files are refused."
        ),
        schema(
            json!({
                "path": path_prop("File"),
                "old_text": { "type": "string", "description": "Exact text to replace (must match once)." },
                "new_text": { "type": "string", "description": "Replacement text." },
                "start_line": { "type": "integer", "minimum": 1 },
                "end_line": { "type": "integer", "minimum": 1 }
            }),
            &["path", "new_text"],
        ),
    )
    .with_title("Edit file")
    .with_output_schema(output(
        json!({
            "path": { "type": "string" },
            "startLine": { "type": "integer", "description": "First line of the replaced text (before the edit)." },
            "endLine": { "type": "integer", "description": "Last line of the replaced text (before the edit)." },
            "bytes": { "type": "integer", "description": "Size of the file after the edit." }
        }),
        &["path", "startLine", "endLine", "bytes"],
    ))
    .with_annotations(writes(true, false))
}

fn edit_file(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.string("path")?;
    let new_text = args.string("new_text")?;
    let old_text = args.opt_string("old_text")?;
    let start = args.opt_line("start_line")?;
    let end = args.opt_line("end_line")?;
    let inside = files.root.existing(given).map_err(refused)?;
    let shown = inside.shown();
    let text = read_text(files, &inside, given)?;
    let (edited, first, last) = match (old_text, start) {
        (Some(_), Some(_)) => return Err("give either old_text or start_line/end_line, not both".into()),
        (None, None) => return Err("give old_text (text to replace) or start_line/end_line (lines to replace)".into()),
        (Some(""), None) => return Err("old_text is empty".into()),
        (Some(old), None) => {
            let count = text.matches(old).count();
            if count == 0 {
                return Err(format!("no match for old_text in {shown:?}"));
            }
            if count > 1 {
                return Err(format!(
                    "old_text matches {count} times in {shown:?}; include more surrounding text so that it matches once"
                ));
            }
            let at = text.find(old).unwrap_or_default();
            let first = text[..at].matches('\n').count() + 1;
            let last = first + old.trim_end_matches('\n').matches('\n').count();
            (text.replacen(old, new_text, 1), first, last)
        }
        (None, Some(start)) => {
            let end = end.unwrap_or(start);
            if end < start {
                return Err(format!("end_line {end} is before start_line {start}"));
            }
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let total = lines.len();
            if end as usize > total {
                return Err(format!("the lines {start}..{end} are past the end of {shown:?}, which has {total} lines"));
            }
            let (first, last) = (start as usize, end as usize);
            let mut middle = new_text.to_owned();
            let replaced_end = lines[last - 1];
            if !middle.is_empty() && !middle.ends_with('\n') && replaced_end.ends_with('\n') {
                middle.push_str(if replaced_end.ends_with("\r\n") { "\r\n" } else { "\n" });
            }
            (format!("{}{middle}{}", lines[..first - 1].concat(), lines[last..].concat()), first, last)
        }
    };
    write_whole(files, &inside, given, edited.as_bytes())?;
    Ok(json!({ "path": shown, "startLine": first, "endLine": last, "bytes": edited.len() }))
}

fn append_file_tool() -> Tool {
    Tool::new(
        "append_file",
        "Appends text to the end of a file of the project, creating it (and its missing parent \
         folders) when absent. No newline is added.",
        schema(
            json!({ "path": path_prop("File"), "content": { "type": "string", "description": "Text to append." } }),
            &["path", "content"],
        ),
    )
    .with_title("Append to file")
    .with_output_schema(output(
        json!({
            "path": { "type": "string" },
            "appended": { "type": "integer" },
            "size": { "type": "integer" },
            "created": { "type": "boolean" }
        }),
        &["path", "appended", "size", "created"],
    ))
    .with_annotations(writes(false, false))
}

fn append_file(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let content = args.string("content")?;
    let Target { given, inside, shown, created } = file_target(files, args)?;
    let io_error = failure(given, "append to", &shown);
    let mut file = files
        .root
        .dir()
        .open_with(inside.path(), nonblocking(OpenOptions::new().append(true).create(true)))
        .map_err(&io_error)?;
    // Checked on the handle that is written: a FIFO or device swapped in is refused.
    if !file.metadata().map_err(&io_error)?.is_file() {
        return Err(format!("{shown:?} is not a regular file"));
    }
    file.write_all(content.as_bytes()).map_err(&io_error)?;
    let size = file.metadata().map_err(&io_error)?.len();
    Ok(json!({ "path": shown, "appended": content.len(), "size": size, "created": created }))
}

fn create_folder_tool() -> Tool {
    Tool::new(
        "create_folder",
        "Creates a folder of the project, with its missing parents. Succeeds (created: false) when it \
         already exists.",
        schema(json!({ "path": path_prop("Folder") }), &["path"]),
    )
    .with_title("Create folder")
    .with_output_schema(output(
        json!({ "path": { "type": "string" }, "created": { "type": "boolean" } }),
        &["path", "created"],
    ))
    .with_annotations(writes(false, true))
}

fn create_folder(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.string("path")?;
    let inside = files.root.writable(given).map_err(refused)?;
    let shown = inside.shown();
    let io_error = failure(given, "create", &shown);
    match files.root.dir().metadata(inside.path()) {
        Ok(meta) if meta.is_dir() => return Ok(json!({ "path": shown, "created": false })),
        Ok(_) => return Err(format!("{shown:?} exists and is not a folder")),
        Err(e) if is_escape(&e) => return Err(io_error(e)),
        Err(_) => {}
    }
    files.root.dir().create_dir_all(inside.path()).map_err(&io_error)?;
    Ok(json!({ "path": shown, "created": true }))
}

fn delete_path_tool() -> Tool {
    Tool::new(
        "delete_path",
        "Deletes a file, a symlink (the link itself, never its target) or a folder of the project. A \
         folder that is not empty needs recursive: true, which deletes everything in it. The project \
         root itself cannot be deleted.",
        schema(
            json!({
                "path": path_prop("Path"),
                "recursive": {
                    "type": "boolean",
                    "description": "Delete a non-empty folder with its contents (default false)."
                }
            }),
            &["path"],
        ),
    )
    .with_title("Delete path")
    .with_output_schema(output(
        json!({ "path": { "type": "string" }, "type": { "type": "string" }, "deleted": { "type": "boolean" } }),
        &["path", "type", "deleted"],
    ))
    .with_annotations(writes(true, true))
}

fn delete_path(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let given = args.string("path")?;
    let recursive = args.opt_bool("recursive")?.unwrap_or(false);
    let inside = files.root.entry(given).map_err(refused)?;
    if inside.is_root() {
        return Err(format!("{given:?} is the project root, which cannot be deleted"));
    }
    let shown = inside.shown();
    let io_error = failure(given, "delete", &shown);
    let dir = files.root.dir();
    // The entry itself (a symlink is removed, never followed), through the capability.
    let file_type = dir.symlink_metadata(inside.path()).map_err(&io_error)?.file_type();
    if file_type.is_dir() {
        if recursive {
            dir.remove_dir_all(inside.path()).map_err(&io_error)?;
        } else if dir.read_dir(inside.path()).map_err(&io_error)?.next().is_some() {
            return Err(format!(
                "{shown:?} is a folder that is not empty; pass recursive: true to delete it with its contents"
            ));
        } else {
            dir.remove_dir(inside.path()).map_err(&io_error)?;
        }
    } else {
        dir.remove_file(inside.path()).map_err(&io_error)?;
    }
    Ok(json!({ "path": shown, "type": kind(file_type), "deleted": true }))
}

fn rename_move_tool() -> Tool {
    Tool::new(
        "rename_move",
        "Renames or moves a file, folder or symlink (the link itself) within the project: `to` is the \
         new path (missing parent folders are created), not a folder to move into. Refuses to replace \
         an existing `to` unless overwrite is true. Both paths must stay inside the project.",
        schema(
            json!({
                "from": path_prop("Current path"),
                "to": path_prop("New path"),
                "overwrite": { "type": "boolean", "description": "Replace an existing `to` (default false)." }
            }),
            &["from", "to"],
        ),
    )
    .with_title("Rename or move")
    .with_output_schema(output(
        json!({ "from": { "type": "string" }, "to": { "type": "string" }, "overwritten": { "type": "boolean" } }),
        &["from", "to", "overwritten"],
    ))
    .with_annotations(writes(true, false))
}

fn rename_move(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let from = args.string("from")?;
    let to = args.string("to")?;
    let overwrite = args.opt_bool("overwrite")?.unwrap_or(false);
    let source = files.root.entry(from).map_err(refused)?;
    if source.is_root() {
        return Err(format!("{from:?} is the project root, which cannot be moved"));
    }
    let (target, exists) = match files.root.entry(to) {
        Ok(existing) => (existing, true),
        Err(PathError::NotFound { .. }) => (files.root.writable(to).map_err(refused)?, false),
        Err(e) => return Err(refused(e)),
    };
    if target.is_root() {
        return Err(format!("{to:?} is the project root, which cannot be replaced"));
    }
    let (from_shown, to_shown) = (source.shown(), target.shown());
    if exists && !overwrite {
        return Err(format!("{to_shown:?} already exists; pass overwrite: true to replace it"));
    }
    create_parents(files, &target, to)?;
    let dir = files.root.dir();
    dir.rename(source.path(), dir, target.path()).map_err(|e| {
        if is_escape(&e) {
            // Which of the two led out is not said by the error; name both.
            format!("{from:?} or {to:?} is outside the project directory")
        } else {
            format!("cannot move {from_shown:?} to {to_shown:?}: {e}")
        }
    })?;
    Ok(json!({ "from": from_shown, "to": to_shown, "overwritten": exists }))
}
