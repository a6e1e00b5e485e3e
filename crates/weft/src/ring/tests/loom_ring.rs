//! Loom models of the ring on its real types, at capacity 2 so that laps come quickly.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p weft --release --lib ring::tests`.

use crate::WaitStrategy;
use crate::ring::{PublishError, RecvError, bounded, channel, mpmc, mpmc_bounded};
use loom::thread;

/// A three-word payload: a torn read would mix words of different messages.
type Wide = [u64; 3];

#[test]
fn spmc_never_tears_a_multi_word_payload() {
    loom::model(|| {
        let (mut tx, ring) = channel::<Wide>(2);
        let mut rx = ring.subscribe();
        let t = thread::spawn(move || {
            for i in 1..=3u64 {
                tx.publish([i, i * 10, i * 100]);
            }
        });
        let mut last = 0;
        for _ in 0..3 {
            match rx.try_recv() {
                Ok(v) => {
                    assert_eq!(v, [v[0], v[0] * 10, v[0] * 100], "torn read");
                    assert!(v[0] > last, "out of order");
                    last = v[0];
                }
                Err(RecvError::Lagged { skipped }) => assert!(skipped >= 1),
                Err(RecvError::Empty) | Err(RecvError::Closed) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        t.join().unwrap();
    });
}

/// One batch read in the model below: checks what it handed out and counts it; returns
/// whether the ring said Closed.
fn checked_batch(rx: &mut crate::ring::Subscriber<Wide>, got: &mut u64, lost: &mut u64) -> bool {
    let mut buf = [[0u64; 3]; 2];
    match rx.recv_batch(&mut buf) {
        Ok(n) => {
            let first = rx.position() - n as u64;
            for (k, v) in buf[..n].iter().enumerate() {
                assert_eq!(*v, [v[0], v[0] * 10, v[0] * 100], "torn read");
                // Message i was published as sequence i - 1.
                assert_eq!(v[0], first + k as u64 + 1, "value of another sequence");
            }
            *got += n as u64;
        }
        Err(RecvError::Lagged { skipped }) => *lost += skipped,
        Err(RecvError::Empty) => {}
        Err(RecvError::Closed) => return true,
        Err(e) => panic!("{e:?}"),
    }
    false
}

/// A batch read checks a whole run with one stamp re-check (`RawRing::read_run`): even when
/// the publisher laps the run while it is copied, every value handed out is whole and is the
/// one published at the position it is handed out for.
#[test]
fn spmc_batch_read_never_hands_out_a_torn_or_later_lap_value() {
    loom::model(|| {
        let (mut tx, ring) = channel::<Wide>(2);
        let mut rx = ring.subscribe();
        let t = thread::spawn(move || {
            for i in 1..=3u64 {
                tx.publish([i, i * 10, i * 100]);
            }
        });
        let (mut got, mut lost) = (0u64, 0u64);
        for _ in 0..2 {
            checked_batch(&mut rx, &mut got, &mut lost);
        }
        t.join().unwrap();
        while !checked_batch(&mut rx, &mut got, &mut lost) {}
        assert_eq!(got + lost, 3, "every message received or counted lost");
    });
}

#[test]
fn mpmc_lap_gating_keeps_every_write_whole() {
    loom::model(|| {
        let (tx, ring) = mpmc::<Wide>(2);
        let mut rx = ring.subscribe();
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            tx2.publish([1, 1, 1]);
            tx2.publish([2, 2, 2]);
        });
        tx.publish([3, 3, 3]);
        a.join().unwrap();
        drop(tx);
        // Three messages, capacity 2: the oldest may be overrun; whatever is read is whole
        // and no sequence is read twice.
        let mut got = 0u64;
        let mut lost = 0u64;
        loop {
            match rx.try_recv() {
                Ok(v) => {
                    assert!(v[0] == v[1] && v[1] == v[2], "torn write: {v:?}");
                    got += 1;
                }
                Err(RecvError::Lagged { skipped }) => lost += skipped,
                Err(RecvError::Closed) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(got + lost, 3);
    });
}

#[test]
fn bounded_publisher_never_overwrites_an_unread_message() {
    loom::model(|| {
        let (mut tx, ring) = bounded::<u64>(2, 0);
        let mut rx = ring.subscribe();
        let t = thread::spawn(move || {
            let mut next = 0u64;
            while next < 3 {
                match tx.try_publish(next) {
                    Ok(()) => next += 1,
                    Err(PublishError::Full(_)) => loom::thread::yield_now(),
                    Err(e) => panic!("{e:?}"),
                }
            }
        });
        let mut expect = 0;
        while expect < 3 {
            match rx.try_recv() {
                Ok(v) => {
                    assert_eq!(v, expect);
                    expect += 1;
                }
                Err(RecvError::Empty) => loom::thread::yield_now(),
                Err(e) => panic!("a gated subscriber saw {e:?}"),
            }
        }
        t.join().unwrap();
    });
}

#[test]
fn mpmc_bounded_producers_never_overwrite_an_unread_message() {
    loom::model(|| {
        let (tx, ring) = mpmc_bounded::<Wide>(2, 0);
        let mut rx = ring.subscribe();
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            for i in 1..=2u64 {
                let mut v = [i, i, i];
                while let Err(e) = tx2.try_publish(v) {
                    assert!(matches!(e, PublishError::Full(_)), "{e:?}");
                    v = e.into_inner();
                    loom::thread::yield_now();
                }
            }
        });
        // This thread is both the second producer (one message, which may find the ring
        // full) and the subscriber: three messages through two slots.
        let mut mine = Some([10, 10, 10]);
        let mut got = Vec::new();
        while got.len() < 3 {
            if let Some(v) = mine.take()
                && let Err(e) = tx.try_publish(v)
            {
                assert!(matches!(e, PublishError::Full(_)), "{e:?}");
                mine = Some(e.into_inner());
            }
            match rx.try_recv() {
                Ok(v) => {
                    assert!(v[0] == v[1] && v[1] == v[2], "torn write: {v:?}");
                    got.push(v[0]);
                }
                Err(RecvError::Empty) => loom::thread::yield_now(),
                Err(e) => panic!("a gated subscriber saw {e:?}"),
            }
        }
        a.join().unwrap();
        got.retain(|&v| v != 10);
        assert_eq!(got, [1, 2]);
    });
}

