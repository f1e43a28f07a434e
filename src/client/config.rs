//! The client's server-configuration document: which MCP server to talk to, and how.
//!
//! A server is described by a small JSON document, stored exactly as the user (or an agent)
//! wrote it. [`ConfigDocument`] keeps that document, checks it, and turns it into the resolved
//! [`ServerConfig`] the client actors connect with. Edits go through [`ConfigDocument::patch`],
//! which changes one field of the stored JSON in place, so unknown fields, vendor extensions and
//! key order survive a round trip. [`ServersFile`] reads the multi-server `mcpServers` file that
//! desktop MCP hosts use, resolving every entry with the same rules.
//!
//! Nothing here does I/O; reading files and connecting are the runtime's business, and so are
//! per-record settings such as `enabled` (only the timeout clamp lives here, see
//! [`timeout_seconds`]).
//!
//! # The two shapes of a document
//!
//! Both hold exactly one server:
//!
//! - **Flat**: the fields sit at the root.
//!   `{"url":"https://h/mcp","type":"streamableHttp","headers":{"Authorization":"Bearer k"}}`
//! - **Nested** (the desktop-host style): `{"mcpServers":{"myserver":{…same fields…}}}`. The
//!   single key is the *server key*, its value the *node*. In the flat shape the node is the root.
//!
//! # How each field is resolved
//!
//! | field | read from | notes |
//! |---|---|---|
//! | name | `node.name`, else the server key, else `MCP Server` | display only |
//! | endpoint | `node.url`, else `root.url`; likewise `baseUrl` | both set → they must be equal; `url` wins |
//! | transport | `node.type`, else `node.transport` | see [`Transport::parse`]; `stdio` has no endpoint |
//! | headers | `node.headers`, else (nested, node has no `headers` key) `root.headers` | all or nothing, never merged |
//! | pin | `node.protocolVersion`, else `root.protocolVersion`, else an `MCP-Protocol-Version` header | must agree with that header |
//!
//! String fields that are missing, `null` or blank count as absent; any other non-string value
//! is refused ([`ConfigError::FieldNotString`]). `mcpServers` and `headers`, when present, must
//! be objects (`null` included). An entry with no `type`/`transport` but a `command` or `args`
//! key is a stdio server: it has no HTTP endpoint, so resolving it is [`ConfigError::Stdio`];
//! the runtime starts such entries as child processes (`ServerRecord::stdio` in `mcpd-actors`).
//!
//! # Headers
//!
//! Configured headers are sent verbatim, never encoded: names must be HTTP tokens and values
//! visible ASCII, spaces or tabs. Like the seed client this means non-ASCII values cannot be
//! configured (only the generated `Mcp-*` routing headers are Base64-encoded); a value that
//! needs them must be encoded by the user in whatever way the server expects. Names are
//! compared case-insensitively: when a name repeats, the later entry wins and the earlier is
//! dropped. The `Authorization` value is taken verbatim (no `Bearer ` is added).
//!
//! # Checks, in order
//!
//! 1. the document is a JSON object; `mcpServers`, if present, an object with exactly one
//!    server whose value is an object; text fields are strings (checked as each is read);
//! 2. the transport is known (and not stdio);
//! 3. `url` and `baseUrl` agree;
//! 4. `headers` is an object of strings;
//! 5. `protocolVersion` agrees with a configured `MCP-Protocol-Version` header;
//! 6. the endpoint is an `http://` or `https://` URL with a host (and a port from 1 to 65535);
//! 7. every header name and value is legal HTTP;
//! 8. the pin is one of the five revisions;
//! 9. a `2026-07-28` pin uses Streamable HTTP.
//!
//! Each failure is one [`ConfigError`] variant with a fixed, user-facing message.

use derive_more::{Display, Error};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::version::ProtocolVersion;

/// The name of a server whose document names none.
pub const DEFAULT_SERVER_NAME: &str = "MCP Server";

/// The per-server timeout when none (or a non-number) is given, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;

/// The shortest per-server timeout, in seconds.
pub const MIN_TIMEOUT_SECONDS: u64 = 5;

/// The longest per-server timeout, in seconds.
pub const MAX_TIMEOUT_SECONDS: u64 = 300;

const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
const AUTHORIZATION: &str = "Authorization";
const FINGERPRINT_DOMAIN: &str = "mcpd.client.config/v1";
const INVALID_FINGERPRINT_DOMAIN: &str = "mcpd.client.config/invalid/v1";

/// The per-server timeout in seconds: [`DEFAULT_TIMEOUT_SECONDS`] when absent, else clamped to
/// [`MIN_TIMEOUT_SECONDS`]`..=`[`MAX_TIMEOUT_SECONDS`].
pub fn timeout_seconds(value: Option<i64>) -> u64 {
    match value {
        None => DEFAULT_TIMEOUT_SECONDS,
        Some(v) => v.clamp(MIN_TIMEOUT_SECONDS as i64, MAX_TIMEOUT_SECONDS as i64) as u64,
    }
}

/// The per-server timeout typed into a form: a whole number (surrounding white space ignored)
/// is clamped like [`timeout_seconds`]; anything else gives [`DEFAULT_TIMEOUT_SECONDS`].
pub fn parse_timeout_seconds(text: &str) -> u64 {
    let text = text.trim();
    match text.parse::<i64>() {
        Ok(v) => timeout_seconds(Some(v)),
        // Digits too large for an i64 are still "a very long timeout", not "no timeout given".
        Err(_) => {
            let (negative, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.strip_prefix('+').unwrap_or(text)),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                DEFAULT_TIMEOUT_SECONDS
            } else if negative {
                MIN_TIMEOUT_SECONDS
            } else {
                MAX_TIMEOUT_SECONDS
            }
        }
    }
}

/// How the client reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Streamable HTTP (one endpoint; JSON or SSE responses). The default.
    #[default]
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport (a GET stream plus an `endpoint` event for POSTs).
    Sse,
}

impl Transport {
    /// The internal name: `streamable_http` or `sse` (what a `transport` key is patched to).
    pub const fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::Sse => "sse",
        }
    }

    /// The desktop-host spelling: `streamableHttp` or `sse` (what a `type` key is patched to).
    pub const fn document_value(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamableHttp",
            Transport::Sse => "sse",
        }
    }

    /// Reads a `type` / `transport` value. It is lowercased, `-` becomes `_` and white space is
    /// removed; then `sse` is [`Transport::Sse`], and an empty value, `http`, `streamablehttp`
    /// or `streamable_http` is [`Transport::StreamableHttp`]. Anything else (`stdio`, `ws`, …)
    /// is `None`.
    pub fn parse(value: &str) -> Option<Transport> {
        match normalize_transport(value).as_str() {
            "sse" => Some(Transport::Sse),
            "" | "http" | "streamablehttp" | "streamable_http" => Some(Transport::StreamableHttp),
            _ => None,
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn normalize_transport(value: &str) -> String {
    value.to_lowercase().chars().filter(|c| !c.is_whitespace()).map(|c| if c == '-' { '_' } else { c }).collect()
}

/// A field of the document that [`ConfigDocument::patch`] can edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `node.name`; a blank value removes it.
    Name,
    /// The endpoint: whichever of `url` / `baseUrl` the node has (default `url`), plus those
    /// keys at the root of a nested document.
    Url,
    /// The `Authorization` header; an empty value removes it.
    AuthKey,
    /// `node.type` (and `node.transport` when the node has one).
    Transport,
    /// The `protocolVersion` pin; a blank value means automatic negotiation.
    ProtocolVersion,
}

impl Field {
    /// The field an edit argument names, as the configuration tool spells them: `name`, `url`,
    /// `base_url`, `transport`, `auth_key` / `api_key` / `key`, `protocol_version` (the
    /// camelCase forms `baseUrl`, `authKey`, `apiKey`, `protocolVersion` are accepted too).
    pub fn from_argument(name: &str) -> Option<Field> {
        match name {
            "name" => Some(Field::Name),
            "url" | "base_url" | "baseUrl" => Some(Field::Url),
            "transport" => Some(Field::Transport),
            "auth_key" | "authKey" | "api_key" | "apiKey" | "key" => Some(Field::AuthKey),
            "protocol_version" | "protocolVersion" => Some(Field::ProtocolVersion),
            _ => None,
        }
    }
}

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
    /// The server is a stdio server (`type: stdio`, or `command` / `args` without a type); holds
    /// its name (the server key when there is one).
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
}

/// One server, resolved and validated: everything the client needs to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The `mcpServers` key; `None` for a flat document.
    pub key: Option<String>,
    /// `node.name`, else the server key, else [`DEFAULT_SERVER_NAME`].
    pub name: String,
    /// The effective endpoint (`url`, else `baseUrl`), trimmed.
    pub url: String,
    /// How to reach it.
    pub transport: Transport,
    /// The configured headers in document order, sent verbatim. Names are unique ignoring case
    /// (of repeated names only the later entry is kept).
    pub headers: Vec<(String, String)>,
    /// The pinned revision (one of the five wire strings), or `None` to negotiate.
    pub protocol_version: Option<String>,
}

impl ServerConfig {
    /// The value of a configured header, found case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The `Authorization` header verbatim (the seed's `authKey`), if configured.
    pub fn auth_key(&self) -> Option<&str> {
        self.header(AUTHORIZATION)
    }

    /// The pinned revision, typed.
    pub fn pin(&self) -> Option<ProtocolVersion> {
        self.protocol_version.as_deref().and_then(ProtocolVersion::parse)
    }

