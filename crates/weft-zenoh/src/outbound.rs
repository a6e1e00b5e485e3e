//! Region to Zenoh: a discovery thread finds the region's topics that match the outbound
//! patterns, and one thread per topic receives its samples and puts them to Zenoh.

use crate::bridge::{Attached, Shared, lock};
use crate::config::Congestion;
use crate::error::{Error, Result};
use crate::stats::{Counters, Dir};
use crate::typeinfo::{TypeMeta, probe};
use crate::wire::SampleHeader;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;
use weft::pubsub::{Sample, Subscriber, Subscription};
use zenoh::Wait;
use zenoh::bytes::ZBytes;
use zenoh::qos::CongestionControl;
use zenoh::sample::Locality;

/// How long a forwarder waits for a sample before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(50);

/// A received sample handed to Zenoh without a copy: Zenoh reads the block in place and drops
/// this (releasing the block) once it has serialised the payload.
struct SampleBytes(Sample);

impl AsRef<[u8]> for SampleBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The discovery loop: runs until the bridge stops, then joins the forwarders.
pub(crate) fn discover(shared: Arc<Shared>) {
    let region = shared.config.region.clone();
    let every = Duration::from_millis(shared.config.discovery_interval_ms);
    let mut subscriber: Option<Arc<Subscriber>> = None;
    let mut running: HashMap<String, JoinHandle<()>> = HashMap::new();
    let mut refused: HashSet<String> = HashSet::new();
    while !shared.stopping() {
        if subscriber.is_none() {
            match Subscriber::connect(&region) {
                Ok(s) => subscriber = Some(Arc::new(s)),
                // Not created yet: look again next round.
                Err(weft::Error::NotFound { .. }) => {}
                Err(e) => shared.error(format!("opening region {region}: {e}")),
            }
        }
        // A forwarder whose topic was unregistered has stopped: the topic is subscribed
        // again below if it is registered again.
        running.retain(|_, h| !h.is_finished());
        if let Some(sub) = &subscriber {
            match sub.topics() {
                Ok(topics) => {
                    // A refused topic that is gone is refused (and counted) anew if it comes
                    // back with the wrong type again.
                    refused.retain(|n| topics.iter().any(|t| t.name == *n));
                    for t in topics {
                        let name = t.name;
                        if running.contains_key(&name)
                            || !shared.config.outbound.iter().any(|p| p.matches(&name))
                        {
                            continue;
                        }
                        // A refused topic is tried every round: it may have been unregistered
                        // and registered again with the right type between two rounds.
                        match start(&shared, sub, &name) {
                            Ok(Started::Running(h)) => {
                                refused.remove(&name);
                                running.insert(name, h);
                            }
                            Ok(Started::Refused(why)) => {
                                if refused.insert(name.clone()) {
                                    let c = shared.stats.get(Dir::Out, &name);
                                    Counters::add(&c.refused, 1);
                                    c.error(format!("not forwarded: {why}"));
                                }
                            }
                            Err(e) => shared.stats.get(Dir::Out, &name).error(e),
                        }
                    }
                }
                Err(e) => shared.error(format!("reading the topics of {region}: {e}")),
            }
        }
        let mut slept = Duration::ZERO;
        while slept < every && !shared.stopping() {
            let step = (every - slept).min(POLL);
            std::thread::sleep(step);
            slept += step;
        }
    }
    for (_, h) in running {
        let _ = h.join();
    }
}

/// What became of a topic [`start`] was given.
enum Started {
    /// Its forwarder runs (until the bridge stops or the topic is unregistered).
    Running(JoinHandle<()>),
    /// Its type is not the one the bridge maps it to: why.
    Refused(weft::Error),
}

/// A topic's subscription and the type its samples carry; `Err`: why its type is refused.
type Subscribed = core::result::Result<(Subscription, Option<TypeMeta>), weft::Error>;

/// Subscribes to `topic`, with the bridge's type for it if it has one.
fn subscribe(shared: &Shared, sub: &Subscriber, topic: &str) -> Result<Subscribed> {
    Ok(match shared.rule(topic) {
        Some(rule) => match (rule.subscribe)(sub, topic) {
            Ok(s) => Ok((s, Some(rule.meta.clone()))),
            Err(e @ weft::Error::TypeMismatch { .. }) => Err(e),
            Err(e) => return Err(e.into()),
        },
        None => {
            let meta = probe(sub, topic)?;
            Ok((sub.subscribe(topic)?, meta))
        }
    })
}

