//! Request/response: `weft_channel_*` and `weft_server_*`.
//!
//! A channel lends at most one incoming message at a time (a raw record, a reply, or a
//! request), kept in the handle ([`Lent`]) until released or replied to.

use crate::error::{
    Failure, Out, Poison, Res, WeftStatus, c_bytes, c_name, free_handle, guard, guard_handles,
    handles, into_handle, millis, options, wait_strategy,
};
use crate::lend::Lent;
use std::ffi::{CStr, c_char};
use weft::channel::{Channel, ChannelOptions, Reply, Request, RequestId, Server};
use weft::stream::ReadGrant;

/// Options of a channel or a server. Zero in any field means the default.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct WeftChannelOptions {
    /// Data bytes of the stream this side writes (default 64 KiB); the largest message is
    /// about half of it.
    pub capacity: usize,
    /// How blocking calls wait: a `WEFT_WAIT_*` code.
    pub wait: i32,
    /// Liveness timeout for a peer /proc cannot see, in milliseconds (default 1000).
    pub liveness_timeout_ms: u64,
    /// Connection slots of a server, 1 to 256 (default 64); ignored elsewhere.
    pub slots: u32,
}

impl WeftChannelOptions {
    /// The options behind a nullable pointer.
    ///
    /// # Safety
    /// `p` is NULL or valid for reading.
    unsafe fn from_ptr(p: *const WeftChannelOptions) -> Res<ChannelOptions> {
        // SAFETY: NULL or readable (contract); only integer fields.
        let o = unsafe { options(p, "options")? };
        let mut c = ChannelOptions::new();
        if o.capacity != 0 {
            c = c.capacity(o.capacity);
        }
        if let Some(w) = wait_strategy(o.wait)? {
            c = c.wait(w);
        }
        if o.liveness_timeout_ms != 0 {
            c = c.liveness_timeout(millis(o.liveness_timeout_ms));
        }
        if o.slots != 0 {
            c = c.slots(o.slots);
        }
        Ok(c)
    }
}

/// What a channel lends.
#[derive(Debug)]
enum Held {
    /// A raw record from `recv`.
    Record(ReadGrant<'static>),
    /// The reply of a `call`.
    Reply(Reply<'static>),
    /// A request from `recv_request`, until it is answered or released.
    Request(Request<'static>),
}

impl Held {
    fn bytes(&self) -> &[u8] {
        match self {
            Held::Record(g) => g,
            Held::Reply(r) => r,
            Held::Request(r) => r,
        }
    }
}

/// One end of a request/response channel, with the message it may be lending.
///
/// Thread-safety: may move to another thread (with what it lends); never used from two
/// threads at once.
#[derive(Debug)]
pub struct WeftChannel {
    cell: Lent<Channel, Held>,
    poison: Poison,
}

/// A server that hands one channel to each client that connects.
///
/// Thread-safety: may move to another thread; never used from two threads at once. The
/// channels it accepts are independent of it (each may be served on its own thread).
#[derive(Debug)]
pub struct WeftServer {
    server: Server,
    poison: Poison,
}

handles!(WeftChannel, WeftServer);

fn channel_handle(c: Channel) -> *mut WeftChannel {
    into_handle(WeftChannel {
        cell: Lent::new(c),
        poison: Poison::default(),
    })
}

/// # Safety
/// `name` is a NUL-terminated string; `opts` is NULL or readable; `out` is valid for
/// writing a pointer.
unsafe fn open(
    name: *const c_char,
    timeout_ms: u64,
    opts: *const WeftChannelOptions,
    out: *mut *mut WeftChannel,
    make: fn(&str, std::time::Duration, &ChannelOptions) -> weft::Result<Channel>,
) -> WeftStatus {
    guard(|| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (name, opts, out) = unsafe {
            (
                c_name(name, "name")?,
                WeftChannelOptions::from_ptr(opts)?,
                Out::new(out, "channel")?,
            )
        };
        let c = make(name, millis(timeout_ms), &opts)?;
        out.set(channel_handle(c));
        Ok(())
    })
}

/// The listening end of the one-to-one channel `name`, waiting up to `timeout_ms` for the
/// connecting end. `opts` may be NULL.
///
/// Errors: `WEFT_ERROR_INVALID_NAME` (at most 158 bytes); `WEFT_ERROR_IN_USE` if a live
/// process listens under the name; `WEFT_ERROR_TIMEOUT` if nobody connected; the errors of
/// creating and opening a stream.
///
/// # Safety
/// `name` is a NUL-terminated string; `opts` is NULL or readable; `channel` is valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_listen(
    name: *const c_char,
    timeout_ms: u64,
    opts: *const WeftChannelOptions,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { open(name, timeout_ms, opts, channel, Channel::listen_with) }
}

/// The connecting end of the one-to-one channel `name`, waiting up to `timeout_ms` for the
/// listening end.
///
/// Errors: as `weft_channel_listen`.
///
/// # Safety
/// As `weft_channel_listen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_connect(
    name: *const c_char,
    timeout_ms: u64,
    opts: *const WeftChannelOptions,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { open(name, timeout_ms, opts, channel, Channel::connect_with) }
}

