//! Per-client access (`--access FILE`): which tools, prompts and resources each named client
//! sees and may use, how it is recognised (an API key, or an OAuth token's subject or scopes), and how fast
//! it may call. The rules without I/O: the file's shape and its exact errors ([`parse`]), the
//! glob allow-lists ([`Globs`], the `enabledTools` matcher), the token bucket ([`TokenBucket`])
//! and the per-client call counts ([`CallCounts`]). The runtime reads the file (and the keys it
//! names in the environment or in files), swaps the policy on reload and applies it at the edge.
//!
//! ```json
//! {"clients": [
//!   {"name": "ci", "keyEnv": "MCPD_CI_KEY", "tools": ["docs__*", "echo"], "prompts": ["docs__*"],
//!    "resources": ["file:///docs/*"], "rateLimit": {"perMinute": 120, "burst": 20}},
//!   {"name": "ops", "subject": "ops-bot", "tools": ["*"]}
//! ]}
//! ```
//!
//! A client's credential is one of `key` (inline), `keyEnv` (an environment variable) or
//! `keyFile` (a file, relative to the access file's directory), or an OAuth match: `subject`
//! and/or `scopes` (every listed scope granted). `tools`, `prompts` and `resources` (resource
//! URIs) are glob lists (`*`, `?`); absent, the client sees none of that kind. Anything outside
//! them is unknown to the client ([`crate::server::screen`]).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::globs::patterns;
pub use super::globs::{Globs, MAX_PATTERNS};
use super::granted::Granted;

/// Most clients an access file may name (each is a label value of the metrics).
pub const MAX_CLIENTS: usize = 1000;
/// Longest client name.
pub const MAX_NAME: usize = 64;
/// Highest `perMinute` and `burst`.
pub const MAX_RATE: u64 = 1_000_000;
/// The metrics label of callers that are no client of the file (a `--key` key, a token no entry
/// matches); not allowed as a client's name.
pub const ANONYMOUS: &str = "-";

/// How a client proves who it is.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// The key itself, in the file.
    Key(String),
    /// The key is the value of this environment variable.
    KeyEnv(String),
    /// The key is the content of this file (trimmed).
    KeyFile(String),
    /// An OAuth token whose subject is `subject` (when given) and that grants every scope of
    /// `scopes`.
    Token {
        /// The `sub` claim to match.
        subject: Option<String>,
        /// Scopes the token must grant.
        scopes: Vec<String>,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never print a key.
            Credential::Key(_) => f.write_str("Key(…)"),
            Credential::KeyEnv(name) => f.debug_tuple("KeyEnv").field(name).finish(),
            Credential::KeyFile(path) => f.debug_tuple("KeyFile").field(path).finish(),
            Credential::Token { subject, scopes } => {
                f.debug_struct("Token").field("subject", subject).field("scopes", scopes).finish()
            }
        }
    }
}

impl Credential {
    /// Whether a verified token's grant is this client's (always false for a key).
    pub fn matches_token(&self, granted: &Granted) -> bool {
        match self {
            Credential::Token { subject, scopes } => {
                subject.as_ref().is_none_or(|s| granted.subject.as_deref() == Some(s.as_str()))
                    && scopes.iter().all(|s| granted.scopes.iter().any(|g| g == s))
            }
            _ => false,
        }
    }
}

/// A client's rate limit: `per_minute` calls on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls per minute on average.
    pub per_minute: u64,
    /// Calls that may come at once (the bucket's size).
    pub burst: u64,
}

/// A client's own shares of the server's capacity (`"limits"`); an absent one is the server's
/// default share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShareLimits {
    /// Sessions it may hold at once.
    pub sessions: Option<usize>,
    /// Streams it may hold open at once (standalone GETs, listens, 2024-11-05 streams).
    pub streams: Option<usize>,
    /// Requests it may have running at once, across its sessions and stateless calls.
    pub in_flight: Option<usize>,
}

/// The largest share a client's `limits` may name.
pub const MAX_SHARE: u64 = 10_000_000;

