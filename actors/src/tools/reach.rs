//! What callers can reach of the project, said once at startup (one log line) and in the status
//! JSON's `project` object: the directory, the file tools (off, read-only, writing), the project's
//! files as resources (and how many are listed), whether prompts embed project files, who may
//! use them, and what is never served.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use super::deny::DenySet;
use crate::access::AccessControl;

/// Which file tools are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileTools {
    /// None.
    Off,
    /// The reading ones.
    Read,
    /// The reading and the writing ones.
    ReadWrite,
}

impl FileTools {
    fn label(self) -> &'static str {
        match self {
            FileTools::Off => "off",
            FileTools::Read => "read",
            FileTools::ReadWrite => "read-write",
        }
    }
}

/// Who is admitted at all.
#[derive(Debug, Clone)]
pub enum Callers {
    /// Anyone who reaches the endpoint (no key, no OAuth, no access file; or stdio).
    Anyone,
    /// Whoever presents a key or a token the server accepts.
    Admitted,
    /// The clients of an access file whose patterns reach the project, and the `--key` keys and
    /// unmatched OAuth tokens when there are some (they see every tool).
    Clients {
        /// The access file's policy (read live: it reloads).
        access: Arc<AccessControl>,
        /// Whether `--key` keys are configured.
        keys: bool,
        /// Whether OAuth is on.
        tokens: bool,
    },
}

/// What callers can reach of the project.
#[derive(Debug, Clone)]
pub struct ProjectReach {
    /// The project directory.
    pub dir: PathBuf,
    /// The file tools offered.
    pub file_tools: FileTools,
    /// Their names.
    pub tool_names: Vec<String>,
    /// Whether the project's files are resources.
    pub file_resources: bool,
    /// How many project files `resources/list` shows.
    pub files_listed: usize,
    /// Whether declared prompts may embed project files.
    pub prompts_embed: bool,
    /// Who is admitted.
    pub callers: Callers,
    /// What is never served.
    pub deny: Arc<DenySet>,
}

impl ProjectReach {
    /// Whether any project file is reachable at all.
    pub fn reachable(&self) -> bool {
        self.file_tools != FileTools::Off || self.file_resources || self.prompts_embed
    }

    /// Who may reach the project's files, as the status JSON says it.
    fn reached_by(&self) -> Value {
        if !self.reachable() {
            return json!("nobody");
        }
        match &self.callers {
            Callers::Anyone => json!("every caller"),
            Callers::Admitted => json!("every admitted caller"),
            Callers::Clients { access, keys, tokens } => {
                let prefix = self.file_resources.then_some(super::resources::FILE_PREFIX);
                let clients = access.clients_reaching(&self.tool_names, prefix);
                json!({ "clients": clients, "keys": keys, "tokens": tokens })
            }
        }
    }

    /// The status JSON's `project` object.
    pub fn status_json(&self) -> Value {
        json!({
            "dir": self.dir.display().to_string(),
            "fileTools": self.file_tools.label(),
            "fileResources": self.file_resources,
            "filesListed": self.files_listed,
            "promptsEmbedFiles": self.prompts_embed,
            "reachableBy": self.reached_by(),
            "neverServed": { "patterns": self.deny.patterns(), "ownFiles": self.deny.own_files().len() },
        })
    }

    /// The startup log line.
    pub fn summary(&self) -> String {
        let tools = match self.file_tools {
            FileTools::Off => "file tools off".to_owned(),
            FileTools::Read => "file tools read-only".to_owned(),
            FileTools::ReadWrite => "file tools read-write".to_owned(),
        };
        let resources = match self.file_resources {
            true => format!("file resources on ({} files listed)", self.files_listed),
            false => "file resources off".to_owned(),
        };
        let embed = if self.prompts_embed { "" } else { ", prompts embed no file" };
        let by = match self.reached_by() {
            Value::String(who) => who,
            Value::Object(by) => {
                let mut who: Vec<String> = by["clients"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                if by["keys"] == true {
                    who.push("--key keys".into());
                }
                if by["tokens"] == true {
                    who.push("OAuth tokens no client matches".into());
                }
                if who.is_empty() {
                    "no client of the access file".to_owned()
                } else {
                    who.join(", ")
                }
            }
            other => other.to_string(),
        };
        format!(
            "project {}: {tools}, {resources}{embed}; reachable by {by}; never served: {} own files, {} deny patterns",
            self.dir.display(),
            self.deny.own_files().len(),
            self.deny.patterns().len()
        )
    }
}
