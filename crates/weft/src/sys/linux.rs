//! Linux: POSIX shared memory under /dev/shm, `mmap`, shared futexes, /proc for liveness.

use super::{Liveness, OBJECT_PREFIX};
use crate::error::{Error, Result};
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::AtomicU32;
use core::time::Duration;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

const SHM_DIR: &str = "/dev/shm/";

fn path_of(name: &str) -> String {
    let mut p = String::with_capacity(SHM_DIR.len() + OBJECT_PREFIX.len() + name.len());
    p.push_str(SHM_DIR);
    p.push_str(OBJECT_PREFIX);
    p.push_str(name);
    p
}

/// An open shared-memory object (a file under /dev/shm).
#[derive(Debug)]
pub(crate) struct ShmFile {
    fd: OwnedFd,
    name: String,
}

impl ShmFile {
    /// Creates `name` exclusively with mode 0600 and sets its size. Symlinks are not followed.
    pub(crate) fn create(name: &str, size: u64) -> Result<ShmFile> {
        super::validate_name(name)?;
        let fd = rustix::fs::open(
            path_of(name),
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| match e {
            Errno::EXIST => Error::AlreadyExists { name: name.into() },
            e => Error::io("create", name, e),
        })?;
        let file = ShmFile {
            fd,
            name: name.into(),
        };
        // The umask can only take bits away from 0600; set it exactly anyway so that the mode
        // never depends on the caller's environment.
        // Either failure leaves a file that this call created exclusively and nobody else can
        // use: remove it (the descriptor closes when `file` drops).
        let step = rustix::fs::fchmod(&file.fd, Mode::RUSR | Mode::WUSR)
            .map_err(|e| file.fail("chmod", e))
            .and_then(|()| rustix::fs::ftruncate(&file.fd, size).map_err(|e| file.fail("size", e)))
            .and_then(|()| reserve(&file.fd, size).map_err(|e| file.fail("reserve", e)));
        if let Err(err) = step {
            let _ = ShmFile::unlink(name);
            return Err(err);
        }
        Ok(file)
    }

    /// Opens an existing object read-write. Symlinks and non-regular files are refused.
    pub(crate) fn open(name: &str) -> Result<ShmFile> {
        super::validate_name(name)?;
        let fd = rustix::fs::open(
            path_of(name),
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT => Error::NotFound { name: name.into() },
            Errno::LOOP => Error::NotWeft {
                name: name.into(),
                found: 0,
            },
            e => Error::io("open", name, e),
        })?;
        let file = ShmFile {
            fd,
            name: name.into(),
        };
        let st = rustix::fs::fstat(&file.fd).map_err(|e| file.fail("stat", e))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(Error::NotWeft {
                name: name.into(),
                found: 0,
            });
        }
        Ok(file)
    }

    /// The object's current size in bytes.
    pub(crate) fn size(&self) -> Result<u64> {
        let st = rustix::fs::fstat(&self.fd).map_err(|e| self.fail("stat", e))?;
        Ok(st.st_size as u64)
    }

    /// (device, inode) of the open file: tells two objects of the same name apart.
    pub(crate) fn identity(&self) -> Option<(u64, u64)> {
        rustix::fs::fstat(&self.fd)
            .ok()
            .map(|st| (st.st_dev, st.st_ino))
    }

    /// Removes `name` from the namespace; mappings that exist stay valid.
    pub(crate) fn unlink(name: &str) -> Result<()> {
        super::validate_name(name)?;
        rustix::fs::unlink(path_of(name)).map_err(|e| match e {
            Errno::NOENT => Error::NotFound { name: name.into() },
            e => Error::io("unlink", name, e),
        })
    }

    /// The caller-given name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn fail(&self, op: &'static str, e: Errno) -> Error {
        Error::io(op, &self.name, e)
    }
}

