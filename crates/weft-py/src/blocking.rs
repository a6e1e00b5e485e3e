//! Blocking calls from Python: detached from the interpreter (other threads run meanwhile) and
//! interruptible (Ctrl-C raises `KeyboardInterrupt` within about one slice).
//!
//! A wait is cut into slices of at most [`SLICE`]: each slice is one call of the Rust
//! `_timeout` form without the interpreter, and between slices the thread re-attaches and runs
//! the signal handlers (`PyErr_CheckSignals`). Only calls whose `_timeout` form can be repeated
//! without side effects are sliced; the others run on a thread of their own ([`off_thread`])
//! while this one waits in slices for their answer, and are cancelled when it is interrupted.
//!
//! Every timeout argument is a [`Timeout`], read from Python in one place.

use crate::errors::to_py;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest time a blocking call spends without looking at signals.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// A wait's end: `None` waits forever.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Until(Option<Instant>);

impl Until {
    /// From a timeout argument: `None`, a [`Timeout`] of "as long as it takes", and one of
    /// more than an `Instant` holds wait forever.
    pub(crate) fn new(timeout: Option<Timeout>) -> Until {
        Until(
            timeout
                .and_then(|t| t.0)
                .and_then(|d| Instant::now().checked_add(d)),
        )
    }

    /// The next slice: at most [`SLICE`], at most what is left (zero once passed).
    pub(crate) fn slice(&self) -> Duration {
        match self.0 {
            None => SLICE,
            Some(end) => end.saturating_duration_since(Instant::now()).min(SLICE),
        }
    }

    fn passed(&self) -> bool {
        self.0.is_some_and(|end| Instant::now() >= end)
    }
}

/// Runs `attempt(slice)` detached from the interpreter, slice after slice, until it returns
/// anything but `Error::Timeout` or `until` passes (then `weft.TimeoutError`). Signals are
/// checked between slices, so Ctrl-C raises `KeyboardInterrupt`.
///
/// `attempt` must be repeatable: a `Timeout` from it has changed nothing.
///
/// # Errors
/// The error of the last attempt, `weft.TimeoutError`, or the exception a signal handler
/// raised.
pub(crate) fn sliced<T: Send>(
    py: Python<'_>,
    until: Until,
    attempt: impl FnMut(Duration) -> weft::Result<T> + Send,
) -> PyResult<T> {
    sliced_retry(py, until, |e| matches!(e, weft::Error::Timeout), attempt)
}

/// Whether an open or connect is retried while its timeout lasts: the object is not there yet,
/// or its creator has not finished it yet. A slice can end between the creator's exclusive
/// create and its `ready` store; only the caller's whole timeout decides that it never came,
/// unless the creator is known to be gone (then the object never will be ready).
pub(crate) fn not_there_yet(e: &weft::Error) -> bool {
    matches!(
        e,
        weft::Error::NotFound { .. }
            | weft::Error::NotReady {
                creator_gone: false,
                ..
            }
    )
}

/// As [`sliced`], going on after every error for which `retry` is true (`NotFound` while
/// waiting for an object to appear, say); once `until` passes, that error is raised.
///
/// # Errors
/// As [`sliced`].
pub(crate) fn sliced_retry<T: Send>(
    py: Python<'_>,
    until: Until,
    retry: impl Fn(&weft::Error) -> bool,
    mut attempt: impl FnMut(Duration) -> weft::Result<T> + Send,
) -> PyResult<T> {
    loop {
        let slice = until.slice();
        match py.detach(|| attempt(slice)) {
            Err(e) if retry(&e) => {
                if until.passed() {
                    return Err(to_py(e));
                }
                py.check_signals()?;
            }
            other => return other.map_err(to_py),
        }
    }
}

