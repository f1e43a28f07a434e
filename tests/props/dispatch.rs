//! The JSON-RPC parser and the dispatch of both eras: whatever bytes arrive — on `POST /mcp`
//! with or without sessions, or as stdio lines — the answer is a valid JSON-RPC response (or a
//! batch of them), or nothing for what needs no answer; never a panic. An answer carries the id
//! of the message it answers whenever that id was readable (a string or an integer), a message
//! with a readable id and a `method` is always answered, and invalid JSON is always `-32700`.
//! The parser, which reads a message's members straight from the bytes, agrees with reading a
//! `Value` and classifying it.
//!
//! The expectations are computed from the body with `serde_json` alone, not with the parser
//! under test.

use mcpd::jsonrpc::{self, Incoming};
use mcpd::server::SessionSupport;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};

use crate::messages::{self, Members};
use crate::support::config;
use crate::wire::{self, http_post, Connection, HeaderSet, HttpAnswer};

/// The codes mcpd answers with (JSON-RPC's and MCP's).
const CODES: [i64; 10] = [-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32020, -32021, -32022];

/// A response object's id and, for an error, its code.
type Response = (Value, Option<i64>);

/// Checks that `value` is a JSON-RPC response object: `jsonrpc: "2.0"`, an id that is a
/// string, an integer or `null`, and exactly one of `result` (an object, never with a `null`
/// id) and `error` (`code`, `message`, optional `data`, nothing else).
fn response(value: &Value) -> Result<Response, String> {
    let object = value.as_object().ok_or("a response must be an object")?;
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err("jsonrpc must be \"2.0\"".into());
    }
    let id = object.get("id").ok_or("a response must have an id")?;
    if !(id.is_null() || id.is_string() || id.is_i64()) {
        return Err(format!("id {id} is not null, a string or an integer"));
    }
    if object.len() != 3 {
        return Err(format!("a response has jsonrpc, id and result or error, not {:?}", object.keys()));
    }
    match (object.get("result"), object.get("error")) {
        (Some(Value::Object(_)), None) if !id.is_null() => Ok((id.clone(), None)),
        (None, Some(Value::Object(error))) => {
            let code = error.get("code").and_then(Value::as_i64).ok_or("error.code must be an integer")?;
            if !CODES.contains(&code) {
                return Err(format!("error code {code} is not one mcpd answers with"));
            }
            if !error.get("message").is_some_and(Value::is_string) {
                return Err("error.message must be a string".into());
            }
            if let Some(other) = error.keys().find(|k| !["code", "message", "data"].contains(&k.as_str())) {
                return Err(format!("error has an unknown member {other:?}"));
            }
            Ok((id.clone(), Some(code)))
        }
        _ => Err("a response has exactly one of result (an object, with an id) and error (an object)".into()),
    }
}

/// The id a message's answer must carry: a readable id (a string or an integer), else `null`.
fn expected_id(message: &Value) -> Value {
    match message.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(id) if id.is_i64() => id.clone(),
        _ => Value::Null,
    }
}

/// Whether a message must be answered: it is not an object, or it has a readable id and a
/// `method`, or it has an id that is not readable (that is always refused).
fn must_answer(message: &Value) -> bool {
    let Some(object) = message.as_object() else { return true };
    match object.get("id") {
        None => false,
        Some(_) if expected_id(message).is_null() => true,
        Some(_) => object.contains_key("method"),
    }
}

