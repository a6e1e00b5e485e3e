//! The C ABI (crates/weft-ffi) called as a C program may call it: a sequence of operations
//! over a small table of handles of every kind, with arbitrary arguments that stay inside the
//! contract of weft.h. A pointer argument is NULL (chosen by a flag, for every pointer:
//! out-pointers and the address of a handle in a release too) or valid; a name is arbitrary
//! bytes with a NUL put after them; a data length never exceeds the buffer passed (which may
//! be a grant, loan or sample that is out), while sizes (reservations, lengths, capacities,
//! configuration fields, history) are arbitrary 64-bit values; handles are used in any order
//! (while lending a grant, after a release through the cleared variable, owners closed with
//! grants and loans out). Both ends of a channel, a server's client, and a served call run
//! the other side on a second thread.
//!
//! Every call must return a documented status, never panic (a caught panic is a failure too),
//! and leave the thread's last error consistent: its code is the last failure's, its message
//! a valid C string, `weft_last_error_skipped` non-zero exactly after a lag. A successful call
//! gives non-NULL handles and pointers (and writes no out-pointer when it fails), and every
//! byte a grant, loan or sample hands out is touched (AddressSanitizer and the mapping's
//! bounds catch a pointer that is not what it claims). What the fuzzer knows is checked too:
//! `WEFT_ERROR_STATE` exactly when a handle lends a grant or was released; a message longer
//! than the handle's maximum refused at once, one that fits never called too large; a
//! subscription's sequences increasing; a topic accepted only by the publisher it was
//! registered through; an accepted name valid by weft.h's rules; no `WEFT_ERROR_CORRUPT`
//! outside a channel's framing (nothing here writes shared memory behind weft's back).
//!
//! A call that could block without a time limit is made only when it is sure to return at
//! once (a NULL argument, or a handle that lends a grant); otherwise the `try_` form is used.
//! Timeouts are 0 to 2 ms, up to 10 ms where a second thread has to meet this one.
//!
//! Every handle is released at the end of each execution, and the objects this process made
//! are removed: leaks are left to the release calls (LeakSanitizer after each run is too slow),
//! use after free to AddressSanitizer. Files are capped at 32 MiB by RLIMIT_FSIZE so that an
//! arbitrary size cannot fill the machine's memory: beyond it the OS refuses and weft reports
//! `WEFT_ERROR_IO` (the cap applies to the process's own log files too).
//!
//! `CABI_TRACE=1` prints every call and its status, to see what a corpus reaches.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::ffi::{CStr, c_char};
use std::hint::black_box;
use std::ptr::{null, null_mut};
use weft_ffi::*;

/// Slots per kind of handle.
const N: usize = 3;
/// The largest shared-memory object this process may make (RLIMIT_FSIZE).
const OBJECT_LIMIT: u64 = 32 << 20;
/// Operations per execution.
const MAX_OPS: usize = 64;

// ---------------------------------------------------------------------------------------
// The input.

/// Which pointer arguments of a call are NULL: none unless the top bit is set, then bit `i`
/// for argument `i` (so that half of the calls get every pointer valid).
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Nulls(u8);

impl Nulls {
    fn null(self, i: u32) -> bool {
        self.0 & 0x80 != 0 && self.0 & (1 << i) != 0
    }
}

/// A size, biased towards the values that mean something (small, powers of two and their
/// neighbours) but able to be anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Size {
    Small(u16),
    Pow2 { shift: u8, delta: i8 },
    Any(u64),
}

impl Size {
    fn get(self) -> u64 {
        match self {
            Size::Small(v) => v as u64,
            Size::Pow2 { shift, delta } => (1u64 << (shift % 64)).wrapping_add(delta as i64 as u64),
            Size::Any(v) => v,
        }
    }

    fn usize(self) -> usize {
        self.get() as usize
    }
}

/// A wait strategy code: one of the six, or any i32.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Wait {
    Code(u8),
    Any(i32),
}

impl Wait {
    fn get(self) -> i32 {
        match self {
            Wait::Code(c) => (c % 6) as i32,
            Wait::Any(v) => v,
        }
    }
}

/// A timeout passed to a call: 0 to 2 ms.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Ms(u8);

impl Ms {
    fn get(self) -> u64 {
        (self.0 % 3) as u64
    }
}

/// How a call that may wait is made.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum How {
    Try,
    Timeout(Ms),
    /// The form without a time limit: made only when it is sure to return at once, else the
    /// `try_` form is made instead.
    Block,
}

/// An object name (stream, region, channel, server).
#[derive(Arbitrary, Debug)]
enum Name {
    /// One of two names of this process, so that calls of every kind meet the same objects.
    Pool(bool),
    /// One of them with a suffix the channels use for their streams.
    Suffixed { k: bool, suffix: bool },
    /// Arbitrary bytes; a valid name gets this process's prefix (see [`Name::bytes`]).
    Raw(Vec<u8>),
    /// A run of one byte (names longer than any limit, up to past the 4096-byte scan).
    Long { byte: u8, len: u16 },
}

/// A topic path.
#[derive(Arbitrary, Debug)]
enum TopicName {
    Pool(bool),
    Raw(Vec<u8>),
    Long { byte: u8, len: u16 },
}

/// The bytes given as a message, a record or a request. The length passed never exceeds the
/// buffer passed.
#[derive(Arbitrary, Debug)]
enum Data {
    Bytes(Vec<u8>),
    /// NULL with an arbitrary length (refused unless the length is 0).
    Null(u64),
    /// `n % 1 MiB` bytes of one value.
    Fill {
        n: u32,
        byte: u8,
    },
    /// A part of a grant, loan or sample that is out now (replying with the request's own
    /// bytes, publishing what was received, ...); empty if there is none.
    Lent {
        kind: u8,
        slot: u8,
        off: u32,
        len: u32,
    },
}

#[derive(Arbitrary, Debug)]
struct StreamOpts {
    align: Size,
    wait: Wait,
    liveness_timeout_ms: Size,
    hugepages: u8,
    lock_memory: u8,
    hot_window: Size,
}

#[derive(Arbitrary, Debug)]
struct PubsubConfig {
    participants: Size,
    max_held: Size,
    topics: Size,
    ring_slots: Size,
    blocks: Size,
    block_size: Size,
    wait: Wait,
    liveness_timeout_ms: Size,
    open_timeout_ms: Size,
    claim_timeout_ms: Size,
    hugepages: u8,
    lock_memory: u8,
}

#[derive(Arbitrary, Debug)]
struct ChannelOpts {
    capacity: Size,
    wait: Wait,
    liveness_timeout_ms: Size,
    slots: Size,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    Writer,
    Reader,
    Publisher,
    Topic,
    Loan,
    Subscriber,
    Subscription,
    Sample,
    Channel,
    Server,
    List,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Start {
    Now,
    History(Size),
    Timeout(Ms),
}

#[derive(Arbitrary, Debug)]
enum Op {
    ErrorString(i32),
    Release {
        kind: Kind,
        slot: u8,
        null: bool,
    },

    WriterCreate {
        slot: u8,
        name: Name,
        capacity: Size,
        opts: Option<StreamOpts>,
        nulls: Nulls,
    },
    WriterMaxRecordLen {
        slot: u8,
        nulls: Nulls,
    },
    WriterSetWait {
        slot: u8,
        wait: Wait,
        nulls: Nulls,
    },
    WriterFlush {
        slot: u8,
        nulls: Nulls,
    },
    WriterWrite {
        slot: u8,
        data: Data,
        how: How,
        /// The `write_deferred` forms (published by a later flush, write, close or wait).
        deferred: bool,
        nulls: Nulls,
    },
    WriterReserve {
        slot: u8,
        len: Size,
        how: How,
        fill: u8,
        nulls: Nulls,
    },
    WriterCommit {
        slot: u8,
        len: Size,
        nulls: Nulls,
    },
    WriterAbandon {
        slot: u8,
        nulls: Nulls,
    },
    ReaderOpen {
        slot: u8,
        name: Name,
        timeout: Option<Ms>,
        nulls: Nulls,
    },
    ReaderSetWait {
        slot: u8,
        wait: Wait,
        nulls: Nulls,
    },
    ReaderRead {
        slot: u8,
        how: How,
        nulls: Nulls,
    },
    ReaderRelease {
        slot: u8,
        nulls: Nulls,
    },

    PublisherCreate {
        slot: u8,
        name: Name,
        config: Option<PubsubConfig>,
        nulls: Nulls,
    },
    PublisherOpen {
        slot: u8,
        name: Name,
        config: Option<PubsubConfig>,
        nulls: Nulls,
    },
    Register {
        publisher: u8,
        topic: TopicName,
        mode: Option<Wait>,
        out: u8,
        nulls: Nulls,
    },
    TopicName {
        slot: u8,
        nulls: Nulls,
    },
    PublisherMaxLen {
        slot: u8,
        nulls: Nulls,
    },
    Loan {
        publisher: u8,
        topic: u8,
        out: u8,
        fill: u8,
        nulls: Nulls,
    },
    LoanSetLen {
        slot: u8,
        len: Size,
        nulls: Nulls,
    },
    LoanPublish {
        slot: u8,
        nulls: Nulls,
    },
    Publish {
        publisher: u8,
        topic: u8,
        data: Data,
        nulls: Nulls,
    },
    SubscriberConnect {
        slot: u8,
        name: Name,
        config: Option<PubsubConfig>,
        nulls: Nulls,
    },
    SubscriberConnectTimeout {
        slot: u8,
        name: Name,
        timeout: Ms,
        nulls: Nulls,
    },
    Subscribe {
        subscriber: u8,
        topic: TopicName,
        start: Start,
        out: u8,
        nulls: Nulls,
    },
    Recv {
        subscription: u8,
        how: How,
        out: u8,
        nulls: Nulls,
    },
    RecvBorrowed {
        subscription: u8,
        how: How,
        nulls: Nulls,
    },
    SubscriptionRelease {
        subscription: u8,
        nulls: Nulls,
    },
    SampleData {
        slot: u8,
        nulls: Nulls,
    },
    SampleSeq {
        slot: u8,
        nulls: Nulls,
    },
    Regions {
        out: u8,
        nulls: Nulls,
    },
    Topics {
        name: Name,
        out: u8,
        nulls: Nulls,
    },
    ListLen {
        slot: u8,
        nulls: Nulls,
    },
    ListGet {
        slot: u8,
        index: Size,
        nulls: Nulls,
    },

