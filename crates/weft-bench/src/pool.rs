//! Object pools: weft against nexus-pool 1.1 and a plain `Box` allocate + free of the same
//! value, for a small value (32 bytes) and a 4 KiB one.
//!
//! - `pool/local-*`: one thread, acquire + touch + release (growable pools).
//! - `pool/sync-uncontended-*`: the cross-thread pools used from one thread.
//! - `pool/sync-one-returner-*`: the acquirer (core 0) hands each value through an SPSC ring
//!   to a returning thread (core 1) that drops it; time per value end to end.
//!
//! Every implementation runs the same body; only the acquire expression differs.

use crate::harness::{Better, Report, Scenario, pin};
use std::cell::UnsafeCell;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::ops::DerefMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const WEFT: &str = "weft 0.1.0";
const NEXUS: &str = "nexus-pool 1.1.0";
const BOX: &str = "Box alloc+free (std)";

/// What the scenarios pool.
trait Payload: Send + Sync + 'static {
    const NAME: &'static str;
    fn make() -> Self;
    /// Writes into the value, so that the compiler keeps the access.
    fn touch(&mut self, i: usize);
}

/// A small message.
struct Small([u64; 4]);

impl Payload for Small {
    const NAME: &'static str = "32B";
    fn make() -> Self {
        Small([0; 4])
    }
    #[inline(always)]
    fn touch(&mut self, i: usize) {
        self.0[0] = i as u64;
        black_box(&self.0);
    }
}

/// A page-sized buffer.
struct Page([u8; 4096]);

impl Payload for Page {
    const NAME: &'static str = "4KiB";
    fn make() -> Self {
        Page([0; 4096])
    }
    #[inline(always)]
    fn touch(&mut self, i: usize) {
        self.0[i & 4095] = i as u8;
        black_box(&self.0);
    }
}

/// The one body of the single-thread scenarios: acquire, touch, release; ns per round.
#[inline(never)]
fn rounds<T: Payload, G: DerefMut<Target = T>>(
    iters: usize,
    mut acquire: impl FnMut() -> G,
) -> f64 {
    let start = Instant::now();
    for i in 0..iters {
        let mut g = acquire();
        g.touch(i);
        black_box(&g);
        drop(g);
    }
    start.elapsed().as_nanos() as f64 / iters as f64
}

/// A single-producer single-consumer ring to hand guards to the returning thread (the same
/// for every implementation, so its cost is common to all rows).
struct Handoff<G> {
    slots: Box<[UnsafeCell<MaybeUninit<G>>]>,
    /// Written by the producer only.
    tail: Padded,
    /// Written by the consumer only.
    head: Padded,
}

#[repr(align(64))]
struct Padded(AtomicUsize);

// SAFETY: each slot is written by the producer before the Release store of `tail`, and read by
// the consumer after its Acquire load; slots are reused only after the consumer's Release of
// `head`. G moves between threads, hence `G: Send`.
unsafe impl<G: Send> Sync for Handoff<G> {}

impl<G> Handoff<G> {
    fn new(cap: usize) -> Self {
        Handoff {
            slots: (0..cap)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            tail: Padded(AtomicUsize::new(0)),
            head: Padded(AtomicUsize::new(0)),
        }
    }

    fn push(&self, g: G) {
        let t = self.tail.0.load(Ordering::Relaxed);
        // Acquire: pairs with the Release store of `head` in `pop` (the slot is free again).
        let mut spins = 0u32;
        while t - self.head.0.load(Ordering::Acquire) == self.slots.len() {
            backoff(&mut spins);
        }
        // SAFETY: the slot is free (checked above) and only the producer writes slots.
        unsafe { (*self.slots[t % self.slots.len()].get()).write(g) };
        // Release: publishes the slot; pairs with the Acquire load in `pop`.
        self.tail.0.store(t + 1, Ordering::Release);
    }

    fn pop(&self) -> G {
        let h = self.head.0.load(Ordering::Relaxed);
        // Acquire: pairs with the Release store of `tail` in `push`.
        let mut spins = 0u32;
        while self.tail.0.load(Ordering::Acquire) == h {
            backoff(&mut spins);
        }
        // SAFETY: published by `push`, read once.
        let g = unsafe { (*self.slots[h % self.slots.len()].get()).assume_init_read() };
        // Release: pairs with the Acquire load in `push`.
        self.head.0.store(h + 1, Ordering::Release);
        g
    }
}

