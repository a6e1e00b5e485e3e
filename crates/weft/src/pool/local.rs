//! Single-thread object pool: a stack of pointers to boxed values, with resets deferred
//! (not nested) when a reset releases values of its own pool.
//!
//! The state lives in one heap block (`Core`) shared by the pool handle and its guards. The
//! handle is the only way in for acquiring; guards only give back. The block is freed by
//! whichever of them is last: the handle when no guard is out, or the last guard after the
//! handle is gone.
//!
//! Reentrancy: user code (the reset closure, the factory, `T`'s destructor) may run while the
//! pool is in the middle of an operation and may drop guards of the same pool. No borrow of
//! the pool's state is held across a call into user code, and the reset closure is never
//! entered twice: a release that arrives while a reset runs is queued on `pending` and reset
//! by the outer release once the running reset returns (a loop, so a deep tree of pooled
//! nodes is reset iteratively, not recursively).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::{Cell, UnsafeCell};
use core::fmt;
use core::marker::PhantomData;
use core::mem;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use crate::{Error, Result};

type Reset<T> = Box<dyn FnMut(&mut T)>;
type Factory<T> = Box<dyn FnMut() -> T>;

/// The state shared by a local pool handle and its guards. Every field is touched only by the
/// one thread that owns the pool (the handle and the guards are `!Send`).
struct Core<T> {
    /// Values ready to hand out, each from `Box::into_raw`. Never borrowed across user code.
    free: UnsafeCell<Vec<NonNull<T>>>,
    /// Values released while a reset was running, waiting for their own reset.
    pending: UnsafeCell<Vec<NonNull<T>>>,
    /// Runs on every value given back. Called only by the code that set `busy`, so never
    /// twice at once.
    reset: UnsafeCell<Reset<T>>,
    /// Makes a value when `free` is empty (`LocalPool` only). Called only while `creating`.
    factory: UnsafeCell<Option<Factory<T>>>,
    /// Values that belong to the pool: free + pending + out + the one being reset.
    owned: Cell<usize>,
    /// Guards alive (they point at this block).
    out: Cell<usize>,
    /// `Some(n)`: the pool never owns more than `n` values (`BoundedLocalPool`).
    bound: Option<usize>,
    /// A release loop, a close or a free is running: a release now goes to `pending`.
    busy: Cell<bool>,
    /// The factory is running.
    creating: Cell<bool>,
    /// The handle is gone: returned values are dropped, the block is freed when `out` is 0.
    closed: Cell<bool>,
}

/// Drops one boxed value that came from `Box::into_raw`.
///
/// # Safety
/// `value` came from `Box::into_raw` and nothing else refers to it.
unsafe fn drop_value<T>(value: NonNull<T>) {
    // SAFETY: the caller hands over the sole ownership of a `Box::into_raw` pointer.
    drop(unsafe { Box::from_raw(value.as_ptr()) });
}

impl<T> Core<T> {
    fn alloc(
        values: Vec<NonNull<T>>,
        bound: Option<usize>,
        reset: Reset<T>,
        factory: Option<Factory<T>>,
    ) -> NonNull<Core<T>> {
        let owned = values.len();
        let core = Box::new(Core {
            free: UnsafeCell::new(values),
            pending: UnsafeCell::new(Vec::new()),
            reset: UnsafeCell::new(reset),
            factory: UnsafeCell::new(factory),
            owned: Cell::new(owned),
            out: Cell::new(0),
            bound,
            busy: Cell::new(false),
            creating: Cell::new(false),
            closed: Cell::new(false),
        });
        NonNull::from(Box::leak(core))
    }

    /// Pops a ready value, or resets a pending one when nothing is ready.
    #[inline]
    fn pop(&self) -> Option<NonNull<T>> {
        // SAFETY: single thread; the borrow ends before any user code runs.
        match unsafe { (*self.free.get()).pop() } {
            Some(v) => Some(v),
            None => self.pop_pending(),
        }
    }

