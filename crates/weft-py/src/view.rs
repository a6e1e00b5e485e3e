//! The buffer protocol for grants, loans and samples: a [`View`] holds the thing that keeps a
//! range of shared memory valid (a read grant, a loan, a sample) and counts the buffers
//! exported from it, so that it is never released while Python can still read through one.
//!
//! Rules, one lock for all of them:
//! - an export (`__getbuffer__`) is refused once the view is released (`ValueError`);
//! - a release (`release()`, a commit, a publish) is refused while exports are alive
//!   (`BufferError`), so no memoryview or numpy array ever reads memory given back;
//! - after a release every access raises `ValueError`;
//! - a release asked for by a `with` block that raised ([`View::release_eventually`]) never
//!   raises: with buffers exported it ends every access at once and gives the memory back when
//!   the last of them is released (or the object is garbage collected).
//!
//! The holder belongs to the process that made the view (`process::Local`): in a fork's child
//! every access raises `RuntimeError`, a release does nothing, and the holder is leaked, not
//! dropped (it stands for the parent's state).

use crate::process::Local;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// The state behind one Python grant object.
pub(crate) struct View<G> {
    inner: Local<Mutex<Inner<G>>>,
    /// Whether buffers exported from it may be written (loans and write grants).
    writable: bool,
    /// The Python class name, for messages.
    what: &'static str,
}

struct Inner<G> {
    /// What keeps the memory valid; `None` once released.
    holder: Option<G>,
    /// Start of the range, computed once when the view was made (so that no reference to the
    /// bytes is formed later, while exported buffers point into them).
    ptr: *mut u8,
    /// Bytes exported (a loan may shorten it with `set_len`, within its capacity).
    len: usize,
    /// Bytes the memory holds from `ptr` (the loan's block, the reservation); `len <= cap`.
    cap: usize,
    /// Buffers exported and not yet released by their consumers.
    exports: usize,
    /// A release was asked for while buffers were exported (`release_eventually`): the view
    /// counts as released, and the last `release_buffer` drops the holder.
    releasing: bool,
}

impl<G> Inner<G> {
    /// Whether the holder is there and no release was asked for.
    fn live(&self) -> bool {
        self.holder.is_some() && !self.releasing
    }
}

// SAFETY: `ptr` points into memory that `holder` keeps valid (a mapping it holds through an
// Arc) and is dereferenced only while `holder` is present: by buffer consumers, which can only
// exist while `exports > 0` (and then the holder cannot be released), and by `write`, under
// the lock. Nothing in it is tied to a thread beyond what `G: Send` says.
unsafe impl<G: Send> Send for Inner<G> {}

impl<G> std::fmt::Debug for View<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "View({})", self.what)
    }
}

impl<G> View<G> {
    /// A view of `len` bytes (of `cap` available) at `ptr`, valid while `holder` lives.
    ///
    /// # Safety
    /// `ptr .. ptr + cap` must stay valid for reads (and writes, if `writable`) for as long as
    /// `holder` is alive, and nothing but this view may write it meanwhile (a writable view);
    /// `len <= cap`.
    pub(crate) unsafe fn new(
        holder: G,
        ptr: *mut u8,
        len: usize,
        cap: usize,
        writable: bool,
        what: &'static str,
    ) -> View<G> {
        View {
            inner: Local::new(Mutex::new(Inner {
                holder: Some(holder),
                ptr,
                len,
                cap,
                exports: 0,
                releasing: false,
            })),
            writable,
            what,
        }
    }

