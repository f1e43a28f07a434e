//! mcpd as an OAuth 2.1 resource server against a real, independent authorization server
//! (npm `oidc-provider`, `support::oidc`): the tokens it issues are accepted; expired,
//! wrong-audience, wrong-issuer, foreign-key, `alg: none`, HMAC-with-the-public-key, unknown-`kid`
//! and garbage tokens are 401 `invalid_token`; a missing scope is 403 `insufficient_scope`;
//! per-tool scopes filter `tools/list`; `/metrics` counts outcomes by reason; an unknown `kid`
//! refreshes the key set at most once per interval; opaque tokens are introspected; no token or
//! secret reaches the log.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use mcpd::auth::oauth::{IntrospectionSettings, OAuthSettings, Secret};
use mcpd::auth::scopes::ToolScopes;
use mcpd::auth::KeySet;
use serde_json::{json, Value};

use crate::support::oidc::{spawn_provider, Provider};
use crate::support::process::{mcpd_command, HttpChild};
use crate::support::server::*;

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() as i64
}

/// OAuth settings trusting `provider`.
/// OAuth settings trusting `provider`, where a token granting `mcp` is an operator (these tests
/// read `/status` and `/metrics` with their tokens).
fn settings(provider: &Provider) -> OAuthSettings {
    OAuthSettings {
        issuers: vec![provider.issuer().to_owned()],
        operator_scope: "mcp".into(),
        ..OAuthSettings::default()
    }
}

async fn start_oauth(settings: OAuthSettings) -> TestServer {
    start_with(test_catalog(), Default::default(), |c| c.oauth = Some(settings)).await
}

