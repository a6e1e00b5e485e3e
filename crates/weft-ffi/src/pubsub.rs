//! Pub/sub: `weft_publisher_*`, `weft_topic_*`, `weft_loan_*`, `weft_subscriber_*`,
//! `weft_subscription_*`, `weft_sample_*`, and the region and topic listings.
//!
//! A loan borrows its publisher (`Publisher::loan(&self) -> Loan<'_>`), and a publisher may
//! have several loans out at once. Each loan handle therefore shares ownership of its
//! publisher (an `Rc`): closing the publisher handle while loans are out leaves it alive
//! until the last loan is published or released, so no loan ever outlives what it borrows.
//!
//! A topic handle outlives the publisher it was registered through, and C may give it to any
//! publisher. weft tells a topic's publisher by the address of its mapping, which a publisher
//! made after that one was closed may reuse; so every publisher handle gets a number never
//! given again, its topics carry it, and a loan or a publish compares the two first.

use crate::error::{
    Failure, Out, Poison, Res, WeftStatus, c_bytes, c_name, free_handle, guard, guard_handles,
    handles, into_handle, millis, optional_out, options, wait_strategy,
};
use crate::lend::Lent;
use std::ffi::{CStr, CString, c_char};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use weft::pubsub::{
    Config, Loan, Publisher, Sample, SampleRef, Subscriber, Subscription, Topic, TopicMode,
    TopicSpec,
};

/// Topic mode: loaned blocks, any payload up to the block size (the default).
pub const WEFT_TOPIC_BLOCKS: i32 = 0;
/// Topic mode: the newest value only; a receive skips to the newest message.
pub const WEFT_TOPIC_LATEST: i32 = 1;
/// Topic mode: small fixed-size values (1 to 56 bytes; a latest-value one, registered with
/// `weft_publisher_register_inline_latest`, up to 16 * ring_slots - 8) copied into ring slots
/// under a seqlock. Registered with `weft_publisher_register_inline`, which takes the size.
pub const WEFT_TOPIC_INLINE: i32 = 2;

/// The shape of a region and how its handles behave. Zero in any field means the default;
/// `weft_publisher_open` and the subscriber calls use only the handle settings (wait and
/// timeouts), the region keeps its own shape.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WeftPubsubConfig {
    /// Participant rows (publishers and subscribers together), 1 to 1024 (default 32).
    pub participants: usize,
    /// Block references (samples and loans) and subscriptions one participant may hold at
    /// once, 1 to 65536 (default 256). A subscription that has received borrowed messages
    /// (`weft_subscription_try_recv_borrowed` and its forms) keeps one more entry reserved
    /// for them.
    pub max_held: usize,
    /// Topics the region can hold, 1 to 4096 (default 64).
    pub topics: usize,
    /// Descriptors per topic ring, a power of two (default 256): how far a subscriber may
    /// fall behind before it lags.
    pub ring_slots: usize,
    /// Blocks in the pool (default 1024).
    pub blocks: usize,
    /// Bytes per block, the largest payload: a multiple of 64 (default 4096).
    pub block_size: usize,
    /// How blocking receives wait: a `WEFT_WAIT_*` code.
    pub wait: i32,
    /// Liveness timeout for participants /proc cannot see, in milliseconds (default 1000).
    pub liveness_timeout_ms: u64,
    /// How long open and connect wait for a region's creator to finish (default 1000).
    pub open_timeout_ms: u64,
    /// How long a publish waits for a stalled live publisher's slot (default 1000).
    pub claim_timeout_ms: u64,
    /// Non-zero: ask for transparent huge pages.
    pub hugepages: u8,
    /// Non-zero: lock the region in memory.
    pub lock_memory: u8,
}

impl WeftPubsubConfig {
    fn apply(&self) -> Res<Config> {
        let mut c = Config::default();
        let set = |v: usize, f: fn(Config, usize) -> Config, c: Config| {
            if v != 0 { f(c, v) } else { c }
        };
        c = set(self.participants, Config::participants, c);
        c = set(self.max_held, Config::max_held, c);
        c = set(self.topics, Config::topics, c);
        c = set(self.ring_slots, Config::ring_slots, c);
        c = set(self.blocks, Config::blocks, c);
        c = set(self.block_size, Config::block_size, c);
        if let Some(w) = wait_strategy(self.wait)? {
            c = c.wait(w);
        }
        if self.liveness_timeout_ms != 0 {
            c = c.liveness_timeout(millis(self.liveness_timeout_ms));
        }
        if self.open_timeout_ms != 0 {
            c = c.open_timeout(millis(self.open_timeout_ms));
        }
        if self.claim_timeout_ms != 0 {
            c = c.claim_timeout(millis(self.claim_timeout_ms));
        }
        Ok(c.hugepages(self.hugepages != 0)
            .lock_memory(self.lock_memory != 0))
    }

    /// The configuration behind a nullable pointer.
    ///
    /// # Safety
    /// `p` is NULL or valid for reading.
    unsafe fn from_ptr(p: *const WeftPubsubConfig) -> Res<Config> {
        // SAFETY: NULL or readable (contract); only integer fields.
        unsafe { options(p, "config")? }.apply()
    }
}

