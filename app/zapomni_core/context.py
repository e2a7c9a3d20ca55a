"""What a request carries into the engine: its id, a way to report progress, and whether it was cancelled.

Adapters build one per call (the MCP server from the SDK's request context, the CLI plainly).
The SDK cancels a request by cancelling its task; `until_committed` turns that into the
`cancelled` flag that writes check up to their database write, and no further: a write that
began completes, so a memory is stored whole or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import anyio
import structlog

from zapomni_core.errors import Cancelled
from zapomni_core.progress import Progress, ProgressSink

T = TypeVar("T")
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RequestContext:
    request_id: str = "-"
    progress_sink: ProgressSink | None = None
    cancelled: Callable[[], bool] = lambda: False
    # Who sent it (an MCP session or access token), for telling one client's conversation from
    # another's (zapomni_core.content.turns); None when no client is known (the CLI, an import).
    client: str | None = None
    # Work a job does, not a caller waiting for it: its embeddings give way to interactive ones.
    background: bool = False

    async def progress(self, progress: Progress) -> None:
        if self.progress_sink is not None and not self.cancelled():  # a caller who gave up reads no progress
            await self.progress_sink(progress)

    def check_cancelled(self) -> None:
        """Raise `Cancelled` if the caller gave up; called only before a write begins."""
        if self.cancelled():
            raise Cancelled("the request was cancelled before anything was stored")


NO_CONTEXT = RequestContext()
JOB_CONTEXT = RequestContext(request_id="job", background=True)


async def until_committed(
    work: Callable[[RequestContext], Awaitable[T]], ctx: RequestContext, *, honour: Callable[[], bool]
) -> T:
    """Run `work` shielded from cancellation; a cancellation of the caller sets `ctx.cancelled` instead.

    `work` checks the flag while it prepares and stops there; once it writes, it runs to the end
    and the caller's cancellation is delivered afterwards. `honour()` says whether a cancellation
    counts (a shutdown cancels every request too, but its own grace deadline governs writes).
    """
    flag = False
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = anyio.Event()

    async def run() -> None:
        with anyio.CancelScope(shield=True):
            try:
                outcome.append(await work(replace(ctx, cancelled=lambda: flag or ctx.cancelled())))
            except BaseException as exc:  # handed to the caller below
                if isinstance(exc, Cancelled):
                    log.info("request.cancelled", request_id=ctx.request_id, stored=False)
                failure.append(exc)
            finally:
                done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            flag = honour()
            raise
    if failure:
        raise failure[0]
    return outcome[0]


class ShutdownGate:
    """Shared by the engine and its write pipeline: once closed, new writes are refused and
    embedding in flight stops at the deadline."""

    def __init__(self) -> None:
        self.deadline: float | None = None

    @property
    def closed(self) -> bool:
        return self.deadline is not None

    def close(self, grace_s: float) -> bool:
        """Start the grace period; False if it had already started."""
        if self.deadline is not None:
            return False
        self.deadline = time.monotonic() + grace_s
        return True

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline
