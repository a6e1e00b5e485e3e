"""weft: zero-copy messaging for one machine.

Processes on one machine hand each other records, messages and large tensors through shared
memory: a byte stream (``StreamWriter`` / ``StreamReader``), pub/sub with URI topics
(``Publisher`` / ``Subscriber``), and request/response (``Channel``, ``Server``).

What you receive is read in place: a ``ReadGrant``, ``Sample``, ``Reply`` or ``Request``
exposes the buffer protocol over shared memory, so ``memoryview(x)`` and
``numpy.frombuffer(x, dtype=...)`` make no copy. What you send can be written in place: a
``WriteGrant`` or ``Loan`` is a writable buffer. Release what you received (``release()``, a
``with`` block) to give the memory back; a buffer is never readable after its release
(``release()`` raises ``BufferError`` while a memoryview or array made from it is alive).

Blocking calls release the GIL and answer Ctrl-C. Errors are ``weft.Error`` subclasses, one
per ``weft.ErrorKind`` (``weft.TimeoutError`` is also a ``TimeoutError``, ``weft.IoError`` an
``OSError``). Objects stay with the process that made them: a fork's child can neither use nor
release what it inherited, and nothing can be pickled.
"""

from enum import IntEnum

from . import _weft
from ._weft import (
    AlreadyExistsError,
    Channel,
    ClosedError,
    CorruptError,
    EmptyError,
    Error,
    FullError,
    InUseError,
    InvalidArgumentError,
    InvalidNameError,
    IoError,
    LaggedError,
    Loan,
    NotFoundError,
    NotReadyError,
    NotWeftError,
    PeerDeadError,
    Publisher,
    ReadGrant,
    Reply,
    Request,
    Sample,
    Server,
    StreamReader,
    StreamWriter,
    Subscriber,
    Subscription,
    TimeoutError,
    TooLargeError,
    Topic,
    TopicMode,
    TruncatedError,
    TypeMismatchError,
    VersionMismatchError,
    WriteGrant,
    WrongKindError,
    regions,
    split_uri,
)


class ErrorKind(IntEnum):
    """The stable category of a weft error: the codes of ``weft::ErrorKind`` (and of the C
    ABI). Every ``weft.Error`` subclass has its ``kind``."""

    InvalidName = 1
    InvalidArgument = 2
    NotFound = 3
    AlreadyExists = 4
    InUse = 5
    NotWeft = 6
    VersionMismatch = 7
    WrongKind = 8
    Truncated = 9
    NotReady = 10
    Corrupt = 11
    TooLarge = 12
    Timeout = 13
    Full = 14
    Empty = 15
    Closed = 16
    PeerDead = 17
    Lagged = 18
    TypeMismatch = 19
    Io = 20


def _attach_kinds():
    # The native module lists (kind name, code, class); a kind it knows and this enum does
    # not, or a code that differs, is a build mismatch.
    for kind_name, code, cls in _weft._ERROR_KINDS:
        kind = ErrorKind[kind_name]
        if kind != code:
            raise ImportError(f"ErrorKind.{kind_name} is {int(kind)}, the native one {code}")
        cls.kind = kind
    Error.kind = None


_attach_kinds()


def subscribe(
    uri: str, timeout: float | None = 0.0, *, history: int = 0, wait: str = "adaptive"
) -> Subscription:
    """Subscribes to a topic by URI, "REGION/TOPIC" ("market/prices/AAPL"): connects to the
    region and subscribes, each waiting up to `timeout` seconds (0: not at all; None: as long
    as it takes). The subscription keeps the region open on its own."""
    region, topic = split_uri(uri)
    subscriber = Subscriber.connect(region, timeout, wait=wait)
    return subscriber.subscribe(topic, timeout, history=history)

__all__ = [
    "AlreadyExistsError",
    "Channel",
    "ClosedError",
    "CorruptError",
    "EmptyError",
    "Error",
    "ErrorKind",
    "FullError",
    "InUseError",
    "InvalidArgumentError",
    "InvalidNameError",
    "IoError",
    "LaggedError",
    "Loan",
    "NotFoundError",
    "NotReadyError",
    "NotWeftError",
    "PeerDeadError",
    "Publisher",
    "ReadGrant",
    "Reply",
    "Request",
    "Sample",
    "Server",
    "StreamReader",
    "StreamWriter",
    "Subscriber",
    "Subscription",
    "TimeoutError",
    "TooLargeError",
    "Topic",
    "TopicMode",
    "TruncatedError",
    "TypeMismatchError",
    "VersionMismatchError",
    "WriteGrant",
    "WrongKindError",
    "regions",
    "split_uri",
    "subscribe",
]