    /// A stable hex SHA-256 of what decides the connection: the endpoint, the transport, the
    /// headers (names lowercased, sorted by name) and the pin. The name, the server key, unknown
    /// fields, key order and formatting do not count, so two documents that connect the same way
    /// have the same fingerprint, and a cached connection can be kept while it is unchanged.
    pub fn fingerprint(&self) -> String {
        let mut headers: Vec<(String, &str)> =
            self.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.as_str())).collect();
        headers.sort();
        let canonical = serde_json::json!([
            FINGERPRINT_DOMAIN,
            self.url,
            self.transport.as_str(),
            headers.iter().map(|(k, v)| [k.as_str(), *v]).collect::<Vec<_>>(),
            self.protocol_version,
        ]);
        sha256_hex(canonical.to_string().as_bytes())
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A stored single-server configuration document.
///
/// The document is kept as parsed (key order included, thanks to serde_json's
/// `preserve_order`); [`patch`](ConfigDocument::patch) edits it in place and
/// [`resolve`](ConfigDocument::resolve) checks it and reads the [`ServerConfig`] out of it.
#[derive(Debug, Clone)]
pub struct ConfigDocument {
    raw: Map<String, Value>,
    /// The text it was parsed from, until a patch changes it.
    original: Option<String>,
}

impl Default for ConfigDocument {
    /// The document of a new record: `{}` (which does not resolve: it has no URL).
    fn default() -> ConfigDocument {
        ConfigDocument { raw: Map::new(), original: None }
    }
}

impl ConfigDocument {
    /// Parses a document. Only the JSON itself is checked here; see
    /// [`resolve`](ConfigDocument::resolve) for the rest.
    ///
    /// # Errors
    /// [`ConfigError::Json`] with the parser's message, or [`ConfigError::NotAnObject`].
    pub fn parse(text: &str) -> Result<ConfigDocument, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let mut doc = ConfigDocument::from_value(value)?;
        doc.original = Some(text.to_owned());
        Ok(doc)
    }

    /// Takes a document that is already JSON (an agent's `config_json` object).
    ///
    /// # Errors
    /// [`ConfigError::NotAnObject`] unless the value is an object.
    pub fn from_value(value: Value) -> Result<ConfigDocument, ConfigError> {
        match value {
            Value::Object(raw) => Ok(ConfigDocument { raw, original: None }),
            _ => Err(ConfigError::NotAnObject),
        }
    }

    /// The stored document.
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// The stored document as a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.raw)
    }

    /// The text to store: the exact text it was parsed from while no patch has changed it (so a
    /// document saved verbatim stays byte-identical), else [`to_pretty_string`](Self::to_pretty_string).
    pub fn text(&self) -> String {
        self.original.clone().unwrap_or_else(|| self.to_pretty_string())
    }

    /// The document printed with 2-space indentation, keys in their stored order. (White space
    /// of the original text is not kept, and numbers are printed the way serde_json prints them.)
    pub fn to_pretty_string(&self) -> String {
        serde_json::to_string_pretty(&self.raw).unwrap_or_else(|_| compact(&self.raw))
    }

    /// Checks the document and resolves its server (see the module docs for the rules).
    ///
    /// # Errors
    /// The first failed check, in the order listed in the module docs.
    pub fn resolve(&self) -> Result<ServerConfig, ConfigError> {
        let entry = single_entry(&self.raw)?;
        resolve_entry(&self.raw, entry)
    }

    /// [`ServerConfig::fingerprint`] of the resolved server. A document that does not resolve
    /// gets a hash of its stored JSON instead (in its own domain, so it never equals a valid
    /// configuration's), which still changes whenever the document does.
    pub fn fingerprint(&self) -> String {
        match self.resolve() {
            Ok(config) => config.fingerprint(),
            Err(_) => {
                let text = format!("{INVALID_FINGERPRINT_DOMAIN}\n{}", compact(&self.raw));
                sha256_hex(text.as_bytes())
            }
        }
    }

    /// Edits one field of the stored document in place; every other key, known or not, keeps
    /// its value and position.
    ///
    /// - [`Field::Name`]: sets `node.name` (trimmed); blank removes it.
    /// - [`Field::Url`]: the value (trimmed) must be an http(s) URL. It is written to `url` and/or
    ///   `baseUrl`, whichever the node has (`url` when it has neither); in a nested document
    ///   `url` / `baseUrl` keys at the root are overwritten too.
    /// - [`Field::AuthKey`]: when the node has no `headers`, the effective ones (inherited from
    ///   the root) are copied into it first. Every `Authorization` key (any case) is then
    ///   replaced by one holding the value verbatim, at the first one's position and in its
    ///   spelling (appended as `Authorization` when there was none); an empty or blank value
    ///   removes them. Other headers are untouched.
    /// - [`Field::Transport`]: sets `node.type` to `streamableHttp` or `sse`, and a `transport`
    ///   key the node already has to `streamable_http` or `sse`.
    /// - [`Field::ProtocolVersion`]: removes `protocolVersion` and every `MCP-Protocol-Version`
    ///   header (any case) from the root and the node; a non-blank value is then written to
    ///   `node.protocolVersion` (in place when the node had one). Blank means negotiate.
    ///
    /// Only the value itself is checked (plus the document's `mcpServers` shape, which locates
    /// the node); the document as a whole may still fail [`resolve`](Self::resolve), so a
    /// broken document can be repaired one field at a time. On error nothing changes.
    ///
    /// # Errors
    /// A structural error from locating the node, or the error for a bad value:
    /// [`ConfigError::UrlScheme`] / [`ConfigError::InvalidUrl`],
    /// [`ConfigError::InvalidHeaderValue`], [`ConfigError::HeadersNotObject`],
    /// [`ConfigError::UnsupportedTransport`] / [`ConfigError::Stdio`],
    /// [`ConfigError::UnsupportedProtocolVersion`].
    pub fn patch(&mut self, field: Field, value: &str) -> Result<(), ConfigError> {
        let key = single_entry(&self.raw)?.map(|(k, _)| k.to_owned());
        let before = compact(&self.raw);
        match field {
            Field::Name => self.patch_name(key.as_deref(), value)?,
            Field::Url => self.patch_url(key.as_deref(), value)?,
            Field::AuthKey => self.patch_auth_key(key.as_deref(), value)?,
            Field::Transport => self.patch_transport(key.as_deref(), value)?,
            Field::ProtocolVersion => self.patch_protocol_version(key.as_deref(), value)?,
        }
        if compact(&self.raw) != before {
            self.original = None;
        }
        Ok(())
    }

    fn node_mut(&mut self, key: Option<&str>) -> Result<&mut Map<String, Value>, ConfigError> {
        node_mut(&mut self.raw, key).ok_or(ConfigError::NotExactlyOneServer)
    }

    fn patch_name(&mut self, key: Option<&str>, value: &str) -> Result<(), ConfigError> {
        let node = self.node_mut(key)?;
        let value = value.trim();
        if value.is_empty() {
            node.shift_remove("name");
        } else {
            node.insert("name".to_owned(), Value::String(value.to_owned()));
        }
        Ok(())
    }

    fn patch_url(&mut self, key: Option<&str>, value: &str) -> Result<(), ConfigError> {
        let value = value.trim();
        check_endpoint(value)?;
        let node = self.node_mut(key)?;
        let has_url = node.contains_key("url");
        let has_base = node.contains_key("baseUrl");
        if has_url || !has_base {
            node.insert("url".to_owned(), Value::String(value.to_owned()));
        }
        if has_base {
            node.insert("baseUrl".to_owned(), Value::String(value.to_owned()));
        }
        if key.is_some() {
            for field in ["url", "baseUrl"] {
                if self.raw.contains_key(field) {
                    self.raw.insert(field.to_owned(), Value::String(value.to_owned()));
                }
            }
        }
        Ok(())
    }

    fn patch_auth_key(&mut self, key: Option<&str>, value: &str) -> Result<(), ConfigError> {
        let value = if value.trim().is_empty() { None } else { Some(value) };
        if let Some(v) = value {
            if !is_header_value(v) {
                return Err(ConfigError::InvalidHeaderValue(AUTHORIZATION.to_owned()));
            }
        }
        let inherited = match key {
            Some(_) => self.raw.get("headers").cloned(),
            None => None,
        };
        let node = self.node_mut(key)?;
        let headers = match node.get("headers") {
            Some(Value::Object(h)) => h.clone(),
            Some(_) => return Err(ConfigError::HeadersNotObject),
            None => match inherited {
                Some(Value::Object(h)) => h,
                Some(_) => return Err(ConfigError::HeadersNotObject),
                None if value.is_none() => return Ok(()),
                None => Map::new(),
            },
        };
        let mut patched = Map::new();
        let mut placed = false;
        for (k, v) in headers {
            if k.eq_ignore_ascii_case(AUTHORIZATION) {
                if let (false, Some(auth)) = (placed, value) {
                    patched.insert(k, Value::String(auth.to_owned()));
                }
                placed = true;
            } else {
                patched.insert(k, v);
            }
        }
        if let (false, Some(auth)) = (placed, value) {
            patched.insert(AUTHORIZATION.to_owned(), Value::String(auth.to_owned()));
        }
        node.insert("headers".to_owned(), Value::Object(patched));
        Ok(())
    }

    fn patch_transport(&mut self, key: Option<&str>, value: &str) -> Result<(), ConfigError> {
        let node = self.node_mut(key)?;
        let transport = match Transport::parse(value) {
            Some(t) => t,
            None if normalize_transport(value) == "stdio" => {
                return Err(ConfigError::Stdio(display_name(key, node)));
            }
            None => return Err(ConfigError::UnsupportedTransport(value.trim().to_owned())),
        };
        node.insert("type".to_owned(), Value::String(transport.document_value().to_owned()));
        if node.contains_key("transport") {
            node.insert("transport".to_owned(), Value::String(transport.as_str().to_owned()));
        }
        Ok(())
    }

    fn patch_protocol_version(&mut self, key: Option<&str>, value: &str) -> Result<(), ConfigError> {
        let value = value.trim();
        if !value.is_empty() && ProtocolVersion::parse(value).is_none() {
            return Err(ConfigError::UnsupportedProtocolVersion(value.to_owned()));
        }
        // Root first (for a flat document the root is the node, handled below).
        if key.is_some() {
            self.raw.shift_remove("protocolVersion");
            remove_version_headers(&mut self.raw);
        }
        let node = self.node_mut(key)?;
        remove_version_headers(node);
        if value.is_empty() {
            node.shift_remove("protocolVersion");
        } else {
            node.insert("protocolVersion".to_owned(), Value::String(value.to_owned()));
        }
        Ok(())
    }
}

