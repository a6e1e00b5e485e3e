//! The block pool's free list and reference counts, over raw memory: a Treiber stack (R. K.
//! Treiber, 1986) whose head word carries a 32-bit ABA tag next to the top block's link, and one
//! reference count per block. Every link read from memory is bounds-checked before it indexes
//! anything, because the memory may be shared with a hostile process.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// A link value: `0` is "none", any other value is a block index plus one.
pub(crate) const NIL: u32 = 0;

/// A reference count above this is impossible (a holder records every reference it takes, and
/// no table is this large): it can only come from a scribbling peer.
const RC_MAX: u32 = 1 << 30;

/// Per-block metadata, 8 bytes, in an array separate from the blocks (so that a reference-count
/// update never touches a payload's cache line).
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct BlockMeta {
    /// Holders of the block: 0 while free, else one per loan, descriptor-ring slot and sample.
    /// Written by every holder (RMW); range `0 ..= RC_MAX`.
    pub(crate) rc: AtomicU32,
    /// Free-list link (block index + 1, or [`NIL`]); meaningful only while the block is free.
    /// Written by the pusher before the head CAS that links the block in.
    pub(crate) next: AtomicU32,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<BlockMeta>() == 8);

/// A value in shared memory failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt {
    pub(crate) what: &'static str,
    pub(crate) value: u64,
    pub(crate) expected: &'static str,
}

/// The free list and reference counts of one pool.
///
/// The head word is `tag << 32 | link`: every successful CAS increments the tag, so a popper
/// that read `head = (tag, A)` and `A.next = B` cannot succeed after A was popped, B popped and
/// A pushed back (the ABA case): the tag differs. The tag wraps after 2^32 head changes; a
/// popper preempted across exactly a multiple of 2^32 changes is the accepted residual risk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pool<'a> {
    /// Written by every allocator and releaser (CAS).
    head: &'a AtomicU64,
    meta: &'a [BlockMeta],
}

