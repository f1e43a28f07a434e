//! The runtime's configuration: what the listener binds and enforces, and the limits it applies.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use mcpd::auth::oauth::OAuthSettings;
use mcpd::auth::{is_loopback_host, KeySet, OriginPolicy};

/// Default largest accepted request body: 4 MiB.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default longest run of one tool call (or other request).
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// Default host: loopback only.
pub(crate) const DEFAULT_HOST: &str = "127.0.0.1";

/// Default cap on requests running at once in one session, stdio connection or 2024-11-05 stream.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 128;
/// Default cap on messages queued for one reader (an SSE response, a request's relay, stdout).
pub(crate) const DEFAULT_MAX_QUEUED_MESSAGES: usize = 1024;
/// Default cap on the bytes of SSE events queued for one reader.
pub(crate) const DEFAULT_MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// Explicit limits of the HTTP and stdio transports; hitting one is an error the client can read
/// (or, for a reader that does not keep up, a logged cut-off). `crate::queue` states the policy of
/// every queue these bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body (HTTP) or line (stdio), in bytes.
    pub max_body_bytes: usize,
    /// Longest a request may run before it is answered with a timeout.
    pub tool_timeout: Duration,
    /// Requests one session, stdio connection or 2024-11-05 stream may have running at once;
    /// more are refused (HTTP 429 / a JSON-RPC error). Also caps the session's requests to its
    /// client that await an answer.
    pub max_in_flight: usize,
    /// Messages queued for one reader that does not keep up: undelivered SSE events before the
    /// stream is cut off; a request's notifications, or stdout's, before they are dropped.
    pub max_queued_messages: usize,
    /// Bytes of undelivered SSE events one stream may hold before it is cut off.
    pub max_queued_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_queued_messages: DEFAULT_MAX_QUEUED_MESSAGES,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
        }
    }
}

/// Default cap on open HTTP connections (lowered to three quarters of the open-file limit).
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default time a request body may take to arrive.
pub(crate) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time the request head (line and headers) of a new connection may take to arrive.
pub(crate) const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time an idle keep-alive connection stays open.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(5);
/// Default time a client may accept none of the data sent to it before its connection is dropped.
pub(crate) const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// What the HTTP endpoint allows its connections: how many, and how long each may stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections at most (shared out among the workers); past it, new connections wait in
    /// the accept backlog. Lowered at start to three quarters of the process's open-file limit,
    /// so that files, commands and remote servers keep descriptors.
    pub max_connections: usize,
    /// Requests that may still be waiting for their body after the first second (0: half of
    /// `max_connections`). Past it, such a request is answered 408 at once: stalled bodies can
    /// never hold more than this many connections, and the rest are a reserve for clients that
    /// send theirs promptly.
    pub max_slow_bodies: usize,
    /// A body not received within this time is answered 408 and its connection closed.
    pub body_timeout: Duration,
    /// A new connection's request head not received within this time is answered 408.
    pub header_timeout: Duration,
    /// An idle keep-alive connection is closed after this long (zero: no keep-alive).
    pub keep_alive: Duration,
    /// A connection whose client accepts none of the data sent to it for this long is dropped
    /// by the kernel (`TCP_USER_TIMEOUT`, Linux; zero: never). It frees what a reader that
    /// stopped reading holds: its socket buffers, and a cut-off stream's queue.
    pub send_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_slow_bodies: 0,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            send_timeout: DEFAULT_SEND_TIMEOUT,
        }
    }
}

impl ConnectionLimits {
    /// The cap on slow bodies this configuration means (`max_slow_bodies`, or half of
    /// `max_connections` when 0), never above `max_connections`.
    pub fn slow_bodies(&self) -> usize {
        let cap = if self.max_slow_bodies == 0 { self.max_connections / 2 } else { self.max_slow_bodies };
        cap.clamp(1, self.max_connections.max(1))
    }
}

