//! Byte-stream scenarios, each between two real processes (this binary re-run as the child):
//! throughput of 1M records of 256 B, handoff of large payloads written in place, and 64 B
//! ping-pong; against ipc_ring, ipmpsc, crossbar and Unix domain sockets.
//!
//! Every scenario has one body, generic over small sender/receiver traits that each
//! implementation fills in, so that every implementation runs the same loop. The parent is
//! pinned to core 0 and the child to core 1.

// The handoff scenario needs the x86-64 time-stamp counter; elsewhere its parts are unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use crate::harness::{self, Better, Report, Scenario};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdout};
use std::time::{Duration, Instant};
use weft::WaitStrategy;
use weft::stream::{StreamOptions, StreamReader, StreamWriter};

/// Record size of the throughput scenario.
const MSG: usize = 256;
/// Records per throughput run.
const MESSAGES: u64 = 1_000_000;
/// Stream capacities of the throughput scenario.
const CAPACITIES: [(usize, &str); 3] = [(64 << 20, "64MiB"), (8 << 20, "8MiB"), (1 << 20, "1MiB")];
/// Payloads of the handoff scenario.
const HANDOFF_SIZES: [(usize, &str); 3] =
    [(1 << 10, "1KiB"), (1 << 20, "1MiB"), (50 << 20, "50MiB")];
/// Measured handoffs per implementation and size (after the warm-up ones).
const HANDOFF_RUNS: usize = 25;
/// Handoffs before the measured ones: they fault the pages in on both sides.
const HANDOFF_WARMUP: usize = 4;
/// Ping-pong message size.
const PING: usize = 64;
/// Round trips per measured ping-pong repetition, spinning and parked.
const PINGS_SPIN: usize = 100_000;
const PINGS_PARK: usize = 20_000;
/// Wall-time cap of one ping-pong run.
const PING_RUN_BUDGET: Duration = Duration::from_secs(3);
/// How long a child may take to open its side.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);
/// The child's role argument for this area.
const AREA: &str = "stream";

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    all.push(Scenario {
        name: "stream/memcpy-64MiB".into(),
        run: Box::new(|report| {
            let gib = memcpy_gibs(report.reps);
            report.add(
                "stream/memcpy-64MiB",
                "memcpy 64 MiB -> 64 MiB (this machine)",
                "GiB/s",
                Better::Higher,
                gib,
            );
        }),
    });
    for (cap, label) in CAPACITIES {
        all.push(Scenario {
            name: format!("stream/throughput-256B-{label}"),
            run: Box::new(move |report| throughput(report, cap, label)),
        });
    }
    #[cfg(target_arch = "x86_64")]
    for (size, label) in HANDOFF_SIZES {
        all.push(Scenario {
            name: format!("stream/handoff-{label}"),
            run: Box::new(move |report| handoff(report, size, label)),
        });
    }
    for busy in [true, false] {
        let mode = if busy { "busy-spin" } else { "parked" };
        all.push(Scenario {
            name: format!("stream/pingpong-64B-{mode}"),
            run: Box::new(move |report| pingpong(report, busy)),
        });
    }
    all
}

/// Runs this area's child side of a cross-process scenario, if `args` names one.
pub fn child(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some(AREA) {
        return None;
    }
    // Not `harness::pin`: it checks the core against this process's affinity mask, which the
    // child inherits from a parent thread already pinned to core 0, so it would skip the pin and
    // leave both sides on one core.
    if weft::affinity::pin_current_thread(1).is_err() {
        eprintln!("weft-bench: could not pin the child to core 1; it runs unpinned");
        let _ = weft::affinity::pin_current_thread(0);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let code = match a.get(1..) {
        Some(["tput", imp, name, n, runs]) => {
            let (Some(imp), Ok(n), Ok(runs)) = (Impl::from_tag(imp), n.parse(), runs.parse())
            else {
                return Some(2);
            };
            tput_child(imp, name, n, runs)
        }
        Some(["handoff", imp, name, size, runs]) => {
            let (Some(imp), Ok(size), Ok(runs)) =
                (Handoff::from_tag(imp), size.parse(), runs.parse())
            else {
                return Some(2);
            };
            handoff_child(imp, name, size, runs)
        }
        Some(["ping", imp, name]) => {
            let Some(imp) = Ping::from_tag(imp) else {
                return Some(2);
            };
            ping_child(imp, name)
        }
        _ => 2,
    };
    Some(code)
}

// ---------------------------------------------------------------------------------------------
// Shared plumbing
// ---------------------------------------------------------------------------------------------

/// The child process of one measurement, and its stdout, through which it reports.
struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Peer {
    fn spawn(args: &[&str]) -> Peer {
        let mut all = vec![AREA];
        all.extend_from_slice(args);
        let mut child = harness::spawn_child(&all);
        let out = BufReader::new(child.stdout.take().expect("piped stdout"));
        Peer { child, out }
    }

    /// The child's next line, or why there is none.
    fn line(&mut self) -> Result<String, String> {
        let mut s = String::new();
        match self.out.read_line(&mut s) {
            Ok(0) => Err("the child exited early (see its stderr above)".into()),
            Ok(_) if s.starts_with("error") => Err(s.trim().into()),
            Ok(_) => Ok(s.trim().to_string()),
            Err(e) => Err(format!("reading the child's report: {e}")),
        }
    }

    /// Waits for the child to exit.
    fn finish(mut self) -> Result<(), String> {
        match self.child.wait() {
            Ok(st) if st.success() => Ok(()),
            Ok(st) => Err(format!("the child exited with {st}")),
            Err(e) => Err(format!("waiting for the child: {e}")),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // A child left running after a failure is stopped (our own child, by its id).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `f` on a thread pinned to core 0 (the child takes core 1), so that the pin does not
/// outlive the scenario.
fn on_core0<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            harness::pin(0);
            f()
        })
        .join()
        .expect("the measuring thread panicked")
    })
}

