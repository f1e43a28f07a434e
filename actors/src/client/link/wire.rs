//! [`Wire`]: the transport a link negotiated (or is negotiating), each variant owning the state
//! only that wire has — a session's id, standalone stream and strays; the HTTP+SSE channel; the
//! stdio child; the stateless wire's tool header parameters. Replacing a wire releases what it
//! held (the standalone stream stops, the SSE reader ends, the child is killed), and
//! [`Link::close`] ends whichever wire is up.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mcpd::headers::HeaderParam;
use mcpd::jsonrpc::RequestId;
use mcpd::version::ProtocolVersion;
use serde_json::Value;
use tokio::sync::oneshot;

use super::headers::{self, Headers};
use super::legacy_sse::SseChannel;
use super::{Link, Mode};
use crate::client::stdio::StdioChannel;

/// How messages travel while a link negotiates.
#[derive(Clone)]
pub(super) enum Carrier {
    /// POSTs to the endpoint. `session` is the `Mcp-Session-Id` an answer gave so far (the
    /// `initialize` answer's, which the session then keeps).
    Http { session: Option<String> },
    /// The 2024-11-05 HTTP+SSE channel, open and told its POST endpoint.
    Sse(Rc<SseChannel>),
    /// A started child process.
    Stdio(Rc<StdioChannel>),
}

/// The transport of a link.
pub(super) enum Wire {
    /// Nothing negotiated: a new link, or one whose session the server forgot, or whose child
    /// exited. The next request negotiates.
    Idle,
    /// Negotiation is under way over this carrier; messages carry no protocol version yet.
    Connecting(Carrier),
    /// 2026-07-28 over HTTP: no session; every request carries its `_meta` and routing headers.
    Stateless {
        /// The `x-mcp-header` parameters of the listed tools, by tool name (`tools/call` sends
        /// them as `Mcp-Param-*` headers).
        tool_params: super::share::ToolParams,
    },
    /// Streamable HTTP after `initialize`.
    Session(SessionWire),
    /// The 2024-11-05 HTTP+SSE transport after `initialize`.
    HttpSse {
        /// The negotiated revision.
        version: ProtocolVersion,
        /// The GET stream and its POST endpoint.
        channel: Rc<SseChannel>,
    },
    /// A child process over stdio at `version` (2026-07-28: stateless messages).
    Stdio {
        /// The negotiated revision.
        version: ProtocolVersion,
        /// The child.
        channel: Rc<StdioChannel>,
    },
}

/// A streamable-HTTP session: what the handshake produced.
pub(super) struct SessionWire {
    /// The negotiated revision, sent as `MCP-Protocol-Version`.
    pub(super) version: ProtocolVersion,
    /// The `Mcp-Session-Id` (none: the server keeps no session).
    pub(super) id: Option<String>,
    /// The reader of the standalone GET stream (messages outside any request).
    pub(super) standalone: Option<actix_rt::task::JoinHandle<()>>,
    /// Requests in flight, for a response that arrives on another stream than the request's
    /// own (the standalone GET stream, or a resumed one): the first answer wins.
    pub(super) strays: HashMap<RequestId, oneshot::Sender<Value>>,
}

impl SessionWire {
    pub(super) fn new(version: ProtocolVersion, id: Option<String>) -> SessionWire {
        SessionWire { version, id, standalone: None, strays: HashMap::new() }
    }
}

impl Drop for SessionWire {
    fn drop(&mut self) {
        if let Some(task) = self.standalone.take() {
            task.abort();
        }
    }
}

impl Wire {
    fn mode(&self) -> Option<Mode> {
        match self {
            Wire::Idle | Wire::Connecting(_) => None,
            Wire::Stateless { .. } => Some(Mode::Stateless),
            Wire::Session(session) => Some(Mode::Session(session.version)),
            Wire::HttpSse { version, .. } => Some(Mode::HttpSse(*version)),
            Wire::Stdio { version, .. } => Some(Mode::Stdio(*version)),
        }
    }

    /// The headers our replies and session requests carry: the revision, and the session id.
    fn headers(&self) -> Headers {
        let (version, session) = match self {
            Wire::Session(session) => (Some(session.version), session.id.as_ref()),
            Wire::HttpSse { version, .. } => (Some(*version), None),
            Wire::Stateless { .. } => (Some(ProtocolVersion::STATELESS), None),
            Wire::Connecting(Carrier::Http { session }) => (None, session.as_ref()),
            // stdio carries no headers.
            Wire::Idle | Wire::Connecting(_) | Wire::Stdio { .. } => (None, None),
        };
        let mut headers = Vec::new();
        if let Some(version) = version {
            headers.push(headers::version(version));
        }
        if let Some(session) = session {
            headers.extend(headers::session(session));
        }
        headers
    }

    fn stdio_channel(&self) -> Option<Rc<StdioChannel>> {
        match self {
            Wire::Stdio { channel, .. } | Wire::Connecting(Carrier::Stdio(channel)) => Some(channel.clone()),
            _ => None,
        }
    }

    fn sse_channel(&self) -> Option<Rc<SseChannel>> {
        match self {
            Wire::HttpSse { channel, .. } | Wire::Connecting(Carrier::Sse(channel)) => Some(channel.clone()),
            _ => None,
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(wire: &Wire) -> Vec<String> {
        wire.headers().into_iter().map(|(name, value)| format!("{name}: {}", value.to_str().unwrap())).collect()
    }

    #[test]
    fn each_wire_sends_its_own_version_and_session_headers() {
        assert_eq!(Wire::Idle.mode(), None);
        assert!(headers(&Wire::Idle).is_empty());
        let handshake = Wire::Connecting(Carrier::Http { session: Some("s1".into()) });
        assert_eq!(handshake.mode(), None);
        assert_eq!(headers(&handshake), ["mcp-session-id: s1"], "no revision before it is negotiated");
        let stateless = Wire::Stateless { tool_params: Default::default() };
        assert_eq!(stateless.mode(), Some(Mode::Stateless));
        assert_eq!(headers(&stateless), ["mcp-protocol-version: 2026-07-28"]);
        let session = Wire::Session(SessionWire::new(ProtocolVersion::V2025_06_18, Some("s2".into())));
        assert_eq!(session.mode(), Some(Mode::Session(ProtocolVersion::V2025_06_18)));
        assert_eq!(headers(&session), ["mcp-protocol-version: 2025-06-18", "mcp-session-id: s2"]);
        let sessionless = Wire::Session(SessionWire::new(ProtocolVersion::V2025_11_25, None));
        assert_eq!(headers(&sessionless), ["mcp-protocol-version: 2025-11-25"]);
    }
}
