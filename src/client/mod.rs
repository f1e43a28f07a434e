//! The pure part of the MCP client: configuration, request building, the negotiation rules,
//! the rules a listing (`tools/list` and the like) is read by, response matching, the SSE
//! decoder, the rules a client waits for a task by (`task`), and which call a message a server
//! sends during calls belongs to (`attribution`). The actors that do the I/O live
//! in `mcpd-actors`.

pub mod attribution;
pub mod config;
pub mod list;
pub mod negotiate;
pub mod oauth;
pub mod request;
pub mod sse;
pub mod task;
