//! Status codes, the thread-local last error, the guard every entry point runs in, the
//! poisoning of the handles a panicking call was given, and the checks every argument from C
//! goes through.
//!
//! Codes 1 to 20 are weft's [`ErrorKind`]s, one for one (`ErrorKind` is `repr(i32)`; a code is
//! `kind as i32`, so a kind added later passes through with its own number). Codes from 100
//! exist only at the C boundary: a caught panic, a call made in the wrong handle state, and a
//! call on a handle poisoned by an earlier panic.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;
use weft::{ErrorKind, WaitStrategy};

/// What every fallible call returns: `WEFT_OK` (0) or one of the `WEFT_ERROR_*` codes.
pub type WeftStatus = i32;

/// Success.
pub const WEFT_OK: WeftStatus = 0;
/// A name is not acceptable: empty or too long, not NUL-terminated within 4096 bytes, not
/// UTF-8, or with characters the kind of name does not allow.
pub const WEFT_ERROR_INVALID_NAME: WeftStatus = 1;
/// An argument is out of range, or a required pointer is NULL.
pub const WEFT_ERROR_INVALID_ARGUMENT: WeftStatus = 2;
/// No object of this name exists (a stream, a region, a topic, a server).
pub const WEFT_ERROR_NOT_FOUND: WeftStatus = 3;
/// An object of this name already exists and is in use.
pub const WEFT_ERROR_ALREADY_EXISTS: WeftStatus = 4;
/// The role asked for (a stream's writer or reader, a server) is held by a live process.
pub const WEFT_ERROR_IN_USE: WeftStatus = 5;
/// The object under the name is not a weft object.
pub const WEFT_ERROR_NOT_WEFT: WeftStatus = 6;
/// The object was made by an incompatible layout version.
pub const WEFT_ERROR_VERSION_MISMATCH: WeftStatus = 7;
/// The object is a weft object of another kind (a region opened as a stream).
pub const WEFT_ERROR_WRONG_KIND: WeftStatus = 8;
/// The object's file is smaller than its header says.
pub const WEFT_ERROR_TRUNCATED: WeftStatus = 9;
/// The object's creator never finished making it.
pub const WEFT_ERROR_NOT_READY: WeftStatus = 10;
/// A value read from shared memory failed validation; drop the handle that reported it.
pub const WEFT_ERROR_CORRUPT: WeftStatus = 11;
/// A message or reservation is larger than the object can ever hold.
pub const WEFT_ERROR_TOO_LARGE: WeftStatus = 12;
/// A bounded wait ran out of time.
pub const WEFT_ERROR_TIMEOUT: WeftStatus = 13;
/// A non-blocking call found no room (backpressure).
pub const WEFT_ERROR_FULL: WeftStatus = 14;
/// A non-blocking call found nothing to receive.
pub const WEFT_ERROR_EMPTY: WeftStatus = 15;
/// The peer closed its end and everything it sent has been received; for pub/sub, the topic
/// was unregistered (and, for a receive, everything published before was received).
pub const WEFT_ERROR_CLOSED: WeftStatus = 16;
/// The peer process died; what it sent before dying has been received.
pub const WEFT_ERROR_PEER_DEAD: WeftStatus = 17;
/// A subscriber fell behind and messages were overwritten: `weft_last_error_skipped()` says
/// exactly how many. The subscription goes on with the oldest message still there (half a
/// ring further if it is lapped again before it got through half a ring).
pub const WEFT_ERROR_LAGGED: WeftStatus = 18;
/// A name holds a value of another type than the one asked for.
pub const WEFT_ERROR_TYPE_MISMATCH: WeftStatus = 19;
/// A call to the operating system failed.
pub const WEFT_ERROR_IO: WeftStatus = 20;
/// A panic inside the library was caught at the boundary; nothing unwound into the caller.
/// Every handle the call was given is poisoned by it: the panic may have left it
/// half-updated, so from then on every call on it but its release fails with
/// `WEFT_ERROR_POISONED`. Close it.
pub const WEFT_ERROR_PANIC: WeftStatus = 100;
/// The call does not fit the handle's state: the handle is lending a grant (a read grant, a
/// reservation, a reply or a request) and must get it back first; nothing is lent that
/// could be released or committed; or a handle was released already (`*handle` is NULL).
pub const WEFT_ERROR_STATE: WeftStatus = 101;
/// The handle was given to an earlier call that panicked (`WEFT_ERROR_PANIC`), which may have
/// left it half-updated; the message names that call. Every call on it fails with this code at
/// once, from any thread, except the call that frees the handle through the address of your
/// variable (`*_close`, `*_free`, `weft_loan_release`, `weft_sample_release`), which still frees
/// it and whatever it holds or lends. So a grant lent by a poisoned handle is released by
/// closing the handle (`weft_stream_reader_release` and the like are refused).
/// `weft_loan_publish` on a poisoned loan releases it unpublished. Handles that were not given
/// to the panicking call stay usable.
pub const WEFT_ERROR_POISONED: WeftStatus = 102;

