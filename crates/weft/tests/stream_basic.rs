//! The stream's API in one process: grants, try/blocking/timeout forms, close, roles,
//! alignment, batches, zero-length records.

mod common;

use common::{Cleanup, unique};
use std::time::{Duration, Instant};
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, ErrorKind, Role, WaitStrategy};

fn pair(tag: &str, cap: usize) -> (StreamWriter, StreamReader, Cleanup) {
    let name = unique(tag);
    let c = Cleanup(name.clone());
    let w = StreamWriter::create(&name, cap).unwrap();
    let r = StreamReader::open(&name).unwrap();
    (w, r, c)
}

/// Every wait strategy there is.
const STRATEGIES: [WaitStrategy; 5] = [
    WaitStrategy::BusySpin,
    WaitStrategy::YieldSpin,
    WaitStrategy::BackoffSpin,
    WaitStrategy::Park,
    WaitStrategy::Adaptive,
];

/// A writer and reader of a 1 KiB stream, both waiting with `strategy`.
fn pair_waiting(tag: &str, strategy: WaitStrategy) -> (StreamWriter, StreamReader, Cleanup) {
    let name = unique(tag);
    let c = Cleanup(name.clone());
    let opts = StreamOptions::new(1024).wait(strategy);
    let w = StreamWriter::create_with(&name, &opts).unwrap();
    let r = StreamReader::open_with(&name, &opts).unwrap();
    (w, r, c)
}

#[test]
fn records_come_out_whole_and_in_order() {
    let (mut w, mut r, _c) = pair("order", 4096);
    for i in 0..1000u32 {
        let msg = vec![i as u8; (i % 300) as usize];
        w.write(&msg).unwrap();
        let g = r.read().unwrap();
        assert_eq!(&*g, &msg[..]);
    }
}

#[test]
fn a_write_grant_publishes_only_what_it_commits() {
    let (mut w, mut r, _c) = pair("grant", 4096);
    let mut g = w.reserve(100).unwrap();
    assert_eq!(g.len(), 100);
    g[..5].copy_from_slice(b"hello");
    g.commit(5).unwrap();
    assert_eq!(&*r.read().unwrap(), b"hello");

    // Dropped without commit: nothing is published.
    let mut g = w.reserve(10).unwrap();
    g.copy_from_slice(b"abandoned!");
    drop(g);
    assert_eq!(r.try_read().unwrap_err().kind(), ErrorKind::Empty);

    // Committing more than was reserved is refused and publishes nothing.
    let g = w.reserve(4).unwrap();
    assert_eq!(g.commit(5).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(r.try_read().unwrap_err().kind(), ErrorKind::Empty);
}

#[test]
fn zero_length_records_are_delivered() {
    let (mut w, mut r, _c) = pair("zero", 4096);
    w.write(&[]).unwrap();
    w.write(b"x").unwrap();
    assert_eq!(r.read().unwrap().len(), 0);
    assert_eq!(&*r.read().unwrap(), b"x");
}

#[test]
fn empty_full_and_timeouts() {
    let (mut w, mut r, _c) = pair("full", 1024);
    assert!(matches!(r.try_read(), Err(Error::Empty)));
    assert!(matches!(
        r.read_timeout(Duration::from_millis(20)),
        Err(Error::Timeout)
    ));
    let max = w.max_record_len();
    assert_eq!(max, 512 - 8);
    w.write(&vec![1; max]).unwrap();
    w.write(&vec![1; max]).unwrap();
    // Two maximal records fill the stream: a third cannot fit until the reader releases.
    assert!(matches!(w.try_write(&vec![2; max]), Err(Error::Full)));
    assert!(matches!(
        w.write_timeout(&vec![2; max], Duration::from_millis(20)),
        Err(Error::Timeout)
    ));
    assert!(matches!(w.try_reserve(max), Err(Error::Full)));
    drop(r.read().unwrap());
    // The writer never lets its cursor land on the reader's, so the wrapped record needs one
    // byte more than the released half.
    assert!(matches!(w.try_write(&vec![2; max]), Err(Error::Full)));
    w.try_write(&vec![2; max - 8]).unwrap();
    drop(r.read().unwrap());
    drop(r.read().unwrap());
    w.try_write(&vec![3; max]).unwrap();
    assert_eq!(&*r.read().unwrap(), &vec![3; max][..]);
}

#[test]
fn oversize_records_fail_at_once() {
    let (mut w, _r, _c) = pair("oversize", 1024);
    let started = Instant::now();
    let err = w.write(&vec![0; w.max_record_len() + 1]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                len: 505,
                max: 504,
                ..
            }
        ),
        "{err}"
    );
    assert!(w.reserve(1 << 20).is_err());
    // Refused without waiting for room that can never come (no timeout was given).
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("can ever hold"), "{err}");
}

#[test]
fn a_closed_writer_lets_the_reader_drain_then_closed() {
    let (mut w, mut r, _c) = pair("close", 4096);
    w.write(b"one").unwrap();
    w.write(b"two").unwrap();
    drop(w);
    assert_eq!(&*r.read().unwrap(), b"one");
    assert_eq!(&*r.try_read().unwrap(), b"two");
    assert!(matches!(r.read(), Err(Error::Closed)));
    assert!(matches!(r.try_read(), Err(Error::Closed)));
}