/// Connects to the server `name` as a client, waiting up to `timeout_ms` for the server to
/// appear and accept. The channel's `weft_channel_call` sends requests to the server.
///
/// Errors: `WEFT_ERROR_NOT_FOUND` if no server appeared in time; `WEFT_ERROR_FULL` if every
/// slot stayed taken; `WEFT_ERROR_TIMEOUT` if it did not accept in time;
/// `WEFT_ERROR_PEER_DEAD` if it is dead; `WEFT_ERROR_CLOSED` if it refused or left.
///
/// # Safety
/// As `weft_channel_listen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_connect(
    name: *const c_char,
    timeout_ms: u64,
    opts: *const WeftChannelOptions,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { open(name, timeout_ms, opts, channel, Server::connect_with) }
}

/// Closes the channel and sets `*channel` to NULL. A message still lent is released first
/// (a request is released unanswered).
///
/// # Safety
/// `channel` is NULL or points to NULL or to a live channel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_close(channel: *mut *mut WeftChannel) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(channel, "channel") }
}

/// The largest raw record this side can send (a request or reply is 8 bytes less).
///
/// # Safety
/// `channel` is NULL or a live channel handle; `len` is valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_max_message_len(
    channel: *mut WeftChannel,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(c"weft_channel_max_message_len", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (c, out) = unsafe { (cx.handle_mut(channel, "channel")?, Out::new(len, "len")?) };
        out.set(c.cell.owner("max_message_len")?.max_message_len());
        Ok(())
    })
}

/// How a call waits.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Never,
    Ms(u64),
}

/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
unsafe fn send(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (c, data) = unsafe {
            (
                cx.handle_mut(channel, "channel")?,
                c_bytes(data, len, "data")?,
            )
        };
        let c = c.cell.owner("send")?;
        match how {
            Wait::Forever => c.send(data)?,
            Wait::Never => c.try_send(data)?,
            Wait::Ms(ms) => c.send_timeout(data, millis(ms))?,
        }
        Ok(())
    })
}

/// Sends `len` bytes at `data` as one raw record, waiting for room (backpressure).
///
/// Errors: `WEFT_ERROR_TOO_LARGE` at once; `WEFT_ERROR_PEER_DEAD`; `WEFT_ERROR_CLOSED`;
/// `WEFT_ERROR_STATE` while a message is lent.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_send(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { send(c"weft_channel_send", channel, data, len, Wait::Forever) }
}

/// As `weft_channel_send`, but `WEFT_ERROR_FULL` instead of waiting.
///
/// # Safety
/// As `weft_channel_send`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_try_send(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { send(c"weft_channel_try_send", channel, data, len, Wait::Never) }
}

/// As `weft_channel_send`, waiting at most `timeout_ms`.
///
/// # Safety
/// As `weft_channel_send`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_send_timeout(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
    timeout_ms: u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        send(
            c"weft_channel_send_timeout",
            channel,
            data,
            len,
            Wait::Ms(timeout_ms),
        )
    }
}