/// `tools/call echo` on the stateless wire with `authorization` (if any).
async fn call_echo(server: &TestServer, authorization: Option<&str>) -> Reply {
    let body = modern_request(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let mut headers = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let bearer = authorization.map(|t| format!("Bearer {t}"));
    if let Some(bearer) = bearer.as_deref() {
        headers.push(("authorization", bearer));
    }
    post(server, &headers, &body).await
}

async fn list_tools(server: &TestServer, token: &str) -> Vec<String> {
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let reply = post(server, &[("mcp-protocol-version", "2025-11-25"), ("authorization", &bearer)], &body).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let tools = reply.json()["result"]["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

fn challenge(reply: &Reply) -> &str {
    reply.header("www-authenticate").unwrap_or_else(|| panic!("no WWW-Authenticate ({})", reply.status))
}

async fn status(server: &TestServer, token: &str) -> Value {
    send("GET", &server.url("/status"), &[("authorization", &format!("Bearer {token}"))], Vec::new()).await.json()
}

/// Tokens the provider issues for this resource are accepted on every wire; without one the
/// answer is 401 with the RFC 9728 challenge, and the metadata document names the provider.
#[actix_rt::test]
async fn tokens_the_provider_issues_are_accepted() {
    let Some(provider) = spawn_provider() else { return };
    let server = start_oauth(OAuthSettings { scopes: vec!["mcp".into()], ..settings(&provider) }).await;
    let resource = server.url("/mcp");
    let metadata_url = server.url("/.well-known/oauth-protected-resource/mcp");

    let missing = call_echo(&server, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(challenge(&missing), format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\""));

    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let doc = send("GET", &server.url(path), &[], Vec::new()).await;
        assert_eq!(doc.status, 200, "{path} is open to every caller");
        let doc = doc.json();
        assert_eq!(doc["resource"], resource);
        assert_eq!(doc["authorization_servers"], json!([provider.issuer()]));
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    let token = provider.token("cc-client", "mcp tools:admin", &resource).await;
    let ok = call_echo(&server, Some(&token)).await;
    assert_eq!(ok.status, 200, "{}\n{}", String::from_utf8_lossy(&ok.body), provider.transcript());
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hi");
    let legacy = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let bearer = format!("Bearer {token}");
    let reply = post(&server, &[("mcp-protocol-version", "2025-06-18"), ("authorization", &bearer)], &legacy).await;
    assert_eq!(reply.status, 200);

    let status = status(&server, &token).await;
    assert_eq!(status["authRequired"], true);
    assert_eq!(status["oauth"]["issuers"], json!([provider.issuer()]));
    assert_eq!(status["oauth"]["resource"], resource);
    assert_eq!(status["oauth"]["scopes"], json!(["mcp"]));
}

/// Every kind of bad token is 401 `invalid_token`, counted by its reason; the one signed with
/// the provider's own key and carrying wrong claims is refused for the claim.
#[actix_rt::test]
async fn bad_tokens_are_invalid_token_and_counted_by_reason() {
    let Some(provider) = spawn_provider() else { return };
    let server = start_oauth(settings(&provider)).await;
    let resource = server.url("/mcp");
    let good_claims = |exp: i64| json!({"iss": provider.issuer(), "aud": resource, "exp": exp, "scope": "mcp"});
    // Make the key set known first (one fetch), so that the bad ones are judged against it.
    let good = provider.mint("k1.pem", "k1", &good_claims(now() + 300));
    assert_eq!(call_echo(&server, Some(&good)).await.status, 200, "{}", provider.transcript());

    let other_resource = provider.token("cc-client", "mcp", "http://127.0.0.1:1/mcp").await;
    let enc = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let unsigned = format!("{}.{}.", enc(json!({"alg": "none", "kid": "k1"})), enc(good_claims(now() + 300)));
    let hmac = {
        let header = jsonwebtoken::Header {
            kid: Some("k1".into()),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256)
        };
        let key = jsonwebtoken::EncodingKey::from_secret(&provider.key("public.pem"));
        jsonwebtoken::encode(&header, &good_claims(now() + 300), &key).expect("an HS256 token")
    };
    let mut wrong_issuer = good_claims(now() + 300);
    wrong_issuer["iss"] = json!("http://127.0.0.1:1");
    let cases = [
        ("expired", provider.mint("k1.pem", "k1", &good_claims(now() - 3600)), "expired"),
        ("wrong audience", other_resource, "wrong_audience"),
        ("wrong issuer", provider.mint("k1.pem", "k1", &wrong_issuer), "wrong_issuer"),
        ("foreign key", provider.mint("foreign.pem", "k1", &good_claims(now() + 300)), "bad_signature"),
        ("alg none", unsigned, "disallowed_alg"),
        ("HS256 keyed with the public key", hmac, "disallowed_alg"),
        ("unknown kid", provider.mint("foreign.pem", "k9", &good_claims(now() + 300)), "unknown_kid"),
        ("garbage", "not-a-token".to_owned(), "malformed"),
    ];
    for (what, token, _) in &cases {
        let reply = call_echo(&server, Some(token)).await;
        assert_eq!(reply.status, 401, "{what}: {}", String::from_utf8_lossy(&reply.body));
        let challenge = challenge(&reply);
        assert!(challenge.starts_with("Bearer resource_metadata=\""), "{what}: {challenge}");
        assert!(challenge.contains("error=\"invalid_token\""), "{what}: {challenge}");
        assert_eq!(reply.json()["error"]["code"], -32001, "{what}");
    }
    let metrics = metrics_text_with(&server, &good).await;
    for reason in ["expired", "wrong_audience", "wrong_issuer", "bad_signature", "unknown_kid", "malformed"] {
        let count = metric(&metrics, &format!("mcpd_auth_outcomes_total{{reason=\"{reason}\"}}"));
        assert_eq!(count, Some(1.0), "{reason}:\n{metrics}");
    }
    assert_eq!(metric(&metrics, "mcpd_auth_outcomes_total{reason=\"disallowed_alg\"}"), Some(2.0), "{metrics}");
    // The good token, and the scrape itself.
    assert_eq!(metric(&metrics, "mcpd_auth_outcomes_total{reason=\"ok\"}"), Some(2.0), "{metrics}");
}

async fn metrics_text_with(server: &TestServer, token: &str) -> String {
    let reply =
        send("GET", &server.url("/metrics"), &[("authorization", &format!("Bearer {token}"))], Vec::new()).await;
    String::from_utf8(reply.body).expect("metrics are text")
}

/// A token without a required scope is 403 `insufficient_scope` naming it; per-tool scopes hide
/// tools from `tools/list` and refuse their calls with the scopes to ask for.
#[actix_rt::test]
async fn scopes_are_required_and_per_tool_scopes_filter_the_tools() {
    let Some(provider) = spawn_provider() else { return };
    let rules =
        ToolScopes::new(vec![("sleep".into(), vec!["tools:admin".into()]), ("f*".into(), vec!["files:write".into()])]);
    let server =
        start_oauth(OAuthSettings { scopes: vec!["mcp".into()], tool_scopes: rules, ..settings(&provider) }).await;
    let resource = server.url("/mcp");

    let no_mcp = provider.token("cc-client", "tools:admin", &resource).await;
    let reply = call_echo(&server, Some(&no_mcp)).await;
    assert_eq!(reply.status, 403);
    assert!(challenge(&reply).contains("scope=\"mcp\", error=\"insufficient_scope\""), "{}", challenge(&reply));

    let basic = provider.token("cc-client", "mcp", &resource).await;
    let tools = list_tools(&server, &basic).await;
    assert!(tools.contains(&"echo".to_owned()) && !tools.contains(&"sleep".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"fail".to_owned()), "{tools:?}");
    let sleep = modern_request(4, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}}));
    let bearer = format!("Bearer {basic}");
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "sleep"),
        ("authorization", &bearer),
    ];
    let refused = post(&server, &headers, &sleep).await;
    assert_eq!(refused.status, 403, "{}", String::from_utf8_lossy(&refused.body));
    assert!(
        challenge(&refused).contains("scope=\"mcp tools:admin\", error=\"insufficient_scope\""),
        "{}",
        challenge(&refused)
    );
    assert_eq!(refused.json()["id"], 4);

    let admin = provider.token("cc-client", "mcp tools:admin", &resource).await;
    let tools = list_tools(&server, &admin).await;
    assert!(tools.contains(&"sleep".to_owned()) && !tools.contains(&"fail".to_owned()), "{tools:?}");
    let bearer = format!("Bearer {admin}");
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "sleep"),
        ("authorization", &bearer),
    ];
    assert_eq!(post(&server, &headers, &sleep).await.status, 200);
    let metrics = metrics_text_with(&server, &admin).await;
    assert_eq!(metric(&metrics, "mcpd_auth_outcomes_total{reason=\"insufficient_scope\"}"), Some(2.0), "{metrics}");
}

