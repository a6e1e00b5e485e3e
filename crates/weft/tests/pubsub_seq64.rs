//! 64-bit sequence numbers: topics whose counters are preset just below 2^32 keep counting
//! across it, in blocks, latest, inline and latest-value inline modes, with exact lag.

mod common;

use common::{Cleanup, shm_path, unique};
use std::os::unix::fs::FileExt;
use weft::Error;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode};

const PARTS: u64 = 8;
const HELD: u64 = 16;
const TOPICS: u64 = 4;
const SLOTS: u64 = 8;

fn cfg() -> Config {
    Config::default()
        .participants(PARTS as usize)
        .max_held(HELD as usize)
        .topics(TOPICS as usize)
        .ring_slots(SLOTS as usize)
        .blocks(64)
        .block_size(256)
}

/// Makes topic `topic`, whose ring has `slots` slots (`SLOTS`, or 2 for a latest topic), look
/// as if `start` messages had been published, each slot holding an empty descriptor of its
/// last lap (docs/protocol.md, "Region").
fn preset(name: &str, topic: u64, slots: u64, start: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(name))
        .unwrap();
    let l = common::region::Layout::of_file(&f);
    for s in start - slots..start {
        let slot = l.ring_slot(topic, s, slots);
        f.write_all_at(&(s + 1).to_le_bytes(), slot).unwrap();
        f.write_all_at(&0u64.to_le_bytes(), slot + 8).unwrap();
    }
    f.write_all_at(&start.to_le_bytes(), l.hot + 64 * topic)
        .unwrap();
}

#[test]
fn sequences_count_across_2_pow_32() {
    let name = unique("pq-seq");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let blocks = p.register("/blocks").unwrap();
    let latest = p.register_with("/latest", TopicMode::Latest).unwrap();
    let start = (1u64 << 32) - 3;
    preset(&name, 0, SLOTS, start);
    preset(&name, 1, 2, start);
    let s = Subscriber::connect(&name).unwrap();
    let mut b = s.subscribe("/blocks").unwrap();
    let mut l = s.subscribe("/latest").unwrap();
    for i in 0..6u64 {
        assert_eq!(p.publish(&blocks, &i.to_le_bytes()).unwrap(), start + i);
        let m = b.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (start + i, &i.to_le_bytes()[..]));
    }
    for i in 6..16u64 {
        p.publish(&blocks, &i.to_le_bytes()).unwrap();
    }
    assert!(matches!(b.try_recv(), Err(Error::Lagged { skipped: 2 })));
    assert_eq!(b.try_recv().unwrap().seq(), start + 8);
    for i in 0..10u64 {
        p.publish(&latest, &i.to_le_bytes()).unwrap();
    }
    let m = l.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (start + 9, &9u64.to_le_bytes()[..]));
    assert_eq!(p.stats(&blocks).unwrap().published, start + 16);
}

/// Makes inline area `area` (an 8-byte message's ring of `SLOTS` 16-byte slots) look as if
/// `start` messages had been published: the claim counter and the stamps of the last lap
/// (`2 seq + 2`).
fn preset_inline(name: &str, area: u64, start: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(name))
        .unwrap();
    let l = common::region::Layout::of_file(&f);
    let area = l.inline_area(area);
    for s in start - SLOTS..start {
        f.write_all_at(&(2 * s + 2).to_le_bytes(), area + 192 + 16 * (s % SLOTS))
            .unwrap();
    }
    f.write_all_at(&start.to_le_bytes(), area + 64).unwrap();
}

#[test]
fn inline_sequences_count_across_2_pow_32() {
    let name = unique("pq-inline");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p
        .register_spec("/inline", &weft::pubsub::TopicSpec::inline(8))
        .unwrap();
    let start = (1u64 << 32) - 3;
    preset_inline(&name, 0, start);
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/inline").unwrap();
    for i in 0..6u64 {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), start + i);
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (start + i, &i.to_le_bytes()[..]));
    }
    for i in 6..16u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert!(matches!(sub.try_recv(), Err(Error::Lagged { skipped: 2 })));
    assert_eq!(sub.try_recv().unwrap().seq(), start + 8);
    assert_eq!(p.stats(&t).unwrap().published, start + 16);
}

#[test]
fn latest_inline_sequences_count_across_2_pow_32() {
    let name = unique("pq-latest-inline");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p
        .register_spec(
            "/latest",
            &weft::pubsub::TopicSpec::inline(8).typed::<u64>().latest(),
        )
        .unwrap();
    let start = (1u64 << 32) - 3;
    preset_inline(&name, 0, start);
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<u64>("/latest").unwrap();
    for i in 0..6u64 {
        assert_eq!(p.publish_typed(&t, &i).unwrap(), start + i);
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), *m.value::<u64>().unwrap()), (start + i, i));
    }
    // A latest reader skips to the newest value, across the boundary, and never lags.
    for i in 6..16u64 {
        p.publish_typed(&t, &i).unwrap();
    }
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), *m.value::<u64>().unwrap()), (start + 15, 15));
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    assert_eq!(p.stats(&t).unwrap().published, start + 16);
}

/// `Subscription::position` is the 64-bit sequence of the next sample, across 2^32.
#[test]
fn position_counts_across_2_pow_32() {
    let name = unique("pq-pos");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let blocks = p.register("/blocks").unwrap();
    let start = (1u64 << 32) - 2;
    preset(&name, 0, SLOTS, start);
    let s = Subscriber::connect(&name).unwrap();
    let mut b = s.subscribe("/blocks").unwrap();
    assert_eq!(b.position(), start);
    for i in 0..4u64 {
        p.publish(&blocks, &i.to_le_bytes()).unwrap();
        assert_eq!(b.try_recv().unwrap().seq(), start + i);
        assert_eq!(b.position(), start + i + 1);
    }
}
