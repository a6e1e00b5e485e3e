//! The byte stream: `weft_stream_writer_*` and `weft_stream_reader_*`.
//!
//! A writer lends at most one reservation and a reader at most one read grant; they live in
//! the handle ([`Lent`]) until committed, abandoned or released.

use crate::error::{
    Failure, Out, Poison, Res, WeftStatus, c_bytes, c_name, free_handle, guard, guard_handles,
    handles, into_handle, millis, options, wait_strategy,
};
use crate::lend::Lent;
use std::ffi::{CStr, c_char};
use weft::stream::{ReadGrant, StreamOptions, StreamReader, StreamWriter, WriteGrant};

/// Options of a new stream. Zero in any field means the default.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WeftStreamOptions {
    /// Record alignment: 8 (default), 64 or 4096.
    pub align: usize,
    /// How blocking calls wait: a `WEFT_WAIT_*` code.
    pub wait: i32,
    /// How long a peer in another pid namespace may go without a heartbeat before it is
    /// reported dead, in milliseconds (default 1000).
    pub liveness_timeout_ms: u64,
    /// Non-zero: ask for transparent huge pages (advisory).
    pub hugepages: u8,
    /// Non-zero: lock the mapping in memory (fails if the limit does not allow it).
    pub lock_memory: u8,
    /// Where the writer goes back to the start of the buffer while its reader keeps up, in
    /// bytes (at least 4096; at or above the capacity means none): 0 for the default (4 MiB
    /// on streams of 16 MiB and more, none below), `SIZE_MAX` for none (every lap uses the
    /// whole capacity).
    pub hot_window: usize,
}

impl WeftStreamOptions {
    fn apply(&self, capacity: usize) -> Res<StreamOptions> {
        let mut o = StreamOptions::new(capacity);
        if self.align != 0 {
            o = o.align(self.align);
        }
        if let Some(w) = wait_strategy(self.wait)? {
            o = o.wait(w);
        }
        if self.liveness_timeout_ms != 0 {
            o = o.liveness_timeout(millis(self.liveness_timeout_ms));
        }
        match self.hot_window {
            0 => {}
            usize::MAX => o = o.hot_window(None),
            bytes => o = o.hot_window(Some(bytes)),
        }
        Ok(o.hugepages(self.hugepages != 0)
            .lock_memory(self.lock_memory != 0))
    }
}

/// The writing end of a stream, with the reservation it may be lending.
///
/// Thread-safety: may move to another thread (with its reservation); never used from two
/// threads at once.
#[derive(Debug)]
pub struct WeftStreamWriter {
    cell: Lent<StreamWriter, WriteGrant<'static>>,
    poison: Poison,
}

/// The reading end of a stream, with the read grant it may be lending.
///
/// Thread-safety: may move to another thread (with its grant); never used from two threads
/// at once.
#[derive(Debug)]
pub struct WeftStreamReader {
    cell: Lent<StreamReader, ReadGrant<'static>>,
    poison: Poison,
}

handles!(WeftStreamWriter, WeftStreamReader);

impl WeftStreamWriter {
    fn new(w: StreamWriter) -> *mut WeftStreamWriter {
        into_handle(WeftStreamWriter {
            cell: Lent::new(w),
            poison: Poison::default(),
        })
    }
}

impl WeftStreamReader {
    fn new(r: StreamReader) -> *mut WeftStreamReader {
        into_handle(WeftStreamReader {
            cell: Lent::new(r),
            poison: Poison::default(),
        })
    }
}

