//! The stream's control block: the part of a stream's shared memory that the bipartite-buffer
//! algorithm reads and writes. Byte-by-byte layout in docs/protocol.md ("Stream control block").

// Under loom the shared-memory stream that uses the window policy, the wake helpers and the
// geometry accessors is compiled out (`stream/mod.rs`); only the cursor core is modelled.
#![cfg_attr(loom, allow(dead_code))]

use crate::sync::{AtomicU32, AtomicU64, Ordering, fence, futex};
use core::time::Duration;

/// Aligns its content to its own 64-byte cache line: every contended field below sits alone on
/// a line, so the writer's stores never invalidate the line the reader polls and vice versa
/// (64 bytes is the line size of every x86-64 and most AArch64 cores).
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct Line<T>(pub(crate) T);

/// Parameters fixed at creation. Written once by the creator before the object is marked
/// ready; every opener reads them once, validates them, and keeps its own copy, so a peer that
/// rewrites them later changes nothing.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct Config {
    /// Bytes in the data area; a multiple of `align`, at least 4 record headers, at most 2^48.
    pub(crate) capacity: AtomicU64,
    /// Record alignment: 8, 64 or 4096.
    pub(crate) align: AtomicU64,
    /// Offset of the data area from the start of the object; a multiple of 4096.
    pub(crate) data_offset: AtomicU64,
}

/// How this process runs the Dekker handshakes of [`WaitWord`] (process-wide, probed once).
///
/// The waker (a commit, a release, a publish) is the hot path and the sleeper the slow one, so
/// the sleeper pays for both barriers: it runs `membarrier(GLOBAL_EXPEDITED)`, which executes a
/// full barrier on every running thread of every process registered for it, and a registered
/// waker then needs only a compiler barrier between its cursor store and its look at
/// `waiting`. A waker whose process could not register fences as before, which pairs with the
/// sleeper's own fence; a sleeper that cannot run the barrier sleeps at most
/// [`DEGRADED_RECHECK`] at a time, so that a waker relying on the barrier can make a wakeup
/// late, never lost.
#[cfg(all(feature = "std", not(loom)))]
mod barrier {
    use core::sync::atomic::{AtomicU8, Ordering};

    /// 0: not probed yet; 1: registered, the sleeper's machine barrier works (asymmetric);
    /// 2: no machine barrier here (fences on both sides, bounded sleeps).
    static MODE: AtomicU8 = AtomicU8::new(0);

    /// Probes and registers once. Called by every stream and region constructor; a waker in a
    /// process that never called it just keeps fencing.
    pub(crate) fn init() -> u8 {
        // Relaxed: a racing second probe gives the same answer (registration is idempotent).
        let m = MODE.load(Ordering::Relaxed);
        if m != 0 {
            return m;
        }
        // Miri cannot run the syscall: it checks the symmetric (fence) protocol.
        let m = if !cfg!(miri) && crate::sys::machine_barrier_register() {
            1
        } else {
            2
        };
        MODE.store(m, Ordering::Relaxed);
        m
    }

    /// Whether wakers of this process may skip their fence.
    #[inline(always)]
    pub(crate) fn asymmetric() -> bool {
        // Relaxed: a stale 0 or 2 only makes a waker fence when it need not.
        MODE.load(Ordering::Relaxed) == 1
    }

    /// The sleeper's heavy barrier, after its own fence. If it cannot be run, this process
    /// stops relying on it and its sleeps are bounded (see [`sure`]).
    pub(crate) fn heavy() {
        if init() == 1 && !crate::sys::machine_barrier() {
            // The kernel refused after all.
            MODE.store(2, Ordering::Relaxed);
        }
    }

    /// Whether a sleeper of this process is sure that every waker saw its announcement or
    /// made its progress visible: true when the machine barrier runs here (and under miri,
    /// where every process is one and fences on both sides).
    pub(crate) fn sure() -> bool {
        // Relaxed: a process-wide setting; see `init`.
        cfg!(miri) || MODE.load(Ordering::Relaxed) == 1
    }
}

/// Registers this process for the asymmetric handshake (see the `barrier` module); called by
/// the constructors of shared-memory objects before any handle exists.
pub(crate) fn init_barriers() {
    #[cfg(all(feature = "std", not(loom)))]
    barrier::init();
}

