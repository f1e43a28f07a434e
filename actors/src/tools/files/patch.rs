//! `apply_patch`: a unified diff over one or more files, applied all-or-nothing.
//!
//! The patch is split into per-file sections (`---`/`+++` headers and their `@@` hunks; git's
//! extended header lines such as `diff --git` and `index` are skipped), each section is parsed
//! and applied in memory with `diffy`, and only when every file applied are the results written.
//! Should a write still fail, the files already written are restored. Every file is read,
//! written and deleted through the capability, like the other file tools.

use std::collections::BTreeMap;

use mcpd::model::Tool;
use serde_json::{json, Value};

use super::{create_parents, failure, read_text, refused, write_whole, writes, Args, FileToolOptions, Files, Run};
use crate::tools::paths::Inside;

pub(super) fn tools(options: &FileToolOptions) -> Vec<(Tool, Run)> {
    vec![(apply_patch_tool(options.max_read_bytes), apply_patch as Run)]
}

fn apply_patch_tool(max_bytes: u64) -> Tool {
    Tool::new(
        "apply_patch",
        format!(
            "Applies a unified diff (as `diff -u` or `git diff` print it) to files of the project; it \
             may change several files, create them (`--- /dev/null`) or delete them (`+++ /dev/null`). \
             Paths come from the `---`/`+++` headers, with git's `a/` and `b/` prefixes removed, and \
             must stay inside the project. All or nothing: every file is patched in memory first, and \
             nothing is written unless every hunk applies. Text files up to {max_bytes} bytes only."
        ),
        json!({
            "type": "object",
            "properties": { "patch": { "type": "string", "description": "The unified diff." } },
            "required": ["patch"],
            "additionalProperties": false
        }),
    )
    .with_title("Apply patch")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "files": { "type": "array", "items": {
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "action": { "type": "string", "enum": ["created", "modified", "deleted"] }
                },
                "required": ["path", "action"]
            } },
            "hunks": { "type": "integer" }
        },
        "required": ["files", "hunks"]
    }))
    .with_annotations(writes(true, false))
}

/// One file's pending change.
struct Pending {
    /// The path as the patch names it (for errors).
    given: String,
    shown: String,
    /// Its bytes before the patch (None: it did not exist).
    original: Option<Vec<u8>>,
    /// Its text after the patch (None: deleted).
    after: Option<String>,
}

fn apply_patch(files: &Files, args: &Args<'_>) -> Result<Value, String> {
    let patch = args.string("patch")?;
    let mut pending: BTreeMap<Inside, Pending> = BTreeMap::new();
    let mut hunks = 0;
    for (number, section) in split(patch)?.iter().enumerate() {
        let number = number + 1;
        let parsed = diffy::Patch::from_str(section).map_err(|e| format!("file {number} of the patch: {e}"))?;
        hunks += parsed.hunks().len();
        let old = parsed.original().map(|p| header_path(p, "a/"));
        let new = parsed.modified().map(|p| header_path(p, "b/"));
        let (old, new) = match (old, new) {
            (Some(old), Some(new)) => (old, new),
            _ => return Err(format!("file {number} of the patch has no ---/+++ header")),
        };
        // The text the hunks apply to.
        let (base, source) = match &old {
            None => (String::new(), None),
            Some(old) => {
                let path = files.root.existing(old).map_err(refused)?;
                (current(files, &mut pending, &path, old)?, Some(path))
            }
        };
        let result = diffy::apply(&base, &parsed).map_err(|e| {
            let shown = old.as_deref().or(new.as_deref()).unwrap_or_default();
            format!("{e} of {shown:?}: its lines differ from the patch's context, nothing was changed")
        })?;
        match (source, new) {
            (Some(source), None) => {
                if !result.is_empty() {
                    return Err(format!("the patch deletes {:?} but leaves lines in it", old.unwrap_or_default()));
                }
                set(&mut pending, source, None);
            }
            (Some(source), Some(new)) if old.as_deref() == Some(new.as_str()) => {
                set(&mut pending, source, Some(result))
            }
            (source, Some(new)) => {
                let target = files.root.writable(&new).map_err(refused)?;
                let on_disk = files.root.dir().metadata(target.path());
                if on_disk.as_ref().is_ok_and(|meta| meta.is_dir()) {
                    return Err(format!("{new:?} is a directory"));
                }
                let exists = pending.get(&target).map_or(on_disk.is_ok(), |p| p.after.is_some());
                if exists && source.as_ref() != Some(&target) {
                    return Err(format!("the patch creates {new:?}, which already exists"));
                }
                entry_for(files, &mut pending, &target, &new)?;
                if let Some(source) = source.filter(|s| *s != target) {
                    set(&mut pending, source, None);
                }
                set(&mut pending, target, Some(result));
            }
            (None, None) => return Err(format!("file {number} of the patch goes from /dev/null to /dev/null")),
        }
    }
    commit(files, &pending)?;
    let changed: Vec<Value> = pending
        .values()
        .filter_map(|p| {
            let action = match (&p.original, &p.after) {
                (None, Some(_)) => "created",
                (Some(_), Some(_)) => "modified",
                (Some(_), None) => "deleted",
                (None, None) => return None,
            };
            Some(json!({ "path": p.shown, "action": action }))
        })
        .collect();
    Ok(json!({ "files": changed, "hunks": hunks }))
}

/// A header path with git's prefix removed; None for `/dev/null`.
fn header_path(raw: &str, prefix: &str) -> Option<String> {
    if raw == "/dev/null" {
        return None;
    }
    Some(raw.strip_prefix(prefix).unwrap_or(raw).to_owned())
}

