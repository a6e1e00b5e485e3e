//! The byte stream between two processes: [`StreamWriter`] and [`StreamReader`] place the
//! bipartite buffer of [`crate::stream`] in a named shared-memory object.
//!
//! Object layout (docs/protocol.md, "Stream"): the 128-byte object header, the control block
//! (six cache lines), the writer's and the reader's participant rows, then the data area at
//! offset 4096.

use super::inspect::Peer;
use super::liveness::{Claim, OWNER_HOLDS, ParticipantRow, PeerStatus};
use super::object::{HEADER_SIZE, Object, ObjectKind};
use crate::WaitStrategy;
use crate::error::{Error, Result, Role};
use crate::stream::bipbuf::{
    Corrupt, Geometry, Prepared, ReaderCore, Record, Reservation, ReserveError, WriterCore,
    default_window,
};
use crate::stream::layout::{CONTROL_SIZE, StreamControl, round_up};
use crate::sync::{Arc, Ordering};
use crate::sys;
use crate::wait::{Deadline, Next, Waiter};
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::time::Duration;

const CONTROL_OFFSET: u64 = HEADER_SIZE;
const WRITER_ROW: u64 = CONTROL_OFFSET + CONTROL_SIZE as u64;
const READER_ROW: u64 = WRITER_ROW + 64;
/// The data area starts on its own page, so that page-aligned records are page-aligned in
/// memory too.
const DATA_OFFSET: u64 = 4096;
/// A parked side wakes at least this often to check that its peer is alive.
const PARK_SLICE: Duration = Duration::from_millis(50);
/// Nanoseconds an `Adaptive` reader spins, when it finds the stream empty while its writer is
/// streaming, before it looks again (see `StreamReader::wait_record`). A time, not a count of
/// spin hints, whose length differs between cores (23 ns each on the EPYC of
/// `docs/benchmarks.md`).
const STREAMING_PAUSE_NS: u64 = 700;
/// A streaming reader whose last load of `W` revealed fewer bytes than this (16 records of
/// 256 bytes) pauses before it loads `W` again (see `StreamReader::wait_record`).
const SMALL_GAIN: u64 = 4096;

/// Liveness is read from /proc at most this often (the clock is read every few hundred spins).
const CHECK_INTERVAL_NS: u64 = 50_000_000;
/// How long `create` waits for an existing object's creator while deciding whether it is stale.
const STALE_OPEN_TIMEOUT: Duration = Duration::from_millis(250);

/// How a stream is made and how its handles wait.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use weft::stream::{StreamOptions, StreamWriter};
/// use weft::WaitStrategy;
/// # let name = format!("doc-options-{}", std::process::id());
/// let opts = StreamOptions::new(64 << 20)
///     .align(4096)                              // page-aligned records, for tensors
///     .wait(WaitStrategy::Park)
///     .liveness_timeout(Duration::from_millis(500));
/// let writer = StreamWriter::create_with(&name, &opts)?;
/// assert_eq!(writer.capacity(), 64 << 20);
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct StreamOptions {
    capacity: u64,
    align: u64,
    wait: WaitStrategy,
    liveness_timeout: Duration,
    open_timeout: Duration,
    hugepages: bool,
    lock_memory: bool,
    /// `None`: the writer wraps only at the end.
    hot_window: Option<u64>,
    /// Whether `create` takes over an existing stream whose reader lives (a writer restarting
    /// for its reader). Off for request/response channels, whose streams belong to one
    /// connection: a new connection must never continue an old one's stream.
    take_over: bool,
}

impl StreamOptions {
    /// The geometry these options make, with the capacity rounded up to the alignment and
    /// the alignment, or why they can make no stream. Checked before anything is created:
    /// by a stream's creation, and by a server's bind for the streams of every connection it
    /// will open (an impossible capacity found only then left the server bound and every
    /// client refused).
    pub(crate) fn checked(&self) -> Result<(Geometry, u64, u64)> {
        let align = self.align;
        if !crate::stream::ALIGNMENTS.contains(&align) {
            return Err(Error::InvalidArgument {
                what: "align",
                value: align,
                expected: "8, 64 or 4096",
            });
        }
        let capacity = round_up(self.capacity, align).unwrap_or(u64::MAX);
        let geo = Geometry::new(capacity, align).map_err(|_| Error::InvalidArgument {
            what: "capacity",
            value: self.capacity,
            expected: "at least 4 record headers and at most 2^48 bytes",
        })?;
        if let Some(window) = self.hot_window
            && window < MIN_HOT_WINDOW
        {
            return Err(Error::InvalidArgument {
                what: "hot_window",
                value: window,
                expected: "at least 4096 bytes, or None",
            });
        }
        Ok((geo, capacity, align))
    }

    /// A stream of `capacity` data bytes (rounded up to the alignment), 8-byte records,
    /// [`WaitStrategy::Adaptive`], a 1 s liveness timeout.
    pub fn new(capacity: usize) -> StreamOptions {
        StreamOptions {
            capacity: capacity as u64,
            align: 8,
            wait: WaitStrategy::Adaptive,
            liveness_timeout: Duration::from_secs(1),
            open_timeout: Duration::from_secs(1),
            hugepages: false,
            lock_memory: false,
            hot_window: default_window(capacity as u64),
            take_over: true,
        }
    }

    /// Record alignment: 8 (default), 64 or 4096. Every payload starts on this boundary; the
    /// per-record header takes `max(8, align)` bytes.
    pub fn align(mut self, align: usize) -> StreamOptions {
        self.align = align as u64;
        self
    }

    /// How blocking calls wait.
    pub fn wait(mut self, wait: WaitStrategy) -> StreamOptions {
        self.wait = wait;
        self
    }

    /// How long a peer whose process cannot be checked through /proc (another pid namespace)
    /// may go without a heartbeat before it is reported dead.
    pub fn liveness_timeout(mut self, timeout: Duration) -> StreamOptions {
        self.liveness_timeout = timeout;
        self
    }

    /// Ask for transparent huge pages on the mapping (advisory).
    pub fn hugepages(mut self, on: bool) -> StreamOptions {
        self.hugepages = on;
        self
    }

    /// Lock the mapping in memory (`mlock`); fails if the limit does not allow it.
    pub fn lock_memory(mut self, on: bool) -> StreamOptions {
        self.lock_memory = on;
        self
    }

    /// Whether `create` may take over an existing stream whose reader lives (see the field).
    pub(crate) fn take_over(mut self, on: bool) -> StreamOptions {
        self.take_over = on;
        self
    }

    /// How long a peer may go without a heartbeat before it is judged dead.
    pub(crate) fn liveness(&self) -> Duration {
        self.liveness_timeout
    }

    /// The same options with an open that waits at most until `deadline` (and no longer than
    /// these options' own wait) for a stream's creator to finish making it.
    pub(crate) fn open_within(mut self, deadline: Deadline) -> StreamOptions {
        if let Some(left) = deadline.remaining() {
            self.open_timeout = self.open_timeout.min(left);
        }
        self
    }

    /// Where the writer goes back to the start of the buffer while its reader keeps up:
    /// `Some(bytes)` (at least 4096; at or above the capacity means none), or `None` to use
    /// the whole capacity on every lap. The default is 4 MiB for streams of 16 MiB and more,
    /// none below (request/response channels take the default too).
    ///
    /// A reader that keeps up leaves the writer writing into memory it last touched a whole
    /// buffer ago, long gone from the caches. So once the writer has reached the window with
    /// its reader at most half a window behind, it wraps to offset 0 early and both sides stay
    /// within memory the caches hold: 256-byte records through a 64 MiB stream went from 13
    /// to 62-73 Mmsg/s on a 2-core Xeon. A reader further behind than that lets the writer go
    /// on to the end as usual, so a backlog can still fill the whole capacity.
    ///
    /// The cost: a reader that stalls just after such a wrap holds the writer back once about
    /// one window is unread (the data between it and the wrap point, then the start of the
    /// buffer up to it), not the whole capacity, until it reads past the wrap point. Turn the
    /// window off where the capacity is there to absorb long stalls of the reader. A writer's
    /// setting: a reader needs none.
    ///
    /// # Examples
    /// ```
    /// use weft::stream::{StreamOptions, StreamWriter};
    /// # let name = format!("doc-hot-window-{}", std::process::id());
    /// // 256 MiB to absorb a reader's stalls, every byte of it usable at any time.
    /// let opts = StreamOptions::new(256 << 20).hot_window(None);
    /// let writer = StreamWriter::create_with(&name, &opts)?;
    /// assert_eq!(writer.capacity(), 256 << 20);
    /// # Ok::<(), weft::Error>(())
    /// ```
    pub fn hot_window(mut self, bytes: Option<usize>) -> StreamOptions {
        self.hot_window = bytes.map(|b| b as u64);
        self
    }
}