/// An unknown `kid` fetches the key set again at most once per interval: within 30 s, never;
/// with no interval, once per such token. Concurrent first requests share one fetch.
#[actix_rt::test]
async fn the_unknown_kid_refresh_is_rate_limited_and_fetches_are_shared() {
    let Some(provider) = spawn_provider() else { return };
    let server = start_oauth(settings(&provider)).await;
    let claims = json!({"iss": provider.issuer(), "aud": server.url("/mcp"), "exp": now() + 300, "scope": "mcp"});
    let good = provider.mint("k1.pem", "k1", &claims);
    let first = futures_util::future::join_all((0..8).map(|_| call_echo(&server, Some(&good)))).await;
    assert!(first.iter().all(|r| r.status == 200));
    let fetches = |status: &Value| status["oauth"]["jwksFetches"][provider.issuer()].as_u64();
    assert_eq!(fetches(&status(&server, &good).await), Some(1), "8 concurrent requests, one fetch");
    let unknown = provider.mint("foreign.pem", "rotated", &claims);
    for _ in 0..5 {
        assert_eq!(call_echo(&server, Some(&unknown)).await.status, 401);
    }
    assert_eq!(fetches(&status(&server, &good).await), Some(1), "within the interval: no refresh");

    let eager = start_oauth(OAuthSettings { jwks_refresh: Duration::ZERO, ..settings(&provider) }).await;
    let claims = json!({"iss": provider.issuer(), "aud": eager.url("/mcp"), "exp": now() + 300, "scope": "mcp"});
    let good = provider.mint("k1.pem", "k1", &claims);
    let unknown = provider.mint("foreign.pem", "rotated", &claims);
    assert_eq!(call_echo(&eager, Some(&good)).await.status, 200);
    for _ in 0..3 {
        assert_eq!(call_echo(&eager, Some(&unknown)).await.status, 401);
    }
    assert_eq!(fetches(&status(&eager, &good).await), Some(4), "one refresh per unknown kid");
    eventually_jwks(&provider, 5).await;
}

async fn eventually_jwks(provider: &Provider, n: usize) {
    crate::support::eventually::eventually(
        "the provider logs its key-set requests",
        Duration::from_secs(10),
        async || (provider.jwks_requests() == n).then_some(()),
    )
    .await;
}

