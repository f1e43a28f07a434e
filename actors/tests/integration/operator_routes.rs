//! Operator routes for operators, through the real binary: with authentication configured,
//! `/status`, `/` and `/metrics` are found only by operators — a `--key` key, an access-file
//! client marked `"operator": true`, a token granting the operator scope — and everyone else gets
//! the 404 of a path that does not exist; each caller reads its own slice at `/status/me`;
//! Prometheus scrapes with a key file, its text read by the reference parser; without any
//! authentication the routes stay open.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::oidc;
use crate::support::process::{self, HttpChild};
use crate::support::{interop_script, python};

const ADMIN: &str = "admin-key-0123456789abcdef";
const CI: &str = "ci-key-0123456789abcdef";
const OPS: &str = "ops-key-0123456789abcdef";
const SCRAPER: &str = "scraper-key-in-its-own-file-0123";

fn get(port: u16, path: &str, bearer: Option<&str>) -> (u16, String) {
    let auth = bearer.map(|b| format!("Bearer {b}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let (status, _, body) = process::http(port, "GET", path, &headers, "");
    (status, body)
}

fn access_file(dir: &Path) -> std::path::PathBuf {
    let secrets = tempfile::tempdir().unwrap().keep();
    let scraper_key = secrets.join("scraper.key");
    std::fs::write(&scraper_key, SCRAPER).unwrap();
    let clients = json!({"clients": [
        {"name": "ci", "key": CI, "tools": ["echo"], "limits": {"sessions": 3}},
        {"name": "ops", "key": OPS, "tools": ["*"], "operator": true},
        {"name": "prometheus", "keyFile": scraper_key.to_str().unwrap(), "operator": true}
    ]});
    let path = dir.join("access.json");
    std::fs::write(&path, clients.to_string()).unwrap();
    path
}

#[test]
fn a_restricted_client_finds_no_operator_route_and_reads_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let access = access_file(dir.path());
    let server = HttpChild::spawn(&["serve", "--no-file-tools", "--access", access.to_str().unwrap(), "--key", ADMIN]);
    let port = server.port;
    let absent = get(port, "/no-such-route", Some(CI));
    assert_eq!(absent.0, 404);
    for path in ["/status", "/", "/metrics"] {
        let (status, body) = get(port, path, Some(CI));
        let named = format!("Not found: {path};");
        assert_eq!(
            (status, body.replace(&named, "X")),
            (absent.0, absent.1.replace("Not found: /no-such-route;", "X")),
            "{path}"
        );
    }
    for operator in [ADMIN, OPS, SCRAPER] {
        let (status, body) = get(port, "/status", Some(operator));
        assert_eq!(status, 200, "{body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["access"]["clients"].as_array().map(Vec::len), Some(3), "the whole status");
        assert_eq!(get(port, "/metrics", Some(operator)).0, 200);
    }

    // Its own slice: its name, patterns and limits, and nothing of anyone else or the deployment.
    let (status, body) = get(port, "/status/me", Some(CI));
    assert_eq!(status, 200, "{body}");
    let me: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(me["identity"], "client:ci");
    assert_eq!(me["client"]["name"], "ci");
    assert_eq!(me["client"]["tools"], json!(["echo"]));
    assert_eq!(me["client"]["limits"]["sessions"], 3);
    assert_eq!(me["held"], json!({"sessions": 0, "streams": 0, "inFlight": 0}));
    for other in ["ops", "prometheus", "projectDir", "remotes", dir.path().to_str().unwrap()] {
        assert!(!body.contains(other), "/status/me shows {other:?}: {body}");
    }
    assert_eq!(get(port, "/status/me", Some("wrong-key")).0, 401);
}

#[test]
fn prometheus_scrapes_with_the_key_file_it_is_given() {
    let Some(python) = python::python_with("import prometheus_client") else { return };
    let dir = tempfile::tempdir().unwrap();
    let access = access_file(dir.path());
    let server = HttpChild::spawn(&["serve", "--no-file-tools", "--access", access.to_str().unwrap()]);
    // What Prometheus's `authorization: {credentials_file: …}` sends: the file's content as a bearer.
    let credentials = std::fs::read_to_string(access_file_key(&access)).unwrap();
    let (status, text) = get(server.port, "/metrics", Some(credentials.trim()));
    assert_eq!(status, 200, "{text}");
    let mut parse = Command::new(python);
    parse.arg(interop_script("parse_metrics.py")).arg("prometheus");
    let output = process::run_with_timeout(&mut parse, text.as_bytes(), Duration::from_secs(30));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}{}", String::from_utf8_lossy(&output.stderr));
    let families: Value = serde_json::from_str(report.trim()).unwrap();
    assert!(families.get("mcpd_client_calls").is_some() && families.get("mcpd_session_refusals").is_some(), "{report}");
}

/// The scraper's key file, as the access file names it.
fn access_file_key(access: &Path) -> String {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(access).unwrap()).unwrap();
    file["clients"][2]["keyFile"].as_str().unwrap().to_owned()
}

#[test]
fn a_token_granting_the_operator_scope_reads_the_operator_routes() {
    let Some(provider) = oidc::spawn_provider() else { return };
    let server = HttpChild::spawn(&["serve", "--no-file-tools", "--auth-issuer", provider.issuer()]);
    let resource = format!("http://127.0.0.1:{}/mcp", server.port);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let token = |scope: &str| {
        let claims =
            json!({"iss": provider.issuer(), "aud": resource, "exp": now + 300, "sub": "alice", "scope": scope});
        provider.mint("k1.pem", "k1", &claims)
    };
    assert_eq!(get(server.port, "/status", Some(&token("mcp"))).0, 404);
    assert_eq!(get(server.port, "/metrics", Some(&token("mcp"))).0, 404);
    assert_eq!(get(server.port, "/status", Some(&token("mcp mcp:admin"))).0, 200);
    assert_eq!(get(server.port, "/metrics", Some(&token("mcp:admin"))).0, 200);
    let me: Value = serde_json::from_str(&get(server.port, "/status/me", Some(&token("mcp"))).1).unwrap();
    assert_eq!(me["identity"], "an OAuth subject");
    drop(server);
    let custom = HttpChild::spawn(&[
        "serve",
        "--no-file-tools",
        "--auth-issuer",
        provider.issuer(),
        "--auth-operator-scope",
        "ops",
    ]);
    let resource = format!("http://127.0.0.1:{}/mcp", custom.port);
    let claims = json!({"iss": provider.issuer(), "aud": resource, "exp": now + 300, "sub": "bob", "scope": "ops"});
    assert_eq!(get(custom.port, "/status", Some(&provider.mint("k1.pem", "k1", &claims))).0, 200);
}

#[test]
fn without_authentication_the_operator_routes_stay_open() {
    let server = HttpChild::spawn(&["serve", "--no-file-tools"]);
    for path in ["/status", "/", "/metrics", "/status/me"] {
        assert_eq!(get(server.port, path, None).0, 200, "{path}");
    }
}