/// Checks the answer to `body` (`None`: no answer; `listened`: the request was answered with a
/// listen stream).
fn check(body: &[u8], answer: Option<&[u8]>, listened: bool) -> Result<(), TestCaseError> {
    let sent: Result<Value, _> = serde_json::from_slice(body);
    let answer: Option<Value> = match answer {
        None => None,
        Some(bytes) => Some(serde_json::from_slice(bytes).map_err(|e| fail(format!("the answer is not JSON: {e}")))?),
    };
    match (sent, answer) {
        (Err(_), Some(answer)) => {
            let (id, code) = response(&answer).map_err(fail)?;
            prop_assert_eq!((id, code), (Value::Null, Some(-32700)), "invalid JSON is a parse error");
        }
        (Err(_), None) => return Err(fail("invalid JSON must be answered")),
        (Ok(Value::Array(items)), answer) => check_batch(&items, answer.as_ref())?,
        (Ok(message), Some(answer)) => {
            prop_assert!(!listened);
            let (id, code) = response(&answer).map_err(fail)?;
            prop_assert_ne!(code, Some(-32700), "valid JSON is never a parse error");
            prop_assert_eq!(id, expected_id(&message), "the answer carries the message's id");
        }
        (Ok(message), None) => {
            prop_assert!(listened || !must_answer(&message), "a request with a readable id must be answered");
        }
    }
    Ok(())
}

/// A batch's answer: nothing (when no member needs one), one `-32600` for the whole batch (an
/// empty batch, or a revision without batches), or an array with one answer per answered
/// member, in order, carrying its id.
fn check_batch(items: &[Value], answer: Option<&Value>) -> Result<(), TestCaseError> {
    let required = items.iter().filter(|item| must_answer(item)).count();
    let answers = match answer {
        None => {
            prop_assert!(!items.is_empty() && required == 0, "{} batch members needed an answer", required);
            return Ok(());
        }
        Some(Value::Array(answers)) => answers,
        Some(single) => {
            let (id, code) = response(single).map_err(fail)?;
            prop_assert_eq!((id, code), (Value::Null, Some(-32600)), "a refused batch is one -32600");
            return Ok(());
        }
    };
    prop_assert!(!items.is_empty() && !answers.is_empty(), "a batch answer is a non-empty array");
    prop_assert!(answers.len() >= required && answers.len() <= items.len(), "one answer per answered member");
    let ids: Vec<Value> =
        answers.iter().map(|a| response(a).map(|(id, _)| id)).collect::<Result<_, _>>().map_err(fail)?;
    let mut expected = items.iter().map(expected_id);
    for id in &ids {
        prop_assert!(expected.any(|e| e == *id), "answer ids {:?} are not in the members' order", ids);
    }
    for item in items.iter().filter(|item| must_answer(item) && !expected_id(item).is_null()) {
        let id = expected_id(item);
        prop_assert!(ids.contains(&id), "the member with id {} was not answered", id);
    }
    Ok(())
}

fn fail(message: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(message.to_string())
}

/// Posts `body` to the endpoint and checks the answer.
fn post_and_check(
    body: &[u8],
    headers: &HeaderSet,
    session_id: Option<&str>,
    sessions: SessionSupport,
) -> Result<(), TestCaseError> {
    match http_post(wire::server(), body, headers, session_id, sessions) {
        HttpAnswer::Json(bytes) => check(body, Some(&bytes), false),
        HttpAnswer::Listen => check(body, None, true),
        HttpAnswer::Nothing => check(body, None, false),
    }
}

/// Feeds bytes to a stdio connection as its reader splits them (lines, `\r\n` allowed, blank
/// lines skipped) and checks each line's answer.
fn stdio_and_check(connection: &mut Connection, bytes: &[u8]) -> Result<(), TestCaseError> {
    for line in bytes.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let answer = connection.stdio_line(wire::server(), line);
        check(line, answer.as_deref(), false)?;
    }
    Ok(())
}

/// An `initialize` line (so that a stdio connection's revision changes: batches, eras).
fn initialize() -> impl Strategy<Value = Vec<u8>> {
    (any::<i64>(), select(vec!["2025-03-26", "2025-11-25", "2024-11-05", "2026-07-28", "x"])).prop_map(|(id, v)| {
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": v, "capabilities": {"elicitation": {}}}});
        init.to_string().into_bytes()
    })
}