#[test]
fn a_parked_reader_wakes_on_close() {
    let (w, mut r, _c) = pair("wake-close", 4096);
    r.set_wait_strategy(WaitStrategy::Park);
    let t = std::thread::spawn(move || r.read_timeout(Duration::from_secs(30)).map(|g| g.len()));
    std::thread::sleep(Duration::from_millis(50));
    drop(w);
    assert!(matches!(t.join().unwrap(), Err(Error::Closed)));
}

#[test]
fn a_blocked_writer_learns_the_reader_left() {
    let (mut w, r, _c) = pair("reader-left", 1024);
    w.write(&[0; 500]).unwrap();
    w.write(&[0; 500]).unwrap();
    let t = std::thread::spawn(move || w.write_timeout(&[0; 500], Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(50));
    drop(r);
    assert!(matches!(t.join().unwrap(), Err(Error::Closed)));
}

#[test]
fn blocking_calls_cross_threads_with_every_strategy() {
    for strategy in STRATEGIES {
        let (mut w, mut r, _c) = pair_waiting("strategies", strategy);
        let n = 20_000u32;
        let t = std::thread::spawn(move || {
            for i in 0..n {
                w.write(&i.to_le_bytes()).unwrap();
            }
        });
        for i in 0..n {
            let g = r.read().unwrap();
            assert_eq!(
                u32::from_le_bytes(g[..].try_into().unwrap()),
                i,
                "{strategy:?}"
            );
        }
        t.join().unwrap();
        assert_eq!(r.stats().missed_wakeups, 0, "{strategy:?}");
    }
}

/// Writes `n` records of 256 bytes numbered in their first four, on a thread of its own;
/// the thread returns the writer's statistics.
fn write_numbered(
    mut w: StreamWriter,
    n: u32,
) -> std::thread::JoinHandle<weft::stream::StreamStats> {
    std::thread::spawn(move || {
        let mut msg = [0u8; 256];
        for i in 0..n {
            msg[..4].copy_from_slice(&i.to_le_bytes());
            w.write(&msg).unwrap();
        }
        w.stats()
    })
}

/// A `BusySpin` reader never pauses for a streaming writer: it is the strategy for latency.
/// An `Adaptive` one reading the same stream receives every record in order with its pauses.
#[test]
fn only_an_adaptive_reader_pauses_for_a_streaming_writer() {
    for wait in [WaitStrategy::BusySpin, WaitStrategy::Adaptive] {
        let name = unique("pause");
        let _c = Cleanup(name.clone());
        let w = StreamWriter::create(&name, 1 << 20).unwrap();
        let mut r = StreamReader::open(&name).unwrap();
        r.set_wait_strategy(wait);
        let n = 200_000u32;
        let t = write_numbered(w, n);
        for i in 0..n {
            let g = r.read().unwrap();
            assert_eq!(
                u32::from_le_bytes(g[..4].try_into().unwrap()),
                i,
                "{wait:?}"
            );
        }
        t.join().unwrap();
        assert!(matches!(r.read(), Err(Error::Closed)), "{wait:?}");
        if wait == WaitStrategy::BusySpin {
            assert_eq!(r.stats().streaming_pauses, 0, "{:?}", r.stats());
        }
    }
}

/// An `Adaptive` reader whose writer sends one record at a time, each after the previous one
/// was read and a pause of a millisecond (a request/response exchange, a trickle), never
/// pauses: every wait needs many looks, so nothing says the writer is streaming, and each
/// record is taken as soon as it is seen.
#[test]
fn an_adaptive_reader_does_not_pause_between_records_of_a_trickle() {
    let name = unique("trickle-pause");
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create(&name, 64 << 10).unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    let (ack, acked) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        for i in 0..50u32 {
            std::thread::sleep(Duration::from_millis(1));
            w.write(&i.to_le_bytes()).unwrap();
            acked.recv().unwrap();
        }
    });
    for i in 0..50u32 {
        let g = r.read().unwrap();
        assert_eq!(&*g, &i.to_le_bytes());
        drop(g);
        ack.send(()).unwrap();
    }
    t.join().unwrap();
    assert_eq!(r.stats().streaming_pauses, 0, "{:?}", r.stats());
}