/// A path under /dev/shm (or the temp dir) for the peers that take a file path.
fn shm_path(name: &str) -> PathBuf {
    let dir = PathBuf::from("/dev/shm");
    if dir.is_dir() {
        dir.join(name)
    } else {
        std::env::temp_dir().join(name)
    }
}

fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{name}.sock"))
}

fn fail(scenario: &str, imp: &str, e: String) {
    eprintln!("   {imp:<34} FAILED in {scenario}: {e}");
}

/// Median of this machine's single-thread memcpy bandwidth, 64 MiB to 64 MiB, one sample per
/// repetition (each the best of a few copies).
fn memcpy_gibs(reps: usize) -> Vec<f64> {
    const LEN: usize = 64 << 20;
    let src = vec![0x5au8; LEN];
    let mut dst = vec![0u8; LEN];
    dst.copy_from_slice(&src); // faults the destination in
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..4 {
                dst.copy_from_slice(std::hint::black_box(&src));
                std::hint::black_box(&mut dst);
            }
            4.0 * LEN as f64 / t.elapsed().as_secs_f64() / (1u64 << 30) as f64
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Throughput: 1M records of 256 B, parent writes, child reads
// ---------------------------------------------------------------------------------------------

/// The implementations of the throughput scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Impl {
    Weft,
    WeftBatch,
    WeftDeferred,
    WeftAdaptive,
    PodBus,
    Socket,
    Tcp,
    Ipmpsc,
    IpcRing,
}

impl Impl {
    /// The first weft row is the one the ratios use: the default wait strategy.
    const ALL: [Impl; 9] = [
        Impl::WeftAdaptive,
        Impl::Weft,
        Impl::WeftBatch,
        Impl::WeftDeferred,
        Impl::PodBus,
        Impl::Socket,
        Impl::Tcp,
        Impl::Ipmpsc,
        Impl::IpcRing,
    ];

    fn tag(self) -> &'static str {
        match self {
            Impl::Weft => "weft",
            Impl::WeftBatch => "weft-batch",
            Impl::WeftDeferred => "weft-deferred",
            Impl::WeftAdaptive => "weft-adaptive",
            Impl::PodBus => "podbus",
            Impl::Socket => "socket",
            Impl::Tcp => "tcp",
            Impl::Ipmpsc => "ipmpsc",
            Impl::IpcRing => "ipc_ring",
        }
    }

    fn from_tag(tag: &str) -> Option<Impl> {
        Impl::ALL.into_iter().find(|i| i.tag() == tag)
    }

    /// How weft's two sides wait (the peers wait their own way).
    fn wait(self) -> WaitStrategy {
        match self {
            Impl::WeftAdaptive => WaitStrategy::Adaptive,
            _ => WaitStrategy::BusySpin,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Impl::Weft => "weft 0.1 (write / read, busy-spin)",
            Impl::WeftBatch => "weft 0.1 (write / read_batch(256), busy-spin)",
            Impl::WeftDeferred => "weft 0.1 (write_deferred + flush / read_batch(256), busy-spin)",
            Impl::WeftAdaptive => "weft 0.1 (write / read, Adaptive: default)",
            Impl::PodBus => "crossbar 1.2 PodBus (bounded)",
            Impl::Socket => "Unix socket (64 KiB buffered)",
            Impl::Tcp => "TCP loopback (64 KiB buffered, NODELAY)",
            Impl::Ipmpsc => "ipmpsc 0.5 (zero-copy recv)",
            Impl::IpcRing => "ipc_ring 0.2",
        }
    }
}

/// The writing side of one implementation.
trait Sender {
    /// Called once the child reported that its side is open.
    fn ready(&mut self) {}
    /// Sends one record, waiting for room.
    fn send(&mut self, msg: &[u8]);
    /// Pushes out anything buffered.
    fn flush(&mut self) {}
}

/// The reading side of one implementation.
trait Receiver {
    /// Waits for at least one record and calls `f` on every record it takes; returns how many.
    fn recv(&mut self, f: impl FnMut(&[u8])) -> u64;
}

