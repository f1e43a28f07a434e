//! # mcpd-actors — the actix runtime of mcpd
//!
//! Serves a [`mcpd::McpServer`] (the pure protocol core: catalog, routing, validation) over HTTP
//! and stdio, and connects to remote MCP servers as a client. The public API is small:
//!
//! | item | what it is for |
//! |---|---|
//! | [`Mcpd`] | the running server: `new`, `start`, `stop`, `sync_with_settings`, `status`, `close` |
//! | [`ListenerConfig`], [`Limits`], [`ConnectionLimits`], [`SessionConfig`], [`TransportMode`] | what the HTTP endpoint binds, enforces and speaks |
//! | [`stdio::serve`] | MCP over a byte-stream pair (stdin/stdout), for desktop hosts |
//! | [`client`] | one `ClientConnection` actor per remote server, behind [`client::ClientManager`] |
//! | [`tools`] | project-confined file tools, command tools, the gateway, and [`tools::sets::assemble`] (the catalog `mcpd serve` builds) |
//! | [`metrics`], [`ActorCounts`], [`ListenerStatus`] | what `/metrics` and `/status` report |
//! | [`access`] | the access file (`--access`): per-client tools, prompts and rate limits, reloadable |
//! | [`panics`] | panic containment: a panic costs one request or task, is logged once with its location and counted |
//!
//! Inside, five actor kinds exchange typed messages: a `Supervisor` per process (shutdown), a
//! `Listener` per bound endpoint (the actix-web server), a `Session` per streamable-HTTP session
//! (its SSE streams, replay buffers, subscriptions, expiry), a `ToolExecutor` per session or stdio
//! connection (concurrent requests, cancellation) and a `ClientConnection` per remote server.
//! Stateless 2026-07-28 requests create none of them. `docs/architecture.md` draws the whole.
//!
//! ```no_run
//! use std::sync::Arc;
//! use mcpd::{Catalog, McpServer, ServerOptions};
//! use mcpd_actors::{ListenerConfig, Mcpd};
//!
//! # async fn run() -> Result<(), mcpd_actors::RuntimeError> {
//! let mut catalog = Catalog::new();
//! mcpd::builtin::register(&mut catalog); // echo, time
//! let server = Arc::new(McpServer::new(ServerOptions::default(), catalog));
//! let config = ListenerConfig { port: 8791, ..ListenerConfig::default() };
//! let runtime = Mcpd::new(server, config.clone(), Vec::new());
//! let status = runtime.start(config).await?; // http://127.0.0.1:8791/mcp
//! # let _ = status;
//! runtime.close().await
//! # }
//! ```
//!
//! The `mcpd` binary (`src/bin/mcpd/`) is a thin command line over this API.

pub mod access;
mod auth;
pub mod client;
pub mod cluster;
pub mod config;
mod counts;
mod file_events;
mod http;
mod listener;
pub mod metrics;
pub mod panics;
mod queue;
pub mod reload;
mod runtime;
mod session;
mod shares;
mod sse;
mod status;
pub mod stdio;
mod supervisor;
mod tasks;
mod tool_executor;
pub mod tools;

pub use config::{ConnectionLimits, Limits, ListenerConfig, SessionConfig, TransportMode};
pub use counts::{ActorCounts, ActorKind};
pub use http::StatusExtras;
pub use runtime::{Mcpd, RuntimeError};
pub use shares::ShareConfig;
pub use status::ListenerStatus;

/// The guide's library page, whose examples `cargo test --doc` compiles.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
pub struct GuideLibrary;
