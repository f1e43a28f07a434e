//! # mcpd-actors — the actix runtime of mcpd
//!
//! Serves a [`mcpd::McpServer`] (the pure protocol core: catalog, routing, validation) over HTTP
//! and stdio, and connects to remote MCP servers as a client. The public API is small:
//!
//! | item | what it is for |
//! |---|---|
//! | [`Mcpd`] | the running server: `new`, `start`, `stop`, `sync_with_settings`, `status`, `close` |
//! | [`ListenerConfig`], [`Limits`], [`ConnectionLimits`], [`SessionConfig`], [`ShareConfig`], [`TransportMode`] | what the HTTP endpoint binds, enforces and speaks |
//! | [`ActorCounts`], [`ActorKind`], [`ListenerStatus`], [`StatusExtras`] | what `/status` reports and what an embedder adds to it |
//! | [`RuntimeError`] | why starting, stopping or closing failed |
//!
//! Every public module, and why it is public:
//!
//! | module | what it is for | public because |
//! |---|---|---|
//! | [`stdio`] | MCP over a byte-stream pair (stdin/stdout), for desktop hosts | an embedder serves stdio with [`stdio::serve`] |
//! | [`client`] | one `ClientConnection` actor per remote server, behind [`client::ClientManager`] | the client library (`mcpd tools`, `mcpd call`, embedders, the conformance client) |
//! | [`tools`] | project-confined file tools, command tools, declared prompts and resources, the gateway, and [`tools::sets::assemble`] (the catalog `mcpd serve` builds) | an embedder builds what `mcpd serve` builds |
//! | [`metrics`] | what `/metrics` reports, and the collectors and gauges added to it | its types are in [`Mcpd::metrics`]'s answer |
//! | [`access`] | the access file (`--access`): per-client tools, prompts, resources and rate limits, reloadable | the binary loads and reloads it into [`ListenerConfig::access`]; tests build one |
//! | [`cluster`] | cluster mode (`--redis`): shared `requestState` keys, tasks and sessions over Redis | the binary and `examples/everything` start it before the runtime |
//! | [`panics`] | panic containment: a panic costs one request or task, is logged once with its location and counted | the binary contains the servers file's reload task with it; tests read its counts |
//! | [`views`] | the virtual servers in force (`virtualServers` of the servers file), each served at `/mcp/<name>` | the binary loads them into [`ListenerConfig::virtual_servers`] and the gateway replaces them on reload |
//! | [`reload`] | live reload: watched files, debounced, and `SIGHUP`, calling back one at a time | the binary reloads the servers, declarations and access files with it |
//!
//! The rest is private: `runtime` ([`Mcpd`] itself); `supervisor`, `listener`, `session`,
//! `tool_executor` and `tasks` (the actors below; `tasks` is also the core's task service);
//! `http` (the HTTP edge: guard, routes, streamed answers); `auth` (the OAuth resource server);
//! `shares` (each identity's share of the capacity); `queue` (every bounded queue); `sse` (the
//! SSE framing); `file_events` (debounced file events); `counts` and `status` (what `/status`
//! and `/metrics` read without a mailbox hop); `config` (the configuration types, re-exported
//! above).
//!
//! Inside, six actor kinds exchange typed messages, each stopped by its own `Stop…` message:
//!
//! | actor | one per | does |
//! |---|---|---|
//! | `Supervisor` | process | owns the actor counts, the session registry and the listener's address; orders shutdown |
//! | `Listener` | bound endpoint | owns the actix-web server: starts, stops and persists it |
//! | `Session` | streamable-HTTP session (or HTTP+SSE connection) | its SSE streams, replay buffers, subscriptions, expiry |
//! | `ToolExecutor` | session or stdio connection | runs its requests concurrently; cancellation |
//! | `TaskRunner` | runtime with tasks on | owns every running task (the tasks extension); cancels and expires them |
//! | `ClientConnection` | remote server | the link to it: negotiation, requests, its session or child process |
//!
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
mod config;
mod counts;
mod file_events;
mod http;
mod listener;
pub mod metrics;
pub mod panics;
mod queue;
pub mod reload;
mod runtime;
mod served;
mod session;
mod shares;
mod sse;
mod status;
pub mod stdio;
mod supervisor;
mod tasks;
pub mod telemetry;
mod tool_executor;
pub mod tools;
pub mod views;

pub use config::{ConnectionLimits, Limits, ListenerConfig, SessionConfig, TransportMode};
pub use counts::{ActorCounts, ActorKind};
pub use http::StatusExtras;
pub use runtime::{Mcpd, RuntimeError};
pub use shares::ShareConfig;
pub use status::ListenerStatus;

/// The guide: README.md and every page of docs/, pulled in so that `cargo test --doc` compiles
/// their Rust examples (`scripts/check_structure.py` checks that no page is left out). Blocks in
/// other languages are fenced with theirs (`sh`, `json`, `text`), so rustdoc leaves them be.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/README.md")]
    pub struct Contents;
    #[doc = include_str!("../../docs/access-and-oauth.md")]
    pub struct AccessAndOauth;
    #[doc = include_str!("../../docs/architecture.md")]
    pub struct Architecture;
    #[doc = include_str!("../../docs/client.md")]
    pub struct Client;
    #[doc = include_str!("../../docs/clusters.md")]
    pub struct Clusters;
    #[doc = include_str!("../../docs/configuration.md")]
    pub struct Configuration;
    #[doc = include_str!("../../docs/gateway.md")]
    pub struct Gateway;
    #[doc = include_str!("../../docs/library.md")]
    pub struct Library;
    #[doc = include_str!("../../docs/limits.md")]
    pub struct Limits;
    #[doc = include_str!("../../docs/operations.md")]
    pub struct Operations;
    #[doc = include_str!("../../docs/perf-notes.md")]
    pub struct PerfNotes;
    #[doc = include_str!("../../docs/prompts-and-resources.md")]
    pub struct PromptsAndResources;
    #[doc = include_str!("../../docs/security.md")]
    pub struct Security;
    #[doc = include_str!("../../docs/serving.md")]
    pub struct Serving;
    #[doc = include_str!("../../docs/tasks.md")]
    pub struct Tasks;
    #[doc = include_str!("../../docs/telemetry.md")]
    pub struct Telemetry;
    #[doc = include_str!("../../docs/upgrading.md")]
    pub struct Upgrading;
}
