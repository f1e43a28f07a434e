//! The authorization server of the resource-server tests: npm `oidc-provider` (pinned; installed
//! by `scripts/setup-oidc.sh` into `${MCPD_CACHE:-<repo>/.cache}/oidc-provider`), started through
//! `actors/tests/interop/oidc_provider.mjs` on 127.0.0.1 with signing keys in a temporary
//! directory (its own key `k1.pem`, a `foreign.pem` it never sees and its `public.pem`), so the
//! tests can mint good and bad tokens of their own beside the ones it issues.
//!
//! When it cannot be provisioned the tests fail, unless `MCPD_SKIP_INTEROP=1`, which makes them
//! skip with a notice.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;

use super::interop_servers::{node, ScriptServer};
use super::{interop_script, run_setup_script, workspace_root};

/// Runs `scripts/setup-oidc.sh` once per test process; oidc-provider's entry.
fn entry() -> Result<PathBuf, String> {
    static ENTRY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ENTRY.get_or_init(|| run_setup_script("setup-oidc.sh", &[("NODE", node().as_os_str())])).clone()
}

/// A running oidc-provider; killed (and its keys removed) when dropped.
pub(crate) struct Provider {
    server: ScriptServer,
    keys: tempfile::TempDir,
}

/// Starts the provider; `None` (with a notice) when it cannot be provisioned and
/// `MCPD_SKIP_INTEROP=1`, a panic otherwise.
pub(crate) fn spawn_provider() -> Option<Provider> {
    let entry = match entry() {
        Ok(entry) => entry,
        Err(reason) if std::env::var("MCPD_SKIP_INTEROP").as_deref() == Ok("1") => {
            eprintln!("NOTICE: skipping oidc-provider test (MCPD_SKIP_INTEROP=1): {reason}");
            return None;
        }
        Err(reason) => panic!("cannot provision oidc-provider (set MCPD_SKIP_INTEROP=1 to skip): {reason}"),
    };
    let keys = tempfile::tempdir().expect("a key directory");
    let mut cmd = Command::new(node());
    cmd.arg(interop_script("oidc_provider.mjs"))
        .arg(keys.path())
        .env("OIDC_PROVIDER_ENTRY", entry)
        .env_remove("NODE_OPTIONS")
        .env_remove("DEBUG")
        .current_dir(workspace_root());
    Some(Provider { server: ScriptServer::spawn(cmd, "oidc-provider"), keys })
}

impl Provider {
    /// The issuer (`http://127.0.0.1:PORT`).
    pub(crate) fn issuer(&self) -> &str {
        self.server.url()
    }

    /// A key file the fixture wrote: `k1.pem` (its signing key), `foreign.pem`, `public.pem`.
    pub(crate) fn key(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.keys.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The key-set requests it has logged so far.
    pub(crate) fn jwks_requests(&self) -> usize {
        self.server.output().iter().filter(|l| l.trim() == "JWKS").count()
    }

    /// Its output, for assertion messages.
    pub(crate) fn transcript(&self) -> String {
        self.server.transcript()
    }

    /// An access token from the client_credentials grant of `client` (`cc-client` gets JWTs,
    /// `opaque-client` opaque tokens) for `resource` with `scope`.
    pub(crate) async fn token(&self, client: &str, scope: &str, resource: &str) -> String {
        let secret = match client {
            "cc-client" => "cc-secret",
            "opaque-client" => "opaque-secret",
            other => panic!("no such test client {other}"),
        };
        let http = awc::Client::builder().timeout(Duration::from_secs(30)).finish();
        let form = [("grant_type", "client_credentials"), ("scope", scope), ("resource", resource)];
        let mut response = http
            .post(format!("{}/token", self.issuer()))
            .basic_auth(client, secret)
            .send_form(&form)
            .await
            .expect("the token endpoint answers");
        let body: Value = response.json().await.expect("a JSON token response");
        assert_eq!(response.status().as_u16(), 200, "token request failed: {body}\n{}", self.transcript());
        body["access_token"].as_str().unwrap_or_else(|| panic!("no access_token: {body}")).to_owned()
    }

    /// A token signed (RS256) with the key in `pem_file`, header `kid`, claims `claims`.
    pub(crate) fn mint(&self, pem_file: &str, kid: &str, claims: &Value) -> String {
        let key = EncodingKey::from_rsa_pem(&self.key(pem_file)).expect("an RSA PEM key");
        let header = Header { kid: Some(kid.to_owned()), ..Header::new(Algorithm::RS256) };
        jsonwebtoken::encode(&header, claims, &key).expect("a token")
    }
}
