//! The file tools under a symlink race. While another thread keeps changing the project —
//! `swap`, a symlink, retargeted between an inside directory and a directory outside (by
//! absolute and by relative path); `swapfile` likewise between an inside file and a file
//! outside; `flip`, a real directory atomically exchanged (`renameat2(RENAME_EXCHANGE)`) with a
//! symlink to the outside directory, and `flipfile`, a real file exchanged with a symlink to an
//! outside file (the rename race: a path judged to be a plain directory or file is a symlink
//! out by the time it is used) — thousands of mixed calls (reads, writes, appends, edits,
//! creations, renames, deletions, listings, greps, patches) go through those names. Afterwards
//! the outside tree must be byte for byte what it was (its checksum before and after), and no
//! result may carry outside content or names.
//!
//! The tools are called through their handlers (the same ones the server runs), several at a
//! time, on the blocking pool as in production. Every directory is a `tempfile` directory,
//! removed by its own handle.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::file_tools::snapshot;
use mcpd::context::ToolContext;
use mcpd::{Catalog, ProtocolVersion};
use mcpd_actors::tools::files::{register, FileToolOptions};
use mcpd_actors::tools::paths::ProjectRoot;
use serde_json::{json, Value};

/// Outside content and outside-only names carry this marker; no result may.
const MARK: &str = "TOP-SECRET";
const SECRET: &str = "TOP-SECRET-OUTSIDE-CONTENT\n";
/// Mixed operations in all (over `STREAMS` concurrent callers).
const OPERATIONS: usize = 6_000;
const STREAMS: usize = 4;
const TEST_LIMIT: Duration = Duration::from_secs(300);

fn checksum(tree: &BTreeMap<String, String>) -> u64 {
    let mut hasher = DefaultHasher::new();
    tree.hash(&mut hasher);
    hasher.finish()
}

/// Replaces the symlink `link` atomically (a fresh link renamed over it).
fn relink(dir: &Path, link: &str, target: &Path, n: u64) {
    let fresh = dir.join(format!(".{link}.{n}"));
    symlink(target, &fresh).unwrap();
    fs::rename(&fresh, dir.join(link)).unwrap();
}

/// Exchanges two names atomically (both always exist).
fn exchange(dir: &Path, a: &str, b: &str) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        dir.join(a),
        rustix::fs::CWD,
        dir.join(b),
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
}

/// The `i`-th operation of stream `s`: a tool and its arguments, all aimed through the names
/// that move (a directory `d` and a file `f`, alternately the symlinks and the exchanged ones).
fn operation(s: usize, i: usize) -> (&'static str, Value) {
    let n = format!("{s}-{i}");
    let prev = format!("{s}-{}", i.saturating_sub(1));
    let (d, f) = if (i / 20).is_multiple_of(2) { ("flip", "flipfile") } else { ("swap", "swapfile") };
    match i % 20 {
        0 => ("read_file", json!({"path": format!("{d}/data.txt")})),
        1 => ("read_file", json!({"path": f})),
        2 => ("write_file", json!({"path": format!("{d}/data.txt"), "content": format!("written {n}\n")})),
        3 => ("append_file", json!({"path": format!("{d}/data.txt"), "content": format!("appended {n}\n")})),
        4 => ("write_file", json!({"path": format!("{d}/new-{n}.txt"), "content": "new\n"})),
        5 => ("rename_move", json!({"from": format!("{d}/new-{prev}.txt"), "to": format!("{d}/renamed-{n}.txt")})),
        6 => ("delete_path", json!({"path": format!("{d}/renamed-{prev}.txt")})),
        7 => ("append_file", json!({"path": f, "content": "appended\n"})),
        8 => ("write_file", json!({"path": f, "content": "written\n"})),
        9 => ("list_directory", json!({"path": d})),
        10 => ("grep", json!({"pattern": "TOP|inside|written", "path": d, "include_ignored": true})),
        11 => (
            "edit_file",
            json!({"path": format!("{d}/data.txt"), "start_line": 1, "new_text": format!("edited {n}\n")}),
        ),
        12 => ("create_folder", json!({"path": format!("{d}/sub")})),
        13 => ("delete_path", json!({"path": format!("{d}/sub"), "recursive": true})),
        14 => ("rename_move", json!({"from": format!("{d}/data.txt"), "to": "moved.txt", "overwrite": true})),
        15 => ("rename_move", json!({"from": "moved.txt", "to": format!("{d}/data.txt"), "overwrite": true})),
        16 => (
            "apply_patch",
            json!({"patch": format!("--- /dev/null\n+++ b/{d}/patched-{n}.txt\n@@ -0,0 +1 @@\n+patched\n")}),
        ),
        17 => ("search_files", json!({"pattern": "*", "path": d, "include_ignored": true})),
        18 => ("edit_file", json!({"path": f, "old_text": "written", "new_text": "edited"})),
        _ => ("delete_path", json!({"path": format!("{d}/d/inner.txt")})),
    }
}

