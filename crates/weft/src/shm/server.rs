//! A request/response server: a named rendezvous object with a fixed table of connection
//! slots, through which any number of clients (over time) each get their own [`Channel`].
//!
//! A client claims a free slot with one compare-and-swap of the slot's participant row,
//! creates its client-to-server stream, writes its request word and rings the server's
//! doorbell (a futex word); the server opens that stream, creates the server-to-client one and
//! answers in the slot. Layout byte by byte in docs/protocol.md ("Server rendezvous").

use super::channel::{Channel, ChannelOptions, GiveUp, Slot, validate_base_name, wait_live_reader};
use super::inspect::{Peer, PeerState};
use super::liveness::{Claim, ParticipantRow, PeerStatus};
use super::object::{HEADER_SIZE, Object, ObjectKind};
use super::stream::{StreamWriter, remove_if_abandoned, remove_if_unused};
use crate::error::{Error, Result, Role};
use crate::sync::{Arc, AtomicU32, AtomicU64, Ordering};
use crate::sys;
use crate::wait::Deadline;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::sync::OnceLock;

/// Offset of the control line.
const CONTROL_OFFSET: u64 = HEADER_SIZE;
/// Offset of the doorbell line.
const DOORBELL_OFFSET: u64 = CONTROL_OFFSET + 64;
/// Offset of the server's participant row.
const SERVER_ROW: u64 = DOORBELL_OFFSET + 64;
/// Offset of slot 0.
const SLOTS_OFFSET: u64 = 512;
/// Bytes per slot: the client's participant row, then the handshake line.
const SLOT_SIZE: u64 = 128;
/// The most slots a server may have (the slot index is at most three digits in a name).
pub(crate) const MAX_SLOTS: u32 = 256;
/// Set in `answer` when the server refused the request it names.
const REFUSED: u64 = 1 << 63;

/// The generation of a slot's claim whose row `epoch` is `epoch` (not 0: a claim increments
/// it first): the epoch itself for every value a claim reaches by counting, `1 ..= 2^63 - 1`,
/// and for any other (a wrap past `u64::MAX`, a scribbled word) the same count modulo
/// `2^63 - 1`. So a generation is never 0 (`request` 0: never asked) and never has bit 63
/// ([`REFUSED`]), and consecutive claims have different generations: an epoch past that range
/// used to give a request the server answered and its client never recognised, on every
/// later claim of the slot.
fn generation_of(epoch: u64) -> u64 {
    epoch.wrapping_sub(1) % (REFUSED - 1) + 1
}
/// A parked side wakes at least this often to check its peer and its deadline.
const PARK_SLICE: Duration = Duration::from_millis(50);
/// How long `bind` waits for an existing object's creator while deciding whether it is stale.
const STALE_OPEN_TIMEOUT: Duration = Duration::from_millis(250);
/// How long one scan of the slots waits, in all, for requesting clients' streams (created
/// before their requests, so an honest client's is there at the first look): a client that
/// posts a request without its stream costs the server at most this per scan, and never more
/// than the caller's own deadline (nothing for `try_accept`).
const CLIENT_STREAM_TIMEOUT: Duration = Duration::from_millis(200);
/// How many generations of a slot, back from its newest, the sweep of a dead server's
/// rendezvous looks at: a server may hold channels of many earlier clients of a slot (each
/// gone, the slot taken over since), and only names derived from a generation are looked at,
/// one missing name costing one failed open (about 4 us: 256 generations of 64 slots take a
/// rebind about 60 ms, where 4096 took a 256-slot server's 7.6 s). A server that kept more
/// than this many dead clients' channels of one slot leaves the oldest to `weft clean`.
const SWEEP_GENERATIONS: u64 = 256;

/// Fixed at creation: written by the creator before `ready`, read, validated and copied by
/// every opener.
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Control {
    /// Connection slots, `1 ..= MAX_SLOTS`.
    slot_count: AtomicU32,
    /// Bytes per slot; [`SLOT_SIZE`].
    slot_size: AtomicU32,
    /// Offset of slot 0; [`SLOTS_OFFSET`].
    slots_offset: AtomicU64,
    _reserved: [AtomicU64; 6],
}

