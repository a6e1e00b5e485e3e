//! Shared-memory pub/sub between two processes: ping-pong over two topics of one region for
//! latency; for throughput, a publisher here and a subscriber in the child that acknowledges
//! every few messages, so that the publisher never laps it. An empty message tells the child
//! to stop.

use super::{Counted, Peer, RoundTrips, Setup, conclude, object_name, round_trips, say};
use crate::exit::{Failure, Outcome};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Sample, Subscriber, Subscription};
use weft::{Error, WaitStrategy};

/// The most memory a benchmark region's pool may take. Objects are reserved whole when they
/// are made, so a pool sized by ring slots alone (4096 blocks of 1 MiB messages: 4 GiB) would
/// take that much memory, or fail on a smaller /dev/shm.
const POOL_BUDGET: usize = 256 << 20;

/// A region for `topics` topics of up to `most` ring slots each: fewer (a power of two, at
/// least 64) when that many blocks of the message size would pass [`POOL_BUDGET`]. Every
/// ring slot keeps its block until it is overwritten, so the pool holds every ring's blocks
/// and as many again for loans and samples in flight.
fn config(setup: &Setup, topics: usize, most: usize) -> Config {
    let block = setup.size.max(64).next_multiple_of(64);
    let fit = (POOL_BUDGET / (2 * topics * block)).max(1);
    // The largest power of two that fits, within 64 ..= most.
    let ring_slots = (1usize << fit.ilog2()).clamp(64, most);
    Config::default()
        .wait(setup.wait.strategy())
        .block_size(block)
        .ring_slots(ring_slots)
        .blocks(2 * topics * ring_slots)
}

/// Round trips: this process publishes on `/ping`, the child echoes on `/pong`.
pub fn latency(setup: Setup) -> Result<RoundTrips, Failure> {
    let region = object_name("pubsub");
    let cfg = config(&setup, 2, 256);
    let publisher = Publisher::create(&region, &cfg)?;
    let ping = publisher.register("/ping")?;
    publisher.register("/pong")?;
    let subscriber = Subscriber::connect_with(&region, &cfg)?;
    let mut pong = subscriber.subscribe("/pong")?;
    let mut peer = Peer::spawn("pubsub-echo", &region, setup.wait, &[&region])?;
    let measured = round_trips(&setup, "pub/sub", |msg| {
        publisher.publish(&ping, msg)?;
        Ok(recv_from(&mut pong, &mut peer)??.len())
    });
    // An empty message ends the child (after a failure too).
    let stopped = publisher.publish(&ping, &[]).map_err(Failure::from);
    conclude(measured.and_then(|r| stopped.map(|_| r)), peer.finish())
}

/// Messages the publisher may be ahead of the subscriber's last acknowledgement: half the
/// ring, so that a subscriber that keeps up is never lapped (pub/sub itself never waits for a
/// slow subscriber; this measures what it sustains without loss).
fn window(ring_slots: u64) -> u64 {
    ring_slots / 2
}

/// The subscriber acknowledges every this many messages: 64, fewer on a shorter ring (large
/// messages), always at most a quarter of the window.
fn ack_every(ring_slots: u64) -> u64 {
    (ring_slots / 16).clamp(1, 64)
}

/// Ring slots of the throughput topics (fewer for large messages: [`config`]).
const RING_SLOTS: usize = 1024;

/// Messages one way for the measurement's duration, counted by the child, which acknowledges
/// on `/ack` so that the publisher stays within [`window`] of it.
pub fn throughput(setup: Setup) -> Result<Counted, Failure> {
    let region = object_name("pubsub.data");
    let cfg = config(&setup, 2, RING_SLOTS);
    let publisher = Publisher::create(&region, &cfg)?;
    let window = window(publisher.region_info().ring_slots);
    let data = publisher.register("/data")?;
    publisher.register("/ack")?;
    let subscriber = Subscriber::connect_with(&region, &cfg)?;
    let mut acks = subscriber.subscribe("/ack")?;
    let mut peer = Peer::spawn("pubsub-sink", &region, setup.wait, &[&region])?;
    let msg = vec![0x5a; setup.size];
    let start = Instant::now();
    let sent = (|| -> Result<(), Failure> {
        let end = start + setup.duration;
        let (mut sent, mut acked) = (0u64, 0u64);
        while Instant::now() < end && !crate::interrupt::requested() {
            for _ in 0..64 {
                while sent - acked >= window {
                    match recv_from(&mut acks, &mut peer)? {
                        Ok(a) => acked = count(&a).max(acked),
                        Err(Error::Lagged { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                publisher.publish(&data, &msg)?;
                sent += 1;
            }
        }
        Ok(())
    })();
    // An empty message ends the child (after a failure too), which then reports its counts.
    let stopped = publisher.publish(&data, &[]).map_err(Failure::from);
    if let Err(e) = sent.and(stopped) {
        return conclude(Err(e), peer.finish());
    }
    let (got, lost) = peer.done()?;
    Ok(Counted {
        messages: got,
        lost,
        elapsed: start.elapsed(),
    })
}

/// How long one wait for the child lasts before checking that it still runs.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// What `recv` on `sub` gives, or a failure once the child has exited.
fn recv_from(sub: &mut Subscription, peer: &mut Peer) -> Result<weft::Result<Sample>, Failure> {
    loop {
        match sub.recv_timeout(CHECK_EVERY) {
            Err(Error::Timeout) => peer.check_running()?,
            other => return Ok(other),
        }
    }
}

/// The count an acknowledgement carries (8 bytes, little-endian; 0 if malformed).
fn count(ack: &[u8]) -> u64 {
    ack.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn join(region: &str, wait: WaitStrategy) -> Result<Subscriber, Failure> {
    Ok(Subscriber::connect_with(
        region,
        &Config::default().wait(wait),
    )?)
}

/// Child: echoes every message of `/ping` on `/pong` until an empty one.
pub fn echo(region: &str, wait: WaitStrategy) -> Outcome {
    let subscriber = join(region, wait)?;
    let mut ping = subscriber.subscribe("/ping")?;
    let publisher = Publisher::open(region)?;
    let pong = publisher.register("/pong")?;
    say("ready");
    loop {
        match ping.recv() {
            Ok(m) if m.is_empty() => return Ok(()),
            Ok(m) => {
                publisher.publish(&pong, &m)?;
            }
            Err(Error::Lagged { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Child: counts the messages of `/data` until an empty one, acknowledging on `/ack` every
/// [`ack_every`] (of the region's ring slots); reports `done RECEIVED LOST`.
pub fn sink(region: &str, wait: WaitStrategy) -> Outcome {
    let subscriber = join(region, wait)?;
    let mut data = subscriber.subscribe("/data")?;
    let publisher = Publisher::open(region)?;
    let ack = publisher.register("/ack")?;
    let every = ack_every(subscriber.region_info().ring_slots);
    say("ready");
    let (mut n, mut lost) = (0u64, 0u64);
    loop {
        match data.recv() {
            Ok(m) if m.is_empty() => break,
            Ok(_) => n += 1,
            Err(Error::Lagged { skipped }) => lost += skipped,
            Err(e) => return Err(e.into()),
        }
        if (n + lost) % every == 0 {
            publisher.publish(&ack, &(n + lost).to_le_bytes())?;
        }
    }
    say(&format!("done {n} {lost}"));
    Ok(())
}