/// Default idle time after which a session expires.
pub(crate) const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default cap on live sessions.
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default time a tool waits for the client to answer a sampling, elicitation or roots request.
pub(crate) const DEFAULT_CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Streamable-HTTP session settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// A session with no request and no open stream for this long ends.
    pub idle_timeout: Duration,
    /// At most this many sessions live at once; `initialize` beyond it is refused (503).
    pub max_sessions: usize,
    /// How long a tool waits for the client's answer to a server-to-client request.
    pub client_request_timeout: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            idle_timeout: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            client_request_timeout: DEFAULT_CLIENT_REQUEST_TIMEOUT,
        }
    }
}

/// How the HTTP endpoint talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportMode {
    /// Stateless 2026-07-28 plus session-less handshake-era requests, JSON answers.
    Http,
    /// As `Http`, plus streamable-HTTP sessions.
    StreamableHttp,
}

impl TransportMode {
    /// The name shown in the status JSON.
    pub const fn label(self) -> &'static str {
        match self {
            TransportMode::Http => "http",
            TransportMode::StreamableHttp => "streamable-http",
        }
    }
}

/// Everything the HTTP listener needs to bind and serve.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Bind address (a host name or IP literal).
    pub host: String,
    /// Port (0: any free port).
    pub port: u16,
    /// API keys; empty = open.
    pub keys: KeySet,
    /// OAuth 2.1: tokens of these issuers admit requests (beside any API key); `None`: off.
    pub oauth: Option<OAuthSettings>,
    /// Accepted origins and hosts besides loopback.
    pub origins: OriginPolicy,
    /// Whether a non-loopback bind without keys is allowed.
    pub allow_unauthenticated: bool,
    /// HTTP transport mode.
    pub mode: TransportMode,
    /// Limits.
    pub limits: Limits,
    /// Connection limits and timeouts.
    pub connections: ConnectionLimits,
    /// Session settings (streamable mode).
    pub sessions: SessionConfig,
    /// Worker threads (0: one per CPU).
    pub workers: usize,
    /// Where the listener's `{host, port, enabled}` settings persist, if anywhere.
    pub settings_file: Option<PathBuf>,
    /// The access file's per-client policy (`--access`), if any: its clients' keys admit
    /// requests (beside `--key`), limited to their tools and prompts.
    pub access: Option<std::sync::Arc<crate::access::AccessControl>>,
    /// The virtual servers, each served at `/mcp/<name>` (`None`: none, and none can come).
    pub virtual_servers: Option<std::sync::Arc<crate::views::VirtualServers>>,
    /// Each identity's default share of sessions, streams and requests in flight.
    pub shares: crate::shares::ShareConfig,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            host: DEFAULT_HOST.to_owned(),
            port: mcpd::config::DEFAULT_PORT,
            keys: KeySet::default(),
            oauth: None,
            origins: OriginPolicy::default(),
            allow_unauthenticated: false,
            mode: TransportMode::Http,
            limits: Limits::default(),
            connections: ConnectionLimits::default(),
            sessions: SessionConfig::default(),
            workers: 0,
            access: None,
            virtual_servers: None,
            shares: crate::shares::ShareConfig::default(),
            settings_file: None,
        }
    }
}

impl ListenerConfig {
    /// Whether the bind address is loopback.
    pub fn binds_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }

    /// Refuses configurations that would expose tools to the network without a key.
    ///
    /// # Errors
    /// A one-line explanation.
    pub fn check_exposure(&self) -> Result<(), String> {
        if !self.binds_loopback()
            && self.keys.is_open()
            && self.oauth.is_none()
            && self.access.is_none()
            && !self.allow_unauthenticated
        {
            return Err(format!(
                "refusing to bind {} without an API key: anyone on the network could call the tools. \
                 Set --key (or MCPD_KEYS) or --auth-issuer, or pass --allow-unauthenticated",
                self.host
            ));
        }
        Ok(())
    }

    /// The URL clients use; a wildcard bind is shown as loopback, IPv6 in brackets.
    pub fn url(&self, port: u16) -> String {
        let host = match self.host.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => "127.0.0.1".to_owned(),
            Ok(IpAddr::V6(v6)) => format!("[{v6}]"),
            _ => self.host.clone(),
        };
        format!("http://{host}:{port}/mcp")
    }
}
