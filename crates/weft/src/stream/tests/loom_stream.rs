//! Loom models of the real stream cores: the SPSC protocol at a tiny capacity (records wrap
//! and the writer fills the stream), and park/wake with no lost wakeup. The futex is modelled
//! without timeouts, so a lost wakeup is a deadlock that loom reports.

use super::super::bipbuf::{ReaderCore, ReserveError, WriterCore};
use super::super::heap::HeapStream;
use loom::sync::Arc;
use loom::thread;

fn write_blocking(w: &mut WriterCore, len: u64, tag: u8) {
    send_blocking(w, len, tag, false);
}

/// Sends a record of `len` bytes of `tag`, waiting for room: copied in (`commit`), or with
/// `grant` as a grant filled in place (`prepare`, `commit_prepared`; announced and committed
/// by a mark when the writer's `mark_from` says so and the mark finds room).
fn send_blocking(w: &mut WriterCore, len: u64, tag: u8, grant: bool) {
    loop {
        match w.try_reserve(len) {
            Ok(res) => {
                let prepared = grant.then(|| w.prepare(res));
                let p = w.payload_ptr(&res);
                for i in 0..len as usize {
                    // SAFETY: inside the reservation.
                    unsafe { p.add(i).write(tag) };
                }
                match prepared {
                    Some(g) => w.commit_prepared(&g, len),
                    None => w.commit(res, len),
                };
                return;
            }
            Err(ReserveError::Full) => {}
            Err(e) => panic!("{e:?}"),
        }
        w.park_for_room(len, None).unwrap();
    }
}

fn read_blocking(r: &mut ReaderCore) -> (u64, u8) {
    loop {
        if let Some(rec) = r.try_next().unwrap() {
            // SAFETY: validated by the core; a record has at least one byte in these models.
            let first = unsafe { *r.payload_ptr(&rec) };
            // SAFETY: as above; every byte carries the tag.
            let last = unsafe { *r.payload_ptr(&rec).add(rec.len as usize - 1) };
            assert_eq!(first, last, "torn record");
            r.release();
            return (rec.len, first);
        }
        r.park_for_data(None).unwrap();
    }
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// Four records through a 64-byte stream (max payload 24): the third waits for room and wraps,
/// the fourth follows it; both sides park.
#[test]
fn loom_spsc_wraps_and_parks_without_losing_a_wakeup() {
    builder().check(|| {
        let s = Arc::new(HeapStream::new(64, 8));
        let s2 = s.clone();
        let writer = thread::spawn(move || {
            let mut w = s2.writer();
            write_blocking(&mut w, 24, 1);
            write_blocking(&mut w, 16, 2);
            write_blocking(&mut w, 24, 3);
            write_blocking(&mut w, 8, 4);
        });
        let mut r = s.reader();
        assert_eq!(read_blocking(&mut r), (24, 1));
        assert_eq!(read_blocking(&mut r), (16, 2));
        assert_eq!(read_blocking(&mut r), (24, 3));
        assert_eq!(read_blocking(&mut r), (8, 4));
        writer.join().unwrap();
    });
}

/// One record, the reader parked or about to park: the wake is never lost.
#[test]
fn loom_single_handoff_wakes_the_parked_reader() {
    loom::model(|| {
        let s = Arc::new(HeapStream::new(64, 8));
        let s2 = s.clone();
        let writer = thread::spawn(move || {
            let mut w = s2.writer();
            write_blocking(&mut w, 8, 7);
        });
        let mut r = s.reader();
        assert_eq!(read_blocking(&mut r), (8, 7));
        writer.join().unwrap();
    });
}

/// Three grants, the first two announced and committed by their marks, through a 64-byte
/// stream: the reader takes each by its mark (before `W`) or through `W`, once, whole and in
/// order, and gives the room back so that the writer, waiting for it, goes on.
#[test]
fn loom_marked_grants_arrive_once_and_whole() {
    // Two preemptions already find the reader that kept `R` back while parking (a deadlock
    // with the writer waiting for room); three took 150 s.
    let mut b = builder();
    b.preemption_bound = Some(2);
    b.check(|| {
        let s = Arc::new(HeapStream::new(64, 8));
        let s2 = s.clone();
        let writer = thread::spawn(move || {
            let mut w = s2.writer();
            w.mark_from = 0;
            send_blocking(&mut w, 16, 1, true);
            send_blocking(&mut w, 8, 2, true);
            send_blocking(&mut w, 24, 3, true);
        });
        let mut r = s.reader();
        assert_eq!(read_blocking(&mut r), (16, 1));
        assert_eq!(read_blocking(&mut r), (8, 2));
        assert_eq!(read_blocking(&mut r), (24, 3));
        assert!(r.try_next().unwrap().is_none(), "a record given twice");
        writer.join().unwrap();
    });
}
