//! `weft.Channel` (request/response over a pair of streams), `weft.Server` (one channel per
//! client) and what a channel hands out: `weft.Reply` and `weft.Request` (both read in place),
//! plus the stream's `ReadGrant` and `WriteGrant` for raw records.

use crate::blocking::{Timeout, Until, off_thread, sliced};
use crate::errors::IntoPy;
use crate::input::Input;
use crate::owned::{Access, Lent, Owned};
use crate::stream::{ReadGrant, WriteGrant};
use crate::view::{View, grant_methods};
use crate::wait_strategy;
use pyo3::prelude::*;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use weft::channel::{
    Channel as RsChannel, ChannelOptions, Reply as RsReply, Request as RsRequest, RequestId,
    Server as RsServer,
};

fn options(capacity: usize, wait: &str) -> PyResult<ChannelOptions> {
    Ok(ChannelOptions::new()
        .capacity(capacity)
        .wait(wait_strategy(wait)?))
}

/// The answer to a call, read in place (buffer protocol, read-only); `id` is its request's.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Reply {
    view: View<Lent<RsChannel, RsReply<'static>>>,
    id: u64,
}

impl Reply {
    /// # Safety
    /// As [`Lent::new`]: `reply` borrows only the channel behind `access`.
    unsafe fn lend(access: Access<RsChannel>, reply: RsReply<'static>) -> Reply {
        let (ptr, len, id) = (reply.as_ptr().cast_mut(), reply.len(), reply.id().0);
        // SAFETY: the caller's promise.
        let lent = unsafe { Lent::new(access, reply) };
        // SAFETY: the reply's bytes are in the incoming stream's mapping (kept by the channel,
        // kept by the holder) and not reused before the reply is dropped; or, for a reply that
        // was copied aside, in its own vector, owned by the reply in the holder (moving the
        // reply moves the vector's handle, not its heap bytes).
        let view = unsafe { View::new(lent, ptr, len, len, false, "Reply") };
        Reply { view, id }
    }
}

grant_methods!(
    Reply,
    |slf| {
        slf.view.release()?;
    },
    {
        /// The id of the request this answers.
        #[getter]
        fn id(&self) -> u64 {
            self.id
        }

        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.Reply id={} of {n} bytes>", self.id),
                Err(_) => format!("<weft.Reply id={} (released)>", self.id),
            }
        }
    }
);

/// A request received on a channel, read in place (buffer protocol, read-only), with its
/// correlation `id`. Answer with `reply(data)`, or note the id, release it and answer later
/// with `Channel.reply(id, data)`.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Request {
    view: View<Lent<RsChannel, RsRequest<'static>>>,
    id: u64,
}

impl Request {
    /// # Safety
    /// As [`Lent::new`]: `request` borrows only the channel behind `access`.
    unsafe fn lend(access: Access<RsChannel>, request: RsRequest<'static>) -> Request {
        let (ptr, len, id) = (request.as_ptr().cast_mut(), request.len(), request.id().0);
        // SAFETY: the caller's promise.
        let lent = unsafe { Lent::new(access, request) };
        // SAFETY: the request's bytes are in the incoming stream's mapping (kept by the
        // channel, kept by the holder) and not reused before the request is dropped.
        let view = unsafe { View::new(lent, ptr, len, len, false, "Request") };
        Request { view, id }
    }
}

grant_methods!(
    Request,
    |slf| {
        slf.view.release()?;
    },
    {
        /// The request's correlation id.
        #[getter]
        fn id(&self) -> u64 {
            self.id
        }

        /// Releases the request and sends `data` as its reply, waiting for room at most
        /// `timeout` seconds. Raises BufferError while buffers exported from it are alive.
        #[pyo3(signature = (data, timeout = None))]
        fn reply(
            &self,
            py: Python<'_>,
            data: &Bound<'_, PyAny>,
            timeout: Option<Timeout>,
        ) -> PyResult<()> {
            let until = Until::new(timeout);
            // A buffer holds an export of its object, which may be this very request
            // (`req.reply(req)`, an echo) and would make its release below fail:
            // such input is copied and its export let go first (`detached` copies it anyway).
            let input = match Input::new(data)? {
                buffer @ Input::Buffer(_) => Err(buffer.detached().into_owned()),
                bytes => Ok(bytes),
            };
            let lent = self.view.take()?;
            // The request is released here; the channel stays ours for the reply.
            let mut access = lent.finish();
            let ch = access.get();
            let borrowed;
            let body: &[u8] = match &input {
                Ok(bytes) => {
                    borrowed = bytes.detached();
                    &borrowed
                }
                Err(copy) => copy,
            };
            let id = RequestId(self.id);
            sliced(py, until, |slice| ch.reply_timeout(id, body, slice))
        }

        fn __repr__(&self) -> String {
            match self.view.len() {
                Ok(n) => format!("<weft.Request id={} of {n} bytes>", self.id),
                Err(_) => format!("<weft.Request id={} (released)>", self.id),
            }
        }
    }
);

