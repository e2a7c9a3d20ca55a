"""A disk that someone else fills while background indexing runs, with the free-space guard off.

Through the official MCP client on a real 48 MB tmpfs: the embedded database hits the full disk in the
middle of the indexing jobs' writes. The keeper must recognise it, keep the database up for reads with
writes suspended (no restart loop), and say so everywhere a user looks: the tool errors, get_stats, each
job's status, `zapomni doctor`. Once the space is back the jobs resume by themselves and every memory
that was acknowledged becomes searchable.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_faults import PEANUTS, message, serve
from tests.helpers import fill_disk, mounted_tmpfs, server_pids, wait_for
from tests.processes import ZAPOMNI, call, server_env
from zapomni_db.embedded_layout import EmbeddedPaths

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WORDS = ["albatross", "bergamot", "cormorant", "dulcimer", "eucalyptus", "flamingo", "gondola", "harpsichord"]
ENV = {"ZAPOMNI_MIN_FREE_MB": "0", "ZAPOMNI_BACKGROUND_ADD_BYTES": "4096"}


def large_text(word: str) -> str:
    """About 12 KB: a background add of a dozen chunks, each naming `word`."""
    return " ".join(f"Log line {i}: the {word} inventory moved to shelf {i % 17} in aisle {i % 5}." for i in range(160))


def keeper_events(data_dir: Path, event: str) -> list[dict[str, Any]]:
    lines = EmbeddedPaths(data_dir).keeper_log.read_text().splitlines()
    return [record for line in lines if line.startswith("{") and (record := json.loads(line))["event"] == event]


def doctor_disk(data_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [ZAPOMNI, "doctor", "--json", "--no-start"],
        env=server_env(data_dir, **ENV),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return next(check for check in json.loads(done.stdout)["checks"] if check["name"] == "disk")


async def test_a_disk_filled_during_indexing_pauses_the_jobs_with_the_reason_and_they_finish_once_space_is_back(
    tmp_path: Path,
) -> None:
    with mounted_tmpfs("48m") as disk, (tmp_path / "stderr.log").open("w") as errlog:
        data_dir = disk / "data"
        filler: Path | None = None
        try:
            async with serve(data_dir, errlog, **ENV) as session:
                kept = await call(session, "add_memory", {"text": PEANUTS})
                added = {word: await call(session, "add_memory", {"text": large_text(word)}) for word in WORDS}
                assert all(result["status"] == "indexing" for result in added.values())
                # Someone else fills the disk while the jobs index: their next write does not fit.
                filler = fill_disk(disk, leave_bytes=0)

                async def stats() -> dict[str, Any]:
                    return await call(session, "get_stats")

                latest: dict[str, Any] = {}

                async def full_reported() -> bool:
                    latest.update(await stats())
                    return "full" in (latest.get("disk_warning") or "")

                assert await wait_async(full_reported, 120), latest
                warning = latest["disk_warning"]
                assert "writes are suspended" in warning and "background jobs are paused" in warning, warning
                assert latest["jobs"].get("pending", 0) + latest["jobs"].get("running", 0) > 0, latest["jobs"]

                # Each unfinished job says why it waits; waiting on one changes nothing (no restart loop).
                servers = server_pids(data_dir)
                waiting = [await call(session, "job_status", {"job_id": r["job_id"]}) for r in added.values()]
                unfinished = [job for job in waiting if job["state"] in ("pending", "running")]
                assert unfinished
                for job in unfinished:
                    assert job["message"].startswith("paused:") and "disk" in job["message"], job
                still = await call(session, "job_status", {"job_id": unfinished[0]["job_id"], "wait_s": 5})
                assert still["state"] in ("pending", "running") and still["message"].startswith("paused:")
                assert server_pids(data_dir) == servers, "the database was restarted while the disk stayed full"
                assert len(keeper_events(data_dir, "keeper.server_restarting")) <= 1
                assert keeper_events(data_dir, "keeper.disk_full")

                # A write is refused with the reason; reads go on.
                refused = await session.call_tool("add_memory", {"text": "Bob prefers tea to coffee."})
                assert refused.is_error
                text = message(refused)
                assert "Internal error" not in text and "full" in text and "Nothing was stored" in text, text
                found = await call(session, "search_memory", {"query": "peanut allergy"})
                assert kept["memory_id"] in [hit["memory_id"] for hit in found["results"]]
                health = doctor_disk(data_dir)
                assert health["ok"] is False and "full" in health["detail"], health

                # Space is back: the jobs resume by themselves and every acknowledged memory is found.
                filler.unlink()
                filler = None
                for result in added.values():
                    for _ in range(4):  # 50 s at a time: the whole suite may share the two cores with it
                        job = await call(session, "job_status", {"job_id": result["job_id"], "wait_s": 50})
                        if job["state"] not in ("pending", "running"):
                            break
                    assert job["state"] == "completed", job
                for word, result in added.items():
                    hits = await call(session, "search_memory", {"query": f"{word} inventory", "limit": 3})
                    assert result["memory_id"] in [hit["memory_id"] for hit in hits["results"]], word
                assert not (await call(session, "add_memory", {"text": "Bob prefers tea to coffee."}))["deduplicated"]
                after = await stats()
                assert after["disk_warning"] is None and after["total_memories"] == len(WORDS) + 2
                assert doctor_disk(data_dir)["ok"] is True
        finally:
            if filler is not None:
                filler.unlink()
            assert wait_for(lambda: not server_pids(data_dir), 60), "the embedded database did not stop"


async def wait_async(condition: Any, timeout_s: float) -> bool:
    """Poll an async condition until it holds or `timeout_s` has passed (a bounded wait, not a sleep)."""
    import anyio

    with anyio.move_on_after(timeout_s):
        while not await condition():
            await anyio.sleep(0.5)
        return True
    return False
