//! The `prompts` section of a declarations file: each entry read strictly (unknown fields are
//! errors) and checked into a [`CompiledPrompt`] — its definition as `prompts/list` shows it,
//! its arguments with their allowed or suggested values, and its body: message templates or an
//! argv template.

use std::collections::BTreeSet;
use std::time::Duration;

use mcpd::model::{Prompt, PromptArgument, Role};
use serde::Deserialize;
use serde_json::Value;

use crate::tools::commands::{parse_element, Piece};

/// The most values an argument's `enum` or `values` may list (they are offered as completions).
pub const MAX_ARGUMENT_VALUES: usize = 1000;

/// A prompt declared in the declarations file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeclaredPrompt {
    /// The prompt name (1–128 of `A-Z a-z 0-9 _ - .`).
    pub name: String,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Its arguments (all strings, as MCP prompt arguments are).
    #[serde(default)]
    pub arguments: Vec<DeclaredArgument>,
    /// Message templates (or `argv`).
    #[serde(default)]
    pub messages: Option<Vec<MessageTemplate>>,
    /// A command whose stdout is the prompt (or `messages`): an argv template like a declared
    /// tool's.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    /// The command's working directory, relative to the project root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The command's time limit in seconds (default: the commands' default, 60).
    #[serde(default, alias = "timeout_seconds")]
    pub timeout_seconds: Option<u64>,
    /// How the command's stdout is read (default `auto`).
    #[serde(default)]
    pub output: Option<OutputKind>,
}

/// One argument of a declared prompt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeclaredArgument {
    /// Its name (letters, digits, `_`, `-`: it is a `{name}` placeholder).
    pub name: String,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether `prompts/get` must give it.
    #[serde(default)]
    pub required: bool,
    /// The only values it accepts (offered as completions).
    #[serde(default, rename = "enum")]
    pub allowed: Option<Vec<String>>,
    /// Values offered as completions (any value is accepted).
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

impl DeclaredArgument {
    /// The values completions offer.
    pub(crate) fn candidates(&self) -> &[String] {
        self.allowed.as_deref().or(self.values.as_deref()).unwrap_or_default()
    }
}

/// One message template: `text` with `{argument}` placeholders, or a project file embedded as
/// a resource (`resource`: a project-relative path, placeholders allowed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageTemplate {
    /// `user` or `assistant`.
    pub role: Role,
    /// Text, with `{argument}` placeholders.
    #[serde(default)]
    pub text: Option<String>,
    /// A project-relative path of a text file to embed, with `{argument}` placeholders.
    #[serde(default)]
    pub resource: Option<String>,
}

/// How a command's stdout becomes the prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// A JSON array is a list of messages; anything else is the text of one user message.
    #[default]
    Auto,
    /// Always the text of one user message.
    Text,
    /// Always a JSON array of messages (anything else is an error).
    Messages,
}

/// One part of a message template.
#[derive(Debug)]
pub(crate) enum Part {
    /// Text.
    Text(Vec<Piece>),
    /// A project file's path.
    Resource(Vec<Piece>),
}

/// What a prompt renders from.
#[derive(Debug)]
pub(crate) enum Body {
    /// Message templates.
    Messages(Vec<(Role, Part)>),
    /// A command.
    Command {
        /// The argv template.
        template: Vec<Vec<Piece>>,
        /// Its working directory.
        cwd: Option<String>,
        /// Its time limit.
        timeout: Option<Duration>,
        /// How its stdout is read.
        output: OutputKind,
    },
}

/// A declared prompt, checked and ready to render.
#[derive(Debug)]
pub(crate) struct CompiledPrompt {
    /// As `prompts/list` shows it.
    pub(crate) definition: Prompt,
    /// Its arguments.
    pub(crate) arguments: Vec<DeclaredArgument>,
    /// What it renders from.
    pub(crate) body: Body,
}

fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn valid_argument_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Checks that every placeholder of `pieces` is a declared argument.
fn placeholders(pieces: &[Piece], known: &BTreeSet<&str>, what: &str) -> Result<(), String> {
    for piece in pieces {
        if let Piece::Arg(arg) = piece {
            if !known.contains(arg.as_str()) {
                return Err(format!("{what} uses the placeholder {{{arg}}} but the prompt has no argument {arg:?}"));
            }
        }
    }
    Ok(())
}