/// The server's futex word, on its own line because every connecting client writes it.
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Doorbell {
    /// Bumped by a client after it wrote its request; any value.
    word: AtomicU32,
    _reserved: [AtomicU32; 15],
}

/// The handshake half of a slot (the other half is the client's participant row).
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct SlotLine {
    /// Written by the slot's client: the generation it asks to connect with (its row's epoch
    /// after its claim). 0 = never asked. Any value; only compared and printed into names.
    request: AtomicU64,
    /// Written by the server: the generation it answered, with [`REFUSED`] set if it refused.
    answer: AtomicU64,
    /// Bumped by the server after each answer (the client's futex word); any value.
    ack: AtomicU32,
    _pad: AtomicU32,
    _reserved: [AtomicU64; 5],
}

#[cfg(not(loom))]
const _: () = {
    assert!(core::mem::size_of::<Control>() == 64);
    assert!(core::mem::size_of::<Doorbell>() == 64);
    assert!(core::mem::size_of::<SlotLine>() == 64);
};

/// A step of the rendezvous handshake at which a process can be held, so that weft's own
/// crash tests can SIGKILL a real process exactly there (see [`pause_handshake_at`]). Not part
/// of weft's interface.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeStep {
    /// The client has created its stream and not yet posted its request.
    ClientStreamCreated,
    /// The client has seen the server's answer and not yet opened the server's stream.
    ClientAnswered,
    /// The server has created its stream and not yet answered.
    ServerStreamCreated,
}

/// The step to hold at and what to run there, set at most once per process.
static PAUSE: OnceLock<(HandshakeStep, fn())> = OnceLock::new();

/// Makes every thread of this process that reaches `step` call `then` first (which typically
/// reports and blocks, for a test to kill the process). Set once per process: false if a step
/// was already set. For weft's own crash tests; not part of weft's interface.
#[doc(hidden)]
pub fn pause_handshake_at(step: HandshakeStep, then: fn()) -> bool {
    PAUSE.set((step, then)).is_ok()
}

/// Runs the pause set for `step`, if any: one atomic load when none is set.
fn reached(step: HandshakeStep) {
    if let Some((at, then)) = PAUSE.get()
        && *at == step
    {
        then();
    }
}

fn slot_row_offset(i: u32) -> u64 {
    SLOTS_OFFSET + i as u64 * SLOT_SIZE
}

/// `BASE.SLOT.INSTANCE-GENERATION.DIR`: the instance (the rendezvous's creation time) keeps
/// the streams of a server bound again under the same name apart from its predecessor's.
fn stream_name(base: &str, slot: u32, instance: u64, generation: u64, dir: &str) -> String {
    format!("{base}.{slot}.{instance:x}-{generation:x}.{dir}")
}

/// The rendezvous's instance: its creation time, from the object header. Any value is
/// acceptable (it is only printed into names).
fn instance(obj: &Object) -> u64 {
    // Relaxed: written by the creator before `ready` (loaded with Acquire at open).
    obj.header().created_unix_ns.load(Ordering::Relaxed)
}

/// Reads and validates the control line of a rendezvous object: returns the slot count.
/// Hostile input: every value is checked before it sizes or indexes anything.
fn slot_count(obj: &Object) -> Result<u32> {
    // SAFETY: Control is all atomics: valid for any bit pattern, shareable.
    let ctl: &Control = unsafe { obj.at(CONTROL_OFFSET)? };
    // Relaxed: written before `ready`, which Object::open loaded with Acquire; copied here.
    let count = ctl.slot_count.load(Ordering::Relaxed);
    let size = ctl.slot_size.load(Ordering::Relaxed);
    let offset = ctl.slots_offset.load(Ordering::Relaxed);
    if count == 0 || count > MAX_SLOTS {
        return Err(Error::corrupt(
            obj.name(),
            "slot count",
            count as u64,
            "1 to 256",
        ));
    }
    if size as u64 != SLOT_SIZE {
        return Err(Error::corrupt(obj.name(), "slot size", size as u64, "128"));
    }
    if offset != SLOTS_OFFSET {
        return Err(Error::corrupt(obj.name(), "slots offset", offset, "512"));
    }
    let needed = SLOTS_OFFSET + count as u64 * SLOT_SIZE;
    if needed > obj.len() {
        return Err(Error::Truncated {
            name: obj.name().into(),
            size: obj.len(),
            needed,
        });
    }
    Ok(count)
}

