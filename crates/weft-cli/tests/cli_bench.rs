//! `weft bench`: every case runs (the cross-process ones through the hidden child subcommand)
//! and reports ordered percentiles and lossless counts; JSON parses; nothing is left behind.
//! Speed is never asserted here.

mod common;

use common::*;

#[test]
fn bench_reports_every_case_and_leaves_nothing_behind() {
    let run = Proc::weft(&[
        "bench",
        "all",
        "--duration",
        "150ms",
        "--size",
        "100",
        "--json",
    ]);
    let pid = run.pid();
    let run = run.finish(std::time::Duration::from_secs(120));
    assert_eq!(run.code, 0, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert!(doc["machine"].as_str().unwrap().contains("cores"));
    let lat = doc["latency"].as_array().unwrap();
    let cases: Vec<_> = lat.iter().map(|l| l["case"].as_str().unwrap()).collect();
    assert_eq!(cases, ["ring", "stream", "pubsub"]);
    for l in lat {
        assert!(l["round_trips"].as_u64().unwrap() > 0, "{l}");
        let p: Vec<u64> = ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"]
            .iter()
            .map(|k| l[*k].as_u64().unwrap())
            .collect();
        assert!(
            p.windows(2).all(|w| w[0] <= w[1]),
            "percentiles in order: {l}"
        );
        assert!(p[0] > 0);
    }
    assert_eq!(
        lat[0]["size"], 128,
        "ring messages round up to a fixed size"
    );
    assert_eq!(lat[1]["size"], 100);
    let thr = doc["throughput"].as_array().unwrap();
    assert_eq!(thr.len(), 3);
    for t in thr {
        assert!(t["messages"].as_u64().unwrap() > 0, "{t}");
        assert!(t["msgs_per_sec"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(doc["interrupted"], false);
    assert_eq!(thr[0]["lost"], 0, "the bounded ring is lossless");
    assert_eq!(thr[1]["lost"], 0, "the stream is lossless");
    assert_eq!(
        thr[2]["lost"], 0,
        "the acknowledged publisher never laps its subscriber"
    );

    let mine = format!("weft-bench-{pid}-");
    let left: Vec<String> = weft_json(&["ls"])["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .filter(|n| n.starts_with(&mine))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn bench_human_output_and_bad_arguments() {
    let r = weft(&["bench", "ring", "--duration", "100ms"]);
    assert_eq!(r.code, 0, "{r:?}");
    for want in [
        "round-trip latency",
        "p99.9",
        "throughput",
        "Mmsg/s",
        "ring",
    ] {
        assert!(r.stdout.contains(want), "{want:?} in\n{}", r.stdout);
    }
    assert!(
        r.stderr.is_empty(),
        "no progress bar outside a terminal: {:?}",
        r.stderr
    );
    assert_eq!(weft(&["bench", "nope"]).code, 2);
    assert_eq!(weft(&["bench", "--size", "0"]).code, 2);
    assert_eq!(weft(&["bench", "--duration", "x"]).code, 2);
    // Nothing to measure in no time: refused, with the range allowed (it printed tables of
    // 0 ns and exited 0).
    for zero in ["0", "0ms", "0.0s"] {
        let r = weft(&["bench", "ring", "--duration", zero]);
        assert_eq!(r.code, 2, "--duration {zero}: {r:?}");
        assert!(
            r.stderr.contains("--duration must be 1ms to"),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
    let r = weft(&["bench", "--size", "1048577"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("1048576"),
        "the limit is named: {}",
        r.stderr
    );
}

/// The files of the benchmark run by process `pid` still in /dev/shm (`weft.weft-bench-PID-*`).
fn bench_files(pid: u32) -> Vec<String> {
    let prefix = format!("weft.weft-bench-{pid}-");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes whatever a benchmark run left in /dev/shm when dropped, so that a failing test
/// leaves nothing either (the test asserts first that there was nothing).
struct BenchFiles(u32);

impl Drop for BenchFiles {
    fn drop(&mut self) {
        for f in bench_files(self.0) {
            let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
        }
    }
}

/// Sends `signal` (e.g. "-INT") to `target` (a pid, or "-PGID" for a process group).
fn kill(signal: &str, target: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, "--", target])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill {signal} {target}");
}

/// The process group of process `pid` (the fifth field of /proc/PID/stat).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Every size --size accepts is one every case can carry: the stream case's latency streams
/// took at most 524280 bytes, so 600000 (or the 1 MiB limit) failed in the middle of the run
/// and left the child's stream behind.
#[test]
fn bench_stream_carries_the_largest_size_and_leaves_nothing_behind() {
    let run = Proc::weft(&[
        "bench",
        "stream",
        "--duration",
        "100ms",
        "--size",
        "1048576",
        "--json",
    ]);
    let pid = run.pid();
    let _files = BenchFiles(pid);
    let run = run.finish(std::time::Duration::from_secs(60));
    assert_eq!(run.code, 0, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["latency"][0]["size"], 1048576, "{doc}");
    assert!(doc["latency"][0]["round_trips"].as_u64().unwrap() > 0);
    assert!(doc["throughput"][0]["messages"].as_u64().unwrap() > 0);
    assert_eq!(doc["interrupted"], false, "{doc}");
    assert_eq!(bench_files(pid), Vec::<String>::new(), "left behind");
}

/// Ctrl-C on a terminal signals the whole foreground process group. The child starts in a
/// group of its own, so that only the parent sees it (a child still starting up died of it,
/// and the run exited 1), and the parent winds the measurement down: status 0, and the JSON
/// says the run was interrupted and how long it measured.
#[test]
fn bench_ctrl_c_reaches_only_the_parent_and_the_json_says_interrupted() {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(WEFT)
        .args(["bench", "stream", "--duration", "30s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A group of its own, as a shell gives a foreground job (and so that the test's
        // SIGINT to that group reaches nothing else).
        .process_group(0)
        .spawn()
        .expect("start weft");
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let run = Proc { child, out };
    let pid = run.pid();
    let _files = BenchFiles(pid);
    let mut bench_child = None;
    eventually("the benchmark's child", || {
        bench_child = bench_child_of(pid);
        bench_child.is_some()
    });
    let bench_child = bench_child.unwrap();
    assert_ne!(
        process_group(bench_child),
        Some(pid as i32),
        "the child is not in the group the terminal signals"
    );
    kill("-INT", &format!("-{pid}"));
    let run = run.finish(std::time::Duration::from_secs(60));
    assert_eq!(run.code, 0, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["interrupted"], true, "{doc}");
    let measured = doc["measured_s"].as_f64().expect("measured_s");
    assert!(
        measured < doc["duration_s"].as_f64().unwrap(),
        "the time actually measured, not the time asked for: {doc}"
    );
    assert_eq!(bench_files(pid), Vec::<String>::new(), "left behind");
}

/// The human output of an interrupted run says that its figures are partial.
#[test]
fn bench_human_output_notes_an_interruption() {
    let mut run = Proc::weft(&["bench", "ring", "--duration", "30s"]);
    // The heading is printed before the first measurement starts.
    assert!(run.line().starts_with("weft bench:"));
    kill("-INT", &run.pid().to_string());
    let run = run.finish(std::time::Duration::from_secs(60));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("interrupted"),
        "a note says so:\n{}",
        run.stdout
    );
}

/// A case that fails does not discard the measurements that finished before it: they are
/// printed, then the failure; the child that died is named with its signal, and nothing of
/// the run is left in /dev/shm.
#[test]
fn bench_failure_keeps_the_measurements_that_finished() {
    let run = Proc::weft(&["bench", "stream", "--duration", "2s", "--json"]);
    let pid = run.pid();
    let _files = BenchFiles(pid);
    // The throughput stream exists once the latency measurement has finished.
    let data = format!("weft-bench-{pid}-stream.data");
    eventually("the throughput measurement", || exists(&data));
    let mut sink = None;
    eventually("the throughput's child", || {
        sink = bench_child_of(pid);
        sink.is_some()
    });
    kill("-KILL", &sink.unwrap().to_string());
    let run = run.finish(std::time::Duration::from_secs(60));
    assert_eq!(run.code, 6, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("a partial report");
    assert_eq!(doc["latency"][0]["case"], "stream", "{doc}");
    assert!(doc["latency"][0]["round_trips"].as_u64().unwrap() > 0);
    assert_eq!(doc["throughput"].as_array().unwrap().len(), 0, "{doc}");
    assert!(run.stderr.contains("SIGKILL"), "{}", run.stderr);
    assert_eq!(bench_files(pid), Vec::<String>::new(), "left behind");
}

/// A child killed while it starts up (before it says `ready`; the parent may have made the
/// objects already) is the other side gone, as one killed mid-measurement: status 6, not the
/// plain error of a child that failed to start.
#[test]
fn a_child_killed_while_it_starts_ends_the_run_as_the_other_side_gone() {
    let run = Proc::weft(&["bench", "stream", "--duration", "2s", "--json"]);
    let pid = run.pid();
    let _files = BenchFiles(pid);
    // Killed the moment it shows up: long before it has opened its stream and said `ready`.
    let t = std::time::Instant::now();
    let child = loop {
        if let Some(c) = bench_child_of(pid) {
            break c;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "no child");
    };
    kill("-KILL", &child.to_string());
    let run = run.finish(std::time::Duration::from_secs(60));
    assert_eq!(run.code, 6, "{run:?}");
    assert!(run.stderr.contains("SIGKILL"), "{}", run.stderr);
    assert_eq!(bench_files(pid), Vec::<String>::new(), "left behind");
}

/// The pid of a `weft bench-child` process whose parent is `parent`, if one runs.
fn bench_child_of(parent: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        (ppid == parent && cmd.windows(11).any(|w| w == b"bench-child")).then_some(pid)
    })
}

/// The pub/sub measurement waits on a topic this process also publishes on, so the library
/// cannot report the child's death there: the command checks on the child itself and fails
/// with "peer gone" instead of waiting forever.
#[test]
fn bench_pubsub_fails_when_its_child_dies() {
    let run = Proc::weft(&["bench", "pubsub", "--duration", "60s"]);
    let pid = run.pid();
    let _files = BenchFiles(pid);
    let region = format!("weft-bench-{pid}-pubsub");
    // Echoes on `/pong` mean the child has said "ready" and the measurement runs.
    eventually("the child's first echoes", || {
        let r = weft(&["info", "--json", &region]);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
        doc["region"]["topics"].as_array().is_some_and(|ts| {
            ts.iter()
                .any(|t| t["name"] == "/pong" && t["published"] != 0)
        })
    });
    let child = bench_child_of(pid);
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &child.expect("the child runs").to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let run = run.finish(std::time::Duration::from_secs(20));
    assert_eq!(run.code, 6, "{run:?}");
    assert!(run.stderr.contains("child"), "{run:?}");
    // Named by its signal, not as a Debug dump of the wait status.
    assert!(run.stderr.contains("SIGKILL"), "{}", run.stderr);
    assert!(!run.stderr.contains("ExitStatus"), "{}", run.stderr);
    assert_eq!(bench_files(pid), Vec::<String>::new(), "left behind");
}

/// On a terminal (and without --json), bench shows a progress bar per measurement on stderr
/// ("with progress"). Run under `script(1)` (util-linux; Debian's essential `bsdutils`) for a
/// pseudo-terminal.
#[test]
fn bench_shows_progress_on_a_terminal() {
    let out = std::process::Command::new("script")
        .args([
            "-qfec",
            &format!("{WEFT} bench ring --duration 400ms >/dev/null"),
            "/dev/null",
        ])
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1), from util-linux, for a pseudo-terminal");
    assert!(out.status.success(), "{out:?}");
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(
        tty.contains("ring latency [") && tty.contains("ring throughput ["),
        "no progress bars on the terminal:\n{tty}"
    );
}