fn throughput(report: &mut Report, cap: usize, cap_label: &str) {
    let scenario = format!("stream/throughput-256B-{cap_label}");
    let gib_scenario = format!("stream/throughput-256B-{cap_label}-GiB/s");
    let x_desc = "stream capacity (bytes)";
    report.axis(&scenario, "stream/throughput-256B", x_desc, cap as f64);
    report.axis(
        &gib_scenario,
        "stream/throughput-256B-GiB/s",
        x_desc,
        cap as f64,
    );
    let runs = report.reps + 1;
    let mut gib_rows = Vec::new();
    for imp in Impl::ALL {
        let name = harness::unique_name(&format!("tp{}", imp.tag().replace('_', "")));
        let secs = on_core0(|| match imp {
            Impl::Weft | Impl::WeftBatch | Impl::WeftAdaptive | Impl::WeftDeferred => {
                let opts = StreamOptions::new(cap).wait(imp.wait());
                let w = StreamWriter::create_with(&name, &opts).map_err(|e| e.to_string())?;
                if imp == Impl::WeftDeferred {
                    tput_parent(WeftDeferredTx(w), imp, &name, runs)
                } else {
                    tput_parent(WeftTx(w), imp, &name, runs)
                }
            }
            Impl::PodBus => {
                let ring = podbus_ring(cap);
                let bus = crossbar::PodBus::<[u8; MSG]>::create_bounded(&name, ring, 0)
                    .map_err(|e| e.to_string())?;
                tput_parent(PodBusTx(bus), imp, &name, runs)
            }
            Impl::Socket => {
                let path = socket_path(&name);
                let listener = UnixListener::bind(&path).map_err(|e| e.to_string())?;
                let accept = move || {
                    let s = listener.accept().map(|(s, _)| s);
                    let _ = std::fs::remove_file(&path);
                    s
                };
                tput_parent(SocketTx::new(accept), imp, &name, runs)
            }
            Impl::Tcp => {
                let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
                let addr = listener.local_addr().map_err(|e| e.to_string())?;
                let accept = move || {
                    let (s, _) = listener.accept()?;
                    s.set_nodelay(true)?;
                    Ok(s)
                };
                tput_parent(SocketTx::new(accept), imp, &addr.to_string(), runs)
            }
            Impl::Ipmpsc => {
                let path = shm_path(&name);
                let p = path.to_str().ok_or("non-UTF-8 path")?;
                let buf =
                    ipmpsc::SharedRingBuffer::create(p, cap as u32).map_err(|e| e.to_string())?;
                let tx = IpmpscTx {
                    tx: ipmpsc::Sender::new(buf),
                    _file: FileGuard(path),
                };
                tput_parent(tx, imp, &name, runs)
            }
            Impl::IpcRing => {
                let path = shm_path(&name);
                let w = ipc_ring::RingWriter::create(&path, cap).map_err(|e| e.to_string())?;
                tput_parent(
                    IpcRingTx {
                        tx: w,
                        _file: FileGuard(path),
                    },
                    imp,
                    &name,
                    runs,
                )
            }
        });
        match secs {
            Ok(secs) => {
                // The first run warmed up (faulted the pages in): it is not a sample.
                let measured = &secs[1..];
                let mps = measured.iter().map(|s| MESSAGES as f64 / s / 1e6).collect();
                let gib: Vec<f64> = measured
                    .iter()
                    .map(|s| (MESSAGES as f64 * MSG as f64) / s / (1u64 << 30) as f64)
                    .collect();
                report.add(&scenario, imp.label(), "Mmsg/s", Better::Higher, mps);
                gib_rows.push((imp.label(), gib));
            }
            Err(e) => fail(&scenario, imp.label(), e),
        }
    }
    // Payload bytes only (the 256 B of each record), against memcpy on this machine.
    for (label, gib) in gib_rows {
        report.add(&gib_scenario, label, "GiB/s", Better::Higher, gib);
    }
    report.add(
        &gib_scenario,
        "memcpy 64 MiB (this machine, same run)",
        "GiB/s",
        Better::Higher,
        memcpy_gibs(report.reps),
    );
}

/// The largest power-of-two number of 256 B PodBus slots (each 320 B with its stamp, aligned
/// to 64) that fits in `cap` bytes.
fn podbus_ring(cap: usize) -> usize {
    // crossbar's `Slot` is `#[repr(C, align(64))] { stamp: AtomicU64, data: T }`.
    let slot = (8 + MSG).div_ceil(64) * 64;
    let n = (cap / slot).max(2);
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// One body for every implementation: `runs` runs of MESSAGES records, each timed from the
/// first send to the child's report that it has read the last one.
fn tput_parent<S: Sender>(
    mut tx: S,
    imp: Impl,
    name: &str,
    runs: usize,
) -> Result<Vec<f64>, String> {
    let n = MESSAGES.to_string();
    let r = runs.to_string();
    let mut peer = Peer::spawn(&["tput", imp.tag(), name, &n, &r]);
    let ready = peer.line()?;
    if ready != "ready" {
        return Err(format!("unexpected first report {ready:?}"));
    }
    tx.ready();
    let mut msg = [0u8; MSG];
    for (i, b) in msg.iter_mut().enumerate() {
        *b = i as u8;
    }
    let mut seq = 0u64;
    let mut secs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        for _ in 0..MESSAGES {
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            tx.send(&msg);
            seq += 1;
        }
        tx.flush();
        let done = peer.line()?;
        secs.push(t.elapsed().as_secs_f64());
        if done != "done" {
            return Err(format!("unexpected report {done:?}"));
        }
    }
    drop(tx);
    peer.finish()?;
    Ok(secs)
}

/// The reading body: checks that every record arrives whole and in order.
fn tput_read<R: Receiver>(mut rx: R, n: u64, runs: usize) -> i32 {
    println!("ready");
    let mut next = 0u64;
    let mut bad = 0u64;
    for _ in 0..runs {
        let end = next + n;
        while next < end {
            rx.recv(|m| {
                let seq = m
                    .get(..8)
                    .map(|s| u64::from_le_bytes(s.try_into().unwrap()));
                if m.len() != MSG || seq != Some(next) {
                    bad += 1;
                }
                next += 1;
            });
        }
        if bad > 0 {
            println!("error: {bad} records out of order or of the wrong size");
            return 1;
        }
        println!("done");
    }
    0
}

