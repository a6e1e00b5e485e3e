//! Read-only views of a region for tools (`weft info`, `weft ls`, `weft clean`): topics with
//! their mode, type and statistics, and every participant with its role, liveness and the
//! blocks it holds; and the reclaim of dead participants without joining.

use super::layout::{
    EXCLUSIVE, INLINE_LATEST, ROLE_DEAD_PUBLISHER, ROLE_PUBLISHER, ROLE_SUBSCRIBER, TOPIC_READY,
};
use super::region::Region;
use super::{
    Config, RegionInfo, TopicMode, TopicSpec, TopicStats, open_region, region_info, topic_stats,
};
use crate::error::{Result, Role};
use crate::shm::inspect::{Peer, PeerState};
use crate::shm::object::Object;
use crate::sync::{Arc, Ordering};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

/// One topic of a region, as [`details`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDetails {
    /// Published, lagged, subscribers, recovered.
    pub stats: TopicStats,
    /// How the topic carries its messages.
    pub mode: TopicMode,
    /// The largest message the topic carries, in bytes.
    pub max_len: u64,
    /// A typed topic's type name (cut to 64 bytes); `None` for untyped bytes.
    pub type_name: Option<String>,
    /// A typed topic's type size in bytes; 0 for untyped bytes.
    pub type_size: u64,
    /// A latest-value topic: [`TopicMode::Latest`], or an inline topic registered with
    /// [`TopicSpec::latest`] (a receive gets the newest value).
    pub latest: bool,
    /// A topic with one publisher at a time ([`TopicSpec::single_publisher`]), of any mode.
    pub single_publisher: bool,
    /// Registered now. `false` for a topic that was unregistered while subscriptions to it
    /// remained: it stays in its entry, closed to publishers, until the last of them closes
    /// (or is reclaimed from a dead subscriber), and a registration of the same name meanwhile
    /// takes another entry, so that a name can appear twice, once registered.
    pub registered: bool,
}

impl TopicDetails {
    /// The spec that joins this topic as it is: its mode and, for an inline topic, its message
    /// size and latest-value and single-publisher kind (untyped: a typed topic is joined with
    /// its type by the caller).
    ///
    /// # Examples
    /// ```
    /// use weft::pubsub::{Config, Publisher, TopicSpec, details};
    /// # let region = format!("doc-spec-{}", std::process::id());
    /// let a = Publisher::create(&region, &Config::default())?;
    /// let _t = a.register_spec("/level", &TopicSpec::inline(8).latest())?;
    /// let d = details(&region)?;
    /// let b = Publisher::open(&region)?;
    /// let t = b.register_spec("/level", &d.topics[0].spec())?;
    /// b.publish(&t, &3u64.to_ne_bytes())?;
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn spec(&self) -> TopicSpec {
        super::joining_spec(
            self.mode,
            self.max_len as usize,
            self.latest,
            self.single_publisher,
        )
    }
}

/// One participant row of a region that was ever claimed, as [`details`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// Index, role, pid and liveness. A publisher whose death was already reclaimed shows as
    /// a closed publisher.
    pub peer: Peer,
    /// Block references it holds now (samples and loans) according to its record.
    pub held: u64,
    /// Entries of its record that name no block of the pool (a scribbling peer's values):
    /// not counted in `held`; the reclaim of the participant, once it is dead, clears them.
    pub corrupt_records: u64,
}

/// What [`details`] reports about a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionDetails {
    /// The region's name.
    pub name: String,
    /// Pool and participants alive.
    pub info: RegionInfo,
    /// Rows in the participants table.
    pub participant_rows: u64,
    /// Block references one participant may hold at once.
    pub max_held: u64,
    /// Topics the region can hold.
    pub topic_capacity: u64,
    /// Every registered topic.
    pub topics: Vec<TopicDetails>,
    /// Every participant row ever claimed (rows never used are left out).
    pub participants: Vec<Participant>,
}

