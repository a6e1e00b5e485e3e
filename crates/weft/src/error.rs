//! The one error type of weft.
//!
//! Every fallible call in the library returns [`Error`]. Variants carry the *what* and the
//! *where* (an object name, a role, a process id, a value that failed a check) so that
//! `Display` reads as a sentence a user can act on. Kinds that the bindings map to their own
//! codes or exception classes are listed by [`ErrorKind`].

use alloc::string::String;
use core::fmt;

/// A shorthand for `core::result::Result<T, weft::Error>`.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Which side of a connection a participant plays. Used in errors and in liveness tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// The writing end of a stream.
    Writer,
    /// The reading end of a stream.
    Reader,
    /// A publisher of a topic.
    Publisher,
    /// A subscriber of a topic.
    Subscriber,
    /// The server of a request/response channel.
    Server,
    /// A client of a request/response channel.
    Client,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Writer => "writer",
            Role::Reader => "reader",
            Role::Publisher => "publisher",
            Role::Subscriber => "subscriber",
            Role::Server => "server",
            Role::Client => "client",
        })
    }
}

/// Everything that can go wrong in weft.
///
/// The enum is `#[non_exhaustive]`: match on [`Error::kind`] for stable handling, and print
/// the error for the details.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name given by the caller is not acceptable (bad characters, too long, `..`).
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// An argument other than a name is out of range.
    #[error("invalid argument: {what} is {value}, {expected}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// The value given.
        value: u64,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// No object of this name exists.
    #[error("no weft object named '{name}' exists")]
    NotFound {
        /// The object's name.
        name: String,
    },
    /// An object of this name already exists and is in use.
    #[error("a weft object named '{name}' already exists")]
    AlreadyExists {
        /// The object's name.
        name: String,
    },
    /// The role asked for is held by a live participant.
    #[error("the {role} of '{name}' is held by live process {pid}")]
    InUse {
        /// The object's name (for a topic's single publisher: region and topic,
        /// "market/prices").
        name: String,
        /// The role that is taken.
        role: Role,
        /// The process that holds it.
        pid: u32,
    },
    /// The object exists but is not a weft object (wrong magic number).
    #[error("'{name}' is not a weft object (magic {found:#018x})")]
    NotWeft {
        /// The object's name.
        name: String,
        /// The magic number found.
        found: u64,
    },
    /// The object was made by an incompatible version of the shared-memory layout.
    #[error("'{name}' has layout version {found}, this build speaks version {expected}")]
    VersionMismatch {
        /// The object's name.
        name: String,
        /// The version found in the header.
        found: u32,
        /// The version this build writes and reads.
        expected: u32,
    },
    /// The object is a weft object of another kind (a region opened as a stream, say).
    #[error("'{name}' is a {found}, not a {expected}")]
    WrongKind {
        /// The object's name.
        name: String,
        /// The kind found in the header.
        found: &'static str,
        /// The kind asked for.
        expected: &'static str,
    },
    /// The object's file is smaller than its header says it must be.
    #[error("'{name}' is truncated: the file holds {size} bytes, its layout needs {needed}")]
    Truncated {
        /// The object's name.
        name: String,
        /// The file size found.
        size: u64,
        /// The size the header asks for.
        needed: u64,
    },
    /// The creator of the object did not finish initialising it within the timeout, or died
    /// before it did (seen at once when the creator ran in this pid namespace).
    #[error("{}", not_ready(name, *pid, *creator_gone))]
    NotReady {
        /// The object's name.
        name: String,
        /// The creating process (0 if its header does not say yet).
        pid: u32,
        /// The creator is known to be gone: the object will never be ready, so waiting
        /// longer (or retrying) is pointless.
        creator_gone: bool,
    },
    /// A value read from shared memory failed validation: a peer wrote something impossible.
    /// The handle that reports it should be dropped; nothing was read out of bounds.
    #[error("'{name}' is corrupt: {what} is {value}, {expected}")]
    Corrupt {
        /// The object's name.
        name: String,
        /// Which field.
        what: &'static str,
        /// The value read.
        value: u64,
        /// The range or state it should have had.
        expected: &'static str,
    },
    /// A message or reservation is larger than the object can ever hold.
    #[error("{len} bytes is more than '{name}' can ever hold (at most {max})")]
    TooLarge {
        /// The object's name.
        name: String,
        /// The size asked for.
        len: u64,
        /// The largest size that is accepted.
        max: u64,
    },
    /// A bounded wait ran out of time.
    #[error("timed out")]
    Timeout,
    /// A non-blocking call found no room (backpressure); retry later or block.
    #[error("full")]
    Full,
    /// A non-blocking call found nothing to receive.
    #[error("empty")]
    Empty,
    /// The peer closed its end and everything it sent has been received.
    #[error("closed")]
    Closed,
    /// The peer process died; what it sent before dying has been received.
    #[error("the {role} of '{name}' (process {pid}) is dead")]
    PeerDead {
        /// The object's name.
        name: String,
        /// The dead peer's role.
        role: Role,
        /// The dead peer's process id.
        pid: u32,
    },
    /// A receiver fell behind a lossy producer: `skipped` messages were overwritten, or are
    /// about to be (a broadcast ring resumes one past its oldest slot, the next one written).
    #[error(
        "lagged: {skipped} messages skipped, overwritten (or about to be) before they were read"
    )]
    Lagged {
        /// Exactly how many messages were missed.
        skipped: u64,
    },
    /// A name holds a value of another type than the one asked for.
    #[error(
        "'{name}' holds `{found}` ({found_size} bytes), not `{expected}` ({expected_size} bytes)"
    )]
    TypeMismatch {
        /// The name (a bus topic, a shared-memory topic).
        name: String,
        /// The type registered under the name.
        found: String,
        /// Its size.
        found_size: u64,
        /// The type asked for.
        expected: String,
        /// Its size.
        expected_size: u64,
    },
    /// A call to the operating system failed.
    #[cfg(feature = "std")]
    #[error("{op} '{name}' failed: {source}")]
    Io {
        /// The operation (`"create"`, `"open"`, `"map"`, ...).
        op: &'static str,
        /// The object's name.
        name: String,
        /// The error the OS gave.
        #[source]
        source: std::io::Error,
    },
}

