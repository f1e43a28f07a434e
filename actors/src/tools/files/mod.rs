//! File tools confined to the project directory: `list_directory`, `read_file`,
//! `search_files`, `grep` and `get_file_info` always; `write_file`, `edit_file`,
//! `append_file`, `create_folder`, `delete_path`, `rename_move` and `apply_patch` when writing is
//! enabled.
//!
//! Every path goes through [`ProjectRoot`]: an escape (`..`, an absolute path outside, a symlink
//! leading out) is a tool failure (`isError: true`) naming the path, never a protocol error.
//! Every handler does its file system work on the blocking pool
//! (`actix_web::rt::task::spawn_blocking`), never on an arbiter thread.

mod patch;
mod read;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcpd::model::{CallToolResult, Tool, ToolAnnotations};
use mcpd::{Catalog, ToolError};
use serde_json::{json, Map, Value};

use super::paths::{PathError, ProjectRoot};

/// Limits and switches of the file tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileToolOptions {
    /// Whether the write tools are registered at all.
    pub write: bool,
    /// The largest file `read_file` returns whole (a line range reads bigger ones), and the
    /// largest file `edit_file` and `apply_patch` change.
    pub max_read_bytes: u64,
    /// The most entries or matches a listing, search or grep returns (then `truncated: true`).
    pub max_results: usize,
    /// `grep` skips files bigger than this.
    pub max_grep_file_bytes: u64,
}

impl Default for FileToolOptions {
    fn default() -> Self {
        FileToolOptions {
            write: false,
            max_read_bytes: 1024 * 1024,
            max_results: 200,
            max_grep_file_bytes: 4 * 1024 * 1024,
        }
    }
}

/// An input schema: an object of `properties`, `required` ones, nothing else.
fn schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// An output schema: an object of `properties`, `required` ones (more may come).
fn output(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// What every handler shares.
#[derive(Debug)]
struct Files {
    root: ProjectRoot,
    options: FileToolOptions,
}

/// A tool's work: the arguments in, the structured result or a message out.
type Run = fn(&Files, &Args<'_>) -> Result<Value, String>;

/// Adds the file tools to `catalog`, confined to `root`.
pub fn register(catalog: &mut Catalog, root: ProjectRoot, options: FileToolOptions) {
    let write = options.write;
    let files = Arc::new(Files { root, options });
    for (tool, run) in read::tools(&files.options) {
        add(catalog, &files, tool, run);
    }
    if write {
        for (tool, run) in write::tools(&files.options).into_iter().chain(patch::tools(&files.options)) {
            add(catalog, &files, tool, run);
        }
    }
}

fn add(catalog: &mut Catalog, files: &Arc<Files>, tool: Tool, run: Run) {
    let name: Arc<str> = tool.name.as_str().into();
    let files = files.clone();
    catalog.add_tool(tool, move |arguments: Map<String, Value>, _context| {
        let files = files.clone();
        let name = name.clone();
        async move {
            let outcome = actix_web::rt::task::spawn_blocking(move || run(&files, &Args { map: &arguments })).await;
            match outcome {
                Ok(Ok(value)) => Ok(CallToolResult::structured(value)),
                Ok(Err(message)) => Err(ToolError::failed(format!("{name}: {message}"))),
                Err(e) => Err(ToolError::failed(format!("{name}: the file task failed: {e}"))),
            }
        }
    });
}

/// The annotations of a tool that changes files.
fn writes(destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: Some(false),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    }
}

/// A tool's arguments, with readable errors.
struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl Args<'_> {
    fn string(&self, key: &str) -> Result<&str, String> {
        self.opt_string(key)?.ok_or_else(|| format!("missing required argument {key}"))
    }

    fn opt_string(&self, key: &str) -> Result<Option<&str>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("{key} must be a string, got {other}")),
        }
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{key} must be true or false, got {other}")),
        }
    }

    /// A 1-based line number.
    fn opt_line(&self, key: &str) -> Result<Option<u64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Ok(Some(n)),
                _ => Err(format!("{key} must be a line number (an integer from 1), got {v}")),
            },
        }
    }
}

/// A path error as the model reads it.
fn refused(e: PathError) -> String {
    e.to_string()
}

/// The path as given, not following a final symlink: the parent is resolved (and confined),
/// the last component is kept as it is. For tools that act on a directory entry itself
/// (`get_file_info`, `delete_path`, `rename_move`): removing or moving a symlink never touches
/// what it points to. Anything without a plain last component (`.`, `..`, the root) resolves as
/// [`ProjectRoot::existing`].
fn entry(root: &ProjectRoot, given: &str) -> Result<PathBuf, PathError> {
    if given.contains('\0') {
        return Err(PathError::Invalid { path: given.to_owned(), reason: "it contains a NUL byte".into() });
    }
    if root.existing(given).is_ok_and(|resolved| resolved == root.path()) {
        return Ok(root.path().to_path_buf());
    }
    let path = Path::new(given);
    let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
        return root.existing(given);
    };
    let ends_plainly = matches!(path.components().next_back(), Some(std::path::Component::Normal(_)));
    if !ends_plainly {
        return root.existing(given);
    }
    // Errors name the path as given, not its parent.
    let parent = root.existing(&parent.to_string_lossy()).map_err(|e| match e {
        PathError::Outside { .. } => PathError::Outside { path: given.to_owned() },
        PathError::NotFound { .. } => PathError::NotFound { path: given.to_owned() },
        PathError::Invalid { reason, .. } => PathError::Invalid { path: given.to_owned(), reason },
    })?;
    let joined = parent.join(name);
    if joined.symlink_metadata().is_err() {
        return Err(PathError::NotFound { path: given.to_owned() });
    }
    Ok(joined)
}

/// True when the first 8 KiB hold a NUL byte.
fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8192).any(|b| *b == 0)
}

/// The kind of a directory entry as the tools name it.
fn kind(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// Reads a whole text file for editing, refusing big and binary ones.
fn read_text(files: &Files, path: &Path, shown: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown:?}: {e}"))?;
    if meta.is_dir() {
        return Err(format!("{shown:?} is a directory"));
    }
    if !meta.is_file() {
        return Err(format!("{shown:?} is not a regular file"));
    }
    if meta.len() > files.options.max_read_bytes {
        return Err(format!(
            "{shown:?} is {} bytes, over the limit of {} bytes for whole-file changes",
            meta.len(),
            files.options.max_read_bytes
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown:?}: {e}"))?;
    if looks_binary(&bytes) {
        return Err(format!("{shown:?} is a binary file"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{shown:?} is a binary file (not UTF-8)"))
}
