//! The user's `--timeout` as one deadline for everything a command waits for (a region's
//! creator, the region, the topic, samples, subscribers), and the failure that says what was
//! waited for and for how long when it passes.

use crate::exit::{Failure, TIMEOUT, code_of};
use crate::out;
use std::time::{Duration, Instant};
use weft::Error;

/// How long an open waits for the creator of a region still being made when the user gave no
/// shorter bound: the library's own wait (`weft::pubsub::Config::open_timeout`, 1 s).
pub const CREATOR_WAIT: Duration = Duration::from_secs(1);

/// When the user's `--timeout` runs out, and how long it was.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    given: Duration,
}

impl Deadline {
    /// The deadline `timeout` from now; none without a timeout (or past the clock's range).
    pub fn after(timeout: Option<Duration>) -> Option<Deadline> {
        let given = timeout?;
        Some(Deadline {
            at: Instant::now().checked_add(given)?,
            given,
        })
    }

    /// The time left, zero once it passed.
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it passed.
    pub fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The timeout as the user gave it, for messages (`300 ms`).
    pub fn given(&self) -> String {
        out::duration(self.given)
    }

    /// The timeout failure: `what` (a sentence without its end: "no sample arrived on 'r/t'")
    /// did not happen within the user's timeout.
    pub fn failure(&self, what: &str) -> Failure {
        Failure::new(TIMEOUT, format!("{what} within {}", self.given()))
    }
}

/// How long the open of a region may wait for its creator: `patience`, cut to what is left of
/// the deadline.
pub fn open_timeout(deadline: Option<Deadline>, patience: Duration) -> Duration {
    deadline.map_or(patience, |d| d.left().min(patience))
}

/// "region 'r' was not made ready by its creator (process 42)": what an open of a region
/// still being made waited for.
pub fn being_made(region: &str, pid: u32) -> String {
    let by = if pid == 0 {
        String::new()
    } else {
        format!(" (process {pid})")
    };
    format!("region '{region}' was not made ready by its creator{by}")
}

/// The failure to join `region` (as a publisher or a subscriber): a region still being made
/// when the deadline passed is a timeout that says so; an argument the region refuses (every
/// participant row taken) names the region; anything else is the library's error.
pub fn join_failure(e: Error, region: &str, deadline: Option<Deadline>) -> Failure {
    match (e, deadline) {
        (
            Error::NotReady {
                pid,
                creator_gone: false,
                ..
            },
            Some(d),
        ) if d.passed() => d.failure(&being_made(region, pid)),
        (e @ Error::InvalidArgument { .. }, _) => {
            Failure::new(code_of(&e), format!("cannot join region '{region}': {e}"))
        }
        (e, _) => e.into(),
    }
}
