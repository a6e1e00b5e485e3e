//! Publish/subscribe in a named region: [`Publisher`], [`Subscriber`], [`Loan`], [`Sample`].
//!
//! The region layout (docs/protocol.md, "Region"): the object header, a configuration line,
//! a line left zero (the pool's free-list head in layout version 1), the registration lock,
//! the participants table (liveness rows, then one line per participant with its
//! publish-in-flight record), the holdings (per participant, every block reference it
//! holds), the topic table, one hot line and one statistics line per topic, one descriptor
//! ring per topic, the inline areas (a seqlock ring each, for inline topics), the blocks'
//! metadata, and the blocks (page-aligned).
//!
//! Ordering and slot ownership with several publishers on one topic: a publisher claims the
//! next sequence by a CAS on that sequence's slot stamp, which writes its participant index
//! into the stamp, and then helps the shared tail along. Sequences are totally ordered per
//! topic (every subscriber sees the same order); the claim order decides it. A slot whose
//! previous lap is still held (claimed, not committed) by a live publisher is never taken from
//! it: the next publisher waits (bounded by [`Config::claim_timeout`]). If the holder is
//! dead, the waiter reclaims its row, which commits or voids the held sequence.

mod layout;
mod name;
mod region;
// Read-only views for tools (`weft info`, `weft clean`).
pub(crate) mod inspect;

pub use layout::{INLINE_MAX, MAX_BLOCK_SIZE, TYPE_NAME_MAX, latest_inline_max};
pub use name::{TOPIC_MAX, split_uri, validate_topic};

use self::layout::{
    CONFIG_OFFSET, EXCLUSIVE, Geometry, INLINE_LATEST, MODE_BLOCKS, MODE_INLINE, MODE_LATEST,
    RegionConfig, TOPIC_CLOSED, TOPIC_CLOSING, TOPIC_FREE, TOPIC_READY, TYPE_NAMED, fingerprint,
    pack, pack_name,
};
use self::region::{BlockArea, Member, Region, TypeInfo, corrupt, inline_shape};
use super::object::{Object, ObjectKind};
use crate::WaitStrategy;
use crate::error::{Error, Result, Role};
use crate::pubsub::ring::{Claimed, Read, RingAt, SEQ_LIMIT, desc, undesc};
use crate::pubsub::{inline, pool};
use crate::ring::raw::{self, Placement, RawRing};
use crate::ring::wake;
use crate::shm::liveness::PeerStatus;
use crate::sync::{Arc, AtomicU64, Ordering, fence};
use crate::sys;
use crate::wait::{Deadline, Next, Waiter};
use alloc::string::String;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::time::Duration;

/// A parked subscriber wakes at least this often to look for a dead publisher's stuck claim.
const PARK_SLICE: Duration = Duration::from_millis(50);
/// How long `create` waits for an existing region while deciding whether it is stale.
const STALE_OPEN_TIMEOUT: Duration = Duration::from_millis(250);
/// A waiting subscriber checks its publishers' liveness at most this often.
const CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// Retries of one receive before it reports `Empty` (each retry means the slot changed under
/// the reader: a publisher lapped it, or a peer scribbles on it).
const READ_RETRIES: u32 = 10_000;

/// How a topic carries its messages. Chosen at register time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TopicMode {
    /// Loaned blocks from the region's pool, reference-counted, named by 8-byte descriptors in
    /// the topic's ring: any payload up to the block size, zero copies. The default.
    #[default]
    Blocks,
    /// The newest value only: a receive skips to the newest committed message (never an
    /// older one, never [`Error::Lagged`]). Values live in pool blocks like `Blocks` (the
    /// ring's slot is overwritten in place, the block behind it is not): a reader always holds
    /// a whole value that no writer touches until it lets go, so it is never torn, and a
    /// reader that dies holding one blocks nobody (its block is reclaimed). The topic's ring
    /// has two slots whatever [`Config::ring_slots`] says (the newest value, and the one
    /// before it while the next is committed), so it keeps two blocks of the pool, and a
    /// publisher that writes values nobody holds cycles through three blocks, which stay in
    /// the cache when they fit. For values of at most [`latest_inline_max`] bytes (4088 with
    /// the default ring), an inline topic with [`TopicSpec::latest`] reads the same way
    /// without the pool, copying the value out.
    Latest,
    /// Small fixed-size messages (1 to [`INLINE_MAX`] = 56 bytes, so that a slot's stamp and
    /// its message share one cache line; a latest-value inline topic, [`TopicSpec::latest`],
    /// up to [`latest_inline_max`] bytes) copied into the slots of a seqlock ring in the region:
    /// the broadcast ring of [`crate::ring`] placed in shared memory. No pool, no reference
    /// counts: the fastest path for ticks. Any number of publishers (they claim sequences
    /// with one `fetch_add`); exact [`Error::Lagged`]; 64-bit sequences. A received
    /// [`Sample`] holds a *copy* of the message (that is what a seqlock gives: the slot may
    /// be overwritten the moment after the copy), so holding samples holds nothing in the
    /// region. Register with [`TopicSpec::inline`] or a typed [`TopicSpec`]; the region has
    /// [`Config::inline_topics`] rings for them.
    Inline,
}

/// The shape of a region and how its handles behave.
///
/// # Examples
/// ```
/// use weft::pubsub::Config;
/// let config = Config::default().blocks(256).block_size(64 << 10).ring_slots(128);
/// assert_eq!(config.block_size_bytes(), 64 << 10);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    participants: u64,
    max_held: u64,
    topics: u64,
    ring_slots: u64,
    blocks: u64,
    block_size: u64,
    wait: WaitStrategy,
    liveness_timeout: Duration,
    open_timeout: Duration,
    claim_timeout: Duration,
    hugepages: bool,
    lock_memory: bool,
    /// `None`: the default, `min(8, topics)`.
    inline_topics: Option<u64>,
}

impl Default for Config {
    /// 32 participants holding up to 256 blocks each, 64 topics of 256 descriptors (8 of them
    /// may be inline), 1024 blocks of 4 KiB, [`WaitStrategy::Adaptive`], 1 s liveness timeout.
    fn default() -> Config {
        Config {
            participants: 32,
            max_held: 256,
            topics: 64,
            ring_slots: 256,
            blocks: 1024,
            block_size: 4096,
            wait: WaitStrategy::Adaptive,
            liveness_timeout: Duration::from_secs(1),
            open_timeout: Duration::from_secs(1),
            claim_timeout: Duration::from_secs(1),
            hugepages: false,
            lock_memory: false,
            inline_topics: None,
        }
    }
}

impl Config {
    /// Rows in the participants table (publishers and subscribers together), 1 ..= 1024.
    pub fn participants(mut self, n: usize) -> Config {
        self.participants = n as u64;
        self
    }
    /// Block references (samples and loans) and subscriptions one participant may hold at
    /// once, 1 ..= 65536. A subscription that has received borrowed samples
    /// ([`Subscription::try_recv_ref`]) keeps one more entry reserved for them.
    pub fn max_held(mut self, n: usize) -> Config {
        self.max_held = n as u64;
        self
    }
    /// Topics the region can hold, 1 ..= 4096.
    pub fn topics(mut self, n: usize) -> Config {
        self.topics = n as u64;
        self
    }
    /// Descriptors per topic ring (a power of two, 2 ..= 2^20): how far a subscriber may fall
    /// behind before it lags, and how many blocks of the pool a blocks topic's ring keeps
    /// (a [`TopicMode::Latest`] topic's ring has 2, whatever this says). Also the slots of an
    /// inline topic's ring (its area holds 64 bytes per slot), which bounds a latest-value
    /// inline topic's messages ([`latest_inline_max`]).
    pub fn ring_slots(mut self, n: usize) -> Config {
        self.ring_slots = n as u64;
        self
    }
    /// Blocks in the pool, 1 ..= 2^24.
    pub fn blocks(mut self, n: usize) -> Config {
        self.blocks = n as u64;
        self
    }
    /// Bytes per block (the largest payload): a multiple of 64, 64 ..= 2^32 - 64.
    pub fn block_size(mut self, n: usize) -> Config {
        self.block_size = n as u64;
        self
    }
    /// The configured block size.
    pub fn block_size_bytes(&self) -> usize {
        self.block_size as usize
    }
    /// How blocking receives wait.
    pub fn wait(mut self, wait: WaitStrategy) -> Config {
        self.wait = wait;
        self
    }
    /// How long a participant whose process cannot be checked through /proc may go without a
    /// heartbeat before it is considered dead.
    pub fn liveness_timeout(mut self, t: Duration) -> Config {
        self.liveness_timeout = t;
        self
    }
    /// How long `open`/`connect` wait for a region's creator to finish.
    pub fn open_timeout(mut self, t: Duration) -> Config {
        self.open_timeout = t;
        self
    }
    /// How long a publish waits for a live publisher that holds the slot it needs (claimed
    /// one lap ago, not committed yet) before it gives up with [`Error::Timeout`].
    pub fn claim_timeout(mut self, t: Duration) -> Config {
        self.claim_timeout = t;
        self
    }
    /// How many topics of the region may be [`TopicMode::Inline`], `0 ..=` [`Config::topics`]
    /// (default: 8, or every topic if there are fewer). Each has an area of
    /// `64 * ring_slots` bytes of slots ([`Config::ring_slots`] slots of up to 64 bytes, or
    /// fewer larger ones for a latest-value topic), set aside when the region is created.
    pub fn inline_topics(mut self, n: usize) -> Config {
        self.inline_topics = Some(n as u64);
        self
    }
    /// Ask for transparent huge pages (advisory).
    pub fn hugepages(mut self, on: bool) -> Config {
        self.hugepages = on;
        self
    }
    /// Lock the region in memory (`mlock`).
    pub fn lock_memory(mut self, on: bool) -> Config {
        self.lock_memory = on;
        self
    }

    fn geometry(&self) -> Result<Geometry> {
        Geometry::new(
            self.participants,
            self.max_held,
            self.topics,
            self.ring_slots,
            self.blocks,
            self.block_size,
            self.inline_topics.unwrap_or(self.topics.min(8)),
        )
        .map_err(|(what, value, expected)| Error::InvalidArgument {
            what,
            value,
            expected,
        })
    }
}

/// A registered topic of one region: pass it to [`Publisher::loan`] and [`Publisher::publish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    index: u32,
    name: String,
    /// Identifies the region (`Region::id`) the handle came from.
    region: u64,
    /// The recorded type's fingerprint, for a typed topic.
    fingerprint: Option<u64>,
    mode: TopicMode,
    /// Where an inline topic's ring lies, validated at register.
    inline: Option<InlineTopic>,
    /// A single-publisher topic, whose lease this publisher holds.
    exclusive: bool,
    /// The registration the handle belongs to (`TopicEntry::generation`).
    generation: u32,
    /// A typed topic's `(size, alignment)`, as registered.
    layout: Option<(u64, u64)>,
}

/// An inline topic's ring, found and validated once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct InlineTopic {
    place: Placement,
    size: u32,
    /// One publisher at a time (we hold the lease): the ring's SPMC path.
    exclusive: bool,
    /// The first byte of the topic's inline area, and the topic's table entry, in the mapping
    /// of the region the handle came from (`Topic::region`): used only by a publisher that found
    /// that region to be its own (`Publisher::check_topic`), whose mapping then outlives the
    /// use, so that a publish resolves neither again.
    base: NonNull<u8>,
    entry: NonNull<layout::TopicEntry>,
}

// SAFETY: the two pointers of `InlineTopic` are dereferenced only by a publisher of the
// handle's own region (see the field), under that publisher's borrow; a handle by itself
// touches no memory. The rest is plain data.
unsafe impl Send for Topic {}
// SAFETY: as above; nothing in a handle is mutable.
unsafe impl Sync for Topic {}

impl InlineTopic {
    /// The topic's ring.
    ///
    /// # Safety
    /// The handle came from the caller's region (`Publisher::check_topic`), whose mapping
    /// outlives the ring's use.
    #[inline(always)]
    unsafe fn ring(&self) -> RawRing {
        // SAFETY: `place` came from a ring validated over the area at `base`, in the mapping
        // the caller's contract keeps alive.
        unsafe { RawRing::at(self.base, self.place) }
    }

    /// The topic's table entry.
    ///
    /// # Safety
    /// As [`InlineTopic::ring`], the mapping outliving `'a`.
    #[inline(always)]
    unsafe fn entry<'a>(&self) -> &'a layout::TopicEntry {
        // SAFETY: a checked index's entry at register, in the mapping the caller's contract
        // keeps alive for `'a`; all atomics.
        unsafe { self.entry.as_ref() }
    }
}

/// A subscription's spare holdings entry (`spare`): the one it has, while it is reserved and
/// holds nothing; else a newly reserved one, which becomes the spare (a spare whose borrowed
/// sample was forgotten still holds its block, which the member's recovery releases).
#[inline(always)]
fn spare_of(member: &Member, spare: &mut Option<u32>) -> Result<u32> {
    match *spare {
        Some(e) if member.is_spare(e) => Ok(e),
        _ => {
            let e = member.reserve_entry()?;
            *spare = Some(e);
            Ok(e)
        }
    }
}

/// `Ok` while entry `e` holds registration `generation`, ready for publishes; else `Closed`.
#[inline(always)]
fn entry_open(e: &layout::TopicEntry, generation: u32) -> Result<()> {
    // Acquire: pairs with the Release stores of `state` (a registration's fields, or an
    // unregistering publisher's close, come first). The generation is only compared.
    if e.state.load(Ordering::Acquire) != TOPIC_READY
        || e.generation.load(Ordering::Relaxed) != generation
    {
        return Err(Error::Closed);
    }
    Ok(())
}

impl Topic {
    /// The topic's path ("/prices/AAPL").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The topic's mode.
    pub fn mode(&self) -> TopicMode {
        self.mode
    }

    /// An inline topic's message size in bytes; `None` for other modes.
    pub fn message_size(&self) -> Option<usize> {
        self.inline.map(|i| i.size as usize)
    }
}

/// How a topic is registered ([`Publisher::register_spec`]): its mode and, for a typed topic,
/// its type; for an untyped inline topic, its message size.
///
/// # Examples
/// ```
/// use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
/// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { price: f64, size: u64 }
/// # let region = format!("doc-spec-{}", std::process::id());
/// let publisher = Publisher::create(&region, &Config::default())?;
/// let ticks = publisher.register_spec("/ticks", &TopicSpec::new(TopicMode::Inline).typed::<Tick>())?;
/// let raw = publisher.register_spec("/raw", &TopicSpec::inline(16))?;
/// assert_eq!(ticks.message_size(), Some(16));
/// let subscriber = Subscriber::connect(&region)?;
/// let mut sub = subscriber.subscribe_typed::<Tick>("/ticks")?;
/// publisher.publish_typed(&ticks, &Tick { price: 189.5, size: 100 })?;
/// assert_eq!(sub.try_recv()?.value::<Tick>()?.size, 100);   // a copy, taken by the seqlock
/// publisher.publish(&raw, &[7; 16])?;
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    mode: TopicMode,
    ty: Option<TypeInfo>,
    size: Option<usize>,
    exclusive: bool,
    latest: bool,
}

impl TopicSpec {
    /// An untyped topic of `mode` (an inline one also needs [`TopicSpec::size`] or a type).
    pub fn new(mode: TopicMode) -> TopicSpec {
        TopicSpec {
            mode,
            ty: None,
            size: None,
            exclusive: false,
            latest: false,
        }
    }

    /// An untyped inline topic of `size`-byte messages (1 ..= [`INLINE_MAX`]; up to
    /// [`latest_inline_max`] with [`TopicSpec::latest`]).
    pub fn inline(size: usize) -> TopicSpec {
        TopicSpec::new(TopicMode::Inline).size(size)
    }

    /// Sets the message size of an untyped inline topic.
    pub fn size(mut self, size: usize) -> TopicSpec {
        self.size = Some(size);
        self
    }

    /// Makes the topic typed, without a stable name: it records `T`'s size and alignment, and
    /// a typed registration or subscription whose type differs in either is refused (types of
    /// the same size and alignment are not told apart: use [`TopicSpec::typed_named`] for
    /// that). An inline topic's message size becomes `size_of::<T>()`.
    pub fn typed<T: bytemuck::Pod>(mut self) -> TopicSpec {
        self.ty = Some(type_info::<T>());
        self
    }

    /// Makes the topic typed under the stable name `type_name` (1 to [`TYPE_NAME_MAX`]
    /// bytes, for example `"market.Tick/v1"`): the fingerprint covers the name, size and
    /// alignment, so only a typed subscription that gives the same name (and a type of the
    /// same size and alignment) is accepted, whatever crate, compiler or language it comes
    /// from. Version the name when the type's meaning changes.
    ///
    /// # Errors
    /// An empty or too long name is refused by the registration ([`Error::InvalidName`]).
    pub fn typed_named<T: bytemuck::Pod>(mut self, type_name: &str) -> TopicSpec {
        self.ty = Some(
            type_info_named::<T>(type_name).unwrap_or_else(|_| TypeInfo {
                fingerprint: 0,
                size: 0,
                align: 0,
                name: type_name.into(),
                named: true,
            }),
        );
        self
    }

    /// A topic with one publisher at a time, in any mode: the publisher that registers it
    /// holds the topic's lease until it leaves (or dies: the next registrant takes the lease
    /// over). Another live publisher registering the topic gets [`Error::InUse`], and a
    /// registration that leaves the setting out is refused. Without it, any number of
    /// publishers share a topic.
    ///
    /// What the holder saves: on an inline topic it publishes with plain stores (no claim,
    /// no record: the broadcast ring's single-publisher path), the fastest path weft has,
    /// where a shared inline topic claims each sequence with a `fetch_add`. On a blocks or
    /// latest topic it claims the descriptor ring's slot and advances the tail with plain
    /// stores, where a shared topic needs two compare-and-swaps; the block's records stay, so
    /// a holder that dies mid-publish leaks nothing either way.
    ///
    /// # Examples
    /// ```
    /// use weft::ErrorKind;
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
    /// # let region = format!("doc-single-{}", std::process::id());
    /// let spec = TopicSpec::new(TopicMode::Blocks).single_publisher();
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let frames = publisher.register_spec("/frames", &spec)?;
    /// let mut sub = Subscriber::connect(&region)?.subscribe("/frames")?;
    /// publisher.publish(&frames, b"frame 0")?;
    /// assert_eq!(&*sub.try_recv()?, b"frame 0");
    /// // A second live publisher is refused while the holder lives.
    /// let other = Publisher::open(&region)?;
    /// assert_eq!(other.register_spec("/frames", &spec).unwrap_err().kind(), ErrorKind::InUse);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn single_publisher(mut self) -> TopicSpec {
        self.exclusive = true;
        self
    }

    /// An inline topic of latest values: every receive skips to the newest complete message
    /// (never an older one than it delivered before, never [`Error::Lagged`]), copied out of
    /// its slot by the seqlock, so it is never torn. Readers write nothing to the region, so
    /// a reader that dies, even mid-read, holds up nobody; a publisher that dies mid-write
    /// leaves the value before it readable. What [`TopicMode::Latest`] gives, without the
    /// pool: no block, no reference count. Publish as on any inline topic.
    ///
    /// Messages may be larger than [`INLINE_MAX`] here, up to [`latest_inline_max`] of the
    /// region's [`Config::ring_slots`] (4088 bytes with the default 256): the topic's ring then
    /// has as many slots as its inline area holds (at least four), and each receive copies
    /// the whole message. Receive those with [`Subscription::try_recv_value`] or
    /// [`Subscription::try_recv_into`] (no allocation); a [`Sample`] of one holds a heap copy.
    /// Up to a few kilobytes the copy costs less than a block's reference counting; larger
    /// values are cheaper in [`TopicMode::Latest`], whose readers copy nothing.
    ///
    /// # Errors
    /// The registration refuses it for a topic that is not inline
    /// ([`Error::InvalidArgument`]: use [`TopicMode::Latest`]), and a message size above
    /// [`latest_inline_max`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicSpec};
    /// # let region = format!("doc-latest-inline-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let price = publisher.register_spec("/price", &TopicSpec::inline(8).latest())?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/price")?;
    /// for p in [100u64, 101, 102] {
    ///     publisher.publish(&price, &p.to_le_bytes())?;
    /// }
    /// assert_eq!(sub.try_recv()?.value::<u64>()?, &102);  // the newest, the others skipped
    /// assert_eq!(sub.try_recv().unwrap_err().kind(), weft::ErrorKind::Empty);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn latest(mut self) -> TopicSpec {
        self.latest = true;
        self
    }

    /// The topic's mode.
    pub fn mode(&self) -> TopicMode {
        self.mode
    }
}

impl From<TopicMode> for TopicSpec {
    fn from(mode: TopicMode) -> TopicSpec {
        TopicSpec::new(mode)
    }
}

