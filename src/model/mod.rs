//! MCP types with serde, shared by every revision. Fields that only newer revisions define are
//! optional and skipped when absent, so one type serves all five wires.

mod annotations;
mod capabilities;
mod content;
mod meta;
mod passed;
mod prompt;
mod resource;
mod tool;

pub use annotations::{Annotations, Role};
pub use capabilities::{
    Icon, Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
pub use content::{ContentBlock, Media};
pub use meta::{meta_keys, Meta};
pub use passed::PassedResult;
pub use prompt::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
pub use resource::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
pub use tool::{CallToolResult, Tool, ToolAnnotations};
