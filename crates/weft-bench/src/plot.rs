//! SVG charts of a report: one line chart per sized family (latency by payload size,
//! throughput by message size, a line per implementation) and one bar chart per scenario
//! that stands alone. Every figure is a median with its min-max range drawn as a whisker.

use crate::harness::{Better, Report, Row};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Width and height of every chart, in SVG pixels.
const SIZE: (u32, u32) = (760, 420);

/// Line colours, weft first (the first series is weft's when a family has one).
const PALETTE: [RGBColor; 8] = [
    RGBColor(200, 30, 45),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// The charts written for one report: per scenario, the chart file that shows it.
#[derive(Debug, Default)]
pub struct Charts {
    /// (scenario, chart file). A family's chart is listed against its last scenario.
    pub by_scenario: Vec<(String, PathBuf)>,
}

impl Charts {
    /// The chart to show after `scenario`'s table, if any.
    pub fn after(&self, scenario: &str) -> Option<&Path> {
        self.by_scenario
            .iter()
            .find(|(s, _)| s == scenario)
            .map(|(_, p)| p.as_path())
    }
}

/// A file name for a chart title: letters and digits, the rest as `-`.
fn file_name(title: &str) -> String {
    let mut s: String = title
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    format!("{}.svg", s.trim_matches('-'))
}

/// Writes every chart of `report` into `dir`.
pub fn write_all(report: &Report, dir: &Path) -> Result<Charts, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut charts = Charts::default();
    let mut families: Vec<&str> = Vec::new();
    for a in &report.axes {
        if !families.contains(&a.family.as_str()) {
            families.push(&a.family);
        }
    }
    let mut in_family: Vec<&str> = Vec::new();
    for family in families {
        let mut points: Vec<_> = report
            .axes
            .iter()
            .filter(|a| a.family == family && !report.rows_of(&a.scenario).is_empty())
            .collect();
        if points.len() < 2 {
            continue;
        }
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        let path = dir.join(file_name(family));
        let mut series: Vec<(String, Vec<(f64, &Row)>)> = Vec::new();
        for p in &points {
            in_family.push(&p.scenario);
            for r in report.rows_of(&p.scenario) {
                match series.iter_mut().find(|(l, _)| *l == r.implementation) {
                    Some((_, v)) => v.push((p.x, r)),
                    None => series.push((r.implementation.clone(), vec![(p.x, r)])),
                }
            }
        }
        line_chart(&path, family, &points[0].x_desc, &series)?;
        let last = &points[points.len() - 1].scenario;
        charts.by_scenario.push((last.clone(), path));
    }
    for s in report.scenarios() {
        if in_family.contains(&s) {
            continue;
        }
        let path = dir.join(file_name(s));
        bar_chart(&path, s, &report.rows_of(s))?;
        charts.by_scenario.push((s.to_string(), path));
    }
    Ok(charts)
}

