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
    /// The host's cross-core round trip ([`cross_core_rtt_ns`]) probed just before the
    /// scenario ran, in ns (NaN if not probed).
    pub host_rtt_ns: f64,
    /// The same, probed right after the scenario (NaN if not probed): far from
    /// `host_rtt_ns`, the host changed state while the scenario ran.
    pub host_rtt_after_ns: f64,
}

/// Where a scenario sits on a plot's x axis: scenarios of one family (the same measurement
/// at several payload or message sizes) are drawn as one chart, a line per implementation.
#[derive(Debug, Clone, Serialize)]
pub struct AxisPoint {
    /// The scenario this point is.
    pub scenario: String,
    /// The chart it belongs to, e.g. `stream/handoff`.
    pub family: String,
    /// What the x axis measures, e.g. `payload (bytes)`.
    pub x_desc: String,
    /// This scenario's x.
    pub x: f64,
}

/// All rows of a run.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Measured repetitions per implementation.
    pub reps: usize,
    /// The machine the run was on.
    pub machine: String,
    /// The compiler that built this binary.
    pub rustc: String,
    /// Every peer crate and its exact version (from Cargo.lock at build time).
    pub peers: String,
    /// The day of the run (UTC), `YYYY-MM-DD`.
    pub date: String,
    /// Every row, in the order measured.
    pub rows: Vec<Row>,
    /// Scenarios that are points of a sized family.
    pub axes: Vec<AxisPoint>,
    /// The last [`Report::probe_host`] (ns; NaN before the first): given to every row added
    /// after it.
    #[serde(skip)]
    host_rtt_ns: f64,
    /// Rows are not printed as they are added (the rounds of [`Report::interleaved`]).
    #[serde(skip)]
    quiet: bool,
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
            rustc: env!("WEFT_BENCH_RUSTC").into(),
            peers: env!("WEFT_BENCH_PEERS").into(),
            date: today_utc(),
            rows: Vec::new(),
            axes: Vec::new(),
            host_rtt_ns: f64::NAN,
            quiet: false,
        }
    }

    /// Measures the host's cross-core round trip now ([`cross_core_rtt_ns`]); the rows added
    /// from here on carry it. Called before each scenario.
    pub fn probe_host(&mut self) -> f64 {
        self.host_rtt_ns = cross_core_rtt_ns();
        self.host_rtt_ns
    }

    /// Measures the round trip again after a scenario and gives it to the rows added since
    /// row `first` (the scenario's).
    pub fn probe_host_after(&mut self, first: usize) -> f64 {
        let rtt = cross_core_rtt_ns();
        for r in self.rows.iter_mut().skip(first) {
            r.host_rtt_after_ns = rtt;
        }
        rtt
    }

    /// Places `scenario` at `x` on the x axis of the chart `family` (one chart per family,
    /// one line per implementation). Called by scenarios measured at several sizes.
    pub fn axis(&mut self, scenario: &str, family: &str, x_desc: &str, x: f64) {
        if !self.axes.iter().any(|a| a.scenario == scenario) {
            self.axes.push(AxisPoint {
                scenario: scenario.into(),
                family: family.into(),
                x_desc: x_desc.into(),
                x,
            });
        }
    }

    /// The scenario names in the order first measured.
    pub fn scenarios(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !seen.contains(&r.scenario.as_str()) {
                seen.push(&r.scenario);
            }
        }
        seen
    }

    /// The rows of one scenario.
    pub fn rows_of(&self, scenario: &str) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.scenario == scenario)
            .collect()
    }

    /// The headline: per scenario, weft's figure against the best peer's.
    pub fn summary_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| scenario | weft | best peer | weft / best peer | host round trip |"
        );
        let _ = writeln!(out, "|---|---:|---|---:|---:|");
        for s in self.scenarios() {
            let rows = self.rows_of(s);
            let Some(w) = rows.iter().find(|r| r.implementation.starts_with("weft")) else {
                continue;
            };
            let best = rows
                .iter()
                .filter(|r| !r.implementation.starts_with("weft") && r.median.is_finite())
                .filter(|r| !r.implementation.starts_with("memcpy"))
                .min_by(|a, b| {
                    ratio(w.median, a.median, a.better)
                        .total_cmp(&ratio(w.median, b.median, b.better))
                });
            if let Some(b) = best {
                let _ = writeln!(
                    out,
                    "| {s} | {} {} | {} ({} {}) | {:.2}x | {} |",
                    fmt_num(w.median),
                    w.unit,
                    b.implementation,
                    fmt_num(b.median),
                    b.unit,
                    ratio(w.median, b.median, b.better),
                    fmt_rtts(w)
                );
            }
        }
        out
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

    /// Runs `body`, which measures each implementation of one scenario in turn (with
    /// [`Report::measure`]), `reps` times with one repetition each, and records every
    /// implementation's repetitions from all rounds. The implementations take turns, so that
    /// the host changing state during the scenario (this machine's cross-core round trip moves
    /// between about 100 and 450 ns) reaches all of them alike: run one after the other, the
    /// last ones alone could meet the change, and the ratio would measure the host.
    pub fn interleaved(&mut self, mut body: impl FnMut(&mut Report)) {
        let mut rounds = Report {
            reps: 1,
            machine: String::new(),
            rustc: String::new(),
            peers: String::new(),
            date: String::new(),
            rows: Vec::new(),
            axes: Vec::new(),
            host_rtt_ns: self.host_rtt_ns,
            quiet: true,
        };
        for _ in 0..self.reps {
            body(&mut rounds);
        }
        for a in rounds.axes {
            self.axis(&a.scenario, &a.family, &a.x_desc, a.x);
        }
        let mut merged: Vec<Row> = Vec::new();
        for row in rounds.rows {
            match merged
                .iter_mut()
                .find(|m| m.scenario == row.scenario && m.implementation == row.implementation)
            {
                Some(m) => m.samples.extend(row.samples),
                None => merged.push(row),
            }
        }
        for m in merged {
            self.add(&m.scenario, &m.implementation, &m.unit, m.better, m.samples);
        }
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
            host_rtt_ns: self.host_rtt_ns,
            host_rtt_after_ns: f64::NAN,
        };
        if !self.quiet {
            eprintln!(
                "   {:<34} {:>12.3} {} (min {:.3}, max {:.3})",
                row.implementation, row.median, row.unit, row.min, row.max
            );
        }
        self.rows.push(row);
    }

    /// The report as markdown: one table per scenario, with the ratio of weft's median over each
    /// peer's, oriented so that above 1.0 means weft is better.
    pub fn markdown(&self) -> String {
        format!(
            "{}\n{}",
            self.header_markdown(),
            self.markdown_with(&|_| None)
        )
    }

    /// The run's header: machine, compiler, peers, date, and the spread of the host's
    /// cross-core round trip over the run.
    pub fn header_markdown(&self) -> String {
        let rtts: Vec<f64> = self
            .rows
            .iter()
            .flat_map(|r| [r.host_rtt_ns, r.host_rtt_after_ns])
            .filter(|x| x.is_finite())
            .collect();
        let host = if rtts.is_empty() {
            String::new()
        } else {
            let lo = rtts.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rtts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(
                "  \nHost: a cache line's round trip between cores 0 and 1, probed before and after \
                 each scenario, {lo:.0} to {hi:.0} ns (under each table, and in the summary)"
            )
        };
        format!(
            "Machine: {}  \nCompiler: {}  \nPeers: {}  \nDate: {}; {} measured repetitions per row \
             after a warm-up.{host}\n",
            self.machine, self.rustc, self.peers, self.date, self.reps
        )
    }

    /// [`Report::markdown`], with `after(scenario)` inserted after each scenario's table (a plot
    /// link, say).
    pub fn markdown_with(&self, after: &dyn Fn(&str) -> Option<String>) -> String {
        let mut out = String::new();
        for s in self.scenarios() {
            let rows = self.rows_of(s);
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
            if let Some(r) = rows.first().filter(|r| r.host_rtt_ns.is_finite()) {
                let after = if r.host_rtt_after_ns.is_finite() {
                    format!(", {} after", fmt_rtt(r.host_rtt_after_ns))
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "\nHost: cross-core round trip {} before this scenario{after}.",
                    fmt_rtt(r.host_rtt_ns)
                );
            }
            let _ = writeln!(out);
            if let Some(extra) = after(s) {
                let _ = writeln!(out, "{extra}\n");
            }
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

/// A figure with as many digits as it deserves.
pub fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// A row's probes for the summary: `118 ns`, or `118 -> 541 ns` when the host changed state
/// during the scenario (the two probes more than 1.5 times apart).
fn fmt_rtts(r: &Row) -> String {
    let (a, b) = (r.host_rtt_ns, r.host_rtt_after_ns);
    if a.is_finite() && b.is_finite() && a.max(b) > 1.5 * a.min(b) {
        format!("{a:.0} -> {b:.0} ns")
    } else {
        fmt_rtt(a)
    }
}

/// A probed round trip for the tables: `118 ns`, or `—` when not probed.
fn fmt_rtt(ns: f64) -> String {
    if ns.is_finite() {
        format!("{ns:.0} ns")
    } else {
        "—".into()
    }
}

/// The round trip of one cache line between cores 0 and 1, in ns: two threads, one pinned to
/// each core, pass a counter back and forth through two lines, 10 000 times; the median of
/// five such runs. It is what every cross-core figure of the run pays per handoff, and on a
/// shared 2-vCPU host it moves between runs (the host places the vCPUs on nearby or distant
/// cores: about 60 to 110 ns or about 500 ns on the AMD EPYC host), so every row records the
/// values probed before and after its scenario. NaN on a machine with fewer than two cores.
pub fn cross_core_rtt_ns() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    /// One counter per line, so that each line has one writer.
    #[repr(align(128))]
    struct Line(AtomicU64);
    const TRIPS: u64 = 10_000;
    // Asked of a thread of its own: the caller may be pinned to one core already (a scenario
    // pinned it), and its own affinity is not the machine's.
    let two_cores = std::thread::spawn(|| {
        weft::affinity::pin_current_thread(1).is_ok()
            && weft::affinity::pin_current_thread(0).is_ok()
    })
    .join()
    .unwrap_or(false);
    if !two_cores {
        return f64::NAN;
    }
    let (ping, pong) = (Line(AtomicU64::new(0)), Line(AtomicU64::new(0)));
    let wait_for = |line: &Line, v: u64| {
        let mut spins = 0u32;
        // Acquire: pairs with the other thread's Release store of `v`.
        while line.0.load(Ordering::Acquire) != v {
            spins += 1;
            if spins > 1 << 20 {
                // The other thread is not running (an oversubscribed host): let it.
                std::thread::yield_now();
                spins = 0;
            }
            std::hint::spin_loop();
        }
    };
    let runs: Vec<f64> = (0..5)
        .map(|_| {
            ping.0.store(0, Ordering::Relaxed);
            pong.0.store(0, Ordering::Relaxed);
            // Both sides on threads of their own: the caller's affinity stays as it is.
            std::thread::scope(|s| {
                s.spawn(|| {
                    pin(1);
                    for i in 1..=TRIPS {
                        wait_for(&ping, i);
                        // Release: pairs with the Acquire load in `wait_for`.
                        pong.0.store(i, Ordering::Release);
                    }
                });
                s.spawn(|| {
                    pin(0);
                    let t0 = std::time::Instant::now();
                    for i in 1..=TRIPS {
                        // Release: pairs with the Acquire load in `wait_for`.
                        ping.0.store(i, Ordering::Release);
                        wait_for(&pong, i);
                    }
                    t0.elapsed().as_nanos() as f64 / TRIPS as f64
                })
                .join()
                .expect("the probe's thread")
            })
        })
        .collect();
    median(&runs)
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (eras of 400 years, each
/// 146 097 days, with March as the first month so that the leap day comes last).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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

/// Removes every file in /dev/shm whose name contains `name` (a [`unique_name`]): what a
/// repetition's peers leave behind (crossbar's lock files and the regions of a killed crossbar
/// server; weft's objects remove themselves).
pub fn remove_shm_named(name: &str) {
    if let Ok(dir) = std::fs::read_dir("/dev/shm") {
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().contains(name) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repetitions_leftovers_are_removed_by_its_name_and_nothing_else() {
        let name = unique_name("leftover");
        let other = unique_name("kept");
        let ours = [
            format!("/dev/shm/crossbar-{name}-1.lock"),
            format!("/dev/shm/{name}"),
        ];
        let theirs = format!("/dev/shm/{other}");
        // Whatever the outcome, nothing of this test stays in /dev/shm.
        struct Tidy(Vec<String>);
        impl Drop for Tidy {
            fn drop(&mut self) {
                self.0.iter().for_each(|p| {
                    let _ = std::fs::remove_file(p);
                });
            }
        }
        let _tidy = Tidy(ours.iter().chain([&theirs]).cloned().collect());
        for p in ours.iter().chain([&theirs]) {
            std::fs::write(p, b"").expect("a file in /dev/shm");
        }
        remove_shm_named(&name);
        for p in &ours {
            assert!(!std::path::Path::new(p).exists(), "{p} is still there");
        }
        assert!(
            std::path::Path::new(&theirs).exists(),
            "{theirs} was removed"
        );
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
    }

    #[test]
    fn every_table_says_the_host_state_it_ran_in() {
        let mut r = Report::new(1);
        r.add("a/x", "weft", "ns", Better::Lower, vec![1.0]);
        r.host_rtt_ns = 118.4;
        r.add("a/y", "weft", "ns", Better::Lower, vec![2.0]);
        r.add("a/y", "peer 1", "ns", Better::Lower, vec![4.0]);
        r.host_rtt_ns = 541.0;
        r.add("a/z", "weft", "ns", Better::Lower, vec![3.0]);
        r.add("a/z", "peer 1", "ns", Better::Lower, vec![3.0]);
        // a/z's probe after it: the host changed state during the scenario.
        let z = r.rows.len() - 2;
        for row in &mut r.rows[z..] {
            row.host_rtt_after_ns = 120.0;
        }
        let md = r.markdown();
        assert!(
            md.contains("round trip 541 ns before this scenario, 120 ns after."),
            "{md}"
        );
        assert!(
            r.summary_markdown().contains("| 541 -> 120 ns |"),
            "{}",
            r.summary_markdown()
        );
        assert!(
            md.contains("probed before and after each scenario, 118 to 541 ns"),
            "{md}"
        );
        let y = &md[md.find("### a/y").unwrap()..md.find("### a/z").unwrap()];
        assert!(
            y.contains("cross-core round trip 118 ns before this scenario"),
            "{y}"
        );
        // Not probed: no line, not a made-up figure.
        let x = &md[md.find("### a/x").unwrap()..md.find("### a/y").unwrap()];
        assert!(!x.contains("round trip"), "{x}");
        assert!(r.summary_markdown().contains("| 2.00x | 118 ns |"));
    }

    #[test]
    fn the_probe_measures_a_round_trip() {
        // Pinned to one core, as a scenario leaves the main thread: the probe still runs.
        pin(0);
        let rtt = cross_core_rtt_ns();
        if weft::affinity::pin_current_thread(1).is_err() {
            assert!(rtt.is_nan());
        } else {
            // A cache line cannot cross cores and back in under a nanosecond.
            assert!(rtt.is_finite() && rtt > 1.0, "{rtt}");
        }
    }

    #[test]
    fn interleaved_rounds_take_turns_and_keep_every_repetition() {
        let mut r = Report::new(3);
        let mut order = Vec::new();
        let mut n = 0.0;
        r.interleaved(|round| {
            for imp in ["weft", "peer"] {
                round.measure("a/x", imp, "ns", Better::Lower, || {
                    n += 1.0;
                    order.push(imp);
                    n
                });
            }
        });
        // Each round warms up and measures one implementation, then the other.
        assert_eq!(order, ["weft", "weft", "peer", "peer"].repeat(3));
        let rows = r.rows_of("a/x");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].implementation, "weft");
        assert_eq!(rows[0].samples, [2.0, 6.0, 10.0]);
        assert_eq!(rows[1].samples, [4.0, 8.0, 12.0]);
        assert_eq!(rows[1].median, 8.0);
    }

    #[test]
    fn ratios_point_the_right_way() {
        assert_eq!(ratio(2.0, 4.0, Better::Lower), 2.0);
        assert_eq!(ratio(2.0, 4.0, Better::Higher), 0.5);
    }
}
