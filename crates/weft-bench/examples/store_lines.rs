//! What a seqlock ring's publisher pays, across cores, for each store it makes outside the
//! slot line it is writing.
//!
//! A bare model of the broadcast ring's single-publisher path, not weft itself: 4096 slots of
//! 16 bytes (a stamp and a u64, four to a cache line), one publisher pinned to core 0, one
//! gated subscriber pinned to core 1 that reads runs of up to 64 by their stamps. Only the
//! publisher's stores change between the variants:
//!
//! - `stamps + cursor`: odd stamp, value, even stamp, then the cursor (weft's `publish`);
//! - `stamps only`: no cursor store (the sequence stays in a register);
//! - `stamps + 2nd stamp store`: the even stamp stored twice (a fourth store, same line);
//! - `stamps + own-line store`: a fourth store to a line nobody else touches;
//! - `stamps + cursor / 16`: the cursor stored every 16th message.
//!
//! ```sh
//! cargo run --release -p weft-bench --example store_lines
//! ```
//! Prints the median of five runs of 10 million messages per variant, in Mmsg/s.

use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::Instant;

const CAP: usize = 4096;
const MESSAGES: u64 = 10_000_000;

/// Four 16-byte slots: stamp then value.
#[repr(C, align(64))]
struct Line([[AtomicU64; 2]; 4]);

/// A word alone on its line (two lines, against the adjacent-line prefetcher).
#[repr(C, align(128))]
struct Alone(AtomicU64);

/// On the heap: a model kept on the publisher's stack shares lines with its spilled locals.
#[repr(C, align(128))]
struct Model {
    lines: Box<[Line]>,
    cursor: Alone,
    gate: Alone,
    own: Alone,
}

impl Model {
    fn slot(&self, seq: u64) -> &[AtomicU64; 2] {
        let i = seq as usize & (CAP - 1);
        &self.lines[i / 4].0[i % 4]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Cursor,
    StampsOnly,
    SecondStamp,
    OwnLine,
    CursorEvery16,
}

// The bench's own pinning.
#[allow(dead_code)]
#[path = "../src/harness.rs"]
mod harness;
use harness::pin;

fn run(v: Variant) -> f64 {
    let m = Box::new(Model {
        lines: (0..CAP / 4)
            .map(|_| {
                Line(std::array::from_fn(|_| {
                    [AtomicU64::new(0), AtomicU64::new(0)]
                }))
            })
            .collect(),
        cursor: Alone(AtomicU64::new(0)),
        gate: Alone(AtomicU64::new(0)),
        own: Alone(AtomicU64::new(0)),
    });
    let m = &*m;
    let (t0, end) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            pin(1);
            let (mut pos, mut sum) = (0u64, 0u64);
            while pos < MESSAGES {
                let start = pos;
                for _ in 0..64 {
                    let slot = m.slot(pos);
                    let want = 2 * pos + 2;
                    // Acquire pairs with the even stamp's Release store below.
                    if slot[0].load(Ordering::Acquire) != want {
                        break;
                    }
                    // Relaxed: validated by the stamp re-check after the fence below.
                    let value = slot[1].load(Ordering::Relaxed);
                    // Pairs with the publisher's Release fence: a value from a later lap
                    // shows its odd stamp to the re-check.
                    fence(Ordering::Acquire);
                    // Relaxed: ordered after the value by the fence above.
                    if slot[0].load(Ordering::Relaxed) != want {
                        break;
                    }
                    sum = sum.wrapping_add(value);
                    pos += 1;
                }
                if pos != start {
                    // Release pairs with the publisher's Acquire gate load.
                    m.gate.0.store(pos, Ordering::Release);
                } else {
                    std::hint::spin_loop();
                }
            }
            std::hint::black_box(sum);
            Instant::now()
        });
        pin(0);
        let t0 = Instant::now();
        let mut limit = CAP as u64;
        for seq in 0..MESSAGES {
            while seq >= limit {
                // Acquire pairs with the reader's Release gate store.
                limit = m.gate.0.load(Ordering::Acquire) + CAP as u64;
                std::hint::spin_loop();
            }
            let slot = m.slot(seq);
            // Relaxed: ordered before the value by the Release fence just below.
            slot[0].store(2 * seq + 1, Ordering::Relaxed);
            // Pairs with the reader's Acquire fence.
            fence(Ordering::Release);
            // Relaxed: published by the even stamp's Release store.
            slot[1].store(seq, Ordering::Relaxed);
            // Release pairs with the reader's Acquire stamp load.
            slot[0].store(2 * seq + 2, Ordering::Release);
            // The variant's extra store. Release, as weft's cursor store (which pairs with
            // the Acquire cursor loads of lag, join and `latest`); nothing here loads these
            // words back: the model measures what the store costs, not what it carries.
            match v {
                Variant::Cursor => m.cursor.0.store(seq + 1, Ordering::Release),
                Variant::StampsOnly => {}
                Variant::SecondStamp => slot[0].store(2 * seq + 2, Ordering::Release),
                Variant::OwnLine => m.own.0.store(seq + 1, Ordering::Release),
                Variant::CursorEvery16 => {
                    if seq % 16 == 15 {
                        m.cursor.0.store(seq + 1, Ordering::Release);
                    }
                }
            }
        }
        (t0, reader.join().expect("reader"))
    });
    MESSAGES as f64 / end.duration_since(t0).as_secs_f64() / 1e6
}

fn main() {
    for (v, name) in [
        (Variant::Cursor, "stamps + cursor"),
        (Variant::StampsOnly, "stamps only"),
        (Variant::SecondStamp, "stamps + 2nd stamp store"),
        (Variant::OwnLine, "stamps + own-line store"),
        (Variant::CursorEvery16, "stamps + cursor / 16"),
    ] {
        let mut runs: Vec<f64> = (0..5).map(|_| run(v)).collect();
        runs.sort_by(f64::total_cmp);
        println!(
            "{name:26} {:6.0} Mmsg/s  (min {:.0}, max {:.0})",
            runs[2], runs[0], runs[4]
        );
    }
}