    /// The state, in the process that made the view.
    ///
    /// # Errors
    /// `RuntimeError` in another process (a fork's child), before the lock is taken (a thread
    /// of the parent may have held it at the fork).
    fn lock(&self) -> PyResult<MutexGuard<'_, Inner<G>>> {
        // A panic cannot leave the counters half-updated: recover the guard.
        Ok(self
            .inner
            .get(self.what)?
            .lock()
            .unwrap_or_else(|p| p.into_inner()))
    }

    fn released(&self) -> PyErr {
        PyValueError::new_err(format!("this {} has been released", self.what))
    }

    /// Exports the bytes into `view` (the `__getbuffer__` slot).
    ///
    /// # Safety
    /// `view` is the `Py_buffer` CPython passed to `__getbuffer__`; `obj` is the Python object
    /// this view belongs to.
    pub(crate) unsafe fn get_buffer(
        &self,
        obj: &Bound<'_, PyAny>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("a NULL Py_buffer was passed"));
        }
        if !self.writable && flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(format!(
                "a {} is read-only",
                self.what
            )));
        }
        let mut inner = self.lock()?;
        if !inner.live() {
            return Err(self.released());
        }
        // SAFETY: `view` is valid (CPython's, checked non-null); the range is valid while the
        // holder lives, and the holder cannot be released while this export is counted (it is
        // counted below, under the same lock, and uncounted in `release_buffer`). FillInfo
        // takes a new reference to `obj` for the consumer. It fails only for a writable request
        // on a read-only range, refused above.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                obj.as_ptr(),
                inner.ptr.cast(),
                inner.len as ffi::Py_ssize_t,
                c_int::from(!self.writable),
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        inner.exports += 1;
        Ok(())
    }

    /// An export ended (the `__releasebuffer__` slot). The last one drops the holder if a
    /// release was asked for meanwhile (`release_eventually`).
    pub(crate) fn release_buffer(&self) {
        // In a fork's child (an export inherited from the parent) there is nothing to count:
        // the holder is leaked.
        let Ok(mut inner) = self.lock() else { return };
        inner.exports = inner.exports.saturating_sub(1);
        let holder = if inner.exports == 0 && inner.releasing {
            inner.holder.take()
        } else {
            None
        };
        drop(inner);
        // Dropped after the lock: a holder's drop may wait (a loan's, for its publisher).
        drop(holder);
    }

    /// Takes the holder out (it is dropped or consumed by the caller) once no buffer is
    /// exported.
    ///
    /// # Errors
    /// `BufferError` while buffers are exported; `ValueError` once released.
    pub(crate) fn take(&self) -> PyResult<G> {
        self.take_with_len().map(|(holder, _)| holder)
    }

    /// As [`View::take`], with the length (a loan's payload length, from `set_len`) read
    /// under the same lock, so that no `set_len` comes between them.
    ///
    /// # Errors
    /// As [`View::take`].
    pub(crate) fn take_with_len(&self) -> PyResult<(G, usize)> {
        let mut inner = self.lock()?;
        if !inner.live() {
            return Err(self.released());
        }
        if inner.exports > 0 {
            return Err(PyBufferError::new_err(format!(
                "this {} still has {} exported buffer(s) (memoryview, numpy array): release \
                 them first (del the array, memoryview.release())",
                self.what, inner.exports
            )));
        }
        let len = inner.len;
        let holder = inner.holder.take().expect("a live view has its holder");
        Ok((holder, len))
    }

    /// Releases the holder; releasing twice is allowed. In a fork's child it does nothing
    /// (the holder is the parent's).
    ///
    /// # Errors
    /// `BufferError` while buffers are exported.
    pub(crate) fn release(&self) -> PyResult<()> {
        if self.is_released() {
            return Ok(());
        }
        drop(self.take()?);
        Ok(())
    }

    /// Releases the holder now, or, while buffers are exported, when the last of them is
    /// released: for a `with` block that raised, which must not raise another exception. The
    /// view counts as released from now on. Does nothing in a fork's child.
    pub(crate) fn release_eventually(&self) {
        let Ok(mut inner) = self.lock() else { return };
        let holder = if inner.exports == 0 {
            inner.holder.take()
        } else {
            inner.releasing = true;
            None
        };
        drop(inner);
        // Dropped after the lock, as in `release_buffer`.
        drop(holder);
    }

    /// Whether the holder is still there, not released, for a commit or publish at the end of
    /// a `with` block.
    ///
    /// # Errors
    /// `RuntimeError` in a fork's child (the holder is the parent's).
    pub(crate) fn is_open(&self) -> PyResult<bool> {
        Ok(self.lock()?.live())
    }

    /// Whether the holder has been released (or will be, once its exports are gone), or
    /// belongs to another process (a fork's parent).
    pub(crate) fn is_released(&self) -> bool {
        self.lock().map_or(true, |inner| !inner.live())
    }

    /// Bytes in the view.
    ///
    /// # Errors
    /// `ValueError` once released.
    pub(crate) fn len(&self) -> PyResult<usize> {
        let inner = self.lock()?;
        if inner.live() {
            Ok(inner.len)
        } else {
            Err(self.released())
        }
    }

    /// Sets the exported length (a loan's payload length), within the capacity.
    ///
    /// # Errors
    /// `BufferError` while buffers are exported (their length would be wrong); `ValueError`
    /// beyond the capacity or once released.
    pub(crate) fn set_len(&self, len: usize) -> PyResult<()> {
        let mut inner = self.lock()?;
        if !inner.live() {
            return Err(self.released());
        }
        if inner.exports > 0 {
            return Err(PyBufferError::new_err(format!(
                "cannot resize this {} while buffers are exported from it",
                self.what
            )));
        }
        if len > inner.cap {
            return Err(PyValueError::new_err(format!(
                "length {len} is more than this {} holds ({})",
                self.what, inner.cap
            )));
        }
        inner.len = len;
        Ok(())
    }

    /// Copies `len` bytes from `src` into the view at `offset` (a writable view).
    ///
    /// `src .. src + len` must be readable (a bytes object or a buffer exported to the caller,
    /// read while attached to the interpreter); it may overlap the view (a memoryview of it).
    ///
    /// # Errors
    /// `ValueError` if it does not fit or the view is released; `TypeError` for a read-only
    /// view.
    pub(crate) fn write(&self, src: *const u8, len: usize, offset: usize) -> PyResult<()> {
        if !self.writable {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "a {} is read-only",
                self.what
            )));
        }
        let inner = self.lock()?;
        if !inner.live() {
            return Err(self.released());
        }
        if offset.checked_add(len).is_none_or(|end| end > inner.len) {
            return Err(PyValueError::new_err(format!(
                "{len} bytes at offset {offset} do not fit in {} bytes",
                inner.len
            )));
        }
        if len > 0 {
            // SAFETY: `offset + len <= self.len <= cap` (checked above), so the destination is
            // inside the range, which is valid and written by nobody but this view while the
            // holder lives (View::new's contract); the holder cannot go while we hold the lock.
            // The source is readable (the caller's contract); `copy` is a memmove, so a source
            // that is a buffer exported from this very view is fine.
            unsafe { std::ptr::copy(src, inner.ptr.add(offset), len) };
        }
        Ok(())
    }

    /// The address of the first byte (for tests that check where a buffer points).
    ///
    /// # Errors
    /// `ValueError` once released.
    pub(crate) fn address(&self) -> PyResult<usize> {
        let inner = self.lock()?;
        if inner.live() {
            Ok(inner.ptr as usize)
        } else {
            Err(self.released())
        }
    }
}

