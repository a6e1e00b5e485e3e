//! The region's layout: the configuration line, the tables and their offsets. Byte-by-byte
//! description in docs/protocol.md ("Region").

use crate::error::{Error, Result};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Offset of the configuration line (right after the object header).
pub(crate) const CONFIG_OFFSET: u64 = 128;
/// Offset of the registration lock (its own line; touched only by `register`).
pub(crate) const REGISTER_LOCK_OFFSET: u64 = 256;
/// The participants table starts here.
pub(crate) const ROWS_OFFSET: u64 = 512;

/// Limits that the configuration must respect (they bound the tables' sizes and keep every
/// index inside the bits the descriptors and stamps give it).
pub(crate) const MAX_PARTICIPANTS: u64 = 1024;
pub(crate) const MAX_HELD: u64 = 1 << 16;
pub(crate) const MAX_TOPICS: u64 = 4096;
pub(crate) const MAX_RING: u64 = 1 << 20;
pub(crate) const MAX_BLOCKS: u64 = 1 << 24;
/// The largest block a region may have ([`Config::block_size`](super::Config::block_size)),
/// so the largest message of a blocks or latest topic: 2^32 - 64 bytes.
pub const MAX_BLOCK_SIZE: u64 = (1 << 32) - 64;

/// The largest message of an inline topic: its slot stamp and the message share one 64-byte
/// cache line. A latest-value inline topic may carry larger messages, up to
/// [`latest_inline_max`].
pub const INLINE_MAX: usize = 56;

/// The largest message of a latest-value inline topic in a region of `ring_slots` descriptor
/// slots per ring: its inline area holds `64 * ring_slots` bytes of slots, and a latest-value
/// ring keeps at least four of them (a reader's copy of the newest message survives three more
/// publishes). 56 bytes with 2 slots, 4088 with the default 256; never less than
/// [`INLINE_MAX`], and saturating rather than overflowing for a `ring_slots` no region has.
pub const fn latest_inline_max(ring_slots: u64) -> u64 {
    let big = ring_slots.saturating_mul(16).saturating_sub(8);
    if big > INLINE_MAX as u64 {
        big
    } else {
        INLINE_MAX as u64
    }
}

/// The slots of an inline topic's ring of `size`-byte messages in a region of `ring_slots`:
/// `ring_slots` while a slot fits a line (every message up to [`INLINE_MAX`] bytes), else as
/// many slots of the message's stride as the area's `64 * ring_slots` bytes hold.
pub(crate) fn inline_capacity(ring_slots: u64, size: u32) -> u64 {
    let stride = crate::ring::raw::Shape {
        capacity: ring_slots,
        value_size: size as u64,
        gates: 0,
        flags: crate::ring::raw::FLAG_MPMC,
        watermark: 0,
    }
    .stride() as u64;
    ring_slots.min(64 * ring_slots / stride)
}
/// Topic flag: one publisher at a time, which holds the topic's lease word (its epoch's low
/// half << 32 | participant + 1, 0 none; `region::lease_value`): for an inline topic the ring
/// header's publishers word, for a blocks or latest topic [`TopicHot::lease`].
pub(crate) const EXCLUSIVE: u32 = 1;
/// Inline flag: a latest-value topic. Subscribers skip to the newest complete message.
/// Publishers do not look at this flag.
pub(crate) const INLINE_LATEST: u32 = 2;

/// Bytes of one inline area: the ring header (three lines: geometry, claim counter, wake
/// words) and `64 * ring_slots` bytes of slots: `ring_slots` slots of at most one line each, or
/// fewer larger ones ([`inline_capacity`]) (`ring::raw`, no gates).
pub(crate) const fn inline_area_size(ring_slots: u64) -> u64 {
    192 + 64 * ring_slots
}

