//! weft-bench: every scenario run against weft and the peers' own crates in one process run,
//! reported as medians and ratios (weft over peer; above 1.0 means weft is better).
//!
//! ```text
//! cargo run --release -p weft-bench -- [--filter SUBSTRING] [--reps N] [--json PATH]
//!                                       [--plots DIR] [--doc docs/benchmarks.md]
//! ```
//! `--doc` rewrites the part of the markdown file between the `weft-bench:begin` and
//! `weft-bench:end` markers with this run's summary, tables and charts (written to `--plots`,
//! by default a `bench` directory beside the file).
//! Cross-process scenarios re-run this binary as the child (`weft-bench child ...`).

mod channel;
// Shared machinery: not every area uses every helper.
#[allow(dead_code)]
mod harness;
mod plot;
mod pool;
mod pubsub;
mod ring;
mod stream;
#[cfg(feature = "zenoh")]
mod zenoh;

use clap::Parser;
use harness::{Report, Scenario};

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "weft against its peers, one run, one report")]
struct Args {
    /// Run only scenarios whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Measured repetitions per implementation (after one warm-up).
    #[arg(long, default_value_t = 7)]
    reps: usize,
    /// Also write the report as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Write an SVG chart per scenario (sized families as one chart) into this directory.
    #[arg(long)]
    plots: Option<std::path::PathBuf>,
    /// Regenerate the marked section of this markdown file from the run (charts included).
    #[arg(long)]
    doc: Option<std::path::PathBuf>,
    /// List the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Internal: run as the child process of a cross-process scenario.
    #[arg(long, num_args = 1.., allow_hyphen_values = true)]
    child: Option<Vec<String>>,
}

fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    all.extend(stream::scenarios());
    all.extend(ring::scenarios());
    all.extend(pool::scenarios());
    all.extend(channel::scenarios());
    all.extend(pubsub::scenarios());
    all
}

fn main() {
    let args = Args::parse();
    if let Some(child) = args.child {
        let code = zenoh_child(&child)
            .or_else(|| stream::child(&child))
            .or_else(|| ring::child(&child))
            .or_else(|| pool::child(&child))
            .or_else(|| channel::child(&child))
            .or_else(|| pubsub::child(&child))
            .unwrap_or_else(|| {
                eprintln!("weft-bench: unknown child role {child:?}");
                2
            });
        std::process::exit(code);
    }
    let selected: Vec<Scenario> = scenarios()
        .into_iter()
        .chain(zenoh_scenarios())
        .filter(|s| args.filter.as_deref().is_none_or(|f| s.name.contains(f)))
        .collect();
    if args.list {
        for s in &selected {
            println!("{}", s.name);
        }
        return;
    }
    let mut report = Report::new(args.reps);
    eprintln!("{}", report.header_markdown());
    let started = std::time::Instant::now();
    for (i, s) in selected.iter().enumerate() {
        eprintln!(
            "== [{}/{}, {:.0} s] {}",
            i + 1,
            selected.len(),
            started.elapsed().as_secs_f64(),
            s.name
        );
        let rtt = report.probe_host();
        let first = report.rows.len();
        (s.run)(&mut report);
        let after = report.probe_host_after(first);
        eprintln!("   (host: cross-core round trip {rtt:.0} ns before, {after:.0} ns after)");
    }
    eprintln!("== done in {:.0} s", started.elapsed().as_secs_f64());
    print!("{}", report.markdown());
    if let Some(path) = &args.json {
        std::fs::write(path, report.json()).expect("write the JSON report");
    }
    let plots = args.plots.clone().or_else(|| {
        args.doc.as_ref().map(|d| {
            d.parent()
                .unwrap_or(std::path::Path::new("."))
                .join("bench")
        })
    });
    let charts = plots
        .as_deref()
        .map(|dir| match plot::write_all(&report, dir) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("weft-bench: {e}");
                std::process::exit(1);
            }
        });
    if let Some(doc) = &args.doc {
        let dir = plots
            .as_deref()
            .expect("--doc always has a chart directory");
        let charts = charts.as_ref().expect("charts written");
        if let Err(e) =
            plot::remove_stale(dir, charts).and_then(|_| regenerate(doc, &report, Some(charts)))
        {
            eprintln!("weft-bench: {e}");
            std::process::exit(1);
        }
        eprintln!(
            "weft-bench: rewrote the generated section of {}",
            doc.display()
        );
    }
}

/// The Zenoh area's scenarios, when built with it (`--features zenoh`).
fn zenoh_scenarios() -> Vec<Scenario> {
    #[cfg(feature = "zenoh")]
    return zenoh::scenarios();
    #[cfg(not(feature = "zenoh"))]
    Vec::new()
}

/// The Zenoh area's child side, when built with it.
fn zenoh_child(args: &[String]) -> Option<i32> {
    #[cfg(feature = "zenoh")]
    return zenoh::child(args);
    #[cfg(not(feature = "zenoh"))]
    {
        let _ = args;
        None
    }
}

/// The markers between which `--doc` writes.
const BEGIN: &str =
    "<!-- weft-bench:begin (generated by weft-bench --doc; edits here are lost) -->";
const END: &str = "<!-- weft-bench:end -->";

/// Rewrites the generated section of `doc` (appending one if it has none).
fn regenerate(
    doc: &std::path::Path,
    report: &Report,
    charts: Option<&plot::Charts>,
) -> Result<(), String> {
    let old = std::fs::read_to_string(doc).unwrap_or_default();
    let base = doc.parent().unwrap_or(std::path::Path::new("."));
    let link = |scenario: &str| -> Option<String> {
        let path = charts?.after(scenario)?;
        let rel = path.strip_prefix(base).unwrap_or(path);
        Some(format!("![{scenario}]({})", rel.display()))
    };
    let mut body = String::new();
    body.push_str(BEGIN);
    body.push_str("\n\n");
    body.push_str(&report.header_markdown());
    body.push_str("\n## Summary: weft against the best peer in each scenario\n\n");
    body.push_str(&report.summary_markdown());
    body.push_str("\n## Every scenario\n\n");
    body.push_str(&report.markdown_with(&link));
    body.push_str(END);
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if e > b => format!("{}{}{}", &old[..b], body, &old[e + END.len()..]),
        _ if old.is_empty() => format!("{body}\n"),
        _ => format!("{old}\n{body}\n"),
    };
    std::fs::write(doc, new).map_err(|e| format!("writing {}: {e}", doc.display()))
}
