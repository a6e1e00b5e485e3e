//! Single-thread behaviour of the broadcast ring: order, lag counts, close, batches, latest,
//! bounded backpressure, groups, odd-sized values.

use weft::ring::{self, PublishError, RecvError};

#[test]
fn every_subscriber_sees_every_message_in_order() {
    let (mut tx, ring) = ring::channel::<u64>(16);
    let mut a = ring.subscribe();
    let mut b = ring.subscribe();
    for i in 0..10 {
        tx.publish(i);
    }
    for i in 0..10 {
        assert_eq!(a.try_recv(), Ok(i));
        assert_eq!(b.try_recv(), Ok(i));
    }
    assert_eq!(a.try_recv(), Err(RecvError::Empty));
    assert_eq!(a.received(), 10);
    assert_eq!(a.lagged(), 0);
}

#[test]
fn lag_counts_are_exact_under_forced_overflow() {
    for cap in [2u64, 4, 64] {
        for extra in [1u64, 3, 100, 1000] {
            let (mut tx, ring) = ring::channel::<u64>(cap);
            let mut rx = ring.subscribe();
            let total = cap + extra;
            for i in 0..total {
                tx.publish(i);
            }
            let mut got = Vec::new();
            let mut skipped_sum = 0;
            loop {
                match rx.try_recv() {
                    Ok(v) => got.push(v),
                    Err(RecvError::Lagged { skipped }) => skipped_sum += skipped,
                    Err(RecvError::Empty) => break,
                    Err(e) => panic!("{e:?}"),
                }
            }
            // The newest capacity - 1 messages survive (one slot is the one the publisher
            // would write next); everything before was lost and counted.
            assert_eq!(
                skipped_sum,
                total - got.len() as u64,
                "cap {cap} extra {extra}"
            );
            assert_eq!(skipped_sum, rx.lagged());
            assert_eq!(got.len() as u64, cap - 1);
            assert!(got.windows(2).all(|w| w[1] == w[0] + 1));
            assert_eq!(*got.last().unwrap(), total - 1);
        }
    }
}

#[test]
fn closed_after_draining() {
    let (mut tx, ring) = ring::channel::<u32>(8);
    let mut rx = ring.subscribe();
    tx.publish(1);
    tx.publish(2);
    assert!(!ring.is_closed());
    drop(tx);
    assert!(ring.is_closed());
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(RecvError::Closed));
    assert_eq!(rx.recv(), Err(RecvError::Closed));
}

#[test]
fn mpmc_closes_when_the_last_clone_drops() {
    let (tx, ring) = ring::mpmc::<u32>(8);
    let mut rx = ring.subscribe();
    let tx2 = tx.clone();
    drop(tx);
    tx2.publish(3);
    assert_eq!(rx.try_recv(), Ok(3));
    assert_eq!(rx.try_recv(), Err(RecvError::Empty));
    drop(tx2);
    assert_eq!(rx.try_recv(), Err(RecvError::Closed));
}

