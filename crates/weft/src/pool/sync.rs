//! One-acquirer, any-thread-return object pool: returners push onto an intrusive Treiber
//! stack (R. K. Treiber, 1986); the single acquirer takes the whole stack with one `swap`
//! and then pops from its own private list with no atomics at all.
//!
//! Because only one thread ever removes from the shared stack, and it removes everything at
//! once, there is no pop-side compare-and-swap and so no ABA problem: no tags, no hazard
//! pointers. The acquirer pays one atomic swap per batch of returned values; a returner pays
//! one compare-and-swap per value.
//!
//! Shutdown: the acquirer, when dropped, closes the stack (swaps in `CLOSED`), drops every
//! value it can reach, and counts the values still out. Each value that comes back after
//! that is dropped by its returner, who counts down. Whoever brings the count to zero frees
//! the shared block (see `Shared::remaining`).

use alloc::boxed::Box;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{self, MaybeUninit};
use core::ops::{Deref, DerefMut};
use core::ptr::{self, NonNull};

use crate::sync::{AtomicPtr, AtomicUsize, Ordering, UnsafeCell};
use crate::{Error, Result};
use core::cell::Cell;

type Reset<T> = Box<dyn Fn(&mut T) + Send + Sync>;

/// One value and its link. Every node has exactly one owner at a time (the acquirer's list,
/// the shared stack, a guard, or a `Taken`), and only that owner reads or writes its fields.
struct Node<T> {
    /// The next node of the list this node is on. Written by the owner before it publishes
    /// the node (the Release CAS in `push`); read by the acquirer after its Acquire swap.
    next: UnsafeCell<*mut Node<T>>,
    /// `false` once a panicking reset dropped the value: the node comes back empty so that
    /// the acquirer's count stays exact, and is freed when collected.
    full: UnsafeCell<bool>,
    /// The value, initialised while `full`.
    value: core::cell::UnsafeCell<MaybeUninit<T>>,
}

impl<T> Node<T> {
    fn alloc(value: T) -> NonNull<Node<T>> {
        NonNull::from(Box::leak(Box::new(Node {
            next: UnsafeCell::new(ptr::null_mut()),
            full: UnsafeCell::new(true),
            value: core::cell::UnsafeCell::new(MaybeUninit::new(value)),
        })))
    }
}

/// Node accessors; each needs the caller to own the node.
///
/// # Safety (all of them)
/// `node` is alive and owned by the caller (no other thread can reach it).
unsafe fn next_of<T>(node: NonNull<Node<T>>) -> *mut Node<T> {
    // SAFETY: owned by the caller (function contract).
    unsafe { node.as_ref().next.with(|p| *p) }
}

/// # Safety
/// As [`next_of`].
unsafe fn set_next<T>(node: NonNull<Node<T>>, next: *mut Node<T>) {
    // SAFETY: owned by the caller (function contract).
    unsafe { node.as_ref().next.with_mut(|p| *p = next) }
}

/// # Safety
/// As [`next_of`].
unsafe fn is_full<T>(node: NonNull<Node<T>>) -> bool {
    // SAFETY: owned by the caller (function contract).
    unsafe { node.as_ref().full.with(|p| *p) }
}

/// # Safety
/// As [`next_of`], and the node is full.
unsafe fn value_mut<'a, T>(node: NonNull<Node<T>>) -> &'a mut T {
    // SAFETY: owned and full (function contract): the value is initialised and ours.
    unsafe { (*node.as_ref().value.get()).assume_init_mut() }
}

/// Drops the value (if any) and frees the node.
///
/// # Safety
/// As [`next_of`]; the node came from `Node::alloc` and is not used again.
unsafe fn free_node<T>(node: NonNull<Node<T>>) {
    // SAFETY: owned, from `Box::leak` in `Node::alloc` (function contract).
    let mut b = unsafe { Box::from_raw(node.as_ptr()) };
    // SAFETY: owned (contract): nothing else touches the flag.
    if b.full.with(|p| unsafe { *p }) {
        // SAFETY: full means initialised; the node is dropped right after.
        unsafe { b.value.get_mut().assume_init_drop() };
    }
    drop(b);
}

