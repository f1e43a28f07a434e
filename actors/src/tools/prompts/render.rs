//! Rendering a declared prompt: its arguments checked before anything runs, `{argument}`
//! placeholders filled, project files embedded through the root's capability (confined exactly
//! like the file tools, size-capped, text only), and a command's stdout read as text or as a
//! JSON array of messages.

use std::io::Read;

use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::OpenOptions;
use mcpd::model::{ContentBlock, PromptMessage, ResourceContents};
use mcpd::{ProtocolError, ToolError};
use serde_json::{Map, Value};

use super::declared::{CompiledPrompt, OutputKind};
use crate::tools::commands::Piece;
use crate::tools::paths::{is_escape, PathError, ProjectRoot};
use crate::tools::resources::{file_uri, mime_type};

/// Why a prompt cannot be rendered (small, so results stay small; made a [`ToolError`] once).
#[derive(Debug)]
pub(crate) enum RenderRefusal {
    /// The arguments are wrong or led somewhere they may not: `-32602`.
    Invalid(String),
    /// Rendering failed: `-32603` with the reason.
    Failed(String),
}

impl RenderRefusal {
    /// The error of prompt `name`.
    pub(crate) fn into_error(self, name: &str) -> ToolError {
        match self {
            RenderRefusal::Invalid(m) => {
                ToolError::Protocol(ProtocolError::InvalidParams(format!("prompt {name}: {m}")))
            }
            RenderRefusal::Failed(m) => ToolError::failed(format!("prompt {name}: {m}")),
        }
    }
}

/// Checks the arguments of `prompts/get` against the declaration: every value a string, no
/// unknown name, every required one present, an `enum` argument one of its values.
///
/// # Errors
/// The `-32602` message, naming the argument.
pub(crate) fn check_arguments(prompt: &CompiledPrompt, arguments: &Map<String, Value>) -> Result<(), String> {
    let name = &prompt.definition.name;
    for (key, value) in arguments {
        let Some(declared) = prompt.arguments.iter().find(|a| &a.name == key) else {
            let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(format!("prompt {name} has no argument {key} (its arguments: {known})"));
        };
        let Value::String(text) = value else {
            return Err(format!("prompt {name}: argument {key} must be a string"));
        };
        if let Some(allowed) = &declared.allowed {
            if !allowed.contains(text) {
                return Err(format!(
                    "prompt {name}: argument {key} must be one of {} (got {text:?})",
                    allowed.join(", ")
                ));
            }
        }
    }
    if let Some(missing) = prompt.arguments.iter().find(|a| a.required && !arguments.contains_key(&a.name)) {
        return Err(format!("prompt {name} needs argument {}", missing.name));
    }
    Ok(())
}

/// Fills a template's placeholders (an absent optional argument is empty text).
pub(crate) fn fill(pieces: &[Piece], arguments: &Map<String, Value>) -> String {
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => text.push_str(t),
            Piece::Arg(name) => text.push_str(arguments.get(name).and_then(Value::as_str).unwrap_or_default()),
        }
    }
    text
}

/// Reads a project text file to embed: judged by the root (an escape is refused with the file
/// tools' own message), opened non-blocking through the capability, checked to be a regular
/// file on the open handle, at most `max` bytes, UTF-8 without NUL bytes.
///
/// # Errors
/// A refused path is `-32602` (the arguments led there); a file that cannot be embedded is a
/// failure with the reason.
pub(crate) fn embed(root: &ProjectRoot, given: &str, max: u64) -> Result<ContentBlock, RenderRefusal> {
    let inside = root.existing(given).map_err(|e| RenderRefusal::Invalid(e.to_string()))?;
    let shown = inside.shown();
    let io_error = |e: std::io::Error| {
        if is_escape(&e) {
            RenderRefusal::Invalid(PathError::Outside { path: given.to_owned() }.to_string())
        } else {
            RenderRefusal::Failed(format!("cannot read {shown:?}: {e}"))
        }
    };
    let regular = |meta: &cap_std::fs::Metadata| {
        if meta.is_file() {
            Ok(meta.len())
        } else {
            Err(RenderRefusal::Failed(format!("{shown:?} is not a regular file")))
        }
    };
    regular(&root.dir().metadata(inside.path()).map_err(io_error)?)?;
    let file = root.dir().open_with(inside.path(), OpenOptions::new().read(true).nonblock(true)).map_err(io_error)?;
    let meta = file.metadata().map_err(io_error)?;
    let size = regular(&meta)?;
    root.refuse_opened(given, &meta).map_err(|e| RenderRefusal::Invalid(e.to_string()))?;
    let too_big =
        |size: u64| RenderRefusal::Failed(format!("{shown:?} is {size} bytes, over the limit of {max} bytes"));
    if size > max {
        return Err(too_big(size));
    }
    let mut bytes = Vec::new();
    file.into_std().take(max + 1).read_to_end(&mut bytes).map_err(io_error)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    let binary = || RenderRefusal::Failed(format!("{shown:?} is a binary file: prompts embed text files only"));
    if bytes.contains(&0) {
        return Err(binary());
    }
    let text = String::from_utf8(bytes).map_err(|_| binary())?;
    Ok(ContentBlock::resource(ResourceContents::text(
        file_uri(&shown),
        mime_type(&shown).unwrap_or("text/plain"),
        text,
    )))
}

