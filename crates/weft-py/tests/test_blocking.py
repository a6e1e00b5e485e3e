"""Blocking calls release the GIL (other threads run meanwhile) and answer Ctrl-C: a real
child process blocked in each kind of call gets SIGINT and raises KeyboardInterrupt. Timeouts:
None, infinity and anything too large for a Rust `Duration` wait as long as it takes; a
negative or NaN timeout is a ValueError."""

import inspect
import math
import os
import random
import signal
import struct
import threading
import time

import pytest

import weft
from conftest import SHM, Checked, read_line

# Python code that sets up a blocking call, prints "ready", blocks, and reports how it ended.
SETUP = {
    "stream-read": """
w = weft.StreamWriter.create(NAME, 4096)
r = weft.StreamReader.open(NAME)
block = lambda: r.read()
""",
    "stream-write-full": """
w = weft.StreamWriter.create(NAME, 4096)
r = weft.StreamReader.open(NAME)
while True:
    try:
        w.try_write(b"x" * 1000)
    except weft.FullError:
        break
block = lambda: w.write(b"x" * 1000)
""",
    "subscription-recv": """
p = weft.Publisher.create(NAME)
p.register("/t")
s = weft.Subscriber.connect(NAME).subscribe("/t")
block = lambda: s.recv()
""",
    "server-accept": """
srv = weft.Server.bind(NAME)
block = lambda: srv.accept()
""",
    "channel-listen": """
block = lambda: weft.Channel.listen(NAME, 30)
""",
    "publisher-open": """
block = lambda: weft.Publisher.open(NAME, timeout=None)
""",
    "subscribe-wait": """
p = weft.Publisher.create(NAME)
sub = weft.Subscriber.connect(NAME)
block = lambda: sub.subscribe("/never", timeout=None)
""",
}

CHILD = """
import signal, sys, time, weft
# A process started in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then leaves it so: install the handler that raises KeyboardInterrupt, as an
# interactive process has it.
signal.signal(signal.SIGINT, signal.default_int_handler)
NAME = {name!r}
{setup}
print("ready", flush=True)
try:
    block()
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    sys.exit(0)
print("returned", flush=True)
sys.exit(1)
"""


@pytest.mark.parametrize("call", sorted(SETUP))
def test_ctrl_c_interrupts_a_blocking_call(call, name, python_child):
    child = python_child(CHILD.format(name=name, setup=SETUP[call]))
    assert read_line(child.stdout).strip() == "ready", child.stderr.read()
    time.sleep(0.3 + random.random() / 20)  # well inside the call, anywhere in a slice
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    line = read_line(child.stdout, timeout=10).split()
    assert line and line[0] == "interrupted", (line, child.stderr.read())
    latency = float(line[1]) - sent
    assert child.wait(timeout=10) == 0
    # Not a speed assertion: only that the signal is answered, not left until the call ends
    # (the slices are 50 ms; the report prints the latency seen).
    assert latency < 5.0
    print(f"{call}: KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT")


