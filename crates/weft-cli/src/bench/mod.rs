//! `weft bench`: round-trip latency histograms and one-way throughput of the ring (between
//! threads), the byte stream and pub/sub (between processes), on this machine.
//!
//! Latency is measured as round trips (one message there and back, timed by one clock in one
//! process, so no clock is shared between processes); throughput as messages one way, for a
//! fixed time, counted by the receiver, without loss (pub/sub never holds a publisher back, so
//! its subscriber acknowledges and the publisher keeps within half a ring of it). Cross-process cases start this binary again as the
//! other side (`weft bench-child`, hidden).

mod pubsub;
mod ring;
mod stream;

use crate::cli::{BenchArgs, BenchCase, BenchChildArgs, BenchWait};
use crate::exit::{ERROR, Failure, Outcome, PEER_GONE, from_io};
use crate::interrupt;
use crate::out::{self, DIM, NAME, Table, cell};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one measurement is given.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// How long to measure.
    pub duration: Duration,
    /// Message size in bytes.
    pub size: usize,
    /// How both sides wait.
    pub wait: BenchWait,
}

/// Round trips recorded in nanoseconds.
pub type Hist = Histogram<u64>;

/// A histogram for round trips of 1 ns to 60 s, three significant digits.
pub fn histogram() -> Hist {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Records one round trip that started at `t0`.
pub fn record(h: &mut Hist, t0: Instant) {
    h.saturating_record(t0.elapsed().as_nanos().max(1) as u64);
}

/// One latency row.
#[derive(Debug, Serialize)]
pub struct Latency {
    case: &'static str,
    /// `threads` or `processes`.
    between: &'static str,
    /// Message size in bytes.
    size: usize,
    round_trips: u64,
    mean_ns: f64,
    p50_ns: u64,
    p90_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
}

impl Latency {
    fn new(case: &'static str, between: &'static str, size: usize, h: &Hist) -> Latency {
        Latency {
            case,
            between,
            size,
            round_trips: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// What a throughput run counted.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    /// Messages the receiver got.
    pub messages: u64,
    /// Messages the receiver lost (zero unless something is wrong).
    pub lost: u64,
    /// From the first message sent to the last one received.
    pub elapsed: Duration,
}

/// One throughput row.
#[derive(Debug, Serialize)]
pub struct Throughput {
    case: &'static str,
    between: &'static str,
    size: usize,
    /// Messages received.
    messages: u64,
    /// Messages lost: none by construction (the ring and the stream hold the sender back;
    /// the pub/sub subscriber acknowledges, and the publisher stays half a ring ahead at most),
    /// so anything else is a fault worth seeing.
    lost: u64,
    seconds: f64,
    msgs_per_sec: f64,
    bytes_per_sec: f64,
}

impl Throughput {
    fn new(case: &'static str, between: &'static str, size: usize, c: Counted) -> Throughput {
        let s = c.elapsed.as_secs_f64().max(1e-9);
        Throughput {
            case,
            between,
            size,
            messages: c.messages,
            lost: c.lost,
            seconds: s,
            msgs_per_sec: c.messages as f64 / s,
            bytes_per_sec: (c.messages as f64 * size as f64) / s,
        }
    }
}

/// The JSON document of `weft bench`.
#[derive(Debug, Serialize)]
struct Report {
    machine: String,
    wait: &'static str,
    duration_s: f64,
    latency: Vec<Latency>,
    throughput: Vec<Throughput>,
}

/// A time-driven progress bar on stderr (drawn only on a terminal, and not with --json).
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    done: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(label: String, d: Duration, quiet: bool) -> Progress {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(d.as_millis().max(1) as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:>22} [{bar:30}] {elapsed:>3}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label);
        let done = Arc::new(AtomicBool::new(false));
        let ticker = (!bar.is_hidden()).then(|| {
            let (bar, done) = (bar.clone(), done.clone());
            let start = Instant::now();
            std::thread::spawn(move || {
                // Relaxed: a stop flag; the join in `finish` orders everything else.
                while !done.load(Ordering::Relaxed) {
                    bar.set_position(start.elapsed().as_millis() as u64);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        });
        Progress { bar, done, ticker }
    }

    fn finish(mut self) {
        // Relaxed: see `start`.
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.into());
    format!(
        "{cpu}, {} cores available",
        weft::affinity::available_cores()
    )
}

/// Runs `weft bench`.
pub fn run(args: &BenchArgs, json: bool) -> Outcome {
    interrupt::install();
    if args.size == 0 || args.size > 1 << 20 {
        return Err(Failure::usage(format!(
            "--size must be 1 to 1048576 bytes, not {}",
            args.size
        )));
    }
    let setup = Setup {
        duration: args.duration,
        size: args.size,
        wait: args.wait.resolve(),
    };
    let cases = match args.case {
        BenchCase::All => vec![BenchCase::Ring, BenchCase::Stream, BenchCase::Pubsub],
        one => vec![one],
    };
    let mut report = Report {
        machine: machine(),
        wait: setup.wait.name(),
        duration_s: args.duration.as_secs_f64(),
        latency: Vec::new(),
        throughput: Vec::new(),
    };
    if !json {
        let mut w = out::stdout();
        writeln!(
            w,
            "weft bench: {} messages, {} waits, {:.1} s per measurement; {}\n",
            out::bytes(args.size as u64),
            setup.wait.name(),
            args.duration.as_secs_f64(),
            report.machine
        )
        .map_err(from_io)?;
    }
    for case in cases {
        let (name, between) = match case {
            BenchCase::Ring => ("ring", "threads"),
            BenchCase::Stream => ("stream", "processes"),
            _ => ("pubsub", "processes"),
        };
        if interrupt::requested() {
            break;
        }
        let p = Progress::start(format!("{name} latency"), setup.duration, json);
        let h = match case {
            BenchCase::Ring => ring::latency(setup),
            BenchCase::Stream => stream::latency(setup),
            _ => pubsub::latency(setup),
        };
        p.finish();
        let size = match case {
            BenchCase::Ring => ring::message_size(setup.size),
            _ => setup.size,
        };
        report.latency.push(Latency::new(name, between, size, &h?));
        if interrupt::requested() {
            break;
        }
        let p = Progress::start(format!("{name} throughput"), setup.duration, json);
        let c = match case {
            BenchCase::Ring => ring::throughput(setup),
            BenchCase::Stream => stream::throughput(setup),
            _ => pubsub::throughput(setup),
        };
        p.finish();
        report
            .throughput
            .push(Throughput::new(name, between, size, c?));
    }
    if json {
        return out::json(&report);
    }
    print_human(&report).map_err(from_io)
}

fn print_human(r: &Report) -> std::io::Result<()> {
    let mut w = out::stdout();
    writeln!(
        w,
        "{NAME}round-trip latency{NAME:#} {DIM}(one message there and back){DIM:#}"
    )?;
    let mut t = Table::new(&[
        "CASE",
        "BETWEEN",
        ">SIZE",
        ">ROUND TRIPS",
        ">p50",
        ">p90",
        ">p99",
        ">p99.9",
        ">max",
    ]);
    for l in &r.latency {
        t.row(vec![
            cell(l.case).styled(NAME),
            cell(l.between),
            cell(out::bytes(l.size as u64)),
            cell(l.round_trips),
            cell(out::nanos(l.p50_ns)),
            cell(out::nanos(l.p90_ns)),
            cell(out::nanos(l.p99_ns)),
            cell(out::nanos(l.p999_ns)),
            cell(out::nanos(l.max_ns)),
        ]);
    }
    t.print(&mut w)?;
    writeln!(
        w,
        "\n{NAME}throughput{NAME:#} {DIM}(one way, counted by the receiver){DIM:#}"
    )?;
    let mut t = Table::new(&[
        "CASE",
        "BETWEEN",
        ">SIZE",
        ">MESSAGES",
        ">Mmsg/s",
        ">MiB/s",
        ">LOST",
    ]);
    for x in &r.throughput {
        t.row(vec![
            cell(x.case).styled(NAME),
            cell(x.between),
            cell(out::bytes(x.size as u64)),
            cell(x.messages),
            cell(format!("{:.2}", x.msgs_per_sec / 1e6)),
            cell(format!("{:.0}", x.bytes_per_sec / (1 << 20) as f64)),
            cell(x.lost),
        ]);
    }
    t.print(&mut w)
}

/// A unique object name for one measurement of this run.
pub fn object_name(what: &str) -> String {
    format!("weft-bench-{}-{what}", std::process::id())
}

/// The other process of a cross-process measurement: killed if the measurement fails.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts `weft bench-child ROLE NAME` and waits for its `ready` line.
    pub fn spawn(role: &str, name: &str, wait: BenchWait) -> Result<Peer, Failure> {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::new(ERROR, format!("cannot find the weft binary: {e}")))?;
        let mut child = Command::new(exe)
            .args(["bench-child", role, name, "--wait", wait.name()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::new(ERROR, format!("cannot start the benchmark's child: {e}")))?;
        let lines = BufReader::new(child.stdout.take().expect("piped"));
        let mut peer = Peer { child, lines };
        let line = peer.line()?;
        if line != "ready" {
            return Err(Failure::new(
                ERROR,
                format!("the benchmark's child said {line:?}, not \"ready\""),
            ));
        }
        Ok(peer)
    }

    /// The child's next line (an error if it ended without one).
    pub fn line(&mut self) -> Result<String, Failure> {
        let mut s = String::new();
        match self.lines.read_line(&mut s) {
            Ok(n) if n > 0 => Ok(s.trim_end().to_string()),
            _ => Err(Failure::new(
                ERROR,
                "the benchmark's child ended early (see its message above)",
            )),
        }
    }

    /// An error once the child has exited: for waits that the library cannot end by itself
    /// (this process also publishes on the topic it waits on, so it never sees the child as
    /// the topic's dead publisher).
    pub fn check_running(&mut self) -> Outcome {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            status => Err(Failure::new(
                PEER_GONE,
                format!(
                    "the benchmark's child exited in the middle of the measurement ({status:?})"
                ),
            )),
        }
    }

    /// Reads the child's `done MESSAGES LOST` line and waits for it to exit.
    pub fn done(mut self) -> Result<(u64, u64), Failure> {
        let line = self.line()?;
        let mut f = line.split_ascii_whitespace();
        let parsed = match (f.next(), f.next(), f.next()) {
            (Some("done"), Some(a), Some(b)) => a.parse().ok().zip(b.parse().ok()),
            _ => None,
        };
        let _ = self.child.wait();
        parsed.ok_or_else(|| Failure::new(ERROR, format!("the benchmark's child said {line:?}")))
    }

    /// Waits for the child to exit.
    pub fn finish(mut self) -> Outcome {
        match self.child.wait() {
            Ok(s) if s.success() => Ok(()),
            other => Err(Failure::new(
                ERROR,
                format!("the benchmark's child failed: {other:?}"),
            )),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Already gone when `finish`/`done` waited for it; otherwise the measurement failed.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Says `line` to the parent.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Runs `weft bench-child`.
pub fn child(args: &BenchChildArgs) -> Outcome {
    // Ctrl-C on a terminal reaches the whole process group: the child lets the parent wind
    // the measurement down (the parent closes its side, and the child then leaves cleanly).
    interrupt::install();
    let w = args.wait.strategy();
    match args.role.as_str() {
        "stream-echo" => stream::echo(&args.name, w),
        "stream-sink" => stream::sink(&args.name, w),
        "pubsub-echo" => pubsub::echo(&args.name, w),
        "pubsub-sink" => pubsub::sink(&args.name, w),
        other => Err(Failure::usage(format!("no benchmark child role {other:?}"))),
    }
}