/// One client as the file declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSpec {
    /// Its name (metrics label, status, logs).
    pub name: String,
    /// How it is recognised.
    pub credential: Credential,
    /// The tools it sees and may call.
    pub tools: Vec<String>,
    /// The prompts it sees and may get.
    pub prompts: Vec<String>,
    /// The resource URIs (and templates) it sees and may read.
    pub resources: Vec<String>,
    /// Its rate limit on `tools/call`, if any.
    pub rate_limit: Option<RateLimit>,
    /// Its shares of sessions, streams and requests in flight.
    pub limits: ShareLimits,
    /// Whether it may read the operator routes (`/status`, `/metrics`).
    pub operator: bool,
    /// The virtual servers (`/mcp/<name>`) it is limited to; `None`: every endpoint.
    pub servers: Option<Vec<String>>,
}

/// Why an access file cannot be used (the message names the client and the field).
#[derive(Debug, Clone, PartialEq, Eq, derive_more::Display, derive_more::Error)]
#[display("{message}")]
pub struct AccessFileError {
    /// What is wrong.
    #[error(not(source))]
    pub message: String,
}

fn invalid(message: String) -> AccessFileError {
    AccessFileError { message }
}

const CLIENT_FIELDS: [&str; 13] = [
    "name",
    "key",
    "keyEnv",
    "keyFile",
    "subject",
    "scopes",
    "tools",
    "prompts",
    "resources",
    "rateLimit",
    "limits",
    "operator",
    "servers",
];

/// Reads an access file's text into its clients, in file order.
///
/// # Errors
/// The first problem found: not JSON, no `clients` array, an unknown field, a missing or
/// repeated name, a client with no credential or with both a key and a token match, a pattern
/// list or rate limit of the wrong shape, too many clients or patterns.
pub fn parse(text: &str) -> Result<Vec<ClientSpec>, AccessFileError> {
    let document: Value = serde_json::from_str(text).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let Value::Object(top) = document else {
        return Err(invalid("the access file must be a JSON object with a \"clients\" array".into()));
    };
    if let Some(unknown) = top.keys().find(|k| k.as_str() != "clients") {
        return Err(invalid(format!("unknown field {unknown:?} (the access file has only \"clients\")")));
    }
    let Some(Value::Array(entries)) = top.get("clients") else {
        return Err(invalid("the access file must be a JSON object with a \"clients\" array".into()));
    };
    if entries.len() > MAX_CLIENTS {
        return Err(invalid(format!("{} clients; at most {MAX_CLIENTS} are allowed", entries.len())));
    }
    let mut clients: Vec<ClientSpec> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let client = parse_client(index, entry)?;
        if clients.iter().any(|c| c.name == client.name) {
            return Err(invalid(format!("client {:?} is named twice", client.name)));
        }
        clients.push(client);
    }
    Ok(clients)
}

fn parse_client(index: usize, entry: &Value) -> Result<ClientSpec, AccessFileError> {
    let Value::Object(entry) = entry else {
        return Err(invalid(format!("clients[{index}] is not an object")));
    };
    let name = match entry.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(invalid(format!("clients[{index}]: \"name\" must be a string"))),
        None => return Err(invalid(format!("clients[{index}] has no \"name\""))),
    };
    check_name(&name).map_err(|problem| invalid(format!("clients[{index}]: name {name:?} {problem}")))?;
    let at = |problem: String| invalid(format!("client {name:?}: {problem}"));
    if let Some(unknown) = entry.keys().find(|k| !CLIENT_FIELDS.contains(&k.as_str())) {
        return Err(at(format!("unknown field {unknown:?} (expected one of {})", CLIENT_FIELDS.join(", "))));
    }
    let credential = credential(entry).map_err(at)?;
    let tools = patterns(entry, "tools").map_err(at)?;
    let prompts = patterns(entry, "prompts").map_err(at)?;
    let resources = patterns(entry, "resources").map_err(at)?;
    let rate_limit = match entry.get("rateLimit") {
        None | Some(Value::Null) => None,
        Some(value) => Some(rate_limit(value).map_err(at)?),
    };
    let limits = match entry.get("limits") {
        None | Some(Value::Null) => ShareLimits::default(),
        Some(value) => share_limits(value).map_err(at)?,
    };
    let operator = match entry.get("operator") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(operator)) => *operator,
        Some(_) => return Err(at("\"operator\" must be true or false".into())),
    };
    let servers = match entry.get("servers") {
        None | Some(Value::Null) => None,
        Some(value) => Some(servers(value).map_err(at)?),
    };
    Ok(ClientSpec { name, credential, tools, prompts, resources, rate_limit, limits, operator, servers })
}

