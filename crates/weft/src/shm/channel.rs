//! Request/response between two processes: a [`Channel`] is two byte streams, one per
//! direction, with an optional 8-byte correlation id on every record.
//!
//! A channel is made either one-to-one ([`Channel::listen`] / [`Channel::connect`] under one
//! name) or through a [`Server`](super::server::Server), which hands one channel to each
//! client. Both ends are zero-copy both ways: reserve room in the outgoing stream, write in
//! place, commit; borrow the incoming record in place, released on drop. Layouts and naming
//! in docs/protocol.md ("Channel" and "Server rendezvous").

use super::liveness::PeerStatus;
use super::stream::{
    ReadGrant, StreamOptions, StreamReader, StreamWriter, WriteGrant, remove_if_abandoned,
};
use crate::WaitStrategy;
use crate::error::{Error, Result, Role};
use crate::sys;
use crate::wait::Deadline;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes of the correlation id in front of every request and reply.
pub(crate) const ID_LEN: usize = 8;
/// The longest suffix a channel adds to its base name: `.255.` + two 16-digit hex numbers
/// joined by `-` + `.c2s`.
const SUFFIX_MAX: usize = 42;
/// The longest base name of a channel or server: object names are at most 200 bytes and the
/// per-direction suffix (`.SLOT.INSTANCE-GENERATION.c2s`) takes up to 42 of them.
pub const NAME_MAX: usize = 200 - SUFFIX_MAX;

/// Checks a channel or server base name: a valid object name that leaves room for the suffix.
pub(crate) fn validate_base_name(name: &str) -> Result<()> {
    sys::validate_name(name)?;
    if name.len() > NAME_MAX {
        return Err(Error::InvalidName {
            name: name.into(),
            reason: "a channel or server name is at most 158 bytes (the rest is for the stream suffixes)",
        });
    }
    Ok(())
}

/// How channels are made and how they wait.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use weft::channel::ChannelOptions;
/// use weft::WaitStrategy;
/// let opts = ChannelOptions::new()
///     .capacity(1 << 20)
///     .wait(WaitStrategy::BusySpin)
///     .liveness_timeout(Duration::from_millis(500))
///     .slots(16);
/// assert_eq!(opts.capacity_bytes(), 1 << 20);
/// ```
#[derive(Debug, Clone)]
pub struct ChannelOptions {
    pub(crate) capacity: usize,
    pub(crate) wait: WaitStrategy,
    pub(crate) liveness_timeout: Duration,
    pub(crate) slots: u32,
    /// Set by the caller to end a `listen` or `connect` early ([`ChannelOptions::cancelled_by`]).
    pub(crate) cancel: Option<Arc<AtomicBool>>,
}

impl Default for ChannelOptions {
    fn default() -> ChannelOptions {
        ChannelOptions::new()
    }
}

impl ChannelOptions {
    /// 64 KiB per direction, [`WaitStrategy::Adaptive`], a 1 s liveness timeout, 64 server
    /// slots.
    pub fn new() -> ChannelOptions {
        ChannelOptions {
            capacity: 64 << 10,
            wait: WaitStrategy::Adaptive,
            liveness_timeout: Duration::from_secs(1),
            slots: 64,
            cancel: None,
        }
    }

    /// Data bytes of the stream this side writes (each side sizes its own outgoing stream).
    /// The largest message is about half of it.
    pub fn capacity(mut self, bytes: usize) -> ChannelOptions {
        self.capacity = bytes;
        self
    }

    /// The capacity set.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity
    }

    /// How blocking calls wait.
    pub fn wait(mut self, wait: WaitStrategy) -> ChannelOptions {
        self.wait = wait;
        self
    }

    /// How long a peer that /proc cannot see (another pid namespace) may go without a
    /// heartbeat before it is reported dead.
    pub fn liveness_timeout(mut self, timeout: Duration) -> ChannelOptions {
        self.liveness_timeout = timeout;
        self
    }

    /// Connection slots of a server (1 to 256): how many clients may be connected at once.
    /// Used by [`Server::bind_with`](crate::channel::Server::bind_with) only.
    pub fn slots(mut self, slots: u32) -> ChannelOptions {
        self.slots = slots;
        self
    }

    /// A flag that ends the wait of [`Channel::listen_with`], [`Channel::connect_with`] and
    /// [`Server::connect_with`](crate::channel::Server::connect_with) early: once another thread
    /// sets it, the call gives up at its next look (about every millisecond) just as if its timeout
    /// had passed there: with the error a timeout gives there ([`Error::Timeout`] while it waits
    /// for its peer), and it removes what it made, so that the name is free at once for the next
    /// `listen` (or the server slot for the next client). A call that does not have to wait (its
    /// peer is already there) is not stopped by it, as a zero timeout would not stop it. Not used
    /// by a [`Server`](crate::channel::Server)'s own calls. The flag is not reset: clear it before
    /// reusing the options.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::time::{Duration, Instant};
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-cancelled-by-{}", std::process::id());
    /// let stop = Arc::new(AtomicBool::new(false));
    /// let opts = ChannelOptions::new().cancelled_by(stop.clone());
    /// let n = name.clone();
    /// let minute = Duration::from_secs(60);
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, minute, &opts));
    /// std::thread::sleep(Duration::from_millis(50));
    /// let asked = Instant::now();
    /// stop.store(true, Ordering::Relaxed);
    /// assert!(matches!(listener.join().unwrap(), Err(Error::Timeout)));
    /// assert!(asked.elapsed() < Duration::from_secs(1));
    /// // Nothing is left under the name: a new listen takes it at once.
    /// let t = Duration::from_secs(5);
    /// let n = name.clone();
    /// let listener = std::thread::spawn(move || Channel::listen(&n, t));
    /// let mut client = Channel::connect(&name, t)?;
    /// client.send(b"hello")?;
    /// let mut server = listener.join().unwrap()?;
    /// assert_eq!(&*server.recv()?, b"hello");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn cancelled_by(mut self, flag: Arc<AtomicBool>) -> ChannelOptions {
        self.cancel = Some(flag);
        self
    }

    pub(crate) fn stream(&self) -> StreamOptions {
        StreamOptions::new(self.capacity)
            .wait(self.wait)
            .liveness_timeout(self.liveness_timeout)
            .take_over(false)
    }
}

/// The correlation id of a request: replies carry it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// The ids of the requests in flight from one channel.
#[derive(Debug, Default)]
struct InFlight(Vec<u64>);

impl InFlight {
    fn insert(&mut self, id: u64) {
        self.0.push(id);
    }

    fn contains(&self, id: &u64) -> bool {
        self.0.contains(id)
    }