/// Lends a message made by `make` and writes out its bytes.
///
/// # Safety
/// As `Lent::lend`: `make` only builds the message from the channel it is given and keeps
/// no reference to it.
unsafe fn lend_bytes(
    c: &mut WeftChannel,
    what: &str,
    data: Out<*const u8>,
    len: Out<usize>,
    make: impl FnOnce(&'static mut Channel) -> Res<Held>,
) -> Res<()> {
    // SAFETY: `make` is as `Lent::lend` requires (this function's contract).
    let held = unsafe { c.cell.lend(what, make)? };
    let bytes = held.bytes();
    data.set(bytes.as_ptr());
    len.set(bytes.len());
    Ok(())
}

/// # Safety
/// `channel` is NULL or a live channel handle; `data` and `len` are valid for writing.
unsafe fn recv(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (c, data, len) = unsafe {
            (
                cx.handle_mut(channel, "channel")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
            )
        };
        // SAFETY: the closure only builds the message from the channel.
        unsafe {
            lend_bytes(c, "recv", data, len, |c| {
                Ok(Held::Record(match how {
                    Wait::Forever => c.recv()?,
                    Wait::Never => c.try_recv()?,
                    Wait::Ms(ms) => c.recv_timeout(millis(ms))?,
                }))
            })
        }
    })
}

/// Waits for the next raw record and lends it in place (`*data`, `*len`), valid until
/// `weft_channel_release`.
///
/// Errors: `WEFT_ERROR_CLOSED` once the peer left and everything was read;
/// `WEFT_ERROR_PEER_DEAD` once it died; `WEFT_ERROR_STATE` while a message is lent.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `data` and `len` are valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_recv(
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { recv(c"weft_channel_recv", channel, data, len, Wait::Forever) }
}

/// As `weft_channel_recv`, but `WEFT_ERROR_EMPTY` instead of waiting.
///
/// # Safety
/// As `weft_channel_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_try_recv(
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { recv(c"weft_channel_try_recv", channel, data, len, Wait::Never) }
}

/// As `weft_channel_recv`, waiting at most `timeout_ms`.
///
/// # Safety
/// As `weft_channel_recv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_recv_timeout(
    channel: *mut WeftChannel,
    timeout_ms: u64,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv(
            c"weft_channel_recv_timeout",
            channel,
            data,
            len,
            Wait::Ms(timeout_ms),
        )
    }
}

/// Releases the lent message (a record, a reply, or a request left unanswered).
///
/// Errors: `WEFT_ERROR_STATE` if nothing is lent.
///
/// # Safety
/// `channel` is NULL or a live channel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_release(channel: *mut WeftChannel) -> WeftStatus {
    guard_handles(c"weft_channel_release", |cx| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let c = unsafe { cx.handle_mut(channel, "channel")? };
        if c.cell.release() {
            Ok(())
        } else {
            Err(Failure::state("release: no message is lent"))
        }
    })
}

/// # Safety
/// `channel` is NULL or a live channel handle; `request` is NULL or readable for
/// `request_len` bytes; `data` and `len` are valid for writing.
unsafe fn call(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    request: *const u8,
    request_len: usize,
    timeout: Option<u64>,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (c, request, data, len) = unsafe {
            (
                cx.handle_mut(channel, "channel")?,
                c_bytes(request, request_len, "request")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
            )
        };
        // SAFETY: the closure only builds the message from the channel.
        unsafe {
            lend_bytes(c, "call", data, len, |c| {
                Ok(Held::Reply(match timeout {
                    None => c.call(request)?,
                    // Nothing in this API collects a late reply: a later call drops it.
                    Some(ms) => c.call_timeout_forget(request, millis(ms))?,
                }))
            })
        }
    })
}

