//! The block pool and its reference accounting, over raw memory.
//!
//! One 64-bit word per block: the reference count (low 32 bits) and, while a participant is
//! changing the count, a *mark* (high 32 bits) naming the participant and the record the
//! reference belongs to (a holdings entry, or its publish record). A take or a drop is one CAS
//! that changes the count and sets the mark together; the participant then updates its record
//! and clears the mark with a plain store (nobody else changes a marked word). So whatever
//! instant a participant is killed at, a survivor can tell from its record and the block's
//! mark whether its take or drop happened, and finish or undo it exactly once: no reference
//! leaks and none is released twice (`settle`).
//!
//! Allocation has no free list: a participant claims a free block (count 0, no mark) with one
//! CAS that sets the count to 1 *and* marks it with the record it will be kept in, scanning
//! from its own cursor. The last drop leaves the word at 0, which is all it takes to free the
//! block. Every value read from the words (counts, marks) is validated: the memory may be
//! shared with a hostile process.
//!
//! A participant's record of a reference (a holdings entry, `u32`) goes through these states:
//! take: `0 -> TAKING | b+1 -> [take CAS] -> b+1 -> [unmark]`; drop: `b+1 -> [drop CAS] ->
//! DONE | b+1 -> [unmark] -> 0`. A subscription record is `SUB_TAG | topic`, with
//! `SUB_PARKED` while the subscription is parked.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// A count above this is impossible (every reference is recorded, and no table is this large):
/// it can only come from a scribbling peer.
const RC_MAX: u64 = 1 << 30;
const RC_MASK: u64 = 0xffff_ffff;

/// Mark bits (in the high half of a block's word).
const MARKED: u64 = 1 << 63;
const DROP: u64 = 1 << 62;
const PART_SHIFT: u32 = 32 + 17;
const PART_BITS: u64 = 0x3ff;
const RECORD_BITS: u64 = 0x1_ffff;

/// The largest participant index a mark can name.
pub(crate) const MAX_PARTICIPANT: u32 = PART_BITS as u32;
/// The record id of a participant's publish record (`pub_old`: the reference a publish
/// displaced from a ring slot); holdings entries are `0 .. 65536`.
pub(crate) const PUB_OLD: u32 = 1 << 16;

/// Holdings entry: a subscription to topic `value & !(SUB_TAG | SUB_PARKED)`.
pub(crate) const SUB_TAG: u32 = 1 << 31;
/// Holdings entry, beside [`SUB_TAG`]: the subscription's park announcement stands on its
/// topic's `waiters` count (`ring::wake::park_recorded`); whoever clears the bit withdraws it.
pub(crate) const SUB_PARKED: u32 = 1 << 30;
/// Holdings entry: a take of block `(value & LINK) - 1` may be in flight (`TAKING | 0`: the
/// entry is reserved, no block chosen yet).
pub(crate) const TAKING: u32 = 1 << 30;
/// Holdings entry: the reference on block `(value & LINK) - 1` was dropped, the mark may not
/// be cleared yet.
pub(crate) const DONE: u32 = 1 << 29;
/// Holdings entry: claimed, holding nothing yet (a take's first state, and a holder's spare
/// entry between takes); settled by clearing it.
pub(crate) const RESERVED: u32 = TAKING;
/// The block + 1 part of a holdings entry.
pub(crate) const LINK: u32 = (1 << 25) - 1;

/// Per-block metadata, in an array separate from the blocks (so that a count update never
/// touches a payload's cache line), one cache line per block: a publisher and the subscribers
/// on other cores update the words of different blocks at once (the block being taken, the
/// one a publish displaced), and 8 words to a line made those lines move between the cores.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct BlockMeta {
    /// `mark << 32 | count`. The count: 0 while free, else one per loan, ring slot and sample
    /// (range `0 ..= 2^30`). Written by every holder (CAS), and by the marker (plain store).
    pub(crate) word: AtomicU64,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<BlockMeta>() == 64);

