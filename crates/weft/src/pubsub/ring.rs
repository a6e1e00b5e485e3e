//! A topic's descriptor ring: a multi-publisher broadcast ring of 16-byte slots `{ stamp,
//! descriptor }` over raw memory. Publishers claim a slot by a CAS on its stamp that writes
//! their own participant index into it (so a claim always names its holder), then advance the
//! shared tail, which any publisher helps along (Vyukov-style helping); subscribers read by
//! 64-bit sequence number with a seqlock-style stamp check, take a reference on the block the
//! descriptor names, and re-check the stamp.
//!
//! Stamps (one per slot, written by the claimant and by a recoverer of a dead claimant):
//! - `0`: never written;
//! - `seq + 1` (bit 63 clear): the slot holds the descriptor of sequence `seq`, committed;
//! - `1 << 63 | holder << 40 | (seq mod 2^40)`: publisher `holder` is writing sequence `seq`.
//!
//! A slot moves from `committed(seq - C)` to `writing(seq)` to `committed(seq)`; stamps of one
//! slot only grow, so a re-check that finds the same committed stamp proves that the slot was
//! not overwritten in between.

use super::pool::Corrupt;
use crate::sync::{AtomicU64, Ordering};
use core::ptr::NonNull;

/// Bit 63 marks a slot being written.
const WRITING: u64 = 1 << 63;
/// Low bits of the sequence number kept in a writing stamp.
const SEQ_BITS: u32 = 40;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// The largest participant index a writing stamp can name.
pub(crate) const MAX_HOLDER: u32 = (1 << 23) - 1;
/// Sequence numbers stay below this (2^62: centuries at a billion messages a second); a larger
/// tail or stamp can only come from a scribbling peer.
pub(crate) const SEQ_LIMIT: u64 = 1 << 62;

/// The stamp of a slot that holds sequence `seq`.
#[inline]
pub(crate) const fn committed(seq: u64) -> u64 {
    seq + 1
}

/// The stamp of a slot that participant `holder` is writing for sequence `seq`.
#[inline]
pub(crate) const fn writing(holder: u32, seq: u64) -> u64 {
    WRITING | ((holder as u64) << SEQ_BITS) | (seq & SEQ_MASK)
}

/// One slot, 16 bytes.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct Slot {
    /// See the module docs. Written by the claimant (CAS, then a Release store) and by the
    /// recoverer of a dead claimant.
    pub(crate) stamp: AtomicU64,
    /// The descriptor (`len << 32 | block + 1`, 0 for none). Written by the holder of a
    /// writing stamp (or the reclaimer of a dead holder's row), and cleared to 0 by the freer
    /// of the topic (`Region::free_topic`) and the next registration of its entry
    /// (`Region::restamp`), both under the registration lock, when no claim is held.
    pub(crate) desc: AtomicU64,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Slot>() == 16);

/// The outcome of one claim attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// The slot of `seq` is ours: write the descriptor, then [`Ring::commit`].
    Mine { seq: u64 },
    /// The slot is still held by `holder`, who claimed the previous lap's `seq` and has not
    /// committed yet (preempted, or dead). It is never taken from a live holder: wait.
    Busy { holder: u32, seq: u64 },
}

/// What a subscriber finds at its next sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// Committed with this descriptor; take a reference, then [`Ring::still`].
    Ready { desc: u64 },
    /// Nothing published at this sequence yet.
    Empty,
    /// Claimed but not committed yet (by `holder` if known).
    Pending { holder: Option<u32> },
    /// Overwritten: `skipped` sequences are lost, continue at `next`.
    Lagged { skipped: u64, next: u64 },
}

/// A view of one ring.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ring<'a> {
    /// The next sequence to claim. Written by publishers (CAS, helping); range `0 .. SEQ_LIMIT`.
    tail: &'a AtomicU64,
    slots: &'a [Slot],
    mask: u64,
}

fn corrupt(what: &'static str, value: u64, expected: &'static str) -> Corrupt {
    Corrupt {
        what,
        value,
        expected,
    }
}