/// The marker in `Shared::head` once the acquirer is gone. Never a node address: nodes are
/// at least pointer-aligned and this is odd.
fn closed<T>() -> *mut Node<T> {
    ptr::without_provenance_mut(1)
}

/// The block shared by the acquirer and every guard.
#[repr(C, align(64))]
struct Shared<T> {
    /// Top of the stack of returned values (null: empty; `closed()`: the acquirer is gone).
    /// Pushed by any returner (CAS), emptied by the acquirer (swap). Alone on its cache
    /// line (the struct is 64-aligned and the rest is read-only or used once) because every
    /// return hits it.
    head: AtomicPtr<Node<T>>,
    /// Shutdown count, wrapping: the acquirer adds the number of guards still out when it
    /// closes, each guard that comes back after the close subtracts one (either may come
    /// first). The operation that lands on exactly 0 frees this block.
    remaining: AtomicUsize,
    /// Runs on every value given back, on the returning thread.
    reset: Reset<T>,
}

/// Gives the node back to the pool behind `shared`, or drops it if the pool is closed (and
/// then frees the shared block if it was the last thing keeping it).
///
/// # Safety
/// `shared` is alive (an outstanding guard keeps it); the caller owns `node` and gives it up.
unsafe fn push<T>(shared: NonNull<Shared<T>>, node: NonNull<Node<T>>) {
    // SAFETY: alive (contract). A local, unused after the node is handed over or after
    // `remaining` is counted down.
    let s = unsafe { shared.as_ref() };
    // Relaxed: only the value to link to is needed; the CAS below checks it.
    let mut head = s.head.load(Ordering::Relaxed);
    loop {
        if head == closed() {
            // SAFETY: alive; we own the node.
            unsafe { dispose(shared, node) };
            return;
        }
        // SAFETY: we still own the node (it is published only by a successful CAS).
        unsafe { set_next(node, head) };
        // Release: publishes the value (and its reset) and `next`; pairs with the Acquire
        // swap in `SyncPool::collect` / `Drop for SyncPool`. Failure Relaxed: we only retry.
        match s.head.compare_exchange_weak(
            head,
            node.as_ptr(),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// A returner that found the pool closed: drops the node and counts down.
///
/// # Safety
/// As [`push`].
#[cold]
unsafe fn dispose<T>(shared: NonNull<Shared<T>>, node: NonNull<Node<T>>) {
    // Count down before the value's destructor runs, so that a destructor that panics cannot
    // skip it (and leak the block). The node is a separate allocation that does not refer to
    // the block, so it outlives a free of the block here; guards of this pool inside the
    // value are counted on their own and keep the block until they come back.
    // SAFETY: alive: this guard is still counted as out.
    let s = unsafe { shared.as_ref() };
    // AcqRel: Release orders our uses of the block (the reset, the head) before a free by
    // whoever lands on 0; Acquire orders their uses before our free. Pairs with the other
    // `remaining` operations here and in `Drop for SyncPool`.
    let before = s.remaining.fetch_sub(1, Ordering::AcqRel);
    if before == 1 {
        // SAFETY: the count reached 0: the acquirer is gone and no guard is out; the block
        // came from `Box::leak` in `SyncPool::new`, and `s` is not used again.
        drop(unsafe { Box::from_raw(shared.as_ptr()) });
    }
    // SAFETY: owned (contract), not used again; it never refers to the block.
    unsafe { free_node(node) };
}

/// Frees a chain of nodes linked through `next` (values included). A value's destructor
/// that panics does not stop it: the rest of the chain is freed while the panic unwinds, as
/// `Vec`'s drop does (a second panic then aborts, as there).
///
/// # Safety
/// Every node of the chain is owned by the caller, came from `Node::alloc` (or `detach`'s
/// stand-in) and is not used again.
unsafe fn free_chain<T>(mut at: *mut Node<T>) {
    /// Only dropped while unwinding out of a value's destructor: frees the rest.
    struct Rest<T>(*mut Node<T>);
    impl<T> Drop for Rest<T> {
        fn drop(&mut self) {
            // SAFETY: the rest of a chain owned by `free_chain`'s caller, not yet freed.
            unsafe { free_chain(self.0) };
        }
    }
    while let Some(node) = NonNull::new(at) {
        // SAFETY: owned (contract); read before the node is freed.
        at = unsafe { next_of(node) };
        let rest = Rest(at);
        // SAFETY: owned (contract); freed once, off the chain.
        unsafe { free_node(node) };
        mem::forget(rest);
    }
}

/// A value lent by a [`SyncPool`]. `Send` (when `T` is): drop it on any thread and it goes
/// back through the reset (run on that thread) to the pool, lock-free.
///
/// The value stays in the node the pool made for it: nothing moves on acquire or return.
/// A guard may outlive its pool; the value is then dropped with the guard.
///
/// # Examples
/// ```
/// use weft::pool::SyncPool;
///
/// let pool = SyncPool::new(1, || Vec::<u8>::with_capacity(64), Vec::clear);
/// let mut buf = pool.try_acquire().unwrap();
/// buf.push(1);
/// std::thread::spawn(move || drop(buf)).join().unwrap();
/// assert!(pool.try_acquire().unwrap().is_empty());
/// ```
#[must_use = "dropping the guard gives the value straight back to the pool"]
pub struct SyncPooled<T> {
    node: NonNull<Node<T>>,
    shared: NonNull<Shared<T>>,
    _owns: PhantomData<T>,
}

// SAFETY: the guard owns its value (moving the guard moves the ownership, the value is
// dropped or reset on the receiving thread: `T: Send`); the shared block is thread-safe (its
// reset closure is `Send + Sync`, its fields atomics).
unsafe impl<T: Send> Send for SyncPooled<T> {}
// SAFETY: `&SyncPooled` gives only `&T`.
unsafe impl<T: Sync> Sync for SyncPooled<T> {}

impl<T> SyncPooled<T> {
    /// Takes the value out of the pool for good, as a [`Taken`] (no copy of `T`).
    ///
    /// The value no longer counts as out; [`SyncPool::put`] can give it back.
    ///
    /// # Examples
    /// ```
    /// use weft::pool::SyncPool;
    ///
    /// let pool = SyncPool::new(1, || 5u64, |_| {});
    /// let kept = pool.try_acquire().unwrap().detach();
    /// assert_eq!(*kept, 5);
    /// drop(pool); // `kept` is not the pool's any more
    /// assert_eq!(kept.into_inner(), 5);
    /// ```
    pub fn detach(self) -> Taken<T> {
        let this = mem::ManuallyDrop::new(self);
        // The pool still counts the node; hand it an empty stand-in so its count stays
        // exact (freed when collected), and keep the value's node.
        let stand_in: NonNull<Node<T>> = NonNull::from(Box::leak(Box::new(Node {
            next: UnsafeCell::new(ptr::null_mut()),
            full: UnsafeCell::new(false),
            value: core::cell::UnsafeCell::new(MaybeUninit::uninit()),
        })));
        // SAFETY: the guard keeps the block alive; the stand-in is ours to give.
        unsafe { push(this.shared, stand_in) };
        Taken { node: this.node }
    }
}

impl<T> Deref for SyncPooled<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard owns its full node until it drops.
        unsafe { (*self.node.as_ref().value.get()).assume_init_ref() }
    }
}

impl<T> DerefMut for SyncPooled<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: owned and full; `&mut self` makes this the only borrow.
        unsafe { value_mut(self.node) }
    }
}

