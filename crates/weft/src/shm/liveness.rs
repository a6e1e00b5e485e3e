//! Participant rows: who holds a role in an object, whether they are alive, and the
//! process-wide heartbeat that lets peers in another pid namespace tell.
//!
//! A row is claimed with one compare-and-swap of its `owner` word (pid and the low 32 bits of
//! the process start time), so two claimants never both win and a dead owner is told from a new
//! process that reuses its pid. Liveness is decided by /proc when both processes share a pid
//! namespace, and by the heartbeat otherwise. Layout in docs/protocol.md ("Participant row").

use super::object::Object;
use crate::error::{Error, Result, Role};
use crate::sync::{Arc, AtomicU32, AtomicU64, Ordering};
use crate::sys::{self, Liveness, ProcessId};
use alloc::vec::Vec;
use core::time::Duration;
use std::sync::{Mutex, OnceLock};

/// How often the heartbeat thread stamps this process's rows.
pub(crate) const HEARTBEAT_PERIOD: Duration = Duration::from_millis(100);

/// The row has never been claimed, or its owner left it free.
pub(crate) const STATE_FREE: u32 = 0;
/// The owner holds the role.
pub(crate) const STATE_ACTIVE: u32 = 1;
/// The owner let go cleanly (a writer closed; a reader detached).
pub(crate) const STATE_CLOSED: u32 = 2;

/// Bit 31 of `owner`: the recorded process holds the role. Set by the claim's CAS itself and
/// cleared when the owner lets go, so that "who" and "holds it" change in one atomic step: a
/// row claimed a moment ago is never mistaken for its previous owner's closed row (a second
/// claimant then took it over, and two processes held one row). Linux pids are below 2^22
/// (`PID_MAX_LIMIT`), so the bit is never part of a pid.
pub(crate) const OWNER_HOLDS: u64 = 1 << 31;

/// One participant, on its own cache line. Every field is written by the row's owner only,
/// except `owner`, which a claimant CASes.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct ParticipantRow {
    /// 0 when never claimed; else `pid | (start_time as u32) << 32`, with [`OWNER_HOLDS`]
    /// while that process holds the role.
    pub(crate) owner: AtomicU64,
    /// STATE_FREE, STATE_ACTIVE or STATE_CLOSED.
    pub(crate) state: AtomicU32,
    _pad: AtomicU32,
    /// The owner's pid namespace (inode of /proc/self/ns/pid), 0 if unknown.
    pub(crate) pidns: AtomicU64,
    /// CLOCK_MONOTONIC nanoseconds, stamped every [`HEARTBEAT_PERIOD`] by the owner's process.
    pub(crate) heartbeat: AtomicU64,
    /// Incremented by every claim: a takeover is visible to the other side.
    pub(crate) epoch: AtomicU64,
    _reserved: [AtomicU64; 3],
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<ParticipantRow>() == 64);

fn owner_word(me: ProcessId) -> u64 {
    me.pid as u64 | ((me.start_time as u32 as u64) << 32)
}

/// What a row says about its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerStatus {
    /// Nobody has ever held the role.
    Absent,
    /// Held by a live process.
    Alive,
    /// Let go cleanly.
    Closed,
    /// Held by a process that died.
    Dead {
        /// The dead owner's pid.
        pid: u32,
    },
}

impl ParticipantRow {
    /// Reads the row and decides about its owner. `timeout` bounds the heartbeat's age when
    /// /proc cannot tell.
    pub(crate) fn status(&self, timeout: Duration) -> PeerStatus {
        // Acquire: pairs with the AcqRel claim CAS and the Release clear of OWNER_HOLDS in
        // `Claim::drop`: the fields the owner wrote before are visible.
        let owner = self.owner.load(Ordering::Acquire);
        if owner == 0 {
            return PeerStatus::Absent;
        }
        if owner & OWNER_HOLDS == 0 {
            return if self.closed_after(owner) {
                PeerStatus::Closed
            } else {
                PeerStatus::Absent
            };
        }
        // Held (whatever `state` says yet: a fresh claimant stores ACTIVE just after its CAS).
        let owner = owner & !OWNER_HOLDS;
        let pid = owner as u32;
        if owner_alive(self, owner, timeout) {
            PeerStatus::Alive
        } else {
            PeerStatus::Dead { pid }
        }
    }