/// A client's `servers`: the names of the virtual servers it is limited to (at least one, each
/// a valid virtual server name, none twice).
fn servers(value: &Value) -> Result<Vec<String>, String> {
    const SHAPE: &str =
        "\"servers\" must be a non-empty array of virtual server names (leave it out for every endpoint)";
    let Value::Array(items) = value else { return Err(SHAPE.into()) };
    if items.is_empty() || items.len() > MAX_PATTERNS {
        return Err(SHAPE.into());
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(name) = item else { return Err(SHAPE.into()) };
        crate::server::view::check_view_name(name).map_err(|problem| format!("\"servers\": {name:?} {problem}"))?;
        if names.contains(name) {
            return Err(format!("\"servers\" names {name:?} twice"));
        }
        names.push(name.clone());
    }
    Ok(names)
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err("must have 1 to 64 characters");
    }
    if name == ANONYMOUS {
        return Err("is reserved (it labels callers that are no client of the file)");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        return Err("may hold only ASCII letters, digits, '_', '-' and '.'");
    }
    Ok(())
}

fn string_field(entry: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match entry.get(field) {
        None => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(format!("{field:?} must be a non-empty string")),
    }
}

fn credential(entry: &Map<String, Value>) -> Result<Credential, String> {
    let mut keys = Vec::new();
    if let Some(key) = string_field(entry, "key")? {
        keys.push(Credential::Key(key));
    }
    if let Some(var) = string_field(entry, "keyEnv")? {
        keys.push(Credential::KeyEnv(var));
    }
    if let Some(path) = string_field(entry, "keyFile")? {
        keys.push(Credential::KeyFile(path));
    }
    let subject = string_field(entry, "subject")?;
    let scopes = match entry.get("scopes") {
        None => None,
        Some(Value::Array(items)) if !items.is_empty() => Some(
            items
                .iter()
                .map(|s| s.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| "\"scopes\" must be an array of non-empty strings".to_owned())?,
        ),
        Some(_) => return Err("\"scopes\" must be a non-empty array of strings".into()),
    };
    let token = (subject.is_some() || scopes.is_some())
        .then(|| Credential::Token { subject, scopes: scopes.unwrap_or_default() });
    match (keys.len(), token) {
        (0, Some(token)) => Ok(token),
        (1, None) => Ok(keys.remove(0)),
        (0, None) => {
            Err("no credential: give one of \"key\", \"keyEnv\", \"keyFile\", or \"subject\"/\"scopes\"".into())
        }
        (_, None) => Err("give only one of \"key\", \"keyEnv\" and \"keyFile\"".into()),
        (_, Some(_)) => Err("a key and a token match (\"subject\"/\"scopes\") exclude each other".into()),
    }
}

fn rate_limit(value: &Value) -> Result<RateLimit, String> {
    let Value::Object(limit) = value else {
        return Err("\"rateLimit\" must be an object like {\"perMinute\": 120, \"burst\": 20}".into());
    };
    if let Some(unknown) = limit.keys().find(|k| !matches!(k.as_str(), "perMinute" | "burst")) {
        return Err(format!("unknown field {unknown:?} in \"rateLimit\" (expected perMinute, burst)"));
    }
    let count = |field: &str| match limit.get(field) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_RATE).contains(n))
            .map(Some)
            .ok_or_else(|| format!("rateLimit.{field} must be a whole number from 1 to {MAX_RATE}")),
    };
    let per_minute = count("perMinute")?.ok_or_else(|| "\"rateLimit\" needs \"perMinute\"".to_owned())?;
    let burst = count("burst")?.unwrap_or(per_minute);
    Ok(RateLimit { per_minute, burst })
}

