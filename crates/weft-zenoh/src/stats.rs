//! What a running bridge has done, per topic and direction: read without stopping it.

use crate::typeinfo::TypeMeta;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One bridged topic in one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgedTopic {
    /// The topic path in the region (`/prices/AAPL`); [`BridgeStats::OTHER_KEYS`] (`/**`) for
    /// the inbound entry that counts keys beyond the bound on refused ones.
    pub topic: String,
    /// The Zenoh key it maps to (`weft/market/prices/AAPL`; `weft/market/**` for `/**`).
    pub key: String,
    /// Outbound: samples put to Zenoh. Inbound: samples published into the region.
    pub samples: u64,
    /// Payload bytes of those samples.
    pub bytes: u64,
    /// Samples lost before they could be bridged. Outbound: overwritten in the region before
    /// the bridge read them (weft's `Lagged`). Inbound: gaps in the sequence numbers the far
    /// side carried (a far bridge that lagged or restarted, a sample Zenoh dropped).
    pub lagged: u64,
    /// Samples not bridged because they had been bridged in (outbound: this bridge published
    /// them into the region) or came back to where they came from (inbound).
    pub looped: u64,
    /// Samples or topics refused: a type that disagrees with the other side's or the local
    /// topic's, or a malformed bridge header.
    pub refused: u64,
    /// Samples that could not be bridged because of an error (the region's pool full, a
    /// payload larger than a block, Zenoh refusing a put); `last_error` says which.
    pub dropped: u64,
    /// Outbound only: whether Zenoh knows a subscriber for the key (on another session).
    pub matched: bool,
    /// The topic's type, for a typed topic.
    pub ty: Option<TypeMeta>,
    /// The most recent error on this topic.
    pub last_error: Option<String>,
}

/// A snapshot of a bridge's counters ([`crate::Bridge::stats`]); serialisable for `--json`
/// output, and `Display` prints a table.
///
/// Every topic the bridge forwards, or publishes into its region, has an entry of its own. So
/// do the first [`BridgeStats::REFUSED_KEYS_MAX`] inbound keys whose samples were refused or
/// dropped before they became a topic in the region (a type the bridge refuses, a full topic
/// table, a malformed header): the keys are the far side's to choose, so those beyond the
/// bound are counted together under the topic [`BridgeStats::OTHER_KEYS`], whose
/// `last_error` names the key.
///
/// An outbound topic unregistered in the region loses its entry once its forwarder has sent
/// what was published before (registered again, it gets a new entry, counting from zero): a
/// bridge over topics that come and go shows the live ones only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BridgeStats {
    /// Region to Zenoh, by topic.
    pub outbound: Vec<BridgedTopic>,
    /// Zenoh to region, by topic.
    pub inbound: Vec<BridgedTopic>,
}

impl BridgeStats {
    /// The topic of the inbound entry that counts the refused keys beyond
    /// [`BridgeStats::REFUSED_KEYS_MAX`] (no topic path has a `*`).
    pub const OTHER_KEYS: &'static str = "/**";

    /// How many inbound keys that are no topic in the region get an entry of their own.
    pub const REFUSED_KEYS_MAX: usize = 256;

    /// The outbound entry of `topic`.
    pub fn outbound(&self, topic: &str) -> Option<&BridgedTopic> {
        self.outbound.iter().find(|t| t.topic == topic)
    }

    /// The inbound entry of `topic`.
    pub fn inbound(&self, topic: &str) -> Option<&BridgedTopic> {
        self.inbound.iter().find(|t| t.topic == topic)
    }
}

