//! Shared-memory pub/sub: weft's topics (Blocks, Latest, Inline) against crossbar 1.2 (pool,
//! pinned, PodBus) and iceoryx2 0.10 (publish-subscribe over `[u8]`).
//!
//! - `pubsub/same-process-SIZE/MODE`: one thread publishes a message (the full payload written
//!   each time) and receives it at once; the figure is nanoseconds of *thread CPU time* per
//!   publish + receive (`CLOCK_THREAD_CPUTIME_ID`, so that the time this thread spends
//!   preempted on a loaded machine is not counted). Each weft mode is compared with the peer
//!   closest to it: Blocks with crossbar's pool and iceoryx2, Latest with crossbar's pinned
//!   block, Inline with crossbar's PodBus (8 B only). Latest values that a latest-value inline
//!   topic takes (8 B and 1 KiB here) lead with it: at 1 KiB first its length and first 16
//!   bytes (`try_recv_prefix`, what the peers' readers read in place), then received whole
//!   into a buffer; above that the rows are the block-based Latest's.
//! - `pubsub/latency-SIZE/MODE`: one-way latency between two processes, publisher pinned to
//!   core 0, subscriber (busy-spinning) to core 1; a message every 5 µs carries its send time
//!   (CLOCK_REALTIME, one clock for both processes); p50 and p99 of the receive time minus it.
//! - `pubsub/throughput-SIZE/MODE`: the publisher process publishes back to back for 300 ms;
//!   the figure is the messages the subscriber process received per second (these are lossy
//!   topics: what is overwritten before it is read is not counted).
//!
//! Every implementation runs the same bodies through the [`Side`] trait; the few lines that
//! adapt each crate's API differ. Rounds are interleaved (one repetition of every
//! implementation per round), so that a change in the machine's load falls on all of them.

use crate::harness::{Better, Report, Scenario, pin, remove_shm_named, spawn_child, unique_name};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};

const SIZES: [(usize, &str); 4] = [
    (8, "8B"),
    (1024, "1KiB"),
    (64 << 10, "64KiB"),
    (1 << 20, "1MiB"),
];

/// Messages per measured repetition of a same-process row, by payload size.
fn same_process_count(size: usize) -> u64 {
    if size <= 1024 {
        200_000
    } else if size <= 65536 {
        20_000
    } else {
        1_000
    }
}

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    for (size, label) in SIZES {
        for mode in ["blocks", "latest", "inline"] {
            if mode == "inline" && size > 8 {
                continue;
            }
            let name = format!("pubsub/same-process-{label}/{mode}");
            let n = name.clone();
            all.push(Scenario {
                name,
                run: Box::new(move |r| same_process(r, &n, mode, size)),
            });
        }
    }
    for (size, label) in &SIZES[..2] {
        let size = *size;
        for mode in ["blocks", "inline"] {
            if mode == "inline" && size > 8 {
                continue;
            }
            let name = format!("pubsub/latency-{label}/{mode}");
            let n = name.clone();
            all.push(Scenario {
                name,
                run: Box::new(move |r| cross_process(r, &n, mode, size, Kind::Latency)),
            });
            let name = format!("pubsub/throughput-{label}/{mode}");
            let n = name.clone();
            all.push(Scenario {
                name,
                run: Box::new(move |r| cross_process(r, &n, mode, size, Kind::Throughput)),
            });
        }
    }
    all
}

/// Nanoseconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`, exact to the
/// nanosecond, unlike /proc's tick-based accounting): on a machine shared with other work,
/// time spent preempted is not counted.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One implementation of one side (or both) of a topic: publish the whole of `data`, and
/// receive the next message (its length and first 16 bytes).
trait Side {
    fn send(&mut self, data: &[u8]);
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize>;
}