/// Reserves the whole of a new object's `size` bytes in its file system (`fallocate`), so that
/// a full /dev/shm (a container's 64 MiB, say) is `ENOSPC` here, at creation, and never a
/// `SIGBUS` in whichever process first touches a page that cannot be backed. A file system
/// that cannot reserve (`EOPNOTSUPP`) keeps the sparse file `ftruncate` made.
fn reserve(fd: &OwnedFd, size: u64) -> core::result::Result<(), Errno> {
    if size == 0 {
        return Ok(());
    }
    loop {
        match rustix::fs::fallocate(fd, rustix::fs::FallocateFlags::empty(), 0, size) {
            Err(Errno::INTR) => continue,
            Ok(()) | Err(Errno::OPNOTSUPP) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Names of every weft object in the shared-memory namespace (without the prefix).
pub(crate) fn list_objects() -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(SHM_DIR) {
        Ok(dir) => dir
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|n| n.strip_prefix(OBJECT_PREFIX).map(String::from))
            .filter(|n| super::validate_name(n).is_ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// The size of a transparent hugepage on x86-64 (and the alignment it needs).
const HUGEPAGE: usize = 2 << 20;

/// A read-write shared mapping, unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is a plain address range; every access to its bytes goes through atomics
// or through raw-pointer code that documents its own synchronisation.
unsafe impl Send for Mapping {}
// SAFETY: as for Send: `&Mapping` only hands out the base pointer and the length.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes of `file` shared and read-write. The file must already be at
    /// least `len` bytes long (checked), so no access through the mapping can fault with SIGBUS
    /// unless a peer truncates the file afterwards.
    pub(crate) fn map(file: &ShmFile, len: u64, hugepages: bool, lock: bool) -> Result<Mapping> {
        let size = file.size()?;
        if size < len {
            return Err(Error::Truncated {
                name: file.name.clone(),
                size,
                needed: len,
            });
        }
        let len_usize = usize::try_from(len).map_err(|_| Error::TooLarge {
            name: file.name.clone(),
            len,
            max: usize::MAX as u64,
        })?;
        if len_usize == 0 {
            return Err(Error::Truncated {
                name: file.name.clone(),
                size,
                needed: 1,
            });
        }
        // SAFETY: a fresh mapping (null hint) of a file we hold open, of a length checked to be
        // non-zero and within the file; nothing else in this process aliases the new range.
        let ptr = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                len_usize,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                &file.fd,
                0,
            )
        }
        .map_err(|e| Error::io("map", &file.name, e))?;
        let map = Mapping {
            ptr: NonNull::new(ptr.cast()).expect("mmap never returns null on success"),
            len: len_usize,
        };
        map.advise(hugepages, lock, &file.name)?;
        Ok(map)
    }

    /// An anonymous, process-private mapping of `len` zeroed bytes (for in-process rings that
    /// want hugepages or locked memory).
    pub(crate) fn anonymous(len: usize, hugepages: bool, lock: bool) -> Result<Mapping> {
        if len == 0 {
            return Err(Error::InvalidArgument {
                what: "mapping length",
                value: 0,
                expected: "must be at least 1",
            });
        }
        // Transparent hugepages back only whole, aligned 2 MiB ranges: a hugepage mapping is
        // rounded up to whole hugepages and placed on a hugepage boundary (mapped one hugepage
        // larger, then trimmed at both ends), or most of a ring a few MiB long would get none.
        let (len, extra) = if hugepages {
            let len = len
                .checked_next_multiple_of(HUGEPAGE)
                .ok_or(Error::InvalidArgument {
                    what: "mapping length",
                    value: len as u64,
                    expected: "a length that rounds up to whole 2 MiB pages",
                })?;
            (len, HUGEPAGE)
        } else {
            (len, 0)
        };
        // SAFETY: a fresh anonymous mapping with a null hint aliases nothing.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len + extra,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(|e| Error::io("map", "anonymous", e))?
        .cast::<u8>();
        let ptr = if extra > 0 {
            let head = ptr.align_offset(HUGEPAGE).min(extra);
            // SAFETY: `head <= extra` and `head + len <= len + extra`: both trimmed ranges lie in
            // the mapping just made, which nothing else uses yet.
            unsafe {
                if head > 0 {
                    let _ = rustix::mm::munmap(ptr.cast(), head);
                }
                let tail = extra - head;
                if tail > 0 {
                    let _ = rustix::mm::munmap(ptr.add(head + len).cast(), tail);
                }
                ptr.add(head)
            }
        } else {
            ptr
        };
        let map = Mapping {
            ptr: NonNull::new(ptr).expect("mmap never returns null on success"),
            len,
        };
        if hugepages {
            // Asked for explicitly, so a kernel that refuses it (no hugepage support) is an
            // error, unlike for shared files (`advise`).
            map.advise_hugepages()
                .map_err(|e| Error::io("advise hugepages", "anonymous", e))?;
        }
        map.advise(false, lock, "anonymous")?;
        Ok(map)
    }

    /// `MADV_HUGEPAGE` over the whole mapping.
    fn advise_hugepages(&self) -> rustix::io::Result<()> {
        // SAFETY: the range is exactly our own live mapping; the advice changes no contents.
        unsafe {
            rustix::mm::madvise(
                self.ptr.as_ptr().cast(),
                self.len,
                rustix::mm::Advice::LinuxHugepage,
            )
        }
    }

    fn advise(&self, hugepages: bool, lock: bool, name: &str) -> Result<()> {
        if hugepages {
            // Shared files: hugepages are only advised (shmem hugepages are a system setting);
            // a refusal (THP disabled for shmem) is not an error: the mapping works without it.
            let _ = self.advise_hugepages();
        }
        if lock {
            // SAFETY: the range is exactly our own live mapping; mlock changes no contents.
            unsafe { rustix::mm::mlock(self.ptr.as_ptr().cast(), self.len) }
                .map_err(|e| Error::io("lock", name, e))?;
        }
        Ok(())
    }

    /// The first byte of the mapping (page-aligned).
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The mapping's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the whole mapping this `Mapping` owns: what mmap returned, or for
        // a hugepage mapping the aligned range left after `anonymous` unmapped the head and
        // tail around it (page-aligned, still mapped, owned by nothing else). The owner of a
        // Mapping guarantees that nothing borrowed from it outlives it (handles keep it alive
        // through an Arc).
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Waits on a futex word that may be shared between processes (never `FUTEX_PRIVATE`).
/// Returns on wake, timeout, signal, or when `*word != expected`; `false` only when the
/// timeout ran out.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> bool {
    let ts = timeout.map(|d| rustix::thread::futex::Timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: d.subsec_nanos() as _,
    });
    // EAGAIN (the word changed) and EINTR mean "re-check": the callers loop.
    !matches!(
        rustix::thread::futex::wait(
            word,
            rustix::thread::futex::Flags::empty(),
            expected,
            ts.as_ref()
        ),
        Err(Errno::TIMEDOUT)
    )
}

