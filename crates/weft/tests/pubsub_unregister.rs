//! Unregistering topics: subscribers drain and then get `Closed`, publishes are refused, the
//! entry (with its ring's blocks, or its inline area) comes back once nobody reads it, and the
//! name can be registered again as a new topic.

mod common;

use common::region::{Layout, get32, get64, put64};
use common::{Cleanup, Peer, region_file, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, Topic, TopicMode, TopicSpec};
use weft::{Error, ErrorKind, WaitStrategy};

fn two_topics() -> Config {
    Config::default()
        .topics(2)
        .inline_topics(1)
        .ring_slots(8)
        .blocks(32)
        .block_size(128)
        .participants(8)
}

#[test]
fn subscribers_drain_an_unregistered_topic_then_get_closed() {
    for spec in [
        TopicSpec::new(TopicMode::Blocks),
        TopicSpec::new(TopicMode::Latest),
        TopicSpec::inline(8),
    ] {
        let name = unique("pu-drain");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &two_topics()).unwrap();
        let t = p.register_spec("/t", &spec).unwrap();
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/t").unwrap();
        for i in 0..3u64 {
            p.publish(&t, &i.to_le_bytes()).unwrap();
        }
        p.unregister(&t).unwrap();
        p.unregister(&t).unwrap(); // twice: nothing more happens
        let mode = spec.mode();
        assert!(
            matches!(p.publish(&t, &[0; 8]), Err(Error::Closed)),
            "{mode:?}"
        );
        if mode != TopicMode::Inline {
            assert!(matches!(p.loan(&t), Err(Error::Closed)), "{mode:?}");
        }
        // Everything published before is delivered (a latest topic: the newest), then Closed.
        let wanted: &[u64] = if mode == TopicMode::Latest {
            &[2]
        } else {
            &[0, 1, 2]
        };
        let (last, before) = wanted.split_last().unwrap();
        for &i in before {
            assert_eq!(&*sub.try_recv().unwrap(), &i.to_le_bytes(), "{mode:?}");
        }
        // The last one borrowed, so that the borrowed receive's common case (a spare entry)
        // is where the next calls start: every receive then says Closed, not Empty.
        assert_eq!(
            &*sub.try_recv_ref().unwrap(),
            &last.to_le_bytes(),
            "{mode:?}"
        );
        assert!(matches!(sub.try_recv_ref(), Err(Error::Closed)), "{mode:?}");
        assert!(
            matches!(sub.try_recv_value::<u64>(), Err(Error::Closed)),
            "{mode:?}"
        );
        assert!(
            matches!(sub.try_recv_prefix(&mut [0; 4]), Err(Error::Closed)),
            "{mode:?}"
        );
        assert!(matches!(sub.try_recv(), Err(Error::Closed)), "{mode:?}");
        assert!(matches!(
            sub.recv_timeout(Duration::from_secs(1)),
            Err(Error::Closed)
        ));
        // Gone from discovery; a new subscription does not find it.
        assert!(s.topics().unwrap().is_empty());
        assert_eq!(s.subscribe("/t").unwrap_err().kind(), ErrorKind::NotFound);
    }
}

#[test]
fn a_parked_subscriber_is_woken_by_the_unregister() {
    for spec in [TopicSpec::new(TopicMode::Blocks), TopicSpec::inline(8)] {
        let name = unique("pu-park");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &two_topics()).unwrap();
        let t = p.register_spec("/t", &spec).unwrap();
        let cfg = Config::default().wait(WaitStrategy::Park);
        let s = Subscriber::connect_with(&name, &cfg).unwrap();
        let mut sub = s.subscribe("/t").unwrap();
        let waiter =
            std::thread::spawn(move || sub.recv_timeout(Duration::from_secs(5)).map(|_| ()));
        std::thread::sleep(Duration::from_millis(50));
        p.unregister(&t).unwrap();
        assert!(matches!(waiter.join().unwrap(), Err(Error::Closed)));
    }
}