/// The implementations of a mode, as (key, label).
fn impls(mode: &str, size: usize) -> Vec<(&'static str, &'static str)> {
    match mode {
        // crossbar has one publisher per region: weft's single-publisher topic is the like for
        // like (and the headline); the multi-publisher row follows.
        "blocks" => vec![
            ("weft-blocks-single", "weft 0.1 Blocks (single publisher)"),
            ("weft-blocks", "weft 0.1 Blocks (multi-publisher)"),
            ("crossbar-pool", "crossbar 1.2 pool"),
            ("iceoryx2", "iceoryx2 0.10"),
            ("iceoryx2-history", ICE_HISTORY_LABEL),
        ],
        // Values that fit an inline latest-value topic (up to `latest_inline_max` of the
        // region, a few KiB): weft's latest-value inline topics lead (the first weft row is
        // the scenario's headline), the block-based Latest follows. Above that, Latest is the
        // mode weft's docs point to.
        // Above 8 bytes the headline reads what crossbar's pinned reader reads, the message's
        // length and first 16 bytes (`try_recv_prefix`); the next rows copy the whole message
        // out (`try_recv_into`).
        "latest" if size <= INLINE_LATEST_BENCH_MAX => {
            let head = (
                "weft-latest-inline-head-single",
                "weft 0.1 latest inline, head read (single publisher)",
            );
            let rest = [
                (
                    "weft-latest-inline-single",
                    "weft 0.1 latest inline (single publisher)",
                ),
                (
                    "weft-latest-inline-multi",
                    "weft 0.1 latest inline (multi-publisher)",
                ),
                ("weft-latest-single", "weft 0.1 Latest (single publisher)"),
                ("weft-latest", "weft 0.1 Latest (multi-publisher)"),
                ("crossbar-pinned", "crossbar 1.2 pinned"),
            ];
            (size > 8).then_some(head).into_iter().chain(rest).collect()
        }
        "latest" => vec![
            ("weft-latest-single", "weft 0.1 Latest (single publisher)"),
            ("weft-latest", "weft 0.1 Latest (multi-publisher)"),
            ("crossbar-pinned", "crossbar 1.2 pinned"),
        ],
        _ if size <= 8 => vec![
            ("weft-inline-single", "weft 0.1 Inline (single publisher)"),
            ("weft-inline-multi", "weft 0.1 Inline (multi-publisher)"),
            ("crossbar-podbus", "crossbar 1.2 PodBus"),
        ],
        _ => vec![],
    }
}

// ---- same process ------------------------------------------------------------------------

fn same_process(report: &mut Report, scenario: &str, mode: &str, size: usize) {
    if mode != "inline" {
        // Blocks and Latest at 8 B to 1 MiB: one chart each, time by payload size.
        let family = format!("pubsub/same-process/{mode}");
        report.axis(scenario, &family, "payload (bytes)", size as f64);
    }
    let list = impls(mode, size);
    let data: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let n = same_process_count(size);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); list.len()];
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(0);
            for round in 0..=report.reps {
                for (k, (key, _)) in list.iter().enumerate() {
                    let name = unique_name(&format!("ps{k}"));
                    let mut side = make_local(key, &name, size);
                    // Warm up the rings and the pool, then measure.
                    run_local(side.as_mut(), &data, n / 10);
                    let t = cpu_ns();
                    run_local(side.as_mut(), &data, n);
                    let ns = (cpu_ns() - t) as f64 / n as f64;
                    drop(side);
                    remove_shm_named(&name);
                    if round > 0 {
                        samples[k].push(ns);
                    }
                }
            }
        })
        .join()
        .expect("the measuring thread");
    });
    for (k, (_, label)) in list.iter().enumerate() {
        report.add(scenario, label, "ns CPU", Better::Lower, samples[k].clone());
    }
}

fn run_local(side: &mut dyn Side, data: &[u8], n: u64) {
    let mut head = [0u8; 16];
    for i in 0..n {
        side.send(data);
        let len = side.recv(&mut head).expect("the message just published");
        assert_eq!(len, data.len(), "message {i}");
        std::hint::black_box(&head);
    }
}