fn share_limits(value: &Value) -> Result<ShareLimits, String> {
    let Value::Object(limits) = value else {
        return Err("\"limits\" must be an object like {\"sessions\": 10, \"streams\": 10, \"inFlight\": 20}".into());
    };
    if let Some(unknown) = limits.keys().find(|k| !matches!(k.as_str(), "sessions" | "streams" | "inFlight")) {
        return Err(format!("unknown field {unknown:?} in \"limits\" (expected sessions, streams, inFlight)"));
    }
    let count = |field: &str| match limits.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_SHARE).contains(n))
            .map(|n| Some(n as usize))
            .ok_or_else(|| format!("limits.{field} must be a whole number from 1 to {MAX_SHARE}")),
    };
    Ok(ShareLimits { sessions: count("sessions")?, streams: count("streams")?, in_flight: count("inFlight")? })
}

/// A token bucket: `burst` tokens at most, refilled at `per_minute / 60` a second; a call takes
/// one.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket for `limit`, as of `now`.
    pub fn new(limit: RateLimit, now: Instant) -> Self {
        let capacity = limit.burst as f64;
        TokenBucket { capacity, per_second: limit.per_minute as f64 / 60.0, tokens: capacity, last: now }
    }

    /// Takes a token at `now`; `Err` with the time until one is there when the bucket is empty.
    ///
    /// # Errors
    /// The wait until the next token.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - self.tokens) / self.per_second))
    }
}

/// How a client's `tools/call` ended, as `mcpd_client_calls_total` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCallOutcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError`, or a JSON-RPC error (an unknown tool among them).
    Error,
    /// A tool that exists but that the client may not call (answered as unknown).
    Denied,
    /// Refused by the client's rate limit (`429`).
    Limited,
}

impl ClientCallOutcome {
    /// Every outcome, in label order.
    pub const ALL: [ClientCallOutcome; 4] =
        [ClientCallOutcome::Ok, ClientCallOutcome::Error, ClientCallOutcome::Denied, ClientCallOutcome::Limited];

    /// Its `outcome` label.
    pub const fn label(self) -> &'static str {
        match self {
            ClientCallOutcome::Ok => "ok",
            ClientCallOutcome::Error => "error",
            ClientCallOutcome::Denied => "denied",
            ClientCallOutcome::Limited => "limited",
        }
    }
}

/// A client's `tools/call` counts by outcome (kept across reloads of the file by name).
#[derive(Debug, Default)]
pub struct CallCounts([AtomicU64; 4]);

impl CallCounts {
    /// Counts one call.
    pub fn add(&self, outcome: ClientCallOutcome) {
        self.0[outcome as usize].fetch_add(1, Relaxed);
    }

    /// The count of `outcome`.
    pub fn get(&self, outcome: ClientCallOutcome) -> u64 {
        self.0[outcome as usize].load(Relaxed)
    }

    /// All calls counted.
    pub fn total(&self) -> u64 {
        ClientCallOutcome::ALL.iter().map(|o| self.get(*o)).sum()
    }
}

/// One client of the access file, as the edge and the dispatch use it.
#[derive(Debug)]
pub struct AccessClient {
    /// Its name.
    pub name: Arc<str>,
    /// The tools it sees and may call.
    pub tools: Globs,
    /// The prompts it sees and may get.
    pub prompts: Globs,
    /// The resource URIs it sees and may read (and the templates that may produce them).
    pub resources: Globs,
    /// Its rate limit as declared.
    pub rate_limit: Option<RateLimit>,
    /// Its shares of the server's capacity as declared.
    pub limits: ShareLimits,
    /// Whether it may read the operator routes.
    pub operator: bool,
    /// The virtual servers it is limited to (`None`: every endpoint, `/mcp` included).
    pub servers: Option<Vec<String>>,
    /// Its bucket (with a rate limit).
    bucket: Option<Mutex<TokenBucket>>,
    /// Its calls by outcome.
    pub calls: Arc<CallCounts>,
}

