//! The platform layer: the only module that calls the operating system or says
//! `cfg(target_os)`. Everything above it speaks in terms of [`ShmFile`], [`Mapping`], futex
//! words, [`ProcessId`] and a monotonic clock.
//!
//! Linux is the one platform implemented today (`linux.rs`); another platform adds a sibling
//! file behind the same surface.

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod imp;

#[cfg(not(target_os = "linux"))]
compile_error!("weft's platform layer is implemented for Linux only (crates/weft/src/sys)");

pub(crate) use imp::{
    Mapping, ProcessId, ShmFile, allowed_cores, available_cores, futex_wait, futex_wake_all,
    list_objects, machine_barrier, machine_barrier_register, monotonic_ns, pid_alive,
    pid_namespace, pin_current_thread, process_barrier, process_barrier_register, process_state,
    process_state_low32,
};

use crate::error::{Error, Result};

/// The prefix every weft object carries in the shared-memory namespace (`/dev/shm/weft.NAME`),
/// so that `weft ls` and `weft clean` never touch anyone else's files.
pub(crate) const OBJECT_PREFIX: &str = "weft.";

/// The longest name a caller may give. The OS allows 255 bytes for the whole file name; weft
/// keeps the rest for its prefix and for the suffixes of derived objects (a channel's streams).
pub const NAME_MAX: usize = 200;

/// What is known about whether a process is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// The process exists and is the one that was recorded (same start time).
    Alive,
    /// The process is gone, a zombie, or its pid now belongs to another process.
    Dead,
    /// The process cannot be seen from here (another pid namespace, no /proc): the caller
    /// falls back to a heartbeat.
    Unknown,
}

/// Checks a caller-given object name: 1 to [`NAME_MAX`] bytes of ASCII letters, digits, `-`,
/// `_` and `.`, not starting with `.` and without `..`.
///
/// # Errors
/// [`Error::InvalidName`] saying which rule the name broke.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        Some("a name cannot be empty")
    } else if name.len() > NAME_MAX {
        Some("a name is at most 200 bytes")
    } else if name.contains('\0') {
        Some("a name cannot contain NUL")
    } else if name.contains('/') {
        Some("a name cannot contain '/'")
    } else if name.contains("..") {
        Some("a name cannot contain '..'")
    } else if name.starts_with('.') {
        Some("a name cannot start with '.'")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        Some("a name may hold only ASCII letters, digits, '-', '_' and '.'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            name: name.into(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for bad in ["", "a/b", "..", "a..b", ".hidden", "nul\0", "sp ace", "é"] {
            assert!(
                matches!(validate_name(bad), Err(Error::InvalidName { .. })),
                "{bad:?} should be refused"
            );
        }
        assert!(validate_name(&"x".repeat(NAME_MAX + 1)).is_err());
        for good in ["market", "a.b-c_d", "x", &"y".repeat(NAME_MAX)] {
            validate_name(good).unwrap();
        }
    }

    #[test]
    fn own_process_is_alive_and_a_bogus_start_time_is_not() {
        let me = ProcessId::current();
        assert_eq!(process_state(me.pid, me.start_time), Liveness::Alive);
        assert_eq!(process_state(me.pid, me.start_time + 1), Liveness::Dead);
        // pid_max on Linux is at most 2^22: this pid cannot exist.
        assert_eq!(process_state(u32::MAX - 1, 1), Liveness::Dead);
    }

    #[test]
    fn clock_moves_forward() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a);
    }
}