    /// Values left pending by a reset that panicked: reset one now, unless pool code is
    /// running (then they are the running release loop's to finish).
    #[cold]
    fn pop_pending(&self) -> Option<NonNull<T>> {
        if self.busy.get() {
            return None;
        }
        // SAFETY: single thread; short borrow.
        let v = unsafe { (*self.pending.get()).pop() }?;
        self.busy.set(true);
        self.reset_one(v);
        self.busy.set(false);
        Some(v)
    }

    /// Runs the reset on `value`; `busy` is set by the caller. On a panic the value is
    /// dropped, the count of owned values goes down by one, `busy` is cleared and the panic
    /// goes on.
    fn reset_one(&self, value: NonNull<T>) {
        struct OnUnwind<'a, T> {
            core: &'a Core<T>,
            value: NonNull<T>,
        }
        impl<T> Drop for OnUnwind<'_, T> {
            fn drop(&mut self) {
                // Only reached while unwinding out of the reset. Releases from the value's
                // destructor queue on `pending` (`busy` is still set).
                // SAFETY: the value was ours (it was being reset) and is never used again.
                unsafe { drop_value(self.value) };
                self.core.owned.set(self.core.owned.get() - 1);
                self.core.busy.set(false);
            }
        }
        debug_assert!(self.busy.get());
        let scope = OnUnwind { core: self, value };
        // SAFETY: only a caller that set `busy` (from false) gets here, so no other call of
        // the reset closure is on the stack, and every release made inside it only queues on
        // `pending`; the value is exclusively ours (it left its guard or its box).
        unsafe { (*self.reset.get())(&mut *value.as_ptr()) };
        mem::forget(scope);
    }

    fn available(&self) -> usize {
        // SAFETY: single thread; short borrows.
        unsafe { (*self.free.get()).len() + (*self.pending.get()).len() }
    }
}

/// Gives `value` (owned by the pool, counted in `owned`) back: reset it and make it ready,
/// or queue it if pool code is running, or drop it if the pool is closed. Then frees the
/// core if this was the last thing keeping it.
///
/// # Safety
/// `core` is alive; `value` came from `Box::into_raw` and the caller gives up all use of it.
#[inline]
unsafe fn release<T>(core: NonNull<Core<T>>, value: NonNull<T>) {
    // SAFETY: the core is alive (caller) and stays alive while `busy` is set, which keeps
    // every nested call from freeing it.
    let c = unsafe { core.as_ref() };
    if c.busy.get() || c.closed.get() {
        // SAFETY: as this function's contract.
        return unsafe { release_slow(core, value) };
    }
    c.busy.set(true);
    let unwinding = FreeOnUnwind(core);
    c.reset_one(value);
    mem::forget(unwinding);
    // SAFETY: single thread, short borrow. A bounded pool's vector holds at most `bound`
    // pointers (reserved at construction), so this never reallocates there.
    unsafe { (*c.free.get()).push(value) };
    // SAFETY: single thread, short borrow.
    let more = unsafe { !(*c.pending.get()).is_empty() };
    if more || c.closed.get() {
        // The reset released values of this pool, or dropped the pool's handle.
        c.busy.set(false);
        // SAFETY: alive; `c` is not used afterwards.
        return unsafe { drain(core) };
    }
    c.busy.set(false);
}

/// The slow half of [`release`]: a reentrant release (queued), or one after the close.
///
/// # Safety
/// As [`release`].
#[cold]
unsafe fn release_slow<T>(core: NonNull<Core<T>>, value: NonNull<T>) {
    // SAFETY: alive (caller).
    let c = unsafe { core.as_ref() };
    // SAFETY: single thread, short borrow; nothing else borrows `pending` now.
    unsafe { (*c.pending.get()).push(value) };
    if c.busy.get() {
        // Reentrant release (from inside the reset, the factory, or a value's destructor
        // called by a running loop): the outer loop resets it.
        return;
    }
    // SAFETY: alive; `c` is not used afterwards.
    unsafe { drain(core) }
}

