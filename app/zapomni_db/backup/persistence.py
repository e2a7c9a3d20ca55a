"""Waiting on a server's background persistence (INFO persistence): an RDB save, an AOF rewrite."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from zapomni_db.backup.errors import BackupError


def _wait_for_persistence(
    client: redis.Redis, done: Callable[[dict[str, Any]], bool], *, deadline: float, too_late: str
) -> dict[str, Any]:
    """Poll INFO persistence until `done` says so and return it; BackupError(`too_late`) after `deadline`."""
    while True:
        persistence = client.info("persistence")
        if done(persistence):
            return persistence
        if time.monotonic() > deadline:
            raise BackupError(too_late)
        time.sleep(0.05)


def saves(persistence: dict[str, Any]) -> int:
    """The server's count of RDB saves so far (rdb_saves)."""
    return int(persistence.get("rdb_saves", 0))


def wait_until_no_save(client: redis.Redis, deadline: float) -> dict[str, Any]:
    """Wait until no RDB save or AOF rewrite runs (either would make BGSAVE refuse)."""

    def idle(persistence: dict[str, Any]) -> bool:
        busy = ("rdb_bgsave_in_progress", "aof_rewrite_in_progress")
        return not any(int(persistence.get(key, 0)) for key in busy)

    return _wait_for_persistence(
        client, idle, deadline=deadline, too_late="the server's snapshot did not finish in time"
    )


def wait_for_aof_rewrite(client: redis.Redis, timeout_s: float) -> None:
    """Wait until turning the AOF on has written its base file (a background rewrite) and it is on."""

    def written(info: dict[str, Any]) -> bool:
        # A failed rewrite is retried by Redis in the background; we stop at the first failure.
        if info.get("aof_last_bgrewrite_status") != "ok" or int(info.get("aof_rewrites_consecutive_failures", 0)):
            raise BackupError("writing the AOF from the restored snapshot failed (a full disk?)")
        busy = int(info.get("aof_rewrite_in_progress", 0)) or int(info.get("aof_rewrite_scheduled", 0))
        return bool(not busy and int(info.get("aof_enabled", 0)) and int(info.get("aof_rewrites", 0)))

    _wait_for_persistence(
        client,
        written,
        deadline=time.monotonic() + timeout_s,
        too_late="writing the AOF from the restored snapshot did not finish in time",
    )
