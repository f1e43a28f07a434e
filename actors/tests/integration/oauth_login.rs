//! OAuth for people, the command line and the gateway: the credentials file
//! (`FileStore`), the loopback user agent of `mcpd login` (`LoopbackAgent`), `mcpd login` /
//! `mcpd logout`, what `mcpd call` says when only a person can help, and the servers file's
//! `oauth` settings reaching the client.
//!
//! Every credentials file lives in a `tempfile` directory and is passed explicitly (children
//! also get a build-owned `XDG_CONFIG_HOME`, see `support::process::mcpd_command`); the browser
//! is always a script in a temporary directory, never a real one.
//!
//! The end-to-end tests here run against a scripted resource and authorization server
//! (`mock_auth_server`), which can misbehave on purpose; `oauth_server` has the same flows
//! against a real authorization server (oidc-provider).

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use mcpd::client::config::{ConfigDocument, ServersFile};
use mcpd::model::Implementation;
use mcpd_actors::client::oauth::{
    AuthError, Callback, CredentialStore, Credentials, FileStore, Grant, LoopbackAgent, MemoryStore, OAuthConfig,
    Registration, UserAgent,
};
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, ServerRecord};
use mcpd_actors::ActorCounts;
use serde_json::{json, Value};

use crate::support::eventually::{eventually, eventually_blocking};
use crate::support::mock_http::{MockServer, Recorded, Reply};
use crate::support::process::{http, mcpd_command, run_with_timeout, text, RUN_TIMEOUT};

const R1: &str = "https://mcp.example/mcp";
const R2: &str = "https://other.example/mcp";
const AS1: &str = "https://as-one.example";
const AS2: &str = "https://as-two.example";

fn creds(resource: &str, issuer: &str, token: &str) -> Credentials {
    Credentials {
        resource: resource.into(),
        issuer: issuer.into(),
        client_id: format!("client-of-{issuer}"),
        client_secret: Some("client-secret-value".into()),
        access_token: Some(token.into()),
        refresh_token: Some(format!("refresh-{token}")),
        expires_at: Some(1_900_000_000),
        ..Credentials::default()
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

// ---- the credentials file ------------------------------------------------------------------

/// The file is created 0600 (its missing directories 0700), and a save replaces it with a new
/// file rather than rewriting it: a reader holding the old one still reads it whole, and a
/// file someone loosened to 0644 comes back 0600. No temporary file is left behind.
#[test]
fn the_file_is_0600_in_a_0700_directory_and_each_save_replaces_it_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config").join("mcpd").join("credentials.json");
    let store = FileStore::new(&path);
    store.save(&creds(R1, AS1, "token-1")).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("config")), 0o700);

    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let mut old = fs::File::open(&path).unwrap();
    store.save(&creds(R1, AS2, "token-2")).unwrap();
    let mut old_text = String::new();
    old.read_to_string(&mut old_text).unwrap();
    let old_json: Value = serde_json::from_str(&old_text).expect("the old file is still whole");
    assert_eq!(old_json["entries"].as_array().unwrap().len(), 1, "{old_text}");
    assert_eq!(mode(&path), 0o600, "the replacement is created 0600");
    assert_eq!(names_in(path.parent().unwrap()), ["credentials.json"]);

    let new_json: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(new_json["mcpdCredentials"], 1);
    assert_eq!(new_json["entries"].as_array().unwrap().len(), 2);
    assert_eq!(store.load(R1, AS1).unwrap().access_token.as_deref(), Some("token-1"));
    assert_eq!(store.load(R1, AS2).unwrap().access_token.as_deref(), Some("token-2"));
}