impl AccessClient {
    /// The client `spec` declares, counting into `calls`.
    pub fn new(spec: &ClientSpec, calls: Arc<CallCounts>, now: Instant) -> Self {
        AccessClient {
            name: spec.name.as_str().into(),
            tools: Globs::new(spec.tools.clone()),
            prompts: Globs::new(spec.prompts.clone()),
            resources: Globs::new(spec.resources.clone()),
            rate_limit: spec.rate_limit,
            limits: spec.limits,
            operator: spec.operator,
            servers: spec.servers.clone(),
            bucket: spec.rate_limit.map(|limit| Mutex::new(TokenBucket::new(limit, now))),
            calls,
        }
    }

    /// Whether it may use the endpoint of the virtual server `view` (`None`: the whole server,
    /// `/mcp`): a client limited to virtual servers reaches only those.
    pub fn may_use(&self, view: Option<&str>) -> bool {
        match (&self.servers, view) {
            (None, _) => true,
            (Some(servers), Some(view)) => servers.iter().any(|s| s == view),
            (Some(_), None) => false,
        }
    }

    /// Takes one call from its rate limit at `now`; `Err` with the wait when it is spent.
    ///
    /// # Errors
    /// The time until the next call is allowed.
    pub fn take_call(&self, now: Instant) -> Result<(), Duration> {
        match &self.bucket {
            Some(bucket) => bucket.lock().unwrap_or_else(PoisonError::into_inner).take(now),
            None => Ok(()),
        }
    }
}

