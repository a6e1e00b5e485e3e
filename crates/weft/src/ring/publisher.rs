//! Publishers: the single-writer SPMC publisher (plain stores, no read-modify-write), its
//! bounded form (waits for gated subscribers), and the cloneable MPMC publisher (one
//! compare-and-swap per message to claim a sequence, with back-off when producers collide).

use super::raw::{FLAG_BOUNDED, RawRing};
use super::shared::Shared;
use super::{PublishError, wake};
use crate::WaitStrategy;
use crate::sync::{Arc, AtomicU64, Ordering};
use crate::wait::{Next, Waiter};
use core::fmt;
use core::marker::PhantomData;

/// Marks one more live publisher on `shared`.
pub(super) fn add_publisher(shared: &Shared) {
    // Relaxed: the new handle comes from an existing one (or the constructor), which keeps
    // the count above zero while we add; a subscriber's Acquire load pairs with the
    // decrement in `drop_publisher`, not with this increment.
    shared
        .raw
        .signal()
        .publishers
        .fetch_add(1, Ordering::Relaxed);
}

/// Drops one publisher; the last one closes the ring and wakes every parked subscriber.
fn drop_publisher(shared: &Shared) {
    let signal = shared.raw.signal();
    // AcqRel: the Release half pairs with the Acquire load of `publishers` in
    // `Subscriber::closed`, so a subscriber that sees 0 sees every message we published;
    // the Acquire half orders the other publishers' writes before our wake.
    if signal.publishers.fetch_sub(1, Ordering::AcqRel) == 1 {
        wake::wake_always(&signal.notify);
    }
}

/// The single publisher of a [`channel`](super::channel) or [`bounded`](super::bounded) ring.
///
/// `publish` takes `&mut self`: one thread writes, with plain stores and no read-modify-write
/// on the hot path. Dropping the publisher closes the ring: subscribers receive what is left,
/// then [`RecvError::Closed`](super::RecvError::Closed).
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::channel::<u64>(8);
/// let mut rx = ring.subscribe();
/// tx.publish(7);
/// assert_eq!(rx.try_recv(), Ok(7));
/// ```
///
/// Publishing takes `&mut self`, so two threads cannot publish through one publisher (for
/// that, see [`MpPublisher`](super::MpPublisher)):
/// ```compile_fail
/// let (mut tx, _ring) = weft::ring::channel::<u64>(8);
/// std::thread::scope(|s| {
///     s.spawn(|| tx.publish(1));
///     s.spawn(|| tx.publish(2)); // a second `&mut tx` while the first thread holds one
/// });
/// ```
pub struct Publisher<T: bytemuck::Pod> {
    shared: Arc<Shared>,
    raw: RawRing,
    /// Sequences below `limit` may be written without looking at the gates (`u64::MAX` for a
    /// lossy ring).
    limit: u64,
    /// `capacity - watermark`: how far ahead of the slowest gated subscriber we may run.
    ahead: u64,
    /// The largest limit bound this handle announced to joining subscribers
    /// ([`RawRing::gate_limit`]).
    announced: u64,
    strategy: WaitStrategy,
    _t: PhantomData<fn(T) -> T>,
}

// SAFETY: the handle owns its sequence counter; the ring memory is reached through atomics
// and kept alive by the Arc.
unsafe impl<T: bytemuck::Pod> Send for Publisher<T> {}

impl<T: bytemuck::Pod> fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("capacity", &self.raw.capacity())
            .field("published", &self.next())
            .field("bounded", &(self.limit != u64::MAX))
            .finish()
    }
}

impl<T: bytemuck::Pod> Publisher<T> {
    pub(super) fn new(shared: Arc<Shared>) -> Publisher<T> {
        add_publisher(&shared);
        let raw = shared.raw;
        let g = &raw.header().geometry.0;
        // Relaxed: geometry written before the ring was shared.
        let bounded = g.flags.load(Ordering::Relaxed) & FLAG_BOUNDED != 0;
        let watermark = g.watermark.load(Ordering::Relaxed);
        let ahead = raw.capacity().saturating_sub(watermark).max(1);
        Publisher {
            shared,
            raw,
            limit: if bounded { 0 } else { u64::MAX },
            ahead,
            announced: 0,
            strategy: WaitStrategy::default(),
            _t: PhantomData,
        }
    }