def interrupted_in(call, after=0.3):
    """Runs `call()` in this (the main) thread with a real SIGINT sent to the process `after`
    seconds in, as Ctrl-C would; asserts that it raised KeyboardInterrupt and returns how long
    after the signal it did."""
    # A process started in the background by a non-interactive shell inherits SIGINT ignored
    # (see CHILD): install the handler that raises KeyboardInterrupt for the call.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sent = []
    timer = threading.Timer(after, lambda: (sent.append(time.monotonic()),
                                            os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        return time.monotonic() - sent[0]
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("side", ["listen", "connect"])
def test_ctrl_c_ends_a_channel_wait_and_frees_its_name(side, name):
    latency = interrupted_in(lambda: getattr(weft.Channel, side)(name, timeout=30))
    assert latency < 5.0  # answered at once, not at the end of the 30 s
    # The call on its thread ended with the interrupt and took what it made with it.
    left = sorted(f.name for f in SHM.glob(f"weft.{name}*"))
    assert left == [], left
    # The name is free at once: a listen and a connect under it pair up straight away.
    started = time.monotonic()
    out = {}
    listener = Checked(target=lambda: out.setdefault("ch", weft.Channel.listen(name, timeout=5)))
    listener.start()
    with weft.Channel.connect(name, timeout=5) as client:
        listener.join()
        assert time.monotonic() - started < 1.0
        with out["ch"] as served:
            client.send(b"after Ctrl-C")
            assert bytes(served.recv(timeout=5)) == b"after Ctrl-C"
    left = sorted(f.name for f in SHM.glob(f"weft.{name}*"))
    assert left == [], left


def test_ctrl_c_ends_a_server_connect_and_frees_its_slot(name):
    with weft.Server.bind(name, slots=1) as srv:
        # The server does not accept: the connect waits for its answer.
        latency = interrupted_in(lambda: weft.Server.connect(name, timeout=30))
        assert latency < 5.0
        # The interrupted client left: nothing to accept, and the one slot takes the next.
        with pytest.raises(weft.EmptyError):
            srv.try_accept()
        started = time.monotonic()
        out = {}
        client = Checked(target=lambda: out.setdefault("c", weft.Server.connect(name, 5)))
        client.start()
        with srv.accept(timeout=5) as served:
            client.join()
            assert time.monotonic() - started < 1.0
            with out["c"] as c:
                c.send(b"after Ctrl-C")
                assert bytes(served.recv(timeout=5)) == b"after Ctrl-C"
    left = sorted(f.name for f in SHM.glob(f"weft.{name}*"))
    assert left == [], left


def test_ctrl_c_ends_open_or_create_waiting_for_a_creator(name):
    """A creator between its exclusive create and its header leaves an empty file, and
    `open_or_create` waits up to a second for it to name itself. Ctrl-C ends that wait and
    leaves the file alone: nothing is decided before the whole wait has passed."""
    half_made = SHM / f"weft.{name}"
    half_made.touch(mode=0o600)
    latency = interrupted_in(lambda: weft.Publisher.open_or_create(name), after=0.3)
    assert latency < 5.0
    assert half_made.stat().st_size == 0  # not replaced
    # Waited out, the leftover (no creator ever named itself) is replaced.
    p = weft.Publisher.open_or_create(name, blocks=8)
    assert p.created and half_made.stat().st_size > 0
    p.close()


def test_other_threads_run_while_one_blocks(name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    got = []
    reader = Checked(target=lambda: got.append(bytes(r.read(timeout=10))))
    reader.start()
    time.sleep(0.2)
    # The reader is blocked in read(); if it held the GIL, nothing below could run.
    spins = 0
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:
        spins += 1
    w.write(b"from the main thread")
    reader.join()
    assert got == [b"from the main thread"]
    assert spins > 10_000, f"the main thread ran only {spins} loop iterations"


def test_a_subscriber_thread_blocks_while_the_publisher_thread_runs(name):
    pub = weft.Publisher.create(name)
    topic = pub.register("/t")
    s = weft.Subscriber.connect(name).subscribe("/t")
    got = []

    def receive():
        for _ in range(100):
            with s.recv(timeout=10) as m:
                got.append(bytes(m))

    t = Checked(target=receive)
    t.start()
    for i in range(100):
        pub.publish(topic, i.to_bytes(4, "little"))
        if i % 10 == 0:
            time.sleep(0.01)
    t.join()
    assert got == [i.to_bytes(4, "little") for i in range(100)]


def test_two_threads_cannot_use_one_handle_at_once(name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    started = threading.Event()

    def block():
        started.set()
        with pytest.raises(weft.TimeoutError):
            r.read(timeout=1)

    t = Checked(target=block)
    t.start()
    started.wait()
    time.sleep(0.1)
    with pytest.raises(RuntimeError, match="busy"):
        r.try_read()
    t.join()
    w.write(b"ok")
    assert bytes(r.try_read()) == b"ok"


# ---- waits inside pub/sub calls -------------------------------------------------------------


def region_word(region, offset):
    """Reads and writes the 8-byte word at `offset` of the region's file, as a peer process
    scribbling on the mapping would (docs/protocol.md, "Region")."""
    fd = os.open(SHM / f"weft.{region}", os.O_RDWR)

    class Word:
        def get(self):
            return struct.unpack("<Q", os.pread(fd, 8, offset))[0]

        def set(self, value):
            assert os.pwrite(fd, struct.pack("<Q", value), offset) == 8

        def close(self):
            os.close(fd)

    return Word()


def ring_stamp_offset(region, topic, slot):
    """The offset of the stamp of `slot` in the descriptor ring of topic entry `topic`, from the
    counts in the configuration line (docs/protocol.md, "Region")."""
    fd = os.open(SHM / f"weft.{region}", os.O_RDONLY)
    try:
        parts, held, topics, slots = struct.unpack("<4Q", os.pread(fd, 32, 128))
    finally:
        os.close(fd)
    line = lambda x: (x + 63) // 64 * 64  # noqa: E731
    holdings = 512 + 2 * 64 * parts
    table = line(holdings + 4 * parts * held)
    pubmap = table + (256 + 64 + 64) * topics
    rings = line(pubmap + 8 * math.ceil(parts / 64) * topics)
    return rings + 16 * (slots * topic + slot)


def stalled_publisher(name):
    """A publisher (participant 0) with topics "/stalled" and "/free", whose next publish on
    "/stalled" finds its slot still claimed one lap ago by a live publisher (itself): that
    publish waits for the claim timeout (1 s), then raises weft.TimeoutError. Returns the
    publisher, both topics and a function that ends the stall."""
    pub = weft.Publisher.create(
        name, participants=2, topics=4, ring_slots=2, blocks=16, block_size=64
    )
    role = region_word(name, 512 + 2 * 64)  # participant 0's extension: role (4 bytes)
    assert role.get() & 0xFFFF_FFFF == 1, "participant 0 is the publisher"
    role.close()
    stalled, free = pub.register("/stalled"), pub.register("/free")
    assert [pub.publish(stalled, b"0"), pub.publish(stalled, b"1")] == [0, 1]
    stamp = region_word(name, ring_stamp_offset(name, 0, 0))
    assert stamp.get() == 1, "slot 0 of /stalled holds sequence 0, committed (stamp seq + 1)"
    # `writing(p, seq)`: participant 0 is writing sequence 0 (bit 63 | p << 40 | seq).
    stamp.set(1 << 63)

    def unstall():
        stamp.set(1)
        stamp.close()

    return pub, stalled, free, unstall


def ticks_during(call, waits_at_least):
    """Runs `call` on a thread of its own and, meanwhile, notes the time on this thread about
    every millisecond. Returns the notes taken well inside the call (more than 50 ms after it
    began and before it ended): none if the call kept the GIL while it waited. The call must
    last at least `waits_at_least` seconds (that it waited is part of what is tested)."""
    span = []

    def run():
        start = time.monotonic()
        try:
            call()
        finally:
            span.extend((start, time.monotonic()))

    ticks = []
    t = Checked(target=run)
    t.start()
    while t.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    t.join()
    start, end = span
    assert end - start >= waits_at_least, f"the call returned after {end - start:.3f} s"
    return [x for x in ticks if start + 0.05 < x < end - 0.05]


# `bytes` is read in place without the GIL; another buffer is copied into the block with it.
@pytest.mark.parametrize("data", [b"2", bytearray(b"2")], ids=["bytes", "bytearray"])
def test_a_publish_waiting_for_a_stalled_claim_lets_other_threads_run(data, name):
    pub, stalled, _, unstall = stalled_publisher(name)

    def publish():
        with pytest.raises(weft.TimeoutError):
            pub.publish(stalled, data)

    ticks = ticks_during(publish, waits_at_least=0.9)
    assert ticks, "no other thread ran while publish waited for the claim (it kept the GIL)"
    unstall()
    assert pub.publish(stalled, data) == 2
    with weft.Subscriber.connect(name) as sub, sub.subscribe("/stalled", history=1) as s:
        assert bytes(s.recv(timeout=10)) == b"2"


def test_a_loan_publish_waiting_for_a_stalled_claim_lets_other_threads_run(name):
    pub, stalled, _, unstall = stalled_publisher(name)
    loan = pub.loan(stalled)
    loan.write(b"2")
    loan.set_len(1)

    def publish():
        with pytest.raises(weft.TimeoutError):
            loan.publish()

    ticks = ticks_during(publish, waits_at_least=0.9)
    assert ticks, "no other thread ran while Loan.publish waited for the claim"
    unstall()
    assert pub.publish(stalled, b"2") == 2


def test_a_register_waiting_for_the_registration_lock_lets_other_threads_run(name):
    pub, _, _, unstall = stalled_publisher(name)
    unstall()
    # The region's registration lock (offset 256: holder + 1) names participant 0, alive (the
    # publisher itself: a live holder is waited for even by its own participant).
    lock = region_word(name, 256)
    assert lock.get() == 0
    lock.set(1)

    def register():
        with pytest.raises(weft.TimeoutError):
            pub.register("/new")

    try:
        ticks = ticks_during(register, waits_at_least=0.9)
    finally:
        lock.set(0)
        lock.close()
    assert ticks, "no other thread ran while register waited for the registration lock"
    assert pub.register("/new").name == "/new"


# Calls that wait for their publisher while another thread's publish holds it (every use of a
# publisher and its loans is serialised by one lock in the bindings).
BEHIND_A_PUBLISH = {
    "publish": lambda pub, free, loan: pub.publish(free, b"x"),
    "loan": lambda pub, free, loan: pub.loan(free).abandon(),
    "loan-abandon": lambda pub, free, loan: loan.abandon(),
    "register": lambda pub, free, loan: pub.register("/more"),
    "stats": lambda pub, free, loan: pub.stats(free),
}


@pytest.mark.parametrize("call", sorted(BEHIND_A_PUBLISH))
def test_a_call_waiting_for_its_publisher_lets_other_threads_run(call, name):
    pub, stalled, free, unstall = stalled_publisher(name)
    other_loan = pub.loan(free)
    held = pub.loan(stalled)
    held.set_len(0)

    def hold():
        # Loan.publish holds the publisher while it waits for the claim (about 1 s).
        with pytest.raises(weft.TimeoutError):
            held.publish()

    holder = Checked(target=hold)
    holder.start()
    # The holder waits about 1 s; the call below starts 0.2 s into it and must wait 0.3 s.
    time.sleep(0.2)
    ticks = ticks_during(
        lambda: BEHIND_A_PUBLISH[call](pub, free, other_loan), waits_at_least=0.3
    )
    holder.join()
    assert ticks, f"no other thread ran while {call} waited for the publisher"
    unstall()
    assert pub.publish(stalled, b"2") == 2


# ---- timeouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "timeout",
    [1e300, math.inf, 2.0**64, 1e19, 10**400],
    ids=["1e300", "inf", "2^64", "1e19", "10^400"],
)
def test_a_timeout_too_large_for_a_duration_waits_as_long_as_it_takes(timeout, name):
    # The calls that wait on a thread take the huge timeout; their peers a finite one, so
    # that a failure on the thread cannot leave the main thread waiting for ever.
    # Sliced waits (`Until`): a stream, pub/sub.
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name, timeout=timeout)
    got = []
    reader = Checked(target=lambda: got.append(bytes(r.read(timeout=timeout))))
    reader.start()
    w.write(b"late", timeout=timeout)
    reader.join()
    assert got == [b"late"]

    pub = weft.Publisher.create(name + "-ps")
    topic = pub.register("/t")
    sub = weft.Subscriber.connect(name + "-ps", timeout=timeout)
    s = sub.subscribe("/t", timeout=timeout)
    pub.publish(topic, b"m")
    assert bytes(s.recv(timeout=timeout)) == b"m"

    # Waits handed to Rust whole, as a `Duration`: a channel and a server.
    out = {}

    def listen():
        out["listener"] = weft.Channel.listen(name + "-ch", timeout)

    listener = Checked(target=listen)
    listener.start()
    ch = weft.Channel.connect(name + "-ch", 10)
    listener.join()
    ch.send(b"ping", timeout=timeout)
    assert bytes(out["listener"].recv(timeout=timeout)) == b"ping"

    srv = weft.Server.bind(name + "-srv")

    def connect():
        out["client"] = weft.Server.connect(name + "-srv", timeout)

    client = Checked(target=connect)
    client.start()
    served = srv.accept(timeout=10)
    client.join()
    served.send(b"hello", timeout=timeout)
    assert bytes(out["client"].recv(timeout=timeout)) == b"hello"


@pytest.mark.parametrize(
    "timeout",
    [-1.0, -1e300, -math.inf, math.nan, -(10**400)],
    ids=["-1", "-1e300", "-inf", "nan", "-10^400"],
)
def test_a_negative_or_nan_timeout_is_a_value_error(timeout, name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    w.write(b"there")  # refused even when nothing would have to wait
    pub = weft.Publisher.create(name + "-ps")
    pub.register("/t")
    sub = weft.Subscriber.connect(name + "-ps")
    calls = {
        "StreamReader.read": lambda: r.read(timeout=timeout),
        "StreamWriter.write": lambda: w.write(b"x", timeout=timeout),
        "StreamReader.open": lambda: weft.StreamReader.open(name + "-absent", timeout=timeout),
        "Subscriber.connect": lambda: weft.Subscriber.connect(name + "-ps", timeout=timeout),
        "Subscriber.subscribe": lambda: sub.subscribe("/t", timeout=timeout),
        "Channel.listen": lambda: weft.Channel.listen(name + "-ch", timeout),
        "Server.connect": lambda: weft.Server.connect(name + "-srv", timeout),
    }
    for what, call in calls.items():
        try:
            call()
        except ValueError as e:
            assert "timeout must be a non-negative number" in str(e), (what, e)
        else:
            pytest.fail(f"{what} accepted timeout={timeout}")
    assert bytes(r.read(timeout=0)) == b"there"


def timeout_calls(name):
    """Every call that takes a timeout, by qualified name, made where it ends at once whatever
    the timeout (a closed handle, a released request, an invalid name; `weft.subscribe`
    succeeds at once), so that only the conversion of the timeout itself is looked at."""
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    pub = weft.Publisher.create(name + "-ps")
    sub = weft.Subscriber.connect(name + "-ps")
    pub.register("/t")
    s = sub.subscribe("/t")
    srv = weft.Server.bind(name + "-srv")
    out = {}
    client = Checked(target=lambda: out.setdefault("c", weft.Server.connect(name + "-srv", 10)))
    client.start()
    ch = srv.accept(timeout=10)
    client.join()
    out["c"].send_request(b"q")
    req = ch.recv_request(timeout=10)
    req.release()
    for handle in (w, r, s, sub, srv, ch, out["c"], pub):
        handle.close()
    # `weft.subscribe` checks its URI first: it is given one it can subscribe to at once.
    live = weft.Publisher.create(name + "-live")
    live.register("/t")
    bad = "bad/name"
    return {
        "StreamReader.open": lambda t: weft.StreamReader.open(bad, timeout=t),
        "StreamReader.read": lambda t: r.read(timeout=t),
        "StreamWriter.write": lambda t: w.write(b"x", timeout=t),
        "StreamWriter.write_deferred": lambda t: w.write_deferred(b"x", timeout=t),
        "StreamWriter.reserve": lambda t: w.reserve(1, timeout=t),
        "Subscriber.connect": lambda t: weft.Subscriber.connect(bad, timeout=t),
        "Publisher.open": lambda t: weft.Publisher.open(bad, timeout=t),
        "Subscriber.subscribe": lambda t: sub.subscribe("/t", timeout=t),
        "Subscription.recv": lambda t: s.recv(timeout=t),
        "Channel.listen": lambda t: weft.Channel.listen(bad, t),
        "Channel.connect": lambda t: weft.Channel.connect(bad, t),
        "Channel.send": lambda t: ch.send(b"x", timeout=t),
        "Channel.reserve": lambda t: ch.reserve(1, timeout=t),
        "Channel.recv": lambda t: ch.recv(timeout=t),
        "Channel.call": lambda t: ch.call(b"x", timeout=t),
        "Channel.send_request": lambda t: ch.send_request(b"x", timeout=t),
        "Channel.wait_reply": lambda t: ch.wait_reply(1, timeout=t),
        "Channel.recv_request": lambda t: ch.recv_request(timeout=t),
        "Channel.reply": lambda t: ch.reply(1, b"x", timeout=t),
        "Request.reply": lambda t: req.reply(b"x", timeout=t),
        "Server.connect": lambda t: weft.Server.connect(bad, t),
        "Server.accept": lambda t: srv.accept(timeout=t),
        # (The publisher is held by the call, or its region would go with this function.)
        "subscribe": lambda t: weft.subscribe(f"{live.region}/t", timeout=t).close(),
    }


def test_every_timeout_takes_any_int(name):
    # An int too large for a float is a timeout like any other: as long as it takes when
    # positive (not OverflowError), refused when negative, by every call that takes one.
    calls = timeout_calls(name)
    taking = set()
    for attr in weft.__all__:
        obj = getattr(weft, attr)
        members = vars(obj).items() if inspect.isclass(obj) else [(None, obj)]
        for member, fn in members:
            try:
                params = inspect.signature(getattr(obj, member) if member else fn).parameters
            except (TypeError, ValueError):
                continue
            if "timeout" in params:
                taking.add(f"{attr}.{member}" if member else attr)
    assert taking == set(calls), "a call takes a timeout that this test does not try"
    for what, call in calls.items():
        for timeout in (10**400, 2**64, 0, -(10**400), -1):
            try:
                call(timeout)
            except (ValueError, weft.Error) as e:
                refused = "timeout must be a non-negative number" in str(e)
                assert refused == (timeout < 0), (what, timeout, e)
            else:
                assert timeout >= 0 and what == "subscribe", (what, timeout)
