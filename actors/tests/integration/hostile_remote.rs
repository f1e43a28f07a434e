//! Remote data is untrusted: a hostile remote (`support/hostile.rs`) that lists broken entries
//! among good tools, answers results of the wrong shape, pages forever with fresh cursors, or
//! sends its pages too slowly — against the manager API (`ClientManager`), the gateway, and the
//! command line (`mcpd tools` / `mcpd call`). None panics, none hangs past its deadline, good
//! tools are kept, and each failure is one clear error (exit 2 on the command line).

use std::future::Future;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::catalog::LiveCatalog;
use mcpd::client::config::ConfigDocument;
use mcpd::client::list::ListLimits;
use mcpd::config::ToolFilter;
use mcpd::model::{Prompt, Resource};
use mcpd::Catalog;
use mcpd_actors::client::{ClientError, ClientHandlers, ClientManager, ServerRecord};
use mcpd_actors::tools::gateway::{load_servers, Gateway};
use mcpd_actors::ActorCounts;
use serde_json::{json, Map};

use crate::support::hostile::{hostile_server, list_requests, long_name, mixed_kept, mixed_skipped, Listing};
use crate::support::process::{mcpd_command, run_with_timeout, text, RUN_TIMEOUT};
use crate::support::server::{post_legacy, start_live};

/// The client's time limit here (the minimum it allows).
const TIMEOUT_SECS: u64 = 5;
/// Slack over the limit for "within the deadline" on a loaded machine.
const SLACK: Duration = Duration::from_millis(2500);
/// The outer bound of every async test.
const TEST_BOUND: Duration = Duration::from_secs(60);

async fn bounded<F: Future<Output = ()>>(test: F) {
    actix_rt::time::timeout(TEST_BOUND, test).await.expect("the test hung past its outer bound");
}

fn manager() -> ClientManager {
    ClientManager::new(
        ClientHandlers::default(),
        mcpd::model::Implementation::new("hostile-tests", "1"),
        Arc::new(ActorCounts::new()),
    )
}

fn record(id: &str, url: &str) -> ServerRecord {
    let document = ConfigDocument::from_value(json!({ "url": url })).expect("config document");
    ServerRecord { timeout_secs: TIMEOUT_SECS, ..ServerRecord::new(id, document) }
}

fn protocol(message: &str) -> ClientError {
    ClientError::Protocol(message.to_owned())
}

// ---- the manager API ------------------------------------------------------------------------

/// Broken entries (not objects, a megabyte name, names outside the charset, a duplicate, a
/// schema that is not an object) are skipped, each named with its reason; the good tools are
/// kept, in order, and stored in the record.
#[actix_rt::test]
async fn a_listing_keeps_the_good_tools_and_names_each_skipped_entry() {
    let server = hostile_server(Listing::Mixed);
    bounded(async {
        let manager = manager();
        manager.upsert(record("mixed", &server.url()));
        let listing = manager.refresh_tools("mixed").await.expect("the listing");
        let names: Vec<&str> = listing.items.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, mixed_kept());
        let skipped: Vec<String> = listing.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(skipped, mixed_skipped());
        assert_eq!(listing.skipped_count, mixed_skipped().len());
        assert_eq!(manager.record("mixed").expect("record").tools.len(), mixed_kept().len(), "stored");
        // The connection is not poisoned: the next listing and a call work.
        assert_eq!(manager.test_and_refresh_tools("mixed").await.expect("again").len(), mixed_kept().len());
        assert_eq!(manager.call_tool("mixed", "alpha", Map::new()).await.expect("alpha").text(), "alpha ok");
    })
    .await;
}

/// A listing whose result is not an object, whose `tools` is not an array, or whose
/// `nextCursor` is not a string is a protocol error that says so; the record keeps no tools.
#[actix_rt::test]
async fn a_listing_of_the_wrong_shape_is_a_protocol_error() {
    let not_array = hostile_server(Listing::ToolsNotArray);
    let not_object = hostile_server(Listing::NotAnObject);
    let cursor = hostile_server(Listing::CursorNotString);
    bounded(async {
        let manager = manager();
        for (id, server, message) in [
            ("not-array", &not_array, "the tools/list result's tools is not an array (a string)"),
            ("not-object", &not_object, "the tools/list result is not an object (a string)"),
            ("cursor", &cursor, "the tools/list result's nextCursor is not a string (a number)"),
        ] {
            manager.upsert(record(id, &server.url()));
            assert_eq!(manager.test_and_refresh_tools(id).await, Err(protocol(message)), "{id}");
            assert!(manager.record(id).expect("record").tools.is_empty());
        }
        assert_eq!(
            protocol("the tools/list result's tools is not an array (a string)").to_string(),
            "protocol error: the tools/list result's tools is not an array (a string)"
        );
    })
    .await;
}