/// A value in shared memory failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt {
    pub(crate) what: &'static str,
    pub(crate) value: u64,
    pub(crate) expected: &'static str,
}

/// The record a reference belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Who {
    /// Participant index, `0 ..= MAX_PARTICIPANT`.
    pub(crate) participant: u32,
    /// Holdings entry index, or [`PUB_OLD`].
    pub(crate) record: u32,
}

impl Who {
    fn mark(self, drop: bool) -> u64 {
        MARKED
            | if drop { DROP } else { 0 }
            | (self.participant as u64 & PART_BITS) << PART_SHIFT
            | (self.record as u64 & RECORD_BITS) << 32
    }
}

/// A block's mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    None,
    /// `who` took a reference and has not cleared the mark yet.
    Take(Who),
    /// `who` dropped a reference and has not cleared the mark yet.
    Drop(Who),
}

#[inline(always)]
fn decode(w: u64) -> Result<Mark, Corrupt> {
    let hi = w >> 32;
    if hi == 0 {
        return Ok(Mark::None);
    }
    let who = Who {
        participant: ((w >> PART_SHIFT) & PART_BITS) as u32,
        record: ((w >> 32) & RECORD_BITS) as u32,
    };
    let bits_used = MARKED | DROP | PART_BITS << PART_SHIFT | RECORD_BITS << 32;
    if w & MARKED == 0 || (w & !RC_MASK) & !bits_used != 0 || who.record > PUB_OLD {
        return Err(Corrupt {
            what: "block mark",
            value: w,
            expected: "0, or a mark naming a participant and one of its records",
        });
    }
    Ok(if w & DROP != 0 {
        Mark::Drop(who)
    } else {
        Mark::Take(who)
    })
}

/// The outcome of one take attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// The reference is ours (and the block marked): record it, then [`Pool::unmark`].
    Taken,
    /// The block is free (count 0): it may not be resurrected.
    Free,
    /// Another participant's take or drop is in flight: wait (or reclaim it if it died).
    Busy(Who),
}

/// The outcome of one drop attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Dropped (and the block marked): update the record, then [`Pool::unmark`]. `freed`: it
    /// was the last reference (the block is free once unmarked).
    Done { freed: bool },
    /// Another participant's take or drop is in flight.
    Busy(Who),
}

/// What a dead participant's record holds once its operation in flight is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The record holds a reference on the block: release it.
    Holds,
    /// It holds nothing (its take did not happen, or its drop did).
    Nothing,
}

/// The reference accounting of one pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pool<'a> {
    meta: &'a [BlockMeta],
}

fn corrupt(what: &'static str, value: u64, expected: &'static str) -> Corrupt {
    Corrupt {
        what,
        value,
        expected,
    }
}

impl<'a> Pool<'a> {
    pub(crate) fn new(meta: &'a [BlockMeta]) -> Pool<'a> {
        Pool { meta }
    }

    /// The blocks' words.
    pub(crate) fn meta(&self) -> &'a [BlockMeta] {
        self.meta
    }

    /// Every block free and unmarked. Creator only, before the memory is shared.
    pub(crate) fn init(&self) {
        for m in self.meta {
            // Relaxed: published to other processes by the object's Release `ready` store.
            m.word.store(0, Ordering::Relaxed);
        }
    }

    /// Whether `b` is a block of this pool.
    #[inline]
    pub(crate) fn has(&self, b: u32) -> bool {
        (b as usize) < self.meta.len()
    }

