//! Running one command: spawned directly (never through a shell unless the caller built an
//! `sh -c` argv), in its own process group, with an empty environment plus what the caller
//! passes, stdin closed, stdout and stderr captured, under a time limit, in a working directory
//! held open ([`WorkDir`]); and how an argv is shown in the messages about it
//! ([`display_argv`]), one way for every caller of this file.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mcpd::telemetry::semconv::Failure;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::telemetry::{self, OperationSpan};
use crate::tools::paths::{Inside, ProjectRoot};

/// How long the output pipes may stay open after the command itself ended (a background
/// process of its group still holding them) before the group is killed.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How long to wait for a killed process to be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(5);

/// The working directory of a command: a handle of the directory, opened beneath the project
/// root through its capability (so no symlink or rename can have led it outside), which the
/// child enters **through the handle**: on Linux the child changes into `/proc/self/fd/N` (the
/// kernel follows the descriptor to the directory it was opened on, wherever that is now). The
/// descriptor is close-on-exec: the child holds it only between its fork and its exec.
///
/// `fchdir` in a `pre_exec` hook would do the same, but `pre_exec` is `unsafe` (the workspace
/// denies it); std spawns with the `/proc` path just as with any other. Where `/proc` is not
/// mounted (or off Linux) the child is given the directory's path, judged inside the root just
/// before: that path is resolved once more by the child, which this handle cannot confine.
#[derive(Debug)]
pub(super) struct WorkDir {
    dir: cap_std::fs::Dir,
    path: PathBuf,
}

impl WorkDir {
    /// Opens `inside` through the root's capability.
    ///
    /// # Errors
    /// When it cannot be opened as a directory beneath the root (an escape is
    /// [`crate::tools::paths::is_escape`]).
    pub(super) fn open(root: &ProjectRoot, inside: &Inside) -> std::io::Result<Self> {
        let dir = root.dir().open_dir(inside.path())?;
        Ok(WorkDir { dir, path: root.absolute(inside) })
    }

    /// The directory as the child enters it.
    pub(super) fn for_child(&self) -> PathBuf {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::{AsFd, AsRawFd};
            static PROC_FD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            let fd = self.dir.as_fd().as_raw_fd();
            // Never 0-2: the child replaces those with its pipes before it changes directory.
            if fd > 2 && *PROC_FD.get_or_init(|| std::path::Path::new("/proc/self/fd").is_dir()) {
                return PathBuf::from(format!("/proc/self/fd/{fd}"));
            }
        }
        self.path.clone()
    }
}

/// What to run.
#[derive(Debug)]
pub(super) struct Invocation {
    /// The program and its arguments (never empty).
    pub(super) argv: Vec<String>,
    /// The working directory (opened beneath the project root), kept open until the spawn.
    pub(super) cwd: WorkDir,
    /// The time limit.
    pub(super) timeout: Duration,
    /// The whole environment of the command (nothing else is inherited).
    pub(super) env: Vec<(OsString, OsString)>,
}

