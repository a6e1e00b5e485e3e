//! Loom models of inline topics on the real ring (`ring::raw`, capacity 2) and the real
//! publish/void code (`pubsub::inline`): a live claimant's sequence is never voided whatever
//! the interleaving, a void races the next lap's publisher and a second recoverer without
//! tearing anything, a parked subscriber is woken through the machine-wide handshake, a
//! claim racing the free of its unregistered topic never writes into a ring handed on, and a
//! latest-value reader gets whole values, each newer than the last.

use super::super::inline::{self, CLAIMING, IDLE, Record, Unstuck};
use crate::ring::raw::{FLAG_MPMC, RawRing, Read, Shape, done};
use crate::ring::shared::Shared;
use crate::ring::wake;
use crate::sync::AtomicU64;
use crate::sync::Ordering;
use loom::sync::Arc;
use loom::thread;

type Msg = [u64; 2];

fn ring() -> Arc<Shared> {
    Arc::new(Shared::heap(Shape {
        capacity: 2,
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
}

fn publish(raw: RawRing, rec: &Rec, v: Msg, mut on_wait: impl FnMut(u64)) -> u64 {
    let seq = inline::publish(
        &raw,
        rec.view(),
        1,
        || Ok(()),
        |r, s| r.write(s, &v),
        || {
            |prev| -> Result<(), ()> {
                on_wait(prev);
                thread::yield_now();
                Ok(())
            }
        },
        |_| (),
    )
    .unwrap();
    let s = raw.signal();
    wake::wake_machine(&s.waiters, &s.notify);
    seq
}

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

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// As [`loom_inline_a_live_claim_is_never_voided`], with the publisher's record left by an
/// earlier registration of the topic's entry: idle at 1000 on the same tag, while the new
/// registration's counter starts at 0. Its claim in flight must not tell the recoverer that
/// only sequences from 1000 on may be its own (`inline::claim_bound`).
#[test]
fn loom_inline_a_claim_after_a_new_registration_is_never_voided() {
    live_claim_never_voided(|rec| {
        rec.topic.store(1, Ordering::Relaxed);
        rec.seq.store(IDLE | 1000, Ordering::Relaxed);
    });
}

/// A recoverer runs while a live publisher claims and writes sequence 0: whatever it reads of
/// the counter, the record and the stamp, it never voids the live publisher's message.
#[test]
fn loom_inline_a_live_claim_is_never_voided() {
    live_claim_never_voided(|_| {});
}

/// The model of both tests above, the publisher's record first set up by `before`.
fn live_claim_never_voided(before: fn(&Rec)) {
    builder().check(move || {
        let shared = ring();
        let rec = Arc::new(Rec::new());
        before(&rec);
        let (s2, r2) = (shared.clone(), rec.clone());
        let p = thread::spawn(move || publish(s2.raw, &r2, [5, 15], |_| {}));
        let got = unstick(shared.raw, 0, &[&rec], |_| true);
        assert_ne!(
            got,
            Unstuck::Voided,
            "a live claimant's sequence was voided"
        );
        assert_eq!(p.join().unwrap(), 0);
        assert_eq!(shared.raw.read::<Msg>(0), Read::Value([5, 15]));
    });
}

/// A dead claimant holds sequence 0. A live publisher publishes 1 and then 2 (0's slot, so it
/// must unstick 0 first), while a reader reads 0, 1, 2 and, finding 0 stuck, races it to the
/// void. Nothing is torn, 0 is never delivered, 1 and 2 are.
#[test]
fn loom_inline_a_void_races_the_next_lap_and_a_second_recoverer() {
    builder().check(|| {
        let shared = ring();
        let dead = Arc::new(Rec::new());
        dead.topic.store(1, Ordering::Release);
        dead.seq.store(CLAIMING, Ordering::Release);
        let x = shared.raw.claim();
        dead.seq.store(x, Ordering::Release);
        let live = Arc::new(Rec::new());
        let (s2, d2, l2) = (shared.clone(), dead.clone(), live.clone());
        let p = thread::spawn(move || {
            let raw = s2.raw;
            publish(raw, &l2, [1, 3], |_| {});
            publish(raw, &l2, [2, 6], |prev| {
                unstick(raw, prev, &[&d2, &l2], |p| p == 1);
            })
        });
        let raw = shared.raw;
        let mut seq = 0;
        let mut got = Vec::new();
        for _ in 0..4 {
            match raw.read::<Msg>(seq) {
                Read::Value(v) => {
                    assert_eq!(v[1], v[0] * 3, "torn");
                    assert_ne!(seq, 0, "the dead claim was delivered");
                    got.push(v[0]);
                    seq += 1;
                }
                Read::Void => seq += 1,
                Read::NotYet => {
                    if seq == 0 {
                        unstick(raw, 0, &[&dead, &live], |p| p == 1);
                    }
                    thread::yield_now();
                }
                // Lapped: sequence 2 overwrote what we had not read.
                Read::Overrun => break,
            }
        }
        assert_eq!(p.join().unwrap(), 2);
        assert_eq!(raw.read::<Msg>(2), Read::Value([2, 6]));
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    });
}

/// A subscriber parks (machine-wide handshake) until sequence 0 is written by a publisher on
/// another thread; a lost wakeup would leave it asleep, which loom reports as a deadlock.
#[test]
fn loom_inline_a_parked_subscriber_is_woken() {
    builder().check(|| {
        let shared = ring();
        let s2 = shared.clone();
        let p = thread::spawn(move || {
            let rec = Rec::new();
            publish(s2.raw, &rec, [4, 12], |_| {});
        });
        let raw = shared.raw;
        loop {
            if let Read::Value(v) = raw.read::<Msg>(0) {
                assert_eq!(v, [4, 12]);
                break;
            }
            let s = raw.signal();
            wake::park_reach(wake::Reach::Machine, &s.waiters, &s.notify, None, || {
                raw.stamp_of(0) >= done(0)
            });
        }
        p.join().unwrap();
    });
}

/// A publisher passed its first check of an inline topic (still open) and claims, while
/// another participant unregisters the topic and frees it: closes it, runs the heavy half of
/// the barrier, and hands the ring on unless some record shows a claim in flight (as
/// `Region::writers` does). Handing the ring on is modelled as a plain write to the
/// payload the publisher writes too: loom reports a data race if the publisher's write can
/// run concurrently with it, that is, if the claim was missed and the publisher still saw
/// the topic open. A publish that completed before the close is ordered by its record.
#[test]
fn loom_inline_a_claim_racing_the_free_of_its_topic_never_writes_into_a_ring_handed_on() {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicBool;
    builder().check(|| {
        let shared = ring();
        let rec = Arc::new(Rec::new());
        let open = Arc::new(AtomicBool::new(true));
        let payload = Arc::new(UnsafeCell::new(0u64));
        let (s2, r2, o2, p2) = (shared.clone(), rec.clone(), open.clone(), payload.clone());
        let publisher = thread::spawn(move || {
            inline::publish(
                &s2.raw,
                r2.view(),
                1,
                || {
                    wake::light_machine();
                    // Relaxed: ordered by the barrier above (the handshake with the freer).
                    if o2.load(Ordering::Relaxed) {
                        Ok(())
                    } else {
                        Err(())
                    }
                },
                |r, s| {
                    // SAFETY: loom checks that no other access to the cell is concurrent.
                    p2.with_mut(|v| unsafe { *v = 7 });
                    r.write(s, &[7u64, 21]);
                },
                || |_| -> Result<(), ()> { Ok(()) },
                |_| (),
            )
            .is_ok()
        });
        // The unregister, then the free: the heavy half, then every record.
        open.store(false, Ordering::Relaxed);
        crate::sync::fence(Ordering::SeqCst);
        let (topic, seq) = rec.view().load();
        let claim_in_flight = topic == 1 && seq & IDLE == 0;
        if !claim_in_flight {
            // SAFETY: loom checks that no other access to the cell is concurrent.
            payload.with_mut(|v| unsafe { *v = 0 });
        }
        let _ = publisher.join().unwrap();
    });
}

/// A latest-value reader (`inline::read_latest`) reads while two publishers publish three
/// messages on the two-slot ring (one of them laps the ring): whatever it receives is whole,
/// newer than what it received before, and a publisher's messages come in its order; once both
/// publishers are done it receives the newest message, or has received it already.
#[test]
fn loom_inline_a_latest_reader_gets_whole_values_each_newer_than_the_last() {
    use super::super::inline::{Latest, read_latest};
    builder().check(|| {
        let shared = ring();
        let (s1, s2) = (shared.clone(), shared.clone());
        let a = thread::spawn(move || {
            let rec = Rec::new();
            publish(s1.raw, &rec, [1, 3], |_| {});
            publish(s1.raw, &rec, [2, 6], |_| {})
        });
        let b = thread::spawn(move || {
            let rec = Rec::new();
            publish(s2.raw, &rec, [10, 30], |_| {})
        });
        let raw = shared.raw;
        let mut pos = 0;
        let mut last_a = 0;
        let mut take = |pos: &mut u64| {
            let mut buf = [0u8; 16];
            match read_latest(&raw, *pos, &mut buf, 4) {
                Latest::Got(seq) => {
                    assert!(seq >= *pos, "went back from {pos} to {seq}");
                    let v: Msg = bytemuck::cast(buf);
                    assert_eq!(v[1], v[0] * 3, "torn");
                    if v[0] < 10 {
                        assert!(v[0] > last_a, "publisher a's messages out of order");
                        last_a = v[0];
                    }
                    *pos = seq + 1;
                    Some(seq)
                }
                Latest::Pending(seq) | Latest::Nothing(seq) => {
                    assert!(seq >= *pos);
                    *pos = seq;
                    None
                }
                Latest::Busy => None,
                Latest::Corrupt(c) => panic!("counter {c}"),
            }
        };
        take(&mut pos);
        take(&mut pos);
        let last = a.join().unwrap().max(b.join().unwrap());
        assert_eq!(last, 2);
        if pos <= last {
            assert_eq!(take(&mut pos), Some(last), "the newest after both finished");
        }
        assert_eq!(take(&mut pos), None);
    });
}
