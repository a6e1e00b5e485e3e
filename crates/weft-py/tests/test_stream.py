"""The byte stream from Python: records, grants in place, the buffer protocol and its
release rules, context managers, errors."""

import numpy as np
import pytest

import weft
from conftest import SHM, in_mapping, numpy_address, read_line


@pytest.fixture
def pair(name):
    w = weft.StreamWriter.create(name, 1 << 20)
    r = weft.StreamReader.open(name)
    yield w, r
    for h in (r, w):
        try:
            h.close()
        except RuntimeError:
            pass


def test_records_round_trip_whole_and_in_order(pair):
    w, r = pair
    sent = [bytes([i]) * (i * 37 % 1000) for i in range(200)]
    for m in sent:
        w.write(m)
    for m in sent:
        with r.read(timeout=5) as g:
            assert bytes(g) == m
            assert len(g) == len(m)


def test_any_contiguous_buffer_can_be_written(pair):
    w, r = pair
    w.write(bytearray(b"abc"))
    w.write(memoryview(b"xyz123")[1:4])
    w.write(np.arange(4, dtype=np.uint16))
    assert bytes(r.read(timeout=5)) == b"abc"
    g = r.read(timeout=5)
    assert bytes(g) == b"yz1"
    g.release()
    assert bytes(r.read(timeout=5)) == np.arange(4, dtype=np.uint16).tobytes()
    with pytest.raises(BufferError):
        w.write(np.arange(16, dtype=np.uint8)[::2])  # not contiguous


def test_read_grant_is_in_place_in_the_mapping(pair, name):
    w, r = pair
    w.write(np.arange(1000, dtype=np.float32))
    g = r.read(timeout=5)
    a = np.frombuffer(g, dtype=np.float32)
    assert in_mapping(numpy_address(a), name), "numpy sees the shared mapping itself, no copy"
    assert numpy_address(a) == g._address
    assert not a.flags.writeable
    assert (a == np.arange(1000, dtype=np.float32)).all()
    mv = memoryview(g)
    assert mv.readonly and mv.nbytes == 4000
    del a
    mv.release()
    g.release()


def test_writing_through_a_reservation_is_what_the_reader_reads(pair, name):
    w, r = pair
    g = w.reserve(4096)
    a = np.frombuffer(g, dtype=np.int32)
    assert in_mapping(numpy_address(a), name)
    a[:] = np.arange(1024, dtype=np.int32) * 3
    del a
    g.commit()
    got = r.read(timeout=5)
    assert (np.frombuffer(got, dtype=np.int32) == np.arange(1024) * 3).all()


def test_a_read_grant_is_read_only(pair):
    import io

    w, r = pair
    w.write(b"x" * 8)
    g = r.read(timeout=5)
    mv = memoryview(g)
    assert mv.readonly
    with pytest.raises(TypeError):
        mv[0] = 1
    mv.release()
    with pytest.raises((TypeError, BufferError)):
        io.BytesIO(b"yyyy").readinto(g)  # asks for a writable buffer
    assert not hasattr(g, "write")
    assert bytes(g) == b"x" * 8


def test_release_refused_while_a_memoryview_is_alive(pair):
    w, r = pair
    w.write(b"payload")
    g = r.read(timeout=5)
    mv = memoryview(g)
    with pytest.raises(BufferError):
        g.release()
    assert bytes(mv) == b"payload", "the view still reads the record: it was not released"
    mv.release()
    g.release()
    assert g.released


def test_release_refused_while_a_numpy_array_is_alive(pair):
    w, r = pair
    w.write(np.ones(16, dtype=np.float64))
    g = r.read(timeout=5)
    a = np.frombuffer(g, dtype=np.float64)
    b = a[4:8]  # a view of the view keeps the export alive too
    del a
    with pytest.raises(BufferError):
        g.release()
    del b
    g.release()


def test_nothing_reads_a_released_grant(pair):
    w, r = pair
    w.write(b"gone")
    g = r.read(timeout=5)
    g.release()
    with pytest.raises(ValueError):
        memoryview(g)
    with pytest.raises(ValueError):
        np.frombuffer(g, dtype=np.uint8)
    with pytest.raises(ValueError):
        len(g)
    with pytest.raises(ValueError):
        bytes(g)
    g.release()  # twice is fine
    assert "released" in repr(g)


def test_with_block_releases_and_refuses_a_live_export(pair):
    w, r = pair
    w.write(b"a")
    w.write(b"b")
    with r.read(timeout=5) as g:
        assert bytes(g) == b"a"
    assert g.released
    with pytest.raises(BufferError):
        with r.read(timeout=5) as g2:
            kept = memoryview(g2)
    kept.release()
    g2.release()