/// One end of a request/response channel: two byte streams, one per direction, zero-copy both
/// ways (`Channel.listen` / `Channel.connect`, or `Server.accept` / `Server.connect`).
#[pyclass(frozen, module = "weft")]
pub(crate) struct Channel {
    inner: Arc<Owned<RsChannel>>,
    name: String,
    max_message_len: usize,
}

impl Channel {
    pub(crate) fn new(ch: RsChannel) -> Channel {
        Channel {
            name: ch.name().into(),
            max_message_len: ch.max_message_len(),
            inner: Owned::new(ch, "Channel"),
        }
    }

    fn send_inner(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        until: Option<Until>,
    ) -> PyResult<()> {
        let input = Input::new(data)?;
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let len = input.len();
        let mut grant = match until {
            Some(until) => sliced(py, until, move |slice| {
                // SAFETY: `access` outlives the grant, which is committed below before it drops;
                // each attempt's borrow ends with the attempt.
                unsafe { ptr.get() }.reserve_timeout(len, slice)
            })?,
            // SAFETY: as above.
            None => unsafe { ptr.get() }.try_reserve(len).py()?,
        };
        let (src, len) = input.raw();
        if len > 0 {
            // SAFETY: the grant holds `len` writable bytes; `src` is `len` readable bytes of a
            // Python object we hold, read while attached, and not in this fresh room.
            unsafe { std::ptr::copy_nonoverlapping(src, grant.as_mut_ptr(), len) };
        }
        grant.commit(len).py()
    }

    fn recv_inner(&self, py: Python<'_>, until: Option<Until>) -> PyResult<ReadGrant> {
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let grant = match until {
            Some(until) => sliced(py, until, move |slice| {
                // SAFETY: `access` is alive until the grant is stored with it below; each
                // attempt's borrow ends with the attempt.
                unsafe { ptr.get() }.recv_timeout(slice)
            })?,
            // SAFETY: as above.
            None => unsafe { ptr.get() }.try_recv().py()?,
        };
        // SAFETY: the grant was made from the channel behind `access`.
        Ok(unsafe { ReadGrant::lend(access, grant) })
    }

    fn request_inner(&self, py: Python<'_>, until: Option<Until>) -> PyResult<Request> {
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let req = match until {
            Some(until) => sliced(py, until, move |slice| {
                // SAFETY: as in recv_inner.
                unsafe { ptr.get() }.recv_request_timeout(slice)
            })?,
            // SAFETY: as above.
            None => unsafe { ptr.get() }.try_recv_request().py()?,
        };
        // SAFETY: the request was made from the channel behind `access`.
        Ok(unsafe { Request::lend(access, req) })
    }

    fn wait_inner(&self, py: Python<'_>, id: u64, until: Until) -> PyResult<Reply> {
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let reply = sliced(py, until, move |slice| {
            // SAFETY: `access` is alive until the reply is stored with it below; each attempt's
            // borrow ends with the attempt.
            unsafe { ptr.get() }.wait_reply_timeout(RequestId(id), slice)
        })?;
        // SAFETY: the reply was made from the channel behind `access`.
        Ok(unsafe { Reply::lend(access, reply) })
    }

    fn send_request_inner(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        until: Until,
    ) -> PyResult<u64> {
        let input = Input::new(request)?;
        let body = input.detached();
        let mut access = self.inner.acquire()?;
        let ch = access.get();
        let id = sliced(py, until, |slice| ch.send_request_timeout(&body, slice))?;
        Ok(id.0)
    }
}

#[pymethods]
impl Channel {
    /// The listening end of the one-to-one channel `name`: waits up to `timeout` seconds for
    /// the other end to `connect`. `capacity` is the size of the stream this end writes.
    ///
    /// Ctrl-C ends the wait at once, and the listen with it: nothing is left under the name,
    /// which the next `listen` takes straight away.
    #[staticmethod]
    #[pyo3(signature = (name, timeout, *, capacity = 65536, wait = "adaptive"))]
    fn listen(
        py: Python<'_>,
        name: &str,
        timeout: Timeout,
        capacity: usize,
        wait: &str,
    ) -> PyResult<Channel> {
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = options(capacity, wait)?.cancelled_by(cancel.clone());
        let (t, n) = (timeout.duration(), name.to_owned());
        off_thread(py, "listen", Some(cancel), move || {
            RsChannel::listen_with(&n, t, &opts)
        })
        .map(Channel::new)
    }

