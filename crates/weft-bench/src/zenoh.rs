//! Through Zenoh: a weft topic in one process forwarded by a weft-zenoh bridge, over Zenoh on
//! TCP loopback, to a second bridge that publishes it into a weft topic in another process,
//! against a plain Zenoh publisher and subscriber with the same Zenoh configuration (peer
//! mode, explicit 127.0.0.1 endpoints, no multicast scouting, TCP only, congestion control
//! Block, batching on). Built with `--features zenoh` only (Zenoh is a large build).
//!
//! - Latency: ping-pong of 64 bytes, half the round trip, p50 and p99 per repetition. The
//!   bridged path is weft publish -> bridge -> Zenoh -> bridge -> weft subscriber, both ways;
//!   the plain path is Zenoh put -> subscriber (`recv`) -> put back.
//! - Throughput: N messages published as fast as the sender can; the receiver's rate from
//!   its first to its last message (lossless on both: the rings hold a whole repetition, and
//!   Zenoh blocks instead of dropping).
//!
//! The parent is the sending side; the child (`weft-bench --child zenoh-recv IMPL ...`) is
//! the receiving side, one child per implementation and repetition, interleaved.

use crate::harness::{Better, Report, Scenario, spawn_child, unique_name};
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber};
use weft_zenoh::{Bridge, BridgeConfig};
use zenoh::Wait;
use zenoh::qos::CongestionControl;

const PINGS: usize = 5_000;
const MSG: usize = 64;
const STOP: u8 = 0xFF;

const IMPLS: [(&str, &str); 2] = [
    ("bridge", "weft-zenoh 0.1 bridge, weft to weft"),
    ("plain", "zenoh 1.10 pub/sub, put to recv"),
];

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "zenoh/latency-64B".into(),
            run: Box::new(latency),
        },
        Scenario {
            name: "zenoh/throughput-64B".into(),
            run: Box::new(|r| throughput(r, 64, 20_000)),
        },
        Scenario {
            name: "zenoh/throughput-4KiB".into(),
            run: Box::new(|r| throughput(r, 4096, 5_000)),
        },
    ]
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The Zenoh configuration both implementations use.
fn zenoh_config(listen: Option<u16>, connect: Option<u16>) -> zenoh::Config {
    let mut c = BridgeConfig::new("unused").multicast_scouting(false);
    if let Some(p) = listen {
        c = c.listen(&format!("tcp/127.0.0.1:{p}"));
    }
    if let Some(p) = connect {
        c = c.connect(&format!("tcp/127.0.0.1:{p}"));
    }
    c.zenoh_config().expect("a valid Zenoh configuration")
}

/// A bridge configuration with the same Zenoh settings.
fn bridge_config(
    region: &str,
    prefix: &str,
    listen: Option<u16>,
    connect: Option<u16>,
) -> BridgeConfig {
    let mut c = BridgeConfig::new(region)
        .with_key_prefix(prefix)
        .multicast_scouting(false)
        .discovery_interval(Duration::from_millis(10));
    if let Some(p) = listen {
        c = c.listen(&format!("tcp/127.0.0.1:{p}"));
    }
    if let Some(p) = connect {
        c = c.connect(&format!("tcp/127.0.0.1:{p}"));
    }
    c
}

/// A region of `topics` topics shaped so that a whole repetition fits in each ring (a slot keeps
/// its block until it is reused, so there are more blocks than all the slots).
fn shape(count: usize, size: usize, topics: usize) -> Config {
    let slots = count.next_power_of_two();
    Config::default()
        .ring_slots(slots)
        .blocks(topics * slots + 256)
        .block_size(size.next_multiple_of(64).max(64))
}

/// The child's stdout, line by line, with a timeout.
struct Lines(Receiver<String>);

