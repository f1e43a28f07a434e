//! The soak's verdict and its records: RSS at the start, half time and end (medians over short
//! windows, so that one noisy second does not decide), growth over the second half, outcomes by
//! kind, live actors before and after; a table on standard output, `soak.json`, and `soak.svg`
//! (RSS and request rate over time, the remote's restarts shaded; live sessions and executors
//! below). Lines are plain paths (plotters' `svg_backend` alone, as the load bench uses it).

use std::path::Path;

use serde_json::{json, Value};

use crate::settings::Settings;
use crate::stats::{Class, Sample};
use crate::workload::Run;

/// Every operation kind the workload runs; each must succeed at least once.
const OPERATIONS: [&str; 6] = ["stateless", "gateway", "session", "cancel", "resume", "slow_reader"];

/// The figures the targets are checked on.
#[derive(Debug)]
pub(crate) struct Figures {
    pub(crate) rss_start_kib: u64,
    pub(crate) rss_half_kib: u64,
    pub(crate) rss_end_kib: u64,
    pub(crate) rss_peak_kib: u64,
    /// RSS growth from half time to the end, in percent.
    pub(crate) growth_pct: f64,
    /// Half-width of the windows the RSS medians are taken over, in seconds.
    pub(crate) window: f64,
    pub(crate) requests: u64,
    pub(crate) operations: [u64; 3],
    /// Operation kinds that never succeeded.
    pub(crate) never_ok: Vec<&'static str>,
}

/// One target and whether it was met.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    pub(crate) met: bool,
}