/// A file that is not JSON, or JSON of another shape, is an exact error naming the file (and
/// nothing of its content) for every write, reads find nothing in it, and it is never
/// overwritten.
#[test]
fn a_corrupt_or_foreign_file_is_an_exact_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.json");
    let shown = path.display().to_string();
    let cases = [
        (
            "{\"mcpdCredentials\": 1, \"entries\": [",
            format!("the credentials file {shown} is corrupt (not JSON: the error is at line 1 column 35); fix or remove it"),
        ),
        (
            "{\"tokens\": {\"x\": \"leaked-secret\"}}",
            format!("{shown} is not an mcpd credentials file (expected {{\"mcpdCredentials\": 1, \"entries\": [...]}}); move it away or use --credentials FILE"),
        ),
        (
            "{\"mcpdCredentials\": 1, \"entries\": [{\"resource\": 7, \"accessToken\": \"leaked-secret\"}]}",
            format!("{shown} is not an mcpd credentials file (expected {{\"mcpdCredentials\": 1, \"entries\": [...]}}); move it away or use --credentials FILE"),
        ),
        (
            "{\"mcpdCredentials\": 9, \"entries\": []}",
            format!("the credentials file {shown} has format 9, this mcpd reads format 1"),
        ),
    ];
    for (content, expected) in cases {
        fs::write(&path, content).unwrap();
        let store = FileStore::new(&path);
        assert_eq!(store.save(&creds(R1, AS1, "t")), Err(expected.clone()), "{content}");
        assert_eq!(store.remove(R1), Err(expected.clone()), "{content}");
        assert_eq!(store.entries(), Err(expected), "{content}");
        assert_eq!(store.load(R1, AS1), None);
        assert_eq!(fs::read_to_string(&path).unwrap(), content, "never overwritten");
    }
}

/// Entries are per (resource, issuer): two issuers of one resource are kept apart, a save
/// replaces only its own entry, and removing a resource (`mcpd logout`) removes it at every
/// issuer and nothing else.
#[test]
fn entries_are_kept_per_resource_and_issuer_and_remove_takes_every_issuer() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().join("c.json"));
    store.save(&creds(R1, AS1, "a")).unwrap();
    store.save(&creds(R1, AS2, "b")).unwrap();
    store.save(&creds(R2, AS1, "c")).unwrap();
    store.save(&creds(R1, AS1, "a2")).unwrap();
    assert_eq!(store.entries().unwrap().len(), 3);
    assert_eq!(store.load(R1, AS1).unwrap(), creds(R1, AS1, "a2"));
    assert_eq!(store.load(R1, AS2).unwrap(), creds(R1, AS2, "b"));
    assert_eq!(store.load(R2, AS2), None, "never another issuer's credentials");
    assert_eq!(store.remove(R1), Ok(2));
    assert_eq!((store.load(R1, AS1), store.load(R1, AS2)), (None, None));
    assert_eq!(store.load(R2, AS1).unwrap(), creds(R2, AS1, "c"));
    assert_eq!(store.remove(R1), Ok(0));
}

/// Two stores on one file (two processes) re-read before writing: neither loses the other's
/// entries, and on the same entry the last writer wins.
#[test]
fn two_writers_keep_each_others_entries_and_the_last_wins_per_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let (gateway, cli) = (FileStore::new(&path), FileStore::new(&path));
    gateway.save(&creds(R1, AS1, "gateway")).unwrap();
    cli.save(&creds(R2, AS1, "cli")).unwrap();
    gateway.save(&creds(R1, AS2, "gateway-2")).unwrap();
    assert_eq!(cli.entries().unwrap().len(), 3);
    cli.save(&creds(R1, AS1, "cli-wins")).unwrap();
    assert_eq!(gateway.load(R1, AS1).unwrap().access_token.as_deref(), Some("cli-wins"));
}

/// The size limit holds both ways: a file past it is refused on reading, and a save that would
/// take the file past it is refused (the file stays as it was).
#[test]
fn the_size_limit_holds_for_reading_and_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let store = FileStore::new(&path).with_max_bytes(700);
    store.save(&creds(R1, AS1, "small")).unwrap();
    let before = fs::read(&path).unwrap();
    let big = creds(R1, AS2, &"x".repeat(800));
    let shown = path.display();
    assert_eq!(
        store.save(&big),
        Err(format!(
            "the credentials file {shown} would be larger than 700 bytes; run mcpd logout for servers you no longer use"
        ))
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    FileStore::new(&path).save(&big).unwrap();
    assert_eq!(
        store.entries(),
        Err(format!(
            "the credentials file {shown} is larger than 700 bytes: it is not one mcpd wrote; move it away or use --credentials FILE"
        ))
    );
    // The default limit is 1 MiB.
    fs::write(&path, vec![b' '; 1024 * 1024 + 1]).unwrap();
    assert!(FileStore::new(&path).entries().unwrap_err().contains("larger than 1048576 bytes"));
}

/// Secrets never show in `Debug`: not the store's (only its path), not a configuration's
/// (client secret, private key), not the credentials'.
#[test]
fn secrets_stay_out_of_debug_output() {
    let config = OAuthConfig {
        store: Arc::new(FileStore::new("/nonexistent/c.json")),
        user_agent: None,
        registration: Registration {
            client_id: Some("id".into()),
            client_secret: Some("the-client-secret".into()),
            client_metadata_url: None,
            client_name: "mcpd".into(),
        },
        grant: Grant::PrivateKeyJwt {
            private_key_pem: "-----BEGIN PRIVATE KEY-----xyz".into(),
            algorithm: "ES256".into(),
        },
        scope: Some("read".into()),
    };
    let shown = format!("{config:?} {:?}", creds(R1, AS1, "the-access-token"));
    for secret in
        ["the-client-secret", "PRIVATE KEY", "the-access-token", "refresh-the-access-token", "client-secret-value"]
    {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(shown.contains("/nonexistent/c.json") && shown.contains("<hidden>"), "{shown}");
}

// ---- the loopback user agent ---------------------------------------------------------------

/// An agent that prints only (no browser) and waits `timeout`.
fn agent(timeout: Duration) -> LoopbackAgent {
    LoopbackAgent::bind().unwrap().with_browser(None).with_timeout(timeout)
}

/// A GET to the agent's listener: status and body.
async fn get(port: u16, path: &str) -> (u16, String) {
    let path = path.to_owned();
    let (status, _, body) = tokio::task::spawn_blocking(move || http(port, "GET", &path, &[], "")).await.unwrap();
    (status, body)
}

/// Starts `authorize` on the current thread; its outcome arrives on the returned channel.
fn start_authorize(
    agent: &Arc<LoopbackAgent>,
    url: &str,
) -> tokio::sync::oneshot::Receiver<Result<Callback, AuthError>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let future = agent.authorize(url.to_owned());
    actix_rt::spawn(async move {
        let _ = tx.send(future.await);
    });
    rx
}

/// The redirect URI is `http://127.0.0.1:<port>/callback`; a real HTTP GET to it with the
/// authorization response is answered with the small page and ends the wait with its code,
/// state and iss (percent-decoded); a second authorization works the same way.
#[actix_rt::test]
async fn the_redirect_brings_back_code_state_and_iss() {
    let agent = Arc::new(agent(Duration::from_secs(30)));
    assert_eq!(agent.redirect_uri(), format!("http://127.0.0.1:{}/callback", agent.port()));
    let outcome = start_authorize(&agent, "https://as.example/authorize?x=1");
    let (status, body) =
        get(agent.port(), "/callback?code=the%20code&state=st-1&iss=https%3A%2F%2Fas.example&extra=1").await;
    assert_eq!(status, 200);
    assert!(body.contains("You can close this window"), "{body}");
    let callback = outcome.await.unwrap().unwrap();
    assert_eq!(
        callback,
        Callback {
            code: Some("the code".into()),
            state: Some("st-1".into()),
            iss: Some("https://as.example".into()),
            ..Callback::default()
        }
    );
    // The same agent serves a second authorization (a step-up) on the same redirect URI.
    let again = start_authorize(&agent, "https://as.example/authorize?x=2");
    assert_eq!(get(agent.port(), "/callback?code=second").await.0, 200);
    assert_eq!(again.await.unwrap().unwrap().code.as_deref(), Some("second"));
}

/// Requests to other paths (or other methods) get 404 and the wait goes on; the refusal of an
/// authorization comes back as its error.
#[actix_rt::test]
async fn other_paths_get_404_and_do_not_end_the_wait() {
    let agent = Arc::new(agent(Duration::from_secs(30)));
    let mut outcome = start_authorize(&agent, "https://as.example/authorize");
    assert_eq!(get(agent.port(), "/favicon.ico").await.0, 404);
    assert_eq!(get(agent.port(), "/callbackx?code=1").await.0, 404);
    let port = agent.port();
    let (status, _, _) =
        tokio::task::spawn_blocking(move || http(port, "POST", "/callback?code=1", &[], "")).await.unwrap();
    assert_eq!(status, 404);
    assert!(outcome.try_recv().is_err(), "still waiting");
    let (status, _) = get(agent.port(), "/callback?error=access_denied&error_description=no&state=s").await;
    assert_eq!(status, 200);
    let callback = outcome.await.unwrap().unwrap();
    assert_eq!((callback.error.as_deref(), callback.error_description.as_deref()), (Some("access_denied"), Some("no")));
    assert_eq!(callback.code, None);
}

/// A request head larger than 8 KiB is answered 431 and does not end the wait.
#[actix_rt::test]
async fn an_oversized_request_is_refused_and_the_wait_goes_on() {
    let agent = Arc::new(agent(Duration::from_secs(30)));
    let outcome = start_authorize(&agent, "https://as.example/authorize");
    let port = agent.port();
    let (status, _, _) = tokio::task::spawn_blocking(move || {
        http(port, "GET", &format!("/callback?code={}", "c".repeat(9000)), &[], "")
    })
    .await
    .unwrap();
    assert_eq!(status, 431);
    assert_eq!(get(port, "/callback?code=ok&state=s").await.0, 200);
    assert_eq!(outcome.await.unwrap().unwrap().code.as_deref(), Some("ok"));
}

/// Nobody comes back: the wait ends at its time limit with an error saying so.
#[actix_rt::test]
async fn the_wait_ends_at_its_time_limit() {
    let agent = agent(Duration::from_millis(300));
    let redirect = agent.redirect_uri();
    let started = std::time::Instant::now();
    let outcome = agent.authorize("https://as.example/authorize".into()).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        outcome,
        Err(AuthError::Flow(format!(
            "nothing came back to {redirect} within 0.3 s (the authorization was not completed)"
        )))
    );
}

/// A small script stands in for `$BROWSER`'s program: it is started directly (no shell in
/// between) with the authorization URL as its single argument, however many spaces, quotes
/// and semicolons the URL holds.
#[actix_rt::test]
async fn the_browser_program_gets_the_url_as_its_only_argument() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("browser.sh");
    let seen = dir.path().join("seen");
    fs::write(
        &script,
        "#!/bin/sh\nprintf '%s\\n' \"$#\" \"$1\" > \"$0.tmp\"\nmv \"$0.tmp\" \"$(dirname \"$0\")/seen\"\n",
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o700)).unwrap();
    let chosen = mcpd_actors::client::oauth::loopback::browser_program(Some(script.clone().into()));
    let agent = Arc::new(LoopbackAgent::bind().unwrap().with_browser(chosen).with_timeout(Duration::from_secs(30)));
    let url = "https://as.example/authorize?state=a b&x='$(touch pwned)';echo \"hi\"";
    let outcome = start_authorize(&agent, url);
    let printed =
        eventually("the browser script to run", Duration::from_secs(10), async || fs::read_to_string(&seen).ok()).await;
    assert_eq!(printed, format!("1\n{url}\n"));
    assert!(!dir.path().join("pwned").exists() && !Path::new("pwned").exists());
    get(agent.port(), "/callback?code=c").await;
    assert_eq!(outcome.await.unwrap().unwrap().code.as_deref(), Some("c"));
}

// ---- mcpd logout / login -------------------------------------------------------------------

