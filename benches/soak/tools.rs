//! The tools the soak adds to the catalog of the server under test:
//!
//! - `soak_wait {token, ms}`: a slow call, for cancellation. It tells the [`Probe`] it has
//!   started (the arrival signal the cancelling client waits for), then waits `ms` (at most
//!   [`MAX_WAIT_MS`]). The probe counts how many run now, so that the end of the soak can check
//!   that cancelled calls really stopped.
//! - `soak_chatty {count, interval_ms, size}`: sends `count` progress notifications carrying
//!   `size` bytes of text each, `interval_ms` apart, then answers `chatted <count>`. Its answer
//!   is an SSE stream: the soak drops and resumes it, or stops reading it (a slow reader).
//!
//! The arguments are bounded, so that no request can make a tool run or send without limit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpd::model::{CallToolResult, Tool};
use mcpd::{Catalog, ToolContext, ToolError};
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

/// The longest `soak_wait` waits.
pub(crate) const MAX_WAIT_MS: u64 = 60_000;
/// The most notifications `soak_chatty` sends.
const MAX_EVENTS: u64 = 10_000;
/// The largest text one notification carries.
const MAX_SIZE: u64 = 64 * 1024;
/// The longest pause between two notifications.
const MAX_INTERVAL_MS: u64 = 1_000;

/// What the soak learns from inside `soak_wait`: which calls arrived, how many run now, how many
/// ran to their end.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    arrivals: Mutex<HashMap<String, oneshot::Sender<()>>>,
    running: AtomicI64,
    finished: AtomicU64,
}

impl Probe {
    /// The signal that fires when the `soak_wait` call with `token` starts.
    pub(crate) fn expect(&self, token: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.arrivals.lock().unwrap_or_else(PoisonError::into_inner).insert(token.to_owned(), tx);
        rx
    }

    /// Forgets the signal of a call that will not arrive.
    pub(crate) fn forget(&self, token: &str) {
        self.arrivals.lock().unwrap_or_else(PoisonError::into_inner).remove(token);
    }

    /// `soak_wait` calls running now.
    pub(crate) fn running(&self) -> i64 {
        self.running.load(Ordering::Relaxed)
    }

    /// `soak_wait` calls that waited their whole time (none should: every one is cancelled).
    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }

    fn start(self: &Arc<Self>, token: &str) -> RunningCall {
        self.running.fetch_add(1, Ordering::Relaxed);
        let signal = self.arrivals.lock().unwrap_or_else(PoisonError::into_inner).remove(token);
        if let Some(signal) = signal {
            let _ = signal.send(());
        }
        RunningCall(self.clone())
    }
}

/// Counts a `soak_wait` call as running until it ends, however it ends (a cancelled call's
/// future is dropped).
struct RunningCall(Arc<Probe>);

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Argument `name`: an integer up to `max` (`default` when absent); the error's text otherwise.
fn bounded(arguments: &Map<String, Value>, name: &str, default: u64, max: u64) -> Result<u64, String> {
    match arguments.get(name) {
        None => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if n <= max => Ok(n),
            _ => Err(format!("{name} must be an integer from 0 to {max}, got {value}")),
        },
    }
}

async fn wait(probe: Arc<Probe>, arguments: Map<String, Value>) -> Result<CallToolResult, ToolError> {
    let ms = bounded(&arguments, "ms", 1_000, MAX_WAIT_MS)?;
    let token = arguments.get("token").and_then(Value::as_str).unwrap_or_default();
    let _running = probe.start(token);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    probe.finished.fetch_add(1, Ordering::Relaxed);
    Ok(CallToolResult::text("waited"))
}

async fn chatty(arguments: Map<String, Value>, context: ToolContext) -> Result<CallToolResult, ToolError> {
    let count = bounded(&arguments, "count", 10, MAX_EVENTS)?;
    let interval = bounded(&arguments, "interval_ms", 10, MAX_INTERVAL_MS)?;
    let size = bounded(&arguments, "size", 16, MAX_SIZE)?;
    let text = "x".repeat(size as usize);
    for i in 1..=count {
        context.progress(i as f64, Some(count as f64), Some(&text));
        if interval > 0 {
            tokio::time::sleep(Duration::from_millis(interval)).await;
        }
    }
    Ok(CallToolResult::text(format!("chatted {count}")))
}

/// Adds `soak_wait` and `soak_chatty` to `catalog`.
pub(crate) fn register(catalog: &mut Catalog, probe: Arc<Probe>) {
    let integer = |max: u64| json!({"type": "integer", "minimum": 0, "maximum": max});
    let wait_schema =
        json!({"type": "object", "properties": {"token": {"type": "string"}, "ms": integer(MAX_WAIT_MS)}});
    catalog.add_tool(
        Tool::new("soak_wait", "Waits ms milliseconds (for cancellation).", wait_schema),
        move |arguments: Map<String, Value>, _context: ToolContext| wait(probe.clone(), arguments),
    );
    let chatty_schema = json!({"type": "object", "properties": {
        "count": integer(MAX_EVENTS), "interval_ms": integer(MAX_INTERVAL_MS), "size": integer(MAX_SIZE)}});
    catalog
        .add_tool(Tool::new("soak_chatty", "Sends count progress notifications, then answers.", chatty_schema), chatty);
}
