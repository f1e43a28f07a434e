//! The servers file and the names the gateway gives: [`load_servers_file`] reads a desktop-host
//! `mcpServers` file into records (and its `virtualServers` into views), [`prefix_for`] makes a
//! server's name the prefix of what it exports (`<prefix>__<name>`, [`SEPARATOR`]), or its
//! entry's `"prefix": "never"` keeps the remote's own names ([`Naming`]), and an exported entry
//! is named and marked with its server here (tools here, prompts in `federation`).
//!
//! These are rules with no state: every other part of the gateway (the reload, the federation,
//! the tools' listing) takes them from this file, which takes nothing from theirs.

use std::path::Path;

use mcpd::client::config::{ConfigError, Prefixing, ServerEntry, ServersFile};
use mcpd::model::Tool;
use mcpd::server::view::{parse_views, View};
use mcpd::tasks::TaskSupport;

use crate::client::ServerRecord;

/// The separator between server and tool in exported names.
pub const SEPARATOR: &str = "__";

/// What a servers file configures: its remotes, in file order, and its virtual servers.
#[derive(Debug)]
pub struct ServersConfig {
    /// One record per entry of `mcpServers`.
    pub records: Vec<ServerRecord>,
    /// The views of `virtualServers`, each served at `/mcp/<name>`.
    pub views: Vec<View>,
}

/// Reads a servers file into records (one per entry; stdio entries start a child).
///
/// # Errors
/// As [`load_servers_file`].
pub fn load_servers(path: &Path) -> Result<Vec<ServerRecord>, String> {
    load_servers_file(path).map(|config| config.records)
}

/// Reads a servers file: its remotes (one per entry; stdio entries start a child) and its
/// virtual servers. Which entries are stdio servers is the core's one rule
/// (`mcpd::client::config`): an explicit `type` / `transport` decides, else an entry with
/// `command` (or `args`) is one.
///
/// # Errors
/// A message naming the file, the entry or the virtual server that cannot be used.
pub fn load_servers_file(path: &Path) -> Result<ServersConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = match ServersFile::parse(&text) {
        Ok(file) if file.has_mcp_servers() => file,
        Err(ConfigError::Json(e)) => return Err(format!("{} is not valid JSON: {e}", path.display())),
        _ => return Err(format!("{} has no mcpServers object", path.display())),
    };
    let views = parse_views(file.root_member("virtualServers"))?;
    let mut records = Vec::new();
    for (name, server) in file.entries() {
        let server = server.map_err(|e| format!("server {name}: {e}"))?;
        if let ServerEntry::Http(document) = &server {
            document.resolve().map_err(|e| format!("server {name}: {e}"))?;
        }
        let (timeout_secs, list_limits) = (file.timeout_seconds(&name), file.list_limits(&name));
        let task_wait_secs = file.task_wait_seconds(&name);
        let prefix = file.prefixing(&name).map_err(|e| format!("server {name}: {e}"))?;
        records.push(ServerRecord {
            timeout_secs,
            list_limits,
            task_wait_secs,
            prefix,
            ..ServerRecord::with_server(name, server)
        });
    }
    Ok(ServersConfig { records, views })
}

/// The prefix for a server name: `[a-z0-9_-]`, no `__`, unique among `taken`.
pub fn prefix_for(name: &str, taken: &[String]) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let base = out.trim_matches('_').to_owned();
    let base = if base.is_empty() { "server".to_owned() } else { base };
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

/// How one remote's tools and prompts are named here: behind its prefix, or (`"prefix":
/// "never"`) as they are at the remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Naming {
    /// The prefix, when the names are prefixed.
    prefix: Option<String>,
}

impl Naming {
    /// The naming of a remote whose prefix is `prefix` and whose entry says `prefixing`.
    pub(super) fn new(prefix: &str, prefixing: Prefixing) -> Self {
        Naming { prefix: (prefixing == Prefixing::Always).then(|| prefix.to_owned()) }
    }

    /// The name here of the remote's `name`.
    pub(super) fn exported(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{SEPARATOR}{name}"),
            None => name.to_owned(),
        }
    }

    /// The prefix, when the remote's names are prefixed.
    pub(super) fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The URI (or URI template) here of the remote's `uri`: an MCP Apps `ui://` one of a prefixed
    /// remote is namespaced like its names, keeping the scheme (`ui://<prefix>__<rest>`), so two
    /// remotes' apps never share a URI; any other is kept.
    pub(super) fn exported_uri(&self, uri: &str) -> String {
        match (&self.prefix, uri.strip_prefix(UI_SCHEME)) {
            (Some(prefix), Some(rest)) => format!("{UI_SCHEME}{prefix}{SEPARATOR}{rest}"),
            _ => uri.to_owned(),
        }
    }

    /// The remote's URI of `uri` as exported here ([`Naming::exported_uri`] undone).
    pub(super) fn remote_uri(&self, uri: &str) -> String {
        let rest = self
            .prefix
            .as_ref()
            .and_then(|prefix| uri.strip_prefix(UI_SCHEME)?.strip_prefix(prefix.as_str())?.strip_prefix(SEPARATOR));
        match rest {
            Some(rest) => format!("{UI_SCHEME}{rest}"),
            None => uri.to_owned(),
        }
    }
}