    /// Removes `id`; false if it was not in flight.
    fn remove(&mut self, id: &u64) -> bool {
        match self.0.iter().position(|x| x == id) {
            Some(i) => {
                self.0.swap_remove(i);
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// `e`, the error a wait for the reply to `id` ended with; a timeout forgets `id` when the
/// caller asked for that (`Channel::call_timeout_forget`), other errors leave it in flight.
fn gave_up(forgotten: &mut InFlight, forget: bool, id: u64, e: Error) -> Error {
    if forget && matches!(e, Error::Timeout) {
        forgotten.insert(id);
    }
    e
}

/// Renames a stream's PeerDead (Writer / Reader) after the channel's peer (Server / Client).
fn as_peer(e: Error, role: Role) -> Error {
    match e {
        Error::PeerDead { name, pid, .. } => Error::PeerDead { name, role, pid },
        e => e,
    }
}

fn short_frame(name: &str, len: usize) -> Error {
    Error::corrupt(
        name,
        "frame length",
        len as u64,
        "at least the 8-byte correlation id",
    )
}

fn frame_id(bytes: &[u8]) -> Option<u64> {
    let head: [u8; ID_LEN] = bytes.get(..ID_LEN)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

/// Cleans up the slot of a server connection when the channel drops (after its streams).
pub(crate) trait Slot: core::fmt::Debug + Send {}

/// One end of a request/response connection: an outgoing and an incoming stream.
///
/// Raw records go with [`send`](Channel::send) / [`reserve`](Channel::reserve) and
/// [`recv`](Channel::recv). Requests and replies carry an 8-byte correlation id in front:
/// the client side uses [`call`](Channel::call), or [`send_request`](Channel::send_request)
/// and [`wait_reply`](Channel::wait_reply) for several calls in flight; the serving side uses
/// [`recv_request`](Channel::recv_request) and [`Request::reply`] (or
/// [`reply`](Channel::reply) later, in any order). Do not mix raw records and framed ones on
/// one channel.
///
/// Dropping a channel closes both directions: the peer drains what was sent and then gets
/// [`Error::Closed`]. A peer that dies is reported as [`Error::PeerDead`] (with the peer's role,
/// [`Role::Server`] or [`Role::Client`]) once everything it sent has been received.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use weft::channel::Channel;
/// # let name = format!("doc-channel-{}", std::process::id());
/// let t = Duration::from_secs(5);
/// let n = name.clone();
/// let server = std::thread::spawn(move || -> weft::Result<()> {
///     let mut ch = Channel::listen(&n, t)?;
///     let req = ch.recv_request()?;
///     let answer = req.len() as u64;
///     req.reply(&answer.to_le_bytes())
/// });
/// let mut client = Channel::connect(&name, t)?;
/// let reply = client.call(b"how long is this?")?;
/// assert_eq!(&*reply, &17u64.to_le_bytes());
/// # drop(reply);
/// # server.join().unwrap()?;
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug)]
pub struct Channel {
    tx: StreamWriter,
    rx: StreamReader,
    /// The incoming stream's name, for errors about what it carried.
    rx_name: String,
    /// Requests sent and not yet answered (the client side). A vector, not a hash set: it
    /// holds one id on the common path (one call at a time), where a linear search is a compare
    /// and hashing would cost more than the rest of the call.
    outstanding: InFlight,
    /// Replies read while waiting for another id, in arrival order.
    stash: VecDeque<(u64, Vec<u8>)>,
    /// Requests still in `outstanding` whose callers gave up on them
    /// ([`Channel::call_timeout_forget`]): their replies are dropped by the reply wait that
    /// reads them (a raw `recv` knows nothing of calls and returns them as records).
    forgotten: InFlight,
    next_id: u64,
    peer: Role,
    /// A server connection's slot claim; dropped after both streams (field order).
    _slot: Option<alloc::boxed::Box<dyn Slot>>,
}

/// When a wait of a one-to-one `listen` or `connect` gives up: at its deadline, or once the
/// caller's cancel flag is set ([`ChannelOptions::cancelled_by`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GiveUp<'a> {
    deadline: Deadline,
    cancel: Option<&'a AtomicBool>,
}

/// How long one look at a stream still being made waits for its creator when the wait can be
/// cancelled: the flag is looked at again at least this often.
const CANCEL_LOOK: Duration = Duration::from_millis(20);

impl<'a> GiveUp<'a> {
    pub(crate) fn new(deadline: Deadline, cancel: Option<&'a Arc<AtomicBool>>) -> GiveUp<'a> {
        GiveUp {
            deadline,
            cancel: cancel.map(|c| &**c),
        }
    }

    /// The deadline alone.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// Whether to give up now.
    pub(crate) fn now(&self) -> bool {
        // Relaxed: the flag publishes nothing; a load that misses a fresh store only makes the
        // call wait one more round (about a millisecond) before it sees it.
        self.deadline.expired() || self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// `opts` with an open that waits no longer than this wait may (and, when it can be
    /// cancelled, at most [`CANCEL_LOOK`]) for a stream's creator to finish it.
    fn open_opts(&self, opts: &StreamOptions) -> StreamOptions {
        let within = opts.clone().open_within(self.deadline);
        match self.cancel {
            Some(_) => within.open_within(Deadline::after(CANCEL_LOOK)),
            None => within,
        }
    }
}

/// Opens the reader of `name`, waiting until `deadline` for it to exist and for its writer.
///
/// `peer` None: the name is used again by later connections (a one-to-one channel's), so a
/// stream that already had a reader belongs to an earlier connection and is never joined
/// (left to its owners, removed here if nobody can use it any more), and a stream whose writer
/// already died or closed is stale, left by an earlier process: it is dropped (which removes
/// it) and waited for anew. `peer` Some(role): the name carries this connection's generation,
/// so only this connection's peer can have made it: a closed writer's stream is accepted (what
/// it sent is read, then `Closed`), and a dead writer is the peer's death, `PeerDead` with
/// `role` (the stream is dropped, which removes it). A stream still being made is waited for
/// (no longer than `until` allows), and removed if its creator is known to be gone. Gives up
/// as `until` says ([`Error::Timeout`]).
pub(crate) fn wait_live_reader(
    name: &str,
    opts: &StreamOptions,
    until: GiveUp<'_>,
    peer: Option<Role>,
) -> Result<StreamReader> {
    loop {
        if let Some(r) = look_for_reader(name, opts, until, peer, None)? {
            return Ok(r);
        }
        if until.now() {
            return Err(Error::Timeout);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// One look of [`wait_live_reader`]: the reader of `name` if it can be had now, `None` to look
/// again. `own` (with `peer` None): this side's stream of the same one-to-one channel, whose
/// reader must be unclaimed or the process that writes `name` (see
/// [`StreamReader::open_unread`]).
fn look_for_reader(
    name: &str,
    opts: &StreamOptions,
    until: GiveUp<'_>,
    peer: Option<Role>,
    own: Option<&StreamWriter>,
) -> Result<Option<StreamReader>> {
    let within = until.open_opts(opts);
    let opened = match peer {
        None => StreamReader::open_unread(name, &within, own),
        Some(_) => StreamReader::open_with(name, &within).map(Some),
    };
    match opened {
        Ok(Some(r)) => match (r.writer_status(), peer) {
            (PeerStatus::Alive, _) | (PeerStatus::Closed, Some(_)) => return Ok(Some(r)),
            // The writer let go (or died) after `open_unread` looked and before its status was
            // read here, and it is the process that read `own`: this connection's peer, which
            // paired, sent and closed in between. Its stream is this connection's (as in
            // `pair`'s look after `reader_gone`): what it sent is read, then `Closed` (or
            // `PeerDead`). Dropping it as stale removed it with the records in it, and this
            // side waited out its timeout for a peer that had come and gone.
            (PeerStatus::Closed | PeerStatus::Dead { .. }, None)
                if own.is_some_and(|o| {
                    let reader = o.reader_identity();
                    reader != 0 && reader == r.writer_identity()
                }) =>
            {
                return Ok(Some(r));
            }
            (PeerStatus::Dead { pid }, Some(role)) => {
                drop(r);
                return Err(Error::PeerDead {
                    name: name.into(),
                    role,
                    pid,
                });
            }
            _ => drop(r),
        },
        Ok(None) | Err(Error::NotReady { .. }) => {
            remove_if_abandoned(name, opts.liveness());
        }
        Err(Error::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    Ok(None)
}

/// One side of a one-to-one channel: creates `tx_name` (written by this side) and waits, until
/// `until` gives up, for the peer's `rx_name`; `peer` is the other side's role.
///
/// Both names are used again by every later pair, so the wait keeps the two streams of one
/// connection together. On every round, a reader that came to this side's stream and then let
/// go or died belonged to a connection that is over: nobody will read this stream again, so it
/// is dropped (which removes it) and made anew for the next peer, within the same `until`.
/// And the peer's stream is taken only while this side's reader row is unclaimed or held by
/// that stream's writer. Without this, a peer that opened this side's stream and died before
/// this side looked at its own left this side to pair the next peer's stream with the dead
/// one's, while the next peer, which could never open it, timed out.
fn pair(
    tx_name: &str,
    rx_name: &str,
    opts: &StreamOptions,
    until: GiveUp<'_>,
    peer: Role,
) -> Result<Channel> {
    let mut tx = create_own_stream(tx_name, opts, until)?;
    loop {
        if tx.reader_gone() {
            // The reader may be this connection's peer, which paired with us, sent and closed
            // (or died) before we looked: then its stream, unread and written by the process
            // that read ours, is this connection's, and what it sent is read, then `Closed` (or
            // `PeerDead`). Recreating ours dropped that stream as stale and lost the message
            // the peer's `send` had returned `Ok` for.
            let within = until.open_opts(opts);
            match StreamReader::open_unread_written_by(rx_name, &within, tx.reader_identity()) {
                Ok(Some(rx)) => return Ok(Channel::from_parts(tx, rx, peer, None)),
                Ok(None) | Err(Error::NotFound { .. } | Error::NotReady { .. }) => {}
                Err(e) => return Err(e),
            }
            drop(tx);
            tx = create_own_stream(tx_name, opts, until)?;
        }
        if let Some(rx) = look_for_reader(rx_name, opts, until, None, Some(&tx))? {
            return Ok(Channel::from_parts(tx, rx, peer, None));
        }
        if until.now() {
            return Err(Error::Timeout);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Creates the stream `name` that this side of a one-to-one channel writes, waiting (until
/// `until` gives up) while the live peer of an earlier connection under the name still reads
/// it (it lets go once it notices that its own peer is gone, or closes its channel). A stream
/// is never taken over from that reader: that would join the new connection to the old one.
///
/// # Errors
/// [`Error::InUse`] with [`Role::Writer`] at once if a live process writes the stream, with
/// [`Role::Reader`] if the earlier connection's reader still holds it when `until` gives up;
/// the errors of [`StreamWriter::create_with`].
fn create_own_stream(name: &str, opts: &StreamOptions, until: GiveUp<'_>) -> Result<StreamWriter> {
    loop {
        match StreamWriter::create_with(name, opts) {
            Err(Error::InUse {
                role: Role::Reader, ..
            }) if !until.now() => std::thread::sleep(Duration::from_millis(1)),
            other => return other,
        }
    }
}

impl Channel {
    pub(crate) fn from_parts(
        mut tx: StreamWriter,
        rx: StreamReader,
        peer: Role,
        slot: Option<alloc::boxed::Box<dyn Slot>>,
    ) -> Channel {
        // A peer that dies (or closes) before it opened our stream never will: a wait for room
        // in it ends with the peer's death instead of going on for good.
        tx.read_by_writer_of(&rx);
        let rx_name = rx.name().into();
        Channel {
            tx,
            rx,
            rx_name,
            outstanding: InFlight::default(),
            stash: VecDeque::new(),
            forgotten: InFlight::default(),
            next_id: 1,
            peer,
            _slot: slot,
        }
    }

    /// The listening end of the one-to-one channel `name`: creates `NAME.s2c` (written by this
    /// side) and waits up to `timeout` for a connector's `NAME.c2s`.
    ///
    /// # Errors
    /// [`Error::InvalidName`] (at most [`NAME_MAX`] bytes); [`Error::InUse`] if a live process
    /// listens under the name; [`Error::Timeout`] if no connector came; the errors of
    /// [`StreamWriter::create`] and [`StreamReader::open`].
    pub fn listen(name: &str, timeout: Duration) -> Result<Channel> {
        Channel::listen_with(name, timeout, &ChannelOptions::new())
    }

    /// As [`Channel::listen`], with `opts`.
    ///
    /// # Errors
    /// As [`Channel::listen`]; a wait that `opts`' cancel flag ended
    /// ([`ChannelOptions::cancelled_by`]) ends with the error of a timeout at that point.
    pub fn listen_with(name: &str, timeout: Duration, opts: &ChannelOptions) -> Result<Channel> {
        validate_base_name(name)?;
        let until = GiveUp::new(Deadline::after(timeout), opts.cancel.as_ref());
        let (tx, rx) = (format!("{name}.s2c"), format!("{name}.c2s"));
        pair(&tx, &rx, &opts.stream(), until, Role::Client)
    }

    /// The connecting end of the one-to-one channel `name`: creates `NAME.c2s` (written by this
    /// side) and waits up to `timeout` for the listener's `NAME.s2c`.
    ///
    /// # Errors
    /// As [`Channel::listen`].
    pub fn connect(name: &str, timeout: Duration) -> Result<Channel> {
        Channel::connect_with(name, timeout, &ChannelOptions::new())
    }

    /// As [`Channel::connect`], with `opts`.
    ///
    /// # Errors
    /// As [`Channel::listen_with`].
    pub fn connect_with(name: &str, timeout: Duration, opts: &ChannelOptions) -> Result<Channel> {
        validate_base_name(name)?;
        let until = GiveUp::new(Deadline::after(timeout), opts.cancel.as_ref());
        let (tx, rx) = (format!("{name}.c2s"), format!("{name}.s2c"));
        pair(&tx, &rx, &opts.stream(), until, Role::Server)
    }

    /// The name of the stream this side writes.
    pub fn name(&self) -> &str {
        self.tx.name()
    }

    /// The largest record (raw) this side can send; a framed request or reply is 8 bytes less.
    pub fn max_message_len(&self) -> usize {
        self.tx.max_record_len()
    }

    /// Changes how blocking calls wait, in both directions.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.tx.set_wait_strategy(wait);
        self.rx.set_wait_strategy(wait);
    }

    /// Requests sent from this side that have no reply yet (those given up by
    /// [`Channel::call_timeout_forget`] not counted).
    pub fn in_flight(&self) -> usize {
        self.outstanding.len() - self.forgotten.len()
    }

    // ---- raw records -------------------------------------------------------------------

    /// Sends `data` as one record, waiting for room (backpressure).
    ///
    /// # Errors
    /// [`Error::TooLarge`] at once for a record that can never fit; [`Error::PeerDead`] if the
    /// peer dies while the stream is full; [`Error::Closed`] if it left.
    pub fn send(&mut self, data: &[u8]) -> Result<()> {
        let peer = self.peer;
        self.tx.write(data).map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::send`], but [`Error::Full`] instead of waiting.
    ///
    /// # Errors
    /// As [`Channel::send`], plus [`Error::Full`].
    pub fn try_send(&mut self, data: &[u8]) -> Result<()> {
        let peer = self.peer;
        self.tx.try_write(data).map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::send`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::send`], plus [`Error::Timeout`].
    pub fn send_timeout(&mut self, data: &[u8], timeout: Duration) -> Result<()> {
        let peer = self.peer;
        self.tx
            .write_timeout(data, timeout)
            .map_err(|e| as_peer(e, peer))
    }

    /// Reserves `len` bytes of the outgoing stream to write in place; commit publishes them as
    /// one record.
    ///
    /// # Errors
    /// As [`Channel::send`].
    pub fn reserve(&mut self, len: usize) -> Result<WriteGrant<'_>> {
        let peer = self.peer;
        self.tx.reserve(len).map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::reserve`], but [`Error::Full`] instead of waiting.
    ///
    /// # Errors
    /// As [`Channel::try_send`].
    pub fn try_reserve(&mut self, len: usize) -> Result<WriteGrant<'_>> {
        let peer = self.peer;
        self.tx.try_reserve(len).map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::reserve`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::send_timeout`].
    pub fn reserve_timeout(&mut self, len: usize, timeout: Duration) -> Result<WriteGrant<'_>> {
        let peer = self.peer;
        self.tx
            .reserve_timeout(len, timeout)
            .map_err(|e| as_peer(e, peer))
    }

    /// The next incoming record, borrowed in place; waits for one.
    ///
    /// # Errors
    /// [`Error::Closed`] once the peer left and everything it sent was read;
    /// [`Error::PeerDead`] once it died and everything it committed was read;
    /// [`Error::Corrupt`] if the shared state is impossible.
    pub fn recv(&mut self) -> Result<ReadGrant<'_>> {
        let peer = self.peer;
        self.rx.read().map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::recv`], but [`Error::Empty`] instead of waiting.
    ///
    /// # Errors
    /// As [`Channel::recv`], plus [`Error::Empty`].
    pub fn try_recv(&mut self) -> Result<ReadGrant<'_>> {
        let peer = self.peer;
        self.rx.try_read().map_err(|e| as_peer(e, peer))
    }

    /// As [`Channel::recv`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::recv`], plus [`Error::Timeout`].
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<ReadGrant<'_>> {
        let peer = self.peer;
        self.rx.read_timeout(timeout).map_err(|e| as_peer(e, peer))
    }

    // ---- framing internals --------------------------------------------------------------

    /// `deadline`: None = try once.
    fn reserve_frame(
        tx: &mut StreamWriter,
        peer: Role,
        len: usize,
        deadline: Option<Deadline>,
    ) -> Result<WriteGrant<'_>> {
        let len = len.checked_add(ID_LEN).ok_or(Error::InvalidArgument {
            what: "message length",
            value: len as u64,
            expected: "at most the stream's largest record less 8 bytes",
        })?;
        let r = match deadline.map(|d| d.remaining()) {
            None => tx.try_reserve(len),
            Some(None) => tx.reserve(len),
            Some(Some(left)) => tx.reserve_timeout(len, left),
        };
        r.map_err(|e| as_peer(e, peer))
    }

    fn read_frame<'r>(
        rx: &'r mut StreamReader,
        rx_name: &str,
        peer: Role,
        deadline: Option<Deadline>,
    ) -> Result<(u64, ReadGrant<'r>)> {
        let r = match deadline.map(|d| d.remaining()) {
            None => rx.try_read(),
            Some(None) => rx.read(),
            Some(Some(left)) => rx.read_timeout(left),
        };
        let g = r.map_err(|e| as_peer(e, peer))?;
        // Hostile input: a record shorter than its id header is refused (and consumed).
        match frame_id(&g) {
            Some(id) => Ok((id, g)),
            None => {
                let len = g.len();
                drop(g);
                Err(short_frame(rx_name, len))
            }
        }
    }

    /// The next reply frame; its id must be one in flight, and leaves the in-flight set.
    /// Hostile input: any other id is `Corrupt` (and the frame is consumed).
    fn read_reply<'r>(
        rx: &'r mut StreamReader,
        rx_name: &str,
        peer: Role,
        outstanding: &mut InFlight,
        deadline: Option<Deadline>,
    ) -> Result<(u64, ReadGrant<'r>)> {
        let (got, g) = Channel::read_frame(rx, rx_name, peer, deadline)?;
        if !outstanding.remove(&got) {
            drop(g);
            return Err(Error::corrupt(
                rx_name,
                "reply id",
                got,
                "the id of a request in flight",
            ));
        }
        Ok((got, g))
    }

    // ---- the calling side --------------------------------------------------------------

    /// Sends `request` and waits for its reply (matched by correlation id; replies to other
    /// requests in flight are kept for their own waits).
    ///
    /// # Errors
    /// As [`Channel::send`] and [`Channel::recv`]; [`Error::Corrupt`] for a reply with an id
    /// nothing asked for.
    pub fn call(&mut self, request: &[u8]) -> Result<Reply<'_>> {
        let id = self.request_inner(request, Some(Deadline::never()))?;
        self.wait_inner(id, Some(Deadline::never()), false)
    }

    /// As [`Channel::call`], giving up after `timeout` in all. A reply that comes later is
    /// kept: [`Channel::wait_reply`] with the id (from [`Channel::in_flight`] order) or
    /// [`Channel::recv_reply`] returns it.
    ///
    /// # Errors
    /// As [`Channel::call`], plus [`Error::Timeout`].
    pub fn call_timeout(&mut self, request: &[u8], timeout: Duration) -> Result<Reply<'_>> {
        let deadline = Deadline::after(timeout);
        let id = self.request_inner(request, Some(deadline))?;
        self.wait_inner(id, Some(deadline), false)
    }

    /// As [`Channel::call_timeout`], but a request that times out is forgotten: its reply is
    /// dropped by the later call or reply wait that reads it, instead of kept for
    /// [`Channel::wait_reply`] or
    /// [`Channel::recv_reply`], and it no longer counts in [`Channel::in_flight`]. For callers
    /// that never collect a late reply (the C ABI's `weft_channel_call_timeout`), whose late
    /// replies would otherwise be kept for ever.
    ///
    /// # Errors
    /// As [`Channel::call_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::ErrorKind;
    /// use weft::channel::Channel;
    /// # let name = format!("doc-forget-{}", std::process::id());
    /// let wait = Duration::from_secs(10);
    /// let n = name.clone();
    /// let listener = std::thread::spawn(move || Channel::listen(&n, wait));
    /// let mut client = Channel::connect(&name, wait)?;
    /// let mut server = listener.join().unwrap()?;
    /// // Nobody answers in time: the call gives up and forgets its request.
    /// let late = client.call_timeout_forget(b"ping", Duration::from_millis(10));
    /// assert_eq!(late.map(|_| ()).unwrap_err().kind(), ErrorKind::Timeout);
    /// assert_eq!(client.in_flight(), 0);
    /// // Its reply, sent late, is dropped when it arrives; the next call gets its own.
    /// server.recv_request()?.reply(b"late")?;
    /// std::thread::scope(|s| {
    ///     s.spawn(|| server.recv_request().unwrap().reply(b"pong").unwrap());
    ///     assert_eq!(&*client.call(b"ping").unwrap(), b"pong");
    /// });
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn call_timeout_forget(&mut self, request: &[u8], timeout: Duration) -> Result<Reply<'_>> {
        let deadline = Deadline::after(timeout);
        let id = self.request_inner(request, Some(deadline))?;
        self.wait_inner(id, Some(deadline), true)
    }

    /// Gives up on the reply to `id` (a request sent on this channel): a reply already read
    /// and kept for it is dropped, one still to come is dropped by the reply wait that reads
    /// it (not by a raw [`Channel::recv`]), and `id` no longer
    /// counts in [`Channel::in_flight`]. For a caller that lost the id's wait (a timeout or
    /// an interrupt in a binding's `call`) and will never collect the reply.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `id` is neither in flight nor kept.
    pub fn forget(&mut self, id: RequestId) -> Result<()> {
        if let Some(pos) = self.stash.iter().position(|(i, _)| *i == id.0) {
            self.stash.remove(pos);
            return Ok(());
        }
        self.awaited(id.0)?;
        self.forgotten.insert(id.0);
        Ok(())
    }

    /// Sends `request` with a fresh correlation id and returns the id without waiting for the
    /// reply: several requests may be in flight, and their replies may come in any order.
    ///
    /// # Errors
    /// As [`Channel::send`].
    pub fn send_request(&mut self, request: &[u8]) -> Result<RequestId> {
        self.request_inner(request, Some(Deadline::never()))
            .map(RequestId)
    }

    /// As [`Channel::send_request`], but [`Error::Full`] instead of waiting for room.
    ///
    /// # Errors
    /// As [`Channel::try_send`].
    pub fn try_send_request(&mut self, request: &[u8]) -> Result<RequestId> {
        self.request_inner(request, None).map(RequestId)
    }

    /// As [`Channel::send_request`], waiting at most `timeout` for room.
    ///
    /// # Errors
    /// As [`Channel::send_timeout`].
    pub fn send_request_timeout(&mut self, request: &[u8], timeout: Duration) -> Result<RequestId> {
        self.request_inner(request, Some(Deadline::after(timeout)))
            .map(RequestId)
    }

    /// Reserves room for a request of up to `len` bytes, written in place; commit sends it
    /// and returns its id. Waits for room.
    ///
    /// # Errors
    /// As [`Channel::reserve`].
    pub fn reserve_request(&mut self, len: usize) -> Result<FrameGrant<'_>> {
        self.reserve_request_inner(len, Some(Deadline::never()))
    }

    /// As [`Channel::reserve_request`], but [`Error::Full`] instead of waiting for room.
    ///
    /// # Errors
    /// As [`Channel::try_reserve`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-try-reserve-request-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// // Nobody reads yet: the requests fill the client-to-server stream.
    /// client.send_request(&[7; 1500])?;
    /// client.send_request(&[7; 1500])?;
    /// assert!(matches!(client.try_reserve_request(1500).map(drop), Err(Error::Full)));
    /// // Once the server has read them there is room again.
    /// for _ in 0..2 {
    ///     drop(server.recv_request_timeout(t)?);
    /// }
    /// let mut g = client.try_reserve_request(2)?;
    /// g.copy_from_slice(b"hi");
    /// let id = g.commit(2)?;
    /// let req = server.recv_request_timeout(t)?;
    /// assert_eq!((&*req, req.id()), (&b"hi"[..], id));
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_reserve_request(&mut self, len: usize) -> Result<FrameGrant<'_>> {
        self.reserve_request_inner(len, None)
    }