fn mcpd(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Exit 2 with exactly one `mcpd: ` line on stderr; that line.
fn exit_2_line(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stdout {} stderr {stderr}", text(&output.stdout));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0].to_owned()
}

/// `mcpd logout URL` removes the URL's entries at every issuer, says how many, keeps the
/// others and the file's mode; a second logout says there is nothing (and names what is
/// stored); the URL is compared loosely (case, default port, trailing slash); a broken file is
/// exit 2.
#[test]
fn logout_removes_every_issuer_of_the_url_and_says_how_many() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.json");
    let file = path.to_str().unwrap();
    let store = FileStore::new(&path);
    for (resource, issuer) in [(R1, AS1), (R1, AS2), (R2, AS1)] {
        store.save(&creds(resource, issuer, "t")).unwrap();
    }
    let out = mcpd(&["logout", R1, "--credentials", file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("logged out of {R1}: removed 2 stored credential entries\n"));
    assert_eq!(store.entries().unwrap(), vec![creds(R2, AS1, "t")]);
    assert_eq!(mode(&path), 0o600);
    let out = mcpd(&["logout", R1, "--credentials", file]);
    assert_eq!(text(&out.stdout), format!("no credentials stored for {R1} in {file} (it has: {R2})\n"));
    // The URL as typed may differ from the stored resource by case, default port or a slash.
    let typed = "HTTPS://Other.Example:443/mcp/";
    let out = mcpd(&["logout", typed, "--credentials", file]);
    assert_eq!(text(&out.stdout), format!("logged out of {typed}: removed 1 stored credential entry\n"));
    let out = mcpd(&["logout", R2, "--credentials", file]);
    assert_eq!(text(&out.stdout), format!("no credentials stored for {R2} in {file}\n"));

    fs::write(&path, "not json").unwrap();
    let line = exit_2_line(&mcpd(&["logout", R1, "--credentials", file]));
    assert_eq!(
        line,
        format!("mcpd: the credentials file {file} is corrupt (not JSON: the error is at line 1 column 2); fix or remove it")
    );
}

/// `mcpd login` against a server that lets everyone in stores nothing and says so; a
/// credentials file it cannot use is refused before any browser is involved; a secret file
/// needs a client id; a bad URL is refused with the configuration's message.
#[test]
fn login_checks_its_inputs_and_stores_nothing_when_no_authorization_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("credentials.json");
    let file = path.to_str().unwrap();
    let server = crate::support::process::HttpChild::spawn(&["--no-file-tools"]);
    let url = server.url();
    let out = mcpd(&["login", &url, "--credentials", file, "--no-browser", "--wait", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{url} did not ask for authorization: nothing was stored\n"));
    assert!(!path.exists() && !path.parent().unwrap().exists(), "nothing created");

    let foreign = dir.path().join("foreign.json");
    fs::write(&foreign, "[]").unwrap();
    let line = exit_2_line(&mcpd(&["login", &url, "--credentials", foreign.to_str().unwrap(), "--no-browser"]));
    assert!(line.starts_with(&format!("mcpd: {} is not an mcpd credentials file", foreign.display())), "{line}");

    let secret = dir.path().join("secret");
    fs::write(&secret, "s3cret\n").unwrap();
    let line = exit_2_line(&mcpd(&["login", &url, "--client-secret-file", secret.to_str().unwrap()]));
    assert!(line.contains("--client-id"), "{line}");
    assert!(!line.contains("s3cret"), "{line}");

    let line = exit_2_line(&mcpd(&["login", "ftp://x/mcp", "--credentials", file]));
    assert_eq!(line, "mcpd: MCP URL must use http:// or https://.");
}

// ---- a scripted resource + authorization server ---------------------------------------------

/// The access token the mock authorization server issues.
const ISSUED_TOKEN: &str = "at-issued-by-mock";

/// A resource server at `/mcp` (stateless 2026-07-28, tools `echo`) that wants a bearer
/// token (`401` with a `resource_metadata` challenge otherwise), with its RFC 9728 metadata,
/// and an authorization server at the same origin (RFC 8414 metadata, dynamic registration,
/// a token endpoint issuing [`ISSUED_TOKEN`] for any code, refresh or client credentials).
fn mock_auth_server() -> MockServer {
    MockServer::start(|request: &Recorded| {
        let origin = format!("http://{}", request.header("host").unwrap_or("127.0.0.1"));
        let path = request.path.split('?').next().unwrap_or("");
        match (request.method.as_str(), path) {
            ("GET", "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource") => {
                Reply::json(200, &json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}))
            }
            ("GET", "/.well-known/oauth-authorization-server") => Reply::json(
                200,
                &json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"]
                }),
            ),
            ("POST", "/register") => {
                let mut metadata = request.json().unwrap_or_else(|| json!({}));
                metadata["client_id"] = json!("registered-client");
                Reply::json(201, &metadata)
            }
            ("POST", "/token") => Reply::json(
                200,
                &json!({"access_token": ISSUED_TOKEN, "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-1"}),
            ),
            ("POST", "/mcp") if request.header("authorization") == Some(&format!("Bearer {ISSUED_TOKEN}")) => {
                let id = request.rpc_id();
                match request.rpc_method().as_deref() {
                    Some("server/discover") => Reply::result(
                        &id,
                        json!({
                            "supportedVersions": ["2026-07-28"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "protected", "version": "1"},
                            "resultType": "complete"
                        }),
                    ),
                    Some("tools/list") => Reply::result(
                        &id,
                        json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "resultType": "complete"}),
                    ),
                    Some("tools/call") => Reply::result(
                        &id,
                        json!({"content": [{"type": "text", "text": "authorized"}], "isError": false, "resultType": "complete"}),
                    ),
                    _ => Reply::error(200, &id, -32601, "Method not found"),
                }
            }
            ("POST", "/mcp") => Reply::json(401, &json!({"error": "unauthorized"})).with_header(
                "WWW-Authenticate",
                &format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""),
            ),
            _ => Reply::text(404, "text/plain", "not found"),
        }
    })
}

