"""The memory fences a channel's two processes need, explicit for the CPU they run on.

The processes share plain memory (:mod:`channel.shm.segment`) and publish to each other by
plain stores to uint64 words. Each call site names the order it relies on:

- :func:`release` before a store that hands something over: a ring's ``head`` after the slot's
  bytes and the tensors its message names, a ring's ``tail`` and the output area's released
  position after the loads of what they give back. Every earlier load and store is visible first.
- :func:`acquire` after a load that takes something over: ``head`` before the slots are read,
  ``tail`` and the released position before that space is written again. No later load or store
  moves before it.
- :func:`fence`, a full barrier, between a store and a load of another word: the need-wakeup
  handshake (:mod:`channel.shm.doorbell`), where each side stores its word, then reads the other's.

x86-64 keeps stores in order, loads in order and loads before later stores (total store order):
release and acquire cost nothing there, since CPython makes each memoryview access a C call of its
own, which the compiler does not reorder. Only the full fence is an instruction, a locked
read-modify-write: an uncontended :class:`threading.Lock` (``lock cmpxchg``).

arm64 may reorder all four ways, and a lock's acquire and release are one-way barriers there
(a store before the lock and a load after it may pass each other). The fences are the
instructions C compilers emit for ``atomic_thread_fence``: ``dmb ish`` (full, release) and
``dmb ishld`` (acquire). Python cannot emit an instruction, so each is a two-instruction
function (the barrier, ``ret``) written to an anonymous memfd and mapped read-only and executable
(no page is ever writable and executable; the kernel makes the instruction cache agree when it
maps the page), called through ctypes (a fraction of a microsecond). Other CPUs are refused at
import.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import threading
from collections.abc import Callable
from typing import Final

_X86_64: Final = frozenset({"x86_64", "amd64"})
_ARM64: Final = frozenset({"aarch64", "arm64"})

# A64 encodings (little-endian words): DMB ISH, DMB ISHLD, RET.
_DMB_ISH: Final = 0xD5033BBF
_DMB_ISHLD: Final = 0xD50339BF
_RET: Final = 0xD65F03C0
_MFD_EXEC: Final = 0x0010
"""memfd_create's MFD_EXEC (Linux 6.3+): executable even where ``vm.memfd_noexec`` says not."""


def machine_function(code: bytes) -> Callable[[], None]:
    """A function of no arguments whose body is ``code``, machine code of this CPU ending in its
    return, on a page of its own: written to an anonymous memfd, then mapped read-only and
    executable for good. OSError when the kernel refuses."""
    try:
        fd = os.memfd_create("tensorgate-fences", os.MFD_CLOEXEC | _MFD_EXEC)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # a kernel before MFD_EXEC
            raise
        fd = os.memfd_create("tensorgate-fences", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, mmap.PAGESIZE)
        os.pwrite(fd, code, 0)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        prot = mmap.PROT_READ | mmap.PROT_EXEC
        address = libc.mmap(None, mmap.PAGESIZE, prot, mmap.MAP_PRIVATE, fd, 0)
    finally:
        os.close(fd)
    if address in (None, ctypes.c_void_p(-1).value):
        err = ctypes.get_errno()
        raise OSError(err, f"cannot map the memory fences executable: {os.strerror(err)}")
    return ctypes.CFUNCTYPE(None)(address)


def _arm64_fences() -> tuple[Callable[[], None], Callable[[], None]]:
    """``(dmb ish, dmb ishld)`` as functions."""
    ret = _RET.to_bytes(4, "little")
    full = machine_function(_DMB_ISH.to_bytes(4, "little") + ret)
    loads = machine_function(_DMB_ISHLD.to_bytes(4, "little") + ret)
    return full, loads


_LOCK: Final = threading.Lock()


def _locked_rmw() -> None:
    with _LOCK:
        pass


def _nothing() -> None:
    pass


MACHINE: Final = platform.machine().lower()
if MACHINE in _X86_64:
    fence: Callable[[], None] = _locked_rmw
    release: Callable[[], None] = _nothing
    acquire: Callable[[], None] = _nothing
    IMPLEMENTATION = "x86-64: full a locked read-modify-write, release and acquire none"
elif MACHINE in _ARM64:
    fence, acquire = _arm64_fences()
    release = fence
    IMPLEMENTATION = "arm64: full and release dmb ish, acquire dmb ishld (machine code)"
else:
    raise RuntimeError(
        f"the shared-memory channel knows the memory fences of x86-64 and arm64 only, not "
        f"{platform.machine()!r}"
    )
