"""Handles across os.fork(): the child inherits every weft object of its parent, but they stay
the parent's. Dropping them in the child (its interpreter's exit) must leave the parent's
shared state alone, and using them in the child raises a RuntimeError that says why."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import weft

# The parent holds a sample (as a numpy array), a read grant, a loan and a reservation across
# the fork; the child exits as HOW says; then the parent checks that none of its state moved.
SCENARIO = r"""
import gc, os, sys
import numpy as np
import weft

pub = weft.Publisher.create(NAME, blocks=16, block_size=4096, ring_slots=4)
topic = pub.register("/a")
sub = weft.Subscriber.connect(NAME)
s = sub.subscribe("/a")
w = weft.StreamWriter.create(NAME + "-s", 4096)
r = weft.StreamReader.open(NAME + "-s")
w2 = weft.StreamWriter.create(NAME + "-w", 4096)
r2 = weft.StreamReader.open(NAME + "-w")
pub.publish(topic, b"A" * 4096)
held = s.recv(timeout=5)
array = np.frombuffer(held, np.uint8)
w.write(b"first")
grant = r.read(timeout=5)
loan = pub.loan(topic)
room = w2.reserve(8)
before = pub.stats(topic)

pid = os.fork()
if pid == 0:
    if HOW == "os._exit":
        os._exit(0)
    if HOW == "drop":
        # Everything it inherited goes now, not at the interpreter's exit.
        del held, array, grant, loan, room, s, sub, pub, r, w, r2, w2
        gc.collect()
    if HOW == "with":
        # Leaving `with` blocks on the way out: __exit__ in the child, with an exception.
        with r, sub, s, held, grant, loan, room:
            sys.exit(0)
    sys.exit(0)

_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, f"the child exited with {status}"

for k in range(40):
    pub.publish(topic, bytes([0x30 + k % 10]) * 4096)
assert (array == 0x41).all(), "the sample the parent holds was overwritten"
assert pub.stats(topic)["subscribers"] == before["subscribers"] == 1, pub.stats(topic)
assert w.reader_alive(), "the reader's row was released by the child"
assert bytes(grant) == b"first"
grant.release()
try:
    r.read(timeout=0.05)
    raise AssertionError("a record came from nowhere")
except weft.TimeoutError:
    pass  # the writer is alive: no ClosedError
w.write(b"second")
assert bytes(r.read(timeout=5)) == b"second"
room.write(b"in place")
room.commit()
assert bytes(r2.read(timeout=5)) == b"in place"
loan.write(b"loaned")
loan.set_len(6)
assert loan.publish() == 41, "the child published nothing"
del array
held.release()
print("ok")
"""


@pytest.mark.parametrize("how", ["sys.exit", "os._exit", "drop", "with"])
def test_a_child_that_exits_leaves_the_parents_state_alone(how, name):
    # The scenario runs in a fresh interpreter: a child of the pytest process could not end
    # with a real interpreter exit (pytest catches SystemExit).
    code = f"NAME = {name!r}\nHOW = {how!r}\n" + SCENARIO
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def in_child(fn):
    """Runs `fn` in a forked child; returns its exit code and what it returned (JSON through a
    pipe), or the exception it raised, as "Type: message"."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(rfd)
            out = json.dumps(fn())
            code = 0
        except BaseException as e:
            out = json.dumps(f"{type(e).__name__}: {e}")
        finally:
            os.write(wfd, out.encode())
            os._exit(code)
    os.close(wfd)
    chunks = []
    while chunk := os.read(rfd, 65536):
        chunks.append(chunk)
    os.close(rfd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), json.loads(b"".join(chunks) or b"null")


