"""Pub/sub from Python: regions, topics, loans written in place, samples read in place, the
buffer rules for both, modes, history, lag, errors."""

import os
import threading
import time

import numpy as np
import pytest

import weft
from conftest import SHM, in_mapping, numpy_address


@pytest.fixture
def region(name):
    pub = weft.Publisher.create(name, blocks=64, block_size=4096, ring_slots=16)
    sub = weft.Subscriber.connect(name)
    yield pub, sub
    sub.close()
    pub.close()


def test_publish_and_receive_in_order_with_sequences(region):
    pub, sub = region
    topic = pub.register("/prices/AAPL")
    assert topic.name == "/prices/AAPL"
    s = sub.subscribe("/prices/AAPL")
    seqs = [pub.publish(topic, f"tick {i}".encode()) for i in range(10)]
    assert seqs == list(range(10))
    for i in range(10):
        with s.recv(timeout=5) as m:
            assert bytes(m) == f"tick {i}".encode()
            assert m.seq == i
    with pytest.raises(weft.EmptyError):
        s.try_recv()
    with pytest.raises(weft.TimeoutError):
        s.recv(timeout=0.05)


def test_loan_is_written_in_place_and_published(region, name):
    pub, sub = region
    topic = pub.register("/tensor")
    s = sub.subscribe("/tensor")
    loan = pub.loan(topic)
    assert len(loan) == pub.max_len == 4096
    a = np.frombuffer(loan, dtype=np.float32)
    assert a.flags.writeable
    assert in_mapping(numpy_address(a), name), "the loan is the block in shared memory"
    a[:] = np.linspace(0, 1, 1024, dtype=np.float32)
    del a
    loan.set_len(400)
    seq = loan.publish()
    assert loan.released
    m = s.recv(timeout=5)
    assert m.seq == seq and len(m) == 400
    got = np.frombuffer(m, dtype=np.float32)
    assert in_mapping(numpy_address(got), name), "the sample is read in place"
    assert not got.flags.writeable
    assert (got == np.linspace(0, 1, 1024, dtype=np.float32)[:100]).all()


def test_sample_release_rules(region):
    pub, sub = region
    topic = pub.register("/t")
    s = sub.subscribe("/t")
    pub.publish(topic, b"0123456789abcdef")
    m = s.recv(timeout=5)
    a = np.frombuffer(m, dtype=np.uint8)
    mv = memoryview(m)
    with pytest.raises(BufferError):
        m.release()
    del a
    with pytest.raises(BufferError):
        m.release()
    mv.release()
    m.release()
    with pytest.raises(ValueError):
        memoryview(m)
    with pytest.raises(ValueError):
        bytes(m)
    with pytest.raises(ValueError):
        len(m)
    assert m.seq == 0, "metadata stays readable"


def test_samples_hold_their_blocks_until_released(name):
    pub = weft.Publisher.create(name, blocks=4, block_size=64, ring_slots=2)
    sub = weft.Subscriber.connect(name)
    topic = pub.register("/t")
    s = sub.subscribe("/t")
    held = []
    for i in range(2):
        pub.publish(topic, bytes([i]))
        held.append(s.recv(timeout=5))
    # Two blocks held by samples, two referenced by the ring's two slots: the pool is empty.
    pub.publish(topic, b"x")
    pub.publish(topic, b"y")
    with pytest.raises(weft.FullError):
        pub.publish(topic, b"z")
    assert [bytes(m) for m in held] == [b"\x00", b"\x01"]
    for m in held:
        m.release()
    pub.publish(topic, b"z")


def test_loan_context_publishes_or_returns_the_block(region):
    pub, sub = region
    topic = pub.register("/ctx")
    s = sub.subscribe("/ctx")
    with pub.loan(topic) as loan:
        loan.write(b"in place")
        loan.set_len(8)
    with pytest.raises(ZeroDivisionError):
        with pub.loan(topic) as loan:
            loan.write(b"never")
            1 / 0
    assert bytes(s.recv(timeout=5)) == b"in place"
    with pytest.raises(weft.EmptyError):
        s.try_recv()


def test_loan_rules(region):
    pub, _ = region
    topic = pub.register("/rules")
    loan = pub.loan(topic)
    mv = memoryview(loan)
    with pytest.raises(BufferError):
        loan.set_len(3)
    with pytest.raises(BufferError):
        loan.publish()
    mv[:3] = b"abc"
    mv.release()
    loan.set_len(3)
    with pytest.raises(ValueError):
        loan.set_len(4097)
    with pytest.raises(ValueError):
        loan.write(b"abcd")
    loan.abandon()
    with pytest.raises(ValueError):
        loan.publish()
    with pytest.raises(ValueError):
        memoryview(loan)