impl Lines {
    fn of(child: &mut std::process::Child) -> Lines {
        let out = child.stdout.take().expect("piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Lines(rx)
    }

    fn next(&self, timeout: Duration) -> Option<String> {
        self.0.recv_timeout(timeout).ok()
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn reap(mut child: std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn remove_region(name: &str) {
    let _ = std::fs::remove_file(format!("/dev/shm/weft.{name}"));
}

// ---- latency ------------------------------------------------------------------------------

/// One sending side of the ping-pong: sends `ping`, returns when its pong is back.
trait Pinger {
    fn ping(&mut self, msg: &[u8; MSG]);
}

/// The shared body: a warm-up batch and one measured batch of PINGS round trips; returns the
/// p50 and p99 of half the round trip, in microseconds.
fn measure_pings(p: &mut dyn Pinger) -> (f64, f64) {
    let mut lat = Vec::with_capacity(PINGS);
    let mut msg = [0u8; MSG];
    // The first batch warms up; the second is measured.
    for _ in 0..2 {
        lat.clear();
        for i in 0..PINGS {
            // Byte 0 is never STOP; the index follows it.
            msg[1..9].copy_from_slice(&(i as u64).to_le_bytes());
            let t = Instant::now();
            p.ping(&msg);
            lat.push(t.elapsed().as_nanos() as f64 / 2000.0);
        }
    }
    lat.sort_by(f64::total_cmp);
    (lat[PINGS / 2], lat[PINGS * 99 / 100])
}

fn latency(report: &mut Report) {
    let mut p50 = vec![Vec::new(); IMPLS.len()];
    let mut p99 = vec![Vec::new(); IMPLS.len()];
    for _ in 0..report.reps {
        for (k, (imp, _)) in IMPLS.iter().enumerate() {
            let (a, b) = match *imp {
                "bridge" => ping_bridge(),
                _ => ping_plain(),
            };
            p50[k].push(a);
            p99[k].push(b);
        }
    }
    for (k, (_, label)) in IMPLS.iter().enumerate() {
        report.add(
            "zenoh/latency-64B-p50",
            label,
            "µs",
            Better::Lower,
            p50[k].clone(),
        );
    }
    for (k, (_, label)) in IMPLS.iter().enumerate() {
        report.add(
            "zenoh/latency-64B-p99",
            label,
            "µs",
            Better::Lower,
            p99[k].clone(),
        );
    }
}

struct BridgePinger {
    publisher: Publisher,
    ping: weft::pubsub::Topic,
    pong: weft::pubsub::Subscription,
}

impl Pinger for BridgePinger {
    fn ping(&mut self, msg: &[u8; MSG]) {
        self.publisher
            .publish(&self.ping, msg)
            .expect("publish a ping");
        loop {
            let s = self
                .pong
                .recv_timeout(Duration::from_secs(10))
                .expect("a pong");
            if s[..9] == msg[..9] {
                return;
            }
        }
    }
}

fn ping_bridge() -> (f64, f64) {
    let (a, b, prefix) = (unique_name("zb-a"), unique_name("zb-b"), unique_name("zb"));
    let port = free_port();
    let publisher = Publisher::create(&a, &shape(1024, MSG, 2)).expect("region a");
    let ping = publisher.register("/ping").expect("register");
    publisher.register("/pong").expect("register");
    let subscriber = Subscriber::connect(&a).expect("connect");
    let pong = subscriber.subscribe("/pong").expect("subscribe");
    let bridge = Bridge::start(
        bridge_config(&a, &prefix, Some(port), None)
            .outbound("/ping")
            .and_then(|c| c.inbound("/pong"))
            .expect("patterns"),
    )
    .expect("bridge a");
    let mut child = spawn_child(&["zenoh-recv", "bridge-pong", &b, &prefix, &port.to_string()]);
    let lines = Lines::of(&mut child);
    assert_eq!(
        lines.next(Duration::from_secs(30)).as_deref(),
        Some("ready")
    );
    assert!(bridge.wait_matched("/ping", Duration::from_secs(30)));
    let mut p = BridgePinger {
        publisher,
        ping,
        pong,
    };
    let figures = measure_pings(&mut p);
    p.publisher.publish(&p.ping, &[STOP; MSG]).expect("stop");
    reap(child);
    drop(bridge);
    remove_region(&a);
    remove_region(&b);
    figures
}

struct PlainPinger {
    ping: zenoh::pubsub::Publisher<'static>,
    pong: zenoh::pubsub::Subscriber<zenoh::handlers::FifoChannelHandler<zenoh::sample::Sample>>,
}

impl Pinger for PlainPinger {
    fn ping(&mut self, msg: &[u8; MSG]) {
        self.ping.put(msg.to_vec()).wait().expect("put a ping");
        loop {
            let s = self.pong.recv().expect("a pong");
            if s.payload().to_bytes()[..9] == msg[..9] {
                return;
            }
        }
    }
}

fn ping_plain() -> (f64, f64) {
    let prefix = unique_name("zp");
    let port = free_port();
    let session = zenoh::open(zenoh_config(Some(port), None))
        .wait()
        .expect("session");
    let ping = session
        .declare_publisher(format!("{prefix}/ping"))
        .congestion_control(CongestionControl::Block)
        .wait()
        .expect("publisher");
    let pong = session
        .declare_subscriber(format!("{prefix}/pong"))
        .wait()
        .expect("subscriber");
    let mut child = spawn_child(&["zenoh-recv", "plain-pong", "-", &prefix, &port.to_string()]);
    let lines = Lines::of(&mut child);
    assert_eq!(
        lines.next(Duration::from_secs(30)).as_deref(),
        Some("ready")
    );
    wait_matching(&ping);
    let mut p = PlainPinger { ping, pong };
    let figures = measure_pings(&mut p);
    p.ping.put(vec![STOP; MSG]).wait().expect("stop");
    reap(child);
    let _ = session.close().wait();
    figures
}

fn wait_matching(p: &zenoh::pubsub::Publisher<'_>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.matching_status().wait().is_ok_and(|m| m.matching()) {
        assert!(Instant::now() < deadline, "no Zenoh subscriber matched");
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---- throughput ---------------------------------------------------------------------------

fn throughput(report: &mut Report, size: usize, count: usize) {
    let scenario = if size >= 1024 {
        format!("zenoh/throughput-{}KiB", size / 1024)
    } else {
        format!("zenoh/throughput-{size}B")
    };
    let mut rates = vec![Vec::new(); IMPLS.len()];
    for _ in 0..report.reps {
        for (k, (imp, _)) in IMPLS.iter().enumerate() {
            rates[k].push(match *imp {
                "bridge" => stream_bridge(size, count),
                _ => stream_plain(size, count),
            });
        }
    }
    for (k, (_, label)) in IMPLS.iter().enumerate() {
        report.add(&scenario, label, "Mmsg/s", Better::Higher, rates[k].clone());
    }
}

/// Sends a warm-up batch and a measured batch of `count` messages with `send`; returns the
/// child's rate for the measured one (Mmsg/s), or NaN if it lost messages.
fn two_batches(lines: &Lines, count: usize, mut send: impl FnMut(usize)) -> f64 {
    let mut rate = f64::NAN;
    for _ in 0..2 {
        for i in 0..count {
            send(i);
        }
        let line = lines
            .next(Duration::from_secs(60))
            .expect("the receiver's rate");
        rate = match line.strip_prefix("rate ") {
            Some(r) => r.parse().expect("a number"),
            None => {
                eprintln!("   receiver: {line}");
                f64::NAN
            }
        };
    }
    rate
}

fn stream_bridge(size: usize, count: usize) -> f64 {
    let (a, b, prefix) = (unique_name("zt-a"), unique_name("zt-b"), unique_name("zt"));
    let port = free_port();
    let publisher = Publisher::create(&a, &shape(count, size, 1)).expect("region a");
    let topic = publisher.register("/tp").expect("register");
    let bridge = Bridge::start(
        bridge_config(&a, &prefix, Some(port), None)
            .outbound("/tp")
            .expect("pattern"),
    )
    .expect("bridge a");
    let args = [
        "zenoh-recv",
        "bridge-count",
        &b,
        &prefix,
        &port.to_string(),
        &size.to_string(),
        &count.to_string(),
    ];
    let mut child = spawn_child(&args);
    let lines = Lines::of(&mut child);
    assert_eq!(
        lines.next(Duration::from_secs(30)).as_deref(),
        Some("ready")
    );
    assert!(bridge.wait_matched("/tp", Duration::from_secs(30)));
    let msg = vec![7u8; size];
    let rate = two_batches(&lines, count, |_| {
        publisher.publish(&topic, &msg).expect("publish");
    });
    reap(child);
    drop(bridge);
    remove_region(&a);
    remove_region(&b);
    rate
}

fn stream_plain(size: usize, count: usize) -> f64 {
    let prefix = unique_name("zq");
    let port = free_port();
    let session = zenoh::open(zenoh_config(Some(port), None))
        .wait()
        .expect("session");
    let publisher = session
        .declare_publisher(format!("{prefix}/tp"))
        .congestion_control(CongestionControl::Block)
        .wait()
        .expect("publisher");
    let args = [
        "zenoh-recv",
        "plain-count",
        "-",
        &prefix,
        &port.to_string(),
        &size.to_string(),
        &count.to_string(),
    ];
    let mut child = spawn_child(&args);
    let lines = Lines::of(&mut child);
    assert_eq!(
        lines.next(Duration::from_secs(30)).as_deref(),
        Some("ready")
    );
    wait_matching(&publisher);
    let msg = vec![7u8; size];
    let rate = two_batches(&lines, count, |_| {
        publisher.put(msg.clone()).wait().expect("put");
    });
    reap(child);
    let _ = session.close().wait();
    rate
}

// ---- the child ----------------------------------------------------------------------------

/// Runs this area's child side of a cross-process scenario, if `args` names one:
/// `zenoh-recv ROLE REGION PREFIX PORT [SIZE COUNT]`.
pub fn child(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some("zenoh-recv") {
        return None;
    }
    let role = args.get(1)?.as_str();
    let region = args.get(2)?.clone();
    let prefix = args.get(3)?.clone();
    let port: u16 = args.get(4)?.parse().ok()?;
    let size: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(MSG);
    let count: usize = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(0);
    match role {
        "bridge-pong" => bridge_pong(&region, &prefix, port),
        "plain-pong" => plain_pong(&prefix, port),
        "bridge-count" => bridge_count(&region, &prefix, port, size, count),
        "plain-count" => plain_count(&prefix, port, count),
        _ => return Some(2),
    }
    Some(0)
}

fn bridge_pong(region: &str, prefix: &str, port: u16) {
    let publisher = Publisher::create(region, &shape(1024, MSG, 2)).expect("region b");
    let pong = publisher.register("/pong").expect("register");
    publisher.register("/ping").expect("register");
    let subscriber = Subscriber::connect(region).expect("connect");
    let mut ping = subscriber.subscribe("/ping").expect("subscribe");
    let bridge = Bridge::start(
        bridge_config(region, prefix, None, Some(port))
            .inbound("/ping")
            .and_then(|c| c.outbound("/pong"))
            .expect("patterns"),
    )
    .expect("bridge b");
    assert!(bridge.wait_matched("/pong", Duration::from_secs(30)));
    say("ready");
    loop {
        let s = match ping.recv_timeout(Duration::from_secs(30)) {
            Ok(s) => s,
            Err(_) => break,
        };
        if s[0] == STOP {
            break;
        }
        publisher.publish(&pong, &s).expect("publish a pong");
    }
}

fn plain_pong(prefix: &str, port: u16) {
    let session = zenoh::open(zenoh_config(None, Some(port)))
        .wait()
        .expect("session");
    let pong = session
        .declare_publisher(format!("{prefix}/pong"))
        .congestion_control(CongestionControl::Block)
        .wait()
        .expect("publisher");
    let ping = session
        .declare_subscriber(format!("{prefix}/ping"))
        .wait()
        .expect("subscriber");
    wait_matching(&pong);
    say("ready");
    while let Ok(s) = ping.recv_timeout(Duration::from_secs(30)) {
        let Some(s) = s else { break };
        let bytes = s.payload().to_bytes();
        if bytes[0] == STOP {
            break;
        }
        pong.put(bytes.into_owned()).wait().expect("put a pong");
    }
    let _ = session.close().wait();
}

/// Receives batches of `count` and reports each batch's rate, first to last message.
fn count_batches(count: usize, mut recv: impl FnMut() -> bool) {
    loop {
        let mut first = None;
        let mut got = 0;
        while got < count {
            if !recv() {
                if got > 0 {
                    say(&format!("lost {} of {count}", count - got));
                }
                return;
            }
            got += 1;
            first.get_or_insert_with(Instant::now);
        }
        let secs = first.expect("received").elapsed().as_secs_f64();
        say(&format!("rate {}", (count - 1) as f64 / secs / 1e6));
    }
}

fn bridge_count(region: &str, prefix: &str, port: u16, size: usize, count: usize) {
    let publisher = Publisher::create(region, &shape(count, size, 1)).expect("region b");
    publisher.register("/tp").expect("register");
    let subscriber = Subscriber::connect(region).expect("connect");
    let mut sub = subscriber.subscribe("/tp").expect("subscribe");
    let _bridge = Bridge::start(
        bridge_config(region, prefix, None, Some(port))
            .inbound("/tp")
            .expect("pattern"),
    )
    .expect("bridge b");
    say("ready");
    count_batches(count, || {
        loop {
            match sub.recv_timeout(Duration::from_secs(5)) {
                Ok(_) => return true,
                Err(weft::Error::Lagged { skipped }) => {
                    eprintln!("zenoh-recv: lagged {skipped}");
                }
                Err(_) => return false,
            }
        }
    });
}

fn plain_count(prefix: &str, port: u16, count: usize) {
    let session = zenoh::open(zenoh_config(None, Some(port)))
        .wait()
        .expect("session");
    let sub = session
        .declare_subscriber(format!("{prefix}/tp"))
        .wait()
        .expect("subscriber");
    say("ready");
    count_batches(count, || {
        matches!(sub.recv_timeout(Duration::from_secs(5)), Ok(Some(_)))
    });
    let _ = session.close().wait();
}