/// The smallest hot window accepted: the writer reads `R` once per quarter window past it.
const MIN_HOT_WINDOW: u64 = 4096;

/// The stream `name`, opened (not joined) if no reader ever claimed it; `None` if one did.
fn open_never_read(name: &str, opts: &StreamOptions) -> Result<Option<Arc<Object>>> {
    crate::stream::layout::init_barriers();
    let obj = Arc::new(Object::open(name, ObjectKind::Stream, opts.open_timeout)?);
    // SAFETY: rows are all atomics; `at` checks bounds and alignment.
    let row: &ParticipantRow = unsafe { obj.at(READER_ROW)? };
    Ok((!row.ever_claimed()).then_some(obj))
}

/// Rate-limits liveness checks of the peer's row.
#[derive(Debug)]
struct Watch {
    next_ns: u64,
    last: PeerStatus,
    /// The row's `owner` word when `last` was judged: a verdict is about one owner.
    owner: u64,
    rounds: u32,
}

impl Watch {
    fn new() -> Watch {
        Watch {
            next_ns: 0,
            last: PeerStatus::Absent,
            owner: 0,
            rounds: 0,
        }
    }

    /// The peer's status, read from /proc at most every CHECK_INTERVAL_NS; a clean close is
    /// seen at once (two loads of the row's line). Judged by `owner` first: a row taken by a
    /// new claimant still shows its previous owner's CLOSED for a moment. A new owner (a peer
    /// that took the row over after a death) is judged at once: the dead one's verdict was
    /// reported for up to the interval after the takeover, naming a pid that no longer held
    /// the row.
    fn check(&mut self, row: &ParticipantRow, timeout: Duration) -> PeerStatus {
        if row.closed() {
            return PeerStatus::Closed;
        }
        let now = sys::monotonic_ns();
        // Relaxed: only compared, on the line `closed` just loaded; `status` loads it again.
        let owner = row.owner.load(Ordering::Relaxed);
        if now >= self.next_ns || owner != self.owner {
            self.next_ns = now + CHECK_INTERVAL_NS;
            self.owner = owner;
            self.last = row.status(timeout);
        }
        self.last
    }

    /// Whether a spinning loop should look at the clock this round.
    fn due(&mut self) -> bool {
        self.rounds = self.rounds.wrapping_add(1);
        self.rounds.is_multiple_of(256)
    }
}

/// What one side of a stream has done while blocking, and how often it woke its peer.
pub type StreamStats = crate::WaitStats;

fn corrupt(obj: &Object, c: Corrupt) -> Error {
    Error::corrupt(obj.name(), c.what, c.value, c.expected)
}

/// Maps the control block and the data area of a validated stream object.
fn parts(obj: &Object) -> Result<(NonNull<StreamControl>, NonNull<u8>, Geometry)> {
    // SAFETY: StreamControl is all atomics: valid for any bit pattern, shareable.
    let ctl: &StreamControl = unsafe { obj.at(CONTROL_OFFSET)? };
    // Relaxed: written before `ready`, which `Object::open` loaded with Acquire. Every value is
    // checked here and then copied: a peer that rewrites the config later changes nothing.
    let capacity = ctl.config.0.capacity.load(Ordering::Relaxed);
    let align = ctl.config.0.align.load(Ordering::Relaxed);
    let data_offset = ctl.config.0.data_offset.load(Ordering::Relaxed);
    let geo = Geometry::new(capacity, align).map_err(|c| corrupt(obj, c))?;
    if data_offset != DATA_OFFSET {
        return Err(Error::corrupt(
            obj.name(),
            "data offset",
            data_offset,
            "4096",
        ));
    }
    let end = data_offset.checked_add(capacity);
    if end.is_none_or(|end| end > obj.len()) {
        return Err(Error::Truncated {
            name: obj.name().into(),
            size: obj.len(),
            needed: end.unwrap_or(u64::MAX),
        });
    }
    // SAFETY: data_offset + capacity <= mapping length (checked above).
    let data = unsafe { obj.base().add(data_offset as usize) };
    Ok((
        NonNull::from(ctl),
        NonNull::new(data).expect("inside a mapping"),
        geo,
    ))
}

/// A snapshot of a stream, read without attaching to it ([`inspect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The stream's name.
    pub name: String,
    /// Data bytes.
    pub capacity: u64,
    /// Record alignment (8, 64 or 4096).
    pub align: u64,
    /// The largest record the stream accepts.
    pub max_record_len: u64,
    /// Bytes between the read and the write cursor (records not yet released by the reader,
    /// with their framing), `0 ..= capacity`. A snapshot: both sides may be moving. The reader
    /// publishes its cursor lazily while it drains a backlog, so this may lag what it has read
    /// by up to an eighth of the capacity.
    pub used: u64,
    /// The writer's row.
    pub writer: Peer,
    /// The reader's row.
    pub reader: Peer,
}

/// Reads the stream `name`: its geometry, how full it is, and whether its writer and reader
/// are alive. Read-only: no row is claimed and nothing the two sides use is written.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::NotFound`], the header errors ([`Error::NotWeft`],
/// [`Error::VersionMismatch`], [`Error::WrongKind`], [`Error::Truncated`],
/// [`Error::NotReady`]), and [`Error::Corrupt`] when a cursor or the configuration holds an
/// impossible value.
///
/// # Examples
/// ```
/// use weft::shm::PeerState;
/// use weft::stream::{StreamWriter, inspect};
/// # let name = format!("doc-stream-inspect-{}", std::process::id());
/// let mut writer = StreamWriter::create(&name, 4096)?;
/// writer.write(b"hello")?;                       // 8-byte header + 5 bytes padded to 8
/// let info = inspect(&name)?;
/// assert_eq!(info.capacity, 4096);
/// assert_eq!(info.used, 16);
/// assert_eq!(info.writer.state, PeerState::Alive);
/// assert_eq!(info.writer.pid, std::process::id());
/// assert_eq!(info.reader.state, PeerState::Absent);
/// # let mut reader = weft::stream::StreamReader::open(&name)?;
/// # drop(reader.read()?); // drained: the stream goes when both sides have left
/// # Ok::<(), weft::Error>(())
/// ```
pub fn inspect(name: &str) -> Result<StreamInfo> {
    sys::validate_name(name)?;
    stream_info(
        &Object::open(name, ObjectKind::Stream, INSPECT_OPEN_TIMEOUT)?,
        super::inspect::LIVENESS_TIMEOUT,
    )
}

/// How long [`inspect`] waits for a stream whose creator is still initialising it.
const INSPECT_OPEN_TIMEOUT: Duration = Duration::from_millis(100);

/// [`inspect`] of an opened stream object.
pub(crate) fn stream_info(obj: &Object, liveness: Duration) -> Result<StreamInfo> {
    let (ctl, _, geo) = parts(obj)?;
    // SAFETY: `parts` checked the control block against the mapping, which `obj` keeps alive.
    let ctl = unsafe { ctl.as_ref() };
    let cap = geo.capacity;
    let cursor = |what: &'static str, c: &crate::sync::AtomicU64| {
        // Relaxed: a snapshot for display; hostile input, checked against the capacity before
        // it is used (and it is only used in arithmetic, never to index).
        let v = c.load(Ordering::Relaxed);
        if v > cap {
            Err(Error::corrupt(obj.name(), what, v, "at most the capacity"))
        } else {
            Ok(v)
        }
    };
    // The two sides move while we read: take a snapshot in which neither R nor W changed
    // around the read of L (L only matters, and only changes before, an inverting W).
    let mut used = 0;
    for _ in 0..16 {
        let r = cursor("read cursor", &ctl.read.0)?;
        let w = cursor("write cursor", &ctl.write.0.cursor)?;
        let l = cursor("watermark", &ctl.watermark.0)?;
        let stable = r == cursor("read cursor", &ctl.read.0)?
            && w == cursor("write cursor", &ctl.write.0.cursor)?;
        used = if w >= r {
            w - r
        } else if l >= r {
            (l - r) + w
        } else if stable {
            return Err(Error::corrupt(
                obj.name(),
                "watermark",
                l,
                "at least the read cursor while the buffer is inverted",
            ));
        } else {
            w
        };
        if stable {
            break;
        }
    }
    // SAFETY: rows are all atomics; `at` checks bounds and alignment.
    let writer: &ParticipantRow = unsafe { obj.at(WRITER_ROW)? };
    // SAFETY: as above.
    let reader: &ParticipantRow = unsafe { obj.at(READER_ROW)? };
    Ok(StreamInfo {
        name: obj.name().into(),
        capacity: cap,
        align: geo.align,
        max_record_len: geo.max_payload(),
        used: used.min(cap),
        writer: Peer::read(0, Some(Role::Writer), writer, liveness),
        reader: Peer::read(1, Some(Role::Reader), reader, liveness),
    })
}

