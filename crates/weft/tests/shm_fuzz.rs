//! Fuzzing of opening damaged objects and of working on them: proptest writes random values
//! over the shared words of a live region, stream or server (headers, configuration, tables,
//! rows, rings, counts; not the payload bytes, which are the users' to trust or not), then a
//! newcomer opens the object and uses it, and the handles that were there before go on and
//! are dropped. Every call may fail, with an error; none may panic, and none may hang (a
//! watchdog aborts the run if one case takes longer than a minute). A failing case is shrunk
//! to the fewest and smallest writes that still fail, and printed.
//!
//! `PROPTEST_CASES` sets the number of cases per object kind (default 256).

mod common;

use common::region::Layout;
use common::{Cleanup, shm_path, unique};
use proptest::prelude::*;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use weft::channel::{ChannelOptions, Server};
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft::stream::{StreamOptions, StreamReader, StreamWriter};

/// One write into the object's file: into area `area` (taken modulo the object's areas), at
/// `offset` (taken modulo the area's length), of `value` as one byte, an aligned 32-bit word
/// or an aligned 64-bit word (`width` 0, 1, 2). Choosing the area first gives the small
/// areas (a header, a row, a record's length) as many writes as the large ones.
#[derive(Debug, Clone)]
struct Write {
    area: usize,
    offset: u64,
    value: u64,
    width: u8,
}

/// An area of an object's file: `len` bytes from `start`, written at the start of one of its
/// `stride`-byte elements (1: anywhere).
#[derive(Debug, Clone, Copy)]
struct Area {
    start: u64,
    len: u64,
    stride: u64,
}

fn area(start: u64, len: u64) -> Area {
    Area {
        start,
        len,
        stride: 1,
    }
}

/// Values that sit on the edges of what the code checks: zero, one, small counts, lengths
/// and offsets up to past the objects' sizes, the top of each width, and anything else.
fn value64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        0u64..300,
        0u64..(1 << 17),
        Just(u32::MAX as u64),
        Just(u32::MAX as u64 + 1),
        Just(i64::MAX as u64),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        any::<u64>(),
    ]
}

/// One to four writes.
fn writes() -> impl Strategy<Value = Vec<Write>> {
    let one = (any::<usize>(), any::<u64>(), value64(), 0u8..3).prop_map(
        |(area, offset, value, width)| Write {
            area,
            offset,
            value,
            width,
        },
    );
    proptest::collection::vec(one, 1..=4)
}

/// Applies `writes` to object `name`'s file, whose areas are `areas` (its mappings see the
/// writes at once).
fn apply(name: &str, areas: &[Area], writes: &[Write]) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(shm_path(name))
        .unwrap();
    for w in writes {
        let a = areas[w.area % areas.len()];
        let at = a.start + (w.offset % a.len) / a.stride * a.stride;
        match w.width {
            0 => f.write_all_at(&[w.value as u8], at),
            1 => f.write_all_at(&(w.value as u32).to_le_bytes(), at & !3),
            _ => f.write_all_at(&w.value.to_le_bytes(), at & !7),
        }
        .unwrap();
    }
}

/// A case in progress, for the watchdog: aborts the test process if a case runs longer than
/// a minute. A hang is a failure, and without the watchdog it would only end at CI's time
/// limit, with no word of the case.
struct Watched(u64);

/// The cases in progress (the test functions run on threads of their own) and when each
/// started.
static RUNNING: Mutex<Vec<(u64, Instant)>> = Mutex::new(Vec::new());

fn watchdog() -> Watched {
    static ONCE: std::sync::Once = std::sync::Once::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    ONCE.call_once(|| {
        std::thread::spawn(|| {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
                if running
                    .iter()
                    .any(|(_, t)| t.elapsed() > Duration::from_secs(60))
                {
                    eprintln!("a fuzz case has run for more than a minute: a hang");
                    std::process::abort();
                }
            }
        });
    });
    // Relaxed: a counter for distinct ids; nothing is published with it.
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    RUNNING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((id, Instant::now()));
    Watched(id)
}

impl Drop for Watched {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(id, _)| *id != self.0);
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

/// A small region: every area is a few lines, so random offsets land in all of them.
fn region_config() -> Config {
    Config::default()
        .participants(4)
        .max_held(8)
        .topics(4)
        .ring_slots(8)
        .blocks(16)
        .block_size(128)
        .inline_topics(2)
        .open_timeout(Duration::from_millis(20))
        .claim_timeout(Duration::from_millis(20))
}