def test_several_loans_at_once_and_publish_numpy(region):
    pub, sub = region
    topic = pub.register("/many")
    s = sub.subscribe("/many")
    loans = [pub.loan(topic) for _ in range(3)]
    for i, loan in enumerate(loans):
        loan.write(bytes([i]) * 4)
        loan.set_len(4)
    for loan in reversed(loans):
        loan.publish()
    pub.publish(topic, np.array([7, 8], dtype=np.uint16))
    got = [bytes(s.recv(timeout=5)) for _ in range(4)]
    assert got == [b"\x02" * 4, b"\x01" * 4, b"\x00" * 4, b"\x07\x00\x08\x00"]


def test_latest_topic_skips_to_the_newest(region):
    pub, sub = region
    topic = pub.register("/pose", weft.TopicMode.LATEST)
    s = sub.subscribe("/pose")
    for i in range(5):
        pub.publish(topic, bytes([i]))
    m = s.recv(timeout=5)
    assert bytes(m) == b"\x04" and m.seq == 4
    with pytest.raises(weft.InvalidArgumentError):
        pub.register("/pose", weft.TopicMode.BLOCKS)


def test_latest_inline_topic_gives_the_newest_value(region):
    pub, sub = region
    with pytest.raises(weft.InvalidArgumentError, match="inline"):
        pub.register("/blocks", weft.TopicMode.BLOCKS, latest=True)
    topic = pub.register("/price", weft.TopicMode.INLINE, size=8, latest=True)
    with pytest.raises(weft.InvalidArgumentError, match="latest"):
        pub.register("/price", weft.TopicMode.INLINE, size=8)  # registered as latest
    s = sub.subscribe("/price")
    for p in range(100, 120):
        pub.publish(topic, p.to_bytes(8, "little"))
    m = s.recv(timeout=5)
    assert (int.from_bytes(bytes(m), "little"), m.seq) == (119, 19)
    with pytest.raises(weft.EmptyError):
        s.try_recv()


def test_latest_inline_values_may_be_larger_than_a_line(region):
    pub, sub = region
    # ring_slots=16: latest values up to 16 * 16 - 8 = 248 bytes, other inline ones 56.
    with pytest.raises(weft.InvalidArgumentError, match="latest"):
        pub.register("/frame", weft.TopicMode.INLINE, size=249, latest=True)
    with pytest.raises(weft.InvalidArgumentError, match=r"1 \.\.= 56"):
        pub.register("/frame", weft.TopicMode.INLINE, size=248)
    topic = pub.register("/frame", weft.TopicMode.INLINE, size=248, latest=True)
    s = sub.subscribe("/frame")
    for k in range(1, 6):
        pub.publish(topic, bytes([k]) * 248)
    m = s.recv(timeout=5)
    assert (bytes(m), m.seq) == (bytes([5]) * 248, 4)
    with pytest.raises(weft.EmptyError):
        s.try_recv()


def test_single_publisher_topic_has_one_live_holder(region, name):
    pub, sub = region
    topic = pub.register("/frames", single_publisher=True)
    s = sub.subscribe("/frames")
    other = weft.Publisher.open(name)
    try:
        with pytest.raises(weft.InUseError) as e:
            other.register("/frames", single_publisher=True)
        assert e.value.pid == os.getpid()
        with pytest.raises(weft.InvalidArgumentError, match="single-publisher"):
            other.register("/frames")  # registered with the setting
        for i in range(40):  # around the ring more than once, blocks recycled
            assert pub.publish(topic, i.to_bytes(4, "little")) == i
            m = s.try_recv()
            assert (int.from_bytes(bytes(m), "little"), m.seq) == (i, i)
            del m
        pub.close()  # the holder leaves: the next registrant takes over
        t2 = other.register("/frames", single_publisher=True)
        assert other.publish(t2, b"next") == 40
        assert bytes(s.recv(timeout=5)) == b"next"
    finally:
        other.close()


