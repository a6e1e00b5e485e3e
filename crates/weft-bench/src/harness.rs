//! What every scenario shares: repetitions, medians, spreads, ratios, the report, the machine.

use serde::Serialize;
use std::fmt::Write as _;

/// One scenario: a name and a body that measures every implementation into the report.
pub struct Scenario {
    /// `area/what`, e.g. `stream/throughput-256B-64MiB`.
    pub name: String,
    /// Measures every implementation and adds their rows.
    pub run: Box<dyn Fn(&mut Report)>,
}

/// Whether a smaller or a larger figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Better {
    /// Times, latencies.
    Lower,
    /// Rates, bandwidths.
    Higher,
}

/// One implementation's figures in one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// `weft`, `weft Inline`, or a peer's crate name and version.
    pub implementation: String,
    /// Unit of the figures (`ns`, `Mmsg/s`, `GiB/s`, ...).
    pub unit: String,
    /// Which direction is better.
    pub better: Better,
    /// Every measured repetition.
    pub samples: Vec<f64>,
    /// Median of the samples.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

/// All rows of a run.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Measured repetitions per implementation.
    pub reps: usize,
    /// The machine the run was on.
    pub machine: String,
    /// Every row, in the order measured.
    pub rows: Vec<Row>,
}

/// Median of a non-empty sample.
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Report {
    /// An empty report.
    pub fn new(reps: usize) -> Report {
        Report {
            reps: reps.max(1),
            machine: machine_summary(),
            rows: Vec::new(),
        }
    }

    /// Runs `one` once to warm up and then `reps` times, and records the figures it returns.
    pub fn measure(
        &mut self,
        scenario: &str,
        implementation: &str,
        unit: &str,
        better: Better,
        mut one: impl FnMut() -> f64,
    ) {
        let _ = one();
        let samples: Vec<f64> = (0..self.reps).map(|_| one()).collect();
        self.add(scenario, implementation, unit, better, samples);
    }

    /// Records figures measured elsewhere (a child process, a histogram).
    pub fn add(
        &mut self,
        scenario: &str,
        implementation: &str,
        unit: &str,
        better: Better,
        samples: Vec<f64>,
    ) {
        let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let row = Row {
            scenario: scenario.into(),
            implementation: implementation.into(),
            unit: unit.into(),
            better,
            median: median(&samples),
            min,
            max,
            samples,
        };
        eprintln!(
            "   {:<34} {:>12.3} {} (min {:.3}, max {:.3})",
            row.implementation, row.median, row.unit, row.min, row.max
        );
        self.rows.push(row);
    }

    /// The report as markdown: one table per scenario, with the ratio of weft's median over each
    /// peer's, oriented so that above 1.0 means weft is better.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Machine: {}\n", self.machine);
        let mut seen: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !seen.contains(&r.scenario.as_str()) {
                seen.push(&r.scenario);
            }
        }
        for s in seen {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.scenario == s).collect();
            let weft = rows.iter().find(|r| r.implementation.starts_with("weft"));
            let _ = writeln!(out, "### {s}\n");
            let _ = writeln!(out, "| implementation | median | min | max | weft / this |");
            let _ = writeln!(out, "|---|---:|---:|---:|---:|");
            for r in &rows {
                let ratio = match weft {
                    Some(w) if !r.implementation.starts_with("weft") => {
                        format!("{:.2}x", ratio(w.median, r.median, r.better))
                    }
                    _ => "—".into(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {} {} | {} | {} | {} |",
                    r.implementation,
                    fmt_num(r.median),
                    r.unit,
                    fmt_num(r.min),
                    fmt_num(r.max),
                    ratio
                );
            }
            let _ = writeln!(out);
        }
        out
    }

    /// The report as JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises")
    }
}

/// weft's figure over the peer's, oriented so that above 1.0 means weft is better.
pub fn ratio(weft: f64, peer: f64, better: Better) -> f64 {
    match better {
        Better::Lower => peer / weft,
        Better::Higher => weft / peer,
    }
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// CPU model, cores, kernel: printed with every run.
pub fn machine_summary() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cpu}, {} cores, Linux {}",
        weft::affinity::available_cores(),
        kernel.trim()
    )
}

/// Pins the calling thread to `core`; a core the machine does not have is ignored. (It does
/// not look at the thread's current affinity: a child spawned by a thread pinned to core 0
/// inherits only core 0, and must still be able to move itself to core 1.)
pub fn pin(core: usize) {
    let _ = weft::affinity::pin_current_thread(core);
}

/// Starts this binary again as the child side of a cross-process scenario.
pub fn spawn_child(args: &[&str]) -> std::process::Child {
    let exe = std::env::current_exe().expect("own executable");
    std::process::Command::new(exe)
        .arg("--child")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the child side")
}

/// A name unique to this run, for shared-memory objects.
pub fn unique_name(tag: &str) -> String {
    format!(
        "bench-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    )
}