/// Every status code a call can return, for Rust code that checks statuses (the C ABI's fuzz
/// harness): one list, which a test keeps equal to the codes `weft_error_string` knows.
/// cbindgen:ignore
pub const WEFT_STATUS_CODES: [WeftStatus; 24] = [
    WEFT_OK,
    WEFT_ERROR_INVALID_NAME,
    WEFT_ERROR_INVALID_ARGUMENT,
    WEFT_ERROR_NOT_FOUND,
    WEFT_ERROR_ALREADY_EXISTS,
    WEFT_ERROR_IN_USE,
    WEFT_ERROR_NOT_WEFT,
    WEFT_ERROR_VERSION_MISMATCH,
    WEFT_ERROR_WRONG_KIND,
    WEFT_ERROR_TRUNCATED,
    WEFT_ERROR_NOT_READY,
    WEFT_ERROR_CORRUPT,
    WEFT_ERROR_TOO_LARGE,
    WEFT_ERROR_TIMEOUT,
    WEFT_ERROR_FULL,
    WEFT_ERROR_EMPTY,
    WEFT_ERROR_CLOSED,
    WEFT_ERROR_PEER_DEAD,
    WEFT_ERROR_LAGGED,
    WEFT_ERROR_TYPE_MISMATCH,
    WEFT_ERROR_IO,
    WEFT_ERROR_PANIC,
    WEFT_ERROR_STATE,
    WEFT_ERROR_POISONED,
];

/// Wait strategy: the default, which is `WEFT_WAIT_ADAPTIVE` (in options as in the
/// `*_set_wait` calls, where it sets adaptive whatever the handle was created with).
pub const WEFT_WAIT_DEFAULT: i32 = 0;
/// Spin with a CPU hint; lowest latency, one core at 100% while waiting.
pub const WEFT_WAIT_BUSY_SPIN: i32 = 1;
/// Yield the time slice between checks.
pub const WEFT_WAIT_YIELD_SPIN: i32 = 2;
/// Spin with growing pauses, then yield.
pub const WEFT_WAIT_BACKOFF_SPIN: i32 = 3;
/// Sleep in the kernel (futex) until woken; works across processes.
pub const WEFT_WAIT_PARK: i32 = 4;
/// Spin a little, yield a little, then park.
pub const WEFT_WAIT_ADAPTIVE: i32 = 5;

/// The longest C string scanned for its terminating NUL. Object names are at most 200 bytes
/// and topics 127; a longer string is refused without reading further.
pub(crate) const NAME_SCAN_MAX: usize = 4096;

/// A failed call: its code, its message, and for `Lagged` the count.
#[derive(Debug)]
pub(crate) struct Failure {
    code: WeftStatus,
    message: String,
    skipped: u64,
}

/// The result type of every entry point's body.
pub(crate) type Res<T = ()> = Result<T, Failure>;

impl From<weft::Error> for Failure {
    fn from(e: weft::Error) -> Failure {
        let skipped = match e {
            weft::Error::Lagged { skipped } => skipped,
            _ => 0,
        };
        Failure {
            code: code_of(e.kind()),
            message: e.to_string(),
            skipped,
        }
    }
}

impl Failure {
    /// An invalid argument (a NULL pointer, a value out of range) named in the message.
    pub(crate) fn arg(message: impl Into<String>) -> Failure {
        Failure {
            code: WEFT_ERROR_INVALID_ARGUMENT,
            message: message.into(),
            skipped: 0,
        }
    }

    /// A name that is not acceptable before weft even sees it (not terminated, not UTF-8).
    pub(crate) fn name(message: impl Into<String>) -> Failure {
        Failure {
            code: WEFT_ERROR_INVALID_NAME,
            message: message.into(),
            skipped: 0,
        }
    }

    /// A length no buffer can have (more than `isize::MAX` bytes): too large for any object.
    pub(crate) fn too_large(message: impl Into<String>) -> Failure {
        Failure {
            code: WEFT_ERROR_TOO_LARGE,
            message: message.into(),
            skipped: 0,
        }
    }

    /// A call that does not fit the handle's state.
    pub(crate) fn state(message: impl Into<String>) -> Failure {
        Failure {
            code: WEFT_ERROR_STATE,
            message: message.into(),
            skipped: 0,
        }
    }

    /// A call on the handle `what`, poisoned by a panic in the entry point `by`. Out of line:
    /// the borrow of every handle checks for it, and it is never the common case.
    #[cold]
    #[inline(never)]
    fn poisoned(what: &str, by: &CStr) -> Failure {
        Failure {
            code: WEFT_ERROR_POISONED,
            message: format!(
                "the `{what}` handle was poisoned by an earlier panic in {}: it may be \
                 half-updated, and closing it is the only call it still accepts",
                by.to_string_lossy()
            ),
            skipped: 0,
        }
    }

