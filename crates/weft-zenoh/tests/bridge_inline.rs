//! Existing topics on the receiving side: a bridge that finds a topic registered inline in its
//! region (plain, latest-value, typed) joins it as it is and copies each sample into its slot,
//! and one registered in the blocks `Latest` mode stays a latest-value topic; a sample of
//! another length than an inline topic's is refused with the reason, never published. A
//! single-publisher topic takes the bridge as its publisher only once its local holder is gone.

mod common;

use common::{Cleanup, eventually, free_port, receiving, sending, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft_zenoh::Bridge;

const N: u64 = 50;

#[test]
fn samples_arrive_in_existing_topics_as_they_are() {
    let (a, b) = (unique("inl-a"), unique("inl-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("inline");
    let port = free_port();

    // A: the source topics, blocks, 8 bytes a message (and one of 12 bytes); the typed one
    // carries its type across.
    let source = Publisher::create(&a, &Config::default()).unwrap();
    let names = [
        "/inl/plain",
        "/inl/latest",
        "/inl/typed",
        "/inl/newest",
        "/inl/wrong",
    ];
    let topics: Vec<_> = names
        .iter()
        .map(|&t| match t {
            "/inl/typed" => source.register_typed::<u64>(t),
            _ => source.register(t),
        })
        .map(Result::unwrap)
        .collect();

    // B: the same topics exist already, registered inline by a local process.
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local
        .register_spec("/inl/plain", &TopicSpec::inline(8))
        .unwrap();
    local
        .register_spec("/inl/latest", &TopicSpec::inline(8).latest())
        .unwrap();
    local
        .register_spec("/inl/typed", &TopicSpec::inline(8).typed::<u64>())
        .unwrap();
    local
        .register_with("/inl/newest", TopicMode::Latest)
        .unwrap();
    local
        .register_spec("/inl/wrong", &TopicSpec::inline(8))
        .unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut plain = subscriber.subscribe("/inl/plain").unwrap();
    let mut latest = subscriber.subscribe("/inl/latest").unwrap();
    let mut typed = subscriber.subscribe_typed::<u64>("/inl/typed").unwrap();
    let mut newest = subscriber.subscribe("/inl/newest").unwrap();

    let sender = Bridge::start(sending(&a, &prefix, "/inl/**", port)).unwrap();
    // The typed topic goes through a bridge that knows the Rust type (a typed rule).
    let receiver = Bridge::builder(receiving(&b, &prefix, "/inl/**", port))
        .typed::<u64>("/inl/typed")
        .unwrap()
        .start()
        .unwrap();
    for t in names {
        assert!(sender.wait_matched(t, Duration::from_secs(20)), "{t}");
    }

    for i in 0..N {
        for t in &topics[..4] {
            source.publish(t, &(1000 + i).to_le_bytes()).unwrap();
        }
        source.publish(&topics[4], &[7u8; 12]).unwrap();
        // Paced, so that the plain topic's subscriber below reads every one in order.
        std::thread::sleep(Duration::from_millis(1));
    }
    eventually(Duration::from_secs(20), "every sample in B", || {
        let s = receiver.stats();
        names[..4]
            .iter()
            .all(|t| s.inbound(t).is_some_and(|t| t.samples == N))
            && s.inbound("/inl/wrong").is_some_and(|t| t.refused == N)
    });

    // Still inline topics, of 8-byte messages, written by the bridge.
    let details = weft::pubsub::details(&b).unwrap();
    for t in &names[..3] {
        let d = details.topics.iter().find(|d| d.stats.name == *t).unwrap();
        assert_eq!((d.mode, d.max_len), (TopicMode::Inline, 8), "{t}");
        assert_eq!(d.stats.published, N, "{t}");
    }
    let d = details
        .topics
        .iter()
        .find(|d| d.stats.name == "/inl/latest")
        .unwrap();
    assert!(d.latest, "{d:?}");
    let d = details
        .topics
        .iter()
        .find(|d| d.stats.name == "/inl/newest")
        .unwrap();
    assert_eq!((d.mode, d.stats.published), (TopicMode::Latest, N), "{d:?}");

    for i in 0..N {
        assert_eq!(plain.try_recv().unwrap().as_ref(), (1000 + i).to_le_bytes());
        assert_eq!(typed.try_recv_value::<u64>().unwrap(), 1000 + i);
    }
    assert_eq!(latest.try_recv_value::<u64>().unwrap(), 1000 + N - 1);
    assert_eq!(newest.try_recv_value::<u64>().unwrap(), 1000 + N - 1);

    // A 12-byte sample does not fit an 8-byte inline topic: refused, with the reason.
    let stats = receiver.stats();
    let wrong = common::inbound_of(&stats, "/inl/wrong");
    assert_eq!((wrong.samples, wrong.dropped), (0, 0), "{stats}");
    let why = wrong.last_error.unwrap();
    assert!(why.contains("12") && why.contains("8-byte"), "{why}");
    let d = details
        .topics
        .iter()
        .find(|d| d.stats.name == "/inl/wrong")
        .unwrap();
    assert_eq!(d.stats.published, 0);
    for t in &names[..4] {
        let t = common::inbound_of(&stats, t);
        assert_eq!((t.refused, t.dropped), (0, 0), "{stats}");
    }
}

/// A single-publisher blocks topic in the receiving region takes the bridge as its one
/// publisher only once its local holder is gone: until then every sample is dropped (the
/// holder keeps the lease, `InUse`, with the reason), afterwards they arrive.
#[test]
fn a_single_publisher_topic_takes_the_bridge_once_its_holder_is_gone() {
    let (a, b) = (unique("solo-a"), unique("solo-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("solo");
    let port = free_port();
    let source = Publisher::create(&a, &Config::default()).unwrap();
    let topic = source.register("/solo/frames").unwrap();
    let region = Publisher::create(&b, &Config::default()).unwrap();
    let spec = TopicSpec::new(TopicMode::Blocks).single_publisher();
    let holder = Publisher::open(&b).unwrap();
    let held = holder.register_spec("/solo/frames", &spec).unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut frames = subscriber.subscribe("/solo/frames").unwrap();

    let sender = Bridge::start(sending(&a, &prefix, "/solo/**", port)).unwrap();
    let receiver = Bridge::start(receiving(&b, &prefix, "/solo/**", port)).unwrap();
    assert!(sender.wait_matched("/solo/frames", Duration::from_secs(20)));
    for i in 0..N {
        source.publish(&topic, &i.to_le_bytes()).unwrap();
    }
    eventually(Duration::from_secs(20), "every sample dropped", || {
        receiver
            .stats()
            .inbound("/solo/frames")
            .is_some_and(|t| t.dropped == N)
    });
    let stats = receiver.stats();
    let t = common::inbound_of(&stats, "/solo/frames");
    assert_eq!(t.samples, 0, "{stats}");
    let why = t.last_error.unwrap();
    assert!(why.contains("held by live process"), "{why}");
    assert!(matches!(frames.try_recv(), Err(weft::Error::Empty)));

    // The holder leaves: the bridge takes the topic over with the next sample.
    drop((held, holder));
    let next = std::sync::atomic::AtomicU64::new(N);
    eventually(
        Duration::from_secs(20),
        "a sample through the bridge",
        || {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            source.publish(&topic, &i.to_le_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(5));
            matches!(frames.try_recv(), Ok(m) if m.len() == 8)
        },
    );
    let d = weft::pubsub::details(&b).unwrap();
    let d = d.topics.iter().find(|d| d.stats.name == "/solo/frames");
    assert!(d.is_some_and(|d| d.single_publisher), "{d:?}");
    drop(region);
}

/// A latest-value inline topic holds messages larger than the region's blocks (its values
/// live in its ring's slots): a sample of that size is published into it, not dropped for the
/// block size.
#[test]
fn a_latest_inline_topic_larger_than_a_block_takes_its_samples() {
    let (b, p, port) = (unique("inl-big"), unique("inl-big"), free_port());
    let _c = Cleanup(vec![b.clone()]);
    let local = Publisher::create(&b, &Config::default().block_size(64)).unwrap();
    let t = local
        .register_spec("/l/v", &TopicSpec::inline(1000).latest())
        .unwrap();
    local.publish(&t, &[1; 1000]).unwrap();
    let c = common::config(&b, &p)
        .inbound("/l/**")
        .unwrap()
        .listen(&format!("tcp/127.0.0.1:{port}"));
    let bridge = Bridge::start(c).unwrap();
    let z = common::raw_session(port);
    common::wait_subscribed(&z, &format!("{p}/l/v"));
    common::put(&z, &format!("{p}/l/v"), &[7; 1000], None);
    eventually(Duration::from_secs(20), "handled", || {
        bridge
            .stats()
            .inbound("/l/v")
            .is_some_and(|t| t.samples + t.dropped == 1)
    });
    let s = bridge.stats();
    assert_eq!(common::inbound_of(&s, "/l/v").samples, 1, "{s}");
    let mut sub = Subscriber::connect(&b)
        .unwrap()
        .subscribe_with_history("/l/v", 1)
        .unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), &[7; 1000][..]);
}
