//! `mcpd login` and `mcpd logout`: a person authorizes mcpd at a remote's authorization server
//! (the OAuth authorization-code flow, approved in a browser, the answer arriving on a loopback
//! listener), and the credentials land in the credentials file that `mcpd call`, `mcpd tools`
//! and the gateway use; or forgets them.
//!
//! Exit codes as for the client commands: 0 done, 2 a failure (one line on stderr).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Actor as _;
use clap::Args;
use mcpd::client::config::ConfigDocument;
use mcpd::client::oauth::discovery::canonical_resource;
use mcpd::model::{Implementation, Tool};
use serde_json::json;

use mcpd_actors::client::oauth::{
    default_credentials_path, CredentialStore, Credentials, FileStore, Grant, LoopbackAgent, OAuthConfig, Registration,
};
use mcpd_actors::client::{ClientConnection, ClientHandlers, LinkConfig, List, StopClientConnection};
use mcpd_actors::ActorCounts;

use crate::failure::{client_failure, failure, Failure};

/// `mcpd login`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LoginArgs {
    /// The server's MCP endpoint URL.
    pub(crate) url: String,
    /// The credentials file (default: $XDG_CONFIG_HOME/mcpd/credentials.json, else
    /// ~/.config/mcpd/credentials.json).
    #[arg(long, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
    /// A client id registered with the authorization server beforehand (default: register).
    #[arg(long, value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// A file holding that client's secret.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    pub(crate) client_secret_file: Option<PathBuf>,
    /// The scopes to ask for, space-separated (default: what the server asks for).
    #[arg(long, value_name = "S")]
    pub(crate) scope: Option<String>,
    /// How long to wait for the browser to come back, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub(crate) wait: u64,
    /// Do not start a browser; only print the URL.
    #[arg(long)]
    pub(crate) no_browser: bool,
}

/// `mcpd logout`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LogoutArgs {
    /// The server's MCP endpoint URL.
    pub(crate) url: String,
    /// The credentials file (as for `mcpd login`).
    #[arg(long, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
}

/// The credentials file: `explicit`, else the default under the user's config directory.
///
/// # Errors
/// Neither `--credentials` nor a usable `XDG_CONFIG_HOME` / `HOME`.
pub(crate) fn credentials_path(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    explicit.or_else(|| default_credentials_path(xdg.as_deref(), home.as_deref())).ok_or_else(|| {
        "no place for the credentials file: set HOME or XDG_CONFIG_HOME, or give --credentials FILE".to_owned()
    })
}

/// The store `mcpd login` hands the flow: saves go to the file, but only what this login saved
/// is loaded, so a login always asks the person again (the old entry stays until the new one
/// replaces it) and the issuer it ended at is known.
#[derive(Debug)]
struct FreshLogin {
    file: Arc<FileStore>,
    saved: Mutex<Vec<Credentials>>,
}

impl FreshLogin {
    fn issuer(&self) -> Option<String> {
        let saved = self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        saved.last().map(|c| c.issuer.clone())
    }
}

impl CredentialStore for FreshLogin {
    fn load(&self, resource: &str, issuer: &str) -> Option<Credentials> {
        let saved = self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        saved.iter().find(|c| c.resource == resource && c.issuer == issuer).cloned()
    }

    fn save(&self, credentials: &Credentials) -> Result<(), String> {
        self.file.save(credentials)?;
        let mut saved = self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        saved.retain(|c| !(c.resource == credentials.resource && c.issuer == credentials.issuer));
        saved.push(credentials.clone());
        Ok(())
    }

    fn remove(&self, resource: &str) -> Result<usize, String> {
        self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|c| c.resource != resource);
        self.file.remove(resource)
    }
}

/// A checked MCP endpoint URL (the same rules as a configured server's).
fn checked_url(url: &str) -> Result<String, Failure> {
    let document = ConfigDocument::from_value(json!({ "url": url })).map_err(|e| failure(e.to_string()))?;
    document.resolve().map(|config| config.url).map_err(|e| failure(e.to_string()))
}

/// A secret file's content without surrounding white space; errors never quote it.
fn read_secret(path: &std::path::Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| failure(format!("cannot read {}: {e}", path.display())))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(failure(format!("{} is empty", path.display())));
    }
    Ok(secret.to_owned())
}