/// How long a sleeper that could not run the machine barrier sleeps at most before it
/// re-checks (a wakeup can then be late by this much, never lost).
pub(crate) const DEGRADED_RECHECK: Duration = Duration::from_millis(1);

/// One side's parking word pair.
///
/// `waiting` is set to 1 by the waiting side before it re-checks its condition and sleeps, and
/// cleared by whichever side sees it first (the waker swaps it to 0). `futex` is bumped by the
/// waker before `FUTEX_WAKE`, so a sleeper that read the old value either sees the new value in
/// the kernel's check or is woken.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct WaitWord {
    pub(crate) waiting: AtomicU32,
    pub(crate) futex: AtomicU32,
}

impl WaitWord {
    /// Waiter, step 1: read the futex value to sleep on, then announce the intent to sleep.
    /// The caller must re-check its condition after this and before [`WaitWord::sleep`].
    ///
    /// The handshake is a Dekker pattern: the waiter stores `waiting`, fences, loads the
    /// cursor; the waker stores the cursor, fences, loads `waiting`. Of the two fences one is
    /// first in the single total order, so either the waker sees `waiting == 1` or the waiter
    /// sees the new cursor. The fences are SeqCst fences (not SeqCst accesses, which loom
    /// cannot model). Where the machine barrier runs (see the `barrier` module), the waiter
    /// runs it after its fence and a registered waker's fence is only a compiler barrier: the
    /// kernel makes it a full barrier on the waker's CPU when it matters. The loom models check
    /// the fence protocol; the asymmetric one rests on membarrier's guarantee, and is checked
    /// across real processes by the tests that count missed wakeups.
    ///
    /// The futex value is read *before* `waiting` is set: a wake that lands between the two
    /// (and clears the flag) has then bumped the futex past `seen`, so the sleep returns at
    /// once and the waiter announces again. Reading it after the flag would let such a wake
    /// consume the announcement and leave the waiter asleep on the bumped value, which the
    /// loom model `loom_spsc_wraps_and_parks_without_losing_a_wakeup` finds.
    #[inline]
    pub(crate) fn announce(&self) -> u32 {
        // SYNC POINT: Acquire pairs with the SeqCst (release) fetch_add in `wake`: if we read a
        // bumped value, the progress the waker made before the bump is visible to our re-check.
        let seen = self.futex.load(Ordering::Acquire);
        // Relaxed: ordered before the caller's re-check by the fence below.
        self.waiting.store(1, Ordering::Relaxed);
        // SYNC POINT (Dekker, waiter half): pairs with the fence (or the compiler barrier that
        // the machine barrier below completes) in `wake_if_waiting`.
        fence(Ordering::SeqCst);
        #[cfg(all(feature = "std", not(loom)))]
        barrier::heavy();
        seen
    }

    /// Waiter, step 2: sleep while the futex word still holds `seen`, at most `timeout`.
    /// Returns `false` when the timeout ran out (no wake, no change).
    #[inline]
    pub(crate) fn sleep(&self, seen: u32, timeout: Option<Duration>) -> bool {
        #[cfg(all(feature = "std", not(loom)))]
        let timeout = if barrier::sure() {
            timeout
        } else {
            Some(timeout.map_or(DEGRADED_RECHECK, |t| t.min(DEGRADED_RECHECK)))
        };
        futex::wait(&self.futex, seen, timeout)
    }

    /// Waiter, step 3: no longer waiting. Relaxed: a stale 1 costs the waker one needless wake,
    /// never a lost one.
    #[inline]
    pub(crate) fn withdraw(&self) {
        self.waiting.store(0, Ordering::Relaxed);
    }