    fn panic(payload: Box<dyn std::any::Any + Send>) -> Failure {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with a non-string payload".into());
        // The payload is dropped under `catch_unwind` too: a payload whose drop panics would
        // otherwise unwind into C from here. One that does is leaked.
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(again);
        }
        Failure {
            code: WEFT_ERROR_PANIC,
            message: format!("a panic was caught at the C boundary: {what}"),
            skipped: 0,
        }
    }

    /// Stores this failure as the thread's last error and returns its code.
    fn record(self) -> WeftStatus {
        let code = self.code;
        // A NUL inside a message would cut it short in C: show it as U+FFFD instead.
        let text = CString::new(self.message.replace('\0', "\u{fffd}"))
            .unwrap_or_else(|_| CString::from(c"error message unavailable"));
        // `try_with`: during thread teardown the slot may be gone; the code still goes back.
        let _ = LAST.try_with(|last| {
            if let Ok(mut last) = last.try_borrow_mut() {
                *last = Last {
                    code,
                    message: text,
                    skipped: self.skipped,
                };
            }
        });
        code
    }
}

/// The code of a weft error kind.
pub(crate) fn code_of(kind: ErrorKind) -> WeftStatus {
    // ErrorKind is repr(i32) and its discriminants are the C codes (checked by a test).
    kind as i32
}

/// The last error of one thread.
struct Last {
    code: WeftStatus,
    message: CString,
    skipped: u64,
}

thread_local! {
    static LAST: RefCell<Last> = RefCell::new(Last {
        code: WEFT_OK,
        message: CString::default(),
        skipped: 0,
    });
}

/// Runs the body of an entry point that is given no handle to use (it makes one, releases
/// one, or needs none): an error becomes its code and the thread's last error, a panic becomes
/// [`WEFT_ERROR_PANIC`] instead of unwinding into C.
///
/// `AssertUnwindSafe`: such a body touches no state of the caller's but the handle it
/// releases, which it owns from the start (its release cleared the caller's variable), and
/// the out-parameters it has not written yet.
pub(crate) fn guard(body: impl FnOnce() -> Res) -> WeftStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => WEFT_OK,
        Ok(Err(failure)) => failure.record(),
        Err(payload) => Failure::panic(payload).record(),
    }
}

/// Runs the body of the entry point `entry`, which uses handles: as [`guard`], and the body
/// borrows every handle through the [`Call`] it is given, which refuses a poisoned one. If the
/// body panics, every handle it borrowed is poisoned in the name of `entry`.
///
/// `AssertUnwindSafe`: after a panic the handles the body used may hold a half-done
/// operation. Poisoning them keeps every later call away from that state, and releasing them
/// stays allowed (every handle's drop only releases what it owns).
pub(crate) fn guard_handles(
    entry: &'static CStr,
    body: impl FnOnce(&mut Call) -> Res,
) -> WeftStatus {
    let mut call = Call {
        borrowed: [std::ptr::null(); Call::MOST],
        len: 0,
    };
    match catch_unwind(AssertUnwindSafe(|| body(&mut call))) {
        Ok(Ok(())) => WEFT_OK,
        Ok(Err(failure)) => failure.record(),
        Err(payload) => {
            call.poison(entry);
            Failure::panic(payload).record()
        }
    }
}

// ---- poisoning ---------------------------------------------------------------------------

/// A handle's poison flag: NULL while the handle is sound; once a call that was given the
/// handle panicked, the name of that entry point, a NUL-terminated string literal. A poisoned
/// handle is refused by every call but its release ([`Call`] checks the flag at each borrow).
///
/// Written (once, NULL to a name) by [`guard_handles`] on the thread that caught the panic;
/// read at the start of every call on the handle, from whichever thread makes it.
///
/// Cost on the hot paths: one `Relaxed` load of this word (a plain load on x86-64 and AArch64)
/// and a branch not taken while the handle is sound; recording the borrow in [`Call`] stays in
/// registers once inlined. The word is in the handle's own heap block, which the call reads
/// anyway. A block is 24 to 192 bytes and only 16-byte aligned, and its field order is the
/// compiler's (`repr(C)` would make cbindgen publish the fields), so in a block that crosses a
/// line the flag may sit on the line next to the field the call reads first. The word is
/// never written while the handle is sound, so that line stays in every user's cache.
#[derive(Debug, Default)]
pub(crate) struct Poison(AtomicPtr<c_char>);

