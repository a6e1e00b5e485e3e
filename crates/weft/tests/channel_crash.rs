//! SIGKILL on either side of a request/response connection: a dead client frees its slot and
//! the other clients go on; a dead server is PeerDead for its clients, never a hang; a server
//! bound again under the same name serves new clients.

mod common;

use common::{Peer, Sweep, streams_of, unique};
use std::time::{Duration, Instant};
use weft::channel::{Channel, ChannelOptions, Server};
use weft::stream::StreamReader;
use weft::{Error, Role};

const WAIT: Duration = Duration::from_secs(20);
/// Liveness is read from /proc (same pid namespace) at most every 50 ms while waiting; the
/// bound leaves slack for a loaded machine.
const BOUND: Duration = Duration::from_secs(3);

#[test]
fn a_killed_client_frees_its_slot_and_the_others_go_on() {
    let name = unique("chc-client");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(2)).unwrap();
    // An in-process client on one slot, a peer process on the other.
    let n = name.clone();
    let mine = std::thread::spawn(move || Server::connect(&n, WAIT).unwrap());
    let mut conn_a = server.accept_timeout(WAIT).unwrap();
    let mut a = mine.join().unwrap();
    let mut peer = Peer::spawn(&["channel-hold-client", &name]);
    let mut conn_b = server.accept_timeout(WAIT).unwrap();
    let req = conn_b.recv_request_timeout(WAIT).unwrap();
    req.reply(b"held").unwrap();
    peer.expect("ready");
    assert_eq!(server.slots_in_use(), 2);
    // Every slot is taken: a third client is turned away.
    assert!(matches!(
        Server::connect(&name, Duration::from_millis(100)),
        Err(Error::Full)
    ));

    let pid = peer.child.id();
    peer.kill9();
    let t = Instant::now();
    // The server's channel to it reports the death, within the bound.
    match conn_b.recv_request_timeout(WAIT) {
        Err(Error::PeerDead {
            role: Role::Client,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|r| r.len())),
    }
    assert!(t.elapsed() < BOUND, "after {:?}", t.elapsed());
    assert_eq!(server.slots_in_use(), 1);

    // The other client is unaffected.
    let serve = std::thread::spawn(move || {
        for _ in 0..100 {
            let req = conn_a.recv_request_timeout(WAIT).unwrap();
            let v = req.to_vec();
            req.reply(&v).unwrap();
        }
        conn_a
    });
    for i in 0..100u32 {
        assert_eq!(&*a.call(&i.to_le_bytes()).unwrap(), &i.to_le_bytes());
    }
    let _conn_a = serve.join().unwrap();

    // And the freed slot takes a new client.
    let n = name.clone();
    let third = std::thread::spawn(move || Server::connect(&n, WAIT).map(|_| ()));
    let mut conn_c = server.accept_timeout(WAIT).unwrap();
    third.join().unwrap().unwrap();
    assert!(matches!(conn_c.recv_timeout(WAIT), Err(Error::Closed)));
}

#[test]
fn a_client_killed_before_it_was_accepted_is_reclaimed() {
    let name = unique("chc-early");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    // The peer connects but the server does not accept until the peer is dead.
    let mut peer = Peer::spawn(&["channel-hold-client", &name]);
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < WAIT, "the peer never asked");
        if !streams_of(&name).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    peer.kill9();
    // No channel for a dead client; its stream is removed and the slot counted as reclaimed.
    assert!(matches!(
        server.accept_timeout(Duration::from_millis(200)),
        Err(Error::Timeout)
    ));
    assert_eq!(server.reclaimed(), 1);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
    assert_eq!(server.slots_in_use(), 0);
}