    /// As [`Channel::reserve_request`], waiting at most `timeout` for room.
    ///
    /// # Errors
    /// As [`Channel::reserve_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-reserve-request-timeout-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// client.send_request(&[7; 1500])?;
    /// client.send_request(&[7; 1500])?;
    /// // Nobody reads: no room comes within the timeout.
    /// let ms = Duration::from_millis(10);
    /// let full = client.reserve_request_timeout(1500, ms).map(drop);
    /// assert!(matches!(full, Err(Error::Timeout)));
    /// // The server reads on another thread: the wait ends when room comes.
    /// let reader = std::thread::spawn(move || -> weft::Result<Vec<u8>> {
    ///     for _ in 0..2 {
    ///         drop(server.recv_request_timeout(t)?);
    ///     }
    ///     Ok(server.recv_request_timeout(t)?.to_vec())
    /// });
    /// let mut g = client.reserve_request_timeout(1500, t)?;
    /// g[..2].copy_from_slice(b"hi");
    /// g.commit(2)?;
    /// assert_eq!(reader.join().unwrap()?, b"hi");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn reserve_request_timeout(
        &mut self,
        len: usize,
        timeout: Duration,
    ) -> Result<FrameGrant<'_>> {
        self.reserve_request_inner(len, Some(Deadline::after(timeout)))
    }

    /// `deadline`: None = try once.
    fn reserve_request_inner(
        &mut self,
        len: usize,
        deadline: Option<Deadline>,
    ) -> Result<FrameGrant<'_>> {
        let id = self.next_id;
        let Channel {
            tx,
            peer,
            outstanding,
            next_id,
            ..
        } = self;
        let grant = Channel::reserve_frame(tx, *peer, len, deadline)?;
        *next_id += 1;
        Ok(FrameGrant {
            grant,
            id,
            outstanding: Some(outstanding),
        })
    }

    fn request_inner(&mut self, request: &[u8], deadline: Option<Deadline>) -> Result<u64> {
        let id = self.next_id;
        let mut g = Channel::reserve_frame(&mut self.tx, self.peer, request.len(), deadline)?;
        g[..ID_LEN].copy_from_slice(&id.to_le_bytes());
        g[ID_LEN..ID_LEN + request.len()].copy_from_slice(request);
        g.commit(ID_LEN + request.len())?;
        self.next_id += 1;
        self.outstanding.insert(id);
        Ok(id)
    }

    /// Waits for the reply to `id`. Replies to other requests that arrive first are kept (one
    /// copy each) for their own waits.
    ///
    /// # Errors
    /// As [`Channel::recv`]; [`Error::InvalidArgument`] if `id` is not in flight;
    /// [`Error::Corrupt`] for a reply with an id nothing asked for.
    pub fn wait_reply(&mut self, id: RequestId) -> Result<Reply<'_>> {
        self.wait_inner(id.0, Some(Deadline::never()), false)
    }

    /// As [`Channel::wait_reply`], but [`Error::Empty`] if the reply is not there yet.
    ///
    /// # Errors
    /// As [`Channel::wait_reply`], plus [`Error::Empty`].
    pub fn try_wait_reply(&mut self, id: RequestId) -> Result<Reply<'_>> {
        self.wait_inner(id.0, None, false)
    }

    /// As [`Channel::wait_reply`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::wait_reply`], plus [`Error::Timeout`].
    pub fn wait_reply_timeout(&mut self, id: RequestId, timeout: Duration) -> Result<Reply<'_>> {
        self.wait_inner(id.0, Some(Deadline::after(timeout)), false)
    }

    /// Waits for the reply to `id`; `forget`: if the wait times out, `id` is forgotten (see
    /// [`Channel::call_timeout_forget`]).
    fn wait_inner(
        &mut self,
        id: u64,
        deadline: Option<Deadline>,
        forget: bool,
    ) -> Result<Reply<'_>> {
        if let Some(pos) = self.stash.iter().position(|(i, _)| *i == id) {
            let (_, body) = self.stash.remove(pos).expect("found above");
            return Ok(Reply {
                id: RequestId(id),
                body: Body::Owned(body),
            });
        }
        self.awaited(id)?;
        if self.outstanding.len() == 1 {
            // Only this request is in flight: the next reply must be its own, so it is
            // returned in place, without a copy.
            // With one request in flight, the only id `read_reply` accepts is `id`.
            let (_, g) = Channel::read_reply(
                &mut self.rx,
                &self.rx_name,
                self.peer,
                &mut self.outstanding,
                deadline,
            )
            .map_err(|e| gave_up(&mut self.forgotten, forget, id, e))?;
            return Ok(Reply {
                id: RequestId(id),
                body: Body::Borrowed(g),
            });
        }
        loop {
            let (got, body) = self
                .read_reply_copied(deadline)
                .map_err(|e| gave_up(&mut self.forgotten, forget, id, e))?;
            if got == id {
                return Ok(Reply {
                    id: RequestId(id),
                    body: Body::Owned(body),
                });
            }
            // A forgotten request's reply is dropped; any other is kept for its own wait.
            if !self.forgotten.remove(&got) {
                self.stash.push_back((got, body));
            }
        }
    }

    /// `Ok` if `id` is a request in flight whose reply is awaited (not forgotten).
    fn awaited(&self, id: u64) -> Result<()> {
        if !self.outstanding.contains(&id) || self.forgotten.contains(&id) {
            return Err(Error::InvalidArgument {
                what: "request id",
                value: id,
                expected: "the id of a request in flight on this channel",
            });
        }
        Ok(())
    }

    /// The next reply frame (as [`Channel::read_reply`]), its body copied out of the stream.
    fn read_reply_copied(&mut self, deadline: Option<Deadline>) -> Result<(u64, Vec<u8>)> {
        let (got, g) = Channel::read_reply(
            &mut self.rx,
            &self.rx_name,
            self.peer,
            &mut self.outstanding,
            deadline,
        )?;
        Ok((got, g[ID_LEN..].to_vec()))
    }

    /// The next reply to any request in flight, whichever comes first.
    ///
    /// # Errors
    /// As [`Channel::wait_reply`]; [`Error::InvalidArgument`] at once if no request is in
    /// flight.
    pub fn recv_reply(&mut self) -> Result<Reply<'_>> {
        self.any_reply(Some(Deadline::never()))
    }

    /// As [`Channel::recv_reply`], but [`Error::Empty`] instead of waiting.
    ///
    /// # Errors
    /// As [`Channel::recv_reply`], plus [`Error::Empty`].
    pub fn try_recv_reply(&mut self) -> Result<Reply<'_>> {
        self.any_reply(None)
    }

    /// As [`Channel::recv_reply`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::recv_reply`], plus [`Error::Timeout`].
    pub fn recv_reply_timeout(&mut self, timeout: Duration) -> Result<Reply<'_>> {
        self.any_reply(Some(Deadline::after(timeout)))
    }

    fn any_reply(&mut self, deadline: Option<Deadline>) -> Result<Reply<'_>> {
        if let Some((id, body)) = self.stash.pop_front() {
            return Ok(Reply {
                id: RequestId(id),
                body: Body::Owned(body),
            });
        }
        if self.in_flight() == 0 {
            // Nothing can come: waiting would last until the peer leaves.
            return Err(Error::InvalidArgument {
                what: "requests in flight",
                value: 0,
                expected: "at least one request sent and not yet answered",
            });
        }
        if self.forgotten.len() > 0 {
            // A reply that comes may be a forgotten request's, dropped: the others are copied
            // out (the one read in place could not be returned from the loop that skips).
            loop {
                let (got, body) = self.read_reply_copied(deadline)?;
                if !self.forgotten.remove(&got) {
                    return Ok(Reply {
                        id: RequestId(got),
                        body: Body::Owned(body),
                    });
                }
            }
        }
        let (got, g) = Channel::read_reply(
            &mut self.rx,
            &self.rx_name,
            self.peer,
            &mut self.outstanding,
            deadline,
        )?;
        Ok(Reply {
            id: RequestId(got),
            body: Body::Borrowed(g),
        })
    }

    // ---- the serving side --------------------------------------------------------------

    /// The next request, borrowed in place with its correlation id; waits for one. Reply
    /// through the [`Request`] (in place, while it is held) or later with [`Channel::reply`].
    ///
    /// # Errors
    /// As [`Channel::recv`]; [`Error::Corrupt`] for a record shorter than its id.
    pub fn recv_request(&mut self) -> Result<Request<'_>> {
        self.request_of(Some(Deadline::never()))
    }

    /// As [`Channel::recv_request`], but [`Error::Empty`] instead of waiting.
    ///
    /// # Errors
    /// As [`Channel::recv_request`], plus [`Error::Empty`].
    pub fn try_recv_request(&mut self) -> Result<Request<'_>> {
        self.request_of(None)
    }

    /// As [`Channel::recv_request`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`Channel::recv_request`], plus [`Error::Timeout`].
    pub fn recv_request_timeout(&mut self, timeout: Duration) -> Result<Request<'_>> {
        self.request_of(Some(Deadline::after(timeout)))
    }

    fn request_of(&mut self, deadline: Option<Deadline>) -> Result<Request<'_>> {
        let Channel {
            tx,
            rx,
            rx_name,
            peer,
            ..
        } = self;
        let (id, grant) = Channel::read_frame(rx, rx_name, *peer, deadline)?;
        Ok(Request {
            grant,
            tx,
            peer: *peer,
            id: RequestId(id),
        })
    }

    /// Sends `data` as the reply to `id` (replies may go in any order).
    ///
    /// # Errors
    /// As [`Channel::send`].
    pub fn reply(&mut self, id: RequestId, data: &[u8]) -> Result<()> {
        write_frame(&mut self.tx, self.peer, id.0, data, Some(Deadline::never()))
    }

    /// As [`Channel::reply`], but [`Error::Full`] instead of waiting for room.
    ///
    /// # Errors
    /// As [`Channel::try_send`].
    pub fn try_reply(&mut self, id: RequestId, data: &[u8]) -> Result<()> {
        write_frame(&mut self.tx, self.peer, id.0, data, None)
    }

    /// As [`Channel::reply`], waiting at most `timeout` for room.
    ///
    /// # Errors
    /// As [`Channel::send_timeout`].
    pub fn reply_timeout(&mut self, id: RequestId, data: &[u8], timeout: Duration) -> Result<()> {
        write_frame(
            &mut self.tx,
            self.peer,
            id.0,
            data,
            Some(Deadline::after(timeout)),
        )
    }

    /// Reserves room for a reply to `id` of up to `len` bytes, written in place. Waits for
    /// room.
    ///
    /// # Errors
    /// As [`Channel::reserve`].
    pub fn reserve_reply(&mut self, id: RequestId, len: usize) -> Result<FrameGrant<'_>> {
        self.reserve_reply_inner(id, len, Some(Deadline::never()))
    }

    /// As [`Channel::reserve_reply`], but [`Error::Full`] instead of waiting for room.
    ///
    /// # Errors
    /// As [`Channel::try_reserve`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-try-reserve-reply-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// let ids = [b"a", b"b", b"c"].map(|q| client.send_request(q));
    /// let [a, b, c] = ids.map(|id| id.unwrap());
    /// for _ in 0..3 {
    ///     drop(server.recv_request_timeout(t)?);
    /// }
    /// // The client does not read yet: the replies fill the server-to-client stream.
    /// server.reply(a, &[7; 1500])?;
    /// server.reply(b, &[7; 1500])?;
    /// assert!(matches!(server.try_reserve_reply(c, 1500).map(drop), Err(Error::Full)));
    /// // Once the client has read them there is room again.
    /// assert_eq!(client.wait_reply_timeout(a, t)?.len(), 1500);
    /// assert_eq!(client.wait_reply_timeout(b, t)?.len(), 1500);
    /// let mut g = server.try_reserve_reply(c, 2)?;
    /// g.copy_from_slice(b"ok");
    /// g.commit(2)?;
    /// assert_eq!(&*client.wait_reply_timeout(c, t)?, b"ok");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_reserve_reply(&mut self, id: RequestId, len: usize) -> Result<FrameGrant<'_>> {
        self.reserve_reply_inner(id, len, None)
    }

    /// As [`Channel::reserve_reply`], waiting at most `timeout` for room.
    ///
    /// # Errors
    /// As [`Channel::reserve_timeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-reserve-reply-timeout-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// let ids = [b"a", b"b", b"c"].map(|q| client.send_request(q));
    /// let [a, b, c] = ids.map(|id| id.unwrap());
    /// for _ in 0..3 {
    ///     drop(server.recv_request_timeout(t)?);
    /// }
    /// server.reply(a, &[7; 1500])?;
    /// server.reply(b, &[7; 1500])?;
    /// // The client does not read: no room comes within the timeout.
    /// let ms = Duration::from_millis(10);
    /// let full = server.reserve_reply_timeout(c, 1500, ms).map(drop);
    /// assert!(matches!(full, Err(Error::Timeout)));
    /// // The client reads on another thread: the wait ends when room comes.
    /// let caller = std::thread::spawn(move || -> weft::Result<Vec<u8>> {
    ///     drop(client.wait_reply_timeout(a, t)?);
    ///     drop(client.wait_reply_timeout(b, t)?);
    ///     Ok(client.wait_reply_timeout(c, t)?.to_vec())
    /// });
    /// let mut g = server.reserve_reply_timeout(c, 1500, t)?;
    /// g[..2].copy_from_slice(b"ok");
    /// g.commit(2)?;
    /// assert_eq!(caller.join().unwrap()?, b"ok");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn reserve_reply_timeout(
        &mut self,
        id: RequestId,
        len: usize,
        timeout: Duration,
    ) -> Result<FrameGrant<'_>> {
        self.reserve_reply_inner(id, len, Some(Deadline::after(timeout)))
    }

    /// `deadline`: None = try once.
    fn reserve_reply_inner(
        &mut self,
        id: RequestId,
        len: usize,
        deadline: Option<Deadline>,
    ) -> Result<FrameGrant<'_>> {
        let grant = Channel::reserve_frame(&mut self.tx, self.peer, len, deadline)?;
        Ok(FrameGrant {
            grant,
            id: id.0,
            outstanding: None,
        })
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // A peer that is gone (its stream's writer closed or died) never opens our stream if it
        // has not yet: what we sent it goes with the stream instead of waiting for a reader.
        if self.rx.writer_status() != PeerStatus::Alive {
            self.tx.no_reader_will_come();
        }
        // The fields drop next: both streams, then the slot claim.
    }
}

