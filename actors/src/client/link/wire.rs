//! [`Wire`]: the transport a link negotiated (or is negotiating), each variant owning the state
//! only that wire has — a session's id, standalone stream and strays; the HTTP+SSE channel; the
//! stdio child; the stateless wire's tool header parameters. Replacing a wire releases what it
//! held (the standalone stream stops, the SSE reader ends, the child is killed).

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use mcpd::jsonrpc::RequestId;
use mcpd::version::ProtocolVersion;
use serde_json::Value;
use tokio::sync::oneshot;

use super::config::Mode;
use super::headers::{self, Headers};
use super::sse_channel::SseChannel;
use crate::client::stdio::StdioChannel;
use crate::telemetry::{self, Side, Transport};

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
        /// The session's length.
        _clock: SessionClock,
    },
    /// A child process over stdio at `version` (2026-07-28: stateless messages).
    Stdio {
        /// The negotiated revision.
        version: ProtocolVersion,
        /// The child.
        channel: Rc<StdioChannel>,
        /// The session's length.
        _clock: SessionClock,
    },
}

/// Records `mcp.client.session.duration` when the wire it belongs to goes (replaced, closed, or
/// dropped with its link).
#[derive(Debug)]
pub(super) struct SessionClock {
    opened: Instant,
    version: ProtocolVersion,
    transport: Transport,
}

impl SessionClock {
    pub(super) fn start(version: ProtocolVersion, transport: Transport) -> SessionClock {
        SessionClock { opened: Instant::now(), version, transport }
    }
}

impl Drop for SessionClock {
    fn drop(&mut self) {
        let seconds = self.opened.elapsed().as_secs_f64();
        telemetry::record_session_duration(Side::Client, Some(self.version.as_str()), self.transport, None, seconds);
    }
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
    /// The session's length.
    _clock: SessionClock,
}

impl SessionWire {
    pub(super) fn new(version: ProtocolVersion, id: Option<String>) -> SessionWire {
        let clock = SessionClock::start(version, Transport::Tcp);
        SessionWire { version, id, standalone: None, strays: HashMap::new(), _clock: clock }
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
    pub(super) fn mode(&self) -> Option<Mode> {
        match self {
            Wire::Idle | Wire::Connecting(_) => None,
            Wire::Stateless { .. } => Some(Mode::Stateless),
            Wire::Session(session) => Some(Mode::Session(session.version)),
            Wire::HttpSse { version, .. } => Some(Mode::HttpSse(*version)),
            Wire::Stdio { version, .. } => Some(Mode::Stdio(*version)),
        }
    }

    /// The headers our replies and session requests carry: the revision, and the session id.
    pub(super) fn headers(&self) -> Headers {
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

    pub(super) fn stdio_channel(&self) -> Option<Rc<StdioChannel>> {
        match self {
            Wire::Stdio { channel, .. } | Wire::Connecting(Carrier::Stdio(channel)) => Some(channel.clone()),
            _ => None,
        }
    }

    pub(super) fn sse_channel(&self) -> Option<Rc<SseChannel>> {
        match self {
            Wire::HttpSse { channel, .. } | Wire::Connecting(Carrier::Sse(channel)) => Some(channel.clone()),
            _ => None,
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