    /// The word of block `b`, bounds-checked.
    #[inline(always)]
    fn word(&self, b: u32) -> Result<&'a AtomicU64, Corrupt> {
        self.meta.get(b as usize).map(|m| &m.word).ok_or(corrupt(
            "block index",
            b as u64,
            "within the pool",
        ))
    }

    /// Claims a free block for `who`, scanning from `*cursor` (the caller's own hint, moved
    /// past the block found). `pending(b)` is called before each claim attempt, so that the
    /// caller's record names the block before the CAS that may make it theirs. The block comes
    /// back with a count of 1 and marked: record it, then [`Pool::unmark`]. `None`: every block
    /// is in use.
    pub(crate) fn alloc(
        &self,
        who: Who,
        cursor: &mut u32,
        mut pending: impl FnMut(u32),
    ) -> Option<u32> {
        let n = self.meta.len() as u32;
        let start = if *cursor < n { *cursor } else { 0 };
        for k in 0..n {
            let b = if start + k < n {
                start + k
            } else {
                start + k - n
            };
            let w = &self.meta[b as usize].word;
            // Relaxed: only a pre-check of the CAS below.
            if w.load(Ordering::Relaxed) != 0 {
                continue;
            }
            pending(b);
            // SYNC POINT: AcqRel. Acquire pairs with the Release store in `unmark` after the
            // last drop: the previous holders' reads of the block are done before we write
            // it. Release: our record's `TAKING` (stored by `pending`) is visible to whoever
            // sees our mark.
            if w.compare_exchange(0, 1 | who.mark(false), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                *cursor = b + 1;
                return Some(b);
            }
        }
        None
    }

    /// Takes one more reference on block `b` for `who`, if the block is held by someone (count
    /// above 0). On [`Take::Taken`], record it, then [`Pool::unmark`].
    #[inline(always)]
    pub(crate) fn take(&self, b: u32, who: Who) -> Result<Take, Corrupt> {
        let word = self.word(b)?;
        // Relaxed: only the CAS's expected value.
        let mut cur = word.load(Ordering::Relaxed);
        loop {
            match decode(cur)? {
                Mark::None => {}
                Mark::Take(w) | Mark::Drop(w) => return Ok(Take::Busy(w)),
            }
            let rc = cur & RC_MASK;
            if rc == 0 {
                return Ok(Take::Free);
            }
            if rc >= RC_MAX {
                return Err(corrupt("reference count", rc, "below 2^30"));
            }
            // SYNC POINT: AcqRel. Acquire pairs with the Release store in `unmark` (and the
            // AcqRel CASes of earlier holders): if this count was left by an overwriter's drop
            // (or by a later allocation of the block), the overwriter's stamp store is visible
            // to the caller's re-check (`ring::Ring::still`). Release: the caller's `TAKING`
            // record is visible to whoever sees our mark.
            match word.compare_exchange_weak(
                cur,
                (rc + 1) | who.mark(false),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Take::Taken),
                Err(c) => cur = c,
            }
        }
    }

    /// Drops the reference of `who` on block `b`. On [`Dropped::Done`], update the record,
    /// then [`Pool::unmark`].
    #[inline(always)]
    pub(crate) fn drop_ref(&self, b: u32, who: Who) -> Result<Dropped, Corrupt> {
        let word = self.word(b)?;
        // Relaxed: only the CAS's expected value.
        let mut cur = word.load(Ordering::Relaxed);
        loop {
            match decode(cur)? {
                Mark::None => {}
                Mark::Take(w) | Mark::Drop(w) => return Ok(Dropped::Busy(w)),
            }
            let rc = cur & RC_MASK;
            if rc == 0 || rc > RC_MAX {
                return Err(corrupt(
                    "reference count on release",
                    rc,
                    "1 ..= 2^30 (the caller holds a reference)",
                ));
            }
            // SYNC POINT: AcqRel. Release: our reads of the block (and, for an overwriter, the
            // slot's new stamp) happen before whoever sees the count drop; Acquire: the last
            // dropper sees every other holder's reads finished before the block is reused.
            match word.compare_exchange_weak(
                cur,
                (rc - 1) | who.mark(true),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Dropped::Done { freed: rc == 1 }),
                Err(c) => cur = c,
            }
        }
    }

    /// Whether the caller's reference on block `b` is its only one (count 1, unmarked), in a
    /// way that lets the caller reuse the block as if it had dropped it and allocated it
    /// again: an RMW that leaves the word as it is. `false` (held by others, marked, or out
    /// of range): release the reference as usual.
    #[inline(always)]
    pub(crate) fn keep_sole(&self, b: u32) -> bool {
        let Ok(word) = self.word(b) else { return false };
        // SYNC POINT: AcqRel, as the drop and the allocation it stands for. Release pairs with
        // the Acquire take CAS of a subscriber that read the block's old descriptor: our RMW
        // comes after our claim of that descriptor's slot, so a take that reads our value (or
        // a later one) sees the claim in its re-check (`ring::Ring::still`) and gives the
        // reference back before reading the block; a take before it makes this fail. Acquire
        // pairs with the Release `unmark` of the last other holder: its reads of the block
        // are done before we write it.
        word.compare_exchange(1, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Clears `who`'s mark on block `b` once its record is up to date. A no-op when the block
    /// is not marked by `who` (a peer scribbled on it).
    #[inline(always)]
    pub(crate) fn unmark(&self, b: u32, who: Who) {
        let Ok(word) = self.word(b) else { return };
        // Relaxed: a marked word changes only through its marker (us).
        let cur = word.load(Ordering::Relaxed);
        let hi = cur & !RC_MASK;
        if hi == who.mark(false) || hi == who.mark(true) {
            // SYNC POINT: Release pairs with the Acquire CASes of the next taker, dropper or
            // allocator: our record update and (for a drop) our reads of the block come first.
            word.store(cur & RC_MASK, Ordering::Release);
        }
    }

    /// The count and mark of block `b` (Acquire: pairs with the CASes and `unmark`).
    pub(crate) fn state(&self, b: u32) -> Result<(u64, Mark), Corrupt> {
        // Acquire: see above.
        let w = self.word(b)?.load(Ordering::Acquire);
        Ok((w & RC_MASK, decode(w)?))
    }

    /// Settles a dead participant's record `who` that names block `b` (`taking`: the record
    /// said `TAKING`, so its take may or may not have happened): clears the participant's
    /// mark if it is there, and says whether the record holds a reference. The caller holds
    /// the dead participant's row, so nothing else acts for `who`.
    ///
    /// When the mark is there, `record` is called with the outcome *before* the mark is
    /// cleared, to store it in the record (`b + 1` for a take that happened, done for a drop
    /// that did), as the owner itself does: a reclaimer killed between the two stores then
    /// leaves a record that the next one settles the same way, where one that cleared the
    /// mark first left a record that still said `TAKING` (its reference leaked) or held (its
    /// reference was released a second time).
    pub(crate) fn settle(
        &self,
        b: u32,
        who: Who,
        taking: bool,
        record: impl FnOnce(Settled),
    ) -> Result<Settled, Corrupt> {
        let (_, mark) = self.state(b)?;
        let settled = match mark {
            Mark::Take(w) if w == who => Settled::Holds,
            Mark::Drop(w) if w == who => Settled::Nothing,
            _ if taking => return Ok(Settled::Nothing),
            _ => return Ok(Settled::Holds),
        };
        record(settled);
        crash::point();
        self.unmark(b, who);
        crash::point();
        Ok(settled)
    }

    /// Blocks free now (count 0, unmarked), counted by walking the words: a snapshot for
    /// statistics, off every hot path.
    pub(crate) fn free_estimate(&self) -> usize {
        self.meta
            .iter()
            // Relaxed: a statistic; racy by nature.
            .filter(|m| m.word.load(Ordering::Relaxed) == 0)
            .count()
    }
}

/// A holdings entry's state, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    Empty,
    /// A subscription to this topic.
    Sub(u32),
    /// Reserved for an allocation that has not chosen a block.
    Reserved,
    /// A take of this block may be in flight.
    Taking(u32),
    /// A reference on this block.
    Held(u32),
    /// The reference on this block was dropped; its mark may remain.
    Done(u32),
}

