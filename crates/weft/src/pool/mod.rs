//! Object pools: reuse values (buffers, messages, nodes) instead of allocating them.
//!
//! | type | threads | size | manual form |
//! |---|---|---|---|
//! | [`BoundedLocalPool`] | one (`!Send`) | fixed, made up front | `take` / `put` with `Box<T>` |
//! | [`LocalPool`] | one (`!Send`) | grows with a factory | `take` / `put` with `Box<T>` |
//! | [`SyncPool`] | one acquirer, returns from any thread | made up front, grows on demand with [`SyncPool::acquire_or_else`] | `take` / `put` with [`Taken<T>`] |
//!
//! Every pool lends a guard ([`Pooled`], [`SyncPooled`]) that derefs to the value and gives it
//! back on drop, through the pool's reset closure.
//!
//! # Values never move
//!
//! Each value is boxed once, when it is made, and stays at that address until it is dropped.
//! Acquire, release, `take` and `put` move a pointer, never the value, so a 4 KiB `T` costs
//! the same as a `u64` (a pool that keeps its values in a `Vec<T>` copies the whole value out
//! on every acquire and back on every release). The price is one allocation per value over the
//! pool's life, and values that are not contiguous in memory. The manual form follows from
//! it: the local pools hand out the value's own `Box<T>`; [`SyncPool`] keeps its link beside
//! the value in one node and hands out that node as a [`Taken<T>`].
//!
//! # Reset closures that re-enter the pool
//!
//! A reset may drop guards of its own pool: a tree of pooled nodes whose reset clears its
//! children is the common case. That is sound here, and it is tested under miri:
//! - the local pools never hold a borrow of their state across user code, and never run the
//!   reset closure inside itself: a value released while a reset runs is queued and reset by
//!   the outer release after the running reset returns (iteratively, so a deep tree does not
//!   grow the stack);
//! - [`SyncPool`]'s reset is `Fn + Send + Sync` (it runs on the returning thread); a nested
//!   call only shares it, and a nested return is one more lock-free push. Nested returns are
//!   not queued: a deep tree is reset recursively, one nested reset per level, and a chain
//!   deeper than the returning thread's stack allows overflows it (see [`SyncPool`]'s
//!   "Deep trees" for measured depths).
//!
//! # A reset that panics
//!
//! The value being reset is dropped, not given back, and the panic goes on to the caller of
//! the drop (or of `put`). Nothing is lost silently: the pool's count of the values it owns
//! (`capacity()`) goes down by exactly one, and every other value stays the pool's (values
//! queued behind the panicking reset are reset by the next release or acquire). In a
//! [`SyncPool`] the value is dropped on the returning thread and its empty node is sent back,
//! so the acquirer's count drops when it next collects the returns.
//!
//! # Shutdown
//!
//! Guards may outlive their pool. Dropping the pool drops the values it holds; a guard that
//! comes back later drops its value; the pool's bookkeeping is freed by whichever goes last.
//! Every value is dropped exactly once and nothing leaks, even when a value's destructor
//! panics: the panic goes on to the caller of the drop, and the values after it are still
//! dropped while it unwinds (as `Vec`'s drop does; a second panic then aborts), and the
//! bookkeeping is still freed.
//!
//! # Capacities
//!
//! The constructors that make values up front have fallible forms
//! ([`BoundedLocalPool::try_new`], [`LocalPool::try_with_capacity`], [`SyncPool::try_new`])
//! that refuse a capacity they cannot reserve with [`Error::InvalidArgument`](crate::Error)
//! instead of panicking inside `Vec` or aborting; the infallible forms panic with that
//! error.
//!
//! # Examples
//! ```
//! use weft::pool::LocalPool;
//!
//! struct Node {
//!     children: Vec<weft::pool::Pooled<Node>>,
//! }
//! let pool = LocalPool::new(|| Node { children: Vec::new() }, |n: &mut Node| n.children.clear());
//! let mut root = pool.acquire();
//! let leaf = pool.acquire();
//! root.children.push(leaf);
//! drop(root); // the reset drops `leaf`, a guard of the same pool
//! assert_eq!(pool.available(), 2);
//! ```

mod local;
mod sync;

pub use local::{BoundedLocalPool, LocalPool, Pooled};
pub use sync::{SyncPool, SyncPooled, Taken};

#[cfg(all(test, not(loom), feature = "std"))]
mod tests;

#[cfg(all(test, loom))]
#[path = "tests/loom_sync.rs"]
mod loom_sync;
