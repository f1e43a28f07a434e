//! Command tools declared in a JSON file: a fixed program whose argv is a template filled from
//! the (schema-validated) arguments.
//!
//! The file is either an array of tools or `{"tools": [...]}`; each tool:
//!
//! ```json
//! {
//!   "name": "test_one",
//!   "description": "Runs one test by name.",
//!   "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
//!   "argv": ["cargo", "test", "--", "--exact", "{name}"],
//!   "cwd": "crates/core",
//!   "timeoutSeconds": 120
//! }
//! ```
//!
//! Optional: `title`, `cwd` (relative to the project root, default the root), `timeoutSeconds`
//! (default: the server's default), `annotations` (default: not read-only, destructive, open
//! world — an arbitrary program can do anything).
//!
//! **Placeholders.** `{prop}` (letters, digits, `_`, `-`) in an argv element is replaced by the
//! argument `prop`, which must be a property of the input schema. The value is inserted as text
//! into that one element — never split into several arguments, never seen by a shell — so
//! `"--name={name}"` with `a b; rm x` stays the single argument `--name=a b; rm x`. An element
//! that is exactly `{prop}` becomes one element per item when the value is an array. An element
//! whose argument is absent (or `null`) is left out entirely. The program (`argv[0]`) cannot be
//! a placeholder. Braces that do not form `{prop}` (`{}`, `{ x }`) are literal text.
//!
//! A value may still start with `-` and so be read as an option by the program: to prevent
//! that, put `"--"` before it in argv or constrain it in the schema (`"pattern": "^[^-]"`).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use mcpd::model::ToolAnnotations;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Names the built-in command tools use.
pub(super) const RESERVED_NAMES: [&str; 2] = ["run_command", "read_command_log"];

/// A command tool declared in configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeclaredTool {
    /// The tool name (1–128 of `A-Z a-z 0-9 _ - .`).
    pub name: String,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema (2020-12) of the arguments: an object schema.
    #[serde(alias = "input_schema")]
    pub input_schema: Value,
    /// The program and its arguments, with `{prop}` placeholders.
    pub argv: Vec<String>,
    /// The working directory, relative to the project root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The time limit in seconds (default: the server's default).
    #[serde(default, alias = "timeout_seconds")]
    pub timeout_seconds: Option<u64>,
    /// Behaviour hints (default: destructive, open world).
    #[serde(default)]
    pub annotations: Option<ToolAnnotations>,
    /// OAuth scopes a caller's token needs to see and call this tool (with `--auth-issuer`;
    /// ignored otherwise), besides the ones every request needs.
    #[serde(default, alias = "required_scopes")]
    pub required_scopes: Vec<String>,
    /// Whether a call may become a task (the tasks extension, 2026-07-28): `"forbidden"` (the
    /// default), `"optional"` (a call still running after `--task-after` becomes one, for
    /// clients that opted in) or `"required"` (always one; other clients get `-32021`).
    #[serde(default, alias = "task_support")]
    pub task_support: Option<mcpd::tasks::TaskSupport>,
}

/// A piece of an argv template element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Literal text.
    Text(String),
    /// The value of this argument.
    Arg(String),
}

/// Splits one argv element into text and `{prop}` placeholders.
pub(crate) fn parse_element(element: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = element;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')).count();
        if name_len > 0 && after.as_bytes().get(name_len) == Some(&b'}') {
            text.push_str(&rest[..open]);
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Arg(after[..name_len].to_owned()));
            rest = &after[name_len + 1..];
        } else {
            text.push_str(&rest[..=open]);
            rest = after;
        }
    }
    text.push_str(rest);
    if !text.is_empty() || pieces.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

/// A declared tool, checked and ready to run.
#[derive(Debug)]
pub(super) struct CompiledTool {
    pub(super) tool: DeclaredTool,
    pub(super) template: Vec<Vec<Piece>>,
    pub(super) validator: jsonschema::Validator,
    pub(super) timeout: Option<Duration>,
}

