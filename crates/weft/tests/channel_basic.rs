//! Request/response in one process (two threads): the API surface, several calls in flight,
//! every timeout form, and hostile input under the name and on the wire.

mod common;

use common::unique;
use common::{Sweep, streams_of};
use std::time::{Duration, Instant};
use weft::channel::{Channel, ChannelOptions, RequestId, Server};
use weft::{Error, Role};

const T: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(100);

/// A server with one accepted connection, and the client's channel.
fn server_pair(name: &str, opts: &ChannelOptions) -> (Server, Channel, Channel) {
    let mut server = Server::bind_with(name, opts).unwrap();
    let n = name.to_string();
    let o = opts.clone();
    let client = std::thread::spawn(move || Server::connect_with(&n, T, &o).unwrap());
    let conn = server.accept_timeout(T).unwrap();
    (server, conn, client.join().unwrap())
}

fn one_to_one(name: &str) -> (Channel, Channel) {
    let n = name.to_string();
    let listener = std::thread::spawn(move || Channel::listen(&n, T).unwrap());
    let connector = Channel::connect(name, T).unwrap();
    (listener.join().unwrap(), connector)
}

#[test]
fn one_to_one_raw_records_and_calls_both_ways() {
    let name = unique("ch-1to1");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    c.send(b"up").unwrap();
    assert_eq!(&*l.recv_timeout(T).unwrap(), b"up");
    let mut g = l.reserve(4).unwrap();
    g.copy_from_slice(b"down");
    g.commit(4).unwrap();
    assert_eq!(&*c.recv_timeout(T).unwrap(), b"down");

    // Calls need the other side serving: a thread answers 100 calls.
    let server = std::thread::spawn(move || {
        for _ in 0..100 {
            let req = l.recv_request_timeout(T).unwrap();
            let n = req.len();
            req.reply_with(n + 1, |r, out| {
                out[..n].copy_from_slice(r);
                out[n] = b'!';
                n + 1
            })
            .unwrap();
        }
        l
    });
    for i in 0..100u32 {
        let req = i.to_le_bytes();
        let reply = c.call(&req).unwrap();
        assert_eq!(&reply[..4], &req);
        assert_eq!(reply[4], b'!');
    }
    let l = server.join().unwrap();
    drop(c);
    let mut l = l;
    assert!(matches!(l.recv_timeout(T), Err(Error::Closed)));
}

