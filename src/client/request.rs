//! Building what a client sends: the stateless `_meta`, the routing headers of the 2026-07-28
//! wire (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), and the answers a client gives by default
//! (an elicitation accepted with the schema's defaults).

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::headers::{self, HeaderParam};
use crate::model::{meta_keys, Implementation, Tool};
use crate::version::ProtocolVersion;

/// Adds the stateless request metadata to `params._meta` (keeping what is there).
pub fn add_stateless_meta(params: &mut Map<String, Value>, client_info: &Implementation, capabilities: &Value) {
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Value::Object(meta) = meta {
        meta.insert(meta_keys::PROTOCOL_VERSION.into(), json!(ProtocolVersion::STATELESS.as_str()));
        meta.insert(meta_keys::CLIENT_INFO.into(), json!(client_info));
        meta.insert(meta_keys::CLIENT_CAPABILITIES.into(), capabilities.clone());
    }
}

/// A routing header of a stateless request, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingHeader {
    /// `Mcp-Method`.
    Method,
    /// `Mcp-Name`.
    Name,
    /// `Mcp-Param-<name>`, for an argument annotated with `x-mcp-header: <name>`.
    Param(String),
}

impl RoutingHeader {
    /// The header's name as written on the wire.
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            RoutingHeader::Method => Cow::Borrowed("Mcp-Method"),
            RoutingHeader::Name => Cow::Borrowed("Mcp-Name"),
            RoutingHeader::Param(name) => Cow::Owned(format!("Mcp-Param-{name}")),
        }
    }
}

/// The routing headers of a stateless request: `Mcp-Method`, `Mcp-Name` (tools/call and
/// prompts/get: `params.name`; resources/read: `params.uri`; `tasks/get`, `tasks/update` and
/// `tasks/cancel`: `params.taskId`, as the tasks extension requires; encoded when unsafe) and, for
/// tools/call, one `Mcp-Param-<Name>` per annotated argument present and not null.
///
/// # Errors
/// A message when an annotated argument does not fit its declared type.
pub fn routing_headers(
    method: &str,
    params: &Map<String, Value>,
    tool: Option<&[HeaderParam]>,
) -> Result<Vec<(RoutingHeader, String)>, String> {
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    let name = name_field.and_then(|f| params.get(f)).and_then(Value::as_str);
    let arguments = params.get("arguments").and_then(Value::as_object);
    let mut out = vec![(RoutingHeader::Method, method.to_owned())];
    if let Some(value) = name {
        out.push((RoutingHeader::Name, headers::encode_value(value)));
    }
    if let (Some(header_params), Some(arguments)) = (tool, arguments) {
        param_headers(arguments, header_params, &mut out)?;
    }
    Ok(out)
}

/// The `Mcp-Param-<Name>` headers of a tool call's `arguments` (one per annotated argument
/// present and not null), added to `out`.
///
/// # Errors
/// As [`routing_headers`].
pub fn param_headers(
    arguments: &Map<String, Value>,
    tool: &[HeaderParam],
    out: &mut Vec<(RoutingHeader, String)>,
) -> Result<(), String> {
    for param in tool {
        let Some(value) = headers::argument_at(arguments, &param.path) else { continue };
        let text = headers::param_text(value, param.kind)
            .ok_or_else(|| format!("argument {} does not fit its x-mcp-header type", param.path.join(".")))?;
        out.push((RoutingHeader::Param(param.name.clone()), headers::encode_value(&text)));
    }
    Ok(())
}

/// A tool a stateless client may call, with its `x-mcp-header` parameters.
pub type UsableTool = (Tool, Vec<HeaderParam>);

/// Splits listed tools into those a stateless HTTP client may call and those it must drop
/// because their `x-mcp-header` annotations are invalid (name and reason, for a warning).
pub fn usable_tools(tools: Vec<Tool>) -> (Vec<UsableTool>, Vec<(String, String)>) {
    let mut usable = Vec::new();
    let mut dropped = Vec::new();
    for tool in tools {
        match headers::header_params(&tool.input_schema) {
            Ok(params) => usable.push((tool, params)),
            Err(e) => dropped.push((tool.name.clone(), e.to_string())),
        }
    }
    (usable, dropped)
}

/// The default answer to `elicitation/create`: accept, with every property that declares a
/// `default` filled in with it.
pub fn accept_with_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = params.get("requestedSchema").and_then(|s| s.get("properties")).and_then(Value::as_object)
    {
        for (name, schema) in properties {
            if let Some(default) = schema.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    json!({ "action": "accept", "content": content })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_headers_encode_names_and_params() {
        let schema = json!({"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"},"n":{"type":"integer","x-mcp-header":"N"}}});
        let params_of = headers::header_params(&schema).unwrap();
        let params = json!({"name":"中文工具","arguments":{"tenant":"中文","n":7}});
        let headers = routing_headers("tools/call", params.as_object().unwrap(), Some(&params_of)).unwrap();
        let named: Vec<(String, String)> = headers.iter().map(|(h, v)| (h.name().into_owned(), v.clone())).collect();
        assert_eq!(named[0], ("Mcp-Method".into(), "tools/call".into()));
        assert_eq!(named[1], ("Mcp-Name".into(), headers::encode_value("中文工具")));
        assert!(named.contains(&("Mcp-Param-Tenant".into(), "=?base64?5Lit5paH?=".into())));
        assert!(named.contains(&("Mcp-Param-N".into(), "7".into())));
        let null = json!({"name":"t","arguments":{"tenant":null}});
        assert_eq!(routing_headers("tools/call", null.as_object().unwrap(), Some(&params_of)).unwrap().len(), 2);
        let too_small = json!({"name":"t","arguments":{"n":i64::MIN}});
        let err = routing_headers("tools/call", too_small.as_object().unwrap(), Some(&params_of)).unwrap_err();
        assert_eq!(err, "argument n does not fit its x-mcp-header type");
        let read = json!({"uri":"file:///a b.txt"});
        assert_eq!(routing_headers("resources/read", read.as_object().unwrap(), None).unwrap()[1].1, "file:///a b.txt");
    }

    #[test]
    fn task_requests_route_by_their_task_id() {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let params = json!({"taskId": "786512e2-9e0d", "inputResponses": {}});
            let headers = routing_headers(method, params.as_object().unwrap(), None).unwrap();
            let named: Vec<(String, String)> =
                headers.iter().map(|(h, v)| (h.name().into_owned(), v.clone())).collect();
            assert_eq!(named, [("Mcp-Method".into(), method.into()), ("Mcp-Name".into(), "786512e2-9e0d".into())]);
        }
        // An id that cannot be a header value as it is goes encoded, like any other name.
        let odd = json!({"taskId": "a\nb"});
        let headers = routing_headers("tasks/get", odd.as_object().unwrap(), None).unwrap();
        assert_eq!(headers[1].1, headers::encode_value("a\nb"));
        assert_ne!(headers[1].1, "a\nb");
    }

    #[test]
    fn elicitation_defaults_fill_the_form() {
        let params = json!({"requestedSchema":{"properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},"free":{"type":"string"}}}});
        assert_eq!(accept_with_defaults(&params), json!({"action":"accept","content":{"name":"John Doe","age":30}}));
    }
}
