//! The client's configuration documents: parsing any text (and resolving, fingerprinting, or
//! reading it as a servers file) is an answer, never a panic; a patch in place changes only the
//! keys of its field — every other member, known or unknown, keeps its value and its position,
//! members it rewrites stay where they were — a refused patch changes nothing, and the stored
//! text of a patched document reads back as the same document.

use mcpd::client::config::{ConfigDocument, Field, ServersFile};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};

use crate::json;
use crate::support::config;

fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

/// Members a server node may have: the known fields (right or wrong) and unknown ones.
fn node() -> BoxedStrategy<Map<String, Value>> {
    let url = prop_oneof![
        3 => select(vec!["https://a.example/mcp", "http://127.0.0.1:8791/mcp", "ftp://x/", "https://", ""]).prop_map(string),
        1 => json::value(),
    ];
    let header_name = select(vec![
        "Authorization",
        "authorization",
        "X-Key",
        "MCP-Protocol-Version",
        "mcp-protocol-version",
        "Bad Name",
    ]);
    let headers = prop_oneof![
        4 => prop::collection::vec((header_name, "[ -~]{0,8}"), 0..4)
            .prop_map(|h| Value::Object(h.into_iter().map(|(k, v)| (k.to_owned(), string(v))).collect())),
        1 => json::value(),
    ];
    let transport = prop_oneof![3 => select(vec!["streamableHttp", "sse", "http", "stdio", "ws"]).prop_map(string), 1 => json::value()];
    let version =
        prop_oneof![3 => select(vec!["2025-06-18", "2026-07-28", "1999-01-01"]).prop_map(string), 1 => json::value()];
    (
        prop::option::weighted(0.7, url.clone()),
        prop::option::weighted(0.2, url),
        prop::option::weighted(0.4, transport.clone()),
        prop::option::weighted(0.2, transport),
        prop::option::weighted(0.5, headers),
        prop::option::weighted(0.3, json::text().prop_map(string)),
        prop::option::weighted(0.3, version),
        prop::option::weighted(0.1, json::value()),
        prop::collection::vec((json::key(), json::value()), 0..3),
    )
        .prop_map(|(url, base_url, kind, transport, headers, name, version, command, extra)| {
            let known = [
                ("url", url),
                ("baseUrl", base_url),
                ("type", kind),
                ("transport", transport),
                ("headers", headers),
                ("name", name),
                ("protocolVersion", version),
                ("command", command),
            ];
            known.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))).chain(extra).collect::<Vec<_>>()
        })
        .prop_shuffle()
        .prop_map(|members| members.into_iter().collect())
        .boxed()
}

/// A document: flat (the node is the root), nested under `mcpServers` with root members around
/// it, or with an `mcpServers` that holds no single server.
fn document() -> BoxedStrategy<Map<String, Value>> {
    prop_oneof![
        3 => node(),
        3 => (node(), node(), "[a-z]{1,6}", any::<prop::sample::Index>()).prop_map(|(root, node, key, at)| {
            let mut members: Vec<(String, Value)> = root.into_iter().filter(|(k, _)| k != "mcpServers").collect();
            let at = at.index(members.len() + 1);
            let servers: Map<String, Value> = std::iter::once((key, Value::Object(node))).collect();
            members.insert(at, ("mcpServers".to_owned(), Value::Object(servers)));
            members.into_iter().collect()
        }),
        1 => (node(), json::value()).prop_map(|(mut root, servers)| {
            root.insert("mcpServers".to_owned(), servers);
            root
        }),
    ]
    .boxed()
}

/// A field and a value to patch it with.
fn patch() -> BoxedStrategy<(Field, String)> {
    prop_oneof![
        (Just(Field::Name), json::text()),
        (
            Just(Field::Url),
            prop_oneof![
                select(vec![" https://b.example/mcp ", "http://127.0.0.1:9/", "ftp://x", "", "https://"])
                    .prop_map(str::to_owned),
                json::text()
            ]
        ),
        (
            Just(Field::AuthKey),
            prop_oneof!["Bearer [a-z]{1,8}", Just(String::new()), Just("  ".to_owned()), json::text()]
        ),
        (
            Just(Field::Transport),
            prop_oneof![
                select(vec!["http", "sse", "Streamable HTTP", "stdio", " ws "]).prop_map(str::to_owned),
                json::text()
            ]
        ),
        (
            Just(Field::ProtocolVersion),
            prop_oneof![
                select(vec!["2025-03-26", " 2026-07-28 ", "", "2099-01-01"]).prop_map(str::to_owned),
                json::text()
            ]
        ),
    ]
    .boxed()
}