/// Creates the stream `name` with `capacity` data bytes and becomes its writer.
///
/// `opts` may be NULL (defaults). On success `*writer` is the new handle; close it with
/// `weft_stream_writer_close`. A writer that closes lets the reader drain what was committed,
/// then the reader gets `WEFT_ERROR_CLOSED`.
///
/// Errors: `WEFT_ERROR_INVALID_NAME`, `WEFT_ERROR_INVALID_ARGUMENT` (capacity or options out
/// of range, a NULL pointer), `WEFT_ERROR_IN_USE` (a live writer holds the name),
/// `WEFT_ERROR_ALREADY_EXISTS`, `WEFT_ERROR_IO`.
///
/// # Safety
/// `name` is a NUL-terminated string; `opts` is NULL or valid for reading; `writer` is valid
/// for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_create(
    name: *const c_char,
    capacity: usize,
    opts: *const WeftStreamOptions,
    writer: *mut *mut WeftStreamWriter,
) -> WeftStatus {
    guard(|| {
        // SAFETY: the pointers' contract is this function's.
        let (name, out) = unsafe { (c_name(name, "name")?, Out::new(writer, "writer")?) };
        // SAFETY: opts is NULL or readable (contract); the struct holds only integers.
        let opts = unsafe { options(opts, "opts")? };
        let w = StreamWriter::create_with(name, &opts.apply(capacity)?)?;
        out.set(WeftStreamWriter::new(w));
        Ok(())
    })
}

/// Closes the writer and sets `*writer` to NULL. A reservation still lent is abandoned first
/// (the reader never sees it).
///
/// Errors: `WEFT_ERROR_INVALID_ARGUMENT` if `writer` is NULL; `WEFT_ERROR_STATE` if
/// `*writer` is NULL (closed already).
///
/// # Safety
/// `writer` is NULL or points to NULL or to a live writer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_close(
    writer: *mut *mut WeftStreamWriter,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(writer, "writer") }
}

/// The largest record this writer can ever write (half the capacity, less framing).
///
/// # Safety
/// `writer` is NULL or a live writer handle; `len` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_max_record_len(
    writer: *mut WeftStreamWriter,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_stream_writer_max_record_len", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (w, out) = unsafe { (cx.handle_mut(writer, "writer")?, Out::new(len, "len")?) };
        out.set(w.cell.owner("max_record_len")?.max_record_len());
        Ok(())
    })
}

/// Changes how this writer's blocking calls wait (a `WEFT_WAIT_*` code; `WEFT_WAIT_DEFAULT`
/// means adaptive).
///
/// # Safety
/// `writer` is NULL or a live writer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_set_wait(
    writer: *mut WeftStreamWriter,
    wait: i32,
) -> WeftStatus {
    guard_handles(c"weft_stream_writer_set_wait", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let w = unsafe { cx.handle_mut(writer, "writer")? };
        let strategy = wait_strategy(wait)?.unwrap_or_default();
        w.cell.owner("set_wait")?.set_wait_strategy(strategy);
        Ok(())
    })
}

/// How a write waits.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Never,
    Ms(u64),
}

/// Copies `len` bytes at `data` into the stream as one record, waiting for room
/// (backpressure). `data` may be NULL when `len` is 0 (an empty record).
///
/// Errors: `WEFT_ERROR_TOO_LARGE` at once for a record that can never fit;
/// `WEFT_ERROR_PEER_DEAD` if the reader dies while the stream is full; `WEFT_ERROR_CLOSED`
/// if it left; `WEFT_ERROR_STATE` while a reservation is lent; `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// `writer` is NULL or a live writer handle; `data` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_write(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_write",
            writer,
            data,
            len,
            Wait::Forever,
            false,
        )
    }
}

/// As `weft_stream_writer_write`, but `WEFT_ERROR_FULL` instead of waiting.
///
/// # Safety
/// As `weft_stream_writer_write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_try_write(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_try_write",
            writer,
            data,
            len,
            Wait::Never,
            false,
        )
    }
}

/// As `weft_stream_writer_write`, waiting at most `timeout_ms` (`WEFT_ERROR_TIMEOUT`).
///
/// # Safety
/// As `weft_stream_writer_write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_write_timeout(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
    timeout_ms: u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_write_timeout",
            writer,
            data,
            len,
            Wait::Ms(timeout_ms),
            false,
        )
    }
}

