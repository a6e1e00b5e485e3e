//! `weft.Publisher`, `weft.Subscriber`, `weft.Subscription` and what they hand out:
//! `weft.Topic`, `weft.Loan` (a block of the region's pool, written in place) and
//! `weft.Sample` (a received message, read in place).

use crate::blocking::{Timeout, Until, not_there_yet, sliced, sliced_retry};
use crate::errors::IntoPy;
use crate::input::Input;
use crate::owned::{Owned, closed};
use crate::process::Local;
use crate::view::{View, grant_methods};
use crate::wait_strategy;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use weft::pubsub::{
    Config, Publisher as RsPublisher, Sample as RsSample, Subscriber as RsSubscriber,
    Subscription as RsSubscription, Topic as RsTopic, TopicMode as RsMode, TopicSpec,
};

/// How a topic carries its messages, chosen when it is registered.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "weft")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopicMode {
    /// Loaned blocks from the region's pool, reference-counted: any payload up to the block
    /// size, zero copies (the default).
    #[pyo3(name = "BLOCKS")]
    Blocks,
    /// The newest value only: a receive skips to the newest message, never lags.
    #[pyo3(name = "LATEST")]
    Latest,
    /// Small fixed-size values (1 to 56 bytes, given by `register(..., size=n)`; up to
    /// 16 * ring_slots - 8 with `latest=True`) copied into the ring's slots under a seqlock:
    /// no pool, no reference counts.
    #[pyo3(name = "INLINE")]
    Inline,
}

#[pymethods]
impl TopicMode {
    /// Pickles as `getattr(TopicMode, "BLOCKS")`, so that it loads as the same member.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let name = match self {
            TopicMode::Blocks => "BLOCKS",
            TopicMode::Latest => "LATEST",
            TopicMode::Inline => "INLINE",
        };
        let getattr = py.import("builtins")?.getattr("getattr")?;
        (getattr, (py.get_type::<TopicMode>(), name)).into_pyobject(py)
    }
}

impl From<TopicMode> for RsMode {
    fn from(m: TopicMode) -> RsMode {
        match m {
            TopicMode::Blocks => RsMode::Blocks,
            TopicMode::Latest => RsMode::Latest,
            TopicMode::Inline => RsMode::Inline,
        }
    }
}

/// A publisher and the lock that serialises every use of it.
///
/// A `weft::pubsub::Publisher` is `Send` but not `Sync` (it is one participant, with one
/// publish in flight at a time), and its loans borrow it. From Python it is reached by the
/// `Publisher` object and by every `Loan` taken from it, possibly on several threads: each of
/// those uses (register, loan, publish, stats, a loan's publish or drop) takes `lock` first.
///
/// The lock is waited for only detached from the interpreter, and nothing attaches while
/// holding it. A publish holds it while it waits for a slot that a stalled peer holds (up to
/// the claim timeout), a register while it waits for the region's registration lock: a
/// thread that waited for it attached would stall every other Python thread meanwhile, and
/// one that attached while holding it could deadlock against a thread that holds the GIL.
struct Shared {
    lock: Mutex<()>,
    publisher: RsPublisher,
}

// SAFETY: every use of `publisher` happens inside `Shared::locked`, under `lock`, so the
// `!Sync` publisher is never used from two threads at once (see the type's docs); a
// `Publisher` may move between threads (`Send`).
unsafe impl Sync for Shared {}

impl Shared {
    /// Runs `f` on the publisher under the lock, detached from the interpreter: the wait for
    /// the lock and whatever `f` waits for let other Python threads run.
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&RsPublisher) -> R + Send) -> R {
        py.detach(|| self.locked(f))
    }

    /// As [`Shared::with`], on a thread that is not attached (inside a detached call).
    fn locked<R>(&self, f: impl FnOnce(&RsPublisher) -> R) -> R {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        f(&self.publisher)
    }
}

/// A loaned block: the weft loan and the publisher it borrows.
struct LoanHolder {
    /// `Some` until published or dropped; borrows `shared.publisher`.
    loan: Option<weft::pubsub::Loan<'static>>,
    shared: Arc<Shared>,
}

