//! `weft.StreamWriter`, `weft.StreamReader` and their grants: `weft.WriteGrant` (room reserved
//! in the stream, written in place) and `weft.ReadGrant` (a record borrowed in place).

use crate::blocking::{Timeout, Until, not_there_yet, sliced, sliced_retry};
use crate::errors::IntoPy;
use crate::input::Input;
use crate::owned::{Access, Lent, Owned};
use crate::view::{View, grant_methods};
use crate::wait_strategy;
use pyo3::prelude::*;
use std::sync::Arc;
use weft::stream::{StreamOptions, StreamReader as RsReader, StreamWriter as RsWriter};

/// A write grant that can be committed, whatever handle it came from (a stream writer or a
/// channel).
pub(crate) trait Commit: Send {
    /// Publishes the first `len` bytes as one record.
    fn commit(self: Box<Self>, len: usize) -> weft::Result<()>;
}

impl<T: Send> Commit for Lent<T, weft::stream::WriteGrant<'static>> {
    fn commit(self: Box<Self>, len: usize) -> weft::Result<()> {
        self.consume(|g| g.commit(len))
    }
}

/// Room reserved in a stream or channel, in shared memory: write it in place (buffer
/// protocol, writable), then `commit()`.
///
/// As a context manager it commits everything reserved when the block ends normally and
/// abandons the reservation when it raises (once the buffers exported from it are gone, if
/// some are alive then). Exported buffers (memoryview, numpy arrays) must be gone before the
/// commit.
#[pyclass(frozen, module = "weft")]
pub(crate) struct WriteGrant {
    pub(crate) view: View<Box<dyn Commit>>,
}

impl WriteGrant {
    /// Wraps `grant`, made from the handle behind `access`.
    ///
    /// # Safety
    /// As [`Lent::new`]: `grant` borrows only the handle behind `access`.
    pub(crate) unsafe fn lend<T: Send + 'static>(
        access: Access<T>,
        mut grant: weft::stream::WriteGrant<'static>,
    ) -> WriteGrant {
        let (ptr, len) = (grant.as_mut_ptr(), grant.len());
        // SAFETY: the caller's promise (see Lent::new).
        let lent = unsafe { Lent::new(access, grant) };
        // SAFETY: the reservation's `len` bytes at `ptr` belong to the writer alone until the
        // grant is committed or dropped (the reader never reads past the committed cursor), and
        // the grant lives in the holder. Moving the grant into the Lent moved the handle's
        // borrow, not the bytes (shared memory).
        let view = unsafe {
            View::new(
                Box::new(lent) as Box<dyn Commit>,
                ptr,
                len,
                len,
                true,
                "WriteGrant",
            )
        };
        WriteGrant { view }
    }

    fn commit_inner(&self, length: Option<usize>) -> PyResult<()> {
        let reserved = self.view.len()?;
        let len = length.unwrap_or(reserved);
        if len > reserved {
            return Err(crate::errors::to_py(weft::Error::InvalidArgument {
                what: "commit length",
                value: len as u64,
                expected: "at most the reserved length",
            }));
        }
        self.view.take()?.commit(len).py()
    }
}

grant_methods!(
    WriteGrant,
    |slf| {
        if slf.view.is_open()? {
            slf.commit_inner(None)?;
        }
    },
    {
        /// Publishes the first `length` bytes (all of them by default) as one record.
        ///
        /// Raises BufferError while buffers exported from the grant are alive.
        #[pyo3(signature = (length = None))]
        fn commit(&self, length: Option<usize>) -> PyResult<()> {
            self.commit_inner(length)
        }

        /// Gives the room back unwritten (the reader never sees it).
        fn abandon(&self) -> PyResult<()> {
            self.view.release()
        }

        /// Copies `data` (any bytes-like object) into the grant at `offset`.
        #[pyo3(signature = (data, offset = 0))]
        fn write(&self, data: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
            let input = Input::new(data)?;
            let (ptr, len) = input.raw();
            self.view.write(ptr, len, offset)
        }

        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.WriteGrant of {n} bytes>"),
                Err(_) => "<weft.WriteGrant (released)>".into(),
            }
        }
    }
);

/// One record borrowed in place from shared memory (buffer protocol, read-only). Released
/// by `release()`, at the end of a `with` block, or when garbage collected; until then the
/// writer cannot reuse its room and the reader it came from is busy.
#[pyclass(frozen, module = "weft")]
pub(crate) struct ReadGrant {
    pub(crate) view: View<Box<dyn Send>>,
}

