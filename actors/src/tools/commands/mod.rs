//! Command tools: `run_command` (a program run directly, never through a shell unless the
//! configuration allows `shell`), `read_command_log` (pages through the full output of recent
//! commands), and command tools declared in configuration ([`DeclaredTool`]).
//!
//! Every command:
//! - runs in a working directory confined to the project root: judged by
//!   [`ProjectRoot::existing`], opened through the root's capability (beneath the root, so no
//!   symlink swapped in can lead out), and entered by the child through that open handle
//!   (`exec::WorkDir`), never by resolving the path again;
//! - starts from an **empty** environment plus the allow-listed variables
//!   ([`CommandOptions::env_allow`]) taken from the server's own environment; a `run_command`
//!   call may set allow-listed names only;
//! - has stdin closed (`/dev/null`);
//! - leads its own process group, which is killed (SIGKILL) when the time limit passes or the
//!   call is cancelled (or stopped by the server's own time limit);
//! - has stdout and stderr **merged** into one output, in the order their chunks were read (the
//!   relative order of the two streams is approximate; within each it is exact).
//!
//! A declared tool (and a declared prompt's command) called in a session also sees
//! `MCPD_SESSION_ID=<id>` ([`SESSION_ENV`]): the `Mcp-Session-Id` of a streamable-HTTP session
//! or the id of an HTTP+SSE connection. Stateless calls and stdio have no session, and the
//! variable is then absent (also when the server's own environment has one).
//!
//! The result carries only the tail of the output (`max_output_bytes`); the first
//! [`CommandOptions::max_log_bytes`] of it are kept in memory as a log under a random id
//! (`logId`) that `read_command_log` pages through. The last [`CommandOptions::max_logs`]
//! logs are kept; older ones are forgotten. A non-zero exit, a signal or a timeout is
//! `isError: true` (the structured result is still there).
//!
//! This file registers the tools and reads their calls; the rest is a file per job, each
//! imported from here and none importing this one: `options` (the options, a command's
//! environment and working directory), `exec` (running one command), `logs` (the kept logs),
//! `declared` (the declarations file and argv templates), `template` and `fixed` (commands run
//! for declared prompts and resources).

mod declared;
mod exec;
mod fixed;
mod logs;
mod options;
mod template;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpd::catalog::LiveCatalog;
use mcpd::config::ToolFilter;
use mcpd::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use mcpd::{Catalog, ToolContext, ToolError};
use serde_json::{json, Map, Value};

pub use declared::{load_declarations, load_declared, Declarations, DeclaredTool};
pub(crate) use declared::{parse_element, Piece};
pub use fixed::FixedCommand;
pub use options::{CommandOptions, DEFAULT_ENV_ALLOW, SESSION_ENV};
pub(crate) use template::{run_template, TemplateRun};

use super::paths::ProjectRoot;
use declared::CompiledTool;
use exec::{display_argv, Invocation, Outcome};
use logs::{CommandLog, LogStore};
use options::{environment, session_environment, working_directory};

/// The default and largest page of `read_command_log`.
const DEFAULT_PAGE: usize = 64 * 1024;
const MAX_PAGE: usize = 1024 * 1024;

#[derive(Debug)]
struct Shared {
    root: ProjectRoot,
    options: CommandOptions,
    logs: LogStore,
}

/// Adds the command tools: `run_command` when `options.enabled`, every valid declared tool
/// (an invalid one is logged and skipped), and `read_command_log` when either is there. The
/// returned handle replaces the declared tools later ([`CommandTools::replace_declared`]).
pub fn register(
    catalog: &mut Catalog,
    root: ProjectRoot,
    options: CommandOptions,
    declared: Vec<DeclaredTool>,
) -> CommandTools {
    let shared = Arc::new(Shared { root, logs: LogStore::new(options.max_logs), options });
    let mut any = false;
    if shared.options.enabled {
        let s = shared.clone();
        catalog.add_tool(
            run_command_definition(&shared.options),
            move |args: Map<String, Value>, _ctx: ToolContext| {
                let s = s.clone();
                async move { run_command(&s, &args).await }
            },
        );
        any = true;
    }
    let names = add_declared(catalog, &shared, declared);
    if any || !names.is_empty() {
        add_read_log(catalog, &shared);
    }
    CommandTools { shared, declared: Arc::new(Mutex::new(names)) }
}

