//! Read-only views of the objects on this machine, for tools (`weft ls`, `weft info`,
//! `weft clean`): what each object is, who created it, who takes part in it and whether they
//! are alive. Nothing here joins an object or writes a line its participants use; the one
//! writing call, [`remove_abandoned`], removes a name only when no participant is alive.
//!
//! Every object is validated as an opener would validate it: a file that is not a weft
//! object, speaks another layout version or holds impossible values is reported with the
//! error that says why ([`ObjectInfo::error`]), never read beyond what was checked.

use super::liveness::{ParticipantRow, PeerStatus};
use super::object::{Object, ObjectKind};
use crate::error::{Error, Result, Role};
use crate::sync::{Arc, Ordering};
use crate::sys::{self, ShmFile};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

/// How long an inspection waits for an object whose creator is still initialising it.
const OPEN_TIMEOUT: Duration = Duration::from_millis(20);

/// How long a participant that cannot be checked through /proc (another pid namespace) may go
/// without a heartbeat before a tool reports it dead: the handles' default.
pub(crate) const LIVENESS_TIMEOUT: Duration = Duration::from_secs(1);

/// How long such a participant's heartbeat must have stopped before [`remove_abandoned`]
/// takes it for dead: removing an object is for good, and a live process in another pid
/// namespace that was stopped (SIGSTOP, a debugger, a frozen container) for a few seconds must
/// not lose it. Processes this namespace can see are judged through /proc, at once.
pub(crate) const REMOVAL_LIVENESS_TIMEOUT: Duration = Duration::from_secs(30);

/// What a participant row says about its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PeerState {
    /// Nobody holds the row (never claimed, or left free).
    Absent,
    /// Held by a live process.
    Alive,
    /// Its holder let go cleanly.
    Closed,
    /// Held by a process that died without letting go (SIGKILL, a crash).
    Dead,
}

impl PeerState {
    /// The state's name, as printed: `absent`, `alive`, `closed`, `dead`.
    pub fn name(self) -> &'static str {
        match self {
            PeerState::Absent => "absent",
            PeerState::Alive => "alive",
            PeerState::Closed => "closed",
            PeerState::Dead => "dead",
        }
    }
}

impl From<PeerStatus> for PeerState {
    fn from(s: PeerStatus) -> PeerState {
        match s {
            PeerStatus::Absent => PeerState::Absent,
            PeerStatus::Alive => PeerState::Alive,
            PeerStatus::Closed => PeerState::Closed,
            PeerStatus::Dead { .. } => PeerState::Dead,
        }
    }
}

/// One participant row of an object, as read now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The row's index in its object's table (a stream: 0 writer, 1 reader; a server: 0 the
    /// server, else the client's slot + 1; a region: the participant index).
    pub index: u32,
    /// The role the row is for; `None` for a region row whose holder has not said yet.
    pub role: Option<Role>,
    /// The holder's process id, or a closed row's last holder's; 0 for an absent row (never
    /// claimed, or let go without closing).
    pub pid: u32,
    /// Whether the holder is alive.
    pub state: PeerState,
}

impl Peer {
    /// Reads `row`; a holder in another pid namespace is dead once its heartbeat is older than
    /// `liveness`.
    pub(crate) fn read(
        index: u32,
        role: Option<Role>,
        row: &ParticipantRow,
        liveness: Duration,
    ) -> Peer {
        let state = PeerState::from(row.status(liveness));
        Peer {
            index,
            role,
            pid: if state == PeerState::Absent {
                0
            } else {
                row.pid()
            },
            state,
        }
    }
}

/// What [`objects`] and [`object`] report about one object under `/dev/shm/weft.*`.
#[derive(Debug)]
pub struct ObjectInfo {
    /// The object's name (without the `weft.` prefix).
    pub name: String,
    /// Its kind, once its header has been validated (`None` when the header itself failed).
    pub kind: Option<ObjectKind>,
    /// Bytes in the file.
    pub size: u64,
    /// The creating process (0 if the header does not say).
    pub creator_pid: u32,
    /// Whether the creating process is still running (checked against its start time, so a
    /// reused pid is not mistaken for it).
    pub creator_alive: bool,
    /// Creation time, nanoseconds since the Unix epoch (0 if unknown).
    pub created_unix_ns: u64,
    /// Every participant row that was ever claimed (absent rows are left out).
    pub peers: Vec<Peer>,
    /// Why the object could not be read as a valid weft object ([`Error::NotReady`],
    /// [`Error::NotWeft`], [`Error::VersionMismatch`], [`Error::Corrupt`], ...); `None` when it
    /// validated.
    pub error: Option<Error>,
    /// A stream whose writer closed before any reader came, holding records for a reader yet
    /// to come: kept although nobody is alive.
    mailbox: bool,
    /// Nobody is alive by the report's one-second heartbeat bound, but somebody is by the
    /// removal's ([`REMOVAL_LIVENESS_TIMEOUT`]): a participant in another pid namespace whose
    /// heartbeat stopped a few seconds ago (a stopped process), which a removal keeps.
    alive_for_removal: bool,
}

