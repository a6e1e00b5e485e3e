//! Parking without a lost wakeup, and without a fence on the publisher's hot path.
//!
//! A Dekker handshake between a publisher (store the stamp, then look for waiters) and a
//! parking subscriber (announce itself, then look for the stamp). Both sides need a full
//! barrier between their store and their load. The subscriber's side is the slow path, so it
//! pays for both: on Linux it runs `membarrier(PRIVATE_EXPEDITED)`, which executes a full
//! barrier on every running thread of the process, and the publisher's side is then only a
//! compiler barrier (the asymmetric fence of folly's `asymmetricHeavyBarrier`). Where the
//! kernel lacks membarrier (or under miri), a parker cannot force the publisher's barrier, so
//! it sleeps at most 1 ms at a time: a wakeup can then be late, never lost. Under loom the
//! publisher's look is a read-modify-write of the waiter count, which orders the same way and
//! loom can model.
//!
//! A ring in shared memory (a pub/sub inline topic) has publishers in other processes, which
//! `PRIVATE_EXPEDITED` does not reach. There the parker uses
//! `membarrier(GLOBAL_EXPEDITED)` ([`Reach::Machine`]), which runs a barrier on every thread
//! of every process registered for it; every process registers when it joins a region
//! ([`init_machine`]). A publisher in a process whose registration failed issues its own
//! SeqCst fence before it looks for waiters (then the pair is the symmetric Dekker handshake),
//! and a parker whose barrier call fails sleeps at most [`DEGRADED_RECHECK`] at a time.

// The shared-memory side (inline topics) is not compiled under loom or without std.
#![cfg_attr(any(loom, not(feature = "std")), allow(dead_code))]

use crate::sync::{AtomicU32, Ordering};
use crate::wait::Parked;

/// How far a parker's heavy barrier must reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Publishers are threads of this process (in-process rings).
    Process,
    /// Publishers may be other processes (a ring in shared memory).
    Machine,
}

#[cfg(all(feature = "std", not(loom)))]
mod mode {
    use core::sync::atomic::{AtomicU8, Ordering};
    /// 0: not yet probed, 1: membarrier registered, 2: fall back to SeqCst fences.
    static MODE: AtomicU8 = AtomicU8::new(0);