/// Resets (or, once closed, drops) every queued value, then frees the core if nothing
/// keeps it any more.
///
/// # Safety
/// `core` is alive and `busy` is clear; the caller does not use the core afterwards.
#[cold]
unsafe fn drain<T>(core: NonNull<Core<T>>) {
    // SAFETY: alive (caller); stays alive while `busy` is set.
    let c = unsafe { core.as_ref() };
    c.busy.set(true);
    let unwinding = FreeOnUnwind(core);
    // A reset may close the pool (drop its handle): then the rest is dropped below.
    while !c.closed.get() {
        // SAFETY: single thread, short borrow.
        let Some(v) = (unsafe { (*c.pending.get()).pop() }) else {
            break;
        };
        c.reset_one(v);
        // SAFETY: single thread, short borrow (see `release` for the bound).
        unsafe { (*c.free.get()).push(v) };
    }
    if c.closed.get() {
        // The handle is gone (perhaps dropped by a reset this loop ran, which left the close
        // to us): drop what is queued or ready. A destructor that panics: `drop_all` drops
        // the rest, `unwinding` clears `busy` and frees the block if no guard is out.
        drop_all(c);
    }
    mem::forget(unwinding);
    c.busy.set(false);
    // SAFETY: `core` is alive; `c` is not used after this.
    unsafe { maybe_free(core) };
}

/// Ends a loop of pool code cut short by a panic (a reset, or a value's destructor): clears
/// `busy`, which the loop set, so that later releases are not queued for ever, and frees the
/// core (and drops what it still holds) if the pool is closed and nothing else keeps it. A
/// reset that dropped the pool's handle left the closing to the running release, which the
/// panic cut short. Built by `release`, `drain` and `close`, forgotten when their loop
/// returns. The free happens here, after `reset_one` or `drop_all` has returned by
/// unwinding, and not in their own unwind guards, which run while they still borrow the core.
struct FreeOnUnwind<T>(NonNull<Core<T>>);

impl<T> Drop for FreeOnUnwind<T> {
    fn drop(&mut self) {
        // SAFETY: only reached while unwinding out of the loop of `release`, `drain` or
        // `close`: the core is alive (nothing frees it while `busy` is set; `reset_one`'s
        // unwind guard may have cleared it already) and the unwinding caller never touches it
        // again.
        let c = unsafe { self.0.as_ref() };
        c.busy.set(false);
        // SAFETY: as above. `maybe_free` frees nothing unless the pool is closed, no guard is
        // out and no other pool code is running.
        unsafe { maybe_free(self.0) };
    }
}

/// Drops every value on `free` and `pending` (the pool is closed; `busy` is set, so what
/// their destructors give back is queued on `pending` and dropped here too), counting each
/// out of `owned` first. A destructor that panics does not stop it: the rest are dropped
/// while the panic unwinds, as `Vec`'s drop does (a second panic then aborts, as there).
fn drop_all<T>(c: &Core<T>) {
    /// Only dropped while unwinding out of a value's destructor: drops the rest.
    struct Rest<'a, T>(&'a Core<T>);
    impl<T> Drop for Rest<'_, T> {
        fn drop(&mut self) {
            drop_all(self.0);
        }
    }
    debug_assert!(c.busy.get() && c.closed.get());
    loop {
        // SAFETY: single thread, short borrows; nothing else borrows the vectors now.
        let v = unsafe { (*c.free.get()).pop().or_else(|| (*c.pending.get()).pop()) };
        let Some(v) = v else { break };
        c.owned.set(c.owned.get() - 1);
        let rest = Rest(c);
        // SAFETY: a pool value, ours to drop (it left the vectors above).
        unsafe { drop_value(v) };
        mem::forget(rest);
    }
}