fn write_frame(
    tx: &mut StreamWriter,
    peer: Role,
    id: u64,
    data: &[u8],
    deadline: Option<Deadline>,
) -> Result<()> {
    let mut g = Channel::reserve_frame(tx, peer, data.len(), deadline)?;
    g[..ID_LEN].copy_from_slice(&id.to_le_bytes());
    g[ID_LEN..ID_LEN + data.len()].copy_from_slice(data);
    g.commit(ID_LEN + data.len())
}

#[derive(Debug)]
enum Body<'a> {
    Borrowed(ReadGrant<'a>),
    Owned(Vec<u8>),
}

/// A reply: its request's id and its bytes. Borrowed in place from shared memory when it was
/// the next record (released on drop); a copy when it arrived while another reply was awaited.
///
/// A reply borrows its channel, so the next call waits until it is dropped:
/// ```compile_fail
/// # use weft::channel::Channel;
/// # fn f(ch: &mut Channel) -> weft::Result<()> {
/// let a = ch.call(b"one")?;
/// let b = ch.call(b"two")?; // error: `ch` is still borrowed by `a`
/// # drop((a, b)); Ok(()) }
/// ```
#[must_use = "a reply releases its record when dropped"]
#[derive(Debug)]
pub struct Reply<'a> {
    id: RequestId,
    body: Body<'a>,
}

