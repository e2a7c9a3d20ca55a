"""CPU work off the event loop, on a thread the process does not wait for at exit.

`asyncio.to_thread` uses the loop's default executor, whose threads `asyncio.run` joins on the way out: a server
whose job was cutting a 10 MiB text into chunks when stdin closed took 49 s to exit (measured), though its engine
had closed in under a second and the job had gone back to pending for the next server. Work whose result is of
no use once the server stops (chunking, reading a file, resolving calls) runs here instead, on a daemon thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def off_loop(work: Callable[..., T], *args: object) -> T:
    """`work(*args)` on a daemon thread of its own; its result, or what it raised."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: T | None, error: BaseException | None) -> None:
        if future.done():  # the caller was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)  # type: ignore[arg-type]  # T, set only when `work` returned

    def run() -> None:
        try:
            outcome, error = work(*args), None
        except BaseException as exc:  # handed to the caller, as to_thread would
            outcome, error = None, exc
        # The loop closed: the server stopped, and nobody waits for this any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, outcome, error)

    threading.Thread(target=run, name=f"zapomni-work-{getattr(work, '__name__', 'call')}", daemon=True).start()
    return await future
