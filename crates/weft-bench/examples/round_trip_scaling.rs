//! How the broadcast ring's cross-core throughput follows the host's round trip between the
//! two cores, with disruptor's beside it in the same rounds.
//!
//! Each round probes the round trip of one cache line between cores 0 and 1 (the bench's own
//! probe, as printed under every table of the report), then runs 10 million `u64` from a publisher on core 0 to a reader on
//! core 1:
//!
//! - `weft bounded`: `weft::ring::bounded`, the reader draining with `recv_batch` of 64 (the
//!   bench's SPSC row);
//! - `weft lossy`: `weft::ring::channel`, the publisher's own rate and the share of messages
//!   its reader skipped (lapped);
//! - `disruptor`: disruptor 4.4's single producer and event poller, as the bench runs it;
//! - `disruptor paused`: the same, its consumer pausing 100 spins after each empty poll;
//! - `weft paused`: `weft bounded`, its reader pausing the same 100 spins.
//!
//! ```sh
//! cargo run --release -p weft-bench --example round_trip_scaling [ROUNDS]
//! ```
//! Prints one line per round (default 8), rates in Mmsg/s. On a 2-vCPU host whose vCPUs
//! sometimes sit far apart the probe moves between about 100 and 450 ns from one round to the
//! next (the report's two host states), and every row moves with it.

use std::hint::spin_loop;
use std::time::Instant;

// The bench's own pinning and host probe, so that the figures read as the report's do.
#[allow(dead_code)]
#[path = "../src/harness.rs"]
mod harness;
use harness::{cross_core_rtt_ns, pin};

const CAP: usize = 4096;
const MESSAGES: u64 = 10_000_000;
/// Spins after an empty poll in the paused variants.
const PAUSE: u32 = 100;

/// weft's bounded ring: delivered messages per second, in millions.
fn weft_bounded(pause: u32) -> f64 {
    let (tx, ring) = weft::ring::bounded::<u64>(CAP as u64, 0);
    let mut tx = tx.with_wait_strategy(weft::WaitStrategy::BusySpin);
    let mut rx = ring.subscribe();
    let (t0, end) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            pin(1);
            let mut buf = [0u64; 64];
            let mut got = 0u64;
            while got < MESSAGES {
                match rx.recv_batch(&mut buf) {
                    Ok(k) => {
                        assert_eq!(buf[k - 1], got + k as u64 - 1, "bounded ring out of order");
                        got += k as u64;
                    }
                    Err(weft::ring::RecvError::Empty) => (0..pause).for_each(|_| spin_loop()),
                    Err(e) => panic!("bounded ring: {e:?}"),
                }
            }
            Instant::now()
        });
        pin(0);
        let t0 = Instant::now();
        for i in 0..MESSAGES {
            tx.publish(i);
        }
        (t0, reader.join().expect("reader"))
    });
    MESSAGES as f64 / end.duration_since(t0).as_secs_f64() / 1e6
}

/// weft's lossy ring: the publisher's rate (Mmsg/s) and the share its reader skipped.
fn weft_lossy() -> (f64, f64) {
    let (tx, ring) = weft::ring::channel::<u64>(CAP as u64);
    let mut tx = tx.with_wait_strategy(weft::WaitStrategy::BusySpin);
    let mut rx = ring.subscribe();
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            pin(1);
            let mut buf = [0u64; 64];
            let (mut next, mut skipped) = (0u64, 0u64);
            while next < MESSAGES {
                match rx.recv_batch(&mut buf) {
                    Ok(k) => next = buf[k - 1] + 1,
                    Err(weft::ring::RecvError::Lagged { skipped: k }) => {
                        next += k;
                        skipped += k;
                    }
                    Err(_) => spin_loop(),
                }
            }
            skipped
        });
        pin(0);
        let t0 = Instant::now();
        for i in 0..MESSAGES {
            tx.publish(i);
        }
        let rate = MESSAGES as f64 / t0.elapsed().as_secs_f64() / 1e6;
        let skipped = reader.join().expect("reader");
        (rate, skipped as f64 / MESSAGES as f64)
    })
}

/// disruptor's single producer and event poller: messages per second, in millions.
fn disruptor(pause: u32) -> f64 {
    use disruptor::Producer;
    let builder = disruptor::build_single_producer(CAP, || 0u64, disruptor::BusySpin);
    let (mut poller, builder) = builder.new_event_poller();
    let mut tx = builder.build();
    let (t0, end) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            pin(1);
            let mut next = 0u64;
            while next < MESSAGES {
                match poller.poll() {
                    Ok(mut events) => {
                        for e in &mut events {
                            assert_eq!(*e, next, "disruptor out of order");
                            next += 1;
                        }
                    }
                    Err(_) => (0..pause).for_each(|_| spin_loop()),
                }
            }
            Instant::now()
        });
        pin(0);
        let t0 = Instant::now();
        for i in 0..MESSAGES {
            tx.publish(|e| *e = i);
        }
        (t0, reader.join().expect("reader"))
    });
    MESSAGES as f64 / end.duration_since(t0).as_secs_f64() / 1e6
}

fn main() {
    let rounds: usize = match std::env::args().nth(1) {
        Some(a) => a.parse().expect("ROUNDS: a number of rounds"),
        None => 8,
    };
    for _ in 0..rounds {
        let rtt = cross_core_rtt_ns();
        let bounded = weft_bounded(0);
        let (lossy, skipped) = weft_lossy();
        let disr = disruptor(0);
        let disr_paused = disruptor(PAUSE);
        let weft_paused = weft_bounded(PAUSE);
        println!(
            "round trip {rtt:4.0} ns | weft bounded {bounded:4.0} | weft lossy publisher \
             {lossy:4.0}, skipped {:3.0} % | disruptor {disr:4.0} | disruptor paused \
             {disr_paused:4.0} | weft paused {weft_paused:4.0}",
            skipped * 100.0
        );
    }
}