/// Reads a command's stdout as the prompt's messages.
///
/// # Errors
/// Not UTF-8, nothing printed, or (as messages) not a valid non-empty array of messages.
pub(crate) fn output_messages(stdout: Vec<u8>, kind: OutputKind) -> Result<Vec<PromptMessage>, String> {
    let text = String::from_utf8(stdout).map_err(|_| "the command printed bytes that are not UTF-8".to_owned())?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the command printed nothing".into());
    }
    let array = match kind {
        OutputKind::Text => None,
        OutputKind::Auto if !trimmed.starts_with('[') => None,
        OutputKind::Auto => match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Array(items)) => Some(items),
            _ => None,
        },
        OutputKind::Messages => match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Array(items)) => Some(items),
            Ok(_) => return Err("the command's output must be a JSON array of messages; it printed other JSON".into()),
            Err(e) => return Err(format!("the command's output is not a JSON array of messages: {e}")),
        },
    };
    let Some(items) = array else { return Ok(vec![PromptMessage::user(ContentBlock::text(text))]) };
    if items.is_empty() {
        return Err("the command printed an empty array of messages".into());
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<PromptMessage>(item).map_err(|e| {
                format!(
                    "the command printed a JSON array, but message #{} is not a prompt message \
                     ({{\"role\": \"user\"|\"assistant\", \"content\": {{\"type\": \"text\", \"text\": …}}}}): {e}",
                    i + 1
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpd::model::Role;

    #[test]
    fn output_is_text_unless_it_is_an_array_of_messages() {
        let text = output_messages(b"[INFO] plain text\n".to_vec(), OutputKind::Auto).unwrap();
        assert_eq!(text, vec![PromptMessage::user(ContentBlock::text("[INFO] plain text\n"))]);
        let json = br#"[{"role":"assistant","content":{"type":"text","text":"hi"}}]"#.to_vec();
        let messages = output_messages(json.clone(), OutputKind::Auto).unwrap();
        assert_eq!(messages[0].role, Role::Assistant);
        assert_eq!(output_messages(json, OutputKind::Text).unwrap().len(), 1);
        let bad = output_messages(br#"[{"role":"user"}]"#.to_vec(), OutputKind::Auto).unwrap_err();
        assert!(bad.contains("message #1 is not a prompt message"), "{bad}");
        let bad = output_messages(b"[oops".to_vec(), OutputKind::Messages).unwrap_err();
        assert!(bad.contains("not a JSON array of messages"), "{bad}");
        assert!(output_messages(b" \n".to_vec(), OutputKind::Auto).unwrap_err().contains("printed nothing"));
        assert!(output_messages(b"[]".to_vec(), OutputKind::Auto).unwrap_err().contains("empty array"));
    }

    #[test]
    fn embedded_files_are_capped_text_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "0123456789").unwrap();
        std::fs::write(dir.path().join("b.bin"), b"\x00\x01").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let message = |r: Result<ContentBlock, RenderRefusal>| match r {
            Err(RenderRefusal::Failed(m)) => format!("failed: {m}"),
            Err(RenderRefusal::Invalid(m)) => format!("invalid: {m}"),
            Ok(block) => format!("ok: {}", serde_json::to_value(block).unwrap()),
        };
        assert!(message(embed(&root, "a.md", 10)).contains("\"text\":\"0123456789\""));
        assert_eq!(message(embed(&root, "a.md", 9)), "failed: \"a.md\" is 10 bytes, over the limit of 9 bytes");
        assert!(message(embed(&root, "b.bin", 10)).contains("binary file"));
        assert!(message(embed(&root, "sub", 10)).contains("not a regular file"));
        assert!(message(embed(&root, "../x", 10)).starts_with("invalid: "));
        assert!(message(embed(&root, "missing.md", 10)).starts_with("invalid: "));
    }
}
