"""The lock the processes sharing a data directory take to change a keyword index: a task cancelled while it
waits for the lock never takes it later (a thread left waiting would, and hold it for ever)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from zapomni_core.search.keyword_index import KeywordIndexDirs

pytestmark = pytest.mark.anyio


async def test_a_task_cancelled_while_waiting_for_the_lock_leaves_it_free(tmp_path: Path) -> None:
    dirs = KeywordIndexDirs(tmp_path / "keyword-index")
    entered: list[str] = []

    async def wait_for_it() -> None:
        async with dirs.locked():
            entered.append("the cancelled task")

    async with dirs.locked():
        waiter = asyncio.create_task(wait_for_it())
        await asyncio.sleep(0.05)
        assert not waiter.done()  # it waits while the lock is held
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
    async with asyncio.timeout(2), dirs.locked():  # free as soon as its holder lets go
        entered.append("the next one")
    assert entered == ["the next one"]
    assert (tmp_path / "keyword-index" / ".lock").stat().st_mode & 0o077 == 0
