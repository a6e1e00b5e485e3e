//! Loom models of the real block pool and descriptor ring: allocation never hands one block to
//! two owners, a reference taken while the slot is overwritten and the block recycled, two
//! publishers racing for slots, a latest-value reader against the writer, a participant
//! killed in the middle of a take whose mark others wait on until a survivor settles it, and a
//! publish racing the free of its topic.

use super::super::pool::{Entry, TAKING, Take, Who, entry};
use super::super::ring::Read;
use super::mem::{Mem, yield_to};
use crate::sync::Ordering;
use loom::thread;

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// Two participants allocate, write and free blocks of a two-block pool at once: a block is
/// never handed to two owners (loom reports the conflicting writes to its cell), and both are
/// free at the end.
#[test]
fn loom_allocation_hands_out_each_block_once() {
    builder().check(|| {
        let m = Mem::new(2, 1);
        let m2 = m.clone();
        let cycle = |m: &Mem, p: u32, v: u64| {
            let pool = m.pool();
            let mut cursor = 0;
            for round in 0..2 {
                let e = m.claim(p);
                let h = m.entry(p, e);
                let Some(b) = super::super::pool::alloc_entry(&pool, h, p, e, &mut cursor) else {
                    h.store(0, Ordering::Release);
                    continue;
                };
                m.write(b, v + round);
                super::super::pool::release_entry(&pool, h, p, e, b, yield_to, |c| c).unwrap();
            }
        };
        let t = thread::spawn(move || cycle(&m2, 1, 10));
        cycle(&m, 0, 20);
        t.join().unwrap();
        assert_eq!(m.pool().free_estimate(), 2);
    });
}

/// A subscriber takes a reference on sequence 0 of a one-slot ring while a publisher
/// overwrites it twice, recycling the first block. Whatever it gets is the value of the
/// sequence it asked for, and nothing writes a block it holds (loom checks the cells).
#[test]
fn loom_refcount_take_vs_overwrite() {
    builder().check(|| {
        let m = Mem::new(3, 1);
        let mut cursor = 0;
        m.publish(0, 100, &mut cursor);
        let m2 = m.clone();
        let publisher = thread::spawn(move || {
            let mut cursor = 1;
            m2.publish(0, 101, &mut cursor);
            m2.publish(0, 102, &mut cursor);
        });
        let mut r = 0u64;
        let got = m.read_seq(1, &mut r).map(|v| (r - 1, v));
        if let Some((seq, v)) = got {
            assert_eq!(
                v,
                100 + seq,
                "sequence {seq} delivered another sequence's block"
            );
        }
        publisher.join().unwrap();
        // Everything but the block the ring holds is free again.
        assert_eq!(m.pool().free_estimate(), 2);
    });
}

/// As `loom_refcount_take_vs_overwrite`, with the publisher recycling: the block it displaces
/// while holding the only reference is kept and refilled by its next loan, without a drop or
/// an allocation. A subscriber that read the old descriptor and takes the block after the
/// publisher kept it must see the new claim in its re-check and give the block back: it never
/// reads a block being refilled (loom checks the cells), and gets only the value of the
/// sequence it asked for. Goes red if `keep_sole` only loads the count.
#[test]
fn loom_recycled_block_is_never_read_while_refilled() {
    builder().check(|| recycled_block_model(Mem::new(3, 1)));
}

/// As `loom_recycled_block_is_never_read_while_refilled`, for the one publisher of a
/// single-publisher topic, whose claim and tail advance are plain stores: the keep CAS still
/// carries its claim to a subscriber that takes the block after it.
#[test]
fn loom_single_publisher_recycled_block_is_never_read_while_refilled() {
    builder().check(|| recycled_block_model(Mem::new_single(3, 1)));
}

fn recycled_block_model(m: crate::sync::Arc<Mem>) {
    let mut cursor = 0;
    let mut kept = None;
    m.publish_recycling(0, 100, &mut cursor, &mut kept);
    let m2 = m.clone();
    let publisher = thread::spawn(move || {
        m2.publish_recycling(0, 101, &mut cursor, &mut kept);
        m2.publish_recycling(0, 102, &mut cursor, &mut kept);
        kept
    });
    let mut r = 0u64;
    if let Some(v) = m.read_seq(1, &mut r) {
        let seq = r - 1;
        assert_eq!(
            v,
            100 + seq,
            "sequence {seq} delivered another sequence's block"
        );
    }
    let kept = publisher.join().unwrap();
    // The ring's slot holds one block and the publish record at most one (kept); the
    // rest are free: nothing leaked, nothing released twice.
    let held_by_record = usize::from(kept.is_some());
    assert_eq!(m.pool().free_estimate(), 3 - 1 - held_by_record);
    if let Some(b) = kept {
        assert_eq!(
            m.count(b),
            1,
            "the kept block's only reference is the record's"
        );
        assert_eq!(
            m.pub_old(0).load(Ordering::Relaxed),
            super::super::pool::KEPT_OLD | (b as u64 + 1)
        );
    }
}