/// Sends `request` and waits for its reply (matched by correlation id), lent in place
/// (`*data`, `*len`) until `weft_channel_release`.
///
/// Errors: as `weft_channel_send` and `weft_channel_recv`; `WEFT_ERROR_CORRUPT` for a reply
/// with an id nothing asked for.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `request` is NULL or readable for
/// `request_len` bytes; `data` and `len` are valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_call(
    channel: *mut WeftChannel,
    request: *const u8,
    request_len: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        call(
            c"weft_channel_call",
            channel,
            request,
            request_len,
            None,
            data,
            len,
        )
    }
}

/// As `weft_channel_call`, giving up after `timeout_ms` in all (`WEFT_ERROR_TIMEOUT`). The
/// request is then forgotten: a reply that comes later is dropped by the later
/// `weft_channel_call` or `weft_channel_call_timeout` on this channel that reads it (the
/// next one, unless the server answers out of order), never returned by one.
/// `weft_channel_recv` knows nothing of calls and returns it as a record (8 bytes of id
/// first): do not mix raw receives with calls on one channel.
///
/// # Safety
/// As `weft_channel_call`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_call_timeout(
    channel: *mut WeftChannel,
    request: *const u8,
    request_len: usize,
    timeout_ms: u64,
    data: *mut *const u8,
    len: *mut usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        call(
            c"weft_channel_call_timeout",
            channel,
            request,
            request_len,
            Some(timeout_ms),
            data,
            len,
        )
    }
}

/// # Safety
/// `channel` is NULL or a live channel handle; `data`, `len` and `id` are valid for writing.
unsafe fn recv_request(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
    id: *mut u64,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (c, data, len, id) = unsafe {
            (
                cx.handle_mut(channel, "channel")?,
                Out::new(data, "data")?,
                Out::new(len, "len")?,
                Out::new(id, "id")?,
            )
        };
        // SAFETY: the closure only builds the message from the channel.
        unsafe {
            lend_bytes(c, "recv_request", data, len, |c| {
                Ok(Held::Request(match how {
                    Wait::Forever => c.recv_request()?,
                    Wait::Never => c.try_recv_request()?,
                    Wait::Ms(ms) => c.recv_request_timeout(millis(ms))?,
                }))
            })
        }?;
        match c.cell.held() {
            Some(Held::Request(r)) => id.set(r.id().0),
            _ => unreachable!("a request was lent just above"),
        }
        Ok(())
    })
}

/// Waits for the next request and lends it in place (`*data`, `*len`) with its correlation
/// id (`*id`). Answer it with `weft_channel_reply` (which releases it), or release it with
/// `weft_channel_release` and answer later with `weft_channel_reply_to`.
///
/// Errors: as `weft_channel_recv`; `WEFT_ERROR_CORRUPT` for a record shorter than its id.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `data`, `len` and `id` are valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_recv_request(
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
    id: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_request(
            c"weft_channel_recv_request",
            channel,
            data,
            len,
            id,
            Wait::Forever,
        )
    }
}

/// As `weft_channel_recv_request`, but `WEFT_ERROR_EMPTY` instead of waiting.
///
/// # Safety
/// As `weft_channel_recv_request`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_try_recv_request(
    channel: *mut WeftChannel,
    data: *mut *const u8,
    len: *mut usize,
    id: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_request(
            c"weft_channel_try_recv_request",
            channel,
            data,
            len,
            id,
            Wait::Never,
        )
    }
}

/// As `weft_channel_recv_request`, waiting at most `timeout_ms`.
///
/// # Safety
/// As `weft_channel_recv_request`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_recv_request_timeout(
    channel: *mut WeftChannel,
    timeout_ms: u64,
    data: *mut *const u8,
    len: *mut usize,
    id: *mut u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        recv_request(
            c"weft_channel_recv_request_timeout",
            channel,
            data,
            len,
            id,
            Wait::Ms(timeout_ms),
        )
    }
}