#[test]
fn the_entry_comes_back_once_nobody_reads_the_topic() {
    let name = unique("pu-reuse");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &two_topics()).unwrap();
    let a = p.register("/a").unwrap();
    let i = p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/a").unwrap();
    for k in 0..5u64 {
        p.publish(&a, &k.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().free_blocks, 32 - 5);
    // The inline topic has no subscriber: unregistered, its entry and area are free at once.
    p.unregister(&i).unwrap();
    p.register_spec("/j", &TopicSpec::inline(16)).unwrap();
    // /a still has a subscriber: its entry stays taken, the table (two topics) is full.
    p.unregister(&a).unwrap();
    assert_eq!(
        p.register("/b").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Its statistics stay readable while the subscriber keeps the entry.
    assert_eq!(p.stats(&a).unwrap().published, 5);
    // Its ring's blocks wait for the subscriber too.
    assert_eq!(sub.try_recv().unwrap().seq(), 0);
    drop(sub);
    // Nobody reads /a now: the next registration gets its entry, and the blocks come back.
    let b = p.register("/b").unwrap();
    assert_eq!(p.region_info().free_blocks, 32);
    // The old handle cannot publish into the entry's new topic.
    assert!(matches!(p.publish(&a, b"stale"), Err(Error::Closed)));
    let mut sb = s.subscribe("/b").unwrap();
    p.publish(&b, b"fresh").unwrap();
    assert_eq!(&*sb.try_recv().unwrap(), b"fresh");
    assert_eq!(p.stats(&b).unwrap().published, 1);
    // Nor read its statistics: they are another topic's now.
    assert!(
        matches!(p.stats(&a), Err(Error::Closed)),
        "{:?}",
        p.stats(&a)
    );
}

#[test]
fn registering_the_name_again_makes_a_new_topic() {
    let name = unique("pu-again");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let old = p.register("/t").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut old_sub = s.subscribe("/t").unwrap();
    p.publish(&old, b"old").unwrap();
    p.unregister(&old).unwrap();
    let new = p.register("/t").unwrap();
    assert_ne!(new, old);
    p.publish(&new, b"new").unwrap();
    // The old subscription ends with the old topic; a new one sees only the new topic, even
    // with history.
    assert_eq!(&*old_sub.try_recv().unwrap(), b"old");
    assert!(matches!(old_sub.try_recv(), Err(Error::Closed)));
    let mut new_sub = s.subscribe_with_history("/t", 8).unwrap();
    assert_eq!(&*new_sub.try_recv().unwrap(), b"new");
    assert!(matches!(new_sub.try_recv(), Err(Error::Empty)));
}

#[test]
fn an_entry_registered_again_in_a_mode_with_another_ring_size_works() {
    // One entry, registered in turn as a blocks topic (a ring of the region's 8 slots) and a
    // latest topic (a ring of 2): sequences go on from one registration to the next, so each
    // one starts with slots whose stamps another ring size left, at tails that are not
    // multiples of either size.
    let name = unique("pu-resize");
    let _c = Cleanup(name.clone());
    let config = two_topics().topics(1);
    let p = Publisher::create(&name, &config).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut next = 0u64;
    for (round, (mode, count)) in [
        (TopicMode::Blocks, 13u64),
        (TopicMode::Latest, 5),
        (TopicMode::Blocks, 11),
        (TopicMode::Latest, 9),
        (TopicMode::Blocks, 20),
    ]
    .into_iter()
    .enumerate()
    {
        let t = p.register_with("/t", mode).unwrap();
        let mut sub = s.subscribe("/t").unwrap();
        for i in 0..count {
            let v = next + i;
            let seq = p
                .publish(&t, &v.to_le_bytes())
                .unwrap_or_else(|e| panic!("round {round} ({mode:?}), message {i}: {e}"));
            assert_eq!(seq, v);
            if mode == TopicMode::Blocks {
                let m = sub.try_recv().unwrap();
                assert_eq!((m.seq(), &*m), (v, &v.to_le_bytes()[..]));
            }
        }
        next += count;
        if mode == TopicMode::Latest {
            let m = sub.try_recv().unwrap();
            let v = next - 1;
            assert_eq!((m.seq(), &*m), (v, &v.to_le_bytes()[..]));
        }
        assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        p.unregister(&t).unwrap();
        drop(sub);
    }
    // Every ring's block went back to the pool with its registration, except the one the
    // publisher keeps for its next loan.
    let info = p.region_info();
    assert!(
        info.free_blocks + info.kept_blocks == info.blocks,
        "{info:?}"
    );
}

#[test]
fn a_killed_subscriber_does_not_keep_an_unregistered_topic() {
    let name = unique("pu-dead");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &two_topics()).unwrap();
    let a = p.register("/a").unwrap();
    p.register("/other").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/a", "0"]);
    peer.expect("ready");
    peer.expect("holding 0");
    p.unregister(&a).unwrap();
    peer.kill9();
    // Its subscription counts until it is reclaimed...
    assert_eq!(
        p.register("/b").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    p.reclaim().unwrap();
    // ...and then the entry is free.
    p.register("/b").unwrap();
}

#[test]
fn the_existing_spec_is_the_registered_topics_not_one_still_draining() {
    let name = unique("un-spec");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &two_topics()).unwrap();
    let spec = TopicSpec::inline(8).latest();
    let old = p.register_spec("/t", &spec).unwrap();
    assert_eq!(p.existing_spec("/t").unwrap(), Some(spec));
    // Unregistered while a subscription still reads it: its entry stays, closed, under the
    // name, and a blocks topic of the same name is registered beside it.
    let s = Subscriber::connect(&name).unwrap();
    let _draining = s.subscribe("/t").unwrap();
    p.unregister(&old).unwrap();
    assert_eq!(p.existing_spec("/t").unwrap(), None);
    let details = weft::pubsub::details(&name).unwrap();
    assert_eq!(details.topics.len(), 1, "{details:?}");
    p.register_with("/t", TopicMode::Latest).unwrap();
    assert_eq!(
        p.existing_spec("/t").unwrap(),
        Some(TopicSpec::new(TopicMode::Latest))
    );
    assert_eq!(p.existing_spec("/absent").unwrap(), None);
    assert_eq!(
        p.existing_spec("no-slash").unwrap_err().kind(),
        ErrorKind::InvalidName
    );
}