/// Two publishers race for the same slots: both sequences are committed exactly once, in
/// distinct slots, and the tail ends at 2.
#[test]
fn loom_two_publishers_claim_distinct_sequences() {
    builder().check(|| {
        let m = Mem::new(4, 2);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let mut cursor = 2;
            m2.publish(1, 7, &mut cursor);
        });
        let mut cursor = 0;
        m.publish(0, 7, &mut cursor);
        t.join().unwrap();
        assert_eq!(m.ring().tail().unwrap(), 2);
        for seq in 0..2 {
            assert!(matches!(m.ring().read(seq).unwrap(), Read::Ready { .. }));
        }
    });
}

/// A latest-value reader (skip to the newest claimed sequence, as `Latest` topics do) while
/// the writer overwrites a two-slot ring: whatever it gets is the whole value of the sequence
/// it names, never one being written (loom checks the cells), and it never waits on the
/// writer.
#[test]
fn loom_latest_reader_vs_writer() {
    builder().check(|| {
        let m = Mem::new(4, 2);
        let mut cursor = 0;
        m.publish(0, 100, &mut cursor);
        let m2 = m.clone();
        let writer = thread::spawn(move || {
            let mut cursor = 1;
            m2.publish(0, 101, &mut cursor);
            m2.publish(0, 102, &mut cursor);
        });
        let mut got = None;
        for _ in 0..3 {
            let t = m.ring().tail().unwrap();
            let mut r = t - 1;
            if let Some(v) = m.read_seq(1, &mut r) {
                got = Some((r - 1, v));
                break;
            }
            thread::yield_now();
        }
        if let Some((seq, v)) = got {
            assert!(
                v == 100 + seq,
                "sequence {seq} delivered another sequence's value"
            );
        }
        writer.join().unwrap();
    });
}

/// Participant 1 takes a reference on the ring's block and is killed between its take and its
/// record (the window that leaked a reference before marks). Participant 2 meanwhile reads the
/// same block: it waits on the dead mark, which the survivor (this thread) settles. At the
/// end exactly the ring's reference is left.
#[test]
fn loom_a_take_killed_before_its_record_is_settled_while_another_reads() {
    builder().check(|| {
        let m = Mem::new(2, 1);
        let mut cursor = 0;
        m.publish(0, 100, &mut cursor);
        let dead = Who {
            participant: 1,
            record: 0,
        };
        let m1 = m.clone();
        let killed = thread::spawn(move || {
            m1.entry(1, 0).store(TAKING | 1, Ordering::Release);
            // The reader may be mid-take: wait for its mark to go, as the real code does.
            while m1.pool().take(0, dead).unwrap() != Take::Taken {
                thread::yield_now();
            }
            // Killed here: no record, no unmark.
        });
        let m2 = m.clone();
        let reader = thread::spawn(move || {
            let mut r = 0;
            m2.read_seq(2, &mut r)
        });
        killed.join().unwrap();
        assert_eq!(m.reclaim(1), 1);
        assert_eq!(entry(m.entry(1, 0).load(Ordering::Relaxed)), Entry::Empty);
        assert_eq!(reader.join().unwrap(), Some(100));
        assert_eq!(m.count(0), 1);
    });
}

/// A blocks publish racing the unregister and free of its topic (`Publisher::publish_block`
/// against `Region::free_topic`). The publisher writes its publish record (`pub_topic`), runs
/// the light half of the machine-wide barrier and checks that the topic is still open before
/// it claims a slot; the freer closes the topic, runs the heavy half and frees the entry only
/// if no record names it. A free hands the ring to the entry's next registration (its
/// re-stamp), modelled by a cell that both a claim and the free write: loom reports the two
/// writes unordered if a claim can land after the free. The publisher clears its record
/// (Release) when its publish is over, which orders a whole publish before a free that sees
/// the record clear.
#[test]
fn loom_a_blocks_publish_racing_the_free_of_its_topic_never_claims_in_a_ring_handed_on() {
    use super::super::ring::Claimed;
    use crate::ring::wake;
    use crate::sync::{AtomicBool, AtomicU64, fence};
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    builder().check(|| {
        let m = Mem::new(2, 2);
        let record = Arc::new(AtomicU64::new(0));
        let open = Arc::new(AtomicBool::new(true));
        let ring_owner = Arc::new(UnsafeCell::new(0u64));
        let (m2, r2, o2, c2) = (m.clone(), record.clone(), open.clone(), ring_owner.clone());
        let publisher = thread::spawn(move || {
            r2.store(1, Ordering::Release);
            wake::light_machine();
            // Relaxed: ordered by the barrier above (the handshake with the freer).
            let claimed = o2.load(Ordering::Relaxed)
                && matches!(m2.ring().try_claim(0, |_| {}), Ok(Claimed::Mine { .. }));
            if claimed {
                // SAFETY: loom checks that no other access to the cell is concurrent.
                c2.with_mut(|v| unsafe { *v = 1 });
                m2.ring().commit(0);
            }
            r2.store(0, Ordering::Release);
            claimed
        });
        // The unregister, then the free: the heavy half, then every record.
        open.store(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if record.load(Ordering::Acquire) == 0 {
            // SAFETY: loom checks that no other access to the cell is concurrent.
            ring_owner.with_mut(|v| unsafe { *v = 2 });
        }
        let _ = publisher.join().unwrap();
    });
}
