"""A disk that fills up under the embedded database (something else filled it): on a real small tmpfs.

Measured behaviour this builds on: with appendfsync always, redis-server exits when an AOF write
fails, having truncated the partial record; it loads its log again on the full disk and answers
reads. The write in flight was not stored. The keeper starts it again with writes suspended until
there is room (and suspends them before that when it sees the disk all but full), so no later write
stops it again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import fill_disk, mounted_tmpfs, server_pids, wait_for
from zapomni_core.disk import DiskGuard, write_estimate
from zapomni_core.errors import StorageFull
from zapomni_core.faults import user_error
from zapomni_db import (
    DatabaseTarget,
    EmbeddedDatabase,
    GraphClient,
    PersistenceFailed,
    WriteInterrupted,
    WritesSuspended,
    connect,
    read_suspension,
)
from zapomni_db.disk_state import SUSPEND_BELOW_BYTES
from zapomni_db.server import direct_client, is_ready
from zapomni_db.server_commands import falkordb_command

pytestmark = pytest.mark.anyio

PAYLOAD = [0.123456789] * 384  # about what one chunk's vector weighs in the AOF


@pytest.fixture
def small_disk() -> Iterator[Path]:
    with mounted_tmpfs("16m") as path:
        yield path


async def test_a_write_the_full_disk_stopped_suspends_writes_instead_of_a_restart_loop(small_disk: Path) -> None:
    database = EmbeddedDatabase(small_disk, appendfsync="always")
    await asyncio.to_thread(database.open)
    connection = connect(DatabaseTarget("test", "g", socket=database.socket))
    filler: Path | None = None
    try:
        client = GraphClient(connection, "g")
        for i in range(5):
            await client.query("CREATE (:N {i: $i, v: $v})", {"i": i, "v": PAYLOAD}, create=True)
        first_server = server_pids(small_disk)
        # Room enough that the keeper sees no reason to suspend writes, but not for the next write.
        filler = fill_disk(small_disk, leave_bytes=SUSPEND_BELOW_BYTES + 512 * 1024)
        with pytest.raises(WriteInterrupted) as stopped:  # the server exited on the AOF write error
            await client.query("CREATE (:N {i: -1, t: $t})", {"t": os.urandom(SUSPEND_BELOW_BYTES).hex()})

        # The keeper read why in the server's log, and brought it back with writes suspended.
        assert wait_for(lambda: read_suspension(small_disk) is not None, 30)
        suspension = read_suspension(small_disk)
        assert suspension is not None and suspension.crashed and "AOF" in suspension.detail
        guard = DiskGuard(small_disk, min_free_bytes=0)  # the guard off, as with ZAPOMNI_MIN_FREE_MB=0
        mapped = user_error(stopped.value, guard)
        assert isinstance(mapped, StorageFull), mapped
        assert "disk is full" in str(mapped) and "writes are suspended" in str(mapped)
        assert str(small_disk) in str(mapped) and "Nothing was stored" in str(mapped)
        with pytest.raises(StorageFull):  # a write checked first is refused before it is sent
            await guard.ensure_writable(0)

        # Reads go on; every later write is refused, none stops the server again (no restart loop).
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[5]]
        second_server = server_pids(small_disk)
        assert second_server and second_server != first_server
        for i in range(5):
            with pytest.raises(WritesSuspended) as refused:
                await client.query("CREATE (:N {i: $i, v: $v})", {"i": 100 + i, "v": PAYLOAD})
            assert isinstance(user_error(refused.value, guard), StorageFull)
        assert server_pids(small_disk) == second_server
        # a full disk always carries a warning:
        assert (await asyncio.to_thread(guard.status)).warning.startswith("The database's disk is full")  # type: ignore[union-attr]

        filler.unlink()
        filler = None
        assert wait_for(lambda: read_suspension(small_disk) is None, 30), "writes were not resumed"
        await guard.ensure_writable(write_estimate(1000, 384))
        await client.query("CREATE (:N {i: 1000, v: $v})", {"v": PAYLOAD})
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[6]]
        assert server_pids(small_disk) == second_server
    finally:
        if filler is not None:
            filler.unlink()
        await connection.close()
        await asyncio.to_thread(database.close)


async def test_a_disk_filled_by_someone_else_suspends_writes_before_one_fails(small_disk: Path) -> None:
    database = EmbeddedDatabase(small_disk, appendfsync="always")
    await asyncio.to_thread(database.open)
    connection = connect(DatabaseTarget("test", "g", socket=database.socket))
    filler: Path | None = None
    try:
        client = GraphClient(connection, "g")
        await client.query("CREATE (:N {i: 0, v: $v})", {"v": PAYLOAD}, create=True)
        server = server_pids(small_disk)
        filler = fill_disk(small_disk, leave_bytes=0)
        assert wait_for(lambda: read_suspension(small_disk) is not None, 30)
        suspension = read_suspension(small_disk)
        assert suspension is not None and not suspension.crashed
        with pytest.raises(WritesSuspended):
            await client.query("CREATE (:N {i: 1, v: $v})", {"v": PAYLOAD})
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[1]]
        assert server_pids(small_disk) == server  # nothing crashed

        filler.unlink()
        filler = None
        assert wait_for(lambda: read_suspension(small_disk) is None, 30)
        await client.query("CREATE (:N {i: 1, v: $v})", {"v": PAYLOAD})
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[2]]
    finally:
        if filler is not None:
            filler.unlink()
        await connection.close()
        await asyncio.to_thread(database.close)


async def test_a_server_that_refuses_writes_after_a_failed_snapshot_is_storage_full(small_disk: Path) -> None:
    # A server run as in server mode (stop-writes-on-bgsave-error is Redis' default there).
    db_dir, socket = small_disk / "db", small_disk / "s.sock"
    db_dir.mkdir()
    process = subprocess.Popen(
        falkordb_command(db_dir, unix_socket=socket), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    probe = direct_client(unix_socket=socket)
    assert wait_for(lambda: is_ready(probe), 30)
    connection = connect(DatabaseTarget("test", "g", socket=socket))
    filler: Path | None = None
    try:
        client = GraphClient(connection, "g")
        for i in range(300):  # incompressible text: the snapshot needs room
            await client.query("CREATE (:N {i: $i, t: $t})", {"i": i, "t": os.urandom(1000).hex()}, create=True)
        filler = fill_disk(small_disk, leave_bytes=64 * 1024)
        await client.command("BGSAVE")
        assert wait_for(lambda: probe.info("persistence")["rdb_last_bgsave_status"] == "err", 30)
        with pytest.raises(PersistenceFailed) as caught:
            await client.query("CREATE (:N {i: -1})")
        # Without a data directory to look at (server mode), the server's refusal is the answer.
        told = user_error(caught.value, DiskGuard(None, 0))
        assert isinstance(told, StorageFull) and "Nothing was stored" in str(told)
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[300]]  # reads go on
    finally:
        if filler is not None:
            filler.unlink()
        await connection.close()
        probe.close()
        process.kill()
        process.wait()
