//! Python bindings of weft: the native module `weft._weft`, re-exported by the Python package
//! `weft` (crates/weft-py/python/weft).
//!
//! Grants, loans and samples expose the buffer protocol over shared memory (zero copies), and
//! refuse to be released while a buffer exported from them is alive (`view`). Grants borrow
//! their handle in Rust (`StreamReader::read(&mut self) -> ReadGrant<'_>`): here the handle is
//! held at a stable address behind a run-time "busy" state and the grant beside it with its
//! lifetime erased (`owned`). Blocking calls run without the interpreter, in slices with signal
//! checks between them (`blocking`). Everything that owns weft state belongs to the process
//! that made it: a fork's child can neither use nor drop what it inherited (`process`).
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod blocking;
mod channel;
mod errors;
mod input;
mod owned;
mod process;
mod pubsub;
mod stream;
mod view;

use pyo3::prelude::*;
use weft::WaitStrategy;

/// A wait strategy from its Python name.
///
/// # Errors
/// `ValueError` for an unknown name.
pub(crate) fn wait_strategy(name: &str) -> PyResult<WaitStrategy> {
    Ok(match name {
        "adaptive" => WaitStrategy::Adaptive,
        "park" => WaitStrategy::Park,
        "busy_spin" => WaitStrategy::BusySpin,
        "yield_spin" => WaitStrategy::YieldSpin,
        "backoff_spin" => WaitStrategy::BackoffSpin,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown wait strategy {other:?}: use \"adaptive\", \"park\", \"busy_spin\", \
                 \"yield_spin\" or \"backoff_spin\""
            )));
        }
    })
}

/// The `TypeError` of every handle's `__reduce__`: a handle stands for this process's
/// mappings and rows in shared memory, which no byte string can carry.
pub(crate) fn not_picklable() -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(
        "weft handles cannot be pickled; open the object by name in the other process",
    )
}

/// Whether the arguments of a `__exit__(*args)` say that an exception is propagating out of
/// the `with` block (its type is not None).
pub(crate) fn raising(args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
    args.get_item(0).is_ok_and(|t| !t.is_none())
}

/// The native module. It relies on the GIL (`gil_used`): bytes of a caller's buffer are read
/// while attached, when no other Python code can change them (see `input`).
#[pymodule(gil_used = true)]
#[pyo3(name = "_weft")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    process::init(m)?;
    errors::register(m)?;
    m.add("_ERROR_KINDS", errors::table(m.py())?)?;
    m.add_class::<stream::StreamWriter>()?;
    m.add_class::<stream::StreamReader>()?;
    m.add_class::<stream::WriteGrant>()?;
    m.add_class::<stream::ReadGrant>()?;
    m.add_class::<pubsub::TopicMode>()?;
    m.add_class::<pubsub::Topic>()?;
    m.add_class::<pubsub::Publisher>()?;
    m.add_class::<pubsub::Loan>()?;
    m.add_class::<pubsub::Subscriber>()?;
    m.add_class::<pubsub::Subscription>()?;
    m.add_class::<pubsub::Sample>()?;
    m.add_class::<channel::Channel>()?;
    m.add_class::<channel::Server>()?;
    m.add_class::<channel::Reply>()?;
    m.add_class::<channel::Request>()?;
    m.add_function(wrap_pyfunction!(pubsub::regions, m)?)?;
    m.add_function(wrap_pyfunction!(pubsub::split_uri, m)?)?;
    m.add("SLICE_SECONDS", blocking::SLICE.as_secs_f64())?;
    // The shared-memory layout version this build speaks (docs/protocol.md); for tests that
    // write object headers by hand.
    m.add("LAYOUT_VERSION", weft::shm::LAYOUT_VERSION)?;
    Ok(())
}
