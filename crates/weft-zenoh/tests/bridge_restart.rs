//! A publisher in region A, a subscriber in region B, the sending bridge in its own process:
//! byte-exact and in order, and when that process is SIGKILLed and started again the
//! receiving bridge counts exactly what was missed as lag, and the stream continues.

mod common;

use common::{ChildBridge, Cleanup, check_payload, config, free_port, payload, unique};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::Bridge;

const TOPIC: &str = "/feed/x";

#[test]
fn restart_of_the_sending_bridge_is_counted_as_lag_and_the_stream_continues() {
    let (a, b) = (unique("restart-a"), unique("restart-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("restart");
    let port = free_port();
    // A ring slot keeps its block until the slot is reused: more blocks than slots.
    let shape = Config::default().blocks(4096 + 256).ring_slots(4096);

    // Region A and its publisher; region B with the topic registered, so that the
    // subscriber is in place before the first sample arrives.
    let publisher = Publisher::create(&a, &shape).unwrap();
    let topic = publisher.register(TOPIC).unwrap();
    let local_b = Publisher::create(&b, &shape).unwrap();
    local_b.register(TOPIC).unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut sub = subscriber.subscribe(TOPIC).unwrap();

    // The receiving bridge in this process listens; the sending one, in a child process,
    // connects (so that a restarted sender connects at once).
    let receiver = Bridge::start(
        config(&b, &prefix)
            .inbound("/feed/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let sender_config = config(&a, &prefix)
        .outbound("/feed/**")
        .unwrap()
        .connect(&format!("tcp/127.0.0.1:{port}"));
    let mut sender = ChildBridge::spawn(&sender_config, None);
    sender.expect(&format!("matched {TOPIC}"), Duration::from_secs(20));

    // Sample i is payload(i) and, the topic being new, has sequence i in region A.
    let published = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let pump = {
        let (published, stop) = (published.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            // Relaxed: flags and a progress counter between two test threads.
            while !stop.load(Ordering::Relaxed) {
                let seq = publisher.publish(&topic, &payload(i)).unwrap();
                assert_eq!(seq, i);
                i += 1;
                published.store(i, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
            i
        })
    };

    let mut got: Vec<u64> = Vec::new();
    let mut receive_until = |got: &mut Vec<u64>, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while got.len() < n {
            assert!(
                Instant::now() < deadline,
                "only {} samples arrived",
                got.len()
            );
            match sub.recv_timeout(Duration::from_millis(100)) {
                Ok(s) => got.push(check_payload(&s)),
                Err(weft::Error::Timeout) => {}
                Err(e) => panic!("the subscriber in B: {e}"),
            }
        }
    };

    receive_until(&mut got, 300);
    sender.kill();
    // Relaxed: as above.
    let at_kill = published.load(Ordering::Relaxed);
    common::eventually(Duration::from_secs(10), "publishing while down", || {
        published.load(Ordering::Relaxed) >= at_kill + 300
    });
    let before_restart = got.len();
    let mut sender = ChildBridge::spawn(&sender_config, None);
    sender.expect(&format!("matched {TOPIC}"), Duration::from_secs(20));
    receive_until(&mut got, before_restart + 300);
    stop.store(true, Ordering::Relaxed);
    let total = pump.join().unwrap();
    // Everything the restarted bridge forwards arrives: wait for the last one.
    let deadline = Instant::now() + Duration::from_secs(20);
    while *got.last().unwrap() != total - 1 {
        assert!(Instant::now() < deadline, "the last sample did not arrive");
        if let Ok(s) = sub.recv_timeout(Duration::from_millis(100)) {
            got.push(check_payload(&s));
        }
    }

    // In order, each once; the gaps are what the receiving bridge counted as lag.
    let mut gaps = 0;
    for w in got.windows(2) {
        assert!(
            w[1] > w[0],
            "out of order or repeated: {} then {}",
            w[0],
            w[1]
        );
        gaps += w[1] - w[0] - 1;
    }
    // The receiving bridge counts a sample once its publish returns, so the subscriber may
    // hold the last one a moment before the count does: wait for the count, then check it.
    common::eventually(Duration::from_secs(10), "the last sample counted", || {
        common::inbound_of(&receiver.stats(), TOPIC).samples >= got.len() as u64
    });
    let stats = receiver.stats();
    let inbound = common::inbound_of(&stats, TOPIC);
    assert!(gaps >= 300, "the restart lost only {gaps} samples: {stats}");
    assert_eq!(inbound.lagged, gaps, "{stats}");
    assert_eq!(inbound.samples, got.len() as u64, "{stats}");
    assert_eq!((inbound.refused, inbound.dropped), (0, 0), "{stats}");
    assert_eq!(got.len() as u64 + gaps, total - got[0]);
    // The restarted bridge's own counters, read from its process (some of what arrived after
    // the restart was still on its way from the killed one).
    let out = sender.stats();
    let forwarded = &out["outbound"][0];
    assert_eq!(forwarded["topic"], TOPIC);
    assert!(forwarded["samples"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(forwarded["lagged"], 0, "{out}");
}

/// Two bridges in this process, A's `/feed/**` out and B's in (prefix `prefix`, on a free
/// loopback port), started and matched on topic `t`, with sequence 0 published on `topic` and
/// received by B: the far side's counts start there.
fn pair_past_the_first_sample(
    (a, b, prefix): (&str, &str, &str),
    publisher: &Publisher,
    topic: &weft::pubsub::Topic,
    t: &str,
) -> (Bridge, Bridge) {
    let port = free_port();
    let receiver = Bridge::start(
        config(b, prefix)
            .inbound("/feed/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let sender = Bridge::start(
        config(a, prefix)
            .outbound("/feed/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    assert!(
        sender.wait_matched(t, Duration::from_secs(20)),
        "{}",
        sender.stats()
    );
    publish(publisher, topic, 0);
    common::eventually(Duration::from_secs(20), "the first sample", || {
        receiver.stats().inbound(t).is_some_and(|x| x.samples == 1)
    });
    (sender, receiver)
}

/// Publishes `i` (8 bytes), waiting while the pool has no free block.
fn publish(publisher: &Publisher, topic: &weft::pubsub::Topic, i: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Err(e) = publisher.publish(topic, &i.to_le_bytes()) {
        assert!(Instant::now() < deadline, "publishing {i}: {e}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A forwarder that falls a ring lap behind counts what it skipped (outbound `lagged`) and
/// goes on forwarding the same subscription; the far side counts the same gap. So every
/// sample is either delivered or counted as lagged, on both sides.
#[test]
fn a_lagging_forwarder_counts_its_loss_and_goes_on() {
    let (a, b) = (unique("lag-a"), unique("lag-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("lag");
    let t = "/feed/lag";
    // Four ring slots: a burst of publishes overtakes the forwarder.
    let publisher = Publisher::create(&a, &Config::default().ring_slots(4).blocks(512)).unwrap();
    let topic = publisher.register(t).unwrap();
    let (sender, receiver) = pair_past_the_first_sample((&a, &b, &prefix), &publisher, &topic, t);
    let mut n = 1u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while sender.stats().outbound(t).map_or(0, |x| x.lagged) == 0 {
        assert!(
            Instant::now() < deadline,
            "the forwarder never lagged: {}",
            sender.stats()
        );
        for _ in 0..2000 {
            publish(&publisher, &topic, n);
            n += 1;
        }
    }
    common::eventually(
        Duration::from_secs(30),
        "every sample sent or lagged",
        || {
            sender
                .stats()
                .outbound(t)
                .is_some_and(|x| x.samples + x.lagged == n)
        },
    );
    common::eventually(
        Duration::from_secs(30),
        "every sample received or lagged",
        || {
            receiver
                .stats()
                .inbound(t)
                .is_some_and(|x| x.samples + x.lagged == n)
        },
    );
    let (out, inb) = (sender.stats(), receiver.stats());
    let (o, i) = (out.outbound(t).unwrap(), inb.inbound(t).unwrap());
    assert_eq!((o.samples, o.lagged), (i.samples, i.lagged), "{out}{inb}");
    assert_eq!(
        (o.refused, o.dropped, i.refused, i.dropped),
        (0, 0, 0, 0),
        "{out}{inb}"
    );
}

/// A `Latest` topic's forwarder skips to the newest value: the skipped values are no loss, and
/// the far side does not count them as lagged.
#[test]
fn values_a_latest_topic_skips_are_no_lag_on_the_far_side() {
    let (a, b) = (unique("latest-a"), unique("latest-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("latest");
    let t = "/feed/newest";
    let publisher = Publisher::create(&a, &Config::default()).unwrap();
    let topic = publisher
        .register_with(t, weft::pubsub::TopicMode::Latest)
        .unwrap();
    let (sender, receiver) = pair_past_the_first_sample((&a, &b, &prefix), &publisher, &topic, t);
    // Bursts until the forwarder has skipped some values; each burst's last value arrives.
    let mut n = 1u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for _ in 0..500 {
            publish(&publisher, &topic, n);
            n += 1;
        }
        common::eventually(Duration::from_secs(20), "the newest value", || {
            let s = receiver.stats();
            s.inbound(t)
                .is_some_and(|x| x.samples == sender.stats().outbound(t).unwrap().samples)
                && sender.stats().outbound(t).unwrap().samples > 0
                && subscriber_newest(&b, t) == Some(n - 1)
        });
        if sender.stats().outbound(t).unwrap().samples < n {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the forwarder never skipped a value"
        );
    }
    let (out, inb) = (sender.stats(), receiver.stats());
    assert_eq!(out.outbound(t).unwrap().lagged, 0, "{out}");
    assert_eq!(inb.inbound(t).unwrap().lagged, 0, "{out}{inb}");
}

/// The newest value of `topic` in region `region` (8-byte index), if any.
fn subscriber_newest(region: &str, topic: &str) -> Option<u64> {
    let s = Subscriber::connect(region).ok()?;
    let mut sub = s.subscribe_with_history(topic, 1).ok()?;
    let v = sub.try_recv().ok()?;
    Some(u64::from_le_bytes(v[..8].try_into().ok()?))
}