#[test]
fn batches_publish_and_drain() {
    let (mut tx, ring) = ring::channel::<u64>(64);
    let mut rx = ring.subscribe();
    let v: Vec<u64> = (0..64).collect();
    tx.publish_batch(&v[..40]);
    let mut buf = [0u64; 16];
    assert_eq!(rx.recv_batch(&mut buf), Ok(16));
    assert_eq!(&buf[..], &v[..16]);
    let mut out = Vec::new();
    assert_eq!(rx.drain(&mut out), Ok(24));
    assert_eq!(&out[..], &v[16..40]);
    assert_eq!(rx.drain(&mut out), Err(RecvError::Empty));
    assert_eq!(rx.recv_batch(&mut buf), Err(RecvError::Empty));
    assert_eq!(rx.recv_batch(&mut []), Ok(0));
    // A batch longer than the ring: the subscriber lags by exactly the overflow.
    let long: Vec<u64> = (0..200).collect();
    tx.publish_batch(&long);
    let mut skipped = 0;
    let mut got = Vec::new();
    loop {
        match rx.drain(&mut got) {
            Ok(_) => {}
            Err(RecvError::Lagged { skipped: s }) => skipped += s,
            Err(RecvError::Empty) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(skipped + got.len() as u64, 200);
    assert_eq!(*got.last().unwrap(), 199);
    // A batch read that finds nothing answers as `try_recv` would: a lag, then what is left
    // once the publisher is gone, then `Closed`.
    tx.publish_batch(&long);
    assert_eq!(
        rx.recv_batch(&mut buf[..0]),
        Ok(0),
        "an empty buffer reads nothing"
    );
    // The oldest slot may be mid-rewrite: the lag resumes one past it.
    assert_eq!(
        rx.recv_batch(&mut buf),
        Err(RecvError::Lagged { skipped: 137 })
    );
    let mut rest = Vec::new();
    while let Ok(k) = rx.recv_batch(&mut buf) {
        rest.extend_from_slice(&buf[..k]);
    }
    assert_eq!(rest, &long[137..]);
    tx.publish_batch(&v[..3]);
    drop(tx);
    assert_eq!(rx.recv_batch(&mut buf), Ok(3));
    assert_eq!(&buf[..3], &v[..3]);
    assert_eq!(rx.recv_batch(&mut buf), Err(RecvError::Closed));
}

#[test]
fn latest_skips_to_the_newest() {
    let (mut tx, ring) = ring::channel::<u64>(8);
    let mut rx = ring.subscribe();
    assert_eq!(rx.latest(), None);
    for i in 0..20 {
        tx.publish(i);
    }
    assert_eq!(rx.latest(), Some(19));
    assert_eq!(rx.latest(), None);
    assert_eq!(rx.try_recv(), Err(RecvError::Empty));
    tx.publish(20);
    assert_eq!(rx.try_recv(), Ok(20));
    let (tx, ring) = ring::mpmc::<u64>(8);
    let mut rx = ring.subscribe();
    tx.publish_batch(&[1, 2, 3]);
    assert_eq!(rx.latest(), Some(3));
}

/// A publisher that last scanned the gates when nobody gated may still write a whole window
/// before it looks again: a subscriber joining from the oldest message starts where that
/// window cannot reach, and is never overrun. The same on an MPMC ring, whose producers keep
/// the same kind of limit.
#[test]
fn a_gated_subscriber_from_the_oldest_starts_past_what_the_publisher_may_still_overwrite() {
    fn check(
        ring: ring::Ring<u64>,
        mut try_publish: impl FnMut(u64) -> Result<(), PublishError<u64>>,
    ) {
        // The fifth publish scans the gates (none) and may then run to sequence 7 unchecked.
        for i in 0..5 {
            try_publish(i).unwrap();
        }
        let mut old = ring.subscribe_from_oldest();
        for i in 5..8 {
            try_publish(i).unwrap();
        }
        // Its next scan sees the gate: four ahead of it is the limit.
        assert_eq!(try_publish(8), Err(PublishError::Full(8)));
        let mut got = Vec::new();
        assert_eq!(old.drain(&mut got), Ok(4));
        assert_eq!(got, [4, 5, 6, 7]);
        assert_eq!(old.lagged(), 0);
    }
    let (mut tx, r) = ring::bounded::<u64>(4, 0);
    check(r, move |v| tx.try_publish(v));
    let (tx, r) = ring::mpmc_bounded::<u64>(4, 0);
    check(r, move |v| tx.try_publish(v));
}

/// A gated subscriber that reads nothing holds a full ring back: the publisher's looks at the
/// gates grant nothing past the ring's end, so a subscriber joining from the oldest message
/// gets everything the ring holds (it used to start at the next message, judged from the
/// largest limit a look could have granted). The same on an MPMC ring.
#[test]
fn a_subscriber_from_the_oldest_behind_a_held_ring_gets_what_it_holds() {
    fn check(
        ring: ring::Ring<u64>,
        mut try_publish: impl FnMut(u64) -> Result<(), PublishError<u64>>,
    ) {
        let mut stuck = ring.subscribe();
        for i in 0..4 {
            try_publish(i).unwrap();
        }
        assert_eq!(try_publish(4), Err(PublishError::Full(4)));
        assert_eq!(try_publish(4), Err(PublishError::Full(4)));
        let mut old = ring.subscribe_from_oldest();
        assert_eq!(old.position(), 1, "the last capacity - 1 messages");
        // Both gate the publisher now: it goes on as both read.
        assert_eq!(stuck.try_recv(), Ok(0));
        assert_eq!(stuck.try_recv(), Ok(1));
        assert_eq!(try_publish(4), Ok(()));
        let mut got = Vec::new();
        assert_eq!(old.drain(&mut got), Ok(4));
        assert_eq!(got, [1, 2, 3, 4]);
        assert_eq!(old.lagged(), 0);
    }
    let (mut tx, r) = ring::bounded::<u64>(4, 0);
    check(r, move |v| tx.try_publish(v));
    let (tx, r) = ring::mpmc_bounded::<u64>(4, 0);
    check(r, move |v| tx.try_publish(v));
}

#[test]
fn from_oldest_and_lossy_subscribers() {
    let (mut tx, ring) = ring::bounded::<u64>(4, 0);
    let mut lossy = ring.subscribe_lossy();
    for i in 0..3 {
        tx.try_publish(i).unwrap();
    }
    let mut old = ring.subscribe_from_oldest();
    assert_eq!(old.try_recv(), Ok(0));
    // `old` now gates: the publisher may run 4 ahead of it.
    tx.try_publish(3).unwrap();
    tx.try_publish(4).unwrap();
    assert_eq!(tx.try_publish(5), Err(PublishError::Full(5)));
    // The lossy subscriber does not gate: 5 published on 4 slots overran it.
    assert_eq!(lossy.try_recv(), Err(RecvError::Lagged { skipped: 2 }));
    assert_eq!(lossy.try_recv(), Ok(2));
    drop(old);
    for i in 5..20 {
        tx.try_publish(i).unwrap();
    }
    assert!(matches!(lossy.try_recv(), Err(RecvError::Lagged { .. })));
}

#[test]
fn bounded_full_returns_the_value_and_timeout_gives_it_back() {
    let (mut tx, ring) = ring::bounded::<u64>(4, 0);
    let mut rx = ring.subscribe();
    for i in 0..4 {
        tx.try_publish(i).unwrap();
    }
    assert!(tx.is_full());
    let e = tx.try_publish(9).unwrap_err();
    assert_eq!(e, PublishError::Full(9));
    assert_eq!(weft::Error::from(e).kind(), weft::ErrorKind::Full);
    let e = tx
        .publish_timeout(9, std::time::Duration::from_millis(2))
        .unwrap_err();
    assert_eq!(e.into_inner(), 9);
    assert_eq!(rx.try_recv(), Ok(0));
    tx.publish_timeout(4, std::time::Duration::from_millis(2))
        .unwrap();
    for i in 1..5 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
}

#[test]
fn bounded_watermark_keeps_slots_free() {
    let (mut tx, ring) = ring::bounded::<u64>(8, 3);
    let _rx = ring.subscribe();
    let mut n = 0;
    while tx.try_publish(n).is_ok() {
        n += 1;
    }
    assert_eq!(n, 5);
}

#[test]
fn odd_sized_and_wide_values_round_trip() {
    let (mut tx, ring) = ring::channel::<[u8; 13]>(4);
    let mut rx = ring.subscribe();
    let v = *b"hello, world!";
    tx.publish(v);
    assert_eq!(rx.try_recv(), Ok(v));
    let (mut tx, ring) = ring::channel::<[u64; 20]>(4);
    let mut rx = ring.subscribe();
    let w: [u64; 20] = core::array::from_fn(|i| i as u64 * 3);
    tx.publish(w);
    assert_eq!(rx.try_recv(), Ok(w));
    let (mut tx, ring) = ring::channel::<()>(4);
    let mut rx = ring.subscribe();
    tx.publish(());
    assert_eq!(rx.try_recv(), Ok(()));
    let (mut tx, ring) = ring::channel::<u128>(4);
    let mut rx = ring.subscribe();
    tx.publish(u128::MAX - 5);
    assert_eq!(rx.try_recv(), Ok(u128::MAX - 5));
}

/// `drain` grows its vector only once a message is there, and by a few kilobytes of values at
/// most: an empty drain of 64 KiB values used to zero-fill room for 64 of them (4 MiB) and
/// leave it allocated.
#[test]
fn drain_grows_the_vector_only_for_what_it_finds() {
    // Under miri, 8 KiB: still a run of one value, and a tenth of the time to copy.
    #[cfg(not(miri))]
    type Big = [u8; 65536];
    #[cfg(miri)]
    type Big = [u8; 8192];
    let (mut tx, ring) = ring::channel::<Big>(2);
    let mut rx = ring.subscribe();
    let mut out: Vec<Big> = Vec::new();
    assert_eq!(rx.drain(&mut out), Err(RecvError::Empty));
    assert_eq!(out.capacity(), 0, "an empty drain allocates nothing");
    tx.publish([7; size_of::<Big>()]);
    let mut out: Vec<Big> = Vec::new();
    assert_eq!(rx.drain(&mut out), Ok(1));
    assert!(out.len() == 1 && out[0].iter().all(|&b| b == 7));
    assert!(
        out.capacity() <= 2,
        "room for {} values after one",
        out.capacity()
    );
    // Small values: an empty drain allocates nothing either, and many runs' worth of
    // messages arrive whole and in order.
    let (mut tx, ring) = ring::channel::<u64>(1024);
    let mut rx = ring.subscribe();
    let mut out = Vec::new();
    assert_eq!(rx.drain(&mut out), Err(RecvError::Empty));
    assert_eq!(out.capacity(), 0, "an empty drain allocates nothing");
    let v: Vec<u64> = (0..700).collect();
    tx.publish_batch(&v);
    assert_eq!(rx.drain(&mut out), Ok(700));
    assert_eq!(out, v);
    assert_eq!(rx.drain(&mut out), Err(RecvError::Empty));
}

#[test]
fn capacity_rounds_up_to_a_power_of_two() {
    assert_eq!(ring::channel::<u8>(0).1.capacity(), 2);
    assert_eq!(ring::channel::<u8>(5).1.capacity(), 8);
    assert_eq!(ring::channel::<u8>(1024).1.capacity(), 1024);
}

#[test]
fn group_hands_one_read_to_every_member() {
    let (mut tx, ring) = ring::bounded::<u64>(4, 0);
    let mut g = ring.subscribe_group(3);
    assert_eq!(g.members(), 3);
    let mut sums = [0u64; 3];
    for round in 0..10u64 {
        tx.publish(round);
        g.try_recv(|m, v| sums[m] += *v).unwrap();
    }
    assert_eq!(sums, [45, 45, 45]);
    assert_eq!(g.received(1), 10);
    assert_eq!(g.try_recv(|_, _| {}), Err(RecvError::Empty));
}

#[test]
fn errors_convert_into_the_crate_error() {
    assert_eq!(
        weft::Error::from(RecvError::Lagged { skipped: 4 }).to_string(),
        "lagged: 4 messages skipped, overwritten (or about to be) before they were read"
    );
    assert_eq!(
        weft::Error::from(RecvError::Closed).kind(),
        weft::ErrorKind::Closed
    );
    assert_eq!(
        weft::Error::from(RecvError::Timeout).kind(),
        weft::ErrorKind::Timeout
    );
}

#[cfg(not(miri))]
#[test]
fn hugepage_and_locked_memory() {
    let (mut tx, ring) =
        ring::channel_with::<u64>(4096, ring::Options::new().hugepages(true)).unwrap();
    let mut rx = ring.subscribe();
    tx.publish(1);
    assert_eq!(rx.try_recv(), Ok(1));
    // mlock may be refused by RLIMIT_MEMLOCK: then it is an Io error, never a panic.
    match ring::channel_with::<u64>(64, ring::Options::new().lock(true)) {
        Ok((mut tx, ring)) => {
            let mut rx = ring.subscribe();
            tx.publish(2);
            assert_eq!(rx.try_recv(), Ok(2));
        }
        Err(e) => assert_eq!(e.kind(), weft::ErrorKind::Io),
    }
}

/// A subscriber lapped again before it got through half a ring since its last lap goes on
/// half a ring further than the oldest message (at the oldest, a faster publisher laps it
/// again at once); a single lap keeps the whole ring. Every count exact.
#[test]
fn a_subscriber_lapped_again_soon_goes_on_half_a_ring_further() {
    let (mut tx, ring) = weft::ring::channel::<u64>(8);
    let mut rx = ring.subscribe();
    let mut publish = |range: std::ops::Range<u64>| range.for_each(|i| tx.publish(i));
    // 20 on a ring of 8: the first lap goes on at the oldest the ring still holds whole, 13.
    publish(0..20);
    assert_eq!(rx.try_recv(), Err(RecvError::Lagged { skipped: 13 }));
    assert_eq!(rx.try_recv(), Ok(13));
    // Lapped again one message later: the oldest is 33, half a ring further is 37.
    publish(20..40);
    assert_eq!(rx.try_recv(), Err(RecvError::Lagged { skipped: 23 }));
    assert_eq!(
        (0..3).map(|_| rx.try_recv()).collect::<Vec<_>>(),
        [Ok(37), Ok(38), Ok(39)]
    );
    // Eight read since that lap: the next one goes on at the oldest again (57).
    publish(40..45);
    (40..45).for_each(|i| assert_eq!(rx.try_recv(), Ok(i)));
    publish(45..64);
    assert_eq!(rx.try_recv(), Err(RecvError::Lagged { skipped: 12 }));
    assert_eq!(rx.try_recv(), Ok(57));
    assert_eq!(rx.lagged(), 13 + 23 + 12);
}

#[test]
fn a_full_subscriber_table_is_an_error_until_a_subscriber_leaves() {
    let (mut tx, ring) =
        ring::bounded_with::<u64>(8, 0, ring::Options::new().max_subscribers(2)).unwrap();
    let a = ring.try_subscribe().unwrap();
    let mut b = ring.try_subscribe().unwrap();
    assert!(matches!(ring.try_subscribe(), Err(weft::Error::Full)));
    // A lossy subscriber takes no gate.
    let _lossy = ring.subscribe_lossy();
    drop(a);
    let mut c = ring
        .try_subscribe()
        .expect("the gate `a` left is free again");
    tx.publish(7);
    assert_eq!(b.try_recv(), Ok(7));
    assert_eq!(c.try_recv(), Ok(7));
}

/// A bounded ring takes 1 to 4096 gated subscribers: 0 would leave it nothing to gate its
/// publisher (every subscriber lossy, and `subscribe` would not gate as it promises), and
/// more used to be cut to 4096 without a word.
#[test]
fn a_bounded_ring_refuses_a_subscriber_table_of_0_or_past_4096() {
    for n in [0, 4097, u64::MAX] {
        let opts = ring::Options::new().max_subscribers(n);
        let err = ring::bounded_with::<u64>(8, 0, opts)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.kind(), weft::ErrorKind::InvalidArgument, "{n}: {err}");
        let err = ring::mpmc_bounded_with::<u64>(8, 0, opts)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.kind(), weft::ErrorKind::InvalidArgument, "{n}: {err}");
        // A lossy ring has no gates: the option is not its concern.
        assert!(ring::channel_with::<u64>(8, opts).is_ok(), "{n}");
    }
    let (mut tx, ring) =
        ring::bounded_with::<u64>(2, 0, ring::Options::new().max_subscribers(1)).unwrap();
    let mut rx = ring.subscribe();
    tx.publish(1);
    tx.publish(2);
    assert_eq!(tx.try_publish(3), Err(PublishError::Full(3)), "gated");
    assert_eq!(rx.try_recv(), Ok(1));
}