fn make_local(key: &str, name: &str, size: usize) -> Box<dyn Side> {
    match key {
        "weft-blocks" | "weft-latest" | "weft-blocks-single" | "weft-latest-single" => {
            let (p, topic) = weft_publisher(name, size, blocks_spec(key));
            let s = Subscriber::connect(name).expect("weft connect");
            let sub = s.subscribe("/bench").expect("weft subscribe");
            Box::new(WeftLocal {
                pub_: WeftPub { p, topic },
                sub: WeftSub { sub, _s: s },
            })
        }
        "weft-inline-single"
        | "weft-inline-multi"
        | "weft-latest-inline-single"
        | "weft-latest-inline-head-single"
        | "weft-latest-inline-multi" => {
            let spec = TopicSpec::inline(8).typed::<u64>();
            let spec = if key.ends_with("-single") {
                spec.single_publisher()
            } else {
                spec
            };
            let spec = if key.starts_with("weft-latest") {
                spec.latest()
            } else {
                spec
            };
            let config = if key.starts_with("weft-latest") {
                // The newest value is all a latest reader wants: a short ring stays in L1.
                weft_config(size, &spec).ring_slots(RING)
            } else {
                weft_config(size, &spec)
            };
            if size > 8 {
                // Messages larger than a u64: untyped, copied in and out as bytes.
                let spec = TopicSpec::inline(size).latest();
                let spec = if key.ends_with("-single") {
                    spec.single_publisher()
                } else {
                    spec
                };
                let config = weft_config(size, &spec).ring_slots(latest_inline_ring(size));
                let p = Publisher::create(name, &config).expect("weft create");
                let topic = p.register_spec("/bench", &spec).expect("weft register");
                let s = Subscriber::connect(name).expect("weft connect");
                let sub = s.subscribe("/bench").expect("weft subscribe");
                return Box::new(WeftInlineBytes {
                    p,
                    topic,
                    sub,
                    _s: s,
                    buf: vec![0; size],
                    head_only: key.contains("-head-"),
                });
            }
            let p = Publisher::create(name, &config).expect("weft create");
            let topic = p.register_spec("/bench", &spec).expect("weft register");
            let s = Subscriber::connect(name).expect("weft connect");
            let sub = s.subscribe("/bench").expect("weft subscribe");
            Box::new(WeftInlineLocal::new(p, topic, sub, s))
        }
        "crossbar-pool" | "crossbar-pinned" => {
            let (p, topic) = crossbar_publisher(name, size);
            let s = crossbar::Subscriber::connect(name).expect("crossbar connect");
            let stream = s.subscribe("/bench").expect("crossbar subscribe");
            Box::new(CrossbarLocal {
                p,
                topic,
                stream,
                _s: s,
                pinned: key == "crossbar-pinned",
            })
        }
        "crossbar-podbus" => {
            let mut bus =
                crossbar::PodBus::<u64>::create(name, INLINE_RING).expect("crossbar podbus");
            let sub = bus.subscriber().expect("crossbar podbus subscriber");
            let _ = &mut bus;
            Box::new(PodBusLocal { bus, sub })
        }
        "iceoryx2" | "iceoryx2-history" => {
            let node = ice::NodeBuilder::new()
                .create::<IceService>()
                .expect("iceoryx2 node");
            let history = if key == "iceoryx2-history" { RING } else { 0 };
            let service = ice_service_with(&node, name, history);
            let p = service
                .publisher_builder()
                .initial_max_slice_len(size)
                .create()
                .expect("iceoryx2 publisher");
            let sub = service
                .subscriber_builder()
                .create()
                .expect("iceoryx2 subscriber");
            Box::new(IceLocal {
                p,
                sub,
                _service: service,
                _node: node,
            })
        }
        other => panic!("no implementation is called {other}"),
    }
}

// ---- weft ----------------------------------------------------------------------------------

/// Descriptor slots of a blocks topic's ring: crossbar's ring depth (8), so that both keep the
/// same number of published blocks in flight.
const RING: usize = 8;
/// Slots of an inline topic's ring and of a PodBus.
const INLINE_RING: usize = 4096;
/// The largest latest-value message the bench sends inline (the rows above it are Latest's).
const INLINE_LATEST_BENCH_MAX: usize = 4096;

/// The region's `ring_slots` for a latest-value inline topic of `size`-byte messages: 8 slots
/// (a short ring stays in L1, as the block-based Latest's), so that its inline area of
/// `64 * ring_slots` bytes holds 8 slots of the message's stride.
fn latest_inline_ring(size: usize) -> usize {
    let stride = (8 + size.next_multiple_of(8)).next_power_of_two().max(16);
    (8 * stride / 64).max(RING)
}

fn weft_config(size: usize, spec: &TopicSpec) -> Config {
    let slots = if spec.mode() == TopicMode::Inline {
        INLINE_RING
    } else {
        RING
    };
    Config::default()
        .block_size(size.max(64).next_multiple_of(64))
        .blocks(if size > 65536 { 32 } else { 256 })
        .ring_slots(slots)
        .wait(weft::WaitStrategy::BusySpin)
}

/// The spec of a blocks or latest row: `weft-{blocks,latest}[-single]`.
fn blocks_spec(key: &str) -> TopicSpec {
    let mode = if key.starts_with("weft-latest") {
        TopicMode::Latest
    } else {
        TopicMode::Blocks
    };
    let spec = TopicSpec::new(mode);
    if key.ends_with("-single") {
        spec.single_publisher()
    } else {
        spec
    }
}

fn weft_publisher(name: &str, size: usize, spec: TopicSpec) -> (Publisher, weft::pubsub::Topic) {
    let p = Publisher::create(name, &weft_config(size, &spec)).expect("weft create");
    let topic = p.register_spec("/bench", &spec).expect("weft register");
    (p, topic)
}

struct WeftPub {
    p: Publisher,
    topic: weft::pubsub::Topic,
}

