//! # weft-zenoh
//!
//! Bridges the topics of a weft shared-memory region to Zenoh key expressions and back, so
//! that a subscriber on another host (or in another network namespace) receives what a local
//! publisher wrote, and the other way round.
//!
//! - [`Bridge`]: forwards the region's topics that match the outbound patterns to
//!   `<key_prefix>/<topic>` (`/prices/AAPL` in region `market` -> `weft/market/prices/AAPL`),
//!   and publishes the Zenoh samples under the inbound patterns into the region, registering
//!   topics on demand. A topic that exists in the region already is joined as it was
//!   registered: a `Latest` topic stays latest-value, and an inline topic (plain, latest-value
//!   or typed) gets each sample copied into its slot; a sample of another length than the
//!   inline topic's messages is refused and counted, with the reason. A single-publisher
//!   topic (of any mode) takes the bridge as its one publisher: while its local publisher lives the
//!   bridge's samples are dropped (`InUse`, counted, with the reason), and once the bridge
//!   holds it a local publisher is refused until the bridge stops.
//! - [`BridgeConfig`]: the region, the patterns ([`Pattern`]: `*` one segment, `**` any
//!   number), the Zenoh mode, endpoints, multicast scouting and key prefix; read from a JSON5
//!   file with [`BridgeConfig::from_file`].
//! - [`BridgeStats`]: per topic and direction, samples and bytes bridged, samples lost on
//!   the way (`lagged`: counted from sequence numbers the far side carries), refused (type
//!   mismatches) and dropped. An outbound topic unregistered in the region leaves them once
//!   its last sample is out.
//!
//! ## For the `weft bridge` command
//! The command builds a [`BridgeConfig`] from its flags (`--out PATTERN`, `--in PATTERN`,
//! `--mode peer|client`, `--listen EP`, `--connect EP`, `--no-multicast`, `--prefix KEY`)
//! or reads one with [`BridgeConfig::from_file`] (`--config FILE`), calls
//! [`Bridge::start`], and prints [`Bridge::stats`] (`Display` for people, `serde` for
//! `--json`) until interrupted; dropping the [`Bridge`] stops it. Errors are
//! [`enum@Error`] with a sentence for `Display`.
//!
//! ## Typed topics
//! A typed weft topic records its type's name, size and alignment. The bridge carries them in
//! every sample's header and the far side refuses a sample whose type disagrees with its own
//! topic's. A program that knows the Rust type says so with [`BridgeBuilder::typed`]; the far
//! side then registers the topic typed, exactly as a local publisher of that type would.
//! (weft's public API cannot register a topic with a type described at run time, so a bridge
//! that does not know the Rust type registers an absent topic untyped.)
//!
//! ## Example
//! A sending and a receiving bridge on loopback, with explicit endpoints and no multicast
//! scouting, are shown on [`Bridge`]; the same with a bridge in another process is in
//! `tests/bridge_restart.rs`.
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod bridge;
mod config;
mod error;
mod inbound;
mod outbound;
mod pattern;
mod stats;
mod typeinfo;
pub mod wire;

pub use bridge::{Bridge, BridgeBuilder};
pub use config::{BridgeConfig, Congestion, RegionShape, ZenohMode};
pub use error::{Error, Result};
pub use pattern::Pattern;
pub use stats::{BridgeStats, BridgedTopic};
pub use typeinfo::TypeMeta;

/// The README's Zenoh examples (extracted by build.rs), run as doc tests so that they stay
/// true.
#[cfg(doctest)]
#[doc = include_str!(concat!(env!("OUT_DIR"), "/readme.md"))]
pub struct ReadmeExamples;
