//! The read-only views for tools (`weft::shm::objects`, `stream::inspect`, `pubsub::details`,
//! `Server::inspect`): what they report about live objects, and that a scribbled object is
//! reported as corrupt, never read out of bounds and never a panic.

mod common;

use common::region::{Layout, get32, get64, is_block, put32, put64};
use common::{Cleanup, Peer, Sweep, region_file, shm_path, unique};
use std::io::{Seek, SeekFrom, Write};
use weft::ErrorKind;
use weft::Role;
use weft::channel::Server;
use weft::pubsub::{Config, Publisher, Subscriber};
use weft::shm::{ObjectKind, PeerState};
use weft::stream::{StreamReader, StreamWriter};

/// Writes `bytes` at `offset` of the object `name`, as a hostile peer with write access could.
fn scribble(name: &str, offset: u64, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(shm_path(name))
        .unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn objects_reports_every_kind_with_its_participants() {
    let (s, r, v) = (unique("insp-s"), unique("insp-r"), unique("insp-v"));
    let _c = (Cleanup(s.clone()), Cleanup(r.clone()), Cleanup(v.clone()));
    let mut writer = StreamWriter::create(&s, 4096).unwrap();
    writer.write(&[1; 20]).unwrap();
    let _reader = StreamReader::open(&s).unwrap();
    let publisher = Publisher::create(&r, &Config::default()).unwrap();
    let topic = publisher.register("/t").unwrap();
    publisher.publish(&topic, b"x").unwrap();
    let _server = Server::bind(&v).unwrap();

    let all = weft::shm::objects();
    let get = |n: &str| all.iter().find(|o| o.name == n).unwrap();
    let me = std::process::id();
    for (name, kind, alive) in [
        (&s, ObjectKind::Stream, 2),
        (&r, ObjectKind::Region, 1),
        (&v, ObjectKind::Server, 1),
    ] {
        let o = get(name);
        assert_eq!(o.kind, Some(kind));
        assert!(o.error.is_none(), "{:?}", o.error);
        assert_eq!((o.creator_pid, o.creator_alive), (me, true));
        assert_eq!((o.alive(), o.dead()), (alive, 0));
        assert!(!o.is_abandoned());
        assert!(o.peers.iter().all(|p| p.pid == me));
    }
    let roles: Vec<_> = get(&s).peers.iter().map(|p| p.role).collect();
    assert_eq!(roles, [Some(Role::Writer), Some(Role::Reader)]);

    let info = weft::stream::inspect(&s).unwrap();
    assert_eq!(info.used, 8 + 24, "one 20-byte record, framed");
    assert_eq!(info.reader.state, PeerState::Alive);

    let d = weft::pubsub::details(&r).unwrap();
    assert_eq!(d.topics[0].stats.published, 1);
    assert_eq!(d.participants.len(), 1);
    assert_eq!(d.participants[0].peer.role, Some(Role::Publisher));
    assert!(
        !weft::shm::remove_abandoned(&r).unwrap(),
        "a live region stays"
    );
    assert!(std::path::Path::new(&shm_path(&r)).exists());
}

#[test]
fn a_scribbled_stream_cursor_is_corrupt_not_a_crash() {
    let s = unique("insp-bad-s");
    let _c = Cleanup(s.clone());
    let _writer = StreamWriter::create(&s, 4096).unwrap();
    // The write cursor W, at offset 128 (control block) + 64: far beyond the capacity.
    scribble(&s, 192, &u64::MAX.to_le_bytes());
    let e = weft::stream::inspect(&s).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("write cursor"), "{e}");
    let o = weft::shm::object(&s).unwrap();
    assert_eq!(o.kind, Some(ObjectKind::Stream));
    assert_eq!(o.error.as_ref().map(|e| e.kind()), Some(ErrorKind::Corrupt));
    assert!(!o.is_abandoned(), "a corrupt object is never removed");
    assert!(!weft::shm::remove_abandoned(&s).unwrap());
}