/// The topics of the region, each with the spec it is registered with.
fn topic_specs() -> [(&'static str, TopicSpec); 3] {
    [
        ("/blocks", TopicSpec::new(TopicMode::Blocks)),
        ("/inline", TopicSpec::inline(24)),
        ("/latest", TopicSpec::new(TopicMode::Latest)),
    ]
}

/// A newcomer's and the old handles' work on a region that `writes` damaged.
fn region_case(writes: &[Write]) {
    let _watched = watchdog();
    let name = unique("fz-region");
    let _c = Cleanup(name.clone());
    let cfg = region_config();
    let p = Publisher::create(&name, &cfg).unwrap();
    let topics: Vec<_> = topic_specs()
        .iter()
        .map(|(t, spec)| p.register_spec(t, spec).unwrap())
        .collect();
    for t in &topics {
        for i in 0..3u8 {
            p.publish(t, &[i; 24]).unwrap();
        }
    }
    let s = Subscriber::connect_with(&name, &cfg).unwrap();
    let mut subs: Vec<_> = topic_specs()
        .iter()
        .map(|(t, _)| s.subscribe_with_history(t, 2).unwrap())
        .collect();
    let held = subs[0].try_recv().unwrap();

    // Every area of docs/protocol.md's "Region" but the blocks' payload bytes, which hold
    // only what publishers wrote there.
    let file = std::fs::File::open(shm_path(&name)).unwrap();
    let l = Layout::of_file(&file);
    drop(file);
    let areas = [
        area(0, 128),                                  // object header
        area(128, 128),                                // configuration line
        area(256, 256),                                // registration lock and the rest
        area(512, l.ext - 512),                        // participant rows
        area(l.ext, l.holdings - l.ext),               // participant extensions
        area(l.holdings, 4 * l.participants * l.held), // holdings
        area(l.table, l.hot - l.table),                // topic table
        area(l.hot, l.stats - l.hot),                  // hot lines
        area(l.stats, l.pubmap - l.stats),             // statistics lines
        area(l.pubmap, l.rings - l.pubmap),            // publishers maps
        area(l.rings, l.inline - l.rings),             // descriptor rings
        area(l.inline, l.meta - l.inline),             // inline rings
        area(l.meta, l.data - l.meta),                 // block words
    ];
    apply(&name, &areas, writes);

    // A newcomer: looks, connects, subscribes, receives, publishes, reclaims.
    let _ = weft::shm::object(&name);
    if let Ok(s2) = Subscriber::connect_with(&name, &cfg) {
        let _ = s2.topics();
        let _ = s2.region_info();
        for (t, _) in topic_specs() {
            if let Ok(mut sub) = s2.subscribe_with_history(t, 4) {
                for _ in 0..3 {
                    if let Ok(m) = sub.try_recv() {
                        assert!(m.len() <= 4096, "a sample longer than any block");
                    }
                }
                let _ = sub.recv_timeout(Duration::from_millis(1));
            }
        }
        let _ = s2.reclaim();
    }
    if let Ok(p2) = Publisher::open_with(&name, &cfg) {
        for (t, spec) in topic_specs() {
            if let Ok(topic) = p2.register_spec(t, &spec) {
                let _ = p2.publish(&topic, &[7; 24]);
                if let Ok(mut loan) = p2.loan(&topic) {
                    let n = loan.len().min(24);
                    loan[..n].fill(9);
                    let _ = loan.set_len(n);
                    let _ = loan.publish();
                }
                let _ = p2.stats(&topic);
                let _ = p2.unregister(&topic);
            }
        }
        let _ = p2.reclaim();
    }

    // The handles that were there before the damage go on, then leave.
    for t in &topics {
        let _ = p.publish(t, &[5; 24]);
        let _ = p.stats(t);
    }
    for sub in &mut subs {
        let _ = sub.try_recv();
        let _ = sub.recv_timeout(Duration::from_millis(1));
    }
    drop(held);
    drop(subs);
    let _ = s.reclaim();
    drop(s);
    let _ = p.reclaim();
    drop(topics);
    drop(p);
    let _ = weft::shm::remove_abandoned(&name);
}

/// A newcomer's and the old handles' work on a stream that `writes` damaged (its header,
/// control block, rows, and the records' length headers in the data area).
fn stream_case(writes: &[Write]) {
    let _watched = watchdog();
    let name = unique("fz-stream");
    let _c = Cleanup(name.clone());
    let opts = StreamOptions::new(16 << 10).liveness_timeout(Duration::from_millis(200));
    let mut w = StreamWriter::create_with(&name, &opts).unwrap();
    for i in 0..20u8 {
        w.write(&[i; 100]).unwrap();
    }
    let mut r = StreamReader::open_with(&name, &opts).unwrap();
    drop(r.try_read().unwrap());

    // The header, control block and rows, and the length words of the records: the first
    // one (read), the second (the next to read) and all that follow.
    let areas = [
        area(0, 128),
        area(128, 384),
        area(512, 128),
        area(4096, 112),
        area(4096 + 112, 8),
        Area {
            start: 4096 + 224,
            len: 112 * 18,
            stride: 112,
        },
    ];
    apply(&name, &areas, writes);

    let _ = weft::shm::object(&name);
    let _ = weft::stream::inspect(&name);
    for _ in 0..3 {
        if let Ok(g) = r.try_read() {
            assert!(g.len() <= 16 << 10, "a record longer than the stream");
        }
    }
    if let Ok(b) = r.try_read_batch(8) {
        assert!(b.iter().all(|x| x.len() <= 16 << 10));
    }
    let _ = r.read_timeout(Duration::from_millis(1));
    let _ = w.try_write(&[1; 100]);
    let _ = w.write_timeout(&[2; 3000], Duration::from_millis(1));
    if let Ok(g) = w.try_reserve(64) {
        let _ = g.commit(64);
    }
    let _ = w.stats();
    drop(r);
    // A newcomer takes the reader's place.
    if let Ok(mut r2) = StreamReader::open_with(&name, &opts) {
        for _ in 0..3 {
            let _ = r2.try_read();
        }
    }
    drop(w);
    let _ = weft::shm::remove_abandoned(&name);
}

/// A newcomer's and the old handles' work on a server rendezvous that `writes` damaged (its
/// header, control and doorbell lines, and slot rows).
fn server_case(writes: &[Write]) {
    let _watched = watchdog();
    let name = unique("fz-server");
    let _c = Cleanup(name.clone());
    let opts = ChannelOptions::new()
        .capacity(8 << 10)
        .slots(4)
        .liveness_timeout(Duration::from_millis(200));
    let mut server = Server::bind_with(&name, &opts).unwrap();
    let client = {
        let (name, opts) = (name.clone(), opts.clone());
        std::thread::spawn(move || Server::connect_with(&name, Duration::from_secs(10), &opts))
    };
    let mut conn = server.accept_timeout(Duration::from_secs(10)).unwrap();
    let mut client = client.join().unwrap().unwrap();
    client.send(b"hello").unwrap();
    drop(conn.recv_timeout(Duration::from_secs(10)).unwrap());

    // The header, the control and doorbell lines, the rest of the first 512 bytes, and
    // the slot rows (the client's first).
    let areas = [
        area(0, 128),
        area(128, 64),
        area(192, 64),
        area(256, 256),
        area(512, 128),
        area(512 + 128, 3 * 128),
    ];
    apply(&name, &areas, writes);

    let _ = weft::shm::object(&name);
    let _ = Server::inspect(&name);
    let _ = server.try_accept();
    let _ = server.accept_timeout(Duration::from_millis(1));
    let _ = server.slots_in_use();
    // A newcomer connects while the server looks for it.
    let newcomer = {
        let (name, opts) = (name.clone(), opts.clone());
        std::thread::spawn(move || {
            Server::connect_with(&name, Duration::from_millis(50), &opts).map(|mut c| {
                let _ = c.try_send(b"new");
            })
        })
    };
    let _ = server.accept_timeout(Duration::from_millis(100));
    let _ = newcomer.join().unwrap();
    let _ = client.try_send(b"again");
    let _ = conn.try_recv().map(drop);
    drop(client);
    drop(conn);
    drop(server);
    let _ = weft::shm::remove_abandoned(&name);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_damaged_region_gives_errors_only(w in writes()) {
        region_case(&w);
    }

    #[test]
    fn a_damaged_stream_gives_errors_only(w in writes()) {
        stream_case(&w);
    }

    #[test]
    fn a_damaged_server_gives_errors_only(w in writes()) {
        server_case(&w);
    }
}
