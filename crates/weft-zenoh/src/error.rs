//! The bridge's error type: weft's own errors, Zenoh's, and configuration mistakes.

/// A shorthand for `Result<T, weft_zenoh::Error>`.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What can go wrong while configuring or starting a bridge. Errors that happen to single
/// samples or topics while a bridge runs are counted in [`crate::BridgeStats`] instead (a
/// bridge keeps forwarding its other topics).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is not acceptable.
    #[error("bad bridge configuration: {what}: {reason}")]
    Config {
        /// Which value (a field, a pattern, an endpoint), as given.
        what: String,
        /// Why it was refused.
        reason: String,
    },
    /// A configuration file could not be read.
    #[error("cannot read the bridge configuration file {path}: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The OS refused a thread for the bridge.
    #[error("cannot start a bridge thread: {0}")]
    Thread(std::io::Error),
    /// weft refused an operation on the bridge's region.
    #[error(transparent)]
    Weft(#[from] weft::Error),
    /// Zenoh refused an operation (opening the session, declaring a key expression).
    #[error("zenoh: {what}: {message}")]
    Zenoh {
        /// What the bridge was doing.
        what: String,
        /// Zenoh's own message.
        message: String,
    },
}

impl Error {
    pub(crate) fn zenoh(what: impl Into<String>, e: impl core::fmt::Display) -> Error {
        Error::Zenoh {
            what: what.into(),
            message: e.to_string(),
        }
    }
}
