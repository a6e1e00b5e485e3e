//! `weft bridge`: two real `weft bridge` processes and a real Zenoh session between them carry
//! a topic from one region to another; bad input is refused with the documented statuses.
//! Built only with the command's `bridge` feature (`cargo test -p weft-cli --features bridge`).
#![cfg(feature = "bridge")]

mod common;

use common::{Cleanup, Proc, unique, weft};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber};

/// A TCP port nobody listens on right now (the OS picks it; released before Zenoh binds it).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().port()
}

/// The next JSON event line of a `weft bridge --json` process.
fn event(p: &mut Proc) -> Value {
    let line = p.line();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
}

/// Reads events until one satisfies `f` (at most 20 s).
fn until(p: &mut Proc, what: &str, mut f: impl FnMut(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        let e = event(p);
        if f(&e) {
            return e;
        }
    }
}

/// The entry of `topic` in a stats event's `dir` list.
fn entry<'a>(e: &'a Value, dir: &str, topic: &str) -> Option<&'a Value> {
    e["stats"][dir]
        .as_array()?
        .iter()
        .find(|t| t["topic"] == topic)
}

/// Ctrl-C, as a terminal sends it.
fn interrupt(p: &Proc) {
    let ok = Command::new("kill")
        .args(["-INT", &p.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success());
}

#[test]
fn two_bridges_carry_a_topic_between_regions_and_stop_on_ctrl_c() {
    let (a, b) = (unique("bridge-a"), unique("bridge-b"));
    let _cleanup = Cleanup(vec![a.clone(), b.clone()]);
    let publisher = Publisher::create(&a, &Config::default()).unwrap();
    let prices = publisher.register("/prices/AAPL").unwrap();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local.register("/prices/AAPL").unwrap();
    let mut sub = Subscriber::connect(&b)
        .unwrap()
        .subscribe("/prices/AAPL")
        .unwrap();

    let port = free_port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    // The sending side from flags.
    let mut sender = Proc::weft(&[
        "bridge",
        "--region",
        &a,
        "--out",
        "/prices/*",
        "--listen",
        &endpoint,
        "--no-scouting",
        "--every",
        "20ms",
        "--json",
    ]);
    let started = event(&mut sender);
    assert_eq!(started["event"], "started");
    assert_eq!(started["region"], a.as_str());
    assert_eq!(started["outbound"][0]["pattern"], "/prices/*");
    assert_eq!(started["outbound"][0]["key"], format!("weft/{a}/prices/*"));
    assert!(
        started["zenoh_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );

    // The receiving side from a JSON5 file, with a flag on top (the region comes from the file).
    let dir = std::env::temp_dir().join(unique("bridge-conf"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("receiver.json5");
    std::fs::write(
        &file,
        format!(
            "{{ region: \"{b}\", inbound: [\"/prices/*\"], // Zenoh -> region\n\
               connect: [\"{endpoint}\"], multicast_scouting: false,\n\
               key_prefix: \"weft/{a}\" }}"
        ),
    )
    .unwrap();
    let mut receiver = Proc::weft(&[
        "bridge",
        file.to_str().unwrap(),
        "--every",
        "20ms",
        "--json",
    ]);
    let started = event(&mut receiver);
    assert_eq!(started["region"], b.as_str());
    assert_eq!(started["inbound"][0]["key"], format!("weft/{a}/prices/*"));

    until(&mut sender, "the far bridge to subscribe", |e| {
        entry(e, "outbound", "/prices/AAPL").is_some_and(|t| t["matched"] == true)
    });

    const N: u64 = 200;
    let payload = |i: u64| format!("tick {i} {}", "x".repeat((i % 97) as usize));
    for i in 0..N {
        assert_eq!(
            publisher.publish(&prices, payload(i).as_bytes()).unwrap(),
            i
        );
    }
    for i in 0..N {
        let s = sub.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(&*s, payload(i).as_bytes(), "sample {i}");
    }

    interrupt(&sender);
    interrupt(&receiver);
    let (sent, got) = (
        sender.finish(Duration::from_secs(10)),
        receiver.finish(Duration::from_secs(10)),
    );
    assert_eq!(sent.code, 0, "sender: {}", sent.stderr);
    assert_eq!(got.code, 0, "receiver: {}", got.stderr);
    let last = |out: &str| -> Value {
        serde_json::from_str(out.lines().last().expect("a final event")).unwrap()
    };
    let (sent, got) = (last(&sent.stdout), last(&got.stdout));
    assert_eq!(sent["event"], "stopped");
    assert_eq!(got["event"], "stopped");
    let out = entry(&sent, "outbound", "/prices/AAPL").unwrap();
    let inb = entry(&got, "inbound", "/prices/AAPL").unwrap();
    let bytes: u64 = (0..N).map(|i| payload(i).len() as u64).sum();
    for t in [out, inb] {
        assert_eq!(t["samples"], N);
        assert_eq!(t["bytes"], bytes);
        assert_eq!(t["lagged"], 0);
        assert_eq!(t["dropped"], 0);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bridge_with_a_duration_stops_by_itself_and_prints_tables() {
    let a = unique("bridge-d");
    let _cleanup = Cleanup(vec![a.clone()]);
    let port = free_port().to_string();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let r = weft(&[
        "bridge",
        "--region",
        &a,
        "--in",
        "/x/**",
        "--listen",
        &endpoint,
        "--no-scouting",
        "--duration",
        "300ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!("bridging region {a}")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("in   weft/{a}/x/**  ->  /x/**")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("no topic bridged yet"), "{}", r.stdout);
    assert!(r.stdout.contains("stopped after"), "{}", r.stdout);
}

#[test]
fn bad_bridge_input_is_refused_with_the_documented_statuses() {
    let cases: &[(&[&str], i32, &str)] = &[
        (&["bridge"], 2, "--region"),
        (&["bridge", "--region", "r"], 2, "nothing to bridge"),
        (
            &["bridge", "--region", "r", "--out", "no-slash"],
            2,
            "pattern",
        ),
        (&["bridge", "--region", "a/b", "--out", "/x"], 2, "region"),
        (
            &[
                "bridge",
                "--region",
                "r",
                "--out",
                "/x",
                "--connect",
                "udp/1.2.3.4:5",
            ],
            2,
            "tcp/HOST:PORT",
        ),
        (
            &[
                "bridge",
                "--region",
                "r",
                "--out",
                "/x",
                "--key-prefix",
                "a/*",
            ],
            2,
            "key prefix",
        ),
        (
            &["bridge", "/no/such/bridge.json5"],
            3,
            "/no/such/bridge.json5",
        ),
        (
            &["bridge", "--region", "r", "--out", "/x", "--every", "soon"],
            2,
            "duration",
        ),
    ];
    for (args, code, says) in cases {
        let r = weft(args);
        assert_eq!(r.code, *code, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(says),
            "{args:?} should say {says:?}: {}",
            r.stderr
        );
    }

    // A malformed file names itself; --json puts the error on stderr as JSON.
    let dir = std::env::temp_dir().join(unique("bridge-bad"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.json5");
    std::fs::write(
        &file,
        "{ region: \"r\", outbound: [\"/x\"], colour: \"red\" }",
    )
    .unwrap();
    let r = weft(&["--json", "bridge", file.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    let err: Value = serde_json::from_str(r.stderr.trim()).expect("a JSON error");
    assert_eq!(err["error"]["code"], 2);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bad.json5") && message.contains("colour"),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A name that holds a stream, or a file that is not weft's, can never be bridged: with only
/// outbound patterns the bridge ran until its duration printing the error and exited 0 (an
/// inbound one exited 5 at once). Both exit 5 at once now.
#[test]
fn a_name_that_is_no_region_is_refused_whichever_the_direction() {
    let stream = unique("bridge-stream");
    let foreign = unique("bridge-foreign");
    let _cleanup = Cleanup(vec![stream.clone(), foreign.clone()]);
    let _writer = weft::stream::StreamWriter::create(&stream, 4096).unwrap();
    std::fs::write(format!("/dev/shm/weft.{foreign}"), vec![0x5a; 4096]).unwrap();
    for (name, says) in [(&stream, "stream"), (&foreign, "not a weft object")] {
        for dir in ["--out", "--in"] {
            let t = Instant::now();
            let r = weft(&[
                "bridge",
                "--region",
                name,
                dir,
                "/x/**",
                "--no-scouting",
                "--duration",
                "20s",
            ]);
            assert_eq!(r.code, 5, "{name} {dir}: {}", r.stderr);
            assert!(r.stderr.contains(says), "{name} {dir}: {}", r.stderr);
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{name} {dir}: ran on"
            );
        }
    }
}

/// Both sides from flags only: `--key-prefix` names the keys on both (the regions differ, so
/// the default prefixes would not meet) and the receiver reaches the sender through
/// `--connect` (no scouting).
#[test]
fn the_key_prefix_and_connect_flags_are_used() {
    let (a, b) = (unique("bridge-fa"), unique("bridge-fb"));
    let _cleanup = Cleanup(vec![a.clone(), b.clone()]);
    let publisher = Publisher::create(&a, &Config::default()).unwrap();
    let t = publisher.register("/q/x").unwrap();
    let local = Publisher::create(&b, &Config::default()).unwrap();
    local.register("/q/x").unwrap();
    let mut sub = Subscriber::connect(&b).unwrap().subscribe("/q/x").unwrap();
    let prefix = format!("flags/{}", unique("pfx"));
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let side = |region: &str, dir: &str, link: &str| {
        Proc::weft(&[
            "bridge",
            "--region",
            region,
            dir,
            "/q/*",
            link,
            &endpoint,
            "--key-prefix",
            &prefix,
            "--no-scouting",
            "--every",
            "20ms",
            "--json",
        ])
    };
    let mut sender = side(&a, "--out", "--listen");
    let started = event(&mut sender);
    assert_eq!(started["outbound"][0]["key"], format!("{prefix}/q/*"));
    let mut receiver = side(&b, "--in", "--connect");
    let started = event(&mut receiver);
    assert_eq!(started["inbound"][0]["key"], format!("{prefix}/q/*"));
    // Published until one arrives (the first ones may go out before the far side subscribed).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "nothing arrived in {b}");
        publisher.publish(&t, b"hello").unwrap();
        match sub.recv_timeout(Duration::from_millis(50)) {
            Ok(s) => break assert_eq!(&*s, b"hello"),
            Err(weft::Error::Timeout) => {}
            Err(e) => panic!("{e}"),
        }
    }
    interrupt(&sender);
    interrupt(&receiver);
    assert_eq!(sender.finish(Duration::from_secs(10)).code, 0);
    assert_eq!(receiver.finish(Duration::from_secs(10)).code, 0);
}