// SAFETY: the loan's only shared state is its publisher, which it uses (publish, set_len, drop)
// only inside `Shared::locked`, under the lock; its block is this loan's alone (taken from the
// free list with a count of one, unpublished). So it may move to another thread.
unsafe impl Send for LoanHolder {}

impl LoanHolder {
    /// Loans a block of `shared`'s publisher for `topic` (with the payload length `len`, else
    /// the whole block), detached from the interpreter (see [`Shared`]).
    fn new(
        py: Python<'_>,
        shared: Arc<Shared>,
        topic: &RsTopic,
        len: Option<usize>,
    ) -> weft::Result<LoanHolder> {
        py.detach(move || {
            let publisher: *const RsPublisher = &shared.publisher;
            // SAFETY: the loan borrows the publisher inside `shared`'s allocation, which the
            // holder keeps alive (it holds the Arc) and drops only after the loan (the loan is
            // taken out by `publish` or dropped by `give_back`, both before the holder's fields
            // go). Every use of the publisher through the loan happens under the lock (see the
            // type), so the lifetime may be erased to 'static here.
            let publisher: &'static RsPublisher = unsafe { &*publisher };
            let loan = shared.locked(|_| -> weft::Result<_> {
                let mut loan = publisher.loan(topic)?;
                if let Some(len) = len {
                    // A failure drops the loan here, under the lock.
                    loan.set_len(len)?;
                }
                Ok(loan)
            })?;
            Ok(LoanHolder {
                loan: Some(loan),
                shared,
            })
        })
    }

    /// The block: its first byte and the loan's payload length.
    fn block(&mut self) -> (*mut u8, usize) {
        let loan = self
            .loan
            .as_mut()
            .expect("a loan is present until published");
        (loan.as_mut_ptr(), loan.len())
    }

    /// Publishes the block's first `len` bytes. Called detached (it may wait for the lock and
    /// for the claim).
    ///
    /// # Errors
    /// `TooLarge` for a `len` beyond the block; as `weft::pubsub::Loan::publish`.
    fn publish(mut self, len: usize) -> weft::Result<u64> {
        let mut loan = self.loan.take().expect("a loan is present until published");
        // A failure drops the loan inside the closure, under the lock.
        self.shared.locked(|_| {
            loan.set_len(len)?;
            loan.publish()
        })
    }

    /// Returns the block to the pool unpublished (the loan's drop uses the publisher). Called
    /// detached.
    fn give_back(&mut self) {
        if let Some(loan) = self.loan.take() {
            self.shared.locked(|_| drop(loan));
        }
    }
}

impl Drop for LoanHolder {
    fn drop(&mut self) {
        if self.loan.is_none() {
            return;
        }
        // Dropped from Python (`abandon`, `release`, a `with` block that raised, garbage
        // collection), so attached: the block is given back detached (see `Shared`).
        // `try_attach` is free on an attached thread; where it cannot attach (the interpreter
        // is finalizing) the block is given back as it is.
        let mut this = Some(self);
        Python::try_attach(|py| {
            if let Some(holder) = this.take() {
                py.detach(|| holder.give_back());
            }
        });
        if let Some(holder) = this {
            holder.give_back();
        }
    }
}

/// A registered topic of a region (from `Publisher.register`): pass it to `loan` and
/// `publish`.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Topic {
    topic: RsTopic,
}

#[pymethods]
impl Topic {
    /// The topic's path ("/prices/AAPL").
    #[getter]
    fn name(&self) -> &str {
        self.topic.name()
    }

    /// How the topic carries its messages.
    #[getter]
    fn mode(&self) -> PyResult<TopicMode> {
        match self.topic.mode() {
            RsMode::Blocks => Ok(TopicMode::Blocks),
            RsMode::Latest => Ok(TopicMode::Latest),
            RsMode::Inline => Ok(TopicMode::Inline),
            other => Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                "topic mode {other:?} has no Python name in this build"
            ))),
        }
    }

    /// The fixed message size of an inline topic, `None` for the others.
    #[getter]
    fn message_size(&self) -> Option<usize> {
        self.topic.message_size()
    }

    /// Refuses: a topic belongs to its publisher (register it again in the other process).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Topic {:?}>", self.topic.name())
    }
}