/// Checks one declared tool: name, argv, schema (compiled as draft 2020-12), placeholders.
///
/// # Errors
/// What is wrong with it.
pub(super) fn compile(tool: DeclaredTool) -> Result<CompiledTool, String> {
    let name_ok = (1..=128).contains(&tool.name.len())
        && tool.name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !name_ok {
        return Err("the name must be 1-128 characters of A-Z a-z 0-9 _ - .".into());
    }
    if RESERVED_NAMES.contains(&tool.name.as_str()) {
        return Err(format!("the name {:?} is reserved for a built-in tool", tool.name));
    }
    if tool.description.trim().is_empty() {
        return Err("the description is empty".into());
    }
    let Some(program) = tool.argv.first() else {
        return Err("argv is empty: it needs at least the program".into());
    };
    if program.is_empty() {
        return Err("argv[0] (the program) is empty".into());
    }
    if tool.argv.iter().any(|a| a.contains('\0')) {
        return Err("argv contains a NUL byte".into());
    }
    let template: Vec<Vec<Piece>> = tool.argv.iter().map(|e| parse_element(e)).collect();
    if template[0].iter().any(|p| matches!(p, Piece::Arg(_))) {
        return Err(format!("argv[0] ({program:?}) must be a fixed program, not a placeholder"));
    }
    let schema = tool.input_schema.as_object().ok_or("inputSchema must be a JSON object")?;
    if schema.get("type") != Some(&Value::String("object".into())) {
        return Err("inputSchema must have \"type\": \"object\"".into());
    }
    let validator =
        jsonschema::draft202012::new(&tool.input_schema).map_err(|e| format!("invalid inputSchema: {e}"))?;
    let properties: BTreeSet<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    for (i, element) in template.iter().enumerate() {
        for piece in element {
            if let Piece::Arg(arg) = piece {
                if !properties.contains(arg.as_str()) {
                    return Err(format!(
                        "argv[{i}] ({:?}) uses the placeholder {{{arg}}} but inputSchema has no property {arg:?}",
                        tool.argv[i]
                    ));
                }
            }
        }
    }
    if let Some(cwd) = &tool.cwd {
        if cwd.contains('\0') {
            return Err("cwd contains a NUL byte".into());
        }
    }
    let timeout = match tool.timeout_seconds {
        Some(0) => return Err("timeoutSeconds must be at least 1".into()),
        Some(secs) => Some(Duration::from_secs(secs)),
        None => None,
    };
    Ok(CompiledTool { tool, template, validator, timeout })
}

/// Everything a declarations file (`--tools FILE`) declares: command tools, and the raw entries
/// of its `prompts` and `resources` sections (checked by their own modules).
#[derive(Debug, Default)]
pub struct Declarations {
    /// The command tools, checked.
    pub tools: Vec<DeclaredTool>,
    /// The `prompts` section's entries, unchecked.
    pub prompts: Vec<Value>,
    /// The `resources` section's entries, unchecked.
    pub resources: Vec<Value>,
}

/// Loads declared command tools from a JSON file (an array of tools, or `{"tools": [...]}`),
/// checking every tool (see [`DeclaredTool`]) and that names are unique.
///
/// # Errors
/// A message naming the file, the tool and the problem.
pub fn load_declared(path: &Path) -> Result<Vec<DeclaredTool>, String> {
    load_declarations(path).map(|declarations| declarations.tools)
}

