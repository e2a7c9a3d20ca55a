"""Faults a user meets, through the official MCP client: a full disk, and the database killed mid-stream."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.cli_in_process import run_cli
from tests.helpers import fill_disk, graph_client, mounted_tmpfs, server_pids, wait_for
from tests.processes import ZAPOMNI, call, server_env
from zapomni_core.faults import INTERRUPTED, UNAVAILABLE

pytestmark = pytest.mark.anyio

MB = 1024 * 1024
PEANUTS = "Alice is allergic to peanuts; she carries an EpiPen everywhere."


@asynccontextmanager
async def serve(data_dir: Path, errlog: TextIO, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=server_env(data_dir, **env))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def message(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_a_full_disk_refuses_writes_clearly_keeps_reads_and_recovers_without_a_restart(tmp_path: Path) -> None:
    with mounted_tmpfs("48m") as disk, (tmp_path / "stderr.log").open("w") as errlog:
        data_dir = disk / "data"
        filler: Path | None = None
        try:
            async with serve(data_dir, errlog, ZAPOMNI_MIN_FREE_MB="8") as session:
                kept = await call(session, "add_memory", {"text": PEANUTS})
                stats = await call(session, "get_stats")
                assert 8 < stats["disk_free_mb"] <= 48 and stats["disk_warning"] is None

                filler = fill_disk(disk, leave_bytes=2 * MB)
                refused = await session.call_tool("add_memory", {"text": "Bob prefers tea to coffee."})
                assert refused.is_error
                text = message(refused)
                assert "Internal error" not in text
                assert str(data_dir) in text and "MB free" in text and "ZAPOMNI_MIN_FREE_MB" in text
                assert "Nothing was stored" in text
                low = await call(session, "get_stats")
                assert low["disk_free_mb"] < 8 and "ZAPOMNI_MIN_FREE_MB" in low["disk_warning"]
                assert low["total_memories"] == 1

                # Reads go on while writes are refused.
                found = await call(session, "search_memory", {"query": "peanut allergy"})
                assert [hit["memory_id"] for hit in found["results"]] == [kept["memory_id"]]
                assert (await call(session, "get_memory", {"memory_id": kept["memory_id"]}))["text"] == PEANUTS
                assert (await call(session, "list_memories", {}))["count"] == 1

                # Space freed: the same server stores again, by itself.
                filler.unlink()
                filler = None
                added = await call(session, "add_memory", {"text": "Bob prefers tea to coffee."})
                assert added["deduplicated"] is False
                again = await call(session, "get_stats")
                assert again["total_memories"] == 2 and again["disk_warning"] is None
        finally:
            if filler is not None:
                filler.unlink()
            assert wait_for(lambda: not server_pids(data_dir), 60), "the embedded database did not stop"


async def test_adds_in_flight_when_the_database_is_killed_succeed_or_say_a_retry_is_safe(
    data_dir: Path, tmp_path: Path
) -> None:
    texts = [f"Fault drill note {n}: shipment {n * 7} left dock {n % 5} on time." for n in range(40)]
    results: dict[str, Any] = {}
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with serve(data_dir, errlog) as session:
            await call(session, "add_memory", {"text": "The stream of adds starts now."})
            before = server_pids(data_dir)
            assert len(before) == 1
            some_done = asyncio.Event()

            async def stream(part: list[str]) -> None:
                for text in part:
                    results[text] = await session.call_tool("add_memory", {"text": text})
                    if len(results) >= 8:
                        some_done.set()

            async def kill_database() -> None:
                await some_done.wait()
                os.kill(before[0], signal.SIGKILL)  # mid-stream: other adds are embedding or writing

            await asyncio.gather(*(stream(texts[i::4]) for i in range(4)), kill_database())

            after = server_pids(data_dir)
            assert after and after != before, "the keeper restarts the killed database"
            failed = [text for text, result in results.items() if result.is_error]
            for text in failed:
                assert message(results[text]) in (INTERRUPTED, UNAVAILABLE), message(results[text])
            for text in failed:  # the answer said a retry is safe: retry
                retried = await session.call_tool("add_memory", {"text": text})
                assert not retried.is_error, message(retried)

            async with graph_client(data_dir) as client:
                rows = await client.ro_query("MATCH (m:Memory) RETURN m.text")
            stored = Counter(row[0] for row in rows)
            assert all(stored[text] == 1 for text in texts), "every text stored exactly once"
            assert len(stored) == len(texts) + 1 and sum(stored.values()) == len(texts) + 1


def test_doctor_shows_the_free_space_and_fails_below_the_threshold(tmp_path: Path) -> None:
    def disk_check(min_free_mb: str) -> dict[str, Any]:
        env = server_env(tmp_path / "data", ZAPOMNI_MIN_FREE_MB=min_free_mb)
        done = run_cli(["doctor", "--json", "--no-start"], env)
        return next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "disk")

    plenty = disk_check("1")
    assert plenty["ok"] is True and "MB free on the disk of" in plenty["detail"]
    assert str(tmp_path / "data") in plenty["detail"]
    low = disk_check("1000000")  # 1 TB: more than this machine has
    assert low["ok"] is False and "Low disk space" in low["detail"] and "ZAPOMNI_MIN_FREE_MB" in low["detail"]