impl<T> Drop for SyncPooled<T> {
    #[inline]
    fn drop(&mut self) {
        /// Runs only when the reset panics: drop the value and send the node back empty.
        struct OnUnwind<T> {
            node: NonNull<Node<T>>,
            shared: NonNull<Shared<T>>,
        }
        impl<T> Drop for OnUnwind<T> {
            fn drop(&mut self) {
                // SAFETY: owned and full; the value is dropped in place and marked gone.
                unsafe {
                    (*self.node.as_ref().value.get()).assume_init_drop();
                    self.node.as_ref().full.with_mut(|p| *p = false);
                    push(self.shared, self.node);
                }
            }
        }
        // SAFETY: the guard keeps the block alive (it is counted as out).
        let s = unsafe { self.shared.as_ref() };
        // Relaxed: a hint only; `push` decides under its CAS.
        if s.head.load(Ordering::Relaxed) != closed() {
            let scope = OnUnwind {
                node: self.node,
                shared: self.shared,
            };
            // SAFETY: owned and full. The reset is `Fn`: a nested call (a reset that drops
            // guards of this pool) only shares it. Nested calls are not queued, so a deep
            // pooled tree nests one reset per level (see "Deep trees" on `SyncPool`).
            (s.reset)(unsafe { value_mut(self.node) });
            mem::forget(scope);
        }
        // SAFETY: alive; the node is given up here.
        unsafe { push(self.shared, self.node) };
    }
}

