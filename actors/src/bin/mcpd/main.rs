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
        .format(log_line)
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

/// A log line as env_logger writes it (`[time LEVEL target] message`), naming the trace and
/// span of the operation being served when there is one (telemetry on): `[… trace_id=… span_id=…]`.
fn log_line(buf: &mut env_logger::fmt::Formatter, record: &log::Record<'_>) -> std::io::Result<()> {
    use std::io::Write as _;
    let style = buf.default_level_style(record.level());
    write!(buf, "[{} {style}{:<5}{style:#} {}", buf.timestamp(), record.level(), record.target())?;
    if let Some((trace, span)) = mcpd_actors::telemetry::current_ids() {
        write!(buf, " trace_id={trace} span_id={span}")?;
    }
    writeln!(buf, "] {}", record.args())
}

/// Runs a client command in an actix system and turns its outcome into an exit code. With
/// telemetry configured by the `OTEL_*` variables its requests are traced, as children of the
/// `TRACEPARENT` (and `TRACESTATE`) the environment names, and exported before it exits.
#[allow(clippy::print_stdout)] // printing the result is the command's job
fn client_command<F, Fut>(command: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(String, bool), crate::failure::Failure>>,
{
    let parent = match mcpd::telemetry::TelemetryConfig::read(|name| std::env::var(name).ok(), None) {
        Ok(None) => None,
        Ok(Some(config)) => {
            if let Err(e) = mcpd_actors::telemetry::init(&config) {
                eprintln!("mcpd: {e}");
                return ExitCode::from(2);
            }
            let env = |name: &str| std::env::var(name).ok();
            mcpd_actors::telemetry::remote_parent(env("TRACEPARENT").as_deref(), env("TRACESTATE").as_deref())
        }
        Err(e) => {
            eprintln!("mcpd: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = actix_rt::System::new().block_on(mcpd_actors::telemetry::Scoped::new(command(), parent));
    mcpd_actors::telemetry::shutdown();
    match outcome {
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
