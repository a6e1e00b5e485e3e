//! # weft
//!
//! Zero-copy messaging for one machine: an in-process broadcast ring, shared-memory pub/sub
//! with URI topics, a shared-memory byte stream for large payloads, request/response channels
//! and object pools, with one vocabulary, one wait model ([`WaitStrategy`]), one error type
//! ([`Error`]) and one crash story (a dead peer is detected, never waited on forever).
//!
//! The algorithm core (`ring`, `stream`, `pool`) builds without `std` (`--no-default-features`,
//! `no_std` + `alloc`); the platform layer and everything across processes needs the default
//! `std` feature.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

extern crate alloc;

// The platform layer and the shared helpers are used piecemeal by the patterns; some of
// their items are used only by a subset of the features.
#[allow(dead_code)]
mod error;
#[allow(dead_code)]
pub(crate) mod sync;
#[allow(dead_code)]
mod wait;

#[cfg(feature = "std")]
#[allow(dead_code, unused_imports)]
pub(crate) mod sys;

pub mod pool;
pub mod pubsub;
pub mod ring;
pub mod stream;

#[cfg(feature = "std")]
pub mod bus;
#[cfg(feature = "std")]
pub mod pipeline;
// Shared memory is real memory: it is not modelled under loom (the algorithms below it are).
#[cfg(all(feature = "std", not(loom)))]
pub mod shm;

/// Request/response between processes: a [`Channel`](channel::Channel) is a pair of byte
/// streams, one per direction, zero-copy both ways, with correlation ids for calls; a
/// [`Server`](channel::Server) hands one channel to each client that connects.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use weft::channel::Server;
/// # let name = format!("doc-channel-mod-{}", std::process::id());
/// let mut server = Server::bind(&name)?;
/// let n = name.clone();
/// let t = std::thread::spawn(move || -> weft::Result<()> {
///     let mut client = Server::connect(&n, Duration::from_secs(5))?;
///     let a = client.send_request(b"a")?;          // two calls in flight
///     let b = client.send_request(b"bb")?;
///     assert_eq!(&*client.wait_reply(b)?, b"2");   // in any order
///     assert_eq!(&*client.wait_reply(a)?, b"1");
///     Ok(())
/// });
/// let mut conn = server.accept_timeout(Duration::from_secs(5))?;
/// for _ in 0..2 {
///     let req = conn.recv_request()?;
///     let len = req.len().to_string();
///     req.reply(len.as_bytes())?;
/// }
/// t.join().unwrap()?;
/// # Ok::<(), weft::Error>(())
/// ```
#[cfg(all(feature = "std", not(loom)))]
pub mod channel {
    pub use crate::shm::channel::{
        Channel, ChannelOptions, FrameGrant, NAME_MAX, Reply, Request, RequestId,
    };
    pub use crate::shm::server::{Server, ServerInfo};
}

/// CPU affinity: pin the calling thread to a core (benchmarks, pipelines, latency-critical
/// readers).
#[cfg(feature = "std")]
pub mod affinity {
    /// Pins the calling thread to CPU `core`. Any core of this process's cpuset is accepted,
    /// including one outside the calling thread's current mask ([`allowed_cores`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a core beyond the CPU set,
    /// [`Error::Io`](crate::Error::Io) when the OS refuses (the core is not in this process's
    /// cpuset, or not online: `EINVAL`).
    ///
    /// # Examples
    /// ```
    /// // The first core this process may run on (core 0 may be outside its set).
    /// let core = weft::affinity::allowed_cores()[0];
    /// weft::affinity::pin_current_thread(core)?;
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn pin_current_thread(core: usize) -> crate::Result<()> {
        crate::sys::pin_current_thread(core)
    }

    /// The number of cores the calling thread may run on (at least 1): the length of
    /// [`allowed_cores`].
    pub fn available_cores() -> usize {
        crate::sys::available_cores()
    }

    /// The cores the calling thread may run on (its affinity mask), ascending. The mask is
    /// per thread: a new thread inherits its creator's, and after
    /// [`pin_current_thread`] it is that one core, although the process may still run (and
    /// pin other threads) on the rest of its cpuset.
    ///
    /// # Examples
    /// ```
    /// let cores = weft::affinity::allowed_cores();
    /// assert_eq!(cores.len(), weft::affinity::available_cores());
    /// std::thread::spawn(move || {
    ///     weft::affinity::pin_current_thread(cores[0]).unwrap();
    ///     assert_eq!(weft::affinity::allowed_cores(), [cores[0]]); // this thread's mask
    /// })
    /// .join()
    /// .unwrap();
    /// ```
    pub fn allowed_cores() -> Vec<usize> {
        crate::sys::allowed_cores()
    }
}

pub use error::{Error, ErrorKind, Result, Role};
pub use wait::{WaitStats, WaitStrategy};

/// The README's examples, compiled and run as doc tests so that they stay true.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
