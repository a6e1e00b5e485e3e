//! The broadcast ring: a seqlock ring of `T: bytemuck::Pod` slots where every subscriber sees
//! every message, or learns exactly how many it missed.
//!
//! ```
//! use weft::ring::{self, RecvError};
//! let (mut tx, ring) = ring::channel::<u64>(1024);
//! let mut rx = ring.subscribe();
//! tx.publish(42);
//! assert_eq!(rx.try_recv(), Ok(42));
//! assert_eq!(rx.try_recv(), Err(RecvError::Empty));
//! ```
//!
//! # Flavours
//! - [`channel`]: one publisher (`publish(&mut self)`, plain stores, no read-modify-write),
//!   any number of subscribers; a slow subscriber is overrun and told so
//!   ([`RecvError::Lagged`]).
//! - [`mpmc`]: a cloneable `Send + Sync` [`MpPublisher`]; one compare-and-swap per message.
//! - [`mpmc_bounded`]: several producers with backpressure, as [`bounded`] below: the
//!   [`MpPublisher`] claims a sequence only once it fits ahead of the slowest gated
//!   subscriber ([`MpPublisher::try_publish`], [`MpPublisher::publish_timeout`]) or claims and
//!   then waits for room ([`MpPublisher::publish`]). Lossless, like a bounded MPMC queue, but
//!   every subscriber still sees every message.
//! - [`bounded`]: backpressure. Subscribers made with [`Ring::subscribe`] gate the publisher,
//!   which never overwrites what a gated subscriber has not read: [`Publisher::try_publish`]
//!   returns [`PublishError::Full`] with the value, [`Publisher::publish`] waits with its
//!   [`WaitStrategy`](crate::WaitStrategy), [`Publisher::publish_timeout`] waits at most so long.
//!
//! # Layout
//! The algorithm (`raw.rs`) runs over one block of memory and does not know whether the block
//! is a heap allocation or a shared-memory mapping; a handle keeps the block alive. Every
//! field is a fixed-size atomic (`u64` sequences everywhere, no `usize`, no pointers):
//!
//! | offset | size | content |
//! |---:|---:|---|
//! | 0 | 64 | geometry: capacity, value size, payload words, slot stride, gate count, flags, watermark |
//! | 64 | 64 | cursor: SPMC: every sequence below it is published; MPMC: the next sequence to claim |
//! | 128 | 64 | signal: parked-subscriber count, subscriber futex word, parked-publisher count, publisher futex word, live publishers, gates in use, bound on the publishers' limits |
//! | 192 | stride × capacity | slots: a `u64` stamp, then the value as `ceil(size / 8)` `u64` words |
//! | 192 + stride × capacity | 64 × gates | one gate per gated subscriber: its next sequence, or `u64::MAX` when free |
//!
//! The slots come right after the header and the gates after the slots, so that the header
//! lies at a fixed distance before the first slot and a handle reaches both through one
//! pointer.
//!
//! The stride is the smallest power of two that holds the stamp and the value (at least 16
//! bytes), so a slot never straddles a line when it fits in one: a value of up to 56 bytes
//! shares one line with its stamp, and a reader touches one line per message. A value of 128
//! bytes or more starts on the slot's second line when the stride has room for it, so that
//! its bulk copy (one vector move per line) does not straddle lines. `u64` messages
//! pack four to a line, which quarters the lines a publisher dirties compared with one slot
//! per line (a line per slot measured slower on every row: see [`Options`]). The stride
//! depends on the value's size alone, so a handle addresses slots with a shift known at
//! compile time.
//!
//! # Algorithm
//! Sequence `s` lives in slot `s & (capacity - 1)`. Its stamp is `2s + 1` while it is being
//! written and `2s + 2` once complete (0: never written). The writer stores the odd stamp, a
//! Release fence, the payload words (relaxed atomic stores), then the even stamp with Release,
//! then the cursor. A reader at `s` loads the stamp with Acquire: equal to `2s + 2`, it copies
//! the words (relaxed atomic loads), issues an Acquire fence and re-loads the stamp; unchanged,
//! the copy is whole. A stamp below `2s + 2` means "not yet"; above it, the slot has moved on
//! a lap: the reader reads the cursor `head` and jumps to `head - capacity + 1`, one past the
//! oldest sequence still in the ring, because the oldest one's slot is the next that a
//! publisher writes (a reader that went on there would be lapped again by the next message);
//! half a ring further when it is lapped again before it got through half a ring since its
//! previous lap (a faster publisher would otherwise keep lapping it). It reports
//! `Lagged { skipped }`: exactly the sequences it jumped over, those already overwritten and
//! the ones it left behind although they were still in the ring. Because every payload access
//! is atomic, a torn copy is detected and discarded, never a data race (the ring is clean
//! under miri).
//! Values read from the block are only compared or used in saturating arithmetic; indices are
//! always `seq & mask`, so a hostile writer of shared memory can produce wrong values, never
//! an out-of-bounds access.
//!
//! MPMC producers claim a sequence with a compare-and-swap on the cursor (backing off after a
//! lost one), wait until the slot's previous lap is complete (its stamp is
//! `2(s - capacity) + 2`), then write as above.
//!
//! **What a stalled MPMC producer can delay**: a producer preempted between its claim of `s`
//! and its write holds back (1) subscribers reading in order, at `s` only: the later messages
//! are already in the ring and follow as soon as it writes; and (2) other producers:
//! - on a lossy ring ([`mpmc`], or [`mpmc_bounded`] with no gated subscriber), the producer
//!   that claims `s + capacity` waits for `s` (its slot's previous lap), the one that claims
//!   `s + 2 × capacity` waits for that one, and so on: one more producer stops per lap of
//!   claims, so with `n` producers in all, every one has stopped once the claims reach
//!   `s + (n - 1) × capacity`. That is [`MpPublisher::publish`]: [`MpPublisher::try_publish`]
//!   and [`MpPublisher::publish_timeout`] claim a sequence only if its slot's previous lap is
//!   written, so they return `Full` (at once) or `Timeout` (at their timeout) instead;
//! - on a gated [`mpmc_bounded`] ring, a gated subscriber stays at `s`, so the producers stop
//!   after one window of claims: nothing at or past `s + capacity - watermark` fits, so
//!   [`MpPublisher::publish`] claims it and waits for room, and [`MpPublisher::try_publish`]
//!   and [`MpPublisher::publish_timeout`] claim nothing (`Full`, `Timeout`).
//!
//! Nothing is ever torn, lost or delivered twice because of it; a subscriber that is overrun
//! meanwhile gets `Lagged` as usual.
//!
//! Bounded rings keep a table of gates (Disruptor's gating sequences): a gated subscriber
//! publishes its position after each read; the publisher caches the minimum and rescans the
//! table (only the entries ever taken) when it reaches `minimum + capacity - watermark`.
//! Each scan first announces that limit's upper bound in the header, so that a subscriber
//! joining from the oldest message starts where no publisher that has not seen its gate yet
//! can overwrite.
//!
//! # Blocking
//! `recv` loops on `try_recv` under a [`WaitStrategy`](crate::WaitStrategy); `Park` (and `Adaptive`, after
//! spinning and yielding) sleep on a 32-bit futex word in the header, so the same code works
//! across processes. The handshake that keeps a wakeup from being lost is a Dekker pair:
//! the parker announces itself, then re-checks; the publisher stores, then looks for parkers
//! and makes the wake syscall only when one announced itself. The parker pays for both full
//! barriers with `membarrier` (see `wake.rs`), so the publisher's side costs a compiler
//! barrier and one load of a line that stays in its cache. When the last publisher drops, the
//! ring is closed: subscribers drain what is left, get [`RecvError::Closed`], and parked ones
//! are woken.
//!
//! # Cost per message
//! Publishing (SPMC) is four plain stores (odd stamp, payload, even stamp in one line, then
//! the cursor in the publisher's own line) and one load of a line that only changes when a
//! subscriber parks; no read-modify-write and no fence instruction on x86. Receiving is two
//! loads of the stamp around the payload loads, in the one line the slot occupies. A bounded
//! (Disruptor-style) ring that never overwrites needs no per-slot stamp and gets by with two
//! stores; the stamp is the price of letting a slow subscriber be overrun and told exactly
//! how many messages it lost.
//!
//! # Subscriber groups
//! [`SubscriberGroup`] serves N logical consumers on one thread with one stamp check and one
//! copy per message, one gate and per-member receive counts. Members always move together:
//! a consumer that needs its own pace should be its own [`Subscriber`], which costs one extra
//! line read per message and nothing on the publisher's side.
//!
//! # Memory
//! [`Options`] selects hugepage-advised and/or locked (`mlock`) memory for a ring (Linux).