/// Spins a little, then yields: on a loaded machine a pure spin can wait a whole time slice
/// for the other thread.
#[inline]
fn backoff(spins: &mut u32) {
    if *spins < 100 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The one body of the one-returner scenarios: ns per value from acquire to drop on the
/// other core.
#[inline(never)]
fn one_returner<T: Payload, G: DerefMut<Target = T> + Send + 'static>(
    items: usize,
    mut acquire: impl FnMut() -> Option<G>,
) -> f64 {
    let ring = Arc::new(Handoff::<G>::new(128));
    let r = ring.clone();
    let returner = std::thread::spawn(move || {
        pin(1);
        for _ in 0..items {
            let g = r.pop();
            black_box(&g);
            drop(g);
        }
    });
    pin(0);
    let start = Instant::now();
    for i in 0..items {
        let mut spins = 0u32;
        let mut g = loop {
            match acquire() {
                Some(g) => break g,
                None => backoff(&mut spins),
            }
        };
        g.touch(i);
        ring.push(g);
    }
    returner.join().expect("the returning thread");
    start.elapsed().as_nanos() as f64 / items as f64
}

const LOCAL_ITERS: usize = 2_000_000;
const SYNC_ITERS: usize = 1_000_000;
const CROSS_ITEMS: usize = 200_000;
/// Values in the cross-thread pools: more than the hand-off ring holds, so that the acquirer
/// rarely finds the pool empty.
const CROSS_CAP: usize = 256;

fn local<T: Payload>(report: &mut Report, name: &str) {
    pin(0);
    let weft = weft::pool::LocalPool::with_capacity(16, T::make, |_| {});
    report.measure(name, WEFT, "ns", Better::Lower, || {
        rounds(LOCAL_ITERS, || weft.acquire())
    });
    let nexus = nexus_pool::local::Pool::with_capacity(16, T::make, |_| {});
    report.measure(name, NEXUS, "ns", Better::Lower, || {
        rounds(LOCAL_ITERS, || nexus.acquire())
    });
    report.measure(name, BOX, "ns", Better::Lower, || {
        rounds(LOCAL_ITERS, || Box::new(T::make()))
    });
}

fn sync_uncontended<T: Payload>(report: &mut Report, name: &str) {
    pin(0);
    let weft = weft::pool::SyncPool::new(16, T::make, |_| {});
    report.measure(name, WEFT, "ns", Better::Lower, || {
        rounds(SYNC_ITERS, || weft.try_acquire().expect("a free value"))
    });
    let nexus = nexus_pool::sync::Pool::new(16, T::make, |_| {});
    report.measure(name, NEXUS, "ns", Better::Lower, || {
        rounds(SYNC_ITERS, || nexus.try_acquire().expect("a free value"))
    });
    report.measure(name, BOX, "ns", Better::Lower, || {
        rounds(SYNC_ITERS, || Box::new(T::make()))
    });
}

fn sync_one_returner<T: Payload>(report: &mut Report, name: &str) {
    let weft = weft::pool::SyncPool::new(CROSS_CAP, T::make, |_| {});
    report.measure(name, WEFT, "ns", Better::Lower, || {
        one_returner(CROSS_ITEMS, || weft.try_acquire())
    });
    let nexus = nexus_pool::sync::Pool::new(CROSS_CAP, T::make, |_| {});
    report.measure(name, NEXUS, "ns", Better::Lower, || {
        one_returner(CROSS_ITEMS, || nexus.try_acquire())
    });
    report.measure(name, BOX, "ns", Better::Lower, || {
        one_returner(CROSS_ITEMS, || Some(Box::new(T::make())))
    });
}

fn scenario(name: String, run: impl Fn(&mut Report, &str) + 'static) -> Scenario {
    let n = name.clone();
    Scenario {
        name,
        // The implementations take turns, repetition by repetition (`Report::interleaved`).
        run: Box::new(move |r| r.interleaved(|r| run(r, &n))),
    }
}

fn for_payload<T: Payload>() -> Vec<Scenario> {
    vec![
        scenario(
            format!("pool/local-acquire-release-{}", T::NAME),
            local::<T>,
        ),
        scenario(
            format!("pool/sync-uncontended-{}", T::NAME),
            sync_uncontended::<T>,
        ),
        scenario(
            format!("pool/sync-one-returner-{}", T::NAME),
            sync_one_returner::<T>,
        ),
    ]
}

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    let mut all = for_payload::<Small>();
    all.extend(for_payload::<Page>());
    all
}

/// Runs this area's child side of a cross-process scenario, if `args` names one (the pools
/// are in-process only: none).
pub fn child(_args: &[String]) -> Option<i32> {
    None
}