fn tput_child(imp: Impl, name: &str, n: u64, runs: usize) -> i32 {
    let res: Result<i32, String> = (|| {
        Ok(match imp {
            Impl::Weft | Impl::WeftBatch | Impl::WeftAdaptive | Impl::WeftDeferred => {
                let mut r =
                    StreamReader::open_timeout(name, OPEN_TIMEOUT).map_err(|e| e.to_string())?;
                r.set_wait_strategy(imp.wait());
                if matches!(imp, Impl::WeftBatch | Impl::WeftDeferred) {
                    tput_read(WeftBatchRx(r), n, runs)
                } else {
                    tput_read(WeftRx(r), n, runs)
                }
            }
            Impl::PodBus => {
                let sub = crossbar::BusSubscriber::<[u8; MSG]>::connect(name)
                    .map_err(|e| e.to_string())?;
                tput_read(PodBusRx(sub), n, runs)
            }
            Impl::Socket => {
                let s = UnixStream::connect(socket_path(name)).map_err(|e| e.to_string())?;
                tput_read(SocketRx::new(s), n, runs)
            }
            Impl::Tcp => {
                // For TCP the child's "name" is the parent's listening address.
                let s = TcpStream::connect(name).map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                tput_read(SocketRx::new(s), n, runs)
            }
            Impl::Ipmpsc => {
                let path = shm_path(name);
                let p = path.to_str().ok_or("non-UTF-8 path")?;
                let buf = ipmpsc::SharedRingBuffer::open(p).map_err(|e| e.to_string())?;
                tput_read(IpmpscRx(ipmpsc::Receiver::new(buf)), n, runs)
            }
            Impl::IpcRing => {
                let r = ipc_ring::RingReader::open(shm_path(name)).map_err(|e| e.to_string())?;
                tput_read(
                    IpcRingRx {
                        rx: r,
                        buf: Vec::with_capacity(MSG),
                    },
                    n,
                    runs,
                )
            }
        })
    })();
    res.unwrap_or_else(|e| {
        println!("error: {e}");
        1
    })
}

/// Removes a peer's backing file when dropped.
struct FileGuard(PathBuf);

impl Drop for FileGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

struct WeftTx(StreamWriter);

impl Sender for WeftTx {
    #[inline]
    fn send(&mut self, msg: &[u8]) {
        self.0.write(msg).expect("weft write");
    }
}

/// Writes like a buffered socket: records are published in batches (at most
/// [`StreamWriter::deferred_limit`] bytes, and at the end of each run).
struct WeftDeferredTx(StreamWriter);

impl Sender for WeftDeferredTx {
    #[inline]
    fn send(&mut self, msg: &[u8]) {
        self.0.write_deferred(msg).expect("weft write_deferred");
    }
    fn flush(&mut self) {
        self.0.flush();
    }
}

struct WeftRx(StreamReader);

impl Receiver for WeftRx {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let g = self.0.read().expect("weft read");
        f(&g);
        1
    }
}

struct WeftBatchRx(StreamReader);

impl Receiver for WeftBatchRx {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let b = self.0.read_batch(256).expect("weft read_batch");
        for m in b.iter() {
            f(m);
        }
        b.len() as u64
    }
}

struct PodBusTx(crossbar::PodBus<[u8; MSG]>);

impl Sender for PodBusTx {
    #[inline]
    fn send(&mut self, msg: &[u8]) {
        let mut v = [0u8; MSG];
        v.copy_from_slice(msg);
        self.0.publish(v);
    }
}

struct PodBusRx(crossbar::BusSubscriber<[u8; MSG]>);

impl Receiver for PodBusRx {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        loop {
            if let Some(v) = self.0.try_recv() {
                f(&v);
                return 1;
            }
            std::hint::spin_loop();
        }
    }
}

/// A length-prefixed framing over a connected stream socket (Unix or TCP), written through a
/// 64 KiB buffer.
struct SocketTx<S: Write> {
    /// Accepts the child's connection, once the child is up.
    accept: Option<Box<dyn FnOnce() -> std::io::Result<S>>>,
    out: Option<BufWriter<S>>,
}

impl<S: Write> SocketTx<S> {
    fn new(accept: impl FnOnce() -> std::io::Result<S> + 'static) -> SocketTx<S> {
        SocketTx {
            accept: Some(Box::new(accept)),
            out: None,
        }
    }
}

impl<S: Write> Sender for SocketTx<S> {
    fn ready(&mut self) {
        let accept = self.accept.take().expect("accept once");
        let s = accept().expect("accept the child's connection");
        self.out = Some(BufWriter::with_capacity(64 << 10, s));
    }

    #[inline]
    fn send(&mut self, msg: &[u8]) {
        let out = self.out.as_mut().expect("connected");
        out.write_all(&(msg.len() as u32).to_le_bytes())
            .and_then(|_| out.write_all(msg))
            .expect("socket write");
    }

    fn flush(&mut self) {
        self.out
            .as_mut()
            .expect("connected")
            .flush()
            .expect("socket flush");
    }
}

struct SocketRx<S: Read> {
    input: BufReader<S>,
    buf: Vec<u8>,
}

impl<S: Read> SocketRx<S> {
    fn new(s: S) -> SocketRx<S> {
        SocketRx {
            input: BufReader::with_capacity(64 << 10, s),
            buf: vec![0; MSG],
        }
    }
}

impl<S: Read> Receiver for SocketRx<S> {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let mut len = [0u8; 4];
        self.input.read_exact(&mut len).expect("socket read");
        let len = u32::from_le_bytes(len) as usize;
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        self.input
            .read_exact(&mut self.buf[..len])
            .expect("socket read");
        f(&self.buf[..len]);
        1
    }
}