mod publisher;
pub(crate) mod raw;
pub(crate) mod shared;
mod subscriber;
pub(crate) mod wake;

#[cfg(test)]
mod tests {
    #[cfg(not(loom))]
    mod latest;
    #[cfg(loom)]
    mod loom_ring;
}

pub use publisher::{MpPublisher, Publisher};
pub use subscriber::{Ring, Subscriber, SubscriberGroup};

use crate::sync::Arc;
use core::fmt;
use raw::{FLAG_BOUNDED, FLAG_MPMC, MAX_CAPACITY, Shape};
use shared::Shared;

/// Why a receive gave no value. Converts into [`crate::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecvError {
    /// Nothing new yet.
    Empty,
    /// This subscriber fell a lap behind and jumped over `skipped` messages it had not read
    /// and will never receive. It goes on one past the oldest message still in the ring,
    /// whose slot the publisher writes next (a subscriber that went on there would be lapped
    /// again by the next message): `skipped` counts the messages already overwritten and
    /// that oldest one, still in the ring but about to be overwritten. If it was lapped
    /// again before it got through half a ring since its previous lap, it goes on half a
    /// ring further, and `skipped` counts those messages too.
    Lagged {
        /// Exactly how many messages this subscriber jumped over.
        skipped: u64,
    },
    /// Every publisher is gone and every message was received.
    Closed,
    /// A `_timeout` call ran out of time.
    Timeout,
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Empty => f.write_str("the ring holds no new message"),
            RecvError::Lagged { skipped } => {
                write!(
                    f,
                    "lagged: {skipped} messages skipped, overwritten (or about to be) before they were read"
                )
            }
            RecvError::Closed => f.write_str("every publisher of the ring is gone"),
            RecvError::Timeout => f.write_str("timed out waiting for a message"),
        }
    }
}

