//! The routing-header value encoding of the 2026-07-28 wire (`Mcp-Name`, `Mcp-Param-*`): any
//! string survives `encode_value` then `decode_value` (white space around the header value
//! included), the encoded form is always a legal header value, safe values travel as they are,
//! and decoding any input is an answer, never a panic. Arguments mirrored into headers match
//! their header on the server.

use mcpd::client::request::routing_headers;
use mcpd::headers::{self, decode_value, encode_value, param_matches, param_text, ParamKind};
use mcpd::jsonrpc::{Request, RequestId};
use mcpd::server::HttpHeaders;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::json;
use crate::support::config;
use crate::wire;

/// Strings of every kind: any characters, printable ASCII, white space at the edges, and
/// lookalikes of the Base64 sentinel.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<String>(),
        2 => prop::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter),
        2 => "[ -~]{0,24}",
        1 => ("[ \t]{0,2}", "[ -~]{0,12}", "[ \t]{0,2}").prop_map(|(a, b, c)| format!("{a}{b}{c}")),
        1 => "[A-Za-z0-9+/=?]{0,16}".prop_map(|inner| format!("=?base64?{inner}?=")),
        1 => prop_oneof![Just("=?base64?".to_owned()), Just("?=".to_owned()), Just("=?base64??=".to_owned())],
    ]
}

/// Input schemas with `x-mcp-header` annotations where they belong and where they do not.
fn schema() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec!["string", "integer", "boolean", "number", "object"]);
    let leaf =
        (prop::option::of(types), prop::option::weighted(0.6, prop_oneof![3 => "[A-Za-z-]{1,6}", 1 => json::text()]))
            .prop_map(|(kind, header)| {
                let mut node = serde_json::Map::new();
                if let Some(kind) = kind {
                    node.insert("type".into(), Value::from(kind));
                }
                if let Some(header) = header {
                    node.insert("x-mcp-header".into(), Value::from(header));
                }
                Value::Object(node)
            });
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            3 => prop::collection::vec(("[a-z]{1,3}", inner.clone()), 0..4).prop_map(|properties| {
                let properties: serde_json::Map<String, Value> = properties.into_iter().collect();
                serde_json::json!({"type": "object", "properties": properties})
            }),
            1 => inner.clone().prop_map(|items| serde_json::json!({"type": "array", "items": items})),
            1 => prop::collection::vec(inner, 0..3).prop_map(|any_of| serde_json::json!({"anyOf": any_of})),
        ]
    })
}

/// A legal header value as an HTTP client sends it: visible ASCII and spaces, no white space at
/// either end (which HTTP strips).
fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| (0x20..0x7f).contains(&b)) && value.trim_matches([' ', '\t']) == value
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_string_survives_encoding_and_decoding(value in any_text(), pad in "[ \t]{0,2}") {
        let encoded = encode_value(&value);
        prop_assert!(is_header_value(&encoded), "{:?} encodes to {:?}", value, encoded);
        prop_assert_eq!(decode_value(&encoded).unwrap(), value.as_str());
        let padded = format!("{pad}{encoded}{pad}");
        prop_assert_eq!(decode_value(&padded).unwrap(), value.as_str(), "white space around a header is not part of it");
    }

    #[test]
    fn safe_values_travel_as_they_are(value in "[!-~]([ -~]{0,20}[!-~])?") {
        let sentinel = value.starts_with("=?base64?") && value.ends_with("?=") && value.len() >= 11;
        prop_assert_eq!(encode_value(&value) == value, !sentinel);
    }

    #[test]
    fn decoding_any_value_never_panics(raw in any_text()) {
        match decode_value(&raw) {
            Ok(decoded) => {
                let trimmed = raw.trim_matches([' ', '\t']);
                let wrapped = trimmed.strip_prefix("=?base64?").and_then(|s| s.strip_suffix("?="));
                if wrapped.is_none() {
                    prop_assert_eq!(decoded, trimmed);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn an_argument_matches_the_header_a_client_makes_of_it(
        (value, kind) in prop_oneof![
            json::text().prop_map(|s| (Value::String(s), ParamKind::String)),
            any::<bool>().prop_map(|b| (Value::Bool(b), ParamKind::Boolean)),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(|n| (Value::from(n), ParamKind::Integer)),
            json::number().prop_map(|n| (n, ParamKind::Integer)),
        ],
    ) {
        if let Some(text) = param_text(&value, kind) {
            let header = encode_value(&text);
            prop_assert!(param_matches(&decode_value(&header).unwrap(), &value, kind), "{} as {:?}", value, header);
        }
    }

    #[test]
    fn the_server_accepts_the_routing_headers_a_client_makes(
        name in prop_oneof![Just("geo".to_owned()), json::text()],
        region in prop::option::of(prop_oneof![json::text().prop_map(Value::String), json::value()]),
        tenant in prop::option::of(json::number()),
        dry in prop::option::of(prop_oneof![any::<bool>().prop_map(Value::Bool), json::scalar()]),
    ) {
        let mut arguments = serde_json::Map::new();
        for (key, value) in [("region", region), ("dry", dry)] {
            if let Some(value) = value {
                arguments.insert(key.into(), value);
            }
        }
        if let Some(id) = tenant {
            arguments.insert("tenant".into(), json!({ "id": id }));
        }
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
        let params = json!({"name": name, "arguments": arguments, "_meta": meta});
        let params = params.as_object().unwrap();
        let server = wire::server();
        let declared = server.catalog().tool(&name).map(|t| (*t.header_params).clone().unwrap());
        let Ok(sent) = routing_headers("tools/call", params, declared.as_deref()) else {
            prop_assert!(declared.is_some(), "only a declared parameter can fail to fit");
            return Ok(());
        };
        let mut sent: Vec<(String, String)> = sent.into_iter().map(|(h, v)| (h.name().to_ascii_lowercase(), v)).collect();
        sent.push((headers::PROTOCOL_VERSION.to_owned(), "2026-07-28".to_owned()));
        let lookup = |wanted: &str| sent.iter().find(|(n, _)| n == wanted).map(|(_, v)| v.as_str());
        let request = Request::new(RequestId::Number(1), "tools/call", Some(params.clone()));
        let checked = server.validate_stateless(&request, Some(&HttpHeaders::new(&lookup)));
        prop_assert!(checked.is_ok(), "{:?} for headers {:?}", checked.err(), sent);
    }

    #[test]
    fn header_parameters_are_read_from_any_schema_as_declared(
        schema in prop_oneof![3 => schema(), 1 => json::value()],
        arguments in json::object_value(),
    ) {
        let Ok(params) = headers::header_params(&schema) else { return Ok(()) };
        for (i, param) in params.iter().enumerate() {
            let mut node = &schema;
            for step in &param.path {
                node = &node["properties"][step];
            }
            prop_assert_eq!(&node["x-mcp-header"], param.name.as_str(), "{:?} is where it was declared", param.path);
            let unique = params[..i].iter().all(|p| !p.name.eq_ignore_ascii_case(&param.name));
            prop_assert!(unique, "{} is declared twice", param.name);
            if let Some(value) = arguments.as_object().and_then(|a| headers::argument_at(a, &param.path)) {
                prop_assert!(!value.is_null());
            }
        }
    }
}
