//! What the test modules share: servers and clients to test against, child processes and the
//! interop peers, and bounded waiting.

pub(crate) mod arrivals;
pub(crate) mod eventually;
pub(crate) mod hostile;
pub(crate) mod interop_servers;
pub(crate) mod mock_http;
pub(crate) mod nginx;
pub(crate) mod oidc;
pub(crate) mod otlp;
pub(crate) mod process;
pub(crate) mod py_session;
pub(crate) mod python;
pub(crate) mod server;
pub(crate) mod sse;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use process::text;

/// The workspace root, where `scripts/` lives (this crate belongs to `actors/`).
pub(crate) fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("actors/ is inside the workspace")
}

/// Runs `bash scripts/<script>` in the workspace root with `env` (a provisioning script of the
/// interop peers) and returns the path it prints as its last line, which must be a file.
pub(crate) fn run_setup_script(script: &str, env: &[(&str, &OsStr)]) -> Result<PathBuf, String> {
    let output = Command::new("bash")
        .arg(workspace_root().join("scripts").join(script))
        .envs(env.iter().copied())
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run scripts/{script}: {e}"))?;
    if !output.status.success() {
        return Err(format!("scripts/{script} failed ({}):\n{}", output.status, text(&output.stderr)));
    }
    let stdout = text(&output.stdout);
    let path = stdout.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim).unwrap_or_default();
    if path.is_empty() || !Path::new(path).is_file() {
        return Err(format!("scripts/{script} printed no usable path:\n{stdout}\n{}", text(&output.stderr)));
    }
    Ok(PathBuf::from(path))
}

/// A script of the interop peers, `actors/tests/interop/<name>`.
pub(crate) fn interop_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop").join(name)
}