/// Serialises a byte slice as bincode bytes (length + raw bytes), which is what
/// `serde_bytes` does, so that ipmpsc's zero-copy receive can borrow it as `&[u8]`.
struct Bytes<'a>(&'a [u8]);

impl serde::Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

struct IpmpscTx {
    tx: ipmpsc::Sender,
    _file: FileGuard,
}

impl Sender for IpmpscTx {
    #[inline]
    fn send(&mut self, msg: &[u8]) {
        self.tx.send(&Bytes(msg)).expect("ipmpsc send");
    }
}

struct IpmpscRx(ipmpsc::Receiver);

impl Receiver for IpmpscRx {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let mut ctx = self.0.zero_copy_context();
        let m: &[u8] = ctx.recv().expect("ipmpsc recv");
        f(m);
        1
    }
}

struct IpcRingTx {
    tx: ipc_ring::RingWriter,
    _file: FileGuard,
}

impl Sender for IpcRingTx {
    #[inline]
    fn send(&mut self, msg: &[u8]) {
        if self.tx.try_push(msg).is_err() {
            self.tx.push(msg, None).expect("ipc_ring push");
        }
    }
}

struct IpcRingRx {
    rx: ipc_ring::RingReader,
    buf: Vec<u8>,
}

impl Receiver for IpcRingRx {
    #[inline]
    fn recv(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let n = self.rx.pop(&mut self.buf, None).expect("ipc_ring pop");
        f(&self.buf[..n]);
        1
    }
}

// ---------------------------------------------------------------------------------------------
// Handoff: reserve, fill, commit; the reader borrows. One-way time on the TSC.
// ---------------------------------------------------------------------------------------------

/// The implementations of the handoff scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handoff {
    Weft,
    Crossbar,
    Socket,
}

impl Handoff {
    const ALL: [Handoff; 3] = [Handoff::Weft, Handoff::Crossbar, Handoff::Socket];

    fn tag(self) -> &'static str {
        match self {
            Handoff::Weft => "weft",
            Handoff::Crossbar => "crossbar",
            Handoff::Socket => "socket",
        }
    }

    fn from_tag(tag: &str) -> Option<Handoff> {
        Handoff::ALL.into_iter().find(|i| i.tag() == tag)
    }

    fn label(self) -> &'static str {
        match self {
            Handoff::Weft => "weft 0.1 (reserve/commit, borrow)",
            Handoff::Crossbar => "crossbar 1.2 (loan/publish, Sample)",
            Handoff::Socket => "Unix socket (write_all / read_exact)",
        }
    }
}

/// The CPU's time-stamp counter: constant-rate and synchronised across cores on current x86
/// (`constant_tsc`, `nonstop_tsc`), so a stamp taken in one process can be compared with one
/// taken in another.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ticks() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// TSC ticks per nanosecond, measured against the monotonic clock.
#[cfg(target_arch = "x86_64")]
fn ticks_per_ns() -> f64 {
    let (t0, c0) = (Instant::now(), ticks());
    while t0.elapsed() < Duration::from_millis(100) {
        std::hint::spin_loop();
    }
    let (c1, dt) = (ticks(), t0.elapsed());
    (c1 - c0) as f64 / dt.as_nanos() as f64
}

/// The writing side of a handoff: fills `size` bytes with `fill` in place and commits them (or
/// sends them), returning [`commit_tick`] taken right before the commit.
trait HandoffTx {
    fn ready(&mut self) {}
    fn hand_off(&mut self, size: usize, fill: u8) -> u64;
}

/// The reading side: waits for the next payload and calls `f` with it while holding it.
trait HandoffRx {
    fn take(&mut self, size: usize, f: impl FnOnce(&[u8]));
}

#[cfg(target_arch = "x86_64")]
fn handoff(report: &mut Report, size: usize, label: &str) {
    let scenario = format!("stream/handoff-{label}");
    report.axis(&scenario, "stream/handoff", "payload (bytes)", size as f64);
    let per_ns = ticks_per_ns();
    for imp in Handoff::ALL {
        let name = harness::unique_name(&format!("ho{}", imp.tag()));
        let runs = HANDOFF_WARMUP + HANDOFF_RUNS;
        let res = on_core0(|| match imp {
            Handoff::Weft => {
                // Records of up to half the capacity always fit: twice the payload plus headers.
                let cap = 2 * (size + 2 * 4096);
                let opts = StreamOptions::new(cap)
                    .align(4096)
                    .wait(WaitStrategy::BusySpin);
                let w = StreamWriter::create_with(&name, &opts).map_err(|e| e.to_string())?;
                handoff_parent(WeftHandoffTx(w), imp, &name, size, runs)
            }
            Handoff::Crossbar => {
                let cfg = crossbar::Config {
                    max_topics: 1,
                    block_count: 4,
                    block_size: (size + 64) as u32,
                    ring_depth: 2,
                    ..crossbar::Config::default()
                };
                let mut p = crossbar::Publisher::create(&name, cfg).map_err(|e| e.to_string())?;
                let topic = p.register("/handoff").map_err(|e| e.to_string())?;
                handoff_parent(CrossbarTx { p, topic }, imp, &name, size, runs)
            }
            Handoff::Socket => {
                let path = socket_path(&name);
                let listener = UnixListener::bind(&path).map_err(|e| e.to_string())?;
                let tx = SocketHandoffTx {
                    listener: Some(listener),
                    out: None,
                    buf: vec![0u8; size],
                    path,
                };
                handoff_parent(tx, imp, &name, size, runs)
            }
        });
        // crossbar's publisher leaves a lock file named after its region.
        harness::remove_shm_named(&name);
        match res {
            Ok(t) => {
                let ns = t[HANDOFF_WARMUP..]
                    .iter()
                    .map(|&d| d as f64 / per_ns)
                    .collect();
                report.add(&scenario, imp.label(), "ns", Better::Lower, ns);
            }
            Err(e) => fail(&scenario, imp.label(), e),
        }
    }
}