/// The document on one line, keys in stored order.
fn compact(object: &Map<String, Value>) -> String {
    serde_json::to_string(object).unwrap_or_default()
}

fn remove_version_headers(object: &mut Map<String, Value>) {
    if let Some(Value::Object(headers)) = object.get_mut("headers") {
        headers.retain(|k, _| !k.eq_ignore_ascii_case(PROTOCOL_VERSION_HEADER));
    }
}

fn node_mut<'a>(root: &'a mut Map<String, Value>, key: Option<&str>) -> Option<&'a mut Map<String, Value>> {
    match key {
        None => Some(root),
        Some(k) => root.get_mut("mcpServers")?.as_object_mut()?.get_mut(k)?.as_object_mut(),
    }
}

/// The single `mcpServers` entry of a document, or `None` for a flat one.
fn single_entry(root: &Map<String, Value>) -> Result<Option<(&str, &Value)>, ConfigError> {
    match root.get("mcpServers") {
        None => Ok(None),
        Some(Value::Object(servers)) => {
            let mut entries = servers.iter();
            match (entries.next(), entries.next()) {
                (Some((k, v)), None) => {
                    if v.is_object() {
                        Ok(Some((k.as_str(), v)))
                    } else {
                        Err(ConfigError::ServerNotObject(k.clone()))
                    }
                }
                _ => Err(ConfigError::NotExactlyOneServer),
            }
        }
        Some(_) => Err(ConfigError::McpServersNotObject),
    }
}

/// A non-blank string field, trimmed. Missing, `null` and blank are `None`.
fn text_field<'a>(object: &'a Map<String, Value>, field: &'static str) -> Result<Option<&'a str>, ConfigError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            Ok(if s.is_empty() { None } else { Some(s) })
        }
        Some(_) => Err(ConfigError::FieldNotString { field }),
    }
}

/// The name used in messages: the server key, else `node.name`, else the default.
fn display_name(key: Option<&str>, node: &Map<String, Value>) -> String {
    let name = match node.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
        _ => None,
    };
    key.or(name).unwrap_or(DEFAULT_SERVER_NAME).to_owned()
}

/// Resolves one server: `entry` is the `mcpServers` key and node of a nested document, `None`
/// for a flat one (whose node is the root).
fn resolve_entry(root: &Map<String, Value>, entry: Option<(&str, &Value)>) -> Result<ServerConfig, ConfigError> {
    let (key, node) = match entry {
        None => (None, root),
        Some((k, v)) => match v {
            Value::Object(node) => (Some(k), node),
            _ => return Err(ConfigError::ServerNotObject(k.to_owned())),
        },
    };
    let nested = key.is_some();
    let inherit = |field: &'static str| -> Result<Option<&str>, ConfigError> {
        match text_field(node, field)? {
            Some(v) => Ok(Some(v)),
            None if nested => text_field(root, field),
            None => Ok(None),
        }
    };

    let name =
        text_field(node, "name")?.or(key.filter(|k| !k.trim().is_empty())).unwrap_or(DEFAULT_SERVER_NAME).to_owned();

    // 2. transport (stdio first: such an entry has no URL to complain about)
    let explicit = match text_field(node, "type")? {
        Some(t) => Some(t),
        None => text_field(node, "transport")?,
    };
    let transport = match explicit {
        Some(value) => match Transport::parse(value) {
            Some(t) => t,
            None if normalize_transport(value) == "stdio" => {
                return Err(ConfigError::Stdio(display_name(key, node)));
            }
            None => return Err(ConfigError::UnsupportedTransport(value.to_owned())),
        },
        None if node.contains_key("command") || node.contains_key("args") => {
            return Err(ConfigError::Stdio(display_name(key, node)));
        }
        None => Transport::StreamableHttp,
    };

    // 3. endpoint agreement
    let url = inherit("url")?;
    let base_url = inherit("baseUrl")?;
    if let (Some(u), Some(b)) = (url, base_url) {
        if u != b {
            return Err(ConfigError::EndpointMismatch);
        }
    }
    let url = url.or(base_url).unwrap_or("").to_owned();

    // 4. headers: the node's, else (nested) the root's; all or nothing
    let headers_value = match node.get("headers") {
        Some(h) => Some(h),
        None if nested => root.get("headers"),
        None => None,
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    match headers_value {
        None => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Value::String(v) = v else {
                    return Err(ConfigError::HeaderNotString(k.clone()));
                };
                headers.retain(|(existing, _)| !existing.eq_ignore_ascii_case(k));
                headers.push((k.clone(), v.clone()));
            }
        }
        Some(_) => return Err(ConfigError::HeadersNotObject),
    }

    // 5. the pin and the configured MCP-Protocol-Version header
    let header_version =
        headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(PROTOCOL_VERSION_HEADER)).map(|(_, v)| v.trim());
    let protocol_version = match (inherit("protocolVersion")?, header_version) {
        (Some(pin), Some(header)) if pin != header => return Err(ConfigError::ProtocolVersionMismatch),
        (Some(pin), _) => Some(pin.to_owned()),
        (None, Some(header)) if !header.is_empty() => Some(header.to_owned()),
        (None, _) => None,
    };

    // 6. the endpoint itself
    check_endpoint(&url)?;

    // 7. headers must be sendable verbatim
    for (k, v) in &headers {
        if !is_token(k) {
            return Err(ConfigError::InvalidHeaderName(k.clone()));
        }
        if !is_header_value(v) {
            return Err(ConfigError::InvalidHeaderValue(k.clone()));
        }
    }

    // 8–9. the pin
    if let Some(pin) = &protocol_version {
        let version =
            ProtocolVersion::parse(pin).ok_or_else(|| ConfigError::UnsupportedProtocolVersion(pin.clone()))?;
        if version == ProtocolVersion::V2026_07_28 && transport != Transport::StreamableHttp {
            return Err(ConfigError::ModernRequiresStreamable);
        }
    }

    Ok(ServerConfig { key: key.map(str::to_owned), name, url, transport, headers, protocol_version })
}

/// An `http://` or `https://` URL (scheme case-insensitive) with a host, an optional port from
/// 1 to 65535, and no white space or control characters.
fn check_endpoint(url: &str) -> Result<(), ConfigError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &url[7..]
    } else if lower.starts_with("https://") {
        &url[8..]
    } else {
        return Err(ConfigError::UrlScheme);
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::InvalidUrl { reason: "it contains white space or control characters" });
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let Some((host, after)) = bracketed.split_once(']') else {
            return Err(ConfigError::InvalidUrl { reason: "its IPv6 address is missing the closing ]" });
        };
        if host.is_empty() || !host.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return Err(ConfigError::InvalidUrl { reason: "its IPv6 address is malformed" });
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Err(ConfigError::InvalidUrl { reason: "only a :port may follow the IPv6 address" }),
            },
        };
        (host, port)
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err(ConfigError::InvalidUrl { reason: "it has no host" });
    }
    if !host_port.starts_with('[') && !host.chars().all(|c| c.is_alphanumeric() || "-._~%".contains(c)) {
        return Err(ConfigError::InvalidUrl { reason: "its host contains characters a host name cannot have" });
    }
    if let Some(port) = port.filter(|p| !p.is_empty()) {
        let valid = port.bytes().all(|b| b.is_ascii_digit()) && matches!(port.parse::<u32>(), Ok(1..=65535));
        if !valid {
            return Err(ConfigError::InvalidUrl { reason: "its port must be a number from 1 to 65535" });
        }
    }
    Ok(())
}

/// An HTTP token (RFC 9110 `tchar`s, at least one).
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value that can be sent verbatim: tab or 0x20–0x7E (what OkHttp accepts).
fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// A desktop MCP host's multi-server file: `{"mcpServers": {"<name>": {…}, …}, …}`.
///
/// Each entry is resolved exactly like the node of a nested single-server document (root-level
/// `headers`, `protocolVersion`, `url` / `baseUrl` are inherited the same way), so one bad or
/// stdio entry does not hide the others. A file without `mcpServers` has no servers. The file
/// is strict JSON (no comments).
#[derive(Debug, Clone)]
pub struct ServersFile {
    raw: Map<String, Value>,
}