/// The server key of a document whose `mcpServers` holds exactly one object (`Some(None)`:
/// flat; `None`: no single server, so no patch applies).
fn server_key(root: &Map<String, Value>) -> Option<Option<String>> {
    match root.get("mcpServers") {
        None => Some(None),
        Some(Value::Object(servers)) if servers.len() == 1 => {
            servers.iter().next().filter(|(_, v)| v.is_object()).map(|(k, _)| Some(k.clone()))
        }
        Some(_) => None,
    }
}

fn node_of<'d>(root: &'d Map<String, Value>, key: Option<&str>) -> &'d Map<String, Value> {
    match key {
        None => root,
        Some(key) => root["mcpServers"][key].as_object().expect("the node is an object"),
    }
}

/// The members a patch of `field` may change: on the node, and (nested) on the root.
fn touched(field: Field) -> (&'static [&'static str], &'static [&'static str]) {
    match field {
        Field::Name => (&["name"], &[]),
        Field::Url => (&["url", "baseUrl"], &["url", "baseUrl"]),
        Field::AuthKey => (&["headers"], &[]),
        Field::Transport => (&["type", "transport"], &[]),
        Field::ProtocolVersion => (&["protocolVersion", "headers"], &["protocolVersion", "headers"]),
    }
}

/// The document without the members `field` may change, as compact JSON (member order counts).
fn untouched(root: &Map<String, Value>, key: Option<&str>, field: Field) -> String {
    let (on_node, on_root) = touched(field);
    let mut root = root.clone();
    let strip = |object: &mut Map<String, Value>, names: &[&str]| object.retain(|k, _| !names.contains(&k.as_str()));
    match key {
        None => strip(&mut root, on_node),
        Some(key) => {
            strip(&mut root, on_root);
            if let Some(node) = root.get_mut("mcpServers").and_then(|s| s.get_mut(key)).and_then(Value::as_object_mut) {
                strip(node, on_node);
            }
        }
    }
    serde_json::to_string(&root).unwrap()
}

/// Members present both before and after are in the same order.
fn same_order(before: &Map<String, Value>, after: &Map<String, Value>) -> bool {
    let kept_before: Vec<&String> = before.keys().filter(|k| after.contains_key(*k)).collect();
    let kept_after: Vec<&String> = after.keys().filter(|k| before.contains_key(*k)).collect();
    kept_before == kept_after
}

/// `headers` without the names `drop` matches (any case), in order; a value that is not an
/// object as it is.
fn headers_without(headers: Option<&Value>, drop: &str) -> Option<Value> {
    match headers {
        Some(Value::Object(headers)) => Some(Value::Object(
            headers
                .iter()
                .filter(|(k, _)| !k.eq_ignore_ascii_case(drop))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )),
        other => other.cloned(),
    }
}

