//! Pub/sub liveness across pid namespaces: a publisher whose pid this process cannot see is
//! judged by its heartbeat alone, which does not depend on its message rate; the bound on
//! noticing its death is the subscriber's `Config::liveness_timeout`.

mod common;

use common::{Cleanup, pid_namespaces_available, spawn_in_pid_namespace, unique};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber};
use weft::{Error, Role};

#[test]
fn a_publisher_in_another_pid_namespace_sending_once_a_second_is_alive_until_killed() {
    if !pid_namespaces_available() {
        // Needs CAP_SYS_ADMIN (root, as in CI); the /proc path is covered by pubsub_crash.
        eprintln!("not run: this process cannot create a pid namespace");
        return;
    }
    let name = unique("ps-pidns");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    p.register("/beat").unwrap();
    // A tighter bound than the default second, set by the subscriber.
    let bound = Duration::from_millis(500);
    let s = Subscriber::connect_with(&name, &Config::default().liveness_timeout(bound)).unwrap();
    let mut sub = s.subscribe("/beat").unwrap();
    drop(p);
    let mut peer = spawn_in_pid_namespace(&["pubsub-linger", &name, "/beat", "3", "1000"]);
    peer.expect("ready");
    // One message a second, twice the liveness bound: the heartbeat, not the traffic, keeps
    // the publisher alive.
    for i in 0..3u64 {
        let m = sub
            .recv_timeout(Duration::from_secs(10))
            .expect("the publisher sending once a second is alive");
        assert_eq!(&*m, &i.to_le_bytes());
    }
    peer.expect("sent");
    assert!(matches!(
        sub.recv_timeout(Duration::from_millis(1500)),
        Err(Error::Timeout)
    ));
    peer.kill9();
    let t = Instant::now();
    match sub.recv_timeout(Duration::from_secs(20)) {
        Err(Error::PeerDead {
            role: Role::Publisher,
            ..
        }) => {}
        other => panic!("expected PeerDead, got {:?}", other.map(|m| m.len())),
    }
    // The heartbeat goes stale after the 500 ms bound; allow for a loaded machine, but well
    // under the default second's detection.
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "detected after {:?}",
        t.elapsed()
    );
}
