//! Samples larger than a Zenoh batch (Zenoh fragments them and hands them over in several
//! slices) arrive whole and byte-exact; one larger than the far region's blocks is dropped
//! and counted, and the stream goes on.

mod common;

use common::{Cleanup, config, eventually, free_port, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::Bridge;

fn big(i: u8, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k as u8).wrapping_mul(31) ^ i).collect()
}

#[test]
fn fragmented_samples_arrive_whole_and_oversized_ones_are_counted() {
    let (a, b) = (unique("large-a"), unique("large-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("large");
    let port = free_port();
    let publisher = Publisher::create(
        &a,
        &Config::default()
            .block_size(2 << 20)
            .blocks(16)
            .ring_slots(4),
    )
    .unwrap();
    let topic = publisher.register("/frames/cam").unwrap();
    // The far region's blocks hold 1 MiB: the 2 MiB sample cannot be published there.
    let local_b = Publisher::create(
        &b,
        &Config::default()
            .block_size(1 << 20)
            .blocks(16)
            .ring_slots(4),
    )
    .unwrap();
    local_b.register("/frames/cam").unwrap();
    let mut sub = Subscriber::connect(&b)
        .unwrap()
        .subscribe("/frames/cam")
        .unwrap();
    let sender = Bridge::start(
        config(&a, &prefix)
            .outbound("/frames/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let receiver = Bridge::start(
        config(&b, &prefix)
            .inbound("/frames/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    assert!(sender.wait_matched("/frames/cam", Duration::from_secs(20)));

    let sizes = [(1u8, 1 << 20), (2, 2 << 20), (3, 300_001)];
    for (i, len) in sizes {
        publisher.publish(&topic, &big(i, len)).unwrap();
        // One at a time: the far ring has 4 slots.
        eventually(Duration::from_secs(20), "the sample handled", || {
            let s = receiver.stats();
            s.inbound("/frames/cam")
                .is_some_and(|t| t.samples + t.dropped == i as u64)
        });
    }
    for (i, len) in [sizes[0], sizes[2]] {
        let s = sub.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(s.len(), len);
        assert!(*s == *big(i, len), "sample {i} is not byte-exact");
    }
    let stats = receiver.stats();
    let t = common::inbound_of(&stats, "/frames/cam");
    assert_eq!((t.samples, t.dropped, t.lagged), (2, 1, 0), "{stats}");
    assert!(t.last_error.unwrap().contains("does not fit"), "{stats}");
}