/// An `Adaptive` writer waiting on a full stream yields instead of parking while its reader is
/// awake: the reader reads an eighth of the stream, then stays busy (awake, not reading) for
/// 50 µs, over and over. A writer that parked after its short spin (as before) parked about
/// once per eighth of the stream; one that yields while the reader is awake, hardly ever.
#[test]
fn an_adaptive_writer_yields_instead_of_parking_while_its_reader_is_awake() {
    let name = unique("awake");
    let _c = Cleanup(name.clone());
    let cap = 64 << 10;
    let w = StreamWriter::create(&name, cap).unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    let n = 20_000u32;
    let t = write_numbered(w, n);
    // Each record is 8 header bytes and 256 payload bytes.
    let per_eighth = (cap / 8 / 264) as u32;
    for i in 0..n {
        let g = r.read().unwrap();
        assert_eq!(u32::from_le_bytes(g[..4].try_into().unwrap()), i);
        drop(g);
        if i % per_eighth == per_eighth - 1 {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_micros(50) {
                std::hint::spin_loop();
            }
        }
    }
    let stats = t.join().unwrap();
    let eighths = u64::from(n / per_eighth);
    // A quarter of the waits may still end in a park: the reader's thread can be preempted
    // for longer than the writer yields (200 µs) on a loaded machine.
    assert!(
        stats.parks <= eighths / 4,
        "the writer parked {} times in {eighths} waits for an awake reader: {stats:?}",
        stats.parks
    );
    assert_eq!(stats.missed_wakeups, 0);
}

/// A writer parked on a full stream is woken once the reader has freed an eighth of the
/// capacity (or has caught up), not once per record: waking it for every record read made
/// each futex round trip move one record (the hysteresis of a socket's write space).
#[test]
fn a_parked_writer_is_woken_once_an_eighth_of_the_stream_is_free() {
    let name = unique("hysteresis");
    let _c = Cleanup(name.clone());
    let cap = 64 << 10;
    // The writer parks as soon as the stream is full; the reader is slower than it.
    let w = StreamWriter::create_with(&name, &StreamOptions::new(cap).wait(WaitStrategy::Park))
        .unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    let n = 20_000u32;
    let t = write_numbered(w, n);
    for i in 0..n {
        let g = r.read().unwrap();
        assert_eq!(u32::from_le_bytes(g[..4].try_into().unwrap()), i);
        for _ in 0..200 {
            std::hint::spin_loop();
        }
    }
    let stats = t.join().unwrap();
    // Each record is 8 header bytes and 256 payload bytes. A wake comes when the reader has
    // released an eighth since its last release, or when it has read everything it last saw
    // committed (`W` as last loaded) while the writer is parked. A parked writer found the
    // stream full, so two such catch-up wakes are at least 7/8 of the stream, less the
    // records in flight (two), apart. Waking per record would be 20 000.
    let bytes = u64::from(n) * 264;
    let bound = bytes / (cap as u64 / 8) + bytes / (7 * cap as u64 / 8 - 2 * 264) + 2;
    let wakes = r.stats().wakes;
    assert!(
        wakes <= bound,
        "the reader woke the writer {wakes} times for {n} records (at most {bound} expected)"
    );
    assert_eq!(stats.missed_wakeups, 0);
}

#[test]
fn one_writer_and_one_reader_per_stream() {
    let name = unique("roles");
    let _c = Cleanup(name.clone());
    let _w = StreamWriter::create(&name, 4096).unwrap();
    let _r = StreamReader::open(&name).unwrap();
    let me = std::process::id();
    match StreamReader::open(&name) {
        Err(Error::InUse {
            role: Role::Reader,
            pid,
            ..
        }) => assert_eq!(pid, me),
        other => panic!("second reader: {other:?}"),
    }
    match StreamWriter::create(&name, 4096) {
        Err(Error::InUse {
            role: Role::Writer,
            pid,
            ..
        }) => assert_eq!(pid, me),
        other => panic!("second writer: {other:?}"),
    }
}

#[test]
fn a_reader_can_come_back_after_leaving() {
    let (mut w, r, c) = pair("reopen", 4096);
    w.write(b"a").unwrap();
    drop(r);
    let mut r = StreamReader::open(&c.0).unwrap();
    assert_eq!(&*r.read().unwrap(), b"a");
}

/// A writer restarting for a live reader takes the stream over only with the geometry the
/// reader reads by: another capacity or alignment is `AlreadyExists`, and the reader goes on
/// with the next writer of the same geometry.
#[test]
fn a_writer_of_another_geometry_does_not_take_over_a_live_readers_stream() {
    let (mut w, mut r, c) = pair("st-geometry", 4096);
    w.write(b"one").unwrap();
    drop(w);
    for opts in [StreamOptions::new(8192), StreamOptions::new(4096).align(64)] {
        match StreamWriter::create_with(&c.0, &opts) {
            Err(Error::AlreadyExists { .. }) => {}
            Ok(w) => panic!(
                "took over a stream of another geometry: capacity {}",
                w.capacity()
            ),
            Err(e) => panic!("{e}"),
        }
    }
    let mut w = StreamWriter::create(&c.0, 4096).unwrap();
    w.write(b"two").unwrap();
    assert_eq!(&*r.read().unwrap(), b"one");
    assert_eq!(&*r.read().unwrap(), b"two");
}

#[test]
fn batches_release_together() {
    let (mut w, mut r, _c) = pair("batch", 1024);
    for i in 0..10u8 {
        w.write(&[i; 40]).unwrap();
    }
    {
        let b = r.read_batch(4).unwrap();
        assert_eq!(b.len(), 4);
        let firsts: Vec<u8> = b.iter().map(|rec| rec[0]).collect();
        assert_eq!(firsts, [0, 1, 2, 3]);
    }
    let b = r.try_read_batch(100).unwrap();
    assert_eq!(b.len(), 6);
    assert_eq!(b.get(5).unwrap(), &[9; 40]);
    drop(b);
    assert!(matches!(r.try_read_batch(5), Err(Error::Empty)));
}

