//! Loom models of the real block pool and descriptor ring: the free list under the ABA
//! interleaving, and a subscriber taking a reference while publishers overwrite the slot and
//! recycle the block.

use super::super::pool::{BlockMeta, Pool};
use super::super::ring::{Claimed, Read, Ring, Slot, desc, undesc};
use crate::sync::{AtomicU64, UnsafeCell};
use loom::sync::Arc;
use loom::thread;

struct Mem {
    head: AtomicU64,
    meta: Vec<BlockMeta>,
    data: Vec<UnsafeCell<u64>>,
    tail: AtomicU64,
    slots: Vec<Slot>,
}

// SAFETY: `data` cells are only touched by the holder of a reference on the block, which the
// pool and ring hand out exclusively for writing (count 1, unpublished) or shared for reading;
// loom checks exactly that.
unsafe impl Sync for Mem {}

impl Mem {
    fn new(blocks: usize, slots: usize) -> Arc<Mem> {
        let m = Mem {
            head: AtomicU64::new(0),
            meta: (0..blocks).map(|_| BlockMeta::default()).collect(),
            data: (0..blocks).map(|_| UnsafeCell::new(0)).collect(),
            tail: AtomicU64::new(0),
            slots: (0..slots).map(|_| Slot::default()).collect(),
        };
        m.pool().init();
        Arc::new(m)
    }
    fn pool(&self) -> Pool<'_> {
        Pool::new(&self.head, &self.meta)
    }
    fn ring(&self) -> Ring<'_> {
        Ring::new(&self.tail, &self.slots)
    }
    fn write(&self, b: u32, v: u64) {
        // SAFETY: the caller holds the only reference (fresh from `pop`).
        self.data[b as usize].with_mut(|p| unsafe { *p = v });
    }
    fn read(&self, b: u32) -> u64 {
        // SAFETY: the caller holds a reference on a published block: nobody writes it.
        self.data[b as usize].with(|p| unsafe { *p })
    }

    /// Loan, write `v`, publish.
    fn publish(&self, holder: u32, v: u64) {
        let b = self.pool().pop().unwrap().expect("a free block");
        self.write(b, v);
        let seq = loop {
            match self.ring().try_claim(holder, |_| {}).unwrap() {
                Claimed::Mine { seq } => break seq,
                Claimed::Busy { .. } => thread::yield_now(),
            }
        };
        let old = self.ring().held_desc(seq);
        self.ring().set_desc(seq, desc(b, 8));
        self.ring().commit(seq);
        if let Some((ob, _)) = undesc(old) {
            self.pool().release(ob).unwrap();
        }
    }
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// The ABA case: one thread pops while another pops two blocks and pushes the first back. A
/// block is never handed to two owners (loom reports the conflicting writes to `data`), and
/// every block is back in the list at the end.
#[test]
fn loom_free_list_survives_aba() {
    builder().check(|| {
        let m = Mem::new(3, 1);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let a = m2.pool().pop().unwrap().unwrap();
            let b = m2.pool().pop().unwrap().unwrap();
            m2.write(a, 1);
            m2.write(b, 2);
            assert!(m2.pool().release(a).unwrap());
            let c = m2.pool().pop().unwrap().unwrap();
            m2.write(c, 3);
            assert!(m2.pool().release(b).unwrap());
            assert!(m2.pool().release(c).unwrap());
        });
        let x = m.pool().pop().unwrap().unwrap();
        m.write(x, 9);
        assert!(m.pool().release(x).unwrap());
        t.join().unwrap();
        let mut seen = Vec::new();
        while let Some(b) = m.pool().pop().unwrap() {
            assert!(!seen.contains(&b), "block {b} in the list twice");
            seen.push(b);
        }
        assert_eq!(seen.len(), 3);
    });
}

/// A subscriber takes a reference on sequence 0 of a one-slot ring while a publisher
/// overwrites it twice, recycling the first block. Whatever it gets is the value of the
/// sequence it asked for, and nothing writes a block it holds (loom checks the cells).
#[test]
fn loom_refcount_take_vs_overwrite() {
    builder().check(|| {
        let m = Mem::new(3, 1);
        m.publish(0, 100);
        let m2 = m.clone();
        let publisher = thread::spawn(move || {
            m2.publish(0, 101);
            m2.publish(0, 102);
        });
        let mut r = 0u64;
        let got = loop {
            match m.ring().read(r).unwrap() {
                Read::Ready { desc } => {
                    let (b, _) = undesc(desc).unwrap();
                    if !m.pool().acquire_if_live(b).unwrap() {
                        // Raced with the overwrite: the publisher makes progress first.
                        thread::yield_now();
                        continue;
                    }
                    if !m.ring().still(r) {
                        m.pool().release(b).unwrap();
                        thread::yield_now();
                        continue;
                    }
                    let v = m.read(b);
                    m.pool().release(b).unwrap();
                    break Some((r, v));
                }
                Read::Lagged { next, .. } => r = next,
                Read::Empty | Read::Pending { .. } => break None,
            }
        };
        if let Some((seq, v)) = got {
            assert_eq!(
                v,
                100 + seq,
                "sequence {seq} delivered another sequence's block"
            );
        }
        publisher.join().unwrap();
        // Everything but the block the ring holds is free again.
        let mut free = 0;
        while m.pool().pop().unwrap().is_some() {
            free += 1;
        }
        assert_eq!(free, 2);
    });
}

/// Two publishers race for the same slots: both sequences are committed exactly once, in
/// distinct slots, and the tail ends at 2.
#[test]
fn loom_two_publishers_claim_distinct_sequences() {
    builder().check(|| {
        let m = Mem::new(4, 2);
        let m2 = m.clone();
        let t = thread::spawn(move || m2.publish(1, 7));
        m.publish(0, 7);
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
        m.publish(0, 100);
        let m2 = m.clone();
        let writer = thread::spawn(move || {
            m2.publish(0, 101);
            m2.publish(0, 102);
        });
        let mut got = None;
        for _ in 0..3 {
            let t = m.ring().tail().unwrap();
            let r = t - 1;
            match m.ring().read(r).unwrap() {
                Read::Ready { desc } => {
                    let (b, _) = undesc(desc).unwrap();
                    if m.pool().acquire_if_live(b).unwrap() {
                        if m.ring().still(r) {
                            got = Some((r, m.read(b)));
                            m.pool().release(b).unwrap();
                            break;
                        }
                        m.pool().release(b).unwrap();
                    }
                }
                // Not committed yet, or already lapped: look again (bounded: never stuck).
                Read::Pending { .. } | Read::Lagged { .. } | Read::Empty => {}
            }
            thread::yield_now();
        }
        if let Some((seq, v)) = got {
            assert_eq!(
                v,
                100 + seq,
                "sequence {seq} delivered another sequence's value"
            );
        }
        writer.join().unwrap();
    });
}
