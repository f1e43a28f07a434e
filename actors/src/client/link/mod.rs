//! One negotiated connection to a remote MCP server: what a `ClientConnection` actor talks
//! through. A [`Link`] lives on the actor's thread (awc's client is `!Send`), is shared by the
//! actor's concurrent calls through an `Rc`, and negotiates once (concurrent first calls wait
//! for the same negotiation).
//!
//! # Layout
//!
//! - `wire`: [`Wire`](wire::Wire), the transport negotiated (or being negotiated), each variant
//!   owning the state only that wire has;
//! - `negotiate`: connecting — `server/discover`, `initialize`, the fallback to HTTP+SSE, the
//!   session's standalone GET stream, starting (and restarting) a stdio child;
//! - `request`: one request on the negotiated wire, with its time limit, cancellation and the
//!   one re-initialization after a `404` in a session;
//! - `input`: stateless 2026-07-28 requests, and completing their MRTR `input_required` rounds;
//! - `exchange`: one HTTP request and its answer (JSON, or SSE resumed with `Last-Event-ID`);
//! - `answer`: what a POST comes back as, from awc or from `plain`, a satellite's own HTTP/1.1
//!   client for a plain `http://` endpoint;
//! - `auth`: bearer tokens on requests and the answer to `401` / `403 insufficient_scope` (OAuth);
//! - `legacy_sse`: the 2024-11-05 HTTP+SSE transport;
//! - `inbound`: what the server sends besides the awaited response (its requests,
//!   notifications, and responses that arrive on another stream), and our replies;
//! - `headers`: the headers a request carries, typed;
//! - `body`: request bodies, written without copying their params (a stateless request's
//!   `_meta` serialized once);
//! - `outcome`: a response message as a result or a [`ClientError`](super::ClientError);
//! - `state`: [`Link`] itself and how one is made; `config`: [`LinkConfig`], [`Mode`];
//! - `current_wire`: brief looks into the wire, replacing it, and closing the link;
//!   `sse_channel`: an open HTTP+SSE channel;
//! - `call_entry`, `calls`: the calls in flight and the requests counted on the link;
//! - `trace`: each request's CLIENT span, whose context the request carries.

mod answer;
mod auth;
mod body;
mod call_entry;
mod calls;
mod config;
mod current_wire;
mod exchange;
mod headers;
mod http;
mod inbound;
mod input;
mod legacy_sse;
mod negotiate;
mod outcome;
mod plain;
mod request;
mod share;
mod sse_channel;
mod state;
mod trace;
mod wire;

pub(crate) use call_entry::CallEntry;
pub use config::{LinkConfig, Mode, MAX_RESPONSE_BYTES};
pub(crate) use headers::ToolName;
pub(crate) use input::{Forward, Forwarded};
pub(crate) use outcome::outcome;
pub(crate) use request::CancelSignal;
pub(crate) use share::LinkShare;
pub(crate) use state::Link;