#[test]
fn a_parked_mpmc_producer_is_woken_by_the_read_that_makes_room() {
    loom::model(|| {
        let (tx, ring) = mpmc_bounded::<u64>(2, 0);
        let tx = tx.with_wait_strategy(WaitStrategy::Park);
        let mut rx = ring.subscribe().with_wait_strategy(WaitStrategy::Park);
        let t = thread::spawn(move || {
            // The third claim waits for room: only the subscriber's reads can wake it.
            for i in 1..=3u64 {
                tx.publish(i);
            }
        });
        for i in 1..=3u64 {
            assert_eq!(rx.recv(), Ok(i));
        }
        assert_eq!(rx.recv(), Err(RecvError::Closed));
        t.join().unwrap();
    });
}

/// The single publisher of a bounded ring: its third message waits for room in
/// `Publisher::wait_for_room`, parked, and only the wake in `Subscriber::advance_gate` after
/// the read that makes room can wake it (a lost wake-up leaves both sides parked, a deadlock
/// loom reports).
#[test]
fn a_parked_bounded_publisher_is_woken_by_the_read_that_makes_room() {
    loom::model(|| {
        let (tx, ring) = bounded::<Wide>(2, 0);
        let mut tx = tx.with_wait_strategy(WaitStrategy::Park);
        let mut rx = ring.subscribe().with_wait_strategy(WaitStrategy::Park);
        let t = thread::spawn(move || {
            for i in 1..=3u64 {
                tx.publish([i, i * 10, i * 100]);
            }
        });
        for i in 1..=3u64 {
            assert_eq!(rx.recv(), Ok([i, i * 10, i * 100]));
        }
        assert_eq!(rx.recv(), Err(RecvError::Closed));
        t.join().unwrap();
    });
}

