//! [`ConfigDocument`]: one stored single-server document, kept as written (key order and
//! unknown fields included), resolved on demand and fingerprinted for connection caching.

use serde_json::{Map, Value};

use super::error::ConfigError;
use super::resolve::{resolve_entry, sha256_hex, ServerConfig};

/// Hashed first into the fingerprint of a document that does not resolve, so that it never
/// equals the fingerprint of a valid configuration.
const INVALID_FINGERPRINT_DOMAIN: &str = "mcpd.client.config/invalid/v1";

/// A stored single-server configuration document.
///
/// The document is kept as parsed (key order included, thanks to serde_json's
/// `preserve_order`); [`patch`](ConfigDocument::patch) edits it in place and
/// [`resolve`](ConfigDocument::resolve) checks it and reads the [`ServerConfig`] out of it.
#[derive(Debug, Clone)]
pub struct ConfigDocument {
    /// The document itself.
    pub(super) raw: Map<String, Value>,
    /// The text it was parsed from, until a patch changes it.
    pub(super) original: Option<String>,
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
}

/// The document on one line, keys in stored order.
pub(super) fn compact(object: &Map<String, Value>) -> String {
    serde_json::to_string(object).unwrap_or_default()
}
/// The single `mcpServers` entry of a document, or `None` for a flat one.
pub(super) fn single_entry(root: &Map<String, Value>) -> Result<Option<(&str, &Value)>, ConfigError> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::config::fixtures::doc;
    use crate::client::config::{Field, Transport};
    use crate::version::ProtocolVersion;

    #[test]
    fn a_raw_document_is_stored_verbatim_and_a_replacement_never_inherits_old_credentials() {
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
    fn a_nested_json_object_is_accepted_as_a_document_and_printed_with_two_space_indent() {
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
}