/// Statistics of one topic. Reading them writes nothing: they come from the topic's own
/// statistics line, plus one load of the topic's tail (the line its publishers write) and a
/// walk over the participants' holdings (for `subscribers`), so a reader costs the hot path at
/// most one cache-line transfer per line it reads, and nothing when nobody reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicStats {
    /// The topic's path.
    pub name: String,
    /// Messages published (claimed sequences) so far.
    pub published: u64,
    /// Blocks of the pool that the topic's descriptor ring holds: one per slot written since
    /// the topic was registered, up to the ring's size (0 for inline topics, which use no
    /// blocks). Blocks held by samples and loans belong to participants, not topics: see
    /// [`RegionInfo`] for the pool as a whole, and `weft info` for each participant's.
    pub pool_blocks: u64,
    /// Messages subscribers reported lost (sum of their `Lagged { skipped }`).
    pub lagged: u64,
    /// Subscriptions open now: every participant records its subscriptions, so a killed
    /// subscriber's count until a survivor reclaims it (on joining, under pool pressure, or
    /// an explicit `reclaim`).
    pub subscribers: u64,
    /// Unfinished publishes of dead publishers completed or voided by a survivor.
    pub recovered: u64,
}

/// The state of a region as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Blocks in the pool.
    pub blocks: u64,
    /// Blocks free now (a snapshot).
    pub free_blocks: u64,
    /// Blocks that publishers keep for their next loan: a publish that displaced a block it
    /// held the only reference to keeps that reference (one per publisher at most), and it is
    /// in use, not free, until the publisher's next loan or publish (a snapshot).
    pub kept_blocks: u64,
    /// Bytes per block.
    pub block_size: u64,
    /// Participants alive now.
    pub participants_alive: u64,
    /// Descriptors per topic ring.
    pub ring_slots: u64,
    /// Samples, loans and subscriptions one participant (a `Publisher` or `Subscriber`
    /// handle) may hold at once ([`Config::max_held`]).
    pub max_held: u64,
}

fn region_info(r: &Region) -> RegionInfo {
    RegionInfo {
        blocks: r.geo.blocks,
        free_blocks: r.pool().free_estimate() as u64,
        kept_blocks: (0..r.geo.participants as u32)
            .filter(|&i| r.ext(i).is_ok_and(kept_by))
            .count() as u64,
        block_size: r.geo.block_size,
        participants_alive: (0..r.geo.participants as u32)
            .filter(|&i| {
                r.row(i)
                    .is_ok_and(|row| row.status(r.liveness) == PeerStatus::Alive)
            })
            .count() as u64,
        ring_slots: r.geo.ring_slots,
        max_held: r.geo.held,
    }
}

/// Whether a participant's publish record keeps a block for its next loan.
fn kept_by(ext: &layout::MemberExt) -> bool {
    // Relaxed: a statistic, racy by nature.
    let old = ext.pub_old.load(Ordering::Relaxed);
    old & 0xffff_ffff != 0 && old & crate::pubsub::pool::KEPT_OLD != 0
}

/// The mode of registered topic `i`.
fn topic_mode(r: &Region, i: u32) -> Result<TopicMode> {
    Ok(r.entry_mode(i)?.map_or(TopicMode::Blocks, mode_of))
}

/// The untyped spec that joins a topic of `mode` as it was registered: for an inline topic,
/// of `size`-byte messages, latest-value or not; single-publisher or not, in any mode.
pub(super) fn joining_spec(
    mode: TopicMode,
    size: usize,
    latest: bool,
    single_publisher: bool,
) -> TopicSpec {
    let spec = match mode {
        TopicMode::Inline if latest => TopicSpec::inline(size).latest(),
        TopicMode::Inline => TopicSpec::inline(size),
        mode => TopicSpec::new(mode),
    };
    if single_publisher {
        spec.single_publisher()
    } else {
        spec
    }
}

/// The mode a topic entry records (`Region::topic_name` accepts only the modes this build
/// implements).
pub(super) fn mode_of(mode: u32) -> TopicMode {
    match mode {
        MODE_LATEST => TopicMode::Latest,
        MODE_INLINE => TopicMode::Inline,
        _ => TopicMode::Blocks,
    }
}

/// An inline area that no registered topic uses (the caller holds the registration lock).
fn free_inline_area(r: &Region) -> Result<u32> {
    let mut used = alloc::vec![false; r.geo.inline_topics as usize];
    for i in 0..r.geo.topics as u32 {
        if r.entry_mode(i)? == Some(MODE_INLINE) {
            used[r.inline_fields(i)?.0 as usize] = true;
        }
    }
    used.iter()
        .position(|u| !u)
        .map(|k| k as u32)
        .ok_or(Error::InvalidArgument {
            what: "inline topics in the region",
            value: r.geo.inline_topics,
            expected: "a free inline area, but every one is taken (Config::inline_topics)",
        })
}

/// The number of sequences claimed on topic `i` (of `mode`) so far: its tail, or its inline
/// claim counter.
fn published(r: &Region, i: u32, mode: TopicMode) -> Result<u64> {
    let n = if mode == TopicMode::Inline {
        let ring = r.inline_ring(i)?.ring;
        // Acquire: pairs with the AcqRel claims (`RawRing::claim`). Checked below.
        ring.cursor().load(Ordering::Acquire)
    } else {
        // Acquire: see Ring::tail (the same word whatever the ring's number of slots).
        r.ring(i, false)?.tail().map_err(|c| corrupt(&r.obj, c))?
    };
    sequence(r, "topic sequence counter", n)
}

/// The first sequence of topic `i`'s registration.
fn start_seq(r: &Region, i: u32) -> Result<u64> {
    // Relaxed: written before the entry's Release READY, which the caller acquired.
    let s = r.stats(i)?.start_seq.load(Ordering::Relaxed);
    sequence(r, "topic start sequence", s)
}

/// `v`, a sequence read from the region (`what`), if it is below 2^62 as every sequence is.
fn sequence(r: &Region, what: &'static str, v: u64) -> Result<u64> {
    if v >= SEQ_LIMIT {
        return Err(Error::corrupt(r.obj.name(), what, v, "below 2^62"));
    }
    Ok(v)
}

/// Topic `i`'s statistics, with `subscribers` counted by the caller ([`Region::subscriptions`],
/// or [`Region::subscription_counts`] for every topic at once).
fn topic_stats(r: &Region, i: u32, name: String, subscribers: u64) -> Result<TopicStats> {
    let s = r.stats(i)?;
    let mode = topic_mode(r, i)?;
    let published = published(r, i, mode)?.saturating_sub(start_seq(r, i)?);
    let pool_blocks = if mode == TopicMode::Inline {
        0
    } else {
        published.min(r.ring_slots(mode == TopicMode::Latest))
    };
    Ok(TopicStats {
        name,
        published,
        pool_blocks,
        // Relaxed: statistics.
        lagged: s.lagged.load(Ordering::Relaxed),
        subscribers,
        recovered: s.recovered.load(Ordering::Relaxed),
    })
}

fn all_topics(r: &Region) -> Result<Vec<TopicStats>> {
    let mut out = Vec::new();
    let subscribers = r.subscription_counts();
    for i in 0..r.geo.topics as u32 {
        // Each entry as one registration left it (topics may be registered meanwhile).
        let entry = r.stable(i, || match r.topic_name(i)? {
            Some((name, _)) if r.topic_state(i)? == TOPIC_READY => {
                topic_stats(r, i, name, subscribers[i as usize]).map(Some)
            }
            _ => Ok(None),
        })?;
        out.extend(entry.map(|(t, _)| t));
    }
    Ok(out)
}

/// `T` without a stable name: checked by size and alignment only.
fn type_info<T: bytemuck::Pod>() -> TypeInfo {
    let (size, align) = (
        core::mem::size_of::<T>() as u64,
        core::mem::align_of::<T>() as u64,
    );
    TypeInfo {
        fingerprint: fingerprint(None, size, align),
        size,
        align,
        name: short_type_name::<T>(),
        named: false,
    }
}

/// `T` under the stable name `name`.
fn type_info_named<T: bytemuck::Pod>(name: &str) -> Result<TypeInfo> {
    if name.is_empty() || name.len() > TYPE_NAME_MAX {
        return Err(Error::InvalidName {
            name: name.into(),
            reason: "a type name is 1 to 64 bytes long",
        });
    }
    let (size, align) = (
        core::mem::size_of::<T>() as u64,
        core::mem::align_of::<T>() as u64,
    );
    Ok(TypeInfo {
        fingerprint: fingerprint(Some(name), size, align),
        size,
        align,
        name: name.into(),
        named: true,
    })
}

/// The Rust type's path, cut to what the entry stores (for messages only).
fn short_type_name<T>() -> String {
    let n = core::any::type_name::<T>();
    let mut cut = n.len().min(TYPE_NAME_MAX);
    while !n.is_char_boundary(cut) {
        cut -= 1;
    }
    n[..cut].into()
}

/// `found` (a topic's recorded type) must be `want`: same fingerprint (so the same name, if
/// either has one), size and alignment.
fn check_type(r: &Region, topic: &str, found: Option<&TypeInfo>, want: &TypeInfo) -> Result<()> {
    match found {
        Some(f)
            if f.fingerprint == want.fingerprint
                && f.size == want.size
                && f.align == want.align =>
        {
            Ok(())
        }
        other => Err(Error::TypeMismatch {
            name: alloc::format!("{}{}", r.obj.name(), topic),
            found: other.map_or_else(|| "untyped bytes".into(), TypeInfo::describe),
            found_size: other.map_or(0, |f| f.size),
            expected: want.describe(),
            expected_size: want.size,
        }),
    }
}

/// What [`inspect`] reports about a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionReport {
    /// The region's name.
    pub name: String,
    /// Pool and participants.
    pub info: RegionInfo,
    /// Every registered topic with its statistics.
    pub topics: Vec<TopicStats>,
}

/// The names of every pub/sub region on this machine (discovery, for tools such as
/// `weft ls`). A region being created or removed at the same moment may be missed.
///
/// # Examples
/// ```
/// use weft::pubsub::{Config, Publisher, regions};
/// # let region = format!("doc-regions-{}", std::process::id());
/// let _publisher = Publisher::create(&region, &Config::default())?;
/// assert!(regions().contains(&region));
/// # Ok::<(), weft::Error>(())
/// ```
pub fn regions() -> Vec<String> {
    sys::list_objects()
        .into_iter()
        .filter(|n| Object::open(n, ObjectKind::Region, Duration::ZERO).is_ok())
        .collect()
}

/// Reads a region's pool, participants and topics without joining it: nothing the hot path
/// uses is written, and no participant row is taken (for tools such as `weft info`).
///
/// # Errors
/// As [`Subscriber::connect`] (the header, configuration and topic table are validated).
///
/// # Examples
/// ```
/// use weft::pubsub::{Config, Publisher, inspect};
/// # let region = format!("doc-inspect-{}", std::process::id());
/// let publisher = Publisher::create(&region, &Config::default())?;
/// let topic = publisher.register("/prices/AAPL")?;
/// publisher.publish(&topic, b"189.5")?;
/// let report = inspect(&region)?;
/// assert_eq!(report.topics[0].name, "/prices/AAPL");
/// assert_eq!(report.topics[0].published, 1);
/// assert_eq!(report.info.participants_alive, 1);
/// # Ok::<(), weft::Error>(())
/// ```
pub fn inspect(region: &str) -> Result<RegionReport> {
    // A region still being created is reported as not ready rather than waited for.
    let r = open_region(region, &Config::default().open_timeout(Duration::ZERO))?;
    Ok(RegionReport {
        name: region.into(),
        info: region_info(&r),
        topics: all_topics(&r)?,
    })
}

fn open_region(name: &str, config: &Config) -> Result<Arc<Region>> {
    let obj = Object::open(name, ObjectKind::Region, config.open_timeout)?;
    Region::attach(share(obj), config.liveness_timeout)
}

/// The region objects this process has mapped: its publishers and subscribers of one region
/// share one mapping, so a line written through one handle and read through another has one
/// virtual address (two addresses of one line defeat store-to-load forwarding and cost a
/// stall per message), and the region costs one set of page-table entries.
static MAPPED: std::sync::Mutex<Vec<alloc::sync::Weak<Object>>> = std::sync::Mutex::new(Vec::new());

/// `obj`, or the mapping of the same file (device and inode) this process already has.
fn share(obj: Object) -> Arc<Object> {
    let mut mapped = MAPPED.lock().unwrap_or_else(|p| p.into_inner());
    mapped.retain(|w| w.strong_count() > 0);
    if obj.identity() != (0, 0)
        && let Some(same) = mapped
            .iter()
            .filter_map(alloc::sync::Weak::upgrade)
            .find(|o| o.identity() == obj.identity() && o.name() == obj.name())
    {
        return same;
    }
    let obj = Arc::new(obj);
    mapped.push(Arc::downgrade(&obj));
    obj
}

/// Publishes on the topics of one region. `Send` but not `Sync`: a loan borrows the publisher,
/// and each publisher is one participant with one publish in flight at a time.
///
/// # Examples
/// Loans borrow their publisher: a loan cannot outlive it.
/// ```compile_fail
/// use weft::pubsub::{Config, Publisher};
/// let loan;
/// {
///     let publisher = Publisher::create("doc-cf-loan", &Config::default()).unwrap();
///     let topic = publisher.register("/t").unwrap();
///     loan = publisher.loan(&topic).unwrap();
/// }
/// drop(loan);
/// ```
#[derive(Debug)]
pub struct Publisher {
    member: Arc<Member>,
    /// The region's `Region::id` and our lease value (`Member::lease`), copies kept beside the
    /// pointer to the member so that a publish reads them without following it.
    region_id: u64,
    lease: u64,
    claim_timeout: Duration,
    /// Where the next allocation starts looking for a free block.
    cursor: core::cell::Cell<u32>,
    /// A block the last publish displaced while it held the only reference: that reference
    /// stays in the publish record (`pub_old`) and the next loan adopts it, so the block goes
    /// round without a release and an allocation (and its lines are still in this core's
    /// cache).
    recycled: core::cell::Cell<Option<u32>>,
    /// This handle created the region.
    created: bool,
    _not_sync: PhantomData<core::cell::Cell<()>>,
}