/// A publisher of one region.
///
/// Thread-safety: a publisher and its loans are one unit: they may move to another thread
/// together, and are never used from two threads at once.
#[derive(Debug)]
pub struct WeftPublisher {
    publisher: Rc<Publisher>,
    /// This handle's number, from [`NEXT_PUBLISHER`]: the topics registered through it carry it.
    id: u64,
    poison: Poison,
}

/// The number of the next publisher handle; never reused in a process.
static NEXT_PUBLISHER: AtomicU64 = AtomicU64::new(1);

fn publisher_handle(p: Publisher) -> *mut WeftPublisher {
    // Relaxed: only uniqueness matters, which the read-modify-write gives by itself.
    let id = NEXT_PUBLISHER.fetch_add(1, Ordering::Relaxed);
    into_handle(WeftPublisher {
        publisher: Rc::new(p),
        id,
        poison: Poison::default(),
    })
}

/// A registered topic: pass it to `weft_publisher_loan` and `weft_publisher_publish`.
///
/// Thread-safety: immutable; may move between threads and be shared by them.
#[derive(Debug)]
pub struct WeftTopic {
    topic: Topic,
    name: CString,
    /// The number of the publisher handle it was registered through.
    publisher: u64,
    poison: Poison,
}

impl WeftTopic {
    /// Refuses a topic registered through another publisher handle than `p`.
    fn check(&self, p: &WeftPublisher) -> Res {
        if self.publisher != p.id {
            return Err(Failure::arg(format!(
                "topic '{}' was registered through another publisher handle",
                self.topic.name()
            )));
        }
        Ok(())
    }
}

/// A block loaned from the pool, written in place, then published or released.
///
/// Thread-safety: belongs to its publisher's unit (see `weft_publisher_t`).
#[derive(Debug)]
pub struct WeftLoan {
    /// Borrows the publisher inside `_publisher`. Declared first, so it drops first.
    loan: Loan<'static>,
    /// Keeps the publisher alive, at its address, as long as the loan.
    _publisher: Rc<Publisher>,
    poison: Poison,
}

/// A subscriber of one region.
///
/// Thread-safety: may move between threads and be shared by them (subscribing takes it
/// shared).
#[derive(Debug)]
pub struct WeftSubscriber {
    subscriber: Subscriber,
    poison: Poison,
}

/// One topic's messages for one subscriber, and the message it lends, if any
/// (`weft_subscription_try_recv_borrowed`).
///
/// Thread-safety: may move to another thread; never used from two threads at once.
#[derive(Debug)]
pub struct WeftSubscription {
    cell: Lent<Subscription, SampleRef<'static>>,
    poison: Poison,
}

/// A received message, borrowed in place in shared memory; holds its block until released.
///
/// Thread-safety: may move between threads and be shared for reading; released once.
#[derive(Debug)]
pub struct WeftSample {
    sample: Sample,
    poison: Poison,
}

/// A list of names (regions, topics), owned by the caller until `weft_name_list_free`.
///
/// Thread-safety: immutable; may move between threads and be shared by them.
#[derive(Debug)]
pub struct WeftNameList {
    names: Vec<CString>,
    poison: Poison,
}

handles!(
    WeftPublisher,
    WeftTopic,
    WeftLoan,
    WeftSubscriber,
    WeftSubscription,
    WeftSample,
    WeftNameList,
);

/// Creates the region `region` (with `config`, NULL for defaults) and joins it as a
/// publisher. A region of that name whose participants are all dead is replaced.
///
/// Errors: `WEFT_ERROR_INVALID_NAME`; `WEFT_ERROR_INVALID_ARGUMENT` for a configuration out
/// of range; `WEFT_ERROR_ALREADY_EXISTS` if a live region has the name; `WEFT_ERROR_IO`.
///
/// # Safety
/// `region` is a NUL-terminated string; `config` is NULL or readable; `publisher` is valid
/// for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_create(
    region: *const c_char,
    config: *const WeftPubsubConfig,
    publisher: *mut *mut WeftPublisher,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { join_as_publisher(region, config, publisher, Publisher::create) }
}

/// The body of `weft_publisher_create` and `weft_publisher_open`: `make` makes the publisher.
///
/// # Safety
/// As `weft_publisher_create`.
unsafe fn join_as_publisher(
    region: *const c_char,
    config: *const WeftPubsubConfig,
    publisher: *mut *mut WeftPublisher,
    make: fn(&str, &Config) -> weft::Result<Publisher>,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as the entry point's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (region, config, out) = unsafe {
            (
                c_name(region, "region")?,
                WeftPubsubConfig::from_ptr(config)?,
                Out::new(publisher, "publisher")?,
            )
        };
        out.set(publisher_handle(make(region, &config)?));
        Ok(())
    })
}