    /// A listen or a connect alone (nobody on the other side: it waits its timeout).
    ChannelOpen {
        connect: bool,
        slot: u8,
        name: Name,
        timeout: Ms,
        opts: Option<ChannelOpts>,
        nulls: Nulls,
    },
    /// Both ends at once, the connecting one on a second thread; each end lands in a slot.
    ChannelPair {
        listener: u8,
        connector: u8,
        name: Name,
        listen_timeout: u8,
        connect_timeout: u8,
        listen_opts: Option<ChannelOpts>,
        connect_opts: Option<ChannelOpts>,
        nulls: Nulls,
    },
    ServerBind {
        slot: u8,
        name: Name,
        opts: Option<ChannelOpts>,
        nulls: Nulls,
    },
    /// A client alone (nobody accepts: it waits its timeout).
    ServerConnect {
        slot: u8,
        name: Name,
        timeout: Ms,
        opts: Option<ChannelOpts>,
        nulls: Nulls,
    },
    ServerAccept {
        server: u8,
        how: How,
        out: u8,
        nulls: Nulls,
    },
    /// A client on a second thread while this one accepts; `name` None is the server's own.
    ServerPair {
        server: u8,
        client: u8,
        accepted: u8,
        name: Option<Name>,
        connect_timeout: u8,
        /// `Try` polls `weft_server_try_accept` until the client is done; a timeout is
        /// `accept_timeout % 11` ms.
        accept: How,
        accept_timeout: u8,
        opts: Option<ChannelOpts>,
        nulls: Nulls,
    },
    /// A call on one channel while a second thread serves it on another (an echo of the
    /// request, from the request's own bytes).
    Serve {
        client: u8,
        server: u8,
        data: Data,
        timeout: u8,
    },
    ChannelMaxLen {
        slot: u8,
        nulls: Nulls,
    },
    ChannelSend {
        slot: u8,
        data: Data,
        how: How,
        nulls: Nulls,
    },
    ChannelRecv {
        slot: u8,
        how: How,
        nulls: Nulls,
    },
    ChannelRelease {
        slot: u8,
        nulls: Nulls,
    },
    ChannelCall {
        slot: u8,
        data: Data,
        timeout: Option<Ms>,
        nulls: Nulls,
    },
    ChannelRecvRequest {
        slot: u8,
        how: How,
        nulls: Nulls,
    },
    ChannelReply {
        slot: u8,
        data: Data,
        nulls: Nulls,
    },
    ChannelReplyTo {
        slot: u8,
        id: Option<u64>,
        data: Data,
        nulls: Nulls,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// At the end, close the owners (writers, publishers, channels, ...) before what they lent
    /// or made (loans, samples, topics, ...), or the other way round.
    owners_first: bool,
    /// Last, so that it takes the rest of the input: each mutation that adds bytes adds
    /// operations.
    ops: Vec<Op>,
}

// ---------------------------------------------------------------------------------------
// Names.

fn prefix() -> String {
    format!("cabi-{}-", std::process::id())
}

/// The part of a C string before its first NUL.
fn c_part(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or(b)
}

fn name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')
}

/// An acceptable object name, as weft.h states it: 1 to 200 bytes of ASCII letters, digits,
/// '-', '_' and '.', not starting with '.', without "..".
fn object_name_ok(b: &[u8]) -> bool {
    !b.is_empty()
        && b.len() <= 200
        && b[0] != b'.'
        && !b.windows(2).any(|w| w == b"..")
        && b.iter().all(|&c| name_char(c))
}

/// An acceptable channel or server name: an object name of at most 158 bytes.
fn base_name_ok(b: &[u8]) -> bool {
    object_name_ok(b) && b.len() <= 158
}

/// An acceptable topic: '/' then non-empty segments (not "." or "..") of name characters,
/// 2 to 127 bytes in all.
fn topic_ok(b: &[u8]) -> bool {
    b.first() == Some(&b'/')
        && (2..=127).contains(&b.len())
        && b[1..].split(|&c| c == b'/').all(|seg| {
            !seg.is_empty() && seg != b"." && seg != b".." && seg.iter().all(|&c| name_char(c))
        })
}

impl Name {
    /// The C string (with its NUL). An arbitrary name that would be valid gets this process's
    /// prefix, so that every object made here is this process's and removed at the end; a
    /// name weft must refuse is passed as it is.
    fn bytes(&self) -> Vec<u8> {
        let mut b = match self {
            Name::Pool(k) => return format!("{}{}\0", prefix(), *k as u8).into_bytes(),
            Name::Suffixed { k, suffix } => {
                let suffix = if *suffix { "s2c" } else { "c2s" };
                return format!("{}{}.{suffix}\0", prefix(), *k as u8).into_bytes();
            }
            Name::Raw(v) => v.clone(),
            Name::Long { byte, len } => vec![*byte; *len as usize],
        };
        if object_name_ok(c_part(&b)) {
            let mut p = prefix().into_bytes();
            p.append(&mut b);
            b = p;
        }
        b.push(0);
        b
    }
}

impl TopicName {
    fn bytes(&self) -> Vec<u8> {
        let mut b = match self {
            TopicName::Pool(k) => if *k { "/t" } else { "/a/b" }.as_bytes().to_vec(),
            TopicName::Raw(v) => v.clone(),
            TopicName::Long { byte, len } => vec![*byte; *len as usize],
        };
        b.push(0);
        b
    }
}

/// Removes every object this process made (its names all start with [`prefix`]).
fn remove_objects() {
    let ours = format!("weft.{}", prefix());
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&ours) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checks.

/// Reads a C string that must be valid, and every byte of it.
///
/// # Safety
/// `p` is non-NULL and points to a NUL-terminated string (what the checked call promises).
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> &'a [u8] {
    assert!(!p.is_null(), "{what} is NULL");
    // SAFETY: the caller's promise: a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) }.to_bytes();
    black_box(s.iter().fold(0u8, |a, &b| a ^ b));
    s
}

/// Reads every byte of a buffer a call handed out.
///
/// # Safety
/// `p` is readable for `len` bytes (what the checked call promises).
unsafe fn touch(p: *const u8, len: usize, what: &str) {
    assert!(
        !p.is_null(),
        "{what}: a successful call gave a NULL pointer"
    );
    if len > 0 {
        // SAFETY: the caller's promise.
        let s = unsafe { std::slice::from_raw_parts(p, len) };
        black_box(s.iter().fold(0u8, |a, &b| a ^ b));
    }
}

/// Writes every byte of a buffer a call handed out for writing.
///
/// # Safety
/// `p` is writable for `len` bytes (what the checked call promises).
unsafe fn scribble(p: *mut u8, len: usize, value: u8, what: &str) {
    assert!(
        !p.is_null(),
        "{what}: a successful call gave a NULL pointer"
    );
    // SAFETY: the caller's promise.
    unsafe { std::ptr::write_bytes(p, value, len) };
}

/// Every status a call may return (the C ABI's own list).
const DOCUMENTED: &[i32] = &WEFT_STATUS_CODES;

/// `CABI_TRACE=1` prints every call and its status (to see what a corpus reaches).
fn trace() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CABI_TRACE").is_some())
}

/// The checks after every call on one thread: the status is documented and not a caught
/// panic, and the thread's last error agrees with it.
struct Calls {
    /// The code `weft_last_error_code` must give now.
    last: i32,
}

impl Calls {
    fn new() -> Calls {
        Calls {
            last: weft_last_error_code(),
        }
    }

    fn check(&mut self, rc: i32, call: &str) -> i32 {
        if trace() {
            eprintln!("{call} -> {rc}");
        }
        // SAFETY: weft_last_error_message is documented to return a valid C string, never
        // NULL, valid until the next call on this thread (none before it is read).
        let message = unsafe { c_str(weft_last_error_message(), "weft_last_error_message()") };
        assert!(
            DOCUMENTED.contains(&rc),
            "{call}: status {rc} is not a documented code"
        );
        assert_ne!(
            rc,
            WEFT_ERROR_PANIC,
            "{call}: a panic was caught at the boundary: {}",
            String::from_utf8_lossy(message)
        );
        // Nothing here writes shared memory behind weft's back: a call that finds it damaged
        // is wrong, except where a channel parses what the peer sent (a record too short for
        // a request's id, a reply to an id nothing asked for, raw records and requests being
        // mixed on one channel).
        if rc == WEFT_ERROR_CORRUPT {
            assert!(
                call.starts_with("weft_channel_call")
                    || call.starts_with("weft_channel_recv_request"),
                "{call}: corrupt: {}",
                String::from_utf8_lossy(message)
            );
        }
        if rc != WEFT_OK {
            assert!(
                !message.is_empty(),
                "{call}: failed ({rc}) without a message"
            );
            self.last = rc;
        }
        assert_eq!(
            weft_last_error_code(),
            self.last,
            "{call}: weft_last_error_code"
        );
        let skipped = weft_last_error_skipped();
        if self.last == WEFT_ERROR_LAGGED {
            assert!(skipped > 0, "{call}: lagged by 0 messages");
        } else {
            assert_eq!(skipped, 0, "{call}: skipped set after {}", self.last);
        }
        rc
    }

    /// A call that makes a handle: on success the out-pointer holds a non-NULL handle, on a
    /// failure it was not written.
    fn made<T>(&mut self, rc: i32, out: *mut T, call: &str) -> i32 {
        let rc = self.check(rc, call);
        if rc == WEFT_OK {
            assert!(!out.is_null(), "{call}: WEFT_OK with a NULL handle");
        } else {
            assert!(
                out.is_null(),
                "{call}: failed ({rc}) but wrote the out-pointer"
            );
        }
        rc
    }
}