impl Publisher {
    /// Creates the region `region` with `config` and joins it as a publisher.
    ///
    /// A region of that name whose participants are all dead (or whose creator died before
    /// finishing it) is removed and made anew.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::InvalidArgument`] for a configuration out of range,
    /// [`Error::AlreadyExists`] if a region of that name has a live participant,
    /// [`Error::Io`] if the OS refuses.
    pub fn create(region: &str, config: &Config) -> Result<Publisher> {
        sys::validate_name(region)?;
        let geo = config.geometry()?;
        for _ in 0..4 {
            let made = Object::create(
                region,
                ObjectKind::Region,
                geo.total,
                config.hugepages,
                config.lock_memory,
                |obj| {
                    // SAFETY: RegionConfig is all atomics.
                    let cfg: &RegionConfig = unsafe { obj.at(CONFIG_OFFSET)? };
                    geo.store(cfg);
                    Ok(())
                },
            );
            match made {
                Ok(obj) => {
                    let obj = share(obj);
                    let joined =
                        Region::attach(obj.clone(), config.liveness_timeout).and_then(|r| {
                            r.pool().init();
                            // Join before publishing: an opener never sees a ready region
                            // without a live participant, so it is never taken for stale.
                            Member::join(r, Role::Publisher)
                        });
                    match joined {
                        Ok(member) => {
                            obj.publish();
                            let mut p = Publisher::new(member, config);
                            p.created = true;
                            return Ok(p);
                        }
                        Err(e) => {
                            let _ = sys::ShmFile::unlink(region);
                            return Err(e);
                        }
                    }
                }
                Err(Error::AlreadyExists { .. }) => {
                    match open_region(region, &config.clone().open_timeout(STALE_OPEN_TIMEOUT)) {
                        Ok(r) => {
                            if r.anyone_else_alive(u32::MAX) {
                                return Err(Error::AlreadyExists {
                                    name: region.into(),
                                });
                            }
                            r.obj.unlink_if_same();
                        }
                        Err(Error::NotReady { .. }) => Object::clear_leftover(region)?,
                        Err(Error::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::AlreadyExists {
            name: region.into(),
        })
    }

    /// Joins the existing region `region` as another publisher (from any process).
    ///
    /// # Errors
    /// [`Error::NotFound`], the header errors of a bad object ([`Error::NotWeft`],
    /// [`Error::VersionMismatch`], [`Error::WrongKind`], [`Error::Truncated`],
    /// [`Error::Corrupt`]), [`Error::InvalidArgument`] when every participant row is taken.
    pub fn open(region: &str) -> Result<Publisher> {
        Publisher::open_with(region, &Config::default())
    }

    /// Joins the region `region` as another publisher, or creates it with `config` when
    /// there is none: for processes that do not know which of them starts first (iceoryx2's
    /// `open_or_create`). A leftover whose creator died before finishing it is made anew. A
    /// region that exists keeps its own shape: `config`'s blocks, sizes and counts apply only
    /// when this call creates it ([`Publisher::max_len`] and [`Publisher::region_info`] say
    /// what the region has), and [`Publisher::created`] says which happened. Of several
    /// processes calling it at once, one creates the region and the others join it.
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher};
    /// # let region = format!("doc-open-or-create-{}", std::process::id());
    /// let config = Config::default().block_size(256);
    /// let first = Publisher::open_or_create(&region, &config)?;
    /// let second = Publisher::open_or_create(&region, &Config::default())?;
    /// assert!(first.created() && !second.created());
    /// assert_eq!(second.max_len(), 256); // the region's shape, not the second config's
    /// # Ok::<(), weft::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Publisher::open_with`] and [`Publisher::create`]; a region a live creator is still
    /// making is waited for up to [`Config::open_timeout`], then [`Error::NotReady`].
    pub fn open_or_create(region: &str, config: &Config) -> Result<Publisher> {
        let mut raced = None;
        for _ in 0..4 {
            match Publisher::open_with(region, config) {
                Ok(p) => return Ok(p),
                Err(Error::NotFound { .. }) => {}
                // A leftover that will never be ready: its creator is gone, or (after the
                // open's wait for a live creator to name itself) its header names none, as a
                // creator killed in the sizing of its file leaves it. `create` replaces it.
                Err(Error::NotReady {
                    pid, creator_gone, ..
                }) if creator_gone || pid == 0 => {}
                Err(e) => return Err(e),
            }
            match Publisher::create(region, config) {
                Ok(p) => return Ok(p),
                // Made by another process since the open looked: join it.
                Err(e @ Error::AlreadyExists { .. }) => raced = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(raced.unwrap_or(Error::AlreadyExists {
            name: region.into(),
        }))
    }

    /// Whether this handle created its region ([`Publisher::create`], or
    /// [`Publisher::open_or_create`] finding none) rather than joining it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// [`Publisher::open`] with the handle settings of `config` (its shape is ignored: the
    /// region's own is used).
    ///
    /// # Errors
    /// As [`Publisher::open`].
    pub fn open_with(region: &str, config: &Config) -> Result<Publisher> {
        let r = open_region(region, config)?;
        let member = Member::join(r, Role::Publisher)?;
        Ok(Publisher::new(member, config))
    }

    fn new(member: Arc<Member>, config: &Config) -> Publisher {
        Publisher {
            region_id: member.region.id,
            lease: member.lease,
            member,
            claim_timeout: config.claim_timeout,
            cursor: core::cell::Cell::new(0),
            recycled: core::cell::Cell::new(None),
            created: false,
            _not_sync: PhantomData,
        }
    }

    fn region(&self) -> &Region {
        &self.member.region
    }

    /// The region's name.
    pub fn region_name(&self) -> &str {
        self.member.name()
    }

    /// Registers `topic` in [`TopicMode::Blocks`] (or finds it, if registered already).
    ///
    /// # Errors
    /// As [`Publisher::register_with`].
    pub fn register(&self, topic: &str) -> Result<Topic> {
        self.register_with(topic, TopicMode::Blocks)
    }

    /// Registers `topic` with `mode`, or returns the existing topic of that name.
    ///
    /// # Errors
    /// [`Error::InvalidName`] for a bad path; [`Error::InvalidArgument`] for a topic registered
    /// already with another mode, for [`TopicMode::Inline`] (which needs a message size: use
    /// [`Publisher::register_spec`]), or when the topic table is full; [`Error::Timeout`] if
    /// the registration lock stays held by a live process for a second; [`Error::Corrupt`] for
    /// a damaged topic table.
    pub fn register_with(&self, topic: &str, mode: TopicMode) -> Result<Topic> {
        self.register_spec(topic, &TopicSpec::new(mode))
    }

    /// Registers `topic` as `spec` says (mode, type, inline message size), or returns the
    /// existing topic of that name if it was registered alike.
    ///
    /// # Errors
    /// As [`Publisher::register_with`]; [`Error::TypeMismatch`] when the topic exists with
    /// another type (or untyped); for a typed spec, as [`Publisher::register_typed`]; for an
    /// inline topic, [`Error::InvalidArgument`] when the message size is not `1 ..=`
    /// [`INLINE_MAX`] (`..=` [`latest_inline_max`] for a latest-value one) or the type's
    /// alignment exceeds 16, when it differs from the existing
    /// topic's, or when every inline area of the region is taken ([`Config::inline_topics`]).
    pub fn register_spec(&self, topic: &str, spec: &TopicSpec) -> Result<Topic> {
        if let Some(ty) = &spec.ty
            && ty.fingerprint == 0
        {
            // A name `typed_named` refused: say why.
            type_info_named::<u8>(&ty.name)?;
        }
        let size = if let Some(ty) = &spec.ty {
            self.check_type_fits(topic, ty, spec.mode)?;
            ty.size
        } else {
            spec.size.unwrap_or(0) as u64
        };
        let inline_size = if spec.mode == TopicMode::Inline {
            if size == 0 || size > INLINE_MAX as u64 && !spec.latest {
                return Err(Error::InvalidArgument {
                    what: "message size of an inline topic",
                    value: size,
                    expected: "1 ..= 56 bytes (TopicSpec::inline(size) or a typed spec; \
                               larger for a latest-value one, TopicSpec::latest)",
                });
            }
            let slots = self.member.region.geo.ring_slots;
            if size > latest_inline_max(slots) {
                return Err(Error::InvalidArgument {
                    what: "message size of a latest-value inline topic",
                    value: size,
                    expected: "at most 16 * ring_slots - 8 bytes (latest_inline_max: a \
                               larger Config::ring_slots, or TopicMode::Latest)",
                });
            }
            if spec.ty.as_ref().is_some_and(|t| t.align > 16) {
                return Err(Error::InvalidArgument {
                    what: "alignment of an inline topic's type",
                    value: spec.ty.as_ref().map_or(0, |t| t.align),
                    expected: "at most 16 (a sample holds a 16-aligned copy)",
                });
            }
            size as u32
        } else {
            0
        };
        if spec.latest && spec.mode != TopicMode::Inline {
            return Err(Error::InvalidArgument {
                what: "latest-value inline topic mode",
                value: 0,
                expected: "an inline topic (TopicSpec::latest is for inline topics; \
                           TopicMode::Latest is the latest-value mode of blocks)",
            });
        }
        let flags = if spec.exclusive { EXCLUSIVE } else { 0 }
            | if spec.latest { INLINE_LATEST } else { 0 };
        self.register_inner(topic, spec.mode, spec.ty.clone(), inline_size, flags)
    }

    /// Registers `topic` for values of type `T` ([`TopicMode::Blocks`]): the topic records
    /// `T`'s size and alignment (and its Rust path, for error messages), and a registration or
    /// typed subscription with a type of another size or alignment is refused. Types of the
    /// same layout are not told apart: give the type a stable name with
    /// [`Publisher::register_typed_named`] for that. Use [`Publisher::publish_typed`] or
    /// [`Publisher::loan_typed`] + [`Loan::value_mut`].
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the topic exists with another type (or untyped);
    /// [`Error::TooLarge`] when `T` does not fit a block; [`Error::InvalidArgument`] when
    /// `align_of::<T>()` exceeds 64 (blocks are 64-byte aligned); as
    /// [`Publisher::register_with`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// use weft::ErrorKind;
    /// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Tick { price: f64, size: u64 }
    /// # let region = format!("doc-typed-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let ticks = publisher.register_typed::<Tick>("/ticks")?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe_typed::<Tick>("/ticks")?;
    /// assert_eq!(subscriber.subscribe_typed::<u32>("/ticks").unwrap_err().kind(), ErrorKind::TypeMismatch);
    /// publisher.publish_typed(&ticks, &Tick { price: 189.5, size: 100 })?;
    /// let sample = sub.try_recv()?;
    /// assert_eq!(sample.value::<Tick>()?, &Tick { price: 189.5, size: 100 });
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn register_typed<T: bytemuck::Pod>(&self, topic: &str) -> Result<Topic> {
        self.register_spec(topic, &TopicSpec::new(TopicMode::Blocks).typed::<T>())
    }

    /// Registers `topic` for values of type `T` under the stable name `type_name`
    /// ([`TopicMode::Blocks`]; other modes: [`TopicSpec::typed_named`]). The fingerprint
    /// covers the name, the size and the alignment and nothing the compiler chooses, so
    /// processes built by other compilers (or written in other languages) agree as long as
    /// they give the same name; a subscription must give it too
    /// ([`Subscriber::subscribe_typed_named`]).
    ///
    /// # Errors
    /// [`Error::InvalidName`] for a name that is empty or longer than [`TYPE_NAME_MAX`]
    /// bytes; as [`Publisher::register_typed`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// use weft::ErrorKind;
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Tick { price: f64, size: u64 }
    /// # let region = format!("doc-named-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let ticks = publisher.register_typed_named::<Tick>("/ticks", "market.Tick/v1")?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let _sub = subscriber.subscribe_typed_named::<Tick>("/ticks", "market.Tick/v1")?;
    /// // Another name, or no name, is another type, even with the same layout.
    /// let e = subscriber.subscribe_typed_named::<Tick>("/ticks", "market.Tick/v2").unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::TypeMismatch);
    /// assert!(e.to_string().contains("market.Tick/v1"));
    /// assert_eq!(subscriber.subscribe_typed::<Tick>("/ticks").unwrap_err().kind(), ErrorKind::TypeMismatch);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn register_typed_named<T: bytemuck::Pod>(
        &self,
        topic: &str,
        type_name: &str,
    ) -> Result<Topic> {
        self.register_spec(
            topic,
            &TopicSpec::new(TopicMode::Blocks).typed_named::<T>(type_name),
        )
    }

    /// The spec that joins the registered topic `topic` as it is (its mode and, for an inline
    /// topic, its message size and latest-value and single-publisher kind; untyped: a caller
    /// that knows the type adds it), or `None` when no topic of that name is registered. For
    /// tools that publish into whatever topic is there (`weft pub`, the Zenoh bridge).
    ///
    /// # Errors
    /// [`Error::InvalidName`] for a bad path; [`Error::Corrupt`] for a damaged topic table.
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, TopicSpec};
    /// # let region = format!("doc-existing-{}", std::process::id());
    /// let a = Publisher::create(&region, &Config::default())?;
    /// let _t = a.register_spec("/level", &TopicSpec::inline(8).latest())?;
    /// let b = Publisher::open(&region)?;
    /// let spec = b.existing_spec("/level")?.expect("registered above");
    /// assert_eq!(spec, TopicSpec::inline(8).latest());
    /// let t = b.register_spec("/level", &spec)?;
    /// b.publish(&t, &3u64.to_ne_bytes())?;
    /// assert_eq!(b.existing_spec("/absent")?, None);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn existing_spec(&self, topic: &str) -> Result<Option<TopicSpec>> {
        validate_topic(topic)?;
        let r = self.region();
        let spec = r.find_topic_with(topic, |i| {
            let mode = topic_mode(r, i)?;
            let (size, latest, exclusive) = match mode {
                TopicMode::Inline => {
                    let at = r.inline_ring(i)?;
                    (at.size as usize, at.latest, at.exclusive)
                }
                _ => (0, false, r.topic_exclusive(i)?),
            };
            Ok(joining_spec(mode, size, latest, exclusive))
        })?;
        Ok(spec.map(|(_, spec, _)| spec))
    }

    /// A typed topic's type must fit a block and its alignment.
    fn check_type_fits(&self, topic: &str, ty: &TypeInfo, mode: TopicMode) -> Result<()> {
        // An inline topic's values live in its ring's slots, not in blocks (its own size
        // limits are checked by the caller).
        if mode != TopicMode::Inline && ty.size > self.region().geo.block_size {
            return Err(Error::TooLarge {
                name: alloc::format!("{}{}", self.member.name(), topic),
                len: ty.size,
                max: self.region().geo.block_size,
            });
        }
        if ty.align > 64 {
            return Err(Error::InvalidArgument {
                what: "alignment of the topic's type",
                value: ty.align,
                expected: "at most 64 (blocks are 64-byte aligned)",
            });
        }
        if ty.size == 0 {
            return Err(Error::InvalidArgument {
                what: "size of the topic's type",
                value: 0,
                expected: "at least 1 byte",
            });
        }
        Ok(())
    }

    fn register_inner(
        &self,
        topic: &str,
        mode: TopicMode,
        ty: Option<TypeInfo>,
        inline_size: u32,
        flags: u32,
    ) -> Result<Topic> {
        validate_topic(topic)?;
        let raw_mode = match mode {
            TopicMode::Blocks => MODE_BLOCKS,
            TopicMode::Latest => MODE_LATEST,
            TopicMode::Inline => MODE_INLINE,
        };
        let r = self.region();
        let existing = |r: &Region| -> Result<Option<Topic>> {
            let Some((i, generation)) = r.find_topic(topic)? else {
                return Ok(None);
            };
            let registered = r.entry_mode(i)?;
            if registered != Some(raw_mode) {
                return Err(Error::InvalidArgument {
                    what: "topic mode (1 blocks, 2 latest, 3 inline)",
                    value: raw_mode as u64,
                    expected: match registered {
                        Some(MODE_BLOCKS) => "the topic was registered as a blocks topic",
                        Some(MODE_LATEST) => "the topic was registered as a latest topic",
                        Some(MODE_INLINE) => "the topic was registered as an inline topic",
                        _ => "the mode the topic was registered with",
                    },
                });
            }
            let found = r.topic_type(i)?;
            if let Some(want) = &ty {
                check_type(r, topic, found.as_ref(), want)?;
            }
            if r.topic_flags(i)? & EXCLUSIVE != flags & EXCLUSIVE {
                return Err(Error::InvalidArgument {
                    what: "single-publisher setting of a topic",
                    value: (flags & EXCLUSIVE) as u64,
                    expected: "the setting the topic was registered with",
                });
            }
            if raw_mode == MODE_INLINE {
                let (_, size) = r.inline_fields(i)?;
                if size != inline_size {
                    return Err(Error::InvalidArgument {
                        what: "message size of an inline topic",
                        value: inline_size as u64,
                        expected: "the size the topic was registered with",
                    });
                }
                if r.topic_flags(i)? & INLINE_LATEST != flags & INLINE_LATEST {
                    return Err(Error::InvalidArgument {
                        what: "latest-value setting of an inline topic",
                        value: (flags & INLINE_LATEST != 0) as u64,
                        expected: "the setting the topic was registered with",
                    });
                }
            }
            Ok(Some(self.topic_handle(
                i,
                generation,
                topic,
                found.map(|t| t.fingerprint),
            )?))
        };
        // Without the lock, the entry may be unregistered and registered again while it is
        // read: a refusal (or a handle of a registration that is gone, `topic_handle`) is only
        // believed under the lock, where entries do not change.
        if let Ok(Some(t)) = existing(r) {
            return Ok(t);
        }
        let _lock = RegisterLock::take(r, self.member.index)?;
        if let Some(t) = existing(r)? {
            return Ok(t);
        }
        // An entry that a row's `freeing` word names is neither freed nor taken: its freer was
        // killed in the free (or judged dead while it made it), and the slots it had not
        // reached still hold references. The reclaim of dead rows finishes such frees first
        // (one that fails leaves them for later: this registration takes another entry).
        if r.frees_in_progress(|_| true) {
            let _ = r.reclaim_dead();
        }
        // Unregistered topics nobody reads any more are freed now (entries, inline areas);
        // first the close of one whose unregistering publisher died in it, which nobody else
        // finishes while no subscription polls it. An entry that cannot be freed (a live
        // publisher's claim in it, or a scribbled word) stays as it is: this registration
        // takes another.
        for i in 0..r.geo.topics as u32 {
            let mut state = r.topic_state(i)?;
            if state == TOPIC_CLOSING
                && matches!(close_dead_locked(r, i, r.topic_generation(i)?), Ok(true))
            {
                state = TOPIC_CLOSED;
            }
            if state == TOPIC_CLOSED {
                let _ = r.free_topic(i, self.member.index);
            }
        }
        let area = if raw_mode == MODE_INLINE {
            Some(free_inline_area(r)?)
        } else {
            None
        };
        for i in 0..r.geo.topics as u32 {
            let t = r.topic(i)?;
            // Entries change only under the lock we hold (or, for a closing topic, only
            // towards CLOSED), but the free of a freer killed in it is finished without the
            // lock. SYNC POINT: Acquire pairs with the Release store of FREE that ends a free
            // (`Region::release_free`): a `freeing` word read after it as 0 was cleared after
            // the free (`Region::being_freed`).
            if t.state.load(Ordering::Acquire) != TOPIC_FREE || r.being_freed(i) {
                continue;
            }
            // The generation changes before any other field of the entry, so that a reader
            // without the lock that reads a field of this registration also reads its
            // generation (`Region::same_registration`).
            let generation = t.generation.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            // SYNC POINT: Release fence pairs with the Acquire fence in `same_registration`:
            // the increment comes before the stores below.
            fence(Ordering::Release);
            let st = r.stats(i)?;
            let start = if let Some(area) = area {
                let base = r.inline_base(area)?;
                // SAFETY: the area lies inside the mapping (inline_base), is 64-aligned, holds
                // only atomics, and no registered topic uses it (free_inline_area, under the
                // lock); the shape's capacity is `inline_capacity(ring_slots, size)`, a power
                // of two whose ring fits the area (`inline_area_size`).
                unsafe { RawRing::init_atomic(base, inline_shape(r.geo.ring_slots, inline_size)) };
                // Relaxed: published by the Release store of READY below.
                t.inline_area.store(area, Ordering::Relaxed);
                0
            } else {
                // No holder yet: a holder of an earlier registration of the entry lost it
                // when that registration closed (its handles name the old generation). Relaxed:
                // published by the Release store of READY below.
                r.hot(i)?.lease.store(0, Ordering::Relaxed);
                // Sequences go on from where an earlier registration of the entry left them,
                // in a ring of as many slots as this mode's.
                r.restamp(i, raw_mode == MODE_LATEST)?
            };
            // A free leaves the publishers map and the statistics cleared, but a freer killed
            // after its store of FREE left the old registration's: bits of its publishers
            // (one alive would keep this registration's subscribers from ever hearing that
            // its own publishers died) and its counts. Relaxed: published by the Release
            // store of READY below; nobody publishes on a free entry.
            for w in r.pubmap(i)? {
                w.store(0, Ordering::Relaxed);
            }
            st.died.store(0, Ordering::Relaxed);
            st.lagged.store(0, Ordering::Relaxed);
            st.recovered.store(0, Ordering::Relaxed);
            // Relaxed: published by the Release store of READY below.
            st.start_seq.store(start, Ordering::Relaxed);
            st.close_seq.store(u64::MAX, Ordering::Relaxed);
            st.closer.store(0, Ordering::Relaxed);
            st.closer_id.store(0, Ordering::Relaxed);
            // Relaxed: published by the Release store of READY below.
            t.msg_size.store(inline_size, Ordering::Relaxed);
            t.flags.store(flags, Ordering::Relaxed);
            t.mode.store(raw_mode, Ordering::Relaxed);
            t.name_len.store(topic.len() as u32, Ordering::Relaxed);
            for (w, v) in t.name.iter().zip(pack_name(topic)) {
                w.store(v, Ordering::Relaxed);
            }
            let fp = ty.as_ref().map_or(0, |t| t.fingerprint);
            if let Some(ty) = &ty {
                t.type_size.store(ty.size, Ordering::Relaxed);
                t.type_align.store(ty.align, Ordering::Relaxed);
                let name_len = ty.name.len().min(64);
                t.type_name_len.store(name_len as u64, Ordering::Relaxed);
                for (w, v) in t.type_name.iter().zip(pack::<8>(&ty.name)) {
                    w.store(v, Ordering::Relaxed);
                }
            }
            let flags = if ty.as_ref().is_some_and(|t| t.named) {
                TYPE_NAMED
            } else {
                0
            };
            t.type_flags.store(flags, Ordering::Relaxed);
            t.type_fingerprint.store(fp, Ordering::Relaxed);
            // SYNC POINT: Release pairs with the Acquire load of `state` in
            // `Region::topic_name` and `Region::topic_type`.
            t.state.store(TOPIC_READY, Ordering::Release);
            return self.topic_handle(i, generation, topic, ty.map(|t| t.fingerprint));
        }
        Err(Error::InvalidArgument {
            what: "topics in the region",
            value: r.geo.topics,
            expected: "a free entry, but the topic table is full (Config::topics)",
        })
    }

    /// A handle on entry `index` as registration `generation` (read before any other field
    /// of the entry) left it. Outside the registration lock the entry may change while it is
    /// read: an `Err` then says nothing about the topic, and the caller asks again under the
    /// lock.
    fn topic_handle(
        &self,
        index: u32,
        generation: u32,
        name: &str,
        fingerprint: Option<u64>,
    ) -> Result<Topic> {
        let r = self.region();
        let mode = topic_mode(r, index)?;
        let at = if mode == TopicMode::Inline {
            Some(r.inline_ring(index)?)
        } else {
            None
        };
        // An inline topic's flags were read once, with its ring.
        let exclusive = match &at {
            Some(at) => at.exclusive,
            None => r.topic_exclusive(index)?,
        };
        let layout = r.topic_type(index)?.map(|t| (t.size, t.align));
        // A typed publish writes `size_of::<T>()` bytes, checked against `layout`: for an
        // inline topic that must be the size of the ring validated above, not a size read
        // again from the entry, which a peer may have changed in between.
        if let (Some(at), Some((size, _))) = (&at, layout)
            && size != at.size as u64
        {
            return Err(Error::corrupt(
                r.obj.name(),
                "topic type size",
                size,
                "the inline topic's message size",
            ));
        }
        let changed = || {
            Error::corrupt(
                r.obj.name(),
                "topic generation",
                generation as u64,
                "unchanged while the registration lock is held",
            )
        };
        // Nothing below is done for a registration that is gone.
        if !r.same_registration(index, generation)? {
            return Err(changed());
        }
        let me = self.member.index;
        // The lease word of a single-publisher topic (inline: in its ring's header).
        let lease = match &at {
            Some(at) if exclusive => Some((&at.ring.signal().publishers, at.ring.cursor())),
            None if exclusive => {
                let hot = r.hot(index)?;
                Some((&hot.lease, &hot.tail))
            }
            _ => None,
        };
        let leased = match lease {
            Some((word, counter)) => r.take_lease(word, counter, name, me, self.member.lease)?,
            None => false,
        };
        // From now on a subscriber of this topic that finds us dead reports it.
        let marked = r.mark_publisher(index, me)?;
        // The entry may have been registered again since the check above: what we took
        // belongs to that registration, for which we have no handle, so it is given back (the
        // caller asks again under the lock).
        if !r.same_registration(index, generation)? {
            if leased && let Some((word, _)) = lease {
                r.drop_lease(word, self.member.lease);
            }
            r.unmark_publisher(index, me, marked)?;
            return Err(changed());
        }
        // A previous holder of an inline topic's lease killed after it wrote sequence `c` whole
        // and before its store of the counter `c + 1` left `c` complete, and maybe read: we
        // go on after it instead of writing `c` again (a subscriber that read the dead
        // holder's `c` would never get ours, and `c` would carry two messages). Only the
        // counter's sequence can be so: the holder writes one at a time.
        if leased && let Some(at) = &at {
            // Acquire: pairs with the previous holder's Release store of the counter (as in
            // `take_lease`); its stamp, with its Release stamp store.
            let c = at.ring.cursor().load(Ordering::Acquire);
            if c < inline::LOW && at.ring.stamp_of(c) == crate::ring::raw::done(c) {
                // Release: pairs with the Acquire loads of the counter (lag, stuck checks).
                at.ring.cursor().store(c + 1, Ordering::Release);
            }
        }
        let inline = match at {
            Some(at) => Some(InlineTopic {
                place: at.ring.placement(),
                size: at.size,
                exclusive,
                base: r.inline_base(at.area)?,
                entry: NonNull::from(r.topic(index)?),
            }),
            None => None,
        };
        Ok(Topic {
            index,
            name: name.into(),
            region: r.id,
            fingerprint,
            mode,
            inline,
            exclusive,
            generation,
            layout,
        })
    }

    /// `T` must have the size and alignment of the topic's type (the publisher that holds the
    /// handle registered that type, name included).
    #[inline]
    fn check_typed<T: bytemuck::Pod>(&self, topic: &Topic) -> Result<()> {
        self.check_topic(topic)?;
        let want = (
            core::mem::size_of::<T>() as u64,
            core::mem::align_of::<T>() as u64,
        );
        if topic.layout != Some(want) {
            return Err(self.type_mismatch::<T>(topic));
        }
        Ok(())
    }

    #[cold]
    fn type_mismatch<T: bytemuck::Pod>(&self, topic: &Topic) -> Error {
        let r = self.region();
        let found = r.topic_type(topic.index).ok().flatten();
        let want = type_info::<T>();
        check_type(r, &topic.name, found.as_ref(), &want)
            .err()
            .unwrap_or(Error::TypeMismatch {
                name: alloc::format!("{}{}", r.obj.name(), topic.name),
                found: found.map_or_else(|| "untyped bytes".into(), |f| f.describe()),
                found_size: topic.layout.map_or(0, |l| l.0),
                expected: want.describe(),
                expected_size: want.size,
            })
    }

    /// Loans a block for a typed topic, its length set to `size_of::<T>()`: fill it through
    /// [`Loan::value_mut`], then publish.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when `topic` was not registered for `T`; as
    /// [`Publisher::loan`].
    pub fn loan_typed<T: bytemuck::Pod>(&self, topic: &Topic) -> Result<Loan<'_>> {
        self.check_typed::<T>(topic)?;
        let mut loan = self.loan(topic)?;
        loan.set_len(core::mem::size_of::<T>())?;
        Ok(loan)
    }

    /// Publishes `value` on the typed topic: copied into a block (blocks and latest topics)
    /// or into the ring's slot (inline topics).
    ///
    /// # Errors
    /// As [`Publisher::loan_typed`] and [`Loan::publish`]; for an inline topic, as
    /// [`Publisher::publish`].
    pub fn publish_typed<T: bytemuck::Pod>(&self, topic: &Topic, value: &T) -> Result<u64> {
        if let Some(inl) = &topic.inline {
            self.check_typed::<T>(topic)?;
            return self.publish_inline(topic, inl, |ring: &RawRing, seq| ring.write(seq, value));
        }
        let mut loan = self.loan_typed::<T>(topic)?;
        loan.copy_from_slice(bytemuck::bytes_of(value));
        loan.publish()
    }

    fn check_topic(&self, topic: &Topic) -> Result<()> {
        if topic.region != self.region_id {
            return Err(Error::InvalidArgument {
                what: "topic handle",
                value: topic.index as u64,
                expected: "a topic registered through this publisher",
            });
        }
        Ok(())
    }

    #[inline]
    fn check_entry_open(&self, t: u32, generation: u32) -> Result<()> {
        entry_open(self.region().topic(t)?, generation)
    }

    /// Unregisters `topic`, for every publisher: from now on a publish on it (through any
    /// handle) is [`Error::Closed`]; publishes already in flight complete; subscribers receive
    /// everything published before and then get [`Error::Closed`] (parked ones are woken).
    /// The topic's table entry (and inline area) is reused by a later registration once no
    /// subscription to it is left; registering the same name again makes a new topic.
    /// Unregistering a topic that is already unregistered does nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a topic of another publisher; [`Error::Timeout`] when
    /// another live publisher holds the region's registration lock for a second;
    /// [`Error::Corrupt`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// use weft::Error;
    /// # let region = format!("doc-unregister-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let topic = publisher.register("/orders/42")?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/orders/42")?;
    /// publisher.publish(&topic, b"last words")?;
    /// publisher.unregister(&topic)?;
    /// assert!(matches!(publisher.publish(&topic, b"more"), Err(Error::Closed)));
    /// assert_eq!(&*sub.try_recv()?, b"last words");          // drained first
    /// assert!(matches!(sub.try_recv(), Err(Error::Closed)));  // then closed
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn unregister(&self, topic: &Topic) -> Result<()> {
        self.check_topic(topic)?;
        let r = self.region();
        let t = topic.index;
        let e = r.topic(t)?;
        {
            // Under the registration lock the entry is not registered again between the check
            // of the handle's generation and the close: a handle of an unregistered topic
            // never closes the entry's next registration.
            let _lock = RegisterLock::take(r, self.member.index)?;
            if r.topic_generation(t)? != topic.generation {
                return Ok(());
            }
            let st = r.stats(t)?;
            let me = self.member.index as u64 + 1;
            let my_id = r.row(self.member.index)?.owner_id();
            let state = r.topic_state(t)?;
            match state {
                TOPIC_READY => {}
                // Our own close, which an earlier call of ours began and left with an error
                // (a corrupt counter, say): this call goes on with it, or the topic would stay
                // closing, refusing publishes and never closing for its subscribers, for as
                // long as we live (a closer's death hands the close to its subscribers).
                // Relaxed: our own stores.
                TOPIC_CLOSING
                    if st.closer.load(Ordering::Relaxed) == me
                        && st.closer_id.load(Ordering::Relaxed) == my_id => {}
                _ => return Ok(()),
            }
            if state == TOPIC_READY {
                // Who closes: if we die before CLOSED, a subscriber finishes the close for us
                // (`finish_dead_close`). Relaxed: published by the CAS below (Release).
                st.closer.store(me, Ordering::Relaxed);
                st.closer_id.store(my_id, Ordering::Relaxed);
                // SYNC POINT: AcqRel CAS: from here every publish through any handle is
                // refused (`entry_open` loads `state` with Acquire). Only one unregistering
                // publisher wins.
                if e.state
                    .compare_exchange(
                        TOPIC_READY,
                        TOPIC_CLOSING,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_err()
                {
                    return Ok(());
                }
            }
        }
        // Publishes that passed their check before the CAS finish (at most the claim
        // timeout); a dead publisher's claim is left to the subscribers' recovery.
        let deadline = Deadline::after(self.claim_timeout);
        // A blocks publish checks that the topic is open before it claims its slot: one that
        // passed the check may claim past every slot `in_flight` looks at. Its record names
        // the topic until it has committed, so the close point is read only once no live
        // participant's record does (the heavy half of the handshake whose light half the
        // publish runs before its check: a publish either sees CLOSING or is seen here).
        // Publishes that start later see CLOSING. An inline publish claims first and checks
        // after, so its claim is always below the counter `in_flight` reads.
        let mut quiet = topic.inline.is_some();
        let end = loop {
            if !quiet {
                // A look that fails (the reclaim of a dead writer's row waited past its
                // timeout on a mark, say) counts as not quiet: looked at again until the
                // deadline, then the close goes ahead as for a live writer that did not finish.
                // Returning here left the topic closing for good.
                quiet = matches!(r.writers(t as u64 + 1, self.member.index, false), Ok(false));
            }
            let (end, settled) = self.in_flight(topic)?;
            if (quiet && settled) || deadline.expired() {
                break end;
            }
            crate::sync::yield_now();
        };
        close_at(r, t, end)?;
        if r.subscriptions(t) == 0 {
            let _lock = RegisterLock::take(r, self.member.index)?;
            r.free_topic(t, self.member.index)?;
        }
        Ok(())
    }

    /// The topic's claim counter and whether every sequence claimed below it is complete.
    fn in_flight(&self, topic: &Topic) -> Result<(u64, bool)> {
        let r = self.region();
        if let Some(inl) = &topic.inline {
            // SAFETY: the handle is ours (our caller, `unregister`, checked it); our mapping
            // lives with `self`.
            let ring = unsafe { inl.ring() };
            // Acquire: pairs with the AcqRel claims.
            let c = ring.cursor().load(Ordering::Acquire);
            // As a blocks topic's tail: a counter at 2^62 or past it is a scribbling peer's,
            // and made the close point, it would keep subscribers from ever seeing `Closed`.
            if c >= SEQ_LIMIT {
                return Err(Error::corrupt(
                    r.obj.name(),
                    "inline claim counter",
                    c,
                    "below 2^62",
                ));
            }
            // One lap of the ring (fewer slots than `s` for messages above a line). A sequence
            // claimed by a publisher that then found the topic closed is abandoned, never
            // written: it is voided here (as a dead claimant's is), so that the close point
            // is not held back by it until the deadline and subscribers do not stop at it
            // for good. A live claim that may still be written is left alone.
            let lap = ring.capacity();
            let settled = (c.saturating_sub(lap)..c).all(|q| {
                ring.stamp_of(q) >= raw::done(q) || r.unstick_inline(topic.index, ring, q)
            });
            return Ok((c, settled));
        }
        let ring = r.ring(topic.index, topic.mode == TopicMode::Latest)?;
        let c = ring.tail().map_err(|c| corrupt(&r.obj, c))?;
        let settled = (c.saturating_sub(ring.cap())..c).all(|q| {
            // Acquire: pairs with the Release commit.
            let st = ring.slot(q).stamp.load(Ordering::Acquire);
            st & (1 << 63) == 0 && st > q
        });
        Ok((c, settled))
    }

    /// A typed writer for the inline topic `topic`: it checks the topic and the type once, and
    /// each [`InlineWriter::publish`] is then the ring's publish and a check that the topic is
    /// still registered (for tight loops of small values; [`Publisher::publish_typed`] checks
    /// everything on every call).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a topic that is not inline or of another publisher;
    /// [`Error::TypeMismatch`] when the topic's messages are not `T`s (its registered type, or
    /// for an untyped topic its message size, must match `T`).
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicSpec};
    /// # let region = format!("doc-writer-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let t = publisher.register_spec("/n", &TopicSpec::inline(8).typed::<u64>().single_publisher())?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe_typed::<u64>("/n")?;
    /// let mut w = publisher.inline_writer::<u64>(&t)?;
    /// for i in 0..3 {
    ///     w.publish(&i)?;
    /// }
    /// assert_eq!(sub.try_recv_value::<u64>()?, 0);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn inline_writer<T: bytemuck::Pod>(&self, topic: &Topic) -> Result<InlineWriter<'_, T>> {
        self.check_topic(topic)?;
        let Some(inl) = topic.inline else {
            return Err(Error::InvalidArgument {
                what: "topic of an inline writer",
                value: topic.index as u64,
                expected: "an inline topic",
            });
        };
        let size = core::mem::size_of::<T>() as u64;
        if topic.layout.is_some() {
            self.check_typed::<T>(topic)?;
        } else if inl.size as u64 != size {
            return Err(Error::TypeMismatch {
                name: alloc::format!("{}{}", self.member.name(), topic.name),
                found: "untyped inline messages".into(),
                found_size: inl.size as u64,
                expected: core::any::type_name::<T>().into(),
                expected_size: size,
            });
        }
        // SAFETY: (both calls) the handle is ours (checked above); the writer borrows `self`,
        // which keeps our mapping.
        let (ring, entry) = unsafe { (inl.ring(), inl.entry()) };
        Ok(InlineWriter {
            publisher: self,
            ring,
            entry,
            generation: topic.generation,
            tag: topic.index as u64 + 1,
            index: topic.index,
            exclusive: inl.exclusive,
            _t: PhantomData,
        })
    }

