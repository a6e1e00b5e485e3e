"""Blocking calls release the GIL (other threads run meanwhile) and answer Ctrl-C: a real
child process blocked in each kind of call gets SIGINT and raises KeyboardInterrupt."""

import random
import signal
import threading
import time

import pytest

import weft
from conftest import Checked, read_line

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