/// Between two attempts of a connect or subscribe that found nothing: a short pause (neither
/// waits by itself), within the slice.
fn poll_pause(e: &weft::Error, slice: std::time::Duration) {
    if not_there_yet(e) {
        std::thread::sleep(slice.min(std::time::Duration::from_millis(1)));
    }
}

/// Opens a region with `open(config)`, waiting up to `timeout` for it to appear, slice by
/// slice (Ctrl-C is checked between them). The wait for a creator still making the region is
/// one slice too (`config`'s open timeout set to it): the library's own (a second) would
/// outlast both the caller's timeout and Ctrl-C.
fn open_sliced<T: Send>(
    py: Python<'_>,
    timeout: Option<Timeout>,
    config: &Config,
    open: impl Fn(&Config) -> weft::Result<T> + Send + Sync,
) -> PyResult<T> {
    sliced_retry(py, Until::new(timeout), not_there_yet, |slice| {
        open(&config.clone().open_timeout(slice)).inspect_err(|e| poll_pause(e, slice))
    })
}

/// How long `Publisher::open_or_create` waits for a creator still making the region before it
/// decides (the library's own wait, `Config`'s default open timeout).
const CREATOR_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// `Publisher::open_or_create`, its wait for a creator still making the region cut into
/// slices (Ctrl-C checked between them). While the wait lasts a slice's open that finds the
/// creator still at work is only looked at again; a region that is there is joined, one that
/// is not is made. Once the whole wait has passed, the library decides as it would have after
/// its own: it joins, replaces a leftover whose creator is gone or never named itself, or
/// reports the live creator (`NotReadyError`).
fn open_or_create_sliced(py: Python<'_>, region: &str, config: &Config) -> PyResult<RsPublisher> {
    let until = Until::new(Some(Timeout::after(CREATOR_WAIT)));
    loop {
        let slice = until.slice();
        let done = py
            .detach(|| {
                if slice.is_zero() {
                    let decide = config.clone().open_timeout(std::time::Duration::ZERO);
                    return RsPublisher::open_or_create(region, &decide).map(Some);
                }
                match RsPublisher::open_with(region, &config.clone().open_timeout(slice)) {
                    Err(weft::Error::NotReady {
                        creator_gone: false,
                        ..
                    }) => Ok(None),
                    // Not there (or its creator is gone): the library's own call makes it,
                    // with its whole wait for the creator of a region made meanwhile.
                    Err(weft::Error::NotFound { .. } | weft::Error::NotReady { .. }) => {
                        RsPublisher::open_or_create(region, config).map(Some)
                    }
                    other => other.map(Some),
                }
            })
            .py()?;
        if let Some(p) = done {
            return Ok(p);
        }
        py.check_signals()?;
    }
}

/// Publishes on the topics of one region (`weft.Publisher.create` or `.open`).
#[pyclass(frozen, module = "weft")]
pub(crate) struct Publisher {
    /// `None` once closed; left to its process in a fork's child.
    shared: Local<Mutex<Option<Arc<Shared>>>>,
    region: String,
    max_len: usize,
    created: bool,
}

impl Publisher {
    fn new(p: RsPublisher) -> Publisher {
        Publisher {
            region: p.region_name().into(),
            max_len: p.max_len(),
            created: p.created(),
            shared: Local::new(Mutex::new(Some(Arc::new(Shared {
                lock: Mutex::new(()),
                publisher: p,
            })))),
        }
    }

    fn shared(&self) -> PyResult<Arc<Shared>> {
        self.shared
            .get("Publisher")?
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| closed("Publisher"))
    }
}

