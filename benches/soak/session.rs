//! Session operations over awc: open a 2025-11-25 session (`initialize`, then
//! `notifications/initialized`), call in it, and end it — DELETE (then check it is gone) or
//! abandon it to expire. Also the cancellation operation: a slow call cancelled with
//! `notifications/cancelled` once it is known to run.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::ctx::Ctx;
use crate::stats::{unintended, Failure, Outcome};

/// The revision sessions speak.
pub(crate) const VERSION: &str = "2025-11-25";
/// How long the cancelled call would wait if the cancellation did not land.
const WAIT_MS: u64 = 10_000;

/// An answer: status, `Mcp-Session-Id`, body.
type Answer = (u16, Option<String>, Bytes);

/// POSTs a JSON-RPC message, in `session` if given.
pub(crate) async fn post(
    http: &awc::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
    timeout: Duration,
) -> Result<Answer, String> {
    let mut request = http
        .post(url)
        .timeout(timeout)
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("mcp-protocol-version", VERSION));
    if let Some(session) = session {
        request = request.insert_header(("mcp-session-id", session));
    }
    let mut response = request.send_body(body.to_string()).await.map_err(|e| format!("send: {e}"))?;
    let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = response.body().await.map_err(|e| format!("body: {e}"))?;
    Ok((response.status().as_u16(), id, body))
}

fn show(answer: &Answer) -> String {
    format!("status {}: {}", answer.0, String::from_utf8_lossy(&answer.2))
}

impl Ctx {
    /// POSTs `body` in `session`, counting the request.
    pub(crate) async fn post(&self, session: Option<&str>, body: &Value) -> Result<Answer, String> {
        self.stats.request();
        post(&self.http, &self.url, session, body, Duration::from_secs(15)).await
    }

    /// Opens a session; answers its id.
    pub(crate) async fn open_session(&self) -> Result<String, Failure> {
        let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":VERSION,
            "capabilities":{},"clientInfo":{"name":"soak","version":"1"}}});
        let answer = self.post(None, &initialize).await.map_err(|e| unintended("initialize failed", e))?;
        let id = match &answer {
            (200, Some(id), _) => id.clone(),
            _ => return Err(unintended("initialize refused", show(&answer))),
        };
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let answer = self.post(Some(&id), &initialized).await.map_err(|e| unintended("initialized failed", e))?;
        if answer.0 != 202 {
            return Err(unintended("initialized refused", show(&answer)));
        }
        Ok(id)
    }

    /// Ends operation number `n`'s session: even numbers DELETE it (and check that it is gone),
    /// odd ones abandon it to expire.
    pub(crate) async fn end_session(&self, session: &str, n: u64) -> Outcome {
        if n % 2 == 1 {
            return Ok("abandoned");
        }
        self.stats.request();
        let deleted = self.http.delete(&self.url).insert_header(("mcp-session-id", session)).send().await;
        match deleted {
            Ok(response) if response.status() == 200 => {}
            Ok(response) => return Err(unintended("DELETE refused", format!("status {}", response.status()))),
            Err(e) => return Err(unintended("DELETE failed", e.to_string())),
        }
        let ping = json!({"jsonrpc":"2.0","id":9,"method":"ping"});
        match self.post(Some(session), &ping).await {
            Ok((404, _, _)) => Ok("deleted"),
            Ok(answer) => Err(unintended("a deleted session still answers", show(&answer))),
            Err(e) => Err(unintended("request after DELETE failed", e)),
        }
    }
}

/// Opens a session, calls `echo` three times in it, and ends it.
pub(crate) async fn session(ctx: &Ctx, n: u64) -> Outcome {
    let id = ctx.open_session().await?;
    for i in 0..3 {
        let text = format!("s{n}-{i}");
        let call = json!({"jsonrpc":"2.0","id":i + 1,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}});
        let answer = ctx.post(Some(&id), &call).await.map_err(|e| unintended("call in a session failed", e))?;
        let echoed =
            serde_json::from_slice::<Value>(&answer.2).is_ok_and(|v| v["result"]["content"][0]["text"] == text);
        if answer.0 != 200 || !echoed {
            return Err(unintended("wrong answer in a session", show(&answer)));
        }
    }
    ctx.end_session(&id, n).await
}

/// Starts `soak_wait` in a session, waits until the tool runs, cancels it, and checks that the
/// call is answered `202` with no body (a cancelled request gets no response).
pub(crate) async fn cancel(ctx: &Ctx, n: u64) -> Outcome {
    let id = ctx.open_session().await?;
    let token = format!("c{n}");
    let arrived = ctx.probe.expect(&token);
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"soak_wait",
        "arguments":{"token":token,"ms":WAIT_MS}}});
    let (http, url, session) = (ctx.http.clone(), ctx.url.clone(), id.clone());
    ctx.stats.request();
    let running = actix_rt::spawn(async move {
        post(&http, &url, Some(&session), &call, Duration::from_millis(WAIT_MS + 5_000)).await
    });
    if !matches!(tokio::time::timeout(Duration::from_secs(10), arrived).await, Ok(Ok(()))) {
        ctx.probe.forget(&token);
        running.abort();
        return Err(unintended("the slow call never started", format!("session {id}")));
    }
    let cancelled =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"soak"}});
    let answer = ctx.post(Some(&id), &cancelled).await.map_err(|e| unintended("cancel failed", e))?;
    if answer.0 != 202 {
        return Err(unintended("cancel refused", show(&answer)));
    }
    match running.await {
        Ok(Ok(answer)) if answer.0 == 202 && answer.2.is_empty() => {}
        Ok(Ok(answer)) => return Err(unintended("the cancelled call was answered", show(&answer))),
        Ok(Err(e)) => return Err(unintended("the cancelled call failed", e)),
        Err(e) => return Err(unintended("the cancelled call's task failed", e.to_string())),
    }
    ctx.end_session(&id, n)
        .await
        .map(|how| if how == "deleted" { "cancelled, deleted" } else { "cancelled, abandoned" })
}