/// Readers that hold no registration lock (a publisher's first look before it registers, a
/// subscriber, `existing_spec`) while another publisher unregisters the topic and registers
/// the name again, in another mode or size, over and over: each gets one registration's
/// topic or a plain refusal, never `Corrupt` from the fields of two registrations mixed.
#[test]
fn readers_racing_a_name_registered_again_in_another_mode_see_one_registration() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const FLIPS: usize = 20_000;
    let name = unique("pu-race");
    let _c = Cleanup(name.clone());
    let config = two_topics().inline_topics(2);
    let specs = [
        TopicSpec::inline(8).typed::<u64>(),
        TopicSpec::new(TopicMode::Latest),
        TopicSpec::inline(24).latest(),
        TopicSpec::inline(16),
    ];
    // What `existing_spec` says of each: the spec to join it with, untyped.
    let joining = [
        TopicSpec::inline(8),
        TopicSpec::new(TopicMode::Latest),
        TopicSpec::inline(24).latest(),
        TopicSpec::inline(16),
    ];
    let flipper = Publisher::create(&name, &config).unwrap();
    let stop = AtomicBool::new(false);
    let (joined, subscribed) = (AtomicU64::new(0), AtomicU64::new(0));
    let not_corrupt = |who: &str, r: weft::Result<()>| {
        if let Err(e) = r {
            assert_ne!(e.kind(), ErrorKind::Corrupt, "{who}: {e}");
        }
    };
    std::thread::scope(|scope| {
        // The readers stop when the flips end, or when a flip fails (not hang in the scope).
        let _stop = StopOnDrop(&stop);
        scope.spawn(|| {
            let p = Publisher::open(&name).unwrap();
            while !stop.load(Ordering::Relaxed) {
                for spec in &specs {
                    not_corrupt(
                        "register",
                        p.register_spec("/flip", spec).map(|t| {
                            joined.fetch_add(1, Ordering::Relaxed);
                            drop(t);
                        }),
                    );
                    match p.existing_spec("/flip") {
                        // One registration's spec (a typed one's without its type).
                        Ok(Some(found)) => {
                            assert!(joining.contains(&found), "existing_spec: {found:?}")
                        }
                        other => not_corrupt("existing_spec", other.map(drop)),
                    }
                }
            }
        });
        scope.spawn(|| {
            let s = Subscriber::connect(&name).unwrap();
            while !stop.load(Ordering::Relaxed) {
                not_corrupt(
                    "subscribe",
                    s.subscribe("/flip").map(|sub| {
                        subscribed.fetch_add(1, Ordering::Relaxed);
                        drop(sub);
                    }),
                );
                // A typed subscription checks the type of the registration it subscribes to.
                not_corrupt(
                    "subscribe_typed",
                    s.subscribe_typed::<u64>("/flip").map(drop),
                );
            }
        });
        for k in 0..FLIPS {
            match flipper.register_spec("/flip", &specs[k % specs.len()]) {
                Ok(t) => flipper.unregister(&t).unwrap(),
                // The other publisher's registration of another spec (or a table still full of
                // entries being drained) refuses ours: a refusal, not corruption.
                Err(e) => assert_ne!(e.kind(), ErrorKind::Corrupt, "flip: {e}"),
            }
        }
    });
    // The race happened: both readers found registered topics.
    assert!(joined.load(Ordering::Relaxed) > 0);
    assert!(subscribed.load(Ordering::Relaxed) > 0);
}