impl WeftPub {
    fn send(&mut self, data: &[u8]) {
        loop {
            match self.p.loan(&self.topic) {
                Ok(mut loan) => {
                    loan.set_len(data.len()).expect("weft set_len");
                    loan.copy_from_slice(data);
                    loan.publish().expect("weft publish");
                    return;
                }
                // Subscribers still hold every block: they release them as they read.
                Err(weft::Error::Full) => std::hint::spin_loop(),
                Err(e) => panic!("weft loan: {e}"),
            }
        }
    }
}

struct WeftSub {
    sub: weft::pubsub::Subscription,
    _s: Subscriber,
}

impl WeftSub {
    /// A borrowed receive (`try_recv_ref`): the sample is dropped before the next one, as
    /// crossbar's borrowed `Sample` is.
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        loop {
            match self.sub.try_recv_ref() {
                Ok(m) => {
                    let n = m.len().min(16);
                    head[..n].copy_from_slice(&m[..n]);
                    return Some(m.len());
                }
                Err(weft::Error::Lagged { .. }) => continue,
                Err(weft::Error::Empty) => return None,
                Err(e) => panic!("weft recv: {e}"),
            }
        }
    }
}

struct WeftLocal {
    pub_: WeftPub,
    sub: WeftSub,
}

impl Side for WeftLocal {
    fn send(&mut self, data: &[u8]) {
        self.pub_.send(data)
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        self.sub.recv(head)
    }
}

/// A latest-value inline topic of messages larger than a `u64`: published from the bytes,
/// received into a buffer with `try_recv_into` (the whole message copied out, no allocation),
/// or, `head_only`, its first 16 bytes with `try_recv_prefix` (what the peers' in-place
/// readers read).
struct WeftInlineBytes {
    p: Publisher,
    topic: weft::pubsub::Topic,
    sub: weft::pubsub::Subscription,
    _s: Subscriber,
    buf: Vec<u8>,
    head_only: bool,
}

impl Side for WeftInlineBytes {
    fn send(&mut self, data: &[u8]) {
        self.p.publish(&self.topic, data).expect("weft publish");
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        if self.head_only {
            return match self.sub.try_recv_prefix(head) {
                Ok(n) => Some(n),
                Err(weft::Error::Empty) => None,
                Err(e) => panic!("weft recv: {e}"),
            };
        }
        match self.sub.try_recv_into(&mut self.buf) {
            Ok(n) => {
                head.copy_from_slice(&self.buf[..16]);
                Some(n)
            }
            Err(weft::Error::Empty) => None,
            Err(e) => panic!("weft recv: {e}"),
        }
    }
}

/// Inline topic of `u64`: an `InlineWriter` (checked once) and `try_recv_value`.
struct WeftInlineLocal {
    // The writer borrows the publisher, which lives in the box next to it (never moved
    // while the writer exists: dropped first, see `Drop`).
    writer: Option<weft::pubsub::InlineWriter<'static, u64>>,
    sub: weft::pubsub::Subscription,
    _s: Subscriber,
    _topic: Box<weft::pubsub::Topic>,
    p: Box<Publisher>,
}

impl WeftInlineLocal {
    fn new(
        p: Publisher,
        topic: weft::pubsub::Topic,
        sub: weft::pubsub::Subscription,
        s: Subscriber,
    ) -> WeftInlineLocal {
        let p = Box::new(p);
        let topic = Box::new(topic);
        let pp: *const Publisher = &*p;
        let tp: *const weft::pubsub::Topic = &*topic;
        // SAFETY: both boxes are owned by the returned value and never moved out; the writer
        // is dropped before them (`Drop` below), so the 'static borrow never outlives them.
        let writer = unsafe { (*pp).inline_writer::<u64>(&*tp) }.expect("weft writer");
        WeftInlineLocal {
            writer: Some(writer),
            sub,
            _s: s,
            _topic: topic,
            p,
        }
    }
}

impl Drop for WeftInlineLocal {
    fn drop(&mut self) {
        self.writer = None;
        let _ = &self.p;
    }
}

impl Side for WeftInlineLocal {
    fn send(&mut self, data: &[u8]) {
        let v = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        self.writer
            .as_mut()
            .expect("writer")
            .publish(&v)
            .expect("weft publish");
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        // As PodBus's `try_recv`: a lag (counted by the subscription) or nothing new is `None`
        // for this call; the next call reads on.
        match self.sub.try_recv_value::<u64>() {
            Ok(v) => {
                head[..8].copy_from_slice(&v.to_le_bytes());
                Some(8)
            }
            Err(weft::Error::Lagged { .. } | weft::Error::Empty) => None,
            Err(e) => panic!("weft recv: {e}"),
        }
    }
}