/// Copies `len` bytes at `data` into the stream as one record, but publishes it later, as a
/// buffered writer does: at `weft_stream_writer_flush`, at any other write or commit, once
/// the unpublished records reach an eighth of the capacity (at most 64 KiB), before the writer
/// waits for room, and at close. Many small records then cost one store of the write cursor.
///
/// Errors: as `weft_stream_writer_write`.
///
/// # Safety
/// As `weft_stream_writer_write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_write_deferred(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_write_deferred",
            writer,
            data,
            len,
            Wait::Forever,
            true,
        )
    }
}

/// As `weft_stream_writer_write_deferred`, but `WEFT_ERROR_FULL` instead of waiting (what
/// was deferred before is published first).
///
/// # Safety
/// As `weft_stream_writer_write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_try_write_deferred(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_try_write_deferred",
            writer,
            data,
            len,
            Wait::Never,
            true,
        )
    }
}

/// As `weft_stream_writer_write_deferred`, waiting at most `timeout_ms` for room
/// (`WEFT_ERROR_TIMEOUT`).
///
/// # Safety
/// As `weft_stream_writer_write`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_write_deferred_timeout(
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
    timeout_ms: u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        write(
            c"weft_stream_writer_write_deferred_timeout",
            writer,
            data,
            len,
            Wait::Ms(timeout_ms),
            true,
        )
    }
}

/// Publishes every record written with `weft_stream_writer_write_deferred` and not yet
/// published, waking a parked reader.
///
/// Errors: `WEFT_ERROR_STATE` while a reservation is lent.
///
/// # Safety
/// `writer` is NULL or a live writer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_flush(writer: *mut WeftStreamWriter) -> WeftStatus {
    guard_handles(c"weft_stream_writer_flush", |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let w = unsafe { cx.handle_mut(writer, "writer")? };
        w.cell.owner("flush")?.flush();
        Ok(())
    })
}

/// One record written by copy; `deferred`: published later (`write_deferred` and its forms).
///
/// # Safety
/// As `weft_stream_writer_write`.
unsafe fn write(
    entry: &'static CStr,
    writer: *mut WeftStreamWriter,
    data: *const u8,
    len: usize,
    how: Wait,
    deferred: bool,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (w, data) = unsafe {
            (
                cx.handle_mut(writer, "writer")?,
                c_bytes(data, len, "data")?,
            )
        };
        let w = w.cell.owner("write")?;
        match (how, deferred) {
            (Wait::Forever, false) => w.write(data)?,
            (Wait::Never, false) => w.try_write(data)?,
            (Wait::Ms(ms), false) => w.write_timeout(data, millis(ms))?,
            (Wait::Forever, true) => w.write_deferred(data)?,
            (Wait::Never, true) => w.try_write_deferred(data)?,
            (Wait::Ms(ms), true) => w.write_deferred_timeout(data, millis(ms))?,
        }
        Ok(())
    })
}

/// Reserves `len` contiguous bytes in the stream, waiting for room, and sets `*data` to
/// them: write the record in place, then `weft_stream_writer_commit` (or
/// `weft_stream_writer_abandon`). `*data` is valid until then; the writer lends the
/// reservation and refuses every other call with `WEFT_ERROR_STATE` meanwhile.
///
/// Errors: as `weft_stream_writer_write`.
///
/// # Safety
/// `writer` is NULL or a live writer handle; `data` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_reserve(
    writer: *mut WeftStreamWriter,
    len: usize,
    data: *mut *mut u8,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reserve(
            c"weft_stream_writer_reserve",
            writer,
            len,
            data,
            Wait::Forever,
        )
    }
}

/// As `weft_stream_writer_reserve`, but `WEFT_ERROR_FULL` instead of waiting.
///
/// # Safety
/// As `weft_stream_writer_reserve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_try_reserve(
    writer: *mut WeftStreamWriter,
    len: usize,
    data: *mut *mut u8,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reserve(
            c"weft_stream_writer_try_reserve",
            writer,
            len,
            data,
            Wait::Never,
        )
    }
}

/// As `weft_stream_writer_reserve`, waiting at most `timeout_ms`.
///
/// # Safety
/// As `weft_stream_writer_reserve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_reserve_timeout(
    writer: *mut WeftStreamWriter,
    len: usize,
    timeout_ms: u64,
    data: *mut *mut u8,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reserve(
            c"weft_stream_writer_reserve_timeout",
            writer,
            len,
            data,
            Wait::Ms(timeout_ms),
        )
    }
}

