"""The one way to reach FalkorDB: a target (unix socket or host:port) turned into a connection pool.

The engine, the health checks and the operator commands all connect through `connect`; every
graph (one per workspace) shares its connection's pool.

`Connection.run` is where a broken connection is handled, once for every caller:
- the driver itself never re-sends a command (the pool is built with zero retries): a write it
  re-sent after a lost reply could be applied twice;
- a call that provably never reached the server is retried after the server is back: reads up to
  `READ_RETRIES` times, writes once. "Never reached" means the failure happened while getting a
  connection (connect, handshake, pool wait) or while sending the command, before the server
  could have read a whole command; the server executes only whole commands, and the connection
  is dropped after a failed send, so a partial one is discarded. The tracked connection classes
  below record, per call, whether a command was sent in full;
- a write whose command was sent before the connection broke may have been applied: it raises
  `WriteInterrupted` and is left to the caller (an add is idempotent, the engine says so).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import redis.asyncio as aioredis
import structlog
from falkordb.asyncio import FalkorDB
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, BusyLoadingError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from zapomni_db.errors import (
    CredentialsRefused,
    DatabaseUnavailable,
    GraphMissing,
    IndexesBuilding,
    PersistenceFailed,
    QueryFailed,
    WriteInterrupted,
    WritesSuspended,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

# A hung server becomes an error instead of a request that never returns; generous, because a
# 10 MB memory's insert is one long query.
SOCKET_TIMEOUT_S = 300.0
CONNECT_TIMEOUT_S = 5.0
# How long a call that could not reach the server waits for it to come back: the embedded keeper
# restarts a crashed server within about a second, and within 10.5 s (`keeper.MAX_RESTART_DELAY_S`
# plus its poll) when it keeps crashing. Loading its data afterwards is waited for separately.
RECOVERY_TIMEOUT_S = 15.0
READ_RETRIES = 2
_RECOVERY_POLL_S = 0.1
# Redis refuses writes with this prefix when it cannot write its AOF or RDB (disk full, permissions).
_MISCONF = "MISCONF"
# ... and with this one while min-replicas-to-write is unmet: the keeper's way of suspending writes on a
# full disk (the embedded server has no replicas; see zapomni_db.keeper).
_NOREPLICAS = "NOREPLICAS"
# Commands that change nothing, so a broken connection may simply ask again; any other is a write.
_READ_COMMANDS = frozenset({"PING", "INFO", "EXISTS", "GET", "SCAN", "GRAPH.LIST", "DBSIZE", "LASTSAVE"})


class _Attempt:
    """One try of one call: did any command of it reach the server whole?"""

    sent = False


_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("zapomni_db_attempt", default=None)


if TYPE_CHECKING:
    # For the checker, the mixin's super() is the connection it is mixed into; at run time it has no base
    # of its own, so the connection classes below keep redis-py's MRO (and slots) as they were.
    from redis.asyncio.connection import AbstractConnection as _TrackedBase
else:
    _TrackedBase = object


class _Tracked(_TrackedBase):
    """Marks the current attempt as sent once a command has been handed to the socket in full.

    The handshake of a new connection (HELLO, CLIENT SETINFO) does not count: it changes nothing,
    and a server that dies during it has not seen the caller's command.
    """

    _handshaking = False

    async def on_connect_check_health(self, check_health: bool = True) -> None:
        self._handshaking = True
        try:
            await super().on_connect_check_health(check_health)
        finally:
            self._handshaking = False

    # redis-py writes a command with asyncio.wait_for, which on Python 3.11 loses a cancellation that arrives once
    # the write has completed (CPython gh-86296): the task went on as if never cancelled (a Ctrl-C'd import ran to
    # its end). Two cases, both closed here: a cancellation requested while the task ran is thrown at its next
    # suspension, wait_for's; the write then waits one turn of the loop, so it has not completed (nor begun) when
    # the cancellation arrives and wait_for delivers it. One requested while the write was in flight shows as a
    # new request on the task: delivered after the write, the connection dropped as redis-py drops one cancelled
    # mid-command (its reply is never read).

    async def _send_packed_command(self, command: Iterable[bytes]) -> None:
        await asyncio.sleep(0)
        await super()._send_packed_command(command)

    async def send_packed_command(self, command: bytes | str | Iterable[bytes], check_health: bool = True) -> None:
        task = asyncio.current_task()
        requested = task.cancelling() if task is not None else 0
        await super().send_packed_command(command, check_health)
        attempt = _ATTEMPT.get()
        if attempt is not None and not self._handshaking:
            attempt.sent = True
        if task is not None and task.cancelling() > requested:
            await self.disconnect(nowait=True)
            raise asyncio.CancelledError


class _TrackedConnection(_Tracked, aioredis.Connection):
    pass


class _TrackedUnixConnection(_Tracked, aioredis.UnixDomainSocketConnection):
    pass


_TRACKED: dict[type, type] = {
    aioredis.Connection: _TrackedConnection,
    aioredis.UnixDomainSocketConnection: _TrackedUnixConnection,
}


def _track(pool: aioredis.BlockingConnectionPool) -> None:
    """Make the pool's future connections record sends, and never retry in the driver.

    Done after the FalkorDB client is built: its cluster probe copies the pool's settings into a
    synchronous client, and recognises a unix socket by the exact connection class (a subclass or
    the async Retry object would break it). The pool has made no connection yet at that point.
    Zero retries is said explicitly (a plain `redis.Redis()` retries several times): a command
    whose reply was lost must not be re-sent blindly; `Connection.run` decides what is safe.
    """
    pool.connection_class = _TRACKED.get(pool.connection_class, pool.connection_class)
    pool.connection_kwargs["retry"] = Retry(NoBackoff(), 0)


@dataclass(frozen=True)
class DatabaseTarget:
    """Where the database answers: the embedded server's unix socket, or host:port in server mode."""

    label: str
    graph_name: str
    socket: Path | None = None
    host: str = "127.0.0.1"
    port: int = 6379
    password: str | None = field(default=None, repr=False)


