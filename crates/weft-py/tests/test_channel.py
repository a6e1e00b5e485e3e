"""Request/response from Python: one-to-one channels, a server with many clients, calls with
correlation ids, requests and replies read in place."""

import threading

import numpy as np
import pytest

import weft
from conftest import Checked, in_mapping, numpy_address


def serve(ch, n, answer=lambda b: bytes(reversed(b))):
    """Answers `n` requests on `ch`."""
    for _ in range(n):
        req = ch.recv_request(timeout=10)
        body = bytes(req)
        req.reply(answer(body))


def test_listen_connect_raw_records(name):
    out = {}

    def listener():
        ch = weft.Channel.listen(name, 10)
        with ch.recv(timeout=10) as g:
            out["got"] = bytes(g)
        ch.send(b"pong")
        ch.close()

    t = Checked(target=listener)
    t.start()
    ch = weft.Channel.connect(name, 10)
    ch.send(b"ping")
    with ch.recv(timeout=10) as g:
        assert bytes(g) == b"pong"
    t.join()
    assert out["got"] == b"ping"
    with pytest.raises(weft.ClosedError):
        ch.recv(timeout=10)


def test_server_calls(name):
    server = weft.Server.bind(name)

    def client(i, results):
        ch = weft.Server.connect(name, 10)
        for k in range(20):
            req = f"client {i} call {k}".encode()
            with ch.call(req, timeout=10) as reply:
                results.append(bytes(reply) == bytes(reversed(req)))
        ch.close()

    results = []
    clients = [Checked(target=client, args=(i, results)) for i in range(3)]
    for c in clients:
        c.start()
    conns = [server.accept(timeout=10) for _ in range(3)]
    servers = [Checked(target=serve, args=(c, 20)) for c in conns]
    for s in servers:
        s.start()
    for t in clients + servers:
        t.join()
    assert results == [True] * 60
    with pytest.raises(weft.EmptyError):
        server.try_accept()


def test_request_and_reply_are_read_in_place(name):
    server = weft.Server.bind(name)
    seen = {}

    def server_side():
        ch = server.accept(timeout=10)
        req = ch.recv_request(timeout=10)
        a = np.frombuffer(req, dtype=np.float64)
        seen["in_place"] = in_mapping(numpy_address(a), f"{name}.", prefix=True)
        seen["sum"] = float(a.sum())
        with pytest.raises(BufferError):
            req.reply(b"too early")  # the array still reads the request
        del a
        req.reply(np.array([seen["sum"]], dtype=np.float64))

    t = Checked(target=server_side)
    t.start()
    ch = weft.Server.connect(name, 10)
    reply = ch.call(np.arange(10, dtype=np.float64), timeout=10)
    t.join()
    assert seen["in_place"], "the server reads the request in the shared stream"
    assert np.frombuffer(reply, dtype=np.float64)[0] == 45.0
    assert in_mapping(reply._address, f"{name}.", prefix=True), "the reply too"
    assert reply.id >= 1
    with pytest.raises(RuntimeError, match="busy"):
        ch.call(b"again")  # the reply borrows the channel
    reply.release()


def test_a_reply_made_from_its_own_request(name):
    server = weft.Server.bind(name)

    def server_side():
        ch = server.accept(timeout=10)
        req = ch.recv_request(timeout=10)
        # The request itself as the reply (an echo): copied before it is released.
        req.reply(req)

    t = Checked(target=server_side)
    t.start()
    ch = weft.Server.connect(name, 10)
    reply = ch.call(b"abc", timeout=10)
    t.join()
    assert bytes(reply) == b"abc"
    reply.release()


def test_several_requests_in_flight(name):
    server = weft.Server.bind(name)

    def server_side():
        ch = server.accept(timeout=10)
        reqs = []
        for _ in range(3):
            r = ch.recv_request(timeout=10)
            reqs.append((r.id, bytes(r)))
            r.release()
        for rid, body in reversed(reqs):
            ch.reply(rid, body.upper())

    t = Checked(target=server_side)
    t.start()
    ch = weft.Server.connect(name, 10)
    ids = [ch.send_request(w) for w in (b"a", b"bb", b"ccc")]
    assert ch.in_flight == 3
    assert bytes(ch.wait_reply(ids[1], timeout=10)) == b"BB"
    assert bytes(ch.wait_reply(ids[0], timeout=10)) == b"A"
    assert bytes(ch.wait_reply(ids[2], timeout=10)) == b"CCC"
    t.join()
    with pytest.raises(weft.InvalidArgumentError):
        ch.wait_reply(999, timeout=1)


def test_a_call_that_times_out_forgets_its_request(name):
    """Nothing can collect the reply of a call that timed out (its id never reached the
    caller): the request is forgotten, its late reply dropped on arrival, and the next call
    gets its own reply."""
    server = weft.Server.bind(name)
    late_sent = threading.Event()

    def server_side():
        ch = server.accept(timeout=10)
        r = ch.recv_request(timeout=10)
        assert bytes(r) == b"slow"
        late_sent.wait(10)
        r.reply(b"late")
        r = ch.recv_request(timeout=10)
        r.reply(bytes(r).upper())

    t = Checked(target=server_side)
    t.start()
    ch = weft.Server.connect(name, 10)
    with pytest.raises(weft.TimeoutError):
        ch.call(b"slow", timeout=0.05)
    assert ch.in_flight == 0
    late_sent.set()
    assert bytes(ch.call(b"next", timeout=10)) == b"NEXT"
    assert ch.in_flight == 0
    t.join()


def test_reserve_on_a_channel(name):
    def listener():
        ch = weft.Channel.listen(name, 10)
        with ch.reserve(4) as g:
            np.frombuffer(g, dtype=np.uint8)[:] = [1, 2, 3, 4]
        ch.recv(timeout=10).release()

    t = Checked(target=listener)
    t.start()
    ch = weft.Channel.connect(name, 10)
    with ch.recv(timeout=10) as g:
        assert bytes(g) == b"\x01\x02\x03\x04"
    ch.send(b"done")
    t.join()


def test_channel_errors(name):
    with pytest.raises(weft.TimeoutError):
        weft.Channel.listen(name, 0.1)
    with pytest.raises(weft.NotFoundError):
        weft.Server.connect(name + "-absent", 0.1)
    with pytest.raises(weft.InvalidNameError):
        weft.Server.bind("bad/name")


def test_with_blocks_that_raise_on_a_channel(name):
    res = {}
    t = Checked(target=lambda: res.setdefault("c", weft.Channel.connect(name, 10)))
    t.start()
    ch = weft.Channel.listen(name, 10)
    t.join()
    client = res["c"]
    client.send_request(b"req")
    with pytest.raises(KeyError):
        with ch:
            with ch.recv_request(timeout=10) as req:
                a = np.frombuffer(req, dtype=np.uint8)
                raise KeyError("user")
    assert ch.closed and req.released
    assert a.tobytes() == b"req"
    with pytest.raises(weft.TimeoutError):
        client.recv(timeout=0.05)  # the listening end stays while the request is held
    del a
    with pytest.raises(weft.ClosedError):
        client.recv(timeout=5)
    client.close()