#[derive(Debug, Default)]
struct Tally {
    succeeded: AtomicU64,
    failed: AtomicU64,
    leaks: std::sync::Mutex<Vec<String>>,
}

async fn stream(catalog: Arc<Catalog>, s: usize, count: usize, tally: Arc<Tally>) {
    for i in 0..count {
        let (name, arguments) = operation(s, i);
        let Value::Object(arguments) = arguments else { unreachable!() };
        let handler = catalog.tool(name).unwrap().handler.clone();
        let outcome = handler.call(arguments.clone(), ToolContext::new(ProtocolVersion::V2025_11_25)).await;
        let shown = match &outcome {
            Ok(result) => serde_json::to_string(result).unwrap(),
            Err(e) => e.to_string(),
        };
        if shown.contains(MARK) {
            tally.leaks.lock().unwrap().push(format!("{name} {}: {shown}", Value::Object(arguments)));
        }
        match outcome {
            Ok(result) if !result.is_error => tally.succeeded.fetch_add(1, Ordering::Relaxed),
            _ => tally.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// ≥ 5,000 mixed calls through symlinks that another thread keeps pointing in and out of the
/// project: nothing outside changes, nothing outside is read or listed.
#[actix_rt::test]
async fn a_symlink_swapped_during_calls_never_leads_outside() {
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = project.path();
    fs::create_dir(root.join("real")).unwrap();
    fs::write(root.join("real/data.txt"), "inside data\n").unwrap();
    fs::write(root.join("inside.txt"), "inside file\n").unwrap();
    fs::create_dir_all(root.join("flip/d")).unwrap();
    fs::write(root.join("flip/data.txt"), "inside data\n").unwrap();
    fs::write(root.join("flip/d/inner.txt"), "inside inner\n").unwrap();
    fs::write(root.join("flipfile"), "inside written\n").unwrap();
    // The outside tree holds what the tools would reach through the links if they escaped.
    fs::write(outside.path().join("data.txt"), SECRET).unwrap();
    fs::write(outside.path().join("secret.txt"), SECRET).unwrap();
    fs::write(outside.path().join(format!("{MARK}-NAME.txt")), SECRET).unwrap();
    fs::create_dir(outside.path().join("d")).unwrap();
    fs::write(outside.path().join("d/inner.txt"), SECRET).unwrap();
    let before = snapshot(outside.path());

    // The outside directory by relative path too, when both live in the same temp directory.
    let outside_canonical = outside.path().canonicalize().unwrap();
    let root_canonical = root.canonicalize().unwrap();
    let relative_out: Option<PathBuf> = (outside_canonical.parent() == root_canonical.parent())
        .then(|| Path::new("..").join(outside_canonical.file_name().unwrap()));
    let dir_targets: Vec<PathBuf> =
        [Some(PathBuf::from("real")), Some(outside_canonical.clone()), Some(PathBuf::from("real")), relative_out]
            .into_iter()
            .flatten()
            .collect();
    let file_targets = [PathBuf::from("real/data.txt"), outside_canonical.join("secret.txt")];
    symlink("real", root.join("swap")).unwrap();
    symlink("inside.txt", root.join("swapfile")).unwrap();
    symlink(&outside_canonical, root.join(".flip-alt")).unwrap();
    symlink(outside_canonical.join("secret.txt"), root.join(".flipfile-alt")).unwrap();

    let mut catalog = Catalog::new();
    register(&mut catalog, ProjectRoot::new(root).unwrap(), FileToolOptions { write: true, ..Default::default() });
    let catalog = Arc::new(catalog);

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, dir) = (stop.clone(), root_canonical.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let target = &dir_targets[(swaps as usize) % dir_targets.len()];
                relink(&dir, "swap", target, swaps);
                relink(&dir, "swapfile", &file_targets[(swaps as usize) % file_targets.len()], swaps);
                exchange(&dir, "flip", ".flip-alt");
                exchange(&dir, "flipfile", ".flipfile-alt");
                swaps += 1;
                std::thread::yield_now();
            }
            swaps
        })
    };

    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let calls = futures_util::future::join_all(
        (0..STREAMS).map(|s| stream(catalog.clone(), s, OPERATIONS / STREAMS, tally.clone())),
    );
    let finished = actix_rt::time::timeout(TEST_LIMIT, calls).await;
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let elapsed = started.elapsed();
    assert!(finished.is_ok(), "the calls finished within {TEST_LIMIT:?}");

    let after = snapshot(outside.path());
    let (succeeded, failed) = (tally.succeeded.load(Ordering::Relaxed), tally.failed.load(Ordering::Relaxed));
    eprintln!(
        "files_race: {} operations ({succeeded} succeeded, {failed} refused or failed) in {elapsed:.2?} \
         against {swaps} swaps of each name; outside checksum {:016x} before, {:016x} after",
        succeeded + failed,
        checksum(&before),
        checksum(&after)
    );
    let leaks = tally.leaks.lock().unwrap();
    assert!(leaks.is_empty(), "{} results carried outside content or names, e.g. {:?}", leaks.len(), leaks.first());
    assert_eq!(after, before, "nothing outside the project changed");
    assert_eq!(succeeded + failed, OPERATIONS as u64);
    // The race was real: the links moved many times, and calls both got through (inside) and
    // were refused (outside).
    assert!(swaps >= 100, "only {swaps} swaps");
    assert!(succeeded >= 500 && failed >= 500, "{succeeded} succeeded, {failed} failed");
}

