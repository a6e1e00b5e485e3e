//! The bipartite buffer against a `VecDeque` model: random reserve / commit / abort / read /
//! release sequences, invariants checked after every step.

use super::super::bipbuf::{ReaderCore, Reservation, ReserveError, WriterCore};
use super::super::heap::HeapStream;
use crate::sync::Ordering;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use proptest::prelude::*;

/// Fills a payload with bytes derived from a record number, so that a record read back is
/// checked byte for byte.
fn pattern(seq: u64, i: usize) -> u8 {
    (seq.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8
}

fn fill(w: &WriterCore, res: &Reservation, used: u64, seq: u64) {
    let p = w.payload_ptr(res);
    for i in 0..used as usize {
        // SAFETY: `i < used <= res.len`, inside the reservation.
        unsafe { p.add(i).write(pattern(seq, i)) };
    }
}

fn check(r: &ReaderCore, rec: &super::super::bipbuf::Record, len: u64, seq: u64) {
    assert_eq!(rec.len, len, "record {seq} length");
    // SAFETY: the core validated `payload + len <= capacity`.
    let bytes = unsafe { core::slice::from_raw_parts(r.payload_ptr(rec), rec.len as usize) };
    for (i, b) in bytes.iter().enumerate() {
        assert_eq!(*b, pattern(seq, i), "record {seq} byte {i}");
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Reserve this many payload bytes; then commit `used` (a fraction) or abort; `prepared`:
    /// as a grant filled in place (`prepare`, `commit_prepared`), else as a copy (`commit`);
    /// `split` (a grant): the reader looks once between the commit's mark and its `W`;
    /// `deferred` (a copy): committed without publishing (`commit_deferred`), seen only after
    /// a `Flush` or a later publishing commit.
    Write {
        len: u64,
        used_frac: u8,
        abort: bool,
        prepared: bool,
        split: bool,
        deferred: bool,
    },
    /// Publish the deferred records.
    Flush,
    /// Take up to this many records without releasing.
    Read { n: u8 },
    /// Release everything taken, now.
    Release,
    /// Release everything taken, lazily (published once enough is unreleased).
    LazyRelease,
}

fn op(max: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            0..=max,
            any::<u8>(),
            prop::bool::weighted(0.15),
            any::<bool>(),
            any::<bool>(),
            prop::bool::weighted(0.4),
        )
            .prop_map(|(len, used_frac, abort, prepared, split, deferred)| Op::Write {
                len,
                used_frac,
                abort,
                prepared,
                split,
                deferred,
            }),
        1 => Just(Op::Flush),
        3 => (1u8..6).prop_map(|n| Op::Read { n }),
        1 => Just(Op::Release),
        1 => Just(Op::LazyRelease),
    ]
}

/// What the model knows: records committed but not taken, records taken but not released,
/// records released but not yet given back to the writer (a lazy release).
struct Model {
    /// Committed with `commit_deferred`, not yet published.
    pending: Vec<(u64, u64)>,
    unread: VecDeque<(u64, u64)>,
    taken: Vec<(u64, u64)>,
    released: Vec<(u64, u64)>,
    next_seq: u64,
}

