//! Wait strategies: one model for every blocking call in weft.
//!
//! A blocking call loops on its own non-blocking form. Between attempts it asks a [`Waiter`]
//! what to do next; the waiter spins, yields or tells the caller to park, as the chosen
//! [`WaitStrategy`] says. Parking is the caller's business because only the caller knows which
//! futex word to sleep on and which handshake makes the sleep safe (see `stream` and `ring`).

/// How a blocking call waits for its condition.
///
/// | strategy | latency | CPU while waiting |
/// |---|---|---|
/// | `BusySpin` | lowest | one core at 100% |
/// | `YieldSpin` | low | a core, but yields it to runnable threads |
/// | `BackoffSpin` | low to medium | falls from spinning to yielding |
/// | `Park` | a futex wake (a few µs) | none |
/// | `Adaptive` | low while traffic flows | none once idle |
///
/// `Park` and `Adaptive` work across processes: the futex words live in shared memory and are
/// never process-private.
///
/// # Examples
/// ```
/// use weft::WaitStrategy;
/// assert_eq!(WaitStrategy::default(), WaitStrategy::Adaptive);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WaitStrategy {
    /// Spin on the condition with a CPU spin hint; never leaves the CPU.
    BusySpin,
    /// Yield the time slice between checks.
    YieldSpin,
    /// Spin with exponentially more spin hints per check, then yield between checks.
    BackoffSpin,
    /// Sleep in the kernel (futex) until woken; no CPU while waiting.
    Park,
    /// Spin a little, yield a little, then park. The default. A stream writer (also a
    /// channel's, which is built on streams) waiting on a full stream whose reader is awake
    /// goes on yielding for up to 200 µs before it parks: the reader is most likely releasing
    /// the room it waits for, and a park costs both sides a syscall.
    #[default]
    Adaptive,
}

/// What a side has done while blocking, for diagnostics and tests: how often it slept in
/// the kernel, how often a sleep ran out its slice although what it waited for had happened
/// (a wakeup that never came), and how often it woke a parked peer. Streams
/// ([`StreamStats`](crate::stream::StreamStats)) and subscribers (`wait_stats()` on the ring's
/// and pub/sub's) keep one each.
///
/// # Examples
/// ```
/// let (mut tx, ring) = weft::ring::channel::<u64>(8);
/// let rx = ring.subscribe();
/// tx.publish(1);
/// assert_eq!(rx.wait_stats(), weft::WaitStats::default());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitStats {
    /// Times this side slept in the kernel waiting for its peer.
    pub parks: u64,
    /// Parks that ran out their time slice although what they waited for had already
    /// happened: a wakeup that never arrived. Zero unless the wake handshake is broken.
    pub missed_wakeups: u64,
    /// Times this side made the wake syscall for a parked peer (counted by streams only).
    pub wakes: u64,
    /// Times an `Adaptive` stream reader found its streaming writer one record ahead and
    /// paused before looking again, so that the writer could commit a run (counted by stream
    /// readers only; see [`StreamReader::read`](crate::stream::StreamReader::read)).
    pub streaming_pauses: u64,
}

impl WaitStats {
    /// Counts one park.
    pub(crate) fn count(&mut self, parked: Parked) {
        match parked {
            Parked::NotNeeded => {}
            Parked::Woken => self.parks += 1,
            Parked::TimedOut { missed } => {
                self.parks += 1;
                self.missed_wakeups += u64::from(missed);
            }
        }
    }
}

/// What one park of a blocking call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parked {
    /// The re-check after announcing found the condition met: no sleep.
    NotNeeded,
    /// Slept and was woken (or the word had already changed).
    Woken,
    /// Slept until the timeout. `missed` tells whether the condition was met by then: a wake
    /// that never came (always false while the handshake is right).
    TimedOut {
        /// The condition held when the timeout ran out.
        missed: bool,
    },
}