/// Frees the core if the handle is gone, no guard is out and no pool code is running.
///
/// # Safety
/// `core` is alive; the caller does not use it afterwards.
unsafe fn maybe_free<T>(core: NonNull<Core<T>>) {
    // SAFETY: alive (caller).
    let c = unsafe { core.as_ref() };
    let unused = c.closed.get() && c.out.get() == 0 && !c.busy.get() && !c.creating.get();
    if !unused {
        return;
    }
    /// Frees the block when dropped: after the values, or while a panic from one of their
    /// destructors unwinds (`drop_all` has dropped the rest by then).
    struct Free<T>(NonNull<Core<T>>);
    impl<T> Drop for Free<T> {
        fn drop(&mut self) {
            // SAFETY: closed, no guard out, nothing running, every value dropped: nothing
            // refers to the block any more (the caller of `maybe_free` does not use it
            // afterwards); it came from `Box::leak` in `Core::alloc`.
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        }
    }
    // Drop what is left. Each drop is user code; with no handle and no guard of this pool
    // left it cannot reach this pool, and `busy` would queue anything that did.
    c.busy.set(true);
    let free = Free(core);
    drop_all(c);
    drop(free);
}

/// Closes the pool (the handle is dropped).
///
/// # Safety
/// `core` is alive and this is called once, by the handle.
unsafe fn close<T>(core: NonNull<Core<T>>) {
    // SAFETY: alive (caller).
    let c = unsafe { core.as_ref() };
    c.closed.set(true);
    if c.busy.get() {
        // Dropped from inside a running reset: the running loop finishes the job.
        return;
    }
    // Drop the ready values now (guards still out keep the block). `busy` queues whatever
    // their destructors give back, and the loop drops that too.
    c.busy.set(true);
    // A destructor that panics: `drop_all` drops the rest, this clears `busy` and frees the
    // block if no guard is out.
    let unwinding = FreeOnUnwind(core);
    drop_all(c);
    mem::forget(unwinding);
    c.busy.set(false);
    // SAFETY: alive; not used afterwards.
    unsafe { maybe_free(core) };
}

/// A value lent by a [`LocalPool`] or a [`BoundedLocalPool`]; it goes back to its pool (and
/// through the reset) when dropped.
///
/// The value stays where the pool boxed it: neither acquiring nor dropping the guard moves
/// it. A guard may outlive its pool; the value is then dropped with the guard.
///
/// # Examples
/// ```
/// use weft::pool::LocalPool;
///
/// let pool = LocalPool::new(Vec::<u8>::new, Vec::clear);
/// let mut buf = pool.acquire();
/// buf.extend_from_slice(b"hello");
/// assert_eq!(&buf[..], b"hello");
/// drop(buf);
/// assert!(pool.acquire().is_empty()); // reset on the way back
/// ```
#[must_use = "dropping the guard gives the value straight back to the pool"]
pub struct Pooled<T> {
    value: NonNull<T>,
    core: NonNull<Core<T>>,
    /// `!Send` and `!Sync`: the pool's bookkeeping is not thread-safe.
    _not_send: PhantomData<*mut T>,
}

impl<T> Pooled<T> {
    /// Takes the value out of the pool for good, as the box it lives in (no copy of `T`).
    ///
    /// The pool no longer counts it; [`LocalPool::put`] can give it back later.
    ///
    /// # Examples
    /// ```
    /// use weft::pool::BoundedLocalPool;
    ///
    /// let pool = BoundedLocalPool::new(1, || 7u32, |_| {});
    /// let kept: Box<u32> = pool.try_acquire().unwrap().detach();
    /// assert_eq!(*kept, 7);
    /// assert_eq!(pool.capacity(), 0);
    /// ```
    pub fn detach(self) -> Box<T> {
        let this = mem::ManuallyDrop::new(self);
        // SAFETY: the core is alive while a guard is out (`out` counts this guard).
        let c = unsafe { this.core.as_ref() };
        c.out.set(c.out.get() - 1);
        c.owned.set(c.owned.get() - 1);
        // SAFETY: the guard owned the value (from `Box::into_raw`) and is forgotten.
        let value = unsafe { Box::from_raw(this.value.as_ptr()) };
        // SAFETY: alive; `c` is not used afterwards.
        unsafe { maybe_free(this.core) };
        value
    }
}

impl<T> Deref for Pooled<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard owns the value until it drops; the pool does not touch it.
        unsafe { self.value.as_ref() }
    }
}

impl<T> DerefMut for Pooled<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow.
        unsafe { self.value.as_mut() }
    }
}

