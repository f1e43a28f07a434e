//! The client's OAuth flow where the conformance suite (the independent peer for the flow
//! itself, `scripts/conformance.sh`) does not look: refresh before expiry, `LoginRequired`
//! without a user agent (at once, no retry loop), no bearer token or configured header reaching
//! the authorization server, the step-up retry limit, stored credentials used per issuer.
//!
//! The peers are two scripted servers (`support/mock_http.rs`) on different loopback ports: a
//! stateless 2026-07-28 MCP server that wants a bearer token (and serves its RFC 9728 metadata),
//! and a small authorization server (RFC 8414 metadata, registration, an authorization endpoint
//! that approves at once with a redirect, a token endpoint). No independent authorization server
//! fits these cases: each needs a server that misbehaves or counts in a particular way.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor as _, Addr};
use mcpd::model::Implementation;
use mcpd::version::ProtocolVersion;
use mcpd_actors::client::oauth::{
    AuthError, CredentialStore, Credentials, FileStore, Grant, HeadlessAgent, MemoryStore, OAuthConfig, Registration,
};
use mcpd_actors::client::{CallTool, ClientConnection, ClientError, ClientHandlers, LinkConfig, ListTools};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map};

use crate::support::eventually::eventually_blocking;
use crate::support::mock_http::{MockServer, Recorded, Reply};
use crate::support::process::{self, HttpChild};

const TEST_BOUND: Duration = Duration::from_secs(40);

async fn bounded<F: Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_BOUND, test).await.expect("the test hung past its outer bound");
}

/// The query parameter `name` of a request path.
fn query(path: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(&format!("http://x{path}")).ok()?;
    url.query_pairs().find(|(n, _)| n == name).map(|(_, v)| v.into_owned())
}

/// A form body's parameter.
fn form(body: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(body).find(|(n, _)| n == name).map(|(_, v)| v.into_owned())
}

fn host(request: &Recorded) -> String {
    format!("http://{}", request.header("host").unwrap_or_default())
}

/// How the scripted authorization server issues tokens.
#[derive(Clone, Copy)]
struct Issuing {
    expires_in: u64,
    refresh: bool,
}

/// The scripted authorization server: tokens `tok-1`, `tok-2`, … (each new one returned by
/// the token endpoint, whatever the grant).
struct AuthServer {
    mock: MockServer,
}

impl AuthServer {
    fn start(issuing: Issuing) -> AuthServer {
        let counter = Arc::new(AtomicUsize::new(0));
        let mock = MockServer::start(move |request| {
            let path = request.path.split('?').next().unwrap_or_default();
            match (request.method.as_str(), path) {
                ("GET", "/.well-known/oauth-authorization-server") => {
                    let issuer = host(request);
                    Reply::json(
                        200,
                        &json!({
                            "issuer": issuer,
                            "authorization_endpoint": format!("{issuer}/authorize"),
                            "token_endpoint": format!("{issuer}/token"),
                            "registration_endpoint": format!("{issuer}/register"),
                            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                            "code_challenge_methods_supported": ["S256"],
                            "authorization_response_iss_parameter_supported": true
                        }),
                    )
                }
                ("POST", "/register") => Reply::json(201, &json!({"client_id": "registered-client"})),
                ("GET", "/authorize") => {
                    let redirect = query(&request.path, "redirect_uri").unwrap_or_default();
                    let state = query(&request.path, "state").unwrap_or_default();
                    let mut target = url::Url::parse(&redirect).expect("redirect_uri");
                    target
                        .query_pairs_mut()
                        .append_pair("code", "the-code")
                        .append_pair("state", &state)
                        .append_pair("iss", &host(request));
                    Reply::Http {
                        status: 302,
                        headers: vec![("Location".into(), target.to_string())],
                        body: Vec::new(),
                    }
                }
                ("POST", "/token") => {
                    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                    let mut answer = json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": issuing.expires_in});
                    if issuing.refresh {
                        answer["refresh_token"] = json!(format!("refresh-{n}"));
                    }
                    Reply::json(200, &answer)
                }
                _ => Reply::text(404, "text/plain", "not found"),
            }
        });
        AuthServer { mock }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.mock.port)
    }

    fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.mock.requests().into_iter().filter(|r| r.path.split('?').next() == Some(path)).collect()
    }
}

/// How the scripted MCP server judges a request (its JSON-RPC method and bearer token):
/// `Ok(())` to serve it, or the refusal.
type Judge = dyn Fn(Option<&str>, Option<&str>) -> Result<(), Reply> + Send + Sync;