/// What a blocking loop should do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Try again now (the waiter has already spun or yielded).
    Retry,
    /// Park on the caller's futex word (with the caller's handshake), then try again.
    Park,
}

/// Spins before `Adaptive` starts yielding: about a microsecond on current x86 cores.
const ADAPTIVE_SPINS: u32 = 64;
/// Yields before `Adaptive` parks.
const ADAPTIVE_YIELDS: u32 = 16;
/// `BackoffSpin` doubles its spin count up to 2^BACKOFF_LIMIT, then yields.
const BACKOFF_LIMIT: u32 = 6;

/// How long an `Adaptive` wait goes on yielding instead of parking while the caller's peer is
/// making what it waits for (see [`Waiter::next_unless_peer_working`]).
#[cfg(feature = "std")]
const PEER_WORKING_YIELD: core::time::Duration = core::time::Duration::from_micros(200);

/// The state of one wait: how many times it has already retried.
#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    strategy: WaitStrategy,
    step: u32,
    /// When an `Adaptive` wait first yielded instead of parking for a working peer.
    #[cfg(feature = "std")]
    peer_working_since: Option<std::time::Instant>,
}

impl Waiter {
    /// A fresh wait with `strategy`.
    pub(crate) fn new(strategy: WaitStrategy) -> Waiter {
        Waiter {
            strategy,
            step: 0,
            #[cfg(feature = "std")]
            peer_working_since: None,
        }
    }

    /// [`next`](Waiter::next), except that an `Adaptive` wait that would park yields instead
    /// (and says [`Next::Retry`]) while `peer_working()` says the peer is making what the
    /// caller waits for, for at most 200 µs from the first time it did. A park costs a machine
    /// barrier here and a wake syscall on the peer's side, and the parked thread comes back
    /// late: a stream writer that parked every time it waited for its (awake) reader to
    /// release an eighth of the stream moved 18 Mmsg/s of 256 B at 1 MiB, one that yields 26
    /// (two processes, one core each, alternating builds). A peer that stays awake without
    /// making progress costs at most this much yielding per wait before the caller parks.
    #[cfg(feature = "std")]
    pub(crate) fn next_unless_peer_working(&mut self, peer_working: impl FnOnce() -> bool) -> Next {
        let next = self.next();
        if next == Next::Park
            && self.strategy == WaitStrategy::Adaptive
            && peer_working()
            && self
                .peer_working_since
                .get_or_insert_with(std::time::Instant::now)
                .elapsed()
                < PEER_WORKING_YIELD
        {
            crate::sync::yield_now();
            return Next::Retry;
        }
        next
    }

    /// Called after a failed attempt: spins or yields as the strategy says and returns
    /// [`Next::Retry`], or returns [`Next::Park`] when it is time to sleep.
    pub(crate) fn next(&mut self) -> Next {
        let step = self.step;
        self.step = self.step.saturating_add(1);
        match self.strategy {
            WaitStrategy::BusySpin => {
                crate::sync::spin_loop();
                Next::Retry
            }
            WaitStrategy::YieldSpin => {
                crate::sync::yield_now();
                Next::Retry
            }
            WaitStrategy::BackoffSpin => {
                if step <= BACKOFF_LIMIT {
                    for _ in 0..(1u32 << step) {
                        crate::sync::spin_loop();
                    }
                } else {
                    crate::sync::yield_now();
                }
                Next::Retry
            }
            WaitStrategy::Park => Next::Park,
            WaitStrategy::Adaptive => {
                if step < ADAPTIVE_SPINS {
                    crate::sync::spin_loop();
                    Next::Retry
                } else if step < ADAPTIVE_SPINS + ADAPTIVE_YIELDS {
                    crate::sync::yield_now();
                    Next::Retry
                } else {
                    Next::Park
                }
            }
        }
    }

