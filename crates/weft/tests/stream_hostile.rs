//! A hostile peer scribbles random values over the stream's cursors, rows and records while
//! both sides run: they may get errors, never a crash, a hang or an out-of-bounds access.

mod common;

use common::{Cleanup, Peer, unique};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use weft::stream::{StreamReader, StreamWriter};

#[test]
fn scribbling_on_shared_state_yields_errors_only() {
    for seed in 1..=3u64 {
        let name = unique("hostile");
        let _c = Cleanup(name.clone());
        let mut w = StreamWriter::create(&name, 64 << 10).unwrap();
        let mut r = StreamReader::open(&name).unwrap();
        let mut peer = Peer::spawn(&["stream-scribble", &name, "1500", &seed.to_string()]);
        peer.expect("ready");
        let until = Instant::now() + Duration::from_millis(1500);
        let writer = std::thread::spawn(move || {
            let mut seen: BTreeMap<String, u64> = BTreeMap::new();
            let mut n = 0u64;
            while Instant::now() < until {
                n += 1;
                let len = (n * 37 % 3000) as usize;
                let res = w.write_timeout(&vec![n as u8; len], Duration::from_millis(5));
                *seen
                    .entry(res.map_or_else(|e| format!("{:?}", e.kind()), |_| "ok".into()))
                    .or_default() += 1;
            }
            seen
        });
        let mut seen: BTreeMap<String, u64> = BTreeMap::new();
        let mut bytes = 0u64;
        while Instant::now() < until {
            match r.read_timeout(Duration::from_millis(5)) {
                Ok(g) => {
                    // Whatever the record claims, its bytes are inside the mapping: touch them all.
                    bytes += g.iter().map(|&b| b as u64).sum::<u64>();
                    *seen.entry("ok".into()).or_default() += 1;
                }
                Err(e) => *seen.entry(format!("{:?}", e.kind())).or_default() += 1,
            }
        }
        let wseen = writer.join().expect("the writer thread must not panic");
        let (line, ok) = peer.finish(Duration::from_secs(10));
        assert!(ok, "{line}");
        // Every outcome is a value or a clean error kind.
        for k in wseen.keys().chain(seen.keys()) {
            assert!(
                [
                    "ok", "Corrupt", "Timeout", "Full", "Empty", "Closed", "PeerDead", "TooLarge"
                ]
                .contains(&k.as_str()),
                "unexpected outcome {k}"
            );
        }
        assert!(
            seen.contains_key("Corrupt") || wseen.contains_key("Corrupt"),
            "the scribbler should have been noticed: reader {seen:?} writer {wseen:?}"
        );
        eprintln!("seed {seed}: reader {seen:?}, writer {wseen:?}, {bytes} byte-sum");
    }
}