    /// The connecting end of the one-to-one channel `name`: waits up to `timeout` seconds for
    /// the listening end. Ctrl-C as for `listen`.
    #[staticmethod]
    #[pyo3(signature = (name, timeout, *, capacity = 65536, wait = "adaptive"))]
    fn connect(
        py: Python<'_>,
        name: &str,
        timeout: Timeout,
        capacity: usize,
        wait: &str,
    ) -> PyResult<Channel> {
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = options(capacity, wait)?.cancelled_by(cancel.clone());
        let (t, n) = (timeout.duration(), name.to_owned());
        off_thread(py, "connect", Some(cancel), move || {
            RsChannel::connect_with(&n, t, &opts)
        })
        .map(Channel::new)
    }

    /// The name of the stream this end writes.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The largest raw record this end can send (a request or reply is 8 bytes less).
    #[getter]
    fn max_message_len(&self) -> usize {
        self.max_message_len
    }

    /// Requests sent from this end that have no reply yet.
    #[getter]
    fn in_flight(&self) -> PyResult<usize> {
        Ok(self.inner.acquire()?.get().in_flight())
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Sends `data` (any contiguous bytes-like object) as one raw record, waiting for room at
    /// most `timeout` seconds.
    #[pyo3(signature = (data, timeout = None))]
    fn send(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<()> {
        self.send_inner(py, data, Some(Until::new(timeout)))
    }

    /// As `send`, but raises `weft.FullError` instead of waiting.
    fn try_send(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.send_inner(py, data, None)
    }

    /// Reserves `length` bytes of the outgoing stream to write in place (a `WriteGrant`).
    #[pyo3(signature = (length, timeout = None))]
    fn reserve(
        &self,
        py: Python<'_>,
        length: usize,
        timeout: Option<Timeout>,
    ) -> PyResult<WriteGrant> {
        let until = Until::new(timeout);
        let mut access = self.inner.acquire()?;
        let ptr = access.ptr();
        let grant = sliced(py, until, move |slice| {
            // SAFETY: `access` is alive until the grant is stored with it below; each
            // attempt's borrow ends with the attempt.
            unsafe { ptr.get() }.reserve_timeout(length, slice)
        })?;
        // SAFETY: the grant was made from the channel behind `access`.
        Ok(unsafe { WriteGrant::lend(access, grant) })
    }

    /// The next raw record, borrowed in place (a `ReadGrant`), waiting at most `timeout`
    /// seconds.
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<Timeout>) -> PyResult<ReadGrant> {
        self.recv_inner(py, Some(Until::new(timeout)))
    }

    /// As `recv`, but raises `weft.EmptyError` instead of waiting.
    fn try_recv(&self, py: Python<'_>) -> PyResult<ReadGrant> {
        self.recv_inner(py, None)
    }

    /// Sends `request` and waits for its reply (matched by correlation id), at most `timeout`
    /// seconds in all. The reply is read in place. A call that ends without its reply (a
    /// timeout, an interrupt) forgets the request: its reply is dropped when it comes (use
    /// `send_request` and `wait_reply` to keep a late reply).
    #[pyo3(signature = (request, timeout = None))]
    fn call(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<Reply> {
        let until = Until::new(timeout);
        let id = self.send_request_inner(py, request, until)?;
        self.wait_inner(py, id, until).inspect_err(|_| {
            // The caller never sees `id`: nothing could collect its reply. Already answered
            // and gone (an error after the reply was read), it is not in flight: nothing to do.
            if let Ok(mut access) = self.inner.acquire() {
                let _ = access.get().forget(RequestId(id));
            }
        })
    }

    /// Sends `request` with a fresh correlation id and returns the id without waiting for the
    /// reply (several requests may be in flight; their replies may come in any order).
    #[pyo3(signature = (request, timeout = None))]
    fn send_request(
        &self,
        py: Python<'_>,
        request: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<u64> {
        self.send_request_inner(py, request, Until::new(timeout))
    }

    /// Waits at most `timeout` seconds for the reply to request `id`.
    #[pyo3(signature = (id, timeout = None))]
    fn wait_reply(&self, py: Python<'_>, id: u64, timeout: Option<Timeout>) -> PyResult<Reply> {
        self.wait_inner(py, id, Until::new(timeout))
    }

    /// The next request (a `Request`, read in place), waiting at most `timeout` seconds.
    #[pyo3(signature = (timeout = None))]
    fn recv_request(&self, py: Python<'_>, timeout: Option<Timeout>) -> PyResult<Request> {
        self.request_inner(py, Some(Until::new(timeout)))
    }

    /// As `recv_request`, but raises `weft.EmptyError` instead of waiting.
    fn try_recv_request(&self, py: Python<'_>) -> PyResult<Request> {
        self.request_inner(py, None)
    }

    /// Sends `data` as the reply to request `id` (replies may go in any order).
    #[pyo3(signature = (id, data, timeout = None))]
    fn reply(
        &self,
        py: Python<'_>,
        id: u64,
        data: &Bound<'_, PyAny>,
        timeout: Option<Timeout>,
    ) -> PyResult<()> {
        let until = Until::new(timeout);
        let input = Input::new(data)?;
        let body = input.detached();
        let mut access = self.inner.acquire()?;
        let ch = access.get();
        sliced(py, until, |slice| {
            ch.reply_timeout(RequestId(id), &body, slice)
        })
    }

    /// Leaves the channel: the peer drains what was sent, then gets `weft.ClosedError`.
    fn close(&self) -> PyResult<()> {
        self.inner.close()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it. When the block raised, it raises nothing itself: while a grant taken from
    /// it is held (or another thread's call runs) the handle stays open, and closes when that
    /// ends.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.exit(args, || self.close())
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Channel {:?}>", self.name)
    }
}

/// A request/response server under a name: `accept()` hands one `Channel` to each client
/// that `Server.connect`s.
#[pyclass(frozen, module = "weft")]
pub(crate) struct Server {
    inner: Arc<Owned<RsServer>>,
    name: String,
}

impl Server {
    fn accept_inner(&self, py: Python<'_>, until: Option<Until>) -> PyResult<Channel> {
        let mut access = self.inner.acquire()?;
        let server = access.get();
        let ch = match until {
            Some(until) => sliced(py, until, |slice| server.accept_timeout(slice))?,
            None => server.try_accept().py()?,
        };
        Ok(Channel::new(ch))
    }
}

#[pymethods]
impl Server {
    /// Binds the server `name` (replacing a dead server's object under it). `capacity` is the
    /// size of the stream the server writes to each client; `slots`, how many clients may be
    /// connected at once.
    #[staticmethod]
    #[pyo3(signature = (name, *, capacity = 65536, slots = 64, wait = "adaptive"))]
    fn bind(
        py: Python<'_>,
        name: &str,
        capacity: usize,
        slots: u32,
        wait: &str,
    ) -> PyResult<Server> {
        let opts = options(capacity, wait)?.slots(slots);
        let s = py.detach(|| RsServer::bind_with(name, &opts)).py()?;
        Ok(Server {
            name: s.name().into(),
            inner: Owned::new(s, "Server"),
        })
    }

    /// Connects to the server `name` as a client, waiting up to `timeout` seconds for the
    /// server, a free slot and the accept. Returns the client's `Channel` (use `call`).
    /// Ctrl-C ends the wait at once, and the connect with it: its slot is free again, and the
    /// server never accepts it.
    #[staticmethod]
    #[pyo3(signature = (name, timeout, *, capacity = 65536, wait = "adaptive"))]
    fn connect(
        py: Python<'_>,
        name: &str,
        timeout: Timeout,
        capacity: usize,
        wait: &str,
    ) -> PyResult<Channel> {
        let cancel = Arc::new(AtomicBool::new(false));
        let opts = options(capacity, wait)?.cancelled_by(cancel.clone());
        let (t, n) = (timeout.duration(), name.to_owned());
        off_thread(py, "connect", Some(cancel), move || {
            RsServer::connect_with(&n, t, &opts)
        })
        .map(Channel::new)
    }

    /// The server's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Waits at most `timeout` seconds (None: as long as it takes) for the next client and
    /// returns the channel to it.
    #[pyo3(signature = (timeout = None))]
    fn accept(&self, py: Python<'_>, timeout: Option<Timeout>) -> PyResult<Channel> {
        self.accept_inner(py, Some(Until::new(timeout)))
    }

    /// As `accept`, but raises `weft.EmptyError` if no client is waiting.
    fn try_accept(&self, py: Python<'_>) -> PyResult<Channel> {
        self.accept_inner(py, None)
    }

    /// Whether it is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Stops serving (channels already accepted go on).
    fn close(&self) -> PyResult<()> {
        self.inner.close()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes it. When the block raised, it raises nothing itself: while a grant taken from
    /// it is held (or another thread's call runs) the handle stays open, and closes when that
    /// ends.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.exit(args, || self.close())
    }

    /// Refuses: a handle cannot cross to another process (open the object by name there).
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::not_picklable())
    }

    fn __repr__(&self) -> String {
        format!("<weft.Server {:?}>", self.name)
    }
}