/// `mcpd call` and `mcpd tools` against a server that needs a login nobody has given: exit 2,
/// one line that says `run: mcpd login URL`, nothing stored, no retry loop.
#[test]
fn call_and_tools_without_a_login_say_run_mcpd_login_and_exit_2() {
    let server = mock_auth_server();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials.json");
    let file = file.to_str().unwrap();
    let expected = format!("mcpd: {url} needs authorization: run: mcpd login {url}");
    assert_eq!(exit_2_line(&mcpd(&["call", &url, "echo", "--credentials", file])), expected);
    assert_eq!(exit_2_line(&mcpd(&["tools", &url, "--credentials", file])), expected);
    assert!(!Path::new(file).exists());
    let tokens = server.requests().iter().filter(|r| r.path.starts_with("/token")).count();
    assert_eq!(tokens, 0, "no token request without a person or stored credentials");
}

/// `mcpd login URL` headlessly: the browser is a script that records the authorization URL;
/// the test approves it the way an authorization server would (a redirect to the loopback
/// URI with a code and the request's state), the flow stores the tokens, the command names
/// the issuer, and `mcpd call` then uses the stored token without any prompt.
#[test]
fn login_completes_headlessly_and_call_then_uses_the_stored_token() {
    let server = mock_auth_server();
    let url = server.url();
    let origin = format!("http://127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials.json");
    let seen = dir.path().join("authorize-url");
    let script = dir.path().join("browser.sh");
    fs::write(
        &script,
        "#!/bin/sh\nprintf '%s' \"$1\" > \"$0.tmp\"\nmv \"$0.tmp\" \"$(dirname \"$0\")/authorize-url\"\n",
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o700)).unwrap();

    let mut cmd = mcpd_command();
    cmd.env("BROWSER", &script).args(["login", &url, "--credentials", file.to_str().unwrap(), "--wait", "60"]);
    let login = std::thread::spawn(move || run_with_timeout(&mut cmd, b"", RUN_TIMEOUT));
    let authorize_url = eventually_blocking("the browser to be started", Duration::from_secs(30), || {
        assert!(!login.is_finished(), "mcpd login ended before starting the browser");
        fs::read_to_string(&seen).ok()
    });
    assert!(authorize_url.starts_with(&format!("{origin}/authorize?")), "{authorize_url}");
    let query: Vec<(String, String)> =
        actix_web::web::Query::<Vec<(String, String)>>::from_query(authorize_url.split_once('?').unwrap().1)
            .unwrap()
            .into_inner();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(param("code_challenge_method").as_deref(), Some("S256"));
    assert_eq!(param("resource").as_deref(), Some(url.as_str()));
    let redirect = param("redirect_uri").unwrap();
    let port: u16 = redirect
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/callback"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("redirect URI {redirect}"));
    let state = param("state").unwrap();
    let issuer = urlencode(&origin);
    let (status, _, _) =
        http(port, "GET", &format!("/callback?code=code-1&state={}&iss={issuer}", urlencode(&state)), &[], "");
    assert_eq!(status, 200);
    let out = login.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("logged in to {url} (issuer {origin})\n"));
    assert!(text(&out.stderr).contains("Open this URL to authorize: "), "{}", text(&out.stderr));
    assert_eq!(mode(&file), 0o600);
    let stored = FileStore::new(&file).entries().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].access_token.as_deref(), Some(ISSUED_TOKEN));

    let out = mcpd(&["call", &url, "echo", "--credentials", file.to_str().unwrap()]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), "authorized\n".to_owned()), "{}", text(&out.stderr));
}

/// `application/x-www-form-urlencoded` of one value.
fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

// ---- servers-file oauth settings -----------------------------------------------------------

fn servers_file(dir: &Path, oauth: Value, url: &str) -> PathBuf {
    let path = dir.join("servers.json");
    let file = json!({"mcpServers": {"m2m": {"url": url, "oauth": oauth}}});
    fs::write(&path, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    path
}

/// `mcpd serve --servers FILE` refuses an entry whose `oauth` is invalid, naming the entry,
/// with the configuration's exact message (exit 2).
#[test]
fn serve_refuses_an_invalid_oauth_entry_with_its_exact_message() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (json!({"grant": "client_credentials", "clientSecretEnv": "S"}), "oauth: a client secret needs clientId."),
        (json!({"clientId": "gw", "grant": "client_credentials"}), "oauth: the client_credentials grant needs clientSecretEnv, clientSecretFile or privateKeyFile."),
        (json!({"clientSecret": "inline"}), "oauth has no field \"clientSecret\": it takes clientId, clientSecretEnv, clientSecretFile, grant, privateKeyFile, algorithm and scope."),
    ];
    for (oauth, message) in cases {
        let path = servers_file(dir.path(), oauth, "http://127.0.0.1:9/mcp");
        let line = exit_2_line(&mcpd(&["serve", "--servers", path.to_str().unwrap(), "--no-file-tools"]));
        assert_eq!(line, format!("mcpd: server m2m: {message}"));
    }
}

fn record(oauth: Value, url: &str) -> ServerRecord {
    let file = ServersFile::from_value(json!({"mcpServers": {"m2m": {"url": url, "oauth": oauth}}})).unwrap();
    ServerRecord::new("m2m", file.document("m2m").unwrap())
}

fn manager() -> ClientManager {
    ClientManager::new(ClientHandlers::default(), Implementation::new("mcpd-oauth", "1"), Arc::new(ActorCounts::new()))
}

/// The secret an entry names is read when its connection is made: a variable that is not set
/// or a file that cannot be read is a configuration error naming the variable or file, never
/// the secret; with a `MemoryStore` or without any store alike.
#[actix_rt::test]
async fn a_named_secret_that_cannot_be_read_is_an_exact_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-secret");
    let empty = dir.path().join("empty-secret");
    fs::write(&empty, "\n").unwrap();
    let url = "http://127.0.0.1:9/mcp";
    let cases = [
        (
            json!({"clientId": "gw", "grant": "client_credentials", "clientSecretEnv": "MCPD_TEST_SURELY_UNSET_SECRET"}),
            "server m2m: oauth.clientSecretEnv: the environment variable MCPD_TEST_SURELY_UNSET_SECRET is not set"
                .to_owned(),
        ),
        (
            json!({"clientId": "gw", "grant": "client_credentials", "clientSecretFile": missing}),
            format!(
                "server m2m: oauth.clientSecretFile: cannot read {}: No such file or directory (os error 2)",
                missing.display()
            ),
        ),
        (
            json!({"clientId": "gw", "grant": "client_credentials", "privateKeyFile": empty}),
            format!("server m2m: oauth.privateKeyFile: {} is empty", empty.display()),
        ),
    ];
    for (oauth, expected) in cases {
        for with_store in [false, true] {
            let mut manager = manager();
            if with_store {
                manager = manager.with_credentials(Arc::new(MemoryStore::default()));
            }
            manager.upsert(record(oauth.clone(), url));
            let error = manager.test_and_refresh_tools("m2m").await.unwrap_err();
            assert_eq!(error, ClientError::Config(expected.clone()), "{oauth}");
        }
    }
}