// ---- crossbar ------------------------------------------------------------------------------

fn crossbar_config(size: usize) -> crossbar::Config {
    let block = (size + 4096).next_power_of_two().max(65536) as u32;
    crossbar::Config {
        block_size: block,
        block_count: if size > 65536 { 32 } else { 256 },
        ring_depth: RING as u32,
        ..crossbar::Config::default()
    }
}

fn crossbar_publisher(name: &str, size: usize) -> (crossbar::Publisher, crossbar::Topic) {
    let mut p = crossbar::Publisher::create(name, crossbar_config(size)).expect("crossbar create");
    let topic = p.register("/bench").expect("crossbar register");
    (p, topic)
}

struct CrossbarLocal {
    p: crossbar::Publisher,
    topic: crossbar::Topic,
    // Declared before the subscriber, so that it is dropped first.
    stream: crossbar::Stream,
    _s: crossbar::Subscriber,
    pinned: bool,
}

impl Side for CrossbarLocal {
    fn send(&mut self, data: &[u8]) {
        if self.pinned {
            let mut l = self
                .p
                .loan_pinned(&self.topic)
                .expect("crossbar loan_pinned");
            l.set_data(data).expect("crossbar set_data");
            l.publish();
        } else {
            let mut l = self.p.loan(&self.topic).expect("crossbar loan");
            l.set_data(data).expect("crossbar set_data");
            l.publish();
        }
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        if self.pinned {
            let g = self.stream.try_recv_pinned()?;
            let n = g.len().min(16);
            head[..n].copy_from_slice(&g[..n]);
            Some(g.len())
        } else {
            let s = self.stream.try_recv()?;
            let n = s.len().min(16);
            head[..n].copy_from_slice(&s[..n]);
            Some(s.len())
        }
    }
}

struct PodBusLocal {
    bus: crossbar::PodBus<u64>,
    sub: crossbar::BusSubscriber<u64>,
}

impl Side for PodBusLocal {
    fn send(&mut self, data: &[u8]) {
        self.bus
            .publish(u64::from_le_bytes(data[..8].try_into().expect("8 bytes")));
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        let v = self.sub.try_recv()?;
        head[..8].copy_from_slice(&v.to_le_bytes());
        Some(8)
    }
}

// ---- iceoryx2 ------------------------------------------------------------------------------

mod ice {
    pub use iceoryx2::prelude::*;
}

type IceService = ice::ipc::Service;
type IcePortFactory =
    iceoryx2::service::port_factory::publish_subscribe::PortFactory<IceService, [u8], ()>;

fn ice_service(node: &ice::Node<IceService>, name: &str) -> IcePortFactory {
    ice_service_with(node, name, 0)
}

/// The label of the iceoryx2 row whose service keeps `RING` samples of history, the published
/// blocks a weft or crossbar topic keeps in its ring for a subscriber that lags or joins late.
const ICE_HISTORY_LABEL: &str = "iceoryx2 0.10 (history 8, as the rings above)";

/// An iceoryx2 service keeping `history` samples for late joiners (0: none, its default).
fn ice_service_with(node: &ice::Node<IceService>, name: &str, history: usize) -> IcePortFactory {
    let sname: ice::ServiceName = name.try_into().expect("service name");
    node.service_builder(&sname)
        .publish_subscribe::<[u8]>()
        .subscriber_max_buffer_size(256)
        .history_size(history)
        .open_or_create()
        .expect("iceoryx2 service")
}

struct IceLocal {
    p: iceoryx2::port::publisher::Publisher<IceService, [u8], ()>,
    sub: iceoryx2::port::subscriber::Subscriber<IceService, [u8], ()>,
    _service: IcePortFactory,
    _node: ice::Node<IceService>,
}

fn ice_send(p: &iceoryx2::port::publisher::Publisher<IceService, [u8], ()>, data: &[u8]) {
    let s = p
        .loan_slice_uninit(data.len())
        .expect("iceoryx2 loan")
        .write_from_slice(data);
    s.send().expect("iceoryx2 send");
}

fn ice_recv(
    sub: &iceoryx2::port::subscriber::Subscriber<IceService, [u8], ()>,
    head: &mut [u8; 16],
) -> Option<usize> {
    let s = sub.receive().expect("iceoryx2 receive")?;
    let p = s.payload();
    let n = p.len().min(16);
    head[..n].copy_from_slice(&p[..n]);
    Some(p.len())
}

impl Side for IceLocal {
    fn send(&mut self, data: &[u8]) {
        ice_send(&self.p, data)
    }
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        ice_recv(&self.sub, head)
    }
}