impl ReadGrant {
    /// Wraps `grant`, made from the handle behind `access`.
    ///
    /// # Safety
    /// As [`Lent::new`]: `grant` borrows only the handle behind `access`.
    pub(crate) unsafe fn lend<T: Send + 'static>(
        access: Access<T>,
        grant: weft::stream::ReadGrant<'static>,
    ) -> ReadGrant {
        let (ptr, len) = (grant.as_ptr().cast_mut(), grant.len());
        // SAFETY: the caller's promise (see Lent::new).
        let lent = unsafe { Lent::new(access, grant) };
        // SAFETY: the record's bytes were validated to lie in the mapping, which the handle
        // (kept by the holder) keeps mapped, and a weft writer does not reuse them until the
        // grant is dropped with the holder. Exported read-only.
        let view = unsafe {
            View::new(
                Box::new(lent) as Box<dyn Send>,
                ptr,
                len,
                len,
                false,
                "ReadGrant",
            )
        };
        ReadGrant { view }
    }
}

grant_methods!(
    ReadGrant,
    |slf| {
        slf.view.release()?;
    },
    {
        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.ReadGrant of {n} bytes>"),
                Err(_) => "<weft.ReadGrant (released)>".into(),
            }
        }
    }
);

/// Reserves `len` bytes in the writer behind `access`, waiting in slices.
fn reserve_in(
    py: Python<'_>,
    access: &mut Access<RsWriter>,
    len: usize,
    until: Option<Until>,
) -> PyResult<weft::stream::WriteGrant<'static>> {
    let ptr = access.ptr();
    match until {
        Some(until) => sliced(py, until, move |slice| {
            // SAFETY: `access` outlives the grant: every caller stores the grant with its access
            // in a Lent, or commits or drops it before the access; nothing else uses the writer
            // meanwhile (the access is exclusive and each attempt's borrow ends with it).
            unsafe { ptr.get() }.reserve_timeout(len, slice)
        }),
        // SAFETY: as above.
        None => unsafe { ptr.get() }.try_reserve(len).py(),
    }
}

/// The writing end of a byte stream in shared memory (`weft.StreamWriter.create`).
///
/// Records are written whole and read whole. When the stream is full the writer waits
/// (backpressure; `try_` forms raise `weft.FullError`). Closing it (or garbage collection)
/// lets the reader drain what is left, then raise `weft.ClosedError`.
#[pyclass(frozen, module = "weft")]
pub(crate) struct StreamWriter {
    inner: Arc<Owned<RsWriter>>,
    name: String,
    capacity: usize,
    max_record_len: usize,
}

impl StreamWriter {
    /// Copies `data` into a reservation and commits it (`until` None: try once).
    fn write_inner(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        until: Option<Until>,
    ) -> PyResult<()> {
        let input = Input::new(data)?;
        let mut access = self.inner.acquire()?;
        let mut grant = reserve_in(py, &mut access, input.len(), until)?;
        let (src, len) = input.raw();
        if len > 0 {
            // SAFETY: the grant holds `len` writable bytes (reserved for exactly `len`); `src`
            // is `len` readable bytes of a Python object we hold, read while attached (nothing
            // changes them meanwhile), and not in this grant's fresh room.
            unsafe { std::ptr::copy_nonoverlapping(src, grant.as_mut_ptr(), len) };
        }
        grant.commit(len).py()
    }

    /// Copies `data` in as one deferred record (`until` None: try once). A wait for room
    /// happens detached, through a reservation abandoned at once; the copy is always made
    /// attached, so Python code cannot change the bytes while they are copied.
    fn write_deferred_inner(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        until: Option<Until>,
    ) -> PyResult<()> {
        let input = Input::new(data)?;
        let mut access = self.inner.acquire()?;
        loop {
            let (src, len) = input.raw();
            let bytes = if len == 0 {
                &[][..]
            } else {
                // SAFETY: `src` is `len` readable bytes of a Python object we hold, read while
                // attached (nothing changes them meanwhile).
                unsafe { std::slice::from_raw_parts(src, len) }
            };
            match access.get().try_write_deferred(bytes) {
                Err(weft::Error::Full) if until.is_some() => {
                    // Room for `len` bytes, then copy again (a single writer: it stays).
                    drop(reserve_in(py, &mut access, len, until)?);
                }
                r => return r.py(),
            }
        }
    }

    fn reserve_inner(
        &self,
        py: Python<'_>,
        len: usize,
        until: Option<Until>,
    ) -> PyResult<WriteGrant> {
        let mut access = self.inner.acquire()?;
        let grant = reserve_in(py, &mut access, len, until)?;
        // SAFETY: the grant was made from the writer behind `access` (reserve_in).
        Ok(unsafe { WriteGrant::lend(access, grant) })
    }
}