/// Reverses the order of members of every object, at every level.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.iter().rev().map(|(k, v)| (k.clone(), reversed(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// A stateless `tools/call` of the input-asking tool, as one stdio line.
fn ask(id: i64, arguments: &Value, retry: Option<&str>) -> Vec<u8> {
    let mut params = json!({
        "name": "ask",
        "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    });
    if let Some(state) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = json!({"name": {"action": "accept", "content": {"name": "Ada"}}});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string().into_bytes()
}

/// The `result` of an answer, or its `error`.
fn result_of(answer: Option<Vec<u8>>) -> Value {
    let answer: Value = serde_json::from_slice(&answer.expect("a request is answered")).expect("answers are JSON");
    answer.get("result").or_else(|| answer.get("error")).cloned().expect("a result or an error")
}

/// What `jsonrpc::parse` must give, computed the plain way: the body read as a `Value`, then each
/// message classified (the parser reads the envelope's members straight from the bytes instead).
fn parsed_via_value(body: &[u8]) -> Result<Incoming, (i32, Option<jsonrpc::RequestId>)> {
    let reject = |r: jsonrpc::Rejection| (r.error.code.0, r.id);
    match serde_json::from_slice::<Value>(body) {
        Err(_) => Err((-32700, None)),
        Ok(Value::Array(items)) if items.is_empty() => Err((-32600, None)),
        Ok(Value::Array(items)) => Ok(Incoming::Batch(items.into_iter().map(jsonrpc::classify).collect())),
        Ok(message) => jsonrpc::classify(message).map(Incoming::Single).map_err(reject),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parsing_from_bytes_agrees_with_parsing_a_value((body, _) in messages::body()) {
        let parsed = jsonrpc::parse(&body).map_err(|r| (r.error.code.0, r.id));
        prop_assert_eq!(parsed, parsed_via_value(&body));
    }

    #[test]
    fn any_bytes_are_answered_validly_or_not_at_all(
        body in prop::collection::vec(any::<u8>(), 0..200),
        sessions in prop_oneof![Just(SessionSupport::Disabled), Just(SessionSupport::Enabled)],
    ) {
        post_and_check(&body, &HeaderSet::default(), None, sessions)?;
        stdio_and_check(&mut Connection::default(), &body)?;
    }

    #[test]
    fn near_valid_messages_are_answered_with_their_id(
        (body, first) in messages::body(),
        routing in messages::routing(),
    ) {
        let headers = routing.headers(&first);
        post_and_check(&body, &headers, routing.session_id, routing.sessions)?;
    }

    #[test]
    fn a_stdio_connection_answers_every_line_with_its_id(
        lines in prop::collection::vec(prop_oneof![
            4 => messages::body().prop_map(|(body, _): (Vec<u8>, Members)| body),
            1 => initialize(),
        ], 1..8),
    ) {
        let mut connection = Connection::default();
        for line in &lines {
            stdio_and_check(&mut connection, line)?;
        }
    }

    #[test]
    fn a_request_state_opens_for_the_same_arguments_in_any_member_order(
        arguments in crate::json::object_value(),
        changed in crate::json::value(),
    ) {
        let mut connection = Connection::default();
        let first = result_of(connection.stdio_line(wire::server(), &ask(1, &arguments, None)));
        prop_assert_eq!(&first["resultType"], "input_required", "{}", first);
        let state = first["requestState"].as_str().expect("a sealed state").to_owned();
        let retried = result_of(connection.stdio_line(wire::server(), &ask(2, &reversed(&arguments), Some(&state))));
        prop_assert_eq!(&retried["resultType"], "complete", "{}", retried);
        prop_assert_eq!(&retried["structuredContent"]["answer"]["content"]["name"], "Ada");
        prop_assert_eq!(&retried["structuredContent"]["state"], &json!({"r": 1}), "the handler gets its state back");
        let mut other = arguments.clone();
        other["~changed"] = json!([changed]);
        let refused = result_of(connection.stdio_line(wire::server(), &ask(3, &other, Some(&state))));
        prop_assert_eq!(&refused["code"], -32602, "{}", refused);
    }
}
