//! How the command tools behave ([`CommandOptions`]) and what every command is given from that
//! before it runs: its environment (the allow-listed variables, and [`SESSION_ENV`] for a call in
//! a session) and its working directory, judged and opened beneath the project root.
//!
//! Every way of running a command — `run_command` and declared tools (the module's root), a
//! declared prompt's command (`template`), a declared resource's fixed command (`fixed`) — starts
//! from these rules, so they sit in a file of their own that each of those files imports.

use std::ffi::OsString;
use std::time::Duration;

use super::exec::WorkDir;
use crate::tools::paths::ProjectRoot;

/// The variable that carries the session id to a command run for a call in a session.
pub const SESSION_ENV: &str = "MCPD_SESSION_ID";

/// The variables passed through by default.
pub const DEFAULT_ENV_ALLOW: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// How the command tools behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOptions {
    /// Offer `run_command` (any program). Declared tools are offered regardless.
    pub enabled: bool,
    /// Let `run_command` take a `shell` command line (run with `sh -c`).
    pub allow_shell: bool,
    /// The only environment variables a command sees (from the server's environment, or set by
    /// the call).
    pub env_allow: Vec<String>,
    /// The time limit when the call gives none.
    pub default_timeout: Duration,
    /// The longest time limit a call may ask for.
    pub max_timeout: Duration,
    /// How much of the output's end a result carries.
    pub max_output_bytes: usize,
    /// How much of each command's output is kept for `read_command_log` (its beginning).
    pub max_log_bytes: usize,
    /// How many logs are kept (the oldest is forgotten first).
    pub max_logs: usize,
}

impl Default for CommandOptions {
    fn default() -> Self {
        CommandOptions {
            enabled: false,
            allow_shell: false,
            env_allow: DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect(),
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 16 * 1024,
            max_log_bytes: 8 * 1024 * 1024,
            max_logs: 32,
        }
    }
}

/// The environment of a command: the allow-listed variables of the server's environment, then
/// the call's own values (allow-listed names only).
pub(super) fn environment(
    options: &CommandOptions,
    requested: &[(String, String)],
) -> Result<Vec<(OsString, OsString)>, String> {
    let refused: Vec<&str> =
        requested.iter().map(|(k, _)| k.as_str()).filter(|k| !options.env_allow.iter().any(|a| a == k)).collect();
    if !refused.is_empty() {
        return Err(format!(
            "environment variables not allowed: {} (allowed: {})",
            refused.join(", "),
            options.env_allow.join(", ")
        ));
    }
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    for name in &options.env_allow {
        if let Some((_, value)) = requested.iter().find(|(k, _)| k == name) {
            env.push((name.into(), value.into()));
        } else if let Some(value) = std::env::var_os(name) {
            env.push((name.into(), value));
        }
    }
    Ok(env)
}

/// The environment of a declared command: the allow-listed variables, and `MCPD_SESSION_ID`
/// exactly when the call is in a session (never passed through from the server's own).
pub(super) fn session_environment(
    options: &CommandOptions,
    session: Option<&str>,
) -> Result<Vec<(OsString, OsString)>, String> {
    let mut env = environment(options, &[])?;
    env.retain(|(name, _)| name != SESSION_ENV);
    if let Some(id) = session {
        env.push((SESSION_ENV.into(), id.into()));
    }
    Ok(env)
}

pub(super) fn working_directory(root: &ProjectRoot, cwd: Option<&str>) -> Result<WorkDir, String> {
    let given = cwd.unwrap_or(".");
    let inside = root.existing(given).map_err(|e| format!("cwd: {e}"))?;
    if !root.dir().metadata(inside.path()).is_ok_and(|meta| meta.is_dir()) {
        return Err(format!("cwd: {given:?} is not a directory"));
    }
    WorkDir::open(root, &inside).map_err(|e| {
        if crate::tools::paths::is_escape(&e) {
            format!("cwd: {}", crate::tools::paths::PathError::Outside { path: given.to_owned() })
        } else {
            format!("cwd: cannot open {given:?}: {e}")
        }
    })
}
