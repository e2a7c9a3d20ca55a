"""Storage failures as a user should hear them: which ones are worth a retry, and whether anything was stored.

The db layer tells three failures apart (zapomni_db.connection): a call that never reached the
server (already retried once there), a write cut off after it was sent (it may be stored), and
a server that refuses writes because it cannot write its files. Each becomes a ZapomniError
here; a full disk explains any of them when the data directory's disk is below its threshold.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import structlog

from zapomni_core.disk import DiskGuard
from zapomni_core.errors import (
    ConfigurationError,
    DatabaseInterrupted,
    NotFound,
    StorageFailed,
    StorageFull,
    StorageUnavailable,
    ZapomniError,
)
from zapomni_db import (
    DatabaseError,
    DatabaseUnavailable,
    GraphMissing,
    IndexesBuilding,
    PersistenceFailed,
    SchemaMismatch,
    WriteInterrupted,
    WritesSuspended,
)

log = structlog.get_logger(__name__)

INTERRUPTED = (
    "The database restarted while this write was in flight, so it may or may not have been stored. "
    "Retrying is safe: adding the same text again stores it once (the answer then names the stored memory), "
    "and the same update or delete twice has the effect of one."
)
BUILDING = (
    "The database is still building this store's search indexes after loading it ({progress}), and writes wait "
    "for that: nothing was stored. Searches and reads work meanwhile. Retry in a few minutes; the server log says "
    "when writes resume (workspace.writes_resumed)."
)
UNAVAILABLE = (
    "The database is not answering right now (it may be restarting); nothing was changed. "
    "Retry in a moment; if it goes on, the server log (stderr) says why."
)
FAILED = (
    "The database answered this request with an error of its own, logged on stderr as storage.failed "
    "(the CLI shows it with --verbose). Retry once; if it fails again, that log line says why."
)
DELETED = "The workspace was deleted while this request ran; nothing more was written to it."
SUSPENDED = (
    "The database has suspended writes because its disk is full. Nothing was stored. "
    "Searches and reads go on; free some space: writes resume by themselves."
)
REFUSED = (
    "The database refuses writes because it cannot write its data files (is its disk full?). "
    "Nothing was stored. Searches and reads go on; writes resume once the database can write again."
)


def user_error(exc: DatabaseError, disk: DiskGuard | None) -> ZapomniError:
    """The ZapomniError a storage failure means to a user; one nobody foresaw is logged in full here."""
    if isinstance(exc, PersistenceFailed | DatabaseUnavailable) and disk is not None:
        full = disk.full_after_failure()
        if full is not None:
            return full
    if isinstance(exc, WritesSuspended):
        return StorageFull(SUSPENDED)
    if isinstance(exc, PersistenceFailed):
        return StorageFull(REFUSED)
    if isinstance(exc, WriteInterrupted):
        return DatabaseInterrupted(INTERRUPTED)
    if isinstance(exc, IndexesBuilding):
        return StorageUnavailable(BUILDING.format(progress=exc))
    if isinstance(exc, DatabaseUnavailable):
        return StorageUnavailable(UNAVAILABLE)
    if isinstance(exc, GraphMissing):
        return NotFound(DELETED)
    if isinstance(exc, SchemaMismatch):
        return ConfigurationError(str(exc))
    log.warning("storage.failed", error=type(exc).__name__, detail=str(exc))
    return StorageFailed(FAILED)


@contextmanager
def storage_faults(disk: DiskGuard | None) -> Iterator[None]:
    """Re-raise storage failures inside the block as the ZapomniError they mean to a user."""
    try:
        yield
    except DatabaseError as exc:
        raise user_error(exc, disk) from exc


ServiceT = TypeVar("ServiceT", bound=type)


def storage_boundary(service: ServiceT) -> ServiceT:
    """Every public coroutine method of `service` answers a database failure as a ZapomniError.

    The edge of the core: what an adapter calls never lets a `zapomni_db` error through, read or
    write. A service with a `_disk` (DiskGuard) has a full disk named as the cause where it is one.
    """
    for name, method in list(vars(service).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(method):
            setattr(service, name, _guarded(method))
    return service


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        with storage_faults(getattr(self, "_disk", None)):
            return await method(self, *args, **kwargs)

    return guarded