fn check_arguments(arguments: &[DeclaredArgument]) -> Result<(), String> {
    let mut names = BTreeSet::new();
    for argument in arguments {
        let name = &argument.name;
        if !valid_argument_name(name) {
            return Err(format!("argument {name:?}: the name must be letters, digits, _ or -"));
        }
        if !names.insert(name.as_str()) {
            return Err(format!("argument {name:?} is declared twice"));
        }
        if argument.allowed.is_some() && argument.values.is_some() {
            return Err(format!("argument {name:?}: give enum (the only values) or values (suggestions), not both"));
        }
        if argument.allowed.as_ref().is_some_and(Vec::is_empty) {
            return Err(format!("argument {name:?}: enum is empty"));
        }
        if argument.candidates().len() > MAX_ARGUMENT_VALUES {
            return Err(format!("argument {name:?}: more than {MAX_ARGUMENT_VALUES} values"));
        }
    }
    Ok(())
}

/// Checks one declared prompt: name, arguments, exactly one body, placeholders.
///
/// # Errors
/// What is wrong with it.
pub(crate) fn compile(prompt: DeclaredPrompt) -> Result<CompiledPrompt, String> {
    if !valid_name(&prompt.name) {
        return Err("the name must be 1-128 characters of A-Z a-z 0-9 _ - .".into());
    }
    check_arguments(&prompt.arguments)?;
    let known: BTreeSet<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    let command_only = prompt.cwd.is_some() || prompt.timeout_seconds.is_some() || prompt.output.is_some();
    let body = match (&prompt.messages, &prompt.argv) {
        (Some(_), Some(_)) => return Err("give either messages or argv, not both".into()),
        (None, None) => return Err("give messages (templates) or argv (a command)".into()),
        (Some(messages), None) => {
            if command_only {
                return Err("cwd, timeoutSeconds and output are for a command (argv), not for messages".into());
            }
            if messages.is_empty() {
                return Err("messages is empty".into());
            }
            let mut parts = Vec::with_capacity(messages.len());
            for (i, message) in messages.iter().enumerate() {
                let what = format!("messages[{i}]");
                let part = match (&message.text, &message.resource) {
                    (Some(text), None) => {
                        let pieces = parse_element(text);
                        placeholders(&pieces, &known, &what)?;
                        Part::Text(pieces)
                    }
                    (None, Some(path)) => {
                        if path.trim().is_empty() || path.contains('\0') {
                            return Err(format!("{what}: resource must be a project-relative path"));
                        }
                        let pieces = parse_element(path);
                        placeholders(&pieces, &known, &what)?;
                        Part::Resource(pieces)
                    }
                    _ => return Err(format!("{what}: give either text or resource")),
                };
                parts.push((message.role, part));
            }
            Body::Messages(parts)
        }
        (None, Some(argv)) => {
            let Some(program) = argv.first() else { return Err("argv is empty: it needs at least the program".into()) };
            if program.is_empty() {
                return Err("argv[0] (the program) is empty".into());
            }
            if argv.iter().any(|a| a.contains('\0')) || prompt.cwd.as_ref().is_some_and(|c| c.contains('\0')) {
                return Err("argv or cwd contains a NUL byte".into());
            }
            let template: Vec<Vec<Piece>> = argv.iter().map(|e| parse_element(e)).collect();
            if template[0].iter().any(|p| matches!(p, Piece::Arg(_))) {
                return Err(format!("argv[0] ({program:?}) must be a fixed program, not a placeholder"));
            }
            for (i, element) in template.iter().enumerate() {
                placeholders(element, &known, &format!("argv[{i}] ({:?})", argv[i]))?;
            }
            let timeout = match prompt.timeout_seconds {
                Some(0) => return Err("timeoutSeconds must be at least 1".into()),
                secs => secs.map(Duration::from_secs),
            };
            Body::Command { template, cwd: prompt.cwd.clone(), timeout, output: prompt.output.unwrap_or_default() }
        }
    };
    let definition = Prompt {
        name: prompt.name.clone(),
        title: prompt.title.clone(),
        description: prompt.description.clone(),
        arguments: prompt
            .arguments
            .iter()
            .map(|a| PromptArgument {
                name: a.name.clone(),
                title: a.title.clone(),
                description: a.description.clone(),
                required: Some(a.required),
            })
            .collect(),
        meta: None,
    };
    Ok(CompiledPrompt { definition, arguments: prompt.arguments, body })
}