    /// Sets how a bounded publisher waits for room (default [`WaitStrategy::Adaptive`]).
    ///
    /// # Examples
    /// ```
    /// let (tx, _ring) = weft::ring::bounded::<u64>(8, 0);
    /// let _tx = tx.with_wait_strategy(weft::WaitStrategy::BusySpin);
    /// ```
    pub fn with_wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Number of messages published so far (the next sequence number).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(4);
    /// let _rx = ring.subscribe();
    /// assert_eq!(tx.published(), 0);
    /// tx.publish_batch(&[1, 2, 3, 4, 5, 6]);
    /// assert_eq!(tx.published(), 6); // overwritten messages count too
    /// ```
    pub fn published(&self) -> u64 {
        self.next()
    }

    /// The ring's capacity in slots.
    pub fn capacity(&self) -> u64 {
        self.raw.capacity()
    }

    /// Whether the next message would have to wait (bounded rings only; always false for a
    /// lossy ring). A subscriber may free room at any time: `true` can be stale.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::bounded::<u64>(2, 0);
    /// let mut rx = ring.subscribe();
    /// tx.publish(1);
    /// assert!(!tx.is_full());
    /// tx.publish(2);
    /// assert!(tx.is_full());
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert!(!tx.is_full()); // the read made room
    ///
    /// let (mut lossy, _ring) = weft::ring::channel::<u64>(2);
    /// lossy.publish_batch(&[1, 2, 3]);
    /// assert!(!lossy.is_full()); // a lossy ring overwrites instead
    /// ```
    pub fn is_full(&mut self) -> bool {
        !self.has_room(1)
    }

    /// Whether `n` more sequences fit, refreshing the cached gate minimum if needed.
    #[inline(always)]
    fn has_room(&mut self, n: u64) -> bool {
        let last = self.next() + n - 1;
        if last < self.limit {
            return true;
        }
        self.refresh_limit();
        last < self.limit
    }

    #[cold]
    fn refresh_limit(&mut self) {
        self.limit = self
            .raw
            .gate_limit(self.next(), self.ahead, &mut self.announced);
    }

    /// Writes `n = values.len()` sequences and publishes them with one cursor store.
    #[inline(always)]
    fn write_all(&mut self, values: &[T]) {
        let (raw, first) = (self.raw, self.next());
        // At most a lap (`publish_batch` cuts its batch by the capacity).
        raw.write_run(first, values);
        let next = first + values.len() as u64;
        Self::commit(&raw, next);
    }

    /// The next sequence to write: the cursor, which only this handle writes, so a Relaxed
    /// load reads our own last store (keeping the count in the handle as well would cost a
    /// second store per message).
    #[inline(always)]
    fn next(&self) -> u64 {
        self.raw.cursor().load(Ordering::Relaxed)
    }

    /// Publishes the sequences below `next` and wakes parked subscribers, if any. Takes the
    /// ring by reference to the caller's copy: the atomic stores of a write could otherwise make
    /// the compiler reload the ring's pointers from the handle.
    #[inline(always)]
    fn commit(raw: &RawRing, next: u64) {
        // Release pairs with the Acquire cursor loads of `Subscriber` (`join`, `pending`,
        // `lag`, `latest`).
        raw.cursor().store(next, Ordering::Release);
        let s = raw.signal();
        wake::wake(&s.waiters, &s.notify);
    }

    /// Publishes `value`. On a lossy ring this never waits (the oldest message is overwritten
    /// and slow subscribers see [`Lagged`](super::RecvError::Lagged)); on a bounded ring it
    /// waits with the publisher's wait strategy until the slowest gated subscriber makes room.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u32>(4);
    /// let mut rx = ring.subscribe();
    /// for i in 0..6 {
    ///     tx.publish(i);
    /// }
    /// // 0 and 1 were overwritten; 2, the oldest still in the ring, is the next to go. The
    /// // subscriber goes on after it and learns exactly how many it will never receive.
    /// assert_eq!(rx.try_recv(), Err(weft::ring::RecvError::Lagged { skipped: 3 }));
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// ```
    #[inline]
    pub fn publish(&mut self, value: T) {
        // The sequence lives in a local: the atomic stores below could otherwise make the
        // compiler reload it from `self` (a store-to-load round trip per message).
        let seq = self.next();
        if seq < self.limit {
            self.write_one(seq, &value);
        } else {
            self.publish_at_limit(seq, value);
        }
    }

