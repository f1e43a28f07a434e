//! The smallest useful mcpd server: one tool, served over HTTP on loopback.
//!
//! ```sh
//! cargo run --example hello            # http://127.0.0.1:8791/mcp (or: cargo run --example hello -- 9000)
//! curl -s http://127.0.0.1:8791/mcp -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2025-11-25' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}'
//! ```
//!
//! Every protocol revision is served on the same endpoint, from the 2024-11-05 handshake to the
//! stateless 2026-07-28 wire; Ctrl-C stops the server.

use std::sync::Arc;

use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, McpServer, ServerOptions, ToolError};
use mcpd_actors::{ListenerConfig, Mcpd};
use serde_json::{json, Map, Value};

#[actix_web::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The tools: a name, a description, a JSON Schema for the arguments, and an async handler.
    let mut catalog = Catalog::new();
    catalog.add_tool(
        Tool::new(
            "greet",
            "Greets someone by name.",
            json!({
                "type": "object",
                "properties": { "name": { "type": "string", "description": "Who to greet" } },
                "required": ["name"]
            }),
        ),
        |args: Map<String, Value>, _ctx| async move {
            // A tool's own failure is a result with `isError: true`, not a protocol error.
            let name = args.get("name").and_then(Value::as_str).ok_or_else(|| ToolError::failed("name is missing"))?;
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        },
    );

    // 2. The protocol layer over the catalog (server name, version, page size, …).
    let server = Arc::new(McpServer::new(ServerOptions::default(), catalog));

    // 3. The runtime: bind 127.0.0.1 on the port given as the first argument (default 8791).
    let port = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => mcpd::config::DEFAULT_PORT,
    };
    let config = ListenerConfig { port, ..ListenerConfig::default() };
    let runtime = Mcpd::new(server, config.clone(), Vec::new());
    let status = runtime.start(config).await?;
    eprintln!("hello: serving MCP on {} (Ctrl-C to stop)", status.url);

    actix_rt::signal::ctrl_c().await?;
    runtime.close().await?;
    Ok(())
}
