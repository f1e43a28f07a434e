//! Generators of near-valid JSON-RPC: MCP messages whose every member is usually right and
//! sometimes wrong (a missing or junk `jsonrpc`, ids of every JSON type, known and unknown
//! methods, params with the members each method reads — `name`, `arguments`, `uri`, `cursor`,
//! `_meta`, `requestState` … — or junk), members in any order and sometimes repeated, bodies
//! sometimes cut or corrupted, batches of them, and HTTP routing headers that agree with the
//! body, are missing, or disagree.

use mcpd::headers;
use mcpd::server::SessionSupport;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Map, Value};

use crate::json;
use crate::wire::{HeaderSet, PROMPTS, TOOLS, URIS};

/// A message's members, in the order they are written (a name may repeat).
pub(crate) type Members = Vec<(String, Value)>;

/// Method names: every method mcpd knows, notifications, and unknown ones.
const METHODS: [&str; 20] = [
    "initialize",
    "ping",
    "server/discover",
    "subscriptions/listen",
    "logging/setLevel",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "tools/cal",
    "",
];

const VERSIONS: [&str; 6] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2099-01-01"];
const LEVELS: [&str; 4] = ["debug", "error", "emergency", "loud"];

fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

/// A protocol version: usually the stateless one, often another, sometimes junk.
fn version() -> impl Strategy<Value = String> {
    prop_oneof![4 => Just("2026-07-28".to_owned()), 2 => select(VERSIONS.to_vec()).prop_map(str::to_owned), 1 => json::text()]
}

/// A request's `_meta`.
fn meta() -> BoxedStrategy<Value> {
    (
        prop::option::weighted(0.95, prop_oneof![15 => version().prop_map(string), 1 => json::value()]),
        prop::option::weighted(
            0.95,
            prop_oneof![9 => Just(json!({})), 6 => Just(json!({"elicitation": {}})), 1 => json::value()],
        ),
        prop::option::weighted(0.2, prop_oneof![3 => select(LEVELS.to_vec()).prop_map(string), 1 => json::value()]),
        prop::option::weighted(0.2, json::scalar()),
        prop::collection::vec((json::key(), json::value()), 0..2),
    )
        .prop_map(|(version, capabilities, level, progress, extra)| {
            let mut meta = Map::new();
            let known = [
                ("io.modelcontextprotocol/protocolVersion", version),
                ("io.modelcontextprotocol/clientCapabilities", capabilities),
                ("io.modelcontextprotocol/logLevel", level),
                ("progressToken", progress),
            ];
            for (key, value) in known {
                if let Some(value) = value {
                    meta.insert(key.to_owned(), value);
                }
            }
            for (key, value) in extra {
                meta.entry(key).or_insert(value);
            }
            Value::Object(meta)
        })
        .boxed()
}

/// A value of the expected type usually, of any type sometimes.
fn mostly<S: Strategy<Value = Value>>(usual: S) -> impl Strategy<Value = Value> {
    prop_oneof![9 => usual, 1 => json::value()]
}

/// A tool call's (or prompt's) `arguments`, with the members the catalog's handlers and
/// `x-mcp-header` parameters read.
fn arguments() -> BoxedStrategy<Value> {
    (
        prop::option::of(mostly(json::text().prop_map(string))),
        prop::option::of(mostly(json::text().prop_map(string))),
        prop::option::of(mostly(json::number().prop_map(|id| json!({ "id": id })))),
        prop::option::of(mostly(any::<bool>().prop_map(Value::Bool))),
        prop::option::of(mostly(json::text().prop_map(string))),
        prop::collection::vec((json::key(), json::value()), 0..2),
    )
        .prop_map(|(text, region, tenant, dry, name, extra)| {
            let mut arguments = Map::new();
            for (key, value) in [("text", text), ("region", region), ("tenant", tenant), ("dry", dry), ("name", name)] {
                if let Some(value) = value {
                    arguments.insert(key.to_owned(), value);
                }
            }
            for (key, value) in extra {
                arguments.entry(key).or_insert(value);
            }
            Value::Object(arguments)
        })
        .boxed()
}

