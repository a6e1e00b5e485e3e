//! Inline topics over raw memory: the seqlock broadcast ring of `ring::raw` with several
//! publishers, which claim sequences through the ring's MPMC counter (`fetch_add`), plus one
//! record per publisher of the claim it has in flight, so that a survivor can *void* a
//! sequence whose claimant died before writing it. Knows nothing of regions: liveness is
//! asked of the caller.
//!
//! A publisher's record is two words in its participant line, written by it (and cleared by
//! the survivor that takes its row after its death, [`Record::clear`]):
//! - `topic`: the tag (topic index + 1) of the inline topic it publishes, 0 for none; changed
//!   only while the publisher is idle;
//! - `seq`: [`IDLE`]` | b` between publishes, [`CLAIMING`]` | b` from just before its claim
//!   until it knows the sequence, then the claimed sequence until it has written it. `b` is a
//!   lower bound of the publisher's next claim (its previous claim on the topic + 1): the
//!   claim counter only grows, so a publisher that has not claimed yet cannot end up with a
//!   sequence below it.
//!
//! A sequence `x` whose slot is not written although the counter passed it is *stuck*. It is
//! voided (its stamp set to `ring::raw::void(x)` by one CAS, which readers skip) only when no
//! live publisher's record may hold it (`may_hold`) and its slot's previous lap is complete:
//! then nobody will ever write it, and nobody writes the slot concurrently except the producer
//! of `x + capacity`, which waits for exactly this stamp.

use crate::ring::raw::{RawRing, done, writing};
use crate::sync::{AtomicU64, Ordering};

/// Record bit: the publisher is claiming a sequence at or above the low bits.
pub(crate) const CLAIMING: u64 = 1 << 63;
/// Record bit: the publisher is idle; its next claim will be at or above the low bits.
pub(crate) const IDLE: u64 = 1 << 62;
/// The low bits of a record (a sequence, below 2^62).
pub(crate) const LOW: u64 = IDLE - 1;

/// One publisher's record of its inline claim in flight (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    /// Topic tag (index + 1), 0 none. Written by the owner; cleared after its death by the
    /// reclaimer of its row.
    pub(crate) topic: &'a AtomicU64,
    /// `IDLE | b`, `CLAIMING | b`, or a claimed sequence. Written by the owner; cleared after
    /// its death by the reclaimer of its row.
    pub(crate) seq: &'a AtomicU64,
}

impl Record<'_> {
    /// Resets the record (a fresh participant, or a survivor that took a dead one's row).
    pub(crate) fn clear(&self) {
        // Release: pairs with the Acquire loads in `unstick`.
        self.seq.store(IDLE, Ordering::Release);
        // Release: as above.
        self.topic.store(0, Ordering::Release);
    }

    /// The record's two words (Acquire: pairs with the Release stores of the owner, so that a
    /// sequence the owner finished is seen complete once its `IDLE` is seen).
    pub(crate) fn load(&self) -> (u64, u64) {
        // Acquire: see above.
        let topic = self.topic.load(Ordering::Acquire);
        // Acquire: see above.
        let seq = self.seq.load(Ordering::Acquire);
        (topic, seq)
    }
}

/// Whether a *live* publisher whose record reads `(topic, seq)` may hold (have claimed and not
/// yet written) sequence `x` of the topic tagged `tag`.
pub(crate) fn may_hold(topic: u64, seq: u64, tag: u64, x: u64) -> bool {
    if topic != tag {
        return false;
    }
    if seq & CLAIMING != 0 {
        return x >= seq & LOW;
    }
    seq & IDLE == 0 && seq == x
}

/// What a dead publisher's record says it held: `Some(x)` when it had claimed `x` (and may have
/// died before or while writing it).
pub(crate) fn held(topic: u64, seq: u64, tag: u64) -> Option<u64> {
    (topic == tag && seq & (CLAIMING | IDLE) == 0).then_some(seq)
}