    /// [`publish`](Publisher::publish) past the limit: looks at the gates, waits if there is
    /// no room, then writes. Out of line, so that the common path has no join with it (at the
    /// join, the compiler reloaded the ring's pointers from the handle for every message).
    #[cold]
    #[inline(never)]
    fn publish_at_limit(&mut self, seq: u64, value: T) {
        if !self.has_room(1) {
            self.wait_for_room(1, None);
        }
        self.write_one(seq, &value);
    }

    #[inline(always)]
    fn write_one(&mut self, seq: u64, value: &T) {
        // One copy of the ring's pointers for the whole write (see `commit`).
        let raw = self.raw;
        raw.write(seq, value);
        Self::commit(&raw, seq + 1);
    }

    /// Publishes `value` if there is room now.
    ///
    /// # Errors
    /// [`PublishError::Full`] with the value when a gated subscriber has not made room
    /// (bounded rings only).
    ///
    /// # Examples
    /// ```
    /// use weft::ring::PublishError;
    /// let (mut tx, ring) = weft::ring::bounded::<u64>(2, 0);
    /// let mut rx = ring.subscribe();
    /// tx.try_publish(1).unwrap();
    /// tx.try_publish(2).unwrap();
    /// assert_eq!(tx.try_publish(3), Err(PublishError::Full(3)));
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// tx.try_publish(3).unwrap();
    /// ```
    #[inline]
    pub fn try_publish(&mut self, value: T) -> Result<(), PublishError<T>> {
        let seq = self.next();
        if !self.has_room(1) {
            return Err(PublishError::Full(value));
        }
        self.write_one(seq, &value);
        Ok(())
    }

    /// Publishes `value`, waiting at most `timeout` for room.
    ///
    /// # Errors
    /// [`PublishError::Timeout`] with the value when no room came in time.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (mut tx, ring) = weft::ring::bounded::<u64>(2, 0);
    /// let _rx = ring.subscribe();
    /// tx.publish(1);
    /// tx.publish(2);
    /// let e = tx.publish_timeout(3, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(e.into_inner(), 3);
    /// ```
    #[cfg(feature = "std")]
    pub fn publish_timeout(
        &mut self,
        value: T,
        timeout: core::time::Duration,
    ) -> Result<(), PublishError<T>> {
        if !self.has_room(1) && !self.wait_for_room(1, Some(crate::wait::Deadline::after(timeout)))
        {
            return Err(PublishError::Timeout(value));
        }
        let seq = self.next();
        self.write_one(seq, &value);
        Ok(())
    }

    /// Publishes every value of `values` in order, with one cursor update (and one wake
    /// check) per batch. On a bounded ring it publishes as much as fits, waits, and goes on.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(64);
    /// let mut rx = ring.subscribe();
    /// tx.publish_batch(&[1, 2, 3]);
    /// let mut buf = [0u64; 8];
    /// assert_eq!(rx.recv_batch(&mut buf), Ok(3));
    /// assert_eq!(&buf[..3], &[1, 2, 3]);
    /// ```
    pub fn publish_batch(&mut self, values: &[T]) {
        let mut rest = values;
        while !rest.is_empty() {
            // At most one lap per write-out, so that no write overwrites a sequence of the
            // same batch before the cursor says it exists.
            let mut n = (rest.len() as u64).min(self.raw.capacity());
            if !self.has_room(n) {
                let room = self.limit.saturating_sub(self.next());
                n = if room == 0 {
                    self.wait_for_room(1, None);
                    self.limit.saturating_sub(self.next()).clamp(1, n)
                } else {
                    room.min(n)
                };
            }
            let (now, later) = rest.split_at(n as usize);
            self.write_all(now);
            rest = later;
        }
    }

    /// Waits until `n` sequences fit or the deadline passes; returns whether they fit.
    #[cold]
    fn wait_for_room(&mut self, n: u64, deadline: Option<Deadline>) -> bool {
        let mut waiter = Waiter::new(self.strategy);
        loop {
            if self.has_room(n) {
                return true;
            }
            if deadline_expired(&deadline) {
                return false;
            }
            if waiter.next() == Next::Park {
                let s = self.raw.signal();
                let raw = self.raw;
                let next = self.next();
                let ahead = self.ahead;
                wake::park(
                    &s.pub_waiters,
                    &s.pub_notify,
                    park_timeout(&deadline),
                    || raw.min_gate(next).saturating_add(ahead) > next + n - 1,
                );
            }
        }
    }
}