/// Decodes a holdings entry (any bit pattern decodes; block indices are checked by the pool).
pub(crate) fn entry(v: u32) -> Entry {
    if v == 0 {
        Entry::Empty
    } else if v & SUB_TAG != 0 {
        Entry::Sub(v & !(SUB_TAG | SUB_PARKED))
    } else {
        match v & LINK {
            // Claimed, but naming no block: a take that has not picked one yet, or (without
            // the TAKING bit) a value no participant writes. Settled by clearing it.
            0 => Entry::Reserved,
            l if v & TAKING != 0 => Entry::Taking(l - 1),
            l if v & DONE != 0 => Entry::Done(l - 1),
            l => Entry::Held(l - 1),
        }
    }
}

/// Settles holdings entry `e` of a dead participant `p` and returns the block it still holds a
/// reference on, if any (the entry then says `Held`); an entry that holds nothing is cleared.
pub(crate) fn settle_entry(
    pool: &Pool<'_>,
    h: &AtomicU32,
    p: u32,
    e: u32,
) -> Result<Option<u32>, Corrupt> {
    let who = Who {
        participant: p,
        record: e,
    };
    // Acquire: pairs with the owner's Release entry stores (and its marks' Release CASes).
    let v = h.load(Ordering::Acquire);
    let (b, taking) = match entry(v) {
        Entry::Empty => return Ok(None),
        Entry::Sub(_) | Entry::Reserved => {
            // Release: pairs with the Acquire loads of readers of the holdings.
            h.store(0, Ordering::Release);
            return Ok(None);
        }
        // A block past the pool (a scribbling peer's value) holds no reference to settle or
        // release: the entry is cleared, so that the record does not fail every reclaim of
        // its row, and every join that reclaims it, for ever.
        Entry::Taking(b) | Entry::Held(b) if !pool.has(b) => {
            // Release: as above.
            h.store(0, Ordering::Release);
            return Ok(None);
        }
        Entry::Taking(b) => (b, true),
        Entry::Held(b) => (b, false),
        Entry::Done(b) => {
            if pool.state(b).is_ok() {
                // The record says done already: nothing to store before the unmark.
                pool.settle(b, who, false, |_| {})?;
            }
            // Release: as above.
            h.store(0, Ordering::Release);
            return Ok(None);
        }
    };
    let record = |settled| {
        let v = match settled {
            Settled::Holds => b + 1,
            Settled::Nothing => DONE | (b + 1),
        };
        // Release: as above.
        h.store(v, Ordering::Release);
    };
    match pool.settle(b, who, taking, record)? {
        Settled::Holds => {
            // Release: as above.
            h.store(b + 1, Ordering::Release);
            Ok(Some(b))
        }
        Settled::Nothing => {
            // Release: as above.
            h.store(0, Ordering::Release);
            Ok(None)
        }
    }
}