/// # Safety
/// As `weft_stream_writer_reserve`.
unsafe fn reserve(
    entry: &'static CStr,
    writer: *mut WeftStreamWriter,
    len: usize,
    data: *mut *mut u8,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (w, out) = unsafe { (cx.handle_mut(writer, "writer")?, Out::new(data, "data")?) };
        // SAFETY: the closure only builds the grant from the writer.
        let grant = unsafe {
            w.cell.lend("reserve", |w| {
                Ok(match how {
                    Wait::Forever => w.reserve(len)?,
                    Wait::Never => w.try_reserve(len)?,
                    Wait::Ms(ms) => w.reserve_timeout(len, millis(ms))?,
                })
            })?
        };
        out.set(grant.as_mut_ptr());
        Ok(())
    })
}

/// Publishes the first `len` bytes of the lent reservation as one record.
///
/// Errors: `WEFT_ERROR_STATE` if nothing is reserved; `WEFT_ERROR_INVALID_ARGUMENT` if `len`
/// is more than was reserved (the reservation stays lent).
///
/// # Safety
/// `writer` is NULL or a live writer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_commit(
    writer: *mut WeftStreamWriter,
    len: usize,
) -> WeftStatus {
    guard_handles(c"weft_stream_writer_commit", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let w = unsafe { cx.handle_mut(writer, "writer")? };
        let Some(grant) = w.cell.held() else {
            return Err(Failure::state("commit: nothing is reserved"));
        };
        if len > grant.len() {
            return Err(Failure::arg(format!(
                "commit: length {len} is more than the {} bytes reserved",
                grant.len()
            )));
        }
        // SAFETY: the grant is consumed by commit on the next line, before the cell is used
        // again.
        let grant = unsafe { w.cell.take() }.expect("checked above");
        grant.commit(len)?;
        Ok(())
    })
}

/// Abandons the lent reservation: the reader never sees it, the room is reused.
///
/// Errors: `WEFT_ERROR_STATE` if nothing is reserved.
///
/// # Safety
/// `writer` is NULL or a live writer handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_writer_abandon(writer: *mut WeftStreamWriter) -> WeftStatus {
    guard_handles(c"weft_stream_writer_abandon", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let w = unsafe { cx.handle_mut(writer, "writer")? };
        if w.cell.release() {
            Ok(())
        } else {
            Err(Failure::state("abandon: nothing is reserved"))
        }
    })
}

/// Opens the stream `name` as its reader.
///
/// Errors: `WEFT_ERROR_NOT_FOUND`; `WEFT_ERROR_IN_USE` (a live reader holds it);
/// `WEFT_ERROR_INVALID_NAME`; `WEFT_ERROR_NOT_WEFT`, `WEFT_ERROR_VERSION_MISMATCH`,
/// `WEFT_ERROR_WRONG_KIND`, `WEFT_ERROR_TRUNCATED`, `WEFT_ERROR_CORRUPT` for an object that
/// fails validation.
///
/// # Safety
/// `name` is a NUL-terminated string; `reader` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_open(
    name: *const c_char,
    reader: *mut *mut WeftStreamReader,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (name, out) = unsafe { (c_name(name, "name")?, Out::new(reader, "reader")?) };
        let r = StreamReader::open(name)?;
        out.set(WeftStreamReader::new(r));
        Ok(())
    })
}

/// As `weft_stream_reader_open`, waiting up to `timeout_ms` for the stream to appear:
/// `WEFT_ERROR_NOT_FOUND` (or `WEFT_ERROR_NOT_READY` if its creator is still at work) once
/// the time is up.
///
/// # Safety
/// As `weft_stream_reader_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_open_timeout(
    name: *const c_char,
    timeout_ms: u64,
    reader: *mut *mut WeftStreamReader,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (name, out) = unsafe { (c_name(name, "name")?, Out::new(reader, "reader")?) };
        let r = StreamReader::open_timeout(name, millis(timeout_ms))?;
        out.set(WeftStreamReader::new(r));
        Ok(())
    })
}

