//! The header every weft object starts with, and creating / opening / validating an object.
//! Byte-by-byte layout in docs/protocol.md ("Object header").

use crate::error::{Error, Result};
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::sys::{Mapping, ProcessId, ShmFile};
use alloc::string::String;
use core::time::Duration;

/// `b"WEFT\x00OBJ"` read as a little-endian u64.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"WEFT\x00OBJ");
/// The layout version this build writes and accepts. Bumped on any change to a layout.
pub const LAYOUT_VERSION: u32 = 17;
/// `ready` holds this once the creator has finished initialising the object.
const READY: u32 = 0x5245_4459; // "READY" in short
/// Bytes of the object header.
pub(crate) const HEADER_SIZE: u64 = 128;

/// What an object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ObjectKind {
    /// A byte stream ([`crate::stream`]).
    Stream = 1,
    /// A pub/sub region.
    Region = 2,
    /// A request/response server's rendezvous.
    Server = 3,
}

impl ObjectKind {
    /// The kind's name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Stream => "stream",
            ObjectKind::Region => "region",
            ObjectKind::Server => "server",
        }
    }

    fn from_raw(raw: u32) -> Option<ObjectKind> {
        match raw {
            1 => Some(ObjectKind::Stream),
            2 => Some(ObjectKind::Region),
            3 => Some(ObjectKind::Server),
            _ => None,
        }
    }
}

/// The first 128 bytes of every object. Every field is an atomic because another process may
/// write it at any time; every field is written by the creator only, before `ready`.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ObjectHeader {
    /// [`MAGIC`]. Written first, so that a half-made weft object is told from a foreign file.
    pub(crate) magic: AtomicU64,
    /// [`LAYOUT_VERSION`].
    pub(crate) version: AtomicU32,
    /// An [`ObjectKind`].
    pub(crate) kind: AtomicU32,
    /// The size of the whole layout in bytes; the file is at least this long.
    pub(crate) total_size: AtomicU64,
    /// The creating process.
    pub(crate) creator_pid: AtomicU32,
    /// [`READY`] once initialised. Written last, with Release.
    pub(crate) ready: AtomicU32,
    /// The creating process's start time (clock ticks since boot).
    pub(crate) creator_start: AtomicU64,
    /// Creation time, nanoseconds since the Unix epoch (for display only).
    pub(crate) created_unix_ns: AtomicU64,
    /// The creator's pid namespace (inode of /proc/self/ns/pid), 0 if unknown: an opener in
    /// the same namespace may judge `creator_pid` while it waits for `ready`.
    pub(crate) creator_pidns: AtomicU64,
    _reserved: [AtomicU64; 9],
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<ObjectHeader>() == HEADER_SIZE as usize);

/// A mapped, validated weft object. Handles share it through an `Arc`; the mapping lives as
/// long as any handle, grant or sample that points into it.
#[derive(Debug)]
pub(crate) struct Object {
    map: Mapping,
    name: String,
    kind: ObjectKind,
    /// (device, inode) of the file, to tell this object from a later one of the same name.
    identity: (u64, u64),
}

impl Object {
    /// Creates `name` exclusively (0600), sized `total_size`, and runs `init` on the fresh
    /// mapping. The object is not ready (openers wait) until [`Object::publish`]. On any failure
    /// the name is removed again.
    pub(crate) fn create(
        name: &str,
        kind: ObjectKind,
        total_size: u64,
        hugepages: bool,
        lock: bool,
        init: impl FnOnce(&Object) -> Result<()>,
    ) -> Result<Object> {
        let file = ShmFile::create(name, total_size)?;
        let made = (|| {
            let map = Mapping::map(&file, total_size, hugepages, lock)?;
            let identity = file.identity().unwrap_or_default();
            let obj = Object {
                map,
                name: name.into(),
                kind,
                identity,
            };
            let h = obj.header();
            let me = ProcessId::current();
            // Relaxed: all published by the Release store of `ready` below.
            h.magic.store(MAGIC, Ordering::Relaxed);
            h.version.store(LAYOUT_VERSION, Ordering::Relaxed);
            h.kind.store(kind as u32, Ordering::Relaxed);
            h.total_size.store(total_size, Ordering::Relaxed);
            h.creator_start.store(me.start_time, Ordering::Relaxed);
            h.creator_pidns
                .store(super::liveness::own_pidns(), Ordering::Relaxed);
            // SYNC POINT: Release pairs with the Acquire load in `creator`: an opener that
            // sees the pid sees the start time and namespace written before it (a zero there
            // then means "could not be read", not "not yet").
            h.creator_pid.store(me.pid, Ordering::Release);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            h.created_unix_ns.store(now, Ordering::Relaxed);
            init(&obj)?;
            Ok(obj)
        })();
        if made.is_err() {
            let _ = ShmFile::unlink(name);
        }
        made
    }

