//! Reading one server out of a document: the [`ServerConfig`] every check has passed, its
//! fingerprint, the name messages give a server, and the one rule that says which entries are
//! stdio servers ([`is_stdio`]). The checks of single field values are `fields`'s.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::ConfigError;
use super::fields::{check_endpoint, is_header_value, is_token, text_field};
use super::oauth::ClientOAuthSettings;
use super::transport::{normalize_transport, Transport};
use crate::version::ProtocolVersion;

/// The name of a server whose document names none.
pub const DEFAULT_SERVER_NAME: &str = "MCP Server";

/// The header a configured pin must agree with (and that a pin patch removes).
pub(super) const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
/// The header that holds the `authKey`.
pub(super) const AUTHORIZATION: &str = "Authorization";
/// Hashed first into every fingerprint of a resolved server, so that a change of the canonical
/// form can be made without colliding with the old one.
const FINGERPRINT_DOMAIN: &str = "mcpd.client.config/v1";

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
    /// The entry's OAuth client settings (`node.oauth`), if any.
    pub oauth: Option<ClientOAuthSettings>,
}

impl ServerConfig {
    /// The value of a configured header, found case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The `Authorization` header verbatim (what a configuration form calls the `authKey`), if
    /// configured.
    pub fn auth_key(&self) -> Option<&str> {
        self.header(AUTHORIZATION)
    }

    /// The pinned revision, typed.
    pub fn pin(&self) -> Option<ProtocolVersion> {
        self.protocol_version.as_deref().and_then(ProtocolVersion::parse)
    }

    /// A stable hex SHA-256 of what decides the connection: the endpoint, the transport, the
    /// headers (names lowercased, sorted by name), the pin and the OAuth settings (when there
    /// are any, so that documents without them keep their fingerprint). The name, the server key, unknown
    /// fields, key order and formatting do not count, so two documents that connect the same way
    /// have the same fingerprint, and a cached connection can be kept while it is unchanged.
    pub fn fingerprint(&self) -> String {
        let mut headers: Vec<(String, &str)> =
            self.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.as_str())).collect();
        headers.sort();
        let mut canonical = serde_json::json!([
            FINGERPRINT_DOMAIN,
            self.url,
            self.transport.as_str(),
            headers.iter().map(|(k, v)| [k.as_str(), *v]).collect::<Vec<_>>(),
            self.protocol_version,
        ]);
        if let (Some(oauth), Value::Array(parts)) = (&self.oauth, &mut canonical) {
            parts.push(oauth.canonical());
        }
        sha256_hex(canonical.to_string().as_bytes())
    }
}

/// The lowercase hex SHA-256 of `bytes`.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}
/// The name used in messages: the server key, else `node.name`, else the default.
pub(super) fn display_name(key: Option<&str>, node: &Map<String, Value>) -> String {
    let name = match node.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
        _ => None,
    };
    key.or(name).unwrap_or(DEFAULT_SERVER_NAME).to_owned()
}

/// The transport a node names: its `type`, else its `transport` (blank counts as absent).
fn declared_transport(node: &Map<String, Value>) -> Result<Option<&str>, ConfigError> {
    match text_field(node, "type")? {
        Some(t) => Ok(Some(t)),
        None => text_field(node, "transport"),
    }
}

/// Whether a node describes a stdio server — the one rule every reader of server entries
/// uses: an explicit `type` / `transport` decides (`stdio` is stdio, anything else is not);
/// without one, a node with a `command` or `args` key is stdio. A node whose `type` is not a
/// string is not stdio (resolving it reports [`ConfigError::FieldNotString`]).
pub(super) fn is_stdio(node: &Map<String, Value>) -> bool {
    match declared_transport(node) {
        Ok(Some(value)) => normalize_transport(value) == "stdio",
        Ok(None) => node.contains_key("command") || node.contains_key("args"),
        Err(_) => false,
    }
}

/// Resolves one server: `entry` is the `mcpServers` key and node of a nested document, `None`
/// for a flat one (whose node is the root).
pub(super) fn resolve_entry(
    root: &Map<String, Value>,
    entry: Option<(&str, &Value)>,
) -> Result<ServerConfig, ConfigError> {
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
    if is_stdio(node) {
        return Err(ConfigError::Stdio(display_name(key, node)));
    }
    let transport = match declared_transport(node)? {
        Some(value) => Transport::parse(value).ok_or_else(|| ConfigError::UnsupportedTransport(value.to_owned()))?,
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

    // 10. the OAuth client settings
    let oauth = ClientOAuthSettings::from_node(node)?;

    Ok(ServerConfig { key: key.map(str::to_owned), name, url, transport, headers, protocol_version, oauth })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::config::fixtures::{message, resolve};
    use crate::client::config::{ConfigDocument, DEFAULT_SERVER_NAME};

    #[test]
    fn invalid_json_and_ambiguous_endpoints_are_rejected_without_fallback() {
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
}