/// A region's shape, as `Publisher.create` and `Publisher.open_or_create` take it.
fn shape(
    blocks: usize,
    block_size: usize,
    ring_slots: usize,
    topics: usize,
    participants: usize,
    max_held: usize,
) -> Config {
    Config::default()
        .blocks(blocks)
        .block_size(block_size)
        .ring_slots(ring_slots)
        .topics(topics)
        .participants(participants)
        .max_held(max_held)
}

#[pymethods]
impl Publisher {
    /// Creates the region `region` and joins it as a publisher.
    ///
    /// The region holds `blocks` blocks of `block_size` bytes (the largest message), up to
    /// `topics` topics of `ring_slots` descriptors each (the history a late joiner can get; a
    /// latest topic uses 2),
    /// and `participants` publishers and subscribers at once.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per Config setting
    #[pyo3(signature = (
        region, *, blocks = 1024, block_size = 4096, ring_slots = 256, topics = 64,
        participants = 32, max_held = 256,
    ))]
    fn create(
        py: Python<'_>,
        region: &str,
        blocks: usize,
        block_size: usize,
        ring_slots: usize,
        topics: usize,
        participants: usize,
        max_held: usize,
    ) -> PyResult<Publisher> {
        let config = shape(
            blocks,
            block_size,
            ring_slots,
            topics,
            participants,
            max_held,
        );
        let p = py.detach(|| RsPublisher::create(region, &config)).py()?;
        Ok(Publisher::new(p))
    }

    /// Joins the region `region` as another publisher, or creates it with the shape given
    /// (as `create` takes it) when there is none: for processes that do not know which of
    /// them starts first. A region that exists keeps its own shape (`max_len` says what it
    /// has); `created` says which happened. A region another process is still making is
    /// waited for up to a second (Ctrl-C ends the wait), then joined; a leftover whose creator
    /// is gone is replaced, and a creator alive but not done by then is `weft.NotReadyError`.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per Config setting
    #[pyo3(signature = (
        region, *, blocks = 1024, block_size = 4096, ring_slots = 256, topics = 64,
        participants = 32, max_held = 256,
    ))]
    fn open_or_create(
        py: Python<'_>,
        region: &str,
        blocks: usize,
        block_size: usize,
        ring_slots: usize,
        topics: usize,
        participants: usize,
        max_held: usize,
    ) -> PyResult<Publisher> {
        let config = shape(
            blocks,
            block_size,
            ring_slots,
            topics,
            participants,
            max_held,
        );
        Ok(Publisher::new(open_or_create_sliced(py, region, &config)?))
    }

    /// Whether this publisher created its region (`create`, or `open_or_create` finding
    /// none) rather than joining it.
    #[getter]
    fn created(&self) -> bool {
        self.created
    }

    /// Joins the region `region` as another publisher, waiting up to `timeout` seconds for it
    /// to appear and for its creator to finish it (0: one look; None: as long as it takes),
    /// as `Subscriber.connect` does; then `weft.NotFoundError` or `weft.NotReadyError`.
    #[staticmethod]
    // The text signature is written out: PyO3 shows a default that is not a literal as `...`.
    #[pyo3(
        signature = (region, timeout = Timeout::ZERO),
        text_signature = "(region, timeout=0.0)"
    )]
    fn open(py: Python<'_>, region: &str, timeout: Option<Timeout>) -> PyResult<Publisher> {
        let p = open_sliced(py, timeout, &Config::default(), |config| {
            RsPublisher::open_with(region, config)
        })?;
        Ok(Publisher::new(p))
    }

    /// The region's name.
    #[getter]
    fn region(&self) -> &str {
        &self.region
    }

    /// The largest payload a message holds (the block size).
    #[getter]
    fn max_len(&self) -> usize {
        self.max_len
    }

    /// Whether it is closed (or, in a fork's child, inherited: unusable here).
    #[getter]
    fn closed(&self) -> bool {
        self.shared.get("Publisher").map_or(true, |s| {
            s.lock().unwrap_or_else(|p| p.into_inner()).is_none()
        })
    }

    /// Registers `topic` (a path such as "/prices/AAPL") with `mode`, or returns the topic
    /// registered already under that name. An `INLINE` topic needs `size`, its fixed message
    /// size in bytes (1 to 56); the other modes refuse it. `latest=True` makes an `INLINE`
    /// topic a latest-value one: every receive gets the newest message, as on a `LATEST`
    /// topic, with no block behind it; its messages may be larger, up to 16 * ring_slots - 8
    /// bytes (4088 with the default ring_slots). `single_publisher=True` (any mode) gives the topic one
    /// publisher at a time, which publishes without the shared claim's atomic
    /// read-modify-writes; another live publisher registering it gets `weft.InUseError`, and
    /// the next registrant takes it over once its holder is gone.
    ///
    /// Raises `weft.InvalidArgumentError` for a topic registered already with another mode,
    /// size, `latest` or `single_publisher`, for a missing or bad inline size, for `latest` on
    /// a topic that is not `INLINE`, or when the region's table is full.
    #[pyo3(signature = (
        topic,
        mode = TopicMode::Blocks,
        size = None,
        *,
        latest = false,
        single_publisher = false
    ))]
    fn register(
        &self,
        py: Python<'_>,
        topic: &str,
        mode: TopicMode,
        size: Option<usize>,
        latest: bool,
        single_publisher: bool,
    ) -> PyResult<Topic> {
        let mut spec = TopicSpec::new(mode.into());
        if latest {
            spec = spec.latest();
        }
        if single_publisher {
            spec = spec.single_publisher();
        }
        match (mode, size) {
            (TopicMode::Inline, Some(n)) => spec = spec.size(n),
            (TopicMode::Inline, None) => {
                return Err(weft::Error::InvalidArgument {
                    what: "size of an INLINE topic",
                    value: 0,
                    expected: "register(topic, TopicMode.INLINE, size=n) with n in 1 ..= 56 \
                               (latest=True: up to 16 * ring_slots - 8)",
                })
                .py();
            }
            (_, Some(n)) => {
                return Err(weft::Error::InvalidArgument {
                    what: "size of a BLOCKS or LATEST topic",
                    value: n as u64,
                    expected: "no size: only INLINE topics have a fixed message size",
                })
                .py();
            }
            (_, None) => {}
        }
        let t = self
            .shared()?
            .with(py, |p| p.register_spec(topic, &spec))
            .py()?;
        Ok(Topic { topic: t })
    }

    /// Loans a block for `topic`: write the payload in place (buffer protocol, writable; the
    /// whole block until `set_len`, a typed topic's type size, the only length it takes),
    /// then `publish()`. As a context manager it publishes when
    /// the block ends normally and returns the block to the pool when it raises.
    ///
    /// Raises `weft.FullError` when every block of the pool is in use.
    fn loan(&self, py: Python<'_>, topic: &Topic) -> PyResult<Loan> {
        let mut holder = LoanHolder::new(py, self.shared()?, &topic.topic, None).py()?;
        let (ptr, len) = holder.block();
        // SAFETY: the block's `len` bytes (its whole capacity: a fresh loan's length is the
        // block size) at `ptr` are inside the mapping the publisher keeps, and belong to this
        // loan alone until it is published or dropped, both of which consume the holder.
        let view = unsafe { View::new(holder, ptr, len, len, true, "Loan") };
        Ok(Loan { view })
    }

    /// Copies `data` (any contiguous bytes-like object) into a block (or, on an inline topic,
    /// into the ring's slot: exactly the topic's message size) and publishes it on `topic`.
    /// Returns the message's sequence number.
    ///
    /// Waits (up to the region's claim timeout, then `weft.TimeoutError`) while the slot it
    /// needs is held by a stalled publisher, and while another thread uses this publisher;
    /// other Python threads run meanwhile.
    fn publish(&self, py: Python<'_>, topic: &Topic, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let input = Input::new(data)?;
        let shared = self.shared()?;
        let topic = &topic.topic;
        if matches!(input, Input::Buffer(_)) && topic.mode() != RsMode::Inline {
            // A buffer that Python code may change (a bytearray, a numpy array) is copied into
            // the block while attached; only the loan and the publish, which may wait, run
            // detached. No copy but the one into the block.
            let mut holder = LoanHolder::new(py, shared, topic, Some(input.len())).py()?;
            let (dst, len) = holder.block();
            let (src, _) = input.raw();
            if len > 0 {
                // SAFETY: `len` is the loan's length, which its set_len checked against the
                // block, and the input's (`LoanHolder::new` was given it); `src` is `len`
                // readable bytes of a Python object we hold, read while attached (no other
                // Python code runs, so nothing changes them meanwhile), and not in this block,
                // which was free until this loan took it.
                unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
            }
            return py.detach(move || holder.publish(len)).py();
        }
        // An immutable `bytes` object is read in place without the interpreter; any other
        // buffer (here an inline message: at most a few KiB) is copied out first.
        let bytes = input.detached();
        shared.with(py, |p| p.publish(topic, &bytes)).py()
    }

    /// Statistics of `topic`: a dict of `published`, `pool_blocks`, `lagged`, `subscribers`,
    /// `recovered`. Raises `weft.ClosedError` once the topic was unregistered and its last
    /// subscription ended (its entry may hold another topic since).
    fn stats<'py>(
        &self,
        py: Python<'py>,
        topic: &Topic,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let s = self.shared()?.with(py, |p| p.stats(&topic.topic)).py()?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("published", s.published)?;
        d.set_item("pool_blocks", s.pool_blocks)?;
        d.set_item("lagged", s.lagged)?;
        d.set_item("subscribers", s.subscribers)?;
        d.set_item("recovered", s.recovered)?;
        Ok(d)
    }

    /// Leaves the region (once the loans taken from it are gone too). In a fork's child it
    /// does nothing: the region is the parent's.
    fn close(&self, py: Python<'_>) {
        let Ok(shared) = self.shared.get("Publisher") else {
            return;
        };
        let shared = shared.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Detached: leaving may wait (a loan's publish on another thread holds the lock; the
        // last handle out settles what the participant held).
        py.detach(move || drop(shared));
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it, whether the block raised or not (never suppresses the exception).
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        // `*args`, as the stubs say (the Rust name is the Python name): not needed here.
        let _ = args;
        self.close(py);
        false
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Publisher of region {:?}>", self.region)
    }
}

