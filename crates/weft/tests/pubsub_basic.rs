//! Pub/sub in one process: loans, samples, lag, pool accounting, several publishers and
//! subscribers, blocking receives, and argument checks.

mod common;

use common::{Cleanup, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft::{Error, ErrorKind, WaitStrategy};

fn small() -> Config {
    Config::default()
        .blocks(64)
        .block_size(256)
        .ring_slots(8)
        .topics(8)
        .participants(8)
        .max_held(64)
}

#[test]
fn loan_and_copy_round_trip_byte_exact() {
    let name = unique("ps-rt");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/a/b").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/a/b").unwrap();
    let mut loan = p.loan(&t).unwrap();
    assert_eq!(loan.len(), 256);
    loan[..3].copy_from_slice(b"abc");
    loan.set_len(3).unwrap();
    assert_eq!(loan.publish().unwrap(), 0);
    assert_eq!(p.publish(&t, &[7u8; 256]).unwrap(), 1);
    assert_eq!(p.publish(&t, b"").unwrap(), 2);
    let a = sub.try_recv().unwrap();
    assert_eq!((&*a, a.seq()), (&b"abc"[..], 0));
    let b = sub.try_recv().unwrap();
    assert_eq!(&*b, &[7u8; 256][..]);
    assert_eq!(sub.try_recv().unwrap().len(), 0);
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    assert_eq!(
        p.publish(&t, &[0; 257]).unwrap_err().kind(),
        ErrorKind::TooLarge
    );
    let mut loan = p.loan(&t).unwrap();
    assert_eq!(loan.set_len(257).unwrap_err().kind(), ErrorKind::TooLarge);
}

/// A loan dropped unpublished gives its block back, whichever way it goes: dropped in
/// place, dropped after a refused `set_len`, dropped by an unwind, or consumed by a publish
/// that failed on a topic unregistered meanwhile. Every block comes back free.
#[test]
fn a_loan_dropped_unpublished_gives_its_block_back() {
    let name = unique("ps-giveback");
    let _c = Cleanup(name.clone());
    // Room in the holdings for every block and one more loan, so that the pool runs out first.
    let p = Publisher::create(&name, &small().max_held(128)).unwrap();
    let t = p.register("/g").unwrap();
    let all = p.region_info().blocks;
    let free = || p.region_info().free_blocks;

    let loans: Vec<_> = (0..all).map(|_| p.loan(&t).unwrap()).collect();
    assert_eq!(free(), 0);
    let more = p.loan(&t).map(|_| ()).unwrap_err();
    assert!(matches!(more, Error::Full), "{more:?}");
    drop(loans);
    assert_eq!(free(), all, "dropped in place");

    let mut loan = p.loan(&t).unwrap();
    assert_eq!(loan.set_len(257).unwrap_err().kind(), ErrorKind::TooLarge);
    drop(loan);
    assert_eq!(free(), all, "dropped after a refused set_len");

    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut loan = p.loan(&t).unwrap();
        loan[0] = 1;
        panic!("a writer that fails mid-loan");
    }));
    assert!(unwound.is_err());
    assert_eq!(free(), all, "dropped by an unwind");

    let loan = p.loan(&t).unwrap();
    p.unregister(&t).unwrap();
    assert!(matches!(loan.publish(), Err(Error::Closed)));
    assert_eq!(free(), all, "a publish refused on a closed topic");
}

