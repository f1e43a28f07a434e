//! What of the project is never served, whatever the access rules: mcpd's own configuration and
//! secret files, and the sensitive files the deny patterns name.
//!
//! - **Own files** (the properties, access, servers, tools and settings files, key and secret
//!   files, private keys, the credentials file, TLS material) are recognised by **file identity**
//!   (device and inode), not by name: a symlink or hard link to one, or the file renamed, is the
//!   same file. Each group of them ([`OwnGroup`]) is replaced as its configuration is reloaded
//!   ([`DenySet::protect`]); a check sees the identities recorded then and those of the same
//!   paths now (a file replaced by an editor's rename is still covered), and every identity that
//!   was once one of them (a replaced access file kept under another name still holds keys).
//! - **Patterns** ([`DEFAULT_PATTERNS`], more from `--deny-files`) follow `.gitignore` syntax,
//!   matched against the path relative to the project root and every directory above it: `*.pem`
//!   at any depth, `.git/` a directory and all it holds, `!x` to allow again what a pattern before
//!   it denied.
//!
//! [`crate::tools::paths::ProjectRoot`] holds the set, so every file tool, file resource, prompt
//! that embeds a file and command working directory crosses it; walks and listings leave denied
//! entries out, and a path that names one is refused with the reason, never its content.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The sensitive files denied by default (`--no-default-deny-files` drops them): environment
/// files, private keys and certificates' keys, SSH and GnuPG directories, version-control
/// internals, and the credential files of common tools.
pub const DEFAULT_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".git/",
    ".hg/",
    ".svn/",
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".docker/",
    ".kube/",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
];

/// A group of mcpd's own files, replaced whole when its configuration is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OwnGroup {
    /// The properties file and the settings file.
    Properties,
    /// The access file and the key files it names.
    Access,
    /// The servers file and the secret and private-key files of its remotes.
    Servers,
    /// The declarations (tools) file.
    Tools,
    /// The OAuth credentials file, the introspection secret, TLS material.
    Secrets,
}

/// Why a path is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// It is one of mcpd's own configuration or secret files.
    Own,
    /// It matches this deny pattern.
    Pattern(String),
    /// No project file is reachable on this server (the file tools and file resources are off).
    Closed,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::Own => f.write_str("it is one of mcpd's own configuration or secret files, which are never served"),
            Denial::Pattern(pattern) => {
                write!(f, "it matches the sensitive-file pattern {pattern:?}, which is not served (see --deny-files)")
            }
            Denial::Closed => {
                f.write_str("no project file is reachable on this server (the file tools and file resources are off)")
            }
        }
    }
}

/// A file's identity: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileIdentity {
    dev: u64,
    ino: u64,
}

impl FileIdentity {
    /// The identity of a file whose metadata this is.
    #[cfg(unix)]
    pub(crate) fn of_std(meta: &std::fs::Metadata) -> FileIdentity {
        use std::os::unix::fs::MetadataExt as _;
        FileIdentity { dev: meta.dev(), ino: meta.ino() }
    }

    /// The identity of a file whose metadata the capability gave.
    #[cfg(unix)]
    pub(crate) fn of_cap(meta: &cap_std::fs::Metadata) -> FileIdentity {
        use cap_std::fs::MetadataExt as _;
        FileIdentity { dev: meta.dev(), ino: meta.ino() }
    }

    #[cfg(not(unix))]
    pub(crate) fn of_std(_meta: &std::fs::Metadata) -> FileIdentity {
        FileIdentity { dev: 0, ino: 0 }
    }

    #[cfg(not(unix))]
    pub(crate) fn of_cap(_meta: &cap_std::fs::Metadata) -> FileIdentity {
        FileIdentity { dev: 0, ino: 0 }
    }

    /// The identity of the file at `path` (following symlinks), if it exists.
    fn of_path(path: &Path) -> Option<FileIdentity> {
        std::fs::metadata(path).ok().filter(|_| cfg!(unix)).map(|meta| FileIdentity::of_std(&meta))
    }
}

/// One of mcpd's own files: where it was read, and what it was then.
#[derive(Debug, Clone)]
struct OwnFile {
    path: PathBuf,
    identity: Option<FileIdentity>,
}

