//! The load bench's chart: requests per second by mode with each target marked, as SVG.

use std::fmt::Write as _;

use crate::modes::Mode;
use crate::report::Summary;
use crate::settings::Settings;

pub(crate) fn draw_svg(path: &std::path::Path, settings: &Settings, summaries: &[Summary]) -> Result<(), String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let bare = summaries.iter().find(|s| s.mode == Mode::Bare).map_or(0.0, |s| s.req_per_s);
    let top = summaries.iter().map(|s| s.req_per_s).fold(1.0, f64::max) * 1.18;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let caption = format!(
        "mcpd tools/call echo: req/s ({} conns, {} worker(s), {} s{})",
        settings.connections,
        settings.workers,
        settings.seconds,
        if settings.rounds > 1 { format!(", median of {}", settings.rounds) } else { String::new() }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d((0..summaries.len().saturating_sub(1)).into_segmented(), 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .y_desc("requests / s")
        .x_labels(summaries.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => summaries.get(*i).map_or(String::new(), |s| match s.mode.target() {
                Some(target) => format!("{} (target {target}x)", s.mode.label()),
                None => s.mode.label().to_owned(),
            }),
            _ => String::new(),
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(|e| e.to_string())?;
    let bars = summaries.iter().enumerate().map(|(i, s)| {
        let colour = match s.mode {
            _ if s.errors > 0 => RED,
            Mode::Bare => RGBColor(150, 150, 150),
            _ => RGBColor(52, 101, 164),
        };
        let mut bar =
            Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), s.req_per_s)], colour.filled());
        bar.set_margin(0, 0, 30, 30);
        bar
    });
    chart.draw_series(bars).map_err(|e| e.to_string())?;
    let centred = ("sans-serif", 15).into_font().into_text_style(&root).pos(Pos::new(HPos::Center, VPos::Bottom));
    let right = ("sans-serif", 12).into_font().into_text_style(&root).pos(Pos::new(HPos::Right, VPos::Bottom));
    let labels = summaries.iter().enumerate().map(|(i, s)| {
        let mut text = format!("{:.0}", s.req_per_s);
        if let Some(r) = s.ratio.filter(|_| s.mode != Mode::Bare) {
            let _ = write!(text, " ({r:.2}x)");
        }
        if s.errors > 0 {
            text.push_str(" ERRORS");
        }
        Text::new(text, (SegmentValue::CenterOf(i), s.req_per_s + top * 0.01), centred.clone())
    });
    chart.draw_series(labels).map_err(|e| e.to_string())?;
    // Each target as a red mark across its own bar's slot.
    let marks = summaries.iter().enumerate().filter_map(|(i, s)| {
        let y = bare * s.mode.target()?;
        Some(PathElement::new(vec![(SegmentValue::Exact(i), y), (SegmentValue::Exact(i + 1), y)], RED.stroke_width(2)))
    });
    chart.draw_series(marks.filter(|_| bare > 0.0)).map_err(|e| e.to_string())?;
    let note = "red mark: target (fraction of the bare handler's req/s)";
    root.draw(&Text::new(note, (884, 500), right)).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