impl<T> Drop for Pooled<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the core is alive while this guard is out.
        let c = unsafe { self.core.as_ref() };
        c.out.set(c.out.get() - 1);
        // SAFETY: alive (`release` keeps it alive until it is done with it); the
        // value is given up here.
        unsafe { release(self.core, self.value) };
    }
}

impl<T: fmt::Debug> fmt::Debug for Pooled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pooled").field(&**self).finish()
    }
}

fn lend<T>(core: NonNull<Core<T>>, value: NonNull<T>) -> Pooled<T> {
    // SAFETY: called by a pool handle, which keeps the core alive.
    let c = unsafe { core.as_ref() };
    c.out.set(c.out.get() + 1);
    Pooled {
        value,
        core,
        _not_send: PhantomData,
    }
}

fn boxed<T>(value: T) -> NonNull<T> {
    NonNull::from(Box::leak(Box::new(value)))
}

fn into_ptr<T>(value: Box<T>) -> NonNull<T> {
    NonNull::from(Box::leak(value))
}

/// A fixed-size pool for one thread: `capacity` values made up front, lent out by
/// [`try_acquire`](Self::try_acquire) and reset on return.
///
/// `!Send` and `!Sync`. Each value lives in its own box for its whole life, so acquire and
/// release move a pointer, never the value.
///
/// # Examples
/// ```
/// use weft::pool::BoundedLocalPool;
///
/// let pool = BoundedLocalPool::new(2, || String::with_capacity(64), String::clear);
/// let mut a = pool.try_acquire().unwrap();
/// let _b = pool.try_acquire().unwrap();
/// assert!(pool.try_acquire().is_none());
/// a.push_str("order 1");
/// drop(a);
/// assert_eq!(pool.available(), 1);
/// assert_eq!(*pool.try_acquire().unwrap(), "");
/// ```
///
/// Guards cannot cross threads:
/// ```compile_fail
/// let pool = weft::pool::BoundedLocalPool::new(1, || 0u8, |_| {});
/// let g = pool.try_acquire().unwrap();
/// std::thread::spawn(move || drop(g));
/// ```
pub struct BoundedLocalPool<T> {
    core: NonNull<Core<T>>,
    _not_send: PhantomData<*mut T>,
}

impl<T> BoundedLocalPool<T> {
    /// Makes `capacity` values with `init`; `reset` runs on each value given back.
    ///
    /// The reset may drop guards of this same pool (a pooled tree whose reset clears its
    /// children): those are queued and reset after it returns, never re-entering it.
    ///
    /// # Panics
    /// If `capacity` is refused (0, or too large to reserve; [`try_new`](Self::try_new)
    /// returns that as an error instead), or if `init` panics (the values made so far are
    /// dropped).
    pub fn new(
        capacity: usize,
        init: impl FnMut() -> T,
        reset: impl FnMut(&mut T) + 'static,
    ) -> BoundedLocalPool<T> {
        match BoundedLocalPool::try_new(capacity, init, reset) {
            Ok(pool) => pool,
            Err(e) => panic!("{e}"),
        }
    }

