"""Blocking calls of the object stores' SDKs, off the event loop, in threads that never hold
up the process's exit.

A store that does not answer holds a thread until its timeouts pass (tens of seconds, retries
included). :func:`off_loop` runs such a call in a daemon thread of its own rather than in the
loop's default executor, whose threads the interpreter joins at exit: a gateway told to stop
during an outage stops at once. A caller cancelled meanwhile leaves the call running to its end;
its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_loop(call: Callable[[], T], what: str = "object store") -> T:
    """``call()``'s result (or exception), run in a new daemon thread named ``what``."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = call(), None
        except BaseException as exc:
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name=what, daemon=True).start()
    return await future
