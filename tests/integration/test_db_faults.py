"""A database killed mid-call: what the db layer retries, what it refuses to retry, and the keeper's restarts.

A FalkorDB this test starts and kills itself (no keeper), so the test decides how long it stays
down: a call made while it is down provably never reached it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.processes import FalkorDB
from zapomni_core.disk import DiskGuard
from zapomni_core.errors import DatabaseInterrupted, StorageUnavailable
from zapomni_core.faults import INTERRUPTED, UNAVAILABLE, user_error
from zapomni_db import DatabaseTarget, DatabaseUnavailable, GraphClient, WriteInterrupted, connect
from zapomni_db.embedded_layout import EmbeddedPaths
from zapomni_db.keeper import MAX_RESTART_DELAY_S, restart_delay, server_command

pytestmark = pytest.mark.anyio

# Long enough to be killed half way: a write of this many nodes takes about a second.
SLOW_WRITE = "UNWIND range(1, 3000000) AS i CREATE (:Bulk {i: i})"


def killable(db_dir: Path) -> FalkorDB:
    """redis-server + FalkorDB on a unix socket, logging with appendfsync always, as the keeper runs it."""
    return FalkorDB(db_dir, unix_socket=db_dir / "s.sock", appendfsync="always")


@pytest.fixture
def server(data_dir: Path) -> Iterator[FalkorDB]:
    process = killable(data_dir)
    process.start()
    yield process
    process.terminate()


@asynccontextmanager
async def graph(server: FalkorDB) -> AsyncIterator[GraphClient]:
    connection = connect(DatabaseTarget("test", "g", socket=server.socket), max_connections=4)
    try:
        client = GraphClient(connection, "g")
        await client.query("RETURN 1", create=True)  # the graph exists from here, as a workspace's does
        yield client
    finally:
        await connection.close()


async def restart_after(server: FalkorDB, delay_s: float) -> None:
    await asyncio.sleep(delay_s)
    await asyncio.to_thread(server.start)


async def test_the_driver_never_resends_a_command_by_itself(server: FalkorDB) -> None:
    # redis-py's own retry would re-send a write whose reply was lost: a second copy of it.
    async with graph(server) as client:
        made = client.connection.pool.make_connection()
        assert made.retry.get_retries() == 0
        assert type(made).__name__ == "_TrackedUnixConnection"
        assert await client.ping()  # and the FalkorDB client built on the pool still works


async def test_a_write_sent_while_the_server_is_down_is_sent_once_it_is_back(server: FalkorDB) -> None:
    async with graph(server) as client:
        await client.query("CREATE (:N {i: 0})")
        server.kill()
        # Down for a second: the write cannot reach it, waits, and is sent to the new server. Gathered, so that a
        # restart that fails ends the test at once (in CI on 2026-11-30 the write waited on a server that never
        # answered until the 300-s timeout, and the restart's own failure was never seen).
        rows, _ = await asyncio.gather(client.query("CREATE (n:N {i: 1}) RETURN n.i"), restart_after(server, 1.0))
        assert rows == [[1]]
        assert await client.ro_query("MATCH (n:N) RETURN n.i ORDER BY n.i") == [[0], [1]]


async def test_a_read_made_while_the_server_is_down_answers_once_it_is_back(server: FalkorDB) -> None:
    async with graph(server) as client:
        await client.query("CREATE (:N {i: 7})")
        server.kill()
        found, _ = await asyncio.gather(client.ro_query("MATCH (n:N) RETURN n.i"), restart_after(server, 1.0))
        assert found == [[7]]


async def test_a_write_in_flight_when_the_server_dies_is_reported_not_resent(server: FalkorDB) -> None:
    async with graph(server) as client:
        await client.query("CREATE (:N)")
        writing = asyncio.create_task(client.query(SLOW_WRITE))
        await asyncio.sleep(0.3)  # the query is running on the server
        assert not writing.done()
        server.kill()
        with pytest.raises(WriteInterrupted) as caught:
            await writing
        # What the user hears: retriable, and why a retry is safe (no disk to blame here).
        told = user_error(caught.value, DiskGuard(None, 0))
        assert isinstance(told, DatabaseInterrupted) and str(told) == INTERRUPTED
        server.start()
        # The interrupted write was not sent again behind the caller's back: at most the one copy.
        rows = await client.ro_query("MATCH (b:Bulk) RETURN count(b)")
        assert rows[0][0] in (0, 3_000_000)


async def test_a_call_fails_clearly_when_the_server_stays_down(data_dir: Path) -> None:
    server = killable(data_dir)
    server.start()
    connection = connect(DatabaseTarget("test", "g", socket=server.socket), recovery_timeout_s=1.0)
    try:
        client = GraphClient(connection, "g")
        await client.query("CREATE (:N)", create=True)
        server.kill()
        with pytest.raises(DatabaseUnavailable, match="did not come back within 1 s") as caught:
            await client.query("CREATE (:N)")
        assert not isinstance(caught.value, WriteInterrupted), "a write that never left is not 'interrupted'"
        told = user_error(caught.value, DiskGuard(None, 0))
        assert isinstance(told, StorageUnavailable) and str(told) == UNAVAILABLE
    finally:
        await connection.close()


def test_restarts_slow_down_but_never_stop() -> None:
    delays = [restart_delay(n) for n in range(1, 40)]
    assert delays[0] == 0.0  # a first crash is restarted at once
    assert delays[1:5] == [1.0, 2.0, 4.0, 8.0]
    assert max(delays) == MAX_RESTART_DELAY_S == delays[-1]


def test_a_failed_snapshot_neither_blocks_the_keepers_stop_nor_refuses_writes(data_dir: Path) -> None:
    # Without these, on a full disk redis-server refuses to exit on SIGTERM (its final RDB save
    # fails) and refuses every write with MISCONF after a failed background save.
    command = " ".join(server_command(EmbeddedPaths(data_dir), "always"))
    assert "--shutdown-on-sigterm force" in command
    assert "--stop-writes-on-bgsave-error no" in command