/// Params: an object with the members some method reads.
fn params() -> BoxedStrategy<Value> {
    let names: Vec<&str> = TOOLS.iter().chain(PROMPTS.iter()).copied().collect();
    let first = (
        prop::option::weighted(
            0.6,
            mostly(prop_oneof![4 => select(names).prop_map(string), 1 => json::text().prop_map(string)]),
        ),
        prop::option::weighted(0.5, mostly(arguments())),
        prop::option::weighted(
            0.3,
            mostly(
                prop_oneof![3 => select(URIS.to_vec()).prop_map(string), 1 => "test://items/[a-z0-9/]{0,6}".prop_map(string), 1 => json::text().prop_map(string)],
            ),
        ),
        prop::option::weighted(
            0.2,
            mostly(prop_oneof![
                select(vec!["ZWNobw", "Z2Vv", "%%%", "", "dGVzdDovL3N0YXRpYw"]).prop_map(string),
                json::text().prop_map(string)
            ]),
        ),
        prop::option::weighted(0.7, mostly(meta())),
        prop::option::weighted(0.3, mostly(version().prop_map(string))),
    );
    let second = (
        prop::option::weighted(
            0.2,
            mostly(prop_oneof![Just(json!({})), Just(json!({"elicitation": {}, "sampling": {}}))]),
        ),
        prop::option::weighted(0.2, mostly(select(LEVELS.to_vec()).prop_map(string))),
        prop::option::weighted(
            0.15,
            mostly(
                (select(vec!["ref/prompt", "ref/resource", "ref/x"]), select(PROMPTS.to_vec()))
                    .prop_map(|(t, n)| json!({"type": t, "name": n, "uri": "test://items/{id}"})),
            ),
        ),
        prop::option::weighted(
            0.15,
            mostly((select(vec!["name", "id", "x"]), json::text()).prop_map(|(n, v)| json!({"name": n, "value": v}))),
        ),
        prop::option::weighted(0.15, mostly(Just(json!({"name": {"action": "accept", "content": {"name": "Ada"}}})))),
        prop::option::weighted(0.15, mostly(json::text().prop_map(string))),
        prop::option::weighted(
            0.15,
            mostly(
                (any::<bool>(), prop::collection::vec(select(URIS.to_vec()), 0..3))
                    .prop_map(|(tools, uris)| json!({"toolsListChanged": tools, "resourceSubscriptions": uris})),
            ),
        ),
        prop::option::weighted(0.1, json::scalar()),
        prop::collection::vec((json::key(), json::value()), 0..2),
    );
    (first, second)
        .prop_map(|(first, second)| {
            let (name, arguments, uri, cursor, meta, protocol_version) = first;
            let (capabilities, level, reference, argument, responses, state, notifications, request_id, extra) = second;
            let mut params = Map::new();
            let members = [
                ("name", name),
                ("arguments", arguments),
                ("uri", uri),
                ("cursor", cursor),
                ("_meta", meta),
                ("protocolVersion", protocol_version),
                ("capabilities", capabilities),
                ("level", level),
                ("ref", reference),
                ("argument", argument),
                ("inputResponses", responses),
                ("requestState", state),
                ("notifications", notifications),
                ("requestId", request_id),
            ];
            for (key, value) in members {
                if let Some(value) = value {
                    params.insert(key.to_owned(), value);
                }
            }
            for (key, value) in extra {
                params.entry(key).or_insert(value);
            }
            Value::Object(params)
        })
        .boxed()
}

/// An id: usually an integer or a string, sometimes absent, `null` or any other JSON.
fn id() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        8 => prop_oneof![-100i64..100, any::<i64>()].prop_map(|n| Some(Value::from(n))),
        6 => json::text().prop_map(|s| Some(string(s))),
        1 => json::number().prop_map(Some),
        2 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => json::value().prop_map(Some),
    ]
}

/// The members of one message, in any order: near-valid (any member may be wrong, one may be
/// repeated with another value), or a well-formed request whose params and headers may still be
/// wrong (so that more of them reach the handlers).
pub(crate) fn envelope() -> BoxedStrategy<Members> {
    prop_oneof![2 => near_valid(), 1 => request()].boxed()
}