/// Checks one successful patch of `field` with `value` that turned `before` into `after`.
fn check_patch(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    field: Field,
    value: &str,
) -> Result<(), TestCaseError> {
    let key = server_key(before).expect("a patch applied, so the document has its server");
    let key = key.as_deref();
    prop_assert_eq!(untouched(before, key, field), untouched(after, key, field), "only {:?}'s members change", field);
    prop_assert!(same_order(before, after), "root members keep their order");
    let (node_before, node) = (node_of(before, key), node_of(after, key));
    prop_assert!(same_order(node_before, node), "node members keep their order");
    let trimmed = value.trim();
    match field {
        Field::Name if trimmed.is_empty() => prop_assert!(!node.contains_key("name")),
        Field::Name => prop_assert_eq!(&node["name"], trimmed),
        Field::Url => {
            let written: Vec<&Value> = ["url", "baseUrl"].iter().filter_map(|k| node.get(*k)).collect();
            prop_assert!(!written.is_empty() && written.iter().all(|v| *v == trimmed));
        }
        Field::Transport => prop_assert!(["streamableHttp", "sse"].contains(&node["type"].as_str().unwrap_or(""))),
        Field::ProtocolVersion => {
            let pin = (!trimmed.is_empty()).then(|| json!(trimmed));
            prop_assert_eq!(node.get("protocolVersion"), pin.as_ref());
            let mut cleared = vec![(node, node_before)];
            if key.is_some() {
                prop_assert!(!after.contains_key("protocolVersion"), "the root's pin is removed");
                cleared.push((after, before));
            }
            for (object, was) in cleared {
                let header = "mcp-protocol-version";
                prop_assert_eq!(
                    headers_without(object.get("headers"), header),
                    headers_without(was.get("headers"), header)
                );
                let left = object
                    .get("headers")
                    .and_then(Value::as_object)
                    .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(header)));
                prop_assert!(!left, "no MCP-Protocol-Version header is left");
            }
        }
        Field::AuthKey => {
            let inherited = match (key, node_before.get("headers")) {
                (Some(_), None) => before.get("headers"),
                (_, own) => own,
            };
            let others = headers_without(node.get("headers"), "authorization");
            let expected_others = headers_without(inherited, "authorization");
            match (expected_others, trimmed.is_empty()) {
                (None, true) => prop_assert!(others.is_none(), "no headers object is made to remove nothing"),
                (expected, _) => {
                    prop_assert_eq!(others, Some(expected.unwrap_or(json!({}))), "other headers are kept in order")
                }
            }
            let auth: Vec<&Value> = node
                .get("headers")
                .and_then(Value::as_object)
                .map(|h| h.iter().filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v).collect())
                .unwrap_or_default();
            let expected: Vec<Value> = if trimmed.is_empty() { Vec::new() } else { vec![json!(value)] };
            prop_assert_eq!(auth.into_iter().cloned().collect::<Vec<_>>(), expected, "one Authorization, verbatim");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_parses_resolves_or_is_refused_without_panicking(
        text in prop_oneof![
            2 => document().prop_map(|d| serde_json::to_string(&d).unwrap()),
            1 => any::<String>(),
            1 => document().prop_map(|d| {
                let text = serde_json::to_string_pretty(&d).unwrap();
                let half = (0..=text.len() / 2).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
                text[..half].to_owned()
            }),
        ],
    ) {
        if let Ok(document) = ConfigDocument::parse(&text) {
            prop_assert_eq!(document.text(), text.as_str(), "an unedited document is stored verbatim");
            let _ = document.resolve();
            prop_assert_eq!(document.fingerprint(), document.clone().fingerprint());
        }
        if let Ok(file) = ServersFile::parse(&text) {
            prop_assert_eq!(file.servers().len(), file.len());
            for name in file.names() {
                prop_assert!(file.get(name).is_some());
            }
        }
    }

    #[test]
    fn a_patch_changes_only_its_field_and_keeps_member_order(
        document in document(),
        pretty in any::<bool>(),
        patches in prop::collection::vec(patch(), 1..5),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&document) } else { serde_json::to_string(&document) }.unwrap();
        let mut doc = ConfigDocument::parse(&text).unwrap();
        for (field, value) in patches {
            let before = doc.as_object().clone();
            let stored = doc.text();
            match doc.patch(field, &value) {
                Err(_) => {
                    prop_assert_eq!(serde_json::to_string(doc.as_object()).unwrap(), serde_json::to_string(&before).unwrap(), "a refused patch changes nothing");
                    prop_assert_eq!(doc.text(), stored);
                }
                Ok(()) => check_patch(&before, doc.as_object(), field, &value)?,
            }
            let reread = ConfigDocument::parse(&doc.text()).unwrap();
            prop_assert_eq!(serde_json::to_string(reread.as_object()).unwrap(), serde_json::to_string(doc.as_object()).unwrap(), "the stored text reads back as the document");
        }
    }
}
