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
}
