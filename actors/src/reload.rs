//! Live reload of configuration files: watch a few files, debounce their changes, call back; a
//! `SIGHUP` calls every callback.
//!
//! A [`Reloader`] holds groups of files, each with a callback ([`Reloader::add`]). Each file's
//! **directory** is watched (not recursively), so a file replaced by a rename — what editors and
//! `mv` do — or created after the start is still seen. Changes are heard through the crate's one
//! debounced file watch (`crate::file_events`, shared with the project files' subscriptions):
//! the first change to a group's file schedules its callback after the debounce; further
//! changes until then are part of it; when events were lost (more than [`QUEUE`] queued), every
//! group is reloaded once. Opening or reading a file is not a change.
//!
//! Callbacks run on the actix system that called [`Reloader::start`] (one task, one callback at
//! a time, in order), so they may `actix_rt::spawn` their async work. A callback must keep the
//! previous configuration when the file does not parse; the reloader only says which file
//! changed ([`Trigger`]). A panic in a callback is contained and counted (site `gateway`, which the reloads serve).
//!
//! ```no_run
//! # use std::time::Duration;
//! # async fn run() {
//! use mcpd_actors::reload::{Reloader, Trigger};
//! let reloader = Reloader::new(Duration::from_millis(200));
//! reloader.add(vec!["servers.json".into()], |trigger: &Trigger| log::info!("reload: {trigger}"));
//! let _running = reloader.start(); // keep it: dropping it stops the watching
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::file_events::{DirWatcher, Targets};
use crate::panics::{self, Site};

/// Events queued between the OS watcher's thread and the debouncing thread.
pub const QUEUE: usize = 256;

/// Reloads queued between the debouncing thread (and `SIGHUP`) and the callbacks.
const CALLS: usize = 64;

/// The default debounce: editors write a file in several steps.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Why a callback runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// This file of the group changed (was written, created, renamed or removed).
    Changed(PathBuf),
    /// `SIGHUP` (or [`Running::reload_all`]): every group is re-read.
    Signal,
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Changed(path) => write!(f, "{} changed", path.display()),
            Trigger::Signal => f.write_str("SIGHUP"),
        }
    }
}

/// A reload callback.
pub type Callback = Arc<dyn Fn(&Trigger) + Send + Sync>;

struct Group {
    /// The files as given, and as events name them (canonical directory + file name).
    files: Vec<(PathBuf, PathBuf)>,
    callback: Callback,
}

#[derive(Default)]
struct Shared {
    groups: Vec<Group>,
    /// Watched directories.
    dirs: Vec<PathBuf>,
}

/// Files to watch and what to call when they change (see the module documentation).
#[derive(Clone)]
pub struct Reloader {
    debounce: Duration,
    shared: Arc<Mutex<Shared>>,
    watcher: Arc<DirWatcher>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Reloader").field("groups", &shared.groups.len()).field("dirs", &shared.dirs).finish()
    }
}

#[derive(Debug, Clone)]
enum Call {
    Group(usize, Trigger),
    All,
}

impl Reloader {
    /// A reloader that waits `debounce` after a file's first change before calling back.
    pub fn new(debounce: Duration) -> Reloader {
        Reloader { debounce, shared: Arc::default(), watcher: Arc::default() }
    }

    /// Watches `files` (relative paths are taken from the current directory) and calls
    /// `callback` when one of them changes, and on `SIGHUP`. May be called before or after
    /// [`Reloader::start`]. A file whose directory cannot be watched is logged and left to
    /// `SIGHUP`.
    pub fn add(&self, files: Vec<PathBuf>, callback: impl Fn(&Trigger) + Send + Sync + 'static) {
        let files: Vec<(PathBuf, PathBuf)> = files.into_iter().map(|file| (file.clone(), event_path(&file))).collect();
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        for (_, watched) in &files {
            let Some(dir) = watched.parent().map(Path::to_path_buf) else { continue };
            if shared.dirs.contains(&dir) {
                continue;
            }
            if let Err(e) = self.watcher.watch(&dir) {
                log::warn!("cannot watch {} for reloads ({e}); SIGHUP still reloads", dir.display());
            }
            shared.dirs.push(dir);
        }
        shared.groups.push(Group { files, callback: Arc::new(callback) });
    }

    /// Starts watching and listening for `SIGHUP`; call inside an actix system (the callbacks
    /// run on it). Without an OS watcher (refused), changes are only heard on `SIGHUP`; a
    /// warning says so. Watching stops when the returned [`Running`] is dropped.
    pub fn start(&self) -> Running {
        let (call_tx, call_rx) = tokio::sync::mpsc::channel::<Call>(CALLS);
        let dirs = self.shared.lock().unwrap_or_else(PoisonError::into_inner).dirs.clone();
        let targets = Groups { shared: self.shared.clone(), calls: call_tx.clone() };
        if let Err(e) = self.watcher.start("mcpd-reload-watch", QUEUE, self.debounce, &dirs, targets) {
            log::warn!("{e}: configuration files reload on SIGHUP only");
        }
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        actix_rt::spawn(run_callbacks(self.shared.clone(), call_rx, stop_rx));
        Running { reloader: self.clone(), calls: call_tx, _stop: stop_tx }
    }
}

/// A started [`Reloader`]; dropping it stops the watching and the `SIGHUP` listener.
pub struct Running {
    reloader: Reloader,
    calls: tokio::sync::mpsc::Sender<Call>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("reloader", &self.reloader).finish_non_exhaustive()
    }
}

