//! Subscribers: each reads every sequence in order with one stamp check per message, learns
//! exactly how many it missed when it falls a lap behind, and can gate a bounded publisher.
//! A subscriber group serves N logical consumers with one read per message.

use super::publisher::{Deadline, deadline_expired, park_timeout};
use super::raw::{self, GATE_FREE, RawRing, Read};
use super::shared::Shared;
use super::{RecvError, wake};
use crate::WaitStrategy;
use crate::sync::{Arc, Ordering, fence};
use crate::wait::{Next, Waiter};
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

/// Looks [`Subscriber::latest`] takes at the ring before it gives up on the newest message.
/// A look fails only when the slot it read was rewritten by a later lap and the message that
/// rewrote it was rewritten in turn before it was copied; the next look starts past both.
/// Failing looks take a publisher that rewrites the ring faster than one value is copied, and
/// on two cores one does, for stretches: against a publisher of 64-slot laps, whose every look
/// found two or three laps written since the last, eight looks gave up on up to 7 calls in
/// 10 000 (`spmc_latest_never_misses_while_a_publisher_writes_whole_laps`), thirty-two on none
/// in ten runs of it. Only a call being lapped pays for the further looks.
const LATEST_LOOKS: u32 = 32;

/// What one look of [`Subscriber::latest`] found.
enum Newest<T> {
    /// The newest complete sequence at or after the position, and its value.
    Found(u64, T),
    /// Nothing newer than the position is complete.
    Nothing,
    /// A slot was rewritten by a later lap during the look: look again, from at least this
    /// far (see [`stamp_reach`]).
    Overwritten(u64),
}

/// How far a slot's `stamp` shows its writer got: one past the sequence it names complete
/// (`2 seq + 2`), or the sequence it names in writing (`2 seq + 1`; a single publisher wrote
/// every one below it). Only a bound for the next look of `latest`, whose walk indexes slots
/// by `seq & mask` alone: a wrong stamp costs at most a walk over one lap.
fn stamp_reach(stamp: u64) -> u64 {
    stamp / 2
}

/// The sequence whose complete stamp (`2 seq + 2`) `stamp` is, if it is one and belongs to the
/// slot of `seq` in a ring of `capacity` slots. In memory another process may write, a stamp
/// is a number to check: one that names a sequence of another slot names nothing.
fn named_sequence(stamp: u64, seq: u64, capacity: u64) -> Option<u64> {
    let named = (stamp / 2).checked_sub(1)?;
    (stamp.is_multiple_of(2) && (named ^ seq) & (capacity - 1) == 0).then_some(named)
}

/// The most bytes of values [`Subscriber::drain`] copies in one run (one stamp check before
/// and one after): a few pages, so that a run of large values zero-fills no more than that
/// ahead of the copy.
const DRAIN_RUN_BYTES: usize = 4096;

/// Values per run of [`Subscriber::drain`]: `DRAIN_RUN_BYTES` of them, at least 1, and at most
/// 64, the run small values always had (a drain that finds one `u64` zero-fills 512 bytes,
/// not 4 KiB).
#[inline(always)]
fn drain_run<T>() -> usize {
    (DRAIN_RUN_BYTES / size_of::<T>().max(1)).clamp(1, 64)
}

/// The subscribable side of a ring: clone it freely, and call [`subscribe`](Ring::subscribe)
/// (or one of its variants) for every reader.
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::channel::<u64>(8);
/// let mut a = ring.subscribe();
/// let mut b = ring.clone().subscribe();
/// tx.publish(5);
/// assert_eq!((a.try_recv(), b.try_recv()), (Ok(5), Ok(5)));
/// ```
pub struct Ring<T: bytemuck::Pod> {
    shared: Arc<Shared>,
    _t: PhantomData<fn() -> T>,
}

impl<T: bytemuck::Pod> Clone for Ring<T> {
    fn clone(&self) -> Self {
        Ring {
            shared: self.shared.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: bytemuck::Pod> fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.shared.raw.capacity())
            .finish()
    }
}

impl<T: bytemuck::Pod> Ring<T> {
    pub(super) fn new(shared: Arc<Shared>) -> Ring<T> {
        Ring {
            shared,
            _t: PhantomData,
        }
    }

    /// The ring's capacity in slots.
    pub fn capacity(&self) -> u64 {
        self.shared.raw.capacity()
    }

    /// Whether every publisher is gone (subscribers may still have messages to drain).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe();
    /// tx.publish(1);
    /// assert!(!ring.is_closed());
    /// drop(tx);
    /// assert!(ring.is_closed());
    /// assert_eq!(rx.try_recv(), Ok(1)); // what was published is still received
    /// ```
    pub fn is_closed(&self) -> bool {
        // Acquire pairs with the AcqRel decrement in `drop_publisher`.
        self.shared.raw.signal().publishers.load(Ordering::Acquire) == 0
    }