impl ObjectInfo {
    /// Participants alive now.
    pub fn alive(&self) -> usize {
        self.count(PeerState::Alive)
    }

    /// Participants whose process died without letting go.
    pub fn dead(&self) -> usize {
        self.count(PeerState::Dead)
    }

    fn count(&self, state: PeerState) -> usize {
        self.peers.iter().filter(|p| p.state == state).count()
    }

    /// Whether `weft clean` may remove the object: it validated and nobody in it is alive
    /// (its participants died, or left without removing it, which two last participants leaving
    /// at the same moment can do); or its creator died before making it ready. Kept: a stream
    /// whose writer closed before any reader came, with records for a reader yet to come; an
    /// object that fails validation (it may not be weft's); and one with a participant in
    /// another pid namespace whose heartbeat stopped less than 30 s ago, which
    /// [`remove_abandoned`] still counts alive (it is reported dead after one second). So this
    /// says what [`remove_abandoned`] would do now.
    pub fn is_abandoned(&self) -> bool {
        match &self.error {
            None => self.alive() == 0 && !self.mailbox && !self.alive_for_removal,
            Some(Error::NotReady { creator_gone, .. }) => *creator_gone,
            Some(_) => false,
        }
    }
}

/// Every weft object on this machine, sorted by name. An object being created or removed at
/// the same moment may be missed or reported [`Error::NotReady`] / [`Error::NotFound`].
///
/// # Examples
/// ```
/// use weft::shm::{ObjectKind, objects};
/// use weft::stream::StreamWriter;
/// # let name = format!("doc-objects-{}", std::process::id());
/// let _writer = StreamWriter::create(&name, 4096)?;
/// let all = objects();
/// let mine = all.iter().find(|o| o.name == name).unwrap();
/// assert_eq!(mine.kind, Some(ObjectKind::Stream));
/// assert_eq!(mine.creator_pid, std::process::id());
/// assert_eq!((mine.alive(), mine.dead()), (1, 0));
/// # Ok::<(), weft::Error>(())
/// ```
pub fn objects() -> Vec<ObjectInfo> {
    sys::list_objects().iter().map(|n| describe(n)).collect()
}

/// The object `name`.
///
/// # Errors
/// [`Error::InvalidName`] for a name weft never gives an object, [`Error::NotFound`] when
/// there is none. An object that exists but fails validation is `Ok`, with
/// [`ObjectInfo::error`] saying why.
///
/// # Examples
/// ```
/// use weft::ErrorKind;
/// let missing = weft::shm::object("doc-no-such-object").unwrap_err();
/// assert_eq!(missing.kind(), ErrorKind::NotFound);
/// assert_eq!(weft::shm::object("a/b").unwrap_err().kind(), ErrorKind::InvalidName);
/// ```
pub fn object(name: &str) -> Result<ObjectInfo> {
    sys::validate_name(name)?;
    let info = describe(name);
    match info.error {
        Some(Error::NotFound { .. }) => Err(Error::NotFound { name: name.into() }),
        _ => Ok(info),
    }
}

/// Removes the object `name` if it is abandoned ([`ObjectInfo::is_abandoned`]), checked again
/// right before the removal, and only if the name still refers to the same file. Returns
/// whether it was removed. Processes that still map it keep their mapping.
///
/// A process that joins the object between the check and the removal keeps a mapping whose
/// name is gone (the same race a new creator of the name accepts when it replaces a stale
/// object); a live participant is never removed from under.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::NotFound`]; [`Error::Io`] if the OS refuses the removal.
pub fn remove_abandoned(name: &str) -> Result<bool> {
    remove_if_abandoned(name, false)
}

/// [`remove_abandoned`], and with `own` [`remove_own_abandoned`].
fn remove_if_abandoned(name: &str, own: bool) -> Result<bool> {
    sys::validate_name(name)?;
    match open_for_inspection(name) {
        Ok(obj) => {
            let obj = Arc::new(obj);
            let info = describe_open(&obj, REMOVAL_LIVENESS_TIMEOUT);
            if !info.is_abandoned() {
                return Ok(false);
            }
            // The OS may refuse (another user's file in the sticky /dev/shm): an error, not a
            // removal.
            obj.remove_if_same()
        }
        // A header that names no creator yet: only the name's owner knows it is no creator's
        // at work.
        Err(Error::NotReady { .. }) => Object::remove_leftover(name, own),
        Err(Error::NotFound { .. }) => Err(Error::NotFound { name: name.into() }),
        Err(_) => Ok(false),
    }
}