fn row(obj: &Object, offset: u64) -> Result<&ParticipantRow> {
    // SAFETY: ParticipantRow is all atomics; `at` checks bounds and alignment.
    unsafe { obj.at(offset) }
}

fn line(obj: &Object, slot: u32) -> Result<&SlotLine> {
    // SAFETY: SlotLine is all atomics; `at` checks bounds and alignment.
    unsafe { obj.at(slot_row_offset(slot) + 64) }
}

fn doorbell(obj: &Object) -> Result<&Doorbell> {
    // SAFETY: Doorbell is all atomics; `at` checks bounds and alignment.
    unsafe { obj.at(DOORBELL_OFFSET) }
}

/// A snapshot of a server's rendezvous, read without taking part in it ([`Server::inspect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The server's name.
    pub name: String,
    /// Connection slots.
    pub slots: u32,
    /// The server's row (index 0).
    pub server: Peer,
    /// The row of every slot a client ever claimed (index = slot + 1).
    pub clients: Vec<Peer>,
}

/// [`Server::inspect`] of an opened rendezvous object.
pub(crate) fn server_info(obj: &Object, liveness: Duration) -> Result<ServerInfo> {
    let slots = slot_count(obj)?;
    let server = Peer::read(0, Some(Role::Server), row(obj, SERVER_ROW)?, liveness);
    let mut clients = Vec::new();
    for i in 0..slots {
        let p = Peer::read(
            i + 1,
            Some(Role::Client),
            row(obj, slot_row_offset(i))?,
            liveness,
        );
        if p.state != PeerState::Absent {
            clients.push(p);
        }
    }
    Ok(ServerInfo {
        name: obj.name().into(),
        slots,
        server,
        clients,
    })
}

/// A client's hold on its slot: released (row marked closed) when its channel drops, after the
/// channel's streams.
#[derive(Debug)]
struct SlotClaim {
    _claim: Claim,
}

impl Slot for SlotClaim {}

/// A request/response server under a name: accepts any number of clients over time, one
/// [`Channel`] each.
///
/// Clients connect with [`Server::connect`]; the server takes them with
/// [`accept`](Server::accept). The server's channels live on their own: serve each on its own
/// thread, or poll them with the `try_` forms. A client that dies frees its slot for the next
/// client at once (its participant row is taken over; the server's next accept also clears
/// what it left), and the server's channel to it reports [`Error::PeerDead`]. A server that
/// dies is reported to every client as [`Error::PeerDead`]; a server bound again under the
/// same name replaces the dead one's object.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use weft::channel::Server;
/// # let name = format!("doc-server-{}", std::process::id());
/// let mut server = Server::bind(&name)?;
/// let n = name.clone();
/// let client = std::thread::spawn(move || -> weft::Result<Vec<u8>> {
///     let mut ch = Server::connect(&n, Duration::from_secs(5))?;
///     let reply = ch.call(b"ping")?;
///     Ok(reply.to_vec())
/// });
/// let mut conn = server.accept_timeout(Duration::from_secs(5))?;
/// let req = conn.recv_request()?;
/// assert_eq!(&*req, b"ping");
/// req.reply(b"pong")?;
/// assert_eq!(client.join().unwrap()?, b"pong");
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug)]
pub struct Server {
    opts: ChannelOptions,
    slots: u32,
    /// Per slot, the last request generation this server answered or set aside.
    answered: Vec<u64>,
    /// Per slot, the last claim generation this server found gone before it asked.
    swept: Vec<u64>,
    /// Where the next scan starts (round robin between slots).
    next: u32,
    reclaimed: u64,
    claim: Option<Claim>,
    obj: Arc<Object>,
}