/// Runs `mcpd login`; the line to print.
///
/// # Errors
/// A [`Failure`] with exit code 2.
pub(crate) async fn login(args: LoginArgs) -> Result<String, Failure> {
    let url = checked_url(&args.url)?;
    let file = Arc::new(FileStore::new(credentials_path(args.credentials).map_err(failure)?));
    // A credentials file that cannot be used is reported before anyone is sent to a browser.
    file.entries().map_err(failure)?;
    let client_secret = args.client_secret_file.as_deref().map(read_secret).transpose()?;
    let wait = Duration::from_secs(args.wait.max(1));
    let mut agent = LoopbackAgent::bind()
        .map_err(|e| failure(format!("cannot listen on 127.0.0.1 for the browser's answer: {e}")))?
        .with_timeout(wait);
    if args.no_browser {
        agent = agent.with_browser(None);
    }
    let store = Arc::new(FreshLogin { file, saved: Mutex::new(Vec::new()) });
    let oauth = OAuthConfig {
        store: store.clone(),
        user_agent: Some(Arc::new(agent)),
        registration: Registration {
            client_id: args.client_id,
            client_secret,
            client_metadata_url: None,
            client_name: "mcpd".into(),
        },
        grant: Grant::AuthorizationCode,
        scope: args.scope,
    };
    let config = LinkConfig {
        name: "login".into(),
        url: url.clone(),
        sse: false,
        pin: None,
        headers: Vec::new(),
        // The request that triggers the flow waits for the person too.
        timeout: wait + Duration::from_secs(30),
        command: None,
        list_limits: Default::default(),
        task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
        oauth: Some(oauth),
    };
    let connection = ClientConnection::new(
        config,
        ClientHandlers::default(),
        Implementation::new("mcpd", env!("CARGO_PKG_VERSION")),
        Arc::new(ActorCounts::new()),
    )
    .start();
    // Listing the tools needs authorization when anything does.
    let outcome = connection.send(List::<Tool>::new()).await;
    let _ = connection.send(StopClientConnection).await;
    match outcome {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(client_failure(e)),
        Err(_) => return Err(failure("the connection closed before the login completed")),
    }
    Ok(match store.issuer() {
        Some(issuer) => format!("logged in to {url} (issuer {issuer})"),
        None => format!("{url} did not ask for authorization: nothing was stored"),
    })
}

/// A resource identifier compared loosely: its canonical form (the one credentials are stored
/// under: scheme and host in lowercase, no default port, no fragment) without a trailing `/`.
fn loose(resource: &str) -> String {
    canonical_resource(resource.trim()).trim_end_matches('/').to_owned()
}

/// Runs `mcpd logout`; the line to print. Every stored resource that is the URL (compared
/// loosely, see [`loose`]) is removed, at every issuer.
///
/// # Errors
/// A [`Failure`] with exit code 2.
pub(crate) fn logout(args: LogoutArgs) -> Result<String, Failure> {
    let store = FileStore::new(credentials_path(args.credentials).map_err(failure)?);
    let mut stored: Vec<String> = store.entries().map_err(failure)?.into_iter().map(|c| c.resource).collect();
    stored.sort();
    stored.dedup();
    let wanted = loose(&args.url);
    let mut removed = 0;
    for resource in stored.iter().filter(|r| loose(r) == wanted) {
        removed += store.remove(resource).map_err(failure)?;
    }
    Ok(match removed {
        0 => {
            // Name what is there, in case the server declared its resource differently.
            let shown: Vec<String> = stored.iter().map(|r| r.chars().filter(|c| !c.is_control()).collect()).collect();
            match shown.len() {
                0 => format!("no credentials stored for {} in {}", args.url, store.path().display()),
                _ => format!(
                    "no credentials stored for {} in {} (it has: {})",
                    args.url,
                    store.path().display(),
                    shown.join(", ")
                ),
            }
        }
        1 => format!("logged out of {}: removed 1 stored credential entry", args.url),
        n => format!("logged out of {}: removed {n} stored credential entries", args.url),
    })
}

#[cfg(test)]
mod tests {
    use super::loose;

    #[test]
    fn resources_compare_loosely_by_case_default_port_and_trailing_slash() {
        let same = ["https://mcp.example.com/mcp", "HTTPS://MCP.Example.com:443/mcp/", "https://mcp.example.com/mcp#x"];
        for url in same {
            assert_eq!(loose(url), "https://mcp.example.com/mcp", "{url}");
        }
        assert_eq!(loose("http://h:80"), loose("http://h/"));
        assert_ne!(loose("https://h/MCP"), loose("https://h/mcp"), "paths keep their case");
        assert_ne!(loose("https://h:8443/mcp"), loose("https://h/mcp"));
        assert_ne!(loose("http://h/mcp"), loose("https://h/mcp"));
        assert_ne!(loose("https://h/mcp?a=1"), loose("https://h/mcp"));
    }
}
