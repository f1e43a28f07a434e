//! The pure part of the MCP client: configuration, request building, the negotiation rules,
//! the rules a listing (`tools/list` and the like) is read by,
//! response matching and the SSE decoder. The actors that do the I/O live in `mcpd-actors`.

pub mod config;
pub mod list;
pub mod negotiate;
pub mod oauth;
pub mod request;
pub mod sse;