/// A block loaned from a region's pool for one topic, in shared memory (buffer protocol,
/// writable). Set the payload length with `set_len`, then `publish()`.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Loan {
    view: View<LoanHolder>,
}

impl Loan {
    fn publish_inner(&self, py: Python<'_>) -> PyResult<u64> {
        let (holder, len) = self.view.take_with_len()?;
        // Without the GIL: a publish may wait (up to the claim timeout) for a ring slot that a
        // stalled publisher holds, and for the publisher's lock.
        py.detach(move || holder.publish(len)).py()
    }
}

grant_methods!(
    Loan,
    |slf| {
        if slf.view.is_open()? {
            Python::attach(|py| slf.publish_inner(py))?;
        }
    },
    {
        /// Sets the payload length (at most the block size). Raises BufferError while buffers
        /// exported from the loan are alive.
        fn set_len(&self, length: usize) -> PyResult<()> {
            // The view checks it against the block; the weft loan takes it at the publish,
            // under the publisher's lock (`LoanHolder::publish`), so nothing waits here.
            self.view.set_len(length)
        }

        /// Copies `data` (any bytes-like object) into the loan at `offset`.
        #[pyo3(signature = (data, offset = 0))]
        fn write(&self, data: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
            let input = Input::new(data)?;
            let (ptr, len) = input.raw();
            self.view.write(ptr, len, offset)
        }

        /// Publishes the block (an 8-byte descriptor goes into the topic's ring). Returns the
        /// message's sequence number. Raises BufferError while buffers exported from the loan are
        /// alive.
        fn publish(&self, py: Python<'_>) -> PyResult<u64> {
            self.publish_inner(py)
        }

        /// Returns the block to the pool unpublished.
        fn abandon(&self) -> PyResult<()> {
            self.view.release()
        }

        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.Loan of {n} bytes>"),
                Err(_) => "<weft.Loan (released)>".into(),
            }
        }
    }
);