/// Wakes every waiter on a shared futex word.
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    let _ =
        rustix::thread::futex::wake(word, rustix::thread::futex::Flags::empty(), i32::MAX as u32);
}

/// Registers this process for [`process_barrier`]. Returns whether the kernel supports it
/// (`membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)`); idempotent.
pub(crate) fn process_barrier_register() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier, membarrier_query};
    let q = membarrier_query();
    q.contains_command(MembarrierCommand::PrivateExpedited)
        && q.contains_command(MembarrierCommand::RegisterPrivateExpedited)
        && membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
}

/// Makes every thread of this process that is running now execute a full memory barrier
/// (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`), so that the other side of a Dekker
/// handshake can get away with a compiler barrier. Returns false if the call failed (then the
/// caller must not rely on it). Needs [`process_barrier_register`] first.
pub(crate) fn process_barrier() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier};
    membarrier(MembarrierCommand::PrivateExpedited).is_ok()
}

/// Registers this process for [`machine_barrier`] issued by any process
/// (`membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)`). Returns whether the kernel
/// accepted it; idempotent.
pub(crate) fn machine_barrier_register() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier, membarrier_query};
    let q = membarrier_query();
    q.contains_command(MembarrierCommand::GlobalExpedited)
        && q.contains_command(MembarrierCommand::RegisterGlobalExpedited)
        && membarrier(MembarrierCommand::RegisterGlobalExpedited).is_ok()
}

/// Makes every running thread of every process that called [`machine_barrier_register`]
/// execute a full memory barrier (`membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)`): the heavy
/// side of a Dekker handshake whose light side runs in other processes. Returns false if the
/// call failed (then the caller must not rely on it).
pub(crate) fn machine_barrier() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier};
    membarrier(MembarrierCommand::GlobalExpedited).is_ok()
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine (and across pid
/// namespaces), so it can stamp heartbeats that other processes read.
pub(crate) fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.tv_nsec as u64)
}

/// A process identity that survives pid reuse: the pid and the process's start time (in clock
/// ticks since boot, field 22 of /proc/PID/stat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcessId {
    pub(crate) pid: u32,
    pub(crate) start_time: u64,
}

impl ProcessId {
    /// This process.
    pub(crate) fn current() -> ProcessId {
        let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
        let start_time = read_stat(pid).map(|s| s.1).unwrap_or(0);
        ProcessId { pid, start_time }
    }
}