#[test]
fn close_wakes_a_parked_subscriber() {
    loom::model(|| {
        let (mut tx, ring) = channel::<u64>(2);
        let mut rx = ring.subscribe().with_wait_strategy(WaitStrategy::Park);
        let t = thread::spawn(move || {
            tx.publish(1);
            drop(tx);
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Err(RecvError::Closed));
        t.join().unwrap();
    });
}

#[test]
fn publish_wakes_a_parked_subscriber() {
    loom::model(|| {
        let (mut tx, ring) = channel::<u64>(2);
        let mut rx = ring.subscribe().with_wait_strategy(WaitStrategy::Park);
        let t = thread::spawn(move || {
            tx.publish(5);
            tx // keep the ring open: only the publish can wake the subscriber
        });
        assert_eq!(rx.recv(), Ok(5));
        drop(t.join().unwrap());
    });
}

/// The model of a gated subscriber joining from the oldest message of `ring`, whose
/// publisher already published 1 (sequence 0) and publishes 2, 3 and 4 with `try_publish`
/// on another thread while the subscriber joins and reads: whatever it starts at, it never
/// lags and receives every message from there on, in order.
fn join_from_oldest_while_publishing(
    ring: crate::ring::Ring<u64>,
    mut try_publish: impl FnMut(u64) -> Result<(), PublishError<u64>> + Send + 'static,
) {
    let t = thread::spawn(move || {
        for i in 2..=4u64 {
            publish_when_room(&mut try_publish, i);
        }
    });
    let mut rx = ring.subscribe_from_oldest();
    read_without_a_gap_until(&mut rx, 4);
    t.join().unwrap();
}

/// `try_publish(v)` until there is room.
fn publish_when_room(
    try_publish: &mut impl FnMut(u64) -> Result<(), PublishError<u64>>,
    mut v: u64,
) {
    while let Err(e) = try_publish(v) {
        assert!(matches!(e, PublishError::Full(_)), "{e:?}");
        v = e.into_inner();
        loom::thread::yield_now();
    }
}

/// Receives on the gated `rx` until `end`: wherever it started, every value after its first
/// is the one before plus 1, and nothing is lagged.
fn read_without_a_gap_until(rx: &mut crate::ring::Subscriber<u64>, end: u64) {
    let mut last = None;
    while last != Some(end) {
        match rx.try_recv() {
            Ok(v) => {
                if let Some(l) = last {
                    assert_eq!(v, l + 1, "a gap after {l}");
                }
                last = Some(v);
            }
            Err(RecvError::Empty) => loom::thread::yield_now(),
            Err(e) => panic!("a gated subscriber saw {e:?}"),
        }
    }
}

/// A bounded publisher runs on the limit of a scan that may not have seen the new gate.
#[test]
fn a_gated_subscriber_from_the_oldest_never_lags() {
    loom::model(|| {
        let (mut tx, ring) = bounded::<u64>(2, 0);
        tx.try_publish(1).unwrap();
        join_from_oldest_while_publishing(ring, move |v| tx.try_publish(v));
    });
}

/// As [`a_gated_subscriber_from_the_oldest_never_lags`], with the claiming producers of an
/// MPMC ring.
#[test]
fn a_gated_mpmc_subscriber_from_the_oldest_never_lags() {
    loom::model(|| {
        let (tx, ring) = mpmc_bounded::<u64>(2, 0);
        tx.try_publish(1).unwrap();
        join_from_oldest_while_publishing(ring, move |v| tx.try_publish(v));
    });
}

/// A gated subscriber joining from the oldest message of a ring that another gated
/// subscriber holds full, while the publisher tries to go on and that subscriber reads: the
/// joiner takes its start from the grants of the scans it may have missed (or, with one in
/// flight, from their announced bound), and never lags.
fn join_from_oldest_behind_a_held_ring(
    ring: crate::ring::Ring<u64>,
    mut try_publish: impl FnMut(u64) -> Result<(), PublishError<u64>> + Send + 'static,
) {
    let mut held = ring.subscribe();
    try_publish(1).unwrap();
    try_publish(2).unwrap();
    let t = thread::spawn(move || publish_when_room(&mut try_publish, 3));
    let mut rx = ring.subscribe_from_oldest();
    assert_eq!(held.try_recv(), Ok(1));
    read_without_a_gap_until(&mut rx, 3);
    t.join().unwrap();
}

#[test]
fn a_subscriber_from_the_oldest_behind_a_held_ring_never_lags() {
    loom::model(|| {
        let (mut tx, ring) = bounded::<u64>(2, 0);
        join_from_oldest_behind_a_held_ring(ring, move |v| tx.try_publish(v));
    });
}

#[test]
fn an_mpmc_subscriber_from_the_oldest_behind_a_held_ring_never_lags() {
    loom::model(|| {
        let (tx, ring) = mpmc_bounded::<u64>(2, 0);
        join_from_oldest_behind_a_held_ring(ring, move |v| tx.try_publish(v));
    });
}

/// A gated subscriber joining while the publisher of a bounded ring runs ahead: its gate first
/// holds the cursor it read, which the publisher may have left more than a lap behind, so the
/// publisher parks for room; the join then raises the gate to the cursor, and that raise must
/// wake it (`Subscriber::join`). Without the wake both sides park, a deadlock loom reports: the
/// new subscriber has nothing to read, and never reaches a read that would wake the publisher.
#[test]
fn a_join_that_raises_its_gate_wakes_a_parked_publisher() {
    loom::model(|| {
        let (tx, ring) = bounded::<u64>(2, 0);
        let mut tx = tx.with_wait_strategy(WaitStrategy::Park);
        let t = thread::spawn(move || {
            for i in 1..=3u64 {
                tx.publish(i);
            }
        });
        let mut rx = ring.subscribe().with_wait_strategy(WaitStrategy::Park);
        // Whatever it joined at, it receives every later message in order, then Closed.
        let mut last = None;
        loop {
            match rx.recv() {
                Ok(v) => {
                    if let Some(l) = last {
                        assert_eq!(v, l + 1, "a gap after {l}");
                    }
                    last = Some(v);
                }
                Err(RecvError::Closed) => break,
                Err(e) => panic!("a gated subscriber saw {e:?}"),
            }
        }
        t.join().unwrap();
    });
}
