//! Tools: definitions and call results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, Meta};
use crate::tasks::{TaskSupport, ToolExecution};

/// Untrusted hints about what a tool does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world (e.g. the web).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// A tool that only reads, locally: read-only, not destructive, idempotent, closed world.
    pub fn read_only() -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }
    }
}

/// A tool definition, as `tools/list` shows it. Schemas are kept as raw JSON so that a 2020-12
/// schema round-trips verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique name: 1–128 of `A-Z a-z 0-9 _ - .`.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of `arguments` (an object schema).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool returns structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// How the tool runs: its task support (the tasks extension, 2026-07-28; `tools/list` shows
    /// it only on that wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            execution: None,
            meta: None,
        }
    }

    /// Declares the tool's task support (`execution.taskSupport`): `Optional` lets the server
    /// answer a call that is still running after a while with a task, `Required` always runs it
    /// as a task (clients that did not opt in get `-32021`).
    #[must_use]
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        self.execution = Some(ToolExecution { task_support: Some(support) });
        self
    }

    /// The tool's task support (`Forbidden` when it declares none).
    pub fn task_support(&self) -> TaskSupport {
        self.execution.as_ref().and_then(|e| e.task_support).unwrap_or_default()
    }

    /// Sets the title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the annotations.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Whether the name follows the 2025-11-25 rule: 1–128 of `A-Z a-z 0-9 _ - .`.
    pub fn has_valid_name(&self) -> bool {
        (1..=128).contains(&self.name.len())
            && self.name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    }
}

/// The result of `tools/call`. A tool's own failure is `is_error: true` with content that
/// explains it — never a JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool produced.
    pub content: Vec<ContentBlock>,
    /// Structured output matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// A success with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![ContentBlock::text(text)], ..Default::default() }
    }

    /// A success with the given blocks.
    pub fn content(content: Vec<ContentBlock>) -> Self {
        CallToolResult { content, ..Default::default() }
    }

    /// A success with structured output, also serialized into a text block for older clients.
    pub fn structured(value: Value) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Default::default()
        }
    }

    /// A tool failure with an explanation the model can read.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult { content: vec![ContentBlock::text(text)], is_error: true, ..Default::default() }
    }
}