/// `401` with a bare Bearer challenge.
fn unauthorized() -> Reply {
    Reply::json(401, &json!({"error": "invalid_token"}))
        .with_header("WWW-Authenticate", r#"Bearer error="invalid_token""#)
}

/// A stateless MCP server whose metadata names `issuer`; `judge` decides on each request.
fn resource_server(issuer: String, judge: Arc<Judge>) -> MockServer {
    MockServer::start(move |request| {
        if request.method == "GET" && request.path == "/.well-known/oauth-protected-resource/mcp" {
            return Reply::json(
                200,
                &json!({"resource": format!("{}/mcp", host(request)), "authorization_servers": [issuer]}),
            );
        }
        let token = request.header("authorization").and_then(|v| v.strip_prefix("Bearer "));
        if let Err(refusal) = judge(request.rpc_method().as_deref(), token) {
            return refusal;
        }
        let id = request.rpc_id();
        let result = match request.rpc_method().as_deref() {
            Some("server/discover") => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "protected", "version": "1"},
                "resultType": "complete"
            }),
            Some("tools/list") => {
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "resultType": "complete"})
            }
            Some("tools/call") => json!({"content": [{"type": "text", "text": "ok"}], "resultType": "complete"}),
            _ => return Reply::error(404, &id, -32601, "Method not found"),
        };
        Reply::result(&id, result)
    })
}

/// Any token will do; none is `401`.
fn accept_any() -> Arc<Judge> {
    Arc::new(|_, token| token.map(drop).ok_or_else(unauthorized))
}

fn oauth(store: Arc<dyn CredentialStore>, agent: bool) -> OAuthConfig {
    OAuthConfig {
        store,
        user_agent: if agent { Some(Arc::new(HeadlessAgent::new())) } else { None },
        registration: Registration { client_name: "mcpd-test".into(), ..Registration::default() },
        grant: Grant::AuthorizationCode,
        scope: None,
    }
}

fn connect(url: String, oauth: OAuthConfig) -> Addr<ClientConnection> {
    let config = LinkConfig {
        name: "protected".into(),
        url,
        sse: false,
        headers: vec![("X-Api-Key".into(), "for-the-mcp-server-only".into())],
        pin: Some(ProtocolVersion::STATELESS),
        timeout: Duration::from_secs(10),
        command: None,
        list_limits: Default::default(),
        task_wait: mcpd::client::task::DEFAULT_TASK_WAIT,
        oauth: Some(oauth),
    };
    ClientConnection::new(
        config,
        ClientHandlers::default(),
        Implementation::new("mcpd-oauth-test", "1"),
        Arc::new(ActorCounts::new()),
    )
    .start()
}

async fn call(connection: &Addr<ClientConnection>) -> Result<(), ClientError> {
    connection.send(CallTool { name: "t".into(), arguments: Map::new() }).await.expect("connection alive").map(drop)
}

/// The bearer tokens the MCP server received, in order (`-` for none).
fn bearers(server: &MockServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.header("authorization").unwrap_or("-").to_owned())
        .collect()
}

#[actix_rt::test]
async fn a_token_is_obtained_once_and_neither_it_nor_the_links_headers_reach_the_authorization_server() {
    bounded(async {
        let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
        let server = resource_server(auth.url(), accept_any());
        let connection = connect(server.url(), oauth(Arc::new(MemoryStore::default()), true));
        call(&connection).await.unwrap();
        call(&connection).await.unwrap();
        assert_eq!(bearers(&server), ["-", "Bearer tok-1", "Bearer tok-1", "Bearer tok-1"]);
        assert_eq!(auth.requests_to("/authorize").len(), 1);
        for request in auth.mock.requests() {
            assert_eq!(request.header("authorization"), None, "{request:?}");
            assert_eq!(request.header("x-api-key"), None, "{request:?}");
        }
        let metadata = server.requests().into_iter().find(|r| r.method == "GET").unwrap();
        assert_eq!(metadata.header("authorization"), None, "metadata is fetched without the token");
        let token = &auth.requests_to("/token")[0];
        assert_eq!(form(&token.body, "resource"), Some(server.url()));
        assert_eq!(form(&token.body, "client_id").as_deref(), Some("registered-client"));
    })
    .await;
}

