//! The multi-server file desktop MCP hosts use (`{"mcpServers": {…}}`): [`ServersFile`] reads
//! it once and answers for each entry what kind of server it is ([`ServerEntry`]: an HTTP
//! document, or the [`StdioCommand`] of a child process), by the one stdio rule of the
//! `config` module docs. The client, the command line and the gateway all read entries here.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::document::ConfigDocument;
use super::error::ConfigError;
use super::resolve::{is_stdio, resolve_entry, ServerConfig};
use crate::client::list::ListLimits;

/// How to start a stdio server: plain data, read from an entry's `command`, `args`, `env` and
/// `cwd`. Starting it is the runtime's business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program (looked up on `PATH`; no shell is involved).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (added to the runtime's own environment), in file order.
    pub env: Vec<(String, String)>,
    /// The working directory (default: the runtime's).
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// Reads the command of a stdio node. `args` and `env` may be absent or `null`; a `cwd`
    /// that is not a string is ignored.
    ///
    /// # Errors
    /// [`ConfigError::CommandNotString`], [`ConfigError::ArgNotString`],
    /// [`ConfigError::ArgsNotArray`], [`ConfigError::EnvValueNotString`],
    /// [`ConfigError::EnvNotObject`].
    pub fn from_node(node: &Map<String, Value>) -> Result<StdioCommand, ConfigError> {
        let program = node.get("command").and_then(Value::as_str).filter(|c| !c.trim().is_empty());
        let program = program.ok_or(ConfigError::CommandNotString)?;
        let args = match node.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(args)) => args
                .iter()
                .map(|a| a.as_str().map(str::to_owned).ok_or(ConfigError::ArgNotString))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(ConfigError::ArgsNotArray),
        };
        let env = match node.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(env)) => env
                .iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|v| (k.clone(), v.to_owned()))
                        .ok_or_else(|| ConfigError::EnvValueNotString(k.clone()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(ConfigError::EnvNotObject),
        };
        let cwd = node.get("cwd").and_then(Value::as_str).map(PathBuf::from);
        Ok(StdioCommand { program: program.to_owned(), args, env, cwd })
    }
}

/// How a gateway names what a remote exports (the entry's `"prefix"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Prefixing {
    /// `<server>__<name>`: the remote's names behind its own prefix (the default).
    #[default]
    Always,
    /// The remote's tool and prompt names as they are.
    Never,
}

/// How one configured server is reached: the two kinds the stdio rule tells apart.
#[derive(Debug, Clone)]
pub enum ServerEntry {
    /// An HTTP server (Streamable HTTP or HTTP+SSE), described by its single-server document.
    /// The document is the source of truth a record stores and edits; it is checked by
    /// [`ConfigDocument::resolve`] when used.
    Http(ConfigDocument),
    /// A stdio server: the child process to start.
    Stdio(StdioCommand),
}

/// A desktop MCP host's multi-server file: `{"mcpServers": {"<name>": {…}, …}, …}`.
///
/// Each entry is resolved exactly like the node of a nested single-server document (root-level
/// `headers`, `protocolVersion`, `url` / `baseUrl` are inherited the same way), so one bad or
/// stdio entry does not hide the others. A file without `mcpServers` has no servers. The file
/// is strict JSON (no comments).
#[derive(Debug, Clone)]
pub struct ServersFile {
    raw: Map<String, Value>,
}

