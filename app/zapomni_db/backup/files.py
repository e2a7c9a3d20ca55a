"""Files as backups and restores write them: checksummed and fsynced, under fresh stamped names."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
_BLOCK = 1 << 20


def _digest(source: BinaryIO, copy_to: BinaryIO | None = None) -> tuple[int, str]:
    """Size and sha256 of what is left to read in `source`, written on to `copy_to` as it goes when given."""
    digest = hashlib.sha256()
    size = 0
    while block := source.read(_BLOCK):
        digest.update(block)
        if copy_to is not None:
            copy_to.write(block)
        size += len(block)
    return size, digest.hexdigest()


def file_digest(path: Path) -> tuple[int, str]:
    """Size and sha256 of a file."""
    with path.open("rb") as handle:
        return _digest(handle)


def private_file(path: Path) -> BinaryIO:
    """`path` opened for writing (created or truncated) as this user's only, 0600 whatever the umask.

    A backup holds every memory: a copied or archived backup tree keeps its files' modes.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode on O_CREAT
    return os.fdopen(fd, "wb")


def copy_open_file(source: BinaryIO, target: Path) -> tuple[int, str]:
    """Copy from an open binary file, hashing as it goes, and fsync the copy (0600); its size and sha256."""
    with private_file(target) as out:
        size, sha256 = _digest(source, out)
        out.flush()
        os.fsync(out.fileno())
    return size, sha256


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stamp(at: datetime | None = None) -> str:
    """`at` (default: now) as a UTC stamp for a file name, e.g. 20250102T030405Z."""
    return (at or datetime.now(UTC)).strftime(STAMP_FORMAT)


def unused_path(path: Path) -> Path:
    """`path`, or when that exists the first of `path`-2, `path`-3, ... that does not."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