/// The URI scheme of MCP Apps' user interfaces (`io.modelcontextprotocol/ui`).
pub(super) const UI_SCHEME: &str = "ui://";
/// The `_meta` member of a tool's user interface (MCP Apps 2026-01-26: `resourceUri`,
/// `visibility`, …).
const UI_META: &str = "ui";
/// The flat `_meta` key of a tool's interface that MCP Apps' earlier drafts used (deprecated by
/// 2026-01-26, still sent by some servers).
const UI_RESOURCE_URI_META: &str = "ui/resourceUri";

/// A name as a message shows it: at most 60 characters.
pub(super) fn shown(name: &str) -> String {
    clipped(name, 60)
}

/// `text` cut to at most `max` characters (marked `…` when cut).
pub(super) fn clipped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// A remote tool as this server exports it. Its task support is this server's own, not the
/// remote's: `optional` — mcpd answers a short call at once and makes a long one a task of its
/// own for clients that take tasks (the remote's task, if it makes one, is followed by mcpd's
/// client meanwhile). A remote `required` is therefore no burden on mcpd's clients, and
/// cancelling mcpd's task drops the call, which cancels the remote's.
///
/// Its `_meta` is passed on whole (MCP Apps' `ui` among it: `visibility`, `csp`, …), with the
/// interface's `ui://` URI — `_meta.ui.resourceUri`, and the flat `_meta["ui/resourceUri"]` of
/// earlier drafts — named as the remote's resources are here ([`Naming::exported_uri`]).
pub(super) fn export(tool: &Tool, naming: &Naming, server: &str) -> Tool {
    let mut exported = tool.clone().with_task_support(TaskSupport::Optional);
    exported.name = naming.exported(&tool.name);
    exported.description = Some(marked(server, tool.description.as_deref()));
    if let Some(meta) = exported.meta.as_mut() {
        if let Some(serde_json::Value::String(uri)) =
            meta.get_mut(UI_META).and_then(|ui| ui.as_object_mut()).and_then(|ui| ui.get_mut("resourceUri"))
        {
            *uri = naming.exported_uri(uri);
        }
        if let Some(serde_json::Value::String(uri)) = meta.get_mut(UI_RESOURCE_URI_META) {
            *uri = naming.exported_uri(uri);
        }
    }
    exported
}

/// A remote entry's description as this server exports it: marked with the server's name.
pub(super) fn marked(server: &str, description: Option<&str>) -> String {
    format!("[{server}] {}", description.unwrap_or("")).trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn exported_tools_are_optional_tasks_of_this_server_whatever_the_remote_declares() {
        let plain = Tool::new("build", "Builds.", json!({"type": "object"}));
        for remote in [
            plain.clone(),
            plain.clone().with_task_support(TaskSupport::Required),
            plain.clone().with_task_support(TaskSupport::Forbidden),
        ] {
            let exported = export(&remote, &Naming::new("ci", Prefixing::Always), "CI");
            assert_eq!(exported.name, "ci__build");
            let unprefixed = export(&remote, &Naming::new("ci", Prefixing::Never), "CI");
            assert_eq!(unprefixed.name, "build");
            assert_eq!(exported.description.as_deref(), Some("[CI] Builds."));
            assert_eq!(exported.task_support(), TaskSupport::Optional, "{remote:?}");
        }
    }

    #[test]
    fn an_apps_interface_is_namespaced_with_its_prefix_and_the_rest_of_meta_kept() {
        let mut tool = Tool::new("weather", "Weather.", json!({"type": "object"}));
        let ui = json!({"resourceUri": "ui://weather/view.html", "visibility": ["app"], "csp": {"connectDomains": ["https://a"]}});
        tool.meta = Some(serde_json::Map::from_iter([
            ("ui".to_owned(), ui.clone()),
            ("ui/resourceUri".to_owned(), json!("ui://weather/view.html")),
            ("other".to_owned(), json!(1)),
        ]));
        let prefixed = Naming::new("wx", Prefixing::Always);
        let exported = export(&tool, &prefixed, "WX");
        let meta = exported.meta.unwrap();
        assert_eq!(meta["ui"]["resourceUri"], "ui://wx__weather/view.html");
        assert_eq!(meta["ui"]["visibility"], json!(["app"]));
        assert_eq!(meta["ui"]["csp"], ui["csp"]);
        assert_eq!(meta["ui/resourceUri"], "ui://wx__weather/view.html");
        assert_eq!(meta["other"], 1);
        let kept = export(&tool, &Naming::new("wx", Prefixing::Never), "WX").meta.unwrap();
        assert_eq!(kept["ui"], ui, "an unprefixed remote's URIs are its own");
        assert_eq!(prefixed.remote_uri("ui://wx__weather/view.html"), "ui://weather/view.html");
        assert_eq!(prefixed.remote_uri("ui://other__weather"), "ui://other__weather");
        assert_eq!(prefixed.exported_uri("ui://{id}/view"), "ui://wx__{id}/view", "templates too");
        assert_eq!(prefixed.exported_uri("file:///a"), "file:///a", "only ui:// URIs");
    }

    #[test]
    fn prefixes_are_sanitized_and_unique() {
        let mut taken = Vec::new();
        for (name, expected) in
            [("Docs", "docs"), ("my server!", "my_server"), ("a__b", "a_b"), ("docs", "docs_2"), ("", "server")]
        {
            let prefix = prefix_for(name, &taken);
            assert_eq!(prefix, expected);
            assert!(!prefix.contains(SEPARATOR));
            taken.push(prefix);
        }
    }
}