fn run(capacity: u64, align: u64, window: Option<u64>, ops: &[Op]) {
    let s = HeapStream::new(capacity, align);
    let mut w = s.writer();
    w.set_window(window);
    let mut r = s.reader();
    let max = s.geo.max_payload();
    // Grants from a quarter of the maximum up are announced and commit with a mark.
    w.mark_from = max / 4;
    let mut m = Model {
        pending: Vec::new(),
        unread: VecDeque::new(),
        taken: Vec::new(),
        released: Vec::new(),
        next_seq: 0,
    };
    for op in ops {
        match *op {
            Op::Write {
                len,
                used_frac,
                abort,
                prepared,
                split,
                deferred,
            } => {
                if prepared {
                    // As `StreamWriter` does: deferred records go out before a grant is
                    // prepared (its announcement records the published `W`).
                    w.flush();
                    m.unread.extend(m.pending.drain(..));
                }
                match w.try_reserve(len) {
                    Ok(res) => {
                        assert_eq!(res.len, len);
                        let used = len * used_frac as u64 / 255;
                        let p = prepared.then(|| w.prepare(res));
                        if abort {
                            continue;
                        }
                        fill(&w, &res, used, m.next_seq);
                        if deferred && !prepared {
                            m.pending.push((m.next_seq, used));
                            m.next_seq += 1;
                            w.commit_deferred(res, used);
                            continue;
                        }
                        // A publishing commit covers every deferred record before it.
                        m.unread.extend(m.pending.drain(..));
                        m.unread.push_back((m.next_seq, used));
                        m.next_seq += 1;
                        match p {
                            Some(p) if split => {
                                let end = w.mark(&p, used);
                                between_mark_and_w(&mut r, &mut m, p.is_marked());
                                w.publish_prepared(&p, end)
                            }
                            Some(p) => w.commit_prepared(&p, used),
                            None => w.commit(res, used),
                        };
                    }
                    Err(ReserveError::TooLarge { max: reported }) => {
                        assert_eq!(reported, max);
                        assert!(len > max, "{len} refused as too large, max {max}");
                    }
                    Err(ReserveError::Full) => {
                        assert!(len <= max);
                        // Full is only allowed while something is unreleased: an empty stream
                        // takes any record up to the maximum, wherever the cursors stand.
                        assert!(
                            !m.unread.is_empty()
                                || !m.taken.is_empty()
                                || !m.released.is_empty()
                                || !m.pending.is_empty(),
                            "an empty stream refused {len} bytes (max {max})"
                        );
                    }
                    Err(ReserveError::Corrupt(c)) => {
                        panic!("corrupt without a hostile peer: {c:?}")
                    }
                }
            }
            Op::Flush => {
                w.flush();
                m.unread.extend(m.pending.drain(..));
            }
            Op::Read { n } => {
                for _ in 0..n {
                    match r.try_next().expect("no corruption") {
                        Some(rec) => {
                            let (seq, len) = m.unread.pop_front().expect("the model has a record");
                            check(&r, &rec, len, seq);
                            m.taken.push((seq, len));
                        }
                        None => {
                            assert!(
                                m.unread.is_empty(),
                                "the reader missed {} records",
                                m.unread.len()
                            );
                            // Finding the stream empty publishes every release, and nothing
                            // taken and still held.
                            m.released.clear();
                            break;
                        }
                    }
                }
            }
            Op::Release => {
                r.release();
                r.publish();
                m.taken.clear();
                m.released.clear();
            }
            Op::LazyRelease => {
                let before = s.ctl.read.0.load(Ordering::Relaxed);
                r.release();
                m.released.append(&mut m.taken);
                if s.ctl.read.0.load(Ordering::Relaxed) != before {
                    m.released.clear();
                }
            }
        }
        // Invariants after every step.
        let wc = s.ctl.write.0.cursor.load(Ordering::Relaxed);
        let rc = s.ctl.read.0.load(Ordering::Relaxed);
        assert!(wc <= capacity && rc <= capacity);
        assert_eq!(wc % align, 0);
        assert_eq!(rc % align, 0);
        if m.unread.is_empty() && m.taken.is_empty() && m.released.is_empty() {
            assert_eq!(wc, rc, "empty model, cursors apart");
        }
    }
    // Drain: everything committed comes out, in order.
    w.flush();
    m.unread.extend(m.pending.drain(..));
    r.release();
    r.publish();
    while let Some(rec) = r.try_next().unwrap() {
        let (seq, len) = m.unread.pop_front().expect("the model has a record");
        check(&r, &rec, len, seq);
    }
    assert!(m.unread.is_empty());
}

/// One read between a grant's mark and its `W`: a reader that has read everything before it
/// takes the record by its mark if it was announced; otherwise it reads what `W` shows, which
/// is everything before the record.
fn between_mark_and_w(r: &mut ReaderCore, m: &mut Model, marked: bool) {
    let last = m.unread.len() == 1;
    match r.try_next().expect("no corruption") {
        Some(rec) => {
            assert!(
                !last || marked,
                "a record was seen before its W without a mark"
            );
            let (seq, len) = m.unread.pop_front().expect("the model has a record");
            check(r, &rec, len, seq);
            m.taken.push((seq, len));
        }
        None => {
            assert!(last, "the reader missed {} records", m.unread.len() - 1);
            assert!(!marked, "a marked record was not taken by its mark");
            m.released.clear();
        }
    }
}

