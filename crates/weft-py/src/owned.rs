//! A weft handle at a stable address, used by one caller at a time, so that a grant that
//! borrows it (`StreamReader::read(&mut self) -> ReadGrant<'_>`) can live in a Python object
//! of its own.
//!
//! The Rust borrow becomes a run-time state: [`Owned::acquire`] turns `FREE` into `BUSY` and
//! returns an [`Access`] guard, the only way to reach the handle; a second caller (another
//! thread, or the same code while a grant is still held) is refused instead of waiting. A
//! grant keeps its `Access` in a [`Lent`] next to it, so the handle stays `BUSY` (and alive,
//! through the guard's `Arc`) until the grant is dropped. A close asked for while it is busy
//! from a `with` block that raised ([`Owned::close_when_free`]) is made when that guard drops.
//!
//! The handle belongs to the process that opened it (`process::Local`): in a fork's child it is
//! neither used nor dropped.

use crate::process::Local;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

const FREE: u8 = 0;
const BUSY: u8 = 1;
const CLOSED: u8 = 2;
/// Busy, and closed when the `Access` that makes it busy drops.
const CLOSING: u8 = 3;

/// A handle shared by its Python object and the grants taken from it.
pub(crate) struct Owned<T> {
    /// `FREE`, `BUSY` (one `Access` exists), `CLOSING` (one `Access` exists, and closes the
    /// handle as it drops) or `CLOSED` (the handle was dropped; for good). Written by `acquire`
    /// (FREE -> BUSY), by `Access::drop` (BUSY -> FREE, CLOSING -> CLOSED), by `Access::close`
    /// (BUSY -> CLOSED) and by `close_when_free` (BUSY -> CLOSING).
    state: AtomicU8,
    /// `Some` in every state but `CLOSED`. Reached only through an `Access`; in the process
    /// that opened it only.
    value: Local<UnsafeCell<Option<T>>>,
    /// The Python class name, for messages.
    what: &'static str,
}

// SAFETY: the value is reached only through an `Access`, and at most one exists at a time
// (the compare-exchange in `acquire`), so sharing `Owned` between threads gives no more than
// moving `T` between them (which `T: Send` allows): it is a mutex that refuses to wait.
unsafe impl<T: Send> Sync for Owned<T> {}

impl<T> std::fmt::Debug for Owned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Relaxed: a snapshot for display.
        let state = match self.state.load(Ordering::Relaxed) {
            FREE => "free",
            BUSY => "busy",
            CLOSING => "closing",
            _ => "closed",
        };
        write!(f, "{}({state})", self.what)
    }
}

impl<T> Owned<T> {
    /// Holds `value`; `what` names it in errors ("StreamReader").
    pub(crate) fn new(value: T, what: &'static str) -> Arc<Owned<T>> {
        Arc::new(Owned {
            state: AtomicU8::new(FREE),
            value: Local::new(UnsafeCell::new(Some(value))),
            what,
        })
    }