impl core::fmt::Display for BridgeStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "{:<4} {:<32} {:>12} {:>14} {:>8} {:>8} {:>8} {:>8}  type",
            "dir", "topic", "samples", "bytes", "lagged", "looped", "refused", "dropped"
        )?;
        for (dir, list) in [("out", &self.outbound), ("in", &self.inbound)] {
            for t in list {
                let ty = t.ty.as_ref().map_or_else(String::new, |m| m.to_string());
                let unmatched = if dir == "out" && !t.matched {
                    " (no subscriber)"
                } else {
                    ""
                };
                writeln!(
                    f,
                    "{dir:<4} {:<32} {:>12} {:>14} {:>8} {:>8} {:>8} {:>8}  {ty}{unmatched}",
                    t.topic, t.samples, t.bytes, t.lagged, t.looped, t.refused, t.dropped
                )?;
                if let Some(e) = &t.last_error {
                    writeln!(f, "     last error: {e}")?;
                }
            }
        }
        Ok(())
    }
}

/// The live counters of one topic and direction. Each is written by the one thread that
/// bridges the topic in that direction and read by `stats`: Relaxed is enough for counters
/// that are only ever reported.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub samples: AtomicU64,
    pub bytes: AtomicU64,
    pub lagged: AtomicU64,
    pub looped: AtomicU64,
    pub refused: AtomicU64,
    pub dropped: AtomicU64,
    pub matched: AtomicBool,
    pub ty: Mutex<Option<TypeMeta>>,
    pub last_error: Mutex<Option<String>>,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        // Relaxed: a statistic.
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn error(&self, e: impl core::fmt::Display) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
    }

    fn snapshot(&self, topic: &str, key: String) -> BridgedTopic {
        // Relaxed: statistics (see the type's comment).
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BridgedTopic {
            topic: topic.into(),
            key,
            samples: get(&self.samples),
            bytes: get(&self.bytes),
            lagged: get(&self.lagged),
            looped: get(&self.looped),
            refused: get(&self.refused),
            dropped: get(&self.dropped),
            matched: self.matched.load(Ordering::Relaxed),
            ty: self.ty.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// Which way a topic is bridged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Dir {
    Out,
    In,
}

/// Every topic's counters, created on first use.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    map: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    map: BTreeMap<(Dir, String), Arc<Counters>>,
    /// Entries made by `get_refused`: at most `BridgeStats::REFUSED_KEYS_MAX`.
    refused: usize,
}

impl Registry {
    /// The counters of a topic the bridge bridges (a forwarder's, or a topic registered in
    /// the region): as many as the region has topics, whatever the far side sends.
    pub fn get(&self, dir: Dir, topic: &str) -> Arc<Counters> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .entry((dir, topic.into()))
            .or_default()
            .clone()
    }

    /// The counters for a sample of `topic` refused or dropped before the topic was bridged
    /// (its key is the far side's choice): its own entry while fewer than
    /// `BridgeStats::REFUSED_KEYS_MAX` were made this way, else the shared one
    /// (`BridgeStats::OTHER_KEYS`). The flag says it is the shared one.
    pub fn get_refused(&self, dir: Dir, topic: &str) -> (Arc<Counters>, bool) {
        let mut e = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = e.map.get(&(dir, topic.into())) {
            return (c.clone(), false);
        }
        let (name, other) = if e.refused < BridgeStats::REFUSED_KEYS_MAX {
            e.refused += 1;
            (topic, false)
        } else {
            (BridgeStats::OTHER_KEYS, true)
        };
        let c = e.map.entry((dir, name.into())).or_default().clone();
        (c, other)
    }

    /// Removes the entry of `topic` if it is still `c` (an outbound topic whose forwarder
    /// ended because the topic was unregistered: a bridge over topics that come and go keeps
    /// only the live ones).
    pub fn remove(&self, dir: Dir, topic: &str, c: &Arc<Counters>) {
        let mut e = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let key = (dir, topic.to_owned());
        if e.map.get(&key).is_some_and(|now| Arc::ptr_eq(now, c)) {
            e.map.remove(&key);
        }
    }

    pub fn snapshot(&self, key_for: impl Fn(&str) -> String) -> BridgeStats {
        let entries = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = BridgeStats::default();
        for ((dir, topic), c) in entries.map.iter() {
            let t = c.snapshot(topic, key_for(topic));
            match dir {
                Dir::Out => out.outbound.push(t),
                Dir::In => out.inbound.push(t),
            }
        }
        out
    }
}
