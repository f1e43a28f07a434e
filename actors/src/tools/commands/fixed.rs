//! A fixed command whose output is data, not a tool result: what a declared resource backed by a
//! `command` runs. The same execution as declared tools (argv checked like theirs, no shell, a
//! working directory confined to the project, the allow-listed environment, a process group
//! killed on timeout), but with no arguments: an argv element may not hold a `{placeholder}`.

use std::time::Duration;

use super::declared::{parse_element, Piece};
use super::exec::{self, Invocation};
use super::options::{environment, working_directory, CommandOptions};
use crate::tools::paths::ProjectRoot;

/// A checked fixed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedCommand {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The working directory, relative to the project root (default: the root).
    pub cwd: Option<String>,
    /// The time limit.
    pub timeout: Duration,
}

impl FixedCommand {
    /// Checks `argv` like a declared tool's (a program, no NUL byte) and refuses placeholders
    /// (there are no arguments to fill them).
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn new(argv: Vec<String>, cwd: Option<String>, timeout: Duration) -> Result<FixedCommand, String> {
        match argv.first() {
            None => return Err("argv is empty: it needs at least the program".into()),
            Some(program) if program.is_empty() => return Err("argv[0] (the program) is empty".into()),
            Some(_) => {}
        }
        if argv.iter().any(|a| a.contains('\0')) || cwd.as_deref().is_some_and(|c| c.contains('\0')) {
            return Err("argv or cwd contains a NUL byte".into());
        }
        for (i, element) in argv.iter().enumerate() {
            if let Some(Piece::Arg(name)) = parse_element(element).iter().find(|p| matches!(p, Piece::Arg(_))) {
                return Err(format!(
                    "argv[{i}] ({element:?}) uses the placeholder {{{name}}}, but a resource has no arguments"
                ));
            }
        }
        if timeout.is_zero() {
            return Err("timeoutSeconds must be at least 1".into());
        }
        Ok(FixedCommand { argv, cwd, timeout })
    }

    /// Runs it; its output (stdout and stderr merged) when it exits with 0 within its time
    /// and writes at most `max_bytes`.
    ///
    /// # Errors
    /// A message saying why there is no output: not started, timed out, a non-zero exit or a
    /// signal (with the end of the output), or more output than `max_bytes`.
    pub async fn output(
        &self,
        root: &ProjectRoot,
        options: &CommandOptions,
        max_bytes: usize,
    ) -> Result<Vec<u8>, String> {
        let cwd = working_directory(root, self.cwd.as_deref())?;
        let env = environment(options, &[])?;
        let invocation = Invocation { argv: self.argv.clone(), cwd, timeout: self.timeout, env };
        let outcome = exec::execute(invocation, max_bytes.saturating_add(1), 512).await?;
        let (tail, _) = outcome.capture.tail_text();
        let program = &self.argv[0];
        if outcome.timed_out {
            return Err(format!("{program:?} did not finish within {} s (killed)", self.timeout.as_secs()));
        }
        match (outcome.exit_code, outcome.signal) {
            (Some(0), _) => {}
            (Some(code), _) if tail.trim().is_empty() => {
                return Err(format!("{program:?} exited with code {code} (no output)"))
            }
            (Some(code), _) => return Err(format!("{program:?} exited with code {code}: {}", tail.trim_end())),
            (None, Some(signal)) => return Err(format!("{program:?} was killed by signal {signal}")),
            (None, None) => return Err(format!("{program:?} ended without an exit code")),
        }
        if outcome.capture.total > max_bytes as u64 {
            return Err(format!(
                "{program:?} wrote {} bytes, over the limit of {max_bytes} bytes",
                outcome.capture.total
            ));
        }
        Ok(outcome.capture.log)
    }
}