#[pymethods]
impl StreamWriter {
    /// Creates the stream `name` with `capacity` data bytes and becomes its writer.
    ///
    /// `align` (8, 64 or 4096) aligns every record; `wait` is how blocking calls wait
    /// ("adaptive", "park", "busy_spin", "yield_spin", "backoff_spin"). A record may be up to
    /// half the capacity. `hot_window` is where the writer goes back to the start while its
    /// reader keeps up: "auto" (4 MiB on streams of 16 MiB and more, none below), a number of
    /// bytes (at least 4096), or None (every lap uses the whole capacity).
    #[staticmethod]
    #[pyo3(
        signature = (
            name, capacity, *, align = 8, wait = "adaptive", hugepages = false,
            lock_memory = false, hot_window = HotWindow::Auto,
        ),
        // The default is written out: derived from `HotWindow::Auto`, it read `Ellipsis`,
        // which the call then refused.
        text_signature = "(name, capacity, *, align=8, wait='adaptive', hugepages=False, \
                          lock_memory=False, hot_window='auto')"
    )]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option
    fn create(
        py: Python<'_>,
        name: &str,
        capacity: usize,
        align: usize,
        wait: &str,
        hugepages: bool,
        lock_memory: bool,
        hot_window: HotWindow,
    ) -> PyResult<StreamWriter> {
        let mut opts = StreamOptions::new(capacity)
            .align(align)
            .wait(wait_strategy(wait)?)
            .hugepages(hugepages)
            .lock_memory(lock_memory);
        if let HotWindow::Set(window) = hot_window {
            opts = opts.hot_window(window);
        }
        let w = py.detach(|| RsWriter::create_with(name, &opts)).py()?;
        Ok(StreamWriter {
            name: w.name().into(),
            capacity: w.capacity(),
            max_record_len: w.max_record_len(),
            inner: Owned::new(w, "StreamWriter"),
        })
    }

    /// The stream's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Data bytes in the stream.
    #[getter]
    fn capacity(&self) -> usize {
        self.capacity
    }

    /// The largest record the stream accepts (larger ones raise `weft.TooLargeError` at once).
    #[getter]
    fn max_record_len(&self) -> usize {
        self.max_record_len
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Copies `data` (bytes, bytearray, memoryview, a numpy array: any contiguous buffer) into
    /// the stream as one record, waiting for room at most `timeout` seconds (None: as long as
    /// it takes).
    #[pyo3(signature = (data, timeout = None))]
    fn write(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<()> {
        self.write_inner(py, data, Some(Until::new(timeout)))
    }

    /// As `write`, but raises `weft.FullError` instead of waiting.
    fn try_write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_inner(py, data, None)
    }

    /// Copies `data` into the stream as one record, but publishes it later, as a buffered file
    /// does: at `flush()`, at any other write or commit, once the unpublished records reach an
    /// eighth of the capacity (at most 64 KiB), before a wait for room, and at close. Many
    /// small records then cost the reader one look at the write cursor. Waits for room at
    /// most `timeout` seconds (None: as long as it takes).
    #[pyo3(signature = (data, timeout = None))]
    fn write_deferred(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<()> {
        self.write_deferred_inner(py, data, Some(Until::new(timeout)))
    }

    /// As `write_deferred`, but raises `weft.FullError` instead of waiting (what was deferred
    /// before is published first).
    fn try_write_deferred(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_deferred_inner(py, data, None)
    }

    /// Publishes every record written with `write_deferred` and not yet published.
    fn flush(&self) -> PyResult<()> {
        self.inner.acquire()?.get().flush();
        Ok(())
    }

    /// Reserves `length` contiguous bytes to write in place, waiting for room at most
    /// `timeout` seconds. Use it as a context manager, or `commit()` it.
    #[pyo3(signature = (length, timeout = None))]
    fn reserve(
        &self,
        py: Python<'_>,
        length: usize,
        timeout: Option<Timeout>,
    ) -> PyResult<WriteGrant> {
        self.reserve_inner(py, length, Some(Until::new(timeout)))
    }

    /// As `reserve`, but raises `weft.FullError` instead of waiting.
    fn try_reserve(&self, py: Python<'_>, length: usize) -> PyResult<WriteGrant> {
        self.reserve_inner(py, length, None)
    }

    /// Whether a reader is attached and alive (checked now).
    fn reader_alive(&self) -> PyResult<bool> {
        Ok(self.inner.acquire()?.get().reader_alive())
    }

    /// Closes the stream: the reader drains what was committed, then gets
    /// `weft.ClosedError`. Raises RuntimeError while a grant from it is held.
    fn close(&self) -> PyResult<()> {
        self.inner.close()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it. When the block raised, it raises nothing itself: while a grant taken from
    /// it is held (or another thread's call runs) the handle stays open, and closes when that
    /// ends.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.exit(args, || self.close())
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!(
            "<weft.StreamWriter {:?}, {} bytes>",
            self.name, self.capacity
        )
    }
}

/// The reading end of a byte stream (`weft.StreamReader.open`).
#[pyclass(frozen, module = "weft")]
pub(crate) struct StreamReader {
    inner: Arc<Owned<RsReader>>,
    name: String,
    capacity: usize,
}

impl StreamReader {
    fn read_inner(&self, py: Python<'_>, until: Option<Until>) -> PyResult<ReadGrant> {
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let grant = match until {
            Some(until) => sliced(py, until, move |slice| {
                // SAFETY: `access` is alive until the grant is stored with it below (or dropped, on
                // an error, with no grant made); each attempt's borrow ends with the attempt.
                unsafe { ptr.get() }.read_timeout(slice)
            })?,
            // SAFETY: as above.
            None => unsafe { ptr.get() }.try_read().py()?,
        };
        // SAFETY: the grant was made from the reader behind `access`.
        Ok(unsafe { ReadGrant::lend(access, grant) })
    }
}

#[pymethods]
impl StreamReader {
    /// Opens the stream `name` as its reader, waiting up to `timeout` seconds for it to be
    /// created (0: not at all; None: as long as it takes); then `weft.NotFoundError`.
    #[staticmethod]
    // The text signature is written out: PyO3 shows a default that is not a literal as `...`.
    #[pyo3(
        signature = (name, timeout = Timeout::ZERO, *, wait = "adaptive"),
        text_signature = "(name, timeout=0.0, *, wait='adaptive')"
    )]
    fn open(
        py: Python<'_>,
        name: &str,
        timeout: Option<Timeout>,
        wait: &str,
    ) -> PyResult<StreamReader> {
        let wait = wait_strategy(wait)?;
        let until = Until::new(timeout);
        let mut r = sliced_retry(py, until, not_there_yet, |slice| {
            RsReader::open_timeout(name, slice)
        })?;
        r.set_wait_strategy(wait);
        Ok(StreamReader {
            name: r.name().into(),
            capacity: r.capacity(),
            inner: Owned::new(r, "StreamReader"),
        })
    }

    /// The stream's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Data bytes in the stream.
    #[getter]
    fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The next record, borrowed in place (a `weft.ReadGrant`); waits at most `timeout`
    /// seconds (None: as long as it takes), then raises `weft.TimeoutError`.
    ///
    /// Raises `weft.ClosedError` once the writer closed and everything was read,
    /// `weft.PeerDeadError` once it died and everything it committed was read.
    #[pyo3(signature = (timeout = None))]
    fn read(&self, py: Python<'_>, timeout: Option<Timeout>) -> PyResult<ReadGrant> {
        self.read_inner(py, Some(Until::new(timeout)))
    }

    /// As `read`, but raises `weft.EmptyError` instead of waiting.
    fn try_read(&self, py: Python<'_>) -> PyResult<ReadGrant> {
        self.read_inner(py, None)
    }

    /// Leaves the stream. Raises RuntimeError while a grant from it is held.
    fn close(&self) -> PyResult<()> {
        self.inner.close()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it. When the block raised, it raises nothing itself: while a grant taken from
    /// it is held (or another thread's call runs) the handle stays open, and closes when that
    /// ends.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.exit(args, || self.close())
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!(
            "<weft.StreamReader {:?}, {} bytes>",
            self.name, self.capacity
        )
    }
}

/// The `hot_window` argument: "auto", a number of bytes, or None.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HotWindow {
    Auto,
    Set(Option<usize>),
}

impl<'py> FromPyObject<'_, 'py> for HotWindow {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<HotWindow> {
        if ob.is_none() {
            return Ok(HotWindow::Set(None));
        }
        if let Ok(s) = ob.extract::<&str>() {
            return if s == "auto" {
                Ok(HotWindow::Auto)
            } else {
                Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "hot_window: {s:?} is not \"auto\", a number of bytes or None"
                )))
            };
        }
        Ok(HotWindow::Set(Some(ob.extract::<usize>()?)))
    }
}