/// A received message, read in place in shared memory (buffer protocol, read-only). Its block
/// stays out of the pool until the sample is released.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Sample {
    /// Boxed: an inline sample carries its bytes inside itself, so the view's pointer must
    /// not move with it.
    view: View<Box<RsSample>>,
    seq: u64,
}

impl Sample {
    fn new(s: RsSample) -> Sample {
        let s = Box::new(s);
        let (ptr, len, seq) = (s.as_ptr().cast_mut(), s.len(), s.seq());
        // SAFETY: a block sample's `len` bytes lie in the region's mapping, which the sample
        // keeps alive, and no weft writer touches a block while a sample references it; an
        // inline sample's bytes are in the box, which does not move while the view holds it.
        let view = unsafe { View::new(s, ptr, len, len, false, "Sample") };
        Sample { view, seq }
    }
}

grant_methods!(
    Sample,
    |slf| {
        slf.view.release()?;
    },
    {
        /// The message's sequence number in its topic.
        #[getter]
        fn seq(&self) -> u64 {
            self.seq
        }

        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.Sample seq={} of {n} bytes>", self.seq),
                Err(_) => format!("<weft.Sample seq={} (released)>", self.seq),
            }
        }
    }
);

/// Receives from the topics of one region (`weft.Subscriber.connect`).
#[pyclass(frozen, module = "weft")]
pub(crate) struct Subscriber {
    /// `None` once closed; left to its process in a fork's child.
    inner: Local<Mutex<Option<Arc<RsSubscriber>>>>,
    region: String,
}