    /// Whether any process has ever claimed the row (a claim leaves its owner's word behind
    /// when it lets go, and nothing clears it).
    pub(crate) fn ever_claimed(&self) -> bool {
        // Acquire: pairs with the AcqRel claim CAS in `Claim::take`.
        self.owner.load(Ordering::Acquire) != 0
    }

    /// Whether the row's last owner let go cleanly, from two loads of the row's line and no
    /// /proc read: the check a blocked side makes on every round.
    pub(crate) fn closed(&self) -> bool {
        // Acquire: pairs with the AcqRel claim CAS and the Release clear of OWNER_HOLDS in
        // `Claim::drop`.
        let owner = self.owner.load(Ordering::Acquire);
        owner != 0 && owner & OWNER_HOLDS == 0 && self.closed_after(owner)
    }

    /// With `owner` read and let go: whether the owner left through `Claim::drop`. `state` is
    /// only read for a row nobody holds: a claimant stores ACTIVE just after its CAS, so
    /// a held row may still show its previous owner's CLOSED.
    fn closed_after(&self, owner: u64) -> bool {
        debug_assert!(owner & OWNER_HOLDS == 0);
        // Acquire: pairs with the Release store of `state` in `Claim::drop`.
        self.state.load(Ordering::Acquire) != STATE_FREE
    }

    /// The recorded owner's identity, pid and start time, without the holds bit (0 if none).
    pub(crate) fn owner_id(&self) -> u64 {
        // Relaxed: compared by callers that tolerate a stale value (see their comments).
        self.owner.load(Ordering::Relaxed) & !OWNER_HOLDS
    }

    /// The recorded owner's pid (0 if none).
    pub(crate) fn pid(&self) -> u32 {
        // Relaxed: display only.
        (self.owner.load(Ordering::Relaxed) & !OWNER_HOLDS) as u32
    }
}

/// This process's pid namespace (see [`sys::pid_namespace`]), read once.
pub(crate) fn own_pidns() -> u64 {
    static NS: OnceLock<u64> = OnceLock::new();
    *NS.get_or_init(sys::pid_namespace)
}

fn owner_alive(row: &ParticipantRow, owner: u64, timeout: Duration) -> bool {
    let pid = owner as u32;
    let start = (owner >> 32) as u32;
    // Relaxed: a stale namespace or heartbeat only delays a verdict by one check.
    let ns = row.pidns.load(Ordering::Relaxed);
    let mine = own_pidns();
    if ns != 0 && ns == mine {
        return sys::process_state_low32(pid, start) != Liveness::Dead;
    }
    if ns == 0 && mine != 0 {
        // Claimed a moment ago (the namespace is written right after the claim), or by a
        // process that could not read its namespace: trust /proc unless it has no such pid.
        if sys::process_state_low32(pid, start) == Liveness::Alive {
            return true;
        }
    }
    let beat = row.heartbeat.load(Ordering::Relaxed);
    // Saturated: a timeout past 2^64 ns (584 years; a C caller may pass any number of
    // milliseconds) means never, not what is left after wrapping (a few hundred microseconds).
    let limit = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
    sys::monotonic_ns().saturating_sub(beat) < limit
}

/// Proof that this process holds a row; stamps its heartbeat while it lives and marks the row
/// closed when dropped.
#[derive(Debug)]
pub(crate) struct Claim {
    obj: Arc<Object>,
    offset: u64,
    beat_id: u64,
    /// The `owner` word this claim wrote (with [`OWNER_HOLDS`]).
    word: u64,
    /// The row's `epoch` after this claim's increment: the same process may claim the row
    /// again (with the same `word`) after a takeover, and a claim is ours only with both.
    epoch: u64,
}

