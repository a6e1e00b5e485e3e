//! Inbound patterns that overlap (`/o/**` and `/o/x`) deliver each sample once: the first
//! pattern in the configuration that matches a topic handles its samples.

mod common;

use common::{Cleanup, config, eventually, free_port, put, raw_session, unique, wait_subscribed};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, Subscription};
use weft_zenoh::Bridge;

const N: u8 = 10;

/// Receives until `last` arrives; returns everything up to and including it.
fn until(sub: &mut Subscription, last: &[u8]) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    loop {
        let s = sub
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{e} after {got:?}"));
        got.push(s.to_vec());
        if &*s == last {
            return got;
        }
    }
}

#[test]
fn overlapping_inbound_patterns_deliver_each_sample_once() {
    let b = unique("overlap");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("overlap");
    let port = free_port();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local.register("/o/x").unwrap();
    local.register("/p/x").unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut ox = subscriber.subscribe("/o/x").unwrap();
    let mut px = subscriber.subscribe("/p/x").unwrap();
    // /o/x matches the first and the third pattern; /p/x only the second.
    let bridge = Bridge::start(
        config(&b, &prefix)
            .inbound("/o/**")
            .unwrap()
            .inbound("/p/x")
            .unwrap()
            .inbound("/o/x")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let z = raw_session(port);
    for key in ["/o/x", "/p/x"] {
        wait_subscribed(&z, &format!("{prefix}{key}"));
    }

    for i in 0..N {
        put(&z, &format!("{prefix}/o/x"), &[i], None);
        put(&z, &format!("{prefix}/p/x"), &[100 + i], None);
    }
    put(&z, &format!("{prefix}/o/x"), b"end", None);
    put(&z, &format!("{prefix}/p/x"), b"end", None);

    let want = |base: u8| -> Vec<Vec<u8>> {
        (0..N)
            .map(|i| vec![base + i])
            .chain([b"end".to_vec()])
            .collect()
    };
    assert_eq!(until(&mut ox, b"end"), want(0), "/o/x");
    assert_eq!(until(&mut px, b"end"), want(100), "/p/x");
    let n = N as u64 + 1;
    eventually(Duration::from_secs(20), "both topics counted", || {
        let s = bridge.stats();
        ["/o/x", "/p/x"]
            .iter()
            .all(|t| s.inbound(t).is_some_and(|t| t.samples >= n))
    });
    let stats = bridge.stats();
    for t in ["/o/x", "/p/x"] {
        assert_eq!(common::inbound_of(&stats, t).samples, n, "{t}: {stats}");
    }
}
