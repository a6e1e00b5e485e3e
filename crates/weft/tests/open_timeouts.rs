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

/// The header a creator leaves behind when it is killed after writing it and before `ready`:
/// magic, version, kind (a region), size, and the creator's pid, start time and pid namespace.
fn half_made(tag: &str, pid: u32, start: u64, pidns: u64) -> (String, Cleanup) {
    let name = unique(tag);
    let c = Cleanup(name.clone());
    let mut b = vec![0u8; 64 << 10];
    b[0..8].copy_from_slice(b"WEFT\0OBJ");
    b[8..12].copy_from_slice(&weft::shm::LAYOUT_VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&2u32.to_le_bytes());
    b[16..24].copy_from_slice(&(64u64 << 10).to_le_bytes());
    b[24..28].copy_from_slice(&pid.to_le_bytes());
    b[32..40].copy_from_slice(&start.to_le_bytes());
    b[48..56].copy_from_slice(&pidns.to_le_bytes());
    std::fs::write(shm_path(&name), b).unwrap();
    (name, c)
}

/// Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_ascii_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

fn own_pidns() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").unwrap().ino()
}

/// A real process, SIGKILLed: its pid and start time.
fn killed_process() -> (u32, u64) {
    let mut child = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = start_time(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    (pid, start)
}

/// Far longer than any scheduling hiccup, far shorter than the timeout below: an opener that
/// waited for a dead creator's object would take the whole timeout.
const HANG: Duration = Duration::from_secs(30);
const LONG: Duration = Duration::from_secs(120);

#[test]
fn a_dead_creator_ends_the_wait() {
    let (pid, start) = killed_process();
    let (name, _c) = half_made("ot-dead", pid, start, own_pidns());
    let t = Instant::now();
    let err = weft::pubsub::Subscriber::connect_timeout(&name, LONG).unwrap_err();
    assert!(
        matches!(err, Error::NotReady { pid: p, creator_gone: true, .. } if p == pid),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("will never be ready: its creator (process "),
        "{err}"
    );
    assert!(
        t.elapsed() < HANG,
        "waited {:?} for a dead creator",
        t.elapsed()
    );
    // A creator of the name sees the same and replaces the leftover.
    let p = weft::pubsub::Publisher::create(&name, &weft::pubsub::Config::default()).unwrap();
    drop(p);
}

#[test]
fn a_live_creator_is_waited_for() {
    let me = std::process::id();
    let (name, _c) = half_made("ot-live", me, start_time(me), own_pidns());
    let t = Instant::now();
    let err = weft::pubsub::Subscriber::connect_timeout(&name, TIMEOUT).unwrap_err();
    assert!(
        matches!(err, Error::NotReady { pid, creator_gone: false, .. } if pid == me),
        "{err}"
    );
    assert!(t.elapsed() >= TIMEOUT, "gave up after {:?}", t.elapsed());
}

#[test]
fn a_creator_in_another_pid_namespace_is_waited_for() {
    // Its pid means nothing here: that no such process is seen proves nothing.
    let (pid, start) = killed_process();
    let (name, _c) = half_made("ot-ns", pid, start, own_pidns() + 1);
    let t = Instant::now();
    let err = weft::pubsub::Subscriber::connect_timeout(&name, TIMEOUT).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotReady {
                creator_gone: false,
                ..
            }
        ),
        "{err}"
    );
    assert!(t.elapsed() >= TIMEOUT, "gave up after {:?}", t.elapsed());
}

/// What a creator of each kind, and `weft clean`, do with a leftover whose creator is known
/// to be dead: replace (or remove) it.
fn replaced_by_every_creator(tag: &str, pid: u32, start: u64, pidns: u64) {
    let (name, _c) = half_made(&format!("{tag}-r"), pid, start, pidns);
    let p = weft::pubsub::Publisher::create(&name, &weft::pubsub::Config::default()).unwrap();
    drop(p);
    let (name, _c) = half_made(&format!("{tag}-s"), pid, start, pidns);
    weft::stream::StreamWriter::create(&name, 4096).unwrap();
    let (name, _c) = half_made(&format!("{tag}-c"), pid, start, pidns);
    weft::channel::Server::bind(&name).unwrap();
    let (name, _c) = half_made(&format!("{tag}-k"), pid, start, pidns);
    assert!(weft::shm::remove_abandoned(&name).unwrap());
    assert!(!std::path::Path::new(&shm_path(&name)).exists());
}

#[test]
fn a_reused_pid_does_not_keep_a_dead_creators_leftover() {
    // Our own pid with another start time: the creator died and its pid went to this process.
    let me = std::process::id();
    replaced_by_every_creator("ot-reused", me, start_time(me) + 1, own_pidns());
}

#[test]
fn a_dead_creators_leftover_is_replaced() {
    let (pid, start) = killed_process();
    replaced_by_every_creator("ot-gone", pid, start, own_pidns());
}

