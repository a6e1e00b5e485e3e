//! Bytes handed in from Python: a `bytes` object, or anything with the buffer protocol
//! (bytearray, memoryview, numpy array, a weft grant) that is C-contiguous.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A bytes-like argument, held (and, for a buffer, exported) for as long as this lives.
pub(crate) enum Input<'py> {
    /// Immutable: its bytes may be read without the interpreter.
    Bytes(Bound<'py, PyBytes>),
    /// Mutable by other Python code: read only while attached (see `with_bytes`).
    Buffer(PyUntypedBuffer),
}

/// `memoryview(obj).cast("B")`: the bytes of a C-contiguous export as one dimension.
fn flat_view<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let view = obj
        .py()
        .import("builtins")?
        .getattr("memoryview")?
        .call1((obj,))?;
    view.call_method1("cast", ("B",))
}

impl<'py> Input<'py> {
    /// Takes `obj` as bytes.
    ///
    /// # Errors
    /// `TypeError` if it has no buffer protocol; `BufferError` if it is not contiguous.
    pub(crate) fn new(obj: &Bound<'py, PyAny>) -> PyResult<Input<'py>> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Input::Bytes(b.clone()));
        }
        let buf = match PyUntypedBuffer::get(obj) {
            Ok(buf) => buf,
            // A 0-d export (a numpy scalar, a 0-d array) gives no shape, which pyo3 refuses:
            // its bytes through a flat view of it (`memoryview(obj).cast("B")`, which holds
            // the export). Anything that view refuses too keeps the first error.
            Err(e) => match flat_view(obj) {
                Ok(view) => PyUntypedBuffer::get(&view).map_err(|_| e)?,
                Err(_) => return Err(e),
            },
        };
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err(
                "the data must be C-contiguous (numpy.ascontiguousarray makes it so)",
            ));
        }
        Ok(Input::Buffer(buf))
    }

    /// Bytes in it.
    pub(crate) fn len(&self) -> usize {
        match self {
            Input::Bytes(b) => b.as_bytes().len(),
            Input::Buffer(buf) => buf.len_bytes(),
        }
    }

    /// The bytes as a raw range, for a copy made while attached to the interpreter (no other
    /// Python code runs then on a GIL build, so nothing changes them meanwhile). A raw range
    /// rather than a slice: it may be a buffer exported from the very grant being written.
    pub(crate) fn raw(&self) -> (*const u8, usize) {
        match self {
            Input::Bytes(b) => (b.as_bytes().as_ptr(), b.as_bytes().len()),
            Input::Buffer(buf) => (buf.buf_ptr() as *const u8, buf.len_bytes()),
        }
    }

    /// The bytes as a slice that may cross a detached call: borrowed from an immutable
    /// `bytes` object, copied out of any other buffer (which Python code may change while we
    /// are detached).
    pub(crate) fn detached(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Input::Bytes(b) => std::borrow::Cow::Borrowed(b.as_bytes()),
            Input::Buffer(buf) if buf.len_bytes() == 0 => std::borrow::Cow::Borrowed(&[]),
            Input::Buffer(buf) => {
                let (ptr, len) = (buf.buf_ptr() as *const u8, buf.len_bytes());
                // SAFETY: the buffer is exported to us (valid, contiguous, `len` bytes) for as
                // long as `buf` lives, and we are attached to the interpreter, so no Python code
                // changes it during this copy.
                std::borrow::Cow::Owned(unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec())
            }
        }
    }
}