/// A batch that reads up to the end of the committed data keeps its records until it drops:
/// the writer may not reuse their room while the caller still reads them.
#[test]
fn a_batch_that_drains_the_stream_keeps_its_records_until_dropped() {
    let (mut w, mut r, _c) = pair("batch-held", 4096);
    for i in 0..3u8 {
        w.write(&[i; 1000]).unwrap();
    }
    let b = r.try_read_batch(10).unwrap();
    assert_eq!(b.len(), 3);
    // 3 x 1008 framed bytes are held; the 1072 after them take one more record, no more.
    let mut written = 0;
    while written < 3 && w.try_write(&[0xEE; 1000]).is_ok() {
        written += 1;
    }
    assert_eq!(
        written, 1,
        "the writer reused the room of a batch still held"
    );
    for (i, rec) in b.iter().enumerate() {
        assert_eq!(
            rec,
            &[i as u8; 1000][..],
            "record {i} of the batch changed under it"
        );
    }
    drop(b);
    assert_eq!(r.try_read_batch(10).unwrap().len(), 1);
    w.try_write(&[0xEE; 1000]).unwrap();
}

#[test]
fn records_are_aligned_as_asked() {
    for align in [8usize, 64, 4096] {
        let name = unique("align");
        let _c = Cleanup(name.clone());
        let mut w =
            StreamWriter::create_with(&name, &StreamOptions::new(64 << 10).align(align)).unwrap();
        let mut r = StreamReader::open(&name).unwrap();
        for len in [1usize, 3, 100, 5000] {
            let g = w.reserve(len).unwrap();
            assert_eq!(g.as_ptr() as usize % align, 0, "write grant, align {align}");
            g.commit(len).unwrap();
            let g = r.read().unwrap();
            assert_eq!(g.as_ptr() as usize % align, 0, "read grant, align {align}");
            assert_eq!(g.len(), len);
        }
    }
    let name = unique("align-bad");
    assert!(matches!(
        StreamWriter::create_with(&name, &StreamOptions::new(4096).align(16)),
        Err(Error::InvalidArgument { what: "align", .. })
    ));
}

/// Writes and reads `n` numbered 256-byte records in lockstep through a stream made with
/// `opts`; returns the span of the addresses the reader saw them at.
fn lockstep_span(tag: &str, opts: &StreamOptions, n: u32) -> usize {
    let name = unique(tag);
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create_with(&name, opts).unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    let (mut lo, mut hi) = (usize::MAX, 0);
    let mut msg = [0u8; 256];
    for i in 0..n {
        msg[..4].copy_from_slice(&i.to_le_bytes());
        w.write(&msg).unwrap();
        let g = r.read().unwrap();
        assert_eq!(g[..4], i.to_le_bytes(), "record {i}");
        lo = lo.min(g.as_ptr() as usize);
        hi = hi.max(g.as_ptr() as usize + g.len());
    }
    hi - lo
}

/// While the reader keeps up, a writer past its hot window goes back to the start: the
/// records stay inside the window; without one they sweep the whole capacity.
#[test]
fn a_hot_window_keeps_a_reader_that_keeps_up_inside_it() {
    let n = 70_000; // 70k x 264 bytes: more than 16 MiB
    // The record that reaches the window is the last before the wrap: 264 bytes framed.
    let small = StreamOptions::new(1 << 20).hot_window(Some(16 << 10));
    assert!(lockstep_span("hw-small", &small, n) <= (16 << 10) + 264);
    let default = StreamOptions::new(16 << 20);
    assert!(lockstep_span("hw-default", &default, n) <= (4 << 20) + 264);
    let off = StreamOptions::new(16 << 20).hot_window(None);
    assert!(lockstep_span("hw-off", &off, n) > 15 << 20);
    let below = StreamOptions::new(8 << 20);
    assert!(
        lockstep_span("hw-below", &below, n) > 7 << 20,
        "streams under 16 MiB have no window by default"
    );
    for tiny in [0, 1, 4095] {
        let opts = StreamOptions::new(1 << 20).hot_window(Some(tiny));
        assert!(
            matches!(
                StreamWriter::create_with(&unique("hw-tiny"), &opts),
                Err(Error::InvalidArgument {
                    what: "hot_window",
                    ..
                })
            ),
            "a window of {tiny} bytes"
        );
    }
}

#[test]
fn capacity_is_checked() {
    let name = unique("cap");
    for cap in [0usize, 8, 24] {
        assert!(
            matches!(
                StreamWriter::create(&name, cap),
                Err(Error::InvalidArgument { .. })
            ),
            "{cap}"
        );
    }
}