impl<T: fmt::Debug> fmt::Debug for SyncPooled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SyncPooled").field(&**self).finish()
    }
}

/// A value taken out of a [`SyncPool`] (or made with [`Taken::new`]): an owned box of `T` that
/// [`SyncPool::put`] accepts back without copying `T`. Dropping it drops the value.
///
/// # Examples
/// ```
/// use weft::pool::{SyncPool, Taken};
///
/// let pool = SyncPool::new(0, || [0u8; 4096], |b| b.fill(0));
/// pool.put(Taken::new([1u8; 4096]));
/// let page = pool.take().unwrap();
/// assert_eq!(page[4095], 0); // reset by `put`
/// ```
pub struct Taken<T> {
    node: NonNull<Node<T>>,
}

// SAFETY: a `Taken` owns its node and value outright, like a `Box<T>`.
unsafe impl<T: Send> Send for Taken<T> {}
// SAFETY: `&Taken` gives only `&T`.
unsafe impl<T: Sync> Sync for Taken<T> {}

impl<T> Taken<T> {
    /// Boxes `value` in the node layout the pool uses.
    pub fn new(value: T) -> Taken<T> {
        Taken {
            node: Node::alloc(value),
        }
    }

    /// The value itself (this moves it out of its box).
    pub fn into_inner(self) -> T {
        let this = mem::ManuallyDrop::new(self);
        // SAFETY: owned and full; read once, then the node is freed without the value.
        unsafe {
            let value = (*this.node.as_ref().value.get()).assume_init_read();
            this.node.as_ref().full.with_mut(|p| *p = false);
            free_node(this.node);
            value
        }
    }
}

impl<T> Deref for Taken<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a `Taken` owns its full node.
        unsafe { (*self.node.as_ref().value.get()).assume_init_ref() }
    }
}

impl<T> DerefMut for Taken<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: owned and full; `&mut self` makes this the only borrow.
        unsafe { value_mut(self.node) }
    }
}

impl<T> Drop for Taken<T> {
    fn drop(&mut self) {
        // SAFETY: owned, from `Node::alloc`, not used again.
        unsafe { free_node(self.node) };
    }
}

impl<T: fmt::Debug> fmt::Debug for Taken<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Taken").field(&**self).finish()
    }
}

