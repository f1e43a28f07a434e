//! Resources declared in the declarations file's `resources` section: fixed URIs backed by a
//! project `file` (confined like the file tools, judged again at every read), inline `text`, or
//! a `command`'s output (an argv run like a declared tool's — no shell, the project as working
//! directory unless `cwd`, a time limit, the output capped).
//!
//! ```json
//! {"resources": [
//!   {"uri": "docs://readme", "name": "readme", "file": "README.md", "mimeType": "text/markdown"},
//!   {"uri": "note://style", "name": "style", "text": "Use British spelling.", "annotations": {"priority": 0.9}},
//!   {"uri": "git://status", "name": "git-status", "command": ["git", "status", "--short"], "timeoutSeconds": 5}
//! ]}
//! ```
//!
//! Each entry has `uri` (with a scheme), `name` and exactly one of `file`, `text` and `command`;
//! optional `title`, `description`, `mimeType`, `annotations`; `cwd` and `timeoutSeconds` (default
//! [`DEFAULT_TIMEOUT`]) only with `command`. Unknown fields, two sources, no source and duplicate
//! URIs are errors that name the file, the entry and the problem.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpd::catalog::UriVariables;
use mcpd::config::ToolFilter;
use mcpd::model::{Annotations, ReadResourceResult, Resource, ResourceContents};
use mcpd::{Catalog, ToolContext, ToolError};
use serde::Deserialize;
use serde_json::Value;

use super::contents::{contents, mime_type};
use super::files::Reader;
use super::options::ResourceOptions;
use crate::tools::commands::{CommandOptions, FixedCommand};
use crate::tools::paths::{PathError, ProjectRoot};

/// A command resource's time limit when it declares none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest time limit a command resource may declare.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// One entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Entry {
    uri: String,
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    annotations: Option<Annotations>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

/// Where a declared resource's contents come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A project file (relative to the root).
    File(String),
    /// Inline text.
    Text(String),
    /// A command's output.
    Command(FixedCommand),
}

/// A checked declared resource.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredResource {
    /// Its URI.
    pub uri: String,
    /// What `resources/list` shows.
    pub definition: Resource,
    /// Its contents' source.
    pub source: Source,
}

/// Whether `uri` starts with a scheme (`ALPHA *( ALPHA / DIGIT / + / - / . ) ":"`) and holds no
/// white space or control character.
fn valid_uri(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else { return false };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !uri.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn check(entry: Entry, root: &ProjectRoot) -> Result<DeclaredResource, String> {
    if !valid_uri(&entry.uri) {
        return Err(format!("uri {:?} is not a URI (scheme:rest, no white space)", entry.uri));
    }
    if entry.name.trim().is_empty() {
        return Err("the name is empty".into());
    }
    let command_only = entry.cwd.is_some() || entry.timeout_seconds.is_some();
    let source = match (entry.file, entry.text, entry.command) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            return Err("declares more than one source: give exactly one of \"file\", \"text\" and \"command\"".into())
        }
        (None, None, None) => return Err("declares no source: give one of \"file\", \"text\" and \"command\"".into()),
        (_, _, None) if command_only => return Err("\"cwd\" and \"timeoutSeconds\" go with \"command\" only".into()),
        (Some(file), None, None) => match root.existing(&file) {
            Ok(_) | Err(PathError::NotFound { .. }) => Source::File(file),
            Err(e) => return Err(format!("file: {e}")),
        },
        (None, Some(text), None) => Source::Text(text),
        (None, None, Some(argv)) => {
            let timeout = match entry.timeout_seconds {
                None => DEFAULT_TIMEOUT,
                Some(secs) if (1..=MAX_TIMEOUT.as_secs()).contains(&secs) => Duration::from_secs(secs),
                Some(_) => return Err(format!("timeoutSeconds must be from 1 to {}", MAX_TIMEOUT.as_secs())),
            };
            Source::Command(FixedCommand::new(argv, entry.cwd, timeout).map_err(|e| format!("command: {e}"))?)
        }
    };
    let mime = entry.mime_type.or_else(|| match &source {
        Source::File(path) => mime_type(path).map(str::to_owned),
        _ => None,
    });
    let definition = Resource {
        uri: entry.uri.clone(),
        name: entry.name,
        title: entry.title,
        description: entry.description,
        mime_type: mime,
        size: match &source {
            Source::Text(text) => Some(text.len() as u64),
            _ => None,
        },
        annotations: entry.annotations,
        meta: None,
    };
    Ok(DeclaredResource { uri: entry.uri, definition, source })
}

