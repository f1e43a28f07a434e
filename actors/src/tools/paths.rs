//! Confinement of tool paths to the project directory: the one place that turns a path a tool
//! was given into a path **relative to the project root**, and the root's directory handle (the
//! capability) through which every tool then opens it.
//!
//! Two layers, both always used:
//!
//! 1. **The judgement** ([`ProjectRoot::existing`], [`ProjectRoot::writable`],
//!    [`ProjectRoot::entry`]): the path is joined to the canonical root, normalized lexically (a
//!    `..` cannot climb above the root) and canonicalized (following symlinks, also absolute ones
//!    that lead back inside), which tells clearly whether it is inside, outside or missing. Every
//!    refusal names the path as given. The result is an [`Inside`]: a relative path without `..`.
//! 2. **The capability** ([`ProjectRoot::dir`]): a handle of the root directory
//!    (`cap_std::fs::Dir`). Tools open, create, rename and delete the [`Inside`] path only through
//!    it. On Linux ≥ 5.6 the kernel resolves such a path with
//!    `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (elsewhere, and for the operations on a
//!    final component, cap-std resolves the parent component by component with `O_NOFOLLOW`,
//!    keeping a handle at each step), so a symlink, `..` or rename swapped in after the judgement
//!    cannot lead outside: the operation fails with an escape ([`is_escape`]), which the tools
//!    report as "… is outside the project directory".
//!
//! The judgement alone would be check-then-use; the capability alone would refuse an absolute
//! symlink that points back inside the project and could not tell "outside" from "missing".
//!
//! The root also holds the project's [`DenySet`] (`deny.rs`): a path the judgement resolves to
//! one of mcpd's own files (by identity) or to a sensitive file (by pattern) is refused with
//! [`PathError::Denied`], a file opened is checked again on its handle
//! ([`ProjectRoot::refuse_opened`]), and listings leave such entries out
//! (`ProjectRoot::hides_entry`).

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, FileType};
use derive_more::{Display, Error};

use super::deny::{Denial, DenySet, FileIdentity, Snapshot};

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum PathError {
    /// The path leads outside the project directory.
    #[display("{path:?} is outside the project directory")]
    Outside {
        /// The path as given.
        #[error(not(source))]
        path: String,
    },
    /// The path is empty or not valid.
    #[display("{path:?} is not a valid path: {reason}")]
    Invalid {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// The path does not exist.
    #[display("{path:?} does not exist")]
    NotFound {
        /// The path as given.
        #[error(not(source))]
        path: String,
    },
    /// The path is one mcpd never serves (its own files, the sensitive-file patterns).
    #[display("{path:?} is not served: {reason}")]
    Denied {
        /// The path as given.
        path: String,
        /// Why.
        #[error(not(source))]
        reason: Denial,
    },
}

impl PathError {
    /// The same error about another spelling of the path (a parent judged for its child).
    fn naming(self, given: &str) -> PathError {
        let path = given.to_owned();
        match self {
            PathError::Outside { .. } => PathError::Outside { path },
            PathError::NotFound { .. } => PathError::NotFound { path },
            PathError::Invalid { reason, .. } => PathError::Invalid { path, reason },
            PathError::Denied { reason, .. } => PathError::Denied { path, reason },
        }
    }
}

/// True when a capability operation failed because its path would have led outside the
/// directory handle (cap-std's "a path led outside of the filesystem": a `PermissionDenied`
/// made by cap-std itself, not by the kernel's `EACCES`).
pub fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none()
}

/// A path inside the project, relative to its root, with no `.`, `..` or root component (the
/// root itself is `.`): what the tools hand to the capability.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Inside {
    rel: PathBuf,
}

impl Inside {
    /// The project root itself.
    pub fn root() -> Inside {
        Inside { rel: PathBuf::from(".") }
    }

    /// The relative path, to open through [`ProjectRoot::dir`].
    pub fn path(&self) -> &Path {
        &self.rel
    }