/// The configuration line. Written by the creator before `ready`; every opener reads it once,
/// validates it (recomputing every offset) and keeps its own copy.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct RegionConfig {
    pub(crate) participants: AtomicU64,
    pub(crate) held: AtomicU64,
    pub(crate) topics: AtomicU64,
    pub(crate) ring_slots: AtomicU64,
    pub(crate) blocks: AtomicU64,
    pub(crate) block_size: AtomicU64,
    /// The size of the whole layout (equals the object header's `total_size`).
    pub(crate) total: AtomicU64,
    /// Inline areas (rings for inline topics), `0 ..= topics`.
    pub(crate) inline_topics: AtomicU64,
}

/// The topic-entry states.
pub(crate) const TOPIC_FREE: u32 = 0;
pub(crate) const TOPIC_READY: u32 = 2;
/// Being unregistered: publishes are refused, those in flight complete.
pub(crate) const TOPIC_CLOSING: u32 = 3;
/// Unregistered: subscribers drain up to `close_seq`, then get `Closed`; the entry is freed
/// (state 0) once no subscription to it is left.
pub(crate) const TOPIC_CLOSED: u32 = 4;

/// Topic modes as stored.
pub(crate) const MODE_BLOCKS: u32 = 1;
pub(crate) const MODE_LATEST: u32 = 2;
pub(crate) const MODE_INLINE: u32 = 3;

/// The descriptor slots a latest topic's ring uses, the first of its area's `ring_slots`: its
/// readers only ever want the newest value, and the slot before the newest keeps a whole value
/// readable while the next is being committed. Every other slot would only keep an old block
/// out of the pool (and, for large messages, out of the cache).
pub(crate) const LATEST_SLOTS: u64 = 2;

/// One topic-table entry, 256 bytes. Written only under the registration lock, before
/// `state` becomes [`TOPIC_READY`] (Release); afterwards only `state` changes (to
/// [`TOPIC_CLOSING`] and [`TOPIC_CLOSED`] by an unregistering publisher, back to
/// [`TOPIC_FREE`] under the lock once no subscription is left).
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct TopicEntry {
    /// [`TOPIC_FREE`], [`TOPIC_READY`], [`TOPIC_CLOSING`] or [`TOPIC_CLOSED`].
    pub(crate) state: AtomicU32,
    /// [`MODE_BLOCKS`], [`MODE_LATEST`] or [`MODE_INLINE`].
    pub(crate) mode: AtomicU32,
    /// Bytes of `name`, `2 ..= 127`.
    pub(crate) name_len: AtomicU32,
    /// Incremented by every registration of the entry (wrapping): handles and subscriptions
    /// of an earlier registration see the change.
    pub(crate) generation: AtomicU32,
    /// A typed topic's fingerprint (see `fingerprint`), 0 for an untyped topic.
    pub(crate) type_fingerprint: AtomicU64,
    /// `size_of` the type: `1 ..= block size`, or an inline topic's `msg_size`. Meaningful
    /// when the fingerprint is non-zero.
    pub(crate) type_size: AtomicU64,
    /// `align_of` the type: a power of two `<= 64`.
    pub(crate) type_align: AtomicU64,
    /// Bytes of `type_name`, `0 ..= 64`.
    pub(crate) type_name_len: AtomicU64,
    /// The type's name (cut to 64 bytes), for error messages; packed like `name`.
    pub(crate) type_name: [AtomicU64; 8],
    /// An inline topic's area, `0 .. inline_topics`.
    pub(crate) inline_area: AtomicU32,
    /// An inline topic's message size, `1 ..= INLINE_MAX` (`..= latest_inline_max` for a
    /// latest-value one); 0 for other modes.
    pub(crate) msg_size: AtomicU32,
    /// [`TYPE_NAMED`] when the type's stable name is part of its fingerprint (then
    /// `type_name` holds it); otherwise `type_name` is the Rust path, for messages only.
    pub(crate) type_flags: AtomicU32,
    /// [`EXCLUSIVE`] when one publisher at a time holds the topic's lease (any mode: the
    /// single-publisher paths); inline topics: [`INLINE_LATEST`] for a latest-value topic.
    pub(crate) flags: AtomicU32,
    /// The name, little-endian bytes packed into words, zero-padded.
    pub(crate) name: [AtomicU64; 16],
}

