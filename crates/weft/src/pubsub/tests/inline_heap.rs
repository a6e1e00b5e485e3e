//! The inline-topic core over heap memory (also run under miri): several publishers on the
//! MPMC ring, a dead claimant's sequence voided and skipped, a live claimant's never, a void
//! never undoing a write, and a claim abandoned by its publisher.

use super::super::inline::{self, CLAIMING, IDLE, Record, Unstuck};
use crate::ring::raw::{FLAG_MPMC, RawRing, Read, Shape};
use crate::ring::shared::Shared;
use crate::sync::AtomicU64;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A two-word message: a torn copy would mix the words of two messages.
type Msg = [u64; 2];

fn ring(capacity: u64) -> Arc<Shared> {
    Arc::new(Shared::heap(Shape {
        capacity,
        value_size: 16,
        gates: 0,
        flags: FLAG_MPMC,
        watermark: 0,
    }))
}

struct Rec {
    topic: AtomicU64,
    seq: AtomicU64,
}

impl Rec {
    fn new() -> Rec {
        Rec {
            topic: AtomicU64::new(0),
            seq: AtomicU64::new(IDLE),
        }
    }
    fn view(&self) -> Record<'_> {
        Record {
            topic: &self.topic,
            seq: &self.seq,
        }
    }
    /// What a publisher that dies right after its claim leaves.
    fn claim_and_die(&self, raw: RawRing) -> u64 {
        self.topic.store(1, Ordering::Release);
        self.seq.store(CLAIMING, Ordering::Release);
        let x = raw.claim();
        self.seq.store(x, Ordering::Release);
        x
    }
}

fn publish(raw: RawRing, rec: &Rec, v: Msg) -> u64 {
    inline::publish(
        &raw,
        rec.view(),
        1,
        || Ok(()),
        |r, s| r.write(s, &v),
        || {
            |_| -> Result<(), ()> {
                std::thread::yield_now();
                Ok(())
            }
        },
        |_| (),
    )
    .unwrap()
}

/// `unstick` with the records of `recs` (participant = index) and `alive(participant)`.
fn unstick(raw: RawRing, x: u64, recs: &[&Rec], alive: impl Fn(u32) -> bool) -> Unstuck {
    inline::unstick(
        raw,
        1,
        x,
        |f| {
            for (p, r) in recs.iter().enumerate() {
                let (t, s) = r.view().load();
                if !f(p as u32, t, s) {
                    return;
                }
            }
        },
        alive,
    )
}

#[test]
fn inline_two_publisher_threads_and_a_reader_see_every_message_whole() {
    let n: u64 = if cfg!(miri) { 20 } else { 2000 };
    let shared = ring(4096);
    let raw = shared.raw;
    let pubs: Vec<_> = (0..2u64)
        .map(|id| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let rec = Rec::new();
                for i in 0..n {
                    publish(shared.raw, &rec, [id << 32 | i, (id << 32 | i) * 3]);
                }
            })
        })
        .collect();
    let mut next = [0u64; 2];
    let mut seq = 0;
    while seq < 2 * n {
        match raw.read::<Msg>(seq) {
            Read::Value(v) => {
                assert_eq!(v[1], v[0] * 3, "torn");
                let id = (v[0] >> 32) as usize;
                assert_eq!(v[0] & 0xffff_ffff, next[id], "out of order");
                next[id] += 1;
                seq += 1;
            }
            Read::NotYet => std::thread::yield_now(),
            other => panic!("{other:?} at {seq}"),
        }
    }
    for p in pubs {
        p.join().unwrap();
    }
    assert_eq!(next, [n, n]);
}

