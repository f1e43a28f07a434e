//! Per-client access at run time (`--access FILE`): the access file read into a `Policy` (the
//! keys it names taken from the file, the environment or key files), held behind a lock so that
//! [`AccessControl::reload`] swaps it whole — only when the new file is good; a file that does
//! not parse keeps the previous policy and says why.
//!
//! The HTTP guard asks `AccessControl::identify` which client a request's key is (constant
//! time, like `--key`) and `AccessControl::for_token` which client an OAuth token is; the
//! client's [`Access`] then rides in the request's [`mcpd::server::Scope`], where the core hides
//! every tool and prompt its globs do not allow. Per-client call counts survive a reload by
//! name and are exported as `mcpd_client_calls_total{client, outcome}` (only names from the
//! file, and `-` for every other caller: a bounded label set).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use mcpd::auth::access::{
    self, AccessClient, CallCounts, ClientCallOutcome, ClientSpec, Credential, RateLimit, ANONYMOUS,
};
use mcpd::auth::scopes::Access;
use mcpd::auth::KeySet;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use serde_json::{json, Value};

use crate::metrics::{Metrics, MoreMetrics};

/// Longest key file read.
const MAX_KEY_FILE: u64 = 64 * 1024;
/// Longest access file read.
const MAX_ACCESS_FILE: u64 = 4 * 1024 * 1024;

/// What taking a call from a shared bucket comes to: `Some(Ok)` allowed, `Some(Err(wait))` not
/// before `wait`, `None` the shared bucket could not be asked.
pub type SharedTake<'a> = Pin<Box<dyn Future<Output = Option<Result<(), Duration>>> + Send + 'a>>;

/// Rate limits kept by several instances together (cluster mode: Redis), so that a client's
/// `rateLimit` is one bucket across them. Defined here, implemented by the cluster: the access
/// policy does not depend on how the bucket is shared.
pub trait SharedRates: Send + Sync + std::fmt::Debug {
    /// Takes one call of `client`'s bucket for `limit`: `Ok` when allowed, `Err` with the wait
    /// until the next call is; `None` when the shared bucket could not be asked (the instance's
    /// own bucket decides instead).
    fn take<'a>(&'a self, client: &'a str, limit: RateLimit) -> SharedTake<'a>;
}

/// One generation of the access file.
#[derive(Debug, Default)]
struct Policy {
    /// The keys of the clients that have one, in the order of `key_clients`.
    keys: KeySet,
    /// The access of each key client (built once: a request clones an `Arc`).
    key_clients: Vec<Arc<Access>>,
    /// Clients matched by an OAuth token's subject or scopes, in file order.
    token_clients: Vec<(Credential, Arc<AccessClient>)>,
    /// Every client, in file order.
    clients: Vec<Arc<AccessClient>>,
    /// How each client of `clients` authenticates (`key`, `keyEnv`, `keyFile`, `token`).
    kinds: Vec<&'static str>,
    /// The key files read (mcpd never serves them).
    key_files: Vec<PathBuf>,
}

/// The access file's policy, swappable at run time.
#[derive(Debug)]
pub struct AccessControl {
    /// The file last loaded.
    path: Mutex<PathBuf>,
    /// The policy in force.
    policy: RwLock<Arc<Policy>>,
    /// The calls of callers that are no client of the file (`client="-"`).
    anonymous: Arc<CallCounts>,
    /// Successful reloads (after the first load).
    reloads: AtomicU64,
    /// Why the last reload failed, until one succeeds.
    last_error: Mutex<Option<String>>,
    /// Whether the metrics collector is registered.
    installed: AtomicBool,
    /// The buckets shared with other instances (cluster mode), when there are.
    shared: OnceLock<Arc<dyn SharedRates>>,
}

impl AccessControl {
    /// Reads the access file at `path`.
    ///
    /// # Errors
    /// A message naming the file and what is wrong with it (see [`mcpd::auth::access::parse`]),
    /// or the key of a client that cannot be read.
    pub fn load(path: &Path) -> Result<Arc<AccessControl>, String> {
        let policy = read_policy(path, None)?;
        Ok(Arc::new(AccessControl {
            path: Mutex::new(path.to_owned()),
            policy: RwLock::new(Arc::new(policy)),
            anonymous: Arc::default(),
            reloads: AtomicU64::new(0),
            last_error: Mutex::new(None),
            installed: AtomicBool::new(false),
            shared: OnceLock::new(),
        }))
    }