fn near_valid() -> BoxedStrategy<Members> {
    let members = (
        prop_oneof![30 => Just(Some(string("2.0"))), 1 => Just(None), 1 => json::value().prop_map(Some)],
        id(),
        prop_oneof![
            6 => Just(Some(string("tools/call"))),
            12 => select(METHODS.to_vec()).prop_map(|m| Some(string(m))),
            1 => json::text().prop_map(|m| Some(string(m))),
            1 => json::value().prop_map(Some),
            1 => Just(None),
        ],
        prop_oneof![12 => params().prop_map(Some), 1 => json::value().prop_map(Some), 2 => Just(None)],
        prop::option::weighted(0.03, json::value()),
        prop::option::weighted(
            0.03,
            mostly(
                (json::number(), json::text()).prop_map(|(code, message)| json!({"code": code, "message": message})),
            ),
        ),
        prop::collection::vec((json::key(), json::value()), 0..2),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error, extra)| {
            let known = [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ];
            let mut members: Members =
                known.into_iter().filter_map(|(key, value)| value.map(|v| (key.to_owned(), v))).collect();
            members.extend(extra);
            members
        })
        .prop_shuffle();
    (members, prop::option::weighted(0.05, (any::<Index>(), json::value())))
        .prop_map(|(mut members, repeat)| {
            if let Some((index, value)) = repeat.filter(|_| !members.is_empty()) {
                let name = members[index.index(members.len())].0.clone();
                members.push((name, value));
            }
            members
        })
        .boxed()
}

/// A well-formed request: `jsonrpc`, a readable id, a method the server serves, params.
fn request() -> BoxedStrategy<Members> {
    let method = prop_oneof![
        4 => Just("tools/call"),
        1 => Just("prompts/get"),
        1 => Just("resources/read"),
        3 => select(METHODS[..15].to_vec()),
    ];
    let id = prop_oneof![(-100i64..100).prop_map(Value::from), json::text().prop_map(string)];
    (id, method, params(), prop::collection::vec(("[a-z]{1,4}", json::value()), 0..2))
        .prop_map(|(id, method, params, extra)| {
            let mut members = vec![
                ("jsonrpc".to_owned(), string("2.0")),
                ("id".to_owned(), id),
                ("method".to_owned(), string(method)),
                ("params".to_owned(), params),
            ];
            members.extend(
                extra.into_iter().filter(|(k, _)| !["jsonrpc", "id", "method", "params"].contains(&k.as_str())),
            );
            members
        })
        .prop_shuffle()
        .boxed()
}

/// Writes members as a JSON object (repeated names included).
pub(crate) fn write(members: &Members) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(serde_json::to_vec(key).unwrap());
        out.push(b':');
        out.extend(serde_json::to_vec(value).unwrap());
    }
    out.push(b'}');
    out
}

/// How a written body is damaged, if at all.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Cut(Index),
    Insert(Index, u8),
    Replace(Index, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        30 => Just(Damage::None),
        1 => any::<Index>().prop_map(Damage::Cut),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Insert(i, b)),
        1 => (any::<Index>(), prop_oneof![any::<u8>(), select(b"{}[]\",:\\ 0".to_vec())]).prop_map(|(i, b)| Damage::Replace(i, b)),
    ]
}

fn apply(damage: &Damage, mut body: Vec<u8>) -> Vec<u8> {
    match damage {
        Damage::None => {}
        Damage::Cut(i) => body.truncate(i.index(body.len() + 1)),
        Damage::Insert(i, b) => body.insert(i.index(body.len() + 1), *b),
        Damage::Replace(i, b) if !body.is_empty() => {
            let at = i.index(body.len());
            body[at] = *b;
        }
        Damage::Replace(..) => {}
    }
    body
}

