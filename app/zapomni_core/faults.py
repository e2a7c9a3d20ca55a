"""Storage failures as a user should hear them: which ones are worth a retry, and whether anything was stored.

The db layer tells three failures apart (zapomni_db.connection): a call that never reached the
server (already retried once there), a write cut off after it was sent (it may be stored), and
a server that refuses writes because it cannot write its files. Each becomes a ZapomniError
here; a full disk explains any of them when the data directory's disk is below its threshold.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from zapomni_core.disk import DiskGuard
from zapomni_core.errors import DatabaseInterrupted, StorageFull, StorageUnavailable, ZapomniError
from zapomni_db import DatabaseError, DatabaseUnavailable, PersistenceFailed, WriteInterrupted

INTERRUPTED = (
    "The database restarted while this write was in flight, so it may or may not have been stored. "
    "Retrying is safe: adding the same text again stores it once (the answer then names the stored memory), "
    "and the same update or delete twice has the effect of one."
)
UNAVAILABLE = (
    "The database is not answering right now (it may be restarting); nothing was changed. "
    "Retry in a moment; if it goes on, the server log (stderr) says why."
)
REFUSED = (
    "The database refuses writes because it cannot write its data files (is its disk full?). "
    "Nothing was stored. Searches and reads go on; writes resume once the database can write again."
)


def user_error(exc: BaseException, disk: DiskGuard) -> ZapomniError | None:
    """The ZapomniError a storage failure means, or None for one that is an internal error."""
    if not isinstance(exc, DatabaseError):
        return None
    if isinstance(exc, PersistenceFailed | DatabaseUnavailable):
        full = disk.full_after_failure()
        if full is not None:
            return full
    if isinstance(exc, PersistenceFailed):
        return StorageFull(REFUSED)
    if isinstance(exc, WriteInterrupted):
        return DatabaseInterrupted(INTERRUPTED)
    if isinstance(exc, DatabaseUnavailable):
        return StorageUnavailable(UNAVAILABLE)
    return None


@contextmanager
def storage_faults(disk: DiskGuard) -> Iterator[None]:
    """Re-raise storage failures inside the block as the ZapomniError they mean to a user."""
    try:
        yield
    except DatabaseError as exc:
        mapped = user_error(exc, disk)
        if mapped is None:
            raise
        raise mapped from exc
