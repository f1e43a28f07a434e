//! A hostile remote MCP server on 127.0.0.1 (over [`MockServer`]): it negotiates the stateless
//! 2026-07-28 wire like a good server, then answers `tools/list` with one of the [`Listing`]s —
//! broken entries among good ones, results of the wrong shape, endless fresh cursors, pages that
//! come too slowly — and `tools/call` with results of the wrong shape for some tools.
//!
//! Good tools (kept by the client): [`mixed_kept`], among them [`long_name`] (valid, but 128
//! characters, so too long once a gateway prefixes it). Their calls: `alpha` and `beta` answer `<name> ok`;
//! `is_error_yes` answers `isError: "yes"`; `content_text` answers `content: "text"`. Its
//! `prompts/list` holds one good prompt among two bad entries; its `resources/list` is of the
//! wrong shape.

use std::time::Duration;

use serde_json::{json, Value};

use super::mock_http::{MockServer, Recorded, Reply};

/// What the server's `tools/list` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    /// One page: the good tools among broken entries ([`mixed_skipped`] says which and why).
    Mixed,
    /// `{"tools": "x"}`.
    ToolsNotArray,
    /// A result that is a string.
    NotAnObject,
    /// `nextCursor` is a number.
    CursorNotString,
    /// Pages forever, each with ten tools and a fresh cursor.
    Endless,
    /// Pages forever with fresh cursors, each [`SLOW_PAGE`] late.
    Slow,
}

/// The tools of [`Listing::Mixed`] the client keeps, in order.
pub(crate) fn mixed_kept() -> Vec<String> {
    let mut kept: Vec<String> = ["alpha", "beta", "is_error_yes", "content_text"].map(String::from).to_vec();
    kept.extend([long_name(), "no_schema_is_fine".to_owned()]);
    kept
}

/// How late each page of [`Listing::Slow`] comes (well under the client's 5 s per request).
pub(crate) const SLOW_PAGE: Duration = Duration::from_millis(1500);

/// A valid tool name of the full 128 characters.
pub(crate) fn long_name() -> String {
    "L".repeat(128)
}

/// The entries of [`Listing::Mixed`] the client skips, as the listing describes them.
pub(crate) fn mixed_skipped() -> Vec<String> {
    let charset = "the name has a character other than A-Z a-z 0-9 _ - .";
    vec![
        "entry 0 (\"x\"): not an object (a string)".to_owned(),
        "entry 2 (7): not an object (a number)".to_owned(),
        format!(
            "entry 3 (name \"{}\"… (1048576 characters)): the name is 1048576 characters long (at most 128)",
            "m".repeat(40)
        ),
        format!("entry 4 (name \"bad name\"): {charset} (' ')"),
        format!("entry 5 (name \"中文\"): {charset} ('中')"),
        "entry 7 (name \"alpha\"): a second entry for \"alpha\"".to_owned(),
        "entry 8 (name \"schema\"): inputSchema is not an object (a string)".to_owned(),
        "entry 13 (null): not an object (null)".to_owned(),
    ]
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": "A tool.", "inputSchema": {"type": "object"}})
}

fn page(listing: Listing, request: &Recorded) -> Reply {
    // Page n is asked for with cursor "c<n>" (the first page without one).
    let n: u64 = request.params()["cursor"].as_str().and_then(|c| c.strip_prefix('c')?.parse().ok()).unwrap_or(0);
    let result = match listing {
        Listing::Mixed => json!({"tools": [
            "x", tool("alpha"), 7, tool(&"m".repeat(1 << 20)), tool("bad name"), tool("中文"), tool("beta"),
            tool("alpha"), {"name": "schema", "inputSchema": "text"}, tool("is_error_yes"), tool("content_text"),
            tool(&long_name()), {"name": "no_schema_is_fine"}, null
        ]}),
        Listing::ToolsNotArray => json!({"tools": "x"}),
        Listing::NotAnObject => json!("tools"),
        Listing::CursorNotString => json!({"tools": [tool("alpha")], "nextCursor": 2}),
        Listing::Endless => {
            let tools: Vec<Value> = (0..10).map(|k| tool(&format!("t{n}_{k}"))).collect();
            json!({"tools": tools, "nextCursor": format!("c{}", n + 1)})
        }
        Listing::Slow => json!({"tools": [tool(&format!("s{n}"))], "nextCursor": format!("c{}", n + 1)}),
    };
    let reply = Reply::result(&request.rpc_id(), result);
    match listing {
        Listing::Slow => Reply::Delayed(SLOW_PAGE, Box::new(reply)),
        _ => reply,
    }
}

fn call(request: &Recorded) -> Reply {
    let name = request.params()["name"].as_str().unwrap_or_default().to_owned();
    let result = match name.as_str() {
        "alpha" | "beta" => json!({"content": [{"type": "text", "text": format!("{name} ok")}], "isError": false}),
        "is_error_yes" => json!({"content": [{"type": "text", "text": "maybe"}], "isError": "yes"}),
        "content_text" => json!({"content": "text"}),
        _ => return Reply::error(200, &request.rpc_id(), -32602, &format!("Unknown tool: {name}")),
    };
    Reply::result(&request.rpc_id(), result)
}

/// A hostile server whose `tools/list` answers `listing`.
pub(crate) fn hostile_server(listing: Listing) -> MockServer {
    MockServer::start(move |request| match request.rpc_method().as_deref() {
        Some("server/discover") => Reply::result(
            &request.rpc_id(),
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
                "resultType": "complete"
            }),
        ),
        Some("tools/list") => page(listing, request),
        Some("tools/call") => call(request),
        Some("prompts/list") => {
            Reply::result(&request.rpc_id(), json!({"prompts": ["x", {"name": "hello"}, {"name": ""}]}))
        }
        Some("resources/list") => Reply::result(&request.rpc_id(), json!({"resources": "x"})),
        _ => Reply::error(200, &request.rpc_id(), -32601, "Method not found"),
    })
}

/// How many `tools/list` requests `server` has received.
pub(crate) fn list_requests(server: &MockServer) -> usize {
    server.requests().iter().filter(|r| r.rpc_method().as_deref() == Some("tools/list")).count()
}
