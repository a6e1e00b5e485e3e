//! The shared-memory byte stream between two processes: ping-pong over two streams for
//! latency; one stream, writer here and reader in the child, for throughput.

use super::{Counted, Peer, RoundTrips, Setup, conclude, object_name, round_trips, say};
use crate::exit::{Failure, Outcome};
use std::time::Instant;
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, WaitStrategy};

/// Capacity of the latency streams, at least: messages up to half of it fit (a stream takes
/// records of up to half its capacity less a record header).
const PING_CAPACITY: usize = 1 << 20;
/// Capacity of the throughput stream: 8 MiB, so records up to 4 MiB (above `--size`'s limit).
const DATA_CAPACITY: usize = 8 << 20;

/// The latency streams' capacity for messages of `size` bytes: [`PING_CAPACITY`], or room for
/// two such records (each with its header, rounded up) when they are larger.
fn ping_capacity(size: usize) -> usize {
    (2 * (size + 64)).next_multiple_of(4096).max(PING_CAPACITY)
}

fn opts(capacity: usize, wait: WaitStrategy) -> StreamOptions {
    StreamOptions::new(capacity).wait(wait)
}

/// Round trips: this process writes on `NAME.ping`, the child echoes on `NAME.pong` (a stream
/// of the same capacity).
pub fn latency(setup: Setup) -> Result<RoundTrips, Failure> {
    let wait = setup.wait.strategy();
    let base = object_name("stream");
    let pong_name = format!("{base}.pong");
    let mut ping = StreamWriter::create_with(
        &format!("{base}.ping"),
        &opts(ping_capacity(setup.size), wait),
    )?;
    let peer = Peer::spawn("stream-echo", &base, setup.wait, &[&pong_name])?;
    let measured = StreamReader::open_with(&pong_name, &opts(0, wait))
        .map_err(Failure::from)
        .and_then(|mut pong| {
            round_trips(&setup, "stream", |msg| {
                ping.write(msg)?;
                Ok(pong.read()?.len())
            })
        });
    // Closing the ping stream ends the child (after a failure too), which closes the pong
    // stream.
    drop(ping);
    conclude(measured, peer.finish())
}

/// Records one way for the measurement's duration, counted by the child.
pub fn throughput(setup: Setup) -> Result<Counted, Failure> {
    let wait = setup.wait.strategy();
    let name = object_name("stream.data");
    let mut w = StreamWriter::create_with(&name, &opts(DATA_CAPACITY, wait))?;
    let peer = Peer::spawn("stream-sink", &name, setup.wait, &[&name])?;
    let msg = vec![0x5a; setup.size];
    let start = Instant::now();
    let sent = (|| -> Result<u64, Failure> {
        let end = start + setup.duration;
        let mut sent = 0u64;
        while Instant::now() < end && !crate::interrupt::requested() {
            for _ in 0..256 {
                w.write(&msg)?;
            }
            sent += 256;
        }
        Ok(sent)
    })();
    // Closing the stream ends the child, which then reports its count.
    drop(w);
    let sent = match sent {
        Ok(n) => n,
        Err(e) => return conclude(Err(e), peer.finish()),
    };
    let (got, _) = peer.done()?;
    let elapsed = start.elapsed();
    Ok(Counted {
        messages: got,
        lost: sent.saturating_sub(got),
        elapsed,
    })
}

/// Child: reads `NAME.ping` and writes every record back on `NAME.pong`, a stream of the same
/// capacity, until the ping stream closes.
pub fn echo(base: &str, wait: WaitStrategy) -> Outcome {
    let mut rx = StreamReader::open_with(&format!("{base}.ping"), &opts(0, wait))?;
    let mut tx = StreamWriter::create_with(&format!("{base}.pong"), &opts(rx.capacity(), wait))?;
    say("ready");
    loop {
        match rx.read() {
            Ok(rec) => tx.write(&rec)?,
            Err(Error::Closed) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Child: reads `NAME` until it closes and reports `done MESSAGES 0`.
pub fn sink(name: &str, wait: WaitStrategy) -> Outcome {
    let mut rx = StreamReader::open_with(name, &opts(0, wait))?;
    say("ready");
    let mut n = 0u64;
    loop {
        match rx.read_batch(1024) {
            Ok(batch) => n += batch.len() as u64,
            Err(Error::Closed) => break,
            Err(e) => return Err(e.into()),
        }
    }
    say(&format!("done {n} 0"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_streams_take_every_size_bench_accepts() {
        let name = format!("weft-cli-unit-ping-{}", std::process::id());
        for size in [1, 524_280, 600_000, super::super::MAX_SIZE] {
            let w =
                StreamWriter::create_with(&name, &opts(ping_capacity(size), WaitStrategy::Park))
                    .expect("create");
            assert!(w.max_record_len() >= size, "{size}: {}", w.max_record_len());
            drop(w);
        }
        let w = StreamWriter::create_with(&name, &opts(DATA_CAPACITY, WaitStrategy::Park)).unwrap();
        assert!(w.max_record_len() >= super::super::MAX_SIZE);
    }
}