impl Server {
    /// Binds the server `name` with default options.
    ///
    /// # Errors
    /// [`Error::InvalidName`] (at most [`NAME_MAX`](crate::channel::NAME_MAX) bytes);
    /// [`Error::InUse`] if a live server holds the name; [`Error::NotWeft`],
    /// [`Error::WrongKind`], [`Error::VersionMismatch`], [`Error::Truncated`],
    /// [`Error::Corrupt`] if another file holds the name (it is left alone);
    /// [`Error::Io`] if the OS refuses.
    pub fn bind(name: &str) -> Result<Server> {
        Server::bind_with(name, &ChannelOptions::new())
    }

    /// Binds the server `name` with `opts` (slots, the capacity of the streams this side
    /// writes, the wait strategy of its channels). The rendezvous of a server that died is
    /// replaced.
    ///
    /// # Errors
    /// As [`Server::bind`]; [`Error::InvalidArgument`] for a slot count outside 1 to 256, and
    /// for a stream capacity no stream can have (checked here, not at each connection).
    pub fn bind_with(name: &str, opts: &ChannelOptions) -> Result<Server> {
        validate_base_name(name)?;
        opts.stream().checked()?;
        let slots = opts.slots;
        if slots == 0 || slots > MAX_SLOTS {
            return Err(Error::InvalidArgument {
                what: "slots",
                value: slots as u64,
                expected: "1 to 256",
            });
        }
        let total = SLOTS_OFFSET + slots as u64 * SLOT_SIZE;
        for _ in 0..4 {
            let made = Object::create(name, ObjectKind::Server, total, false, false, |obj| {
                // SAFETY: Control is all atomics.
                let ctl: &Control = unsafe { obj.at(CONTROL_OFFSET)? };
                // Relaxed: published by Object::publish (Release).
                ctl.slot_count.store(slots, Ordering::Relaxed);
                ctl.slot_size.store(SLOT_SIZE as u32, Ordering::Relaxed);
                ctl.slots_offset.store(SLOTS_OFFSET, Ordering::Relaxed);
                Ok(())
            });
            match made {
                Ok(obj) => {
                    let obj = Arc::new(obj);
                    // Claimed before publishing: an opener never sees a ready rendezvous
                    // without its server, so it is never mistaken for a stale one.
                    let claim =
                        match Claim::take(&obj, SERVER_ROW, Role::Server, opts.liveness_timeout) {
                            Ok(c) => c,
                            Err(e) => {
                                let _ = sys::ShmFile::unlink(name);
                                return Err(e);
                            }
                        };
                    obj.publish();
                    return Ok(Server {
                        opts: opts.clone(),
                        slots,
                        answered: alloc::vec![0; slots as usize],
                        swept: alloc::vec![0; slots as usize],
                        next: 0,
                        reclaimed: 0,
                        claim: Some(claim),
                        obj,
                    });
                }
                Err(Error::AlreadyExists { .. }) => Server::remove_stale(name, opts)?,
                Err(e) => return Err(e),
            }
        }
        Err(Error::AlreadyExists { name: name.into() })
    }