#[test]
fn inline_a_dead_claim_is_voided_and_readers_skip_it() {
    let shared = ring(4);
    let raw = shared.raw;
    let (dead, live) = (Rec::new(), Rec::new());
    let x = dead.claim_and_die(raw);
    assert_eq!(publish(raw, &live, [1, 3]), 1);
    assert_eq!(raw.read::<Msg>(0), Read::NotYet);
    assert_eq!(
        unstick(raw, x, &[&dead, &live], |p| p == 1),
        Unstuck::Voided
    );
    assert_eq!(raw.read::<Msg>(0), Read::Void);
    assert_eq!(raw.read::<Msg>(1), Read::Value([1, 3]));
    // Done already: a second recoverer changes nothing.
    assert_eq!(unstick(raw, x, &[&dead, &live], |p| p == 1), Unstuck::Done);
    // The next lap writes the voided slot as usual.
    for i in 2..=4 {
        assert_eq!(publish(raw, &live, [i, 3 * i]), i);
    }
    assert_eq!(raw.read::<Msg>(4), Read::Value([4, 12]));
    assert_eq!(raw.read::<Msg>(0), Read::Overrun);
}

#[test]
fn inline_a_live_claim_is_never_voided() {
    let shared = ring(4);
    let raw = shared.raw;
    let holder = Rec::new();
    let x = holder.claim_and_die(raw);
    assert_eq!(unstick(raw, x, &[&holder], |_| true), Unstuck::Stuck);
    // Claiming, with a bound at or below `x`: it may hold `x`.
    holder.seq.store(CLAIMING | x, Ordering::Release);
    assert_eq!(unstick(raw, x, &[&holder], |_| true), Unstuck::Stuck);
    // Idle, or claiming above `x`: it cannot hold `x`.
    holder.seq.store(CLAIMING | (x + 1), Ordering::Release);
    assert_eq!(unstick(raw, x, &[&holder], |_| true), Unstuck::Voided);
}

#[test]
fn inline_a_void_never_undoes_a_write() {
    let shared = ring(4);
    let raw = shared.raw;
    let rec = Rec::new();
    let seen = raw.stamp_of(0);
    publish(raw, &rec, [7, 21]);
    // A recoverer that read the stamp before the write loses its CAS.
    assert!(!raw.try_void(0, seen));
    assert_eq!(raw.read::<Msg>(0), Read::Value([7, 21]));
    // Not claimed yet: nothing to void.
    assert_eq!(unstick(raw, 1, &[&rec], |_| false), Unstuck::Stuck);
}

#[test]
fn inline_an_incomplete_previous_lap_is_never_voided_over() {
    let shared = ring(2);
    let raw = shared.raw;
    let (a, b) = (Rec::new(), Rec::new());
    // `a` (live) holds 0; `b` claims 1 and 2 (2 is 0's slot, a lap later) and dies.
    let x0 = a.claim_and_die(raw);
    publish(raw, &b, [1, 3]);
    let x2 = b.claim_and_die(raw);
    assert_eq!((x0, x2), (0, 2));
    // 2's previous lap (0) is still held by a live writer: voiding 2 could let the writer of
    // 0 store its even stamp over the void after the writer of 4 started.
    assert_eq!(unstick(raw, x2, &[&a, &b], |p| p == 0), Unstuck::Stuck);
    raw.write(0, &[0u64, 0]);
    a.seq.store(IDLE | 1, Ordering::Release);
    assert_eq!(unstick(raw, x2, &[&a, &b], |p| p == 0), Unstuck::Voided);
}

#[test]
fn inline_a_claim_given_up_is_voided_by_the_next_one_who_needs_it() {
    let shared = ring(2);
    let raw = shared.raw;
    let (stalled, giver) = (Rec::new(), Rec::new());
    let x0 = stalled.claim_and_die(raw);
    publish(raw, &giver, [1, 3]);
    // Sequence 2 waits for 0 (held by a live, stalled publisher) and gives up.
    let r = inline::publish(
        &raw,
        giver.view(),
        1,
        || Ok(()),
        |r, s| r.write(s, &[9u64, 27]),
        || {
            |prev| {
                assert_eq!(prev, x0);
                Err("timeout")
            }
        },
        |_| "corrupt",
    );
    assert_eq!(r, Err("timeout"));
    // The giver holds nothing now; once 0 is written, 2 is found stuck and voided.
    raw.write(0, &[0u64, 0]);
    stalled.seq.store(IDLE | 1, Ordering::Release);
    assert_eq!(
        unstick(raw, 2, &[&stalled, &giver], |_| true),
        Unstuck::Voided
    );
    assert_eq!(raw.read::<Msg>(2), Read::Void);
}