/// A pool with one acquiring thread and returns from any thread, lock-free.
///
/// `SyncPool` is the acquirer: `Send` (it may move to another thread) but neither `Sync` nor
/// `Clone`, so exactly one thread acquires at a time, which the compiler checks. Its guards
/// ([`SyncPooled`]) are `Send`; dropping one on any thread resets the value there and pushes
/// it back with one compare-and-swap. The acquirer pops from a private list and refills it
/// from the returns with one atomic swap when it runs dry.
///
/// Each value lives in one heap node for its whole life: acquire and return move a pointer,
/// never the value, so a 4 KiB `T` costs what a `u64` costs.
///
/// # Examples
/// ```
/// use weft::pool::SyncPool;
/// use std::sync::mpsc;
///
/// let pool = SyncPool::new(4, || vec![0u8; 1500], |p| p.fill(0));
/// let (tx, rx) = mpsc::channel();
/// let worker = std::thread::spawn(move || {
///     for packet in rx {
///         let packet: weft::pool::SyncPooled<Vec<u8>> = packet;
///         assert_eq!(packet[0], 0xAB);
///     } // each packet goes back to the pool here
/// });
/// for _ in 0..100 {
///     let mut p = loop {
///         if let Some(p) = pool.try_acquire() { break p; }
///         std::thread::yield_now();
///     };
///     p[0] = 0xAB;
///     tx.send(p).unwrap();
/// }
/// drop(tx);
/// worker.join().unwrap();
/// assert_eq!(pool.available(), 4);
/// ```
///
/// # Deep trees reset recursively
///
/// Unlike the local pools, a `SyncPool` does not queue the guards a reset drops: each runs
/// its own reset at once, nested inside the reset that dropped it, on the same thread. A
/// pooled tree whose reset clears its children is reset recursively, one nested reset per
/// level of depth, and a chain deeper than the returning thread's stack allows overflows it,
/// which aborts the process. Measured on x86-64 with a reset that clears a `Vec` of child
/// guards, on a thread with a 2 MiB stack (the default for spawned threads): a
/// 20,000-deep chain returned and a 40,000-deep one overflowed in an optimised build;
/// 5,000 and 10,000 unoptimised. Keep pooled trees shallow on this pool (or return deep
/// chains level by level: move the children out of the value before dropping its guard,
/// and drop them in a loop), or pool them in a [`LocalPool`](super::LocalPool), whose
/// resets are iterative.
///
/// There is one acquirer: it cannot be cloned,
/// ```compile_fail
/// let pool = weft::pool::SyncPool::new(1, || 0u8, |_| {});
/// let second = pool.clone();
/// ```
/// nor shared between threads:
/// ```compile_fail
/// let pool = weft::pool::SyncPool::new(1, || 0u8, |_| {});
/// std::thread::scope(|s| {
///     s.spawn(|| pool.try_acquire());
/// });
/// ```
pub struct SyncPool<T> {
    shared: NonNull<Shared<T>>,
    /// The acquirer's own free list (linked through `Node::next`), null when empty.
    local: Cell<*mut Node<T>>,
    /// Nodes that belong to the pool: on `local`, on the shared stack, or lent out.
    owned: Cell<usize>,
    _owns: PhantomData<T>,
}

// SAFETY: the acquirer may move to another thread: it owns its private list (values of a
// `T: Send`) and the block is thread-safe. It stays `!Sync` (the `Cell`s), so one thread
// acquires at a time.
unsafe impl<T: Send> Send for SyncPool<T> {}

impl<T> SyncPool<T> {
    /// Makes `capacity` values with `init`; `reset` runs on every value given back, on the
    /// thread giving it back (it may drop guards of this same pool).
    ///
    /// # Panics
    /// If `capacity` is refused ([`try_new`](Self::try_new) returns that as an error
    /// instead), or if `init` panics (the values made so far are dropped).
    pub fn new(
        capacity: usize,
        init: impl FnMut() -> T,
        reset: impl Fn(&mut T) + Send + Sync + 'static,
    ) -> SyncPool<T> {
        match SyncPool::try_new(capacity, init, reset) {
            Ok(pool) => pool,
            Err(e) => panic!("{e}"),
        }
    }

