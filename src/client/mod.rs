//! The pure part of the MCP client: configuration, request building, the negotiation rules,
//! response matching and the SSE decoder. The actors that do the I/O live in `mcpd-actors`.

pub mod config;
pub mod negotiate;
pub mod request;
pub mod sse;