#[test]
fn the_object_is_private_to_its_user() {
    use std::os::unix::fs::PermissionsExt;
    let (_w, _r, c) = pair("mode", 4096);
    let meta = std::fs::symlink_metadata(common::shm_path(&c.0)).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

/// The last one out removes the name, whichever side it is: the reader after its writer, and
/// the writer after its reader (with a record left unread).
#[test]
fn the_last_one_out_removes_the_name() {
    let (w, r, c) = pair("unlink", 4096);
    let path = common::shm_path(&c.0);
    drop(w);
    assert!(
        std::path::Path::new(&path).exists(),
        "the reader still uses it"
    );
    drop(r);
    assert!(!std::path::Path::new(&path).exists());

    let (mut w, mut r, c) = pair("unlink-writer-last", 4096);
    let path = common::shm_path(&c.0);
    w.write(b"read").unwrap();
    w.write(b"never read").unwrap();
    assert_eq!(&*r.read().unwrap(), b"read");
    drop(r);
    assert!(
        std::path::Path::new(&path).exists(),
        "the writer still uses it"
    );
    drop(w);
    assert!(!std::path::Path::new(&path).exists());
}

#[test]
fn hugepages_and_locked_memory_are_options() {
    let name = unique("huge");
    let _c = Cleanup(name.clone());
    let opts = StreamOptions::new(4 << 20).hugepages(true);
    let mut w = StreamWriter::create_with(&name, &opts).unwrap();
    let mut r = StreamReader::open(&name).unwrap();
    w.write(b"advice only").unwrap();
    assert_eq!(&*r.read().unwrap(), b"advice only");
    drop((w, r));
    // mlock either works or reports the OS's refusal (RLIMIT_MEMLOCK) as an Io error.
    let name = unique("locked");
    let _c = Cleanup(name.clone());
    match StreamWriter::create_with(&name, &StreamOptions::new(64 << 10).lock_memory(true)) {
        Ok(_) => {}
        Err(e) => assert_eq!(e.kind(), ErrorKind::Io, "{e}"),
    }
}

#[test]
fn records_wait_for_a_reader_that_opens_after_the_writer_closed() {
    let name = unique("late-reader");
    let _c = Cleanup(name.clone());
    let mut w = StreamWriter::create(&name, 4096).unwrap();
    w.write(b"kept").unwrap();
    drop(w);
    let mut r = StreamReader::open(&name).unwrap();
    assert_eq!(&*r.read().unwrap(), b"kept");
    assert!(matches!(r.read(), Err(Error::Closed)));
    drop(r);
    assert!(!std::path::Path::new(&common::shm_path(&name)).exists());
    // A writer that leaves nothing unread removes the name at once.
    drop(StreamWriter::create(&name, 4096).unwrap());
    assert!(!std::path::Path::new(&common::shm_path(&name)).exists());
}

/// The next record, or a failure (not a hang) if it never comes.
fn next(r: &mut StreamReader) -> Vec<u8> {
    r.read_timeout(Duration::from_secs(10))
        .expect("a published record")
        .to_vec()
}

#[test]
fn deferred_records_are_published_together_in_order() {
    let (mut w, mut r, _c) = pair("deferred", 1 << 16);
    w.write_deferred(b"one").unwrap();
    w.write_deferred(b"two").unwrap();
    assert!(
        matches!(r.try_read(), Err(Error::Empty)),
        "published before a flush"
    );
    w.flush();
    assert_eq!(&*next(&mut r), b"one");
    assert_eq!(&*next(&mut r), b"two");
    assert!(matches!(r.try_read(), Err(Error::Empty)));
    w.flush(); // nothing waits: nothing happens

    // A plain write publishes what was deferred before it, in order.
    w.write_deferred(b"three").unwrap();
    w.write(b"four").unwrap();
    assert_eq!(&*next(&mut r), b"three");
    assert_eq!(&*next(&mut r), b"four");

    // So does a grant's commit (its reservation publishes what waits first).
    w.write_deferred(b"five").unwrap();
    let mut g = w.reserve(3).unwrap();
    assert_eq!(&*next(&mut r), b"five");
    g.copy_from_slice(b"six");
    g.commit(3).unwrap();
    assert_eq!(&*next(&mut r), b"six");

    // Dropping the writer publishes the rest, then the reader sees the close.
    w.write_deferred(b"seven").unwrap();
    drop(w);
    assert_eq!(&*next(&mut r), b"seven");
    assert!(matches!(
        r.read_timeout(Duration::from_secs(10)),
        Err(Error::Closed)
    ));
}

#[test]
fn deferred_records_are_published_once_they_reach_the_limit() {
    let (mut w, mut r, _c) = pair("deferred-limit", 1 << 16);
    // An eighth of 64 KiB: 8 KiB, headers included.
    assert_eq!(w.deferred_limit(), 8 << 10);
    let mut sent = 0;
    while r.try_read().is_err() {
        w.write_deferred(&[7u8; 120]).unwrap();
        sent += 1;
        assert!(
            sent <= (8 << 10) / 128,
            "{sent} records of 128 framed bytes never published"
        );
    }
    // Exactly when the limit was reached: 64 records of 128 bytes.
    assert_eq!(sent, 64);
}

/// A deferring writer publishes before it waits for room: unpublished records can split the
/// free room so that a large record fits nowhere until the reader has taken them.
#[test]
fn a_deferring_writer_publishes_before_it_waits_for_room() {
    let (mut w, mut r, _c) = pair("deferred-full", 4096);
    assert!(w.max_record_len() >= 2000);
    // Published and read: both cursors stand at 1800.
    w.write(&[1u8; 1792]).unwrap();
    assert_eq!(next(&mut r).len(), 1792);
    let writer = std::thread::spawn(move || {
        // Unpublished: 1800 .. 2208. Then 2000 bytes fit neither after it (1888 left) nor
        // before the reader (1800): the writer must publish the first record and wait.
        w.write_deferred(&[2u8; 400]).unwrap();
        w.write_deferred(&[3u8; 2000]).unwrap();
        w.flush();
        w
    });
    assert_eq!(next(&mut r), vec![2u8; 400]);
    assert_eq!(next(&mut r), vec![3u8; 2000]);
    writer.join().unwrap();
}

/// A writer that only defers, on a small stream, records of every size up to the largest,
/// against a reader on another thread: every record arrives, whole and in order.
#[test]
fn a_deferring_writer_never_starves_its_reader() {
    let (mut w, mut r, _c) = pair("deferred-many", 4096);
    let max = w.max_record_len();
    let n: usize = 20_000;
    let size = move |i: usize| 1 + (i * 977) % max;
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let msg: Vec<u8> = (0..size(i)).map(|k| (i + k) as u8).collect();
            w.write_deferred(&msg).unwrap();
        }
        // Dropped without a flush: the drop publishes the last records.
    });
    for i in 0..n {
        let g = r
            .read_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!(g.len(), size(i), "record {i}");
        assert!(
            g.iter().enumerate().all(|(k, b)| *b == (i + k) as u8),
            "record {i}"
        );
    }
    assert!(matches!(
        r.read_timeout(Duration::from_secs(10)),
        Err(Error::Closed)
    ));
    writer.join().unwrap();
}

