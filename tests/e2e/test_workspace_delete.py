"""A deleted workspace stays deleted, found the way it was reported: a job of it still running when it goes.

Before the fix, the job's next progress write (a FalkorDB write query) created the deleted graph
again, the server opened it as a workspace, and `list_workspaces` showed it a few seconds later.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.helpers import SMALL_CHUNKS
from tests.processes import call, mcp_session

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

# Long enough that its index job runs for several progress writes (one per 32 chunks): 134 chunks of 64 tokens.
LARGE = " ".join(f"Falcon survey note {i}: a peregrine was seen over the quarry at dawn." for i in range(400))


def log_events(path: Path) -> list[dict[str, object]]:
    events = []
    for line in path.read_text().splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    return events


async def until_logged(path: Path, predicate: object, timeout_s: float = 120.0) -> dict[str, object]:
    with anyio.fail_after(timeout_s):
        while True:
            for event in log_events(path):
                if predicate(event):  # type: ignore[operator]  # the predicate is a callable the caller passed
                    return event
            await anyio.sleep(0.05)


async def test_a_workspace_deleted_while_its_job_runs_does_not_come_back(data_dir: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "server.log"
    with stderr.open("w") as errlog:
        async with mcp_session(
            data_dir,
            errlog,
            ZAPOMNI_BACKGROUND_ADD_BYTES="1000",
            ZAPOMNI_GRAPH_AUTO="true",
            ZAPOMNI_JOB_POLL_S="0.2",
            **SMALL_CHUNKS,
        ) as session:
            added = await call(session, "add_memory", {"text": LARGE, "workspace": "falcon"})
            assert added["status"] == "indexing"
            job = added["job_id"]
            await until_logged(stderr, lambda e: e.get("event") == "job.started" and e.get("job_id") == job)
            deleted = await call(session, "delete_workspace", {"name": "falcon", "confirm": "falcon"})
            assert deleted["deleted_memories"] == 1
            ended = await until_logged(
                stderr,
                lambda e: e.get("job_id") == job and e.get("event") in ("job.dropped", "job.lost", "job.finished"),
            )
            # The worker goes on with other work: a memory in another workspace is indexed and extracted.
            other = await call(session, "add_memory", {"text": LARGE.replace("Falcon", "Osprey"), "workspace": "hawk"})
            await until_logged(
                stderr, lambda e: e.get("event") == "job.finished" and e.get("job_id") == other["job_id"]
            )
            listed = await call(session, "list_workspaces")
            names = [w["name"] for w in listed["workspaces"]]
            assert "falcon" not in names, (names, ended)
            assert "hawk" in names
            assert (await call(session, "list_jobs", {"workspace": "falcon"}))["jobs"] == []
    reopened = [
        e for e in log_events(stderr) if e.get("event") == "workspace.opened" and e.get("workspace") == "falcon"
    ]
    assert len(reopened) == 1, reopened  # opened once, by the add; never again after the delete