/// A body: one message or a batch (rarely an empty one), possibly damaged; with the members of
/// its first message, from which headers that agree with it are made.
pub(crate) fn body() -> BoxedStrategy<(Vec<u8>, Members)> {
    let shape = prop_oneof![
        24 => envelope().prop_map(|m| (write(&m), m)),
        8 => prop::collection::vec(envelope(), 1..4).prop_map(|messages| {
            let parts: Vec<Vec<u8>> = messages.iter().map(write).collect();
            let first = messages.into_iter().next().unwrap_or_default();
            (batch(&parts), first)
        }),
        1 => Just((b"[]".to_vec(), Members::new())),
    ];
    (shape, damage()).prop_map(|((body, first), damage)| (apply(&damage, body), first)).boxed()
}

fn batch(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    out.extend(parts.join(&b","[..]));
    out.push(b']');
    out
}

/// Where one routing header's value comes from.
#[derive(Debug, Clone)]
pub(crate) enum Choice {
    /// What the body says (absent when the body has no such value).
    FromBody,
    /// No header.
    Absent,
    /// Another value.
    Other(String),
}

fn choice() -> impl Strategy<Value = Choice> {
    prop_oneof![
        14 => Just(Choice::FromBody),
        1 => Just(Choice::Absent),
        1 => prop_oneof![select(VERSIONS.to_vec()).prop_map(str::to_owned), json::text()].prop_map(Choice::Other),
    ]
}

/// The routing headers of one request, and whether it names a session on an endpoint with or
/// without sessions.
#[derive(Debug, Clone)]
pub(crate) struct Routing {
    version: Choice,
    method: Choice,
    name: Choice,
    params: [Choice; 3],
    /// The `Mcp-Session-Id` header.
    pub session_id: Option<&'static str>,
    /// Whether the endpoint keeps sessions.
    pub sessions: SessionSupport,
}

/// Routing headers.
pub(crate) fn routing() -> BoxedStrategy<Routing> {
    (
        choice(),
        choice(),
        choice(),
        prop::array::uniform3(choice()),
        prop::option::weighted(0.3, Just("s1")),
        prop_oneof![3 => Just(SessionSupport::Disabled), 1 => Just(SessionSupport::Enabled)],
    )
        .prop_map(|(version, method, name, params, session_id, sessions)| Routing {
            version,
            method,
            name,
            params,
            session_id,
            sessions,
        })
        .boxed()
}

fn member<'m>(members: &'m Members, name: &str) -> Option<&'m Value> {
    members.iter().rev().find(|(key, _)| key == name).map(|(_, value)| value)
}

impl Routing {
    /// The header set for a body whose first message has `members`. Values that are not
    /// visible ASCII are left out, as an HTTP server's text lookup leaves them out.
    pub(crate) fn headers(&self, members: &Members) -> HeaderSet {
        let params = member(members, "params").and_then(Value::as_object);
        let meta = params.and_then(|p| p.get("_meta"));
        let arguments = params.and_then(|p| p.get("arguments"));
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        let body_version = text(meta.and_then(|m| m.get("io.modelcontextprotocol/protocolVersion")));
        let body_name = params.and_then(|p| text(p.get("name")).or_else(|| text(p.get("uri"))));
        let param = |value: Option<&Value>| {
            value.filter(|v| !v.is_null()).map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        let body_params = [
            param(arguments.and_then(|a| a.get("region"))),
            param(arguments.and_then(|a| a.get("tenant")).and_then(|t| t.get("id"))),
            param(arguments.and_then(|a| a.get("dry"))),
        ];
        let mut set = Vec::new();
        let mut add = |name: &str, choice: &Choice, from_body: Option<String>| {
            let value = match choice {
                Choice::FromBody => from_body,
                Choice::Absent => None,
                Choice::Other(other) => Some(other.clone()),
            };
            if let Some(value) = value.filter(|v| v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))) {
                set.push((name.to_owned(), value));
            }
        };
        add(headers::PROTOCOL_VERSION, &self.version, body_version);
        add(headers::METHOD, &self.method, text(member(members, "method")));
        add(headers::NAME, &self.name, body_name.map(|n| headers::encode_value(&n)));
        for ((name, choice), value) in ["region", "tenant", "dry"].iter().zip(&self.params).zip(body_params) {
            add(&format!("{}{name}", headers::PARAM_PREFIX), choice, value.map(|v| headers::encode_value(&v)));
        }
        HeaderSet(set)
    }
}
