//! Prompts declared in the declarations file (`--tools FILE`, its `prompts` section), served by
//! `prompts/list`, `prompts/get` and `completion/complete`.
//!
//! ```json
//! { "prompts": [
//!   { "name": "review", "description": "Review one file.",
//!     "arguments": [ { "name": "path", "required": true },
//!                    { "name": "focus", "enum": ["bugs", "style"] } ],
//!     "messages": [ { "role": "user", "text": "Review {path}, looking for {focus}." },
//!                   { "role": "user", "resource": "{path}" } ] },
//!   { "name": "recent", "description": "The last commits.",
//!     "arguments": [ { "name": "count", "values": ["5", "10"] } ],
//!     "argv": ["git", "log", "--oneline", "-n", "{count}"], "timeoutSeconds": 10 } ] }
//! ```
//!
//! A prompt renders either **message templates** (`text` with `{argument}` placeholders — an
//! absent optional argument is empty — or `resource`: a project-relative path, placeholders
//! allowed, whose text file is embedded as a resource, read through the project root's
//! capability exactly like the file tools, escapes refused with their message, at most
//! [`PromptOptions::max_embed_bytes`]) or a **command** (`argv` with placeholders, `cwd`,
//! `timeoutSeconds`: run exactly like a declared command tool — no shell, the allow-listed
//! environment plus `MCPD_SESSION_ID` in a session, its process group killed at the time limit)
//! whose stdout (at most [`PromptOptions::max_output_bytes`]) is the text of one user message,
//! or, when it is a JSON array, the messages themselves (`output`: `auto`, `text`, `messages`).
//!
//! Arguments are checked before anything is read or run: an unknown one, a missing required
//! one, a non-string value or a value outside an argument's `enum` is `-32602` naming it. A
//! command that fails is an error with its exit status and the end of its stderr. An argument's
//! `enum` (the only values) or `values` (suggestions) are its completions, filtered by prefix.

mod declared;
mod render;

use std::collections::BTreeMap;
use std::sync::Arc;

use mcpd::catalog::Completer;
use mcpd::model::{GetPromptResult, PromptMessage};
use mcpd::{Catalog, ToolContext, ToolError};
use serde_json::{Map, Value};

pub use declared::{load_prompts, DeclaredArgument, DeclaredPrompt, MessageTemplate, OutputKind, MAX_ARGUMENT_VALUES};

use super::commands::{run_template, CommandOptions, TemplateRun};
use super::paths::ProjectRoot;
use declared::{Body, CompiledPrompt, Part};

/// Limits and switches of declared prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptOptions {
    /// The largest project file a message template embeds.
    pub max_embed_bytes: u64,
    /// The most a prompt's command may print on stdout.
    pub max_output_bytes: usize,
    /// Whether message templates may embed project files (false when no project file is
    /// reachable on the server: the file tools and file resources are off).
    pub embed_files: bool,
}

impl Default for PromptOptions {
    fn default() -> Self {
        PromptOptions { max_embed_bytes: 1024 * 1024, max_output_bytes: 1024 * 1024, embed_files: true }
    }
}

/// What every prompt handler shares.
#[derive(Debug)]
struct Shared {
    root: ProjectRoot,
    commands: CommandOptions,
    options: PromptOptions,
}

/// Adds the declared prompts (an invalid one is logged and skipped) and their completions;
/// returns how many were added. Completions of references that are not these prompts go to the
/// completer the catalog had before.
pub fn register(
    catalog: &mut Catalog,
    root: ProjectRoot,
    commands: CommandOptions,
    options: PromptOptions,
    prompts: Vec<DeclaredPrompt>,
) -> usize {
    let shared = Arc::new(Shared { root, commands, options });
    let mut completions: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut added = 0;
    for prompt in prompts {
        let name = prompt.name.clone();
        let compiled = match declared::compile(prompt) {
            Ok(compiled) => Arc::new(compiled),
            Err(e) => {
                log::error!("prompt {name:?} is not offered: {e}");
                continue;
            }
        };
        let values: BTreeMap<String, Vec<String>> = compiled
            .arguments
            .iter()
            .filter(|a| !a.candidates().is_empty())
            .map(|a| (a.name.clone(), a.candidates().to_vec()))
            .collect();
        if !values.is_empty() {
            completions.insert(name, values);
        }
        let s = shared.clone();
        let definition = compiled.definition.clone();
        catalog.add_prompt(definition, move |args: Map<String, Value>, ctx: ToolContext| {
            let (s, compiled) = (s.clone(), compiled.clone());
            let session = ctx.session_id().map(str::to_owned);
            async move { render(&s, &compiled, args, session.as_deref()).await }
        });
        added += 1;
    }
    if !completions.is_empty() {
        let previous = catalog.completer_handle();
        catalog.set_completer(move |reference, argument, prefix| {
            complete(&completions, previous.as_ref(), reference, argument, prefix)
        });
    }
    added
}

