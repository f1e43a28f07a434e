//! One field's value, read and checked on its own: a text field ([`text_field`]), an endpoint URL
//! ([`check_endpoint`]), a header's name and value ([`is_token`], [`is_header_value`]). Server
//! resolution, the `oauth` object and patches all apply these rules; they live apart from each of
//! those so that none imports another for them.

use serde_json::{Map, Value};

use super::error::ConfigError;

/// A non-blank string field, trimmed. Missing, `null` and blank are `None`.
pub(super) fn text_field<'a>(
    object: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, ConfigError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            Ok(if s.is_empty() { None } else { Some(s) })
        }
        Some(_) => Err(ConfigError::FieldNotString { field }),
    }
}

/// An `http://` or `https://` URL (scheme case-insensitive) with a host, an optional port from
/// 1 to 65535, and no white space or control characters.
pub(super) fn check_endpoint(url: &str) -> Result<(), ConfigError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        url.get(7..).unwrap_or_default()
    } else if lower.starts_with("https://") {
        url.get(8..).unwrap_or_default()
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
pub(super) fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value that can be sent verbatim: tab or 0x20–0x7E (what OkHttp accepts).
pub(super) fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}
