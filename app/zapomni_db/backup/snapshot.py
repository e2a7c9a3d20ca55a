"""A consistent snapshot of a running server (BGSAVE), and copying its files into a backup.

Consistency: the server's counts, schema version and embedder are read just before and just after
the BGSAVE forks; when both reads agree, that is what the snapshot holds, and a scratch server that
loads the copy must find exactly that (`matched_server` in the manifest). The probe, a top-k vector
query, is recorded from that load: a live server's vector index may answer differently (see
`_state_and_saves`), a loaded RDB always the same. The RDB on disk is our snapshot only until the
server saves again; the copy checks the server's save counter after opening the file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis
import structlog

from zapomni_db.backup.errors import BackupError
from zapomni_db.backup.files import copy_open_file, fsync_dir
from zapomni_db.backup.graph_state import GraphState, parse_state, queue_state, text
from zapomni_db.backup.manifest import AOF_DIR_NAME, RDB_NAME, FileEntry
from zapomni_db.backup.persistence import saves, wait_until_no_save

log = structlog.get_logger(__name__)

# Another save landing between ours and the copy is rare (save points are minutes apart); a few
# tries are plenty, and a server that saves continuously is worth an error rather than a loop.
_SNAPSHOT_ATTEMPTS = 3
_AOF_COPY_ATTEMPTS = 3


@dataclass(frozen=True)
class Snapshot:
    """A BGSAVE that finished, and the server's state (no probe) at its fork when that could be pinned down.

    `state` is None when writes landed between the reads around the BGSAVE: the snapshot then
    holds some state between the two, and only the file itself can say which.
    """

    state: GraphState | None
    saves: int  # the server's rdb_saves counter once our save had started
    saved_at: float  # the server's rdb_last_save_time after our save
    taken_at: datetime
    redis_version: str
    falkordb_version: str


def take_snapshot(client: redis.Redis, graph: str, *, attempts: int = 3, timeout_s: float = 3600.0) -> Snapshot:
    """BGSAVE between two reads of the state, and wait until the RDB is written.

    The reads run in MULTI/EXEC, on the server's main thread, so no FalkorDB write commits in the
    middle of one. When both reads agree (and the save started between them), that is the state
    at the fork. A BGSAVE inside the MULTI would not do: Redis only schedules it there, to fork up
    to 100 ms later. CLIENT PAUSE WRITE would not do either: with a FalkorDB write in flight it
    crashes the server (Redis 8.2 asserts on the write the module propagates while paused).
    """
    deadline = time.monotonic() + timeout_s
    for attempt in range(1, attempts + 1):
        wait_until_no_save(client, deadline)
        taken_at = datetime.now(UTC)
        before, saves_before = _state_and_saves(client, graph)
        try:
            client.bgsave()
        except redis.ResponseError as exc:
            # An automatic save or an AOF rewrite got in first: wait for it and take our own.
            log.info("backup.snapshot.waiting", reason=str(exc))
            continue
        after, saves_after = _state_and_saves(client, graph)
        stable = before == after and saves_after == saves_before + 1
        if stable or attempt == attempts:
            break
        # Writes landed in the few milliseconds around the fork: let the save finish and retry.
        log.info("backup.snapshot.moving", attempt=attempt)
        wait_until_no_save(client, deadline)
    else:
        raise BackupError("the server kept refusing to snapshot (another save or AOF rewrite was always running)")
    persistence = wait_until_no_save(client, deadline)
    if persistence.get("rdb_last_bgsave_status") != "ok":
        raise BackupError("the server could not write its snapshot (rdb_last_bgsave_status is not ok; see its log)")
    if not stable:
        log.warning("backup.snapshot.moving", detail="writes kept landing; the manifest will describe the file")
    return Snapshot(
        state=before if stable else None,
        saves=saves_after,
        saved_at=float(persistence.get("rdb_last_save_time", 0)),
        taken_at=taken_at,
        redis_version=str(client.info("server").get("redis_version", "unknown")),
        falkordb_version=_falkordb_version(client),
    )


def _state_and_saves(client: redis.Redis, graph: str) -> tuple[GraphState, int]:
    # No probe on the live server: its index may have been built by replaying the AOF, and
    # FalkorDB 4.16 then answers a top-k vector query with only k/2 nodes. The probe is taken
    # from a load of the copied RDB instead, which is how a restored server builds its index.
    pipe = client.pipeline(transaction=True)
    queue_state(pipe, graph, probe=False)
    pipe.info("persistence")
    replies = pipe.execute(raise_on_error=False)
    return parse_state(replies[:-1]), saves(replies[-1])


def _falkordb_version(client: redis.Redis) -> str:
    with contextlib.suppress(redis.RedisError):
        for module in client.execute_command("MODULE", "LIST"):  # redis-py parses each into a dict
            if text(module.get(b"name")) == "graph":
                return str(module.get(b"ver"))
    return "unknown"


def server_file_names(client: redis.Redis) -> tuple[str, str]:
    """The server's RDB file and AOF directory names (CONFIG may be renamed away: then the defaults)."""
    names = [RDB_NAME, AOF_DIR_NAME]
    for i, key in enumerate(("dbfilename", "appenddirname")):
        with contextlib.suppress(redis.RedisError):
            value = client.config_get(key).get(key)
            if value:
                names[i] = str(value)
    return names[0], names[1]


