//! Helpers shared by the command's tests: unique names, running the real `weft` binary, the
//! fixture peer (fixture/main.rs), and clean-up that runs even when a test panics.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// A name no other test (or test run) uses.
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("cli-{tag}-{}-{n}", std::process::id())
}

/// Where an object lives in the file system.
pub fn shm_path(name: &str) -> String {
    format!("/dev/shm/weft.{name}")
}

/// Whether the object `name` exists.
pub fn exists(name: &str) -> bool {
    std::path::Path::new(&shm_path(name)).exists()
}

/// Makes `/dev/shm/weft.NAME` look like a region whose creator, process `creator`, is still
/// at work: a header (docs/protocol.md) with weft's magic, the layout version, kind 2 and the
/// creator's pid, but without `ready`. An opener waits for it to be made ready.
pub fn region_being_made(name: &str, creator: u32) {
    let mut h = vec![0u8; 4096];
    h[0..8].copy_from_slice(b"WEFT\x00OBJ");
    h[8..12].copy_from_slice(&weft::shm::LAYOUT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&2u32.to_le_bytes());
    h[16..24].copy_from_slice(&4096u64.to_le_bytes());
    h[24..28].copy_from_slice(&creator.to_le_bytes());
    std::fs::write(shm_path(name), &h).expect("write the region's header");
}

/// Removes `/dev/shm/weft.NAME` for every name when dropped, whatever happened in the test.
pub struct Cleanup(pub Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = std::fs::remove_file(shm_path(n));
        }
    }
}

/// What one run of `weft` did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts that the run exited with `code` and said `text` on stderr.
    #[track_caller]
    pub fn fails_with(&self, code: i32, text: &str) {
        assert_eq!(self.code, code, "{self:?}");
        assert!(
            self.stderr.contains(text),
            "{text:?} not in {}",
            self.stderr
        );
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().expect("weft exited by a signal"),
            stdout: String::from_utf8(o.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(o.stderr).expect("UTF-8 stderr"),
        }
    }
}

/// Runs `weft ARGS...` to completion (stdout and stderr are pipes, so no colour unless forced).
pub fn weft(args: &[&str]) -> Run {
    weft_env(args, &[])
}

/// As [`weft`], with extra environment variables.
pub fn weft_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(WEFT);
    cmd.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run weft").into()
}

/// Runs `weft ARGS... --json`, requires success, and parses stdout.
pub fn weft_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let r = weft(&all);
    assert_eq!(r.code, 0, "weft {all:?} failed: {r:?}");
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout))
}

/// The object `name` in `weft ls --json`, if listed.
pub fn listed(name: &str) -> Option<Value> {
    let doc = weft_json(&["ls"]);
    doc["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| o["name"] == name)
        .cloned()
}

/// A running process (the fixture peer, or `weft` itself), killed when dropped.
pub struct Proc {
    pub child: Child,
    pub out: BufReader<ChildStdout>,
}

impl Proc {
    /// Starts `weft-cli-test-peer ARGS...` and waits for its `ready` line.
    pub fn peer(args: &[&str]) -> Proc {
        let mut p = Proc::spawn_with(
            env!("CARGO_BIN_EXE_weft-cli-test-peer"),
            args,
            Stdio::inherit(),
        );
        p.expect("ready");
        p
    }

    /// Starts `weft ARGS...` in the background, stdout and stderr piped.
    pub fn weft(args: &[&str]) -> Proc {
        Proc::spawn_with(WEFT, args, Stdio::piped())
    }

    fn spawn_with(program: &str, args: &[&str], stderr: Stdio) -> Proc {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the process");
        let out = BufReader::new(child.stdout.take().unwrap());
        Proc { child, out }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next output line (panics if the process exits first).
    pub fn line(&mut self) -> String {
        let mut s = String::new();
        let n = self.out.read_line(&mut s).expect("read the output");
        assert!(n > 0, "the process exited without saying more");
        s.trim_end().to_string()
    }

    /// Waits for a line that equals `want`.
    pub fn expect(&mut self, want: &str) {
        let got = self.line();
        assert_eq!(got, want, "said {got:?}, expected {want:?}");
    }

    /// SIGKILL, and reap it.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// Waits (bounded) for the process to exit; returns its exit code, the rest of its stdout,
    /// and its stderr.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stdout = String::new();
                std::io::Read::read_to_string(&mut self.out, &mut stdout).unwrap();
                let mut stderr = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    std::io::Read::read_to_string(&mut e, &mut stderr).unwrap();
                }
                return Run {
                    code: status.code().unwrap_or(-1),
                    stdout,
                    stderr,
                };
            }
            assert!(
                Instant::now() < deadline,
                "the process did not exit in time"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` until it holds (at most 10 s).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
