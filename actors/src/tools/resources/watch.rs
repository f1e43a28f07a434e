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
//! Events go from the watcher's thread through a bounded queue (1024 events; when it is full,
//! every watched file is announced once rather than a change lost) to one thread that maps them
//! to URIs and debounces: the first change to a file schedules one
//! `notifications/resources/updated` ([`LiveCatalog::resource_updated`]) after
//! [`ResourceOptions::debounce`]; further changes until then are part of it. Opening or reading
//! a file is not a change.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use mcpd::catalog::{LiveCatalog, SubscriptionWatch};
use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{decode_path, ResourceOptions, FILE_PREFIX};
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
    watcher: Mutex<Option<RecommendedWatcher>>,
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
            watcher: Mutex::new(None),
        }
    }

    /// Starts the OS watcher and the thread that announces changes through `live`. Without a
    /// watcher (the OS refused one), subscriptions work but hear nothing; a warning says so.
    pub(super) fn attach(&self, live: &Arc<LiveCatalog>) {
        let (tx, rx) = sync_channel::<Event>(QUEUE);
        let overflow = Arc::new(AtomicBool::new(false));
        let full = overflow.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
            Ok(event) => {
                if tx.try_send(event).is_err() {
                    full.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => log::warn!("file watch: {e}"),
        });
        let watcher = match watcher {
            Ok(watcher) => watcher,
            Err(e) => {
                log::warn!("no file watcher ({e}): subscribed project files will not announce changes");
                return;
            }
        };
        let (watched, catalog, debounce) = (self.watched.clone(), Arc::downgrade(live), self.debounce);
        let thread = std::thread::Builder::new()
            .name("mcpd-file-watch".into())
            .spawn(move || announce(&rx, &watched, &overflow, &catalog, debounce));
        if let Err(e) = thread {
            log::warn!("no file watch thread ({e}): subscribed project files will not announce changes");
            return;
        }
        *self.watcher.lock().unwrap_or_else(PoisonError::into_inner) = Some(watcher);
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
            if let Some(watcher) = self.watcher.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                    log::warn!("cannot watch {} for {uri}: {e}", dir.display());
                }
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
            if let Some(watcher) = self.watcher.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
                let _ = watcher.unwatch(&dir);
            }
        }
    }
}

/// Whether an event changes a file (opening or reading one does not).
fn changes(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The debouncing thread: maps events to watched URIs and announces each once per `debounce`.
/// Ends when the watcher is gone (the queue closes) or the catalog is.
fn announce(
    rx: &Receiver<Event>,
    watched: &Mutex<Watched>,
    overflow: &AtomicBool,
    catalog: &Weak<LiveCatalog>,
    debounce: Duration,
) {
    let mut pending: HashMap<String, Instant> = HashMap::new();
    loop {
        let wait = pending
            .values()
            .min()
            .map_or(Duration::from_secs(3600), |due| due.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(event) if changes(&event.kind) => {
                let due = Instant::now() + debounce;
                let watched = watched.lock().unwrap_or_else(PoisonError::into_inner);
                for (uri, file) in &watched.files {
                    if event.paths.iter().any(|p| p == file) {
                        pending.entry(uri.clone()).or_insert(due);
                    }
                }
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if overflow.swap(false, Ordering::Relaxed) {
            let due = Instant::now() + debounce;
            for uri in watched.lock().unwrap_or_else(PoisonError::into_inner).files.keys() {
                pending.entry(uri.clone()).or_insert(due);
            }
        }
        let now = Instant::now();
        let ready: Vec<String> = pending.iter().filter(|(_, due)| **due <= now).map(|(uri, _)| uri.clone()).collect();
        if ready.is_empty() {
            continue;
        }
        let Some(live) = catalog.upgrade() else { return };
        for uri in ready {
            pending.remove(&uri);
            live.resource_updated(&uri);
        }
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