impl<T: bytemuck::Pod> Drop for Publisher<T> {
    fn drop(&mut self) {
        drop_publisher(&self.shared);
    }
}

#[cfg(feature = "std")]
pub(super) type Deadline = crate::wait::Deadline;
/// Without std there is no clock: deadlines do not exist.
#[cfg(not(feature = "std"))]
pub(super) type Deadline = core::convert::Infallible;

#[inline]
pub(super) fn deadline_expired(d: &Option<Deadline>) -> bool {
    #[cfg(feature = "std")]
    {
        d.as_ref().is_some_and(|d| d.expired())
    }
    #[cfg(not(feature = "std"))]
    {
        let _ = d;
        false
    }
}

/// How long a park may last: a 100 ms re-check bound, or the time left if that is shorter.
/// Every wait stays bounded, so a peer that vanished is noticed by the caller's loop, and so
/// is room that a gated subscriber made without waking us (it wakes parked publishers once
/// per step of its gate, not on every read): a park for the whole time left slept through
/// such room until its deadline.
#[inline]
pub(super) fn park_timeout(d: &Option<Deadline>) -> Option<core::time::Duration> {
    #[cfg(feature = "std")]
    {
        const RECHECK: core::time::Duration = core::time::Duration::from_millis(100);
        Some(
            d.as_ref()
                .and_then(|d| d.remaining())
                .map_or(RECHECK, |left| left.min(RECHECK)),
        )
    }
    #[cfg(not(feature = "std"))]
    {
        let _ = d;
        None
    }
}

/// The longest pause, in spin hints, of a producer that lost the claim's CAS
/// ([`MpPublisher::claim`]); one under loom, where a spin hint is a yield.
const CLAIM_BACKOFF: u32 = if cfg!(loom) { 1 } else { 64 };

/// The pause of a producer that lost the claim's CAS to another: 1 spin hint after the first
/// loss, twice as many after each further one, at most [`CLAIM_BACKOFF`].
struct ClaimBackoff {
    spins: u32,
}

impl ClaimBackoff {
    fn new() -> ClaimBackoff {
        ClaimBackoff { spins: 1 }
    }

    fn pause(&mut self) {
        for _ in 0..self.spins {
            crate::sync::spin_loop();
        }
        self.spins = (self.spins * 2).min(CLAIM_BACKOFF);
    }
}

/// A cloneable, `Send + Sync` publisher of an [`mpmc`](super::mpmc) ring.
///
/// Each `publish` claims a sequence with a compare-and-swap (a producer that loses it to
/// another backs off a little, so that the winner keeps the counter's cache line for a run of
/// claims), waits until the slot's previous lap is complete, and writes it. What a stalled
/// producer (preempted between its claim and its write) can delay, and all it can delay:
/// subscribers reading in order stop at its sequence until it finishes (messages after it are
/// already in the ring and are delivered right after), and producers that claim the same slot
/// one lap later wait for it; on an [`mpmc_bounded`](super::mpmc_bounded) ring with a gated
/// subscriber, every producer stops one window (`capacity - watermark` claims) after it
/// instead (see [the module's Algorithm section](super#algorithm)). It never corrupts a
/// message and never makes one be delivered twice.
///
/// The ring closes when the last clone is dropped.
///
/// # Examples
/// ```
/// let (tx, ring) = weft::ring::mpmc::<u64>(16);
/// let mut rx = ring.subscribe();
/// let tx2 = tx.clone();
/// std::thread::spawn(move || tx2.publish(1)).join().unwrap();
/// tx.publish(2);
/// let mut got = [rx.try_recv().unwrap(), rx.try_recv().unwrap()];
/// got.sort();
/// assert_eq!(got, [1, 2]);
/// ```
pub struct MpPublisher<T: bytemuck::Pod> {
    shared: Arc<Shared>,
    raw: RawRing,
    /// Sequences below it may be written without looking at the gates: `u64::MAX` on a lossy
    /// ring; on a bounded one, the slowest gate plus `ahead` as this handle last saw it. A
    /// hint private to the handle (an atomic only because `publish` takes `&self`): any value
    /// it ever held stays a valid bound, because the slowest gate only moves forward (a new
    /// gate starts past every sequence claimed before its scan was missed, see `min_gate`).
    /// Written by `refresh_limit` on any thread that publishes through this handle, and set
    /// by `clone` for the new handle.
    limit: AtomicU64,
    /// `capacity - watermark`: how far ahead of the slowest gated subscriber we may claim.
    ahead: u64,
    strategy: WaitStrategy,
    _t: PhantomData<fn(T) -> T>,
}

