"""Benchmarks of weft from Python, run by hand (not part of scripts/test):

1. A 50 MB float32 tensor handed from one Python process to another: weft's stream (written
   in place, read in place) against multiprocessing.shared_memory with a pipe notification
   and against a Unix domain socket. One handoff = the producer puts the tensor in, the
   consumer gets a numpy array over it and reads one value per 4 KiB page, then answers
   with 8 bytes; timed at the producer from start to answer.
2. 64-byte pub/sub messages per second from Python: a publisher process and a subscriber
   process (weft), against a multiprocessing Pipe carrying the same messages.

Build the bindings optimised first, then run:

    maturin develop --release -m crates/weft-py/Cargo.toml
    python crates/weft-py/bench/handoff.py [--reps 9] [--seconds 2]

Repetitions of the handoff are interleaved (one of each method per round) so that a change
of load during the run falls on all of them alike; each prints its median and spread, and
ratios are taken within the run.
"""

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from multiprocessing import connection, resource_tracker, shared_memory

import numpy as np

import weft

N = 12_500_000  # float32 values: 50 MB
NBYTES = N * 4
STRIDE = 1024  # one float32 per 4 KiB page
RING = 4096  # descriptors per pub/sub topic
ACK_EVERY = 512  # the pub/sub subscriber acknowledges every this many messages
WINDOW = RING - 2 * ACK_EVERY  # messages the publisher may have unacknowledged


def checksum(a):
    return float(a[::STRIDE].sum())


# ---- the consumer side, in a child process ---------------------------------------------------


def child_weft(name):
    r = weft.StreamReader.open(name + "-data", timeout=30)
    ack = weft.StreamWriter.create(name + "-ack", 4096)
    print("ready", flush=True)
    while True:
        try:
            g = r.read()
        except weft.ClosedError:
            return
        a = np.frombuffer(g, dtype=np.float32)  # the shared mapping, no copy
        s = checksum(a)
        del a
        g.release()
        ack.write(np.float64(s).tobytes())


def child_shm(shm_name, data_fd, ack_fd):
    shm = shared_memory.SharedMemory(name=shm_name)
    # Python 3.11 registers an attached segment for removal at this process's exit; the
    # producer owns it (3.13 has track=False for this).
    resource_tracker.unregister(shm._name, "shared_memory")
    a = np.ndarray((N,), dtype=np.float32, buffer=shm.buf)
    print("ready", flush=True)
    while os.read(data_fd, 1):
        s = checksum(a)
        os.write(ack_fd, np.float64(s).tobytes())
    del a
    shm.close()


def child_socket(fd):
    sock = socket.socket(fileno=fd)
    buf = bytearray(NBYTES)
    view = memoryview(buf)
    print("ready", flush=True)
    while True:
        got = 0
        while got < NBYTES:
            n = sock.recv_into(view[got:], NBYTES - got)
            if n == 0:
                return
            got += n
        a = np.frombuffer(buf, dtype=np.float32)
        s = checksum(a)
        del a
        sock.sendall(np.float64(s).tobytes())


def child_sub(region):
    sub = weft.Subscriber.connect(region, timeout=30).subscribe("/ticks", timeout=30)
    acks = weft.Publisher.open(region)
    ack_topic = acks.register("/acks")
    print("ready", flush=True)
    got = lagged = 0
    first = last = None
    while True:
        try:
            m = sub.try_recv()
        except weft.EmptyError:
            continue
        except weft.LaggedError as e:
            lagged += e.skipped
            continue
        end = len(m) == 1  # the sentinel the publisher sends last
        m.release()
        if end:
            break
        last = time.perf_counter()
        if first is None:
            first = last
        got += 1
        if got % ACK_EVERY == 0:
            acks.publish(ack_topic, got.to_bytes(8, "little"))
    print(f"received {got} lagged {lagged} in {last - first:.6f}", flush=True)


def child_pipe(fd, count):
    conn = connection.Connection(fd)
    print("ready", flush=True)
    t0 = None
    for _ in range(count):
        conn.recv_bytes()
        if t0 is None:
            t0 = time.perf_counter()
    dt = time.perf_counter() - t0
    print(f"received {count} in {dt:.6f}", flush=True)


