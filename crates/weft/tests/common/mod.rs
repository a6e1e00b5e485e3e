//! Helpers shared by the integration tests: unique object names, the test peer process, and
//! clean-up that runs even when a test panics.
#![allow(dead_code)]

pub mod lagging;
pub mod pattern;
pub mod pubmsg;
pub mod region;
pub mod tick;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// A name no other test (or test run) uses.
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("t-{tag}-{}-{n}", std::process::id())
}

/// Whether this process may create a pid namespace (`unshare --pid`: CAP_SYS_ADMIN, root as
/// in CI), which the tests of liveness by heartbeat need.
pub fn pid_namespaces_available() -> bool {
    Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Spawns the test peer with `args` in a new pid namespace, where this process cannot see
/// its pid: `unshare --kill-child` makes the kernel kill the peer when `unshare` is killed.
pub fn spawn_in_pid_namespace(args: &[&str]) -> Peer {
    let mut all = vec![
        "--pid",
        "--fork",
        "--kill-child=SIGKILL",
        env!("CARGO_BIN_EXE_weft-test-peer"),
    ];
    all.extend_from_slice(args);
    Peer::spawn_program("unshare", &all)
}

/// Removes `/dev/shm/weft.NAME` when dropped, whatever happened in the test.
pub struct Cleanup(pub String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(shm_path(&self.0));
    }
}

/// Where an object lives in the file system.
pub fn shm_path(name: &str) -> String {
    format!("/dev/shm/weft.{name}")
}

/// Region `name`'s file, open for reading and writing (to read and write its words as a
/// crashed or hostile peer would have left them).
pub fn region_file(name: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(name))
        .unwrap()
}

/// A running test peer (crates/weft/peer), killed when dropped.
pub struct Peer {
    pub child: Child,
    pub out: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts `weft-test-peer ARGS...`.
    pub fn spawn(args: &[&str]) -> Peer {
        Peer::spawn_program(env!("CARGO_BIN_EXE_weft-test-peer"), args)
    }

    /// Starts `PROGRAM ARGS...` (a wrapper such as `unshare` around the peer).
    pub fn spawn_program(program: &str, args: &[&str]) -> Peer {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the test peer");
        let out = BufReader::new(child.stdout.take().unwrap());
        Peer { child, out }
    }

    /// The peer's next output line (panics if it exits first).
    pub fn line(&mut self) -> String {
        let mut s = String::new();
        let n = self.out.read_line(&mut s).expect("read the peer's output");
        assert!(n > 0, "the peer exited without saying more");
        s.trim().to_string()
    }

    /// Waits for a line that equals `want`.
    pub fn expect(&mut self, want: &str) {
        let got = self.line();
        assert_eq!(got, want, "peer said {got:?}, expected {want:?}");
    }

    /// SIGKILL, and reap it.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL the peer");
        self.child.wait().expect("reap the peer");
    }

    /// Waits for the peer to exit (bounded) and returns its last output line and exit status.
    pub fn finish(mut self, timeout: Duration) -> (String, bool) {
        let deadline = std::time::Instant::now() + timeout;
        let mut last = String::new();
        let mut s = String::new();
        while self.out.read_line(&mut s).unwrap_or(0) > 0 {
            last = s.trim().to_string();
            s.clear();
        }
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (last, status.success());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the peer did not exit in time"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Removes the object `name` and every stream of its channels (`NAME.*`), whatever happens.
pub struct Sweep(pub String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for f in streams_of(&self.0) {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_file(shm_path(&self.0));
    }
}

/// The files of the streams of `name`'s channels.
pub fn streams_of(name: &str) -> Vec<std::path::PathBuf> {
    let prefix = format!("weft.{name}.");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}
