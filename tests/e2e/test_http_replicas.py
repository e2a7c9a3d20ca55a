"""Several `zapomni serve --http` replicas on one FalkorDB server, as behind a load balancer.

Two replicas with their own processes and data directories share one database server (server mode, TCP
with a password). What one does, the other sees at once: a write, a revocation; a job whose replica is
killed with -9 is finished by the other, once, with nothing acknowledged lost.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.cli_in_process import run_cli
from tests.e2e.test_large_adds import document
from tests.helpers import SMALL_CHUNKS, text_of
from tests.processes import FalkorDB, HttpServer, call, child_env, create_token, http_server, http_session

pytestmark = pytest.mark.anyio

PASSWORD = "replica-test-password"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorDB]:
    directory = tmp_path_factory.mktemp("falkordb")
    server = FalkorDB(directory, password=PASSWORD, log_file=directory / "server.log")
    server.start()
    yield server
    server.kill()


def server_mode(database: FalkorDB, **extra: str) -> dict[str, str]:
    return {
        "ZAPOMNI_DB_MODE": "server",
        "FALKORDB_HOST": "127.0.0.1",
        "FALKORDB_PORT": str(database.port),
        "FALKORDB_PASSWORD": PASSWORD,
        "ZAPOMNI_HTTP_RATE": "0",
        # A replica killed with -9 holds its job's lease this long; the other takes the job over after it.
        "ZAPOMNI_JOB_LEASE_S": "4",
        "ZAPOMNI_JOB_POLL_S": "0.5",
        **extra,
    }


def token(database: FalkorDB, name: str, role: str) -> str:
    """A token for every workspace, made by `zapomni token create` on the shared database."""
    return create_token(child_env(server_mode(database), LOG_LEVEL="WARNING"), name, role)


@pytest.fixture(scope="module")
def pair(database: FalkorDB, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, HttpServer]]:
    base = tmp_path_factory.mktemp("replicas")
    env = server_mode(database) | SMALL_CHUNKS
    with (
        http_server(base / "a", base / "a.log", **env) as first,
        http_server(base / "b", base / "b.log", **env) as second,
    ):
        yield first, second


@pytest.fixture(scope="module")
def writer(database: FalkorDB, pair: tuple[HttpServer, HttpServer]) -> str:
    return token(database, "replica-writer", "write")


async def test_a_write_through_one_replica_is_found_through_the_other_at_once(
    pair: tuple[HttpServer, HttpServer], writer: str
) -> None:
    first, second = pair
    async with http_session(first, writer) as a, http_session(second, writer) as b:
        added = await call(a, "add_memory", {"text": "The kayak club meets at the north jetty on Thursdays."})
        # No wait: the other replica's keyword index catches up before it answers.
        for mode in ("keyword", "vector", "hybrid"):
            found = await call(b, "search_memory", {"query": "where does the kayak club meet", "mode": mode})
            assert found["results"] and found["results"][0]["memory_id"] == added["memory_id"], (mode, found)
        got = await call(b, "get_memory", {"memory_id": added["memory_id"]})
        assert got["text"].startswith("The kayak club")
        await call(b, "delete_memory", {"memory_ids": [added["memory_id"]]})
        gone = await a.call_tool("get_memory", {"memory_id": added["memory_id"]})
        assert gone.is_error and "no memory" in text_of(gone)


async def test_a_token_revoked_through_one_replica_is_refused_by_both(
    database: FalkorDB, pair: tuple[HttpServer, HttpServer]
) -> None:
    first, second = pair
    token_text = token(database, "short-lived-replica", "read")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_workspaces", "arguments": {}}}
    assert [first.post(ping, token_text).status_code, second.post(ping, token_text).status_code] == [200, 200]
    env = child_env(server_mode(database), LOG_LEVEL="WARNING")
    revoked = run_cli(["token", "revoke", "short-lived-replica"], env)
    assert revoked.returncode == 0, revoked.stderr
    assert [first.post(ping, token_text).status_code, second.post(ping, token_text).status_code] == [401, 401]


async def test_a_replica_killed_mid_job_leaves_the_job_to_the_other_which_finishes_it_once(
    pair: tuple[HttpServer, HttpServer], writer: str
) -> None:
    first, second = pair
    async with http_session(first, writer) as a, http_session(second, writer) as watcher:
        kept = await call(a, "add_memory", {"text": "Acknowledged by the first replica before it died."})
        added = await call(a, "add_memory", {"text": document("fjord", 60)})  # about 8 slices of 32 chunks
        assert added["job_id"], added
        # Watched through the idle replica, whose answers a busy first one cannot delay, and frozen at once:
        # the job's state at the kill is the one read after the freeze.
        status = {"job_id": added["job_id"]}
        while (progress := await call(watcher, "job_status", status))["progress"]["done"] == 0:
            assert progress["state"] in ("pending", "running"), progress
            await anyio.sleep(0.1)
        os.kill(first.pid, signal.SIGSTOP)
        frozen = await call(watcher, "job_status", status)
        # Killed inside the session: closing it first gives the replica time to finish the job under load.
        # The session's closing DELETE then fails, which the SDK logs and tolerates.
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout_s=30)
    assert frozen["state"] == "running" and frozen["progress"]["done"] < frozen["progress"]["total"], frozen

    async with http_session(second, writer) as b:
        final: dict[str, Any] = {}
        for _ in range(6):  # the lease runs out, the second replica claims the job and finishes it
            final = await call(b, "job_status", {"job_id": added["job_id"], "wait_s": 50})
            if final["state"] not in ("pending", "running"):
                break
        assert final["state"] == "completed" and final["attempts"] == 2, final
        memory = await call(b, "get_memory", {"memory_id": added["memory_id"]})
        assert (memory["status"], memory["chunk_count"]) == ("indexed", final["counts"]["chunks"])
        hits = await call(b, "search_memory", {"query": "fjord log site 3"})
        assert hits["results"][0]["memory_id"] == added["memory_id"]
        still = await call(b, "get_memory", {"memory_id": kept["memory_id"]})
        assert still["text"].startswith("Acknowledged by the first replica")
        stats = await call(b, "get_stats", {})
        assert stats["total_chunks"] == final["counts"]["chunks"] + 1, "no chunk stored twice, none left staged"
