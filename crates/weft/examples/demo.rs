//! weft's stream demo: a writer process streams to a reader process through shared memory, every
//! record checksummed, and prints throughput and round-trip latency.
//!
//! ```text
//! cargo run --release -p weft --example demo
//! ```
//! The example starts itself a second time as the reader. On a machine with two or more cores
//! the two processes are pinned to different cores.

use hdrhistogram::Histogram;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, WaitStrategy};

const CAPACITY: usize = 64 << 20;
const SMALL: usize = 256;
const SMALL_COUNT: u64 = 2_000_000;
const LARGE: usize = 1 << 20;
const LARGE_COUNT: u64 = 2048;
const PINGS_SPIN: u64 = 100_000;
const PINGS_PARK: u64 = 20_000;

/// The payload's checksum: a wrapping sum of its 8-byte words (the record's first word holds
/// it). Cheap enough to run on every byte at memory speed, so it checks without dominating.
fn checksum(body: &[u8]) -> u64 {
    let words = body.chunks_exact(8);
    let tail = words
        .remainder()
        .iter()
        .fold(0u64, |acc, &b| acc.rotate_left(8) ^ b as u64);
    words
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .fold(0x9E37_79B9_7F4A_7C15u64, u64::wrapping_add)
        .wrapping_add(tail)
}

fn fill(rec: &mut [u8], seq: u64) {
    let mut words = rec[8..].chunks_exact_mut(8);
    for (i, c) in (&mut words).enumerate() {
        c.copy_from_slice(
            &seq.wrapping_mul(0x9E37_79B9)
                .wrapping_add(i as u64)
                .to_le_bytes(),
        );
    }
    words.into_remainder().fill(seq as u8);
    let sum = checksum(&rec[8..]);
    rec[..8].copy_from_slice(&sum.to_le_bytes());
}

fn verify(rec: &[u8]) -> bool {
    rec.len() >= 8 && u64::from_le_bytes(rec[..8].try_into().unwrap()) == checksum(&rec[8..])
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--reader" {
        return reader(&args[2]);
    }
    let name = format!("demo-{}", std::process::id());
    let cores = weft::affinity::available_cores();
    let w = StreamWriter::create_with(
        &name,
        &StreamOptions::new(CAPACITY).wait(WaitStrategy::Adaptive),
    )?;
    let mut child = Command::new(std::env::current_exe().expect("own executable"))
        .args(["--reader", &name])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the reader process");
    // Pinned only after the reader has started: a child inherits its parent's CPU mask, and
    // the reader must be free to move itself to core 1.
    if cores >= 2 {
        let _ = weft::affinity::pin_current_thread(0); // best effort
    }
    let from_child = BufReader::new(child.stdout.take().unwrap());
    let cores_note = if cores >= 2 {
        ", pinned to cores 0 and 1"
    } else {
        ""
    };
    let header = format!(
        "weft demo: writer pid {} -> reader pid {} through /dev/shm/weft.{name} ({} MiB){cores_note}",
        std::process::id(),
        child.id(),
        CAPACITY >> 20,
    );
    let outcome = writer(w, from_child, &name, &header);
    // Whatever happened, the writer is gone (closed) by now: the reader exits; reap it.
    let status = child.wait().expect("reader exit");
    outcome?;
    println!(
        "  reader exited: {}",
        if status.success() { "ok" } else { "FAILED" }
    );
    std::io::stdout().flush().ok();
    if status.success() {
        Ok(())
    } else {
        std::process::exit(1)
    }
}

