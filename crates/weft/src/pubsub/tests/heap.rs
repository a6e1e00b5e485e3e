//! The pool and ring over heap memory, for miri (and a quick check in ordinary test runs):
//! allocation, takes and drops, publish, read, lag, two publisher threads with a reader thread,
//! and a participant killed at every step of every reference operation, settled exactly.

use super::super::pool::{
    DONE, DONE_OLD, Dropped, Entry, SUB_PARKED, SUB_TAG, TAKING, Take, Who, entry,
};
use super::super::ring::Read;
use super::mem::{HELD, Mem, yield_to};
use crate::sync::Ordering;
use std::sync::Arc;

#[test]
fn pool_hands_out_each_block_once_and_takes_it_back() {
    let m = Mem::new(4, 2);
    let pool = m.pool();
    let mut cursor = 0;
    let mut got = Vec::new();
    for e in 0..4u32 {
        let who = Who {
            participant: 0,
            record: e,
        };
        let b = pool.alloc(who, &mut cursor, |_| {}).unwrap();
        pool.unmark(b, who);
        got.push(b);
    }
    let who = Who {
        participant: 1,
        record: 0,
    };
    assert_eq!(pool.alloc(who, &mut cursor, |_| {}), None);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, [0, 1, 2, 3]);
    // Another participant takes a second reference on block 0; its mark blocks others until
    // it clears it.
    assert_eq!(pool.take(got[0], who).unwrap(), Take::Taken);
    let other = Who {
        participant: 2,
        record: 0,
    };
    assert_eq!(pool.take(got[0], other).unwrap(), Take::Busy(who));
    pool.unmark(got[0], who);
    assert_eq!(m.count(got[0]), 2);
    assert_eq!(
        pool.drop_ref(got[0], who).unwrap(),
        Dropped::Done { freed: false }
    );
    pool.unmark(got[0], who);
    for (e, &b) in got.iter().enumerate() {
        let who = Who {
            participant: 0,
            record: e as u32,
        };
        assert_eq!(
            pool.drop_ref(b, who).unwrap(),
            Dropped::Done { freed: true }
        );
        pool.unmark(b, who);
    }
    assert!(
        pool.drop_ref(0, who).is_err(),
        "a release below zero is refused"
    );
    assert_eq!(
        pool.take(0, who).unwrap(),
        Take::Free,
        "a free block stays free"
    );
    assert_eq!(pool.free_estimate(), 4);
}

#[test]
fn ring_delivers_in_order_and_reports_exact_lag() {
    let m = Mem::new(8, 4);
    let mut cursor = 0;
    let mut r = 0;
    assert_eq!(m.read_seq(1, &mut r), None);
    for v in 0..3 {
        m.publish(0, v, &mut cursor).unwrap();
    }
    assert_eq!(
        (
            m.read_seq(1, &mut r),
            m.read_seq(1, &mut r),
            m.read_seq(1, &mut r)
        ),
        (Some(0), Some(1), Some(2))
    );
    for v in 3..10 {
        m.publish(0, v, &mut cursor).unwrap();
    }
    assert_eq!(
        m.ring().read(r).unwrap(),
        super::super::ring::Read::Lagged {
            skipped: 3,
            next: 6
        }
    );
    // Only the ring's four slots hold blocks.
    assert_eq!(m.pool().free_estimate(), 4);
}