    /// A subscriber that starts with the next message published. On a bounded ring it gates
    /// the publisher: nothing it has not read is overwritten.
    ///
    /// # Panics
    /// On a bounded ring whose subscriber table is full (see
    /// [`Options::max_subscribers`](super::Options::max_subscribers)).
    pub fn subscribe(&self) -> Subscriber<T> {
        self.try_subscribe()
            .expect("the ring's subscriber table is full (Options::max_subscribers)")
    }

    /// As [`subscribe`](Ring::subscribe), but an error instead of a panic when the subscriber
    /// table of a bounded ring is full.
    ///
    /// # Errors
    /// [`Error::Full`](crate::Error::Full) when every gate of a bounded ring is taken.
    ///
    /// # Examples
    /// ```
    /// let (_tx, ring) =
    ///     weft::ring::bounded_with::<u64>(8, 0, weft::ring::Options::new().max_subscribers(1))?;
    /// let _first = ring.try_subscribe()?;
    /// assert!(matches!(ring.try_subscribe(), Err(weft::Error::Full)));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_subscribe(&self) -> crate::Result<Subscriber<T>> {
        let gated = self.shared.raw.gate_count() > 0;
        Subscriber::join(self.shared.clone(), gated, false).ok_or(crate::Error::Full)
    }

    /// A subscriber that never gates the publisher, even on a bounded ring: when it falls a
    /// lap behind it sees [`RecvError::Lagged`].
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::bounded::<u64>(2, 0);
    /// let _lossy = ring.subscribe_lossy();
    /// for i in 0..10 {
    ///     tx.try_publish(i).unwrap(); // never full: nobody gates
    /// }
    /// ```
    pub fn subscribe_lossy(&self) -> Subscriber<T> {
        Subscriber::join(self.shared.clone(), false, false)
            .expect("a lossy subscriber takes no gate")
    }

    /// A subscriber that starts with the last `capacity - 1` messages published: one past the
    /// oldest message still in the ring, whose slot the publisher writes next (where a lapped
    /// subscriber goes on, see [`RecvError::Lagged`]).
    ///
    /// On a bounded ring it gates the publisher from its first message, and starts at the
    /// oldest message that no publisher can overwrite before it sees the new gate: a publisher
    /// looks at the gates only once per window (`capacity - watermark` messages), so a
    /// message older than the last window it was granted may be gone before the new
    /// subscriber counts; the subscriber then starts after it, and never lags. Behind another
    /// gated subscriber that holds a full ring back, it gets the whole ring (the publisher
    /// can write nothing until that subscriber reads); only when it joins during a publisher's
    /// look at the gates does it assume that look's most generous outcome.
    ///
    /// # Panics
    /// As [`subscribe`](Ring::subscribe).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(4);
    /// for i in 0..6 {
    ///     tx.publish(i);
    /// }
    /// let mut rx = ring.subscribe_from_oldest();
    /// let mut got = Vec::new();
    /// rx.drain(&mut got).unwrap();
    /// assert_eq!(got, [3, 4, 5]);
    /// ```
    pub fn subscribe_from_oldest(&self) -> Subscriber<T> {
        let gated = self.shared.raw.gate_count() > 0;
        Subscriber::join(self.shared.clone(), gated, true)
            .expect("the ring's subscriber table is full (Options::max_subscribers)")
    }

    /// A group of `members` logical consumers served by one read per message (see
    /// [`SubscriberGroup`]). Starts with the next message published.
    ///
    /// # Panics
    /// As [`subscribe`](Ring::subscribe).
    pub fn subscribe_group(&self, members: usize) -> SubscriberGroup<T> {
        SubscriberGroup {
            inner: self.subscribe(),
            received: alloc::vec![0; members],
        }
    }
}

/// One reader of a ring. Receives every message in order (on a lossy ring, unless it falls a
/// whole lap behind, which it learns with the exact count).
///
/// # Examples
/// ```
/// use weft::ring::RecvError;
/// let (mut tx, ring) = weft::ring::channel::<u64>(8);
/// let mut rx = ring.subscribe();
/// assert_eq!(rx.try_recv(), Err(RecvError::Empty));
/// tx.publish(1);
/// drop(tx);
/// assert_eq!(rx.recv(), Ok(1));
/// assert_eq!(rx.recv(), Err(RecvError::Closed));
/// ```
pub struct Subscriber<T: bytemuck::Pod> {
    /// Keeps the ring memory alive.
    _shared: Arc<Shared>,
    raw: RawRing,
    /// Next sequence to read.
    pos: u64,
    /// Where this subscriber started: `received = pos - start - lagged - skipped`, so the hot
    /// path only moves `pos`.
    start: u64,
    lagged: u64,
    /// Where the last lap left us ([`raw::NEVER_LAPPED`] before the first).
    lap_mark: u64,
    /// What blocking receives did.
    waits: crate::WaitStats,
    /// Messages skipped on purpose by `latest`.
    skipped: u64,
    /// Our gate entry on a bounded ring.
    gate: Option<usize>,
    /// The ring has one publisher, which writes sequences in order: a batch read may check a
    /// whole run at once ([`RawRing::read_run`]).
    single_publisher: bool,
    /// A parked bounded publisher is woken when our position crosses a multiple of
    /// `1 << wake_shift` (a quarter of the ring, or half the publisher's window if smaller),
    /// not after every read: one wake then frees room for a burst, instead of a wake
    /// syscall per batch while the publisher keeps refilling the ring.
    wake_shift: u32,
    /// `pos >> wake_shift` when we last looked for a parked publisher.
    woke_block: u64,
    strategy: WaitStrategy,
    _t: PhantomData<fn() -> T>,
}

