//! The runtime's configuration: what the listener binds and enforces, and the limits it applies.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use mcpd::auth::{is_loopback_host, KeySet, OriginPolicy};

/// Default largest accepted request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default longest run of one tool call (or other request).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// Default host: loopback only.
pub const DEFAULT_HOST: &str = "127.0.0.1";

/// Explicit limits; hitting one is an error the client can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body (HTTP) or line (stdio), in bytes.
    pub max_body_bytes: usize,
    /// Longest a request may run before it is answered with a timeout.
    pub tool_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_body_bytes: DEFAULT_MAX_BODY_BYTES, tool_timeout: DEFAULT_TOOL_TIMEOUT }
    }
}

/// Default idle time after which a session expires.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default cap on live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default time a tool waits for the client to answer a sampling, elicitation or roots request.
pub const DEFAULT_CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Accepted origins and hosts besides loopback.
    pub origins: OriginPolicy,
    /// Whether a non-loopback bind without keys is allowed.
    pub allow_unauthenticated: bool,
    /// HTTP transport mode.
    pub mode: TransportMode,
    /// Limits.
    pub limits: Limits,
    /// Session settings (streamable mode).
    pub sessions: SessionConfig,
    /// Worker threads (0: one per CPU).
    pub workers: usize,
    /// Where the listener's `{host, port, enabled}` settings persist, if anywhere.
    pub settings_file: Option<PathBuf>,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            host: DEFAULT_HOST.to_owned(),
            port: mcpd::config::DEFAULT_PORT,
            keys: KeySet::default(),
            origins: OriginPolicy::default(),
            allow_unauthenticated: false,
            mode: TransportMode::Http,
            limits: Limits::default(),
            sessions: SessionConfig::default(),
            workers: 0,
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
        if !self.binds_loopback() && self.keys.is_open() && !self.allow_unauthenticated {
            return Err(format!(
                "refusing to bind {} without an API key: anyone on the network could call the tools. \
                 Set --key (or MCPD_KEYS), or pass --allow-unauthenticated",
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