/// The command tools of a catalog, to replace its declared tools when the tools file changes.
#[derive(Debug, Clone)]
pub struct CommandTools {
    shared: Arc<Shared>,
    /// The declared tools in the catalog now.
    declared: Arc<Mutex<Vec<String>>>,
}

impl CommandTools {
    /// Replaces the declared tools in `live` with `declared` (those `filter` allows; invalid
    /// ones are logged and skipped), sharing the logs of `read_command_log` (added when it was
    /// not there). Clients hear `tools/list_changed` when the list changed. Returns the names
    /// of the declared tools now offered.
    pub fn replace_declared(
        &self,
        live: &LiveCatalog,
        declared: Vec<DeclaredTool>,
        filter: &ToolFilter,
    ) -> Vec<String> {
        let declared: Vec<DeclaredTool> = declared.into_iter().filter(|tool| filter.allows(&tool.name)).collect();
        let mut current = self.declared.lock().unwrap_or_else(PoisonError::into_inner);
        let mut names = Vec::new();
        live.update(|catalog| {
            for name in current.iter() {
                catalog.remove_tool(name);
            }
            names = add_declared(catalog, &self.shared, declared);
            if !names.is_empty() && catalog.tool(READ_LOG).is_none() && filter.allows(READ_LOG) {
                add_read_log(catalog, &self.shared);
            }
        });
        current.clone_from(&names);
        names
    }
}

/// Adds the declared tools that compile (the others are logged); their names.
fn add_declared(catalog: &mut Catalog, shared: &Arc<Shared>, declared: Vec<DeclaredTool>) -> Vec<String> {
    let mut names = Vec::new();
    for tool in declared {
        let name = tool.name.clone();
        match declared::compile(tool) {
            Ok(compiled) => {
                let definition = declared_definition(&compiled.tool);
                let compiled = Arc::new(compiled);
                let s = shared.clone();
                catalog.add_tool(definition, move |args: Map<String, Value>, ctx: ToolContext| {
                    let (s, compiled) = (s.clone(), compiled.clone());
                    let session = ctx.session_id().map(str::to_owned);
                    async move { run_declared(&s, &compiled, args, session.as_deref()).await }
                });
                names.push(name);
            }
            Err(e) => log::error!("command tool {name:?} is not offered: {e}"),
        }
    }
    names
}

/// The name of the tool that pages through command logs.
const READ_LOG: &str = "read_command_log";

fn add_read_log(catalog: &mut Catalog, shared: &Arc<Shared>) {
    let s = shared.clone();
    catalog.add_tool(read_log_definition(&shared.options), move |args: Map<String, Value>, _ctx: ToolContext| {
        let s = s.clone();
        async move {
            read_page(&s, &args)
                .map(CallToolResult::structured)
                .map_err(|e| ToolError::failed(format!("read_command_log: {e}")))
        }
    });
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "exitCode": {"type": ["integer", "null"], "description": "The exit code; null when a signal ended the process."},
            "signal": {"type": "integer", "description": "The signal that ended the process, when one did (Unix)."},
            "timedOut": {"type": "boolean", "description": "True when the time limit passed and the process group was killed."},
            "durationMs": {"type": "integer"},
            "output": {"type": "string", "description": "The end of stdout and stderr merged (lossy UTF-8)."},
            "truncated": {"type": "boolean", "description": "True when output is only the end: read the rest with read_command_log."},
            "totalBytes": {"type": "integer", "description": "How many bytes the command wrote in all."},
            "logId": {"type": "string", "description": "The id of the full output for read_command_log."}
        },
        "required": ["exitCode", "timedOut", "durationMs", "output", "truncated", "totalBytes", "logId"]
    })
}