/// A ring whose size in bytes does not fit in `isize` (an 8 MiB message times 2^40 slots) is
/// an error from every constructor that returns one, and from the bus, where it used to be a
/// panic.
#[test]
fn a_ring_too_large_to_allocate_is_an_error() {
    type Big = [u8; 1 << 23];
    let opts = ring::Options::new();
    let cap = 1 << 40;
    let kind = |r: weft::Result<()>| r.unwrap_err().kind();
    let invalid = weft::ErrorKind::InvalidArgument;
    assert_eq!(
        kind(ring::channel_with::<Big>(cap, opts).map(|_| ())),
        invalid
    );
    assert_eq!(kind(ring::mpmc_with::<Big>(cap, opts).map(|_| ())), invalid);
    assert_eq!(
        kind(ring::bounded_with::<Big>(cap, 0, opts).map(|_| ())),
        invalid
    );
    assert_eq!(
        kind(ring::mpmc_bounded_with::<Big>(cap, 0, opts).map(|_| ())),
        invalid
    );
    let bus = weft::bus::Bus::new(cap);
    assert_eq!(kind(bus.publisher::<Big>("big").map(|_| ())), invalid);
    assert_eq!(kind(bus.subscribe::<Big>("big").map(|_| ())), invalid);
    assert!(bus.topics().is_empty(), "no topic is left behind");
}

