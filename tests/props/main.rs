//! Property-based tests of the protocol core (`mcpd`, no actix): generated inputs, hostile and
//! near-valid, against the parts that read what peers send. One module per target:
//!
//! - [`dispatch`]: the JSON-RPC parser and the dispatch of both eras, driven as the transports
//!   drive them ([`wire`]), with generated messages ([`messages`]);
//! - [`headers`]: the routing-header value encoding (`=?base64?…?=`);
//! - [`sse`]: the SSE decoder, under any chunking;
//! - [`client_config`]: the client's configuration documents and their patches in place;
//! - [`properties`]: the `mcp.properties` parser;
//! - [`oauth_challenge`]: `WWW-Authenticate` challenges (the client's OAuth).
//!
//! Each property runs a bounded number of cases (see [`support`]); for a long run:
//! `MCPD_PROPTEST_CASES=100000 cargo test --release -p mcpd --test props`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a test fails loudly on what it did not expect")]

mod support;

mod json;
mod messages;
mod wire;

mod client_config;
mod dispatch;
mod headers;
mod oauth_challenge;
mod properties;
mod sse;