/// Sets the flag when dropped: threads that loop until it is set stop even when the thread
/// that sets it panics.
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A subscriber of "/a" racing a publisher that registers the region's only table entry as
/// "/a" and "/b" in turn (unregistering each after one message): a subscription is never
/// made on the entry's next registration, so it receives only "/a"'s messages. The entry may
/// be freed and registered again between the subscriber's read of it and its subscription
/// record; the subscriber checks again after the record, behind a fence the freer pairs with.
#[test]
fn a_subscription_never_lands_on_the_next_registration_of_its_entry() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const FLIPS: usize = 20_000;
    let name = unique("pu-land");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &two_topics().topics(1)).unwrap();
    let stop = AtomicBool::new(false);
    let received = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        scope.spawn(|| {
            let s = Subscriber::connect(&name).unwrap();
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut sub) = s.subscribe_with_history("/a", 4) else {
                    continue;
                };
                while let Ok(m) = sub.try_recv() {
                    assert_eq!(&*m, b"a", "a message of another registration of the entry");
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        // At least FLIPS, and on until the subscriber received something (a loaded machine
        // may keep its thread off the cores for a while), 50 times as many at most.
        for k in 0..50 * FLIPS {
            if k >= FLIPS && received.load(Ordering::Relaxed) > 0 {
                break;
            }
            let topic = if k % 2 == 0 { "/a" } else { "/b" };
            // While a subscription to the closed "/a" is left, the only entry is not free:
            // the registration is refused and tried again.
            let Ok(t) = p.register(topic) else { continue };
            p.publish(&t, &topic.as_bytes()[1..]).unwrap();
            p.unregister(&t).unwrap();
        }
    });
    assert!(
        received.load(Ordering::Relaxed) > 0,
        "the race never happened"
    );
}

