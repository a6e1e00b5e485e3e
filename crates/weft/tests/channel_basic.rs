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
    let name = unique("ch-rv-left");
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
