//! The mixed workload and its clock: every kind of operation runs in its own loop(s) until the
//! load's deadline — stateless calls and gateway calls at a steady rate, sessions, cancellations,
//! stream resumptions and slow readers one after another — while the catalog changes twice a
//! second (so that sessions get `list_changed` events), the gateway's remote restarts now and
//! then, and a sampler records the process once a second. Then it waits (bounded) for the
//! abandoned sessions to expire and the live actors to return to their baseline.

use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpd::catalog::LiveCatalog;
use mcpd::model::{CallToolResult, Tool};
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::ctx::Ctx;
use crate::remote::{restart_loop, Windows};
use crate::servers::Server;
use crate::settings::Settings;
use crate::stats::{expected, unintended, Live, Outcome, Sample, Stats};
use crate::support::stateless;
use crate::tools::Probe;
use crate::{session, streams};

/// The longest one operation may take before it counts as hung.
const OP_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the catalog changes.
const TOGGLE_EVERY: Duration = Duration::from_millis(500);
/// Pause between two sessions of one loop.
const SESSION_PAUSE: Duration = Duration::from_millis(25);
/// The server's SSE keep-alive interval (`KEEP_ALIVE_INTERVAL` in actors/src/http/stream/sse.rs).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Loops sharing each steady rate (one slow answer does not hold the others up).
const RATE_LOOPS: usize = 4;

/// What the run measured.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) samples: Vec<Sample>,
    /// Live actors before the load, when it ended, and after the drain.
    pub(crate) baseline: Live,
    pub(crate) after_load: Live,
    pub(crate) after_drain: Live,
    /// How long the return to the baseline took after the load (`None`: it did not).
    pub(crate) drained_in: Option<Duration>,
    /// The load's length.
    pub(crate) load_seconds: f64,
    /// The remote's down windows, in seconds since the load began.
    pub(crate) restarts: Vec<(f64, Option<f64>)>,
    pub(crate) latest_gateway_failure_after_up: Duration,
    pub(crate) stats: Rc<Stats>,
    /// `soak_wait` calls that ran to their end (every one should have been cancelled).
    pub(crate) waits_finished: u64,
}

fn echoed(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"] == "hello" && answer["result"]["isError"] != true
}

/// A stateless `tools/call echo`.
async fn stateless_echo(ctx: &Ctx) -> Outcome {
    ctx.stats.request();
    let answer = stateless::call(&ctx.http, &ctx.url, "echo", ctx.echo_body.clone())
        .await
        .map_err(|e| unintended("stateless call failed", e))?;
    if echoed(&answer) {
        Ok("echoed")
    } else {
        Err(unintended("wrong stateless answer", answer.to_string()))
    }
}

/// A stateless `tools/call remote__echo`, through the gateway to the remote.
async fn gateway_echo(ctx: &Ctx) -> Outcome {
    ctx.stats.request();
    let started = Instant::now();
    let answer = stateless::call(&ctx.http, &ctx.url, "remote__echo", ctx.gateway_body.clone()).await;
    let answer = answer.map_err(|e| unintended("gateway call failed", e))?;
    if echoed(&answer) {
        return Ok("echoed by the remote");
    }
    if answer["result"]["isError"] == true && ctx.windows.explains(started, Instant::now()) {
        return Err(expected("the remote was restarting", answer["result"]["content"][0]["text"].to_string()));
    }
    Err(unintended("gateway failure while the remote was up", answer.to_string()))
}

/// Runs `op` with a time limit and records how it ended.
async fn once<F: Future<Output = Outcome>>(ctx: &Ctx, name: &'static str, op: F) {
    let outcome = match tokio::time::timeout(OP_TIMEOUT, op).await {
        Ok(outcome) => outcome,
        Err(_) => Err(unintended("hung", format!("no end within {OP_TIMEOUT:?}"))),
    };
    ctx.stats.record(name, outcome);
}

/// `op` at `rate` per second until `deadline`.
async fn paced<'a, F, Fut>(ctx: &'a Ctx, name: &'static str, rate: f64, deadline: Instant, op: F)
where
    F: Fn(&'a Ctx) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < deadline {
        ticks.tick().await;
        once(ctx, name, op(ctx)).await;
    }
}

/// `op` one after another (with `pause` between) until `deadline`; `next` numbers them.
async fn serial<'a, F, Fut>(
    ctx: &'a Ctx,
    name: &'static str,
    pause: Duration,
    deadline: Instant,
    next: &Cell<u64>,
    op: F,
) where
    F: Fn(&'a Ctx, u64) -> Fut,
    Fut: Future<Output = Outcome>,
{
    while Instant::now() < deadline {
        let n = next.get();
        next.set(n + 1);
        once(ctx, name, op(ctx, n)).await;
        tokio::time::sleep(pause).await;
    }
}

/// Adds or removes a tool every [`TOGGLE_EVERY`] until `stop`; counts the changes in `count`.
async fn toggle_catalog(live: Arc<LiveCatalog>, count: watch::Sender<u64>, stop: Rc<Cell<bool>>) {
    let mut ticks = tokio::time::interval(TOGGLE_EVERY);
    let mut present = false;
    while !stop.get() {
        ticks.tick().await;
        live.update(|catalog| {
            if present {
                catalog.remove_tool("soak_toggle");
            } else {
                catalog.add_tool(
                    Tool::new("soak_toggle", "Comes and goes.", json!({"type": "object"})),
                    |_: Map<String, Value>, _| async { Ok(CallToolResult::text("here")) },
                );
            }
        });
        present = !present;
        count.send_modify(|n| *n += 1);
    }
}

/// Samples the process once a second until `stop`.
async fn sample(server: &Server, probe: &Arc<Probe>, stats: &Stats, zero: Instant, stop: &Cell<bool>) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut reported = 0;
    while !stop.get() {
        ticks.tick().await;
        let sample = Sample {
            t: zero.elapsed().as_secs_f64(),
            rss_kib: crate::stats::rss_kib(),
            requests: stats.requests(),
            operations: stats.totals(),
            live: Live::take(&server.runtime, probe),
        };
        if sample.t >= f64::from(reported) + 30.0 {
            reported = sample.t as u32;
            eprintln!(
                "soak: {:>5.0} s  RSS {:>7.1} MiB  {:>9} requests  ops ok/expected/unintended {:?}  sessions {}",
                sample.t,
                sample.rss_kib as f64 / 1024.0,
                sample.requests,
                sample.operations,
                sample.live.sessions
            );
        }
        samples.push(sample);
    }
    samples
}

