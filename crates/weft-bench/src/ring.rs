//! Broadcast ring, in one process: weft's ring against photon-ring, disruptor, crossbeam-channel
//! and bus. Every implementation runs the same scenario bodies through the [`Peer`] trait; only
//! the few lines that adapt each crate's API differ.
//!
//! Flavours: the latency rows use each crate's plain channel (weft and photon-ring lossy, with
//! rings large enough that nothing is overwritten); the sustained-throughput and fan-out rows
//! use lossless flavours everywhere (weft `bounded`, photon-ring `channel_bounded`), so that
//! "messages per second" counts delivered messages. MPMC: weft `mpmc_bounded` (lossless);
//! photon-ring has only a lossy MPMC ring, so the row counts delivered messages only, and the
//! number lost is printed.

use crate::harness::{Better, Report, Scenario};

/// Pins the calling thread to `core`. Not `harness::pin`: that one checks the core against
/// the calling thread's own affinity, which is a single core once the thread was pinned, so a
/// thread spawned from a pinned thread could never be pinned elsewhere (both sides of a
/// ping-pong then shared one core).
fn pin(core: usize) {
    let _ = weft::affinity::pin_current_thread(core);
}
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What every message type offers the scenario bodies.
trait Msg:
    Copy + Send + Sync + 'static + bytemuck::Pod + photon_ring::Pod + PartialEq + std::fmt::Debug
{
    fn make(i: u64) -> Self;
    fn key(&self) -> u64;
}

impl Msg for u64 {
    #[inline(always)]
    fn make(i: u64) -> Self {
        i
    }
    #[inline(always)]
    fn key(&self) -> u64 {
        *self
    }
}

/// A 24-byte market-data-like message.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick24 {
    seq: u64,
    price: u64,
    qty: u64,
}

// SAFETY: plain old data: three u64, no padding, no pointers.
unsafe impl photon_ring::Pod for Tick24 {}

impl Msg for Tick24 {
    #[inline(always)]
    fn make(i: u64) -> Self {
        Tick24 {
            seq: i,
            price: i ^ 0x5555,
            qty: i.rotate_left(7),
        }
    }
    #[inline(always)]
    fn key(&self) -> u64 {
        self.seq
    }
}

/// One implementation under test.
trait Peer<T: Msg> {
    const NAME: &'static str;
    type Tx: Send;
    type Rx: Send;
    /// One publisher and `subs` subscribers over `cap` slots; `lossless` asks for the flavour
    /// with backpressure.
    fn open(cap: usize, subs: usize, lossless: bool) -> (Self::Tx, Vec<Self::Rx>);
    fn send(tx: &mut Self::Tx, v: T);
    fn try_recv(rx: &mut Self::Rx) -> Option<T>;
    /// Publishes a batch with the crate's batch API, if it has one.
    fn send_batch(tx: &mut Self::Tx, vs: &[T]) {
        for v in vs {
            Self::send(tx, *v);
        }
    }
    /// Hands everything available now to `f` with the crate's batch API, if it has one;
    /// returns how many messages were received and how many were reported lost.
    fn drain(rx: &mut Self::Rx, f: &mut impl FnMut(T)) -> (u64, u64) {
        let mut n = 0;
        while let Some(v) = Self::try_recv(rx) {
            f(v);
            n += 1;
        }
        (n, 0)
    }
}

/// An implementation with a multi-producer flavour.
trait MpPeer<T: Msg>: Peer<T> {
    type MTx: Send + Clone;
    fn open_mp(cap: usize) -> (Self::MTx, Self::Rx);
    /// Each producer thread owns its clone of the handle.
    fn send_mp(tx: &mut Self::MTx, v: T);
}

// ---------------------------------------------------------------------------------------------
// Adapters.

/// A receiver and the buffer its crate's batch receive copies into, kept across drains as a
/// user keeps it: a buffer made in each drain is zeroed each time (512 bytes for 64 `u64`),
/// a cost of the adapter, not of the crate. For weft and photon-ring, whose batch receives
/// copy into a slice; disruptor's poller lends its slots.
struct Batched<R, T> {
    rx: R,
    buf: [T; 64],
}

impl<R, T: Msg> Batched<R, T> {
    fn new(rx: R) -> Self {
        Batched {
            rx,
            buf: [T::zeroed(); 64],
        }
    }
}

struct Weft;