impl Poison {
    /// The entry point whose panic poisoned the handle, if one did.
    #[inline]
    fn by(&self) -> Option<&'static CStr> {
        // Relaxed: the flag guards no other data. The value it carries is the address of a
        // string literal, readable and unchanging for the life of the process, so reading the
        // name needs no ordering with the store that published it. A handle moves between
        // threads only with the caller's synchronization, which makes the store visible to
        // the next thread; on a handle shared by threads, a call that starts while another
        // thread's call is panicking may still miss it, as it would if it had started earlier.
        let p = self.0.load(Ordering::Relaxed);
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-NULL value is stored only by `poison` below, from a `&'static CStr`:
        // NUL-terminated and valid for ever.
        Some(unsafe { CStr::from_ptr(p) })
    }

    /// Poisons the handle in the name of `entry`; the first panic's name stays.
    fn poison(&self, entry: &'static CStr) {
        // Relaxed, both halves: the read-modify-write only keeps a first name from being
        // overwritten by a second panic (two threads' calls on a shared handle); the value
        // published needs no ordering (see `by`).
        let _ = self.0.compare_exchange(
            std::ptr::null_mut(),
            entry.as_ptr().cast_mut(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

/// A type of handle given to C, with a [`Poison`] flag. Implemented by [`handles!`].
///
/// # Safety
/// `POISON` is the byte offset in `Self` of a field of type [`Poison`].
pub(crate) unsafe trait Handle {
    /// The offset of the handle's [`Poison`] field.
    const POISON: usize;
}

/// Implements [`Handle`] for structs that have a field `poison: Poison`.
macro_rules! handles {
    ($($t:ident),+ $(,)?) => {$(
        // SAFETY: the offset is that of the field `poison`, whose type the closure checks.
        unsafe impl $crate::error::Handle for $t {
            const POISON: usize = {
                let _is_a_poison: fn(&$t) -> &$crate::error::Poison = |h| &h.poison;
                ::std::mem::offset_of!($t, poison)
            };
        }
    )+};
}
pub(crate) use handles;

/// The poison flag of the handle at `p`, with the provenance of `p` itself (not of a
/// reference the call makes from it), so that it stays usable after the call's references are
/// gone.
fn poison_of<T: Handle>(p: *const T) -> *const Poison {
    p.cast::<u8>().wrapping_add(T::POISON).cast::<Poison>()
}

/// The handles one entry point borrowed, so that a panic in it poisons them. Only
/// [`guard_handles`] makes one; its methods are the only way to a handle's contents for any
/// call but a release, so every call checks the flag and no handle escapes being recorded.
///
/// Recording a borrow writes this struct, which lives in the frame of [`guard_handles`]: no
/// shared line, no thread-local, no atomic.
#[derive(Debug)]
pub(crate) struct Call {
    /// The flags of the handles borrowed so far, in `borrowed[..len]`. Each points into a
    /// handle that outlives the call: the call cannot release a handle it borrowed, and the
    /// caller may not release one while a call uses it.
    borrowed: [*const Poison; Call::MOST],
    /// In range `0 ..= MOST`.
    len: usize,
}

impl Call {
    /// The most handles one call borrows: a publisher and a topic.
    const MOST: usize = 2;

    /// Refuses the handle at `p` if it is poisoned, and records it otherwise.
    ///
    /// # Safety
    /// `p` is a live handle of type `T` (not NULL, aligned) that this library returned; it is
    /// not released while this call runs.
    #[inline]
    unsafe fn enter<T: Handle>(&mut self, p: NonNull<T>, what: &str) -> Res {
        let flag = poison_of(p.as_ptr());
        // SAFETY: `flag` points to the `Poison` field of the live handle at `p` (the contract
        // of `Handle` and of this function); it is only read through shared references.
        if let Some(by) = unsafe { (*flag).by() } {
            return Err(Failure::poisoned(what, by));
        }
        debug_assert!(
            self.len < Call::MOST,
            "a call borrows more than {} handles",
            Call::MOST
        );
        if let Some(slot) = self.borrowed.get_mut(self.len) {
            *slot = flag;
            self.len += 1;
        }
        #[cfg(test)]
        hook::at_borrow();
        Ok(())
    }

    /// A handle argument, for shared use; refused if poisoned.
    ///
    /// # Safety
    /// `p` is NULL or a handle of type `T` that this library returned and that was not
    /// released; nothing else mutates it during `'a` (except through its poison flag).
    #[inline]
    pub(crate) unsafe fn handle_ref<'a, T: Handle>(
        &mut self,
        p: *const T,
        what: &str,
    ) -> Res<&'a T> {
        let nn = non_null(p, what)?;
        // SAFETY: not NULL and aligned (checked above), live (this function's contract).
        unsafe { self.enter(nn, what)? };
        // SAFETY: not NULL and aligned (checked above); a live handle of type T by the caller's
        // contract, only read during 'a.
        Ok(unsafe { nn.as_ref() })
    }

    /// A handle argument, for exclusive use; refused if poisoned.
    ///
    /// # Safety
    /// `p` is NULL or a handle of type `T` that this library returned and that was not
    /// released; nothing else uses it during `'a` (the header documents that no handle of a
    /// mutable kind may be used from two threads at once).
    #[inline]
    pub(crate) unsafe fn handle_mut<'a, T: Handle>(
        &mut self,
        p: *mut T,
        what: &str,
    ) -> Res<&'a mut T> {
        let mut nn = non_null(p, what)?;
        // SAFETY: not NULL and aligned (checked above), live (this function's contract).
        unsafe { self.enter(nn, what)? };
        // SAFETY: not NULL and aligned (checked above); a live handle of type T used by this
        // call alone, by the caller's contract.
        Ok(unsafe { nn.as_mut() })
    }

    /// Takes back a handle for a call that consumes it without being its release
    /// (`weft_loan_publish`): as [`take_handle`], but a poisoned handle is refused, and
    /// released all the same, as its release would, since `*pp` is NULL already.
    ///
    /// # Safety
    /// As [`take_handle`].
    pub(crate) unsafe fn take_handle<T: Handle>(
        &mut self,
        pp: *mut *mut T,
        what: &str,
    ) -> Res<Box<T>> {
        // SAFETY: this function's contract is `take_handle`'s.
        let handle = unsafe { take_handle(pp, what)? };
        // SAFETY: the flag is a field of the handle this call now owns (`Handle`'s contract).
        if let Some(by) = unsafe { (*poison_of(&*handle)).by() } {
            let mut refused = Failure::poisoned(what, by);
            refused.message.push_str("; it was released");
            return Err(refused);
        }
        Ok(handle)
    }

    /// Poisons every handle this call borrowed, in the name of `entry`.
    fn poison(&self, entry: &'static CStr) {
        for &flag in &self.borrowed[..self.len] {
            // SAFETY: each flag points into a handle borrowed by this call, which is still
            // live (see `borrowed`); the flag is only used through shared references.
            unsafe { (*flag).poison(entry) };
        }
    }
}

