//! Helpers for tests that drive the real `mcpd` binary (or the `everything` conformance fixture,
//! `examples/everything.rs`) as a child process: locating the binaries (building the fixture if
//! needed), an HTTP child that is killed on drop, waiting for a child to announce that it is
//! ready, bounded short-lived runs, and a tiny blocking HTTP/1.1 client over
//! `std::net::TcpStream`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use super::eventually::poll_until_blocking;

/// How long an HTTP child may take to print its `listening on` line.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// The default deadline of a short-lived run.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(20);
/// Read and write timeout of the HTTP client.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// The line the binary prints on stderr once the HTTP endpoint is bound.
const LISTENING: &str = "mcpd: listening on http://";

/// The `mcpd` binary. It belongs to this test crate's package, so Cargo builds it before the
/// tests, with the same features, and names it in `CARGO_BIN_EXE_mcpd`.
pub(crate) fn mcpd_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcpd"))
}

/// The path of `target/<profile>/examples/everything`, the conformance fixture
/// (`examples/everything.rs`). It belongs to the root package, whose examples `cargo test
/// --workspace` builds but `cargo test -p mcpd-actors` does not, so the first call in a test
/// process runs `cargo build -p mcpd --example everything` (a no-op when it is up to date), with
/// `--release` when this test executable is a release build.
pub(crate) fn everything_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| built_artifact(&["-p", "mcpd", "--example", "everything"], Path::new("examples/everything")))
        .clone()
}

/// Runs `cargo build <args>` (plus `--release` when this test executable lives in a release
/// directory) and returns `target/<profile>/<relative><EXE_SUFFIX>`, which must then exist.
fn built_artifact(args: &[&str], relative: &Path) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash> → target/<profile>
    let profile_dir = exe.parent().and_then(Path::parent).expect("test executable is in target/<profile>/deps");
    let mut binary = profile_dir.join(relative).into_os_string();
    binary.push(std::env::consts::EXE_SUFFIX);
    let binary = PathBuf::from(binary);
    // Always ask cargo: it is a no-op when the binary is fresh, and it never runs a stale one.
    cargo_build(args, exe.to_string_lossy().contains("/release/"));
    assert!(binary.is_file(), "{} not found even after `cargo build {}`", binary.display(), args.join(" "));
    binary
}

fn cargo_build(args: &[&str], release: bool) {
    let what = format!("cargo build {}", args.join(" "));
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_the_test) {
            cmd.env_remove(&name);
        }
    }
    if release {
        cmd.arg("--release");
    }
    let output = cmd.output().unwrap_or_else(|e| panic!("cannot run `{what}`: {e}"));
    assert!(
        output.status.success(),
        "`{what}` failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether `cargo test` set this variable for the test process (the package's manifest path and
/// metadata, the paths of its binaries). A nested cargo must not inherit them: build scripts that
/// watch one (ring's watches `CARGO_MANIFEST_DIR`) would count as changed and rebuild, with
/// everything above them up to the fixture, and the next `cargo test` would rebuild them back.
fn set_by_cargo_for_the_test(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

/// An empty directory used as the default working directory of children, so that no stray
/// `./mcp.properties` is picked up.
pub(crate) fn empty_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcpd-empty-cwd");
        std::fs::create_dir_all(&dir).expect("create empty working directory");
        dir
    })
    .clone()
}

/// A `Command` for the binary with a clean environment for mcpd: no `MCPD_KEYS`, no
/// `RUST_LOG` (so the binary's default `info` applies), no `BROWSER`, working directory an
/// empty directory, and `XDG_CONFIG_HOME` a directory of the build's (so the default OAuth
/// credentials file is never the user's own).
pub(crate) fn mcpd_command() -> Command {
    let mut cmd = Command::new(mcpd_binary());
    cmd.env_remove("MCPD_KEYS").env_remove("RUST_LOG").env_remove("RUST_BACKTRACE").env_remove("BROWSER");
    cmd.env("XDG_CONFIG_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcpd-test-config"));
    cmd.current_dir(empty_dir());
    cmd
}

/// A `Command` for the `everything` fixture with the same clean environment as [`mcpd_command`].
pub(crate) fn everything_command() -> Command {
    let mut cmd = Command::new(everything_binary());
    cmd.env_remove("MCPD_KEYS").env_remove("RUST_LOG").env_remove("RUST_BACKTRACE").current_dir(empty_dir());
    cmd
}

/// Spawns a thread that reads `source` to its end.
fn drain<R: std::io::Read + Send + 'static>(mut source: R) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = source.read_to_end(&mut bytes);
        bytes
    })
}

/// Runs `cmd` to completion: writes `stdin` and closes it, collects stdout and stderr, waits
/// at most `timeout` (then kills the child and panics with what it printed).
pub(crate) fn run_with_timeout(cmd: &mut Command, stdin: &[u8], timeout: Duration) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    let bytes = stdin.to_vec();
    // The child may exit without reading everything; a broken pipe is not our failure.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
        drop(input);
    });
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = match poll_until_blocking(timeout, || child.try_wait().expect("try_wait")) {
        Ok(status) => status,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            let out = stdout.join().unwrap_or_default();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not exit within {timeout:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            );
        }
    };
    let _ = writer.join();
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

