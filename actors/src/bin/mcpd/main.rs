//! The `mcpd` command: serve MCP over stdio (the default) or HTTP (`-p PORT`), or talk to a
//! remote server (`mcpd tools`, `mcpd call`, `mcpd task`, `mcpd login`, `mcpd logout`).
//!
//! Only this binary reads the environment and the command line: [`args`] parses it,
//! [`settings`] resolves flags, properties and environment into a typed configuration,
//! [`serve`] runs the library's runtime with it, [`client`] runs the client commands, and
//! [`login`] logs in to remotes (and out); both fail as [`failure`] says.
//! Everything else is the `mcpd_actors` library.

mod args;
mod client;
mod exposure;
mod failure;
mod login;
mod metadata;
mod serve;
mod settings;

use std::process::ExitCode;

use args::{Cli, Command};

/// A failure that ends the process with a one-line message.
pub(crate) struct Fatal {
    code: u8,
    message: String,
}

impl Fatal {
    /// A bad command line or configuration: exit 2.
    pub(crate) fn usage(message: impl Into<String>) -> Fatal {
        Fatal { code: 2, message: message.into() }
    }

    /// A failure while running: exit 1.
    pub(crate) fn runtime(message: impl Into<String>) -> Fatal {
        Fatal { code: 1, message: message.into() }
    }
}

fn main() -> ExitCode {
    // Client commands print results on stdout; keep their stderr to errors unless asked.
    let client =
        std::env::args().nth(1).is_some_and(|a| matches!(a.as_str(), "tools" | "call" | "task" | "login" | "logout"));
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(if client { "error" } else { "info" }))
        .target(env_logger::Target::Stderr)
        .init();
    let cli = match Cli::parse_or_explain() {
        Ok(Some(cli)) => cli,
        Ok(None) => return ExitCode::SUCCESS,
        Err(code) => return ExitCode::from(code),
    };
    let args = match cli.command {
        Some(Command::Serve(args)) => *args,
        Some(Command::Tools(args)) => {
            return client_command(|| async { crate::client::tools(args).await.map(|out| (out, false)) })
        }
        Some(Command::Call(args)) => return client_command(|| crate::client::call(args)),
        Some(Command::Task(args)) => {
            return client_command(|| async { crate::client::task(args).await.map(|out| (out, false)) })
        }
        Some(Command::Login(args)) => {
            return client_command(|| async { crate::login::login(args).await.map(|out| (out, false)) })
        }
        Some(Command::Logout(args)) => {
            return client_command(|| async { crate::login::logout(args).map(|out| (out, false)) })
        }
        None => cli.serve,
    };
    match serve::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(fatal) => {
            eprintln!("mcpd: {}", fatal.message);
            ExitCode::from(fatal.code)
        }
    }
}

/// Runs a client command in an actix system and turns its outcome into an exit code.
#[allow(clippy::print_stdout)] // printing the result is the command's job
fn client_command<F, Fut>(command: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(String, bool), crate::failure::Failure>>,
{
    match actix_rt::System::new().block_on(command()) {
        Ok((out, is_error)) => {
            if !out.is_empty() {
                println!("{out}");
            }
            if is_error {
                eprintln!("mcpd: the tool reported an error");
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(failure) => {
            eprintln!("mcpd: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}
