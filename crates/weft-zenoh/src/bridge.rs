//! The bridge handle: one Zenoh session, the outbound forwarders (a discovery thread and one
//! thread per topic) and the inbound subscribers (a Zenoh callback that publishes into the
//! region), and the loop guard they share.

use crate::config::BridgeConfig;
use crate::error::{Error, Result};
use crate::inbound::{self, Inbound};
use crate::outbound;
use crate::pattern::Pattern;
use crate::stats::{BridgeStats, Registry};
use crate::typeinfo::TypeRule;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zenoh::Wait;
use zenoh::sample::Locality;

/// Locks `m`, ignoring poisoning: every structure behind these mutexes stays consistent
/// between statements, and a panic in one topic's code must not stop the others.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// FNV-1a 64 of a string (the origin id).
pub(crate) fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The loop guard of one topic of the region: the sequence numbers this bridge published into
/// it since the topic's current forwarder subscribed, oldest first, for that forwarder to skip.
///
/// Why sequences: a sample in the region does not say who published it, so the forwarder
/// cannot skip the bridge's own samples by publisher; but `Loan::publish` returns the
/// sample's sequence, and `Sample::seq` gives it back to every subscriber. The inbound side
/// holds this lock from before its publish until it has pushed the sequence, and the
/// forwarder takes it after receiving a sample, so a sample the forwarder sees is either in
/// the queue already or not the bridge's own: no window in which an own sample slips out.
///
/// Why per forwarder: sequences count within one registration of a topic, and a topic
/// unregistered and registered again may take another entry of the topic table, whose
/// sequences start lower (or higher) than the old registration's. A queue kept by topic name
/// across registrations could hold the old registration's sequences in front of the new
/// one's, and an own sample of the new registration then went back out. So the queue belongs
/// to one forwarder: [`OwnSeqs::attach`] subscribes under the lock and empties the queue, and
/// from then on it holds only what was published after that subscription. That is the
/// forwarder's registration's, or (once that registration is closed and the forwarder drains
/// it) a later registration's, pushed behind all of its own and never received by it. While
/// no forwarder is attached nothing is recorded: the next forwarder subscribes after such a
/// publish and never receives it. What is left: while a forwarder drains a closed
/// registration, a sequence the bridge published into the next one can equal a sequence of a
/// local sample still to be drained, which is then skipped as if it were the bridge's (one
/// sample not forwarded, counted `looped`; never one sent back out). The public API gives no
/// registration identity to tell the two apart.
#[derive(Debug)]
pub(crate) struct OwnSeqs {
    q: Mutex<OwnQueue>,
    /// Bound on the queue: sequences older than a ring lap can no longer be received, and a
    /// lagged forwarder drops them, so the bound is only a guard against a forwarder that
    /// never runs.
    cap: usize,
}

/// The state behind [`OwnSeqs`]'s lock.
#[derive(Debug, Default)]
pub(crate) struct OwnQueue {
    /// The attached forwarder's number, 0 while none is. Written by `attach` (the next
    /// number) and by the forwarder's [`Attached`] when it is dropped (back to 0).
    forwarder: u64,
    /// The last number `attach` gave out.
    attached: u64,
    /// The bridge's own sequences for the attached forwarder, ascending.
    seqs: VecDeque<u64>,
}

impl OwnSeqs {
    pub fn new(cap: usize) -> OwnSeqs {
        OwnSeqs {
            q: Mutex::new(OwnQueue::default()),
            cap,
        }
    }

    /// The queue, for a publish: the caller holds the guard from before its publish until it
    /// has recorded the sequence with [`OwnSeqs::push`].
    pub fn lock(&self) -> MutexGuard<'_, OwnQueue> {
        lock(&self.q)
    }

    /// Records `seq` for the attached forwarder, if there is one.
    pub fn push(&self, q: &mut OwnQueue, seq: u64) {
        if q.forwarder == 0 {
            return;
        }
        q.seqs.push_back(seq);
        while q.seqs.len() > self.cap {
            q.seqs.pop_front();
        }
    }

    /// Runs `subscribe` (a forwarder's subscription to the topic) under the lock, and makes
    /// the queue that forwarder's, empty. The forwarder keeps the [`Attached`] for as long as
    /// it runs (also when `subscribe` failed: dropping it detaches).
    pub fn attach<T>(self: &Arc<Self>, subscribe: impl FnOnce() -> T) -> (T, Attached) {
        let mut q = self.lock();
        let subscribed = subscribe();
        q.attached += 1;
        q.forwarder = q.attached;
        q.seqs.clear();
        let id = q.forwarder;
        drop(q);
        let attached = Attached {
            own: self.clone(),
            id,
        };
        (subscribed, attached)
    }
}