/// Joins the existing region `region` as another publisher (from any process), with the
/// handle settings of `config` (NULL for defaults).
///
/// Errors: `WEFT_ERROR_NOT_FOUND`; the validation errors of a bad object;
/// `WEFT_ERROR_INVALID_ARGUMENT` when every participant row is taken.
///
/// # Safety
/// As `weft_publisher_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_open(
    region: *const c_char,
    config: *const WeftPubsubConfig,
    publisher: *mut *mut WeftPublisher,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { join_as_publisher(region, config, publisher, Publisher::open_with) }
}

/// Closes the publisher handle and sets `*publisher` to NULL. Loans still out keep the
/// publisher alive until each is published or released; they stay valid.
///
/// Errors: `WEFT_ERROR_INVALID_ARGUMENT` if `publisher` is NULL; `WEFT_ERROR_STATE` if
/// `*publisher` is NULL.
///
/// # Safety
/// `publisher` is NULL or points to NULL or to a live publisher handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_close(publisher: *mut *mut WeftPublisher) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(publisher, "publisher") }
}

/// Registers `topic` (a path such as "/prices/AAPL") in blocks mode, or finds it if it is
/// registered already. On success `*out` is a new topic handle (free it with
/// `weft_topic_free`).
///
/// Errors: as `weft_publisher_register_with`.
///
/// # Safety
/// `publisher` is NULL or a live publisher handle; `topic` is a NUL-terminated string; `out`
/// is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_register(
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        register_mode(
            c"weft_publisher_register",
            publisher,
            topic,
            WEFT_TOPIC_BLOCKS,
            out,
        )
    }
}

/// Registers `topic` with `mode` (`WEFT_TOPIC_BLOCKS` or `WEFT_TOPIC_LATEST`), or finds it if
/// it is registered already with that mode.
///
/// Errors: `WEFT_ERROR_INVALID_NAME` for a bad path; `WEFT_ERROR_INVALID_ARGUMENT` for an
/// unknown mode, for `WEFT_TOPIC_INLINE` (which needs a size:
/// `weft_publisher_register_inline`), a topic registered with another mode, or a full topic
/// table; `WEFT_ERROR_TIMEOUT`; `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// As `weft_publisher_register`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_register_with(
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    mode: i32,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { register_mode(c"weft_publisher_register_with", publisher, topic, mode, out) }
}

/// The body of `weft_publisher_register` and `weft_publisher_register_with`, for `entry`.
///
/// # Safety
/// As `weft_publisher_register`.
unsafe fn register_mode(
    entry: &'static CStr,
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    mode: i32,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (p, name, out) = unsafe {
            (
                cx.handle_mut(publisher, "publisher")?,
                c_name(topic, "topic")?,
                Out::new(out, "out")?,
            )
        };
        let mode = topic_mode(mode)?;
        if mode == TopicMode::Inline {
            return Err(Failure::arg(
                "an inline topic needs its message size: weft_publisher_register_inline",
            ));
        }
        let topic = p.publisher.register_with(name, mode)?;
        out.set(topic_handle(p, topic)?);
        Ok(())
    })
}

/// Registers `topic` as an inline topic of `size`-byte messages (1 to 56), or finds it if it
/// is registered already as one of that size. Its messages are published with
/// `weft_publisher_publish` (exactly `size` bytes) and received as samples like any other.
///
/// Errors: `WEFT_ERROR_INVALID_NAME` for a bad path; `WEFT_ERROR_INVALID_ARGUMENT` for a size
/// out of range, a topic registered with another mode or size, or when every inline area of
/// the region is taken; `WEFT_ERROR_TIMEOUT`; `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// As `weft_publisher_register`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_register_inline(
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    size: usize,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    // SAFETY: this function's `# Safety` is `register_spec`'s.
    unsafe {
        register_spec(
            c"weft_publisher_register_inline",
            publisher,
            topic,
            Ok(TopicSpec::inline(size)),
            out,
        )
    }
}

/// Registers `topic` as `spec` says and hands out its handle (`spec` an error: reported after
/// the pointers are checked).
///
/// # Safety
/// As `weft_publisher_register`.
unsafe fn register_spec(
    entry: &'static CStr,
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    spec: Res<TopicSpec>,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (p, name, out) = unsafe {
            (
                cx.handle_mut(publisher, "publisher")?,
                c_name(topic, "topic")?,
                Out::new(out, "out")?,
            )
        };
        let topic = p.publisher.register_spec(name, &spec?)?;
        out.set(topic_handle(p, topic)?);
        Ok(())
    })
}

/// Registers `topic` as a latest-value inline topic of `size`-byte messages (1 to 56, or up to
/// 16 * ring_slots - 8: a latest-value ring takes fewer, larger slots), or finds it if it is
/// registered already as one of that size. Published like any inline topic;
/// every receive gets the newest message (never an older one than the subscription received
/// before, never `WEFT_ERROR_LAGGED`), a whole copy with no block behind it.
///
/// Errors: as `weft_publisher_register_inline`; `WEFT_ERROR_INVALID_ARGUMENT` also for a topic
/// registered as an inline topic that is not latest-value.
///
/// # Safety
/// As `weft_publisher_register`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_register_inline_latest(
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    size: usize,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    // SAFETY: this function's `# Safety` is `register_spec`'s.
    unsafe {
        register_spec(
            c"weft_publisher_register_inline_latest",
            publisher,
            topic,
            Ok(TopicSpec::inline(size).latest()),
            out,
        )
    }
}

