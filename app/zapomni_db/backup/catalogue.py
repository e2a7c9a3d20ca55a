"""A directory of backups: the names of its backups, listing them, and deleting all but the newest.

A backup is written under a hidden temporary name and renamed into place only when complete (and,
by default, verified), so a directory with the final name is always a whole backup.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import structlog

from zapomni_db.backup.errors import BackupInvalid
from zapomni_db.backup.files import stamp, unused_path
from zapomni_db.backup.manifest import Manifest, read_manifest

log = structlog.get_logger(__name__)

BACKUP_PREFIX = "zapomni-"
_NAME = re.compile(r"^zapomni-(\d{8}T\d{6}Z)(?:-(\d+))?$")
_PARTIAL_PREFIX = ".partial-"


@dataclass(frozen=True)
class BackupEntry:
    """A directory named like a backup; `manifest` is None when its manifest is missing or unreadable."""

    path: Path
    manifest: Manifest | None
    problem: str | None = None

    @property
    def complete(self) -> bool:
        return self.manifest is not None


def new_partial_dir(backups_dir: Path) -> Path:
    """A new hidden directory to write a backup in, never named like a backup."""
    return Path(tempfile.mkdtemp(prefix=_PARTIAL_PREFIX, dir=backups_dir))


def final_path(backups_dir: Path, taken_at: datetime) -> Path:
    """The name of the backup taken at `taken_at`, numbered when another was taken the same second."""
    return unused_path(backups_dir / f"{BACKUP_PREFIX}{stamp(taken_at)}")


def _sort_key(path: Path) -> tuple[str, int]:
    match = _NAME.match(path.name)
    assert match is not None
    return match.group(1), int(match.group(2) or 1)


def list_backups(backups_dir: Path) -> list[BackupEntry]:
    """Directories named like backups, oldest first, each with its manifest or the reason it has none."""
    if not backups_dir.is_dir():
        return []
    candidates = [p for p in backups_dir.iterdir() if _NAME.match(p.name) and p.is_dir() and not p.is_symlink()]
    entries = []
    for path in sorted(candidates, key=_sort_key):
        try:
            entries.append(BackupEntry(path, read_manifest(path)))
        except BackupInvalid as exc:
            entries.append(BackupEntry(path, None, str(exc)))
    return entries


def prune_backups(backups_dir: Path, keep: int) -> list[Path]:
    """Delete complete backups older than the newest `keep`; return what was deleted.

    Only directories with a backup's name and a readable manifest count; anything else (partial
    copies, damaged backups, other files) is never touched.
    """
    if keep < 1:
        raise ValueError("keep at least one backup")
    complete = [entry.path for entry in list_backups(backups_dir) if entry.complete]
    doomed = complete[:-keep]
    for path in doomed:
        shutil.rmtree(path)
        log.info("backup.pruned", path=str(path))
    return doomed