/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
unsafe fn reply(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: every pointer is NULL or as the entry point's `# Safety` requires; the
        // NULL and misaligned ones are refused. `data` may alias the request's bytes in
        // shared memory: both are only read until the reply is written, into other memory.
        let c = unsafe { cx.handle_mut(channel, "channel")? };
        let lent = matches!(c.cell.held(), Some(Held::Request(_)));
        // SAFETY: as above.
        let data = match unsafe { c_bytes(data, len, "data") } {
            Ok(data) => data,
            Err(refused) => {
                // Refused bytes release the lent request all the same, as documented (the
                // C++ wrapper counts on it: it gave up its claim on the request already).
                if lent {
                    c.cell.release();
                }
                return Err(refused);
            }
        };
        if !lent {
            return Err(Failure::state("reply: no request is lent"));
        }
        // SAFETY: the request is consumed by its reply just below, before the cell is used
        // again.
        let Some(Held::Request(request)) = (unsafe { c.cell.take() }) else {
            unreachable!("checked above");
        };
        // Each form consumes the request: it is released whether the reply goes or not.
        match how {
            Wait::Forever => request.reply(data)?,
            Wait::Never => request.try_reply(data)?,
            Wait::Ms(ms) => request.reply_timeout(data, millis(ms))?,
        }
        Ok(())
    })
}

/// Answers the lent request with `len` bytes at `data`, waiting for room (backpressure),
/// and releases it (also when sending fails, or `data` and `len` are refused). `data` may
/// point into the request itself.
///
/// Errors: `WEFT_ERROR_STATE` if no request is lent (nothing, or a record or a reply);
/// as `weft_channel_send`.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_reply(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { reply(c"weft_channel_reply", channel, data, len, Wait::Forever) }
}

/// As `weft_channel_reply`, but `WEFT_ERROR_FULL` instead of waiting. The request is
/// released either way: note its id first to answer later with `weft_channel_reply_to`.
///
/// # Safety
/// As `weft_channel_reply`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_try_reply(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { reply(c"weft_channel_try_reply", channel, data, len, Wait::Never) }
}

/// As `weft_channel_reply`, waiting at most `timeout_ms` for room (`WEFT_ERROR_TIMEOUT`).
/// The request is released either way: note its id first to answer later with
/// `weft_channel_reply_to`.
///
/// # Safety
/// As `weft_channel_reply`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_reply_timeout(
    channel: *mut WeftChannel,
    data: *const u8,
    len: usize,
    timeout_ms: u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reply(
            c"weft_channel_reply_timeout",
            channel,
            data,
            len,
            Wait::Ms(timeout_ms),
        )
    }
}

/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
unsafe fn reply_to(
    entry: &'static CStr,
    channel: *mut WeftChannel,
    id: u64,
    data: *const u8,
    len: usize,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (c, data) = unsafe {
            (
                cx.handle_mut(channel, "channel")?,
                c_bytes(data, len, "data")?,
            )
        };
        let c = c.cell.owner("reply_to")?;
        let id = RequestId(id);
        match how {
            Wait::Forever => c.reply(id, data)?,
            Wait::Never => c.try_reply(id, data)?,
            Wait::Ms(ms) => c.reply_timeout(id, data, millis(ms))?,
        }
        Ok(())
    })
}

/// Sends `len` bytes at `data` as the reply to the request `id` (replies may go in any
/// order), waiting for room (backpressure). Nothing may be lent.
///
/// Errors: `WEFT_ERROR_STATE` while a message is lent; as `weft_channel_send`.
///
/// # Safety
/// `channel` is NULL or a live channel handle; `data` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_reply_to(
    channel: *mut WeftChannel,
    id: u64,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reply_to(
            c"weft_channel_reply_to",
            channel,
            id,
            data,
            len,
            Wait::Forever,
        )
    }
}

/// As `weft_channel_reply_to`, but `WEFT_ERROR_FULL` instead of waiting.
///
/// # Safety
/// As `weft_channel_reply_to`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_try_reply_to(
    channel: *mut WeftChannel,
    id: u64,
    data: *const u8,
    len: usize,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reply_to(
            c"weft_channel_try_reply_to",
            channel,
            id,
            data,
            len,
            Wait::Never,
        )
    }
}