// ---- across processes ----------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Latency,
    Throughput,
}

/// Latency messages per repetition, and the pause between them.
const LAT_COUNT: usize = 20_000;
const LAT_GAP: Duration = Duration::from_micros(5);
/// How long the publisher publishes in a throughput repetition.
const TPUT_RUN: Duration = Duration::from_millis(300);
/// First byte of the stop message (repeated, since a lossy topic may overwrite one).
const STOP: u8 = 0xFF;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn cross_process(report: &mut Report, scenario: &str, mode: &str, size: usize, kind: Kind) {
    if mode == "blocks" {
        // One chart per measure, by payload size (the rows are named as `report.add` below).
        let x = ("payload (bytes)", size as f64);
        match kind {
            Kind::Latency => {
                for p in ["p50", "p99"] {
                    let family = format!("pubsub/latency-{p}/blocks");
                    report.axis(&format!("{scenario}-{p}"), &family, x.0, x.1);
                }
            }
            Kind::Throughput => report.axis(scenario, "pubsub/throughput/blocks", x.0, x.1),
        }
    }
    // Across processes the iceoryx2 row is its default service (no history) only.
    let list: Vec<_> = impls(mode, size)
        .into_iter()
        .filter(|(key, _)| *key != "iceoryx2-history")
        .collect();
    let mut a: Vec<Vec<f64>> = vec![Vec::new(); list.len()];
    let mut b: Vec<Vec<f64>> = vec![Vec::new(); list.len()];
    for _ in 0..report.reps {
        for (k, (key, _)) in list.iter().enumerate() {
            let (x, y) = one_cross_round(key, size, kind);
            a[k].push(x);
            b[k].push(y);
        }
    }
    for (k, (_, label)) in list.iter().enumerate() {
        match kind {
            Kind::Latency => {
                report.add(
                    &format!("{scenario}-p50"),
                    label,
                    "ns",
                    Better::Lower,
                    a[k].clone(),
                );
                report.add(
                    &format!("{scenario}-p99"),
                    label,
                    "ns",
                    Better::Lower,
                    b[k].clone(),
                );
            }
            Kind::Throughput => {
                report.add(scenario, label, "Mmsg/s", Better::Higher, a[k].clone());
            }
        }
    }
}

