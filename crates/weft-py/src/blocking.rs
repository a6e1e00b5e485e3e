//! Blocking calls from Python: detached from the interpreter (other threads run meanwhile) and
//! interruptible (Ctrl-C raises `KeyboardInterrupt` within about one slice).
//!
//! A wait is cut into slices of at most [`SLICE`]: each slice is one call of the Rust
//! `_timeout` form without the interpreter, and between slices the thread re-attaches and runs
//! the signal handlers (`PyErr_CheckSignals`). Only calls whose `_timeout` form can be repeated
//! without side effects are sliced; the others run on a thread of their own ([`off_thread`])
//! while this one waits in slices for their answer.

use crate::errors::to_py;
use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// The longest time a blocking call spends without looking at signals.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// A wait's end: `None` waits forever.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Until(Option<Instant>);

impl Until {
    /// From a Python timeout in seconds (`None`, infinity, or more than a `Duration` or an
    /// `Instant` holds: forever).
    ///
    /// # Errors
    /// `ValueError` for a negative timeout or NaN.
    pub(crate) fn from_secs(timeout: Option<f64>) -> PyResult<Until> {
        let Some(secs) = timeout else {
            return Ok(Until(None));
        };
        Ok(Until(
            finite(secs)?.and_then(|d| Instant::now().checked_add(d)),
        ))
    }

    /// The next slice: at most [`SLICE`], at most what is left (zero once passed).
    fn slice(&self) -> Duration {
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
/// (`Channel.listen` creates its stream, then waits for the peer). On an interrupt the call
/// keeps running on its thread until it ends by itself (its own timeout), and its result is
/// dropped.
///
/// # Errors
/// The call's error, or the exception a signal handler raised.
pub(crate) fn off_thread<T: Send + 'static>(
    py: Python<'_>,
    name: &str,
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
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "the {name} call panicked"
                )));
            }
        }
    }
}

/// A Rust `Duration` from a Python timeout in seconds, for a call that takes its timeout
/// whole: infinity, or more than a `Duration` holds, is `Duration::MAX`, which weft's
/// deadlines take as no deadline at all (`Deadline::after` saturates), as [`Until`] does.
///
/// # Errors
/// `ValueError` for a negative timeout or NaN.
pub(crate) fn duration(secs: f64) -> PyResult<Duration> {
    Ok(finite(secs)?.unwrap_or(Duration::MAX))
}

/// A Python timeout in seconds as a `Duration`; `None` for infinity and for any timeout too
/// large for a `Duration` (more than 2^64 seconds): both mean "as long as it takes", so that
/// 1e300 waits as `float('inf')` does instead of failing.
///
/// # Errors
/// `ValueError` for a negative timeout or NaN (whatever their size).
fn finite(secs: f64) -> PyResult<Option<Duration>> {
    // -0.0 passes (zero: do not wait).
    if secs.is_nan() || secs < 0.0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "timeout must be a non-negative number of seconds (None or inf: as long as it \
             takes), not {secs:?}"
        )));
    }
    // Non-negative and not NaN: the only error left is a value too large (infinity included).
    Ok(Duration::try_from_secs_f64(secs).ok())
}
