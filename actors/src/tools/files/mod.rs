//! File tools confined to the project directory: `list_directory`, `read_file`,
//! `search_files`, `grep` and `get_file_info` always; `write_file`, `edit_file`,
//! `append_file`, `create_folder`, `delete_path`, `rename_move` and `apply_patch` when writing is
//! enabled.
//!
//! Every path goes through [`ProjectRoot`] (`paths.rs`), which judges it and turns it into a path
//! relative to the root; an escape (`..`, an absolute path outside, a symlink leading out) is a
//! tool failure (`isError: true`) naming the path, never a protocol error. Every file system
//! operation then goes through the root's directory handle, the capability
//! ([`ProjectRoot::dir`]): files are opened, created, renamed and deleted relative to it with
//! kernel-enforced beneath-resolution, and walks (`search_files`, `grep`) open each directory
//! relative to its parent's handle without following symlinks (`walk.rs`). A symlink swapped in
//! after the judgement is refused at the moment of use and reported like any path outside.
//!
//! Files are opened non-blocking and checked to be regular files on the open handle, so a FIFO
//! or device never blocks a tool. Every handler does its file system work on the blocking pool
//! (`actix_web::rt::task::spawn_blocking`), never on an arbiter thread.

mod patch;
mod read;
mod search;
pub(crate) mod walk;
mod write;

use std::io::Read;
use std::sync::Arc;

use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::OpenOptions;

use mcpd::model::{CallToolResult, Tool, ToolAnnotations};
use mcpd::{Catalog, ToolError};
use serde_json::{json, Map, Value};

use super::paths::{is_escape, Inside, PathError, ProjectRoot};

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
    /// How many directories deep `search_files` and `grep` go below the project root (each
    /// level holds one directory handle while it is walked).
    pub max_walk_depth: usize,
}

impl Default for FileToolOptions {
    fn default() -> Self {
        FileToolOptions {
            write: false,
            max_read_bytes: 1024 * 1024,
            max_results: 200,
            max_grep_file_bytes: 4 * 1024 * 1024,
            max_walk_depth: 64,
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

/// The names of the file tools `options` offers.
pub fn tool_names(options: &FileToolOptions) -> Vec<String> {
    let mut tools = read::tools(options);
    if options.write {
        tools.extend(write::tools(options).into_iter().chain(patch::tools(options)));
    }
    tools.into_iter().map(|(tool, _)| tool.name).collect()
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

/// How a failed file operation reads: a path the capability refused to resolve (a symlink or
/// rename swapped in after the judgement) is reported like any path outside the project;
/// anything else as `cannot {action} {shown:?}: {error}`.
fn failure<'a>(given: &'a str, action: &'a str, shown: &'a str) -> impl Fn(std::io::Error) -> String + 'a {
    move |e| {
        if is_escape(&e) {
            refused(PathError::Outside { path: given.to_owned() })
        } else {
            format!("cannot {action} {shown:?}: {e}")
        }
    }
}

/// True when the first 8 KiB hold a NUL byte.
fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8192).any(|b| *b == 0)
}

/// The kind of a directory entry as the tools name it.
fn kind(file_type: cap_std::fs::FileType) -> &'static str {
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

/// Options that never block on a FIFO or a device (regular files ignore `O_NONBLOCK`).
fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options.nonblock(true)
}

/// Opens an existing regular file to read, through the capability. It is checked to be a
/// regular file before it is opened (a FIFO or device is never opened) and again on the open
/// handle, which is what is read (a swap in between cannot substitute anything). Returns the
/// file and its size; `is_dir` is the message for a directory.
fn open_regular(files: &Files, inside: &Inside, given: &str, is_dir: &str) -> Result<(std::fs::File, u64), String> {
    let shown = inside.shown();
    let io_error = failure(given, "read", &shown);
    let check = |meta: &cap_std::fs::Metadata| {
        if meta.is_dir() {
            Err(format!("{shown:?} {is_dir}"))
        } else if !meta.is_file() {
            Err(format!("{shown:?} is not a regular file"))
        } else {
            Ok(meta.len())
        }
    };
    check(&files.root.dir().metadata(inside.path()).map_err(&io_error)?)?;
    let file =
        files.root.dir().open_with(inside.path(), nonblocking(OpenOptions::new().read(true))).map_err(&io_error)?;
    let meta = file.metadata().map_err(&io_error)?;
    let size = check(&meta)?;
    files.root.refuse_opened(given, &meta).map_err(refused)?;
    Ok((file.into_std(), size))
}

/// Reads a whole text file for editing, refusing big and binary ones.
fn read_text(files: &Files, inside: &Inside, given: &str) -> Result<String, String> {
    let shown = inside.shown();
    let (file, size) = open_regular(files, inside, given, "is a directory")?;
    let max = files.options.max_read_bytes;
    let too_big =
        |size: u64| format!("{shown:?} is {size} bytes, over the limit of {max} bytes for whole-file changes");
    if size > max {
        return Err(too_big(size));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(failure(given, "read", &shown))?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    if looks_binary(&bytes) {
        return Err(format!("{shown:?} is a binary file"));
    }
    String::from_utf8(bytes).map_err(|_| format!("{shown:?} is a binary file (not UTF-8)"))
}

/// Replaces (or creates) a regular file's whole content through the capability. Opened
/// non-blocking and checked on the handle: a FIFO or device swapped in is refused, not written.
fn write_whole(files: &Files, inside: &Inside, given: &str, content: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let shown = inside.shown();
    let io_error = failure(given, "write", &shown);
    let mut file = files
        .root
        .dir()
        .open_with(inside.path(), nonblocking(OpenOptions::new().write(true).create(true).truncate(true)))
        .map_err(&io_error)?;
    if !file.metadata().map_err(&io_error)?.is_file() {
        return Err(format!("{shown:?} is not a regular file"));
    }
    file.write_all(content).map_err(&io_error)
}

/// Creates the missing parent folders of `inside`, through the capability.
fn create_parents(files: &Files, inside: &Inside, given: &str) -> Result<(), String> {
    match inside.parent() {
        Some(parent) if !parent.is_root() => {
            let shown = inside.shown();
            files.root.dir().create_dir_all(parent.path()).map_err(|e| {
                if is_escape(&e) {
                    refused(PathError::Outside { path: given.to_owned() })
                } else {
                    format!("cannot create the folders of {shown:?}: {e}")
                }
            })
        }
        _ => Ok(()),
    }
}