/// One repetition: the child subscribes and reports; this thread publishes. Returns (p50,
/// p99) in ns for latency, (Mmsg/s, 0) for throughput.
fn one_cross_round(key: &str, size: usize, kind: Kind) -> (f64, f64) {
    let name = unique_name(&format!("px{}", key.len()));
    let role = if kind == Kind::Latency { "lat" } else { "tput" };
    let (made_tx, made_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let mut line = String::new();
    std::thread::scope(|s| {
        // The publisher lives on its own pinned thread (the peers' handles are not `Send`);
        // the child is spawned from this unpinned thread once the topic exists, so that it
        // may pin itself to core 1.
        let name = &name;
        let publisher = s.spawn(move || {
            pin(0);
            let mut side = make_remote_pub(key, name, size);
            made_tx.send(()).expect("signal the topic");
            go_rx.recv().expect("the go signal");
            let mut data = vec![0u8; size];
            match kind {
                Kind::Latency => {
                    for _ in 0..LAT_COUNT {
                        let t = Instant::now();
                        while t.elapsed() < LAT_GAP {
                            std::hint::spin_loop();
                        }
                        data[..8].copy_from_slice(&now_ns().to_le_bytes());
                        side.send(&data);
                    }
                }
                Kind::Throughput => {
                    let t = Instant::now();
                    let mut i = 0u64;
                    while t.elapsed() < TPUT_RUN {
                        for _ in 0..64 {
                            data[..8].copy_from_slice(&i.to_le_bytes());
                            side.send(&data);
                            i += 1;
                        }
                    }
                }
            }
            // Stop: repeated, spaced, so that a lossy topic still delivers one.
            data[..8].copy_from_slice(&[STOP; 8]);
            for _ in 0..50 {
                side.send(&data);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        made_rx.recv().expect("the topic");
        let mut child = spawn_child(&["pubsub-sub", key, name, &size.to_string(), role]);
        let mut out = BufReader::new(child.stdout.take().expect("piped"));
        out.read_line(&mut line).expect("the child's ready line");
        assert_eq!(line.trim(), "ready", "child {key} said {line:?}");
        go_tx.send(()).expect("go");
        line.clear();
        out.read_line(&mut line).expect("the child's figures");
        let _ = child.wait();
        publisher.join().expect("the publishing thread");
    });
    remove_shm_named(&name);
    let mut it = line
        .split_whitespace()
        .map(|v| v.parse::<f64>().unwrap_or(f64::NAN));
    (it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN))
}

/// The publishing side of a cross-process repetition (it creates the topic first).
fn make_remote_pub(key: &str, name: &str, size: usize) -> Box<dyn Side> {
    match key {
        "weft-blocks" | "weft-blocks-single" => {
            let (p, topic) = weft_publisher(name, size, blocks_spec(key));
            Box::new(RemotePub(WeftPub { p, topic }))
        }
        "weft-inline-single" | "weft-inline-multi" => {
            let spec = TopicSpec::inline(8).typed::<u64>();
            let spec = if key == "weft-inline-single" {
                spec.single_publisher()
            } else {
                spec
            };
            let (p, topic) = weft_publisher(name, size, spec);
            Box::new(WeftInlinePub { p, topic })
        }
        "crossbar-pool" => {
            let (p, topic) = crossbar_publisher(name, size);
            Box::new(CrossbarPub { p, topic })
        }
        "crossbar-podbus" => Box::new(PodBusPub(
            crossbar::PodBus::<u64>::create(name, INLINE_RING).expect("crossbar podbus"),
        )),
        _ => {
            let node = ice::NodeBuilder::new()
                .create::<IceService>()
                .expect("iceoryx2 node");
            let service = ice_service(&node, name);
            let p = service
                .publisher_builder()
                .initial_max_slice_len(size)
                .create()
                .expect("iceoryx2 publisher");
            Box::new(IcePub {
                p,
                _service: service,
                _node: node,
            })
        }
    }
}

struct RemotePub(WeftPub);

impl Side for RemotePub {
    fn send(&mut self, data: &[u8]) {
        self.0.send(data)
    }
    fn recv(&mut self, _: &mut [u8; 16]) -> Option<usize> {
        None
    }
}

struct WeftInlinePub {
    p: Publisher,
    topic: weft::pubsub::Topic,
}

impl Side for WeftInlinePub {
    fn send(&mut self, data: &[u8]) {
        let v = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        self.p.publish_typed(&self.topic, &v).expect("weft publish");
    }
    fn recv(&mut self, _: &mut [u8; 16]) -> Option<usize> {
        None
    }
}

struct CrossbarPub {
    p: crossbar::Publisher,
    topic: crossbar::Topic,
}

impl Side for CrossbarPub {
    fn send(&mut self, data: &[u8]) {
        let mut l = self.p.loan(&self.topic).expect("crossbar loan");
        l.set_data(data).expect("crossbar set_data");
        l.publish();
    }
    fn recv(&mut self, _: &mut [u8; 16]) -> Option<usize> {
        None
    }
}

struct PodBusPub(crossbar::PodBus<u64>);

impl Side for PodBusPub {
    fn send(&mut self, data: &[u8]) {
        self.0
            .publish(u64::from_le_bytes(data[..8].try_into().expect("8 bytes")));
    }
    fn recv(&mut self, _: &mut [u8; 16]) -> Option<usize> {
        None
    }
}

struct IcePub {
    p: iceoryx2::port::publisher::Publisher<IceService, [u8], ()>,
    _service: IcePortFactory,
    _node: ice::Node<IceService>,
}

impl Side for IcePub {
    fn send(&mut self, data: &[u8]) {
        ice_send(&self.p, data)
    }
    fn recv(&mut self, _: &mut [u8; 16]) -> Option<usize> {
        None
    }
}

/// Runs this area's child side of a cross-process scenario, if `args` names one:
/// `pubsub-sub KEY NAME SIZE lat|tput`.
pub fn child(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some("pubsub-sub") {
        return None;
    }
    let key = args.get(1)?.clone();
    let name = args.get(2)?.clone();
    let size: usize = args.get(3)?.parse().ok()?;
    let latency = args.get(4)? == "lat";
    pin(1);
    let mut sub = make_remote_sub(&key, &name);
    say("ready");
    let mut head = [0u8; 16];
    let mut lat = Vec::with_capacity(LAT_COUNT);
    let (mut got, mut first, mut last) = (0u64, None::<Instant>, Instant::now());
    let quiet = Instant::now();
    let mut empty = 0u32;
    loop {
        let Some(len) = sub.recv(&mut head) else {
            // Nothing for 5 s: the publisher is gone (or never came). The clock is read once
            // every 4096 empty polls: read on every one, it delayed the receive of a message
            // that arrived during the read by up to a clock read (the same for every
            // implementation, but part of every latency).
            empty = empty.wrapping_add(1);
            if empty.is_multiple_of(4096)
                && (quiet.elapsed() > Duration::from_secs(5) && got == 0
                    || last.elapsed() > Duration::from_secs(5) && got > 0)
            {
                break;
            }
            std::hint::spin_loop();
            continue;
        };
        // The receive time first: the monotonic clock read below is not part of the latency.
        let at = if latency { now_ns() } else { 0 };
        let now = Instant::now();
        if head[..8] == [STOP; 8] {
            break;
        }
        debug_assert_eq!(len, size);
        if latency {
            let sent = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
            lat.push(at.saturating_sub(sent));
        } else {
            first.get_or_insert(now);
        }
        // Counted in both kinds, so that a latency run's quiet bound starts from its last
        // message, not from its start.
        got += 1;
        last = now;
    }
    if latency {
        lat.sort_unstable();
        let q = |f: f64| {
            lat.get((lat.len() as f64 * f) as usize)
                .copied()
                .unwrap_or(0)
        };
        say(&format!("{} {}", q(0.50), q(0.99)));
    } else {
        let secs = first.map_or(1.0, |f| last.duration_since(f).as_secs_f64().max(1e-9));
        say(&format!("{} 0", got as f64 / secs / 1e6));
    }
    Some(0)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The subscribing side of a cross-process repetition (the publisher created the topic).
fn make_remote_sub(key: &str, name: &str) -> Box<dyn Side> {
    match key {
        "weft-blocks" | "weft-blocks-single" => {
            let cfg = Config::default().wait(weft::WaitStrategy::BusySpin);
            let s = Subscriber::connect_with(name, &cfg).expect("weft connect");
            let sub = s.subscribe("/bench").expect("weft subscribe");
            Box::new(RemoteSub(WeftSub { sub, _s: s }))
        }
        "weft-inline-single" | "weft-inline-multi" => {
            let s = Subscriber::connect(name).expect("weft connect");
            let sub = s.subscribe_typed::<u64>("/bench").expect("weft subscribe");
            Box::new(WeftInlineSub { sub, _s: s })
        }
        "crossbar-pool" => {
            let s = crossbar::Subscriber::connect(name).expect("crossbar connect");
            let stream = s.subscribe("/bench").expect("crossbar subscribe");
            Box::new(CrossbarSub { stream, _s: s })
        }
        "crossbar-podbus" => {
            let sub = crossbar::BusSubscriber::<u64>::connect(name).expect("crossbar podbus");
            Box::new(PodBusSub(sub))
        }
        _ => {
            let node = ice::NodeBuilder::new()
                .create::<IceService>()
                .expect("iceoryx2 node");
            let service = ice_service(&node, name);
            let sub = service
                .subscriber_builder()
                .create()
                .expect("iceoryx2 subscriber");
            Box::new(IceSub {
                sub,
                _service: service,
                _node: node,
            })
        }
    }
}

struct RemoteSub(WeftSub);

impl Side for RemoteSub {
    fn send(&mut self, _: &[u8]) {}
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        self.0.recv(head)
    }
}

struct WeftInlineSub {
    sub: weft::pubsub::Subscription,
    _s: Subscriber,
}

impl Side for WeftInlineSub {
    fn send(&mut self, _: &[u8]) {}
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        loop {
            match self.sub.try_recv_value::<u64>() {
                Ok(v) => {
                    head[..8].copy_from_slice(&v.to_le_bytes());
                    return Some(8);
                }
                Err(weft::Error::Lagged { .. }) => continue,
                Err(weft::Error::Empty) => return None,
                Err(e) => panic!("weft recv: {e}"),
            }
        }
    }
}

struct CrossbarSub {
    stream: crossbar::Stream,
    _s: crossbar::Subscriber,
}

impl Side for CrossbarSub {
    fn send(&mut self, _: &[u8]) {}
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        let s = self.stream.try_recv()?;
        let n = s.len().min(16);
        head[..n].copy_from_slice(&s[..n]);
        Some(s.len())
    }
}

struct PodBusSub(crossbar::BusSubscriber<u64>);

impl Side for PodBusSub {
    fn send(&mut self, _: &[u8]) {}
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        let v = self.0.try_recv()?;
        head[..8].copy_from_slice(&v.to_le_bytes());
        Some(8)
    }
}

struct IceSub {
    sub: iceoryx2::port::subscriber::Subscriber<IceService, [u8], ()>,
    _service: IcePortFactory,
    _node: ice::Node<IceService>,
}

impl Side for IceSub {
    fn send(&mut self, _: &[u8]) {}
    fn recv(&mut self, head: &mut [u8; 16]) -> Option<usize> {
        ice_recv(&self.sub, head)
    }
}