#[cfg(not(miri))]
const CASES: u32 = 64;
// Under miri (scripts/test) one case per model: a case costs about half a minute of the
// interpreter, and what miri checks (the unsafe accesses) every case exercises; the natively
// run models draw 64 each.
#[cfg(miri)]
const CASES: u32 = 1;
#[cfg(not(miri))]
const OPS: usize = 4000;
#[cfg(miri)]
const OPS: usize = 200;
#[cfg(not(miri))]
const PAGE_PAYLOAD: u64 = 20_000;
#[cfg(miri)]
const PAGE_PAYLOAD: u64 = 6_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    /// Tiny capacities: nearly every write wraps or finds the stream full.
    #[test]
    fn tiny_capacity_matches_the_model(cap in 4u64..16, ops in prop::collection::vec(op(80), OPS)) {
        run(cap * 8, 8, None, &ops);
    }

    /// Larger capacities with 64-byte records.
    #[test]
    fn aligned_records_match_the_model(cap in 8u64..64, ops in prop::collection::vec(op(2000), OPS)) {
        run(cap * 64, 64, None, &ops);
    }

    /// Page-aligned records (tensors).
    #[test]
    fn page_aligned_records_match_the_model(cap in 4u64..12, ops in prop::collection::vec(op(PAGE_PAYLOAD), OPS / 4)) {
        run(cap * 4096, 4096, None, &ops);
    }

    /// A writer that wraps early at a small window, wherever the reader stands.
    #[test]
    fn early_wraps_match_the_model(cap in 16u64..64, win in 2u64..16, ops in prop::collection::vec(op(400), OPS)) {
        run(cap * 64, 64, Some(win * 64), &ops);
    }
}

/// Writes one record of `len` payload bytes numbered `seq`; returns where it went.
fn put(w: &mut WriterCore, len: u64, seq: u64) -> Option<Reservation> {
    let res = w.try_reserve(len).ok()?;
    fill(w, &res, len, seq);
    w.commit(res, len);
    Some(res)
}

/// A 64 KiB stream, for a writer that wraps early at 8 KiB ([`windowed`]).
fn stream() -> HeapStream {
    HeapStream::new(64 << 10, 8)
}

/// The two cores of `s`, the writer wrapping early at 8 KiB. (The stream is made by the caller
/// and stays put: moving it after the cores exist would move the `Box` they point into.)
fn windowed(s: &HeapStream) -> (WriterCore, ReaderCore) {
    let mut w = s.writer();
    w.set_window(Some(8 << 10));
    (w, s.reader())
}

#[test]
fn the_writer_stays_inside_its_window_while_the_reader_keeps_up() {
    let s = stream();
    let (mut w, mut r) = windowed(&s);
    let n: u64 = if cfg!(miri) { 600 } else { 10_000 };
    let (mut furthest, mut early) = (0, 0);
    for seq in 0..n {
        let res = put(&mut w, 56, seq).expect("room: the reader keeps up");
        furthest = furthest.max(res.start + 64);
        early += u64::from(res.wrap);
        let rec = r.try_next().unwrap().unwrap();
        check(&r, &rec, 56, seq);
        r.release();
    }
    // The record that reaches the window is the last before the wrap.
    assert!(
        furthest <= (8 << 10) + 64,
        "records reached {furthest} bytes, past the 8 KiB window and one record"
    );
    // One wrap per window's worth of records, bar the first lap's rounding.
    let laps = n * 64 / (8 << 10);
    assert!(
        early >= laps * 9 / 10,
        "only {early} wraps in {laps} windows of records"
    );
}