/// The methods every grant class shares: the buffer protocol, `len()`, `release()`,
/// `released`, the context manager and the refusal to be pickled. The class holds its `View`
/// in the field `view`. `$exit` is the body of `__exit__` given `slf` when the block ended
/// without an exception (release, or commit/publish for a write); when it raised, the grant
/// is released as soon as it can be and `__exit__` raises nothing (`View::release_eventually`),
/// so the block's own exception is the one that propagates.
macro_rules! grant_methods {
    ($class:ident, |$slf:ident| $exit:block, { $($extra:tt)* }) => {
        // PyO3's generated trampolines call the `unsafe fn __getbuffer__`/`__releasebuffer__`
        // below without an unsafe block of their own, under our spans: the lint is allowed for
        // what this block generates only. Our own unsafe operations keep their explicit,
        // commented blocks.
        #[allow(unsafe_op_in_unsafe_fn)]
        const _: () = {
        #[pymethods]
        impl $class {
            /// Exports the bytes (memoryview, numpy.frombuffer): no copy.
            unsafe fn __getbuffer__(
                slf: Bound<'_, Self>,
                view: *mut pyo3::ffi::Py_buffer,
                flags: std::ffi::c_int,
            ) -> PyResult<()> {
                let obj = slf.as_any();
                // SAFETY: CPython calls this slot with its own Py_buffer; `obj` is this object,
                // whose view this is.
                unsafe { slf.get().view.get_buffer(obj, view, flags) }
            }

            unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {
                self.view.release_buffer();
            }

            /// Bytes in the buffer.
            fn __len__(&self) -> PyResult<usize> {
                self.view.len()
            }

            /// Gives the memory back (to the writer, the pool). Raises BufferError while a
            /// memoryview or numpy array made from it is alive; releasing twice is allowed.
            fn release(&self) -> PyResult<()> {
                self.view.release()
            }

            /// Whether it has been released (or committed, published).
            #[getter]
            fn released(&self) -> bool {
                self.view.is_released()
            }

            /// The address of the first byte in this process (for checks that a view is in
            /// place in shared memory).
            #[getter]
            fn _address(&self) -> PyResult<usize> {
                self.view.address()
            }

            fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
                slf
            }

            // The parameters' names are the ones of the stubs (and of Python's own context
            // managers): the Rust names are the Python names.
            #[pyo3(signature = (exc_type, exc_value, traceback))]
            fn __exit__(
                slf: Bound<'_, Self>,
                exc_type: Option<Bound<'_, PyAny>>,
                exc_value: Option<Bound<'_, PyAny>>,
                traceback: Option<Bound<'_, PyAny>>,
            ) -> PyResult<bool> {
                // Only whether the block raised matters, not what it raised.
                let _ = (exc_value, traceback);
                let $slf = slf.get();
                if exc_type.is_some() {
                    $slf.view.release_eventually();
                } else {
                    let () = $exit;
                }
                Ok(false)
            }

            /// Refuses: what it holds lives in this process's mapping.
            fn __reduce__(&self) -> PyResult<()> {
                Err(crate::not_picklable())
            }

            $($extra)*
        }
        };
    };
}

pub(crate) use grant_methods;