/// A handle never closes a registration other than its own: two publishers hold handles on
/// one registration and unregister it at the same time; the one whose close wins frees the
/// entry and registers the name again at once, and the other's unregister, still running,
/// must not close that new registration (its publishes go on being accepted).
#[test]
fn an_unregister_never_closes_the_next_registration_of_its_entry() {
    const ROUNDS: usize = 2_000;
    let name = unique("pu-stale");
    let _c = Cleanup(name.clone());
    let a = Publisher::create(&name, &two_topics().topics(1)).unwrap();
    let b = Publisher::open(&name).unwrap();
    // Registering, or unregistering, waits for the registration lock and for the one table
    // entry to be freed by the other publisher's close: refusals meanwhile are retried.
    let retry = |what: &str, f: &dyn Fn() -> weft::Result<Topic>| {
        for _ in 0..1_000_000 {
            match f() {
                Err(e) if matches!(e.kind(), ErrorKind::Timeout | ErrorKind::InvalidArgument) => {
                    std::thread::yield_now()
                }
                other => return other.unwrap(),
            }
        }
        panic!("{what}: refused a million times");
    };
    // Channels, not barriers: a side that fails drops its ends, and the other stops too.
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let (joined_tx, joined) = std::sync::mpsc::channel::<()>();
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        // A publisher moves into its thread (it is not shared between threads).
        scope.spawn(move || {
            while go_rx.recv().is_ok() {
                let t = a.register("/x").unwrap();
                joined_tx.send(()).unwrap();
                a.unregister(&t).unwrap();
                closed_tx.send(()).unwrap();
            }
        });
        for round in 0..ROUNDS {
            let t = retry("register", &|| b.register("/x"));
            go.send(()).unwrap();
            joined.recv().expect("the other publisher stopped");
            // Racing the other publisher's unregister of the same registration.
            b.unregister(&t).unwrap();
            let again = retry("register again", &|| b.register("/x"));
            closed.recv().expect("the other publisher stopped");
            if let Err(e) = b.publish(&again, b"still open") {
                panic!("round {round}: the other handle closed the next registration: {e}");
            }
            b.unregister(&again).unwrap();
        }
        drop(go);
    });
}