    /// Exclusive use of the handle until the guard drops.
    ///
    /// # Errors
    /// `RuntimeError` while a grant taken from it is held or another thread uses it, and in a
    /// process other than the one that opened it (a fork's child); `ValueError` once it is
    /// closed (or closing).
    pub(crate) fn acquire(self: &Arc<Self>) -> PyResult<Access<T>> {
        self.value.get(self.what)?;
        // Acquire: pairs with the Release stores and compare-exchanges in `Access::drop` and
        // `Access::close`: the previous user's writes to the value happen before ours.
        match self
            .state
            .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => Ok(Access {
                owner: self.clone(),
            }),
            Err(BUSY) => Err(PyRuntimeError::new_err(format!(
                "this {} is busy: a grant, loan or sample taken from it is still held \
                 (release it first), or another thread is using it",
                self.what
            ))),
            Err(_) => Err(closed(self.what)),
        }
    }

    /// Drops the handle (its peers see it leave). Closing twice is allowed. In a process
    /// other than the one that opened it, it does nothing (the handle is left to the opener).
    ///
    /// # Errors
    /// `RuntimeError` while it is busy.
    pub(crate) fn close(self: &Arc<Self>) -> PyResult<()> {
        if self.is_closed() {
            return Ok(());
        }
        self.acquire()?.close();
        Ok(())
    }

    /// The body of a handle's `__exit__(*args)`: `close()` when the block ended normally;
    /// when it raised, [`close_when_free`](Self::close_when_free), which raises nothing of
    /// its own over the block's exception. Never suppresses the exception.
    pub(crate) fn exit(
        self: &Arc<Self>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        close: impl FnOnce() -> PyResult<()>,
    ) -> PyResult<bool> {
        if crate::raising(args) {
            self.close_when_free();
        } else {
            close()?;
        }
        Ok(false)
    }

    /// Closes the handle now, or, while it is busy, as soon as it is free again (when the
    /// grant taken from it is released, or the other thread's call ends): for a `with` block
    /// that raised, which must not raise another exception. Does nothing in a process other
    /// than the one that opened it.
    pub(crate) fn close_when_free(self: &Arc<Self>) {
        loop {
            if self.is_closed() {
                return;
            }
            if let Ok(access) = self.acquire() {
                access.close();
                return;
            }
            // Busy (or closed meanwhile: the loop sees it). Relaxed on success: CLOSING hands
            // nothing over; the guard's holder reads it in `Access::drop` with a
            // compare-exchange, which sees this write or fails our own. Relaxed on failure:
            // the state is looked at again from the top.
            if self
                .state
                .compare_exchange(BUSY, CLOSING, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Whether the handle is closed or closing, or belongs to another process (a fork's
    /// parent): whether this process can no longer use it.
    pub(crate) fn is_closed(&self) -> bool {
        // Acquire: pairs with the Release stores in `Access::close` and `Access::drop`.
        !self.value.is_here() || matches!(self.state.load(Ordering::Acquire), CLOSED | CLOSING)
    }
}

/// The `ValueError` for a closed handle.
pub(crate) fn closed(what: &str) -> PyErr {
    PyValueError::new_err(format!("this {what} is closed"))
}

/// Exclusive use of an [`Owned`] handle.
pub(crate) struct Access<T> {
    owner: Arc<Owned<T>>,
}

impl<T> std::fmt::Debug for Access<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Access({:?})", self.owner)
    }
}

impl<T> Access<T> {
    /// The handle.
    pub(crate) fn get(&mut self) -> &mut T {
        // SAFETY: this guard exists only while the state is BUSY or CLOSING (set by our
        // compare-exchange in `acquire`, and by `close_when_free`, left only by our own drop or
        // close), so no other reference to the value exists; the value is Some, since CLOSED is
        // the only state without it and acquire never succeeds from CLOSED. The Arc keeps the
        // allocation alive. Unchecked: the guard was made by `acquire`, which checked the
        // process, and a fork's child leaks the grants that hold guards without using them.
        unsafe { &mut *self.owner.value.get_unchecked().get() }
            .as_mut()
            .expect("an open handle holds its value")
    }

    /// A pointer to the handle for an attempt repeated without the interpreter
    /// (`blocking::sliced`), where a grant made in one attempt is returned out of it.
    pub(crate) fn ptr(&mut self) -> HandlePtr<T> {
        HandlePtr(self.get())
    }

    /// Drops the handle and marks it closed.
    fn close(self) {
        // Not dropped: its drop would mark the handle FREE again.
        let this = std::mem::ManuallyDrop::new(self);
        this.drop_value();
        // SAFETY: the Arc is moved out once, and `this` is never used or dropped again, so
        // its count is released exactly once (forgetting the guard leaked it).
        drop(unsafe { std::ptr::read(&this.owner) });
    }

    /// Drops the handle and stores CLOSED; the guard is not used afterwards.
    fn drop_value(&self) {
        // SAFETY: as in `get`: the guard gives exclusive access.
        let value = unsafe { &mut *self.owner.value.get_unchecked().get() }.take();
        drop(value);
        // Release: pairs with the Acquire loads in `acquire` and `is_closed`.
        self.owner.state.store(CLOSED, Ordering::Release);
    }
}

impl<T> Drop for Access<T> {
    fn drop(&mut self) {
        if !self.owner.value.is_here() {
            // Inherited through a fork (a guard in a grant the child leaks, should one be
            // dropped): the handle is the parent's.
            return;
        }
        // Release on success: pairs with the Acquire compare-exchange in `acquire`: what we
        // did to the value happens before the next user's access. Relaxed on failure: the
        // state is CLOSING (only this guard's holder leaves BUSY or CLOSING, and
        // `close_when_free` is the only other writer), and we close, as it asked.
        if self
            .owner
            .state
            .compare_exchange(BUSY, FREE, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.drop_value();
        }
    }
}

/// The handle of a live [`Access`], as a pointer that may cross into a detached call.
pub(crate) struct HandlePtr<T>(*mut T);

// SAFETY: it stands for the `&mut T` of an `Access`, which may move to another thread when
// `T: Send`; the pointer itself is plain data.
unsafe impl<T: Send> Send for HandlePtr<T> {}

impl<T> Clone for HandlePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for HandlePtr<T> {}

impl<T> HandlePtr<T> {
    /// The handle, for any lifetime the caller needs (this is where a grant's lifetime is
    /// erased: the grant made from it is stored in a [`Lent`] with its guard).
    ///
    /// # Safety
    /// The `Access` this came from must be alive, and stay alive, for as long as the returned
    /// reference and anything borrowing from it are used; no other reference to the handle
    /// (from `Access::get` or an earlier `get` of this pointer) may be in use meanwhile.
    pub(crate) unsafe fn get<'a>(self) -> &'a mut T {
        // SAFETY: the caller keeps the Access alive and the reference unique; the pointer came
        // from `Access::get`, so it points at the handle in its Owned, which does not move while
        // an Access exists.
        unsafe { &mut *self.0 }
    }
}

/// A grant `G` that borrows the handle of `access`, stored next to the guard that makes the
/// borrow valid. The grant is dropped first, then the guard frees the handle.
pub(crate) struct Lent<T, G> {
    /// Always `Some` until `drop`/`finish`/`consume` takes it.
    grant: Option<G>,
    access: Access<T>,
}

impl<T, G> std::fmt::Debug for Lent<T, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lent({:?})", self.access)
    }
}

