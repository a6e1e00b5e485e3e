//! Exit statuses and the failure every subcommand returns.
//!
//! | status | meaning |
//! |---:|---|
//! | 0 | success |
//! | 1 | error: the OS refused, a message did not fit, ... |
//! | 2 | usage: bad arguments or an invalid name (clap's own usage errors are 2 as well) |
//! | 3 | not found: no such region, stream, server or topic |
//! | 4 | timeout: `--timeout` ran out first |
//! | 5 | unusable object: not weft's, another kind, another layout version, corrupt, never made ready |
//! | 6 | the other side is gone: every publisher died, or the topic was unregistered |

use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use weft::{Error, ErrorKind};

/// Anything else that went wrong.
pub const ERROR: u8 = 1;
/// Bad arguments or an invalid name.
pub const USAGE: u8 = 2;
/// No such object or topic.
pub const NOT_FOUND: u8 = 3;
/// A `--timeout` ran out.
pub const TIMEOUT: u8 = 4;
/// The object exists but cannot be used: not weft's, wrong kind or version, corrupt.
pub const UNUSABLE: u8 = 5;
/// The peer side is gone (every publisher died, or the topic was unregistered).
pub const PEER_GONE: u8 = 6;

/// Why a subcommand failed: a sentence for the user and the exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// What went wrong, as a sentence.
    pub message: String,
}

impl Failure {
    /// A failure with `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(USAGE, message)
    }

    /// Prints the failure on stderr (as JSON with `--json`) and gives the exit status.
    pub fn report(&self, json: bool) -> ExitCode {
        if self.code == 0 {
            // Not a failure: the reader of our output went away (see `from_io`).
            return ExitCode::SUCCESS;
        }
        // A stderr whose reader has gone (`weft ... |& head`) loses the message, not the exit
        // status: `eprintln!` would panic (status 101) instead.
        if json {
            let doc = serde_json::json!({ "error": self });
            let _ = writeln!(std::io::stderr(), "{doc}");
        } else {
            let style = crate::out::ERROR;
            let mut err = anstream::stderr();
            let _ = writeln!(err, "{style}error:{style:#} {}", self.message);
        }
        ExitCode::from(self.code)
    }
}

/// The exit status for a library error.
pub fn code_of(e: &Error) -> u8 {
    match e.kind() {
        ErrorKind::InvalidName => USAGE,
        ErrorKind::NotFound => NOT_FOUND,
        ErrorKind::Timeout => TIMEOUT,
        ErrorKind::NotWeft
        | ErrorKind::VersionMismatch
        | ErrorKind::WrongKind
        | ErrorKind::Truncated
        | ErrorKind::NotReady
        | ErrorKind::Corrupt => UNUSABLE,
        ErrorKind::PeerDead | ErrorKind::Closed => PEER_GONE,
        _ => ERROR,
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let message = match &e {
            // Names a type some process registered (any bytes): escaped, as `weft info` shows
            // it, not passed to the terminal. The rest of the sentence is ASCII.
            Error::TypeMismatch { .. } => crate::out::escaped(e.to_string().as_bytes()),
            _ => e.to_string(),
        };
        Failure::new(code_of(&e), message)
    }
}

/// Writing to stdout failed: a closed pipe (`weft echo ... | head`) ends the command quietly,
/// anything else is an error.
pub fn from_io(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::new(0, String::new())
    } else {
        Failure::new(ERROR, format!("writing the output failed: {e}"))
    }
}

/// The result of a subcommand.
pub type Outcome = Result<(), Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_errors_map_to_documented_statuses() {
        let not_found = Error::NotFound { name: "x".into() };
        assert_eq!(code_of(&not_found), NOT_FOUND);
        assert_eq!(code_of(&Error::Timeout), TIMEOUT);
        let bad = weft::shm::object("a b").unwrap_err();
        assert_eq!(code_of(&bad), USAGE);
        assert_eq!(code_of(&Error::Full), ERROR);
    }
}