/// What the blocking loop needs from either end of a stream.
trait Side {
    fn strategy(&self) -> WaitStrategy;
    fn watch(&mut self) -> &mut Watch;
    /// Errors if the peer is gone (and, for the reader, nothing is left to read).
    fn check_peer(&mut self) -> Result<()>;
    /// Whether the peer is likely making what this side waits for, so that an `Adaptive` wait
    /// yields a while longer instead of parking (`Waiter::next_unless_peer_working`).
    fn peer_making_room(&self) -> bool;
}

/// The blocking loop of both ends: `attempt` until it yields a value, waiting between tries
/// as the side's strategy says (an `Adaptive` writer yields a while longer instead of parking
/// while the reader is awake); a parked wait sleeps at most `PARK_SLICE` at a time (through
/// `park`) and checks the peer between sleeps. `deadline` None tries once and reports
/// `not_now()` (after a liveness check): built only then, so that the common path never builds
/// and drops an error.
fn block<S: Side, T>(
    side: &mut S,
    deadline: Option<Deadline>,
    not_now: fn() -> Error,
    mut attempt: impl FnMut(&mut S) -> Result<Option<T>>,
    mut park: impl FnMut(&mut S, Duration) -> Result<()>,
) -> Result<T> {
    let mut waiter = Waiter::new(side.strategy());
    loop {
        if let Some(out) = attempt(side)? {
            return Ok(out);
        }
        let Some(deadline) = deadline else {
            side.check_peer()?;
            return Err(not_now());
        };
        if waiter.next_unless_peer_working(|| side.peer_making_room()) == Next::Retry {
            if waiter.yielded() || side.watch().due() {
                side.check_peer()?;
                if deadline.expired() {
                    return Err(Error::Timeout);
                }
            }
            continue;
        }
        side.check_peer()?;
        let slice = match deadline.remaining() {
            Some(Duration::ZERO) => return Err(Error::Timeout),
            Some(left) => left.min(PARK_SLICE),
            None => PARK_SLICE,
        };
        park(side, slice)?;
    }
}

impl Side for StreamWriter {
    fn strategy(&self) -> WaitStrategy {
        self.wait
    }
    fn watch(&mut self) -> &mut Watch {
        &mut self.watch
    }
    fn check_peer(&mut self) -> Result<()> {
        self.check_reader()
    }
    fn peer_making_room(&self) -> bool {
        // The writer waits on a full stream: a reader that has not parked is reading it. A
        // writer that parked every time it waited for the reader's next release (an eighth of
        // the stream) parked in 616 of 645 waits in the test that counts them.
        !self.core.reader_parked()
    }
}

impl Side for StreamReader {
    fn strategy(&self) -> WaitStrategy {
        self.wait
    }
    fn watch(&mut self) -> &mut Watch {
        &mut self.watch
    }
    fn check_peer(&mut self) -> Result<()> {
        self.check_writer()
    }
    fn peer_making_room(&self) -> bool {
        // The reader waits on an empty stream, and a writer that is not parked tells nothing
        // (a writer parks only on a full stream; an idle one is not parked either).
        false
    }
}

/// The writing end of a byte stream. One per stream; `Send`, not `Sync`.
///
/// Records are written whole and read whole: each `write` or committed [`WriteGrant`] is one
/// record for the reader. The writer never drops a record: when the stream is full it waits
/// (backpressure), as its [`WaitStrategy`] says, or returns [`Error::Full`] from `try_` forms.
/// Dropping the writer closes the stream: the reader drains what is left, then gets
/// [`Error::Closed`].
#[derive(Debug)]
pub struct StreamWriter {
    core: WriterCore,
    wait: WaitStrategy,
    liveness: Duration,
    watch: Watch,
    stats: StreamStats,
    /// Whether dropping the writer before any reader came keeps unread records for one (the
    /// default); false once it is known that no reader can come. A channel's writer
    /// (`peer_stream` set) then keeps its stream even drained, for its peer to find closed.
    keep_unread: bool,
    claim: Option<Claim>,
    obj: Arc<Object>,
    /// A channel's incoming stream, whose writer is the one process that can become this
    /// stream's reader: while no reader has come, that writer's death or close is the
    /// reader's (it will never come), so a wait for room does not go on for good.
    peer_stream: Option<(Arc<Object>, Watch)>,
}

impl StreamWriter {
    /// Creates the stream `name` with `capacity` data bytes and default options.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::InvalidArgument`] for a capacity out of range,
    /// [`Error::InUse`] if a live writer holds the name, [`Error::AlreadyExists`] if another
    /// kind of object or a stream of other geometry with a live reader has the name,
    /// [`Error::Io`] if the OS refuses.
    pub fn create(name: &str, capacity: usize) -> Result<StreamWriter> {
        StreamWriter::create_with(name, &StreamOptions::new(capacity))
    }

