"""Advisory file locks (flock) used to coordinate processes sharing one data directory."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from zapomni_db.errors import DatabaseUnavailable

_ASK_EVERY_S = 2.0


@contextlib.contextmanager
def exclusive(path: Path, timeout_s: float, still_worth_waiting: Callable[[], bool] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the duration of the block, waiting up to `timeout_s`.

    `still_worth_waiting`, asked every two seconds while waiting, says the holder is known to be busy for
    longer (e.g. waiting for a database that is loading): the timeout then counts from the last time it said so,
    so the holder has all of `timeout_s` to let go once that work is done."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline, asked = time.monotonic() + timeout_s, time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if still_worth_waiting is not None and (now - asked >= _ASK_EVERY_S or now > deadline):
                    asked = now
                    if still_worth_waiting():
                        deadline = time.monotonic() + timeout_s
                if time.monotonic() > deadline:
                    raise DatabaseUnavailable(f"timed out waiting for the lock {path.name}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def try_exclusive(path: Path) -> int | None:
    """Take an exclusive lock without waiting; return the descriptor holding it, or None if held elsewhere."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def live_holders(directory: Path) -> int:
    """Count lock files in `directory` still held by a live process; remove the ones whose owner died.

    The kernel drops a flock when its process dies (even on kill -9), so a lock file we can lock
    ourselves belongs to nobody.
    """
    live = 0
    for path in directory.glob("*.lock"):
        fd = try_exclusive(path)
        if fd is None:
            live += 1
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)
    return live
