//! Shared by the bridge tests: unique names, clean-up, free ports, payloads, and a bridge in
//! a child process (the `weft-zenoh-test-bridge` fixture).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};
use weft_zenoh::wire::SampleHeader;
use weft_zenoh::{BridgeConfig, BridgeStats};

/// A region or key name unique to this test process.
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    // Relaxed: a counter for names.
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("t-wz-{tag}-{}-{n}", std::process::id())
}

/// Removes the regions `/dev/shm/weft.NAME` when dropped, whatever happened in the test.
pub struct Cleanup(pub Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = std::fs::remove_file(format!("/dev/shm/weft.{n}"));
        }
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Payload `i`: its index (8 bytes) and then bytes that depend on it, 8 to 3007 bytes long.
pub fn payload(i: u64) -> Vec<u8> {
    let len = 8 + (i.wrapping_mul(2_654_435_761) % 3000) as usize;
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&i.to_le_bytes());
    v.extend((8..len).map(|k| ((i as usize + k) * 31 % 251) as u8));
    v
}

/// The index of a payload made by [`payload`], after checking every byte of it.
pub fn check_payload(b: &[u8]) -> u64 {
    assert!(b.len() >= 8, "a payload of {} bytes", b.len());
    let i = u64::from_le_bytes(b[..8].try_into().unwrap());
    assert!(b == payload(i).as_slice(), "payload {i} is not byte-exact");
    i
}

/// Polls `f` until it is true or `timeout` passes.
pub fn eventually(timeout: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A bridge running in a child process; killed when dropped.
pub struct ChildBridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    _config: TempPath,
}

/// A file removed when dropped.
struct TempPath(std::path::PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl ChildBridge {
    /// Starts the fixture with `config` (written to a file the fixture reads with
    /// `BridgeConfig::from_file`), optionally inside network namespace `netns`, and waits
    /// for it to say `ready`.
    pub fn spawn(config: &BridgeConfig, netns: Option<&str>) -> ChildBridge {
        match netns {
            Some(ns) => ChildBridge::spawn_in(config, &["ip", "netns", "exec", ns]),
            None => ChildBridge::spawn_in(config, &[]),
        }
    }

    /// Starts the fixture with `config` as the last two arguments of the command `wrapper`
    /// (the fixture's path, then the configuration file's), or directly when `wrapper` is
    /// empty, and waits for it to say `ready`.
    pub fn spawn_in(config: &BridgeConfig, wrapper: &[&str]) -> ChildBridge {
        let path = std::env::temp_dir().join(format!("{}.json5", unique("config")));
        std::fs::write(&path, config.to_json()).expect("write the configuration");
        let exe = env!("CARGO_BIN_EXE_weft-zenoh-test-bridge");
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let mut child = cmd
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the bridge fixture");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut b = ChildBridge {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            _config: TempPath(path),
        };
        b.expect("ready", Duration::from_secs(20));
        b
    }

    /// Waits for the line `want`, skipping others.
    pub fn expect(&mut self, want: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l == want => return,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("the bridge process did not say {want:?}"),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait();
                    panic!("the bridge process exited ({status:?}) before saying {want:?}")
                }
            }
        }
    }

    /// The child's statistics.
    pub fn stats(&mut self) -> serde_json::Value {
        let stdin = self.stdin.as_mut().expect("running");
        writeln!(stdin, "stats").expect("the bridge process reads commands");
        stdin.flush().unwrap();
        loop {
            let l = self
                .lines
                .recv_timeout(Duration::from_secs(10))
                .expect("a stats line");
            if let Some(json) = l.strip_prefix("stats ") {
                return serde_json::from_str(json).expect("stats JSON");
            }
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: the bridge gets no chance to close anything.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChildBridge {
    fn drop(&mut self) {
        // End of input stops the fixture cleanly; kill it if it does not go in time.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bridge configuration for tests: explicit endpoints, no multicast scouting.
pub fn config(region: &str, prefix: &str) -> BridgeConfig {
    BridgeConfig::new(region)
        .with_key_prefix(prefix)
        .multicast_scouting(false)
        .discovery_interval(Duration::from_millis(20))
}

/// A sending bridge's configuration: topics matching `pattern` out, listening on loopback
/// `port`.
pub fn sending(region: &str, prefix: &str, pattern: &str, port: u16) -> BridgeConfig {
    config(region, prefix)
        .outbound(pattern)
        .unwrap()
        .listen(&format!("tcp/127.0.0.1:{port}"))
}

/// A receiving bridge's configuration: keys matching `pattern` in, connecting to loopback
/// `port`.
pub fn receiving(region: &str, prefix: &str, pattern: &str, port: u16) -> BridgeConfig {
    config(region, prefix)
        .inbound(pattern)
        .unwrap()
        .connect(&format!("tcp/127.0.0.1:{port}"))
}

/// A topic's inbound counters in a snapshot.
pub fn inbound_of(stats: &BridgeStats, topic: &str) -> weft_zenoh::BridgedTopic {
    stats
        .inbound(topic)
        .cloned()
        .unwrap_or_else(|| panic!("no inbound entry for {topic}: {stats:?}"))
}

/// A plain Zenoh session (no bridge) connected to loopback `port`: a far peer that sends or
/// receives whatever it likes.
pub fn raw_session(port: u16) -> zenoh::Session {
    use zenoh::Wait;
    let mut c = zenoh::Config::default();
    for (key, value) in [
        ("mode", "\"peer\"".to_owned()),
        ("connect/endpoints", format!("[\"tcp/127.0.0.1:{port}\"]")),
        ("scouting/multicast/enabled", "false".to_owned()),
    ] {
        c.insert_json5(key, &value).expect("a Zenoh setting");
    }
    zenoh::open(c).wait().expect("a Zenoh session")
}

/// A put from a raw session that waits for room instead of dropping (Zenoh's default for
/// puts is to drop under congestion), with `header` as the attachment when given.
pub fn put(z: &zenoh::Session, key: &str, payload: &[u8], header: Option<&SampleHeader>) {
    use zenoh::Wait;
    let put = z
        .put(key, payload.to_vec())
        .congestion_control(zenoh::qos::CongestionControl::Block);
    match header {
        Some(h) => put.attachment(h.encode()).wait(),
        None => put.wait(),
    }
    .expect("a Zenoh put");
}

/// Waits until `z` knows a subscriber for `key` on another session (a bridge's inbound
/// subscriber), so that what is put from now on reaches it.
pub fn wait_subscribed(z: &zenoh::Session, key: &str) {
    use zenoh::Wait;
    let p = z
        .declare_publisher(key.to_owned())
        .wait()
        .expect("a publisher");
    eventually(
        Duration::from_secs(20),
        &format!("a subscriber of {key}"),
        || {
            p.matching_status()
                .wait()
                .expect("matching status")
                .matching()
        },
    );
}