impl<T: Msg> Peer<T> for Weft {
    const NAME: &'static str = "weft";
    type Tx = weft::ring::Publisher<T>;
    type Rx = Batched<weft::ring::Subscriber<T>, T>;
    fn open(cap: usize, subs: usize, lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        let (tx, ring) = if lossless {
            weft::ring::bounded::<T>(cap as u64, 0)
        } else {
            weft::ring::channel::<T>(cap as u64)
        };
        // A full ring spins, as disruptor's BusySpin and photon-ring do (weft's default,
        // Adaptive, parks after a while and pays a wake-up per burst).
        let tx = tx.with_wait_strategy(weft::WaitStrategy::BusySpin);
        let rx = (0..subs).map(|_| Batched::new(ring.subscribe())).collect();
        (tx, rx)
    }
    #[inline(always)]
    fn send(tx: &mut Self::Tx, v: T) {
        tx.publish(v);
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        rx.rx.try_recv().ok()
    }
    #[inline(always)]
    fn send_batch(tx: &mut Self::Tx, vs: &[T]) {
        tx.publish_batch(vs);
    }
    #[inline(always)]
    fn drain(rx: &mut Self::Rx, f: &mut impl FnMut(T)) -> (u64, u64) {
        let (mut n, mut lost) = (0, 0);
        loop {
            match rx.rx.recv_batch(&mut rx.buf) {
                Ok(k) => {
                    rx.buf[..k].iter().for_each(|v| f(*v));
                    n += k as u64;
                }
                Err(weft::ring::RecvError::Lagged { skipped }) => lost += skipped,
                Err(_) => return (n, lost),
            }
        }
    }
}

impl<T: Msg> MpPeer<T> for Weft {
    type MTx = weft::ring::MpPublisher<T>;
    fn open_mp(cap: usize) -> (Self::MTx, Self::Rx) {
        // Lossless, as crossbeam-channel's bounded queue and disruptor: the producers wait
        // for the (gated) subscriber instead of overwriting what it has not read.
        let (tx, ring) = weft::ring::mpmc_bounded::<T>(cap as u64, 0);
        (tx, Batched::new(ring.subscribe()))
    }
    #[inline(always)]
    fn send_mp(tx: &mut Self::MTx, v: T) {
        tx.publish(v);
    }
}

struct Photon;

impl<T: Msg> Peer<T> for Photon {
    const NAME: &'static str = "photon-ring 3.0.0";
    type Tx = photon_ring::Publisher<T>;
    type Rx = Batched<photon_ring::Subscriber<T>, T>;
    fn open(cap: usize, subs: usize, lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        let (tx, ring) = if lossless {
            photon_ring::channel_bounded::<T>(cap, 0)
        } else {
            photon_ring::channel::<T>(cap)
        };
        let rx = (0..subs).map(|_| Batched::new(ring.subscribe())).collect();
        (tx, rx)
    }
    #[inline(always)]
    fn send(tx: &mut Self::Tx, v: T) {
        tx.publish(v);
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        rx.rx.try_recv().ok()
    }
    #[inline(always)]
    fn send_batch(tx: &mut Self::Tx, vs: &[T]) {
        tx.publish_batch(vs);
    }
    #[inline(always)]
    fn drain(rx: &mut Self::Rx, f: &mut impl FnMut(T)) -> (u64, u64) {
        let (mut n, mut lost) = (0, 0);
        loop {
            let k = rx.rx.recv_batch(&mut rx.buf);
            if k == 0 {
                match rx.rx.try_recv() {
                    Ok(v) => {
                        f(v);
                        n += 1;
                        continue;
                    }
                    Err(photon_ring::TryRecvError::Lagged { skipped }) => {
                        lost += skipped;
                        continue;
                    }
                    Err(_) => return (n, lost),
                }
            }
            rx.buf[..k].iter().for_each(|v| f(*v));
            n += k as u64;
        }
    }
}

impl<T: Msg> MpPeer<T> for Photon {
    type MTx = photon_ring::MpPublisher<T>;
    fn open_mp(cap: usize) -> (Self::MTx, Self::Rx) {
        let (tx, ring) = photon_ring::channel_mpmc::<T>(cap);
        (tx, Batched::new(ring.subscribe()))
    }
    #[inline(always)]
    fn send_mp(tx: &mut Self::MTx, v: T) {
        tx.publish(v);
    }
}

struct Disruptor;