// SAFETY: the handle owns its position; the ring is reached through atomics and kept alive
// by the Arc.
unsafe impl<T: bytemuck::Pod> Send for Subscriber<T> {}

impl<T: bytemuck::Pod> fmt::Debug for Subscriber<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("position", &self.pos)
            .field("received", &self.received())
            .field("lagged", &self.lagged)
            .field("gated", &self.gate.is_some())
            .finish()
    }
}

impl<T: bytemuck::Pod> Subscriber<T> {
    /// A new subscriber, or `None` when it should gate and the gate table is full.
    fn join(shared: Arc<Shared>, gated: bool, oldest: bool) -> Option<Subscriber<T>> {
        let raw = shared.raw;
        // Relaxed: geometry written before the ring was shared.
        let watermark = raw.header().geometry.0.watermark.load(Ordering::Relaxed);
        let window = raw.capacity().saturating_sub(watermark);
        let every = (raw.capacity() / 4).min(window / 2).max(1);
        let wake_shift = every.ilog2();
        // Acquire pairs with the Release cursor store in `Publisher::commit` (single
        // publisher). On an MPMC ring the cursor is the claim counter, moved by the Relaxed
        // compare-and-swap in `MpPublisher::cas_claim` (and `try_claim`'s Relaxed RMW): this
        // load synchronises with nothing there, and needs not: it only gives a start
        // position (each slot's stamp orders its payload), and the gated handshake below is
        // ordered by the SeqCst fences, which order Relaxed accesses too.
        let cursor = |raw: &RawRing| raw.cursor().load(Ordering::Acquire);
        let start = |c: u64| {
            if oldest {
                c.saturating_sub(raw.capacity() - 1)
            } else {
                c
            }
        };
        let mut pos = start(cursor(&raw));
        let mut gate = None;
        if gated {
            let i = (0..raw.gate_count()).find(|&i| {
                // SeqCst: one half of the handshake with `RawRing::min_gate` (see below).
                raw.gate(i)
                    .compare_exchange(GATE_FREE, pos, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
            })?;
            // SeqCst: part of the same handshake; raised before the fence below.
            raw.signal()
                .gates_used
                .fetch_max(i as u64 + 1, Ordering::SeqCst);
            // Pairs with the SeqCst fence in `min_gate`: if the publisher's scan missed our
            // gate, its cursor at the scan is visible to the load below, and it cannot run
            // further than one window past that cursor before its next scan sees us.
            fence(Ordering::SeqCst);
            let now = cursor(&raw);
            let safe = if oldest {
                // A publisher whose last scan missed our gate may still write every sequence
                // below its limit, overwriting those a lap earlier: the oldest message we can
                // be sure to read is a bound on such limits, one lap back. Every such scan
                // counted itself in `scans` before its fence, so the load below sees it (or a
                // later value). With none in flight, every one of them has recorded the limit
                // it granted: the largest grant bounds them (Acquire: pairs with the Release
                // decrement in `RawRing::gate_limit`). Otherwise the announced bound does, the
                // largest limit each could give (Relaxed: ordered by the fence above). A bound
                // past the cursor comes from a scan that saw our gate; the cursor then bounds
                // every scan that missed it (their cursors were published before their
                // fences).
                let sig = raw.signal();
                let bound = if sig.scans.load(Ordering::Acquire) == 0 {
                    // Relaxed: ordered by the Acquire load above.
                    sig.limit_granted.load(Ordering::Relaxed)
                } else {
                    // Relaxed: ordered by the fence above.
                    sig.limit_bound.load(Ordering::Relaxed)
                };
                bound.saturating_sub(raw.capacity()).min(now)
            } else {
                now
            };
            if safe > pos {
                pos = safe;
                // Release pairs with the Acquire gate load in `min_gate`.
                raw.gate(i).store(pos, Ordering::Release);
                // A publisher whose scan saw the gate at the cursor read first (which it may
                // have left more than a lap behind) may have parked for the room this raise
                // makes. Nothing else would wake it: this subscriber has nothing to read yet,
                // so no read of it reaches `advance_gate`'s wake.
                let s = raw.signal();
                wake::wake(&s.pub_waiters, &s.pub_notify);
            }
            gate = Some(i);
        }
        Some(Subscriber {
            _shared: shared,
            raw,
            pos,
            start: pos,
            lagged: 0,
            lap_mark: raw::NEVER_LAPPED,
            waits: crate::WaitStats::default(),
            skipped: 0,
            gate,
            single_publisher: raw.flags() & raw::FLAG_MPMC == 0,
            wake_shift,
            woke_block: pos >> wake_shift,
            strategy: WaitStrategy::default(),
            _t: PhantomData,
        })
    }

    /// Sets the wait strategy of [`recv`](Subscriber::recv) and
    /// [`recv_timeout`](Subscriber::recv_timeout) (default [`WaitStrategy::Adaptive`]).
    pub fn with_wait_strategy(mut self, strategy: WaitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Messages received so far.
    pub fn received(&self) -> u64 {
        self.pos - self.start - self.lagged - self.skipped
    }

    /// Messages missed so far (the sum of every `Lagged { skipped }`).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(4);
    /// let mut rx = ring.subscribe();
    /// tx.publish_batch(&[0, 1, 2, 3, 4, 5]);
    /// assert_eq!(rx.try_recv(), Err(weft::ring::RecvError::Lagged { skipped: 3 }));
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// assert_eq!((rx.lagged(), rx.received()), (3, 1));
    /// ```
    pub fn lagged(&self) -> u64 {
        self.lagged
    }

    /// How often blocking receives slept in the kernel, and whether a wakeup ever failed to
    /// come (see [`WaitStats`](crate::WaitStats)).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (_tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe().with_wait_strategy(weft::WaitStrategy::Park);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(5)), Err(weft::ring::RecvError::Timeout));
    /// let stats = rx.wait_stats();
    /// assert!(stats.parks >= 1); // it slept in the kernel
    /// assert_eq!(stats.missed_wakeups, 0);
    /// ```
    pub fn wait_stats(&self) -> crate::WaitStats {
        self.waits
    }

    /// The next sequence this subscriber will read.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// tx.publish_batch(&[1, 2]);
    /// let mut rx = ring.subscribe(); // starts with the next message: sequence 2
    /// assert_eq!(rx.position(), 2);
    /// tx.publish(3);
    /// assert_eq!(rx.try_recv(), Ok(3));
    /// assert_eq!(rx.position(), 3);
    /// ```
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Messages published but not yet read (a racy snapshot; exact for SPMC rings when the
    /// publisher is idle; on an MPMC ring it counts claims, some of which may still be
    /// being written).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe();
    /// tx.publish_batch(&[1, 2, 3]);
    /// assert_eq!(rx.pending(), 3);
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.pending(), 2);
    /// ```
    pub fn pending(&self) -> u64 {
        // Acquire pairs with the Release cursor store in `Publisher::commit` (single
        // publisher). On an MPMC ring, with nothing: the claim counter is moved by the Relaxed
        // compare-and-swap in `MpPublisher::cas_claim`, and a count needs no ordering.
        self.raw
            .cursor()
            .load(Ordering::Acquire)
            .saturating_sub(self.pos)
    }

    #[inline(always)]
    fn advance_gate(&mut self) {
        if let Some(i) = self.gate {
            // Release pairs with the Acquire gate load in `min_gate`: our reads of the slots
            // below `pos` are done before the publisher reuses them.
            self.raw.gate(i).store(self.pos, Ordering::Release);
            let block = self.pos >> self.wake_shift;
            if block != self.woke_block {
                self.woke_block = block;
                let s = self.raw.signal();
                wake::wake(&s.pub_waiters, &s.pub_notify);
            }
        }
    }

    /// Whether every publisher is gone.
    #[inline]
    fn closed(&self) -> bool {
        // Acquire pairs with the AcqRel decrement in `drop_publisher`: everything published
        // before the last publisher left is visible after this load.
        self.raw.signal().publishers.load(Ordering::Acquire) == 0
    }

    /// Receives the next message if there is one.
    ///
    /// # Errors
    /// - [`RecvError::Empty`]: nothing new yet;
    /// - [`RecvError::Lagged`]: this subscriber fell a lap behind and jumped over `skipped`
    ///   messages it will never receive: those overwritten and the oldest one still in the
    ///   ring, whose slot the publisher writes next; it now stands one past that oldest
    ///   message (or half a ring further, see [`RecvError::Lagged`]);
    /// - [`RecvError::Closed`]: every publisher is gone and everything was received.
    #[inline(always)]
    pub fn try_recv(&mut self) -> Result<T, RecvError> {
        // The common cases, a complete value and nothing yet, stay small enough to inline into
        // every caller's loop (a poll that finds nothing costs no call); everything else
        // (lagged, closed, voided) reads the slot again out of line.
        let pos = self.pos;
        match self.raw.read::<T>(pos) {
            Read::Value(v) => Ok(self.took(pos, v)),
            Read::NotYet if !self.closed() => Err(RecvError::Empty),
            _ => self.try_recv_slow(),
        }
    }

    /// Moves past `pos`, whose value `v` was just read whole.
    #[inline(always)]
    fn took(&mut self, pos: u64, v: T) -> T {
        self.pos = pos + 1;
        self.advance_gate();
        v
    }

    /// [`try_recv`](Subscriber::try_recv) when the first look found no complete value: the
    /// slot is read again (a value may have arrived since) and every outcome handled.
    #[inline(never)]
    fn try_recv_slow(&mut self) -> Result<T, RecvError> {
        let pos = self.pos;
        match self.raw.read::<T>(pos) {
            Read::Value(v) => Ok(self.took(pos, v)),
            Read::NotYet => self.empty_or_closed(),
            Read::Overrun => Err(self.lag()),
            Read::Void => self.skip_void(),
        }
    }

    /// A voided sequence (only in rings a recoverer repaired in shared memory): nothing was
    /// ever written for it, so it is skipped without counting it as received or lagged.
    #[cold]
    fn skip_void(&mut self) -> Result<T, RecvError> {
        self.pos += 1;
        self.skipped += 1;
        self.advance_gate();
        self.try_recv()
    }

    #[cold]
    fn empty_or_closed(&mut self) -> Result<T, RecvError> {
        if !self.closed() {
            return Err(RecvError::Empty);
        }
        // Closed: the last messages are visible now (see `closed`); look once more.
        let pos = self.pos;
        match self.raw.read::<T>(pos) {
            Read::Value(v) => Ok(self.took(pos, v)),
            Read::NotYet => Err(RecvError::Closed),
            Read::Overrun => Err(self.lag()),
            Read::Void => self.skip_void(),
        }
    }

    /// Skips to one past the oldest message still in the ring, whose slot the publisher
    /// writes next (half a ring further if lapped again soon, see [`raw::resume_after_lap`]),
    /// and counts every sequence jumped over, that oldest one included.
    #[cold]
    fn lag(&mut self) -> RecvError {
        // Acquire pairs with the Release cursor store in `Publisher::commit` (single
        // publisher). On an MPMC ring the cursor is the claim counter, moved by the Relaxed
        // compare-and-swap in `MpPublisher::cas_claim`: this load synchronises with nothing
        // there, and needs not, as it only yields the new position: each message read there
        // is vouched for by its slot's stamp (Acquire, against its writer's Release). A stale
        // cursor only makes the jump shorter (another `Lagged` follows if needed). The cursor
        // may come from another process: it is only used in saturating arithmetic, never as
        // an index, and the position always moves forward.
        let head = self.raw.cursor().load(Ordering::Acquire);
        let oldest = head.saturating_sub(self.raw.capacity()).saturating_add(1);
        let new = raw::resume_after_lap(oldest, self.raw.capacity(), self.pos, self.lap_mark);
        self.lap_mark = new;
        let skipped = new - self.pos;
        self.pos = new;
        self.lagged += skipped;
        self.advance_gate();
        RecvError::Lagged { skipped }
    }

    /// Receives the next message, waiting with the subscriber's wait strategy.
    ///
    /// # Errors
    /// [`RecvError::Lagged`] and [`RecvError::Closed`] as for
    /// [`try_recv`](Subscriber::try_recv); never `Empty`.
    #[inline]
    pub fn recv(&mut self) -> Result<T, RecvError> {
        match self.try_recv() {
            Err(RecvError::Empty) => self.recv_slow(self.strategy, None),
            r => r,
        }
    }

    /// Receives the next message, waiting with `strategy`.
    ///
    /// # Errors
    /// As [`recv`](Subscriber::recv).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe();
    /// let t = std::thread::spawn(move || rx.recv_with(weft::WaitStrategy::Park));
    /// tx.publish(9);
    /// assert_eq!(t.join().unwrap(), Ok(9));
    /// ```
    pub fn recv_with(&mut self, strategy: WaitStrategy) -> Result<T, RecvError> {
        match self.try_recv() {
            Err(RecvError::Empty) => self.recv_slow(strategy, None),
            r => r,
        }
    }

    /// Receives the next message, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`RecvError::Timeout`] when nothing came in time; otherwise as
    /// [`recv`](Subscriber::recv).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (_tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(weft::ring::RecvError::Timeout));
    /// ```
    #[cfg(feature = "std")]
    pub fn recv_timeout(&mut self, timeout: core::time::Duration) -> Result<T, RecvError> {
        match self.try_recv() {
            Err(RecvError::Empty) => {
                self.recv_slow(self.strategy, Some(crate::wait::Deadline::after(timeout)))
            }
            r => r,
        }
    }

    #[cold]
    fn recv_slow(
        &mut self,
        strategy: WaitStrategy,
        deadline: Option<Deadline>,
    ) -> Result<T, RecvError> {
        let mut waiter = Waiter::new(strategy);
        loop {
            match self.try_recv() {
                Err(RecvError::Empty) => {}
                r => return r,
            }
            if deadline_expired(&deadline) {
                return Err(RecvError::Timeout);
            }
            if waiter.next() == Next::Park {
                let s = self.raw.signal();
                let raw = self.raw;
                let pos = self.pos;
                let parked = wake::park(&s.waiters, &s.notify, park_timeout(&deadline), || {
                    // Acquire pairs with the AcqRel decrement in `drop_publisher`.
                    raw.ready(pos) || raw.signal().publishers.load(Ordering::Acquire) == 0
                });
                self.waits.count(parked);
            }
        }
    }

    /// Skips to the newest published message and returns it, or `None` when nothing newer
    /// than what this subscriber already read exists. Skipped messages are not counted as
    /// lagged (skipping was asked for).
    ///
    /// Racy, as every look at a ring others write: a newer message may complete as it returns.
    /// `None` means that no slot it looked at held a complete message newer than those read;
    /// after a message, [`try_recv`](Subscriber::try_recv) goes on with the one after it. A
    /// message that a single publisher's batch wrote before it moved the cursor counts as
    /// published, as it does for `try_recv`: a subscriber that read part of such a batch may
    /// get one of its messages that is not its last. On an MPMC ring, claims still being
    /// written are passed over, even a whole lap of them (producers waiting for room on a
    /// bounded ring after their claims, or one producer's batch): the newest complete message
    /// below them is found (below a whole lap of them, by a pass over every slot's stamp).
    ///
    /// Against a publisher that rewrites the whole ring while one value is copied, look after
    /// look, it gives up after a few looks and does what `try_recv` would, without waiting: it
    /// returns the next message in order or, that one overwritten, jumps as a lapped `try_recv`
    /// does (counted as skipped, not lagged) and returns the message there if it is still
    /// whole, else `None`.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut rx = ring.subscribe();
    /// tx.publish_batch(&[1, 2, 3]);
    /// assert_eq!(rx.latest(), Some(3));
    /// assert_eq!(rx.latest(), None);
    /// ```
    pub fn latest(&mut self) -> Option<T> {
        // Each look starts at the cursor, or further when the previous look found a slot
        // rewritten by a later lap (the stamp says how far the publisher got, which the
        // cursor may not say yet).
        let mut past = 0;
        for _ in 0..LATEST_LOOKS {
            match self.newest(past) {
                Newest::Found(seq, v) => {
                    self.skipped += seq - self.pos;
                    self.pos = seq + 1;
                    self.advance_gate();
                    return Some(v);
                }
                Newest::Nothing => return None,
                Newest::Overwritten(p) => past = past.max(p),
            }
        }
        self.latest_given_up()
    }

    /// One look of [`latest`](Subscriber::latest): the newest complete sequence at or after
    /// the position, by a walk down from the cursor (or from `past`, one past the newest
    /// sequence a rewritten slot showed, when that is further).
    fn newest(&self, past: u64) -> Newest<T> {
        let (raw, pos) = (self.raw, self.pos);
        // Acquire pairs with the Release cursor store in `Publisher::commit` (single
        // publisher). On an MPMC ring, with nothing (the claim in `MpPublisher::cas_claim` is
        // Relaxed): the walk below takes only the bounds from it; each slot's stamp orders its
        // payload, and claims still in flight read as not yet written. The cursor may come
        // from another process: it only bounds the walk, which indexes by `seq & mask`.
        let cursor = raw.cursor().load(Ordering::Acquire);
        // At least the position itself: a single publisher's batch writes its messages before
        // it moves the cursor, and `try_recv` may have read some of them already.
        let head = cursor.max(past).max(pos.saturating_add(1));
        let floor = pos.max(head.saturating_sub(raw.capacity()));
        let mut seq = head;
        while seq > floor {
            seq -= 1;
            match raw.read::<T>(seq) {
                Read::Value(v) => return Newest::Found(seq, v),
                // A later lap rewrote the slot since the cursor was loaded (a single
                // publisher: every slot below it too). The message that rewrote it, if
                // complete, is newer than any below the cursor loaded: read it now, while its
                // line is at hand. Without this, against a publisher of 64-slot laps on two
                // cores, `latest` gave up after four looks on 1 to 4 calls in 100: each new
                // look loaded the cursor and another slot, which had been rewritten again by
                // the time its line arrived. Otherwise look again from as far as the stamp
                // shows.
                Read::Overrun => {
                    // Acquire in `stamp_of` (pairs with the writers' Release stamp stores);
                    // only compared, and the read checks it again around its copy.
                    let stamp = raw.stamp_of(seq);
                    if let Some(later) = named_sequence(stamp, seq, raw.capacity())
                        && let Read::Value(v) = raw.read::<T>(later)
                    {
                        return Newest::Found(later, v);
                    }
                    return Newest::Overwritten(stamp_reach(stamp));
                }
                // MPMC: a claim still in flight (or voided); an older sequence may be
                // complete.
                Read::NotYet | Read::Void => {}
            }
        }
        if floor == pos {
            return Newest::Nothing;
        }
        // A whole lap below `head` is claimed and not yet written (MPMC), so the walk never
        // reached the messages still in the slots, from the lap before.
        self.newest_by_stamps()
    }

    /// The newest complete sequence at or after the position that any slot's stamp names
    /// (a complete stamp `2 seq + 2` names its sequence), read: one pass over the stamps.
    #[cold]
    fn newest_by_stamps(&self) -> Newest<T> {
        let (raw, pos) = (self.raw, self.pos);
        let mut best = None;
        for slot in 0..raw.capacity() {
            // Acquire in `stamp_of` (pairs with the writers' Release stamp stores); only
            // compared here, and the read below checks the stamp again around its copy.
            if let Some(seq) = named_sequence(raw.stamp_of(slot), slot, raw.capacity())
                && seq >= pos
            {
                best = best.max(Some(seq));
            }
        }
        let Some(seq) = best else {
            return Newest::Nothing;
        };
        match raw.read::<T>(seq) {
            Read::Value(v) => Newest::Found(seq, v),
            // Rewritten since its stamp was loaded: look again (the stamp, Acquire as above,
            // only bounds the next look).
            _ => Newest::Overwritten(stamp_reach(raw.stamp_of(seq))),
        }
    }

    /// [`latest`](Subscriber::latest) when every look found what it read rewritten by a later
    /// lap: a publisher writes the whole ring while one value is copied, each time. Another
    /// look would fare no better; this does what [`try_recv`](Subscriber::try_recv) would,
    /// without waiting (see `latest`).
    #[cold]
    fn latest_given_up(&mut self) -> Option<T> {
        for _ in 0..2 {
            let pos = self.pos;
            match self.raw.read::<T>(pos) {
                Read::Value(v) => return Some(self.took(pos, v)),
                Read::NotYet => return None,
                Read::Void => {
                    self.pos += 1;
                    self.skipped += 1;
                }
                Read::Overrun => {
                    // Where `lag` goes on (one past the oldest message in the ring), counted
                    // as skipped. Acquire: as in `lag`.
                    let head = self.raw.cursor().load(Ordering::Acquire);
                    let oldest = head.saturating_sub(self.raw.capacity()).saturating_add(1);
                    let to = oldest.max(pos + 1);
                    self.skipped += to - pos;
                    self.pos = to;
                }
            }
            self.advance_gate();
        }
        None
    }

    /// Receives up to `buf.len()` messages into `buf`, returning how many.
    ///
    /// # Errors
    /// When nothing could be received: as [`try_recv`](Subscriber::try_recv).
    pub fn recv_batch(&mut self, buf: &mut [T]) -> Result<usize, RecvError> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Local position and count: the handle is written back once per batch.
        let (raw, start) = (self.raw, self.pos);
        let n = match self.single_publisher {
            true => raw.read_run(start, buf),
            false => None,
        };
        let n = n.unwrap_or_else(|| {
            let mut n = 0;
            for slot in buf.iter_mut() {
                match raw.read::<T>(start + n as u64) {
                    Read::Value(v) => {
                        *slot = v;
                        n += 1;
                    }
                    _ => break,
                }
            }
            n
        });
        self.pos = start + n as u64;
        if n == 0 {
            // `try_recv`'s inline look first: a drain loop ends on an empty ring every time,
            // and the out-of-line way there (two calls, the slot read twice more) cost a
            // batch of 64 messages about a tenth of a nanosecond each.
            buf[0] = self.try_recv()?;
            return Ok(1);
        }
        self.advance_gate();
        Ok(n)
    }

    /// Appends every message available now to `out`, returning how many.
    ///
    /// # Errors
    /// When nothing could be received: as [`try_recv`](Subscriber::try_recv); a `Lagged`
    /// after some messages ends the drain early, and is reported by the next call.
    pub fn drain(&mut self, out: &mut Vec<T>) -> Result<usize, RecvError> {
        let (raw, start) = (self.raw, self.pos);
        let mut n = 0usize;
        if self.single_publisher {
            // Runs copied into the vector's new tail, which is zero-filled first: grown only
            // once the run's first sequence is complete, so that an empty drain costs one
            // stamp load and leaves the vector as it was, and by `DRAIN_RUN_BYTES` at most (a
            // run of 64 values of 64 KiB zero-filled 4 MiB per drain, found message or not).
            let run = drain_run::<T>();
            loop {
                let seq = start + n as u64;
                // Acquire in `stamp_of` (pairs with the Release stamp store in `write`); only
                // compared here, and `read_run` checks the stamps again.
                if raw.stamp_of(seq) != raw::done(seq) {
                    break;
                }
                let have = out.len();
                out.resize(have + run, T::zeroed());
                let k = raw.read_run(seq, &mut out[have..]);
                out.truncate(have + k.unwrap_or(0));
                n += k.unwrap_or(0);
                if k != Some(run) {
                    break;
                }
            }
        }
        while let Read::Value(v) = raw.read::<T>(start + n as u64) {
            out.push(v);
            n += 1;
        }
        self.pos = start + n as u64;
        if n == 0 {
            // As in `recv_batch`: `try_recv`'s inline look first.
            return self.try_recv().map(|v| {
                out.push(v);
                1
            });
        }
        self.advance_gate();
        Ok(n)
    }
}

impl<T: bytemuck::Pod> Drop for Subscriber<T> {
    fn drop(&mut self) {
        if let Some(i) = self.gate {
            // Release pairs with the Acquire gate load in `min_gate`.
            self.raw.gate(i).store(GATE_FREE, Ordering::Release);
            let s = self.raw.signal();
            wake::wake(&s.pub_waiters, &s.pub_notify);
        }
    }
}

/// N logical consumers served by one read per message.
///
/// Several consumers on one thread that all need every message (strategies fed by one market
/// data stream, say) would each do their own stamp check and copy with N subscribers; a group
/// does one check and one copy and hands the same value to each member, keeps one receive
/// count per member, and holds one gate on a bounded ring. Members cannot drift apart: a
/// consumer that needs its own pace is a separate [`Subscriber`] (on another thread), which is
/// what serves it better.
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::channel::<u64>(8);
/// let mut group = ring.subscribe_group(3);
/// tx.publish(4);
/// let mut seen = Vec::new();
/// group.try_recv(|member, v| seen.push((member, *v))).unwrap();
/// assert_eq!(seen, [(0, 4), (1, 4), (2, 4)]);
/// assert_eq!(group.received(2), 1);
/// ```
pub struct SubscriberGroup<T: bytemuck::Pod> {
    inner: Subscriber<T>,
    received: Vec<u64>,
}

impl<T: bytemuck::Pod> fmt::Debug for SubscriberGroup<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriberGroup")
            .field("members", &self.received.len())
            .field("inner", &self.inner)
            .finish()
    }
}