    /// Creates the stream `name` with `opts`.
    ///
    /// If a stream of that name exists and its writer has died or closed: when its reader is
    /// still alive (and the geometry matches), this writer takes over and the reader goes on
    /// reading; otherwise the stale object is removed and made anew.
    ///
    /// # Errors
    /// As [`StreamWriter::create`], and [`Error::InvalidArgument`] for an alignment other
    /// than 8, 64 or 4096 or a hot window under 4096 bytes.
    pub fn create_with(name: &str, opts: &StreamOptions) -> Result<StreamWriter> {
        crate::stream::layout::init_barriers();
        sys::validate_name(name)?;
        let (geo, capacity, align) = opts.checked()?;
        for _ in 0..4 {
            let made = Object::create(
                name,
                ObjectKind::Stream,
                DATA_OFFSET + capacity,
                opts.hugepages,
                opts.lock_memory,
                |obj| {
                    // SAFETY: StreamControl is all atomics.
                    let ctl: &StreamControl = unsafe { obj.at(CONTROL_OFFSET)? };
                    // Relaxed: published by Object::publish (Release).
                    ctl.config.0.capacity.store(capacity, Ordering::Relaxed);
                    ctl.config.0.align.store(align, Ordering::Relaxed);
                    ctl.config
                        .0
                        .data_offset
                        .store(DATA_OFFSET, Ordering::Relaxed);
                    Ok(())
                },
            );
            match made {
                Ok(obj) => {
                    let obj = Arc::new(obj);
                    // Claim before publishing: an opener never sees a ready stream without its
                    // writer, so a concurrent `create` cannot mistake it for a stale one.
                    let claim = Claim::take(&obj, WRITER_ROW, Role::Writer, opts.liveness_timeout);
                    let claim = match claim {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = sys::ShmFile::unlink(name);
                            return Err(e);
                        }
                    };
                    obj.publish();
                    return StreamWriter::attach(obj, claim, opts);
                }
                Err(Error::AlreadyExists { .. }) => {
                    if let Some(w) = StreamWriter::take_over(name, geo, opts)? {
                        return Ok(w);
                    }
                    // The stale object was removed: create again.
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::AlreadyExists { name: name.into() })
    }

    /// An object of this name exists: take it over (Some), remove it as stale (None), or
    /// refuse.
    fn take_over(name: &str, geo: Geometry, opts: &StreamOptions) -> Result<Option<StreamWriter>> {
        let obj = match Object::open(name, ObjectKind::Stream, STALE_OPEN_TIMEOUT) {
            Ok(obj) => Arc::new(obj),
            Err(Error::NotReady { .. }) => {
                // A creator that died before finishing leaves an object nobody can use.
                Object::clear_leftover(name)?;
                return Ok(None);
            }
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (_, _, existing) = parts(&obj)?;
        // SAFETY: rows are all atomics.
        let writer_row: &ParticipantRow = unsafe { obj.at(WRITER_ROW)? };
        // SAFETY: as above.
        let reader_row: &ParticipantRow = unsafe { obj.at(READER_ROW)? };
        if let PeerStatus::Alive = writer_row.status(opts.liveness_timeout) {
            return Err(Error::InUse {
                name: name.into(),
                role: Role::Writer,
                pid: writer_row.pid(),
            });
        }
        if reader_row.status(opts.liveness_timeout) == PeerStatus::Alive {
            if !opts.take_over {
                return Err(Error::InUse {
                    name: name.into(),
                    role: Role::Reader,
                    pid: reader_row.pid(),
                });
            }
            if existing.capacity != geo.capacity || existing.align != geo.align {
                return Err(Error::AlreadyExists { name: name.into() });
            }
            let claim = Claim::take(&obj, WRITER_ROW, Role::Writer, opts.liveness_timeout)?;
            return StreamWriter::attach(obj, claim, opts).map(Some);
        }
        obj.unlink_if_same();
        Ok(None)
    }

    fn attach(obj: Arc<Object>, claim: Claim, opts: &StreamOptions) -> Result<StreamWriter> {
        let (ctl, data, geo) = parts(&obj)?;
        // SAFETY: ctl and data point into `obj`'s mapping, which the writer keeps alive through
        // its Arc for as long as the core exists; the claim makes this the only writer.
        let mut core = unsafe { WriterCore::new(ctl, data, geo) }.map_err(|c| corrupt(&obj, c))?;
        // After `new` has read `W`: a writer taking over past the window considers wrapping at
        // once.
        core.set_window(opts.hot_window);
        Ok(StreamWriter {
            core,
            wait: opts.wait,
            liveness: opts.liveness_timeout,
            watch: Watch::new(),
            stats: StreamStats::default(),
            keep_unread: true,
            claim: Some(claim),
            obj,
            peer_stream: None,
        })
    }

    /// No reader will ever come (a channel's peer is gone): dropping the writer removes the
    /// stream even if it holds records nobody read.
    pub(crate) fn no_reader_will_come(&mut self) {
        self.keep_unread = false;
    }

    /// Ties this writer to `incoming`, the other stream of its channel: until a reader comes,
    /// `incoming`'s writer stands for it (see `peer_stream`).
    pub(crate) fn read_by_writer_of(&mut self, incoming: &StreamReader) {
        self.peer_stream = Some((incoming.obj.clone(), Watch::new()));
    }

    fn reader_row(&self) -> &ParticipantRow {
        // SAFETY: rows are all atomics; READER_ROW is inside every validated stream.
        unsafe { self.obj.at(READER_ROW) }.expect("validated at attach")
    }

    /// Whether a reader came and then let go or died: nobody will read this stream again
    /// (only a reader taking the row over could, and a channel's peer never takes over).
    pub(crate) fn reader_gone(&self) -> bool {
        matches!(
            self.reader_row().status(self.liveness),
            PeerStatus::Closed | PeerStatus::Dead { .. }
        )
    }

    /// The identity (pid and start time, without the holds bit) of the process that claimed
    /// this stream's reader row, held or let go; 0 if it was never claimed.
    pub(crate) fn reader_identity(&self) -> u64 {
        // Acquire: pairs with the AcqRel claim CAS in `Claim::take` and the Release clear of
        // OWNER_HOLDS in `Claim::drop`. Hostile input: only compared.
        self.reader_row().owner.load(Ordering::Acquire) & !OWNER_HOLDS
    }

    /// Whether this stream's reader row was never claimed, or is held by the process whose
    /// `owner` word (with its holds bit) is `word`. A one-to-one channel pairs its two streams
    /// only when the peer that writes the one it reads is the one that reads (or will read)
    /// its own.
    pub(crate) fn reader_unclaimed_or_held_by(&self, word: u64) -> bool {
        // Acquire: pairs with the AcqRel claim CAS in `Claim::take` and the Release clear of
        // OWNER_HOLDS in `Claim::drop`. Hostile input: only compared.
        let mine = self.reader_row().owner.load(Ordering::Acquire);
        mine == 0 || (mine & OWNER_HOLDS != 0 && mine == word)
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        self.obj.name()
    }

    /// Data bytes in the stream.
    pub fn capacity(&self) -> usize {
        self.core.geometry().capacity as usize
    }

    /// The largest record this stream accepts: half the capacity less one record header. A
    /// record of at most this size always finds contiguous room once the reader catches up;
    /// a larger one is refused at once with [`Error::TooLarge`].
    pub fn max_record_len(&self) -> usize {
        self.core.geometry().max_payload() as usize
    }

    /// Changes how blocking calls wait.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.wait = wait;
    }

    /// What this writer has done to wait for its reader, and to wake it.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            wakes: self.core.wakes,
            ..self.stats
        }
    }

    /// Whether a reader is attached and alive (checked now).
    pub fn reader_alive(&self) -> bool {
        self.reader_row().status(self.liveness) == PeerStatus::Alive
    }

    /// Copies `data` into the stream as one record, waiting for room.
    ///
    /// # Errors
    /// [`Error::TooLarge`] at once if the record can never fit; [`Error::PeerDead`] if the
    /// reader dies while the stream is full; [`Error::Closed`] if it detached;
    /// [`Error::Corrupt`] if the reader's cursor is impossible.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.write_inner(data, Some(Deadline::never()))
    }

    /// As [`StreamWriter::write`], but returns [`Error::Full`] instead of waiting.
    ///
    /// # Errors
    /// As [`StreamWriter::write`], plus [`Error::Full`].
    pub fn try_write(&mut self, data: &[u8]) -> Result<()> {
        self.write_inner(data, None)
    }

    /// As [`StreamWriter::write`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`StreamWriter::write`], plus [`Error::Timeout`].
    pub fn write_timeout(&mut self, data: &[u8], timeout: Duration) -> Result<()> {
        self.write_inner(data, Some(Deadline::after(timeout)))
    }

    /// Copies `data` into the stream as one record, but publishes it later, like a buffered
    /// writer: at the next [`flush`](StreamWriter::flush), at any other write or commit (a
    /// publication covers every record before it), once the unpublished records reach
    /// [`deferred_limit`](StreamWriter::deferred_limit) bytes, before the writer waits for
    /// room, and when the writer is dropped. Records keep their order with all others.
    ///
    /// A stream of small records written this way costs the reader one look at the write
    /// cursor per batch instead of one per record, and the writer one store: on two cores
    /// that share no cache the difference is several times the throughput. What it costs is
    /// latency: a record waits for the flush.
    ///
    /// # Examples
    /// ```
    /// use weft::stream::{StreamReader, StreamWriter};
    /// # let name = format!("doc-deferred-{}", std::process::id());
    /// let mut writer = StreamWriter::create(&name, 1 << 16)?;
    /// let mut reader = StreamReader::open(&name)?;
    /// writer.write_deferred(b"one")?;
    /// writer.write_deferred(b"two")?;
    /// assert!(reader.try_read().is_err()); // nothing published yet
    /// writer.flush();
    /// assert_eq!(&*reader.read()?, b"one");
    /// assert_eq!(&*reader.read()?, b"two");
    /// # Ok::<(), weft::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`StreamWriter::write`].
    pub fn write_deferred(&mut self, data: &[u8]) -> Result<()> {
        self.write_deferred_inner(data, Some(Deadline::never()))
    }

    /// As [`StreamWriter::write_deferred`], but returns [`Error::Full`] instead of waiting
    /// (what was deferred before is published first, as before any wait).
    ///
    /// # Errors
    /// As [`StreamWriter::try_write`].
    pub fn try_write_deferred(&mut self, data: &[u8]) -> Result<()> {
        self.write_deferred_inner(data, None)
    }

    /// As [`StreamWriter::write_deferred`], waiting at most `timeout` for room.
    ///
    /// # Errors
    /// As [`StreamWriter::write_timeout`].
    pub fn write_deferred_timeout(&mut self, data: &[u8], timeout: Duration) -> Result<()> {
        self.write_deferred_inner(data, Some(Deadline::after(timeout)))
    }

    fn write_deferred_inner(&mut self, data: &[u8], deadline: Option<Deadline>) -> Result<()> {
        let len = data.len() as u64;
        let res = match self.core.try_reserve(len) {
            Ok(res) => res,
            // No room (or an error to report): `reserve_inner` publishes what waits, then
            // waits (or not) as the plain forms do.
            Err(_) => self.reserve_inner(len, deadline)?,
        };
        // SAFETY: as in `write_inner`.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.core.payload_ptr(&res), data.len())
        };
        self.core.commit_deferred(res, len);
        if self.core.deferred >= self.deferred_limit() {
            self.flush();
        }
        Ok(())
    }

    /// Publishes every record written with [`write_deferred`](StreamWriter::write_deferred)
    /// and not yet published (one store of the write cursor), waking a parked reader. Does
    /// nothing when there is none.
    pub fn flush(&mut self) {
        self.core.flush();
    }

    /// How many bytes of deferred records (headers and padding included) are published at
    /// the latest: an eighth of the capacity, at most 64 KiB.
    pub fn deferred_limit(&self) -> u64 {
        (self.core.geometry().capacity / 8).clamp(1, 64 << 10)
    }

    fn write_inner(&mut self, data: &[u8], deadline: Option<Deadline>) -> Result<()> {
        let res = self.reserve_inner(data.len() as u64, deadline)?;
        // SAFETY: the reservation holds data.len() bytes at payload_ptr, owned by the writer
        // until commit; `data` is ordinary memory, so the ranges do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.core.payload_ptr(&res), data.len())
        };
        self.core.commit(res, data.len() as u64);
        Ok(())
    }

    /// Reserves `len` contiguous bytes to write in place, waiting for room. The record is
    /// published by [`WriteGrant::commit`]; dropping the grant abandons it.
    ///
    /// The grant borrows the writer, so a second grant at the same time does not compile:
    /// ```compile_fail
    /// # use weft::stream::StreamWriter;
    /// # let mut writer = StreamWriter::create("doc-two-grants", 4096).unwrap();
    /// let a = writer.reserve(8).unwrap();
    /// let b = writer.reserve(8).unwrap(); // error: `writer` is already borrowed
    /// # drop((a, b));
    /// ```
    ///
    /// # Errors
    /// As [`StreamWriter::write`].
    pub fn reserve(&mut self, len: usize) -> Result<WriteGrant<'_>> {
        let res = self.reserve_inner(len as u64, Some(Deadline::never()))?;
        Ok(WriteGrant::new(self, res))
    }

    /// As [`StreamWriter::reserve`], but returns [`Error::Full`] instead of waiting.
    ///
    /// # Errors
    /// As [`StreamWriter::try_write`].
    pub fn try_reserve(&mut self, len: usize) -> Result<WriteGrant<'_>> {
        let res = self.reserve_inner(len as u64, None)?;
        Ok(WriteGrant::new(self, res))
    }

    /// As [`StreamWriter::reserve`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`StreamWriter::write_timeout`].
    pub fn reserve_timeout(&mut self, len: usize, timeout: Duration) -> Result<WriteGrant<'_>> {
        let res = self.reserve_inner(len as u64, Some(Deadline::after(timeout)))?;
        Ok(WriteGrant::new(self, res))
    }

    /// `deadline` None: try once.
    fn reserve_inner(&mut self, len: u64, deadline: Option<Deadline>) -> Result<Reservation> {
        // Deferred records go out first: a wait for room must not hide them from the reader,
        // and a grant's announcement records the published write cursor.
        self.flush();
        block(
            self,
            deadline,
            || Error::Full,
            |w| match w.core.try_reserve(len) {
                Ok(res) => Ok(Some(res)),
                Err(ReserveError::Full) => Ok(None),
                Err(ReserveError::TooLarge { max }) => Err(Error::TooLarge {
                    name: w.obj.name().into(),
                    len,
                    max,
                }),
                Err(ReserveError::Corrupt(c)) => Err(corrupt(&w.obj, c)),
            },
            |w, slice| {
                let parked = w
                    .core
                    .park_for_room(len, Some(slice))
                    .map_err(|c| corrupt(&w.obj, c))?;
                w.stats.count(parked);
                Ok(())
            },
        )
    }

    /// Errors if the reader is gone (while the stream is full).
    fn check_reader(&mut self) -> Result<()> {
        let liveness = self.liveness;
        // SAFETY: rows are all atomics; READER_ROW is inside every validated stream.
        let row: &ParticipantRow = unsafe { self.obj.at(READER_ROW)? };
        let mut status = self.watch.check(row, liveness);
        if let (PeerStatus::Absent, Some((incoming, watch))) = (status, &mut self.peer_stream) {
            // SAFETY: rows are all atomics; WRITER_ROW is inside every validated stream.
            let row: &ParticipantRow = unsafe { incoming.at(WRITER_ROW)? };
            status = match watch.check(row, liveness) {
                s @ (PeerStatus::Closed | PeerStatus::Dead { .. }) => s,
                PeerStatus::Alive | PeerStatus::Absent => PeerStatus::Absent,
            };
        }
        match status {
            PeerStatus::Alive | PeerStatus::Absent => Ok(()),
            PeerStatus::Closed => Err(Error::Closed),
            PeerStatus::Dead { pid } => Err(Error::PeerDead {
                name: self.obj.name().into(),
                role: Role::Reader,
                pid,
            }),
        }
    }

    /// Closes the stream (as dropping the writer does): the reader drains what was committed,
    /// then gets [`Error::Closed`].
    pub fn close(self) {}
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        self.flush();
        // Marks the row CLOSED (Release, after every commit) ...
        drop(self.claim.take());
        // ... then wakes a parked reader so it sees it.
        self.core.wake_reader();
        let remove = match self.reader_row().status(self.liveness) {
            PeerStatus::Alive => false,
            // The reader was here and left: nobody will read what is left.
            PeerStatus::Closed | PeerStatus::Dead { .. } => true,
            // No reader yet: keep unread records for one that opens later (it removes the
            // name when it leaves), unless none can come. A channel's stream is kept even
            // drained while its peer may still come: the peer learns of the close from it
            // (without it, a server connection's client found no stream and waited out its
            // timeout).
            PeerStatus::Absent => {
                !self.keep_unread || (self.core.is_drained() && self.peer_stream.is_none())
            }
        };
        if remove {
            // The last one out removes the name.
            self.obj.unlink_if_same();
        }
    }
}