/// Registers `topic` as a single-publisher topic of `mode` (`size`: an inline topic's message
/// size, 1 to 56; 0 for the other modes), or finds it if this publisher holds it already. A
/// single-publisher topic has one publisher at a time, which publishes without the shared
/// claim's atomic read-modify-writes; the next registrant takes it over once the holder has
/// closed its publisher or died.
///
/// Errors: `WEFT_ERROR_IN_USE` while another live publisher holds the topic;
/// `WEFT_ERROR_INVALID_ARGUMENT` for an unknown mode, a size that does not fit the mode, or a
/// topic registered with another mode, size or without the setting; as
/// `weft_publisher_register`.
///
/// # Safety
/// As `weft_publisher_register`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_register_single(
    publisher: *mut WeftPublisher,
    topic: *const c_char,
    mode: i32,
    size: usize,
    out: *mut *mut WeftTopic,
) -> WeftStatus {
    let spec = topic_mode(mode).and_then(|mode| match (mode, size) {
        (TopicMode::Inline, n) => Ok(TopicSpec::inline(n)),
        (mode, 0) => Ok(TopicSpec::new(mode)),
        (_, n) => Err(Failure::arg(format!(
            "size {n} for a blocks or latest topic: only inline topics have a fixed message \
             size (pass 0)"
        ))),
    });
    // SAFETY: this function's `# Safety` is `register_spec`'s.
    unsafe {
        register_spec(
            c"weft_publisher_register_single",
            publisher,
            topic,
            spec.map(TopicSpec::single_publisher),
            out,
        )
    }
}

/// The mode a `WEFT_TOPIC_*` code names.
fn topic_mode(code: i32) -> Res<TopicMode> {
    match code {
        WEFT_TOPIC_BLOCKS => Ok(TopicMode::Blocks),
        WEFT_TOPIC_LATEST => Ok(TopicMode::Latest),
        WEFT_TOPIC_INLINE => Ok(TopicMode::Inline),
        other => Err(Failure::arg(format!(
            "topic mode {other} is not one of the WEFT_TOPIC_* codes (0 to 2)"
        ))),
    }
}

/// A topic handle for `topic`, registered through `p`.
fn topic_handle(p: &WeftPublisher, topic: Topic) -> Res<*mut WeftTopic> {
    let name = CString::new(topic.name()).map_err(|_| Failure::name("topic holds NUL"))?;
    Ok(into_handle(WeftTopic {
        topic,
        name,
        publisher: p.id,
        poison: Poison::default(),
    }))
}

/// Frees a topic handle and sets `*topic` to NULL (the topic stays registered).
///
/// # Safety
/// `topic` is NULL or points to NULL or to a live topic handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_topic_free(topic: *mut *mut WeftTopic) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(topic, "topic") }
}

/// The topic's path ("/prices/AAPL"), valid as long as the topic handle.
///
/// # Safety
/// `topic` is NULL or a live topic handle; `name` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_topic_name(
    topic: *const WeftTopic,
    name: *mut *const c_char,
) -> WeftStatus {
    guard_handles(c"weft_topic_name", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (t, out) = unsafe { (cx.handle_ref(topic, "topic")?, Out::new(name, "name")?) };
        out.set(t.name.as_ptr());
        Ok(())
    })
}

/// The largest payload a loan holds (the region's block size).
///
/// # Safety
/// `publisher` is NULL or a live publisher handle; `len` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_max_len(
    publisher: *mut WeftPublisher,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_publisher_max_len", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (p, out) = unsafe {
            (
                cx.handle_mut(publisher, "publisher")?,
                Out::new(len, "len")?,
            )
        };
        out.set(p.publisher.max_len());
        Ok(())
    })
}

