//! Subscriptions to project files, backed by one OS file watcher (the `notify` crate: inotify,
//! kqueue, FSEvents, ReadDirectoryChanges).
//!
//! The live catalog counts subscribers across every connection and tells [`FileWatch`] when a
//! URI gets its first and loses its last ([`SubscriptionWatch`]). A subscribed URI that names a
//! project file — `file:///…` of the template, or a declared `file` resource — is judged like
//! the file tools (it must exist inside the project); then the **directory** holding it is
//! watched (not recursively), so a file replaced by a rename (what editors do) is still seen.
//! Directories are counted, and at most [`ResourceOptions::max_watched`] files are watched at
//! once (further subscriptions succeed but are not watched; a warning says so).
//!
//! Changes are heard through the crate's one debounced file watch (`crate::file_events`,
//! shared with the configuration reloads): the first change to a file schedules one
//! `notifications/resources/updated` ([`LiveCatalog::resource_updated`]) after
//! [`ResourceOptions::debounce`]; further changes until then are part of it; when events were
//! lost (its queue of 1024 was full), every watched file is announced once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcpd::catalog::{LiveCatalog, SubscriptionWatch};

use super::options::ResourceOptions;
use super::uri::{decode_path, FILE_PREFIX};
use crate::file_events::{DirWatcher, Targets};
use crate::tools::paths::ProjectRoot;

/// Events queued between the OS watcher's thread and the debouncing thread.
const QUEUE: usize = 1024;

/// What is watched: each watched URI's file, and how many of them each directory holds.
#[derive(Debug, Default)]
struct Watched {
    files: HashMap<String, PathBuf>,
    dirs: HashMap<PathBuf, usize>,
}

/// The project files' subscriptions (see the module documentation).
pub struct FileWatch {
    root: ProjectRoot,
    /// Declared `file` resources: URI → project path.
    declared: HashMap<String, String>,
    max_watched: usize,
    debounce: Duration,
    watched: Arc<Mutex<Watched>>,
    watcher: DirWatcher,
}

impl std::fmt::Debug for FileWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatch").field("watched", &self.watched).finish_non_exhaustive()
    }
}

impl FileWatch {
    /// A watch of `root`'s files (and the declared `file` resources: URI, path), not yet
    /// attached to a catalog.
    pub(super) fn new(root: ProjectRoot, options: &ResourceOptions, declared: Vec<(String, String)>) -> FileWatch {
        FileWatch {
            root,
            declared: declared.into_iter().collect(),
            max_watched: options.max_watched,
            debounce: options.debounce,
            watched: Arc::default(),
            watcher: DirWatcher::default(),
        }
    }

    /// Starts the OS watcher and the thread that announces changes through `live`. Without a
    /// watcher (the OS refused one), subscriptions work but hear nothing; a warning says so.
    pub(super) fn attach(&self, live: &Arc<LiveCatalog>) {
        let targets = Announce { watched: self.watched.clone(), catalog: Arc::downgrade(live) };
        if let Err(e) = self.watcher.start("mcpd-file-watch", QUEUE, self.debounce, &[], targets) {
            log::warn!("{e}: subscribed project files will not announce changes");
        }
    }

    /// The file a URI names, when it is a project file that exists.
    fn file_of(&self, uri: &str) -> Option<PathBuf> {
        let path = match self.declared.get(uri) {
            Some(path) => path.clone(),
            None => decode_path(uri.strip_prefix(FILE_PREFIX)?).ok()?,
        };
        let inside = self.root.existing(&path).ok()?;
        Some(self.root.absolute(&inside))
    }

    /// How many files are watched now.
    pub fn watched(&self) -> usize {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner).files.len()
    }
}

impl SubscriptionWatch for FileWatch {
    fn watch(&self, uri: &str) {
        let Some(file) = self.file_of(uri) else {
            log::debug!("subscription to {uri}: not a project file, not watched");
            return;
        };
        let Some(dir) = file.parent().map(PathBuf::from) else { return };
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        if watched.files.len() >= self.max_watched {
            log::warn!(
                "subscription to {uri} is not watched: {} files are watched already (maxWatchedResources)",
                self.max_watched
            );
            return;
        }
        let count = watched.dirs.entry(dir.clone()).or_default();
        *count += 1;
        if *count == 1 {
            if let Err(e) = self.watcher.watch(&dir) {
                log::warn!("cannot watch {} for {uri}: {e}", dir.display());
            }
        }
        watched.files.insert(uri.to_owned(), file);
    }

    fn unwatch(&self, uri: &str) {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(file) = watched.files.remove(uri) else { return };
        let Some(dir) = file.parent().map(PathBuf::from) else { return };
        let Some(count) = watched.dirs.get_mut(&dir) else { return };
        *count -= 1;
        if *count == 0 {
            watched.dirs.remove(&dir);
            self.watcher.unwatch(&dir);
        }
    }
}

/// The watched URIs, announced through the catalog for as long as it lives.
struct Announce {
    watched: Arc<Mutex<Watched>>,
    catalog: Weak<LiveCatalog>,
}

impl Targets for Announce {
    type Key = String;

    fn touched(&self, paths: &[PathBuf]) -> Vec<String> {
        let watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        watched.files.iter().filter(|(_, file)| paths.contains(file)).map(|(uri, _)| uri.clone()).collect()
    }

    fn every(&self) -> Vec<String> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner).files.keys().cloned().collect()
    }

    fn ready(&mut self, uris: Vec<String>) -> bool {
        let Some(live) = self.catalog.upgrade() else { return false };
        for uri in uris {
            live.resource_updated(&uri);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_project_files_are_watched_and_at_most_max_watched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        for name in ["a.txt", "b.txt", "c.txt"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        std::fs::write(outside.path().join("s.txt"), "s").unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let options = ResourceOptions { max_watched: 2, ..ResourceOptions::default() };
        let watch = FileWatch::new(root, &options, vec![("docs://c".into(), "c.txt".into())]);
        watch.watch("note://x");
        watch.watch("file:///missing.txt");
        watch.watch("file:///../s.txt");
        assert_eq!(watch.watched(), 0, "not project files");
        watch.watch("file:///a.txt");
        watch.watch("docs://c");
        watch.watch("file:///b.txt");
        assert_eq!(watch.watched(), 2, "capped");
        watch.unwatch("file:///a.txt");
        watch.unwatch("file:///b.txt");
        assert_eq!(watch.watched(), 1);
        let watched = watch.watched.lock().unwrap();
        assert_eq!(watched.dirs.len(), 1, "one directory counted once");
        assert!(watched.files.contains_key("docs://c"));
    }
}
