//! `weft info NAME`: one object in detail; `weft info REGION/TOPIC`: one topic.

use crate::exit::{Failure, NOT_FOUND, Outcome, UNUSABLE, code_of, from_io};
use crate::ls::{ObjectView, PeerView};
use crate::out::{self, BAD, DIM, GOOD, NAME, Table, cell, state_style};
use serde::Serialize;
use std::io::Write;
use weft::channel::{Server, ServerInfo};
use weft::pubsub::{RegionDetails, TopicDetails, TopicMode};
use weft::shm::{ObjectInfo, ObjectKind, Peer};
use weft::stream::StreamInfo;

/// A topic, as printed in JSON.
#[derive(Debug, Serialize)]
pub struct TopicView {
    /// The topic's path.
    pub name: String,
    /// `blocks`, `latest` or `inline`.
    pub mode: &'static str,
    /// A latest-value topic (`latest`, or an inline topic whose receives get the newest
    /// value).
    pub latest: bool,
    /// An inline topic with one publisher at a time.
    pub single_publisher: bool,
    /// The largest message, in bytes.
    pub max_len: u64,
    /// A typed topic's type (null: untyped bytes).
    pub type_name: Option<String>,
    /// A typed topic's type size (0: untyped).
    pub type_size: u64,
    /// Messages published.
    pub published: u64,
    /// Blocks of the pool the topic's ring holds.
    pub pool_blocks: u64,
    /// Messages subscribers reported lost (lag).
    pub lagged: u64,
    /// Subscriptions open.
    pub subscribers: u64,
    /// Unfinished publishes of dead publishers completed or voided by a survivor.
    pub recovered: u64,
    /// Registered now; `false` for a topic unregistered while subscriptions to it remain
    /// (kept until they close; a registration of the same name takes another entry).
    pub registered: bool,
}

/// The MODE column: the mode, and the topic's kind (`inline latest`, `inline single`,
/// `inline latest single`, `blocks single`, `latest single`), and `(unregistered)` after a
/// topic unregistered while subscriptions keep it.
fn mode_label(t: &TopicDetails) -> String {
    let mut s = String::from(mode_name(t.mode));
    if t.mode == TopicMode::Inline && t.latest {
        s.push_str(" latest");
    }
    if t.single_publisher {
        s.push_str(" single");
    }
    if !t.registered {
        s.push_str(" (unregistered)");
    }
    s
}

/// A mode's name, as `--mode` and the MODE column spell it: `blocks`, `latest`, `inline`.
pub fn mode_name(m: TopicMode) -> &'static str {
    match m {
        TopicMode::Blocks => "blocks",
        TopicMode::Latest => "latest",
        _ => "inline",
    }
}

impl From<&TopicDetails> for TopicView {
    fn from(t: &TopicDetails) -> TopicView {
        TopicView {
            name: t.stats.name.clone(),
            mode: mode_name(t.mode),
            latest: t.latest,
            single_publisher: t.single_publisher,
            max_len: t.max_len,
            type_name: t.type_name.clone(),
            type_size: t.type_size,
            published: t.stats.published,
            pool_blocks: t.stats.pool_blocks,
            lagged: t.stats.lagged,
            subscribers: t.stats.subscribers,
            recovered: t.stats.recovered,
            registered: t.registered,
        }
    }
}

/// A region participant, as printed in JSON.
#[derive(Debug, Serialize)]
struct ParticipantView {
    #[serde(flatten)]
    peer: PeerView,
    /// Block references it holds.
    held: u64,
    /// Entries of its record that name no block of the pool (cleared by its reclaim).
    corrupt_records: u64,
}

/// A region's pool and tables, as printed in JSON.
#[derive(Debug, Serialize)]
struct RegionView {
    blocks: u64,
    free_blocks: u64,
    kept_blocks: u64,
    block_size: u64,
    ring_slots: u64,
    participant_rows: u64,
    participants_alive: u64,
    max_held: u64,
    topic_capacity: u64,
    topics: Vec<TopicView>,
    participants: Vec<ParticipantView>,
}