/// Opaque tokens are introspected (RFC 7662) with the configured client; an unknown one is
/// refused as inactive.
#[actix_rt::test]
async fn opaque_tokens_are_introspected() {
    let Some(provider) = spawn_provider() else { return };
    let introspection = IntrospectionSettings {
        url: format!("{}/token/introspection", provider.issuer()),
        client_id: "introspector".into(),
        client_secret: Secret::new("introspector-secret"),
        cache: Duration::from_secs(60),
    };
    let server = start_oauth(OAuthSettings { introspection: Some(introspection), ..settings(&provider) }).await;
    let opaque = provider.token("opaque-client", "mcp", &server.url("/mcp")).await;
    assert!(!opaque.contains('.'), "an opaque token: {opaque}");
    let reply = call_echo(&server, Some(&opaque)).await;
    assert_eq!(reply.status, 200, "{}\n{}", String::from_utf8_lossy(&reply.body), provider.transcript());
    let reply = call_echo(&server, Some("made-up-opaque-token")).await;
    assert_eq!(reply.status, 401);
    assert!(challenge(&reply).contains("invalid_token"));
    let metrics = metrics_text_with(&server, &opaque).await;
    assert_eq!(metric(&metrics, "mcpd_auth_outcomes_total{reason=\"introspection_inactive\"}"), Some(1.0), "{metrics}");
}

/// API keys and OAuth together: either credential admits; a wrong key is asked for a token.
#[actix_rt::test]
async fn api_keys_and_tokens_both_admit() {
    let Some(provider) = spawn_provider() else { return };
    let oauth = settings(&provider);
    let server = start_with(test_catalog(), Default::default(), |c| {
        c.oauth = Some(oauth);
        c.keys = KeySet::new(["k3y"]);
    })
    .await;
    assert_eq!(call_echo(&server, Some("k3y")).await.status, 200);
    let token = provider.token("cc-client", "mcp", &server.url("/mcp")).await;
    assert_eq!(call_echo(&server, Some(&token)).await.status, 200);
    let wrong = call_echo(&server, Some("k3")).await;
    assert_eq!(wrong.status, 401);
    assert!(challenge(&wrong).contains("resource_metadata="));
}

/// An issuer that cannot be reached is a prompt 503 with an exact message, never a hang.
#[actix_rt::test]
async fn an_unreachable_issuer_is_a_prompt_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let issuer = format!("http://127.0.0.1:{}", closed.local_addr().expect("addr").port());
    drop(closed);
    let oauth = OAuthSettings {
        issuers: vec![issuer.clone()],
        fetch_timeout: Duration::from_secs(2),
        ..OAuthSettings::default()
    };
    let server = start_oauth(oauth).await;
    let enc = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let token = format!("{}.{}.c2ln", enc(json!({"alg": "RS256", "kid": "k1"})), enc(json!({"iss": issuer})));
    let started = std::time::Instant::now();
    let reply = call_echo(&server, Some(&token)).await;
    assert_eq!(reply.status, 503, "{}", String::from_utf8_lossy(&reply.body));
    assert!(started.elapsed() < Duration::from_secs(10));
    let message = reply.json()["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(message, "Service unavailable: the authorization server could not be reached; try again later");
}

/// The binary with `--auth-issuer` and introspection: a request with a token, a bad token and
/// the secret file at debug level never put the token or the secret in the log.
#[actix_rt::test]
async fn no_token_or_secret_reaches_the_log() {
    let Some(provider) = spawn_provider() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, "introspector-secret\n").expect("write secret");
    let mut cmd = mcpd_command();
    cmd.env("RUST_LOG", "debug").args(["--auth-issuer", provider.issuer(), "--auth-scope", "mcp"]);
    cmd.args(["--auth-operator-scope", "mcp"]);
    cmd.args(["--auth-introspection", &format!("{}/token/introspection", provider.issuer())]);
    cmd.args(["--auth-client-id", "introspector", "--auth-client-secret-file"]).arg(&secret_file);
    let child = HttpChild::spawn_command(cmd);
    let resource = child.url();
    let jwt = provider.token("cc-client", "mcp", &resource).await;
    let opaque = provider.token("opaque-client", "mcp", &resource).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}});
    for token in [jwt.as_str(), opaque.as_str(), "garbage-token-value"] {
        let reply = send(
            "POST",
            &resource,
            &[("content-type", "application/json"), ("authorization", &format!("Bearer {token}"))],
            serde_json::to_vec(&body).expect("json"),
        )
        .await;
        assert_eq!(
            reply.status,
            if token.starts_with("garbage") { 401 } else { 200 },
            "{}",
            child.stderr_lines().join("\n")
        );
    }
    let status = send(
        "GET",
        &child.url().replace("/mcp", "/status"),
        &[("authorization", &format!("Bearer {jwt}"))],
        Vec::new(),
    )
    .await;
    let status_text = String::from_utf8_lossy(&status.body).into_owned();
    assert!(status_text.contains("\"introspector\"") && !status_text.contains("introspector-secret"), "{status_text}");
    let log =
        crate::support::eventually::eventually("the log shows the refusal", Duration::from_secs(10), async || {
            let log = child.stderr_lines().join("\n");
            log.contains("bearer token refused: ").then_some(log)
        })
        .await;
    for secret in [jwt.as_str(), opaque.as_str(), "garbage-token-value", "introspector-secret"] {
        assert!(!log.contains(secret), "the log holds a secret:\n{log}");
    }
    // And the parts of the JWT are not there either.
    for part in jwt.split('.') {
        assert!(!log.contains(part), "the log holds part of a token:\n{log}");
    }
}