#[test]
fn a_reader_far_behind_leaves_the_writer_the_whole_capacity() {
    let s = stream();
    let (mut w, mut r) = windowed(&s);
    // The reader takes the first 1 KiB, then stops.
    for seq in 0..16 {
        put(&mut w, 56, seq).unwrap();
        r.try_next().unwrap().unwrap();
    }
    r.release();
    r.publish();
    let mut seq = 16;
    while put(&mut w, 56, seq).is_some() {
        seq += 1;
    }
    // The window is passed with the reader 7 KiB behind, more than half a window: the writer
    // goes on to the end, then fills the start up to the reader (strictly below it).
    assert_eq!(
        seq - 16,
        (64 << 10) / 64 - 1,
        "a 64 KiB stream holds all but one of its 64-byte slots"
    );
    for n in 16..seq {
        let rec = r.try_next().unwrap().unwrap();
        check(&r, &rec, 56, n);
    }
}

#[test]
fn a_reader_that_stalls_after_an_early_wrap_still_has_a_window_of_backlog() {
    let s = stream();
    let (mut w, mut r) = windowed(&s);
    // Small records with a large one now and then, so the window is crossed mid-record.
    let len = |seq: u64| if seq % 10 == 9 { 2000 } else { 56 };
    let largest = 8 + 2000;
    let mut seq = 0;
    // The reader keeps up until the writer has wrapped once.
    loop {
        let res = put(&mut w, len(seq), seq).unwrap();
        seq += 1;
        if res.wrap {
            break;
        }
        r.try_next().unwrap().unwrap();
        r.release();
    }
    // Unread: the record that wrapped.
    let mut unread = 8 + len(seq - 1);
    r.publish();
    // The wrap was early: the data before it ends at the window, not at the end.
    let l = s.ctl.watermark.0.load(Ordering::Relaxed);
    assert!(
        (8 << 10..(8 << 10) + largest).contains(&l),
        "wrapped at {l}, not just past the 8 KiB window"
    );
    // Then the reader stalls: the writer fills what it can.
    let stalled_at = seq;
    while put(&mut w, len(seq), seq).is_some() {
        unread += 8 + round_up(len(seq), 8);
        seq += 1;
    }
    assert!(
        unread >= (8 << 10) - largest,
        "the writer stopped with {unread} bytes unread, under the 8 KiB window"
    );
    // And everything comes out in order.
    for n in stalled_at - 1..seq {
        let rec = r.try_next().unwrap().unwrap();
        check(&r, &rec, len(n), n);
    }
    assert!(r.try_next().unwrap().is_none());
}

/// `n` rounded up to a multiple of `to`.
fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

#[test]
fn records_never_straddle_the_wrap() {
    let s = HeapStream::new(256, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    // 3 x 64 framed bytes (56 payload + 8 header) fill 192 of 256.
    for seq in 0..3 {
        let res = w.try_reserve(56).unwrap();
        assert!(!res.wrap);
        fill(&w, &res, 56, seq);
        w.commit(res, 56);
    }
    for seq in 0..2 {
        let rec = r.try_next().unwrap().unwrap();
        check(&r, &rec, 56, seq);
    }
    r.release();
    r.publish();
    // 64 bytes left at the end, but 72 are needed: the record goes to offset 0.
    let res = w.try_reserve(64).unwrap();
    assert!(res.wrap);
    assert_eq!(res.start, 0);
    fill(&w, &res, 64, 3);
    w.commit(res, 64);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 56, 2);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 64, 3);
    assert_eq!(
        rec.payload, 8,
        "the wrapped record starts at 0 (payload after its header)"
    );
    assert!(r.try_next().unwrap().is_none());
}