_MAINTAINING: ContextVar[bool] = ContextVar("zapomni_maintaining", default=False)


class WriteFence:
    """Writes to one graph in this process, so that deleting the graph cannot race them.

    A FalkorDB write to a graph that does not exist creates it: a job still writing its progress
    into a workspace that was just deleted would bring the workspace back. The delete closes the
    fence and waits for the writes in flight; from then on a write is refused (GraphMissing) unless
    it is the one that creates the graph again (`GraphClient.query(create=True)`: a migration).
    Another process's delete is caught by the existence check each fenced write makes.

    The fence also holds writes back while the graph's indexes are built after a load (`hold`): FalkorDB leaves
    some nodes written during a build out of the index (decision 0036). Only the work that ends the hold
    (`maintaining`) writes through it.
    """

    def __init__(self) -> None:
        self.deleted = False
        self.building: str | None = None  # the progress of the index build writes wait for, while held
        self._writes = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def hold(self, progress: str) -> None:
        """Refuse writes (`IndexesBuilding`, nothing sent) until `release`; `progress` is what they are told."""
        self.building = progress

    def release(self) -> None:
        self.building = None

    @staticmethod
    @contextmanager
    def maintaining() -> Iterator[None]:
        """Writes made inside (by this task and tasks it starts) pass a hold: the repairs that end one."""
        token = _MAINTAINING.set(True)
        try:
            yield
        finally:
            _MAINTAINING.reset(token)

    @asynccontextmanager
    async def writing(self, graph_name: str, *, create: bool) -> AsyncIterator[None]:
        if create:
            self.deleted = False
        elif self.deleted:
            raise GraphMissing(f"graph {graph_name} was deleted")
        elif self.building is not None and not _MAINTAINING.get():
            raise IndexesBuilding(self.building)
        self._writes += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._writes -= 1
            if self._writes == 0:
                self._idle.set()

    @asynccontextmanager
    async def deleting(self) -> AsyncIterator[None]:
        self.deleted = True
        await self._idle.wait()
        yield


