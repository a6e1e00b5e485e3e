//! The pool and ring over heap memory, for miri (and a quick check in ordinary test runs):
//! publish, read, lag, reuse of blocks, and two publisher threads with a reader thread.

use super::super::pool::{BlockMeta, Pool};
use super::super::ring::{Claimed, Read, Ring, Slot, desc, undesc};
use crate::sync::AtomicU64;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

struct Mem {
    head: AtomicU64,
    meta: Vec<BlockMeta>,
    /// One atomic byte per block payload, so that racy reuse would show as a wrong value
    /// (and any plain race as a miri error in the ring or pool themselves).
    data: Vec<AtomicU8>,
    tail: AtomicU64,
    slots: Vec<Slot>,
}

impl Mem {
    fn new(blocks: usize, slots: usize) -> Mem {
        let m = Mem {
            head: AtomicU64::new(0),
            meta: (0..blocks).map(|_| BlockMeta::default()).collect(),
            data: (0..blocks).map(|_| AtomicU8::new(0)).collect(),
            tail: AtomicU64::new(0),
            slots: (0..slots).map(|_| Slot::default()).collect(),
        };
        m.pool().init();
        m
    }
    fn pool(&self) -> Pool<'_> {
        Pool::new(&self.head, &self.meta)
    }
    fn ring(&self) -> Ring<'_> {
        Ring::new(&self.tail, &self.slots)
    }
    fn publish(&self, holder: u32, v: u8) -> Option<u64> {
        let b = self.pool().pop().unwrap()?;
        self.data[b as usize].store(v, Ordering::Relaxed);
        let seq = loop {
            match self.ring().try_claim(holder, |_| {}).unwrap() {
                Claimed::Mine { seq } => break seq,
                Claimed::Busy { .. } => std::thread::yield_now(),
            }
        };
        let old = self.ring().held_desc(seq);
        self.ring().set_desc(seq, desc(b, 1));
        self.ring().commit(seq);
        if let Some((ob, _)) = undesc(old) {
            self.pool().release(ob).unwrap();
        }
        Some(seq)
    }
    /// Reads `r`: the value, or how far to jump.
    fn read(&self, r: &mut u64) -> Option<u8> {
        loop {
            match self.ring().read(*r).unwrap() {
                Read::Ready { desc } => {
                    let (b, _) = undesc(desc).unwrap();
                    if !self.pool().acquire_if_live(b).unwrap() {
                        continue;
                    }
                    if !self.ring().still(*r) {
                        self.pool().release(b).unwrap();
                        continue;
                    }
                    let v = self.data[b as usize].load(Ordering::Relaxed);
                    self.pool().release(b).unwrap();
                    *r += 1;
                    return Some(v);
                }
                Read::Lagged { next, .. } => *r = next,
                Read::Empty | Read::Pending { .. } => return None,
            }
        }
    }
}

#[test]
fn pool_hands_out_each_block_once_and_takes_it_back() {
    let m = Mem::new(4, 2);
    let got: Vec<u32> = (0..4).map(|_| m.pool().pop().unwrap().unwrap()).collect();
    assert_eq!(m.pool().pop().unwrap(), None);
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, [0, 1, 2, 3]);
    assert!(m.pool().acquire_if_live(got[0]).unwrap());
    assert!(!m.pool().release(got[0]).unwrap());
    for b in got {
        assert!(m.pool().release(b).unwrap());
    }
    assert!(
        m.pool().release(0).is_err(),
        "a release below zero is refused"
    );
    assert_eq!(m.pool().free_estimate(), 4);
}

#[test]
fn ring_delivers_in_order_and_reports_exact_lag() {
    let m = Mem::new(8, 4);
    let mut r = 0;
    assert_eq!(m.read(&mut r), None);
    for v in 0..3 {
        m.publish(0, v).unwrap();
    }
    assert_eq!(
        (m.read(&mut r), m.read(&mut r), m.read(&mut r)),
        (Some(0), Some(1), Some(2))
    );
    for v in 3..10 {
        m.publish(0, v).unwrap();
    }
    assert_eq!(
        m.ring().read(r).unwrap(),
        Read::Lagged {
            skipped: 3,
            next: 6
        }
    );
    // Only the ring's four slots hold blocks.
    assert_eq!(m.pool().free_estimate(), 4);
}

#[test]
fn two_publishers_and_a_reader_on_threads() {
    let n: u8 = if cfg!(miri) { 6 } else { 200 };
    let m = Arc::new(Mem::new(16, 8));
    let pubs: Vec<_> = (0..2u32)
        .map(|p| {
            let m = m.clone();
            std::thread::spawn(move || {
                for v in 0..n {
                    while m.publish(p, v).is_none() {
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
            let mut seen = 0;
            while r < 2 * n as u64 {
                if m.read(&mut r).is_some() {
                    seen += 1;
                }
                std::thread::yield_now();
            }
            seen
        })
    };
    for p in pubs {
        p.join().unwrap();
    }
    let seen = reader.join().unwrap();
    assert!(seen <= 2 * n as u64);
    assert_eq!(m.ring().tail().unwrap(), 2 * n as u64);
    assert_eq!(m.pool().free_estimate(), 16 - 8);
}
