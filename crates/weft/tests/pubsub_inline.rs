//! Inline topics: small fixed-size messages copied into a seqlock ring in the region. In one
//! process (round trips, exact lag, several publishers, parking, history, limits), across
//! processes (fan-out and two publisher processes, byte-exact; a slow subscriber behind two
//! publisher processes counting every loss exactly), and after a publisher died
//! holding a claimed sequence (voided, never taken from a live holder).

mod common;

use common::region::{Layout, get32, is_block, put64};
use common::tick::Tick;
use common::{Cleanup, Peer, region_file, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft::{Error, ErrorKind, WaitStrategy};

const PARTS: u64 = 8;
const HELD: u64 = 16;
const TOPICS: u64 = 4;
const SLOTS: u64 = 8;
const BLOCKS: u64 = 32;
const INLINE: u64 = 2;

fn small() -> Config {
    Config::default()
        .participants(PARTS as usize)
        .max_held(HELD as usize)
        .topics(TOPICS as usize)
        .ring_slots(SLOTS as usize)
        .blocks(BLOCKS as usize)
        .block_size(256)
        .inline_topics(INLINE as usize)
        .claim_timeout(Duration::from_millis(200))
}

fn ticks() -> TopicSpec {
    TopicSpec::new(TopicMode::Inline).typed::<Tick>()
}

/// The spec the test peer registers and subscribes with (a stable name: the peer's `Tick` has
/// another Rust path).
fn named_ticks() -> TopicSpec {
    TopicSpec::new(TopicMode::Inline).typed_named::<Tick>(common::tick::TICK)
}

#[test]
fn bytes_and_typed_values_round_trip() {
    let name = unique("pi-rt");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let raw = p.register_spec("/raw", &TopicSpec::inline(5)).unwrap();
    let typed = p.register_spec("/ticks", &ticks()).unwrap();
    assert_eq!(
        (raw.mode(), raw.message_size()),
        (TopicMode::Inline, Some(5))
    );
    assert_eq!(typed.message_size(), Some(24));
    let s = Subscriber::connect(&name).unwrap();
    let mut r = s.subscribe("/raw").unwrap();
    let mut t = s.subscribe_typed::<Tick>("/ticks").unwrap();
    assert!(matches!(r.try_recv(), Err(Error::Empty)));
    assert_eq!(p.publish(&raw, b"189.5").unwrap(), 0);
    assert_eq!(p.publish(&raw, b"189.6").unwrap(), 1);
    for i in 0..3 {
        assert_eq!(p.publish_typed(&typed, &Tick::new(9, i)).unwrap(), i);
    }
    let a = r.try_recv().unwrap();
    let b = r.try_recv().unwrap();
    assert_eq!(
        (&*a, a.seq(), &*b, b.seq()),
        (&b"189.5"[..], 0, &b"189.6"[..], 1)
    );
    for i in 0..3 {
        let m = t.try_recv().unwrap();
        let v = *m.value::<Tick>().unwrap();
        assert_eq!((v.id, v.n, m.seq()), (9, i, i));
        assert!(v.whole());
    }
    assert!(matches!(t.try_recv(), Err(Error::Empty)));
    // A sample is a copy: it holds nothing, and stays the same while the ring moves on.
    for i in 0..3 * SLOTS {
        p.publish(&raw, &[i as u8; 5]).unwrap();
    }
    assert_eq!(&*a, b"189.5");
    assert_eq!(p.region_info().free_blocks, BLOCKS);
    assert_eq!(p.stats(&raw).unwrap().published, 2 + 3 * SLOTS);
    // Wrong sizes, loans, and types are refused.
    assert_eq!(
        p.publish(&raw, b"1234").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        p.publish(&raw, b"123456").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(p.loan(&raw).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        p.publish_typed(&raw, &0u32).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        s.subscribe_typed::<u64>("/ticks").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
}

#[test]
fn registration_is_checked() {
    let name = unique("pi-reg");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    for bad in [TopicSpec::inline(0), TopicSpec::inline(57)] {
        assert_eq!(
            p.register_spec("/bad", &bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    // An inline topic needs a size or a type.
    assert_eq!(
        p.register_with("/bad", TopicMode::Inline)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C, align(32))]
    struct Wide([u64; 4]);
    assert_eq!(
        p.register_spec("/bad", &TopicSpec::new(TopicMode::Inline).typed::<Wide>())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let a = p.register_spec("/a", &TopicSpec::inline(56)).unwrap();
    // The same registration again finds it; another size or mode does not.
    assert_eq!(p.register_spec("/a", &TopicSpec::inline(56)).unwrap(), a);
    assert_eq!(
        p.register_spec("/a", &TopicSpec::inline(8))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        p.register("/a").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    p.register_spec("/b", &ticks()).unwrap();
    // Two inline areas: the third inline topic finds none; other modes still register.
    assert_eq!(
        p.register_spec("/c", &TopicSpec::inline(8))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    p.register("/d").unwrap();
    let q = Publisher::open(&name).unwrap();
    assert_eq!(
        q.register_spec("/a", &TopicSpec::inline(56))
            .unwrap()
            .message_size(),
        Some(56)
    );
    assert_eq!(
        q.register_spec("/b", &TopicSpec::new(TopicMode::Inline).typed::<[u32; 6]>())
            .unwrap_err()
            .kind(),
        ErrorKind::TypeMismatch
    );
}

#[test]
fn a_slow_subscriber_learns_exactly_how_many_it_missed() {
    let name = unique("pi-lag");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/lag", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/lag").unwrap();
    for i in 0..20u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    match sub.try_recv() {
        Err(Error::Lagged { skipped }) => assert_eq!(skipped, 12),
        other => panic!("expected Lagged, got {other:?}"),
    }
    for i in 12..20u64 {
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (i, &i.to_le_bytes()[..]));
    }
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    let st = p.stats(&t).unwrap();
    assert_eq!((st.published, st.lagged, st.subscribers), (20, 12, 1));
}

#[test]
fn a_late_joiner_gets_the_history_still_in_the_ring() {
    let name = unique("pi-hist");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/h", &TopicSpec::inline(8)).unwrap();
    for i in 0..5u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let s = Subscriber::connect(&name).unwrap();
    let mut late = s.subscribe_with_history("/h", 2).unwrap();
    assert_eq!(&*late.try_recv().unwrap(), &3u64.to_le_bytes());
    assert_eq!(&*late.try_recv().unwrap(), &4u64.to_le_bytes());
    assert!(matches!(late.try_recv(), Err(Error::Empty)));
}

#[test]
fn publishers_on_threads_share_one_gap_free_sequence() {
    let name = unique("pi-mp");
    let _c = Cleanup(name.clone());
    let cfg = small().ring_slots(8192);
    let p1 = Publisher::create(&name, &cfg).unwrap();
    let t1 = p1.register_spec("/m", &ticks()).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<Tick>("/m").unwrap();
    let n: u64 = if cfg!(miri) { 10 } else { 1500 };
    let threads: Vec<_> = (1..=2u64)
        .map(|id| {
            let p = Publisher::open(&name).unwrap();
            std::thread::spawn(move || {
                let t = p.register_spec("/m", &ticks()).unwrap();
                for i in 0..n {
                    p.publish_typed(&t, &Tick::new(id, i)).unwrap();
                }
            })
        })
        .collect();
    for i in 0..n {
        p1.publish_typed(&t1, &Tick::new(0, i)).unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut next = [0u64; 3];
    for seq in 0..3 * n {
        let m = sub.try_recv().unwrap();
        assert_eq!(m.seq(), seq);
        let v = *m.value::<Tick>().unwrap();
        assert!(v.whole());
        assert_eq!(v.n, next[v.id as usize]);
        next[v.id as usize] += 1;
    }
    assert_eq!(next, [n; 3]);
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
}

#[test]
fn a_latest_inline_topic_delivers_only_the_newest_value() {
    let name = unique("pi-latest");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let spec = TopicSpec::inline(8).latest();
    let t = p.register_spec("/last", &spec).unwrap();
    assert_eq!(p.register_spec("/last", &spec).unwrap(), t);
    // Latest or not is part of the registration; `latest` is for inline topics only.
    for other in [
        TopicSpec::inline(8),
        TopicSpec::inline(8).latest().single_publisher(),
    ] {
        assert_eq!(
            p.register_spec("/last", &other).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    assert_eq!(
        p.register_spec("/b", &TopicSpec::new(TopicMode::Blocks).latest())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/last").unwrap();
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    p.publish(&t, &7u64.to_le_bytes()).unwrap();
    assert_eq!(*sub.try_recv().unwrap().value::<u64>().unwrap(), 7);
    // Three laps of the ring: the newest only, and nothing counted as lost.
    for i in 0..3 * SLOTS {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let m = sub.try_recv().unwrap();
    assert_eq!(
        (m.seq(), *m.value::<u64>().unwrap()),
        (3 * SLOTS, 3 * SLOTS - 1)
    );
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    let s2 = Subscriber::connect(&name).unwrap();
    // A late joiner that asks for history gets the newest value at once.
    let mut late = s2.subscribe_with_history("/last", 3).unwrap();
    assert_eq!(
        *late.try_recv().unwrap().value::<u64>().unwrap(),
        3 * SLOTS - 1
    );
    assert!(matches!(late.try_recv(), Err(Error::Empty)));
    p.publish(&t, &99u64.to_le_bytes()).unwrap();
    let n = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(*n.value::<u64>().unwrap(), 99);
    assert_eq!(p.stats(&t).unwrap().lagged, 0);
    // One publisher at a time and latest values go together.
    let one = p
        .register_spec("/one", &TopicSpec::inline(8).latest().single_publisher())
        .unwrap();
    let mut sub1 = s.subscribe("/one").unwrap();
    for i in 0..20u64 {
        p.publish(&one, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(sub1.try_recv_value::<u64>().unwrap(), 19);
    assert!(matches!(sub1.try_recv_value::<u64>(), Err(Error::Empty)));
    p.publish(&one, &20u64.to_le_bytes()).unwrap();
    p.publish(&one, &21u64.to_le_bytes()).unwrap();
    assert_eq!(sub1.try_recv_value::<u64>().unwrap(), 21);
    // Unregistered: what is there is delivered, then `Closed`.
    p.publish(&one, &22u64.to_le_bytes()).unwrap();
    p.unregister(&one).unwrap();
    assert_eq!(sub1.try_recv_value::<u64>().unwrap(), 22);
    assert!(matches!(sub1.try_recv_value::<u64>(), Err(Error::Closed)));
    assert!(matches!(sub1.try_recv(), Err(Error::Closed)));
}

#[test]
fn a_latest_inline_reader_sees_whole_values_in_order_from_publishers_on_threads() {
    let name = unique("pi-latest-mt");
    let _c = Cleanup(name.clone());
    let spec = ticks().latest();
    let p = Publisher::create(&name, &small()).unwrap();
    p.register_spec("/m", &spec).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<Tick>("/m").unwrap();
    let n: u64 = if cfg!(miri) { 20 } else { 100_000 };
    let threads: Vec<_> = (0..2u64)
        .map(|id| {
            let p = Publisher::open(&name).unwrap();
            let spec = spec.clone();
            std::thread::spawn(move || {
                let t = p.register_spec("/m", &spec).unwrap();
                for i in 0..n {
                    p.publish_typed(&t, &Tick::new(id, i)).unwrap();
                }
            })
        })
        .collect();
    let (mut last_seq, mut last) = (None, [None::<u64>; 2]);
    let mut received = 0u64;
    // The last sequence is never overwritten: a latest reader always gets to it.
    while last_seq != Some(2 * n - 1) {
        let m = match sub.recv_timeout(Duration::from_secs(5)) {
            Ok(m) => m,
            Err(e) => panic!("after {received} values, last {last:?}: {e}"),
        };
        let v = *m.value::<Tick>().unwrap();
        assert!(v.whole(), "a torn value from publisher {}", v.id);
        assert!(last_seq < Some(m.seq()), "{:?} then {}", last_seq, m.seq());
        assert!(
            last[v.id as usize] < Some(v.n),
            "publisher {} went back",
            v.id
        );
        last_seq = Some(m.seq());
        last[v.id as usize] = Some(v.n);
        received += 1;
    }
    for t in threads {
        t.join().unwrap();
    }
    assert!(last.contains(&Some(n - 1)));
    assert!(received <= 2 * n);
    assert_eq!(s.topics().unwrap()[0].lagged, 0);
}

#[test]
fn a_parked_subscriber_is_woken_by_a_publisher_thread() {
    let name = unique("pi-park");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small().ring_slots(256)).unwrap();
    let t = p.register_spec("/park", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/park").unwrap();
    assert!(matches!(
        sub.recv_timeout(Duration::from_millis(20)),
        Err(Error::Timeout)
    ));
    let n = 200u64;
    let h = std::thread::spawn(move || {
        for i in 0..n {
            std::thread::sleep(Duration::from_micros(300));
            p.publish(&t, &i.to_le_bytes()).unwrap();
        }
        p
    });
    for i in 0..n {
        let m = sub.recv_with(WaitStrategy::Park).unwrap();
        assert_eq!(&*m, &i.to_le_bytes());
    }
    drop(h.join().unwrap());
}

/// The state a publisher leaves when it dies holding inline sequence `x`: its record names
/// the topic and `x`, and the claim counter is past `x`. Written into the file, since no
/// signal can be aimed between a claim and its write.
fn dead_claim(name: &str, row: u64, topic: u64, area: u64, x: u64, mid_write: bool) {
    let f = region_file(name);
    let l = Layout::of_file(&f);
    put64(&f, l.ext(row) + 40, topic + 1);
    put64(&f, l.ext(row) + 48, x);
    put64(&f, l.inline_area(area) + 64, x + 1);
    if mid_write {
        // The odd stamp of a write in progress (slot stride 16 for an 8-byte message).
        put64(
            &f,
            l.inline_area(area) + 192 + 16 * (x % l.slots),
            2 * x + 1,
        );
    }
}

/// The row of the only other publisher process (it holds `n` loans, so its holdings show).
fn peer_row(name: &str) -> u64 {
    let f = region_file(name);
    let l = Layout::of_file(&f);
    (0..l.participants)
        .find(|&r| (0..l.held).any(|e| is_block(get32(&f, l.holding(r, e)))))
        .expect("the peer's row")
}

/// Sequence 1 of an inline topic claimed by a publisher process SIGKILLed (mid-write or
/// before it), 0 and 2 published around it; settled by a waiting receive, or (`reclaim`) by an
/// explicit reclaim first.
fn killed_holding_a_sequence(mid_write: bool, reclaim: bool) {
    let name = unique(match (mid_write, reclaim) {
        (true, _) => "pi-dead-w",
        (false, false) => "pi-dead",
        (false, true) => "pi-dead-rc",
    });
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/d", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/d").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    assert_eq!(p.publish(&t, &0u64.to_le_bytes()).unwrap(), 0);
    peer.kill9();
    dead_claim(&name, row, 0, 0, 1, mid_write);
    assert_eq!(p.publish(&t, &2u64.to_le_bytes()).unwrap(), 2);
    if reclaim {
        // The reclaim settles the dead row (the reclaimer holds the row: its record is not a
        // live holder's) and voids sequence 1: a non-blocking receive goes straight past it.
        p.reclaim().unwrap();
        assert_eq!(s.topics().unwrap()[0].recovered, 1, "voided by the reclaim");
        assert_eq!(sub.try_recv().unwrap().seq(), 0);
        assert_eq!(sub.try_recv().unwrap().seq(), 2);
    } else {
        assert_eq!(sub.try_recv().unwrap().seq(), 0);
        // Sequence 1 is claimed and never written: a receive waits on it, finds its claimant
        // dead, voids it and goes on.
        assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!((m.seq(), &*m), (2, &2u64.to_le_bytes()[..]));
        assert_eq!(s.topics().unwrap()[0].recovered, 1);
    }
    // A whole lap later the slot of the voided sequence is written as usual.
    for i in 3..3 + SLOTS {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), i);
        assert_eq!(sub.try_recv().unwrap().seq(), i);
    }
}

#[test]
fn a_sequence_claimed_by_a_dead_publisher_is_voided() {
    killed_holding_a_sequence(false, false);
}

#[test]
fn a_sequence_a_dead_publisher_was_writing_is_voided() {
    killed_holding_a_sequence(true, false);
}

/// A latest-value inline topic on which sequence 0 is published and sequence 1 is claimed by
/// a publisher process that was then SIGKILLed (mid-write or before it).
fn latest_with_a_dead_claim(
    label: &str,
    mid_write: bool,
) -> (
    Cleanup,
    Publisher,
    weft::pubsub::Topic,
    Subscriber,
    weft::pubsub::Subscription,
) {
    let name = unique(label);
    let c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p
        .register_spec("/d", &TopicSpec::inline(8).latest())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let sub = s.subscribe("/d").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    assert_eq!(p.publish(&t, &0u64.to_le_bytes()).unwrap(), 0);
    peer.kill9();
    dead_claim(&name, row, 0, 0, 1, mid_write);
    (c, p, t, s, sub)
}

#[test]
fn a_latest_inline_reader_takes_what_is_newer_than_a_dead_claim_and_waits_out_the_newest() {
    for mid_write in [false, true] {
        // Sequence 2 is newer than the dead claim: it is delivered at once.
        let (_c, p, t, _s, mut sub) = latest_with_a_dead_claim("pi-latest-dead", mid_write);
        assert_eq!(p.publish(&t, &2u64.to_le_bytes()).unwrap(), 2);
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (2, &2u64.to_le_bytes()[..]));
        assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        // The dead claim is the newest: the reader delivers what is older once, then waits
        // at the claim, voids it and waits for something newer.
        let (_c, p, t, s, mut sub) = latest_with_a_dead_claim("pi-latest-dead2", mid_write);
        assert_eq!(sub.try_recv().unwrap().seq(), 0);
        assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        assert!(matches!(
            sub.recv_timeout(Duration::from_millis(300)),
            Err(Error::Timeout)
        ));
        assert_eq!(s.topics().unwrap()[0].recovered, 1, "mid_write {mid_write}");
        assert_eq!(p.publish(&t, &3u64.to_le_bytes()).unwrap(), 2);
        let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!((m.seq(), &*m), (2, &3u64.to_le_bytes()[..]));
    }
}

#[test]
fn a_publisher_a_lap_ahead_voids_a_dead_claim_it_waits_for() {
    let name = unique("pi-lap");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/d", &TopicSpec::inline(8)).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    peer.kill9();
    dead_claim(&name, row, 0, 0, 0, false);
    // Sequences 1..=8: the eighth needs the slot of sequence 0, claimed by the dead one.
    for i in 1..=SLOTS {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), i);
    }
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_with_history("/d", 7).unwrap();
    for i in 2..=SLOTS {
        assert_eq!(sub.try_recv().unwrap().seq(), i);
    }
}

/// An unregistered inline topic keeps its ring while a live publisher has a claim in flight
/// on it (preempted between its claim and its write, it would write into whatever topic got
/// the ring next); once that publisher is dead, the next registration settles its claim and
/// the ring goes to a new topic, which starts afresh.
#[test]
fn an_unregistered_inline_topic_keeps_its_ring_while_a_live_claim_is_in_flight() {
    let name = unique("pi-free");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    // Both inline areas taken: /a (topic 0, area 0) and /b.
    let a = p.register_spec("/a", &TopicSpec::inline(8)).unwrap();
    p.register_spec("/b", &TopicSpec::inline(8)).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    // The live peer claimed sequence 0 of /a and stalls there.
    dead_claim(&name, row, 0, 0, 0, false);
    // Nobody reads /a: unregistering it would free it at once, but for the claim.
    p.unregister(&a).unwrap();
    assert_eq!(
        p.register_spec("/c", &TopicSpec::inline(8))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument,
        "the ring of /a went to another topic under a live claim"
    );
    peer.kill9();
    let c = p.register_spec("/c", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/c").unwrap();
    assert_eq!(p.publish(&c, &9u64.to_le_bytes()).unwrap(), 0);
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (0, &9u64.to_le_bytes()[..]));
}

#[test]
fn a_sequence_held_by_a_live_publisher_is_never_voided() {
    let name = unique("pi-live");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/d", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/d").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    // The live peer "claimed" sequence 0 and stalls (preempted, not dead).
    dead_claim(&name, row, 0, 0, 0, false);
    assert_eq!(p.publish(&t, &1u64.to_le_bytes()).unwrap(), 1);
    assert!(matches!(
        sub.recv_timeout(Duration::from_millis(300)),
        Err(Error::Timeout)
    ));
    // A publisher that needs its slot a lap later gives up instead of taking it.
    for i in 2..SLOTS {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert!(matches!(p.publish(&t, &[0; 8]), Err(Error::Timeout)));
    // Once the holder is dead, the sequence is voided and everything flows again.
    peer.kill9();
    let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m.seq(), 1);
}

#[test]
fn one_publisher_process_to_two_subscriber_processes() {
    let name = unique("pi-fan");
    let _c = Cleanup(name.clone());
    let count = 20_000u64;
    let owner = Publisher::create(&name, &small().ring_slots(32768)).unwrap();
    owner.register_spec("/fan", &named_ticks()).unwrap();
    let mut subs: Vec<Peer> = ["park", "adaptive"]
        .iter()
        .map(|w| Peer::spawn(&["pubsub-inline-sub", &name, "/fan", &count.to_string(), w]))
        .collect();
    for s in &mut subs {
        s.expect("ready");
    }
    let mut p = Peer::spawn(&[
        "pubsub-inline-pub",
        &name,
        "/fan",
        "1",
        &count.to_string(),
        "2",
        "0",
    ]);
    p.expect("ready");
    p.expect(&format!("sent {count}"));
    for s in subs {
        let (last, ok) = s.finish(Duration::from_secs(30));
        assert!(ok, "subscriber failed: {last}");
        assert_eq!(last, format!("got {count} lost 0"));
    }
}

/// Publisher processes 1 and 2 of `count` ticks each on `topic`, `period_us` apart, once one
/// subscriber is there; returned once both are ready.
fn two_inline_publishers(name: &str, topic: &str, count: u64, period_us: u64) -> Vec<Peer> {
    let mut pubs: Vec<Peer> = ["1", "2"]
        .iter()
        .map(|id| {
            Peer::spawn(&[
                "pubsub-inline-pub",
                name,
                topic,
                id,
                &count.to_string(),
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
fn two_publisher_processes_and_a_parked_subscriber_process() {
    let name = unique("pi-two");
    let _c = Cleanup(name.clone());
    let count = 2_000u64;
    let owner = Publisher::create(&name, &small().ring_slots(8192)).unwrap();
    owner.register_spec("/two", &named_ticks()).unwrap();
    let mut sub = Peer::spawn(&[
        "pubsub-inline-sub",
        &name,
        "/two",
        &(2 * count).to_string(),
        "park",
    ]);
    sub.expect("ready");
    // Paced (50 us apart), so that the subscriber parks between messages and every message
    // has to wake it from another process.
    let mut pubs = two_inline_publishers(&name, "/two", count, 50);
    for p in &mut pubs {
        p.expect(&format!("sent {count}"));
    }
    let (last, ok) = sub.finish(Duration::from_secs(30));
    assert!(ok, "subscriber failed: {last}");
    assert_eq!(last, format!("got {} lost 0", 2 * count));
}

#[test]
fn two_publisher_processes_and_a_slow_subscriber_count_every_loss_exactly() {
    let name = unique("pi-slow-two");
    let _c = Cleanup(name.clone());
    let count = 3000u64;
    let owner = Publisher::create(&name, &small().ring_slots(64)).unwrap();
    owner.register_spec("/slow", &named_ticks()).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s
        .subscribe_typed_named::<Tick>("/slow", common::tick::TICK)
        .unwrap();
    // Paced, so that the two publishers' claims interleave on the ring for the whole run
    // while the subscriber falls behind, catches up and falls behind again.
    let mut pubs = two_inline_publishers(&name, "/slow", count, 20);
    let total = 2 * count;
    let lost = common::lagging::receive_slowly(&mut sub, total, |m| {
        let t = *m.value::<Tick>().unwrap();
        assert!(t.whole(), "torn tick at {}", m.seq());
        (t.id, t.n)
    });
    for p in &mut pubs {
        p.expect(&format!("sent {count}"));
    }
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    let st = s.topics().unwrap();
    assert_eq!((st[0].published, st[0].lagged), (total, lost));
}

#[test]
fn a_single_publisher_topic_has_one_publisher_at_a_time() {
    let name = unique("pi-single");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let spec = TopicSpec::inline(8).typed::<u64>().single_publisher();
    let t = p.register_spec("/s", &spec).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<u64>("/s").unwrap();
    // Another live publisher: refused; the same registration without the setting: refused.
    let q = Publisher::open(&name).unwrap();
    let held = q.register_spec("/s", &spec).unwrap_err();
    assert_eq!(held.kind(), ErrorKind::InUse);
    // The error names the topic, not only the region.
    assert!(held.to_string().contains(&format!("'{name}/s'")), "{held}");
    assert_eq!(
        q.register_spec("/s", &TopicSpec::inline(8).typed::<u64>())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    // Publish through the writer (checked once) and the topic handle alike.
    {
        let mut w = p.inline_writer::<u64>(&t).unwrap();
        for i in 0..3u64 {
            assert_eq!(w.publish(&i).unwrap(), i);
        }
    }
    assert_eq!(p.publish_typed(&t, &3u64).unwrap(), 3);
    for i in 0..4u64 {
        assert_eq!(sub.try_recv_value::<u64>().unwrap(), i);
    }
    assert_eq!(
        p.inline_writer::<u32>(&t).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    // The holder leaves: the next one takes the lease and continues the sequence.
    drop(p);
    let t2 = q.register_spec("/s", &spec).unwrap();
    assert_eq!(q.publish_typed(&t2, &4u64).unwrap(), 4);
    assert_eq!(sub.try_recv_value::<u64>().unwrap(), 4);
}

/// A peer that registered the single-publisher inline topic "/s" (its lease held) and waits
/// for a subscriber that never comes; `owner`'s registration of "/s" is refused with `InUse`
/// meanwhile. Returns the peer and the topic's spec.
fn peer_holding_the_lease_of_s(name: &str, owner: &Publisher) -> (Peer, TopicSpec) {
    let mut peer = Peer::spawn(&[
        "pubsub-inline-pub",
        name,
        "/s",
        "1",
        "1",
        "5",
        "0",
        "single",
    ]);
    peer.expect("ready");
    let spec = named_ticks().single_publisher();
    assert_eq!(
        owner.register_spec("/s", &spec).unwrap_err().kind(),
        ErrorKind::InUse
    );
    (peer, spec)
}

#[test]
fn a_dead_single_publishers_lease_is_taken_over() {
    let name = unique("pi-lease");
    let _c = Cleanup(name.clone());
    let owner = Publisher::create(&name, &small()).unwrap();
    let (mut peer, spec) = peer_holding_the_lease_of_s(&name, &owner);
    peer.kill9();
    let t = owner.register_spec("/s", &spec).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/s").unwrap();
    owner.publish_typed(&t, &Tick::new(2, 0)).unwrap();
    let m = sub.try_recv().unwrap();
    assert_eq!(m.value::<Tick>().unwrap().id, 2);
}

/// `details` reports an inline topic's message size as its largest message, typed or not
/// (an untyped one was reported with the block size).
#[test]
fn details_report_an_inline_topics_message_size() {
    let name = unique("pi-details");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    p.register_spec("/raw", &TopicSpec::inline(12)).unwrap();
    p.register_spec("/ticks", &TopicSpec::new(TopicMode::Inline).typed::<Tick>())
        .unwrap();
    p.register("/blocks").unwrap();
    let d = weft::pubsub::details(&name).unwrap();
    let max = |n: &str| d.topics.iter().find(|t| t.stats.name == n).unwrap().max_len;
    assert_eq!(max("/raw"), 12);
    assert_eq!(max("/ticks"), std::mem::size_of::<Tick>() as u64);
    assert_eq!(max("/blocks"), small().block_size_bytes() as u64);
}

#[test]
fn values_are_read_by_size_from_every_kind_of_topic() {
    let name = unique("pi-value");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let inl = p.register_spec("/inl", &TopicSpec::inline(8)).unwrap();
    let blk = p.register("/blk").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut si = s.subscribe("/inl").unwrap();
    let mut sb = s.subscribe("/blk").unwrap();
    // Another size than the topic's message: refused, and the message is passed (a reader
    // is never stuck behind one it cannot take).
    p.publish(&inl, &7u64.to_ne_bytes()).unwrap();
    assert_eq!(
        si.try_recv_value::<u32>().unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert!(matches!(si.try_recv_value::<u64>(), Err(Error::Empty)));
    p.publish(&inl, &8u64.to_ne_bytes()).unwrap();
    assert_eq!(si.try_recv_value::<u64>().unwrap(), 8);
    assert!(matches!(si.try_recv_value::<u64>(), Err(Error::Empty)));
    // A blocks topic: the sample's payload, copied; a payload of another length is refused.
    p.publish(&blk, &9u64.to_ne_bytes()).unwrap();
    assert_eq!(sb.try_recv_value::<u64>().unwrap(), 9);
    p.publish(&blk, &[1, 2, 3]).unwrap();
    assert_eq!(
        sb.try_recv_value::<u64>().unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert!(matches!(sb.try_recv_value::<u64>(), Err(Error::Empty)));
    // A zero-sized type matches no inline message; a latest-value topic refuses another size
    // too.
    p.publish(&inl, &10u64.to_ne_bytes()).unwrap();
    assert_eq!(
        si.try_recv_value::<()>().unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    let lat = p
        .register_spec("/lat", &TopicSpec::inline(8).latest())
        .unwrap();
    let mut sl = s.subscribe("/lat").unwrap();
    p.publish(&lat, &11u64.to_ne_bytes()).unwrap();
    p.publish(&lat, &12u64.to_ne_bytes()).unwrap();
    assert_eq!(
        sl.try_recv_value::<u32>().unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    p.publish(&lat, &13u64.to_ne_bytes()).unwrap();
    assert_eq!(sl.try_recv_value::<u64>().unwrap(), 13);
}

/// A latest-value message of nearly a kilobyte, whose every word derives from its counter: a
/// copy mixed from two publishes shows.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Frame {
    n: u64,
    words: [u64; 120],
}

impl Frame {
    fn new(n: u64) -> Frame {
        Frame {
            n,
            words: core::array::from_fn(|i| n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64),
        }
    }
    fn whole(&self) -> bool {
        *self == Frame::new(self.n)
    }
}

impl PartialEq for Frame {
    fn eq(&self, o: &Frame) -> bool {
        bytemuck::bytes_of(self) == bytemuck::bytes_of(o)
    }
}

/// 64 descriptor slots: inline areas of 4 KiB of slots, so latest values of up to 1016 bytes.
fn large() -> Config {
    small().ring_slots(64)
}

#[test]
fn a_latest_inline_topic_carries_messages_larger_than_a_line() {
    let name = unique("pi-large");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &large()).unwrap();
    assert_eq!(weft::pubsub::latest_inline_max(64), 1016);
    assert_eq!(weft::pubsub::latest_inline_max(2), 56);
    // Larger than a line only for latest values, and only as large as the area holds.
    for bad in [
        TopicSpec::inline(57),
        TopicSpec::inline(1017).latest(),
        TopicSpec::inline(1 << 20).latest(),
    ] {
        assert_eq!(
            p.register_spec("/bad", &bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    let spec = TopicSpec::new(TopicMode::Inline).typed::<Frame>().latest();
    let t = p.register_spec("/frame", &spec).unwrap();
    assert_eq!(t.message_size(), Some(std::mem::size_of::<Frame>()));
    let raw = p
        .register_spec("/raw", &TopicSpec::inline(1016).latest())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<Frame>("/frame").unwrap();
    let mut sraw = s.subscribe("/raw").unwrap();
    assert!(matches!(sub.try_recv_value::<Frame>(), Err(Error::Empty)));
    // Every receive path gets the newest whole value: by value, into a buffer, as an owned
    // sample (a heap copy, 16-aligned for `value`), as a borrowed one.
    for n in 1..=3 {
        p.publish_typed(&t, &Frame::new(n)).unwrap();
    }
    assert!(sub.try_recv_value::<Frame>().unwrap() == Frame::new(3));
    assert!(matches!(sub.try_recv_value::<Frame>(), Err(Error::Empty)));
    for n in 4..=9 {
        p.publish_typed(&t, &Frame::new(n)).unwrap();
    }
    let mut buf = vec![0u8; std::mem::size_of::<Frame>() + 8];
    // A buffer shorter than the message is refused before anything is received.
    assert_eq!(
        sub.try_recv_into(&mut buf[..100]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        sub.try_recv_into(&mut buf).unwrap(),
        std::mem::size_of::<Frame>()
    );
    assert!(
        bytemuck::pod_read_unaligned::<Frame>(&buf[..std::mem::size_of::<Frame>()])
            == Frame::new(9)
    );
    p.publish_typed(&t, &Frame::new(10)).unwrap();
    let m = sub.try_recv().unwrap();
    assert_eq!(m.len(), std::mem::size_of::<Frame>());
    assert!(*m.value::<Frame>().unwrap() == Frame::new(10));
    assert_eq!(m.seq(), 9);
    p.publish_typed(&t, &Frame::new(11)).unwrap();
    let r = sub.try_recv_ref().unwrap();
    assert!(*r.value::<Frame>().unwrap() == Frame::new(11));
    drop(r);
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    // Untyped, the largest size the area holds.
    let big: Vec<u8> = (0..1016u32).map(|i| (i % 251) as u8).collect();
    p.publish(&raw, &big).unwrap();
    assert_eq!(
        &*sraw.recv_timeout(Duration::from_secs(5)).unwrap(),
        &big[..]
    );
    assert!(matches!(sraw.try_recv_ref(), Err(Error::Empty)));
    let rev: Vec<u8> = big.iter().rev().copied().collect();
    p.publish(&raw, &rev).unwrap();
    assert_eq!(&*sraw.try_recv_ref().unwrap(), &rev[..]);
    assert!(matches!(sraw.try_recv_ref(), Err(Error::Empty)));
    assert_eq!(
        p.publish(&raw, &big[..1000]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let d = weft::pubsub::details(&name).unwrap();
    let max = |n: &str| d.topics.iter().find(|t| t.stats.name == n).unwrap().max_len;
    assert_eq!(max("/raw"), 1016);
}

#[test]
fn a_prefix_read_copies_the_head_and_returns_the_whole_length() {
    let name = unique("pi-prefix");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &large()).unwrap();
    let frame = p
        .register_spec("/frame", &TopicSpec::inline(1016).latest())
        .unwrap();
    let plain = p.register_spec("/plain", &TopicSpec::inline(24)).unwrap();
    let blocks = p.register("/blocks").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sf = s.subscribe("/frame").unwrap();
    let mut sp = s.subscribe("/plain").unwrap();
    let mut sb = s.subscribe("/blocks").unwrap();
    let mut head = [0u8; 16];
    for sub in [&mut sf, &mut sp, &mut sb] {
        assert!(matches!(sub.try_recv_prefix(&mut head), Err(Error::Empty)));
    }
    // A latest value: the newest one's first bytes, and its whole length.
    let big = |k: u8| -> Vec<u8> { (0..1016u32).map(|i| (i % 251) as u8 ^ k).collect() };
    for k in 1..=3 {
        p.publish(&frame, &big(k)).unwrap();
    }
    assert_eq!(sf.try_recv_prefix(&mut head).unwrap(), 1016);
    assert_eq!(head, big(3)[..16]);
    assert!(matches!(sf.try_recv_prefix(&mut head), Err(Error::Empty)));
    // Not a whole number of words.
    p.publish(&frame, &big(6)).unwrap();
    let mut odd = [0xee; 13];
    assert_eq!(sf.try_recv_prefix(&mut odd).unwrap(), 1016);
    assert_eq!(odd, big(6)[..13]);
    // A prefix of the bulk-copied size and one longer than the message.
    p.publish(&frame, &big(4)).unwrap();
    let mut long = vec![0u8; 600];
    assert_eq!(sf.try_recv_prefix(&mut long).unwrap(), 1016);
    assert_eq!(long, big(4)[..600]);
    p.publish(&frame, &big(5)).unwrap();
    let mut longer = vec![0xee; 1100];
    assert_eq!(sf.try_recv_prefix(&mut longer).unwrap(), 1016);
    assert_eq!(longer[..1016], big(5)[..]);
    assert!(
        longer[1016..].iter().all(|&b| b == 0xee),
        "past the message"
    );
    // A plain inline topic: every message in order, an empty buffer still takes one.
    for k in 0..3u8 {
        p.publish(&plain, &[k; 24]).unwrap();
    }
    let mut five = [0xee; 5];
    assert_eq!(sp.try_recv_prefix(&mut five).unwrap(), 24);
    assert_eq!(five, [0; 5]);
    assert_eq!(sp.try_recv_prefix(&mut []).unwrap(), 24);
    assert_eq!(sp.try_recv_prefix(&mut five).unwrap(), 24);
    assert_eq!(five, [2; 5]);
    assert!(matches!(sp.try_recv_prefix(&mut five), Err(Error::Empty)));
    // Overrun: the exact count, then the oldest message still in the ring.
    let cap = 64;
    for k in 3..103u8 {
        p.publish(&plain, &[k; 24]).unwrap();
    }
    let skipped = (103 - cap) - 3;
    assert!(
        matches!(sp.try_recv_prefix(&mut five), Err(Error::Lagged { skipped: s }) if s == skipped),
        "{skipped} skipped"
    );
    assert_eq!(sp.try_recv_prefix(&mut five).unwrap(), 24);
    assert_eq!(five, [103 - cap as u8; 5]);
    // A blocks topic: messages of any length up to the block.
    p.publish(&blocks, &[7; 100]).unwrap();
    p.publish(&blocks, &[8; 3]).unwrap();
    assert_eq!(sb.try_recv_prefix(&mut head).unwrap(), 100);
    assert_eq!(head, [7; 16]);
    let mut wide = [0xee; 16];
    assert_eq!(sb.try_recv_prefix(&mut wide).unwrap(), 3);
    assert_eq!(wide[..3], [8; 3]);
    assert_eq!(wide[3..], [0xee; 13], "past the message");
    // Once the topic is gone and everything was read: `Closed`.
    p.unregister(&frame).unwrap();
    assert!(matches!(sf.try_recv_prefix(&mut head), Err(Error::Closed)));
}

/// A single-publisher latest-value topic of `Frame`s in region `name`, four slots of 1 KiB (the
/// publisher laps the ring every fourth publish, so copies that overlap a write are
/// frequent), the subscription `subscribe` makes, and a thread publishing frames `1 ..= n`.
fn racing_frames(
    name: &str,
    n: u64,
    subscribe: impl FnOnce(&Subscriber) -> weft::pubsub::Subscription,
) -> (
    Subscriber,
    weft::pubsub::Subscription,
    std::thread::JoinHandle<Publisher>,
) {
    let p = Publisher::create(name, &large()).unwrap();
    let spec = TopicSpec::new(TopicMode::Inline)
        .typed::<Frame>()
        .latest()
        .single_publisher();
    let t = p.register_spec("/frame", &spec).unwrap();
    let s = Subscriber::connect(name).unwrap();
    let sub = subscribe(&s);
    let publisher = std::thread::spawn(move || {
        {
            let mut w = p.inline_writer::<Frame>(&t).unwrap();
            for i in 1..=n {
                w.publish(&Frame::new(i)).unwrap();
            }
        }
        p
    });
    (s, sub, publisher)
}

/// How long a racing reader below polls for the publisher's last value before it fails: it
/// spins on `Empty`, so a receive that never returned the last value would otherwise hang.
const RACE_DEADLINE: Duration = Duration::from_secs(120);

/// Fails the test once `RACE_DEADLINE` has passed since `started` (looked at every 4096th
/// poll, so that the clock does not slow the race).
fn race_alive(started: std::time::Instant, polls: &mut u64, last: u64, n: u64) {
    *polls += 1;
    if (*polls).is_multiple_of(4096) {
        assert!(
            started.elapsed() < RACE_DEADLINE,
            "the last value ({n}) never arrived: the newest received was {last}"
        );
    }
}

#[test]
fn a_large_latest_inline_value_is_never_torn_by_a_racing_publisher() {
    let name = unique("pi-large-race");
    let _c = Cleanup(name.clone());
    let n: u64 = if cfg!(miri) { 50 } else { 300_000 };
    let (_s, mut sub, publisher) =
        racing_frames(&name, n, |s| s.subscribe_typed::<Frame>("/frame").unwrap());
    let (mut last, mut received) = (0u64, 0u64);
    let mut buf = vec![0u8; std::mem::size_of::<Frame>()];
    let (started, mut polls) = (std::time::Instant::now(), 0u64);
    while last != n {
        race_alive(started, &mut polls, last, n);
        // Rotate through the by-value, the into-a-buffer and two prefix paths (21 and 204
        // bytes, both within the value's bulk-copied words).
        let f = match received % 4 {
            0 => match sub.try_recv_value::<Frame>() {
                Ok(f) => f,
                Err(Error::Empty) => continue,
                Err(e) => panic!("{e}"),
            },
            1 => match sub.try_recv_into(&mut buf) {
                Ok(_) => bytemuck::pod_read_unaligned(&buf),
                Err(Error::Empty) => continue,
                Err(e) => panic!("{e}"),
            },
            k => {
                let len = if k == 2 { 21 } else { 204 };
                let mut head = vec![0u8; len];
                match sub.try_recv_prefix(&mut head) {
                    Ok(whole) => assert_eq!(whole, std::mem::size_of::<Frame>()),
                    Err(Error::Empty) => continue,
                    Err(e) => panic!("{e}"),
                }
                let n = u64::from_ne_bytes(head[..8].try_into().unwrap());
                assert_eq!(
                    head,
                    bytemuck::bytes_of(&Frame::new(n))[..len],
                    "a torn {len}-byte prefix after {received} ({n})"
                );
                Frame::new(n)
            }
        };
        assert!(f.whole(), "a torn value after {received} ({})", f.n);
        assert!(f.n > last, "{} after {last}", f.n);
        last = f.n;
        received += 1;
    }
    let _p = publisher.join().unwrap();
    assert!(received >= 1);
}

#[test]
fn a_prefix_of_a_latest_inline_value_is_never_torn_by_a_racing_publisher() {
    // A prefix copy is short, so a publisher lapping the four slots rarely meets one: many
    // more publishes than the test above, every read a prefix.
    let name = unique("pi-prefix-race");
    let _c = Cleanup(name.clone());
    let n: u64 = if cfg!(miri) { 50 } else { 3_000_000 };
    let (_s, mut sub, publisher) = racing_frames(&name, n, |s| s.subscribe("/frame").unwrap());
    let (mut last, mut received) = (0u64, 0u64);
    let (mut short, mut long) = ([0u8; 21], [0u8; 204]);
    let (started, mut polls) = (std::time::Instant::now(), 0u64);
    while last != n {
        race_alive(started, &mut polls, last, n);
        // Two lengths within the value's bulk-copied words, one not a whole number of words.
        let head: &mut [u8] = if received % 2 == 0 {
            &mut short
        } else {
            &mut long
        };
        match sub.try_recv_prefix(head) {
            Ok(whole) => assert_eq!(whole, std::mem::size_of::<Frame>()),
            Err(Error::Empty) => continue,
            Err(e) => panic!("{e}"),
        }
        let k = u64::from_ne_bytes(head[..8].try_into().unwrap());
        assert!(
            *head == bytemuck::bytes_of(&Frame::new(k))[..head.len()],
            "a torn {}-byte prefix after {received} ({k})",
            head.len()
        );
        assert!(k > last, "{k} after {last}");
        last = k;
        received += 1;
    }
    let _p = publisher.join().unwrap();
}

#[test]
fn an_inline_topic_of_another_region_is_refused_even_once_that_region_is_gone() {
    // A handle keeps where its ring and entry lie in its own region's mapping: another
    // publisher never follows them, even after that mapping is gone.
    let name = unique("pi-foreign");
    let _c = Cleanup(name.clone());
    let other = unique("pi-foreign2");
    let _c2 = Cleanup(other.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let mine = p.register_spec("/t", &TopicSpec::inline(8)).unwrap();
    let q = Publisher::create(&other, &small()).unwrap();
    let foreign = q.register_spec("/t", &TopicSpec::inline(8)).unwrap();
    for _ in 0..2 {
        assert_eq!(
            p.publish(&foreign, &[1; 8]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            p.publish_typed(&foreign, &1u64).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    drop(q);
    assert!(
        !std::path::Path::new(&common::shm_path(&other)).exists(),
        "the other region is gone"
    );
    assert_eq!(
        p.publish(&foreign, &[1; 8]).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(p.publish(&mine, &[2; 8]).unwrap(), 0);
}

/// A dead single publisher's lease ends with the reclaim of its row: once a
/// newcomer has taken that row (and lives in it), the lease word must not still name the row,
/// or every other participant is refused the topic with `InUse` for as long as the newcomer
/// lives.
#[test]
fn a_dead_holders_lease_does_not_pass_to_the_newcomer_in_its_row() {
    let name = unique("pi-lease-row");
    let _c = Cleanup(name.clone());
    // Two rows: the owner's and the peer's, which the newcomer must take after the peer dies.
    let owner = Publisher::create(&name, &small().participants(2)).unwrap();
    let (mut peer, spec) = peer_holding_the_lease_of_s(&name, &owner);
    peer.kill9();
    // The newcomer reclaims the dead row and lives in it.
    let newcomer = Subscriber::connect(&name).unwrap();
    let t = owner
        .register_spec("/s", &spec)
        .expect("the dead holder's lease is free once its row is reclaimed");
    let mut sub = newcomer.subscribe("/s").unwrap();
    owner.publish_typed(&t, &Tick::new(2, 0)).unwrap();
    assert_eq!(sub.try_recv().unwrap().value::<Tick>().unwrap().id, 2);
}

/// The reclaim of a dead inline publisher's row voids the sequence its record says it held,
/// so that a non-blocking receive goes straight past it, before any receive had to wait on it.
#[test]
fn the_reclaim_of_a_dead_inline_claimant_voids_its_sequence() {
    killed_holding_a_sequence(false, true);
}

/// A slot whose stamp says an earlier lap is being written (an odd stamp
/// other than `writing(x)`, here `writing(8)` by a live publisher) is left to that lap's own
/// writer: the reclaim of a dead publisher holding `x = 16` of the same slot must not void `x`
/// over the live write (`void(k) = writing(k + 1)`: only the congruence of `k` tells them
/// apart). Voided, the subscriber waiting for 8 is told it lagged, and the live write is lost.
#[test]
fn a_dead_claim_is_not_voided_over_a_live_write_of_an_earlier_lap() {
    let name = unique("pi-dead-lap");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_spec("/d", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/d").unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let pid = u64::from(std::process::id());
    let ours = |f: &std::fs::File| -> Vec<u64> {
        (0..l.participants)
            .filter(|&r| common::region::get64(f, 512 + 64 * r) & ((1 << 22) - 1) == pid)
            .collect()
    };
    let before = ours(&f);
    let live = Publisher::open(&name).unwrap();
    let live_row = *ours(&f).iter().find(|r| !before.contains(r)).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    for i in 0..SLOTS {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), i);
        assert_eq!(sub.try_recv().unwrap().seq(), i);
    }
    // `live` claimed 8 (slot 0) and is writing it: its record, the odd stamp, the counter.
    put64(&f, l.ext(live_row) + 40, 1);
    put64(&f, l.ext(live_row) + 48, SLOTS);
    put64(&f, l.inline_area(0) + 192, 2 * SLOTS + 1);
    put64(&f, l.inline_area(0) + 64, SLOTS + 1);
    for i in SLOTS + 1..2 * SLOTS {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), i);
    }
    // The peer claims 16 (slot 0 again) and dies.
    peer.kill9();
    dead_claim(&name, row, 0, 0, 2 * SLOTS, false);
    p.reclaim().unwrap();
    assert_eq!(
        common::region::get64(&f, l.inline_area(0) + 192),
        2 * SLOTS + 1,
        "the live write's stamp"
    );
    assert_eq!(s.topics().unwrap()[0].recovered, 0);
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    drop(live);
}

/// The reclaim of a dead inline publisher's row clears its claim record once
/// the claim is settled. Left in the row, the record becomes the newcomer's that takes the row:
/// a live participant's claim in flight, which keeps the unregistered topic's ring (and its
/// inline area) from ever being freed while the newcomer lives.
#[test]
fn a_dead_claim_record_does_not_pass_to_the_newcomer_in_its_row() {
    let name = unique("pi-dead-rec");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small().participants(2).inline_topics(1)).unwrap();
    let t = p.register_spec("/d", &TopicSpec::inline(8)).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/other", "1"]);
    peer.expect("ready 1");
    let row = peer_row(&name);
    assert_eq!(p.publish(&t, &0u64.to_le_bytes()).unwrap(), 0);
    peer.kill9();
    dead_claim(&name, row, 0, 0, 1, false); // /d: entry 0, area 0
    // The newcomer takes the dead row (the only other one) and reclaims it.
    let _newcomer = Subscriber::connect(&name).unwrap();
    p.unregister(&t).unwrap();
    let e = p.register_spec("/e", &TopicSpec::inline(8));
    assert!(
        e.is_ok(),
        "the only inline area is free again, yet: {:?}",
        e.err()
    );
}

/// `try_recv_into` refuses, before anything is received, a buffer shorter than the topic's
/// largest message, even by one byte: an inline topic's message size, else the block size.
#[test]
fn try_recv_into_refuses_a_buffer_one_byte_short() {
    let name = unique("pi-into");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let inl = p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
    let blk = p.register("/b").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut si = s.subscribe("/i").unwrap();
    let mut sb = s.subscribe("/b").unwrap();
    // The length each needs, as the subscription says it.
    assert_eq!((si.max_len(), sb.max_len()), (8, 256));
    p.publish(&inl, &5u64.to_le_bytes()).unwrap();
    p.publish(&blk, b"abc").unwrap();
    let mut short = [0u8; 7];
    assert_eq!(
        si.try_recv_into(&mut short).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut short = [0u8; 255];
    assert_eq!(
        sb.try_recv_into(&mut short).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Nothing was received by the refusals.
    let mut buf = [0u8; 8];
    assert_eq!(si.try_recv_into(&mut buf).unwrap(), 8);
    assert_eq!(buf, 5u64.to_le_bytes());
    let mut buf = [0u8; 256];
    assert_eq!(sb.try_recv_into(&mut buf).unwrap(), 3);
    assert_eq!(&buf[..3], b"abc");
}