/// A server that pages forever with fresh cursors is stopped at the page limit (default 100:
/// exactly 100 requests), or at the entry limit when that comes first.
#[actix_rt::test]
async fn an_endless_listing_stops_at_its_page_or_entry_limit() {
    let pages = hostile_server(Listing::Endless);
    let entries = hostile_server(Listing::Endless);
    bounded(async {
        let manager = manager();
        manager.upsert(record("pages", &pages.url()));
        let outcome = manager.test_and_refresh_tools("pages").await;
        let limit = "tools/list returned more than 100 pages; stopped there (the listing's page limit)";
        assert_eq!(outcome, Err(ClientError::Limit(limit.into())));
        assert_eq!(outcome.unwrap_err().to_string(), format!("listing stopped: {limit}"));
        assert_eq!(list_requests(&pages), 100, "the default page limit");

        let limits = ListLimits { max_pages: 100, max_items: 25 };
        manager.upsert(ServerRecord { list_limits: limits, ..record("entries", &entries.url()) });
        let outcome = manager.test_and_refresh_tools("entries").await;
        let limit = "tools/list returned more than 25 entries; stopped there (the listing's entry limit)";
        assert_eq!(outcome, Err(ClientError::Limit(limit.into())));
        assert_eq!(list_requests(&entries), 3, "10 entries a page: the third passes 25");
    })
    .await;
}

/// Pages that each come well within the per-request limit, but never end: the whole listing has
/// one deadline (the server's 5 s timeout) and fails there, after several pages.
#[actix_rt::test]
async fn a_slow_endless_listing_fails_at_its_one_deadline() {
    let server = hostile_server(Listing::Slow);
    bounded(async {
        let manager = manager();
        manager.upsert(record("slow", &server.url()));
        let started = Instant::now();
        let outcome = manager.test_and_refresh_tools("slow").await;
        let elapsed = started.elapsed();
        assert_eq!(outcome, Err(ClientError::Timeout(TIMEOUT_SECS)));
        assert!(elapsed <= Duration::from_secs(TIMEOUT_SECS) + SLACK, "took {elapsed:?}");
        assert!(elapsed >= Duration::from_secs(TIMEOUT_SECS) - Duration::from_millis(200), "took {elapsed:?}");
        assert!(list_requests(&server) >= 3, "several pages came in time: {}", list_requests(&server));
    })
    .await;
}

/// `isError: "yes"` and `content: "text"` are protocol errors, not results; a good call on the
/// same connection still works.
#[actix_rt::test]
async fn call_results_of_the_wrong_shape_are_protocol_errors() {
    let server = hostile_server(Listing::Mixed);
    bounded(async {
        let manager = manager();
        manager.upsert(record("calls", &server.url()));
        assert_eq!(
            manager.call_tool("calls", "is_error_yes", Map::new()).await,
            Err(protocol("the tools/call result's isError is not a boolean (a string)"))
        );
        assert_eq!(
            manager.call_tool("calls", "content_text", Map::new()).await,
            Err(protocol("the tools/call result's content is not an array (a string)"))
        );
        assert_eq!(manager.call_tool("calls", "beta", Map::new()).await.expect("beta").text(), "beta ok");
    })
    .await;
}

/// Prompts and resources are listed by the same rules: broken prompts skipped with the reason,
/// a `resources` member that is not an array a protocol error.
#[actix_rt::test]
async fn prompts_and_resources_are_listed_by_the_same_rules() {
    let server = hostile_server(Listing::Mixed);
    bounded(async {
        let manager = manager();
        manager.upsert(record("lists", &server.url()));
        let prompts = manager.list::<Prompt>("lists").await.expect("prompts");
        assert_eq!(prompts.items.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["hello"]);
        let skipped: Vec<String> = prompts.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(skipped, ["entry 0 (\"x\"): not an object (a string)", "entry 2 (name \"\"): the name is empty"]);
        assert_eq!(
            manager.list::<Resource>("lists").await,
            Err(protocol("the resources/list result's resources is not an array (a string)"))
        );
    })
    .await;
}