/// Loans a block for `topic`: `*data` is `*capacity` writable bytes in shared memory. Write
/// the payload, `weft_loan_set_len` (the length starts at the whole block; on a typed topic
/// at its type's size, the only length it takes), then
/// `weft_loan_publish`; or `weft_loan_release` to give the block back unpublished. `*data`
/// is valid until then.
///
/// Errors: `WEFT_ERROR_FULL` when the pool has no free block; `WEFT_ERROR_INVALID_ARGUMENT`
/// for a topic registered through another publisher handle (of this region or another, open
/// or closed) or when this publisher holds `max_held` loans; `WEFT_ERROR_CLOSED` once the
/// topic was unregistered (a peer using the Rust API may unregister it); `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// `publisher` and `topic` are NULL or live handles; `loan`, `data` and `capacity` are valid
/// for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_loan(
    publisher: *mut WeftPublisher,
    topic: *const WeftTopic,
    loan: *mut *mut WeftLoan,
    data: *mut *mut u8,
    capacity: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_publisher_loan", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (p, t, out, data, capacity) = unsafe {
            (
                cx.handle_mut(publisher, "publisher")?,
                cx.handle_ref(topic, "topic")?,
                Out::new(loan, "loan")?,
                Out::new(data, "data")?,
                Out::new(capacity, "capacity")?,
            )
        };
        t.check(p)?;
        let owner = p.publisher.clone();
        // SAFETY: `owner` keeps the publisher alive at this address (an Rc allocation never
        // moves) for as long as the loan handle, which holds both and drops the loan first
        // (field order); the Rc hands out only shared references (no get_mut anywhere), and
        // a loan needs only `&Publisher`, so the erased lifetime is never outlived.
        let publisher: &'static Publisher = unsafe { &*Rc::as_ptr(&owner) };
        let mut l = publisher.loan(&t.topic)?;
        data.set(l.as_mut_ptr());
        capacity.set(l.len());
        out.set(into_handle(WeftLoan {
            loan: l,
            _publisher: owner,
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// Sets the payload length of the loan (at most its capacity; on a typed topic, its type's
/// size only).
///
/// Errors: `WEFT_ERROR_TOO_LARGE` beyond the capacity; `WEFT_ERROR_TYPE_MISMATCH` on a typed
/// topic for any other length than its type's size (the loan keeps its length).
///
/// # Safety
/// `loan` is NULL or a live loan handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_loan_set_len(loan: *mut WeftLoan, len: usize) -> WeftStatus {
    guard_handles(c"weft_loan_set_len", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let l = unsafe { cx.handle_mut(loan, "loan")? };
        l.loan.set_len(len)?;
        Ok(())
    })
}

/// Publishes the loan (an 8-byte descriptor goes into the topic's ring) and sets `*loan` to
/// NULL: the loan is consumed whether or not the publish succeeds (on an error its block
/// returns to the pool). `seq` may be NULL; otherwise it receives the message's sequence.
///
/// Errors: `WEFT_ERROR_STATE` if `*loan` is NULL (published or released already);
/// `WEFT_ERROR_TIMEOUT` when a stalled live publisher holds the slot; `WEFT_ERROR_CLOSED`
/// once the topic was unregistered (the block returns to the pool); `WEFT_ERROR_CORRUPT`;
/// `WEFT_ERROR_POISONED` if an earlier call on the loan panicked: it is released unpublished.
///
/// # Safety
/// `loan` is NULL or points to NULL or to a live loan handle; `seq` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_loan_publish(loan: *mut *mut WeftLoan, seq: *mut u64) -> WeftStatus {
    guard_handles(c"weft_loan_publish", |cx| {
        // SAFETY: `seq` is NULL or writable (this function's `# Safety`). It is checked
        // first: a bad out-pointer must not consume the loan.
        let seq = unsafe { optional_out(seq, "seq")? };
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let l = unsafe { cx.take_handle(loan, "loan")? };
        let WeftLoan {
            loan, _publisher, ..
        } = *l;
        let s = loan.publish()?;
        if let Some(out) = seq {
            out.set(s);
        }
        Ok(())
    })
}

/// Gives the loan's block back unpublished and sets `*loan` to NULL.
///
/// Errors: `WEFT_ERROR_STATE` if `*loan` is NULL (published or released already).
///
/// # Safety
/// `loan` is NULL or points to NULL or to a live loan handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_loan_release(loan: *mut *mut WeftLoan) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(loan, "loan") }
}

/// Copies `len` bytes at `data` into a loaned block and publishes it. `seq` may be NULL.
///
/// Errors: `WEFT_ERROR_TOO_LARGE` beyond the block size; as `weft_publisher_loan` and
/// `weft_loan_publish`.
///
/// # Safety
/// `publisher` and `topic` are NULL or live handles; `data` is NULL or readable for `len`
/// bytes; `seq` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_publisher_publish(
    publisher: *mut WeftPublisher,
    topic: *const WeftTopic,
    data: *const u8,
    len: usize,
    seq: *mut u64,
) -> WeftStatus {
    guard_handles(c"weft_publisher_publish", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (p, t, data, seq) = unsafe {
            (
                cx.handle_mut(publisher, "publisher")?,
                cx.handle_ref(topic, "topic")?,
                c_bytes(data, len, "data")?,
                optional_out(seq, "seq")?,
            )
        };
        t.check(p)?;
        let s = p.publisher.publish(&t.topic, data)?;
        if let Some(out) = seq {
            out.set(s);
        }
        Ok(())
    })
}

