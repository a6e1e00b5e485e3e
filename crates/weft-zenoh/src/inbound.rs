//! Zenoh to region: a Zenoh callback that publishes each sample into the region as a weft
//! publisher, registering topics on demand, checking types and counting sequence gaps.

use crate::bridge::{OwnSeqs, Shared, lock};
use crate::config::BridgeConfig;
use crate::error::Result;
use crate::stats::{Counters, Dir};
use crate::typeinfo::{TypeMeta, probe};
use crate::wire::SampleHeader;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use weft::pubsub::{Publisher, Subscriber, Topic, TopicMode, TopicSpec};
use zenoh::sample::{Sample, SampleKind};

/// The inbound side's handles, behind the bridge's inbound mutex (Zenoh may call the callback
/// from several threads; `Publisher` is not `Sync`).
#[derive(Debug)]
pub(crate) struct Inbound {
    publisher: Publisher,
    /// A subscriber handle of the same region, joined on first need, to read topics' types.
    reader: Option<Subscriber>,
    topics: HashMap<String, InTopic>,
    /// Bound of the loop-guard queues: two ring laps.
    own_cap: usize,
}

/// One inbound topic, registered in the region.
#[derive(Debug)]
struct InTopic {
    topic: Topic,
    /// The type every sample must carry (the local topic's, or the first sample's when the
    /// bridge registered the topic untyped); `None`: untyped, anything goes.
    expect: Option<TypeMeta>,
    own: Option<Arc<OwnSeqs>>,
    /// The next sequence expected from each origin.
    expected: Origins,
    counters: Arc<Counters>,
}

/// How many origins a topic remembers the next sequence of. A topic has one origin per
/// source region that publishes on it, a handful; the origin is a header field the far side
/// writes, so the memory is bounded anyway.
const ORIGINS_MAX: usize = 32;

/// The next sequence expected from each origin of one topic, the most recently seen last; at
/// most [`ORIGINS_MAX`]. The least recently seen origin is forgotten to make room, and its
/// next sample starts its count again, as a new origin's first sample does.
#[derive(Debug, Default)]
struct Origins(VecDeque<(u64, u64)>);

impl Origins {
    /// Records a sample of sequence `seq` from `origin`; returns the sequence expected from
    /// `origin` before it, if it was remembered.
    fn advance(&mut self, origin: u64, seq: u64) -> Option<u64> {
        // From the back: the origin of the previous sample is the usual one.
        let before = self
            .0
            .iter()
            .rposition(|&(o, _)| o == origin)
            .and_then(|i| self.0.remove(i))
            .map(|(_, next)| next);
        if self.0.len() == ORIGINS_MAX {
            self.0.pop_front();
        }
        self.0.push_back((origin, seq.wrapping_add(1)));
        before
    }
}

/// Why a topic cannot take a sample.
enum Refusal {
    /// A type disagreement or a malformed header: counted as refused.
    Refused(String),
    /// Anything else (the region refused): counted as dropped.
    Dropped(String),
}

impl Refusal {
    /// Counts it on `c`, with the reason; `topic`, when given, is named in the reason (for the
    /// entry that several keys share).
    fn count(self, c: &Counters, topic: Option<&str>) {
        let (counter, why) = match self {
            Refusal::Refused(m) => (&c.refused, m),
            Refusal::Dropped(m) => (&c.dropped, m),
        };
        Counters::add(counter, 1);
        match topic {
            Some(t) if !why.contains(t) => c.error(format!("{t}: {why}")),
            _ => c.error(why),
        }
    }
}

impl Inbound {
    /// Opens the region as a publisher, creating it if it does not exist.
    pub fn open(config: &BridgeConfig) -> Result<Inbound> {
        let region = &config.region;
        let publisher = match Publisher::open(region) {
            Err(weft::Error::NotFound { .. }) => {
                match Publisher::create(region, &config.region_shape.config()) {
                    // Someone else created it in between.
                    Err(weft::Error::AlreadyExists { .. }) => Publisher::open(region)?,
                    other => other?,
                }
            }
            other => other?,
        };
        let own_cap = (publisher.region_info().ring_slots as usize * 2).max(4096);
        Ok(Inbound {
            publisher,
            reader: None,
            topics: HashMap::new(),
            own_cap,
        })
    }

    /// The recorded type of a registered local topic; `Ok(None)` when it is untyped or absent.
    fn local_type(&mut self, region: &str, topic: &str) -> weft::Result<Option<TypeMeta>> {
        if self.reader.is_none() {
            self.reader = Some(Subscriber::connect(region)?);
        }
        let reader = self.reader.as_ref().expect("joined above");
        match probe(reader, topic) {
            Err(weft::Error::NotFound { .. }) => Ok(None),
            other => other,
        }
    }