/// A forwarder's hold on its topic's [`OwnSeqs`] (see [`OwnSeqs::attach`]); dropping it
/// detaches the forwarder and forgets its sequences.
#[derive(Debug)]
pub(crate) struct Attached {
    own: Arc<OwnSeqs>,
    id: u64,
}

impl Attached {
    /// The queue, locked, if it is still this forwarder's. Discovery runs one forwarder per
    /// topic at a time, and the next attaches only after this one is dropped: always `Some`
    /// while the forwarder runs.
    fn queue(&self) -> Option<MutexGuard<'_, OwnQueue>> {
        let q = self.own.lock();
        (q.forwarder == self.id).then_some(q)
    }

    /// Whether `seq` is the bridge's own; forgets everything up to it.
    pub fn take(&self, seq: u64) -> bool {
        let Some(mut q) = self.queue() else {
            return false;
        };
        while q.seqs.front().is_some_and(|&s| s < seq) {
            q.seqs.pop_front();
        }
        if q.seqs.front() == Some(&seq) {
            q.seqs.pop_front();
            true
        } else {
            false
        }
    }

    /// Forgets every sequence below `next` and returns how many there were (the own samples
    /// among those a lagging forwarder skipped).
    pub fn drop_below(&self, next: u64) -> u64 {
        let Some(mut q) = self.queue() else {
            return 0;
        };
        let mut n = 0;
        while q.seqs.front().is_some_and(|&s| s < next) {
            q.seqs.pop_front();
            n += 1;
        }
        n
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let mut q = self.own.lock();
        if q.forwarder == self.id {
            q.forwarder = 0;
            q.seqs.clear();
        }
    }
}

/// What the bridge's threads and callbacks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: BridgeConfig,
    pub prefix: String,
    /// This bridge's random id, carried in every header it writes.
    pub instance: u64,
    /// The origin id (FNV-1a of the origin name), carried in every header it writes.
    pub origin: u64,
    pub types: Vec<TypeRule>,
    pub session: zenoh::Session,
    pub stop: AtomicBool,
    pub stats: Registry,
    /// Loop guards, by topic: only for topics both inbound and outbound, while an inbound
    /// topic or a forwarder holds one (see `forget_own`).
    pub own: Mutex<HashMap<String, Arc<OwnSeqs>>>,
    /// The inbound side's region handles and topics; `None` without inbound patterns.
    pub inbound: Option<Mutex<Inbound>>,
    /// Errors that belong to no topic (the region could not be opened, discovery failed).
    pub last_error: Mutex<Option<String>>,
}

impl Shared {
    pub fn stopping(&self) -> bool {
        // Relaxed: a flag polled by loops that also wake on their own every 50 ms; nothing
        // is published through it.
        self.stop.load(Ordering::Relaxed)
    }

    pub fn rule(&self, topic: &str) -> Option<&TypeRule> {
        self.types.iter().find(|r| r.pattern.matches(topic))
    }

    /// The loop guard of `topic`, if the bridge forwards it both ways.
    pub fn own_for(&self, topic: &str, cap: usize) -> Option<Arc<OwnSeqs>> {
        let both = self.config.inbound.iter().any(|p| p.matches(topic))
            && self.config.outbound.iter().any(|p| p.matches(topic));
        both.then(|| {
            lock(&self.own)
                .entry(topic.into())
                .or_insert_with(|| Arc::new(OwnSeqs::new(cap)))
                .clone()
        })
    }

    /// Forgets the loop guard of `topic` if nothing holds it any more (its forwarder ended and
    /// the inbound side has no handle of the topic), so that topics that come and go leave
    /// nothing behind. Clones are made under the map's lock (`own_for`), so a count of one
    /// read under it stays one.
    pub fn forget_own(&self, topic: &str) {
        let mut own = lock(&self.own);
        if own.get(topic).is_some_and(|o| Arc::strong_count(o) == 1) {
            own.remove(topic);
        }
    }