    /// Publishes one message on an inline topic: claim (or, single publisher, take the next
    /// sequence), write the slot, wake parked subscribers. A slot whose previous lap is still
    /// claimed by a live, stalled publisher is waited for at most `claim_timeout`; a dead one's
    /// claim is voided.
    #[inline]
    fn publish_inline(
        &self,
        topic: &Topic,
        inl: &InlineTopic,
        write: impl FnOnce(&RawRing, u64),
    ) -> Result<u64> {
        self.check_topic(topic)?;
        // SAFETY: (both calls) the handle came from our region (checked above), whose mapping
        // lives as long as `self`.
        let (ring, e) = unsafe { (inl.ring(), inl.entry()) };
        entry_open(e, topic.generation)?;
        let r = self.region();
        let seq = if inl.exclusive {
            inline::publish_exclusive(&ring, self.lease, write)
                .map_err(|e| self.exclusive_error(topic.index, e))?
        } else {
            let rec = r.inline_record(self.member.index)?;
            inline::publish(
                &ring,
                rec,
                topic.index as u64 + 1,
                || {
                    wake::light_machine();
                    self.check_entry_open(topic.index, topic.generation)
                },
                write,
                || self.inline_slot_wait(topic.index, &ring),
                |s| self.bad_counter(s),
            )?
        };
        let s = ring.signal();
        wake::wake_machine(&s.waiters, &s.notify);
        Ok(seq)
    }

    /// The error of a single publisher's inline publish on topic `t` that did not publish.
    #[cold]
    fn exclusive_error(&self, t: u32, e: inline::Exclusive) -> Error {
        match e {
            inline::Exclusive::Counter(seq) => self.bad_counter(seq),
            inline::Exclusive::Lease(lease) => self.lost_lease(t, lease),
        }
    }

    #[cold]
    fn bad_counter(&self, seq: u64) -> Error {
        Error::corrupt(
            self.member.name(),
            "inline claim counter",
            seq,
            "below 2^62",
        )
    }

    /// The wait for a claimed inline slot whose previous lap `prev` is not complete (the
    /// `wait` of [`inline::publish`], made only then), one call per round: yields, voids a
    /// dead claimant's `prev` every 64 rounds, and gives the claim up with `Timeout` after
    /// `claim_timeout` (a live, stalled publisher's slot is never taken from it).
    #[cold]
    fn inline_slot_wait<'a>(
        &'a self,
        index: u32,
        ring: &'a RawRing,
    ) -> impl FnMut(u64) -> Result<()> + 'a {
        let deadline = Deadline::after(self.claim_timeout);
        let mut waiter = Waiter::new(WaitStrategy::YieldSpin);
        let mut rounds = 0u32;
        move |prev| {
            rounds = rounds.wrapping_add(1);
            if rounds.is_multiple_of(64) {
                self.region().unstick_inline(index, *ring, prev);
            }
            if deadline.expired() {
                return Err(Error::Timeout);
            }
            let _ = waiter.next();
            Ok(())
        }
    }

    /// The largest payload a loan holds (the block size).
    pub fn max_len(&self) -> usize {
        self.region().geo.block_size as usize
    }

    /// Loans a block for `topic`: write the payload in place, then [`Loan::publish`]. The
    /// loan's length starts at the whole block (on a typed topic, at its type's size, the only
    /// length it publishes); [`Loan::set_len`] changes it.
    ///
    /// When the pool is empty, the blocks of dead participants are reclaimed first.
    ///
    /// # Errors
    /// [`Error::Full`] when the pool has no free block (every block is loaned, published in
    /// a ring, or held by a sample); [`Error::Closed`] when the topic was unregistered;
    /// [`Error::InvalidArgument`] for a topic of another publisher, for an inline topic (its messages are copied: [`Publisher::publish`]), or
    /// when this publisher already holds `max_held` loans; [`Error::Corrupt`].
    // Always inlined, as `Loan::publish` is: out of line, the loan (six words) goes through
    // memory to the caller and on to the publish, around the caller's payload stores. The
    // compiler left both calls out of line in the bench, whose blocks rows paid about 2 ns at
    // 8 B and 4 ns at 1 KiB for them.
    #[inline(always)]
    pub fn loan(&self, topic: &Topic) -> Result<Loan<'_>> {
        self.check_topic(topic)?;
        // Resolved once: the publish checks the same entry twice more.
        let topic_entry = self.region().topic(topic.index)?;
        entry_open(topic_entry, topic.generation)?;
        if topic.inline.is_some() {
            return Err(Error::InvalidArgument {
                what: "loan on an inline topic",
                value: topic.index as u64,
                expected: "a blocks or latest topic (inline messages are copied: publish)",
            });
        }
        let r = self.region();
        let adopted = match self.recycled.take() {
            Some(b) => self.member.adopt_old(b)?.map(|e| (b, e)),
            None => None,
        };
        let (b, entry) = match adopted {
            Some(got) => got,
            None => self.alloc_block()?,
        };
        let ptr = r.block_ptr(b)?;
        // A typed topic's messages are its type's size: the loan starts there, and
        // `set_len` refuses another length (every typed subscriber would fail to read it).
        // The size was checked against the block size at register.
        let (min, cap) = match topic.layout {
            Some((size, _)) => (size as u32, size as u32),
            None => (0, r.geo.block_size as u32),
        };
        Ok(Loan {
            publisher: self,
            topic_entry,
            topic: topic.index,
            generation: topic.generation,
            block: b,
            entry,
            len: cap,
            min,
            cap,
            ptr,
            exclusive: topic.exclusive,
            latest: topic.mode == TopicMode::Latest,
            done: false,
        })
    }

    /// A free block and the holdings entry that records it, scanning from the cursor; a pool
    /// found empty is refilled with what dead participants held first.
    fn alloc_block(&self) -> Result<(u32, u32)> {
        let mut cursor = self.cursor.get();
        let got = match self.member.alloc(&mut cursor)? {
            Some(got) => got,
            None => {
                self.region().reclaim_dead()?;
                self.member.alloc(&mut cursor)?.ok_or(Error::Full)?
            }
        };
        self.cursor.set(cursor);
        Ok(got)
    }

    /// Copies `data` into a loaned block and publishes it (or, on an inline topic, into the
    /// ring's slot). Returns the message's sequence.
    ///
    /// # Errors
    /// [`Error::TooLarge`] when `data` exceeds the block size; [`Error::Closed`] when the topic
    /// was unregistered; [`Error::TypeMismatch`] on a typed topic when `data` is not its type's
    /// size; as [`Publisher::loan`] and [`Loan::publish`]. On an inline topic: [`Error::InvalidArgument`] when `data` is not
    /// exactly the topic's message size; [`Error::Timeout`] when the slot it needs stays
    /// claimed by a live, stalled publisher for [`Config::claim_timeout`].
    #[inline]
    pub fn publish(&self, topic: &Topic, data: &[u8]) -> Result<u64> {
        if let Some(inl) = &topic.inline {
            if data.len() != inl.size as usize {
                return Err(Error::InvalidArgument {
                    what: "message length on an inline topic",
                    value: data.len() as u64,
                    expected: "exactly the topic's message size",
                });
            }
            return self.publish_inline(topic, inl, |ring: &RawRing, seq| {
                ring.write_bytes(seq, data)
            });
        }
        self.publish_copy(topic, data)
    }

    /// [`Publisher::publish`] on a blocks or latest topic: kept out of line, so that an inline
    /// topic's publish stays small where it is called.
    #[inline(never)]
    fn publish_copy(&self, topic: &Topic, data: &[u8]) -> Result<u64> {
        if data.len() as u64 > self.region().geo.block_size {
            return Err(Error::TooLarge {
                name: self.member.name().into(),
                len: data.len() as u64,
                max: self.region().geo.block_size,
            });
        }
        let mut loan = self.loan(topic)?;
        loan.set_len(data.len())?;
        loan.copy_from_slice(data);
        loan.publish()
    }

    /// Reclaims the blocks of every dead participant (also done on joining and when a loan
    /// finds the pool empty). Returns the number of block references released.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when a dead participant's records are damaged.
    pub fn reclaim(&self) -> Result<u64> {
        self.region().reclaim_dead()
    }

    /// Statistics of `topic`: also after it was unregistered, while its subscribers keep its
    /// table entry.
    ///
    /// # Errors
    /// [`Error::Closed`] once the topic's entry was freed (it was unregistered and its last
    /// subscription ended; the entry may hold another topic since);
    /// [`Error::InvalidArgument`] for a topic of another publisher; [`Error::Corrupt`] for a
    /// damaged tail.
    pub fn stats(&self, topic: &Topic) -> Result<TopicStats> {
        self.check_topic(topic)?;
        let r = self.region();
        let t = topic.index;
        // Read as one registration left the entry, and only if that is the handle's.
        let got = r.stable(t, || {
            if r.topic_state(t)? == TOPIC_FREE || r.topic_generation(t)? != topic.generation {
                return Ok(None);
            }
            topic_stats(r, t, topic.name.clone(), r.subscriptions(t)).map(Some)
        })?;
        got.map(|(s, _)| s).ok_or(Error::Closed)
    }

    /// The region's pool and participants.
    pub fn region_info(&self) -> RegionInfo {
        region_info(self.region())
    }

    /// The error of a single-publisher topic `t` whose lease word no longer names us: the
    /// holder it names (a value read from the region: any value), or none.
    #[cold]
    #[inline(never)]
    fn lost_lease(&self, t: u32, lease: u64) -> Error {
        let r = self.region();
        let topic = r.topic_name(t).ok().flatten().map(|(n, _)| n);
        let name = alloc::format!("{}{}", r.obj.name(), topic.as_deref().unwrap_or(""));
        let holder = region::lease_holder(lease);
        match holder.and_then(|h| r.row(h).ok()) {
            Some(row) if lease != 0 => Error::InUse {
                name,
                role: Role::Publisher,
                pid: row.pid(),
            },
            _ => Error::Corrupt {
                name,
                what: "single-publisher topic lease",
                value: lease,
                expected: "this publisher's lease (participant index + 1, its claim's epoch)",
            },
        }
    }

    /// Gives back block `b` of a loan dropped unpublished, recorded in holdings entry
    /// `entry` (see `Loan`'s drop).
    #[cold]
    #[inline(never)]
    fn give_back(&self, entry: u32, b: u32) {
        let _ = self.member.release(entry, b);
    }

    /// Publishes a loan's block `b` (recorded in holdings entry `entry`) with its length `len`
    /// on topic `t` of `generation`.
    ///
    /// The loan's fields come by value, not as `&Loan`, for the reason `Loan`'s drop gives: a
    /// loan whose address is taken lives in memory (the bench's 8 B blocks row: 39 ns with
    /// `&Loan` here, 35 without).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn publish_block(
        &self,
        topic_entry: &layout::TopicEntry,
        t: u32,
        generation: u32,
        b: u32,
        entry: u32,
        len: u32,
        exclusive: bool,
        latest: bool,
    ) -> Result<u64> {
        entry_open(topic_entry, generation)?;
        // An earlier publish whose release of the previous lap's block gave up left that
        // reference in the publish record, which this publish is about to reuse; so did one
        // whose block no loan adopted (a recycled block is only kept until the next publish).
        self.recycled.set(None);
        self.member.finish_old()?;
        let r = self.region();
        let me = self.member.index;
        let ext = self.member.own_ext();
        let (ring, hot) = r.ring_hot(t, latest)?;
        if exclusive {
            crate::pubsub::holds_lease(&hot.lease, self.lease)
                .map_err(|lease| self.lost_lease(t, lease))?;
        }
        let new = desc(b, len);
        // The record of the publish in flight, for a survivor if this process dies in it.
        // Release (both): pairs with the Acquire loads in `Region::recover`.
        ext.pub_new.store(new, Ordering::Release);
        ext.pub_topic.store(t as u64 + 1, Ordering::Release);
        // The topic may have been closed since the check above, and a freer may be about to
        // hand its entry to another registration. SYNC POINT: the light half of the machine-wide
        // handshake with `Region::writers` (Dekker): either the freer sees our record
        // and keeps the entry, or we see the close (or the entry's next registration) here, and
        // no claim lands in a ring that has become another topic's.
        wake::light_machine();
        if let Err(e) = entry_open(topic_entry, generation) {
            // Release: as above; nothing is in flight.
            ext.pub_topic.store(0, Ordering::Release);
            return Err(e);
        }
        let mut deadline = None;
        let mut waiter = None;
        let mut claim = || -> Result<u64> {
            loop {
                // Release: pairs with the Acquire load of `pub_seq` in `Region::recover`.
                let note = |seq| ext.pub_seq.store(seq, Ordering::Release);
                let claimed = if exclusive {
                    ring.try_claim_single(me, note)
                } else {
                    ring.try_claim(me, note)
                }
                .map_err(|c| corrupt(&r.obj, c))?;
                match claimed {
                    Claimed::Mine { seq } => return Ok(seq),
                    Claimed::Busy { holder, .. } => {
                        // Nothing claimed yet: a topic closed meanwhile is given up at once
                        // (its closer waits for our record to go).
                        entry_open(topic_entry, generation)?;
                        let d =
                            *deadline.get_or_insert_with(|| Deadline::after(self.claim_timeout));
                        // A live holder keeps its slot; a dead one's row is reclaimed, which
                        // commits or voids what it held (within the claim timeout).
                        if holder != me
                            && !matches!(r.row(holder)?.status(r.liveness), PeerStatus::Alive)
                        {
                            r.reclaim_row_until(holder, Some(d))?;
                        }
                        if d.expired() {
                            return Err(Error::Timeout);
                        }
                        let _ = waiter
                            .get_or_insert_with(|| Waiter::new(WaitStrategy::YieldSpin))
                            .next();
                    }
                }
            }
        };
        let seq = match claim() {
            Ok(seq) => seq,
            Err(e) => {
                // Nothing is in flight any more: a record left naming the topic would keep a
                // freer from ever freeing it (`Region::writers`). Release: as above.
                ext.pub_topic.store(0, Ordering::Release);
                return Err(e);
            }
        };
        let old = ring.held_desc(seq);
        // The reference the slot holds on the previous lap's block becomes the publish
        // record's before the slot lets go of it (`pool::release_old` drops it). Release:
        // pairs with the Acquire loads in `Region::recover`.
        ext.pub_old.store(old & 0xffff_ffff, Ordering::Release);
        ring.set_desc(seq, new);
        // The slot owns the block's reference from here.
        self.member.unhold(entry);
        ring.commit(seq);
        // Published: from here on nothing fails the publish. An error would make the loan give
        // back a block that the slot now owns.
        wake::wake_machine(&hot.waiters, &hot.notify);
        // Release: as above.
        ext.pub_topic.store(0, Ordering::Release);
        if let Some((ob, _)) = undesc(old) {
            // The only reference left is ours: keep it for the next loan.
            if self.member.keep_old(ob) {
                self.recycled.set(Some(ob));
                return Ok(seq);
            }
            match self.member.release_old(ob) {
                // The block just freed is the one whose lines are still in this core's
                // cache: the next loan starts there (the allocator otherwise walks the pool
                // in order, and every loan would write a cold block).
                Ok(true) => self.cursor.set(ob),
                Ok(false) => {}
                // The release gave up (a mark that stayed past the liveness timeout, or a
                // corrupt word): the reference stays in the publish record, and the next
                // publish finishes it (`finish_old`).
                Err(_) => {}
            }
        }
        Ok(seq)
    }
}

