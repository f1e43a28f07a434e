//! HTTP routing headers of the 2026-07-28 wire, and the `=?base64?…?=` value encoding that
//! `Mcp-Name` and `Mcp-Param-*` use for values that are not safe as plain ASCII.

use std::borrow::Cow;

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
/// sentinel-wrapped value is Base64-decoded. A plain value (the usual case) is borrowed, not
/// copied.
///
/// # Errors
/// [`HeaderValueError`] when the sentinel wraps invalid Base64 or non-UTF-8 bytes.
pub fn decode_value(raw: &str) -> Result<Cow<'_, str>, HeaderValueError> {
    let trimmed = raw.trim_matches(|c| c == ' ' || c == '\t');
    match trimmed.strip_prefix(SENTINEL_PREFIX).and_then(|s| s.strip_suffix(SENTINEL_SUFFIX)) {
        Some(encoded) => {
            let bytes = STANDARD.decode(encoded).map_err(|_| HeaderValueError::BadBase64)?;
            String::from_utf8(bytes).map(Cow::Owned).map_err(|_| HeaderValueError::NotUtf8)
        }
        None => Ok(Cow::Borrowed(trimmed)),
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

/// The JSON type of an argument carried in an `Mcp-Param-*` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A string.
    String,
    /// An integer within ±(2^53−1).
    Integer,
    /// `true` or `false`.
    Boolean,
}

/// A tool argument mirrored into a header (`x-mcp-header` in its input schema).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// Property names from the schema root to the argument.
    pub path: Vec<String>,
    /// The header suffix: the header is `Mcp-Param-<name>`.
    pub name: String,
    /// The argument's type.
    pub kind: ParamKind,
}

/// Why a tool's `x-mcp-header` annotations are invalid (HTTP clients drop such tools).
#[derive(Debug, Clone, PartialEq, Eq, derive_more::Display, derive_more::Error)]
#[display("invalid x-mcp-header: {reason}")]
pub struct HeaderParamError {
    /// What is wrong.
    #[error(not(source))]
    pub reason: String,
}

const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Counts `x-mcp-header` keywords anywhere in a schema (property names are not keywords).
fn count_annotations(schema: &serde_json::Value) -> usize {
    match schema {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(key, child)| match (key.as_str(), child) {
                ("x-mcp-header", _) => 1,
                ("properties", serde_json::Value::Object(props)) => props.values().map(count_annotations).sum(),
                _ => count_annotations(child),
            })
            .sum(),
        serde_json::Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

fn collect(
    schema: &serde_json::Value,
    path: &mut Vec<String>,
    out: &mut Vec<HeaderParam>,
) -> Result<(), HeaderParamError> {
    let bad = |reason: String| HeaderParamError { reason };
    let Some(properties) = schema.get("properties").and_then(serde_json::Value::as_object) else { return Ok(()) };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(annotation) = property.get("x-mcp-header") {
            let header = annotation.as_str().ok_or_else(|| bad(format!("{} is not a string", path.join("."))))?;
            if !is_token(header) {
                return Err(bad(format!("{header:?} at {} is not an HTTP token", path.join("."))));
            }
            let kind = match property.get("type").and_then(serde_json::Value::as_str) {
                Some("string") => ParamKind::String,
                Some("integer") => ParamKind::Integer,
                Some("boolean") => ParamKind::Boolean,
                other => {
                    return Err(bad(format!(
                        "{} has type {other:?}; only string, integer and boolean may be headers",
                        path.join(".")
                    )))
                }
            };
            if out.iter().any(|p| p.name.eq_ignore_ascii_case(header)) {
                return Err(bad(format!("{header:?} is declared twice (names are case-insensitive)")));
            }
            out.push(HeaderParam { path: path.clone(), name: header.to_owned(), kind });
        }
        collect(property, path, out)?;
        path.pop();
    }
    Ok(())
}