/// disruptor's producer type depends on how many consumers gate it.
enum DTx<T: Msg> {
    One(disruptor::SingleProducer<T, disruptor::SingleConsumerBarrier>),
    Many(disruptor::SingleProducer<T, disruptor::MultiConsumerBarrier>),
}

type DRx<T, B> = disruptor::EventPoller<T, B>;

/// disruptor's barrier trait is private, so its batch drain is spelled once as a macro.
macro_rules! disruptor_drain {
    ($rx:expr, $f:expr) => {{
        let mut n = 0;
        if let Ok(mut guard) = $rx.poll() {
            for e in &mut guard {
                $f(*e);
                n += 1;
            }
        }
        (n, 0)
    }};
}

impl<T: Msg> Peer<T> for Disruptor {
    const NAME: &'static str = "disruptor 4.4";
    type Tx = DTx<T>;
    type Rx = DRx<T, disruptor::SingleProducerBarrier>;
    fn open(cap: usize, subs: usize, _lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        let b = disruptor::build_single_producer(cap, T::zeroed, disruptor::BusySpin);
        if subs == 1 {
            let (p, b) = b.new_event_poller();
            (DTx::One(b.build()), vec![p])
        } else {
            let mut b = b.with_multi_consumer();
            let mut rx = Vec::new();
            for _ in 0..subs {
                let (p, nb) = b.new_event_poller();
                rx.push(p);
                b = nb;
            }
            (DTx::Many(b.build()), rx)
        }
    }
    #[inline(always)]
    fn send(tx: &mut Self::Tx, v: T) {
        use disruptor::Producer;
        match tx {
            DTx::One(p) => p.publish(|e| *e = v),
            DTx::Many(p) => p.publish(|e| *e = v),
        }
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        match rx.take(1) {
            Ok(mut g) => (&mut g).next().copied(),
            Err(_) => None,
        }
    }
    #[inline(always)]
    fn send_batch(tx: &mut Self::Tx, vs: &[T]) {
        use disruptor::Producer;
        match tx {
            DTx::One(p) => p.batch_publish(vs.len(), |it| {
                for (e, v) in it.zip(vs) {
                    *e = *v;
                }
            }),
            DTx::Many(p) => p.batch_publish(vs.len(), |it| {
                for (e, v) in it.zip(vs) {
                    *e = *v;
                }
            }),
        }
    }
    #[inline(always)]
    fn drain(rx: &mut Self::Rx, f: &mut impl FnMut(T)) -> (u64, u64) {
        disruptor_drain!(rx, f)
    }
}

struct DisruptorMp;

impl<T: Msg> Peer<T> for DisruptorMp {
    const NAME: &'static str = "disruptor 4.4";
    type Tx = DTx<T>;
    type Rx = DRx<T, disruptor::MultiProducerBarrier>;
    fn open(_cap: usize, _subs: usize, _lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        unreachable!("only the multi-producer scenario uses this adapter")
    }
    fn send(_tx: &mut Self::Tx, _v: T) {
        unreachable!()
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        match rx.take(1) {
            Ok(mut g) => (&mut g).next().copied(),
            Err(_) => None,
        }
    }
    #[inline(always)]
    fn drain(rx: &mut Self::Rx, f: &mut impl FnMut(T)) -> (u64, u64) {
        disruptor_drain!(rx, f)
    }
}

impl<T: Msg> MpPeer<T> for DisruptorMp {
    type MTx = DMtx<T>;
    fn open_mp(cap: usize) -> (Self::MTx, Self::Rx) {
        let (p, b) =
            disruptor::build_multi_producer(cap, T::zeroed, disruptor::BusySpin).new_event_poller();
        (DMtx(b.build()), p)
    }
    #[inline(always)]
    fn send_mp(tx: &mut Self::MTx, v: T) {
        use disruptor::Producer;
        tx.0.publish(|e| *e = v);
    }
}

/// A multi-producer disruptor handle; cloned once per producer thread.
struct DMtx<T: Msg>(disruptor::MultiProducer<T, disruptor::SingleConsumerBarrier>);

impl<T: Msg> Clone for DMtx<T> {
    fn clone(&self) -> Self {
        DMtx(self.0.clone())
    }
}

struct Crossbeam;