impl core::error::Error for RecvError {}

impl From<RecvError> for crate::Error {
    fn from(e: RecvError) -> crate::Error {
        match e {
            RecvError::Empty => crate::Error::Empty,
            RecvError::Lagged { skipped } => crate::Error::Lagged { skipped },
            RecvError::Closed => crate::Error::Closed,
            RecvError::Timeout => crate::Error::Timeout,
        }
    }
}

/// Why a publish did not happen; gives the value back. Converts into [`crate::Error`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PublishError<T> {
    /// A gated subscriber has not made room (bounded rings).
    Full(T),
    /// No room came before the timeout.
    Timeout(T),
    /// Nothing will ever receive the value: a pipeline's input was closed, or the pipeline
    /// stopped ([`Pipeline::publish_timeout`](crate::pipeline::Pipeline::publish_timeout)). A
    /// ring's own publishers never return it.
    Closed(T),
}

impl<T> PublishError<T> {
    /// The value that was not published.
    pub fn into_inner(self) -> T {
        match self {
            PublishError::Full(v) | PublishError::Timeout(v) | PublishError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for PublishError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::Full(_) => f.write_str("Full(..)"),
            PublishError::Timeout(_) => f.write_str("Timeout(..)"),
            PublishError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for PublishError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::Full(_) => f.write_str("the ring is full: a gated subscriber is behind"),
            PublishError::Timeout(_) => f.write_str("timed out waiting for room in the ring"),
            PublishError::Closed(_) => f.write_str("closed: nothing will receive the value"),
        }
    }
}

impl<T> core::error::Error for PublishError<T> {}

impl<T> From<PublishError<T>> for crate::Error {
    fn from(e: PublishError<T>) -> crate::Error {
        match e {
            PublishError::Full(_) => crate::Error::Full,
            PublishError::Timeout(_) => crate::Error::Timeout,
            PublishError::Closed(_) => crate::Error::Closed,
        }
    }
}