/// A participant's record entry that names a block past the pool (a scribbling peer's
/// value) is that participant's, not the region's: `details` counts it for the participant
/// and reads the rest, and the listing has no error (it made the whole region unreadable, so
/// that `weft clean` left it alone even where the reclaim would clear the entry).
#[test]
fn a_scribbled_holdings_entry_is_counted_for_its_participant() {
    let r = unique("insp-bad-r");
    let _c = Cleanup(r.clone());
    let config = Config::default().participants(2).blocks(16);
    let publisher = Publisher::create(&r, &config).unwrap();
    let subscriber = Subscriber::connect(&r).unwrap();
    // Holdings start after the rows and their extensions: 512 + 2 * 64 * 2.
    scribble(&r, 512 + 256, &1000u32.to_le_bytes());
    let d = weft::pubsub::details(&r).unwrap();
    let counts: Vec<(u64, u64)> = d
        .participants
        .iter()
        .map(|p| (p.held, p.corrupt_records))
        .collect();
    assert_eq!(counts, [(0, 1), (0, 0)]);
    let o = weft::shm::object(&r).unwrap();
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.alive(), 2);
    // Put it back so that the handles leave cleanly.
    scribble(&r, 512 + 256, &0u32.to_le_bytes());
    drop((subscriber, publisher));
}

/// A SIGKILLed subscriber whose record holds three samples, one entry scribbled past the pool:
/// the region is listed with one dead participant, the reclaim releases the two references
/// the record still names and clears the bad entry, and every block but the one whose
/// reference the scribble lost comes back once the ring moves on.
#[test]
fn a_dead_participants_scribbled_record_is_reclaimed() {
    let r = unique("insp-dead-bad");
    let _c = Cleanup(r.clone());
    let config = Config::default().participants(4).blocks(16).ring_slots(4);
    let publisher = Publisher::create(&r, &config).unwrap();
    let t = publisher.register("/t").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &r, "/t", "3"]);
    peer.expect("ready");
    for i in 0..3u8 {
        publisher.publish(&t, &[i]).unwrap();
    }
    peer.expect("holding 3");
    let pid = peer.child.id();
    let f = region_file(&r);
    let l = Layout::of_file(&f);
    let row = (0..l.participants)
        .find(|&p| get64(&f, 512 + 64 * p) & ((1 << 22) - 1) == u64::from(pid))
        .unwrap();
    peer.kill9();
    let e = (0..l.held)
        .find(|&e| is_block(get32(&f, l.holding(row, e))))
        .unwrap();
    put32(&f, l.holding(row, e), 1000);

    let o = weft::shm::object(&r).unwrap();
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!((o.alive(), o.dead()), (1, 1));
    let d = weft::pubsub::details(&r).unwrap();
    let dead = d.participants.iter().find(|p| p.peer.pid == pid).unwrap();
    assert_eq!((dead.held, dead.corrupt_records), (2, 1));
    assert_eq!(weft::pubsub::reclaim(&r).unwrap(), 2);
    let d = weft::pubsub::details(&r).unwrap();
    assert!(d.participants.iter().all(|p| p.corrupt_records == 0));
    // The ring moves on past the three samples' blocks.
    for i in 0..8u8 {
        publisher.publish(&t, &[i]).unwrap();
    }
    // Out of the pool: the ring's 4, the one a publisher keeps from its last displaced
    // slot, and the scribbled entry's.
    let info = publisher.region_info();
    assert_eq!((info.free_blocks, info.kept_blocks), (16 - 4 - 1 - 1, 1));
}

/// A server reports its clients, and is listed with them as participants, after the server
/// itself.
#[test]
fn a_server_reports_its_clients() {
    let v = unique("insp-srv");
    let _c = Sweep(v.clone());
    let mut server = Server::bind(&v).unwrap();
    let n = v.clone();
    let client =
        std::thread::spawn(move || Server::connect(&n, std::time::Duration::from_secs(5)).unwrap());
    let _conn = server
        .accept_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let ch = client.join().unwrap();
    let info = Server::inspect(&v).unwrap();
    assert_eq!(info.clients.len(), 1);
    assert_eq!(info.clients[0].role, Some(Role::Client));
    assert_eq!(info.clients[0].state, PeerState::Alive);
    let o = weft::shm::object(&v).unwrap();
    assert!(o.error.is_none(), "{:?}", o.error);
    let peers: Vec<_> = o.peers.iter().map(|p| (p.index, p.role, p.state)).collect();
    assert_eq!(
        peers,
        [
            (0, Some(Role::Server), PeerState::Alive),
            (1, Some(Role::Client), PeerState::Alive)
        ]
    );
    assert_eq!(o.alive(), 2);
    drop(ch);
    let info = Server::inspect(&v).unwrap();
    assert_eq!(info.clients[0].state, PeerState::Closed);
}