#[test]
fn zero_length_records_are_records() {
    let s = HeapStream::new(64, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let res = w.try_reserve(0).unwrap();
    w.commit(res, 0);
    let rec = r.try_next().unwrap().unwrap();
    assert_eq!(rec.len, 0);
    assert!(r.try_next().unwrap().is_none());
}

#[test]
fn an_aborted_reservation_leaves_nothing() {
    let s = HeapStream::new(128, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let _ = w.try_reserve(16).unwrap();
    assert!(r.try_next().unwrap().is_none());
    let res = w.try_reserve(8).unwrap();
    assert_eq!(res.start, 0, "the aborted range is reused");
}

#[test]
fn a_prepared_grant_holds_its_header_before_it_is_committed() {
    let s = HeapStream::new(4096, 64);
    let mut w = s.writer();
    let mut r = s.reader();
    let data = w.payload_ptr(&Reservation {
        start: 0,
        len: 0,
        wrap: false,
    });
    // SAFETY: the header word of the record at `start` lies at `start`, inside the data area
    // (the payload of a record at 0 starts one 64-byte header in).
    let header = |start: u64| unsafe { (data.sub(64).add(start as usize) as *const u64).read() };
    let res = w.try_reserve(300).unwrap();
    let p = w.prepare(res);
    assert_eq!(
        header(res.start),
        300,
        "written when prepared, before the fill"
    );
    assert!(r.try_next().unwrap().is_none(), "invisible until committed");
    fill(&w, &res, 300, 1);
    w.commit_prepared(&p, 300);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 300, 1);
    // A shorter commit rewrites it.
    let res = w.try_reserve(300).unwrap();
    let p = w.prepare(res);
    fill(&w, &res, 100, 2);
    w.commit_prepared(&p, 100);
    assert_eq!(header(res.start), 100);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 100, 2);
    assert!(r.try_next().unwrap().is_none());
    // The writer goes on right after the shorter record: 64 + 128 bytes framed.
    assert_eq!(w.try_reserve(8).unwrap().start, res.start + 192);
}

#[test]
fn equal_records_wrapping_at_one_place_store_the_watermark_once() {
    // 1000-byte payloads frame to 1008 bytes: four fit in 4096, the fifth wraps at 4032.
    let s = HeapStream::new(4096, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    // One record through a prepared grant, read back at once: (wrapped, stored L).
    let mut pass = |len: u64, seq: u64| {
        let res = w.try_reserve(len).unwrap();
        let p = w.prepare(res);
        fill(&w, &res, len, seq);
        w.commit_prepared(&p, len);
        let rec = r.try_next().unwrap().unwrap();
        check(&r, &rec, len, seq);
        r.release();
        r.publish();
        (res.wrap, p.stores_watermark())
    };
    let stores: Vec<bool> = (0..40)
        .map(|seq| pass(1000, seq))
        .filter(|&(wrapped, _)| wrapped)
        .map(|(_, stored)| stored)
        .collect();
    assert_eq!(
        stores.len(),
        9,
        "one wrap every four records after the first four"
    );
    assert!(stores[0], "the first wrap stores L");
    assert!(
        stores[1..].iter().all(|s| !s),
        "later wraps at the same place leave L: {stores:?}"
    );
    assert_eq!(s.ctl.watermark.0.load(Ordering::Relaxed), 4032);
    // 1500-byte records (1512 framed): the first wraps at 4032 again, the third at 3024,
    // which stores L.
    let wraps: Vec<(bool, bool)> = (40..43).map(|seq| pass(1500, seq)).collect();
    assert_eq!(wraps, [(true, false), (false, false), (true, true)]);
    assert_eq!(s.ctl.watermark.0.load(Ordering::Relaxed), 3024);
}

/// A grant of `len` bytes reserved, announced (every grant is, here) and filled with record
/// `seq`'s pattern.
fn marked_grant(w: &mut WriterCore, len: u64, seq: u64) -> super::super::bipbuf::Prepared {
    w.mark_from = 0;
    let res = w.try_reserve(len).unwrap();
    let p = w.prepare(res);
    assert!(p.is_marked());
    fill(w, &res, len, seq);
    p
}

#[test]
fn a_marked_grant_is_taken_before_its_w_and_given_back_after_it() {
    let s = HeapStream::new(4096, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let p = marked_grant(&mut w, 300, 1);
    assert!(r.try_next().unwrap().is_none(), "nothing before the mark");
    let end = w.mark(&p, 300);
    let rec = r.try_next().unwrap().expect("taken by its mark, before W");
    check(&r, &rec, 300, 1);
    assert_eq!(
        s.ctl.write.0.cursor.load(Ordering::Relaxed),
        0,
        "W not stored yet"
    );
    r.release();
    r.publish();
    assert!(
        r.try_next().unwrap().is_none(),
        "the old W shows nothing new"
    );
    assert_eq!(
        s.ctl.read.0.load(Ordering::Relaxed),
        0,
        "R stays behind W until W is past the record"
    );
    w.publish_prepared(&p, end);
    assert!(r.try_next().unwrap().is_none(), "taken once");
    assert_eq!(s.ctl.read.0.load(Ordering::Relaxed), end, "given back");
    // A shorter commit: the mark says so, and the header holds the length.
    let p = marked_grant(&mut w, 300, 2);
    let end = w.mark(&p, 40);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 40, 2);
    w.publish_prepared(&p, end);
    r.release();
    // Copies after it go on from the shorter record's end.
    put(&mut w, 16, 3).unwrap();
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 16, 3);
}