/// How a ring's memory is allocated and how many gated subscribers a bounded ring admits.
///
/// The slot layout is not an option: it follows from the value's size, so that every handle
/// addresses slots with a constant. A line per slot for small values, which an earlier
/// option gave, measured slower on every row on this project's test host (fan-out to four
/// subscribers 4.6x, SPSC 1.6x, ping-pong 14%) and made every publish and receive load the
/// stride. A value that must have a line to itself can be a 56-byte type (its stamp fills the
/// line).
///
/// # Examples
/// ```
/// use weft::ring::{self, Options};
/// // Hugepage-advised memory, or the heap on a kernel that refuses the advice.
/// let (mut tx, ring) = ring::channel_with::<u64>(1024, Options::new().hugepages(true))
///     .or_else(|_| ring::channel_with::<u64>(1024, Options::new()))?;
/// let mut rx = ring.subscribe();
/// tx.publish(1);
/// assert_eq!(rx.try_recv(), Ok(1));
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    hugepages: bool,
    lock: bool,
    max_subscribers: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options::new()
    }
}

impl Options {
    /// Heap memory, 64 gated subscribers at most.
    pub const fn new() -> Options {
        Options {
            hugepages: false,
            lock: false,
            max_subscribers: 64,
        }
    }

    /// Back the ring with transparent hugepages (Linux; needs `std`): its memory is placed on
    /// a 2 MiB boundary, rounded up to whole 2 MiB pages and advised `MADV_HUGEPAGE`, so that
    /// the kernel can map it with hugepages unless the system turned them off
    /// (`/sys/kernel/mm/transparent_hugepage/enabled`). Building the ring fails with
    /// `Error::Io` when the kernel refuses the advice.
    pub const fn hugepages(mut self, on: bool) -> Options {
        self.hugepages = on;
        self
    }

    /// Lock the ring's pages in memory (`mlock`; Linux; needs `std` and `RLIMIT_MEMLOCK`).
    /// Building the ring fails with `Error::Io` when the pages cannot be locked.
    ///
    /// # Examples
    /// ```
    /// use weft::ring::{self, Options};
    /// // Locked pages where `RLIMIT_MEMLOCK` allows them, plain heap memory otherwise.
    /// let (mut tx, ring) = ring::channel_with::<u64>(1024, Options::new().lock(true))
    ///     .or_else(|_| ring::channel_with::<u64>(1024, Options::new()))?;
    /// let mut rx = ring.subscribe();
    /// tx.publish(3);
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub const fn lock(mut self, on: bool) -> Options {
        self.lock = on;
        self
    }

    /// How many gated subscribers a bounded ring admits at once: 1 to 4096 (default 64; each
    /// costs one cache line and one load per publisher rescan). [`bounded_with`] and
    /// [`mpmc_bounded_with`] refuse any other number (0 would leave a bounded ring nothing
    /// to gate it: every subscriber lossy); a lossy ring has no gates and ignores it.
    ///
    /// # Examples
    /// ```
    /// use weft::ring::{Options, bounded_with};
    /// assert!(bounded_with::<u64>(8, 0, Options::new().max_subscribers(0)).is_err());
    /// assert!(bounded_with::<u64>(8, 0, Options::new().max_subscribers(4097)).is_err());
    /// let (_tx, ring) = bounded_with::<u64>(8, 0, Options::new().max_subscribers(4096))?;
    /// let _rx = ring.try_subscribe()?;
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub const fn max_subscribers(mut self, n: u64) -> Options {
        self.max_subscribers = n;
        self
    }
}

fn shape<T>(capacity: u64, flags: u64, watermark: u64, opts: &Options) -> Shape {
    let capacity = capacity.clamp(2, MAX_CAPACITY).next_power_of_two();
    Shape {
        capacity,
        value_size: core::mem::size_of::<T>() as u64,
        gates: if flags & FLAG_BOUNDED != 0 {
            opts.max_subscribers
        } else {
            0
        },
        flags,
        watermark: watermark.min(capacity - 1),
    }
}

/// The most gates a bounded ring has ([`Options::max_subscribers`]).
const MAX_GATES: u64 = 4096;

