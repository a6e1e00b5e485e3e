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
per ``weft.ErrorKind``.
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
)

ErrorKind = IntEnum("ErrorKind", [(name, code) for name, code, _ in _weft._ERROR_KINDS])
ErrorKind.__doc__ = "The stable category of a weft error (the same codes as weft::ErrorKind)."
ErrorKind.__module__ = __name__

Error.kind = None
for _name, _code, _cls in _weft._ERROR_KINDS:
    _cls.kind = ErrorKind(_code)
del _name, _code, _cls

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
]
