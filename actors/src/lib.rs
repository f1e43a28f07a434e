//! # mcpd-actors — the actix runtime of mcpd
//!
//! The actors, transports and lifecycles built on the pure protocol core (`mcpd`):
//!
//! | actor | one per | module |
//! |---|---|---|
//! | [`supervisor::Supervisor`] | process | owns the actor counts, orders shutdown |
//! | [`listener::Listener`] | bound HTTP endpoint | the actix-web server handle, start/stop/settings |
//! | [`session::Session`] | streamable-HTTP session | its SSE streams, replay buffers, subscriptions, expiry |
//! | [`tool_executor::ToolExecutor`] | connection or session | runs its requests concurrently, cancels them |
//!
//! Transports: [`http`] (one endpoint for every revision) and [`stdio`]. The library API is
//! [`Mcpd`]; the `mcpd` binary (`src/main.rs`) is a thin CLI over it.

pub mod client;
pub mod config;
pub mod counts;
pub mod http;
pub mod listener;
pub mod metrics;
pub mod runtime;
pub mod session;
pub mod status;
pub mod stdio;
pub mod supervisor;
pub mod tool_executor;
pub mod tools;

pub use config::{Limits, ListenerConfig, SessionConfig, TransportMode};
pub use counts::{ActorCounts, ActorKind};
pub use runtime::{Mcpd, RuntimeError};
pub use status::ListenerStatus;