/// As [`remove_abandoned`], for a name the caller owns (one it made unique, such as one with
/// its own pid in it) whose creator it knows to be gone: an object whose creator died before
/// its header named it (a file that is empty, or whose header has no creator yet) is removed
/// too, where `remove_abandoned` leaves it, since from the file alone it cannot be told from
/// one whose creator is at work this moment.
///
/// # Errors
/// As [`remove_abandoned`].
///
/// # Examples
/// ```
/// # let name = format!("doc-own-{}", std::process::id());
/// // A creator killed between the file's creation and its header leaves an empty file.
/// let path = format!("/dev/shm/weft.{name}");
/// std::fs::File::create(&path)?;
/// assert!(!weft::shm::remove_abandoned(&name)?); // whose creator may be at work
/// assert!(weft::shm::remove_own_abandoned(&name)?); // ours, and its creator is gone
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn remove_own_abandoned(name: &str) -> Result<bool> {
    remove_if_abandoned(name, true)
}

/// Opens `name` for an inspection: at once, and again for up to [`OPEN_TIMEOUT`] only if it
/// is not ready and its header names a creator that may still be at work. A file whose header
/// names none (empty, or zero-filled) is reported at once: waiting for it cost a listing
/// 20 ms per such file, 6 s for 300 of them.
fn open_for_inspection(name: &str) -> Result<Object> {
    match Object::open_any(name, Duration::ZERO) {
        Err(Error::NotReady {
            pid,
            creator_gone: false,
            ..
        }) if pid != 0 => Object::open_any(name, OPEN_TIMEOUT),
        other => other,
    }
}

/// Reads what can be read of `name`; never fails (the error goes into the report).
fn describe(name: &str) -> ObjectInfo {
    match open_for_inspection(name) {
        Ok(obj) => describe_open(&Arc::new(obj), LIVENESS_TIMEOUT),
        Err(e) => {
            let size = ShmFile::open(name)
                .and_then(|f| f.size())
                .unwrap_or_default();
            let (creator_pid, gone) = match &e {
                Error::NotReady {
                    pid, creator_gone, ..
                } => (*pid, *creator_gone),
                _ => (0, false),
            };
            ObjectInfo {
                name: name.into(),
                kind: None,
                size,
                creator_pid,
                // Display only: some process has the pid here, and the header does not prove
                // the creator gone (a pid of another namespace is not checked).
                creator_alive: creator_pid != 0 && !gone && sys::pid_alive(creator_pid),
                created_unix_ns: 0,
                peers: Vec::new(),
                error: Some(e),
                mailbox: false,
                alive_for_removal: false,
            }
        }
    }
}

fn describe_open(obj: &Arc<Object>, liveness: Duration) -> ObjectInfo {
    let h = obj.header();
    // Relaxed: written by the creator before `ready`, which the open loaded with Acquire;
    // displayed only.
    let creator_pid = h.creator_pid.load(Ordering::Relaxed);
    let creator_start = h.creator_start.load(Ordering::Relaxed);
    let created_unix_ns = h.created_unix_ns.load(Ordering::Relaxed);
    let mut mailbox = false;
    let peers = match obj.kind() {
        ObjectKind::Stream => super::stream::stream_info(obj, liveness).map(|s| {
            mailbox = s.writer.state == PeerState::Closed
                && s.reader.state == PeerState::Absent
                && s.used > 0;
            vec![s.writer, s.reader]
        }),
        ObjectKind::Server => super::server::server_info(obj, liveness).map(|s| {
            let mut v = vec![s.server];
            v.extend(s.clients);
            v
        }),
        ObjectKind::Region => super::pubsub::inspect::region_peers(obj, liveness),
    };
    let (mut peers, error) = match peers {
        Ok(p) => (p, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    peers.retain(|p| p.state != PeerState::Absent);
    // Nobody alive by the report's bound: judged again as a removal would judge it, so that
    // `is_abandoned` (what `weft ls` and `weft clean --dry-run` say) is what the removal does.
    let alive_for_removal = error.is_none()
        && liveness < REMOVAL_LIVENESS_TIMEOUT
        && !peers.iter().any(|p| p.state == PeerState::Alive)
        && describe_open(obj, REMOVAL_LIVENESS_TIMEOUT).alive() > 0;
    ObjectInfo {
        name: obj.name().into(),
        kind: Some(obj.kind()),
        size: obj.len(),
        creator_pid,
        creator_alive: sys::process_state(creator_pid, creator_start) == sys::Liveness::Alive,
        created_unix_ns,
        peers,
        error,
        mailbox,
        alive_for_removal,
    }
}
