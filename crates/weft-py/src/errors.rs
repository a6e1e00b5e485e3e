//! `weft.Error` and one subclass per `weft::ErrorKind`, and the conversion of a `weft::Error`
//! into the matching Python exception.
//!
//! Each subclass carries its kind as the class attribute `kind` (set by the Python package,
//! which turns the codes into a `weft.ErrorKind` enum); the message is the Rust error's
//! `Display`. A few kinds carry their details as attributes too: `LaggedError.skipped`,
//! `PeerDeadError.pid` and `InUseError.pid`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyType;
use weft::ErrorKind;

create_exception!(
    weft,
    Error,
    PyException,
    "The base class of every error weft raises. `kind` tells which (a `weft.ErrorKind`)."
);

/// Declares the exception classes, their table (name, kind code, class) and the mapping from
/// kind to class, from one list so that the three cannot drift apart.
macro_rules! kinds {
    ($($class:ident = $kind:ident: $doc:literal,)*) => {
        $(create_exception!(weft, $class, Error, $doc);)*

        /// The class for `kind` (the base class for a kind this build does not know).
        fn class_of(py: Python<'_>, kind: ErrorKind) -> Bound<'_, PyType> {
            match kind {
                $(ErrorKind::$kind => py.get_type::<$class>(),)*
                _ => py.get_type::<Error>(),
            }
        }

        /// Every (kind name, code, class), for the module's `_ERROR_KINDS`.
        pub(crate) fn table(py: Python<'_>) -> Vec<(&'static str, i32, Bound<'_, PyType>)> {
            vec![$((stringify!($kind), ErrorKind::$kind as i32, py.get_type::<$class>()),)*]
        }

        /// Adds the classes to the module.
        pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            m.add("Error", m.py().get_type::<Error>())?;
            $(m.add(stringify!($class), m.py().get_type::<$class>())?;)*
            Ok(())
        }
    };
}

kinds! {
    InvalidNameError = InvalidName: "A name is not acceptable (bad characters, too long, `..`).",
    InvalidArgumentError = InvalidArgument: "An argument other than a name is out of range.",
    NotFoundError = NotFound: "No weft object of this name exists.",
    AlreadyExistsError = AlreadyExists: "An object of this name already exists and is in use.",
    InUseError = InUse: "The role asked for is held by a live process (`pid`).",
    NotWeftError = NotWeft: "The object under the name is not a weft object.",
    VersionMismatchError = VersionMismatch: "The object has an incompatible layout version.",
    WrongKindError = WrongKind: "The object is a weft object of another kind.",
    TruncatedError = Truncated: "The object's file is smaller than its header says.",
    NotReadyError = NotReady: "The object's creator never finished making it (and is gone, or the timeout passed).",
    CorruptError = Corrupt: "A value in shared memory failed validation (a peer wrote nonsense).",
    TooLargeError = TooLarge: "A message or reservation is larger than the object can ever hold.",
    TimeoutError = Timeout: "A bounded wait ran out of time.",
    FullError = Full: "A non-blocking call found no room (backpressure).",
    EmptyError = Empty: "A non-blocking call found nothing to receive.",
    ClosedError = Closed: "The peer closed its end and everything it sent has been received.",
    PeerDeadError = PeerDead: "The peer process (`pid`) died; all it sent was received.",
    LaggedError = Lagged: "The subscriber fell behind: `skipped` messages were overwritten unread.",
    TypeMismatchError = TypeMismatch: "A topic holds values of another type.",
    IoError = Io: "A call to the operating system failed.",
}

/// The Python exception for a weft error.
pub(crate) fn to_py(e: weft::Error) -> PyErr {
    Python::attach(|py| {
        let err = PyErr::from_type(class_of(py, e.kind()), e.to_string());
        let extra = match &e {
            weft::Error::Lagged { skipped } => Some(("skipped", *skipped)),
            weft::Error::PeerDead { pid, .. } | weft::Error::InUse { pid, .. } => {
                Some(("pid", u64::from(*pid)))
            }
            _ => None,
        };
        if let Some((attr, value)) = extra {
            // Setting an attribute on a fresh exception instance cannot fail but for memory.
            let _ = err.value(py).setattr(attr, value);
        }
        err
    })
}

/// `Result<T, weft::Error>` to `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    /// Converts the error, if any, into its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for weft::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
