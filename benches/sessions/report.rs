//! What the sessions bench found: the figures against their targets (a table on standard
//! output), `sessions.json`, and `sessions.svg` (resident memory and the opening rate as the
//! number of idle sessions grows).

use std::path::Path;

use serde_json::{json, Value};

use crate::live::Live;
use crate::open::BUCKET;

/// A reading taken while sessions open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Sessions opened so far.
    pub(crate) opened: u64,
    /// The server's resident bytes.
    pub(crate) rss: u64,
    /// The server's CPU seconds so far.
    pub(crate) cpu: f64,
}

/// Every figure of one run.
pub(crate) struct Figures {
    pub(crate) sessions: u64,
    pub(crate) rss_before: u64,
    pub(crate) rss_after: u64,
    pub(crate) idle_seconds: f64,
    pub(crate) idle_cpu_seconds: f64,
    /// Sessions per second in each bucket of [`crate::open::BUCKET`].
    pub(crate) rates: Vec<f64>,
    pub(crate) live_before: Live,
    pub(crate) live_after: Live,
    /// Readings taken while opening.
    pub(crate) samples: Vec<Sample>,
    pub(crate) pinned: bool,
}

/// One row of the table: the figure, its value, its target, whether it is met.
struct Row {
    figure: &'static str,
    value: String,
    target: &'static str,
    met: bool,
}

impl Figures {
    pub(crate) fn bytes_per_session(&self) -> f64 {
        self.rss_after.saturating_sub(self.rss_before) as f64 / self.sessions.max(1) as f64
    }

    pub(crate) fn idle_cpu_percent(&self) -> f64 {
        100.0 * self.idle_cpu_seconds / self.idle_seconds
    }

    /// The last full bucket's opening rate over the first's.
    pub(crate) fn opening_ratio(&self) -> Option<f64> {
        let (first, last) = (self.rates.first()?, self.rates.last()?);
        Some(last / first)
    }

    /// The server's CPU per session opened (µs) over the first and the last [`BUCKET`] opened:
    /// what the opening costs the server, whatever else the machine does.
    pub(crate) fn opening_cpu_us(&self) -> Option<(f64, f64)> {
        let per_session =
            |from: &Sample, to: &Sample| (to.cpu - from.cpu) * 1e6 / (to.opened - from.opened).max(1) as f64;
        let (first, last) = (self.samples.first()?, self.samples.last()?);
        let early = self.samples.iter().find(|s| s.opened >= BUCKET)?;
        let late = self.samples.iter().rev().find(|s| s.opened + BUCKET <= last.opened)?;
        Some((per_session(first, early), per_session(late, last)))
    }

    pub(crate) fn live_ratio(&self) -> f64 {
        self.live_after.req_per_s / self.live_before.req_per_s.max(f64::MIN_POSITIVE)
    }

    /// The server's CPU per live call with the idle sessions held, over the same with none.
    pub(crate) fn cpu_ratio(&self) -> f64 {
        self.live_after.cpu_us_per_call / self.live_before.cpu_us_per_call.max(f64::MIN_POSITIVE)
    }

    pub(crate) fn p99_ratio(&self) -> f64 {
        f64::from(self.live_after.p99_us) / f64::from(self.live_before.p99_us.max(1))
    }

    fn rows(&self) -> Vec<Row> {
        let opening = self.opening_ratio();
        vec![
            Row {
                figure: "resident bytes per idle session",
                value: format!("{:.0}", self.bytes_per_session()),
                target: "<= 2048",
                met: self.bytes_per_session() <= 2048.0,
            },
            Row {
                figure: "server CPU while idle (% of a core)",
                value: format!("{:.2}", self.idle_cpu_percent()),
                target: "<= 1",
                met: self.idle_cpu_percent() <= 1.0,
            },
            Row {
                figure: "opening rate, last bucket / first",
                value: opening.map_or("-".into(), |r| format!("{r:.2}x")),
                target: ">= 0.8x",
                met: opening.is_some_and(|r| r >= 0.8),
            },
            Row {
                figure: "live req/s, idle held / none",
                value: format!("{:.2}x", self.live_ratio()),
                target: ">= 0.9x",
                met: self.live_ratio() >= 0.9,
            },
            Row {
                figure: "live p99, idle held / none",
                value: format!("{:.2}x", self.p99_ratio()),
                target: "<= 1.5x",
                met: self.p99_ratio() <= 1.5,
            },
        ]
    }