impl From<&RegionDetails> for RegionView {
    fn from(d: &RegionDetails) -> RegionView {
        RegionView {
            blocks: d.info.blocks,
            free_blocks: d.info.free_blocks,
            kept_blocks: d.info.kept_blocks,
            block_size: d.info.block_size,
            ring_slots: d.info.ring_slots,
            participant_rows: d.participant_rows,
            participants_alive: d.info.participants_alive,
            max_held: d.max_held,
            topic_capacity: d.topic_capacity,
            topics: d.topics.iter().map(TopicView::from).collect(),
            participants: d
                .participants
                .iter()
                .map(|p| ParticipantView {
                    peer: PeerView::from(&p.peer),
                    held: p.held,
                    corrupt_records: p.corrupt_records,
                })
                .collect(),
        }
    }
}

/// A stream, as printed in JSON.
#[derive(Debug, Serialize)]
struct StreamView {
    capacity: u64,
    align: u64,
    max_record_len: u64,
    used: u64,
    writer: PeerView,
    reader: PeerView,
}

/// A server, as printed in JSON.
#[derive(Debug, Serialize)]
struct ServerView {
    slots: u32,
    server: PeerView,
    clients: Vec<PeerView>,
}

/// The JSON document of `weft info NAME`: the listing's fields plus one kind-specific part.
#[derive(Debug, Serialize)]
struct InfoView {
    #[serde(flatten)]
    object: ObjectView,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<RegionView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<StreamView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<ServerView>,
}

/// The JSON document of `weft info REGION/TOPIC`.
#[derive(Debug, Serialize)]
struct TopicInfoView {
    region: String,
    #[serde(flatten)]
    topic: TopicView,
}

/// Runs `weft info NAME`.
pub fn run(args: &crate::cli::InfoArgs, json: bool) -> Outcome {
    if args.name.contains('/') {
        return topic(&args.name, json);
    }
    let obj = readable(&args.name)?;
    let mut view = InfoView {
        object: ObjectView::from(&obj),
        region: None,
        stream: None,
        server: None,
    };
    let mut w = out::stdout();
    match obj.kind {
        Some(ObjectKind::Region) => {
            let d = weft::pubsub::details(&obj.name)?;
            if json {
                view.region = Some(RegionView::from(&d));
                return out::json(&view);
            }
            print_region(&mut w, &obj, &d).map_err(from_io)
        }
        Some(ObjectKind::Stream) => {
            let s = weft::stream::inspect(&obj.name)?;
            if json {
                view.stream = Some(StreamView {
                    capacity: s.capacity,
                    align: s.align,
                    max_record_len: s.max_record_len,
                    used: s.used,
                    writer: PeerView::from(&s.writer),
                    reader: PeerView::from(&s.reader),
                });
                return out::json(&view);
            }
            print_stream(&mut w, &obj, &s).map_err(from_io)
        }
        Some(ObjectKind::Server) => {
            let s = Server::inspect(&obj.name)?;
            if json {
                view.server = Some(ServerView {
                    slots: s.slots,
                    server: PeerView::from(&s.server),
                    clients: s.clients.iter().map(PeerView::from).collect(),
                });
                return out::json(&view);
            }
            print_server(&mut w, &obj, &s).map_err(from_io)
        }
        // Unreadable headers were reported above; a kind this build does not know is too.
        _ => Err(Failure::new(
            UNUSABLE,
            format!("'{}' is of a kind this build does not know", obj.name),
        )),
    }
}

/// The object `name`, if its header is readable (an unusable one, or one still being made, is
/// reported at once, not waited for), with the error's own status: 5 for an unusable object,
/// 1 when the OS refused (the file may be fine).
fn readable(name: &str) -> Result<ObjectInfo, Failure> {
    let obj = weft::shm::object(name)?;
    match &obj.error {
        Some(e) => Err(Failure::new(
            code_of(e),
            format!("'{}' cannot be read: {e}", obj.name),
        )),
        None => Ok(obj),
    }
}