def test_reader_is_busy_while_its_grant_is_held(pair):
    w, r = pair
    w.write(b"1")
    w.write(b"2")
    g = r.read(timeout=5)
    with pytest.raises(RuntimeError, match="busy"):
        r.read(timeout=5)
    with pytest.raises(RuntimeError, match="busy"):
        r.close()
    g.release()
    assert bytes(r.read(timeout=5)) == b"2"


def test_grant_outlives_its_reader_object(name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    w.write(b"kept")
    g = r.read(timeout=5)
    del r  # the grant keeps the reader alive
    import gc

    gc.collect()
    assert bytes(g) == b"kept"
    g.release()


def test_write_grant_context_commits_or_abandons(pair):
    w, r = pair
    with w.reserve(5) as g:
        g.write(b"hello")
    assert g.released
    with pytest.raises(KeyError):
        with w.reserve(5) as g:
            g.write(b"never")
            raise KeyError
    w.write(b"after")
    assert bytes(r.read(timeout=5)) == b"hello"
    assert bytes(r.read(timeout=5)) == b"after", "the abandoned reservation was never seen"


def test_commit_a_prefix_and_refuse_a_live_export(pair):
    w, r = pair
    g = w.reserve(100)
    g.write(b"abc", offset=0)
    mv = memoryview(g)
    with pytest.raises(BufferError):
        g.commit(3)
    mv.release()
    with pytest.raises(weft.InvalidArgumentError):
        g.commit(101)
    g.commit(3)
    with pytest.raises(ValueError):
        g.commit(3)
    assert bytes(r.read(timeout=5)) == b"abc"


def test_write_into_a_grant_is_bounded(pair):
    w, _ = pair
    g = w.reserve(4)
    with pytest.raises(ValueError):
        g.write(b"12345")
    with pytest.raises(ValueError):
        g.write(b"12", offset=3)
    g.abandon()


def test_errors_of_a_stream(pair, name):
    w, r = pair
    with pytest.raises(weft.TooLargeError) as e:
        w.write(b"x" * (w.max_record_len + 1))
    assert e.value.kind == weft.ErrorKind.TooLarge
    with pytest.raises(weft.EmptyError):
        r.try_read()
    with pytest.raises(weft.TimeoutError):
        r.read(timeout=0.05)
    with pytest.raises(weft.InUseError) as e:
        weft.StreamReader.open(name)
    assert e.value.pid > 0
    with pytest.raises(weft.NotFoundError):
        weft.StreamReader.open(name + "-absent")
    with pytest.raises(weft.InvalidNameError):
        weft.StreamWriter.create("bad/name", 4096)
    with pytest.raises(ValueError):
        r.read(timeout=-1)


def test_try_write_raises_full(name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    with pytest.raises(weft.FullError):
        for _ in range(1000):
            w.try_write(b"z" * 1000)
    with pytest.raises(weft.TimeoutError):
        w.write(b"z" * 1000, timeout=0.05)
    r.read(timeout=1).release()
    r.close()


def test_deferred_records_wait_for_a_flush(pair):
    w, r = pair
    w.write_deferred(b"one")
    w.write_deferred(bytearray(b"two"))
    with pytest.raises(weft.EmptyError):
        r.try_read()
    w.flush()
    assert bytes(r.read(timeout=5)) == b"one"
    assert bytes(r.read(timeout=5)) == b"two"
    # A plain write publishes what was deferred before it, in order; so does close.
    w.write_deferred(b"three")
    w.write(b"four")
    assert bytes(r.read(timeout=5)) == b"three"
    assert bytes(r.read(timeout=5)) == b"four"
    w.write_deferred(np.arange(3, dtype=np.uint8))
    w.close()
    assert bytes(r.read(timeout=5)) == bytes([0, 1, 2])
    with pytest.raises(weft.ClosedError):
        r.read(timeout=5)


def test_deferred_writes_wait_for_room_and_time_out(name):
    import threading

    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    n = 0
    with pytest.raises(weft.FullError):
        while True:
            w.try_write_deferred(b"d" * 300)
            n += 1
    with pytest.raises(weft.TimeoutError):
        w.write_deferred(b"d" * 300, timeout=0.05)
    # What was deferred before the refusals is published.
    for _ in range(n):
        r.read(timeout=1).release()
    with pytest.raises(weft.EmptyError):
        r.try_read()
    # A deferred write that has to wait for room gets it once the reader reads on.
    got = []

    def read_all():
        for _ in range(40):
            with r.read(timeout=5) as g:
                got.append(bytes(g))

    t = threading.Thread(target=read_all)
    t.start()
    for i in range(40):
        w.write_deferred(bytes([i]) * 1000, timeout=5)
    w.flush()
    t.join()
    assert got == [bytes([i]) * 1000 for i in range(40)]
    r.close()
    w.close()


def test_closed_writer_is_drained_then_closed(name):
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    w.write(b"last")
    w.close()
    assert w.closed
    with pytest.raises(ValueError):
        w.write(b"more")
    assert bytes(r.read(timeout=5)) == b"last"
    with pytest.raises(weft.ClosedError):
        r.read(timeout=5)


def test_open_waits_for_the_stream(name):
    import threading

    made = []
    t = threading.Timer(0.2, lambda: made.append(weft.StreamWriter.create(name, 4096)))
    t.start()
    r = weft.StreamReader.open(name, timeout=5)
    t.join()
    made[0].write(b"hi")
    assert bytes(r.read(timeout=5)) == b"hi"


def test_open_waits_through_a_creator_that_has_not_finished(name):
    # A creator between its exclusive create and its `ready` store: the file is there, empty,
    # for longer than one slice of the wait. The open goes on waiting; it is not NotReady.
    import threading
    import time

    half_made = SHM / f"weft.{name}"
    half_made.touch(mode=0o600)
    made = []

    def finish():
        time.sleep(0.3)
        half_made.unlink()
        made.append(weft.StreamWriter.create(name, 4096))

    t = threading.Thread(target=finish)
    t.start()
    r = weft.StreamReader.open(name, timeout=5)
    t.join()
    made[0].write(b"hi")
    assert bytes(r.read(timeout=5)) == b"hi"


def test_open_gives_up_on_a_creator_that_died(name):
    # The header a creator leaves when SIGKILLed after writing it and before `ready`: its
    # pid, start time and pid namespace. The open fails at once with NotReadyError instead of
    # retrying until its timeout (a minute here).
    import os
    import struct
    import subprocess
    import time
    from pathlib import Path

    child = subprocess.Popen(["sleep", "600"])
    stat = Path(f"/proc/{child.pid}/stat").read_text()
    start = int(stat[stat.rindex(")") + 1 :].split()[19])
    child.kill()
    child.wait()
    header = bytearray(64 << 10)
    header[0:8] = b"WEFT\0OBJ"
    header[8:12] = struct.pack("<I", weft._weft.LAYOUT_VERSION)
    header[12:16] = struct.pack("<I", 1)  # a stream
    header[16:24] = struct.pack("<Q", 64 << 10)
    header[24:28] = struct.pack("<I", child.pid)
    header[32:40] = struct.pack("<Q", start)
    header[48:56] = struct.pack("<Q", os.stat("/proc/self/ns/pid").st_ino)
    half_made = SHM / f"weft.{name}"
    half_made.write_bytes(bytes(header))
    try:
        t = time.monotonic()
        with pytest.raises(weft.NotReadyError, match="is gone"):
            weft.StreamReader.open(name, timeout=60)
        assert time.monotonic() - t < 30
    finally:
        half_made.unlink(missing_ok=True)


def _lockstep_span(name, capacity, n=20000, **kw):
    """Writes and reads `n` records of 256 bytes in lockstep; the span of the addresses the
    reader saw them at."""
    w = weft.StreamWriter.create(name, capacity, **kw)
    r = weft.StreamReader.open(name)
    lo, hi = None, 0
    try:
        for i in range(n):
            w.write(i.to_bytes(4, "little") * 64)
            g = r.read(timeout=5)
            assert bytes(g)[:4] == i.to_bytes(4, "little")
            lo = g._address if lo is None else min(lo, g._address)
            hi = max(hi, g._address + len(g))
            g.release()
    finally:
        r.close()
        w.close()
    return hi - lo


def test_hot_window_keeps_a_reader_that_keeps_up_inside_it(name):
    # The record that reaches the window is the last before the wrap: 264 bytes framed.
    assert _lockstep_span(name + "a", 1 << 20, hot_window=16 << 10) <= (16 << 10) + 264
    assert _lockstep_span(name + "b", 1 << 20, hot_window=None) > (1 << 20) - 4096
    assert _lockstep_span(name + "c", 1 << 20) > (1 << 20) - 4096, "none below 16 MiB by default"
    assert _lockstep_span(name + "d", 16 << 20, n=70000) <= (4 << 20) + 264, "4 MiB from 16 MiB up"
    with pytest.raises(ValueError):
        weft.StreamWriter.create(name + "e", 1 << 20, hot_window="big")
    for tiny in (0, 4095, True):
        with pytest.raises(weft.InvalidArgumentError):
            weft.StreamWriter.create(name + "f", 1 << 20, hot_window=tiny)


def test_a_write_grant_with_block_that_raises_keeps_its_exception(pair):
    w, r = pair
    with pytest.raises(KeyError):
        with w.reserve(8) as g:
            a = np.frombuffer(g, dtype=np.uint8)
            a[:] = 7
            raise KeyError("user")
    assert g.released, "nothing new is taken from it once the block ended"
    with pytest.raises(ValueError):
        memoryview(g)
    assert (a == 7).all(), "an array made before stays valid"
    with pytest.raises(RuntimeError, match="busy"):
        w.write(b"x")  # the reservation goes with the array
    del a
    w.write(b"after")
    assert bytes(r.read(timeout=5)) == b"after", "the reservation was abandoned"
    with pytest.raises(KeyError):
        with w.reserve(8):
            raise KeyError("user")  # no export: abandoned at once
    w.write(b"again")
    assert bytes(r.read(timeout=5)) == b"again"


def test_a_read_grant_with_block_that_raises_keeps_its_exception(pair):
    w, r = pair
    w.write(b"one")
    w.write(b"two")
    with pytest.raises(KeyError):
        with r.read(timeout=5) as g:
            a = np.frombuffer(g, dtype=np.uint8)
            raise KeyError("user")
    assert g.released
    assert a.tobytes() == b"one"
    with pytest.raises(RuntimeError, match="busy"):
        r.read(timeout=5)
    del a
    assert bytes(r.read(timeout=5)) == b"two", "the record was released with the array"


def test_a_handle_with_block_that_raises_closes_once_its_grant_is_released(name):
    w = weft.StreamWriter.create(name, 4096)
    w.write(b"rec")
    with pytest.raises(KeyError):
        with weft.StreamReader.open(name) as r:
            rec = r.read(timeout=1.0)
            raise KeyError("user")
    assert r.closed
    with pytest.raises(ValueError, match="closed"):
        r.try_read()
    assert w.reader_alive(), "the reader stays while its grant is held"
    assert bytes(rec) == b"rec"
    rec.release()
    assert not w.reader_alive(), "and closes when it is released"

    # The writer: its reservation goes at the end of the block, and the writer with it.
    r = weft.StreamReader.open(name)
    with pytest.raises(KeyError):
        with w:
            room = w.reserve(8)
            kept = memoryview(room)
            raise KeyError("user")
    assert w.closed
    with pytest.raises(weft.TimeoutError):
        r.read(timeout=0.05)  # still open: no ClosedError yet
    kept.release()
    room.abandon()
    with pytest.raises(weft.ClosedError):
        r.read(timeout=5)

    # Without an exception, the exit still raises while a grant is held.
    w2 = weft.StreamWriter.create(name + "-2", 4096)
    w2.write(b"x")
    with pytest.raises(RuntimeError, match="busy"):
        with weft.StreamReader.open(name + "-2") as r2:
            held = r2.read(timeout=5)
    assert not r2.closed
    held.release()
    r2.close()


def test_a_numpy_scalar_is_written_as_its_bytes(name):
    # A 0-d export (numpy scalar, 0-d array) has no shape; it was refused ("shape is null").
    for i, value in enumerate((np.float64(1.5), np.array(7, dtype=np.int32))):
        with weft.StreamWriter.create(f"{name}-{i}", 4096) as w:
            with weft.StreamReader.open(f"{name}-{i}") as r:
                w.write(value)
                with r.read(timeout=5) as g:
                    assert bytes(g) == value.tobytes()
    with weft.StreamWriter.create(f"{name}-t", 4096) as w:
        with pytest.raises(TypeError):
            w.write(1.5)  # no buffer at all: still a TypeError


def test_create_shows_defaults_it_takes():
    import inspect

    params = inspect.signature(weft.StreamWriter.create).parameters
    assert params["hot_window"].default == "auto"
    assert params["align"].default == 8
    assert params["wait"].default == "adaptive"


DYING_WRITER = """
import time, weft
w = weft.StreamWriter.create({name!r}, 4096)
w.write(b"last words")
print("ready", flush=True)
time.sleep(120)
"""


def test_peer_dead_error_carries_the_dead_writers_pid(name, python_child):
    """`PeerDeadError.pid` names the peer process that died."""
    child = python_child(DYING_WRITER.format(name=name))
    assert read_line(child.stdout).strip() == "ready", child.stderr.read()
    r = weft.StreamReader.open(name, timeout=30)
    child.kill()
    child.wait()
    with r.read(timeout=30) as g:
        assert bytes(g) == b"last words"
    with pytest.raises(weft.PeerDeadError) as e:
        r.read(timeout=30)
    assert e.value.pid == child.pid
    r.close()
