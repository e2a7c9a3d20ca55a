"""Driver (redis-py) exceptions turned into this package's own, for the calls made outside `Connection.run`.

`Connection.run` has its own policy (retries, interrupted writes); the observers (`probes`), the
embedding cache's Redis (`blob_cache`) and the synchronous backup commands only need the error
named, once, here. The message carries the driver's words: a health check or an operator shows it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from redis.exceptions import AuthenticationError, BusyLoadingError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from zapomni_db.errors import CredentialsRefused, DatabaseError, DatabaseUnavailable, QueryFailed

P = ParamSpec("P")
T = TypeVar("T")


def translate(exc: BaseException, timeout_s: float | None = None) -> DatabaseError:
    """The zapomni_db error a driver or socket failure means; its message is one line for a person."""
    if isinstance(exc, RedisTimeoutError | TimeoutError):
        return DatabaseUnavailable(f"no answer within {timeout_s:g} s" if timeout_s else "no answer in time")
    if isinstance(exc, BusyLoadingError):
        return DatabaseUnavailable("loading its dataset")
    if isinstance(exc, AuthenticationError):
        return CredentialsRefused(f"authentication failed: {exc}")
    if isinstance(exc, RedisConnectionError | OSError):
        return DatabaseUnavailable(f"unreachable: {exc or type(exc).__name__}")
    if isinstance(exc, ResponseError):
        return QueryFailed(str(exc))
    return QueryFailed(f"{type(exc).__name__}: {exc}")


@contextmanager
def driver_errors(timeout_s: float | None = None, *, sockets: bool = True) -> Iterator[None]:
    """Re-raise driver failures (and socket errors, with `sockets`) inside the block as zapomni_db errors."""
    caught: tuple[type[BaseException], ...] = (RedisError, OSError) if sockets else (RedisError,)
    try:
        yield
    except caught as exc:
        raise translate(exc, timeout_s) from None  # the message carries the driver's words


def wraps_driver_errors(func: Callable[P, T]) -> Callable[P, T]:
    """A public function of this package whose driver failures come out as zapomni_db errors (files' OSErrors
    stay what they are: the caller names the file)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        with driver_errors(sockets=False):
            return func(*args, **kwargs)

    return wrapper