/// A command's working directory under the same rename race: `flip` is judged a plain directory
/// of the project, and exchanged with a symlink out at any moment; the child must always run in
/// the inside directory (or the call be refused), never read the outside `data.txt`.
#[actix_rt::test]
async fn a_command_cwd_swapped_during_calls_never_leads_outside() {
    use mcpd_actors::tools::commands::{self, CommandOptions};

    // At least this many calls, and on until both outcomes were seen often (bounded: on a loaded
    // machine the swapper wins most races, and 20,000 calls once saw only 86 run inside).
    const CALLS: usize = 400;
    const MAX_CALLS: usize = 100_000;
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let outside_canonical = outside.path().canonicalize().unwrap();
    fs::create_dir(root.join("flip")).unwrap();
    fs::write(root.join("flip/data.txt"), "inside data\n").unwrap();
    fs::write(outside_canonical.join("data.txt"), SECRET).unwrap();
    symlink(&outside_canonical, root.join(".flip-alt")).unwrap();
    let before = snapshot(&outside_canonical);

    let mut catalog = Catalog::new();
    let options = CommandOptions { enabled: true, ..CommandOptions::default() };
    commands::register(&mut catalog, ProjectRoot::new(&root).unwrap(), options, Vec::new());
    let handler = catalog.tool("run_command").unwrap().handler.clone();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, dir) = (stop.clone(), root.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                exchange(&dir, "flip", ".flip-alt");
                swaps += 1;
                std::thread::yield_now();
            }
            swaps
        })
    };
    let started = Instant::now();
    let (mut ran, mut refused, mut leaks, mut reasons) = (0usize, 0usize, Vec::new(), BTreeMap::new());
    let mut count = 0usize;
    let calls = async {
        while count < MAX_CALLS && (count < CALLS || ran < 100 || refused < 100) {
            count += 1;
            let arguments = json!({"argv": ["cat", "data.txt"], "cwd": "flip"});
            let Value::Object(arguments) = arguments else { unreachable!() };
            let outcome = handler.call(arguments, ToolContext::new(ProtocolVersion::V2025_11_25)).await;
            let shown = match &outcome {
                Ok(result) => serde_json::to_string(result).unwrap(),
                Err(e) => e.to_string(),
            };
            if shown.contains(MARK) {
                leaks.push(shown);
            } else if shown.contains("inside data") {
                ran += 1;
            } else {
                refused += 1;
                *reasons.entry(shown.chars().take(120).collect::<String>()).or_insert(0) += 1;
            }
        }
    };
    let finished = actix_rt::time::timeout(TEST_LIMIT, calls).await;
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(finished.is_ok(), "the calls finished within {TEST_LIMIT:?}");
    eprintln!(
        "files_race (cwd): {count} commands ({ran} ran inside, {refused} refused) in {:.2?} against {swaps} exchanges",
        started.elapsed()
    );
    assert!(leaks.is_empty(), "{} commands ran outside, e.g. {:?}", leaks.len(), leaks.first());
    assert_eq!(snapshot(&outside_canonical), before);
    assert!(ran >= 100 && refused >= 100, "{ran} ran, {refused} refused: {reasons:?}");
    assert!(swaps >= 100, "only {swaps} exchanges");
}