/// A grant, loan or sample buffer handed out and still valid.
#[derive(Debug, Clone, Copy)]
struct Grant {
    ptr: *mut u8,
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Held {
    Record,
    Reply,
    Request,
}

/// A pointer that crosses to the second thread of a pair (every handle may move).
struct Moved<T>(T);
// SAFETY: only handles and out-pointers documented as movable between threads are wrapped,
// and the thread that receives them is the only one to use them until it is joined.
unsafe impl<T> Send for Moved<T> {}

/// The handles of one execution and what each lends, as the fuzzer understands it.
struct Table {
    writers: [*mut WeftStreamWriter; N],
    /// Each writer's `weft_stream_writer_max_record_len`.
    writer_max: [usize; N],
    reservations: [Option<Grant>; N],
    readers: [*mut WeftStreamReader; N],
    records: [Option<Grant>; N],
    publishers: [*mut WeftPublisher; N],
    /// Each publisher's `weft_publisher_max_len`.
    publisher_max: [usize; N],
    /// A number for each publisher handle, never reused in an execution.
    publisher_ids: [u64; N],
    /// The number of the publisher handle each topic was registered through.
    topic_publishers: [u64; N],
    next_id: u64,
    topics: [*mut WeftTopic; N],
    /// The path each topic handle was registered with.
    topic_names: [Vec<u8>; N],
    loans: [*mut WeftLoan; N],
    loan_bufs: [Grant; N],
    subscribers: [*mut WeftSubscriber; N],
    subscriptions: [*mut WeftSubscription; N],
    /// The sequence of the last sample each subscription gave.
    last_seq: [Option<u64>; N],
    /// The message each subscription lends (`weft_subscription_try_recv_borrowed`).
    borrowed: [Option<Grant>; N],
    samples: [*mut WeftSample; N],
    lists: [*mut WeftNameList; N],
    list_lens: [usize; N],
    channels: [*mut WeftChannel; N],
    /// Each channel's `weft_channel_max_message_len`.
    channel_max: [usize; N],
    held: [Option<(Held, Grant)>; N],
    /// The id of the last request received on each channel.
    request_ids: [u64; N],
    servers: [*mut WeftServer; N],
    server_names: [Vec<u8>; N],
}

const NO_GRANT: Grant = Grant {
    ptr: null_mut(),
    len: 0,
};

impl Table {
    fn new() -> Table {
        Table {
            writers: [null_mut(); N],
            writer_max: [0; N],
            reservations: [None; N],
            readers: [null_mut(); N],
            records: [None; N],
            publishers: [null_mut(); N],
            publisher_max: [0; N],
            publisher_ids: [0; N],
            topic_publishers: [0; N],
            next_id: 1,
            topics: [null_mut(); N],
            topic_names: Default::default(),
            loans: [null_mut(); N],
            loan_bufs: [NO_GRANT; N],
            subscribers: [null_mut(); N],
            subscriptions: [null_mut(); N],
            last_seq: [None; N],
            borrowed: [None; N],
            samples: [null_mut(); N],
            lists: [null_mut(); N],
            list_lens: [0; N],
            channels: [null_mut(); N],
            channel_max: [0; N],
            held: [None; N],
            request_ids: [0; N],
            servers: [null_mut(); N],
            server_names: Default::default(),
        }
    }
}

fn ix(slot: u8) -> usize {
    slot as usize % N
}

/// The pointer to pass for an optional value: NULL or the value's address.
fn opt<T>(v: &Option<T>) -> *const T {
    v.as_ref().map_or(null(), |v| v as *const T)
}

/// The pointer to pass for an out-parameter: NULL by the flag, else `p`.
fn out<T>(nulls: Nulls, i: u32, p: &mut T) -> *mut T {
    if nulls.null(i) { null_mut() } else { p }
}

impl StreamOpts {
    fn c(&self) -> WeftStreamOptions {
        WeftStreamOptions {
            align: self.align.usize(),
            wait: self.wait.get(),
            liveness_timeout_ms: self.liveness_timeout_ms.get(),
            hugepages: self.hugepages,
            lock_memory: self.lock_memory,
            hot_window: self.hot_window.usize(),
        }
    }
}

impl PubsubConfig {
    fn c(&self) -> WeftPubsubConfig {
        WeftPubsubConfig {
            participants: self.participants.usize(),
            max_held: self.max_held.usize(),
            topics: self.topics.usize(),
            ring_slots: self.ring_slots.usize(),
            blocks: self.blocks.usize(),
            block_size: self.block_size.usize(),
            wait: self.wait.get(),
            liveness_timeout_ms: self.liveness_timeout_ms.get(),
            open_timeout_ms: self.open_timeout_ms.get(),
            claim_timeout_ms: self.claim_timeout_ms.get(),
            hugepages: self.hugepages,
            lock_memory: self.lock_memory,
        }
    }
}

impl ChannelOpts {
    fn c(&self) -> WeftChannelOptions {
        WeftChannelOptions {
            capacity: self.capacity.usize(),
            wait: self.wait.get(),
            liveness_timeout_ms: self.liveness_timeout_ms.get(),
            slots: self.slots.get() as u32,
        }
    }
}

/// A buffer to pass as data, with what keeps it alive during the call.
struct Buf {
    _own: Vec<u8>,
    ptr: *const u8,
    len: usize,
}

impl Buf {
    /// Whether weft refuses it before anything else (NULL with a non-zero length).
    fn refused(&self) -> bool {
        self.ptr.is_null() && self.len != 0
    }
}

/// The status a call must return when the fuzzer knows it, else any documented one.
fn expect(rc: i32, want: Option<i32>, call: &str) {
    if let Some(want) = want {
        assert_eq!(rc, want, "{call}");
    }
}

/// The bytes a request or reply carries in front of its payload (its correlation id).
const ID_LEN: usize = 8;

/// A message longer than the handle's maximum is refused at once (never reported as
/// backpressure or a timeout, never sent); one that fits is never called too large.
fn sized(rc: i32, len: usize, max: usize, call: &str) {
    if len > max {
        assert!(
            ![WEFT_OK, WEFT_ERROR_FULL, WEFT_ERROR_TIMEOUT].contains(&rc),
            "{call}: {len} bytes, more than the maximum {max}, gave {rc}"
        );
    } else {
        assert_ne!(
            rc, WEFT_ERROR_TOO_LARGE,
            "{call}: {len} bytes, within the maximum {max}"
        );
    }
}

/// A call with a NULL where a value is required fails with INVALID_ARGUMENT, or with
/// INVALID_NAME when its name is bad too (which of the two is checked first is not said).
fn refused(rc: i32, any_null: bool, bad_name: bool, call: &str) {
    if any_null {
        assert!(
            rc == WEFT_ERROR_INVALID_ARGUMENT || (bad_name && rc == WEFT_ERROR_INVALID_NAME),
            "{call} with a NULL argument returned {rc}"
        );
    }
}

/// INVALID_ARGUMENT if any required pointer is NULL.
fn nulls_refused(any_null: bool) -> Option<i32> {
    any_null.then_some(WEFT_ERROR_INVALID_ARGUMENT)
}

fn wait_ok(code: i32) -> bool {
    (WEFT_WAIT_DEFAULT..=WEFT_WAIT_ADAPTIVE).contains(&code)
}

/// Releases through `slot` (or NULL by the flag): NULL is INVALID_ARGUMENT and leaves the
/// slot, an empty slot is STATE, a live handle is released and the slot cleared.
fn release<T>(
    c: &mut Calls,
    f: unsafe extern "C" fn(*mut *mut T) -> i32,
    slot: &mut *mut T,
    null: bool,
    call: &str,
) -> i32 {
    let was = *slot;
    let pp: *mut *mut T = if null { null_mut() } else { slot };
    // SAFETY: pp is NULL or the address of a slot, which holds NULL or a live handle of T.
    let rc = c.check(unsafe { f(pp) }, call);
    let now = *slot;
    if null {
        assert_eq!(rc, WEFT_ERROR_INVALID_ARGUMENT, "{call}(NULL)");
        assert_eq!(now, was, "{call}(NULL) changed the variable");
    } else if was.is_null() {
        assert_eq!(rc, WEFT_ERROR_STATE, "{call} through a cleared variable");
    } else {
        assert!(now.is_null(), "{call} did not clear the variable");
    }
    rc
}

/// `weft_channel_listen` and `weft_channel_connect`.
type Open = unsafe extern "C" fn(
    *const c_char,
    u64,
    *const WeftChannelOptions,
    *mut *mut WeftChannel,
) -> i32;

/// The fuzzer's state for one execution.
struct Run {
    c: Calls,
    t: Table,
}

impl Run {
    /// The bytes to pass for `d`.
    fn data(&mut self, d: &Data) -> Buf {
        match d {
            Data::Bytes(v) => Buf {
                ptr: v.as_ptr(),
                len: v.len(),
                _own: Vec::new(),
            },
            Data::Null(len) => Buf {
                _own: Vec::new(),
                ptr: null(),
                len: *len as usize,
            },
            Data::Fill { n, byte } => {
                let v = vec![*byte; *n as usize % (1 << 20)];
                Buf {
                    ptr: v.as_ptr(),
                    len: v.len(),
                    _own: v,
                }
            }
            Data::Lent {
                kind,
                slot,
                off,
                len,
            } => {
                let i = ix(*slot);
                let g = match kind % 5 {
                    0 => self.t.reservations[i],
                    1 => self.t.records[i],
                    2 => self.t.held[i].map(|(_, g)| g),
                    3 => (!self.t.loans[i].is_null()).then_some(self.t.loan_bufs[i]),
                    _ if !self.t.samples[i].is_null() => self.sample_data(i, Nulls(0)),
                    _ => None,
                };
                let Some(g) = g else {
                    return Buf {
                        _own: Vec::new(),
                        ptr: null(),
                        len: 0,
                    };
                };
                let off = *off as usize % (g.len + 1);
                let len = *len as usize % (g.len - off + 1);
                Buf {
                    _own: Vec::new(),
                    // SAFETY: off <= g.len: within (or one past) the grant, which is live.
                    ptr: unsafe { g.ptr.add(off) },
                    len,
                }
            }
        }
    }

    /// `weft_sample_data` on sample slot `i`, every byte it gives touched.
    fn sample_data(&mut self, i: usize, nulls: Nulls) -> Option<Grant> {
        let s = if nulls.null(0) {
            null()
        } else {
            self.t.samples[i].cast_const()
        };
        let (mut data, mut len) = (null(), usize::MAX);
        // SAFETY: NULL or a live sample; the out-pointers are NULL or locals.
        let rc = unsafe { weft_sample_data(s, out(nulls, 1, &mut data), out(nulls, 2, &mut len)) };
        self.c.check(rc, "weft_sample_data");
        if s.is_null() || nulls.null(1) || nulls.null(2) {
            assert_eq!(
                rc, WEFT_ERROR_INVALID_ARGUMENT,
                "weft_sample_data with a NULL"
            );
            return None;
        }
        assert_eq!(rc, WEFT_OK, "weft_sample_data on a live sample");
        // SAFETY: weft.h: `*data` and `*len`, valid until the sample is released.
        unsafe { touch(data, len, "weft_sample_data") };
        Some(Grant {
            ptr: data.cast_mut(),
            len,
        })
    }

    fn release_kind(&mut self, kind: Kind, i: usize, null: bool) {
        let (c, t) = (&mut self.c, &mut self.t);
        macro_rules! rel {
            ($f:ident, $field:ident) => {
                release(c, $f, &mut t.$field[i], null, stringify!($f))
            };
        }
        let (rc, call) = match kind {
            Kind::Writer => (rel!(weft_stream_writer_close, writers), "writer close"),
            Kind::Reader => (rel!(weft_stream_reader_close, readers), "reader close"),
            Kind::Publisher => (rel!(weft_publisher_close, publishers), "publisher close"),
            Kind::Topic => (rel!(weft_topic_free, topics), "topic free"),
            Kind::Loan => (rel!(weft_loan_release, loans), "loan release"),
            Kind::Subscriber => (rel!(weft_subscriber_close, subscribers), "subscriber close"),
            Kind::Subscription => (
                rel!(weft_subscription_close, subscriptions),
                "subscription close",
            ),
            Kind::Sample => (rel!(weft_sample_release, samples), "sample release"),
            Kind::Channel => (rel!(weft_channel_close, channels), "channel close"),
            Kind::Server => (rel!(weft_server_close, servers), "server close"),
            Kind::List => (rel!(weft_name_list_free, lists), "list free"),
        };
        // Releasing a live handle always succeeds.
        if !null && rc != WEFT_ERROR_STATE {
            assert_eq!(rc, WEFT_OK, "{call} of a live handle");
        }
        self.forget_grants();
    }

    /// Forgets the grants of handles that are gone (closing a writer, reader or channel
    /// releases what it lends).
    fn forget_grants(&mut self) {
        let t = &mut self.t;
        for i in 0..N {
            if t.writers[i].is_null() {
                t.reservations[i] = None;
            }
            if t.readers[i].is_null() {
                t.records[i] = None;
            }
            if t.channels[i].is_null() {
                t.held[i] = None;
            }
            if t.subscriptions[i].is_null() {
                t.borrowed[i] = None;
            }
        }
    }

