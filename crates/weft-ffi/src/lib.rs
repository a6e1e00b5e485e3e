//! The C ABI of weft: opaque handles, integer status codes, no panic across the boundary.
//!
//! The header `include/weft.h` is generated from this crate by cbindgen (`cbindgen.toml`)
//! and checked in; `tests/header.rs` fails when it is stale (`WEFT_BLESS=1` rewrites it).
//! `include/weft.hpp` is a header-only C++17 wrapper over it.
//!
//! Conventions, the same for every entry point:
//! - Every fallible call returns a `weft_status` (`int32_t`): `WEFT_OK` (0) or a
//!   `WEFT_ERROR_*` code. Codes 1 to 20 are weft's [`weft::ErrorKind`]s one for one; 100 is
//!   a caught panic, 101 a call made in the wrong handle state, 102 a call on a handle
//!   poisoned by an earlier panic. The thread's last error message is
//!   `weft_last_error_message()`.
//! - Results come back through out-parameters, written only on success. Every pointer is
//!   checked: a NULL where a value is required is `WEFT_ERROR_INVALID_ARGUMENT`, never a
//!   crash. Names are NUL-terminated UTF-8, scanned for at most 4096 bytes.
//! - Every handle is released by a call that takes the address of the caller's variable and
//!   sets it to NULL, so that releasing twice through it is `WEFT_ERROR_STATE`.
//! - Grants (a reservation, a read record, a reply, a request) are lent by their handle and
//!   stay inside it until committed or released; meanwhile the handle refuses other calls
//!   with `WEFT_ERROR_STATE`. Closing a handle releases what it lends.
//! - Every entry point runs inside `catch_unwind`; a panic becomes `WEFT_ERROR_PANIC` and
//!   poisons the handles the call was given: from then on every call on one of them but its
//!   release fails at once with `WEFT_ERROR_POISONED`, whose message names the call that
//!   panicked. Other handles are not affected.
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
    use super::*;
    use crate::error::hook;
    use std::ffi::{CStr, CString};
    use std::ptr::{null, null_mut};

    /// The message of the last failure on this thread.
    fn last_message() -> String {
        // SAFETY: never NULL; NUL-terminated and valid until the next call on this thread.
        unsafe { CStr::from_ptr(weft_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    /// What a call on a handle poisoned by a panic in `by` says.
    fn poisoned(what: &str, by: &str) -> String {
        format!(
            "the `{what}` handle was poisoned by an earlier panic in {by}: it may be \
             half-updated, and closing it is the only call it still accepts"
        )
    }

    /// A name of this test process for the object `what`.
    fn unique(what: &str) -> CString {
        CString::new(format!("ffi-poison-{}-{what}", std::process::id())).unwrap()
    }

    /// In process only (miri runs it): after a panic in a call, that call's handle refuses
    /// every call but its release, on any thread; other handles are untouched.
    #[test]
    fn a_panic_poisons_the_handle_of_its_call_and_only_that_one() {
        let list = |names: &[&str]| pubsub::name_list(names.iter().map(|n| n.to_string())).unwrap();
        let (mut hit, mut other) = (list(&["a", "b"]), list(&["c"]));
        let (mut len, mut name) = (0, null());
        // SAFETY: the handles are live lists made above until they are freed at the end; the
        // out-pointers are local variables.
        unsafe {
            hook::panic_at_next_borrow();
            assert_eq!(weft_name_list_len(hit, &mut len), WEFT_ERROR_PANIC);
            assert!(last_message().contains("a test panic after a handle was borrowed"));

            let rc = weft_name_list_get(hit, 0, &mut name);
            assert_eq!(
                rc,
                WEFT_ERROR_POISONED,
                "a call after the panic: {}",
                last_message()
            );
            assert_eq!(last_message(), poisoned("list", "weft_name_list_len"));
            assert_eq!(weft_last_error_code(), WEFT_ERROR_POISONED);
            assert!(name.is_null(), "nothing written");
            // For good: the same call as the one that panicked, again.
            assert_eq!(weft_name_list_len(hit, &mut len), WEFT_ERROR_POISONED);
            // From another thread too (a list may be shared by threads).
            let shared: &WeftNameList = &*hit;
            let rc = std::thread::scope(|s| {
                s.spawn(|| {
                    let mut len = 0;
                    // SAFETY: the list is live until it is freed below, after the scope.
                    let rc = weft_name_list_len(shared, &mut len);
                    (rc, last_message())
                })
                .join()
                .unwrap()
            });
            assert_eq!(
                rc,
                (WEFT_ERROR_POISONED, poisoned("list", "weft_name_list_len"))
            );

            // Another handle of the same type is untouched.
            assert_eq!(weft_name_list_len(other, &mut len), WEFT_OK);
            assert_eq!(len, 1);
            assert_eq!(weft_name_list_get(other, 0, &mut name), WEFT_OK);
            assert_eq!(CStr::from_ptr(name), c"c");

            // Its release still frees it (miri reports a leak otherwise).
            assert_eq!(weft_name_list_free(&mut hit), WEFT_OK);
            assert!(hit.is_null());
            assert_eq!(weft_name_list_free(&mut hit), WEFT_ERROR_STATE);
            assert_eq!(weft_name_list_free(&mut other), WEFT_OK);
        }
    }

    /// A stream reader that panics while it lends a record: poisoned, the writer goes on, and
    /// closing the reader releases the record and the reader's role.
    #[test]
    #[cfg_attr(miri, ignore = "shared memory")]
    fn a_poisoned_reader_is_refused_and_its_close_releases_it() {
        let name = unique("stream");
        let (mut w, mut r) = (null_mut(), null_mut());
        let (mut data, mut len) = (null(), 0);
        // SAFETY: as the header asks: a NUL-terminated name, out-pointers to locals, handles
        // this library returned.
        unsafe {
            assert_eq!(
                weft_stream_writer_create(name.as_ptr(), 4096, null(), &mut w),
                WEFT_OK
            );
            assert_eq!(weft_stream_reader_open(name.as_ptr(), &mut r), WEFT_OK);
            for record in [&b"one"[..], b"two"] {
                assert_eq!(weft_stream_writer_write(w, record.as_ptr(), 3), WEFT_OK);
            }
            assert_eq!(weft_stream_reader_read(r, &mut data, &mut len), WEFT_OK);

            hook::panic_at_next_borrow();
            assert_eq!(weft_stream_reader_release(r), WEFT_ERROR_PANIC);
            let rc = weft_stream_reader_release(r);
            assert_eq!(
                rc,
                WEFT_ERROR_POISONED,
                "a call after the panic: {}",
                last_message()
            );
            assert_eq!(
                last_message(),
                poisoned("reader", "weft_stream_reader_release")
            );
            assert_eq!(
                weft_stream_reader_try_read(r, &mut data, &mut len),
                WEFT_ERROR_POISONED
            );
            assert_eq!(
                weft_stream_reader_set_wait(r, WEFT_WAIT_PARK),
                WEFT_ERROR_POISONED
            );

            // The writer, another handle on the same stream, is untouched.
            assert_eq!(weft_stream_writer_write(w, b"six".as_ptr(), 3), WEFT_OK);

            assert_eq!(weft_stream_reader_close(&mut r), WEFT_OK);
            assert!(r.is_null());
            // The role is free again (a reader still held would be WEFT_ERROR_IN_USE), and
            // the record lent at the panic was released by the close, not left behind.
            assert_eq!(weft_stream_reader_open(name.as_ptr(), &mut r), WEFT_OK);
            assert_eq!(weft_stream_reader_try_read(r, &mut data, &mut len), WEFT_OK);
            assert_eq!(std::slice::from_raw_parts(data, len), b"two");
            assert_eq!(weft_stream_reader_close(&mut r), WEFT_OK);
            assert_eq!(weft_stream_writer_close(&mut w), WEFT_OK);
        }
    }

    /// Pub/sub: a poisoned loan is released by its publish (the C++ wrapper gives the handle
    /// up before the call), the block goes back to the pool, and a poisoned publisher
    /// refuses everything but its close.
    #[test]
    #[cfg_attr(miri, ignore = "shared memory")]
    fn a_poisoned_loan_is_released_by_its_publish_and_a_poisoned_publisher_refused() {
        let region = unique("region");
        let config = WeftPubsubConfig {
            blocks: 1,
            ..Default::default()
        };
        let (mut p, mut t, mut loan) = (null_mut(), null_mut(), null_mut());
        let (mut data, mut capacity, mut seq) = (null_mut(), 0, 0);
        // SAFETY: as the header asks: NUL-terminated names, out-pointers to locals, handles
        // this library returned.
        unsafe {
            assert_eq!(
                weft_publisher_create(region.as_ptr(), &config, &mut p),
                WEFT_OK
            );
            assert_eq!(weft_publisher_register(p, c"/t".as_ptr(), &mut t), WEFT_OK);
            assert_eq!(
                weft_publisher_loan(p, t, &mut loan, &mut data, &mut capacity),
                WEFT_OK
            );

            hook::panic_at_next_borrow();
            assert_eq!(weft_loan_set_len(loan, 1), WEFT_ERROR_PANIC);
            assert_eq!(weft_loan_set_len(loan, 1), WEFT_ERROR_POISONED);
            assert_eq!(weft_loan_publish(&mut loan, &mut seq), WEFT_ERROR_POISONED);
            let released = poisoned("loan", "weft_loan_set_len") + "; it was released";
            assert_eq!(last_message(), released);
            assert!(loan.is_null());
            // The pool's only block is free again, and the publisher was not poisoned.
            assert_eq!(
                weft_publisher_loan(p, t, &mut loan, &mut data, &mut capacity),
                WEFT_OK
            );
            assert_eq!(weft_loan_release(&mut loan), WEFT_OK);

            hook::panic_at_next_borrow();
            assert_eq!(
                weft_publisher_publish(p, t, b"x".as_ptr(), 1, null_mut()),
                WEFT_ERROR_PANIC
            );
            let rc = weft_publisher_publish(p, t, b"x".as_ptr(), 1, null_mut());
            assert_eq!(rc, WEFT_ERROR_POISONED);
            assert_eq!(
                last_message(),
                poisoned("publisher", "weft_publisher_publish")
            );
            assert_eq!(
                weft_publisher_loan(p, t, &mut loan, &mut data, &mut capacity),
                WEFT_ERROR_POISONED
            );
            assert!(loan.is_null());
            assert_eq!(
                weft_publisher_max_len(p, &mut capacity),
                WEFT_ERROR_POISONED
            );
            assert_eq!(weft_publisher_close(&mut p), WEFT_OK);
            assert_eq!(weft_topic_free(&mut t), WEFT_OK);
        }
    }

    /// Each entry point poisons in its own name: the name it passes down is its own.
    #[test]
    #[cfg_attr(miri, ignore = "text only: nothing for miri to check")]
    fn every_entry_point_names_itself() {
        let sources = [
            include_str!("stream.rs"),
            include_str!("pubsub.rs"),
            include_str!("channel.rs"),
        ];
        let mut named = 0;
        for source in sources {
            let mut parts = source.split("pub unsafe extern \"C\" fn ");
            parts.next();
            for part in parts {
                let function = &part[..part.find('(').unwrap()];
                let mut rest = part;
                while let Some(at) = rest.find("c\"weft_") {
                    let literal = &rest[at + 2..];
                    let literal = &literal[..literal.find('"').unwrap()];
                    assert_eq!(literal, function, "{function} names another entry point");
                    named += 1;
                    rest = &rest[at + 2..];
                }
            }
        }
        assert!(named > 60, "{named} names found");
    }

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