fn topic(target: &str, json: bool) -> Outcome {
    let (region, topic) = weft::pubsub::split_uri(target)?;
    // Looked at as `weft info REGION` does first: `details` would wait for a creator still
    // making the region.
    readable(region)?;
    let d = weft::pubsub::details(region)?;
    // The registered topic of that name, else an unregistered one that subscriptions keep.
    let named = || d.topics.iter().filter(|t| t.stats.name == topic);
    let Some(t) = named().find(|t| t.registered).or_else(|| named().next()) else {
        let names: Vec<&str> = d.topics.iter().map(|t| t.stats.name.as_str()).collect();
        return Err(missing_topic(region, topic, &names, ""));
    };
    if json {
        return out::json(&TopicInfoView {
            region: region.into(),
            topic: TopicView::from(t),
        });
    }
    let mut w = out::stdout();
    (|| {
        writeln!(w, "topic {NAME}{region}{topic}{NAME:#}")?;
        topic_table(&mut w, std::slice::from_ref(t))
    })()
    .map_err(from_io)
}

/// The details of `region` if it is a region that can be read now, read without joining it
/// (a command that joined and then failed would leave as the last participant of a region
/// whose others all died, which removes it); `None` for anything else (no such region, one
/// not ready or unusable), left to the join, which reports it (or waits for it).
pub fn readable_details(region: &str) -> Option<RegionDetails> {
    let obj = weft::shm::object(region).ok()?;
    if obj.error.is_some() || obj.kind != Some(ObjectKind::Region) {
        return None;
    }
    // Ready (no error above): `details` does not wait for a creator.
    weft::pubsub::details(region).ok()
}

/// How many of a region's topics a missing-topic error names.
const TOPICS_NAMED: usize = 10;

/// The failure for a topic a region does not have, listing the topics it has (`names`: the
/// first [`TOPICS_NAMED`], and how many more), with `hint` after them.
pub fn missing_topic(region: &str, topic: &str, names: &[&str], hint: &str) -> Failure {
    let has = match names.len() {
        0 => "it has no topics".to_string(),
        n if n <= TOPICS_NAMED => format!("it has {}", names.join(", ")),
        n => format!(
            "it has {} and {} more; `weft info {region}` lists them",
            names[..TOPICS_NAMED].join(", "),
            n - TOPICS_NAMED
        ),
    };
    Failure::new(
        NOT_FOUND,
        format!("region '{region}' has no topic '{topic}' ({has}{hint})"),
    )
}

fn heading(w: &mut impl Write, obj: &ObjectInfo) -> std::io::Result<()> {
    let kind = obj.kind.map_or("object", |k| k.name());
    let creator = if obj.creator_alive {
        format!("{GOOD}alive{GOOD:#}")
    } else {
        format!("{DIM}exited{DIM:#}")
    };
    writeln!(
        w,
        "{kind} {NAME}{}{NAME:#}  {}, created {} by process {} ({creator})",
        obj.name,
        out::bytes(obj.size),
        out::ago(obj.created_unix_ns),
        obj.creator_pid
    )
}

fn peer_text(p: &Peer) -> String {
    let style = state_style(p.state);
    if p.pid == 0 {
        format!("{style}{}{style:#}", p.state.name())
    } else {
        format!("process {} {style}{}{style:#}", p.pid, p.state.name())
    }
}

