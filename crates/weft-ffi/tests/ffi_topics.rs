//! A topic handle belongs to the publisher handle it was registered through: a loan or a
//! publish through any other publisher is `WEFT_ERROR_INVALID_ARGUMENT`, also when that
//! publisher was closed and a new one was made in the memory it freed.

mod common;

use common::Names;
use std::ffi::CString;
use std::ptr::{null, null_mut};
use weft_ffi::*;

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

/// Registers `path` through `p`.
///
/// # Safety
/// `p` is a live publisher handle.
unsafe fn register(p: *mut WeftPublisher, path: &str) -> *mut WeftTopic {
    let mut t = null_mut();
    // SAFETY: a live publisher (the caller's), a NUL-terminated path, a local out-pointer.
    let rc = unsafe { weft_publisher_register(p, c(path).as_ptr(), &mut t) };
    assert_eq!(rc, WEFT_OK, "register {path}");
    t
}

/// A topic of a closed publisher, given to the next publisher made (which the allocator
/// usually places where the closed one was): refused, and nothing reaches the new region's
/// topic of the same index. Found by the `c_abi` fuzz target: weft told publishers apart by
/// the address of their mapping's bookkeeping, which a later publisher reuses, so the message
/// went to the other region's second topic.
#[test]
fn a_topic_of_a_closed_publisher_is_refused_by_the_next_one() {
    let names = Names::new("topic-of-closed");
    let first = c(&format!("{}-a", names.0));
    // SAFETY: every pointer is a live handle this test made, a NUL-terminated string, a
    // local out-pointer or a buffer of the length passed with it.
    unsafe {
        let mut p = null_mut();
        assert_eq!(
            weft_publisher_create(first.as_ptr(), null(), &mut p),
            WEFT_OK
        );
        let mut zero = register(p, "/a/zero");
        let mut one = register(p, "/a/one");
        assert_eq!(weft_publisher_close(&mut p), WEFT_OK);

        // Several rounds, each closing its publisher, so that one of them at least gets the
        // memory of the one before.
        for round in 0..8 {
            let region = c(&format!("{}-b{round}", names.0));
            let mut p = null_mut();
            assert_eq!(
                weft_publisher_create(region.as_ptr(), null(), &mut p),
                WEFT_OK
            );
            let mut own = [register(p, "/b/zero"), register(p, "/b/one")];
            let mut s = null_mut();
            assert_eq!(
                weft_subscriber_connect(region.as_ptr(), null(), &mut s),
                WEFT_OK
            );
            let mut sub = null_mut();
            assert_eq!(
                weft_subscriber_subscribe(s, c"/b/one".as_ptr(), &mut sub),
                WEFT_OK
            );

            let msg = b"meant for /a/one";
            for t in [zero, one] {
                let rc = weft_publisher_publish(p, t, msg.as_ptr(), msg.len(), null_mut());
                assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT, "round {round}: publish");
                let (mut loan, mut data, mut cap) = (null_mut(), null_mut(), 0);
                let rc = weft_publisher_loan(p, t, &mut loan, &mut data, &mut cap);
                assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT, "round {round}: loan");
                assert!(loan.is_null());
            }
            let mut sample = null_mut();
            let rc = weft_subscription_try_recv(sub, &mut sample);
            assert_eq!(rc, WEFT_ERROR_EMPTY, "round {round}: /b/one got a message");

            // Its own topics still work.
            let rc = weft_publisher_publish(p, own[1], msg.as_ptr(), msg.len(), null_mut());
            assert_eq!(rc, WEFT_OK, "round {round}: publish to its own topic");
            assert_eq!(weft_subscription_try_recv(sub, &mut sample), WEFT_OK);
            assert_eq!(weft_sample_release(&mut sample), WEFT_OK);

            assert_eq!(weft_subscription_close(&mut sub), WEFT_OK);
            assert_eq!(weft_subscriber_close(&mut s), WEFT_OK);
            for t in &mut own {
                assert_eq!(weft_topic_free(t), WEFT_OK);
            }
            assert_eq!(weft_publisher_close(&mut p), WEFT_OK);
        }
        assert_eq!(weft_topic_free(&mut zero), WEFT_OK);
        assert_eq!(weft_topic_free(&mut one), WEFT_OK);
    }
}

/// Two publishers of one region at once: each refuses the other's topic handles, although
/// they name the same topic.
#[test]
fn a_topic_of_another_live_publisher_is_refused() {
    let names = Names::new("topic-of-other");
    let region = c(&names.0);
    // SAFETY: as in the test above.
    unsafe {
        let (mut p1, mut p2) = (null_mut(), null_mut());
        assert_eq!(
            weft_publisher_create(region.as_ptr(), null(), &mut p1),
            WEFT_OK
        );
        assert_eq!(
            weft_publisher_open(region.as_ptr(), null(), &mut p2),
            WEFT_OK
        );
        let mut t1 = register(p1, "/same");
        let mut t2 = register(p2, "/same");
        for (p, t) in [(p1, t2), (p2, t1)] {
            let rc = weft_publisher_publish(p, t, b"x".as_ptr(), 1, null_mut());
            assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT);
            // A loan too, refused by this layer's own check (before the library's).
            let (mut loan, mut data, mut cap) = (null_mut(), null_mut(), 0);
            let rc = weft_publisher_loan(p, t, &mut loan, &mut data, &mut cap);
            assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT);
            let msg = std::ffi::CStr::from_ptr(weft_last_error_message());
            assert!(
                msg.to_string_lossy().contains("another publisher handle"),
                "{msg:?}"
            );
            assert!(loan.is_null() && data.is_null());
        }
        for (p, t) in [(p1, t1), (p2, t2)] {
            assert_eq!(
                weft_publisher_publish(p, t, b"x".as_ptr(), 1, null_mut()),
                WEFT_OK
            );
        }
        assert_eq!(weft_topic_free(&mut t1), WEFT_OK);
        assert_eq!(weft_topic_free(&mut t2), WEFT_OK);
        assert_eq!(weft_publisher_close(&mut p1), WEFT_OK);
        assert_eq!(weft_publisher_close(&mut p2), WEFT_OK);
    }
}