def test_inline_topic_round_trip(region):
    pub, sub = region
    with pytest.raises(weft.InvalidArgumentError, match="size"):
        pub.register("/ticks", weft.TopicMode.INLINE)  # an inline topic needs its size
    with pytest.raises(weft.InvalidArgumentError, match="size"):
        pub.register("/blocks", weft.TopicMode.BLOCKS, size=8)
    with pytest.raises(weft.InvalidArgumentError):
        pub.register("/big", weft.TopicMode.INLINE, size=57)
    topic = pub.register("/ticks", weft.TopicMode.INLINE, size=16)
    assert topic.mode == weft.TopicMode.INLINE and topic.message_size == 16
    assert pub.register("/blocks").message_size is None
    with pytest.raises(weft.InvalidArgumentError):
        pub.register("/ticks", weft.TopicMode.INLINE, size=8)  # another size
    s = sub.subscribe("/ticks")
    with pytest.raises(weft.InvalidArgumentError):
        pub.publish(topic, b"short")  # exactly the message size, or nothing
    payloads = [bytes(range(i, i + 16)) for i in range(3)]
    for p in payloads:
        pub.publish(topic, p)
    got = [s.recv(timeout=5) for _ in payloads]
    # Each sample owns its copy: the bytes stay put however the samples are held.
    assert [bytes(m) for m in got] == payloads
    assert [m.seq for m in got] == [0, 1, 2]
    arr = np.frombuffer(got[1], dtype=np.uint8)
    assert arr.tolist() == list(range(1, 17))


def test_history_and_exact_lag(region):
    pub, sub = region
    topic = pub.register("/log")
    for i in range(5):
        pub.publish(topic, bytes([i]))
    late = sub.subscribe("/log", history=2)
    assert [bytes(late.recv(timeout=5)) for _ in range(2)] == [b"\x03", b"\x04"]
    slow = sub.subscribe("/log")
    for i in range(5, 5 + 40):
        pub.publish(topic, bytes([i]))
    with pytest.raises(weft.LaggedError) as e:
        slow.recv(timeout=5)
    assert e.value.skipped == 40 - 16
    assert e.value.kind == weft.ErrorKind.Lagged
    assert slow.recv(timeout=5).seq == 5 + 40 - 16


def test_subscribe_waits_for_the_topic(region):
    pub, sub = region
    with pytest.raises(weft.NotFoundError):
        sub.subscribe("/later")
    t = threading.Timer(0.2, lambda: pub.register("/later"))
    t.start()
    s = sub.subscribe("/later", timeout=5)
    t.join()
    assert s.topic == "/later"
    assert "/later" in sub.topics()
    with pytest.raises(weft.NotFoundError):
        sub.subscribe("/never", timeout=0.1)


def test_regions_lists_the_region(region, name):
    assert name in weft.regions()
    assert weft.Publisher.open(name).region == name


def test_stats(region):
    pub, sub = region
    topic = pub.register("/s")
    s = sub.subscribe("/s")
    pub.publish(topic, b"1")
    st = pub.stats(topic)
    assert st["published"] == 1 and st["subscribers"] == 1
    assert st["pool_blocks"] == 1  # the ring holds the one block published
    s.close()


def test_errors(region, name):
    pub, sub = region
    with pytest.raises(weft.InvalidNameError):
        pub.register("no-slash")
    topic = pub.register("/e")
    with pytest.raises(weft.TooLargeError):
        pub.publish(topic, b"x" * 4097)
    with pytest.raises(weft.NotFoundError):
        weft.Subscriber.connect(name + "-absent")
    with pytest.raises(weft.AlreadyExistsError):
        weft.Publisher.create(name)
    other = weft.Publisher.create(name + "-other")
    with pytest.raises(weft.InvalidArgumentError):
        other.publish(topic, b"wrong region")
    other.close()
    pub.close()
    with pytest.raises(ValueError):
        pub.publish(topic, b"closed")


def test_connect_waits_for_the_region(name):
    made = []
    t = threading.Timer(0.2, lambda: made.append(weft.Publisher.create(name)))
    t.start()
    sub = weft.Subscriber.connect(name, timeout=5)
    t.join()
    assert sub.region == name


def looks_once_at_a_half_made_region(name, open_region):
    """A creator between its exclusive create and its header: the file is there, empty, and
    stays so. `open_region(name, timeout)` with timeout 0 looks once (NotReadyError at once,
    where each call used to wait the library's own second for the creator first), and a short
    timeout is kept: none outlasts what was asked by much."""
    half_made = SHM / f"weft.{name}"
    half_made.touch(mode=0o600)
    try:
        started = time.monotonic()
        for _ in range(3):
            with pytest.raises(weft.NotReadyError):
                open_region(name, 0)
        with pytest.raises(weft.NotReadyError):
            open_region(name, 0.1)
        assert time.monotonic() - started < 1.5
    finally:
        half_made.unlink()


def test_connect_to_a_region_still_being_made_keeps_its_timeout(name):
    looks_once_at_a_half_made_region(name, lambda n, t: weft.Subscriber.connect(n, timeout=t))