impl<T: bytemuck::Pod> SubscriberGroup<T> {
    /// Number of members.
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut group = ring.subscribe_group(3);
    /// assert_eq!(group.members(), 3);
    /// tx.publish(1);
    /// let mut calls = 0;
    /// group.try_recv(|_, _| calls += 1).unwrap();
    /// assert_eq!(calls, group.members()); // once per member
    /// ```
    pub fn members(&self) -> usize {
        self.received.len()
    }

    /// Messages member `i` has received.
    ///
    /// # Panics
    /// If `i >= members()`.
    pub fn received(&self, i: usize) -> u64 {
        self.received[i]
    }

    /// Messages the group missed (every member missed the same ones).
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(4);
    /// let mut group = ring.subscribe_group(2);
    /// tx.publish_batch(&[0, 1, 2, 3, 4, 5]);
    /// assert_eq!(group.try_recv(|_, _| {}), Err(weft::ring::RecvError::Lagged { skipped: 3 }));
    /// assert_eq!(group.lagged(), 3);
    /// group.try_recv(|_, v| assert_eq!(*v, 3)).unwrap();
    /// assert_eq!((group.received(0), group.received(1)), (1, 1));
    /// ```
    pub fn lagged(&self) -> u64 {
        self.inner.lagged()
    }