impl<'a> Pool<'a> {
    pub(crate) fn new(head: &'a AtomicU64, meta: &'a [BlockMeta]) -> Pool<'a> {
        Pool { head, meta }
    }

    /// Links every block into the free list with a zero count. Creator only, before the memory
    /// is shared.
    pub(crate) fn init(&self) {
        let n = self.meta.len() as u32;
        for (i, m) in self.meta.iter().enumerate() {
            // Relaxed: published to other processes by the object's Release `ready` store.
            m.rc.store(0, Ordering::Relaxed);
            let next = if (i as u32) + 1 < n {
                i as u32 + 2
            } else {
                NIL
            };
            m.next.store(next, Ordering::Relaxed);
        }
        let first = if n > 0 { 1 } else { NIL };
        // Relaxed: as above.
        self.head.store(first as u64, Ordering::Relaxed);
    }

    fn link(&self, raw: u32, what: &'static str) -> Result<Option<u32>, Corrupt> {
        if raw == NIL {
            return Ok(None);
        }
        let idx = raw - 1;
        if idx as usize >= self.meta.len() {
            return Err(Corrupt {
                what,
                value: raw as u64,
                expected: "0 or a block index + 1 within the pool",
            });
        }
        Ok(Some(idx))
    }

    /// The metadata of block `idx`, bounds-checked.
    pub(crate) fn meta(&self, idx: u32) -> Result<&'a BlockMeta, Corrupt> {
        self.meta.get(idx as usize).ok_or(Corrupt {
            what: "block index",
            value: idx as u64,
            expected: "within the pool",
        })
    }

    /// Takes a free block and gives it a count of 1 (the caller's reference), or `None` when
    /// the pool is empty.
    pub(crate) fn pop(&self) -> Result<Option<u32>, Corrupt> {
        // SYNC POINT: Acquire pairs with the Release CAS in `push`: the `next` link the pusher
        // stored before linking the block in is visible.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let Some(idx) = self.link(head as u32, "free-list head")? else {
                return Ok(None);
            };
            // Relaxed: ordered after the Acquire load of `head`. If the block was popped (and
            // its link rewritten) since, the tag in `head` has changed and the CAS below fails,
            // so a stale value is never used; it is still checked, as a peer may write anything.
            let next = self.meta[idx as usize].next.load(Ordering::Relaxed);
            self.link(next, "free-list link")?;
            let new = (((head >> 32) + 1) << 32) | next as u64;
            // SYNC POINT: Acquire on both outcomes pairs with the Release CAS in `push` (a
            // retried head's link must be visible); no Release needed: popping publishes nothing.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    // SYNC POINT: AcqRel swap. Release pairs with the Acquire CAS in
                    // `acquire_if_live`: a reader that takes a reference on this block's new
                    // life also sees everything that happened before its last release (the
                    // overwrite that retired it). Acquire pairs with the Release decrement that
                    // freed it: the previous holders' reads are done before we write.
                    let prev = self.meta[idx as usize].rc.swap(1, Ordering::AcqRel);
                    if prev != 0 {
                        return Err(Corrupt {
                            what: "reference count of a free block",
                            value: prev as u64,
                            expected: "0",
                        });
                    }
                    return Ok(Some(idx));
                }
                Err(h) => head = h,
            }
        }
    }

    /// Links block `idx` (count already 0) back into the free list.
    fn push(&self, idx: u32) {
        // Relaxed: the value is only used as the CAS's expected value.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release CAS below.
            self.meta[idx as usize]
                .next
                .store(head as u32, Ordering::Relaxed);
            let new = (((head >> 32) + 1) << 32) | (idx as u64 + 1);
            // SYNC POINT: Release pairs with the Acquire load/CAS in `pop`: our `next` store is
            // visible to the popper. Failure: Relaxed, the value is only retried.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// Takes one more reference on block `idx` if it is still held by someone (count > 0).
    /// Returns `false` if the block is free: it may not be resurrected.
    pub(crate) fn acquire_if_live(&self, idx: u32) -> Result<bool, Corrupt> {
        let m = self.meta(idx)?;
        // Relaxed: only the CAS's expected value.
        let mut cur = m.rc.load(Ordering::Relaxed);
        loop {
            if cur == 0 {
                return Ok(false);
            }
            if cur >= RC_MAX {
                return Err(Corrupt {
                    what: "reference count",
                    value: cur as u64,
                    expected: "below 2^30",
                });
            }
            // SYNC POINT: Acquire pairs with the AcqRel decrement in `release` and the AcqRel
            // swap in `pop`: if this count was produced by an overwriter's release (or by a
            // later allocation of the block), the overwriter's stamp store is visible to the
            // caller's re-check. Release is not needed: taking a reference publishes nothing.
            match m
                .rc
                .compare_exchange_weak(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Ok(true),
                Err(c) => cur = c,
            }
        }
    }

    /// Drops one reference on block `idx`; the last one returns the block to the free list.
    /// Returns whether the block was freed.
    pub(crate) fn release(&self, idx: u32) -> Result<bool, Corrupt> {
        let m = self.meta(idx)?;
        // SYNC POINT: AcqRel. Release: our reads of the block (and, for an overwriter, the
        // slot's new stamp) happen before whoever sees the count drop; Acquire: the last
        // releaser sees every other holder's reads finished before it frees the block.
        let prev = m.rc.fetch_sub(1, Ordering::AcqRel);
        if prev == 0 || prev > RC_MAX {
            if prev == 0 {
                // Undo the wrap: a count of 0 means a peer released a reference it did not
                // hold (or scribbled on the count). Relaxed: nothing is published by it.
                m.rc.fetch_add(1, Ordering::Relaxed);
            }
            return Err(Corrupt {
                what: "reference count on release",
                value: prev as u64,
                expected: "1 ..= 2^30 (the caller holds a reference)",
            });
        }
        if prev == 1 {
            self.push(idx);
            return Ok(true);
        }
        Ok(false)
    }

    /// Blocks currently free, counted by walking the count array (not the list): a snapshot
    /// for statistics, off every hot path.
    pub(crate) fn free_estimate(&self) -> usize {
        self.meta
            .iter()
            // Relaxed: a statistic; racy by nature.
            .filter(|m| m.rc.load(Ordering::Relaxed) == 0)
            .count()
    }
}