    /// As [`new`](Self::new), with a capacity that may be refused.
    ///
    /// The pool's vector of `capacity` pointers is reserved in full before any value is
    /// made (so that a return never reallocates it), fallibly: a capacity too large for
    /// memory is refused here, before `init` is called, instead of aborting the process.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `capacity` is 0, or if the vector of `capacity`
    /// pointers cannot be reserved (more than `isize::MAX` bytes, or the allocator has no
    /// room for it).
    ///
    /// # Panics
    /// If `init` panics (the values made so far are dropped).
    ///
    /// # Examples
    /// ```
    /// use weft::{ErrorKind, pool::BoundedLocalPool};
    ///
    /// let pool = BoundedLocalPool::try_new(2, || 0u64, |v| *v = 0)?;
    /// assert_eq!(pool.capacity(), 2);
    /// let huge = BoundedLocalPool::try_new(usize::MAX, || 0u64, |v| *v = 0);
    /// assert_eq!(huge.unwrap_err().kind(), ErrorKind::InvalidArgument);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_new(
        capacity: usize,
        mut init: impl FnMut() -> T,
        reset: impl FnMut(&mut T) + 'static,
    ) -> Result<BoundedLocalPool<T>> {
        if capacity == 0 {
            return Err(Error::InvalidArgument {
                what: "capacity",
                value: 0,
                expected: "a bounded pool needs a capacity above 0",
            });
        }
        let mut made = Boxes::reserve(capacity)?;
        for _ in 0..capacity {
            // Never reallocates: reserved above.
            made.0.push(boxed(init()));
        }
        let values = mem::take(&mut made.0);
        Ok(BoundedLocalPool {
            core: Core::alloc(values, Some(capacity), Box::new(reset), None),
            _not_send: PhantomData,
        })
    }

    fn core(&self) -> &Core<T> {
        // SAFETY: the handle keeps the core alive until it drops.
        unsafe { self.core.as_ref() }
    }

    /// Lends a value, or `None` when every value is out.
    #[inline]
    pub fn try_acquire(&self) -> Option<Pooled<T>> {
        let v = self.core().pop()?;
        Some(lend(self.core, v))
    }

    /// Takes a value out of the pool as its box (no copy of `T`), or `None` when every value
    /// is out. The pool no longer counts it until [`put`](Self::put) gives it back.
    ///
    /// # Examples
    /// ```
    /// use weft::pool::BoundedLocalPool;
    ///
    /// let pool = BoundedLocalPool::new(1, || vec![0u8; 16], |v| v.fill(0));
    /// let mut buf = pool.take().unwrap();
    /// buf[0] = 1;
    /// pool.put(buf).unwrap();
    /// assert_eq!(pool.take().unwrap()[0], 0);
    /// ```
    #[inline]
    pub fn take(&self) -> Option<Box<T>> {
        let v = self.core().pop()?;
        let c = self.core();
        c.owned.set(c.owned.get() - 1);
        // SAFETY: a pool value from `Box::into_raw`, handed over whole.
        Some(unsafe { Box::from_raw(v.as_ptr()) })
    }

    /// Gives a value to the pool (it is reset first, like a dropped guard's).
    ///
    /// # Errors
    /// The value back, untouched, when the pool already owns `max_capacity` values.
    ///
    /// # Panics
    /// If the reset panics; the value is then dropped.
    pub fn put(&self, value: Box<T>) -> Result<(), Box<T>> {
        let c = self.core();
        if Some(c.owned.get()) >= c.bound {
            return Err(value);
        }
        c.owned.set(c.owned.get() + 1);
        // SAFETY: alive (the handle); the value is handed over.
        unsafe { release(self.core, into_ptr(value)) };
        Ok(())
    }

    /// Values ready to lend now.
    #[inline]
    pub fn available(&self) -> usize {
        self.core().available()
    }

    /// Values the pool owns: ready plus lent out (less than
    /// [`max_capacity`](Self::max_capacity) after `take`, `detach` or a panicking reset).
    pub fn capacity(&self) -> usize {
        self.core().owned.get()
    }

    /// The fixed bound given to [`new`](Self::new) or [`try_new`](Self::try_new).
    pub fn max_capacity(&self) -> usize {
        self.core().bound.unwrap_or(usize::MAX)
    }
}

impl<T> Drop for BoundedLocalPool<T> {
    fn drop(&mut self) {
        // SAFETY: alive; the handle is the one caller of `close` and never uses it again.
        unsafe { close(self.core) };
    }
}

impl<T> fmt::Debug for BoundedLocalPool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedLocalPool")
            .field("available", &self.available())
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// Boxes made during construction, dropped if a later `init` panics.
struct Boxes<T>(Vec<NonNull<T>>);

impl<T> Boxes<T> {
    /// An empty vector with room for `capacity` pointers, or the error naming the capacity
    /// when it cannot be reserved (a `Vec::with_capacity` would panic or abort instead).
    fn reserve(capacity: usize) -> Result<Boxes<T>> {
        let mut made = Boxes(Vec::new());
        made.0
            .try_reserve_exact(capacity)
            .map_err(|_| Error::InvalidArgument {
                what: "capacity",
                value: u64::try_from(capacity).unwrap_or(u64::MAX),
                expected: "too many values: their pointer vector cannot be reserved",
            })?;
        Ok(made)
    }
}

