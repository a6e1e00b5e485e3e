//! A topic unregistered in the region and registered again is bridged again, in both
//! directions: the outbound forwarder subscribes to the new registration (also when the old
//! one had been refused for its type), and the inbound side publishes into the new one. An
//! unregistered outbound topic leaves the statistics once its forwarder is done with it.

mod common;

use common::{
    Cleanup, config, eventually, free_port, put, raw_session, sending, unique, wait_subscribed,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber, Topic};
use weft_zenoh::Bridge;
use zenoh::Wait;

/// What a raw Zenoh subscriber received, as strings.
type Received = Arc<Mutex<Vec<String>>>;

fn listen(z: &zenoh::Session, key: String) -> (zenoh::pubsub::Subscriber<()>, Received) {
    let got: Received = Arc::default();
    let into = got.clone();
    let sub = z
        .declare_subscriber(key)
        .callback(move |s| {
            let text = String::from_utf8_lossy(&s.payload().to_bytes()).into_owned();
            into.lock().unwrap().push(text);
        })
        .wait()
        .unwrap();
    (sub, got)
}

/// Publishes `what` on `topic` until the raw subscriber has it: samples published before the
/// bridge's discovery finds the new registration are not forwarded, by design.
fn publish_until_received(publisher: &Publisher, topic: &Topic, what: &str, got: &Received) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !got.lock().unwrap().iter().any(|s| s == what) {
        assert!(
            Instant::now() < deadline,
            "{what:?} was never forwarded; received: {:?}",
            got.lock().unwrap()
        );
        publisher.publish(topic, what.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn an_outbound_topic_registered_again_is_forwarded_again() {
    let a = unique("rereg-out");
    let _clean = Cleanup(vec![a.clone()]);
    let prefix = unique("rereg-out");
    let port = free_port();
    // Two entries in the topic table: a forwarder that kept its subscription to an
    // unregistered topic would keep its entry from being reused, and registering would fail.
    let local = Publisher::create(&a, &Config::default().topics(2)).unwrap();
    let first = local.register("/u/x").unwrap();
    let bridge = Bridge::start(
        config(&a, &prefix)
            .outbound("/u/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let z = raw_session(port);
    let (_sub, got) = listen(&z, format!("{prefix}/u/**"));
    assert!(bridge.wait_matched("/u/x", Duration::from_secs(20)));
    publish_until_received(&local, &first, "first", &got);

    // Registered again, four times: each registration is a new topic with sequences from 0.
    let mut current = first;
    for round in ["second", "third", "fourth", "fifth"] {
        local.unregister(&current).unwrap();
        current = local.register("/u/x").unwrap();
        publish_until_received(&local, &current, round, &got);
    }
    let stats = bridge.stats();
    let t = stats.outbound("/u/x").unwrap();
    assert_eq!((t.lagged, t.refused, t.dropped), (0, 0, 0), "{stats}");
    assert_eq!(t.last_error, None, "{stats}");
}

#[test]
fn a_topic_refused_for_its_type_is_forwarded_once_registered_with_the_right_type() {
    let a = unique("rereg-ty");
    let _clean = Cleanup(vec![a.clone()]);
    let prefix = unique("rereg-ty");
    let port = free_port();
    let local = Publisher::create(&a, &Config::default()).unwrap();
    let wrong = local.register_typed::<u32>("/t/x").unwrap();
    let bridge = Bridge::builder(
        config(&a, &prefix)
            .outbound("/t/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<u64>("/t/**")
    .unwrap()
    .start()
    .unwrap();
    let z = raw_session(port);
    let (_sub, got) = listen(&z, format!("{prefix}/t/**"));
    eventually(Duration::from_secs(20), "the u32 topic refused", || {
        bridge
            .stats()
            .outbound("/t/x")
            .is_some_and(|t| t.refused == 1)
    });

    local.unregister(&wrong).unwrap();
    let right = local.register_typed::<u64>("/t/x").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the u64 topic was never forwarded: {}",
            bridge.stats()
        );
        local.publish_typed(&right, &7u64).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    // Refused once (the u32 registration), not once per discovery round.
    let stats = bridge.stats();
    assert_eq!(stats.outbound("/t/x").unwrap().refused, 1, "{stats}");
}

#[test]
fn an_inbound_topic_registered_again_receives_again() {
    let b = unique("rereg-in");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("rereg-in");
    let port = free_port();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    let first = local.register("/u/x").unwrap();
    let bridge = Bridge::start(
        config(&b, &prefix)
            .inbound("/u/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let z = raw_session(port);
    let key = format!("{prefix}/u/x");
    wait_subscribed(&z, &key);
    put(&z, &key, b"one", None);
    eventually(Duration::from_secs(20), "the first sample", || {
        bridge
            .stats()
            .inbound("/u/x")
            .is_some_and(|t| t.samples == 1)
    });

    // The local topic is unregistered and registered again: the bridge's handle is stale.
    local.unregister(&first).unwrap();
    let again = local.register("/u/x").unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut sub = subscriber.subscribe("/u/x").unwrap();
    put(&z, &key, b"two", None);
    let s = sub
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("the new /u/x received nothing ({e}): {}", bridge.stats()));
    assert_eq!(&*s, b"two");

    // Unregistered and not registered again: the bridge registers it anew, as for any topic.
    local.unregister(&again).unwrap();
    drop(sub);
    put(&z, &key, b"three", None);
    eventually(Duration::from_secs(20), "the third sample", || {
        bridge
            .stats()
            .inbound("/u/x")
            .is_some_and(|t| t.samples == 3)
    });
    let mut sub = subscriber.subscribe_with_history("/u/x", 1).unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"three");
    let stats = bridge.stats();
    let t = common::inbound_of(&stats, "/u/x");
    assert_eq!((t.refused, t.dropped), (0, 0), "{stats}");
}

/// A bridge over topics that come and go does not keep them: an outbound topic unregistered in
/// the region loses its statistics entry once its forwarder has sent what was published
/// before, and gets a fresh one if it is registered again.
#[test]
fn unregistered_outbound_topics_leave_the_statistics() {
    const N: usize = 20;
    let a = unique("gone-out");
    let _clean = Cleanup(vec![a.clone()]);
    let prefix = unique("gone-out");
    let port = free_port();
    let local = Publisher::create(&a, &Config::default()).unwrap();
    let names: Vec<String> = (0..N).map(|i| format!("/g/t{i}")).collect();
    let topics: Vec<Topic> = names.iter().map(|n| local.register(n).unwrap()).collect();
    let kept = local.register("/g/kept").unwrap();
    let bridge = Bridge::start(sending(&a, &prefix, "/g/**", port)).unwrap();
    let z = raw_session(port);
    let (_sub, got) = listen(&z, format!("{prefix}/g/**"));
    for n in names.iter().map(String::as_str).chain(["/g/kept"]) {
        assert!(bridge.wait_matched(n, Duration::from_secs(20)), "{n}");
    }

    // One last sample on each, then unregistered: the sample still goes out.
    for (t, n) in topics.iter().zip(&names) {
        local.publish(t, n.as_bytes()).unwrap();
        local.unregister(t).unwrap();
    }
    eventually(Duration::from_secs(20), "every last sample", || {
        got.lock().unwrap().len() == N
    });
    eventually(Duration::from_secs(20), "every forwarder done", || {
        let s = bridge.stats();
        s.outbound
            .iter()
            .all(|t| t.topic == "/g/kept" || !t.matched)
    });
    let stats = bridge.stats();
    let left: Vec<&str> = stats.outbound.iter().map(|t| t.topic.as_str()).collect();
    assert_eq!(left, ["/g/kept"], "{stats}");

    // Registered again: a new entry, counting the new registration only.
    let again = local.register("/g/t0").unwrap();
    publish_until_received(&local, &again, "again", &got);
    eventually(
        Duration::from_secs(20),
        "counts of the new registration",
        || {
            let arrived = got.lock().unwrap().iter().filter(|s| *s == "again").count();
            bridge
                .stats()
                .outbound("/g/t0")
                .is_some_and(|t| t.samples == arrived as u64)
        },
    );
    drop(kept);
}

/// A topic registered again may land in another entry of the table, whose sequences go on
/// from that entry's count (300 here): the jump is no loss, and the far side counts none.
#[test]
fn a_topic_registered_again_in_another_entry_is_no_lag() {
    let (a, b, p, port) = (
        unique("jump-a"),
        unique("jump-b"),
        unique("jump"),
        free_port(),
    );
    let _c = Cleanup(vec![a.clone(), b.clone()]);
    let t = Duration::from_secs(20);
    let local = Publisher::create(&a, &Config::default().topics(2)).unwrap();
    let first = local.register("/q/x").unwrap(); // entry 0
    let other = local.register("/z/o").unwrap(); // entry 1, left at sequence 300
    for _ in 0..300 {
        local.publish(&other, b"o").unwrap();
    }
    local.unregister(&other).unwrap();
    let tx = Bridge::start(sending(&a, &p, "/q/**", port)).unwrap();
    let rx = Bridge::start(common::receiving(&b, &p, "/q/**", port)).unwrap();
    let arrived = |n| {
        eventually(t, "in B", || {
            rx.stats().inbound("/q/x").is_some_and(|s| s.samples == n)
        })
    };
    assert!(tx.wait_matched("/q/x", t));
    for _ in 0..3 {
        local.publish(&first, b"x").unwrap();
    }
    arrived(3);
    // A local subscription keeps entry 0 while it drains: /q/x comes back in entry 1.
    let _holder = Subscriber::connect(&a).unwrap().subscribe("/q/x").unwrap();
    local.unregister(&first).unwrap();
    eventually(t, "the old forwarder done", || {
        tx.stats().outbound("/q/x").is_none()
    });
    let second = local.register("/q/x").unwrap();
    assert!(tx.wait_matched("/q/x", t));
    assert_eq!(local.publish(&second, b"y").unwrap(), 300);
    arrived(4);
    let s = rx.stats();
    assert_eq!(
        common::inbound_of(&s, "/q/x").lagged,
        0,
        "nothing was lost: {s}"
    );
}

/// A topic refused for its type is counted once, however many discovery rounds look at it
/// again while it stays registered with the wrong type.
#[test]
fn a_topic_refused_for_its_type_is_counted_once_over_many_rounds() {
    let a = unique("refused-once");
    let _clean = Cleanup(vec![a.clone()]);
    let prefix = unique("refused-once");
    let local = Publisher::create(&a, &Config::default()).unwrap();
    let _wrong = local.register_typed::<u32>("/t/x").unwrap();
    let bridge = Bridge::builder(config(&a, &prefix).outbound("/t/**").unwrap())
        .typed::<u64>("/t/**")
        .unwrap()
        .start()
        .unwrap();
    eventually(Duration::from_secs(20), "the u32 topic refused", || {
        bridge
            .stats()
            .outbound("/t/x")
            .is_some_and(|t| t.refused >= 1)
    });
    // Two more topics, each found by a later round than the one before: the round that found
    // /t/y looked at /t/x again, and was over before /t/z was found.
    for t in ["/t/y", "/t/z"] {
        local.register_typed::<u64>(t).unwrap();
        eventually(Duration::from_secs(20), t, || {
            bridge.stats().outbound(t).is_some()
        });
    }
    let stats = bridge.stats();
    assert_eq!(stats.outbound("/t/x").unwrap().refused, 1, "{stats}");
}