impl ServersFile {
    /// Parses a servers file.
    ///
    /// # Errors
    /// [`ConfigError::Json`], [`ConfigError::NotAnObject`], or
    /// [`ConfigError::McpServersNotObject`] when `mcpServers` is present but not an object.
    pub fn parse(text: &str) -> Result<ServersFile, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        ServersFile::from_value(value)
    }

    /// Takes a servers file that is already JSON.
    ///
    /// # Errors
    /// As [`parse`](ServersFile::parse), minus the JSON syntax.
    pub fn from_value(value: Value) -> Result<ServersFile, ConfigError> {
        let Value::Object(raw) = value else {
            return Err(ConfigError::NotAnObject);
        };
        match raw.get("mcpServers") {
            None | Some(Value::Object(_)) => Ok(ServersFile { raw }),
            Some(_) => Err(ConfigError::McpServersNotObject),
        }
    }

    fn entries(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.raw.get("mcpServers").and_then(Value::as_object).into_iter().flatten()
    }

    /// The server names (the `mcpServers` keys), in file order.
    pub fn names(&self) -> Vec<&str> {
        self.entries().map(|(k, _)| k.as_str()).collect()
    }

    /// How many servers the file lists.
    pub fn len(&self) -> usize {
        self.entries().count()
    }

    /// Whether the file lists no server.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every server in file order, each resolved on its own; stdio entries are
    /// [`ConfigError::Stdio`].
    pub fn servers(&self) -> Vec<(String, Result<ServerConfig, ConfigError>)> {
        self.entries().map(|(k, v)| (k.clone(), resolve_entry(&self.raw, Some((k.as_str(), v))))).collect()
    }

    /// One server by its exact key; `None` when the file has no such entry.
    pub fn get(&self, name: &str) -> Option<Result<ServerConfig, ConfigError>> {
        self.entries().find(|(k, _)| k.as_str() == name).map(|(k, v)| resolve_entry(&self.raw, Some((k.as_str(), v))))
    }

    /// A single-server [`ConfigDocument`] for one entry, to store or edit: the file's root with
    /// `mcpServers` narrowed to that entry (every other key kept, in order).
    pub fn document(&self, name: &str) -> Option<ConfigDocument> {
        let (key, node) = self.entries().find(|(k, _)| k.as_str() == name)?;
        let mut servers = Map::new();
        servers.insert(key.clone(), node.clone());
        let raw = self
            .raw
            .iter()
            .map(|(k, v)| {
                let v = if k == "mcpServers" { Value::Object(servers.clone()) } else { v.clone() };
                (k.clone(), v)
            })
            .collect();
        Some(ConfigDocument { raw, original: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(text: &str) -> ConfigDocument {
        ConfigDocument::parse(text).expect("parses")
    }

    fn resolve(text: &str) -> Result<ServerConfig, ConfigError> {
        ConfigDocument::parse(text)?.resolve()
    }

    fn message(text: &str) -> String {
        resolve(text).expect_err("must be rejected").to_string()
    }

    fn keys(object: &Map<String, Value>) -> Vec<&str> {
        object.keys().map(String::as_str).collect()
    }

    fn node<'a>(d: &'a ConfigDocument, key: &str) -> &'a Map<String, Value> {
        d.as_object()["mcpServers"][key].as_object().expect("node")
    }

    // ---- McpConfigurationTest (seed §1.14), without the Android records ----

    #[test]
    fn seed_raw_update_preserves_document_and_never_inherits_old_credentials() {
        let raw = r#"{
    "mcpServers": {
        "special": {
            "url": "https://new.example/mcp",
            "headers": { "authorization": "Token EXACT", "X-Custom": "custom" },
            "vendor": { "nested": [1, { "deep": true }] }
        }
    },
    "protocolVersion": "2026-07-28",
    "extension": [1, 2, 3]
}"#;
        let d = doc(raw);
        // Stored byte for byte while unedited.
        assert_eq!(d.text(), raw);
        let c = d.resolve().unwrap();
        assert_eq!(c.url, "https://new.example/mcp");
        assert_eq!(c.auth_key(), Some("Token EXACT"));
        assert_eq!(c.header("x-custom"), Some("custom"));
        assert_eq!(c.protocol_version.as_deref(), Some("2026-07-28"), "inherited from the root");
        assert_eq!(c.pin(), Some(ProtocolVersion::V2026_07_28));
        assert_eq!(c.key.as_deref(), Some("special"));
        assert_eq!(c.name, "special");

        // A replacement document stands alone: the old Authorization is not carried over.
        let replaced = doc(r#"{"url":"https://other.example/mcp","headers":{}}"#);
        let c2 = replaced.resolve().unwrap();
        assert_eq!(c2.auth_key(), None);
        assert!(c2.headers.is_empty());
        assert_eq!(c2.protocol_version, None);
        assert_ne!(replaced.fingerprint(), d.fingerprint());
    }

    #[test]
    fn seed_basic_field_edit_leaves_authentication_and_extensions_untouched() {
        let mut d = doc(
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"raw-key","X-API-Key":"another"},"vendor":{"keep":true}}"#,
        );
        d.patch(Field::Url, "https://b.example/mcp").unwrap();
        let c = d.resolve().unwrap();
        assert_eq!(c.url, "https://b.example/mcp");
        assert_eq!(c.auth_key(), Some("raw-key"));
        assert_eq!(c.header("X-API-Key"), Some("another"));
        assert_eq!(d.as_object()["vendor"], json!({"keep": true}));
        assert!(!d.as_object().contains_key("mcpServers"), "no wrapper added");
        assert_eq!(keys(d.as_object()), ["url", "headers", "vendor"]);

        d.patch(Field::AuthKey, "").unwrap();
        let c = d.resolve().unwrap();
        assert_eq!(c.auth_key(), None);
        assert_eq!(c.header("X-API-Key"), Some("another"));
        assert_eq!(d.as_object()["headers"], json!({"X-API-Key": "another"}));
        assert_eq!(d.as_object()["vendor"], json!({"keep": true}));
    }

    #[test]
    fn seed_nested_json_object_is_accepted_for_ai_configuration() {
        let value = json!({
            "mcpServers": {
                "service": {
                    "type": "http",
                    "url": "https://service.example/mcp",
                    "headers": {"Authorization": "key"},
                    "special": false
                }
            }
        });
        let d = ConfigDocument::from_value(value.clone()).unwrap();
        assert_eq!(d.clone().into_value(), value, "saved semantically equal");
        let c = d.resolve().unwrap();
        assert_eq!(c.name, "service");
        assert_eq!(c.key.as_deref(), Some("service"));
        assert_eq!(c.auth_key(), Some("key"));
        assert_eq!(c.transport, Transport::StreamableHttp);
        // printed with 2-space indentation
        assert!(d.text().starts_with("{\n  \"mcpServers\": {\n    \"service\": {\n      \"type\": \"http\""));
    }

    #[test]
    fn seed_invalid_json_and_ambiguous_endpoint_are_rejected_without_fallback() {
        assert!(matches!(ConfigDocument::parse("{invalid"), Err(ConfigError::Json(_))));
        assert_eq!(resolve("{}"), Err(ConfigError::UrlScheme));
        assert_eq!(
            resolve(r#"{"url":"https://a.example/mcp","baseUrl":"https://b.example/mcp"}"#),
            Err(ConfigError::EndpointMismatch)
        );
        assert_eq!(
            resolve(r#"{"mcpServers":{"a":{"url":"https://a.example/"},"b":{"url":"https://b.example/"}}}"#),
            Err(ConfigError::NotExactlyOneServer)
        );
        assert_eq!(
            resolve(r#"{"url":"https://a.example/mcp","headers":{"Authorization":42}}"#),
            Err(ConfigError::HeaderNotString("Authorization".into()))
        );
        assert_eq!(
            resolve(r#"{"mcpServers":{"local":{"type":"stdio","command":"npx","args":["server"]}}}"#),
            Err(ConfigError::Stdio("local".into()))
        );
    }

    #[test]
    fn seed_node_protocol_and_case_insensitive_header_are_read_without_rewriting() {
        let raw = r#"{"mcpServers":{"s":{"url":"https://a.example/mcp","protocolVersion":"2026-07-28","headers":{"mcp-protocol-version":"2026-07-28","AUTHORIZATION":"key-without-prefix"}}}}"#;
        let mut d = doc(raw);
        let c = d.resolve().unwrap();
        assert_eq!(c.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(c.auth_key(), Some("key-without-prefix"), "verbatim, no Bearer added");
        assert_eq!(d.text(), raw, "reading rewrites nothing");

        d.patch(Field::ProtocolVersion, "").unwrap();
        let c = d.resolve().unwrap();
        assert_eq!(c.protocol_version, None, "blank means negotiate");
        assert_eq!(c.auth_key(), Some("key-without-prefix"));
        assert_eq!(node(&d, "s")["headers"], json!({"AUTHORIZATION": "key-without-prefix"}));
        assert!(!node(&d, "s").contains_key("protocolVersion"));
    }

    // ---- round trip ----

    #[test]
    fn patch_round_trip_keeps_unknown_fields_and_key_order() {
        let original = r#"{
  "zeta": {"b": 2, "a": 1},
  "mcpServers": {
    "svc": {
      "vendorFirst": [3, 2, 1],
      "url": "https://old.example/mcp",
      "headers": {"X-Z": "z", "Authorization": "Bearer t", "X-A": "a"},
      "type": "sse",
      "aardvark": null,
      "nested": {"y": [true, false], "x": {"deeper": "still"}}
    }
  },
  "alpha": "last",
  "number": 1.5
}"#;
        let mut d = doc(original);
        d.patch(Field::Url, "https://new.example/mcp").unwrap();
        let printed = d.to_pretty_string();
        assert_eq!(d.text(), printed, "an edited document is stored pretty-printed");
        assert!(printed.starts_with("{\n  \"zeta\": {\n    \"b\": 2,\n    \"a\": 1\n  },\n  \"mcpServers\""));

        let reparsed = doc(&printed);
        let expected: Value =
            serde_json::from_str(&original.replace("https://old.example/mcp", "https://new.example/mcp")).unwrap();
        // Compact strings compare values *and* key order at every level.
        assert_eq!(serde_json::to_string(reparsed.as_object()).unwrap(), expected.to_string());
        assert_eq!(keys(reparsed.as_object()), ["zeta", "mcpServers", "alpha", "number"]);
        assert_eq!(keys(node(&reparsed, "svc")), ["vendorFirst", "url", "headers", "type", "aardvark", "nested"]);
        assert_eq!(reparsed.resolve().unwrap().url, "https://new.example/mcp");

        // Every other field patched in turn: still only the targeted keys change.
        let mut d = reparsed;
        d.patch(Field::AuthKey, "Bearer u").unwrap();
        d.patch(Field::Transport, "http").unwrap();
        d.patch(Field::Name, "Service").unwrap();
        d.patch(Field::ProtocolVersion, "2025-06-18").unwrap();
        let again = doc(&d.to_pretty_string());
        let n = node(&again, "svc");
        assert_eq!(keys(n), ["vendorFirst", "url", "headers", "type", "aardvark", "nested", "name", "protocolVersion"]);
        assert_eq!(n["headers"], json!({"X-Z": "z", "Authorization": "Bearer u", "X-A": "a"}));
        assert_eq!(keys(n["headers"].as_object().unwrap()), ["X-Z", "Authorization", "X-A"]);
        assert_eq!(n["type"], "streamableHttp");
        assert_eq!(n["aardvark"], Value::Null);
        assert_eq!(n["nested"], json!({"y": [true, false], "x": {"deeper": "still"}}));
        assert_eq!(keys(again.as_object()), ["zeta", "mcpServers", "alpha", "number"]);
        assert_eq!(again.as_object()["number"], json!(1.5));
        let c = again.resolve().unwrap();
        assert_eq!(
            (c.name.as_str(), c.transport, c.pin()),
            ("Service", Transport::StreamableHttp, Some(ProtocolVersion::V2025_06_18))
        );
    }

    #[test]
    fn text_stays_verbatim_until_a_patch_changes_something() {
        let raw = "{ \"url\" : \"https://a.example/mcp\",\n\"name\":\"Same\" }";
        let mut d = doc(raw);
        d.patch(Field::Name, "Same").unwrap();
        d.patch(Field::AuthKey, "").unwrap(); // nothing to remove, no headers object created
        d.patch(Field::ProtocolVersion, " ").unwrap();
        assert_eq!(d.text(), raw);
        assert!(!d.as_object().contains_key("headers"));
        d.patch(Field::Name, "Other").unwrap();
        assert_eq!(d.text(), "{\n  \"url\": \"https://a.example/mcp\",\n  \"name\": \"Other\"\n}");
        assert_eq!(ConfigDocument::default().to_pretty_string(), "{}");
    }

    // ---- every message, exactly ----

    #[test]
    fn validation_messages_are_exact() {
        let cases: &[(&str, &str)] = &[
            (r#"[1]"#, "The MCP configuration must be a JSON object."),
            (r#"{"mcpServers":[]}"#, "mcpServers must be a JSON object."),
            (r#"{"mcpServers":null}"#, "mcpServers must be a JSON object."),
            (r#"{"mcpServers":{}}"#, "Each MCP configuration must contain exactly one server in mcpServers."),
            (
                r#"{"mcpServers":{"a":{"url":"https://a/"},"b":{"url":"https://b/"}}}"#,
                "Each MCP configuration must contain exactly one server in mcpServers.",
            ),
            (r#"{"mcpServers":{"x":"https://a/"}}"#, "Server \"x\" in mcpServers must be a JSON object."),
            (r#"{"url":42}"#, "url must be a string."),
            (r#"{"url":"https://a/","protocolVersion":20250618}"#, "protocolVersion must be a string."),
            (
                r#"{"url":"https://a.example/mcp","baseUrl":"https://b.example/mcp"}"#,
                "url and baseUrl must match. Keep only the endpoint field required by your server.",
            ),
            (r#"{"url":"https://a/","headers":[]}"#, "headers must be a JSON object."),
            (r#"{"url":"https://a/","headers":null}"#, "headers must be a JSON object."),
            (r#"{"url":"https://a/","headers":{"X-Num":42}}"#, "Header X-Num must be a string."),
            (r#"{"url":"https://a/","headers":{"X-Obj":{"v":"1"}}}"#, "Header X-Obj must be a string."),
            (
                r#"{"url":"https://a/","protocolVersion":"2025-06-18","headers":{"MCP-Protocol-Version":"2025-11-25"}}"#,
                "protocolVersion and MCP-Protocol-Version must match.",
            ),
            (
                r#"{"url":"https://a/","type":"websocket"}"#,
                "Unsupported MCP transport: websocket. mcpd supports Streamable HTTP and HTTP+SSE.",
            ),
            (r#"{"url":"ftp://a.example/"}"#, "MCP URL must use http:// or https://."),
            (r#"{"url":"a.example/mcp"}"#, "MCP URL must use http:// or https://."),
            (r#"{}"#, "MCP URL must use http:// or https://."),
            (r#"{"url":"   "}"#, "MCP URL must use http:// or https://."),
            (r#"{"url":"https:///mcp"}"#, "MCP URL is not valid: it has no host."),
            (r#"{"url":"https://a.example:0/"}"#, "MCP URL is not valid: its port must be a number from 1 to 65535."),
            (r#"{"url":"https://a b/"}"#, "MCP URL is not valid: it contains white space or control characters."),
            (
                r#"{"url":"https://a/","headers":{"Bad Name":"v"}}"#,
                "Header name \"Bad Name\" is not a valid HTTP header name: use only letters, digits and !#$%&'*+-.^_`|~.",
            ),
            (
                r#"{"url":"https://a/","headers":{"X-Text":"中文"}}"#,
                "Header X-Text has a value HTTP does not allow: use only visible ASCII characters, spaces and tabs (no line breaks or non-ASCII text).",
            ),
            (r#"{"url":"https://a/","protocolVersion":"2099-01-01"}"#, "Unsupported MCP protocol version: 2099-01-01"),
            (
                r#"{"url":"https://a/","type":"sse","protocolVersion":"2026-07-28"}"#,
                "2026-07-28 requires Streamable HTTP. Use a legacy protocol version for HTTP+SSE.",
            ),
            (
                r#"{"command":"npx","args":["-y","server"]}"#,
                "Server \"MCP Server\" uses the stdio transport: it has no HTTP endpoint to resolve; start it as a child process instead.",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(message(text), *expected, "for {text}");
        }
        let json = ConfigDocument::parse("{invalid").unwrap_err().to_string();
        assert_eq!(json, "Invalid MCP configuration JSON: key must be a string at line 1 column 2");
    }

    #[test]
    fn header_values_may_not_smuggle_lines_or_control_characters() {
        for bad in ["a\r\nInjected: 1", "a\nb", "nul\u{0}", "del\u{7f}", "é"] {
            let text = json!({"url": "https://a/", "headers": {"X-V": bad}}).to_string();
            assert_eq!(resolve(&text), Err(ConfigError::InvalidHeaderValue("X-V".into())), "{bad:?}");
        }
        for bad in ["", "X:Y", "X Y", "X\"", "Ä", "(x)"] {
            let text = json!({"url": "https://a/", "headers": {bad: "v"}}).to_string();
            assert_eq!(resolve(&text), Err(ConfigError::InvalidHeaderName(bad.into())), "{bad:?}");
        }
        // Tabs, spaces, every visible ASCII character and every token character are fine.
        let text = json!({"url": "https://a/", "headers": {
            "!#$%&'*+-.^_`|~Az09": " a\tb ~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|} ",
            "Empty": ""
        }})
        .to_string();
        assert_eq!(resolve(&text).unwrap().headers.len(), 2);
    }

    #[test]
    fn endpoint_must_be_a_usable_http_url() {
        for good in [
            "HTTPS://Example.COM:8443/mcp?x=1#frag",
            "http://user:pw@host/",
            "http://[::1]:8080/mcp",
            "http://127.0.0.1/",
            "http://host:/empty-port",
            "https://bücher.example/",
            "http://localhost",
            "  https://trimmed.example/mcp  ",
        ] {
            let c = resolve(&json!({ "url": good }).to_string()).unwrap_or_else(|e| panic!("{good}: {e}"));
            assert_eq!(c.url, good.trim());
        }
        for (bad, err) in [
            ("https://", ConfigError::InvalidUrl { reason: "it has no host" }),
            ("http://:80/", ConfigError::InvalidUrl { reason: "it has no host" }),
            ("http://user@/", ConfigError::InvalidUrl { reason: "it has no host" }),
            ("http://host:99999/", ConfigError::InvalidUrl { reason: "its port must be a number from 1 to 65535" }),
            ("http://host:8a/", ConfigError::InvalidUrl { reason: "its port must be a number from 1 to 65535" }),
            ("http://host:+80/", ConfigError::InvalidUrl { reason: "its port must be a number from 1 to 65535" }),
            ("http://[::1/", ConfigError::InvalidUrl { reason: "its IPv6 address is missing the closing ]" }),
            ("http://[zz]/", ConfigError::InvalidUrl { reason: "its IPv6 address is malformed" }),
            ("http://[::1]x/", ConfigError::InvalidUrl { reason: "only a :port may follow the IPv6 address" }),
            ("http://a\tb/", ConfigError::InvalidUrl { reason: "it contains white space or control characters" }),
            (
                "http://a<b>/",
                ConfigError::InvalidUrl { reason: "its host contains characters a host name cannot have" },
            ),
            ("ws://host/", ConfigError::UrlScheme),
            ("httpx://host/", ConfigError::UrlScheme),
            ("http:/host/", ConfigError::UrlScheme),
        ] {
            assert_eq!(resolve(&json!({ "url": bad }).to_string()), Err(err), "{bad}");
        }
    }

    // ---- field resolution ----

    #[test]
    fn transport_aliases_and_key_precedence() {
        for (value, expected) in [
            ("http", Transport::StreamableHttp),
            ("streamableHttp", Transport::StreamableHttp),
            ("streamable_http", Transport::StreamableHttp),
            ("streamable-http", Transport::StreamableHttp),
            ("Streamable HTTP", Transport::StreamableHttp),
            ("STREAMABLEHTTP", Transport::StreamableHttp),
            ("HTTP", Transport::StreamableHttp),
            ("", Transport::StreamableHttp),
            ("sse", Transport::Sse),
            ("SSE", Transport::Sse),
            (" sse ", Transport::Sse),
        ] {
            assert_eq!(Transport::parse(value), Some(expected), "{value:?}");
            let c = resolve(&json!({"url": "https://a/", "type": value}).to_string()).unwrap();
            assert_eq!(c.transport, expected, "type {value:?}");
            let c = resolve(&json!({"url": "https://a/", "transport": value}).to_string()).unwrap();
            assert_eq!(c.transport, expected, "transport {value:?}");
        }
        for unknown in ["stdio", "websocket", "streamable", "https"] {
            assert_eq!(Transport::parse(unknown), None);
        }
        // type wins over transport; a blank or null type falls through to transport.
        assert_eq!(
            resolve(r#"{"url":"https://a/","type":"http","transport":"sse"}"#).unwrap().transport,
            Transport::StreamableHttp
        );
        assert_eq!(resolve(r#"{"url":"https://a/","type":" ","transport":"sse"}"#).unwrap().transport, Transport::Sse);
        assert_eq!(resolve(r#"{"url":"https://a/","type":null,"transport":"sse"}"#).unwrap().transport, Transport::Sse);
        assert_eq!(resolve(r#"{"url":"https://a/"}"#).unwrap().transport, Transport::StreamableHttp);
        assert_eq!(Transport::default(), Transport::StreamableHttp);
        assert_eq!((Transport::Sse.as_str(), Transport::Sse.document_value()), ("sse", "sse"));
        assert_eq!(
            (Transport::StreamableHttp.to_string(), Transport::StreamableHttp.document_value()),
            ("streamable_http".to_owned(), "streamableHttp")
        );
    }

    #[test]
    fn stdio_entries_are_refused_with_their_name_before_any_url_check() {
        let stdio = |name: &str| ConfigError::Stdio(name.into());
        assert_eq!(resolve(r#"{"mcpServers":{"fs":{"command":"npx"}}}"#), Err(stdio("fs")));
        assert_eq!(resolve(r#"{"mcpServers":{"fs":{"args":["x"]}}}"#), Err(stdio("fs")));
        assert_eq!(resolve(r#"{"mcpServers":{"fs":{"type":"STDIO","url":"https://a/"}}}"#), Err(stdio("fs")));
        assert_eq!(resolve(r#"{"name":"Files","transport":"stdio"}"#), Err(stdio("Files")));
        // An explicit network transport wins over a stray command.
        assert_eq!(
            resolve(r#"{"url":"https://a/","type":"http","command":"ignored"}"#).unwrap().transport,
            Transport::StreamableHttp
        );
    }

    #[test]
    fn endpoint_fields_resolve_with_root_fallback_in_the_nested_shape() {
        let c = resolve(r#"{"baseUrl":"https://base.example/mcp"}"#).unwrap();
        assert_eq!(c.url, "https://base.example/mcp");
        let c = resolve(r#"{"url":" https://same/ ","baseUrl":"https://same/"}"#).unwrap();
        assert_eq!(c.url, "https://same/");
        let c = resolve(r#"{"url":"https://root.example/","mcpServers":{"s":{}}}"#).unwrap();
        assert_eq!(c.url, "https://root.example/");
        let c = resolve(r#"{"url":"https://root.example/","mcpServers":{"s":{"url":"https://node.example/"}}}"#);
        assert_eq!(c.unwrap().url, "https://node.example/", "the node's url wins; the root's baseUrl is not set");
        assert_eq!(
            resolve(r#"{"baseUrl":"https://root.example/","mcpServers":{"s":{"url":"https://node.example/"}}}"#),
            Err(ConfigError::EndpointMismatch),
            "node url vs inherited baseUrl"
        );
        let c = resolve(r#"{"url":"","baseUrl":"https://b/"}"#).unwrap();
        assert_eq!(c.url, "https://b/", "a blank url counts as absent");
    }

    #[test]
    fn name_falls_back_to_the_server_key_then_the_default() {
        assert_eq!(resolve(r#"{"url":"https://a/"}"#).unwrap().name, DEFAULT_SERVER_NAME);
        assert_eq!(resolve(r#"{"url":"https://a/","name":"  Mine "}"#).unwrap().name, "Mine");
        assert_eq!(resolve(r#"{"mcpServers":{"key":{"url":"https://a/"}}}"#).unwrap().name, "key");
        assert_eq!(resolve(r#"{"mcpServers":{"key":{"url":"https://a/","name":" "}}}"#).unwrap().name, "key");
        assert_eq!(resolve(r#"{"mcpServers":{"key":{"url":"https://a/","name":"Shown"}}}"#).unwrap().name, "Shown");
        assert_eq!(resolve(r#"{"mcpServers":{"":{"url":"https://a/"}}}"#).unwrap().name, DEFAULT_SERVER_NAME);
        assert_eq!(resolve(r#"{"url":"https://a/","name":null}"#).unwrap().name, DEFAULT_SERVER_NAME);
        assert_eq!(resolve(r#"{"url":"https://a/"}"#).unwrap().key, None);
    }

    #[test]
    fn root_headers_are_inherited_all_or_nothing() {
        let root = r#""headers":{"Authorization":"root-key","X-Root":"1"}"#;
        let c = resolve(&format!(r#"{{{root},"mcpServers":{{"s":{{"url":"https://a/"}}}}}}"#)).unwrap();
        assert_eq!(c.headers, vec![("Authorization".into(), "root-key".into()), ("X-Root".into(), "1".into())]);

        let c =
            resolve(&format!(r#"{{{root},"mcpServers":{{"s":{{"url":"https://a/","headers":{{"X-Node":"2"}}}}}}}}"#))
                .unwrap();
        assert_eq!(c.headers, vec![("X-Node".into(), "2".into())], "no merging");
        assert_eq!(c.auth_key(), None);

        let c = resolve(&format!(r#"{{{root},"mcpServers":{{"s":{{"url":"https://a/","headers":{{}}}}}}}}"#)).unwrap();
        assert!(c.headers.is_empty(), "an empty node object blocks inheritance");

        assert_eq!(
            resolve(r#"{"headers":"x","mcpServers":{"s":{"url":"https://a/"}}}"#),
            Err(ConfigError::HeadersNotObject)
        );
        // The root's bad headers do not matter when the node has its own.
        assert!(resolve(r#"{"headers":"x","mcpServers":{"s":{"url":"https://a/","headers":{}}}}"#).is_ok());
        // Inherited headers are validated like the node's.
        assert_eq!(
            resolve(r#"{"headers":{"X":1},"mcpServers":{"s":{"url":"https://a/"}}}"#),
            Err(ConfigError::HeaderNotString("X".into()))
        );
    }

    #[test]
    fn duplicate_headers_ignore_case_and_the_later_wins() {
        let c = resolve(
            r#"{"url":"https://a/","headers":{"authorization":"first","X-A":"1","AUTHORIZATION":"second","x-a":"2","X-B":"3"}}"#,
        )
        .unwrap();
        assert_eq!(
            c.headers,
            vec![("AUTHORIZATION".into(), "second".into()), ("x-a".into(), "2".into()), ("X-B".into(), "3".into())]
        );
        assert_eq!(c.auth_key(), Some("second"));
        assert_eq!(c.header("X-a"), Some("2"));
        assert_eq!(c.header("missing"), None);

        // The version header is compared after deduplication.
        let c = resolve(
            r#"{"url":"https://a/","protocolVersion":"2025-06-18","headers":{"MCP-Protocol-Version":"2025-03-26","mcp-protocol-version":"2025-06-18"}}"#,
        )
        .unwrap();
        assert_eq!(c.protocol_version.as_deref(), Some("2025-06-18"));
    }

    #[test]
    fn pin_comes_from_node_root_or_header() {
        let pin = |text: &str| resolve(text).map(|c| c.protocol_version);
        assert_eq!(pin(r#"{"url":"https://a/"}"#), Ok(None));
        assert_eq!(pin(r#"{"url":"https://a/","protocolVersion":" "}"#), Ok(None));
        assert_eq!(
            pin(r#"{"url":"https://a/","protocolVersion":"2024-11-05","type":"sse"}"#),
            Ok(Some("2024-11-05".into()))
        );
        assert_eq!(
            pin(r#"{"url":"https://a/","headers":{"mcp-protocol-version":"2025-03-26"}}"#),
            Ok(Some("2025-03-26".into())),
            "the header alone pins"
        );
        assert_eq!(pin(r#"{"url":"https://a/","headers":{"MCP-Protocol-Version":""}}"#), Ok(None));
        assert_eq!(
            pin(r#"{"url":"https://a/","protocolVersion":"2025-06-18","headers":{"MCP-Protocol-Version":""}}"#),
            Err(ConfigError::ProtocolVersionMismatch),
            "a configured header must agree even when empty"
        );
        assert_eq!(
            pin(r#"{"protocolVersion":"2025-06-18","mcpServers":{"s":{"url":"https://a/"}}}"#),
            Ok(Some("2025-06-18".into()))
        );
        assert_eq!(
            pin(
                r#"{"protocolVersion":"2025-06-18","mcpServers":{"s":{"url":"https://a/","protocolVersion":"2025-11-25"}}}"#
            ),
            Ok(Some("2025-11-25".into())),
            "the node's pin wins"
        );
        assert_eq!(
            pin(
                r#"{"protocolVersion":"2025-06-18","mcpServers":{"s":{"url":"https://a/","headers":{"MCP-Protocol-Version":"2025-11-25"}}}}"#
            ),
            Err(ConfigError::ProtocolVersionMismatch)
        );
        assert_eq!(
            pin(r#"{"url":"https://a/","headers":{"MCP-Protocol-Version":"1.0"}}"#),
            Err(ConfigError::UnsupportedProtocolVersion("1.0".into()))
        );
        assert_eq!(
            pin(r#"{"url":"https://a/","type":"sse","headers":{"MCP-Protocol-Version":"2026-07-28"}}"#),
            Err(ConfigError::ModernRequiresStreamable)
        );
        for v in ProtocolVersion::ALL {
            let c = resolve(&json!({"url": "https://a/", "protocolVersion": v.as_str()}).to_string()).unwrap();
            assert_eq!(c.pin(), Some(v));
        }
        for v in ProtocolVersion::LEGACY {
            let c = resolve(&json!({"url": "https://a/", "type": "sse", "protocolVersion": v.as_str()}).to_string());
            assert_eq!(c.unwrap().pin(), Some(v), "HTTP+SSE accepts every legacy pin");
        }
    }

    // ---- patch ----

    #[test]
    fn patch_url_writes_whichever_endpoint_keys_exist() {
        let mut d = doc(r#"{"url":"https://old/","mcpServers":{"s":{"baseUrl":"https://old/","x":1}},"tail":0}"#);
        d.patch(Field::Url, " https://new.example/mcp ").unwrap();
        assert_eq!(node(&d, "s")["baseUrl"], "https://new.example/mcp");
        assert!(!node(&d, "s").contains_key("url"), "no url key added next to baseUrl");
        assert_eq!(d.as_object()["url"], "https://new.example/mcp", "root url overwritten");
        assert!(!d.as_object().contains_key("baseUrl"), "no root key created");
        assert_eq!(keys(d.as_object()), ["url", "mcpServers", "tail"]);
        assert_eq!(d.resolve().unwrap().url, "https://new.example/mcp");

        let mut d = doc(r#"{"baseUrl":"https://old/","url":"https://old/"}"#);
        d.patch(Field::Url, "https://new/").unwrap();
        assert_eq!(d.as_object(), json!({"baseUrl": "https://new/", "url": "https://new/"}).as_object().unwrap());

        let mut d = doc(r#"{"mcpServers":{"s":{"type":"sse"}}}"#);
        d.patch(Field::Url, "http://127.0.0.1:9000/sse").unwrap();
        assert_eq!(keys(node(&d, "s")), ["type", "url"]);

        let before = d.text();
        assert_eq!(d.patch(Field::Url, "ftp://x/"), Err(ConfigError::UrlScheme));
        assert_eq!(d.patch(Field::Url, ""), Err(ConfigError::UrlScheme));
        assert_eq!(d.patch(Field::Url, "https://"), Err(ConfigError::InvalidUrl { reason: "it has no host" }));
        assert_eq!(d.text(), before, "a refused patch changes nothing");
    }

    #[test]
    fn patch_auth_key_copies_inherited_headers_and_keeps_the_rest() {
        let mut d = doc(r#"{"headers":{"Authorization":"old","X-Root":"1"},"mcpServers":{"s":{"url":"https://a/"}}}"#);
        d.patch(Field::AuthKey, "Token new").unwrap();
        assert_eq!(node(&d, "s")["headers"], json!({"Authorization": "Token new", "X-Root": "1"}));
        assert_eq!(keys(node(&d, "s")["headers"].as_object().unwrap()), ["Authorization", "X-Root"]);
        assert_eq!(d.as_object()["headers"], json!({"Authorization": "old", "X-Root": "1"}), "root untouched");
        assert_eq!(d.resolve().unwrap().auth_key(), Some("Token new"));

        // Clearing an inherited key must still stop the inheritance.
        let mut d = doc(r#"{"headers":{"Authorization":"old","X-Root":"1"},"mcpServers":{"s":{"url":"https://a/"}}}"#);
        d.patch(Field::AuthKey, "").unwrap();
        assert_eq!(node(&d, "s")["headers"], json!({"X-Root": "1"}));
        assert_eq!(d.resolve().unwrap().auth_key(), None);

        // Every spelling is removed; the first one's position and spelling are kept.
        let mut d =
            doc(r#"{"url":"https://a/","headers":{"X-A":"1","authorization":"old","X-B":"2","Authorization":"dup"}}"#);
        d.patch(Field::AuthKey, "new").unwrap();
        let headers = d.as_object()["headers"].as_object().unwrap();
        assert_eq!(keys(headers), ["X-A", "authorization", "X-B"]);
        assert_eq!(headers["authorization"], "new");

        // No headers anywhere: created only when there is something to write.
        let mut d = doc(r#"{"url":"https://a/","z":0}"#);
        d.patch(Field::AuthKey, "  ").unwrap();
        assert!(!d.as_object().contains_key("headers"));
        d.patch(Field::AuthKey, "Bearer x").unwrap();
        assert_eq!(keys(d.as_object()), ["url", "z", "headers"]);
        assert_eq!(d.as_object()["headers"], json!({"Authorization": "Bearer x"}));

        let before = d.text();
        assert_eq!(
            d.patch(Field::AuthKey, "a\r\nX-Injected: 1"),
            Err(ConfigError::InvalidHeaderValue("Authorization".into()))
        );
        assert_eq!(d.text(), before);

        let mut d = doc(r#"{"url":"https://a/","headers":["x"]}"#);
        assert_eq!(d.patch(Field::AuthKey, "k"), Err(ConfigError::HeadersNotObject));
        let mut d = doc(r#"{"headers":5,"mcpServers":{"s":{"url":"https://a/"}}}"#);
        assert_eq!(d.patch(Field::AuthKey, "k"), Err(ConfigError::HeadersNotObject));
    }

    #[test]
    fn patch_transport_sets_type_and_an_existing_transport_key() {
        let mut d = doc(r#"{"url":"https://a/","transport":"sse","after":1}"#);
        d.patch(Field::Transport, "Streamable HTTP").unwrap();
        assert_eq!(keys(d.as_object()), ["url", "transport", "after", "type"]);
        assert_eq!(d.as_object()["type"], "streamableHttp");
        assert_eq!(d.as_object()["transport"], "streamable_http");
        assert_eq!(d.resolve().unwrap().transport, Transport::StreamableHttp);

        d.patch(Field::Transport, "SSE").unwrap();
        assert_eq!((&d.as_object()["type"], &d.as_object()["transport"]), (&json!("sse"), &json!("sse")));
        assert_eq!(d.resolve().unwrap().transport, Transport::Sse);

        let mut d = doc(r#"{"mcpServers":{"s":{"url":"https://a/","type":"sse"}}}"#);
        d.patch(Field::Transport, "http").unwrap();
        assert_eq!(node(&d, "s")["type"], "streamableHttp");
        assert!(!node(&d, "s").contains_key("transport"));

        let before = d.text();
        assert_eq!(d.patch(Field::Transport, "stdio"), Err(ConfigError::Stdio("s".into())));
        assert_eq!(d.patch(Field::Transport, " ws "), Err(ConfigError::UnsupportedTransport("ws".into())));
        assert_eq!(d.text(), before);
    }

    #[test]
    fn patch_protocol_version_clears_root_node_and_headers() {
        let mut d = doc(
            r#"{"protocolVersion":"2025-06-18","headers":{"MCP-Protocol-Version":"2025-06-18","X":"1"},"mcpServers":{"s":{"protocolVersion":"2025-06-18","url":"https://a/","headers":{"mcp-protocol-version":"2025-06-18","Y":"2"}}}}"#,
        );
        d.patch(Field::ProtocolVersion, "2025-03-26").unwrap();
        assert!(!d.as_object().contains_key("protocolVersion"));
        assert_eq!(d.as_object()["headers"], json!({"X": "1"}));
        assert_eq!(keys(node(&d, "s")), ["protocolVersion", "url", "headers"], "rewritten in place");
        assert_eq!(node(&d, "s")["protocolVersion"], "2025-03-26");
        assert_eq!(node(&d, "s")["headers"], json!({"Y": "2"}));
        assert_eq!(d.resolve().unwrap().pin(), Some(ProtocolVersion::V2025_03_26));

        // A root-only pin moves to the node.
        let mut d = doc(r#"{"protocolVersion":"2025-06-18","mcpServers":{"s":{"url":"https://a/"}}}"#);
        d.patch(Field::ProtocolVersion, "2026-07-28").unwrap();
        assert!(!d.as_object().contains_key("protocolVersion"));
        assert_eq!(node(&d, "s")["protocolVersion"], "2026-07-28");

        // Flat: a header-only pin is removed and replaced by the field.
        let mut d = doc(r#"{"url":"https://a/","headers":{"MCP-Protocol-Version":"2025-06-18"}}"#);
        d.patch(Field::ProtocolVersion, "2025-11-25").unwrap();
        assert_eq!(
            d.as_object(),
            json!({"url": "https://a/", "headers": {}, "protocolVersion": "2025-11-25"}).as_object().unwrap()
        );

        let before = d.text();
        assert_eq!(
            d.patch(Field::ProtocolVersion, "2099-01-01"),
            Err(ConfigError::UnsupportedProtocolVersion("2099-01-01".into()))
        );
        assert_eq!(d.text(), before);
        d.patch(Field::ProtocolVersion, "").unwrap();
        assert_eq!(d.resolve().unwrap().protocol_version, None);
    }

    #[test]
    fn patch_name_and_structural_errors() {
        let mut d = doc(r#"{"mcpServers":{"s":{"url":"https://a/"}}}"#);
        d.patch(Field::Name, " Pretty ").unwrap();
        assert_eq!(node(&d, "s")["name"], "Pretty");
        assert_eq!(d.resolve().unwrap().name, "Pretty");
        d.patch(Field::Name, "").unwrap();
        assert!(!node(&d, "s").contains_key("name"));
        assert_eq!(d.resolve().unwrap().name, "s");

        for (text, err) in [
            (r#"{"mcpServers":{"a":{},"b":{}}}"#, ConfigError::NotExactlyOneServer),
            (r#"{"mcpServers":1}"#, ConfigError::McpServersNotObject),
            (r#"{"mcpServers":{"a":[]}}"#, ConfigError::ServerNotObject("a".into())),
        ] {
            let mut d = doc(text);
            for field in [Field::Name, Field::Url, Field::AuthKey, Field::Transport, Field::ProtocolVersion] {
                assert_eq!(d.patch(field, "https://a/"), Err(err.clone()), "{text} {field:?}");
            }
            assert_eq!(d.text(), text);
        }

        // A broken document can be repaired one field at a time.
        let mut d = doc(r#"{"url":"ftp://a/","type":"sse","protocolVersion":"2026-07-28"}"#);
        d.patch(Field::Url, "https://a/").unwrap();
        assert_eq!(d.resolve(), Err(ConfigError::ModernRequiresStreamable));
        d.patch(Field::Transport, "http").unwrap();
        assert!(d.resolve().is_ok());
    }

    #[test]
    fn field_names_from_configuration_arguments() {
        for (arg, field) in [
            ("name", Field::Name),
            ("url", Field::Url),
            ("base_url", Field::Url),
            ("baseUrl", Field::Url),
            ("transport", Field::Transport),
            ("auth_key", Field::AuthKey),
            ("api_key", Field::AuthKey),
            ("key", Field::AuthKey),
            ("protocol_version", Field::ProtocolVersion),
            ("protocolVersion", Field::ProtocolVersion),
        ] {
            assert_eq!(Field::from_argument(arg), Some(field), "{arg}");
        }
        for other in ["enabled", "timeout_seconds", "id", "URL", ""] {
            assert_eq!(Field::from_argument(other), None);
        }
    }

    // ---- fingerprint ----

    #[test]
    fn fingerprint_depends_only_on_the_resolved_connection() {
        let a = doc(r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"},"vendor":1}"#);
        let b = doc(r#"{
  "mcpServers": {
    "srv": {
      "name": "Other",
      "headers": {"x-b": "1", "authorization": "k"},
      "baseUrl": "https://a.example/mcp",
      "type": "http",
      "extra": [1]
    }
  }
}"#);
        let fa = a.fingerprint();
        assert_eq!(fa.len(), 64);
        assert!(fa.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(fa, a.fingerprint(), "stable");
        assert_eq!(fa, b.fingerprint(), "name, key, field spelling, header case and order, extras do not count");
        assert_eq!(fa, doc(&a.to_pretty_string()).fingerprint(), "formatting does not count");
        assert_eq!(fa, a.resolve().unwrap().fingerprint());
        // Pinned to the canonical form (sha256 of
        // `["mcpd.client.config/v1","https://a.example/mcp","streamable_http",[["authorization","k"],["x-b","1"]],null]`):
        // changing it would needlessly drop every cached connection.
        assert_eq!(fa, "4a5faa37242b23867c780b5f9a314953a26dc9669c9330b0aacf3293b4aff0fd");

        let variants = [
            r#"{"url":"https://a.example/mcp2","headers":{"Authorization":"k","X-B":"1"}}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k2","X-B":"1"}}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1","X-C":""}}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k"}}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"},"type":"sse"}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"},"protocolVersion":"2025-06-18"}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"},"protocolVersion":"2025-03-26"}"#,
            r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"},"type":"sse","protocolVersion":"2025-06-18"}"#,
        ];
        let mut seen = vec![fa.clone()];
        for v in variants {
            let f = doc(v).fingerprint();
            assert!(!seen.contains(&f), "{v} must have its own fingerprint");
            seen.push(f);
        }

        // A document that does not resolve still has a fingerprint, distinct and edit-sensitive.
        let mut broken = doc(r#"{"url":"ftp://a.example/mcp"}"#);
        let f1 = broken.fingerprint();
        assert!(!seen.contains(&f1));
        broken.patch(Field::Name, "x").unwrap();
        assert_ne!(broken.fingerprint(), f1);

        // An edit that resolves the same keeps the fingerprint.
        let mut edited = doc(r#"{"url":"https://a.example/mcp","headers":{"Authorization":"k","X-B":"1"}}"#);
        edited.patch(Field::Name, "Renamed").unwrap();
        edited.patch(Field::Transport, "http").unwrap();
        assert_eq!(edited.fingerprint(), fa);
        edited.patch(Field::AuthKey, "other").unwrap();
        assert_ne!(edited.fingerprint(), fa);
    }

    // ---- servers file ----

    const DESKTOP: &str = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "remote": {
      "type": "http",
      "url": "https://remote.example/mcp",
      "headers": {"Authorization": "Bearer r"}
    },
    "legacy": {"type": "sse", "url": "http://127.0.0.1:8080/sse", "protocolVersion": "2024-11-05"},
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
  },
  "preferences": {"theme": "dark"}
}"#;

    #[test]
    fn servers_file_resolves_each_entry_and_refuses_stdio() {
        let file = ServersFile::parse(DESKTOP).unwrap();
        assert_eq!(file.names(), ["remote", "legacy", "files"]);
        assert_eq!((file.len(), file.is_empty()), (3, false));

        let servers = file.servers();
        assert_eq!(servers.len(), 3);
        let (name, remote) = &servers[0];
        let remote = remote.as_ref().unwrap();
        assert_eq!((name.as_str(), remote.name.as_str(), remote.key.as_deref()), ("remote", "remote", Some("remote")));
        assert_eq!((remote.transport, remote.url.as_str()), (Transport::StreamableHttp, "https://remote.example/mcp"));
        assert_eq!(remote.auth_key(), Some("Bearer r"));
        assert_eq!(remote.protocol_version, None);

        let (name, legacy) = &servers[1];
        let legacy = legacy.as_ref().unwrap();
        assert_eq!(name, "legacy");
        assert_eq!(legacy.transport, Transport::Sse);
        assert_eq!(legacy.pin(), Some(ProtocolVersion::V2024_11_05));
        assert!(legacy.headers.is_empty());

        let (name, files) = &servers[2];
        assert_eq!(name, "files");
        let err = files.as_ref().unwrap_err();
        assert_eq!(err, &ConfigError::Stdio("files".into()));
        assert_eq!(
            err.to_string(),
            "Server \"files\" uses the stdio transport: it has no HTTP endpoint to resolve; start it as a child process instead."
        );

        assert_eq!(file.get("legacy").unwrap().unwrap(), *legacy);
        assert_eq!(file.get("files"), Some(Err(ConfigError::Stdio("files".into()))));
        assert_eq!(file.get("nope"), None);
        assert!(file.document("nope").is_none());
    }

    #[test]
    fn servers_file_entry_becomes_a_single_server_document() {
        let file = ServersFile::parse(DESKTOP).unwrap();
        let mut d = file.document("remote").unwrap();
        assert_eq!(keys(d.as_object()), ["globalShortcut", "mcpServers", "preferences"]);
        assert_eq!(keys(d.as_object()["mcpServers"].as_object().unwrap()), ["remote"]);
        assert_eq!(d.resolve(), file.get("remote").unwrap());
        d.patch(Field::AuthKey, "Bearer s").unwrap();
        assert_eq!(d.resolve().unwrap().auth_key(), Some("Bearer s"));
        assert_eq!(d.as_object()["preferences"], json!({"theme": "dark"}));
        assert_eq!(file.document("files").unwrap().resolve(), Err(ConfigError::Stdio("files".into())));
    }

    #[test]
    fn servers_file_shape_and_per_entry_errors() {
        let empty = ServersFile::parse(r#"{"preferences":{}}"#).unwrap();
        assert!(empty.is_empty());
        assert!(empty.servers().is_empty());
        assert!(ServersFile::parse(r#"{"mcpServers":{}}"#).unwrap().is_empty());
        assert_eq!(ServersFile::parse(r#"{"mcpServers":[]}"#).unwrap_err(), ConfigError::McpServersNotObject);
        assert_eq!(ServersFile::parse(r#"{"mcpServers":null}"#).unwrap_err(), ConfigError::McpServersNotObject);
        assert_eq!(ServersFile::parse("[]").unwrap_err(), ConfigError::NotAnObject);
        assert!(matches!(ServersFile::parse("{"), Err(ConfigError::Json(_))));

        // One bad entry does not hide the others; entries use the single-document rules.
        let file = ServersFile::from_value(json!({
            "headers": {"X-Shared": "1"},
            "mcpServers": {
                "broken": "https://a/",
                "mismatch": {"url": "https://a/", "baseUrl": "https://b/"},
                "typed": {"type": "stdio"},
                "ws": {"type": "websocket", "url": "wss://a/"},
                "ok": {"url": "https://ok.example/"}
            }
        }))
        .unwrap();
        let results: Vec<_> = file.servers().into_iter().map(|(k, r)| (k, r.map(|c| c.headers))).collect();
        assert_eq!(
            results,
            vec![
                ("broken".to_owned(), Err(ConfigError::ServerNotObject("broken".into()))),
                ("mismatch".to_owned(), Err(ConfigError::EndpointMismatch)),
                ("typed".to_owned(), Err(ConfigError::Stdio("typed".into()))),
                ("ws".to_owned(), Err(ConfigError::UnsupportedTransport("websocket".into()))),
                ("ok".to_owned(), Ok(vec![("X-Shared".to_owned(), "1".to_owned())])),
            ]
        );
    }

    // ---- timeout ----

    #[test]
    fn timeout_defaults_to_30_and_clamps_to_5_through_300() {
        assert_eq!(timeout_seconds(None), 30);
        assert_eq!(timeout_seconds(Some(60)), 60);
        assert_eq!(timeout_seconds(Some(1)), 5);
        assert_eq!(timeout_seconds(Some(-7)), 5);
        assert_eq!(timeout_seconds(Some(5)), 5);
        assert_eq!(timeout_seconds(Some(300)), 300);
        assert_eq!(timeout_seconds(Some(i64::MAX)), 300);
        assert_eq!(parse_timeout_seconds(" 45 "), 45);
        assert_eq!(parse_timeout_seconds("2"), 5);
        assert_eq!(parse_timeout_seconds("abc"), 30);
        assert_eq!(parse_timeout_seconds(""), 30);
        assert_eq!(parse_timeout_seconds("12.5"), 30);
        assert_eq!(parse_timeout_seconds("99999999999999999999999"), 300);
        assert_eq!(parse_timeout_seconds("-99999999999999999999999"), 5);
        assert_eq!(parse_timeout_seconds("+-1"), 30);
        assert_eq!(parse_timeout_seconds("+45"), 45);
        assert_eq!(parse_timeout_seconds("-"), 30);
    }
}
