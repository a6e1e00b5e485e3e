"""Shared fixtures: a unique object name per test (with clean-up of what it left in
/dev/shm, even when it fails), the Rust peer binaries, and functions that read /proc."""

import itertools
import json
import os
import re
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHM = Path("/dev/shm")
_counter = itertools.count()


@pytest.fixture
def name(request):
    """A name no other test (or run) uses; every object under it is removed afterwards."""
    test = re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)[:60]
    n = f"pyt-{os.getpid()}-{next(_counter)}-{test}"
    yield n
    for f in SHM.glob(f"weft.{n}*"):
        try:
            f.unlink()
        except FileNotFoundError:
            pass


def in_mapping(address, obj_name, prefix=False):
    """Whether `address` lies in one of this process's mappings of the weft object `obj_name`
    (each handle maps the object on its own, so there may be several); with `prefix`, of any
    object whose name starts with `obj_name`."""
    path = str(SHM / f"weft.{obj_name}")
    found = False
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and (fields[5] == path or prefix and fields[5].startswith(path)):
                found = True
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if start <= address < end:
                    return True
    assert found, f"{path} is not mapped in this process"
    return False


def read_line(stream, timeout=30):
    """The next line of a child's stdout, or an AssertionError after `timeout` seconds (a
    child stuck in a call it should have left fails the test instead of hanging it)."""
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no line from the child within {timeout} s"
    return stream.readline()


def numpy_address(array):
    """The address of an array's first byte, as numpy reports it."""
    return array.__array_interface__["data"][0]


_peers = None


def _build_peers():
    """Builds the Rust peers (weft's test peer and weft-py's) once per pytest run; returns their
    paths."""
    global _peers
    if _peers is None:
        cargo = os.environ.get("CARGO", "cargo")
        subprocess.run(
            [cargo, "build", "--quiet", "-p", "weft", "--bin", "weft-test-peer",
             "-p", "weft-py-peer", "--bin", "weft-py-peer"],
            cwd=ROOT, check=True,
        )
        meta = subprocess.run(
            [cargo, "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        )
        target = Path(json.loads(meta.stdout)["target_directory"]) / "debug"
        _peers = {
            "weft-test-peer": target / "weft-test-peer",
            "weft-py-peer": target / "weft-py-peer",
        }
    return _peers


class Peer:
    """A peer process: lines from its stdout, killed at the end of the test."""

    def __init__(self, args):
        self.proc = subprocess.Popen(
            [str(a) for a in args], stdout=subprocess.PIPE, text=True, bufsize=1,
        )

    def line(self, timeout=60):
        out = read_line(self.proc.stdout, timeout)
        assert out, f"the peer exited (code {self.proc.poll()}) without a line"
        return out.strip()

    def wait(self, timeout=60):
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def peer():
    """Starts Rust peer processes: `peer("weft-py-peer", "stream-crc", name)`."""
    started = []

    def start(binary, *args):
        p = Peer([_build_peers()[binary], *args])
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


@pytest.fixture
def python_child():
    """Runs Python code in a child process (the same interpreter, this package)."""
    started = []

    def start(code):
        p = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()


class Checked(threading.Thread):
    """A thread whose exception is raised again by `join()`, so that a failure on it fails the
    test."""

    def __init__(self, target, args=()):
        super().__init__(daemon=True)
        self.fn, self.fn_args, self.error = target, args, None

    def run(self):
        try:
            self.fn(*self.fn_args)
        except BaseException as e:  # handed to join()
            self.error = e

    def join(self, timeout=30):
        super().join(timeout)
        assert not self.is_alive(), "the thread did not finish"
        if self.error is not None:
            raise self.error