impl<T> Drop for Boxes<T> {
    fn drop(&mut self) {
        while let Some(v) = self.0.pop() {
            // A destructor that panics: the rest are dropped while it unwinds.
            let mut rest = Boxes(mem::take(&mut self.0));
            // SAFETY: a box made by `boxed`, not handed to anyone, off the vector.
            unsafe { drop_value(v) };
            self.0 = mem::take(&mut rest.0);
            // Holds an empty vector now (no allocation): nothing to drop.
            mem::forget(rest);
        }
    }
}

/// A growable pool for one thread: lends a ready value, or makes one with the factory when
/// none is ready; values given back are reset and kept.
///
/// `!Send` and `!Sync`. Each value lives in its own box for its whole life, so acquire and
/// release move a pointer, never the value.
///
/// # Examples
/// ```
/// use weft::pool::LocalPool;
///
/// let pool = LocalPool::new(|| Vec::<u32>::with_capacity(1024), Vec::clear);
/// let mut v = pool.acquire();
/// v.push(1);
/// drop(v);
/// assert_eq!(pool.available(), 1);
/// let v = pool.acquire();
/// assert!(v.is_empty() && v.capacity() >= 1024);
/// ```
pub struct LocalPool<T> {
    core: NonNull<Core<T>>,
    _not_send: PhantomData<*mut T>,
}

impl<T> LocalPool<T> {
    /// An empty pool: `factory` makes values on demand; `reset` runs on each value given
    /// back (it may drop guards of this same pool, see [`BoundedLocalPool::new`]).
    pub fn new(
        factory: impl FnMut() -> T + 'static,
        reset: impl FnMut(&mut T) + 'static,
    ) -> LocalPool<T> {
        LocalPool::with_capacity(0, factory, reset)
    }

    /// A pool with `capacity` values made up front.
    ///
    /// # Panics
    /// If `capacity` is too large to reserve ([`try_with_capacity`](Self::try_with_capacity)
    /// returns that as an error instead), or if the factory panics (the values made so far
    /// are dropped).
    pub fn with_capacity(
        capacity: usize,
        factory: impl FnMut() -> T + 'static,
        reset: impl FnMut(&mut T) + 'static,
    ) -> LocalPool<T> {
        match LocalPool::try_with_capacity(capacity, factory, reset) {
            Ok(pool) => pool,
            Err(e) => panic!("{e}"),
        }
    }

