"""The embedded database's disk as its keeper sees it: writes suspended while the disk is full, and why.

redis-server with `appendfsync always` exits when a write to its append-only file fails for want of
space ("Short write while writing to the AOF file", then "Can't recover from AOF write error"). A
keeper that simply restarts it restarts it into the next write that does not fit: a loop, with
every client told only that the database is restarting. Instead the keeper (`zapomni_db.keeper`)
suspends writes: it runs the server with `min-replicas-to-write 1` (an embedded server has no
replicas, so every write is refused with NOREPLICAS, reads go on), and lifts it once the disk has
room again. It does so when a write did not fit (the server exited, its log says why) and, before
that, whenever the free space falls below `SUSPEND_BELOW_BYTES`, since the next write would crash it.

The keeper records the suspension in `run/storage.json` for every client of the data directory
(tool errors, get_stats, job status, health). That file is written in place at a fixed size: on a
full disk a new file, or a bigger one, might not fit.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from zapomni_db.embedded_layout import EmbeddedPaths

MB = 1024 * 1024
# Below this the next write to the append-only file may not fit (a slice of chunks is ~0.4 MB).
SUSPEND_BELOW_BYTES = 1 * MB
# Writes resume with room for a few slices, so that the first ones do not fill the disk at once again.
RESUME_AT_BYTES = 8 * MB
_STATE_SIZE = 1024
# What redis-server logs when a write to its files failed (then it exits, with appendfsync always).
_WRITE_FAILURES = (
    "Short write while writing to the AOF",
    "Error writing to the AOF file",
    "Can't recover from AOF write error",
    "No space left on device",
    "Disk quota exceeded",
)


@dataclass(frozen=True)
class WriteSuspension:
    """Writes are refused since `since` (epoch seconds) until `resume_free_bytes` are free again."""

    since: float
    free_bytes: int  # when the keeper suspended writes
    resume_free_bytes: int
    crashed: bool  # a write did not fit and the server exited (else: suspended before that happened)
    detail: str = ""  # the server's log line, when it exited


def state_file(paths: EmbeddedPaths) -> Path:
    return paths.run_dir / "storage.json"


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free


def write_state(paths: EmbeddedPaths, suspension: WriteSuspension | None) -> bool:
    """Record `suspension` (None: writes allowed) in place, padded to a fixed size; False when it could not."""
    record = json.dumps({"suspended": asdict(suspension) if suspension else None})
    data = record.encode()[: _STATE_SIZE - 1].ljust(_STATE_SIZE - 1) + b"\n"
    try:
        fd = os.open(state_file(paths), os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        # Same offset, same size: the blocks are already the file's, so this fits on a full disk.
        return os.pwrite(fd, data, 0) == len(data)
    except OSError:
        return False
    finally:
        os.close(fd)


def read_suspension(data_dir: Path) -> WriteSuspension | None:
    """The keeper's suspension of writes for the embedded database of `data_dir`; None: none recorded."""
    path = state_file(EmbeddedPaths(data_dir))
    for _attempt in (1, 2):  # a read that met the keeper's write half-way parses on the next try
        try:
            record = json.loads(path.read_bytes() or b"{}")
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            continue
        suspended = record.get("suspended") if isinstance(record, dict) else None
        if not isinstance(suspended, dict):
            return None
        with contextlib.suppress(TypeError):
            return WriteSuspension(**suspended)
        return None
    return None


def _log_since(log_file: Path, offset: int) -> str:
    try:
        with log_file.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def served(log_file: Path, offset: int) -> bool:
    """Whether the server that logged from `offset` on got as far as accepting connections."""
    return "Ready to accept connections" in _log_since(log_file, offset)


def write_failure(log_file: Path, offset: int) -> str | None:
    """The line redis-server logged past `offset` of its log saying a write to its files failed, if any."""
    text = _log_since(log_file, offset)
    lines = [line for line in text.splitlines() if any(marker in line for marker in _WRITE_FAILURES)]
    return lines[0].partition(" # ")[2].strip() or lines[0].strip() if lines else None