// SAFETY: `publish` takes `&self` and coordinates through the atomic claim counter and the
// slot stamps; the memory is kept alive by the Arc.
unsafe impl<T: bytemuck::Pod> Send for MpPublisher<T> {}
// SAFETY: as for Send.
unsafe impl<T: bytemuck::Pod> Sync for MpPublisher<T> {}

impl<T: bytemuck::Pod> fmt::Debug for MpPublisher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpPublisher")
            .field("capacity", &self.raw.capacity())
            .finish()
    }
}

impl<T: bytemuck::Pod> Clone for MpPublisher<T> {
    fn clone(&self) -> Self {
        add_publisher(&self.shared);
        MpPublisher {
            shared: self.shared.clone(),
            raw: self.raw,
            // Relaxed: a hint (see the field).
            limit: AtomicU64::new(self.limit.load(Ordering::Relaxed)),
            ahead: self.ahead,
            strategy: self.strategy,
            _t: PhantomData,
        }
    }
}

impl<T: bytemuck::Pod> MpPublisher<T> {
    pub(super) fn new(shared: Arc<Shared>) -> MpPublisher<T> {
        add_publisher(&shared);
        let raw = shared.raw;
        let g = &raw.header().geometry.0;
        // Relaxed: geometry written before the ring was shared.
        let bounded = g.flags.load(Ordering::Relaxed) & FLAG_BOUNDED != 0;
        let watermark = g.watermark.load(Ordering::Relaxed);
        MpPublisher {
            shared,
            raw,
            limit: AtomicU64::new(if bounded { 0 } else { u64::MAX }),
            ahead: raw.capacity().saturating_sub(watermark).max(1),
            strategy: if bounded {
                WaitStrategy::Adaptive
            } else {
                WaitStrategy::BusySpin
            },
            _t: PhantomData,
        }
    }

