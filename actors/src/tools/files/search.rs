//! The walking read tools: `search_files` (names and paths by glob) and `grep` (contents by
//! regular expression), both over the capability walk of `walk.rs`, which honours ignore files
//! and never follows symlinks; `grep` opens each file relative to its directory's handle.

use std::io::Read;
use std::ops::ControlFlow;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::OpenOptions;
use globset::{GlobBuilder, GlobMatcher};
use mcpd::model::{Tool, ToolAnnotations};
use serde_json::{json, Value};

use super::walk::{Found, Walk};
use super::{kind, looks_binary, output, refused, schema, Args, Files};
use crate::tools::paths::Inside;

/// Longest line text `grep` returns (in characters); longer lines are cut with `…`.
const MAX_LINE_CHARS: usize = 500;

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

/// Where a walk starts, and the walk: from the project root, honouring ignore files unless
/// `include_ignored`.
fn start(files: &Files, args: &Args<'_>) -> Result<(Inside, bool), String> {
    let given = args.opt_string("path")?.unwrap_or(".");
    let start = files.root.existing(given).map_err(refused)?;
    Ok((start, !args.opt_bool("include_ignored")?.unwrap_or(false)))
}

fn walk<'a>(files: &'a Files, start: &'a Inside, filters: bool) -> Walk<'a> {
    Walk {
        root: &files.root,
        start,
        filters,
        max_depth: files.options.max_walk_depth,
        max_ignore_file_bytes: files.options.max_read_bytes,
        skip_hidden: false,
    }
}

/// The entry's path relative to the root, and relative to the start of the walk.
fn names(found: &Found<'_>, start: &Inside) -> (String, String) {
    let from_root = found.inside.shown();
    let from_start = if start.is_root() {
        from_root.clone()
    } else {
        found.inside.path().strip_prefix(start.path()).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
    };
    (from_root, from_start)
}

pub(super) fn search_files_tool(max: usize) -> Tool {
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

pub(super) fn search_files(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let pattern = args.string("pattern")?;
    let glob = NameGlob::new(pattern)?;
    let (start, filters) = start(files, args)?;
    if !files.root.dir().metadata(start.path()).is_ok_and(|meta| meta.is_dir()) {
        return Err(format!("{:?} is not a directory", start.shown()));
    }
    let mut matches = Vec::new();
    let mut truncated = false;
    walk(files, &start, filters).run(&mut |found| {
        if found.inside == &start {
            return ControlFlow::Continue(());
        }
        let (from_root, from_start) = names(found, &start);
        if !glob.matches(&found.name.to_string_lossy(), &from_root, &from_start) {
            return ControlFlow::Continue(());
        }
        if matches.len() == files.options.max_results {
            truncated = true;
            return ControlFlow::Break(());
        }
        matches.push(json!({ "path": from_root, "type": kind(found.file_type) }));
        ControlFlow::Continue(())
    });
    Ok(json!({ "pattern": pattern, "matches": matches, "truncated": truncated }))
}

pub(super) fn grep_tool(max: usize, max_file: u64) -> Tool {
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

/// The text of a file the walk found, opened by name relative to its directory's handle, never
/// following a symlink and never blocking (a FIFO swapped in is not read); None when it is not
/// a regular text file of at most `max` bytes.
fn text_of(found: &Found<'_>, max: u64) -> Option<String> {
    let options = OpenOptions::new().read(true).follow(FollowSymlinks::No).nonblock(true).clone();
    let file = found.parent.open_with(found.name, &options).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > max || looks_binary(&bytes) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

pub(super) fn grep(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let pattern = args.string("pattern")?;
    let regex = regex::RegexBuilder::new(pattern)
        .case_insensitive(args.opt_bool("case_insensitive")?.unwrap_or(false))
        .build()
        .map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))?;
    let glob = args.opt_string("glob")?.map(NameGlob::new).transpose()?;
    let (start, filters) = start(files, args)?;
    let mut matches = Vec::new();
    let (mut truncated, mut searched, mut skipped) = (false, 0u64, 0u64);
    walk(files, &start, filters).run(&mut |found| {
        if !found.file_type.is_file() {
            return ControlFlow::Continue(());
        }
        let (from_root, from_start) = names(found, &start);
        if let Some(glob) = &glob {
            if !glob.matches(&found.name.to_string_lossy(), &from_root, &from_start) {
                return ControlFlow::Continue(());
            }
        }
        let Some(text) = text_of(found, files.options.max_grep_file_bytes) else {
            skipped += 1;
            return ControlFlow::Continue(());
        };
        searched += 1;
        for (i, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches.len() == files.options.max_results {
                truncated = true;
                return ControlFlow::Break(());
            }
            matches.push(json!({ "path": from_root, "line": i + 1, "text": cut(line) }));
        }
        ControlFlow::Continue(())
    });
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