/// A topic's hot line: the tail publishers advance, the words subscribers park on, and the
/// lease of a single-publisher topic.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct TopicHot {
    /// Next sequence to claim; see `pubsub::ring`. Written by publishers (a CAS, which any
    /// publisher may do for another: helping), or by the lease holder alone with plain stores
    /// on a single-publisher topic.
    pub(crate) tail: AtomicU64,
    /// Subscribers about to park (a count, raised and lowered by each parker; the handshake
    /// of `ring::wake` with the machine-wide barrier).
    pub(crate) waiters: AtomicU32,
    /// The futex word subscribers park on; bumped (wrapping) before every wake, by whoever
    /// wakes them: a publisher after its commit, an unregistering publisher, a reclaimer that
    /// finished or voided a dead publisher's claim.
    pub(crate) notify: AtomicU32,
    /// A single-publisher ([`EXCLUSIVE`]) blocks or latest topic: the lease of the participant
    /// that holds it (`region::lease_value`); 0 none. Written by the registrant that takes it (CAS, from 0 or from a dead
    /// holder), by its holder or the reclaimer of its row when the holder leaves or dies, and
    /// cleared by the registration of a free entry (under the register lock).
    pub(crate) lease: AtomicU64,
}

/// A topic's statistics, on their own line so that reading them (another process, the CLI)
/// never touches the hot path's lines. `published` is not here: it is the tail.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct TopicStatsLine {
    /// Unused (zero): the number of subscriptions is counted from the holdings, where every
    /// subscription is recorded (`pubsub::pool::SUB_TAG`).
    _subscribers: AtomicU64,
    /// Messages subscribers reported lost (sum of every `Lagged { skipped }`).
    pub(crate) lagged: AtomicU64,
    /// Unfinished publishes of dead publishers that a survivor completed or voided.
    pub(crate) recovered: AtomicU64,
    /// The pid of a publisher of the topic that died and whose row was then taken by another
    /// participant (so its bit in the publishers map is gone), 0 none; cleared when a
    /// publisher registers the topic, and when the topic is freed. Written by joiners,
    /// reclaimers and registrars, and by the freer.
    pub(crate) died: AtomicU64,
    /// The first sequence of this registration (the tail, or the inline claim counter, when
    /// it was registered): history never reaches below it. Written by the registrar.
    pub(crate) start_seq: AtomicU64,
    /// Subscribers deliver sequences below this and then get `Closed`; `u64::MAX` until the
    /// topic is unregistered. Written by the unregistering publisher, and reset to
    /// `u64::MAX` by the next registration of the entry (under the registration lock).
    pub(crate) close_seq: AtomicU64,
    /// The publisher unregistering the topic (state CLOSING): its participant index + 1, 0
    /// none. Written by it under the registration lock before its move to CLOSING, reset by
    /// the next registration of the entry; read by a subscriber that finds the topic CLOSING
    /// for longer than a check period (`finish_dead_close`).
    pub(crate) closer: AtomicU64,
    /// The closer's identity as its row's `owner` word records it (without the holds bit):
    /// a row taken over by another process since is not the closer. Written with `closer`.
    pub(crate) closer_id: AtomicU64,
}

