//! SSE operations over raw connections ([`crate::wire`]), each in a session of its own:
//!
//! - `resume`: a POST answered with a stream of progress events is dropped after a few, then
//!   resumed with `GET` + `Last-Event-ID`: every event must arrive exactly once, in order, then
//!   the answer. Then the session's standalone stream: opened, dropped after a `list_changed`,
//!   and resumed after the catalog changed again: the first event replayed is the next one.
//! - `slow_reader`: a POST answered with many large progress events (sent over the pause), read
//!   through a small receive buffer that is not read for a while. Reading everything afterwards is fine; so is
//!   being cut off by the server (a slow reader's cap; expected), after which the soak tries to
//!   resume the stream (`slow_reader_resume`: resumed to the answer, or refused — both fine).

use std::time::Duration;

use mcpd::client::sse::SseEvent;
use serde_json::{json, Value};

use crate::ctx::Ctx;
use crate::session::VERSION;
use crate::stats::{expected, unintended, Failure, Outcome};
use crate::wire::{self, Exchange, ReadError};

/// Longest wait for one event.
const EVENT_LIMIT: Duration = Duration::from_secs(10);
/// Progress events of a resumed call.
const RESUME_COUNT: u64 = 30;
/// Progress events of a slow reader's call, and the text each carries.
const SLOW_COUNT: u64 = 400;
const SLOW_SIZE: u64 = 1024;
/// The slow reader's socket receive buffer (the kernel makes it somewhat larger).
const RECEIVE_BUFFER: u32 = 4096;

fn chatty_call(request: i64, token: String, count: u64, interval_ms: u64, size: u64) -> String {
    json!({"jsonrpc":"2.0","id":request,"method":"tools/call","params":{"name":"soak_chatty",
        "arguments":{"count":count,"interval_ms":interval_ms,"size":size},"_meta":{"progressToken":token}}})
    .to_string()
}

/// `<stream>:<seq>`.
fn event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.split_once(':')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// What a client has read of one `soak_chatty` answer.
struct Progress {
    request: i64,
    next: u64,
    last_id: Option<String>,
    answer: Option<Value>,
}

impl Progress {
    fn new(request: i64) -> Self {
        Progress { request, next: 1, last_id: None, answer: None }
    }

    /// Takes one event: the priming event (no data), the next progress notification, or the
    /// answer; anything else, or progress out of order, is an error.
    fn take(&mut self, event: SseEvent) -> Result<(), String> {
        if let Some(id) = &event.id {
            self.last_id = Some(id.clone());
        }
        if event.data.is_empty() {
            return Ok(());
        }
        let message: Value = serde_json::from_str(&event.data).map_err(|e| format!("event not JSON: {e}"))?;
        if message["method"] == "notifications/progress" {
            let progress = message["params"]["progress"].as_f64();
            if progress != Some(self.next as f64) || self.answer.is_some() {
                return Err(format!("progress {progress:?} where {} was due", self.next));
            }
            self.next += 1;
        } else if message["id"] == self.request {
            self.answer = Some(message);
        } else {
            return Err(format!("unexpected event: {}", event.data.chars().take(200).collect::<String>()));
        }
        Ok(())
    }

    /// Whether all `count` events and then the right answer arrived.
    fn complete(&self, count: u64) -> bool {
        self.next == count + 1
            && self.answer.as_ref().is_some_and(|a| a["result"]["content"][0]["text"] == format!("chatted {count}"))
    }
}

/// Reads events until the answer; false when the stream ended first.
async fn read_to_answer(exchange: &mut Exchange, progress: &mut Progress) -> Result<bool, Failure> {
    while progress.answer.is_none() {
        match exchange.next_event(EVENT_LIMIT).await {
            Ok(Some(event)) => progress.take(event).map_err(|e| unintended("stream out of order", e))?,
            Ok(None) => return Ok(false),
            Err(e) => return Err(unintended("stream broke", e.to_string())),
        }
    }
    Ok(true)
}