/// A typed writer for one inline topic ([`Publisher::inline_writer`]): the topic and the type
/// are checked once; each publish is the broadcast ring's publish (single publisher: plain
/// stores; otherwise one `fetch_add` and the claim record) plus one load that says the topic is
/// still registered. Borrows its publisher.
pub struct InlineWriter<'a, T: bytemuck::Pod> {
    publisher: &'a Publisher,
    ring: RawRing,
    entry: &'a layout::TopicEntry,
    generation: u32,
    tag: u64,
    index: u32,
    exclusive: bool,
    _t: PhantomData<fn(&T)>,
}

impl<T: bytemuck::Pod> core::fmt::Debug for InlineWriter<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InlineWriter")
            .field("topic", &self.index)
            .field("single_publisher", &self.exclusive)
            .finish()
    }
}

impl<T: bytemuck::Pod> InlineWriter<'_, T> {
    /// Publishes `value`; returns its sequence.
    ///
    /// # Errors
    /// [`Error::Closed`] once the topic was unregistered; as [`Publisher::publish`] on an
    /// inline topic ([`Error::Timeout`], [`Error::Corrupt`]).
    #[inline]
    pub fn publish(&mut self, value: &T) -> Result<u64> {
        entry_open(self.entry, self.generation)?;
        let ring = &self.ring;
        let seq = if self.exclusive {
            inline::publish_exclusive(ring, self.publisher.lease, |r, s| r.write(s, value))
                .map_err(|e| self.publisher.exclusive_error(self.index, e))?
        } else {
            self.publish_shared(value)?
        };
        let s = ring.signal();
        wake::wake_machine(&s.waiters, &s.notify);
        Ok(seq)
    }

    /// The claim of a topic that several publishers may write: kept out of line, so that the
    /// single publisher's path above stays a handful of instructions in its caller.
    #[inline(never)]
    fn publish_shared(&self, value: &T) -> Result<u64> {
        let p = self.publisher;
        let ring = &self.ring;
        let rec = p.region().inline_record(p.member.index)?;
        inline::publish(
            ring,
            rec,
            self.tag,
            || {
                wake::light_machine();
                p.check_entry_open(self.index, self.generation)
            },
            |ring, seq| ring.write(seq, value),
            || p.inline_slot_wait(self.index, ring),
            |s| p.bad_counter(s),
        )
    }
}

/// Finishes the close of registration `generation` of topic `t` if the publisher closing it
/// died before it could (the entry stays CLOSING otherwise, and its subscribers would wait for
/// ever): under the registration lock, `close_seq` becomes the tail (the inline claim counter)
/// and the state CLOSED, and the subscribers are woken. A claim still in flight below the tail
/// completes, or is voided by the recovery of its dead publisher, as on any open topic. `me`
/// takes the lock, if it is free at once ([`close_dead_locked`] for a caller that holds it).
/// Returns whether it finished the close.
fn finish_dead_close(r: &Region, t: u32, generation: u32, me: u32) -> Result<bool> {
    if !closing_dead(r, t, generation)? {
        return Ok(false);
    }
    // Without waiting: a `try_` receive gets here too, and a live holder of the lock is
    // busy for a moment only; the next check period tries again.
    let Some(_lock) = RegisterLock::try_take(r, me) else {
        return Ok(false);
    };
    close_dead_locked(r, t, generation)
}

/// Whether registration `generation` of topic `t` is CLOSING and the publisher that closes it
/// is gone (its row no longer holds its process alive).
fn closing_dead(r: &Region, t: u32, generation: u32) -> Result<bool> {
    if r.topic_state(t)? != TOPIC_CLOSING || r.topic_generation(t)? != generation {
        return Ok(false);
    }
    let st = r.stats(t)?;
    // Relaxed: published by the unregistering publisher's Release CAS to CLOSING, which the
    // Acquire load of the state above saw.
    let (closer, id) = (
        st.closer.load(Ordering::Relaxed),
        st.closer_id.load(Ordering::Relaxed),
    );
    // 0: nobody recorded (a value from before the close, or a scribbling peer): nothing to go
    // on. An index past the table is a scribbling peer's: `row` says Corrupt.
    let Some(c) = closer.checked_sub(1) else {
        return Ok(false);
    };
    let row = r.row(u32::try_from(c).unwrap_or(u32::MAX))?;
    Ok(row.owner_id() != id || row.status(r.liveness) != PeerStatus::Alive)
}

/// [`finish_dead_close`] for a caller that holds the registration lock.
fn close_dead_locked(r: &Region, t: u32, generation: u32) -> Result<bool> {
    if !closing_dead(r, t, generation)? {
        return Ok(false);
    }
    close_now(r, t).map(|()| true)
}

/// Closes topic `t` at its tail (the lock held, the state CLOSING): see [`finish_dead_close`].
fn close_now(r: &Region, t: u32) -> Result<()> {
    close_at(r, t, published(r, t, topic_mode(r, t)?)?)
}

/// Moves CLOSING topic `t` to CLOSED with subscribers stopping before sequence `end`, and wakes
/// them: the last step of `Publisher::unregister`, or of a close a dead publisher left.
fn close_at(r: &Region, t: u32, end: u64) -> Result<()> {
    // The wake word is found first, while the entry is this registration's: once CLOSED is
    // stored, its last subscriber may leave and free the entry (clearing its fields, which a
    // new registration may then fill), and reading the mode and inline ring after that was
    // `Corrupt` for a cleared inline size. Waking the word of an entry freed since is only a
    // spurious wake.
    let inline = match r.entry_mode(t)? {
        Some(MODE_INLINE) => Some(r.inline_ring(t)?),
        _ => None,
    };
    // SYNC POINT: Release, then the Release store of CLOSED: a subscriber that sees CLOSED
    // (Acquire, `Subscription::closed`) sees where to stop.
    r.stats(t)?.close_seq.store(end, Ordering::Release);
    r.topic(t)?.state.store(TOPIC_CLOSED, Ordering::Release);
    match &inline {
        Some(inl) => wake::wake_always(&inl.ring.signal().notify),
        None => wake::wake_always(&r.hot(t)?.notify),
    }
    Ok(())
}

/// The registration lock: one word, `participant + 1` of the holder; a dead holder's lock is
/// broken by the next registrar.
struct RegisterLock<'a> {
    word: &'a AtomicU64,
}

impl<'a> RegisterLock<'a> {
    /// The lock if it is free (or held by a dead holder, whose lock is broken), at once;
    /// `None` while a live participant holds it, or the word cannot be reached.
    fn try_take(r: &'a Region, me: u32) -> Option<RegisterLock<'a>> {
        let word = r.register_lock().ok()?;
        Self::attempt(r, word, me)
    }

    /// The lock, waiting up to a second for a live holder.
    fn take(r: &'a Region, me: u32) -> Result<RegisterLock<'a>> {
        let word = r.register_lock()?;
        let deadline = Deadline::after(Duration::from_secs(1));
        loop {
            if let Some(lock) = Self::attempt(r, word, me) {
                return Ok(lock);
            }
            if deadline.expired() {
                // Also when a peer keeps writing garbage into the word.
                return Err(Error::Timeout);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// One try at `word`: the lock, or `None` while a live participant holds it, this one
    /// included (another thread of this process, on a handle of the same participant: its
    /// critical section is not ours to break). A dead holder's lock (or garbage) is broken and
    /// tried again; a lock that names our row from its previous owner was cleared when we took
    /// the row (`Region::recover`).
    fn attempt(r: &Region, word: &'a AtomicU64, me: u32) -> Option<RegisterLock<'a>> {
        for _ in 0..2 {
            // SYNC POINT: AcqRel pairs with the Release store in `drop`: the previous
            // holder's topic entries are visible.
            match word.compare_exchange(0, me as u64 + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(RegisterLock { word }),
                Err(h) => {
                    let holder = u32::try_from(h - 1).unwrap_or(u32::MAX);
                    let alive = r
                        .row(holder)
                        .is_ok_and(|row| row.status(r.liveness) == PeerStatus::Alive);
                    if alive {
                        return None;
                    }
                    // A dead holder (or garbage): break the lock. AcqRel as above.
                    let _ = word.compare_exchange(h, 0, Ordering::AcqRel, Ordering::Relaxed);
                }
            }
        }
        None
    }
}

impl Drop for RegisterLock<'_> {
    fn drop(&mut self) {
        // SYNC POINT: Release pairs with the AcqRel CAS in `take`.
        self.word.store(0, Ordering::Release);
    }
}

/// A block loaned from the pool for one topic: write the payload in place (it derefs to the
/// first `len()` bytes of the block, the whole block until [`Loan::set_len`]), then
/// [`Loan::publish`]. Dropped unpublished, the block returns
/// to the pool.
#[must_use = "a loan is published with `publish()`; dropped, its block returns to the pool"]
#[derive(Debug)]
pub struct Loan<'a> {
    publisher: &'a Publisher,
    /// The topic's table entry, resolved once by the loan (the publisher keeps the mapping).
    topic_entry: &'a layout::TopicEntry,
    topic: u32,
    generation: u32,
    block: u32,
    entry: u32,
    len: u32,
    /// The length range [`Loan::set_len`] accepts, `min ..= cap`: `0 ..=` the block size, or
    /// a typed topic's type size alone (the only length it publishes).
    min: u32,
    cap: u32,
    ptr: *mut u8,
    /// The topic has one publisher, us ([`TopicSpec::single_publisher`]).
    exclusive: bool,
    /// A latest topic (its ring's number of slots).
    latest: bool,
    done: bool,
}

impl Loan<'_> {
    /// Sets the payload length (at most the block size; on a typed topic, its type's size
    /// only).
    ///
    /// # Errors
    /// [`Error::TooLarge`] beyond the block size; [`Error::TypeMismatch`] on a typed topic for
    /// any other length than its type's size (the loan keeps its length).
    pub fn set_len(&mut self, len: usize) -> Result<()> {
        // Both bounds in one comparison: below `min`, the difference wraps past `cap - min`.
        // A typed topic's loan has `min == cap`, its type's size: the only length it takes,
        // so that its publish needs no check of its own (one there, on every publish, cost
        // the 8 B blocks row 1 to 2 ns).
        if (len as u64).wrapping_sub(self.min as u64) > u64::from(self.cap - self.min) {
            // Only a typed loan's range is one length (an untyped one's is 0 ..= block size).
            return Err(if self.min != self.cap {
                Error::TooLarge {
                    name: self.publisher.member.name().into(),
                    len: len as u64,
                    max: self.cap as u64,
                }
            } else {
                wrong_length(self.publisher, self.topic, len as u64, self.cap)
            });
        }
        self.len = len as u32;
        Ok(())
    }

    /// The payload length that will be published.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// The loan's payload as a `T` (the length must be `size_of::<T>()`, as
    /// [`Publisher::loan_typed`] sets it).
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the length is not `size_of::<T>()` or `T` needs more than
    /// the block's 64-byte alignment.
    pub fn value_mut<T: bytemuck::Pod>(&mut self) -> Result<&mut T> {
        // Checked on a shared view first: the error names the region, which a failed cast
        // of the mutable view would still be borrowing.
        if bytemuck::try_from_bytes::<T>(&self[..]).is_err() {
            return Err(self.not_a::<T>());
        }
        // The same bytes at the same address passed the check above: this cast cannot fail.
        Ok(bytemuck::from_bytes_mut(&mut self[..]))
    }

    /// [`Loan::value_mut`]'s error, built only when it fails (it names the region).
    #[cold]
    fn not_a<T>(&self) -> Error {
        Error::TypeMismatch {
            name: self.publisher.member.name().to_owned(),
            found: "a loan of another length".into(),
            found_size: self.len as u64,
            expected: core::any::type_name::<T>().into(),
            expected_size: core::mem::size_of::<T>() as u64,
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Publishes the block: an 8-byte descriptor goes into the topic's ring. Returns the
    /// message's sequence number.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the slot it needs stays held by a live, stalled publisher
    /// for [`Config::claim_timeout`]; [`Error::Closed`] when the topic was unregistered;
    /// [`Error::Corrupt`] for a damaged ring.
    // Always inlined: see `Publisher::loan`.
    #[inline(always)]
    pub fn publish(mut self) -> Result<u64> {
        let seq = self.publisher.publish_block(
            self.topic_entry,
            self.topic,
            self.generation,
            self.block,
            self.entry,
            self.len,
            self.exclusive,
            self.latest,
        )?;
        self.done = true;
        Ok(seq)
    }
}

/// The refusal of a loan's length `len` on topic `t`, typed with a type of `typed` bytes.
#[cold]
#[inline(never)]
fn wrong_length(publisher: &Publisher, t: u32, len: u64, typed: u32) -> Error {
    let r = publisher.region();
    let topic = r.topic_name(t).ok().flatten().map(|(n, _)| n);
    let ty = r.topic_type(t).ok().flatten();
    Error::TypeMismatch {
        name: alloc::format!("{}{}", r.obj.name(), topic.unwrap_or_default()),
        found: "a message of another length".into(),
        found_size: len,
        expected: ty.map_or_else(|| "its type".into(), |t| t.describe()),
        expected_size: typed as u64,
    }
}

impl core::ops::Deref for Loan<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the block (cap >= len bytes at ptr, inside the mapping: block_ptr checked the
        // index) is ours alone: its allocation claimed it with a count of 1 and it is not
        // published yet. The mapping outlives the loan (the publisher it borrows holds it).
        unsafe { core::slice::from_raw_parts(self.ptr, self.len as usize) }
    }
}

impl core::ops::DerefMut for Loan<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this the only access in this process.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len as usize) }
    }
}

impl Drop for Loan<'_> {
    // The drop is a flag test, inlined, and the release out of line with the loan's fields
    // by value: a drop that took the loan's address (`Member::release`, out of line) kept the
    // loan in memory wherever it could be dropped (an error path, an unwind), and the compiler
    // then moved it out of the `Result` that `loan` returned with wide loads of the fields it
    // had just stored one by one, a store-forwarding stall on every message (the bench's 8 B
    // blocks send and receive: 46 ns before, 35 after).
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            self.publisher.give_back(self.entry, self.block);
        }
    }
}

/// Receives from the topics of one region.
///
/// # Examples
/// ```
/// use weft::pubsub::{Config, Publisher, Subscriber};
/// use weft::{Error, ErrorKind};
/// # let region = format!("doc-sub-{}", std::process::id());
/// let publisher = Publisher::create(&region, &Config::default())?;
/// let subscriber = Subscriber::connect(&region)?;
/// assert_eq!(subscriber.subscribe("/absent").unwrap_err().kind(), ErrorKind::NotFound);
/// let topic = publisher.register("/t")?;
/// let mut sub = subscriber.subscribe("/t")?;
/// assert!(matches!(sub.try_recv(), Err(Error::Empty)));
/// publisher.publish(&topic, b"x")?;
/// assert_eq!(&*sub.recv()?, b"x");
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug)]
pub struct Subscriber {
    member: Arc<Member>,
    wait: WaitStrategy,
}

impl Subscriber {
    /// Connects to the existing region `region`.
    ///
    /// # Errors
    /// As [`Publisher::open`].
    pub fn connect(region: &str) -> Result<Subscriber> {
        Subscriber::connect_with(region, &Config::default())
    }

    /// Connects, waiting up to `timeout` for the region to appear.
    ///
    /// # Errors
    /// As [`Publisher::open`], at the end of the wait: [`Error::NotFound`] if the region did
    /// not appear, [`Error::NotReady`] if its creator did not finish it (as
    /// [`StreamReader::open_timeout`](crate::stream::StreamReader::open_timeout) and
    /// [`Server::connect`](crate::channel::Server::connect) say what they did not find).
    pub fn connect_timeout(region: &str, timeout: Duration) -> Result<Subscriber> {
        let deadline = Deadline::after(timeout);
        loop {
            // The wait for a creator still initialising the region is within the deadline too.
            let config = Config::default().open_timeout(deadline.remaining().unwrap_or(timeout));
            match Subscriber::connect_with(region, &config) {
                Err(Error::NotFound { .. }) if !deadline.expired() => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                other => return other,
            }
        }
    }

    /// [`Subscriber::connect`] with the handle settings of `config`.
    ///
    /// # Errors
    /// As [`Publisher::open`].
    pub fn connect_with(region: &str, config: &Config) -> Result<Subscriber> {
        let r = open_region(region, config)?;
        let member = Member::join(r, Role::Subscriber)?;
        Ok(Subscriber {
            member,
            wait: config.wait,
        })
    }