/// Reads (state, start time) from /proc/PID/stat.
fn read_stat(pid: u32) -> Option<(u8, u64)> {
    let text = std::fs::read(alloc::format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may itself contain ')' and spaces:
    // everything after the last ')' is space-separated, starting with field 3 (state).
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = core::str::from_utf8(&text[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    // Field 22 is the 20th after field 2.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Whether process `pid`, started at `start_time`, is still running.
pub(crate) fn process_state(pid: u32, start_time: u64) -> Liveness {
    state_matching(pid, |t| t == start_time)
}

/// As [`process_state`], for records that keep only the low 32 bits of the start time (a
/// participant's owner word packs pid and start time into one atomic).
pub(crate) fn process_state_low32(pid: u32, start_low32: u32) -> Liveness {
    state_matching(pid, |t| t as u32 == start_low32)
}

/// Whether some live (non-zombie) process has this pid, whatever its start time.
pub(crate) fn pid_alive(pid: u32) -> bool {
    state_matching(pid, |_| true) != Liveness::Dead
}

fn state_matching(pid: u32, same_start: impl Fn(u64) -> bool) -> Liveness {
    if pid == 0 || pid > i32::MAX as u32 {
        return Liveness::Dead;
    }
    match read_stat(pid) {
        // A zombie (Z) or dead (X) task has exited: it only waits to be reaped.
        Some((b'Z' | b'X', _)) => Liveness::Dead,
        Some((_, t)) if same_start(t) => Liveness::Alive,
        Some(_) => Liveness::Dead,
        None => {
            if std::path::Path::new("/proc/self/stat").exists() {
                Liveness::Dead
            } else {
                Liveness::Unknown
            }
        }
    }
}

/// An identifier of this process's pid namespace (the inode of /proc/self/ns/pid), or 0 when
/// it cannot be read. Two processes can check each other's pids only when these match.
pub(crate) fn pid_namespace() -> u64 {
    rustix::fs::stat("/proc/self/ns/pid")
        .map(|s| s.st_ino)
        .unwrap_or(0)
}

/// Pins the calling thread to one CPU core. The kernel accepts any core of this process's
/// cpuset, whatever the calling thread's current mask, and refuses one outside it (EINVAL,
/// returned as `Error::Io`).
pub(crate) fn pin_current_thread(core: usize) -> Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    if core >= rustix::thread::CpuSet::MAX_CPU {
        return Err(Error::InvalidArgument {
            what: "core",
            value: core as u64,
            expected: "below the CPU set size",
        });
    }
    set.set(core);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| Error::io("pin", "thread", e))
}

/// The cores the calling thread may run on (its affinity mask: `sched_getaffinity` is
/// per-thread), ascending; empty if the OS does not say. A thread pinned with
/// [`pin_current_thread`] sees only its core, although the process may run on others.
pub(crate) fn allowed_cores() -> Vec<usize> {
    rustix::thread::sched_getaffinity(None)
        .map(|s| {
            (0..rustix::thread::CpuSet::MAX_CPU)
                .filter(|&c| s.is_set(c))
                .collect()
        })
        .unwrap_or_default()
}

/// The number of cores the calling thread may run on (at least 1).
pub(crate) fn available_cores() -> usize {
    allowed_cores().len().max(1)
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    /// The kernel's account of the mapping that starts at `start`: the value of `field` (kB)
    /// in its /proc/self/smaps entry.
    fn smaps_kb(start: usize, field: &str) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let head = format!("{start:x}-");
        // A mapping's entry: its range line ("start-end perms ..."), then "Field: value" lines.
        let is_range = |l: &str| {
            l.split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'))
                .is_some_and(|(a, b)| {
                    u64::from_str_radix(a, 16).is_ok() && u64::from_str_radix(b, 16).is_ok()
                })
        };
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        lines.next()?;
        lines
            .take_while(|l| !is_range(l))
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// A hugepage mapping starts on a hugepage boundary and covers whole hugepages, and once
    /// written the kernel backs it with hugepages (unless the system turned them off).
    #[test]
    fn a_hugepage_mapping_is_aligned_and_backed_by_hugepages() {
        let m = Mapping::anonymous(3 << 20, true, false).unwrap();
        assert_eq!(m.as_ptr() as usize % HUGEPAGE, 0);
        assert_eq!(m.len(), 4 << 20);
        // SAFETY: the mapping is ours, `len` bytes long and writable.
        unsafe { core::ptr::write_bytes(m.as_ptr(), 1, m.len()) };
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if mode.is_empty() || mode.contains("[never]") {
            eprintln!("transparent hugepages are off here ({mode:?}): backing not checked");
            return;
        }
        let huge = smaps_kb(m.as_ptr() as usize, "AnonHugePages:").expect("the mapping in smaps");
        assert_eq!(huge, 4096, "kB of hugepages in a 4 MiB hugepage mapping");
        // A plain mapping is neither rounded nor advised.
        let plain = Mapping::anonymous(3 << 20, false, false).unwrap();
        assert_eq!(plain.len(), 3 << 20);
    }
}