#[test]
fn nobody_alive_is_abandoned_but_a_closed_writers_records_are_kept() {
    let r = unique("insp-closed-r");
    let s = unique("insp-mailbox");
    let _c = (Cleanup(r.clone()), Cleanup(s.clone()));
    let publisher = Publisher::create(&r, &Config::default()).unwrap();
    assert!(!weft::shm::object(&r).unwrap().is_abandoned());
    // As a region is left when its last participants are gone but the name stayed (a crash
    // of the unlink, or a name re-created meanwhile): every row let go. Row 0's `owner` word
    // is at 512 (bit 31: held), its `state` at 512 + 8.
    let bytes = std::fs::read(shm_path(&r)).unwrap();
    let owner = u64::from_le_bytes(bytes[512..520].try_into().unwrap());
    assert_ne!(
        owner & 1 << 31,
        0,
        "a held row has bit 31 of its owner word set"
    );
    scribble(&r, 512, &(owner & !(1 << 31)).to_le_bytes());
    scribble(&r, 512 + 8, &2u32.to_le_bytes());
    let o = weft::shm::object(&r).unwrap();
    assert_eq!((o.alive(), o.dead()), (0, 0));
    assert!(o.is_abandoned(), "nobody alive: stale");
    scribble(&r, 512, &owner.to_le_bytes());
    scribble(&r, 512 + 8, &1u32.to_le_bytes());
    drop(publisher);

    let mut writer = StreamWriter::create(&s, 4096).unwrap();
    writer.write(b"for later").unwrap();
    drop(writer);
    let o = weft::shm::object(&s).unwrap();
    assert_eq!(o.peers[0].state, PeerState::Closed);
    assert!(!o.is_abandoned(), "records kept for a reader yet to come");
    assert!(!weft::shm::remove_abandoned(&s).unwrap());
    let mut reader = StreamReader::open(&s).unwrap();
    assert_eq!(&*reader.read().unwrap(), b"for later");
}

/// An abandoned object whose removal the OS refuses (another user's file in the sticky
/// /dev/shm) is an error: the removal was reported done, and `weft clean` said "removed"
/// while the file stayed. Needs root, to run the remover as another user.
#[test]
fn a_removal_the_os_refuses_is_an_error() {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        eprintln!("not run: needs root, to remove as another user");
        return;
    }
    let r = unique("insp-refused");
    let _c = Cleanup(r.clone());
    let publisher = Publisher::create(&r, &Config::default()).unwrap();
    // Abandoned: the one row let go (see `nobody_alive_is_abandoned_...`).
    let bytes = std::fs::read(shm_path(&r)).unwrap();
    let owner = u64::from_le_bytes(bytes[512..520].try_into().unwrap());
    scribble(&r, 512, &(owner & !(1 << 31)).to_le_bytes());
    scribble(&r, 512 + 8, &2u32.to_le_bytes());
    assert!(weft::shm::object(&r).unwrap().is_abandoned());
    // Readable and writable by all, as only the owner (root) may remove it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shm_path(&r), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_weft-test-peer"))
        .args(["shm-remove", &r])
        .output()
        .expect("run setpriv");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(std::path::Path::new(&shm_path(&r)).exists());
    assert_eq!(
        said.trim(),
        "error Io",
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Root may.
    assert!(weft::shm::remove_abandoned(&r).unwrap());
    drop(publisher);
}