/// A panic on demand inside an entry point, for the tests of poisoning.
#[cfg(test)]
pub(crate) mod hook {
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
    }

    /// The next handle borrowed on this thread makes its call panic, once it is recorded.
    pub(crate) fn panic_at_next_borrow() {
        ARMED.set(true);
    }

    /// Panics if armed (and disarms).
    pub(crate) fn at_borrow() {
        if ARMED.replace(false) {
            panic!("a test panic after a handle was borrowed");
        }
    }
}

/// Runs a body that returns a plain value (the informational calls): a panic gives `fallback`.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Failure::panic(payload).record();
        fallback
    })
}

/// The static text of a status code.
pub(crate) fn describe(code: WeftStatus) -> &'static std::ffi::CStr {
    match code {
        WEFT_OK => c"ok",
        WEFT_ERROR_INVALID_NAME => c"invalid name",
        WEFT_ERROR_INVALID_ARGUMENT => c"invalid argument",
        WEFT_ERROR_NOT_FOUND => c"not found",
        WEFT_ERROR_ALREADY_EXISTS => c"already exists",
        WEFT_ERROR_IN_USE => c"in use",
        WEFT_ERROR_NOT_WEFT => c"not a weft object",
        WEFT_ERROR_VERSION_MISMATCH => c"layout version mismatch",
        WEFT_ERROR_WRONG_KIND => c"wrong kind of object",
        WEFT_ERROR_TRUNCATED => c"truncated",
        WEFT_ERROR_NOT_READY => c"not ready",
        WEFT_ERROR_CORRUPT => c"corrupt shared state",
        WEFT_ERROR_TOO_LARGE => c"too large",
        WEFT_ERROR_TIMEOUT => c"timed out",
        WEFT_ERROR_FULL => c"full",
        WEFT_ERROR_EMPTY => c"empty",
        WEFT_ERROR_CLOSED => c"closed",
        WEFT_ERROR_PEER_DEAD => c"peer dead",
        WEFT_ERROR_LAGGED => c"lagged",
        WEFT_ERROR_TYPE_MISMATCH => c"type mismatch",
        WEFT_ERROR_IO => c"operating system error",
        WEFT_ERROR_PANIC => c"panic caught at the C boundary",
        WEFT_ERROR_STATE => c"call not valid in the handle's state",
        WEFT_ERROR_POISONED => c"handle poisoned by an earlier panic",
        _ => c"unknown status code",
    }
}

/// The thread's last error message (empty before the first failure on this thread).
pub(crate) fn last_message() -> *const c_char {
    LAST.try_with(|last| match last.try_borrow() {
        // The CString lives in the thread-local until the next failure on this thread
        // replaces it, so the pointer stays valid until then.
        Ok(last) => last.message.as_ptr(),
        Err(_) => c"".as_ptr(),
    })
    .unwrap_or(c"".as_ptr())
}