/// Connects to the existing region `region` as a subscriber, with the handle settings of
/// `config` (NULL for defaults).
///
/// Errors: as `weft_publisher_open`.
///
/// # Safety
/// `region` is a NUL-terminated string; `config` is NULL or readable; `subscriber` is valid
/// for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_connect(
    region: *const c_char,
    config: *const WeftPubsubConfig,
    subscriber: *mut *mut WeftSubscriber,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (region, config, out) = unsafe {
            (
                c_name(region, "region")?,
                WeftPubsubConfig::from_ptr(config)?,
                Out::new(subscriber, "subscriber")?,
            )
        };
        let s = Subscriber::connect_with(region, &config)?;
        out.set(into_handle(WeftSubscriber {
            subscriber: s,
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// As `weft_subscriber_connect` with default settings, waiting up to `timeout_ms` for the
/// region to appear (`WEFT_ERROR_NOT_FOUND` if it does not, `WEFT_ERROR_NOT_READY` if its
/// creator did not finish it in time).
///
/// # Safety
/// `region` is a NUL-terminated string; `subscriber` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_connect_timeout(
    region: *const c_char,
    timeout_ms: u64,
    subscriber: *mut *mut WeftSubscriber,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (region, out) = unsafe {
            (
                c_name(region, "region")?,
                Out::new(subscriber, "subscriber")?,
            )
        };
        let s = Subscriber::connect_timeout(region, millis(timeout_ms))?;
        out.set(into_handle(WeftSubscriber {
            subscriber: s,
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// Closes the subscriber handle and sets `*subscriber` to NULL. Its subscriptions and
/// samples stay valid (each keeps the region mapped).
///
/// # Safety
/// `subscriber` is NULL or points to NULL or to a live subscriber handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_close(subscriber: *mut *mut WeftSubscriber) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(subscriber, "subscriber") }
}

/// How a subscription starts.
enum Start {
    Now,
    History(usize),
    Wait(u64),
}

/// # Safety
/// `subscriber` is NULL or a live subscriber handle; `topic` is a NUL-terminated string;
/// `out` is valid for writing a pointer.
unsafe fn subscribe(
    entry: &'static CStr,
    subscriber: *const WeftSubscriber,
    topic: *const c_char,
    start: Start,
    out: *mut *mut WeftSubscription,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (s, topic, out) = unsafe {
            (
                cx.handle_ref(subscriber, "subscriber")?,
                c_name(topic, "topic")?,
                Out::new(out, "subscription")?,
            )
        };
        let s = &s.subscriber;
        let subscription = match start {
            Start::Now => s.subscribe(topic)?,
            Start::History(n) => s.subscribe_with_history(topic, n)?,
            Start::Wait(ms) => s.subscribe_timeout(topic, millis(ms))?,
        };
        out.set(into_handle(WeftSubscription {
            cell: Lent::new(subscription),
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// Subscribes to `topic`, which must be registered: messages published from now on.
///
/// Errors: `WEFT_ERROR_NOT_FOUND` if no publisher registered it; `WEFT_ERROR_INVALID_NAME`;
/// `WEFT_ERROR_INVALID_ARGUMENT` when this subscriber's samples, subscriptions and reserved
/// entries already reach `max_held` (see `weft_pubsub_config`); `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// `subscriber` is NULL or a live subscriber handle; `topic` is a NUL-terminated string;
/// `subscription` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_subscribe(
    subscriber: *const WeftSubscriber,
    topic: *const c_char,
    subscription: *mut *mut WeftSubscription,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        subscribe(
            c"weft_subscriber_subscribe",
            subscriber,
            topic,
            Start::Now,
            subscription,
        )
    }
}

/// As `weft_subscriber_subscribe`, starting with up to the last `history` messages still in
/// the topic's ring (a late joiner catches up).
///
/// # Safety
/// As `weft_subscriber_subscribe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_subscribe_with_history(
    subscriber: *const WeftSubscriber,
    topic: *const c_char,
    history: usize,
    subscription: *mut *mut WeftSubscription,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        subscribe(
            c"weft_subscriber_subscribe_with_history",
            subscriber,
            topic,
            Start::History(history),
            subscription,
        )
    }
}

/// As `weft_subscriber_subscribe`, waiting up to `timeout_ms` for a publisher to register
/// the topic (`WEFT_ERROR_NOT_FOUND` if none does).
///
/// # Safety
/// As `weft_subscriber_subscribe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscriber_subscribe_timeout(
    subscriber: *const WeftSubscriber,
    topic: *const c_char,
    timeout_ms: u64,
    subscription: *mut *mut WeftSubscription,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        subscribe(
            c"weft_subscriber_subscribe_timeout",
            subscriber,
            topic,
            Start::Wait(timeout_ms),
            subscription,
        )
    }
}

/// Closes the subscription and sets `*subscription` to NULL. Samples received from it stay
/// valid.
///
/// # Safety
/// `subscription` is NULL or points to NULL or to a live subscription handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_close(
    subscription: *mut *mut WeftSubscription,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(subscription, "subscription") }
}

/// How a receive waits.
enum Recv {
    Try,
    Forever,
    Ms(u64),
}

/// # Safety
/// `subscription` is NULL or a live subscription handle; `sample` is valid for writing.
unsafe fn recv(
    entry: &'static CStr,
    subscription: *mut WeftSubscription,
    sample: *mut *mut WeftSample,
    how: Recv,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (s, out) = unsafe {
            (
                cx.handle_mut(subscription, "subscription")?,
                Out::new(sample, "sample")?,
            )
        };
        let sub = s.cell.owner("receive")?;
        let got = match how {
            Recv::Try => sub.try_recv()?,
            Recv::Forever => sub.recv()?,
            Recv::Ms(ms) => sub.recv_timeout(millis(ms))?,
        };
        out.set(into_handle(WeftSample {
            sample: got,
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// # Safety
/// `subscription` is NULL or a live subscription handle; `data`, `len` and `seq` are valid
/// for writing (`seq` may be NULL).
unsafe fn recv_borrowed(
    entry: &'static CStr,
    subscription: *mut WeftSubscription,
    data: *mut *const u8,
    len: *mut usize,
    seq: *mut u64,
    how: Recv,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (s, data, len, seq) = unsafe {
            (
                cx.handle_mut(subscription, "subscription")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
                optional_out(seq, "seq")?,
            )
        };
        // SAFETY: the closure only builds the sample from the subscription.
        let got = unsafe {
            s.cell.lend("receive", |sub| {
                Ok(match how {
                    Recv::Try => sub.try_recv_ref()?,
                    Recv::Forever => sub.recv_ref()?,
                    Recv::Ms(ms) => sub.recv_ref_timeout(millis(ms))?,
                })
            })?
        };
        data.set(got.as_ptr());
        len.set(got.len());
        if let Some(seq) = seq {
            seq.set(got.seq());
        }
        Ok(())
    })
}

/// The next message, if one is there, lent by the subscription instead of handed out as a
/// sample handle: `*data` and `*len` (and `*seq` unless `seq` is NULL) describe its payload in
/// place, valid until `weft_subscription_release`. Nothing is allocated, and the subscription
/// keeps its record of the message's block from one message to the next: the cheapest
/// receive. One message is lent at a time: release it before the next receive of either
/// kind (`WEFT_ERROR_STATE` otherwise); closing the subscription releases it too.
///
/// Errors: as `weft_subscription_try_recv`; `WEFT_ERROR_STATE` while a message is lent.
///
/// # Safety
/// `subscription` is NULL or a live subscription handle; `data` and `len` are valid for
/// writing; `seq` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_try_recv_borrowed(
    subscription: *mut WeftSubscription,
    data: *mut *const u8,
    len: *mut usize,
    seq: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_borrowed(
            c"weft_subscription_try_recv_borrowed",
            subscription,
            data,
            len,
            seq,
            Recv::Try,
        )
    }
}

/// As `weft_subscription_try_recv_borrowed`, waiting at most `timeout_ms`
/// (`WEFT_ERROR_TIMEOUT`; `WEFT_ERROR_PEER_DEAD` as for `weft_subscription_recv_timeout`).
///
/// # Safety
/// As `weft_subscription_try_recv_borrowed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_recv_borrowed_timeout(
    subscription: *mut WeftSubscription,
    timeout_ms: u64,
    data: *mut *const u8,
    len: *mut usize,
    seq: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_borrowed(
            c"weft_subscription_recv_borrowed_timeout",
            subscription,
            data,
            len,
            seq,
            Recv::Ms(timeout_ms),
        )
    }
}