    /// As [`with_capacity`](Self::with_capacity), with a capacity that may be refused.
    ///
    /// The vector of `capacity` pointers is reserved before the factory is first called,
    /// fallibly: a capacity too large for memory is refused here instead of panicking
    /// inside `Vec` or aborting the process. (The pool still grows past it on demand.)
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the vector of `capacity` pointers cannot be reserved
    /// (more than `isize::MAX` bytes, or the allocator has no room for it).
    ///
    /// # Panics
    /// If the factory panics (the values made so far are dropped).
    ///
    /// # Examples
    /// ```
    /// use weft::{ErrorKind, pool::LocalPool};
    ///
    /// let pool = LocalPool::try_with_capacity(4, String::new, String::clear)?;
    /// assert_eq!(pool.available(), 4);
    /// let huge = LocalPool::try_with_capacity(usize::MAX, String::new, String::clear);
    /// assert_eq!(huge.unwrap_err().kind(), ErrorKind::InvalidArgument);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_with_capacity(
        capacity: usize,
        mut factory: impl FnMut() -> T + 'static,
        reset: impl FnMut(&mut T) + 'static,
    ) -> Result<LocalPool<T>> {
        let mut made = Boxes::reserve(capacity)?;
        for _ in 0..capacity {
            // Never reallocates: reserved above.
            made.0.push(boxed(factory()));
        }
        let values = mem::take(&mut made.0);
        Ok(LocalPool {
            core: Core::alloc(values, None, Box::new(reset), Some(Box::new(factory))),
            _not_send: PhantomData,
        })
    }

    fn core(&self) -> &Core<T> {
        // SAFETY: the handle keeps the core alive until it drops.
        unsafe { self.core.as_ref() }
    }

    #[cold]
    fn create(&self) -> NonNull<T> {
        struct Creating<'a>(&'a Cell<bool>);
        impl Drop for Creating<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let c = self.core();
        assert!(
            !c.creating.get(),
            "the factory of a LocalPool acquired from its own pool"
        );
        c.creating.set(true);
        let flag = Creating(&c.creating);
        // SAFETY: `creating` was false, so the factory is not running; reentrant calls
        // panic above instead of aliasing it. The handle is alive (we are in `&self`).
        let value = unsafe { (*c.factory.get()).as_mut().map(|f| f()) };
        drop(flag);
        let value = value.expect("a LocalPool always has a factory");
        c.owned.set(c.owned.get() + 1);
        boxed(value)
    }

    /// Lends a ready value, or a new one from the factory.
    ///
    /// # Panics
    /// If the factory panics, or if the factory itself acquires from this pool.
    #[inline]
    pub fn acquire(&self) -> Pooled<T> {
        let v = match self.core().pop() {
            Some(v) => v,
            None => self.create(),
        };
        lend(self.core, v)
    }

    /// Lends a ready value, or `None` when none is ready (the factory is not called).
    #[inline]
    pub fn try_acquire(&self) -> Option<Pooled<T>> {
        let v = self.core().pop()?;
        Some(lend(self.core, v))
    }

    /// Takes a value out of the pool as its box (no copy of `T`), made by the factory if
    /// none is ready. The pool no longer counts it.
    ///
    /// # Examples
    /// ```
    /// use weft::pool::LocalPool;
    ///
    /// let pool = LocalPool::new(|| [0u8; 4096], |b| b.fill(0));
    /// let mut page: Box<[u8; 4096]> = pool.take();
    /// page[0] = 1;
    /// pool.put(page);
    /// assert_eq!(pool.available(), 1);
    /// assert_eq!(pool.take()[0], 0);
    /// ```
    ///
    /// # Panics
    /// As [`acquire`](Self::acquire).
    #[inline]
    pub fn take(&self) -> Box<T> {
        let v = match self.core().pop() {
            Some(v) => v,
            None => self.create(),
        };
        let c = self.core();
        c.owned.set(c.owned.get() - 1);
        // SAFETY: a pool value from `Box::into_raw`, handed over whole.
        unsafe { Box::from_raw(v.as_ptr()) }
    }

    /// Takes a ready value out of the pool as its box, or `None` when none is ready.
    #[inline]
    pub fn try_take(&self) -> Option<Box<T>> {
        let v = self.core().pop()?;
        let c = self.core();
        c.owned.set(c.owned.get() - 1);
        // SAFETY: a pool value from `Box::into_raw`, handed over whole.
        Some(unsafe { Box::from_raw(v.as_ptr()) })
    }

    /// Gives a value to the pool (reset first, like a dropped guard's). Any box of `T` will
    /// do, not only one taken from this pool.
    ///
    /// # Panics
    /// If the reset panics; the value is then dropped.
    #[inline]
    pub fn put(&self, value: Box<T>) {
        let c = self.core();
        c.owned.set(c.owned.get() + 1);
        // SAFETY: alive (the handle); the value is handed over.
        unsafe { release(self.core, into_ptr(value)) };
    }

    /// Values ready to lend now.
    #[inline]
    pub fn available(&self) -> usize {
        self.core().available()
    }

    /// Values the pool owns: ready plus lent out.
    pub fn capacity(&self) -> usize {
        self.core().owned.get()
    }
}

impl<T> Drop for LocalPool<T> {
    fn drop(&mut self) {
        // SAFETY: alive; the handle is the one caller of `close` and never uses it again.
        unsafe { close(self.core) };
    }
}

impl<T> fmt::Debug for LocalPool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalPool")
            .field("available", &self.available())
            .field("capacity", &self.capacity())
            .finish()
    }
}
