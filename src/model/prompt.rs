//! Prompts: templates of messages a client can fetch with arguments.

use serde::{Deserialize, Serialize};

use super::{ContentBlock, Meta, Role};

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must supply it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: impl Into<String>, description: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), title: None, description: Some(description.into()), required: Some(true) }
    }

    /// An optional argument.
    pub fn optional(name: impl Into<String>, description: impl Into<String>) -> Self {
        PromptArgument { required: Some(false), ..PromptArgument::required(name, description) }
    }
}

/// A prompt definition, as `prompts/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Unique name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Prompt {
    /// A prompt with a name, description and arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>, arguments: Vec<PromptArgument>) -> Self {
        Prompt { name: name.into(), title: None, description: Some(description.into()), arguments, meta: None }
    }

    /// Sets the title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: ContentBlock) -> Self {
        PromptMessage { role: Role::User, content }
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// A description of this rendering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}