#[test]
fn a_leftover_from_another_pid_namespace_is_kept() {
    // No process of this pid is seen here, but the pid is another namespace's: its creator
    // may be at work. Every creator refuses the name, and `weft clean` leaves it.
    let (pid, start) = killed_process();
    let ns = own_pidns() + 1;
    let (name, _c) = half_made("ot-ns-r", pid, start, ns);
    let err = weft::pubsub::Publisher::create(&name, &weft::pubsub::Config::default()).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    let (name, _c) = half_made("ot-ns-s", pid, start, ns);
    let err = weft::stream::StreamWriter::create(&name, 4096).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    let (name, _c) = half_made("ot-ns-c", pid, start, ns);
    let err = weft::channel::Server::bind(&name).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    let (name, _c) = half_made("ot-ns-k", pid, start, ns);
    assert!(!weft::shm::remove_abandoned(&name).unwrap());
    assert!(std::path::Path::new(&shm_path(&name)).exists());
}

#[test]
fn a_creator_that_could_not_read_its_start_time_is_judged_by_its_pid() {
    // Start time and namespace 0: the creator could not read them (no /proc of its own).
    let (pid, _) = killed_process();
    replaced_by_every_creator("ot-nostart", pid, 0, 0);
    let me = std::process::id();
    let (name, _c) = half_made("ot-nostart-live", me, 0, 0);
    let err = weft::stream::StreamWriter::create(&name, 4096).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert!(!weft::shm::remove_abandoned(&name).unwrap());
    assert!(std::path::Path::new(&shm_path(&name)).exists());
}

/// An empty file (a creator killed between the file's creation and its size) is waited for
/// only as long as the timeout says.
#[test]
fn an_empty_file_is_waited_for_within_the_timeout() {
    let name = unique("ot-empty-wait");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), b"").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let n = name.clone();
    std::thread::spawn(move || {
        let _ = tx.send(weft::stream::StreamReader::open_timeout(&n, TIMEOUT).map(|_| ()));
    });
    // A generous upper bound, only so that a wait that never ends fails instead of hanging.
    let err = rx
        .recv_timeout(HANG)
        .expect("the open did not end")
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotReady {
                pid: 0,
                creator_gone: false,
                ..
            }
        ),
        "{err}"
    );
}

/// A header of another layout version (whose namespace field means something else) is judged
/// by its creator's pid alone: a dead creator ends the wait.
#[test]
fn a_dead_creator_of_another_layout_version_ends_the_wait() {
    let (pid, start) = killed_process();
    // Another namespace in the field: in another version it is not one.
    let (name, _c) = half_made("ot-oldver", pid, start, own_pidns() + 1);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(shm_path(&name))
            .unwrap();
        f.write_all_at(&(weft::shm::LAYOUT_VERSION - 1).to_le_bytes(), 8)
            .unwrap();
    }
    let err =
        weft::pubsub::Subscriber::connect_timeout(&name, Duration::from_secs(10)).unwrap_err();
    assert!(
        matches!(err, Error::NotReady { pid: p, creator_gone: true, .. } if p == pid),
        "{err}"
    );
}

/// What a listing says of a leftover: abandoned when its creator is gone (dead, or its pid
/// reused by another process), kept while it is at work.
#[test]
fn a_leftover_is_listed_abandoned_only_when_its_creator_is_gone() {
    let (pid, start) = killed_process();
    let (name, _c) = half_made("ot-ls-dead", pid, start, own_pidns());
    let o = weft::shm::object(&name).unwrap();
    assert!(
        matches!(
            o.error,
            Some(Error::NotReady {
                creator_gone: true,
                ..
            })
        ),
        "{:?}",
        o.error
    );
    assert_eq!((o.creator_pid, o.creator_alive), (pid, false));
    assert!(o.is_abandoned(), "a dead creator's leftover");

    let me = std::process::id();
    let (name, _c) = half_made("ot-ls-reused", me, start_time(me) + 1, own_pidns());
    let o = weft::shm::object(&name).unwrap();
    assert_eq!(o.creator_pid, me);
    assert!(!o.creator_alive, "a reused pid is not the creator");
    assert!(
        o.is_abandoned(),
        "a leftover whose creator's pid was reused"
    );

    let (name, _c) = half_made("ot-ls-live", me, start_time(me), own_pidns());
    let o = weft::shm::object(&name).unwrap();
    assert!(
        matches!(
            o.error,
            Some(Error::NotReady {
                creator_gone: false,
                ..
            })
        ),
        "{:?}",
        o.error
    );
    assert!(o.creator_alive);
    assert!(!o.is_abandoned(), "a live creator's object");
}

/// An empty file may be a creator's at work: `remove_abandoned` leaves it, the name's owner
/// (`remove_own_abandoned`) removes it.
#[test]
fn an_empty_file_is_removed_only_by_its_owner() {
    let name = unique("ot-empty");
    let _c = Cleanup(name.clone());
    std::fs::write(shm_path(&name), b"").unwrap();
    assert!(!weft::shm::remove_abandoned(&name).unwrap());
    assert!(std::path::Path::new(&shm_path(&name)).exists());
    assert!(weft::shm::remove_own_abandoned(&name).unwrap());
    assert!(!std::path::Path::new(&shm_path(&name)).exists());
}