    pub fn error(&self, e: impl core::fmt::Display) {
        *lock(&self.last_error) = Some(e.to_string());
    }
}

/// Builds a [`Bridge`]: the configuration, plus the Rust types of typed topics.
#[derive(Debug)]
pub struct BridgeBuilder {
    config: BridgeConfig,
    types: Vec<TypeRule>,
}

impl BridgeBuilder {
    /// Says that topics matching `pattern` hold values of type `T`. Outbound, such a topic is
    /// subscribed with `subscribe_typed::<T>` (a topic registered with another type, or
    /// untyped, is refused) and `T`'s name, size and alignment travel with every sample.
    /// Inbound, a sample is accepted only if it carries a type that agrees with `T`, and the
    /// topic is registered with `register_typed::<T>`, so local typed subscribers of `T` see
    /// the same typed topic as on the far side. The first rule that matches a topic applies.
    ///
    /// # Errors
    /// [`Error::Config`] for a bad pattern.
    pub fn typed<T: bytemuck::Pod>(mut self, pattern: &str) -> Result<BridgeBuilder> {
        self.types.push(TypeRule::new::<T>(Pattern::new(pattern)?));
        Ok(self)
    }

    /// Opens the Zenoh session and starts bridging.
    ///
    /// The region is opened (or, when there are inbound patterns and it does not exist,
    /// created with [`BridgeConfig::region_shape`]); with outbound patterns only, a missing
    /// region is waited for.
    ///
    /// # Errors
    /// [`Error::Config`] for a configuration [`BridgeConfig::validate`] refuses;
    /// [`Error::Weft`] when the region cannot be opened or created; [`Error::Zenoh`] when the
    /// session cannot be opened (a listen endpoint in use, say) or a key expression declared.
    pub fn start(self) -> Result<Bridge> {
        let config = self.config;
        config.validate()?;
        refuse_what_is_no_region(&config.region)?;
        let zconf = config.zenoh_config()?;
        let inbound = if config.inbound.is_empty() {
            None
        } else {
            Some(Mutex::new(Inbound::open(&config)?))
        };
        let session = zenoh::open(zconf)
            .wait()
            .map_err(|e| Error::zenoh("opening the session", e))?;
        let instance = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let shared = Arc::new(Shared {
            prefix: config.key_prefix(),
            origin: fnv1a(&config.origin_name()),
            instance,
            types: self.types,
            session: session.clone(),
            stop: AtomicBool::new(false),
            stats: Registry::default(),
            own: Mutex::new(HashMap::new()),
            inbound,
            last_error: Mutex::new(None),
            config,
        });
        let mut bridge = Bridge {
            shared: shared.clone(),
            subscribers: Vec::new(),
            discovery: None,
        };
        for (index, p) in shared.config.inbound.iter().enumerate() {
            let key = p.key_expr(&shared.prefix);
            let s = shared.clone();
            let sub = session
                .declare_subscriber(key.clone())
                // Samples this session put itself never come back in (the outbound side of
                // the same bridge and key): the first half of the loop guard.
                .allowed_origin(Locality::Remote)
                // Zenoh calls every subscriber whose key expression matches: the callback
                // knows its pattern, so that only the first matching one handles a sample.
                .callback(move |sample| inbound::on_sample(&s, index, sample))
                .wait()
                .map_err(|e| Error::zenoh(format!("subscribing to {key}"), e))?;
            bridge.subscribers.push(sub);
        }
        if !shared.config.outbound.is_empty() {
            let s = shared.clone();
            bridge.discovery = Some(
                std::thread::Builder::new()
                    .name("weft-zenoh-discovery".into())
                    .spawn(move || outbound::discover(s))
                    .map_err(Error::Thread)?,
            );
        }
        Ok(bridge)
    }
}

