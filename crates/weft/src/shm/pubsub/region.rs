//! A mapped, validated region and its participants: table access (every index checked), joining
//! (claiming a participant row), the record of what each participant holds, and the reclaim of
//! a dead participant's blocks and unfinished publish.

use super::layout::{
    CONFIG_OFFSET, EXCLUSIVE, Geometry, INLINE_LATEST, INLINE_MAX, LATEST_SLOTS, MODE_BLOCKS,
    MODE_INLINE, MODE_LATEST, MemberExt, REGISTER_LOCK_OFFSET, ROLE_DEAD_PUBLISHER, ROLE_PUBLISHER,
    RegionConfig, TOPIC_CLOSED, TOPIC_CLOSING, TOPIC_FREE, TOPIC_READY, TopicEntry, TopicHot,
    TopicStatsLine, inline_area_size, inline_capacity, latest_inline_max,
};
use super::name::TOPIC_MAX;
use crate::error::{Error, ErrorKind, Result, Role};
use crate::pubsub::inline::{self, Record};
use crate::pubsub::pool::{
    self, BlockMeta, Corrupt, Entry, Pool, RESERVED, TAKING, Who, alloc_entry, release_entry,
    release_entry_to, release_old, settle_entry, settle_old, take_entry_to,
};
use crate::pubsub::ring::{Ring, Slot, undesc, writing};
use crate::ring::raw::{FLAG_MPMC, RawRing, Shape};
use crate::ring::wake;
use crate::shm::liveness::{Claim, ParticipantRow, PeerStatus};
use crate::shm::object::Object;
use crate::sync::{Arc, AtomicU32, AtomicU64, Ordering, fence};
use crate::wait::Deadline;
use alloc::string::String;
use core::ptr::NonNull;
use core::time::Duration;

/// What a typed topic records about its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeInfo {
    pub(crate) fingerprint: u64,
    pub(crate) size: u64,
    pub(crate) align: u64,
    /// The stable name (`named`), or the Rust type's path (for messages only).
    pub(crate) name: String,
    /// Whether `name` is part of the fingerprint.
    pub(crate) named: bool,
}

impl TypeInfo {
    /// How the type reads in an error message.
    pub(crate) fn describe(&self) -> String {
        if self.named {
            self.name.clone()
        } else {
            alloc::format!("{} (unnamed: checked by size and alignment)", self.name)
        }
    }
}

/// An inline topic's ring and the entry fields it was validated against, read once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InlineRing {
    pub(crate) ring: RawRing,
    /// The topic's inline area.
    pub(crate) area: u32,
    /// The message size: at most `INLINE_MAX` unless `latest`.
    pub(crate) size: u32,
    /// Whether the topic is latest-value (`INLINE_LATEST`).
    pub(crate) latest: bool,
    /// Whether the topic has one publisher at a time (`EXCLUSIVE`), from the same read.
    pub(crate) exclusive: bool,
}

/// Spin rounds of [`Region::wait_mark`] before it asks whether the marker lives and yields:
/// 1 + 2 + .. + 64 = 127 spin hints.
const MARK_SPIN_ROUNDS: u32 = 7;

/// The lease word of a single-publisher topic held by participant `p` in its claim of epoch
/// `epoch` (the row's epoch after the claim): `p + 1` in the low half, the epoch's low 32 bits
/// in the high half, so that a holder judged dead while it stood still, whose row a newcomer
/// then took and whose topic it registered again, finds another value than its own when it
/// resumes (the row alone would read the same).
pub(crate) fn lease_value(p: u32, epoch: u64) -> u64 {
    (epoch & 0xffff_ffff) << 32 | (u64::from(p) + 1)
}

/// The participant a lease word names (its low half, `p + 1`), if any: a value read from the
/// mapping, checked by the caller like any index.
pub(crate) fn lease_holder(lease: u64) -> Option<u32> {
    u32::try_from(lease & 0xffff_ffff).ok()?.checked_sub(1)
}

/// How many reclaims may nest on one thread ([`Region::reclaim_row`]). A chain a crash leaves
/// is one level per participant killed inside an operation on a block another dead one
/// holds: two or three at most in practice.
pub(crate) const RECLAIM_NESTING: u32 = 8;

#[cfg(test)]
std::thread_local! {
    /// Test-only: run once by `recover`, after it resolved the ring of the topic a dead row's
    /// inline record names, just before it voids the held sequence (where a reclaimer may be
    /// preempted while others register and free topics).
    pub(crate) static BEFORE_INLINE_UNSTICK: core::cell::RefCell<Option<alloc::boxed::Box<dyn FnOnce()>>> =
        const { core::cell::RefCell::new(None) };
}

std::thread_local! {
    /// The reclaims in progress on this thread ([`Nesting`]).
    static RECLAIMING: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
    /// The deadline of the timed call whose reclaims run on this thread
    /// ([`Region::reclaim_row_until`]): every wait on a mark inside them ends there too.
    static RECLAIM_LIMIT: core::cell::Cell<Option<Deadline>> = const { core::cell::Cell::new(None) };
}

/// The earlier of two optional deadlines (none: no deadline).
fn earliest(a: Option<Deadline>, b: Option<Deadline>) -> Option<Deadline> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.earlier(b)),
        (a, b) => a.or(b),
    }
}

/// Puts back the enclosing call's [`RECLAIM_LIMIT`] when dropped (also by an unwinding panic).
struct LimitScope(Option<Deadline>);

impl Drop for LimitScope {
    fn drop(&mut self) {
        RECLAIM_LIMIT.set(self.0);
    }
}

/// One level of reclaim on this thread, left when dropped (also by an unwinding panic).
struct Nesting;

impl Nesting {
    /// Enters a level, or `None` past [`RECLAIM_NESTING`].
    fn enter() -> Option<Nesting> {
        let depth = RECLAIMING.get();
        if depth >= RECLAIM_NESTING {
            return None;
        }
        RECLAIMING.set(depth + 1);
        Some(Nesting)
    }
}

impl Drop for Nesting {
    fn drop(&mut self) {
        RECLAIMING.set(RECLAIMING.get().saturating_sub(1));
    }
}

/// Why a dead participant's reference was not released by `Region::recover`.
enum Released {
    /// The block's word failed validation: the record is cleared.
    Corrupt,
    /// A wait on another participant's mark gave up: the record stays for a later reclaim.
    Wait(Error),
}

/// The state of one wait for a block word's mark ([`Region::wait_mark`]).
#[derive(Debug)]
pub(crate) struct MarkWait {
    /// Set at the first round after the spins: the wait ends with `Timeout` a liveness
    /// timeout later.
    deadline: Option<Deadline>,
    /// The caller's own deadline (a receive with a timeout), if earlier: the wait ends with
    /// `Timeout` then.
    limit: Option<Deadline>,
    rounds: u32,
}

impl Default for MarkWait {
    /// A wait bounded by the liveness timeout, and by the deadline of the timed call this
    /// thread's reclaims run for, if any ([`Region::reclaim_row_until`]).
    fn default() -> MarkWait {
        MarkWait {
            deadline: None,
            limit: RECLAIM_LIMIT.get(),
            rounds: 0,
        }
    }
}

impl MarkWait {
    /// A wait that also ends at `limit`.
    pub(crate) fn until(limit: Option<Deadline>) -> MarkWait {
        MarkWait {
            limit: earliest(limit, RECLAIM_LIMIT.get()),
            ..MarkWait::default()
        }
    }
}

/// A mapped region whose configuration and topic table were validated at attach.
#[derive(Debug)]
pub(crate) struct Region {
    pub(crate) obj: Arc<Object>,
    /// `obj`'s first byte, kept here so that the hot paths reach an area in one load less.
    base: NonNull<u8>,
    pub(crate) geo: Geometry,
    pub(crate) liveness: Duration,
    /// Unique in this process for the life of the process: topic handles name their region
    /// by it (an address could be reused by a later region).
    pub(crate) id: u64,
}

// SAFETY: `base` is the first byte of the mapping that `obj` keeps alive; every access
// through it is to atomics or to blocks whose ownership the pool's protocol hands out, as
// through `obj` itself (which is Send + Sync).
unsafe impl Send for Region {}
// SAFETY: as for Send.
unsafe impl Sync for Region {}

/// A region's block area as a handle keeps it: its first byte and the geometry (validated at
/// attach, kept in this process) that a block index and a length are checked against. A copy
/// held beside the handle's other fields, so that a receive reaches a block without following
/// the handle's member and region pointers. Valid while the region's mapping is: the holder
/// keeps the region alive (its `Member`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockArea {
    data: NonNull<u8>,
    pub(crate) block_size: u64,
    pub(crate) blocks: u64,
}

impl BlockArea {
    /// The first byte of block `b`, which the caller checked against `blocks`.
    #[inline(always)]
    pub(crate) fn block(&self, b: u32) -> *mut u8 {
        debug_assert!((b as u64) < self.blocks);
        // SAFETY: `b < blocks` (checked by the caller), so the block lies inside the data
        // area, which attach checked against the mapping.
        unsafe {
            self.data
                .as_ptr()
                .add((self.block_size * b as u64) as usize)
        }
    }
}

/// The shape of an inline topic's ring.
pub(crate) fn inline_shape(slots: u64, size: u32) -> Shape {
    Shape {
        capacity: inline_capacity(slots, size),
        value_size: size as u64,
        gates: 0,
        flags: FLAG_MPMC,
        watermark: 0,
    }
}

pub(crate) fn corrupt(obj: &Object, c: Corrupt) -> Error {
    Error::corrupt(obj.name(), c.what, c.value, c.expected)
}

/// What `Region::mark_publisher` changed, for `Region::unmark_publisher`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marked {
    /// The publisher's bit was not set before.
    new: bool,
    /// The `died` statistic it cleared.
    died: u64,
}

/// How many times a reader without the registration lock reads an entry that keeps being
/// registered again before it gives up (`Region::same_registration`).
pub(crate) const REREADS: u32 = 64;

impl Region {
    /// Validates the configuration line and the topic table of an opened (or freshly created)
    /// region object.
    pub(crate) fn attach(obj: Arc<Object>, liveness: Duration) -> Result<Arc<Region>> {
        // SAFETY: RegionConfig is all atomics: valid for any bit pattern, shareable.
        let cfg: &RegionConfig = unsafe { obj.at(CONFIG_OFFSET)? };
        let geo = Geometry::load(obj.name(), cfg, obj.len())?;
        static IDS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
        // Relaxed: a unique number, nothing is published through it.
        let id = IDS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        // SAFETY: a mapping is never at null. `obj`, owned by the region, keeps it mapped for
        // the region's life, so `base` stays valid as long as the region.
        let base = unsafe { NonNull::new_unchecked(obj.base()) };
        let region = Region {
            obj,
            base,
            geo,
            liveness,
            id,
        };
        // Every entry is validated, each from one registration (publishers may be registering
        // and unregistering topics meanwhile).
        for i in 0..geo.topics as u32 {
            region.stable(i, || {
                Ok(match region.topic_name(i)? {
                    Some(_) => {
                        region.topic_flags(i)?;
                        region.topic_type(i).map(|_| Some(()))?
                    }
                    None => None,
                })
            })?;
        }
        Ok(Arc::new(region))
    }

    /// `n` values of `T` at `offset`.
    ///
    /// # Safety
    /// `T` is all atomics (valid for any bit pattern, shareable), and `offset .. offset + n *
    /// size_of::<T>()` is one of the areas of [`Geometry`], which `attach` checked to lie
    /// inside the mapping; `offset` is aligned for `T` (every area starts on 64 bytes).
    unsafe fn slice<T>(&self, offset: u64, n: u64) -> &[T] {
        debug_assert!(offset + n * core::mem::size_of::<T>() as u64 <= self.obj.len());
        // SAFETY: per the caller's contract; the mapping lives as long as `self.obj`.
        unsafe {
            core::slice::from_raw_parts(
                self.base.as_ptr().add(offset as usize) as *const T,
                n as usize,
            )
        }
    }

    #[inline(always)]
    fn check(&self, what: &'static str, i: u32, n: u64) -> Result<()> {
        if (i as u64) < n {
            Ok(())
        } else {
            Err(self.out_of_table(what, i))
        }
    }

    /// The error of an index outside its table, out of the callers' line.
    #[cold]
    #[inline(never)]
    fn out_of_table(&self, what: &'static str, i: u32) -> Error {
        Error::corrupt(self.obj.name(), what, i as u64, "an index inside its table")
    }

    pub(crate) fn row(&self, i: u32) -> Result<&ParticipantRow> {
        self.check("participant index", i, self.geo.participants)?;
        // SAFETY: the rows area holds `participants` rows of 64 bytes (Geometry).
        Ok(
            &unsafe { self.slice::<ParticipantRow>(self.geo.rows, self.geo.participants) }
                [i as usize],
        )
    }

    pub(crate) fn row_offset(&self, i: u32) -> u64 {
        self.geo.rows + 64 * i as u64
    }

    pub(crate) fn ext(&self, i: u32) -> Result<&MemberExt> {
        self.check("participant index", i, self.geo.participants)?;
        // SAFETY: the extension area holds `participants` lines (Geometry).
        Ok(&unsafe { self.slice::<MemberExt>(self.geo.ext, self.geo.participants) }[i as usize])
    }

    pub(crate) fn holdings(&self, i: u32) -> Result<&[AtomicU32]> {
        self.check("participant index", i, self.geo.participants)?;
        let off = self.geo.holdings + 4 * self.geo.held * i as u64;
        // SAFETY: the holdings area holds `held` words per participant (Geometry).
        Ok(unsafe { self.slice::<AtomicU32>(off, self.geo.held) })
    }

    pub(crate) fn topic(&self, i: u32) -> Result<&TopicEntry> {
        self.check("topic index", i, self.geo.topics)?;
        // SAFETY: the topic table holds `topics` entries of 256 bytes (Geometry).
        Ok(&unsafe { self.slice::<TopicEntry>(self.geo.topic_table, self.geo.topics) }[i as usize])
    }

