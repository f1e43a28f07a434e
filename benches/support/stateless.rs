//! One stateless 2026-07-28 `tools/call` sent with awc, as the client-side benches and the soak
//! send it: the body (with its `_meta`) serialized once, the routing headers on every request.

use bytes::Bytes;
use serde_json::{json, Value};

/// The body of a stateless `tools/call` of `tool` with `arguments`.
pub(crate) fn body(tool: &str, arguments: Value) -> Bytes {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":arguments,
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}});
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

/// POSTs `body` (from [`body`], for `tool`) to `url`; answers the JSON-RPC answer of a `200`,
/// or what went wrong.
pub(crate) async fn call(http: &awc::Client, url: &str, tool: &str, body: Bytes) -> Result<Value, String> {
    let mut response = http
        .post(url)
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("mcp-protocol-version", "2026-07-28"))
        .insert_header(("mcp-method", "tools/call"))
        .insert_header(("mcp-name", tool))
        .send_body(body)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let bytes = response.body().await.map_err(|e| format!("body: {e}"))?;
    if response.status() != 200 {
        return Err(format!("status {}: {}", response.status(), String::from_utf8_lossy(&bytes)));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}