    /// As [`new`](Self::new), with a capacity that may be refused.
    ///
    /// Each value gets its own node, allocated one at a time (there is no vector to reserve
    /// up front). A capacity whose nodes could not all exist at once (more than
    /// `isize::MAX` bytes of nodes) is refused before `init` is called. Below that, the
    /// capacity is made as asked: memory running out while the nodes are made ends in the
    /// allocation failure handler (an abort), as with any `Box::new`, so ask for the values
    /// the program means to hold, and let [`acquire_or_else`](Self::acquire_or_else) grow
    /// the pool past them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `capacity` nodes of `T` would not fit in the address
    /// space.
    ///
    /// # Panics
    /// If `init` panics (the values made so far are dropped).
    ///
    /// # Examples
    /// ```
    /// use weft::{ErrorKind, pool::SyncPool};
    ///
    /// let pool = SyncPool::try_new(2, || 0u64, |v| *v = 0)?;
    /// assert_eq!(pool.capacity(), 2);
    /// let huge = SyncPool::try_new(usize::MAX, || (), |_| {});
    /// assert_eq!(huge.unwrap_err().kind(), ErrorKind::InvalidArgument);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_new(
        capacity: usize,
        mut init: impl FnMut() -> T,
        reset: impl Fn(&mut T) + Send + Sync + 'static,
    ) -> Result<SyncPool<T>> {
        let bytes = capacity.checked_mul(mem::size_of::<Node<T>>());
        if bytes.is_none_or(|b| b > isize::MAX.unsigned_abs()) {
            return Err(Error::InvalidArgument {
                what: "capacity",
                value: u64::try_from(capacity).unwrap_or(u64::MAX),
                expected: "too many values: their nodes would not fit in the address space",
            });
        }
        let shared = NonNull::from(Box::leak(Box::new(Shared {
            head: AtomicPtr::new(ptr::null_mut()),
            remaining: AtomicUsize::new(0),
            reset: Box::new(reset),
        })));
        let pool = SyncPool {
            shared,
            local: Cell::new(ptr::null_mut()),
            owned: Cell::new(0),
            _owns: PhantomData,
        };
        for _ in 0..capacity {
            // Should `init` panic, dropping `pool` frees what was made so far.
            let node = Node::alloc(init());
            pool.push_local(node);
            pool.owned.set(pool.owned.get() + 1);
        }
        Ok(pool)
    }

    fn shared(&self) -> &Shared<T> {
        // SAFETY: the acquirer keeps the block alive (it frees it, or counts it over to the
        // guards, only in its `Drop`).
        unsafe { self.shared.as_ref() }
    }

    fn push_local(&self, node: NonNull<Node<T>>) {
        // SAFETY: the node is ours (just made, or handed to us).
        unsafe { set_next(node, self.local.get()) };
        self.local.set(node.as_ptr());
    }

    /// Moves everything returned so far onto the private list; returns the first node.
    #[inline]
    fn collect(&self) -> *mut Node<T> {
        // Relaxed peek first: an empty stack costs no read-modify-write (nor does it steal
        // the line from a returner).
        if self.shared().head.load(Ordering::Relaxed).is_null() {
            return ptr::null_mut();
        }
        // Acquire: pairs with the Release CAS in `push`, so every returned node's value and
        // `next` are visible. Swapping in null leaves the returners an empty stack.
        self.shared().head.swap(ptr::null_mut(), Ordering::Acquire)
    }

    /// Pops a full node from the private list (refilled from the returns when empty);
    /// frees the empty nodes a panicking reset sent back.
    #[inline]
    fn pop_node(&self) -> Option<NonNull<Node<T>>> {
        loop {
            let mut top = self.local.get();
            if top.is_null() {
                top = self.collect();
            }
            let node = NonNull::new(top)?;
            // SAFETY: the node came off our private list or our swap: ours.
            self.local.set(unsafe { next_of(node) });
            // SAFETY: ours, as above.
            if unsafe { is_full(node) } {
                return Some(node);
            }
            self.lose(node);
        }
    }

    #[cold]
    fn lose(&self, node: NonNull<Node<T>>) {
        self.owned.set(self.owned.get() - 1);
        // SAFETY: ours, an empty node: nothing else refers to it.
        unsafe { free_node(node) };
    }

    /// Lends a value, or `None` when none is ready.
    #[inline]
    pub fn try_acquire(&self) -> Option<SyncPooled<T>> {
        let node = self.pop_node()?;
        Some(SyncPooled {
            node,
            shared: self.shared,
            _owns: PhantomData,
        })
    }

    /// Lends a ready value, or a new one from `make` when none is ready (the pool grows by
    /// one).
    pub fn acquire_or_else(&self, make: impl FnOnce() -> T) -> SyncPooled<T> {
        let node = match self.pop_node() {
            Some(n) => n,
            None => {
                let n = Node::alloc(make());
                self.owned.set(self.owned.get() + 1);
                n
            }
        };
        SyncPooled {
            node,
            shared: self.shared,
            _owns: PhantomData,
        }
    }

    /// Takes a value out of the pool as a [`Taken`] (no copy of `T`), or `None` when none is
    /// ready. The pool no longer counts it.
    pub fn take(&self) -> Option<Taken<T>> {
        let node = self.pop_node()?;
        self.owned.set(self.owned.get() - 1);
        Some(Taken { node })
    }

    /// Gives a value to the pool, reset first on this thread (no atomics: it goes straight
    /// onto the acquirer's own list). Any [`Taken`] will do.
    ///
    /// To give a value back from another thread, keep it in its guard ([`SyncPooled`]) and
    /// drop that there.
    ///
    /// # Panics
    /// If the reset panics; the value is then dropped.
    pub fn put(&self, mut value: Taken<T>) {
        (self.shared().reset)(&mut value);
        let node = mem::ManuallyDrop::new(value).node;
        self.push_local(node);
        self.owned.set(self.owned.get() + 1);
    }

    /// Values ready to lend now (collects the returns first, and frees the empty nodes sent
    /// back for detached values and panicking resets, so that [`capacity`](Self::capacity)
    /// is exact afterwards). Walks the free list: O(n), for diagnostics rather than the hot
    /// path.
    pub fn available(&self) -> usize {
        let mut got = self.collect();
        let mut at = self.local.replace(ptr::null_mut());
        let mut n = 0;
        for list in [&mut got, &mut at] {
            while let Some(node) = NonNull::new(*list) {
                // SAFETY: from our swap or our private list: ours.
                *list = unsafe { next_of(node) };
                // SAFETY: ours, as above.
                if unsafe { is_full(node) } {
                    n += 1;
                    self.push_local(node);
                } else {
                    self.lose(node);
                }
            }
        }
        n
    }

    /// Values the pool owns: ready plus lent out.
    ///
    /// A value that leaves the pool from a guard, on any thread (a guard's
    /// [`detach`](SyncPooled::detach), or a reset that panics and drops it), sends an empty
    /// node back in its place, and stays counted here until the acquirer frees that node:
    /// [`available`](Self::available) frees every one returned before it collects, an
    /// acquire frees the ones it passes on the private list. Values taken by
    /// [`take`](Self::take) leave the count at once.
    pub fn capacity(&self) -> usize {
        self.owned.get()
    }
}

