//! The in-process broadcast ring between two threads: ping-pong over two SPMC rings for
//! latency, a bounded (lossless) ring for throughput. Ring messages are `Pod` arrays, so the
//! size is rounded up to the next of a few fixed sizes.

use super::{Counted, RoundTrips, Setup, histogram, record};
use crate::exit::{ERROR, Failure};
use std::time::{Duration, Instant};
use weft::ring::{self, RecvError};

/// The message sizes the ring is measured with.
const SIZES: [usize; 10] = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

/// The size the ring measures for a requested `size`: the next of [`SIZES`] (at most 4096).
pub fn message_size(size: usize) -> usize {
    SIZES.into_iter().find(|&s| s >= size).unwrap_or(4096)
}

/// Calls `$f::<N>($setup)` with the `N` of `message_size`.
macro_rules! by_size {
    ($f:ident, $setup:expr) => {
        match message_size($setup.size) {
            8 => $f::<8>($setup),
            16 => $f::<16>($setup),
            32 => $f::<32>($setup),
            64 => $f::<64>($setup),
            128 => $f::<128>($setup),
            256 => $f::<256>($setup),
            512 => $f::<512>($setup),
            1024 => $f::<1024>($setup),
            2048 => $f::<2048>($setup),
            _ => $f::<4096>($setup),
        }
    };
}

/// Round trips between two threads.
pub fn latency(setup: Setup) -> Result<RoundTrips, Failure> {
    by_size!(latency_n, setup)
}

/// Messages one way through a bounded ring.
pub fn throughput(setup: Setup) -> Result<Counted, Failure> {
    by_size!(throughput_n, setup)
}

fn failed(e: RecvError) -> Failure {
    Failure::new(ERROR, format!("ring benchmark: {e}"))
}

fn latency_n<const N: usize>(setup: Setup) -> Result<RoundTrips, Failure> {
    let wait = setup.wait.strategy();
    let (mut ping_tx, ping) = ring::channel::<[u8; N]>(1024);
    let (mut pong_tx, pong) = ring::channel::<[u8; N]>(1024);
    let mut ping_rx = ping.subscribe().with_wait_strategy(wait);
    let mut pong_rx = pong.subscribe().with_wait_strategy(wait);
    let echo = std::thread::spawn(move || {
        // Ends when the pinging side drops its publisher.
        while let Ok(v) = ping_rx.recv() {
            pong_tx.publish(v);
        }
    });
    let mut h = histogram();
    let msg = [0x5a; N];
    let start = Instant::now();
    let end = start + setup.duration;
    let mut res = Ok(());
    while Instant::now() < end && !crate::interrupt::requested() {
        let t0 = Instant::now();
        ping_tx.publish(msg);
        if let Err(e) = pong_rx.recv() {
            res = Err(failed(e));
            break;
        }
        record(&mut h, t0);
    }
    let elapsed = start.elapsed();
    drop(ping_tx);
    let _ = echo.join();
    res.map(|()| RoundTrips { hist: h, elapsed })
}

fn throughput_n<const N: usize>(setup: Setup) -> Result<Counted, Failure> {
    let wait = setup.wait.strategy();
    let (tx, ring) = ring::bounded::<[u8; N]>(4096, 0);
    let mut tx = tx.with_wait_strategy(wait);
    let mut rx = ring.subscribe().with_wait_strategy(wait);
    let sink = std::thread::spawn(move || -> Result<u64, RecvError> {
        let mut n = 0u64;
        loop {
            match rx.recv() {
                Ok(_) => n += 1,
                Err(RecvError::Closed) => return Ok(n),
                Err(e) => return Err(e),
            }
        }
    });
    let msg = [0x5a; N];
    let start = Instant::now();
    let end = start + setup.duration;
    let mut sent = 0u64;
    while Instant::now() < end && !crate::interrupt::requested() {
        for _ in 0..1024 {
            tx.publish(msg);
        }
        sent += 1024;
    }
    drop(tx);
    let got = sink
        .join()
        .map_err(|_| Failure::new(ERROR, "ring benchmark: the receiving thread panicked"))?
        .map_err(failed)?;
    let elapsed = start.elapsed();
    Ok(Counted {
        messages: got,
        lost: sent.saturating_sub(got),
        elapsed: elapsed.max(Duration::from_nanos(1)),
    })
}
