//! The walk of `search_files` and `grep`, through the capability: every directory is opened
//! relative to its parent's handle with `O_NOFOLLOW` (so a directory swapped for a symlink is not
//! entered: the open fails), and what a visitor opens, it opens relative to the handle of the
//! directory that listed it. Nothing is resolved again from a path, so no swap or rename can lead
//! the walk outside the project.
//!
//! Like the walks of ripgrep (the `ignore` crate, whose matchers it uses), it honours `.ignore`,
//! `.gitignore` and `.git/info/exclude` files from the project root down (unless told not to):
//! for each entry the deepest directory with a matching rule decides, `.ignore` over `.gitignore`
//! over `exclude`, and a directory holding `.git` (a nested repository) stops the `.gitignore`
//! rules of the directories above it. `.git`, `.hg` and `.svn` are always skipped, and so is what
//! the project's deny set covers (mcpd's own files, the sensitive-file patterns); symlinks are
//! reported, never followed. Entries are visited depth first, sorted by name. The walk begins at
//! the root so that the ignore files of the directories above the start apply; of the rest, only
//! the way down to the start and what is under it are entered.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;

use cap_fs_ext::{DirExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, FileType, OpenOptions};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::tools::deny::Snapshot;
use crate::tools::paths::{Inside, ProjectRoot};

/// One entry the walk found.
#[derive(Debug)]
pub(crate) struct Found<'a> {
    /// Its path, relative to the project root.
    pub(crate) inside: &'a Inside,
    /// Its name.
    pub(crate) name: &'a OsStr,
    /// Its type (a symlink is a symlink, never what it points to).
    pub(crate) file_type: FileType,
    /// The handle of the directory holding it: open the entry relative to this, by name.
    pub(crate) parent: &'a Dir,
}

/// What to walk and how.
#[derive(Debug)]
pub(crate) struct Walk<'a> {
    /// The project.
    pub(crate) root: &'a ProjectRoot,
    /// Where to look (a directory, or one file): only it and what is under it are visited.
    pub(crate) start: &'a Inside,
    /// Honour ignore files.
    pub(crate) filters: bool,
    /// How many directories deep to go below the root.
    pub(crate) max_depth: usize,
    /// Ignore files bigger than this are not read.
    pub(crate) max_ignore_file_bytes: u64,
    /// Skip hidden entries (a name starting with `.`) and what is under them.
    pub(crate) skip_hidden: bool,
}

/// The ignore rules of one directory of the way down.
#[derive(Debug)]
struct Rules {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    has_git: bool,
}

/// Some(true): ignored; Some(false): explicitly kept (`!pattern`); None: no rule says.
fn verdict(matcher: Option<&Gitignore>, path: &Path, is_dir: bool) -> Option<bool> {
    let matched = matcher?.matched(path, is_dir);
    if matched.is_none() {
        None
    } else {
        Some(matched.is_ignore())
    }
}

fn ignored(stack: &[Rules], path: &Path, is_dir: bool) -> bool {
    let (mut ignore, mut git, mut exclude) = (None, None, None);
    let mut saw_git = false;
    for rules in stack.iter().rev() {
        ignore = ignore.or_else(|| verdict(rules.ignore.as_ref(), path, is_dir));
        if !saw_git {
            git = git.or_else(|| verdict(rules.git.as_ref(), path, is_dir));
            exclude = exclude.or_else(|| verdict(rules.exclude.as_ref(), path, is_dir));
        }
        saw_git = saw_git || rules.has_git;
    }
    ignore.or(git).or(exclude).unwrap_or(false)
}

/// What a walk carries down its directories: the ignore rules of the directories it is in, the
/// deny set it judges entries by, and the visitor.
struct Descent<'d, 'v> {
    stack: Vec<Rules>,
    deny: Snapshot<'d>,
    visit: &'v mut dyn FnMut(&Found<'_>) -> ControlFlow<()>,
}