/// Subscribes to `topic` and starts its forwarder, unless its type is refused.
fn start(shared: &Arc<Shared>, sub: &Arc<Subscriber>, topic: &str) -> Result<Started> {
    let cap = (sub.region_info().ring_slots as usize * 2).max(4096);
    // A topic bridged both ways: the loop guard's queue is this forwarder's from its
    // subscription on (see `OwnSeqs`); dropping `own` (when this returns an error, or the
    // forwarder ends) gives it up.
    let (subscribed, own) = match shared.own_for(topic, cap) {
        Some(o) => {
            let (s, attached) = o.attach(|| subscribe(shared, sub, topic));
            (s, Some(attached))
        }
        None => (subscribe(shared, sub, topic), None),
    };
    let (subscription, meta) = match subscribed? {
        Ok(s) => s,
        Err(why) => return Ok(Started::Refused(why)),
    };
    let counters = shared.stats.get(Dir::Out, topic);
    *lock(&counters.ty) = meta.clone();
    let key = format!("{}{topic}", shared.prefix);
    let publisher = shared
        .session
        .declare_publisher(key.clone())
        .congestion_control(match shared.config.congestion {
            Congestion::Block => CongestionControl::Block,
            Congestion::Drop => CongestionControl::Drop,
        })
        .express(shared.config.express)
        // Only other sessions receive what the bridge forwards (see the inbound subscriber).
        .allowed_destination(Locality::Remote)
        .wait()
        .map_err(|e| Error::zenoh(format!("declaring publisher {key}"), e))?;
    let c = counters.clone();
    publisher
        .matching_listener()
        .callback(move |m| {
            // Relaxed: a statistic (read by `stats` and `wait_matched`, which poll).
            c.matched.store(m.matching(), Ordering::Relaxed)
        })
        .background()
        .wait()
        .map_err(|e| Error::zenoh(format!("watching subscribers of {key}"), e))?;
    let s = shared.clone();
    let h = std::thread::Builder::new()
        .name(format!("weft-zenoh-out:{topic}"))
        .spawn(move || forward(&s, subscription, publisher, meta, counters, own))
        .map_err(Error::Thread)?;
    Ok(Started::Running(h))
}

/// One topic's forwarder: runs until the bridge stops, or until its topic was unregistered
/// and everything published before is out.
fn forward(
    shared: &Shared,
    mut sub: Subscription,
    publisher: zenoh::pubsub::Publisher<'static>,
    ty: Option<TypeMeta>,
    counters: Arc<Counters>,
    own: Option<Attached>,
) {
    // Sequences skipped on purpose since the last sample put: the far side does not count
    // them as lost.
    let mut excluded = 0u64;
    while !shared.stopping() {
        let expected = sub.position();
        match sub.recv_timeout(POLL) {
            Ok(sample) => {
                let seq = sample.seq();
                // A latest topic skips to the newest value, and a dead publisher's unfinished
                // sequence is skipped: neither is a loss.
                excluded += seq.saturating_sub(expected);
                if let Some(o) = &own
                    && o.take(seq)
                {
                    // Bridged in by this bridge: never sent back out (the loop guard).
                    Counters::add(&counters.looped, 1);
                    excluded += 1;
                    continue;
                }
                let header = SampleHeader {
                    instance: shared.instance,
                    origin: shared.origin,
                    seq,
                    excluded,
                    ty: ty.clone(),
                };
                let len = sample.len() as u64;
                let payload = ZBytes::from(bytes::Bytes::from_owner(SampleBytes(sample)));
                match publisher.put(payload).attachment(header.encode()).wait() {
                    Ok(()) => {
                        excluded = 0;
                        Counters::add(&counters.samples, 1);
                        Counters::add(&counters.bytes, len);
                    }
                    Err(e) => {
                        Counters::add(&counters.dropped, 1);
                        counters.error(format!("zenoh put: {e}"));
                    }
                }
            }
            Err(weft::Error::Lagged { skipped }) => {
                Counters::add(&counters.lagged, skipped);
                // Own samples among the skipped ones were not going out anyway.
                if let Some(o) = &own {
                    excluded += o.drop_below(sub.position());
                }
            }
            Err(weft::Error::Timeout) => {}
            // Every publisher of the region is gone: wait for a new one.
            Err(weft::Error::PeerDead { .. }) => std::thread::sleep(POLL),
            // Unregistered, and drained: the subscription is dropped (so that the region can
            // reuse the topic's entry), and discovery starts a forwarder for the topic if it
            // is registered again. Nothing of the topic is kept: its statistics entry goes
            // (a new forwarder makes a new one), and so does its loop guard unless the
            // inbound side holds it.
            Err(weft::Error::Closed) => {
                drop(publisher);
                shared.stats.remove(Dir::Out, sub.topic(), &counters);
                drop(own);
                shared.forget_own(sub.topic());
                return;
            }
            Err(e) => {
                counters.error(format!("receiving: {e}"));
                std::thread::sleep(POLL);
            }
        }
    }
}