class Connection:
    """A connection pool to one FalkorDB server, with the FalkorDB client built on it."""

    def __init__(
        self,
        pool: aioredis.BlockingConnectionPool,
        *,
        loading_timeout_s: float = 120.0,
        recovery_timeout_s: float = RECOVERY_TIMEOUT_S,
        revive: Callable[[], None] | None = None,
    ) -> None:
        self.pool = pool
        self.loading_timeout_s = loading_timeout_s
        self.recovery_timeout_s = recovery_timeout_s
        # Blocking: starts the server again when nothing else will (the embedded keeper was killed); see
        # `EmbeddedDatabase.revive`. None for a server someone else runs.
        self._revive = revive
        try:
            # The client checks for cluster mode with one blocking INFO here, once.
            self.falkordb = FalkorDB(connection_pool=pool)
        except AuthenticationError as exc:
            raise CredentialsRefused("the database refused the credentials") from exc
        except RedisConnectionError as exc:
            raise DatabaseUnavailable("the database connection failed") from exc
        _track(pool)
        self.redis = aioredis.Redis(connection_pool=pool)
        self._fences: dict[str, WriteFence] = {}

    def fence(self, graph_name: str) -> WriteFence:
        """The write fence of one graph in this process (see `WriteFence`)."""
        return self._fences.setdefault(graph_name, WriteFence())

    async def command(self, *args: Any) -> Any:
        """A plain Redis command (INFO, GRAPH.LIST, ...); one not known to be read-only is run as a write."""
        return await self.run(lambda: self.redis.execute_command(*args), write=is_write_command(args[0]))

    async def run(self, call: Callable[[], Awaitable[T]], *, write: bool) -> T:
        """`call()` with the failure policy in the module docstring; driver errors come out as db errors.

        A server that is still loading its dataset answers LOADING: the call waits for it (up to
        `loading_timeout_s`) and is sent again, since a refused command did nothing.
        """
        loading_deadline = time.monotonic() + self.loading_timeout_s
        delay = 0.05
        retries = 0
        while True:
            attempt = _Attempt()
            token = _ATTEMPT.set(attempt)
            try:
                return await call()
            except BusyLoadingError:
                if time.monotonic() > loading_deadline:
                    raise DatabaseUnavailable("the database is still loading its data") from None
                log.info("db.loading_wait", delay_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except AuthenticationError as exc:
                raise CredentialsRefused("the database refused the credentials") from exc
            except (RedisConnectionError, RedisTimeoutError) as exc:
                failure: RedisError = exc
            except ResponseError as exc:
                if str(exc).startswith(_MISCONF):
                    raise PersistenceFailed(str(exc)) from exc
                if str(exc).startswith(_NOREPLICAS):
                    raise WritesSuspended("the database has suspended writes: its disk is full") from exc
                raise QueryFailed(str(exc)) from exc
            except RedisError as exc:
                raise QueryFailed(str(exc)) from exc
            except UnicodeDecodeError as exc:  # the driver decodes every reply string as UTF-8
                raise QueryFailed(f"the database answered text that is not UTF-8: {exc}") from exc
            finally:
                _ATTEMPT.reset(token)
            if write and attempt.sent:
                log.warning("db.write_interrupted", error=str(failure))
                raise WriteInterrupted("the database connection broke after the write was sent") from failure
            if retries >= (1 if write else READ_RETRIES) or self.recovery_timeout_s <= 0:
                raise DatabaseUnavailable("the database connection failed") from failure
            retries += 1
            log.warning("db.retry_after_reconnect", write=write, error=str(failure), attempt=retries)
            await self._wait_until_back(failure)

    async def _wait_until_back(self, failure: RedisError) -> None:
        """Return once the server answers (LOADING counts: `run` waits through it); bounded."""
        deadline = time.monotonic() + self.recovery_timeout_s
        revive = self._revive
        while True:
            try:
                await self.redis.execute_command("PING")
                return
            except BusyLoadingError:
                return
            except AuthenticationError as exc:
                raise CredentialsRefused("the database refused the credentials") from exc
            except (RedisConnectionError, RedisTimeoutError, OSError):
                if revive is not None:
                    try:
                        await asyncio.to_thread(revive)
                    except OSError as exc:  # the keeper could not be started (a full disk, no such interpreter)
                        raise DatabaseUnavailable(f"the database could not be started again: {exc}") from failure
                    revive = None  # once a wait: a keeper that is alive restarts its server itself
                    continue
                if time.monotonic() > deadline:
                    raise DatabaseUnavailable(
                        f"the database did not come back within {self.recovery_timeout_s:g} s"
                    ) from failure
            await asyncio.sleep(_RECOVERY_POLL_S)

    async def close(self) -> None:
        await self.redis.aclose()
        await self.pool.aclose()


def is_write_command(name: Any) -> bool:
    text = name.decode() if isinstance(name, bytes) else str(name)
    return text.upper() not in _READ_COMMANDS


def connect(
    target: DatabaseTarget,
    *,
    max_connections: int = 16,
    timeout_s: float = 30.0,
    socket_timeout_s: float = SOCKET_TIMEOUT_S,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    loading_timeout_s: float = 120.0,
    recovery_timeout_s: float = RECOVERY_TIMEOUT_S,
    revive: Callable[[], None] | None = None,
) -> Connection:
    """A pool to `target` (nothing is sent until first use, except the FalkorDB client's one INFO: see
    `reachable`)."""
    options: dict[str, Any] = {"socket_timeout": socket_timeout_s, "socket_connect_timeout": connect_timeout_s}
    pool = aioredis.BlockingConnectionPool(
        max_connections=max_connections, timeout=timeout_s, **_address(target), **options
    )
    return Connection(pool, loading_timeout_s=loading_timeout_s, recovery_timeout_s=recovery_timeout_s, revive=revive)


async def reachable(target: DatabaseTarget, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Return when `target` answers a PING (one still loading its data answers: queries wait through that), else
    raise at once: CredentialsRefused, or DatabaseUnavailable with the driver's error as its cause.

    Asked before `connect` where nothing else will have started the server: the FalkorDB client's INFO when it is
    built goes through redis-py's synchronous client and its default retries, so against a server that is down
    `zapomni stats` waited 3-4 s, the event loop blocked, before it could say so (session 32)."""
    pool = aioredis.ConnectionPool(
        **_address(target), socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
    )
    client = aioredis.Redis(connection_pool=pool)
    try:
        await client.ping()
    except BusyLoadingError:
        return
    except AuthenticationError as exc:
        raise CredentialsRefused("the database refused the credentials") from exc
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise DatabaseUnavailable("the database connection failed") from exc
    finally:
        await client.aclose()
        await pool.aclose()


def _address(target: DatabaseTarget) -> dict[str, Any]:
    if target.socket is not None:
        return {"connection_class": aioredis.UnixDomainSocketConnection, "path": str(target.socket)}
    return {"host": target.host, "port": target.port, "password": target.password or None}