#[test]
fn a_killed_server_is_peer_dead_for_its_clients_and_a_new_one_takes_the_name() {
    let name = unique("chc-server");
    let _c = Sweep(name.clone());
    let mut srv = Peer::spawn(&["channel-server", &name, "4", "0"]);
    srv.expect("ready");
    let mut clients: Vec<_> = (0..3)
        .map(|_| Server::connect(&name, WAIT).unwrap())
        .collect();
    for c in &mut clients {
        assert_eq!(
            &*c.call(&[1, 2, 3]).unwrap(),
            &[3 ^ 0xA5, 2 ^ 0xA5, 1 ^ 0xA5]
        );
    }
    let pid = srv.child.id();
    // One client is blocked in a call when the server dies; the others call afterwards.
    let mut blocked = clients.pop().unwrap();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        // The server answers at once; the loop keeps calling until it dies.
        loop {
            match blocked.call(b"x") {
                Ok(_) => continue,
                Err(e) => return (e, t.elapsed()),
            }
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    srv.kill9();
    let killed = Instant::now();
    let (e, _) = waiter.join().unwrap();
    assert!(
        matches!(e, Error::PeerDead { role: Role::Server, pid: p, .. } if p == pid),
        "{e}"
    );
    assert!(killed.elapsed() < BOUND, "after {:?}", killed.elapsed());
    for c in &mut clients {
        let t = Instant::now();
        match c.call(b"after") {
            Err(Error::PeerDead {
                role: Role::Server,
                pid: p,
                ..
            }) => assert_eq!(p, pid),
            other => panic!("expected PeerDead, got {:?}", other.map(|r| r.len())),
        }
        assert!(t.elapsed() < BOUND);
        // And it stays so: no hang on a second try.
        assert!(matches!(
            c.call_timeout(b"again", WAIT),
            Err(Error::PeerDead { .. })
        ));
    }
    // A client that connects now is told the server is dead (not left waiting).
    assert!(matches!(
        Server::connect(&name, Duration::from_millis(200)),
        Err(Error::PeerDead {
            role: Role::Server,
            ..
        })
    ));

    // A new server under the same name replaces the dead one's object and serves new clients,
    // while the old clients' channels stay dead.
    let mut srv2 = Peer::spawn(&["channel-server", &name, "4", "1"]);
    srv2.expect("ready");
    let client = Peer::spawn(&["channel-client", &name, "5", "1000", "256"]);
    let (last, ok) = client.finish(WAIT);
    assert!(ok && last == "ok calls=1000", "{last}");
    let (last, ok) = srv2.finish(WAIT);
    assert!(ok && last == "served calls=1000", "{last}");
    drop(clients);
}

#[test]
fn a_killed_listener_is_peer_dead_for_its_connector() {
    let name = unique("chc-listen");
    let _c = Sweep(name.clone());
    let mut listener = Peer::spawn(&["channel-listen", &name]);
    listener.expect("ready");
    let mut ch = weft::channel::Channel::connect(&name, WAIT).unwrap();
    assert_eq!(&*ch.call(&[9]).unwrap(), &[9 ^ 0xA5]);
    let pid = listener.child.id();
    listener.kill9();
    let t = Instant::now();
    match ch.call(b"after") {
        Err(Error::PeerDead {
            role: Role::Server,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|r| r.len())),
    }
    assert!(t.elapsed() < BOUND);
    drop(ch);
    // The name can be listened on again; the dead listener's stream is replaced.
    let mut listener = Peer::spawn(&["channel-listen", &name]);
    listener.expect("ready");
    let mut ch = weft::channel::Channel::connect(&name, WAIT).unwrap();
    assert_eq!(&*ch.call(&[1, 2]).unwrap(), &[2 ^ 0xA5, 1 ^ 0xA5]);
    drop(ch);
    let (last, ok) = listener.finish(WAIT);
    assert!(ok, "{last}");
}

#[test]
fn a_hostile_peer_scribbling_on_the_rendezvous_causes_errors_not_crashes() {
    let name = unique("chc-scribble");
    let _c = Sweep(name.clone());
    // 64 slots: the object is larger than a page, as the scribbler expects of its target.
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(64)).unwrap();
    let mut scribbler = Peer::spawn(&["stream-scribble", &name, "400", "77"]);
    scribbler.expect("ready");
    let n = name.clone();
    let clients = std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_millis(600);
        let mut outcomes = 0u32;
        while Instant::now() < until {
            // Any outcome but a crash or a hang: connected, refused, corrupt, timed out.
            if let Ok(mut ch) = Server::connect(&n, Duration::from_millis(50)) {
                let _ = ch.call_timeout(b"hi", Duration::from_millis(50));
            }
            outcomes += 1;
        }
        outcomes
    });
    let until = Instant::now() + Duration::from_millis(600);
    while Instant::now() < until {
        if let Ok(mut ch) = server.accept_timeout(Duration::from_millis(20))
            && let Ok(req) = ch.recv_request_timeout(Duration::from_millis(20))
        {
            let _ = req.reply(b"ok");
        }
    }
    assert!(clients.join().unwrap() > 0);
    let (last, ok) = scribbler.finish(WAIT);
    assert!(ok && last.starts_with("done"), "{last}");
}