/// Claims the next sequence as the publisher whose record is `rec`, on the inline topic tagged
/// `tag`: records the claim in flight, claims, records the sequence. `Err(seq)` for a claimed
/// sequence at or above `2^62 - 1` (a counter a peer scribbled on; `seq + 1` must stay below
/// bit 62), which is abandoned at once.
/// Then, once the slot is free ([`RawRing::slot_free`]), write it and call [`finish`] (or
/// [`finish`] without writing, to abandon it).
#[inline(always)]
pub(crate) fn claim(ring: &RawRing, rec: Record<'_>, tag: u64) -> Result<u64, u64> {
    // Relaxed: our own words, only we write them.
    let (topic, last) = (
        rec.topic.load(Ordering::Relaxed),
        rec.seq.load(Ordering::Relaxed),
    );
    let bound = if topic == tag && last & IDLE != 0 && last & CLAIMING == 0 {
        claim_bound(ring, last & LOW)
    } else {
        if topic != tag {
            // We are idle (every publish ends idle): switching topics is safe. Release: pairs
            // with the Acquire load in `Record::load`.
            rec.topic.store(tag, Ordering::Release);
        }
        0
    };
    // Release: pairs with the Acquire load in `Record::load`; also published by the claim's
    // Release to whoever reads the counter past our sequence.
    rec.seq.store(CLAIMING | bound, Ordering::Release);
    let seq = ring.claim();
    if seq >= LOW {
        // Release: as below.
        rec.seq.store(IDLE | bound, Ordering::Release);
        return Err(seq);
    }
    // Release: see above (a recoverer that reads this is told exactly what we hold).
    rec.seq.store(seq, Ordering::Release);
    Ok(seq)
}

/// The lower bound that a claim in flight records (`CLAIMING | bound`): a recoverer takes
/// every sequence at or above it as possibly ours. `after` is one past our previous claim on
/// the topic's tag, but a tag outlives a registration: the entry may have been unregistered
/// and registered again since, its claim counter back at 0, and a bound from the old counter
/// would let a recoverer void the sequence we are about to write. The counter now, which only
/// grows within a registration, caps it.
#[inline(always)]
pub(crate) fn claim_bound(ring: &RawRing, after: u64) -> u64 {
    // Relaxed: only a number; the claim that follows reads the counter again.
    after.min(ring.cursor().load(Ordering::Relaxed))
}

/// Ends the publish of `seq` (written, or abandoned): the record says idle.
#[inline(always)]
pub(crate) fn finish(rec: Record<'_>, seq: u64) {
    // Release: ordered after the stamp's Release store of the write, so a recoverer that sees
    // us idle sees the sequence complete (and its void CAS fails); an abandoned sequence is
    // then one nobody holds.
    rec.seq.store(IDLE | (seq + 1), Ordering::Release);
}

/// Why [`publish_exclusive`] did not publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exclusive {
    /// The claim counter is at or above `2^62 - 1` (a peer scribbled on it).
    Counter(u64),
    /// The lease word holds this value, not the caller's: the topic was taken over.
    Lease(u64),
}

/// Publishes as the only publisher of an inline topic (the ring's SPMC path: the counter is
/// ours, plain stores, no record needed: a successor continues at the counter, overwriting a
/// write this publisher left half done), holding the lease `holder` (its lease word's value).
///
/// The lease word (the ring's publishers word) is checked first ([`super::holds_lease`]); it
/// shares its line with the wake words every publish reads.
#[inline(always)]
pub(crate) fn publish_exclusive(
    ring: &RawRing,
    holder: u64,
    write: impl FnOnce(&RawRing, u64),
) -> Result<u64, Exclusive> {
    super::holds_lease(&ring.signal().publishers, holder).map_err(Exclusive::Lease)?;
    // Relaxed: the counter is written only by the lease holder, us.
    let seq = ring.cursor().load(Ordering::Relaxed);
    if seq >= LOW {
        return Err(Exclusive::Counter(seq));
    }
    write(ring, seq);
    // Release pairs with the Acquire loads of the counter (lag, stuck checks).
    ring.cursor().store(seq + 1, Ordering::Release);
    Ok(seq)
}