/// Reads and checks the `prompts` section's entries (names unique). `source` names the file in
/// messages.
///
/// # Errors
/// A message naming the file, the prompt and the problem.
pub fn load_prompts(entries: Vec<Value>, source: &str) -> Result<Vec<DeclaredPrompt>, String> {
    let mut prompts = Vec::with_capacity(entries.len());
    let mut names = BTreeSet::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let label = match entry.get("name").and_then(Value::as_str) {
            Some(name) => format!("{source}: prompt #{} ({name:?})", i + 1),
            None => format!("{source}: prompt #{}", i + 1),
        };
        if !entry.is_object() {
            return Err(format!("{label}: expected an object"));
        }
        let prompt: DeclaredPrompt = serde_json::from_value(entry).map_err(|e| format!("{label}: {e}"))?;
        if !names.insert(prompt.name.clone()) {
            return Err(format!("{label}: duplicate prompt name {:?}", prompt.name));
        }
        compile(prompt.clone()).map_err(|e| format!("{label}: {e}"))?;
        prompts.push(prompt);
    }
    Ok(prompts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(value: Value) -> Result<Vec<DeclaredPrompt>, String> {
        load_prompts(vec![value], "p.json")
    }

    #[test]
    fn bad_declarations_are_refused_with_the_reason() {
        let cases = [
            (json!({"name": "a"}), "give messages (templates) or argv"),
            (json!({"name": "a", "messages": [], "argv": ["x"]}), "not both"),
            (json!({"name": "a", "messages": [{"role": "user", "text": "{who}"}]}), "no argument \"who\""),
            (json!({"name": "a", "messages": [{"role": "system", "text": "x"}]}), "unknown variant"),
            (json!({"name": "a", "messages": [{"role": "user"}]}), "either text or resource"),
            (json!({"name": "a", "argv": ["{x}"], "arguments": [{"name": "x"}]}), "fixed program"),
            (json!({"name": "a", "argv": ["echo"], "bogus": 1}), "unknown field"),
            (json!({"name": "a b", "argv": ["echo"]}), "the name must be"),
            (json!({"name": "a", "argv": ["echo"], "arguments": [{"name": "x", "enum": []}]}), "enum is empty"),
            (json!({"name": "a", "messages": [{"role": "user", "text": "x"}], "cwd": "."}), "for a command"),
        ];
        for (value, expected) in cases {
            let error = check(value.clone()).expect_err("refused");
            assert!(error.contains(expected), "{value}: {error}");
            assert!(error.starts_with("p.json: prompt #1"), "{error}");
        }
        let twice = vec![json!({"name": "a", "argv": ["echo"]}), json!({"name": "a", "argv": ["echo"]})];
        assert!(load_prompts(twice, "p.json").expect_err("duplicate").contains("duplicate prompt name"));
    }

    #[test]
    fn a_valid_prompt_lists_its_arguments() {
        let prompts = check(json!({
            "name": "review", "title": "Review", "description": "Reviews a file.",
            "arguments": [{"name": "path", "required": true}, {"name": "focus", "enum": ["bugs", "style"]}],
            "messages": [{"role": "user", "text": "Review {path} for {focus}."}, {"role": "user", "resource": "{path}"}]
        }))
        .expect("valid");
        let compiled = compile(prompts[0].clone()).expect("compiles");
        let listed = serde_json::to_value(&compiled.definition).expect("serializes");
        assert_eq!(
            listed,
            json!({"name": "review", "title": "Review", "description": "Reviews a file.",
                   "arguments": [{"name": "path", "required": true}, {"name": "focus", "required": false}]})
        );
    }
}
