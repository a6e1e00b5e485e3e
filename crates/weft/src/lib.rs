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

/// CPU affinity: pin the calling thread to a core (benchmarks, pipelines, latency-critical
/// readers).
#[cfg(feature = "std")]
pub mod affinity {
    /// Pins the calling thread to CPU `core`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a core beyond the CPU set,
    /// [`Error::Io`](crate::Error::Io) when the OS refuses (the core is not in this process's
    /// allowed set).
    ///
    /// # Examples
    /// ```
    /// weft::affinity::pin_current_thread(0).unwrap();
    /// ```
    pub fn pin_current_thread(core: usize) -> crate::Result<()> {
        crate::sys::pin_current_thread(core)
    }

    /// The number of cores this process may run on (at least 1).
    pub fn available_cores() -> usize {
        crate::sys::available_cores()
    }
}

pub use error::{Error, ErrorKind, Result, Role};
pub use wait::WaitStrategy;

/// The README's examples, compiled and run as doc tests so that they stay true.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