/// The deny set of one project: patterns fixed at start, own files replaced on reload.
#[derive(Debug)]
pub struct DenySet {
    patterns: Gitignore,
    listed: Vec<String>,
    own: RwLock<Own>,
}

/// mcpd's own files, by group, and the identities of files that were once among them.
#[derive(Debug, Default)]
struct Own {
    groups: BTreeMap<OwnGroup, Vec<OwnFile>>,
    retired: HashSet<FileIdentity>,
}

impl DenySet {
    /// The set of `patterns` (relative to `root`), with no own file yet.
    ///
    /// # Errors
    /// A pattern that is not valid `.gitignore` syntax, named.
    pub fn new(root: &Path, patterns: &[String]) -> Result<DenySet, String> {
        let mut builder = GitignoreBuilder::new(root);
        for pattern in patterns {
            builder.add_line(None, pattern).map_err(|e| format!("deny pattern {pattern:?}: {e}"))?;
        }
        let patterns_built = builder.build().map_err(|e| format!("deny patterns: {e}"))?;
        Ok(DenySet { patterns: patterns_built, listed: patterns.to_vec(), own: RwLock::default() })
    }

    /// The default set of a project at `root` ([`DEFAULT_PATTERNS`]).
    pub fn defaults(root: &Path) -> DenySet {
        let patterns: Vec<String> = DEFAULT_PATTERNS.iter().map(|p| (*p).to_owned()).collect();
        match DenySet::new(root, &patterns) {
            Ok(set) => set,
            // The defaults are valid patterns (a unit test builds them).
            Err(_) => DenySet { patterns: Gitignore::empty(), listed: Vec::new(), own: RwLock::default() },
        }
    }

    /// The patterns in force, as given.
    pub fn patterns(&self) -> &[String] {
        &self.listed
    }

    /// Makes `paths` the files of `group` (relative paths are taken from the working
    /// directory, as mcpd read them), recording their identities now.
    pub fn protect(&self, group: OwnGroup, paths: impl IntoIterator<Item = PathBuf>) {
        let files: Vec<OwnFile> = paths
            .into_iter()
            .map(|path| {
                let path = std::path::absolute(&path).unwrap_or(path);
                OwnFile { identity: FileIdentity::of_path(&path), path }
            })
            .collect();
        let mut own = self.own.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(replaced) = own.groups.insert(group, files) {
            own.retired.extend(replaced.iter().filter_map(|f| f.identity));
        }
    }

    /// Every own file, as read.
    pub fn own_files(&self) -> Vec<PathBuf> {
        let own = self.own.read().unwrap_or_else(PoisonError::into_inner);
        own.groups.values().flatten().map(|f| f.path.clone()).collect()
    }

    /// What a check needs, read once: the own files' identities as recorded and as they are now.
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        let own = self.own.read().unwrap_or_else(PoisonError::into_inner);
        let mut identities = own.retired.clone();
        for file in own.groups.values().flatten() {
            identities.extend(file.identity);
            identities.extend(FileIdentity::of_path(&file.path));
        }
        Snapshot { set: self, identities }
    }
}

/// A deny set as of one check (a walk takes one for all its entries).
#[derive(Debug)]
pub(crate) struct Snapshot<'a> {
    set: &'a DenySet,
    identities: HashSet<FileIdentity>,
}

