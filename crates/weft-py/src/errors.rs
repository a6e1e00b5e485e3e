//! `weft.Error` and one subclass per `weft::ErrorKind`, and the conversion of a `weft::Error`
//! into the matching Python exception.
//!
//! Each subclass carries its kind as the class attribute `kind` (set by the Python package,
//! which turns the codes into a `weft.ErrorKind` enum); the message is the Rust error's
//! `Display`. A few kinds carry their details as attributes too: `LaggedError.skipped`,
//! `PeerDeadError.pid` and `InUseError.pid`.
//!
//! Two also subclass the built-in exception they stand for, so that code written for the
//! standard library catches them: `weft.TimeoutError` is a `TimeoutError`, `weft.IoError` an
//! `OSError`. With two bases they cannot be static PyO3 exception types: every kind's class
//! is made at import, by `type(name, bases, namespace)`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use weft::ErrorKind;

create_exception!(
    weft,
    Error,
    PyException,
    "The base class of every error weft raises. `kind` tells which (a `weft.ErrorKind`)."
);

/// One exception class: its name, kind, docstring, and the built-in exception it subclasses
/// too (besides `weft.Error`), if any.
struct Kind {
    class: &'static str,
    /// The kind's name in `weft.ErrorKind`.
    name: &'static str,
    kind: ErrorKind,
    doc: &'static str,
    builtin: Option<&'static str>,
}

/// Declares the exception classes (`KINDS`), from one list, from which the classes, their
/// table (name, kind code, class) and the mapping from kind to class are all made, so that
/// they cannot drift apart.
macro_rules! kinds {
    ($($class:ident = $kind:ident $(+ $builtin:ident)?: $doc:literal,)*) => {
        const KINDS: &[Kind] = &[$(Kind {
            class: stringify!($class),
            name: stringify!($kind),
            kind: ErrorKind::$kind,
            doc: $doc,
            builtin: kinds!(@builtin $($builtin)?),
        },)*];
    };
    (@builtin) => { None };
    (@builtin $builtin:ident) => { Some(stringify!($builtin)) };
}

/// The classes, in the order of `KINDS`; made by `register`, at import.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// Makes the class of `kind`: `type(name, (weft.Error[, builtin]), {...})`.
fn make(py: Python<'_>, kind: &Kind) -> PyResult<Py<PyType>> {
    let mut bases = vec![py.get_type::<Error>().into_any()];
    if let Some(builtin) = kind.builtin {
        bases.push(py.import("builtins")?.getattr(builtin)?);
    }
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "weft")?;
    namespace.set_item("__doc__", kind.doc)?;
    namespace.set_item("__qualname__", kind.class)?;
    let class = py
        .get_type::<PyType>()
        .call1((kind.class, PyTuple::new(py, bases)?, namespace))?;
    Ok(class.cast_into::<PyType>()?.unbind())
}

/// The classes, made on first use.
fn classes(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    CLASSES.get_or_try_init(py, || KINDS.iter().map(|k| make(py, k)).collect())
}

/// The class for `kind` (the base class for a kind this build does not know, or if the
/// classes could not be made).
fn class_of(py: Python<'_>, kind: ErrorKind) -> Bound<'_, PyType> {
    let found = classes(py).ok().and_then(|classes| {
        KINDS
            .iter()
            .zip(classes)
            .find(|(k, _)| k.kind == kind)
            .map(|(_, class)| class.bind(py).clone())
    });
    found.unwrap_or_else(|| py.get_type::<Error>())
}

/// Every (kind name, code, class), for the module's `_ERROR_KINDS`.
///
/// # Errors
/// If the classes cannot be made.
pub(crate) fn table(py: Python<'_>) -> PyResult<Vec<(&'static str, i32, Bound<'_, PyType>)>> {
    Ok(KINDS
        .iter()
        .zip(classes(py)?)
        .map(|(k, class)| (k.name, k.kind as i32, class.bind(py).clone()))
        .collect())
}

/// Makes the classes and adds them, with `weft.Error`, to the module.
///
/// # Errors
/// If a class cannot be made or added.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    for (k, class) in KINDS.iter().zip(classes(py)?) {
        m.add(k.class, class.bind(py))?;
    }
    Ok(())
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
    TimeoutError = Timeout + TimeoutError: "A bounded wait ran out of time (also a built-in `TimeoutError`).",
    FullError = Full: "A non-blocking call found no room (backpressure).",
    EmptyError = Empty: "A non-blocking call found nothing to receive.",
    ClosedError = Closed: "The peer closed its end and everything it sent has been received.",
    PeerDeadError = PeerDead: "The peer process (`pid`) died; all it sent was received.",
    LaggedError = Lagged: "The subscriber fell behind: `skipped` messages were overwritten unread.",
    TypeMismatchError = TypeMismatch: "A topic holds values of another type.",
    IoError = Io + OSError: "A call to the operating system failed (also a built-in `OSError`).",
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
