//! The pub/sub sides of the multi-process tests (`pubsub-*` subcommands).

use super::pattern::Rng;
use super::region::Layout;
use super::tick::{TICK, Tick};
use super::{arg, pubmsg, say, sleep_forever};
use std::time::{Duration, Instant};
use weft::Error;
use weft::pubsub::{Publisher, Subscriber, TopicMode, TopicSpec};

pub fn main(args: &[String]) -> i32 {
    match args[0].as_str() {
        "pubsub-pub" => publish(args),
        "pubsub-sub" => subscribe(args),
        "pubsub-hold" => hold(args),
        "pubsub-loan" => loan(args),
        "pubsub-linger" => linger(args),
        "pubsub-typed-sub" => typed_sub(args),
        "pubsub-scribble" => scribble(args),
        "pubsub-inline-pub" => inline_pub(args),
        "pubsub-inline-sub" => inline_sub(args),
        "pubsub-trickle" => trickle(args),
        "pubsub-solo" => solo(args),
        other => {
            eprintln!("weft-test-peer: unknown command {other}");
            2
        }
    }
}

/// `pubsub-pub REGION TOPIC ID SEED COUNT MAX SUBS [PERIOD_US]`: joins the region as a
/// publisher, waits until the topic has SUBS subscribers, then publishes COUNT messages of
/// publisher ID (`pubmsg::make`, bodies up to MAX bytes), PERIOD_US apart (default 0: back to
/// back), and exits.
fn publish(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let id: u64 = arg(args, 3, "id");
    let seed: u64 = arg(args, 4, "seed");
    let count: u64 = arg(args, 5, "count");
    let max: usize = arg(args, 6, "max");
    let subs: u64 = arg(args, 7, "subscribers");
    let period: u64 = args.get(8).map_or(0, |_| arg(args, 8, "period"));
    let p = Publisher::open(&region).expect("open the region");
    let t = p.register(&topic).expect("register");
    say("ready");
    let until = Instant::now() + Duration::from_secs(20);
    while p.stats(&t).unwrap().subscribers < subs {
        assert!(Instant::now() < until, "subscribers never came");
        std::thread::sleep(Duration::from_millis(1));
    }
    for c in 0..count {
        if period > 0 {
            std::thread::sleep(Duration::from_micros(period));
        }
        let mut loan = loop {
            match p.loan(&t) {
                Ok(l) => break l,
                // Subscribers still hold the blocks: they release them as they read.
                Err(Error::Full) => std::thread::yield_now(),
                Err(e) => panic!("loan: {e}"),
            }
        };
        let len = pubmsg::make(seed, id, c, max, &mut loan);
        loan.set_len(len).unwrap();
        loan.publish().expect("publish");
    }
    say(&format!("sent {count}"));
    0
}

/// `pubsub-sub REGION TOPIC SEED TOTAL MAX`: subscribes (waiting for the topic), says "ready",
/// receives until TOTAL messages were delivered or reported lost, checking each byte for byte
/// and each publisher's counters in order; prints `got DELIVERED lost LOST`.
fn subscribe(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let seed: u64 = arg(args, 3, "seed");
    let total: u64 = arg(args, 4, "total");
    let max: usize = arg(args, 5, "max");
    let s = Subscriber::connect_timeout(&region, Duration::from_secs(10)).expect("connect");
    let mut sub = s
        .subscribe_timeout(&topic, Duration::from_secs(10))
        .expect("subscribe");
    say("ready");
    let mut next = std::collections::HashMap::<u64, u64>::new();
    let (mut got, mut lost, mut last_seq) = (0u64, 0u64, None::<u64>);
    while got + lost < total {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                let Some((id, c)) = pubmsg::verify(seed, max, &m) else {
                    say(&format!("mismatch at seq {}", m.seq()));
                    return 1;
                };
                let want = next.entry(id).or_insert(0);
                if c != *want || last_seq.is_some_and(|l| m.seq() <= l) {
                    say(&format!(
                        "out of order: publisher {id} counter {c}, expected {want}"
                    ));
                    return 1;
                }
                *want += 1;
                last_seq = Some(m.seq());
                got += 1;
            }
            Err(Error::Lagged { skipped }) => lost += skipped,
            Err(e) => {
                say(&format!("error {e}"));
                return 1;
            }
        }
    }
    say(&format!("got {got} lost {lost}"));
    0
}