/// Drives the load for `settings.duration`, then waits for the drain.
pub(crate) async fn run(
    settings: &Settings,
    server: &Server,
    remote: &Server,
    live: Arc<LiveCatalog>,
    probe: Arc<Probe>,
) -> Run {
    let stats = Rc::new(Stats::default());
    let windows = Rc::new(Windows::default());
    let (toggle_tx, toggles) = watch::channel(0u64);
    let url = format!("http://127.0.0.1:{}/mcp", server.port());
    let ctx = Rc::new(Ctx {
        port: server.port(),
        url,
        http: awc::Client::builder().timeout(Duration::from_secs(15)).finish(),
        probe: probe.clone(),
        stats: stats.clone(),
        windows: windows.clone(),
        toggles,
        slow_pause: settings.slow_pause,
        echo_body: stateless::body("echo", json!({"text": "hello"})),
        gateway_body: stateless::body("remote__echo", json!({"text": "hello"})),
    });
    let baseline = Live::take(&server.runtime, &probe);
    let zero = Instant::now();
    let deadline = zero + settings.duration;
    let stop_sampling = Rc::new(Cell::new(false));
    let (stop_toggles, stop_restarts) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let toggler = actix_rt::spawn(toggle_catalog(live, toggle_tx, stop_toggles.clone()));
    let restarter = actix_rt::spawn(restart_loop(
        remote.runtime.clone(),
        remote.config.clone(),
        settings.restart_every,
        settings.down_for,
        windows.clone(),
        stats.clone(),
        stop_restarts.clone(),
    ));
    let sampler = {
        let stop = stop_sampling.clone();
        let stats = stats.clone();
        async move { sample(server, &probe, &stats, zero, &stop).await }
    };
    let numbers = Cell::new(0u64);
    let load = async {
        let mut loops: Vec<std::pin::Pin<Box<dyn Future<Output = ()> + '_>>> = Vec::new();
        for _ in 0..RATE_LOOPS {
            let rate = settings.stateless_rate / RATE_LOOPS as f64;
            loops.push(Box::pin(paced(&ctx, "stateless", rate, deadline, stateless_echo)));
            let rate = settings.gateway_rate / RATE_LOOPS as f64;
            loops.push(Box::pin(paced(&ctx, "gateway", rate, deadline, gateway_echo)));
        }
        for _ in 0..settings.session_loops {
            loops.push(Box::pin(serial(&ctx, "session", SESSION_PAUSE, deadline, &numbers, session::session)));
        }
        let pause = Duration::from_millis(100);
        loops.push(Box::pin(serial(&ctx, "cancel", pause, deadline, &numbers, session::cancel)));
        loops.push(Box::pin(serial(&ctx, "resume", pause, deadline, &numbers, streams::resume)));
        loops.push(Box::pin(serial(&ctx, "slow_reader", pause, deadline, &numbers, streams::slow_reader)));
        futures_util::future::join_all(loops).await;
        let after_load = Live::take(&server.runtime, &ctx.probe);
        let load_seconds = zero.elapsed().as_secs_f64();
        stop_restarts.set(true);
        let _ = restarter.await;
        // Drain: abandoned sessions expire after the idle timeout (checked once a second). The
        // catalog keeps changing meanwhile, as it would on a live server: writing to a stream
        // whose client vanished is what tells the server it is gone. Without writes, the next
        // SSE keep-alive does (every 15 s), hence the bound.
        let drain_started = Instant::now();
        let bound = settings.idle_timeout * 2 + KEEP_ALIVE + Duration::from_secs(10);
        let back = |now: &Live| {
            now.sessions == baseline.sessions
                && now.session_actors == baseline.session_actors
                && now.executors == baseline.executors
                && now.client_connections == baseline.client_connections
                && now.waits == baseline.waits
        };
        let mut drained_in = None;
        while drain_started.elapsed() < bound {
            if back(&Live::take(&server.runtime, &ctx.probe)) {
                drained_in = Some(drain_started.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stop_toggles.set(true);
        let _ = toggler.await;
        stop_sampling.set(true);
        (after_load, load_seconds, drained_in)
    };
    let (samples, (after_load, load_seconds, drained_in)) = futures_util::future::join(sampler, load).await;
    Run {
        samples,
        baseline,
        after_load,
        after_drain: Live::take(&server.runtime, &ctx.probe),
        drained_in,
        load_seconds,
        restarts: windows.spans_since(zero),
        latest_gateway_failure_after_up: windows.latest_after_up(),
        stats,
        waits_finished: ctx.probe.finished(),
    }
}