/// The message of [`Error::NotReady`]: a creator still at work (or not known to be gone) is
/// not said to have never made the object, and a pid the header does not give yet is not
/// shown as process 0.
fn not_ready(name: &str, pid: u32, creator_gone: bool) -> String {
    let who = if pid == 0 {
        String::from("its creator")
    } else {
        alloc::format!("its creator (process {pid})")
    };
    if creator_gone {
        alloc::format!("'{name}' will never be ready: {who} is gone")
    } else {
        alloc::format!("'{name}' was not made ready by {who} in time")
    }
}

/// The stable category of an [`Error`]; the C ABI's error codes and the Python exception
/// classes are one per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(i32)]
pub enum ErrorKind {
    /// See [`Error::InvalidName`].
    InvalidName = 1,
    /// See [`Error::InvalidArgument`].
    InvalidArgument = 2,
    /// See [`Error::NotFound`].
    NotFound = 3,
    /// See [`Error::AlreadyExists`].
    AlreadyExists = 4,
    /// See [`Error::InUse`].
    InUse = 5,
    /// See [`Error::NotWeft`].
    NotWeft = 6,
    /// See [`Error::VersionMismatch`].
    VersionMismatch = 7,
    /// See [`Error::WrongKind`].
    WrongKind = 8,
    /// See [`Error::Truncated`].
    Truncated = 9,
    /// See [`Error::NotReady`].
    NotReady = 10,
    /// See [`Error::Corrupt`].
    Corrupt = 11,
    /// See [`Error::TooLarge`].
    TooLarge = 12,
    /// See [`Error::Timeout`].
    Timeout = 13,
    /// See [`Error::Full`].
    Full = 14,
    /// See [`Error::Empty`].
    Empty = 15,
    /// See [`Error::Closed`].
    Closed = 16,
    /// See [`Error::PeerDead`].
    PeerDead = 17,
    /// See [`Error::Lagged`].
    Lagged = 18,
    /// See [`Error::TypeMismatch`].
    TypeMismatch = 19,
    /// See `Error::Io`.
    Io = 20,
}

impl Error {
    /// The stable category of this error.
    ///
    /// # Examples
    /// ```
    /// use weft::{Error, ErrorKind};
    /// assert_eq!(Error::Timeout.kind(), ErrorKind::Timeout);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidName { .. } => ErrorKind::InvalidName,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::InUse { .. } => ErrorKind::InUse,
            Error::NotWeft { .. } => ErrorKind::NotWeft,
            Error::VersionMismatch { .. } => ErrorKind::VersionMismatch,
            Error::WrongKind { .. } => ErrorKind::WrongKind,
            Error::Truncated { .. } => ErrorKind::Truncated,
            Error::NotReady { .. } => ErrorKind::NotReady,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Timeout => ErrorKind::Timeout,
            Error::Full => ErrorKind::Full,
            Error::Empty => ErrorKind::Empty,
            Error::Closed => ErrorKind::Closed,
            Error::PeerDead { .. } => ErrorKind::PeerDead,
            Error::Lagged { .. } => ErrorKind::Lagged,
            Error::TypeMismatch { .. } => ErrorKind::TypeMismatch,
            #[cfg(feature = "std")]
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// Builds an [`Error::Corrupt`]; used wherever a value read from shared memory fails a check.
    pub(crate) fn corrupt(
        name: &str,
        what: &'static str,
        value: u64,
        expected: &'static str,
    ) -> Error {
        Error::Corrupt {
            name: name.into(),
            what,
            value,
            expected,
        }
    }

    /// Builds an [`Error::Io`] from an OS error.
    #[cfg(feature = "std")]
    pub(crate) fn io(op: &'static str, name: &str, source: impl Into<std::io::Error>) -> Error {
        Error::Io {
            op,
            name: name.into(),
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    /// An object whose creator is still at work (or cannot be judged) was not "never" made
    /// ready, and an unknown creator is not "process 0".
    #[test]
    fn not_ready_says_what_is_known_of_the_creator() {
        let e = |pid, creator_gone| {
            Error::NotReady {
                name: "r".into(),
                pid,
                creator_gone,
            }
            .to_string()
        };
        assert_eq!(
            e(42, false),
            "'r' was not made ready by its creator (process 42) in time"
        );
        assert_eq!(e(0, false), "'r' was not made ready by its creator in time");
        assert_eq!(
            e(42, true),
            "'r' will never be ready: its creator (process 42) is gone"
        );
    }
}