/// Per-participant pub/sub state next to its liveness row: its role and the record of the
/// publish in flight, which lets a survivor finish or void it after a crash.
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct MemberExt {
    /// 0 none, 1 publisher, 2 subscriber, 3 dead publisher (written by its reclaimer).
    /// Written by the owner after its claim.
    pub(crate) role: AtomicU32,
    /// Topic index + 1 of the free the owner is making (`Region::free_topic`), 0 when none:
    /// a registrar does not take an entry that a row's `freeing` names, and the reclaimer of
    /// an owner killed in the free finishes it. Written by the owner, under the registration
    /// lock; after its death, cleared by the reclaimer holding its row. (Versions 15 and 16
    /// used the word for parks, then left it zero.)
    pub(crate) freeing: AtomicU32,
    /// Topic index + 1 of the publish in flight, 0 when none. Written by the owner; after its
    /// death, by the reclaimer holding its row.
    pub(crate) pub_topic: AtomicU64,
    /// The sequence the owner is claiming or holds. Owner only.
    pub(crate) pub_seq: AtomicU64,
    /// The descriptor being published. Owner only.
    pub(crate) pub_new: AtomicU64,
    /// `b + 1` of the block whose descriptor the publish displaced (its reference is ours
    /// until released; bits 62 and 63 as `pubsub::pool`'s `KEPT_OLD` and `DONE_OLD`). Written
    /// by the owner (and, freeing a topic, through it: `Region::free_topic`); after its death,
    /// by the reclaimer holding its row.
    pub(crate) pub_old: AtomicU64,
    /// The inline topic (index + 1) this publisher publishes, 0 none (`pubsub::inline`).
    /// Written by the owner; after its death, cleared by the reclaimer holding its row.
    pub(crate) inl_topic: AtomicU64,
    /// The inline claim in flight (`pubsub::inline`: `IDLE | b`, `CLAIMING | b`, or a
    /// sequence). Written by the owner; after its death, cleared by the reclaimer holding its
    /// row.
    pub(crate) inl_seq: AtomicU64,
    /// The owner's identity as its row's `owner` word records it (pid and start time, without
    /// the holds bit) when its process issues its own SeqCst fences on the light side of the
    /// machine-wide handshake (its `membarrier` registration failed, `ring::wake`); any other
    /// value (0, or a previous owner's identity) says a freer's fence alone does not order
    /// it. Written by the owner when it joins.
    pub(crate) fenced: AtomicU64,
}

pub(crate) const ROLE_PUBLISHER: u32 = 1;
pub(crate) const ROLE_SUBSCRIBER: u32 = 2;
/// A publisher that died and whose row a survivor reclaimed (so that subscribers still learn
/// of the death after the row stopped saying "dead").
pub(crate) const ROLE_DEAD_PUBLISHER: u32 = 3;

#[cfg(not(loom))]
const _: () = {
    // A block's mark names any participant (pubsub::pool).
    assert!(MAX_PARTICIPANTS - 1 <= crate::pubsub::pool::MAX_PARTICIPANT as u64);
    assert!(MAX_HELD <= crate::pubsub::pool::PUB_OLD as u64);
    assert!(core::mem::size_of::<RegionConfig>() == 64);
    assert!(core::mem::size_of::<TopicEntry>() == 256);
    assert!(core::mem::size_of::<TopicHot>() == 64);
    assert!(core::mem::size_of::<TopicStatsLine>() == 64);
    assert!(core::mem::size_of::<MemberExt>() == 64);
};

/// The validated shape of a region: counts and the offsets derived from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) participants: u64,
    pub(crate) held: u64,
    pub(crate) topics: u64,
    pub(crate) ring_slots: u64,
    pub(crate) blocks: u64,
    pub(crate) block_size: u64,
    pub(crate) inline_topics: u64,
    pub(crate) rows: u64,
    pub(crate) ext: u64,
    pub(crate) holdings: u64,
    pub(crate) topic_table: u64,
    pub(crate) hot: u64,
    pub(crate) stats: u64,
    pub(crate) pubmap: u64,
    /// Words per topic in the publishers map: `ceil(participants / 64)`.
    pub(crate) pubmap_words: u64,
    pub(crate) rings: u64,
    pub(crate) inline: u64,
    pub(crate) meta: u64,
    pub(crate) data: u64,
    pub(crate) total: u64,
}

