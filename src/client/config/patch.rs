//! Edits in place: [`Field`] names what a configuration form or an agent may change, and
//! [`ConfigDocument::patch`] changes that one field of the stored JSON, leaving every other key
//! (known or not) with its value and position.

use serde_json::{Map, Value};

use super::document::{compact, single_entry, ConfigDocument};
use super::error::ConfigError;
use super::fields::{check_endpoint, is_header_value};
use super::resolve::{display_name, AUTHORIZATION, PROTOCOL_VERSION_HEADER};
use super::transport::{normalize_transport, Transport};
use crate::version::ProtocolVersion;

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

impl ConfigDocument {
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

/// Removes every `MCP-Protocol-Version` header (any case) from an object's `headers`.
fn remove_version_headers(object: &mut Map<String, Value>) {
    if let Some(Value::Object(headers)) = object.get_mut("headers") {
        headers.retain(|k, _| !k.eq_ignore_ascii_case(PROTOCOL_VERSION_HEADER));
    }
}

/// The node of a document: the root when flat, else the `mcpServers` entry `key`.
fn node_mut<'a>(root: &'a mut Map<String, Value>, key: Option<&str>) -> Option<&'a mut Map<String, Value>> {
    match key {
        None => Some(root),
        Some(k) => root.get_mut("mcpServers")?.as_object_mut()?.get_mut(k)?.as_object_mut(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::config::fixtures::{doc, keys, node};

    #[test]
    fn editing_the_url_leaves_authentication_and_extensions_untouched() {
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
    fn node_pin_and_case_insensitive_headers_are_read_without_rewriting() {
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
}
