//! # mcpd — the protocol core
//!
//! The pure part of mcpd, an actor-based MCP (Model Context Protocol) runtime: everything that
//! can be decided without sockets, actors or a runtime. The actix runtime (`mcpd-actors`) builds
//! on it; nothing here may depend on that crate.
//!
//! ## Layout
//!
//! - [`jsonrpc`] — JSON-RPC 2.0 envelopes, parsing with the exact error for each malformation.
//! - [`version`] — the five protocol revisions and their eras.
//! - [`error`] — protocol errors with their JSON-RPC codes and HTTP statuses.
//! - [`headers`] — routing headers and the `=?base64?…?=` value encoding.
//! - [`model`] — MCP types: tools, content blocks, prompts, resources, capabilities.
//! - [`catalog`] — tools, prompts and resources with their async handlers.
//! - [`mrtr`] — multi round-trip requests: `InputRequired` and the sealed `requestState`.
//! - [`context`] — what a handler sees of its request, and the [`context::Peer`] back to the client.
//! - [`server`] — routing a request to its operation and shaping the result for its era.
//! - [`tasks`] — the tasks extension: wire types, the task store trait and its memory store.
//! - [`client`] — the pure part of the client: configuration, requests, negotiation, SSE.
//! - [`config`] — `mcp.properties`, the `enabledTools` filter and the persisted listener settings.
//! - [`auth`] — API keys (constant-time) and Origin / Host checks.
//! - [`builtin`] — the tools a fresh `mcpd` serves (`echo`, `time`).
//!
//! ## Transport-facing rules
//!
//! Some public items exist for the transports, not for a handler's author: what a POSTed
//! message is ([`server::route_post`], [`server::Posted`], [`server::SessionSupport`]), the era
//! of a request ([`server::http_era`], [`server::stdio_era`], [`server::legacy_http_version`]),
//! an HTTP request's headers as the core reads them ([`server::HttpHeaders`],
//! [`server::RoutingHeaders`], [`server::HeaderLookup`]), and the bytes of an answer
//! ([`server::encode_answer`], [`server::encode_batch`]). They are protocol rules, so they live
//! here, where they are unit- and property-tested without sockets; the runtime that applies them
//! (`mcpd-actors`) is another crate, so they cannot be `pub(crate)`. A transport of another
//! runtime would call the same functions and so answer alike.

#![forbid(unsafe_code)]

pub mod auth;
pub mod builtin;
pub mod catalog;
pub mod client;
pub mod config;
pub mod context;
pub mod error;
mod future;
pub mod headers;
pub mod jsonrpc;
pub mod model;
pub mod mrtr;
pub mod server;
pub mod tasks;
pub mod telemetry;
mod timestamp;
pub mod version;

pub use catalog::{Catalog, ToolError};
pub use context::ToolContext;
pub use error::ProtocolError;
pub use server::{McpServer, ServerOptions};
pub use version::ProtocolVersion;
