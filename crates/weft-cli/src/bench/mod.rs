//! `weft bench`: round-trip latency histograms and one-way throughput of the ring (between
//! threads), the byte stream and pub/sub (between processes), on this machine.
//!
//! Latency is measured as round trips (one message there and back, timed by one clock in one
//! process, so no clock is shared between processes); throughput as messages one way, for a
//! fixed time, counted by the receiver, without loss (pub/sub never holds a publisher back, so
//! its subscriber acknowledges and the publisher keeps within half a ring of it). Cross-process cases start this binary again as the
//! other side (`weft bench-child`, hidden), in a process group of its own: Ctrl-C on the
//! terminal reaches only this process, which winds the measurement down and stops the child.

mod pubsub;
mod ring;
mod stream;

use crate::cli::{BenchArgs, BenchCase, BenchChildArgs, BenchWait};
use crate::exit::{ERROR, Failure, Outcome, PEER_GONE, from_io};
use crate::interrupt;
use crate::out::{self, DIM, NAME, Table, WARN, cell};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
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

/// What a latency run measured.
#[derive(Debug)]
pub struct RoundTrips {
    /// Every round trip.
    pub hist: Hist,
    /// From the first round trip's start to the last one's end.
    pub elapsed: Duration,
}

/// Round trips of `setup`'s message for its duration (or until Ctrl-C): `trip(msg)` sends
/// `msg` and returns the length of the echo it got back, which must be `msg`'s; `what` names
/// the case in the error an altered echo gives.
pub fn round_trips(
    setup: &Setup,
    what: &str,
    mut trip: impl FnMut(&[u8]) -> Result<usize, Failure>,
) -> Result<RoundTrips, Failure> {
    let msg = vec![0x5a; setup.size];
    let mut hist = histogram();
    let start = std::time::Instant::now();
    let end = start + setup.duration;
    while std::time::Instant::now() < end && !interrupt::requested() {
        let t0 = std::time::Instant::now();
        if trip(&msg)? != msg.len() {
            return Err(Failure::new(
                ERROR,
                format!("{what} benchmark: the echo changed the message"),
            ));
        }
        record(&mut hist, t0);
    }
    Ok(RoundTrips {
        hist,
        elapsed: start.elapsed(),
    })
}

/// The largest `--size`: every case carries messages up to this size (the ring rounds its
/// size to one of a few, 4096 bytes at most; the stream and pub/sub size their objects by it).
const MAX_SIZE: usize = 1 << 20;

/// The shortest `--duration`: a measurement needs time to measure anything.
const MIN_DURATION: Duration = Duration::from_millis(1);

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
    /// Time measured.
    seconds: f64,
    mean_ns: f64,
    p50_ns: u64,
    p90_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
}