/// Loads a declarations file: an array of tools, or an object with any of `tools`, `prompts`
/// and `resources` (arrays). The tools are checked here (see [`DeclaredTool`]; names unique);
/// prompts and resources are returned as they are, for their own modules to check.
///
/// # Errors
/// A message naming the file, the entry and the problem.
pub fn load_declarations(path: &Path) -> Result<Declarations, String> {
    let where_ = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {where_}: {e}"))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("{where_} is not valid JSON: {e}"))?;
    let mut declarations = Declarations::default();
    let entries = match document {
        Value::Array(entries) => entries,
        Value::Object(mut object) => {
            const SECTIONS: [&str; 3] = ["tools", "prompts", "resources"];
            if let Some(other) = object.keys().find(|k| !SECTIONS.contains(&k.as_str())) {
                return Err(format!(
                    "{where_}: unknown top-level field {other:?} (expected \"tools\", \"prompts\" or \"resources\")"
                ));
            }
            if object.is_empty() {
                return Err(format!("{where_}: declares nothing (expected \"tools\", \"prompts\" or \"resources\")"));
            }
            let mut section = |name: &str| match object.remove(name) {
                Some(Value::Array(entries)) => Ok(entries),
                Some(_) => Err(format!("{where_}: \"{name}\" must be an array")),
                None => Ok(Vec::new()),
            };
            declarations.prompts = section("prompts")?;
            declarations.resources = section("resources")?;
            section("tools")?
        }
        _ => {
            return Err(format!(
                "{where_}: expected an array of tools or an object with \"tools\", \"prompts\" or \"resources\""
            ))
        }
    };
    let mut tools = Vec::with_capacity(entries.len());
    let mut names = BTreeSet::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let label = match entry.get("name").and_then(Value::as_str) {
            Some(name) => format!("{where_}: tool #{} ({name:?})", i + 1),
            None => format!("{where_}: tool #{}", i + 1),
        };
        if !entry.is_object() {
            return Err(format!("{label}: expected an object"));
        }
        let tool: DeclaredTool = serde_json::from_value(entry).map_err(|e| format!("{label}: {e}"))?;
        if !names.insert(tool.name.clone()) {
            return Err(format!("{label}: duplicate tool name {:?}", tool.name));
        }
        let tool = compile(tool).map_err(|e| format!("{label}: {e}"))?.tool;
        tools.push(tool);
    }
    declarations.tools = tools;
    Ok(declarations)
}

fn scalar(name: &str, value: &Value) -> Result<String, String> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return Err(format!("argument {name:?} must be a string, number or boolean here")),
    };
    if text.contains('\0') {
        return Err(format!("argument {name:?} contains a NUL byte"));
    }
    Ok(text)
}

/// Fills the argv template with the arguments (already validated against the schema).
///
/// # Errors
/// A value that cannot become argv text (an object, a nested array, a NUL byte).
pub(crate) fn expand(template: &[Vec<Piece>], arguments: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = Vec::with_capacity(template.len());
    for element in template {
        if let [Piece::Arg(name)] = element.as_slice() {
            match arguments.get(name) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        argv.push(scalar(name, item)?);
                    }
                }
                Some(value) => argv.push(scalar(name, value)?),
            }
            continue;
        }
        let mut text = String::new();
        let mut absent = false;
        for piece in element {
            match piece {
                Piece::Text(t) => text.push_str(t),
                Piece::Arg(name) => match arguments.get(name) {
                    None | Some(Value::Null) => absent = true,
                    Some(value) => text.push_str(&scalar(name, value)?),
                },
            }
        }
        if !absent {
            argv.push(text);
        }
    }
    Ok(argv)
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_whole_names_in_braces() {
        assert_eq!(parse_element("plain"), vec![Piece::Text("plain".into())]);
        assert_eq!(parse_element(""), vec![Piece::Text(String::new())]);
        assert_eq!(parse_element("{x}"), vec![Piece::Arg("x".into())]);
        assert_eq!(
            parse_element("--name={name}!"),
            vec![Piece::Text("--name=".into()), Piece::Arg("name".into()), Piece::Text("!".into())]
        );
        assert_eq!(parse_element("{} { x } {a b}"), vec![Piece::Text("{} { x } {a b}".into())]);
        assert_eq!(
            parse_element("{{a}}"),
            vec![Piece::Text("{".into()), Piece::Arg("a".into()), Piece::Text("}".into())]
        );
    }

    #[test]
    fn values_stay_inside_their_element() {
        let template: Vec<Vec<Piece>> = ["printf", "%s\\n", "{text}", "--n={n}", "{opt}", "-o={opt}", "{list}"]
            .iter()
            .map(|e| parse_element(e))
            .collect();
        let args = json!({"text": "a b; echo x", "n": 3, "list": ["p q", true]});
        let argv = expand(&template, args.as_object().unwrap()).unwrap();
        assert_eq!(argv, ["printf", "%s\\n", "a b; echo x", "--n=3", "p q", "true"]);
        let bad = json!({"text": {"k": 1}});
        assert!(expand(&template, bad.as_object().unwrap()).is_err());
    }
}