    /// Subscribes to `topic`, which must be registered: messages published from now on.
    ///
    /// # Errors
    /// [`Error::NotFound`] if no publisher registered it; [`Error::InvalidName`];
    /// [`Error::Corrupt`].
    pub fn subscribe(&self, topic: &str) -> Result<Subscription> {
        self.subscribe_with_history(topic, 0)
    }

    /// Subscribes to `topic` and starts with (up to) the last `history` messages still in the
    /// topic's ring, then everything published from now on: a late joiner catches up. At most
    /// [`Config::ring_slots`] - 1 of them (the oldest slot may be mid-overwrite already); a
    /// latest-value topic gives its newest value only.
    ///
    /// # Errors
    /// As [`Subscriber::subscribe`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// # let region = format!("doc-history-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let topic = publisher.register("/log")?;
    /// for line in [b"a", b"b", b"c"] {
    ///     publisher.publish(&topic, line)?;
    /// }
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut late = subscriber.subscribe_with_history("/log", 2)?;
    /// assert_eq!(&*late.try_recv()?, b"b");
    /// assert_eq!(&*late.try_recv()?, b"c");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn subscribe_with_history(&self, topic: &str, history: usize) -> Result<Subscription> {
        self.subscribe_inner(topic, history, None)
    }

    /// Subscribes to `topic` with `history`; `want`: a typed subscription, whose type is
    /// checked against the same registration as the rest.
    fn subscribe_inner(
        &self,
        topic: &str,
        history: usize,
        want: Option<&TypeInfo>,
    ) -> Result<Subscription> {
        validate_topic(topic)?;
        let r = &self.member.region;
        let mut last = 0;
        for _ in 0..region::REREADS {
            let Some(s) = self.subscribe_once(topic, history, want)? else {
                return Err(Error::NotFound {
                    name: alloc::format!("{}{}", self.member.name(), topic),
                });
            };
            // SYNC POINT: SeqCst fence between our subscription record (stored by
            // `hold_subscription`) and the check below, paired with the one in `free_topic`
            // between its store of the free state and its count of the subscriptions: either
            // the freer counts us and keeps the entry, or we see it free (or registered
            // again) here, give the record back and read again.
            fence(Ordering::SeqCst);
            if r.same_registration(s.topic, s.generation)? {
                return Ok(s);
            }
            last = s.topic;
            // Dropped as any subscription: the record goes (the entry is not ours to free).
            drop(s);
        }
        Err(r.unstable(last))
    }

    /// One attempt of `subscribe_inner`: the entry read, the subscription recorded.
    fn subscribe_once(
        &self,
        topic: &str,
        history: usize,
        want: Option<&TypeInfo>,
    ) -> Result<Option<Subscription>> {
        let r = &self.member.region;
        let found = r.find_topic_with(topic, |i| {
            if let Some(want) = want {
                check_type(r, topic, r.topic_type(i)?.as_ref(), want)?;
            }
            let mode = topic_mode(r, i)?;
            let (inline, latest) = if mode == TopicMode::Inline {
                // The latest flag comes with the ring it was validated against: the copy
                // buffers below are sized by it.
                let at = r.inline_ring(i)?;
                (Some((at.ring, at.size)), at.latest)
            } else {
                (None, mode == TopicMode::Latest)
            };
            let tail = published(r, i, mode)?;
            // The slot of `tail - S` may be mid-overwrite already: keep one lap minus one;
            // and nothing from before this registration of the entry.
            let back = (history as u64).min(r.ring_slots(latest) - 1);
            // A start past the tail (only a scribbling peer writes one) would leave the
            // subscription waiting for sequences that come later than the ones it is owed.
            let next = tail.saturating_sub(back).max(start_seq(r, i)?.min(tail));
            Ok((inline, latest, next))
        })?;
        let Some((i, (inline, latest, next), generation)) = found else {
            return Ok(None);
        };
        // The record makes this subscription count in the topic's statistics until it is
        // dropped, or until its participant is reclaimed if it dies.
        let ring = RingAt::new(&r.ring(i, latest)?);
        let entry = self.member.hold_subscription(i)?;
        Ok(Some(Subscription {
            ring,
            area: r.block_area(),
            close_check: AtomicU64::new(0),
            next_look: 0,
            mark_limit: None,
            member: self.member.clone(),
            entry,
            generation,
            topic: i,
            name: topic.into(),
            next,
            wait: self.wait,
            latest,
            stuck_latest: false,
            floor: next,
            lap_mark: raw::NEVER_LAPPED,
            waits: crate::WaitStats::default(),
            spare: None,
            copy: alloc::vec![0; copy_words(inline.map_or(0, |(_, size)| size))],
            plain_size: match inline {
                Some((_, size)) if !latest => size,
                _ => 0,
            },
            inline,
        }))
    }

    /// Subscribes to the typed topic `topic`, checking that it was registered for a type of
    /// `T`'s size and alignment without a name ([`Publisher::register_typed`]); read values
    /// with [`Sample::value`].
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the topic holds another type or is untyped; as
    /// [`Subscriber::subscribe`].
    pub fn subscribe_typed<T: bytemuck::Pod>(&self, topic: &str) -> Result<Subscription> {
        self.subscribe_as(topic, &type_info::<T>())
    }

    /// [`Subscriber::subscribe_typed`], as a [`TypedSubscription`]: its receives give
    /// [`TypedSample`]s, which deref to `&T`.
    ///
    /// # Errors
    /// As [`Subscriber::subscribe_typed`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Quote {
    ///     bid: u64,
    ///     ask: u64,
    /// }
    /// # let region = format!("doc-values-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let quotes = publisher.register_typed::<Quote>("/quotes")?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe_values::<Quote>("/quotes")?;
    /// publisher.publish_typed(&quotes, &Quote { bid: 99, ask: 101 })?;
    /// let q = sub.try_recv()?; // a TypedSample<Quote>: the block itself, no copy
    /// assert_eq!((q.bid, q.ask, q.seq()), (99, 101, 0));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn subscribe_values<T: bytemuck::Pod>(&self, topic: &str) -> Result<TypedSubscription<T>> {
        self.subscribe_typed::<T>(topic).map(TypedSubscription::new)
    }

    /// [`Subscriber::subscribe_typed_named`], as a [`TypedSubscription`].
    ///
    /// # Errors
    /// As [`Subscriber::subscribe_typed_named`].
    pub fn subscribe_values_named<T: bytemuck::Pod>(
        &self,
        topic: &str,
        type_name: &str,
    ) -> Result<TypedSubscription<T>> {
        self.subscribe_typed_named::<T>(topic, type_name)
            .map(TypedSubscription::new)
    }

    /// Subscribes to the typed topic `topic`, registered for `T` under the stable name
    /// `type_name` ([`Publisher::register_typed_named`]): the name, size and alignment must
    /// all match.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the topic holds another type (another name, no name, or
    /// another layout) or is untyped; [`Error::InvalidName`] for an empty or too long name;
    /// as [`Subscriber::subscribe`].
    pub fn subscribe_typed_named<T: bytemuck::Pod>(
        &self,
        topic: &str,
        type_name: &str,
    ) -> Result<Subscription> {
        self.subscribe_as(topic, &type_info_named::<T>(type_name)?)
    }

    fn subscribe_as(&self, topic: &str, want: &TypeInfo) -> Result<Subscription> {
        self.subscribe_inner(topic, 0, Some(want))
    }

    /// Subscribes to `topic`, waiting up to `timeout` for a publisher to register it.
    ///
    /// # Errors
    /// As [`Subscriber::subscribe`], at the end of the wait: [`Error::NotFound`] if no
    /// publisher registered the topic in time.
    pub fn subscribe_timeout(&self, topic: &str, timeout: Duration) -> Result<Subscription> {
        let deadline = Deadline::after(timeout);
        loop {
            match self.subscribe(topic) {
                Err(Error::NotFound { .. }) if !deadline.expired() => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                other => return other,
            }
        }
    }

    /// Every topic of the region with its statistics (discovery).
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a damaged topic table.
    pub fn topics(&self) -> Result<Vec<TopicStats>> {
        all_topics(&self.member.region)
    }

    /// The region's pool and participants.
    pub fn region_info(&self) -> RegionInfo {
        region_info(&self.member.region)
    }

    /// Reclaims the blocks of every dead participant. Returns the references released.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when a dead participant's records are damaged.
    pub fn reclaim(&self) -> Result<u64> {
        self.member.region.reclaim_dead()
    }
}

/// One topic's stream of messages for one subscriber: its own position, and the receive calls.
#[derive(Debug)]
pub struct Subscription {
    member: Arc<Member>,
    /// The holdings entry that records this subscription.
    entry: u32,
    /// The registration of the topic this subscription belongs to.
    generation: u32,
    topic: u32,
    name: String,
    /// The next sequence to deliver.
    next: u64,
    wait: WaitStrategy,
    /// A `Latest` topic, or a latest-value inline topic: skip to the newest message.
    latest: bool,
    /// A latest-value inline topic: the last read found a claim in flight and nothing newer.
    stuck_latest: bool,
    /// Sequences below this were delivered (or skipped) already.
    floor: u64,
    /// Where the last lap left us ([`raw::NEVER_LAPPED`] before the first).
    lap_mark: u64,
    /// What blocking receives did.
    waits: crate::WaitStats,
    /// An inline topic's ring (validated at subscribe) and message size.
    inline: Option<(RawRing, u32)>,
    /// The message size of a plain (not latest-value) inline topic, 0 for any other topic:
    /// the one test before [`Subscription::try_recv_value`] reads the next slot.
    plain_size: u32,
    /// A holdings entry of ours kept reserved for the block of a [`SampleRef`] (reserved on
    /// the first borrowed receive): a borrowed receive records its reference there without
    /// claiming an entry, and its release leaves the entry reserved.
    spare: Option<u32>,
    /// Where a borrowed receive on an inline topic copies the message: at least
    /// [`INLINE_MAX`] bytes and the topic's message size, 16-aligned (see [`InlineBuf`]).
    copy: Vec<u128>,
    /// The topic's descriptor ring (resolved at subscribe; its memory is the mapping that
    /// `member` keeps alive).
    ring: RingAt,
    /// The region's block area (resolved at subscribe, as `ring`).
    area: BlockArea,
    /// When a topic found CLOSING may next be checked for a closer that died
    /// ([`Subscription::finish_stuck_close`]), in monotonic nanoseconds.
    close_check: AtomicU64,
    /// When a blocking receive may next look at the publishers' liveness (one that times out
    /// before its periodic looks also at stuck claims then: `Subscription::wait_step_until`),
    /// in monotonic nanoseconds.
    next_look: u64,
    /// The deadline of the blocking receive in progress, if it has one: a wait for another
    /// participant's mark on a block gives up then (else at the liveness timeout).
    mark_limit: Option<Deadline>,
}

// SAFETY: the inline ring's and the descriptor ring's pointers lead into the region mapping
// that `member` keeps alive, and every access through them is atomic; so does the block
// area's, through which only blocks the subscription holds a reference on are read; the rest
// is plain owned data. Receiving takes `&mut self`, so shared references only read the
// handle's own fields.
unsafe impl Send for Subscription {}
// SAFETY: as for Send.
unsafe impl Sync for Subscription {}

/// What the common case of a receive found ([`Subscription::take_next`]).
enum Taken {
    /// Block, length and sequence, taken into the spare entry (the last field).
    Block(u32, u32, u64, u32),
    /// Nothing newer committed yet.
    Nothing,
    /// Anything else: the whole way decides.
    Other,
}

enum Step {
    /// A message to deliver.
    Msg(Msg),
    /// Nothing to deliver now. `holder`: the participant that claimed the sequence we wait
    /// for (blocks topics); `stuck`: an inline sequence claimed but not written.
    Nothing { holder: Option<u32>, stuck: bool },
}

/// A message a receive found, before it becomes an owned or a borrowed sample.
enum Msg {
    /// An inline message, copied.
    Copied(Sample),
    /// A latest-value message larger than a line, copied into the subscription's buffer
    /// `copy` (no allocation unless an owned sample is asked for).
    Kept { len: u32, seq: u64 },
    /// A block taken and recorded (the sample is made by the caller: a small value passes
    /// through the step functions instead of a whole sample).
    Block {
        block: u32,
        entry: u32,
        len: u32,
        seq: u64,
    },
}

impl Subscription {
    /// The topic's path.
    pub fn topic(&self) -> &str {
        &self.name
    }

    /// How often blocking receives slept in the kernel, and whether a wakeup ever failed to
    /// come (see [`WaitStats`](crate::WaitStats)): `missed_wakeups` stays 0 unless the wake
    /// handshake between publishers and parked subscribers is broken.
    pub fn wait_stats(&self) -> crate::WaitStats {
        self.waits
    }

    /// The sequence number the next sample will carry (unless it lags).
    pub fn position(&self) -> u64 {
        self.next
    }

    /// The longest message the topic can carry: an inline topic's message size, else the
    /// region's block size. The buffer [`Subscription::try_recv_into`] needs is this long.
    pub fn max_len(&self) -> usize {
        match self.inline {
            Some((_, size)) => size as usize,
            None => self.member.region.geo.block_size as usize,
        }
    }

    /// The next message, if one is there.
    ///
    /// # Errors
    /// [`Error::Empty`] when nothing new is published; [`Error::Lagged`] with the exact count
    /// of messages overwritten before this subscriber read them (it continues with the oldest
    /// one still there, or half a ring further if it was lapped again before it got through
    /// half a ring since its previous lap); [`Error::Closed`] once the topic was unregistered
    /// and everything published before was received; [`Error::InvalidArgument`] when this
    /// subscriber already holds `max_held` samples; [`Error::Timeout`] when the next block
    /// stays marked by another participant's take or drop (a few instructions, unless its
    /// process stopped in them) for the liveness timeout ([`Config::liveness_timeout`]),
    /// the one wait a `try_` receive makes; [`Error::Corrupt`].
    #[inline]
    pub fn try_recv(&mut self) -> Result<Sample> {
        // Inline topics: the common case (the next slot holds the value) copies it straight
        // into the sample that is returned. Latest-value ones read the newest instead.
        if let Some((ring, size)) = self.inline {
            if self.latest {
                let m = self.latest_inline_msg(size)?;
                return Ok(self.owned(m));
            }
            let seq = self.next;
            let mut sample = Sample {
                payload: Payload::Inline(InlineBuf([0; INLINE_MAX])),
                len: size,
                seq,
            };
            if let Payload::Inline(buf) = &mut sample.payload {
                match ring.read_bytes(seq, &mut buf.0[..size as usize]) {
                    raw::Read::Value(()) => {
                        self.next = seq + 1;
                        return Ok(sample);
                    }
                    // What the whole way would find (a claim in flight only matters to a
                    // blocking receive, which may void a dead claimant's).
                    raw::Read::NotYet if self.open() => return Err(Error::Empty),
                    _ => {}
                }
            }
        } else {
            match self.take_next() {
                Taken::Block(block, len, seq, entry) => {
                    return Ok(self.spare_to_sample(block, len, seq, entry));
                }
                // What the whole way would find: nothing committed, on a topic still open.
                Taken::Nothing if self.open() => return Err(Error::Empty),
                Taken::Nothing | Taken::Other => {}
            }
        }
        self.try_recv_slow()
    }

    /// The owned sample of a block that [`Subscription::take_next`] took into the spare entry
    /// `entry`: the sample keeps the entry from then on, and the next receive reserves another.
    /// (The callers match `take_next`'s answer themselves: a helper that returned the sample
    /// in a `Result` with that answer moved it through memory again, as `owned` explains.)
    #[inline(always)]
    fn spare_to_sample(&mut self, block: u32, len: u32, seq: u64, entry: u32) -> Sample {
        self.spare = None;
        self.owned(Msg::Block {
            block,
            entry,
            len,
            seq,
        })
    }

    /// The next message as a `T`, copied out (for small `Pod` values, inline topics above all:
    /// no sample is built, the value comes straight from the slot). Blocks and latest topics:
    /// the payload of [`Subscription::try_recv`], copied.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the message is not `size_of::<T>()` bytes; as
    /// [`Subscription::try_recv`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicSpec};
    /// # let region = format!("doc-value-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let t = publisher.register_spec("/n", &TopicSpec::inline(8))?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/n")?;
    /// publisher.publish(&t, &42u64.to_ne_bytes())?;
    /// assert_eq!(sub.try_recv_value::<u64>()?, 42);
    /// # Ok::<(), weft::Error>(())
    /// ```
    #[inline(always)]
    pub fn try_recv_value<T: bytemuck::Pod>(&mut self) -> Result<T> {
        if self.plain_size as usize == core::mem::size_of::<T>()
            && core::mem::size_of::<T>() != 0
            && let Some((ring, _)) = self.inline
        {
            match ring.read::<T>(self.next) {
                raw::Read::Value(v) => {
                    self.next += 1;
                    return Ok(v);
                }
                raw::Read::NotYet => return self.value_not_yet(),
                _ => {}
            }
        }
        self.try_recv_value_slow()
    }

    /// [`Subscription::try_recv_value`] when the next slot of an inline topic is not written:
    /// `Empty` at once if the topic is open (as in `try_recv`), else the whole way. Out of
    /// line, so that the common case stays small in its caller.
    #[inline(never)]
    fn value_not_yet<T: bytemuck::Pod>(&mut self) -> Result<T> {
        if self.open() {
            return Err(Error::Empty);
        }
        self.try_recv_value_slow()
    }

    /// [`Subscription::try_recv_value`] past its common case: kept out of line, so that the
    /// next slot's read stays a handful of instructions in its caller.
    #[inline(never)]
    fn try_recv_value_slow<T: bytemuck::Pod>(&mut self) -> Result<T> {
        if let Some((_, size)) = self.inline
            && size as usize == core::mem::size_of::<T>()
            && self.latest
        {
            let mut v = T::zeroed();
            return match self.read_inline_latest(bytemuck::bytes_of_mut(&mut v))? {
                Some(_) => Ok(v),
                None => Err(self.empty()),
            };
        }
        let s = self.try_recv()?;
        bytemuck::try_pod_read_unaligned(&s).map_err(|_| Error::TypeMismatch {
            name: alloc::format!("{}{}", self.member.name(), self.name),
            found: "a message of another length".into(),
            found_size: s.len() as u64,
            expected: core::any::type_name::<T>().into(),
            expected_size: core::mem::size_of::<T>() as u64,
        })
    }

    /// The next message copied into `buf`; returns its length. No sample is built and nothing
    /// is allocated: for an inline topic the seqlock copies the slot straight into `buf` (the
    /// way to read a latest-value inline topic's large messages); for a blocks or latest topic
    /// it is [`Subscription::try_recv`]'s payload, copied, and the block released at once.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], before anything is received, when `buf` is shorter than
    /// the largest message the topic can carry ([`Subscription::max_len`]: an inline topic's
    /// message size, else the region's block size); as [`Subscription::try_recv`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicSpec};
    /// # let region = format!("doc-into-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// // A 1 KiB latest value: larger than a line, still inline.
    /// let frame = publisher.register_spec("/frame", &TopicSpec::inline(1024).latest())?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/frame")?;
    /// for k in 1..=3u8 {
    ///     publisher.publish(&frame, &[k; 1024])?;
    /// }
    /// let mut buf = [0u8; 1024];
    /// assert_eq!(sub.try_recv_into(&mut buf)?, 1024);
    /// assert_eq!(buf, [3; 1024]); // the newest
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_recv_into(&mut self, buf: &mut [u8]) -> Result<usize> {
        if buf.len() < self.max_len() {
            return Err(Error::InvalidArgument {
                what: "buffer length for try_recv_into",
                value: buf.len() as u64,
                expected: "at least the topic's largest message, `Subscription::max_len()` \
                           (an inline topic's message size, else the region's block size)",
            });
        }
        self.try_recv_prefix(buf)
    }