impl<T> Drop for SyncPool<T> {
    fn drop(&mut self) {
        // Acquire: pairs with the Release CAS in `push` (the nodes we free were returned
        // whole). From here on a returner sees `closed()` and drops its own value.
        let returned = self.shared().head.swap(closed(), Ordering::Acquire);
        // Count the nodes we hold and join the two lists into one chain, before any value's
        // destructor (user code, which may panic) runs: the count of guards still out is
        // published first, so a panic cannot skip it.
        let all = self.local.replace(ptr::null_mut());
        let mut held = 0usize;
        let mut tail: Option<NonNull<Node<T>>> = None;
        let mut at = all;
        while let Some(node) = NonNull::new(at) {
            held += 1;
            tail = Some(node);
            // SAFETY: on our private list: ours.
            at = unsafe { next_of(node) };
        }
        let all = match tail {
            // SAFETY: the last node of our private list: ours.
            Some(last) => unsafe {
                set_next(last, returned);
                all
            },
            None => returned,
        };
        let mut at = returned;
        while let Some(node) = NonNull::new(at) {
            held += 1;
            // SAFETY: from our swap: ours.
            at = unsafe { next_of(node) };
        }
        let out = self.owned.get() - held;
        // AcqRel: pairs with the `fetch_sub` in `dispose` (see there).
        let before = self.shared().remaining.fetch_add(out, Ordering::AcqRel);
        if before.wrapping_add(out) == 0 {
            // SAFETY: nothing is out and the acquirer is going: the block is unreachable;
            // it came from `Box::leak` in `new`. Our nodes are separate allocations.
            drop(unsafe { Box::from_raw(self.shared.as_ptr()) });
        }
        // The block is not touched from here on: once the count is published, the last
        // guard to come back may free it. A value's destructor that drops guards of this
        // pool finds it closed and counts down on its own.
        // SAFETY: the joined chain is ours (private list and our swap), each node once.
        unsafe { free_chain(all) };
    }
}

impl<T> fmt::Debug for SyncPool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncPool")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}