def snapshot_and_copy(client: redis.Redis, graph: str, rdb: Path, target_dir: Path) -> tuple[Snapshot, FileEntry]:
    """Take a snapshot and copy its RDB (the server's file `rdb`) into `target_dir`, again if the server saved again."""
    for attempt in range(1, _SNAPSHOT_ATTEMPTS + 1):
        snapshot = take_snapshot(client, graph)
        log.info("backup.snapshot", state_pinned=snapshot.state is not None)
        try:
            entry = _copy_snapshot_rdb(client, snapshot, rdb, target_dir)
        except FileNotFoundError:
            raise BackupError(
                f"the snapshot is not at {rdb}: is this the server's data directory (FALKORDB_DATA_DIR in server "
                "mode), readable by this process?"
            ) from None
        if entry is not None:
            return snapshot, entry
        log.info("backup.snapshot.superseded", attempt=attempt)
    raise BackupError("the server kept saving new snapshots while the backup copied its file; try again")


def _copy_snapshot_rdb(client: redis.Redis, snapshot: Snapshot, source: Path, target_dir: Path) -> FileEntry | None:
    """Copy the RDB our BGSAVE wrote; None when the server saved again before we opened it (retry)."""
    with source.open("rb") as handle:
        # Redis replaces dump.rdb by rename, so an open file stays the one we opened: if no other
        # save has started by now, it is ours whatever happens next.
        if saves(client.info("persistence")) != snapshot.saves:
            return None
        mtime = os.fstat(handle.fileno()).st_mtime
        if mtime + 2 < snapshot.saved_at:
            raise BackupError(
                f"{source} is older than the snapshot the server just wrote: is this the server's data "
                "directory (FALKORDB_DATA_DIR in server mode)?"
            )
        return FileEntry(RDB_NAME, *copy_open_file(handle, target_dir / RDB_NAME))


def copy_aof(source_dir: Path, target_dir: Path) -> list[FileEntry]:
    """Copy the AOF directory; a rewrite replacing files under us means another try."""
    for attempt in range(1, _AOF_COPY_ATTEMPTS + 1):
        shutil.rmtree(target_dir, ignore_errors=True)
        target_dir.mkdir(mode=0o700)
        try:
            entries = []
            for path in sorted(p for p in source_dir.iterdir() if p.is_file()):
                with path.open("rb") as handle:
                    size, sha256 = copy_open_file(handle, target_dir / path.name)
                entries.append(FileEntry(f"{target_dir.name}/{path.name}", size, sha256))
            fsync_dir(target_dir)
            return entries
        except FileNotFoundError:
            log.info("backup.aof_changed_during_copy", attempt=attempt)
    # The AOF is only a secondary copy: the backup stands on its RDB.
    shutil.rmtree(target_dir, ignore_errors=True)
    log.warning("backup.aof_skipped", reason="the AOF kept changing while it was copied")
    return []
