//! The members of a message's `_meta` that choosing its era and validating the stateless wire
//! read (`io.modelcontextprotocol/protocolVersion`, `…/clientCapabilities`, `…/logLevel`,
//! `progressToken`): a request's as [`crate::jsonrpc::RequestMeta`] read them when it was parsed,
//! a notification's (which stays among its params) found in one pass over its entries.
//!
//! `_meta` holds a handful of members, and comparing their names costs far less than hashing
//! (SipHash: serde_json's `preserve_order` map) each long `io.modelcontextprotocol/…` key for a
//! lookup, several times per request.

use serde_json::{Map, Value};

use super::call_params::member;
use crate::jsonrpc::MetaMember;

/// A request's `_meta` object, if its params carry one.
pub(super) fn meta_of(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params.and_then(|p| member(p, "_meta")).and_then(Value::as_object)
}

/// The members of a request's `_meta` that serving reads.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ServingMeta<'a> {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub(super) protocol_version: Option<&'a Value>,
    /// Whether it carries `io.modelcontextprotocol/clientCapabilities` (those a request declares
    /// are read where they are used, not here: see [`crate::jsonrpc::ClientCapabilities`]).
    pub(super) has_client_capabilities: bool,
    /// `io.modelcontextprotocol/logLevel`.
    pub(super) log_level: Option<&'a Value>,
    /// `progressToken`.
    pub(super) progress_token: Option<&'a Value>,
}

impl<'a> ServingMeta<'a> {
    /// Reads `meta` in one pass.
    pub(super) fn of(meta: &'a Map<String, Value>) -> Self {
        let mut found = ServingMeta::default();
        for (key, value) in meta {
            let slot = match MetaMember::of(key) {
                MetaMember::ProtocolVersion => &mut found.protocol_version,
                MetaMember::ClientCapabilities => {
                    found.has_client_capabilities = true;
                    continue;
                }
                MetaMember::LogLevel => &mut found.log_level,
                MetaMember::ProgressToken => &mut found.progress_token,
                _ => continue,
            };
            *slot = Some(value);
        }
        found
    }

    /// The `_meta` of a notification's params, read; `None` when there is none.
    pub(super) fn of_params(params: Option<&'a Map<String, Value>>) -> Option<Self> {
        meta_of(params).map(ServingMeta::of)
    }

    /// A request's `_meta` (read when it was parsed); `None` when it has none.
    pub(super) fn of_request(meta: Option<&'a crate::jsonrpc::RequestMeta>) -> Option<Self> {
        meta.map(|meta| ServingMeta {
            protocol_version: meta.protocol_version(),
            has_client_capabilities: meta.client_capabilities().is_some(),
            log_level: meta.log_level(),
            progress_token: meta.progress_token(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_member_is_found_and_others_are_ignored() {
        let params = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "info",
            "progressToken": 5,
            "other": true
        }});
        let meta = ServingMeta::of_params(params.as_object()).expect("params carry _meta");
        assert_eq!(meta.protocol_version, Some(&json!("2026-07-28")));
        assert!(meta.has_client_capabilities);
        assert_eq!(meta.log_level, Some(&json!("info")));
        assert_eq!(meta.progress_token, Some(&json!(5)));
        let bare = json!({"_meta": {"progressToken": 1}});
        let meta = ServingMeta::of_params(bare.as_object()).expect("params carry _meta");
        assert!(meta.protocol_version.is_none() && !meta.has_client_capabilities && meta.log_level.is_none());
        assert!(ServingMeta::of_params(json!({"_meta": 1}).as_object()).is_none());
        assert!(ServingMeta::of_params(None).is_none());
    }
}
