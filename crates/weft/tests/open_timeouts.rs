//! The timeout forms of opening bound the whole wait, including the wait for a creator that
//! has not finished initialising its object (here one that never will: a file of zeroes, as a
//! creator killed mid-initialisation leaves behind). The plain forms allow a creator up to a
//! second; a 20 ms timeout is not stretched to that.

mod common;

use common::{Cleanup, shm_path, unique};
use std::time::{Duration, Instant};
use weft::Error;

const TIMEOUT: Duration = Duration::from_millis(20);
/// Far below the second the plain forms wait, far above any scheduling hiccup.
const BOUND: Duration = Duration::from_millis(500);

fn unfinished(tag: &str) -> (String, Cleanup) {
    let name = unique(tag);
    let c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), vec![0u8; 64 << 10]).unwrap();
    (name, c)
}

fn assert_in_time(what: &str, t: Instant) {
    assert!(
        t.elapsed() < BOUND,
        "{what} with a {TIMEOUT:?} timeout took {:?}",
        t.elapsed()
    );
}

#[test]
fn stream_open_timeout() {
    let (name, _c) = unfinished("ot-stream");
    let t = Instant::now();
    let err = weft::stream::StreamReader::open_timeout(&name, TIMEOUT).unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err}");
    assert_in_time("StreamReader::open_timeout", t);
}

#[test]
fn subscriber_connect_timeout() {
    let (name, _c) = unfinished("ot-region");
    let t = Instant::now();
    let err = weft::pubsub::Subscriber::connect_timeout(&name, TIMEOUT).unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err}");
    assert_in_time("Subscriber::connect_timeout", t);
}

#[test]
fn inspect_does_not_wait() {
    let (name, _c) = unfinished("ot-inspect");
    let t = Instant::now();
    let err = weft::pubsub::inspect(&name).unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err}");
    assert_in_time("inspect", t);
}

#[test]
fn server_connect_timeout() {
    let (name, _c) = unfinished("ot-server");
    let t = Instant::now();
    let err = weft::channel::Server::connect(&name, TIMEOUT).unwrap_err();
    assert!(
        matches!(err, Error::NotReady { .. } | Error::Timeout),
        "{err}"
    );
    assert_in_time("Server::connect", t);
}