/// A participant judged by its heartbeat alone (another pid namespace than ours) is reported
/// dead once its heartbeat is a second old, but removed only once it is 30 s old; in between,
/// `is_abandoned` says what `remove_abandoned` does (keep it), so that `weft ls` and `weft
/// clean --dry-run` do not announce a removal that `weft clean` refuses. The peer's row is made
/// another namespace's, and the peer stopped (SIGSTOP), so that its heartbeat goes stale.
#[test]
fn a_participant_whose_heartbeat_stopped_seconds_ago_is_not_yet_abandoned() {
    let name = unique("insp-stopped");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let mut peer = Peer::spawn(&["pubsub-linger", &name, "/t", "0", "0"]);
    peer.expect("ready");
    peer.expect("sent");
    drop(p);
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let pid = peer.child.id();
    let row = (0..l.participants)
        .map(|r| 512 + 64 * r)
        .find(|&o| get64(&f, o) & ((1 << 22) - 1) == u64::from(pid))
        .expect("the peer's row");
    // The row's pid namespace (word 2): any other value than ours.
    put64(&f, row + 16, get64(&f, row + 16).wrapping_add(1));
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let listed = weft::shm::object(&name).unwrap();
    let removed = weft::shm::remove_abandoned(&name);
    signal("-CONT");
    peer.kill9();
    assert_eq!(
        (listed.alive(), listed.dead()),
        (0, 1),
        "a heartbeat 1.5 s old: dead to a listing"
    );
    assert!(!removed.unwrap(), "kept by the removal");
    assert!(
        !listed.is_abandoned(),
        "and not abandoned to the listing either"
    );
}

/// `details` reports a topic unregistered while a subscription keeps its entry as not
/// registered, and the same name registered again meanwhile as a second, registered topic.
#[test]
fn details_report_an_unregistered_topic_kept_by_a_subscriber() {
    let name = unique("si-reg");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register("/t").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let sub = s.subscribe("/t").unwrap();
    let d = weft::pubsub::details(&name).unwrap();
    assert_eq!(d.topics.len(), 1);
    assert!(d.topics[0].registered);
    p.unregister(&t).unwrap();
    let d = weft::pubsub::details(&name).unwrap();
    assert_eq!(d.topics.len(), 1);
    assert_eq!(d.topics[0].stats.name, "/t");
    assert!(!d.topics[0].registered);
    let _again = p.register("/t").unwrap();
    let d = weft::pubsub::details(&name).unwrap();
    let mut seen: Vec<bool> = d
        .topics
        .iter()
        .filter(|x| x.stats.name == "/t")
        .map(|x| x.registered)
        .collect();
    seen.sort();
    assert_eq!(seen, [false, true]);
    drop(sub);
}

/// `object`, `remove_abandoned` and `remove_own_abandoned` on a name with no object are
/// `NotFound`; on a name weft never gives, `InvalidName`.
#[test]
fn a_missing_or_misnamed_object_is_an_error() {
    let missing = unique("insp-missing");
    assert_eq!(
        weft::shm::object(&missing).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        weft::shm::remove_abandoned(&missing).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        weft::shm::remove_own_abandoned(&missing)
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    for bad in ["a/b", "..", ""] {
        assert_eq!(
            weft::shm::object(bad).unwrap_err().kind(),
            ErrorKind::InvalidName,
            "{bad:?}"
        );
        assert_eq!(
            weft::shm::remove_abandoned(bad).unwrap_err().kind(),
            ErrorKind::InvalidName,
            "{bad:?}"
        );
    }
}

/// A stream whose writer let go with nothing in it and no reader is abandoned: only records
/// for a reader yet to come keep it.
#[test]
fn a_closed_writers_empty_stream_is_abandoned() {
    let s = unique("insp-empty-s");
    let _c = Cleanup(s.clone());
    let writer = StreamWriter::create(&s, 4096).unwrap();
    // The writer's row as it is left when its holder lets go (its drop would remove the name
    // of such a stream; here the name stayed): bit 31 of `owner` clear, `state` CLOSED.
    let bytes = std::fs::read(shm_path(&s)).unwrap();
    let owner = u64::from_le_bytes(bytes[512..520].try_into().unwrap());
    let state = u32::from_le_bytes(bytes[520..524].try_into().unwrap());
    scribble(&s, 512, &(owner & !(1 << 31)).to_le_bytes());
    scribble(&s, 520, &2u32.to_le_bytes());
    let o = weft::shm::object(&s).unwrap();
    scribble(&s, 512, &owner.to_le_bytes());
    scribble(&s, 520, &state.to_le_bytes());
    drop(writer);
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.peers.len(), 1);
    assert_eq!(o.peers[0].state, PeerState::Closed);
    assert!(o.is_abandoned(), "nothing kept for a reader");
}