# ---- the producer side ------------------------------------------------------------------


def spawn(args, pass_fds=()):
    p = subprocess.Popen(
        [sys.executable, __file__, "--child", *map(str, args)],
        stdout=subprocess.PIPE, text=True, pass_fds=pass_fds,
    )
    assert p.stdout.readline().strip() == "ready"
    return p


class WeftHandoff:
    label = "weft stream (weft-py 0.1.0)"

    def __init__(self, tensor):
        self.tensor = tensor
        name = f"bench-handoff-{os.getpid()}"
        self.w = weft.StreamWriter.create(name + "-data", 128 << 20, align=4096)
        self.child = spawn(["weft", name])
        self.ack = weft.StreamReader.open(name + "-ack", timeout=30)

    def once(self):
        with self.w.reserve(NBYTES) as g:
            np.copyto(np.frombuffer(g, dtype=np.float32), self.tensor)
        with self.ack.read() as a:
            return np.frombuffer(a, dtype=np.float64)[0].item()

    def close(self):
        self.w.close()
        self.child.wait()
        self.ack.close()


class ShmHandoff:
    label = f"multiprocessing.shared_memory + pipe (Python {platform.python_version()})"

    def __init__(self, tensor):
        self.tensor = tensor
        self.shm = shared_memory.SharedMemory(create=True, size=NBYTES)
        self.a = np.ndarray((N,), dtype=np.float32, buffer=self.shm.buf)
        data_r, self.data_w = os.pipe()
        self.ack_r, ack_w = os.pipe()
        self.child = spawn(["shm", self.shm.name, data_r, ack_w], pass_fds=(data_r, ack_w))
        os.close(data_r)
        os.close(ack_w)

    def once(self):
        np.copyto(self.a, self.tensor)
        os.write(self.data_w, b"x")
        return np.frombuffer(os.read(self.ack_r, 8), dtype=np.float64)[0].item()

    def close(self):
        os.close(self.data_w)
        self.child.wait()
        os.close(self.ack_r)
        del self.a
        self.shm.close()
        self.shm.unlink()


class SocketHandoff:
    label = "Unix domain socket, SOCK_STREAM (Linux)"

    def __init__(self, tensor):
        self.tensor = tensor
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for s in (self.sock, theirs):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.child = spawn(["socket", theirs.fileno()], pass_fds=(theirs.fileno(),))
        theirs.close()

    def once(self):
        self.sock.sendall(memoryview(self.tensor).cast("B"))
        got = b""
        while len(got) < 8:
            got += self.sock.recv(8 - len(got))
        return np.frombuffer(got, dtype=np.float64)[0].item()

    def close(self):
        self.sock.close()
        self.child.wait()


def bench_handoff(reps):
    tensor = np.random.default_rng(1).random(N, dtype=np.float32)
    want = checksum(tensor)
    impls = [WeftHandoff(tensor), ShmHandoff(tensor), SocketHandoff(tensor)]
    times = {i.label: [] for i in impls}
    try:
        for rnd in range(reps + 2):
            for impl in impls:
                t0 = time.perf_counter()
                got = impl.once()
                dt = time.perf_counter() - t0
                assert got == want, (impl.label, got, want)
                if rnd >= 2:  # two warm-up rounds
                    times[impl.label].append(dt)
    finally:
        for impl in impls:
            impl.close()
    base = statistics.median(times[impls[0].label])
    print(f"\n50 MB float32 tensor, Python process -> Python process ({reps} repetitions)\n")
    print("| implementation | median | min | max | GB/s (median) | its time / weft's |")
    print("|---|---|---|---|---|---|")
    for impl in impls:
        t = times[impl.label]
        med = statistics.median(t)
        print(
            f"| {impl.label} | {med * 1e3:.2f} ms | {min(t) * 1e3:.2f} ms | "
            f"{max(t) * 1e3:.2f} ms | {NBYTES / med / 1e9:.1f} | {med / base:.2f}x |"
        )