/// One body for every implementation: `runs` handoffs, each followed by the child's report of
/// the tick at which it held the payload; the figure is that tick less the commit's.
fn handoff_parent<T: HandoffTx>(
    mut tx: T,
    imp: Handoff,
    name: &str,
    size: usize,
    runs: usize,
) -> Result<Vec<u64>, String> {
    let s = size.to_string();
    let r = runs.to_string();
    let mut peer = Peer::spawn(&["handoff", imp.tag(), name, &s, &r]);
    let ready = peer.line()?;
    if ready != "ready" {
        return Err(format!("unexpected first report {ready:?}"));
    }
    tx.ready();
    let mut out = Vec::with_capacity(runs);
    for i in 0..runs {
        let commit = tx.hand_off(size, i as u8);
        let line = peer.line()?;
        let held: u64 = line.parse().map_err(|_| format!("bad report {line:?}"))?;
        out.push(held.saturating_sub(commit));
    }
    drop(tx);
    peer.finish()?;
    Ok(out)
}

#[cfg(target_arch = "x86_64")]
fn handoff_read<R: HandoffRx>(mut rx: R, size: usize, runs: usize) -> i32 {
    println!("ready");
    for i in 0..runs {
        let mut report = Err("short payload".to_string());
        rx.take(size, |p| {
            let now = ticks();
            // Checked after the tick: the payload is the right one, whole.
            let fill = i as u8;
            report = if p.len() != size {
                Err(format!("payload of {} bytes, expected {size}", p.len()))
            } else if p.first() != Some(&fill) || p.last() != Some(&fill) {
                Err(format!("payload {i} does not hold its fill byte {fill}"))
            } else {
                Ok(now)
            };
        });
        match report {
            Ok(t) => println!("{t}"),
            Err(e) => {
                println!("error: {e}");
                return 1;
            }
        }
    }
    0
}

#[cfg(not(target_arch = "x86_64"))]
fn handoff_child(_: Handoff, _: &str, _: usize, _: usize) -> i32 {
    println!("error: the handoff scenario needs the x86-64 time-stamp counter");
    1
}

#[cfg(target_arch = "x86_64")]
fn handoff_child(imp: Handoff, name: &str, size: usize, runs: usize) -> i32 {
    let res: Result<i32, String> = (|| {
        Ok(match imp {
            Handoff::Weft => {
                let mut r =
                    StreamReader::open_timeout(name, OPEN_TIMEOUT).map_err(|e| e.to_string())?;
                r.set_wait_strategy(WaitStrategy::BusySpin);
                handoff_read(WeftHandoffRx(r), size, runs)
            }
            Handoff::Crossbar => {
                let sub = crossbar::Subscriber::connect(name).map_err(|e| e.to_string())?;
                let stream = sub.subscribe("/handoff").map_err(|e| e.to_string())?;
                handoff_read(CrossbarRx(stream), size, runs)
            }
            Handoff::Socket => {
                let s = UnixStream::connect(socket_path(name)).map_err(|e| e.to_string())?;
                handoff_read(
                    SocketHandoffRx {
                        input: s,
                        buf: vec![0u8; size],
                    },
                    size,
                    runs,
                )
            }
        })
    })();
    res.unwrap_or_else(|e| {
        println!("error: {e}");
        1
    })
}

/// The tick at which a commit starts, taken after the fill. A full fence first lets the fill's
/// stores drain, so that the figure is the commit and the reader's pickup and not the tail of
/// a 50 MiB fill still in flight (x86 publishes stores in order: the commit's store would
/// otherwise wait behind it, for every implementation alike).
///
/// The tick stays in the writer's registers and reaches the parent by return value: stamping
/// it into the payload (as this scenario once did) put a store to the payload's first line,
/// which a 50 MiB fill has long pushed out of the writer's caches, between the tick and every
/// implementation's commit, and charged that miss to the handoff.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn commit_tick() -> u64 {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    ticks()
}

#[cfg(not(target_arch = "x86_64"))]
fn commit_tick() -> u64 {
    0
}

struct WeftHandoffTx(StreamWriter);

impl HandoffTx for WeftHandoffTx {
    fn hand_off(&mut self, size: usize, fill: u8) -> u64 {
        let mut g = self.0.reserve(size).expect("weft reserve");
        g.fill(fill);
        let t = commit_tick();
        g.commit(size).expect("weft commit");
        t
    }
}

struct WeftHandoffRx(StreamReader);

impl HandoffRx for WeftHandoffRx {
    fn take(&mut self, _size: usize, f: impl FnOnce(&[u8])) {
        let g = self.0.read().expect("weft read");
        f(&g);
    }
}

struct CrossbarTx {
    p: crossbar::Publisher,
    topic: crossbar::Topic,
}

impl HandoffTx for CrossbarTx {
    fn hand_off(&mut self, size: usize, fill: u8) -> u64 {
        let mut loan = loop {
            match self.p.loan(&self.topic) {
                Ok(l) => break l,
                // The subscriber has just dropped its sample; the block comes back at once.
                Err(_) => std::hint::spin_loop(),
            }
        };
        let buf = &mut loan.as_mut_slice()[..size];
        buf.fill(fill);
        loan.set_len(size).expect("crossbar set_len");
        let t = commit_tick();
        loan.publish();
        t
    }
}