    /// Whether this is the project root.
    pub fn is_root(&self) -> bool {
        self.rel == Path::new(".")
    }

    /// As the tools show it (`.` for the root).
    pub fn shown(&self) -> String {
        self.rel.to_string_lossy().into_owned()
    }

    /// The directory holding it (the root for a top-level entry); None for the root.
    pub fn parent(&self) -> Option<Inside> {
        if self.is_root() {
            return None;
        }
        match self.rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => Some(Inside { rel: parent.to_path_buf() }),
            _ => Some(Inside::root()),
        }
    }

    /// The last component (None for the root).
    pub fn file_name(&self) -> Option<&std::ffi::OsStr> {
        if self.is_root() {
            None
        } else {
            self.rel.file_name()
        }
    }

    /// Whether `self` is `other` or inside it.
    pub fn starts_with(&self, other: &Inside) -> bool {
        other.is_root() || self.rel.starts_with(&other.rel)
    }

    /// The entry `name` of this directory; None unless `name` is one plain component (not
    /// empty, `.`, `..`, absolute or with a separator).
    pub fn join(&self, name: &std::ffi::OsStr) -> Option<Inside> {
        let mut components = Path::new(name).components();
        let one = matches!((components.next(), components.next()), (Some(Component::Normal(_)), None));
        if !one || name.as_encoded_bytes().iter().any(|b| *b == b'/' || (cfg!(windows) && *b == b'\\')) {
            return None;
        }
        Some(self.child(name))
    }

    /// A plain name (one normal component, as the judgement yields them) inside this directory.
    fn child(&self, name: &std::ffi::OsStr) -> Inside {
        if self.is_root() {
            Inside { rel: PathBuf::from(name) }
        } else {
            Inside { rel: self.rel.join(name) }
        }
    }
}

/// The project directory: its canonical path, a handle of it (the capability) and what of it
/// is never served.
#[derive(Debug, Clone)]
pub struct ProjectRoot {
    root: PathBuf,
    dir: Arc<Dir>,
    deny: Arc<DenySet>,
    /// False for a root through which no path is reachable ([`ProjectRoot::closed`]).
    open: bool,
}

impl PartialEq for ProjectRoot {
    fn eq(&self, other: &ProjectRoot) -> bool {
        self.root == other.root
    }
}

impl Eq for ProjectRoot {}