/// The thread's last error code ([`WEFT_OK`] before the first failure).
pub(crate) fn last_code() -> WeftStatus {
    LAST.try_with(|last| last.try_borrow().map_or(WEFT_OK, |l| l.code))
        .unwrap_or(WEFT_OK)
}

/// For a last error of [`WEFT_ERROR_LAGGED`], the messages missed; 0 otherwise.
pub(crate) fn last_skipped() -> u64 {
    LAST.try_with(|last| last.try_borrow().map_or(0, |l| l.skipped))
        .unwrap_or(0)
}

// ---- arguments from C ------------------------------------------------------------------

/// Checks that `p` is not NULL and is aligned for `T`.
fn non_null<T>(p: *const T, what: &str) -> Res<NonNull<T>> {
    let Some(nn) = NonNull::new(p.cast_mut()) else {
        return Err(Failure::arg(format!("`{what}` is NULL")));
    };
    if !p.is_aligned() {
        return Err(Failure::arg(format!(
            "`{what}` is not aligned for its type"
        )));
    }
    Ok(nn)
}

/// An optional options struct: its value, or the default for NULL. A misaligned pointer is
/// refused like any other.
///
/// # Safety
/// `p` is NULL or valid for reading a `T`; `T` holds only integers (any bit pattern is a
/// valid value).
pub(crate) unsafe fn options<T: Copy + Default>(p: *const T, what: &str) -> Res<T> {
    if p.is_null() {
        return Ok(T::default());
    }
    let nn = non_null(p, what)?;
    // SAFETY: non-NULL and aligned (checked), readable (contract); any bit pattern is a `T`.
    Ok(unsafe { nn.read() })
}

/// The body of every `weft_*_close`, `_free` and `_release` of a handle: frees `*pp` and sets
/// it to NULL (dropping the handle releases whatever it owns or lends). A poisoned handle is
/// freed like any other: its flag is not read.
///
/// # Safety
/// As [`take_handle`].
pub(crate) unsafe fn free_handle<T>(pp: *mut *mut T, what: &str) -> WeftStatus {
    guard(|| {
        // SAFETY: the caller's contract, as `take_handle` requires; NULL and misaligned
        // pointers are refused before any use.
        drop(unsafe { take_handle(pp, what)? });
        Ok(())
    })
}

/// Takes back a handle for release: `*pp` is read, set to NULL, and returned boxed, so that
/// a second release through the same variable is [`WEFT_ERROR_STATE`], not a double free.
/// Poisoned or not: see [`Call::take_handle`] for a consuming call that is not a release.
///
/// # Safety
/// `pp` is NULL or points to a writable `*mut T` that is NULL or a live handle of type `T`
/// made by `Box::into_raw` in this library.
pub(crate) unsafe fn take_handle<T>(pp: *mut *mut T, what: &str) -> Res<Box<T>> {
    let pp = non_null(pp, what)?;
    // SAFETY: pp is non-NULL, aligned and writable by the caller's contract.
    let p = unsafe { pp.as_ptr().read() };
    if p.is_null() {
        return Err(Failure::state(format!(
            "`*{what}` is NULL: the handle was released already (or never made)"
        )));
    }
    if !p.is_aligned() {
        return Err(Failure::arg(format!("`*{what}` is not a handle")));
    }
    // SAFETY: as above; clearing the caller's variable first makes a repeated release
    // through it an error instead of a double free.
    unsafe { pp.as_ptr().write(std::ptr::null_mut()) };
    // SAFETY: p is a live handle made by Box::into_raw (caller's contract), now owned here
    // alone: the only variable the caller told us about no longer names it.
    Ok(unsafe { Box::from_raw(p) })
}

/// An out-parameter: checked before the call does anything, written when it succeeds.
#[derive(Debug)]
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Checks an out-pointer.
    ///
    /// # Safety
    /// `p` is NULL or valid for writing one `T` for as long as the returned `Out` lives.
    pub(crate) unsafe fn new(p: *mut T, what: &str) -> Res<Out<T>> {
        non_null(p, what).map(Out)
    }

    /// Writes the result.
    pub(crate) fn set(self, value: T) {
        // SAFETY: non-NULL, aligned (checked in `new`) and writable (the contract of `new`);
        // the previous contents are plain data or an uninitialised slot, never dropped.
        unsafe { self.0.as_ptr().write(value) }
    }
}

/// An optional out-parameter: NULL means the caller does not want the value.
///
/// # Safety
/// As [`Out::new`].
pub(crate) unsafe fn optional_out<T>(p: *mut T, what: &str) -> Res<Option<Out<T>>> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: `p` is valid for writing one `T` (this function's contract, the same as
        // `Out::new`'s).
        unsafe { Out::new(p, what) }.map(Some)
    }
}

