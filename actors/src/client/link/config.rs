//! What a link is told about its server ([`LinkConfig`]), the wire it ends up on ([`Mode`]), and
//! the largest answer it accepts ([`MAX_RESPONSE_BYTES`]): the settings every part of a link
//! reads.

use std::time::Duration;

use mcpd::client::config::StdioCommand;
use mcpd::client::list::ListLimits;
use mcpd::version::ProtocolVersion;

use crate::client::oauth::OAuthConfig;
use crate::telemetry::Transport;

/// Largest response body or SSE event accepted from a server.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// What a link needs to know about its server.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The server's display name.
    pub name: String,
    /// The MCP endpoint.
    pub url: String,
    /// Use the 2024-11-05 HTTP+SSE transport.
    pub sse: bool,
    /// Headers sent on every request, verbatim.
    pub headers: Vec<(String, String)>,
    /// A pinned revision (none: negotiate).
    pub pin: Option<ProtocolVersion>,
    /// Connect and per-request time limit.
    pub timeout: Duration,
    /// Start this command and speak stdio to it instead of HTTP (`url` is then only a label).
    pub command: Option<StdioCommand>,
    /// How far one listing (`tools/list` and the like, all pages) may go; the whole listing
    /// also has one deadline, `timeout`.
    pub list_limits: ListLimits,
    /// Answer `401` / `403 insufficient_scope` with OAuth (none: such answers are errors).
    pub oauth: Option<OAuthConfig>,
    /// How long a tool call waits for a task the server made of it (2026-07-28, the tasks
    /// extension): past it the task is cancelled (`tasks/cancel`) and the call fails. Each
    /// poll is a request of its own, under `timeout`.
    pub task_wait: Duration,
}

/// The wire a link negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28, no session.
    Stateless,
    /// Streamable HTTP with the initialize handshake (and maybe a session id).
    Session(ProtocolVersion),
    /// The 2024-11-05 HTTP+SSE transport.
    HttpSse(ProtocolVersion),
    /// A child process over stdio, at this revision (2026-07-28: stateless messages).
    Stdio(ProtocolVersion),
}

/// Where a link's server is, for its CLIENT spans: its host and port (none for a child over
/// stdio, whose transport is `pipe`).
#[derive(Debug, Clone)]
pub(crate) struct ServerPeer {
    pub(super) address: Option<(String, u16)>,
    pub(super) transport: Transport,
}

impl ServerPeer {
    /// The peer of a link to `url` (`stdio`: a child process).
    pub(crate) fn of(url: &str, stdio: bool) -> ServerPeer {
        if stdio {
            return ServerPeer { address: None, transport: Transport::Pipe };
        }
        let address = url::Url::parse(url)
            .ok()
            .and_then(|url| Some((url.host_str()?.trim_matches(['[', ']']).to_owned(), url.port_or_known_default()?)));
        ServerPeer { address, transport: Transport::Tcp }
    }
}
