//! The C ABI of weft: opaque handles, integer status codes, no panic across the boundary.
//!
//! The header `include/weft.h` is generated from this crate by cbindgen (`cbindgen.toml`)
//! and checked in; `tests/header.rs` fails when it is stale (`WEFT_BLESS=1` rewrites it).
//! `include/weft.hpp` is a header-only C++17 wrapper over it.
//!
//! Conventions, the same for every entry point:
//! - Every fallible call returns a `weft_status` (`int32_t`): `WEFT_OK` (0) or a
//!   `WEFT_ERROR_*` code. Codes 1 to 20 are weft's [`weft::ErrorKind`]s one for one; 100 is
//!   a caught panic, 101 a call made in the wrong handle state. The thread's last error
//!   message is `weft_last_error_message()`.
//! - Results come back through out-parameters, written only on success. Every pointer is
//!   checked: a NULL where a value is required is `WEFT_ERROR_INVALID_ARGUMENT`, never a
//!   crash. Names are NUL-terminated UTF-8, scanned for at most 4096 bytes.
//! - Every handle is released by a call that takes the address of the caller's variable and
//!   sets it to NULL, so that releasing twice through it is `WEFT_ERROR_STATE`.
//! - Grants (a reservation, a read record, a reply, a request) are lent by their handle and
//!   stay inside it until committed or released; meanwhile the handle refuses other calls
//!   with `WEFT_ERROR_STATE`. Closing a handle releases what it lends.
//! - Every entry point runs inside `catch_unwind`; a panic becomes `WEFT_ERROR_PANIC`.
//!
//! # Examples
//! The calls as C makes them, here from Rust: a record is lent by its reader until released,
//! and the reader refuses everything else meanwhile.
//! ```
//! use std::ffi::CString;
//! use std::ptr::{null, null_mut};
//! use weft_ffi::*;
//! let name = CString::new(format!("doc-ffi-{}", std::process::id())).unwrap();
//! // SAFETY: every pointer is valid as the header asks: a NUL-terminated name, out-pointers
//! // to local variables, handles this library returned.
//! unsafe {
//!     let (mut w, mut r) = (null_mut(), null_mut());
//!     assert_eq!(weft_stream_writer_create(name.as_ptr(), 4096, null(), &mut w), WEFT_OK);
//!     assert_eq!(weft_stream_reader_open(name.as_ptr(), &mut r), WEFT_OK);
//!     assert_eq!(weft_stream_writer_write(w, b"tick".as_ptr(), 4), WEFT_OK);
//!
//!     let (mut data, mut len) = (null(), 0);
//!     assert_eq!(weft_stream_reader_read(r, &mut data, &mut len), WEFT_OK);
//!     assert_eq!(std::slice::from_raw_parts(data, len), b"tick");   // in shared memory
//!     assert_eq!(weft_stream_reader_try_read(r, &mut data, &mut len), WEFT_ERROR_STATE);
//!     assert_eq!(weft_stream_reader_release(r), WEFT_OK);
//!     assert_eq!(weft_stream_reader_release(r), WEFT_ERROR_STATE);  // released twice
//!
//!     assert_eq!(weft_stream_reader_read(r, null_mut(), &mut len), WEFT_ERROR_INVALID_ARGUMENT);
//!     let msg = std::ffi::CStr::from_ptr(weft_last_error_message());
//!     assert_eq!(msg.to_str().unwrap(), "`data` is NULL");
//!
//!     assert_eq!(weft_stream_writer_close(&mut w), WEFT_OK);
//!     assert!(w.is_null());
//!     assert_eq!(weft_stream_writer_close(&mut w), WEFT_ERROR_STATE); // closed twice
//!     assert_eq!(weft_stream_reader_close(&mut r), WEFT_OK);
//! }
//! ```
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// The entry points are `unsafe extern "C"` functions whose contracts are written for C in
// their docs (which become the header's comments), each with its `# Safety` section.

// In this order in the header: the error calls, then the patterns as the README shows them.
mod error;
mod lend;

mod stream;

mod pubsub;

mod channel;

// The entry points and their types, for Rust callers (tests, other bindings) as for C.
pub use channel::*;
pub use error::*;
pub use pubsub::*;
pub use stream::*;

use std::ffi::c_char;

/// The static, NUL-terminated description of a status code ("timed out"); "unknown status
/// code" for a number that is not one. Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn weft_error_string(code: WeftStatus) -> *const c_char {
    error::describe(code).as_ptr()
}

/// The message of the last call that failed on this thread ("the reader of 'frames' (process
/// 4242) is dead"), or "" if none has. Never NULL. Valid until the next call into weft on
/// this thread; copy it to keep it. A successful call leaves it as it was.
#[unsafe(no_mangle)]
pub extern "C" fn weft_last_error_message() -> *const c_char {
    error::guard_value(c"".as_ptr(), error::last_message)
}

/// The code of the last call that failed on this thread, or `WEFT_OK` if none has.
#[unsafe(no_mangle)]
pub extern "C" fn weft_last_error_code() -> WeftStatus {
    error::guard_value(WEFT_ERROR_PANIC, error::last_code)
}

/// When the last failure on this thread was `WEFT_ERROR_LAGGED`: exactly how many messages
/// were overwritten before they were read. 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn weft_last_error_skipped() -> u64 {
    error::guard_value(0, error::last_skipped)
}

#[cfg(test)]
mod tests {
    /// The thread-safety the header promises for each handle is what the Rust types give.
    #[test]
    fn handles_move_and_share_as_documented() {
        fn moves<T: Send>() {}
        fn shares<T: Send + Sync>() {}
        moves::<weft::stream::StreamWriter>();
        moves::<weft::stream::WriteGrant<'static>>();
        moves::<weft::stream::StreamReader>();
        moves::<weft::stream::ReadGrant<'static>>();
        moves::<weft::pubsub::Publisher>();
        shares::<weft::pubsub::Topic>();
        shares::<weft::pubsub::Subscriber>();
        moves::<weft::pubsub::Subscription>();
        shares::<weft::pubsub::Sample>();
        moves::<weft::channel::Channel>();
        moves::<weft::channel::Reply<'static>>();
        moves::<weft::channel::Request<'static>>();
        moves::<weft::channel::Server>();
    }
}