fn run_command_definition(options: &CommandOptions) -> Tool {
    let allowed = options.env_allow.join(", ");
    let max_secs = options.max_timeout.as_secs().max(1);
    let default_secs = options.default_timeout.as_secs().max(1);
    let mut properties = json!({
        "argv": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "The program and its arguments, e.g. [\"cargo\", \"test\", \"--lib\"]. Run directly, NOT through a shell: no pipes, redirections, globs or $VARIABLES; each element is passed to the program exactly as given."
        },
        "cwd": {"type": "string", "description": "The working directory, relative to the project root (default: the root). It cannot leave the project."},
        "timeout_seconds": {
            "type": "integer", "minimum": 1, "maximum": max_secs,
            "description": format!("Kill the command (and every process it started) after this many seconds (default {default_secs}).")
        },
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": format!("Environment variables to set. Commands start from an empty environment; only these names are allowed: {allowed}.")
        }
    });
    let mut description = format!(
        "Runs a program in the project directory and returns its exit code and the end of its output (stdout and stderr merged, at most {} bytes). \
         The program is run directly, not through a shell. stdin is empty. The full output is kept under logId: when truncated is true, page through it with read_command_log. \
         A non-zero exit code or a timeout is reported as an error.",
        options.max_output_bytes
    );
    let required = if options.allow_shell {
        properties["shell"] = json!({
            "type": "string",
            "description": "Instead of argv: a command line run with `sh -c` (pipes, redirections and globs work)."
        });
        description.push_str(" Pass either argv or shell.");
        json!([])
    } else {
        json!(["argv"])
    };
    Tool::new(
        "run_command",
        description,
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}),
    )
    .with_title("Run a command")
    .with_output_schema(output_schema())
    // A long build or test run becomes a task for clients that opted into tasks.
    .with_task_support(mcpd::tasks::TaskSupport::Optional)
    .with_annotations(ToolAnnotations {
        title: None,
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(false),
        open_world_hint: Some(true),
    })
}

fn read_log_definition(options: &CommandOptions) -> Tool {
    Tool::new(
        READ_LOG,
        format!(
            "Reads the full output of a recent command (run_command or a command tool) by its logId, one page at a time: \
             pass the nextOffset of one page as the offset of the next until eof is true. Offsets are bytes; pages never split a character. \
             The last {} logs are kept, each up to {} bytes (logTruncated tells when the output was longer).",
            options.max_logs, options.max_log_bytes
        ),
        json!({
            "type": "object",
            "properties": {
                "log_id": {"type": "string", "description": "The logId of a command result."},
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (default 0)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": format!("Most bytes to return (default {DEFAULT_PAGE}).")}
            },
            "required": ["log_id"],
            "additionalProperties": false
        }),
    )
    .with_title("Read a command's output")
    .with_output_schema(json!({
        "type": "object",
        "properties": {
            "logId": {"type": "string"},
            "command": {"type": "string"},
            "offset": {"type": "integer", "description": "Where this page starts."},
            "nextOffset": {"type": "integer", "description": "Where the next page starts (the end of this one)."},
            "eof": {"type": "boolean", "description": "True when this page reaches the end of the log."},
            "text": {"type": "string"},
            "loggedBytes": {"type": "integer", "description": "The size of the kept log."},
            "totalBytes": {"type": "integer", "description": "How many bytes the command wrote in all."},
            "logTruncated": {"type": "boolean", "description": "True when the command wrote more than was kept."}
        },
        "required": ["logId", "command", "offset", "nextOffset", "eof", "text", "loggedBytes", "totalBytes", "logTruncated"]
    }))
    .with_annotations(ToolAnnotations::read_only())
}

fn declared_definition(tool: &DeclaredTool) -> Tool {
    let mut definition = Tool::new(tool.name.clone(), tool.description.clone(), tool.input_schema.clone())
        .with_output_schema(output_schema())
        .with_annotations(tool.annotations.clone().unwrap_or(ToolAnnotations {
            title: None,
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            idempotent_hint: Some(false),
            open_world_hint: Some(true),
        }));
    if let Some(title) = &tool.title {
        definition = definition.with_title(title.clone());
    }
    if let Some(support) = tool.task_support {
        definition = definition.with_task_support(support);
    }
    definition
}

