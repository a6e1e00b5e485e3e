//! Shared-memory publish/subscribe with URI topics.
//!
//! A *region* is one named shared-memory object ("market") that holds a topic table, a
//! participants table, one descriptor ring per topic and a pool of fixed-size blocks. Topics
//! are URI paths inside it ("/prices/AAPL"); helpers that take one string accept
//! "market/prices/AAPL" ([`split_uri`]).
//!
//! - [`Publisher`]: [`Publisher::create`] or [`Publisher::open`] a region, [`Publisher::register`]
//!   a topic, then [`Publisher::loan`] a block, write it in place and [`Loan::publish`] it (or
//!   [`Publisher::publish`] to copy a slice). Several publishers, in several processes, may
//!   publish on one topic.
//! - [`Subscriber`]: [`Subscriber::connect`] to a region, [`Subscriber::subscribe`] to a
//!   topic, then `try_recv` / `recv` / `recv_timeout` on the [`Subscription`] give a [`Sample`] that borrows the block in
//!   place (zero copies) and releases it on drop. A subscriber that fell behind gets
//!   [`Error::Lagged`](crate::Error::Lagged) with the exact number of messages it missed.
//!
//! A topic has one of three modes ([`TopicMode`]): `Blocks` (loaned blocks, any payload up to
//! the block size, zero copies), `Latest` (the newest value only, never torn) and `Inline`
//! (messages of up to [`INLINE_MAX`] bytes copied into a seqlock ring: the fastest path for
//! small values; a latest-value inline topic, up to [`latest_inline_max`] bytes; see
//! [`TopicSpec`]).
//!
//! The algorithms (`pool`: allocation and marked reference counts; `ring`: the
//! multi-publisher descriptor ring; `inline`: the broadcast ring of [`crate::ring`] with
//! several publishers and the voiding of a dead publisher's claim) work over raw memory and
//! are model-checked with loom; the handles place them in a region (`shm::pubsub`). The
//! layout is in docs/protocol.md ("Region").
//!
//! # Examples
//! ```
//! use weft::pubsub::{Config, Publisher, Subscriber};
//! # let region = format!("doc-pubsub-{}", std::process::id());
//! let publisher = Publisher::create(&region, &Config::default())?;
//! let prices = publisher.register("/prices/AAPL")?;
//!
//! let subscriber = Subscriber::connect(&region)?;
//! let mut sub = subscriber.subscribe("/prices/AAPL")?;
//!
//! let mut loan = publisher.loan(&prices)?;      // a block in shared memory
//! loan[..5].copy_from_slice(b"189.5");
//! loan.set_len(5)?;
//! loan.publish()?;                              // an 8-byte descriptor in the topic's ring
//! publisher.publish(&prices, b"189.6")?;        // or copy a slice
//!
//! assert_eq!(&*sub.try_recv()?, b"189.5");   // borrowed in place
//! assert_eq!(&*sub.try_recv()?, b"189.6");
//! # Ok::<(), weft::Error>(())
//! ```

// Without `std` the cores have no handle to drive them.
#![cfg_attr(not(all(feature = "std", not(loom))), allow(dead_code))]

pub(crate) mod inline;
pub(crate) mod pool;
pub(crate) mod ring;

#[cfg(test)]
mod tests;

/// Checks, before a single publisher writes, that the lease word `lease` of its topic (the
/// inline ring's publishers word, or the hot line's `lease`) still names it (`holder`: its
/// participant + 1 and its claim's epoch, `shm::pubsub::region::lease_value`); `Err` with the
/// word's value otherwise. A lease is taken from a holder only when it is judged dead, and one
/// judged so while it stood still (a heartbeat that stopped, in another pid namespace) must
/// stop here instead of writing with plain stores beside the new holder, also when the new
/// holder took its row (the epoch differs).
#[inline(always)]
pub(crate) fn holds_lease(lease: &crate::sync::AtomicU64, holder: u64) -> Result<(), u64> {
    // Relaxed: a check, not a synchronisation (the takeover's CAS is what hands the topic on).
    match lease.load(crate::sync::Ordering::Relaxed) {
        v if v == holder => Ok(()),
        v => Err(v),
    }
}

#[cfg(all(feature = "std", not(loom)))]
pub use crate::shm::pubsub::{
    Config, INLINE_MAX, InlineWriter, Loan, MAX_BLOCK_SIZE, Publisher, RegionInfo, RegionReport,
    Sample, SampleRef, Subscriber, Subscription, TOPIC_MAX, TYPE_NAME_MAX, Topic, TopicMode,
    TopicSpec, TopicStats, TypedSample, TypedSubscription, inspect, latest_inline_max, regions,
    split_uri, validate_topic,
};

// Read-only views for tools (`weft info`, `weft clean`).
#[cfg(all(feature = "std", not(loom)))]
pub use crate::shm::pubsub::inspect::{Participant, RegionDetails, TopicDetails, details, reclaim};