    /// The first `buf.len()` bytes of the next message copied into `buf` (the whole message
    /// when it is shorter); returns the message's whole length, as `recv(2)` with `MSG_TRUNC`
    /// does. The way to read the head of a large latest value (a frame's header, a tensor's
    /// shape) without copying the rest: on an inline topic the seqlock copies and validates
    /// only those bytes (still a whole, untorn prefix of one message); on a blocks topic or a
    /// block-based [`TopicMode::Latest`] one it copies them from [`Subscription::try_recv`]'s
    /// sample, released at once. An empty `buf` still takes a message (and says how long it
    /// was).
    ///
    /// # Errors
    /// As [`Subscription::try_recv`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber, TopicSpec};
    /// # let region = format!("doc-prefix-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let frame = publisher.register_spec("/frame", &TopicSpec::inline(1024).latest())?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/frame")?;
    /// let mut frame_bytes = [0u8; 1024];
    /// frame_bytes[..8].copy_from_slice(&640u32.to_le_bytes().repeat(2));
    /// publisher.publish(&frame, &frame_bytes)?;
    /// // Only the 8-byte header comes out; the length is the whole message's.
    /// let mut head = [0u8; 8];
    /// assert_eq!(sub.try_recv_prefix(&mut head)?, 1024);
    /// assert_eq!(u32::from_le_bytes(head[..4].try_into().unwrap()), 640);
    /// assert!(matches!(sub.try_recv_prefix(&mut head), Err(weft::Error::Empty)));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_recv_prefix(&mut self, buf: &mut [u8]) -> Result<usize> {
        if let Some((ring, size)) = self.inline {
            let n = size as usize;
            let k = buf.len().min(n);
            if self.latest {
                return match self.read_inline_latest(&mut buf[..k])? {
                    Some(_) => Ok(n),
                    None => Err(self.empty()),
                };
            }
            match ring.read_bytes(self.next, &mut buf[..k]) {
                raw::Read::Value(()) => {
                    self.next += 1;
                    return Ok(n);
                }
                // As in `try_recv`.
                raw::Read::NotYet if self.open() => return Err(Error::Empty),
                _ => {}
            }
        }
        let s = self.try_recv()?;
        let k = buf.len().min(s.len());
        buf[..k].copy_from_slice(&s[..k]);
        Ok(s.len())
    }

    #[inline]
    fn try_recv_slow(&mut self) -> Result<Sample> {
        match self.step(None)? {
            Step::Msg(m) => Ok(self.owned(m)),
            Step::Nothing { .. } => Err(Error::Empty),
        }
    }

    /// Waits for the next message with the configured wait strategy.
    ///
    /// # Errors
    /// As [`Subscription::try_recv`], without `Empty`; [`Error::PeerDead`] with
    /// [`Role::Publisher`] once everything published was received, no publisher of *this
    /// topic* is alive and at least one of them died (publishers of other topics do not
    /// count; checked every 50 ms while waiting; a publisher in another pid namespace is
    /// judged by its heartbeat, so within [`Config::liveness_timeout`]). A publisher that
    /// registers the topic afterwards takes it over: the death is forgotten.
    ///
    /// A publisher that leaves cleanly ends nothing: the topic lives on for the next
    /// publisher, and `recv` goes on waiting (as an iceoryx2 subscriber does). What ends a
    /// topic is [`Publisher::unregister`] ([`Error::Closed`] once drained); a wait that must
    /// end takes [`Subscription::recv_timeout`].
    pub fn recv(&mut self) -> Result<Sample> {
        self.recv_inner(self.wait, Deadline::never())
    }

    /// Waits at most `timeout`, a wait for another participant's mark on the next block
    /// included.
    ///
    /// # Errors
    /// [`Error::Timeout`]; as [`Subscription::recv`].
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Sample> {
        self.recv_inner(self.wait, Deadline::after(timeout))
    }

    /// Waits with `strategy` instead of the configured one.
    ///
    /// # Errors
    /// As [`Subscription::recv`].
    pub fn recv_with(&mut self, strategy: WaitStrategy) -> Result<Sample> {
        self.recv_inner(strategy, Deadline::never())
    }

    /// The next message, borrowed from this subscription: as [`Subscription::try_recv`], but
    /// the sample cannot outlive this call's borrow, so one is held at a time. That lets the
    /// subscription keep its record of the sample's block between messages, and the sample
    /// hold no counted reference on the region: a borrowed receive and release is the cheapest
    /// way through a blocks or latest topic (three fewer atomic read-modify-writes per message
    /// than an owned [`Sample`]). Inline topics copy the message either way.
    ///
    /// # Errors
    /// As [`Subscription::try_recv`].
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, Subscriber};
    /// # let region = format!("doc-ref-{}", std::process::id());
    /// let publisher = Publisher::create(&region, &Config::default())?;
    /// let topic = publisher.register("/frames")?;
    /// let subscriber = Subscriber::connect(&region)?;
    /// let mut sub = subscriber.subscribe("/frames")?;
    /// publisher.publish(&topic, b"one")?;
    /// publisher.publish(&topic, b"two")?;
    /// let mut seen = Vec::new();
    /// while let Ok(sample) = sub.try_recv_ref() {
    ///     seen.push(sample.to_vec()); // read in place; the block is released at the drop
    /// }
    /// assert_eq!(seen, [b"one".to_vec(), b"two".to_vec()]);
    /// # Ok::<(), weft::Error>(())
    /// ```
    ///
    /// The sample borrows the subscription, so a second receive waits for its drop:
    /// ```compile_fail
    /// # use weft::pubsub::{Config, Publisher, Subscriber};
    /// # let publisher = Publisher::create("doc-ref-cf", &Config::default()).unwrap();
    /// # let subscriber = Subscriber::connect("doc-ref-cf").unwrap();
    /// # let mut sub = subscriber.subscribe("/t").unwrap();
    /// let a = sub.try_recv_ref().unwrap();
    /// let b = sub.try_recv_ref().unwrap(); // error: `sub` is still borrowed by `a`
    /// drop(a);
    /// ```
    #[inline]
    pub fn try_recv_ref(&mut self) -> Result<SampleRef<'_>> {
        if self.inline.is_none() {
            match self.take_next() {
                Taken::Block(block, len, seq, e) => {
                    return Ok(self.lent(Msg::Block {
                        block,
                        entry: e,
                        len,
                        seq,
                    }));
                }
                // What the whole way would find: nothing committed, on a topic still open.
                Taken::Nothing if self.open() => return Err(Error::Empty),
                Taken::Nothing | Taken::Other => {}
            }
        }
        self.try_recv_ref_slow()
    }

    /// The common case of a receive on a blocks or latest topic: the next (latest: the
    /// newest) sequence is committed, its block is taken into the subscription's spare entry
    /// and the slot still holds it. The spare is found (or reserved, [`spare_of`]) only once a
    /// committed message is found, so that an empty poll reserves nothing (an owned receive
    /// gives its spare to the sample); it stays the spare if the take does not happen.
    /// [`Taken::Nothing`] when nothing newer is committed (the next sequence is not claimed,
    /// or claimed and not committed; latest: nothing newer is claimed), [`Taken::Other`] for
    /// anything else (the caller goes the whole way).
    #[inline(always)]
    fn take_next(&mut self) -> Taken {
        // SAFETY: made from this topic's ring at subscribe; `self.member` keeps the region's
        // mapping alive, and the view is dropped at the end of this call.
        let ring = unsafe { self.ring.ring() };
        // A latest topic reads the newest claimed sequence, when it is newer than what was
        // delivered (and committed: anything else goes the whole way).
        let at = if self.latest {
            let Ok(t) = ring.tail() else {
                return Taken::Other;
            };
            if t == 0 || t - 1 < self.next {
                return Taken::Nothing;
            }
            t - 1
        } else {
            self.next
        };
        let desc = match ring.read(at) {
            Ok(Read::Ready { desc }) => desc,
            Ok(Read::Empty | Read::Pending { .. }) if !self.latest => return Taken::Nothing,
            _ => return Taken::Other,
        };
        let Some((b, len)) = undesc(desc) else {
            return Taken::Other;
        };
        if b as u64 >= self.area.blocks || len as u64 > self.area.block_size {
            return Taken::Other;
        }
        let Ok(e) = spare_of(&self.member, &mut self.spare) else {
            return Taken::Other;
        };
        if !matches!(self.member.take_into(e, b, self.mark_limit), Ok(true)) {
            return Taken::Other;
        }
        if !ring.still(at) {
            let _ = self.member.release_into(e, b);
            return Taken::Other;
        }
        self.next = at + 1;
        self.floor = self.next;
        Taken::Block(b, len, at, e)
    }

    #[inline(never)]
    fn try_recv_ref_slow(&mut self) -> Result<SampleRef<'_>> {
        if let Some((_, size)) = self.inline {
            if self.latest {
                let m = self.latest_inline_msg(size)?;
                return Ok(self.lent(m));
            }
            let s = self.try_recv()?;
            return Ok(self.lent(Msg::Copied(s)));
        }
        let e = self.spare_entry()?;
        match self.step(Some(e))? {
            Step::Msg(m) => Ok(self.lent(m)),
            Step::Nothing { .. } => Err(Error::Empty),
        }
    }

    /// Waits for the next message, borrowed ([`Subscription::try_recv_ref`]), with the
    /// configured wait strategy.
    ///
    /// # Errors
    /// As [`Subscription::recv`].
    pub fn recv_ref(&mut self) -> Result<SampleRef<'_>> {
        self.recv_ref_inner(self.wait, Deadline::never())
    }

    /// As [`Subscription::recv_ref`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`]; as [`Subscription::recv`].
    pub fn recv_ref_timeout(&mut self, timeout: Duration) -> Result<SampleRef<'_>> {
        self.recv_ref_inner(self.wait, Deadline::after(timeout))
    }

    fn recv_ref_inner(
        &mut self,
        strategy: WaitStrategy,
        deadline: Deadline,
    ) -> Result<SampleRef<'_>> {
        let into = if self.inline.is_some() {
            None
        } else {
            Some(self.spare_entry()?)
        };
        let m = self.wait_step(strategy, deadline, into)?;
        Ok(self.lent(m))
    }

    /// This subscription's spare holdings entry ([`spare_of`]).
    #[inline]
    fn spare_entry(&mut self) -> Result<u32> {
        spare_of(&self.member, &mut self.spare)
    }

    /// The borrowed sample of a message: a block taken into the spare entry, or a copy (inline
    /// topics), which moves into the subscription's buffer.
    #[inline]
    fn lent(&mut self, m: Msg) -> SampleRef<'_> {
        match m {
            Msg::Block {
                block,
                entry,
                len,
                seq,
            } => SampleRef {
                ptr: self.block_at(block),
                member: &self.member,
                len,
                block,
                entry,
                seq,
            },
            Msg::Copied(s) => {
                let copy = bytemuck::cast_slice_mut::<u128, u8>(&mut self.copy);
                let n = s.len().min(copy.len());
                copy[..n].copy_from_slice(&s[..n]);
                SampleRef {
                    member: &self.member,
                    ptr: copy.as_ptr(),
                    len: n as u32,
                    block: NO_BLOCK,
                    entry: 0,
                    seq: s.seq,
                }
            }
            Msg::Kept { len, seq } => SampleRef {
                member: &self.member,
                ptr: bytemuck::cast_slice::<u128, u8>(&self.copy).as_ptr(),
                len: len.min((self.copy.len() * 16) as u32),
                block: NO_BLOCK,
                entry: 0,
                seq,
            },
        }
    }

    fn recv_inner(&mut self, strategy: WaitStrategy, deadline: Deadline) -> Result<Sample> {
        if self.inline.is_none() {
            // The look before the wait keeps to the deadline too.
            self.mark_limit = Some(deadline);
            let taken = self.take_next();
            self.mark_limit = None;
            if let Taken::Block(block, len, seq, entry) = taken {
                return Ok(self.spare_to_sample(block, len, seq, entry));
            }
        }
        let m = self.wait_step(strategy, deadline, None)?;
        Ok(self.owned(m))
    }

    /// Waits for the next message, until `deadline`: a wait for a mark on a block included.
    fn wait_step(
        &mut self,
        strategy: WaitStrategy,
        deadline: Deadline,
        into: Option<u32>,
    ) -> Result<Msg> {
        self.mark_limit = Some(deadline);
        let got = self.wait_step_until(strategy, deadline, into);
        self.mark_limit = None;
        got
    }

    /// [`Subscription::wait_step`] with `mark_limit` set.
    fn wait_step_until(
        &mut self,
        strategy: WaitStrategy,
        deadline: Deadline,
        into: Option<u32>,
    ) -> Result<Msg> {
        let mut waiter = Waiter::new(strategy);
        let mut rounds = 0u32;
        let mut parked = false;
        loop {
            let (holder, stuck) = match self.step(into)? {
                Step::Nothing { holder, stuck } => (holder, stuck),
                Step::Msg(m) => return Ok(m),
            };
            rounds = rounds.wrapping_add(1);
            // A call that times out before its periodic looks below (a loop of short
            // timeouts, each ending before its 64th round) looks once: at a dead publisher's
            // unfinished claim, which holds back every later message, and at whether every
            // publisher died, when a look at liveness is due (`next_look`).
            let expired = deadline.expired();
            let look = expired && sys::monotonic_ns() >= self.next_look;
            if rounds.is_multiple_of(64) || parked || look {
                self.unstick(holder, stuck)?;
            }
            // Everything published has been received: if every publisher is gone and one
            // died, say so (liveness read at most every CHECK_INTERVAL, across calls).
            // Spinning rounds look at the clock every 64th time; parked rounds (50 ms each)
            // and rounds that yielded (milliseconds each on a busy core) every time.
            if rounds.is_multiple_of(64) || parked || waiter.yielded() || look {
                let now = sys::monotonic_ns();
                if now >= self.next_look {
                    self.next_look = now + CHECK_INTERVAL.as_nanos() as u64;
                    if let Some(pid) = self.member.region.topic_publishers_dead(self.topic) {
                        // Every publisher is gone: nothing new can come but what the reclaim of
                        // a dead one commits (its stored descriptor), or a last publisher
                        // committed just before it died. Those come first: the claim we wait
                        // on is settled (a round that yielded may not have looked at it
                        // above), and we read once more; past a voided sequence, the next
                        // rounds read on and look again.
                        let at = self.next;
                        self.unstick(holder, stuck)?;
                        if let Step::Msg(m) = self.step(into)? {
                            return Ok(m);
                        }
                        if self.next != at {
                            self.next_look = 0;
                            continue;
                        }
                        return Err(Error::PeerDead {
                            name: alloc::format!("{}{}", self.member.name(), self.name),
                            role: Role::Publisher,
                            pid,
                        });
                    }
                }
            }
            if expired {
                return Err(Error::Timeout);
            }
            parked = waiter.next() == Next::Park;
            if parked && let Some(s) = self.park(deadline)? {
                return Ok(Msg::Copied(s));
            }
        }
    }

    /// Sleeps until a publisher wakes us (or a slice ends). Returns a sample that arrived
    /// during the handshake.
    #[cold]
    fn park(&mut self, deadline: Deadline) -> Result<Option<Sample>> {
        let slice = deadline
            .remaining()
            .map_or(PARK_SLICE, |d| d.min(PARK_SLICE));
        // Recorded in our subscription's holdings entry, so that our announcement is taken
        // back if we are killed while parked (`Region::withdraw_parks`).
        let idle = pool::SUB_TAG | self.topic;
        let record = self
            .member
            .holding(self.entry)
            .ok()
            .map(|w| (w, idle, idle | pool::SUB_PARKED));
        if let Some((ring, _)) = self.inline {
            let s = ring.signal();
            let next = self.next;
            let latest = self.latest;
            let parked = wake::park_recorded(
                wake::Reach::Machine,
                &s.waiters,
                &s.notify,
                record,
                Some(slice),
                // Our position written, or (latest) any sequence written from there on (the
                // step reads the newest whole one: not only the newest claim, which a stalled
                // publisher may hold while a later one's value is complete), ends the park.
                || {
                    ring.stamp_of(next) >= raw::done(next)
                        || latest && {
                            // Acquire: pairs with the AcqRel claims and the SPMC publisher's
                            // Release cursor store. Only compared (and bounded by the ring's
                            // capacity below).
                            let head = ring.cursor().load(Ordering::Acquire);
                            // Written, not voided (the walk skips a void: a park that
                            // ended on one would spin while a stalled claim stays open).
                            let from = next.max(head.saturating_sub(ring.capacity()));
                            (from..head).rev().any(|s| ring.stamp_of(s) == raw::done(s))
                        }
                },
            );
            self.waits.count(parked);
            return Ok(None);
        }
        let member = self.member.clone();
        let r = &member.region;
        let hot = r.hot(self.topic)?;
        let ring = r.ring(self.topic, self.latest)?;
        let next = self.next;
        let latest = self.latest;
        let parked = wake::park_recorded(
            wake::Reach::Machine,
            &hot.waiters,
            &hot.notify,
            record,
            Some(slice),
            // Anything committed at our position, or (latest) in either slot from there on
            // (the step reads the newest committed value of the two: a claim in flight at our
            // position, a stalled publisher's, may sit behind a later committed one), ends the
            // park; the caller's loop reads it (an error too).
            || {
                if latest {
                    // A value, not a void (the step skips a void: a park that ended on one
                    // would spin while a stalled claim stays open); or anything else the
                    // step must see (an error).
                    let value = |s| match ring.read(s) {
                        Ok(Read::Ready { desc }) => undesc(desc).is_some(),
                        Ok(Read::Empty | Read::Pending { .. }) => false,
                        _ => true,
                    };
                    ring.tail()
                        .map_or(true, |t| (next.max(t.saturating_sub(2))..t).any(value))
                } else {
                    !matches!(ring.read(next), Ok(Read::Empty | Read::Pending { .. }))
                }
            },
        );
        self.waits.count(parked);
        Ok(None)
    }

    /// The sequence we wait for is claimed by `holder` (blocks), or claimed and not written
    /// (inline, `stuck`): if its claimant died, reclaim its row or void the sequence.
    fn unstick(&self, holder: Option<u32>, stuck: bool) -> Result<()> {
        let r = &self.member.region;
        if let Some(h) = holder
            && !matches!(r.row(h)?.status(r.liveness), PeerStatus::Alive)
        {
            // Within the receive's deadline, when it has one.
            r.reclaim_row_until(h, self.mark_limit)?;
        }
        if stuck && let Some((ring, _)) = self.inline {
            r.unstick_inline(self.topic, ring, self.next);
        }
        Ok(())
    }

    fn delivered_floor(&self) -> u64 {
        self.floor
    }

    /// One receive attempt on an inline topic: copy the slot, skip voided sequences, count
    /// what was overwritten.
    #[inline]
    fn step_inline(&mut self, ring: RawRing, size: u32) -> Result<Step> {
        if self.latest {
            return self.step_inline_latest(size);
        }
        let mut buf = InlineBuf([0; INLINE_MAX]);
        for _ in 0..READ_RETRIES {
            let seq = self.next;
            match ring.read_bytes(seq, &mut buf.0[..size as usize]) {
                raw::Read::Value(()) => {
                    self.next = seq + 1;
                    return Ok(Step::Msg(Msg::Copied(Sample {
                        payload: Payload::Inline(buf),
                        len: size,
                        seq,
                    })));
                }
                raw::Read::Void => self.next = seq + 1,
                raw::Read::NotYet => {
                    // Acquire: pairs with the AcqRel claims. Only compared.
                    let claimed = ring.cursor().load(Ordering::Acquire);
                    return Ok(Step::Nothing {
                        holder: None,
                        stuck: claimed > seq,
                    });
                }
                raw::Read::Overrun => return Err(self.lag_inline(ring)),
            }
        }
        Ok(Step::Nothing {
            holder: None,
            stuck: false,
        })
    }

    /// One receive attempt on a latest-value inline topic: the newest complete message at or
    /// after our position (`pubsub::inline::read_latest`), copied into `dst` (the message
    /// size), and its sequence. With nothing complete there (`Ok(None)`), it waits at the
    /// oldest claim still in flight (then `self.stuck_latest`, so that a dead claimant's
    /// sequence gets voided) or, if every one was voided, past them all.
    #[inline(always)]
    fn read_inline_latest(&mut self, dst: &mut [u8]) -> Result<Option<u64>> {
        use crate::pubsub::inline::{Latest, read_latest};
        self.stuck_latest = false;
        // The ring handle is read where it lies in the subscription, not from a copy: a copy
        // in this frame was stored with vector moves and its fields loaded back one by one,
        // which the store buffer did not forward (a latest receive of a `u64` took 10.4 to
        // 10.9 ns with the copy, 6.8 to 7.3 without).
        let Some((ring, _)) = self.inline.as_ref() else {
            // Only inline topics come here.
            return Ok(None);
        };
        match read_latest(ring, self.next, dst, READ_RETRIES) {
            Latest::Got(seq) => {
                self.next = seq + 1;
                return Ok(Some(seq));
            }
            Latest::Pending(seq) => {
                self.next = seq;
                self.stuck_latest = true;
            }
            Latest::Nothing(next) => self.next = next,
            Latest::Busy => {}
            Latest::Corrupt(head) => return Err(self.bad_inline_counter(head)),
        }
        Ok(None)
    }

    /// The error of an inline claim counter at or above 2^62 (built out of line).
    #[cold]
    #[inline(never)]
    fn bad_inline_counter(&self, head: u64) -> Error {
        let r = &self.member.region;
        Error::corrupt(r.obj.name(), "inline claim counter", head, "below 2^62")
    }

    /// The newest message of a latest-value inline topic, or `Empty` / `Closed` when there is
    /// nothing newer than what was received.
    #[inline]
    fn latest_inline_msg(&mut self, size: u32) -> Result<Msg> {
        match self.step_inline_latest(size)? {
            Step::Msg(m) => Ok(m),
            Step::Nothing { .. } => Err(self.empty()),
        }
    }

    /// [`Subscription::read_inline_latest`] as a step.
    #[inline]
    fn step_inline_latest(&mut self, size: u32) -> Result<Step> {
        let got = if size as usize <= INLINE_MAX {
            let mut buf = InlineBuf([0; INLINE_MAX]);
            self.read_inline_latest(&mut buf.0[..size as usize])?
                .map(|seq| {
                    Msg::Copied(Sample {
                        payload: Payload::Inline(buf),
                        len: size,
                        seq,
                    })
                })
        } else {
            // Into the subscription's buffer (sized for the topic at subscribe): a poll that
            // finds nothing new allocates nothing.
            let mut copy = core::mem::take(&mut self.copy);
            let got = self.read_inline_latest(
                &mut bytemuck::cast_slice_mut::<u128, u8>(&mut copy)[..size as usize],
            );
            self.copy = copy;
            got?.map(|seq| Msg::Kept { len: size, seq })
        };
        Ok(match got {
            Some(m) => Step::Msg(m),
            None => Step::Nothing {
                holder: None,
                stuck: self.stuck_latest,
            },
        })
    }

    /// Nothing to receive now: `Closed` on an unregistered topic that delivered everything,
    /// else `Empty`.
    #[cold]
    fn empty(&self) -> Error {
        match self.closed() {
            Ok(true) => Error::Closed,
            Ok(false) => Error::Empty,
            Err(e) => e,
        }
    }

    /// Overrun on an inline topic: jump to the oldest sequence still in the ring (half a ring
    /// further if lapped again soon, see [`raw::resume_after_lap`]) and report exactly how
    /// many were skipped.
    #[cold]
    fn lag_inline(&mut self, ring: RawRing) -> Error {
        let r = &self.member.region;
        // Acquire: pairs with the AcqRel claims. Written by other processes: checked, and
        // only used in saturating arithmetic (the position only moves forward).
        let head = ring.cursor().load(Ordering::Acquire);
        if head >= SEQ_LIMIT {
            return self.bad_inline_counter(head);
        }
        // The oldest sequence that may still be in the ring (its slot is the next claim's).
        let oldest = head.saturating_sub(ring.capacity());
        let new = raw::resume_after_lap(oldest, ring.capacity(), self.next, self.lap_mark);
        self.lap_mark = new;
        let skipped = new - self.next;
        self.next = new;
        if let Ok(s) = r.stats(self.topic) {
            // Relaxed: a statistic.
            s.lagged.fetch_add(skipped, Ordering::Relaxed);
        }
        Error::Lagged { skipped }
    }

    /// One receive attempt; nothing to deliver on an unregistered topic (once everything it
    /// published was delivered) is `Closed`.
    #[inline]
    fn step(&mut self, into: Option<u32>) -> Result<Step> {
        let step = self.step_once(into)?;
        if let Step::Nothing { .. } = step
            && self.closed()?
        {
            return Err(Error::Closed);
        }
        Ok(step)
    }

    /// The owned sample of a message. Always inlined: out of line, the sample (a hundred
    /// bytes) went back to its caller through memory and was moved again with wide loads of
    /// the fields just stored one by one (an owned 8 B blocks receive cost 75 ns where a
    /// borrowed one cost 33; inlined, with `spare_to_sample`, 40).
    #[inline(always)]
    fn owned(&self, m: Msg) -> Sample {
        match m {
            Msg::Copied(s) => s,
            Msg::Kept { len, seq } => Sample {
                payload: Payload::Heap(self.copy[..copy_words(len)].to_vec()),
                len,
                seq,
            },
            Msg::Block {
                block,
                entry,
                len,
                seq,
            } => Sample {
                payload: Payload::Block {
                    member: self.member.clone(),
                    block,
                    entry,
                    ptr: self.block_at(block),
                },
                len,
                seq,
            },
        }
    }

    /// The first byte of a block that `step_once` or `take_next` took (they check its index
    /// against the pool before the take).
    #[inline]
    fn block_at(&self, block: u32) -> *mut u8 {
        // `block < blocks`: checked by the caller's take, above.
        self.area.block(block)
    }

    /// Whether the topic's entry still holds our registration, open (ready, our generation):
    /// one look at the entry, as a publisher's `entry_open`. `false` says nothing more (the
    /// caller then asks [`Subscription::closed`]).
    #[inline(always)]
    fn open(&self) -> bool {
        // The index was checked at subscribe against the region's own geometry; the entry's
        // words are only compared.
        self.member
            .region
            .topic(self.topic)
            .is_ok_and(|e| entry_open(e, self.generation).is_ok())
    }

    /// Whether the topic was unregistered and everything published on it was delivered (or
    /// its entry was reused by another registration).
    #[cold]
    fn closed(&self) -> Result<bool> {
        let r = &self.member.region;
        // The common case first, in one look at the entry.
        if self.open() {
            return Ok(false);
        }
        let state = r.topic_state(self.topic)?;
        if state == TOPIC_FREE || r.topic_generation(self.topic)? != self.generation {
            return Ok(true);
        }
        match state {
            TOPIC_CLOSED => {}
            TOPIC_CLOSING if self.finish_stuck_close()? => {}
            _ => return Ok(false),
        }
        // Acquire: pairs with the Release store in `Publisher::unregister` (and in
        // `finish_dead_close`).
        let end = r.stats(self.topic)?.close_seq.load(Ordering::Acquire);
        Ok(self.next >= end)
    }

    /// A topic found CLOSING: whether its close is finished now, by the publisher closing it
    /// or, if that one died, by us (`finish_dead_close`). Its liveness is asked at most once
    /// per [`CHECK_INTERVAL`], so that polling a closing topic costs a load.
    #[cold]
    fn finish_stuck_close(&self) -> Result<bool> {
        let now = sys::monotonic_ns();
        // Relaxed: a time of our own, shared only by the threads that use this subscription.
        if now < self.close_check.load(Ordering::Relaxed) {
            return Ok(false);
        }
        self.close_check
            .store(now + CHECK_INTERVAL.as_nanos() as u64, Ordering::Relaxed);
        let r = &self.member.region;
        finish_dead_close(r, self.topic, self.generation, self.member.index)?;
        Ok(r.topic_state(self.topic)? == TOPIC_CLOSED)
    }

    /// One receive attempt. `into`: a spare holdings entry of ours to record a taken block
    /// in (borrowed samples), instead of claiming one.
    #[inline]
    fn step_once(&mut self, into: Option<u32>) -> Result<Step> {
        if let Some((ring, size)) = self.inline {
            return self.step_inline(ring, size);
        }
        let r = &*self.member.region;
        // SAFETY: made from this topic's ring at subscribe; `self.member` keeps the region's
        // mapping alive, and the view is dropped at the end of this call.
        let ring = unsafe { self.ring.ring() };
        for _ in 0..READ_RETRIES {
            if self.latest {
                // Skip to the newest claimed sequence; if it is not committed yet, or was
                // voided (a dead publisher's unfinished claim), the one before it (if newer
                // than what we delivered) is the newest whole value.
                let t = ring.tail().map_err(|c| corrupt(&r.obj, c))?;
                if t > self.next {
                    self.next = t - 1;
                    let no_value = match ring.read(self.next) {
                        Ok(Read::Pending { .. }) => true,
                        Ok(Read::Ready { desc }) => undesc(desc).is_none(),
                        _ => false,
                    };
                    if self.next > 0
                        && no_value
                        && let Some(prev) = self.next.checked_sub(1)
                        && prev >= self.delivered_floor()
                    {
                        self.next = prev;
                    }
                }
            }
            let read = ring.read(self.next).map_err(|c| corrupt(&r.obj, c))?;
            match read {
                Read::Ready { desc } => {
                    let Some((b, len)) = undesc(desc) else {
                        if self.latest {
                            // A voided newest sequence, and nothing between it and what we
                            // delivered (the skip above went back one when there was): the
                            // values before it are older, not newer.
                            if ring.still(self.next) {
                                self.floor = self.next + 1;
                                self.next += 1;
                                return Ok(Step::Nothing {
                                    holder: None,
                                    stuck: false,
                                });
                            }
                            continue;
                        }
                        // A voided sequence (a dead publisher's unfinished claim): skip it.
                        if ring.still(self.next) {
                            self.next += 1;
                        }
                        continue;
                    };
                    if b as u64 >= r.geo.blocks || len as u64 > r.geo.block_size {
                        if ring.still(self.next) {
                            return Err(Error::corrupt(
                                r.obj.name(),
                                "descriptor",
                                desc,
                                "a block inside the pool and a length within the block size",
                            ));
                        }
                        continue;
                    }
                    let entry = match into {
                        Some(e) if self.member.take_into(e, b, self.mark_limit)? => e,
                        Some(_) => continue,
                        None => match self.member.take(b, self.mark_limit)? {
                            Some(e) => e,
                            None => continue,
                        },
                    };
                    if !ring.still(self.next) {
                        match into {
                            Some(_) => self.member.release_into(entry, b)?,
                            None => self.member.release(entry, b)?,
                        }
                        continue;
                    }
                    let seq = self.next;
                    self.next += 1;
                    self.floor = self.next;
                    return Ok(Step::Msg(Msg::Block {
                        block: b,
                        entry,
                        len,
                        seq,
                    }));
                }
                Read::Lagged { .. } if self.latest => continue,
                Read::Lagged { next, .. } => {
                    // `next` is the oldest sequence the ring may still hold.
                    let next = raw::resume_after_lap(next, ring.cap(), self.next, self.lap_mark);
                    let skipped = next - self.next;
                    self.next = next;
                    self.lap_mark = next;
                    // Relaxed: a statistic.
                    r.stats(self.topic)?
                        .lagged
                        .fetch_add(skipped, Ordering::Relaxed);
                    return Err(Error::Lagged { skipped });
                }
                Read::Empty => {
                    return Ok(Step::Nothing {
                        holder: None,
                        stuck: false,
                    });
                }
                Read::Pending { holder } => {
                    return Ok(Step::Nothing {
                        holder,
                        stuck: false,
                    });
                }
            }
        }
        Ok(Step::Nothing {
            holder: None,
            stuck: false,
        })
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.member.unhold(self.entry);
        // A spare that still holds a block (its `SampleRef` was forgotten) is left to the
        // member's recovery when it leaves the region.
        if let Some(e) = self.spare
            && self.member.is_spare(e)
        {
            self.member.unhold(e);
        }
        // The last subscription to an unregistered topic frees it.
        let r = &self.member.region;
        if r.topic_state(self.topic).ok() == Some(TOPIC_CLOSED)
            && r.topic_generation(self.topic).ok() == Some(self.generation)
            && r.subscriptions(self.topic) == 0
            && let Ok(_lock) = RegisterLock::take(r, self.member.index)
        {
            let _ = r.free_topic(self.topic, self.member.index);
        }
    }
}