/// A subscriber lapped again before it got through half a ring since its last lap goes on
/// half a ring further than the oldest message: at the oldest it would be lapped again at
/// once by any faster publisher, and receive almost nothing. A single lap keeps the whole
/// ring. Blocks and inline topics alike; every count exact.
#[test]
fn a_subscriber_lapped_again_soon_goes_on_half_a_ring_further() {
    for spec in [TopicSpec::new(TopicMode::Blocks), TopicSpec::inline(8)] {
        let name = unique("ps-relap");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &small()).unwrap();
        let t = p.register_spec("/relap", &spec).unwrap();
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/relap").unwrap();
        let mode = t.mode();
        let publish = |range: std::ops::Range<u64>| {
            for i in range {
                p.publish(&t, &i.to_le_bytes()).unwrap();
            }
        };
        let expect = |sub: &mut weft::pubsub::Subscription, seqs: std::ops::Range<u64>| {
            for i in seqs {
                let m = sub.try_recv().unwrap();
                assert_eq!((m.seq(), &*m), (i, &i.to_le_bytes()[..]), "{mode:?}");
            }
        };
        let lagged = |sub: &mut weft::pubsub::Subscription| match sub.try_recv() {
            Err(Error::Lagged { skipped }) => skipped,
            other => panic!("{mode:?}: expected Lagged, got {other:?}"),
        };
        // 20 on a ring of 8: the first lap goes on at the oldest, 12.
        publish(0..20);
        assert_eq!(lagged(&mut sub), 12, "{mode:?}");
        expect(&mut sub, 12..13);
        // Lapped again one message later: the oldest is 32, half a ring further is 36.
        publish(20..40);
        assert_eq!(lagged(&mut sub), 23, "{mode:?}");
        expect(&mut sub, 36..40);
        // Eight read since that lap: the next one goes on at the oldest again (56).
        publish(40..44);
        expect(&mut sub, 40..44);
        publish(44..64);
        assert_eq!(lagged(&mut sub), 12, "{mode:?}");
        expect(&mut sub, 56..64);
        assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        assert_eq!(p.stats(&t).unwrap().lagged, 12 + 23 + 12, "{mode:?}");
    }
}

#[test]
fn a_slow_subscriber_learns_exactly_how_many_it_missed() {
    let name = unique("ps-lag");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/lag").unwrap();
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
fn a_held_sample_keeps_its_block_while_the_ring_moves_on() {
    let name = unique("ps-hold");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/h").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/h").unwrap();
    p.publish(&t, b"first").unwrap();
    let held = sub.try_recv().unwrap();
    for i in 0..100u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(&*held, b"first");
    drop(held);
    // Only the ring's 8 descriptors hold blocks now, and the block the last publish displaced,
    // which the publisher keeps for its next loan (it had the only reference).
    let info = p.region_info();
    assert_eq!((info.free_blocks, info.kept_blocks), (64 - 9, 1));
}

/// A topic's `pool_blocks` is what its ring holds of the pool: with no sample or loan held,
/// every block not free (or kept for a publisher's next loan) is there.
#[test]
fn topic_statistics_count_the_blocks_the_ring_holds() {
    let name = unique("ps-poolstat");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let a = p.register("/a").unwrap();
    let b = p.register("/b").unwrap();
    let i = p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
    let in_use = || {
        let r = p.region_info();
        r.blocks - r.free_blocks - r.kept_blocks
    };
    assert_eq!(p.stats(&a).unwrap().pool_blocks, 0);
    for n in 1..=3u64 {
        p.publish(&a, b"x").unwrap();
        assert_eq!(p.stats(&a).unwrap().pool_blocks, n);
    }
    assert_eq!(in_use(), 3);
    // Once the ring has gone around, it holds one block per slot (8), whatever the count.
    for _ in 0..20 {
        p.publish(&b, b"y").unwrap();
    }
    let sb = p.stats(&b).unwrap();
    assert_eq!((sb.published, sb.pool_blocks), (20, 8));
    assert_eq!(in_use(), 3 + 8);
    // Inline topics copy into their ring: no blocks.
    p.publish(&i, &7u64.to_le_bytes()).unwrap();
    assert_eq!(p.stats(&i).unwrap().pool_blocks, 0);
    assert_eq!(in_use(), 3 + 8);
}