/// The official Python SDK's OAuth client (`OAuthClientProvider`) completes the whole flow
/// against the `mcpd` binary and oidc-provider: 401, protected-resource metadata, discovery,
/// dynamic registration, authorization code with PKCE and the resource indicator (its redirect
/// handler follows the authorization URL with cookies), then lists the tools and calls `echo`.
#[actix_rt::test]
async fn the_python_sdk_oauth_client_completes_the_flow() {
    let Some(python) = crate::support::python::python_with(crate::support::python::MCP_SDK) else { return };
    let Some(provider) = spawn_provider() else { return };
    let mut cmd = mcpd_command();
    cmd.args(["--auth-issuer", provider.issuer(), "--auth-scope", "mcp", "--auth-tool-scope", "time=tools:admin"]);
    let child = HttpChild::spawn_command(cmd);
    let mut py = std::process::Command::new(python);
    py.arg(crate::support::interop_script("py_oauth_client.py"))
        .arg(child.url())
        .current_dir(crate::support::process::empty_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = actix_rt::task::spawn_blocking(move || {
        crate::support::process::run_with_timeout(&mut py, b"", Duration::from_secs(60))
    })
    .await
    .expect("the Python client ran");
    let stdout = crate::support::process::text(&output.stdout);
    assert!(
        output.status.success(),
        "py_oauth_client.py failed ({}):\n{stdout}\n{}\n{}",
        output.status,
        crate::support::process::text(&output.stderr),
        provider.transcript()
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert_eq!(report["echo"]["content"][0]["text"], "authorized", "{report}");
    let tools: Vec<&str> = report["tools"].as_array().expect("tools").iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"echo"), "{tools:?}");
    assert!(!tools.contains(&"time"), "a tool needing a scope the token lacks is not listed: {tools:?}");
    assert!(report["hops"].as_u64().is_some_and(|h| h >= 2), "login and consent were redirects: {report}");
}