fn print_region(w: &mut impl Write, obj: &ObjectInfo, d: &RegionDetails) -> std::io::Result<()> {
    heading(w, obj)?;
    let i = &d.info;
    let used = i.blocks.saturating_sub(i.free_blocks);
    writeln!(
        w,
        "pool          {} blocks of {}, {} in use ({:.1} %; {} kept by publishers for their next loan)",
        i.blocks,
        out::bytes(i.block_size),
        used,
        100.0 * used as f64 / i.blocks.max(1) as f64,
        i.kept_blocks
    )?;
    writeln!(
        w,
        "topics        {} of {}, {} descriptors each",
        d.topics.len(),
        d.topic_capacity,
        i.ring_slots
    )?;
    writeln!(
        w,
        "participants  {} alive of {} rows, each may hold {} blocks",
        i.participants_alive, d.participant_rows, d.max_held
    )?;
    writeln!(w)?;
    if d.topics.is_empty() {
        writeln!(w, "no topics registered")?;
    } else {
        topic_table(w, &d.topics)?;
    }
    writeln!(w)?;
    if d.participants.is_empty() {
        return writeln!(w, "no participants");
    }
    let mut t = Table::new(&["#", "ROLE", ">PID", "STATE", ">HELD"]);
    for p in &d.participants {
        t.row(vec![
            cell(p.peer.index),
            cell(p.peer.role.map_or("-".into(), |r| r.to_string())),
            cell(p.peer.pid),
            cell(p.peer.state.name()).styled(state_style(p.peer.state)),
            match p.corrupt_records {
                0 => cell(p.held),
                n => cell(format!("{} (+{n} corrupt)", p.held)).styled(BAD),
            },
        ]);
    }
    t.print(w)
}

fn topic_table(w: &mut impl Write, topics: &[TopicDetails]) -> std::io::Result<()> {
    let mut t = Table::new(&[
        "TOPIC",
        "MODE",
        "TYPE",
        ">MAX MSG",
        ">PUBLISHED",
        ">BLOCKS",
        ">LAGGED",
        ">SUBSCRIBERS",
        ">RECOVERED",
    ]);
    for d in topics {
        let ty = match &d.type_name {
            // Any bytes a process registered: escaped, not passed to the terminal.
            Some(n) => format!(
                "{} ({})",
                out::escaped(n.as_bytes()),
                out::bytes(d.type_size)
            ),
            None => "bytes".into(),
        };
        t.row(vec![
            cell(&d.stats.name).styled(NAME),
            cell(mode_label(d)),
            cell(ty),
            cell(out::bytes(d.max_len)),
            cell(d.stats.published),
            cell(d.stats.pool_blocks),
            cell(d.stats.lagged),
            cell(d.stats.subscribers),
            cell(d.stats.recovered),
        ]);
    }
    t.print(w)
}

fn print_stream(w: &mut impl Write, obj: &ObjectInfo, s: &StreamInfo) -> std::io::Result<()> {
    heading(w, obj)?;
    writeln!(
        w,
        "capacity  {} (records aligned to {} bytes, at most {} each)",
        out::bytes(s.capacity),
        s.align,
        out::bytes(s.max_record_len)
    )?;
    writeln!(
        w,
        "fill      {} of {} ({:.1} %)",
        out::bytes(s.used),
        out::bytes(s.capacity),
        100.0 * s.used as f64 / s.capacity.max(1) as f64
    )?;
    writeln!(w, "writer    {}", peer_text(&s.writer))?;
    writeln!(w, "reader    {}", peer_text(&s.reader))
}

fn print_server(w: &mut impl Write, obj: &ObjectInfo, s: &ServerInfo) -> std::io::Result<()> {
    heading(w, obj)?;
    let busy = s
        .clients
        .iter()
        .filter(|c| c.state == weft::shm::PeerState::Alive)
        .count();
    writeln!(w, "slots   {} ({busy} held by a live client)", s.slots)?;
    writeln!(w, "server  {}", peer_text(&s.server))?;
    if s.clients.is_empty() {
        return writeln!(w, "no client has connected");
    }
    writeln!(w)?;
    let mut t = Table::new(&[">SLOT", ">PID", "STATE"]);
    for c in &s.clients {
        t.row(vec![
            cell(c.index - 1),
            cell(c.pid),
            cell(c.state.name()).styled(state_style(c.state)),
        ]);
    }
    t.print(w)
}