/// Room reserved in the stream, written in place. Derefs to the reserved bytes.
///
/// [`commit`](WriteGrant::commit) publishes it as one record; dropping it abandons it (the
/// reader never sees it, and the room is reused).
#[must_use = "a write grant publishes nothing until it is committed"]
#[derive(Debug)]
pub struct WriteGrant<'a> {
    writer: &'a mut StreamWriter,
    prepared: Prepared,
}

impl<'a> WriteGrant<'a> {
    fn new(writer: &'a mut StreamWriter, res: Reservation) -> WriteGrant<'a> {
        let prepared = writer.core.prepare(res);
        WriteGrant { writer, prepared }
    }

    /// Publishes the first `len` bytes as one record.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `len` is more than was reserved (nothing is published).
    pub fn commit(self, len: usize) -> Result<()> {
        if len as u64 > self.prepared.res.len {
            return Err(Error::InvalidArgument {
                what: "commit length",
                value: len as u64,
                expected: "at most the reserved length",
            });
        }
        #[cfg(test)]
        if self.prepared.is_marked()
            && let Some(pause) = tests::PAUSE_AFTER_MARK.get()
        {
            // The commit's two halves, with a pause between the mark and `W` (a writer
            // descheduled there).
            let w = self.writer.core.mark(&self.prepared, len as u64);
            pause();
            self.writer.core.publish_prepared(&self.prepared, w);
            return Ok(());
        }
        self.writer.core.commit_prepared(&self.prepared, len as u64);
        Ok(())
    }
}

impl core::ops::Deref for WriteGrant<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the reservation's bytes are inside the data area and owned by the writer
        // until commit (the reader never reads beyond `W`, nor a grant whose mark the commit
        // has not stored); any bit pattern is a valid u8.
        unsafe {
            core::slice::from_raw_parts(
                self.writer.core.payload_ptr(&self.prepared.res),
                self.prepared.res.len as usize,
            )
        }
    }
}

impl core::ops::DerefMut for WriteGrant<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for Deref; `&mut self` makes this the only view.
        unsafe {
            core::slice::from_raw_parts_mut(
                self.writer.core.payload_ptr(&self.prepared.res),
                self.prepared.res.len as usize,
            )
        }
    }
}

/// The reading end of a byte stream. One per stream; `Send`, not `Sync`.
#[derive(Debug)]
pub struct StreamReader {
    core: ReaderCore,
    wait: WaitStrategy,
    liveness: Duration,
    watch: Watch,
    stats: StreamStats,
    batch: Vec<Record>,
    claim: Option<Claim>,
    obj: Arc<Object>,
    /// The last wait that found the stream empty found its record at the next look: the
    /// writer is streaming, and an `Adaptive` wait that finds the stream empty pauses before
    /// it looks again.
    streaming: bool,
}

