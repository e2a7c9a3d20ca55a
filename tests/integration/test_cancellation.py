"""A cancelled task stops at its next database call, on a real FalkorDB.

Python 3.11's asyncio.wait_for, with which redis-py writes a command to the socket, loses a cancellation that
arrives as the write completes (CPython gh-86296): the task went on as if never cancelled. Seen as a
`zapomni import` that Ctrl-C did not stop (tests/e2e/test_import_interrupted.py) and an import cancelled from its
progress report that ran to its end."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers import graph_client
from zapomni_core import Settings

pytestmark = pytest.mark.anyio


async def test_a_cancellation_requested_before_a_call_is_delivered_by_it(settings: Settings) -> None:
    async with graph_client(settings.data_dir, settings.graph_name) as graph:
        assert await graph.ping()  # a connection open and idle in the pool, as in a busy engine
        calls = []

        async def work() -> None:
            # As a progress report or a signal handler running inside the task would: the request waits for the
            # task's next suspension, which is the write of its next command.
            asyncio.current_task().cancel()  # type: ignore[union-attr]
            for _ in range(20):
                calls.append(await graph.ping())

        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(work())
        assert calls == []
        assert await graph.ping()  # the connection the cancelled call dropped is replaced