/// Closes the reader and sets `*reader` to NULL. A read grant still lent is released first.
///
/// Errors: `WEFT_ERROR_INVALID_ARGUMENT` if `reader` is NULL; `WEFT_ERROR_STATE` if
/// `*reader` is NULL (closed already).
///
/// # Safety
/// `reader` is NULL or points to NULL or to a live reader handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_close(
    reader: *mut *mut WeftStreamReader,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(reader, "reader") }
}

/// Changes how this reader's blocking calls wait (a `WEFT_WAIT_*` code; `WEFT_WAIT_DEFAULT`
/// means adaptive).
///
/// # Safety
/// `reader` is NULL or a live reader handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_set_wait(
    reader: *mut WeftStreamReader,
    wait: i32,
) -> WeftStatus {
    guard_handles(c"weft_stream_reader_set_wait", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let r = unsafe { cx.handle_mut(reader, "reader")? };
        let strategy = wait_strategy(wait)?.unwrap_or_default();
        r.cell.owner("set_wait")?.set_wait_strategy(strategy);
        Ok(())
    })
}

/// Waits for the next record and lends it in place: `*data` and `*len` are its bytes in
/// shared memory (no copy), valid until `weft_stream_reader_release` (or close). While a
/// record is lent, every other call on the reader is `WEFT_ERROR_STATE`.
///
/// Errors: `WEFT_ERROR_CLOSED` once the writer closed and everything was read;
/// `WEFT_ERROR_PEER_DEAD` once it died and everything it committed was read;
/// `WEFT_ERROR_STATE` while a record is lent; `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// `reader` is NULL or a live reader handle; `data` and `len` are valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_read(
    reader: *mut WeftStreamReader,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { read(c"weft_stream_reader_read", reader, data, len, Wait::Forever) }
}

/// As `weft_stream_reader_read`, but `WEFT_ERROR_EMPTY` instead of waiting.
///
/// # Safety
/// As `weft_stream_reader_read`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_try_read(
    reader: *mut WeftStreamReader,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        read(
            c"weft_stream_reader_try_read",
            reader,
            data,
            len,
            Wait::Never,
        )
    }
}

/// As `weft_stream_reader_read`, waiting at most `timeout_ms` (`WEFT_ERROR_TIMEOUT`).
///
/// # Safety
/// As `weft_stream_reader_read`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_read_timeout(
    reader: *mut WeftStreamReader,
    timeout_ms: u64,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        read(
            c"weft_stream_reader_read_timeout",
            reader,
            data,
            len,
            Wait::Ms(timeout_ms),
        )
    }
}

/// # Safety
/// As `weft_stream_reader_read`.
unsafe fn read(
    entry: &'static CStr,
    reader: *mut WeftStreamReader,
    data: *mut *const u8,
    len: *mut usize,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (r, data, len) = unsafe {
            (
                cx.handle_mut(reader, "reader")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
            )
        };
        // SAFETY: the closure only builds the grant from the reader.
        let grant = unsafe {
            r.cell.lend("read", |r| {
                Ok(match how {
                    Wait::Forever => r.read()?,
                    Wait::Never => r.try_read()?,
                    Wait::Ms(ms) => r.read_timeout(millis(ms))?,
                })
            })?
        };
        data.set(grant.as_ptr());
        len.set(grant.len());
        Ok(())
    })
}

/// Releases the lent record back to the writer.
///
/// Errors: `WEFT_ERROR_STATE` if no record is lent (never read, or released already).
///
/// # Safety
/// `reader` is NULL or a live reader handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_stream_reader_release(reader: *mut WeftStreamReader) -> WeftStatus {
    guard_handles(c"weft_stream_reader_release", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let r = unsafe { cx.handle_mut(reader, "reader")? };
        if r.cell.release() {
            Ok(())
        } else {
            Err(Failure::state("release: no record is lent"))
        }
    })
}