impl Subscriber {
    fn get(&self) -> PyResult<Arc<RsSubscriber>> {
        self.inner
            .get("Subscriber")?
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| closed("Subscriber"))
    }
}

#[pymethods]
impl Subscriber {
    /// Connects to the region `region`, waiting up to `timeout` seconds for it to appear (0:
    /// not at all; None: as long as it takes). `wait` is how `recv` waits ("adaptive",
    /// "park", "busy_spin", "yield_spin", "backoff_spin").
    #[staticmethod]
    // The text signature is written out: PyO3 shows a default that is not a literal as `...`.
    #[pyo3(
        signature = (region, timeout = Timeout::ZERO, *, wait = "adaptive"),
        text_signature = "(region, timeout=0.0, *, wait='adaptive')"
    )]
    fn connect(
        py: Python<'_>,
        region: &str,
        timeout: Option<Timeout>,
        wait: &str,
    ) -> PyResult<Subscriber> {
        let config = Config::default().wait(wait_strategy(wait)?);
        let s = open_sliced(py, timeout, &config, |config| {
            RsSubscriber::connect_with(region, config)
        })?;
        Ok(Subscriber {
            inner: Local::new(Mutex::new(Some(Arc::new(s)))),
            region: region.into(),
        })
    }

    /// The region's name.
    #[getter]
    fn region(&self) -> &str {
        &self.region
    }

    /// Subscribes to `topic`, waiting up to `timeout` seconds for a publisher to register it
    /// (0: not at all, `weft.NotFoundError`; None: as long as it takes). With `history`, the
    /// first receives return up to that many of the newest messages already published.
    // The text signature is written out: PyO3 shows a default that is not a literal as `...`.
    #[pyo3(
        signature = (topic, timeout = Timeout::ZERO, *, history = 0),
        text_signature = "($self, topic, timeout=0.0, *, history=0)"
    )]
    fn subscribe(
        &self,
        py: Python<'_>,
        topic: &str,
        timeout: Option<Timeout>,
        history: usize,
    ) -> PyResult<Subscription> {
        let s = self.get()?;
        let until = Until::new(timeout);
        let sub = sliced_retry(py, until, not_there_yet, |slice| {
            s.subscribe_with_history(topic, history)
                .inspect_err(|e| poll_pause(e, slice))
        })?;
        Ok(Subscription {
            topic: sub.topic().into(),
            inner: Owned::new(sub, "Subscription"),
        })
    }

    /// The names of the region's topics.
    fn topics(&self) -> PyResult<Vec<String>> {
        Ok(self
            .get()?
            .topics()
            .py()?
            .into_iter()
            .map(|t| t.name)
            .collect())
    }

    /// Whether it is closed (or, in a fork's child, inherited: unusable here).
    #[getter]
    fn closed(&self) -> bool {
        self.inner.get("Subscriber").map_or(true, |s| {
            s.lock().unwrap_or_else(|p| p.into_inner()).is_none()
        })
    }

    /// Leaves the region (once the subscriptions made from it are closed too). In a fork's
    /// child it does nothing: the region is the parent's.
    fn close(&self, py: Python<'_>) {
        let Ok(inner) = self.inner.get("Subscriber") else {
            return;
        };
        let inner = inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Detached: the last handle out settles what the participant held, which may wait.
        py.detach(move || drop(inner));
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it, whether the block raised or not (never suppresses the exception).
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        // `*args`, as the stubs say (the Rust name is the Python name): not needed here.
        let _ = args;
        self.close(py);
        false
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Subscriber of region {:?}>", self.region)
    }
}

