"""Files beside the embedded database that must survive a crash as written, and the entries of the processes
present (decision 0045): each holds its own entry locked while it lives, so one a dead process left is seen as such."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from zapomni_db.backup.files import fsync_dir


class Presence:
    """A process's entry among those present (`KeywordIndexDirs.arrive`), held locked until it ends."""

    def __init__(self, path: Path, entry: int) -> None:
        self._path = path
        self._entry: int | None = entry

    def end(self) -> None:
        if self._entry is None:
            return
        self._path.unlink(missing_ok=True)
        os.close(self._entry)
        self._entry = None


def write_durably(directory: Path, name: str, content: dict[str, Any]) -> None:
    """Replace `directory/name` with `content` as JSON, atomically, and so that a crash cannot undo it."""
    temporary = directory / f".{name}.{os.getpid()}.tmp"
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        json.dump(content, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, directory / name)
    fsync_dir(directory)


def unlink_durably(path: Path) -> None:
    """Remove `path` so that a crash cannot bring it back: the store's writes that follow are durable too."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


def others_present(entries: Path) -> bool:
    """Whether a live process has an entry here; entries left by processes that died are removed."""
    for path in entries.iterdir() if entries.is_dir() else ():
        try:
            entry = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(entry, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True  # its process holds it: alive
        finally:
            os.close(entry)
        path.unlink(missing_ok=True)
    return False