/// Makes sure `path` has a pending entry that remembers its original state.
fn entry_for<'a>(
    files: &Files,
    pending: &'a mut BTreeMap<Inside, Pending>,
    path: &Inside,
    given: &str,
) -> Result<&'a mut Pending, String> {
    if !pending.contains_key(path) {
        let shown = path.shown();
        let (original, after) = if files.root.dir().metadata(path.path()).is_ok() {
            let text = read_text(files, path, given)?;
            (Some(text.clone().into_bytes()), Some(text))
        } else {
            (None, None)
        };
        pending.insert(path.clone(), Pending { given: given.to_owned(), shown, original, after });
    }
    pending.get_mut(path).ok_or_else(|| "internal error: pending entry".to_owned())
}

/// The text of an existing file as the patch so far left it.
fn current(
    files: &Files,
    pending: &mut BTreeMap<Inside, Pending>,
    path: &Inside,
    given: &str,
) -> Result<String, String> {
    let entry = entry_for(files, pending, path, given)?;
    entry.after.clone().ok_or_else(|| format!("{:?} was deleted earlier in the patch", entry.shown))
}

fn set(pending: &mut BTreeMap<Inside, Pending>, path: Inside, after: Option<String>) {
    if let Some(entry) = pending.get_mut(&path) {
        entry.after = after;
    }
}

/// Writes every pending change; on a failure, restores what was already written.
fn commit(files: &Files, pending: &BTreeMap<Inside, Pending>) -> Result<(), String> {
    let dir = files.root.dir();
    let mut done: Vec<(&Inside, &Pending)> = Vec::new();
    for (path, p) in pending {
        let outcome = match &p.after {
            Some(text) => {
                create_parents(files, path, &p.given).and_then(|()| write_whole(files, path, &p.given, text.as_bytes()))
            }
            None if p.original.is_some() => dir.remove_file(path.path()).map_err(failure(&p.given, "delete", &p.shown)),
            None => Ok(()),
        };
        if let Err(e) = outcome {
            for (path, p) in done.into_iter().rev() {
                let _ = match &p.original {
                    Some(bytes) => write_whole(files, path, &p.given, bytes),
                    None => dir.remove_file(path.path()).map_err(|e| e.to_string()),
                };
            }
            return Err(format!("{e}; the files already changed were restored"));
        }
        done.push((path, p));
    }
    Ok(())
}

/// Splits a (possibly multi-file) unified diff into one section per file, each starting with its
/// `---`/`+++` header. Hunk bodies are delimited by the line counts of their `@@` headers, so a
/// removed line that reads `--- x` is not mistaken for a header.
fn split(patch: &str) -> Result<Vec<String>, String> {
    let mut text = patch.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut sections: Vec<String> = Vec::new();
    let (mut old_left, mut new_left) = (0usize, 0usize);
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let number = i + 1;
        i += 1;
        if old_left > 0 || new_left > 0 {
            match line.as_bytes().first() {
                Some(b' ' | b'\n' | b'\r') => {
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
                Some(b'-') => old_left = old_left.saturating_sub(1),
                Some(b'+') => new_left = new_left.saturating_sub(1),
                Some(b'\\') => {}
                _ => {
                    return Err(format!(
                    "line {number} of the patch: the hunk ends early ({old_left} old and {new_left} new lines missing)"
                ))
                }
            }
            if let Some(current) = sections.last_mut() {
                current.push_str(line);
            }
            continue;
        }
        if line.starts_with("--- ") && lines.get(i).is_some_and(|next| next.starts_with("+++ ")) {
            sections.push(format!("{line}{}", lines[i]));
            i += 1;
        } else if line.starts_with("@@ ") {
            let current = sections
                .last_mut()
                .ok_or_else(|| format!("line {number} of the patch: a hunk before any ---/+++ file header"))?;
            (old_left, new_left) = hunk_counts(line)
                .ok_or_else(|| format!("line {number} of the patch: bad hunk header {:?}", line.trim_end()))?;
            current.push_str(line);
        } else if line.starts_with('\\') {
            if let Some(current) = sections.last_mut() {
                current.push_str(line);
            }
        }
        // Anything else between files (`diff --git`, `index`, mode lines, comments) is skipped.
    }
    if old_left > 0 || new_left > 0 {
        return Err("the patch ends in the middle of a hunk".into());
    }
    if sections.is_empty() {
        return Err("no file changes found (expected `---`/`+++` headers followed by `@@` hunks)".into());
    }
    Ok(sections)
}

/// The old and new line counts of `@@ -a,b +c,d @@`.
fn hunk_counts(header: &str) -> Option<(usize, usize)> {
    let ranges = header.strip_prefix("@@ -")?.split(" @@").next()?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((start, len)) => {
                start.parse::<usize>().ok()?;
                len.parse().ok()
            }
            None => range.parse::<usize>().ok().map(|_| 1),
        }
    };
    Some((count(old)?, count(new)?))
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_split_by_hunk_counts() {
        let patch = concat!(
            "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n",
            "@@ -1,2 +1,1 @@\n--- not a header\n+++ not either\n-gone\n",
            "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b"
        );
        let sections = split(patch).unwrap();
        assert_eq!(sections.len(), 2);
        assert!(sections[0].contains("--- not a header"));
        assert!(sections[1].ends_with("+b\n"));
        assert_eq!(hunk_counts("@@ -0,0 +1,3 @@ fn x"), Some((0, 3)));
        assert!(split("just words\n").is_err());
        assert!(split("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n").is_err());
    }
}