#[test]
fn a_grant_read_through_w_is_not_taken_again_by_its_mark() {
    let s = HeapStream::new(4096, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let p = marked_grant(&mut w, 300, 1);
    assert!(
        r.try_next().unwrap().is_none(),
        "the reader watches the grant"
    );
    let end = w.mark(&p, 300);
    // `W` becomes visible before the reader looks at the mark, and before the writer settles
    // the announcement (as `publish_prepared` does, in two steps).
    s.ctl.write.0.cursor.store(end, Ordering::Release);
    let rec = r.try_next().unwrap().expect("read through W");
    check(&r, &rec, 300, 1);
    assert!(r.try_next().unwrap().is_none(), "the same record again");
    w.publish_prepared(&p, end);
    assert!(r.try_next().unwrap().is_none());
}

/// A writer killed where it stands: its core goes, storing nothing more (it has no `Drop`).
fn dies(_killed: WriterCore) {}

/// The first byte of `w`'s data area, whose records have 8-byte headers (a record at offset
/// `o` has its header at `o` and its payload at `o + 8`).
fn data_area(w: &WriterCore) -> *mut u8 {
    w.payload_ptr(&Reservation {
        start: 0,
        len: 0,
        wrap: false,
    })
    .wrapping_sub(8)
}

/// Writes a grant announcement into `s`'s write line, as a (hostile) writer would: its
/// sequence, base, start, length and mark.
fn announce(s: &HeapStream, seq: u64, base: u64, start: u64, len: u64, mark: u64) {
    let line = &s.ctl.write.0;
    line.grant_seq.store(seq, Ordering::Relaxed);
    line.grant_base.store(base, Ordering::Relaxed);
    line.grant_start.store(start, Ordering::Relaxed);
    line.grant_len.store(len, Ordering::Relaxed);
    line.grant_mark.store(mark, Ordering::Relaxed);
}

#[test]
fn a_writer_taking_over_finishes_a_grant_its_predecessor_marked() {
    let s = HeapStream::new(4096, 8);
    let mut r = s.reader();
    // The writer dies between the mark and W; the reader has taken the record by its mark.
    let mut w = s.writer();
    let p = marked_grant(&mut w, 300, 1);
    let end = w.mark(&p, 300);
    dies(w);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 300, 1);
    r.release();
    let mut w = s.writer();
    assert_eq!(
        s.ctl.write.0.cursor.load(Ordering::Relaxed),
        end,
        "W moved past it"
    );
    assert!(r.try_next().unwrap().is_none(), "taken once");
    put(&mut w, 16, 2).unwrap();
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 16, 2);
    r.release();
    // The same, wrapping, with no reader watching: it reads the record through W.
    put(&mut w, 2000, 3).unwrap();
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 2000, 3);
    r.release();
    r.publish();
    let p = marked_grant(&mut w, 1800, 4);
    assert!(p.res.wrap);
    w.mark(&p, 500);
    dies(w);
    let mut w = s.writer();
    let rec = r.try_next().unwrap().expect("finished by the new writer");
    check(&r, &rec, 500, 4);
    // And a grant that was never marked stays invisible.
    let _abandoned = marked_grant(&mut w, 100, 5);
    dies(w);
    let w = s.writer();
    assert!(r.try_next().unwrap().is_none());
    dies(w);
}