/// Releases the reference that holdings entry `e` of participant `p` holds on block `b` (the
/// entry says `Held(b)`): drop, mark the entry done, unmark, clear the entry. `wait(holder)`
/// is called while another participant's operation on the block is in flight (it may wait,
/// reclaim a dead holder, or give up with `Err`).
pub(crate) fn release_entry<E>(
    pool: &Pool<'_>,
    h: &AtomicU32,
    p: u32,
    e: u32,
    b: u32,
    wait: impl FnMut(Who) -> Result<(), E>,
    bad: impl Fn(Corrupt) -> E,
) -> Result<bool, E> {
    release_entry_to(pool, h, p, e, b, 0, wait, bad)
}

/// [`release_entry`], leaving the entry at `idle` instead of empty: [`RESERVED`] keeps it
/// claimed for the next take of the same holder (a settler clears it like any reservation).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn release_entry_to<E>(
    pool: &Pool<'_>,
    h: &AtomicU32,
    p: u32,
    e: u32,
    b: u32,
    idle: u32,
    mut wait: impl FnMut(Who) -> Result<(), E>,
    bad: impl Fn(Corrupt) -> E,
) -> Result<bool, E> {
    let who = Who {
        participant: p,
        record: e,
    };
    let freed = loop {
        match pool.drop_ref(b, who) {
            Ok(Dropped::Done { freed }) => break freed,
            Ok(Dropped::Busy(w)) => wait(w)?,
            Err(c) => {
                // A word that fails validation (a scribbling peer's) holds no reference this
                // entry could drop: the entry is cleared (leaking what the word may count), as a
                // reclaimer clears it, where keeping it cost its holder one entry per such
                // release, for good. A wait that gave up keeps it: the reference is real.
                // Release: pairs with the Acquire load in `settle_entry`.
                h.store(idle, Ordering::Release);
                return Err(bad(c));
            }
        }
    };
    // Release: pairs with the Acquire load in `settle_entry`.
    h.store(DONE | (b + 1), Ordering::Release);
    pool.unmark(b, who);
    // Release: as above.
    h.store(idle, Ordering::Release);
    Ok(freed)
}