fn round(n: u64, to: u64) -> Option<u64> {
    n.checked_add(to - 1).map(|x| x & !(to - 1))
}

impl Geometry {
    /// Checks the counts and derives the offsets. `Err((what, value, expected))` names the
    /// first count out of range.
    pub(crate) fn new(
        participants: u64,
        held: u64,
        topics: u64,
        ring_slots: u64,
        blocks: u64,
        block_size: u64,
        inline_topics: u64,
    ) -> core::result::Result<Geometry, (&'static str, u64, &'static str)> {
        let check = |what, v: u64, lo: u64, hi: u64, expected| {
            if v < lo || v > hi {
                Err((what, v, expected))
            } else {
                Ok(())
            }
        };
        check(
            "participants",
            participants,
            1,
            MAX_PARTICIPANTS,
            "1 ..= 1024",
        )?;
        check(
            "samples held per participant",
            held,
            1,
            MAX_HELD,
            "1 ..= 65536",
        )?;
        check("topics", topics, 1, MAX_TOPICS, "1 ..= 4096")?;
        check(
            "ring slots",
            ring_slots,
            2,
            MAX_RING,
            "a power of two, 2 ..= 2^20",
        )?;
        if !ring_slots.is_power_of_two() {
            return Err(("ring slots", ring_slots, "a power of two, 2 ..= 2^20"));
        }
        check("blocks", blocks, 1, MAX_BLOCKS, "1 ..= 2^24")?;
        check(
            "block size",
            block_size,
            64,
            MAX_BLOCK_SIZE,
            "a multiple of 64, 64 ..= 2^32 - 64",
        )?;
        if !block_size.is_multiple_of(64) {
            return Err((
                "block size",
                block_size,
                "a multiple of 64, 64 ..= 2^32 - 64",
            ));
        }
        check(
            "inline topics",
            inline_topics,
            0,
            topics,
            "0 ..= the number of topics",
        )?;
        // All counts are bounded above, so only the block area can overflow.
        let overflow = ("region size", u64::MAX, "below 2^64");
        let rows = ROWS_OFFSET;
        let ext = rows + 64 * participants;
        let holdings = ext + 64 * participants;
        let topic_table = round(holdings + 4 * participants * held, 64).ok_or(overflow)?;
        let hot = topic_table + 256 * topics;
        let stats = hot + 64 * topics;
        let pubmap = stats + 64 * topics;
        let pubmap_words = participants.div_ceil(64);
        let rings = round(pubmap + 8 * pubmap_words * topics, 64).ok_or(overflow)?;
        let inline = round(rings + 16 * ring_slots * topics, 64).ok_or(overflow)?;
        let meta = inline + inline_area_size(ring_slots) * inline_topics;
        let data = round(meta + 64 * blocks, 4096).ok_or(overflow)?;
        let total = blocks
            .checked_mul(block_size)
            .and_then(|b| b.checked_add(data))
            .ok_or(overflow)?;
        Ok(Geometry {
            participants,
            held,
            topics,
            ring_slots,
            blocks,
            block_size,
            inline_topics,
            rows,
            ext,
            holdings,
            topic_table,
            hot,
            stats,
            pubmap,
            pubmap_words,
            rings,
            inline,
            meta,
            data,
            total,
        })
    }

    /// Writes the configuration line (creator only).
    pub(crate) fn store(&self, c: &RegionConfig) {
        // Relaxed: published by the object's Release `ready` store.
        c.participants.store(self.participants, Ordering::Relaxed);
        c.held.store(self.held, Ordering::Relaxed);
        c.topics.store(self.topics, Ordering::Relaxed);
        c.ring_slots.store(self.ring_slots, Ordering::Relaxed);
        c.blocks.store(self.blocks, Ordering::Relaxed);
        c.block_size.store(self.block_size, Ordering::Relaxed);
        c.total.store(self.total, Ordering::Relaxed);
        c.inline_topics.store(self.inline_topics, Ordering::Relaxed);
    }

