//! A cancel flag ends a waiting `Channel::listen_with` / `Channel::connect_with` at once, as
//! its timeout would: nothing is left under the name, which a new listen takes straight away.

mod common;

use common::{Sweep, streams_of, unique};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use weft::Error;
use weft::channel::{Channel, ChannelOptions};

const T: Duration = Duration::from_secs(10);
/// How long the waits below may take to notice their flag: far less than their timeout.
const PROMPT: Duration = Duration::from_millis(500);

/// Starts `call(name, opts)` on a thread with a cancel flag and a long timeout, sets the flag
/// once the call is waiting, and returns what it ended with and how long it took to end.
fn cancelled(
    name: &str,
    call: fn(&str, Duration, &ChannelOptions) -> weft::Result<Channel>,
) -> (weft::Result<Channel>, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let opts = ChannelOptions::new().cancelled_by(stop.clone());
    let n = name.to_string();
    let waiting = std::thread::spawn(move || call(&n, Duration::from_secs(60), &opts));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!waiting.is_finished(), "the call did not wait for its peer");
    let asked = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let ended = waiting.join().unwrap();
    (ended, asked.elapsed())
}

/// The name is free: a listen and a connect under it make a working channel at once.
fn works_again(name: &str) {
    let n = name.to_string();
    let started = Instant::now();
    let listener = std::thread::spawn(move || Channel::listen(&n, T));
    let mut client = Channel::connect(name, T).unwrap();
    let mut server = listener.join().unwrap().unwrap();
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    client.send(b"again").unwrap();
    assert_eq!(&*server.recv_timeout(T).unwrap(), b"again");
}

#[test]
fn a_cancelled_listen_ends_at_once_and_frees_its_name() {
    let name = unique("ch-cancel-listen");
    let _c = Sweep(name.clone());
    let (ended, took) = cancelled(&name, Channel::listen_with);
    assert!(matches!(ended, Err(Error::Timeout)), "{ended:?}");
    assert!(
        took < PROMPT,
        "the listen went on for {took:?} after the flag"
    );
    assert_eq!(streams_of(&name), Vec::<std::path::PathBuf>::new());
    works_again(&name);
}

#[test]
fn a_cancelled_connect_ends_at_once_and_frees_its_name() {
    let name = unique("ch-cancel-connect");
    let _c = Sweep(name.clone());
    let (ended, took) = cancelled(&name, Channel::connect_with);
    assert!(matches!(ended, Err(Error::Timeout)), "{ended:?}");
    assert!(
        took < PROMPT,
        "the connect went on for {took:?} after the flag"
    );
    assert_eq!(streams_of(&name), Vec::<std::path::PathBuf>::new());
    works_again(&name);
}

/// A flag already set does not stop a call that need not wait: the peer is there.
#[test]
fn a_flag_only_ends_a_wait() {
    let name = unique("ch-cancel-no-wait");
    let _c = Sweep(name.clone());
    let n = name.clone();
    let listener = std::thread::spawn(move || Channel::listen(&n, T));
    let s2c = common::shm_path(&format!("{name}.s2c"));
    let since = Instant::now();
    while !std::path::Path::new(&s2c).exists() {
        assert!(since.elapsed() < T, "the listener made no stream");
        std::thread::sleep(Duration::from_millis(1));
    }
    let stop = Arc::new(AtomicBool::new(true));
    let opts = ChannelOptions::new().cancelled_by(stop);
    let mut client = Channel::connect_with(&name, T, &opts).unwrap();
    let mut server = listener.join().unwrap().unwrap();
    client.send(b"through").unwrap();
    assert_eq!(&*server.recv_timeout(T).unwrap(), b"through");
}

#[test]
fn a_cancelled_server_connect_ends_at_once_and_leaves_its_slot() {
    use weft::channel::Server;
    let name = unique("ch-cancel-server");
    let _c = Sweep(name.clone());
    // No server yet: the connect waits for one to appear, and ends as its timeout would.
    let (ended, took) = cancelled(&name, Server::connect_with);
    assert!(matches!(ended, Err(Error::NotFound { .. })), "{ended:?}");
    assert!(
        took < PROMPT,
        "the connect went on for {took:?} after the flag"
    );
    // A server that does not accept: the connect waits for its answer.
    let mut server = Server::bind(&name).unwrap();
    let (ended, took) = cancelled(&name, Server::connect_with);
    assert!(matches!(ended, Err(Error::Timeout)), "{ended:?}");
    assert!(
        took < PROMPT,
        "the connect went on for {took:?} after the flag"
    );
    assert_eq!(server.slots_in_use(), 0);
    assert!(matches!(server.try_accept(), Err(Error::Empty)));
    // The next client is served as usual.
    let n = name.clone();
    let client = std::thread::spawn(move || Server::connect(&n, T));
    let mut conn = server.accept_timeout(T).unwrap();
    let mut client = client.join().unwrap().unwrap();
    client.send(b"next").unwrap();
    assert_eq!(&*conn.recv_timeout(T).unwrap(), b"next");
}
