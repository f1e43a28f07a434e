//! The integration tests of mcpd: one test crate, one module per subject, so that actix, awc
//! and the runtime are linked once for all of them.
//!
//! Two kinds of tests live here side by side:
//! * in-process tests start the runtime (`mcpd_actors::Mcpd`) on a free loopback port and talk
//!   to it over real sockets (`support::server`, `support::sse`), or point the client runtime at
//!   a scripted server (`support::mock_http`);
//! * child-process tests run the `mcpd` binary (Cargo builds it for this crate:
//!   `CARGO_BIN_EXE_mcpd`), the conformance fixture `examples/everything.rs`, and independent
//!   peers — the official Python MCP SDK and the npm reference server — whose scripts are in
//!   `actors/tests/interop/` (`support::process`, `support::python`, `support::interop_servers`).
//!
//! Every test runs in this one process, concurrently with the others: tests share no
//! process-global state (no `std::env::set_var`, no change of the working directory, no fixed
//! ports); children get their environment and working directory on their `Command`. A test
//! that must act while a call runs awaits the tool's signal (`support::arrivals`); one that waits
//! for an effect polls it with a deadline (`support::eventually`); none sleeps and hopes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a test fails loudly on what it did not expect")]

mod support;

mod bounded_queues;
mod catalog;
mod cli;
mod client;
mod client_cli;
mod client_faults;
mod client_http_variants;
mod client_interop;
mod client_shares;
mod client_tasks;
mod cluster_bus;
mod cluster_rates;
mod cluster_redis;
mod cluster_sessions;
mod command_tools;
mod declared_prompts;
mod edge_limits;
mod file_resources;
mod file_tools;
mod files_race;
mod gateway;
mod gateway_access;
mod gateway_apps;
mod gateway_e2e;
mod gateway_federation;
mod gateway_names;
mod gateway_passthrough;
mod gateway_reload;
mod gateway_views;
mod hostile_remote;
mod http_endpoint;
mod http_guard;
mod interop_python;
mod lifecycle;
mod mrtr;
mod oauth_client;
mod oauth_login;
mod oauth_server;
mod operator_routes;
mod panic_containment;
mod project_reach;
mod project_screen;
mod session_binding;
mod session_expiry;
mod sessions;
mod sessions_interop;
mod stdio;
mod tasks;
mod telemetry;
mod telemetry_paths;
mod telemetry_trace;