/// As `weft_channel_reply_to`, waiting at most `timeout_ms` for room (`WEFT_ERROR_TIMEOUT`).
///
/// # Safety
/// As `weft_channel_reply_to`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_channel_reply_to_timeout(
    channel: *mut WeftChannel,
    id: u64,
    data: *const u8,
    len: usize,
    timeout_ms: u64,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        reply_to(
            c"weft_channel_reply_to_timeout",
            channel,
            id,
            data,
            len,
            Wait::Ms(timeout_ms),
        )
    }
}

/// Binds the server `name` (`opts` may be NULL). The rendezvous of a dead server under the
/// name is replaced.
///
/// Errors: `WEFT_ERROR_INVALID_NAME` (at most 158 bytes); `WEFT_ERROR_IN_USE` if a live
/// server holds the name; `WEFT_ERROR_INVALID_ARGUMENT` for a slot count outside 1 to 256
/// or a stream capacity no stream can have (as `weft_channel_listen` refuses it); the
/// validation errors if another file holds the name; `WEFT_ERROR_IO`.
///
/// # Safety
/// `name` is a NUL-terminated string; `opts` is NULL or readable; `server` is valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_bind(
    name: *const c_char,
    opts: *const WeftChannelOptions,
    server: *mut *mut WeftServer,
) -> WeftStatus {
    guard(|| {
        // SAFETY: every pointer is NULL or as this function's `# Safety` requires; the
        // NULL and misaligned ones are refused before any use.
        let (name, opts, out) = unsafe {
            (
                c_name(name, "name")?,
                WeftChannelOptions::from_ptr(opts)?,
                Out::new(server, "server")?,
            )
        };
        let s = Server::bind_with(name, &opts)?;
        out.set(into_handle(WeftServer {
            server: s,
            poison: Poison::default(),
        }));
        Ok(())
    })
}

/// Closes the server and sets `*server` to NULL. Accepted channels stay open.
///
/// # Safety
/// `server` is NULL or points to NULL or to a live server handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_close(server: *mut *mut WeftServer) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`.
    unsafe { free_handle(server, "server") }
}

/// # Safety
/// `server` is NULL or a live server handle; `channel` is valid for writing a pointer.
unsafe fn accept(
    entry: &'static CStr,
    server: *mut WeftServer,
    channel: *mut *mut WeftChannel,
    how: Wait,
) -> WeftStatus {
    guard_handles(entry, |cx| {
        // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
        // NULL and misaligned pointers are refused before any use.
        let (s, out) = unsafe {
            (
                cx.handle_mut(server, "server")?,
                Out::new(channel, "channel")?,
            )
        };
        let c = match how {
            Wait::Forever => s.server.accept()?,
            Wait::Never => s.server.try_accept()?,
            Wait::Ms(ms) => s.server.accept_timeout(millis(ms))?,
        };
        out.set(channel_handle(c));
        Ok(())
    })
}

/// Waits for the next client and sets `*channel` to a new channel to it.
///
/// Errors: `WEFT_ERROR_CORRUPT`; `WEFT_ERROR_IO`.
///
/// # Safety
/// `server` is NULL or a live server handle; `channel` is valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_accept(
    server: *mut WeftServer,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { accept(c"weft_server_accept", server, channel, Wait::Forever) }
}

/// As `weft_server_accept`, but `WEFT_ERROR_EMPTY` if no client is waiting.
///
/// # Safety
/// As `weft_server_accept`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_try_accept(
    server: *mut WeftServer,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe { accept(c"weft_server_try_accept", server, channel, Wait::Never) }
}

/// As `weft_server_accept`, waiting at most `timeout_ms` (`WEFT_ERROR_TIMEOUT`).
///
/// # Safety
/// As `weft_server_accept`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn weft_server_accept_timeout(
    server: *mut WeftServer,
    timeout_ms: u64,
    channel: *mut *mut WeftChannel,
) -> WeftStatus {
    // SAFETY: the caller's contract, forwarded from the entry point's `# Safety`;
    // NULL and misaligned pointers are refused before any use.
    unsafe {
        accept(
            c"weft_server_accept_timeout",
            server,
            channel,
            Wait::Ms(timeout_ms),
        )
    }
}