    pub(crate) fn hot(&self, i: u32) -> Result<&TopicHot> {
        self.check("topic index", i, self.geo.topics)?;
        // SAFETY: one hot line per topic (Geometry).
        Ok(&unsafe { self.slice::<TopicHot>(self.geo.hot, self.geo.topics) }[i as usize])
    }

    pub(crate) fn stats(&self, i: u32) -> Result<&TopicStatsLine> {
        self.check("topic index", i, self.geo.topics)?;
        // SAFETY: one statistics line per topic (Geometry).
        Ok(&unsafe { self.slice::<TopicStatsLine>(self.geo.stats, self.geo.topics) }[i as usize])
    }

    /// The slots of a topic's descriptor ring: [`LATEST_SLOTS`] for a latest topic, the
    /// region's `ring_slots` for a blocks topic.
    pub(crate) fn ring_slots(&self, latest: bool) -> u64 {
        if latest {
            LATEST_SLOTS
        } else {
            self.geo.ring_slots
        }
    }

    /// Topic `i`'s descriptor ring, for a registration of a latest topic (`latest`) or of a
    /// blocks topic.
    pub(crate) fn ring(&self, i: u32, latest: bool) -> Result<Ring<'_>> {
        Ok(self.ring_hot(i, latest)?.0)
    }

    /// Every slot of topic `i`'s ring area (`ring_slots` of them, whatever the mode).
    fn ring_area(&self, i: u32) -> Result<Ring<'_>> {
        self.ring(i, false)
    }

    /// Topic `i`'s ring (as [`Region::ring`]) and hot line.
    #[inline(always)]
    pub(crate) fn ring_hot(&self, i: u32, latest: bool) -> Result<(Ring<'_>, &TopicHot)> {
        let hot = self.hot(i)?;
        let off = self.geo.rings + 16 * self.geo.ring_slots * i as u64;
        // SAFETY: `ring_slots` slots of 16 bytes per topic (Geometry), of which the ring uses
        // the first `ring_slots(latest)`: a power of two (validated by Geometry::new, or the
        // constant 2), never more than `ring_slots` (at least 2).
        let slots = unsafe { self.slice::<Slot>(off, self.ring_slots(latest)) };
        Ok((Ring::new(&hot.tail, slots), hot))
    }

    /// Fits the stamps of topic `i`'s ring to a new registration of the entry whose ring has
    /// `ring_slots(latest)` slots, and returns its first sequence: the tail, where the entry's
    /// earlier registrations left it. Every sequence below the tail was committed or voided,
    /// and the freeing released every descriptor; but an earlier registration's ring may have
    /// had another number of slots, so a slot may hold a sequence other than the one a claim of
    /// the new registration expects (the previous lap's, `Ring::free_stamp`). The caller holds
    /// the registration lock, and the entry is free.
    pub(crate) fn restamp(&self, i: u32, latest: bool) -> Result<u64> {
        let ring = self.ring(i, latest)?;
        // A tail past the sequence limit on a free entry is a scribbling peer's: it carries no
        // sequence on, and the registration restarts it from 0 rather than fail (and fail every
        // later registration, which all take the first free entry).
        let tail = ring.tail().unwrap_or_else(|_| {
            ring.reset_tail();
            0
        });
        for q in tail..tail + ring.cap() {
            let slot = ring.slot(q);
            // Relaxed (both): published by the Release store of READY that follows; nobody
            // claims or reads the ring of a free entry.
            slot.stamp.store(ring.free_stamp(q), Ordering::Relaxed);
            // None should be left: one would be a reference the freeing did not release, and
            // is leaked rather than released twice.
            slot.desc.store(0, Ordering::Relaxed);
        }
        Ok(tail)
    }

    /// The first byte of inline area `k` (checked against the number of areas).
    pub(crate) fn inline_base(&self, k: u32) -> Result<NonNull<u8>> {
        self.check("inline area", k, self.geo.inline_topics)?;
        let off = self.geo.inline + inline_area_size(self.geo.ring_slots) * k as u64;
        // SAFETY: area `k` lies inside the inline areas, which attach checked against the
        // mapping; the mapping is never at null.
        Ok(unsafe { self.base.add(off as usize) })
    }

    /// The inline area and message size of topic `i` (mode inline), validated.
    pub(crate) fn inline_fields(&self, i: u32) -> Result<(u32, u32)> {
        let t = self.topic(i)?;
        // Relaxed: the caller loaded the entry's state with Acquire first; checked here.
        let area = t.inline_area.load(Ordering::Relaxed);
        let size = t.msg_size.load(Ordering::Relaxed);
        self.check("inline area", area, self.geo.inline_topics)?;
        if size == 0 || size as u64 > latest_inline_max(self.geo.ring_slots) {
            return Err(Error::corrupt(
                self.obj.name(),
                "inline message size",
                size as u64,
                "1 ..= 56 bytes, or up to 16 * ring_slots - 8 for a latest-value topic",
            ));
        }
        Ok((area, size))
    }

    /// The flags of topic `i` ([`EXCLUSIVE`], [`INLINE_LATEST`]), validated.
    pub(crate) fn topic_flags(&self, i: u32) -> Result<u32> {
        // Relaxed: the caller loaded the entry's state with Acquire first; checked here.
        let f = self.topic(i)?.flags.load(Ordering::Relaxed);
        if f & !(EXCLUSIVE | INLINE_LATEST) != 0 {
            return Err(Error::corrupt(
                self.obj.name(),
                "topic flags",
                f as u64,
                "0 ..= 3",
            ));
        }
        Ok(f)
    }

    /// Whether topic `i` has one publisher at a time (its lease).
    pub(crate) fn topic_exclusive(&self, i: u32) -> Result<bool> {
        Ok(self.topic_flags(i)? & EXCLUSIVE != 0)
    }

    /// Takes the lease word `lease` of a single-publisher topic (topic path `topic`) for
    /// participant `me` (kept if we hold it; taken over from a dead holder); `counter` is the
    /// sequence counter the holder advances alone (an inline ring's cursor, a blocks topic's
    /// tail).
    ///
    /// Returns whether the lease is newly ours (`false`: we held it already).
    ///
    /// # Errors
    /// [`Error::InUse`], naming the topic, while another live participant holds it;
    /// [`Error::Corrupt`] when the word changes under every one of [`REREADS`] attempts.
    pub(crate) fn take_lease(
        &self,
        lease: &AtomicU64,
        counter: &AtomicU64,
        topic: &str,
        me: u32,
        mine: u64,
    ) -> Result<bool> {
        // Takers of a dead holder's lease race once: the loser then sees a live holder. A
        // word that keeps changing is a peer writing it.
        for _ in 0..REREADS {
            // Acquire pairs with the Release store in `release_leases`: the previous holder's
            // counter is visible to us.
            let cur = lease.load(Ordering::Acquire);
            if cur == mine {
                return Ok(false);
            }
            if cur != 0 {
                // Another process may write this word: an index like any other. Our own row
                // under another claim is a previous owner's lease (dead: we took its row).
                let holder = lease_holder(cur).unwrap_or(u32::MAX);
                if holder != me
                    && let Ok(row) = self.row(holder)
                    && row.status(self.liveness) == PeerStatus::Alive
                {
                    return Err(Error::InUse {
                        name: alloc::format!("{}{topic}", self.obj.name()),
                        role: Role::Publisher,
                        pid: row.pid(),
                    });
                }
            }
            // SYNC POINT: AcqRel: Acquire as above; Release pairs with the Acquire load of
            // a later taker.
            if lease
                .compare_exchange(cur, mine, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // The counter as the previous holder (dead or gone) left it. Acquire: pairs
                // with its last Release store of the counter.
                let _ = counter.load(Ordering::Acquire);
                return Ok(true);
            }
        }
        Err(Error::corrupt(
            self.obj.name(),
            "single-publisher lease",
            lease.load(Ordering::Relaxed),
            "a word that changes only when a holder dies or leaves",
        ))
    }

    /// Gives back a lease `take_lease` newly took for `me` (a handle that was not made after
    /// all). Nothing happens if the word no longer names `me`.
    pub(crate) fn drop_lease(&self, lease: &AtomicU64, mine: u64) {
        // SYNC POINT: Release pairs with the Acquire load in `take_lease`, as in
        // `release_leases`.
        let _ = lease.compare_exchange(mine, 0, Ordering::Release, Ordering::Relaxed);
    }

    /// Whether a live participant other than `me` may still write into topic `t`'s ring
    /// (`tag = t + 1`), so that `free_topic` must keep it. A dead writer's claim is settled
    /// here (its row reclaimed). Each writer announces itself in a record, then checks that the
    /// topic is still open behind the light half of the machine-wide barrier; the heavy half
    /// runs here before the records are read (Dekker): either we see the record, or the writer
    /// sees the topic closed and stops.
    /// - An inline topic: a participant whose inline record names it with a claim in flight
    ///   (`inline::publish` checks after its claim and abandons the sequence). A
    ///   single-publisher topic needs no look: only its lease holder has a handle to it, so
    ///   only the lease holder unregisters it, and not in the middle of its own publish.
    /// - A blocks or latest topic: a participant whose publish record names it (it wrote
    ///   `pub_topic` and may not have claimed yet; `Publisher::publish_block` checks before it
    ///   claims).
    pub(crate) fn writers(&self, tag: u64, me: u32, inline_topic: bool) -> Result<bool> {
        if !self.machine_handshake(me)? {
            // A writer in another process may have skipped its fence, and no barrier made up
            // for it: its record may not be visible yet. Keep the ring.
            return Ok(true);
        }
        for p in 0..self.geo.participants as u32 {
            if p == me {
                continue;
            }
            let names = if inline_topic {
                let (topic, seq) = self.inline_record(p)?.load();
                topic == tag && seq & inline::IDLE == 0
            } else {
                // Acquire: pairs with the owner's Release store of its record.
                self.ext(p)?.pub_topic.load(Ordering::Acquire) == tag
            };
            if !names {
                continue;
            }
            if self.row(p)?.status(self.liveness) == PeerStatus::Alive {
                return Ok(true);
            }
            // A dead writer: what it claimed is finished or voided with the rest of its row.
            self.reclaim_row(p)?;
        }
        Ok(false)
    }

    /// The heavy half of the machine-wide Dekker handshake (`ring::wake`), run by a freer
    /// before it reads other participants' records; says whether every live participant other
    /// than `me` is ordered against it. The `membarrier` call orders them all. If it fails, its
    /// own SeqCst fence only orders participants that fence their own side (their `fenced`
    /// word is their row's owner word: pid and start time, so that a previous owner's value,
    /// even of the same pid in another pid namespace, does not count); anyone else makes the
    /// caller keep what it was about to free.
    pub(crate) fn machine_handshake(&self, me: u32) -> Result<bool> {
        if wake::heavy(wake::Reach::Machine) {
            return Ok(true);
        }
        for p in 0..self.geo.participants as u32 {
            if p == me {
                continue;
            }
            let row = self.row(p)?;
            // Relaxed: see `Member::join`; a stale value only keeps the entry.
            if row.status(self.liveness) == PeerStatus::Alive
                && self.ext(p)?.fenced.load(Ordering::Relaxed) != row.owner_id()
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Gives up every lease participant `i` holds (inline rings' and topics' hot lines).
    fn release_leases(&self, i: u32) -> Result<()> {
        for k in 0..self.geo.inline_topics as u32 {
            // SAFETY: the area lies in the mapping (inline_base) and starts with a ring
            // header of atomics; the mapping lives as long as `self`.
            let lease = unsafe { RawRing::publishers_word(self.inline_base(k)?) };
            Self::release_lease_of(lease, i);
        }
        for t in 0..self.geo.topics as u32 {
            Self::release_lease_of(&self.hot(t)?.lease, i);
        }
        Ok(())
    }

    /// Clears lease word `lease` if it names row `i` (any claim of it: our own, or a dead
    /// holder's, whose row we hold).
    fn release_lease_of(lease: &AtomicU64, i: u32) {
        // Relaxed: the CAS below decides.
        let cur = lease.load(Ordering::Relaxed);
        if lease_holder(cur) == Some(i) {
            // SYNC POINT: Release pairs with the Acquire load in `take_lease`.
            let _ = lease.compare_exchange(cur, 0, Ordering::Release, Ordering::Relaxed);
        }
    }

    /// The ring of inline topic `i`, its header validated, with the fields it was validated
    /// against. The topic's flags are read once, here: a caller that needs to know whether the
    /// topic is latest-value takes it from the result, never from a second read that a hostile
    /// peer could have changed in between.
    pub(crate) fn inline_ring(&self, i: u32) -> Result<InlineRing> {
        let (area, size) = self.inline_fields(i)?;
        let flags = self.topic_flags(i)?;
        let latest = flags & INLINE_LATEST != 0;
        // Only a latest-value topic carries messages larger than a line's slot (receivers of
        // other inline topics copy into a buffer of INLINE_MAX bytes).
        if size as usize > INLINE_MAX && !latest {
            return Err(Error::corrupt(
                self.obj.name(),
                "inline message size",
                size as u64,
                "1 ..= 56 bytes for an inline topic that is not latest-value",
            ));
        }
        let base = self.inline_base(area)?;
        let len = inline_area_size(self.geo.ring_slots) as usize;
        // SAFETY: the area lies inside the mapping (inline_base), is 64-aligned (the inline
        // areas start on 64 bytes and each is a multiple of 64), holds only atomics, and the
        // mapping lives as long as `self`, which every user of the ring keeps.
        let ring = unsafe { RawRing::attach(base, len, size as u64, FLAG_MPMC, self.obj.name()) }?;
        if ring.capacity() != inline_capacity(self.geo.ring_slots, size) {
            return Err(Error::corrupt(
                self.obj.name(),
                "inline ring capacity",
                ring.capacity(),
                "ring_slots slots (fewer for messages above 56 bytes)",
            ));
        }
        // An inline ring has no gates and no watermark (its publishers never wait for a
        // subscriber): a peer that wrote either has damaged the area.
        if ring.gate_count() != 0 {
            return Err(Error::corrupt(
                self.obj.name(),
                "inline ring gate count",
                ring.gate_count() as u64,
                "0",
            ));
        }
        if ring.watermark() != 0 {
            return Err(Error::corrupt(
                self.obj.name(),
                "inline ring watermark",
                ring.watermark(),
                "0",
            ));
        }
        Ok(InlineRing {
            ring,
            area,
            size,
            latest,
            exclusive: flags & EXCLUSIVE != 0,
        })
    }

    /// The record of participant `p`'s inline claim in flight.
    pub(crate) fn inline_record(&self, p: u32) -> Result<Record<'_>> {
        let ext = self.ext(p)?;
        Ok(Record {
            topic: &ext.inl_topic,
            seq: &ext.inl_seq,
        })
    }

    /// Tries to unstick sequence `x` of inline topic `t` (see `pubsub::inline::unstick`):
    /// voids it when it was claimed and no live publisher may hold it. Returns whether `x` is
    /// now complete, void or overwritten.
    pub(crate) fn unstick_inline(&self, t: u32, ring: RawRing, x: u64) -> bool {
        self.unstick_inline_but(t, ring, x, None)
    }

    /// [`Region::unstick_inline`], not counting row `skip`'s record as a holder's (the row a
    /// reclaimer holds, whose claim it is settling).
    fn unstick_inline_but(&self, t: u32, ring: RawRing, x: u64, skip: Option<u32>) -> bool {
        use crate::pubsub::inline::Unstuck;
        let n = self.geo.participants as u32;
        let voided = inline::unstick(
            ring,
            t as u64 + 1,
            x,
            |f| {
                for p in 0..n {
                    if Some(p) == skip {
                        continue;
                    }
                    if let Ok(rec) = self.inline_record(p) {
                        let (topic, seq) = rec.load();
                        if !f(p, topic, seq) {
                            return;
                        }
                    }
                }
            },
            |p| {
                self.row(p)
                    .is_ok_and(|r| r.status(self.liveness) == PeerStatus::Alive)
            },
        );
        match voided {
            Unstuck::Done => true,
            Unstuck::Stuck => false,
            Unstuck::Voided => {
                if let Ok(s) = self.stats(t) {
                    // Relaxed: a statistic.
                    s.recovered.fetch_add(1, Ordering::Relaxed);
                }
                let s = ring.signal();
                crate::ring::wake::wake_always(&s.notify);
                true
            }
        }
    }

    pub(crate) fn pool(&self) -> Pool<'_> {
        // SAFETY: the metadata area holds `blocks` lines of 64 bytes, one `BlockMeta` each,
        // 64-aligned (Geometry).
        let meta = unsafe { self.slice::<BlockMeta>(self.geo.meta, self.geo.blocks) };
        Pool::new(meta)
    }

    /// A wait of `recover` (of row `i`) on `w`'s mark on block `b`. A mark naming `i` itself
    /// is a scribbled one: the settle at the start of the reclaim cleared every mark that one
    /// of `i`'s records names, and nothing else of `i` runs while the row is held. It is
    /// cleared (nobody else writes a marked word), and the release goes on; waited on, it
    /// failed every reclaim of the row, and every join that took it, with `Timeout`.
    fn recover_wait(&self, w: Who, i: u32, b: u32, wait: &mut MarkWait) -> Result<(), Released> {
        if w.participant == i {
            self.pool().unmark(b, w);
        }
        self.wait_mark(w, i, wait)
            .map_err(|e| self.released_after(w, e))
    }

    /// Why a reclaim's wait on `w`'s mark failed with `e`: a mark that names no participant
    /// of the table (`wait_mark` finds no row for it), or one that outlived the liveness
    /// timeout on a row no process holds (never claimed, or let go, which settles every mark),
    /// is a scribbled word, and counts as the word failing validation: the record is cleared
    /// instead of failing every reclaim of its row, and every join that takes the row, for
    /// ever. A wait on a live marker stays a wait that gave up.
    fn released_after(&self, w: Who, e: Error) -> Released {
        let stale = match e.kind() {
            ErrorKind::Corrupt => true,
            ErrorKind::Timeout => self.row(w.participant).map_or(true, |row| {
                matches!(
                    row.status(self.liveness),
                    PeerStatus::Absent | PeerStatus::Closed
                )
            }),
            _ => false,
        };
        if stale {
            Released::Corrupt
        } else {
            Released::Wait(e)
        }
    }

    /// Waits while another participant (`w`) has an operation on a block in flight: a dead
    /// one's row is reclaimed (which finishes or undoes it), a live one is given the CPU. A mark
    /// that stays for longer than the liveness timeout is `Timeout`: a live participant that
    /// never finishes, or a mark that no reclaim clears because no record names the block (a
    /// hostile peer wrote it).
    ///
    /// A mark lasts a few stores (the marker's record, then the store that clears it), so the
    /// first rounds only spin, 1, 2, 4 .. 64 hints (`MARK_SPIN_ROUNDS`); asking whether the
    /// marker lives (a /proc read for another process, microseconds) and yielding waits for
    /// a wait that outlasts them. A subscriber of another process that asked at once, on every
    /// round, stalled long enough for its publisher to lap it.
    pub(crate) fn wait_mark(&self, w: Who, me: u32, wait: &mut MarkWait) -> Result<()> {
        let row = self.row(w.participant)?;
        let round = wait.rounds;
        wait.rounds = round.saturating_add(1);
        if round < MARK_SPIN_ROUNDS {
            for _ in 0..(1u32 << round) {
                crate::sync::spin_loop();
            }
            return Ok(());
        }
        // The clock is read once the spins are over (a mark that clears during them costs
        // none); the timeout runs from there.
        let d = *wait
            .deadline
            .get_or_insert_with(|| Deadline::after(self.liveness));
        if d.expired() || wait.limit.is_some_and(|l| l.expired()) {
            return Err(Error::Timeout);
        }
        if w.participant != me && !matches!(row.status(self.liveness), PeerStatus::Alive) {
            // The reclaim settles the marker's operation in flight first; one that fails
            // later (a wait of its own that gave up) has still cleared this mark, or the wait
            // goes on, to its own deadline. Its error is not this wait's: passed up, it ended
            // the wait of a nested reclaim as if this mark had timed out.
            let _ = self.reclaim_row(w.participant);
        }
        crate::sync::yield_now();
        Ok(())
    }

    /// The registration lock's word (`participant + 1` of its holder, 0 free).
    pub(crate) fn register_lock(&self) -> Result<&AtomicU64> {
        // SAFETY: the lock word has its own line at REGISTER_LOCK_OFFSET, inside every region;
        // an atomic is valid for any bit pattern and shareable.
        unsafe { self.obj.at(REGISTER_LOCK_OFFSET) }
    }

    /// The block area, resolved for a handle to keep ([`BlockArea`]).
    #[inline(always)]
    pub(crate) fn block_area(&self) -> BlockArea {
        BlockArea {
            // SAFETY: `geo.data` lies inside the mapping (attach checked the data area
            // against it).
            data: unsafe { self.base.add(self.geo.data as usize) },
            block_size: self.geo.block_size,
            blocks: self.geo.blocks,
        }
    }

    /// The first byte of block `b` (checked against the pool size).
    #[inline(always)]
    pub(crate) fn block_ptr(&self, b: u32) -> Result<*mut u8> {
        self.check("block index", b, self.geo.blocks)?;
        Ok(self.block_area().block(b))
    }

    /// The state of entry `i`, validated.
    pub(crate) fn topic_state(&self, i: u32) -> Result<u32> {
        // SYNC POINT: Acquire pairs with the Release stores of `state` in `register`,
        // `unregister` and `free_topic`: what was written before them is visible.
        let state = self.topic(i)?.state.load(Ordering::Acquire);
        match state {
            TOPIC_FREE | TOPIC_READY | TOPIC_CLOSING | TOPIC_CLOSED => Ok(state),
            _ => Err(Error::corrupt(
                self.obj.name(),
                "topic state",
                state as u64,
                "0 (free), 2 (ready), 3 (closing) or 4 (closed)",
            )),
        }
    }

    /// The generation of entry `i` (see `TopicEntry::generation`).
    pub(crate) fn topic_generation(&self, i: u32) -> Result<u32> {
        // Acquire: keeps the reads of the entry's other fields after it (it opens the window
        // that `same_registration` closes).
        Ok(self.topic(i)?.generation.load(Ordering::Acquire))
    }

    /// Whether entry `i` still holds registration `generation`, read by the caller (through
    /// `find_topic` or `topic_generation`) before the entry fields it has read since: `false`
    /// when the entry was freed or registered again in between, so that those fields may mix
    /// two registrations. A registration increments the generation before it writes any other
    /// field, and no field changes under the registration lock, so under the lock this is
    /// always `true` (unless a peer scribbled on the word).
    pub(crate) fn same_registration(&self, i: u32, generation: u32) -> Result<bool> {
        let t = self.topic(i)?;
        // SYNC POINT: Acquire fence pairs with the Release fence after a registration's
        // increment: if any field read before this fence was written by a later registration
        // (of this entry, or of another entry now using this one's old inline area), the
        // state and generation loaded below are that registration's or later.
        fence(Ordering::Acquire);
        // The state first: the entry may have been freed (state 0, generation unchanged) and
        // registered again (generation + 1, then state 2) between two loads; in this order a
        // state of the later registration comes with its generation (Acquire: pairs with the
        // Release store of READY, which follows the increment).
        if self.topic_state(i)? == TOPIC_FREE {
            return Ok(false);
        }
        // Relaxed: ordered after the Acquire load of the state.
        Ok(t.generation.load(Ordering::Relaxed) == generation)
    }

    /// The mode of topic `i`, validated (an inline topic's fields too), or `None` while the
    /// entry is free: one read of each, without building the name.
    pub(crate) fn entry_mode(&self, i: u32) -> Result<Option<u32>> {
        let t = self.topic(i)?;
        if self.topic_state(i)? == TOPIC_FREE {
            return Ok(None);
        }
        // Relaxed: ordered after the Acquire load of `state`; checked.
        let mode = t.mode.load(Ordering::Relaxed);
        if !matches!(mode, MODE_BLOCKS | MODE_LATEST | MODE_INLINE) {
            return Err(Error::corrupt(
                self.obj.name(),
                "topic mode",
                mode as u64,
                "1 (blocks), 2 (latest) or 3 (inline)",
            ));
        }
        if mode == MODE_INLINE {
            self.inline_fields(i)?;
        }
        Ok(Some(mode))
    }

    /// The name and mode of topic `i` if it is registered (or being unregistered), validated.
    pub(crate) fn topic_name(&self, i: u32) -> Result<Option<(String, u32)>> {
        let Some(mode) = self.entry_mode(i)? else {
            return Ok(None);
        };
        let t = self.topic(i)?;
        // Relaxed: ordered after the Acquire load of `state` in `entry_mode`; checked.
        let len = t.name_len.load(Ordering::Relaxed) as usize;
        if !(2..=TOPIC_MAX).contains(&len) {
            return Err(Error::corrupt(
                self.obj.name(),
                "topic name length",
                len as u64,
                "2 ..= 127",
            ));
        }
        let mut bytes = alloc::vec::Vec::with_capacity(len);
        for k in 0..len {
            // Relaxed: as above.
            let w = t.name[k / 8].load(Ordering::Relaxed);
            bytes.push((w >> ((k % 8) * 8)) as u8);
        }
        let name = String::from_utf8(bytes)
            .ok()
            .filter(|n| super::name::validate_topic(n).is_ok())
            .ok_or_else(|| {
                Error::corrupt(
                    self.obj.name(),
                    "topic name",
                    i as u64,
                    "a valid topic path",
                )
            })?;
        Ok(Some((name, mode)))
    }

    /// The recorded type of topic `i` (registered), validated; `None` for an untyped topic.
    pub(crate) fn topic_type(&self, i: u32) -> Result<Option<TypeInfo>> {
        let t = self.topic(i)?;
        // The mode, read once (with the state): the size bound below depends on it.
        let Some(mode) = self.entry_mode(i)? else {
            return Ok(None);
        };
        // Relaxed: ordered after the Acquire load of `state`; each value is checked.
        let type_flags = t.type_flags.load(Ordering::Relaxed);
        if type_flags & !super::layout::TYPE_NAMED != 0 {
            return Err(Error::corrupt(
                self.obj.name(),
                "topic type flags",
                type_flags as u64,
                "0 or 1",
            ));
        }
        // Relaxed: as above.
        let fingerprint = t.type_fingerprint.load(Ordering::Relaxed);
        if fingerprint == 0 {
            return Ok(None);
        }
        let name = self.obj.name();
        let size = t.type_size.load(Ordering::Relaxed);
        let align = t.type_align.load(Ordering::Relaxed);
        let len = t.type_name_len.load(Ordering::Relaxed);
        // A typed inline topic's messages are its values; other topics carry values in blocks.
        let fits = match mode {
            MODE_INLINE => size == self.inline_fields(i)?.1 as u64,
            _ => size != 0 && size <= self.geo.block_size,
        };
        if !fits {
            return Err(Error::corrupt(
                name,
                "topic type size",
                size,
                "1 ..= the block size, or an inline topic's message size",
            ));
        }
        if !align.is_power_of_two() || align > 64 {
            return Err(Error::corrupt(
                name,
                "topic type alignment",
                align,
                "a power of two <= 64",
            ));
        }
        if len > 64 {
            return Err(Error::corrupt(
                name,
                "topic type name length",
                len,
                "0 ..= 64",
            ));
        }
        let type_name = String::from_utf8_lossy(&super::layout::unpack(&t.type_name, len as usize))
            .into_owned();
        let named = type_flags & super::layout::TYPE_NAMED != 0;
        Ok(Some(TypeInfo {
            fingerprint,
            size,
            align,
            name: type_name,
            named,
        }))
    }

    /// The index of topic `name`, if registered (unregistered topics are not found), and the
    /// entry's generation, read before its name: pass both to `same_registration` once the
    /// entry's other fields are read.
    pub(crate) fn find_topic(&self, name: &str) -> Result<Option<(u32, u32)>> {
        Ok(self
            .find_topic_with(name, |_| Ok(()))?
            .map(|(i, (), generation)| (i, generation)))
    }

    /// [`Region::find_topic`], with `read(index)` of the entry's other fields done in the same
    /// pass ([`Region::stable`]): what it returns comes from the registration whose name
    /// matched, and whose generation is returned with it.
    pub(crate) fn find_topic_with<T>(
        &self,
        name: &str,
        mut read: impl FnMut(u32) -> Result<T>,
    ) -> Result<Option<(u32, T, u32)>> {
        for i in 0..self.geo.topics as u32 {
            let found = self.stable(i, || match self.topic_name(i)? {
                Some((n, _)) if n == name && self.topic_state(i)? == TOPIC_READY => {
                    read(i).map(Some)
                }
                _ => Ok(None),
            })?;
            if let Some((v, generation)) = found {
                return Ok(Some((i, v, generation)));
            }
        }
        Ok(None)
    }

    /// `read()` of entry `i` without the registration lock, repeated until one pass reads
    /// fields of a single registration (a pass that saw the entry freed or registered again is
    /// thrown away, its error included); returns what it read and the registration's
    /// generation. `Ok(None)` from `read` (the entry was free, or is not the one looked for)
    /// is returned as it is.
    pub(crate) fn stable<T>(
        &self,
        i: u32,
        mut read: impl FnMut() -> Result<Option<T>>,
    ) -> Result<Option<(T, u32)>> {
        for _ in 0..REREADS {
            let generation = self.topic_generation(i)?;
            let got = read();
            if let Ok(None) = got {
                return Ok(None);
            }
            if self.same_registration(i, generation)? {
                return got.map(|v| v.map(|v| (v, generation)));
            }
        }
        Err(self.unstable(i))
    }

    /// The error of a reader that found entry `i` registered again on every one of its
    /// [`REREADS`] reads: only a peer writing the generation without end does that.
    pub(crate) fn unstable(&self, i: u32) -> Error {
        Error::corrupt(
            self.obj.name(),
            "topic generation",
            i as u64,
            "stable for one read of the topic's entry",
        )
    }

    /// Frees the unregistered topic `t` if no subscription to it is left: its ring's blocks
    /// are released, its statistics and publishers reset, and its entry (and inline area)
    /// become free for a registration. Returns the block references released if it was freed
    /// (`None`: not freed). The caller holds the registration lock and is participant `me`
    /// (its publish record carries each slot's reference while it is released).
    pub(crate) fn free_topic(&self, t: u32, me: u32) -> Result<Option<u64>> {
        if self.topic_state(t)? != TOPIC_CLOSED || self.subscriptions(t) != 0 {
            return Ok(None);
        }
        // A freer killed in a free of this entry before its store of FREE (or after it put
        // CLOSED back) left its `freeing` word naming it: its reclaimer, which holds no lock,
        // finishes that free if it finds the entry FREE, and would release the ring beside
        // ours. Not until that word is cleared.
        if self.being_freed(t) {
            return Ok(None);
        }
        // The ring (an inline topic's area) goes to the next registration: not while a live
        // publisher may still write to it.
        if self.writers(t as u64 + 1, me, self.entry_mode(t)? == Some(MODE_INLINE))? {
            return Ok(None);
        }
        let ring = self.ring_area(t)?;
        // A dead publisher's unfinished claim is settled first (a live one's: not yet).
        for s in 0..self.geo.ring_slots {
            // Acquire: pairs with the claimant's AcqRel CAS.
            let st = ring.slot(s).stamp.load(Ordering::Acquire);
            if st & (1 << 63) != 0 {
                let holder = ((st >> 40) as u32) & crate::pubsub::ring::MAX_HOLDER;
                // A holder past the table (a scribbling peer's stamp) has no claim to settle:
                // the slot is released below like any other.
                let Ok(row) = self.row(holder) else { continue };
                if row.status(self.liveness) == PeerStatus::Alive {
                    return Ok(None);
                }
                // Reclaimed by this call, the claim is settled (committed or voided; a stamp
                // the holder's records do not name stays, and the slot is released below like
                // any other). Not taken, another survivor may be settling it at this moment:
                // freeing under it would release the slot's reference a second time (it
                // moves the same reference to the holder's record), so not yet.
                if self.take_and_reclaim(holder)?.is_none() {
                    return Ok(None);
                }
            }
        }
        let entry = self.topic(t)?;
        let freeing = &self.ext(me)?.freeing;
        // The free in progress, for the reclaimer if we die in it (`Region::finish_free`); a
        // registrar does not take the entry while a row names it. SYNC POINT: Release pairs
        // with the Acquire loads in `Region::recover` and `Region::being_freed` (and the
        // Release store of FREE below orders it before the state a registrar reads).
        freeing.store(t + 1, Ordering::Release);
        pool::crash::point();
        // The entry is free from here on, before its count of subscriptions: a subscriber
        // records its subscription, then checks that the entry is not free. SYNC POINT: the
        // SeqCst fence pairs with the one in `Subscriber::subscribe_inner` (Dekker): either
        // we count the new subscription, and the entry stays closed, or the subscriber sees
        // the entry free, gives its record back and reads again. (Release: pairs with the
        // Acquire loads of `topic_state`. Registrations wait for the lock we hold.)
        entry.state.store(TOPIC_FREE, Ordering::Release);
        pool::crash::point();
        fence(Ordering::SeqCst);
        if self.subscriptions(t) != 0 {
            // Release: as above.
            entry.state.store(TOPIC_CLOSED, Ordering::Release);
            pool::crash::point();
            // Release: as above (a registrar that reads 0 reads the entry CLOSED).
            freeing.store(0, Ordering::Release);
            return Ok(None);
        }
        let released = self.release_free(t, ring, me)?;
        // Release: as above (a registrar that reads 0 reads the entry released).
        freeing.store(0, Ordering::Release);
        Ok(Some(released))
    }

    /// The end of the free of entry `t` (state FREE, no subscription left), by its freer `me`
    /// or by the reclaimer of a freer killed in it (`me` is then the dead freer's row, whose
    /// publish record carries the references): every slot's reference is released, the
    /// publishers map and the statistics are cleared, and the entry is left FREE. A release
    /// that fails (a mark held past the liveness timeout, a corrupt word) puts the entry back
    /// to CLOSED: the slots released so far are empty, the reference that failed stays in
    /// `me`'s publish record (finished by `me`'s next publish, or the next free), and the next
    /// free goes on from there; a registration never takes a half-freed entry.
    fn release_free(&self, t: u32, ring: Ring<'_>, me: u32) -> Result<u64> {
        let entry = self.topic(t)?;
        let released = match self.release_ring(ring, me) {
            Ok(n) => n,
            Err(e) => {
                // Release: pairs with the Acquire loads of `topic_state`.
                entry.state.store(TOPIC_CLOSED, Ordering::Release);
                pool::crash::point();
                // Release: pairs with the Acquire loads in `Region::being_freed` (a registrar
                // that reads 0 reads the entry CLOSED).
                self.ext(me)?.freeing.store(0, Ordering::Release);
                return Err(e);
            }
        };
        for w in self.pubmap(t)? {
            // Relaxed: published by the Release store of FREE below.
            w.store(0, Ordering::Relaxed);
        }
        let st = self.stats(t)?;
        // Relaxed: as above.
        st.died.store(0, Ordering::Relaxed);
        st.lagged.store(0, Ordering::Relaxed);
        st.recovered.store(0, Ordering::Relaxed);
        // SYNC POINT: Release pairs with the Acquire load in `topic_state`.
        entry.state.store(TOPIC_FREE, Ordering::Release);
        pool::crash::point();
        Ok(released)
    }

    /// Whether a participant's `freeing` word names entry `t`: a free of it is in progress,
    /// or was interrupted by its freer's death and waits for that row's reclaim
    /// (`Region::finish_free`). A registrar does not take such an entry.
    /// A row never claimed (a scribbling peer's word) names no free: it is not counted (a
    /// joiner that takes it clears the word in its first reclaim).
    pub(crate) fn being_freed(&self, t: u32) -> bool {
        self.frees_in_progress(|f| f == t + 1)
    }

    /// Whether a claimed row's `freeing` word holds a value `which` accepts (one pass over the
    /// participants, whatever the size of the topic table).
    pub(crate) fn frees_in_progress(&self, which: impl Fn(u32) -> bool) -> bool {
        (0..self.geo.participants as u32).any(|p| {
            // SYNC POINT: Acquire pairs with the Release stores of `freeing` (a 0 read here
            // comes after the free it ended: the ring released).
            self.ext(p).is_ok_and(|e| {
                let f = e.freeing.load(Ordering::Acquire);
                f != 0 && which(f)
            }) && self
                .row(p)
                .is_ok_and(|r| r.status(self.liveness) != PeerStatus::Absent)
        })
    }

    /// Finishes the free of entry `t` that dead participant `i` was making when it was killed
    /// (its `freeing` word names `t`), for `i`'s reclaimer, before it releases `i`'s publish
    /// record. Killed before its store of FREE (the entry is still CLOSED) or after the recount
    /// found a subscription and put the entry back, the freer left nothing to finish: the next
    /// free does it all. Otherwise the slots it had not reached are released through `i`'s
    /// record, as the freer would have (the release starts with what the record holds).
    fn finish_free(&self, t: u32, i: u32) -> Result<u64> {
        if self.topic_state(t)? != TOPIC_FREE {
            return Ok(0);
        }
        let ring = self.ring_area(t)?;
        // The slot the record's reference came from, if the freer was killed between moving
        // the reference (`pub_old = desc`) and emptying the slot, is emptied first: one
        // reference, released once, by the record. A block is named by one slot of one ring
        // at most, and `pub_old` names a block of a slot only in that window (a kept or
        // displaced reference names a block no slot holds). Acquire: pairs with the owner's
        // Release store of the record.
        let rec = self.ext(i)?.pub_old.load(Ordering::Acquire);
        let link = rec & 0xffff_ffff;
        if link != 0 && rec & pool::DONE_OLD == 0 {
            for s in 0..self.geo.ring_slots {
                let slot = ring.slot(s);
                // Acquire: pairs with the Release descriptor stores.
                let d = slot.desc.load(Ordering::Acquire);
                if d & 0xffff_ffff == link {
                    // Release: pairs with the Acquire descriptor loads of readers.
                    slot.desc.store(0, Ordering::Release);
                }
            }
        }
        // The freer may have died before its count of the subscriptions: counted again, as
        // it would have. SYNC POINT: the SeqCst fence pairs with the one in
        // `Subscriber::subscribe_inner` (Dekker), as the freer's does: a subscriber that read
        // the entry CLOSED before the dead freer's store of FREE recorded its subscription
        // before, and is counted here; one that reads it later sees FREE.
        fence(Ordering::SeqCst);
        if self.subscriptions(t) != 0 {
            // Release: pairs with the Acquire loads of `topic_state`; the next free goes on.
            self.topic(t)?.state.store(TOPIC_CLOSED, Ordering::Release);
            return Ok(0);
        }
        self.release_free(t, ring, i)
    }

    /// Releases the reference every slot of `ring` holds, through `me`'s publish record (a kill
    /// at any point leaves each reference in the slot or the record: settled exactly once).
    fn release_ring(&self, ring: Ring<'_>, me: u32) -> Result<u64> {
        // Our publish record carries each slot's reference below: first finish what an
        // earlier release left in it.
        self.finish_old(me)?;
        let ext = self.ext(me)?;
        let pool = self.pool();
        let mut mark_wait = MarkWait::default();
        let mut released = 0;
        for s in 0..self.geo.ring_slots {
            let slot = ring.slot(s);
            // Acquire: pairs with the Release descriptor stores.
            let d = slot.desc.load(Ordering::Acquire);
            let Some((b, _)) = undesc(d) else { continue };
            if !pool.has(b) {
                // A block past the pool (a scribbling peer's descriptor) holds no reference.
                // Release: pairs with the Acquire descriptor loads of readers.
                slot.desc.store(0, Ordering::Release);
                continue;
            }
            // The slot's reference moves to our publish record, then is dropped.
            // Release: pairs with the Acquire load in `settle_old`.
            ext.pub_old.store(d & 0xffff_ffff, Ordering::Release);
            pool::crash::point();
            // Release: pairs with the Acquire descriptor loads of readers.
            slot.desc.store(0, Ordering::Release);
            pool::crash::point();
            match release_old(
                &pool,
                &ext.pub_old,
                me,
                b,
                |w| self.wait_mark(w, me, &mut mark_wait),
                |c| corrupt(&self.obj, c),
            ) {
                Ok(_) => released += 1,
                // A slot whose block's word cannot hold its reference (a forged descriptor,
                // a scribbled word) holds none to release: the record is cleared (leaking what
                // it may hold) and the other slots are released.
                Err(e) if e.kind() == ErrorKind::Corrupt => {
                    // Release: pairs with the Acquire load in `settle_old`.
                    ext.pub_old.store(0, Ordering::Release);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(released)
    }

    /// Finishes a release of the reference in live participant `me`'s publish record that gave
    /// up (its wait for another participant's mark timed out, or met a corrupt word): the
    /// record is settled as a reclaimer would settle it, and what it still holds is released.
    /// Called before `me` reuses the record, which would otherwise overwrite (and leak) it.
    #[inline]
    pub(crate) fn finish_old(&self, me: u32) -> Result<()> {
        let rec = &self.ext(me)?.pub_old;
        // Relaxed: `me`'s own record, which only `me` writes while it lives.
        if rec.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let pool = self.pool();
        let settled = settle_old(&pool, rec, me).map_err(|c| {
            // Cleared, as `recover` clears it: kept, it would fail every later publish.
            // Release: pairs with the Acquire load in `settle_old`.
            rec.store(0, Ordering::Release);
            corrupt(&self.obj, c)
        })?;
        if let Some(b) = settled {
            let mut mark_wait = MarkWait::default();
            release_old(
                &pool,
                rec,
                me,
                b,
                |w| self.wait_mark(w, me, &mut mark_wait),
                |c| corrupt(&self.obj, c),
            )?;
        }
        Ok(())
    }

    /// Reclaims every participant whose process died: their unfinished publish is completed
    /// or voided and every block reference they recorded is released. Returns the number of
    /// references released.
    pub(crate) fn reclaim_dead(&self) -> Result<u64> {
        let mut released = 0;
        for i in 0..self.geo.participants as u32 {
            match self.row(i)?.status(self.liveness) {
                PeerStatus::Dead { .. } => released += self.reclaim_row(i)?,
                // A row let go with records left in it: a reclaim (or a leave) that stopped
                // with an error (a wait on a mark that ended in `Timeout`) before it released
                // everything. Its row is closed, not dead, and would otherwise be reclaimed
                // only by a joiner that happens to take it.
                PeerStatus::Closed if self.has_records(i)? => released += self.reclaim_row(i)?,
                _ => {}
            }
        }
        Ok(released)
    }

    /// Whether row `i` has anything in its records: a holdings entry, a publish or its
    /// displaced reference, an inline claim. A participant that leaves, and a reclaim that
    /// finishes, leaves them all empty.
    fn has_records(&self, i: u32) -> Result<bool> {
        // Acquire, all of them: pairs with the Release stores of the records' writers (the
        // reclaim that follows reads them again under its claim of the row).
        if self
            .holdings(i)?
            .iter()
            .any(|h| h.load(Ordering::Acquire) != 0)
        {
            return Ok(true);
        }
        let ext = self.ext(i)?;
        let (inline_topic, _) = self.inline_record(i)?.load();
        Ok(ext.pub_topic.load(Ordering::Acquire) != 0
            || ext.pub_old.load(Ordering::Acquire) & 0xffff_ffff != 0
            || ext.freeing.load(Ordering::Acquire) != 0
            || inline_topic != 0)
    }

    /// Takes row `i` from its dead (or departed) owner, reclaims it, and leaves it closed.
    /// A live owner keeps it: 0.
    ///
    /// A reclaim waits on marks (`wait_mark`), and a mark of a dead participant is cleared by
    /// reclaiming that participant's row in turn, so reclaims nest, one level per dead marker
    /// in a chain. Records a scribbling peer wrote can make that chain as long as the
    /// participants table (and a cycle): past [`RECLAIM_NESTING`] levels on one thread a
    /// reclaim declines (0, as for a live owner), and the waits above it end at their
    /// timeouts, instead of the thread's stack overflowing.
    pub(crate) fn reclaim_row(&self, i: u32) -> Result<u64> {
        Ok(self.take_and_reclaim(i)?.unwrap_or(0))
    }

    /// [`Region::reclaim_row`] for a call with a deadline (a receive with a timeout, a publish
    /// within its claim timeout): every wait on a mark in the reclaim, and in the reclaims it
    /// nests, also ends at `limit` (with `Timeout`, the records left for the next reclaim),
    /// where it would otherwise wait up to the liveness timeout on a live marker.
    pub(crate) fn reclaim_row_until(&self, i: u32, limit: Option<Deadline>) -> Result<u64> {
        let outer = RECLAIM_LIMIT.get();
        let _scope = LimitScope(outer);
        RECLAIM_LIMIT.set(earliest(limit, outer));
        self.reclaim_row(i)
    }

    /// [`Region::reclaim_row`], saying whether this call reclaimed the row: `None` when it
    /// did not take it (a live owner, another survivor reclaiming it at this moment, or the
    /// nesting bound).
    fn take_and_reclaim(&self, i: u32) -> Result<Option<u64>> {
        let Some(_level) = Nesting::enter() else {
            return Ok(None);
        };
        // Who died: the claim below writes our own identity over the row's.
        let dead = match self.row(i)?.status(self.liveness) {
            PeerStatus::Dead { pid } => Some(pid),
            _ => None,
        };
        match Claim::take(
            &self.obj,
            self.row_offset(i),
            Role::Publisher,
            self.liveness,
        ) {
            Ok(claim) => {
                let mut n = self.recover(i);
                if let Ok(n) = &mut n {
                    *n += self.free_unread(i);
                }
                let ext = self.ext(i)?;
                // Relaxed: read by subscribers' liveness scans, which tolerate a stale value
                // for one round.
                if ext.role.load(Ordering::Relaxed) == ROLE_PUBLISHER {
                    // The dead publisher's pid, on every topic it published (the row, which
                    // keeps its bits in the publishers maps, names us from now on).
                    if let Some(pid) = dead {
                        self.remember_dead(i, pid)?;
                    }
                    ext.role.store(ROLE_DEAD_PUBLISHER, Ordering::Relaxed);
                }
                drop(claim);
                n.map(Some)
            }
            Err(Error::InUse { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Frees every unregistered topic that no subscription keeps any more, as participant `i`
    /// (a row the caller holds, whose records it has just reclaimed: a reclaimer's, or a
    /// joiner's that took a dead row). A live subscriber frees such a topic as its last
    /// subscription closes (`Subscription`'s drop); a dead one leaves it closed, holding its
    /// ring's blocks, until a registration's sweep, which may never come. So every reclaim
    /// that succeeds looks, also one that finishes what an earlier one left (whose records no
    /// longer say that the row had subscriptions). Only if the registration lock is free at
    /// once: a registrar holds it (this process's own, when a registration reclaims a dead
    /// row), and sweeps the closed entries itself before it takes one. Returns the block
    /// references the frees released.
    pub(crate) fn free_unread(&self, i: u32) -> u64 {
        let closed = |t| self.topic_state(t).ok() == Some(TOPIC_CLOSED);
        if !(0..self.geo.topics as u32).any(closed) {
            return 0;
        }
        let Some(_lock) = super::RegisterLock::try_take(self, i) else {
            return 0;
        };
        let mut released = 0;
        for t in 0..self.geo.topics as u32 {
            if closed(t) {
                // Not freed (a live publisher's claim in it, a subscription, a scribbled
                // word): left closed, for the next sweep.
                released += self.free_topic(t, i).ok().flatten().unwrap_or(0);
            }
        }
        released
    }

    /// Row `i` is held exclusively by the caller (a claim taken from a dead owner, or this
    /// process's own fresh claim): settle every take or drop its previous owner had in flight
    /// (each record then says exactly what it holds), finish or void the publish it left in
    /// flight, and release every reference it recorded. Each step leaves the records in a
    /// state the next reclaimer settles the same way, should this one die too.
    pub(crate) fn recover(&self, i: u32) -> Result<u64> {
        let ext = self.ext(i)?;
        let pool = self.pool();
        let hs = self.holdings(i)?;
        let mut released = 0u64;
        // First, while the subscription records in the holdings (cleared below) still keep
        // their topics from being freed.
        self.withdraw_parks(hs);
        // A record whose block word fails validation (a mark no participant writes, a count
        // that cannot hold the record's reference: a scribbling peer's values) is cleared,
        // leaking what it may hold, rather than left to fail every reclaim of the row, and
        // every join that takes the row, for ever.
        for (e, h) in hs.iter().enumerate() {
            if settle_entry(&pool, h, i, e as u32).is_err() {
                // Release: pairs with the Acquire loads of later reclaimers.
                h.store(0, Ordering::Release);
            }
        }
        if settle_old(&pool, &ext.pub_old, i).is_err() {
            // Release: as above.
            ext.pub_old.store(0, Ordering::Release);
        }
        // A loan adopting the publish record's kept reference (`Member::adopt_old`) records
        // it in a holdings entry before it clears the record: a record marked kept and an
        // entry naming the same block are one reference (the block's count was 1 when it was
        // kept, and only that adoption gives an entry of this participant the block), kept by
        // the entry. An unmarked record is another reference: a topic freed through the
        // record by a subscriber that still holds a sample of the same block has both.
        // Acquire: pairs with the owner's Release stores.
        let rec = ext.pub_old.load(Ordering::Acquire);
        if rec & pool::KEPT_OLD != 0 && rec & pool::DONE_OLD == 0 {
            let held = (rec & 0xffff_ffff) as u32;
            if held != 0
                && hs.iter().any(|h| {
                    // Acquire: as above.
                    pool::entry(h.load(Ordering::Acquire)) == Entry::Held(held - 1)
                })
            {
                // Release: pairs with the Acquire load in `settle_old`, for a later reclaimer.
                ext.pub_old.store(0, Ordering::Release);
            }
        }
        // The publish in flight. Acquire loads: pair with the dead owner's Release stores.
        let topic = ext.pub_topic.load(Ordering::Acquire);
        let topic = match u32::try_from(topic.wrapping_sub(1)) {
            Ok(t) if u64::from(t) < self.geo.topics => topic,
            _ => {
                // None; or a topic past the table (a scribbling peer's value), which has no
                // claim to settle: cleared, so that it does not fail every reclaim of the row.
                if topic != 0 {
                    // Release: pairs with the Acquire load above, for a later reclaimer.
                    ext.pub_topic.store(0, Ordering::Release);
                }
                0
            }
        };
        if topic != 0 {
            let t = u32::try_from(topic - 1).unwrap_or(u32::MAX);
            // The entry cannot be freed while the dead publisher's claim is in it (`free_topic`
            // settles it first), so this is the claim's registration; a scribbled mode only
            // names the wrong slot, whose stamp then does not match below. An entry that does
            // not validate at all (a scribbling peer's) names no ring this reclaim can settle:
            // the record is cleared below, as for a topic past the table, and the reclaim goes
            // on; an error here would fail every reclaim of the row, and every join, for ever.
            let ring = self
                .entry_mode(t)
                .and_then(|mode| self.ring(t, mode == Some(MODE_LATEST)));
            if let Ok(ring) = ring {
                let seq = ext.pub_seq.load(Ordering::Acquire);
                let slot = ring.slot(seq);
                // A sequence at 2^62 or more (a scribbling peer's value) has no claim: no stamp
                // can name it, and the record is cleared below like any other.
                // Acquire: pairs with the AcqRel claim of the dead publisher.
                if seq < crate::pubsub::ring::SEQ_LIMIT
                    && slot.stamp.load(Ordering::Acquire) == writing(i, seq)
                {
                    let new = ext.pub_new.load(Ordering::Acquire);
                    let d = ring.held_desc(seq);
                    if d == new && new != 0 {
                        // The descriptor was stored: the slot owns the block's reference; drop
                        // it from the holdings without releasing it, and commit.
                        if let Some((b, _)) = undesc(new) {
                            for h in hs {
                                // Acquire: pairs with the owner's Release stores.
                                if pool::entry(h.load(Ordering::Acquire)) == Entry::Held(b) {
                                    // Release: pairs with the Acquire load in `settle_entry`.
                                    h.store(0, Ordering::Release);
                                }
                            }
                        }
                    } else {
                        // Not stored: the slot still holds the previous lap's reference. The
                        // publish record takes it over (released below), and the sequence is
                        // voided with an empty descriptor. An empty descriptor holds nothing: a
                        // reclaimer killed after voiding left the reference in the record
                        // already, and this one must not overwrite it.
                        if d & 0xffff_ffff != 0 {
                            // Release: pairs with the Acquire load in `settle_old`.
                            ext.pub_old.store(d & 0xffff_ffff, Ordering::Release);
                        }
                        ring.set_desc(seq, 0);
                    }
                    ring.commit(seq);
                    crate::ring::wake::wake_always(&self.hot(t)?.notify);
                    // Relaxed: a statistic.
                    self.stats(t)?.recovered.fetch_add(1, Ordering::Relaxed);
                }
            }
            // Release: pairs with the Acquire load above, for a later reclaimer.
            ext.pub_topic.store(0, Ordering::Release);
        }
        self.release_leases(i)?;
        // The registration lock, if the dead owner held it: the word names the row only, so
        // once a new owner takes the row it would look held by a live participant for as
        // long as that one lives.
        if let Ok(lock) = self.register_lock() {
            // SYNC POINT: Release pairs with the AcqRel CAS of the next `RegisterLock::take`,
            // as the holder's own release does.
            let _ = lock.compare_exchange(i as u64 + 1, 0, Ordering::Release, Ordering::Relaxed);
        }
        // The inline claim in flight: the sequence it held is voided if it was never written,
        // then the record is cleared. Kept until then, the record keeps the topic from being
        // freed (`Region::writers` finds it on a row held alive, by us), and with it the
        // topic's inline area from being handed to a new registration under the void; the
        // void's scan of the records skips this row, which we hold.
        let rec = self.inline_record(i)?;
        let (topic, seq) = rec.load();
        if topic != 0
            && let Some(x) = inline::held(topic, seq, topic)
        {
            let t = u32::try_from(topic - 1).unwrap_or(u32::MAX);
            // A record naming no topic of the table, or a topic whose entry does not read the
            // same twice (a scribbling peer's), names no claim this reclaim can settle: the
            // record is cleared (above) and the reclaim goes on to release the row's
            // references, which an error here used to leave held for good.
            let inline = if u64::from(t) < self.geo.topics {
                self.stable(t, || {
                    Ok(match self.entry_mode(t)? {
                        Some(MODE_INLINE) => Some(self.inline_ring(t)?.ring),
                        _ => None,
                    })
                })
            } else {
                Ok(None)
            };
            if let Ok(Some((ring, _))) = inline {
                #[cfg(test)]
                if let Some(hook) = BEFORE_INLINE_UNSTICK.with(|h| h.borrow_mut().take()) {
                    hook();
                }
                self.unstick_inline_but(t, ring, x, Some(i));
            }
        }
        rec.clear();
        // A free the dead participant was making (`free_topic`): the topic it names, if the
        // table has it (a value past the table is a scribbling peer's, and names no free).
        // Acquire: pairs with the owner's Release stores.
        let freeing = match ext.freeing.load(Ordering::Acquire) {
            0 => None,
            f if u64::from(f - 1) < self.geo.topics => Some(f - 1),
            _ => {
                // Release: pairs with the Acquire loads in `being_freed`.
                ext.freeing.store(0, Ordering::Release);
                None
            }
        };
        if let Some(t) = freeing {
            // A release that fails leaves the entry CLOSED for the next free to go on from,
            // and the reference that failed in the record, released below; an entry that does
            // not validate (a scribbling peer's) is left as it is, its free unfinished.
            // Either way the row's record of the free ends here.
            if let Ok(n) = self.finish_free(t, i) {
                released += n;
            }
            // Release: pairs with the Acquire loads in `being_freed`.
            ext.freeing.store(0, Ordering::Release);
        }
        let mut mark_wait = MarkWait::default();
        // Acquire: pairs with the Release stores above and of the owner.
        let old = (ext.pub_old.load(Ordering::Acquire) & 0xffff_ffff) as u32;
        if old != 0 {
            match release_old(
                &pool,
                &ext.pub_old,
                i,
                old - 1,
                |w| self.recover_wait(w, i, old - 1, &mut mark_wait),
                |_| Released::Corrupt,
            ) {
                Ok(_) => released += 1,
                // Cleared, as above. Release: pairs with the Acquire load in `settle_old`.
                Err(Released::Corrupt) => ext.pub_old.store(0, Ordering::Release),
                Err(Released::Wait(e)) => return Err(e),
            }
        }
        for (e, h) in hs.iter().enumerate() {
            // Acquire: pairs with the Release stores of `settle_entry` and the owner.
            match pool::entry(h.load(Ordering::Acquire)) {
                Entry::Held(b) => {
                    match release_entry(
                        &pool,
                        h,
                        i,
                        e as u32,
                        b,
                        |w| self.recover_wait(w, i, b, &mut mark_wait),
                        |_| Released::Corrupt,
                    ) {
                        Ok(_) => released += 1,
                        // Cleared, as above. Release: pairs with the Acquire load in
                        // `settle_entry`.
                        Err(Released::Corrupt) => h.store(0, Ordering::Release),
                        Err(Released::Wait(e)) => return Err(e),
                    }
                }
                Entry::Empty => {}
                // A subscription's record is simply dropped: the topic's count of
                // subscriptions is the number of such records.
                _ => h.store(0, Ordering::Release),
            }
        }
        Ok(released)
    }

    /// Takes back the park announcements a subscriber killed while parked left on its topics'
    /// `waiters` counts: one per subscription record in its holdings `hs` marked parked
    /// ([`pool::SUB_PARKED`], `ring::wake::park_recorded`); the caller holds the subscriber's
    /// row. The record kept its topic from being freed, so the topic is the one it parked on,
    /// and its mode, which says where the count is, is the one it had then. A record naming no
    /// topic (a scribbling peer's) loses its mark without a withdrawal.
    fn withdraw_parks(&self, hs: &[AtomicU32]) {
        for h in hs {
            // Acquire: pairs with the owner's Release CAS in `park_recorded`.
            let v = h.load(Ordering::Acquire);
            if v & pool::SUB_TAG == 0 || v & pool::SUB_PARKED == 0 {
                continue;
            }
            let idle = v & !pool::SUB_PARKED;
            let t = idle & !pool::SUB_TAG;
            if u64::from(t) < self.geo.topics {
                let ring = self.stable(t, || {
                    Ok(match self.entry_mode(t)? {
                        Some(MODE_INLINE) => Some(self.inline_ring(t)?.ring),
                        _ => None,
                    })
                });
                match ring {
                    Ok(Some((ring, _))) => {
                        wake::withdraw(&ring.signal().waiters, h, idle, v);
                        continue;
                    }
                    Ok(None) => {
                        if let Ok(hot) = self.hot(t) {
                            wake::withdraw(&hot.waiters, h, idle, v);
                            continue;
                        }
                    }
                    Err(_) => {}
                }
            }
            // SYNC POINT: AcqRel, as the withdrawal's CAS (a later reclaimer sees the record
            // without its mark).
            let _ = h.compare_exchange(v, idle, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// The topic of every subscription recorded in the holdings of every participant (those
    /// of a dead participant until it is reclaimed): a scan of the whole holdings table, for
    /// statistics, never on a hot path.
    fn subscription_records(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.geo.participants as u32)
            .filter_map(|i| self.holdings(i).ok())
            .flatten()
            // Relaxed: a statistic, racy by nature.
            .map(|h| h.load(Ordering::Relaxed))
            .filter(|v| v & pool::SUB_TAG != 0)
            .map(|v| v & !(pool::SUB_TAG | pool::SUB_PARKED))
    }

    /// The subscriptions to topic `t` ([`Region::subscription_records`]).
    pub(crate) fn subscriptions(&self, t: u32) -> u64 {
        self.subscription_records().filter(|&s| s == t).count() as u64
    }

    /// The subscriptions to every topic (index `t`: as [`Region::subscriptions`] of `t`),
    /// counted in one scan of the holdings table: listing a region's topics scanned the whole
    /// table once per topic, minutes for the largest region a creator may ask for.
    pub(crate) fn subscription_counts(&self) -> alloc::vec::Vec<u64> {
        let mut counts = alloc::vec![0u64; self.geo.topics as usize];
        for t in self.subscription_records() {
            if let Some(n) = counts.get_mut(t as usize) {
                *n += 1;
            }
        }
        counts
    }

    /// Topic `t`'s publishers map: bit `p` is set while participant `p` is (or was, until its
    /// row is taken by another participant) a publisher of the topic.
    pub(crate) fn pubmap(&self, t: u32) -> Result<&[AtomicU64]> {
        self.check("topic index", t, self.geo.topics)?;
        let w = self.geo.pubmap_words;
        // SAFETY: the publishers map holds `pubmap_words` words per topic (Geometry).
        Ok(unsafe { self.slice::<AtomicU64>(self.geo.pubmap + 8 * w * t as u64, w) })
    }

    /// The participants whose bit is set in `map` (indices from a word another process may
    /// write: callers check them like any other index).
    fn members_of(map: &[AtomicU64]) -> impl Iterator<Item = u32> + '_ {
        map.iter().enumerate().flat_map(|(w, word)| {
            // Acquire: pairs with the Release fetch_or in `mark_publisher`: the bit's owner
            // had claimed its row (and written its role) before setting it.
            let mut bits = word.load(Ordering::Acquire);
            core::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    (w as u32) * 64 + b
                })
            })
        })
    }

    /// Participant `p` publishes topic `t` (it registered it): `p`'s bit is set, then the
    /// topic's publishers that are no longer alive are forgotten, and so is a remembered death
    /// (a new publisher took the topic over). In that order: killed at any point, `p` leaves a
    /// map that still names a dead publisher, so a subscriber of a topic whose every publisher
    /// is dead is told so (clearing first, a kill before the bit left the map empty and
    /// `died` 0: a subscriber that waited for ever).
    pub(crate) fn mark_publisher(&self, t: u32, p: u32) -> Result<Marked> {
        let map = self.pubmap(t)?;
        let bit = 1u64 << (p % 64);
        // SYNC POINT: Release pairs with the Acquire load in `members_of`.
        let was = map[p as usize / 64].fetch_or(bit, Ordering::Release) & bit != 0;
        for q in Self::members_of(map) {
            let alive = self
                .row(q)
                .is_ok_and(|r| r.status(self.liveness) == PeerStatus::Alive);
            if q != p
                && !alive
                && let Some(word) = map.get(q as usize / 64)
            {
                // Relaxed: a hint for waiting subscribers, who re-read it every check.
                word.fetch_and(!(1u64 << (q % 64)), Ordering::Relaxed);
            }
        }
        // Relaxed: as above.
        let died = self.stats(t)?.died.swap(0, Ordering::Relaxed);
        Ok(Marked { new: !was, died })
    }

    /// Undoes a `mark_publisher` of `p` on topic `t` whose handle was not made after all: the
    /// bit goes if the mark set it, and the death it cleared is remembered again unless a
    /// publisher has cleared or set it since.
    pub(crate) fn unmark_publisher(&self, t: u32, p: u32, m: Marked) -> Result<()> {
        if m.new {
            // Relaxed: as in `forget_publisher`.
            self.pubmap(t)?[p as usize / 64].fetch_and(!(1u64 << (p % 64)), Ordering::Relaxed);
        }
        // Relaxed: a hint, as in `mark_publisher`.
        let _ =
            self.stats(t)?
                .died
                .compare_exchange(0, m.died, Ordering::Relaxed, Ordering::Relaxed);
        Ok(())
    }

    /// Row `i` was just taken by a new participant: if its previous owner was a publisher that
    /// died (`dead_pid`), each of its topics remembers the death, then the owner's bits go from
    /// every topic's publishers map. In that order: a joiner killed in between leaves the death
    /// remembered or the bit still there (clearing first, a kill before the store lost the
    /// death, and a subscriber waited for ever).
    pub(crate) fn forget_publisher(&self, i: u32, dead_pid: Option<u32>) -> Result<()> {
        for t in 0..self.geo.topics as u32 {
            let word = &self.pubmap(t)?[i as usize / 64];
            let bit = 1u64 << (i % 64);
            // Relaxed: our own row's bit (others only clear it); subscribers re-read the map
            // every check.
            if word.load(Ordering::Relaxed) & bit == 0 {
                continue;
            }
            if let Some(pid) = dead_pid {
                // Relaxed: as above.
                self.stats(t)?.died.store(pid as u64, Ordering::Relaxed);
            }
            // Relaxed: as above.
            word.fetch_and(!bit, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Stores `pid`, the dead publisher of row `i`, as the `died` of every topic whose
    /// publishers map has the row's bit (which stays set: the row is a dead publisher's until
    /// a new participant takes it).
    fn remember_dead(&self, i: u32, pid: u32) -> Result<()> {
        for t in 0..self.geo.topics as u32 {
            let word = &self.pubmap(t)?[i as usize / 64];
            // Relaxed: as in `forget_publisher`.
            if word.load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0 {
                self.stats(t)?.died.store(pid as u64, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Topic `t`'s publishers, for a subscriber waiting on it: `Some(pid)` of a dead publisher
    /// when no publisher of the topic is alive and at least one died; `None` otherwise (one
    /// lives, or none ever came, or all left cleanly). Publishers of other topics do not count.
    pub(crate) fn topic_publishers_dead(&self, t: u32) -> Option<u32> {
        let map = self.pubmap(t).ok()?;
        // Relaxed: a hint re-read every check. A reclaimed publisher's row names its
        // reclaimer, so its pid is the one remembered here (`remember_dead`).
        let remembered = self.stats(t).ok()?.died.load(Ordering::Relaxed);
        let remembered = (remembered != 0).then_some(remembered as u32);
        let mut dead = None;
        for q in Self::members_of(map) {
            let Ok(row) = self.row(q) else {
                continue;
            };
            match row.status(self.liveness) {
                PeerStatus::Alive => return None,
                PeerStatus::Dead { pid } => dead = Some(pid),
                // Closed: left cleanly, or a dead publisher's row a survivor reclaimed (its
                // pid remembered; one whose store is not visible yet is reported at a later
                // check).
                _ => {}
            }
        }
        dead.or(remembered)
    }

    /// Whether any participant other than row `except` is alive.
    pub(crate) fn anyone_else_alive(&self, except: u32) -> bool {
        (0..self.geo.participants as u32).any(|i| {
            i != except
                && self
                    .row(i)
                    .is_ok_and(|r| r.status(self.liveness) == PeerStatus::Alive)
        })
    }
}

/// One participant of a region: its claimed row and the record of the blocks it holds.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) region: Arc<Region>,
    pub(crate) index: u32,
    /// Where the next free holdings entry is likely to be. Relaxed: a hint.
    hint: AtomicU32,
    /// A publisher's entries are claimed and released by one thread only (a `Publisher` is
    /// not `Sync` and its loans do not leave its thread), so a plain store claims one; a
    /// subscriber's samples may be received on several threads at once, which need a CAS.
    one_thread: bool,
    claim: Option<Claim>,
    /// The value of a single-publisher topic's lease word while this member holds it
    /// ([`lease_value`]).
    pub(crate) lease: u64,
    /// This member's holdings entries (`held` words) and publish record, resolved once at
    /// join: the hot paths reach them without walking the region's geometry. They point into
    /// the mapping that `region` keeps alive.
    holdings: NonNull<AtomicU32>,
    held: usize,
    ext: NonNull<MemberExt>,
    /// The pool's words (`blocks` of them), resolved at join as the above.
    meta: NonNull<BlockMeta>,
    blocks: usize,
}

// SAFETY: `holdings`, `ext` and `meta` point into the mapping that `region` (Send + Sync)
// keeps alive, and every access through them is atomic.
unsafe impl Send for Member {}
// SAFETY: as for Send.
unsafe impl Sync for Member {}

impl Member {
    /// Claims a free (never used, left, or dead) row, reclaiming what its previous owner held,
    /// and every other dead participant's blocks too.
    pub(crate) fn join(region: Arc<Region>, role: Role) -> Result<Arc<Member>> {
        // Before this process can publish on or park on an inline topic (see ring::wake).
        crate::ring::wake::init_machine();
        let n = region.geo.participants as u32;
        for i in 0..n {
            let row = region.row(i)?;
            let dead_pid = match row.status(region.liveness) {
                PeerStatus::Alive => continue,
                PeerStatus::Dead { pid } => Some(pid),
                // A dead publisher's row that a survivor reclaimed names the survivor: the
                // dead pid was remembered then (`remember_dead`). Relaxed: see `reclaim_row`.
                _ if region.ext(i)?.role.load(Ordering::Relaxed) == ROLE_DEAD_PUBLISHER => None,
                _ => None,
            };
            let claim = match Claim::take(&region.obj, region.row_offset(i), role, region.liveness)
            {
                Ok(c) => c,
                Err(Error::InUse { .. }) => continue,
                Err(e) => return Err(e),
            };
            region.recover(i)?;
            // The topics the row's dead subscriber kept closed, now unread.
            region.free_unread(i);
            region.forget_publisher(i, dead_pid)?;
            let ext = region.ext(i)?;
            let r = if role == Role::Publisher {
                ROLE_PUBLISHER
            } else {
                super::layout::ROLE_SUBSCRIBER
            };
            // Relaxed: display only.
            ext.role.store(r, Ordering::Relaxed);
            // Relaxed: read by a freer whose machine barrier failed (`machine_handshake`),
            // which takes any value but the row's current owner word (the previous owner's,
            // this store not yet seen) for a participant its own fence does not order: that
            // only postpones a free. Our claim wrote the row's owner word.
            let fenced = if crate::ring::wake::fences_itself() {
                region.row(i)?.owner_id()
            } else {
                0
            };
            ext.fenced.store(fenced, Ordering::Relaxed);
            let holdings = region.holdings(i)?;
            let pool = region.pool();
            let member = Arc::new(Member {
                region: region.clone(),
                index: i,
                hint: AtomicU32::new(0),
                one_thread: role == Role::Publisher,
                lease: lease_value(i, claim.epoch()),
                claim: Some(claim),
                holdings: NonNull::from(holdings).cast(),
                held: holdings.len(),
                ext: NonNull::from(ext),
                meta: NonNull::from(pool.meta()).cast(),
                blocks: pool.meta().len(),
            });
            region.reclaim_dead()?;
            return Ok(member);
        }
        Err(Error::InvalidArgument {
            what: "participants in the region",
            value: n as u64,
            expected: "a free row, but every row is held by a live process",
        })
    }

    pub(crate) fn name(&self) -> &str {
        self.region.obj.name()
    }

    /// Takes a reference on the published block `b` and records it: the holdings entry, or
    /// `None` when the block is free (it was recycled: the caller reads its slot again).
    #[inline]
    pub(crate) fn take(&self, b: u32, limit: Option<Deadline>) -> Result<Option<u32>> {
        let e = self.claim_entry(TAKING | (b + 1))?;
        Ok(self.take_to(e, b, 0, limit)?.then_some(e))
    }

    /// Takes a reference on block `b` into our entry `e`, which is left at `idle` if the block
    /// turns out free (see `pool::take_entry_to`). A wait for another participant's mark on
    /// the block ends with `Timeout` at `limit` if that comes before the liveness timeout.
    #[inline(always)]
    fn take_to(&self, e: u32, b: u32, idle: u32, limit: Option<Deadline>) -> Result<bool> {
        let r = &self.region;
        let mut mark_wait = MarkWait::until(limit);
        take_entry_to(
            &self.pool(),
            self.holding(e)?,
            self.index,
            e,
            b,
            idle,
            |w| r.wait_mark(w, self.index, &mut mark_wait),
            |c| corrupt(&r.obj, c),
        )
    }

    /// Releases the reference on block `b` recorded in our entry `e`, leaving the entry at
    /// `idle` (see `pool::release_entry_to`).
    #[inline(always)]
    fn release_to(&self, e: u32, b: u32, idle: u32) -> Result<()> {
        let r = &self.region;
        let mut mark_wait = MarkWait::default();
        release_entry_to(
            &self.pool(),
            self.holding(e)?,
            self.index,
            e,
            b,
            idle,
            |w| r.wait_mark(w, self.index, &mut mark_wait),
            |c| corrupt(&r.obj, c),
        )
        .map(|_| ())
    }

    /// This member's holdings entries.
    #[inline(always)]
    fn own_holdings(&self) -> &[AtomicU32] {
        // SAFETY: `held` words at `holdings`, this member's row of the holdings area (Geometry,
        // checked at attach), inside the mapping that `self.region` keeps alive; atomics are
        // valid for any bit pattern and shareable.
        unsafe { core::slice::from_raw_parts(self.holdings.as_ptr(), self.held) }
    }

    /// This member's extension line (its publish record).
    #[inline(always)]
    pub(crate) fn own_ext(&self) -> &MemberExt {
        // SAFETY: this member's line of the extension area, inside the mapping that
        // `self.region` keeps alive; all atomics.
        unsafe { self.ext.as_ref() }
    }

    /// The region's pool.
    #[inline(always)]
    pub(crate) fn pool(&self) -> Pool<'_> {
        // SAFETY: the metadata area's `blocks` words (Geometry, checked at attach), inside the
        // mapping that `self.region` keeps alive; all atomics.
        Pool::new(unsafe { core::slice::from_raw_parts(self.meta.as_ptr(), self.blocks) })
    }

    /// Our holdings entry `e`, bounds-checked.
    #[inline(always)]
    pub(crate) fn holding(&self, e: u32) -> Result<&AtomicU32> {
        self.own_holdings().get(e as usize).ok_or_else(|| {
            Error::corrupt(
                self.region.obj.name(),
                "holdings entry",
                e as u64,
                "in range",
            )
        })
    }

    /// Claims a holdings entry and leaves it reserved: a spare for [`Member::take_into`], which
    /// then needs no claim of its own per take.
    pub(crate) fn reserve_entry(&self) -> Result<u32> {
        self.claim_entry(RESERVED)
    }

    /// Whether this member's entry `e` is reserved and holds nothing (a spare between takes).
    #[inline]
    pub(crate) fn is_spare(&self, e: u32) -> bool {
        self.own_holdings()
            .get(e as usize)
            // Relaxed: our own entry; only this member's spare holder writes it.
            .is_some_and(|h| h.load(Ordering::Relaxed) == RESERVED)
    }

    /// [`Member::take`] into the spare entry `e` (reserved by [`Member::reserve_entry`], not
    /// holding anything): `true` when the block was taken, else the entry stays reserved.
    #[inline(always)]
    pub(crate) fn take_into(&self, e: u32, b: u32, limit: Option<Deadline>) -> Result<bool> {
        self.take_to(e, b, RESERVED, limit)
    }

    /// [`Member::release`] of a reference taken by [`Member::take_into`]: the entry stays
    /// reserved for the next take.
    #[inline(always)]
    pub(crate) fn release_into(&self, e: u32, b: u32) -> Result<()> {
        self.release_to(e, b, RESERVED)
    }

    /// Allocates a free block (scanning from `*cursor`) and records it: `(block, entry)`, or
    /// `None` when every block is in use.
    #[inline]
    pub(crate) fn alloc(&self, cursor: &mut u32) -> Result<Option<(u32, u32)>> {
        let e = self.claim_entry(TAKING)?;
        let h = &self.own_holdings()[e as usize];
        match alloc_entry(&self.pool(), h, self.index, e, cursor) {
            Some(b) => Ok(Some((b, e))),
            None => {
                // Release: pairs with the Acquire load in `settle_entry`.
                h.store(0, Ordering::Release);
                Ok(None)
            }
        }
    }

    /// Records a subscription to topic `t`; returns the holdings entry.
    pub(crate) fn hold_subscription(&self, t: u32) -> Result<u32> {
        self.claim_entry(pool::SUB_TAG | t)
    }

    /// Claims a free holdings entry for `v`.
    #[inline]
    fn claim_entry(&self, v: u32) -> Result<u32> {
        let hs = self.own_holdings();
        let n = hs.len() as u32;
        // Relaxed: a hint.
        let start = self.hint.load(Ordering::Relaxed);
        let start = if start < n { start } else { 0 };
        for k in 0..n {
            // `start + k` wraps once at most (a compare, not a division per claim).
            let e = if start + k < n {
                start + k
            } else {
                start + k - n
            };
            let h = &hs[e as usize];
            if self.one_thread {
                // Relaxed: only this thread claims or clears our entries (see `one_thread`).
                if h.load(Ordering::Relaxed) == 0 {
                    // SYNC POINT: Release pairs with the Acquire loads in `settle_entry`.
                    h.store(v, Ordering::Release);
                    // Relaxed: a hint.
                    self.hint.store(e + 1, Ordering::Relaxed);
                    return Ok(e);
                }
                continue;
            }
            // Relaxed: only a pre-check of the CAS below.
            if h.load(Ordering::Relaxed) == 0
                // SYNC POINT: Release pairs with the Acquire loads in `settle_entry`: a
                // reclaimer sees the record. Entries are claimed by CAS so that samples
                // received on several threads never share one.
                && hs[e as usize]
                    .compare_exchange(0, v, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
            {
                // Relaxed: a hint.
                self.hint.store(e + 1, Ordering::Relaxed);
                return Ok(e);
            }
        }
        Err(Error::InvalidArgument {
            what: "samples, loans and subscriptions held at once",
            value: n as u64,
            expected: "at most Config::max_held",
        })
    }

    /// Forgets holdings entry `e` (a subscription ended, or a loan's reference was handed to a
    /// ring slot, whose descriptor now records it).
    pub(crate) fn unhold(&self, e: u32) {
        if let Some(h) = self.own_holdings().get(e as usize) {
            // SYNC POINT: Release pairs with the Acquire load in `settle_entry`.
            h.store(0, Ordering::Release);
        }
    }

    /// Releases the reference on block `b` recorded in entry `e` (see `pool::release_entry`:
    /// a crash at any point leaves a state the reclaimer settles exactly).
    #[inline]
    pub(crate) fn release(&self, e: u32, b: u32) -> Result<()> {
        self.release_to(e, b, 0)
    }

    /// As [`Region::finish_old`], for this member.
    #[inline]
    pub(crate) fn finish_old(&self) -> Result<()> {
        // Relaxed: our own record, which only we write while we live.
        if self.own_ext().pub_old.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.region.finish_old(self.index)
    }

    /// Whether the reference on block `b` recorded in this member's publish record is the
    /// block's only one: if so it stays there, for [`Member::adopt_old`] (see
    /// `Pool::keep_sole`); if not, release it.
    #[inline]
    pub(crate) fn keep_old(&self, b: u32) -> bool {
        if !self.pool().keep_sole(b) {
            return false;
        }
        let ext = self.own_ext();
        // SYNC POINT: Release pairs with the Acquire load in `settle_old`. The record named
        // `b` already (a kill before this store leaves a reference a reclaimer releases).
        ext.pub_old
            .store(pool::KEPT_OLD | (b as u64 + 1), Ordering::Release);
        true
    }

    /// Moves the reference on block `b` kept in this member's publish record
    /// ([`Member::keep_old`]) into a holdings entry, for a loan; returns the entry, or `None`
    /// when the record no longer holds `b`. The entry is written before the record is
    /// cleared: a crash in between leaves both naming `b`, which `Region::recover` counts as
    /// one reference.
    #[inline]
    pub(crate) fn adopt_old(&self, b: u32) -> Result<Option<u32>> {
        let rec = &self.own_ext().pub_old;
        // Relaxed: our own record, which only we write while we live. Only a record that
        // `keep_old` marked kept is adopted: anything that stored it since (a topic freed
        // through it, a release that gave up) cleared the mark.
        if rec.load(Ordering::Relaxed) != pool::KEPT_OLD | (b as u64 + 1) {
            return Ok(None);
        }
        let e = self.claim_entry(b + 1)?;
        // SYNC POINT: Release pairs with the Acquire load in `settle_old` (a reclaimer that
        // sees the record cleared sees the entry).
        rec.store(0, Ordering::Release);
        Ok(Some(e))
    }

    /// Releases the reference on block `b` recorded in this member's publish record; returns
    /// whether that freed the block.
    #[inline]
    pub(crate) fn release_old(&self, b: u32) -> Result<bool> {
        let r = &self.region;
        let mut mark_wait = MarkWait::default();
        release_old(
            &self.pool(),
            &self.own_ext().pub_old,
            self.index,
            b,
            |w| r.wait_mark(w, self.index, &mut mark_wait),
            |c| corrupt(&r.obj, c),
        )
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // Every sample and loan holds the member: nothing is recorded any more, unless a
        // peer scribbled on the table. Release what is left, then leave the row; unless a
        // survivor took the row over (it judged this process dead by a stale heartbeat, across
        // pid namespaces, while it was stopped): it released our records then, and what the
        // row records now is its new owner's.
        if self.claim.as_ref().is_some_and(Claim::held) {
            let _ = self.region.recover(self.index);
        }
        drop(self.claim.take());
        // The last participant out removes the name (if it still names this region). Asked
        // after our row is released: of two last participants leaving at once, the later one
        // then sees nobody (asked before, each could see the other and both leave the name).
        if !self.region.anyone_else_alive(self.index) {
            self.region.obj.unlink_if_same();
        }
    }
}

#[cfg(all(test, not(miri)))]
mod tests {
    use crate::pubsub::{Config, Publisher, Subscriber};

    /// A freer killed at any point of a topic's free (between any two of its stores, the
    /// release of each ring slot's reference included), then reclaimed: every reference comes
    /// back exactly once. A subscriber holds a sample of every slot's block, so that a slot's
    /// reference released twice shows as a count of 0 under a sample, and one leaked as a
    /// count of 2. Killed after its store of FREE, the freer used to leave the references of
    /// the slots it had not reached, which the next registration zeroed without releasing.
    #[test]
    fn a_freer_killed_anywhere_in_a_free_releases_every_reference_once() {
        use super::{TOPIC_CLOSED, TOPIC_FREE};
        use crate::pubsub::pool::crash;
        for n in 0.. {
            let name = format!("region-free-kill-{}-{n}", std::process::id());
            let cfg = Config::default().blocks(16).ring_slots(4).topics(3);
            let survivor = Publisher::create(&name, &cfg).unwrap();
            let freer = Publisher::open(&name).unwrap();
            let t = freer.register("/f").unwrap();
            let s = Subscriber::connect(&name).unwrap();
            let mut sub = s.subscribe("/f").unwrap();
            for k in 0..4u8 {
                freer.publish(&t, &[k]).unwrap();
            }
            let samples: alloc::vec::Vec<_> = (0..4).map(|_| sub.try_recv().unwrap()).collect();
            let held: alloc::vec::Vec<u32> = samples
                .iter()
                .map(|m| match m.payload {
                    super::super::Payload::Block { block, .. } => block,
                    _ => panic!("a block sample"),
                })
                .collect();
            drop(sub);
            let r = &*survivor.member.region;
            let me = freer.member.index;

            crash::arm(Some(n));
            let killed =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| freer.unregister(&t)));
            crash::arm(None);
            if killed.is_ok() {
                // Every earlier round killed the freer at one point.
                assert!(n >= 8, "the free passed only {n} points");
                r.obj.remove_if_same().unwrap();
                break;
            }
            // Before the freer's row is reclaimed (it looks alive: it is this process), a
            // registration takes another entry than one whose free is unfinished.
            let freeing = r.ext(me).unwrap().freeing.load(super::Ordering::Relaxed);
            let left = r.topic_state(t.index).unwrap();
            let early = survivor.register("/early").unwrap();
            if freeing != 0 {
                // Nor does it free it (its reclaimer, which holds no lock, may be finishing
                // the same free at this moment).
                assert_eq!(r.topic_state(t.index).unwrap(), left, "killed at point {n}");
                assert_ne!(
                    early.index, t.index,
                    "killed at point {n}: a half-freed entry"
                );
            }
            // Its reclaimer (a survivor that claimed its row) settles what it left; then the
            // freer's own handle goes, which reclaims the row a second time.
            r.recover(me).unwrap();
            drop(freer);
            assert_eq!(r.ext(me).unwrap().freeing.load(super::Ordering::Relaxed), 0);
            let state = r.topic_state(t.index).unwrap();
            assert!(
                state == TOPIC_FREE || state == TOPIC_CLOSED,
                "killed at point {n}: state {state}"
            );
            // A registration frees a closed entry, or takes the freed one.
            let g = survivor.register("/g").unwrap();
            let counts = |what: &str, held: &[u32]| {
                for b in 0..16u32 {
                    let (count, mark) = r.pool().state(b).unwrap();
                    let want = held.iter().filter(|&&h| h == b).count() as u64;
                    assert_eq!(
                        (count, mark),
                        (want, crate::pubsub::pool::Mark::None),
                        "killed at point {n}, {what}: block {b}"
                    );
                }
            };
            counts("samples held", &held);
            drop(samples);
            counts("samples dropped", &[]);
            let mut sub = s.subscribe("/g").unwrap();
            survivor.publish(&g, b"after").unwrap();
            assert_eq!(&*sub.try_recv().unwrap(), b"after");
            drop(sub);
            r.obj.remove_if_same().unwrap();
        }
    }

    /// A freer killed between its store of FREE and its count of the subscriptions, while a
    /// subscriber that read the entry CLOSED had recorded a subscription (it drains the closed
    /// topic's ring): the reclaimer counts again, as the freer would have, and puts the entry
    /// back to CLOSED instead of releasing the ring under that subscriber; the free happens
    /// once the subscription is gone.
    #[test]
    fn the_reclaimer_of_a_freer_counts_the_subscriptions_the_freer_did_not() {
        use super::{Ordering, TOPIC_CLOSED, TOPIC_FREE};
        use crate::pubsub::pool::{SUB_TAG, crash};
        let name = format!("region-free-count-{}", std::process::id());
        let cfg = Config::default().blocks(16).ring_slots(4).topics(3);
        let survivor = Publisher::create(&name, &cfg).unwrap();
        let freer = Publisher::open(&name).unwrap();
        let t = freer.register("/f").unwrap();
        freer.publish(&t, b"kept").unwrap();
        let r = &*survivor.member.region;
        let me = freer.member.index;
        // Killed at the second point of the free: after its store of FREE.
        crash::arm(Some(1));
        let killed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| freer.unregister(&t)));
        crash::arm(None);
        assert!(killed.is_err());
        assert_eq!(r.topic_state(t.index).unwrap(), TOPIC_FREE);
        // The subscriber's record, stored before the freer's FREE (it read CLOSED).
        let h = &r.holdings(survivor.member.index).unwrap()[3];
        h.store(SUB_TAG | t.index, Ordering::Release);
        r.recover(me).unwrap();
        assert_eq!(r.topic_state(t.index).unwrap(), TOPIC_CLOSED);
        let (count, _) = r.pool().state(0).unwrap();
        assert_eq!(count, 1, "the slot keeps its block for the subscriber");
        // The subscription goes: the next registration frees the entry and takes it.
        h.store(0, Ordering::Release);
        let g = survivor.register("/g").unwrap();
        assert_eq!(g.index, t.index);
        assert_eq!(r.pool().free_estimate(), 16);
        drop(freer);
        r.obj.remove_if_same().unwrap();
    }

    /// A region with topic "/t" (inline, 8-byte messages, entry 1, inline area 0) and a free
    /// entry 0 before it, `published` messages on /t, then a claim of the next sequence by a
    /// second publisher `dead` (killed before writing it, its row not reclaimed yet), and /t
    /// unregistered: CLOSED, kept by the claim in flight. Returns (survivor, dead, /t).
    fn a_dead_inline_claim(
        name: &str,
        published: u64,
    ) -> (Publisher, Publisher, crate::pubsub::Topic) {
        use super::TOPIC_CLOSED;
        use crate::pubsub::{TopicSpec, inline};
        let cfg = Config::default()
            .topics(4)
            .inline_topics(1)
            .ring_slots(8)
            .claim_timeout(core::time::Duration::from_millis(20));
        let survivor = Publisher::create(name, &cfg).unwrap();
        let dead = Publisher::open(name).unwrap();
        let r = &*survivor.member.region;
        // Entry 0 free again (so the next registration takes it), /t at entry 1, area 0.
        let a = survivor.register("/a").unwrap();
        let t = survivor.register_spec("/t", &TopicSpec::inline(8)).unwrap();
        assert_eq!((a.index, t.index), (0, 1));
        survivor.unregister(&a).unwrap();
        for k in 0..published {
            assert_eq!(survivor.publish(&t, &[1; 8]).unwrap(), k);
        }
        let ring_t = r.inline_ring(t.index).unwrap().ring;
        let drec = r.inline_record(dead.member.index).unwrap();
        assert_eq!(
            inline::claim(&ring_t, drec, t.index as u64 + 1),
            Ok(published)
        );
        survivor.unregister(&t).unwrap();
        assert_eq!(r.topic_state(t.index).unwrap(), TOPIC_CLOSED);
        (survivor, dead, t)
    }

    /// The reclaimer of a publisher killed holding inline sequence 0 of the unregistered topic
    /// /t resolves /t's ring and is preempted before its void, while another process
    /// registers /u. The reclaimer used to clear the dead row's record first: /t no longer
    /// looked held, the registration freed it and gave its inline area to /u (another entry,
    /// another tag), whose live publisher claimed sequence 0, and the reclaimer's void then
    /// landed on it: a live claim voided, and a subscriber skipped the message the publisher
    /// wrote. The record is now kept until the void is done: the registration finds the area
    /// taken.
    #[test]
    fn a_reclaimer_preempted_before_its_void_never_voids_a_live_claim_of_the_next_topic() {
        use super::BEFORE_INLINE_UNSTICK;
        use crate::pubsub::TopicSpec;
        use crate::pubsub::inline;
        use crate::ring::raw;
        use alloc::boxed::Box;
        use alloc::rc::Rc;
        use core::cell::RefCell;
        let name = format!("region-inline-void-{}", std::process::id());
        // `dead` claims sequence 0 of /t.
        let (survivor, dead, _t) = a_dead_inline_claim(&name, 0);
        let r = &*survivor.member.region;

        let got = Rc::new(RefCell::new(None));
        let out = got.clone();
        let reg = name.clone();
        BEFORE_INLINE_UNSTICK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                // Another process: registers /u (frees /t, takes entry 0 and area 0).
                let live = Publisher::open(&reg).unwrap();
                let u = match live.register_spec("/u", &TopicSpec::inline(8)) {
                    Ok(u) => u,
                    // /t's ring kept while the reclaim is in flight: nothing can go wrong.
                    Err(e) if e.kind() == crate::ErrorKind::InvalidArgument => return,
                    Err(e) => panic!("{e:?}"),
                };
                let lr = &*live.member.region;
                assert_eq!(u.index, 0, "/u took entry 0");
                assert_eq!(lr.inline_fields(u.index).unwrap().0, 0, "/u took /t's area");
                let s = Subscriber::connect(&reg).unwrap();
                let sub = s.subscribe("/u").unwrap();
                // `live` publishes on /u: claimed sequence 0, checked the topic open, and is
                // preempted before its write.
                let ring_u = lr.inline_ring(u.index).unwrap().ring;
                let rec = lr.inline_record(live.member.index).unwrap();
                assert_eq!(inline::claim(&ring_u, rec, u.index as u64 + 1), Ok(0));
                *out.borrow_mut() = Some((live, u, s, sub, ring_u));
            }) as Box<dyn FnOnce()>);
        });
        // The reclaimer of `dead`'s row (a survivor that took it).
        r.recover(dead.member.index).unwrap();
        let Some((live, u, _s, mut sub, ring_u)) = got.borrow_mut().take() else {
            // The registration was refused: /t's area was still held by the reclaim.
            drop(dead);
            survivor.member.region.obj.remove_if_same().unwrap();
            return;
        };
        let lr = &*live.member.region;
        let rec = lr.inline_record(live.member.index).unwrap();
        let void_seen = ring_u.stamp_of(0) == raw::void(0);
        // The subscriber polls while the live write is pending, then the write completes and
        // one more message follows.
        assert!(matches!(sub.try_recv(), Err(crate::Error::Empty)));
        ring_u.write_bytes(0, &7u64.to_le_bytes());
        inline::finish(rec, 0);
        assert_eq!(live.publish(&u, &8u64.to_le_bytes()).unwrap(), 1);
        let m = sub.try_recv().unwrap();
        let seen = (m.seq(), m.to_vec(), void_seen);
        survivor.member.region.obj.remove_if_same().unwrap();
        assert_eq!(
            seen,
            (0, 7u64.to_le_bytes().to_vec(), false),
            "sequence 0 of /u, held by a live publisher, was voided by the reclaimer of \
             /t's dead claim (void stamp seen: {void_seen}); the subscriber skipped it"
        );
        drop((m, sub, live, dead));
        survivor.member.region.obj.remove_if_same().unwrap();
    }

    /// As above, but the next topic /u of the freed area has 24-byte messages (slots of 32
    /// bytes where /t had 16): the reclaimer's stale ring handle finds /t's sequence 1 at
    /// byte 16 of the slots, which in /u's ring is payload word 1 of sequence 0, a complete
    /// message. A zero word there reads as a never-written stamp: the void CAS writes
    /// `void(1) = 5` into the message, whose stamp still says complete.
    #[test]
    fn a_reclaimer_preempted_before_its_void_never_writes_into_the_next_topics_messages() {
        use super::BEFORE_INLINE_UNSTICK;
        use crate::pubsub::TopicSpec;
        use alloc::boxed::Box;
        use alloc::rc::Rc;
        use core::cell::RefCell;
        let name = format!("region-inline-tear-{}", std::process::id());
        // `dead` claims sequence 1 of /t.
        let (survivor, dead, _t) = a_dead_inline_claim(&name, 1);
        let r = &*survivor.member.region;

        let msg0: [u8; 24] = core::array::from_fn(|k| if (8..16).contains(&k) { 0 } else { 0xAB });
        let got = Rc::new(RefCell::new(None));
        let out = got.clone();
        let reg = name.clone();
        BEFORE_INLINE_UNSTICK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                let live = Publisher::open(&reg).unwrap();
                let u = match live.register_spec("/u", &TopicSpec::inline(24)) {
                    Ok(u) => u,
                    Err(e) if e.kind() == crate::ErrorKind::InvalidArgument => return,
                    Err(e) => panic!("{e:?}"),
                };
                let s = Subscriber::connect(&reg).unwrap();
                let sub = s.subscribe("/u").unwrap();
                assert_eq!(live.publish(&u, &msg0).unwrap(), 0);
                assert_eq!(live.publish(&u, &[2; 24]).unwrap(), 1);
                *out.borrow_mut() = Some((live, u, s, sub));
            }) as Box<dyn FnOnce()>);
        });
        r.recover(dead.member.index).unwrap();
        let Some((live, _u, _s, mut sub)) = got.borrow_mut().take() else {
            drop(dead);
            survivor.member.region.obj.remove_if_same().unwrap();
            return;
        };
        let m = sub.try_recv().unwrap();
        let seen = (m.seq(), m.to_vec());
        drop((m, sub, live, dead));
        survivor.member.region.obj.remove_if_same().unwrap();
        assert_eq!(
            seen,
            (0, msg0.to_vec()),
            "message 0 of /u delivered altered"
        );
    }

    /// Every index into a table of the region is checked, by every accessor of a table or of a
    /// per-participant or per-topic area: the first index past the end is `Corrupt`, naming the
    /// region, the table and the index (the error is built out of line), and the last one
    /// inside it is accepted.
    #[test]
    fn an_index_past_its_table_is_corrupt() {
        let name = format!("region-index-{}", std::process::id());
        let cfg = Config::default()
            .participants(4)
            .blocks(8)
            .topics(4)
            .inline_topics(2);
        let p = Publisher::create(&name, &cfg).unwrap();
        let r = &*p.member.region;
        let past = |res: crate::Result<()>, table: &str, index: u64| match res {
            Err(crate::Error::Corrupt {
                name: n,
                what,
                value,
                ..
            }) => {
                assert_eq!((n.as_str(), what, value), (name.as_str(), table, index));
            }
            other => panic!("{table} {index}: {other:?}"),
        };
        assert!(r.block_ptr(7).is_ok());
        past(r.block_ptr(8).map(|_| ()), "block index", 8);
        assert!(r.ring_hot(3, false).is_ok());
        past(r.ring_hot(4, true).map(|_| ()), "topic index", 4);
        past(r.topic(4).map(|_| ()), "topic index", 4);
        assert!(r.row(3).is_ok());
        past(r.row(4).map(|_| ()), "participant index", 4);
        let (parts, topics) = (r.geo.participants as u32, r.geo.topics as u32);
        assert!(r.ext(parts - 1).is_ok());
        past(r.ext(parts).map(|_| ()), "participant index", 4);
        assert_eq!(r.holdings(parts - 1).unwrap().len() as u64, r.geo.held);
        past(r.holdings(parts).map(|_| ()), "participant index", 4);
        past(r.inline_record(parts).map(|_| ()), "participant index", 4);
        assert!(r.stats(topics - 1).is_ok());
        past(r.stats(topics).map(|_| ()), "topic index", 4);
        assert!(r.hot(topics - 1).is_ok());
        past(r.hot(topics).map(|_| ()), "topic index", 4);
        assert_eq!(
            r.pubmap(topics - 1).unwrap().len() as u64,
            r.geo.pubmap_words
        );
        past(r.pubmap(topics).map(|_| ()), "topic index", 4);
        assert!(r.inline_base(1).is_ok());
        past(r.inline_base(2).map(|_| ()), "inline area", 2);
    }
}
