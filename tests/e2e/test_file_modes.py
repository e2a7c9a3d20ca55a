"""Everything Zapomni writes under its data directory is this user's only: files 0600, directories 0700.

The data directory itself is 0700, but a copied or backed-up tree keeps the modes of what is inside it,
so the database's own files (AOF, manifest, RDB, its log), the keeper's log and pid, the locks and every
backup must be private too. Run the way a user runs it: `zapomni serve` through the MCP client, a large
add (a background job), `zapomni backup` while the server runs, then a clean stop (the final save).
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.processes import ZAPOMNI, call, mcp_session, server_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def exposed(root: Path) -> list[str]:
    """Every path under `root` (itself included) that a group or other users may read, write or enter."""
    found = []
    for directory, dirs, files in os.walk(root):
        for path in [Path(directory)] + [Path(directory, name) for name in dirs + files]:
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or stat.S_ISSOCK(mode):
                continue  # a link has no mode of its own; the socket is made 0700 by redis-server itself
            if mode & 0o077:
                found.append(f"{path.relative_to(root)} {stat.filemode(mode)}")
    return sorted(set(found))


async def test_nothing_in_the_data_directory_or_its_backups_is_readable_by_others(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    old_umask = os.umask(0o022)  # the usual umask: what Zapomni does not set explicitly comes out 0644/0755
    try:
        async with mcp_session(data_dir) as session:
            await call(session, "add_memory", {"text": "The lighthouse keeper logs the weather at dawn."})
            large = " ".join(f"Entry {i}: the tide rose by {i % 7} cm near pier {i % 13}." for i in range(900))
            added = await call(session, "add_memory", {"text": large})
            await call(session, "job_status", {"job_id": added["job_id"], "wait_s": 50})
            backup = subprocess.run(
                [ZAPOMNI, "backup"], env=server_env(data_dir), capture_output=True, text=True, timeout=300
            )
            assert backup.returncode == 0, backup.stderr
    finally:
        os.umask(old_umask)
    written = {path.name for path in data_dir.rglob("*")}
    # The test sees what it claims to: the server's files, its log, the keeper's, and a backup.
    assert {"redis.log", "keeper.log", "appendonlydir", "dump.rdb", "backups", "manifest.json"} <= written, written
    assert exposed(data_dir) == []
