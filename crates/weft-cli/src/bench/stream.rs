//! The shared-memory byte stream between two processes: ping-pong over two streams for
//! latency; one stream, writer here and reader in the child, for throughput.

use super::{Counted, Hist, Peer, Setup, histogram, object_name, record, say};
use crate::exit::{ERROR, Failure, Outcome};
use std::time::Instant;
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, WaitStrategy};

/// Capacity of the latency streams.
const PING_CAPACITY: usize = 1 << 20;
/// Capacity of the throughput stream.
const DATA_CAPACITY: usize = 8 << 20;

fn opts(capacity: usize, wait: WaitStrategy) -> StreamOptions {
    StreamOptions::new(capacity).wait(wait)
}

/// Round trips: this process writes on `NAME.ping`, the child echoes on `NAME.pong`.
pub fn latency(setup: Setup) -> Result<Hist, Failure> {
    let wait = setup.wait.strategy();
    let base = object_name("stream");
    let mut ping = StreamWriter::create_with(&format!("{base}.ping"), &opts(PING_CAPACITY, wait))?;
    let peer = Peer::spawn("stream-echo", &base, setup.wait)?;
    let mut pong = StreamReader::open_with(&format!("{base}.pong"), &opts(0, wait))?;
    let msg = vec![0x5a; setup.size];
    let mut h = histogram();
    let end = Instant::now() + setup.duration;
    while Instant::now() < end && !crate::interrupt::requested() {
        let t0 = Instant::now();
        ping.write(&msg)?;
        let back = pong.read()?;
        if back.len() != msg.len() {
            return Err(Failure::new(
                ERROR,
                "stream benchmark: the echo changed the record",
            ));
        }
        drop(back);
        record(&mut h, t0);
    }
    // Closing the ping stream ends the child, which closes the pong stream.
    drop(ping);
    peer.finish()?;
    Ok(h)
}

/// Records one way for the measurement's duration, counted by the child.
pub fn throughput(setup: Setup) -> Result<Counted, Failure> {
    let wait = setup.wait.strategy();
    let name = object_name("stream.data");
    let mut w = StreamWriter::create_with(&name, &opts(DATA_CAPACITY, wait))?;
    let peer = Peer::spawn("stream-sink", &name, setup.wait)?;
    let msg = vec![0x5a; setup.size];
    let start = Instant::now();
    let end = start + setup.duration;
    let mut sent = 0u64;
    while Instant::now() < end && !crate::interrupt::requested() {
        for _ in 0..256 {
            w.write(&msg)?;
        }
        sent += 256;
    }
    drop(w);
    let (got, _) = peer.done()?;
    let elapsed = start.elapsed();
    Ok(Counted {
        messages: got,
        lost: sent.saturating_sub(got),
        elapsed,
    })
}

/// Child: reads `NAME.ping` and writes every record back on `NAME.pong` until the ping stream
/// closes.
pub fn echo(base: &str, wait: WaitStrategy) -> Outcome {
    let mut rx = StreamReader::open_with(&format!("{base}.ping"), &opts(0, wait))?;
    let mut tx = StreamWriter::create_with(&format!("{base}.pong"), &opts(PING_CAPACITY, wait))?;
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
