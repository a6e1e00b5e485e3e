//! A region in miniature over heap memory, for the plain tests (and miri) and the loom models:
//! block words, payload cells, one descriptor ring, and per participant a few holdings entries
//! and a publish record, driven through the real pool and ring code.

use super::super::pool::{
    self, BlockMeta, Corrupt, Entry, Pool, TAKING, Who, alloc_entry, release_entry, release_old,
    settle_entry, settle_old, take_entry_to,
};
use super::super::ring::{Claimed, Read, Ring, Slot, desc, undesc};
use crate::sync::{Arc, AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// Holdings entries per participant.
pub(super) const HELD: usize = 4;
/// Participants.
pub(super) const PARTS: usize = 4;

pub(super) struct Mem {
    meta: Vec<BlockMeta>,
    /// One payload cell per block: a block written while someone else holds it is a data race
    /// that loom and miri report.
    data: Vec<UnsafeCell<u64>>,
    tail: AtomicU64,
    slots: Vec<Slot>,
    entries: Vec<AtomicU32>,
    pub_old: Vec<AtomicU64>,
    /// One publisher, claiming as a single-publisher topic's lease holder does
    /// (`Ring::try_claim_single`).
    single: bool,
}

// SAFETY: `data` cells are only touched by the holder of a reference on the block, which the
// pool and ring hand out exclusively for writing (count 1, unpublished) or shared for reading;
// loom and miri check exactly that.
unsafe impl Sync for Mem {}
// SAFETY: as above.
unsafe impl Send for Mem {}

fn never(c: Corrupt) -> Corrupt {
    c
}

/// While another participant's operation on a block is in flight: let it run.
pub(super) fn yield_to(_: Who) -> Result<(), Corrupt> {
    crate::sync::yield_now();
    Ok(())
}

impl Mem {
    pub(super) fn new(blocks: usize, slots: usize) -> Arc<Mem> {
        Mem::build(blocks, slots, false)
    }
    /// As [`Mem::new`], for one publisher that claims with `Ring::try_claim_single`.
    pub(super) fn new_single(blocks: usize, slots: usize) -> Arc<Mem> {
        Mem::build(blocks, slots, true)
    }
    fn build(blocks: usize, slots: usize, single: bool) -> Arc<Mem> {
        let m = Mem {
            meta: (0..blocks).map(|_| BlockMeta::default()).collect(),
            data: (0..blocks).map(|_| UnsafeCell::new(0)).collect(),
            tail: AtomicU64::new(0),
            slots: (0..slots).map(|_| Slot::default()).collect(),
            entries: (0..HELD * PARTS).map(|_| AtomicU32::new(0)).collect(),
            pub_old: (0..PARTS).map(|_| AtomicU64::new(0)).collect(),
            single,
        };
        m.pool().init();
        Arc::new(m)
    }
    /// Claims the next sequence for publisher `p` (waiting out a busy slot).
    fn claim_seq(&self, p: u32) -> u64 {
        loop {
            let claimed = if self.single {
                self.ring().try_claim_single(p, |_| {})
            } else {
                self.ring().try_claim(p, |_| {})
            };
            match claimed.unwrap() {
                Claimed::Mine { seq } => return seq,
                Claimed::Busy { .. } => crate::sync::yield_now(),
            }
        }
    }
    pub(super) fn pool(&self) -> Pool<'_> {
        Pool::new(&self.meta)
    }
    pub(super) fn ring(&self) -> Ring<'_> {
        Ring::new(&self.tail, &self.slots)
    }
    pub(super) fn entry(&self, p: u32, e: u32) -> &AtomicU32 {
        &self.entries[p as usize * HELD + e as usize]
    }
    pub(super) fn pub_old(&self, p: u32) -> &AtomicU64 {
        &self.pub_old[p as usize]
    }
    /// A free holdings entry of `p`, reserved.
    pub(super) fn claim(&self, p: u32) -> u32 {
        (0..HELD as u32)
            .find(|&e| {
                self.entry(p, e)
                    .compare_exchange(0, TAKING, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })
            .expect("a free holdings entry")
    }
    pub(super) fn write(&self, b: u32, v: u64) {
        // SAFETY: the caller holds the only reference (fresh from `alloc`).
        self.data[b as usize].with_mut(|p| unsafe { *p = v });
    }
    pub(super) fn read(&self, b: u32) -> u64 {
        // SAFETY: the caller holds a reference on a published block: nobody writes it.
        self.data[b as usize].with(|p| unsafe { *p })
    }
    /// The count of block `b`.
    pub(super) fn count(&self, b: u32) -> u64 {
        self.pool().state(b).unwrap().0
    }

    /// Loan (allocate into an entry of `p`), write `v`, publish. `None`: no free block.
    pub(super) fn publish(&self, p: u32, v: u64, cursor: &mut u32) -> Option<u64> {
        let e = self.claim(p);
        let Some(b) = alloc_entry(&self.pool(), self.entry(p, e), p, e, cursor) else {
            self.entry(p, e).store(0, Ordering::Release);
            return None;
        };
        self.write(b, v);
        let seq = self.claim_seq(p);
        let old = self.ring().held_desc(seq);
        self.pub_old(p).store(old & 0xffff_ffff, Ordering::Release);
        self.ring().set_desc(seq, desc(b, 8));
        self.entry(p, e).store(0, Ordering::Release);
        self.ring().commit(seq);
        if let Some((ob, _)) = undesc(old) {
            release_old(&self.pool(), self.pub_old(p), p, ob, yield_to, never).unwrap();
        }
        Some(seq)
    }

    /// [`Mem::publish`] the way a `Publisher` does it: the loan adopts the block `*kept` that
    /// the previous publish displaced and kept in `pub_old` (it had the only reference), and
    /// this publish keeps the block it displaces when its reference is the only one.
    pub(super) fn publish_recycling(
        &self,
        p: u32,
        v: u64,
        cursor: &mut u32,
        kept: &mut Option<u32>,
    ) -> Option<u64> {
        let e = self.claim(p);
        let rec = self.pub_old(p);
        let b = match kept.take() {
            Some(b) if rec.load(Ordering::Relaxed) == pool::KEPT_OLD | (b as u64 + 1) => {
                self.entry(p, e).store(b + 1, Ordering::Release);
                rec.store(0, Ordering::Release);
                b
            }
            _ => match alloc_entry(&self.pool(), self.entry(p, e), p, e, cursor) {
                Some(b) => b,
                None => {
                    self.entry(p, e).store(0, Ordering::Release);
                    return None;
                }
            },
        };
        self.write(b, v);
        // What the record still holds (not adopted) is released first (`finish_old`).
        if let Some(ob) = settle_old(&self.pool(), rec, p).unwrap() {
            release_old(&self.pool(), rec, p, ob, yield_to, never).unwrap();
        }
        let seq = self.claim_seq(p);
        let old = self.ring().held_desc(seq);
        rec.store(old & 0xffff_ffff, Ordering::Release);
        self.ring().set_desc(seq, desc(b, 8));
        self.entry(p, e).store(0, Ordering::Release);
        self.ring().commit(seq);
        if let Some((ob, _)) = undesc(old) {
            if self.pool().keep_sole(ob) {
                rec.store(pool::KEPT_OLD | (ob as u64 + 1), Ordering::Release);
                *kept = Some(ob);
            } else {
                release_old(&self.pool(), rec, p, ob, yield_to, never).unwrap();
            }
        }
        Some(seq)
    }

    /// Reads sequence `*r` as participant `p` (taking and releasing a reference): the value,
    /// or `None` when nothing is there; jumps past lost sequences.
    pub(super) fn read_seq(&self, p: u32, r: &mut u64) -> Option<u64> {
        loop {
            match self.ring().read(*r).unwrap() {
                Read::Ready { desc } => {
                    let (b, _) = undesc(desc)?;
                    let e = self.claim(p);
                    let h = self.entry(p, e);
                    if !take_entry_to(&self.pool(), h, p, e, b, 0, yield_to, never).unwrap() {
                        crate::sync::yield_now();
                        continue;
                    }
                    if !self.ring().still(*r) {
                        release_entry(&self.pool(), h, p, e, b, yield_to, never).unwrap();
                        crate::sync::yield_now();
                        continue;
                    }
                    let v = self.read(b);
                    release_entry(&self.pool(), h, p, e, b, yield_to, never).unwrap();
                    *r += 1;
                    return Some(v);
                }
                Read::Lagged { next, .. } => *r = next,
                Read::Empty | Read::Pending { .. } => return None,
            }
        }
    }

    /// What a survivor does with dead participant `p`'s records: settle them, then release
    /// every reference they still hold. Returns the number released.
    pub(super) fn reclaim(&self, p: u32) -> u32 {
        let pool = self.pool();
        let mut n = 0;
        for e in 0..HELD as u32 {
            settle_entry(&pool, self.entry(p, e), p, e).unwrap();
        }
        if let Some(b) = settle_old(&pool, self.pub_old(p), p).unwrap() {
            release_old(&pool, self.pub_old(p), p, b, yield_to, never).unwrap();
            n += 1;
        }
        for e in 0..HELD as u32 {
            let h = self.entry(p, e);
            if let Entry::Held(b) = pool::entry(h.load(Ordering::Acquire)) {
                release_entry(&pool, h, p, e, b, yield_to, never).unwrap();
                n += 1;
            }
        }
        n
    }
}