impl<T, G> Lent<T, G> {
    /// Keeps `grant` with the guard it borrows from.
    ///
    /// # Safety
    /// `grant` must borrow nothing but the handle behind `access` (and `'static` data): it was
    /// made from `access.get()` and its lifetime was extended to `'static` by the caller. The
    /// borrow stays valid because the handle lives in the `Arc` allocation the guard keeps
    /// alive, never moves (it is never taken out of its `Owned` while an `Access` exists), and is
    /// reached by nobody else while the guard exists (the state stays BUSY); `Lent` drops the
    /// grant before the guard, and never lets the `'static` lifetime escape (`consume` and
    /// `finish` end the grant while the guard is still held).
    pub(crate) unsafe fn new(access: Access<T>, grant: G) -> Lent<T, G> {
        Lent {
            grant: Some(grant),
            access,
        }
    }

    /// Ends the grant with `f` (a commit, say), then frees the handle.
    pub(crate) fn consume<R>(mut self, f: impl FnOnce(G) -> R) -> R {
        let grant = self
            .grant
            .take()
            .expect("a lent grant is present until consumed");
        f(grant)
        // `self` drops here: the guard frees the handle after `f` ended the grant.
    }

    /// Drops the grant and keeps the handle for more work (a reply after a request).
    pub(crate) fn finish(mut self) -> Access<T> {
        drop(self.grant.take());
        // Move the guard out without running our Drop (which only drops the grant, gone).
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so the guard is moved out exactly once.
        unsafe { std::ptr::read(&this.access) }
    }
}

impl<T, G> Drop for Lent<T, G> {
    fn drop(&mut self) {
        // The grant first: it borrows the handle that `access` (dropped after this) frees.
        drop(self.grant.take());
    }
}