impl ProjectRoot {
    /// The root at `dir` (canonicalized), with a handle of it opened now and the default deny
    /// patterns ([`super::deny::DEFAULT_PATTERNS`]).
    ///
    /// # Errors
    /// When `dir` does not exist, is not a directory or cannot be opened.
    pub fn new(dir: &Path) -> io::Result<ProjectRoot> {
        let root = dir.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{} is not a directory", root.display())));
        }
        let handle = Dir::open_ambient_dir(&root, ambient_authority())?;
        let deny = Arc::new(DenySet::defaults(&root));
        Ok(ProjectRoot { root, dir: Arc::new(handle), deny, open: true })
    }

    /// The same root with every path refused ([`Denial::Closed`]): what reads project files for
    /// a caller (a prompt that embeds one) gets it when no project file is reachable.
    pub fn closed(&self) -> ProjectRoot {
        ProjectRoot { open: false, ..self.clone() }
    }

    /// This root with `patterns` as its deny patterns instead of the defaults (before any clone
    /// is taken: clones share one set).
    ///
    /// # Errors
    /// A pattern that is not valid, named.
    pub fn with_deny_patterns(self, patterns: &[String]) -> Result<ProjectRoot, String> {
        let deny = Arc::new(DenySet::new(&self.root, patterns)?);
        Ok(ProjectRoot { deny, ..self })
    }

    /// What of the project is never served (its own files are added as they are read).
    pub fn deny(&self) -> &Arc<DenySet> {
        &self.deny
    }

    /// Refuses a judged path the deny set covers; `meta` is its metadata (following links,
    /// except for an entry judged as itself), when it exists.
    fn refuse_denied(&self, inside: &Inside, given: &str, meta: Option<&std::fs::Metadata>) -> Result<(), PathError> {
        if !self.open {
            return Err(PathError::Denied { path: given.to_owned(), reason: Denial::Closed });
        }
        if inside.is_root() {
            return Ok(());
        }
        let is_dir = meta.is_some_and(std::fs::Metadata::is_dir);
        match self.deny.snapshot().judge(inside.path(), is_dir, meta.map(FileIdentity::of_std)) {
            Some(reason) => Err(PathError::Denied { path: given.to_owned(), reason }),
            None => Ok(()),
        }
    }

    /// Refuses a file opened through the capability (its handle's metadata) when it is one of
    /// mcpd's own: what the judgement saw may have been swapped since.
    ///
    /// # Errors
    /// [`PathError::Denied`].
    pub fn refuse_opened(&self, given: &str, meta: &cap_std::fs::Metadata) -> Result<(), PathError> {
        match self.deny.snapshot().is_own(FileIdentity::of_cap(meta)) {
            true => Err(PathError::Denied { path: given.to_owned(), reason: Denial::Own }),
            false => Ok(()),
        }
    }

    /// Whether a listing leaves out the entry `name` of the directory `at` (opened as `dir`):
    /// it matches a deny pattern, or it is a regular file that is one of mcpd's own.
    pub(crate) fn hides_entry(
        snapshot: &Snapshot<'_>,
        dir: &Dir,
        at: &Inside,
        name: &std::ffi::OsStr,
        file_type: FileType,
    ) -> bool {
        let Some(inside) = at.join(name) else { return true };
        if snapshot.pattern(inside.path(), file_type.is_dir()).is_some() {
            return true;
        }
        snapshot.has_own()
            && file_type.is_file()
            && dir.symlink_metadata(name).is_ok_and(|meta| snapshot.is_own(FileIdentity::of_cap(&meta)))
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The capability: every file operation of the tools goes through this handle.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The [`Inside`] path of a canonical path under the root (None when it is not under it).
    pub fn inside(&self, canonical: &Path) -> Option<Inside> {
        let rel = canonical.strip_prefix(&self.root).ok()?;
        if rel.as_os_str().is_empty() {
            return Some(Inside::root());
        }
        rel.components().all(|c| matches!(c, Component::Normal(_))).then(|| Inside { rel: rel.to_path_buf() })
    }

    /// The absolute path of an [`Inside`] path (for what needs a path, never to open it).
    pub fn absolute(&self, inside: &Inside) -> PathBuf {
        if inside.is_root() {
            self.root.clone()
        } else {
            self.root.join(&inside.rel)
        }
    }

    fn joined(&self, given: &str) -> Result<PathBuf, PathError> {
        if given.contains('\0') {
            return Err(PathError::Invalid { path: given.to_owned(), reason: "it contains a NUL byte".into() });
        }
        let given_path = Path::new(if given.trim().is_empty() { "." } else { given });
        let joined = if given_path.is_absolute() { given_path.to_path_buf() } else { self.root.join(given_path) };
        // Lexical normalization first (so that `a/../../x` is judged before touching the disk).
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(PathError::Outside { path: given.to_owned() });
                    }
                }
                Component::CurDir => {}
                other => normal.push(other.as_os_str()),
            }
        }
        if !normal.starts_with(&self.root) {
            return Err(PathError::Outside { path: given.to_owned() });
        }
        Ok(normal)
    }

    /// Resolves an existing path (file or directory), following symlinks.
    ///
    /// # Errors
    /// [`PathError`] when it is outside the root (also through a symlink) or does not exist.
    pub fn existing(&self, given: &str) -> Result<Inside, PathError> {
        let joined = self.joined(given)?;
        let canonical = joined.canonicalize().map_err(|_| PathError::NotFound { path: given.to_owned() })?;
        let inside = self.inside(&canonical).ok_or_else(|| PathError::Outside { path: given.to_owned() })?;
        self.refuse_denied(&inside, given, std::fs::metadata(&canonical).ok().as_ref())?;
        Ok(inside)
    }

    /// Resolves a path that may not exist yet (to create or overwrite): its nearest existing
    /// ancestor must resolve inside the root, and an existing final component that is a symlink
    /// must point inside too.
    ///
    /// # Errors
    /// [`PathError::Outside`] when any of that leads outside the root.
    pub fn writable(&self, given: &str) -> Result<Inside, PathError> {
        let outside = || PathError::Outside { path: given.to_owned() };
        let joined = self.joined(given)?;
        if joined.symlink_metadata().is_ok() {
            // It exists (maybe as a symlink): judge where it really leads; a dangling symlink is
            // refused rather than written through.
            let canonical = joined.canonicalize().map_err(|_| outside())?;
            let inside = self.inside(&canonical).ok_or_else(outside)?;
            self.refuse_denied(&inside, given, std::fs::metadata(&canonical).ok().as_ref())?;
            return Ok(inside);
        }
        let mut ancestor = joined.as_path();
        let mut rest = Vec::new();
        while ancestor.symlink_metadata().is_err() {
            rest.push(ancestor.file_name().ok_or_else(outside)?);
            ancestor = ancestor.parent().ok_or_else(outside)?;
        }
        let canonical = ancestor.canonicalize().map_err(|_| outside())?;
        let mut resolved = self.inside(&canonical).ok_or_else(outside)?;
        for part in rest.into_iter().rev() {
            resolved = resolved.child(part);
        }
        self.refuse_denied(&resolved, given, None)?;
        Ok(resolved)
    }

    /// The path as given, not following a final symlink: the parent is resolved (and confined),
    /// the last component is kept as it is. For tools that act on a directory entry itself
    /// (`get_file_info`, `delete_path`, `rename_move`): removing or moving a symlink never
    /// touches what it points to. Anything without a plain last component (`.`, `..`, the root)
    /// resolves as [`ProjectRoot::existing`].
    ///
    /// # Errors
    /// [`PathError`] when the parent is outside the root or the entry does not exist.
    pub fn entry(&self, given: &str) -> Result<Inside, PathError> {
        if given.contains('\0') {
            return Err(PathError::Invalid { path: given.to_owned(), reason: "it contains a NUL byte".into() });
        }
        if self.existing(given).is_ok_and(|resolved| resolved.is_root()) {
            return Ok(Inside::root());
        }
        let path = Path::new(given);
        let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
            return self.existing(given);
        };
        if !matches!(path.components().next_back(), Some(Component::Normal(_))) {
            return self.existing(given);
        }
        // Errors name the path as given, not its parent.
        let parent = self.existing(&parent.to_string_lossy()).map_err(|e| e.naming(given))?;
        let entry = parent.child(name);
        let Ok(meta) = self.absolute(&entry).symlink_metadata() else {
            return Err(PathError::NotFound { path: given.to_owned() });
        };
        self.refuse_denied(&entry, given, Some(&meta))?;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_and_inside_paths_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "a").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), dir.path().join("link_dir")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link_file")).unwrap();
            std::os::unix::fs::symlink(dir.path().join("sub/a.txt"), dir.path().join("inner_link")).unwrap();
        }
        let root = ProjectRoot::new(dir.path()).unwrap();
        assert!(root.existing("sub/a.txt").is_ok());
        assert!(root.existing("./sub/../sub/a.txt").is_ok());
        assert!(root.existing("").is_ok());
        let outside_abs = outside.path().join("secret");
        for bad in [
            "../x",
            "sub/../../x",
            "/etc/passwd",
            outside_abs.to_str().unwrap(),
            "link_dir/secret",
            "link_file",
            "link_dir",
        ] {
            assert!(
                matches!(root.existing(bad), Err(PathError::Outside { .. }) | Err(PathError::NotFound { .. })),
                "{bad}"
            );
            assert!(matches!(root.writable(bad), Err(PathError::Outside { .. })), "{bad}");
        }
        assert!(root.existing("inner_link").is_ok(), "a symlink inside the root is fine");
        assert!(root.writable("new/dir/file.txt").is_ok());
        assert!(matches!(root.writable("link_dir/new.txt"), Err(PathError::Outside { .. })));
    }

    /// The judgement hands the capability a relative path with symlinks resolved: an absolute
    /// symlink that leads back inside is followed by the judgement, and the capability opens
    /// its target; the capability itself refuses to follow anything out.
    #[cfg(unix)]
    #[test]
    fn the_capability_opens_judged_paths_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "a").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("sub/a.txt"), dir.path().join("inner_link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link_dir")).unwrap();
        std::os::unix::fs::symlink("../../", dir.path().join("sub/up")).unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let inner = root.existing("inner_link").unwrap();
        assert_eq!(inner.path(), Path::new("sub/a.txt"));
        assert_eq!(root.dir().read_to_string(inner.path()).unwrap(), "a");
        assert_eq!(root.existing(".").unwrap(), Inside::root());
        assert_eq!(root.entry("link_dir").unwrap().path(), Path::new("link_dir"));
        for escape in ["link_dir/secret", "sub/up", "sub/up/x", "/etc/passwd", "../x"] {
            let error = root.dir().read(escape).unwrap_err();
            assert!(is_escape(&error), "{escape}: {error}");
        }
        let missing = root.dir().read("sub/none").unwrap_err();
        assert!(!is_escape(&missing), "{missing}");
        assert_eq!(Inside::root().parent(), None);
        assert_eq!(inner.parent().unwrap().path(), Path::new("sub"));
        assert_eq!(inner.parent().unwrap().parent(), Some(Inside::root()));
    }

    /// Any generated path — relative, absolute (to the root, to the outside, to elsewhere), with
    /// `.`, `..`, empty components, trailing slashes, and through every kind of symlink (inside,
    /// absolute back inside, out by absolute and by relative path, dangling, looping) — is either
    /// judged inside the root (and then the capability reaches exactly that, inside) or refused;
    /// and the capability, given the raw path, never reads outside content.
    #[cfg(unix)]
    #[test]
    fn every_generated_path_resolves_inside_or_is_refused() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        const SECRET: &str = "OUTSIDE-SECRET";
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let (base, out) = (dir.path(), outside.path());
        std::fs::create_dir_all(base.join("sub/deeper")).unwrap();
        std::fs::write(base.join("sub/a.txt"), "inside").unwrap();
        std::fs::write(base.join("top.txt"), "inside").unwrap();
        std::fs::write(out.join("secret"), SECRET).unwrap();
        std::fs::create_dir(out.join("sub")).unwrap();
        std::fs::write(out.join("sub/a.txt"), SECRET).unwrap();
        let out_canonical = out.canonicalize().unwrap();
        let base_canonical = base.canonicalize().unwrap();
        let link = |target: &Path, name: &str| std::os::unix::fs::symlink(target, base.join(name)).unwrap();
        link(&out_canonical, "link_dir");
        link(&out_canonical.join("secret"), "link_file");
        link(&base_canonical.join("sub/a.txt"), "inner_abs");
        link(Path::new("sub/a.txt"), "inner_rel");
        link(Path::new("../.."), "up");
        link(&out_canonical.join("missing"), "dangling");
        link(Path::new("loop"), "loop");
        link(Path::new(".."), "sub/back");
        if let (Some(from), Some(name)) = (base_canonical.parent(), out_canonical.file_name()) {
            if Some(from) == out_canonical.parent() {
                link(&Path::new("..").join(name), "rel_out");
            }
        }
        let root = ProjectRoot::new(base).unwrap();
        let names = [
            "sub",
            "deeper",
            "a.txt",
            "top.txt",
            "secret",
            "..",
            ".",
            "",
            "link_dir",
            "link_file",
            "inner_abs",
            "inner_rel",
            "up",
            "dangling",
            "loop",
            "back",
            "rel_out",
            "new",
            "x",
        ];
        let prefixes = vec![
            String::new(),
            "/".to_owned(),
            format!("{}/", base_canonical.display()),
            format!("{}/", out_canonical.display()),
            "/etc/".to_owned(),
        ];
        let strategy = (
            proptest::sample::select(prefixes),
            proptest::collection::vec(
                prop_oneof![4 => proptest::sample::select(names.to_vec()).prop_map(str::to_owned), 1 => "[a-z.]{1,3}"],
                0..6,
            ),
            any::<bool>(),
        )
            .prop_map(|(prefix, parts, slash)| format!("{prefix}{}{}", parts.join("/"), if slash { "/" } else { "" }));

        let inside_on_disk = |inside: &Inside| {
            assert!(inside.is_root() || inside.path().components().all(|c| matches!(c, Component::Normal(_))));
            root.absolute(inside)
        };
        // CI runs 4,096 cases; `PROPTEST_CASES=N` runs more (see README).
        let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4096);
        // [existing ok, existing refused, writable ok, writable refused, entry ok, raw reads ok]
        let seen: [std::sync::atomic::AtomicU32; 6] = Default::default();
        let count = |i: usize| seen[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let started = std::time::Instant::now();
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        runner
            .run(&strategy, |given| {
                count(if root.existing(&given).is_ok() { 0 } else { 1 });
                count(if root.writable(&given).is_ok() { 2 } else { 3 });
                if root.entry(&given).is_ok() {
                    count(4);
                }
                if let Ok(inside) = root.existing(&given) {
                    let real = inside_on_disk(&inside).canonicalize().unwrap();
                    prop_assert!(real.starts_with(&base_canonical), "{given:?} -> {real:?}");
                    prop_assert!(root.dir().metadata(inside.path()).is_ok(), "{given:?}: the capability reaches it");
                }
                if let Ok(inside) = root.writable(&given) {
                    let mut ancestor = inside_on_disk(&inside);
                    while ancestor.symlink_metadata().is_err() {
                        ancestor.pop();
                    }
                    let real = ancestor.canonicalize().unwrap();
                    prop_assert!(real.starts_with(&base_canonical), "{given:?} -> {real:?}");
                }
                if let Ok(inside) = root.entry(&given) {
                    let parent = inside.parent().map_or_else(|| base_canonical.clone(), |p| inside_on_disk(&p));
                    prop_assert!(parent.canonicalize().unwrap().starts_with(&base_canonical), "{given:?}");
                    prop_assert!(root.dir().symlink_metadata(inside.path()).is_ok(), "{given:?}");
                }
                // The capability alone, on the raw path: never outside content.
                if let Ok(content) = root.dir().read_to_string(&given) {
                    count(5);
                    prop_assert_ne!(content, SECRET, "{:?} read outside content", given);
                }
                if let Ok(dir) = root.dir().open_dir(&given) {
                    let secret = dir.entries().unwrap().any(|e| e.unwrap().file_name() == "secret");
                    prop_assert!(!secret, "{:?} listed the outside directory", given);
                }
                Ok(())
            })
            .unwrap();
        let seen = seen.map(|n| n.into_inner());
        eprintln!("path confinement: {cases} cases in {:.2?}, outcomes {seen:?}", started.elapsed());
        // Not vacuous: each judgement both accepted and refused a good share of the cases.
        assert!(seen[..5].iter().all(|n| *n >= cases / 50) && seen[5] > 0, "{seen:?}");
    }
}