impl Reply<'_> {
    /// The id of the request this answers.
    pub fn id(&self) -> RequestId {
        self.id
    }
}

impl core::ops::Deref for Reply<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.body {
            // The frame was checked to hold at least ID_LEN bytes in read_frame.
            Body::Borrowed(g) => &g[ID_LEN..],
            Body::Owned(v) => v,
        }
    }
}

/// A request, borrowed in place with its correlation id. Derefs to the request's bytes.
///
/// Reply while holding it ([`Request::reply`], or [`Request::reply_with`] to build the reply
/// in place from the request in place); or note its [`id`](Request::id), drop it, and reply
/// later with [`Channel::reply`].
#[must_use = "a request releases its record when dropped"]
#[derive(Debug)]
pub struct Request<'a> {
    grant: ReadGrant<'a>,
    tx: &'a mut StreamWriter,
    peer: Role,
    id: RequestId,
}

impl Request<'_> {
    /// The request's correlation id.
    pub fn id(&self) -> RequestId {
        self.id
    }

    /// Sends `data` as the reply and releases the request.
    ///
    /// # Errors
    /// As [`Channel::reply`].
    pub fn reply(self, data: &[u8]) -> Result<()> {
        write_frame(self.tx, self.peer, self.id.0, data, Some(Deadline::never()))
    }

    /// As [`Request::reply`], but [`Error::Full`] instead of waiting for room. The request is
    /// released either way: note its [`id`](Request::id) first to reply later with
    /// [`Channel::reply`].
    ///
    /// # Errors
    /// As [`Channel::try_reply`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-request-try-reply-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// let ids = [b"1", b"2", b"3"].map(|q| client.send_request(q));
    /// let [one, two, three] = ids.map(|id| id.unwrap());
    /// // The client does not read yet: two replies fill the server-to-client stream.
    /// for _ in 0..2 {
    ///     server.recv_request_timeout(t)?.reply(&[7; 1500])?;
    /// }
    /// let req = server.recv_request_timeout(t)?;
    /// let id = req.id();
    /// assert!(matches!(req.try_reply(&[7; 1500]), Err(Error::Full)));
    /// // Once the client has read, the reply goes by id.
    /// drop(client.wait_reply_timeout(one, t)?);
    /// drop(client.wait_reply_timeout(two, t)?);
    /// server.reply(id, b"later")?;
    /// assert_eq!(&*client.wait_reply_timeout(three, t)?, b"later");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_reply(self, data: &[u8]) -> Result<()> {
        write_frame(self.tx, self.peer, self.id.0, data, None)
    }

    /// As [`Request::reply`], waiting at most `timeout` for room. The request is released
    /// either way: note its [`id`](Request::id) first to reply later with [`Channel::reply`].
    ///
    /// # Errors
    /// As [`Channel::reply_timeout`].
    pub fn reply_timeout(self, data: &[u8], timeout: Duration) -> Result<()> {
        write_frame(
            self.tx,
            self.peer,
            self.id.0,
            data,
            Some(Deadline::after(timeout)),
        )
    }

    /// Reserves up to `max_len` bytes for the reply and calls `fill(request, reply)` with the
    /// request and the reply room both in shared memory; `fill` returns the reply's length.
    /// Waits for room.
    ///
    /// # Errors
    /// As [`Channel::reply`]; [`Error::InvalidArgument`] if `fill` returns more than
    /// `max_len` (nothing is sent).
    pub fn reply_with(
        self,
        max_len: usize,
        fill: impl FnOnce(&[u8], &mut [u8]) -> usize,
    ) -> Result<()> {
        self.reply_with_inner(max_len, Some(Deadline::never()), fill)
    }

    /// As [`Request::reply_with`], but [`Error::Full`] instead of waiting for room; `fill` is
    /// called only once there is room. The request is released either way: note its
    /// [`id`](Request::id) first to reply later with [`Channel::reply`].
    ///
    /// # Errors
    /// As [`Channel::try_reply`]; [`Error::InvalidArgument`] as for [`Request::reply_with`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-request-try-reply-with-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// let ids = [b"1", b"2", b"3"].map(|q| client.send_request(q));
    /// let [one, two, _] = ids.map(|id| id.unwrap());
    /// // The client does not read yet: two replies fill the server-to-client stream.
    /// for _ in 0..2 {
    ///     server.recv_request_timeout(t)?.reply(&[7; 1500])?;
    /// }
    /// let req = server.recv_request_timeout(t)?;
    /// let full = req.try_reply_with(1500, |_, _| unreachable!("called only with room"));
    /// assert!(matches!(full, Err(Error::Full)));
    /// // Once the client has read, the next reply is built in place from its request in
    /// // place: here, the request's bytes twice.
    /// drop(client.wait_reply_timeout(one, t)?);
    /// drop(client.wait_reply_timeout(two, t)?);
    /// let four = client.send_request(b"4")?;
    /// let req = server.recv_request_timeout(t)?;
    /// req.try_reply_with(2, |r, out| {
    ///     out[..1].copy_from_slice(r);
    ///     out[1..].copy_from_slice(r);
    ///     2
    /// })?;
    /// assert_eq!(&*client.wait_reply_timeout(four, t)?, b"44");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn try_reply_with(
        self,
        max_len: usize,
        fill: impl FnOnce(&[u8], &mut [u8]) -> usize,
    ) -> Result<()> {
        self.reply_with_inner(max_len, None, fill)
    }

    /// As [`Request::reply_with`], waiting at most `timeout` for room; `fill` is called only
    /// once there is room. The request is released either way: note its
    /// [`id`](Request::id) first to reply later with [`Channel::reply`].
    ///
    /// # Errors
    /// As [`Channel::reply_timeout`]; [`Error::InvalidArgument`] as for
    /// [`Request::reply_with`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use weft::channel::{Channel, ChannelOptions};
    /// use weft::Error;
    /// # let name = format!("doc-request-reply-with-timeout-{}", std::process::id());
    /// let t = Duration::from_secs(5);
    /// // 4 KiB streams: two messages of 1500 bytes fill one.
    /// let opts = ChannelOptions::new().capacity(4096);
    /// let (n, o) = (name.clone(), opts.clone());
    /// let listener = std::thread::spawn(move || Channel::listen_with(&n, t, &o));
    /// let mut client = Channel::connect_with(&name, t, &opts)?;
    /// let mut server = listener.join().unwrap()?;
    /// let ids = [b"1", b"2", b"3"].map(|q| client.send_request(q));
    /// let [one, two, _] = ids.map(|id| id.unwrap());
    /// // The client does not read yet: two replies fill the server-to-client stream.
    /// for _ in 0..2 {
    ///     server.recv_request_timeout(t)?.reply(&[7; 1500])?;
    /// }
    /// let req = server.recv_request_timeout(t)?;
    /// let ms = Duration::from_millis(10);
    /// let no_room = |_: &[u8], _: &mut [u8]| -> usize { unreachable!("called only with room") };
    /// let full = req.reply_with_timeout(1500, ms, no_room);
    /// assert!(matches!(full, Err(Error::Timeout)));
    /// // The client reads on another thread: the wait ends when room comes.
    /// let caller = std::thread::spawn(move || -> weft::Result<Vec<u8>> {
    ///     drop(client.wait_reply_timeout(one, t)?);
    ///     drop(client.wait_reply_timeout(two, t)?);
    ///     let again = client.send_request(b"4")?;
    ///     Ok(client.wait_reply_timeout(again, t)?.to_vec())
    /// });
    /// let req = server.recv_request_timeout(t)?;
    /// req.reply_with_timeout(8, t, |r, out| {
    ///     out[..r.len()].copy_from_slice(r);
    ///     r.len()
    /// })?;
    /// assert_eq!(caller.join().unwrap()?, b"4");
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn reply_with_timeout(
        self,
        max_len: usize,
        timeout: Duration,
        fill: impl FnOnce(&[u8], &mut [u8]) -> usize,
    ) -> Result<()> {
        self.reply_with_inner(max_len, Some(Deadline::after(timeout)), fill)
    }

    /// `deadline`: None = try once.
    fn reply_with_inner(
        self,
        max_len: usize,
        deadline: Option<Deadline>,
        fill: impl FnOnce(&[u8], &mut [u8]) -> usize,
    ) -> Result<()> {
        let Request {
            grant,
            tx,
            peer,
            id,
            ..
        } = self;
        let mut g = Channel::reserve_frame(tx, peer, max_len, deadline)?;
        g[..ID_LEN].copy_from_slice(&id.0.to_le_bytes());
        let n = fill(&grant[ID_LEN..], &mut g[ID_LEN..ID_LEN + max_len]);
        // The request is consumed: release it before the reply is published, so that the
        // client's next request finds its room already given back.
        drop(grant);
        if n > max_len {
            return Err(Error::InvalidArgument {
                what: "reply length",
                value: n as u64,
                expected: "at most the reserved length",
            });
        }
        g.commit(ID_LEN + n)
    }
}

