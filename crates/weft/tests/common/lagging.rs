//! A subscriber that keeps falling behind its publishers and counts every loss.

use std::time::Duration;
use weft::Error;
use weft::pubsub::{Sample, Subscription};

/// Receives from `sub` until `total` sequences were delivered or reported lost, pausing
/// 500 us after every fourth message, so that paced publishers lap it again and again.
/// Every delivered message must carry the next sequence not yet counted (a skip is counted
/// exactly), and each publisher's counters, as `id_and_counter` reads them from a message
/// (checking it whole), only grow: nothing twice, nothing out of order. The subscriber must
/// fall behind more than once and still read more than a last ring of 64. Returns how many
/// messages it lost.
pub fn receive_slowly(
    sub: &mut Subscription,
    total: u64,
    id_and_counter: impl Fn(&Sample) -> (u64, u64),
) -> u64 {
    let mut next = std::collections::HashMap::<u64, u64>::new();
    let (mut expected, mut got, mut lost, mut lags) = (0u64, 0u64, 0u64, 0u64);
    while expected < total {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                assert_eq!(
                    m.seq(),
                    expected,
                    "a sequence was skipped without being counted"
                );
                let (id, c) = id_and_counter(&m);
                let want = next.entry(id).or_insert(0);
                assert!(
                    c >= *want,
                    "publisher {id}'s message {c} came again or out of order"
                );
                *want = c + 1;
                expected += 1;
                got += 1;
                if got % 4 == 0 {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            Err(Error::Lagged { skipped }) => {
                assert!(skipped > 0);
                expected += skipped;
                lost += skipped;
                lags += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(
        expected, total,
        "more sequences counted than were published"
    );
    assert_eq!(got + lost, total);
    assert!(
        lags > 1,
        "the subscriber was meant to fall behind more than once"
    );
    assert!(
        got > 64,
        "the subscriber was meant to read more than the last ring"
    );
    lost
}