/// Removes the charts in `dir` that this run did not write (scenarios renamed or gone), so
/// that a regenerated document never sits beside stale charts.
pub fn remove_stale(dir: &Path, charts: &Charts) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = charts.by_scenario.iter().any(|(_, p)| *p == path);
        if !ours && path.extension().is_some_and(|e| e == "svg") {
            std::fs::remove_file(&path).map_err(|e| format!("removing {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn err(e: impl std::fmt::Display) -> String {
    format!("drawing a chart: {e}")
}

/// The unit and direction of a set of rows, for the axis label.
fn y_desc(rows: &[&Row]) -> String {
    match rows.first() {
        Some(r) => match r.better {
            Better::Lower => format!("{} (lower is better)", r.unit),
            Better::Higher => format!("{} (higher is better)", r.unit),
        },
        None => String::new(),
    }
}

/// Log-log lines, one per implementation, with min-max whiskers.
fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    series: &[(String, Vec<(f64, &Row)>)],
) -> Result<(), String> {
    let rows: Vec<&Row> = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(_, r)| *r))
        .collect();
    let (x_lo, x_hi) = bounds(series.iter().flat_map(|(_, v)| v.iter().map(|(x, _)| *x)));
    let (y_lo, y_hi) = bounds(rows.iter().flat_map(|r| [r.min, r.max, r.median]));
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x_lo / 1.5..x_hi * 1.5).log_scale(),
            (y_lo / 1.5..y_hi * 1.5).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc(&rows))
        .x_label_formatter(&|x| bytes_label(*x))
        .y_label_formatter(&|y| si(*y, "", ""))
        .draw()
        .map_err(err)?;
    for (i, (label, points)) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let style = colour.stroke_width(if i == 0 { 3 } else { 2 });
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|(x, r)| (*x, r.median)),
                style,
            ))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
            });
        chart
            .draw_series(
                points
                    .iter()
                    .map(|(x, r)| Circle::new((*x, r.median), 3, colour.filled())),
            )
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|(x, r)| {
                PathElement::new(vec![(*x, r.min), (*x, r.max)], colour.stroke_width(1))
            }))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 11))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Horizontal bars, one per implementation (weft's in red), with min-max whiskers.
fn bar_chart(path: &Path, title: &str, rows: &[&Row]) -> Result<(), String> {
    let n = rows.len().max(1);
    let height = 90 + 34 * n as u32;
    let (_, hi) = bounds(rows.iter().map(|r| r.max));
    let root = SVGBackend::new(path, (SIZE.0, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(8)
        .build_cartesian_2d(0f64..hi * 1.1, 0f64..n as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(y_desc(rows))
        .x_label_formatter(&|x| si(*x, "", ""))
        .draw()
        .map_err(err)?;
    for (i, r) in rows.iter().enumerate() {
        // The first row at the top.
        let y = (n - 1 - i) as f64;
        let colour = if r.implementation.starts_with("weft") {
            PALETTE[0]
        } else {
            PALETTE[1]
        };
        let median = if r.median.is_finite() { r.median } else { 0.0 };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y + 0.18), (median, y + 0.82)],
                colour.mix(0.75).filled(),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(r.min, y + 0.5), (r.max, y + 0.5)],
                BLACK.stroke_width(1),
            )))
            .map_err(err)?;
        let text = format!(
            "{}: {} {}",
            r.implementation,
            crate::harness::fmt_num(r.median),
            r.unit
        );
        chart
            .draw_series(std::iter::once(Text::new(
                text,
                (hi * 0.01, y + 0.62),
                ("sans-serif", 12).into_font().color(&BLACK),
            )))
            .map_err(err)?;
    }
    root.present().map_err(err)
}

/// The finite, positive range of some figures (for log axes), never empty.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo.is_finite() {
        (lo, hi.max(lo * 1.01))
    } else {
        (1.0, 10.0)
    }
}

/// A size tick in decimal units (`1 kB`, `10 MB`): the log axis puts its ticks at powers
/// of ten.
fn bytes_label(x: f64) -> String {
    si(x, "B", " ")
}

/// A figure with an SI prefix (`12k`, `3.5M`), for axis ticks that span decades.
fn si(x: f64, unit: &str, sep: &str) -> String {
    const PREFIXES: [(f64, &str); 4] = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    for (scale, prefix) in PREFIXES {
        if x.abs() >= scale {
            let v = x / scale;
            return if (v - v.round()).abs() < 0.05 {
                format!("{v:.0}{sep}{prefix}{unit}")
            } else {
                format!("{v:.1}{sep}{prefix}{unit}")
            };
        }
    }
    format!("{}{sep}{unit}", crate::harness::fmt_num(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_file_names_are_plain() {
        assert_eq!(file_name("stream/handoff"), "stream-handoff.svg");
        assert_eq!(
            file_name("stream/throughput-256B-8MiB-GiB/s"),
            "stream-throughput-256B-8MiB-GiB-s.svg"
        );
    }

    #[test]
    fn size_labels() {
        assert_eq!(bytes_label(1000.0), "1 kB");
        assert_eq!(bytes_label(1e7), "10 MB");
        assert_eq!(bytes_label(1500.0), "1.5 kB");
        assert_eq!(bytes_label(8.0), "8 B");
        assert_eq!(si(1e7, "", ""), "10M");
    }
}
