//! Request/response between real processes (the test peer): one-to-one, and one server with
//! eight clients making 10k calls each, every reply checked byte for byte.

mod common;

use common::{Peer, Sweep, unique};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

#[cfg(not(miri))]
const CALLS: u64 = 10_000;
#[cfg(miri)]
const CALLS: u64 = 10;

#[test]
fn one_to_one_between_processes() {
    let name = unique("chp-1to1");
    let _c = Sweep(name.clone());
    let mut listener = Peer::spawn(&["channel-listen", &name]);
    listener.expect("ready");
    let target = format!("1:1:{name}");
    let client = Peer::spawn(&["channel-client", &target, "11", "2000", "3000"]);
    let (last, ok) = client.finish(WAIT);
    assert!(ok, "client: {last}");
    assert_eq!(last, "ok calls=2000");
    let (last, ok) = listener.finish(WAIT);
    assert!(ok, "listener: {last}");
    assert_eq!(last, "served calls=2000 closed");
}

#[test]
fn eight_clients_ten_thousand_calls_each_byte_exact() {
    let name = unique("chp-8x10k");
    let _c = Sweep(name.clone());
    let mut server = Peer::spawn(&["channel-server", &name, "8", "8"]);
    server.expect("ready");
    let calls = CALLS.to_string();
    let clients: Vec<Peer> = (0..8)
        .map(|i| {
            let seed = (100 + i).to_string();
            Peer::spawn(&["channel-client", &name, &seed, &calls, "512"])
        })
        .collect();
    for (i, c) in clients.into_iter().enumerate() {
        let (last, ok) = c.finish(WAIT);
        assert!(ok, "client {i}: {last}");
        assert_eq!(last, format!("ok calls={CALLS}"), "client {i}");
    }
    let (last, ok) = server.finish(WAIT);
    assert!(ok, "server: {last}");
    assert_eq!(last, format!("served calls={}", 8 * CALLS));
}