/// The values of a declared prompt's argument that start with `prefix` (the core caps the
/// answer at 100 and reports the total); other references go to `previous`.
fn complete(
    completions: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    previous: Option<&Completer>,
    reference: &Map<String, Value>,
    argument: &str,
    prefix: &str,
) -> Vec<String> {
    let is_prompt = reference.get("type").and_then(Value::as_str) == Some("ref/prompt");
    let prompt = reference.get("name").and_then(Value::as_str).and_then(|name| completions.get(name));
    match (is_prompt, prompt) {
        (true, Some(arguments)) => arguments
            .get(argument)
            .map(|values| values.iter().filter(|v| v.starts_with(prefix)).cloned().collect())
            .unwrap_or_default(),
        _ => previous.map(|c| c.complete(reference, argument, prefix)).unwrap_or_default(),
    }
}

async fn render(
    shared: &Shared,
    prompt: &CompiledPrompt,
    arguments: Map<String, Value>,
    session: Option<&str>,
) -> Result<GetPromptResult, ToolError> {
    render::check_arguments(prompt, &arguments)
        .map_err(|m| ToolError::Protocol(mcpd::ProtocolError::InvalidParams(m)))?;
    let name = &prompt.definition.name;
    let messages = match &prompt.body {
        Body::Messages(parts) => {
            let mut messages = Vec::with_capacity(parts.len());
            for (role, part) in parts {
                let content = match part {
                    Part::Text(pieces) => mcpd::model::ContentBlock::text(render::fill(pieces, &arguments)),
                    Part::Resource(pieces) => embed(shared, name, render::fill(pieces, &arguments)).await?,
                };
                messages.push(PromptMessage { role: *role, content });
            }
            messages
        }
        Body::Command { template, cwd, timeout, output } => {
            let run = TemplateRun {
                template,
                arguments: &arguments,
                cwd: cwd.as_deref(),
                timeout: *timeout,
                session,
                max_stdout: shared.options.max_output_bytes,
            };
            let stdout = run_template(&shared.root, &shared.commands, run)
                .await
                .map_err(|e| ToolError::failed(format!("prompt {name}: {e}")))?;
            render::output_messages(stdout, *output).map_err(|e| ToolError::failed(format!("prompt {name}: {e}")))?
        }
    };
    Ok(GetPromptResult { description: prompt.definition.description.clone(), messages })
}

/// Embeds a project file on the blocking pool.
async fn embed(shared: &Shared, prompt: &str, path: String) -> Result<mcpd::model::ContentBlock, ToolError> {
    let root = if shared.options.embed_files { shared.root.clone() } else { shared.root.closed() };
    let max = shared.options.max_embed_bytes;
    let embedded = actix_web::rt::task::spawn_blocking(move || render::embed(&root, &path, max))
        .await
        .map_err(|e| ToolError::failed(format!("prompt {prompt}: the file task failed: {e}")))?;
    embedded.map_err(|refusal| refusal.into_error(prompt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Completions of the declared prompts come from their arguments; every other reference
    /// goes to the completer the catalog had before.
    #[test]
    fn completions_chain_to_the_previous_completer() {
        let mut catalog = Catalog::new();
        catalog.set_completer(|_reference, _argument, prefix| vec![format!("earlier:{prefix}")]);
        let dir = tempfile::tempdir().unwrap();
        let prompt: DeclaredPrompt = serde_json::from_value(json!({
            "name": "p", "arguments": [{"name": "a", "values": ["one", "two", "three"]}], "argv": ["true"]
        }))
        .unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        assert_eq!(register(&mut catalog, root, CommandOptions::default(), PromptOptions::default(), vec![prompt]), 1);
        let complete = catalog.completer().unwrap();
        let reference = |value: Value| value.as_object().unwrap().clone();
        assert_eq!(complete(&reference(json!({"type": "ref/prompt", "name": "p"})), "a", "t"), ["two", "three"]);
        assert_eq!(complete(&reference(json!({"type": "ref/resource", "uri": "x:///{y}"})), "y", "q"), ["earlier:q"]);
        assert_eq!(complete(&reference(json!({"type": "ref/prompt", "name": "other"})), "a", "t"), ["earlier:t"]);
    }
}