    /// Whether the last [`next`](Waiter::next) gave up the CPU (a yield, which on a busy core
    /// can take milliseconds): a loop that checks its deadline and its peer every so many
    /// rounds checks them after every such round, or a timeout runs late by that many yields.
    pub(crate) fn yielded(&self) -> bool {
        let step = self.step.saturating_sub(1);
        match self.strategy {
            WaitStrategy::BusySpin | WaitStrategy::Park => false,
            WaitStrategy::YieldSpin => true,
            WaitStrategy::BackoffSpin => step > BACKOFF_LIMIT,
            WaitStrategy::Adaptive => step >= ADAPTIVE_SPINS,
        }
    }

    /// Starts over (after progress was made).
    pub(crate) fn reset(&mut self) {
        self.step = 0;
    }
}

/// A deadline for `_timeout` calls, on the monotonic clock.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Option<std::time::Instant>);

#[cfg(feature = "std")]
impl Deadline {
    /// No deadline: wait until the condition or an error.
    pub(crate) fn never() -> Deadline {
        Deadline(None)
    }

    /// `timeout` from now (saturating: a huge timeout is no deadline).
    pub(crate) fn after(timeout: core::time::Duration) -> Deadline {
        Deadline(std::time::Instant::now().checked_add(timeout))
    }

    /// Time left, `Some(ZERO)` once passed, `None` for no deadline.
    pub(crate) fn remaining(&self) -> Option<core::time::Duration> {
        self.0
            .map(|d| d.saturating_duration_since(std::time::Instant::now()))
    }

    /// Whether the deadline has passed.
    pub(crate) fn expired(&self) -> bool {
        self.remaining() == Some(core::time::Duration::ZERO)
    }

