//! The buffer protocol for grants, loans and samples: a [`View`] holds the thing that keeps a
//! range of shared memory valid (a read grant, a loan, a sample) and counts the buffers
//! exported from it, so that it is never released while Python can still read through one.
//!
//! Rules, one lock for all of them:
//! - an export (`__getbuffer__`) is refused once the view is released (`ValueError`);
//! - a release (`release()`, a commit, a publish) is refused while exports are alive
//!   (`BufferError`), so no memoryview or numpy array ever reads memory given back;
//! - after a release every access raises `ValueError`.

use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_int;
use std::sync::{Mutex, MutexGuard};

/// The state behind one Python grant object.
pub(crate) struct View<G> {
    inner: Mutex<Inner<G>>,
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
            inner: Mutex::new(Inner {
                holder: Some(holder),
                ptr,
                len,
                cap,
                exports: 0,
            }),
            writable,
            what,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<G>> {
        // A panic cannot leave the counters half-updated: recover the guard.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut inner = self.lock();
        if inner.holder.is_none() {
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

    /// An export ended (the `__releasebuffer__` slot).
    pub(crate) fn release_buffer(&self) {
        let mut inner = self.lock();
        inner.exports = inner.exports.saturating_sub(1);
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
        let mut inner = self.lock();
        if inner.exports > 0 {
            return Err(PyBufferError::new_err(format!(
                "this {} still has {} exported buffer(s) (memoryview, numpy array): release \
                 them first (del the array, memoryview.release())",
                self.what, inner.exports
            )));
        }
        let len = inner.len;
        let holder = inner.holder.take().ok_or_else(|| self.released())?;
        Ok((holder, len))
    }

    /// Releases the holder; releasing twice is allowed.
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

    /// Whether the holder has been released.
    pub(crate) fn is_released(&self) -> bool {
        self.lock().holder.is_none()
    }

    /// Bytes in the view.
    ///
    /// # Errors
    /// `ValueError` once released.
    pub(crate) fn len(&self) -> PyResult<usize> {
        let inner = self.lock();
        match inner.holder {
            Some(_) => Ok(inner.len),
            None => Err(self.released()),
        }
    }

    /// Sets the exported length (a loan's payload length), within the capacity.
    ///
    /// # Errors
    /// `BufferError` while buffers are exported (their length would be wrong); `ValueError`
    /// beyond the capacity or once released.
    pub(crate) fn set_len(&self, len: usize) -> PyResult<()> {
        let mut inner = self.lock();
        if inner.holder.is_none() {
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
        let inner = self.lock();
        if inner.holder.is_none() {
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
        let inner = self.lock();
        match inner.holder {
            Some(_) => Ok(inner.ptr as usize),
            None => Err(self.released()),
        }
    }
}

/// The methods every grant class shares: the buffer protocol, `len()`, `release()`,
/// `released`, the context manager and `repr()`. The class holds its `View` in the field
/// `view`. `$exit` is the body of `__exit__` given `slf` and whether an exception is
/// propagating (release, or commit/publish for a write).
macro_rules! grant_methods {
    ($class:ident, |$slf:ident, $failed:ident| $exit:block, { $($extra:tt)* }) => {
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

            #[pyo3(signature = (exc_type, _exc_value, _traceback))]
            fn __exit__(
                slf: Bound<'_, Self>,
                exc_type: Option<Bound<'_, PyAny>>,
                _exc_value: Option<Bound<'_, PyAny>>,
                _traceback: Option<Bound<'_, PyAny>>,
            ) -> PyResult<bool> {
                let $slf = slf.get();
                let $failed = exc_type.is_some();
                let () = $exit;
                Ok(false)
            }

            $($extra)*
        }
        };
    };
}

pub(crate) use grant_methods;
