//! JSON-RPC 2.0 envelopes: parsing with the exact error for each malformation, and serialization
//! of the answers.
//!
//! This module knows nothing of MCP. It turns bytes into [`Incoming`] (one message or a batch)
//! and reports every malformed input as a [`Rejection`] carrying the JSON-RPC error and, when it
//! could be read, the request id to echo. A request's `_meta` is kept as text and read for the
//! members the runtime uses ([`RequestMeta`]).
//!
//! Each file has one job, and this one only names them:
//! - `error` — [`ErrorCode`] and [`ErrorObject`], which need nothing else of the envelopes;
//! - `message` — the typed messages and their ids;
//! - `meta` — a request's `_meta` and the client capabilities it declares, read from its text;
//! - `parse` — bytes to messages, with the exact rejection for each malformation;
//! - `outgoing` — what we send, serialized straight from borrowed parts.

mod error;
mod message;
mod meta;
mod outgoing;
mod parse;

pub use error::{ErrorCode, ErrorObject};
pub use message::{Message, Notification, Request, RequestId, Response, JSONRPC_VERSION};
pub(crate) use meta::MetaMember;
pub use meta::{ClientCapabilities, RequestMeta, TraceContext, TraceMembers, BAGGAGE, TRACEPARENT, TRACESTATE};
pub use outgoing::{outgoing_message, result_bytes, Outgoing};
pub use parse::{classify, parse, parse_single, Incoming, Rejection};