/// Forwards topics of a weft region to Zenoh key expressions and back.
///
/// Outbound (`BridgeConfig::outbound`): every topic of the region that matches a pattern is
/// subscribed (found within `discovery_interval_ms` of its registration) and each sample is
/// put to `<key_prefix><topic>`, handed to Zenoh without a copy (the block is released when
/// Zenoh has serialised it). A topic unregistered in the region stops being forwarded once
/// its last sample is out (its entry in [`Bridge::stats`] goes with it), and is found again if
/// it is registered again (also one refused for its type: it is looked at again every round). Inbound (`BridgeConfig::inbound`):
/// every Zenoh sample under `<key_prefix><pattern>` is published into the region as a weft
/// publisher, registering the topic on first use, and again after it was unregistered in
/// the region; a sample whose topic several patterns match is published once.
///
/// Every sample carries a header ([`crate::wire::SampleHeader`]): its sequence number in its
/// source topic (the far side counts a gap as `lagged`: a bridge restart, a lagging bridge, a
/// Zenoh drop), its origin, and for a typed topic the type (the far side refuses a mismatch).
/// A sample bridged in is never bridged back out (see `OwnSeqs` in the source and
/// docs/architecture.md).
///
/// Dropping the bridge (or [`Bridge::close`]) stops it and closes the session. Its threads
/// see the stop within about 50 ms, but a forwarder blocked in a Zenoh put
/// ([`crate::Congestion::Block`]: a peer that does not read) waits until Zenoh gives up on
/// that peer (`transport/link/tx/queue/congestion_control/block/wait_before_close`, 5 s by
/// default), and closing the session waits for Zenoh's own link close: with a stalled peer,
/// dropping takes several seconds (about 12 were measured), bounded by Zenoh's timeouts.
///
/// # Examples
/// Two bridges on loopback, as on two hosts: region `a`'s `/prices/*` arrive in region `b`.
/// ```
/// use std::time::Duration;
/// use weft::pubsub::{Config, Publisher, Subscriber};
/// use weft_zenoh::{Bridge, BridgeConfig};
/// # let (a, b) = (format!("doc-bridge-a-{}", std::process::id()), format!("doc-bridge-b-{}", std::process::id()));
/// # let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
/// let publisher = Publisher::create(&a, &Config::default())?;
/// let prices = publisher.register("/prices/AAPL")?;
///
/// let sender = Bridge::start(
///     BridgeConfig::new(&a)
///         .outbound("/prices/*")?
///         .with_key_prefix("weft/market")
///         .listen(&format!("tcp/127.0.0.1:{port}"))
///         .multicast_scouting(false),
/// )?;
/// let receiver = Bridge::start(
///     BridgeConfig::new(&b)                        // the bridge creates region b
///         .inbound("/prices/*")?
///         .with_key_prefix("weft/market")
///         .connect(&format!("tcp/127.0.0.1:{port}"))
///         .multicast_scouting(false),
/// )?;
/// assert!(sender.wait_matched("/prices/AAPL", Duration::from_secs(10)));
/// publisher.publish(&prices, b"189.5")?;
///
/// // The receiving bridge registers /prices/AAPL in b when the first sample arrives.
/// let deadline = std::time::Instant::now() + Duration::from_secs(10);
/// while receiver.stats().inbound("/prices/AAPL").map_or(0, |t| t.samples) == 0 {
///     assert!(std::time::Instant::now() < deadline, "nothing arrived");
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// let subscriber = Subscriber::connect(&b)?;
/// let mut sub = subscriber.subscribe_with_history("/prices/AAPL", 1)?;
/// assert_eq!(&*sub.try_recv()?, b"189.5");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Bridge {
    shared: Arc<Shared>,
    subscribers: Vec<zenoh::pubsub::Subscriber<()>>,
    discovery: Option<JoinHandle<()>>,
}

/// Refuses a region name that holds something other than a region (a stream, a server, a
/// file that is not weft's, another layout version): nothing could ever be bridged from it.
/// Inbound patterns' publisher refused such a name at the start already; outbound ones waited
/// for a region that could never come, reporting the error in `last_error` only. A region
/// that does not exist yet, or is being created, is waited for.
fn refuse_what_is_no_region(region: &str) -> Result<()> {
    let Ok(info) = weft::shm::object(region) else {
        return Ok(());
    };
    match info.error {
        None | Some(weft::Error::NotReady { .. } | weft::Error::NotFound { .. }) => {}
        Some(e) => return Err(Error::Weft(e)),
    }
    match info.kind {
        Some(kind) if kind != weft::shm::ObjectKind::Region => {
            Err(Error::Weft(weft::Error::WrongKind {
                name: region.into(),
                found: kind.name(),
                expected: weft::shm::ObjectKind::Region.name(),
            }))
        }
        _ => Ok(()),
    }
}