    fn deliver(&mut self, v: T, f: &mut impl FnMut(usize, &T)) {
        for (i, r) in self.received.iter_mut().enumerate() {
            f(i, &v);
            *r += 1;
        }
    }

    /// Receives the next message once and hands it to every member in order.
    ///
    /// # Errors
    /// As [`Subscriber::try_recv`].
    pub fn try_recv(&mut self, mut f: impl FnMut(usize, &T)) -> Result<(), RecvError> {
        let v = self.inner.try_recv()?;
        self.deliver(v, &mut f);
        Ok(())
    }

    /// Receives the next message (waiting with the wait strategy) and hands it to every member.
    ///
    /// # Errors
    /// As [`Subscriber::recv`].
    ///
    /// # Examples
    /// ```
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut group = ring.subscribe_group(2);
    /// let t = std::thread::spawn(move || {
    ///     let mut sum = 0;
    ///     group.recv(|_, v| sum += v).map(|()| sum)
    /// });
    /// tx.publish(5);
    /// assert_eq!(t.join().unwrap(), Ok(10)); // both members got 5
    /// ```
    pub fn recv(&mut self, mut f: impl FnMut(usize, &T)) -> Result<(), RecvError> {
        let v = self.inner.recv()?;
        self.deliver(v, &mut f);
        Ok(())
    }

    /// Receives the next message, waiting at most `timeout`, and hands it to every member.
    ///
    /// # Errors
    /// As [`Subscriber::recv_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::ring::RecvError;
    /// let (mut tx, ring) = weft::ring::channel::<u64>(8);
    /// let mut group = ring.subscribe_group(2);
    /// let mut seen = Vec::new();
    /// let wait = Duration::from_millis(1);
    /// assert_eq!(group.recv_timeout(wait, |m, v| seen.push((m, *v))), Err(RecvError::Timeout));
    /// tx.publish(7);
    /// group.recv_timeout(Duration::from_secs(5), |m, v| seen.push((m, *v))).unwrap();
    /// assert_eq!(seen, [(0, 7), (1, 7)]);
    /// ```
    #[cfg(feature = "std")]
    pub fn recv_timeout(
        &mut self,
        timeout: core::time::Duration,
        mut f: impl FnMut(usize, &T),
    ) -> Result<(), RecvError> {
        let v = self.inner.recv_timeout(timeout)?;
        self.deliver(v, &mut f);
        Ok(())
    }
}