/// One message at a time and in batches, both ways round, over several laps, then an exact
/// lag: the batch paths walk the slots with a pointer, the single ones index each slot with
/// the value type's stride, and the lag is found by the slow path's stamp checks, which index
/// with the ring's own stride. A stride that disagreed anywhere would mix messages up.
fn single_and_batched_messages_agree<T>(make: impl Fn(u64) -> T)
where
    T: bytemuck::Pod + PartialEq + core::fmt::Debug,
{
    let what = core::any::type_name::<T>();
    let (mut tx, ring) = ring::channel::<T>(8);
    let mut rx = ring.subscribe();
    let mut next = 0u64;
    let mut buf = vec![make(0); 5];
    for lap in 0..6u64 {
        let batch: Vec<T> = (next..next + 5).map(&make).collect();
        tx.publish_batch(&batch);
        for want in batch {
            assert_eq!(rx.try_recv(), Ok(want), "{what}, lap {lap}");
        }
        next += 5;
        for v in next..next + 5 {
            tx.publish(make(v));
        }
        assert_eq!(rx.recv_batch(&mut buf), Ok(5), "{what}, lap {lap}");
        let want: Vec<T> = (next..next + 5).map(&make).collect();
        assert_eq!(buf, want, "{what}, lap {lap}");
        next += 5;
    }
    assert_eq!(rx.try_recv(), Err(RecvError::Empty), "{what}");
    // 20 unread on a ring of 8: the 13 oldest are gone, the 7 newest (all but the slot the
    // publisher writes next, as `lag_counts_are_exact_under_forced_overflow` says) read in
    // order.
    for v in next..next + 20 {
        tx.publish(make(v));
    }
    assert_eq!(
        rx.try_recv(),
        Err(RecvError::Lagged { skipped: 13 }),
        "{what}"
    );
    for v in next + 13..next + 20 {
        assert_eq!(rx.try_recv(), Ok(make(v)), "{what}");
    }
    assert_eq!(rx.try_recv(), Err(RecvError::Empty), "{what}");
}