struct CrossbarRx(crossbar::Stream);

impl HandoffRx for CrossbarRx {
    fn take(&mut self, _size: usize, f: impl FnOnce(&[u8])) {
        loop {
            if let Some(s) = self.0.try_recv() {
                f(&s);
                return;
            }
            std::hint::spin_loop();
        }
    }
}

struct SocketHandoffTx {
    listener: Option<UnixListener>,
    out: Option<UnixStream>,
    buf: Vec<u8>,
    path: PathBuf,
}

impl HandoffTx for SocketHandoffTx {
    fn ready(&mut self) {
        let l = self.listener.take().expect("listener");
        self.out = Some(l.accept().expect("accept the child's connection").0);
        let _ = std::fs::remove_file(&self.path);
    }

    fn hand_off(&mut self, size: usize, fill: u8) -> u64 {
        self.buf[..size].fill(fill);
        let out = self.out.as_mut().expect("connected");
        let t = commit_tick();
        out.write_all(&self.buf[..size]).expect("socket write");
        t
    }
}

impl Drop for SocketHandoffTx {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

struct SocketHandoffRx {
    input: UnixStream,
    buf: Vec<u8>,
}

impl HandoffRx for SocketHandoffRx {
    fn take(&mut self, size: usize, f: impl FnOnce(&[u8])) {
        self.input
            .read_exact(&mut self.buf[..size])
            .expect("socket read");
        f(&self.buf[..size]);
    }
}

// ---------------------------------------------------------------------------------------------
// Ping-pong: 64 B there and back, over two streams (or one socket pair)
// ---------------------------------------------------------------------------------------------

/// The implementations of the ping-pong scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ping {
    WeftSpin,
    WeftPark,
    SocketSpin,
    SocketBlock,
    TcpSpin,
    TcpBlock,
}

impl Ping {
    const ALL: [Ping; 6] = [
        Ping::WeftSpin,
        Ping::WeftPark,
        Ping::SocketSpin,
        Ping::SocketBlock,
        Ping::TcpSpin,
        Ping::TcpBlock,
    ];

    fn tag(self) -> &'static str {
        match self {
            Ping::WeftSpin => "weft-spin",
            Ping::WeftPark => "weft-park",
            Ping::SocketSpin => "socket-spin",
            Ping::SocketBlock => "socket-block",
            Ping::TcpSpin => "tcp-spin",
            Ping::TcpBlock => "tcp-block",
        }
    }

    fn from_tag(tag: &str) -> Option<Ping> {
        Ping::ALL.into_iter().find(|i| i.tag() == tag)
    }

    fn label(self) -> &'static str {
        match self {
            Ping::WeftSpin => "weft 0.1 (BusySpin)",
            Ping::WeftPark => "weft 0.1 (Park)",
            Ping::SocketSpin => "Unix socket pair (non-blocking, spin)",
            Ping::SocketBlock => "Unix socket pair (blocking)",
            Ping::TcpSpin => "TCP loopback (NODELAY, non-blocking, spin)",
            Ping::TcpBlock => "TCP loopback (NODELAY, blocking)",
        }
    }

    fn busy(self) -> bool {
        matches!(self, Ping::WeftSpin | Ping::SocketSpin | Ping::TcpSpin)
    }

    fn wait(self) -> WaitStrategy {
        if self.busy() {
            WaitStrategy::BusySpin
        } else {
            WaitStrategy::Park
        }
    }
}

/// One end of a ping-pong: send 64 bytes, receive 64 bytes.
trait PingEnd {
    fn send(&mut self, msg: &[u8; PING]);
    /// Receives one message; false once the other end has closed.
    fn recv(&mut self, msg: &mut [u8; PING]) -> bool;
}

fn pingpong(report: &mut Report, busy: bool) {
    let mode = if busy { "busy-spin" } else { "parked" };
    let pings = if busy { PINGS_SPIN } else { PINGS_PARK };
    let runs = report.reps + 1;
    for imp in Ping::ALL.into_iter().filter(|i| i.busy() == busy) {
        let name = harness::unique_name(&format!("pp{}", imp.tag()));
        let res = on_core0(|| -> Result<Vec<[f64; 3]>, String> {
            match imp {
                Ping::WeftSpin | Ping::WeftPark => {
                    let opts = StreamOptions::new(64 << 10).wait(imp.wait());
                    let w = StreamWriter::create_with(&format!("{name}-ping"), &opts)
                        .map_err(|e| e.to_string())?;
                    let peer = Peer::spawn(&["ping", imp.tag(), &name]);
                    let mut r = StreamReader::open_timeout(&format!("{name}-pong"), OPEN_TIMEOUT)
                        .map_err(|e| e.to_string())?;
                    r.set_wait_strategy(imp.wait());
                    let out = ping_parent(WeftPing { w, r }, runs, pings);
                    // Dropping the ends (inside ping_parent) closes the streams: the child's
                    // echo loop ends.
                    peer.finish()?;
                    Ok(out)
                }
                Ping::SocketSpin | Ping::SocketBlock => {
                    let path = socket_path(&name);
                    let listener = UnixListener::bind(&path).map_err(|e| e.to_string())?;
                    let peer = Peer::spawn(&["ping", imp.tag(), &name]);
                    let (s, _) = listener.accept().map_err(|e| e.to_string())?;
                    let _ = std::fs::remove_file(&path);
                    s.set_nonblocking(busy).map_err(|e| e.to_string())?;
                    let out = ping_parent(SocketPing(s), runs, pings);
                    peer.finish()?;
                    Ok(out)
                }
                Ping::TcpSpin | Ping::TcpBlock => {
                    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
                    let addr = listener
                        .local_addr()
                        .map_err(|e| e.to_string())?
                        .to_string();
                    let peer = Peer::spawn(&["ping", imp.tag(), &addr]);
                    let (s, _) = listener.accept().map_err(|e| e.to_string())?;
                    s.set_nodelay(true).map_err(|e| e.to_string())?;
                    s.set_nonblocking(busy).map_err(|e| e.to_string())?;
                    let out = ping_parent(SocketPing(s), runs, pings);
                    peer.finish()?;
                    Ok(out)
                }
            }
        });
        match res {
            Ok(per_run) => {
                // The first run warmed up.
                for (k, q) in ["p50", "p99", "p99.9"].iter().enumerate() {
                    let samples = per_run[1..].iter().map(|p| p[k]).collect();
                    let scenario = format!("stream/pingpong-64B-{mode}-{q}");
                    report.add(&scenario, imp.label(), "ns RTT", Better::Lower, samples);
                }
            }
            Err(e) => fail(&format!("stream/pingpong-64B-{mode}"), imp.label(), e),
        }
    }
}