/// Takes a reference on block `b` for holdings entry `e` of participant `p` (the entry must be
/// empty or reserved by the caller): records the intent, takes, records the reference,
/// unmarks. `Ok(false)`: the block is free, and the entry is left at `idle` (0, or
/// [`RESERVED`] to keep it claimed; see [`release_entry_to`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn take_entry_to<E>(
    pool: &Pool<'_>,
    h: &AtomicU32,
    p: u32,
    e: u32,
    b: u32,
    idle: u32,
    mut wait: impl FnMut(Who) -> Result<(), E>,
    bad: impl Fn(Corrupt) -> E,
) -> Result<bool, E> {
    let who = Who {
        participant: p,
        record: e,
    };
    // Relaxed: published by the take's AcqRel CAS to whoever sees our mark.
    h.store(TAKING | (b + 1), Ordering::Relaxed);
    loop {
        let took = match pool.take(b, who) {
            Ok(t) => t,
            Err(c) => {
                // Nothing was taken (the word failed validation before any CAS): the entry
                // goes back to `idle`, so that a scribbled word costs its reader no entry.
                // Release: pairs with the Acquire load in `settle_entry`.
                h.store(idle, Ordering::Release);
                return Err(bad(c));
            }
        };
        match took {
            Take::Taken => break,
            Take::Free => {
                // Release: pairs with the Acquire load in `settle_entry`.
                h.store(idle, Ordering::Release);
                return Ok(false);
            }
            Take::Busy(w) => {
                if let Err(err) = wait(w) {
                    // Release: as above.
                    h.store(idle, Ordering::Release);
                    return Err(err);
                }
            }
        }
    }
    // Release: as above.
    h.store(b + 1, Ordering::Release);
    pool.unmark(b, who);
    Ok(true)
}

/// Allocates a block for holdings entry `e` of participant `p` (the entry must be reserved by
/// the caller), scanning from `*cursor`; the entry then holds it. `None`: every block is in use
/// (the entry is left reserved).
pub(crate) fn alloc_entry(
    pool: &Pool<'_>,
    h: &AtomicU32,
    p: u32,
    e: u32,
    cursor: &mut u32,
) -> Option<u32> {
    let who = Who {
        participant: p,
        record: e,
    };
    // Relaxed: published by the claim's AcqRel CAS.
    let b = pool.alloc(who, cursor, |b| {
        h.store(TAKING | (b + 1), Ordering::Relaxed)
    })?;
    // Release: pairs with the Acquire load in `settle_entry`.
    h.store(b + 1, Ordering::Release);
    pool.unmark(b, who);
    Some(b)
}