/// As `weft_subscription_recv_borrowed_timeout` without a time limit.
///
/// # Safety
/// As `weft_subscription_try_recv_borrowed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_recv_borrowed(
    subscription: *mut WeftSubscription,
    data: *mut *const u8,
    len: *mut usize,
    seq: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_borrowed(
            c"weft_subscription_recv_borrowed",
            subscription,
            data,
            len,
            seq,
            Recv::Forever,
        )
    }
}

/// Releases the message the subscription lends (its block goes back to the pool once no one
/// else holds it); its `data` pointer is invalid from here on.
///
/// Errors: `WEFT_ERROR_STATE` if no message is lent (never received, or released already).
///
/// # Safety
/// `subscription` is NULL or a live subscription handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_release(
    subscription: *mut WeftSubscription,
) -> WeftStatus {
    guard_handles(c"weft_subscription_release", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let s = unsafe { cx.handle_mut(subscription, "subscription")? };
        if s.cell.release() {
            Ok(())
        } else {
            Err(Failure::state("release: no message is lent"))
        }
    })
}

/// The next message, if one is there: `*sample` is a new sample handle (release it with
/// `weft_sample_release`).
///
/// Errors: `WEFT_ERROR_EMPTY` when nothing new is published; `WEFT_ERROR_LAGGED` when
/// messages were overwritten before they were read (`weft_last_error_skipped()` gives the
/// exact count; the next call returns the oldest message still there, or one half a ring
/// further if this subscriber was lapped again before it got through half a ring);
/// `WEFT_ERROR_INVALID_ARGUMENT` when this subscriber has no entry left for the sample under
/// `max_held` (its samples, subscriptions and reserved entries count; see
/// `weft_pubsub_config`); `WEFT_ERROR_STATE` while the subscription lends a message
/// (`weft_subscription_try_recv_borrowed`); `WEFT_ERROR_CLOSED` once the topic was
/// unregistered (a peer using the Rust API may unregister it) and everything published
/// before was received; `WEFT_ERROR_TIMEOUT` when the next block stays marked by another
/// participant's take or drop (a few instructions, unless its process stopped in them) for
/// the liveness timeout, the one wait this call makes; `WEFT_ERROR_CORRUPT`.
///
/// # Safety
/// `subscription` is NULL or a live subscription handle; `sample` is valid for writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_try_recv(
    subscription: *mut WeftSubscription,
    sample: *mut *mut WeftSample,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv(
            c"weft_subscription_try_recv",
            subscription,
            sample,
            Recv::Try,
        )
    }
}

