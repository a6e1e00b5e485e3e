//! Region to Zenoh: a discovery thread finds the region's topics that match the outbound
//! patterns, and one thread per topic receives its samples and puts them to Zenoh.

use crate::bridge::{Attached, Shared, lock};
use crate::config::Congestion;
use crate::error::{Error, Result};
use crate::stats::{Counters, Dir};
use crate::typeinfo::{TypeMeta, probe};
use crate::wire::SampleHeader;
use std::collections::{HashMap, HashSet, VecDeque};
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
    let mut readers = Readers::default();
    // Each forwarder and the index of the reader its subscription is on.
    let mut running: HashMap<String, (JoinHandle<()>, usize)> = HashMap::new();
    let mut closed = Closed::default();
    let mut refused: HashSet<String> = HashSet::new();
    while !shared.stopping() {
        if readers.list.is_empty() {
            match Subscriber::connect(&region) {
                Ok(s) => readers.first(s),
                // Not created yet: look again next round.
                Err(weft::Error::NotFound { .. }) => {}
                Err(e) => shared.error(format!("opening region {region}: {e}")),
            }
        }
        // A forwarder whose topic was unregistered has stopped: the topic is subscribed
        // again below if it is registered again, as a new registration.
        running.retain(|name, (h, r)| {
            if h.is_finished() {
                closed.insert(name);
                readers.list[*r].1 -= 1;
                false
            } else {
                true
            }
        });
        if let Some((first, _)) = readers.list.first() {
            match first.topics() {
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
                        let r = match readers.with_room(&region) {
                            Ok(r) => r,
                            Err(e) => {
                                shared.stats.get(Dir::Out, &name).error(Error::from(e));
                                continue;
                            }
                        };
                        // A refused topic is tried every round: it may have been unregistered
                        // and registered again with the right type between two rounds.
                        let sub = readers.list[r].0.clone();
                        match start(&shared, &sub, &name, closed.contains(&name)) {
                            Ok(Started::Running(h)) => {
                                refused.remove(&name);
                                closed.remove(&name);
                                readers.list[r].1 += 1;
                                running.insert(name, (h, r));
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
    for (_, (h, _)) in running {
        let _ = h.join();
    }
}

/// The region's subscriber handles the forwarders subscribe through, each with the number of
/// forwarders on it. A handle (a participant) holds at most `max_held` subscriptions and
/// received samples at once: the forwarders are spread so that each has room for samples
/// in flight beside its subscription, a quarter of the allowance each.
#[derive(Default)]
struct Readers {
    list: Vec<(Arc<Subscriber>, usize)>,
    /// Forwarders per handle: a quarter of the region's `max_held`, read once.
    per: usize,
}

impl Readers {
    /// Takes the first handle, connected to the region.
    fn first(&mut self, s: Subscriber) {
        self.per = (s.region_info().max_held as usize / 4).max(1);
        self.list.push((Arc::new(s), 0));
    }

    /// The index of a handle with room for one more forwarder, connecting one if none has.
    /// The first handle must be there.
    fn with_room(&mut self, region: &str) -> weft::Result<usize> {
        if let Some(i) = self.list.iter().position(|(_, n)| *n < self.per) {
            return Ok(i);
        }
        self.list.push((Arc::new(Subscriber::connect(region)?), 0));
        Ok(self.list.len() - 1)
    }
}

/// Names of topics whose forwarder ended because they were unregistered: registered again,
/// their sequences go on from wherever the table entry they land in was (another entry's
/// count), so the new forwarder tells the far side not to count the jump as lost. Bounded:
/// the oldest names are forgotten first (a re-registration of one of those is counted as
/// lag, as a gap it cannot tell from one).
#[derive(Default)]
struct Closed {
    names: HashSet<String>,
    order: VecDeque<String>,
}

/// How many names [`Closed`] remembers.
const CLOSED_MAX: usize = 4096;

impl Closed {
    fn insert(&mut self, name: &str) {
        if self.names.insert(name.to_string()) {
            self.order.push_back(name.to_string());
            if self.order.len() > CLOSED_MAX
                && let Some(old) = self.order.pop_front()
            {
                self.names.remove(&old);
            }
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    fn remove(&mut self, name: &str) {
        if self.names.remove(name) {
            self.order.retain(|n| n != name);
        }
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
fn start(shared: &Arc<Shared>, sub: &Arc<Subscriber>, topic: &str, fresh: bool) -> Result<Started> {
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
        .spawn(move || forward(&s, subscription, publisher, meta, counters, own, fresh))
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
    mut fresh: bool,
) {
    // Sequences skipped on purpose since the last sample put: the far side does not count
    // them as lost.
    let mut excluded = 0u64;
    while !shared.stopping() {
        let expected = sub.position();
        match sub.recv_timeout(POLL) {
            Ok(sample) => {
                let seq = sample.seq();
                if fresh {
                    // A new registration: what came before its first sample here is no loss.
                    fresh = false;
                    excluded = seq;
                }
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