/// Checks the raw entries of a declarations file's `resources` section (`file` names the file,
/// for the messages); project files are judged against `root`.
///
/// # Errors
/// `FILE: resource #N (URI): problem` for the first bad entry.
pub fn check_declared(file: &Path, entries: Vec<Value>, root: &ProjectRoot) -> Result<Vec<DeclaredResource>, String> {
    let where_ = file.display();
    let mut uris = BTreeSet::new();
    let mut checked = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let label = match entry.get("uri").and_then(Value::as_str) {
            Some(uri) => format!("{where_}: resource #{} ({uri:?})", i + 1),
            None => format!("{where_}: resource #{}", i + 1),
        };
        if !entry.is_object() {
            return Err(format!("{label}: expected an object"));
        }
        let entry: Entry = serde_json::from_value(entry).map_err(|e| format!("{label}: {e}"))?;
        if !uris.insert(entry.uri.clone()) {
            return Err(format!("{label}: duplicate resource uri {:?}", entry.uri));
        }
        checked.push(check(entry, root).map_err(|e| format!("{label}: {e}"))?);
    }
    Ok(checked)
}

/// Adds the declared resources to `catalog`.
pub(super) fn register(
    catalog: &mut Catalog,
    root: &ProjectRoot,
    options: &ResourceOptions,
    commands: &CommandOptions,
    declared: Vec<DeclaredResource>,
) {
    let reader =
        Arc::new(Reader { root: root.clone(), max_bytes: options.max_read_bytes, filter: Arc::new(ToolFilter::All) });
    let commands = Arc::new(commands.clone());
    let max_bytes = usize::try_from(options.max_read_bytes).unwrap_or(usize::MAX);
    for resource in declared {
        let mime = resource.definition.mime_type.clone();
        match resource.source {
            Source::File(path) => {
                let reader = reader.clone();
                catalog.add_resource(resource.definition, move |uri: String, _v: UriVariables, _c: ToolContext| {
                    reader.clone().read_blocking(uri, path.clone(), mime.clone())
                });
            }
            Source::Text(text) => {
                let text: Arc<str> = text.into();
                catalog.add_resource(resource.definition, move |uri: String, _v: UriVariables, _c: ToolContext| {
                    let content = ResourceContents::text(uri, mime.as_deref().unwrap_or("text/plain"), &*text);
                    std::future::ready(Ok(ReadResourceResult { contents: vec![content] }))
                });
            }
            Source::Command(command) => {
                let (root, commands, command) = (root.clone(), commands.clone(), Arc::new(command));
                catalog.add_resource(resource.definition, move |uri: String, _v: UriVariables, _c: ToolContext| {
                    let (root, commands, command, mime) =
                        (root.clone(), commands.clone(), command.clone(), mime.clone());
                    async move {
                        let output = command
                            .output(&root, &commands, max_bytes)
                            .await
                            .map_err(|e| ToolError::failed(format!("{uri}: {e}")))?;
                        Ok(contents(&uri, mime.as_deref(), output))
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checked(entries: Value) -> Result<Vec<DeclaredResource>, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "a").unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let Value::Array(entries) = entries else { panic!("an array") };
        check_declared(Path::new("decl.json"), entries, &root)
    }

    #[test]
    fn each_source_is_checked_and_bad_entries_are_named() {
        let ok = checked(json!([
            {"uri": "docs://a", "name": "a", "file": "a.md"},
            {"uri": "note://b", "name": "b", "text": "hi", "annotations": {"priority": 0.5}},
            {"uri": "cmd://c", "name": "c", "command": ["echo", "x"], "timeoutSeconds": 3}
        ]))
        .unwrap();
        assert_eq!(ok[0].definition.mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(ok[1].definition.size, Some(2));
        assert!(matches!(&ok[2].source, Source::Command(c) if c.timeout == Duration::from_secs(3)));
        let error = |entries: Value| checked(entries).unwrap_err();
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a", "text": "t", "file": "a.md"}])),
            "decl.json: resource #1 (\"x://a\"): declares more than one source: give exactly one of \"file\", \"text\" and \"command\""
        );
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a"}])),
            "decl.json: resource #1 (\"x://a\"): declares no source: give one of \"file\", \"text\" and \"command\""
        );
        assert!(error(json!([{"uri": "x://a", "name": "a", "text": "t", "colour": 1}]))
            .starts_with("decl.json: resource #1 (\"x://a\"): unknown field `colour`"));
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a", "text": "t"}, {"uri": "x://a", "name": "b", "text": "u"}])),
            "decl.json: resource #2 (\"x://a\"): duplicate resource uri \"x://a\""
        );
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a", "file": "../etc/passwd"}])),
            "decl.json: resource #1 (\"x://a\"): file: \"../etc/passwd\" is outside the project directory"
        );
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a", "command": ["cat", "{path}"]}])),
            "decl.json: resource #1 (\"x://a\"): command: argv[1] (\"{path}\") uses the placeholder {path}, but a resource has no arguments"
        );
        assert_eq!(
            error(json!([{"uri": "no scheme", "name": "a", "text": "t"}])),
            "decl.json: resource #1 (\"no scheme\"): uri \"no scheme\" is not a URI (scheme:rest, no white space)"
        );
        assert_eq!(
            error(json!([{"uri": "x://a", "name": "a", "text": "t", "cwd": "."}])),
            "decl.json: resource #1 (\"x://a\"): \"cwd\" and \"timeoutSeconds\" go with \"command\" only"
        );
    }
}