/// Reads a region as [`inspect`](super::inspect) does, and adds each topic's mode and type
/// and each participant's role, liveness and holdings. Read-only: no row is taken and nothing
/// the participants use is written.
///
/// # Errors
/// As [`Subscriber::connect`](super::Subscriber::connect). A participant's record entry
/// that names a block outside the pool is no error: it is counted in
/// [`Participant::corrupt_records`].
///
/// # Examples
/// ```
/// use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, details};
/// use weft::shm::PeerState;
/// use weft::Role;
/// # let region = format!("doc-details-{}", std::process::id());
/// let publisher = Publisher::create(&region, &Config::default())?;
/// let topic = publisher.register_with("/state", TopicMode::Latest)?;
/// let subscriber = Subscriber::connect(&region)?;
/// let mut sub = subscriber.subscribe("/state")?;
/// publisher.publish(&topic, b"on")?;
/// let sample = sub.try_recv()?;                      // held: one block reference
///
/// let d = details(&region)?;
/// assert_eq!(d.topics[0].mode, TopicMode::Latest);
/// assert!(d.topics[0].latest && !d.topics[0].single_publisher);
/// assert_eq!(d.topics[0].stats.subscribers, 1);
/// assert_eq!(d.participants.len(), 2);
/// let sub_row = d.participants.iter().find(|p| p.peer.role == Some(Role::Subscriber)).unwrap();
/// assert_eq!((sub_row.peer.state, sub_row.held), (PeerState::Alive, 1));
/// # drop(sample);
/// # Ok::<(), weft::Error>(())
/// ```
pub fn details(region: &str) -> Result<RegionDetails> {
    let r = open_region(region, &Config::default())?;
    let mut topics = Vec::new();
    let subscribers = r.subscription_counts();
    for i in 0..r.geo.topics as u32 {
        // Each entry as one registration left it (topics may be registered meanwhile).
        let entry = r.stable(i, || {
            let Some((name, mode)) = r.topic_name(i)? else {
                return Ok(None);
            };
            let mode = super::mode_of(mode);
            let ty = r.topic_type(i)?;
            // An inline topic carries messages of its size in ring slots, not blocks (typed
            // or not: the entry records the size either way).
            let max_len = match mode {
                TopicMode::Inline => r.inline_fields(i)?.1 as u64,
                _ => r.geo.block_size,
            };
            let flags = r.topic_flags(i)?;
            Ok(Some(TopicDetails {
                stats: topic_stats(&r, i, name, subscribers[i as usize])?,
                mode,
                max_len,
                type_size: ty.as_ref().map_or(0, |t| t.size),
                type_name: ty.map(|t| t.name),
                latest: mode == TopicMode::Latest
                    || (mode == TopicMode::Inline && flags & INLINE_LATEST != 0),
                single_publisher: flags & EXCLUSIVE != 0,
                registered: r.topic_state(i)? == TOPIC_READY,
            }))
        })?;
        topics.extend(entry.map(|(t, _)| t));
    }
    Ok(RegionDetails {
        name: region.into(),
        info: region_info(&r),
        participant_rows: r.geo.participants,
        max_held: r.geo.held,
        topic_capacity: r.geo.topics,
        topics,
        participants: participants(&r)?,
    })
}

/// Reclaims what every dead participant of `region` held (its unfinished publish is completed
/// or voided, its block references released) without joining the region: each dead row is
/// taken over for the reclaim and left closed. Live participants are not touched. Returns the
/// number of block references released.
///
/// # Errors
/// As [`details`].
pub fn reclaim(region: &str) -> Result<u64> {
    open_region(region, &Config::default())?.reclaim_dead()
}

fn participants(r: &Region) -> Result<Vec<Participant>> {
    let mut out = Vec::new();
    for i in 0..r.geo.participants as u32 {
        let peer = Peer::read(i, None, r.row(i)?, r.liveness);
        if peer.state == PeerState::Absent {
            continue;
        }
        // Relaxed: display only; any value is accepted (an unknown one shows as no role).
        let role = match r.ext(i)?.role.load(Ordering::Relaxed) {
            ROLE_PUBLISHER | ROLE_DEAD_PUBLISHER => Some(Role::Publisher),
            ROLE_SUBSCRIBER => Some(Role::Subscriber),
            _ => None,
        };
        let (mut held, mut corrupt_records) = (0, 0);
        for h in r.holdings(i)? {
            // Relaxed: a snapshot for display; hostile input, checked against the pool.
            let v = h.load(Ordering::Relaxed);
            // Entries that hold (or may hold) a block count as held; subscription records
            // and reserved entries hold none.
            let block = match crate::pubsub::pool::entry(v) {
                crate::pubsub::pool::Entry::Held(b)
                | crate::pubsub::pool::Entry::Taking(b)
                | crate::pubsub::pool::Entry::Done(b) => Some(b),
                _ => None,
            };
            // One participant's bad record is that participant's, not the region's: counted,
            // so that the region can still be listed, inspected and cleaned (the record's
            // reclaim clears it).
            match block {
                Some(b) if b as u64 >= r.geo.blocks => corrupt_records += 1,
                Some(_) => held += 1,
                None => {}
            }
        }
        out.push(Participant {
            peer: Peer { role, ..peer },
            held,
            corrupt_records,
        });
    }
    Ok(out)
}

/// The participants of an opened region object, for [`crate::shm::objects`].
pub(crate) fn region_peers(obj: &Arc<Object>, liveness: Duration) -> Result<Vec<Peer>> {
    // `attach` validates the configuration and the topic table before anything is indexed.
    let r = Region::attach(obj.clone(), liveness)?;
    Ok(participants(&r)?.into_iter().map(|p| p.peer).collect())
}