/// Publishes one message as the publisher whose record is `rec`, on the inline topic tagged
/// `tag` whose ring is `ring`: [`claim`], check that the topic is still `open`, wait for the
/// slot, `write(ring, seq)`, [`finish`].
///
/// `open` runs after the claim is recorded, behind the light half of a barrier, and says
/// whether the topic is still registered: whoever frees a topic runs the heavy half and then
/// looks at every record, so either it sees our claim (and leaves the ring alone) or we see
/// the topic closed (and abandon the sequence, which nobody will read: it lies past the
/// topic's end). Without it, a publisher preempted between its first check and its claim
/// could write into a ring already handed to another topic.
/// While the slot's previous lap `prev` is not complete, `wait(prev)` is called in a loop (it
/// waits a little, may unstick `prev`, and returns `Err` to give up: the claimed sequence is
/// then abandoned, and voided later by whoever finds it stuck); `wait` is made by `waiter()`
/// only then, so that a publish that does not wait never builds its state. A claimed sequence
/// at or above `2^62 - 1` is abandoned and `corrupt(seq)` returned.
///
/// The handles publish through this function, and the loom models check it.
///
/// # Errors
/// Whatever `open`, `wait` or `corrupt` returns.
#[inline(always)]
pub(crate) fn publish<E, W>(
    ring: &RawRing,
    rec: Record<'_>,
    tag: u64,
    open: impl FnOnce() -> Result<(), E>,
    write: impl FnOnce(&RawRing, u64),
    waiter: impl FnOnce() -> W,
    corrupt: impl FnOnce(u64) -> E,
) -> Result<u64, E>
where
    W: FnMut(u64) -> Result<(), E>,
{
    let seq = claim(ring, rec, tag).map_err(corrupt)?;
    if let Err(e) = open() {
        finish(rec, seq);
        return Err(e);
    }
    if !ring.slot_free(seq) {
        wait_free(ring, rec, seq, waiter())?;
    }
    write(ring, seq);
    finish(rec, seq);
    Ok(seq)
}

#[cold]
fn wait_free<E>(
    ring: &RawRing,
    rec: Record<'_>,
    seq: u64,
    mut wait: impl FnMut(u64) -> Result<(), E>,
) -> Result<(), E> {
    let prev = seq - ring.capacity();
    while !ring.slot_free(seq) {
        if let Err(e) = wait(prev) {
            // Abandon `seq`: we hold it no more.
            finish(rec, seq);
            return Err(e);
        }
    }
    Ok(())
}

/// What [`read_latest`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Latest {
    /// The newest complete sequence at or after the reader's position, copied.
    Got(u64),
    /// Nothing complete: the oldest sequence at or after the position that is claimed and not
    /// written (a claim in flight, or a dead claimant's: the reader waits there and may void
    /// it).
    Pending(u64),
    /// Nothing complete and nothing in flight: every sequence up to this one was voided (or
    /// none was claimed); the reader goes on here.
    Nothing(u64),
    /// The ring kept lapping the reader while it walked (or a peer scribbles on the stamps).
    Busy,
    /// A claim counter at or above 2^62.
    Corrupt(u64),
}

/// Reads the newest complete message of a latest-value inline topic at or after `pos` into
/// `dst` (at most the ring's value size). The newest claims of several publishers may still
/// be in flight, or voided, so it walks back from the newest claim, at most one lap and never
/// below `pos`; a slot overwritten while it walks starts the walk again from the new newest
/// claim, `retries` times at most. Whole by the seqlock: a copy is kept only if the slot's
/// stamp said `done(seq)` before and after it.
///
/// The walk's first step is inline: the newest claim, complete (as it nearly always is with
/// one publisher, and with several that are not racing), is the answer; the rest of the walk
/// is out of line.
#[inline(always)]
pub(crate) fn read_latest(ring: &RawRing, pos: u64, dst: &mut [u8], retries: u32) -> Latest {
    use crate::ring::raw::Read;
    // Acquire: pairs with the AcqRel claims (`RawRing::claim`) and the single publisher's
    // Release store in `publish_exclusive`, as in `read_latest_walk`. Written by other
    // processes: checked against `LOW` before it is used as a sequence.
    let head = ring.cursor().load(Ordering::Acquire);
    // The walk's first step: `head > pos` is its `seq > lowest` (`head - capacity < head`).
    if head <= LOW {
        // Nothing new: what the walk finds at once (its first `seq <= lowest`).
        if head <= pos {
            return Latest::Nothing(pos);
        }
        if ring.read_bytes(head - 1, dst) == Read::Value(()) {
            return Latest::Got(head - 1);
        }
    }
    read_latest_walk(ring, pos, dst, retries)
}

/// [`read_latest`]'s whole walk.
#[inline(never)]
fn read_latest_walk(ring: &RawRing, pos: u64, dst: &mut [u8], retries: u32) -> Latest {
    use crate::ring::raw::Read;
    for _ in 0..retries {
        // Acquire: pairs with the AcqRel claims (`RawRing::claim`) and the single publisher's
        // Release store in `publish_exclusive`. Written by other processes: checked, and only
        // compared or used as a sequence (a slot index is always `seq & mask`).
        let head = ring.cursor().load(Ordering::Acquire);
        if head > LOW {
            return Latest::Corrupt(head);
        }
        let lowest = pos.max(head.saturating_sub(ring.capacity()));
        let mut pending = None;
        let mut seq = head;
        let lapped = loop {
            if seq <= lowest {
                break false;
            }
            seq -= 1;
            match ring.read_bytes(seq, dst) {
                Read::Value(()) => return Latest::Got(seq),
                Read::NotYet => pending = Some(seq),
                Read::Void => {}
                Read::Overrun => break true,
            }
        };
        if !lapped {
            return match pending {
                Some(seq) => Latest::Pending(seq),
                None => Latest::Nothing(pos.max(head)),
            };
        }
    }
    Latest::Busy
}