/// `creator_alive` is checked against the creator's start time: a process that has the
/// creator's pid now is not the creator.
#[test]
fn a_ready_objects_creator_is_judged_by_its_start_time() {
    let r = unique("insp-creator");
    let _c = Cleanup(r.clone());
    let publisher = Publisher::create(&r, &Config::default()).unwrap();
    assert!(weft::shm::object(&r).unwrap().creator_alive);
    // The creator's start time lives at offset 32 of the header.
    let bytes = std::fs::read(shm_path(&r)).unwrap();
    let start = u64::from_le_bytes(bytes[32..40].try_into().unwrap());
    scribble(&r, 32, &(start + 1).to_le_bytes());
    let o = weft::shm::object(&r).unwrap();
    scribble(&r, 32, &start.to_le_bytes());
    drop(publisher);
    assert_eq!(o.creator_pid, std::process::id());
    assert!(!o.creator_alive, "a reused pid taken for the creator");
}

/// A handle removes its name when it leaves only if the name still refers to its object: a
/// newer object created under the name meanwhile keeps it.
#[test]
fn a_leaving_handle_keeps_a_newer_object_of_its_name() {
    let s = unique("insp-newer");
    let _c = Cleanup(s.clone());
    let old = StreamWriter::create(&s, 4096).unwrap();
    std::fs::remove_file(shm_path(&s)).unwrap();
    let mut new = StreamWriter::create(&s, 4096).unwrap();
    drop(old);
    assert!(
        std::path::Path::new(&shm_path(&s)).exists(),
        "the old handle removed the new object's name"
    );
    new.write(b"x").unwrap();
    let mut reader = StreamReader::open(&s).unwrap();
    assert_eq!(&*reader.read().unwrap(), b"x");
}

/// `inspect` reports the geometry, and counts the unread bytes of a wrapped stream on both
/// sides of the wrap.
#[test]
fn inspect_counts_the_bytes_on_both_sides_of_the_wrap() {
    let s = unique("insp-wrap");
    let _c = Cleanup(s.clone());
    let mut w = StreamWriter::create(&s, 1024).unwrap();
    let mut r = StreamReader::open(&s).unwrap();
    let info = weft::stream::inspect(&s).unwrap();
    assert_eq!(
        (info.capacity, info.align, info.max_record_len, info.used),
        (1024, 8, 504, 0)
    );
    assert_eq!(info.max_record_len, w.max_record_len() as u64);
    w.write(&[1; 504]).unwrap();
    // Read up to the writer: released at once.
    assert_eq!(&*r.read().unwrap(), &[1; 504][..]);
    assert_eq!(weft::stream::inspect(&s).unwrap().used, 0);
    w.write(&[2; 504]).unwrap(); // 512 .. 1024
    w.write(&[3; 200]).unwrap(); // wraps: 0 .. 208
    assert_eq!(weft::stream::inspect(&s).unwrap().used, 512 + 208);
    assert_eq!(&*r.read().unwrap(), &[2; 504][..]);
    assert_eq!(&*r.read().unwrap(), &[3; 200][..]);
    assert_eq!(weft::stream::inspect(&s).unwrap().used, 0);
}