def bench_pubsub(seconds):
    payload = bytes(range(64))
    region = f"bench-pubsub-{os.getpid()}"
    pub = weft.Publisher.create(region, blocks=8192, block_size=64, ring_slots=RING)
    topic = pub.register("/ticks")
    pub.register("/acks")
    acks = weft.Subscriber.connect(region).subscribe("/acks")

    # Publish only: as fast as Python can, nobody reading (a lossy topic never waits).
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds / 2:
        for _ in range(1000):
            pub.publish(topic, payload)
        n += 1000
    rate_alone = n / (time.perf_counter() - t0)

    # Publisher and subscriber processes, flow-controlled so that nothing is overwritten
    # unread: the subscriber acknowledges every ACK_EVERY messages on /acks, and the
    # publisher keeps at most WINDOW unacknowledged (less than the ring's lap).
    child = spawn(["sub", region])
    while pub.stats(topic)["subscribers"] < 1:
        time.sleep(0.001)
    sent = acked = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while time.perf_counter() < deadline:
        for _ in range(ACK_EVERY):
            pub.publish(topic, payload)
        sent += ACK_EVERY
        while True:
            try:
                with acks.try_recv() as a:
                    acked = int.from_bytes(a, "little")
            except weft.EmptyError:
                if sent - acked <= WINDOW:
                    break
                with acks.recv(timeout=10) as a:
                    acked = int.from_bytes(a, "little")
    dt = time.perf_counter() - t0
    while child.poll() is None:
        pub.publish(topic, b"\xff")
        time.sleep(0.01)
    words = child.stdout.readline().split()
    got, lagged, rdt = int(words[1]), int(words[3]), float(words[5])
    pub.close()
    rate_pub, rate_sub = sent / dt, got / rdt

    # The same 64-byte messages over a multiprocessing Pipe (its own framing and pickling-free
    # send_bytes), for scale.
    ours, theirs = connection.Pipe(duplex=False)
    count = 300_000
    pchild = spawn(["pipe", ours.fileno(), count], pass_fds=(ours.fileno(),))
    ours.close()
    t1 = time.perf_counter()
    for _ in range(count):
        theirs.send_bytes(payload)
    dt_pipe_send = time.perf_counter() - t1
    line = pchild.stdout.readline().split()
    pchild.wait()
    theirs.close()
    rate_pipe = count / float(line[3])

    print(f"\n64-byte messages from Python, {seconds} s per row\n")
    print("| implementation | sent/s | received/s | note |")
    print("|---|---|---|---|")
    print(
        f"| weft pub/sub, `publish(topic, bytes)` only (weft-py 0.1.0) "
        f"| {rate_alone / 1e6:.2f} M | - | one process, nobody reading |"
    )
    print(
        f"| weft pub/sub, `publish(topic, bytes)` -> `try_recv` + `release` (weft-py 0.1.0) "
        f"| {rate_pub / 1e6:.2f} M | {rate_sub / 1e6:.2f} M "
        f"| two processes, {got} received, {lagged} lost (flow control: acks every "
        f"{ACK_EVERY}) |"
    )
    print(
        f"| multiprocessing Pipe, `send_bytes` -> `recv_bytes` (Python "
        f"{platform.python_version()}) | {count / dt_pipe_send / 1e6:.2f} M "
        f"| {rate_pipe / 1e6:.2f} M | two processes, {count} messages |"
    )
    print(f"\nreceived/s, weft over Pipe: {rate_sub / rate_pipe:.1f}x")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, args = sys.argv[2], sys.argv[3:]
        if kind == "weft":
            child_weft(args[0])
        elif kind == "shm":
            child_shm(args[0], int(args[1]), int(args[2]))
        elif kind == "socket":
            child_socket(int(args[0]))
        elif kind == "sub":
            child_sub(args[0])
        elif kind == "pipe":
            child_pipe(int(args[0]), int(args[1]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    model = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        "unknown CPU",
    )
    print(f"{model}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"load average at start: {os.getloadavg()}")
    bench_handoff(args.reps)
    bench_pubsub(args.seconds)
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
