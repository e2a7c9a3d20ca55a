"""Free space on the embedded data directory's disk: writes are refused before the database's log would fail.

Why: the embedded FalkorDB logs every write to its append-only file with `appendfsync always`;
when that write fails for want of space, redis-server exits ("Can't recover from AOF write error
when the AOF fsync policy is 'always'"), dropping the write in flight. Measured on a 16 MB tmpfs
(redis-server 8.2.3 + FalkorDB 4.16.3): it truncates the partial record first, so the log stays
loadable, and it starts again on the full disk, answering reads, until the next write that does
not fit. Checking the free space before each write, with room for what the write adds, keeps the
database from reaching that point; writes resume by themselves once space is freed.

That check is no reservation: concurrent writers, or another program filling the disk, can still
fill it to the last byte. The keeper then suspends the database's writes until there is room
(`zapomni_db.disk_state`); `DiskStatus.suspension` carries that here, so that every refusal, the
statistics, the health check and the jobs' status say the disk is full rather than "restarting".
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

from zapomni_core.errors import StorageFull
from zapomni_db import WriteSuspension, read_suspension

MB = 1024 * 1024
# The append-only file logs each vector as text: measured through `add_memory` with the 384-d
# MiniLM embedder, a chunk grows it by 10.6 KB (17-20 bytes per byte of text). 24 bytes per
# dimension (the vector as text plus the chunk's text and term lists) and 3x the text (the
# memory's text, its chunks' overlapping texts) over-estimate that by about 10 %.
AOF_BYTES_PER_DIMENSION = 24
# The fewest bytes of text a chunk holds in practice (token-dense text: about 640), so that the
# number of chunks of a text not yet split is not under-estimated.
TEXT_BYTES_PER_CHUNK = 600
# A write the database dropped with less than this free on its disk was dropped for want of space.
NEARLY_FULL_BYTES = 1 * MB


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
    suspension: WriteSuspension | None = None  # the database's own writes are suspended: its disk is full

    @property
    def refusing(self) -> bool:
        """Writes are refused, by this process (low) or by the database (full), and background jobs wait."""
        return self.low or self.suspension is not None

    def describe(self) -> str:
        return f"{self.free_bytes / MB:.1f} MB free on the disk of {self.data_dir}"

    @property
    def threshold(self) -> str:
        return f"ZAPOMNI_MIN_FREE_MB={self.min_free_bytes / MB:g}"

    @property
    def full(self) -> str | None:
        """Why the database refuses writes while its disk is full; None when it does not."""
        if self.suspension is None:
            return None
        how = "a write did not fit and it stopped" if self.suspension.crashed else "the next write would not fit"
        if self.free_bytes >= self.suspension.resume_free_bytes:  # freed since: the keeper lifts it at its next look
            return (
                f"The database's disk was full ({how}) and its writes are still suspended, though {self.describe()} "
                "now: they resume within seconds, retry then"
            )
        return (
            f"The database's disk is full ({self.describe()}): {how}, so writes are suspended until "
            f"{_size(self.suspension.resume_free_bytes)} are free"
        )

    @property
    def warning(self) -> str | None:
        """What to tell a person while writes are refused for want of space; None when they are not."""
        if self.full is not None:
            return (
                f"{self.full}, and background jobs are paused. Searches and reads go on; "
                "free some space: writes and jobs resume by themselves."
            )
        if not self.low:
            return None
        return (
            f"Low disk space: {self.describe()}, below {self.threshold}. "
            "Writes are refused and background jobs are paused until space is freed; searches and reads go on."
        )

    @property
    def pause_reason(self) -> str | None:
        """Why background jobs wait, in a few words; None when they need not."""
        if self.suspension is not None:
            return f"the database's disk is full ({self.describe()}); jobs resume once space is freed"
        if self.low:
            return f"low disk space ({self.describe()}, below {self.threshold}); jobs resume once space is freed"
        return None


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
        suspension = read_suspension(self._data_dir)
        return DiskStatus(self._data_dir, free, self._min_free_bytes, free < self._min_free_bytes, suspension)

    async def ensure_writable(self, estimated_bytes: int = 0) -> None:
        """Raise StorageFull when the write would leave less than the threshold free; nothing is written."""
        if self._data_dir is None:
            return
        status = await asyncio.to_thread(self.status)
        if status is not None and status.full is not None:
            raise StorageFull(f"{status.full}. Nothing was stored. {_RESUME}", paths=(status.data_dir,))
        if status is None or status.free_bytes - estimated_bytes >= status.min_free_bytes:
            return
        need = f", this write needs about {_size(estimated_bytes)}" if estimated_bytes else ""
        raise StorageFull(
            f"The disk is too full to store this: {status.describe()}{need}, and writes leave at least "
            f"{_size(status.min_free_bytes)} free ({status.threshold}). Nothing was stored. {_RESUME}",
            paths=(status.data_dir,),
        )

    def full_after_failure(self) -> StorageFull | None:
        """StorageFull when a write the database dropped (it stopped, or refused it) is explained by the disk."""
        status = self.status()
        if status is None:
            return None
        if status.full is not None:
            return StorageFull(f"{status.full}. Nothing was stored. {_RESUME}", paths=(status.data_dir,))
        if status.low:
            return StorageFull(
                f"The database could not store this write because its disk is full: {status.describe()} "
                f"(writes need {_size(status.min_free_bytes)} free, {status.threshold}). Nothing was stored. {_RESUME}",
                paths=(status.data_dir,),
            )
        if status.free_bytes < NEARLY_FULL_BYTES:  # the keeper has not said so yet, but nothing else fits either
            return StorageFull(
                f"The database could not store this write because its disk is full: {status.describe()}. "
                f"Nothing was stored. {_RESUME}",
                paths=(status.data_dir,),
            )
        return None


_RESUME = "Searches and reads go on; free some space and retry: writes resume by themselves."


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n < MB else f"{n / MB:.1f} MB"


def _existing(path: Path) -> Path:
    """`path` or its nearest existing parent: a data directory not created yet is on its parent's disk."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path
