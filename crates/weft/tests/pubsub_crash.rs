//! SIGKILLed participants: what they held comes back to the pool (explicit reclaim, a new
//! participant joining, a publisher under pool pressure), and the topic keeps working.

mod common;

use common::{Cleanup, Peer, unique};
use weft::pubsub::{Config, Publisher, Subscriber};

#[test]
fn a_killed_subscriber_holding_200_samples_is_reclaimed() {
    let name = unique("pc-sub");
    let _c = Cleanup(name.clone());
    let cfg = Config::default().blocks(512).ring_slots(256).max_held(256);
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/held").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/held", "200"]);
    peer.expect("ready");
    for i in 0..200u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    peer.expect("holding 200");
    // Overwrite the ring: the blocks the subscriber holds stay out of the pool.
    for i in 0..256u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().free_blocks, 512 - 256 - 200);
    peer.kill9();
    assert_eq!(p.reclaim().unwrap(), 200);
    // Full again: only the ring's descriptors hold blocks.
    assert_eq!(p.region_info().free_blocks, 512 - 256);
    assert_eq!(p.reclaim().unwrap(), 0);
    // The topic keeps working.
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/held").unwrap();
    p.publish(&t, b"after").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"after");
}

#[test]
fn a_publisher_killed_mid_loan_leaks_nothing_when_someone_joins() {
    let name = unique("pc-loan");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().blocks(64)).unwrap();
    let t = p.register("/loan").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/loan", "10"]);
    peer.expect("ready 10");
    assert_eq!(p.region_info().free_blocks, 54);
    peer.kill9();
    // A new participant reclaims the dead one's blocks as it joins.
    let _s = Subscriber::connect(&name).unwrap();
    assert_eq!(p.region_info().free_blocks, 64);
    p.publish(&t, b"fine").unwrap();
}

#[test]
fn a_publisher_under_pool_pressure_reclaims_a_dead_publishers_loans() {
    let name = unique("pc-press");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().blocks(16).ring_slots(4)).unwrap();
    let t = p.register("/press").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/press", "16"]);
    peer.expect("ready 16");
    assert_eq!(p.region_info().free_blocks, 0);
    peer.kill9();
    // The pool is empty: this loan reclaims the dead publisher's 16 blocks first.
    for i in 0..32u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().free_blocks, 16 - 4);
}
