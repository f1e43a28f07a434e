//! The conformance client's OAuth scenarios (`auth/*`): the link's own OAuth flow with a
//! [`HeadlessAgent`] (the suite's authorization server approves every request and answers with a
//! redirect), pre-registered or client-credentials data from `MCP_CONFORMANCE_CONTEXT`, and the
//! Client ID Metadata Document URL the suite expects. Each scenario lists the tools and calls the
//! suite's `test-tool`: enough requests for the step-up and authorization-server migration
//! scenarios to challenge the client again.

use std::sync::Arc;

use mcpd_actors::client::oauth::{Grant, HeadlessAgent, MemoryStore, OAuthConfig, Registration};
use serde_json::{Map, Value};

use super::{require_tool, Failure, Run};

/// The Client ID Metadata Document URL the suite's `auth/basic-cimd` looks for (a client hosts
/// its document at such a URL; the suite does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The `auth/*` scenarios this client runs.
pub(crate) const SCENARIOS: &[&str] = &[
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

fn text(context: &Value, key: &str) -> Option<String> {
    context.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The OAuth configuration of an `auth/*` scenario (`None` for the others).
pub(crate) fn config(scenario: &str, context: &Value) -> Result<Option<OAuthConfig>, Failure> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let grant = match scenario {
        "auth/client-credentials-basic" => Grant::ClientSecret,
        "auth/client-credentials-jwt" => Grant::PrivateKeyJwt {
            private_key_pem: text(context, "private_key_pem")
                .ok_or("MCP_CONFORMANCE_CONTEXT has no private_key_pem")?,
            algorithm: text(context, "signing_algorithm").unwrap_or_else(|| "ES256".into()),
        },
        _ => Grant::AuthorizationCode,
    };
    let registration = Registration {
        client_id: text(context, "client_id"),
        client_secret: text(context, "client_secret"),
        client_metadata_url: Some(CLIENT_METADATA_URL.into()),
        client_name: "mcpd-conformance-client".into(),
    };
    Ok(Some(OAuthConfig {
        store: Arc::new(MemoryStore::default()),
        user_agent: Some(Arc::new(HeadlessAgent::new())),
        registration,
        grant,
        scope: None,
    }))
}

/// The steps of every `auth/*` scenario: list the tools, call `test-tool`.
pub(crate) async fn run(run: &Run) -> Result<(), Failure> {
    let tools = run.list_tools().await?;
    require_tool(&tools, "test-tool")?;
    run.call("test-tool", Map::new()).await.map(drop)
}