#[test]
fn two_publishers_and_a_reader_on_threads() {
    let n: u64 = if cfg!(miri) { 6 } else { 200 };
    let m = Mem::new(16, 8);
    let pubs: Vec<_> = (0..2u32)
        .map(|p| {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut cursor = 8 * p;
                for v in 0..n {
                    while m.publish(p, (p as u64) << 32 | v, &mut cursor).is_none() {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let reader = {
        let m = m.clone();
        std::thread::spawn(move || {
            let mut r = 0;
            let mut last = [None::<u64>; 2];
            while r < 2 * n {
                if let Some(v) = m.read_seq(2, &mut r) {
                    let p = (v >> 32) as usize;
                    assert!(last[p].is_none_or(|l| v > l), "out of order");
                    last[p] = Some(v);
                } else {
                    std::thread::yield_now();
                }
            }
        })
    };
    for p in pubs {
        p.join().unwrap();
    }
    reader.join().unwrap();
    assert_eq!(m.pool().free_estimate(), 16 - 8);
}

/// A recycling publisher (the block a publish displaces is kept for the next loan when the
/// publisher holds its only reference) against a reader thread: every value read is its
/// sequence's, and at the end the ring's blocks and the kept one are all that is in use; a
/// reclaim of the publisher's row frees the kept one.
#[test]
fn a_recycling_publisher_and_a_reader_on_threads() {
    recycling_publisher_and_reader(Mem::new(6, 4));
}

/// As `a_recycling_publisher_and_a_reader_on_threads`, for the one publisher of a
/// single-publisher topic (plain-store claims).
#[test]
fn a_recycling_single_publisher_and_a_reader_on_threads() {
    recycling_publisher_and_reader(Mem::new_single(6, 4));
}

fn recycling_publisher_and_reader(m: std::sync::Arc<Mem>) {
    let n: u64 = if cfg!(miri) { 8 } else { 2000 };
    let publisher = {
        let m = m.clone();
        std::thread::spawn(move || {
            let (mut cursor, mut kept) = (0, None);
            for v in 0..n {
                while m.publish_recycling(0, v, &mut cursor, &mut kept).is_none() {
                    std::thread::yield_now();
                }
            }
            kept
        })
    };
    let mut r = 0;
    let mut last = None::<u64>;
    while r < n {
        let at = r;
        if let Some(v) = m.read_seq(1, &mut r) {
            assert_eq!(v, r - 1, "read at {at}");
            assert!(last.is_none_or(|l| v > l), "out of order");
            last = Some(v);
        } else if publisher.is_finished() && m.ring().tail().unwrap() <= r {
            break;
        } else {
            std::thread::yield_now();
        }
    }
    let kept = publisher.join().unwrap();
    assert_eq!(
        m.pool().free_estimate(),
        6 - 4 - usize::from(kept.is_some())
    );
    m.reclaim(0);
    assert_eq!(m.pool().free_estimate(), 6 - 4);
}

/// A publisher's record that names the kept block without the kept mark (stored some other
/// way since: a topic freed through the record, a release that gave up) is not adopted by the
/// next loan, even while another participant holds the block: that loan gets a free block,
/// and the record's reference is released first.
#[test]
fn only_a_record_marked_kept_is_adopted() {
    let m = Mem::new(4, 2);
    let (mut cursor, mut kept) = (0, None);
    for v in 0..3 {
        m.publish_recycling(0, v, &mut cursor, &mut kept).unwrap();
    }
    let b = kept.expect("the third publish kept the first one's block");
    assert_eq!(m.count(b), 1);
    // Participant 1 takes a reference on it, and the record loses its mark.
    let h = m.entry(1, 0);
    assert!(super::super::pool::take_entry_to(&m.pool(), h, 1, 0, b, 0, yield_to, |c| c).unwrap());
    m.pub_old(0).store(b as u64 + 1, Ordering::Release);
    let seq = m.publish_recycling(0, 3, &mut cursor, &mut kept).unwrap();
    let Read::Ready { desc } = m.ring().read(seq).unwrap() else {
        panic!("sequence {seq} is committed");
    };
    let (nb, _) = super::super::ring::undesc(desc).unwrap();
    assert_ne!(nb, b, "the loan adopted a block another participant holds");
    assert_eq!(
        m.read(b),
        0,
        "the held block still holds what was published in it"
    );
    // The record's reference went back: only participant 1's is left.
    assert_eq!(m.count(b), 1);
}

/// Participant 1 takes a second reference on a block the ring holds, and is killed after
/// `step` steps of the take (0: intent recorded; 1: count taken; 2: recorded; 3: unmarked).
/// The survivor's reclaim leaves exactly the ring's reference, and a second reclaim changes
/// nothing.
#[test]
fn a_take_killed_at_any_step_is_settled_exactly() {
    for step in 0..4 {
        let m = Mem::new(4, 2);
        let mut cursor = 0;
        m.publish(0, 5, &mut cursor).unwrap();
        let b = 0;
        assert_eq!(m.count(b), 1);
        let (p, e) = (1, 0);
        let who = Who {
            participant: p,
            record: e,
        };
        let h = m.entry(p, e);
        h.store(TAKING | (b + 1), Ordering::Release);
        if step >= 1 {
            assert_eq!(m.pool().take(b, who).unwrap(), Take::Taken);
        }
        if step >= 2 {
            h.store(b + 1, Ordering::Release);
        }
        if step >= 3 {
            m.pool().unmark(b, who);
        }
        let released = m.reclaim(p);
        assert_eq!(released, u32::from(step >= 1), "step {step}");
        assert_eq!(
            m.count(b),
            1,
            "step {step}: only the ring's reference is left"
        );
        assert_eq!(entry(h.load(Ordering::Relaxed)), Entry::Empty);
        assert_eq!(
            m.reclaim(p),
            0,
            "step {step}: a second reclaim changes nothing"
        );
        // The block is not marked: others take it at once.
        let mut r = 0;
        assert_eq!(m.read_seq(2, &mut r), Some(5));
    }
}

/// Participant 1 holds a reference and is killed after `step` steps of dropping it (0: not
/// started; 1: count dropped; 2: record says done; 3: unmarked; 4: record cleared).
#[test]
fn a_drop_killed_at_any_step_is_settled_exactly() {
    for step in 0..5 {
        let m = Mem::new(4, 2);
        let mut cursor = 0;
        m.publish(0, 5, &mut cursor).unwrap();
        let (p, e, b) = (1, 2, 0);
        let who = Who {
            participant: p,
            record: e,
        };
        let h = m.entry(p, e);
        h.store(TAKING | (b + 1), Ordering::Release);
        assert_eq!(m.pool().take(b, who).unwrap(), Take::Taken);
        h.store(b + 1, Ordering::Release);
        m.pool().unmark(b, who);
        assert_eq!(m.count(b), 2);
        if step >= 1 {
            assert!(matches!(
                m.pool().drop_ref(b, who).unwrap(),
                Dropped::Done { freed: false }
            ));
        }
        if step >= 2 {
            h.store(DONE | (b + 1), Ordering::Release);
        }
        if step >= 3 {
            m.pool().unmark(b, who);
        }
        if step >= 4 {
            h.store(0, Ordering::Release);
        }
        assert_eq!(m.reclaim(p), u32::from(step == 0), "step {step}");
        assert_eq!(m.count(b), 1, "step {step}");
        assert_eq!(m.reclaim(p), 0);
    }
}

/// A loan killed after `step` steps of its allocation (0: intent; 1: claimed; 2: recorded;
/// 3: unmarked): the block is free again after the reclaim.
#[test]
fn an_allocation_killed_at_any_step_is_settled_exactly() {
    for step in 0..4 {
        let m = Mem::new(2, 2);
        let (p, e) = (1, 1);
        let who = Who {
            participant: p,
            record: e,
        };
        let h = m.entry(p, e);
        h.store(TAKING, Ordering::Release);
        let mut cursor = 1;
        let b = if step >= 1 {
            m.pool()
                .alloc(who, &mut cursor, |b| {
                    h.store(TAKING | (b + 1), Ordering::Relaxed)
                })
                .unwrap()
        } else {
            h.store(TAKING | 2, Ordering::Release);
            1
        };
        assert_eq!(b, 1);
        if step >= 2 {
            h.store(b + 1, Ordering::Release);
        }
        if step >= 3 {
            m.pool().unmark(b, who);
        }
        assert_eq!(m.reclaim(p), u32::from(step >= 1), "step {step}");
        assert_eq!(m.pool().free_estimate(), 2, "step {step}");
        assert_eq!(m.reclaim(p), 0);
    }
}

/// A publisher killed after `step` steps of releasing the block its publish displaced (0:
/// record names it; 1: dropped; 2: record says done; 3: unmarked; 4: record cleared).
#[test]
fn a_displaced_reference_killed_at_any_step_is_settled_exactly() {
    for step in 0..5 {
        let m = Mem::new(2, 1);
        let mut cursor = 0;
        m.publish(0, 5, &mut cursor).unwrap();
        let (p, b) = (0, 0);
        let who = Who {
            participant: p,
            record: super::super::pool::PUB_OLD,
        };
        // The ring slot's reference on block 0 moved to the publish record (as a publish that
        // overwrote the slot leaves it), and the slot now names nothing.
        m.ring().set_desc(0, 0);
        let rec = m.pub_old(p);
        rec.store(b as u64 + 1, Ordering::Release);
        if step >= 1 {
            assert!(matches!(
                m.pool().drop_ref(b, who).unwrap(),
                Dropped::Done { freed: true }
            ));
        }
        if step >= 2 {
            rec.store(DONE_OLD | (b as u64 + 1), Ordering::Release);
        }
        if step >= 3 {
            m.pool().unmark(b, who);
        }
        if step >= 4 {
            rec.store(0, Ordering::Release);
        }
        assert_eq!(m.reclaim(p), u32::from(step == 0), "step {step}");
        assert_eq!(m.pool().free_estimate(), 2, "step {step}");
        assert_eq!(m.reclaim(p), 0);
    }
}

/// The owner (participant 1) was killed right after the CAS of a take, of a drop, or of the
/// drop of a displaced reference (its mark on the block, its record not updated yet); then the
/// reclaimer is killed too, after `n` of its own stores, and a second reclaim finishes. The
/// block ends with exactly the references it should have: the first reclaimer's death may
/// neither leak the take nor release the drop a second time.
#[test]
fn a_reclaim_killed_between_its_stores_settles_exactly_once() {
    use super::super::pool::{PUB_OLD, crash};
    for case in ["take", "drop", "displaced"] {
        for n in 0..2 {
            let m = Mem::new(2, 1);
            let mut cursor = 0;
            m.publish(0, 5, &mut cursor).unwrap();
            let (p, b) = (1, 0);
            let record = if case == "displaced" { PUB_OLD } else { 0 };
            let who = Who {
                participant: p,
                record,
            };
            let h = m.entry(p, 0);
            match case {
                "take" => {
                    h.store(TAKING | (b + 1), Ordering::Release);
                    assert_eq!(m.pool().take(b, who).unwrap(), Take::Taken);
                }
                "drop" => {
                    h.store(TAKING | (b + 1), Ordering::Release);
                    assert_eq!(m.pool().take(b, who).unwrap(), Take::Taken);
                    h.store(b + 1, Ordering::Release);
                    m.pool().unmark(b, who);
                    assert!(matches!(
                        m.pool().drop_ref(b, who).unwrap(),
                        Dropped::Done { freed: false }
                    ));
                }
                _ => {
                    // The slot's reference moved to participant 1's publish record, which
                    // dropped it (the last one: the block is free once unmarked).
                    m.ring().set_desc(0, 0);
                    m.pub_old(p).store(b as u64 + 1, Ordering::Release);
                    assert!(matches!(
                        m.pool().drop_ref(b, who).unwrap(),
                        Dropped::Done { freed: true }
                    ));
                }
            }
            crash::arm(Some(n));
            let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.reclaim(p)));
            crash::arm(None);
            assert!(
                killed.is_err(),
                "{case}, store {n}: the reclaimer was not killed"
            );
            let released = m.reclaim(p);
            let (want_count, want_released) = match case {
                // The take happened: the reclaim releases it, leaving the ring's reference.
                "take" => (1, 1),
                // The drop happened: nothing more to release.
                "drop" => (1, 0),
                _ => (0, 0),
            };
            assert_eq!(released, want_released, "{case}, killed after store {n}");
            assert_eq!(m.count(b), want_count, "{case}, killed after store {n}");
            assert_eq!(m.reclaim(p), 0, "{case}: a third reclaim changes nothing");
            assert_eq!(entry(h.load(Ordering::Relaxed)), Entry::Empty);
            assert_eq!(m.pub_old(p).load(Ordering::Relaxed), 0);
        }
    }
}

/// A dead participant's mark blocks a live taker until the reclaim clears it.
#[test]
fn a_dead_mark_is_waited_for_and_then_cleared() {
    let m = Mem::new(2, 1);
    let mut cursor = 0;
    m.publish(0, 5, &mut cursor).unwrap();
    let dead = Who {
        participant: 3,
        record: 0,
    };
    m.entry(3, 0).store(TAKING | 1, Ordering::Release);
    assert_eq!(m.pool().take(0, dead).unwrap(), Take::Taken);
    let live = Who {
        participant: 2,
        record: 0,
    };
    assert_eq!(m.pool().take(0, live).unwrap(), Take::Busy(dead));
    let m2 = Arc::clone(&m);
    let reader = std::thread::spawn(move || {
        let mut r = 0;
        loop {
            if let Some(v) = m2.read_seq(2, &mut r) {
                return v;
            }
            std::thread::yield_now();
        }
    });
    assert_eq!(m.reclaim(3), 1);
    assert_eq!(reader.join().unwrap(), 5);
    assert_eq!(m.count(0), 1);
    let _ = (HELD, yield_to);
}

/// A holdings entry is hostile input: every bit pattern decodes (a claimed entry naming no
/// block once underflowed to a panic), and a dead participant's forged entries are cleared
/// without touching any block.
#[test]
fn forged_holdings_entries_decode_and_are_cleared() {
    let forged = [
        1 << 25,
        DONE,
        DONE | (1 << 27),
        1 << 28,
        (1 << 25) | (1 << 26),
    ];
    for v in forged {
        assert_eq!(entry(v), Entry::Reserved, "{v:#x}");
    }
    for v in (0..=u32::MAX).step_by(65_521) {
        let _ = entry(v);
    }
    // A subscription record names its topic with or without the parked mark.
    assert_eq!(entry(SUB_TAG | 7), Entry::Sub(7));
    assert_eq!(entry(SUB_TAG | SUB_PARKED | 7), Entry::Sub(7));
    let m = Mem::new(2, 1);
    for (e, v) in forged.iter().take(super::mem::HELD).enumerate() {
        m.entry(3, e as u32).store(*v, Ordering::Release);
    }
    assert_eq!(m.reclaim(3), 0);
    for e in 0..forged.len().min(super::mem::HELD) {
        assert_eq!(
            entry(m.entry(3, e as u32).load(Ordering::Relaxed)),
            Entry::Empty
        );
    }
    assert_eq!(m.pool().free_estimate(), 2, "no block was touched");
}

/// A read finds nothing from its slot's stamp alone while the slot holds the previous lap
/// (or nothing yet): the tail, whose line every publish writes, is not loaded on an empty
/// poll. A tail already past the sequence (only a claim that landed after the stamp was
/// loaded, since a claim stamps its slot before it moves the tail) and a scribbled tail both
/// leave the answer at Empty; a stamp of any other lap goes the whole way, as before.
#[test]
fn an_empty_read_is_decided_by_the_slot_stamp_without_the_tail() {
    use super::super::ring::{Ring, Slot, committed};
    use crate::sync::AtomicU64;
    let tail = AtomicU64::new(0);
    let slots: Vec<Slot> = (0..4).map(|_| Slot::default()).collect();
    let ring = Ring::new(&tail, &slots);
    assert_eq!(ring.read(0).unwrap(), Read::Empty);
    tail.store(3, Ordering::Relaxed);
    assert_eq!(
        ring.read(0).unwrap(),
        Read::Empty,
        "first lap, tail moved on"
    );
    tail.store(u64::MAX, Ordering::Relaxed);
    assert_eq!(
        ring.read(1).unwrap(),
        Read::Empty,
        "a scribbled tail is not read"
    );
    // The second lap: slot 1 holds sequence 1; sequence 5 is not claimed yet.
    slots[1].stamp.store(committed(1), Ordering::Relaxed);
    assert_eq!(ring.read(5).unwrap(), Read::Empty);
    // A stamp of a later lap than the reader's sequence goes the whole way, tail included.
    slots[1].stamp.store(committed(9), Ordering::Relaxed);
    assert!(
        ring.read(5).is_err(),
        "the scribbled tail is found on the whole way"
    );
}