impl<'a> Ring<'a> {
    /// `slots.len()` must be a power of two (checked by the caller when it validates the
    /// region's configuration).
    ///
    /// # Panics
    /// When `slots` is empty (every ring has at least one slot: `slot` relies on it).
    pub(crate) fn new(tail: &'a AtomicU64, slots: &'a [Slot]) -> Ring<'a> {
        debug_assert!(slots.len().is_power_of_two());
        assert!(!slots.is_empty(), "a ring of no slots");
        Ring {
            tail,
            slots,
            mask: slots.len() as u64 - 1,
        }
    }

    pub(crate) fn cap(&self) -> u64 {
        self.mask + 1
    }

    /// The slot of `seq`.
    #[inline(always)]
    pub(crate) fn slot(&self, seq: u64) -> &'a Slot {
        let i = (seq & self.mask) as usize;
        debug_assert!(i < self.slots.len());
        // SAFETY: `mask` is `slots.len() - 1` with `slots` not empty (`new`, `RingAt::ring`,
        // which rebuilds a ring `new` made), and `seq & mask <= mask`: the index is in bounds.
        unsafe { self.slots.get_unchecked(i) }
    }

    /// The tail: every sequence below it has been claimed.
    pub(crate) fn tail(&self) -> Result<u64, Corrupt> {
        // SYNC POINT: Acquire pairs with the Release CAS that advances the tail in `help`
        // (called by `try_claim`), and with the single publisher's Release store of the tail
        // in `try_claim_single`.
        let t = self.tail.load(Ordering::Acquire);
        if t >= SEQ_LIMIT {
            return Err(corrupt("topic tail", t, "below 2^62"));
        }
        Ok(t)
    }

    /// Sets the tail of a ring nobody claims or reads (a free topic entry's, under the
    /// registration lock) back to 0: what a tail that failed validation restarts from.
    pub(crate) fn reset_tail(&self) {
        // Relaxed: published by the Release store of the entry's READY state that follows
        // the registration.
        self.tail.store(0, Ordering::Relaxed);
    }

    fn help(&self, t: u64) {
        // SYNC POINT: Release pairs with the Acquire load in `tail`. Failure means another
        // publisher advanced it already: Relaxed, nothing is read.
        let _ = self
            .tail
            .compare_exchange(t, t + 1, Ordering::Release, Ordering::Relaxed);
    }

    /// The stamp of `t`'s slot when it is free for `t`: the previous lap committed, or never
    /// written on the first lap.
    #[inline(always)]
    pub(crate) fn free_stamp(&self, t: u64) -> u64 {
        if t >= self.cap() {
            committed(t - self.cap())
        } else {
            0
        }
    }

    /// One attempt to claim the next sequence for participant `holder`. `note(seq)` is called
    /// just before the claiming CAS, so that a crash right after it leaves a record of which
    /// slot this participant may hold.
    pub(crate) fn try_claim(
        &self,
        holder: u32,
        mut note: impl FnMut(u64),
    ) -> Result<Claimed, Corrupt> {
        let cap = self.cap();
        loop {
            let t = self.tail()?;
            let slot = self.slot(t);
            // SYNC POINT: Acquire pairs with the Release store in `commit`: the previous lap's
            // descriptor is visible once we own the slot.
            let st = slot.stamp.load(Ordering::Acquire);
            let prev = self.free_stamp(t);
            if st == prev {
                note(t);
                // SYNC POINT: AcqRel. Acquire as above; Release orders our claim before the
                // tail advance, and before our later release of the previous lap's block (the
                // chain that `Read::Ready` + `still` rely on).
                if slot
                    .stamp
                    .compare_exchange(st, writing(holder, t), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    self.help(t);
                    return Ok(Claimed::Mine { seq: t });
                }
                continue;
            }
            let is_writing = st & WRITING != 0;
            let low = st & SEQ_MASK;
            if st == committed(t) || (is_writing && low == t & SEQ_MASK) {
                // Someone claimed `t` and has not advanced the tail yet: help, then retry.
                self.help(t);
                continue;
            }
            if is_writing && t >= cap && low == (t - cap) & SEQ_MASK {
                return Ok(Claimed::Busy {
                    holder: ((st >> SEQ_BITS) as u32) & MAX_HOLDER,
                    seq: t - cap,
                });
            }
            if self.tail()? == t {
                // With the tail at `t`, every sequence below `t` was claimed before the tail
                // passed it, so the slot holds `t - cap` or `t` in some state: nothing else.
                return Err(corrupt(
                    "descriptor-ring stamp",
                    st,
                    "the previous lap's or the tail's sequence",
                ));
            }
        }
    }

    /// [`Ring::try_claim`] for the one publisher of a single-publisher topic, which holds the
    /// topic's lease: no other publisher claims or advances the tail, so the claim and the
    /// tail advance are plain stores (no CAS, no helping). When the slot at the tail is not
    /// free (the unfinished claim of a previous holder that died), it claims the way every
    /// publisher does.
    #[inline]
    pub(crate) fn try_claim_single(
        &self,
        holder: u32,
        mut note: impl FnMut(u64),
    ) -> Result<Claimed, Corrupt> {
        let t = self.tail()?;
        let slot = self.slot(t);
        // SYNC POINT: Acquire pairs with the Release store in `commit`, as in `try_claim`.
        let st = slot.stamp.load(Ordering::Acquire);
        if st == self.free_stamp(t) {
            note(t);
            // SYNC POINT: Release, as the claiming CAS of `try_claim`: orders the claim after
            // `note` and before the tail advance. A subscriber that takes a reference on the
            // previous lap's block after our later keep or release of it (RMWs on its count,
            // Release) acquires this claim and fails its re-check (`still`).
            slot.stamp.store(writing(holder, t), Ordering::Release);
            // SYNC POINT: Release pairs with the Acquire load in `tail`.
            self.tail.store(t + 1, Ordering::Release);
            return Ok(Claimed::Mine { seq: t });
        }
        self.try_claim_cold(holder, note)
    }

    /// `try_claim` out of the single publisher's line.
    #[cold]
    #[inline(never)]
    fn try_claim_cold(&self, holder: u32, note: impl FnMut(u64)) -> Result<Claimed, Corrupt> {
        self.try_claim(holder, note)
    }

    /// The descriptor in a slot this participant holds (claimed, not yet committed).
    pub(crate) fn held_desc(&self, seq: u64) -> u64 {
        // Relaxed: the slot is ours; the previous lap's Release `commit` was acquired by the
        // claiming CAS.
        self.slot(seq).desc.load(Ordering::Relaxed)
    }

    /// Replaces the descriptor in a slot this participant holds.
    pub(crate) fn set_desc(&self, seq: u64, desc: u64) {
        // SYNC POINT: Release pairs with the Acquire load of `desc` in `read`. A reader that
        // saw the previous lap's stamp and then loads this descriptor must also see our
        // claiming stamp in its re-check (`still`), or it would take the new block for the old
        // sequence and read it while we fill it (the loom model
        // `loom_refcount_take_vs_overwrite` finds exactly that with a Relaxed pair).
        self.slot(seq).desc.store(desc, Ordering::Release);
    }

    /// Publishes the slot of `seq`.
    pub(crate) fn commit(&self, seq: u64) {
        // SYNC POINT: Release pairs with the Acquire loads of the stamp in `read` and
        // `try_claim`: the descriptor and the block's payload are visible to them.
        self.slot(seq)
            .stamp
            .store(committed(seq), Ordering::Release);
    }

    /// What sequence `r` holds for a subscriber.
    #[inline(always)]
    pub(crate) fn read(&self, r: u64) -> Result<Read, Corrupt> {
        let slot = self.slot(r);
        // SYNC POINT: Acquire pairs with the Release store in `commit`.
        let st = slot.stamp.load(Ordering::Acquire);
        if st == committed(r) {
            // SYNC POINT: Acquire pairs with the Release store in `set_desc`: if this is a
            // newer lap's descriptor, the claim that preceded it is visible to `still`, which
            // then fails and the reference is given back.
            let desc = slot.desc.load(Ordering::Acquire);
            return Ok(Read::Ready { desc });
        }
        if st == self.free_stamp(r) {
            // The slot still holds the previous lap (or nothing, in the first lap): nobody
            // had claimed `r` when we looked, since a claim stamps the slot before the tail
            // moves past it. Empty, without loading the tail: every publish writes its line,
            // and a subscriber polling it pulled that line away from the publisher on each
            // empty poll, one more transfer between their cores per message.
            return Ok(Read::Empty);
        }
        self.read_other(r, st)
    }

    /// [`Ring::read`] of a sequence whose slot's stamp `st` is not its commit: out of line.
    #[inline(never)]
    fn read_other(&self, r: u64, st: u64) -> Result<Read, Corrupt> {
        let cap = self.cap();
        let lost_after = |s: u64| -> Result<Read, Corrupt> {
            // `s` (> r, same slot) overwrote `r`: every sequence below `max(tail, s + 1) - cap`
            // is lost or will be overwritten before it can be read.
            let t = self.tail()?.max(s + 1);
            let next = t - cap;
            Ok(Read::Lagged {
                skipped: next - r,
                next,
            })
        };
        if st & WRITING != 0 {
            let low = st & SEQ_MASK;
            let holder = ((st >> SEQ_BITS) as u32) & MAX_HOLDER;
            if low == r & SEQ_MASK || (r >= cap && low == (r - cap) & SEQ_MASK) {
                return Ok(Read::Pending {
                    holder: Some(holder),
                });
            }
            return lost_after(r + cap);
        }
        if st != 0 {
            let s = st - 1;
            if s >= SEQ_LIMIT || (s & self.mask) != (r & self.mask) {
                return Err(corrupt(
                    "descriptor-ring stamp",
                    st,
                    "a sequence of this slot, below 2^62",
                ));
            }
            if s > r {
                return lost_after(s);
            }
        }
        let t = self.tail()?;
        if t > r.saturating_add(cap) {
            return lost_after(t - 1);
        }
        if r >= t {
            Ok(Read::Empty)
        } else {
            Ok(Read::Pending { holder: None })
        }
    }

    /// After taking a reference on the block of `Read::Ready` at `r`: whether the slot still
    /// holds `r`. If it does, the slot's reference was held all along, so ours is on the right
    /// block; if not, give the reference back and read `r` again.
    pub(crate) fn still(&self, r: u64) -> bool {
        // SYNC POINT: Acquire, after the AcqRel reference CAS in `Pool::take`:
        // an overwriter stores the writing stamp before it releases the old block, so if our
        // CAS read a count its release produced, this load sees that stamp or a later one.
        self.slot(r).stamp.load(Ordering::Acquire) == committed(r)
    }
}