#[test]
fn the_deferred_try_and_timeout_forms_publish_before_they_give_up() {
    let (mut w, mut r, _c) = pair("deferred-forms", 4096);
    let mut n = 0;
    let e = loop {
        match w.try_write_deferred(&[9u8; 300]) {
            Ok(()) => n += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(e, Error::Full), "{e}");
    assert!(n >= 4);
    let e = w
        .write_deferred_timeout(&[9u8; 300], Duration::from_millis(10))
        .unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e}");
    // Everything deferred before the refusals was published by them.
    for i in 0..n {
        assert_eq!(next(&mut r).len(), 300, "record {i}");
    }
    assert!(matches!(r.try_read(), Err(Error::Empty)));
    w.write_deferred_timeout(&[1u8; 3], Duration::from_secs(1))
        .unwrap();
    drop(w);
    assert_eq!(next(&mut r), vec![1u8; 3]);
}

/// Records of 64 KiB go out through announced grants, which a parked reader may take by their
/// commit mark before `W` moves. A reader that saw the new `W` in a park's re-check, read the
/// record through it, and found the stream empty again before the writer settled the grant
/// took the record a second time by its mark (about one record in a hundred here), while the
/// writer, seeing it read, wrote the next records over it. Every record must come out once,
/// in order, whole.
#[test]
fn large_records_through_a_parked_reader_come_out_once_each() {
    const N: u64 = 20_000;
    const LEN: usize = 64 << 10;
    let name = unique("large-once");
    let _c = Cleanup(name.clone());
    let park = |cap| StreamOptions::new(cap).wait(WaitStrategy::Park);
    let mut w = StreamWriter::create_with(&name, &park(1 << 20)).unwrap();
    let mut r = StreamReader::open_with(&name, &park(0)).unwrap();
    let writer = std::thread::spawn(move || {
        for n in 1..=N {
            let mut g = w.reserve(LEN).unwrap();
            g[..8].copy_from_slice(&n.to_le_bytes());
            g[LEN - 8..].copy_from_slice(&n.to_le_bytes());
            // Fill times that vary a little, so that the reader parks at varied moments.
            for _ in 0..(n % 7) * 200 {
                std::hint::spin_loop();
            }
            g.commit(LEN).unwrap();
        }
    });
    for n in 1..=N {
        let g = r.read_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(g.len(), LEN);
        let first = u64::from_le_bytes(g[..8].try_into().unwrap());
        let last = u64::from_le_bytes(g[LEN - 8..].try_into().unwrap());
        assert_eq!(
            (first, last),
            (n, n),
            "record {n} (a repeat, or overwritten)"
        );
    }
    writer.join().unwrap();
    assert!(matches!(r.try_read(), Err(Error::Empty | Error::Closed)));
}