/// `Retry-After` for a wait: whole seconds, rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text).unwrap_err().message
    }

    #[test]
    fn a_full_file_is_read_in_order() {
        let clients = parse(
            r#"{"clients": [
                {"name": "ci", "key": " k1 ", "tools": ["docs__*", "echo"], "rateLimit": {"perMinute": 120, "burst": 20}},
                {"name": "ops", "keyEnv": "OPS_KEY", "prompts": ["p*"], "rateLimit": {"perMinute": 6}},
                {"name": "bot.v2", "keyFile": "bot.key"},
                {"name": "sso", "subject": "alice", "scopes": ["mcp:tools"], "tools": ["*"]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(clients.len(), 4);
        assert_eq!(clients[0].credential, Credential::Key("k1".into()));
        assert_eq!(clients[0].tools, ["docs__*", "echo"]);
        assert!(clients[0].prompts.is_empty());
        assert_eq!(clients[0].rate_limit, Some(RateLimit { per_minute: 120, burst: 20 }));
        assert_eq!(clients[1].credential, Credential::KeyEnv("OPS_KEY".into()));
        assert_eq!(clients[1].rate_limit, Some(RateLimit { per_minute: 6, burst: 6 }), "burst defaults to perMinute");
        assert_eq!(clients[2].credential, Credential::KeyFile("bot.key".into()));
        assert_eq!(
            clients[3].credential,
            Credential::Token { subject: Some("alice".into()), scopes: vec!["mcp:tools".into()] }
        );
        assert_eq!(format!("{:?}", clients[0].credential), "Key(…)", "a key is never printed");
        assert_eq!(parse(r#"{"clients": []}"#).unwrap(), []);
    }

    #[test]
    fn every_malformation_has_its_exact_error() {
        let cases: [(&str, &str); 20] = [
            ("[", "not valid JSON: EOF while parsing a list at line 1 column 1"),
            ("[]", "the access file must be a JSON object with a \"clients\" array"),
            (r#"{"clients": {}}"#, "the access file must be a JSON object with a \"clients\" array"),
            (r#"{"clients": [], "x": 1}"#, "unknown field \"x\" (the access file has only \"clients\")"),
            (r#"{"clients": [1]}"#, "clients[0] is not an object"),
            (r#"{"clients": [{"key": "k"}]}"#, "clients[0] has no \"name\""),
            (r#"{"clients": [{"name": 1}]}"#, "clients[0]: \"name\" must be a string"),
            (r#"{"clients": [{"name": "-", "key": "k"}]}"#, "clients[0]: name \"-\" is reserved (it labels callers that are no client of the file)"),
            (r#"{"clients": [{"name": "a b", "key": "k"}]}"#, "clients[0]: name \"a b\" may hold only ASCII letters, digits, '_', '-' and '.'"),
            (r#"{"clients": [{"name": "", "key": "k"}]}"#, "clients[0]: name \"\" must have 1 to 64 characters"),
            (r#"{"clients": [{"name": "a", "key": "k", "tool": []}]}"#, "client \"a\": unknown field \"tool\" (expected one of name, key, keyEnv, keyFile, subject, scopes, tools, prompts, resources, rateLimit, limits, operator, servers)"),
            (r#"{"clients": [{"name": "a"}]}"#, "client \"a\": no credential: give one of \"key\", \"keyEnv\", \"keyFile\", or \"subject\"/\"scopes\""),
            (r#"{"clients": [{"name": "a", "key": "k", "keyEnv": "K"}]}"#, "client \"a\": give only one of \"key\", \"keyEnv\" and \"keyFile\""),
            (r#"{"clients": [{"name": "a", "key": "k", "subject": "s"}]}"#, "client \"a\": a key and a token match (\"subject\"/\"scopes\") exclude each other"),
            (r#"{"clients": [{"name": "a", "key": " "}]}"#, "client \"a\": \"key\" must be a non-empty string"),
            (r#"{"clients": [{"name": "a", "scopes": []}]}"#, "client \"a\": \"scopes\" must be a non-empty array of strings"),
            (r#"{"clients": [{"name": "a", "key": "k", "tools": "echo"}]}"#, "client \"a\": \"tools\" must be an array of name patterns"),
            (r#"{"clients": [{"name": "a", "key": "k", "prompts": [""]}]}"#, "client \"a\": \"prompts\" must hold only non-empty strings"),
            (r#"{"clients": [{"name": "a", "key": "k", "rateLimit": {"perMinute": 0}}]}"#, "client \"a\": rateLimit.perMinute must be a whole number from 1 to 1000000"),
            (r#"{"clients": [{"name": "a", "key": "k"}, {"name": "a", "key": "j"}]}"#, "client \"a\" is named twice"),
        ];
        for (text, expected) in cases {
            assert_eq!(error(text), expected, "{text}");
        }
        assert_eq!(
            error(r#"{"clients": [{"name": "a", "key": "k", "limits": {"sessions": 0}}]}"#),
            "client \"a\": limits.sessions must be a whole number from 1 to 10000000"
        );
        assert_eq!(
            error(r#"{"clients": [{"name": "a", "key": "k", "limits": {"session": 1}}]}"#),
            "client \"a\": unknown field \"session\" in \"limits\" (expected sessions, streams, inFlight)"
        );
        assert_eq!(
            error(r#"{"clients": [{"name": "a", "key": "k", "operator": "yes"}]}"#),
            "client \"a\": \"operator\" must be true or false"
        );
        for (servers, expected) in [
            ("[]", "\"servers\" must be a non-empty array of virtual server names (leave it out for every endpoint)"),
            (
                "\"docs\"",
                "\"servers\" must be a non-empty array of virtual server names (leave it out for every endpoint)",
            ),
            ("[\"a b\"]", "\"servers\": \"a b\" may hold only ASCII letters, digits, '_' and '-'"),
            ("[\"docs\", \"docs\"]", "\"servers\" names \"docs\" twice"),
        ] {
            let text = format!(r#"{{"clients": [{{"name": "a", "key": "k", "servers": {servers}}}]}}"#);
            assert_eq!(error(&text), format!("client \"a\": {expected}"), "{servers}");
        }
        let limited = parse(r#"{"clients": [{"name": "a", "key": "k", "servers": ["docs", "ops"]}]}"#).unwrap();
        assert_eq!(limited[0].servers.as_deref(), Some(["docs".to_owned(), "ops".to_owned()].as_slice()));
        let operator =
            parse(r#"{"clients": [{"name": "a", "key": "k", "operator": true}, {"name": "b", "key": "j"}]}"#);
        assert_eq!(operator.unwrap().iter().map(|c| c.operator).collect::<Vec<_>>(), [true, false]);
        let limited = parse(r#"{"clients": [{"name": "a", "key": "k", "limits": {"sessions": 3, "inFlight": 9}}]}"#);
        assert_eq!(limited.unwrap()[0].limits, ShareLimits { sessions: Some(3), streams: None, in_flight: Some(9) });
        assert_eq!(
            error(r#"{"clients": [{"name": "a", "key": "k", "rateLimit": {"burst": 2}}]}"#),
            "client \"a\": \"rateLimit\" needs \"perMinute\""
        );
        assert_eq!(
            error(r#"{"clients": [{"name": "a", "key": "k", "rateLimit": {"perMinute": 2, "every": 1}}]}"#),
            "client \"a\": unknown field \"every\" in \"rateLimit\" (expected perMinute, burst)"
        );
    }

    #[test]
    fn globs_match_whole_names_and_an_empty_list_matches_nothing() {
        let globs = Globs::new(vec!["docs__*".into(), "echo".into(), "t?me".into()]);
        for yes in ["docs__read", "docs__", "echo", "time", "tame"] {
            assert!(globs.matches(yes), "{yes}");
        }
        for no in ["echo2", "xdocs__read", "docs_read", "tiime", ""] {
            assert!(!globs.matches(no), "{no}");
        }
        assert!(!Globs::default().matches("echo"));
        assert!(Globs::new(vec!["*".into()]).matches(""));
    }

    #[test]
    fn a_token_matches_by_subject_and_every_listed_scope() {
        let granted = |sub: Option<&str>, scopes: &[&str]| Granted {
            subject: sub.map(str::to_owned),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            issuer: None,
        };
        let both = Credential::Token { subject: Some("alice".into()), scopes: vec!["a".into(), "b".into()] };
        assert!(both.matches_token(&granted(Some("alice"), &["b", "a", "c"])));
        assert!(!both.matches_token(&granted(Some("alice"), &["a"])));
        assert!(!both.matches_token(&granted(Some("bob"), &["a", "b"])));
        assert!(!both.matches_token(&granted(None, &["a", "b"])));
        let scopes_only = Credential::Token { subject: None, scopes: vec!["a".into()] };
        assert!(scopes_only.matches_token(&granted(Some("anyone"), &["a"])));
        assert!(!Credential::Key("a".into()).matches_token(&granted(Some("a"), &["a"])));
    }

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(RateLimit { per_minute: 60, burst: 3 }, start);
        for _ in 0..3 {
            assert_eq!(bucket.take(start), Ok(()));
        }
        let wait = bucket.take(start).unwrap_err();
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-9, "{wait:?}");
        assert_eq!(retry_after_secs(wait), 1);
        let later = start + Duration::from_millis(500);
        let wait = bucket.take(later).unwrap_err();
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
        assert_eq!(retry_after_secs(wait), 1, "rounded up");
        assert_eq!(bucket.take(start + Duration::from_secs(1)), Ok(()));
        // Refill never exceeds the burst.
        let much_later = start + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(bucket.take(much_later), Ok(()));
        }
        assert!(bucket.take(much_later).is_err());
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }

    #[test]
    fn call_counts_by_outcome() {
        let counts = CallCounts::default();
        counts.add(ClientCallOutcome::Ok);
        counts.add(ClientCallOutcome::Ok);
        counts.add(ClientCallOutcome::Limited);
        assert_eq!(counts.get(ClientCallOutcome::Ok), 2);
        assert_eq!(counts.get(ClientCallOutcome::Denied), 0);
        assert_eq!(counts.total(), 3);
        assert_eq!(ClientCallOutcome::ALL.map(ClientCallOutcome::label), ["ok", "error", "denied", "limited"]);
    }
}
