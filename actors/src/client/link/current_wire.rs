//! A link's current wire: brief looks into it (each borrows it only for the call, never across
//! an await), replacing it, closing it ([`Link::close`]), and the responses a session request
//! claims from another stream ([`StrayClaim`]).

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mcpd::headers::HeaderParam;
use mcpd::jsonrpc::RequestId;
use serde_json::Value;
use tokio::sync::oneshot;

use super::config::Mode;
use super::headers::Headers;
use super::sse_channel::SseChannel;
use super::state::Link;
use super::wire::{Carrier, Wire};
use crate::client::stdio::StdioChannel;

/// Brief looks into the wire; each borrows it only for the call, so none is held across an
/// await.
impl Link {
    pub(crate) fn mode(&self) -> Option<Mode> {
        self.wire.borrow().mode()
    }

    /// The headers of our replies and session requests on the current wire.
    pub(super) fn wire_headers(&self) -> Headers {
        self.wire.borrow().headers()
    }

    /// The child, on a stdio wire.
    pub(super) fn stdio_channel(&self) -> Option<Rc<StdioChannel>> {
        self.wire.borrow().stdio_channel()
    }

    /// The channel, on the HTTP+SSE wire.
    pub(super) fn sse_channel(&self) -> Option<Rc<SseChannel>> {
        self.wire.borrow().sse_channel()
    }

    /// The carrier, while negotiating.
    pub(super) fn carrier(&self) -> Option<Carrier> {
        match &*self.wire.borrow() {
            Wire::Connecting(carrier) => Some(carrier.clone()),
            _ => None,
        }
    }

    /// Puts `wire` in place and returns the one it replaces (dropping it releases its state).
    pub(super) fn replace_wire(&self, wire: Wire) -> Wire {
        if let Some(share) = self.published() {
            share.set_stateless(matches!(wire, Wire::Stateless { .. }));
        }
        std::mem::replace(&mut *self.wire.borrow_mut(), wire)
    }

    /// Makes an open HTTP+SSE channel the carrier to negotiate over (the wire it replaces is
    /// dropped).
    pub(super) fn negotiate_over_sse(&self, channel: Rc<SseChannel>) {
        drop(self.replace_wire(Wire::Connecting(Carrier::Sse(channel))));
    }

    /// Keeps the session id an HTTP answer carried: during the handshake (the session will use
    /// it), or in a session (the server may assign one late). Other wires have no session.
    pub(super) fn adopt_session_id(&self, id: &str) {
        match &mut *self.wire.borrow_mut() {
            Wire::Connecting(Carrier::Http { session }) => *session = Some(id.to_owned()),
            Wire::Session(wire) => wire.id = Some(id.to_owned()),
            _ => {}
        }
    }

    /// Remembers the `x-mcp-header` parameters of listed tools (stateless calls need them).
    pub(crate) fn remember_tool_params(&self, params: HashMap<String, Vec<HeaderParam>>) {
        if let Wire::Stateless { tool_params } = &mut *self.wire.borrow_mut() {
            *tool_params = std::sync::Arc::new(params);
            if let Some(share) = self.published() {
                share.set_tool_params(tool_params.clone());
            }
        }
    }

    /// The remembered `x-mcp-header` parameters of one tool, on the stateless wire.
    pub(super) fn tool_params(&self, tool: &str) -> Option<Vec<HeaderParam>> {
        if let Some(share) = self.borrowed() {
            return share.tool_params(tool);
        }
        match &*self.wire.borrow() {
            Wire::Stateless { tool_params } => tool_params.get(tool).cloned(),
            _ => None,
        }
    }

    /// Ends the connection: DELETE the session (briefly, best effort), stop its standalone
    /// stream, the SSE reader or the child.
    pub(crate) async fn close(&self) {
        self.closed.set(true);
        match self.replace_wire(Wire::Idle) {
            Wire::Stdio { channel, .. } | Wire::Connecting(Carrier::Stdio(channel)) => channel.close(),
            Wire::HttpSse { channel, .. } | Wire::Connecting(Carrier::Sse(channel)) => channel.close(),
            Wire::Session(mut session) => {
                let (version, id) = (session.version, session.id.take());
                // Dropping it stops the standalone stream.
                drop(session);
                let Some(id) = id else { return };
                let mut request = self
                    .http
                    .client()
                    .delete(&self.cfg.url)
                    .timeout(Duration::from_secs(2))
                    .insert_header((mcpd::headers::SESSION_ID, id.as_str()))
                    .insert_header((mcpd::headers::PROTOCOL_VERSION, version.as_str()));
                if let Some(bearer) = self.current_bearer() {
                    request = request.insert_header((awc::http::header::AUTHORIZATION, bearer));
                }
                if let Err(e) = request.send().await {
                    log::debug!("{}: DELETE of the session failed: {e}", self.cfg.name);
                }
            }
            Wire::Idle | Wire::Connecting(Carrier::Http { .. }) | Wire::Stateless { .. } => {}
        }
    }
}

/// A session request's claim on a response arriving on another stream than its own; dropping
/// it (when the request ends either way) forgets the claim.
pub(super) struct StrayClaim<'a> {
    link: &'a Link,
    id: RequestId,
}

impl<'a> StrayClaim<'a> {
    /// The claim and, in a session, where such a response will arrive.
    pub(super) fn register(link: &'a Link, id: &RequestId) -> (StrayClaim<'a>, Option<oneshot::Receiver<Value>>) {
        let receiver = match &mut *link.wire.borrow_mut() {
            Wire::Session(session) => {
                let (tx, rx) = oneshot::channel();
                session.strays.insert(id.clone(), tx);
                Some(rx)
            }
            _ => None,
        };
        (StrayClaim { link, id: id.clone() }, receiver)
    }
}

impl Drop for StrayClaim<'_> {
    fn drop(&mut self) {
        if let Wire::Session(session) = &mut *self.link.wire.borrow_mut() {
            session.strays.remove(&self.id);
        }
    }
}

impl Link {
    /// Hands a response that arrived on another stream to the session request that claimed it
    /// (nothing happens when none did).
    pub(super) fn deliver_stray(&self, id: &RequestId, message: Value) {
        let waiter = match &mut *self.wire.borrow_mut() {
            Wire::Session(session) => session.strays.remove(id),
            _ => None,
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(message);
        }
    }
}