def test_publisher_open_waits_for_the_region_as_long_as_asked(name):
    with pytest.raises(weft.NotFoundError):
        weft.Publisher.open(name)  # timeout 0: one look
    made = {}
    creator = threading.Timer(0.2, lambda: made.setdefault("p", weft.Publisher.create(name)))
    creator.start()
    try:
        joined = weft.Publisher.open(name, timeout=10)
        assert not joined.created and joined.region == name
    finally:
        creator.join()
    looks_once_at_a_half_made_region(
        f"{name}-half", lambda n, t: weft.Publisher.open(n, timeout=t)
    )


def test_open_or_create_creates_then_joins(name):
    first = weft.Publisher.open_or_create(name, block_size=256, blocks=8)
    second = weft.Publisher.open_or_create(name, block_size=1024)
    assert (first.created, second.created) == (True, False)
    assert second.max_len == 256  # the region's shape, not the second call's
    assert not weft.Publisher.open(name).created
    second.register("/t")
    sub = weft.Subscriber.connect(name).subscribe("/t")
    first.publish(first.register("/t"), b"one")
    assert bytes(sub.try_recv()) == b"one"
    sub.close()
    second.close()
    first.close()


def test_subscribe_by_uri(region, name):
    pub, _ = region
    topic = pub.register("/prices/AAPL")
    assert weft.split_uri(f"{name}/prices/AAPL") == (name, "/prices/AAPL")
    with pytest.raises(weft.InvalidNameError):
        weft.split_uri(name)
    s = weft.subscribe(f"{name}/prices/AAPL", history=1)
    pub.publish(topic, b"189.5")
    assert bytes(s.recv(timeout=5)) == b"189.5"


def test_every_handle_says_whether_it_is_closed(region, name):
    pub, sub = region
    pub.register("/c")
    s = sub.subscribe("/c")
    server = weft.Server.bind(name + "-server")
    handles = [s, sub, server, pub]
    assert [h.closed for h in handles] == [False] * 4
    for h in handles:
        h.close()
    assert [h.closed for h in handles] == [True] * 4


def test_loan_and_sample_with_blocks_that_raise_keep_their_exception(name):
    pub = weft.Publisher.create(name, blocks=4, block_size=64, ring_slots=2)
    sub = weft.Subscriber.connect(name)
    topic = pub.register("/t")
    s = sub.subscribe("/t")

    def free_blocks():
        loans = []
        while True:
            try:
                loans.append(pub.loan(topic))
            except weft.FullError:
                break
        for loan in loans:
            loan.abandon()
        return len(loans)

    assert free_blocks() == 4
    with pytest.raises(KeyError):
        with pub.loan(topic) as loan:
            a = np.frombuffer(loan, dtype=np.uint8)
            raise KeyError("user")
    assert loan.released
    with pytest.raises(ValueError):
        loan.publish()
    assert free_blocks() == 3, "the block stays while the array does"
    del a
    assert free_blocks() == 4, "then goes back to the pool"

    pub.publish(topic, b"s" * 64)
    with pytest.raises(KeyError):
        with s.recv(timeout=5) as m:
            a = np.frombuffer(m, dtype=np.uint8)
            raise KeyError("user")
    assert m.released
    pub.publish(topic, b"1")
    pub.publish(topic, b"2")  # the ring holds these two
    assert a.tobytes() == b"s" * 64, "the sample's block is not reused while the array lives"
    assert free_blocks() == 1
    del a
    assert free_blocks() == 2, "the sample's block went back with the array"

    with pytest.raises(KeyError):
        with s:
            raise KeyError("user")
    assert s.closed


@pytest.mark.parametrize("raises", [False, True])
def test_publisher_and_subscriber_with_blocks_close_them(name, raises):
    """A `with` block closes a Publisher and a Subscriber, whether it raised or not."""
    base = weft.Publisher.create(name, blocks=8, block_size=64, ring_slots=4)
    raised = False
    try:
        with weft.Publisher.open(name) as pub:
            with weft.Subscriber.connect(name) as sub:
                assert not pub.closed and not sub.closed
                if raises:
                    raise KeyError("user")
            assert sub.closed
    except KeyError:
        raised = True
    assert raised == raises  # the exception goes on: neither block swallows it
    assert pub.closed and sub.closed
    with pytest.raises(ValueError):
        pub.register("/t")
    with pytest.raises(ValueError):
        sub.topics()
    base.close()


def test_position_is_the_sequence_of_the_next_sample(region):
    """`Subscription.position` is the sequence number the next sample will carry."""
    pub, sub = region
    topic = pub.register("/pos")
    pub.publish(topic, b"old")  # before the subscription: not received (no history)
    s = sub.subscribe("/pos")
    for i in range(3):
        before = s.position
        seq = pub.publish(topic, b"m%d" % i)
        with s.recv(timeout=30) as m:
            assert m.seq == seq == before
        assert s.position == before + 1
    s.close()