    /// The earlier of two deadlines (no deadline is the latest).
    pub(crate) fn earlier(self, other: Deadline) -> Deadline {
        match (self.0, other.0) {
            (Some(a), Some(b)) => Deadline(Some(a.min(b))),
            (a, b) => Deadline(a.or(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_spins_then_yields_then_parks() {
        let mut w = Waiter::new(WaitStrategy::Adaptive);
        for _ in 0..ADAPTIVE_SPINS + ADAPTIVE_YIELDS {
            assert_eq!(w.next(), Next::Retry);
        }
        assert_eq!(w.next(), Next::Park);
        w.reset();
        assert_eq!(w.next(), Next::Retry);
    }

    #[test]
    fn spinning_strategies_never_park() {
        for s in [
            WaitStrategy::BusySpin,
            WaitStrategy::YieldSpin,
            WaitStrategy::BackoffSpin,
        ] {
            let mut w = Waiter::new(s);
            for _ in 0..1000 {
                assert_eq!(w.next(), Next::Retry);
            }
        }
        assert_eq!(Waiter::new(WaitStrategy::Park).next(), Next::Park);
    }

    /// Only an `Adaptive` wait yields for a working peer: a `Park` wait promises no CPU while
    /// waiting and parks at once, whatever the peer does.
    #[cfg(feature = "std")]
    #[test]
    fn a_park_wait_parks_even_while_its_peer_works() {
        let mut w = Waiter::new(WaitStrategy::Park);
        for _ in 0..3 {
            assert_eq!(w.next_unless_peer_working(|| true), Next::Park);
        }
    }

    /// An `Adaptive` wait yields for a working peer for a bounded time only (200 µs from the
    /// first time it did), then parks although the peer still works.
    #[cfg(feature = "std")]
    #[test]
    #[cfg_attr(miri, ignore = "yields until 200 µs of the clock have passed")]
    fn an_adaptive_wait_stops_yielding_for_a_working_peer() {
        let mut w = Waiter::new(WaitStrategy::Adaptive);
        for _ in 0..ADAPTIVE_SPINS + ADAPTIVE_YIELDS {
            assert_eq!(w.next_unless_peer_working(|| true), Next::Retry);
        }
        // The 200 µs run from the first yield for the working peer, not from the latest.
        w.next_unless_peer_working(|| true);
        let since = w.peer_working_since.expect("yielded for the working peer");
        w.next_unless_peer_working(|| true);
        assert_eq!(w.peer_working_since, Some(since));
        // A generous upper bound, only so that a broken bound fails instead of hanging.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut yields = 0u64;
        while w.next_unless_peer_working(|| true) == Next::Retry {
            yields += 1;
            assert!(
                std::time::Instant::now() < give_up,
                "still yielding after {yields} rounds"
            );
        }
        // An idle peer: parks at once.
        let mut w = Waiter::new(WaitStrategy::Adaptive);
        for _ in 0..ADAPTIVE_SPINS + ADAPTIVE_YIELDS {
            w.next();
        }
        assert_eq!(w.next_unless_peer_working(|| false), Next::Park);
    }

    /// `yielded` says whether the last step gave up the CPU, for every strategy: a loop that
    /// checks its deadline after every yield relies on it.
    #[test]
    fn yielded_tells_the_steps_that_yielded() {
        let mut w = Waiter::new(WaitStrategy::YieldSpin);
        w.next();
        assert!(w.yielded());
        let mut w = Waiter::new(WaitStrategy::BusySpin);
        w.next();
        assert!(!w.yielded());
        let mut w = Waiter::new(WaitStrategy::Park);
        w.next();
        assert!(!w.yielded());
        let mut w = Waiter::new(WaitStrategy::BackoffSpin);
        for _ in 0..=BACKOFF_LIMIT {
            w.next();
            assert!(!w.yielded());
        }
        w.next();
        assert!(w.yielded());
        let mut w = Waiter::new(WaitStrategy::Adaptive);
        for _ in 0..ADAPTIVE_SPINS {
            w.next();
            assert!(!w.yielded());
        }
        w.next();
        assert!(w.yielded(), "the first yield after the spins");
    }

    /// Every park counts, a timed-out one too; a missed wakeup only when the condition held.
    #[test]
    fn wait_stats_count_parks_and_missed_wakeups() {
        let mut s = WaitStats::default();
        s.count(Parked::NotNeeded);
        assert_eq!(s, WaitStats::default());
        s.count(Parked::Woken);
        s.count(Parked::TimedOut { missed: false });
        assert_eq!((s.parks, s.missed_wakeups), (2, 0));
        s.count(Parked::TimedOut { missed: true });
        assert_eq!((s.parks, s.missed_wakeups), (3, 1));
        assert_eq!((s.wakes, s.streaming_pauses), (0, 0));
    }

    /// The earlier of two deadlines, where no deadline is the latest.
    #[cfg(feature = "std")]
    #[test]
    fn the_earlier_deadline_wins() {
        use core::time::Duration;
        let now = || Deadline::after(Duration::ZERO);
        let later = || Deadline::after(Duration::from_secs(3600));
        assert!(later().earlier(now()).expired());
        assert!(now().earlier(later()).expired());
        assert!(Deadline::never().earlier(now()).expired());
        assert!(now().earlier(Deadline::never()).expired());
        assert!(!later().earlier(Deadline::never()).expired());
        assert!(later().earlier(Deadline::never()).remaining().is_some());
        assert!(Deadline::never().earlier(later()).remaining().is_some());
        assert_eq!(
            Deadline::never().earlier(Deadline::never()).remaining(),
            None
        );
    }

    /// A timeout too large for the clock is no deadline (never expires); a passed deadline
    /// has zero left and is expired.
    #[cfg(feature = "std")]
    #[test]
    fn a_huge_timeout_is_no_deadline_and_a_passed_one_expires() {
        use core::time::Duration;
        let huge = Deadline::after(Duration::MAX);
        assert_eq!(huge.remaining(), None);
        assert!(!huge.expired());
        let passed = Deadline::after(Duration::ZERO);
        assert_eq!(passed.remaining(), Some(Duration::ZERO));
        assert!(passed.expired());
        assert!(!Deadline::never().expired());
    }
}
