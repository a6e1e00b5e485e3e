//! Values that stay with the process that made them: a fork's child inherits every Python
//! object of its parent, but the weft handles, grants, loans and samples inside them stand for
//! the parent's rows, reference counts and cursors in shared memory. Dropping them in the child
//! (at its interpreter's exit, say) would release the parent's state under its feet, and using
//! them would act as the parent.
//!
//! A [`Local`] records the process that made its value. In any other process it refuses to
//! hand the value out (`RuntimeError`), and its drop forgets the value instead of dropping it:
//! the child leaks what it inherited and the parent's shared state is untouched. Every Python
//! object that owns weft state keeps it in a `Local` (through `owned::Owned`, `view::View`, or
//! directly: `Publisher`, `Subscriber`).
//!
//! The process id is read from [`current`], a copy kept up to date by an `os.register_at_fork`
//! hook: a `getpid` system call on every method call would cost more than the call itself.
//! Forks made through `os.fork` (`multiprocessing`'s "fork" start method, `os.forkpty`) run the
//! hook; a `fork()` made from C without `PyOS_AfterFork_Child` does not, and is not seen.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU32, Ordering};

/// This process's id: set when the module is imported, updated in a fork's child by
/// [`after_fork_in_child`]. 0 before the import (no `Local` exists then).
static PID: AtomicU32 = AtomicU32::new(0);

/// This process's id (see the module docs).
pub(crate) fn current() -> u32 {
    // Relaxed: the store is made by this very thread (at import, or in the child's fork hook,
    // which runs on the thread that forked, the only one the child has) before any other thread
    // of this process exists or can reach a `Local`; other threads read it through the
    // interpreter's own synchronisation (the GIL hand-over), not through this atomic.
    PID.load(Ordering::Relaxed)
}

/// Records this process's id and registers the hook that updates it in a fork's child.
///
/// # Errors
/// As `os.register_at_fork`.
pub(crate) fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Relaxed: see `current`.
    PID.store(std::process::id(), Ordering::Relaxed);
    let hook = wrap_pyfunction!(after_fork_in_child, m)?;
    let kwargs = pyo3::types::PyDict::new(m.py());
    kwargs.set_item("after_in_child", hook)?;
    m.py()
        .import("os")?
        .call_method("register_at_fork", (), Some(&kwargs))?;
    Ok(())
}

/// Run by the interpreter in a fork's child (`os.register_at_fork`).
#[pyfunction]
fn after_fork_in_child() {
    // Relaxed: see `current`; the child has one thread now.
    PID.store(std::process::id(), Ordering::Relaxed);
}

/// A value that belongs to the process that made it (see the module docs).
pub(crate) struct Local<T> {
    /// The process that made it.
    pid: u32,
    /// Dropped by our drop in that process only; forgotten in any other.
    value: ManuallyDrop<T>,
}

impl<T> std::fmt::Debug for Local<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Local(pid {})", self.pid)
    }
}

impl<T> Local<T> {
    /// `value`, made by this process.
    pub(crate) fn new(value: T) -> Local<T> {
        Local {
            pid: current(),
            value: ManuallyDrop::new(value),
        }
    }

    /// Whether this is the process that made it.
    pub(crate) fn is_here(&self) -> bool {
        self.pid == current()
    }

    /// The value, in the process that made it.
    ///
    /// # Errors
    /// `RuntimeError` in any other process (a fork's child); `what` names the Python class.
    pub(crate) fn get(&self, what: &str) -> PyResult<&T> {
        if self.is_here() {
            Ok(&self.value)
        } else {
            Err(inherited(what, self.pid))
        }
    }

    /// The value, in whatever process: for a caller that reached it through [`Local::get`]
    /// already (`owned::Access`, made by a checked `acquire`).
    pub(crate) fn get_unchecked(&self) -> &T {
        &self.value
    }
}

impl<T> Drop for Local<T> {
    fn drop(&mut self) {
        if self.is_here() {
            // SAFETY: the value is dropped here only, once (this is our drop), and never used
            // again.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        }
        // Anywhere else the value is leaked: its drop would release the state of the process
        // that made it (the parent of this fork), which still uses it.
    }
}

/// The `RuntimeError` for a `what` used in a process other than `pid`, which made it.
fn inherited(what: &str, pid: u32) -> PyErr {
    PyRuntimeError::new_err(format!(
        "this {what} was made by process {pid}, and this process ({}) inherited it through a \
         fork: weft objects cannot cross a fork; open the stream, region or channel again in \
         this process",
        current()
    ))
}
