//! Typed topics across the bridge: the far side registers the topic with the same Rust type
//! (its typed subscribers work, other types are refused), and a sample whose type disagrees
//! with the far side's is refused there.

mod common;

use common::{Cleanup, config, eventually, free_port, inbound_of, receiving, sending, unique};
use std::time::Duration;
use weft::ErrorKind;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::{Bridge, TypeMeta};

/// Another type, of another size: a topic registered without a stable type name is checked by
/// size and alignment, so a type of `Tick`'s layout would be accepted.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Quote {
    bid: f64,
    ask: f64,
    venue: u64,
    time: u64,
}

fn tick(i: u32) -> Tick {
    Tick {
        price: 100.0 + i as f64 / 4.0,
        size: 10 * i as u64,
        seq: i,
        venue: 7,
    }
}

const N: u32 = 100;

/// The value type of the typed topics.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick {
    price: f64,
    size: u64,
    seq: u32,
    venue: u32,
}

#[test]
fn a_typed_topic_arrives_typed() {
    let (a, b) = (unique("typed-a"), unique("typed-b"));
    let _clean = Cleanup(vec![a.clone(), b.clone()]);
    let prefix = unique("typed");
    let port = free_port();
    let publisher = Publisher::create(&a, &Config::default()).unwrap();
    // One topic forwarded by a bridge that knows the Rust type, one by a bridge that does
    // not (it learns the recorded name and size from the region).
    let aapl = publisher.register_typed::<Tick>("/ticks/AAPL").unwrap();
    let msft = publisher.register_typed::<Tick>("/ticks/MSFT").unwrap();
    let knows = Bridge::builder(
        config(&a, &prefix)
            .outbound("/ticks/AAPL")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<Tick>("/ticks/**")
    .unwrap()
    .start()
    .unwrap();
    let guesses = Bridge::start(
        config(&a, &prefix)
            .outbound("/ticks/MSFT")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let receiver = Bridge::builder(
        config(&b, &prefix)
            .inbound("/ticks/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<Tick>("/ticks/**")
    .unwrap()
    .start()
    .unwrap();
    assert!(knows.wait_matched("/ticks/AAPL", Duration::from_secs(20)));
    assert!(guesses.wait_matched("/ticks/MSFT", Duration::from_secs(20)));
    assert_eq!(knows.stats().outbound[0].ty, Some(TypeMeta::of::<Tick>()));
    let guessed = guesses.stats().outbound[0].ty.clone().unwrap();
    assert_eq!(
        (guessed.name.as_str(), guessed.size, guessed.align),
        (core::any::type_name::<Tick>(), 24, 0)
    );

    for i in 0..N {
        publisher.publish_typed(&aapl, &tick(i)).unwrap();
        publisher.publish_typed(&msft, &tick(1000 + i)).unwrap();
    }
    eventually(Duration::from_secs(20), "every tick in B", || {
        let s = receiver.stats();
        ["/ticks/AAPL", "/ticks/MSFT"]
            .iter()
            .all(|t| s.inbound(t).is_some_and(|t| t.samples == N as u64))
    });

    // Registered in B with Tick's type: typed subscribers of Tick work, others are refused.
    let subscriber = Subscriber::connect(&b).unwrap();
    for (topic, base) in [("/ticks/AAPL", 0), ("/ticks/MSFT", 1000)] {
        let err = subscriber.subscribe_typed::<Quote>(topic).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TypeMismatch, "{err}");
        subscriber.subscribe_typed::<Tick>(topic).unwrap();
        let mut sub = subscriber
            .subscribe_with_history(topic, N as usize)
            .unwrap();
        for i in 0..N {
            let s = sub.try_recv().unwrap();
            assert_eq!(s.value::<Tick>().unwrap(), &tick(base + i));
        }
        let stats = receiver.stats();
        let t = common::inbound_of(&stats, topic);
        assert_eq!(t.ty, Some(TypeMeta::of::<Tick>()));
        assert_eq!((t.lagged, t.refused, t.dropped), (0, 0, 0), "{stats}");
    }
}

#[test]
fn a_disagreeing_type_is_refused_on_the_far_side() {
    let (a, b, c, d) = (
        unique("mis-a"),
        unique("mis-b"),
        unique("mis-c"),
        unique("mis-d"),
    );
    let _clean = Cleanup(vec![a.clone(), b.clone(), c.clone(), d.clone()]);
    let prefix = unique("mismatch");
    let port = free_port();
    let publisher = Publisher::create(&a, &Config::default()).unwrap();
    let ticks = publisher.register_typed::<Tick>("/ticks/AAPL").unwrap();
    let sender = Bridge::start(
        config(&a, &prefix)
            .outbound("/ticks/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .unwrap();
    let inbound = |region: &str| {
        config(region, &prefix)
            .inbound("/ticks/**")
            .unwrap()
            .connect(&format!("tcp/127.0.0.1:{port}"))
    };
    // b: the bridge maps the topic to Quote.
    let to_quote = Bridge::builder(inbound(&b))
        .typed::<Quote>("/ticks/**")
        .unwrap()
        .start()
        .unwrap();
    // c: no Rust type, but the topic exists here as Quote.
    let local = Publisher::create(&c, &Config::default()).unwrap();
    local.register_typed::<Quote>("/ticks/AAPL").unwrap();
    let onto_quote = Bridge::start(inbound(&c)).unwrap();
    // d: no Rust type, no topic: registered untyped, samples pass.
    let untyped = Bridge::start(inbound(&d)).unwrap();

    assert!(sender.wait_matched("/ticks/AAPL", Duration::from_secs(20)));
    // Matching says that one receiver is known: publish until each has seen something.
    let mut i = 0;
    eventually(Duration::from_secs(20), "every receiver reached", || {
        publisher.publish_typed(&ticks, &tick(i)).unwrap();
        i += 1;
        [&to_quote, &onto_quote, &untyped]
            .iter()
            .all(|r| r.stats().inbound("/ticks/AAPL").is_some())
    });
    std::thread::sleep(Duration::from_millis(200));

    for (bridge, region) in [(&to_quote, &b), (&onto_quote, &c)] {
        let stats = bridge.stats();
        let t = common::inbound_of(&stats, "/ticks/AAPL");
        assert_eq!(t.samples, 0, "{stats}");
        assert!(t.refused > 0, "{stats}");
        let why = t.last_error.unwrap();
        assert!(why.contains("Quote") && why.contains("Tick"), "{why}");
        // Nothing reached the region.
        let report = weft::pubsub::inspect(region).unwrap();
        let published: u64 = report.topics.iter().map(|t| t.published).sum();
        assert_eq!(published, 0, "{region}: {report:?}");
    }
    let stats = untyped.stats();
    let t = common::inbound_of(&stats, "/ticks/AAPL");
    assert!(t.samples > 0 && t.refused == 0, "{stats}");
    // It records the type the samples carry (name and size).
    assert_eq!(t.ty.unwrap().size, 24);
    let untyped_sub = Subscriber::connect(&d).unwrap();
    assert_eq!(
        untyped_sub
            .subscribe_typed::<Tick>("/ticks/AAPL")
            .unwrap_err()
            .kind(),
        ErrorKind::TypeMismatch,
        "registered untyped: weft cannot register a type described at run time"
    );
}

/// A type of three bytes, aligned to one: the size and alignment of the bridge's first type
/// probe, which an unnamed type matched (weft checks unnamed types by size and alignment), so
/// the sender named it after the probe and the receiver's typed rule refused every sample.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Rgb {
    r: u8,
    g: u8,
    b: u8,
}

#[test]
fn a_type_of_the_probes_size_is_named_as_it_is() {
    let (a, b, p, port) = (unique("rgb-a"), unique("rgb-b"), unique("rgb"), free_port());
    let _c = Cleanup(vec![a.clone(), b.clone()]);
    let src = Publisher::create(&a, &Config::default()).unwrap();
    let t = src.register_typed::<Rgb>("/px/a").unwrap();
    let tx = Bridge::start(sending(&a, &p, "/px/**", port)).unwrap();
    let rx = Bridge::builder(receiving(&b, &p, "/px/**", port))
        .typed::<Rgb>("/px/**")
        .unwrap()
        .start()
        .unwrap();
    assert!(tx.wait_matched("/px/a", Duration::from_secs(20)));
    for i in 0..10 {
        src.publish_typed(&t, &Rgb { r: i, g: 1, b: 2 }).unwrap();
    }
    eventually(Duration::from_secs(20), "10 handled", || {
        rx.stats()
            .inbound("/px/a")
            .is_some_and(|t| t.samples + t.refused == 10)
    });
    let s = rx.stats();
    assert_eq!(inbound_of(&s, "/px/a").samples, 10, "{s}\n{}", tx.stats());
}

/// A sample that carries the right type but not its size (12 bytes for a `u64` topic) is
/// refused, not published into the typed topic.
#[test]
fn a_sample_of_the_wrong_size_for_its_type_is_refused() {
    use weft_zenoh::wire::SampleHeader;
    let b = unique("rv-typed-size");
    let _clean = Cleanup(vec![b.clone()]);
    let prefix = unique("rv-typed-size");
    let port = free_port();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local.register_typed::<u64>("/ty/x").unwrap();
    let subscriber = Subscriber::connect(&b).unwrap();
    let mut sub = subscriber.subscribe_typed::<u64>("/ty/x").unwrap();
    let bridge = Bridge::builder(
        config(&b, &prefix)
            .inbound("/ty/**")
            .unwrap()
            .listen(&format!("tcp/127.0.0.1:{port}")),
    )
    .typed::<u64>("/ty/**")
    .unwrap()
    .start()
    .unwrap();
    let z = common::raw_session(port);
    let key = format!("{prefix}/ty/x");
    common::wait_subscribed(&z, &key);
    let header = |seq| SampleHeader {
        instance: 1,
        origin: 2,
        seq,
        excluded: 0,
        ty: Some(TypeMeta::of::<u64>()),
    };
    common::put(&z, &key, &[0xab; 12], Some(&header(0)));
    common::put(&z, &key, &7u64.to_le_bytes(), Some(&header(1)));
    eventually(Duration::from_secs(20), "the u64 sample", || {
        bridge
            .stats()
            .inbound("/ty/x")
            .is_some_and(|t| t.samples == 1)
    });
    let first = sub.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        &*first,
        &7u64.to_le_bytes(),
        "the 12-byte sample was published"
    );
    let stats = bridge.stats();
    assert_eq!(inbound_of(&stats, "/ty/x").refused, 1, "{stats}");
}