/// The latest-values flag (topic-entry flags bit 1) means something on inline topics only: a
/// blocks topic whose entry a peer scribbled it into is not reported as latest-value, and
/// still carries every sample in order.
#[test]
fn the_latest_flag_on_a_blocks_topic_is_not_reported() {
    let name = unique("si-lflag");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register("/b").unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    assert_eq!(get32(&f, l.entry(0) + 124), 0);
    put32(&f, l.entry(0) + 124, 2);
    let d = weft::pubsub::details(&name).unwrap();
    assert_eq!(d.topics[0].mode, weft::pubsub::TopicMode::Blocks);
    assert!(!d.topics[0].latest);
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/b").unwrap();
    for i in 0u8..3 {
        p.publish(&t, &[i]).unwrap();
    }
    for i in 0u8..3 {
        assert_eq!(&sub.try_recv().unwrap()[..], &[i]);
    }
}

/// An object that fails validation (a foreign file, one shorter than a header) may not be
/// weft's: neither removal touches it, and neither reports an error for it (its name exists,
/// so it is not `NotFound`): both say they removed nothing.
#[test]
fn an_unusable_object_is_kept_by_both_removals() {
    let (foreign, short) = (unique("insp-keep-foreign"), unique("insp-keep-short"));
    let _c = (Cleanup(foreign.clone()), Cleanup(short.clone()));
    std::fs::write(shm_path(&foreign), [0xab; 4096]).unwrap();
    std::fs::write(shm_path(&short), [0; 50]).unwrap();
    for name in [&foreign, &short] {
        assert!(!weft::shm::remove_abandoned(name).unwrap(), "{name}");
        assert!(!weft::shm::remove_own_abandoned(name).unwrap(), "{name}");
        assert!(std::path::Path::new(&shm_path(name)).exists(), "{name}");
    }
}

/// An object that fails validation is still reported with its file's size (and no kind), so
/// that `weft ls` shows what it occupies.
#[test]
fn an_unusable_object_reports_its_files_size() {
    let (foreign, short) = (unique("insp-size-foreign"), unique("insp-size-short"));
    let _c = (Cleanup(foreign.clone()), Cleanup(short.clone()));
    std::fs::write(shm_path(&foreign), [0xab; 4096]).unwrap();
    std::fs::write(shm_path(&short), [0; 50]).unwrap();
    let o = weft::shm::object(&foreign).unwrap();
    assert_eq!(
        (o.kind, o.size, o.error.as_ref().map(|e| e.kind())),
        (None, 4096, Some(ErrorKind::NotWeft))
    );
    let o = weft::shm::object(&short).unwrap();
    assert_eq!(
        (o.kind, o.size, o.error.as_ref().map(|e| e.kind())),
        (None, 50, Some(ErrorKind::Truncated))
    );
}

/// A file of exactly the header's 128 bytes is read as a header: foreign bytes there are not
/// a weft object (as in a longer file), not an object whose creator is at work.
#[test]
fn a_foreign_file_of_exactly_a_header_is_not_weft() {
    let name = unique("insp-128-foreign");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), [0xab; 128]).unwrap();
    let o = weft::shm::object(&name).unwrap();
    assert!(
        matches!(o.error, Some(weft::Error::NotWeft { found, .. }) if found == u64::from_le_bytes([0xab; 8])),
        "{:?}",
        o.error
    );
    assert!(!o.is_abandoned());
}

/// A stream whose writer and reader both let go, with records left unread, is abandoned: only
/// a writer that closed before any reader came keeps its records for one.
#[test]
fn a_stream_both_sides_left_is_abandoned_with_its_records() {
    let s = unique("insp-both-left");
    let _c = Cleanup(s.clone());
    let mut writer = StreamWriter::create(&s, 4096).unwrap();
    let reader = StreamReader::open(&s).unwrap();
    writer.write(b"unread").unwrap();
    // Both rows (writer at 512, reader at 576) as their holders leave them: bit 31 of
    // `owner` clear, `state` CLOSED.
    let bytes = std::fs::read(shm_path(&s)).unwrap();
    let word = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let (w_owner, r_owner, w_state, r_state) =
        (word(512), word(576), &bytes[520..524], &bytes[584..588]);
    for row in [512, 576] {
        scribble(&s, row, &(word(row as usize) & !(1 << 31)).to_le_bytes());
        scribble(&s, row + 8, &2u32.to_le_bytes());
    }
    let o = weft::shm::object(&s).unwrap();
    scribble(&s, 512, &w_owner.to_le_bytes());
    scribble(&s, 576, &r_owner.to_le_bytes());
    scribble(&s, 520, w_state);
    scribble(&s, 584, r_state);
    drop((reader, writer));
    assert!(o.error.is_none(), "{:?}", o.error);
    let states: Vec<_> = o.peers.iter().map(|p| p.state).collect();
    assert_eq!(states, [PeerState::Closed, PeerState::Closed]);
    assert!(o.is_abandoned(), "a reader came: nothing is kept for one");
}