/// In a streamable-HTTP session every request carries its token: the session's `tools/list`
/// follows the token of each request, a hidden tool's call is 403, and a request without a token
/// is 401 even with a valid session id.
#[actix_rt::test]
async fn sessions_judge_every_request_by_its_own_token() {
    let Some(provider) = spawn_provider() else { return };
    let rules = ToolScopes::new(vec![("sleep".into(), vec!["tools:admin".into()])]);
    let oauth = OAuthSettings { tool_scopes: rules, ..settings(&provider) };
    let server = start_with(test_catalog(), mcpd::ServerOptions { sessions: true, ..Default::default() }, |c| {
        c.mode = mcpd_actors::TransportMode::StreamableHttp;
        c.oauth = Some(oauth);
    })
    .await;
    let resource = server.url("/mcp");
    let basic = format!("Bearer {}", provider.token("cc-client", "mcp", &resource).await);
    let admin = format!("Bearer {}", provider.token("cc-client", "mcp tools:admin", &resource).await);
    let accept = ("accept", "application/json, text/event-stream");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let reply = post(&server, &[accept, ("authorization", &basic)], &init).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let session = reply.header("mcp-session-id").expect("a session id").to_owned();
    let request =
        |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let headers = |auth: &str| -> Vec<(&'static str, String)> {
        let mut h = vec![
            ("accept", accept.1.to_owned()),
            ("mcp-session-id", session.clone()),
            ("mcp-protocol-version", "2025-11-25".to_owned()),
        ];
        if !auth.is_empty() {
            h.push(("authorization", auth.to_owned()));
        }
        h
    };
    let send_in = |auth: String, body: Value| {
        let headers = headers(&auth);
        let server = &server;
        async move {
            let borrowed: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            post(server, &borrowed, &body).await
        }
    };
    let names = |reply: &Reply| -> Vec<String> {
        reply.json()["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let listed = send_in(basic.clone(), request(1, "tools/list", json!({}))).await;
    assert!(!names(&listed).contains(&"sleep".to_owned()), "{:?}", names(&listed));
    let listed = send_in(admin.clone(), request(2, "tools/list", json!({}))).await;
    assert!(names(&listed).contains(&"sleep".to_owned()), "{:?}", names(&listed));
    let refused = send_in(basic, request(3, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}}))).await;
    assert_eq!(refused.status, 403);
    assert!(challenge(&refused).contains("scope=\"tools:admin\""), "{}", challenge(&refused));
    let ran = send_in(admin, request(4, "tools/call", json!({"name": "sleep", "arguments": {"ms": 1}}))).await;
    assert_eq!(ran.status, 200, "{}", String::from_utf8_lossy(&ran.body));
    let anonymous = send_in(String::new(), request(5, "tools/list", json!({}))).await;
    assert_eq!(anonymous.status, 401);
}