/// The first sequence of `x`'s slot, at most `x`, that is neither written nor voided, read
/// from the slot's stamp `st` (below `done(x)`): `None` when the stamp is a lap being written
/// other than `x`, or no stamp of this slot's laps below `x` (a scribbled one).
fn first_open(st: u64, x: u64, cap: u64) -> Option<u64> {
    if st == writing(x) {
        return Some(x);
    }
    if st == 0 {
        // Never written: from the slot's first lap.
        return Some(x % cap);
    }
    // A complete lap `k` of this slot: `done(k) = 2k + 2` (even), `void(k) = 2k + 3` (odd).
    // An odd stamp is also `writing(k + 1)`, of another slot's lap: the congruence tells.
    let k = if st.is_multiple_of(2) {
        (st / 2).checked_sub(1)?
    } else {
        st.checked_sub(3)? / 2
    };
    (k < x && (x - k).is_multiple_of(cap)).then(|| k + cap)
}

/// What [`unstick`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unstuck {
    /// The sequence is complete, void or overwritten: nothing to do.
    Done,
    /// This call voided it.
    Voided,
    /// Not claimed yet, or a live publisher may hold it, or its previous lap is incomplete.
    Stuck,
}

/// Tries to unstick sequence `x` of the inline topic tagged `tag`: if the counter passed it,
/// its slot is not written, and no live publisher's record may hold it or any earlier lap of
/// its slot that was claimed and not written either ([`first_open`]), it is voided (the slot
/// goes straight from its last complete lap to `x` voided: the laps between, whose claimants
/// are dead or gave up, are overrun for their readers). `records(f)` calls `f(participant, topic, seq)` with every
/// participant's record (stopping when `f` returns false); `alive(participant)` says whether
/// its process lives (asked only of records that may hold `x`).
pub(crate) fn unstick(
    ring: RawRing,
    tag: u64,
    x: u64,
    records: impl FnOnce(&mut dyn FnMut(u32, u64, u64) -> bool),
    mut alive: impl FnMut(u32) -> bool,
) -> Unstuck {
    let st = ring.stamp_of(x);
    if st >= done(x) {
        return Unstuck::Done;
    }
    // Acquire pairs with the AcqRel claim (`RawRing::claim`): the record stores a claimant
    // made before claiming `x` are visible to the scan below.
    if ring.cursor().load(Ordering::Acquire) <= x {
        return Unstuck::Stuck;
    }
    // The first sequence of `x`'s slot that is not complete (written or voided): `x` itself
    // when its previous lap is complete (or `x` is being written by a claimant that may have
    // died), or an earlier lap, whose claimant died (or gave up) without writing it, when the
    // laps from there to `x` were all claimed and none written. Every one of them must be free
    // of live holders: a live writer of any could otherwise store its stamp over our void
    // after the next lap's producer started. A lap being written (an odd stamp other than
    // `writing(x)`) is left to its own recoverer.
    let cap = ring.capacity();
    let Some(open) = first_open(st, x, cap) else {
        return Unstuck::Stuck;
    };
    let mut held_live = false;
    records(&mut |p, topic, seq| {
        // A claim in flight (`CLAIMING | b`, b <= x) may hold any of them; a recorded
        // sequence holds one, if it is one of this slot's laps from `open` to `x`.
        let holds = may_hold(topic, seq, tag, x)
            || (topic == tag
                && seq & (CLAIMING | IDLE) == 0
                && (open..x).contains(&seq)
                && (x - seq).is_multiple_of(cap));
        if holds && alive(p) {
            held_live = true;
            return false;
        }
        true
    });
    if held_live {
        return Unstuck::Stuck;
    }
    if ring.try_void(x, st) {
        Unstuck::Voided
    } else if ring.stamp_of(x) >= done(x) {
        Unstuck::Done
    } else {
        Unstuck::Stuck
    }
}