def test_using_an_inherited_object_in_the_child_raises(name):
    pub = weft.Publisher.create(name, blocks=16, block_size=4096)
    topic = pub.register("/a")
    sub = weft.Subscriber.connect(name)
    s = sub.subscribe("/a")
    w = weft.StreamWriter.create(name + "-s", 4096)
    r = weft.StreamReader.open(name + "-s")
    server = weft.Server.bind(name + "-srv")
    pub.publish(topic, b"m")
    held = s.recv(timeout=5)
    loan = pub.loan(topic)
    w.write(b"rec")
    grant = r.read(timeout=5)
    room = w.reserve(4)

    calls = {
        "StreamWriter": lambda: w.reader_alive(),
        "StreamReader": lambda: r.try_read(),
        "Publisher": lambda: pub.publish(topic, b"from the child"),
        "Subscriber": lambda: sub.topics(),
        "Subscription": lambda: s.try_recv(),
        "Server": lambda: server.try_accept(),
        "Sample": lambda: memoryview(held),
        "Loan": lambda: loan.publish(),
        "ReadGrant": lambda: len(grant),
        "WriteGrant": lambda: room.commit(),
    }
    handles = [w, r, pub, sub, s, server]
    grants = [held, loan, grant, room]

    def child():
        errors = {}
        for what, call in calls.items():
            try:
                call()
                errors[what] = None
            except Exception as e:
                errors[what] = f"{type(e).__name__}: {e}"
        # Closing and releasing are allowed (they leave the object to the parent), and say
        # so afterwards.
        for h in handles:
            h.close()
        for g in grants:
            g.release()
        states = [h.closed for h in handles] + [g.released for g in grants]
        return {"errors": errors, "states": states}

    code, out = in_child(child)
    assert code == 0, out
    parent = os.getpid()
    for what, message in out["errors"].items():
        assert message is not None, f"{what}: the call worked in the child"
        assert message.startswith(f"RuntimeError: this {what} was made by process {parent}")
        assert "fork" in message and "open" in message, message
    assert out["states"] == [True] * len(out["states"])

    # Nothing the child tried reached the parent's objects.
    assert [h.closed for h in handles] == [False] * len(handles)
    assert [g.released for g in grants] == [False] * len(grants)
    assert bytes(held) == b"m" and bytes(grant) == b"rec"
    room.write(b"abcd")
    room.commit()
    grant.release()
    assert bytes(r.read(timeout=5)) == b"abcd"
    loan.write(b"L")
    loan.set_len(1)
    loan.publish()
    held.release()
    assert bytes(s.recv(timeout=5)) == b"L", "the child's publish did not happen"
    with pytest.raises(weft.EmptyError):
        s.try_recv()
    assert pub.stats(topic)["subscribers"] == 1
    for h in handles:
        h.close()


def test_a_child_uses_what_it_opens_itself(name):
    w = weft.StreamWriter.create(name, 4096)

    def child():
        # Opened after the fork, in the child: its own.
        cw = weft.StreamWriter.create(name + "-child", 4096)
        cr = weft.StreamReader.open(name + "-child")
        cw.write(np.arange(3, dtype=np.uint8))
        with cr.read(timeout=5) as g:
            got = list(bytes(g))
        cr.close()
        cw.close()
        r = weft.StreamReader.open(name)  # the parent's stream, opened again by name
        with r:
            return [got, bytes(r.read(timeout=5)).decode()]

    w.write(b"to the child")
    code, out = in_child(child)
    assert code == 0 and out == [[0, 1, 2], "to the child"], out
    w.close()


def _pid_namespaces():
    """Whether this process may run a command in a new pid namespace (root, as in CI)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True)
    return r.returncode == 0


# A writer made by a forked child of a process that had already opened an object, then a
# reader in another pid namespace, which can judge the writer by its heartbeat alone.
FORKED_WRITER = r"""
import os, sys, time, weft
first = weft.StreamWriter.create(NAME + "-parent", 4096)
pid = os.fork()
if pid == 0:
    w = weft.StreamWriter.create(NAME, 4096)
    print("ready", flush=True)
    time.sleep(8)
    os._exit(0)
os.waitpid(pid, 0)
first.close()
"""

JUDGE = r"""
import weft
r = weft.StreamReader.open(NAME)
try:
    r.read(timeout=3.0)
    print("record")
except weft.TimeoutError:
    print("alive")
except weft.PeerDeadError:
    print("dead")
"""


@pytest.mark.skipif(not _pid_namespaces(), reason="needs a second pid namespace (root, unshare)")
def test_a_child_keeps_the_heartbeat_of_what_it_opens(name):
    # The heartbeat thread is per process: the child's claims need one of their own (the
    # parent's thread does not survive the fork). Without it, the reader across namespaces
    # took the live child for dead after a second.
    code = f"NAME = {name!r}\n"
    writer = subprocess.Popen(
        [sys.executable, "-c", code + FORKED_WRITER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "ready"
        out = subprocess.run(
            ["unshare", "-p", "-f", "--mount-proc", sys.executable, "-c", code + JUDGE],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout.strip() == "alive", (out.stdout, out.stderr)
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