    /// An object holds the name: remove it if it is the rendezvous of a server that is gone;
    /// refuse if its server lives or if it is not a valid rendezvous.
    fn remove_stale(name: &str, opts: &ChannelOptions) -> Result<()> {
        let obj = match Object::open(name, ObjectKind::Server, STALE_OPEN_TIMEOUT) {
            Ok(obj) => obj,
            // A creator that died before finishing leaves an object nobody can use.
            Err(Error::NotReady { .. }) => return Object::clear_leftover(name),
            Err(Error::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        let slots = slot_count(&obj)?;
        let server = row(&obj, SERVER_ROW)?;
        if server.status(opts.liveness_timeout) == PeerStatus::Alive {
            return Err(Error::InUse {
                name: name.into(),
                role: Role::Server,
                pid: server.pid(),
            });
        }
        Server::sweep(&obj, slots, opts.liveness_timeout)?;
        obj.unlink_if_same();
        Ok(())
    }

    /// Reads the server `name`'s rendezvous: its slots, and whether the server and each
    /// client that claimed a slot are alive. Read-only: no slot is claimed and nothing is
    /// written.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::NotFound`], the header errors ([`Error::NotWeft`],
    /// [`Error::VersionMismatch`], [`Error::WrongKind`], [`Error::Truncated`],
    /// [`Error::NotReady`]), and [`Error::Corrupt`] for an impossible control line.
    ///
    /// # Examples
    /// ```
    /// use weft::channel::Server;
    /// use weft::shm::PeerState;
    /// # let name = format!("doc-server-inspect-{}", std::process::id());
    /// let _server = Server::bind(&name)?;
    /// let info = Server::inspect(&name)?;
    /// assert_eq!(info.server.state, PeerState::Alive);
    /// assert!(info.clients.is_empty());
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn inspect(name: &str) -> Result<ServerInfo> {
        sys::validate_name(name)?;
        server_info(
            &Object::open(name, ObjectKind::Server, Duration::from_millis(100))?,
            super::inspect::LIVENESS_TIMEOUT,
        )
    }

    /// Removes the abandoned streams of a rendezvous whose server is gone. Its names carry its
    /// instance, which no later server uses, so what a process killed mid-handshake left there
    /// (a dead server's stream its client never opened, a dead client's its server never
    /// removed) would stay forever. Every generation of a slot can have left streams, not
    /// only the newest: the server may have held the channel of an earlier client of the slot
    /// (dead, its row taken over by the next) when it died. So per slot, every generation from
    /// the newest (the larger of the last request and the last claim) back
    /// [`SWEEP_GENERATIONS`] is looked at; a stream is removed only when no live process holds
    /// either of its rows, so a connection still in use is never touched.
    fn sweep(obj: &Object, slots: u32, liveness: Duration) -> Result<()> {
        let base = obj.name();
        for i in 0..slots {
            // Relaxed: only compared and printed into names (any value gives a valid name and
            // the range below is at most SWEEP_GENERATIONS + 1 long whatever the values).
            let request = line(obj, i)?.request.load(Ordering::Relaxed);
            let epoch = row(obj, slot_row_offset(i))?.epoch.load(Ordering::Relaxed);
            let claimed = if epoch == 0 { 0 } else { generation_of(epoch) };
            let newest = request.max(claimed);
            if newest == 0 {
                continue;
            }
            let oldest = newest.saturating_sub(SWEEP_GENERATIONS).max(1);
            for generation in oldest..=newest {
                for dir in ["c2s", "s2c"] {
                    remove_if_unused(
                        &stream_name(base, i, instance(obj), generation, dir),
                        liveness,
                    );
                }
            }
        }
        Ok(())
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        self.obj.name()
    }

    /// Connection slots.
    pub fn slots(&self) -> usize {
        self.slots as usize
    }

    /// Slots held by a live client now (connected, or connecting).
    pub fn slots_in_use(&self) -> usize {
        (0..self.slots)
            .filter(|&i| {
                row(&self.obj, slot_row_offset(i))
                    .map(|r| r.status(self.opts.liveness_timeout) == PeerStatus::Alive)
                    .unwrap_or(false)
            })
            .count()
    }

    /// Streams removed that a client left when it died before it was accepted (after it
    /// asked, or after it created its stream and before it asked).
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed
    }

    /// Waits for the next client and returns the channel to it.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if the rendezvous is impossible; [`Error::Io`] if the OS refuses.
    /// A client that fails the handshake (died, or left an invalid stream) is refused and
    /// skipped, not reported.
    pub fn accept(&mut self) -> Result<Channel> {
        self.accept_inner(Some(Deadline::never()))
    }

    /// As [`Server::accept`], but [`Error::Empty`] if no client is waiting.
    ///
    /// # Errors
    /// As [`Server::accept`], plus [`Error::Empty`].
    pub fn try_accept(&mut self) -> Result<Channel> {
        self.accept_inner(None)
    }

    /// As [`Server::accept`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Server::accept`], plus [`Error::Timeout`].
    pub fn accept_timeout(&mut self, timeout: Duration) -> Result<Channel> {
        self.accept_inner(Some(Deadline::after(timeout)))
    }

    fn accept_inner(&mut self, deadline: Option<Deadline>) -> Result<Channel> {
        loop {
            let bell = doorbell(&self.obj)?;
            // SYNC POINT: Acquire pairs with the Release fetch_add in `connect`: a client whose
            // bump we see has its request visible to the scan below. A bump we miss changes the
            // word before our futex_wait, which then returns at once.
            let seen = bell.word.load(Ordering::Acquire);
            // The time this scan may spend waiting for clients' streams.
            let budget = match deadline.map(|d| d.remaining()) {
                None => Duration::ZERO,
                Some(None) => CLIENT_STREAM_TIMEOUT,
                Some(Some(left)) => left.min(CLIENT_STREAM_TIMEOUT),
            };
            if let Some(ch) = self.scan(Deadline::after(budget))? {
                return Ok(ch);
            }
            let Some(deadline) = deadline else {
                return Err(Error::Empty);
            };
            let slice = match deadline.remaining() {
                Some(Duration::ZERO) => return Err(Error::Timeout),
                Some(left) => left.min(PARK_SLICE),
                None => PARK_SLICE,
            };
            let bell = doorbell(&self.obj)?;
            sys::futex_wait(&bell.word, seen, Some(slice));
        }
    }

    /// One pass over the slots: accepts the first pending request of a live client, sets
    /// aside the requests of dead or departed ones. Waits for requesting clients' streams until
    /// `budget` at most, for all of them together.
    fn scan(&mut self, budget: Deadline) -> Result<Option<Channel>> {
        let liveness = self.opts.liveness_timeout;
        for k in 0..self.slots {
            let i = (self.next + k) % self.slots;
            let client = row(&self.obj, slot_row_offset(i))?;
            let line = line(&self.obj, i)?;
            // SYNC POINT: Acquire pairs with the Release store of `request` in `connect`: the
            // client's stream was created before it.
            let req = line.request.load(Ordering::Acquire);
            if req == 0 || req == self.answered[i as usize] {
                // Nothing asked, but the slot's current claim may have died before it asked.
                // Relaxed: only compared and printed into a name; a stale value is read again
                // at the next scan.
                let epoch = client.epoch.load(Ordering::Relaxed);
                let generation = generation_of(epoch);
                if epoch != 0 && generation != req && generation != self.swept[i as usize] {
                    match client.status(liveness) {
                        // Still connecting: looked at again by the next scan.
                        PeerStatus::Alive => {}
                        PeerStatus::Dead { .. } => {
                            self.swept[i as usize] = generation;
                            self.reclaim_dead_client(i, generation);
                        }
                        // It gave up: its own drop removed its stream.
                        PeerStatus::Closed | PeerStatus::Absent => {
                            self.swept[i as usize] = generation;
                        }
                    }
                }
                continue;
            }
            match client.status(liveness) {
                PeerStatus::Alive => {
                    // Relaxed: the owner increments `epoch` before its Release store of
                    // `state`, which `status` loaded with Acquire. A request that is not the
                    // current owner's generation was left by an earlier owner: the current one
                    // has not asked yet.
                    if generation_of(client.epoch.load(Ordering::Relaxed)) != req {
                        continue;
                    }
                    self.answered[i as usize] = req;
                    let made = self.open_connection(i, req, budget);
                    let answer = if made.is_ok() { req } else { req | REFUSED };
                    // SYNC POINT: Release pairs with the Acquire load of `answer` in
                    // `connect`: the server-to-client stream exists before the answer.
                    line.answer.store(answer, Ordering::Release);
                    // Release: pairs with the client's Acquire load of `ack` before it sleeps.
                    line.ack.fetch_add(1, Ordering::Release);
                    sys::futex_wake_all(&line.ack);
                    if let Ok(ch) = made {
                        self.next = (i + 1) % self.slots;
                        return Ok(Some(ch));
                    }
                }
                PeerStatus::Dead { .. } => {
                    // The client died before it was accepted.
                    self.answered[i as usize] = req;
                    self.reclaim_dead_client(i, req);
                }
                PeerStatus::Closed | PeerStatus::Absent => {
                    // The client gave up (its own drop removed its stream).
                    self.answered[i as usize] = req;
                }
            }
        }
        Ok(None)
    }

    /// Removes the client-to-server stream that generation `generation` of slot `i` left when
    /// its client died (only if that stream's writer is gone indeed), and counts it.
    fn reclaim_dead_client(&mut self, i: u32, generation: u64) {
        let c2s = stream_name(self.name(), i, instance(&self.obj), generation, "c2s");
        if remove_if_abandoned(&c2s, self.opts.liveness_timeout) {
            self.reclaimed += 1;
        }
    }

    fn open_connection(&self, slot: u32, generation: u64, budget: Deadline) -> Result<Channel> {
        let sopts = self.opts.stream();
        let c2s = stream_name(self.name(), slot, instance(&self.obj), generation, "c2s");
        let rx = wait_live_reader(&c2s, &sopts, GiveUp::new(budget, None), None)?;
        let s2c = stream_name(self.name(), slot, instance(&self.obj), generation, "s2c");
        let tx = StreamWriter::create_with(&s2c, &sopts)?;
        reached(HandshakeStep::ServerStreamCreated);
        Ok(Channel::from_parts(tx, rx, Role::Client, None))
    }

    /// Connects to the server `name` as a client, waiting up to `timeout` for the server to
    /// exist, for a free slot and for the server to accept.
    ///
    /// # Errors
    /// [`Error::NotFound`] if no server appeared in time; [`Error::Full`] if every slot stayed
    /// taken; [`Error::Timeout`] if the server did not accept in time; [`Error::PeerDead`]
    /// (role [`Role::Server`]) if the server is dead; [`Error::Closed`] if it refused or
    /// left; [`Error::NotWeft`], [`Error::WrongKind`], [`Error::VersionMismatch`],
    /// [`Error::Truncated`], [`Error::Corrupt`] if the object under the name is not a valid
    /// rendezvous.
    pub fn connect(name: &str, timeout: Duration) -> Result<Channel> {
        Server::connect_with(name, timeout, &ChannelOptions::new())
    }

    /// As [`Server::connect`], with `opts` (the capacity of the stream this side writes, the
    /// wait strategy, the liveness timeout, a cancel flag).
    ///
    /// # Errors
    /// As [`Server::connect`]; a wait that `opts`' cancel flag ended
    /// ([`ChannelOptions::cancelled_by`]) ends with the error of a timeout at that point.
    pub fn connect_with(name: &str, timeout: Duration, opts: &ChannelOptions) -> Result<Channel> {
        validate_base_name(name)?;
        let until = GiveUp::new(Deadline::after(timeout), opts.cancel.as_ref());
        loop {
            match connect_once(name, opts, until) {
                Err(
                    Error::NotFound { .. }
                    | Error::Full
                    | Error::PeerDead {
                        role: Role::Server, ..
                    },
                ) if !until.now() => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }
}

fn connect_once(name: &str, opts: &ChannelOptions, until: GiveUp<'_>) -> Result<Channel> {
    let deadline = until.deadline();
    let liveness = opts.liveness_timeout;
    // A server still initialising the rendezvous is waited for, within the caller's deadline.
    let ready_wait = deadline
        .remaining()
        .unwrap_or(STALE_OPEN_TIMEOUT)
        .min(STALE_OPEN_TIMEOUT);
    let obj = Arc::new(Object::open(name, ObjectKind::Server, ready_wait)?);
    let count = slot_count(&obj)?;
    let server = row(&obj, SERVER_ROW)?;
    match server.status(liveness) {
        PeerStatus::Alive => {}
        PeerStatus::Dead { pid } => {
            return Err(Error::PeerDead {
                name: name.into(),
                role: Role::Server,
                pid,
            });
        }
        PeerStatus::Closed | PeerStatus::Absent => {
            return Err(Error::NotFound { name: name.into() });
        }
    }
    let mut claimed = None;
    for i in 0..count {
        match Claim::take(&obj, slot_row_offset(i), Role::Client, liveness) {
            Ok(c) => {
                claimed = Some((i, c));
                break;
            }
            Err(Error::InUse { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let Some((slot, claim)) = claimed else {
        return Err(Error::Full);
    };
    let client = row(&obj, slot_row_offset(slot))?;
    // Relaxed: our own increment in Claim::take (this thread); the server reads it after
    // the Release store of `state` there.
    let epoch = client.epoch.load(Ordering::Relaxed);
    let generation = generation_of(epoch);
    // The claim before ours (one generation back) may have died between creating its stream
    // and posting its request. No request names that stream and every later name carries a
    // later generation, so it is removed here (if the server's scan has not done so already);
    // only a stream whose writer is dead and that no live reader holds. Its client is gone
    // for good (we took its row over), so the server's stream of that generation, left when
    // the server's channel closed before the client opened it (it is kept for a client that
    // may still come), has no reader to come either: removed unless a live side holds it.
    if let Some(previous) = (epoch != 1).then(|| generation_of(epoch.wrapping_sub(1))) {
        let c2s = stream_name(name, slot, instance(&obj), previous, "c2s");
        remove_if_abandoned(&c2s, liveness);
        let s2c = stream_name(name, slot, instance(&obj), previous, "s2c");
        remove_if_unused(&s2c, liveness);
    }
    let sopts = opts.stream();
    let tx = StreamWriter::create_with(
        &stream_name(name, slot, instance(&obj), generation, "c2s"),
        &sopts,
    )?;
    reached(HandshakeStep::ClientStreamCreated);
    let s2c = stream_name(name, slot, instance(&obj), generation, "s2c");
    let line = line(&obj, slot)?;
    // SYNC POINT: Release pairs with the Acquire load of `request` in Server::scan: our
    // stream exists before the request is seen.
    line.request.store(generation, Ordering::Release);
    let bell = doorbell(&obj)?;
    // SYNC POINT: Release pairs with the Acquire load of the doorbell in accept_inner.
    bell.word.fetch_add(1, Ordering::Release);
    sys::futex_wake_all(&bell.word);
    loop {
        // Acquire: pairs with the Release fetch_add of `ack` in Server::scan. Read before
        // `answer`, so an answer landing after the check changes the word we sleep on.
        let seen = line.ack.load(Ordering::Acquire);
        // SYNC POINT: Acquire pairs with the Release store of `answer` in Server::scan.
        let answer = line.answer.load(Ordering::Acquire);
        if answer & !REFUSED == generation {
            if answer & REFUSED != 0 {
                return Err(Error::Closed);
            }
            break;
        }
        let status = server.status(liveness);
        if status != PeerStatus::Alive {
            // A server that answered and then left has its answer visible now (`status`
            // loaded its row with Acquire after the Release store that closed it): the answer
            // still counts, and so does one a dead server stored in time.
            // Acquire: pairs with the Release store of `answer` in Server::scan.
            if line.answer.load(Ordering::Acquire) & !REFUSED == generation {
                continue;
            }
        }
        match status {
            PeerStatus::Alive => {}
            PeerStatus::Dead { pid } => {
                // It may have died between creating its stream for us and answering. That
                // name is ours alone and no request will name it again: remove it.
                remove_if_abandoned(&s2c, liveness);
                return Err(Error::PeerDead {
                    name: name.into(),
                    role: Role::Server,
                    pid,
                });
            }
            PeerStatus::Closed | PeerStatus::Absent => return Err(Error::Closed),
        }
        if until.now() {
            return Err(Error::Timeout);
        }
        // A cancel flag is looked at after every slice.
        let slice = deadline.remaining().unwrap_or(PARK_SLICE).min(PARK_SLICE);
        sys::futex_wait(&line.ack, seen, Some(slice));
    }
    reached(HandshakeStep::ClientAnswered);
    // The server created its stream before answering; a short grace covers a slow mapping.
    let grace = Deadline::after(
        deadline
            .remaining()
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(500)),
    );
    // The name carries our generation: a closed server stream is still ours to read, and a
    // dead server's is its death, not a stale stream to wait past.
    let grace = GiveUp::new(grace, opts.cancel.as_ref());
    let rx = wait_live_reader(&s2c, &sopts, grace, Some(Role::Server))?;
    Ok(Channel::from_parts(
        tx,
        rx,
        Role::Server,
        Some(alloc::boxed::Box::new(SlotClaim { _claim: claim })),
    ))
}

impl Drop for Server {
    fn drop(&mut self) {
        // Marks the server row closed: connecting clients stop waiting ...
        drop(self.claim.take());
        // ... and new ones find no server. Channels already accepted live on.
        self.obj.unlink_if_same();
    }
}