/// Quotes argv for display (not for a shell).
pub(super) fn display_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b)) {
                a.clone()
            } else {
                format!("{a:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What came out: stdout and stderr merged, in the order their chunks were read.
#[derive(Debug)]
pub(super) struct Capture {
    /// The first `max_log` bytes.
    pub(super) log: Vec<u8>,
    /// Every byte the command wrote.
    pub(super) total: u64,
    tail: Vec<u8>,
    max_log: usize,
    max_tail: usize,
}

impl Capture {
    pub(super) fn new(max_log: usize, max_tail: usize) -> Self {
        Capture { log: Vec::new(), total: 0, tail: Vec::new(), max_log, max_tail }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.max_log.saturating_sub(self.log.len()).min(chunk.len());
        self.log.extend_from_slice(&chunk[..room]);
        let keep = self.max_tail.saturating_add(4);
        if chunk.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
        } else {
            self.tail.extend_from_slice(chunk);
            if self.tail.len() > keep.saturating_mul(2) {
                self.tail.drain(..self.tail.len() - keep);
            }
        }
    }

    /// The last `max_tail` bytes (starting on a UTF-8 boundary, decoded lossily) and whether
    /// that is less than the whole output.
    pub(super) fn tail_text(&self) -> (String, bool) {
        let mut start = self.tail.len().saturating_sub(self.max_tail);
        let limit = (start + 3).min(self.tail.len());
        while start > 0 && start < limit && is_continuation(self.tail[start]) {
            start += 1;
        }
        let kept = &self.tail[start..];
        (String::from_utf8_lossy(kept).into_owned(), self.total > kept.len() as u64)
    }
}

/// Where a command's output goes as it is read.
pub(super) trait OutputSink {
    /// A chunk of stdout.
    fn stdout(&mut self, chunk: &[u8]);
    /// A chunk of stderr.
    fn stderr(&mut self, chunk: &[u8]);
}

/// The tools' capture merges the two streams.
impl OutputSink for Capture {
    fn stdout(&mut self, chunk: &[u8]) {
        self.push(chunk);
    }

    fn stderr(&mut self, chunk: &[u8]) {
        self.push(chunk);
    }
}

/// stdout and stderr apart (for a prompt, whose stdout is its text): the first `max_stdout`
/// bytes of stdout, the last `max_stderr` of stderr.
#[derive(Debug)]
pub(super) struct Split {
    /// The beginning of stdout.
    pub(super) stdout: Vec<u8>,
    /// Every byte written to stdout.
    pub(super) stdout_total: u64,
    /// The end of stderr.
    pub(super) stderr: Capture,
    max_stdout: usize,
}

impl Split {
    pub(super) fn new(max_stdout: usize, max_stderr: usize) -> Self {
        Split { stdout: Vec::new(), stdout_total: 0, stderr: Capture::new(0, max_stderr), max_stdout }
    }
}

impl OutputSink for Split {
    fn stdout(&mut self, chunk: &[u8]) {
        self.stdout_total += chunk.len() as u64;
        let room = self.max_stdout.saturating_sub(self.stdout.len()).min(chunk.len());
        self.stdout.extend_from_slice(&chunk[..room]);
    }

    fn stderr(&mut self, chunk: &[u8]) {
        self.stderr.push(chunk);
    }
}

/// A UTF-8 continuation byte (`10xxxxxx`): not the start of a character.
pub(super) fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// How the command ended.
#[derive(Debug)]
pub(super) struct Outcome<C = Capture> {
    /// The exit code (none when a signal ended it).
    pub(super) exit_code: Option<i32>,
    /// The signal that ended it (Unix).
    pub(super) signal: Option<i32>,
    /// It ran out of time and was killed.
    pub(super) timed_out: bool,
    /// From spawn to the end of its output.
    pub(super) duration: Duration,
    /// Its output.
    pub(super) capture: C,
}

/// Kills the command's process group when dropped (a cancelled call, a server time limit)
/// unless disarmed.
#[derive(Debug)]
struct GroupGuard {
    pgid: Option<u32>,
}

impl GroupGuard {
    fn kill(&self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // Never 0 (our own group) or 1; the child was spawned as the leader of its own group.
            if pgid > 1 {
                // SAFETY: killpg only sends a signal; the group is the command's own. This is the
                // one unsafe block of the workspace (the lint denies any other).
                #[allow(unsafe_code, reason = "libc::killpg: a timed-out command dies with its process group")]
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
            }
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(pipe) => match pipe.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

fn describe(status: Option<std::io::Result<ExitStatus>>) -> (Option<i32>, Option<i32>) {
    match status {
        Some(Ok(status)) => {
            #[cfg(unix)]
            let signal = std::os::unix::process::ExitStatusExt::signal(&status);
            #[cfg(not(unix))]
            let signal = None;
            (status.code(), signal)
        }
        _ => (None, None),
    }
}

/// Runs the command to its end (or its time limit).
///
/// The command leads a new process group; when it runs out of time, or when this future is
/// dropped before it ends, the whole group is killed. When the command ends but a process it
/// left behind keeps the output pipes open for more than a second, that group is killed too;
/// background processes that redirected their output elsewhere are left alone.
///
/// # Errors
/// When the program cannot be started (not found, not executable...).
pub(super) async fn execute(invocation: Invocation, max_log: usize, max_tail: usize) -> Result<Outcome, String> {
    execute_into(invocation, Capture::new(max_log, max_tail)).await
}

/// [`execute`] with the output going to `capture`.
///
/// # Errors
/// When the program cannot be started.
pub(super) async fn execute_into<C: OutputSink>(invocation: Invocation, mut capture: C) -> Result<Outcome<C>, String> {
    let Invocation { argv, cwd, timeout, env } = invocation;
    let (program, args) = argv.split_first().ok_or("argv is empty")?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(cwd.for_child())
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let span = process_span(program, &mut command);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        let message = format!("could not start {program:?}: {e}");
        span.fail(Failure::Other, &message);
        message
    })?;
    span.set_attribute("process.pid", || i64::from(child.id().unwrap_or_default()).into());
    // The child is in its directory now.
    drop(cwd);
    // Declared after `child`, so dropped before it: the group dies while its leader is unreaped.
    let mut group = GroupGuard { pgid: child.id() };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut status: Option<std::io::Result<ExitStatus>> = None;
    let mut timed_out = false;
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        let wake = drain_until.unwrap_or(deadline);
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf) => match read {
                Some(n) => capture.stdout(&out_buf[..n]),
                None => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf) => match read {
                Some(n) => capture.stderr(&err_buf[..n]),
                None => stderr = None,
            },
            ended = child.wait(), if status.is_none() => {
                status = Some(ended);
                drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            },
            () = tokio::time::sleep_until(wake) => {
                if status.is_none() {
                    // Out of time: kill the group while its leader is still unreaped.
                    timed_out = true;
                    group.kill();
                    let _ = child.start_kill();
                    status = Some(match tokio::time::timeout(REAP_LIMIT, child.wait()).await {
                        Ok(ended) => ended,
                        Err(_) => Err(std::io::Error::other("the killed process was not reaped in time")),
                    });
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                } else {
                    // Ended, but something of its group still holds the pipes.
                    group.kill();
                    break;
                }
            },
        }
    }
    group.disarm();
    let (exit_code, signal) = describe(status);
    if let Some(code) = exit_code {
        span.set_attribute("process.exit.code", || i64::from(code).into());
    }
    match (timed_out, exit_code) {
        (true, _) => span.fail(Failure::Other, &format!("killed after its time limit of {} s", timeout.as_secs_f64())),
        (false, Some(0)) => {}
        (false, Some(code)) => span.fail(Failure::Other, &format!("exited with code {code}")),
        (false, None) => span.fail(Failure::Other, &format!("ended by signal {}", signal.unwrap_or_default())),
    }
    span.end();
    let duration = started.elapsed();
    log::debug!("command {program:?} ended (exit code {exit_code:?}, signal {signal:?}) after {duration:?}");
    Ok(Outcome { exit_code, signal, timed_out, duration, capture })
}

