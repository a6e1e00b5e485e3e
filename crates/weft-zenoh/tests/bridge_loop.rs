//! Two regions bridged both ways on the same pattern: every sample arrives exactly once in
//! each region, none comes back to where it was published; also after a topic was unregistered
//! and registered again elsewhere in the topic table.

mod common;

use common::{Cleanup, config, eventually, free_port, put, raw_session, unique, wait_subscribed};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber, Subscription};
use weft_zenoh::wire::SampleHeader;
use weft_zenoh::{Bridge, TypeMeta};
use zenoh::Wait;

const TOPICS: [&str; 3] = ["/chat/a", "/chat/b", "/chat/both"];
const N: usize = 200;

/// Receives on `sub` until nothing has come for `quiet`; counts each payload.
fn collect(sub: &mut Subscription, quiet: Duration, into: &mut BTreeMap<String, usize>) {
    loop {
        match sub.recv_timeout(quiet) {
            Ok(s) => {
                *into
                    .entry(String::from_utf8_lossy(&s).into_owned())
                    .or_default() += 1
            }
            Err(weft::Error::Timeout) => return,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn both_directions_on_one_pattern_deliver_each_sample_once() {
    let (a, b) = (unique("loop-a"), unique("loop-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("loop");
    let port = free_port();
    let shape = Config::default().ring_slots(2048).blocks(2048 + 256);

    let pa = Publisher::create(&a, &shape).unwrap();
    let pb = Publisher::create(&b, &shape).unwrap();
    let ta: Vec<_> = TOPICS.iter().map(|t| pa.register(t).unwrap()).collect();
    let tb: Vec<_> = TOPICS.iter().map(|t| pb.register(t).unwrap()).collect();
    let (sa, sb) = (
        Subscriber::connect(&a).unwrap(),
        Subscriber::connect(&b).unwrap(),
    );
    let mut subs_a: Vec<_> = TOPICS.iter().map(|t| sa.subscribe(t).unwrap()).collect();
    let mut subs_b: Vec<_> = TOPICS.iter().map(|t| sb.subscribe(t).unwrap()).collect();

    let one = Bridge::start(
        config(&a, &prefix)
            .outbound("/chat/**")
            .unwrap()
            .inbound("/chat/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let two = Bridge::start(
        config(&b, &prefix)
            .outbound("/chat/**")
            .unwrap()
            .inbound("/chat/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    for t in TOPICS {
        assert!(one.wait_matched(t, Duration::from_secs(20)), "{t} from A");
        assert!(two.wait_matched(t, Duration::from_secs(20)), "{t} from B");
    }

    // A publishes on /chat/a and /chat/both, B on /chat/b and /chat/both.
    for i in 0..N {
        pa.publish(&ta[0], format!("a{i}").as_bytes()).unwrap();
        pa.publish(&ta[2], format!("A{i}").as_bytes()).unwrap();
        pb.publish(&tb[1], format!("b{i}").as_bytes()).unwrap();
        pb.publish(&tb[2], format!("B{i}").as_bytes()).unwrap();
    }

    let expect = |tags: &[&str]| -> BTreeMap<String, usize> {
        tags.iter()
            .flat_map(|t| (0..N).map(move |i| (format!("{t}{i}"), 1)))
            .collect()
    };
    let wanted = [expect(&["a"]), expect(&["b"]), expect(&["A", "B"])];
    let mut got: Vec<Vec<BTreeMap<String, usize>>> = vec![vec![BTreeMap::new(); 3]; 2];
    // Everything expected, then a quiet half second after which nothing more may be there.
    let deadline = Instant::now() + Duration::from_secs(20);
    for (r, subs) in [&mut subs_a, &mut subs_b].into_iter().enumerate() {
        for (k, sub) in subs.iter_mut().enumerate() {
            while got[r][k].len() < wanted[k].len() && Instant::now() < deadline {
                collect(sub, Duration::from_millis(100), &mut got[r][k]);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    for (r, subs) in [&mut subs_a, &mut subs_b].into_iter().enumerate() {
        for (k, sub) in subs.iter_mut().enumerate() {
            collect(sub, Duration::from_millis(1), &mut got[r][k]);
            let (region, topic) = (["A", "B"][r], TOPICS[k]);
            let twice: Vec<_> = got[r][k].iter().filter(|(_, n)| **n > 1).take(5).collect();
            assert!(
                twice.is_empty(),
                "{topic} in {region}: received more than once: {twice:?}"
            );
            assert_eq!(got[r][k], wanted[k], "{topic} in {region}");
        }
    }

    // Each bridge skipped exactly what it had bridged in; nothing was lost or refused.
    for (bridge, own) in [
        (&one, ["/chat/b", "/chat/both"]),
        (&two, ["/chat/a", "/chat/both"]),
    ] {
        let stats = bridge.stats();
        for t in own {
            assert_eq!(stats.outbound(t).unwrap().looped, N as u64, "{t}: {stats}");
            assert_eq!(stats.inbound(t).unwrap().samples, N as u64, "{t}: {stats}");
        }
        for t in stats.inbound.iter().chain(&stats.outbound) {
            assert_eq!((t.lagged, t.refused, t.dropped), (0, 0, 0), "{stats}");
        }
    }
}

/// The loop guard belongs to one registration of a topic. Here the bridge publishes into `/r/x`
/// (sequence 10 of its first registration) before its forwarder subscribes; the topic is then
/// unregistered and, while a subscription still drains the old entry, registered again in the
/// other entry, whose sequences start at 0. What the bridge publishes into the new
/// registration must not go back out, whatever the old registration left in its guard.
///
/// Deterministic: the bridge's discovery cannot join the region (every participant row is
/// taken) until the test frees a row, so its forwarder comes only after the first sample.
#[test]
fn a_topic_registered_again_in_another_entry_echoes_nothing() {
    let b = unique("loop-again");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("loop-again");
    let port = free_port();
    let key = format!("{prefix}/r/x");
    // Rows: this publisher, the subscriber that keeps the old entry, the bridge's publisher,
    // and the gate (its row is the discovery's once dropped). Typed topics: the bridge then
    // needs no reader handle of its own.
    let shape = Config::default().topics(2).participants(4);
    let local = Publisher::create(&b, &shape).unwrap();
    let first = local.register_typed::<u64>("/r/x").unwrap();
    for i in 0..10u64 {
        local.publish_typed(&first, &i).unwrap();
    }
    let holder = Subscriber::connect(&b).unwrap();
    let draining = holder.subscribe("/r/x").unwrap();
    let gate = Subscriber::connect(&b).unwrap();
    let bridge = Bridge::builder(
        config(&b, &prefix)
            .outbound("/r/**")
            .unwrap()
            .inbound("/r/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<u64>("/r/**")
    .unwrap()
    .start()
    .unwrap();
    eventually(Duration::from_secs(20), "discovery kept out", || {
        bridge.last_error().is_some()
    });

    // The far side: puts typed samples, and records what comes back from other sessions.
    let z = raw_session(port);
    let got: Arc<Mutex<Vec<u64>>> = Arc::default();
    let into = got.clone();
    let _listener = z
        .declare_subscriber(format!("{prefix}/r/**"))
        .allowed_origin(zenoh::sample::Locality::Remote)
        .callback(move |s| {
            let bytes = s.payload().to_bytes();
            let v = u64::from_le_bytes(bytes.as_ref().try_into().expect("a u64"));
            into.lock().unwrap().push(v);
        })
        .wait()
        .unwrap();
    wait_subscribed(&z, &key);
    let send = |seq: u64, value: u64| {
        let h = SampleHeader {
            instance: 1,
            origin: 2,
            seq,
            excluded: 0,
            ty: Some(TypeMeta::of::<u64>()),
        };
        put(&z, &key, &value.to_le_bytes(), Some(&h));
    };
    let inbound = |n: u64| {
        eventually(Duration::from_secs(20), "the far sample published", || {
            bridge
                .stats()
                .inbound("/r/x")
                .is_some_and(|t| t.samples == n)
        })
    };

    // Published into the first registration (sequence 10), with no forwarder yet.
    send(0, 1000);
    inbound(1);
    assert!(
        bridge.stats().outbound("/r/x").is_none(),
        "{}",
        bridge.stats()
    );
    // The forwarder subscribes (after sequence 10), and sees the topic unregistered.
    drop(gate);
    assert!(bridge.wait_matched("/r/x", Duration::from_secs(20)));
    local.unregister(&first).unwrap();
    eventually(Duration::from_secs(20), "the forwarder gone", || {
        bridge.stats().outbound("/r/x").is_none_or(|t| !t.matched)
    });
    // Registered again: the old entry is still subscribed, so the new topic takes the other
    // one, at sequence 0.
    let second = local.register_typed::<u64>("/r/x").unwrap();
    assert!(bridge.wait_matched("/r/x", Duration::from_secs(20)));

    // The bridge publishes the next far sample into the new registration: skipped on the way
    // out. A local sample after it goes out.
    send(1, 1001);
    inbound(2);
    local.publish_typed(&second, &7u64).unwrap();
    eventually(
        Duration::from_secs(20),
        "the local sample forwarded",
        || got.lock().unwrap().contains(&7),
    );
    let stats = bridge.stats();
    let out = stats.outbound("/r/x").unwrap();
    assert_eq!(
        *got.lock().unwrap(),
        [7],
        "a sample the bridge published came back out: {stats}"
    );
    assert_eq!((out.samples, out.looped), (1, 1), "{stats}");
    drop(draining);
}