impl StreamReader {
    /// Opens the stream `name` as its reader.
    ///
    /// # Errors
    /// [`Error::NotFound`] if no such stream exists; [`Error::InUse`] if a live reader holds
    /// it; [`Error::NotWeft`], [`Error::VersionMismatch`], [`Error::WrongKind`],
    /// [`Error::Truncated`], [`Error::Corrupt`] if the object fails validation.
    pub fn open(name: &str) -> Result<StreamReader> {
        StreamReader::open_with(name, &StreamOptions::new(0))
    }

    /// As [`StreamReader::open`], waiting up to `timeout` in all for the stream to be created
    /// and for its creator to finish initialising it.
    ///
    /// # Errors
    /// As [`StreamReader::open`]; [`Error::NotFound`] or [`Error::NotReady`] once the timeout
    /// has passed.
    pub fn open_timeout(name: &str, timeout: Duration) -> Result<StreamReader> {
        let deadline = Deadline::after(timeout);
        loop {
            let mut opts = StreamOptions::new(0);
            opts.open_timeout = deadline.remaining().unwrap_or(opts.open_timeout);
            match StreamReader::open_with(name, &opts) {
                Err(Error::NotFound { .. }) if !deadline.expired() => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }

    /// Opens with the wait strategy and liveness timeout of `opts` (its capacity and alignment
    /// are the writer's business and are ignored here).
    ///
    /// # Errors
    /// As [`StreamReader::open`].
    pub fn open_with(name: &str, opts: &StreamOptions) -> Result<StreamReader> {
        crate::stream::layout::init_barriers();
        let obj = Arc::new(Object::open(name, ObjectKind::Stream, opts.open_timeout)?);
        StreamReader::attach(obj, opts)
    }

    /// As [`open_with`](StreamReader::open_with), for a stream no reader has opened yet:
    /// `None` for one that had a reader, live or gone. A request/response channel's names are
    /// used again by every later connection, and such a stream is an earlier connection's.
    ///
    /// `own`: the stream this side writes on the same channel. The stream is then also `None`
    /// (and left unclaimed) unless `own`'s reader row was never claimed or is held by the
    /// process that holds this stream's writer row: a peer that read `own` and let go or died
    /// is not the one that writes this stream, and pairing the two would join two connections.
    ///
    /// # Errors
    /// As [`StreamReader::open`].
    pub(crate) fn open_unread(
        name: &str,
        opts: &StreamOptions,
        own: Option<&StreamWriter>,
    ) -> Result<Option<StreamReader>> {
        let Some(obj) = open_never_read(name, opts)? else {
            return Ok(None);
        };
        if let Some(own) = own {
            // SAFETY: as above.
            let writer: &ParticipantRow = unsafe { obj.at(WRITER_ROW)? };
            // Acquire: pairs with the AcqRel claim CAS of this stream's writer in `Claim::take`
            // (a channel's stream is always made fresh, so `Object::open`'s Acquire load of
            // `ready` already follows it): whatever that process did to `own`'s reader row
            // before it made this stream (let it go) is seen by the load of that row in
            // `reader_unclaimed_or_held_by`. Hostile input: only compared.
            let word = writer.owner.load(Ordering::Acquire);
            if !own.reader_unclaimed_or_held_by(word) {
                return Ok(None);
            }
        }
        // A reader that claims the row between the look and our claim makes this `InUse`.
        StreamReader::attach(obj, opts).map(Some)
    }

    /// As [`open_unread`](StreamReader::open_unread), for the stream that the process whose
    /// identity is `writer` (pid and start time, without the holds bit; never 0) wrote and no
    /// longer writes (it let go or died): the stream of a one-to-one channel's peer that read
    /// this side's stream and then closed its channel (or died), which is this connection's.
    /// `None` for any other stream, one that had a reader, or one whose writer is still alive:
    /// a channel lets go of both its streams at once, so a live writer is another connection
    /// of the same process (the reader that let go was not a channel's).
    ///
    /// # Errors
    /// As [`StreamReader::open`].
    pub(crate) fn open_unread_written_by(
        name: &str,
        opts: &StreamOptions,
        writer: u64,
    ) -> Result<Option<StreamReader>> {
        let Some(obj) = open_never_read(name, opts)? else {
            return Ok(None);
        };
        // SAFETY: rows are all atomics; `at` checks bounds and alignment.
        let row: &ParticipantRow = unsafe { obj.at(WRITER_ROW)? };
        // Acquire: as in `open_unread`. Hostile input: only compared.
        let word = row.owner.load(Ordering::Acquire) & !OWNER_HOLDS;
        if writer == 0 || word != writer || row.status(opts.liveness_timeout) == PeerStatus::Alive {
            return Ok(None);
        }
        StreamReader::attach(obj, opts).map(Some)
    }

    fn attach(obj: Arc<Object>, opts: &StreamOptions) -> Result<StreamReader> {
        let (ctl, data, geo) = parts(&obj)?;
        let claim = Claim::take(&obj, READER_ROW, Role::Reader, opts.liveness_timeout)?;
        // SAFETY: ctl and data point into `obj`'s mapping, kept alive by the reader's Arc for the
        // core's whole life; the claim makes this the only reader.
        let core = unsafe { ReaderCore::new(ctl, data, geo) }.map_err(|c| corrupt(&obj, c))?;
        Ok(StreamReader {
            core,
            wait: opts.wait,
            liveness: opts.liveness_timeout,
            watch: Watch::new(),
            stats: StreamStats::default(),
            batch: Vec::new(),
            claim: Some(claim),
            obj,
            streaming: false,
        })
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        self.obj.name()
    }

    /// What the writer's row says about the writer, checked now (the request/response
    /// handshake uses it to refuse a stale stream whose writer is gone).
    pub(crate) fn writer_status(&self) -> PeerStatus {
        // SAFETY: rows are all atomics; WRITER_ROW is inside every validated stream.
        unsafe { self.obj.at::<ParticipantRow>(WRITER_ROW) }
            .map(|row| row.status(self.liveness))
            .unwrap_or(PeerStatus::Absent)
    }

    /// The identity (pid and start time, without the holds bit) of the process that claimed
    /// this stream's writer row, held or let go; 0 if it cannot be read.
    pub(crate) fn writer_identity(&self) -> u64 {
        // SAFETY: rows are all atomics; WRITER_ROW is inside every validated stream.
        unsafe { self.obj.at::<ParticipantRow>(WRITER_ROW) }
            // Acquire: as in `StreamWriter::reader_identity`. Hostile input: only compared.
            .map(|row| row.owner.load(Ordering::Acquire) & !OWNER_HOLDS)
            .unwrap_or(0)
    }

    /// Data bytes in the stream.
    pub fn capacity(&self) -> usize {
        self.core.geometry().capacity as usize
    }

    /// Changes how blocking calls wait.
    pub fn set_wait_strategy(&mut self, wait: WaitStrategy) {
        self.wait = wait;
    }

    /// What this reader has done to wait for its writer, and to wake it.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            wakes: self.core.wakes,
            ..self.stats
        }
    }