impl<T: Msg> Peer<T> for Crossbeam {
    const NAME: &'static str = "crossbeam-channel 0.5";
    /// Not a broadcast channel: fan-out is one channel per subscriber.
    type Tx = Vec<crossbeam_channel::Sender<T>>;
    type Rx = crossbeam_channel::Receiver<T>;
    fn open(cap: usize, subs: usize, _lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        (0..subs).map(|_| crossbeam_channel::bounded(cap)).unzip()
    }
    #[inline(always)]
    fn send(tx: &mut Self::Tx, v: T) {
        for t in tx.iter() {
            t.send(v).expect("receiver alive");
        }
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        rx.try_recv().ok()
    }
}

impl<T: Msg> MpPeer<T> for Crossbeam {
    type MTx = crossbeam_channel::Sender<T>;
    fn open_mp(cap: usize) -> (Self::MTx, Self::Rx) {
        crossbeam_channel::bounded(cap)
    }
    #[inline(always)]
    fn send_mp(tx: &mut Self::MTx, v: T) {
        tx.send(v).expect("receiver alive");
    }
}

struct Bus;

impl<T: Msg> Peer<T> for Bus {
    const NAME: &'static str = "bus 2.4";
    type Tx = bus::Bus<T>;
    type Rx = bus::BusReader<T>;
    fn open(cap: usize, subs: usize, _lossless: bool) -> (Self::Tx, Vec<Self::Rx>) {
        let mut b = bus::Bus::new(cap);
        let rx = (0..subs).map(|_| b.add_rx()).collect();
        (b, rx)
    }
    #[inline(always)]
    fn send(tx: &mut Self::Tx, v: T) {
        tx.broadcast(v);
    }
    #[inline(always)]
    fn try_recv(rx: &mut Self::Rx) -> Option<T> {
        rx.try_recv().ok()
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario bodies: one per scenario, shared by every implementation.

/// Messages per repetition in the single-thread rows.
const LOCAL: u64 = 1 << 20;
/// Round trips per repetition.
const TRIPS: u64 = 10_000;
/// Messages in the sustained-throughput row.
const SUSTAINED: u64 = 10_000_000;
/// Messages in the fan-out and MPMC rows.
const SHARED_ROWS: u64 = 2_000_000;
/// Ring size everywhere (slots).
const CAP: usize = 4096;

/// Polls `f` until it yields, spinning; after many empty polls it also yields the CPU, so
/// that a scenario finishes even when other processes share the two cores (the same for
/// every implementation).
#[inline(always)]
fn poll_until<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let mut empty = 0u32;
    loop {
        if let Some(v) = f() {
            return v;
        }
        empty += 1;
        if empty > 20_000 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Publish only: blocks of CAP/2 publishes are timed; the subscriber drains each block
/// untimed so bounded peers never fill.
fn publish_only<T: Msg, P: Peer<T>>(r: &mut Report, scenario: &str) {
    let (mut tx, mut rx) = P::open(CAP, 1, false);
    let block = (CAP / 2) as u64;
    r.measure(scenario, P::NAME, "ns/msg", Better::Lower, || {
        let mut timed = 0u128;
        let mut i = 0;
        while i < LOCAL {
            let t0 = Instant::now();
            for k in i..i + block {
                P::send(&mut tx, T::make(k));
            }
            timed += t0.elapsed().as_nanos();
            let mut got = 0;
            while got < block {
                got += P::drain(&mut rx[0], &mut |v| {
                    black_box(v);
                })
                .0;
            }
            i += block;
        }
        timed as f64 / LOCAL as f64
    });
}

/// Same thread: publish one, receive it, repeat.
fn same_thread<T: Msg, P: Peer<T>>(r: &mut Report, scenario: &str) {
    let (mut tx, mut rx) = P::open(CAP, 1, false);
    r.measure(scenario, P::NAME, "ns/msg", Better::Lower, || {
        let t0 = Instant::now();
        for i in 0..LOCAL {
            P::send(&mut tx, T::make(i));
            let v = P::try_recv(&mut rx[0]).expect("just published");
            black_box(v);
        }
        t0.elapsed().as_nanos() as f64 / LOCAL as f64
    });
}

/// Cross-thread ping-pong, threads pinned to cores 0 and 1: the round-trip time.
fn ping_pong<T: Msg, P: Peer<T>>(r: &mut Report, scenario: &str) {
    r.measure(scenario, P::NAME, "ns/rtt", Better::Lower, || {
        let (mut ping, mut ping_rx) = P::open(CAP, 1, false);
        let (mut pong, mut pong_rx) = P::open(CAP, 1, false);
        let mut ping_rx = ping_rx.pop().expect("one subscriber");
        let mut pong_rx = pong_rx.pop().expect("one subscriber");
        std::thread::scope(|s| {
            s.spawn(move || {
                pin(1);
                for _ in 0..TRIPS {
                    let v = poll_until(|| P::try_recv(&mut ping_rx));
                    P::send(&mut pong, v);
                }
            });
            pin(0);
            let t0 = Instant::now();
            for i in 0..TRIPS {
                P::send(&mut ping, T::make(i));
                let v = poll_until(|| P::try_recv(&mut pong_rx));
                assert_eq!(v.key(), i);
            }
            t0.elapsed().as_nanos() as f64 / TRIPS as f64
        })
    });
}

/// One producer on core 0, `subs` subscribers served by one consumer thread on core 1, over a
/// lossless flavour: delivered messages per second (each delivered to every subscriber).
fn broadcast_throughput<T: Msg, P: Peer<T>>(r: &mut Report, scenario: &str, n: u64, subs: usize) {
    r.measure(scenario, P::NAME, "Mmsg/s", Better::Higher, || {
        let (mut tx, mut rxs) = P::open(CAP, subs, true);
        std::thread::scope(|s| {
            let consumer = s.spawn(move || {
                pin(1);
                let mut next = vec![0u64; rxs.len()];
                // Every value is read and checked, in release builds too. A check the
                // compiler may drop (a `debug_assert`) let it drop the load as well where a
                // peer's receive lends its slot (disruptor's poller): that consumer then read
                // only the cursor, never a message, and its row measured no transfer of data.
                let mut out_of_order = 0u64;
                let mut done = 0;
                let mut idle = 0u32;
                while done < rxs.len() {
                    done = 0;
                    let before: u64 = next.iter().sum();
                    for (rx, next) in rxs.iter_mut().zip(next.iter_mut()) {
                        if *next < n {
                            P::drain(rx, &mut |v: T| {
                                out_of_order += u64::from(v.key() != *next);
                                *next += 1;
                            });
                        }
                        if *next >= n {
                            done += 1;
                        }
                    }
                    if next.iter().sum::<u64>() == before {
                        idle += 1;
                        if idle > 20_000 {
                            std::thread::yield_now();
                        }
                    } else {
                        idle = 0;
                    }
                }
                assert!(
                    next.iter().all(|&k| k == n),
                    "lossless flavour lost messages"
                );
                assert_eq!(out_of_order, 0, "messages out of order");
                Instant::now()
            });
            pin(0);
            let t0 = Instant::now();
            for i in 0..n {
                P::send(&mut tx, T::make(i));
            }
            let end = consumer.join().expect("consumer");
            drop(tx);
            n as f64 / end.duration_since(t0).as_secs_f64() / 1e6
        })
    });
}

/// Two producers pinned to cores 0 and 1, one consumer (unpinned, yielding when empty):
/// messages delivered per second (a lossy ring's overwritten messages do not count; the run
/// ends when every message was delivered or reported lost).
fn mpmc_two_producers<T: Msg, P: MpPeer<T>>(r: &mut Report, scenario: &str) {
    let n = SHARED_ROWS;
    r.measure(scenario, P::NAME, "Mmsg/s", Better::Higher, || {
        let (tx, mut rx) = P::open_mp(CAP);
        let start = AtomicBool::new(false);
        let finished = std::sync::atomic::AtomicUsize::new(0);
        let (elapsed, lost) = std::thread::scope(|s| {
            for core in 0..2 {
                let mut tx = tx.clone();
                let (start, finished) = (&start, &finished);
                s.spawn(move || {
                    pin(core);
                    // Acquire: pairs with the Release store of `start` below.
                    while !start.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    for i in 0..n / 2 {
                        P::send_mp(&mut tx, T::make(i));
                    }
                    // Release: pairs with the Acquire load of `finished` below (every send
                    // happened before).
                    finished.fetch_add(1, Ordering::Release);
                });
            }
            drop(tx);
            let t0 = Instant::now();
            // Release: pairs with the producers' Acquire loads (the clock starts first).
            start.store(true, Ordering::Release);
            let (mut got, mut lost) = (0u64, 0u64);
            let mut idle_after_end = 0u32;
            // Until every message is delivered or reported lost; a ring whose loss count is
            // not exact ends once the producers are done and nothing more arrives.
            while got + lost < n {
                let (g, l) = P::drain(&mut rx, &mut |v| {
                    black_box(v);
                });
                got += g;
                lost += l;
                if g == 0 && l == 0 {
                    // Acquire: pairs with the producers' Release increments.
                    if finished.load(Ordering::Acquire) == 2 {
                        idle_after_end += 1;
                        if idle_after_end > 10_000 {
                            break;
                        }
                    }
                    std::thread::yield_now();
                }
            }
            (t0.elapsed(), n - got)
        });
        if lost > 0 {
            eprintln!("   ({} lost {lost} of {n})", P::NAME);
        }
        // Delivered messages per second: what a lossy ring overwrote does not count.
        (n - lost) as f64 / elapsed.as_secs_f64() / 1e6
    });
}

/// Same thread: publish a batch of 64 with the batch API, then drain it.
fn batch_64<T: Msg, P: Peer<T>>(r: &mut Report, scenario: &str) {
    let (mut tx, mut rx) = P::open(CAP, 1, false);
    let batch: Vec<T> = (0..64).map(T::make).collect();
    r.measure(scenario, P::NAME, "ns/msg", Better::Lower, || {
        let t0 = Instant::now();
        let mut i = 0;
        while i < LOCAL {
            P::send_batch(&mut tx, &batch);
            let mut got = 0;
            while got < 64 {
                got += P::drain(&mut rx[0], &mut |v| {
                    black_box(v);
                })
                .0;
            }
            i += 64;
        }
        t0.elapsed().as_nanos() as f64 / LOCAL as f64
    });
}

macro_rules! every_peer {
    ($body:ident, $t:ty, $($arg:expr),*) => {
        Box::new(|r: &mut Report| {
            r.interleaved(|r| {
                $body::<$t, Weft>(r, $($arg),*);
                $body::<$t, Photon>(r, $($arg),*);
                $body::<$t, Disruptor>(r, $($arg),*);
                $body::<$t, Crossbeam>(r, $($arg),*);
                $body::<$t, Bus>(r, $($arg),*);
            })
        })
    };
}

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    let s = |name: &str, run: Box<dyn Fn(&mut Report)>| Scenario {
        name: name.into(),
        run,
    };
    vec![
        s(
            "ring/publish-only-u64",
            every_peer!(publish_only, u64, "ring/publish-only-u64"),
        ),
        s(
            "ring/same-thread-roundtrip-u64",
            every_peer!(same_thread, u64, "ring/same-thread-roundtrip-u64"),
        ),
        s(
            "ring/ping-pong-u64",
            every_peer!(ping_pong, u64, "ring/ping-pong-u64"),
        ),
        s(
            "ring/spsc-throughput-u64-10M",
            every_peer!(
                broadcast_throughput,
                u64,
                "ring/spsc-throughput-u64-10M",
                SUSTAINED,
                1
            ),
        ),
        s(
            "ring/fan-out-4-subscribers-u64",
            every_peer!(
                broadcast_throughput,
                u64,
                "ring/fan-out-4-subscribers-u64",
                SHARED_ROWS,
                4
            ),
        ),
        s(
            "ring/mpmc-2-producers-u64",
            Box::new(|r: &mut Report| {
                let name = "ring/mpmc-2-producers-u64";
                r.interleaved(|r| {
                    mpmc_two_producers::<u64, Weft>(r, name);
                    mpmc_two_producers::<u64, Photon>(r, name);
                    mpmc_two_producers::<u64, DisruptorMp>(r, name);
                    mpmc_two_producers::<u64, Crossbeam>(r, name);
                });
            }),
        ),
        s(
            "ring/ping-pong-24B",
            every_peer!(ping_pong, Tick24, "ring/ping-pong-24B"),
        ),
        s(
            "ring/spsc-throughput-24B-10M",
            every_peer!(
                broadcast_throughput,
                Tick24,
                "ring/spsc-throughput-24B-10M",
                SUSTAINED,
                1
            ),
        ),
        s(
            "ring/batch-64-u64",
            every_peer!(batch_64, u64, "ring/batch-64-u64"),
        ),
    ]
}

/// Runs this area's child side of a cross-process scenario, if `args` names one (none: the
/// ring is in-process).
pub fn child(_args: &[String]) -> Option<i32> {
    None
}