    /// The spec to join `topic` with: as it was registered, if it is (its mode and, for an
    /// inline topic, its message size and kind), else blocks.
    fn existing_spec(&self, topic: &str) -> Result<TopicSpec, Refusal> {
        self.publisher
            .existing_spec(topic)
            .map(|s| s.unwrap_or(TopicSpec::new(TopicMode::Blocks)))
            .map_err(|e| Refusal::Dropped(format!("reading the mode of {topic}: {e}")))
    }

    /// Registers `topic` for the first sample, which carries `carried`.
    fn resolve(
        &mut self,
        shared: &Shared,
        topic: &str,
        carried: Option<&TypeMeta>,
    ) -> Result<InTopic, Refusal> {
        let describe =
            |t: Option<&TypeMeta>| t.map_or_else(|| "untyped bytes".into(), |m| m.to_string());
        let (handle, expect) = if let Some(rule) = shared.rule(topic) {
            if !carried.is_some_and(|c| c.agrees_with(&rule.meta)) {
                return Err(Refusal::Refused(format!(
                    "the sample carries {}, the bridge maps {topic} to {}",
                    describe(carried),
                    rule.meta
                )));
            }
            let spec = self.existing_spec(topic)?;
            match (rule.register)(&self.publisher, topic, &spec) {
                Ok(h) => (h, Some(rule.meta.clone())),
                Err(e @ weft::Error::TypeMismatch { .. }) => {
                    return Err(Refusal::Refused(e.to_string()));
                }
                Err(e) => return Err(Refusal::Dropped(format!("registering {topic}: {e}"))),
            }
        } else {
            let local = self
                .local_type(&shared.config.region, topic)
                .map_err(|e| Refusal::Dropped(format!("reading the type of {topic}: {e}")))?;
            if let Some(l) = &local
                && !carried.is_some_and(|c| c.agrees_with(l))
            {
                return Err(Refusal::Refused(format!(
                    "the sample carries {}, topic {topic} holds {l} here",
                    describe(carried)
                )));
            }
            // Untyped registration finds an existing topic of any type.
            let spec = self.existing_spec(topic)?;
            let handle = self
                .publisher
                .register_spec(topic, &spec)
                .map_err(|e| Refusal::Dropped(format!("registering {topic}: {e}")))?;
            (handle, local.or_else(|| carried.cloned()))
        };
        let counters = shared.stats.get(Dir::In, topic);
        *lock(&counters.ty) = expect.clone();
        Ok(InTopic {
            topic: handle,
            expect,
            own: shared.own_for(topic, self.own_cap),
            expected: Origins::default(),
            counters,
        })
    }
}

/// Counts a sample of `topic` refused or dropped before `topic` became a topic of the region
/// (the key is the far side's choice: see `Registry::get_refused`).
fn refuse(shared: &Shared, topic: &str, r: Refusal) {
    let (c, shared_entry) = shared.stats.get_refused(Dir::In, topic);
    r.count(&c, shared_entry.then_some(topic));
}

/// The inbound callback of pattern `index` (of `BridgeConfig::inbound`): one Zenoh sample
/// under its key expression. A sample whose topic an earlier pattern matches too is left to
/// that pattern's callback, so that patterns that overlap deliver it once.
pub(crate) fn on_sample(shared: &Shared, index: usize, sample: Sample) {
    if sample.kind() != SampleKind::Put || shared.stopping() {
        return;
    }
    let Some(inbound) = &shared.inbound else {
        return;
    };
    let Some(topic) = sample
        .key_expr()
        .as_str()
        .strip_prefix(shared.prefix.as_str())
    else {
        return;
    };
    if shared.config.inbound.iter().position(|p| p.matches(topic)) != Some(index) {
        return;
    }
    if let Err(e) = weft::pubsub::validate_topic(topic) {
        return refuse(
            shared,
            topic,
            Refusal::Refused(format!("no weft topic: {e}")),
        );
    }
    // Samples without an attachment come from plain Zenoh publishers: untyped, no sequence.
    let header = match sample.attachment() {
        None => None,
        Some(a) => match SampleHeader::decode(&a.to_bytes()) {
            Some(h) => Some(h),
            None => {
                let why = "a sample with a malformed bridge header was refused";
                refuse(shared, topic, Refusal::Refused(why.into()));
                return;
            }
        },
    };
    if let Some(h) = &header
        && (h.instance == shared.instance || h.origin == shared.origin)
    {
        // Our own sample (or one from this same region by another path) came back.
        let (c, _) = shared.stats.get_refused(Dir::In, topic);
        Counters::add(&c.looped, 1);
        return;
    }
    let mut guard = lock(inbound);
    let inb = &mut *guard;
    // A topic unregistered in the region since the bridge joined it (and perhaps registered
    // again) refuses the publish with `Closed`: it is joined afresh and the sample tried once
    // more.
    let mut counted = false;
    for attempt in 0..2 {
        match publish(shared, inb, topic, header.as_ref(), &sample, &mut counted) {
            Err(weft::Error::Closed) if attempt == 0 => {
                let stale = inb.topics.remove(topic).expect("published into it");
                // The far side's sequences go on: keep the count of what it lost.
                match inb.resolve(shared, topic, header.as_ref().and_then(|h| h.ty.as_ref())) {
                    Ok(mut t) => {
                        t.expected = stale.expected;
                        inb.topics.insert(topic.into(), t);
                    }
                    Err(r) => return r.count(&stale.counters, None),
                }
            }
            Err(e) => {
                let c = &inb.topics.get(topic).expect("published into it").counters;
                Counters::add(&c.dropped, 1);
                c.error(e);
                return;
            }
            Ok(()) => return,
        }
    }
}

