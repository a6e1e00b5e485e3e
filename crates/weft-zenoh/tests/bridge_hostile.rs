//! A far peer that sends whatever it likes cannot grow the receiving bridge's memory without
//! bound: keys refused before they became topics share one statistics entry beyond a bound,
//! and each topic remembers the sequences of a bounded number of origins (the least recently
//! seen one is forgotten, and starts afresh when it comes back).

mod common;

use common::{Cleanup, config, eventually, free_port, put, raw_session, unique, wait_subscribed};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::Bridge;
use weft_zenoh::wire::SampleHeader;

#[test]
fn refused_keys_beyond_a_bound_share_one_entry() {
    let b = unique("hostile-keys");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("hostile-keys");
    let port = free_port();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    // Every /h/ topic must carry a u64: the samples below carry no type, so each key is
    // refused before anything is registered.
    let bridge = Bridge::builder(
        config(&b, &prefix)
            .inbound("/h/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<u64>("/h/**")
    .unwrap()
    .start()
    .unwrap();
    let z = raw_session(port);
    wait_subscribed(&z, &format!("{prefix}/h/k0"));
    let n = 2000u64;
    for i in 0..n {
        put(&z, &format!("{prefix}/h/k{i}"), &i.to_le_bytes(), None);
    }
    eventually(Duration::from_secs(30), "every key refused", || {
        bridge
            .stats()
            .inbound
            .iter()
            .map(|t| t.refused)
            .sum::<u64>()
            == n
    });

    let stats = bridge.stats();
    assert!(
        stats.inbound.len() < n as usize / 4,
        "{} inbound entries for {n} refused keys",
        stats.inbound.len()
    );
    // The first keys have their own entries; the rest are counted under `/**`, whose last
    // error names the key.
    assert_eq!(common::inbound_of(&stats, "/h/k0").refused, 1);
    let rest = common::inbound_of(&stats, "/**");
    assert_eq!(rest.key, format!("{prefix}/**"));
    assert_eq!(rest.refused, n - (stats.inbound.len() as u64 - 1));
    let why = rest.last_error.unwrap();
    assert!(why.contains(&format!("/h/k{}", n - 1)), "{why}");
    // Nothing was registered in the region.
    assert!(
        Subscriber::connect(&b)
            .unwrap()
            .topics()
            .unwrap()
            .is_empty()
    );
    drop(local);
}

#[test]
fn an_origin_pushed_out_by_many_newer_ones_starts_afresh() {
    let b = unique("hostile-origins");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("hostile-origins");
    let port = free_port();
    let bridge = Bridge::start(
        config(&b, &prefix)
            .inbound("/g/x")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let z = raw_session(port);
    let key = format!("{prefix}/g/x");
    wait_subscribed(&z, &key);
    let send = |origin: u64, seq: u64| {
        let h = SampleHeader {
            instance: 1,
            origin,
            seq,
            excluded: 0,
            ty: None,
        };
        put(&z, &key, b"x", Some(&h));
    };
    let counted = |samples: u64| {
        eventually(Duration::from_secs(30), "every sample published", || {
            bridge
                .stats()
                .inbound("/g/x")
                .is_some_and(|t| t.samples == samples)
        });
        bridge.stats().inbound("/g/x").unwrap().lagged
    };

    // An origin seen a moment ago: its gap (1 and 2 missing) is counted.
    send(7, 0);
    send(7, 3);
    assert_eq!(counted(2), 2);
    // A thousand other origins (a sender-chosen field): origin 7 is forgotten, and its next
    // sample starts its count again instead of counting 4..=9 as lost.
    let others = 1000;
    for o in 0..others {
        send(1000 + o, 0);
    }
    send(7, 10);
    assert_eq!(counted(2 + others + 1), 2, "{}", bridge.stats());
}

/// A key Zenoh carries under an inbound pattern that is no weft topic name (`a:b`) is refused
/// and counted as refused (what the far side sent is not acceptable), not as dropped (an
/// error of this side), and says why.
#[test]
fn a_key_that_is_no_topic_name_is_refused_and_counted() {
    let (b, p, port) = (unique("badname"), unique("badname"), free_port());
    let _c = Cleanup(vec![b.clone()]);
    let c = config(&b, &p)
        .inbound("/n/*")
        .unwrap()
        .listen(&format!("tcp/127.0.0.1:{port}"));
    let bridge = Bridge::start(c).unwrap();
    let z = raw_session(port);
    wait_subscribed(&z, &format!("{p}/n/ok"));
    put(&z, &format!("{p}/n/a:b"), b"lost", None);
    put(&z, &format!("{p}/n/ok"), b"ok", None);
    eventually(Duration::from_secs(20), "ok", || {
        bridge
            .stats()
            .inbound("/n/ok")
            .is_some_and(|t| t.samples == 1)
    });
    let s = bridge.stats();
    let counted: u64 = s.inbound.iter().map(|t| t.refused + t.dropped).sum();
    assert_eq!(counted, 1, "{s}");
    let bad = common::inbound_of(&s, "/n/a:b");
    assert_eq!((bad.refused, bad.dropped), (1, 0), "{s}");
    let why = bad.last_error.unwrap_or_default();
    assert!(why.contains("no weft topic"), "{why}");
}

/// More matching topics than one participant may hold subscriptions and samples for
/// (`max_held` 8, 12 topics): every topic is forwarded (the bridge spreads them over several
/// subscriber handles), not only those that fit, with samples still received on each.
#[test]
fn more_topics_than_one_participant_holds_are_all_forwarded() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use zenoh::Wait;
    let (a, p, port) = (unique("held"), unique("held"), free_port());
    let _c = Cleanup(vec![a.clone()]);
    let t = Duration::from_secs(20);
    let local = Publisher::create(&a, &Config::default().topics(16).max_held(8)).unwrap();
    let names: Vec<String> = (0..12).map(|i| format!("/m/t{i}")).collect();
    let topics: Vec<_> = names.iter().map(|n| local.register(n).unwrap()).collect();
    let tx = Bridge::start(common::sending(&a, &p, "/m/**", port)).unwrap();
    let z = raw_session(port);
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    let _s = z
        .declare_subscriber(format!("{p}/m/**"))
        .callback(move |_| {
            g.fetch_add(1, Relaxed);
        })
        .wait()
        .unwrap();
    for n in &names {
        assert!(tx.wait_matched(n, t), "{n}: {}", tx.stats());
    }
    for round in 1..=3u64 {
        for topic in &topics {
            local.publish(topic, b"x").unwrap();
        }
        eventually(t, "every topic forwarded", || {
            got.load(Relaxed) == 12 * round
        });
    }
}

/// A sample whose attachment is no bridge header is refused and counted, not published as if
/// it came from a plain Zenoh publisher.
#[test]
fn a_sample_with_a_malformed_header_is_refused() {
    use zenoh::Wait;
    let (b, p, port) = (unique("badhdr"), unique("badhdr"), free_port());
    let _c = Cleanup(vec![b.clone()]);
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local.register("/m/x").unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut sub = subscriber.subscribe("/m/x").unwrap();
    let bridge = Bridge::start(
        config(&b, &p)
            .inbound("/m/*")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let z = raw_session(port);
    let key = format!("{p}/m/x");
    wait_subscribed(&z, &key);
    z.put(&key, b"forged".to_vec())
        .congestion_control(zenoh::qos::CongestionControl::Block)
        .attachment(b"not a bridge header, not at all".to_vec())
        .wait()
        .unwrap();
    put(&z, &key, b"ok", None);
    eventually(Duration::from_secs(20), "ok", || {
        bridge
            .stats()
            .inbound("/m/x")
            .is_some_and(|t| t.samples >= 1)
    });
    let first = sub.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        &*first, b"ok",
        "the sample with the malformed header was published"
    );
    let s = bridge.stats();
    let refused: u64 = s.inbound.iter().map(|t| t.refused).sum();
    assert_eq!(refused, 1, "{s}");
}