#[test]
fn pool_exhaustion_is_full_and_released_samples_refill_it() {
    let name = unique("ps-full");
    let _c = Cleanup(name.clone());
    let cfg = small().blocks(16).ring_slots(4);
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/f").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/f").unwrap();
    let mut held = Vec::new();
    loop {
        match p.publish(&t, b"x") {
            Ok(_) => held.push(sub.try_recv().unwrap()),
            Err(Error::Full) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // 16 blocks: every block is held by a sample (the last 4 also by the ring).
    assert_eq!(held.len(), 16);
    assert_eq!(p.region_info().free_blocks, 0);
    held.clear();
    assert_eq!(p.region_info().free_blocks, 12);
    p.publish(&t, b"y").unwrap();
}

#[test]
fn two_publishers_on_threads_share_one_gap_free_sequence() {
    let name = unique("ps-2pub");
    let _c = Cleanup(name.clone());
    let cfg = small().ring_slots(1024).blocks(2048);
    let p1 = Publisher::create(&name, &cfg).unwrap();
    let p2 = Publisher::open(&name).unwrap();
    let t1 = p1.register("/m").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/m").unwrap();
    let n: u64 = if cfg!(miri) { 10 } else { 500 };
    let h = std::thread::spawn(move || {
        let t2 = p2.register("/m").unwrap();
        for i in 0..n {
            p2.publish(&t2, &(i | 1 << 32).to_le_bytes()).unwrap();
        }
    });
    for i in 0..n {
        p1.publish(&t1, &i.to_le_bytes()).unwrap();
    }
    h.join().unwrap();
    let (mut next1, mut next2) = (0u64, 0u64);
    for seq in 0..2 * n {
        let m = sub.try_recv().unwrap();
        assert_eq!(m.seq(), seq);
        let v = u64::from_le_bytes(m[..8].try_into().unwrap());
        if v >> 32 == 1 {
            assert_eq!(v & 0xffff_ffff, next2);
            next2 += 1;
        } else {
            assert_eq!(v, next1);
            next1 += 1;
        }
    }
    assert_eq!((next1, next2), (n, n));
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
}

#[test]
fn every_subscriber_gets_every_message() {
    let name = unique("ps-fan");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/fan").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut subs: Vec<_> = (0..3).map(|_| s.subscribe("/fan").unwrap()).collect();
    for i in 0..5u8 {
        p.publish(&t, &[i; 10]).unwrap();
    }
    for sub in &mut subs {
        for i in 0..5u8 {
            assert_eq!(&*sub.try_recv().unwrap(), &[i; 10]);
        }
    }
    assert_eq!(p.stats(&t).unwrap().subscribers, 3);
}

#[test]
fn blocking_receive_parks_and_wakes() {
    let name = unique("ps-park");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small().ring_slots(256).blocks(512)).unwrap();
    let t = p.register("/park").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/park").unwrap();
    assert!(matches!(
        sub.recv_timeout(Duration::from_millis(20)),
        Err(Error::Timeout)
    ));
    let n = if cfg!(miri) { 5 } else { 200u64 };
    let h = std::thread::spawn(move || {
        for i in 0..n {
            std::thread::sleep(Duration::from_micros(200));
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

#[test]
fn topics_are_found_by_name_and_listed() {
    let name = unique("ps-topics");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let a = p.register("/x/a").unwrap();
    assert_eq!(p.register("/x/a").unwrap(), a);
    p.register("/x/b").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let names: Vec<_> = s.topics().unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["/x/a", "/x/b"]);
    assert_eq!(s.subscribe("/x/c").unwrap_err().kind(), ErrorKind::NotFound);
    // The wait's end says what was not found, as the plain form does.
    assert_eq!(
        s.subscribe_timeout("/x/c", Duration::from_millis(10))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    for i in 2..8 {
        p.register(&format!("/fill/{i}")).unwrap();
    }
    assert_eq!(
        p.register("/one/too/many").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn arguments_are_checked() {
    let name = unique("ps-args");
    let _c = Cleanup(name.clone());
    for bad in [
        small().block_size(100),
        small().ring_slots(6),
        small().blocks(0),
        small().participants(0),
    ] {
        assert_eq!(
            Publisher::create(&name, &bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    let p = Publisher::create(&name, &small()).unwrap();
    assert_eq!(
        p.register("no-slash").unwrap_err().kind(),
        ErrorKind::InvalidName
    );
    assert_eq!(
        p.register_with("/l", TopicMode::Inline).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // A topic registered again in another mode: both modes named.
    p.register("/m").unwrap();
    let e = p.register_with("/m", TopicMode::Latest).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string()
            .ends_with("topic mode (1 blocks, 2 latest, 3 inline) is 2, the topic was registered as a blocks topic"),
        "{e}"
    );
    // A second creator of a live region is refused; a topic of another region is refused.
    assert_eq!(
        Publisher::create(&name, &small()).unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );
    let other = unique("ps-args2");
    let _c2 = Cleanup(other.clone());
    let q = Publisher::create(&other, &small()).unwrap();
    let foreign = q.register("/t").unwrap();
    assert_eq!(
        p.loan(&foreign).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn the_participants_table_fills_and_frees() {
    let name = unique("ps-rows");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small().participants(3)).unwrap();
    let a = Subscriber::connect(&name).unwrap();
    let b = Subscriber::connect(&name).unwrap();
    assert_eq!(
        Subscriber::connect(&name).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    drop(a);
    let _c = Subscriber::connect(&name).unwrap();
    assert_eq!(p.region_info().participants_alive, 3);
    drop(b);
}

#[test]
fn a_latest_topic_delivers_only_the_newest_value() {
    let name = unique("ps-latest");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_with("/last", TopicMode::Latest).unwrap();
    assert_eq!(
        p.register("/last").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/last").unwrap();
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    for i in 0..30u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (29, &29u64.to_le_bytes()[..]));
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
    // A held value stays whole while the writer overwrites the topic many times.
    for i in 30..100u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(&*m, &29u64.to_le_bytes());
    let n = sub.recv_timeout(Duration::from_millis(100)).unwrap();
    assert_eq!((n.seq(), &*n), (99, &99u64.to_le_bytes()[..]));
    assert_eq!(p.stats(&t).unwrap().lagged, 0);
}

#[test]
fn a_latest_topic_holds_two_blocks_of_the_pool_whatever_the_ring_size() {
    // Rings of 64 descriptors over a pool of 8 blocks: a blocks topic would keep a block per
    // slot written; a latest topic keeps the newest value and the one before it, so it goes
    // on publishing, and the pool stays free for the blocks topic beside it.
    let name = unique("ps-latest-pool");
    let _c = Cleanup(name.clone());
    let config = Config::default()
        .topics(2)
        .ring_slots(64)
        .blocks(8)
        .block_size(128)
        .participants(4);
    let p = Publisher::create(&name, &config).unwrap();
    let last = p.register_with("/last", TopicMode::Latest).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/last").unwrap();
    for i in 0..200u64 {
        p.publish(&last, &i.to_le_bytes()).unwrap();
        if i % 3 == 0 {
            let m = sub.try_recv().unwrap();
            assert_eq!((m.seq(), &*m), (i, &i.to_le_bytes()[..]));
        }
        let st = p.stats(&last).unwrap();
        assert_eq!(st.pool_blocks, (i + 1).min(2));
        let info = p.region_info();
        // The ring's two blocks, and the one the publisher keeps for its next loan.
        assert!(
            info.blocks - info.free_blocks <= 3,
            "{} blocks in use after {} publishes",
            info.blocks - info.free_blocks,
            i + 1
        );
    }
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (199, &199u64.to_le_bytes()[..]));
    // The rest of the pool serves a blocks topic.
    let blocks = p.register("/blocks").unwrap();
    let mut all = s.subscribe("/blocks").unwrap();
    for i in 0..5u64 {
        p.publish(&blocks, &i.to_le_bytes()).unwrap();
    }
    for i in 0..5u64 {
        assert_eq!(&*all.try_recv().unwrap(), &i.to_le_bytes());
    }
}

#[test]
fn a_latest_reader_on_another_thread_sees_only_whole_values_in_order() {
    let name = unique("ps-latest-mt");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register_with("/last", TopicMode::Latest).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/last").unwrap();
    let n: u64 = if cfg!(miri) { 50 } else { 20_000 };
    let h = std::thread::spawn(move || {
        for i in 1..=n {
            let mut l = p.loan(&t).unwrap();
            l.set_len(128).unwrap();
            for c in l.chunks_mut(8) {
                c.copy_from_slice(&i.to_le_bytes());
            }
            l.publish().unwrap();
        }
    });
    let mut last = 0;
    while last < n {
        let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        let v = u64::from_le_bytes(m[..8].try_into().unwrap());
        assert!(m.chunks(8).all(|c| c == v.to_le_bytes()), "torn value");
        assert!(v > last, "went back from {last} to {v}");
        assert_eq!(m.seq(), v - 1);
        last = v;
    }
    h.join().unwrap();
}

#[test]
fn the_last_participants_leaving_together_remove_the_name() {
    // Two participants that leave at the same moment are each other's "someone else alive"
    // unless each checks after its own row is released: then the later one sees nobody.
    for round in 0..300 {
        let name = unique("ps-leave");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &small()).unwrap();
        let s = Subscriber::connect(&name).unwrap();
        let go = std::sync::Barrier::new(2);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                go.wait();
                drop(s);
            });
            go.wait();
            drop(p);
        });
        assert!(
            !std::path::Path::new(&common::shm_path(&name)).exists(),
            "round {round}: both participants left and the region's name stayed"
        );
    }
}

#[test]
fn participants_joining_at_once_each_get_a_row_of_their_own() {
    // Threads released together claim rows at the same moment (processes do the same; threads
    // collide far more often). Each must end up with a row of its own: a row claimed a moment
    // ago, its state not yet written, was once taken for a free one and claimed a second time.
    const N: usize = 6;
    for round in 0..1000 {
        let name = unique("ps-join");
        let _c = Cleanup(name.clone());
        let owner = Publisher::create(&name, &small().participants(N + 1)).unwrap();
        let topic = owner.register("/join").unwrap();
        let go = std::sync::Barrier::new(N);
        let subs: Vec<_> = std::thread::scope(|scope| {
            let joins: Vec<_> = (0..N)
                .map(|_| {
                    scope.spawn(|| {
                        go.wait();
                        let s = Subscriber::connect(&name).unwrap();
                        let sub = s.subscribe("/join").unwrap();
                        (s, sub)
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        let alive = weft::pubsub::details(&name)
            .unwrap()
            .participants
            .iter()
            .filter(|p| p.peer.state == weft::shm::PeerState::Alive)
            .count();
        assert_eq!(alive, N + 1, "round {round}: rows held");
        assert_eq!(
            owner.stats(&topic).unwrap().subscribers,
            N as u64,
            "round {round}"
        );
        drop(subs);
    }
}

/// Borrowed receives (`try_recv_ref`, `recv_ref`, `recv_ref_timeout`) deliver what owned ones
/// do, on blocks, latest and inline topics, with the same `Empty`, `Lagged` and `Timeout`; a
/// borrowed sample's block goes back at its drop, and one that is forgotten instead is
/// released when its subscriber leaves.
#[test]
fn borrowed_samples_deliver_in_order_and_give_their_blocks_back() {
    let name = unique("ps-ref");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/r").unwrap();
    let latest = p
        .register_spec("/l", &TopicSpec::new(TopicMode::Latest))
        .unwrap();
    let inline = p
        .register_spec("/i", &TopicSpec::inline(8).typed::<u64>())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/r").unwrap();
    assert!(matches!(sub.try_recv_ref(), Err(Error::Empty)));
    let e = sub.recv_ref_timeout(Duration::from_millis(20)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    for round in 0..3u64 {
        for i in 0..5u64 {
            p.publish(&t, &(round * 10 + i).to_le_bytes()).unwrap();
        }
        for i in 0..5u64 {
            let m = sub.try_recv_ref().unwrap();
            assert_eq!(
                (m.seq(), &*m),
                (round * 5 + i, &(round * 10 + i).to_le_bytes()[..])
            );
            assert_eq!(*m.value::<u64>().unwrap(), round * 10 + i);
        }
        assert!(matches!(sub.try_recv_ref(), Err(Error::Empty)));
    }
    // The ring's 8 descriptors and the publisher's kept block: no sample holds one.
    let info = p.region_info();
    assert_eq!((info.free_blocks, info.kept_blocks), (64 - 9, 1));
    // Overwritten before it was read: the exact count, then the oldest still there.
    for i in 0..20u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    match sub.try_recv_ref() {
        Err(Error::Lagged { skipped }) => assert_eq!(skipped, 12),
        other => panic!("expected Lagged, got {other:?}"),
    }
    assert_eq!(&*sub.try_recv_ref().unwrap(), &12u64.to_le_bytes());
    // A sample forgotten instead of dropped keeps its block; the next receive still works.
    core::mem::forget(sub.try_recv_ref().unwrap());
    assert_eq!(&*sub.try_recv_ref().unwrap(), &14u64.to_le_bytes());
    // A blocking borrowed receive wakes for a message published on another thread.
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let q = Publisher::open(&name).unwrap();
            let t = q.register("/r").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            q.publish(&t, b"late").unwrap();
        });
        while sub.try_recv_ref().is_ok() {}
        assert_eq!(&*sub.recv_ref().unwrap(), b"late");
    });
    // Latest and inline topics.
    let mut l = s.subscribe("/l").unwrap();
    let mut n = s.subscribe("/i").unwrap();
    for v in 1..=3u64 {
        p.publish(&latest, &v.to_le_bytes()).unwrap();
        p.publish(&inline, &v.to_le_bytes()).unwrap();
    }
    let m = l.try_recv_ref().unwrap();
    assert_eq!((m.seq(), &*m), (2, &3u64.to_le_bytes()[..]));
    drop(m);
    assert!(matches!(l.try_recv_ref(), Err(Error::Empty)));
    for v in 4..=9u64 {
        p.publish(&latest, &v.to_le_bytes()).unwrap();
    }
    let m = l.try_recv_ref().unwrap();
    assert_eq!((m.seq(), &*m), (8, &9u64.to_le_bytes()[..]));
    drop(m);
    assert!(matches!(l.try_recv_ref(), Err(Error::Empty)));
    for v in 1..=3u64 {
        let m = n.recv_ref().unwrap();
        assert_eq!((m.seq(), *m.value::<u64>().unwrap()), (v - 1, v));
    }
    assert!(matches!(n.try_recv_ref(), Err(Error::Empty)));
    // The forgotten sample's block comes back when its subscriber leaves (once the ring has
    // moved past it: until then the ring holds it too).
    for i in 0..8u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let held = p.region_info().free_blocks;
    drop((sub, l, n, s));
    assert_eq!(p.region_info().free_blocks, held + 1);
}

/// An owned receive keeps the holdings entry its block was taken into, the subscription's
/// spare when it has one: an empty poll reserves nothing (a subscriber whose every entry but
/// one records a subscription can still receive), a receive with no entry left is refused and
/// loses nothing, owned and borrowed receives mix on one subscription with each sample
/// keeping its own payload, and every block comes back.
#[test]
fn owned_samples_keep_the_entries_their_blocks_were_taken_into() {
    const HELD: usize = 4;
    let name = unique("ps-owned");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small().max_held(HELD)).unwrap();
    let t = p.register("/o").unwrap();

    let s = Subscriber::connect(&name).unwrap();
    let mut subs: Vec<_> = (0..HELD - 1).map(|_| s.subscribe("/o").unwrap()).collect();
    for sub in &mut subs[..HELD - 2] {
        for _ in 0..10 {
            assert!(matches!(sub.try_recv(), Err(Error::Empty)));
        }
        let e = sub.recv_timeout(Duration::from_millis(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
    }
    p.publish(&t, b"one").unwrap();
    let one = subs[HELD - 2].try_recv().unwrap();
    assert_eq!(&*one, b"one");
    let e = subs[0].try_recv().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    drop(one);
    assert_eq!(&*subs[0].try_recv().unwrap(), b"one");
    drop(subs);

    let s2 = Subscriber::connect(&name).unwrap();
    let mut sub = s2.subscribe("/o").unwrap();
    for i in 0..6u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    // Borrowed, owned (the spare the borrowed one left), borrowed (a new spare), owned by a
    // blocking receive, borrowed, owned: the subscription and three samples fill the entries.
    let mut kept = Vec::new();
    for i in 1..7u64 {
        if i % 2 == 1 {
            let m = sub.try_recv_ref().unwrap();
            assert_eq!((m.seq(), &*m), (i, &(i - 1).to_le_bytes()[..]));
        } else if i == 4 {
            kept.push(sub.recv().unwrap());
        } else {
            kept.push(sub.try_recv().unwrap());
        }
    }
    for (k, m) in kept.iter().enumerate() {
        let i = 2 * k as u64 + 2;
        assert_eq!((m.seq(), &**m), (i, &(i - 1).to_le_bytes()[..]));
    }
    drop((kept, sub, s2, s));
    // Only the ring holds blocks: its seven descriptors.
    let info = p.region_info();
    assert_eq!((info.free_blocks, info.kept_blocks), (64 - 7, 0));
}

/// A single-publisher blocks or latest topic: one live holder at a time, the setting is part
/// of the registration, a holder that leaves hands the lease on and the sequence goes on, and
/// an unregistered topic's lease does not outlive it.
#[test]
fn a_single_publisher_topic_has_one_holder_at_a_time() {
    for mode in [TopicMode::Blocks, TopicMode::Latest] {
        let name = unique("ps-single");
        let _c = Cleanup(name.clone());
        let spec = TopicSpec::new(mode).single_publisher();
        let a = Publisher::create(&name, &small()).unwrap();
        let t = a.register_spec("/solo", &spec).unwrap();
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/solo").unwrap();
        // Another live publisher: refused, naming the topic; without the setting: refused.
        let b = Publisher::open(&name).unwrap();
        let held = b.register_spec("/solo", &spec).unwrap_err();
        assert_eq!(held.kind(), ErrorKind::InUse, "{held}");
        assert!(
            held.to_string().contains(&format!("'{name}/solo'")),
            "{held}"
        );
        assert_eq!(
            b.register_spec("/solo", &TopicSpec::new(mode))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidArgument
        );
        // The holder registering again keeps its lease.
        let t_again = a.register_spec("/solo", &spec).unwrap();
        // Loans and copies, every slot of the ring several times over, blocks recycled.
        for i in 0..40u32 {
            let seq = if i % 2 == 0 {
                a.publish(&t, &i.to_le_bytes()).unwrap()
            } else {
                let mut l = a.loan(&t_again).unwrap();
                l.set_len(4).unwrap();
                l.copy_from_slice(&i.to_le_bytes());
                l.publish().unwrap()
            };
            assert_eq!(seq, i as u64);
            let m = sub.try_recv().unwrap();
            assert_eq!((m.seq(), &*m), (i as u64, &i.to_le_bytes()[..]));
        }
        // The region tells single-publisher topics apart, and its spec joins them as they are.
        let d = weft::pubsub::details(&name).unwrap();
        assert!(d.topics[0].single_publisher);
        assert_eq!(d.topics[0].spec(), spec);
        assert_eq!(b.existing_spec("/solo").unwrap(), Some(spec.clone()));
        // Only the ring's blocks and the one kept for the next loan are out of the pool.
        assert!(a.region_info().free_blocks >= 64 - 8 - 1);
        // The holder leaves: the next registrant takes the lease and the sequence goes on.
        drop((t, t_again, a));
        let t = b.register_spec("/solo", &spec).unwrap();
        assert_eq!(b.publish(&t, b"next").unwrap(), 40);
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (40, &b"next"[..]));
        drop(m);
        // Unregistered and registered again by another participant: a fresh lease, although
        // the old holder lives.
        b.unregister(&t).unwrap();
        drop(sub);
        let c = Publisher::open(&name).unwrap();
        let t = c.register_spec("/solo", &spec).unwrap();
        assert_eq!(
            b.register_spec("/solo", &spec).unwrap_err().kind(),
            ErrorKind::InUse
        );
        c.publish(&t, b"fresh").unwrap();
    }
}

/// A listing of a region's topics counts each topic's subscriptions as its own statistics do
/// (one scan of the holdings for every topic at once): none, one, two across two subscribers,
/// and an inline topic's.
#[test]
fn a_listing_counts_each_topics_subscriptions() {
    let name = unique("pb-listing");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let none = p.register("/none").unwrap();
    let one = p.register("/one").unwrap();
    let two = p.register_with("/two", TopicMode::Latest).unwrap();
    let inl = p.register_spec("/inline", &TopicSpec::inline(8)).unwrap();
    let (s1, s2) = (
        Subscriber::connect(&name).unwrap(),
        Subscriber::connect(&name).unwrap(),
    );
    let _subs = [
        s1.subscribe("/one").unwrap(),
        s1.subscribe("/two").unwrap(),
        s2.subscribe("/two").unwrap(),
        s2.subscribe("/inline").unwrap(),
    ];
    let want = [("/none", 0), ("/one", 1), ("/two", 2), ("/inline", 1)];
    for (t, (topic, n)) in [&none, &one, &two, &inl].into_iter().zip(want) {
        assert_eq!(p.stats(t).unwrap().subscribers, n, "{topic}");
    }
    let listed = |topics: Vec<weft::pubsub::TopicStats>| {
        let mut got: Vec<_> = topics
            .into_iter()
            .map(|t| (t.name, t.subscribers))
            .collect();
        got.sort();
        got
    };
    let mut expected: Vec<_> = want.iter().map(|&(t, n)| (t.to_string(), n)).collect();
    expected.sort();
    assert_eq!(listed(s1.topics().unwrap()), expected);
    assert_eq!(
        listed(weft::pubsub::inspect(&name).unwrap().topics),
        expected
    );
    let details = weft::pubsub::details(&name).unwrap();
    assert_eq!(
        listed(details.topics.into_iter().map(|d| d.stats).collect()),
        expected
    );
}

/// `open_or_create`: of four threads calling it at once on a name nobody holds, one creates
/// the region (with its config) and three join it; a later call joins and keeps the region's
/// shape; a leftover file whose creator never wrote its header (killed while sizing it) is
/// made anew rather than waited on for ever or refused.
#[test]
fn open_or_create_creates_once_and_joins_after() {
    let name = unique("pb-ooc");
    let _c = Cleanup(name.clone());
    let barrier = std::sync::Barrier::new(4);
    let created: Vec<(bool, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (name, barrier) = (&name, &barrier);
                s.spawn(move || {
                    let config = small().block_size(256 * (i + 1));
                    barrier.wait();
                    let p = Publisher::open_or_create(name, &config).unwrap();
                    // Held until every thread is in: the region lives while one of them does.
                    barrier.wait();
                    (p.created(), p.max_len())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(created.iter().filter(|(c, _)| *c).count(), 1, "{created:?}");
    let shape = created.iter().find(|(c, _)| *c).unwrap().1;
    assert!(created.iter().all(|&(_, len)| len == shape), "{created:?}");

    let first = Publisher::open_or_create(&name, &small()).unwrap();
    assert!(
        first.created(),
        "the last thread out removed the region: made anew"
    );
    let second = Publisher::open_or_create(&name, &small().block_size(1024)).unwrap();
    assert!(!second.created());
    assert_eq!(second.max_len(), 256);
    drop((first, second));

    // A leftover: the file exists, empty, and no creator names itself in it.
    std::fs::File::create(common::shm_path(&name)).unwrap();
    let quick = small().open_timeout(Duration::from_millis(50));
    let p = Publisher::open_or_create(&name, &quick).unwrap();
    assert!(p.created());
    let t = p.register("/t").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_with_history("/t", 1).unwrap();
    p.publish(&t, b"made").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"made");
}

/// A late joiner's history is capped at `ring_slots - 1` messages (the oldest slot may be
/// mid-overwrite): asking for more than a lap gives exactly the newest `ring_slots - 1`.
#[test]
fn history_is_capped_at_one_lap_minus_one() {
    let name = unique("pb-hist");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &small()).unwrap();
    let t = p.register("/t").unwrap();
    for i in 0..20u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let s = Subscriber::connect(&name).unwrap();
    let mut late = s.subscribe_with_history("/t", 100).unwrap();
    assert_eq!(late.position(), 20 - 7);
    for i in 13..20u64 {
        let m = late.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (i, &i.to_le_bytes()[..]));
    }
    assert!(matches!(late.try_recv(), Err(Error::Empty)));
}