    /// The next record, borrowed in place; waits for one. Released when the grant drops.
    ///
    /// With the `Adaptive` strategy (the default), a reader that finds the stream empty while
    /// its writer is streaming (its last wait ended at the second look) spins for 0.7 µs
    /// before it looks again, so that it takes the writer's records in runs instead of
    /// pulling the write cursor's cache line across cores for each one; this multiplies the
    /// throughput of small records when the reader keeps up, and delays a record committed
    /// during the pause by at most the pause. The pauses are counted in
    /// [`StreamReader::stats`]. `BusySpin` never pauses.
    ///
    /// # Errors
    /// [`Error::Closed`] once the writer has closed and every record has been read;
    /// [`Error::PeerDead`] once the writer has died and every record it committed has been
    /// read; [`Error::Corrupt`] if the shared state is impossible.
    pub fn read(&mut self) -> Result<ReadGrant<'_>> {
        self.next_inner(Some(Deadline::never()))
    }

    /// As [`StreamReader::read`], but returns [`Error::Empty`] instead of waiting.
    ///
    /// # Errors
    /// As [`StreamReader::read`], plus [`Error::Empty`].
    pub fn try_read(&mut self) -> Result<ReadGrant<'_>> {
        self.next_inner(None)
    }

    /// As [`StreamReader::read`], waiting at most `timeout`.
    ///
    /// # Errors
    /// As [`StreamReader::read`], plus [`Error::Timeout`].
    pub fn read_timeout(&mut self, timeout: Duration) -> Result<ReadGrant<'_>> {
        self.next_inner(Some(Deadline::after(timeout)))
    }

    fn next_inner(&mut self, deadline: Option<Deadline>) -> Result<ReadGrant<'_>> {
        let rec = self.wait_record(deadline)?;
        Ok(ReadGrant { reader: self, rec })
    }

    /// Up to `max` records, waiting for the first; all released with one cursor store when the
    /// batch drops.
    ///
    /// # Errors
    /// As [`StreamReader::read`].
    pub fn read_batch(&mut self, max: usize) -> Result<ReadBatch<'_>> {
        self.batch_inner(max, Some(Deadline::never()))
    }

    /// As [`StreamReader::read_batch`], but returns [`Error::Empty`] instead of waiting.
    ///
    /// # Errors
    /// As [`StreamReader::try_read`].
    pub fn try_read_batch(&mut self, max: usize) -> Result<ReadBatch<'_>> {
        self.batch_inner(max, None)
    }

    /// As [`StreamReader::read_batch`], waiting at most `timeout` for the first record.
    ///
    /// # Errors
    /// As [`StreamReader::read_timeout`].
    pub fn read_batch_timeout(&mut self, max: usize, timeout: Duration) -> Result<ReadBatch<'_>> {
        self.batch_inner(max, Some(Deadline::after(timeout)))
    }

    fn batch_inner(&mut self, max: usize, deadline: Option<Deadline>) -> Result<ReadBatch<'_>> {
        self.batch.clear();
        if max == 0 {
            return Ok(ReadBatch { reader: self });
        }
        let first = self.wait_record(deadline)?;
        self.batch.push(first);
        while self.batch.len() < max {
            // When `try_next` finds the stream empty it gives back what was released before
            // this batch, never the batch's own records: they are handed out, not released.
            match self.core.try_next() {
                Ok(Some(rec)) => self.batch.push(rec),
                Ok(None) => break,
                Err(c) => {
                    self.core.release();
                    return Err(corrupt(&self.obj, c));
                }
            }
        }
        Ok(ReadBatch { reader: self })
    }

    /// `deadline` None: try once.
    ///
    /// An `Adaptive` wait spins for [`STREAMING_PAUSE_NS`] nanoseconds after its first look
    /// finds the stream empty, if the writer is streaming: the last wait that found the stream
    /// empty found its record at the next look. A reader that keeps up with a streaming writer
    /// would otherwise load `W` again as soon as each record is committed: `W`'s line then
    /// changes core with every record, and the writer's next store to it waits for the line
    /// to come back. The pause lets the writer commit a run of records while the line stays
    /// in its cache, and the reader then takes the run: 256-byte records between two
    /// processes, default options, went from 42 to 73 Mmsg/s through a 1 MiB stream, 102 to
    /// 105 at 8 MiB and 83 to 107 at 64 MiB (`stream/throughput-256B`, same launches; half
    /// the pause gave 60, 82 and 72: too short a pause keeps the reader close behind the
    /// writer, where every line it reads is still in the writer's cache). The cost is latency
    /// inside a dense burst only: a record committed during the pause waits for its end.
    /// After a wait that needed more looks (the writer paused, a request/response exchange)
    /// the next wait looks at once. `BusySpin` never pauses: it is the strategy for latency.
    ///
    /// A reader faster than its writer also pauses before it loads `W` again when the last
    /// load revealed less than [`SMALL_GAIN`] bytes: such a reader otherwise takes a few
    /// records, finds them handed out, and loads `W` at once, every few records, without
    /// ever finding the stream empty. Where a cache line takes long to cross (the host's slow
    /// state in `docs/benchmarks.md`, a 550 ns round trip), every one of those loads made the
    /// writer's next store of `W` wait for the line, and its later stores behind it.
    /// `stream/throughput-256B`, three launches of each build alternating: 107 to 113 ->
    /// 122 to 125 Mmsg/s through 64 MiB and 110 to 116 -> 121 to 131 through 8 MiB with a
    /// 110 ns round trip (1 MiB: 70 to 73 against 70 to 79), and 11.2 -> 13.0 to 13.3 with a
    /// 520 ns one.
    fn wait_record(&mut self, deadline: Option<Deadline>) -> Result<Record> {
        let pause = deadline.is_some() && self.streaming && self.wait == WaitStrategy::Adaptive;
        let mut looks = 0u32;
        block(
            self,
            deadline,
            || Error::Empty,
            |r| {
                // The last look at `W` found little: look again only after a pause (see
                // above), or a reader faster than its writer looks at `W` every few records.
                if pause && looks == 0 && r.core.used_up_little(SMALL_GAIN) {
                    r.streaming_pause(deadline);
                }
                let mut rec = r.core.try_next().map_err(|c| corrupt(&r.obj, c))?;
                if rec.is_none() && pause && looks == 0 {
                    r.streaming_pause(deadline);
                    rec = r.core.try_next().map_err(|c| corrupt(&r.obj, c))?;
                }
                // Only a wait that found the stream empty says how the writer is doing: found
                // at the next look, it is streaming; later, it is not.
                if rec.is_some() && looks > 0 {
                    r.streaming = looks == 1;
                }
                looks += 1;
                Ok(rec)
            },
            |r, slice| {
                let parked = r
                    .core
                    .park_for_data(Some(slice))
                    .map_err(|c| corrupt(&r.obj, c))?;
                r.stats.count(parked);
                Ok(())
            },
        )
    }

    /// Spins for [`STREAMING_PAUSE_NS`], never past `deadline`.
    fn streaming_pause(&mut self, deadline: Option<Deadline>) {
        self.stats.streaming_pauses += 1;
        let left = deadline.and_then(|d| d.remaining()).map_or(u64::MAX, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
        });
        let until = sys::monotonic_ns().saturating_add(STREAMING_PAUSE_NS.min(left));
        while sys::monotonic_ns() < until {
            crate::sync::spin_loop();
        }
    }

    /// Errors if the writer is gone and nothing is left to read.
    fn check_writer(&mut self) -> Result<()> {
        let liveness = self.liveness;
        // SAFETY: rows are all atomics; WRITER_ROW is inside every validated stream.
        let row: &ParticipantRow = unsafe { self.obj.at(WRITER_ROW)? };
        let status = self.watch.check(row, liveness);
        let gone = match status {
            PeerStatus::Alive | PeerStatus::Absent => return Ok(()),
            PeerStatus::Closed => Error::Closed,
            PeerStatus::Dead { pid } => Error::PeerDead {
                name: self.obj.name().into(),
                role: Role::Writer,
                pid,
            },
        };
        // The writer's last commit happened before its row changed: anything it committed is
        // visible now. Only report the end once there is nothing left.
        if self.core.has_data().map_err(|c| corrupt(&self.obj, c))? {
            Ok(())
        } else {
            Err(gone)
        }
    }
}

/// How long a reader that leaves waits for a live writer's store of `W` past a record it took
/// by its mark (the store right after the mark: a few instructions, unless the writer is
/// descheduled there).
const LEAVE_WAIT: Duration = Duration::from_millis(100);

impl Drop for StreamReader {
    fn drop(&mut self) {
        // Releases still deferred go back to the writer (and to a reader taking over). A
        // record taken by its mark goes back only once `W` is past it: leaving before, the
        // reader left `R` behind it and the next reader got the record a second time. A live
        // writer stores `W` right after the mark, so the wait is short; a dead one's record
        // is at least once, as any a dead side leaves.
        let deadline = Deadline::after(LEAVE_WAIT);
        while self.core.lead_pending()
            && !deadline.expired()
            && self.writer_status() == PeerStatus::Alive
        {
            std::thread::yield_now();
        }
        self.core.publish();
        drop(self.claim.take());
        self.core.wake_writer();
        if self.writer_status() != PeerStatus::Alive {
            self.obj.unlink_if_same();
        }
    }
}

/// Removes the stream `name` if nobody can use it any more: its writer died (or its creator
/// died before finishing it) and no live reader holds it. Never waits, never claims a row,
/// and leaves alone a stream with a live or closed writer or with a live reader (a reader
/// removes a dead writer's stream itself when it leaves). Returns whether it removed the
/// stream; a missing name or any other object is `false`.
///
/// The request/response handshake calls it for streams whose names only a dead process can
/// have created, which nothing else would ever remove.
pub(crate) fn remove_if_abandoned(name: &str, liveness: Duration) -> bool {
    remove_unless_held(name, liveness, false)
}