/// A reader that holds records across the wrap (a batch: `R` still before the wrap, its
/// position past it) finds the stream empty: an announcement of a grant wrapping to 0 at its
/// position cannot come from its writer (the room at 0 is the reader's) and is ignored, even
/// with a matching mark in place; taking it handed out bytes the held records still cover.
#[test]
fn a_reader_holding_records_across_the_wrap_ignores_a_grant_announced_at_0() {
    let s = HeapStream::new(4096, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    put(&mut w, 2000, 0).unwrap();
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 2000, 0);
    r.release();
    r.publish();
    assert_eq!(s.ctl.read.0.load(Ordering::Relaxed), 2008);
    // Two records, the second wrapping to 0; both handed out and held (not released).
    put(&mut w, 1500, 1).unwrap();
    let res = put(&mut w, 600, 2).unwrap();
    assert!(res.wrap && res.start == 0);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 1500, 1);
    let rec = r.try_next().unwrap().unwrap();
    check(&r, &rec, 600, 2);
    // A hostile writer announces a grant at the reader's position (608) wrapping to 0, and
    // stores its mark right after the record (offset 16), below `R` (2008).
    let mark: u64 = 0x8000_0000_0000_1234;
    announce(&s, 4 * 7 + 2, 608, 0, 8, mark);
    let data = data_area(&w);
    // SAFETY: offset 16 lies inside the 4096-byte data area, aligned to 8.
    unsafe { (data.add(16) as *mut u64).write(mark) };
    assert_eq!(
        r.try_next().unwrap(),
        None,
        "a grant at 0 taken while the reader holds the records there"
    );
}

/// A shorter commit of an announced grant says so in its mark (bit 0) and its length in the
/// record's header: a header (hostile) claiming more than the announced length is `Corrupt`,
/// never a record running past the room the grant reserved (up to half the capacity on from
/// its start, past `W`, `R` or the end of the data area).
#[test]
fn a_shorter_commit_claiming_more_than_its_grant_is_corrupt() {
    let s = HeapStream::new(4096, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let p = marked_grant(&mut w, 300, 1);
    assert!(
        r.try_next().unwrap().is_none(),
        "the reader watches the grant"
    );
    w.mark(&p, 40);
    // The header of the shorter commit, rewritten to 1000 bytes (the grant reserved 300).
    let data = data_area(&w);
    // SAFETY: the record's header, at offset 0 of the 4096-byte data area.
    unsafe { (data as *mut u64).write(1000u64.to_le()) };
    match r.try_next() {
        Err(c) => assert_eq!(c.what, "record length"),
        Ok(rec) => panic!("a record longer than its grant was handed out: {rec:?}"),
    }
}

/// A writer taking over reads the announcement its predecessor left (hostile input): one whose
/// record starts off the record grid is ignored, even with a "matching" mark where it says the
/// mark lies. Finishing it read the header and the mark as misaligned 8-byte atomics and
/// published a write cursor off the grid (corrupt for the reader).
#[test]
fn a_writer_taking_over_ignores_a_grant_announced_off_the_record_grid() {
    let s = HeapStream::new(4096, 8);
    let w = s.writer();
    let data = data_area(&w);
    dies(w);
    let mark: u64 = 0x8000_0000_0000_1234;
    // A grant at `W` (0) starting at 4: its 8-byte record ends at 4 + 16 = 20, the mark's place.
    announce(&s, 4 * 3 + 2, 0, 4, 8, mark);
    // SAFETY: offsets 4 and 20 (8 bytes each) lie inside the 4096-byte data area.
    unsafe {
        (data.add(4) as *mut u64).write_unaligned(8u64.to_le());
        (data.add(20) as *mut u64).write_unaligned(mark);
    }
    let w = s.try_writer().expect("a takeover ignores the announcement");
    assert_eq!(
        s.ctl.write.0.cursor.load(Ordering::Relaxed),
        0,
        "W moved past a grant off the record grid"
    );
    let mut r = s.reader();
    assert_eq!(r.try_next().unwrap(), None);
    dies(w);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES * 4, failure_persistence: None, ..ProptestConfig::default() })]

    /// A hostile peer writes any announcement and any word where its mark would lie: the
    /// reader either ignores it or hands out a record inside the data area; never a panic.
    #[test]
    fn hostile_announcements_are_bounded(
        seq in prop_oneof![any::<u64>(), Just(u64::MAX), Just(u64::MAX - 1)],
        base in prop_oneof![Just(0u64), Just(64u64), any::<u64>()],
        start in prop_oneof![Just(0u64), Just(64u64), any::<u64>()],
        len in prop_oneof![0u64..2000, any::<u64>()],
        mark in any::<u64>(),
        at in 0u64..512,
        word in any::<u64>(),
        reads in 0usize..3,
    ) {
        let s = HeapStream::new(4096, 8);
        let mut w = s.writer();
        let mut r = s.reader();
        for i in 0..reads as u64 {
            put(&mut w, 56, i).unwrap();
            r.try_next().unwrap().unwrap();
            r.release();
        }
        announce(&s, seq, base, start, len, mark);
        let data = data_area(&w);
        // SAFETY: `at * 8 + 8 <= 4096`, inside the data area.
        unsafe { (data.add(at as usize * 8) as *mut u64).write(word) };
        for _ in 0..2 {
            if let Ok(Some(rec)) = r.try_next() {
                prop_assert!(rec.payload + rec.len <= 4096);
            }
        }
        // A writer taking over reads the same announcement, and announces after it.
        dies(w);
        if let Ok(mut w) = s.try_writer() {
            w.mark_from = 0;
            if let Ok(res) = w.try_reserve(8) {
                let p = w.prepare(res);
                w.commit_prepared(&p, 8);
            }
        }
    }
}