    /// Reads and validates the configuration line of the region `name`, mapped `mapped` bytes.
    pub(crate) fn load(name: &str, c: &RegionConfig, mapped: u64) -> Result<Geometry> {
        // Relaxed: written before `ready`, which `Object::open` loaded with Acquire. Every
        // value is validated here and copied: a peer that rewrites the line later changes
        // nothing in this process.
        let g = Geometry::new(
            c.participants.load(Ordering::Relaxed),
            c.held.load(Ordering::Relaxed),
            c.topics.load(Ordering::Relaxed),
            c.ring_slots.load(Ordering::Relaxed),
            c.blocks.load(Ordering::Relaxed),
            c.block_size.load(Ordering::Relaxed),
            c.inline_topics.load(Ordering::Relaxed),
        )
        .map_err(|(what, value, expected)| Error::corrupt(name, what, value, expected))?;
        let total = c.total.load(Ordering::Relaxed);
        if total != g.total {
            return Err(Error::corrupt(
                name,
                "region size",
                total,
                "the size its counts imply",
            ));
        }
        if g.total > mapped {
            return Err(Error::Truncated {
                name: name.into(),
                size: mapped,
                needed: g.total,
            });
        }
        Ok(g)
    }
}

/// A typed topic's fingerprint, never 0: FNV-1a (64-bit) over a domain byte, the type's
/// stable name when it has one, its size and its alignment (both as 8 little-endian bytes).
/// Nothing in it depends on the compiler: two builds, two crates or two languages that give
/// the same name, size and alignment agree. Without a name (`b'L'`: layout only), types of the
/// same size and alignment are indistinguishable; with one (`b'N'`), the name must match too.
pub(crate) fn fingerprint(name: Option<&str>, size: u64, align: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let domain = if name.is_some() { b'N' } else { b'L' };
    for b in core::iter::once(domain)
        .chain(name.unwrap_or("").bytes())
        .chain(size.to_le_bytes())
        .chain(align.to_le_bytes())
    {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

/// Topic-entry type flag: the type's name is part of its fingerprint.
pub(crate) const TYPE_NAMED: u32 = 1;
/// The longest stable type name (it is stored whole in the entry, for error messages).
pub const TYPE_NAME_MAX: usize = 64;

/// Packs a name into `N` words (bytes beyond `8 * N` are cut).
pub(crate) fn pack<const N: usize>(name: &str) -> [u64; N] {
    let mut words = [0u64; N];
    for (i, b) in name.bytes().take(8 * N).enumerate() {
        words[i / 8] |= (b as u64) << ((i % 8) * 8);
    }
    words
}

/// Packs a topic name into the topic entry's words.
pub(crate) fn pack_name(name: &str) -> [u64; 16] {
    pack::<16>(name)
}

/// Unpacks `len` bytes from words.
pub(crate) fn unpack(words: &[AtomicU64], len: usize) -> alloc::vec::Vec<u8> {
    (0..len.min(8 * words.len()))
        // Relaxed: the caller loaded the entry's state with Acquire first.
        .map(|k| (words[k / 8].load(Ordering::Relaxed) >> ((k % 8) * 8)) as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_checks_every_count() {
        let g = Geometry::new(32, 256, 64, 256, 1024, 4096, 8).unwrap();
        assert_eq!(g.data % 4096, 0);
        assert_eq!(g.total, g.data + 1024 * 4096);
        assert_eq!(g.inline % 64, 0);
        assert_eq!(g.meta, g.inline + 8 * (192 + 64 * 256));
        assert!(Geometry::new(0, 256, 64, 256, 1024, 4096, 8).is_err());
        assert!(Geometry::new(32, 256, 64, 100, 1024, 4096, 8).is_err());
        assert!(Geometry::new(32, 256, 64, 256, 1024, 100, 8).is_err());
        assert!(Geometry::new(32, 256, 64, 256, 1 << 25, 4096, 8).is_err());
        assert!(Geometry::new(32, 256, 64, 256, 1024, 4096, 65).is_err());
    }

    /// Each count is accepted at both ends of its documented range (docs/protocol.md,
    /// "Configuration line") and refused just outside it, naming the count and the value read.
    /// The values outside are chosen so that only the range refuses them: 1 and 2^21 ring
    /// slots are powers of two, 0 and 2^32 bytes of block are multiples of 64.
    #[test]
    fn every_count_is_refused_just_outside_its_range() {
        // participants, held, topics, ring slots, blocks, block size, inline topics
        let base = [32u64, 256, 64, 256, 1024, 4096, 0];
        let new = |k: usize, v: u64| {
            let mut c = base;
            c[k] = v;
            Geometry::new(c[0], c[1], c[2], c[3], c[4], c[5], c[6])
                .map(|_| ())
                .map_err(|(what, value, _)| (what, value))
        };
        let ranges = [
            (
                0,
                "participants",
                1,
                MAX_PARTICIPANTS,
                0,
                MAX_PARTICIPANTS + 1,
            ),
            (
                1,
                "samples held per participant",
                1,
                MAX_HELD,
                0,
                MAX_HELD + 1,
            ),
            (2, "topics", 1, MAX_TOPICS, 0, MAX_TOPICS + 1),
            (3, "ring slots", 2, MAX_RING, 1, 2 * MAX_RING),
            (4, "blocks", 1, MAX_BLOCKS, 0, MAX_BLOCKS + 1),
            (5, "block size", 64, MAX_BLOCK_SIZE, 0, MAX_BLOCK_SIZE + 64),
            (6, "inline topics", 0, 64, 0, 65),
        ];
        for (k, what, lo, hi, below, above) in ranges {
            assert_eq!(new(k, lo), Ok(()), "{what} {lo}");
            assert_eq!(new(k, hi), Ok(()), "{what} {hi}");
            if lo > 0 {
                assert_eq!(new(k, below), Err((what, below)), "{what} {below}");
            }
            assert_eq!(new(k, above), Err((what, above)), "{what} {above}");
        }
    }

    #[test]
    fn an_inline_area_holds_the_ring_of_the_largest_inline_message() {
        use crate::ring::raw::{FLAG_MPMC, Shape};
        for slots in [2, 256, 1 << 20] {
            let shape = Shape {
                capacity: slots,
                value_size: INLINE_MAX as u64,
                gates: 0,
                flags: FLAG_MPMC,
                watermark: 0,
            };
            assert_eq!(shape.bytes() as u64, inline_area_size(slots));
        }
    }

    #[test]
    fn an_inline_area_holds_a_latest_ring_of_every_allowed_size() {
        use crate::ring::raw::{FLAG_MPMC, Shape};
        for slots in [2, 8, 256, 1 << 20] {
            let max = latest_inline_max(slots);
            for size in [1, 8, 56, 57, 64, 120, 1000, 1017, 4088, max - 1, max] {
                if size > max {
                    continue;
                }
                let capacity = inline_capacity(slots, size as u32);
                let shape = Shape {
                    capacity,
                    value_size: size,
                    gates: 0,
                    flags: FLAG_MPMC,
                    watermark: 0,
                };
                assert!(
                    shape.bytes() as u64 <= inline_area_size(slots),
                    "{size} B in {slots} slots: {} > {}",
                    shape.bytes(),
                    inline_area_size(slots)
                );
                assert!(capacity.is_power_of_two(), "{size} B in {slots} slots");
                assert!(capacity >= slots.min(4), "{size} B in {slots} slots");
            }
        }
        assert_eq!(latest_inline_max(0), INLINE_MAX as u64);
        assert_eq!(latest_inline_max(u64::MAX), u64::MAX - 8);
    }
}