/// Boxes a new handle for C.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// A NUL-terminated name from C, checked: not NULL, terminated within [`NAME_SCAN_MAX`]
/// bytes, UTF-8. weft then checks the characters and the length of the kind of name.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string (or to at least `NAME_SCAN_MAX` readable
/// bytes) that stays unchanged during `'a`.
pub(crate) unsafe fn c_name<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    let p = non_null(p.cast::<u8>(), what)?.as_ptr().cast_const();
    let mut len = 0;
    loop {
        if len == NAME_SCAN_MAX {
            return Err(Failure::name(format!(
                "`{what}` has no terminating NUL within {NAME_SCAN_MAX} bytes"
            )));
        }
        // SAFETY: bytes before the terminating NUL are readable (caller's contract) and the
        // scan stops at the first NUL or at NAME_SCAN_MAX.
        if unsafe { p.add(len).read() } == 0 {
            break;
        }
        len += 1;
    }
    // SAFETY: the `len` bytes before the NUL were just read one by one; they stay unchanged
    // during 'a by the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    std::str::from_utf8(bytes).map_err(|e| Failure::name(format!("`{what}` is not UTF-8 ({e})")))
}

/// A byte buffer from C: `(data, len)`; `data` may be NULL only when `len` is 0 (a NULL with
/// any other length is `WEFT_ERROR_INVALID_ARGUMENT`, as every NULL argument is). A `len` no
/// buffer can have is [`WEFT_ERROR_TOO_LARGE`], as a message too large for its object is.
///
/// # Safety
/// `data` is NULL or valid for reading `len` bytes, unchanged during `'a`.
pub(crate) unsafe fn c_bytes<'a>(data: *const u8, len: usize, what: &str) -> Res<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    let p = non_null(data, what)?;
    if len > isize::MAX as usize {
        return Err(Failure::too_large(format!(
            "`{what}` length {len} is larger than any buffer can be"
        )));
    }
    // SAFETY: non-NULL, len <= isize::MAX (checked above), readable and unchanged for 'a by
    // the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.as_ptr(), len) })
}

/// A wait strategy code from C.
pub(crate) fn wait_strategy(code: i32) -> Res<Option<WaitStrategy>> {
    Ok(Some(match code {
        WEFT_WAIT_DEFAULT => return Ok(None),
        WEFT_WAIT_BUSY_SPIN => WaitStrategy::BusySpin,
        WEFT_WAIT_YIELD_SPIN => WaitStrategy::YieldSpin,
        WEFT_WAIT_BACKOFF_SPIN => WaitStrategy::BackoffSpin,
        WEFT_WAIT_PARK => WaitStrategy::Park,
        WEFT_WAIT_ADAPTIVE => WaitStrategy::Adaptive,
        other => {
            return Err(Failure::arg(format!(
                "wait strategy {other} is not one of the WEFT_WAIT_* codes (0 to 5)"
            )));
        }
    }))
}

