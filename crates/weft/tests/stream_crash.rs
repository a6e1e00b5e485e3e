//! SIGKILL at named points: the survivor gets PeerDead within the bound, never hangs, and the
//! name can be used again.

mod common;

use common::pattern;
use common::{Cleanup, Peer, unique};
use std::time::{Duration, Instant};
use weft::stream::{StreamReader, StreamWriter};
use weft::{Error, Role};

/// The default liveness bound is 1 s; the blocking calls below are given far longer, so a
/// PeerDead (rather than Timeout) proves the death was detected, and the elapsed time is
/// checked against the bound with slack for a loaded machine.
const WAIT: Duration = Duration::from_secs(20);
const BOUND: Duration = Duration::from_secs(3);

fn kill_later(mut peer: Peer, after: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        peer.kill9();
    })
}

#[test]
fn a_writer_killed_mid_record_leaves_its_committed_records_and_peer_dead() {
    let name = unique("kill-w-mid");
    let _c = Cleanup(name.clone());
    let mut peer = Peer::spawn(&["stream-kill-writer", &name, "mid-record"]);
    peer.expect("ready");
    let pid = peer.child.id();
    let mut r = StreamReader::open(&name).unwrap();
    for seq in 0..3 {
        let g = r.read_timeout(WAIT).unwrap();
        assert_eq!(g.len(), 100);
        assert!(pattern::check(7, seq, &g));
    }
    // Blocked on the (alive) writer, which is then killed mid-reservation.
    let killer = kill_later(peer, Duration::from_millis(200));
    let t = Instant::now();
    match r.read_timeout(WAIT) {
        Err(Error::PeerDead {
            role: Role::Writer,
            pid: dead,
            ..
        }) => assert_eq!(dead, pid),
        other => panic!("expected PeerDead, got {:?}", other.map(|g| g.len())),
    }
    assert!(t.elapsed() < BOUND, "detected after {:?}", t.elapsed());
    killer.join().unwrap();
    // The half-written record never appears; the error repeats.
    assert!(matches!(r.try_read(), Err(Error::PeerDead { .. })));

    // A new writer takes the name over while this reader is attached, and the reader goes on.
    let mut w = StreamWriter::create(&name, 64 << 10).unwrap();
    w.write(b"after the crash").unwrap();
    assert_eq!(&*r.read_timeout(WAIT).unwrap(), b"after the crash");
    drop(w);
    assert!(matches!(r.read_timeout(WAIT), Err(Error::Closed)));
}

#[test]
fn a_writer_killed_while_blocked_on_a_full_stream() {
    let name = unique("kill-w-full");
    let _c = Cleanup(name.clone());
    let mut peer = Peer::spawn(&["stream-kill-writer", &name, "blocked"]);
    let line = peer.line();
    let n: u64 = line.strip_prefix("ready ").unwrap().parse().unwrap();
    peer.kill9();
    let mut r = StreamReader::open(&name).unwrap();
    for seq in 0..n {
        let g = r.read_timeout(WAIT).unwrap();
        assert!(pattern::check(7, seq, &g), "record {seq}");
    }
    // Records the blocked write may have committed after the reader made room: none, since
    // it died first; then PeerDead, promptly.
    let t = Instant::now();
    assert!(matches!(
        r.read_timeout(WAIT),
        Err(Error::PeerDead {
            role: Role::Writer,
            ..
        })
    ));
    assert!(t.elapsed() < BOUND);
    drop(r);
    // Nobody is attached: the stale object is replaced by a fresh one.
    let mut w = StreamWriter::create(&name, 8192).unwrap();
    assert_eq!(w.capacity(), 8192);
    w.write(b"fresh").unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    assert_eq!(&*r.read().unwrap(), b"fresh");
}

#[test]
fn a_reader_killed_mid_borrow_gives_the_writer_peer_dead_and_a_new_reader_takes_over() {
    let name = unique("kill-r");
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create(&name, 4096).unwrap();
    let mut buf = [0u8; 100];
    pattern::fill(9, 0, &mut buf);
    w.write(&buf).unwrap();
    let mut peer = Peer::spawn(&["stream-kill-reader", &name]);
    peer.expect("ready 100");
    let pid = peer.child.id();
    // Fill the stream so that the next write blocks on the reader.
    let mut seq = 1;
    loop {
        pattern::fill(9, seq, &mut buf);
        match w.try_write(&buf) {
            Ok(()) => seq += 1,
            Err(Error::Full) => break,
            Err(e) => panic!("{e}"),
        }
    }
    let killer = kill_later(peer, Duration::from_millis(200));
    let t = Instant::now();
    pattern::fill(9, seq, &mut buf);
    match w.write_timeout(&buf, WAIT) {
        Err(Error::PeerDead {
            role: Role::Reader,
            pid: dead,
            ..
        }) => assert_eq!(dead, pid),
        other => panic!("expected PeerDead, got {other:?}"),
    }
    assert!(t.elapsed() < BOUND, "detected after {:?}", t.elapsed());
    killer.join().unwrap();

    // A new reader takes over from the dead one; the record it held was never released, so it
    // is read again (at least once), followed by everything else.
    let mut r = StreamReader::open(&name).unwrap();
    for s in 0..seq {
        let g = r.read_timeout(WAIT).unwrap();
        assert!(pattern::check(9, s, &g), "record {s}");
    }
    w.write(&buf).unwrap();
    assert!(pattern::check(9, seq, &r.read_timeout(WAIT).unwrap()));
}