impl Claim {
    /// Claims the row at `offset` of `obj` for this process, taking it over from an owner that
    /// closed or died. A live owner keeps it: [`Error::InUse`].
    pub(crate) fn take(
        obj: &Arc<Object>,
        offset: u64,
        role: Role,
        timeout: Duration,
    ) -> Result<Claim> {
        // SAFETY: ParticipantRow is all atomics: valid for any bit pattern, shareable.
        let row: &ParticipantRow = unsafe { obj.at(offset)? };
        let me = ProcessId::current();
        let mine = owner_word(me);
        for _ in 0..16 {
            // Acquire: pairs with the AcqRel claim CAS of whoever holds the row.
            let cur = row.owner.load(Ordering::Acquire);
            if cur == mine | OWNER_HOLDS {
                // This process already holds the role through another handle.
                return Err(Error::InUse {
                    name: obj.name().into(),
                    role,
                    pid: me.pid,
                });
            }
            if cur & OWNER_HOLDS != 0 && owner_alive(row, cur & !OWNER_HOLDS, timeout) {
                return Err(Error::InUse {
                    name: obj.name().into(),
                    role,
                    pid: (cur & !OWNER_HOLDS) as u32,
                });
            }
            // Free, let go, or held by a dead process: take it, holder and "holds" at once.
            // AcqRel: Acquire so that the previous owner's last writes (its cursor) are visible
            // to us; Release pairs with the Acquire load of `owner` in `status` and above.
            if row
                .owner
                .compare_exchange(cur, mine | OWNER_HOLDS, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // Relaxed: published by the Release store of `state` below.
                row.pidns.store(own_pidns(), Ordering::Relaxed);
                row.heartbeat.store(sys::monotonic_ns(), Ordering::Relaxed);
                let epoch = row.epoch.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
                // SYNC POINT: Release pairs with the Acquire load of `state` in `status`.
                row.state.store(STATE_ACTIVE, Ordering::Release);
                let beat_id = heartbeat::register(obj.clone(), offset);
                return Ok(Claim {
                    obj: obj.clone(),
                    offset,
                    beat_id,
                    word: mine | OWNER_HOLDS,
                    epoch,
                });
            }
        }
        Err(Error::InUse {
            name: obj.name().into(),
            role,
            pid: row.pid(),
        })
    }

