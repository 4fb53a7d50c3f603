"""Declared chunk sizes of chunked REST bodies, read off the bytes of one read.

llhttp takes any chunk size that fits in 64 bits and then waits for that many bytes, without
telling its caller the size. A body declaring ``ffffffff`` would hold its connection until the
body deadline; the connection asks :func:`declared_chunk_size` instead, after a read in which a
chunk began and did not end, so that a chunk that takes the body past its limit is refused as
soon as its size line arrives.

At that point llhttp has consumed the whole read, and the read ends with the chunk's data
received so far, right after its size line and CRLF; the size line is the text between that CRLF
and the line end before it. A size line that began in an earlier read is not seen (the body
limit and the body deadline still hold).
"""

from __future__ import annotations


def declared_chunk_size(data: bytes, received: int) -> int | None:
    """The size the chunk-size line before the last ``received`` bytes of ``data`` declares
    (extensions after ``;`` ignored); None when that line is not whole in ``data``."""
    end = len(data) - received - 2
    if end < 0 or data[end : end + 2] != b"\r\n":
        return None
    start = data.rfind(b"\n", 0, end)
    if start < 0:
        return None
    digits = data[start + 1 : end].partition(b";")[0].strip()
    try:
        return int(digits, 16)
    except ValueError:
        return None