/// The span of a command's process (INTERNAL, a child of the call that runs it): the program's
/// file name, its pid and exit code (not its arguments, which may carry what a caller sent). The
/// command is told the span's context in `TRACEPARENT` (and `TRACESTATE`), the environment
/// variables OpenTelemetry's SDKs read, so what it traces joins the call's trace.
fn process_span(program: &str, command: &mut tokio::process::Command) -> OperationSpan {
    let name = std::path::Path::new(program).file_name().map_or_else(|| program.into(), |n| n.to_string_lossy());
    let span = telemetry::child_span(SpanKind::Internal, "command", || {
        vec![KeyValue::new("process.executable.name", name.into_owned())]
    });
    if let Some(trace) = span.trace_headers() {
        command.env("TRACEPARENT", &trace.traceparent);
        if let Some(state) = &trace.tracestate {
            command.env("TRACESTATE", state);
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child enters the directory that was opened beneath the root, not whatever its path
    /// leads to by the time of the spawn: here the path was swapped for a symlink to a directory
    /// outside the project in between.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_child_enters_the_opened_directory_not_its_path() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("sub")).unwrap();
        std::fs::write(project.path().join("sub/inside.txt"), "").unwrap();
        std::fs::write(outside.path().join("outside.txt"), "").unwrap();
        let root = ProjectRoot::new(project.path()).unwrap();
        let cwd = WorkDir::open(&root, &root.existing("sub").unwrap()).unwrap();
        std::fs::rename(project.path().join("sub"), project.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("sub")).unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let invocation = Invocation {
            argv: vec!["ls".into()],
            cwd,
            timeout: Duration::from_secs(30),
            env: vec![("PATH".into(), path)],
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = runtime.block_on(execute(invocation, 4096, 4096)).unwrap();
        assert_eq!(outcome.exit_code, Some(0), "{:?}", String::from_utf8_lossy(&outcome.capture.log));
        assert_eq!(String::from_utf8_lossy(&outcome.capture.log), "inside.txt\n");
    }

    #[test]
    fn the_tail_starts_on_a_character_boundary() {
        let mut capture = Capture::new(4, 5);
        capture.push("aé€".as_bytes()); // 1 + 2 + 3 bytes
        assert_eq!(capture.log, b"a\xc3\xa9\xe2");
        let (tail, truncated) = capture.tail_text();
        assert_eq!(tail, "é€");
        assert!(truncated);
        let mut small = Capture::new(100, 100);
        small.push(b"hello");
        assert_eq!(small.tail_text(), ("hello".to_owned(), false));
        let mut big = Capture::new(10, 8);
        for _ in 0..100 {
            big.push(b"0123456789");
        }
        assert_eq!(big.total, 1000);
        assert_eq!(big.tail_text(), ("23456789".to_owned(), true));
    }
}
