//! Why a configuration cannot be used: one [`ConfigError`] variant per failure, each with a
//! fixed message meant to be shown to the user as is.

use derive_more::{Display, Error};

/// Why a configuration document (or one entry of a servers file) cannot be used. Every message
/// is fixed and meant to be shown to the user as is.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
pub enum ConfigError {
    /// The text is not JSON; holds the parser's message.
    #[display("Invalid MCP configuration JSON: {_0}")]
    Json(#[error(not(source))] String),
    /// The JSON is not an object.
    #[display("The MCP configuration must be a JSON object.")]
    NotAnObject,
    /// `mcpServers` is present but not an object.
    #[display("mcpServers must be a JSON object.")]
    McpServersNotObject,
    /// `mcpServers` holds zero or several servers (single-server documents only).
    #[display("Each MCP configuration must contain exactly one server in mcpServers.")]
    NotExactlyOneServer,
    /// An `mcpServers` entry is not an object; holds its key.
    #[display("Server {_0:?} in mcpServers must be a JSON object.")]
    ServerNotObject(#[error(not(source))] String),
    /// A field that must be text (`name`, `url`, `baseUrl`, `type`, `transport`,
    /// `protocolVersion`) holds a number, boolean, array or object.
    #[display("{field} must be a string.")]
    FieldNotString {
        /// The field's key.
        field: &'static str,
    },
    /// `url` and `baseUrl` are both set and differ.
    #[display("url and baseUrl must match. Keep only the endpoint field required by your server.")]
    EndpointMismatch,
    /// `headers` is present but not an object.
    #[display("headers must be a JSON object.")]
    HeadersNotObject,
    /// A header value is not a JSON string; holds the header's name.
    #[display("Header {_0} must be a string.")]
    HeaderNotString(#[error(not(source))] String),
    /// A header name is not an HTTP token; holds the name.
    #[display("Header name {_0:?} is not a valid HTTP header name: use only letters, digits and !#$%&'*+-.^_`|~.")]
    InvalidHeaderName(#[error(not(source))] String),
    /// A header value holds a line break, a control character or non-ASCII text; holds the
    /// header's name.
    #[display(
        "Header {_0} has a value HTTP does not allow: use only visible ASCII characters, spaces and tabs (no line breaks or non-ASCII text)."
    )]
    InvalidHeaderValue(#[error(not(source))] String),
    /// `protocolVersion` and a configured `MCP-Protocol-Version` header differ.
    #[display("protocolVersion and MCP-Protocol-Version must match.")]
    ProtocolVersionMismatch,
    /// The transport is none mcpd knows; holds the value as written.
    #[display("Unsupported MCP transport: {_0}. mcpd supports Streamable HTTP and HTTP+SSE.")]
    UnsupportedTransport(#[error(not(source))] String),
    /// The server is a stdio server (see the rule in the `config` module docs); holds its name (the
    /// server key when there is one).
    #[display(
        "Server {_0:?} uses the stdio transport: it has no HTTP endpoint to resolve; start it as a child process instead."
    )]
    Stdio(#[error(not(source))] String),
    /// The endpoint is blank or not `http://` / `https://`.
    #[display("MCP URL must use http:// or https://.")]
    UrlScheme,
    /// The endpoint has the right scheme but is not a usable URL.
    #[display("MCP URL is not valid: {reason}.")]
    InvalidUrl {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The pin is not one of the five revisions; holds the pin.
    #[display("Unsupported MCP protocol version: {_0}")]
    UnsupportedProtocolVersion(#[error(not(source))] String),
    /// `2026-07-28` is pinned with the HTTP+SSE transport.
    #[display("2026-07-28 requires Streamable HTTP. Use a legacy protocol version for HTTP+SSE.")]
    ModernRequiresStreamable,
    /// A stdio entry's `command` is missing, blank or not a string. (The stdio messages name no
    /// server: callers put `server <name>: ` before them.)
    #[display("command must be a non-empty string")]
    CommandNotString,
    /// An entry's `prefix` (a gateway's naming) is neither `"always"` nor `"never"`; holds the
    /// value as JSON.
    #[display("prefix must be \"always\" or \"never\", not {_0}")]
    Prefix(#[error(not(source))] String),
    /// A stdio entry's `args` is an array holding something other than strings.
    #[display("args must be strings")]
    ArgNotString,
    /// A stdio entry's `args` is neither an array nor `null`.
    #[display("args must be an array of strings")]
    ArgsNotArray,
    /// A value of a stdio entry's `env` is not a string; holds the variable's name.
    #[display("env {_0} must be a string")]
    EnvValueNotString(#[error(not(source))] String),
    /// A stdio entry's `env` is neither an object nor `null`.
    #[display("env must be an object of strings")]
    EnvNotObject,
    /// An entry's `oauth` is neither an object nor `null`.
    #[display("oauth must be a JSON object.")]
    OAuthNotObject,
    /// An entry's `oauth` has a field it does not take; holds the field.
    #[display(
        "oauth has no field {_0:?}: it takes clientId, clientSecretEnv, clientSecretFile, grant, privateKeyFile, algorithm and scope."
    )]
    OAuthUnknownField(#[error(not(source))] String),
    /// A field of `oauth` is not text.
    #[display("oauth.{field} must be a string.")]
    OAuthFieldNotString {
        /// The field's key.
        field: &'static str,
    },
    /// `oauth.grant` is none mcpd knows; holds it.
    #[display("oauth.grant {_0:?} is not supported: use client_credentials or authorization_code.")]
    OAuthUnknownGrant(#[error(not(source))] String),
    /// `oauth.algorithm` is not an asymmetric JWS algorithm mcpd signs with; holds it.
    #[display(
        "oauth.algorithm {_0:?} is not supported: use ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA."
    )]
    OAuthUnknownAlgorithm(#[error(not(source))] String),
    /// The `oauth` fields do not fit together (or a name is malformed).
    #[display("oauth: {reason}.")]
    OAuthInvalid {
        /// What is wrong.
        reason: &'static str,
    },
}