/// A test peer whose stdin the test holds, to let a paused handshake go on (one line) or keep
/// it paused (nothing, or closing it).
fn spawn_told(args: &[&str]) -> (Peer, std::process::ChildStdin) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft-test-peer"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the test peer");
    let stdin = child.stdin.take().unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    (Peer { child, out }, stdin)
}

fn go_on(stdin: &mut std::process::ChildStdin) {
    use std::io::Write;
    writeln!(stdin, "go").expect("tell the peer to go on");
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < WAIT, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_client_killed_between_its_stream_and_its_request_is_cleaned_up_by_the_next_claimant() {
    let name = unique("chc-prereq-next");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    let (mut peer, _stdin) = spawn_told(&[
        "channel-stop-client",
        &name,
        "client-stream-created",
        "20000",
    ]);
    peer.expect("stopped");
    // Its client-to-server stream exists and its request was never posted.
    let left = streams_of(&name);
    assert_eq!(left.len(), 1, "{left:?}");
    peer.kill9();

    // The next client takes the dead client's slot over, and removes the stream the dead
    // claim left before it creates its own (the server has not looked at the slot yet).
    let n = name.clone();
    let next = std::thread::spawn(move || Server::connect(&n, WAIT).unwrap());
    wait_until("the next client's stream", || {
        streams_of(&name).iter().any(|f| !left.contains(f))
    });
    assert!(!left[0].exists(), "{:?} is left behind", left[0]);
    let conn = server.accept_timeout(WAIT).unwrap();
    let client = next.join().unwrap();
    assert_eq!(streams_of(&name).len(), 2, "{:?}", streams_of(&name));
    drop(client);
    drop(conn);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_client_killed_between_its_stream_and_its_request_is_cleaned_up_by_the_servers_scan() {
    let name = unique("chc-prereq-scan");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    let (mut peer, _stdin) = spawn_told(&[
        "channel-stop-client",
        &name,
        "client-stream-created",
        "20000",
    ]);
    peer.expect("stopped");
    assert_eq!(streams_of(&name).len(), 1, "{:?}", streams_of(&name));
    peer.kill9();
    // No client comes after it: the server's own scan finds the dead claim and removes its
    // stream, without a request to go by.
    assert!(matches!(
        server.accept_timeout(Duration::from_millis(200)),
        Err(Error::Timeout)
    ));
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
    assert_eq!(server.reclaimed(), 1);
    assert_eq!(server.slots_in_use(), 0);
}

#[test]
fn a_server_killed_between_its_stream_and_its_answer_leaves_no_stream() {
    let name = unique("chc-preanswer");
    let _c = Sweep(name.clone());
    let mut srv = Peer::spawn(&["channel-stop-server", &name, "server-stream-created"]);
    srv.expect("ready");
    let n = name.clone();
    let client =
        std::thread::spawn(move || Server::connect(&n, Duration::from_secs(4)).map(|_| ()));
    srv.expect("stopped");
    // Both streams exist: the client's (opened by the server) and the server's.
    assert_eq!(streams_of(&name).len(), 2, "{:?}", streams_of(&name));
    let pid = srv.child.id();
    srv.kill9();
    match client.join().unwrap() {
        Err(Error::PeerDead {
            role: Role::Server,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {other:?}"),
    }
    // The client removed its own stream and the one the dead server made for it.
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_server_bound_again_removes_what_a_dead_server_and_its_dead_client_left() {
    let name = unique("chc-rebind");
    let _c = Sweep(name.clone());
    let mut srv = Peer::spawn(&["channel-stop-server", &name, "server-stream-created"]);
    srv.expect("ready");
    let mut client = Peer::spawn(&["channel-stop-client", &name, "none", "20000"]);
    srv.expect("stopped");
    // Both die mid-handshake, the client first: nobody alive is left to clean up.
    client.kill9();
    srv.kill9();
    assert_eq!(streams_of(&name).len(), 2, "{:?}", streams_of(&name));
    // The next server under the name sweeps the dead instance's streams as it replaces it.
    let _server = Server::bind(&name).unwrap();
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_server_killed_after_its_answer_is_peer_dead_for_the_client_not_a_timeout() {
    let name = unique("chc-postanswer");
    let _c = Sweep(name.clone());
    let mut srv = Peer::spawn(&["channel-stop-server", &name, "none"]);
    srv.expect("ready");
    let (mut client, mut go) =
        spawn_told(&["channel-stop-client", &name, "client-answered", "3000"]);
    client.expect("stopped");
    srv.expect("accepted");
    srv.kill9();
    // The client opens the dead server's stream only now.
    go_on(&mut go);
    assert_eq!(client.line(), "error peer-dead");
    let (_, ok) = client.finish(WAIT);
    assert!(ok);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_connection_the_server_closed_before_the_client_opened_it_still_delivers() {
    let name = unique("chc-closedfirst");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    let (mut client, mut go) =
        spawn_told(&["channel-stop-client", &name, "client-answered", "3000"]);
    let mut conn = server.accept_timeout(WAIT).unwrap();
    client.expect("stopped");
    // The server says goodbye and leaves before the client has opened its stream.
    conn.send(b"bye").unwrap();
    drop(conn);
    go_on(&mut go);
    assert_eq!(client.line(), "connected got=1 end=closed");
    let (_, ok) = client.finish(WAIT);
    assert!(ok);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_client_killed_before_it_opened_the_servers_stream_leaves_nothing_behind() {
    let name = unique("chc-preopen");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    let (mut client, _stdin) =
        spawn_told(&["channel-stop-client", &name, "client-answered", "20000"]);
    let mut conn = server.accept_timeout(WAIT).unwrap();
    client.expect("stopped");
    // The server speaks first, to a client that dies before it opened the server's stream.
    conn.send(b"hello").unwrap();
    let pid = client.child.id();
    client.kill9();
    match conn.recv_timeout(WAIT) {
        Err(Error::PeerDead {
            role: Role::Client,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|r| r.len())),
    }
    // Nobody can ever read what it sent: the stream goes with the channel, unread.
    drop(conn);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

/// The same client, and a server that only sends: once the server's stream is full, the
/// wait for room saw a reader that had not come yet (never a dead one) and went on for
/// good. The client's death is the death of the only reader that could come.
#[test]
fn a_send_to_a_client_killed_before_it_opened_the_servers_stream_is_peer_dead() {
    let name = unique("chc-preopen-send");
    let _c = Sweep(name.clone());
    let opts = ChannelOptions::new().slots(1).capacity(4096);
    let mut server = Server::bind_with(&name, &opts).unwrap();
    let (mut client, _stdin) =
        spawn_told(&["channel-stop-client", &name, "client-answered", "20000"]);
    let mut conn = server.accept_timeout(WAIT).unwrap();
    client.expect("stopped");
    let pid = client.child.id();
    client.kill9();
    let got = loop {
        match conn.send_timeout(&[7; 1000], Duration::from_secs(5)) {
            Ok(()) => continue,
            other => break other,
        }
    };
    match got {
        Err(Error::PeerDead {
            role: Role::Client,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {other:?}"),
    }
}

/// Requests posted on a rendezvous by a process that never creates its streams (15 of 16
/// slots claimed in the name of this live process, as a hostile writer of the object could):
/// the server waited up to 200 ms for each one's stream, so a `try_accept` took 3 s and an
/// `accept_timeout` of 10 ms as long. Now a scan waits for streams at most its caller's
/// deadline (nothing for `try_accept`) and 200 ms in all, and an honest client in the last
/// slot is accepted.
#[test]
fn requests_without_streams_hold_an_accept_no_longer_than_its_deadline() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let name = unique("chc-nostream");
    let _c = Sweep(name.clone());
    let slots = 16u64;
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(slots as u32)).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(common::shm_path(&name))
        .unwrap();
    let w = |off: u64, v: u64| f.write_at(&v.to_le_bytes(), off).unwrap();
    // This process's identity as a participant row records it: pid and start time (field 22
    // of /proc/self/stat) with the holds bit, state 1, pid namespace.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let ns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    // Slot `i`: its row at 512 + 128 i (owner, state at 8, namespace at 16, epoch at 32), its
    // handshake line after it (the request at 64).
    for i in 0..slots - 1 {
        let row = 512 + 128 * i;
        w(
            row,
            std::process::id() as u64 | ((start as u32 as u64) << 32) | (1 << 31),
        );
        f.write_at(&1u32.to_le_bytes(), row + 8).unwrap();
        w(row + 16, ns);
        w(row + 32, 7);
        w(row + 64, 7);
    }
    let t = Instant::now();
    assert!(matches!(server.try_accept(), Err(Error::Empty)));
    let tried = t.elapsed();
    assert!(
        tried < Duration::from_millis(500),
        "try_accept took {tried:?}"
    );
    // The requests were answered (refused): each round posts them again, a new generation.
    let post = |generation: u64| {
        for i in 0..slots - 1 {
            w(512 + 128 * i + 32, generation);
            w(512 + 128 * i + 64, generation);
        }
    };
    post(8);
    let t = Instant::now();
    assert!(matches!(
        server.accept_timeout(Duration::from_millis(10)),
        Err(Error::Timeout)
    ));
    let timed = t.elapsed();
    assert!(
        timed < Duration::from_millis(500),
        "accept_timeout took {timed:?}"
    );
    // Posted once more, beside an honest client in the free slot.
    post(9);
    let n = name.clone();
    let client = std::thread::spawn(move || {
        let mut ch = Server::connect(&n, WAIT).unwrap();
        ch.call_timeout(b"hello", WAIT).unwrap().to_vec()
    });
    let mut conn = server.accept_timeout(WAIT).unwrap();
    let req = conn.recv_request_timeout(WAIT).unwrap();
    assert_eq!(&*req, b"hello");
    req.reply(b"welcome").unwrap();
    assert_eq!(client.join().unwrap(), b"welcome");
}

/// A one-to-one channel's names are used again by every later connection: a client started
/// again under the name while the listener still holds the dead client's connection must not
/// join that connection (it took over the dead client's streams, got the reply meant for the
/// dead client's request as its own, and the next reply was `Corrupt`). It connects once the
/// listener has let the old connection go, and gets its own answer.
#[test]
fn a_client_started_again_never_joins_the_dead_clients_connection() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use weft::channel::Channel;
    let name = unique("chc-again-client");
    let _c = Sweep(name.clone());
    let mut first = Peer::spawn(&["channel-connect-request", &name]);
    let mut ch = Channel::listen(&name, WAIT).unwrap();
    first.expect("sent");
    let req = ch.recv_request().unwrap();
    assert_eq!(&*req, b"from the first client");
    let id = req.id();
    drop(req);
    let pid = first.child.id();
    first.kill9();
    let connected = Arc::new(AtomicBool::new(false));
    let (n, c) = (name.clone(), connected.clone());
    let second = std::thread::spawn(move || {
        let mut ch = Channel::connect(&n, WAIT).unwrap();
        c.store(true, Ordering::Release);
        ch.call(b"from the second client").map(|r| r.to_vec())
    });
    // The old code joined at once; give it ample time to show.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(1) && !connected.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !connected.load(Ordering::Acquire),
        "the second client joined the dead client's connection"
    );
    // The late answer goes nowhere (the dead client's stream), or is refused.
    let _ = ch.reply(id, b"answer for the first client");
    match ch.recv_request() {
        Err(Error::PeerDead {
            role: Role::Client,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|r| r.to_vec())),
    }
    drop(ch);
    let mut ch = Channel::listen(&name, WAIT).unwrap();
    let req = ch.recv_request().unwrap();
    assert_eq!(&*req, b"from the second client");
    req.reply(b"answer for the second client").unwrap();
    assert_eq!(
        second.join().unwrap().unwrap(),
        b"answer for the second client"
    );
}

/// The other way round: a listener started again under the name while the client of the dead
/// listener still waits for its reply must not take over the dead listener's stream (the
/// client then waited for good, its request lost). The client gets `PeerDead`; once it has
/// let go, the new listener serves a new connection.
#[test]
fn a_listener_started_again_leaves_the_old_client_peer_dead() {
    use weft::channel::Channel;
    let name = unique("chc-again-listen");
    let _c = Sweep(name.clone());
    let mut first = Peer::spawn(&["channel-listen-take", &name]);
    let mut ch = Channel::connect(&name, WAIT).unwrap();
    let id = ch.send_request(b"lost with its listener").unwrap();
    first.expect("got");
    let pid = first.child.id();
    first.kill9();
    let mut second = Peer::spawn(&["channel-listen", &name]);
    second.expect("ready");
    // Long enough for the second listener to open (it takes a few milliseconds), short
    // enough that a wait the old code never ended fails the test soon.
    match ch.wait_reply_timeout(id, Duration::from_secs(5)) {
        Err(Error::PeerDead {
            role: Role::Server,
            pid: p,
            ..
        }) => assert_eq!(p, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|r| r.to_vec())),
    }
    drop(ch);
    let mut ch = Channel::connect(&name, WAIT).unwrap();
    assert_eq!(&*ch.call(&[7]).unwrap(), &[7 ^ 0xA5]);
    drop(ch);
    let (last, ok) = second.finish(WAIT);
    assert!(ok, "{last}");
}

/// Waits until the stream `name` exists and its writer is alive.
fn wait_for_writer(name: &str) {
    use weft::shm::PeerState;
    wait_until(
        name,
        || matches!(weft::stream::inspect(name), Ok(i) if i.writer.state == PeerState::Alive),
    );
}

/// A one-to-one connector that claimed the listener's stream and died before the listener
/// looked at the connector's own stream (here, a reader of `NAME.s2c` killed in its place):
/// the listener removed the dead connector's stream and went on waiting, its own stream now
/// read by a dead process. The next connector could never open it and timed out, while the
/// listener took the next connector's stream and returned a channel writing into the dead
/// one's. The listener makes its stream again, and the two live sides pair up.
#[test]
fn a_listener_whose_reader_died_pairs_with_the_next_connector() {
    use weft::channel::Channel;
    let name = unique("chc-rv-listen");
    let _c = Sweep(name.clone());
    let n = name.clone();
    let listener = std::thread::spawn(move || Channel::listen(&n, Duration::from_secs(4)));
    let s2c = format!("{name}.s2c");
    wait_for_writer(&s2c);
    let mut first = Peer::spawn(&["stream-read", &s2c, "1", "0", "64"]);
    first.expect("ready");
    first.kill9();
    let second = Channel::connect(&name, Duration::from_secs(2));
    let mut second = match second {
        Ok(ch) => ch,
        Err(e) => panic!("a live listener was waiting, yet connect failed: {e}"),
    };
    let mut listened = listener.join().unwrap().unwrap();
    second.send(b"up").unwrap();
    assert_eq!(&*listened.recv_timeout(WAIT).unwrap(), b"up");
    listened.send(b"down").unwrap();
    assert_eq!(&*second.recv_timeout(WAIT).unwrap(), b"down");
    drop((second, listened));
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

/// The mirror case: a listener that claimed the connector's stream and died before the
/// connector looked at the listener's own. The connector makes its stream again and pairs with
/// the next listener.
#[test]
fn a_connector_whose_reader_died_pairs_with_the_next_listener() {
    use weft::channel::Channel;
    let name = unique("chc-rv-connect");
    let _c = Sweep(name.clone());
    let n = name.clone();
    let connector = std::thread::spawn(move || Channel::connect(&n, Duration::from_secs(4)));
    let c2s = format!("{name}.c2s");
    wait_for_writer(&c2s);
    let mut first = Peer::spawn(&["stream-read", &c2s, "1", "0", "64"]);
    first.expect("ready");
    first.kill9();
    let second = Channel::listen(&name, Duration::from_secs(2));
    let mut second = match second {
        Ok(ch) => ch,
        Err(e) => panic!("a live connector was waiting, yet listen failed: {e}"),
    };
    let mut connected = connector.join().unwrap().unwrap();
    connected.send(b"up").unwrap();
    assert_eq!(&*second.recv_timeout(WAIT).unwrap(), b"up");
    second.send(b"down").unwrap();
    assert_eq!(&*connected.recv_timeout(WAIT).unwrap(), b"down");
    drop((second, connected));
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

/// A server kept the channel of a client that died (generation 1 of slot 0) while the next
/// client took the slot over (generation 2); then the server and that client died too. The
/// next server bound under the name swept generation 2 only (the slot's `request` and
/// `epoch`), and generation 1's two streams stayed for good.
#[test]
fn a_server_bound_again_removes_every_generation_a_reused_slot_left() {
    let name = unique("chc-rebind-gens");
    let _c = Sweep(name.clone());
    let mut srv = Peer::spawn(&["channel-hold-server", &name, "1"]);
    srv.expect("ready");
    let mut a = Peer::spawn(&["channel-stop-client", &name, "none", "20000"]);
    srv.expect("accepted");
    a.kill9();
    let mut b = Peer::spawn(&["channel-stop-client", &name, "none", "20000"]);
    srv.expect("accepted");
    // The client first: a server killed first is seen dead by a live client, whose channel
    // then removes its generation's streams.
    b.kill9();
    srv.kill9();
    // Both directions of both generations, every side dead.
    assert_eq!(streams_of(&name).len(), 4, "{:?}", streams_of(&name));
    let _server = Server::bind(&name).unwrap();
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

/// A server that accepts and drops the connection before the client has opened the server's
/// stream, having sent nothing: the drained stream went with the server's channel, and the
/// client waited for it until its whole connect timeout had passed. It connects at once and
/// finds the connection closed, as when the server sent something before it left.
#[test]
fn a_connection_the_server_dropped_unused_before_the_client_opened_it_is_closed_at_once() {
    let name = unique("chc-droppedfirst");
    let _c = Sweep(name.clone());
    let mut server = Server::bind_with(&name, &ChannelOptions::new().slots(1)).unwrap();
    let (mut client, mut go) =
        spawn_told(&["channel-stop-client", &name, "client-answered", "3000"]);
    let conn = server.accept_timeout(WAIT).unwrap();
    client.expect("stopped");
    drop(conn);
    let t = Instant::now();
    go_on(&mut go);
    assert_eq!(client.line(), "connected got=0 end=closed");
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "after {:?}",
        t.elapsed()
    );
    let (_, ok) = client.finish(WAIT);
    assert!(ok);
    assert!(streams_of(&name).is_empty(), "{:?}", streams_of(&name));
}

#[test]
fn a_listener_never_pairs_with_a_stream_written_by_another_process_than_its_reader() {
    let name = unique("chc-rv-two-procs");
    let _c = Sweep(name.clone());
    let n = name.clone();
    let listen =
        std::thread::spawn(move || Channel::listen(&n, Duration::from_millis(600)).map(|_| ()));
    // This process reads the listener's stream ...
    let _reader = StreamReader::open_timeout(&format!("{name}.s2c"), WAIT).unwrap();
    // ... and another one writes the stream the listener reads (and stays, blocked on it).
    let c2s = format!("{name}.c2s");
    let mut peer = Peer::spawn(&["stream-write", &c2s, "1", "1000000000", "100", "4096"]);
    peer.expect("ready");
    match listen.join().unwrap() {
        Err(Error::Timeout) => {}
        other => panic!("the listener paired with another process's stream: {other:?}"),
    }
    peer.kill9();
}
