//! Pub/sub between real processes: fan-out byte-exact, two publisher processes on one topic,
//! and a slow subscriber whose losses are counted exactly, behind one publisher and behind
//! two.

mod common;

use common::{Cleanup, Peer, lagging, pubmsg, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft::{Error, WaitStrategy};

const MAX: usize = 1000;

fn roomy(count: usize) -> Config {
    Config::default()
        .ring_slots(count.next_power_of_two())
        .blocks(count.next_power_of_two() + 256)
        .block_size(1024)
}

/// A ring of 64 that a slow subscriber falls behind.
fn narrow() -> Config {
    Config::default()
        .ring_slots(64)
        .blocks(256)
        .block_size(1024)
}

#[test]
fn one_publisher_to_three_subscribers_byte_exact() {
    let name = unique("pp-fan");
    let _c = Cleanup(name.clone());
    let count = 5000;
    let owner = Publisher::create(&name, &roomy(count)).unwrap();
    owner.register("/fan/out").unwrap();
    let mut subs: Vec<Peer> = (0..3)
        .map(|_| {
            Peer::spawn(&[
                "pubsub-sub",
                &name,
                "/fan/out",
                "11",
                &count.to_string(),
                &MAX.to_string(),
            ])
        })
        .collect();
    for s in &mut subs {
        s.expect("ready");
    }
    let mut p = Peer::spawn(&[
        "pubsub-pub",
        &name,
        "/fan/out",
        "1",
        "11",
        &count.to_string(),
        &MAX.to_string(),
        "3",
    ]);
    p.expect("ready");
    p.expect(&format!("sent {count}"));
    for s in subs {
        let (last, ok) = s.finish(Duration::from_secs(30));
        assert!(ok, "subscriber failed: {last}");
        assert_eq!(last, format!("got {count} lost 0"));
    }
}

/// Publisher processes 1 and 2 of `count` messages each (seed `seed`) on `topic`,
/// `period_us` apart (0: back to back), once one subscriber is there; returned once both are
/// ready.
fn two_publishers(name: &str, topic: &str, seed: u64, count: u64, period_us: u64) -> Vec<Peer> {
    let mut pubs: Vec<Peer> = ["1", "2"]
        .iter()
        .map(|id| {
            Peer::spawn(&[
                "pubsub-pub",
                name,
                topic,
                id,
                &seed.to_string(),
                &count.to_string(),
                &MAX.to_string(),
                "1",
                &period_us.to_string(),
            ])
        })
        .collect();
    for p in &mut pubs {
        p.expect("ready");
    }
    pubs
}

#[test]
fn two_publisher_processes_share_one_topic() {
    let name = unique("pp-two");
    let _c = Cleanup(name.clone());
    let count = 3000;
    let owner = Publisher::create(&name, &roomy(2 * count)).unwrap();
    owner.register("/shared").unwrap();
    let mut sub = Peer::spawn(&[
        "pubsub-sub",
        &name,
        "/shared",
        "5",
        &(2 * count).to_string(),
        &MAX.to_string(),
    ]);
    sub.expect("ready");
    let mut pubs = two_publishers(&name, "/shared", 5, count as u64, 0);
    for p in &mut pubs {
        p.expect(&format!("sent {count}"));
    }
    let (last, ok) = sub.finish(Duration::from_secs(30));
    assert!(ok, "subscriber failed: {last}");
    // Every message of both publishers, each publisher's in its own order, one sequence.
    assert_eq!(last, format!("got {} lost 0", 2 * count));
}

#[test]
fn a_slow_subscriber_counts_its_losses_exactly() {
    let name = unique("pp-slow");
    let _c = Cleanup(name.clone());
    let count = 4000u64;
    let owner = Publisher::create(&name, &narrow()).unwrap();
    owner.register("/slow").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/slow").unwrap();
    let mut p = Peer::spawn(&[
        "pubsub-pub",
        &name,
        "/slow",
        "3",
        "9",
        &count.to_string(),
        &MAX.to_string(),
        "1",
    ]);
    p.expect("ready");
    let (mut expected, mut got, mut lost) = (0u64, 0u64, 0u64);
    while expected < count {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                assert_eq!(
                    m.seq(),
                    expected,
                    "a sequence was skipped without being counted"
                );
                let (id, c) = pubmsg::verify(9, MAX, &m).expect("byte-exact");
                assert_eq!((id, c), (3, expected));
                expected += 1;
                got += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            Err(Error::Lagged { skipped }) => {
                expected += skipped;
                lost += skipped;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(expected, count);
    assert_eq!(got + lost, count);
    assert!(lost > 0, "the subscriber was meant to fall behind");
    let st = s.topics().unwrap();
    assert_eq!((st[0].published, st[0].lagged), (count, lost));
}

#[test]
fn two_publisher_processes_and_a_slow_subscriber_count_every_loss_exactly() {
    let name = unique("pp-slow-two");
    let _c = Cleanup(name.clone());
    let count = 3000u64;
    let owner = Publisher::create(&name, &narrow()).unwrap();
    owner.register("/slow/two").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/slow/two").unwrap();
    // Paced, so that the two publishers' claims interleave on the topic for the whole run
    // while the subscriber falls behind, catches up and falls behind again.
    let mut pubs = two_publishers(&name, "/slow/two", 13, count, 20);
    let total = 2 * count;
    let lost = lagging::receive_slowly(&mut sub, total, |m| {
        pubmsg::verify(13, MAX, m).expect("byte-exact")
    });
    for p in &mut pubs {
        p.expect(&format!("sent {count}"));
    }
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    let st = s.topics().unwrap();
    assert_eq!((st[0].published, st[0].lagged), (total, lost));
}

#[test]
fn a_late_joiner_gets_the_history_it_asks_for() {
    let name = unique("pp-late");
    let _c = Cleanup(name.clone());
    let owner = Publisher::create(&name, &roomy(64)).unwrap();
    owner.register("/hist").unwrap();
    let mut p = Peer::spawn(&[
        "pubsub-pub",
        &name,
        "/hist",
        "4",
        "21",
        "20",
        &MAX.to_string(),
        "0",
    ]);
    p.expect("ready");
    p.expect("sent 20");
    let (_, ok) = p.finish(Duration::from_secs(10));
    assert!(ok);
    // The publisher process is gone; its last five messages are still in the ring.
    let s = Subscriber::connect(&name).unwrap();
    let mut late = s.subscribe_with_history("/hist", 5).unwrap();
    for c in 15..20u64 {
        let m = late.try_recv().unwrap();
        assert_eq!(pubmsg::verify(21, MAX, &m), Some((4, c)));
        assert_eq!(m.seq(), c);
    }
    assert!(matches!(late.try_recv(), Err(Error::Empty)));
    // Asking for more than the ring holds gives what it holds.
    let mut all = s.subscribe_with_history("/hist", 1000).unwrap();
    assert_eq!(all.try_recv().unwrap().seq(), 0);
}

#[test]
fn a_typed_topic_refuses_another_type_across_processes() {
    let name = unique("pp-typed");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register_typed::<u64>("/typed").unwrap();
    let wrong = Peer::spawn(&["pubsub-typed-sub", &name, "/typed", "u32"]);
    let (last, ok) = wrong.finish(Duration::from_secs(10));
    assert!(ok);
    assert!(last.starts_with("mismatch u64"), "{last}");
    let mut right = Peer::spawn(&["pubsub-typed-sub", &name, "/typed", "u64"]);
    right.expect("ready");
    p.publish_typed(&t, &0xDEAD_BEEF_u64).unwrap();
    right.expect(&format!("value {}", 0xDEAD_BEEF_u64));
    // Publishing another type on it, or registering it for another type, is refused too.
    assert_eq!(
        p.publish_typed(&t, &1u32).unwrap_err().kind(),
        weft::ErrorKind::TypeMismatch
    );
    assert_eq!(
        p.register_typed::<[u8; 8]>("/typed").unwrap_err().kind(),
        weft::ErrorKind::TypeMismatch
    );
    assert_eq!(
        p.register_typed::<[u8; 8192]>("/big").unwrap_err().kind(),
        weft::ErrorKind::TooLarge
    );
}

#[test]
fn a_gibibyte_published_between_processes_arrives_byte_exact_or_counted_lost() {
    let name = unique("pp-volume");
    let _c = Cleanup(name.clone());
    let max = 65_000usize;
    // Message lengths follow from (seed, publisher, counter): publish at least 1 GiB.
    let (mut count, mut total) = (0u64, 0u64);
    while total < 1 << 30 {
        total += (common::pattern::Rng(77 ^ (6 << 40) ^ count).len(max) + 15) as u64;
        count += 1;
    }
    let owner = Publisher::create(
        &name,
        &Config::default()
            .ring_slots(256)
            .blocks(512)
            .block_size(65_536),
    )
    .unwrap();
    owner.register("/volume").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/volume").unwrap();
    let mut p = Peer::spawn(&[
        "pubsub-pub",
        &name,
        "/volume",
        "6",
        "77",
        &count.to_string(),
        &max.to_string(),
        "1",
    ]);
    p.expect("ready");
    let (mut expected, mut got, mut bytes, mut lost) = (0u64, 0u64, 0u64, 0u64);
    while expected < count {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                assert_eq!(m.seq(), expected);
                assert_eq!(
                    pubmsg::verify(77, max, &m),
                    Some((6, expected)),
                    "seq {expected}"
                );
                bytes += m.len() as u64;
                expected += 1;
                got += 1;
            }
            Err(Error::Lagged { skipped }) => {
                expected += skipped;
                lost += skipped;
            }
            Err(e) => panic!("{e}"),
        }
    }
    p.expect(&format!("sent {count}"));
    eprintln!(
        "published {count} messages ({total} bytes); {got} received byte-exact ({bytes} bytes), {lost} lost and counted"
    );
    assert_eq!(got + lost, count);
    assert_eq!(s.topics().unwrap()[0].published, count);
    assert_eq!(s.topics().unwrap()[0].lagged, lost);
    assert!(got > 0);
}

/// A subscriber that parks for every message (a publisher process trickling them, a pause of
/// up to 20 µs before each) is woken every time: no park runs out its 50 ms slice while a
/// message waits. Blocks and inline topics.
#[test]
fn trickled_messages_wake_a_parked_subscriber_every_time() {
    for mode in ["blocks", "inline"] {
        let name = unique("pp-trickle");
        let _c = Cleanup(name.clone());
        let n: u64 = 20_000;
        let _owner = Publisher::create(&name, &roomy(1024)).unwrap();
        let mut p = Peer::spawn(&["pubsub-trickle", &name, "/trickle", mode, &n.to_string()]);
        p.expect("ready");
        let s =
            Subscriber::connect_with(&name, &Config::default().wait(WaitStrategy::Park)).unwrap();
        let mut sub = s
            .subscribe_timeout("/trickle", Duration::from_secs(10))
            .unwrap();
        for seq in 0..n {
            // Bounded: a lost wakeup costs one park slice, counted below; a stuck topic
            // fails here instead of hanging.
            let m = sub.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!((m.seq(), &*m), (seq, &seq.to_le_bytes()[..]), "{mode}");
        }
        p.expect("sent");
        let stats = sub.wait_stats();
        assert_eq!(stats.missed_wakeups, 0, "{mode}: {stats:?}");
        assert!(
            stats.parks >= 100,
            "{mode}: the subscriber hardly parked: {stats:?}"
        );
        let (line, ok) = p.finish(Duration::from_secs(30));
        assert!(ok, "{mode}: {line}");
    }
}