/// As [`remove_if_abandoned`], and also a stream whose writer closed: removes the stream
/// `name` if no live process holds either of its rows. For a name that no later process can
/// open as reader: a server connection's stream once the slot's client of that generation is
/// gone for good (a later claim took its row), or any stream of a dead server's instance.
pub(crate) fn remove_if_unused(name: &str, liveness: Duration) -> bool {
    remove_unless_held(name, liveness, true)
}

/// `closed_too`: a closed writer counts as gone, as a dead one does.
fn remove_unless_held(name: &str, liveness: Duration, closed_too: bool) -> bool {
    let obj = match Object::open(name, ObjectKind::Stream, Duration::ZERO) {
        Ok(obj) => obj,
        Err(Error::NotReady { .. }) => {
            // A creator that died before finishing leaves an object nobody can use. One not
            // known to be gone (the header does not name it yet, or it is in another pid
            // namespace) may be at work: kept.
            return Object::remove_leftover(name, false).unwrap_or(false);
        }
        Err(_) => return false,
    };
    // SAFETY: rows are all atomics; `at` checks bounds and alignment, so a hostile file too
    // short to hold the rows is an error here (and is left alone).
    let writer = unsafe { obj.at::<ParticipantRow>(WRITER_ROW) };
    // SAFETY: as above.
    let reader = unsafe { obj.at::<ParticipantRow>(READER_ROW) };
    let (Ok(writer), Ok(reader)) = (writer, reader) else {
        return false;
    };
    let writer_gone = match writer.status(liveness) {
        PeerStatus::Dead { .. } => true,
        PeerStatus::Closed => closed_too,
        PeerStatus::Alive | PeerStatus::Absent => false,
    };
    let abandoned = writer_gone && reader.status(liveness) != PeerStatus::Alive;
    if abandoned {
        obj.unlink_if_same();
    }
    abandoned
}

/// One record, borrowed in place from shared memory. Derefs to its bytes; released to the
/// writer when dropped.
///
/// While the reader drains a backlog, releases reach the writer in chunks of an eighth of the
/// capacity; a release is passed on at once when the reader has caught up with the writer,
/// when the reader finds the stream empty, and when the reader is dropped. A writer parked
/// for room is woken by those same moments, not by every record. (Passing on every record
/// made the two sides trade a cache line per message on a full stream, and waking a parked
/// writer for every record made each of its parks move a few records.)
///
/// The grant borrows the reader, so a second grant at the same time does not compile:
/// ```compile_fail
/// # use weft::stream::{StreamReader, StreamWriter};
/// # let mut w = StreamWriter::create("doc-two-reads", 4096).unwrap();
/// # let mut reader = StreamReader::open("doc-two-reads").unwrap();
/// let a = reader.read().unwrap();
/// let b = reader.read().unwrap(); // error: `reader` is already borrowed
/// # drop((a, b));
/// ```
#[must_use = "a read grant releases its record when dropped"]
#[derive(Debug)]
pub struct ReadGrant<'a> {
    reader: &'a mut StreamReader,
    rec: Record,
}

impl core::ops::Deref for ReadGrant<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the core validated `payload + len <= capacity`; the writer does not reuse the
        // bytes until we release them (a writer that breaks the protocol can change them, but
        // never make this slice point outside the mapping).
        unsafe {
            core::slice::from_raw_parts(
                self.reader.core.payload_ptr(&self.rec),
                self.rec.len as usize,
            )
        }
    }
}

impl Drop for ReadGrant<'_> {
    fn drop(&mut self) {
        self.reader.core.release();
    }
}

/// Several records, borrowed in place; all released with one cursor store when dropped.
#[must_use = "a batch releases its records when dropped"]
#[derive(Debug)]
pub struct ReadBatch<'a> {
    reader: &'a mut StreamReader,
}

impl ReadBatch<'_> {
    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.reader.batch.len()
    }

    /// Whether the batch holds no record (only from `max == 0`).
    pub fn is_empty(&self) -> bool {
        self.reader.batch.is_empty()
    }

    /// Record `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let rec = self.reader.batch.get(i)?;
        // SAFETY: as for ReadGrant::deref: validated by the core, not reused before release.
        Some(unsafe {
            core::slice::from_raw_parts(self.reader.core.payload_ptr(rec), rec.len as usize)
        })
    }

    /// The records, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

impl Drop for ReadBatch<'_> {
    fn drop(&mut self) {
        self.reader.core.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Run by a commit of a marked grant between its mark and its store of `W`, once set.
    pub(super) static PAUSE_AFTER_MARK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    static AT_MARK: AtomicBool = AtomicBool::new(false);
    static GO: AtomicBool = AtomicBool::new(false);

    fn pause_at_mark() {
        AT_MARK.store(true, Ordering::SeqCst);
        while !GO.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A reader takes a large record by its mark while the writer, descheduled between the
    /// mark and its store of `W`, has not moved `W` past it, reads it, and leaves cleanly. It
    /// used to leave `R` behind the record (given back only once `W` is past it), and the next
    /// reader got the record a second time. Leaving, it waits for the writer's `W`.
    #[test]
    #[cfg_attr(miri, ignore = "shared memory and threads")]
    fn a_record_taken_by_its_mark_is_not_delivered_again_after_a_clean_close() {
        const LEN: usize = 64 << 10;
        assert!(PAUSE_AFTER_MARK.set(pause_at_mark).is_ok());
        let name = format!("stream-mark-dup-{}", std::process::id());
        let mut w = StreamWriter::create(&name, 1 << 20).unwrap();
        let mut r = StreamReader::open(&name).unwrap();
        let writer = std::thread::spawn(move || {
            let mut g = w.reserve(LEN).unwrap();
            g.fill(0xAB);
            g.commit(LEN).unwrap();
            w
        });
        while !AT_MARK.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        {
            let g = r.try_read().expect("taken by its mark");
            assert_eq!((g.len(), g[0], g[LEN - 1]), (LEN, 0xAB, 0xAB));
        }
        // The writer goes on while the reader leaves.
        let leave = std::thread::spawn(move || drop(r));
        std::thread::sleep(Duration::from_millis(20));
        GO.store(true, Ordering::SeqCst);
        leave.join().unwrap();
        let w = writer.join().unwrap();
        let mut r2 = StreamReader::open(&name).unwrap();
        match r2.try_read() {
            Err(Error::Empty) => {}
            Ok(g) => panic!(
                "the record the first reader read was delivered again: {} bytes",
                g.len()
            ),
            Err(e) => panic!("{e}"),
        }
        drop((r2, w));
    }

    /// A side whose attempts fail until told otherwise, counting its peer checks.
    struct Counting {
        wait: WaitStrategy,
        watch: Watch,
        checks: u32,
    }

    impl Side for Counting {
        fn strategy(&self) -> WaitStrategy {
            self.wait
        }
        fn watch(&mut self) -> &mut Watch {
            &mut self.watch
        }
        fn check_peer(&mut self) -> Result<()> {
            self.checks += 1;
            Ok(())
        }
        fn peer_making_room(&self) -> bool {
            false
        }
    }

    /// Runs `block` with `wait` until `deadline` over attempts that succeed at the 40th:
    /// its outcome, the attempts made and the peer checks.
    fn run(wait: WaitStrategy, deadline: Deadline) -> (Result<()>, u32, u32) {
        let mut s = Counting {
            wait,
            watch: Watch::new(),
            checks: 0,
        };
        let mut tries = 0u32;
        let got = block(
            &mut s,
            Some(deadline),
            || Error::Empty,
            |_| {
                tries += 1;
                Ok((tries == 40).then_some(()))
            },
            |_, _| Ok(()),
        );
        (got, tries, s.checks)
    }

    /// A yield can take milliseconds on a busy core: a wait that yields looks at its peer and
    /// its deadline after every yield. Looking every 256th round made a `YieldSpin` call with
    /// a 20 ms timeout return after a second beside three busy threads on its core.
    #[test]
    fn a_yielding_wait_checks_its_peer_and_its_deadline_after_every_yield() {
        let (got, _, checks) = run(WaitStrategy::YieldSpin, Deadline::never());
        assert!(got.is_ok());
        assert_eq!(checks, 39, "one peer check after each of the 39 yields");
        let (got, tries, _) = run(WaitStrategy::YieldSpin, Deadline::after(Duration::ZERO));
        assert!(matches!(got, Err(Error::Timeout)));
        assert_eq!(tries, 1, "ended at the first yield");
        // Spinning rounds still look at the clock only every 256th time.
        let (got, _, checks) = run(WaitStrategy::BusySpin, Deadline::never());
        assert!(got.is_ok());
        assert_eq!(checks, 0);
    }
}
