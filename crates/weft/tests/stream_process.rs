//! The stream between two real processes: a gibibyte byte-exact, a wrap-heavy run at a tight
//! capacity, a large stream whose writer wraps early, and a trickle through park/wake that must lose no wakeup.

mod common;

use common::{Cleanup, Peer, unique};
use std::time::Duration;
use weft::stream::StreamReader;
use weft::{Error, WaitStrategy};

/// Runs a writer peer and a reader peer and returns their closing lines.
fn run_pair(tag: &str, seed: u64, bytes: u64, max: usize, cap: usize) -> (String, String) {
    run_paced(tag, seed, bytes, max, cap, 0)
}

/// As [`run_pair`]; `pace` (records between the writer's 1 ms pauses, 0 for none) goes to the
/// writer.
fn run_paced(
    tag: &str,
    seed: u64,
    bytes: u64,
    max: usize,
    cap: usize,
    pace: u64,
) -> (String, String) {
    let name = unique(tag);
    let _c = Cleanup(name.clone());
    let (seed, bytes_s, max_s, cap_s, pace_s) = (
        seed.to_string(),
        bytes.to_string(),
        max.to_string(),
        cap.to_string(),
        pace.to_string(),
    );
    let mut w = Peer::spawn(&[
        "stream-write",
        &name,
        &seed,
        &bytes_s,
        &max_s,
        &cap_s,
        &pace_s,
    ]);
    w.expect("ready");
    let mut r = Peer::spawn(&["stream-read", &name, &seed, &bytes_s, &max_s]);
    r.expect("ready");
    let (wl, wok) = w.finish(Duration::from_secs(300));
    let (rl, rok) = r.finish(Duration::from_secs(300));
    assert!(wok, "writer failed: {wl}");
    assert!(rok, "reader failed: {rl}");
    (wl, rl)
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

/// The writer's and the reader's closing lines agree on what went through.
fn same_records(w: &str, r: &str) {
    for key in ["records", "bytes", "digest"] {
        assert_eq!(
            field(w, key),
            field(r, key),
            "{key}: writer {w:?}, reader {r:?}"
        );
    }
}

#[test]
fn a_gibibyte_of_random_records_arrives_byte_exact() {
    let (w, r) = run_pair("gib", 0x5eed, 1 << 30, 1 << 20, 8 << 20);
    same_records(&w, &r);
    assert!(field(&r, "bytes").parse::<u64>().unwrap() >= 1 << 30);
    assert_eq!(field(&r, "missed"), "0");
    assert_eq!(field(&w, "missed"), "0");
}

#[test]
fn a_tight_stream_wraps_constantly_and_stays_exact() {
    // 4 KiB of capacity, records up to its maximum (2040 B): nearly every record wraps or
    // waits for room.
    let (w, r) = run_pair("tight", 77, 64 << 20, 2040, 4096);
    same_records(&w, &r);
    assert!(field(&r, "records").parse::<u64>().unwrap() > 40_000);
}

#[test]
fn a_large_stream_wrapping_early_stays_exact() {
    // 32 MiB takes the default 4 MiB hot window. The writer pauses 1 ms every 16 records (about
    // 512 KiB), so the reader keeps up and the writer goes back to 0 early, lap after lap; the
    // reader follows its watermark.
    let (w, r) = run_paced("early", 4242, 256 << 20, 64 << 10, 32 << 20, 16);
    same_records(&w, &r);
    let early: u64 = field(&w, "early").parse().unwrap();
    assert!(early >= 10, "only {early} early wraps in 256 MiB: {w:?}");
}

#[test]
fn a_hundred_thousand_trickled_messages_lose_no_wakeup() {
    let name = unique("trickle");
    let _c = Cleanup(name.clone());
    let n: u64 = 100_000;
    let mut w = Peer::spawn(&["stream-trickle", &name, &n.to_string()]);
    w.expect("ready");
    let mut r = StreamReader::open_timeout(&name, Duration::from_secs(10)).unwrap();
    r.set_wait_strategy(WaitStrategy::Park);
    for seq in 0..n {
        // Bounded: a lost wakeup would cost one 50 ms park slice, counted below; a stuck
        // stream fails here instead of hanging.
        let g = r.read_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(u64::from_le_bytes(g[..].try_into().unwrap()), seq);
    }
    assert!(matches!(
        r.read_timeout(Duration::from_secs(10)),
        Err(Error::Closed)
    ));
    let stats = r.stats();
    assert_eq!(stats.missed_wakeups, 0, "{stats:?}");
    assert!(
        stats.parks > n / 10,
        "the reader should have parked for most messages: {stats:?}"
    );
    let (line, ok) = w.finish(Duration::from_secs(30));
    assert!(ok, "{line}");
    assert!(line.ends_with("missed=0"), "{line}");
}