#[test]
fn slots_of_every_size_carry_single_and_batched_messages_alike() {
    // Strides of 16, 32, 64, 128, 256 and 512 bytes; values of 128 bytes and more take the
    // bulk copy.
    single_and_batched_messages_agree(|v| v as u8);
    single_and_batched_messages_agree(|v| [v as u8, 1, 2]);
    single_and_batched_messages_agree(|v| v);
    single_and_batched_messages_agree(|v| [v as u8; 24]);
    single_and_batched_messages_agree(|v| [v; 7]);
    single_and_batched_messages_agree(|v| [v; 8]);
    single_and_batched_messages_agree(|v| [v as u8; 100]);
    single_and_batched_messages_agree(|v| [v; 16]);
    single_and_batched_messages_agree(|v| [v as u16; 150]);
}

/// A group reports what it missed when it was lapped, as a subscriber does.
#[test]
fn a_lapped_group_counts_what_it_missed() {
    let (mut tx, ring) = ring::channel::<u64>(4);
    let mut group = ring.subscribe_group(2);
    tx.publish_batch(&[0, 1, 2, 3, 4, 5]);
    assert_eq!(
        group.try_recv(|_, _| {}),
        Err(RecvError::Lagged { skipped: 3 })
    );
    assert_eq!(group.lagged(), 3);
    let mut seen = Vec::new();
    group.try_recv(|m, v| seen.push((m, *v))).unwrap();
    assert_eq!(seen, [(0, 3), (1, 3)]);
    assert_eq!(group.lagged(), 3);
}
