//! `Subscriber::latest` on a single-publisher ring caught between a batch's writes and its
//! cursor store: the ring memory is written here as `Publisher::publish_batch` writes it,
//! and the cursor moved (or not) by hand.

use crate::ring::raw::RawRing;
use crate::ring::shared::Shared;
use crate::ring::{Options, Publisher, RecvError, Ring, shape};
use crate::sync::{Arc, Ordering};

/// A lossy single-publisher ring of `capacity` `u64` slots, with its memory.
fn spmc(capacity: u64) -> (Publisher<u64>, Ring<u64>, RawRing) {
    let shape = shape::<u64>(capacity, 0, 0, &Options::new());
    let shared = Arc::new(Shared::heap(shape));
    let raw = shared.raw;
    (Publisher::new(shared.clone()), Ring::new(shared), raw)
}

/// The batch 4..8 of a four-slot ring has rewritten every slot, and its cursor store is still
/// to come: the cursor says 0..4 are the newest, and all of them are overwritten. The newest
/// complete message is 7, named by the stamps; `latest` used to return `None` (the slot below
/// the cursor overwritten, and every slot below it too).
#[test]
fn latest_finds_a_lap_written_before_its_cursor_store() {
    let (mut tx, ring, raw) = spmc(4);
    let mut rx = ring.subscribe();
    tx.publish_batch(&[0, 1, 2, 3]);
    raw.write_run(4, &[4u64, 5, 6, 7]);
    assert_eq!(rx.pending(), 4, "the cursor still says 0..4");
    assert_eq!(rx.latest(), Some(7));
    assert_eq!((rx.position(), rx.received(), rx.lagged()), (8, 1, 0));
    assert_eq!(rx.latest(), None);
    assert_eq!(rx.try_recv(), Err(RecvError::Empty), "as `latest` said");
    // The batch's cursor store, then the next message.
    raw.cursor().store(8, Ordering::Release);
    assert_eq!(rx.pending(), 0);
    tx.publish(8);
    assert_eq!(rx.try_recv(), Ok(8));
}

/// A subscriber that read part of such a batch by its stamps (as `try_recv` does) stands past
/// the cursor: `latest` used to look only below the cursor and return `None` while the rest
/// of the batch was there for `try_recv`.
#[test]
fn latest_past_the_cursor_finds_the_rest_of_the_batch() {
    let (mut tx, ring, raw) = spmc(4);
    tx.publish_batch(&[0, 1, 2, 3]);
    let mut rx = ring.subscribe(); // at 4, the cursor
    raw.write_run(4, &[4u64, 5, 6, 7]);
    assert_eq!((rx.try_recv(), rx.try_recv()), (Ok(4), Ok(5)));
    let v = rx.latest().expect("6 and 7 are complete");
    assert!(v == 6 || v == 7, "{v}");
    assert_eq!(rx.position(), v + 1);
    assert_eq!((rx.received(), rx.lagged()), (3, 0));
    // Whatever is left of the batch is what `try_recv` finds, then nothing.
    let rest: Vec<u64> = core::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(rest, (v + 1..8).collect::<Vec<_>>());
    assert_eq!(rx.latest(), None);
}
