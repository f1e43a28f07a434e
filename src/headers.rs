//! HTTP routing headers of the 2026-07-28 wire, and the `=?base64?…?=` value encoding that
//! `Mcp-Name` and `Mcp-Param-*` use for values that are not safe as plain ASCII.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// `MCP-Protocol-Version`: the revision of this request.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`: the body's `method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id`: the streamable-HTTP session (stateful revisions only).
pub const SESSION_ID: &str = "mcp-session-id";
/// Prefix of the per-argument headers declared with `x-mcp-header`.
pub const PARAM_PREFIX: &str = "mcp-param-";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Whether a value can travel as a plain header value: printable ASCII, no leading or trailing
/// white space, and not itself shaped like the sentinel.
fn is_plain_safe(value: &str) -> bool {
    let bytes = value.as_bytes();
    let printable = bytes.iter().all(|b| (0x20..=0x7e).contains(b));
    let edge_space = bytes.first().is_some_and(|b| *b == b' ') || bytes.last().is_some_and(|b| *b == b' ');
    printable && !edge_space && !looks_encoded(value)
}

fn looks_encoded(value: &str) -> bool {
    value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX) && value.len() >= 11
}

/// Encodes a value for a routing header: as-is when safe, else `=?base64?<Base64 UTF-8>?=`.
pub fn encode_value(value: &str) -> String {
    if is_plain_safe(value) {
        value.to_owned()
    } else {
        format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", STANDARD.encode(value.as_bytes()))
    }
}

/// Why a header value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, derive_more::Display, derive_more::Error)]
pub enum HeaderValueError {
    /// The sentinel wraps something that is not standard, padded Base64.
    #[display("invalid Base64 in header value")]
    BadBase64,
    /// The decoded bytes are not UTF-8.
    #[display("header value is not valid UTF-8 after Base64 decoding")]
    NotUtf8,
}

/// Decodes a received routing-header value: optional white space around it is trimmed, then a
/// sentinel-wrapped value is Base64-decoded.
///
/// # Errors
/// [`HeaderValueError`] when the sentinel wraps invalid Base64 or non-UTF-8 bytes.
pub fn decode_value(raw: &str) -> Result<String, HeaderValueError> {
    let trimmed = raw.trim_matches(|c| c == ' ' || c == '\t');
    match trimmed.strip_prefix(SENTINEL_PREFIX).and_then(|s| s.strip_suffix(SENTINEL_SUFFIX)) {
        Some(encoded) => {
            let bytes = STANDARD.decode(encoded).map_err(|_| HeaderValueError::BadBase64)?;
            String::from_utf8(bytes).map_err(|_| HeaderValueError::NotUtf8)
        }
        None => Ok(trimmed.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_round_trip() {
        assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("plain-name"), "plain-name");
        assert_eq!(decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
        assert_eq!(decode_value("  tools-name \t").unwrap(), "tools-name");
    }

    #[test]
    fn control_characters_and_sentinel_lookalikes_are_encoded() {
        assert!(encode_value("a\tb").starts_with("=?base64?"));
        let tricky = "=?base64?abcd?=";
        assert_eq!(decode_value(&encode_value(tricky)).unwrap(), tricky);
    }

    #[test]
    fn bad_base64_is_rejected() {
        assert_eq!(decode_value("=?base64?%%%?="), Err(HeaderValueError::BadBase64));
        assert_eq!(decode_value("=?base64?SGVsbG8?="), Err(HeaderValueError::BadBase64));
    }
}
