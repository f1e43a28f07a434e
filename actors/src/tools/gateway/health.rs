//! What the gateway knows of each remote ([`RemoteHealth`]): up or down, what it exports, the
//! last error and what its listings left out — the status endpoint's and the retries' source.
//!
//! The table ([`GatewayHealth`]) is a state of its own: the listing of tools sets it, every call and
//! request marks its remote up or down, the retries pick the remotes it shows unreachable, and
//! none of those needs more of the gateway than this file.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use mcpd::client::config::{ServerEntry, Transport};
use serde_json::{json, Value};

use crate::client::{ClientError, ServerRecord};

/// What the gateway knows of one remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHealth {
    /// The server's name in the file.
    pub name: String,
    /// The prefix of its exported tools and prompts (`None`: its entry says `"prefix": "never"`).
    pub prefix: Option<String>,
    /// `stdio`, `streamable_http` or `sse`.
    pub transport: String,
    /// Whether the last contact succeeded.
    pub up: bool,
    /// Tools currently exported.
    pub tools: usize,
    /// Prompts currently exported (`<prefix>__<prompt>`).
    pub prompts: usize,
    /// Resources it serves here (URIs kept).
    pub resources: usize,
    /// Resource templates it serves here.
    pub templates: usize,
    /// The tools, URIs, templates and prompts it claims that another serves (another remote, or
    /// this server itself), as messages (the first ten of each kind; then how many more).
    pub collisions: Vec<String>,
    /// The last error, if the last contact failed.
    pub error: Option<String>,
    /// The entries of its last listings that were left out, and why (the first
    /// [`SKIPPED_SHOWN`] of its tools, then how many more; then the first of its prompts,
    /// resources and templates, or why listing them failed).
    pub skipped: Vec<String>,
}

/// How many skipped entries a remote's health lists.
pub const SKIPPED_SHOWN: usize = 10;

/// Every remote's health by its id.
#[derive(Debug, Default)]
pub(super) struct GatewayHealth(Mutex<HashMap<String, RemoteHealth>>);

impl GatewayHealth {
    /// A remote's health as before its first contact.
    pub(super) fn reset(&self, record: &ServerRecord, prefix: Option<&str>) {
        let transport = match &record.server {
            ServerEntry::Stdio(_) => "stdio",
            ServerEntry::Http(document) => match document.resolve().map(|c| c.transport) {
                Ok(Transport::Sse) => "sse",
                _ => "streamable_http",
            },
        };
        let health = RemoteHealth {
            name: record.id.clone(),
            prefix: prefix.map(str::to_owned),
            transport: transport.to_owned(),
            up: false,
            tools: 0,
            prompts: 0,
            resources: 0,
            templates: 0,
            collisions: Vec::new(),
            error: Some("not contacted yet".into()),
            skipped: Vec::new(),
        };
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(record.id.clone(), health);
    }

    /// What the last listing of a remote's tools found: how many it exports, or why it failed
    /// (the remote is then down), and the entries it left out.
    pub(super) fn set(&self, id: &str, outcome: Result<usize, String>, skipped: Vec<String>) {
        let mut health = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = health.get_mut(id) {
            entry.skipped = skipped;
            match outcome {
                Ok(tools) => {
                    entry.up = true;
                    entry.tools = tools;
                    entry.error = None;
                }
                Err(error) => {
                    entry.up = false;
                    entry.tools = 0;
                    entry.error = Some(error);
                }
            }
        }
    }

    /// The tools of a remote's last listing that another remote, or this server, exports under
    /// the same name (left out of the catalog).
    pub(super) fn set_collisions(&self, id: &str, collisions: Vec<String>) {
        if let Some(entry) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id) {
            entry.collisions = collisions;
        }
    }

    /// A contact with the remote succeeded.
    pub(super) fn mark_up(&self, id: &str) {
        if let Some(entry) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id) {
            entry.up = true;
            entry.error = None;
        }
    }

    /// A contact with the remote failed.
    pub(super) fn mark_down(&self, id: &str, error: &ClientError) {
        if let Some(entry) = self.0.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id) {
            entry.up = false;
            entry.error = Some(error.to_string());
        }
    }

    /// Forgets a remote (it left the servers file): its health as it was.
    pub(super) fn remove(&self, id: &str) -> Option<RemoteHealth> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
    }

    /// Among `ids`, the remotes that export no tool because listing them failed: those the
    /// retries list again.
    pub(super) fn unreachable(&self, ids: Vec<String>) -> Vec<String> {
        let health = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ids.into_iter().filter(|id| health.get(id).is_some_and(|h| !h.up && h.tools == 0)).collect()
    }

    /// The health of the remotes `ids`, in that order.
    pub(super) fn of(&self, ids: &[String]) -> Vec<RemoteHealth> {
        let health = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ids.iter().filter_map(|id| health.get(id).cloned()).collect()
    }
}

/// The health as JSON (for the status endpoint).
pub(super) fn to_json(health: Vec<RemoteHealth>) -> Value {
    json!(health
        .into_iter()
        .map(|h| json!({
            "name": h.name, "prefix": h.prefix, "transport": h.transport, "up": h.up, "tools": h.tools,
            "prompts": h.prompts, "resources": h.resources, "templates": h.templates,
            "collisions": h.collisions, "error": h.error, "skipped": h.skipped
        }))
        .collect::<Vec<_>>())
}