/// The copy of an inline message a sample holds: 16-aligned, so that [`Sample::value`] can
/// view it as any `Pod` type an inline topic accepts.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct InlineBuf([u8; INLINE_MAX]);

impl core::fmt::Debug for InlineBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("InlineBuf(..)")
    }
}

/// Where a sample's bytes are.
#[derive(Debug)]
enum Payload {
    /// A counted, recorded reference on a block in shared memory.
    Block {
        member: Arc<Member>,
        block: u32,
        entry: u32,
        ptr: *mut u8,
    },
    /// A copy taken from an inline topic's slot.
    Inline(InlineBuf),
    /// A copy of a latest-value inline message larger than [`INLINE_MAX`] (16-aligned).
    Heap(Vec<u128>),
}

/// The `u128` words (16-aligned, as [`InlineBuf`]) that hold an inline message of `size` bytes,
/// and at least [`INLINE_MAX`].
fn copy_words(size: u32) -> usize {
    (size as usize).max(INLINE_MAX).div_ceil(16)
}

/// A received message: derefs to the payload. For blocks and latest topics it is borrowed in
/// place in shared memory (zero copies) and dropping it releases the block; for inline topics
/// it is a copy of the slot (the seqlock's copy: the slot may be overwritten right after),
/// and holds nothing in the region.
#[must_use = "a sample holds a block of the region's pool until it is dropped"]
#[derive(Debug)]
pub struct Sample {
    payload: Payload,
    len: u32,
    seq: u64,
}

// SAFETY: a block sample is a counted, recorded reference on a published block that nobody
// writes while it is held (the pool hands a block to a writer only at count 0); the record is
// one holdings entry that only this sample clears (by an atomic store); the mapping is kept
// alive by `member`. An inline sample is owned bytes. Nothing in it is tied to the receiving
// thread.
unsafe impl Send for Sample {}
// SAFETY: shared access is read-only (Deref to &[u8]).
unsafe impl Sync for Sample {}

impl Sample {
    /// The payload as a `T`, zero copies.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the payload is not `size_of::<T>()` bytes (or not aligned
    /// for `T`, which needs more than 64; 16 for an inline sample).
    pub fn value<T: bytemuck::Pod>(&self) -> Result<&T> {
        value_of(self, || match &self.payload {
            Payload::Block { member, .. } => member.name().into(),
            Payload::Inline(_) | Payload::Heap(_) => "an inline sample".into(),
        })
    }

    /// The message's sequence number in its topic (gap-free per topic: the claims of every
    /// publisher together).
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// A subscription to a typed topic whose receives give [`TypedSample`]s, which deref to
/// `&T` ([`Subscriber::subscribe_values`]). The topic's type was checked at subscribe; each
/// receive checks the message's size (and alignment) again, since the region is shared with
/// other processes.
#[derive(Debug)]
pub struct TypedSubscription<T> {
    sub: Subscription,
    _t: PhantomData<fn() -> T>,
}

impl<T: bytemuck::Pod> TypedSubscription<T> {
    /// `sub`, whose topic was checked for `T` when it was subscribed.
    fn new(sub: Subscription) -> TypedSubscription<T> {
        TypedSubscription {
            sub,
            _t: PhantomData,
        }
    }

    /// As [`Subscription::try_recv`].
    ///
    /// # Errors
    /// As [`Subscription::try_recv`]; [`Error::TypeMismatch`] for a message that is not a
    /// `T` (a peer wrote another length).
    pub fn try_recv(&mut self) -> Result<TypedSample<T>> {
        TypedSample::new(self.sub.try_recv()?).map_err(|e| self.named(e))
    }

    /// As [`Subscription::recv`].
    ///
    /// # Errors
    /// As [`Subscription::recv`] and [`TypedSubscription::try_recv`].
    pub fn recv(&mut self) -> Result<TypedSample<T>> {
        TypedSample::new(self.sub.recv()?).map_err(|e| self.named(e))
    }

    /// As [`Subscription::recv_timeout`].
    ///
    /// # Errors
    /// As [`Subscription::recv_timeout`] and [`TypedSubscription::try_recv`].
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<TypedSample<T>> {
        TypedSample::new(self.sub.recv_timeout(timeout)?).map_err(|e| self.named(e))
    }

    /// As [`Subscription::recv_with`].
    ///
    /// # Errors
    /// As [`Subscription::recv_with`] and [`TypedSubscription::try_recv`].
    pub fn recv_with(&mut self, strategy: WaitStrategy) -> Result<TypedSample<T>> {
        TypedSample::new(self.sub.recv_with(strategy)?).map_err(|e| self.named(e))
    }

    /// `e` with a type mismatch named by the region and the topic (a sample knows neither).
    #[cold]
    fn named(&self, e: Error) -> Error {
        match e {
            Error::TypeMismatch {
                found,
                found_size,
                expected,
                expected_size,
                ..
            } => Error::TypeMismatch {
                name: alloc::format!("{}{}", self.sub.member.name(), self.sub.name),
                found,
                found_size,
                expected,
                expected_size,
            },
            e => e,
        }
    }

    /// The untyped subscription underneath (position, wait statistics, borrowed receives).
    pub fn subscription(&mut self) -> &mut Subscription {
        &mut self.sub
    }

    /// The untyped subscription, for good.
    pub fn into_inner(self) -> Subscription {
        self.sub
    }
}

/// A received `T` ([`TypedSubscription`]): derefs to `&T`, in place in the block for blocks
/// and latest topics (zero copies), a copy of the slot for inline topics. As a [`Sample`],
/// it holds its block until it is dropped.
#[must_use = "a sample holds a block of the region's pool until it is dropped"]
#[derive(Debug)]
pub struct TypedSample<T> {
    sample: Sample,
    _t: PhantomData<fn() -> T>,
}

impl<T: bytemuck::Pod> TypedSample<T> {
    /// Checks once that `sample` holds a `T`: its length, and its address's alignment,
    /// which moving the sample does not change (a block stays where it is; an inline copy
    /// lives in a 16-aligned buffer, or on the heap).
    fn new(sample: Sample) -> Result<TypedSample<T>> {
        sample.value::<T>()?;
        Ok(TypedSample {
            sample,
            _t: PhantomData,
        })
    }

    /// The message's sequence number in its topic.
    pub fn seq(&self) -> u64 {
        self.sample.seq()
    }

    /// The untyped sample (the same reference on the same block).
    pub fn into_sample(self) -> Sample {
        self.sample
    }
}

impl<T: bytemuck::Pod> core::ops::Deref for TypedSample<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // `new` checked the length and the alignment, and neither changes while the sample
        // lives (see `new`): this cast cannot fail.
        bytemuck::from_bytes(&self.sample)
    }
}

impl core::ops::Deref for Sample {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.payload {
            // SAFETY: `len` was checked against the block size and `ptr` is the block's start
            // (`step_once` and `take_next` checked the index against the pool before their
            // take, `block_at`) inside the mapping that `member` keeps alive; the block is
            // published and referenced by us, so no weft writer touches it. A hostile process
            // with write access can still change the bytes under this borrow: zero-copy reading
            // trusts the contents to no more than that (protocol.md, "Known limits"), while
            // every bound stays ours.
            Payload::Block { ptr, .. } => unsafe {
                core::slice::from_raw_parts(*ptr, self.len as usize)
            },
            Payload::Inline(buf) => &buf.0[..self.len as usize],
            Payload::Heap(words) => &bytemuck::cast_slice(words)[..self.len as usize],
        }
    }
}

impl Drop for Sample {
    fn drop(&mut self) {
        if let Payload::Block {
            member,
            block,
            entry,
            ..
        } = &self.payload
        {
            let _ = member.release(*entry, *block);
        }
    }
}
/// A received message borrowed from its [`Subscription`]
/// ([`Subscription::try_recv_ref`]): derefs to the payload, in place in shared memory for
/// blocks and latest topics (dropping it releases the block), a copy for inline topics. It
/// holds the subscription's borrow, so it cannot outlive the subscription or the mapping, and
/// one is held at a time; use [`Sample`] to keep several.
#[must_use = "a sample holds a block of the region's pool until it is dropped"]
#[derive(Debug)]
pub struct SampleRef<'a> {
    member: &'a Member,
    /// The payload: in a block of the mapping, or in the subscription's copy buffer.
    ptr: *const u8,
    len: u32,
    /// The block whose reference the spare entry `entry` records, or [`NO_BLOCK`] for a copy.
    block: u32,
    entry: u32,
    seq: u64,
}

/// A received payload as a `T` ([`Sample::value`], [`SampleRef::value`]); `name` names the
/// region for the error.
fn value_of<T: bytemuck::Pod>(bytes: &[u8], name: impl FnOnce() -> String) -> Result<&T> {
    bytemuck::try_from_bytes(bytes).map_err(|_| Error::TypeMismatch {
        name: name(),
        found: "a message of another length".into(),
        found_size: bytes.len() as u64,
        expected: core::any::type_name::<T>().into(),
        expected_size: core::mem::size_of::<T>() as u64,
    })
}

/// [`SampleRef::block`] of a copied message.
const NO_BLOCK: u32 = u32::MAX;

// SAFETY: as for `Sample`: a counted, recorded reference on a published block that nobody
// writes while it is held, released by one atomic protocol; the mapping is kept alive by the
// subscription this borrows. The pointer is only read.
unsafe impl Send for SampleRef<'_> {}
// SAFETY: shared access is read-only (Deref to &[u8]).
unsafe impl Sync for SampleRef<'_> {}

impl SampleRef<'_> {
    /// The payload as a `T`, zero copies.
    ///
    /// # Errors
    /// As [`Sample::value`].
    pub fn value<T: bytemuck::Pod>(&self) -> Result<&T> {
        value_of(self, || self.member.name().into())
    }

    /// The message's sequence number in its topic.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl core::ops::Deref for SampleRef<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: a block: as in `Sample::deref` (`len` checked against the block size, the
        // block referenced by us, the mapping kept alive by the subscription this borrows).
        // A copy: `len` bytes of the subscription's copy buffer, at most its length (`lent`
        // takes the smaller), which the borrow keeps from being written or moved.
        unsafe { core::slice::from_raw_parts(self.ptr, self.len as usize) }
    }
}

impl Drop for SampleRef<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.block != NO_BLOCK {
            let _ = self.member.release_into(self.entry, self.block);
        }
    }
}