#[actix_rt::test]
async fn a_token_about_to_expire_is_refreshed_before_the_next_request() {
    bounded(async {
        // 30 s is inside the refresh margin: the next request refreshes first.
        let auth = AuthServer::start(Issuing { expires_in: 30, refresh: true });
        let server = resource_server(auth.url(), accept_any());
        let connection = connect(server.url(), oauth(Arc::new(MemoryStore::default()), true));
        // Connecting gets tok-1 (a 401, then the flow); each later request finds it about to
        // expire and refreshes it first.
        call(&connection).await.unwrap();
        connection.send(ListTools).await.unwrap().unwrap();
        assert_eq!(bearers(&server), ["-", "Bearer tok-1", "Bearer tok-2", "Bearer tok-3"]);
        let tokens = auth.requests_to("/token");
        assert_eq!(tokens.len(), 3);
        assert_eq!(form(&tokens[0].body, "grant_type").as_deref(), Some("authorization_code"));
        for (refresh, previous) in tokens[1..].iter().zip(["refresh-1", "refresh-2"]) {
            assert_eq!(form(&refresh.body, "grant_type").as_deref(), Some("refresh_token"));
            assert_eq!(form(&refresh.body, "refresh_token").as_deref(), Some(previous));
            assert_eq!(form(&refresh.body, "resource"), Some(server.url()));
        }
        assert_eq!(auth.requests_to("/authorize").len(), 1, "no second authorization");
    })
    .await;
}

#[actix_rt::test]
async fn without_a_user_agent_a_401_is_login_required_at_once() {
    bounded(async {
        let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
        let server = resource_server(auth.url(), accept_any());
        let connection = connect(server.url(), oauth(Arc::new(MemoryStore::default()), false));
        let started = Instant::now();
        let error = call(&connection).await.unwrap_err();
        assert_eq!(error, ClientError::Auth(AuthError::LoginRequired { url: server.url() }));
        assert_eq!(error.to_string(), format!("{0} needs authorization: run: mcpd login {0}", server.url()));
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
        assert_eq!(bearers(&server), ["-"], "one request, no retry");
        assert!(auth.requests_to("/authorize").is_empty() && auth.requests_to("/token").is_empty());
    })
    .await;
}

#[actix_rt::test]
async fn stored_credentials_are_used_for_their_issuer_only() {
    bounded(async {
        let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
        let store = Arc::new(MemoryStore::default());
        let judge: Arc<Judge> = Arc::new(|_, token| match token {
            Some("stored-token") => Ok(()),
            _ => Err(unauthorized()),
        });
        let server = resource_server(auth.url(), judge);
        let stored = |issuer: &str, token: &str| Credentials {
            resource: server.url(),
            issuer: issuer.into(),
            client_id: "stored-client".into(),
            access_token: Some(token.into()),
            ..Credentials::default()
        };
        store.save(&stored("http://127.0.0.1:1", "other-issuers-token")).unwrap();
        store.save(&stored(&auth.url(), "stored-token")).unwrap();
        let connection = connect(server.url(), oauth(store.clone(), false));
        call(&connection).await.unwrap();
        assert_eq!(bearers(&server), ["-", "Bearer stored-token", "Bearer stored-token"]);
        assert!(auth.requests_to("/token").is_empty());
        let kept = store.load(&server.url(), "http://127.0.0.1:1").unwrap();
        assert_eq!(kept.access_token.as_deref(), Some("other-issuers-token"), "untouched");
    })
    .await;
}