/// A publisher's record outlives a registration of its topic's entry: idle at `1000` (one
/// past its last claim on the old registration), while the new registration's counter starts
/// again at 0. The claim in flight then records a bound no higher than the counter, so a
/// recoverer takes the sequence it gets as possibly held (`may_hold`) and never voids it.
/// With the record's own bound, sequence 0 was fair game for a void while it was written.
#[test]
fn a_claim_after_a_new_registration_records_a_bound_a_recoverer_respects() {
    let shared = ring(4);
    let raw = shared.raw;
    let rec = Rec::new();
    rec.topic.store(1, Ordering::Relaxed);
    rec.seq.store(IDLE | 1000, Ordering::Relaxed);
    let bound = inline::claim_bound(&raw, 1000);
    assert_eq!(bound, 0);
    // What a recoverer reads while the claim of 0 is in flight.
    assert!(inline::may_hold(1, CLAIMING | bound, 1, 0));
    // And a claim of the next sequence on an unchanged registration keeps its own bound.
    raw.claim();
    raw.claim();
    assert_eq!(inline::claim_bound(&raw, 2), 2);
}

/// Two consecutive laps of one slot claimed and never written: sequence 0 by a claimant that
/// died, 2 (capacity 2) by another that died too before it voided 0. A publisher of 4 needs
/// the slot: unsticking 2 used to require 0 complete, so nothing could ever void either, and
/// every later lap of the slot stayed stuck (a reader past them waited for ever). Now 2 is
/// voided straight over the unwritten 0 while no live record may hold 0 or 2, and never while
/// one may (a live claimant of the earlier lap, or a claim in flight below them).
#[test]
fn two_unwritten_laps_of_a_slot_are_voided_once_no_live_record_holds_either() {
    let shared = ring(2);
    let raw = shared.raw;
    let first = Rec::new();
    let second = Rec::new();
    let live = Rec::new();
    assert_eq!(first.claim_and_die(raw), 0);
    assert_eq!(publish(raw, &live, [1, 3]), 1);
    assert_eq!(second.claim_and_die(raw), 2);
    assert_eq!(publish(raw, &live, [3, 9]), 3);
    // 4's claimant, waiting for its slot.
    assert_eq!(raw.claim(), 4);
    // While the claimant of 0 lives, neither 0 nor 2 is voided.
    let recs = [&first, &second, &live];
    assert_eq!(unstick(raw, 2, &recs, |p| p == 0), Unstuck::Stuck);
    // A claim in flight with a bound at or below 2 may hold either.
    live.seq.store(CLAIMING | 2, Ordering::Release);
    assert_eq!(unstick(raw, 2, &recs, |p| p == 2), Unstuck::Stuck);
    live.seq.store(IDLE | 4, Ordering::Release);
    // Both dead: 2 is voided, and 4's slot is free.
    assert_eq!(unstick(raw, 2, &recs, |p| p == 2), Unstuck::Voided);
    assert!(raw.slot_free(4));
    raw.write(4, &[4u64, 12]);
    // A reader at 0 is overrun, not stuck: the slot moved on past 0 and 2.
    assert_eq!(raw.read::<Msg>(0), Read::Overrun);
    assert_eq!(raw.read::<Msg>(2), Read::Overrun);
    assert_eq!(raw.read::<Msg>(4), Read::Value([4, 12]));
}