/// The connection is made again when an entry's oauth settings change (they are part of its
/// fingerprint): after a connection with a readable secret file, the same entry naming a
/// missing file is refused when connecting, instead of the old connection being reused.
#[actix_rt::test]
async fn changed_oauth_settings_make_a_new_connection() {
    let server = mock_auth_server();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    fs::write(&secret, "gateway-secret\n").unwrap();
    let missing = dir.path().join("missing");
    let manager = manager();
    manager.upsert(record(
        json!({"clientId": "gw", "grant": "client_credentials", "clientSecretFile": secret}),
        &server.url(),
    ));
    // Whatever the remote answers (a 401 until the flow is merged), a connection is made.
    let _ = manager.test_and_refresh_tools("m2m").await;
    assert!(server.requests().iter().any(|r| r.path == "/mcp"), "the remote was contacted");
    manager.upsert(record(
        json!({"clientId": "gw", "grant": "client_credentials", "clientSecretFile": missing}),
        &server.url(),
    ));
    let error = manager.test_and_refresh_tools("m2m").await.unwrap_err();
    let expected = format!(
        "server m2m: oauth.clientSecretFile: cannot read {}: No such file or directory (os error 2)",
        missing.display()
    );
    assert_eq!(error, ClientError::Config(expected));
    let plain = ServerRecord::new("m2m", ConfigDocument::from_value(json!({"url": server.url()})).unwrap());
    manager.upsert(plain);
    assert_ne!(manager.test_and_refresh_tools("m2m").await.err().map(|e| e.to_string()).unwrap_or_default(), "");
    manager.close().await;
}

/// The gateway with a machine-to-machine remote: `client_credentials` with the secret from the
/// named variable's file, the token used for the remote's tools.
#[actix_rt::test]
async fn a_client_credentials_remote_gets_its_token_and_its_tools() {
    let server = mock_auth_server();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    fs::write(&secret, "gateway-secret\n").unwrap();
    let manager = manager().with_credentials(Arc::new(FileStore::new(dir.path().join("c.json"))));
    manager.upsert(record(
        json!({"clientId": "gw", "grant": "client_credentials", "clientSecretFile": secret}),
        &server.url(),
    ));
    let tools = manager.test_and_refresh_tools("m2m").await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    let token_request = server.requests().into_iter().find(|r| r.path == "/token").expect("a token request");
    let body = String::from_utf8_lossy(&token_request.body).into_owned();
    assert!(body.contains("grant_type=client_credentials"), "{body}");
    manager.close().await;
}

/// The gateway with the credentials file: a remote that needs a login nobody gave is down,
/// its health saying `run: mcpd login URL`; once a token for it is stored (as `mcpd login`
/// would), the next refresh exports its tools.
#[actix_rt::test]
async fn the_gateway_says_which_remote_needs_mcpd_login_and_uses_the_stored_token() {
    use mcpd::catalog::{Catalog, LiveCatalog};
    use mcpd::config::ToolFilter;
    use mcpd_actors::tools::gateway::Gateway;

    let server = mock_auth_server();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::new(dir.path().join("credentials.json")));
    let record = ServerRecord::new("protected", ConfigDocument::from_value(json!({"url": url})).unwrap());
    let live = Arc::new(LiveCatalog::new(Catalog::new()));
    let gateway = Gateway::with_credentials(
        vec![record],
        live.clone(),
        ToolFilter::from_value(None),
        Arc::new(ActorCounts::new()),
        Some(store.clone()),
    );
    gateway.refresh_all().await;
    let health = gateway.health();
    assert!(!health[0].up);
    assert_eq!(health[0].error.as_deref(), Some(format!("{url} needs authorization: run: mcpd login {url}").as_str()));

    let origin = format!("http://127.0.0.1:{}", server.port);
    store
        .save(&Credentials {
            resource: url.clone(),
            issuer: origin,
            client_id: "registered-client".into(),
            access_token: Some(ISSUED_TOKEN.into()),
            expires_at: Some(u64::MAX / 2),
            ..Credentials::default()
        })
        .unwrap();
    gateway.refresh_all().await;
    assert_eq!(live.snapshot().tool_names(), ["protected__echo"]);
    gateway.close().await;
}