    fn live(&self, kind: Kind, i: usize) -> bool {
        let t = &self.t;
        !match kind {
            Kind::Writer => t.writers[i].is_null(),
            Kind::Reader => t.readers[i].is_null(),
            Kind::Publisher => t.publishers[i].is_null(),
            Kind::Topic => t.topics[i].is_null(),
            Kind::Loan => t.loans[i].is_null(),
            Kind::Subscriber => t.subscribers[i].is_null(),
            Kind::Subscription => t.subscriptions[i].is_null(),
            Kind::Sample => t.samples[i].is_null(),
            Kind::Channel => t.channels[i].is_null(),
            Kind::Server => t.servers[i].is_null(),
            Kind::List => t.lists[i].is_null(),
        }
    }

    /// The slot an operation uses: with the top bit of `k` clear, one of the live handles of
    /// `kind` if there is one (so that a sequence meets the handles it made), else slot
    /// `k % N`, live or not.
    fn pick(&self, kind: Kind, k: u8) -> usize {
        if k & 0x80 == 0 {
            let mut live = [0; N];
            let mut n = 0;
            for i in 0..N {
                if self.live(kind, i) {
                    live[n] = i;
                    n += 1;
                }
            }
            if n > 0 {
                return live[k as usize % n];
            }
        }
        ix(k)
    }

    /// Empties slot `i` of `kind` (releasing what it holds) for a new handle.
    fn vacate(&mut self, kind: Kind, i: usize) {
        if self.live(kind, i) {
            self.release_kind(kind, i, false);
        }
    }

    /// Releases every handle, owners first or last.
    fn release_all(&mut self, owners_first: bool) {
        use Kind::*;
        let order = if owners_first {
            [
                Server,
                Channel,
                Publisher,
                Subscriber,
                Subscription,
                Writer,
                Reader,
                Loan,
                Sample,
                Topic,
                List,
            ]
        } else {
            [
                Sample,
                Loan,
                List,
                Topic,
                Subscription,
                Subscriber,
                Publisher,
                Reader,
                Writer,
                Channel,
                Server,
            ]
        };
        for kind in order {
            for i in 0..N {
                self.vacate(kind, i);
            }
        }
    }

    fn put_channel(&mut self, i: usize, h: *mut WeftChannel) {
        self.vacate(Kind::Channel, i);
        self.t.channels[i] = h;
        self.t.held[i] = None;
        let mut max = 0;
        // SAFETY: a live channel; a local.
        let rc = unsafe { weft_channel_max_message_len(h, &mut max) };
        assert_eq!(self.c.check(rc, "weft_channel_max_message_len"), WEFT_OK);
        self.t.channel_max[i] = max;
    }