/// A timeout in milliseconds from C.
pub(crate) fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> (WeftStatus, String) {
        // SAFETY: last_message returns a valid NUL-terminated string of this thread.
        let msg = unsafe { CStr::from_ptr(last_message()) };
        (last_code(), msg.to_string_lossy().into_owned())
    }

    #[test]
    fn options_behind_a_misaligned_pointer_are_refused() {
        #[derive(Clone, Copy, Default)]
        #[repr(C)]
        struct Opts {
            a: u64,
        }
        let words = [0u64; 4];
        let misaligned = words.as_ptr().cast::<u8>().wrapping_add(1).cast::<Opts>();
        // SAFETY: NULL is allowed; the misaligned pointer is refused before any read.
        let (null, bad) = unsafe {
            (
                options(std::ptr::null::<Opts>(), "opts"),
                options(misaligned, "opts"),
            )
        };
        assert_eq!(null.unwrap().a, 0);
        let bad = bad.err().expect("a misaligned pointer is refused");
        assert_eq!(bad.code, WEFT_ERROR_INVALID_ARGUMENT);
        assert!(bad.message.contains("not aligned"), "{}", bad.message);
        let aligned = Opts { a: 7 };
        // SAFETY: a valid, aligned pointer.
        assert_eq!(unsafe { options(&aligned, "opts") }.unwrap().a, 7);
    }

    /// A release given a variable that holds a misaligned value (no handle is) refuses it
    /// with `WEFT_ERROR_INVALID_ARGUMENT`, leaves the variable as it was, and frees nothing.
    #[test]
    fn a_misaligned_handle_is_refused_not_freed() {
        let mut p = std::ptr::without_provenance_mut::<u64>(1);
        // SAFETY: `&mut p` is a writable variable; its value is refused before any use.
        let rc = unsafe { free_handle(&mut p, "handle") };
        assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT);
        assert_eq!(last().1, "`*handle` is not a handle");
        assert_eq!(p as usize, 1, "the variable is left as it was");
    }

    #[test]
    fn codes_are_the_error_kinds() {
        let pairs = [
            (WEFT_ERROR_INVALID_NAME, ErrorKind::InvalidName),
            (WEFT_ERROR_INVALID_ARGUMENT, ErrorKind::InvalidArgument),
            (WEFT_ERROR_NOT_FOUND, ErrorKind::NotFound),
            (WEFT_ERROR_ALREADY_EXISTS, ErrorKind::AlreadyExists),
            (WEFT_ERROR_IN_USE, ErrorKind::InUse),
            (WEFT_ERROR_NOT_WEFT, ErrorKind::NotWeft),
            (WEFT_ERROR_VERSION_MISMATCH, ErrorKind::VersionMismatch),
            (WEFT_ERROR_WRONG_KIND, ErrorKind::WrongKind),
            (WEFT_ERROR_TRUNCATED, ErrorKind::Truncated),
            (WEFT_ERROR_NOT_READY, ErrorKind::NotReady),
            (WEFT_ERROR_CORRUPT, ErrorKind::Corrupt),
            (WEFT_ERROR_TOO_LARGE, ErrorKind::TooLarge),
            (WEFT_ERROR_TIMEOUT, ErrorKind::Timeout),
            (WEFT_ERROR_FULL, ErrorKind::Full),
            (WEFT_ERROR_EMPTY, ErrorKind::Empty),
            (WEFT_ERROR_CLOSED, ErrorKind::Closed),
            (WEFT_ERROR_PEER_DEAD, ErrorKind::PeerDead),
            (WEFT_ERROR_LAGGED, ErrorKind::Lagged),
            (WEFT_ERROR_TYPE_MISMATCH, ErrorKind::TypeMismatch),
            (WEFT_ERROR_IO, ErrorKind::Io),
        ];
        for (code, kind) in pairs {
            assert_eq!(code, code_of(kind), "{kind:?}");
            assert_ne!(describe(code), c"unknown status code", "{kind:?}");
        }
        // The published list is exactly the codes with a description.
        for code in -64..=1024 {
            assert_eq!(
                describe(code) != c"unknown status code",
                WEFT_STATUS_CODES.contains(&code),
                "status {code}: described, or listed in WEFT_STATUS_CODES, not both"
            );
        }
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        assert_eq!(guard(|| panic!("boom in the body")), WEFT_ERROR_PANIC);
        let (code, msg) = last();
        assert_eq!(code, WEFT_ERROR_PANIC);
        assert!(msg.contains("boom in the body"), "{msg}");
        let n = 7;
        assert_eq!(guard(|| panic!("formatted {n}")), WEFT_ERROR_PANIC);
        assert!(last().1.contains("formatted 7"));
        assert_eq!(guard_value(5u32, || panic!("in a getter")), 5);
        assert!(last().1.contains("in a getter"));
    }

    #[test]
    fn an_error_is_recorded_per_thread_and_success_leaves_it() {
        let rc = guard(|| Err(weft::Error::Lagged { skipped: 42 }.into()));
        assert_eq!(rc, WEFT_ERROR_LAGGED);
        assert_eq!(last_skipped(), 42);
        assert_eq!(guard(|| Ok(())), WEFT_OK);
        assert_eq!(last().0, WEFT_ERROR_LAGGED);
        std::thread::spawn(|| assert_eq!(last(), (WEFT_OK, String::new())))
            .join()
            .unwrap();
        let rc = guard(|| Err(Failure::arg("with a \0 inside")));
        assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT);
        assert_eq!(last().1, "with a \u{fffd} inside");
        assert_eq!(last_skipped(), 0);
    }

    #[test]
    fn names_are_bounded_and_utf8() {
        // SAFETY: every pointer below is NULL or a NUL-terminated buffer.
        unsafe {
            assert_eq!(c_name(c"market".as_ptr(), "n").unwrap(), "market");
            assert!(c_name(std::ptr::null(), "n").is_err());
            let bad = [0xffu8, 0xfe, 0];
            let e = c_name(bad.as_ptr().cast(), "n").unwrap_err();
            assert_eq!(e.code, WEFT_ERROR_INVALID_NAME);
            let long = vec![b'a'; NAME_SCAN_MAX + 10];
            let e = c_name(long.as_ptr().cast(), "n").unwrap_err();
            assert_eq!(e.code, WEFT_ERROR_INVALID_NAME);
            assert!(c_bytes(std::ptr::null(), 0, "d").unwrap().is_empty());
            assert!(c_bytes(std::ptr::null(), 1, "d").is_err());
            let e = c_bytes([1u8].as_ptr(), usize::MAX, "d").unwrap_err();
            assert_eq!(e.code, WEFT_ERROR_TOO_LARGE);
        }
    }
}