/// The ring of `shape`, after checking what `shape` took from the caller unchecked: the gate
/// count of a bounded ring, and a size in bytes that fits in `isize` (a large `T` times a
/// large capacity may not).
fn build(shape: Shape, opts: &Options) -> crate::Result<Arc<Shared>> {
    if shape.flags & FLAG_BOUNDED != 0 && !(1..=MAX_GATES).contains(&shape.gates) {
        return Err(crate::Error::InvalidArgument {
            what: "max_subscribers of a bounded ring",
            value: shape.gates,
            expected: "1 ..= 4096",
        });
    }
    if shape
        .checked_bytes()
        .and_then(|b| isize::try_from(b).ok())
        .is_none()
    {
        return Err(crate::Error::InvalidArgument {
            what: "ring capacity for this message size",
            value: shape.capacity,
            expected: "a ring whose size in bytes fits in isize",
        });
    }
    #[cfg(feature = "std")]
    if opts.hugepages || opts.lock {
        return Ok(Arc::new(Shared::mapped(shape, opts.hugepages, opts.lock)?));
    }
    let _ = opts;
    Ok(Arc::new(Shared::try_heap(shape)?))
}

/// A lossy single-publisher ring of `capacity` slots (rounded up to a power of two, at least
/// 2).
///
/// # Panics
/// When [`channel_with`] would return an error: a ring whose size in bytes does not fit in
/// `isize` (a large `T` times a large capacity), or one the allocator cannot provide.
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::channel::<[u8; 24]>(100);
/// assert_eq!(ring.capacity(), 128);
/// let mut rx = ring.subscribe();
/// tx.publish([7; 24]);
/// assert_eq!(rx.try_recv(), Ok([7; 24]));
/// ```
pub fn channel<T: bytemuck::Pod>(capacity: u64) -> (Publisher<T>, Ring<T>) {
    channel_with(capacity, Options::new())
        .expect("a ring of this capacity and message size (the _with form returns the error)")
}

/// [`channel`] with [`Options`].
///
/// # Errors
/// `Error::InvalidArgument` when the ring's size in bytes (capacity times slot) does not fit
/// in `isize`; `Error::Io` when the memory cannot be allocated, mapped or locked.
pub fn channel_with<T: bytemuck::Pod>(
    capacity: u64,
    opts: Options,
) -> crate::Result<(Publisher<T>, Ring<T>)> {
    let shared = build(shape::<T>(capacity, 0, 0, &opts), &opts)?;
    Ok((Publisher::new(shared.clone()), Ring::new(shared)))
}

/// A lossy ring with a cloneable multi-producer publisher.
///
/// # Panics
/// When [`mpmc_with`] would return an error: a ring whose size in bytes does not fit in
/// `isize` (a large `T` times a large capacity), or one the allocator cannot provide.
///
/// # Examples
/// ```
/// let (tx, ring) = weft::ring::mpmc::<u64>(8);
/// let mut rx = ring.subscribe();
/// tx.clone().publish(1);
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn mpmc<T: bytemuck::Pod>(capacity: u64) -> (MpPublisher<T>, Ring<T>) {
    mpmc_with(capacity, Options::new())
        .expect("a ring of this capacity and message size (the _with form returns the error)")
}

/// [`mpmc`] with [`Options`].
///
/// # Errors
/// `Error::InvalidArgument` when the ring's size in bytes (capacity times slot) does not fit
/// in `isize`; `Error::Io` when the memory cannot be allocated, mapped or locked.
///
/// # Examples
/// ```
/// use weft::ring::{self, Options};
/// // Hugepage-advised memory, or the heap on a kernel that refuses the advice.
/// let (tx, ring) = ring::mpmc_with::<u64>(8, Options::new().hugepages(true))
///     .or_else(|_| ring::mpmc_with::<u64>(8, Options::new()))?;
/// assert_eq!(ring.capacity(), 8);
/// let mut rx = ring.subscribe();
/// let tx2 = tx.clone();
/// std::thread::spawn(move || tx2.publish(1)).join().unwrap();
/// assert_eq!(rx.try_recv(), Ok(1));
/// # Ok::<(), weft::Error>(())
/// ```
pub fn mpmc_with<T: bytemuck::Pod>(
    capacity: u64,
    opts: Options,
) -> crate::Result<(MpPublisher<T>, Ring<T>)> {
    let shared = build(shape::<T>(capacity, FLAG_MPMC, 0, &opts), &opts)?;
    Ok((MpPublisher::new(shared.clone()), Ring::new(shared)))
}