/// Reads `run_command`'s arguments.
fn parse_run(shared: &Shared, args: &Map<String, Value>) -> Result<Invocation, String> {
    let options = &shared.options;
    let known = ["argv", "shell", "cwd", "timeout_seconds", "env"];
    let unknown: Vec<&str> = args.keys().map(String::as_str).filter(|k| !known.contains(k)).collect();
    if !unknown.is_empty() {
        return Err(format!("unknown arguments: {} (expected argv, cwd, timeout_seconds, env)", unknown.join(", ")));
    }
    let argv = match (args.get("argv"), args.get("shell")) {
        (Some(_), Some(_)) => return Err("pass either argv or shell, not both".into()),
        (_, Some(_)) if !options.allow_shell => {
            return Err("shell command lines are not allowed on this server: pass the program and its arguments as argv (run directly, without a shell)".into())
        }
        (None, Some(Value::String(line))) => {
            if line.trim().is_empty() {
                return Err("shell is empty".into());
            }
            vec!["sh".to_owned(), "-c".to_owned(), line.clone()]
        }
        (None, Some(_)) => return Err("shell must be a string".into()),
        (Some(Value::Array(items)), None) => {
            let argv = items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or("argv must be an array of strings")?;
            match argv.first() {
                None => return Err("argv is empty: it needs at least the program".into()),
                Some(program) if program.is_empty() => return Err("argv[0] (the program) is empty".into()),
                Some(_) => argv,
            }
        }
        (Some(_), None) => return Err("argv must be an array of strings".into()),
        (None, None) => return Err("missing required argument argv (the program and its arguments)".into()),
    };
    if argv.iter().any(|a| a.contains('\0')) {
        return Err("argv contains a NUL byte".into());
    }
    let cwd = match args.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(cwd)) => Some(cwd.as_str()),
        Some(_) => return Err("cwd must be a string".into()),
    };
    let cwd = working_directory(&shared.root, cwd)?;
    let max_secs = options.max_timeout.as_secs().max(1);
    let timeout = match args.get("timeout_seconds") {
        None | Some(Value::Null) => options.default_timeout,
        Some(value) => match value.as_u64() {
            Some(secs) if (1..=max_secs).contains(&secs) => Duration::from_secs(secs),
            _ => return Err(format!("timeout_seconds must be an integer from 1 to {max_secs}")),
        },
    };
    let requested: Vec<(String, String)> = match args.get("env") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(vars)) => vars
            .iter()
            .map(|(k, v)| match v.as_str() {
                Some(s) if !s.contains('\0') && !k.is_empty() && !k.contains(['=', '\0']) => {
                    Ok((k.clone(), s.to_owned()))
                }
                Some(_) => Err(format!("env: {k:?} is not a valid variable (no '=' or NUL allowed)")),
                None => Err(format!("env: the value of {k} must be a string")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("env must be an object of strings".into()),
    };
    let env = environment(options, &requested)?;
    Ok(Invocation { argv, cwd, timeout, env })
}

async fn run_command(shared: &Shared, args: &Map<String, Value>) -> Result<CallToolResult, ToolError> {
    let invocation = parse_run(shared, args).map_err(|e| ToolError::failed(format!("run_command: {e}")))?;
    run(shared, invocation).await
}

async fn run_declared(
    shared: &Shared,
    compiled: &CompiledTool,
    args: Map<String, Value>,
    session: Option<&str>,
) -> Result<CallToolResult, ToolError> {
    let name = &compiled.tool.name;
    let instance = Value::Object(args);
    let errors: Vec<String> = compiled
        .validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                format!("- {e}")
            } else {
                format!("- at {at}: {e}")
            }
        })
        .collect();
    if !errors.is_empty() {
        return Err(ToolError::failed(format!(
            "{name}: the arguments do not match the input schema; nothing was run:\n{}",
            errors.join("\n")
        )));
    }
    let Value::Object(args) = instance else { unreachable!("built from a map above") };
    let argv = declared::expand(&compiled.template, &args).map_err(|e| ToolError::failed(format!("{name}: {e}")))?;
    let cwd = working_directory(&shared.root, compiled.tool.cwd.as_deref())
        .map_err(|e| ToolError::failed(format!("{name}: {e}")))?;
    let env = session_environment(&shared.options, session).map_err(|e| ToolError::failed(format!("{name}: {e}")))?;
    let timeout = compiled.timeout.unwrap_or(shared.options.default_timeout);
    run(shared, Invocation { argv, cwd, timeout, env }).await
}