#[test]
fn oversize_is_refused_at_once_and_half_the_capacity_always_fits() {
    let s = HeapStream::new(1024, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let max = s.geo.max_payload();
    assert_eq!(max, 512 - 8);
    assert_eq!(w.try_reserve(max + 1), Err(ReserveError::TooLarge { max }));
    // Walk the cursors to every position; after a drain, the largest record fits.
    for step in 0..40 {
        let res = w.try_reserve(step * 8 % 200).unwrap();
        w.commit(res, res.len);
        r.try_next().unwrap().unwrap();
        r.release();
        r.publish();
        let res = w
            .try_reserve(max)
            .expect("the largest record fits an empty stream");
        w.commit(res, max);
        r.try_next().unwrap().unwrap();
        r.release();
        r.publish();
    }
}

#[test]
fn hostile_cursors_are_reported_not_used() {
    let s = HeapStream::new(256, 8);
    let mut w = s.writer();
    let mut r = s.reader();
    let res = w.try_reserve(8).unwrap();
    w.commit(res, 8);
    // A write cursor beyond the capacity.
    s.ctl.write.0.cursor.store(10_000, Ordering::Relaxed);
    let mut r2 = s.reader();
    assert!(r2.try_next().is_err());
    s.ctl.write.0.cursor.store(16, Ordering::Relaxed);
    // A record length beyond the committed data.
    // SAFETY: offset 0 of the data area holds the first record's header.
    unsafe { *(data_area(&w) as *mut u64) = 1 << 40 };
    assert!(r.try_next().is_err());
    // A read cursor beyond the capacity, seen by the writer when it needs room.
    let res = w.try_reserve(120).unwrap();
    w.commit(res, 120);
    s.ctl.read.0.store(u64::MAX, Ordering::Relaxed);
    assert!(matches!(w.try_reserve(120), Err(ReserveError::Corrupt(_))));
}

/// Two real threads through the cores (no handles, no OS): under miri this checks that the
/// payload bytes, written and read without atomics, are properly ordered by the cursors.
#[test]
fn two_threads_move_records_exactly() {
    extern crate std;
    use std::sync::Arc;
    #[cfg(not(miri))]
    const N: u64 = 100_000;
    #[cfg(miri)]
    const N: u64 = 300;
    let s = Arc::new(HeapStream::new(4096, 8));
    let s2 = s.clone();
    let writer = std::thread::spawn(move || {
        let mut w = s2.writer();
        for seq in 0..N {
            let len = seq % 120;
            loop {
                match w.try_reserve(len) {
                    Ok(res) => {
                        fill(&w, &res, len, seq);
                        w.commit(res, len);
                        break;
                    }
                    Err(ReserveError::Full) => std::thread::yield_now(),
                    Err(e) => panic!("{e:?}"),
                }
            }
        }
    });
    let mut r = s.reader();
    for seq in 0..N {
        loop {
            if let Some(rec) = r.try_next().unwrap() {
                check(&r, &rec, seq % 120, seq);
                r.release();
                break;
            }
            std::thread::yield_now();
        }
    }
    writer.join().unwrap();
}
