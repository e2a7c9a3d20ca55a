"""A disk that fills up under the embedded database (something else filled it): on a real small tmpfs.

Measured behaviour this builds on: with appendfsync always, redis-server exits when an AOF write
fails, having truncated the partial record; the keeper starts it again, it loads its log on the
full disk and answers reads. The write in flight was not stored.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import fill_disk, mounted_tmpfs, server_pids, wait_for
from zapomni_core.disk import MB, DiskGuard, write_estimate
from zapomni_core.errors import StorageFull
from zapomni_core.faults import user_error
from zapomni_db import DatabaseTarget, EmbeddedDatabase, GraphClient, PersistenceFailed, WriteInterrupted, connect
from zapomni_db.server import direct_client, falkordb_command, is_ready

pytestmark = pytest.mark.anyio

PAYLOAD = [0.123456789] * 384  # about what one chunk's vector weighs in the AOF


@pytest.fixture
def small_disk() -> Iterator[Path]:
    with mounted_tmpfs("16m") as path:
        yield path


async def test_a_write_the_full_disk_stopped_is_storage_full_and_reads_go_on(small_disk: Path) -> None:
    database = EmbeddedDatabase(small_disk, appendfsync="always")
    await asyncio.to_thread(database.open)
    connection = connect(DatabaseTarget("test", "g", socket=database.socket))
    filler: Path | None = None
    try:
        client = GraphClient(connection, "g")
        for i in range(5):
            await client.query("CREATE (:N {i: $i, v: $v})", {"i": i, "v": PAYLOAD})
        first_server = server_pids(small_disk)
        filler = fill_disk(small_disk, leave_bytes=64 * 1024)

        stored, failure = 5, None
        for i in range(5, 100):
            try:
                await client.query("CREATE (:N {i: $i, v: $v})", {"i": i, "v": PAYLOAD})
                stored += 1
            except WriteInterrupted as exc:  # the server exited on the AOF write error
                failure = exc
                break
        assert failure is not None, "the disk never filled up"

        guard = DiskGuard(small_disk, min_free_bytes=1 * MB)
        mapped = user_error(failure, guard)
        assert isinstance(mapped, StorageFull)
        assert str(small_disk) in str(mapped) and "MB free" in str(mapped)
        assert "Nothing was stored" in str(mapped)
        with pytest.raises(StorageFull):  # and a write checked first is refused before it is sent
            await guard.ensure_writable(write_estimate(1000, 384))

        # The keeper restarts the server on the full disk; reads answer (after waiting for it).
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[stored]]
        assert server_pids(small_disk) != first_server

        filler.unlink()
        filler = None
        assert guard.status() is not None and not guard.status().low  # type: ignore[union-attr]
        await guard.ensure_writable(write_estimate(1000, 384))
        await client.query("CREATE (:N {i: 1000, v: $v})", {"v": PAYLOAD})
        assert await client.ro_query("MATCH (n:N) RETURN count(n)") == [[stored + 1]]
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
            await client.query("CREATE (:N {i: $i, t: $t})", {"i": i, "t": os.urandom(1000).hex()})
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