    /// Opens `name`, waits up to `timeout` for its creator to finish, and validates the header:
    /// magic, version, kind, and a layout size that the file really holds. The kind-specific
    /// part is validated by the caller. A creator in this pid namespace that died before it
    /// finished ends the wait at once ([`Error::NotReady`]): the object will never be ready.
    pub(crate) fn open(name: &str, kind: ObjectKind, timeout: Duration) -> Result<Object> {
        Object::open_as(name, Some(kind), timeout)
    }

    /// As [`Object::open`], for an object of any kind (read from its header, validated): for
    /// tools that list and inspect what is there.
    pub(crate) fn open_any(name: &str, timeout: Duration) -> Result<Object> {
        Object::open_as(name, None, timeout)
    }

    fn open_as(name: &str, want: Option<ObjectKind>, timeout: Duration) -> Result<Object> {
        let file = ShmFile::open(name)?;
        let deadline = crate::wait::Deadline::after(timeout);
        let mut rounds = 0u32;
        loop {
            let size = file.size()?;
            if size > 0 && size < HEADER_SIZE {
                // A creator sizes the file in one step: a short file is not a weft object.
                return Err(Error::Truncated {
                    name: name.into(),
                    size,
                    needed: HEADER_SIZE,
                });
            }
            if size >= HEADER_SIZE {
                let map = Mapping::map(&file, size, false, false)?;
                let identity = file.identity().unwrap_or_default();
                let mut obj = Object {
                    map,
                    name: name.into(),
                    // Replaced by the validated kind below.
                    kind: want.unwrap_or(ObjectKind::Stream),
                    identity,
                };
                let h = obj.header();
                // SYNC POINT: Acquire pairs with the Release store of `ready` in `create`.
                if h.ready.load(Ordering::Acquire) == READY {
                    obj.kind = obj.validate(size, want)?;
                    return Ok(obj);
                }
                // Relaxed: only compared, and a foreign file never changes into a weft one.
                let magic = h.magic.load(Ordering::Relaxed);
                if magic != 0 && magic != MAGIC {
                    return Err(Error::NotWeft {
                        name: name.into(),
                        found: magic,
                    });
                }
                // /proc is read every 50th round (10 ms or more), not every 200 µs.
                rounds = rounds.wrapping_add(1);
                // Looked at when the wait ends too, so that the error says what is known: the
                // clean-up of a leftover decides by it.
                let expired = deadline.expired();
                let (pid, died) = if rounds % 50 == 1 || expired {
                    creator(h)
                } else {
                    (0, false)
                };
                // A creator stores the magic before its pid (Release): a pid without the
                // magic is no weft object's. Relaxed: read after `creator`'s Acquire load of
                // the pid, which orders it after the creator's store of the magic.
                if pid != 0 && magic == 0 && h.magic.load(Ordering::Relaxed) == 0 {
                    return Err(Error::NotWeft {
                        name: name.into(),
                        found: 0,
                    });
                }
                // A creator may have stored `ready` and exited since our load above: a dead
                // process writes nothing more, so `ready` read after its death decides (if it
                // is set, the next round validates the object).
                // SYNC POINT: Acquire pairs with the Release store of `ready` in `create`.
                let gone = died && h.ready.load(Ordering::Acquire) != READY;
                if gone || expired {
                    return Err(Error::NotReady {
                        name: name.into(),
                        pid,
                        creator_gone: gone,
                    });
                }
            } else if deadline.expired() {
                return Err(Error::NotReady {
                    name: name.into(),
                    pid: 0,
                    creator_gone: false,
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Marks a freshly created object ready: openers stop waiting and validate it.
    pub(crate) fn publish(&self) {
        // SYNC POINT: Release pairs with the Acquire load of `ready` in `open`: every header
        // field and everything the creator initialised is visible to an opener that sees READY.
        self.header().ready.store(READY, Ordering::Release);
    }

    /// Removes the object's name, but only if the name still refers to this object (and not to
    /// a newer object created under the same name since).
    pub(crate) fn unlink_if_same(&self) {
        let _ = self.remove_if_same();
    }

    /// As [`unlink_if_same`](Object::unlink_if_same), saying whether it removed the name.
    ///
    /// # Errors
    /// [`Error::Io`] if the OS refuses the removal.
    pub(crate) fn remove_if_same(&self) -> Result<bool> {
        match ShmFile::open(&self.name) {
            Ok(file) if file.identity() == Some(self.identity) => {
                ShmFile::unlink(&self.name).map(|()| true)
            }
            _ => Ok(false),
        }
    }

    /// Makes way for a creator of `name` that found a not-ready object there and waited for
    /// it: removes it if it is a leftover ([`Object::remove_leftover`], a header without a
    /// creator counting as one after that wait), or if it is gone already, so that the caller
    /// tries again.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when a creator that may be at work holds the name (alive, or in
    /// another pid namespace); [`Error::Io`] when the OS refuses the removal.
    pub(crate) fn clear_leftover(name: &str) -> Result<()> {
        match judge_leftover(name, true) {
            Some(identity) => unlink_judged(name, identity).map(|_| ()),
            None if ShmFile::open(name).is_err() => Ok(()),
            None => Err(Error::AlreadyExists { name: name.into() }),
        }
    }

    /// Removes `name` if it is a leftover that will never be ready: not ready, and its creator
    /// known to be gone (or, with `unnamed`, not named in the header at all: callers pass it
    /// after waiting long enough for any live creator to have named itself). The file judged
    /// is the file removed: if the name has meanwhile been removed and created anew (another
    /// clean-up of the same leftover, then its creator), the new object is left alone.
    /// Returns whether it removed the name.
    ///
    /// # Errors
    /// [`Error::Io`] when the OS refuses the removal.
    pub(crate) fn remove_leftover(name: &str, unnamed: bool) -> Result<bool> {
        match judge_leftover(name, unnamed) {
            Some(identity) => unlink_judged(name, identity),
            None => Ok(false),
        }
    }

    /// Checks the header of a ready object; returns its kind, which must be `want` if given.
    fn validate(&self, size: u64, want: Option<ObjectKind>) -> Result<ObjectKind> {
        let h = self.header();
        let name = &self.name;
        // Relaxed loads: ordered after the Acquire load of `ready`; each value is checked before
        // anything depends on it.
        let magic = h.magic.load(Ordering::Relaxed);
        if magic != MAGIC {
            return Err(Error::NotWeft {
                name: name.clone(),
                found: magic,
            });
        }
        let version = h.version.load(Ordering::Relaxed);
        if version != LAYOUT_VERSION {
            return Err(Error::VersionMismatch {
                name: name.clone(),
                found: version,
                expected: LAYOUT_VERSION,
            });
        }
        let raw_kind = h.kind.load(Ordering::Relaxed);
        let kind = match ObjectKind::from_raw(raw_kind) {
            Some(k) if want.is_none_or(|w| w == k) => k,
            Some(k) => {
                return Err(Error::WrongKind {
                    name: name.clone(),
                    found: k.name(),
                    expected: want.map_or("any", ObjectKind::name),
                });
            }
            None => {
                return Err(Error::corrupt(
                    name,
                    "object kind",
                    raw_kind as u64,
                    "1, 2 or 3",
                ));
            }
        };
        let total = h.total_size.load(Ordering::Relaxed);
        if total < HEADER_SIZE {
            return Err(Error::corrupt(
                name,
                "total size",
                total,
                "at least the 128-byte header",
            ));
        }
        if total > size {
            return Err(Error::Truncated {
                name: name.clone(),
                size,
                needed: total,
            });
        }
        Ok(kind)
    }

    /// The header.
    pub(crate) fn header(&self) -> &ObjectHeader {
        // SAFETY: every Object's mapping is at least HEADER_SIZE bytes (checked in create/open)
        // and page-aligned; ObjectHeader is all atomics, valid for any bit pattern.
        unsafe { &*(self.map.as_ptr() as *const ObjectHeader) }
    }

    /// A `T` at `offset`, bounds- and alignment-checked against the mapping.
    ///
    /// # Safety
    /// `T` must be valid for any bit pattern and safe to share with other processes (atomics,
    /// or plain data only read through atomics).
    pub(crate) unsafe fn at<T>(&self, offset: u64) -> Result<&T> {
        let size = core::mem::size_of::<T>() as u64;
        let fits = offset
            .checked_add(size)
            .is_some_and(|end| end <= self.map.len() as u64);
        if !fits || !offset.is_multiple_of(core::mem::align_of::<T>() as u64) {
            return Err(Error::corrupt(
                &self.name,
                "offset",
                offset,
                "inside the mapping and aligned",
            ));
        }
        // SAFETY: in bounds and aligned (checked above); any bit pattern is valid for T
        // (caller's contract); the mapping outlives `&self`.
        Ok(unsafe { &*(self.map.as_ptr().add(offset as usize) as *const T) })
    }

    /// The first byte of the mapping.
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_ptr()
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// (device, inode) of the file (zeros if unknown).
    pub(crate) fn identity(&self) -> (u64, u64) {
        self.identity
    }

    /// The object's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The object's kind (validated at open).
    pub(crate) fn kind(&self) -> ObjectKind {
        self.kind
    }
}

/// The (device, inode) of the file `name` names if it is a leftover that
/// [`Object::remove_leftover`] may remove.
fn judge_leftover(name: &str, unnamed: bool) -> Option<(u64, u64)> {
    let file = ShmFile::open(name).ok()?;
    let identity = file.identity()?;
    let remove = match file.size().ok()? {
        0 => unnamed,
        // Shorter than a header: not a weft object; left alone.
        size if size < HEADER_SIZE => false,
        size => {
            let obj = Object {
                map: Mapping::map(&file, size, false, false).ok()?,
                name: name.into(),
                kind: ObjectKind::Stream,
                identity,
            };
            let h = obj.header();
            // Relaxed: only compared; a foreign file is never ours to remove.
            let magic = h.magic.load(Ordering::Relaxed);
            let (pid, dead) = creator(h);
            // SYNC POINT: Acquire pairs with the Release store of `ready` in `create`; read
            // after the creator was judged (see `open_as`).
            let ready = h.ready.load(Ordering::Acquire) == READY;
            // A creator stores the magic before the pid it publishes with Release, so a header
            // that names a creator and has no magic is no weft object's (a foreign file of our
            // prefix): never removed. Magic 0 is a weft object's only while no pid is written.
            let ours = magic == MAGIC || (magic == 0 && pid == 0);
            ours && !ready && (dead || (unnamed && pid == 0))
        }
    };
    remove.then_some(identity)
}

/// Unlinks `name` if it still names the file of `identity` (device, inode).
fn unlink_judged(name: &str, identity: (u64, u64)) -> Result<bool> {
    if !ShmFile::open(name).is_ok_and(|f| f.identity() == Some(identity)) {
        return Ok(false);
    }
    ShmFile::unlink(name)?;
    Ok(true)
}

/// The creator recorded in a header that is not ready yet: its pid (0 while the header does
/// not name it yet), and whether it is known to be dead.
///
/// A creator of this layout version stores its start time and pid namespace, then its pid
/// (Release), each once and before `ready`. Dead when /proc has no process of that pid with
/// that start time (gone, or the pid reused), judged only when the namespace is ours or could
/// not be read (0); never known when it is another (its pids mean nothing here). A start time
/// that could not be read (0), or a header of another layout version, leaves the pid alone to
/// go by, as seen from here.
fn creator(h: &ObjectHeader) -> (u32, bool) {
    // SYNC POINT: Acquire pairs with the Release store of the pid in `create`.
    let pid = h.creator_pid.load(Ordering::Acquire);
    if pid == 0 {
        return (0, false);
    }
    // Relaxed: only compared; offset 48 means the namespace in this version only.
    if h.version.load(Ordering::Relaxed) != LAYOUT_VERSION {
        return (pid, !crate::sys::pid_alive(pid));
    }
    // Relaxed (both): written once, before the pid we acquired.
    let start = h.creator_start.load(Ordering::Relaxed);
    let ns = h.creator_pidns.load(Ordering::Relaxed);
    if ns != 0 && ns != super::liveness::own_pidns() {
        return (pid, false);
    }
    let dead = if start != 0 {
        crate::sys::process_state(pid, start) == crate::sys::Liveness::Dead
    } else {
        !crate::sys::pid_alive(pid)
    };
    (pid, dead)
}

#[cfg(all(test, not(miri), not(loom)))]
mod tests {
    use super::*;

    /// A not-ready header naming `pid` with `start` as its creator, in our namespace.
    fn leftover(name: &str, pid: u32, start: u64) {
        let mut b = alloc::vec![0u8; 4096];
        b[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        b[24..28].copy_from_slice(&pid.to_le_bytes());
        b[32..40].copy_from_slice(&start.to_le_bytes());
        b[48..56].copy_from_slice(&super::super::liveness::own_pidns().to_le_bytes());
        std::fs::write(alloc::format!("/dev/shm/weft.{name}"), b).unwrap();
    }

    #[test]
    fn only_the_leftover_judged_is_removed() {
        let name = alloc::format!("obj-leftover-{}", std::process::id());
        let me = ProcessId::current();
        // Our own pid with another start time: a creator that died, its pid reused.
        leftover(&name, me.pid, me.start_time + 1);
        let judged = judge_leftover(&name, false).expect("a dead creator's leftover");
        // Another clean-up removes it first and its creator makes a new object of the name
        // (here one whose creator, this process, is at work).
        ShmFile::unlink(&name).unwrap();
        leftover(&name, me.pid, me.start_time);
        assert_eq!(
            judge_leftover(&name, false),
            None,
            "a live creator's object"
        );
        assert!(
            !unlink_judged(&name, judged).unwrap(),
            "the new object was removed"
        );
        assert!(ShmFile::open(&name).is_ok());
        // Judged again, the dead creator's leftover is removed.
        ShmFile::unlink(&name).unwrap();
        leftover(&name, me.pid, me.start_time + 1);
        assert!(Object::remove_leftover(&name, false).unwrap());
        assert!(ShmFile::open(&name).is_err());
    }

    /// A file of our prefix whose header names a dead creator but has no magic is not a weft
    /// object (a creator writes its magic before its pid): it is never judged a leftover.
    #[test]
    fn a_header_naming_a_creator_without_magic_is_left_alone() {
        let name = alloc::format!("obj-nomagic-{}", std::process::id());
        let me = ProcessId::current();
        leftover(&name, me.pid, me.start_time + 1);
        let path = alloc::format!("/dev/shm/weft.{name}");
        let mut b = std::fs::read(&path).unwrap();
        b[0..8].fill(0);
        std::fs::write(&path, &b).unwrap();
        assert_eq!(judge_leftover(&name, false), None);
        assert!(!Object::remove_leftover(&name, false).unwrap());
        assert!(ShmFile::open(&name).is_ok(), "a foreign file was removed");
        // Nor is it reported as a weft object whose creator died (`weft ls` said abandoned).
        let err = Object::open_any(&name, core::time::Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, Error::NotWeft { .. }), "{err}");
        ShmFile::unlink(&name).unwrap();
    }

    /// A creation whose initialisation fails removes the name again: nothing is left behind
    /// for openers to wait on.
    #[test]
    fn a_failed_creation_removes_the_name() {
        let name = alloc::format!("obj-failed-{}", std::process::id());
        let _ = ShmFile::unlink(&name);
        let err = Object::create(&name, ObjectKind::Stream, 4096, false, false, |_| {
            Err(Error::corrupt("x", "test", 1, "2"))
        })
        .unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
        let left = ShmFile::open(&name);
        let _ = ShmFile::unlink(&name);
        assert!(
            matches!(left, Err(Error::NotFound { .. })),
            "the name was left behind"
        );
    }

    /// `at` refuses an offset that is not aligned for its type, or whose value would reach
    /// past the mapping, with `Corrupt`; a value that ends exactly at the mapping's end is in.
    #[test]
    fn at_checks_alignment_and_bounds() {
        let name = alloc::format!("obj-at-{}", std::process::id());
        let _ = ShmFile::unlink(&name);
        let obj =
            Object::create(&name, ObjectKind::Stream, 4096, false, false, |_| Ok(())).unwrap();
        let _ = ShmFile::unlink(&name);
        let at = |offset: u64| {
            // SAFETY: AtomicU64 is valid for any bit pattern and safe to share.
            unsafe { obj.at::<AtomicU64>(offset) }
                .map(|_| ())
                .map_err(|e| e.kind())
        };
        assert_eq!(at(4088), Ok(()));
        for bad in [4, 4092, 4096, u64::MAX - 7] {
            assert_eq!(at(bad), Err(crate::ErrorKind::Corrupt), "{bad}");
        }
    }
}