/// Checks that an answer is `200 text/event-stream`.
async fn expect_stream(exchange: &mut Exchange, what: &'static str) -> Result<(), Failure> {
    if exchange.status == 200 && exchange.sse {
        return Ok(());
    }
    let body = exchange.text(EVENT_LIMIT).await.unwrap_or_else(|e| e);
    Err(unintended(what, format!("status {} (sse: {}): {body}", exchange.status, exchange.sse)))
}

impl Ctx {
    /// Sends a request on a connection of its own, counting it.
    async fn raw(
        &self,
        receive_buffer: Option<u32>,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Exchange, Failure> {
        self.stats.request();
        wire::send(self.port, receive_buffer, method, headers, body).await.map_err(|e| unintended("request failed", e))
    }

    /// `GET /mcp` in `session`, resuming after `last` if given.
    async fn get_stream(&self, session: &str, last: Option<&str>) -> Result<Exchange, Failure> {
        let mut headers =
            vec![("Accept", "text/event-stream"), ("Mcp-Session-Id", session), ("MCP-Protocol-Version", VERSION)];
        if let Some(last) = last {
            headers.push(("Last-Event-ID", last));
        }
        self.raw(None, "GET", &headers, "").await
    }
}

/// Drops a streamed answer after a few events and resumes it; then the standalone stream.
pub(crate) async fn resume(ctx: &Ctx, n: u64) -> Outcome {
    let id = ctx.open_session().await?;
    let headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", VERSION)];
    let body = chatty_call(5, format!("r{n}"), RESUME_COUNT, 15, 64);
    let mut first = ctx.raw(None, "POST", &headers, &body).await?;
    expect_stream(&mut first, "the POST was not streamed").await?;
    let mut progress = Progress::new(5);
    let keep = 2 + n % 5;
    while progress.next <= keep {
        match first.next_event(EVENT_LIMIT).await {
            Ok(Some(event)) => progress.take(event).map_err(|e| unintended("stream out of order", e))?,
            Ok(None) => return Err(unintended("the POST stream ended early", format!("at {}", progress.next))),
            Err(e) => return Err(unintended("the POST stream broke", e.to_string())),
        }
    }
    drop(first);
    let last = progress.last_id.clone().ok_or_else(|| unintended("no event id to resume from", String::new()))?;
    let mut resumed = ctx.get_stream(&id, Some(&last)).await?;
    expect_stream(&mut resumed, "the resumption was refused").await?;
    if !read_to_answer(&mut resumed, &mut progress).await? || !progress.complete(RESUME_COUNT) {
        let answer = progress.answer.map(|a| a.to_string()).unwrap_or_default();
        return Err(unintended(
            "the resumed stream missed events",
            format!("next {} after {last}; {answer}", progress.next),
        ));
    }
    drop(resumed);
    standalone(ctx, &id).await?;
    ctx.end_session(&id, n).await.map(|how| if how == "deleted" { "resumed, deleted" } else { "resumed, abandoned" })
}

/// The standalone stream: open it, drop it after a `list_changed`, let the catalog change, and
/// resume: the first event replayed must be the one after the last seen.
async fn standalone(ctx: &Ctx, session: &str) -> Result<(), Failure> {
    let mut stream = ctx.get_stream(session, None).await?;
    expect_stream(&mut stream, "the standalone stream was refused").await?;
    let mut last = None;
    loop {
        match stream.next_event(EVENT_LIMIT).await {
            Ok(Some(event)) => {
                last = event.id.clone().or(last);
                if !event.data.is_empty() {
                    if !event.data.contains("notifications/tools/list_changed") {
                        return Err(unintended("unexpected standalone event", event.data));
                    }
                    break;
                }
            }
            Ok(None) => return Err(unintended("the standalone stream ended", String::new())),
            Err(e) => return Err(unintended("no list_changed on the standalone stream", e.to_string())),
        }
    }
    let last = last.ok_or_else(|| unintended("standalone events have no id", String::new()))?;
    let mut toggles = ctx.toggles.clone();
    let seen = *toggles.borrow_and_update();
    drop(stream);
    if !matches!(tokio::time::timeout(EVENT_LIMIT, toggles.wait_for(|t| *t > seen)).await, Ok(Ok(_))) {
        return Err(unintended("the catalog stopped changing", String::new()));
    }
    let mut resumed = ctx.get_stream(session, Some(&last)).await?;
    expect_stream(&mut resumed, "the standalone resumption was refused").await?;
    let (stream_id, seq) = event_id(&last).ok_or_else(|| unintended("malformed event id", last.clone()))?;
    loop {
        match resumed.next_event(EVENT_LIMIT).await {
            Ok(Some(event)) if event.data.is_empty() => continue,
            Ok(Some(event)) => {
                let id = event.id.as_deref().and_then(event_id);
                if id != Some((stream_id, seq + 1)) || !event.data.contains("notifications/tools/list_changed") {
                    return Err(unintended(
                        "the standalone replay is not the next event",
                        format!("after {last}: {:?} {}", event.id, event.data),
                    ));
                }
                return Ok(());
            }
            Ok(None) => return Err(unintended("the resumed standalone stream ended", String::new())),
            Err(e) => return Err(unintended("nothing replayed on the standalone stream", e.to_string())),
        }
    }
}

/// A streamed answer read through a small buffer, not at all for a while, then to its end.
pub(crate) async fn slow_reader(ctx: &Ctx, n: u64) -> Outcome {
    let id = ctx.open_session().await?;
    let headers = [("Mcp-Session-Id", id.as_str()), ("MCP-Protocol-Version", VERSION)];
    // The events come over the whole pause: the call runs (and keeps its session busy) while
    // the reader does not read. A call that ended at once would leave its answer queued for
    // delivery and its session idle, and a pause longer than the idle timeout would end it.
    let interval = (ctx.slow_pause.as_millis() / u128::from(SLOW_COUNT)).min(1000) as u64;
    let body = chatty_call(6, format!("w{n}"), SLOW_COUNT, interval, SLOW_SIZE);
    let mut stream = ctx.raw(Some(RECEIVE_BUFFER), "POST", &headers, &body).await?;
    expect_stream(&mut stream, "the slow POST was not streamed").await?;
    // The slow reader: nothing is read meanwhile, so the server holds what does not fit.
    tokio::time::sleep(ctx.slow_pause).await;
    let mut progress = Progress::new(6);
    let cut_off = loop {
        match stream.next_event(EVENT_LIMIT).await {
            Ok(Some(event)) => {
                progress.take(event).map_err(|e| unintended("slow stream out of order", e))?;
                if progress.answer.is_some() {
                    break None;
                }
            }
            Ok(None) => break Some("the stream ended".to_owned()),
            Err(ReadError::Broken(reason)) => break Some(reason),
            Err(timeout @ ReadError::Timeout(_)) => {
                return Err(unintended("the slow stream stalled", timeout.to_string()))
            }
        }
    };
    drop(stream);
    let Some(reason) = cut_off else {
        if !progress.complete(SLOW_COUNT) {
            return Err(unintended("the slow stream missed events", format!("next {}", progress.next)));
        }
        return ctx.end_session(&id, n).await.map(|_| "read everything after the pause");
    };
    let resumed = resume_after_cut_off(ctx, &id, &mut progress).await;
    ctx.stats.record("slow_reader_resume", resumed);
    ctx.end_session(&id, n).await?;
    Err(expected("cut off by the server", format!("after {} of {SLOW_COUNT} events: {reason}", progress.next - 1)))
}

/// After a cut-off: resume from the last event read. Getting the rest, or a refusal, is fine.
async fn resume_after_cut_off(ctx: &Ctx, session: &str, progress: &mut Progress) -> Outcome {
    let last = progress.last_id.clone().ok_or_else(|| expected("resume refused after a cut-off", "no event id"))?;
    let mut resumed = ctx.get_stream(session, Some(&last)).await?;
    if matches!(resumed.status, 400 | 404) {
        let body = resumed.text(EVENT_LIMIT).await.unwrap_or_else(|e| e);
        return Err(expected("resume refused after a cut-off", format!("status {}: {body}", resumed.status)));
    }
    expect_stream(&mut resumed, "the resumption after a cut-off failed").await?;
    if read_to_answer(&mut resumed, progress).await? && progress.complete(SLOW_COUNT) {
        Ok("resumed to the answer")
    } else {
        Err(unintended("the resumption after a cut-off missed events", format!("next {}", progress.next)))
    }
}