/// Runs `call` on a thread of its own and waits for its result in slices, checking signals
/// between them: for blocking calls that cannot be cut into repeatable slices
/// (`Channel.listen` creates its stream, then waits for the peer).
///
/// On an interrupt (a signal handler raised), `cancel` is set, if the call takes one, and this
/// thread waits (detached) for the call to end: a call that gives up on its cancel flag ends
/// within milliseconds and removes what it made, so that what it was after (the name of a
/// channel, say) is free once the exception is raised. What it returned is dropped, even a
/// success that came at the same moment (a channel made just then is closed: its peer sees
/// it leave). A call without a cancel flag keeps running on its thread until it ends by itself
/// (its own timeout), and its result is dropped then.
///
/// # Errors
/// The call's error, or the exception a signal handler raised.
pub(crate) fn off_thread<T: Send + 'static>(
    py: Python<'_>,
    name: &str,
    cancel: Option<Arc<AtomicBool>>,
    call: impl FnOnce() -> weft::Result<T> + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("weft-{name}"))
        .spawn(move || {
            // The receiver may be gone (interrupted): the result is dropped here.
            let _ = tx.send(call());
        })
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    let mut rx = rx;
    loop {
        // The receiver goes into the detached call and comes back (it is not `Sync`).
        let (got, back) = py.detach(move || (rx.recv_timeout(SLICE), rx));
        rx = back;
        match got {
            Ok(result) => return result.map_err(to_py),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    if let Some(cancel) = cancel {
                        // Relaxed: the flag publishes nothing; what the call did before it
                        // ended is seen through the channel below (its send happens before
                        // our receive).
                        cancel.store(true, Ordering::Relaxed);
                        // The call ends promptly once it sees the flag; the bound only keeps
                        // a call that does not from holding Ctrl-C back for good.
                        py.detach(move || drop(rx.recv_timeout(CANCEL_WAIT)));
                    }
                    return Err(interrupt);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "the {name} call panicked"
                )));
            }
        }
    }
}

/// How long an interrupted [`off_thread`] call is waited for after its cancel flag is set.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// A timeout argument in seconds, checked as it is read from Python: a float or an int (or
/// anything `float()` takes), never negative or NaN. Infinity, and any timeout too large for a
/// `Duration` (more than 2^64 seconds: 1e300, or `10**400`, an int too large for a float),
/// mean "as long as it takes", as `None` does where it is allowed (`Option<Timeout>`). Every
/// call that takes a timeout takes it as this type, so that they all read it alike.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeout(Option<Duration>);

impl Timeout {
    /// Zero: look once, do not wait (the default of the calls that wait only when told to).
    pub(crate) const ZERO: Timeout = Timeout(Some(Duration::ZERO));

    /// A wait of `d`.
    pub(crate) const fn after(d: Duration) -> Timeout {
        Timeout(Some(d))
    }

    /// As a Rust `Duration`, for a call that takes its timeout whole: "as long as it takes"
    /// is `Duration::MAX`, which weft's deadlines take as no deadline at all
    /// (`Deadline::after` saturates), as [`Until`] does.
    pub(crate) fn duration(self) -> Duration {
        self.0.unwrap_or(Duration::MAX)
    }
}

impl<'py> FromPyObject<'_, 'py> for Timeout {
    type Error = PyErr;

    /// # Errors
    /// `ValueError` for a negative timeout or NaN (whatever their size); `TypeError` for what
    /// is not a number.
    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Timeout> {
        let secs = match ob.extract::<f64>() {
            Ok(secs) => secs,
            // A number too large for a float (an int beyond 1.8e308): as far from zero as a
            // float goes, on its side of zero.
            Err(e) if e.is_instance_of::<PyOverflowError>(ob.py()) => match ob.lt(0) {
                Ok(true) => return Err(refused("a negative number too large for a float")),
                Ok(false) => f64::INFINITY,
                Err(_) => return Err(e),
            },
            Err(e) => return Err(e),
        };
        // -0.0 passes (zero: do not wait).
        if secs.is_nan() || secs < 0.0 {
            return Err(refused(&format!("{secs:?}")));
        }
        // Non-negative and not NaN: the only error left is a value too large (infinity
        // included).
        Ok(Timeout(Duration::try_from_secs_f64(secs).ok()))
    }
}

fn refused(what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "timeout must be a non-negative number of seconds (None or inf: as long as it takes), \
         not {what}"
    ))
}