// ---- the gateway ----------------------------------------------------------------------------

/// Through the gateway: the good tools are re-exported (a valid name that would be too long
/// once prefixed is not), the status shows what was skipped and why; a remote of the wrong
/// shape or past its page limit (`maxListPages` in the servers file) is down with the exact
/// error; retries change nothing and never panic; calls pass good results and turn a result of
/// the wrong shape into the tool's `isError`. Its prompts and resources follow the same rules.
#[actix_rt::test]
async fn the_gateway_exports_the_good_tools_and_shows_the_problems() {
    let mixed = hostile_server(Listing::Mixed);
    let shape = hostile_server(Listing::ToolsNotArray);
    let endless = hostile_server(Listing::Endless);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("servers.json");
    let servers = json!({"mcpServers": {
        "mixed": {"url": mixed.url(), "timeout": 5},
        "shape": {"url": shape.url(), "timeout": 5},
        "endless": {"url": endless.url(), "timeout": 5, "maxListPages": 3}
    }});
    std::fs::write(&file, servers.to_string()).expect("servers file");
    bounded(async {
        let live = Arc::new(LiveCatalog::new(Catalog::new()));
        let records = load_servers(&file).expect("servers file");
        let gateway = Gateway::new(records, live.clone(), ToolFilter::from_value(None), Arc::new(ActorCounts::new()));
        gateway.refresh_all().await;
        let expected_names =
            ["mixed__alpha", "mixed__beta", "mixed__content_text", "mixed__is_error_yes", "mixed__no_schema_is_fine"];
        let check = |round: &str| {
            let mut names = live.snapshot().tool_names();
            names.sort();
            assert_eq!(names, expected_names, "{round}");
            let health = gateway.health();
            assert!(health[0].up && health[0].tools == 5 && health[0].error.is_none(), "{round}: {health:?}");
            let mut skipped = mixed_skipped();
            skipped.push(format!(
                "tool exported as {:?}: the name is 135 characters long (at most 128)",
                format!("mixed__{}…", &long_name()[..53])
            ));
            // Its prompts and resources are federated by the same rules (what the mixed remote
            // lists of them is broken in part and in whole).
            skipped.extend([
                "prompt: entry 0 (\"x\"): not an object (a string)".to_owned(),
                "prompt: entry 2 (name \"\"): the name is empty".to_owned(),
                "resources/list failed: protocol error: the resources/list result's resources is not an array (a string)"
                    .to_owned(),
            ]);
            assert_eq!(health[0].skipped, skipped, "{round}");
            assert_eq!((health[0].prompts, health[0].resources), (1, 0), "{round}: {health:?}");
            assert!(live.snapshot().prompt("mixed__hello").is_some(), "{round}");
            assert!(!health[1].up && health[1].tools == 0, "{round}: {health:?}");
            assert_eq!(
                health[1].error.as_deref(),
                Some("protocol error: the tools/list result's tools is not an array (a string)"),
                "{round}"
            );
            assert_eq!(
                health[2].error.as_deref(),
                Some(
                    "listing stopped: tools/list returned more than 3 pages; stopped there (the listing's page limit)"
                ),
                "{round}"
            );
            let status = gateway.health_json();
            assert_eq!(status[0]["skipped"].as_array().map(Vec::len), Some(12), "{round}: {status}");
        };
        check("first listing");
        assert_eq!(list_requests(&endless), 3, "maxListPages from the servers file");
        // The 30 s retries, twice: same outcome, no panic (a panic would show as an internal error).
        gateway.retry_unreachable().await;
        gateway.retry_unreachable().await;
        check("after two retries");
        assert_eq!(list_requests(&shape), 3, "the broken remote is retried");
        assert_eq!(list_requests(&mixed), 1, "a remote that listed is not");

        let server = start_live(live.clone(), Default::default(), |_| {}).await;
        let call = |id: i64, name: &str| post_legacy(&server, "2025-11-25", id, "tools/call", json!({"name": name}));
        let alpha = call(1, "mixed__alpha").await.json();
        assert_eq!(alpha["result"]["content"][0]["text"], "alpha ok", "{alpha}");
        let wrong = call(2, "mixed__is_error_yes").await.json();
        assert_eq!(wrong["result"]["isError"], true, "{wrong}");
        let text = wrong["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(
            text,
            "remote server mixed failed: protocol error: the tools/call result's isError is not a boolean (a string)"
        );
        gateway.close().await;
        server.runtime.close().await.expect("close");
    })
    .await;
}