/// A ring with a cloneable multi-producer publisher and backpressure: producers keep
/// `watermark` slots free and never overwrite a message a gated subscriber (made with
/// [`Ring::subscribe`]) has not read.
///
/// # Panics
/// When [`mpmc_bounded_with`] would return an error: a ring whose size in bytes does not fit in
/// `isize` (a large `T` times a large capacity), or one the allocator cannot provide.
///
/// # Examples
/// ```
/// let (tx, ring) = weft::ring::mpmc_bounded::<u64>(4, 0);
/// let mut rx = ring.subscribe();
/// let producers: Vec<_> = (0..2u64)
///     .map(|p| {
///         let tx = tx.clone();
///         std::thread::spawn(move || (0..100).for_each(|i| tx.publish(p * 1000 + i)))
///     })
///     .collect();
/// drop(tx);
/// let mut got = Vec::new();
/// while let Ok(v) = rx.recv() {
///     got.push(v);
/// }
/// producers.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(got.len(), 200); // four slots, 200 messages, nothing lost
/// ```
pub fn mpmc_bounded<T: bytemuck::Pod>(capacity: u64, watermark: u64) -> (MpPublisher<T>, Ring<T>) {
    mpmc_bounded_with(capacity, watermark, Options::new())
        .expect("a ring of this capacity and message size (the _with form returns the error)")
}

/// [`mpmc_bounded`] with [`Options`].
///
/// # Errors
/// `Error::InvalidArgument` when [`Options::max_subscribers`] is not 1 to 4096, or the ring's
/// size in bytes (capacity times slot) does not fit in `isize`; `Error::Io` when the memory
/// cannot be allocated, mapped or locked.
///
/// # Examples
/// ```
/// use weft::ring::{self, Options};
/// let (tx, ring) = ring::mpmc_bounded_with::<u64>(4, 0, Options::new().max_subscribers(1))?;
/// let mut rx = ring.try_subscribe()?;
/// assert!(ring.try_subscribe().is_err()); // one gate, taken
/// for i in 0..4 {
///     tx.try_publish(i).unwrap();
/// }
/// assert!(tx.try_publish(4).is_err()); // the gated subscriber has read nothing yet
/// assert_eq!(rx.try_recv(), Ok(0));
/// tx.try_publish(4).unwrap();
/// # Ok::<(), weft::Error>(())
/// ```
pub fn mpmc_bounded_with<T: bytemuck::Pod>(
    capacity: u64,
    watermark: u64,
    opts: Options,
) -> crate::Result<(MpPublisher<T>, Ring<T>)> {
    let flags = FLAG_MPMC | FLAG_BOUNDED;
    let shared = build(shape::<T>(capacity, flags, watermark, &opts), &opts)?;
    Ok((MpPublisher::new(shared.clone()), Ring::new(shared)))
}

/// A single-publisher ring with backpressure: the publisher keeps `watermark` slots free and
/// never overwrites a message a gated subscriber has not read.
///
/// # Panics
/// When [`bounded_with`] would return an error: a ring whose size in bytes does not fit in
/// `isize` (a large `T` times a large capacity), or one the allocator cannot provide.
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::bounded::<u64>(4, 1);
/// let mut rx = ring.subscribe();
/// for i in 0..3 {
///     tx.try_publish(i).unwrap();
/// }
/// assert!(tx.try_publish(3).is_err()); // one slot kept free
/// assert_eq!(rx.try_recv(), Ok(0));
/// ```
pub fn bounded<T: bytemuck::Pod>(capacity: u64, watermark: u64) -> (Publisher<T>, Ring<T>) {
    bounded_with(capacity, watermark, Options::new())
        .expect("a ring of this capacity and message size (the _with form returns the error)")
}

/// [`bounded`] with [`Options`].
///
/// # Errors
/// `Error::InvalidArgument` when [`Options::max_subscribers`] is not 1 to 4096, or the ring's
/// size in bytes (capacity times slot) does not fit in `isize`; `Error::Io` when the memory
/// cannot be allocated, mapped or locked.
pub fn bounded_with<T: bytemuck::Pod>(
    capacity: u64,
    watermark: u64,
    opts: Options,
) -> crate::Result<(Publisher<T>, Ring<T>)> {
    let shared = build(shape::<T>(capacity, FLAG_BOUNDED, watermark, &opts), &opts)?;
    Ok((Publisher::new(shared.clone()), Ring::new(shared)))
}