    /// Probes and registers once; called by every ring constructor, before any handle exists
    /// (so every thread that later uses a handle sees the final mode through the handle's
    /// hand-over, which is itself a synchronising operation).
    pub(crate) fn init() {
        // Relaxed: a racing second probe gives the same answer (registration is idempotent).
        if MODE.load(Ordering::Relaxed) == 0 {
            // Miri cannot run the syscall: it runs the fallback, where `heavy` fences the
            // parker's side, `anyone_waiting` keeps only its compiler barrier, and a parker
            // re-checks every DEGRADED_RECHECK (a futex wait is a yield under miri). So miri
            // checks the ring's accesses, not the handshake; the loom models check that.
            let m = if !cfg!(miri) && crate::sys::process_barrier_register() {
                1
            } else {
                2
            };
            MODE.store(m, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    pub(crate) fn asymmetric() -> bool {
        // Relaxed: set before any ring handle existed; see `init`.
        MODE.load(Ordering::Relaxed) == 1
    }
}

#[cfg(all(feature = "std", not(loom)))]
mod machine {
    use core::sync::atomic::{AtomicU8, Ordering};
    /// 0: not yet registered, 1: registered for `GLOBAL_EXPEDITED`, 2: registration failed.
    static MACHINE: AtomicU8 = AtomicU8::new(0);

    /// Registers this process once; called before any handle of a shared-memory ring exists
    /// in this process (joining a region), so that publishers see the final mode.
    pub(crate) fn init() {
        // Relaxed: registration is idempotent; a racing second call gives the same answer.
        if MACHINE.load(Ordering::Relaxed) == 0 {
            let m = if !cfg!(miri) && crate::sys::machine_barrier_register() {
                1
            } else {
                2
            };
            MACHINE.store(m, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    pub(crate) fn registered() -> bool {
        // Relaxed: set before any shared-memory handle of this process existed; see `init`.
        MACHINE.load(Ordering::Relaxed) == 1
    }
}

/// Registers this process for machine-wide barriers (see [`Reach::Machine`]); call before
/// publishing on, or parking on, a ring in shared memory.
pub(crate) fn init_machine() {
    #[cfg(all(feature = "std", not(loom)))]
    machine::init();
}

/// Whether this process issues its own SeqCst fence in [`light_machine`] (its registration
/// for machine-wide barriers failed, or was never made): then a heavy side whose barrier call
/// fails is still paired with it by its own fence.
pub(crate) fn fences_itself() -> bool {
    #[cfg(all(feature = "std", not(loom)))]
    return !machine::registered();
    #[cfg(any(loom, not(feature = "std")))]
    true
}

/// Prepares the barrier mode; call before handing out handles.
pub(crate) fn init() {
    #[cfg(all(feature = "std", not(loom)))]
    mode::init();
}

/// The light side: called by a waker after its stores; says whether anyone announced a park
/// on `waiters`.
#[inline(always)]
pub(crate) fn anyone_waiting(waiters: &AtomicU32) -> bool {
    #[cfg(loom)]
    {
        // AcqRel RMW: pairs with the SeqCst announce in `park`; an RMW reads the latest value.
        waiters.fetch_add(0, Ordering::AcqRel) != 0
    }
    #[cfg(all(feature = "std", not(loom)))]
    {
        // Pairs with the membarrier in `heavy`: the compiler keeps our stores before the
        // load; the kernel's barrier on this CPU does the rest. (Without membarrier, parkers
        // bound their sleep instead: see `park`.)
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        // Relaxed: ordered by the barrier above (Dekker handshake with `park`).
        waiters.load(Ordering::Relaxed) != 0
    }
    #[cfg(all(not(feature = "std"), not(loom)))]
    {
        // Without std nothing parks (the futex shim spins), so nobody needs waking.
        let _ = waiters;
        false
    }
}

/// [`anyone_waiting`] for a ring in shared memory, whose parkers may be in other processes
/// and use [`Reach::Machine`].
#[inline(always)]
pub(crate) fn anyone_waiting_machine(waiters: &AtomicU32) -> bool {
    #[cfg(all(feature = "std", not(loom)))]
    {
        light_machine();
        // Relaxed: ordered by the barrier above.
        waiters.load(Ordering::Relaxed) != 0
    }
    #[cfg(any(loom, not(feature = "std")))]
    anyone_waiting(waiters)
}

/// The light half of a Dekker handshake between processes, after our stores and before our
/// load: the other half runs [`heavy`] with [`Reach::Machine`] (or its own full fence).
#[inline(always)]
pub(crate) fn light_machine() {
    #[cfg(all(feature = "std", not(loom)))]
    {
        if machine::registered() {
            // Pairs with the GLOBAL_EXPEDITED membarrier of the heavy side in any process:
            // the compiler keeps our stores before the load, the kernel's barrier does the
            // rest.
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            // Not registered: nobody can force our barrier, so we issue it (pairs with the
            // heavy side's own full barrier: the symmetric Dekker handshake).
            crate::sync::fence(Ordering::SeqCst);
        }
    }
    #[cfg(any(loom, not(feature = "std")))]
    // Under loom `heavy` issues no fence: this fence pairs with the SeqCst fence that the
    // other side issues itself (the loom models of a topic's free write it out where
    // `Region::machine_handshake` runs `heavy`); a parker's announcement is paired by
    // `anyone_waiting_machine`'s RMW instead. Without std nothing calls this (shared memory
    // needs std).
    crate::sync::fence(Ordering::SeqCst);
}

/// Wakes everyone parked on `notify` of a ring in shared memory if anyone announced a park.
#[inline(always)]
pub(crate) fn wake_machine(waiters: &AtomicU32, notify: &AtomicU32) {
    if anyone_waiting_machine(waiters) {
        wake_always(notify);
    }
}

/// The heavy side, run by a parker between its announcement and its re-check. Returns false
/// when it could not make the publishers' side a full barrier (no membarrier): the parker then
/// re-checks at least every [`DEGRADED_RECHECK`].
pub(crate) fn heavy(reach: Reach) -> bool {
    #[cfg(all(feature = "std", not(loom)))]
    {
        let forced = match reach {
            Reach::Process => mode::asymmetric() && crate::sys::process_barrier(),
            Reach::Machine => !cfg!(miri) && crate::sys::machine_barrier(),
        };
        if forced {
            return true;
        }
        // No forced barrier: our half of the handshake still needs a full one. Pairs with the
        // SeqCst fence in `light_machine` of a process that fences its own side
        // (`fences_itself`); a waker that relies on the forced barrier instead
        // (`anyone_waiting`'s compiler barrier, `light_machine` of a registered process) is
        // not ordered by it, hence `false`: the parker bounds its sleep (`park_reach`), the
        // freer keeps what it would free (`Region::machine_handshake`).
        crate::sync::fence(Ordering::SeqCst);
        false
    }
    #[cfg(any(loom, not(feature = "std")))]
    {
        let _ = reach;
        true
    }
}

/// How often a parked thread re-checks when the kernel offers no membarrier (a wakeup can
/// then be late by this much, never lost).
const DEGRADED_RECHECK: core::time::Duration = core::time::Duration::from_millis(1);

/// Wakes everyone parked on `notify` if anyone announced a park on `waiters`.
#[inline(always)]
pub(crate) fn wake(waiters: &AtomicU32, notify: &AtomicU32) {
    if anyone_waiting(waiters) {
        wake_always(notify);
    }
}

/// Wakes everyone parked on `notify`: out of line, as [`wake`] calls it only when someone
/// announced a park.
#[cold]
#[inline(never)]
pub(crate) fn wake_always(notify: &AtomicU32) {
    // Release pairs with the Acquire load of `notify` in `park`: a parker that reads the new
    // value also sees what we stored before waking.
    notify.fetch_add(1, Ordering::Release);
    crate::sync::futex::wake_all(notify);
}

/// Parks on `notify` until woken or `timeout`, unless `ready()` says the condition already
/// holds once the handshake is done. Callers loop and re-check; the outcome is for their
/// statistics ([`crate::WaitStats`]).
#[cold]
pub(crate) fn park(
    waiters: &AtomicU32,
    notify: &AtomicU32,
    timeout: Option<core::time::Duration>,
    ready: impl FnMut() -> bool,
) -> Parked {
    park_reach(Reach::Process, waiters, notify, timeout, ready)
}

/// [`park`] with the barrier reach of the ring (see [`Reach`]).
#[cold]
pub(crate) fn park_reach(
    reach: Reach,
    waiters: &AtomicU32,
    notify: &AtomicU32,
    timeout: Option<core::time::Duration>,
    ready: impl FnMut() -> bool,
) -> Parked {
    park_recorded(reach, waiters, notify, None, timeout, ready)
}

/// [`park_reach`] on a count in shared memory, whose announcement a process killed while
/// parked would leave behind (and every later publish would pay a wake syscall for): `record`
/// (`(word, idle, value)`, the holdings entry of the parking subscription, which says `idle`
/// while it is not parked) says `value` while the announcement stands, from just after it is
/// made to just before it is withdrawn. Whoever takes `value` out of the word withdraws the
/// announcement: this parker, or the reclaimer of its row once it died ([`withdraw`]), exactly
/// one of them. Each subscription has a word of its own, so every park of a participant is
/// recorded, however many of its subscriptions park at once; a park whose word does not say
/// `idle` (a peer scribbled on it) parks unrecorded, as does every park when `record` is
/// `None`. A kill between the announcement and the record (or between taking the record back
/// and the withdrawal), or of an unrecorded parker, leaves one count behind.
#[cold]
pub(crate) fn park_recorded(
    reach: Reach,
    waiters: &AtomicU32,
    notify: &AtomicU32,
    record: Option<(&AtomicU32, u32, u32)>,
    timeout: Option<core::time::Duration>,
    mut ready: impl FnMut() -> bool,
) -> Parked {
    // Acquire pairs with the Release bump in `wake_always`.
    let seen = notify.load(Ordering::Acquire);
    // SeqCst: the announcement of the Dekker handshake with `anyone_waiting` (and
    // `anyone_waiting_machine`).
    waiters.fetch_add(1, Ordering::SeqCst);
    // Release (success): pairs with the Acquire of the CAS in `withdraw` (the reclaimer's):
    // the count it takes back was made.
    let record = record.filter(|&(word, idle, value)| {
        word.compare_exchange(idle, value, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    });
    let sure = heavy(reach);
    let timeout = if sure {
        timeout
    } else {
        Some(timeout.map_or(DEGRADED_RECHECK, |t| t.min(DEGRADED_RECHECK)))
    };
    let parked = if ready() {
        Parked::NotNeeded
    } else if crate::sync::futex::wait(notify, seen, timeout) {
        Parked::Woken
    } else {
        // With the barrier, every waker saw our announcement: a slice that ran out while
        // the condition held is a wake that never came. Without it, wakes may be late by
        // design (the sleep is cut to DEGRADED_RECHECK), so nothing counts as missed.
        Parked::TimedOut {
            missed: sure && ready(),
        }
    };
    match record {
        // Taken back by a reclaimer (a survivor that judged this process dead while it was
        // stopped): so was the announcement.
        Some((word, idle, value)) => {
            // AcqRel: pairs with the reclaimer's CAS in `withdraw` (one of the two succeeds).
            if word
                .compare_exchange(value, idle, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // Relaxed: as below.
                waiters.fetch_sub(1, Ordering::Relaxed);
            }
        }
        // Relaxed: only a hint for wakers (a stale non-zero costs every wake a syscall
        // until it is withdrawn).
        None => {
            waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }
    parked
}

/// Withdraws the announcement a dead parker left on `waiters`, if its `record` (see
/// [`park_recorded`]) still says `value`, leaving the record at `idle`; never below 0 (the word
/// may have been scribbled).
pub(crate) fn withdraw(waiters: &AtomicU32, record: &AtomicU32, idle: u32, value: u32) {
    // AcqRel: pairs with the parker's Release CAS of the record, and with its own CAS back
    // (exactly one of the two takes it).
    if value != idle
        && record
            .compare_exchange(value, idle, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        // Relaxed: a hint for wakers, as in `park_recorded`.
        let _ = waiters.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}