impl Running {
    /// Calls every callback, as `SIGHUP` does.
    pub fn reload_all(&self) {
        let _ = self.calls.try_send(Call::All);
    }

    /// The reloader, to add more files.
    pub fn reloader(&self) -> &Reloader {
        &self.reloader
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.reloader.watcher.stop();
    }
}

/// The path a watcher's event names for `file`: its directory made canonical (the watcher
/// reports paths under the directory it watches) and its name. A file without a name (`..`)
/// or whose directory does not exist is kept as given.
fn event_path(file: &Path) -> PathBuf {
    let absolute = if file.is_absolute() {
        file.to_path_buf()
    } else {
        std::env::current_dir().map(|cwd| cwd.join(file)).unwrap_or_else(|_| file.to_path_buf())
    };
    let (Some(dir), Some(name)) = (absolute.parent(), absolute.file_name()) else { return absolute };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    match std::fs::canonicalize(dir) {
        Ok(dir) => dir.join(name),
        Err(_) => absolute,
    }
}

/// The groups as the debounced watch sees them: a change of a group's file queues its call.
struct Groups {
    shared: Arc<Mutex<Shared>>,
    calls: tokio::sync::mpsc::Sender<Call>,
}

impl Targets for Groups {
    /// A group's index and the file (as given) that changed.
    type Key = (usize, PathBuf);

    fn touched(&self, paths: &[PathBuf]) -> Vec<(usize, PathBuf)> {
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let hit =
            |group: &Group| group.files.iter().find(|(_, watched)| paths.contains(watched)).map(|(f, _)| f.clone());
        shared.groups.iter().enumerate().filter_map(|(index, group)| hit(group).map(|file| (index, file))).collect()
    }

    fn every(&self) -> Vec<(usize, PathBuf)> {
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.groups.iter().enumerate().filter_map(|(i, g)| g.files.first().map(|(f, _)| (i, f.clone()))).collect()
    }

    fn ready(&mut self, keys: Vec<(usize, PathBuf)>) -> bool {
        for (index, file) in keys {
            match self.calls.try_send(Call::Group(index, Trigger::Changed(file))) {
                Ok(()) => {}
                Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                    log::warn!("reload queue full: a change is merged into the reloads already queued");
                }
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return false,
            }
        }
        true
    }
}

/// The callbacks' task: queued calls and `SIGHUP`, one callback at a time, until stopped.
async fn run_callbacks(
    shared: Arc<Mutex<Shared>>,
    mut calls: tokio::sync::mpsc::Receiver<Call>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    #[cfg(unix)]
    let mut hangup = match actix_rt::signal::unix::signal(actix_rt::signal::unix::SignalKind::hangup()) {
        Ok(signal) => Some(signal),
        Err(e) => {
            log::warn!("no SIGHUP handler ({e}): configuration files reload on changes only");
            None
        }
    };
    loop {
        #[cfg(unix)]
        let hup = async {
            match hangup.as_mut() {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hup = std::future::pending::<Option<()>>();
        let call = tokio::select! {
            _ = &mut stop => return,
            call = calls.recv() => match call {
                Some(call) => call,
                None => return,
            },
            Some(()) = hup => {
                log::info!("SIGHUP: re-reading the configuration files");
                Call::All
            }
        };
        let callbacks: Vec<(Callback, Trigger)> = {
            let shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
            match call {
                Call::Group(index, trigger) => {
                    shared.groups.get(index).map(|g| (g.callback.clone(), trigger)).into_iter().collect()
                }
                Call::All => shared.groups.iter().map(|g| (g.callback.clone(), Trigger::Signal)).collect(),
            }
        };
        for (callback, trigger) in callbacks {
            let _ = panics::contain(Site::Gateway, async move { callback(&trigger) }).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn event_paths_have_canonical_directories() {
        let dir = std::env::temp_dir();
        let canonical = std::fs::canonicalize(&dir).unwrap();
        assert_eq!(event_path(&dir.join("servers.json")), canonical.join("servers.json"));
    }

    #[actix_rt::test]
    async fn a_changed_file_calls_its_group_once_and_reload_all_calls_every_group() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "1").unwrap();
        let heard = Arc::new(Mutex::new(Vec::<String>::new()));
        let reloader = Reloader::new(Duration::from_millis(100));
        for (name, file) in [("a", &a), ("b", &b)] {
            let heard = heard.clone();
            reloader.add(vec![file.clone()], move |trigger| {
                heard.lock().unwrap().push(format!("{name}:{}", matches!(trigger, Trigger::Signal)));
            });
        }
        let running = reloader.start();
        // Several writes in a burst are one reload; a rename over the file is seen too.
        std::fs::write(&a, "2").unwrap();
        std::fs::write(&a, "3").unwrap();
        let temp = dir.path().join("a.json.tmp");
        std::fs::write(&temp, "4").unwrap();
        std::fs::rename(&temp, &a).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while heard.lock().unwrap().is_empty() && Instant::now() < deadline {
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
        actix_rt::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(*heard.lock().unwrap(), ["a:false"]);
        running.reload_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        while heard.lock().unwrap().len() < 3 && Instant::now() < deadline {
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(*heard.lock().unwrap(), ["a:false", "a:true", "b:true"]);
    }
}