    /// Stores a new list and reads all of it: its length, every name, one past the end.
    fn put_list(&mut self, i: usize, h: *mut WeftNameList, topics: bool) {
        self.vacate(Kind::List, i);
        self.t.lists[i] = h;
        let mut len = usize::MAX;
        // SAFETY: a live list; a local out-pointer.
        let rc = self.c.check(
            unsafe { weft_name_list_len(h, &mut len) },
            "weft_name_list_len",
        );
        assert_eq!(rc, WEFT_OK, "weft_name_list_len");
        self.t.list_lens[i] = len;
        for k in 0..=len {
            let mut name = null();
            // SAFETY: as above.
            let rc = self.c.check(
                unsafe { weft_name_list_get(h, k, &mut name) },
                "weft_name_list_get",
            );
            if k == len {
                assert_eq!(
                    rc, WEFT_ERROR_INVALID_ARGUMENT,
                    "weft_name_list_get past the end"
                );
                continue;
            }
            assert_eq!(rc, WEFT_OK, "weft_name_list_get");
            // SAFETY: weft.h: a name valid as long as the list.
            let name = unsafe { c_str(name, "a listed name") };
            if topics {
                assert!(
                    topic_ok(name),
                    "a listed topic is not a topic: {:?}",
                    String::from_utf8_lossy(name)
                );
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // The operations.

    fn op(&mut self, op: &Op) {
        match op {
            Op::ErrorString(code) => {
                let s = weft_error_string(*code);
                // SAFETY: weft.h: a static NUL-terminated description, never NULL.
                let s = unsafe { c_str(s, "weft_error_string") };
                assert_eq!(
                    s == b"unknown status code",
                    !DOCUMENTED.contains(code),
                    "weft_error_string({code})"
                );
                self.c.check(WEFT_OK, "weft_error_string");
            }
            Op::Release { kind, slot, null } => {
                self.release_kind(*kind, self.pick(*kind, *slot), *null)
            }

            Op::WriterCreate {
                slot,
                name,
                capacity,
                opts,
                nulls,
            } => {
                let name = name.bytes();
                let opts = opts.as_ref().map(StreamOpts::c);
                let mut h = null_mut();
                // SAFETY: a NUL-terminated name or NULL, options NULL or a local, the
                // out-pointer NULL or a local.
                let rc = unsafe {
                    weft_stream_writer_create(
                        if nulls.null(0) {
                            null()
                        } else {
                            name.as_ptr().cast()
                        },
                        capacity.usize(),
                        opt(&opts),
                        out(*nulls, 1, &mut h),
                    )
                };
                let rc = self.c.made(rc, h, "weft_stream_writer_create");
                if rc == WEFT_OK {
                    assert!(
                        object_name_ok(c_part(&name)),
                        "a stream made under a name weft.h refuses"
                    );
                    let i = ix(*slot);
                    self.vacate(Kind::Writer, i);
                    self.t.writers[i] = h;
                    let mut max = 0;
                    // SAFETY: a live writer; a local.
                    let rc = unsafe { weft_stream_writer_max_record_len(h, &mut max) };
                    assert_eq!(
                        self.c.check(rc, "weft_stream_writer_max_record_len"),
                        WEFT_OK
                    );
                    self.t.writer_max[i] = max;
                }
            }
            Op::WriterMaxRecordLen { slot, nulls } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                let mut len = usize::MAX;
                // SAFETY: NULL or a live writer; NULL or a local.
                let rc = unsafe { weft_stream_writer_max_record_len(w, out(*nulls, 1, &mut len)) };
                let rc = self.c.check(rc, "weft_stream_writer_max_record_len");
                let want = nulls_refused(w.is_null() || nulls.null(1))
                    .or(self.t.reservations[i].map(|_| WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_writer_max_record_len");
            }
            Op::WriterSetWait { slot, wait, nulls } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                let code = wait.get();
                // SAFETY: NULL or a live writer.
                let rc = self.c.check(
                    unsafe { weft_stream_writer_set_wait(w, code) },
                    "weft_stream_writer_set_wait",
                );
                let want = nulls_refused(w.is_null() || !wait_ok(code))
                    .or(self.t.reservations[i].map(|_| WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_writer_set_wait");
            }
            Op::WriterFlush { slot, nulls } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                // SAFETY: NULL or a live writer.
                let rc = self.c.check(
                    unsafe { weft_stream_writer_flush(w) },
                    "weft_stream_writer_flush",
                );
                let want = nulls_refused(w.is_null())
                    .or(self.t.reservations[i].map(|_| WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_writer_flush");
            }
            Op::WriterWrite {
                slot,
                data,
                how,
                deferred,
                nulls,
            } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                let buf = self.data(data);
                let lent = self.t.reservations[i].is_some();
                let returns = w.is_null() || buf.refused() || lent;
                // SAFETY: NULL or a live writer; data NULL or readable for len bytes.
                let (rc, call) = unsafe {
                    match (how, *deferred) {
                        (How::Timeout(ms), false) => (
                            weft_stream_writer_write_timeout(w, buf.ptr, buf.len, ms.get()),
                            "weft_stream_writer_write_timeout",
                        ),
                        (How::Timeout(ms), true) => (
                            weft_stream_writer_write_deferred_timeout(
                                w,
                                buf.ptr,
                                buf.len,
                                ms.get(),
                            ),
                            "weft_stream_writer_write_deferred_timeout",
                        ),
                        (How::Block, false) if returns => (
                            weft_stream_writer_write(w, buf.ptr, buf.len),
                            "weft_stream_writer_write",
                        ),
                        (How::Block, true) if returns => (
                            weft_stream_writer_write_deferred(w, buf.ptr, buf.len),
                            "weft_stream_writer_write_deferred",
                        ),
                        (_, false) => (
                            weft_stream_writer_try_write(w, buf.ptr, buf.len),
                            "weft_stream_writer_try_write",
                        ),
                        (_, true) => (
                            weft_stream_writer_try_write_deferred(w, buf.ptr, buf.len),
                            "weft_stream_writer_try_write_deferred",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                let want = nulls_refused(w.is_null() || buf.refused())
                    .or(lent.then_some(WEFT_ERROR_STATE));
                expect(rc, want, "weft_stream_writer_write");
                if want.is_none() {
                    sized(rc, buf.len, self.t.writer_max[i], call);
                }
            }
            Op::WriterReserve {
                slot,
                len,
                how,
                fill,
                nulls,
            } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                let lent = self.t.reservations[i].is_some();
                let returns = w.is_null() || nulls.null(1) || lent;
                let (len, mut data) = (len.usize(), null_mut());
                let d = out(*nulls, 1, &mut data);
                // SAFETY: NULL or a live writer; NULL or a local.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_stream_writer_reserve_timeout(w, len, ms.get(), d),
                            "weft_stream_writer_reserve_timeout",
                        ),
                        How::Block if returns => (
                            weft_stream_writer_reserve(w, len, d),
                            "weft_stream_writer_reserve",
                        ),
                        _ => (
                            weft_stream_writer_try_reserve(w, len, d),
                            "weft_stream_writer_try_reserve",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                let want = nulls_refused(w.is_null() || nulls.null(1))
                    .or(lent.then_some(WEFT_ERROR_STATE));
                expect(rc, want, "weft_stream_writer_reserve");
                if want.is_none() {
                    sized(rc, len, self.t.writer_max[i], call);
                }
                if rc == WEFT_OK {
                    // SAFETY: weft.h: `len` bytes to write the record in, valid until commit.
                    unsafe { scribble(data, len, *fill, "weft_stream_writer_reserve") };
                    self.t.reservations[i] = Some(Grant { ptr: data, len });
                }
            }
            Op::WriterCommit { slot, len, nulls } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                let len = len.usize();
                // SAFETY: NULL or a live writer.
                let rc = self.c.check(
                    unsafe { weft_stream_writer_commit(w, len) },
                    "weft_stream_writer_commit",
                );
                if w.is_null() {
                    expect(
                        rc,
                        Some(WEFT_ERROR_INVALID_ARGUMENT),
                        "weft_stream_writer_commit(NULL)",
                    );
                } else {
                    match self.t.reservations[i] {
                        None => expect(
                            rc,
                            Some(WEFT_ERROR_STATE),
                            "weft_stream_writer_commit, nothing reserved",
                        ),
                        Some(g) if len > g.len => expect(
                            rc,
                            Some(WEFT_ERROR_INVALID_ARGUMENT),
                            "weft_stream_writer_commit past the reservation",
                        ),
                        // Consumed whatever the outcome.
                        Some(_) => self.t.reservations[i] = None,
                    }
                }
            }
            Op::WriterAbandon { slot, nulls } => {
                let i = self.pick(Kind::Writer, *slot);
                let w = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.writers[i]
                };
                // SAFETY: NULL or a live writer.
                let rc = self.c.check(
                    unsafe { weft_stream_writer_abandon(w) },
                    "weft_stream_writer_abandon",
                );
                let want = nulls_refused(w.is_null())
                    .or(self.t.reservations[i].is_none().then_some(WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_writer_abandon");
                if rc == WEFT_OK {
                    self.t.reservations[i] = None;
                }
            }
            Op::ReaderOpen {
                slot,
                name,
                timeout,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let mut h = null_mut();
                // SAFETY: a NUL-terminated name or NULL; NULL or a local.
                let (rc, call) = unsafe {
                    match timeout {
                        None => (
                            weft_stream_reader_open(n, out(*nulls, 1, &mut h)),
                            "weft_stream_reader_open",
                        ),
                        Some(ms) => (
                            weft_stream_reader_open_timeout(n, ms.get(), out(*nulls, 1, &mut h)),
                            "weft_stream_reader_open_timeout",
                        ),
                    }
                };
                let rc = self.c.made(rc, h, call);
                if rc == WEFT_OK {
                    assert!(
                        object_name_ok(c_part(&name)),
                        "a stream opened under a name weft.h refuses"
                    );
                    let i = ix(*slot);
                    self.vacate(Kind::Reader, i);
                    self.t.readers[i] = h;
                }
            }
            Op::ReaderSetWait { slot, wait, nulls } => {
                let i = self.pick(Kind::Reader, *slot);
                let r = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.readers[i]
                };
                let code = wait.get();
                // SAFETY: NULL or a live reader.
                let rc = self.c.check(
                    unsafe { weft_stream_reader_set_wait(r, code) },
                    "weft_stream_reader_set_wait",
                );
                let want = nulls_refused(r.is_null() || !wait_ok(code))
                    .or(self.t.records[i].map(|_| WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_reader_set_wait");
            }
            Op::ReaderRead { slot, how, nulls } => {
                let i = self.pick(Kind::Reader, *slot);
                let r = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.readers[i]
                };
                let lent = self.t.records[i].is_some();
                let any_null = r.is_null() || nulls.null(1) || nulls.null(2);
                let (mut data, mut len) = (null(), usize::MAX);
                let (d, l) = (out(*nulls, 1, &mut data), out(*nulls, 2, &mut len));
                // SAFETY: NULL or a live reader; NULL or locals.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_stream_reader_read_timeout(r, ms.get(), d, l),
                            "weft_stream_reader_read_timeout",
                        ),
                        How::Block if any_null || lent => {
                            (weft_stream_reader_read(r, d, l), "weft_stream_reader_read")
                        }
                        _ => (
                            weft_stream_reader_try_read(r, d, l),
                            "weft_stream_reader_try_read",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                expect(
                    rc,
                    nulls_refused(any_null).or(lent.then_some(WEFT_ERROR_STATE)),
                    "weft_stream_reader_read",
                );
                if rc == WEFT_OK {
                    // SAFETY: weft.h: the record's bytes, valid until released.
                    unsafe { touch(data, len, "weft_stream_reader_read") };
                    self.t.records[i] = Some(Grant {
                        ptr: data.cast_mut(),
                        len,
                    });
                }
            }
            Op::ReaderRelease { slot, nulls } => {
                let i = self.pick(Kind::Reader, *slot);
                let r = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.readers[i]
                };
                // SAFETY: NULL or a live reader.
                let rc = self.c.check(
                    unsafe { weft_stream_reader_release(r) },
                    "weft_stream_reader_release",
                );
                let want = nulls_refused(r.is_null())
                    .or(self.t.records[i].is_none().then_some(WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_stream_reader_release");
                if rc == WEFT_OK {
                    self.t.records[i] = None;
                }
            }

            Op::PublisherCreate {
                slot,
                name,
                config,
                nulls,
            }
            | Op::PublisherOpen {
                slot,
                name,
                config,
                nulls,
            } => {
                let create = matches!(op, Op::PublisherCreate { .. });
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let config = config.as_ref().map(PubsubConfig::c);
                let mut h = null_mut();
                // SAFETY: a NUL-terminated name or NULL; NULL or a local config; NULL or a
                // local out-pointer.
                let (rc, call) = unsafe {
                    if create {
                        (
                            weft_publisher_create(n, opt(&config), out(*nulls, 1, &mut h)),
                            "weft_publisher_create",
                        )
                    } else {
                        (
                            weft_publisher_open(n, opt(&config), out(*nulls, 1, &mut h)),
                            "weft_publisher_open",
                        )
                    }
                };
                let rc = self.c.made(rc, h, call);
                if rc == WEFT_OK {
                    assert!(
                        object_name_ok(c_part(&name)),
                        "a region under a name weft.h refuses"
                    );
                    let i = ix(*slot);
                    self.vacate(Kind::Publisher, i);
                    self.t.publishers[i] = h;
                    self.t.publisher_ids[i] = self.t.next_id;
                    self.t.next_id += 1;
                    let mut max = 0;
                    // SAFETY: a live publisher; a local.
                    let rc = unsafe { weft_publisher_max_len(h, &mut max) };
                    assert_eq!(self.c.check(rc, "weft_publisher_max_len"), WEFT_OK);
                    self.t.publisher_max[i] = max;
                }
            }
            Op::Register {
                publisher,
                topic,
                mode,
                out: o,
                nulls,
            } => {
                let pi = self.pick(Kind::Publisher, *publisher);
                let p = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.publishers[pi]
                };
                let topic = topic.bytes();
                let tp = if nulls.null(1) {
                    null()
                } else {
                    topic.as_ptr().cast()
                };
                let mut h: *mut WeftTopic = null_mut();
                let op = out(*nulls, 2, &mut h);
                // SAFETY: NULL or a live publisher; NULL or a NUL-terminated topic; NULL or a
                // local.
                let (rc, call) = unsafe {
                    match mode {
                        None => (
                            weft_publisher_register(p, tp, op),
                            "weft_publisher_register",
                        ),
                        Some(m) => (
                            weft_publisher_register_with(p, tp, m.get(), op),
                            "weft_publisher_register_with",
                        ),
                    }
                };
                let rc = self.c.made(rc, h, call);
                let bad_name = !tp.is_null() && !topic_ok(c_part(&topic));
                refused(
                    rc,
                    p.is_null() || tp.is_null() || op.is_null(),
                    bad_name,
                    "weft_publisher_register",
                );
                if rc == WEFT_OK {
                    let path = c_part(&topic).to_vec();
                    assert!(
                        topic_ok(&path),
                        "registered a topic weft.h refuses: {:?}",
                        String::from_utf8_lossy(&path)
                    );
                    let i = ix(*o);
                    self.vacate(Kind::Topic, i);
                    self.t.topics[i] = h;
                    self.t.topic_names[i] = path;
                    self.t.topic_publishers[i] = self.t.publisher_ids[pi];
                }
            }
            Op::TopicName { slot, nulls } => {
                let i = self.pick(Kind::Topic, *slot);
                let t = if nulls.null(0) {
                    null()
                } else {
                    self.t.topics[i].cast_const()
                };
                let mut name = null();
                // SAFETY: NULL or a live topic; NULL or a local.
                let rc = self.c.check(
                    unsafe { weft_topic_name(t, out(*nulls, 1, &mut name)) },
                    "weft_topic_name",
                );
                expect(
                    rc,
                    nulls_refused(t.is_null() || nulls.null(1)).or(Some(WEFT_OK)),
                    "weft_topic_name",
                );
                if rc == WEFT_OK {
                    // SAFETY: weft.h: valid as long as the topic handle.
                    let got = unsafe { c_str(name, "weft_topic_name") };
                    assert_eq!(got, &self.t.topic_names[i][..], "weft_topic_name");
                }
            }
            Op::PublisherMaxLen { slot, nulls } => {
                let p = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.publishers[self.pick(Kind::Publisher, *slot)]
                };
                let mut len = 0;
                // SAFETY: NULL or a live publisher; NULL or a local.
                let rc = unsafe { weft_publisher_max_len(p, out(*nulls, 1, &mut len)) };
                let rc = self.c.check(rc, "weft_publisher_max_len");
                expect(
                    rc,
                    nulls_refused(p.is_null() || nulls.null(1)).or(Some(WEFT_OK)),
                    "weft_publisher_max_len",
                );
            }
            Op::Loan {
                publisher,
                topic,
                out: o,
                fill,
                nulls,
            } => {
                let pi = self.pick(Kind::Publisher, *publisher);
                let p = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.publishers[pi]
                };
                let ti = self.pick(Kind::Topic, *topic);
                let t = if nulls.null(1) {
                    null()
                } else {
                    self.t.topics[ti].cast_const()
                };
                let (mut h, mut data, mut cap) = (null_mut(), null_mut(), usize::MAX);
                let (lp, dp, cp) = (
                    out(*nulls, 2, &mut h),
                    out(*nulls, 3, &mut data),
                    out(*nulls, 4, &mut cap),
                );
                // SAFETY: NULL or live handles; NULL or locals.
                let rc = unsafe { weft_publisher_loan(p, t, lp, dp, cp) };
                let rc = self.c.made(rc, h, "weft_publisher_loan");
                let any_null =
                    p.is_null() || t.is_null() || lp.is_null() || dp.is_null() || cp.is_null();
                expect(rc, nulls_refused(any_null), "weft_publisher_loan");
                if !any_null && self.t.topic_publishers[ti] != self.t.publisher_ids[pi] {
                    expect(
                        rc,
                        Some(WEFT_ERROR_INVALID_ARGUMENT),
                        "weft_publisher_loan with a topic of another publisher",
                    );
                }
                if rc == WEFT_OK {
                    // SAFETY: weft.h: `*capacity` writable bytes, valid until published or
                    // released.
                    unsafe { scribble(data, cap, *fill, "weft_publisher_loan") };
                    assert_eq!(
                        cap, self.t.publisher_max[pi],
                        "a loan's capacity is the block size"
                    );
                    let i = ix(*o);
                    self.vacate(Kind::Loan, i);
                    self.t.loans[i] = h;
                    self.t.loan_bufs[i] = Grant {
                        ptr: data,
                        len: cap,
                    };
                }
            }
            Op::LoanSetLen { slot, len, nulls } => {
                let i = self.pick(Kind::Loan, *slot);
                let l = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.loans[i]
                };
                let len = len.usize();
                // SAFETY: NULL or a live loan.
                let rc = self
                    .c
                    .check(unsafe { weft_loan_set_len(l, len) }, "weft_loan_set_len");
                let want = if l.is_null() {
                    WEFT_ERROR_INVALID_ARGUMENT
                } else if len > self.t.loan_bufs[i].len {
                    WEFT_ERROR_TOO_LARGE
                } else {
                    WEFT_OK
                };
                expect(rc, Some(want), "weft_loan_set_len");
            }
            Op::LoanPublish { slot, nulls } => {
                let i = self.pick(Kind::Loan, *slot);
                let mut seq = u64::MAX;
                let seq_p = out(*nulls, 1, &mut seq);
                let was = self.t.loans[i];
                let pp: *mut *mut WeftLoan = if nulls.null(0) {
                    null_mut()
                } else {
                    &mut self.t.loans[i]
                };
                // SAFETY: NULL or the slot (NULL or a live loan); NULL or a local.
                let rc = self
                    .c
                    .check(unsafe { weft_loan_publish(pp, seq_p) }, "weft_loan_publish");
                if pp.is_null() {
                    expect(
                        rc,
                        Some(WEFT_ERROR_INVALID_ARGUMENT),
                        "weft_loan_publish(NULL)",
                    );
                    assert_eq!(self.t.loans[i], was);
                } else if was.is_null() {
                    expect(
                        rc,
                        Some(WEFT_ERROR_STATE),
                        "weft_loan_publish through a cleared variable",
                    );
                } else {
                    // Consumed whether or not the publish succeeded.
                    assert!(
                        self.t.loans[i].is_null(),
                        "weft_loan_publish did not clear the variable"
                    );
                }
            }
            Op::Publish {
                publisher,
                topic,
                data,
                nulls,
            } => {
                let pi = self.pick(Kind::Publisher, *publisher);
                let p = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.publishers[pi]
                };
                let ti = self.pick(Kind::Topic, *topic);
                let t = if nulls.null(1) {
                    null()
                } else {
                    self.t.topics[ti].cast_const()
                };
                let buf = self.data(data);
                let mut seq = u64::MAX;
                // SAFETY: NULL or live handles; data NULL or readable for len; NULL or a local.
                let rc = unsafe {
                    weft_publisher_publish(p, t, buf.ptr, buf.len, out(*nulls, 2, &mut seq))
                };
                let rc = self.c.check(rc, "weft_publisher_publish");
                let want = nulls_refused(p.is_null() || t.is_null() || buf.refused());
                expect(rc, want, "weft_publisher_publish");
                if want.is_none() {
                    sized(
                        rc,
                        buf.len,
                        self.t.publisher_max[pi],
                        "weft_publisher_publish",
                    );
                    if self.t.topic_publishers[ti] != self.t.publisher_ids[pi] {
                        assert!(
                            [WEFT_ERROR_INVALID_ARGUMENT, WEFT_ERROR_TOO_LARGE].contains(&rc),
                            "weft_publisher_publish with a topic of another publisher returned {rc}"
                        );
                    }
                }
            }
            Op::SubscriberConnect {
                slot,
                name,
                config,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let config = config.as_ref().map(PubsubConfig::c);
                let mut h = null_mut();
                // SAFETY: a NUL-terminated name or NULL; NULL or a local; NULL or a local.
                let rc =
                    unsafe { weft_subscriber_connect(n, opt(&config), out(*nulls, 1, &mut h)) };
                self.subscriber_made(rc, h, &name, *slot, "weft_subscriber_connect");
            }
            Op::SubscriberConnectTimeout {
                slot,
                name,
                timeout,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let mut h = null_mut();
                // SAFETY: a NUL-terminated name or NULL; NULL or a local.
                let rc = unsafe {
                    weft_subscriber_connect_timeout(n, timeout.get(), out(*nulls, 1, &mut h))
                };
                self.subscriber_made(rc, h, &name, *slot, "weft_subscriber_connect_timeout");
            }
            Op::Subscribe {
                subscriber,
                topic,
                start,
                out: o,
                nulls,
            } => {
                let s = if nulls.null(0) {
                    null()
                } else {
                    self.t.subscribers[self.pick(Kind::Subscriber, *subscriber)].cast_const()
                };
                let topic = topic.bytes();
                let tp = if nulls.null(1) {
                    null()
                } else {
                    topic.as_ptr().cast()
                };
                let mut h: *mut WeftSubscription = null_mut();
                let op = out(*nulls, 2, &mut h);
                // SAFETY: NULL or a live subscriber; NULL or a NUL-terminated topic; NULL or a
                // local.
                let (rc, call) = unsafe {
                    match start {
                        Start::Now => (
                            weft_subscriber_subscribe(s, tp, op),
                            "weft_subscriber_subscribe",
                        ),
                        Start::History(n) => (
                            weft_subscriber_subscribe_with_history(s, tp, n.usize(), op),
                            "weft_subscriber_subscribe_with_history",
                        ),
                        Start::Timeout(ms) => (
                            weft_subscriber_subscribe_timeout(s, tp, ms.get(), op),
                            "weft_subscriber_subscribe_timeout",
                        ),
                    }
                };
                let rc = self.c.made(rc, h, call);
                let bad_name = !tp.is_null() && !topic_ok(c_part(&topic));
                refused(
                    rc,
                    s.is_null() || tp.is_null() || op.is_null(),
                    bad_name,
                    "weft_subscriber_subscribe",
                );
                if rc == WEFT_OK {
                    assert!(
                        topic_ok(c_part(&topic)),
                        "subscribed to a topic weft.h refuses"
                    );
                    let i = ix(*o);
                    self.vacate(Kind::Subscription, i);
                    self.t.subscriptions[i] = h;
                    self.t.last_seq[i] = None;
                }
            }
            Op::Recv {
                subscription,
                how,
                out: o,
                nulls,
            } => {
                let si = self.pick(Kind::Subscription, *subscription);
                let s = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.subscriptions[si]
                };
                let mut h: *mut WeftSample = null_mut();
                let op = out(*nulls, 1, &mut h);
                let any_null = s.is_null() || op.is_null();
                // SAFETY: NULL or a live subscription; NULL or a local.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_subscription_recv_timeout(s, ms.get(), op),
                            "weft_subscription_recv_timeout",
                        ),
                        How::Block if any_null => {
                            (weft_subscription_recv(s, op), "weft_subscription_recv")
                        }
                        _ => (
                            weft_subscription_try_recv(s, op),
                            "weft_subscription_try_recv",
                        ),
                    }
                };
                let rc = self.c.made(rc, h, call);
                let lent = !s.is_null() && self.t.borrowed[si].is_some();
                expect(
                    rc,
                    nulls_refused(any_null).or(lent.then_some(WEFT_ERROR_STATE)),
                    "weft_subscription_recv",
                );
                if rc == WEFT_OK {
                    let i = ix(*o);
                    self.vacate(Kind::Sample, i);
                    self.t.samples[i] = h;
                    self.sample_data(i, Nulls(0));
                    let mut seq = 0;
                    // SAFETY: a live sample; a local.
                    let rc = unsafe { weft_sample_seq(h, &mut seq) };
                    assert_eq!(self.c.check(rc, "weft_sample_seq"), WEFT_OK);
                    if let Some(last) = self.t.last_seq[si] {
                        assert!(
                            seq > last,
                            "a subscription gave sequence {seq} after {last}"
                        );
                    }
                    self.t.last_seq[si] = Some(seq);
                }
            }
            Op::RecvBorrowed {
                subscription,
                how,
                nulls,
            } => {
                let si = self.pick(Kind::Subscription, *subscription);
                let s = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.subscriptions[si]
                };
                let lent = !s.is_null() && self.t.borrowed[si].is_some();
                let any_null = s.is_null() || nulls.null(1) || nulls.null(2);
                let (mut data, mut len, mut seq) = (null(), usize::MAX, u64::MAX);
                let (d, l) = (out(*nulls, 1, &mut data), out(*nulls, 2, &mut len));
                // `seq` is optional: NULL is allowed.
                let q = out(*nulls, 3, &mut seq);
                // SAFETY: NULL or a live subscription; NULL or locals.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_subscription_recv_borrowed_timeout(s, ms.get(), d, l, q),
                            "weft_subscription_recv_borrowed_timeout",
                        ),
                        How::Block if any_null || lent => (
                            weft_subscription_recv_borrowed(s, d, l, q),
                            "weft_subscription_recv_borrowed",
                        ),
                        _ => (
                            weft_subscription_try_recv_borrowed(s, d, l, q),
                            "weft_subscription_try_recv_borrowed",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                expect(
                    rc,
                    nulls_refused(any_null).or(lent.then_some(WEFT_ERROR_STATE)),
                    "weft_subscription_recv_borrowed",
                );
                if rc == WEFT_OK {
                    // SAFETY: weft.h: the message's bytes, valid until released.
                    unsafe { touch(data, len, "weft_subscription_recv_borrowed") };
                    if !q.is_null() {
                        if let Some(last) = self.t.last_seq[si] {
                            assert!(
                                seq > last,
                                "a subscription lent sequence {seq} after {last}"
                            );
                        }
                        self.t.last_seq[si] = Some(seq);
                    }
                    self.t.borrowed[si] = Some(Grant {
                        ptr: data.cast_mut(),
                        len,
                    });
                }
            }
            Op::SubscriptionRelease {
                subscription,
                nulls,
            } => {
                let si = self.pick(Kind::Subscription, *subscription);
                let s = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.subscriptions[si]
                };
                // SAFETY: NULL or a live subscription.
                let rc = self.c.check(
                    unsafe { weft_subscription_release(s) },
                    "weft_subscription_release",
                );
                let want = nulls_refused(s.is_null())
                    .or(self.t.borrowed[si].is_none().then_some(WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_subscription_release");
                if rc == WEFT_OK {
                    self.t.borrowed[si] = None;
                }
            }
            Op::SampleData { slot, nulls } => {
                self.sample_data(self.pick(Kind::Sample, *slot), *nulls);
            }
            Op::SampleSeq { slot, nulls } => {
                let s = if nulls.null(0) {
                    null()
                } else {
                    self.t.samples[self.pick(Kind::Sample, *slot)].cast_const()
                };
                let mut seq = 0;
                // SAFETY: NULL or a live sample; NULL or a local.
                let rc = self.c.check(
                    unsafe { weft_sample_seq(s, out(*nulls, 1, &mut seq)) },
                    "weft_sample_seq",
                );
                expect(
                    rc,
                    nulls_refused(s.is_null() || nulls.null(1)).or(Some(WEFT_OK)),
                    "weft_sample_seq",
                );
            }
            Op::Regions { out: o, nulls } => {
                let mut h = null_mut();
                // SAFETY: NULL or a local.
                let rc = self.c.made(
                    unsafe { weft_pubsub_regions(out(*nulls, 0, &mut h)) },
                    h,
                    "weft_pubsub_regions",
                );
                expect(rc, nulls_refused(nulls.null(0)), "weft_pubsub_regions");
                if rc == WEFT_OK {
                    self.put_list(ix(*o), h, false);
                }
            }
            Op::Topics {
                name,
                out: o,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let mut h = null_mut();
                // SAFETY: NULL or a NUL-terminated name; NULL or a local.
                let rc = self.c.made(
                    unsafe { weft_pubsub_topics(n, out(*nulls, 1, &mut h)) },
                    h,
                    "weft_pubsub_topics",
                );
                if rc == WEFT_OK {
                    assert!(
                        object_name_ok(c_part(&name)),
                        "listed the topics of a region named as weft.h refuses"
                    );
                    self.put_list(ix(*o), h, true);
                }
            }
            Op::ListLen { slot, nulls } => {
                let i = self.pick(Kind::List, *slot);
                let l = if nulls.null(0) {
                    null()
                } else {
                    self.t.lists[i].cast_const()
                };
                let mut len = usize::MAX;
                // SAFETY: NULL or a live list; NULL or a local.
                let rc = self.c.check(
                    unsafe { weft_name_list_len(l, out(*nulls, 1, &mut len)) },
                    "weft_name_list_len",
                );
                expect(
                    rc,
                    nulls_refused(l.is_null() || nulls.null(1)).or(Some(WEFT_OK)),
                    "weft_name_list_len",
                );
                if rc == WEFT_OK {
                    assert_eq!(len, self.t.list_lens[i], "a list's length changed");
                }
            }
            Op::ListGet { slot, index, nulls } => {
                let i = self.pick(Kind::List, *slot);
                let l = if nulls.null(0) {
                    null()
                } else {
                    self.t.lists[i].cast_const()
                };
                let index = index.usize();
                let mut name = null();
                // SAFETY: NULL or a live list; NULL or a local.
                let rc = self.c.check(
                    unsafe { weft_name_list_get(l, index, out(*nulls, 1, &mut name)) },
                    "weft_name_list_get",
                );
                let want = if l.is_null() || nulls.null(1) || index >= self.t.list_lens[i] {
                    WEFT_ERROR_INVALID_ARGUMENT
                } else {
                    WEFT_OK
                };
                expect(rc, Some(want), "weft_name_list_get");
                if rc == WEFT_OK {
                    // SAFETY: weft.h: valid as long as the list.
                    unsafe { c_str(name, "weft_name_list_get") };
                }
            }

            Op::ChannelOpen {
                connect,
                slot,
                name,
                timeout,
                opts,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let opts = opts.as_ref().map(ChannelOpts::c);
                let mut h = null_mut();
                let (f, call) = if *connect {
                    (weft_channel_connect as Open, "weft_channel_connect")
                } else {
                    (weft_channel_listen as Open, "weft_channel_listen")
                };
                // SAFETY: NULL or a NUL-terminated name; NULL or local options; NULL or a local.
                let rc = unsafe { f(n, timeout.get(), opt(&opts), out(*nulls, 1, &mut h)) };
                let rc = self.c.made(rc, h, call);
                if rc == WEFT_OK {
                    assert!(
                        base_name_ok(c_part(&name)),
                        "a channel under a name weft.h refuses"
                    );
                    self.put_channel(ix(*slot), h);
                }
            }
            Op::ChannelPair {
                listener,
                connector,
                name,
                listen_timeout,
                connect_timeout,
                listen_opts,
                connect_opts,
                nulls,
            } => {
                let name = name.bytes();
                let lo = listen_opts.as_ref().map(ChannelOpts::c);
                let co = connect_opts.as_ref().map(ChannelOpts::c);
                let (lt, ct) = (
                    (*listen_timeout % 11) as u64,
                    (*connect_timeout % 11) as u64,
                );
                let nulls = *nulls;
                let (name_r, co_r) = (&name, &co);
                let (rc, h, connected) = std::thread::scope(|s| {
                    let peer = s.spawn(move || {
                        let n = if nulls.null(2) {
                            null()
                        } else {
                            name_r.as_ptr().cast()
                        };
                        let mut h = null_mut();
                        let mut c = Calls::new();
                        // SAFETY: NULL or a NUL-terminated name; NULL or options; NULL or a
                        // local.
                        let rc = unsafe {
                            weft_channel_connect(n, ct, opt(co_r), out(nulls, 3, &mut h))
                        };
                        c.made(rc, h, "weft_channel_connect (second thread)");
                        Moved((rc, h))
                    });
                    let n = if nulls.null(0) {
                        null()
                    } else {
                        name.as_ptr().cast()
                    };
                    let mut h = null_mut();
                    // SAFETY: as above.
                    let rc = unsafe { weft_channel_listen(n, lt, opt(&lo), out(nulls, 1, &mut h)) };
                    (rc, h, peer.join().expect("the connecting thread").0)
                });
                let rc = self.c.made(rc, h, "weft_channel_listen (paired)");
                for (rc, h, i) in [
                    (rc, h, ix(*listener)),
                    (connected.0, connected.1, ix(*connector)),
                ] {
                    if rc == WEFT_OK {
                        assert!(
                            base_name_ok(c_part(&name)),
                            "a channel under a name weft.h refuses"
                        );
                        self.put_channel(i, h);
                    }
                }
            }
            Op::ServerBind {
                slot,
                name,
                opts,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let opts = opts.as_ref().map(ChannelOpts::c);
                let mut h = null_mut();
                // SAFETY: NULL or a NUL-terminated name; NULL or local options; NULL or a local.
                let rc = unsafe { weft_server_bind(n, opt(&opts), out(*nulls, 1, &mut h)) };
                let rc = self.c.made(rc, h, "weft_server_bind");
                if rc == WEFT_OK {
                    assert!(
                        base_name_ok(c_part(&name)),
                        "a server under a name weft.h refuses"
                    );
                    let i = ix(*slot);
                    self.vacate(Kind::Server, i);
                    self.t.servers[i] = h;
                    self.t.server_names[i] = name;
                }
            }
            Op::ServerConnect {
                slot,
                name,
                timeout,
                opts,
                nulls,
            } => {
                let name = name.bytes();
                let n = if nulls.null(0) {
                    null()
                } else {
                    name.as_ptr().cast()
                };
                let opts = opts.as_ref().map(ChannelOpts::c);
                let mut h = null_mut();
                // SAFETY: NULL or a NUL-terminated name; NULL or local options; NULL or a local.
                let rc = unsafe {
                    weft_server_connect(n, timeout.get(), opt(&opts), out(*nulls, 1, &mut h))
                };
                let rc = self.c.made(rc, h, "weft_server_connect");
                if rc == WEFT_OK {
                    assert!(
                        base_name_ok(c_part(&name)),
                        "a client of a server named as weft.h refuses"
                    );
                    self.put_channel(ix(*slot), h);
                }
            }
            Op::ServerAccept {
                server,
                how,
                out: o,
                nulls,
            } => {
                let s = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.servers[self.pick(Kind::Server, *server)]
                };
                let mut h: *mut WeftChannel = null_mut();
                let op = out(*nulls, 1, &mut h);
                let any_null = s.is_null() || op.is_null();
                // SAFETY: NULL or a live server; NULL or a local.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_server_accept_timeout(s, ms.get(), op),
                            "weft_server_accept_timeout",
                        ),
                        How::Block if any_null => (weft_server_accept(s, op), "weft_server_accept"),
                        _ => (weft_server_try_accept(s, op), "weft_server_try_accept"),
                    }
                };
                let rc = self.c.made(rc, h, call);
                expect(rc, nulls_refused(any_null), "weft_server_accept");
                if rc == WEFT_OK {
                    self.put_channel(ix(*o), h);
                }
            }
            Op::ServerPair {
                server,
                client,
                accepted,
                name,
                connect_timeout,
                accept,
                accept_timeout,
                opts,
                nulls,
            } => {
                let si = self.pick(Kind::Server, *server);
                let name = match name {
                    Some(n) => n.bytes(),
                    None if !self.t.server_names[si].is_empty() => self.t.server_names[si].clone(),
                    None => Name::Pool(false).bytes(),
                };
                let opts = opts.as_ref().map(ChannelOpts::c);
                let (ct, at) = (
                    (*connect_timeout % 11) as u64,
                    (*accept_timeout % 11) as u64,
                );
                let s = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.servers[si]
                };
                let nulls = *nulls;
                let (name_r, opts_r) = (&name, &opts);
                let (rc, call, h, connected) = std::thread::scope(|scope| {
                    let peer = scope.spawn(move || {
                        let n = if nulls.null(2) {
                            null()
                        } else {
                            name_r.as_ptr().cast()
                        };
                        let mut h = null_mut();
                        let mut c = Calls::new();
                        // SAFETY: NULL or a NUL-terminated name; NULL or options; NULL or a
                        // local.
                        let rc = unsafe {
                            weft_server_connect(n, ct, opt(opts_r), out(nulls, 3, &mut h))
                        };
                        c.made(rc, h, "weft_server_connect (second thread)");
                        Moved((rc, h))
                    });
                    let mut h: *mut WeftChannel = null_mut();
                    let op = out(nulls, 1, &mut h);
                    // The server is NULL or live and used by this thread only; `op` is NULL or
                    // a local.
                    let (rc, call) = match accept {
                        How::Block if s.is_null() || op.is_null() => {
                            // SAFETY: as above; a NULL makes it return at once.
                            (unsafe { weft_server_accept(s, op) }, "weft_server_accept")
                        }
                        How::Try => loop {
                            // SAFETY: as above.
                            let rc = unsafe { weft_server_try_accept(s, op) };
                            let rc = self.c.check(rc, "weft_server_try_accept");
                            if rc != WEFT_ERROR_EMPTY || peer.is_finished() {
                                break (rc, "weft_server_try_accept");
                            }
                            std::thread::sleep(std::time::Duration::from_micros(50));
                        },
                        _ => (
                            // SAFETY: as above.
                            unsafe { weft_server_accept_timeout(s, at, op) },
                            "weft_server_accept_timeout",
                        ),
                    };
                    (rc, call, h, peer.join().expect("the client thread").0)
                });
                let rc = self.c.made(rc, h, call);
                if rc == WEFT_OK {
                    self.put_channel(ix(*accepted), h);
                }
                if connected.0 == WEFT_OK {
                    assert!(
                        base_name_ok(c_part(&name)),
                        "a client of a server named as weft.h refuses"
                    );
                    self.put_channel(ix(*client), connected.1);
                }
            }
            Op::Serve {
                client,
                server,
                data,
                timeout,
            } => {
                let (ci, si) = (
                    self.pick(Kind::Channel, *client),
                    self.pick(Kind::Channel, *server),
                );
                let (c, sv) = (self.t.channels[ci], self.t.channels[si]);
                if ci == si || c.is_null() || sv.is_null() {
                    return;
                }
                // Not the bytes the serving channel lends: the other thread may release them.
                let buf = match data {
                    Data::Lent { kind, slot, .. } if kind % 5 == 2 && ix(*slot) == si => {
                        self.data(&Data::Null(0))
                    }
                    d => self.data(d),
                };
                let ms = (*timeout % 11) as u64;
                let served_lent = self.t.held[si].is_some();
                let sv = Moved(sv);
                let (rc, reply, len, served) = std::thread::scope(|scope| {
                    let peer = scope.spawn(move || {
                        let sv = sv;
                        let mut c = Calls::new();
                        let (mut data, mut len, mut id) = (null(), 0, 0);
                        // SAFETY: a live channel, used by this thread alone until it is joined;
                        // locals.
                        let rc = unsafe {
                            weft_channel_recv_request_timeout(
                                sv.0, ms, &mut data, &mut len, &mut id,
                            )
                        };
                        c.check(rc, "weft_channel_recv_request_timeout (second thread)");
                        if rc != WEFT_OK {
                            return (rc, None);
                        }
                        // SAFETY: weft.h: the request's bytes, valid until replied to.
                        unsafe { touch(data, len, "weft_channel_recv_request_timeout") };
                        // SAFETY: the reply's bytes are the request's own, which weft.h allows.
                        let replied = unsafe { weft_channel_reply(sv.0, data, len) };
                        (
                            rc,
                            Some(c.check(replied, "weft_channel_reply (second thread)")),
                        )
                    });
                    let (mut reply, mut len) = (null(), usize::MAX);
                    // SAFETY: a live channel used by this thread only; the request NULL or
                    // readable for its length; locals.
                    let rc = unsafe {
                        weft_channel_call_timeout(c, buf.ptr, buf.len, ms, &mut reply, &mut len)
                    };
                    (rc, reply, len, peer.join().expect("the serving thread"))
                });
                if served_lent {
                    assert_eq!(
                        served.0, WEFT_ERROR_STATE,
                        "weft_channel_recv_request on a lending channel"
                    );
                }
                let rc = self.c.check(rc, "weft_channel_call_timeout (served)");
                let lent = self.t.held[ci].is_some();
                let want = nulls_refused(buf.refused()).or(lent.then_some(WEFT_ERROR_STATE));
                expect(rc, want, "weft_channel_call_timeout (served)");
                if want.is_none() {
                    sized(
                        rc,
                        buf.len + ID_LEN,
                        self.t.channel_max[ci],
                        "weft_channel_call_timeout (served)",
                    );
                }
                if rc == WEFT_OK {
                    self.lend(
                        ci,
                        Held::Reply,
                        reply,
                        len,
                        "weft_channel_call_timeout (served)",
                    );
                }
            }
            Op::ChannelMaxLen { slot, nulls } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let mut len = 0;
                // SAFETY: NULL or a live channel; NULL or a local.
                let rc = self.c.check(
                    unsafe { weft_channel_max_message_len(c, out(*nulls, 1, &mut len)) },
                    "weft_channel_max_message_len",
                );
                let want = nulls_refused(c.is_null() || nulls.null(1))
                    .or(self.t.held[i].map(|_| WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_channel_max_message_len");
            }
            Op::ChannelSend {
                slot,
                data,
                how,
                nulls,
            } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let buf = self.data(data);
                let lent = self.t.held[i].is_some();
                let returns = c.is_null() || buf.refused() || lent;
                // SAFETY: NULL or a live channel; data NULL or readable for len bytes.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_channel_send_timeout(c, buf.ptr, buf.len, ms.get()),
                            "weft_channel_send_timeout",
                        ),
                        How::Block if returns => {
                            (weft_channel_send(c, buf.ptr, buf.len), "weft_channel_send")
                        }
                        _ => (
                            weft_channel_try_send(c, buf.ptr, buf.len),
                            "weft_channel_try_send",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                let want = nulls_refused(c.is_null() || buf.refused())
                    .or(lent.then_some(WEFT_ERROR_STATE));
                expect(rc, want, "weft_channel_send");
                if want.is_none() {
                    sized(rc, buf.len, self.t.channel_max[i], call);
                }
            }
            Op::ChannelRecv { slot, how, nulls } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let lent = self.t.held[i].is_some();
                let any_null = c.is_null() || nulls.null(1) || nulls.null(2);
                let (mut data, mut len) = (null(), usize::MAX);
                let (d, l) = (out(*nulls, 1, &mut data), out(*nulls, 2, &mut len));
                // SAFETY: NULL or a live channel; NULL or locals.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_channel_recv_timeout(c, ms.get(), d, l),
                            "weft_channel_recv_timeout",
                        ),
                        How::Block if any_null || lent => {
                            (weft_channel_recv(c, d, l), "weft_channel_recv")
                        }
                        _ => (weft_channel_try_recv(c, d, l), "weft_channel_try_recv"),
                    }
                };
                let rc = self.c.check(rc, call);
                expect(
                    rc,
                    nulls_refused(any_null).or(lent.then_some(WEFT_ERROR_STATE)),
                    "weft_channel_recv",
                );
                if rc == WEFT_OK {
                    self.lend(i, Held::Record, data, len, "weft_channel_recv");
                }
            }
            Op::ChannelRelease { slot, nulls } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                // SAFETY: NULL or a live channel.
                let rc = self
                    .c
                    .check(unsafe { weft_channel_release(c) }, "weft_channel_release");
                let want = nulls_refused(c.is_null())
                    .or(self.t.held[i].is_none().then_some(WEFT_ERROR_STATE))
                    .or(Some(WEFT_OK));
                expect(rc, want, "weft_channel_release");
                if rc == WEFT_OK {
                    self.t.held[i] = None;
                }
            }
            Op::ChannelCall {
                slot,
                data,
                timeout,
                nulls,
            } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let buf = self.data(data);
                let lent = self.t.held[i].is_some();
                let refused = c.is_null() || buf.refused() || nulls.null(1) || nulls.null(2);
                let (mut reply, mut len) = (null(), usize::MAX);
                let (d, l) = (out(*nulls, 1, &mut reply), out(*nulls, 2, &mut len));
                // SAFETY: NULL or a live channel; request NULL or readable for its length;
                // NULL or locals.
                let (rc, call) = unsafe {
                    match timeout {
                        None if refused || lent => (
                            weft_channel_call(c, buf.ptr, buf.len, d, l),
                            "weft_channel_call",
                        ),
                        None => (
                            weft_channel_call_timeout(c, buf.ptr, buf.len, 0, d, l),
                            "weft_channel_call_timeout",
                        ),
                        Some(ms) => (
                            weft_channel_call_timeout(c, buf.ptr, buf.len, ms.get(), d, l),
                            "weft_channel_call_timeout",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                let want = nulls_refused(refused).or(lent.then_some(WEFT_ERROR_STATE));
                expect(rc, want, "weft_channel_call");
                if want.is_none() {
                    sized(rc, buf.len + ID_LEN, self.t.channel_max[i], call);
                }
                if rc == WEFT_OK {
                    self.lend(i, Held::Reply, reply, len, "weft_channel_call");
                }
            }
            Op::ChannelRecvRequest { slot, how, nulls } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let lent = self.t.held[i].is_some();
                let any_null = c.is_null() || nulls.null(1) || nulls.null(2) || nulls.null(3);
                let (mut data, mut len, mut id) = (null(), usize::MAX, 0);
                let (d, l, idp) = (
                    out(*nulls, 1, &mut data),
                    out(*nulls, 2, &mut len),
                    out(*nulls, 3, &mut id),
                );
                // SAFETY: NULL or a live channel; NULL or locals.
                let (rc, call) = unsafe {
                    match how {
                        How::Timeout(ms) => (
                            weft_channel_recv_request_timeout(c, ms.get(), d, l, idp),
                            "weft_channel_recv_request_timeout",
                        ),
                        How::Block if any_null || lent => (
                            weft_channel_recv_request(c, d, l, idp),
                            "weft_channel_recv_request",
                        ),
                        _ => (
                            weft_channel_try_recv_request(c, d, l, idp),
                            "weft_channel_try_recv_request",
                        ),
                    }
                };
                let rc = self.c.check(rc, call);
                expect(
                    rc,
                    nulls_refused(any_null).or(lent.then_some(WEFT_ERROR_STATE)),
                    "weft_channel_recv_request",
                );
                if rc == WEFT_OK {
                    self.lend(i, Held::Request, data, len, "weft_channel_recv_request");
                    self.t.request_ids[i] = id;
                }
            }
            Op::ChannelReply { slot, data, nulls } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let buf = self.data(data);
                // SAFETY: NULL or a live channel; data NULL or readable for len bytes (it may
                // lie in the request itself, which weft.h allows).
                let rc = self.c.check(
                    unsafe { weft_channel_reply(c, buf.ptr, buf.len) },
                    "weft_channel_reply",
                );
                if c.is_null() || buf.refused() {
                    expect(
                        rc,
                        Some(WEFT_ERROR_INVALID_ARGUMENT),
                        "weft_channel_reply with a NULL",
                    );
                } else if !matches!(self.t.held[i], Some((Held::Request, _))) {
                    expect(
                        rc,
                        Some(WEFT_ERROR_STATE),
                        "weft_channel_reply without a request",
                    );
                } else {
                    // The request is released whether or not the reply was sent.
                    self.t.held[i] = None;
                    sized(
                        rc,
                        buf.len + ID_LEN,
                        self.t.channel_max[i],
                        "weft_channel_reply",
                    );
                }
            }
            Op::ChannelReplyTo {
                slot,
                id,
                data,
                nulls,
            } => {
                let i = self.pick(Kind::Channel, *slot);
                let c = if nulls.null(0) {
                    null_mut()
                } else {
                    self.t.channels[i]
                };
                let buf = self.data(data);
                let id = id.unwrap_or(self.t.request_ids[i]);
                // SAFETY: NULL or a live channel; data NULL or readable for len bytes.
                let rc = self.c.check(
                    unsafe { weft_channel_reply_to(c, id, buf.ptr, buf.len) },
                    "weft_channel_reply_to",
                );
                let want = nulls_refused(c.is_null() || buf.refused())
                    .or(self.t.held[i].map(|_| WEFT_ERROR_STATE));
                expect(rc, want, "weft_channel_reply_to");
                if want.is_none() {
                    sized(
                        rc,
                        buf.len + ID_LEN,
                        self.t.channel_max[i],
                        "weft_channel_reply_to",
                    );
                }
            }
        }
    }

    fn subscriber_made(
        &mut self,
        rc: i32,
        h: *mut WeftSubscriber,
        name: &[u8],
        slot: u8,
        call: &str,
    ) {
        let rc = self.c.made(rc, h, call);
        if rc == WEFT_OK {
            assert!(
                object_name_ok(c_part(name)),
                "connected to a region named as weft.h refuses"
            );
            let i = ix(slot);
            self.vacate(Kind::Subscriber, i);
            self.t.subscribers[i] = h;
        }
    }

    /// Records what channel `i` lends now, after touching every byte of it.
    fn lend(&mut self, i: usize, kind: Held, data: *const u8, len: usize, call: &str) {
        // SAFETY: weft.h: the message's bytes in place, valid until released.
        unsafe { touch(data, len, call) };
        self.t.held[i] = Some((
            kind,
            Grant {
                ptr: data.cast_mut(),
                len,
            },
        ));
    }
}

/// Caps the size of every file this process makes, and turns the signal the kernel sends on
/// a larger one into a plain error (EFBIG), so that an arbitrary size fails instead of
/// filling the machine's memory.
fn limit_object_size() {
    let limit = libc::rlimit {
        rlim_cur: OBJECT_LIMIT,
        rlim_max: OBJECT_LIMIT,
    };
    // SAFETY: plain system calls with a valid argument; SIG_IGN is a valid disposition.
    unsafe {
        assert_eq!(
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit),
            0,
            "setrlimit(RLIMIT_FSIZE)"
        );
        assert_ne!(
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN),
            libc::SIG_ERR,
            "signal(SIGXFSZ)"
        );
    }
}

fuzz_target!(
    init: remove_objects(),
    |input: Input| {
        // Here rather than in `init`: libFuzzer installs its own SIGXFSZ handler after that.
        static LIMIT: std::sync::Once = std::sync::Once::new();
        LIMIT.call_once(limit_object_size);
        let mut run = Run {
            c: Calls::new(),
            t: Table::new(),
        };
        for op in input.ops.iter().take(MAX_OPS) {
            run.op(op);
        }
        run.release_all(input.owners_first);
        remove_objects();
    }
);
