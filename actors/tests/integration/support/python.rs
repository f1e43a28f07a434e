//! The Python interpreter of the interop tests: `MCPD_TEST_PYTHON` when set, else the venv that
//! `scripts/setup-python.sh` provisions (the official MCP SDK, mcp==2.3.0, and the reference
//! Prometheus/OpenMetrics parser, prometheus-client). When Python cannot be provisioned the tests
//! fail, unless `MCPD_SKIP_INTEROP=1`, which makes them skip with a notice.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use super::process::text;
use super::run_setup_script;

/// The Python statement that checks for the MCP SDK.
pub(crate) const MCP_SDK: &str = "import mcp, mcp.client";

/// `MCPD_TEST_PYTHON`, else the venv of `scripts/setup-python.sh` (run once per test process).
fn interpreter() -> Result<PathBuf, String> {
    static INTERPRETER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INTERPRETER
        .get_or_init(|| match std::env::var_os("MCPD_TEST_PYTHON") {
            Some(python) => Ok(PathBuf::from(python)),
            None => run_setup_script("setup-python.sh", &[]),
        })
        .clone()
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
        return Err(format!("{} cannot {what}:\n{}", python.display(), text(&check.stderr)));
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
