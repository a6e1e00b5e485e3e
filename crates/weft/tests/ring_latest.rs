//! `Subscriber::latest` against publishers caught in the middle of their writes: MPMC
//! producers that claimed a whole lap and wait for room, and a single publisher that writes a
//! lap per batch before it moves the cursor. `latest` returns `None` only when nothing newer
//! than what the subscriber read is in the ring.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use weft::ring::{self, RecvError};

/// Waits until the ring's claim counter stands `claims` past the subscriber (every producer
/// has claimed its sequence), or panics after 10 s.
fn wait_for_claims(rx: &ring::Subscriber<u64>, claims: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while rx.pending() < claims {
        assert!(Instant::now() < deadline, "the producers never claimed");
        thread::sleep(Duration::from_millis(1));
    }
}

/// A four-slot bounded MPMC ring holds 0..4, and producers claimed 4..8 and wait for the
/// gated subscriber, which read nothing: the claim counter stands a lap past the newest
/// complete message, every sequence of the lap below it reads "not yet", and the complete
/// ones lie below that lap. `latest` finds 3 there; what follows is as `try_recv` says.
#[test]
fn mpmc_latest_finds_the_newest_below_a_lap_of_claims_in_flight() {
    // One producer's batch claims the whole lap at once; four producers claim one each.
    for batch in [true, false] {
        let (tx, ring) = ring::mpmc_bounded::<u64>(4, 0);
        let gated = ring.subscribe(); // reads nothing: holds the producers back
        let mut lossy = ring.subscribe_lossy();
        for i in 0..4 {
            tx.try_publish(i).unwrap();
        }
        let producers: Vec<_> = if batch {
            let tx = tx.clone();
            vec![thread::spawn(move || tx.publish_batch(&[4, 5, 6, 7]))]
        } else {
            (4..8)
                .map(|i| {
                    let tx = tx.clone();
                    thread::spawn(move || tx.publish(i))
                })
                .collect()
        };
        wait_for_claims(&lossy, 8);
        // Give the producers time to reach their wait for room (nothing they do changes
        // what `latest` must find: 4..8 cannot be written while `gated` is at 0).
        thread::sleep(Duration::from_millis(if cfg!(miri) { 1 } else { 50 }));
        assert_eq!(lossy.latest(), Some(3), "batch {batch}");
        assert_eq!(
            (lossy.position(), lossy.received(), lossy.lagged()),
            (4, 1, 0),
            "batch {batch}: 0..3 skipped on purpose, neither received nor lagged"
        );
        assert_eq!(
            lossy.latest(),
            None,
            "batch {batch}: nothing newer is complete"
        );
        assert_eq!(lossy.try_recv(), Err(RecvError::Empty), "batch {batch}");
        drop(gated);
        producers.into_iter().for_each(|t| t.join().unwrap());
        let mut rest: Vec<u64> = (0..4).map(|_| lossy.try_recv().unwrap()).collect();
        rest.sort_unstable();
        assert_eq!(rest, [4, 5, 6, 7], "batch {batch}");
        assert_eq!((lossy.received(), lossy.lagged()), (5, 0), "batch {batch}");
        drop(tx);
        assert_eq!(lossy.try_recv(), Err(RecvError::Closed), "batch {batch}");
    }
}

/// A publisher that writes a whole lap per batch rewrites every slot before it stores the
/// cursor: a subscriber that loaded the cursor just before finds the slot below it
/// overwritten (the walk down from there found only more overwritten slots and gave up).
/// Whenever the cursor stood past the subscriber before the call, `latest` returns a message,
/// and the position it leaves agrees with it (values are their sequence numbers). Unless the
/// call itself stalled (its thread preempted, by this machine's scheduler or the host's):
/// then the publisher rewrote the whole ring many times over during its looks, the case in
/// which `latest` documents that it gives up; such calls are counted apart and excused.
#[test]
#[cfg_attr(miri, ignore = "a timed race; the unit tests in `ring` cover it")]
fn spmc_latest_never_misses_while_a_publisher_writes_whole_laps() {
    // Sixteen lines of slots. The old `latest` missed on 2 to 20 calls in 100 at 16 to 64
    // slots (debug build, two cores); a ring of one line, which the publisher rewrites whole
    // in a few nanoseconds, can make a debug build's copy of one value lose on every look,
    // which `latest` documents as the case where it gives up.
    const CAP: u64 = 64;
    let (mut tx, ring) = ring::channel::<u64>(CAP);
    let mut rx = ring.subscribe();
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut lap = [0u64; CAP as usize];
            let mut next = 0;
            while !stop.load(Ordering::Relaxed) {
                for v in &mut lap {
                    *v = next;
                    next += 1;
                }
                tx.publish_batch(&lap);
            }
        })
    };
    // A call takes well under a microsecond; one that took this long was off its core for a
    // while, which is the only way the publisher's laps can outrun every one of its looks.
    const STALLED: Duration = Duration::from_micros(20);
    let (mut calls, mut found, mut missed, mut stalled) = (0u64, 0u64, 0u64, 0u64);
    let deadline = Instant::now() + Duration::from_millis(200);
    while Instant::now() < deadline {
        let pending = rx.pending();
        let before = rx.position();
        let t = Instant::now();
        let got = rx.latest();
        let took = t.elapsed();
        match got {
            Some(v) => {
                found += 1;
                assert!(v >= before, "{v} is older than position {before}");
                assert_eq!(rx.position(), v + 1, "the position follows the value");
            }
            None if pending > 0 && took >= STALLED => stalled += 1,
            None if pending > 0 => missed += 1,
            None => {}
        }
        calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    assert_eq!(
        missed, 0,
        "latest() said nothing newer exists {missed} times of {calls} while the cursor stood \
         past the subscriber (and {stalled} times in calls that stalled)"
    );
    assert_eq!((rx.received(), rx.lagged()), (found, 0));
}
