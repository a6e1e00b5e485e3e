//! The one concurrency shim: every atomic, cell, spin hint and futex call in the algorithm
//! code comes from here, so that `RUSTFLAGS="--cfg loom"` swaps the whole crate onto loom's
//! model checker.
//!
//! Under loom the futex is emulated with a loom `Mutex` + `Condvar` (the kernel's hash-bucket
//! lock plays the same part), and a timed wait waits forever: a lost wakeup then shows up as a
//! deadlock that loom reports, instead of hiding behind a timeout.

#![allow(unused_imports)]

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

#[cfg(not(feature = "std"))]
pub(crate) use alloc::sync::Arc;
#[cfg(all(loom, feature = "std"))]
pub(crate) use loom::sync::Arc;
#[cfg(all(not(loom), feature = "std"))]
pub(crate) use std::sync::Arc;

/// A spin-loop hint (a model-checker yield under loom).
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Gives the rest of the time slice to another thread (a spin hint without `std`).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(not(loom), feature = "std"))]
    std::thread::yield_now();
    #[cfg(all(not(loom), not(feature = "std")))]
    core::hint::spin_loop();
}

/// An `UnsafeCell` with loom's `with`/`with_mut` access API, so that loom can track accesses.
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct UnsafeCell<T: ?Sized>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell(core::cell::UnsafeCell::new(data))
    }
}

#[cfg(not(loom))]
impl<T: ?Sized> UnsafeCell<T> {
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Futex operations on a 32-bit word that may live in shared memory.
///
/// `wait` returns when the word no longer holds `expected`, when woken, on timeout, or
/// spuriously: callers always re-check their condition in a loop.
pub(crate) mod futex {
    use super::AtomicU32;
    use core::time::Duration;

    /// Waits while `*word == expected`, at most `timeout` (`None`: no bound, used only by
    /// callers that bound the wait themselves). Returns `false` only when the timeout ran out.
    #[inline]
    pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> bool {
        // The platform layer takes the real atomic type; outside loom the shim's is the same.
        #[cfg(loom)]
        {
            let _ = timeout;
            model::wait(word, expected);
            true
        }
        #[cfg(all(not(loom), not(miri), feature = "std"))]
        {
            crate::sys::futex_wait(word, expected, timeout)
        }
        // Miri cannot run raw syscalls: a wait is a yield (callers re-check in a loop).
        #[cfg(all(not(loom), miri, feature = "std"))]
        {
            let _ = (word, expected, timeout);
            std::thread::yield_now();
            true
        }
        #[cfg(all(not(loom), not(feature = "std")))]
        {
            let _ = (word, expected, timeout);
            core::hint::spin_loop();
            true
        }
    }

    /// Wakes every waiter on `word`.
    #[inline]
    pub(crate) fn wake_all(word: &AtomicU32) {
        #[cfg(loom)]
        model::wake_all(word);
        #[cfg(all(not(loom), not(miri), feature = "std"))]
        crate::sys::futex_wake_all(word);
        #[cfg(all(not(loom), miri, feature = "std"))]
        let _ = word;
        #[cfg(all(not(loom), not(feature = "std")))]
        let _ = word;
    }

    #[cfg(loom)]
    mod model {
        use super::super::{AtomicU32, Ordering};
        use loom::sync::{Condvar, Mutex};

        loom::lazy_static! {
            static ref BUCKET: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());
        }

        pub(crate) fn wait(word: &AtomicU32, expected: u32) {
            let (lock, cv) = &*BUCKET;
            let guard = lock.lock().unwrap();
            // The check happens under the bucket lock, as the kernel does it: a waker that
            // changed the word before taking the lock is seen here; one that changes it after
            // we sleep takes the lock after us and its notify reaches us.
            if word.load(Ordering::SeqCst) != expected {
                return;
            }
            drop(cv.wait(guard).unwrap());
        }

        pub(crate) fn wake_all(_word: &AtomicU32) {
            let (lock, cv) = &*BUCKET;
            let _guard = lock.lock().unwrap();
            cv.notify_all();
        }
    }
}
