//! Across languages and processes: the C test client (`tests/c/client.c`, built against
//! `libweft_ffi.so`) runs as its own process against a Rust peer in this test, and every
//! byte that crosses is checked on both sides.

mod common;

use common::{Child, Lang, Link, Names, build, is_pattern, length_of};
use std::time::{Duration, Instant};
use weft::channel::Server;
use weft::pubsub::{Config, Publisher, Subscriber};

const WAIT: Duration = Duration::from_secs(10);

/// A C process calls a Rust server: 2,000 requests of 0 to 4 KiB, each reply the request's
/// length and its bytes reversed, built in place in shared memory by the server.
#[test]
fn c_client_calls_a_rust_server() {
    let exe = build("client", &["tests/c/client.c"], Lang::C, Link::Shared);
    let names = Names::new("cross-call");
    let name = format!("{}-server", names.0);
    let mut server = Server::bind(&name).expect("bind the Rust server");
    const CALLS: u64 = 2000;
    let child = Child::spawn(&exe, &["call", &name, &CALLS.to_string()], &names);
    let mut conn = server.accept_timeout(WAIT).expect("the C client connects");
    let mut served = 0u64;
    loop {
        match conn.recv_request_timeout(WAIT) {
            Ok(req) => {
                let len = length_of(served, 4096);
                assert_eq!(req.len(), len, "request {served}'s length");
                assert!(is_pattern(&req, served), "request {served}'s bytes");
                req.reply_with(len + 8, |req, out| {
                    out[..8].copy_from_slice(&(req.len() as u64).to_le_bytes());
                    for (o, b) in out[8..8 + req.len()].iter_mut().zip(req.iter().rev()) {
                        *o = *b;
                    }
                    req.len() + 8
                })
                .expect("reply");
                served += 1;
            }
            Err(weft::Error::Closed) => break,
            Err(e) => panic!("after {served} requests: {e}"),
        }
    }
    assert_eq!(served, CALLS);
    assert_eq!(child.finish().trim(), format!("ok client-call {CALLS}"));
    drop((conn, server));
    assert_eq!(names.leftovers(), Vec::<String>::new());
}

/// A C process publishes into a region a Rust publisher made; a Rust subscriber receives
/// every message in order, byte-exact.
#[test]
fn c_publisher_to_a_rust_subscriber() {
    let exe = build("client", &["tests/c/client.c"], Lang::C, Link::Shared);
    let names = Names::new("cross-pub");
    let region = format!("{}-region", names.0);
    const MESSAGES: u64 = 3000;
    // Every message stays referenced by its ring slot until the ring laps it: the pool holds
    // the ring's worth of blocks and some.
    let config = Config::default()
        .ring_slots(4096)
        .blocks(4096 + 64)
        .block_size(1024);
    let publisher = Publisher::create(&region, &config).expect("create the region");
    let _topic = publisher.register("/from-c").expect("register");
    let subscriber = Subscriber::connect(&region).expect("connect");
    let mut sub = subscriber.subscribe("/from-c").expect("subscribe");
    let child = Child::spawn(&exe, &["publish", &region, &MESSAGES.to_string()], &names);
    for i in 0..MESSAGES {
        let sample = sub
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("message {i}: {e}"));
        assert_eq!(sample.seq(), i);
        assert_eq!(sample.len(), length_of(i, 1024), "message {i}'s length");
        assert!(is_pattern(&sample, i), "message {i}'s bytes");
    }
    assert_eq!(
        child.finish().trim(),
        format!("ok client-publish {MESSAGES}")
    );
    assert!(matches!(sub.try_recv(), Err(weft::Error::Empty)));
    drop((sub, subscriber, publisher));
    assert_eq!(names.leftovers(), Vec::<String>::new());
}

/// A topic that a Rust publisher unregisters, seen from C (the C ABI itself has no
/// unregister): a C subscriber receives what was published before, then every receive says
/// `WEFT_ERROR_CLOSED`, as does every publish and loan through a C publisher's handle of it.
#[test]
fn a_topic_unregistered_by_a_rust_peer_is_closed_to_c() {
    let exe = build("client", &["tests/c/client.c"], Lang::C, Link::Shared);
    let names = Names::new("cross-closed");
    let region = format!("{}-region", names.0);
    let publisher = Publisher::create(&region, &Config::default()).expect("create the region");
    let topic = publisher.register("/t").expect("register");
    const MESSAGES: u64 = 5;
    let child = Child::spawn(&exe, &["closed", &region, &MESSAGES.to_string()], &names);
    // The C side registers, then subscribes: once it is subscribed, it gets every message.
    let deadline = Instant::now() + WAIT;
    while publisher.stats(&topic).expect("stats").subscribers == 0 {
        assert!(Instant::now() < deadline, "the C subscriber never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    for i in 0..MESSAGES {
        publisher
            .publish(&topic, &i.to_le_bytes())
            .expect("publish");
    }
    publisher.unregister(&topic).expect("unregister");
    assert_eq!(
        child.finish().trim(),
        format!("ok client-closed {MESSAGES}")
    );
    drop(publisher);
    assert_eq!(names.leftovers(), Vec::<String>::new());
}