/// The `x-mcp-header` parameters of a tool's input schema, validated: names are non-empty HTTP
/// tokens, unique ignoring case, on string / integer / boolean properties reached only through
/// `properties` (never inside `items`, `oneOf`, `anyOf`, `allOf`, `not`, `if`/`then`/`else`,
/// `$defs`, …).
///
/// # Errors
/// [`HeaderParamError`] naming the first violation.
pub fn header_params(input_schema: &serde_json::Value) -> Result<Vec<HeaderParam>, HeaderParamError> {
    let mut out = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut out)?;
    if count_annotations(input_schema) != out.len() {
        return Err(HeaderParamError {
            reason: "x-mcp-header may only annotate properties reached through `properties`".into(),
        });
    }
    Ok(out)
}

/// The argument at `path`, if present and not null.
pub fn argument_at<'a>(
    arguments: &'a serde_json::Map<String, serde_json::Value>,
    path: &[String],
) -> Option<&'a serde_json::Value> {
    let (first, rest) = path.split_first()?;
    let mut value = arguments.get(first)?;
    for key in rest {
        value = value.get(key)?;
    }
    (!value.is_null()).then_some(value)
}

/// The header value for an argument (before [`encode_value`]); `None` when the value does not fit
/// the declared kind.
pub fn param_text(value: &serde_json::Value, kind: ParamKind) -> Option<String> {
    match (kind, value) {
        (ParamKind::String, serde_json::Value::String(s)) => Some(s.clone()),
        (ParamKind::Boolean, serde_json::Value::Bool(b)) => Some(b.to_string()),
        (ParamKind::Integer, serde_json::Value::Number(n)) => {
            let i = n.as_i64().or_else(|| {
                n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).map(|f| f as i64)
            })?;
            (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i).then(|| i.to_string())
        }
        _ => None,
    }
}

/// Whether a decoded header value stands for the body value (integers compare numerically).
pub fn param_matches(header: &str, value: &serde_json::Value, kind: ParamKind) -> bool {
    match kind {
        ParamKind::Integer => match (header.parse::<f64>(), value.as_f64()) {
            (Ok(h), Some(v)) => h == v,
            _ => false,
        },
        _ => param_text(value, kind).is_some_and(|text| text == header),
    }
}

#[cfg(test)]
mod param_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_collected_along_properties() {
        let schema = json!({"type":"object","properties":{
            "region": {"type":"string","x-mcp-header":"Region"},
            "nested": {"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}}
        }});
        let params = header_params(&schema).unwrap();
        assert_eq!(params.len(), 2);
        assert!(params.iter().any(|p| p.path == ["nested", "tenant"] && p.kind == ParamKind::Integer));
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for schema in [
            json!({"properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"object","x-mcp-header":"A"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"has space"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"col:on"}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"ünï"}}}),
            json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":null}}}),
        ] {
            assert!(header_params(&schema).is_err(), "{schema}");
        }
        assert!(header_params(&json!({"properties":{"x-mcp-header":{"type":"string"}}})).unwrap().is_empty());
    }

    #[test]
    fn values_compare_by_kind() {
        assert!(param_matches("42", &json!(42), ParamKind::Integer));
        assert!(param_matches("42.0", &json!(42), ParamKind::Integer));
        assert!(!param_matches("43", &json!(42), ParamKind::Integer));
        assert!(param_matches("true", &json!(true), ParamKind::Boolean));
        assert!(param_matches("Hello", &json!("Hello"), ParamKind::String));
        assert_eq!(param_text(&json!(9_007_199_254_740_992_i64), ParamKind::Integer), None);
        assert_eq!(
            param_text(&json!(-9_007_199_254_740_991_i64), ParamKind::Integer).as_deref(),
            Some("-9007199254740991")
        );
    }

    #[test]
    fn the_most_negative_integer_is_out_of_range_not_a_panic() {
        // `i64::MIN.abs()` overflows: it panicked in debug builds and passed as in range in release.
        assert_eq!(param_text(&json!(i64::MIN), ParamKind::Integer), None);
    }
}