/// `pubsub-hold REGION TOPIC N`: subscribes, says "ready", receives N samples and keeps
/// them, says "holding N", and waits to be killed. TOPIC may name several topics separated by
/// commas: each is then subscribed and received on a thread of its own (N each), after one
/// "ready" for all.
fn hold(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topics: String = arg(args, 2, "topic");
    let n: usize = arg(args, 3, "n");
    let s = Subscriber::connect_timeout(&region, Duration::from_secs(10)).expect("connect");
    let mut subs: Vec<_> = topics
        .split(',')
        .map(|t| {
            s.subscribe_timeout(t, Duration::from_secs(10))
                .expect("subscribe")
        })
        .collect();
    say("ready");
    let held: usize = std::thread::scope(|scope| {
        let threads: Vec<_> = subs
            .iter_mut()
            .map(|sub| {
                scope.spawn(move || {
                    let mut held = Vec::with_capacity(n);
                    while held.len() < n {
                        held.push(sub.recv_timeout(Duration::from_secs(10)).expect("recv"));
                    }
                    // Kept until the process is killed.
                    std::mem::forget(held);
                    n
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    say(&format!("holding {held}"));
    sleep_forever()
}

/// `pubsub-typed-sub REGION TOPIC TYPE` (TYPE `u64` or `u32`): subscribes typed; prints
/// `mismatch FOUND` on a type mismatch, else "ready" and then the first value received.
fn typed_sub(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let ty: String = arg(args, 3, "type");
    let s = Subscriber::connect_timeout(&region, Duration::from_secs(10)).expect("connect");
    let sub = match ty.as_str() {
        "u64" => s.subscribe_typed::<u64>(&topic),
        _ => s.subscribe_typed::<u32>(&topic),
    };
    let mut sub = match sub {
        Ok(sub) => sub,
        Err(Error::TypeMismatch { found, .. }) => {
            say(&format!("mismatch {found}"));
            return 0;
        }
        Err(e) => panic!("subscribe: {e}"),
    };
    say("ready");
    let m = sub.recv_timeout(Duration::from_secs(10)).expect("recv");
    let v = match ty.as_str() {
        "u64" => *m.value::<u64>().expect("value"),
        _ => *m.value::<u32>().expect("value") as u64,
    };
    say(&format!("value {v}"));
    0
}

/// `pubsub-linger REGION TOPIC COUNT PERIOD_MS`: joins as a publisher, says "ready", then
/// publishes COUNT 8-byte counters PERIOD_MS apart, says "sent", and stays alive until killed.
fn linger(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let count: u64 = arg(args, 3, "count");
    let period: u64 = arg(args, 4, "period");
    let p = Publisher::open(&region).expect("open");
    let t = p.register(&topic).expect("register");
    say("ready");
    for i in 0..count {
        std::thread::sleep(Duration::from_millis(period));
        p.publish(&t, &i.to_le_bytes()).expect("publish");
    }
    say("sent");
    sleep_forever()
}

/// `pubsub-loan REGION TOPIC N [single|latest]`: joins as a publisher (of a single-publisher
/// blocks topic with `single`, of a latest topic with `latest`), loans N blocks and writes
/// into them, says "ready N", and waits to be killed mid-loan.
fn loan(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let n: usize = arg(args, 3, "n");
    let spec = match args.get(4).map(String::as_str) {
        Some("single") => TopicSpec::new(TopicMode::Blocks).single_publisher(),
        Some("latest") => TopicSpec::new(TopicMode::Latest),
        _ => TopicSpec::new(TopicMode::Blocks),
    };
    let p = Publisher::open(&region).expect("open");
    let t = p.register_spec(&topic, &spec).expect("register");
    let mut loans = Vec::new();
    for i in 0..n {
        let mut l = p.loan(&t).expect("loan");
        l.fill(i as u8);
        loans.push(l);
    }
    say(&format!("ready {}", loans.len()));
    sleep_forever()
}

/// `pubsub-scribble REGION MILLIS SEED`: a hostile peer. Writes random values over the
/// region's descriptor rings, block words (counts and marks), registration lock, holdings,
/// topic table, inline rings, publish records and publishers maps (through the file, not
/// through weft) for MILLIS milliseconds.
fn scribble(args: &[String]) -> i32 {
    use std::os::unix::fs::FileExt;
    let region: String = arg(args, 1, "region");
    let millis: u64 = arg(args, 2, "millis");
    let seed: u64 = arg(args, 3, "seed");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/dev/shm/weft.{region}"))
        .expect("open the region file");
    let word = |off: u64| {
        let mut b = [0u8; 8];
        file.read_at(&mut b, off).unwrap();
        u64::from_le_bytes(b)
    };
    // The configuration line (docs/protocol.md, "Region").
    let l = Layout::of_file(&file);
    let (parts, held, topics, slots, blocks) =
        (l.participants, l.held, l.topics, l.slots, word(160));
    let inline_bytes = l.meta - l.inline;
    let targets = [
        (l.rings, 16 * slots * topics),  // descriptors and stamps
        (l.meta, 64 * blocks),           // reference counts and marks
        (256, 8),                        // registration lock
        (l.table, 256 * topics),         // topic table
        (l.hot, 64 * topics),            // tails
        (l.holdings, 4 * parts * held),  // holdings
        (l.inline, inline_bytes.max(4)), // inline rings: headers, stamps, values
        (l.ext, 64 * parts),             // publish records
        (l.pubmap, l.rings - l.pubmap),  // publishers maps
    ];
    let mut rng = Rng(seed);
    let until = Instant::now() + Duration::from_millis(millis);
    let mut n = 0u64;
    say("ready");
    while Instant::now() < until {
        let (base, len) = targets[(rng.next() % targets.len() as u64) as usize];
        let off = if base == l.meta {
            // A block's word: the first 8 bytes of its line (the rest is padding).
            base + (rng.next() % blocks.max(1)) * 64 + (rng.next() % 2) * 4
        } else {
            base + (rng.next() % (len / 4).max(1)) * 4
        };
        let v = match rng.next() % 4 {
            0 => rng.next() % (blocks + 2),
            1 => rng.next() % 4,
            2 => rng.next() as u32 as u64,
            _ => rng.next(),
        };
        let _ = file.write_at(&(v as u32).to_le_bytes(), off);
        n += 1;
        if n.is_multiple_of(16) {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    say(&format!("done {n}"));
    0
}

/// `pubsub-inline-pub REGION TOPIC ID COUNT SUBS PERIOD_US [single]`: joins as a publisher,
/// registers the inline topic for `Tick` (as its single publisher with `single`), waits for
/// SUBS subscribers, publishes COUNT ticks PERIOD_US
/// apart (0: back to back), says "sent COUNT", and exits.
fn inline_pub(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let id: u64 = arg(args, 3, "id");
    let count: u64 = arg(args, 4, "count");
    let subs: u64 = arg(args, 5, "subscribers");
    let period: u64 = arg(args, 6, "period");
    let single = args.get(7).is_some_and(|a| a == "single");
    let p = Publisher::open(&region).expect("open the region");
    let spec = TopicSpec::new(TopicMode::Inline).typed_named::<Tick>(TICK);
    let spec = if single {
        spec.single_publisher()
    } else {
        spec
    };
    let t = p.register_spec(&topic, &spec).expect("register");
    say("ready");
    let until = Instant::now() + Duration::from_secs(20);
    while p.stats(&t).unwrap().subscribers < subs {
        assert!(Instant::now() < until, "subscribers never came");
        std::thread::sleep(Duration::from_millis(1));
    }
    for n in 0..count {
        if period > 0 {
            std::thread::sleep(Duration::from_micros(period));
        }
        p.publish_typed(&t, &Tick::new(id, n)).expect("publish");
    }
    say(&format!("sent {count}"));
    0
}

/// `pubsub-inline-sub REGION TOPIC TOTAL STRATEGY` (STRATEGY `park` or `adaptive`):
/// subscribes (typed, waiting for the topic), says "ready", receives until TOTAL ticks were
/// delivered or reported lost, checking each tick whole, each publisher's counters in order
/// and the sequences increasing; prints `got DELIVERED lost LOST`.
fn inline_sub(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let total: u64 = arg(args, 3, "total");
    let strategy: String = arg(args, 4, "strategy");
    let wait = if strategy == "park" {
        weft::WaitStrategy::Park
    } else {
        weft::WaitStrategy::Adaptive
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let config = weft::pubsub::Config::default().wait(wait);
    let s = loop {
        match Subscriber::connect_with(&region, &config) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("connect: {e}"),
        }
    };
    let mut sub = loop {
        match s.subscribe_typed_named::<Tick>(&topic, TICK) {
            Ok(sub) => break sub,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("subscribe: {e}"),
        }
    };
    say("ready");
    let mut next = std::collections::HashMap::<u64, u64>::new();
    let (mut got, mut lost, mut last_seq) = (0u64, 0u64, None::<u64>);
    while got + lost < total {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                let t = *m.value::<Tick>().expect("a tick");
                if !t.whole() {
                    say(&format!("torn tick at seq {}", m.seq()));
                    return 1;
                }
                let want = next.entry(t.id).or_insert(0);
                if t.n < *want || last_seq.is_some_and(|l| m.seq() <= l) {
                    say(&format!(
                        "out of order: publisher {} counter {}, expected at least {want}",
                        t.id, t.n
                    ));
                    return 1;
                }
                // A publisher's ticks may be lost to lag, never reordered.
                *want = t.n + 1;
                last_seq = Some(m.seq());
                got += 1;
            }
            Err(Error::Lagged { skipped }) => lost += skipped,
            Err(e) => {
                say(&format!("error {e}"));
                return 1;
            }
        }
    }
    say(&format!("got {got} lost {lost}"));
    0
}

/// `pubsub-trickle REGION TOPIC MODE COUNT`: joins the region as a publisher, registers TOPIC
/// (MODE `blocks`, or `inline` for 8-byte messages), waits for one subscriber, then publishes
/// the sequence numbers 0..COUNT with a random pause of up to 20 µs before each, so that a
/// parked subscriber is woken for most of them, and says "sent".
fn trickle(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let mode: String = arg(args, 3, "mode");
    let count: u64 = arg(args, 4, "count");
    let spec = spec_of(&mode);
    let p = Publisher::open(&region).expect("open the region");
    let t = p.register_spec(&topic, &spec).expect("register");
    say("ready");
    let until = Instant::now() + Duration::from_secs(20);
    while p.stats(&t).unwrap().subscribers < 1 {
        assert!(Instant::now() < until, "no subscriber came");
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut rng = Rng(count);
    for seq in 0..count {
        super::trickle_pause(&mut rng);
        p.publish(&t, &seq.to_le_bytes()).expect("publish");
    }
    say("sent");
    0
}

/// `pubsub-solo REGION TOPIC MODE GOFILE` (MODE `blocks`, `latest` or `inline`): joins as a
/// publisher, registers TOPIC as a single-publisher topic, publishes 8 bytes of 1s, says
/// "ready", waits until GOFILE exists, publishes 8 bytes of 2s, says `published SEQ` or
/// `error KIND`, and waits to be killed.
fn solo(args: &[String]) -> i32 {
    let region: String = arg(args, 1, "region");
    let topic: String = arg(args, 2, "topic");
    let mode: String = arg(args, 3, "mode");
    let go: String = arg(args, 4, "gofile");
    let spec = spec_of(&mode).single_publisher();
    let p = Publisher::open(&region).expect("open");
    let t = p.register_spec(&topic, &spec).expect("register");
    p.publish(&t, &[1u8; 8]).expect("publish");
    say("ready");
    while !std::path::Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    match p.publish(&t, &[2u8; 8]) {
        Ok(seq) => say(&format!("published {seq}")),
        Err(e) => say(&format!("error {:?}", e.kind())),
    }
    sleep_forever()
}

/// The topic of a MODE argument: `latest`, `inline` (8-byte messages), or blocks.
fn spec_of(mode: &str) -> TopicSpec {
    match mode {
        "latest" => TopicSpec::new(TopicMode::Latest),
        "inline" => TopicSpec::inline(8),
        _ => TopicSpec::new(TopicMode::Blocks),
    }
}