/// `details` names each participant's role from its record: a publisher whose death was
/// reclaimed (role 3) still shows as a publisher, and a value no participant writes as none.
#[test]
fn details_name_each_participants_role() {
    let r = unique("insp-roles");
    let _c = Cleanup(r.clone());
    let publisher = Publisher::create(&r, &Config::default().participants(2)).unwrap();
    let subscriber = Subscriber::connect(&r).unwrap();
    let f = region_file(&r);
    let l = Layout::of_file(&f);
    let roles = || -> Vec<Option<Role>> {
        weft::pubsub::details(&r)
            .unwrap()
            .participants
            .iter()
            .map(|p| p.peer.role)
            .collect()
    };
    assert_eq!(roles(), [Some(Role::Publisher), Some(Role::Subscriber)]);
    let role = get32(&f, l.ext(0));
    put32(&f, l.ext(0), 3);
    let dead_publisher = roles();
    put32(&f, l.ext(0), 7);
    let unknown = roles();
    put32(&f, l.ext(0), role);
    drop((subscriber, publisher));
    assert_eq!(
        dead_publisher,
        [Some(Role::Publisher), Some(Role::Subscriber)]
    );
    assert_eq!(unknown, [None, Some(Role::Subscriber)]);
}

/// `details` counts a record entry as held when it names a block of the pool, whether the
/// reference is held, being taken or dropped with its mark left; an entry naming the block one
/// past the pool's last is counted corrupt.
#[test]
fn details_count_record_entries_by_the_block_they_name() {
    let r = unique("insp-entries");
    let _c = Cleanup(r.clone());
    let publisher = Publisher::create(&r, &Config::default().participants(2).blocks(16)).unwrap();
    let f = region_file(&r);
    let l = Layout::of_file(&f);
    let at = l.holding(0, 0);
    // Entry encodings (docs/protocol.md): block + 1, with bit 30 taking, bit 29 done.
    let (taking, done) = (1u32 << 30, 1u32 << 29);
    let mut seen = Vec::new();
    for v in [16, 16 | taking, 16 | done, 17, 17 | taking, 17 | done] {
        put32(&f, at, v);
        let d = weft::pubsub::details(&r).unwrap();
        seen.push((d.participants[0].held, d.participants[0].corrupt_records));
    }
    put32(&f, at, 0);
    drop(publisher);
    assert_eq!(seen, [(1, 0), (1, 0), (1, 0), (0, 1), (0, 1), (0, 1)]);
}

/// `details` reports a typed topic's type name and size, and a latest-value topic as latest.
#[test]
fn details_report_a_topics_type_and_latest_mode() {
    let r = unique("insp-typed");
    let _c = Cleanup(r.clone());
    let publisher = Publisher::create(&r, &Config::default()).unwrap();
    let _typed = publisher
        .register_typed_named::<u64>("/typed", "insp.Count/v1")
        .unwrap();
    let _latest = publisher
        .register_with("/latest", weft::pubsub::TopicMode::Latest)
        .unwrap();
    let d = weft::pubsub::details(&r).unwrap();
    let get = |n: &str| d.topics.iter().find(|t| t.stats.name == n).unwrap();
    let typed = get("/typed");
    assert_eq!(
        (typed.type_name.as_deref(), typed.type_size, typed.latest),
        (Some("insp.Count/v1"), 8, false)
    );
    let latest = get("/latest");
    assert_eq!(
        (latest.type_name.as_deref(), latest.type_size, latest.latest),
        (None, 0, true)
    );
}

