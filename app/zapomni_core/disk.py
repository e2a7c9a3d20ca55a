"""Free space on the embedded data directory's disk: writes are refused before the database's log would fail.

Why: the embedded FalkorDB logs every write to its append-only file with `appendfsync always`;
when that write fails for want of space, redis-server exits ("Can't recover from AOF write error
when the AOF fsync policy is 'always'"), dropping the write in flight. Measured on a 16 MB tmpfs
(redis-server 8.2.3 + FalkorDB 4.16.3): it truncates the partial record first, so the log stays
loadable, and it starts again on the full disk, answering reads, until the next write that does
not fit. Checking the free space before each write, with room for what the write adds, keeps the
database from reaching that point; writes resume by themselves once space is freed.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

from zapomni_core.errors import StorageFull

MB = 1024 * 1024
# The append-only file logs each vector as text: measured through `add_memory` with the 384-d
# MiniLM embedder, a chunk grows it by 10.6 KB (17-20 bytes per byte of text). 24 bytes per
# dimension (the vector as text plus the chunk's text and term lists) and 3x the text (the
# memory's text, its chunks' overlapping texts) over-estimate that by about 10 %.
AOF_BYTES_PER_DIMENSION = 24
# The fewest bytes of text a chunk holds in practice (token-dense text: about 640), so that the
# number of chunks of a text not yet split is not under-estimated.
TEXT_BYTES_PER_CHUNK = 600


def write_estimate(text_bytes: int, dimension: int, chunks: int | None = None) -> int:
    """Bytes an add of `text_bytes` of text grows the append-only file by (`chunks`: if known)."""
    count = chunks if chunks is not None else text_bytes // TEXT_BYTES_PER_CHUNK + 1
    return count * dimension * AOF_BYTES_PER_DIMENSION + 3 * text_bytes


@dataclass(frozen=True)
class DiskStatus:
    data_dir: Path
    free_bytes: int
    min_free_bytes: int
    low: bool  # below the threshold: writes are refused

    def describe(self) -> str:
        return f"{self.free_bytes / MB:.1f} MB free on the disk of {self.data_dir}"

    @property
    def threshold(self) -> str:
        return f"ZAPOMNI_MIN_FREE_MB={self.min_free_bytes / MB:g}"

    @property
    def warning(self) -> str | None:
        """What to tell a person while the disk is low; None when it is not."""
        if not self.low:
            return None
        return (
            f"Low disk space: {self.describe()}, below {self.threshold}. "
            "Writes are refused until space is freed; searches and reads go on."
        )


class DiskGuard:
    """Checks the data directory's free space before each write; `data_dir=None` (server mode) checks nothing.

    In server mode the database's disk is not this machine's to look at: the server's own errors
    (MISCONF) are what tells a write was refused.
    """

    def __init__(self, data_dir: Path | None, min_free_bytes: int) -> None:
        self._data_dir = data_dir
        self._min_free_bytes = min_free_bytes

    def status(self) -> DiskStatus | None:
        if self._data_dir is None:
            return None
        free = shutil.disk_usage(_existing(self._data_dir)).free
        return DiskStatus(self._data_dir, free, self._min_free_bytes, free < self._min_free_bytes)

    async def ensure_writable(self, estimated_bytes: int = 0) -> None:
        """Raise StorageFull when the write would leave less than the threshold free; nothing is written."""
        if self._data_dir is None:
            return
        status = await asyncio.to_thread(self.status)
        if status is None or status.free_bytes - estimated_bytes >= status.min_free_bytes:
            return
        need = f", this write needs about {_size(estimated_bytes)}" if estimated_bytes else ""
        raise StorageFull(
            f"The disk is too full to store this: {status.describe()}{need}, and writes leave at least "
            f"{_size(status.min_free_bytes)} free ({status.threshold}). Nothing was stored. "
            "Searches and reads go on; free some space and retry: writes resume by themselves.",
            paths=(status.data_dir,),
        )

    def full_after_failure(self) -> StorageFull | None:
        """StorageFull when a write the database dropped (it stopped, or refused it) is explained by the disk."""
        status = self.status()
        if status is None or not status.low:
            return None
        return StorageFull(
            f"The database could not store this write because its disk is full: {status.describe()} "
            f"(writes need {_size(status.min_free_bytes)} free, {status.threshold}). Nothing was stored. "
            "Searches and reads go on; free some space and retry: writes resume by themselves.",
            paths=(status.data_dir,),
        )


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n < MB else f"{n / MB:.1f} MB"


def _existing(path: Path) -> Path:
    """`path` or its nearest existing parent: a data directory not created yet is on its parent's disk."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path