    /// Whether the row is still ours: no survivor took it over (judging us dead by a stale
    /// heartbeat, across pid namespaces, while this process was stopped), and this process
    /// did not claim it again since through another handle.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    pub(crate) fn held(&self) -> bool {
        let row = self.row();
        // Acquire: pairs with the claim CAS of a process that took the row over. Relaxed
        // (epoch): every later claim increments it right after its CAS, so it differs from
        // ours once a second claim of this process got past its CAS (the first one, another
        // process's, changed it already), and until then the owner word differs.
        row.owner.load(Ordering::Acquire) == self.word
            && row.epoch.load(Ordering::Relaxed) == self.epoch
    }

    fn row(&self) -> &ParticipantRow {
        // SAFETY: checked in `take`; the mapping lives as long as `self.obj`.
        unsafe { self.obj.at(self.offset) }.expect("checked when claimed")
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        heartbeat::unregister(self.beat_id);
        let row = self.row();
        // A process that took the row over judged us dead (a heartbeat that went stale across
        // pid namespaces): the row is not ours to close.
        if !self.held() {
            return;
        }
        // SYNC POINT: Release pairs with the Acquire load of `state` in `status`: everything
        // this side published (a writer's last commit) happens before a peer sees CLOSED.
        row.state.store(STATE_CLOSED, Ordering::Release);
        // Release: pairs with the Acquire loads of `owner` in `status` and `take`: whoever
        // takes the row over sees everything above. A CAS, so that a takeover in between
        // keeps its word.
        let _ = row.owner.compare_exchange(
            self.word,
            self.word & !OWNER_HOLDS,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

/// One thread per process stamps the heartbeat of every row the process holds, independent of
/// any message rate.
///
/// Per process, not per program run: a child of `fork` inherits its parent's registry but not
/// its thread (and perhaps the registry's lock, held by that thread at the fork). Its first
/// claim makes a registry of its own, with its own thread, and never touches the inherited
/// one. A shared `OnceLock` started the thread once per program: nothing stamped the rows a
/// forked child claimed, and a peer in another pid namespace, which judges by the heartbeat
/// alone, took the live child for dead after a second.
mod heartbeat {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering as StdOrdering};

    struct Entry {
        id: u64,
        obj: Arc<Object>,
        offset: u64,
    }

    /// The rows one process stamps. Leaked: its thread runs as long as the process.
    struct Registry {
        pid: u32,
        entries: Mutex<Vec<Entry>>,
    }

    /// This process's registry; a parent's, in a child of `fork` that has claimed nothing yet;
    /// null before the first claim.
    static CURRENT: AtomicPtr<Registry> = AtomicPtr::new(core::ptr::null_mut());
    static NEXT_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

    /// The registry at `p` (a value of `CURRENT`), if it is process `me`'s.
    fn registry_of(p: *mut Registry, me: u32) -> Option<&'static Registry> {
        // SAFETY: a non-null `CURRENT` names a registry that was leaked (never freed), in this
        // process or, copied by `fork`, in its parent.
        let r = unsafe { p.as_ref() }?;
        (r.pid == me).then_some(r)
    }

    /// This process's registry, made (with its thread) by the first call in each process.
    fn current() -> &'static Registry {
        let me = std::process::id();
        // Acquire: pairs with the Release of the exchange below (the registry's fields are
        // written before it is published).
        let mut seen = CURRENT.load(StdOrdering::Acquire);
        loop {
            if let Some(r) = registry_of(seen, me) {
                return r;
            }
            let fresh = Box::into_raw(Box::new(Registry {
                pid: me,
                entries: Mutex::new(Vec::new()),
            }));
            // AcqRel: Release publishes the registry's fields; Acquire as for the load above.
            match CURRENT.compare_exchange(seen, fresh, StdOrdering::AcqRel, StdOrdering::Acquire) {
                Ok(_) => {
                    // SAFETY: just published and never freed.
                    let r: &'static Registry = unsafe { &*fresh };
                    let _ = std::thread::Builder::new()
                        .name("weft-heartbeat".into())
                        .spawn(move || run(r));
                    return r;
                }
                Err(now) => {
                    // Another thread of this process published its registry first.
                    // SAFETY: `fresh` was never shared.
                    drop(unsafe { Box::from_raw(fresh) });
                    seen = now;
                }
            }
        }
    }

    pub(super) fn register(obj: Arc<Object>, offset: u64) -> u64 {
        // Relaxed: a unique counter, no data published through it.
        let id = NEXT_ID.fetch_add(1, StdOrdering::Relaxed);
        current()
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Entry { id, obj, offset });
        id
    }

    /// Stops stamping the row registered as `id`. A no-op in a child of `fork` for a row its
    /// parent registered: the child never stamps it, and the inherited registry's lock may be
    /// held for ever.
    pub(super) fn unregister(id: u64) {
        // Acquire: as in `current`.
        if let Some(r) = registry_of(CURRENT.load(StdOrdering::Acquire), std::process::id()) {
            r.entries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|e| e.id != id);
        }
    }

    fn run(r: &'static Registry) {
        loop {
            std::thread::sleep(HEARTBEAT_PERIOD);
            let now = sys::monotonic_ns();
            for e in r.entries.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                // SAFETY: checked when the claim was taken; the entry's Arc keeps the mapping.
                if let Ok(row) = unsafe { e.obj.at::<ParticipantRow>(e.offset) } {
                    // Relaxed: a timestamp read on its own.
                    row.heartbeat.store(now, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A liveness timeout too long for 64 bits of nanoseconds (the C ABI takes any number of
    /// milliseconds) means "never dead by the heartbeat": it used to wrap, to 0.45 ms for this
    /// one, and a peer a second behind on its heartbeat was reported dead.
    #[test]
    fn a_timeout_past_64_bits_of_nanoseconds_never_expires() {
        let row = ParticipantRow::default();
        // Another pid namespace than ours: only the heartbeat decides.
        row.pidns
            .store(own_pidns().wrapping_add(1).max(1), Ordering::Relaxed);
        row.owner
            .store(OWNER_HOLDS | 0x7fff_fff0, Ordering::Relaxed);
        row.heartbeat.store(
            sys::monotonic_ns().saturating_sub(1_000_000_000),
            Ordering::Relaxed,
        );
        let huge = Duration::from_millis(18_446_744_073_710);
        assert_eq!(row.status(huge), PeerStatus::Alive);
        assert_eq!(row.status(Duration::MAX), PeerStatus::Alive);
        assert!(matches!(
            row.status(Duration::from_millis(100)),
            PeerStatus::Dead { .. }
        ));
    }

    /// A row that a new claimant has just taken still shows its previous owner's CLOSED until
    /// the claimant stores ACTIVE: judged by `owner`, it is held, not closed.
    #[test]
    fn a_freshly_claimed_row_is_not_its_previous_owners_close() {
        let row = ParticipantRow::default();
        let me = owner_word(crate::sys::ProcessId::current());
        assert!(!row.closed());
        // The previous owner let go cleanly.
        row.state.store(STATE_CLOSED, Ordering::Relaxed);
        row.owner.store(me, Ordering::Relaxed);
        assert!(row.closed());
        assert_eq!(row.status(Duration::from_secs(1)), PeerStatus::Closed);
        // A claimant's CAS landed; its ACTIVE store has not yet.
        row.owner.store(me | OWNER_HOLDS, Ordering::Relaxed);
        assert!(!row.closed());
        assert_eq!(row.status(Duration::from_secs(1)), PeerStatus::Alive);
    }

    /// Rows of real shared-memory objects, and processes: not under miri or loom.
    #[cfg(not(any(miri, loom)))]
    mod on_shm {
        use super::*;

        /// A fresh 4 KiB object named for `tag` and this process, and the row at offset 512 in it.
        fn object(tag: &str) -> (Arc<Object>, u64, Unlink) {
            use crate::shm::object::ObjectKind;
            let name = alloc::format!("liveness-{tag}-{}", std::process::id());
            let _ = crate::sys::ShmFile::unlink(&name);
            let obj =
                Object::create(&name, ObjectKind::Stream, 4096, false, false, |_| Ok(())).unwrap();
            obj.publish();
            (Arc::new(obj), 512, Unlink(name))
        }

        /// Removes the name when dropped.
        struct Unlink(alloc::string::String);

        impl Drop for Unlink {
            fn drop(&mut self) {
                let _ = crate::sys::ShmFile::unlink(&self.0);
            }
        }

        fn row(obj: &Object, offset: u64) -> &ParticipantRow {
            // SAFETY: all atomics, in bounds (checked).
            unsafe { obj.at(offset) }.unwrap()
        }

        /// A dead owner whose pid now belongs to another process (here this one, with another
        /// start time) is dead, in our namespace: the start time tells them apart.
        #[test]
        fn a_reused_pid_is_not_its_dead_owner() {
            let me = ProcessId::current();
            let row = ParticipantRow::default();
            let dead = ProcessId {
                pid: me.pid,
                start_time: me.start_time + 1,
            };
            row.owner
                .store(owner_word(dead) | OWNER_HOLDS, Ordering::Relaxed);
            row.pidns.store(own_pidns(), Ordering::Relaxed);
            row.heartbeat.store(sys::monotonic_ns(), Ordering::Relaxed);
            assert_eq!(
                row.status(Duration::from_secs(3600)),
                PeerStatus::Dead { pid: me.pid }
            );
            row.owner
                .store(owner_word(me) | OWNER_HOLDS, Ordering::Relaxed);
            assert_eq!(row.status(Duration::from_secs(3600)), PeerStatus::Alive);
        }

        /// A row held by another live process is not taken over: `InUse`, naming that process.
        #[test]
        fn a_live_owner_in_another_process_keeps_its_row() {
            let (obj, offset, _u) = object("live-owner");
            let mut child = std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .unwrap();
            let pid = child.id();
            let stat = std::fs::read_to_string(alloc::format!("/proc/{pid}/stat")).unwrap();
            let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
                .split_ascii_whitespace()
                .nth(19)
                .unwrap()
                .parse()
                .unwrap();
            let row = row(&obj, offset);
            row.owner.store(
                owner_word(ProcessId {
                    pid,
                    start_time: start,
                }) | OWNER_HOLDS,
                Ordering::Relaxed,
            );
            row.pidns.store(own_pidns(), Ordering::Relaxed);
            row.heartbeat.store(sys::monotonic_ns(), Ordering::Relaxed);
            row.state.store(STATE_ACTIVE, Ordering::Relaxed);
            let taken = Claim::take(&obj, offset, Role::Reader, Duration::from_secs(1));
            let _ = child.kill();
            let _ = child.wait();
            match taken {
                Err(Error::InUse { pid: p, .. }) => assert_eq!(p, pid),
                other => panic!("took a live process's row: {other:?}"),
            }
            // Once it is dead, the row is taken over.
            let claim = Claim::take(&obj, offset, Role::Reader, Duration::from_secs(1)).unwrap();
            assert!(claim.held());
        }

        /// A fresh claim carries a fresh heartbeat: a peer in another pid namespace, which judges
        /// by the heartbeat alone, sees it alive at once (not only after the heartbeat thread's
        /// next stamp).
        #[test]
        fn a_fresh_claim_is_alive_by_its_heartbeat_at_once() {
            let (obj, offset, _u) = object("fresh-beat");
            let claim = Claim::take(&obj, offset, Role::Writer, Duration::from_secs(1)).unwrap();
            let row = row(&obj, offset);
            // As a peer in another namespace sees it.
            row.pidns
                .store(own_pidns().wrapping_add(1).max(1), Ordering::Relaxed);
            // Ten seconds: far more than a preemption here, far less than the machine's uptime
            // (what a heartbeat of 0 would be judged by).
            assert_eq!(row.status(Duration::from_secs(10)), PeerStatus::Alive);
            drop(claim);
        }

        /// Every claim increments the row's epoch, so that a takeover is visible.
        #[test]
        fn every_claim_increments_the_epoch() {
            let (obj, offset, _u) = object("epoch");
            let row = row(&obj, offset);
            let first = Claim::take(&obj, offset, Role::Writer, Duration::from_secs(1)).unwrap();
            let e1 = first.epoch();
            assert_eq!(row.epoch.load(Ordering::Relaxed), e1);
            drop(first);
            assert_eq!(row.status(Duration::from_secs(1)), PeerStatus::Closed);
            let second = Claim::take(&obj, offset, Role::Writer, Duration::from_secs(1)).unwrap();
            assert_eq!(second.epoch(), e1 + 1);
            assert_eq!(row.epoch.load(Ordering::Relaxed), e1 + 1);
            assert!(second.held());
        }

        /// A dropped claim's row is no longer stamped: a later owner of the row (here one in
        /// another pid namespace that died) is not kept alive by this process's heartbeat.
        #[test]
        fn a_dropped_claim_is_no_longer_stamped() {
            let (obj, offset, _u) = object("unstamped");
            let claim = Claim::take(&obj, offset, Role::Writer, Duration::from_secs(1)).unwrap();
            drop(claim);
            let row = row(&obj, offset);
            row.owner
                .store(OWNER_HOLDS | 0x7fff_fff0, Ordering::Relaxed);
            row.pidns
                .store(own_pidns().wrapping_add(1).max(1), Ordering::Relaxed);
            row.heartbeat.store(1, Ordering::Relaxed);
            // Several heartbeat periods.
            std::thread::sleep(HEARTBEAT_PERIOD * 4);
            assert_eq!(
                row.heartbeat.load(Ordering::Relaxed),
                1,
                "stamped after the drop"
            );
            assert!(matches!(
                row.status(Duration::from_secs(1)),
                PeerStatus::Dead { .. }
            ));
        }
    }
}