    /// Waker: call right after the store that publishes progress. Makes the wake syscall
    /// only when the other side announced that it sleeps. Returns whether it woke.
    #[inline]
    pub(crate) fn wake_if_waiting(&self) -> bool {
        // SYNC POINT (Dekker, waker half): pairs with the fence and machine barrier in
        // `announce`. A registered process needs only the compiler barrier: the waiter's
        // machine barrier runs a full barrier on this CPU if this thread is running, and a
        // thread that is not running has no store pending.
        #[cfg(all(feature = "std", not(loom)))]
        if barrier::asymmetric() {
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        #[cfg(any(loom, not(feature = "std")))]
        fence(Ordering::SeqCst);
        // Relaxed: ordered after our cursor store by the barrier above.
        if self.waiting.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.wake();
        true
    }

    /// Wakes the other side unconditionally (close, takeover).
    #[inline]
    pub(crate) fn wake(&self) {
        // SeqCst swap: clears the flag so that later commits skip the syscall until the
        // waiter announces again (the waiter re-announces on every round).
        self.waiting.swap(0, Ordering::SeqCst);
        // SeqCst: the sleeper's futex value changes before FUTEX_WAKE, and after the swap;
        // a sleeper that read the old value is either woken or refused by the kernel's compare.
        self.futex.fetch_add(1, Ordering::SeqCst);
        futex::wake_all(&self.futex);
    }
}

/// `W` and, beside it on the line the reader polls, the writer's announcement of a large grant
/// it is filling (docs/protocol.md, "Commit marks"). Written by the writer only.
///
/// The announcement is a seqlock: `grant_seq` is `4k + 1` while the fields change, `4k + 2`
/// once they describe grant `k` (pending: its commit may come as a mark), and `4k + 3` once
/// that grant is committed through `W` or abandoned. 0: no grant was ever announced.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct WriteLine {
    /// `W`, the end of committed data; range `0 ..= capacity`.
    pub(crate) cursor: AtomicU64,
    /// The announcement's sequence word (see above).
    pub(crate) grant_seq: AtomicU64,
    /// `W` when the grant was reserved: the reader takes its mark only at this position.
    pub(crate) grant_base: AtomicU64,
    /// Where the grant's record starts: `grant_base`, or 0 if it wraps.
    pub(crate) grant_start: AtomicU64,
    /// The payload bytes reserved; the mark lies right after the framed record.
    pub(crate) grant_len: AtomicU64,
    /// The mark the commit stores there (bit 63 set, bit 0 clear; bit 0 set on the mark of a
    /// commit shorter than the reservation, whose header then holds the length).
    pub(crate) grant_mark: AtomicU64,
}

/// The control block. Each cursor has exactly one writer and its own cache line.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct StreamControl {
    /// Written by the creator before ready; read once by each opener.
    pub(crate) config: Line<Config>,
    /// `W` and the writer's announcement of the grant it is filling. Written by the writer
    /// only.
    pub(crate) write: Line<WriteLine>,
    /// `L`, the end of the data before the wrap: meaningful only while the buffer is inverted
    /// (`W < R`). Written by the writer only, before the `W` store that inverts the buffer;
    /// range `0 ..= capacity`.
    pub(crate) watermark: Line<AtomicU64>,
    /// `R`, the start of unreleased data. Written by the reader only; range `0 ..= capacity`.
    pub(crate) read: Line<AtomicU64>,
    /// The reader parks here when the stream is empty; the writer wakes it.
    pub(crate) reader_wait: Line<WaitWord>,
    /// The writer parks here when the stream is full; the reader wakes it.
    pub(crate) writer_wait: Line<WaitWord>,
}

/// Size of [`StreamControl`] in bytes (six cache lines).
pub(crate) const CONTROL_SIZE: usize = 6 * 64;

#[cfg(not(loom))]
const _: () = {
    assert!(core::mem::size_of::<StreamControl>() == CONTROL_SIZE);
    assert!(core::mem::align_of::<StreamControl>() == 64);
    assert!(core::mem::offset_of!(StreamControl, write) == 64);
    assert!(core::mem::offset_of!(StreamControl, watermark) == 128);
    assert!(core::mem::offset_of!(StreamControl, read) == 192);
    assert!(core::mem::offset_of!(StreamControl, reader_wait) == 256);
    assert!(core::mem::offset_of!(StreamControl, writer_wait) == 320);
};

/// The record alignments a stream accepts.
pub const ALIGNMENTS: [u64; 3] = [8, 64, 4096];

/// Bytes of record header before the payload for a given alignment: the 8-byte length, padded
/// so that the payload starts on the alignment.
#[inline]
pub(crate) const fn header_len(align: u64) -> u64 {
    if align > 8 { align } else { 8 }
}

/// `n` rounded up to a multiple of `align` (a power of two), `None` on overflow.
#[inline]
pub(crate) const fn round_up(n: u64, align: u64) -> Option<u64> {
    match n.checked_add(align - 1) {
        Some(x) => Some(x & !(align - 1)),
        None => None,
    }
}