// ---- the command line -----------------------------------------------------------------------

fn mcpd(args: &[&str]) -> Output {
    let mut cmd = mcpd_command();
    cmd.args(args);
    run_with_timeout(&mut cmd, b"", RUN_TIMEOUT)
}

/// Exit 2 with exactly one `mcpd: ` line on stderr (no panic, no backtrace), nothing on stdout;
/// the line without its `mcpd: `.
fn exit_2(output: &Output) -> String {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stdout:\n{}\nstderr:\n{stderr}", text(&output.stdout));
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{stderr}");
    assert!(output.stdout.is_empty(), "stdout: {}", text(&output.stdout));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    lines[0].strip_prefix("mcpd: ").unwrap_or_else(|| panic!("{stderr}")).to_owned()
}

/// `mcpd tools` against broken entries: exit 0, the good tools listed, the count of skipped
/// entries in the last line, and one warning per skipped entry on stderr.
#[test]
fn cli_tools_lists_the_good_tools_and_warns_of_each_skipped_entry() {
    let server = hostile_server(Listing::Mixed);
    let output = mcpd(&["tools", &server.url(), "--timeout", "5"]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let names: Vec<&str> = stdout.lines().filter_map(|line| line.split("  ").next()).collect();
    let mut expected = mixed_kept();
    expected.push(format!("({} tools, {} entries skipped)", mixed_kept().len(), mixed_skipped().len()));
    assert_eq!(names, expected, "{stdout}");
    let warnings: Vec<String> = mixed_skipped().iter().map(|s| format!("mcpd: warning: skipped {s}")).collect();
    assert_eq!(stderr.lines().collect::<Vec<_>>(), warnings, "{stderr}");
}

/// `mcpd tools` against results of the wrong shape, endless pages (page and entry limits from
/// the command line) and pages too slow for the deadline: exit 2 with the exact reason.
#[test]
fn cli_tools_fails_with_exit_2_and_the_reason() {
    let not_array = hostile_server(Listing::ToolsNotArray);
    assert_eq!(
        exit_2(&mcpd(&["tools", &not_array.url()])),
        "protocol error: the tools/list result's tools is not an array (a string)"
    );
    let not_object = hostile_server(Listing::NotAnObject);
    assert_eq!(
        exit_2(&mcpd(&["tools", &not_object.url(), "--json"])),
        "protocol error: the tools/list result is not an object (a string)"
    );
    let endless = hostile_server(Listing::Endless);
    assert_eq!(
        exit_2(&mcpd(&["tools", &endless.url(), "--max-list-pages", "5"])),
        "listing stopped: tools/list returned more than 5 pages; stopped there (the listing's page limit)"
    );
    assert_eq!(list_requests(&endless), 5);
    assert_eq!(
        exit_2(&mcpd(&["tools", &endless.url(), "--max-list-items", "15"])),
        "listing stopped: tools/list returned more than 15 entries; stopped there (the listing's entry limit)"
    );
    let slow = hostile_server(Listing::Slow);
    let started = Instant::now();
    let line = exit_2(&mcpd(&["tools", &slow.url(), "--timeout", "5"]));
    assert_eq!(line, "timed out after 5 s");
    assert!(started.elapsed() <= Duration::from_secs(TIMEOUT_SECS) + SLACK, "took {:?}", started.elapsed());
}

/// `mcpd call` whose result has `isError: "yes"` or `content: "text"`: exit 2 (a protocol
/// failure, not the tool's own error), with the reason.
#[test]
fn cli_call_with_a_result_of_the_wrong_shape_exits_2() {
    let server = hostile_server(Listing::Mixed);
    assert_eq!(
        exit_2(&mcpd(&["call", &server.url(), "is_error_yes"])),
        "protocol error: the tools/call result's isError is not a boolean (a string)"
    );
    assert_eq!(
        exit_2(&mcpd(&["call", &server.url(), "content_text", "--json"])),
        "protocol error: the tools/call result's content is not an array (a string)"
    );
    let output = mcpd(&["call", &server.url(), "alpha"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "alpha ok");
}