/// A publisher that has written its publish record (`pub_topic`) but not yet claimed a slot
/// keeps an unregistered topic's entry: freed, the entry's ring would go to the next
/// registration, and the stalled claim would land in that other topic. (The stalled
/// publisher is a live participant of this process; its record is written into the region.)
#[test]
fn a_publisher_stalled_before_its_claim_keeps_the_unregistered_entry() {
    let name = unique("pu-stall");
    let _c = Cleanup(name.clone());
    let a = Publisher::create(&name, &two_topics().topics(1)).unwrap();
    let t = a.register("/a").unwrap();
    let _b = Publisher::open(&name).unwrap();
    let f = region_file(&name);
    let o = Layout::of_file(&f);
    // The creator has row 0, the publisher that joined after it row 1.
    assert_eq!(get32(&f, o.ext(1)), 1, "row 1 is a publisher's");
    put64(&f, o.ext(1) + 8, 1); // pub_topic: topic 0
    a.unregister(&t).unwrap();
    // Nobody reads /a, but the table's one entry is kept for the stalled publish.
    assert_eq!(
        a.register("/b").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // Its publish is over: the entry is free for the next registration.
    put64(&f, o.ext(1) + 8, 0);
    let b = a.register("/b").unwrap();
    a.publish(&b, b"fresh").unwrap();
}

/// A dead publisher's record naming the unregistered topic does not keep its entry: the free
/// reclaims its row (finishing or voiding what it left), and the entry is free.
#[test]
fn a_dead_publishers_record_does_not_keep_the_unregistered_entry() {
    let name = unique("pu-stall-dead");
    let _c = Cleanup(name.clone());
    let a = Publisher::create(&name, &two_topics().topics(1)).unwrap();
    let t = a.register("/a").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/a", "1"]);
    peer.expect("ready 1");
    peer.kill9();
    let f = region_file(&name);
    let o = Layout::of_file(&f);
    assert_eq!(get32(&f, o.ext(1)), 1, "row 1 is the dead publisher's");
    put64(&f, o.ext(1) + 8, 1); // pub_topic: topic 0
    put64(&f, o.ext(1) + 16, 1 << 40); // pub_seq: a sequence no slot of the ring holds
    a.unregister(&t).unwrap();
    let b = a.register("/b").unwrap();
    a.publish(&b, b"fresh").unwrap();
    // Its loan was reclaimed with its row, and the ring's block freed with the entry.
    assert_eq!(a.region_info().free_blocks, 32 - 1);
}

/// A publish that checked its topic open, then waited (here: its publish record still holds
/// a reference whose block another live participant has marked, so the release it must
/// finish first waits for the mark), while the topic was unregistered, freed and its entry
/// registered as another topic: the publish checks again after its record is written and is
/// refused, and nothing of it reaches the new topic. (The reference and the mark are written
/// into the region; the mark is cleared once the entry is registered again.)
#[test]
fn a_publish_held_up_while_its_entry_is_registered_again_is_refused() {
    let name = unique("pu-held-up");
    let _c = Cleanup(name.clone());
    let config = two_topics()
        .topics(1)
        .liveness_timeout(Duration::from_secs(10));
    let a = Publisher::create(&name, &config).unwrap();
    let old = a.register("/x").unwrap();
    let b = Publisher::open(&name).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let f = region_file(&name);
    let o = Layout::of_file(&f);
    // Block 31 (the allocator starts at 0): one reference, held by the record of the first
    // publisher (row 0), and a take in flight marked by the second (row 1, alive).
    let block = 31;
    let mark = (1u64 << 63) | (1 << 49);
    put64(&f, o.block_word(block), mark | 1);
    put64(&f, o.ext(0) + 32, block + 1); // pub_old
    let publisher = std::thread::spawn(move || {
        let r = a.publish(&old, b"stale");
        (a, r)
    });
    // Let the publish pass its first check and wait on the mark.
    std::thread::sleep(Duration::from_millis(300));
    let same = b.register("/x").unwrap();
    b.unregister(&same).unwrap();
    let new = b.register("/y").unwrap();
    let mut sub = s.subscribe("/y").unwrap();
    put64(&f, o.block_word(block), 1); // the mark is gone: the release goes on
    let (_a, r) = publisher.join().unwrap();
    assert!(matches!(r, Err(Error::Closed)), "{r:?}");
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    b.publish(&new, b"fresh").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"fresh");
    // The record's reference was released: the block is free again.
    assert_eq!(get64(&f, o.block_word(block)), 0);
}

/// A blocks publish checks that its topic is open before it claims its slot: one that passed
/// the check and was then held up claimed past the close point that `unregister` had read,
/// and its subscribers got `Closed` before its message (or never saw it). The close point is
/// read only once no live publisher's record names the topic. (The held-up publish is the
/// record of a live participant of this process, written into the region.)
#[test]
fn unregister_waits_for_a_publish_that_passed_its_check_before_closing() {
    let name = unique("pu-passed");
    let _c = Cleanup(name.clone());
    let config = two_topics()
        .topics(1)
        .claim_timeout(Duration::from_secs(20));
    let a = Publisher::create(&name, &config).unwrap();
    let t = a.register("/a").unwrap();
    let _b = Publisher::open(&name).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/a").unwrap();
    let f = region_file(&name);
    let o = Layout::of_file(&f);
    assert_eq!(get32(&f, o.ext(1)), 1, "row 1 is a publisher's");
    put64(&f, o.ext(1) + 8, 1); // pub_topic: topic 0, checked open, not claimed yet
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let publish = scope.spawn(|| {
            // Ample time for the unregister to close the topic, which it must not do yet.
            std::thread::sleep(Duration::from_millis(300));
            let early = done.load(std::sync::atomic::Ordering::Acquire);
            // The publish is over: the close goes on.
            put64(&f, o.ext(1) + 8, 0);
            early
        });
        a.unregister(&t).unwrap();
        done.store(true, std::sync::atomic::Ordering::Release);
        assert!(
            !publish.join().unwrap(),
            "closed while a publish that passed its check was in flight"
        );
    });
    assert!(matches!(sub.try_recv(), Err(Error::Closed)));
}