impl ServersFile {
    /// Parses a servers file.
    ///
    /// # Errors
    /// [`ConfigError::Json`], [`ConfigError::NotAnObject`], or
    /// [`ConfigError::McpServersNotObject`] when `mcpServers` is present but not an object.
    pub fn parse(text: &str) -> Result<ServersFile, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        ServersFile::from_value(value)
    }

    /// Takes a servers file that is already JSON.
    ///
    /// # Errors
    /// As [`parse`](ServersFile::parse), minus the JSON syntax.
    pub fn from_value(value: Value) -> Result<ServersFile, ConfigError> {
        let Value::Object(raw) = value else {
            return Err(ConfigError::NotAnObject);
        };
        match raw.get("mcpServers") {
            None | Some(Value::Object(_)) => Ok(ServersFile { raw }),
            Some(_) => Err(ConfigError::McpServersNotObject),
        }
    }

    fn nodes(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.raw.get("mcpServers").and_then(Value::as_object).into_iter().flatten()
    }

    /// The server names (the `mcpServers` keys), in file order.
    pub fn names(&self) -> Vec<&str> {
        self.nodes().map(|(k, _)| k.as_str()).collect()
    }

    /// How many servers the file lists.
    pub fn len(&self) -> usize {
        self.nodes().count()
    }

    /// Whether the file lists no server.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every server in file order, each resolved on its own; stdio entries are
    /// [`ConfigError::Stdio`].
    pub fn servers(&self) -> Vec<(String, Result<ServerConfig, ConfigError>)> {
        self.nodes().map(|(k, v)| (k.clone(), resolve_entry(&self.raw, Some((k.as_str(), v))))).collect()
    }

    /// One server by its exact key; `None` when the file has no such entry.
    pub fn get(&self, name: &str) -> Option<Result<ServerConfig, ConfigError>> {
        self.nodes().find(|(k, _)| k.as_str() == name).map(|(k, v)| resolve_entry(&self.raw, Some((k.as_str(), v))))
    }

    /// A member of the file's root other than the servers (a gateway's `virtualServers`, say).
    pub fn root_member(&self, key: &str) -> Option<&Value> {
        self.raw.get(key)
    }

    /// Whether the file has an `mcpServers` object (a file without one lists no server, which
    /// a caller that expects servers may refuse).
    pub fn has_mcp_servers(&self) -> bool {
        self.raw.contains_key("mcpServers")
    }

    /// Every entry in file order, each as [`entry`](ServersFile::entry) reads it.
    pub fn entries(&self) -> Vec<(String, Result<ServerEntry, ConfigError>)> {
        self.nodes().map(|(k, v)| (k.clone(), self.read_entry(k, v))).collect()
    }

    /// One entry by its exact key, as the client starts it; `None` when the file has no such
    /// entry. A stdio entry (by the module's one rule) is read into its [`StdioCommand`]; any
    /// other entry is [`ServerEntry::Http`] with its [`document`](ServersFile::document),
    /// unresolved (so that a caller may still adjust it; resolving reports what is wrong).
    ///
    /// # Errors
    /// The [`StdioCommand::from_node`] error of a stdio entry whose fields are wrong. These
    /// messages name no server: callers put `server <name>: ` before them.
    pub fn entry(&self, name: &str) -> Option<Result<ServerEntry, ConfigError>> {
        self.nodes().find(|(k, _)| k.as_str() == name).map(|(k, v)| self.read_entry(k, v))
    }

    fn read_entry(&self, key: &str, node: &Value) -> Result<ServerEntry, ConfigError> {
        match node.as_object() {
            Some(node) if is_stdio(node) => StdioCommand::from_node(node).map(ServerEntry::Stdio),
            _ => Ok(ServerEntry::Http(self.narrowed_to(key, node))),
        }
    }

    /// An entry's `timeout` in seconds, clamped by [`timeout_seconds`](super::timeout_seconds)
    /// (absent, not an integer, or no such entry: the default).
    pub fn timeout_seconds(&self, name: &str) -> u64 {
        let node = self.nodes().find(|(k, _)| k.as_str() == name).map(|(_, node)| node);
        super::timeout_seconds(node.and_then(|node| node.get("timeout")).and_then(Value::as_i64))
    }

    /// An entry's `taskWaitSeconds`: how long a call waits for a task the server made of it,
    /// clamped by [`task_wait_seconds`](crate::client::task::task_wait_seconds) (absent, not an
    /// integer, or no such entry: the default, an hour).
    pub fn task_wait_seconds(&self, name: &str) -> u64 {
        let node = self.nodes().find(|(k, _)| k.as_str() == name).map(|(_, node)| node);
        crate::client::task::task_wait_seconds(
            node.and_then(|node| node.get("taskWaitSeconds")).and_then(Value::as_i64),
        )
    }

    /// An entry's `prefix`: `"always"` (also when absent or `null`) or `"never"`.
    ///
    /// # Errors
    /// [`ConfigError::Prefix`] for any other value (callers put `server <name>: ` before it).
    pub fn prefixing(&self, name: &str) -> Result<Prefixing, ConfigError> {
        let node = self.nodes().find(|(k, _)| k.as_str() == name).map(|(_, node)| node);
        match node.and_then(|node| node.get("prefix")) {
            None | Some(Value::Null) => Ok(Prefixing::Always),
            Some(Value::String(value)) if value == "always" => Ok(Prefixing::Always),
            Some(Value::String(value)) if value == "never" => Ok(Prefixing::Never),
            Some(other) => Err(ConfigError::Prefix(other.to_string())),
        }
    }

    /// An entry's listing bounds: `maxListPages` and `maxListItems`, integers clamped by
    /// [`ListLimits::new`] (absent, not an integer, or no such entry: the defaults, 100 pages
    /// and 10,000 entries).
    pub fn list_limits(&self, name: &str) -> ListLimits {
        let node = self.nodes().find(|(k, _)| k.as_str() == name).map(|(_, node)| node);
        let field = |key: &str| node.and_then(|node| node.get(key)).and_then(Value::as_i64);
        ListLimits::new(field("maxListPages"), field("maxListItems"))
    }

    /// A single-server [`ConfigDocument`] for one entry, to store or edit: the file's root with
    /// `mcpServers` narrowed to that entry (every other key kept, in order).
    pub fn document(&self, name: &str) -> Option<ConfigDocument> {
        let (key, node) = self.nodes().find(|(k, _)| k.as_str() == name)?;
        Some(self.narrowed_to(key, node))
    }

    /// The file's root with `mcpServers` narrowed to the entry `key` / `node`.
    fn narrowed_to(&self, key: &str, node: &Value) -> ConfigDocument {
        let mut servers = Map::new();
        servers.insert(key.to_owned(), node.clone());
        let raw = self
            .raw
            .iter()
            .map(|(k, v)| {
                let v = if k == "mcpServers" { Value::Object(servers.clone()) } else { v.clone() };
                (k.clone(), v)
            })
            .collect();
        ConfigDocument { raw, original: None }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::config::fixtures::keys;
    use crate::client::config::{Field, Transport};
    use crate::version::ProtocolVersion;

    // ---- servers file ----

    const DESKTOP: &str = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "remote": {
      "type": "http",
      "url": "https://remote.example/mcp",
      "headers": {"Authorization": "Bearer r"}
    },
    "legacy": {"type": "sse", "url": "http://127.0.0.1:8080/sse", "protocolVersion": "2024-11-05"},
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
  },
  "preferences": {"theme": "dark"}
}"#;

    #[test]
    fn servers_file_resolves_each_entry_and_refuses_stdio() {
        let file = ServersFile::parse(DESKTOP).unwrap();
        assert_eq!(file.names(), ["remote", "legacy", "files"]);
        assert_eq!((file.len(), file.is_empty()), (3, false));

        let servers = file.servers();
        assert_eq!(servers.len(), 3);
        let (name, remote) = &servers[0];
        let remote = remote.as_ref().unwrap();
        assert_eq!((name.as_str(), remote.name.as_str(), remote.key.as_deref()), ("remote", "remote", Some("remote")));
        assert_eq!((remote.transport, remote.url.as_str()), (Transport::StreamableHttp, "https://remote.example/mcp"));
        assert_eq!(remote.auth_key(), Some("Bearer r"));
        assert_eq!(remote.protocol_version, None);

        let (name, legacy) = &servers[1];
        let legacy = legacy.as_ref().unwrap();
        assert_eq!(name, "legacy");
        assert_eq!(legacy.transport, Transport::Sse);
        assert_eq!(legacy.pin(), Some(ProtocolVersion::V2024_11_05));
        assert!(legacy.headers.is_empty());

        let (name, files) = &servers[2];
        assert_eq!(name, "files");
        let err = files.as_ref().unwrap_err();
        assert_eq!(err, &ConfigError::Stdio("files".into()));
        assert_eq!(
            err.to_string(),
            "Server \"files\" uses the stdio transport: it has no HTTP endpoint to resolve; start it as a child process instead."
        );

        assert_eq!(file.get("legacy").unwrap().unwrap(), *legacy);
        assert_eq!(file.get("files"), Some(Err(ConfigError::Stdio("files".into()))));
        assert_eq!(file.get("nope"), None);
        assert!(file.document("nope").is_none());
    }

    #[test]
    fn servers_file_entry_becomes_a_single_server_document() {
        let file = ServersFile::parse(DESKTOP).unwrap();
        let mut d = file.document("remote").unwrap();
        assert_eq!(keys(d.as_object()), ["globalShortcut", "mcpServers", "preferences"]);
        assert_eq!(keys(d.as_object()["mcpServers"].as_object().unwrap()), ["remote"]);
        assert_eq!(d.resolve(), file.get("remote").unwrap());
        d.patch(Field::AuthKey, "Bearer s").unwrap();
        assert_eq!(d.resolve().unwrap().auth_key(), Some("Bearer s"));
        assert_eq!(d.as_object()["preferences"], json!({"theme": "dark"}));
        assert_eq!(file.document("files").unwrap().resolve(), Err(ConfigError::Stdio("files".into())));
    }

    #[test]
    fn servers_file_shape_and_per_entry_errors() {
        let empty = ServersFile::parse(r#"{"preferences":{}}"#).unwrap();
        assert!(empty.is_empty());
        assert!(empty.servers().is_empty());
        assert!(ServersFile::parse(r#"{"mcpServers":{}}"#).unwrap().is_empty());
        assert_eq!(ServersFile::parse(r#"{"mcpServers":[]}"#).unwrap_err(), ConfigError::McpServersNotObject);
        assert_eq!(ServersFile::parse(r#"{"mcpServers":null}"#).unwrap_err(), ConfigError::McpServersNotObject);
        assert_eq!(ServersFile::parse("[]").unwrap_err(), ConfigError::NotAnObject);
        assert!(matches!(ServersFile::parse("{"), Err(ConfigError::Json(_))));

        // One bad entry does not hide the others; entries use the single-document rules.
        let file = ServersFile::from_value(json!({
            "headers": {"X-Shared": "1"},
            "mcpServers": {
                "broken": "https://a/",
                "mismatch": {"url": "https://a/", "baseUrl": "https://b/"},
                "typed": {"type": "stdio"},
                "ws": {"type": "websocket", "url": "wss://a/"},
                "ok": {"url": "https://ok.example/"}
            }
        }))
        .unwrap();
        let results: Vec<_> = file.servers().into_iter().map(|(k, r)| (k, r.map(|c| c.headers))).collect();
        assert_eq!(
            results,
            vec![
                ("broken".to_owned(), Err(ConfigError::ServerNotObject("broken".into()))),
                ("mismatch".to_owned(), Err(ConfigError::EndpointMismatch)),
                ("typed".to_owned(), Err(ConfigError::Stdio("typed".into()))),
                ("ws".to_owned(), Err(ConfigError::UnsupportedTransport("websocket".into()))),
                ("ok".to_owned(), Ok(vec![("X-Shared".to_owned(), "1".to_owned())])),
            ]
        );
    }

    #[test]
    fn an_explicit_type_decides_and_otherwise_a_command_or_args_makes_a_stdio_entry() {
        let file = ServersFile::from_value(json!({"mcpServers": {
            "cmd": {"command": "npx", "args": ["-y", "s"], "env": {"B": "2", "A": "1"}, "cwd": "/srv", "url": "https://a/"},
            "typed": {"type": " STDIO ", "command": "srv"},
            "transport_key": {"transport": "stdio", "command": "srv", "args": null, "env": null, "cwd": 7},
            "http_typed": {"type": "http", "url": "https://a/", "command": "ignored"},
            "sse_transport": {"transport": "sse", "url": "https://a/sse", "args": ["ignored"]},
            "args_only": {"args": ["x"]},
            "plain": {"url": "https://a/"},
            "not_object": "https://a/",
            "bad_type": {"type": 5, "command": "x"}
        }}))
        .unwrap();
        let stdio = |name: &str| match file.entry(name) {
            Some(Ok(ServerEntry::Stdio(command))) => Some(command),
            Some(Ok(ServerEntry::Http(_))) => None,
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(
            stdio("cmd"),
            Some(StdioCommand {
                program: "npx".into(),
                args: vec!["-y".into(), "s".into()],
                env: vec![("B".into(), "2".into()), ("A".into(), "1".into())],
                cwd: Some("/srv".into()),
            })
        );
        assert_eq!(stdio("typed").map(|c| c.program), Some("srv".into()));
        let transport_key = stdio("transport_key").expect("stdio by its transport key");
        assert!(transport_key.args.is_empty() && transport_key.env.is_empty() && transport_key.cwd.is_none());
        for http in ["http_typed", "sse_transport", "plain", "not_object", "bad_type"] {
            assert_eq!(stdio(http), None, "{http} is an HTTP entry");
        }
        assert_eq!(file.entry("args_only").map(|e| e.map(|_| ())), Some(Err(ConfigError::CommandNotString)));
        assert!(file.entry("nope").is_none());
        let listed: Vec<String> = file.entries().into_iter().map(|(name, _)| name).collect();
        assert_eq!(listed, file.names());

        // The HTTP side resolves by the same rule: an explicit HTTP type wins over a command.
        let Some(Ok(ServerEntry::Http(document))) = file.entry("http_typed") else { panic!("http_typed") };
        assert_eq!(document.resolve().unwrap().transport, Transport::StreamableHttp);
        let Some(Ok(ServerEntry::Http(document))) = file.entry("not_object") else { panic!("not_object") };
        assert_eq!(document.resolve(), Err(ConfigError::ServerNotObject("not_object".into())));
        let Some(Ok(ServerEntry::Http(document))) = file.entry("bad_type") else { panic!("bad_type") };
        assert_eq!(document.resolve(), Err(ConfigError::FieldNotString { field: "type" }));
        assert_eq!(file.get("typed"), Some(Err(ConfigError::Stdio("typed".into()))));
        assert_eq!(file.get("args_only"), Some(Err(ConfigError::Stdio("args_only".into()))));
    }

    #[test]
    fn stdio_entries_with_unusable_fields_are_refused_with_exact_messages() {
        for (node, expected) in [
            (json!({"command": ""}), "command must be a non-empty string"),
            (json!({"command": "  "}), "command must be a non-empty string"),
            (json!({"command": ["npx"]}), "command must be a non-empty string"),
            (json!({"type": "stdio"}), "command must be a non-empty string"),
            (json!({"command": "x", "args": ["a", 1]}), "args must be strings"),
            (json!({"command": "x", "args": "a b"}), "args must be an array of strings"),
            (json!({"command": "x", "env": {"OK": "1", "KEY": 1}}), "env KEY must be a string"),
            (json!({"command": "x", "env": ["KEY=1"]}), "env must be an object of strings"),
        ] {
            let file = ServersFile::from_value(json!({ "mcpServers": { "s": node } })).unwrap();
            let error = file.entry("s").expect("listed").expect_err("refused");
            assert_eq!(error.to_string(), expected, "{node}");
        }
    }

    #[test]
    fn entry_timeouts_default_to_30_and_clamp() {
        let file = ServersFile::from_value(json!({"mcpServers": {
            "long": {"url": "https://a/", "timeout": 60},
            "short": {"command": "x", "timeout": 1},
            "text": {"url": "https://a/", "timeout": "60"},
            "none": {"url": "https://a/"}
        }}))
        .unwrap();
        let timeouts: Vec<u64> = ["long", "short", "text", "none", "missing"].map(|n| file.timeout_seconds(n)).to_vec();
        assert_eq!(timeouts, [60, 5, 30, 30, 30]);
        assert!(file.has_mcp_servers());
        assert!(!ServersFile::parse("{}").unwrap().has_mcp_servers());
    }

    #[test]
    fn entry_list_limits_default_and_clamp() {
        let file = ServersFile::from_value(json!({"mcpServers": {
            "set": {"url": "https://a/", "maxListPages": 5, "maxListItems": 50},
            "zero": {"command": "x", "maxListPages": 0, "maxListItems": -1},
            "text": {"url": "https://a/", "maxListPages": "5"}
        }}))
        .unwrap();
        assert_eq!(file.list_limits("set"), ListLimits { max_pages: 5, max_items: 50 });
        assert_eq!(file.list_limits("zero"), ListLimits { max_pages: 1, max_items: 1 });
        assert_eq!(file.list_limits("text"), ListLimits::default());
        assert_eq!(file.list_limits("missing"), ListLimits::default());
    }

    #[test]
    fn an_entry_is_prefixed_unless_it_says_never() {
        let file = ServersFile::from_value(json!({"mcpServers": {
            "plain": {"url": "https://a/"},
            "always": {"url": "https://a/", "prefix": "always"},
            "never": {"command": "x", "prefix": "never"},
            "null": {"url": "https://a/", "prefix": null},
            "odd": {"url": "https://a/", "prefix": "sometimes"},
            "number": {"url": "https://a/", "prefix": 0}
        }}))
        .unwrap();
        for (name, expected) in [
            ("plain", Prefixing::Always),
            ("always", Prefixing::Always),
            ("never", Prefixing::Never),
            ("null", Prefixing::Always),
        ] {
            assert_eq!(file.prefixing(name), Ok(expected), "{name}");
        }
        assert_eq!(
            file.prefixing("odd").unwrap_err().to_string(),
            "prefix must be \"always\" or \"never\", not \"sometimes\""
        );
        assert_eq!(file.prefixing("number").unwrap_err().to_string(), "prefix must be \"always\" or \"never\", not 0");
        let Some(Ok(ServerEntry::Http(document))) = file.entry("always") else { panic!("always is an HTTP entry") };
        assert!(document.resolve().is_ok(), "prefix is no field of an HTTP entry's own rules");
    }

    #[test]
    fn entry_task_waits_default_to_an_hour_and_clamp() {
        let file = ServersFile::from_value(json!({"mcpServers": {
            "set": {"url": "https://a/", "taskWaitSeconds": 120},
            "zero": {"command": "x", "taskWaitSeconds": 0},
            "huge": {"url": "https://a/", "taskWaitSeconds": 10_000_000},
            "text": {"url": "https://a/", "taskWaitSeconds": "120"}
        }}))
        .unwrap();
        let waits = ["set", "zero", "huge", "text", "missing"].map(|n| file.task_wait_seconds(n));
        assert_eq!(waits, [120, 1, 86_400, 3600, 3600]);
    }
}