/// One topic's messages for one subscriber (`Subscriber.subscribe`).
#[pyclass(frozen, module = "weft")]
pub(crate) struct Subscription {
    inner: Arc<Owned<RsSubscription>>,
    topic: String,
}

#[pymethods]
impl Subscription {
    /// The topic's path.
    #[getter]
    fn topic(&self) -> &str {
        &self.topic
    }

    /// The sequence number the next sample will carry (unless it lags).
    #[getter]
    fn position(&self) -> PyResult<u64> {
        Ok(self.inner.acquire()?.get().position())
    }

    /// The next message if one is there, else raises `weft.EmptyError`.
    ///
    /// Raises `weft.LaggedError` (with `skipped`, the exact count) when messages were
    /// overwritten before this subscriber read them; the next receive goes on with the oldest
    /// one still there, or half a ring further if it was lapped again before it got through
    /// half a ring since its previous lap.
    fn try_recv(&self) -> PyResult<Sample> {
        let s = self.inner.acquire()?.get().try_recv().py()?;
        Ok(Sample::new(s))
    }

    /// The next message, waiting at most `timeout` seconds (None: as long as it takes), then
    /// raises `weft.TimeoutError`. Raises `weft.PeerDeadError` once no publisher of this
    /// topic is alive and one of them died, and everything was received (publishers of other
    /// topics do not count).
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<Timeout>) -> PyResult<Sample> {
        let until = Until::new(timeout);
        let mut access = self.inner.acquire()?;
        let sub = access.get();
        let s = sliced(py, until, |slice| sub.recv_timeout(slice))?;
        Ok(Sample::new(s))
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Ends the subscription.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        // Detached: the last subscription to an unregistered topic frees it, under the
        // region's registration lock, which it may wait for.
        let inner = &self.inner;
        py.detach(|| inner.close())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Ends the subscription. When the block raised, it raises nothing itself: if another
    /// thread is receiving, the subscription ends when that receive does.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        if crate::raising(args) {
            // Detached, as `close`.
            let inner = &self.inner;
            py.detach(|| inner.close_when_free());
        } else {
            self.close(py)?;
        }
        Ok(false)
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Subscription of {:?}>", self.topic)
    }
}

/// The names of every pub/sub region on this machine.
#[pyfunction]
pub(crate) fn regions(py: Python<'_>) -> Vec<String> {
    py.detach(weft::pubsub::regions)
}

/// Splits "market/prices/AAPL" into the region "market" and the topic "/prices/AAPL",
/// checking both names.
#[pyfunction]
pub(crate) fn split_uri(uri: &str) -> PyResult<(String, String)> {
    let (region, topic) = weft::pubsub::split_uri(uri).py()?;
    Ok((region.into(), topic.into()))
}