/// A `mcpd -p 0 …` (or `everything -p 0`) child serving HTTP; killed when dropped.
#[derive(Debug)]
pub(crate) struct HttpChild {
    child: Child,
    /// The port it bound.
    pub(crate) port: u16,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpChild {
    /// Spawns `mcpd <args> -p 0` with [`mcpd_command`]'s environment.
    pub(crate) fn spawn(args: &[&str]) -> HttpChild {
        let mut cmd = mcpd_command();
        cmd.args(args);
        HttpChild::spawn_command(cmd)
    }

    /// Spawns `mcpd serve --no-file-tools --file-resources -d <project> --tools <declarations> -p 0`:
    /// a server of what a declarations file declares (tools, prompts, resources) and the
    /// project's files as resources.
    pub(crate) fn spawn_declared(project: &std::path::Path, declarations: &std::path::Path) -> HttpChild {
        let (project, declarations) = (project.to_str().unwrap(), declarations.to_str().unwrap());
        HttpChild::spawn(&["serve", "--no-file-tools", "--file-resources", "-d", project, "--tools", declarations])
    }

    /// Spawns the `everything` conformance fixture (`everything -p 0`, streamable-HTTP
    /// sessions on) with [`everything_command`]'s environment.
    pub(crate) fn spawn_everything() -> HttpChild {
        HttpChild::spawn_command(everything_command())
    }

    /// Spawns a prepared command (env, working directory, args), adding `-p 0`, and waits for
    /// the `listening on` line.
    pub(crate) fn spawn_command(mut cmd: Command) -> HttpChild {
        cmd.args(["-p", "0"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = channel::<u16>();
        let pipe = child.stderr.take().expect("stderr");
        let lines = stderr.clone();
        std::thread::spawn(move || {
            // Keep reading to EOF so the child never blocks on a full pipe.
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = listening_port(&line) {
                    let _ = tx.send(port);
                }
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        let port = await_announcement(&mut child, &rx, STARTUP_TIMEOUT, &format!("{cmd:?}"), || {
            format!("--- stderr ---\n{}", stderr.lock().unwrap_or_else(|p| p.into_inner()).join("\n"))
        });
        HttpChild { child, port, stderr }
    }

    /// The MCP endpoint URL.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Sends the child a signal (`kill -<signal> <pid>`), e.g. `HUP`.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill").arg(format!("-{signal}")).arg(self.child.id().to_string()).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -{signal} failed");
    }

    /// Waits at most `within` for the child to exit (after [`HttpChild::signal`], say): its
    /// status, or `None` when it is still running.
    pub(crate) fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        poll_until_blocking(within, || self.child.try_wait().ok().flatten()).ok()
    }

    /// The stderr lines read so far.
    pub(crate) fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for HttpChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until a child that announces on its output that it is ready (with its port or URL)
/// has done so: `announced` receives what the threads reading its output found. Fails the test
/// with `output()` when the child exits first, or when `within` passes (then it is killed).
pub(crate) fn await_announcement<T>(
    child: &mut Child,
    announced: &Receiver<T>,
    within: Duration,
    what: &str,
    output: impl Fn() -> String,
) -> T {
    let outcome = poll_until_blocking(within, || match announced.try_recv() {
        Ok(found) => Some(Ok(found)),
        Err(_) => child.try_wait().ok().flatten().map(Err),
    });
    match outcome {
        Ok(Ok(found)) => found,
        Ok(Err(status)) => {
            // The readers stop (and the channel disconnects) at the end of its output.
            let _ = announced.recv_timeout(Duration::from_secs(1));
            panic!("{what} exited ({status}) before it was ready; output:\n{}", output())
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not say it was ready within {within:?}; output:\n{}", output())
        }
    }
}

/// The port in `mcpd: listening on http://HOST:PORT/mcp …`.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split(LISTENING).nth(1)?;
    let authority = rest.split('/').next()?;
    authority.rsplit(':').next()?.parse().ok()
}

/// A blocking HTTP/1.1 request to `127.0.0.1:port` with `Connection: close`. Returns the
/// status, the headers (names lower-cased) and the body.
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect 127.0.0.1:{port}: {e}"));
    stream.set_read_timeout(Some(HTTP_TIMEOUT)).expect("read timeout");
    stream.set_write_timeout(Some(HTTP_TIMEOUT)).expect("write timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("write request");
    stream.flush().expect("flush request");

    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("read status line");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut response_headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read header");
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            response_headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| response_headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut bytes = Vec::new();
    if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        bytes.resize(length, 0);
        reader.read_exact(&mut bytes).expect("read body");
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line).expect("read chunk size");
            let size_hex = size_line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_hex, 16).unwrap_or_else(|_| panic!("bad chunk size {size_line:?}"));
            if size == 0 {
                break;
            }
            let start = bytes.len();
            bytes.resize(start + size, 0);
            reader.read_exact(&mut bytes[start..]).expect("read chunk");
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).expect("read chunk end");
        }
    } else {
        reader.read_to_end(&mut bytes).expect("read body to EOF");
    }
    (status, response_headers, String::from_utf8(bytes).expect("UTF-8 body"))
}

/// The value of a response header (by lower-case name).
pub(crate) fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// Parses every non-empty stdout line as JSON, panicking with the whole output on failure.
pub(crate) fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    let text = String::from_utf8(stdout.to_vec()).expect("stdout is UTF-8");
    text.lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}\n--- stdout ---\n{text}"))
        })
        .collect()
}

/// Newline-terminated lines of JSON values, ready for stdin.
pub(crate) fn ndjson(messages: &[serde_json::Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for message in messages {
        bytes.extend_from_slice(message.to_string().as_bytes());
        bytes.push(b'\n');
    }
    bytes
}

/// Text of `bytes` for assertion messages.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
