"""`zapomni serve` answers a search before the embedded database has loaded the store (decision 0045).

The store's load is slowed the way FalkorDB allows (`--key-load-delay`, through FALKORDB_EXTRA_ARGS) over a few
filler keys, so that the database says LOADING for seconds after the server starts: a search the keyword index can
answer alone comes back within that time, from the index the last server proved; every other call waits for the
engine and is answered in full once the store has loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from tests.helpers import server_pids, wait_for
from tests.processes import call, mcp_session
from zapomni_db.embedded_layout import EmbeddedPaths

pytestmark = pytest.mark.anyio

NOTES = [
    "The proxy restarts every connection after error E1047 in the payment service.",
    "Caroline's pottery workshop downtown opens on Saturdays at nine.",
]
FILLERS = 16
SLOW_LOAD = {"FALKORDB_EXTRA_ARGS": "--key-load-delay 250000 --loading-process-events-interval-bytes 1024"}


def events(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


async def test_a_search_is_answered_from_the_index_while_the_store_loads(data_dir: Path, tmp_path: Path) -> None:
    with (tmp_path / "first.log").open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog) as session:
            ids = [(await call(session, "add_memory", {"text": text}))["memory_id"] for text in NOTES]
            # Keys that each take the load delay at the next start (`--key-load-delay`): ~4 s of LOADING.
            with redis.Redis(unix_socket_path=str(EmbeddedPaths(data_dir).socket)) as raw:
                for i in range(FILLERS):
                    raw.set(f"test-slow-load-{i}", "x")
    assert wait_for(lambda: not server_pids(data_dir), 60)  # stopped: the next server starts it, and waits
    log = tmp_path / "second.log"
    with log.open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog, **SLOW_LOAD) as session:
            early = await call(session, "search_memory", {"query": "pottery workshop"})
            stored = await call(session, "get_memory", {"memory_id": ids[1]})  # waits for the engine
            later = await call(session, "search_memory", {"query": "pottery workshop"})
    seen = [event["event"] for event in events(log)]
    assert "memory.searched_early" in seen and seen.index("memory.searched_early") < seen.index("server.ready"), seen
    assert early["legs"] == ["keyword"] and "still loading" in early["note"]
    (hit,) = early["results"]
    assert (hit["memory_id"], hit["text"], hit["similarity_score"]) == (ids[1], NOTES[1], None)
    assert (hit["created_at"], hit["tags"], hit["kind"]) == (stored["created_at"], stored["tags"], stored["kind"])
    assert later["legs"] == ["vector", "keyword"] and later["note"] is None
    assert later["results"][0]["memory_id"] == ids[1] and later["results"][0]["similarity_score"] > 0.5
