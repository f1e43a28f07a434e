//! The Python interpreter of the interop tests: `MCPD_TEST_PYTHON` when set, else the venv that
//! `scripts/setup-python.sh` provisions (the official MCP SDK, mcp==2.3.0, and the reference
//! Prometheus/OpenMetrics parser, prometheus-client). When Python cannot be provisioned the tests
//! fail, unless `MCPD_SKIP_INTEROP=1`, which makes them skip with a notice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use super::workspace_root;

/// The Python statement that checks for the MCP SDK.
pub(crate) const MCP_SDK: &str = "import mcp, mcp.client";

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `MCPD_TEST_PYTHON`, else the venv of `scripts/setup-python.sh` (run once per test process).
fn interpreter() -> Result<PathBuf, String> {
    static INTERPRETER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INTERPRETER
        .get_or_init(|| match std::env::var_os("MCPD_TEST_PYTHON") {
            Some(python) => Ok(PathBuf::from(python)),
            None => setup_venv(),
        })
        .clone()
}

fn setup_venv() -> Result<PathBuf, String> {
    let output = Command::new("bash")
        .arg(workspace_root().join("scripts/setup-python.sh"))
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cannot run scripts/setup-python.sh: {e}"))?;
    if !output.status.success() {
        return Err(format!("scripts/setup-python.sh failed ({}):\n{}", output.status, lossy(&output.stderr)));
    }
    let stdout = lossy(&output.stdout);
    let python = stdout.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim).unwrap_or_default();
    if python.is_empty() || !Path::new(python).exists() {
        return Err(format!(
            "scripts/setup-python.sh printed no usable python path:\n{stdout}\n{}",
            lossy(&output.stderr)
        ));
    }
    Ok(PathBuf::from(python))
}

/// The interpreter, provided it runs `imports` (e.g. [`MCP_SDK`]).
fn provision(imports: &str) -> Result<PathBuf, String> {
    let python = interpreter()?;
    let check = Command::new(&python)
        .args(["-c", imports])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !check.status.success() {
        let what = if imports == MCP_SDK { "import the MCP SDK".to_owned() } else { format!("run `{imports}`") };
        return Err(format!("{} cannot {what}:\n{}", python.display(), lossy(&check.stderr)));
    }
    Ok(python)
}

/// The interpreter able to run `imports` (a Python statement such as [`MCP_SDK`]), provisioned
/// and checked once per test process; `None` (with a notice) when it cannot be provisioned and
/// `MCPD_SKIP_INTEROP=1`, a panic otherwise.
pub(crate) fn python_with(imports: &'static str) -> Option<PathBuf> {
    static CHECKED: OnceLock<Mutex<HashMap<&'static str, Result<PathBuf, String>>>> = OnceLock::new();
    let result = {
        let mut checked = CHECKED.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        checked.entry(imports).or_insert_with(|| provision(imports)).clone()
    };
    match result {
        Ok(python) => Some(python),
        Err(reason) if std::env::var("MCPD_SKIP_INTEROP").as_deref() == Ok("1") => {
            eprintln!("NOTICE: skipping Python interop test (MCPD_SKIP_INTEROP=1): {reason}");
            None
        }
        Err(reason) => {
            panic!("cannot provision Python for the interop tests (set MCPD_SKIP_INTEROP=1 to skip): {reason}")
        }
    }
}