    /// Sets how this handle waits: on a bounded ring for room (default
    /// [`WaitStrategy::Adaptive`], as a bounded [`Publisher`]); on a lossy ring only for a
    /// slot still being written one lap earlier by a stalled producer (default
    /// [`WaitStrategy::BusySpin`]; `Park` and `Adaptive` yield instead, as that wait is always
    /// short unless a producer was preempted).
    ///
    /// # Examples
    /// ```
    /// let (tx, ring) = weft::ring::mpmc_bounded::<u64>(2, 0);
    /// let tx = tx.with_wait_strategy(weft::WaitStrategy::Park);
    /// let mut rx = ring.subscribe();
    /// tx.publish(1);
    /// tx.publish(2);
    /// // The ring is full: this publish sleeps in the kernel until the read below makes room.
    /// let t = std::thread::spawn(move || tx.publish(3));
    /// assert_eq!(rx.recv(), Ok(1));
    /// t.join().unwrap();
    /// assert_eq!((rx.recv(), rx.recv()), (Ok(2), Ok(3)));
    /// ```
    pub fn with_wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Parks until `seq()` (re-read after the park's announcement) fits ahead of the slowest
    /// gated subscriber, or the deadline or the re-check bound passes.
    #[cold]
    fn park_for_room(&self, deadline: &Option<Deadline>, seq: impl Fn() -> u64) {
        let s = self.raw.signal();
        let (raw, ahead) = (self.raw, self.ahead);
        wake::park(
            &s.pub_waiters,
            &s.pub_notify,
            park_timeout(deadline),
            || {
                let seq = seq();
                raw.min_gate(seq).saturating_add(ahead) > seq
            },
        );
    }

    /// The bound on sequences that fit now, from a fresh scan of the gates at or below
    /// `upto`, which must be a value of the claim counter that this thread wrote or read with
    /// a read-modify-write (so that `min_gate`'s handshake with a joining subscriber covers
    /// it); stored as the handle's hint.
    #[cold]
    fn refresh_limit(&self, upto: u64) -> u64 {
        // Always announced: the handle may be shared between threads (`&self`), and only a
        // bound this thread announced is known to come before its scan.
        let limit = self.raw.gate_limit(upto, self.ahead, &mut 0);
        // Relaxed: a hint (see the field).
        self.limit.store(limit, Ordering::Relaxed);
        limit
    }

    /// Waits until the claimed sequence `seq` fits ahead of the slowest gated subscriber
    /// (bounded rings). `seq` is claimed: the wait cannot be abandoned, so it has no deadline
    /// (a subscriber that stops reading holds it, as it holds a bounded [`Publisher`]; drop it
    /// to free the ring, or use [`publish_timeout`](MpPublisher::publish_timeout), which
    /// claims only once there is room).
    #[cold]
    fn wait_room_claimed(&self, seq: u64) {
        // Sequences of a batch written before this one wait for the batch's wake at its end:
        // wake parked subscribers now, so that they read them and make room.
        let s = self.raw.signal();
        wake::wake(&s.waiters, &s.notify);
        let mut waiter = Waiter::new(self.strategy);
        while seq >= self.refresh_limit(seq) {
            if waiter.next() == Next::Park {
                self.park_for_room(&None, || seq);
            }
        }
    }

    /// Claims `n` consecutive sequences and returns the first, whether or not they fit (the
    /// caller waits for room afterwards).
    ///
    /// A compare-and-swap that backs off when it loses, not a `fetch_add`: with producers on
    /// two cores a `fetch_add` always wins, so the claim counter's line and the slots' lines
    /// change core on nearly every message (the producers take turns, one sequence each).
    /// A producer that lost its CAS pauses instead ([`ClaimBackoff`]), and the winner claims a
    /// run of sequences with those lines in its own cache: two producers pinned to two cores
    /// moved 52 to 85 Mmsg/s through a bounded ring with the `fetch_add`, 142 to 145 with this
    /// claim (same launches, the body of `ring/mpmc-2-producers-u64`). A single producer's CAS
    /// succeeds at the first try. The claim is lock-free, no longer wait-free: a CAS fails only
    /// because another producer claimed.
    #[inline(always)]
    fn claim(&self, n: u64) -> u64 {
        // Relaxed: as in `cas_claim`.
        let c = self.raw.cursor().load(Ordering::Relaxed);
        match self.cas_claim(c, n) {
            Ok(c) => c,
            Err(now) => self.claim_contended(now, n),
        }
    }

    /// [`MpPublisher::claim`] after a lost CAS: back off, then try again from the counter's
    /// value the CAS returned.
    #[cold]
    #[inline(never)]
    fn claim_contended(&self, mut c: u64, n: u64) -> u64 {
        let mut backoff = ClaimBackoff::new();
        loop {
            backoff.pause();
            match self.cas_claim(c, n) {
                Ok(c) => return c,
                Err(now) => c = now,
            }
        }
    }

    /// One attempt to move the claim counter from `c` to `c + n`: `Ok(c)`, or `Err` with the
    /// counter's value. Wrapping, as a `fetch_add` would: the counter would take 2^64 messages
    /// to get there.
    #[inline(always)]
    fn cas_claim(&self, c: u64, n: u64) -> Result<u64, u64> {
        // Relaxed: the claim only hands out distinct numbers; ordering with the previous lap
        // comes from `slot_free`'s Acquire, publication from the stamp's Release, and the
        // handshake with joining subscribers from the fence in `min_gate` (after this RMW).
        // The Acquire cursor loads of `Subscriber` synchronise with nothing here, and need
        // not: they take only a position from it (see `Subscriber::lag`).
        self.raw
            .cursor()
            .compare_exchange_weak(c, c.wrapping_add(n), Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| c)
    }

    /// Claims the next sequence if it fits now: with room ahead of the gates (a bounded ring),
    /// and with its slot's previous lap written (any ring). A compare-and-swap, so that a
    /// sequence is claimed only when it can be written at once: a producer stalled between its
    /// claim and its write a lap back makes this `None`, where `publish` would wait for it.
    fn try_claim(&self) -> Option<u64> {
        let cursor = self.raw.cursor();
        // Relaxed: as in `cas_claim`.
        let mut c = cursor.load(Ordering::Relaxed);
        let mut backoff = ClaimBackoff::new();
        loop {
            // Relaxed: a hint (see the field).
            if c >= self.limit.load(Ordering::Relaxed) {
                // An RMW reads the latest claim, which `refresh_limit` requires (a plain load
                // could return an older one).
                // Relaxed: ordered by the fence in `min_gate`.
                c = cursor.fetch_add(0, Ordering::Relaxed);
                if c >= self.refresh_limit(c) {
                    return None;
                }
            }
            // Only the winner of `c`'s claim writes its slot, so a slot found free stays free
            // for it.
            if !self.raw.slot_free(c) {
                // The slot's previous lap is still claimed and unwritten: no room now. The
                // counter may have moved: a later sequence's slot may be free.
                // Relaxed: as in `cas_claim`.
                let now = cursor.load(Ordering::Relaxed);
                if now == c {
                    return None;
                }
                c = now;
                continue;
            }
            match self.cas_claim(c, 1) {
                Ok(c) => return Some(c),
                Err(now) => {
                    c = now;
                    // Lost to another producer: as in `claim_contended`.
                    backoff.pause();
                }
            }
        }
    }

    /// Writes the claimed `seq` once its slot is free and wakes parked subscribers.
    #[inline(always)]
    fn write_claimed(&self, seq: u64, value: &T) {
        self.wait_slot(seq);
        self.raw.write(seq, value);
        let s = self.raw.signal();
        wake::wake(&s.waiters, &s.notify);
    }

    /// The ring's capacity in slots.
    pub fn capacity(&self) -> u64 {
        self.raw.capacity()
    }

    #[inline(always)]
    fn wait_slot(&self, seq: u64) {
        if !self.raw.slot_free(seq) {
            self.wait_slot_slow(seq);
        }
    }

    #[cold]
    fn wait_slot_slow(&self, seq: u64) {
        let mut w = Waiter::new(self.strategy);
        while !self.raw.slot_free(seq) {
            if w.next() == Next::Park {
                crate::sync::yield_now();
            }
        }
    }

    /// Publishes `value`: claims the next sequence and writes it. On a lossy ring this never
    /// waits for subscribers; on a bounded ring ([`mpmc_bounded`](super::mpmc_bounded)) it
    /// waits with the handle's wait strategy until the slowest gated subscriber has made room
    /// for the sequence it claimed.
    #[inline]
    pub fn publish(&self, value: T) {
        let seq = self.claim(1);
        // Relaxed: a hint (see the field); always false on a lossy ring.
        if seq >= self.limit.load(Ordering::Relaxed) {
            self.wait_room_claimed(seq);
        }
        self.write_claimed(seq, &value);
    }

    /// Publishes `value` if there is room now, without waiting.
    ///
    /// # Errors
    /// [`PublishError::Full`] with the value when a gated subscriber has not made room, or
    /// (on any ring, lossy too) when the slot it needs is still held a lap back by a producer
    /// stalled between its claim and its write.
    ///
    /// # Examples
    /// ```
    /// use weft::ring::PublishError;
    /// let (tx, ring) = weft::ring::mpmc_bounded::<u64>(2, 0);
    /// let mut rx = ring.subscribe();
    /// tx.try_publish(1).unwrap();
    /// tx.clone().try_publish(2).unwrap();
    /// assert_eq!(tx.try_publish(3), Err(PublishError::Full(3)));
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// tx.try_publish(3).unwrap();
    /// ```
    #[inline]
    pub fn try_publish(&self, value: T) -> Result<(), PublishError<T>> {
        match self.try_claim() {
            Some(seq) => {
                self.write_claimed(seq, &value);
                Ok(())
            }
            None => Err(PublishError::Full(value)),
        }
    }

    /// Publishes `value`, waiting at most `timeout` for room: on a bounded ring, for gated
    /// subscribers; on any ring, for a producer stalled a lap back between its claim and its
    /// write (a lossy ring waits for nothing else). Nothing is claimed until there is room, so
    /// a timed-out call leaves no hole in the ring.
    ///
    /// # Errors
    /// [`PublishError::Timeout`] with the value when no room came in time.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (tx, ring) = weft::ring::mpmc_bounded::<u64>(2, 0);
    /// let _rx = ring.subscribe();
    /// tx.publish(1);
    /// tx.publish(2);
    /// let e = tx.publish_timeout(3, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(e.into_inner(), 3);
    /// ```
    #[cfg(feature = "std")]
    pub fn publish_timeout(
        &self,
        value: T,
        timeout: core::time::Duration,
    ) -> Result<(), PublishError<T>> {
        let deadline = Some(crate::wait::Deadline::after(timeout));
        let mut waiter = Waiter::new(self.strategy);
        loop {
            if let Some(seq) = self.try_claim() {
                self.write_claimed(seq, &value);
                return Ok(());
            }
            if deadline_expired(&deadline) {
                return Err(PublishError::Timeout(value));
            }
            if waiter.next() == Next::Park {
                // Relaxed: only decides how to wait; the loop claims with a CAS.
                let c = self.raw.cursor().load(Ordering::Relaxed);
                if self.raw.slot_free(c) {
                    // No room past the gates: subscribers' reads wake us.
                    self.park_for_room(&deadline, || self.raw.cursor().load(Ordering::Relaxed));
                } else {
                    // A producer stalled a lap back holds the slot: nothing wakes us when it
                    // writes (and parking for room would return at once, there is room).
                    crate::sync::yield_now();
                }
            }
        }
    }

    /// Publishes `values` as consecutive sequences with one claim.
    ///
    /// # Examples
    /// ```
    /// let (tx, ring) = weft::ring::mpmc::<u64>(16);
    /// let mut rx = ring.subscribe();
    /// tx.publish_batch(&[1, 2]);
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Ok(2));
    /// ```
    pub fn publish_batch(&self, values: &[T]) {
        for chunk in values.chunks(self.raw.capacity() as usize) {
            let first = self.claim(chunk.len() as u64);
            for (i, v) in chunk.iter().enumerate() {
                let seq = first + i as u64;
                // Relaxed: a hint (see the field). Each sequence waits for its own room, so
                // a batch longer than the window still completes as subscribers read.
                if seq >= self.limit.load(Ordering::Relaxed) {
                    self.wait_room_claimed(seq);
                }
                if !self.raw.slot_free(seq) {
                    // Held a lap back by a stalled producer: what this chunk wrote so far is
                    // readable, and subscribers parked on it are woken before we wait (as
                    // `wait_room_claimed` does), not after the stalled producer.
                    if i > 0 {
                        let s = self.raw.signal();
                        wake::wake(&s.waiters, &s.notify);
                    }
                    self.wait_slot_slow(seq);
                }
                self.raw.write(seq, v);
            }
            let s = self.raw.signal();
            wake::wake(&s.waiters, &s.notify);
        }
    }
}