    /// Reads the access file at `path` again and puts it in force; a file that cannot be used
    /// leaves the policy in force as it was. Call counts are kept for clients still named.
    ///
    /// # Errors
    /// Why the file cannot be used (the previous policy stays).
    pub fn reload(&self, path: &Path) -> Result<(), String> {
        let current = self.current();
        match read_policy(path, Some(&current)) {
            Ok(policy) => {
                *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
                *self.path.lock().unwrap_or_else(PoisonError::into_inner) = path.to_owned();
                *self.last_error.lock().unwrap_or_else(PoisonError::into_inner) = None;
                self.reloads.fetch_add(1, Relaxed);
                log::info!("access file {} reloaded", path.display());
                Ok(())
            }
            Err(error) => {
                log::warn!("access file not reloaded, the previous policy stays: {error}");
                *self.last_error.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Reloads the file last loaded ([`AccessControl::reload`]).
    ///
    /// # Errors
    /// As [`AccessControl::reload`].
    pub fn reload_current(&self) -> Result<(), String> {
        let path = self.path();
        self.reload(&path)
    }

    /// The file last loaded.
    pub fn path(&self) -> PathBuf {
        self.path.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The files this policy was read from: the access file and the key files it names (mcpd
    /// never serves them; see [`crate::tools::deny`]).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.path()];
        files.extend(self.current().key_files.iter().cloned());
        files
    }

    /// The clients whose patterns reach the project: some of `file_tools` among their tools, or
    /// a URI starting with `file_resources` (the project files' URI prefix, when they are
    /// resources) among their resources.
    pub fn clients_reaching(&self, file_tools: &[String], file_resources: Option<&str>) -> Vec<String> {
        let reaches = |client: &AccessClient| {
            file_tools.iter().any(|tool| client.tools.matches(tool))
                || file_resources.is_some_and(|prefix| client.resources.may_match_prefix(prefix))
        };
        self.current().clients.iter().filter(|c| reaches(c)).map(|c| c.name.to_string()).collect()
    }

    /// A warning for each virtual server a client is limited to that is not among `known` (the
    /// servers file's): such a client reaches nothing there until a reload declares it.
    pub fn unknown_servers(&self, known: &[String]) -> Vec<String> {
        let policy = self.current();
        let mut warnings = Vec::new();
        for client in &policy.clients {
            for server in client.servers.iter().flatten().filter(|s| !known.contains(s)) {
                warnings.push(format!(
                    "access file: client {:?} is limited to virtual server {server:?}, which the servers file does not declare",
                    client.name
                ));
            }
        }
        warnings
    }

    /// Whether some client's key is written in the access file itself.
    pub fn has_inline_keys(&self) -> bool {
        self.current().kinds.contains(&"key")
    }

    fn current(&self) -> Arc<Policy> {
        self.policy.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Keeps the clients' rate limits in `rates`, one bucket per client across the instances that
    /// share it (set once; later calls are ignored).
    pub fn share_rates(&self, rates: Arc<dyn SharedRates>) {
        let _ = self.shared.set(rates);
    }

    /// Takes one call from `client`'s rate limit: the shared bucket's when there is one and it
    /// answers, else the instance's own. `Err` with the wait when it is spent.
    pub(crate) async fn take_call(&self, client: &AccessClient) -> Result<(), Duration> {
        let Some(limit) = client.rate_limit else { return Ok(()) };
        if let Some(shared) = self.shared.get() {
            if let Some(taken) = shared.take(&client.name, limit).await {
                return taken;
            }
        }
        client.take_call(Instant::now())
    }

    /// The client whose key the request presents (`header` looks a header up by lower-case
    /// name), compared in constant time with every client's key.
    pub(crate) fn identify<'a>(&self, header: impl Fn(&str) -> Option<&'a str>) -> Option<Arc<Access>> {
        let policy = self.current();
        if policy.keys.is_empty() {
            return None;
        }
        policy.keys.identify(header).and_then(|index| policy.key_clients.get(index).cloned())
    }

    /// `access` (an admitted OAuth token's) limited to the first client whose subject or scopes
    /// the token matches; unchanged when none does.
    pub(crate) fn for_token(&self, access: Arc<Access>) -> Arc<Access> {
        let policy = self.current();
        match policy.token_clients.iter().find(|(credential, _)| credential.matches_token(&access.granted)) {
            Some((_, client)) => Arc::new(Access { client: Some(client.clone()), ..(*access).clone() }),
            None => access,
        }
    }

    /// Registers `mcpd_client_calls_total` with `metrics` and counts callers that are no client
    /// there (once; later calls do nothing).
    pub fn install(self: &Arc<Self>, metrics: &Metrics) {
        if self.installed.swap(true, Relaxed) {
            return;
        }
        metrics.set_anonymous_calls(self.anonymous.clone());
        metrics.add_collector(Box::new(ClientCalls(self.clone())));
    }

    /// The status of the client named `name` (as in [`AccessControl::status_json`]); `null`
    /// when the file in force names none.
    pub fn client_json(&self, name: &str) -> Value {
        let policy = self.current();
        let found = policy.clients.iter().zip(&policy.kinds).find(|(client, _)| *client.name == *name);
        found.map_or(Value::Null, |(client, kind)| client_status(client, kind))
    }

    /// The status JSON's `access` object: the file, its clients (name, how they authenticate,
    /// their patterns, rate limit and call counts — never a key), reloads and the last error.
    pub fn status_json(&self) -> Value {
        let policy = self.current();
        let clients: Vec<Value> =
            policy.clients.iter().zip(&policy.kinds).map(|(client, kind)| client_status(client, kind)).collect();
        json!({
            "file": self.path().display().to_string(),
            "clients": clients,
            "reloads": self.reloads.load(Relaxed),
            "lastError": *self.last_error.lock().unwrap_or_else(PoisonError::into_inner),
        })
    }
}

/// One client as the status shows it: name, how it authenticates, its patterns, rate limit,
/// shares, whether it is an operator, and its call counts — never a key.
fn client_status(client: &AccessClient, kind: &str) -> Value {
    let calls: serde_json::Map<String, Value> =
        ClientCallOutcome::ALL.iter().map(|o| (o.label().to_owned(), json!(client.calls.get(*o)))).collect();
    json!({
        "name": &*client.name,
        "auth": kind,
        "operator": client.operator,
        "servers": client.servers,
        "tools": client.tools.patterns(),
        "prompts": client.prompts.patterns(),
        "resources": client.resources.patterns(),
        "rateLimit": client.rate_limit.map(|l| json!({"perMinute": l.per_minute, "burst": l.burst})),
        "limits": {
            "sessions": client.limits.sessions,
            "streams": client.limits.streams,
            "inFlight": client.limits.in_flight,
        },
        "calls": calls,
    })
}

/// Reads and checks the access file at `path` into a policy; `previous` lends its call counts
/// to clients of the same name.
fn read_policy(path: &Path, previous: Option<&Policy>) -> Result<Policy, String> {
    let shown = path.display();
    let text = read_capped(path, MAX_ACCESS_FILE).map_err(|e| format!("cannot read access file {shown}: {e}"))?;
    let specs = access::parse(&text).map_err(|e| format!("access file {shown}: {e}"))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let now = Instant::now();
    let mut policy = Policy::default();
    let mut keys: Vec<(String, &str)> = Vec::new();
    for spec in &specs {
        let calls = previous
            .and_then(|p| p.clients.iter().find(|c| *c.name == *spec.name))
            .map_or_else(Arc::default, |c| c.calls.clone());
        let client = Arc::new(AccessClient::new(spec, calls, now));
        let kind = match &spec.credential {
            Credential::Token { .. } => {
                policy.token_clients.push((spec.credential.clone(), client.clone()));
                "token"
            }
            credential => {
                let key =
                    resolve_key(spec, base).map_err(|e| format!("access file {shown}: client {:?}: {e}", spec.name))?;
                if let Credential::KeyFile(file) = credential {
                    policy.key_files.push(base.join(file));
                }
                if let Some((_, other)) = keys.iter().find(|(k, _)| *k == key) {
                    return Err(format!(
                        "access file {shown}: clients {other:?} and {:?} have the same key",
                        spec.name
                    ));
                }
                keys.push((key, &spec.name));
                policy.key_clients.push(Arc::new(Access::of_client(client.clone())));
                match credential {
                    Credential::KeyEnv(_) => "keyEnv",
                    Credential::KeyFile(_) => "keyFile",
                    _ => "key",
                }
            }
        };
        policy.clients.push(client);
        policy.kinds.push(kind);
    }
    policy.keys = KeySet::new(keys.iter().map(|(k, _)| k.as_str()));
    Ok(policy)
}

/// The key of a key client: inline, from the environment, or from a file (relative to the
/// access file's directory), trimmed and not empty.
fn resolve_key(spec: &ClientSpec, base: &Path) -> Result<String, String> {
    let key = match &spec.credential {
        Credential::Key(key) => key.clone(),
        Credential::KeyEnv(var) => std::env::var(var).map_err(|_| format!("keyEnv {var} is not set"))?,
        Credential::KeyFile(file) => {
            let path = base.join(file);
            read_capped(&path, MAX_KEY_FILE).map_err(|e| format!("cannot read keyFile {}: {e}", path.display()))?
        }
        Credential::Token { .. } => return Err("a token client has no key".into()),
    };
    let key = key.trim();
    if key.is_empty() {
        return Err("its key is empty".into());
    }
    Ok(key.to_owned())
}

/// A text file's content, refused past `cap` bytes.
fn read_capped(path: &Path, cap: u64) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(cap + 1).read_to_string(&mut text).map_err(|e| e.to_string())?;
    if text.len() as u64 > cap {
        return Err(format!("larger than {cap} bytes"));
    }
    Ok(text)
}

/// `mcpd_client_calls_total{client, outcome}`, read at every scrape.
#[derive(Debug)]
struct ClientCalls(Arc<AccessControl>);

impl MoreMetrics for ClientCalls {
    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let policy = self.0.current();
        let mut family = encoder.encode_descriptor(
            "mcpd_client_calls",
            "tools/call by access-file client and outcome (client \"-\": every other caller)",
            None,
            MetricType::Counter,
        )?;
        let named = policy.clients.iter().map(|c| (&*c.name, &c.calls));
        for (name, calls) in named.chain([(ANONYMOUS, &self.0.anonymous)]) {
            for outcome in ClientCallOutcome::ALL {
                let labels = [("client", name), ("outcome", outcome.label())];
                ConstCounter::new(calls.get(outcome)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpd::auth::oauth::Granted;

    /// The client `granted` (a token's grant) would be.
    fn token_client(control: &AccessControl, granted: Granted) -> Option<Arc<str>> {
        let access = Arc::new(Access { granted, rules: Arc::default(), client: None, view: None });
        control.for_token(access).client.as_ref().map(|c| c.name.clone())
    }

    struct Dir(tempfile::TempDir);

    impl Dir {
        fn new() -> Dir {
            Dir(tempfile::tempdir().unwrap())
        }
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        }
    }

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn who(control: &AccessControl, key: &str) -> Option<String> {
        let bearer = format!("Bearer {key}");
        let pairs = [("authorization", bearer.as_str())];
        control.identify(headers(&pairs)).and_then(|a| a.client.as_ref().map(|c| c.name.to_string()))
    }

    #[test]
    fn keys_from_the_file_a_key_file_and_the_environment_identify_their_clients() {
        let dir = Dir::new();
        dir.write("bot.key", "  key-from-file\n");
        // The environment is the process's: read a variable every test run has.
        let path_var = std::env::var("PATH").unwrap();
        let path = dir.write(
            "access.json",
            r#"{"clients": [
                {"name": "a", "key": "key-a", "tools": ["x*"]},
                {"name": "b", "keyFile": "bot.key"},
                {"name": "c", "keyEnv": "PATH"},
                {"name": "sso", "subject": "alice"}
            ]}"#,
        );
        let control = AccessControl::load(&path).unwrap();
        assert_eq!(who(&control, "key-a").as_deref(), Some("a"));
        assert_eq!(who(&control, "key-from-file").as_deref(), Some("b"));
        assert_eq!(who(&control, path_var.trim()).as_deref(), Some("c"));
        assert_eq!(who(&control, "alice"), None, "a token client has no key");
        assert_eq!(who(&control, "nope"), None);
        let pairs = [("x-api-key", "key-a")];
        assert!(control.identify(headers(&pairs)).is_some(), "X-API-Key as --key takes it");
        let alice = Granted { subject: Some("alice".into()), scopes: vec![], issuer: None };
        assert_eq!(token_client(&control, alice).as_deref(), Some("sso"));
        assert_eq!(token_client(&control, Granted::default()), None);
        let status = control.status_json();
        assert_eq!(status["clients"][0]["auth"], "key");
        assert_eq!(status["clients"][1]["auth"], "keyFile");
        assert!(!status.to_string().contains("key-a"), "never a key in the status: {status}");
    }

    #[test]
    fn a_client_limited_to_an_undeclared_virtual_server_is_warned_about() {
        let dir = Dir::new();
        let path = dir.write(
            "access.json",
            r#"{"clients": [{"name": "a", "key": "ka", "servers": ["docs", "ops"]}, {"name": "b", "key": "kb"}]}"#,
        );
        let control = AccessControl::load(&path).unwrap();
        assert_eq!(
            control.unknown_servers(&["docs".to_owned()]),
            ["access file: client \"a\" is limited to virtual server \"ops\", which the servers file does not declare"]
        );
        assert_eq!(control.status_json()["clients"][0]["servers"], serde_json::json!(["docs", "ops"]));
        assert!(control.status_json()["clients"][1]["servers"].is_null());
    }

    #[test]
    fn keys_that_cannot_be_read_or_repeat_are_refused_with_the_client_named() {
        let dir = Dir::new();
        let missing_env = dir.write("e.json", r#"{"clients": [{"name": "a", "keyEnv": "MCPD_ACCESS_TEST_UNSET"}]}"#);
        let error = AccessControl::load(&missing_env).unwrap_err();
        assert_eq!(
            error,
            format!("access file {}: client \"a\": keyEnv MCPD_ACCESS_TEST_UNSET is not set", missing_env.display())
        );
        let missing_file = dir.write("f.json", r#"{"clients": [{"name": "a", "keyFile": "none.key"}]}"#);
        let error = AccessControl::load(&missing_file).unwrap_err();
        assert!(error.contains("client \"a\": cannot read keyFile") && error.contains("none.key"), "{error}");
        let same = dir.write("s.json", r#"{"clients": [{"name": "a", "key": "k"}, {"name": "b", "key": " k"}]}"#);
        let error = AccessControl::load(&same).unwrap_err();
        assert_eq!(error, format!("access file {}: clients \"a\" and \"b\" have the same key", same.display()));
        let error = AccessControl::load(&dir.0.path().join("absent.json")).unwrap_err();
        assert!(error.starts_with("cannot read access file"), "{error}");
    }

    #[test]
    fn a_reload_swaps_the_policy_only_when_the_file_is_good_and_keeps_counts_by_name() {
        let dir = Dir::new();
        let path = dir.write("access.json", r#"{"clients": [{"name": "a", "key": "ka", "tools": ["one"]}]}"#);
        let control = AccessControl::load(&path).unwrap();
        let a = control.identify(headers(&[("authorization", "Bearer ka")])).unwrap();
        a.client.as_ref().unwrap().calls.add(ClientCallOutcome::Ok);
        assert!(a.may_call("one") && !a.may_call("two"));
        dir.write("access.json", r#"{"clients": [{"name": "a", "key": "ka", "tools": ["two"]}]}"#);
        control.reload(&path).unwrap();
        let a = control.identify(headers(&[("authorization", "Bearer ka")])).unwrap();
        assert!(!a.may_call("one") && a.may_call("two"));
        assert_eq!(a.client.as_ref().unwrap().calls.get(ClientCallOutcome::Ok), 1, "counts survive a reload");
        dir.write("access.json", r#"{"clients": [{"name": "a", "key": "ka", "tools": ["three"]}"#);
        let error = control.reload(&path).unwrap_err();
        assert!(error.contains("not valid JSON"), "{error}");
        let a = control.identify(headers(&[("authorization", "Bearer ka")])).unwrap();
        assert!(a.may_call("two") && !a.may_call("three"), "the previous policy stays");
        let status = control.status_json();
        assert_eq!(status["reloads"], 1);
        assert!(status["lastError"].as_str().unwrap().contains("not valid JSON"));
    }
}