impl Bridge {
    /// Starts a bridge with no typed topics ([`BridgeBuilder::start`]).
    ///
    /// # Errors
    /// As [`BridgeBuilder::start`].
    pub fn start(config: BridgeConfig) -> Result<Bridge> {
        Bridge::builder(config).start()
    }

    /// A builder, to add typed topics ([`BridgeBuilder::typed`]) before starting.
    pub fn builder(config: BridgeConfig) -> BridgeBuilder {
        BridgeBuilder {
            config,
            types: Vec::new(),
        }
    }

    /// The configuration the bridge runs with.
    pub fn config(&self) -> &BridgeConfig {
        &self.shared.config
    }

    /// The Zenoh session's id (as `z_info` and Zenoh's admin space show it).
    pub fn zenoh_id(&self) -> String {
        self.shared.session.zid().to_string()
    }

    /// A snapshot of the counters of every bridged topic.
    pub fn stats(&self) -> BridgeStats {
        self.shared
            .stats
            .snapshot(|t| format!("{}{t}", self.shared.prefix))
    }

    /// The most recent error that belongs to no single topic (the region could not be
    /// opened, the topic table could not be read).
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.last_error).clone()
    }

    /// Waits up to `timeout` until the outbound topic `topic` is being forwarded and Zenoh
    /// knows a subscriber for its key on another session: from then on, what is published
    /// reaches that subscriber. Returns whether it happened in time.
    pub fn wait_matched(&self, topic: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stats().outbound(topic).is_some_and(|t| t.matched) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the bridge and closes the Zenoh session, reporting a failure to close.
    ///
    /// # Errors
    /// [`Error::Zenoh`] if the session does not close cleanly.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        // Relaxed: see `Shared::stopping`.
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.discovery.take() {
            let _ = d.join();
        }
        for s in self.subscribers.drain(..) {
            let _ = s.undeclare().wait();
        }
        if self.shared.session.is_closed() {
            return Ok(());
        }
        self.shared
            .session
            .close()
            .wait()
            .map_err(|e| Error::zenoh("closing the session", e))
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_sequences_are_taken_once_and_in_order() {
        let own = Arc::new(OwnSeqs::new(4));
        let ((), fwd) = own.attach(|| ());
        {
            let mut q = own.lock();
            for s in [3, 5, 6, 9, 10] {
                own.push(&mut q, s);
            }
        }
        // The cap dropped 3.
        assert!(!fwd.take(3));
        assert!(!fwd.take(4));
        assert!(fwd.take(5));
        assert!(!fwd.take(5));
        assert_eq!(fwd.drop_below(10), 2); // 6 and 9
        assert!(fwd.take(10));
        assert!(own.lock().seqs.is_empty());
    }

    #[test]
    fn own_sequences_belong_to_one_forwarder() {
        let own = Arc::new(OwnSeqs::new(16));
        // No forwarder: nothing to record (the next one subscribes after this publish).
        own.push(&mut own.lock(), 7);
        assert!(own.lock().seqs.is_empty());
        // A forwarder of the old registration, which never received sequence 100 (it
        // subscribed after it): gone with the forwarder.
        let ((), old) = own.attach(|| ());
        own.push(&mut own.lock(), 100);
        drop(old);
        assert!(own.lock().seqs.is_empty());
        // The new registration's sequences start at 0, and are the bridge's own.
        let ((), new) = own.attach(|| ());
        own.push(&mut own.lock(), 0);
        own.push(&mut own.lock(), 1);
        assert!(new.take(0));
        // A handle that is no longer attached takes nothing, and its drop detaches nothing.
        let ((), newer) = own.attach(|| ());
        own.push(&mut own.lock(), 2);
        assert!(!new.take(2));
        drop(new);
        assert!(newer.take(2));
    }
}
