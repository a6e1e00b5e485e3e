//! Pipelines refuse what they cannot build or deliver with an error, never a panic or an
//! abort: rings too large for the address space or the allocator, a thread name with a NUL
//! byte, a publish into a pipeline that a failed stage stopped or whose input was closed.

use std::time::{Duration, Instant};
use weft::ErrorKind;
use weft::pipeline::Pipeline;
use weft::ring::PublishError;

/// Whether the kernel grants any allocation (`vm.overcommit_memory = 1`): then a 16 TiB ring
/// would be allocated, and its initialisation would touch every page of it.
fn overcommit_always() -> bool {
    std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "1")
}

/// 2^40 slots of 16 MiB messages: more bytes than `isize` holds. Stored at `input`, carried
/// past `then` and `fan_out` (which allocate nothing more), returned by `build`.
#[test]
fn a_ring_larger_than_isize_is_an_error_from_build() {
    let err = Pipeline::builder()
        .capacity(1 << 40)
        .input::<[u8; 1 << 24]>()
        .then(|x| x[0])
        .fan_out(|x| x, |x| x as u64)
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

/// 2^40 slots of 2 MiB (a 1 MiB message and its stamp): 2^61 bytes, within `isize` but past
/// any address space, so the allocation fails whatever the overcommit policy.
#[test]
fn a_ring_past_the_address_space_is_an_error_from_build() {
    let err = Pipeline::builder()
        .capacity(1 << 40)
        .input::<[u8; 1 << 20]>()
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
}

/// The largest capacity (2^40 slots of 16 bytes, 16 TiB): the allocation fails, and `build`
/// says so instead of the process aborting.
#[test]
fn a_ring_the_allocator_refuses_is_an_error_from_build() {
    if overcommit_always() {
        eprintln!("vm.overcommit_memory = 1: a 16 TiB allocation would succeed; not run");
        return;
    }
    let err = Pipeline::builder()
        .capacity(u64::MAX)
        .input::<u64>()
        .then(|x| x + 1)
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
}

/// A thread name cannot hold a NUL byte: `build` refuses the prefix instead of panicking in
/// `std::thread::Builder::spawn`.
#[test]
fn a_nul_byte_in_the_name_is_an_error_from_build() {
    let err = Pipeline::builder()
        .name("bad\0name")
        .input::<u64>()
        .then(|x| x)
        .build()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidName, "{err}");
}

/// Once a stage failed, every stage has stopped: a publish cannot reach anyone and says so
/// (it gives the value back) instead of returning `Ok` and dropping it.
#[test]
fn publish_timeout_after_a_stage_failed_is_an_error() {
    let mut p = Pipeline::builder()
        .name("fails")
        .input::<u64>()
        .then(|x: u64| -> u64 { panic!("first message {x}") })
        .build()
        .unwrap();
    p.publish_timeout(1, Duration::from_secs(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.failure().is_none() {
        assert!(Instant::now() < deadline, "the stage never failed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Give the stage time to exit and let go of its subscription (the input then has no
    // gated subscriber, and a ring publish would succeed into nothing).
    std::thread::sleep(Duration::from_millis(100));
    for v in 2..5 {
        // `Closed` at once, not a `Timeout` after the wait: a caller that retries on timeouts
        // would retry for ever.
        let e = p
            .publish_timeout(v, Duration::from_secs(3600))
            .expect_err("a publish into a failed pipeline");
        assert_eq!(e, PublishError::Closed(v));
        assert_eq!(weft::Error::from(e).kind(), ErrorKind::Closed);
    }
    assert_eq!(
        p.shutdown().as_deref(),
        Some("stage 'fails-0' panicked: first message 1")
    );
}

/// A publish after `close_input` is `Closed` at once, whatever the timeout.
#[test]
fn publish_timeout_after_close_input_is_closed_at_once() {
    let mut p = Pipeline::builder()
        .input::<u64>()
        .then(|x| x)
        .build()
        .unwrap();
    p.close_input();
    let e = p
        .publish_timeout(7, Duration::from_secs(3600))
        .expect_err("a publish into a closed input");
    assert_eq!(e, PublishError::Closed(7));
    assert_eq!(e.into_inner(), 7);
    assert_eq!(p.output().recv(), Err(weft::ring::RecvError::Closed));
}