/// Releases the reference a publish record (`pub_old`, holding `b + 1`) holds, as
/// [`release_entry`] does for a holdings entry; the record goes `b + 1 -> DONE_OLD | b + 1 ->
/// 0`.
pub(crate) fn release_old<E>(
    pool: &Pool<'_>,
    rec: &AtomicU64,
    p: u32,
    b: u32,
    mut wait: impl FnMut(Who) -> Result<(), E>,
    bad: impl Fn(Corrupt) -> E,
) -> Result<bool, E> {
    let who = Who {
        participant: p,
        record: PUB_OLD,
    };
    let freed = loop {
        match pool.drop_ref(b, who) {
            Ok(Dropped::Done { freed }) => break freed,
            Ok(Dropped::Busy(w)) => wait(w)?,
            Err(c) => {
                // The block's word cannot hold the record's reference (a scribbled word, or
                // a forged descriptor naming a block the slot never held): the record is
                // cleared, leaking what it may hold, rather than kept for a retry that would
                // drop a reference the block came to hold for someone else since. Release:
                // pairs with the Acquire load in `settle_old`.
                rec.store(0, Ordering::Release);
                return Err(bad(c));
            }
        }
    };
    crash::point();
    // Release: pairs with the Acquire load in `settle_old`.
    rec.store(DONE_OLD | (b as u64 + 1), Ordering::Release);
    crash::point();
    pool.unmark(b, who);
    crash::point();
    // Release: as above.
    rec.store(0, Ordering::Release);
    Ok(freed)
}

/// `pub_old` bit: the reference was dropped, the mark may remain.
pub(crate) const DONE_OLD: u64 = 1 << 63;
/// `pub_old` bit: the record's reference is the block's only one, kept past its publish for
/// the owner's next loan (`Pool::keep_sole`). Set only by the owner, after that check; any
/// other store of the record clears it, so a loan never adopts a reference the record came
/// to hold some other way. A reclaimer treats the record as holding `b` either way.
pub(crate) const KEPT_OLD: u64 = 1 << 62;

/// Settles a dead participant's publish record `pub_old`: returns the block it still holds a
/// reference on (the record then holds `b + 1`), or clears it.
pub(crate) fn settle_old(pool: &Pool<'_>, rec: &AtomicU64, p: u32) -> Result<Option<u32>, Corrupt> {
    let who = Who {
        participant: p,
        record: PUB_OLD,
    };
    // Acquire: pairs with the owner's Release stores.
    let v = rec.load(Ordering::Acquire);
    let link = (v & 0xffff_ffff) as u32;
    if link == 0 {
        // Release: pairs with the Acquire load above, for the next reclaimer.
        rec.store(0, Ordering::Release);
        return Ok(None);
    }
    let b = link - 1;
    if v & DONE_OLD != 0 || !pool.has(b) {
        // Dropped already; or a block past the pool (a descriptor a scribbling peer left in a
        // ring slot, which a publish then displaced into the record), which holds no
        // reference: cleared, as in `settle_entry`, so that the owner's next publish and
        // every reclaim do not fail on it for ever.
        if pool.state(b).is_ok() {
            // Dropped: the record says so already. Past the pool: `state` failed.
            pool.settle(b, who, false, |_| {})?;
        }
        // Release: as above.
        rec.store(0, Ordering::Release);
        return Ok(None);
    }
    let record = |settled| {
        if settled == Settled::Nothing {
            // Release: pairs with the Acquire load above, for a later reclaimer.
            rec.store(DONE_OLD | u64::from(link), Ordering::Release);
        }
    };
    match pool.settle(b, who, false, record)? {
        Settled::Holds => Ok(Some(b)),
        Settled::Nothing => {
            // Release: as above.
            rec.store(0, Ordering::Release);
            Ok(None)
        }
    }
}

/// Where a test kills a reclaimer: between the stores of [`Pool::settle`], a panic at the
/// `n`th point a thread passes after [`crash::arm`]`(n)` (a no-op outside the unit tests).
pub(crate) mod crash {
    #[cfg(all(test, not(loom)))]
    std::thread_local! {
        static LEFT: core::cell::Cell<Option<u32>> = const { core::cell::Cell::new(None) };
    }

    /// Panics at the `n`th [`point`] this thread passes from now on (0: the next one).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn arm(n: Option<u32>) {
        LEFT.with(|l| l.set(n));
    }

    /// A point between two stores.
    #[inline(always)]
    pub(crate) fn point() {
        #[cfg(all(test, not(loom)))]
        LEFT.with(|l| match l.get() {
            Some(0) => {
                l.set(None);
                panic!("killed between two stores");
            }
            Some(n) => l.set(Some(n - 1)),
            None => {}
        });
    }
}