/// As `weft_subscription_try_recv`, waiting at most `timeout_ms` (`WEFT_ERROR_TIMEOUT`).
/// Also `WEFT_ERROR_PEER_DEAD` once everything was received, no publisher of this topic is
/// alive and one of them died (publishers of other topics do not count; a publisher that
/// registers the topic afterwards takes it over, and the death is forgotten).
///
/// # Safety
/// As `weft_subscription_try_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_recv_timeout(
    subscription: *mut WeftSubscription,
    timeout_ms: u64,
    sample: *mut *mut WeftSample,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv(
            c"weft_subscription_recv_timeout",
            subscription,
            sample,
            Recv::Ms(timeout_ms),
        )
    }
}

/// As `weft_subscription_recv_timeout` without a time limit (a dead publisher still ends
/// the wait with `WEFT_ERROR_PEER_DEAD`).
///
/// # Safety
/// As `weft_subscription_try_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_subscription_recv(
    subscription: *mut WeftSubscription,
    sample: *mut *mut WeftSample,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv(
            c"weft_subscription_recv",
            subscription,
            sample,
            Recv::Forever,
        )
    }
}

/// The sample's payload in shared memory: `*data` and `*len`, valid until the sample is
/// released.
///
/// # Safety
/// `sample` is NULL or a live sample handle; `data` and `len` are valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_sample_data(
    sample: *const WeftSample,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_sample_data", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (s, data, len) = unsafe {
            (
                cx.handle_ref(sample, "sample")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
            )
        };
        data.set(s.sample.as_ptr());
        len.set(s.sample.len());
        Ok(())
    })
}

/// The sample's sequence number in its topic.
///
/// # Safety
/// `sample` is NULL or a live sample handle; `seq` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_sample_seq(sample: *const WeftSample, seq: *mut u64) -> WeftStatus {
    guard_handles(c"weft_sample_seq", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (s, out) = unsafe { (cx.handle_ref(sample, "sample")?, Out::new(seq, "seq")?) };
        out.set(s.sample.seq());
        Ok(())
    })
}

/// Releases the sample's block and sets `*sample` to NULL.
///
/// Errors: `WEFT_ERROR_STATE` if `*sample` is NULL (released already).
///
/// # Safety
/// `sample` is NULL or points to NULL or to a live sample handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_sample_release(sample: *mut *mut WeftSample) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(sample, "sample") }
}

/// A list handle holding `names`.
pub(crate) fn name_list(names: impl IntoIterator<Item = String>) -> Res<*mut WeftNameList> {
    let names = names
        .into_iter()
        .map(|n| CString::new(n).map_err(|_| Failure::name("a listed name holds NUL")))
        .collect::<Res<Vec<_>>>()?;
    Ok(into_handle(WeftNameList {
        names,
        poison: Poison::default(),
    }))
}

/// The names of every pub/sub region on this machine (a region created or removed at the
/// same moment may be missed). Free the list with `weft_name_list_free`.
///
/// # Safety
/// `list` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_pubsub_regions(list: *mut *mut WeftNameList) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let out = unsafe { Out::new(list, "list")? };
        out.set(name_list(weft::pubsub::regions())?);
        Ok(())
    })
}

/// The registered topics of the region `region`, read without joining it.
///
/// Errors: as `weft_subscriber_connect`.
///
/// # Safety
/// `region` is a NUL-terminated string; `list` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_pubsub_topics(
    region: *const c_char,
    list: *mut *mut WeftNameList,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (region, out) = unsafe { (c_name(region, "region")?, Out::new(list, "list")?) };
        let report = weft::pubsub::inspect(region)?;
        out.set(name_list(report.topics.into_iter().map(|t| t.name))?);
        Ok(())
    })
}

/// The number of names in the list.
///
/// # Safety
/// `list` is NULL or a live list handle; `len` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_name_list_len(
    list: *const WeftNameList,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_name_list_len", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (l, out) = unsafe { (cx.handle_ref(list, "list")?, Out::new(len, "len")?) };
        out.set(l.names.len());
        Ok(())
    })
}

/// Name `index` of the list, valid as long as the list.
///
/// Errors: `WEFT_ERROR_INVALID_ARGUMENT` for an index past the end.
///
/// # Safety
/// `list` is NULL or a live list handle; `name` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_name_list_get(
    list: *const WeftNameList,
    index: usize,
    name: *mut *const c_char,
) -> WeftStatus {
    guard_handles(c"weft_name_list_get", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (l, out) = unsafe { (cx.handle_ref(list, "list")?, Out::new(name, "name")?) };
        let Some(n) = l.names.get(index) else {
            return Err(Failure::arg(format!(
                "index {index} is past the end of a list of {}",
                l.names.len()
            )));
        };
        out.set(n.as_ptr());
        Ok(())
    })
}

/// Frees the list and sets `*list` to NULL.
///
/// # Safety
/// `list` is NULL or points to NULL or to a live list handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_name_list_free(list: *mut *mut WeftNameList) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(list, "list") }
}
