//! Debounced file events: the one mechanism behind the project files' subscriptions
//! (`tools::resources::watch`) and the configuration reloads ([`crate::reload`]).
//!
//! One OS watcher (the `notify` crate: inotify, kqueue, FSEvents, ReadDirectoryChanges) watches
//! directories, not recursively (so a file replaced by a rename — what editors and `mv` do — is
//! still seen). Its events go from the watcher's thread through a bounded queue to one thread
//! that maps them to keys ([`Targets::touched`]) and debounces: the first change of a key
//! schedules it after the debounce; further changes until then are part of it. When the queue
//! is full, every key ([`Targets::every`]) is handed on once rather than a change lost. Opening
//! or reading a file is not a change.

use std::collections::HashMap;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// What a debounced watch serves: which keys an event touches, and what to do with the keys
/// whose debounce has passed. Runs on the debouncing thread.
pub(crate) trait Targets: Send + 'static {
    /// What is announced: a URI, a group of files…
    type Key: Eq + Hash + Clone + Send;

    /// The keys a change of `paths` touches.
    fn touched(&self, paths: &[PathBuf]) -> Vec<Self::Key>;

    /// Every key (announced once when events were lost).
    fn every(&self) -> Vec<Self::Key>;

    /// Hands on the keys whose debounce has passed; `false` ends the watching thread (nobody
    /// listens any more).
    fn ready(&mut self, keys: Vec<Self::Key>) -> bool;
}

/// An OS watcher of directories whose events reach a [`Targets`] through the debouncing
/// thread; nothing is heard before [`DirWatcher::start`], or without an OS watcher.
#[derive(Default)]
pub(crate) struct DirWatcher(Mutex<Option<RecommendedWatcher>>);

impl std::fmt::Debug for DirWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirWatcher").field("started", &self.started()).finish()
    }
}

impl DirWatcher {
    /// Starts the OS watcher (thread `name`, `queue` events between it and the debouncing
    /// thread) with `dirs` watched, replacing any watcher started before; the debouncing thread
    /// ends when the watcher is stopped or `targets` says so.
    ///
    /// # Errors
    /// Why nothing will be heard: the OS refused a watcher, or the thread could not start.
    pub(crate) fn start<T: Targets>(
        &self,
        name: &str,
        queue: usize,
        debounce: Duration,
        dirs: &[PathBuf],
        targets: T,
    ) -> Result<(), String> {
        let (tx, rx) = sync_channel::<Event>(queue);
        let overflow = Arc::new(AtomicBool::new(false));
        let full = overflow.clone();
        let label = name.to_owned();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
            Ok(event) => {
                if tx.try_send(event).is_err() {
                    full.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => log::warn!("{label}: {e}"),
        })
        .map_err(|e| format!("no file watcher ({e})"))?;
        for dir in dirs {
            if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                log::warn!("cannot watch {}: {e}", dir.display());
            }
        }
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || debounce_events(&rx, &overflow, targets, debounce))
            .map_err(|e| format!("no file watch thread ({e})"))?;
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(watcher);
        Ok(())
    }

    /// Whether an OS watcher is running.
    pub(crate) fn started(&self) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Watches one more directory (nothing before the start: pass it to [`DirWatcher::start`]).
    ///
    /// # Errors
    /// The OS's refusal.
    pub(crate) fn watch(&self, dir: &Path) -> Result<(), notify::Error> {
        match self.0.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            Some(watcher) => watcher.watch(dir, RecursiveMode::NonRecursive),
            None => Ok(()),
        }
    }

    /// Stops watching a directory.
    pub(crate) fn unwatch(&self, dir: &Path) {
        if let Some(watcher) = self.0.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            let _ = watcher.unwatch(dir);
        }
    }

    /// Stops the OS watcher (and so the debouncing thread).
    pub(crate) fn stop(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
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

/// The debouncing thread: maps events to keys and hands each on once per `debounce`. Ends when
/// the watcher is gone (the queue closes) or the targets say so.
fn debounce_events<T: Targets>(rx: &Receiver<Event>, overflow: &AtomicBool, mut targets: T, debounce: Duration) {
    let mut pending: HashMap<T::Key, Instant> = HashMap::new();
    loop {
        let wait = pending
            .values()
            .min()
            .map_or(Duration::from_secs(3600), |due| due.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(event) if changes(&event.kind) => {
                let due = Instant::now() + debounce;
                for key in targets.touched(&event.paths) {
                    pending.entry(key).or_insert(due);
                }
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if overflow.swap(false, Ordering::Relaxed) {
            let due = Instant::now() + debounce;
            for key in targets.every() {
                pending.entry(key).or_insert(due);
            }
        }
        let now = Instant::now();
        let ready: Vec<T::Key> = pending.iter().filter(|(_, due)| **due <= now).map(|(key, _)| key.clone()).collect();
        if ready.is_empty() {
            continue;
        }
        for key in &ready {
            pending.remove(key);
        }
        if !targets.ready(ready) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of one directory, each its own key; what became ready goes to a channel.
    struct Files(Vec<PathBuf>, std::sync::mpsc::Sender<Vec<PathBuf>>);

    impl Targets for Files {
        type Key = PathBuf;

        fn touched(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
            self.0.iter().filter(|f| paths.contains(f)).cloned().collect()
        }

        fn every(&self) -> Vec<PathBuf> {
            self.0.clone()
        }

        fn ready(&mut self, keys: Vec<PathBuf>) -> bool {
            self.1.send(keys).is_ok()
        }
    }

    #[test]
    fn a_burst_of_changes_is_one_announcement_and_reading_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = std::fs::canonicalize(dir.path()).unwrap();
        let (a, b) = (dir_path.join("a"), dir_path.join("b"));
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "1").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let watcher = DirWatcher::default();
        watcher
            .start(
                "test-file-events",
                16,
                Duration::from_millis(500),
                std::slice::from_ref(&dir_path),
                Files(vec![a.clone()], tx),
            )
            .unwrap();
        let _ = std::fs::read(&a).unwrap();
        std::fs::write(&b, "2").unwrap();
        std::fs::write(&a, "2").unwrap();
        std::fs::write(&a, "3").unwrap();
        let ready = rx.recv_timeout(Duration::from_secs(10)).expect("a change of a");
        assert_eq!(ready, [a]);
        assert!(rx.recv_timeout(Duration::from_millis(400)).is_err(), "one announcement per burst");
        watcher.stop();
        assert!(!watcher.started());
    }
}
