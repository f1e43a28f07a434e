//! The listener's status, shared between the `Listener` actor (which writes it) and the HTTP
//! workers (which serve it at `GET /status`).

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use mcpd::model::Implementation;
use mcpd::version::ProtocolVersion;
use serde::Serialize;

/// What `GET /` and `GET /status` return.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    /// Whether the HTTP listener is running.
    pub running: bool,
    /// Bind address.
    pub host: String,
    /// Bound port (the real one when 0 was asked for).
    pub port: u16,
    /// The MCP endpoint URL.
    pub url: String,
    /// When it started, in milliseconds since the epoch (0: never).
    pub started_at: u64,
    /// A human-readable state.
    pub message: String,
    /// `http`, `streamable-http` or `stdio`.
    pub transport: String,
    /// Every protocol revision served.
    pub supported_versions: Vec<&'static str>,
    /// The server's name and version.
    pub server: Implementation,
    /// Number of tools exposed.
    pub tools: usize,
    /// Whether an API key is required.
    pub auth_required: bool,
    /// Configuration warnings (e.g. an empty `enabledTools`).
    pub warnings: Vec<String>,
}

impl ListenerStatus {
    /// The status of a listener that is not running.
    pub fn stopped(server: Implementation, tools: usize, message: &str) -> Self {
        ListenerStatus {
            running: false,
            host: String::new(),
            port: 0,
            url: String::new(),
            started_at: 0,
            message: message.to_owned(),
            transport: String::new(),
            supported_versions: ProtocolVersion::all_strings(),
            server,
            tools,
            auth_required: false,
            warnings: Vec::new(),
        }
    }
}

/// The current status behind a lock that is held only to copy it.
#[derive(Debug)]
pub(crate) struct StatusCell(Mutex<ListenerStatus>);

impl StatusCell {
    /// A cell holding `status`.
    pub(crate) fn new(status: ListenerStatus) -> Self {
        StatusCell(Mutex::new(status))
    }

    /// A copy of the current status.
    pub(crate) fn snapshot(&self) -> ListenerStatus {
        match self.0.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the status.
    pub(crate) fn set(&self, status: ListenerStatus) {
        match self.0.lock() {
            Ok(mut guard) => *guard = status,
            Err(poisoned) => *poisoned.into_inner() = status,
        }
    }
}

/// Milliseconds since the epoch.
pub(crate) fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