impl<T: bytemuck::Pod> Drop for MpPublisher<T> {
    fn drop(&mut self) {
        drop_publisher(&self.shared);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::ring::{PublishError, mpmc, mpmc_bounded};
    use crate::sync::Ordering;
    use std::time::Duration;

    /// A producer stalled between its claim and its write (sequence 0 claimed, never written)
    /// holds the slot of sequence `capacity` a lap later. `try_publish` and `publish_timeout`
    /// need that slot once the ring wraps: they give up (at once, or at their timeout)
    /// instead of waiting for the stalled producer, on lossy and bounded rings alike. They
    /// used to claim it and then wait for the slot without a bound.
    #[test]
    fn a_producer_stalled_a_lap_back_makes_try_publish_full_not_a_wait() {
        let run = |bounded: bool| {
            let (tx, ring) = if bounded {
                mpmc_bounded::<u64>(2, 0)
            } else {
                mpmc::<u64>(2)
            };
            // The stalled producer: sequence 0 claimed, not written.
            tx.raw.cursor().fetch_add(1, Ordering::Relaxed);
            let (done, results) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ring = ring;
                let first = tx.try_publish(1);
                let second = tx.try_publish(2);
                let third = tx.publish_timeout(3, Duration::from_millis(20));
                let _ = done.send((first, second, third));
            });
            let (first, second, third) = results
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("bounded {bounded}: try_publish waited"));
            assert_eq!(first, Ok(()), "sequence 1: its slot is free");
            assert_eq!(second, Err(PublishError::Full(2)), "sequence 2: slot of 0");
            assert_eq!(third, Err(PublishError::Timeout(3)), "sequence 2 again");
        };
        run(false);
        run(true);
    }
}
