//! Criterion micro-benchmarks of the pools: acquire + touch + release, one thread, for a
//! 32-byte and a 4 KiB value, with a plain `Box` allocate + free of the same value beside
//! them; and a cross-thread return through `SyncPool` (timed with `iter_custom`).
//!
//! ```text
//! cargo bench -p weft --bench pool
//! ```
//! The head-to-head against nexus-pool is in weft-bench (`--filter pool`).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use weft::pool::{BoundedLocalPool, LocalPool, SyncPool};

/// Acquire, touch, release: the same body for every pool (and for `Box`).
macro_rules! round {
    ($acquire:expr) => {{
        let mut g = $acquire;
        g[0] = black_box(1u8);
        drop(black_box(g));
    }};
}

fn single_thread<const N: usize>(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("pool/one-thread-{N}B"));
    let local = LocalPool::with_capacity(16, || [0u8; N], |_| {});
    g.bench_function(BenchmarkId::new("LocalPool", N), |b| {
        b.iter(|| round!(local.acquire()))
    });
    let bounded = BoundedLocalPool::new(16, || [0u8; N], |_| {});
    g.bench_function(BenchmarkId::new("BoundedLocalPool", N), |b| {
        b.iter(|| round!(bounded.try_acquire().unwrap()))
    });
    let sync = SyncPool::new(16, || [0u8; N], |_| {});
    g.bench_function(BenchmarkId::new("SyncPool", N), |b| {
        b.iter(|| round!(sync.try_acquire().unwrap()))
    });
    g.bench_function(BenchmarkId::new("Box", N), |b| {
        b.iter(|| round!(Box::new([0u8; N])))
    });
    g.finish();
}

/// The acquirer hands each guard to a returning thread over a channel; time per value.
fn cross_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool/sync-one-returner");
    g.bench_function("SyncPool-4096B", |b| {
        b.iter_custom(|iters| {
            let pool = SyncPool::new(256, || [0u8; 4096], |_| {});
            let (tx, rx) = std::sync::mpsc::sync_channel(128);
            let returner = std::thread::spawn(move || {
                for g in rx {
                    drop(black_box(g));
                }
            });
            let start = Instant::now();
            for _ in 0..iters {
                let mut v = loop {
                    if let Some(v) = pool.try_acquire() {
                        break v;
                    }
                    std::thread::yield_now();
                };
                v[0] = 1;
                tx.send(v).unwrap();
            }
            drop(tx);
            returner.join().unwrap();
            start.elapsed()
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    single_thread::<32>(c);
    single_thread::<4096>(c);
    cross_thread(c);
}

criterion_group! {
    name = pool;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(pool);
