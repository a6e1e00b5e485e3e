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