impl Snapshot<'_> {
    /// Whether any own file exists to be recognised (a walk then asks each file's identity).
    pub(crate) fn has_own(&self) -> bool {
        !self.identities.is_empty()
    }

    /// The pattern that denies `relative` (a path under the root; `is_dir` for a directory),
    /// or a directory above it.
    pub(crate) fn pattern(&self, relative: &Path, is_dir: bool) -> Option<Denial> {
        if relative.as_os_str().is_empty() || relative == Path::new(".") {
            return None;
        }
        let matched = self.set.patterns.matched_path_or_any_parents(relative, is_dir);
        matched
            .is_ignore()
            .then(|| Denial::Pattern(matched.inner().map(|g| g.original().to_owned()).unwrap_or_default()))
    }

    /// Whether the file of this identity is one of mcpd's own.
    pub(crate) fn is_own(&self, identity: FileIdentity) -> bool {
        self.identities.contains(&identity)
    }

    /// Why `relative` (whose metadata, following links, is `identity` when it exists) is not
    /// served, if it is not.
    pub(crate) fn judge(&self, relative: &Path, is_dir: bool, identity: Option<FileIdentity>) -> Option<Denial> {
        if identity.is_some_and(|id| self.is_own(id)) {
            return Some(Denial::Own);
        }
        self.pattern(relative, is_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_patterns_deny_secrets_at_any_depth_and_what_their_directories_hold() {
        let dir = tempfile::tempdir().unwrap();
        let set = DenySet::defaults(dir.path());
        assert_eq!(set.patterns().len(), DEFAULT_PATTERNS.len(), "every default pattern is valid");
        let snapshot = set.snapshot();
        for denied in [".env", ".env.local", "deploy/.env", "tls/server.pem", "a/b/c.key", "id_ed25519.pub", ".npmrc"] {
            assert!(snapshot.pattern(Path::new(denied), false).is_some(), "{denied}");
        }
        for (denied, is_dir) in [(".git", true), (".git/config", false), ("sub/.ssh/id", false), (".aws", true)] {
            assert!(snapshot.pattern(Path::new(denied), is_dir).is_some(), "{denied}");
        }
        for served in ["src/main.rs", "env.md", "README.md", "keys.txt", "notes/.envelope", ".", ""] {
            assert_eq!(snapshot.pattern(Path::new(served), false), None, "{served}");
        }
        let reason = snapshot.pattern(Path::new("x/.env.prod"), false).unwrap().to_string();
        assert_eq!(reason, "it matches the sensitive-file pattern \".env.*\", which is not served (see --deny-files)");
    }

    #[test]
    fn later_patterns_allow_again_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let patterns = vec![".env*".to_owned(), "!.env.example".to_owned(), "secrets/".to_owned()];
        let set = DenySet::new(dir.path(), &patterns).unwrap();
        let snapshot = set.snapshot();
        assert!(snapshot.pattern(Path::new(".env"), false).is_some());
        assert_eq!(snapshot.pattern(Path::new(".env.example"), false), None);
        assert!(snapshot.pattern(Path::new("secrets/a.txt"), false).is_some());
        let error = DenySet::new(dir.path(), &["a[z-a]".to_owned()]).unwrap_err();
        assert!(error.starts_with("deny pattern \"a[z-a]\":"), "{error}");
    }

    /// Own files are known by identity: a hard link, a symlink's target and a renamed file are
    /// the same file; an editor's save (a new file renamed over the path) is covered by the
    /// path; a group replaced forgets its old paths, not the files read there.
    #[cfg(unix)]
    #[test]
    fn own_files_are_recognised_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::write(base.join("access.json"), "{}").unwrap();
        std::fs::write(base.join("other.txt"), "x").unwrap();
        let set = DenySet::defaults(base);
        set.protect(OwnGroup::Access, [base.join("access.json")]);
        let identity = |name: &str| FileIdentity::of_path(&base.join(name));
        std::fs::hard_link(base.join("access.json"), base.join("copy.json")).unwrap();
        std::os::unix::fs::symlink(base.join("access.json"), base.join("link.json")).unwrap();
        let snapshot = set.snapshot();
        assert!(snapshot.has_own());
        for same in ["access.json", "copy.json", "link.json"] {
            assert_eq!(snapshot.judge(Path::new(same), false, identity(same)), Some(Denial::Own), "{same}");
        }
        assert_eq!(snapshot.judge(Path::new("other.txt"), false, identity("other.txt")), None);
        drop(snapshot);
        std::fs::rename(base.join("access.json"), base.join("renamed.json")).unwrap();
        std::fs::write(base.join("new.json"), "{}").unwrap();
        std::fs::rename(base.join("new.json"), base.join("access.json")).unwrap();
        let snapshot = set.snapshot();
        assert!(snapshot.is_own(identity("renamed.json").unwrap()), "the file read, renamed");
        assert!(snapshot.is_own(identity("access.json").unwrap()), "the path, saved anew");
        drop(snapshot);
        set.protect(OwnGroup::Access, []);
        assert!(set.own_files().is_empty());
        let snapshot = set.snapshot();
        assert!(snapshot.is_own(identity("renamed.json").unwrap()), "once own, never served");
        assert!(!snapshot.is_own(identity("access.json").unwrap()), "a path no longer read is not");
    }
}
