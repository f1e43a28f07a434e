//! MCP types with serde, shared by every revision. Fields that only newer revisions define are
//! optional and skipped when absent, so one type serves all five wires.

mod capabilities;
mod content;
mod passed;
mod prompt;
mod resource;
mod tool;

pub use capabilities::{
    Icon, Implementation, PromptsCapability, ResourcesCapability, ServerCapabilities, ToolsCapability,
};
pub use content::{Annotations, ContentBlock, Media, ResourceContents, Role};
pub use passed::PassedResult;
pub use prompt::{GetPromptResult, Prompt, PromptArgument, PromptMessage};
pub use resource::{ReadResourceResult, Resource, ResourceTemplate};
pub use tool::{CallToolResult, Tool, ToolAnnotations};

/// The `_meta` member: an open object.
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// `_meta` keys of the 2026-07-28 wire.
pub mod meta_keys {
    /// The request's protocol version (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The request's client capabilities (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's Implementation (should be sent; never required).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The minimum level of `notifications/message` the request wants.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's Implementation, on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Tags notifications of a `subscriptions/listen` stream.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The progress token of a request.
    pub const PROGRESS_TOKEN: &str = "progressToken";
}
