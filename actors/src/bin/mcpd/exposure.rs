//! What of the project callers can never reach: the deny patterns (`--deny-files`, `denyFiles`,
//! `--no-default-deny-files` / `defaultDenyFiles=false`), mcpd's own configuration and secret
//! files registered with the project's deny set (again as each is reloaded), and the startup
//! warnings about keys and secrets kept inside the project directory.

use std::path::{Path, PathBuf};

use mcpd::client::config::ServerEntry;
use mcpd::config::Properties;
use mcpd_actors::access::AccessControl;
use mcpd_actors::tools::deny::{DenySet, OwnGroup, DEFAULT_PATTERNS};
use mcpd_actors::tools::gateway::load_servers;

use crate::args::ServeArgs;

/// Whether the file tools and the project's files as resources are offered: an explicit flag
/// (`--[no-]file-tools`, `--[no-]file-resources`), else the property (`fileTools`,
/// `fileResources`), else the default — file tools on except for a gateway (a servers file),
/// file resources as the file tools.
pub(crate) fn file_switches(args: &ServeArgs, props: &Properties, gateway: bool) -> (bool, bool) {
    let setting = |on: bool, off: bool, key: &str| match (on, off) {
        (_, true) => Some(false),
        (true, _) => Some(true),
        _ => props.get(key).map(|v| !matches!(v.trim(), "false" | "no" | "0" | "off")),
    };
    let tools = setting(args.file_tools, args.no_file_tools, "fileTools").unwrap_or(!gateway);
    let resources = setting(args.file_resources, args.no_file_resources, "fileResources").unwrap_or(tools);
    (tools, resources)
}

/// The deny patterns in force: the defaults (unless dropped), then the configured ones (a later
/// `!pattern` allows again what an earlier one denied).
pub(crate) fn deny_patterns(args: &ServeArgs, props: &Properties) -> Vec<String> {
    let defaults = !args.no_default_deny_files && props.get("defaultDenyFiles").is_none_or(|v| v.trim() != "false");
    let mut patterns: Vec<String> =
        if defaults { DEFAULT_PATTERNS.iter().map(|p| (*p).to_owned()).collect() } else { Vec::new() };
    patterns.extend(args.deny_files.iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()));
    patterns.extend(props.list("denyFiles"));
    patterns
}

/// The files mcpd reads as configuration or secrets, by group.
#[derive(Debug, Default)]
pub(crate) struct OwnFiles {
    /// The properties file read (explicit, or `mcp.properties` when present) and the settings
    /// file.
    pub(crate) properties: Vec<PathBuf>,
    /// The servers file.
    pub(crate) servers: Option<PathBuf>,
    /// The declarations file.
    pub(crate) tools: Option<PathBuf>,
    /// The credentials file, the introspection secret, the extra CA certificates.
    pub(crate) secrets: Vec<PathBuf>,
}

impl OwnFiles {
    /// Registers every group with `deny`; `access` is the access file's policy, if any.
    pub(crate) fn protect(&self, deny: &DenySet, access: Option<&AccessControl>) {
        deny.protect(OwnGroup::Properties, self.properties.iter().cloned());
        deny.protect(OwnGroup::Tools, self.tools.iter().cloned());
        deny.protect(OwnGroup::Secrets, self.secrets.iter().cloned());
        deny.protect(OwnGroup::Access, access.map(AccessControl::files).unwrap_or_default());
        deny.protect(OwnGroup::Servers, self.servers.as_deref().map(servers_files).unwrap_or_default());
    }

    /// The warnings about secrets inside `project`: an access file with inline keys, key files,
    /// the remotes' secret and private-key files, the introspection secret and the credentials
    /// file, and a properties file that lists keys.
    pub(crate) fn warnings(&self, project: &Path, access: Option<&AccessControl>, props: &Properties) -> Vec<String> {
        let mut secrets: Vec<(PathBuf, &str)> = Vec::new();
        if let Some(access) = access {
            let mut files = access.files().into_iter();
            if let Some(file) = files.next().filter(|_| access.has_inline_keys()) {
                secrets.push((file, "the access file holds inline keys"));
            }
            secrets.extend(files.map(|file| (file, "a key file of the access file")));
        }
        if let Some(servers) = &self.servers {
            let mut files = servers_files(servers).into_iter().skip(1);
            secrets.extend(files.by_ref().map(|file| (file, "a secret or private-key file of a remote")));
        }
        secrets.extend(self.secrets.iter().map(|file| (file.clone(), "a secret or credentials file")));
        if !props.list("keys").is_empty() {
            secrets.extend(self.properties.first().map(|file| (file.clone(), "the properties file lists keys")));
        }
        secrets
            .into_iter()
            .filter(|(file, _)| is_inside(file, project))
            .map(|(file, what)| {
                format!(
                    "{} is inside the project directory ({what}): mcpd never serves it, but keep keys and secrets \
                     outside the project (keyEnv, or keyFile and secret files in a directory of their own)",
                    file.display()
                )
            })
            .collect()
    }
}

/// The servers file and the secret and private-key files its remotes name (relative paths as
/// the runtime reads them, from the working directory); just the file when it cannot be read.
pub(crate) fn servers_files(path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_owned()];
    for record in load_servers(path).unwrap_or_default() {
        let ServerEntry::Http(document) = &record.server else { continue };
        let Some(oauth) = document.resolve().ok().and_then(|config| config.oauth) else { continue };
        files.extend(oauth.secret_files().map(PathBuf::from));
    }
    files
}

/// Whether `file` is inside `dir` (both as they are on disk).
fn is_inside(file: &Path, dir: &Path) -> bool {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let file = file.canonicalize().unwrap_or_else(|_| std::path::absolute(file).unwrap_or_else(|_| file.to_owned()));
    file.starts_with(dir)
}