/// Publishes `sample` into `topic` (resolving the topic first if it is new). `Ok` when the
/// sample was published, refused or dropped (and counted); `Err` for a publish the region
/// refused, not yet counted. The sample's sequence is counted against its origin's once, and
/// `counted` says that it was.
fn publish(
    shared: &Shared,
    inb: &mut Inbound,
    topic: &str,
    header: Option<&SampleHeader>,
    sample: &Sample,
    counted: &mut bool,
) -> weft::Result<()> {
    let carried = header.and_then(|h| h.ty.as_ref());
    if !inb.topics.contains_key(topic) {
        match inb.resolve(shared, topic, carried) {
            Ok(t) => {
                inb.topics.insert(topic.into(), t);
            }
            Err(r) => {
                refuse(shared, topic, r);
                return Ok(());
            }
        }
    }
    let Inbound {
        publisher, topics, ..
    } = inb;
    let t = topics.get_mut(topic).expect("resolved above");
    // Gaps in the source's sequence are what was lost on the way, less what the far bridge
    // skipped on purpose (a sample refused or dropped below did arrive: it is not a gap). A
    // sequence that goes back means the source topic started over.
    if let Some(h) = header
        && !*counted
    {
        *counted = true;
        if let Some(next) = t.expected.advance(h.origin, h.seq)
            && h.seq >= next
        {
            let lost = (h.seq - next).saturating_sub(h.excluded);
            if lost > 0 {
                Counters::add(&t.counters.lagged, lost);
            }
        }
    }
    let payload = sample.payload();
    let len = payload.len();
    if let Some(e) = &t.expect {
        let agrees = carried.is_some_and(|c| c.agrees_with(e));
        if !agrees || len != e.size as usize {
            Counters::add(&t.counters.refused, 1);
            t.counters.error(format!(
                "a sample of {len} bytes carrying {} was refused: topic {topic} holds {e}",
                carried.map_or_else(|| "no type".into(), |c| c.to_string())
            ));
            return Ok(());
        }
    }
    if let Some(size) = t.topic.message_size()
        && len != size
    {
        Counters::add(&t.counters.refused, 1);
        t.counters.error(format!(
            "a sample of {len} bytes was refused: topic {topic} is an inline topic of \
             {size}-byte messages"
        ));
        return Ok(());
    }
    if t.topic.message_size().is_none() && len > publisher.max_len() {
        Counters::add(&t.counters.dropped, 1);
        t.counters.error(format!(
            "a sample of {len} bytes does not fit the region's {}-byte blocks",
            publisher.max_len()
        ));
        return Ok(());
    }
    // The loop guard: hold the topic's queue from before the publish until its sequence is in
    // (for the forwarder attached now: see `OwnSeqs`).
    let mut own = t.own.as_ref().map(|o| (o, o.lock()));
    let seq = if t.topic.message_size().is_some() {
        // An inline topic: the message is copied into the ring's slot.
        publisher.publish(&t.topic, &payload.to_bytes())
    } else {
        publisher.loan(&t.topic).and_then(|mut loan| {
            loan.set_len(len)?;
            let mut at = 0;
            for s in payload.slices() {
                loan[at..at + s.len()].copy_from_slice(s);
                at += s.len();
            }
            loan.publish()
        })
    }?;
    if let Some((o, q)) = own.as_mut() {
        o.push(q, seq);
    }
    Counters::add(&t.counters.samples, 1);
    Counters::add(&t.counters.bytes, len as u64);
    Ok(())
}