fn writer(
    mut w: StreamWriter,
    mut from_child: BufReader<std::process::ChildStdout>,
    name: &str,
    header: &str,
) -> Result<(), Error> {
    let mut line = String::new();
    from_child.read_line(&mut line).expect("reader ready");
    println!("{header}");

    for (size, count) in [(SMALL, SMALL_COUNT), (LARGE, LARGE_COUNT)] {
        let t = Instant::now();
        for seq in 0..count {
            let mut g = w.reserve(size)?;
            fill(&mut g, seq);
            g.commit(size)?;
        }
        // The reader acknowledges the phase once it has checked every record.
        line.clear();
        from_child
            .read_line(&mut line)
            .expect("reader's phase report");
        let secs = t.elapsed().as_secs_f64();
        let gib = (size as u64 * count) as f64 / secs / (1u64 << 30) as f64;
        let rate = count as f64 / secs;
        let rate = if rate >= 1e5 {
            format!("{:.2} M msg/s", rate / 1e6)
        } else {
            format!("{rate:.0} msg/s")
        };
        println!(
            "  {:>7} records  {:>9} in {:>6.3} s  {:>14}  {:>6.2} GiB/s   {}",
            if size >= 1024 {
                format!("{} KiB", size >> 10)
            } else {
                format!("{size} B")
            },
            count,
            secs,
            rate,
            gib,
            line.trim()
        );
    }

    // Round trips: the reader echoes each record back on a second stream.
    let mut back = StreamReader::open_timeout(&format!("{name}-back"), Duration::from_secs(10))?;
    for (label, strategy, pings) in [
        ("busy-spin", WaitStrategy::BusySpin, PINGS_SPIN),
        ("parked", WaitStrategy::Park, PINGS_PARK),
    ] {
        w.set_wait_strategy(strategy);
        back.set_wait_strategy(strategy);
        w.write(label.as_bytes())?; // tells the reader which strategy to use
        drop(back.read()?);
        let mut hist = Histogram::<u64>::new(3).expect("histogram");
        let mut msg = [0u8; 64];
        for seq in 0..pings {
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            let t = Instant::now();
            w.write(&msg)?;
            let echo = back.read()?;
            let ns = t.elapsed().as_nanos() as u64;
            assert_eq!(&echo[..8], &seq.to_le_bytes());
            drop(echo);
            hist.record(ns.max(1)).expect("record");
        }
        let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
        println!(
            "  round trip 64 B ({label:>9}, {pings:>6}):  p50 {:>6.2} us  p99 {:>6.2} us  p99.9 {:>7.2} us  max {:>8.2} us",
            us(0.5),
            us(0.99),
            us(0.999),
            hist.max() as f64 / 1000.0
        );
    }
    Ok(())
}

fn reader(name: &str) -> Result<(), Error> {
    if weft::affinity::available_cores() >= 2 {
        weft::affinity::pin_current_thread(1)?;
    }
    let mut r = StreamReader::open_timeout(name, Duration::from_secs(10))?;
    let mut back = StreamWriter::create(&format!("{name}-back"), 1 << 20)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").ok();
    out.flush().ok();
    for (size, count) in [(SMALL, SMALL_COUNT), (LARGE, LARGE_COUNT)] {
        let mut bad = 0u64;
        let mut got = 0u64;
        while got < count {
            let batch = r.read_batch(256)?;
            for rec in batch.iter() {
                if rec.len() != size || !verify(rec) {
                    bad += 1;
                }
            }
            got += batch.len() as u64;
        }
        if bad == 0 {
            writeln!(out, "checksums ok").ok();
        } else {
            writeln!(out, "{bad} BAD RECORDS").ok();
        }
        out.flush().ok();
    }
    loop {
        let label = match r.read() {
            Ok(g) => String::from_utf8_lossy(&g).into_owned(),
            Err(Error::Closed) => return Ok(()),
            Err(e) => return Err(e),
        };
        let strategy = if label == "parked" {
            WaitStrategy::Park
        } else {
            WaitStrategy::BusySpin
        };
        let pings = if label == "parked" {
            PINGS_PARK
        } else {
            PINGS_SPIN
        };
        r.set_wait_strategy(strategy);
        back.set_wait_strategy(strategy);
        back.write(b"go")?;
        for _ in 0..pings {
            let g = r.read()?;
            back.write(&g)?;
        }
    }
}
