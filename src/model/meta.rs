//! The `_meta` member every request, result and notification may carry, and the keys of it
//! that mcpd reads and writes. A file of its own because every model type embeds it.

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