fn median_rss(samples: &[Sample], from: f64, to: f64) -> u64 {
    let mut values: Vec<u64> = samples.iter().filter(|s| s.t >= from && s.t <= to).map(|s| s.rss_kib).collect();
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// The figures of a run.
pub(crate) fn figures(run: &Run) -> Figures {
    let total = run.load_seconds;
    let window = (total / 20.0).max(2.5);
    let during: Vec<Sample> = run.samples.iter().filter(|s| s.t <= total + 0.5).cloned().collect();
    let rss_half_kib = median_rss(&during, total / 2.0 - window, total / 2.0 + window);
    let rss_end_kib = median_rss(&during, total - 2.0 * window, total + 0.5);
    let outcomes = run.stats.outcomes();
    let never_ok = OPERATIONS
        .into_iter()
        .filter(|op| !outcomes.iter().any(|(o, class, _, _)| o == op && *class != Class::Unintended))
        .collect();
    Figures {
        rss_start_kib: during.first().map_or(0, |s| s.rss_kib),
        rss_half_kib,
        rss_end_kib,
        rss_peak_kib: run.samples.iter().map(|s| s.rss_kib).max().unwrap_or(0),
        growth_pct: (rss_end_kib as f64 - rss_half_kib as f64) / (rss_half_kib.max(1) as f64) * 100.0,
        window,
        requests: run.stats.requests(),
        operations: run.stats.totals(),
        never_ok,
    }
}

/// The targets: flat RSS over the second half, no unintended error, every kind of operation
/// done, the live actors back to their baseline.
pub(crate) fn targets(settings: &Settings, run: &Run, f: &Figures) -> Vec<Target> {
    let b = &run.baseline;
    let a = &run.after_drain;
    vec![
        Target {
            name: "RSS growth over the second half",
            value: format!("{:+.2} % (limit {} %)", f.growth_pct, settings.rss_growth_target),
            met: f.growth_pct <= settings.rss_growth_target && f.rss_half_kib > 0,
        },
        Target { name: "unintended errors", value: format!("{} (limit 0)", f.operations[2]), met: f.operations[2] == 0 },
        Target {
            name: "every kind of operation succeeded at least once",
            value: if f.never_ok.is_empty() { "all did".into() } else { format!("never: {}", f.never_ok.join(", ")) },
            met: f.never_ok.is_empty(),
        },
        Target {
            name: "live actors back to the baseline",
            value: format!(
                "sessions {}→{}, session actors {}→{}, executors {}→{}, client connections {}→{}, running waits {}→{}{}",
                b.sessions,
                a.sessions,
                b.session_actors,
                a.session_actors,
                b.executors,
                a.executors,
                b.client_connections,
                a.client_connections,
                b.waits,
                a.waits,
                run.drained_in.map_or_else(|| " (not within the bound)".to_owned(), |d| format!(" within {:.1} s", d.as_secs_f64()))
            ),
            met: run.drained_in.is_some(),
        },
    ]
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The table on standard output.
pub(crate) fn print(settings: &Settings, run: &Run, f: &Figures, targets: &[Target]) {
    println!();
    println!(
        "mcpd soak: {:.0} s of load ({:.1} min), session idle timeout {:.1} s, remote restarted every {:.0} s for {:.0} s",
        run.load_seconds,
        run.load_seconds / 60.0,
        settings.idle_timeout.as_secs_f64(),
        settings.restart_every.as_secs_f64(),
        settings.down_for.as_secs_f64()
    );
    println!(
        "requests: {} ({:.0}/s); operations: {} ok, {} expected failures, {} unintended",
        f.requests,
        f.requests as f64 / run.load_seconds.max(1.0),
        f.operations[0],
        f.operations[1],
        f.operations[2]
    );
    println!(
        "RSS: start {:.1} MiB, half {:.1} MiB, end {:.1} MiB (medians over ±{:.1} s / the last {:.1} s), peak {:.1} MiB; growth over the second half {:+.2} %",
        mib(f.rss_start_kib),
        mib(f.rss_half_kib),
        mib(f.rss_end_kib),
        f.window,
        2.0 * f.window,
        mib(f.rss_peak_kib),
        f.growth_pct
    );
    let live = |name: &str, l: &crate::stats::Live| {
        println!(
            "  {name:<12} sessions {:>5}  session actors {:>5}  executors {:>5}  client connections {:>3}  running waits {:>3}",
            l.sessions, l.session_actors, l.executors, l.client_connections, l.waits
        );
    };
    println!("live actors:");
    live("baseline", &run.baseline);
    live("load's end", &run.after_load);
    live("after drain", &run.after_drain);
    println!(
        "remote restarts: {} (latest expected gateway failure {:.2} s after the remote was back)",
        run.restarts.len(),
        run.latest_gateway_failure_after_up.as_secs_f64()
    );
    println!();
    println!("{:<20} {:<11} {:<48} {:>9}", "operation", "outcome", "kind", "count");
    println!("{}", "-".repeat(91));
    for (op, class, what, tally) in run.stats.outcomes() {
        let class = match class {
            Class::Ok => "ok",
            Class::Expected => "expected",
            Class::Unintended => "UNINTENDED",
        };
        println!("{op:<20} {class:<11} {what:<48} {:>9}", tally.count);
        for example in &tally.examples {
            println!("{:<33}e.g. {}", "", example.chars().take(160).collect::<String>());
        }
    }
    println!();
    for t in targets {
        println!("target: {}: {} -> {}", t.name, t.value, if t.met { "met" } else { "NOT MET" });
    }
}

/// Everything, as JSON.
pub(crate) fn to_json(settings: &Settings, run: &Run, f: &Figures, targets: &[Target]) -> Value {
    let outcomes: Vec<Value> = run
        .stats
        .outcomes()
        .into_iter()
        .map(|(op, class, what, tally)| json!({"operation": op, "class": class, "kind": what, "count": tally.count, "examples": tally.examples}))
        .collect();
    json!({
        "bench": "soak",
        "settings": {
            "seconds": settings.duration.as_secs_f64(),
            "session_idle_timeout_s": settings.idle_timeout.as_secs_f64(),
            "restart_every_s": settings.restart_every.as_secs_f64(),
            "down_for_s": settings.down_for.as_secs_f64(),
            "stateless_rate": settings.stateless_rate,
            "gateway_rate": settings.gateway_rate,
            "session_loops": settings.session_loops,
            "slow_pause_s": settings.slow_pause.as_secs_f64(),
            "workers": settings.workers,
            "rss_growth_target_pct": settings.rss_growth_target,
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        },
        "load_seconds": run.load_seconds,
        "rss_kib": {"start": f.rss_start_kib, "half": f.rss_half_kib, "end": f.rss_end_kib, "peak": f.rss_peak_kib,
            "window_half_width_s": f.window},
        "rss_growth_second_half_pct": f.growth_pct,
        "requests": f.requests,
        "operations": {"ok": f.operations[0], "expected": f.operations[1], "unintended": f.operations[2]},
        "outcomes": outcomes,
        "live": {"baseline": run.baseline, "end_of_load": run.after_load, "after_drain": run.after_drain,
            "drained_in_s": run.drained_in.map(|d| d.as_secs_f64())},
        "soak_wait_calls_that_finished": run.waits_finished,
        "remote_down_windows_s": run.restarts,
        "latest_expected_gateway_failure_after_up_s": run.latest_gateway_failure_after_up.as_secs_f64(),
        "targets": targets.iter().map(|t| json!({"target": t.name, "value": t.value, "met": t.met})).collect::<Vec<_>>(),
        "samples": run.samples,
    })
}

/// RSS and request rate over time, the remote's restarts shaded; live sessions and executors
/// below.
pub(crate) fn draw_svg(path: &Path, run: &Run, f: &Figures) -> Result<(), String> {
    use plotters::prelude::*;

    let e = |e: &dyn std::fmt::Display| e.to_string();
    let samples = &run.samples;
    let t_max = samples.last().map_or(1.0, |s| s.t).max(1.0);
    let rss: Vec<(f64, f64)> = samples.iter().map(|s| (s.t, mib(s.rss_kib))).collect();
    let rate: Vec<(f64, f64)> = samples
        .windows(2)
        .map(|w| (w[1].t, (w[1].requests - w[0].requests) as f64 / (w[1].t - w[0].t).max(1e-3)))
        .collect();
    let rss_top = rss.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    let rate_top = rate.iter().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    let root = SVGBackend::new(path, (1000, 680)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (top, bottom) = root.split_vertically(440);
    let caption = format!(
        "mcpd soak: RSS {:.1} → {:.1} → {:.1} MiB (start, half, end), second half {:+.2} %",
        mib(f.rss_start_kib),
        mib(f.rss_half_kib),
        mib(f.rss_end_kib),
        f.growth_pct
    );
    let mut chart = ChartBuilder::on(&top)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .right_y_label_area_size(72)
        .build_cartesian_2d(0.0..t_max, 0.0..rss_top)
        .map_err(|x| e(&x))?
        .set_secondary_coord(0.0..t_max, 0.0..rate_top);
    chart.configure_mesh().x_desc("seconds").y_desc("RSS (MiB)").draw().map_err(|x| e(&x))?;
    chart.configure_secondary_axes().y_desc("requests / s").draw().map_err(|x| e(&x))?;
    let shade = RGBColor(250, 215, 215).filled();
    chart
        .draw_series(
            run.restarts.iter().map(|(from, to)| Rectangle::new([(*from, 0.0), (to.unwrap_or(t_max), rss_top)], shade)),
        )
        .map_err(|x| e(&x))?
        .label("remote down")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], shade));
    let grey = RGBColor(150, 150, 150);
    chart
        .draw_secondary_series(std::iter::once(PathElement::new(rate, grey)))
        .map_err(|x| e(&x))?
        .label("requests / s (right)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], grey));
    let blue = RGBColor(52, 101, 164);
    chart
        .draw_series(std::iter::once(PathElement::new(rss, blue.stroke_width(2))))
        .map_err(|x| e(&x))?
        .label("RSS (left)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue.stroke_width(2)));
    let end = run.load_seconds;
    chart
        .draw_series(std::iter::once(PathElement::new(vec![(end, 0.0), (end, rss_top)], BLACK.stroke_width(1))))
        .map_err(|x| e(&x))?
        .label("load ends; drain")
        .legend(|(x, y)| PathElement::new(vec![(x + 9, y - 6), (x + 9, y + 6)], BLACK));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;

    let live_top =
        samples.iter().map(|s| s.live.sessions.max(s.live.executors.max(0) as usize)).max().unwrap_or(1).max(1) as f64
            * 1.15;
    let mut below = ChartBuilder::on(&bottom)
        .margin(12)
        .margin_right(12 + 72)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..t_max, 0.0..live_top)
        .map_err(|x| e(&x))?;
    below.configure_mesh().x_desc("seconds").y_desc("live").draw().map_err(|x| e(&x))?;
    let green = RGBColor(78, 154, 6);
    below
        .draw_series(std::iter::once(PathElement::new(
            samples.iter().map(|s| (s.t, s.live.sessions as f64)).collect::<Vec<_>>(),
            green.stroke_width(3),
        )))
        .map_err(|x| e(&x))?
        .label("live sessions")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], green.stroke_width(3)));
    let orange = RGBColor(206, 92, 0);
    below
        .draw_series(std::iter::once(PathElement::new(
            samples.iter().map(|s| (s.t, s.live.executors as f64)).collect::<Vec<_>>(),
            orange,
        )))
        .map_err(|x| e(&x))?
        .label("tool executors")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], orange));
    below
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerMiddle)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