/// End to end, with real threads: every publish that returned `Ok` is received or counted
/// lagged before `Closed`, and nothing comes after it, while other threads publish through
/// the unregister (in both modes that several publishers share a ring in). Blocks: a publish
/// held up between its check and its claim committed past the close point. Inline: a
/// publisher whose claim came just after the close abandoned its sequence unwritten below the
/// close point, and a subscriber that only polls (`try_recv`) stopped there for good.
#[test]
fn publishes_racing_an_unregister_are_received_before_closed_and_none_after() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for spec in [TopicSpec::new(TopicMode::Blocks), TopicSpec::inline(8)] {
        let mode = spec.mode();
        for trial in 0..12 {
            let name = unique("pu-race");
            let _c = Cleanup(name.clone());
            let config = Config::default()
                .topics(1)
                .inline_topics(1)
                .ring_slots(8)
                .blocks(64)
                .block_size(64)
                .participants(8);
            let closer = Publisher::create(&name, &config).unwrap();
            let t = closer.register_spec("/r", &spec).unwrap();
            let s = Subscriber::connect(&name).unwrap();
            let mut sub = s.subscribe("/r").unwrap();
            let stop = AtomicBool::new(false);
            let ready = std::sync::Barrier::new(4);
            let published: u64 = std::thread::scope(|scope| {
                let workers: Vec<_> = (0..3)
                    .map(|_| {
                        let (name, stop, spec, ready) = (&name, &stop, &spec, &ready);
                        scope.spawn(move || {
                            let p = Publisher::open(name).unwrap();
                            let t = p.register_spec("/r", spec).unwrap();
                            ready.wait();
                            let mut ok = 0u64;
                            while !stop.load(Ordering::Relaxed) {
                                match p.publish(&t, &ok.to_le_bytes()) {
                                    Ok(_) => ok += 1,
                                    Err(Error::Closed) => break,
                                    Err(e) => panic!("{mode:?}: publish: {e}"),
                                }
                            }
                            ok
                        })
                    })
                    .collect();
                ready.wait();
                std::thread::sleep(Duration::from_millis(2));
                closer.unregister(&t).unwrap();
                stop.store(true, Ordering::Relaxed);
                workers.into_iter().map(|w| w.join().unwrap()).sum()
            });
            // Every publish has returned. Poll only: what the close left must end in Closed
            // without a blocking receive.
            let (mut received, mut lagged) = (0u64, 0u64);
            let t0 = std::time::Instant::now();
            loop {
                match sub.try_recv() {
                    Ok(_) => received += 1,
                    Err(Error::Lagged { skipped }) => lagged += skipped,
                    Err(Error::Empty) => {
                        assert!(
                            t0.elapsed() < Duration::from_secs(10),
                            "{mode:?} trial {trial}: polling never saw Closed"
                        );
                        std::thread::yield_now();
                    }
                    Err(Error::Closed) => break,
                    Err(e) => panic!("{mode:?} trial {trial}: {e}"),
                }
            }
            assert!(matches!(sub.try_recv(), Err(Error::Closed)));
            // An inline publish that found the topic closed after its claim gave its sequence
            // up (one per worker at most, its last call), voided by the close: a lag that
            // jumps over it counts it. A blocks publish gives nothing up once claimed.
            let given_up = if mode == TopicMode::Inline { 3 } else { 0 };
            let seen = received + lagged;
            assert!(
                (published..=published + given_up).contains(&seen),
                "{mode:?} trial {trial}: {received} received and {lagged} lagged before \
                 Closed, {published} published"
            );
        }
    }
}
