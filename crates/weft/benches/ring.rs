//! Micro-benchmarks of the broadcast ring (weft alone; the head-to-head against the peers is
//! `cargo run --release -p weft-bench -- --filter ring`).
//!
//! `cargo bench -p weft --bench ring`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use weft::ring;

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring");
    g.throughput(Throughput::Elements(1));

    let (mut tx, ring) = ring::channel::<u64>(4096);
    let mut rx = ring.subscribe();
    g.bench_function("publish u64 (no subscriber reading)", |b| {
        let mut i = 0u64;
        b.iter(|| {
            tx.publish(black_box(i));
            i += 1;
        })
    });
    g.bench_function("publish + try_recv u64, same thread", |b| {
        let mut i = 0u64;
        b.iter(|| {
            tx.publish(black_box(i));
            i += 1;
            black_box(rx.try_recv().ok())
        })
    });

    let (mut tx24, ring24) = ring::channel::<[u64; 3]>(4096);
    let mut rx24 = ring24.subscribe();
    g.bench_function("publish + try_recv 24 B, same thread", |b| {
        let mut i = 0u64;
        b.iter(|| {
            tx24.publish(black_box([i, i, i]));
            i += 1;
            black_box(rx24.try_recv().ok())
        })
    });

    let (mut btx, bring) = ring::bounded::<u64>(4096, 0);
    let mut brx = bring.subscribe();
    g.bench_function("bounded publish + try_recv u64, same thread", |b| {
        let mut i = 0u64;
        b.iter(|| {
            btx.publish(black_box(i));
            i += 1;
            black_box(brx.try_recv().ok())
        })
    });

    let batch: Vec<u64> = (0..64).collect();
    let mut buf = [0u64; 64];
    g.throughput(Throughput::Elements(64));
    g.bench_function("publish_batch 64 + recv_batch, same thread", |b| {
        b.iter(|| {
            tx.publish_batch(black_box(&batch));
            black_box(rx.recv_batch(&mut buf).ok())
        })
    });

    let (mtx, mring) = ring::mpmc::<u64>(4096);
    let mut mrx = mring.subscribe();
    g.throughput(Throughput::Elements(1));
    g.bench_function("mpmc publish + try_recv u64, same thread", |b| {
        let mut i = 0u64;
        b.iter(|| {
            mtx.publish(black_box(i));
            i += 1;
            black_box(mrx.try_recv().ok())
        })
    });
    g.finish();
}

fn cross_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring cross-thread");
    g.bench_function("ping-pong round trip u64", |b| {
        b.iter_custom(|iters| {
            let (mut ping, ping_ring) = ring::channel::<u64>(1024);
            let (mut pong, pong_ring) = ring::channel::<u64>(1024);
            let ping_rx = ping_ring.subscribe();
            let mut pong_rx = pong_ring
                .subscribe()
                .with_wait_strategy(weft::WaitStrategy::BusySpin);
            let echo = std::thread::spawn(move || {
                let mut ping_rx = {
                    let _ = weft::affinity::pin_current_thread(1);
                    ping_rx.with_wait_strategy(weft::WaitStrategy::BusySpin)
                };
                while let Ok(v) = ping_rx.recv() {
                    pong.publish(v);
                }
            });
            let _ = weft::affinity::pin_current_thread(0);
            let t0 = Instant::now();
            for i in 0..iters {
                ping.publish(i);
                black_box(pong_rx.recv().ok());
            }
            let elapsed = t0.elapsed();
            drop(ping);
            echo.join().unwrap();
            elapsed
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("spsc throughput u64 (bounded)", |b| {
        b.iter_custom(|iters| {
            let (mut tx, ring) = ring::bounded::<u64>(4096, 0);
            let mut rx = ring
                .subscribe()
                .with_wait_strategy(weft::WaitStrategy::BusySpin);
            let consumer = std::thread::spawn(move || {
                let _ = weft::affinity::pin_current_thread(1);
                let mut buf = [0u64; 256];
                let mut n = 0;
                while n < iters {
                    match rx.recv_batch(&mut buf) {
                        Ok(k) => n += k as u64,
                        Err(_) => std::hint::spin_loop(),
                    }
                }
                Instant::now()
            });
            let _ = weft::affinity::pin_current_thread(0);
            let t0 = Instant::now();
            for i in 0..iters {
                tx.publish(i);
            }
            let end = consumer.join().unwrap();
            end.duration_since(t0)
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = single_thread, cross_thread
}
criterion_main!(benches);
