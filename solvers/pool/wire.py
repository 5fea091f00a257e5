"""Length-prefixed pickled messages between a driver and its worker processes."""
from __future__ import annotations

import pickle
import struct

__all__ = ["send_msg", "recv_msg"]

_HDR = struct.Struct(">Q")


def send_msg(f, obj) -> None:
    """Write one message (works on raw, unbuffered files: partial writes are resumed)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    buf = memoryview(_HDR.pack(len(data)) + data)
    while buf:
        n = f.write(buf)
        buf = buf[n if n is not None else 0:]
    f.flush()


def _read_exact(f, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def recv_msg(f):
    """The next message, or None at EOF (also on a truncated message). The driver
    reads from unbuffered pipes, so that nothing waits unseen in a buffer."""
    h = _read_exact(f, _HDR.size)
    if h is None:
        return None
    data = _read_exact(f, _HDR.unpack(h)[0])
    return None if data is None else pickle.loads(data)