impl Walk<'_> {
    /// Visits every entry under the start (the start itself too when it is a file or below the
    /// root), until the visitor breaks. Directories that cannot be opened (permissions, a swap)
    /// are skipped.
    pub(crate) fn run(&self, visit: &mut dyn FnMut(&Found<'_>) -> ControlFlow<()>) {
        let mut down = Descent { stack: Vec::new(), deny: self.root.deny().snapshot(), visit };
        let _ = self.directory(self.root.dir(), &Inside::root(), 0, &mut down);
    }

    fn directory(&self, dir: &Dir, at: &Inside, depth: usize, down: &mut Descent<'_, '_>) -> ControlFlow<()> {
        if self.filters {
            down.stack.push(self.rules(dir, at));
        }
        let outcome = self.entries(dir, at, depth, down);
        if self.filters {
            down.stack.pop();
        }
        outcome
    }

    fn entries(&self, dir: &Dir, at: &Inside, depth: usize, down: &mut Descent<'_, '_>) -> ControlFlow<()> {
        let Ok(listing) = dir.entries() else { return ControlFlow::Continue(()) };
        let mut entries: Vec<(OsString, FileType)> = listing
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let mut file_type = entry.file_type().ok()?;
                if !file_type.is_dir() && !file_type.is_file() && !file_type.is_symlink() {
                    // Some file systems do not say in the listing: ask (never following).
                    file_type = entry.metadata().ok()?.file_type();
                }
                Some((entry.file_name(), file_type))
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, file_type) in entries {
            if matches!(name.to_str(), Some(".git" | ".hg" | ".svn")) {
                continue;
            }
            if self.skip_hidden && name.as_encoded_bytes().first() == Some(&b'.') {
                continue;
            }
            if ProjectRoot::hides_entry(&down.deny, dir, at, &name, file_type) {
                continue;
            }
            let Some(inside) = at.join(&name) else { continue };
            let under_start = inside.starts_with(self.start);
            if !under_start && !self.start.starts_with(&inside) {
                continue;
            }
            if self.filters && ignored(&down.stack, &self.root.absolute(&inside), file_type.is_dir()) {
                continue;
            }
            if under_start {
                (down.visit)(&Found { inside: &inside, name: &name, file_type, parent: dir })?;
            }
            if file_type.is_dir() && depth < self.max_depth {
                // Not following: a directory swapped for a symlink is not entered.
                if let Ok(sub) = dir.open_dir_nofollow(&name) {
                    self.directory(&sub, &inside, depth + 1, down)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn rules(&self, dir: &Dir, at: &Inside) -> Rules {
        let has_git = dir.symlink_metadata(".git").is_ok();
        Rules {
            ignore: self.matcher(dir, at, ".ignore"),
            git: self.matcher(dir, at, ".gitignore"),
            exclude: if has_git { self.matcher(dir, at, ".git/info/exclude") } else { None },
            has_git,
        }
    }

    /// The rules of one ignore file of `dir`, read through its handle (beneath it).
    fn matcher(&self, dir: &Dir, at: &Inside, name: &str) -> Option<Gitignore> {
        let file = dir.open_with(name, OpenOptions::new().read(true).nonblock(true)).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > self.max_ignore_file_bytes {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(self.max_ignore_file_bytes).read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let mut builder = GitignoreBuilder::new(self.root.absolute(at));
        for (i, line) in text.lines().enumerate() {
            let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line };
            // A bad pattern is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        builder.build().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(lines: &[&str]) -> Option<Gitignore> {
        let mut builder = GitignoreBuilder::new("/p");
        for line in lines {
            builder.add_line(None, line).unwrap();
        }
        Some(builder.build().unwrap())
    }

    /// The deepest directory with a matching rule decides; `.ignore` beats `.gitignore`; a
    /// nested repository stops the `.gitignore` of the directories above it.
    #[test]
    fn ignore_rules_take_precedence_like_ripgrep() {
        let root = Rules { ignore: None, git: matcher(&["*.log", "target/"]), exclude: None, has_git: false };
        let sub = Rules { ignore: None, git: matcher(&["!keep.log"]), exclude: None, has_git: false };
        let stack = [root, sub];
        assert!(ignored(&stack, Path::new("/p/a.log"), false));
        assert!(!ignored(&stack, Path::new("/p/keep.log"), false), "the deeper whitelist wins");
        assert!(ignored(&stack, Path::new("/p/target"), true));
        assert!(!ignored(&stack, Path::new("/p/target"), false), "`target/` is for directories");
        let over = Rules { ignore: matcher(&["!*.log"]), git: None, exclude: None, has_git: false };
        let root = Rules { ignore: None, git: matcher(&["*.log"]), exclude: None, has_git: false };
        assert!(!ignored(&[root, over], Path::new("/p/a.log"), false), ".ignore beats .gitignore");
        let root = Rules { ignore: None, git: matcher(&["*.log"]), exclude: None, has_git: false };
        let nested = Rules { ignore: None, git: None, exclude: None, has_git: true };
        assert!(!ignored(&[root, nested], Path::new("/p/a.log"), false), "a nested repository");
    }
}