/// One body: `runs` runs of `pings` round trips; per run the p50, p99 and p99.9 in ns.
fn ping_parent<E: PingEnd>(mut end: E, runs: usize, pings: usize) -> Vec<[f64; 3]> {
    let mut msg = [0u8; PING];
    let mut back = [0u8; PING];
    let mut out = Vec::with_capacity(runs);
    let mut seq = 0u64;
    for _ in 0..runs {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
            .expect("histogram");
        let start = Instant::now();
        for i in 0..pings {
            // On a machine shared with other spinning work, a spinning round trip can wait for
            // a whole time slice: cap each run's wall time rather than hang.
            if i % 1024 == 0 && start.elapsed() > PING_RUN_BUDGET {
                eprintln!("   (run cut at {i} round trips after {PING_RUN_BUDGET:?})");
                break;
            }
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            let t = Instant::now();
            end.send(&msg);
            if !end.recv(&mut back) {
                panic!("the echo side closed early");
            }
            let ns = t.elapsed().as_nanos() as u64;
            assert_eq!(back[..8], msg[..8], "the pong answers the ping");
            h.saturating_record(ns.max(1));
            seq += 1;
        }
        out.push([
            h.value_at_quantile(0.50) as f64,
            h.value_at_quantile(0.99) as f64,
            h.value_at_quantile(0.999) as f64,
        ]);
    }
    out
}

fn ping_child(imp: Ping, name: &str) -> i32 {
    let res: Result<(), String> = (|| {
        match imp {
            Ping::WeftSpin | Ping::WeftPark => {
                let opts = StreamOptions::new(64 << 10).wait(imp.wait());
                let w = StreamWriter::create_with(&format!("{name}-pong"), &opts)
                    .map_err(|e| e.to_string())?;
                let mut r = StreamReader::open_timeout(&format!("{name}-ping"), OPEN_TIMEOUT)
                    .map_err(|e| e.to_string())?;
                r.set_wait_strategy(imp.wait());
                echo(WeftPing { w, r });
            }
            Ping::SocketSpin | Ping::SocketBlock => {
                let s = UnixStream::connect(socket_path(name)).map_err(|e| e.to_string())?;
                s.set_nonblocking(imp.busy()).map_err(|e| e.to_string())?;
                echo(SocketPing(s));
            }
            Ping::TcpSpin | Ping::TcpBlock => {
                let s = TcpStream::connect(name).map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                s.set_nonblocking(imp.busy()).map_err(|e| e.to_string())?;
                echo(SocketPing(s));
            }
        }
        Ok(())
    })();
    match res {
        Ok(()) => 0,
        Err(e) => {
            println!("error: {e}");
            1
        }
    }
}

/// Answers every ping until the parent closes its end.
fn echo<E: PingEnd>(mut end: E) {
    let mut msg = [0u8; PING];
    while end.recv(&mut msg) {
        end.send(&msg);
    }
}

struct WeftPing {
    w: StreamWriter,
    r: StreamReader,
}

impl PingEnd for WeftPing {
    #[inline]
    fn send(&mut self, msg: &[u8; PING]) {
        self.w.write(msg).expect("weft write");
    }

    #[inline]
    fn recv(&mut self, msg: &mut [u8; PING]) -> bool {
        match self.r.read() {
            Ok(g) => {
                msg.copy_from_slice(&g);
                true
            }
            Err(weft::Error::Closed) => false,
            Err(e) => panic!("weft read: {e}"),
        }
    }
}

/// A connected stream socket (Unix or TCP), blocking or non-blocking (then spun on).
struct SocketPing<S: Read + Write>(S);

impl<S: Read + Write> PingEnd for SocketPing<S> {
    #[inline]
    fn send(&mut self, msg: &[u8; PING]) {
        let mut done = 0;
        while done < PING {
            match self.0.write(&msg[done..]) {
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => panic!("socket write: {e}"),
            }
        }
    }

    #[inline]
    fn recv(&mut self, msg: &mut [u8; PING]) -> bool {
        let mut done = 0;
        while done < PING {
            match self.0.read(&mut msg[done..]) {
                Ok(0) => return false,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => panic!("socket read: {e}"),
            }
        }
        true
    }
}