/// OAuth flags that cannot work stop startup with one line naming what is missing (exit 2).
#[test]
fn incomplete_oauth_flags_are_usage_errors() {
    let cases: [(&[&str], &str); 4] = [
        (&["--auth-scope", "mcp"], "--auth-resource, --auth-scope and --auth-introspection need --auth-issuer"),
        (&["--auth-issuer", "ftp://as"], "--auth-issuer \"ftp://as\" is not an http(s) URL"),
        (
            &["--auth-issuer", "http://127.0.0.1:1", "--auth-introspection", "http://127.0.0.1:1/i"],
            "--auth-introspection needs --auth-client-id",
        ),
        (
            &[
                "--auth-issuer",
                "http://127.0.0.1:1",
                "--auth-introspection",
                "http://127.0.0.1:1/i",
                "--auth-client-id",
                "me",
            ],
            "--auth-introspection needs the client secret: --auth-client-secret-file FILE or MCPD_AUTH_CLIENT_SECRET",
        ),
    ];
    for (args, message) in cases {
        let mut cmd = mcpd_command();
        cmd.args(args).args(["-p", "0"]).env_remove("MCPD_AUTH_CLIENT_SECRET");
        let output = crate::support::process::run_with_timeout(&mut cmd, b"", Duration::from_secs(30));
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = crate::support::process::text(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// The binary configured from `mcp.properties` (`auth.issuers`, `auth.scopes`,
/// `auth.toolScope.PATTERN`) and a declared tool's `requiredScopes`: each caller lists only the
/// tools its token's scopes allow.
#[actix_rt::test]
async fn properties_and_declared_tools_carry_the_scopes() {
    let Some(provider) = spawn_provider() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let tools = json!({"tools": [{
        "name": "say", "description": "Prints its text.", "argv": ["echo", "{text}"],
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "requiredScopes": ["files:write"]
    }]});
    std::fs::write(dir.path().join("tools.json"), tools.to_string()).expect("tools file");
    let properties = format!(
        "auth.issuers={}\nauth.scopes=mcp\nauth.toolScope.time=tools:admin\ntoolsFile={}\n",
        provider.issuer(),
        dir.path().join("tools.json").display()
    );
    std::fs::write(dir.path().join("mcp.properties"), properties).expect("properties");
    let mut cmd = mcpd_command();
    cmd.arg("-c").arg(dir.path().join("mcp.properties")).args(["-d"]).arg(dir.path());
    let child = HttpChild::spawn_command(cmd);
    let resource = child.url();
    let list = |scope: &'static str| {
        let (provider, resource) = (&provider, resource.clone());
        async move {
            let token = provider.token("cc-client", scope, &resource).await;
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
            let headers = [("content-type", "application/json"), ("authorization", &format!("Bearer {token}"))];
            let reply = send("POST", &resource, &headers, serde_json::to_vec(&body).expect("json")).await;
            assert_eq!(reply.status, 200, "{scope}: {}", String::from_utf8_lossy(&reply.body));
            let tools = reply.json()["result"]["tools"].as_array().cloned().unwrap_or_default();
            tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect::<Vec<_>>()
        }
    };
    let basic = list("mcp").await;
    assert!(basic.contains(&"echo".to_owned()), "{basic:?}");
    assert!(!basic.contains(&"time".to_owned()) && !basic.contains(&"say".to_owned()), "{basic:?}");
    let all = list("mcp tools:admin files:write").await;
    assert!(all.contains(&"time".to_owned()) && all.contains(&"say".to_owned()), "{all:?}");
    let doc = send("GET", &child.url().replace("/mcp", "/.well-known/oauth-protected-resource"), &[], Vec::new()).await;
    assert_eq!(doc.json()["scopes_supported"], json!(["mcp", "files:write", "tools:admin"]));
}

/// `mcpd login` headlessly against mcpd behind a real issuer: `mcpd serve --auth-issuer` with
/// oidc-provider, `$BROWSER` a script that follows the authorization URL with cookies (login and
/// consent approved by the provider) to mcpd's loopback listener. The login discovers, registers
/// dynamically, authorizes with PKCE and stores the token (mode 0600); `mcpd call` then calls a
/// tool with the stored token, and `mcpd logout` forgets it, after which `mcpd call` says
/// `run: mcpd login URL` (exit 2).
#[test]
fn mcpd_login_completes_the_flow_headlessly_and_call_uses_the_stored_token() {
    use crate::support::process::{run_with_timeout, text};
    use std::os::unix::fs::PermissionsExt as _;

    let Some(python) = crate::support::python::python_with("import httpx2") else { return };
    let Some(provider) = spawn_provider() else { return };
    let mut cmd = mcpd_command();
    cmd.args(["--auth-issuer", provider.issuer(), "--auth-scope", "mcp"]);
    let server = HttpChild::spawn_command(cmd);
    let url = server.url();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let credentials = dir.path().join("credentials.json");
    let credentials = credentials.to_str().expect("a UTF-8 path").to_owned();
    let transcript = dir.path().join("browser.log");
    let browser = dir.path().join("browser.sh");
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$1\" >'{}' 2>&1\n",
            python.display(),
            crate::support::interop_script("headless_browser.py").display(),
            transcript.display()
        ),
    )
    .expect("write the browser script");
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let run = |args: &[&str], with_browser: bool| {
        let mut cmd = mcpd_command();
        cmd.args(args).args(["--credentials", &credentials]);
        if with_browser {
            cmd.env("BROWSER", &browser);
        }
        run_with_timeout(&mut cmd, b"", Duration::from_secs(90))
    };
    let diagnostics = || {
        format!(
            "--- browser ---\n{}\n--- provider ---\n{}",
            std::fs::read_to_string(&transcript).unwrap_or_default(),
            provider.transcript()
        )
    };

    let login = run(&["login", &url, "--wait", "60"], true);
    assert_eq!(login.status.code(), Some(0), "{}\n{}", text(&login.stderr), diagnostics());
    assert_eq!(text(&login.stdout), format!("logged in to {url} (issuer {})\n", provider.issuer()));
    let mode = std::fs::metadata(&credentials).expect("the credentials file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored = std::fs::read_to_string(&credentials).expect("read the credentials file");
    assert!(!text(&login.stderr).contains("accessToken"), "{}", text(&login.stderr));
    assert!(stored.contains(provider.issuer()), "{stored}");

    let call = run(&["call", &url, "echo", "--args", r#"{"text":"authorized"}"#], false);
    assert_eq!(
        (call.status.code(), text(&call.stdout)),
        (Some(0), "authorized\n".to_owned()),
        "{}",
        text(&call.stderr)
    );

    let logout = run(&["logout", &url], false);
    assert_eq!(logout.status.code(), Some(0), "{}", text(&logout.stderr));
    let call = run(&["call", &url, "echo", "--args", r#"{"text":"again"}"#], false);
    assert_eq!(call.status.code(), Some(2), "{}", text(&call.stderr));
    assert!(text(&call.stderr).contains(&format!("run: mcpd login {url}")), "{}", text(&call.stderr));
}
