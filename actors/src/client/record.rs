//! [`ServerRecord`]: one configured remote server as a manager keeps it — how it is reached
//! (an HTTP server's configuration document, or the command that starts a stdio server), its
//! time limits and listing bounds, the tools last fetched — and what a connection to it is made
//! of: the key its connection is kept under (everything that, changed, needs a new connection)
//! and its link's configuration, with the OAuth a [`CredentialStores`] gives it.

use std::time::Duration;

use mcpd::client::config::{timeout_seconds, ConfigDocument, Prefixing, ServerEntry, StdioCommand, Transport};
use mcpd::client::list::ListLimits;
use mcpd::client::task::task_wait_seconds;
use mcpd::model::Tool;

use super::credentials::CredentialStores;
use super::error::ClientError;
use super::link::LinkConfig;

/// One configured remote server.
#[derive(Debug, Clone)]
pub struct ServerRecord {
    /// Its id.
    pub id: String,
    /// How it is reached: its configuration document (the source of truth of an HTTP server)
    /// or the command that starts a stdio server.
    pub server: ServerEntry,
    /// Connect and per-call time limit in seconds (clamped to 5–300).
    pub timeout_secs: u64,
    /// The tools last fetched by `test_and_refresh_tools`.
    pub tools: Vec<Tool>,
    /// How far one listing of this server may go (pages, entries).
    pub list_limits: ListLimits,
    /// How long a tool call waits for a task the server made of it, in seconds (clamped to
    /// 1–86400; default 3600).
    pub task_wait_secs: u64,
    /// How a gateway names what the server exports (its entry's `prefix`; the client itself
    /// ignores it).
    pub prefix: Prefixing,
}

impl ServerRecord {
    /// A record for the server `server`, with the default timeout and no tools.
    pub fn with_server(id: impl Into<String>, server: ServerEntry) -> Self {
        ServerRecord {
            id: id.into(),
            server,
            timeout_secs: timeout_seconds(None),
            tools: Vec::new(),
            list_limits: ListLimits::default(),
            task_wait_secs: task_wait_seconds(None),
            prefix: Prefixing::Always,
        }
    }

    /// A record for an HTTP server described by `document`.
    pub fn new(id: impl Into<String>, document: ConfigDocument) -> Self {
        ServerRecord::with_server(id, ServerEntry::Http(document))
    }

    /// A record for a stdio server started with `command`.
    pub fn stdio(id: impl Into<String>, command: StdioCommand) -> Self {
        ServerRecord::with_server(id, ServerEntry::Stdio(command))
    }

    /// The configuration document of an HTTP server (`None` for a stdio server).
    pub fn document(&self) -> Option<&ConfigDocument> {
        match &self.server {
            ServerEntry::Http(document) => Some(document),
            ServerEntry::Stdio(_) => None,
        }
    }

    /// Whether `other` configures the same server in every field: id, entry (a document compared
    /// as JSON, key order aside), time limits, listing bounds and the gateway's naming. The tools last fetched do not
    /// count. A reload keeps the connection of a record whose configuration is the same.
    pub fn same_configuration(&self, other: &ServerRecord) -> bool {
        let entry = match (&self.server, &other.server) {
            (ServerEntry::Http(a), ServerEntry::Http(b)) => a.as_object() == b.as_object(),
            (ServerEntry::Stdio(a), ServerEntry::Stdio(b)) => a == b,
            _ => false,
        };
        entry
            && self.id == other.id
            && self.timeout_secs == other.timeout_secs
            && self.list_limits == other.list_limits
            && self.task_wait_secs == other.task_wait_secs
            && self.prefix == other.prefix
    }

    pub(super) fn connection_key(&self) -> String {
        let what = match &self.server {
            ServerEntry::Http(document) => document.fingerprint(),
            ServerEntry::Stdio(command) => format!("{command:?}"),
        };
        let ListLimits { max_pages, max_items } = self.list_limits;
        format!(
            "{what}/{}/{max_pages}/{max_items}/{}",
            timeout_seconds(Some(self.timeout_secs as i64)),
            self.task_wait().as_secs()
        )
    }

    pub(super) fn task_wait(&self) -> Duration {
        Duration::from_secs(task_wait_seconds(Some(i64::try_from(self.task_wait_secs).unwrap_or(i64::MAX))))
    }

    pub(super) fn link_config(&self, credentials: &CredentialStores) -> Result<LinkConfig, ClientError> {
        let timeout = Duration::from_secs(timeout_seconds(Some(self.timeout_secs as i64)));
        let document = match &self.server {
            ServerEntry::Http(document) => document,
            ServerEntry::Stdio(command) => {
                return Ok(LinkConfig {
                    name: self.id.clone(),
                    url: format!("stdio:{}", command.program),
                    sse: false,
                    pin: None,
                    headers: Vec::new(),
                    timeout,
                    command: Some(command.clone()),
                    list_limits: self.list_limits,
                    oauth: None,
                    task_wait: self.task_wait(),
                })
            }
        };
        let config = document.resolve().map_err(|e| ClientError::Config(e.to_string()))?;
        let oauth = credentials.oauth_config(&config)?;
        Ok(LinkConfig {
            name: config.name.clone(),
            url: config.url.clone(),
            sse: config.transport == Transport::Sse,
            pin: config.pin(),
            headers: config.headers.clone(),
            timeout,
            command: None,
            list_limits: self.list_limits,
            oauth,
            task_wait: self.task_wait(),
        })
    }
}
