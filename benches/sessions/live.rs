//! One live session's throughput: a session opened like any other, then `tools/call echo` in
//! it over several keep-alive connections for a fixed time after a warm-up; every answer is
//! checked, and the latencies inside the measured window give the p99.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::conn::Conn;
use crate::wire::{http_request, CALL_BODY, INITIALIZED_BODY, INITIALIZE_BODY, PROTOCOL_VERSION};

/// What one measurement saw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live {
    pub(crate) req_per_s: f64,
    pub(crate) p50_us: u32,
    pub(crate) p99_us: u32,
    /// Every call answered, the warm-up's included.
    pub(crate) calls: u64,
    /// The server's CPU time per call (warm-up included), in microseconds: what the other
    /// processes of a shared machine change least.
    pub(crate) cpu_us_per_call: f64,
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Opens a session and drives calls in it: `connections` at once, `warmup` then `seconds`.
pub(crate) async fn measure(port: u16, connections: usize, warmup: f64, seconds: f64) -> Result<Live, String> {
    let mut first = Conn::connect(port).await?;
    let init = http_request(port, "POST", &[("MCP-Protocol-Version", PROTOCOL_VERSION)], INITIALIZE_BODY);
    let reply = first.exchange(&init, b"\"protocolVersion\"").await?;
    let session = reply.session.filter(|_| reply.status == 200).ok_or("initialize opened no session")?;
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", PROTOCOL_VERSION)];
    let initialized = http_request(port, "POST", &headers, INITIALIZED_BODY);
    let reply = first.exchange(&initialized, b"").await?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("notifications/initialized answered {}", reply.status));
    }
    let call: Arc<[u8]> = http_request(port, "POST", &headers, CALL_BODY).into();
    let start = Instant::now() + Duration::from_secs_f64(warmup);
    let end = start + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let call = call.clone();
            tokio::task::spawn_local(async move {
                let mut conn = Conn::connect(port).await?;
                let (mut latencies, mut calls) = (Vec::new(), 0u64);
                loop {
                    let sent = Instant::now();
                    if sent >= end {
                        return Ok::<_, String>((latencies, calls));
                    }
                    let reply = conn.exchange(&call, br#""text":"hello""#).await?;
                    if reply.status != 200 || !reply.body_ok {
                        return Err(format!(
                            "tools/call answered {}: {}",
                            reply.status,
                            reply.excerpt.unwrap_or_default()
                        ));
                    }
                    calls += 1;
                    if sent >= start {
                        latencies.push(sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                    }
                }
            })
        })
        .collect();
    let (mut all, mut calls) = (Vec::new(), 0);
    for task in tasks {
        let (latencies, answered) = task.await.map_err(|e| format!("a caller panicked: {e}"))??;
        all.extend(latencies);
        calls += answered;
    }
    all.sort_unstable();
    Ok(Live {
        req_per_s: all.len() as f64 / seconds,
        p50_us: percentile(&all, 50.0),
        p99_us: percentile(&all, 99.0),
        calls,
        cpu_us_per_call: 0.0,
    })
}
