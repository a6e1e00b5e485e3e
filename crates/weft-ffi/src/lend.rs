//! An owner at a stable heap address together with at most one value that borrows it
//! mutably, the borrow checked at run time instead of by the compiler.
//!
//! weft's grants borrow their handle (`StreamReader::read(&mut self) -> ReadGrant<'_>`), so
//! Rust code cannot touch the reader while it holds a grant. C holds the handle and the grant
//! apart in time (read, use the bytes, release), so a handle at the boundary keeps both in
//! one [`Lent`]: the owner boxed once, the grant with its lifetime erased to `'static`, and
//! the rule that the owner is reachable only while nothing is lent, checked on every call.

use crate::error::{Failure, Res};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// An owner `O` and at most one `B` that borrows it (`B` is a `'a` type such as
/// `ReadGrant<'a>` named at `'static`).
///
/// Invariants:
/// - `owner` comes from `Box::leak` in [`Lent::new`] and is freed only in `Drop`, so the
///   owner never moves and outlives every borrow made from it;
/// - while `held` is `Some`, the only reference to the owner is the one inside `held`; every
///   other access goes through [`Lent::owner`], which refuses while something is lent;
/// - a `B` never leaves the cell except inside [`Lent::take`], whose caller consumes it
///   before touching the cell again;
/// - a cell that lends is never passed by value to a function: it lives inside a boxed handle
///   and is dropped in place. (A by-value argument protects the references inside it for the
///   whole call, and `Drop` frees the owner within that call; miri reports it.)
#[derive(Debug)]
pub(crate) struct Lent<O: 'static, B: 'static> {
    /// Borrows `*owner` when `Some`. Emptied in `Drop` before the owner is freed.
    held: Option<B>,
    owner: NonNull<O>,
    /// The cell owns the `O` behind `owner`.
    _owns: PhantomData<Box<O>>,
}

impl<O: 'static, B: 'static> Lent<O, B> {
    /// Boxes `owner` at its final address; nothing is lent yet.
    pub(crate) fn new(owner: O) -> Lent<O, B> {
        Lent {
            held: None,
            owner: NonNull::from(Box::leak(Box::new(owner))),
            _owns: PhantomData,
        }
    }

    /// The owner, for a call that is not a grant: refused while something is lent.
    pub(crate) fn owner(&mut self, what: &str) -> Res<&mut O> {
        if self.held.is_some() {
            return Err(Failure::state(format!(
                "{what}: the handle is lending a grant; release (or commit) it first"
            )));
        }
        // SAFETY: `owner` is live and unmoved (invariant 1); nothing is lent (checked above),
        // so no other reference to it exists, and the one returned is tied to `&mut self`, so
        // nothing can be lent while it is used.
        Ok(unsafe { self.owner.as_mut() })
    }

    /// What is lent now, if anything.
    pub(crate) fn held(&mut self) -> Option<&mut B> {
        self.held.as_mut()
    }

    /// Makes a borrower from the owner with `make` and keeps it: refused while something is
    /// lent already. On an error from `make` nothing is lent.
    ///
    /// # Safety
    /// `make` may use the `&'static mut O` it is given only to build the `B` it returns: it
    /// must not keep the reference (or anything derived from it) anywhere else. The real
    /// lifetime of the borrow is the time the `B` stays in this cell.
    pub(crate) unsafe fn lend(
        &mut self,
        what: &str,
        make: impl FnOnce(&'static mut O) -> Res<B>,
    ) -> Res<&mut B> {
        if self.held.is_some() {
            return Err(Failure::state(format!(
                "{what}: the handle is lending a grant already; release (or commit) it first"
            )));
        }
        // SAFETY: `owner` is live, unmoved until Drop, which empties `held` first (invariant
        // 1), so the owner outlives the borrow although its lifetime is written 'static.
        // Nothing is lent (checked above) and `&mut self` excludes any other access, so this
        // is the only reference; from here on it lives only inside `held` (the contract of
        // `make`), and `owner()` refuses while `held` is Some (invariant 2).
        let owner: &'static mut O = unsafe { &mut *self.owner.as_ptr() };
        let b = make(owner)?;
        Ok(self.held.insert(b))
    }

    /// Takes what is lent out of the cell, to consume it (commit, reply) or drop it.
    ///
    /// # Safety
    /// The caller consumes or drops the returned `B` before it uses this cell again (and
    /// before the cell drops): once `held` is empty, [`Lent::owner`] hands out the owner,
    /// which must not alias the borrow inside a `B` still alive.
    pub(crate) unsafe fn take(&mut self) -> Option<B> {
        self.held.take()
    }

    /// Drops what is lent (a release); `false` if nothing was.
    pub(crate) fn release(&mut self) -> bool {
        self.held.take().is_some()
    }
}

impl<O: 'static, B: 'static> Drop for Lent<O, B> {
    fn drop(&mut self) {
        // The borrower first: it may still use the owner while it drops (a read grant
        // releases its record through the reader).
        self.held = None;
        // SAFETY: `owner` came from Box::leak in `new` and is freed only here; nothing borrows
        // it any more (`held` was just emptied, and `take`'s callers consume what they take
        // before the cell is used or dropped).
        drop(unsafe { Box::from_raw(self.owner.as_ptr()) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A borrower that writes into its owner when it drops, like a read grant.
    #[derive(Debug)]
    struct Grant<'a>(&'a mut Vec<&'static str>);
    impl Drop for Grant<'_> {
        fn drop(&mut self) {
            self.0.push("released");
        }
    }

    #[test]
    fn the_owner_is_refused_while_lent_and_the_grant_drops_first() {
        let mut cell: Lent<Vec<&'static str>, Grant<'static>> = Lent::new(Vec::new());
        cell.owner("push").unwrap().push("first");
        // SAFETY: the closure only builds the grant from the reference.
        unsafe { cell.lend("grant", |v| Ok(Grant(v))) }.unwrap();
        assert!(cell.held().is_some());
        assert!(cell.owner("push").is_err());
        // SAFETY: as above.
        assert!(unsafe { cell.lend("grant", |v| Ok(Grant(v))) }.is_err());
        assert!(cell.release());
        assert!(!cell.release());
        assert_eq!(cell.owner("read").unwrap(), &["first", "released"]);
        // SAFETY: as above.
        unsafe { cell.lend("grant", |v| Ok(Grant(v))) }.unwrap();
        // Closed as a handle is: the cell lives in a Box and is dropped in place, and the
        // grant writes into the owner as it drops (miri checks the order and the aliasing).
        let handle = Box::new(cell);
        drop(handle);
    }

    #[test]
    fn a_taken_grant_is_consumed_before_the_owner_is_used_again() {
        let mut cell: Lent<Vec<&'static str>, Grant<'static>> = Lent::new(Vec::new());
        // SAFETY: the closure only builds the grant from the reference.
        unsafe { cell.lend("grant", |v| Ok(Grant(v))) }.unwrap();
        // SAFETY: the grant is consumed (dropped, like a commit) on the next line.
        let grant = unsafe { cell.take() }.unwrap();
        drop(grant);
        assert_eq!(cell.owner("read").unwrap(), &["released"]);
        // SAFETY: as above; `make` fails, so nothing is lent.
        let e = unsafe { cell.lend("grant", |_| Err(Failure::arg("refused"))) }.unwrap_err();
        assert!(format!("{e:?}").contains("refused"));
        assert!(cell.held().is_none());
        assert!(cell.owner("push").is_ok());
    }
}