impl Latency {
    fn new(case: &'static str, between: &'static str, size: usize, r: &RoundTrips) -> Latency {
        let h = &r.hist;
        Latency {
            case,
            between,
            size,
            round_trips: h.len(),
            seconds: r.elapsed.as_secs_f64(),
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
    /// The time asked for, per measurement.
    duration_s: f64,
    /// Ctrl-C ended the run early: the rows are what was measured until then (a measurement
    /// that had not started is left out).
    interrupted: bool,
    /// The time actually measured, all rows together.
    measured_s: f64,
    /// Why the run failed, when it did: the rows are the measurements that finished before.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
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

/// The arguments' errors, found before anything starts.
fn check(args: &BenchArgs) -> Outcome {
    if args.size == 0 || args.size > MAX_SIZE {
        return Err(Failure::usage(format!(
            "--size must be 1 to {MAX_SIZE} bytes, not {}",
            args.size
        )));
    }
    if args.duration < MIN_DURATION {
        return Err(Failure::usage(format!(
            "--duration must be 1ms to 10^9 s (per measurement), not {}",
            out::duration(args.duration)
        )));
    }
    Ok(())
}

/// Runs `weft bench`.
pub fn run(args: &BenchArgs, json: bool) -> Outcome {
    interrupt::install();
    check(args)?;
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
        interrupted: false,
        measured_s: 0.0,
        error: None,
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
    let failed = measure(&cases, setup, json, &mut report).err();
    report.interrupted = interrupt::requested();
    report.measured_s = report.latency.iter().map(|l| l.seconds).sum::<f64>()
        + report.throughput.iter().map(|t| t.seconds).sum::<f64>();
    report.error = failed.as_ref().map(|f| f.message.clone());
    // A failure is reported after what finished before it; with nothing, on its own.
    let nothing = report.latency.is_empty() && report.throughput.is_empty();
    if failed.is_none() || !nothing {
        let asked = 2.0 * cases.len() as f64 * args.duration.as_secs_f64();
        if json {
            out::json(&report)?;
        } else {
            print_human(&report, asked).map_err(from_io)?;
        }
    }
    failed.map_or(Ok(()), Err)
}

/// Runs each case's two measurements, adding their rows to `report`, until the end, Ctrl-C
/// (a measurement it cut short is kept if it measured anything) or the first failure.
fn measure(cases: &[BenchCase], setup: Setup, json: bool, report: &mut Report) -> Outcome {
    for &case in cases {
        let (name, between) = match case {
            BenchCase::Ring => ("ring", "threads"),
            BenchCase::Stream => ("stream", "processes"),
            _ => ("pubsub", "processes"),
        };
        if interrupt::requested() {
            break;
        }
        let p = Progress::start(format!("{name} latency"), setup.duration, json);
        let r = match case {
            BenchCase::Ring => ring::latency(setup),
            BenchCase::Stream => stream::latency(setup),
            _ => pubsub::latency(setup),
        };
        p.finish();
        let size = match case {
            BenchCase::Ring => ring::message_size(setup.size),
            _ => setup.size,
        };
        let r = r?;
        if !r.hist.is_empty() || !interrupt::requested() {
            report.latency.push(Latency::new(name, between, size, &r));
        }
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
        let c = c?;
        if c.messages > 0 || !interrupt::requested() {
            report
                .throughput
                .push(Throughput::new(name, between, size, c));
        }
    }
    Ok(())
}

/// The tables (each only with rows: a failed or interrupted run may have none of one), and a
/// note when Ctrl-C cut the run short (`asked`: the seconds the whole run would have
/// measured).
fn print_human(r: &Report, asked: f64) -> std::io::Result<()> {
    let mut w = out::stdout();
    if !r.latency.is_empty() {
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
    }
    if !r.throughput.is_empty() {
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
        t.print(&mut w)?;
    }
    if r.interrupted {
        writeln!(
            w,
            "\n{WARN}interrupted{WARN:#}: {:.1} s measured of the {asked:.1} s asked for; the figures are partial",
            r.measured_s
        )?;
    }
    Ok(())
}

/// A unique object name for one measurement of this run.
pub fn object_name(what: &str) -> String {
    format!("weft-bench-{}-{what}", std::process::id())
}

/// How long a child may take to exit by itself once its measurement has ended (closed its
/// side, or told it to stop) before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// How a child ended.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// It exited (or was killed by someone else) with this status.
    Exited(ExitStatus),
    /// It did not exit within [`STOP_TIMEOUT`] and was killed.
    Killed,
}

/// The other process of a cross-process measurement, in a process group of its own. Stopped
/// when finished or dropped: waited for (it ends by itself once the measurement closes its
/// side or tells it to stop), killed only if it does not exit within [`STOP_TIMEOUT`]; then
/// whatever it was to make and remove (`leaves`) is removed if abandoned.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    lines: BufReader<ChildStdout>,
    /// Objects the child makes or joins, removed once it is gone if nobody is alive in them.
    leaves: Vec<String>,
    ended: Option<Ending>,
    /// `check_running` reported the child's exit: `finish` does not report it again.
    reported: bool,
    /// The child said `ready`: from then on its end is the other side gone ([`PEER_GONE`],
    /// as the library's `PeerDead`); before it, an exit of its own is a failure to start
    /// ([`ERROR`]), a signal from someone else the other side gone.
    ready: bool,
}

impl Peer {
    /// Starts `weft bench-child ROLE NAME` and waits for its `ready` line. `leaves`: the
    /// objects to remove, if abandoned, once the child is gone.
    pub fn spawn(
        role: &str,
        name: &str,
        wait: BenchWait,
        leaves: &[&str],
    ) -> Result<Peer, Failure> {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::new(ERROR, format!("cannot find the weft binary: {e}")))?;
        let mut child = Command::new(exe)
            .args(["bench-child", role, name, "--wait", wait.name()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // Out of the terminal's foreground group: Ctrl-C reaches this process only (a
            // child still starting up, before its handler, died of it), which then stops the
            // child.
            .process_group(0)
            .spawn()
            .map_err(|e| Failure::new(ERROR, format!("cannot start the benchmark's child: {e}")))?;
        let lines = BufReader::new(child.stdout.take().expect("piped"));
        let mut peer = Peer {
            child,
            lines,
            leaves: leaves.iter().map(|n| n.to_string()).collect(),
            ended: None,
            reported: false,
            ready: false,
        };
        let line = peer.line()?;
        if line != "ready" {
            return Err(Failure::new(
                ERROR,
                format!("the benchmark's child said {line:?}, not \"ready\""),
            ));
        }
        peer.ready = true;
        Ok(peer)
    }

    /// The child's next line (an error, saying how the child ended, if it ended without one).
    pub fn line(&mut self) -> Result<String, Failure> {
        let mut s = String::new();
        match self.lines.read_line(&mut s) {
            Ok(n) if n > 0 => Ok(s.trim_end().to_string()),
            _ => {
                let (how, gone) = match self.stop() {
                    Ending::Exited(st) => (exit_text(st), self.ready || st.signal().is_some()),
                    Ending::Killed => ("was killed".to_string(), self.ready),
                };
                // Whichever of the library (`PeerDead`) and this read hears of a killed child
                // first, and whether or not it had said `ready` (a kill while it starts up:
                // its objects exist before it says so), the run ends with the same status.
                let code = if gone { PEER_GONE } else { ERROR };
                Err(Failure::new(
                    code,
                    format!("the benchmark's child ended early: it {how}"),
                ))
            }
        }
    }

    /// An error once the child has exited: for waits that the library cannot end by itself
    /// (this process also publishes on the topic it waits on, so it never sees the child as
    /// the topic's dead publisher).
    pub fn check_running(&mut self) -> Outcome {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(st)) => {
                self.reported = true;
                Err(Failure::new(
                    PEER_GONE,
                    format!(
                        "the benchmark's child {} in the middle of the measurement",
                        exit_text(st)
                    ),
                ))
            }
            Err(e) => Err(Failure::new(
                ERROR,
                format!("cannot check on the benchmark's child: {e}"),
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
        let counts = parsed
            .ok_or_else(|| Failure::new(ERROR, format!("the benchmark's child said {line:?}")))?;
        self.finish()?;
        Ok(counts)
    }

    /// Waits for the child to exit (killing it after [`STOP_TIMEOUT`]): an error unless it
    /// exited with success (or `check_running` reported its exit already).
    pub fn finish(mut self) -> Outcome {
        match self.stop() {
            Ending::Exited(st) if st.success() || self.reported => Ok(()),
            Ending::Exited(st) => Err(Failure::new(
                ERROR,
                format!("the benchmark's child {}", exit_text(st)),
            )),
            Ending::Killed => Err(Failure::new(
                ERROR,
                format!(
                    "the benchmark's child did not exit within {} of the measurement's end, and was killed",
                    out::duration(STOP_TIMEOUT)
                ),
            )),
        }
    }

    /// Waits up to [`STOP_TIMEOUT`] for the child to exit, then kills it; removes what it
    /// left. Once: later calls give the same ending.
    fn stop(&mut self) -> Ending {
        if let Some(e) = self.ended {
            return e;
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let ending = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break Ending::Exited(st),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break Ending::Killed;
                }
            }
        };
        // The names are this run's own (`object_name`), and only an object in which nobody
        // is alive is removed: what a killed child could not remove itself, also an object
        // it was killed while creating (its header not written yet), which
        // `remove_abandoned` cannot tell from one whose creator is at work.
        for name in &self.leaves {
            let _ = weft::shm::remove_own_abandoned(name);
        }
        self.ended = Some(ending);
        ending
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // A measurement that failed, or a child that said something other than `ready`.
        self.stop();
    }
}

/// How a child ended, as the end of a sentence: "exited with status 1 (see its message
/// above)", "was killed by SIGKILL (signal 9)".
fn exit_text(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(0), _) => "exited".to_string(),
        (Some(c), _) => format!("exited with status {c} (see its message above)"),
        (None, Some(sig)) => match signal_name(sig) {
            Some(n) => format!("was killed by {n} (signal {sig})"),
            None => format!("was killed by signal {sig}"),
        },
        _ => format!("ended ({st})"),
    }
}

/// The name of a common signal (Linux numbering).
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// A measurement's result once its child is finished (`child`): the measurement's failure
/// first, with the child's when it failed too (a child that died makes the measurement fail
/// with the library's words, and the child's ending says why).
pub fn conclude<T>(measured: Result<T, Failure>, child: Outcome) -> Result<T, Failure> {
    match (measured, child) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(c)) => Err(c),
        (Err(m), Ok(())) => Err(m),
        (Err(m), Err(c)) => Err(Failure::new(
            m.code,
            format!("{} ({})", m.message, c.message),
        )),
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
    // No Ctrl-C handler: the child runs in a process group of its own, which the terminal's
    // Ctrl-C does not reach; the parent winds the measurement down (it closes its side or
    // says stop, and the child then leaves cleanly). A SIGINT or SIGTERM sent to the child
    // itself ends it, and the parent says so.
    let w = args.wait.strategy();
    match args.role.as_str() {
        "stream-echo" => stream::echo(&args.name, w),
        "stream-sink" => stream::sink(&args.name, w),
        "pubsub-echo" => pubsub::echo(&args.name, w),
        "pubsub-sink" => pubsub::sink(&args.name, w),
        other => Err(Failure::usage(format!("no benchmark child role {other:?}"))),
    }
}