#[actix_rt::test]
async fn a_server_that_keeps_asking_for_scope_is_given_up_on_after_three_authorizations() {
    bounded(async {
        let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
        let judge: Arc<Judge> = Arc::new(|_, token| {
            token.ok_or_else(unauthorized)?;
            Err(Reply::json(403, &json!({"error": "insufficient_scope"}))
                .with_header("WWW-Authenticate", r#"Bearer error="insufficient_scope", scope="admin""#))
        });
        let server = resource_server(auth.url(), judge);
        let connection = connect(server.url(), oauth(Arc::new(MemoryStore::default()), true));
        let error = call(&connection).await.unwrap_err();
        assert_eq!(error, ClientError::Auth(AuthError::Refused(r#"403 insufficient_scope for scope "admin""#.into())));
        let authorizations = auth.requests_to("/authorize");
        assert_eq!(authorizations.len(), 3);
        let scopes: Vec<Option<String>> = authorizations.iter().map(|r| query(&r.path, "scope")).collect();
        assert_eq!(scopes, [None, Some("admin".into()), Some("admin".into())]);
        assert_eq!(bearers(&server), ["-", "Bearer tok-1", "Bearer tok-2", "Bearer tok-3"]);
    })
    .await;
}

#[actix_rt::test]
async fn concurrent_requests_share_one_authorization() {
    bounded(async {
        let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
        // Connecting needs no token here, so the four calls meet their 401s together.
        let judge: Arc<Judge> = Arc::new(|method, token| match (method, token) {
            (Some("server/discover"), _) | (_, Some(_)) => Ok(()),
            _ => Err(unauthorized()),
        });
        let server = resource_server(auth.url(), judge);
        let connection = connect(server.url(), oauth(Arc::new(MemoryStore::default()), true));
        let calls = futures_util::future::join_all((0..4).map(|_| call(&connection))).await;
        assert!(calls.iter().all(Result::is_ok), "{calls:?}");
        assert_eq!(auth.requests_to("/authorize").len(), 1);
        assert_eq!(auth.requests_to("/token").len(), 1);
        let with_token = bearers(&server).iter().filter(|b| b.as_str() == "Bearer tok-1").count();
        assert_eq!(with_token, 4, "every call retried once with the one token");
    })
    .await;
}

/// The tools/call requests `server` received: each one's bearer token (`-` for none).
fn call_bearers(server: &MockServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.rpc_method().as_deref() == Some("tools/call"))
        .map(|r| r.header("authorization").unwrap_or("-").to_owned())
        .collect()
}

/// A stateless `tools/call` of `tool` through the gateway `child`: its result's text, or what
/// came back instead.
fn call_through(child: &HttpChild, tool: &str) -> Result<String, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let (code, _, answer) = process::http(child.port, "POST", "/mcp", &headers, &body.to_string());
    let answer: serde_json::Value = serde_json::from_str(&answer).map_err(|_| format!("{code}: {answer}"))?;
    match answer["result"]["content"][0]["text"].as_str() {
        Some(text) if answer["result"]["isError"] != true => Ok(text.to_owned()),
        _ => Err(format!("{code}: {answer}")),
    }
}

/// A gateway's call runs on its worker thread's own link to the remote. When the remote starts
/// asking for a token, the call that was refused with `401` is sent again through the remote's
/// connection, which answers the `401` with the stored token; the worker's link then carries
/// that token on the next call without being refused first. No token is requested: the stored
/// one is used.
#[test]
fn a_gateway_call_refused_with_401_is_sent_again_with_the_stored_token() {
    // The refusal's body: an OAuth error (RFC 6750), or a JSON-RPC error as mcpd's own.
    for refusal in [unauthorized, unauthorized_rpc] {
        refused_gateway_call_is_sent_again(refusal);
    }
}

/// `401` with a bare Bearer challenge and a JSON-RPC error for its body.
fn unauthorized_rpc() -> Reply {
    Reply::json(401, &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Unauthorized"}}))
        .with_header("WWW-Authenticate", r#"Bearer error="invalid_token""#)
}

fn refused_gateway_call_is_sent_again(refusal: fn() -> Reply) {
    let auth = AuthServer::start(Issuing { expires_in: 3600, refresh: false });
    let demand = Arc::new(AtomicBool::new(false));
    let judge: Arc<Judge> = {
        let demand = demand.clone();
        Arc::new(move |_, token| match token {
            Some("stored-token") => Ok(()),
            None if !demand.load(Ordering::SeqCst) => Ok(()),
            _ => Err(refusal()),
        })
    };
    let server = resource_server(auth.url(), judge);
    let dir = tempfile::tempdir().unwrap();
    let credentials = dir.path().join("credentials.json");
    let stored = Credentials {
        resource: server.url(),
        issuer: auth.url(),
        client_id: "stored-client".into(),
        access_token: Some("stored-token".into()),
        ..Credentials::default()
    };
    FileStore::new(&credentials).save(&stored).unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(&servers, json!({"mcpServers": {"protected": {"url": server.url()}}}).to_string()).unwrap();
    let mut cmd = process::mcpd_command();
    cmd.args(["serve", "--no-file-tools", "--servers", servers.to_str().unwrap()]);
    cmd.args(["--credentials", credentials.to_str().unwrap()]);
    let gateway = HttpChild::spawn_command(cmd);
    eventually_blocking("the remote's tool is listed", Duration::from_secs(10), || {
        call_through(&gateway, "protected__t").map(|text| assert_eq!(text, "ok"))
    });
    assert!(call_bearers(&server).iter().all(|b| b == "-"), "no token while none is asked for");
    demand.store(true, Ordering::SeqCst);
    let before = call_bearers(&server).len();
    assert_eq!(call_through(&gateway, "protected__t"), Ok("ok".to_owned()), "the refused call is sent again");
    let retried = call_bearers(&server)[before..].to_vec();
    assert_eq!(retried.first().map(String::as_str), Some("-"), "{retried:?}");
    assert_eq!(retried.last().map(String::as_str), Some("Bearer stored-token"), "{retried:?}");
    let before = call_bearers(&server).len();
    assert_eq!(call_through(&gateway, "protected__t"), Ok("ok".to_owned()));
    assert_eq!(call_bearers(&server)[before..], ["Bearer stored-token"], "the worker's link has the token");
    assert!(auth.requests_to("/token").is_empty(), "the stored token was used");
}