    pub(crate) fn print(&self) {
        println!(
            "\n{} idle sessions (server {}pinned to one CPU)",
            self.sessions,
            if self.pinned { "" } else { "not " }
        );
        println!(
            "resident memory {:.1} MB before, {:.1} MB after; live session {:.0} req/s p99 {} µs {:.1} µs CPU/call \
             before, {:.0} req/s p99 {} µs {:.1} µs CPU/call after ({:.2}x CPU per call)",
            self.rss_before as f64 / 1e6,
            self.rss_after as f64 / 1e6,
            self.live_before.req_per_s,
            self.live_before.p99_us,
            self.live_before.cpu_us_per_call,
            self.live_after.req_per_s,
            self.live_after.p99_us,
            self.live_after.cpu_us_per_call,
            self.cpu_ratio()
        );
        if let (Some(first), Some(last)) = (self.rates.first(), self.rates.last()) {
            println!("opening: first 100k {first:.0}/s, last 100k {last:.0}/s");
        }
        if let Some((first, last)) = self.opening_cpu_us() {
            println!(
                "server CPU per session opened: first 100k {first:.1} µs, last 100k {last:.1} µs ({:.2}x)",
                last / first
            );
        }
        println!("\n| figure | value | target | met |\n|---|---:|---|---|");
        for row in self.rows() {
            println!("| {} | {} | {} | {} |", row.figure, row.value, row.target, if row.met { "yes" } else { "NO" });
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        let live = |l: &Live| json!({"reqPerS": l.req_per_s, "p50Us": l.p50_us, "p99Us": l.p99_us, "cpuUsPerCall": l.cpu_us_per_call});
        json!({
            "sessions": self.sessions,
            "pinned": self.pinned,
            "rssBefore": self.rss_before,
            "rssAfter": self.rss_after,
            "bytesPerSession": self.bytes_per_session(),
            "idleSeconds": self.idle_seconds,
            "idleCpuPercent": self.idle_cpu_percent(),
            "openingRatesPerBucket": self.rates,
            "openingRatio": self.opening_ratio(),
            "openingCpuUsFirstLast": self.opening_cpu_us(),
            "samples": self.samples.iter().map(|s| json!([s.opened, s.rss, s.cpu])).collect::<Vec<_>>(),
            "liveBefore": live(&self.live_before),
            "liveAfter": live(&self.live_after),
            "liveRatio": self.live_ratio(),
            "p99Ratio": self.p99_ratio(),
            "cpuPerCallRatio": self.cpu_ratio(),
            "targetsMet": self.rows().iter().all(|r| r.met),
        })
    }

    /// Resident memory (MB) and the opening rate (sessions/s per bucket) against sessions held.
    pub(crate) fn draw_svg(&self, path: &Path) -> Result<(), String> {
        use plotters::prelude::*;

        let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let x_max = self.sessions.max(1) as f64;
        let mb = |b: u64| b as f64 / 1e6;
        let rss_max = self.samples.iter().map(|s| mb(s.rss)).fold(mb(self.rss_after), f64::max) * 1.1;
        let rate_max = self.rates.iter().copied().fold(1.0, f64::max) * 1.1;
        let caption = format!(
            "mcpd: {} idle sessions, {:.0} B each, {:.2}% CPU idle",
            self.sessions,
            self.bytes_per_session(),
            self.idle_cpu_percent()
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .right_y_label_area_size(80)
            .build_cartesian_2d(0.0..x_max, 0.0..rss_max)
            .map_err(|e| e.to_string())?
            .set_secondary_coord(0.0..x_max, 0.0..rate_max);
        chart
            .configure_mesh()
            .x_desc("idle sessions held")
            .y_desc("resident memory (MB)")
            .x_label_formatter(&|v| format!("{:.0}k", v / 1000.0))
            .draw()
            .map_err(|e| e.to_string())?;
        chart.configure_secondary_axes().y_desc("sessions opened / s").draw().map_err(|e| e.to_string())?;
        let blue = RGBColor(52, 101, 164);
        chart
            .draw_series(std::iter::once(PathElement::new(
                self.samples.iter().map(|s| (s.opened as f64, mb(s.rss))).collect::<Vec<_>>(),
                blue.stroke_width(2),
            )))
            .map_err(|e| e.to_string())?
            .label("resident memory")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
        let bucket = BUCKET as f64;
        let orange = RGBColor(245, 121, 0);
        let rates = self.rates.iter().enumerate().map(|(i, &r)| ((i as f64 + 0.5) * bucket, r));
        chart
            .draw_secondary_series(std::iter::once(PathElement::new(rates.collect::<Vec<_>>(), orange.stroke_width(2))))
            .map_err(|e| e.to_string())?
            .label("opening rate (per 100k)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange.stroke_width(2)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    }
}