impl core::ops::Deref for Request<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // The frame was checked to hold at least ID_LEN bytes in read_frame.
        &self.grant[ID_LEN..]
    }
}

/// Room for a request or a reply, written in place; derefs to the message bytes (after the
/// id). [`commit`](FrameGrant::commit) sends it; dropping it sends nothing.
#[must_use = "a grant sends nothing until it is committed"]
#[derive(Debug)]
pub struct FrameGrant<'a> {
    grant: WriteGrant<'a>,
    id: u64,
    /// The sender's in-flight set, for a request.
    outstanding: Option<&'a mut InFlight>,
}

impl FrameGrant<'_> {
    /// The id the message carries.
    pub fn id(&self) -> RequestId {
        RequestId(self.id)
    }

    /// Sends the first `len` bytes; returns the message's id.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `len` is more than was reserved (nothing is sent).
    pub fn commit(mut self, len: usize) -> Result<RequestId> {
        let id = self.id;
        // Checked here, not left to the stream's grant, so that the error names the caller's
        // length, not the frame's (which has the id in front).
        if len > self.grant.len() - ID_LEN {
            return Err(Error::InvalidArgument {
                what: "commit length",
                value: len as u64,
                expected: "at most the reserved length",
            });
        }
        self.grant[..ID_LEN].copy_from_slice(&id.to_le_bytes());
        self.grant.commit(len + ID_LEN)?;
        if let Some(set) = self.outstanding.take() {
            set.insert(id);
        }
        Ok(RequestId(id))
    }
}

impl core::ops::Deref for FrameGrant<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.grant[ID_LEN..]
    }
}

impl core::ops::DerefMut for FrameGrant<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.grant[ID_LEN..]
    }
}