/// The smallest hot window accepted is 4096 bytes ("at least 4096"): exactly 4096 makes a
/// stream, whose records go through.
#[test]
fn a_hot_window_of_exactly_4096_bytes_is_accepted() {
    let name = unique("st-hw-4096");
    let _c = Cleanup(name.clone());
    let opts = StreamOptions::new(1 << 20).hot_window(Some(4096));
    let mut w = StreamWriter::create_with(&name, &opts).expect("a window of 4096 bytes");
    let mut r = StreamReader::open(&name).unwrap();
    for i in 0..100u32 {
        w.write(&[i as u8; 300]).unwrap();
        assert_eq!(&*r.read().unwrap(), &[i as u8; 300][..]);
    }
}

/// A capacity is rounded up to the alignment, not refused.
#[test]
fn the_capacity_is_rounded_up_to_the_alignment() {
    for (cap, align, want) in [
        (1000usize, 8usize, 1000usize),
        (1001, 8, 1008),
        (5000, 64, 5056),
        (20_000, 4096, 20_480),
    ] {
        let name = unique("st-cap-round");
        let _c = Cleanup(name.clone());
        let w = StreamWriter::create_with(&name, &StreamOptions::new(cap).align(align))
            .unwrap_or_else(|e| panic!("capacity {cap}, align {align}: {e}"));
        assert_eq!(w.capacity(), want, "capacity {cap}, align {align}");
        let r = StreamReader::open(&name).unwrap();
        assert_eq!(r.capacity(), want);
    }
}

/// A capacity beyond 2^48 bytes is an invalid argument, refused before anything is made (not
/// an attempt to make an object of that size).
#[test]
fn a_capacity_above_2_pow_48_is_an_invalid_argument() {
    let name = unique("st-cap-huge");
    let _c = Cleanup(name.clone());
    for cap in [(1usize << 48) + 8, 1 << 50] {
        match StreamWriter::create(&name, cap) {
            Err(Error::InvalidArgument {
                what: "capacity", ..
            }) => {}
            Err(e) => panic!("capacity {cap}: {e}"),
            Ok(_) => panic!("capacity {cap} accepted"),
        }
    }
    assert!(!std::path::Path::new(&common::shm_path(&name)).exists());
}

/// The deferred limit is an eighth of the capacity, at most 64 KiB.
#[test]
fn the_deferred_limit_is_at_most_64_kib() {
    for (cap, want) in [
        (1usize << 16, 8u64 << 10),
        (1 << 20, 64 << 10),
        (64 << 20, 64 << 10),
    ] {
        let name = unique("st-deferred-cap");
        let _c = Cleanup(name.clone());
        let w = StreamWriter::create(&name, cap).unwrap();
        assert_eq!(w.deferred_limit(), want, "capacity {cap}");
    }
    // And it is applied: on 1 MiB, 64 KiB of deferred records are published, no more wait.
    let (mut w, mut r, _c) = pair("st-deferred-cap-applied", 1 << 20);
    let mut sent = 0;
    while r.try_read().is_err() {
        w.write_deferred(&[7u8; 120]).unwrap();
        sent += 1;
        assert!(
            sent <= (64 << 10) / 128,
            "{sent} records of 128 framed bytes never published"
        );
    }
    assert_eq!(sent, (64 << 10) / 128);
}

/// A batch of at most zero records takes none, waits for nothing, and is empty; a batch with
/// a record is not.
#[test]
fn a_batch_of_at_most_zero_records_takes_none() {
    let (mut w, mut r, _c) = pair("st-batch-zero", 1024);
    // On an empty stream, every form returns at once with an empty batch.
    assert!(r.try_read_batch(0).unwrap().is_empty());
    assert!(r.read_batch(0).unwrap().is_empty());
    w.write(b"a").unwrap();
    {
        let b = r.read_batch_timeout(0, Duration::from_secs(10)).unwrap();
        assert!(b.is_empty());
        assert_eq!(b.len(), 0);
        assert!(b.get(0).is_none());
        assert_eq!(b.iter().count(), 0);
    }
    // The record was not taken.
    {
        let b = r.try_read_batch(1).unwrap();
        assert!(!b.is_empty());
        assert_eq!(b.get(0).unwrap(), b"a");
    }
    assert!(matches!(r.try_read_batch(1), Err(Error::Empty)));
}

/// Runs `f` on a thread of its own and returns its outcome, or fails (instead of hanging) if it
/// has not returned after 30 s.
fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("a call with a timeout of 20 ms never returned")
}

/// Every timeout form of both sides gives up with `Timeout`, whatever the wait strategy
/// (a spinning wait too, which never parks), and the batch form still returns the records
/// that are there.
#[test]
fn timeouts_end_the_waits_of_every_strategy() {
    for strategy in STRATEGIES {
        let (w, r, _c) = pair_waiting("st-timeouts", strategy);
        let t = Duration::from_millis(20);
        let (w, r) = within_30s(move || {
            let (mut w, mut r) = (w, r);
            assert!(
                matches!(r.read_timeout(t), Err(Error::Timeout)),
                "{strategy:?}"
            );
            let e = r.read_batch_timeout(4, t).map(|b| b.len()).unwrap_err();
            assert!(matches!(e, Error::Timeout), "{strategy:?}: {e}");
            let max = w.max_record_len();
            w.write(&vec![1; max]).unwrap();
            w.write(&vec![2; max]).unwrap();
            let e = w.write_timeout(&vec![3; max], t).unwrap_err();
            assert!(matches!(e, Error::Timeout), "{strategy:?}: {e}");
            let e = w.reserve_timeout(max, t).map(|g| g.len()).unwrap_err();
            assert!(matches!(e, Error::Timeout), "{strategy:?}: {e}");
            let e = w.write_deferred_timeout(&vec![3; max], t).unwrap_err();
            assert!(matches!(e, Error::Timeout), "{strategy:?}: {e}");
            (w, r)
        });
        let (_w, mut r) = (w, r);
        let b = r.read_batch_timeout(4, t).unwrap();
        assert_eq!(b.len(), 2, "{strategy:?}");
        assert_eq!(b.get(1).unwrap()[0], 2, "{strategy:?}");
    }
}

