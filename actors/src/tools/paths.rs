//! Confinement of tool paths to the project directory.
//!
//! Every path a tool receives is resolved against the project root and checked for
//! containment **after** following symlinks (canonicalization), so `..`, absolute paths outside
//! the root and symlinks pointing out of it are all refused. A path that does not exist yet (a
//! file to create) is checked through its nearest existing ancestor.

use std::path::{Component, Path, PathBuf};

use derive_more::{Display, Error};

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
}

/// The project directory (canonical), against which tool paths are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRoot {
    root: PathBuf,
}

impl ProjectRoot {
    /// The root at `dir` (canonicalized).
    ///
    /// # Errors
    /// When `dir` does not exist or is not a directory.
    pub fn new(dir: &Path) -> std::io::Result<ProjectRoot> {
        let root = dir.canonicalize()?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(ProjectRoot { root })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The path relative to the root, for display (`.` for the root itself).
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
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
    pub fn existing(&self, given: &str) -> Result<PathBuf, PathError> {
        let joined = self.joined(given)?;
        let canonical = joined.canonicalize().map_err(|_| PathError::NotFound { path: given.to_owned() })?;
        if !canonical.starts_with(&self.root) {
            return Err(PathError::Outside { path: given.to_owned() });
        }
        Ok(canonical)
    }

    /// Resolves a path that may not exist yet (to create or overwrite): its nearest existing
    /// ancestor must resolve inside the root, and an existing final component that is a symlink
    /// must point inside too.
    ///
    /// # Errors
    /// [`PathError::Outside`] when any of that leads outside the root.
    pub fn writable(&self, given: &str) -> Result<PathBuf, PathError> {
        let joined = self.joined(given)?;
        if joined.symlink_metadata().is_ok() {
            // It exists (maybe as a symlink): judge where it really leads.
            return match joined.canonicalize() {
                Ok(canonical) if canonical.starts_with(&self.root) => Ok(canonical),
                Ok(_) => Err(PathError::Outside { path: given.to_owned() }),
                // A dangling symlink: refuse rather than write through it.
                Err(_) => Err(PathError::Outside { path: given.to_owned() }),
            };
        }
        let mut ancestor = joined.as_path();
        let mut rest = Vec::new();
        while ancestor.symlink_metadata().is_err() {
            rest.push(
                ancestor
                    .file_name()
                    .map(ToOwned::to_owned)
                    .ok_or_else(|| PathError::Outside { path: given.to_owned() })?,
            );
            ancestor = ancestor.parent().ok_or_else(|| PathError::Outside { path: given.to_owned() })?;
        }
        let canonical = ancestor.canonicalize().map_err(|_| PathError::Outside { path: given.to_owned() })?;
        if !canonical.starts_with(&self.root) {
            return Err(PathError::Outside { path: given.to_owned() });
        }
        let mut resolved = canonical;
        for part in rest.into_iter().rev() {
            resolved.push(part);
        }
        Ok(resolved)
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
}