/// Where a ring is, without a lifetime: for a handle that keeps the ring's memory mapped by
/// other means, and wants the view back without resolving it again ([`RingAt::ring`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RingAt {
    tail: NonNull<AtomicU64>,
    slots: NonNull<Slot>,
    len: usize,
}

impl RingAt {
    pub(crate) fn new(ring: &Ring<'_>) -> RingAt {
        RingAt {
            tail: NonNull::from(ring.tail),
            slots: NonNull::from(ring.slots).cast(),
            len: ring.slots.len(),
        }
    }

    /// The view again.
    ///
    /// # Safety
    /// The memory of the ring this was made from stays mapped for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn ring<'a>(&self) -> Ring<'a> {
        // SAFETY: per the caller's contract, `tail` and the `len` slots at `slots` are the
        // ring's memory, still mapped; all atomics, valid for any bit pattern and shareable.
        unsafe {
            Ring {
                tail: self.tail.as_ref(),
                slots: core::slice::from_raw_parts(self.slots.as_ptr(), self.len),
                mask: self.len as u64 - 1,
            }
        }
    }
}

/// A descriptor: block index and payload length in one word; 0 is "none" (a slot never
/// written, or the tombstone a recoverer leaves for a dead publisher's unfinished claim).
#[inline]
pub(crate) const fn desc(block: u32, len: u32) -> u64 {
    ((len as u64) << 32) | (block as u64 + 1)
}

/// The block and length of a descriptor, `None` for "none".
#[inline]
pub(crate) const fn undesc(d: u64) -> Option<(u32, u32)> {
    let b = d as u32;
    if b == 0 {
        None
    } else {
        Some((b - 1, (d >> 32) as u32))
    }
}
