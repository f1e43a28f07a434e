//! Helpers the configuration unit tests share: parse, resolve and look inside documents.

use serde_json::{Map, Value};

use super::{ConfigDocument, ConfigError, ServerConfig};

/// A document that must parse.
pub(super) fn doc(text: &str) -> ConfigDocument {
    ConfigDocument::parse(text).expect("parses")
}

/// The resolved server of a document's text.
pub(super) fn resolve(text: &str) -> Result<ServerConfig, ConfigError> {
    ConfigDocument::parse(text)?.resolve()
}

/// The message of a document that must be rejected.
pub(super) fn message(text: &str) -> String {
    resolve(text).expect_err("must be rejected").to_string()
}

/// An object's keys in stored order.
pub(super) fn keys(object: &Map<String, Value>) -> Vec<&str> {
    object.keys().map(String::as_str).collect()
}

/// The node of the `mcpServers` entry `key`.
pub(super) fn node<'a>(d: &'a ConfigDocument, key: &str) -> &'a Map<String, Value> {
    d.as_object()["mcpServers"][key].as_object().expect("node")
}