async fn run(shared: &Shared, invocation: Invocation) -> Result<CallToolResult, ToolError> {
    let command = display_argv(&invocation.argv);
    let timeout = invocation.timeout;
    let options = &shared.options;
    let outcome =
        exec::execute(invocation, options.max_log_bytes, options.max_output_bytes).await.map_err(ToolError::failed)?;
    Ok(result(shared, command, timeout, outcome))
}

fn result(shared: &Shared, command: String, timeout: Duration, outcome: Outcome) -> CallToolResult {
    let Outcome { exit_code, signal, timed_out, duration, capture } = outcome;
    let (output, truncated) = capture.tail_text();
    let total = capture.total;
    let log_id = shared.logs.insert(CommandLog { command: command.clone(), data: capture.log, total });
    let mut structured = json!({
        "exitCode": exit_code,
        "timedOut": timed_out,
        "durationMs": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        "output": output,
        "truncated": truncated,
        "totalBytes": total,
        "logId": log_id,
    });
    if let Some(signal) = signal {
        structured["signal"] = json!(signal);
    }
    let failure = if timed_out {
        Some(format!(
            "Command timed out after {} s and was killed with its process group (exit code: none): {command}",
            timeout.as_secs_f64()
        ))
    } else {
        match (exit_code, signal) {
            (Some(0), _) => None,
            (Some(code), _) => Some(format!("Command failed with exit code {code}: {command}")),
            (None, Some(signal)) => Some(format!("Command was killed by signal {signal} (exit code: none): {command}")),
            (None, None) => Some(format!("Command ended without an exit code: {command}")),
        }
    };
    match failure {
        None => CallToolResult::structured(structured),
        Some(summary) => {
            let more = if truncated {
                format!(
                    "\nOutput (last {} of {total} bytes; full log: read_command_log log_id={log_id}):\n",
                    output.len()
                )
            } else {
                "\nOutput:\n".to_owned()
            };
            CallToolResult {
                content: vec![
                    ContentBlock::text(format!("{summary}{more}{output}")),
                    ContentBlock::text(structured.to_string()),
                ],
                structured_content: Some(structured),
                is_error: true,
                meta: None,
            }
        }
    }
}

fn read_page(shared: &Shared, args: &Map<String, Value>) -> Result<Value, String> {
    let known = ["log_id", "offset", "limit"];
    if let Some(unknown) = args.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown argument {unknown} (expected log_id, offset, limit)"));
    }
    let id = match args.get("log_id") {
        Some(Value::String(id)) => id,
        Some(_) => return Err("log_id must be a string".into()),
        None => return Err("missing required argument log_id".into()),
    };
    let number = |name: &str, default: u64| match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| format!("{name} must be a non-negative integer")),
    };
    let offset = number("offset", 0)?;
    let limit = number("limit", DEFAULT_PAGE as u64)?;
    if limit == 0 || limit > MAX_PAGE as u64 {
        return Err(format!("limit must be from 1 to {MAX_PAGE}"));
    }
    let log = shared.logs.get(id).ok_or_else(|| {
        format!("unknown log id {id:?}: only the logs of the last {} commands are kept", shared.logs.capacity())
    })?;
    let len = log.data.len();
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    if offset > len {
        return Err(format!("offset {offset} is past the end of the log ({len} bytes)"));
    }
    let limit = usize::try_from(limit).unwrap_or(MAX_PAGE);
    let (start, end) = logs::page_bounds(&log.data, offset, limit);
    Ok(json!({
        "logId": id,
        "command": log.command,
        "offset": start,
        "nextOffset": end,
        "eof": end >= len,
        "text": String::from_utf8_lossy(&log.data[start..end]),
        "loggedBytes": len,
        "totalBytes": log.total,
        "logTruncated": log.total > len as u64,
    }))
}
