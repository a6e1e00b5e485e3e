//! Liveness across pid namespaces: a writer whose pid this process cannot see is judged by its
//! heartbeat, which does not depend on its message rate.

mod common;

use common::{Cleanup, pid_namespaces_available, spawn_in_pid_namespace, unique};
use std::time::{Duration, Instant};
use weft::stream::StreamReader;
use weft::{Error, Role};

#[test]
fn a_slow_writer_in_another_pid_namespace_is_alive_until_killed() {
    if !pid_namespaces_available() {
        // Needs CAP_SYS_ADMIN (root, as in CI); the /proc path is covered by stream_crash.
        eprintln!("not run: this process cannot create a pid namespace");
        return;
    }
    let name = unique("pidns");
    let _c = Cleanup(name.clone());
    let mut peer = spawn_in_pid_namespace(&["stream-slow-writer", &name, "1500", "3"]);
    peer.expect("ready");
    let mut r = StreamReader::open(&name).unwrap();
    // Records 1.5 s apart, longer than the 1 s liveness timeout: the heartbeat, not the
    // traffic, keeps the writer alive.
    for seq in 0..3u64 {
        let g = r
            .read_timeout(Duration::from_secs(10))
            .expect("the idle writer is alive");
        assert_eq!(u64::from_le_bytes(g[..].try_into().unwrap()), seq);
    }
    peer.expect("sent");
    assert!(matches!(
        r.read_timeout(Duration::from_millis(1500)),
        Err(Error::Timeout)
    ));
    peer.kill9();
    let t = Instant::now();
    match r.read_timeout(Duration::from_secs(20)) {
        Err(Error::PeerDead {
            role: Role::Writer, ..
        }) => {}
        other => panic!("expected PeerDead, got {:?}", other.map(|g| g.len())),
    }
    // The heartbeat goes stale after the 1 s liveness timeout; allow for a loaded machine.
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "detected after {:?}",
        t.elapsed()
    );
}

/// A live writer in another pid namespace, stopped for longer than the liveness timeout, is
/// taken for dead by a listing (its heartbeat is all this namespace can judge it by), but its
/// stream is not removed as abandoned: `weft clean` removed it from under the stopped
/// process, which went on writing into a name that was gone. Removal waits for a heartbeat
/// 30 s old, and the listing says so (`is_abandoned` is what the removal would do: `weft ls`
/// and `weft clean --dry-run` announced a removal that `weft clean` then refused).
#[test]
fn a_stopped_writer_in_another_pid_namespace_keeps_its_stream() {
    if !pid_namespaces_available() {
        eprintln!("not run: this process cannot create a pid namespace");
        return;
    }
    let name = unique("pidns-stop");
    let _c = Cleanup(name.clone());
    let mut peer = spawn_in_pid_namespace(&["stream-slow-writer", &name, "1500", "3"]);
    peer.expect("ready");
    // The writer is `unshare`'s child; its pid as this namespace sees it.
    let unshare = peer.child.id();
    let children =
        std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children")).unwrap();
    let writer = children
        .split_whitespace()
        .next()
        .expect("the writer")
        .to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &writer])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {writer}");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(2500));
    let listed = weft::shm::object(&name).unwrap();
    let removed = weft::shm::remove_abandoned(&name);
    let exists = std::path::Path::new(&common::shm_path(&name)).exists();
    signal("-CONT");
    peer.kill9();
    assert_eq!(
        (listed.alive(), listed.dead()),
        (0, 1),
        "a heartbeat 2.5 s old: dead to a listing"
    );
    assert!(
        !listed.is_abandoned(),
        "but not abandoned: the removal keeps it"
    );
    assert!(!removed.unwrap(), "removed while its writer lived");
    assert!(exists);
}
