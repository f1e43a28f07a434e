//! The server under test, as a child process of its own so that its memory and CPU are its
//! alone: this bench's binary started again with `--serve-child`, running mcpd's runtime as
//! `mcpd serve -s --no-file-tools` does (streamable-HTTP sessions, the built-in tools, no share
//! per identity below the session cap). It prints `listening PORT` and serves until its stdin
//! closes. The parent reads its resident memory and CPU time from `/proc`.

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcpd_actors::{ListenerConfig, Mcpd, SessionConfig, ShareConfig, TransportMode};

/// The flag that makes this binary the server.
pub(crate) const SERVE_FLAG: &str = "--serve-child";

/// Kernel clock ticks per second for `/proc/*/stat` (USER_HZ, 100 on Linux).
const CLK_TCK: f64 = 100.0;

/// Runs the server (child side): `--serve-child WORKERS MAX_SESSIONS`.
pub(crate) fn serve(args: &[String]) -> Result<(), String> {
    let number = |i: usize, what: &str| -> Result<usize, String> {
        args.get(i).and_then(|a| a.parse().ok()).ok_or_else(|| format!("{SERVE_FLAG}: no {what}"))
    };
    let (workers, max_sessions) = (number(0, "worker count")?, number(1, "session cap")?);
    actix_rt::System::new().block_on(async move {
        let mut catalog = mcpd::Catalog::new();
        mcpd::builtin::register(&mut catalog);
        let options = mcpd::ServerOptions { sessions: true, ..Default::default() };
        let server = Arc::new(mcpd::McpServer::new(options, catalog));
        let sessions = SessionConfig {
            // Longer than the bench: no session ends while it runs.
            idle_timeout: Duration::from_secs(3600),
            max_sessions,
            ..SessionConfig::default()
        };
        let shares = ShareConfig { sessions: Some(max_sessions), ..ShareConfig::default() };
        let config = ListenerConfig {
            port: 0,
            mode: TransportMode::StreamableHttp,
            workers,
            sessions,
            shares,
            ..Default::default()
        };
        let runtime = Mcpd::new(server, config.clone(), Vec::new());
        let status = runtime.start(config).await.map_err(|e| format!("the server did not start: {e}"))?;
        println!("listening {}", status.port);
        // Serve until the parent closes stdin (or exits).
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            let _ = tx.send(());
        });
        let _ = rx.await;
        let _ = runtime.stop(false).await;
        Ok(())
    })
}

/// The server child, seen from the parent.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) port: u16,
}

/// `taskset` when asked to pin and it is there.
fn pinned(cpu: Option<usize>) -> Command {
    match cpu {
        Some(cpu) if Command::new("taskset").arg("-V").stdout(Stdio::null()).status().is_ok() => {
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", &cpu.to_string()]);
            cmd
        }
        _ => Command::new(std::env::current_exe().unwrap_or_default()),
    }
}

impl Server {
    /// Starts the server child, on `cpu` when given.
    pub(crate) fn start(cpu: Option<usize>, workers: usize, max_sessions: usize) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this bench's binary: {e}"))?;
        let mut cmd = pinned(cpu);
        if cmd.get_program() == "taskset" {
            cmd.arg(&exe);
        }
        let mut child = cmd
            .args([SERVE_FLAG, &workers.to_string(), &max_sessions.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the server child: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("the server child has no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map_err(|e| format!("the server child: {e}"))?;
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| format!("the server child said {line:?} instead of its port"))?;
        Ok(Server { child, stdin, port })
    }

    fn proc(&self, file: &str) -> Result<String, String> {
        let path = format!("/proc/{}/{file}", self.child.id());
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    }

    /// Resident memory, in bytes.
    pub(crate) fn rss(&self) -> Result<u64, String> {
        let status = self.proc("status")?;
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or("no VmRSS in /proc/PID/status")?;
        Ok(kib * 1024)
    }

    /// CPU time used so far (user + system), in seconds.
    pub(crate) fn cpu_seconds(&self) -> Result<f64, String> {
        let stat = self.proc("stat")?;
        // The fields after the command name (which may hold spaces) start after its ')'.
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line: 12 and 13 after the ')'.
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).ok_or("malformed /proc/PID/stat");
        Ok((ticks(11)? + ticks(12)?) as f64 / CLK_TCK)
    }

    /// Ends the server: stdin closed, then killed if it has not exited within 10 s.
    pub(crate) fn stop(mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pins this process (every thread it has and will have) to `cpu`, when `taskset` is there.
pub(crate) fn pin_self(cpu: usize) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", &cpu.to_string(), &std::process::id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