/// A writer killed inside the commit of a large grant, after its mark and `W` and before it
/// settled the announcement (`grant_seq | 3`), as its stream's words then stand: a reader that
/// sees the new `W` while parked reads the record through it, and then finds the stream
/// empty, never the record a second time by its mark (the record was handed out twice, and
/// the next writer could overwrite the copy still borrowed).
#[test]
fn a_grant_left_unsettled_after_its_commit_is_read_once() {
    use std::os::unix::fs::FileExt;
    use weft::WaitStrategy;
    use weft::stream::StreamOptions;
    // The control block at 128: `W` at 64, the announced grant's mark value at 104; the data
    // area at 4096, a record's 8-byte header first.
    const W: u64 = 128 + 64;
    const MARK: u64 = 128 + 104;
    const DATA: u64 = 4096;
    const LEN: usize = 64 << 10;
    let name = unique("unsettled");
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create(&name, 1 << 20).unwrap();
    let opts = StreamOptions::new(0).wait(WaitStrategy::Park);
    let mut r = StreamReader::open_with(&name, &opts).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(common::shm_path(&name))
        .unwrap();
    let word = |off| {
        let mut b = [0u8; 8];
        f.read_at(&mut b, off).unwrap();
        u64::from_le_bytes(b)
    };
    // A grant of 64 KiB, announced and filled; the reader finds the stream empty and watches it.
    let mut g = w.reserve(LEN).unwrap();
    g.fill(0xAB);
    assert!(matches!(r.try_read(), Err(Error::Empty)));
    // Not committed by the handle (dropping a grant commits nothing): the commit's first two
    // stores are made by hand, then nothing: the mark after the payload, then `W`.
    drop(g);
    let mark = word(MARK);
    let end = DATA + 8 + LEN as u64;
    let g2 = f.try_clone().unwrap();
    let commit = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        g2.write_at(&mark.to_le_bytes(), end).unwrap();
        g2.write_at(&(8 + LEN as u64).to_le_bytes(), W).unwrap();
    });
    // Parked (the stores above wake nobody): a slice's re-check sees `W`.
    let got = r.read_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((got.len(), got[0], got[LEN - 1]), (LEN, 0xAB, 0xAB));
    drop(got);
    commit.join().unwrap();
    for _ in 0..3 {
        assert!(
            matches!(r.try_read(), Err(Error::Empty)),
            "the record came out again by its mark"
        );
    }
    // The writer is not dead (this process): it is left alone.
    std::mem::forget(w);
}

/// The writer is killed, the reader learns it (`PeerDead`), and a new writer takes the stream
/// over: the reader's very next call judges the new writer (nothing written yet: `Empty`,
/// `Timeout`), not the dead one, whose verdict it kept for up to 50 ms.
#[test]
fn a_reader_judges_a_writer_that_took_over_at_once() {
    let name = unique("sc-takeover-w");
    let _c = Cleanup(name.clone());
    let mut peer = Peer::spawn(&["stream-kill-writer", &name, "mid-record"]);
    peer.expect("ready");
    let mut r = StreamReader::open(&name).unwrap();
    for _ in 0..3 {
        drop(r.read_timeout(Duration::from_secs(5)).unwrap());
    }
    peer.kill9();
    let got = r.read_timeout(Duration::from_secs(5)).map(|g| g.len());
    assert!(matches!(got, Err(Error::PeerDead { .. })), "{got:?}");
    let _w = StreamWriter::create(&name, 64 << 10).unwrap();
    let got = r.try_read().map(|g| g.len());
    assert!(
        matches!(got, Err(Error::Empty)),
        "try_read after the takeover: {got:?}"
    );
    let got = r.read_timeout(Duration::from_millis(20)).map(|g| g.len());
    assert!(
        matches!(got, Err(Error::Timeout)),
        "read_timeout after the takeover: {got:?}"
    );
}

/// The same on the writer's side: the reader is killed, a new reader takes over, and the
/// writer's next call on the full stream says `Full`, not the dead reader's `PeerDead`.
#[test]
fn a_writer_judges_a_reader_that_took_over_at_once() {
    let name = unique("sc-takeover-r");
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create(&name, 4096).unwrap();
    w.write(&[1u8; 100]).unwrap();
    let mut peer = Peer::spawn(&["stream-kill-reader", &name]);
    peer.expect("ready 100");
    while w.try_write(&[2u8; 100]).is_ok() {}
    peer.kill9();
    let got = w.write_timeout(&[3u8; 100], Duration::from_secs(5));
    assert!(matches!(got, Err(Error::PeerDead { .. })), "{got:?}");
    let _r = StreamReader::open(&name).unwrap();
    let got = w.try_write(&[3u8; 100]);
    assert!(
        matches!(got, Err(Error::Full)),
        "try_write after the takeover: {got:?}"
    );
}
