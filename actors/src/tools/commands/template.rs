//! Running an argv template for another module (a declared prompt's command): filled from the
//! arguments and run exactly like a declared tool, but with stdout and stderr kept apart — stdout
//! is the result, the end of stderr explains a failure.

use std::time::Duration;

use serde_json::{Map, Value};

use super::declared::{self, Piece};
use super::exec::{self, display_argv, Invocation, Outcome, Split};
use super::options::{session_environment, working_directory, CommandOptions};
use crate::tools::paths::ProjectRoot;

/// A command run for another module (a declared prompt): an argv template (see
/// [`DeclaredTool`]) filled from the arguments, run like a declared tool — no shell, the
/// allow-listed environment (with [`SESSION_ENV`] in a session), in `cwd` beneath the root,
/// its process group killed at the time limit.
#[derive(Debug)]
pub(crate) struct TemplateRun<'a> {
    /// The argv template.
    pub(crate) template: &'a [Vec<Piece>],
    /// The arguments.
    pub(crate) arguments: &'a Map<String, Value>,
    /// The working directory, relative to the root (default: the root).
    pub(crate) cwd: Option<&'a str>,
    /// The time limit (default: the options' default).
    pub(crate) timeout: Option<Duration>,
    /// The session of the call, if any.
    pub(crate) session: Option<&'a str>,
    /// The most stdout kept; more is an error.
    pub(crate) max_stdout: usize,
}

/// How much of a failed command's stderr an error quotes (its end).
const STDERR_EXCERPT: usize = 2048;

/// Runs `run` and returns its stdout when it exits with 0.
///
/// # Errors
/// A message for the user: the program could not start, it exited non-zero or was killed
/// (with the exit status and the end of its stderr), it ran out of time, or it printed more than
/// `max_stdout` bytes.
pub(crate) async fn run_template(
    root: &ProjectRoot,
    options: &CommandOptions,
    run: TemplateRun<'_>,
) -> Result<Vec<u8>, String> {
    let argv = declared::expand(run.template, run.arguments)?;
    let cwd = working_directory(root, run.cwd)?;
    let env = session_environment(options, run.session)?;
    let timeout = run.timeout.unwrap_or(options.default_timeout);
    let command = display_argv(&argv);
    let invocation = Invocation { argv, cwd, timeout, env };
    let outcome = exec::execute_into(invocation, Split::new(run.max_stdout, STDERR_EXCERPT)).await?;
    let Outcome { exit_code, signal, timed_out, capture, .. } = outcome;
    let (stderr, cut) = capture.stderr.tail_text();
    let stderr = match stderr.trim() {
        "" => String::new(),
        text if cut => format!("; stderr (its end): {text}"),
        text => format!("; stderr: {text}"),
    };
    let failure = if timed_out {
        Some(format!("the command timed out after {} s and was killed: {command}", timeout.as_secs_f64()))
    } else {
        match (exit_code, signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("the command failed with exit status {code}: {command}")),
            (None, Some(signal)) => Some(format!("the command was killed by signal {signal}: {command}")),
            (None, None) => Some(format!("the command ended without an exit status: {command}")),
        }
    };
    if let Some(failure) = failure {
        return Err(format!("{failure}{stderr}"));
    }
    if capture.stdout_total > run.max_stdout as u64 {
        return Err(format!(
            "the command printed {} bytes, over the limit of {} bytes: {command}",
            capture.stdout_total, run.max_stdout
        ));
    }
    Ok(capture.stdout)
}