#[test]
fn several_calls_in_flight_answered_in_reverse_order() {
    let name = unique("ch-inflight");
    let _c = Sweep(name.clone());
    let (_server, mut conn, mut client) = server_pair(&name, &ChannelOptions::new());
    let ids: Vec<RequestId> = (0..16u64)
        .map(|i| client.send_request(&i.to_le_bytes()).unwrap())
        .collect();
    assert_eq!(client.in_flight(), 16);
    // The server reads all 16, then answers the last first.
    let mut got = Vec::new();
    for _ in 0..16 {
        let req = conn.recv_request_timeout(T).unwrap();
        got.push((req.id(), u64::from_le_bytes(req[..].try_into().unwrap())));
    }
    for (id, v) in got.iter().rev() {
        conn.reply(*id, &(v * 10).to_le_bytes()).unwrap();
    }
    // Wait for them in sending order: each arrives after the ones sent later were stashed.
    for (i, id) in ids.iter().enumerate() {
        let r = client.wait_reply_timeout(*id, T).unwrap();
        assert_eq!(r.id(), *id);
        assert_eq!(u64::from_le_bytes(r[..].try_into().unwrap()), i as u64 * 10);
    }
    assert_eq!(client.in_flight(), 0);

    // recv_reply takes whatever comes first; reserve_request / reserve_reply write in place.
    let mut g = client.reserve_request(3).unwrap();
    g.copy_from_slice(b"abc");
    let id = g.commit(3).unwrap();
    let req = conn.recv_request_timeout(T).unwrap();
    assert_eq!((&*req, req.id()), (&b"abc"[..], id));
    drop(req);
    let mut g = conn.reserve_reply(id, 8).unwrap();
    g[..2].copy_from_slice(b"ok");
    g.commit(2).unwrap();
    let r = client.recv_reply_timeout(T).unwrap();
    assert_eq!((&*r, r.id()), (&b"ok"[..], id));
    drop(r);

    // The try_ and _timeout forms of the in-place calls do the same when there is room.
    let mut g = client.try_reserve_request(2).unwrap();
    g.copy_from_slice(b"t1");
    let a = g.commit(2).unwrap();
    let mut g = client.reserve_request_timeout(2, T).unwrap();
    g.copy_from_slice(b"t2");
    let b = g.commit(2).unwrap();
    for id in [a, b] {
        let req = conn.recv_request_timeout(T).unwrap();
        assert_eq!(req.id(), id);
    }
    let mut g = conn.try_reserve_reply(a, 2).unwrap();
    g.copy_from_slice(b"r1");
    g.commit(2).unwrap();
    let mut g = conn.reserve_reply_timeout(b, 2, T).unwrap();
    g.copy_from_slice(b"r2");
    g.commit(2).unwrap();
    assert_eq!(&*client.wait_reply_timeout(a, T).unwrap(), b"r1");
    assert_eq!(&*client.wait_reply_timeout(b, T).unwrap(), b"r2");
    let echo = |r: &[u8], out: &mut [u8]| {
        out[..r.len()].copy_from_slice(r);
        r.len()
    };
    let ids = [b"q3", b"q4", b"q5"].map(|q| client.send_request(q).unwrap());
    conn.recv_request_timeout(T)
        .unwrap()
        .try_reply_with(8, echo)
        .unwrap();
    conn.recv_request_timeout(T)
        .unwrap()
        .reply_with_timeout(8, T, echo)
        .unwrap();
    conn.recv_request_timeout(T)
        .unwrap()
        .try_reply(b"r5")
        .unwrap();
    for (id, want) in ids.iter().zip([&b"q3"[..], b"q4", b"r5"]) {
        assert_eq!(&*client.wait_reply_timeout(*id, T).unwrap(), want);
    }
    // Waiting for an id nothing asked for is an error, not a hang.
    assert!(matches!(
        client.wait_reply(RequestId(999)),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn every_timeout_form_returns_in_time() {
    let name = unique("ch-timeouts");
    let _c = Sweep(name.clone());
    let within = |t: Instant| {
        let e = t.elapsed();
        assert!(e >= SHORT && e < SHORT + Duration::from_secs(3), "{e:?}");
    };

    // listen / connect with nobody on the other side.
    let t = Instant::now();
    assert!(matches!(Channel::listen(&name, SHORT), Err(Error::Timeout)));
    within(t);
    let t = Instant::now();
    assert!(matches!(
        Channel::connect(&name, SHORT),
        Err(Error::Timeout)
    ));
    within(t);

    // Server::connect with no server; a server that never accepts.
    let t = Instant::now();
    assert!(matches!(
        Server::connect(&name, SHORT),
        Err(Error::NotFound { .. })
    ));
    within(t);
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(2)).unwrap();
    let t = Instant::now();
    assert!(matches!(Server::connect(&name, SHORT), Err(Error::Timeout)));
    within(t);
    // The client that gave up left its slot and its stream; the server sets the request
    // aside and does not hand out a channel for it.
    assert!(matches!(server.try_accept(), Err(Error::Empty)));
    let t = Instant::now();
    assert!(matches!(server.accept_timeout(SHORT), Err(Error::Timeout)));
    within(t);
    drop(server);

    // Small streams, so that Full is easy to reach.
    let opts = ChannelOptions::new().capacity(4096);
    let (_server, mut conn, mut client) = server_pair(&name, &opts);
    let t = Instant::now();
    assert!(matches!(client.recv_timeout(SHORT), Err(Error::Timeout)));
    within(t);
    assert!(matches!(client.try_recv(), Err(Error::Empty)));
    let t = Instant::now();
    assert!(matches!(
        conn.recv_request_timeout(SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    assert!(matches!(conn.try_recv_request(), Err(Error::Empty)));
    let t = Instant::now();
    assert!(matches!(
        client.call_timeout(b"nobody answers", SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    // The late reply is kept for whoever asks.
    let req = conn.recv_request_timeout(T).unwrap();
    let id = req.id();
    req.reply(b"late").unwrap();
    let r = client.wait_reply_timeout(id, T).unwrap();
    assert_eq!(&*r, b"late");
    drop(r);
    // Nothing in flight: no reply can come, said at once.
    assert!(matches!(
        client.recv_reply_timeout(SHORT),
        Err(Error::InvalidArgument { .. })
    ));
    // A call that forgets its request when it times out: no longer in flight, and its late
    // reply is dropped on arrival instead of kept (nothing would ever collect it).
    assert!(matches!(
        client.call_timeout_forget(b"forget me", SHORT),
        Err(Error::Timeout)
    ));
    assert_eq!(client.in_flight(), 0);
    assert!(matches!(
        client.recv_reply_timeout(SHORT),
        Err(Error::InvalidArgument { .. })
    ));
    let req = conn.recv_request_timeout(T).unwrap();
    assert_eq!(&*req, b"forget me");
    req.reply(b"late").unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let req = conn.recv_request_timeout(T).unwrap();
            req.reply(b"own").unwrap();
        });
        assert_eq!(&*client.call(b"next").unwrap(), b"own");
    });
    assert_eq!(client.in_flight(), 0);
    assert!(
        matches!(client.try_recv_reply(), Err(Error::InvalidArgument { .. })),
        "the forgotten request's reply was kept"
    );
    // `forget` of a reply already kept drops it; of an id never sent, an error.
    let (x, y) = (
        client.send_request(b"x1").unwrap(),
        client.send_request(b"y1").unwrap(),
    );
    for _ in 0..2 {
        let req = conn.recv_request_timeout(T).unwrap();
        let body = req.to_vec();
        req.reply(&body).unwrap();
    }
    // Waiting for `y` reads `x`'s reply first and keeps it.
    assert_eq!(&*client.wait_reply_timeout(y, T).unwrap(), b"y1");
    client.forget(x).unwrap();
    assert_eq!(client.in_flight(), 0);
    assert!(matches!(
        client.try_recv_reply(),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        client.forget(x),
        Err(Error::InvalidArgument { .. })
    ));
    let a = client.send_request(b"x").unwrap();
    let t = Instant::now();
    assert!(matches!(
        client.recv_reply_timeout(SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    assert!(matches!(client.try_wait_reply(a), Err(Error::Empty)));
    let t = Instant::now();
    assert!(matches!(
        client.wait_reply_timeout(a, SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    assert!(matches!(client.try_recv_reply(), Err(Error::Empty)));

    // Fill the client-to-server stream: try_ forms say Full, _timeout forms time out.
    let msg = [7u8; 500];
    while client.try_send_request(&msg).is_ok() {}
    assert!(matches!(client.try_send_request(&msg), Err(Error::Full)));
    assert!(matches!(client.try_send(&msg), Err(Error::Full)));
    assert!(matches!(
        client.try_reserve(500).map(drop),
        Err(Error::Full)
    ));
    let t = Instant::now();
    assert!(matches!(
        client.send_request_timeout(&msg, SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    let t = Instant::now();
    assert!(matches!(
        client.send_timeout(&msg, SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    let t = Instant::now();
    assert!(matches!(
        client.reserve_timeout(500, SHORT).map(drop),
        Err(Error::Timeout)
    ));
    within(t);
    assert!(matches!(
        client.try_reserve_request(500).map(drop),
        Err(Error::Full)
    ));
    let t = Instant::now();
    assert!(matches!(
        client.reserve_request_timeout(500, SHORT).map(drop),
        Err(Error::Timeout)
    ));
    within(t);
    // And the other direction, for replies.
    while conn.try_reply(id, &msg).is_ok() {}
    assert!(matches!(conn.try_reply(id, &msg), Err(Error::Full)));
    let t = Instant::now();
    assert!(matches!(
        conn.reply_timeout(id, &msg, SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    assert!(matches!(
        conn.try_reserve_reply(id, 500).map(drop),
        Err(Error::Full)
    ));
    let t = Instant::now();
    assert!(matches!(
        conn.reserve_reply_timeout(id, 500, SHORT).map(drop),
        Err(Error::Timeout)
    ));
    within(t);
    // A held request's own reply forms; `fill` is never called without room.
    let no_room = |_: &[u8], _: &mut [u8]| -> usize { panic!("called without room") };
    let req = conn.recv_request_timeout(T).unwrap();
    let t = Instant::now();
    assert!(matches!(
        req.reply_timeout(&msg, SHORT),
        Err(Error::Timeout)
    ));
    within(t);
    let req = conn.recv_request_timeout(T).unwrap();
    assert!(matches!(req.try_reply(&msg), Err(Error::Full)));
    let req = conn.recv_request_timeout(T).unwrap();
    let t = Instant::now();
    assert!(matches!(
        req.reply_with_timeout(500, SHORT, no_room),
        Err(Error::Timeout)
    ));
    within(t);
    let req = conn.recv_request_timeout(T).unwrap();
    assert!(matches!(req.try_reply_with(500, no_room), Err(Error::Full)));
}

#[test]
fn a_full_server_says_full_and_a_freed_slot_is_reused() {
    let name = unique("ch-full");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().slots(1);
    let (mut server, _conn, client) = server_pair(&name, &opts);
    assert_eq!(server.slots_in_use(), 1);
    assert!(matches!(Server::connect(&name, SHORT), Err(Error::Full)));
    drop(client);
    assert_eq!(server.slots_in_use(), 0);
    let n = name.clone();
    let t = std::thread::spawn(move || Server::connect(&n, T).map(|_| ()));
    let mut conn2 = server.accept_timeout(T).unwrap();
    t.join().unwrap().unwrap();
    // The second client left at once after connecting: Closed.
    assert!(matches!(conn2.recv_timeout(T), Err(Error::Closed)));
}

#[test]
fn every_object_of_a_connection_is_created_0600() {
    use std::os::unix::fs::PermissionsExt;
    let name = unique("ch-mode");
    let _c = Sweep(name.clone());
    let (_server, _conn, _client) = server_pair(&name, &ChannelOptions::new());
    let mut files = streams_of(&name);
    assert_eq!(files.len(), 2, "{files:?}");
    files.push(common::shm_path(&name).into());
    for f in files {
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{f:?}");
    }
}

#[test]
fn a_live_server_keeps_its_name_and_names_are_checked() {
    let name = unique("ch-inuse");
    let _c = Sweep(name.clone());
    let _server = Server::bind(&name).unwrap();
    assert!(matches!(
        Server::bind(&name),
        Err(Error::InUse {
            role: Role::Server,
            ..
        })
    ));
    let long = "n".repeat(159);
    assert!(matches!(
        Server::bind(&long),
        Err(Error::InvalidName { .. })
    ));
    assert!(matches!(
        Channel::listen(&long, SHORT),
        Err(Error::InvalidName { .. })
    ));
    assert!(matches!(
        Server::bind_with(&unique("ch-slots"), &ChannelOptions::new().slots(0)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Server::bind_with(&unique("ch-slots"), &ChannelOptions::new().slots(257)),
        Err(Error::InvalidArgument { .. })
    ));
    // A stream capacity no stream can have is refused at bind, as `Channel::listen` refuses
    // it, and nothing is left under the name: found only at the first connection, it left a
    // bound server that refused every client and whose accept never said why.
    for capacity in [1, usize::MAX] {
        let name = unique("ch-capacity");
        let opts = ChannelOptions::new().capacity(capacity);
        assert!(matches!(
            Server::bind_with(&name, &opts),
            Err(Error::InvalidArgument {
                what: "capacity",
                ..
            })
        ));
        assert!(!std::path::Path::new(&common::shm_path(&name)).exists());
        assert!(matches!(
            Channel::listen_with(&name, SHORT, &opts),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

fn write_file(name: &str, bytes: &[u8]) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(common::shm_path(name))
        .unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
}

/// A valid rendezvous of `slots` slots whose server is `pid` (start time 0: never alive),
/// built by hand, as a hostile or stale file would be.
fn fake_rendezvous(slots: u32, total: u64) -> Vec<u8> {
    let mut b = vec![0u8; total as usize];
    b[0..8].copy_from_slice(b"WEFT\x00OBJ");
    b[8..12].copy_from_slice(&weft::shm::LAYOUT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&3u32.to_le_bytes());
    b[16..24].copy_from_slice(&total.to_le_bytes());
    b[28..32].copy_from_slice(&0x5245_4459u32.to_le_bytes());
    b[128..132].copy_from_slice(&slots.to_le_bytes());
    b[132..136].copy_from_slice(&128u32.to_le_bytes());
    b[136..144].copy_from_slice(&512u64.to_le_bytes());
    b
}

#[test]
fn stray_and_hostile_files_under_the_name_are_errors() {
    // Not a weft object at all.
    let name = unique("ch-stray");
    let _c = Sweep(name.clone());
    write_file(&name, &[0xAB; 4096]);
    assert!(matches!(
        Server::connect(&name, SHORT),
        Err(Error::NotWeft { .. })
    ));
    assert!(matches!(Server::bind(&name), Err(Error::NotWeft { .. })));
    assert!(std::path::Path::new(&common::shm_path(&name)).exists());

    // Too short to hold a header.
    let name = unique("ch-short");
    let _c2 = Sweep(name.clone());
    write_file(&name, &[0; 10]);
    assert!(matches!(
        Server::connect(&name, SHORT),
        Err(Error::Truncated { .. })
    ));

    // Another kind of object: a stream.
    let name = unique("ch-kind");
    let _c3 = Sweep(name.clone());
    let _w = weft::stream::StreamWriter::create(&name, 4096).unwrap();
    assert!(matches!(
        Server::connect(&name, SHORT),
        Err(Error::WrongKind { .. })
    ));
    assert!(matches!(Server::bind(&name), Err(Error::WrongKind { .. })));

    // A rendezvous with impossible fields: each is Corrupt or Truncated, for both sides.
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("zero-slots", fake_rendezvous(0, 1024)),
        ("many-slots", fake_rendezvous(100_000, 1024)),
        ("slots-past-end", fake_rendezvous(200, 1024)),
        ("bad-slot-size", {
            let mut b = fake_rendezvous(2, 1024);
            b[132..136].copy_from_slice(&7u32.to_le_bytes());
            b
        }),
        ("bad-offset", {
            let mut b = fake_rendezvous(2, 1024);
            b[136..144].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
    ];
    for (tag, bytes) in cases {
        let name = unique(&format!("ch-bad-{tag}"));
        let _c = Sweep(name.clone());
        write_file(&name, &bytes);
        match Server::connect(&name, SHORT) {
            Err(Error::Corrupt { .. } | Error::Truncated { .. }) => {}
            other => panic!("{tag}: connect gave {:?}", other.map(|_| ())),
        }
        match Server::bind(&name) {
            Err(Error::Corrupt { .. } | Error::Truncated { .. }) => {}
            other => panic!("{tag}: bind gave {:?}", other.map(|_| ())),
        }
    }

    // A well-formed rendezvous whose server never lived: connect reports the dead server,
    // and bind replaces it.
    let name = unique("ch-deadsrv");
    let _c = Sweep(name.clone());
    let mut b = fake_rendezvous(2, 768);
    let pid = 0x7fff_fff0u32;
    // Held (bit 31 of the owner word) by a pid that does not exist.
    b[256..264].copy_from_slice(&(pid as u64 | 1 << 31 | 1 << 32).to_le_bytes());
    b[264..268].copy_from_slice(&1u32.to_le_bytes());
    write_file(&name, &b);
    match Server::connect(&name, SHORT) {
        Err(Error::PeerDead {
            role: Role::Server,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("connect gave {:?}", other.map(|_| ())),
    }
    let mut server = Server::bind(&name).unwrap();
    let n = name.clone();
    let t = std::thread::spawn(move || Server::connect(&n, T).map(|_| ()));
    let accepted = server.accept_timeout(T);
    t.join().unwrap().unwrap();
    accepted.unwrap();
}

/// A peer's stream that was never made ready (an empty file, as a connector killed inside
/// its create leaves) is waited on within the caller's timeout, as a missing one is: `listen`
/// waited the stream's own 1 s open timeout and then failed with `NotReady`.
#[test]
fn a_stream_never_made_ready_is_waited_on_within_the_timeout() {
    let name = unique("ch-notready");
    let _c = Sweep(name.clone());
    write_file(&format!("{name}.c2s"), &[]);
    match Channel::listen(&name, SHORT) {
        Err(Error::Timeout) => {}
        other => panic!("listen gave {:?}", other.map(|_| ())),
    }
    write_file(&format!("{name}.s2c"), &[]);
    match Channel::connect(&name, SHORT) {
        Err(Error::Timeout) => {}
        other => panic!("connect gave {:?}", other.map(|_| ())),
    }
}

/// A reader that opened the listener's stream and let go (as a connector that connected and
/// closed at once does, before the listener looked at the connector's stream): nobody will read
/// the listener's stream again. The next connector could not open it and timed out, while the
/// listener took that connector's stream and returned a channel nobody read. The listener
/// makes its stream anew and pairs with the next connector.
#[test]
fn a_listener_whose_reader_left_pairs_with_the_next_connector() {
    use weft::stream::StreamReader;
    let name = unique("ch-left");
    let _c = Sweep(name.clone());
    let n = name.clone();
    let listener = std::thread::spawn(move || Channel::listen(&n, Duration::from_secs(4)));
    let s2c = format!("{name}.s2c");
    let t = Instant::now();
    let reader = loop {
        match StreamReader::open(&s2c) {
            Ok(r) => break r,
            Err(_) => {
                assert!(t.elapsed() < T, "the listener never made its stream");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    drop(reader);
    let mut c = match Channel::connect(&name, Duration::from_secs(2)) {
        Ok(ch) => ch,
        Err(e) => panic!("a live listener was waiting, yet connect failed: {e}"),
    };
    let mut l = listener.join().unwrap().unwrap();
    c.send(b"up").unwrap();
    assert_eq!(&*l.recv_timeout(T).unwrap(), b"up");
    l.send(b"down").unwrap();
    assert_eq!(&*c.recv_timeout(T).unwrap(), b"down");
}

#[test]
fn hostile_frames_are_corrupt_not_a_panic() {
    let name = unique("ch-frames");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    // A request shorter than its id.
    c.send(b"abc").unwrap();
    assert!(matches!(
        l.recv_request_timeout(T),
        Err(Error::Corrupt { .. })
    ));
    // A reply to a request nobody sent.
    let id = c.send_request(b"q").unwrap();
    let req = l.recv_request_timeout(T).unwrap();
    assert_eq!(req.id(), id);
    drop(req);
    l.reply(RequestId(id.0 + 1000), b"stranger").unwrap();
    assert!(matches!(
        c.wait_reply_timeout(id, T),
        Err(Error::Corrupt { .. })
    ));
    // And a short reply.
    l.send(b"x").unwrap();
    assert!(matches!(
        c.wait_reply_timeout(id, T),
        Err(Error::Corrupt { .. })
    ));
    // The channel still works afterwards.
    l.reply(id, b"fine").unwrap();
    assert_eq!(&*c.wait_reply_timeout(id, T).unwrap(), b"fine");
}

/// One side of a one-to-one channel pairs second, sends one record and closes at once (its
/// `connect` or `listen` and its `send` returned `Ok`): the side that waited still gets the
/// channel, the record, then `Closed`. It took the finished connection for an earlier one,
/// dropped the peer's stream as stale with the record in it, and timed out.
#[test]
fn a_peer_that_pairs_sends_and_closes_at_once_is_not_lost() {
    for listener_waits in [true, false] {
        for round in 0..3 {
            let name = unique("ch-fire");
            let _c = Sweep(name.clone());
            let n = name.clone();
            let waiting = std::thread::spawn(move || -> weft::Result<(Vec<u8>, Error)> {
                let mut ch = if listener_waits {
                    Channel::listen(&n, Duration::from_secs(10))?
                } else {
                    Channel::connect(&n, Duration::from_secs(10))?
                };
                let got = ch.recv_timeout(Duration::from_secs(10))?.to_vec();
                let after = ch.recv_timeout(Duration::from_secs(10)).unwrap_err();
                Ok((got, after))
            });
            // The waiting side makes its stream and looks for the peer's meanwhile.
            std::thread::sleep(Duration::from_millis(30));
            let mut ch = if listener_waits {
                Channel::connect(&name, Duration::from_secs(10)).unwrap()
            } else {
                Channel::listen(&name, Duration::from_secs(10)).unwrap()
            };
            ch.send(b"hello").unwrap();
            drop(ch);
            let (got, after) = waiting.join().unwrap().unwrap_or_else(|e| {
                panic!("round {round} (listener waits: {listener_waits}): {e}")
            });
            assert_eq!(got, b"hello");
            assert!(matches!(after, Error::Closed), "{after:?}");
        }
    }
}

/// A slot row's `epoch` scribbled to `2^63 - 1` (and, in a second round, to `u64::MAX`): the
/// next client's claim takes it to `2^63` (or wraps it to 0). Used as it was, that generation
/// had bit 63, the refusal bit, or was 0, "never asked": the server accepted and the client
/// never recognised the answer (or waited for one that never came), on every later claim of
/// the slot. The generation is the epoch taken into `1 ..= 2^63 - 1`.
#[test]
fn a_slot_epoch_past_2_63_still_connects() {
    use std::os::unix::fs::FileExt;
    for epoch in [(1u64 << 63) - 1, u64::MAX] {
        let name = unique("ch-gen63");
        let _c = common::Cleanup(name.clone());
        let mut server = Server::bind(&name).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(common::shm_path(&name))
            .unwrap();
        // Slot 0's participant row starts at byte 512; its `epoch` is at byte 32 of the row.
        f.write_at(&epoch.to_le_bytes(), 512 + 32).unwrap();
        let n = name.clone();
        let client = std::thread::spawn(move || {
            let mut ch = Server::connect(&n, Duration::from_secs(5))?;
            let got = ch.recv_timeout(Duration::from_secs(5))?.to_vec();
            Ok::<_, Error>(got)
        });
        let mut ch = server
            .accept_timeout(Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("epoch {epoch:#x}: accept: {e}"));
        ch.send(b"hello").unwrap();
        let got = client.join().unwrap();
        assert_eq!(
            got.as_deref().ok(),
            Some(&b"hello"[..]),
            "epoch {epoch:#x}: {got:?}"
        );
    }
}

// ---- : tests added by the mutation audit of the channel area ----------------------------

/// A one-to-one pair made with `opts` on both sides: (listener, connector).
fn one_to_one_with(name: &str, opts: &ChannelOptions) -> (Channel, Channel) {
    let n = name.to_string();
    let o = opts.clone();
    let listener = std::thread::spawn(move || Channel::listen_with(&n, T, &o).unwrap());
    let connector = Channel::connect_with(name, T, opts).unwrap();
    (listener.join().unwrap(), connector)
}

/// A base name of exactly `NAME_MAX` (158) bytes is valid for every open; one byte more is
/// `InvalidName` for every open, connects included.
#[test]
fn name_limits_are_exact_and_every_open_checks_them() {
    let mut name = unique("ch-name-max");
    while name.len() < weft::channel::NAME_MAX {
        name.push('n');
    }
    assert_eq!(name.len(), 158);
    let _c = Sweep(name.clone());
    assert!(matches!(Channel::listen(&name, SHORT), Err(Error::Timeout)));
    assert!(matches!(
        Channel::connect(&name, SHORT),
        Err(Error::Timeout)
    ));
    let mut server = Server::bind(&name).unwrap();
    let n = name.clone();
    let client = std::thread::spawn(move || Server::connect(&n, T).map(|_| ()));
    server.accept_timeout(T).unwrap();
    client.join().unwrap().unwrap();
    drop(server);

    let long = format!("{name}n");
    assert!(matches!(
        Channel::connect(&long, SHORT),
        Err(Error::InvalidName { .. })
    ));
    assert!(matches!(
        Channel::connect_with(&long, SHORT, &ChannelOptions::new()),
        Err(Error::InvalidName { .. })
    ));
    assert!(matches!(
        Server::connect(&long, SHORT),
        Err(Error::InvalidName { .. })
    ));
    assert!(!std::path::Path::new(&common::shm_path(&format!("{long}.c2s"))).exists());
}

/// `forget` of a request whose reply has not come yet: no longer in flight, and its reply,
/// when it comes, is dropped by the reply wait that reads it (`recv_reply` returns the next
/// request's reply, not the forgotten one).
#[test]
fn forget_before_the_reply_arrives() {
    let name = unique("ch-forget-early");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    let a = c.send_request(b"a").unwrap();
    c.forget(a).unwrap();
    assert_eq!(c.in_flight(), 0);
    assert!(matches!(c.forget(a), Err(Error::InvalidArgument { .. })));
    let b = c.send_request(b"b").unwrap();
    assert_eq!(c.in_flight(), 1);
    for _ in 0..2 {
        let req = l.recv_request_timeout(T).unwrap();
        let body = req.to_vec();
        req.reply(&body).unwrap();
    }
    let r = c.recv_reply_timeout(T).unwrap();
    assert_eq!((r.id(), &*r), (b, &b"b"[..]));
    drop(r);
    assert_eq!(c.in_flight(), 0);
}

/// A request forgotten by `call_timeout_forget` is no longer awaited: waiting for its id is
/// `InvalidArgument`. And only a timeout forgets: a call that fails otherwise (here a reply
/// shorter than its id, `Corrupt`) leaves its request in flight, its reply still awaited.
#[test]
fn only_a_timeout_forgets_and_a_forgotten_id_is_not_awaited() {
    let name = unique("ch-forget-id");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    assert!(matches!(
        c.call_timeout_forget(b"q", SHORT).map(|_| ()),
        Err(Error::Timeout)
    ));
    let req = l.recv_request_timeout(T).unwrap();
    let forgotten = req.id();
    drop(req);
    assert!(matches!(
        c.try_wait_reply(forgotten).map(|_| ()),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        c.wait_reply_timeout(forgotten, SHORT).map(|_| ()),
        Err(Error::InvalidArgument { .. })
    ));
    l.reply(forgotten, b"late").unwrap();

    // A hostile short record ends the call with Corrupt: the request stays in flight.
    l.send(b"x").unwrap();
    assert!(matches!(
        c.call_timeout_forget(b"kept", T).map(|_| ()),
        Err(Error::Corrupt { .. })
    ));
    assert_eq!(c.in_flight(), 1);
    let req = l.recv_request_timeout(T).unwrap();
    let kept = req.id();
    req.reply(b"answer").unwrap();
    assert_eq!(&*c.wait_reply_timeout(kept, T).unwrap(), b"answer");
    assert_eq!(c.in_flight(), 0);
}

/// Replies kept while another was awaited come out of `recv_reply` in arrival order.
#[test]
fn kept_replies_come_in_arrival_order() {
    let name = unique("ch-order");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    let ids: Vec<RequestId> = (0..4u8).map(|i| c.send_request(&[i]).unwrap()).collect();
    for _ in 0..4 {
        let req = l.recv_request_timeout(T).unwrap();
        let body = req.to_vec();
        req.reply(&body).unwrap();
    }
    // Waiting for the last keeps the first three, in the order they came.
    assert_eq!(&*c.wait_reply_timeout(ids[3], T).unwrap(), &[3]);
    for (i, id) in ids.iter().take(3).enumerate() {
        let r = c.recv_reply_timeout(T).unwrap();
        assert_eq!((r.id(), &*r), (*id, &[i as u8][..]));
    }
    assert_eq!(c.in_flight(), 0);
}

/// Every way of sending a request gives it an id of its own, in place or not.
#[test]
fn every_request_form_takes_a_fresh_id() {
    let name = unique("ch-ids");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    let mut ids = Vec::new();
    let mut g = c.reserve_request(1).unwrap();
    g[0] = 0;
    ids.push(g.commit(1).unwrap());
    let mut g = c.try_reserve_request(1).unwrap();
    g[0] = 1;
    ids.push(g.commit(1).unwrap());
    let mut g = c.reserve_request_timeout(1, T).unwrap();
    g[0] = 2;
    ids.push(g.commit(1).unwrap());
    ids.push(c.send_request(&[3]).unwrap());
    ids.push(c.try_send_request(&[4]).unwrap());
    ids.push(c.send_request_timeout(&[5], T).unwrap());
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "{ids:?}");
    assert_eq!(c.in_flight(), ids.len());
    for (i, id) in ids.iter().enumerate() {
        let req = l.recv_request_timeout(T).unwrap();
        assert_eq!((req.id(), &*req), (*id, &[i as u8][..]));
    }
    // Answered last to first, each reply goes to its own request.
    for (i, id) in ids.iter().enumerate().rev() {
        l.reply(*id, &[i as u8 + 100]).unwrap();
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(&*c.wait_reply_timeout(*id, T).unwrap(), &[i as u8 + 100]);
    }
}

/// A commit longer than the reservation sends nothing, and a request refused that way is not
/// in flight.
#[test]
fn a_refused_commit_sends_nothing_and_counts_nothing() {
    let name = unique("ch-commit");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    let g = c.reserve_request(4).unwrap();
    // The error names the length asked for, not the frame's (8 bytes more, for the id).
    assert!(matches!(
        g.commit(1 << 20),
        Err(Error::InvalidArgument { value, .. }) if value == 1 << 20
    ));
    assert_eq!(c.in_flight(), 0);
    assert!(matches!(
        c.recv_reply_timeout(SHORT).map(|_| ()),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        l.try_recv_request().map(|_| ()),
        Err(Error::Empty)
    ));
    let g = l.reserve_reply(RequestId(1), 4).unwrap();
    assert!(matches!(
        g.commit(1 << 20),
        Err(Error::InvalidArgument { value, .. }) if value == 1 << 20
    ));
    assert!(matches!(c.try_recv().map(|_| ()), Err(Error::Empty)));
    // A `fill` that says it wrote more than it reserved (up to `usize::MAX`, which with the
    // id header would wrap to a frame shorter than its id) sends nothing.
    for said in [5, 1 << 20, usize::MAX - 7, usize::MAX] {
        let id = c.send_request(b"q").unwrap();
        let req = l.recv_request_timeout(T).unwrap();
        assert!(matches!(
            req.reply_with(4, |_, _| said),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(
            matches!(c.try_recv().map(|_| ()), Err(Error::Empty)),
            "{said}"
        );
        c.forget(id).unwrap();
    }
}

/// Lengths past what a stream can hold are refused by every form, a length whose id header
/// overflows `usize` included; `max_message_len` is exact for raw records and 8 bytes more than
/// the largest request or reply.
#[test]
fn message_limits_are_exact() {
    let name = unique("ch-limits");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().capacity(4096);
    let (mut l, mut c) = one_to_one_with(&name, &opts);
    for len in [usize::MAX, usize::MAX - 7, usize::MAX - 8] {
        assert!(c.try_reserve_request(len).map(drop).is_err(), "{len}");
        assert!(
            c.reserve_request_timeout(len, SHORT).map(drop).is_err(),
            "{len}"
        );
        assert!(l.try_reserve_reply(RequestId(1), len).map(drop).is_err());
    }
    assert!(matches!(
        c.try_reserve_request(usize::MAX).map(drop),
        Err(Error::InvalidArgument { .. })
    ));
    let max = c.max_message_len();
    assert!(max > 8);
    c.try_send(&vec![1u8; max]).unwrap();
    assert_eq!(l.recv_timeout(T).unwrap().len(), max);
    assert!(matches!(
        c.try_send(&vec![1u8; max + 1]),
        Err(Error::TooLarge { .. })
    ));
    let id = c.try_send_request(&vec![2u8; max - 8]).unwrap();
    let req = l.recv_request_timeout(T).unwrap();
    assert_eq!((req.id(), req.len()), (id, max - 8));
    drop(req);
    assert!(matches!(
        c.try_send_request(&vec![2u8; max - 7]),
        Err(Error::TooLarge { .. })
    ));
    let lmax = l.max_message_len();
    l.try_reply(id, &vec![3u8; lmax - 8]).unwrap();
    assert_eq!(c.wait_reply_timeout(id, T).unwrap().len(), lmax - 8);
    assert!(matches!(
        l.try_send(&vec![3u8; lmax + 1]),
        Err(Error::TooLarge { .. })
    ));
}

/// Requests and replies may be empty: the frame is then its id alone.
#[test]
fn empty_requests_and_replies() {
    let name = unique("ch-empty");
    let _c = Sweep(name.clone());
    let (mut l, mut c) = one_to_one(&name);
    let id = c.send_request(b"").unwrap();
    let req = l.recv_request_timeout(T).unwrap();
    assert_eq!((req.id(), req.len()), (id, 0));
    req.reply(b"").unwrap();
    let r = c.wait_reply_timeout(id, T).unwrap();
    assert_eq!((r.id(), r.len()), (id, 0));
}

/// `name` is the stream this side writes: `NAME.s2c` for the listener, `NAME.c2s` for the
/// connector.
#[test]
fn name_is_the_stream_this_side_writes() {
    let name = unique("ch-names");
    let _c = Sweep(name.clone());
    let (l, c) = one_to_one(&name);
    assert_eq!(l.name(), format!("{name}.s2c"));
    assert_eq!(c.name(), format!("{name}.c2s"));
    let name = unique("ch-names-srv");
    let _c2 = Sweep(name.clone());
    let (server, conn, client) = server_pair(&name, &ChannelOptions::new());
    assert_eq!(server.name(), name);
    assert!(
        conn.name().starts_with(&format!("{name}.0.")),
        "{}",
        conn.name()
    );
    assert!(conn.name().ends_with(".s2c"), "{}", conn.name());
    assert!(client.name().ends_with(".c2s"), "{}", client.name());
}

/// Fills `ch`'s outgoing stream with raw records, down to no room for a 1-byte one; returns
/// how many.
fn fill(ch: &mut Channel) -> usize {
    let mut n = 0;
    for len in [500, 64, 1] {
        while ch.try_send(&vec![7u8; len]).is_ok() {
            n += 1;
        }
    }
    assert!(matches!(ch.try_send(b"s"), Err(Error::Full)));
    n
}

/// Reads `n` raw records from `ch` after a pause (so that the other side is waiting first).
fn drain_later(ch: &mut Channel, n: usize) {
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..n {
        drop(ch.recv_timeout(T).unwrap());
    }
}

/// Every blocking form waits for room in a full stream and succeeds once the peer reads,
/// instead of failing with `Full`.
#[test]
fn blocking_forms_wait_for_room() {
    let name = unique("ch-block");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().capacity(4096);
    let (mut l, mut c) = one_to_one_with(&name, &opts);

    // Client to server: send, reserve, send_request, reserve_request.
    for form in 0..4 {
        let n = fill(&mut c);
        std::thread::scope(|s| {
            s.spawn(|| drain_later(&mut l, n));
            match form {
                0 => c.send(b"s").unwrap(),
                1 => {
                    let mut g = c.reserve(1).unwrap();
                    g[0] = b's';
                    g.commit(1).unwrap();
                }
                2 => drop(c.send_request(b"s").unwrap()),
                _ => {
                    let mut g = c.reserve_request(1).unwrap();
                    g[0] = b's';
                    g.commit(1).unwrap();
                }
            }
        });
        let got = l.recv_timeout(T).unwrap();
        assert_eq!(got.last(), Some(&b's'), "form {form}");
    }
    // Forget the two requests sent above (never answered).
    let pending: Vec<RequestId> = (1..=2).map(RequestId).collect();
    for id in pending {
        c.forget(id).unwrap();
    }

    // Server to client: Channel::reply, reserve_reply, Request::reply, Request::reply_with.
    for form in 0..4 {
        let id = c.send_request(b"q").unwrap();
        let n = fill(&mut l);
        if form < 2 {
            assert_eq!(l.recv_request_timeout(T).unwrap().id(), id);
        }
        std::thread::scope(|s| {
            let c = &mut c;
            s.spawn(move || drain_later(c, n));
            match form {
                0 => l.reply(id, b"r").unwrap(),
                1 => {
                    let mut g = l.reserve_reply(id, 1).unwrap();
                    g[0] = b'r';
                    g.commit(1).unwrap();
                }
                2 => {
                    let req = l.recv_request_timeout(T).unwrap();
                    assert_eq!(req.id(), id);
                    req.reply(b"r").unwrap();
                }
                _ => {
                    let req = l.recv_request_timeout(T).unwrap();
                    assert_eq!(req.id(), id);
                    req.reply_with(1, |_, out| {
                        out[0] = b'r';
                        1
                    })
                    .unwrap();
                }
            }
        });
        assert_eq!(&*c.wait_reply_timeout(id, T).unwrap(), b"r", "form {form}");
    }
}

/// A server of the most slots, 256, binds, says so and serves a client; every slot of a
/// server takes a client at once, the next client is `Full`, and a connected client's request
/// is accepted once only.
#[test]
fn every_slot_takes_a_client_up_to_256() {
    let name = unique("ch-256");
    let _c = Sweep(name.clone());
    let (server, mut conn, mut client) = server_pair(&name, &ChannelOptions::new().slots(256));
    assert_eq!(server.slots(), 256);
    client.send(b"hi").unwrap();
    assert_eq!(&*conn.recv_timeout(T).unwrap(), b"hi");
    drop((server, conn, client));

    let name = unique("ch-2slots");
    let _c2 = Sweep(name.clone());
    let opts = ChannelOptions::new().slots(2);
    let (mut server, _conn1, _client1) = server_pair(&name, &opts);
    let n = name.clone();
    let second = std::thread::spawn(move || Server::connect(&n, T));
    let mut conn2 = server.accept_timeout(T).unwrap();
    let mut client2 = second.join().unwrap().unwrap();
    assert_eq!(server.slots_in_use(), 2);
    client2.send(b"two").unwrap();
    assert_eq!(&*conn2.recv_timeout(T).unwrap(), b"two");
    assert!(matches!(Server::connect(&name, SHORT), Err(Error::Full)));
    assert!(matches!(server.try_accept().map(|_| ()), Err(Error::Empty)));
}

/// A client that finds every slot taken waits, within its timeout, for one to be freed.
#[test]
fn a_client_waits_for_a_slot_freed_in_time() {
    let name = unique("ch-slot-wait");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().slots(1);
    let (mut server, conn, client) = server_pair(&name, &opts);
    let n = name.clone();
    let waiting = std::thread::spawn(move || Server::connect(&n, T));
    // Let the second client find the server full first (the result does not depend on it).
    std::thread::sleep(Duration::from_millis(100));
    drop(client);
    drop(conn);
    let mut conn2 = server.accept_timeout(T).unwrap();
    let mut client2 = waiting
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("a slot was freed within the timeout, yet: {e}"));
    client2.send(b"in").unwrap();
    assert_eq!(&*conn2.recv_timeout(T).unwrap(), b"in");
}

/// A server dropped while a client waits for its answer: the client gets `Closed` (the server
/// left), not a timeout.
#[test]
fn a_server_that_leaves_while_a_client_waits_says_closed() {
    let name = unique("ch-srv-left");
    let _c = Sweep(name.clone());
    let server = Server::bind(&name).unwrap();
    let n = name.clone();
    let waiting = std::thread::spawn(move || Server::connect(&n, Duration::from_secs(8)));
    let since = Instant::now();
    while server.slots_in_use() == 0 {
        assert!(since.elapsed() < T, "the client never claimed a slot");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(server);
    match waiting.join().unwrap() {
        Err(Error::Closed) => {}
        other => panic!("connect gave {:?}", other.map(|_| ())),
    }
}

/// A well-formed rendezvous whose server row was never claimed: no server is there, so a
/// connect ends with `NotFound` (after waiting its timeout for one), not `Closed`.
#[test]
fn a_rendezvous_without_a_server_is_not_found() {
    let name = unique("ch-no-srv");
    let _c = Sweep(name.clone());
    write_file(&name, &fake_rendezvous(2, 768));
    match Server::connect(&name, SHORT) {
        Err(Error::NotFound { .. }) => {}
        other => panic!("connect gave {:?}", other.map(|_| ())),
    }
}

/// A client the server cannot serve (here its stream's name is taken by a foreign file) is
/// refused: the client gets `Closed`, and the server's accept does not report it.
#[test]
fn a_refused_client_gets_closed() {
    use std::os::unix::fs::FileExt;
    let name = unique("ch-refused");
    let _c = Sweep(name.clone());
    let mut server = Server::bind(&name).unwrap();
    // The instance is the rendezvous's creation time (header bytes 40..48); the first claim
    // of slot 0 is generation 1.
    let f = std::fs::File::open(common::shm_path(&name)).unwrap();
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, 40).unwrap();
    let instance = u64::from_le_bytes(b);
    write_file(&format!("{name}.0.{instance:x}-1.s2c"), &[0xAB; 4096]);
    let n = name.clone();
    let client = std::thread::spawn(move || Server::connect(&n, T).map(|_| ()));
    let since = Instant::now();
    while !client.is_finished() {
        assert!(since.elapsed() < T, "the client never ended");
        match server.accept_timeout(SHORT) {
            Err(Error::Timeout) => {}
            other => panic!("accept gave {:?}", other.map(|_| ())),
        }
    }
    match client.join().unwrap() {
        Err(Error::Closed) => {}
        other => panic!("connect gave {other:?}"),
    }
}

/// `inspect` lists the slots clients claimed, no others.
#[test]
fn inspect_lists_claimed_slots_only() {
    let name = unique("ch-inspect");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().slots(4);
    let server = Server::bind_with(&name, &opts).unwrap();
    let info = Server::inspect(&name).unwrap();
    assert_eq!((info.slots, info.clients.len()), (4, 0));
    drop(server);
    let name = unique("ch-inspect2");
    let _c2 = Sweep(name.clone());
    let (_server, _conn, _client) = server_pair(&name, &opts);
    let info = Server::inspect(&name).unwrap();
    assert_eq!((info.slots, info.clients.len()), (4, 1));
}

/// The server accepts and closes its channel, having sent one record, before the client opened
/// the server's stream: the client still gets its channel, the record, then `Closed`.
#[test]
fn a_server_channel_closed_before_the_client_opens_it_is_read() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use weft::shm::{HandshakeStep, pause_handshake_at};
    static RELEASE: AtomicBool = AtomicBool::new(false);
    fn hold() {
        if std::thread::current().name() == Some("handshake-held") {
            let since = Instant::now();
            while !RELEASE.load(Ordering::Acquire) && since.elapsed() < T {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    assert!(pause_handshake_at(HandshakeStep::ClientAnswered, hold));
    let name = unique("ch-closed-early");
    let _c = Sweep(name.clone());
    let mut server = Server::bind(&name).unwrap();
    let n = name.clone();
    let client = std::thread::Builder::new()
        .name("handshake-held".into())
        .spawn(move || -> weft::Result<(Vec<u8>, Error)> {
            let mut ch = Server::connect(&n, T)?;
            let got = ch.recv_timeout(T)?.to_vec();
            Ok((got, ch.recv_timeout(T).unwrap_err()))
        })
        .unwrap();
    let mut conn = server.accept_timeout(T).unwrap();
    conn.send(b"bye").unwrap();
    drop(conn);
    RELEASE.store(true, Ordering::Release);
    let (got, after) = client
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("connect: {e}"));
    assert_eq!(got, b"bye");
    assert!(matches!(after, Error::Closed), "{after:?}");
}