/// While the reader drains a backlog, its releases reach the writer in chunks of an eighth of
/// the capacity: once it has read and released an eighth of a full stream, the writer has
/// room again without any other move of the reader.
#[test]
fn reading_an_eighth_of_a_full_stream_gives_the_writer_room() {
    let (mut w, mut r, _c) = pair("st-eighth", 4096);
    // 56-byte records: 64 bytes framed, 8 to an eighth of the stream.
    let mut n = 0;
    while w.try_write(&[1u8; 56]).is_ok() {
        n += 1;
    }
    assert_eq!(n, 4096 / 64);
    for _ in 0..8 {
        drop(r.try_read().unwrap());
    }
    w.try_write(&[2u8; 56])
        .expect("room once an eighth of the stream was read and released");
}

/// A reader passes its releases on when it leaves: a reader opening after it starts after the
/// records its predecessor read, and gets none of them a second time.
#[test]
fn a_reader_that_leaves_gives_back_what_it_read() {
    let (mut w, mut r, c) = pair("st-leave-release", 4096);
    for m in [b"a", b"b", b"c"] {
        w.write(m).unwrap();
    }
    // Released on drop, lazily: a backlog is left.
    assert_eq!(&*r.read().unwrap(), b"a");
    drop(r);
    let mut r = StreamReader::open(&c.0).unwrap();
    assert_eq!(
        &*r.read().unwrap(),
        b"b",
        "a record read before the reader left came again"
    );
    assert_eq!(&*r.read().unwrap(), b"c");
}

/// `reader_alive` says whether a reader is attached now: not before one opens, yes while it
/// is open, not once it has left.
#[test]
fn reader_alive_follows_the_reader() {
    let name = unique("st-reader-alive");
    let _c = Cleanup(name.clone());
    let w = StreamWriter::create(&name, 4096).unwrap();
    assert!(!w.reader_alive(), "no reader yet");
    let r = StreamReader::open(&name).unwrap();
    assert!(w.reader_alive());
    drop(r);
    assert!(!w.reader_alive(), "the reader left");
}

/// A grant committed one byte short publishes exactly that many bytes.
#[test]
fn a_grant_committed_short_by_any_amount_publishes_what_it_commits() {
    let (mut w, mut r, _c) = pair("st-grant-short", 1 << 20);
    for (reserved, used) in [
        (10usize, 9usize),
        (10, 0),
        (100, 99),
        (70_000, 69_999),
        (70_000, 1),
    ] {
        let mut g = w.reserve(reserved).unwrap();
        g.fill(0x5A);
        g.commit(used).unwrap();
        let got = r.read_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(got.len(), used, "{used} of {reserved} bytes committed");
        assert!(got.iter().all(|&b| b == 0x5A));
    }
}

/// `flush` publishes every deferred record, even a single zero-length one.
#[test]
fn flush_publishes_a_lone_zero_length_deferred_record() {
    let (mut w, mut r, _c) = pair("st-flush-zero", 4096);
    w.write_deferred(&[]).unwrap();
    assert!(matches!(r.try_read(), Err(Error::Empty)));
    w.flush();
    assert_eq!(r.try_read().expect("published by the flush").len(), 0);
}

/// A reader opened with `open` waits with the default `Adaptive` strategy, which parks on an
/// empty stream once it has spun and yielded; `set_wait_strategy` changes that: a `BusySpin`
/// reader never parks.
#[test]
fn a_reader_waits_as_its_strategy_says() {
    let (_w, mut r, _c) = pair("st-reader-strategy", 4096);
    // An Adaptive wait spins 64 times and yields 16 times before it parks: far less than 1 s.
    assert!(matches!(
        r.read_timeout(Duration::from_secs(1)),
        Err(Error::Timeout)
    ));
    let parks = r.stats().parks;
    assert!(parks >= 1, "the default strategy parks: {:?}", r.stats());
    r.set_wait_strategy(WaitStrategy::BusySpin);
    let r = within_30s(move || {
        let mut r = r;
        assert!(matches!(
            r.read_timeout(Duration::from_millis(50)),
            Err(Error::Timeout)
        ));
        r
    });
    assert_eq!(
        r.stats().parks,
        parks,
        "a BusySpin reader parked: {:?}",
        r.stats()
    );
}