/// A FIFO under the prefix is not a weft object (not a regular file): reported so, and left
/// alone even by the removal of a name's owner, which removes an empty file.
#[test]
fn a_fifo_is_not_weft_and_is_kept() {
    let name = unique("insp-fifo");
    let _c = Cleanup(name.clone());
    let ok = std::process::Command::new("mkfifo")
        .arg(shm_path(&name))
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    let o = weft::shm::object(&name).unwrap();
    assert!(
        matches!(o.error, Some(weft::Error::NotWeft { found: 0, .. })),
        "{:?}",
        o.error
    );
    assert!(!weft::shm::remove_own_abandoned(&name).unwrap());
    assert!(std::path::Path::new(&shm_path(&name)).exists());
}

/// `objects` lists in name order, whatever order the names were made in.
#[test]
fn objects_are_listed_in_name_order() {
    let base = unique("insp-order");
    let names: Vec<String> = ["b", "a", "c"]
        .iter()
        .map(|s| format!("{base}-{s}"))
        .collect();
    let _c: Vec<Cleanup> = names.iter().map(|n| Cleanup(n.clone())).collect();
    for n in &names {
        std::fs::write(shm_path(n), [0xab; 4096]).unwrap();
    }
    let listed: Vec<String> = weft::shm::objects()
        .into_iter()
        .map(|o| o.name)
        .filter(|n| n.starts_with(&base))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(listed, sorted);
}

/// `details` reports the region's shape as its configuration line records it: rows in the
/// participants table, references one participant may hold, and topics the region can hold.
#[test]
fn details_report_the_regions_shape() {
    let r = unique("insp-shape");
    let _c = Cleanup(r.clone());
    let config = Config::default().participants(3).max_held(5).topics(7);
    let _publisher = Publisher::create(&r, &config).unwrap();
    let l = Layout::of_file(&region_file(&r));
    assert_eq!((l.participants, l.held, l.topics), (3, 5, 7));
    let d = weft::pubsub::details(&r).unwrap();
    assert_eq!(
        (d.participant_rows, d.max_held, d.topic_capacity),
        (3, 5, 7)
    );
}

/// A file of the prefix whose name weft never gives (a space in it) is not listed.
#[test]
fn a_file_named_as_weft_never_names_is_not_listed() {
    let bad = format!("{} x", unique("insp-badname"));
    let _c = Cleanup(bad.clone());
    std::fs::write(shm_path(&bad), [0xab; 4096]).unwrap();
    assert!(weft::shm::objects().iter().all(|o| o.name != bad));
}

/// The names states and kinds are printed by.
#[test]
fn states_and_kinds_have_their_printed_names() {
    let states = [
        PeerState::Absent,
        PeerState::Alive,
        PeerState::Closed,
        PeerState::Dead,
    ];
    let names: Vec<_> = states.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["absent", "alive", "closed", "dead"]);
    let kinds: Vec<_> = [ObjectKind::Stream, ObjectKind::Region, ObjectKind::Server]
        .iter()
        .map(|k| k.name())
        .collect();
    assert_eq!(kinds, ["stream", "region", "server"]);
}

/// A stream whose writer was SIGKILLed with records unread is abandoned and removed: only a
/// writer that closed cleanly before any reader came leaves its records for one.
#[test]
fn a_killed_writers_records_do_not_keep_its_stream() {
    let s = unique("insp-killed-w");
    let _c = Cleanup(s.clone());
    let mut peer = Peer::spawn(&["stream-kill-writer", &s, "mid-record"]);
    peer.expect("ready");
    peer.kill9();
    assert!(weft::stream::inspect(&s).unwrap().used > 0);
    let o = weft::shm::object(&s).unwrap();
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(o.peers[0].state, PeerState::Dead);
    assert_eq!((o.alive(), o.dead()), (0, 1));
    assert!(
        o.is_abandoned(),
        "nobody alive, and no clean writer's records"
    );
    assert!(weft::shm::remove_abandoned(&s).unwrap());
    assert!(!std::path::Path::new(&shm_path(&s)).exists());
}
